"""Reductions: sum, mean, prod, max, min (whole tensor or along dims), and ``sum_to_size``.

Example:
    >>> import ndgrad
    >>> x = ndgrad.tensor([[1.0, 5.0], [3.0, 2.0]], requires_grad=True)
    >>> values, indices = x.max(dim=1)
    >>> values.sum().backward()
    >>> x.grad
    tensor([[0., 1.],
            [1., 0.]])
"""

from __future__ import annotations

import math
import warnings
from .. import return_types as _rt
from typing import Any, Optional

import numpy as np

from .. import _dtype, _meta, _unsigned
from .._meta import MetaArray as _MetaArray
from .._warn import warn_user
from ..autograd import grad_mode as _grad_mode
from ..tensor import Tensor, _as_shape, _wrap
from ._batching import AMAX, AMIN
from ._batching import argminmax as _argminmax
from ._batching import call as _bcall
from ._batching import marked as _bmarked
from . import _autocast
from ._dispatch import Op, apply
from ._jvp import linear, zero
from ._util import category, dims_tuple, wrap_dim
from .pointwise import _div_s_fwd, apply_nondiff, maximum, minimum, where
from .shape import EXPAND as _EXPAND
from .shape import broadcast_view

_INT = _dtype._INT


def _expand_back(ctx, g: Tensor) -> Tensor:
    """Undo a sum over ``dims`` (args[0]) without keepdim (args[1]): unsqueeze and expand."""
    dims, keepdim = ctx._args[0], ctx._args[1]
    shape = ctx.input_shape(0)
    op = ctx._op
    # a full sum/mean needs no unsqueeze; one recorded by a batching rule (ops/_batching.py
    # _dims_first: SUM over every dim but the batch dim) does
    if not keepdim and dims and (op is not SUM and op is not MEAN or (
            len(dims) != len(shape) and not _leading(dims))):     # a full sum leads
        for d in sorted(dims):
            g = g.unsqueeze(d)
    if g.__class__ is not Tensor or g._blevel:  # Note [Batched backward]; a subclass
        return g.expand(shape)
    # expand adds leading dims itself: a full sum (SumBackward0) records one ExpandBackward0,
    # as PyTorch's; the shape is valid, so the op is applied without the public checks
    return apply(_EXPAND, (g,), (g._data,), (tuple(shape),))


def _leading(dims: tuple) -> bool:
    """Whether ``dims`` are exactly the leading dims ``0..k-1`` (in any order)."""
    k = len(dims)
    for d in dims:
        if d >= k:
            return False
    return True


def _keepdim_shape(ctx) -> tuple:
    """The shape of a reduction's result with keepdim, from the input shape (Op args)."""
    dims = ctx._args[0]
    return tuple([1 if i in dims else n for i, n in enumerate(ctx._input_meta[0][0])])


def _sum_raw(ctx, g, saved):
    # Note [Raw backward rules] (ops/_dispatch.py): _expand_back on arrays.
    dims, keepdim = ctx._args[0], ctx._args[1]
    shape = ctx._input_meta[0][0]
    if not keepdim and dims and len(dims) != len(shape) and not _leading(dims):
        g = g.reshape(_keepdim_shape(ctx))
    return broadcast_view(g, shape)


# Note [Low-precision accumulation]
# torch's CPU sums (sum, mean, nansum, cumsum, sum_to_size, and var/std with their _mean forms)
# of float16/bfloat16 accumulate in float32 and round each result once; NumPy's reduce would
# round after every addition.
_LOWP = _dtype.HALF_NP
_F32 = np.dtype(np.float32)


def _sum_fwd(x, dims, keepdim, dt):
    # np.add.reduce is np.sum without its Python-level wrapper.
    if x.dtype in _LOWP and (dt is None or dt == x.dtype):
        # Note [Low-precision accumulation]
        return np.add.reduce(x, axis=dims, keepdims=keepdim, dtype=_F32).astype(x.dtype)
    return np.add.reduce(x, axis=dims, keepdims=keepdim, dtype=dt)


def _mean_fwd(x, dims, keepdim, dt):
    if dt is None and x.dtype.kind in "fc" and x.dtype.itemsize >= 4:
        # np.mean without its Python wrapper (float16/bfloat16 keep np.mean's float32 sum)
        n = 1
        for d in dims:
            n *= x.shape[d]
        return np.true_divide(np.add.reduce(x, axis=dims, keepdims=keepdim), n, dtype=x.dtype)
    if x.dtype in _LOWP and (dt is None or dt == x.dtype):
        # float32 sum and quotient, rounded once (Note [Low-precision accumulation])
        return np.mean(x, axis=dims, keepdims=keepdim, dtype=_F32).astype(x.dtype)
    return np.mean(x, axis=dims, keepdims=keepdim, dtype=dt)


