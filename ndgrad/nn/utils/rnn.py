"""``ndgrad.nn.utils.rnn`` (placeholder: filled by the nn issue)."""

__all__: list = []
