"""The indexing family: scatter and its reductions, the ``index_*`` ops along one dim, masked
select/scatter, flat ``take``/``put``, ``take_along_dim``, and the non-differentiable index
queries (``nonzero``, ``argwhere``, ``isin``, ``searchsorted``, ``bucketize``).

One ``Op`` per PyTorch backward node (Note [One declaration per op] in ops/_dispatch.py). The
index tensor is a tensor argument (Note [Tensor arguments]): saved as PyTorch saves it
(``grad_fn._saved_index``). Every public function checks dtypes, dims, shapes and index bounds
with PyTorch's words before any forward runs, so no NumPy IndexError reaches the user and the
in-place forms (``x.scatter_(...)``, computed out of place and then stored) leave ``x`` untouched
when they raise.

``index_add``, ``index_copy`` and ``index_reduce`` are computed as scatters whose index is the
1-d index broadcast along ``dim`` (each slice ``source[..., j, ...]`` goes to slice
``index[j]``); their gradients are written with ``index_select``/``index_fill`` as PyTorch's are.

Example:
    >>> import ndgrad
    >>> x = ndgrad.zeros(3, requires_grad=True)
    >>> y = x.scatter_add(0, ndgrad.tensor([0, 0, 2]), ndgrad.tensor([1.0, 2.0, 3.0]))
    >>> y
    tensor([3., 0., 3.], grad_fn=<ScatterAddBackward0>)
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .. import _dtype, _unsigned
from .._warn import warn_user_once
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Tensor, _wrap
from ._batching import call as _bcall
from ._batching import marked as _bmarked
from . import _dispatch
from ._dispatch import Op, apply
from ._jvp import linear, not_implemented
from ._util import as_scalar, broadcast_error, is_scalar, wrap_dim

__all__ = ["scatter", "scatter_add", "scatter_reduce", "index_add", "index_copy", "index_fill",
           "index_reduce", "masked_select", "masked_scatter", "take", "take_along_dim", "put",
           "nonzero", "nonzero_static", "argwhere", "isin", "searchsorted", "bucketize",
           "index_put"]

_LOW = _dtype.HALF_NP
_SCATTER_REDUCES = ("sum", "prod", "mean", "amax", "amin")
_INDEX_REDUCES = ("prod", "mean", "amax", "amin")


def _tname(dt: np.dtype) -> str:
    """PyTorch's short dtype name (``Float``, ``Long`` ...)."""
    return _dtype._FROM_NP[dt]._torch_name


def _as1d(a: np.ndarray) -> np.ndarray:
    return a.reshape(1) if a.ndim == 0 else a


# ---------------------------------------------------------------------------- scatter kernels
def _scatter_positions(index: np.ndarray, dim: int) -> tuple:
    """The NumPy index of ``out[..., index[i, j, ...], ...]`` along ``dim`` (``index`` >= 1-d)."""
    pos: list = list(np.indices(index.shape, sparse=True))
    pos[dim] = index
    return tuple(pos)


def _identity(dt: np.dtype, mode: str) -> Any:
    if mode in ("sum", "mean", "add"):
        return 0
    if mode in ("prod", "multiply"):
        return 1
    big = mode == "amin"
    if dt.kind == "f":
        return np.inf if big else -np.inf
    if dt.kind == "b":
        return big
    info = np.iinfo(dt)
    return info.max if big else info.min


