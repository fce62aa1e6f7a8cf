"""nn op family: loss functions.

Note [Loss ops]
The losses PyTorch computes as one kernel (mse, smooth_l1, huber, soft_margin,
binary_cross_entropy(_with_logits), nll_loss, multi_margin, multilabel_margin, ctc) are one
``Op`` each here, with PyTorch's node names; the others are compositions of ndgrad ops recording
what PyTorch records (l1_loss is ``(x - y).abs().mean()``, kl_div, poisson_nll ...).

The elementwise ones share one shape (``_pointwise_loss``): a NumPy forward computes the
elementwise loss and reduces it ('none' = 0, 'mean' = 1, 'sum' = 2, PyTorch's enum); the VJP is
the incoming gradient spread back over the elements (divided by their number for 'mean') times
the elementwise derivative, written with ndgrad ops so that it can be differentiated again; the
JVP is the reduced sum of tangent times derivative.

``nll_loss`` is linear in its input for fixed targets, so its backward is a second op (the
adjoint: scatter of ``-w * g`` at the targets) whose own VJP is ``nll_loss`` again; both run on
the whole (N, C, ...) array at once. ``cross_entropy`` with class indices is
``nll_loss(log_softmax(x))``: PyTorch's two nodes, each one fused op.

``ctc_loss`` runs the alpha recursion (log space) vectorized over the batch and the extended
label positions, the beta recursion in its backward, as one op (``CtcLossBackward0``).

Example:
    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> x = ndgrad.tensor([[2.0, 0.0, 0.0]], requires_grad=True)
    >>> y = F.cross_entropy(x, ndgrad.tensor([0]))
    >>> y.grad_fn.name(), round(y.item(), 4)
    ('NllLossBackward0', 0.2395)
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Callable, Optional

import numpy as np

from .. import _dtype
from .._warn import warn_user
from .._creation import full_like
from .._dtype import result_type
from ..tensor import Tensor, _wrap
from ._batching import call as _bcall
from ._dispatch import Op, apply
from ._jvp import not_implemented
from . import _autocast

# A missing optional tensor operand (weight, pos_weight): never requires grad, array None.
_ABSENT = _wrap(np.zeros(0))
_RED = {"none": 0, "mean": 1, "sum": 2}


# ---------------------------------------------------------------------------- helpers
def _legacy_reduction(size_average: Any, reduce: Any) -> str:
    sa = True if size_average is None else size_average
    rd = True if reduce is None else reduce
    ret = "mean" if (sa and rd) else "sum" if rd else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use "
                  f"reduction='{ret}' instead.", stacklevel=3)
    return ret


def _reduction(reduction: Any, size_average: Any = None, reduce: Any = None) -> int:
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    r = _RED.get(reduction) if isinstance(reduction, str) else None
    if r is None:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return r


def _reduce_np(out: np.ndarray, red: int) -> np.ndarray:
    if red == 0:
        return out
    if red == 2:
        return np.asarray(out.sum(dtype=out.dtype))
    if out.size == 0:
        return np.asarray(np.nan, dtype=out.dtype)
    return np.asarray(out.mean(dtype=out.dtype))


def _reduce_t(t: Tensor, red: int) -> Tensor:
    return t if red == 0 else t.sum() if red == 2 else t.mean()


def _spread(g: Tensor, red: int, shape: tuple) -> Tensor:
    """The gradient of each element of a reduced loss of ``shape``."""
    if red == 0:
        return g
    if red == 1:
        n = int(np.prod(shape)) if shape else 1
        g = g / n
    return g.expand(shape) if shape else g


def _is_float(t: Tensor) -> bool:
    return bool(t.is_floating_point() or t.is_complex())


def _np_name(t: Tensor) -> str:
    return _dtype._FROM_NP[t._data.dtype]._torch_name


def _no_grad_arg(t: Optional[Tensor], fn: str, arg: str) -> None:
    if t is not None and t.requires_grad:
        raise RuntimeError(f"The function '{fn}' is not differentiable with respect to argument "
                           f"'{arg}'. This input cannot have requires_grad True.")


def _promote(*ts: Tensor) -> tuple:
    dt = result_type(*ts) if len(ts) == 2 else ts[0].dtype
    return tuple(t if t.dtype == dt else t.to(dt) for t in ts)


def _like(t: Tensor, other: Tensor) -> Tensor:
    return t if t.dtype == other.dtype else t.to(other.dtype)


def _bcast(input: Tensor, target: Tensor) -> tuple:
    if input.shape == target.shape:
        return input, target
    from .rearrange import broadcast_tensors
    return tuple(broadcast_tensors(input, target))


def _size_warning(input: Tensor, target: Tensor) -> None:
    if target.shape != input.shape:
        warn_user(f"Using a target size ({target.shape}) that is different to the input size "
                  f"({input.shape}). This will likely lead to incorrect results due to "
                  "broadcasting. Please ensure they have the same size.")


# ---------------------------------------------------------------------------- pointwise losses
def _pointwise_loss(name: str, node: str, elem: Callable, derivs: Callable,
                    inputs: tuple, params: tuple = ()) -> Op:
    """An elementwise loss op (Note [Loss ops]). ``elem(*arrays, *params)`` is the elementwise
    loss on ndarrays (absent operands are None); ``derivs(need, *tensors, *params)`` the
    elementwise derivatives (ndgrad Tensors, None where not needed) for each tensor input."""
    n = len(inputs)

    def fwd(*a):
        arrs, red, ps = a[:n], a[n], a[n + 1:]
        return _reduce_np(np.asarray(elem(*arrs, *ps)), red)

    def full_shape(ts):
        return np.broadcast_shapes(*[t.shape for t in ts if t is not _ABSENT and
                                     t is not None])

    def vjp(ctx, g):
        ts = tuple(_ABSENT if t is None else t for t in ctx.saved)
        red, ps = ctx._args[0], ctx._args[1:]
        shape = tuple(full_shape(ts))
        need = tuple(ctx.needs_input_grad(i) for i in range(n))
        gf = _spread(g, red, shape)
        ds = derivs(need, *ts, *ps)
        return tuple(None if (d is None or not k) else gf * d for d, k in zip(ds, need))

    def jvp(ctx, *tans):
        ts = ctx.inputs
        red, ps = ctx._args[0], ctx._args[1:]
        shape = tuple(full_shape(ts))
        need = tuple(t is not None for t in tans)
        ds = derivs(need, *ts, *ps)
        tot = None
        for t, d in zip(tans, ds):
            if t is None or d is None:
                continue
            term = t * d
            tot = term if tot is None else tot + term
        if tot is None:
            return None
        if tuple(tot.shape) != shape:
            tot = tot.expand(shape)
        return _reduce_t(tot, red)

    op = Op(name, node, fwd, vjp, inputs=inputs, args=("reduction",) + params,
            saves=inputs, jvp=jvp)
    _POINTWISE.append(op)
    return op


_POINTWISE: list = []


def _where(c: Tensor, a: Any, b: Any) -> Tensor:
    from .pointwise import where
    return where(c, a, b)


# mse_loss
def _mse_elem(x, y):
    d = x - y
    return d * d


def _mse_d(need, x, y):
    d = (x - y) * 2
    return (d if need[0] else None, -d if need[1] else None)


MSE_LOSS = _pointwise_loss("mse_loss", "MseLossBackward0", _mse_elem, _mse_d,
                           ("self", "target"))


# smooth_l1_loss
def _sl1_elem(x, y, beta):
    z = np.abs(x - y)
    return np.where(z < beta, 0.5 * z * z / beta, z - 0.5 * beta).astype(z.dtype, copy=False)


def _sl1_d(need, x, y, beta):
    d = x - y
    s = _where(d.abs() < beta, d / beta, d.sign())
    return (s if need[0] else None, -s if need[1] else None)


SMOOTH_L1_LOSS = _pointwise_loss("smooth_l1_loss", "SmoothL1LossBackward0", _sl1_elem, _sl1_d,
                                 ("self", "target"), ("beta",))


# huber_loss
def _huber_elem(x, y, delta):
    z = np.abs(x - y)
    return np.where(z < delta, 0.5 * z * z, delta * (z - 0.5 * delta)).astype(z.dtype,
                                                                               copy=False)


def _huber_d(need, x, y, delta):
    s = (x - y).clamp(-delta, delta)
    return (s if need[0] else None, -s if need[1] else None)


HUBER_LOSS = _pointwise_loss("huber_loss", "HuberLossBackward0", _huber_elem, _huber_d,
                             ("self", "target"), ("delta",))


# l1_loss (an op only for the batching of smooth_l1 with beta=0, which PyTorch sends to l1)
def _l1_elem(x, y):
    return np.abs(x - y)


def _l1_d(need, x, y):
    s = (x - y).sign()
    return (s if need[0] else None, -s if need[1] else None)


L1_LOSS = _pointwise_loss("l1_loss", "L1LossBackward0", _l1_elem, _l1_d, ("self", "target"))


# soft_margin_loss
def _sm_elem(x, y):
    dt = np.result_type(x, y)
    return np.log1p(np.exp(-y * x)).astype(dt, copy=False)


def _sm_d(need, x, y):
    z = -y * x
    return (-y * z.sigmoid() if need[0] else None, None)


SOFT_MARGIN_LOSS = _pointwise_loss("soft_margin_loss", "SoftMarginLossBackward0", _sm_elem,
                                   _sm_d, ("self", "target"))


# binary_cross_entropy
def _clamped_log(a: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.maximum(np.log(a), -100)


def _bce_elem(x, y, w):
    out = -(y * _clamped_log(x) + (1 - y) * _clamped_log(1 - x))
    if w is not None:
        out = out * w
    return out.astype(np.result_type(x, y), copy=False)


def _tlog(t: Tensor) -> Tensor:
    return t.log().clamp_min(-100)


def _bce_d(need, x, y, w):
    wt = None if w is _ABSENT else w
    dx = dy = None
    if need[0]:
        dx = (x - y) / ((1 - x) * x).clamp_min(1e-12)
        if wt is not None:
            dx = dx * wt
    if need[1]:
        dy = _tlog(1 - x) - _tlog(x)
        if wt is not None:
            dy = dy * wt
    return (dx, dy, None)


BINARY_CROSS_ENTROPY = _pointwise_loss("binary_cross_entropy", "BinaryCrossEntropyBackward0",
                                       _bce_elem, _bce_d, ("self", "target", "weight"))


# binary_cross_entropy_with_logits
def _softplus_neg(x: np.ndarray) -> np.ndarray:
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0)


def _bcel_elem(x, y, w, pw):
    sp = _softplus_neg(x)
    if pw is not None:
        out = (1 - y) * x + (1 + (pw - 1) * y) * sp
    else:
        out = (1 - y) * x + sp
    if w is not None:
        out = out * w
    return out.astype(np.result_type(x, y), copy=False)


def _tsoftplus_neg(x: Tensor) -> Tensor:
    return (-x.abs()).exp().log1p() + (-x).clamp_min(0)


def _bcel_d(need, x, y, w, pw):
    wt = None if w is _ABSENT else w
    pwt = None if pw is _ABSENT else pw
    dx = dy = dpw = None
    if need[0]:
        s = x.sigmoid()
        if pwt is None:
            dx = s - y
        else:
            dx = (1 - y) + (1 + (pwt - 1) * y) * (s - 1)
    if need[1] or need[3]:
        sp = _tsoftplus_neg(x)
        if need[1]:
            dy = -x + (pwt - 1) * sp if pwt is not None else -x + sp * 0
        if need[3]:
            dpw = y * sp
    out = []
    for d in (dx, dy, None, dpw):
        out.append(d * wt if (d is not None and wt is not None) else d)
    return tuple(out)


BCE_WITH_LOGITS = _pointwise_loss("binary_cross_entropy_with_logits",
                                  "BinaryCrossEntropyWithLogitsBackward0", _bcel_elem, _bcel_d,
                                  ("self", "target", "weight", "pos_weight"))


def _pointwise_rule(c, args):
    """Batching rule of the elementwise loss ops: the unreduced loss on the padded physical
    operands, then the reduction over the logical dims."""
    from ._batching import _arr, _pad
    rank = max(len(s) for t, s in zip(c.ts, c.ls) if t is not _ABSENT)
    ts, arrs = list(c.ts), list(c.arrs)
    for i, (b, s) in enumerate(zip(c.bd, c.ls)):
        if c.ts[i] is _ABSENT:
            arrs[i] = None
            continue
        if b and len(s) < rank:
            ts[i] = _pad(ts[i], c.B, s, rank)
            arrs[i] = _arr(ts[i], c.arrs[i])
    out = apply(c.op, tuple(ts), tuple(arrs), (0,) + tuple(args[1:]))
    red = args[0]
    if red == 0 or out.ndim <= 1:
        return out
    dims = tuple(range(1, out.ndim))
    return out.sum(dims) if red == 2 else out.mean(dims)


def _apply_pw(op: Op, tensors: tuple, red: int, *params: Any) -> Tensor:
    arrs = tuple(None if t is _ABSENT else t._data for t in tensors)
    return apply(op, tensors, arrs, (red,) + params)


# ---------------------------------------------------------------------------- public: pointwise
def _check_float_input(t: Tensor, what: str) -> None:
    if t._data.dtype.kind in "biu":
        raise RuntimeError(f"\"{what}\" not implemented for '{_np_name(t)}'")


def mse_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
             reduction: str = "mean", weight: Optional[Tensor] = None) -> Tensor:
    """Mean squared error ``(input - target) ** 2``, reduced.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.mse_loss(ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([0.0, 0.0])).item()
    2.5
    """
    if _autocast.active:  # Note [Autocast]
        input, target = _autocast.fp32(input, target)
    if input._blevel or target._blevel:  # Note [Batched backward]
        r = _bcall(mse_loss, input, target, size_average, reduce, reduction, weight)
        if r is not NotImplemented:
            return r
    _size_warning(input, target)
    if weight is not None:
        if size_average is not None or reduce is not None:
            reduction = _legacy_reduction(size_average, reduce)
        i2, t2 = _bcast(*_promote(input, target))
        return _weighted((i2 - t2).pow(2), input, weight, reduction, True)
    red = _reduction(reduction, size_average, reduce)
    input, target = _bcast(*_promote(input, target))
    return _apply_pw(MSE_LOSS, (input, target), red)


def _weighted(loss: Tensor, input: Tensor, weight: Tensor, reduction: Any,
              mean_by_weight: bool) -> Tensor:
    """PyTorch's weighted mse/l1/huber: elementwise loss times ``weight`` (of the input's
    size); 'mean' divides by the summed weights (mse, l1) or the element count (huber)."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    out = loss * weight
    if reduction == "none":
        return out
    if reduction == "sum":
        return out.sum()
    if reduction == "mean":
        return out.sum() / weight.sum() if mean_by_weight else out.mean()
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', "
                     "'sum'.")


