"""Counting and index arithmetic (not differentiable): ``unique``, ``unique_consecutive``,
``bincount``, ``histc``, ``histogram``, ``histogramdd``, ``unravel_index``, ``tril_indices``,
``triu_indices``.

Example:
    >>> import ndgrad
    >>> ndgrad.unique(ndgrad.tensor([3, 1, 3]), return_counts=True)
    (tensor([1, 3]), tensor([1, 2]))
    >>> ndgrad.bincount(ndgrad.tensor([0, 2, 2]))
    tensor([1, 0, 2])
"""

from __future__ import annotations

from .. import return_types as _rt
from typing import Any

import numpy as np

from .. import _dtype, _unsigned
from . import _dispatch
from ..tensor import Tensor, _wrap
from ._util import wrap_dim

__all__ = ["unique", "unique_consecutive", "bincount", "histc", "histogram", "histogramdd",
           "unravel_index", "tril_indices", "triu_indices"]

histogram_result = _rt.histogram
histogramdd_result = _rt.histogramdd


def _result(values: Any, inverse: Any, counts: Any, return_inverse: bool,
            return_counts: bool) -> Any:
    out: tuple = (_wrap(values),)
    if return_inverse:
        out += (_wrap(np.asarray(inverse, dtype=np.int64)),)
    if return_counts:
        out += (_wrap(np.asarray(counts, dtype=np.int64)),)
    return out[0] if len(out) == 1 else out


def _slices(x: np.ndarray, dim: int) -> np.ndarray:
    """``x`` as rows (one per index along ``dim``) for comparing whole slices."""
    return np.moveaxis(x, dim, 0).reshape(x.shape[dim], -1)


def _refuse_complex(input: Tensor, kernel: str) -> None:
    if input.is_complex():
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{input.dtype._torch_name}'")


def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim: Any = None) -> Any:
    """The distinct elements (or slices along ``dim``) in ascending order, with the index of
    each element's value among them (``return_inverse``) and how often each occurs. Every NaN
    is distinct (NaN != NaN), sorted last in the order they occur."""
    _refuse_complex(input, "unique" if dim is None else "unique_dim")
    _dispatch.meta_refuse("unique", input)
    x = input._data
    if dim is None:
        vals, inv, cnt = np.unique(x.reshape(-1), return_inverse=True, return_counts=True,
                                   equal_nan=False)
        return _result(vals, inv.reshape(x.shape), cnt, return_inverse, return_counts)
    d = wrap_dim(dim, x.ndim)
    if x.shape[d] == 0 and x.size == 0 and any(s == 0 for i, s in enumerate(x.shape) if i != d):
        raise RuntimeError("Number of zero sized dimensions is more than one, so unique cannot "
                           "be applied ")
    rows = _slices(x, d)
    order = np.lexsort(rows.T[::-1]) if rows.shape[1] else np.arange(rows.shape[0])
    srt = rows[order]
    new = np.ones(len(srt), dtype=bool)
    if len(srt) > 1:
        new[1:] = (srt[1:] != srt[:-1]).any(axis=1) if rows.shape[1] else False
    group = np.cumsum(new) - 1
    inv = np.empty(len(srt), dtype=np.int64)
    inv[order] = group
    cnt = np.bincount(group, minlength=int(new.sum())) if len(srt) else np.zeros(0, np.int64)
    firsts = srt[new]
    shape = list(np.moveaxis(x, d, 0).shape)
    shape[0] = len(firsts)
    vals = np.moveaxis(firsts.reshape(shape), 0, d)
    return _result(np.ascontiguousarray(vals), inv, cnt, return_inverse, return_counts)


def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: Any = None) -> Any:
    """Collapse runs of equal consecutive elements (or slices along ``dim``) to one."""
    _refuse_complex(input, "unique" if dim is None else "unique_consecutive")
    x = input._data
    if dim is None:
        flat = x.reshape(-1)
        new = np.ones(flat.size, dtype=bool)
        if flat.size > 1:
            new[1:] = flat[1:] != flat[:-1]
        group = np.cumsum(new) - 1
        cnt = np.bincount(group) if flat.size else np.zeros(0, np.int64)
        return _result(flat[new], group.reshape(x.shape), cnt, return_inverse, return_counts)
    d = wrap_dim(dim, x.ndim)
    rows = _slices(x, d)
    new = np.ones(len(rows), dtype=bool)
    if len(rows) > 1:
        new[1:] = (rows[1:] != rows[:-1]).any(axis=1) if rows.shape[1] else False
    group = np.cumsum(new) - 1
    cnt = np.bincount(group) if len(rows) else np.zeros(0, np.int64)
    vals = np.take(x, np.flatnonzero(new), axis=d)
    return _result(vals, group, cnt, return_inverse, return_counts)