_UFUNCS = {"add": np.add, "sum": np.add, "mean": np.add, "multiply": np.multiply,
           "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}


def _scatter_core(x: np.ndarray, src: Any, dim: int, index: np.ndarray, mode: Optional[str],
                  include_self: bool = True) -> np.ndarray:
    """``x`` with ``src`` scattered at ``index`` along ``dim``: assigned (``mode`` None) or
    reduced. ``index`` has been checked; ``src`` is an array (at least index's size) or a
    number."""
    out = np.array(x)
    if index.size == 0 or out.size == 0:
        return out
    work = out.astype(np.float32) if out.dtype in _LOW else out
    o = _as1d(work)
    pos = _scatter_positions(_as1d(index), dim)
    if isinstance(src, np.ndarray):
        s = _as1d(src)
        s = s[tuple(slice(0, n) for n in _as1d(index).shape)]
        if s.dtype != o.dtype:
            s = s.astype(o.dtype)
    else:
        s = src
    if mode is None:
        o[pos] = s
    else:
        if not include_self:
            o[pos] = _identity(o.dtype, mode)
        s = np.broadcast_to(np.asarray(s, o.dtype), _as1d(index).shape)
        if mode == "mean":
            count = np.full(o.shape, 1 if include_self else 0, np.int64)
            np.add.at(count, pos, 1)
            np.add.at(o, pos, s)
            count[count == 0] = 1
            if o.dtype.kind in "iub":
                o[...] = np.floor_divide(o, count)
            else:
                o[...] = o / count
        else:
            _UFUNCS[mode].at(o, pos, s)
    if work is not out:
        out[...] = work.astype(out.dtype)
    return out


def _spread(index: np.ndarray, dim: int, shape: tuple) -> np.ndarray:
    """A 1-d index along ``dim`` broadcast to ``shape`` (the index of the equivalent scatter)."""
    i = index.reshape(-1)
    if not shape:
        return i.reshape(())
    s = [1] * len(shape)
    s[dim] = -1
    return np.broadcast_to(i.reshape(s), shape)


def _spread_t(index: Tensor, dim: int, source: Tensor) -> Tensor:
    return _wrap(_spread(index._data, dim, source._data.shape))


# ---------------------------------------------------------------------------- checks
def _check_index_dtype(index: Tensor, fn: str) -> None:
    if index._data.dtype not in (np.dtype(np.int64), np.dtype(np.int32)):
        raise RuntimeError(f"{fn}(): Expected dtype int32/int64 for index")


def _check_bounds(i: np.ndarray, n: int, d: int, prefix: str = "",
                  negative: bool = False) -> None:
    """PyTorch's out-of-range error (checked before anything is written)."""
    if i.size == 0:
        return
    lo = -n if negative else 0
    bad = (i >= n) | (i < lo)
    if bad.any():
        raise RuntimeError(f"{prefix}index {int(i[bad].flat[0])} is out of bounds for dimension "
                           f"{d} with size {n}")


def _check_scatter(fn: str, x: np.ndarray, d: int, i: np.ndarray,
                   src: Optional[np.ndarray]) -> None:
    """scatter/scatter_add/scatter_reduce: index dims, sizes and bounds."""
    if i.size == 0:
        return
    if (i.ndim or 1) != (x.ndim or 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if src is not None and (i.ndim or 1) != (src.ndim or 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    ish, xsh = _as1d(i).shape, _as1d(x).shape
    ssh: Any = _as1d(src).shape if src is not None else None
    bad = any(k != d and a > b for k, (a, b) in enumerate(zip(ish, xsh)))
    if src is not None:
        if bad or any(a > b for a, b in zip(ish, ssh)):
            raise RuntimeError(f"Expected index {list(i.shape)} to be no larger than self "
                               f"{list(x.shape)} apart from dimension {d} and to be no larger "
                               f"size than src {list(src.shape)}")
    elif bad:
        raise RuntimeError(f"Expected index {list(i.shape)} to be no larger than self "
                           f"{list(x.shape)} apart from dimension {d}")
    _check_bounds(i, xsh[d], d)


def _check_same_dtype(x: np.ndarray, s: np.ndarray, fn: str = "scatter") -> None:
    if x.dtype != s.dtype:
        raise RuntimeError(f"{fn}(): Expected self.dtype to be equal to src.dtype")


def _check_tensor(v: Any, fn: str, arg: str, pos: int) -> None:
    if not isinstance(v, Tensor):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{type(v).__name__}")


def _value_of(v: Any, dt: np.dtype) -> Any:
    """A fill value as a number of ``dt`` (PyTorch's overflow check)."""
    if isinstance(v, Tensor):
        v = v._data.item()
    return _dtype.scalar_to(as_scalar(v), _dtype._FROM_NP[dt])


# ---------------------------------------------------------------------------- scatter ops
def _gather_t(g: Tensor, dim: int, index: Tensor, zero_d: bool = False) -> Tensor:
    """``g.gather(dim, index)``; ``zero_d``: ``g`` is (logically) 0-d, gathered as 1-d."""
    from .reduction import gather
    if zero_d or index._data.ndim == 0:
        from .shape import reshape
        r = gather(reshape(g, (1,)), 0, _wrap(index._data.reshape(1)))
        return reshape(r, index._data.shape)
    return gather(g, dim, index)


def _zero_at(g: Tensor, dim: int, index: Tensor) -> Tensor:
    """``g`` with zeros where a scatter at ``index`` writes (differentiable, linear)."""
    return apply(SCATTER_VALUE, (g,), (g._data,), (dim, index, 0))


def _scatter_vjp(ctx, g):
    dim, index = ctx._args[0], ctx._args[1]
    zd = not ctx.input_shape(0)
    return (_zero_at(g, dim, index) if ctx.needs_input_grad(0) else None,
            _g_gather(g, dim, index, zd) if ctx.needs_input_grad(1) else None)


def _scatter_value_jvp(ctx, t):
    return apply(SCATTER_VALUE, (t,), (t._data,), (ctx._args[0], ctx._args[1], 0))


_g_gather = _gather_t
SCATTER = Op("scatter", "ScatterBackward0",
             lambda x, s, dim, index: _scatter_core(x, s, dim, index._data, None),
             _scatter_vjp, inputs=("self", "src"), args=("dim", "index"), saves=("index",),
             jvp=linear)
SCATTER_VALUE = Op("scatter", "ScatterBackward1",
                   lambda x, dim, index, value: _scatter_core(x, value, dim, index._data, None),
                   lambda ctx, g: _zero_at(g, ctx._args[0], ctx._args[1]),
                   args=("dim", "index", "value"), saves=("index",), jvp=_scatter_value_jvp)


def _no_scatter_derivative(ctx, *grads):
    raise RuntimeError("derivative for aten::scatter is not implemented")


# The legacy ``reduce=`` forms: PyTorch records a node whose backward raises.
SCATTER_LEGACY = Op("scatter", "NotImplemented",
                    lambda x, s, dim, index, reduce: _scatter_core(x, s, dim, index._data,
                                                                   reduce),
                    _no_scatter_derivative, inputs=("self", "src"), args=("dim", "index", "reduce"),
                    jvp=not_implemented("aten::scatter"),
                    full_name="torch::autograd::NotImplemented")
SCATTER_LEGACY_VALUE = Op("scatter", "NotImplemented",
                          lambda x, dim, index, value, reduce: _scatter_core(
                              x, value, dim, index._data, reduce),
                          _no_scatter_derivative, args=("dim", "index", "value", "reduce"),
                          jvp=not_implemented("aten::scatter"),
                          full_name="torch::autograd::NotImplemented")


def _scatter_add_vjp(ctx, g):
    return (g if ctx.needs_input_grad(0) else None,
            _g_gather(g, ctx._args[0], ctx._args[1], not ctx.input_shape(0))
            if ctx.needs_input_grad(1) else None)


SCATTER_ADD = Op("scatter_add", "ScatterAddBackward0",
                 lambda x, s, dim, index: _scatter_core(x, s, dim, index._data, "add"),
                 _scatter_add_vjp, inputs=("self", "src"), args=("dim", "index"),
                 saves=("index",), save_if=((1,),), jvp=linear)


def scatter(input: Tensor, dim: int, index: Tensor, src: Any = None, value: Any = None, *,
            reduce: Optional[str] = None) -> Tensor:
    """``input`` with ``src[i][j]`` (or ``value``) written at ``index[i][j]`` along ``dim``.

    >>> import ndgrad
    >>> ndgrad.zeros(2, 3).scatter(1, ndgrad.tensor([[2], [0]]), 1.0)
    tensor([[0., 0., 1.],
            [1., 0., 0.]])
    """
    if src is None:
        src = value
    if _bmarked((input, index, src)):  # Note [Batched backward]
        r = _bcall(scatter, input, dim, index, src, reduce=reduce)
        if r is not NotImplemented:
            return r
    x, i = input._data, index._data
    d = wrap_dim(dim, x.ndim or 1)
    _check_index_dtype(index, "scatter")
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    if isinstance(src, Tensor):
        _check_same_dtype(x, src._data)
        _check_scatter("scatter", x, d, i, src._data)
        if reduce is not None:
            warn_user_once("The reduce argument of torch.scatter with Tensor src is deprecated and "
                           "will be removed in a future PyTorch release. Use torch.scatter_reduce "
                           "instead for more reduction options.")
            return apply(SCATTER_LEGACY, (input, src), (x, src._data), (d, index, reduce))
        return apply(SCATTER, (input, src), (x, src._data), (d, index))
    if not is_scalar(src):
        raise TypeError(f"scatter() received an invalid combination of arguments - got "
                        f"(Tensor, int, Tensor, {type(src).__name__})")
    _check_scatter("scatter", x, d, i, None)
    v = _value_of(src, x.dtype)
    if reduce is not None:
        return apply(SCATTER_LEGACY_VALUE, (input,), (x,), (d, index, v, reduce))
    return apply(SCATTER_VALUE, (input,), (x,), (d, index, v))


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """``input`` with ``src[i][j]`` added at ``index[i][j]`` along ``dim`` (duplicates add up).

    >>> import ndgrad
    >>> ndgrad.zeros(3).scatter_add(0, ndgrad.tensor([1, 1]), ndgrad.tensor([1.0, 2.0]))
    tensor([0., 3., 0.])
    """
    if _bmarked((input, index, src)):  # Note [Batched backward]
        r = _bcall(scatter_add, input, dim, index, src)
        if r is not NotImplemented:
            return r
    x, i = input._data, index._data
    d = wrap_dim(dim, x.ndim or 1)
    _check_index_dtype(index, "scatter_add")
    _check_same_dtype(x, src._data)
    _check_scatter("scatter_add", x, d, i, src._data)
    return apply(SCATTER_ADD, (input, src), (x, src._data), (d, index))


# ---------------------------------------------------------------------------- scatter_reduce
def _reduce_grads(ctx, g, self_t, src_t, result, dim, index, reduce, include_self,
                  need_self, need_src, check_double=True):
    """Gradients of ``scatter_reduce(self, dim, index, src, reduce, include_self)``.

    sum/mean: the gradient, divided by the number of contributors for mean. prod: the product
    of the other contributors. amax/amin: shared evenly among the contributors equal to the
    result. Without ``include_self``, ``self`` gets nothing where something was scattered.
    """
    from . import pointwise as pw
    zd = not ctx.input_shape(0)

    def _g_gather(g, dim, index):
        return _gather_t(g, dim, index, zd)
    gs = gsrc = None
    if reduce == "sum":
        gs = g
        if need_src:
            gsrc = _g_gather(g, dim, index)
    elif reduce == "mean":
        n = np.full(result._data.shape, 1.0 if include_self else 0.0, g._data.dtype)
        pos = _scatter_positions(_as1d(index._data), dim)
        if index._data.size:
            np.add.at(_as1d(n), pos, 1.0)
        n[n == 0] = 1
        gs = g / _wrap(n)
        if need_src:
            gsrc = _g_gather(gs, dim, index)
    elif reduce == "prod":
        if need_self:
            masked = pw.masked_fill(self_t, _const(np.asarray(self_t._data == 0)), 1)
            masked_result = scatter_reduce(masked, dim, index, src_t, "prod",
                                           include_self=include_self)
            gs = g * masked_result / masked
        if need_src:
            sz = np.asarray(src_t._data == 0)
            per_slot = _scatter_core(np.zeros(result._data.shape, np.int64), sz.astype(np.int64),
                                     dim, index._data, "add")
            zeros_here = _gather_np(per_slot, dim, index._data, sz.shape)
            double_zeros = check_double and is_grad_enabled() and (zeros_here > 1).any()
            single = sz & (zeros_here == 1)
            # A lone zero: the product of the others is the result with that zero replaced by 1.
            others = scatter_reduce(self_t, dim, index, pw.masked_fill(src_t, _const(single), 1),
                                    "prod", include_self=include_self)
            gsrc = pw.where(_const(single), _g_gather(g * others, dim, index),
                            _g_gather(g * result, dim, index) /
                            pw.masked_fill(src_t, _const(sz), 1))
            if double_zeros:    # this gradient is right, its derivative would not be
                fn, src = ("index_reduce", "source") if ctx._op is INDEX_REDUCE else \
                    ("scatter_reduce", "src")
                gsrc = apply(NO_DOUBLE_BACKWARD, (gsrc,), (gsrc._data,), (
                    f"{fn}(): Double backward is unsupported for {src} when >1 zeros in {src} "
                    "are scattered to the same position in self",))
    else:   # amax / amin
        self_is, src_is, n = _ties(self_t, src_t, result, dim, index, include_self,
                                   g._data.dtype, vjp=True)
        share = g / n
        if need_self:
            gs = self_is * share
        if need_src:
            gsrc = src_is * _g_gather(share, dim, index)
    if gs is not None and not include_self:
        gs = _zero_at(gs, dim, index)
    return (gs if need_self else None), (gsrc if need_src else None)


def _refuse(ctx, g):
    raise RuntimeError(ctx._args[0])


# The gradient of prod w.r.t. src when two zeros of src meet at one position: PyTorch refuses
# to differentiate it again (an identity whose backward raises).
NO_DOUBLE_BACKWARD = Op("_no_double_backward", "NotImplemented", lambda x, msg: x.copy(),
                        _refuse, args=("msg",), jvp=linear,
                        full_name="torch::autograd::NotImplemented")


def _scatter_reduce_vjp(ctx, g):
    index, self_t, src_t, result = ctx.saved
    dim, _, reduce, include_self = ctx._args
    return _reduce_grads(ctx, g, self_t, src_t, result, dim, index, reduce, include_self,
                         ctx.needs_input_grad(0), ctx.needs_input_grad(1))


def _const(a: np.ndarray) -> Tensor:
    return _wrap(np.asarray(a))


def _gather_np(a: np.ndarray, dim: int, index: np.ndarray, shape: tuple) -> np.ndarray:
    """``a`` gathered at ``index`` along ``dim`` (NumPy; for constant masks)."""
    if index.size == 0:
        return np.zeros(index.shape, a.dtype)
    i = _as1d(index)
    a = _as1d(a)[tuple(slice(None) if k == dim else slice(0, n) for k, n in enumerate(i.shape))]
    return np.take_along_axis(a, i, axis=dim).reshape(index.shape)


def _ties(self_t, src_t, result, dim, index, include_self, dt, vjp=False) -> tuple:
    """amax/amin: which of self and src equal the result, and how many per output position.

    PyTorch's VJP counts an excluded (``include_self=False``) self element equal to the result
    among the ties (and then gives it nothing); its JVP does not count it. Both are followed.
    """
    r, i = result._data, index._data
    self_is = np.asarray(self_t._data == r).astype(dt)
    if not include_self and i.size and not vjp:
        self_is = _scatter_core(self_is, 0, dim, i, None)
    src_is = np.asarray(src_t._data == _gather_np(r, dim, i, i.shape)).astype(dt)
    if src_is.shape != i.shape:
        src_is = _as1d(src_is)[tuple(slice(0, n) for n in _as1d(i).shape)].reshape(i.shape)
    n = _scatter_core(self_is, src_is, dim, i, "add")
    return _const(self_is), _const(src_is), _const(n)


def _minmax_jvp(ctx, ts, tsrc, dim, index, include_self, result):
    self_t, src_t = ctx.inputs
    dt = result._data.dtype
    ts = ts if ts is not None else _const(np.zeros(self_t._data.shape, dt))
    tsrc = tsrc if tsrc is not None else _const(np.zeros(src_t._data.shape, dt))
    self_is, src_is, n = _ties(self_t, src_t, result, dim, index, include_self, dt)
    if tsrc._data.shape != src_is._data.shape:     # src larger than index: its leading part
        from .shape import getitem
        tsrc = getitem(tsrc, tuple(slice(0, k) for k in src_is._data.shape))
    return scatter_add(ts * self_is, dim, index, tsrc * src_is) / n


def _prod_jvp(ctx, ts, tsrc, dim, index, include_self):
    """prod: each tangent times the product of the other contributors (the VJP's factors)."""
    self_t, src_t = ctx.inputs
    result = ctx.result
    ones = _const(np.ones(result._data.shape, result._data.dtype))
    d_self, d_src = _reduce_grads(ctx, ones, self_t, src_t, result, dim, index, "prod",
                                  include_self, ts is not None, tsrc is not None, False)
    out = ts * d_self if ts is not None else _const(np.zeros(result._data.shape,
                                                             result._data.dtype))
    if tsrc is not None:
        if tsrc._data.shape != d_src._data.shape:    # src larger than index: its leading part
            from .shape import getitem
            tsrc = getitem(tsrc, tuple(slice(0, k) for k in d_src._data.shape))
        out = scatter_add(out, dim, index, tsrc * d_src)
    return out


def _scatter_reduce_jvp(ctx, ts, tsrc):
    dim, index, reduce, include_self = ctx._args
    if reduce in ("sum", "mean"):
        return linear(ctx, ts, tsrc)
    if reduce == "prod":
        return _prod_jvp(ctx, ts, tsrc, dim, index, include_self)
    return _minmax_jvp(ctx, ts, tsrc, dim, index, include_self, ctx.result)


SCATTER_REDUCE = Op("scatter_reduce", "ScatterReduceBackward0",
                    lambda x, s, dim, index, reduce, include_self: _scatter_core(
                        x, s, dim, index._data, reduce, include_self),
                    _scatter_reduce_vjp, inputs=("self", "src"),
                    args=("dim", "index", "reduce", "include_self"),
                    saves=("index", "self", "src", "result"), jvp=_scatter_reduce_jvp)


def _check_complex(x: np.ndarray, kernel: str) -> None:
    if x.dtype.kind == "c":
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_tname(x.dtype)}\'')


def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """``input`` with ``src`` reduced into it at ``index`` along ``dim`` (``reduce``: sum, prod,
    mean, amax or amin; ``include_self=False`` leaves ``input``'s values out where something is
    scattered).

    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 1.0])
    >>> x.scatter_reduce(0, ndgrad.tensor([0, 0]), ndgrad.tensor([3.0, 5.0]), "amax")
    tensor([5., 1.])
    """
    if _bmarked((input, index, src)):  # Note [Batched backward]
        r = _bcall(scatter_reduce, input, dim, index, src, reduce, include_self=include_self)
        if r is not NotImplemented:
            return r
    x, i = input._data, index._data
    d = wrap_dim(dim, x.ndim or 1)
    _check_index_dtype(index, "scatter")
    if reduce not in _SCATTER_REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    _check_same_dtype(x, src._data)
    if reduce in ("amax", "amin"):
        _check_complex(x, f"scatter_gather_tensor_cpu_reduce_{reduce}")
    if x.dtype.kind == "c" and is_grad_enabled() and (input.requires_grad or src.requires_grad):
        raise RuntimeError("scatter_reduce does not support automatic differentiation for "
                           "outputs with complex dtype.")
    _check_scatter("scatter_reduce", x, d, i, src._data)
    return apply(SCATTER_REDUCE, (input, src), (x, src._data), (d, index, reduce, include_self))


# ---------------------------------------------------------------------------- index_* ops
def _check_index_vector(index: Tensor, fn: str) -> None:
    i = index._data
    if i.dtype not in (np.dtype(np.int64), np.dtype(np.int32)):
        raise RuntimeError(f"{fn}(): Expected dtype int32/int64 for index but got: "
                           f"{_tname(i.dtype)}")
    if i.ndim > 1:
        raise IndexError(f"{fn}(): Index is supposed to be a vector, but got dim: {i.ndim} with "
                         f"type: {_tname(i.dtype)} and size: {list(i.shape)}")


def _check_source(fn: str, x: np.ndarray, d: int, i: np.ndarray, s: np.ndarray) -> None:
    """index_add/index_reduce: source's shape against self's and the number of indices."""
    if d >= max(s.ndim, 1):
        raise RuntimeError(f"{fn}(): Indexing dim {d} is out of bounds of the source tensor "
                           f"with dim {s.ndim}")
    if not s.ndim and i.size != 1:
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    n_src = s.shape[d] if s.ndim else 1
    if i.size != n_src:
        raise RuntimeError(f"{fn}(): Number of indices ({i.size}) should be equal to "
                           f"source.size(dim): ({n_src}), for dim: {d}")
    if x.ndim != s.ndim or any(k != d and a != b
                               for k, (a, b) in enumerate(zip(x.shape, s.shape))):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(x.shape)} source.shape "
                           f"= {list(s.shape)}")


