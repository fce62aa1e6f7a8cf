"""Sort-based ops: sort, argsort, msort, topk, kthvalue, median, nanmedian and mode.

Each differentiable one selects elements of its input along a dim: its forward computes the
indices (NumPy's stable sort; NaN sorts as the largest value, as in PyTorch), the values are the
input at those indices, and the gradient is written back at the indices (zeros elsewhere). The
indices output is int64 and never requires grad. Results are ``ndgrad.return_types`` named
tuples with PyTorch's field names. ``median()``/``nanmedian()`` over all elements share the
gradient evenly between the elements equal to the result (as PyTorch does).

Example:
    >>> import ndgrad
    >>> x = ndgrad.tensor([3.0, 1.0, 2.0], requires_grad=True)
    >>> values, indices = x.sort(descending=True)
    >>> (values * ndgrad.tensor([1.0, 10.0, 100.0])).sum().backward()
    >>> x.grad
    tensor([  1., 100.,  10.])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _dtype
from .. import return_types as _rt
from ..tensor import Tensor, _wrap
from ._batching import call as _bcall
from ._dispatch import Op, apply
from ._jvp import zero
from ._selection_orders import kth_positions, sort_positions, topk_positions
from ._util import wrap_dim
from .pointwise import apply_nondiff, where
from .reduction import _evenly_distribute, _evenly_jvp, _select_reduction_vjp, \
    _select_reduction_vjp_traceable, gather, scatter_zeros

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "mode",
           "quantile", "nanquantile"]


_BF16 = _dtype.bfloat16.np


# ---------------------------------------------------------------------------- index kernels
# Each takes an array with at least one dim, the (wrapped) dim, and the op's parameters, and
# returns int64 indices along ``dim``.
def _sort_idx(x: np.ndarray, dim: int, descending: bool) -> np.ndarray:
    if x.dtype.kind == "c":
        raise RuntimeError("sort(): complex input is not supported")
    if x.dtype == _BF16:             # ml_dtypes' sort does not order NaN last
        x = x.astype(np.float32)
    if not descending:
        return np.argsort(x, axis=dim, kind="stable").astype(np.int64, copy=False)
    # Largest first with ties in their original order: sort the reversed input ascending
    # (ties then come in reversed order) and reverse the result.
    n = x.shape[dim]
    r = np.flip(np.argsort(np.flip(x, dim), axis=dim, kind="stable"), dim)
    return (n - 1 - r).astype(np.int64)


def _take(idx: np.ndarray, dim: int, pos: Any, keepdim: bool) -> np.ndarray:
    """``idx`` at position(s) ``pos`` along ``dim`` (an int, or an array broadcast over the
    other dims with size 1 along ``dim``)."""
    if isinstance(pos, (int, np.integer)):
        r = np.take(idx, [int(pos)], axis=dim)
    else:
        r = np.take_along_axis(idx, pos, axis=dim)
    return r if keepdim else np.squeeze(r, dim)


def _rows(x: np.ndarray, dim: int) -> np.ndarray:
    """``x`` with ``dim`` last, as a 2-D array of rows."""
    return np.moveaxis(x, dim, -1).reshape(-1, x.shape[dim])


def _unstable_sort_idx(x, dim, descending):
    # torch's std::sort order among equal elements (Note [Selection among equal elements])
    if x.dtype.kind == "c":
        raise RuntimeError("sort(): complex input is not supported")
    if x.dtype == _BF16:
        x = x.astype(np.float32)
    n = x.shape[dim]
    radix = x.ndim == 1 and x.dtype.kind in "iu" and not descending and n >= 32768
    r = sort_positions(_rows(x, dim), descending, radix)
    return np.ascontiguousarray(np.moveaxis(r.reshape(np.moveaxis(x, dim, -1).shape), -1, dim))


def _topk_idx(x, dim, k, largest, sorted_):
    # torch's choice among equal elements (Note [Selection among equal elements])
    if x.dtype == _BF16:
        x = x.astype(np.float32)
    r = topk_positions(_rows(x, dim), k, largest, sorted_)
    shape = np.moveaxis(x, dim, -1).shape[:-1] + (k,)
    return np.ascontiguousarray(np.moveaxis(r.reshape(shape), -1, dim))


def _kth_idx(x, dim, keepdim, k):
    if x.dtype == _BF16:
        x = x.astype(np.float32)
    r = kth_positions(_rows(x, dim), k)
    r = r.reshape(np.moveaxis(x, dim, -1).shape[:-1])
    return np.array(np.expand_dims(r, dim) if keepdim else r, order="C")


def _median_idx(x, dim, keepdim):
    idx = _sort_idx(x, dim, False)
    n = x.shape[dim]
    nan = np.isnan(x) if x.dtype.kind == "f" or x.dtype == _dtype.bfloat16.np else None
    if nan is None or not nan.any():
        return _take(idx, dim, (n - 1) // 2, keepdim)
    # A row holding NaN has NaN as its median, at the first NaN.
    has = np.any(nan, axis=dim, keepdims=True)
    first_nan = np.argmax(nan, axis=dim, keepdims=True)
    mid = np.take(idx, [(n - 1) // 2], axis=dim)
    r = np.where(has, first_nan, mid).astype(np.int64)
    return r if keepdim else np.squeeze(r, dim)


def _nanmedian_idx(x, dim, keepdim):
    idx = _sort_idx(x, dim, False)          # NaN last
    if x.dtype.kind in "biu":
        return _take(idx, dim, (x.shape[dim] - 1) // 2, keepdim)
    count = np.sum(~np.isnan(x), axis=dim, keepdims=True)
    pos = np.maximum((count - 1) // 2, 0).astype(np.int64)
    return _take(idx, dim, pos, keepdim)


def _mode_idx(x, dim, keepdim):
    # torch's CPU kernel: the first longest run of equal values in std::sort's order of the
    # (value, position) pairs, at the position of the run's last pair (Note [mode's index])
    from ._std_sort import mode_positions
    rows = np.moveaxis(x, dim, -1)
    flat = rows.reshape(-1, rows.shape[-1])
    if flat.dtype == _BF16:
        flat = flat.astype(np.float32)
    out = mode_positions(flat)
    r = out.reshape(rows.shape[:-1])
    return np.expand_dims(r, dim) if keepdim else r


# ---------------------------------------------------------------------------- ops
# ``indices`` (the last argument) is the indices output itself, a tensor argument saved by the
# node (Note [Tensor arguments] in ops/_dispatch.py); the forward returns its data as the second
# output. Ops keeping all positions along dim (sort, topk) take (dim, ..., self_sym_sizes,
# indices); reductions along dim (kthvalue, median, mode) take (dim, keepdim, ...,
# self_sym_sizes, indices). ``self_sym_sizes`` (the input's shape) is saved as PyTorch saves it.
def _gather_fwd(x, dim, *rest):
    idx = rest[-1]._data
    if x.ndim == 0:
        return x.copy(), idx
    return np.take_along_axis(x, idx, axis=dim), idx


def _gather_vjp(ctx, g, g_indices=None):
    (indices,) = ctx.saved
    shape = ctx.input_shape(0)
    if not shape:
        return g
    return scatter_zeros(g, ctx._args[0], indices, shape)


def _gather_jvp(ctx, t):
    dim, indices = ctx._args[0], ctx._args[-1]
    if not ctx.input_shape(0):
        return t, None
    return gather(t, dim, indices), None


def _reduce_fwd(x, dim, keepdim, *rest):
    idx = rest[-1]._data
    if x.ndim == 0:
        return x.copy(), idx
    vals = np.take_along_axis(x, idx if keepdim else np.expand_dims(idx, dim), axis=dim)
    return (vals if keepdim else np.squeeze(vals, dim)), idx


def _reduce_jvp(ctx, t):
    dim, keepdim, indices = ctx._args[0], ctx._args[1], ctx._args[-1]
    if not ctx.input_shape(0):
        return t, None
    idx = indices if keepdim else _wrap(np.expand_dims(indices._data, dim))
    v = gather(t, dim, idx)
    return (v if keepdim else v.squeeze(dim)), None


def _sel_op(name, node, args, reduce=False):
    if reduce:
        return Op(name, node, _reduce_fwd, _select_reduction_vjp, args=args, num_outputs=2,
                  saves=("indices",), jvp=_reduce_jvp)
    return Op(name, node, _gather_fwd, _gather_vjp, args=args, num_outputs=2,
              saves=("indices",), jvp=_gather_jvp)


_REDUCE_ARGS = ("dim", "keepdim", "self_sym_sizes", "indices")
SORT = _sel_op("sort", "SortBackward0", ("dim", "descending", "self_sym_sizes", "indices"))
SORT_STABLE = _sel_op("sort", "SortBackward1", ("dim", "descending", "self_sym_sizes",
                                                  "indices"))
TOPK = _sel_op("topk", "TopkBackward0", ("dim", "k", "largest", "sorted", "self_sym_sizes",
                                         "indices"))
KTHVALUE = _sel_op("kthvalue", "KthvalueBackward0", ("dim", "keepdim", "k", "self_sym_sizes",
                                                    "indices"), True)
MEDIAN_DIM = _sel_op("median", "MedianBackward1", _REDUCE_ARGS, True)
NANMEDIAN_DIM = _sel_op("nanmedian", "NanmedianBackward1", _REDUCE_ARGS, True)
MODE = _sel_op("mode", "ModeBackward0", _REDUCE_ARGS, True)


def _median_all_fwd(x):
    flat = x.reshape(-1)
    return flat[_median_idx(flat, 0, False)].copy()


def _nanmedian_all_fwd(x):
    flat = x.reshape(-1)
    return flat[_nanmedian_idx(flat, 0, False)].copy()


MEDIAN = Op("median", "MedianBackward0", _median_all_fwd, _evenly_distribute,
            saves=("self", "result"), jvp=_evenly_jvp)
NANMEDIAN = Op("nanmedian", "NanmedianBackward0", _nanmedian_all_fwd, _evenly_distribute,
               saves=("self", "result"), jvp=_evenly_jvp)

# op -> index kernel taking (array, dim, *parameters between dim and indices)
_INDEX_FN: dict = {SORT: lambda x, d, desc: _unstable_sort_idx(x, d, desc),
             SORT_STABLE: lambda x, d, desc: _sort_idx(x, d, desc),
             TOPK: _topk_idx, KTHVALUE: lambda x, d, keep, k: _kth_idx(x, d, keep, k),
             MEDIAN_DIM: _median_idx, NANMEDIAN_DIM: _nanmedian_idx, MODE: _mode_idx}


# Note [Index ops]
# The indices of each op above are computed by an op of the table of their own
# (``<name>_indices``, no VJP: int64), whose output is the value op's ``indices`` tensor
# argument. Eagerly that is one more ``apply``; for the jit it means a traced graph holds the
# index computation as a node (sort_indices -> sort), so sort, topk, kthvalue, median(dim),
# nanmedian(dim) and mode are differentiated with their own VJP rules like any other op.
def _index_op(vop: Op) -> Op:
    kernel = _INDEX_FN[vop]

    def fwd(x, dim, *params):
        return kernel(x, dim, *params) if x.ndim else np.zeros((), np.int64)
    return Op(vop.name + "_indices", vop.node_name.replace("Backward", "IndicesBackward"), fwd,
              args=("dim",) + vop.arg_names[1:-2], jvp=zero)


_INDEX_OPS: dict = {vop: _index_op(vop) for vop in _INDEX_FN}
# Rules the jit records instead of the op's own VJP (Note [Traceable VJP rules] in
# jit/differentiate.py): the reductions' kept indices made by an op.
TRACEABLE_VJP = {op: _select_reduction_vjp_traceable
                 for op in (KTHVALUE, MEDIAN_DIM, NANMEDIAN_DIM, MODE)}
_VALUES_OF: dict = {iop: vop for vop, iop in _INDEX_OPS.items()}


def _indices(vop: Op, input: Tensor, x: np.ndarray, d: int, params: tuple) -> Tensor:
    return apply_nondiff(_INDEX_OPS[vop], (input,), (x,), (d,) + params)


def _tname(x: np.ndarray) -> str:
    return _dtype._FROM_NP[x.dtype]._torch_name


# ---------------------------------------------------------------------------- public functions
def _sort(input: Tensor, dim: int, descending: bool, stable: Any) -> Any:
    x = input._data
    d = wrap_dim(int(dim), x.ndim or 1)
    if x.dtype.kind == "c":
        raise RuntimeError(" Sort does not support complex dtypes on CPU")
    op = SORT if stable is None else SORT_STABLE
    # the indices in torch's unstable order unless stable=True (Note [Selection among equal
    # elements]); the grad_fn is the overload's
    idx = _indices(SORT_STABLE if stable else SORT, input, x, d, (bool(descending),))
    vals, out = apply(op, (input,), (x,), (d, bool(descending), x.shape, idx))
    return _rt.sort(vals, idx if out._data is idx._data else out)


def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: Any = None) -> Any:
    """Sort along ``dim``: ``(values, indices)``; NaN sorts as the largest value. Equal
    elements keep their order with ``stable=True``; otherwise they come in the order torch's
    unstable sort leaves them (Note [Selection among equal elements]).

    >>> import ndgrad
    >>> ndgrad.tensor([2, 0, 1]).sort()
    ndgrad.return_types.sort(
    values=tensor([0, 1, 2]),
    indices=tensor([1, 2, 0]))
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(sort, input, dim, descending, stable)
        if r is not NotImplemented:
            return r
    return _sort(input, dim, descending, stable)


