"""Statistics: var_mean, std_mean, aminmax, nansum, nanmean, count_nonzero, diff, trace, cov,
corrcoef, trapezoid (trapz), cumulative_trapezoid, renorm and dist.

Ops PyTorch records as nodes of their own (``VarMeanBackward0``, ``AminmaxBackward0``,
``NansumBackward0``, ``TraceBackward0``, ``RenormBackward0``, ``DistBackward0``) are ``Op``
entries; the others are composed from ndgrad ops as PyTorch composes them, so their graphs hold
the same nodes (``diff`` ends in ``SubBackward0``, ``cov`` in ``SqueezeBackward0``).

Example:
    >>> import ndgrad
    >>> x = ndgrad.tensor([[1.0, 2.0], [3.0, 5.0]], requires_grad=True)
    >>> var, mean = ndgrad.var_mean(x, 1)
    >>> var
    tensor([0.5000, 2.0000], grad_fn=<VarMeanBackward0>)
"""

from __future__ import annotations

import warnings
from typing import Any, Optional

import numpy as np

from .. import _dtype, _unsigned
from .. import return_types as _rt
from ..tensor import Tensor, _wrap
from ._batching import call as _bcall
from . import _autocast
from ._dispatch import Op, apply
from ._jvp import zero
from .pointwise import _check_bool_sub, apply_nondiff
from ._util import broadcast_error, category, dims_tuple, promote_pair, wrap_dim
from . import reduction as _red
from .reduction import _centered, _check_0d_dims, _check_autograd_dtype, _reduce_dtype, \
    _mean_fwd, _over_std, _std_fwd, _unsqueezed, _var_fwd, _var_scale, _var_std

__all__ = ["var_mean", "std_mean", "aminmax", "nansum", "nanmean", "count_nonzero", "diff",
           "trace", "cov", "corrcoef", "trapezoid", "trapz", "cumulative_trapezoid", "renorm",
           "dist"]

_INT = _dtype._INT


def _tname(x: np.ndarray) -> str:
    return _dtype._FROM_NP[x.dtype]._torch_name


def _all_or(dim: Any, ndim: int) -> tuple:
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    return dims_tuple(dim, ndim) if ndim else _check_0d_dims(dim)


# ---------------------------------------------------------------------------- var_mean / std_mean
def _var_mean_fwd(x, dims, correction, keepdim):
    return _var_fwd(x, dims, correction, keepdim), _mean_fwd(x, dims, keepdim, None)


def _std_mean_fwd(x, dims, correction, keepdim):
    # float16/bfloat16: both in float32, rounded once (Note [Low-precision accumulation])
    return _std_fwd(x, dims, correction, keepdim), _mean_fwd(x, dims, keepdim, None)


def _var_mean_vjp(ctx, g_var, g_mean):
    x = ctx.saved[0]
    dims, correction, keepdim = ctx._args
    shape = ctx.input_shape(0)
    s = _var_scale(shape, dims, correction)
    n = 1
    for d in dims:
        n *= shape[d]
    gv = _unsqueezed(g_var, dims, keepdim)
    if ctx._op is STD_MEAN:
        part = _over_std(gv * s, _unsqueezed(ctx.saved[1], dims, keepdim)) * _centered(x, dims)
    else:
        part = gv * _centered(x, dims) * (2 * s)
    return part + _unsqueezed(g_mean, dims, keepdim).expand(shape) / max(n, 1)


def _var_mean_jvp(ctx, t):
    x = ctx.inputs[0]
    dims, correction, keepdim = ctx._args
    s = _var_scale(x.shape, dims, correction)
    w = t * _centered(x, dims)
    if x._data.dtype.kind == "c":
        w = w.real_part() if hasattr(w, "real_part") else w
    w = w.sum(dims, keepdim) if dims else w
    tm = t.mean(dims, keepdim) if dims else t
    if ctx._op is STD_MEAN:
        return _over_std(w * s, ctx.result[0]), tm
    return w * (2 * s), tm


VAR_MEAN = Op("var_mean", "VarMeanBackward0", _var_mean_fwd, _var_mean_vjp, saves=("self",),
              args=("dim", "correction", "keepdim"), jvp=_var_mean_jvp, num_outputs=2)
