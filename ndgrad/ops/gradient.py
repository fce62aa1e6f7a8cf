"""``gradient``: derivative estimates by finite differences along each dim (a composite of
slicing, arithmetic and ``cat``, so its graph is PyTorch's: the result's node is
``CatBackward0``).

Interior points use second-order central differences (on uneven coordinates the three-point
formula for unequal steps); the two edge points one-sided differences of order ``edge_order``.

Example:
    >>> import ndgrad
    >>> ndgrad.gradient(ndgrad.tensor([1.0, 4.0, 9.0, 16.0]))
    (tensor([3., 4., 6., 7.]),)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor, _wrap
from ._util import wrap_dim
from .shape import cat

__all__ = ["gradient"]


def _coef(values: np.ndarray, ndim: int, d: int, dtype: np.dtype) -> Tensor:
    shape = [1] * ndim
    shape[d] = -1
    return _wrap(np.asarray(values, dtype=dtype).reshape(shape))


def _along(f: Tensor, d: int, coords: Any, edge_order: int) -> Tensor:
    """The derivative of ``f`` along dim ``d``; ``coords``: a step (number) or coordinates."""
    n = f.shape[d]
    dt = f._data.dtype if f._data.dtype.kind in "fc" else np.dtype(np.float64)
    nd = f.ndim

    def sl(start: int, length: int) -> Tensor:
        return f.narrow(d, start, length)
    if isinstance(coords, np.ndarray):
        x = coords.astype(np.float64)
        hs, hd = x[1:-1] - x[:-2], x[2:] - x[1:-1]
        a = -hd / (hs * (hs + hd))
        b = (hd - hs) / (hs * hd)
        c = hs / (hd * (hs + hd))
        inner = (sl(0, n - 2) * _coef(a, nd, d, dt) + sl(1, n - 2) * _coef(b, nd, d, dt)
                 + sl(2, n - 2) * _coef(c, nd, d, dt))
        if edge_order == 1:
            first = (sl(1, 1) - sl(0, 1)) / float(x[1] - x[0])
            last = (sl(n - 1, 1) - sl(n - 2, 1)) / float(x[-1] - x[-2])
        else:
            d1, d2 = x[1] - x[0], x[2] - x[1]
            first = (sl(0, 1) * float(-(2 * d1 + d2) / (d1 * (d1 + d2)))
                     + sl(1, 1) * float((d1 + d2) / (d1 * d2))
                     + sl(2, 1) * float(-d1 / (d2 * (d1 + d2))))
            d1, d2 = x[-2] - x[-3], x[-1] - x[-2]
            last = (sl(n - 3, 1) * float(d2 / (d1 * (d1 + d2)))
                    + sl(n - 2, 1) * float(-(d2 + d1) / (d1 * d2))
                    + sl(n - 1, 1) * float((2 * d2 + d1) / (d2 * (d1 + d2))))
    else:
        h = coords
        inner = (sl(2, n - 2) - sl(0, n - 2)) / (2 * h)
        if edge_order == 1:
            first = (sl(1, 1) - sl(0, 1)) / h
            last = (sl(n - 1, 1) - sl(n - 2, 1)) / h
        else:
            first = (sl(0, 1) * -1.5 + sl(1, 1) * 2.0 - sl(2, 1) * 0.5) / h
            last = (sl(n - 3, 1) * 0.5 - sl(n - 2, 1) * 2.0 + sl(n - 1, 1) * 1.5) / h
    return cat([first, inner, last], d)


def gradient(input: Tensor, *, spacing: Any = None, dim: Any = None,
             edge_order: int = 1) -> tuple:
    """The derivative of ``input`` along each of ``dim`` (all dims by default), with sample
    spacing ``spacing``: one number, a number per dim, or a 1-d coordinate tensor per dim."""
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    nd = input.ndim
    if dim is None:
        dims = list(range(nd))
    elif isinstance(dim, (tuple, list)):
        dims = [wrap_dim(d, nd) for d in dim]
        for i, d in enumerate(dims):
            if d in dims[:i]:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    else:
        dims = [wrap_dim(dim, nd)]
    if spacing is None:
        steps: list = [1.0] * len(dims)
    elif isinstance(spacing, (tuple, list)):
        if len(spacing) != len(dims):
            how = ("since dim argument was not given" if dim is None
                   else "since dim argument was given")
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or "
                               f"it's spacing and dim arguments to have the same length, but got "
                               f"a spacing argument of length {len(spacing)} and a dim argument "
                               f"of length {len(dims)}. ({how})")
        steps = list(spacing)
    else:
        steps = [spacing] * len(dims)
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
    out = []
    for d, s in zip(dims, steps):
        if isinstance(s, Tensor):
            if s.ndim != 1 or s.shape[0] != input.shape[d]:
                raise RuntimeError("torch.gradient expected each tensor to be on the same "
                                   "device, and of the same size as the input along its dim")
            s = s._data
        elif not isinstance(s, np.ndarray):
            s = float(s.item()) if isinstance(s, Tensor) else s
        out.append(_along(input, d, s, edge_order))
    return tuple(out)
