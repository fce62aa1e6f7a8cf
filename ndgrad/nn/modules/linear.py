"""nn modules: linear (placeholder: filled by the nn issue)."""

__all__: list = []