STD_MEAN = Op("std_mean", "StdMeanBackward0", _std_mean_fwd, _var_mean_vjp,
              saves=("self", "result"), args=("dim", "correction", "keepdim"),
              jvp=_var_mean_jvp, num_outputs=2)
STD_MEAN.saved_names = ("self", "result0")    # PyTorch's name for the saved first output


def _stat_mean(op: Op, name: str, input: Tensor, dim: Any, unbiased: Any, keepdim: bool,
               correction: Any) -> tuple:
    if category(input._data) <= _INT:
        raise RuntimeError(f"{name} only support floating point and complex dtypes")
    return tuple(_var_std(op, input, dim, unbiased, keepdim, correction))


def var_mean(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
             correction: Any = None) -> tuple:
    """``(var, mean)`` over ``dim`` in one op (``correction`` as for ``var``, default 1).

    >>> import ndgrad
    >>> ndgrad.var_mean(ndgrad.tensor([1.0, 3.0]))
    (tensor(2.), tensor(2.))
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(var_mean, input, dim, unbiased, keepdim, correction=correction)
        if r is not NotImplemented:
            return r
    return _stat_mean(VAR_MEAN, "var_mean", input, dim, unbiased, keepdim, correction)


def std_mean(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
             correction: Any = None) -> tuple:
    """``(std, mean)`` over ``dim`` in one op (``correction`` as for ``std``, default 1).

    >>> import ndgrad
    >>> ndgrad.std_mean(ndgrad.tensor([1.0, 3.0]), correction=0)
    (tensor(1.), tensor(2.))
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(std_mean, input, dim, unbiased, keepdim, correction=correction)
        if r is not NotImplemented:
            return r
    return _stat_mean(STD_MEAN, "std_mean", input, dim, unbiased, keepdim, correction)


# ---------------------------------------------------------------------------- aminmax
def _aminmax_fwd(x, dims, keepdim):
    ax = dims if x.ndim else None
    return np.min(x, axis=ax, keepdims=keepdim), np.max(x, axis=ax, keepdims=keepdim)


def _share(x: Tensor, r: Tensor, dims: tuple, keepdim: bool) -> Tensor:
    """The mask of the elements equal to the reduced ``r``, divided by their count."""
    r = _unsqueezed(r, dims, keepdim)
    mask = x == r
    return mask / mask.sum(dims, keepdim=True) if dims else mask.to(x.dtype)


def _aminmax_vjp(ctx, g_min, g_max):
    x = ctx.saved[0]     # the extrema are recomputed from it (as detached constants)
    dims, keepdim = ctx._args
    if not dims:
        return g_min + g_max
    rmin = x.amin(dims, keepdim).detach()
    rmax = x.amax(dims, keepdim).detach()
    return (_unsqueezed(g_min, dims, keepdim) * _share(x, rmin, dims, keepdim)
            + _unsqueezed(g_max, dims, keepdim) * _share(x, rmax, dims, keepdim))


def _aminmax_jvp(ctx, t):
    x = ctx.inputs[0]
    rmin, rmax = ctx.result
    dims, keepdim = ctx._args
    if not dims:
        return t, t
    return ((t * _share(x, rmin.detach(), dims, keepdim)).sum(dims, keepdim),
            (t * _share(x, rmax.detach(), dims, keepdim)).sum(dims, keepdim))


AMINMAX = Op("aminmax", "AminmaxBackward0", _aminmax_fwd, _aminmax_vjp, saves=("self",),
             args=("dim", "keepdim"), jvp=_aminmax_jvp, num_outputs=2)
# PyTorch also saves both outputs (max, then min); the dispatcher saves only the first output of
# a multi-output op, so ``aminmax`` appends them to the node (``_saved_max``/``_saved_min``).
AMINMAX.saved_names = ("self", "max", "min")