def _index_add_fwd(x, s, dim, index, alpha, source_dim):
    a = s if alpha == 1 else s * np.asarray(alpha, s.dtype)
    return _scatter_core(x, a, dim, _spread(index._data, dim, s.shape), "add")


def _index_select_g(g: Tensor, dim: int, index: Tensor, shape: Optional[tuple] = None) -> Tensor:
    """``g.index_select(dim, index)``; with ``shape`` () ``g`` is (logically) 0-d."""
    from .shape import index_select, reshape
    if shape is not None and not shape:
        return reshape(index_select(reshape(g, (1,)), 0, index), ())
    return index_select(g, dim, index)


def _index_add_vjp(ctx, g):
    dim, _, alpha, _ = ctx._args
    (index,) = ctx.saved[:1]
    gs = g if ctx.needs_input_grad(0) else None
    gsrc = None
    if ctx.needs_input_grad(1):
        gsrc = _index_select_g(g, dim, index, ctx.input_shape(0))
        if len(ctx.input_shape(1)) == 0 and ctx.input_shape(0):
            gsrc = gsrc.reshape(())
        if alpha != 1:
            gsrc = gsrc * alpha
    return gs, gsrc


INDEX_ADD = Op("index_add", "IndexAddBackward0", _index_add_fwd, _index_add_vjp,
               inputs=("self", "source"), args=("dim", "index", "alpha", "source_dim"),
               saves=("index", "source"), save_if=((1,), (1,)), jvp=linear)


