"""Muon: momentum SGD whose update is orthogonalized by a Newton-Schulz iteration, for 2-d
parameters, as ``torch.optim.Muon``.

Note [Muon in bfloat16]
torch runs the Newton-Schulz iteration in bfloat16: the operands are bfloat16 and each op's
result (``beta * C + alpha * A @ B`` for ``addmm``) is rounded to float32 and then to bfloat16
once. Here the products of bfloat16 values are accumulated in float64 (exact for small
matrices, where torch's float32 accumulation is exact too) and rounded the same way with
ml_dtypes' bfloat16. That gives torch's bits on matrices up to about 32 x 32 (checked against
torch); on larger ones torch's float32 accumulation order can move an element by one bfloat16
ulp.

Example:
    >>> import ndgrad
    >>> w = ndgrad.tensor([[1.0, -2.0, 0.5], [0.5, 3.0, -1.0]], requires_grad=True)
    >>> opt = ndgrad.optim.Muon([w], lr=0.02)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> list(opt.state[w])
    ['momentum_buffer']
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional, Sequence, Tuple

import ml_dtypes
import numpy as np

from ..tensor import Tensor

from .optimizer import (Optimizer, bump, grad_array, hyper, lerp_, params_with_grad,
                        zeros_state)

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A, DEFAULT_B, DEFAULT_C = 3.4445, -4.7750, 2.0315
DEFAULT_NS_STEPS = 5
_BF16 = ml_dtypes.bfloat16
_F32 = np.float32


def _bf16(a: Any) -> np.ndarray:
    """Round to float32, then to bfloat16 (as torch's bfloat16 ops store their results)."""
    return np.asarray(a).astype(_F32).astype(_BF16)


def _f32(a: np.ndarray) -> np.ndarray:
    return a.astype(_F32)


def orthogonalize(grad: np.ndarray, ns_coefficients: Sequence[float], ns_steps: int,
                  eps: float) -> np.ndarray:
    """The Newton-Schulz "zeroth power" of a 2-d ``grad`` (about ``U V^T`` of its SVD), in
    bfloat16 (Note [Muon in bfloat16])."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = (_F32(v) for v in ns_coefficients)
    x = _bf16(grad.astype(_F32))           # torch casts through float32
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    xf = _f32(x)
    norm = _bf16(np.sqrt(np.sum(xf * xf, dtype=_F32)))
    norm = _bf16(max(_f32(norm), _F32(eps)))
    x = _bf16(xf / _f32(norm))
    a64, b64, c64 = (np.float64(v) for v in (a, b, c))
    for _ in range(ns_steps):
        x64 = x.astype(np.float64)
        gram = _bf16(x64 @ x64.T).astype(np.float64)
        gram_update = _bf16(b64 * gram + c64 * (gram @ gram)).astype(np.float64)
        x = _bf16(a64 * x64 + gram_update @ x64)
    return x.T if tall else x


def _adjusted_lr(lr: float, adjust_lr_fn: Optional[str], shape: Sequence[int]) -> float:
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    """``b = lerp(b, g, 1 - momentum)``; the update (``lerp(g, b, momentum)`` with
    ``nesterov``, else ``b``) orthogonalized by ``ns_steps`` Newton-Schulz steps; ``p *= 1 -
    lr * weight_decay``; ``p -= lr * ratio * update`` with ``ratio = sqrt(max(1, rows /
    cols))`` (``adjust_lr_fn="original"``) or ``0.2 * sqrt(max(rows, cols))``
    (``"match_rms_adamw"``)."""

    def __init__(self, params: Any, lr: Any = 1e-3, weight_decay: float = 0.1,
                 momentum: float = 0.95, nesterov: bool = True,
                 ns_coefficients: Tuple[float, float, float] = (DEFAULT_A, DEFAULT_B,
                                                                DEFAULT_C),
                 eps: float = EPS, ns_steps: int = DEFAULT_NS_STEPS,
                 adjust_lr_fn: Optional[str] = None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= hyper(lr):
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps,
                        adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter with a gradient; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr_t, wd, momentum = group["lr"], group["weight_decay"], group["momentum"]
            lr = hyper(lr_t)
            # a tensor lr: ``1 - lr * wd`` and the adjusted lr are tensor ops in its dtype
            rnd = lr_t._data.dtype.type if isinstance(lr_t, Tensor) else float
            for p in params_with_grad(group):
                if p.is_complex():
                    raise RuntimeError("Muon does not support complex parameters")
                g = grad_array(p, False, "Muon")
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = zeros_state(p.grad)
                if g.ndim != 2:
                    raise ValueError("Param gradient must be a 2D matrix")
                buf = state["momentum_buffer"]._data
                lerp_(buf, g, 1 - momentum)
                if group["nesterov"]:
                    update = g.copy()
                    lerp_(update, buf, momentum)
                else:
                    update = buf
                update = orthogonalize(update, group["ns_coefficients"], group["ns_steps"],
                                       group["eps"])
                d = p._data
                np.multiply(d, float(rnd(1) - rnd(rnd(lr) * rnd(wd))), out=d)
                ratio = _adjusted_lr(1.0, group["adjust_lr_fn"], p.shape)
                step = float(rnd(rnd(lr) * rnd(ratio)))
                d += (-step) * update.astype(d.dtype)
                bump(p)
        return loss