def l1_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
            reduction: str = "mean", weight: Optional[Tensor] = None) -> Tensor:
    """Mean absolute error ``|input - target|``, reduced (recorded as sub, abs, mean).

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.l1_loss(ndgrad.tensor([1.0, -3.0]), ndgrad.tensor([0.0, 0.0])).item()
    2.0
    """
    if _autocast.active:  # Note [Autocast]
        input, target = _autocast.fp32(input, target)
    _size_warning(input, target)
    if weight is not None and (size_average is not None or reduce is not None):
        reduction = _legacy_reduction(size_average, reduce)
        size_average = reduce = None
    red = _reduction(reduction, size_average, reduce) if weight is None else 0
    input, target = _bcast(*_promote(input, target))
    d = (input - target).abs()
    if weight is not None:
        return _weighted(d, input, weight, reduction, True)
    return _reduce_t(d, red)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """Squared error below ``beta`` (scaled by ``1/beta``), absolute error above it.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.smooth_l1_loss(ndgrad.tensor([0.5, 3.0]), ndgrad.tensor([0.0, 0.0])).item()
    1.3125
    """
    if _autocast.active:  # Note [Autocast]
        input, target = _autocast.fp32(input, target)
    if input._blevel or target._blevel:  # Note [Batched backward]
        r = _bcall(smooth_l1_loss, input, target, size_average, reduce, reduction, beta)
        if r is not NotImplemented:
            return r
    _size_warning(input, target)
    red = _reduction(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    input, target = _bcast(*_promote(input, target))
    if beta == 0.0:
        return _apply_pw(L1_LOSS, (input, target), red)
    return _apply_pw(SMOOTH_L1_LOSS, (input, target), red, float(beta))


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Optional[Tensor] = None) -> Tensor:
    """Squared error ``0.5 d**2`` below ``delta``, ``delta * (|d| - delta/2)`` above.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.huber_loss(ndgrad.tensor([0.5, 3.0]), ndgrad.tensor([0.0, 0.0])).item()
    1.3125
    """
    if _autocast.active:  # Note [Autocast]
        input, target = _autocast.fp32(input, target)
    if input._blevel or target._blevel:  # Note [Batched backward]
        r = _bcall(huber_loss, input, target, reduction, delta, weight)
        if r is not NotImplemented:
            return r
    _size_warning(input, target)
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise ValueError("Weights and input must have the same size.")
        if delta <= 0:
            raise RuntimeError("huber_loss does not support non-positive values for delta.")
        i2, t2 = _bcast(input, _like(target, input))
        return _weighted(_apply_pw(HUBER_LOSS, (i2, t2), 0, float(delta)), input, weight,
                         reduction, False)
    red = _reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    input, target = _bcast(input, _like(target, input))
    return _apply_pw(HUBER_LOSS, (input, target), red, float(delta))