def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False
            ) -> Tensor:
    """The indices that sort ``input`` along ``dim`` (int64, not differentiable).

    >>> import ndgrad
    >>> ndgrad.tensor([2.0, 0.0, 1.0]).argsort(descending=True)
    tensor([0, 2, 1])
    """
    x = input._data
    d = wrap_dim(int(dim), x.ndim or 1)
    if x.dtype.kind == "c":
        raise RuntimeError(" Sort does not support complex dtypes on CPU")
    return _indices(SORT_STABLE if stable else SORT, input, x, d, (bool(descending),))


def msort(input: Tensor) -> Tensor:
    """``sort(input, dim=0).values``.

    >>> import ndgrad
    >>> ndgrad.msort(ndgrad.tensor([[2.0, 0.0], [1.0, 3.0]]))
    tensor([[1., 0.],
            [2., 3.]])
    """
    return sort(input, 0).values


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True
         ) -> Any:
    """The ``k`` largest (or smallest) elements along ``dim``: ``(values, indices)``, in sorted
    order (also when ``sorted=False``; PyTorch leaves that order unspecified).

    >>> import ndgrad
    >>> ndgrad.tensor([1.0, 5.0, 3.0]).topk(2)
    ndgrad.return_types.topk(
    values=tensor([5., 3.]),
    indices=tensor([1, 2]))
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(topk, input, k, dim, largest, sorted)
        if r is not NotImplemented:
            return r
    x = input._data
    d = wrap_dim(int(dim), x.ndim or 1)
    n = x.shape[d] if x.ndim else 1
    k = int(k)
    if k < 0 or k > n:
        raise RuntimeError("selected index k out of range")
    if x.dtype.kind == "c":
        raise RuntimeError(" topk does not support complex dtypes on CPU")
    if x.dtype.kind == "b":
        raise RuntimeError("topk does not support bool dtypes on CPU")
    idx = _indices(TOPK, input, x, d, (k, bool(largest), bool(sorted)))
    vals, out = apply(TOPK, (input,), (x,), (d, k, bool(largest), bool(sorted), x.shape, idx))
    return _rt.topk(vals, idx if out._data is idx._data else out)


# PyTorch's kernel names in its "not implemented for" errors
_KERNEL = {"kthvalue": "kthvalue_cpu", "median": "median_out", "nanmedian": "median_out",
           "mode": "mode_cpu"}


def _check_kernel(x: np.ndarray, kernel: str, no_bool: bool) -> None:
    if x.dtype.kind == "c" or (no_bool and x.dtype.kind == "b"):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_tname(x)}'")


def _select_along(op: Op, rt: type, input: Tensor, dim: int, keepdim: bool, extra: tuple,
                  name: str) -> Any:
    x = input._data
    d = wrap_dim(int(dim), x.ndim or 1)
    _check_kernel(x, _KERNEL[name], name != "mode")
    if x.ndim and x.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    idx = _indices(op, input, x, d, (bool(keepdim),) + extra)
    vals, out = apply(op, (input,), (x,), (d, bool(keepdim)) + extra + (x.shape, idx))
    return rt(vals, idx if out._data is idx._data else out)


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> Any:
    """The ``k``-th smallest element along ``dim`` (1-based): ``(values, indices)``.

    >>> import ndgrad
    >>> ndgrad.tensor([4.0, 1.0, 3.0]).kthvalue(2)
    ndgrad.return_types.kthvalue(
    values=tensor(3.),
    indices=tensor(2))
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(kthvalue, input, k, dim, keepdim)
        if r is not NotImplemented:
            return r
    x = input._data
    d = wrap_dim(int(dim), x.ndim or 1)
    n = x.shape[d] if x.ndim else 1
    k = int(k)
    _check_kernel(x, "kthvalue_cpu", True)
    if x.ndim and n == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    return _select_along(KTHVALUE, _rt.kthvalue, input, d, keepdim, (k,), "kthvalue")