def _mean_vjp(ctx, g):
    dims = ctx._args[0]
    shape = ctx.input_shape(0)
    n = 1
    for d in dims:
        n *= shape[d]
    return _expand_back(ctx, g) / n


SUM = Op("sum", "SumBackward0", _sum_fwd, _expand_back, args=("dim", "keepdim", "dtype"),
         jvp=linear, raw=_sum_raw)
SUM_DIM = Op("sum", "SumBackward1", _sum_fwd, _expand_back, args=("dim", "keepdim", "dtype"),
             jvp=linear, raw=_sum_raw)
def _mean_raw(ctx, g, saved):
    # Note [Raw backward rules] (ops/_dispatch.py): _mean_vjp on arrays (g / n of the expanded
    # gradient, a new array).
    dims, keepdim = ctx._args[0], ctx._args[1]
    shape = ctx._input_meta[0][0]
    n = 1
    for d in dims:
        n *= shape[d]
    if not keepdim and dims and not _leading(dims):
        g = g.reshape(_keepdim_shape(ctx))
    # g / n on the reduced gradient, then broadcast into a new array: the same quotients as
    # dividing the broadcast view element by element, at the cost of a fill
    q = _div_s_fwd(g, n)
    out = np.empty(shape, q.dtype)
    np.copyto(out, q)
    return out


MEAN = Op("mean", "MeanBackward0", _mean_fwd, _mean_vjp, args=("dim", "keepdim", "dtype"),
          jvp=linear, raw=_mean_raw)
MEAN_DIM = Op("mean", "MeanBackward1", _mean_fwd, _mean_vjp, args=("dim", "keepdim", "dtype"),
              jvp=linear, raw=_mean_raw)


def _reduce_dtype(x: np.ndarray, dtype: Any) -> Optional[np.dtype]:
    if dtype is not None:
        return _dtype.to_dtype(dtype).np
    if category(x) <= _INT:
        return np.dtype(np.int64)
    return None


def _check_0d_dims(dim: Any) -> tuple:
    """Dims of a 0-d tensor: 0 and -1 are accepted (as in PyTorch) and reduce nothing."""
    dims_tuple(dim, 0)
    return ()


def _check_autograd_dtype(input: Tensor, dt: Any) -> None:
    """A reduction asked for an integer result of an input that requires grad (PyTorch refuses
    what its graph could not carry)."""
    if dt is not None and np.dtype(dt).kind in "biu" and input._requires_grad and \
            _grad_mode._state.enabled:
        raise RuntimeError("Autograd not support dtype: "
                           f"{_dtype._FROM_NP[np.dtype(dt)]._torch_name}")


def sum(input: Tensor, dim: Any = None, keepdim: bool = False, *,  # noqa: A001
        dtype: Any = None) -> Tensor:
    """Sum of all elements, or over ``dim`` (an int or a tuple of ints)."""
    if input._blevel:  # Note [Batched backward]
        r = _bcall(sum, input, dim, keepdim, dtype=dtype)
        if r is not NotImplemented:
            return r
    x = input._data
    if dtype is not None:
        _unsigned.check_dtype("sum_cpu", dtype)
    dt = _reduce_dtype(x, dtype)
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        _check_autograd_dtype(input, dt)
        dims = tuple(range(x.ndim))
        return apply(SUM, (input,), (x,), (dims, bool(keepdim), dt))
    dims = dims_tuple(dim, x.ndim) if x.ndim else _check_0d_dims(dim)
    _check_autograd_dtype(input, dt)
    return apply(SUM_DIM, (input,), (x,), (dims, bool(keepdim), dt))


def mean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Mean of all elements, or over ``dim``. Needs a floating point or complex input."""
    if input._blevel:  # Note [Batched backward]
        r = _bcall(mean, input, dim, keepdim, dtype=dtype)
        if r is not NotImplemented:
            return r
    x = input._data
    if dtype is None and category(x) <= _INT:
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point "
            f"or complex dtype. Got: {_dtype._FROM_NP[x.dtype]._torch_name}")
    if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(
            "mean(): could not infer output dtype. Optional dtype must be either a floating "
            f"point or complex dtype. Got: {dtype._torch_name}")
    dt = _dtype.to_dtype(dtype).np if dtype is not None else None
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return apply(MEAN, (input,), (x,), (tuple(range(x.ndim)), bool(keepdim), dt))
    dims = dims_tuple(dim, x.ndim) if x.ndim else _check_0d_dims(dim)
    return apply(MEAN_DIM, (input,), (x,), (dims, bool(keepdim), dt))


def _sum_to_fwd(x, dims, shape):
    # Integer and bool sums are int64, as every PyTorch sum (NumPy picks uint64 for uint8).
    dt = np.int64 if x.dtype.kind in "biu" else None
    if x.dtype in _LOWP:        # Note [Low-precision accumulation]
        return np.add.reduce(x, axis=dims, keepdims=True, dtype=_F32).astype(x.dtype).reshape(
            shape)
    return np.add.reduce(x, axis=dims, keepdims=True, dtype=dt).reshape(shape)


SUM_TO_SIZE = Op("sum_to_size", "SumBackward1", _sum_to_fwd,
                 lambda ctx, g: g.expand(ctx.input_shape(0)), args=("dim", "size"),
                 jvp=linear)


def sum_to_size(input: Tensor, *size: Any) -> Tensor:
    """Sum ``input`` down to ``size`` (the inverse of broadcasting ``size`` to its shape).

    This is the one helper that undoes broadcasting in backward rules.

    >>> import ndgrad
    >>> ndgrad.ones(2, 3).sum_to_size(3)
    tensor([2., 2., 2.])
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(sum_to_size, input, *size)
        if r is not NotImplemented:
            return r
    shape = _as_shape(size)
    x = input._data
    if x.shape == shape:
        return input
    lead = x.ndim - len(shape)
    if lead < 0 or any(s != 1 and s != xs for s, xs in zip(shape, x.shape[lead:])):
        raise RuntimeError(f"size {{{list(shape)}}} is not expandable to size "
                           f"{{{list(x.shape)}}}.")
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                      if s == 1 and x.shape[lead + i] != 1)
    return apply(SUM_TO_SIZE, (input,), (x,), (dims, shape))


