"""nn modules: activation (placeholder: filled by the nn issue)."""

__all__: list = []