def aminmax(input: Tensor, *, dim: Optional[int] = None, keepdim: bool = False) -> Any:
    """``(min, max)`` of all elements or along ``dim``; tied extrema share the gradient.

    >>> import ndgrad
    >>> ndgrad.aminmax(ndgrad.tensor([2.0, -1.0, 5.0]))
    ndgrad.return_types.aminmax(
    min=tensor(-1.),
    max=tensor(5.))
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(aminmax, input, dim=dim, keepdim=keepdim)
        if r is not NotImplemented:
            return r
    x = input._data
    if x.dtype.kind == "c":
        raise NotImplementedError(f"\"aminmax_cpu\" not implemented for '{_tname(x)}'")
    if dim is None:
        if x.size == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as "
                               "the operation has no identity.")
        dims = tuple(range(x.ndim))
    else:
        d = wrap_dim(int(dim), x.ndim or 1)
        if x.ndim and x.shape[d] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
        dims = (d,) if x.ndim else ()
    mn, mx = apply(AMINMAX, (input,), (x,), (dims, bool(keepdim)))
    node = mn._grad_fn
    if node is not None and getattr(type(node), "_op", None) is AMINMAX and \
            len(node._saved) == 1:
        from ..autograd.saved import SavedTensor
        node._saved = node._saved + (SavedTensor(mx, True, 1), SavedTensor(mn, True, 0))
    return _rt.aminmax(mn, mx)


# ---------------------------------------------------------------------------- nansum / nanmean
def _nansum_fwd(x, dims, keepdim, dt):
    if x.dtype.kind in "fV" or x.dtype == _dtype.bfloat16.np:
        x = np.where(np.isnan(x), np.zeros((), x.dtype), x)
    if x.dtype in _dtype.HALF_NP and (dt is None or dt == x.dtype):
        # Note [Low-precision accumulation] (ops/reduction.py)
        return np.sum(x, axis=dims, keepdims=keepdim, dtype=np.float32).astype(x.dtype)
    return np.sum(x, axis=dims, keepdims=keepdim, dtype=dt)


def _nansum_vjp(ctx, g):
    (x,) = ctx.saved
    dims, keepdim = ctx._args[0], ctx._args[1]
    g = _unsqueezed(g, dims, keepdim).expand(ctx.input_shape(0))
    return g.masked_fill(x.isnan(), 0)


def _nansum_jvp(ctx, t):
    x = ctx.inputs[0]
    dims, keepdim = ctx._args[0], ctx._args[1]
    t = t.masked_fill(x.isnan(), 0)
    return t.sum(dims, keepdim) if dims else t


NANSUM = Op("nansum", "NansumBackward0", _nansum_fwd, _nansum_vjp, saves=("self",),
            args=("dim", "keepdim", "dtype"), jvp=_nansum_jvp)


def nansum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None
           ) -> Tensor:
    """Sum treating NaN as zero.

    >>> import ndgrad
    >>> ndgrad.tensor([1.0, float("nan"), 2.0]).nansum()
    tensor(3.)
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(nansum, input, dim, keepdim, dtype=dtype)
        if r is not NotImplemented:
            return r
    x = input._data
    if x.dtype.kind == "c" or (dtype is not None and dtype.is_complex):
        raise RuntimeError("nansum on CPU does not support complex inputs")
    if dtype is not None:
        _unsigned.check_dtype("sum_cpu", dtype)
    dt = _reduce_dtype(x, dtype)
    dims = _all_or(dim, x.ndim)
    _check_autograd_dtype(input, dt)
    return apply(NANSUM, (input,), (x,), (dims, bool(keepdim), dt))


def nanmean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None
            ) -> Tensor:
    """Mean of the non-NaN elements (``nansum / count``).

    >>> import ndgrad
    >>> ndgrad.tensor([1.0, float("nan"), 2.0]).nanmean()
    tensor(1.5000)
    """
    x = input._data
    if category(x) <= _INT and dtype is None:
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype "
                           f"but got {_tname(x)}")
    from .pointwise import logical_not
    count = logical_not(input.isnan()).sum(dim, keepdim)
    return nansum(input, dim, keepdim, dtype=dtype) / count


def count_nonzero(input: Tensor, dim: Any = None) -> Tensor:
    """Number of nonzero elements (over ``dim``), int64.

    >>> import ndgrad
    >>> ndgrad.tensor([[0, 1], [2, 3]]).count_nonzero(0)
    tensor([1, 2])
    """
    x = input._data
    dims = _all_or(dim, x.ndim)
    return apply_nondiff(COUNT_NONZERO, (input,), (x,), (dims,))


def _count_nonzero_fwd(x: np.ndarray, dims: tuple) -> np.ndarray:
    return np.asarray(np.sum(x != 0, axis=dims, dtype=np.int64))


