"""``ndgrad.nn.init`` (placeholder: filled by the nn issue)."""

__all__: list = []
