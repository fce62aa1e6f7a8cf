"""``ndgrad.backends.mha``: the switch of torch's multi-head attention fast path. ndgrad has no
fused kernels, but ``nn.TransformerEncoder`` follows the fast path's visible result (padded
positions of its output are zeros in inference, Note [Encoder padding in inference] in
nn/modules/transformer.py) only while this is on, as torch's.

Example:
    >>> import ndgrad
    >>> ndgrad.backends.mha.get_fastpath_enabled()
    True
"""

_enabled = [True]


def get_fastpath_enabled() -> bool:
    """Whether the multi-head attention fast path is enabled (the default)."""
    return _enabled[0]


def set_fastpath_enabled(value: bool) -> None:
    """Enable or disable the multi-head attention fast path."""
    _enabled[0] = bool(value)