def _check_index_target(x: np.ndarray, d: int, i: np.ndarray, prefix: str = "") -> None:
    n = x.shape[d] if x.ndim else 1
    _check_bounds(i, n, d, prefix)


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *,
              alpha: Any = 1) -> Tensor:
    """``input`` with ``alpha * source`` added at slices ``index`` along ``dim``.

    >>> import ndgrad
    >>> ndgrad.zeros(3).index_add(0, ndgrad.tensor([2, 2]), ndgrad.tensor([1.0, 2.0]))
    tensor([0., 0., 3.])
    """
    if _bmarked((input, index, source)):  # Note [Batched backward]
        r = _bcall(index_add, input, dim, index, source, alpha=alpha)
        if r is not NotImplemented:
            return r
    x, i, s = input._data, index._data, source._data
    d = wrap_dim(dim, x.ndim or 1)
    _check_index_vector(index, "index_add_")
    if x.dtype != s.dtype:
        raise RuntimeError(f"index_add_(): self ({_tname(x.dtype)}) and source "
                           f"({_tname(s.dtype)}) must have the same scalar type")
    _check_source("index_add_", x, d, i, s)
    if x.ndim <= 1:
        n = x.shape[0] if x.ndim else 1
        if i.size and ((i < 0) | (i >= n)).any():
            raise IndexError("index out of range in self")
    elif x.size:     # (PyTorch checks no bounds when nothing is written)
        _check_index_target(x, d, i)
    a = _value_of(alpha, x.dtype)
    return apply(INDEX_ADD, (input, source), (x, s), (d, index, a, s.ndim))


def _index_fill_g(g: Tensor, dim: int, index: Tensor) -> Tensor:
    return apply(INDEX_FILL, (g,), (g._data,), (dim, index, 0))


def _index_copy_vjp(ctx, g):
    dim = ctx._args[0]
    index = ctx.saved[0]
    gs = _index_fill_g(g, dim, index) if ctx.needs_input_grad(0) else None
    gsrc = None
    if ctx.needs_input_grad(1):
        gsrc = _index_select_g(g, dim, index, ctx.input_shape(0))
        if len(ctx.input_shape(1)) == 0 and ctx.input_shape(0):
            gsrc = gsrc.reshape(())
    return gs, gsrc


INDEX_COPY = Op("index_copy", "IndexCopyBackward0",
                lambda x, s, dim, index, source_dim: _scatter_core(
                    x, s, dim, _spread(index._data, dim, s.shape), None),
                _index_copy_vjp, inputs=("self", "source"), args=("dim", "index", "source_dim"),
                saves=("index", "source"), save_if=(None, (1,)), jvp=linear)


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """``input`` with the slices of ``source`` copied to slices ``index`` along ``dim``.

    >>> import ndgrad
    >>> ndgrad.zeros(3).index_copy(0, ndgrad.tensor([2]), ndgrad.tensor([5.0]))
    tensor([0., 0., 5.])
    """
    if _bmarked((input, index, source)):  # Note [Batched backward]
        r = _bcall(index_copy, input, dim, index, source)
        if r is not NotImplemented:
            return r
    x, i, s = input._data, index._data, source._data
    d = wrap_dim(dim, x.ndim or 1)
    if i.ndim > 1:
        raise IndexError("index_copy_(): Index should have dimension 1 or 0 (got "
                         f"{i.ndim})")
    if i.dtype != np.int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got "
                           f"{_tname(i.dtype)}")
    if x.dtype != s.dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but "
                           f"got (self) {_tname(x.dtype)} and (source) {_tname(s.dtype)}")
    if s.ndim == 0 and i.size != 1:
        raise IndexError(f"index_copy_(): When source is scalar, index should have one element "
                         f"(got {i.size})")
    if x.ndim != s.ndim and x.ndim and s.ndim:
        raise IndexError(f"index_copy_(): When source and destination are not scalars, their "
                         f"dimensionality must match. Source dimensionality ({s.ndim}), "
                         f"destination dimensionality ({x.ndim})")
    k = next((k for k, (a, b) in enumerate(zip(x.shape, s.shape)) if k != d and a != b), None)
    if k is not None or x.ndim != s.ndim and max(x.ndim, s.ndim) > 1:
        raise RuntimeError(
            f"index_copy_(): Source/destination tensor must have same slice shapes. Destination "
            f"slice shape: {_slice_shape(x.shape, d)} at dimension {d} and source slice shape: "
            f"{_slice_shape(s.shape, d)} at dimension 0.")
    n_src = s.shape[d] if s.ndim else 1
    if i.size != n_src:
        raise IndexError(f"index_copy_(): Number of indices ({i.size}) should be equal to "
                         f"source.size(dim) ({n_src})")
    try:
        _check_index_target(x, d, i, "index_copy_(): ")
    except RuntimeError as e:
        raise IndexError(str(e)) from None
    return apply(INDEX_COPY, (input, source), (x, s), (d, index, s.ndim))