def bincount(input: Tensor, weights: Any = None, minlength: int = 0) -> Tensor:
    """How often each value 0, 1, ... occurs in the 1-d non-negative integer ``input``
    (summing ``weights`` instead of ones when given)."""
    x = input._data
    _unsigned.check("bincount", (x,))
    if x.ndim != 1 or x.dtype.kind not in "iu":
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if x.size and x.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return _wrap(np.bincount(x, minlength=minlength).astype(np.int64))
    w = weights._data
    if w.ndim != 1 or w.shape[0] != x.shape[0]:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    out_dt = w.dtype if w.dtype in (np.float32, np.float64) else np.float64
    return _wrap(np.bincount(x, weights=w.astype(np.float64), minlength=minlength).astype(out_dt))


def histc(input: Tensor, bins: int = 100, min: Any = 0, max: Any = 0) -> Tensor:  # noqa: A002
    """Counts of ``input`` in ``bins`` equal bins over [min, max] (the data's range when both
    are 0); elements outside are ignored."""
    x = input._data
    _unsigned.check("histc", (x,))
    if not input.dtype.is_floating_point:       # torch 2.13's kernel names
        kernel = "linspace_cpu" if x.dtype == np.bool_ else "histogram_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{input.dtype._torch_name}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histc(): bins must be > 0, but got {bins} for dimension 0")
    lo, hi = float(min), float(max)
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError(f"torch.histc(): max must be larger than min, but got min {_num(lo)} "
                           f"max {_num(hi)} for dimension 0")
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histc(): range of [{_num(lo)}, {_num(hi)}] is not finite")
    counts = _bin_counts(x.reshape(-1).astype(np.float64), None, lo, hi, bins)
    return _wrap(counts.astype(x.dtype))


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(v)


def _bin_counts(v: np.ndarray, w: Any, lo: float, hi: float, bins: int) -> np.ndarray:
    """Equal-width bins over [lo, hi] (the last closed); PyTorch's index arithmetic."""
    keep = (v >= lo) & (v <= hi)
    v = v[keep]
    idx = ((v - lo) * bins / (hi - lo)).astype(np.int64)
    idx = np.minimum(idx, bins - 1)
    return np.bincount(idx, weights=None if w is None else w[keep], minlength=bins)


def _edges(v: np.ndarray, bins: Any, rng: Any, k: int) -> np.ndarray:
    if isinstance(bins, Tensor):
        e = bins._data.astype(np.float64)
        if e.ndim != 1:
            raise RuntimeError("torch.histogramdd(): bins tensor should have one dimension")
        return e
    if rng is not None:
        lo, hi = float(rng[2 * k]), float(rng[2 * k + 1])
    elif v.size:
        lo, hi = float(v.min()), float(v.max())
    else:
        lo, hi = 0.0, 0.0
    if lo > hi:
        raise RuntimeError(f"torch.histogramdd(): min should not exceed max, but got min {lo} "
                           f"max {hi} for dimension {k}")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    if bins <= 0:
        raise RuntimeError(f"torch.histogramdd(): bins must be > 0, but got {bins} for "
                           f"dimension {k}")
    return np.linspace(lo, hi, bins + 1)


def _histdd(x: np.ndarray, bins: list, rng: Any, weight: Any, density: bool,
            dtype: np.dtype) -> tuple:
    n, d = x.shape
    edges = [_edges(x[:, k], bins[k], rng, k) for k in range(d)]
    # Edges in the input's dtype (as PyTorch computes them), then binned in float64.
    edges = [e.astype(dtype).astype(np.float64) for e in edges]
    w = None if weight is None else weight._data.astype(np.float64).reshape(-1)
    keep = np.ones(n, dtype=bool)
    idx = np.zeros((n, d), dtype=np.int64)
    for k, e in enumerate(edges):
        v = x[:, k]
        keep &= (v >= e[0]) & (v <= e[-1])
        i = np.searchsorted(e, v, side="right") - 1
        idx[:, k] = np.clip(i, 0, len(e) - 2)
    shape = tuple(len(e) - 1 for e in edges)
    hist = np.zeros(shape, dtype=np.float64)
    np.add.at(hist, tuple(idx[keep].T), 1.0 if w is None else w[keep])
    if density:
        total = hist.sum()
        widths = np.ones(shape)
        for k, e in enumerate(edges):
            s = [1] * d
            s[k] = -1
            widths = widths * np.diff(e).reshape(s)
        with np.errstate(all="ignore"):         # no point in range: 0/0, NaN as in PyTorch
            hist = hist / (total * widths)
    return hist.astype(dtype), [e.astype(dtype) for e in edges]