def sum_to_checked(input: Tensor, shape: tuple) -> Tensor:
    """``sum_to_size`` for a tuple ``shape`` the caller already checked to be expandable to the
    input's shape (the engine undoing broadcasting): no argument parsing or re-validation."""
    if input._blevel:  # Note [Batched backward]
        return sum_to_size(input, shape)
    x = input._data
    xs = x.shape
    lead = len(xs) - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                      if s == 1 and xs[lead + i] != 1)
    return apply(SUM_TO_SIZE, (input,), (x,), (dims, shape))


# ---------------------------------------------------------------------------- prod
def _prod_others(x: np.ndarray, axis: int) -> np.ndarray:
    """Product of all other elements along ``axis`` (exact with zeros)."""
    x = np.moveaxis(x, axis, -1)
    ones = np.ones(x.shape[:-1] + (1,), dtype=x.dtype)
    left = np.cumprod(np.concatenate([ones, x[..., :-1]], axis=-1), axis=-1)
    right = np.flip(np.cumprod(np.concatenate([ones, np.flip(x, -1)[..., :-1]], axis=-1),
                               axis=-1), -1)
    return np.moveaxis(left * right, -1, axis)


def _prod_others_vjp(ctx, gg):
    (x,) = ctx.saved
    return _prod_others_times(x, ctx._args[0], gg)


def _prod_others_times(x: Tensor, dim: int, gg: Tensor) -> Tensor:
    # d others[i] / d x[j] = prod of x[k] for k not in {i, j} (i != j), 0 for i == j. Row i of
    # ``rows`` is x with x[i] replaced by 1; the product of the others of row i at j is then
    # exactly that, and it is built from differentiable ops (this op again, one size up).
    # The Jacobian is symmetric: this is both the VJP and the JVP with ``gg``.
    n = x.shape[dim]
    xm = x.movedim(dim, -1)
    eye = _wrap(np.eye(n, dtype=bool))
    rows = where(eye, 1, xm.unsqueeze(-2).expand(*xm.shape[:-1], n, n))
    pair = where(eye, 0, apply(PROD_OTHERS, (rows,), (rows._data,), (rows.ndim - 1,)))
    return (gg.movedim(dim, -1).unsqueeze(-1) * pair).sum(-2).movedim(-1, dim)


PROD_OTHERS = Op("_prod_others", "ProdBackwardBackward0", _prod_others, _prod_others_vjp,
                 saves=("self",), args=("dim",),
                 jvp=lambda ctx, t: _prod_others_times(ctx.inputs[0], ctx._args[0], t))


def _prod_vjp(ctx, g):
    x, total = ctx.saved
    dims = ctx._args[0]
    gexp = _expand_back(ctx, g)
    if not dims or x._data.size == 0:
        return gexp
    if not np.any(x._data == 0):
        if ctx._op is PROD_DIM and not ctx._args[1]:
            total = total.unsqueeze(dims[0])
        return gexp * (total / x).conj()
    return gexp * _others_product(ctx, x, dims).conj()


def _others_product(ctx, x, dims):
    """For each element of ``x``, the product of the other elements it is reduced with (exact
    with zeros): over all of ``x`` (prod) or along ``dims[0]`` (prod(dim))."""
    if ctx._op is PROD:
        flat = x.reshape(-1)
        return apply(PROD_OTHERS, (flat,), (flat._data,), (0,)).reshape(x.shape)
    return apply(PROD_OTHERS, (x,), (x._data,), (dims[0],))


def _prod_fwd(x, dims, keepdim, dt):
    return np.prod(x, axis=dims, keepdims=keepdim, dtype=dt)


