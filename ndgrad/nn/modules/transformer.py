"""nn modules: transformer (placeholder: filled by the nn issue)."""

__all__: list = []