# No VJP (int64): an op so that a traced graph computes it (Note [Non-differentiable ops in the
# table] in ops/pointwise.py).
COUNT_NONZERO = Op("count_nonzero", "CountNonzeroBackward0", _count_nonzero_fwd, args=("dim",),
                   jvp=zero)


# ---------------------------------------------------------------------------- diff
def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Optional[Tensor] = None,
         append: Optional[Tensor] = None) -> Tensor:
    """The ``n``-th forward difference along ``dim`` (after concatenating ``prepend`` and
    ``append``).

    >>> import ndgrad
    >>> ndgrad.tensor([1.0, 4.0, 9.0]).diff()
    tensor([3., 5.])
    """
    from .shape import cat
    x = input._data
    if x.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = wrap_dim(int(dim), x.ndim)
    parts = []
    for name, t in (("prepend", prepend), ("append", append)):
        if t is None:
            continue
        if t._data.ndim != x.ndim:
            raise RuntimeError("diff expects prepend or append to be the same dimension as "
                               "input")
        parts.append((name, t))
    if parts:
        pre = [t for nm, t in parts if nm == "prepend"]
        app = [t for nm, t in parts if nm == "append"]
        input = cat(pre + [input] + app, d)
    if n == 0:      # a copy (PyTorch's CopyBackwards)
        from .pointwise import COPY_LIKE
        return apply(COPY_LIKE, (input,), (input._data,), (input._data,))
    out = input
    for _ in range(n):
        size = out.shape[d]
        if size == 0:
            break
        hi, lo = out.narrow(d, 1, size - 1), out.narrow(d, 0, size - 1)
        out = hi.ne(lo) if out.dtype == _dtype.bool else hi - lo
    return out


# ---------------------------------------------------------------------------- trace
def _trace_fwd(x, self_sym_sizes):
    dt = np.int64 if x.dtype.kind in "biu" else None
    return np.asarray(np.trace(x, axis1=-2, axis2=-1, dtype=dt))


def _trace_vjp(ctx, g):
    n, m = ctx.input_shape(0)[-2:]
    eye = _wrap(np.eye(n, m, dtype=ctx.input_dtype(0)))
    return g.unsqueeze(-1).unsqueeze(-1) * eye


TRACE: Op = Op("trace", "TraceBackward0", _trace_fwd, _trace_vjp, args=("self_sym_sizes",),
           jvp=lambda ctx, t: apply(TRACE, (t,), (t._data,), ctx._args))


def trace(input: Tensor) -> Tensor:
    """Sum of the main diagonal of a matrix.

    >>> import ndgrad
    >>> ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]]).trace()
    tensor(5.)
    """
    if _autocast.active:  # Note [Autocast]
        input, = _autocast.fp32(input)
    if input._blevel:  # Note [Batched backward]
        r = _bcall(trace, input)
        if r is not NotImplemented:
            return r
    x = input._data
    if x.dtype.kind == "b":
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    if x.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {x.ndim}")
    return apply(TRACE, (input,), (x,), (x.shape,))


