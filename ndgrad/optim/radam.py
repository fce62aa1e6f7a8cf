"""RAdam: Adam with the variance of the adaptive learning rate rectified in early steps.

Example:
    >>> import ndgrad
    >>> w = ndgrad.tensor([1.0], requires_grad=True)
    >>> opt = ndgrad.optim.RAdam([w], lr=0.1)
    >>> (2 * w).sum().backward()
    >>> opt.step()
    >>> round(w.item(), 4)
    0.8
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional, Tuple

import numpy as np

from ..tensor import Tensor
from . import _differentiable
from .optimizer import (Optimizer, adam_moments, bump, check_betas, check_flags, check_nonneg,
                        grad_array, hyper, params_with_grad, real_view, scalar_state, step_tensor,
                        weight_decay, zeros_state)

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """RAdam as ``torch.optim.RAdam``: while the approximated SMA length ``rho_t`` is at most
    5 the step is bias-corrected momentum alone; after, Adam's adaptive step times the
    rectification term."""

    def __init__(self, params: Any, lr: float = 1e-3, betas: Tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0,
                 decoupled_weight_decay: bool = False, *, foreach: Optional[bool] = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_nonneg("learning rate", lr)
        check_nonneg("epsilon value", eps)
        check_betas(betas)
        check_nonneg("weight_decay value", weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        check_flags(defaults)
        super().__init__(params, defaults)

    def _init_state(self, state: dict, p: Tensor, group: dict) -> None:
        """``p``'s state before its first step, in torch's layout (also for
        ``differentiable=True``, optim/_differentiable.py)."""
        state["step"] = scalar_state(0.0)
        state["exp_avg"] = zeros_state(p)
        state["exp_avg_sq"] = zeros_state(p)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter with a gradient; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            if group["differentiable"]:
                _differentiable.run(self, group, "RAdam")
                continue
            lr, (beta1, beta2) = hyper(group["lr"]), group["betas"]
            eps, wd = group["eps"], group["weight_decay"]
            rho_inf = 2 / (1 - beta2) - 1
            for p in params_with_grad(group):
                state = self.state[p]
                if not state:
                    self._init_state(state, p, group)
                t = step_tensor(state)
                d = real_view(p._data)
                g = weight_decay(d, grad_array(p, group["maximize"], "RAdam"), lr, wd,
                                 group["decoupled_weight_decay"])
                m, v = real_view(state["exp_avg"]._data), real_view(state["exp_avg_sq"]._data)
                adam_moments(m, v, g, beta1, beta2)
                bc1, bc2 = 1 - beta1 ** t, 1 - beta2 ** t
                m_hat = m / bc1
                rho_t = rho_inf - 2 * t * (beta2 ** t) / bc2
                if rho_t > 5.0:
                    rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                                     / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                    adaptive = math.sqrt(bc2) / (np.sqrt(v) + eps)
                    d -= m_hat * lr * adaptive * rect
                else:
                    d -= m_hat * lr
                bump(p)
        return loss
