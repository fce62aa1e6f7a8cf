"""nn op family: cosine_similarity, pairwise_distance, pdist, cdist.

``cosine_similarity`` and ``pairwise_distance`` are compositions of ndgrad ops (PyTorch records
them as such too). ``pdist`` and ``cdist`` are one op each (``PdistBackward0``,
``CdistBackward0``): the forward on ndarrays (for p=2 on large inputs through one matrix
product, ``|x|^2 + |y|^2 - 2 x.y``, where PyTorch takes that path), the VJP written with ndgrad
ops on the differences, so it can be differentiated again.

Example:
    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> F.pdist(ndgrad.tensor([[0.0, 0.0], [3.0, 4.0]])).tolist()
    [5.0]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _dtype
from .._dtype import result_type
from ..tensor import Tensor, _wrap
from ._dispatch import Op, apply
from . import _autocast


def _np_name(t: Tensor) -> str:
    return {np.int64: "Long", np.int32: "Int", np.int16: "Short", np.int8: "Char",
            np.uint8: "Byte", np.bool_: "Bool"}.get(t._data.dtype.type, str(t.dtype))


# ---------------------------------------------------------------------------- compositions
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim`` (broadcast), each norm
    clamped below at ``eps``.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.cosine_similarity(ndgrad.tensor([[1.0, 0.0]]), ndgrad.tensor([[1.0, 1.0]])).item()
    0.7071067690849304
    """
    from .linalg import vector_norm
    from .rearrange import broadcast_tensors
    if x1.shape != x2.shape:
        x1, x2 = broadcast_tensors(x1, x2)
    if x1.dtype != x2.dtype:
        dt = result_type(x1, x2)
        x1, x2 = x1.to(dt), x2.to(dt)
    n1 = vector_norm(x1, 2, dim, True).clamp_min(eps)
    n2 = vector_norm(x2, 2, dim, True).clamp_min(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``p``-norm of ``x1 - x2 + eps`` over the last dim.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> a, b = ndgrad.tensor([[0.0, 0.0]]), ndgrad.tensor([[3.0, 4.0]])
    >>> round(F.pairwise_distance(a, b).item(), 4)
    5.0
    """
    from .linalg import vector_norm
    nd = max(x1.dim(), x2.dim())
    d = x1 - x2 + eps
    if nd == 0:
        return vector_norm(d.reshape(1), p, 0, keepdim).reshape(()) if not keepdim else \
            vector_norm(d.reshape(1), p, 0, True)
    return vector_norm(d, p, nd - 1, keepdim)


# ---------------------------------------------------------------------------- p-norm helpers
def _dist_np(diff: np.ndarray, p: float, axis: int) -> np.ndarray:
    a = np.abs(diff)
    if p == 0:
        return (a != 0).sum(axis).astype(diff.dtype)
    if p == 1:
        return a.sum(axis)
    if p == 2:
        return np.sqrt((a * a).sum(axis))
    if math.isinf(p):
        return a.max(axis) if a.shape[axis] else np.zeros(
            a.shape[:axis] + a.shape[axis + 1:], a.dtype)
    return (a ** p).sum(axis) ** (1.0 / p)


def _dist_deriv(diff: Tensor, d: Tensor, p: float) -> Tensor:
    """d ||diff||_p / d diff, where ``d`` (broadcastable) is the norm; 0 where d == 0, and 0
    for a zero component (for p < 1 too, where |0|^(p-1) is infinite: torch's kernels give 0)."""
    from .pointwise import where
    zero = d == 0
    if p == 0:
        return diff * 0
    if p == 1:
        return diff.sign()
    if p == 2:
        return where(zero, diff * 0, diff / where(zero, d * 0 + 1, d))
    if math.isinf(p):
        return where(diff.abs() == d, diff.sign(), diff * 0)
    ds = where(zero, d * 0 + 1, d)
    size = where(diff == 0, diff * 0 + 1, diff.abs())     # sign() is 0 there anyway
    r = diff.sign() * size.pow(p - 1) / ds.pow(p - 1)
    return where(zero, diff * 0, r)


# ---------------------------------------------------------------------------- pdist
def _pairs(n: int) -> tuple:
    i, j = np.triu_indices(n, 1)
    return i.astype(np.int64), j.astype(np.int64)


def _pdist_fwd(x, p):
    i, j = _pairs(x.shape[0])
    return _dist_np(x[i] - x[j], p, 1).astype(x.dtype, copy=False)


def _pdist_vjp(ctx, g):
    x, d = ctx.saved
    (p,) = ctx._args
    n = x.shape[0]
    i, j = _pairs(n)
    it, jt = _wrap(i), _wrap(j)
    diff = x.index_select(0, it) - x.index_select(0, jt)
    G = _dist_deriv(diff, d.unsqueeze(1), p) * g.unsqueeze(1)
    z = x * 0
    return z.index_add(0, it, G).index_add(0, jt, -G)


def _pdist_jvp(ctx, t):
    x, d = ctx.inputs[0], ctx.result
    (p,) = ctx._args
    i, j = _pairs(x.shape[0])
    it, jt = _wrap(i), _wrap(j)
    diff = x.index_select(0, it) - x.index_select(0, jt)
    td = t.index_select(0, it) - t.index_select(0, jt)
    return (_dist_deriv(diff, d.unsqueeze(1), p) * td).sum(1)


PDIST = Op("pdist", "PdistBackward0", _pdist_fwd, _pdist_vjp, args=("p",),
           saves=("self", "result"), jvp=_pdist_jvp)


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The ``p``-norm distances between the rows of a 2-d ``input`` (upper triangle, row
    major).

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.pdist(ndgrad.tensor([[0.0], [1.0], [3.0]])).tolist()
    [1.0, 3.0, 2.0]
    """
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    if input.dtype.itemsize == 2 and input.shape[0] >= 2 and input.shape[1]:  # no half kernel
        raise NotImplementedError(f"\"pdist\" not implemented for "
                                  f"'{'Half' if input.dtype.name == 'float16' else 'BFloat16'}'")
    return apply(PDIST, (input,), (input._data,), (float(p),))


# ---------------------------------------------------------------------------- cdist
def _use_mm(p: float, P: int, R: int, mode: int) -> bool:
    # mode: 0 = use_mm_for_euclid_dist_if_necessary, 1 = use_mm_for_euclid_dist,
    # 2 = donot_use_mm_for_euclid_dist
    return p == 2 and (mode == 1 or (mode == 0 and (P > 25 or R > 25)))


def _cdist_fwd(x1, x2, p, mode):
    P, R = x1.shape[-2], x2.shape[-2]
    if _use_mm(p, P, R, mode):
        s1 = (x1 * x1).sum(-1)[..., :, None]
        s2 = (x2 * x2).sum(-1)[..., None, :]
        d2 = s1 + s2 - 2 * np.matmul(x1, np.swapaxes(x2, -1, -2))
        return np.sqrt(np.maximum(d2, 0)).astype(x1.dtype, copy=False)
    diff = x1[..., :, None, :] - x2[..., None, :, :]
    return _dist_np(diff, p, -1).astype(np.result_type(x1, x2), copy=False)


def _cdist_parts(x1: Tensor, x2: Tensor) -> Tensor:
    return x1.unsqueeze(-2) - x2.unsqueeze(-3)


def _cdist_vjp(ctx, g):
    x1, x2, d = ctx.saved
    p, _ = ctx._args
    out = [None, None]
    if p == 2:
        from .linalg import matmul
        from .pointwise import where
        zero = d == 0
        w = where(zero, g * 0, g / where(zero, d * 0 + 1, d))
        if ctx.needs_input_grad(0):
            out[0] = x1 * w.sum(-1, keepdim=True) - matmul(w, x2)
        if ctx.needs_input_grad(1):
            out[1] = x2 * w.sum(-2).unsqueeze(-1) - matmul(w.transpose(-1, -2), x1)
        return tuple(out)
    G = _dist_deriv(_cdist_parts(x1, x2), d.unsqueeze(-1), p) * g.unsqueeze(-1)
    if ctx.needs_input_grad(0):
        out[0] = G.sum(-2)
    if ctx.needs_input_grad(1):
        out[1] = -G.sum(-3)
    return tuple(out)


def _cdist_jvp(ctx, t1, t2):
    x1, x2 = ctx.inputs
    d = ctx.result
    p, _ = ctx._args
    D = _dist_deriv(_cdist_parts(x1, x2), d.unsqueeze(-1), p)
    tot = None
    if t1 is not None:
        tot = (D * t1.unsqueeze(-2)).sum(-1)
    if t2 is not None:
        r = -(D * t2.unsqueeze(-3)).sum(-1)
        tot = r if tot is None else tot + r
    return tot


CDIST = Op("cdist", "CdistBackward0", _cdist_fwd, _cdist_vjp, inputs=("x1", "x2"),
           args=("p", "compute_mode"), saves=("x1", "x2", "result"), jvp=_cdist_jvp)
_MODES = {None: 0, "use_mm_for_euclid_dist_if_necessary": 0, "use_mm_for_euclid_dist": 1,
          "donot_use_mm_for_euclid_dist": 2}


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: Any = None) -> Tensor:
    """The ``p``-norm distances between the rows of ``x1`` (..., P, M) and ``x2``
    (..., R, M): (..., P, R), batch dims broadcast.

    >>> import ndgrad
    >>> ndgrad.cdist(ndgrad.tensor([[0.0, 0.0]]), ndgrad.tensor([[3.0, 4.0], [0.0, 1.0]])).tolist()
    [[5.0, 1.0]]
    """
    if _autocast.active:  # Note [Autocast]
        x1, x2 = _autocast.fp32(x1, x2)
    for t, nm in ((x1, "X1"), (x2, "X2")):
        if t._data.dtype.kind not in "fc" and t._data.dtype != getattr(
                _dtype, "bfloat16", _dtype.float16).np:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {nm} got: "
                               f"{_np_name(t)}")
    if x1.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D")
    if x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {x2.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if compute_mode not in _MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    if x1.dtype != x2.dtype:
        raise RuntimeError("X1 and X2 must have the same dtype")
    b1, b2 = tuple(x1.shape[:-2]), tuple(x2.shape[:-2])
    if b1 != b2:
        try:
            bs = tuple(np.broadcast_shapes(b1, b2))
        except ValueError:
            from ._util import broadcast_error
            raise broadcast_error(b1, b2) from None
        x1 = x1.expand(bs + tuple(x1.shape[-2:]))
        x2 = x2.expand(bs + tuple(x2.shape[-2:]))
    return apply(CDIST, (x1, x2), (x1._data, x2._data), (float(p), _MODES[compute_mode]))


__all__ = ["cosine_similarity", "pairwise_distance", "pdist"]

# Schemas of this family's public functions (Note [Declared signatures]), installed into
# ndgrad.nn.functional.
SIGNATURES = """
cosine_similarity(Tensor x1, Tensor x2, int dim=1, float eps=1e-08)
pairwise_distance(Tensor x1, Tensor x2, float p=2.0, float eps=1e-06, bool keepdim=False)
pdist(Tensor input, float p=2)
"""