# ---------------------------------------------------------------------------- cov / corrcoef
def cov(input: Tensor, *, correction: int = 1, fweights: Optional[Tensor] = None,
        aweights: Optional[Tensor] = None) -> Tensor:
    """Covariance matrix of the variables in the rows of ``input`` (observations in columns).

    >>> import ndgrad
    >>> ndgrad.cov(ndgrad.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
    tensor([[ 1., -1.],
            [-1.,  1.]])
    """
    x = input._data
    if x.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {x.ndim} dimensions")
    if x.ndim < 2:
        input = input.reshape(1, -1)
    n_obs = input.shape[1]
    w = None
    if fweights is not None:
        f = fweights._data
        if f.ndim > 1:
            raise RuntimeError(f"cov(): expected fweights to have one or fewer dimensions but "
                               f"got fweights with {f.ndim} dimensions")
        if f.dtype.kind not in "iu":
            raise RuntimeError(f"cov(): expected fweights to have integral dtype but got "
                               f"fweights with {_tname(f)} dtype")
        if f.size != n_obs:
            raise RuntimeError(f"cov(): expected fweights to have the same numel as there are "
                               f"observations in the input but got {f.size} != {n_obs}")
        if f.size and f.min() < 0:
            raise RuntimeError("cov(): fweights cannot be negative")
        w = fweights
    if aweights is not None:
        a = aweights._data
        if a.ndim > 1:
            raise RuntimeError(f"cov(): expected aweights to have one or fewer dimensions but "
                               f"got aweights with {a.ndim} dimensions")
        if category(a) <= _INT:
            raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got "
                               f"aweights with {_tname(a)} dtype")
        if a.size != n_obs:
            raise RuntimeError(f"cov(): expected aweights to have the same numel as there are "
                               f"observations in the input but got {a.size} != {n_obs}")
        # checked with a (recorded) min(), as PyTorch does: its node saves aweights
        if a.size and float(_red.min(aweights)._data) < 0:
            raise RuntimeError("cov(): aweights cannot be negative")
        w = aweights if w is None else w * aweights
    if category(input._data) <= _INT:
        input = input.to(_dtype.get_default_dtype())
    # PyTorch divides by 0-d tensors: the weight sum (the number of observations, int64, when
    # unweighted) and the normalization factor derived from it.
    w_sum = w.sum() if w is not None else _wrap(np.array(n_obs, dtype=np.int64))
    avg = (input * w if w is not None else input).sum(1) / w_sum
    if w is None or correction == 0:
        norm = w_sum - correction if correction != 0 else w_sum
    elif aweights is None:
        norm = w_sum - correction
    else:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    if float(norm._data) <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
        norm = norm * 0
    xm = input - avg.unsqueeze(1)
    xw = xm if w is None else xm * w
    return (xm.mm(xw.t().conj()) / norm).squeeze()


def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of the rows of ``input`` (``cov`` normalized).

    >>> import ndgrad
    >>> ndgrad.corrcoef(ndgrad.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
    tensor([[ 1., -1.],
            [-1.,  1.]])
    """
    from .shape import diagonal
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = diagonal(c)
    if d.dtype.is_complex:
        d = d.real
    sd = d.sqrt()
    c = c / sd.unsqueeze(1)
    c = c / sd.unsqueeze(0)
    if c.dtype.is_complex:
        return c   # PyTorch clips real and imaginary parts; not modelled
    return c.clamp(-1, 1)


# ---------------------------------------------------------------------------- trapezoid
# PyTorch's C++ composites multiply and divide by a Scalar (``mul(Tensor, Scalar)``: one edge,
# MulBackward1/DivBackward1), not by a wrapped Python number (MulBackward0) as Python code does.
def _mul_s1_fwd(x, s):
    from .pointwise import _mul_s_fwd
    return _mul_s_fwd(x, s)


def _div_s1_fwd(x, s):
    from .pointwise import _div_s_fwd
    return _div_s_fwd(x, s)


MUL_SCALAR = Op("mul.Scalar", "MulBackward1", _mul_s1_fwd, lambda ctx, g: g * ctx.saved[0],
                args=("other",), saves=("other",), jvp=lambda ctx, t: t * ctx._args[0])
DIV_SCALAR = Op("div.Scalar", "DivBackward1", _div_s1_fwd, lambda ctx, g: g / ctx.saved[0],
                args=("other",), saves=("other",), jvp=lambda ctx, t: t / ctx._args[0])


def _scalar_op(op: Op, t: Tensor, s: Any) -> Tensor:
    x = t._data
    if x.dtype.kind in "fc" and isinstance(s, (int, float)) and not isinstance(s, bool) and \
            (x.dtype.kind == "c" or not isinstance(s, complex)):
        return apply(op, (t,), (x,), (s,))
    return t * s if op is MUL_SCALAR else t / s


def _trapz_dx(x: Tensor, y: Tensor, d: int, name: str = "trapezoid") -> Tensor:
    xd = x._data
    if xd.ndim == 1:
        if xd.shape[0] != y.shape[d]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        dx = diff(x)
        shape = [1] * y.ndim
        shape[d] = dx.shape[0]
        return dx.reshape(shape)
    return diff(x, dim=d)


def _scalar_dx(dx: Any) -> Any:
    if isinstance(dx, Tensor):
        return dx.item()
    return 1 if dx is None else dx


def trapezoid(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """Integral of ``y`` along ``dim`` by the trapezoidal rule, with sample points ``x`` or a
    constant spacing ``dx`` (default 1).

    >>> import ndgrad
    >>> ndgrad.trapezoid(ndgrad.tensor([1.0, 2.0, 3.0]))
    tensor(4.)
    """
    if isinstance(x, Tensor) and dx is not None:
        raise RuntimeError("trapezoid: received both x and dx")
    if x is not None and not isinstance(x, Tensor):
        dx, x = x, None
    d = wrap_dim(int(dim), y.ndim)
    n = y.shape[d]
    if n == 0:
        return y.sum(d) * 0
    if x is not None:
        spacing = _trapz_dx(x, y, d)
        return _scalar_op(DIV_SCALAR, ((y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1))
                                       * spacing).sum(d), 2.)
    ends = _scalar_op(MUL_SCALAR, y.select(d, 0) + y.select(d, -1), 0.5)
    return _scalar_op(MUL_SCALAR, y.sum(d) - ends, _scalar_dx(dx))


def trapz(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """Alias of ``trapezoid``."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1
                         ) -> Tensor:
    """Cumulative trapezoidal integral of ``y`` along ``dim`` (one element fewer).

    >>> import ndgrad
    >>> ndgrad.cumulative_trapezoid(ndgrad.tensor([1.0, 2.0, 3.0]))
    tensor([1.5000, 4.0000])
    """
    if x is not None and not isinstance(x, Tensor):
        dx, x = x, None
    d = wrap_dim(int(dim), y.ndim)
    n = y.shape[d]
    if n == 0:
        return y.narrow(d, 0, 0)
    pair = y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)
    if x is not None:
        spacing = _trapz_dx(x, y, d, "cumulative_trapezoid")
        return _scalar_op(DIV_SCALAR, (pair * spacing).cumsum(d), 2.)
    return _scalar_op(MUL_SCALAR, pair, _scalar_dx(dx) / 2.).cumsum(d)


