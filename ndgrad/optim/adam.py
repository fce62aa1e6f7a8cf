"""Adam and AdamW: adaptive moment estimation (with ``amsgrad``, ``maximize`` and L2 or
decoupled weight decay).

Example:
    >>> import ndgrad
    >>> w = ndgrad.tensor([1.0], requires_grad=True)
    >>> opt = ndgrad.optim.Adam([w], lr=0.1)
    >>> (3 * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([0.9000], requires_grad=True)
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional, Tuple

import numpy as np

from .. import _dtype
from ..tensor import Tensor
from . import _differentiable
from .optimizer import (Optimizer, adam_moments, bump, check_betas, check_flags, check_nonneg,
                        grad_array, hyper, params_with_grad, real_view, scalar_state, step_tensor,
                        weight_decay, zeros_state)

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam as ``torch.optim.Adam``: moments ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2)
    g^2``, update ``p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)`` (``v`` its
    running maximum with ``amsgrad``); ``weight_decay`` adds ``wd * p`` to ``g``, or with
    ``decoupled_weight_decay`` scales ``p`` by ``1 - lr * wd`` first (AdamW). ``capturable``,
    ``foreach`` and ``fused`` are accepted and select the same CPU path."""

    def __init__(self, params: Any, lr: float = 1e-3, betas: Tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: Optional[bool] = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False,
                 fused: Optional[bool] = None, decoupled_weight_decay: bool = False) -> None:
        check_nonneg("learning rate", lr)
        check_nonneg("epsilon value", eps)
        check_betas(betas)
        check_nonneg("weight_decay value", weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        check_flags(defaults)
        super().__init__(params, defaults)

    def _init_state(self, state: dict, p: Tensor, group: dict) -> None:
        """``p``'s state before its first step, in torch's layout (also for
        ``differentiable=True``, optim/_differentiable.py)."""
        state["step"] = scalar_state(0.0)
        state["exp_avg"] = zeros_state(p)
        state["exp_avg_sq"] = zeros_state(p)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = zeros_state(p)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One Adam update of every parameter with a gradient; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            if group["differentiable"]:
                _differentiable.run(self, group, "Adam")
                continue
            lr, (beta1, beta2) = hyper(group["lr"]), group["betas"]
            wd, eps, amsgrad = group["weight_decay"], group["eps"], group["amsgrad"]
            for p in params_with_grad(group):
                state = self.state[p]
                if not state:
                    self._init_state(state, p, group)
                d = real_view(p._data)
                if d.dtype in _LOWP:
                    _lowp_step(d, grad_array(p, group["maximize"], "Adam"), state, group, lr)
                    bump(p)
                    continue
                g = weight_decay(d, grad_array(p, group["maximize"], "Adam"), lr, wd,
                                 group["decoupled_weight_decay"])
                m, v = real_view(state["exp_avg"]._data), real_view(state["exp_avg_sq"]._data)
                adam_moments(m, v, g, beta1, beta2)
                t = step_tensor(state)
                step_size = lr / (1 - beta1 ** t)
                bc2_sqrt = math.sqrt(1 - beta2 ** t)
                if amsgrad:
                    vmax = real_view(state["max_exp_avg_sq"]._data)
                    np.maximum(vmax, v, out=vmax)
                    v = vmax
                denom = np.sqrt(v) / bc2_sqrt + eps
                d -= step_size * (m / denom)
                bump(p)
        return loss


# Note [Low-precision Adam]
# torch's Adam on float16/bfloat16 parameters runs one tensor op at a time (its single-tensor
# path on CPU), each computed in float32 and rounded once to the parameter's dtype: the
# decay ``p *= 1 - lr wd`` (or ``g + wd p``), ``m = lerp(m, g, 1 - b1)`` (a float32 fused
# multiply-add with the weight in float32), ``v = v b2``, ``v += (1 - b2) g g``, ``sqrt(v)``,
# ``/ sqrt(1 - b2^t)``, ``+ eps`` and ``p += -step (m / denom)``. NumPy on these dtypes would
# round after every ufunc and take the weights in the low precision.
_LOWP = _dtype.HALF_NP


def _f32_fma(a: Any, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``a * b + c`` of float32 operands with one float32 rounding (the product is exact in
    float64)."""
    return (np.float64(a) * b.astype(np.float64) + c.astype(np.float64)).astype(np.float32)


def _lowp_step(d: np.ndarray, g: np.ndarray, state: dict, group: dict, lr: float) -> None:
    """One Adam/AdamW update of a float16/bfloat16 parameter (Note [Low-precision Adam])."""
    f32, dt = np.float32, d.dtype
    beta1, beta2 = group["betas"]
    wd, eps = group["weight_decay"], group["eps"]
    if wd != 0:
        if group["decoupled_weight_decay"]:
            d[...] = (d.astype(f32) * f32(1 - lr * wd)).astype(dt)
        else:
            # torch's grad.add(param, alpha=wd) rounds alpha to the parameter's dtype first
            g = _f32_fma(f32(dt.type(wd)), d.astype(f32), g.astype(f32)).astype(dt)
    m, v = state["exp_avg"]._data, state["exp_avg_sq"]._data
    g32, m32 = g.astype(f32), m.astype(f32)
    w = f32(1 - beta1)
    if abs(w) < 0.5:
        m[...] = _f32_fma(w, g32 - m32, m32).astype(dt)
    else:
        m[...] = _f32_fma(w - f32(1), g32 - m32, g32).astype(dt)
    v[...] = (v.astype(f32) * f32(beta2)).astype(dt)
    v[...] = _f32_fma(f32(1 - beta2) * g32, g32, v.astype(f32)).astype(dt)
    t = step_tensor(state)
    step_size = lr / (1 - beta1 ** t)
    bc2_sqrt = math.sqrt(1 - beta2 ** t)
    if group["amsgrad"]:
        vmax = state["max_exp_avg_sq"]._data
        np.maximum(vmax, v, out=vmax)
        v = vmax
    denom = np.sqrt(v.astype(f32)).astype(dt)
    denom = (denom.astype(f32) / f32(bc2_sqrt)).astype(dt)
    denom = (denom.astype(f32) + f32(eps)).astype(dt)
    upd = f32(-step_size) * m.astype(f32) / denom.astype(f32)
    d[...] = (d.astype(f32) + upd).astype(dt)


class AdamW(Adam):
    """Adam with decoupled weight decay (default ``weight_decay=1e-2``), as
    ``torch.optim.AdamW``."""

    def __init__(self, params: Any, lr: float = 1e-3, betas: Tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: Optional[bool] = None,
                 capturable: bool = False, differentiable: bool = False,
                 fused: Optional[bool] = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
