"""nn modules: padding (placeholder: filled by the nn issue)."""

__all__: list = []