def _slice_shape(shape: tuple, d: int) -> str:
    rest = [n for k, n in enumerate(shape) if k != d]
    return ", ".join(str(n) for n in rest) if rest else "1"


def _index_fill_fwd(x, dim, index, value):
    out = x.copy()
    i = index._data.reshape(-1)
    if i.size and out.size:
        o = _as1d(out)
        np.moveaxis(o, dim, 0)[i] = value
    return out


def _index_fill_t_fwd(x, v, dim, index):
    return _index_fill_fwd(x, dim, index, v)


def _index_fill_t_vjp(ctx, g):
    dim, index = ctx._args
    gs = _index_fill_g(g, dim, index) if ctx.needs_input_grad(0) else None
    gv = None
    if ctx.needs_input_grad(1):      # each filled element once, whatever the duplicates
        mask = _index_fill_fwd(np.zeros(ctx.input_shape(0), np.bool_), dim, index, True)
        gv = (g * _const(mask.astype(g._data.dtype))).sum()
    return gs, gv


INDEX_FILL = Op("index_fill", "IndexFillBackward0", _index_fill_fwd,
                lambda ctx, g: _index_fill_g(g, ctx._args[0], ctx._args[1]),
                args=("dim", "index", "value"), saves=("index",),
                jvp=lambda ctx, t: _index_fill_g(t, ctx._args[0], ctx._args[1]))
INDEX_FILL_T = Op("index_fill", "IndexFillBackward1", _index_fill_t_fwd, _index_fill_t_vjp,
                  inputs=("self", "value"), args=("dim", "index"), saves=("index",),
                  jvp=linear)


def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """``input`` with the slices ``index`` along ``dim`` set to ``value`` (a number or a 0-d
    tensor).

    >>> import ndgrad
    >>> ndgrad.zeros(2, 2).index_fill(1, ndgrad.tensor([0]), 7.0)
    tensor([[7., 0.],
            [7., 0.]])
    """
    if _bmarked((input, index, value)):  # Note [Batched backward]
        r = _bcall(index_fill, input, dim, index, value)
        if r is not NotImplemented:
            return r
    x, i = input._data, index._data
    d = wrap_dim(dim, x.ndim or 1)
    if i.dtype != np.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if i.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    n = x.shape[d] if x.ndim else 1
    if i.size and x.size:
        bad = (i >= n) | (i < -n)
        if bad.any():
            raise IndexError(f"index {int(i[bad].flat[0])} is out of bounds for dimension {d} "
                             f"with size {n}")
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value._data.ndim} dimension(s).")
        _value_of(value, x.dtype)
        v = _dtype.cast(value._data, x.dtype, copy=False)
        return apply(INDEX_FILL_T, (input, value), (x, v), (d, index))
    return apply(INDEX_FILL, (input,), (x,), (d, index, _value_of(value, x.dtype)))


def _index_reduce_vjp(ctx, g):
    index, self_t, src_t, result = ctx.saved
    dim, _, reduce, include_self = ctx._args
    full = _spread_t(index, dim, src_t)
    return _reduce_grads(ctx, g, self_t, src_t, result, dim, full, reduce, include_self,
                         ctx.needs_input_grad(0), ctx.needs_input_grad(1))


def _index_reduce_jvp(ctx, ts, tsrc):
    dim, index, reduce, include_self = ctx._args
    if reduce == "mean":
        return linear(ctx, ts, tsrc)
    full = _spread_t(index, dim, ctx.inputs[1])
    if reduce == "prod":
        return _prod_jvp(ctx, ts, tsrc, dim, full, include_self)
    return _minmax_jvp(ctx, ts, tsrc, dim, full, include_self, ctx.result)


INDEX_REDUCE = Op("index_reduce", "IndexReduceBackward0",
                  lambda x, s, dim, index, reduce, include_self: _scatter_core(
                      x, s, dim, _spread(index._data, dim, s.shape), reduce, include_self),
                  _index_reduce_vjp, inputs=("self", "source"),
                  args=("dim", "index", "reduce", "include_self"),
                  saves=("index", "self", "source", "result"), jvp=_index_reduce_jvp)


def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True) -> Tensor:
    """``input`` with the slices of ``source`` reduced into slices ``index`` along ``dim``
    (``reduce``: prod, mean, amax or amin).

    >>> import ndgrad
    >>> ndgrad.ones(3).index_reduce(0, ndgrad.tensor([0, 0]), ndgrad.tensor([2.0, 3.0]), "prod")
    tensor([6., 1., 1.])
    """
    if _bmarked((input, index, source)):  # Note [Batched backward]
        r = _bcall(index_reduce, input, dim, index, source, reduce, include_self=include_self)
        if r is not NotImplemented:
            return r
    x, i, s = input._data, index._data, source._data
    d = wrap_dim(dim, x.ndim or 1)
    if reduce not in _INDEX_REDUCES:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    _check_index_vector(index, "index_reduce_")
    warn_user_once("index_reduce() is in beta and the API may change at any time.")
    if x.dtype != s.dtype:
        raise RuntimeError(f"index_reduce_(): self ({_tname(x.dtype)}) and source "
                           f"({_tname(s.dtype)}) must have the same scalar type")
    _check_source("index_reduce_", x, d, i, s)
    _check_complex(x, "index_func_")
    n = x.shape[d] if x.ndim else 1
    if i.size and ((i >= n) | (i < 0)).any():
        raise IndexError("index out of range in self")
    return apply(INDEX_REDUCE, (input, source), (x, s), (d, index, reduce, include_self))


# ---------------------------------------------------------------------------- masked ops
def _check_mask(mask: Any, fn: str, words: str) -> np.ndarray:
    _check_tensor(mask, fn, "mask", 1)
    m = mask._data
    if m.dtype != np.bool_:
        raise RuntimeError(words)
    return m


def _bshape(a: tuple, b: tuple) -> tuple:
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        raise broadcast_error(a, b) from None


def _masked_select_fwd(x, mask):
    m = mask._data
    shape = np.broadcast_shapes(x.shape, m.shape)
    return np.broadcast_to(x, shape)[np.broadcast_to(m, shape)]


def _masked_select_vjp(ctx, g):
    mask, _ = ctx.saved
    shape = np.broadcast_shapes(ctx.input_shape(0), mask._data.shape)
    zeros = _wrap(np.zeros(shape, g._data.dtype))
    return masked_scatter(zeros, mask, g)


