"""``ndgrad.nn.utils.convert_parameters`` (placeholder: filled by the nn issue)."""

__all__: list = []
