"""nn modules: pooling (placeholder: filled by the nn issue)."""

__all__: list = []
