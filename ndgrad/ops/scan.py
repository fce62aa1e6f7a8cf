"""Scans along a dim: cumsum, cumprod, cummax, cummin, logcumsumexp.

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

from .. import _dtype, _unsigned
from ..tensor import Tensor, _wrap
from ._batching import call as _bcall
from ._dispatch import Op, apply
from ._jvp import linear, zero
from ._util import category, wrap_dim
from .pointwise import apply_nondiff
from .reduction import _check_autograd_dtype

_INT = _dtype._INT


def _cumsum_fwd(x: np.ndarray, dim: int, dt: Any) -> np.ndarray:
    if x.ndim == 0:
        return np.asarray(x, dtype=dt).copy()
    if x.dtype in _dtype.HALF_NP and (dt is None or dt == x.dtype):
        # Note [Low-precision accumulation] (ops/reduction.py)
        return np.cumsum(x, axis=dim, dtype=np.float32).astype(x.dtype)
    return np.cumsum(x, axis=dim, dtype=dt)


def _cumsum_vjp(ctx, g):
    # The reversed cumulative sum: total - inclusive prefix + the element itself.
    dim = ctx._args[0]
    if g.ndim == 0:
        return g
    return g.sum(dim, keepdim=True) - g.cumsum(dim) + g


CUMSUM = Op("cumsum", "CumsumBackward0", _cumsum_fwd, _cumsum_vjp, args=("dim", "dtype"),
            jvp=linear)


def _scan(op: Op, input: Tensor, dim: int, dtype: Any) -> Tensor:
    """Apply the cumulative ``op`` along ``dim``: bool and integer inputs accumulate in int64
    unless ``dtype`` is given (PyTorch's rule for cumsum and cumprod)."""
    x = input._data
    d = wrap_dim(int(dim), x.ndim or 1)
    if dtype is not None:
        dt = _dtype.to_dtype(dtype).np
    else:
        dt = np.dtype(np.int64) if category(x) <= _INT else x.dtype
    _check_autograd_dtype(input, dt)
    return apply(op, (input,), (x,), (d, dt))


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
    if dtype is not None:
        _unsigned.check_dtype("cumsum_out_cpu", dtype)
    return _scan(CUMSUM, input, dim, dtype)



# ---------------------------------------------------------------------------- cumprod
def _lower_pairs(x: Tensor, dim: int) -> Tensor:
    """``P[..., i, k] = prod of x[j] for j <= k, j != i`` when ``k >= i``, else 0, with the
    input's ``dim`` moved to the last two axes (i, k). Exact with zeros; built from
    differentiable ops (cumprod again, one size up), so gradients of gradients work."""
    from .pointwise import where
    n = x.shape[dim]
    xm = x.movedim(dim, -1)
    eye = _wrap(np.eye(n, dtype=bool))
    rows = where(eye, 1, xm.unsqueeze(-2).expand(*xm.shape[:-1], n, n))
    upper = _wrap(np.triu(np.ones((n, n), dtype=bool)))
    return where(upper, cumprod(rows, -1), 0)


def _exclusive_cumprod(xm: Tensor) -> Tensor:
    """``L[..., i] = prod of xm[..., j] for j < i`` (last dim), without division."""
    from .shape import cat
    ones = _wrap(np.ones(xm.shape[:-1] + (1,), dtype=xm._data.dtype))
    return cumprod(cat([ones, xm.narrow(-1, 0, xm.shape[-1] - 1)], -1), -1)


def _cumprod_vjp_linear(x: Tensor, g: Tensor, dim: int) -> Tensor:
    # grad[i] = L[i] * S[i], L the exclusive product, S[i] = g[i] + x[i+1] S[i+1]: a scan
    # over dim in Python, linear in memory and exact with zeros (no division).
    from .shape import stack
    xm, gm = x.movedim(dim, -1).conj(), g.movedim(dim, -1)
    n = xm.shape[-1]
    s = [gm.select(-1, n - 1)]
    for i in range(n - 2, -1, -1):
        s.append(gm.select(-1, i) + xm.select(-1, i + 1) * s[-1])
    return (_exclusive_cumprod(xm) * stack(s[::-1], -1)).movedim(-1, dim)


def _cumprod_jvp_linear(x: Tensor, t: Tensor, dim: int) -> Tensor:
    # out[k] = x[k] out[k-1] + t[k] L[k]
    from .shape import stack
    xm, tm = x.movedim(dim, -1), t.movedim(dim, -1)
    lm = _exclusive_cumprod(xm)
    out = [tm.select(-1, 0)]
    for k in range(1, xm.shape[-1]):
        out.append(xm.select(-1, k) * out[-1] + tm.select(-1, k) * lm.select(-1, k))
    return stack(out, -1).movedim(-1, dim)


# Above this many elements of the (..., n, n) products, an input with zeros takes the scans
# above (Python loops over dim) instead.
_QUADRATIC_LIMIT = 1 << 20


def _cumprod_vjp(ctx, g):
    x, y = ctx.saved
    dim = ctx._args[0]
    if x._data.ndim == 0 or x._data.size == 0:
        return g
    if not np.any(x._data == 0):
        s = g * y.conj()
        rc = s.sum(dim, keepdim=True) - s.cumsum(dim) + s
        return rc / x.conj()
    if x._data.size * x.shape[dim] > _QUADRATIC_LIMIT:
        return _cumprod_vjp_linear(x, g, dim)
    pairs = _lower_pairs(x, dim)
    return (pairs.conj() * g.movedim(dim, -1).unsqueeze(-2)).sum(-1).movedim(-1, dim)


def _cumprod_jvp(ctx, t):
    x, y = ctx.inputs[0], ctx.result
    dim = ctx._args[0]
    if x._data.ndim == 0 or x._data.size == 0:
        return t
    if not np.any(x._data == 0):
        return y * (t / x).cumsum(dim)
    if x._data.size * x.shape[dim] > _QUADRATIC_LIMIT:
        return _cumprod_jvp_linear(x, t, dim)
    pairs = _lower_pairs(x, dim)
    return (pairs * t.movedim(dim, -1).unsqueeze(-1)).sum(-2).movedim(-1, dim)


def _cumprod_fwd(x: np.ndarray, dim: int, dt: Any) -> np.ndarray:
    if x.ndim == 0:
        return np.asarray(x, dtype=dt).copy()
    return np.cumprod(x, axis=dim, dtype=dt)


CUMPROD = Op("cumprod", "CumprodBackward0", _cumprod_fwd, _cumprod_vjp,
             saves=("self", "result"), args=("dim", "dtype"), jvp=_cumprod_jvp)


def _cumprod_vjp_traceable(ctx, g):
    """cumprod's VJP without the eager rule's branch on zeros in the data (Note [Traceable VJP
    rules] in jit/differentiate.py): the division-free forms, exact with zeros (the eager rule
    divides by ``x`` when there is no zero, which is faster)."""
    x, _ = ctx.saved
    dim = ctx._args[0]
    if x._data.ndim == 0 or x._data.size == 0:
        return g
    if x._data.size * x.shape[dim] > _QUADRATIC_LIMIT:
        return _cumprod_vjp_linear(x, g, dim)
    pairs = _lower_pairs(x, dim)
    return (pairs.conj() * g.movedim(dim, -1).unsqueeze(-2)).sum(-1).movedim(-1, dim)


# Rules the jit records instead of the op's own VJP (Note [Traceable VJP rules]).
TRACEABLE_VJP = {CUMPROD: _cumprod_vjp_traceable}


def cumprod(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Cumulative product along ``dim``; bool and integer inputs give int64 unless ``dtype``.
    The gradient is exact where the input has zeros.

    >>> import ndgrad
    >>> ndgrad.tensor([1.0, 2.0, 3.0]).cumprod(0)
    tensor([1., 2., 6.])
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(cumprod, input, dim, dtype=dtype)
        if r is not NotImplemented:
            return r
    if dtype is not None:
        _unsigned.check_dtype("cumprod_out_cpu", dtype)
    return _scan(CUMPROD, input, dim, dtype)


# ---------------------------------------------------------------------------- cummax / cummin
def _cum_extreme_idx(x: np.ndarray, dim: int, is_max: bool) -> np.ndarray:
    """Indices of the running max/min: the last element equal to it (NaN, once seen, stays the
    result, at the last NaN so far)."""
    acc = (np.maximum if is_max else np.minimum).accumulate(x, axis=dim)
    mark = x == acc
    if x.dtype.kind not in "biu":
        mark |= np.isnan(x)
        mark &= ~(np.isnan(acc) & ~np.isnan(x))
    n = x.shape[dim]
    shape = [1] * x.ndim
    shape[dim] = n
    pos = np.where(mark, np.arange(n).reshape(shape), 0)
    return np.maximum.accumulate(pos, axis=dim).astype(np.int64)


def _cum_fwd(x, dim, indices):
    idx = indices._data
    if x.ndim == 0:
        return x.copy(), idx
    return np.take_along_axis(x, idx, axis=dim), idx


def _cum_vjp(ctx, g, g_indices=None):
    from .reduction import _scatter_add_zeros
    indices = ctx.saved[1]
    shape = ctx.input_shape(0)
    if not shape:
        return g
    return _scatter_add_zeros(g, ctx._args[0], indices._data, shape)


def _cum_jvp(ctx, t):
    from .reduction import gather
    dim, indices = ctx._args
    if not ctx.input_shape(0):
        return t, None
    return gather(t, dim, indices), None


CUMMAX = Op("cummax", "CummaxBackward0", _cum_fwd, _cum_vjp, saves=("self", "indices"),
            args=("dim", "indices"), jvp=_cum_jvp, num_outputs=2)
CUMMIN = Op("cummin", "CumminBackward0", _cum_fwd, _cum_vjp, saves=("self", "indices"),
            args=("dim", "indices"), jvp=_cum_jvp, num_outputs=2)


def _cum_indices_fwd(x: np.ndarray, dim: int, is_max: bool) -> np.ndarray:
    if x.ndim and x.size:
        return _cum_extreme_idx(x, dim, is_max)
    return np.zeros(x.shape, np.int64)


# The indices of cummax/cummin: an op without VJP (Note [Index ops] in ops/sort.py).
CUM_INDICES = Op("cummax_indices", "CummaxIndicesBackward0", _cum_indices_fwd,
                 args=("dim", "is_max"), jvp=zero)


def _cum_extreme(input: Tensor, dim: int, is_max: bool) -> Any:
    from .. import return_types as _rt
    x = input._data
    d = wrap_dim(int(dim), x.ndim or 1)
    if x.dtype.kind == "c":
        name = "cummax" if is_max else "cummin"
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for "
                           f"'{_dtype._FROM_NP[x.dtype]._torch_name}'")
    idx = apply_nondiff(CUM_INDICES, (input,), (x,), (d, is_max))
    vals, out = apply(CUMMAX if is_max else CUMMIN, (input,), (x,), (d, idx))
    out = idx if out._data is idx._data else out
    return (_rt.cummax if is_max else _rt.cummin)(vals, out)


def cummax(input: Tensor, dim: int) -> Any:
    """Running maximum along ``dim``: ``(values, indices)``.

    >>> import ndgrad
    >>> ndgrad.tensor([1.0, 3.0, 2.0]).cummax(0)
    ndgrad.return_types.cummax(
    values=tensor([1., 3., 3.]),
    indices=tensor([0, 1, 1]))
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(cummax, input, dim)
        if r is not NotImplemented:
            return r
    return _cum_extreme(input, dim, True)


def cummin(input: Tensor, dim: int) -> Any:
    """Running minimum along ``dim``: ``(values, indices)``.

    >>> import ndgrad
    >>> ndgrad.tensor([3.0, 1.0, 2.0]).cummin(0)
    ndgrad.return_types.cummin(
    values=tensor([3., 1., 1.]),
    indices=tensor([0, 1, 1]))
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(cummin, input, dim)
        if r is not NotImplemented:
            return r
    return _cum_extreme(input, dim, False)


# ---------------------------------------------------------------------------- logcumsumexp
def _logcumsumexp_fwd(x: np.ndarray, dim: int) -> np.ndarray:
    if x.ndim == 0 or x.size == 0:
        return x.copy()
    if x.dtype.kind == "c":
        # y[k] = log(exp(y[k-1]) + exp(x[k])), each step shifted by the larger real part
        xm = np.moveaxis(x, dim, 0)
        out = np.empty_like(xm)
        acc = xm[0]
        out[0] = acc
        for k in range(1, xm.shape[0]):
            m = np.maximum(acc.real, xm[k].real)
            m = np.where(np.isfinite(m), m, 0)
            acc = np.log(np.exp(acc - m) + np.exp(xm[k] - m)) + m
            out[k] = acc
        return np.moveaxis(out, 0, dim)
    return np.logaddexp.accumulate(x, axis=dim)


def _lcse_weights(x: Tensor, y: Tensor, dim: int) -> Tensor:
    """``E[..., i, k] = exp(x[i] - y[k])`` for ``k >= i`` (at most 1, as ``y[k]`` is the
    log-sum-exp of ``x[0..k]``), else 0; ``dim`` moved to the last two axes (i, k). Quadratic
    in the length of ``dim``."""
    from .pointwise import where
    n = x.shape[dim]
    xm, ym = x.movedim(dim, -1), y.movedim(dim, -1)
    upper = _wrap(np.triu(np.ones((n, n), dtype=bool)))
    expo = where(upper, xm.unsqueeze(-1) - ym.unsqueeze(-2), float("-inf"))
    return expo.exp()


# Above _QUADRATIC_LIMIT elements of the (..., n, n) weights, the rules use a linear-memory form:
# exact to rounding and stable for the first derivative, but a zero entry of the cotangent
# (tangent) enters as log(0) = -inf, whose derivative is not finite.


def _signed_log(v: Tensor) -> tuple:
    """``(log v+, log v-)`` with -inf where that part is 0; the masked branch gets no
    gradient (where), so no infinite derivative enters."""
    from .pointwise import where
    pos, neg = v > 0, v < 0
    one = _wrap(np.ones((), dtype=v._data.dtype))
    inf = float("-inf")
    return (where(pos, where(pos, v, one).log(), inf),
            where(neg, where(neg, -v, one).log(), inf))


def _rev_lcse(v: Tensor, dim: int) -> Tensor:
    """logcumsumexp from the end of ``dim`` backwards."""
    rev = _wrap(np.arange(v.shape[dim] - 1, -1, -1, dtype=np.int64))
    return logcumsumexp(v.index_select(dim, rev), dim).index_select(dim, rev)


def _logcumsumexp_vjp(ctx, g):
    x, y = ctx.saved
    dim = ctx._args[0]
    if x._data.ndim == 0 or x._data.size == 0:
        return g
    n = x.shape[dim]
    if x._data.size * n <= _QUADRATIC_LIMIT or x._data.dtype.kind == "c":
        w = _lcse_weights(x, y, dim)
        return (w.conj() * g.movedim(dim, -1).unsqueeze(-2)).sum(-1).movedim(-1, dim)
    # grad[i] = sum_{k >= i} g[k] exp(x[i] - y[k]), each sign part as a reversed log-cum-sum-exp
    lp, ln = _signed_log(g)
    return (x + _rev_lcse(lp - y, dim)).exp() - (x + _rev_lcse(ln - y, dim)).exp()


def _logcumsumexp_jvp(ctx, t):
    x, y = ctx.inputs[0], ctx.result
    dim = ctx._args[0]
    if x._data.ndim == 0 or x._data.size == 0:
        return t
    n = x.shape[dim]
    if x._data.size * n <= _QUADRATIC_LIMIT or x._data.dtype.kind == "c":
        w = _lcse_weights(x, y, dim)
        return (w * t.movedim(dim, -1).unsqueeze(-1)).sum(-2).movedim(-1, dim)
    lp, ln = _signed_log(t)
    return (logcumsumexp(lp + x, dim) - y).exp() - (logcumsumexp(ln + x, dim) - y).exp()


LOGCUMSUMEXP = Op("logcumsumexp", "LogcumsumexpBackward0", _logcumsumexp_fwd,
                  _logcumsumexp_vjp, saves=("self", "result"), args=("dim",),
                  jvp=_logcumsumexp_jvp)


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """``log(cumsum(exp(x)))`` along ``dim``, computed stably; integer inputs give the
    default float dtype.

    >>> import ndgrad
    >>> ndgrad.tensor([0.0, 0.0]).logcumsumexp(0)
    tensor([0.0000, 0.6931])
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(logcumsumexp, input, dim)
        if r is not NotImplemented:
            return r
    x = input._data
    d = wrap_dim(int(dim), x.ndim or 1)
    if category(x) <= _INT:
        raise NotImplementedError("\"logcumsumexp_out_cpu\" not implemented for "
                                  f"'{_dtype._FROM_NP[x.dtype]._torch_name}'")
    return apply(LOGCUMSUMEXP, (input,), (x,), (d,))


# ---------------------------------------------------------------------------- batching rules
def _cum_rule(c, args):
    from .shape import reshape
    t, a = c.ts[0], c.arrs[0]
    zero_d = not c.ls[0]
    if zero_d:
        t = reshape(t, (c.B, 1))
        a = t._data
    d = 1 if zero_d else args[0] + 1
    idx = _wrap(_cum_extreme_idx(a, d, c.op is CUMMAX) if a.size else
                np.zeros(a.shape, np.int64))
    vals, out = apply(c.op, (t,), (a,), (d, idx))
    if zero_d:
        vals, out = reshape(vals, (c.B,)), reshape(out, (c.B,))
    return vals, out


def _cum_indices_rule(c, args):
    t, a = c.ts[0], c.arrs[0]
    if not c.ls[0]:
        return _wrap(np.zeros((c.B,), np.int64))
    return apply(CUM_INDICES, (t,), (a,), (args[0] + 1, args[1]))


from ._batching import RULES, _dim_first_scan  # noqa: E402

RULES[CUM_INDICES] = _cum_indices_rule

RULES[CUMPROD] = RULES[LOGCUMSUMEXP] = _dim_first_scan
RULES[CUMMAX] = RULES[CUMMIN] = _cum_rule

__all__ = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]