def soft_margin_loss(input: Tensor, target: Tensor, size_average: Any = None,
                     reduce: Any = None, reduction: str = "mean") -> Tensor:
    """``log(1 + exp(-target * input))``, reduced.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> round(F.soft_margin_loss(ndgrad.tensor([0.0]), ndgrad.tensor([1.0])).item(), 4)
    0.6931
    """
    if _autocast.active:  # Note [Autocast]
        input, target = _autocast.fp32(input, target)
    if input._blevel or target._blevel:  # Note [Batched backward]
        r = _bcall(soft_margin_loss, input, target, size_average, reduce, reduction)
        if r is not NotImplemented:
            return r
    red = _reduction(reduction, size_average, reduce)
    _no_grad_arg(target, "soft_margin_loss", "target")
    input, target = _bcast(input, _like(target, input))
    return _apply_pw(SOFT_MARGIN_LOSS, (input, target), red)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                         size_average: Any = None, reduce: Any = None,
                         reduction: str = "mean") -> Tensor:
    """``-w (t log(x) + (1 - t) log(1 - x))`` with the logs clamped at -100.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.binary_cross_entropy(ndgrad.tensor([0.0]), ndgrad.tensor([1.0])).item()
    100.0
    """
    if _autocast.active:  # Note [Autocast]
        input, target, weight = _autocast.fp32(input, target, weight)
    if input._blevel or target._blevel or (weight is not None and weight._blevel):
        r = _bcall(binary_cross_entropy, input, target, weight, size_average, reduce,
                   reduction)
        if r is not NotImplemented:
            return r
    red = _reduction(reduction, size_average, reduce)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input "
                         f"size ({input.shape}) is deprecated. Please ensure they have the same "
                         "size.")
    _no_grad_arg(weight, "binary_cross_entropy", "weight")
    x = input._data
    if x.dtype.kind not in "fc" and not _is_float(input):
        raise RuntimeError(f"\"binary_cross_entropy\" not implemented for '{_np_name(input)}'")
    if target.dtype != input.dtype:
        raise RuntimeError(f"Found dtype {_dtype_name(target)} but expected "
                           f"{_dtype_name(input)}")
    if x.size and (np.any(x < 0) or np.any(x > 1) or np.any(np.isnan(x))):
        raise RuntimeError("all elements of input should be between 0 and 1")
    if weight is not None:
        from .rearrange import broadcast_tensors
        _, w = broadcast_tensors(input, weight)
        if w.dtype != input.dtype:
            w = w.to(input.dtype)
    else:
        w = _ABSENT
    return _apply_pw(BINARY_CROSS_ENTROPY, (input, target, w), red)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Optional[Tensor] = None, size_average: Any = None,
                                     reduce: Any = None, reduction: str = "mean",
                                     pos_weight: Optional[Tensor] = None) -> Tensor:
    """Binary cross entropy on logits, computed stably; ``pos_weight`` weighs positives.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> round(F.binary_cross_entropy_with_logits(ndgrad.tensor([0.0]),
    ...       ndgrad.tensor([1.0])).item(), 4)
    0.6931
    """
    if _autocast.active:  # Note [Autocast]
        input, target, weight, pos_weight = _autocast.fp32(input, target, weight, pos_weight)
    if input._blevel or target._blevel or (weight is not None and weight._blevel) or \
            (pos_weight is not None and pos_weight._blevel):
        r = _bcall(binary_cross_entropy_with_logits, input, target, weight, size_average,
                   reduce, reduction, pos_weight)
        if r is not NotImplemented:
            return r
    red = _reduction(reduction, size_average, reduce)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size "
                         f"({input.shape})")
    _no_grad_arg(weight, "binary_cross_entropy_with_logits", "weight")
    _no_grad_arg(pos_weight, "binary_cross_entropy_with_logits", "pos_weight")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise NotImplementedError(f"\"log_sigmoid_cpu\" not implemented for "
                                  f"'{input.dtype._torch_name}'")
    if not (target.dtype.is_floating_point or target.dtype.is_complex):
        # PyTorch computes into the target's dtype: an integer or bool target fails there
        if target.dtype is _dtype.bool:
            raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                               "supported. Use the `^` or `logical_xor()` operator instead.")
        raise RuntimeError(f"result type {input.dtype._torch_name} can't be cast to the "
                           f"desired output type {target.dtype._torch_name}")
    input = _like(input, target)    # PyTorch computes in the target's dtype
    shape = input.shape
    for t in (weight, pos_weight):
        if t is not None:
            try:
                np.broadcast_shapes(tuple(t.shape), tuple(shape))
            except ValueError:
                from ._util import broadcast_error
                raise broadcast_error(tuple(t.shape), tuple(shape)) from None
    w = _ABSENT if weight is None else (weight if weight.dtype == input.dtype
                                        else weight.to(input.dtype))
    pw = _ABSENT if pos_weight is None else (pos_weight if pos_weight.dtype == input.dtype
                                            else pos_weight.to(input.dtype))
    return _apply_pw(BCE_WITH_LOGITS, (input, target, w, pw), red)


# ---------------------------------------------------------------------------- nll_loss
def _nll_canon(x: np.ndarray, t: np.ndarray) -> tuple:
    """(N, C, rest) input and (N, rest) target views."""
    if x.ndim == 1:
        return x.reshape(1, -1), t.reshape(1)
    return x, t


def _nll_weights(t: np.ndarray, weight: Optional[Tensor], ignore_index: int,
                 dt: np.dtype) -> tuple:
    valid = t != ignore_index
    tc = np.where(valid, t, 0)
    if weight is not None:
        w = weight._data.astype(dt, copy=False)[tc]
    else:
        w = np.ones(t.shape, dt)
    return np.where(valid, w, 0).astype(dt, copy=False), tc, valid


def _nll_fwd(x, target, weight, red, ignore_index):
    xs, ts = _nll_canon(x, target._data)
    dt = x.dtype
    w, tc, valid = _nll_weights(ts, weight, ignore_index, dt)
    if xs.ndim == 2:
        picked = xs[np.arange(xs.shape[0]), tc]
    else:
        picked = np.take_along_axis(xs, tc[:, None], axis=1)[:, 0]
    out = np.where(valid, -w * picked, 0).astype(dt, copy=False)
    if red == 0:
        return out.reshape(target._data.shape)
    s = out.sum(dtype=dt)
    if red == 2:
        return np.asarray(s)
    return np.asarray(s / w.sum(dtype=dt)).astype(dt, copy=False)


def _nll_bwd_fwd(g, target, weight, red, ignore_index, shape):
    dt = g.dtype
    gx = np.zeros(shape, dt)
    gxs, ts = _nll_canon(gx, target._data)
    w, tc, valid = _nll_weights(ts, weight, ignore_index, dt)
    if red == 0:
        coef = -w * g.reshape(ts.shape)
    elif red == 2:
        coef = -w * g
    else:
        coef = -w * (g / w.sum(dtype=dt))
    # Only the targets counted are written, as in PyTorch: an ignored one's gradient stays +0
    # even when nothing is counted (the mean is nan: 0/0, the gradient 0 there).
    coef = np.where(valid, coef, 0).astype(dt, copy=False)
    if gxs.ndim == 2:
        gxs[np.arange(gxs.shape[0]), tc] = coef
    else:
        np.put_along_axis(gxs, tc[:, None], coef[:, None], axis=1)
    return gx


def _nll_vjp(ctx, g):
    target, weight, red, ii = ctx._args
    return apply(NLL_BACKWARD, (g,), (g._data,),
                 (target, weight, red, ii, ctx.input_shape(0)))


def _nll_jvp(ctx, t):
    return apply(ctx._op, (t,), (t._data,), ctx._args)


def _nll_bwd_vjp(ctx, gg):
    target, weight, red, ii, _ = ctx._args
    return apply(NLL_LOSS, (gg,), (gg._data,), (target, weight, red, ii))


def _nll_bwd_jvp(ctx, t):
    return apply(NLL_BACKWARD, (t,), (t._data,), ctx._args)


_NLL_ARGS = ("target", "weight", "reduction", "ignore_index")
NLL_LOSS = Op("nll_loss", "NllLossBackward0", _nll_fwd, _nll_vjp, args=_NLL_ARGS,
              saves=("target", "weight"), jvp=_nll_jvp)
NLL_LOSS2D = Op("nll_loss2d", "NllLoss2DBackward0", _nll_fwd, _nll_vjp, args=_NLL_ARGS,
                saves=("target", "weight"), jvp=_nll_jvp)
NLL_BACKWARD = Op("nll_loss_backward", "NllLossBackwardBackward0", _nll_bwd_fwd, _nll_bwd_vjp,
                  inputs=("grad_output",), args=_NLL_ARGS + ("self_shape",),
                  saves=("target", "weight"), jvp=_nll_bwd_jvp)


def _rows_rule(c, args):
    """Batching rule by rows: the op per row of the batch, stacked (targets are unbatched)."""
    from .shape import select, stack
    rows = [apply(c.op, (select(c.ts[0], 0, k),), (c.arrs[0][k],), args) for k in range(c.B)]
    return stack(rows, 0)


def _check_target_dtype(target: Tensor) -> None:
    if target._data.dtype not in (np.int64, np.uint8):
        nm = {"torch.float32": "Float", "torch.float64": "Double", "torch.int32": "Int",
              "torch.int16": "Short", "torch.int8": "Char", "torch.bool": "Bool",
              "torch.float16": "Half", "torch.bfloat16": "BFloat16"}.get(
            str(target.dtype).replace("ndgrad", "torch"), str(target.dtype))
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {nm}")


