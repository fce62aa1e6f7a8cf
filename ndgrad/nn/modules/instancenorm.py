"""nn modules: instancenorm (placeholder: filled by the nn issue)."""

__all__: list = []