# ---------------------------------------------------------------------------- renorm
_RENORM_EPS = 1e-7


def _renorm_parts(x: np.ndarray, dims: tuple, p: float, maxnorm: float) -> tuple:
    from .linalg import _vector_norm_fwd
    n = _vector_norm_fwd(x, dims, True, p, x.dtype)
    over = n > maxnorm
    f = np.where(over, maxnorm / (n + _RENORM_EPS), 1.0).astype(x.dtype)
    return n, over, f


def _renorm_fwd(x, dims, p, maxnorm, dim):
    if x.size == 0:
        return x.copy()
    return x * _renorm_parts(x, dims, p, maxnorm)[2]


def _renorm_terms(x: Tensor, dims: tuple, p: float, maxnorm: float) -> tuple:
    """Factor f(n) and df/dn * dn/dx (tensors), n the norm of each slice."""
    from .linalg import _norm_direction, vector_norm
    n = vector_norm(x, p, dims, True)
    over = n > maxnorm
    denom = n + _RENORM_EPS
    f = (maxnorm / denom).masked_fill(~over, 1.0)
    df = (-maxnorm / (denom * denom)).masked_fill(~over, 0.0)
    return f, df * _norm_direction(x, n, p, dims, True)


def _renorm_vjp(ctx, g):
    (x,) = ctx.saved
    dims, p, maxnorm = ctx._args[:3]
    if x._data.size == 0:
        return g
    f, dfdx = _renorm_terms(x, dims, p, maxnorm)
    return g * f + (g * x).sum(dims, keepdim=True) * dfdx


def _renorm_jvp(ctx, t):
    x = ctx.inputs[0]
    dims, p, maxnorm = ctx._args[:3]
    if x._data.size == 0:
        return t
    f, dfdx = _renorm_terms(x, dims, p, maxnorm)
    return t * f + x * (t * dfdx).sum(dims, keepdim=True)


RENORM = Op("renorm", "RenormBackward0", _renorm_fwd, _renorm_vjp, saves=("self",),
            args=("dims", "p", "maxnorm", "dim"), jvp=_renorm_jvp)


