"""nn modules: loss (placeholder: filled by the nn issue)."""

__all__: list = []
