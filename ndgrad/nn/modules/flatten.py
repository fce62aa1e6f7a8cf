"""nn modules: flatten (placeholder: filled by the nn issue)."""

__all__: list = []