def _prod_jvp(ctx, t):
    # sum over dims of t * (product of the other elements), exact with zeros
    x = ctx.inputs[0]
    dims, keepdim = ctx._args[0], ctx._args[1]
    if not dims:
        return t
    if x._data.size == 0:
        return _wrap(np.zeros_like(ctx.result._data))
    if not np.any(x._data == 0):
        total = ctx.result
        if ctx._op is PROD_DIM and not keepdim:
            total = total.unsqueeze(dims[0])
        others = total / x
    else:
        others = _others_product(ctx, x, dims)
    return (t * others).sum(dims, keepdim)


PROD = Op("prod", "ProdBackward0", _prod_fwd, _prod_vjp, saves=("self", "result"),
          args=("dim", "keepdim", "dtype"), jvp=_prod_jvp)
PROD_DIM = Op("prod", "ProdBackward1", _prod_fwd, _prod_vjp, saves=("self", "result"),
              args=("dim", "keepdim", "dtype"), jvp=_prod_jvp)


def _prod_vjp_traceable(ctx, g):
    """prod's VJP without the eager rule's branch on zeros in the data (Note [Traceable VJP
    rules] in jit/differentiate.py): always the product of the other elements, exact with
    zeros; the eager rule divides the result by ``x`` when there is no zero, which is faster."""
    x, _ = ctx.saved
    dims = ctx._args[0]
    gexp = _expand_back(ctx, g)
    if not dims or x._data.size == 0:
        return gexp
    return gexp * _others_product(ctx, x, dims).conj()


# Rules the jit records instead of the op's own VJP (Note [Traceable VJP rules]).
TRACEABLE_VJP = {PROD: _prod_vjp_traceable, PROD_DIM: _prod_vjp_traceable}


def prod(input: Tensor, dim: Optional[int] = None, keepdim: bool = False, *,
         dtype: Any = None) -> Tensor:
    """Product of all elements, or along one ``dim``."""
    if _autocast.active:  # Note [Autocast]
        input, = _autocast.fp32(input)
    if input._blevel:  # Note [Batched backward]
        r = _bcall(prod, input, dim, keepdim, dtype=dtype)
        if r is not NotImplemented:
            return r
    x = input._data
    if dtype is not None:
        _unsigned.check_dtype("prod_out_cpu", dtype)
    dt = _reduce_dtype(x, dtype)
    if dim is None:
        _check_autograd_dtype(input, dt)
        return apply(PROD, (input,), (x,), (tuple(range(x.ndim)), False, dt))
    d = wrap_dim(int(dim), x.ndim) if x.ndim else wrap_dim(int(dim), 1)
    _check_autograd_dtype(input, dt)
    return apply(PROD_DIM, (input,), (x,), ((d,) if x.ndim else (), bool(keepdim), dt))


# ---------------------------------------------------------------------------- max / min
def _evenly_distribute(ctx, g):
    x, result = ctx.saved
    mask = x == result if not np.isnan(result._data).any() else x.isnan()
    return where_mask(mask, g / mask.sum())


def where_mask(mask: Tensor, g: Tensor) -> Tensor:
    """Zero the entries of gradient ``g`` where ``mask`` is False (``g * mask``)."""
    return g * mask


def _evenly_jvp(ctx, t):
    # the mean of the tangents of the elements equal to the result
    x, result = ctx.inputs[0], ctx.result
    mask = x == result if not np.isnan(result._data).any() else x.isnan()
    return (t * mask).sum() / mask.sum()


MAX_ALL = Op("max", "MaxBackward1", lambda x: np.max(x), _evenly_distribute,
             saves=("self", "result"), jvp=_evenly_jvp)
MIN_ALL = Op("min", "MinBackward1", lambda x: np.min(x), _evenly_distribute,
             saves=("self", "result"), jvp=_evenly_jvp)


# ``indices`` is the indices output itself, given as a tensor argument and saved (Note [Tensor
# arguments]); the forward returns its data as the second output.
def _kept_indices(indices: Tensor, dim: int, keepdim: bool) -> Tensor:
    return indices if keepdim else _wrap(np.expand_dims(indices._data, dim))


def _select_reduction(ctx, g_values, kept) -> Tensor:
    """Scatter ``g_values`` to the selected positions; ``kept(indices, dim, keepdim)`` gives
    the indices with the reduced dim kept."""
    (indices,) = ctx.saved
    dim, keepdim = ctx._args[0], ctx._args[1]
    shape = ctx.input_shape(0)
    if len(shape) == 0:
        return g_values
    if not keepdim:
        g_values = g_values.unsqueeze(dim)
    return scatter_zeros(g_values, dim, kept(indices, dim, keepdim), shape)


def _select_reduction_vjp(ctx, g_values, g_indices=None):
    return _select_reduction(ctx, g_values, _kept_indices)