def _nll_checks(input: Tensor, target: Tensor, weight: Optional[Tensor],
                ignore_index: int) -> None:
    nd = input.dim()
    if nd < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {nd})")
    if nd != 1 and input.shape[0] != target.shape[0] if target.dim() else nd != 1:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({target.shape[0] if target.dim() else 1}).")
    C = input.shape[0] if nd == 1 else input.shape[1]
    if nd <= 2:
        if target.dim() > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    else:
        want = (input.shape[0],) + tuple(input.shape[2:])
        if tuple(target.shape) != want:
            raise RuntimeError(f"Expected target size {list(want)}, got {list(target.shape)}")
    _check_target_dtype(target)
    if weight is not None and (weight.dim() != 1 or weight.numel() != C):
        raise RuntimeError(f"weight tensor should be defined either for all {C} classes or no "
                           f"classes but got weight tensor of shape: {list(weight.shape)}")
    if weight is not None and weight.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {_dtype_name(input)} but found "
                           f"{_dtype_name(weight)}")
    t = target._data
    bad = (t != ignore_index) & ((t < 0) | (t >= C))
    if bad.any():
        raise IndexError(f"Target {int(t[bad].reshape(-1)[0])} is out of bounds.")


def nll_loss(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
             size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
             reduction: str = "mean") -> Tensor:
    """Negative log likelihood of class ``target`` (1-d, 2-d or K-d inputs); ``weight``
    rescales classes, ``ignore_index`` drops targets; 'mean' divides by the summed weights.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.nll_loss(ndgrad.tensor([[-1.0, -2.0]]), ndgrad.tensor([1])).item()
    2.0
    """
    if _autocast.active:  # Note [Autocast]
        input, target, weight = _autocast.fp32(input, target, weight)
    if input._blevel or (weight is not None and weight._blevel):  # Note [Batched backward]
        r = _bcall(nll_loss, input, target, weight, size_average, ignore_index, reduce,
                   reduction)
        if r is not NotImplemented:
            return r
    red = _reduction(reduction, size_average, reduce)
    _nll_checks(input, target, weight, ignore_index)
    _no_grad_arg(weight, "nll_loss", "weight")
    if weight is not None:
        weight = weight.detach()
    if input._data.dtype.kind not in "fc" and not _is_float(input):
        raise RuntimeError(f"\"nll_loss_out_frame\" not implemented for '{_np_name(input)}'")
    args = (target, weight, red, int(ignore_index))
    nd = input.dim()
    if nd <= 2:
        return apply(NLL_LOSS, (input,), (input._data,), args)
    if nd == 4:
        return apply(NLL_LOSS2D, (input,), (input._data,), args)
    N, C = input.shape[0], input.shape[1]
    x4 = input.reshape(N, C, 1, -1) if input.numel() else input.reshape(N, C, 1, -1)
    t4 = target.reshape(N, 1, -1)
    out = apply(NLL_LOSS2D, (x4,), (x4._data,), (t4, weight, red, int(ignore_index)))
    return out.reshape(target.shape) if red == 0 else out


