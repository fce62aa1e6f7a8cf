"""``ndgrad.nn.utils.parametrize`` (placeholder: filled by the nn issue)."""

__all__: list = []
