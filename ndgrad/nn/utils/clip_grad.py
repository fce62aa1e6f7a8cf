"""``ndgrad.nn.utils.clip_grad`` (placeholder: filled by the nn issue)."""

__all__: list = []