def _select_reduction_vjp_traceable(ctx, g_values, g_indices=None):
    """``_select_reduction_vjp`` with the kept indices made by an op (``unsqueeze``) instead of
    NumPy, so that the jit records it (Note [Traceable VJP rules] in jit/differentiate.py); the
    eager rule keeps the cheaper NumPy view."""
    return _select_reduction(ctx, g_values,
                             lambda idx, dim, keepdim: idx if keepdim else idx.unsqueeze(dim))


def _max_dim_fwd(x, dim, keepdim, indices):
    idx = indices._data
    if x.ndim == 0:
        return x.copy(), idx
    vals = np.take_along_axis(x, idx if keepdim else np.expand_dims(idx, dim), axis=dim)
    return (vals if keepdim else np.squeeze(vals, dim)), idx


def _select_reduction_jvp(ctx, t):
    # values: the tangent at the selected indices; indices: none
    dim, keepdim, indices = ctx._args
    if t._data.ndim == 0:
        return t, None
    values = gather(t, dim, _kept_indices(indices, dim, keepdim))
    return (values if keepdim else values.squeeze(dim)), None


MAX_DIM = Op("max", "MaxBackward0", _max_dim_fwd,
             _select_reduction_vjp, args=("dim", "keepdim", "indices"), num_outputs=2,
             saves=("indices",), jvp=_select_reduction_jvp)
MIN_DIM = Op("min", "MinBackward0", _max_dim_fwd,
             _select_reduction_vjp, args=("dim", "keepdim", "indices"), num_outputs=2,
             saves=("indices",), jvp=_select_reduction_jvp)
TRACEABLE_VJP.update({MAX_DIM: _select_reduction_vjp_traceable,
                      MIN_DIM: _select_reduction_vjp_traceable})


def max_dim_indices(x: np.ndarray, dim: int, keepdim: bool, is_max: bool) -> Tensor:
    """The indices output of ``max``/``min`` along ``dim`` (the argument of MAX_DIM/MIN_DIM)."""
    return _wrap(_max_indices_fwd(x, dim, keepdim, is_max))


def _max_indices_fwd(x: np.ndarray, dim: int, keepdim: bool, is_max: bool) -> np.ndarray:
    if x.ndim == 0:
        return np.zeros((), dtype=np.int64)
    return (np.argmax if is_max else np.argmin)(x, axis=dim, keepdims=keepdim)


# The indices of max(dim)/min(dim) are an op of their own (no VJP), so that a traced graph
# computes them in a node (Note [Index ops] in ops/sort.py).
MAX_INDICES = Op("max_indices", "MaxIndicesBackward0", _max_indices_fwd,
                 args=("dim", "keepdim", "is_max"), jvp=zero)


def _max_indices_rule(c: Any, args: tuple) -> Tensor:
    """Batching rule of MAX_INDICES: along the shifted dim; a 0-d row has index 0."""
    dim, keepdim, is_max = args
    t, a = c.ts[0], c.arrs[0]
    if not c.ls[0]:
        return _wrap(np.zeros((c.B,), np.int64))
    return apply(MAX_INDICES, (t,), (a,), (dim + 1, keepdim, is_max))


def _minmax(input: Tensor, dim: Any, keepdim: bool, is_max: bool) -> Any:
    if _bmarked((input, dim)):  # Note [Batched backward]
        r = _bcall(_minmax, input, dim, keepdim, is_max)
        if r is not NotImplemented:
            return r
    name = "max" if is_max else "min"
    if isinstance(dim, Tensor):
        if keepdim is not None:     # max(input, other) has no keepdim (None: not passed)
            raise TypeError(f"{name}() received an invalid combination of arguments - got "
                            "(Tensor, Tensor, bool), but expected (Tensor input, Tensor other)")
        return maximum(input, dim) if is_max else minimum(input, dim)
    x = input._data
    if x.dtype.kind == "c" and not (dim is None and x.size == 0):
        if dim is None:
            raise NotImplementedError(f"\"{name}_all\" not implemented for "
                                      f"'{_dtype._FROM_NP[x.dtype]._torch_name}'")
        raise RuntimeError(f"{name}(): does not support complex input")
    if dim is None:
        if x.size == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                               "input.numel() == 0. Specify the reduction dim with the 'dim' "
                               "argument.")
        return apply(MAX_ALL if is_max else MIN_ALL, (input,), (x,))
    keepdim = bool(keepdim)
    d = wrap_dim(int(dim), x.ndim)
    if x.ndim and x.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    inds = apply_nondiff(MAX_INDICES, (input,), (x,), (d, bool(keepdim), is_max))
    op = MAX_DIM if is_max else MIN_DIM
    vals, out = apply(op, (input,), (x,), (d, bool(keepdim), inds))
    # The indices output is ``inds`` itself (saved by the node), unless a batching rule ran.
    return (_rt.max if is_max else _rt.min)(vals, inds if out._data is inds._data else out)