def cross_entropy(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                  size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy between logits ``input`` (class dim 1, or 0 for 1-d) and class indices
    or class probabilities ``target``; ``weight``, ``ignore_index``, ``label_smoothing``.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> round(F.cross_entropy(ndgrad.tensor([[0.0, 0.0]]), ndgrad.tensor([1])).item(), 4)
    0.6931
    """
    if _autocast.active:  # Note [Autocast]
        input, target, weight = _autocast.fp32(input, target, weight)
    if input._blevel or target._blevel or (weight is not None and weight._blevel):
        r = _bcall(cross_entropy, input, target, weight, size_average, ignore_index, reduce,
                   reduction, label_smoothing)
        if r is not NotImplemented:
            return r
    red = _reduction(reduction, size_average, reduce)
    if label_smoothing > 1.0:     # a negative one is no smoothing, as in torch
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing}")
    nd = input.dim()
    if nd < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {nd})")
    cdim = 0 if nd == 1 else 1
    C = input.shape[cdim]
    # a target shaped like the input holds class probabilities (any floating dtype: the
    # products promote, as torch's)
    probs = tuple(target.shape) == tuple(input.shape)
    if probs and not target.is_floating_point():
        raise RuntimeError(f"Expected floating point type for target with class probabilities, "
                           f"got {_dtype_name(target)}")
    if probs and ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
        # (linear_cross_entropy words it "ignore_index cannot be specified when target
        # contains probabilities"; see there)
    log_softmax = _log_softmax
    if probs:
        if weight is not None and (weight.dim() != 1 or weight.numel() != C):
            raise RuntimeError(f"weight tensor should be defined either for all {C} classes or "
                               f"no classes but got weight tensor of shape: "
                               f"{list(weight.shape)}")
        logp = log_softmax(input, cdim)
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / C
        prod = logp * target
        if weight is not None:
            prod = prod * _class_view(weight, nd, cdim)
        if red == 0:
            return -prod.sum(cdim)
        s = -prod.sum()
        if red == 2:
            return s
        n = input.numel() // C if C else 0
        return s / n
    _nll_checks(input, target, weight, ignore_index)
    logp = log_softmax(input, cdim)
    nll = nll_loss(logp, target, weight, None, ignore_index, None,
                   ("none", "mean", "sum")[red])
    if label_smoothing <= 0:
        return nll
    ign = target == ignore_index
    if weight is not None:
        smooth = -(logp * _class_view(weight, nd, cdim)).sum(cdim)
    else:
        smooth = -logp.sum(cdim)
    smooth = smooth.masked_fill(ign, 0.0)
    if red == 1:
        if weight is not None:
            wt = weight.detach()._data[np.where(ign._data, 0, target._data)]
            denom = _wrap(np.asarray(np.where(ign._data, 0, wt).sum(), input._data.dtype))
            smooth = smooth.sum() / denom
        else:
            smooth = smooth.sum() / _wrap(np.asarray(int((~ign._data).sum()),
                                                     input._data.dtype))
    elif red == 2:
        smooth = smooth.sum()
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / C)


# ---------------------------------------------------------------------------- fused log_softmax
# Note [Cross entropy speed path]
# cross_entropy records LogSoftmaxBackward0 under NllLossBackward0, as PyTorch does. Its
# log-softmax is an op of this family with the same node name whose forward and backward each
# make as few full-size arrays as NumPy allows (a 512x1000 array costs more to allocate than
# to fill): forward ``s = x - max; s -= log(sum(exp(s)))`` (two arrays), backward
# ``g - exp(y) * sum(g)`` as one op (``_log_softmax_backward_data``, one array), whose own VJP
# is written with ndgrad ops (second order).
def _ls_fwd(x: np.ndarray, dim: int) -> np.ndarray:
    if x.size == 0:
        return x.copy()
    m = np.max(x, axis=dim, keepdims=True)
    m = np.where(np.isfinite(m), m, 0).astype(x.dtype, copy=False)
    s = np.subtract(x, m)
    e = np.exp(s)
    lse = np.log(np.sum(e, axis=dim, keepdims=True))
    del e
    np.subtract(s, lse, out=s)
    return s


def _ls_vjp(ctx, g):
    (y,) = ctx.saved
    (dim,) = ctx._args
    return apply(_LS_BWD, (g, y), (g._data, y._data), (dim,))


def _ls_jvp(ctx, t):
    y, dim = ctx.result, ctx._args[0]
    return t - (t * y.exp()).sum(dim, keepdim=True)


def _ls_bwd_fwd(g: np.ndarray, y: np.ndarray, dim: int) -> np.ndarray:
    r = np.exp(y)
    r *= np.sum(g, axis=dim, keepdims=True)
    np.subtract(g, r, out=r)
    return r


def _ls_bwd_vjp(ctx, gg):
    g, y = ctx.saved
    (dim,) = ctx._args
    e = y.exp()
    out = [None, None]
    if ctx.needs_input_grad(0):
        out[0] = gg - (gg * e).sum(dim, keepdim=True)
    if ctx.needs_input_grad(1):
        out[1] = -gg * e * g.sum(dim, keepdim=True)
    return tuple(out)


def _ls_bwd_jvp(ctx, tg, ty):
    g, y = ctx.inputs
    dim = ctx._args[0]
    e = y.exp()
    out = None
    if tg is not None:
        out = tg - e * tg.sum(dim, keepdim=True)
    if ty is not None:
        r = -(e * ty) * g.sum(dim, keepdim=True)
        out = r if out is None else out + r
    return out


_LOG_SOFTMAX = Op("_ce_log_softmax", "LogSoftmaxBackward0", _ls_fwd, _ls_vjp, args=("dim",),
                  saves=("result",), jvp=_ls_jvp)
_LS_BWD = Op("_log_softmax_backward_data", "LogSoftmaxBackwardDataBackward0", _ls_bwd_fwd,
             _ls_bwd_vjp, inputs=("grad_output", "output"), args=("dim",),
             saves=("grad_output", "output"), jvp=_ls_bwd_jvp)


def _ls_bwd_rule(c, args):
    from ._batching import _batch_expand
    ts = tuple(t if b else _batch_expand(t, c.B) for t, b in zip(c.ts, c.bd))
    return apply(c.op, ts, tuple(t._data for t in ts), (args[0] + 1,))


def _log_softmax(x: Tensor, dim: int) -> Tensor:
    if x._data.dtype.kind != "f" or x._blevel:
        from .softmax import log_softmax
        return log_softmax(x, dim)
    return apply(_LOG_SOFTMAX, (x,), (x._data,), (dim,))


def _dtype_name(t: Tensor) -> str:
    """torch's scalar type name (Float, Long, Bool ...)."""
    return t.dtype._torch_name


def _class_view(w: Tensor, nd: int, cdim: int) -> Tensor:
    if nd <= 2:
        return w
    return w.reshape((w.shape[0],) + (1,) * (nd - 2))


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *,
                         linear_bias: Optional[Tensor] = None, weight: Optional[Tensor] = None,
                         reduction: str = "mean", ignore_index: Optional[int] = None,
                         label_smoothing: float = 0.0, options: Any = None) -> Tensor:
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> round(F.linear_cross_entropy(ndgrad.ones(1, 2), ndgrad.zeros(3, 2),
    ...       ndgrad.tensor([0])).item(), 4)
    1.0986
    """
    from .linalg import matmul
    if input.dim() not in (1, 2):
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.dim()}")
    if input.shape[-1] != linear_weight.shape[-1]:
        raise RuntimeError(f"expected equal input and linear_weight last dimensions "
                           f"(in_features), got {input.shape[-1]} and {linear_weight.shape[-1]}, "
                           "respectively")
    w = linear_weight
    out_shape = tuple(w.shape[:-1])
    if len(out_shape) > 1 and input.dim() == 1:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(w.shape)} requires batched input, (N, {input.shape[-1]}), "
                           f"got unbatched input with shape {tuple(input.shape)}")
    if linear_bias is not None and tuple(linear_bias.shape) != out_shape:
        raise RuntimeError(f"expected linear_bias shape {out_shape}, got "
                           f"{tuple(linear_bias.shape)}")
    if linear_bias is not None and options is None and \
            len({input.dtype, w.dtype, linear_bias.dtype}) > 1:
        # torch's reference path is addmm: the bias against the weight, then the input against
        # the weight (its chunked path, with options, multiplies first: mm's refusal)
        if linear_bias.dtype != w.dtype:
            raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                               f"{_dtype_name(linear_bias)} and {_dtype_name(w)}")
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{_dtype_name(input)} and {_dtype_name(w)}")
    w2 = w.reshape(-1, w.shape[-1]) if w.dim() != 2 else w
    logits = matmul(input, w2.t())
    if linear_bias is not None:
        logits = logits + linear_bias.reshape(-1)
    if len(out_shape) != 1:
        logits = logits.reshape(tuple(input.shape[:-1]) + out_shape)
    if ignore_index is not None and _is_float(target) and \
            tuple(target.shape) == tuple(logits.shape):
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    return cross_entropy(logits, target, weight, None, -100 if ignore_index is None
                         else ignore_index, None, reduction, label_smoothing)


# ---------------------------------------------------------------------------- compositions
def kl_div(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """Kullback-Leibler divergence ``target * (log(target) - input)`` (``input`` in log
    space; ``log_target``: so is ``target``); 'batchmean' divides by the batch size.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.kl_div(ndgrad.tensor([[0.0]]), ndgrad.tensor([[1.0]]), reduction="batchmean").item()
    0.0
    """
    if _autocast.active:  # Note [Autocast]
        input, target = _autocast.fp32(input, target)
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    elif reduction == "mean":
        warn_user("reduction: 'mean' divides the total loss by both the batch size and the "
                  "support size.'batchmean' divides only by the batch size, and aligns with "
                  "the KL div math definition.'mean' will be changed to behave the same as "
                  "'batchmean' in the next major release.")
    if reduction == "batchmean":
        red = 2
    else:
        red = _reduction(reduction)
    if log_target:
        out = target.exp() * (target - input)
    else:
        from .binary import xlogy
        out = xlogy(target, target) - target * input
    if reduction == "batchmean":
        if input.dim() != 0:
            return out.sum() / input.shape[0]
        return out.sum()
    return _reduce_t(out, red)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average: Any = None, eps: float = 1e-8, reduce: Any = None,
                     reduction: str = "mean") -> Tensor:
    """Poisson negative log likelihood (``log_input``: ``exp(x) - t x``, else
    ``x - t log(x + eps)``); ``full`` adds Stirling's term for ``t > 1``.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.poisson_nll_loss(ndgrad.tensor([0.0]), ndgrad.tensor([1.0])).item()
    1.0
    """
    if _autocast.active:  # Note [Autocast]
        input, target = _autocast.fp32(input, target)
    red = _reduction(reduction, size_average, reduce)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        st = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + st.masked_fill(target <= 1, 0)
    return _reduce_t(loss, red)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Any, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """Gaussian negative log likelihood ``0.5 (log(var) + (x - t)**2 / var)`` with ``var``
    clamped at ``eps`` (without gradient through the clamp); ``full`` adds ``0.5 log(2 pi)``.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.gaussian_nll_loss(ndgrad.tensor([1.0]), ndgrad.tensor([1.0]), ndgrad.tensor([1.0])).item()
    0.0
    """
    if not isinstance(var, Tensor):
        var = full_like(input, float(var))
        if float(var._data.reshape(-1)[0]) < 0 if var.numel() else False:
            raise ValueError("var has negative entry/entries")
    if var.numel() and bool(np.any(var._data < 0)):
        raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        ish, vsh = tuple(input.shape), tuple(var.shape)
        if ish[:-1] == vsh:
            var = var.unsqueeze(-1)
        elif len(ish) == len(vsh) and sum(v for i, v in zip(ish, vsh) if i != v) == 1:
            pass      # one dim of var is 1 where input's is not: broadcast (homoscedastic)
        else:
            raise ValueError("var is of incorrect size")
    red = _RED.get(reduction) if isinstance(reduction, str) else None
    if red is None:
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    from ..autograd.grad_mode import no_grad
    with no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce_t(loss, red)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          size_average: Any = None, reduce: Any = None,
                          reduction: str = "mean") -> Tensor:
    """``1 - cos(x1, x2)`` where ``target == 1``, ``max(0, cos(x1, x2) - margin)`` where
    ``target == -1``.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.cosine_embedding_loss(ndgrad.tensor([[1.0, 0.0]]), ndgrad.tensor([[1.0, 0.0]]),
    ...                         ndgrad.tensor([1.0])).item()
    0.0
    """
    if _autocast.active:  # Note [Autocast]
        input1, input2, target = _autocast.fp32(input1, input2, target)
    red = _reduction(reduction, size_average, reduce)
    td = target.dim()
    if td > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input1.dim() != td + 1 or input2.dim() != td + 1:
        raise RuntimeError(f"{td}D target tensor expects {td + 1}D input tensors, but found "
                           f"inputs with sizes {list(input1.shape)} and {list(input2.shape)}.")
    EPS = 1e-12
    d = td
    prod = (input1 * input2).sum(d)
    m1 = (input1 * input1).sum(d) + EPS
    m2 = (input2 * input2).sum(d) + EPS
    cos = prod / (m1 * m2).sqrt()
    zeros = cos * 0
    pos = 1 - cos
    neg = (cos - margin).clamp_min(0)
    out = _where(target == 1, pos, zeros) + _where(target == -1, neg, zeros)
    return _reduce_t(out, red)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                        size_average: Any = None, reduce: Any = None,
                        reduction: str = "mean") -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``, reduced.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.margin_ranking_loss(ndgrad.tensor([1.0]), ndgrad.tensor([2.0]),
    ...                       ndgrad.tensor([1.0])).item()
    1.0
    """
    if _autocast.active:  # Note [Autocast]
        input1, input2, target = _autocast.fp32(input1, input2, target)
    red = _reduction(reduction, size_average, reduce)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {input1.shape}, input2: {input2.shape}, "
                           f"target: {target.shape} ".replace("ndgrad.Size", "torch.Size"))
    out = (-target * (input1 - input2) + margin).clamp_min(0)
    return _reduce_t(out, red)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         size_average: Any = None, reduce: Any = None,
                         reduction: str = "mean") -> Tensor:
    """``x`` where ``target == 1``, ``max(0, margin - x)`` where ``target == -1``.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> x = ndgrad.tensor([0.3, 0.5])
    >>> round(F.hinge_embedding_loss(x, ndgrad.tensor([1.0, -1.0])).item(), 4)
    0.4
    """
    if _autocast.active:  # Note [Autocast]
        input, target = _autocast.fp32(input, target)
    red = _reduction(reduction, size_average, reduce)
    zeros = input * 0
    margin_clamp = (margin - input).clamp_min(0)
    out_margin = _where(target != 1, margin_clamp, zeros)
    out_self = _where(target != -1, input, zeros)
    return _reduce_t(out_margin + out_self, red)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                                size_average: Any = None, reduce: Any = None,
                                reduction: str = "mean") -> Tensor:
    """Per sample, the mean over classes of ``-(t log sigmoid(x) + (1-t) log sigmoid(-x))``.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> round(F.multilabel_soft_margin_loss(ndgrad.tensor([[0.0]]),
    ...       ndgrad.tensor([[1.0]])).item(), 4)
    0.6931
    """
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    loss = -(target * _logsigmoid(input) + (1 - target) * _logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    C = input.shape[-1] if input.dim() else 1
    loss = loss.sum(-1 if input.dim() else ()) / C if input.dim() else loss
    red = _RED.get(reduction) if isinstance(reduction, str) else None
    if red is None:         # checked after the loss, with torch's wording for this loss
        raise ValueError(f"{reduction} is not valid")
    return _reduce_t(loss, red)


def _logsigmoid(x: Tensor) -> Tensor:
    return -_tsoftplus_neg(x)


# ---------------------------------------------------------------------------- margin ops
def _mm_setup(x: np.ndarray, t: np.ndarray) -> tuple:
    x2 = x.reshape(1, -1) if x.ndim <= 1 else x
    return x2, t.reshape(-1)


def _multi_margin_terms(x, target, weight, p, margin):
    x2, t = _mm_setup(x, target._data)
    N, C = x2.shape
    xt = x2[np.arange(N), t][:, None]
    z = margin - xt + x2
    h = np.maximum(z, 0)
    if p == 2:
        h = h * h
    if weight is not None:
        h = h * weight._data.astype(x.dtype)[t][:, None]
    h[np.arange(N), t] = 0
    return x2, t, z, h, N, C


def _multi_margin_fwd(x, target, weight, p, margin, red):
    x2, t, z, h, N, C = _multi_margin_terms(x, target, weight, p, margin)
    out = (h.sum(1) / C).astype(x.dtype, copy=False)
    if red == 0:
        return out.reshape(target._data.shape)
    return _reduce_np(out, red)


def _multi_margin_grad(x, target, weight, p, margin):
    x2, t, z, h, N, C = _multi_margin_terms(x, target, weight, p, margin)
    d = (z > 0).astype(x.dtype)
    if p == 2:
        d = 2 * np.maximum(z, 0)
    if weight is not None:
        d = d * weight._data.astype(x.dtype)[t][:, None]
    d[np.arange(N), t] = 0
    d[np.arange(N), t] = -d.sum(1)
    return (d / C).reshape(x.shape)


def _multi_margin_vjp(ctx, g):
    x = ctx.saved[0]
    target, weight, p, margin, red = ctx._args
    D = _wrap(_multi_margin_grad(x._data, target, weight, p, margin))
    shape = x.shape
    if x.dim() <= 1:
        return D * g.reshape(())
    N = shape[0]
    if red == 0:
        gs = g.reshape(N, 1)
    elif red == 1:
        gs = g / N
    else:
        gs = g
    return D * gs


MULTI_MARGIN_LOSS = Op("multi_margin_loss", "MultiMarginLossBackward0", _multi_margin_fwd,
                       _multi_margin_vjp, args=("target", "weight", "p", "margin", "reduction"),
                       saves=("self", "target", "weight"),
                       jvp=not_implemented("multi_margin_loss"))


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Optional[Tensor] = None, size_average: Any = None,
                      reduce: Any = None, reduction: str = "mean") -> Tensor:
    """Multi-class hinge loss: per sample ``sum_{i != y} max(0, margin - x[y] + x[i])**p / C``.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> round(F.multi_margin_loss(ndgrad.tensor([[0.1, 0.2, 0.4, 0.8]]),
    ...       ndgrad.tensor([3])).item(), 4)
    0.325
    """
    if _autocast.active:  # Note [Autocast]
        input, target, weight = _autocast.fp32(input, target, weight)
    red = _reduction(reduction, size_average, reduce)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    _no_grad_arg(weight, "multi_margin_loss", "weight")
    nd = input.dim()
    if not ((nd <= 1 and input.numel() > 0) or (nd == 2 and input.shape[1] > 0)):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}")
    C = input.shape[-1] if nd else 1
    N = input.shape[0] if nd == 2 else 1
    if target.dim() > 1 or target.numel() != N:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to "
                           f"the number of input samples (batch size). Expected target size "
                           f"[{N}], but got {list(target.shape)}. Input has shape "
                           f"{list(input.shape)}.")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    if weight is not None and weight.numel() != C:
        raise RuntimeError(f"inconsistent weight size, expected {C} but got "
                           f"{list(weight.shape)}")
    t = target._data
    if t.dtype.kind not in "iu":
        raise RuntimeError(f"expected scalar type Long but found {_dtype_name(target)}")
    if weight is not None and weight.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {_dtype_name(input)} but found "
                           f"{_dtype_name(weight)}")
    if t.size and (np.any(t < 0) or np.any(t >= C)):
        raise RuntimeError("target out of range")
    x = input if nd else input.reshape(1)
    w = weight.detach() if weight is not None else None
    out = apply(MULTI_MARGIN_LOSS, (x,), (x._data,), (target, w, int(p), float(margin), red))
    if nd == 0 and red == 0:
        return out.reshape(())
    return out