def _median_common(input: Tensor, dim: Any, keepdim: bool, nan: bool) -> Any:
    name = "nanmedian" if nan else "median"
    x = input._data
    if dim is None:
        _check_kernel(x, "median_cpu", True)
        if x.size == 0:       # NaN (the median of nothing), like PyTorch
            return _wrap(np.full((), np.nan, x.dtype if x.dtype.kind == "f" else np.float32))
        return apply(NANMEDIAN if nan else MEDIAN, (input,), (x,))
    return _select_along(NANMEDIAN_DIM if nan else MEDIAN_DIM,
                         _rt.nanmedian if nan else _rt.median, input, dim, keepdim, (), name)


def median(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """The lower median of all elements, or along ``dim`` as ``(values, indices)``; NaN
    propagates.

    >>> import ndgrad
    >>> ndgrad.tensor([4.0, 1.0, 3.0, 2.0]).median()
    tensor(2.)
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(median, input, dim, keepdim)
        if r is not NotImplemented:
            return r
    return _median_common(input, dim, keepdim, False)


def nanmedian(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """``median`` ignoring NaN (NaN only where a row is all NaN).

    >>> import ndgrad
    >>> ndgrad.tensor([4.0, float("nan"), 3.0]).nanmedian()
    tensor(3.)
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(nanmedian, input, dim, keepdim)
        if r is not NotImplemented:
            return r
    return _median_common(input, dim, keepdim, True)


def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> Any:
    """The most frequent value along ``dim`` (the smallest of equally frequent ones) and the
    index of one occurrence: the one torch's CPU kernel reports (Note [mode's index]).

    >>> import ndgrad
    >>> ndgrad.tensor([3.0, 1.0, 3.0, 2.0]).mode()
    ndgrad.return_types.mode(
    values=tensor(3.),
    indices=tensor(2))
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(mode, input, dim, keepdim)
        if r is not NotImplemented:
            return r
    return _select_along(MODE, _rt.mode, input, dim, keepdim, (), "mode")


# ---------------------------------------------------------------------------- quantile
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input: Tensor, q: Any, dim: Any, keepdim: bool, interpolation: str,
              ignore_nan: bool) -> Tensor:
    """Composed as PyTorch composes it: sort, pick the two neighbours of each rank, interpolate,
    then squeeze (``SqueezeBackward4``)."""
    from .linalg import SQUEEZE_RESULT
    name = "nanquantile" if ignore_nan else "quantile"
    x = input._data
    if x.size == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if x.dtype not in (np.float32, np.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if isinstance(q, Tensor):
        qa = q._data
        if qa.ndim > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        if qa.dtype != x.dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
        if qa.size and (np.any(qa < 0) or np.any(qa > 1)):
            raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
        scalar_q = qa.ndim == 0
        qv = qa.reshape(-1)
    else:
        qf = float(q)
        if not 0 <= qf <= 1:
            raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {qf:g}")
        scalar_q = True
        qv = np.array([qf], dtype=x.dtype)
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    # Sorted with the reduced dim last, viewed as the reduced shape (keepdim: 1 at dim) plus
    # that dim; the ranks gather from it along the last dim, one column per q (PyTorch's layout).
    if dim is None:
        s = sort(input.reshape(-1), 0).values
        reduced = (1,) * x.ndim if keepdim else ()
    else:
        d = wrap_dim(int(dim), x.ndim or 1)
        if x.ndim and d == x.ndim - 1:
            s = sort(input, -1).values
        else:
            s = sort(input.unsqueeze(-1).transpose(d, -1), -1).values
        reduced = tuple(1 if k == d else n_ for k, n_ in enumerate(x.shape)
                        if keepdim or k != d)
    s = s.view(*(reduced + (s.shape[-1],)))
    n = s.shape[-1]
    if n > 2 ** 24:          # ranks are exact in float only up to here
        raise RuntimeError(f"{name}() input tensor is too large")
    # The ranks from ops of the table (Note [Index ops]): a traced graph computes where the
    # NaNs are instead of keeping the traced ones. q carries no gradient.
    qt = q.detach().reshape(-1) if isinstance(q, Tensor) else _wrap(qv)
    nan_count = s.isnan().sum(-1, keepdim=True)                            # (..., 1) int64
    if ignore_nan:
        valid = n - nan_count
        ranks = qt * (valid - 1).clamp_min(0).to(_dtype._FROM_NP[x.dtype])
        ranks = where(valid > 0, ranks, n - 1)                             # (..., Q)
    else:
        ranks = where(nan_count > 0, n - 1, qt * (n - 1))
    if interpolation == "lower":
        ranks = ranks.floor()
    elif interpolation == "higher":
        ranks = ranks.ceil()
    elif interpolation == "nearest":
        ranks = ranks.round()
    from .reduction import gather as _gather
    below = ranks.floor()
    lo = _gather(s, -1, below.to(_dtype.int64))
    if interpolation in ("lower", "higher", "nearest"):
        out = lo
    else:
        hi = _gather(s, -1, ranks.ceil().to(_dtype.int64))
        w = _wrap(np.full(ranks.shape, 0.5, x.dtype)) if interpolation == "midpoint" else \
            ranks - below
        out = lo + (hi - lo) * w
    # (..., Q) -> (Q, ..., 1) -> squeeze the last dim
    out = out.unsqueeze(0).transpose(0, -1)                               # (Q, ..., 1)
    out = apply(SQUEEZE_RESULT, (out,), (out._data,), (out.ndim - 1,))
    if scalar_q:
        out = apply(SQUEEZE_RESULT, (out,), (out._data,), (0,))
    return out


def quantile(input: Tensor, q: Any, dim: Any = None, keepdim: bool = False, *,
             interpolation: str = "linear") -> Tensor:
    """The ``q``-quantiles of ``input`` (flattened, or along ``dim``); a 1-D ``q`` adds a
    leading dim. NaN anywhere in a row gives NaN.

    >>> import ndgrad
    >>> ndgrad.tensor([1.0, 2.0, 3.0, 4.0]).quantile(0.5)
    tensor(2.5000)
    """
    return _quantile(input, q, dim, keepdim, interpolation, False)


def nanquantile(input: Tensor, q: Any, dim: Any = None, keepdim: bool = False, *,
                interpolation: str = "linear") -> Tensor:
    """``quantile`` ignoring NaN (NaN only for rows that are all NaN).

    >>> import ndgrad
    >>> ndgrad.tensor([1.0, float("nan"), 3.0]).nanquantile(0.5)
    tensor(2.)
    """
    return _quantile(input, q, dim, keepdim, interpolation, True)


# ---------------------------------------------------------------------------- batching rules
def _rule(c, args):
    """Recompute the indices on the physical batch (dim shifted past the batch dim)."""
    from .shape import reshape
    op = c.op
    t, a = c.ts[0], c.arrs[0]
    zero_d = not c.ls[0]
    if zero_d:                       # a 0-d row: the op over a dim of size 1
        t = reshape(t, (c.B, 1))
        a = t._data
    d = args[0] + 1 if not zero_d else 1
    params = tuple(args[1:-2])
    if zero_d and len(params) and op in (KTHVALUE, MEDIAN_DIM, NANMEDIAN_DIM, MODE):
        params = (False,) + params[1:]            # reduce the size-1 dim away
    idx = _wrap(_INDEX_FN[op](a, d, *params))
    vals, out = apply(op, (t,), (a,), (d,) + params + (args[-2], idx))
    if zero_d and op in (SORT, SORT_STABLE, TOPK):
        vals, out = reshape(vals, (c.B,)), reshape(out, (c.B,))
    return vals, out


def _median_all_rule(c, args):
    from .shape import reshape
    t = reshape(c.ts[0], (c.B, -1))
    op = NANMEDIAN_DIM if c.op is NANMEDIAN else MEDIAN_DIM
    idx = _wrap(_INDEX_FN[op](t._data, 1, False))
    return apply(op, (t,), (t._data,), (1, False, t._data.shape, idx))[0]


def _index_rule(c, args):
    """The index ops (Note [Index ops]): on the physical batch, as ``_rule`` computes them."""
    from .shape import reshape
    vop = _VALUES_OF[c.op]
    t, a = c.ts[0], c.arrs[0]
    zero_d = not c.ls[0]
    if zero_d:
        t = reshape(t, (c.B, 1))
        a = t._data
    d = args[0] + 1 if not zero_d else 1
    params = tuple(args[1:])
    if zero_d and len(params) and vop in (KTHVALUE, MEDIAN_DIM, NANMEDIAN_DIM, MODE):
        params = (False,) + params[1:]
    idx = apply(c.op, (t,), (a,), (d,) + params)
    if zero_d and vop in (SORT, SORT_STABLE, TOPK):
        idx = reshape(idx, (c.B,))
    return idx


from ._batching import RULES  # noqa: E402

for _op in _INDEX_FN:
    RULES[_op] = _rule
    RULES[_INDEX_OPS[_op]] = _index_rule
RULES[MEDIAN] = RULES[NANMEDIAN] = _median_all_rule