MASKED_SELECT = Op("masked_select", "MaskedSelectBackward0", _masked_select_fwd,
                   _masked_select_vjp, args=("mask",), saves=("mask", "self"), jvp=linear)


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements of ``input`` where ``mask`` (broadcast together) is True, as a 1-d tensor.

    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, -2.0, 3.0])
    >>> x.masked_select(x > 0)
    tensor([1., 3.])
    """
    if _bmarked((input, mask)):  # Note [Batched backward]
        r = _bcall(masked_select, input, mask)
        if r is not NotImplemented:
            return r
    m = _check_mask(mask, "masked_select", "masked_select: expected BoolTensor for mask")
    _bshape(m.shape, input._data.shape)
    return apply(MASKED_SELECT, (input,), (input._data,), (mask,))


def _masked_scatter_fwd(x, s, mask, source_sizes):
    m = mask._data
    shape = np.broadcast_shapes(x.shape, m.shape)
    out = np.array(np.broadcast_to(x, shape))
    mb = np.broadcast_to(m, shape)
    k = int(mb.sum())
    out[mb] = s.reshape(-1)[:k]
    return out


def _masked_scatter_vjp(ctx, g):
    (mask,) = ctx.saved
    src_shape = ctx._args[1]
    from . import pointwise as pw
    gs = pw.masked_fill(g, mask, 0) if ctx.needs_input_grad(0) else None
    gsrc = None
    if ctx.needs_input_grad(1):
        from .shape import cat
        sel = masked_select(g, mask)
        n = int(np.prod(src_shape))
        m = mask._data
        k = int(np.broadcast_to(m, np.broadcast_shapes(ctx.input_shape(0), m.shape)).sum())
        if n > k:
            sel = cat([sel, _wrap(np.zeros(n - k, g._data.dtype))])
        gsrc = sel.reshape(src_shape)
    return gs, gsrc


def _masked_scatter_jvp(ctx, ts, tsrc):
    x, s = ctx.inputs
    mask = ctx._args[0]
    dt = ctx.result._data.dtype
    ts = ts if ts is not None else _const(np.zeros(x._data.shape, dt))
    tsrc = tsrc if tsrc is not None else _const(np.zeros(s._data.shape, dt))
    return masked_scatter(ts, mask, tsrc)


MASKED_SCATTER = Op("masked_scatter", "MaskedScatterBackward0", _masked_scatter_fwd,
                    _masked_scatter_vjp, inputs=("self", "source"),
                    args=("mask", "source_sym_sizes"), saves=("mask",),
                    jvp=_masked_scatter_jvp)


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """``input`` (broadcast with ``mask``) with the leading elements of ``source`` written, in
    order, where ``mask`` is True.

    >>> import ndgrad
    >>> x = ndgrad.zeros(3)
    >>> x.masked_scatter(ndgrad.tensor([True, False, True]), ndgrad.tensor([1.0, 2.0]))
    tensor([1., 0., 2.])
    """
    if _bmarked((input, mask, source)):  # Note [Batched backward]
        r = _bcall(masked_scatter, input, mask, source)
        if r is not NotImplemented:
            return r
    m = _check_mask(mask, "masked_scatter", "masked_scatter_ only supports boolean masks, but "
                    "got mask with dtype " + (_tname(mask._data.dtype) if isinstance(mask, Tensor)
                                              else ""))
    x, s = input._data, source._data
    if x.dtype != s.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{_tname(x.dtype)} and {_tname(s.dtype)}")
    shape = _bshape(m.shape, x.shape)
    if int(np.broadcast_to(m, shape).sum()) > s.size:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    return apply(MASKED_SCATTER, (input, source), (x, s), (mask, tuple(s.shape)))


# ---------------------------------------------------------------------------- take / put
def _flat_index(i: np.ndarray, n: int) -> np.ndarray:
    return np.where(i < 0, i + n, i) if i.size and (i < 0).any() else i


def _check_flat_bounds(i: np.ndarray, n: int) -> None:
    if i.size:
        bad = (i >= n) | (i < -n)
        if bad.any():
            raise IndexError(f"out of range: tried to access index {int(i[bad].flat[0])} on a "
                             f"tensor of {n} elements.")


def _take_fwd(x, index):
    i = index._data
    return x.reshape(-1)[_flat_index(i, x.size).reshape(-1)].reshape(i.shape)


def _take_vjp(ctx, g):
    index, self_t = ctx.saved
    zeros = _wrap(np.zeros(ctx.input_shape(0), g._data.dtype))
    return put(zeros, index, g, accumulate=True)


TAKE = Op("take", "TakeBackward0", _take_fwd, _take_vjp, args=("index",),
          saves=("index", "self"), jvp=linear)


def take(input: Tensor, index: Tensor) -> Tensor:
    """The elements of ``input`` (read as 1-d) at ``index``; the result has ``index``'s shape.

    >>> import ndgrad
    >>> ndgrad.tensor([[1, 2], [3, 4]]).take(ndgrad.tensor([0, 3]))
    tensor([1, 4])
    """
    if _bmarked((input, index)):  # Note [Batched backward]
        r = _bcall(take, input, index)
        if r is not NotImplemented:
            return r
    x, i = input._data, index._data
    if i.dtype != np.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {_tname(i.dtype)}")
    if x.size == 0 and i.size:
        raise IndexError("take(): tried to take from an empty tensor")
    _check_flat_bounds(i, x.size)
    return apply(TAKE, (input,), (x,), (index,))


def _put_fwd(x, s, index, accumulate):
    out = x.copy()
    i = _flat_index(index._data, x.size).reshape(-1)
    if i.size:
        flat = out.reshape(-1)
        if accumulate:
            work = flat.astype(np.float32) if flat.dtype in _LOW else flat
            np.add.at(work, i, s.reshape(-1).astype(work.dtype, copy=False))
            if work is not flat:
                flat[...] = work.astype(flat.dtype)
        else:
            flat[i] = s.reshape(-1)
    return out


def _put_vjp(ctx, g):
    index = ctx.saved[0]
    accumulate = ctx._args[1]
    gs = None
    if ctx.needs_input_grad(0):
        gs = g if accumulate else put(g, index, _wrap(np.zeros(ctx.input_shape(1),
                                                               g._data.dtype)))
    gsrc = take(g, index).reshape(ctx.input_shape(1)) if ctx.needs_input_grad(1) else None
    return gs, gsrc


PUT = Op("put", "PutBackward0", _put_fwd, _put_vjp, inputs=("self", "source"),
         args=("index", "accumulate"), saves=("index", "source"), save_if=(None, (1,)),
         jvp=linear)


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """``input`` (read as 1-d) with ``source`` written (or added, ``accumulate=True``) at
    ``index``.

    >>> import ndgrad
    >>> ndgrad.zeros(2, 2).put(ndgrad.tensor([3]), ndgrad.tensor([9.0]))
    tensor([[0., 0.],
            [0., 9.]])
    """
    if _bmarked((input, index, source)):  # Note [Batched backward]
        r = _bcall(put, input, index, source, accumulate)
        if r is not NotImplemented:
            return r
    x, i, s = input._data, index._data, source._data
    if i.dtype != np.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {_tname(i.dtype)}")
    if x.dtype != s.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {_tname(x.dtype)} and source.dtype = {_tname(s.dtype)}")
    if i.size != s.size:
        raise IndexError(f"put_(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {s.size}, index.numel() = {i.size}")
    if x.size == 0 and i.size:
        raise IndexError("put_(): Tried to put elements into an empty tensor")
    _check_flat_bounds(i, x.size)
    return apply(PUT, (input, source), (x, s), (index, bool(accumulate)))


def take_along_dim(input: Tensor, indices: Tensor, dim: Optional[int] = None) -> Tensor:
    """The values of ``input`` at ``indices`` along ``dim`` (broadcast against each other in
    the other dims); with ``dim=None``, of the flattened ``input``.

    >>> import ndgrad
    >>> ndgrad.tensor([[10, 30, 20]]).take_along_dim(ndgrad.tensor([[0, 2, 1]]), dim=1)
    tensor([[10, 20, 30]])
    """
    from .reduction import gather
    from .shape import expand, reshape
    i = indices._data
    if i.dtype != np.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{_tname(i.dtype)}")
    x = input._data
    if dim is None:
        return gather(reshape(input, (-1,)), 0, reshape(indices, (-1,)))
    if x.ndim != i.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {x.ndim} dimensions for input, and "
                           f"{i.ndim} dimensions for indices")
    if x.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = wrap_dim(dim, x.ndim)
    xs, js = list(x.shape), list(i.shape)
    if x.ndim:
        xs[d] = js[d] = 1
    b = list(_bshape(tuple(xs), tuple(js)))
    if x.ndim:
        xb = b.copy()
        xb[d] = x.shape[d]
        ib = b.copy()
        ib[d] = i.shape[d]
        if tuple(xb) != x.shape:
            input = expand(input, tuple(xb))
        if tuple(ib) != i.shape:
            indices = _wrap(np.broadcast_to(i, tuple(ib)))
        if i.size and (i < 0).any():      # one wrap of negative indices along dim, as PyTorch
            j = indices._data
            indices = _wrap(np.where(j < 0, j + x.shape[d], j))
    return gather(input, d, indices)


# ---------------------------------------------------------------------------- index_put
def index_put(input: Tensor, indices: Any, values: Tensor, accumulate: bool = False) -> Tensor:
    """PyTorch's ``index_put``: ``input[indices] = values`` (or ``+=`` with ``accumulate``)
    out of place; ``indices`` is a tuple of index tensors (None for a full slice).

    >>> import ndgrad
    >>> ndgrad.index_put(ndgrad.zeros(3), (ndgrad.tensor([1]),), ndgrad.tensor(5.0))
    tensor([0., 5., 0.])
    """
    from .shape import index_put_indices
    return index_put_indices(input, indices, values, accumulate)


# ---------------------------------------------------------------------------- queries
def nonzero(input: Tensor, *, as_tuple: bool = False) -> Any:
    """The indices of the nonzero elements: an ``(n, ndim)`` int64 tensor, or with
    ``as_tuple=True`` one 1-d tensor per dim.

    >>> import ndgrad
    >>> ndgrad.tensor([0, 3, 0, 4]).nonzero()
    tensor([[1],
            [3]])
    """
    _unsigned.check("nonzero", (input._data,))
    _dispatch.meta_refuse("nonzero", input)
    x = input._data
    if as_tuple:
        return tuple(_wrap(a.astype(np.int64)) for a in np.nonzero(_as1d(x)))
    return _wrap(np.argwhere(x).astype(np.int64))


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """``nonzero(input)`` cut or padded (with ``fill_value``) to exactly ``size`` rows.

    >>> import ndgrad
    >>> ndgrad.tensor([0, 3]).nonzero_static(size=2)
    tensor([[ 1],
            [-1]])
    """
    if size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    nz = np.argwhere(input._data).astype(np.int64)[:size]
    out = np.full((size, input._data.ndim), fill_value, np.int64)
    out[:nz.shape[0]] = nz
    return _wrap(out)


def argwhere(input: Tensor) -> Tensor:
    """The indices of the nonzero elements, an ``(n, ndim)`` int64 tensor.

    >>> import ndgrad
    >>> ndgrad.argwhere(ndgrad.tensor([1, 0, 1]))
    tensor([[0],
            [2]])
    """
    return nonzero(input)


def _values(v: Any, fn: str, arg: str) -> np.ndarray:
    if isinstance(v, Tensor):
        return v._data
    if is_scalar(v):
        return np.asarray(as_scalar(v))
    raise TypeError(f"{fn}(): argument '{arg}' must be Tensor or Number, not {type(v).__name__}")


def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False,
         invert: bool = False) -> Tensor:
    """Bool tensor of ``elements``' shape: True where the element is in ``test_elements``.

    >>> import ndgrad
    >>> ndgrad.isin(ndgrad.tensor([1, 2, 3]), ndgrad.tensor([2, 5]))
    tensor([False,  True, False])
    """
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() received an invalid combination of arguments - got "
                        f"({type(elements).__name__}, {type(test_elements).__name__})")
    e = _values(elements, "isin", "elements")
    t = _values(test_elements, "isin", "test_elements")
    if e.dtype.kind == "c" or t.dtype.kind == "c":
        c = e if e.dtype.kind == "c" else t
        raise RuntimeError(f"Unsupported input type encountered for isin(): {_tname(c.dtype)}")
    if e.dtype in _LOW or t.dtype in _LOW:
        e, t = e.astype(np.float32), t.astype(np.float32)
    r = np.isin(e, t, assume_unique=assume_unique, invert=invert)
    return _wrap(np.asarray(r, np.bool_).reshape(e.shape))


def _side(right: bool, side: Optional[str]) -> str:
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to "
                               "opposites, got side of left while right was True")
        return side
    return "right" if right else "left"


def _searchsorted_np(seq: np.ndarray, v: np.ndarray, side: str,
                     sorter: Optional[np.ndarray]) -> np.ndarray:
    if seq.dtype in _LOW:
        seq = seq.astype(np.float32)
    if v.dtype in _LOW:
        v = v.astype(np.float32)
    if seq.ndim <= 1:
        s = seq.reshape(-1)
        if sorter is not None:
            s = s[sorter.reshape(-1)]
        return np.searchsorted(s, v, side=side)  # type: ignore[call-overload]  # "left"/"right"
    lead = seq.shape[:-1]
    s2 = seq.reshape(int(np.prod(lead)), seq.shape[-1])
    if sorter is not None:
        s2 = np.take_along_axis(s2, sorter.reshape(s2.shape), axis=1)
    v2 = v.reshape(s2.shape[0], int(np.prod(v.shape[len(lead):])))
    out = np.empty(v2.shape, np.int64)
    for r in range(s2.shape[0]):
        out[r] = np.searchsorted(s2[r], v2[r], side=side)  # type: ignore[call-overload]
    return out.reshape(lead + v.shape[len(lead):])


def searchsorted(sorted_sequence: Tensor, input: Any, *, out_int32: bool = False,
                 right: bool = False, side: Optional[str] = None,
                 sorter: Optional[Tensor] = None) -> Tensor:
    """For each value of ``input``, the index where it would be inserted into the innermost
    dim of ``sorted_sequence`` to keep it sorted.

    >>> import ndgrad
    >>> ndgrad.searchsorted(ndgrad.tensor([1, 3, 5]), ndgrad.tensor([3, 6]))
    tensor([1, 3])
    """
    seq = sorted_sequence._data
    sd = _side(right, side)
    scalar = not isinstance(input, Tensor)
    v = _values(input, "searchsorted", "input")
    _unsigned.check("searchsorted", (seq, v))
    if seq.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive "
                           "dimension, but got 0 dimension")
    if seq.ndim > 1 and (scalar or seq.shape[:-1] != v.shape[:-1] or v.ndim != seq.ndim):
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
            "dimensions of boundaries tensor and input value tensor must match, but we got "
            f"boundaries tensor {list(seq.shape)} and input value tensor {list(v.shape)}")
    srt = None
    if sorter is not None:
        srt = sorter._data
        if srt.shape != seq.shape:
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same "
                               f"size, but got boundary tensor {list(seq.shape)}and got sorter "
                               f"tensor {list(srt.shape)}")
        if srt.dtype != np.int64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but "
                               f"got dtype {_tname(srt.dtype)}")
        n = seq.shape[-1]
        if srt.size and ((srt < 0) | (srt >= n)).any():
            raise RuntimeError("torch.searchsorted(): sorter index out of range")
    r = _searchsorted_np(seq, v, sd, srt)
    return _wrap(np.asarray(r, np.int32 if out_int32 else np.int64))


def bucketize(input: Any, boundaries: Tensor, *, out_int32: bool = False,
              right: bool = False) -> Tensor:
    """For each value of ``input``, the index of its bucket among the sorted 1-d
    ``boundaries`` (``right``: which side of a boundary value belongs to the bucket).

    >>> import ndgrad
    >>> ndgrad.bucketize(ndgrad.tensor([0.5, 2.0]), ndgrad.tensor([1.0, 2.0]))
    tensor([0, 1])
    """
    b = boundaries._data
    if b.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({b.ndim})")
    v = _values(input, "bucketize", "input")
    _unsigned.check("bucketize", (b, v))
    r = _searchsorted_np(b, v, "right" if right else "left", None)
    return _wrap(np.asarray(r, np.int32 if out_int32 else np.int64))


# ---------------------------------------------------------------------------- batching rules
def _dim_index_rule(spread: bool):
    """Rule for the ops whose arguments start ``(dim, index, ...)``: unbatched tensor inputs
    are expanded to the batch, a 0-d row becomes a row of one, ``dim`` moves past the batch dim
    and (``spread``) an index with self's rank is repeated over the batch."""
    from ._batching import _arr, _batch_expand
    from .shape import reshape

    def rule(c, args):
        zero_d = not c.ls[0]
        ts, arrs = [], []
        for t, a, b, ls in zip(c.ts, c.arrs, c.bd, c.ls):
            if not b:
                t = _batch_expand(t, c.B)
            if zero_d and not ls:
                t = reshape(t, (c.B, 1))
            ts.append(t)
            arrs.append(_arr(t, a))
        index = args[1]
        if spread:
            i1 = _as1d(index._data)
            index = _wrap(np.broadcast_to(i1, (c.B,) + i1.shape))
        out = apply(c.op, tuple(ts), tuple(arrs), (args[0] + 1, index) + tuple(args[2:]))
        if zero_d:
            out = reshape(out, (c.B,))
        return out
    return rule