def max(input: Tensor, dim: Any = None, keepdim: Any = None) -> Any:  # noqa: A001
    """Max of all elements; with ``dim``, ``(values, indices)``; with a tensor, ``maximum``."""
    return _minmax(input, dim, keepdim, True)


def min(input: Tensor, dim: Any = None, keepdim: Any = None) -> Any:  # noqa: A001
    """Min of all elements; with ``dim``, ``(values, indices)``; with a tensor, ``minimum``."""
    return _minmax(input, dim, keepdim, False)


def _arg_reduce_fwd(x: np.ndarray, dim: Optional[int], keepdim: bool, is_max: bool
                    ) -> np.ndarray:
    fn = np.argmax if is_max else np.argmin
    if dim is None:
        return np.asarray(fn(x), dtype=np.int64)
    if x.ndim == 0:
        return np.zeros((), dtype=np.int64)
    return fn(x, axis=dim, keepdims=keepdim).astype(np.int64)


# No VJP (int64): ops of the table so that a traced graph computes them in a node.
ARGMAX = Op("argmax", "ArgmaxBackward0", _arg_reduce_fwd, args=("dim", "keepdim", "is_max"),
            jvp=zero)
ARGMIN = Op("argmin", "ArgminBackward0", _arg_reduce_fwd, args=("dim", "keepdim", "is_max"),
            jvp=zero)


def _arg_reduce(input: Tensor, dim: Optional[int], keepdim: bool, is_max: bool) -> Tensor:
    name = "argmax" if is_max else "argmin"
    x = input._data
    if x.dtype.kind in "bc":
        raise RuntimeError(f"{name}(): does not support "
                           f"{'bool' if x.dtype.kind == 'b' else 'complex'} input")
    op = ARGMAX if is_max else ARGMIN
    if dim is None:
        if x.size == 0:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                             "input.numel() == 0.")
        return apply_nondiff(op, (input,), (x,), (None, False, is_max))
    d = wrap_dim(dim, x.ndim) if x.ndim else wrap_dim(dim, 1)
    if x.ndim and x.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    return apply_nondiff(op, (input,), (x,), (d, bool(keepdim), is_max))


