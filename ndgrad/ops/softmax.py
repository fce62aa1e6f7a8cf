"""Softmax family: softmax, log_softmax and logsumexp along dims (numerically stable).

Example:
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> x.log_softmax(0).exp().sum().backward()
    >>> x.grad.abs().max().item() < 1e-6
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _dtype
from ..tensor import Tensor
from ._batching import call as _bcall
from ._dispatch import Op, apply
from ._util import category, dims_tuple, wrap_dim

_INT = _dtype._INT


def _shifted(x: np.ndarray, dim: int) -> np.ndarray:
    """``x`` minus its max along ``dim`` (a non-finite max shifts by 0)."""
    m = np.max(x, axis=dim, keepdims=True)
    return x - np.where(np.isfinite(m), m, 0).astype(x.dtype, copy=False)


def _as_1d(x: np.ndarray) -> np.ndarray:
    return x.reshape(1) if x.ndim == 0 else x


# torch's float16/bfloat16 softmax kernels (forward and backward) compute in float32 and round
# once; NumPy would round after every step
_LOWP = _dtype.HALF_NP


def _softmax_fwd(x: np.ndarray, dim: int) -> np.ndarray:
    if x.dtype in _LOWP:
        return _softmax_fwd(x.astype(np.float32), dim).astype(x.dtype)
    a = _as_1d(x)
    if a.size == 0:
        return x.copy()
    e = np.exp(_shifted(a, dim))
    return (e / np.sum(e, axis=dim, keepdims=True)).reshape(x.shape)


def _log_softmax_fwd(x: np.ndarray, dim: int) -> np.ndarray:
    if x.dtype in _LOWP:
        return _log_softmax_fwd(x.astype(np.float32), dim).astype(x.dtype)
    a = _as_1d(x)
    if a.size == 0:
        return x.copy()
    s = _shifted(a, dim)
    return (s - np.log(np.sum(np.exp(s), axis=dim, keepdims=True))).reshape(x.shape)


def _softmax_vjp(ctx, g):
    (y,) = ctx.saved
    dim = ctx._args[0]
    if y._data.dtype in _LOWP and g._data.dtype == y._data.dtype:
        dt = y.dtype        # in float32, rounded once (differentiable casts)
        y, g = y.float(), g.float()
        return (y * (g - (g * y).sum(dim, keepdim=True))).to(dt)
    return y * (g - (g * y).sum(dim, keepdim=True))


def _softmax_jvp(ctx, t):
    y, dim = ctx.result, ctx._args[0]
    return y * (t - (t * y).sum(dim, keepdim=True))


def _log_softmax_vjp(ctx, g):
    (y,) = ctx.saved
    dim = ctx._args[0]
    if y._data.dtype in _LOWP and g._data.dtype == y._data.dtype:
        dt = y.dtype        # in float32, rounded once (differentiable casts)
        y, g = y.float(), g.float()
        return (g - y.exp() * g.sum(dim, keepdim=True)).to(dt)
    return g - y.exp() * g.sum(dim, keepdim=True)


def _log_softmax_jvp(ctx, t):
    y, dim = ctx.result, ctx._args[0]
    return t - (t * y.exp()).sum(dim, keepdim=True)


SOFTMAX = Op("softmax", "SoftmaxBackward0", _softmax_fwd, _softmax_vjp, saves=("result",),
             args=("dim",), jvp=_softmax_jvp)
LOG_SOFTMAX = Op("log_softmax", "LogSoftmaxBackward0", _log_softmax_fwd, _log_softmax_vjp,
                 saves=("result",), args=("dim",), jvp=_log_softmax_jvp)


def _softmax_common(input: Tensor, dim: int, dtype: Any, op: Op, name: str) -> Tensor:
    if dtype is not None:
        input = input.to(dtype)
    x = input._data
    d = wrap_dim(int(dim), x.ndim or 1)
    if category(x) <= _INT:
        kernel = "lastdim_kernel_impl" if d == (x.ndim or 1) - 1 else "kernel_impl"
        raise NotImplementedError(f"\"{name}_{kernel}\" not implemented for "
                                  f"'{_dtype._FROM_NP[x.dtype]._torch_name}'")
    return apply(op, (input,), (x,), (d,))


def softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``exp(x) / exp(x).sum(dim)``, computed stably; ``dtype`` casts the input first.

    >>> import ndgrad
    >>> ndgrad.tensor([0.0, 0.0]).softmax(0)
    tensor([0.5000, 0.5000])
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(softmax, input, dim, dtype)
        if r is not NotImplemented:
            return r
    return _softmax_common(input, dim, dtype, SOFTMAX, "softmax")


def log_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``log(softmax(x, dim))``, computed stably; ``dtype`` casts the input first.

    >>> import ndgrad
    >>> ndgrad.tensor([0.0, 0.0]).log_softmax(0)
    tensor([-0.6931, -0.6931])
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(log_softmax, input, dim, dtype)
        if r is not NotImplemented:
            return r
    return _softmax_common(input, dim, dtype, LOG_SOFTMAX, "log_softmax")


# ---------------------------------------------------------------------------- logsumexp
def _logsumexp_fwd(x: np.ndarray, dims: tuple, keepdim: bool) -> np.ndarray:
    if not dims:
        return x.copy()
    m = np.max(x, axis=dims, keepdims=True) if x.size else np.zeros((1,) * x.ndim, x.dtype)
    m = np.where(np.isfinite(m), m, 0).astype(x.dtype, copy=False)
    out = np.log(np.sum(np.exp(x - m), axis=dims, keepdims=True)) + m
    return out if keepdim else np.squeeze(out, dims)


def _keep(r: Tensor, dims: tuple, keepdim: bool) -> Tensor:
    if not keepdim:
        for d in sorted(dims):
            r = r.unsqueeze(d)
    return r


def _logsumexp_vjp(ctx, g):
    x, r = ctx.saved
    dims, keepdim = ctx._args
    return _keep(g, dims, keepdim) * (x - _keep(r, dims, keepdim)).exp()


def _logsumexp_jvp(ctx, t):
    x, r = ctx.inputs[0], ctx.result
    dims, keepdim = ctx._args
    w = t * (x - _keep(r, dims, keepdim)).exp()
    return w.sum(dims, keepdim) if dims else w


LOGSUMEXP = Op("logsumexp", "LogsumexpBackward0", _logsumexp_fwd, _logsumexp_vjp,
               saves=("self", "result"), args=("dim", "keepdim"), jvp=_logsumexp_jvp)


def logsumexp(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    """``log(exp(x).sum(dim))``, computed stably; integer inputs give the default float dtype.

    >>> import ndgrad
    >>> round(ndgrad.tensor([0.0, 0.0]).logsumexp(0).item(), 4)
    0.6931
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(logsumexp, input, dim, keepdim)
        if r is not NotImplemented:
            return r
    x = input._data
    if category(x) <= _INT:
        input = input.to(_dtype.get_default_dtype())
        x = input._data
    dims = dims_tuple(dim, x.ndim) if x.ndim else (dims_tuple(dim, 1) and ())
    return apply(LOGSUMEXP, (input,), (x,), (dims, bool(keepdim)))


__all__ = ["softmax", "log_softmax", "logsumexp"]
