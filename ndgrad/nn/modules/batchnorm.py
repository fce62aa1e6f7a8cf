"""nn modules: batchnorm (placeholder: filled by the nn issue)."""

__all__: list = []