def _mlm_fwd_parts(x, target):
    x2 = x.reshape(1, -1) if x.ndim <= 1 else x
    t = target._data.reshape(x2.shape)
    N, C = x2.shape
    # targets: the prefix before the first -1
    valid = np.cumprod(t >= 0, axis=1).astype(bool)
    is_target = np.zeros((N, C), bool)
    rows, cols = np.nonzero(valid)
    is_target[rows, t[rows, cols]] = True
    return x2, t, valid, is_target, N, C


def _multilabel_margin_fwd(x, target, red):
    x2, t, valid, is_target, N, C = _mlm_fwd_parts(x, target)
    tc = np.where(valid, t, 0)
    xt = np.take_along_axis(x2, tc, 1)                           # (N, C) target scores
    z = 1 - xt[:, :, None] + x2[:, None, :]                      # (N, j, i)
    mask = valid[:, :, None] & ~is_target[:, None, :]
    h = np.where(mask, np.maximum(z, 0), 0)
    out = (h.sum((1, 2)) / C).astype(x.dtype, copy=False)
    if x.ndim <= 1:
        out = out.reshape(())
    return _reduce_np(out, red) if red else out


def _multilabel_margin_grad(x, target):
    x2, t, valid, is_target, N, C = _mlm_fwd_parts(x, target)
    tc = np.where(valid, t, 0)
    xt = np.take_along_axis(x2, tc, 1)
    z = 1 - xt[:, :, None] + x2[:, None, :]
    act = (valid[:, :, None] & ~is_target[:, None, :] & (z > 0)).astype(x.dtype)
    d = act.sum(1)                                   # + for each non-target i
    minus = act.sum(2)                               # - for each target j (by position)
    np.add.at(d, (np.repeat(np.arange(N), C), tc.reshape(-1)), -minus.reshape(-1))
    return (d / C).reshape(x.shape)


def _multilabel_margin_vjp(ctx, g):
    x = ctx.saved[0]
    target, red = ctx._args
    D = _wrap(_multilabel_margin_grad(x._data, target))
    if x.dim() <= 1:
        return D * g
    N = x.shape[0]
    if red == 0:
        return D * g.reshape(N, 1)
    return D * (g / N if red == 1 else g)


MULTILABEL_MARGIN_LOSS = Op("multilabel_margin_loss", "MultilabelMarginLossBackward0",
                            _multilabel_margin_fwd, _multilabel_margin_vjp,
                            args=("target", "reduction"), saves=("self", "target"),
                            jvp=not_implemented("multilabel_margin_loss_forward"))


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: Any = None,
                           reduce: Any = None, reduction: str = "mean") -> Tensor:
    """Multi-label hinge loss: targets are class indices padded with -1.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> round(F.multilabel_margin_loss(ndgrad.tensor([[0.1, 0.2, 0.4, 0.8]]),
    ...       ndgrad.tensor([[3, 0, -1, 1]])).item(), 4)
    0.85
    """
    if _autocast.active:  # Note [Autocast]
        input, target = _autocast.fp32(input, target)
    red = _reduction(reduction, size_average, reduce)
    nd = input.dim()
    if not ((nd <= 1 and input.numel() > 0) or (nd == 2 and input.shape[1] > 0)):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}")
    if tuple(target.shape) != tuple(input.shape) and not (nd == 0 and target.numel() == 1):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    if target._data.dtype.kind not in "iu":
        raise RuntimeError(f"expected scalar type Long but found {_dtype_name(target)}")
    C = input.shape[-1] if nd else 1
    t = target._data
    if t.size and (np.any(t < -1) or np.any(t >= C)):
        raise RuntimeError(f"isTargetCorrect INTERNAL ASSERT FAILED: target out of range "
                           f"[-1, {C})")
    x = input if nd else input.reshape(1)
    out = apply(MULTILABEL_MARGIN_LOSS, (x,), (x._data,), (target, red))
    return out