def argmax(input: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    """Index of the largest value, over the flattened input or along ``dim``.

    >>> import ndgrad
    >>> ndgrad.tensor([3, 7, 5]).argmax().item()
    1
    """
    if input._blevel:  # Note [Batched backward]
        r = _argminmax(input, dim, keepdim, True)
        if r is not NotImplemented:
            return r
    return _arg_reduce(input, dim, keepdim, True)


def argmin(input: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    """Index of the smallest value, over the flattened input or along ``dim``."""
    if input._blevel:  # Note [Batched backward]
        r = _argminmax(input, dim, keepdim, False)
        if r is not NotImplemented:
            return r
    return _arg_reduce(input, dim, keepdim, False)


# ---------------------------------------------------------------------------- gather / scatter
# A 0-d input or index acts as 1-d (PyTorch's rule); an empty index selects nothing, whatever
# its dtype and number of dims.
def _scatter_fwd(g, dim, index, shape):
    out = np.zeros(shape, dtype=g.dtype)
    if index.size == 0:
        return out
    if out.ndim == 0 or index.ndim == 0:
        out.reshape(-1)[index.reshape(-1)] = g.reshape(-1)
        return out
    np.put_along_axis(out, index, g, axis=dim)
    return out


def _gather_fwd(x, dim, index):
    index = index._data          # a tensor argument (Note [Tensor arguments])
    if index.size == 0:
        return np.zeros(index.shape, dtype=x.dtype)
    if x.ndim == 0 or index.ndim == 0:
        return np.take(x.reshape(-1), index.reshape(-1)).reshape(index.shape)
    # The index may be smaller than x in the other dimensions: gather from the leading part.
    if index.shape != x.shape:
        x = x[tuple(slice(None) if d == dim else slice(0, s) for d, s in enumerate(index.shape))]
    return np.take_along_axis(x, index, axis=dim)


SCATTER_ZEROS = Op("_scatter_zeros", "ValueSelectingReductionBackwardBackward0", _scatter_fwd,
                   lambda ctx, g: gather(g, ctx._args[0], _wrap(ctx._args[1])),
                   args=("dim", "index", "shape"), jvp=linear)
def _gather_vjp(ctx, g):
    index, _ = ctx.saved         # ``self`` is saved (and version-checked) as by PyTorch
    return _scatter_add_zeros(g, ctx._args[0], index._data, ctx.input_shape(0))


GATHER = Op("gather", "GatherBackward0", _gather_fwd, _gather_vjp, args=("dim", "index"),
            saves=("index", "self"), jvp=linear)


def _scatter_add_fwd(g, dim, index, shape):
    out = np.zeros(shape, dtype=g.dtype)
    if index.size == 0:
        return out
    if out.ndim == 0 or index.ndim == 0:
        np.add.at(out.reshape(-1), index.reshape(-1), g.reshape(-1))
        return out
    idx = list(np.indices(index.shape, sparse=True))
    idx[dim] = index
    np.add.at(out, tuple(idx), g)
    return out


SCATTER_ADD_ZEROS = Op("_scatter_add_zeros", "ScatterAddBackward0", _scatter_add_fwd,
                       lambda ctx, g: gather(g, ctx._args[0], _wrap(ctx._args[1])),
                       args=("dim", "index", "shape"), jvp=linear)


def scatter_zeros(g: Tensor, dim: int, index: Tensor, shape: tuple) -> Tensor:
    """Zeros of ``shape`` with ``g`` written at ``index`` along ``dim`` (no duplicates)."""
    return apply(SCATTER_ZEROS, (g,), (g._data,), (dim, index._data, tuple(shape)))


def _scatter_add_zeros(g: Tensor, dim: int, index: np.ndarray, shape: tuple) -> Tensor:
    return apply(SCATTER_ADD_ZEROS, (g,), (g._data,), (dim, index, tuple(shape)))


def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """``out[i][j] = input[index[i][j]][j]`` along ``dim`` (PyTorch's gather)."""
    if _bmarked((input, index)):  # Note [Batched backward]
        r = _bcall(gather, input, dim, index)
        if r is not NotImplemented:
            return r
    x, idx = input._data, index._data
    d = wrap_dim(dim, x.ndim)
    if idx.size == 0:
        return apply(GATHER, (input,), (x,), (d, _wrap(np.zeros(idx.shape, dtype=np.int64))))
    if idx.dtype != np.int64 and idx.dtype != np.int32:
        raise RuntimeError("gather(): Expected dtype int32/int64 for index")
    if (idx.ndim or 1) != (x.ndim or 1):        # a 0-d tensor counts as 1-d
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for k, (si, sx) in enumerate(zip(idx.shape, x.shape)):
        if k != d and si > sx:
            raise RuntimeError(f"Size does not match at dimension {k} expected index "
                               f"{list(idx.shape)} to be no larger than self {list(x.shape)} "
                               f"apart from dimension {d}")
    n = x.shape[d] if x.ndim else 1
    bad = (idx >= n) | (idx < 0)
    if bad.any():
        raise RuntimeError(f"index {int(idx[bad].flat[0])} is out of bounds for dimension {d} "
                           f"with size {n}")
    return apply(GATHER, (input,), (x,), (d, index))


def _logical_reduce(ufunc: Any, name: str):
    def reduce(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
        x = input._data
        # uint8 inputs give uint8 results (PyTorch's legacy rule), everything else bool.
        out_dt = np.uint8 if x.dtype == np.uint8 else np.bool_
        if dim is None:
            r = ufunc.reduce(x.astype(bool, copy=False), axis=None)
        else:
            dims = dims_tuple(dim, x.ndim) if x.ndim else _check_0d_dims(dim)
            r = ufunc.reduce(x.astype(bool, copy=False), axis=dims, keepdims=bool(keepdim))
        if type(x) is _MetaArray:        # Note [Meta arrays]
            return _wrap(_meta.to_meta(np.asarray(r).astype(out_dt, copy=False)))
        return _wrap(np.asarray(r).astype(out_dt, copy=False))
    reduce.__name__ = name
    reduce.__doc__ = (f"True where {'all' if name == 'all' else 'any'} elements (over ``dim``, "
                      "or all of them) are nonzero; a bool tensor, not differentiable.")
    return reduce


all_ = _logical_reduce(np.logical_and, "all")
any_ = _logical_reduce(np.logical_or, "any")


# ---------------------------------------------------------------------------- var / std
def _var_fwd(x, dims, correction, keepdim):
    with warnings.catch_warnings():     # no dof left: nan/inf as in PyTorch, without NumPy's
        warnings.simplefilter("ignore", RuntimeWarning)
        if x.dtype in _LOWP:            # float32 throughout, rounded once (Note [Low-precision
            return np.var(x, axis=dims, ddof=correction, keepdims=keepdim,  # accumulation])
                          dtype=_F32).astype(x.dtype)
        return np.var(x, axis=dims, ddof=correction, keepdims=keepdim)


def _std_fwd(x, dims, correction, keepdim):
    if x.dtype in _LOWP:                # the root of the float32 variance, rounded once
        return np.sqrt(_var_fwd(x.astype(_F32), dims, correction, keepdim)).astype(x.dtype)
    return np.sqrt(_var_fwd(x, dims, correction, keepdim))


def _var_scale(shape: tuple, dims: tuple, correction: Any) -> float:
    n = 1
    for d in dims:
        n *= shape[d]
    dof = n - correction
    return 1.0 / dof if dof > 0 else float("inf")


def _unsqueezed(t: Tensor, dims: tuple, keepdim: bool) -> Tensor:
    if not keepdim:
        for d in sorted(dims):
            t = t.unsqueeze(d)
    return t


def _centered(x: Tensor, dims: tuple) -> Tensor:
    return x - x.mean(dims, keepdim=True) if dims else x - x


def _over_std(v: Tensor, std: Tensor) -> Tensor:
    """``v / std``, 0 where ``std`` is 0: a constant slice's std has gradient 0 in PyTorch
    (its derivative formula masks the 0/0), not NaN."""
    return (v / std).masked_fill(std == 0, 0)


def _var_vjp(ctx, g):
    x = ctx.saved[0]
    dims, correction, keepdim = ctx._args
    s = _var_scale(x.shape, dims, correction)
    g = _unsqueezed(g, dims, keepdim)
    if ctx._op is STD:
        return _over_std(g * s, _unsqueezed(ctx.saved[1], dims, keepdim)) * _centered(x, dims)
    return g * _centered(x, dims) * (2 * s)


def _var_jvp(ctx, t):
    x = ctx.inputs[0]
    dims, correction, keepdim = ctx._args
    s = _var_scale(x.shape, dims, correction)
    w = t * _centered(x, dims)
    w = w.sum(dims, keepdim) if dims else w
    if ctx._op is STD:
        return _over_std(w * s, ctx.result)
    return w * (2 * s)


VAR = Op("var", "VarBackward0", _var_fwd, _var_vjp, saves=("self",),
         args=("dim", "correction", "keepdim"), jvp=_var_jvp)
STD = Op("std", "StdBackward0", _std_fwd, _var_vjp, saves=("self", "result"),
         args=("dim", "correction", "keepdim"), jvp=_var_jvp)


def _var_std(op: Op, input: Tensor, dim: Any, unbiased: Any, keepdim: bool,
             correction: Any) -> Tensor:
    if isinstance(dim, bool):          # var(input, unbiased): PyTorch's legacy overload
        dim, unbiased = None, dim
    x = input._data
    if category(x) <= _INT:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        dims = tuple(range(x.ndim))
    else:
        dims = dims_tuple(dim, x.ndim) if x.ndim else _check_0d_dims(dim)
    kept = math.prod(n for i, n in enumerate(x.shape) if i not in dims)
    if (x.size // kept if kept else 0) - correction <= 0:
        warn_user(f"{op.name}(): degrees of freedom is <= 0. Correction should be strictly less "
                  "than the reduction factor (input numel divided by output numel).")
    return apply(op, (input,), (x,), (dims, correction, bool(keepdim)))


def var(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
        correction: Any = None) -> Tensor:
    """Variance over ``dim`` (all dims by default) with Bessel's ``correction`` (default 1).

    >>> import ndgrad
    >>> ndgrad.tensor([1.0, 3.0]).var().item()
    2.0
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(var, input, dim, unbiased, keepdim, correction=correction)
        if r is not NotImplemented:
            return r
    return _var_std(VAR, input, dim, unbiased, keepdim, correction)


def std(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
        correction: Any = None) -> Tensor:
    """Standard deviation over ``dim`` (all dims by default), ``correction`` as for ``var``.

    >>> import ndgrad
    >>> ndgrad.tensor([1.0, 3.0]).std(correction=0).item()
    1.0
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(std, input, dim, unbiased, keepdim, correction=correction)
        if r is not NotImplemented:
            return r
    return _var_std(STD, input, dim, unbiased, keepdim, correction)


# ---------------------------------------------------------------------------- amax / amin
def _amax_amin(input: Tensor, dim: Any, keepdim: bool, is_max: bool) -> Tensor:
    name = "amax" if is_max else "amin"
    x = input._data
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        dims = tuple(range(x.ndim))
        if x.size == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                               "input.numel() == 0. Specify the reduction dim with the 'dim' "
                               "argument.")
    else:
        dims = dims_tuple(dim, x.ndim) if x.ndim else _check_0d_dims(dim)
    for d in dims:
        if x.shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    return apply(AMAX if is_max else AMIN, (input,), (x,), (dims, bool(keepdim)))


def amax(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    """Maximum over ``dim`` (all dims when empty); ties share the gradient evenly.

    >>> import ndgrad
    >>> ndgrad.tensor([[1.0, 4.0], [3.0, 2.0]]).amax(1)
    tensor([4., 3.])
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(amax, input, dim, keepdim)
        if r is not NotImplemented:
            return r
    return _amax_amin(input, dim, keepdim, True)


def amin(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    """Minimum over ``dim`` (all dims when empty); ties share the gradient evenly.

    >>> import ndgrad
    >>> ndgrad.tensor([[1.0, 4.0], [3.0, 2.0]]).amin(1)
    tensor([1., 2.])
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(amin, input, dim, keepdim)
        if r is not NotImplemented:
            return r
    return _amax_amin(input, dim, keepdim, False)


from ._batching import RULES as _RULES  # noqa: E402 (after the ops it maps)

_RULES[MAX_INDICES] = _max_indices_rule