def renorm(input: Tensor, p: Any, dim: int, maxnorm: Any) -> Tensor:
    """Scale each slice ``input.select(dim, i)`` whose ``p``-norm exceeds ``maxnorm`` down to
    norm ``maxnorm``.

    >>> import ndgrad
    >>> ndgrad.tensor([[3.0, 4.0], [0.3, 0.4]]).renorm(2, 0, 1.0)
    tensor([[0.6000, 0.8000],
            [0.3000, 0.4000]])
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(renorm, input, p, dim, maxnorm)
        if r is not NotImplemented:
            return r
    x = input._data
    if x.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {x.ndim} dimensions")
    d = wrap_dim(int(dim), x.ndim)
    p = float(p)
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    maxnorm = float(maxnorm)
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    if category(x) <= _INT:
        raise RuntimeError(f"\"renorm_out\" not implemented for '{_tname(x)}'")
    dims = tuple(i for i in range(x.ndim) if i != d)
    return apply(RENORM, (input,), (x,), (dims, p, maxnorm, d))


# ---------------------------------------------------------------------------- dist
def _dist_fwd(a, b, p):
    from .linalg import _vector_norm_fwd
    diff_ = a - b
    return _vector_norm_fwd(diff_, tuple(range(diff_.ndim)), False, p, diff_.dtype)


def _dist_dir(a: Tensor, b: Tensor, r: Tensor, p: float) -> Tensor:
    from .linalg import _norm_direction
    d = a - b
    return _norm_direction(d, r, p, tuple(range(d.ndim)), False)


def _dist_vjp(ctx, g):
    b, a, r = ctx.saved
    p = ctx._args[0]
    if p == 0:
        return None, None
    gd = g * _dist_dir(a, b, r, p)
    return gd, -gd


def _dist_jvp(ctx, ta, tb):
    a, b = ctx.inputs
    p = ctx._args[0]
    r = ctx.result
    if p == 0:
        return _wrap(np.zeros_like(r._data))
    t = ta if tb is None else (-tb if ta is None else ta - tb)
    return (_dist_dir(a, b, r, p) * t).sum()


DIST = Op("dist", "DistBackward0", _dist_fwd, _dist_vjp, saves=("other", "self", "result"),
          inputs=("self", "other"), args=("p",), jvp=_dist_jvp)


def dist(input: Tensor, other: Tensor, p: Any = 2) -> Tensor:
    """The ``p``-norm of ``input - other`` (broadcast).

    >>> import ndgrad
    >>> ndgrad.dist(ndgrad.tensor([3.0, 0.0]), ndgrad.tensor([0.0, 4.0]))
    tensor(5.)
    """
    if input._blevel or other._blevel:  # Note [Batched backward]
        r = _bcall(dist, input, other, p)
        if r is not NotImplemented:
            return r
    a, b = promote_pair(input, other)
    if category(a) <= _INT:
        # torch subtracts first (its refusals), then refuses to take the norm of the integers
        _check_bool_sub(input, other)
        if a.dtype.name in ("uint16", "uint32", "uint64"):
            raise NotImplementedError(f"\"add_stub\" not implemented for '{_tname(a)}'")
        raise RuntimeError("norm(): input dtype should be either floating point or complex. "
                           f"Got {_tname(a)} instead.")
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise broadcast_error(a.shape, b.shape) from None
    return apply(DIST, (input, other), (a, b), (float(p),))


# ---------------------------------------------------------------------------- batching rules
def _shift_dims(c, args):
    return apply(c.op, tuple(c.ts), tuple(c.arrs), (tuple(d + 1 for d in args[0]),)
                 + tuple(args[1:]))


def _trace_rule(c, args):
    return apply(c.op, tuple(c.ts), tuple(c.arrs), args)


def _dist_rule(c, args):
    from .linalg import vector_norm
    from .shape import reshape
    rank = max(max(len(s) for s in c.ls), 1)
    ts = []
    for t, b, s in zip(c.ts, c.bd, c.ls):
        if b and len(s) < rank:
            t = reshape(t, (c.B,) + (1,) * (rank - len(s)) + tuple(s))
        ts.append(t)
    return vector_norm(ts[0] - ts[1], args[0], tuple(range(1, rank + 1)))


from ._batching import RULES, _pointwise  # noqa: E402

RULES[VAR_MEAN] = RULES[STD_MEAN] = RULES[NANSUM] = RULES[RENORM] = _shift_dims
RULES[AMINMAX] = RULES[COUNT_NONZERO] = _shift_dims
RULES[TRACE] = _trace_rule
RULES[MUL_SCALAR] = RULES[DIV_SCALAR] = _pointwise()
RULES[DIST] = _dist_rule
