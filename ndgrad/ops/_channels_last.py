"""Results laid out channels-last when the input is, as PyTorch's CPU kernels lay them.

Note [Channels-last results]
PyTorch's conv2d (input or weight channels-last), max/avg/adaptive pooling and interpolate of a
4-D channels-last input return channels-last results (``is_contiguous(memory_format=
torch.channels_last)``, strides ``(HWC, 1, WC, C)``); elementwise ops and batch_norm already
keep the layout through NumPy. These kernels compute C-contiguous arrays; ``keep`` copies the
result into the channels-last layout when an input suggests it (its strides are channels-last
and not C-contiguous), after the op is recorded: the values, node and saved tensors are the
same, only the strides change. A contiguous input costs one flags test; nothing is changed
while tracing (the graph path has its own layouts) or under vmap.

Example:
    >>> import ndgrad, ndgrad.nn.functional as F
    >>> x = ndgrad.ones(1, 3, 4, 4).contiguous(memory_format=ndgrad.channels_last)
    >>> F.max_pool2d(x, 2).is_contiguous(memory_format=ndgrad.channels_last)
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _layout
from ..tensor import Tensor
from . import _dispatch

__all__ = ["suggests", "keep"]


def suggests(t: Any) -> bool:
    """Whether ``t`` is a 4-D tensor laid out channels-last (and not also C-contiguous)."""
    if not isinstance(t, Tensor):
        return False
    a = t._data
    return a.ndim == 4 and not a.flags.c_contiguous and \
        _layout.is_contiguous(a, _layout.channels_last)


def _relayout(r: Any) -> None:
    if isinstance(r, Tensor) and r._base is None and not r._blevel:
        a = r._data
        if isinstance(a, np.ndarray) and a.ndim == 4 and \
                not _layout.is_contiguous(a, _layout.channels_last):
            r._data = _layout.copy_to(a, _layout.channels_last)


def keep(result: Any, *inputs: Any) -> Any:
    """``result`` (a Tensor or a tuple of them) in channels-last layout when one of
    ``inputs`` is channels-last (Note [Channels-last results])."""
    for t in inputs:
        if suggests(t):
            if _dispatch._TRACING:
                return result
            for r in (result if isinstance(result, tuple) else (result,)):
                _relayout(r)
            return result
    return result
