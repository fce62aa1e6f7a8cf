"""nn modules: distance (placeholder: filled by the nn issue)."""

__all__: list = []
