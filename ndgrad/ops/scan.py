"""Scans: cumulative sums along a dim.

Example:
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> x.cumsum(0).sum().backward()
    >>> x.grad
    tensor([3., 2., 1.])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _dtype
from ..tensor import Tensor
from ._batching import call as _bcall
from ._dispatch import Op, apply
from ._jvp import linear
from ._util import category, wrap_dim
from .reduction import _check_autograd_dtype

_INT = _dtype._INT


def _cumsum_fwd(x: np.ndarray, dim: int, dt: Any) -> np.ndarray:
    if x.ndim == 0:
        return np.asarray(x, dtype=dt).copy()
    return np.cumsum(x, axis=dim, dtype=dt)


def _cumsum_vjp(ctx, g):
    # The reversed cumulative sum: total - inclusive prefix + the element itself.
    dim = ctx._args[0]
    if g.ndim == 0:
        return g
    return g.sum(dim, keepdim=True) - g.cumsum(dim) + g


CUMSUM = Op("cumsum", "CumsumBackward0", _cumsum_fwd, _cumsum_vjp, args=("dim", "dtype"),
            jvp=linear)


def cumsum(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Cumulative sum along ``dim``; bool and integer inputs give int64 unless ``dtype``.

    >>> import ndgrad
    >>> ndgrad.tensor([1, 2, 3]).cumsum(0)
    tensor([1, 3, 6])
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(cumsum, input, dim, dtype=dtype)
        if r is not NotImplemented:
            return r
    x = input._data
    d = wrap_dim(int(dim), x.ndim or 1)
    if dtype is not None:
        dt = _dtype.to_dtype(dtype).np
    else:
        dt = np.dtype(np.int64) if category(x) <= _INT else x.dtype
    _check_autograd_dtype(input, dt)
    return apply(CUMSUM, (input,), (x,), (d, dt))


__all__ = ["cumsum"]