def histogram(input: Tensor, bins: Any = 100, *, range: Any = None,  # noqa: A002
              weight: Any = None, density: bool = False) -> Any:
    """Counts (or weights, or a density) of ``input`` in ``bins`` bins over ``range`` (or the
    given bin edges), and the edges."""
    x = input._data
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for "
                                  f"'{input.dtype._torch_name}'")
    if weight is not None and weight._data.shape != x.shape:
        raise RuntimeError("torch.histogram(): if weight tensor is provided, it should have the "
                           "same shape as the input tensor excluding its innermost dimension")
    hist, edges = _histdd(x.reshape(-1, 1).astype(np.float64), [bins], range, weight, density,
                          x.dtype)
    return histogram_result(_wrap(hist), _wrap(edges[0]))


def histogramdd(input: Tensor, bins: Any = 10, *, range: Any = None,  # noqa: A002
                weight: Any = None, density: bool = False) -> Any:
    """``histogram`` of the points in the rows of ``input`` (the last dim holds coordinates)."""
    x = input._data
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogramdd\" not implemented for "
                                  f"'{input.dtype._torch_name}'")
    if x.ndim < 1:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 1 dimension, "
                           "but got 0")
    d = x.shape[-1]
    if isinstance(bins, int):
        bins = [bins] * d
    bins = list(bins)
    if len(bins) != d:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost "
                           "dimension of the input.")
    if range is not None and len(range) != 2 * d:
        raise RuntimeError(f"torch.histogramdd(): for a {d}-dimensional histogram range should "
                           f"have {2 * d} elements, but got {len(range)}")
    hist, edges = _histdd(x.reshape(-1, d).astype(np.float64), bins, range, weight, density,
                          x.dtype)
    return histogramdd_result(_wrap(hist), tuple(_wrap(e) for e in edges))


def unravel_index(indices: Tensor, shape: Any) -> tuple:
    """The coordinates, in a tensor of ``shape``, of each flat (C-order) index."""
    if not isinstance(indices, Tensor):
        raise TypeError(f"expected 'indices' to be integer dtype, but got {type(indices)}")
    x = indices._data
    if x.dtype.kind not in "iu":
        raise TypeError(f"expected 'indices' to be integer dtype, but got "
                        f"{indices.dtype!r}".replace("ndgrad.", "torch."))
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if any(not isinstance(s, (int, np.integer)) for s in shape):
        raise TypeError("expected 'shape' to be int or sequence of ints, but got "
                        f"{type(shape)}")
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got "
                         f"{tuple(shape)}")
    total = 1
    for s in shape:
        total *= int(s)
    flat = np.where(x < 0, x + total, x).astype(np.int64)
    coords = []
    for s in reversed(shape):
        s = int(s)
        coords.append(flat % s if s else flat * 0)
        flat = flat // s if s else flat
    return tuple(_wrap(np.array(c, dtype=np.int64)) for c in reversed(coords))


def _tri_indices(row: int, col: int, offset: int, dtype: Any, lower: bool) -> Tensor:
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.int64
    if d.is_floating_point or d.is_complex or d is _dtype.bool:
        raise RuntimeError(f"\"{'tril' if lower else 'triu'}_indices\" not implemented for "
                           f"'{d._torch_name}'")
    if row < 0 or col < 0:
        raise RuntimeError(f"row must be non-negative, got{row}" if row < 0 else
                           f"col must be non-negative, got{col}")
    r, c = np.indices((row, col))
    mask = (c - r <= offset) if lower else (c - r >= offset)
    return _wrap(np.stack([r[mask], c[mask]]).astype(d.np).reshape(2, -1))


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None) -> Tensor:
    """Row and column indices (a 2 x N tensor) of the lower triangle of a row x col matrix."""
    return _tri_indices(row, col, offset, dtype, True)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None) -> Tensor:
    """Row and column indices (a 2 x N tensor) of the upper triangle of a row x col matrix."""
    return _tri_indices(row, col, offset, dtype, False)
