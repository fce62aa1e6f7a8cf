"""``ndgrad.nn.utils.parametrizations`` (placeholder: filled by the nn issue)."""

__all__: list = []
