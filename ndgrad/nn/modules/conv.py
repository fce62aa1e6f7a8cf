"""nn modules: conv (placeholder: filled by the nn issue)."""

__all__: list = []
