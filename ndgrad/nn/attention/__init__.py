"""``torch.nn.attention``: choose the backends ``scaled_dot_product_attention`` may use.

On the CPU torch has two: the math path and a flash-attention kernel (4-D inputs, no dropout;
it applies an ``attn_mask`` together with ``is_causal``). ndgrad computes every call one way
and decides as torch would whether the flash kernel takes it (Note [Low-precision flash
attention] in ndgrad/ops/nn_attention.py); ``sdpa_kernel`` restricts the choice with torch's
errors: none of math and flash allowed, "No viable backend ..."; only flash and a call it
does not take, "No available kernel.  Aborting execution."; math only, ``is_causal`` with a
mask is refused as torch's math path refuses it.

Example:
    >>> import ndgrad
    >>> from ndgrad.nn.attention import SDPBackend, sdpa_kernel
    >>> q = ndgrad.ones(1, 1, 2, 4)
    >>> with sdpa_kernel(SDPBackend.MATH):
    ...     ndgrad.nn.functional.scaled_dot_product_attention(q, q, q).shape
    ndgrad.Size([1, 1, 2, 4])
"""

from __future__ import annotations

import contextlib
import enum
from typing import Any, Iterator, List, Union

from ...backends import cuda as _sdp_flags

__all__ = ["SDPBackend", "sdpa_kernel"]


class SDPBackend(enum.Enum):
    """The attention backends, with torch's values (CUDA-only ones included: on the CPU only
    ``MATH`` and ``FLASH_ATTENTION`` can run)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __str__(self) -> str:            # torch's enum prints its qualified name
        return f"SDPBackend.{self.name}"

    def __int__(self) -> int:            # int(backend) and hash as torch's (not == to an int)
        return int(self.value)

    __index__ = __int__

    def __hash__(self) -> int:
        return hash(self.value)


@contextlib.contextmanager
def sdpa_kernel(backends: Union[List[SDPBackend], SDPBackend],
                set_priority: bool = False) -> Iterator[dict]:
    """Within the block, ``scaled_dot_product_attention`` may use only ``backends`` (one or a
    list); the previous choice comes back after it. ``set_priority`` (the list's order as
    priority) is accepted: on the CPU the flash kernel is tried before the math path."""
    items: Any = backends
    if isinstance(items, SDPBackend):
        items = [items]
    if not isinstance(items, (list, tuple)) or not all(
            isinstance(b, SDPBackend) for b in items):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend "
                             f"instances, got {type(backends).__name__}")
    flags = _sdp_flags.SDP_ENABLED          # Note [Attention backend flags]
    saved = flags["backends"]
    flags["backends"] = frozenset(int(b) for b in items)
    try:
        yield {}
    finally:
        flags["backends"] = saved