# ---------------------------------------------------------------------------- triplet
def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average: Any = None, reduce: Any = None,
                        reduction: str = "mean") -> Tensor:
    """``max(d(a, p) - d(a, n) + margin, 0)`` with ``pairwise_distance`` (``swap``: the
    smaller of ``d(a, n)`` and ``d(p, n)``).

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> a = ndgrad.tensor([[0.0, 0.0]])
    >>> round(F.triplet_margin_loss(a, a, a + 1).item(), 4)
    0.0
    """
    if _autocast.active:  # Note [Autocast]
        anchor, positive, negative = _autocast.fp32(anchor, positive, negative)
    red = _reduction(reduction, size_average, reduce)
    a, pd, nd_ = anchor.dim(), positive.dim(), negative.dim()
    if not (a == pd == nd_):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have "
                           f"the same number of dimensions, but got: anchor {a}D, positive "
                           f"{pd}D, and negative {nd_}D inputs")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    from .nn_distance import pairwise_distance
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        from .pointwise import minimum
        d_neg = minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    out = (margin + d_pos - d_neg).clamp_min(0)
    return _reduce_t(out, red)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Optional[Callable] = None,
                                      margin: float = 1.0, swap: bool = False,
                                      reduction: str = "mean") -> Tensor:
    """Triplet loss with any distance function (default ``pairwise_distance``).

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> a = ndgrad.tensor([[0.0, 0.0]])
    >>> round(F.triplet_margin_with_distance_loss(a, a, a + 1).item(), 4)
    0.0
    """
    red = _RED.get(reduction) if isinstance(reduction, str) else None
    if red is None:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a, pd, nd_ = anchor.dim(), positive.dim(), negative.dim()
    if not (a == pd == nd_):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have "
                           f"the same number of dimensions, but got: anchor {a}D, positive "
                           f"{pd}D, and negative {nd_}D inputs")
    from .nn_distance import pairwise_distance
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        from .pointwise import minimum
        d_neg = minimum(d_neg, dist(positive, negative))
    out = (margin + d_pos - d_neg).clamp_min(0)
    return _reduce_t(out, red)


# ---------------------------------------------------------------------------- ctc_loss
_NEG_INF = -np.inf


def _lse3(a, b, c):
    m = np.maximum(np.maximum(a, b), c)
    ms = np.where(np.isfinite(m), m, 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        r = np.log(np.exp(a - ms) + np.exp(b - ms) + np.exp(c - ms)) + ms
    return np.where(np.isneginf(m), _NEG_INF, r)


def _ctc_setup(lp, targets, il, tl, blank):
    T, N, C = lp.shape
    tl = np.asarray(tl, np.int64)
    il = np.asarray(il, np.int64)
    S = int(tl.max()) if tl.size else 0
    tg = np.zeros((N, S), np.int64)
    t = targets
    if t.ndim == 1:
        offs = np.concatenate([[0], np.cumsum(tl)[:-1]])
        for n in range(N):
            tg[n, :tl[n]] = t[offs[n]:offs[n] + tl[n]]
    else:
        for n in range(N):
            tg[n, :tl[n]] = t[n, :tl[n]]
    L = 2 * S + 1
    ext = np.full((N, L), blank, np.int64)
    ext[:, 1::2] = tg
    # s-2 transitions: a label that differs from the label two positions before
    skip = np.zeros((N, L), bool)
    if L > 2:
        skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    valid_s = np.arange(L)[None, :] < (2 * tl + 1)[:, None]
    return T, N, C, il, tl, L, ext, skip, valid_s


def _ctc_alpha(lp, setup):
    T, N, C, il, tl, L, ext, skip, valid_s = setup
    dt = lp.dtype
    alpha = np.full((T, N, L), _NEG_INF, dt)
    nidx = np.arange(N)[:, None]
    if T == 0:
        return alpha
    lpe = lp[:, nidx, ext]                     # (T, N, L): log prob of each extended label
    a = np.full((N, L), _NEG_INF, dt)
    a[:, 0] = lpe[0, :, 0]
    if L > 1:
        a[:, 1] = np.where(tl > 0, lpe[0, :, 1], _NEG_INF)
    a = np.where(valid_s, a, _NEG_INF)
    alpha[0] = a
    for t in range(1, T):
        prev1 = np.concatenate([np.full((N, 1), _NEG_INF, dt), a[:, :-1]], 1)
        prev2 = np.concatenate([np.full((N, 2), _NEG_INF, dt), a[:, :-2]], 1)[:, :L]
        prev2 = np.where(skip, prev2, _NEG_INF)
        a = _lse3(a, prev1, prev2) + lpe[t]
        a = np.where(valid_s, a, _NEG_INF).astype(dt, copy=False)
        alpha[t] = a
    return alpha


def _ctc_nll(alpha, setup):
    T, N, C, il, tl, L, ext, skip, valid_s = setup
    n = np.arange(N)
    last = np.clip(il - 1, 0, None)
    aT = alpha[last, n]                                   # (N, L)
    e1 = aT[n, 2 * tl]
    e2 = np.where(tl > 0, aT[n, np.maximum(2 * tl - 1, 0)], _NEG_INF)
    m = np.maximum(e1, e2)
    ms = np.where(np.isfinite(m), m, 0)
    ll = np.log(np.exp(e1 - ms) + np.exp(e2 - ms)) + ms
    ll = np.where(np.isneginf(m), _NEG_INF, ll)
    if T == 0:
        ll = np.where(tl == 0, 0.0, _NEG_INF)
    return -ll


def _ctc_grad(lp, alpha, nll, setup):
    """d nll_n / d log_probs[t, n, c] as PyTorch defines it (log_probs taken as the output of a
    log-softmax): ``exp(lp) - sum_{s: ext_s = c} exp(alpha + beta - lp + nll)``."""
    T, N, C, il, tl, L, ext, skip, valid_s = setup
    dt = lp.dtype
    nidx = np.arange(N)[:, None]
    lpe = lp[:, nidx, ext]
    beta = np.full((T, N, L), _NEG_INF, dt)
    b = np.full((N, L), _NEG_INF, dt)
    skip_next = np.zeros((N, L), bool)
    if L > 2:
        skip_next[:, :-2] = skip[:, 2:]
    n = np.arange(N)
    for t in range(T - 1, -1, -1):
        nxt1 = np.concatenate([b[:, 1:], np.full((N, 1), _NEG_INF, dt)], 1)
        nxt2 = np.concatenate([b[:, 2:], np.full((N, 2), _NEG_INF, dt)], 1)[:, :L]
        nxt2 = np.where(skip_next, nxt2, _NEG_INF)
        b = _lse3(b, nxt1, nxt2) + lpe[t]
        start = (il - 1) == t
        if start.any():
            init = np.full((N, L), _NEG_INF, dt)
            init[n, 2 * tl] = lpe[t, n, 2 * tl]
            i2 = np.maximum(2 * tl - 1, 0)
            init[n, i2] = np.where(tl > 0, lpe[t, n, i2], init[n, i2])
            b = np.where(start[:, None], init, b)
        b = np.where((t < il)[:, None] & valid_s, b, _NEG_INF).astype(dt, copy=False)
        beta[t] = b
    ab = alpha + beta                                      # (T, N, L)
    m = ab.max(2, keepdims=True) if L else np.zeros((T, N, 1), dt)
    ms = np.where(np.isfinite(m), m, 0)
    e = np.exp(ab - ms)
    acc = np.zeros((T, N, C), dt)
    tt = np.arange(T)[:, None, None]
    np.add.at(acc, (tt, np.arange(N)[None, :, None], ext[None, :, :]), e)
    with np.errstate(divide="ignore"):
        lacc = np.log(acc) + ms
    grad = np.exp(lp) - np.exp(lacc + nll[None, :, None] - lp)
    grad = np.where(np.isnan(grad) & np.isneginf(lacc), np.exp(lp), grad)
    # an impossible alignment (nll = inf) has NaN gradients in torch (-inf + inf in the
    # formula above) until zero_infinity zeroes them
    grad = np.where(np.isposinf(nll)[None, :, None], np.nan, grad)
    tmask = np.arange(T)[:, None] < il[None, :]
    grad = np.where(tmask[:, :, None], grad, 0)
    return grad.astype(dt, copy=False)


def _ctc_fwd(lp, targets, il, tl, blank, red, zero_inf, cache):
    setup = _ctc_setup(lp, targets._data, il, tl, blank)
    alpha = _ctc_alpha(lp, setup)
    nll = _ctc_nll(alpha, setup).astype(lp.dtype)
    cache.clear()
    cache.extend([setup, alpha, nll])
    out = np.where(np.isinf(nll), 0, nll) if zero_inf else nll
    return _ctc_reduce(out.astype(lp.dtype), setup[4], red)


def _ctc_reduce(out, tl, red):
    if red == 0:
        return out
    if red == 2:
        return np.asarray(out.sum(dtype=out.dtype))
    return np.asarray((out / np.maximum(tl, 1)).mean(dtype=out.dtype))


def _ctc_vjp(ctx, g):
    (lp,) = ctx.saved
    targets, il, tl, blank, red, zero_inf, cache = ctx._args
    if cache:
        setup, alpha, nll = cache
    else:
        setup = _ctc_setup(lp._data, targets._data, il, tl, blank)
        alpha = _ctc_alpha(lp._data, setup)
        nll = _ctc_nll(alpha, setup)
    G = _ctc_grad(lp._data, alpha, nll, setup)
    if zero_inf:
        G = np.where(np.isinf(nll)[None, :, None], 0, G)
    return apply(CTC_BACKWARD, (g,), (g._data,), (G, np.asarray(setup[4], np.int64), red))


def _ctc_bwd_fwd(g, G, tlen, red):
    N = G.shape[1]
    if red == 0:
        coef = g
    elif red == 2:
        coef = np.broadcast_to(g, (N,))
    else:
        coef = g / (np.maximum(tlen, 1).astype(G.dtype) * N)
    return (G * coef.reshape(1, N, 1)).astype(G.dtype, copy=False)


def _ctc_bwd_vjp(ctx, gg):
    raise RuntimeError("derivative for aten::_ctc_loss_backward is not implemented")


CTC_BACKWARD = Op("ctc_loss_backward", "CtcLossBackwardBackward0", _ctc_bwd_fwd, _ctc_bwd_vjp,
                  inputs=("grad",), args=("grad_of_loss", "target_lengths", "reduction"),
                  jvp=not_implemented("_ctc_loss_backward"))
CTC_LOSS = Op("ctc_loss", "CtcLossBackward0", _ctc_fwd, _ctc_vjp,
              args=("targets", "input_lengths", "target_lengths", "blank", "reduction",
                    "zero_infinity", "cache"), saves=("self",),
              jvp=not_implemented("_ctc_loss"))


def _lengths(v: Any, name: str) -> np.ndarray:
    if isinstance(v, Tensor):
        a = v._data
        if a.dtype.kind not in "iu":
            raise RuntimeError(f"{name} must be integral")
        return a.astype(np.int64).reshape(-1)
    if isinstance(v, (int, np.integer)):
        return np.asarray([v], np.int64)
    return np.asarray(list(v), np.int64).reshape(-1)


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any,
             blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """Connectionist Temporal Classification loss of ``log_probs`` (T, N, C) or (T, C);
    ``targets`` padded (N, S) or concatenated; 'mean' divides by the target lengths first.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> lp = ndgrad.tensor([[0.0, -50.0], [-50.0, 0.0]]).log_softmax(1)
    >>> round(F.ctc_loss(lp, ndgrad.tensor([1]), [2], [1], reduction="sum").item(), 4)
    0.0
    """
    if _autocast.active:  # Note [Autocast]
        log_probs, = _autocast.fp32(log_probs)
    red = _reduction(reduction)
    nd = log_probs.dim()
    if nd not in (2, 3):
        raise RuntimeError(f"ctc_loss expects log_probs to be 2D (unbatched) or 3D (batched), "
                           f"but got {nd}D")
    unbatched = nd == 2
    il = _lengths(input_lengths, "input_lengths")
    tl = _lengths(target_lengths, "target_lengths")
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    tg = targets
    T, N, C = lp.shape
    if not (0 <= blank < C):
        raise RuntimeError("blank must be in label range")
    if il.size != N:
        raise RuntimeError("input_lengths must be of size batch_size")
    if tl.size != N:
        raise RuntimeError("target_lengths must be of size batch_size")
    if targets._data.dtype.kind != "i":
        tg = targets = targets.to(_dtype.int64)
    t = tg._data
    if t.ndim == 2:
        for n in range(N):
            if tl[n] > t.shape[1]:
                raise RuntimeError(f"Expected tensor to have size at least {tl[n]} at "
                                   f"dimension 1, but got size {t.shape[1]} for argument "
                                   "#2 'targets' (while checking arguments for "
                                   "ctc_loss_allocate_outputs)")
    elif t.ndim == 1 and t.shape[0] != tl.sum():
        raise RuntimeError(f"Expected tensor to have size {int(tl.sum())} at dimension 0, but "
                           f"got size {t.shape[0]} for argument #2 'targets' (while checking "
                           "arguments for ctc_loss_allocate_outputs)")
    for n in range(N):
        if il[n] > T or il[n] < 0:
            raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got "
                               f"value {il[n]} (while checking arguments for "
                               "ctc_loss_allocate_outputs)")
        if tl[n] < 0:
            raise RuntimeError(f"Expected target_lengths to have value at least 0, but got "
                               f"{tl[n]}")
    out = apply(CTC_LOSS, (lp,), (lp._data,),
                (tg, tuple(il.tolist()), tuple(tl.tolist()), int(blank), red,
                 bool(zero_infinity), []))
    if unbatched and red == 0:
        return out.squeeze(0)
    return out