def _index_fill_t_rule(c, args):
    """index_fill with a batched 0-d value: ``where`` over the filled slices."""
    from ._batching import _batch_expand
    from .pointwise import where
    from .shape import reshape
    dim, index = args
    x, v = [t if b else _batch_expand(t, c.B) for t, b in zip(c.ts, c.bd)]
    shape = tuple(c.ls[0])
    mask = _index_fill_fwd(np.zeros(shape, np.bool_), wrap_dim(dim, len(shape) or 1), index,
                           True)
    v = reshape(v, (c.B,) + (1,) * len(shape))
    return where(_const(mask), v.to(x.dtype) if v.dtype != x.dtype else v, x)


def _masked_select_rule(c, args):
    from ._batching import _arr
    from .shape import expand, reshape
    mask = args[0]
    shape = np.broadcast_shapes(c.ls[0], mask._data.shape)
    t = expand(reshape(c.ts[0], (c.B,) + (1,) * (len(shape) - len(c.ls[0])) + tuple(c.ls[0])),
               (c.B,) + tuple(shape))
    m = _wrap(np.broadcast_to(mask._data, (c.B,) + tuple(shape)))
    out = apply(c.op, (t,), (_arr(t, c.arrs[0]),), (m,))
    return reshape(out, (c.B, -1))


def _masked_scatter_rule(c, args):
    from ._batching import _arr, _batch_expand
    from .shape import expand, narrow, reshape
    mask = args[0]
    shape = tuple(np.broadcast_shapes(c.ls[0], mask._data.shape))
    x, s = [t if b else _batch_expand(t, c.B) for t, b in zip(c.ts, c.bd)]
    x = expand(reshape(x, (c.B,) + (1,) * (len(shape) - len(c.ls[0])) + tuple(c.ls[0])),
               (c.B,) + shape)
    k = int(np.broadcast_to(mask._data, shape).sum())
    s = reshape(narrow(reshape(s, (c.B, -1)), 1, 0, k), (-1,))
    m = _wrap(np.broadcast_to(mask._data, (c.B,) + shape))
    return apply(c.op, (x, s), (_arr(x, c.arrs[0]), _arr(s, c.arrs[1])), (m, (c.B * k,)))


def _take_rule(c, args):
    from .shape import index_select, reshape
    index = args[0]
    n = int(np.prod(c.ls[0]))
    i = _flat_index(index._data, n)
    flat = reshape(c.ts[0], (c.B, n))
    r = index_select(flat, 1, _wrap(i.reshape(-1)))
    return reshape(r, (c.B,) + index._data.shape)


def _put_rule(c, args):
    from ._batching import _arr, _batch_expand
    from .shape import reshape
    index, accumulate = args
    x, s = [t if b else _batch_expand(t, c.B) for t, b in zip(c.ts, c.bd)]
    n = int(np.prod(c.ls[0]))
    i = _flat_index(index._data, n).reshape(-1)
    ib = (np.arange(c.B, dtype=np.int64)[:, None] * n + i[None, :]).reshape(-1)
    xf = reshape(x, (c.B * n,))
    sf = reshape(s, (-1,))
    out = apply(c.op, (xf, sf), (_arr(xf, c.arrs[0]), _arr(sf, c.arrs[1])),
                (_wrap(ib), accumulate))
    return reshape(out, (c.B,) + tuple(c.ls[0]))


def _zero_d_rows(orig):
    """Wrap the batching rule of gather, index_select and their backwards (ops/shape.py,
    ops/reduction.py) for 0-d logical operands or indices: rows of elements along dim 1
    (their rules shift the dim past the batch dim, which a 0-d row does not have)."""
    from .shape import reshape

    def rule(c, args):
        index = args[1]
        i = index._data if isinstance(index, Tensor) else index
        name = c.op.name
        if name in ("index_select", "_index_add_zeros"):
            zero = not c.ls[0]
        elif name == "gather":
            zero = not c.ls[0] or i.ndim == 0
        else:                       # the scatters into zeros of shape args[2]
            zero = not tuple(args[2]) or i.ndim == 0
        if not zero:
            return orig(c, args)
        t = reshape(c.ts[0], (c.B, -1))
        a = t._data if t._data.dtype == c.arrs[0].dtype else t._data.astype(c.arrs[0].dtype)
        if name == "index_select":
            new, out_shape = (1, index), (c.B,)
        elif name == "_index_add_zeros":
            new, out_shape = (1, index, (c.B, 1)), (c.B,)
        else:
            i1 = i.reshape(-1)
            ib = np.broadcast_to(i1, (c.B,) + i1.shape)
            idx = _wrap(ib) if isinstance(index, Tensor) else ib
            if name == "gather":
                new, out_shape = (1, idx), (c.B,) + i.shape
            else:
                oshape = tuple(args[2])
                new, out_shape = (1, idx, (c.B,) + (oshape or (1,))), (c.B,) + oshape
        return reshape(apply(c.op, (t,), (a,), new), out_shape)
    rule._zero_d = True
    return rule


def _saved_constants() -> None:
    """Saved values PyTorch shows that the ops of shape.py/reduction.py take as fixed: the
    ``accumulate`` flag of index_put's two ops and gather's ``sparse_grad``."""
    from . import reduction as _red
    from . import shape as _shape
    _shape.INDEX_PUT.node_cls._saved_accumulate = False
    _shape.INDEX_PUT_ACC.node_cls._saved_accumulate = True
    _red.GATHER.node_cls._saved_sparse_grad = False


def _install_rules() -> None:
    from . import reduction as _red
    from . import shape as _shape
    from ._batching import RULES
    for op in (_shape.INDEX_SELECT, _shape.INDEX_ADD_ZEROS, _red.GATHER, _red.SCATTER_ZEROS,
               _red.SCATTER_ADD_ZEROS):
        if op in RULES and not getattr(RULES[op], "_zero_d", False):
            RULES[op] = _zero_d_rows(RULES[op])
    for op in (SCATTER, SCATTER_VALUE, SCATTER_ADD, SCATTER_REDUCE, SCATTER_LEGACY,
               SCATTER_LEGACY_VALUE):
        RULES[op] = _dim_index_rule(True)
    for op in (INDEX_ADD, INDEX_COPY, INDEX_FILL, INDEX_REDUCE):
        RULES[op] = _dim_index_rule(False)
    RULES[INDEX_FILL_T] = _index_fill_t_rule
    RULES[MASKED_SELECT] = _masked_select_rule
    RULES[MASKED_SCATTER] = _masked_scatter_rule
    RULES[TAKE] = _take_rule
    RULES[NO_DOUBLE_BACKWARD] = lambda c, args: apply(c.op, tuple(c.ts), tuple(c.arrs), args)
    RULES[PUT] = _put_rule


_install_rules()
_saved_constants()