# ---------------------------------------------------------------------------- batching
def _register() -> None:
    from ._batching import RULES
    for op in _POINTWISE:
        RULES[op] = _pointwise_rule
    for op in (NLL_LOSS, NLL_LOSS2D, NLL_BACKWARD):
        RULES[op] = _rows_rule
    from ._batching import _dim_first_scan
    RULES[_LOG_SOFTMAX] = _dim_first_scan
    RULES[_LS_BWD] = _ls_bwd_rule


_register()

__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "soft_margin_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "nll_loss",
           "cross_entropy", "linear_cross_entropy", "kl_div", "poisson_nll_loss",
           "gaussian_nll_loss", "cosine_embedding_loss", "margin_ranking_loss",
           "hinge_embedding_loss", "multilabel_soft_margin_loss", "multi_margin_loss",
           "multilabel_margin_loss", "triplet_margin_loss",
           "triplet_margin_with_distance_loss", "ctc_loss"]

# Schemas of this family's public functions (Note [Declared signatures]), installed into
# ndgrad.nn.functional.
SIGNATURES = "\n".join([
    "mse_loss(Tensor input, Tensor target, Any size_average=None, Any reduce=None, "
    "str reduction='mean', Tensor? weight=None)",
    "l1_loss(Tensor input, Tensor target, Any size_average=None, Any reduce=None, "
    "str reduction='mean', Tensor? weight=None)",
    "smooth_l1_loss(Tensor input, Tensor target, Any size_average=None, Any reduce=None, "
    "str reduction='mean', float beta=1.0)",
    "huber_loss(Tensor input, Tensor target, str reduction='mean', float delta=1.0, "
    "Tensor? weight=None)",
    "soft_margin_loss(Tensor input, Tensor target, Any size_average=None, Any reduce=None, "
    "str reduction='mean')",
    "binary_cross_entropy(Tensor input, Tensor target, Tensor? weight=None, "
    "Any size_average=None, Any reduce=None, str reduction='mean')",
    "binary_cross_entropy_with_logits(Tensor input, Tensor target, Tensor? weight=None, "
    "Any size_average=None, Any reduce=None, str reduction='mean', Tensor? pos_weight=None)",
    "nll_loss(Tensor input, Tensor target, Tensor? weight=None, Any size_average=None, "
    "int ignore_index=-100, Any reduce=None, str reduction='mean')",
    "cross_entropy(Tensor input, Tensor target, Tensor? weight=None, Any size_average=None, "
    "int ignore_index=-100, Any reduce=None, str reduction='mean', float label_smoothing=0.0)",
    "linear_cross_entropy(Tensor input, Tensor linear_weight, Tensor target, *, "
    "Tensor? linear_bias=None, Tensor? weight=None, str reduction='mean', "
    "int? ignore_index=None, float label_smoothing=0.0, Any options=None)",
    "kl_div(Tensor input, Tensor target, Any size_average=None, Any reduce=None, "
    "str reduction='mean', bool log_target=False)",
    "poisson_nll_loss(Tensor input, Tensor target, bool log_input=True, bool full=False, "
    "Any size_average=None, float eps=1e-08, Any reduce=None, str reduction='mean')",
    "gaussian_nll_loss(Tensor input, Tensor target, Any var, bool full=False, float eps=1e-06, "
    "str reduction='mean')",
    "cosine_embedding_loss(Tensor input1, Tensor input2, Tensor target, float margin=0.0, "
    "Any size_average=None, Any reduce=None, str reduction='mean')",
    "margin_ranking_loss(Tensor input1, Tensor input2, Tensor target, float margin=0, "
    "Any size_average=None, Any reduce=None, str reduction='mean')",
    "hinge_embedding_loss(Tensor input, Tensor target, float margin=1.0, Any size_average=None, "
    "Any reduce=None, str reduction='mean')",
    "multilabel_soft_margin_loss(Tensor input, Tensor target, Tensor? weight=None, "
    "Any size_average=None, Any reduce=None, str reduction='mean')",
    "multi_margin_loss(Tensor input, Tensor target, int p=1, float margin=1.0, "
    "Tensor? weight=None, Any size_average=None, Any reduce=None, str reduction='mean')",
    "multilabel_margin_loss(Tensor input, Tensor target, Any size_average=None, "
    "Any reduce=None, str reduction='mean')",
    "triplet_margin_loss(Tensor anchor, Tensor positive, Tensor negative, float margin=1.0, "
    "float p=2, float eps=1e-06, bool swap=False, Any size_average=None, Any reduce=None, "
    "str reduction='mean')",
    "triplet_margin_with_distance_loss(Tensor anchor, Tensor positive, Tensor negative, *, "
    "Any distance_function=None, float margin=1.0, bool swap=False, str reduction='mean')",
    "ctc_loss(Tensor log_probs, Tensor targets, Any input_lengths, Any target_lengths, "
    "int blank=0, str reduction='mean', bool zero_infinity=False)",
])
