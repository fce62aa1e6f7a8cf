"""Adamax: Adam with the infinity norm in place of the second moment.

Example:
    >>> import ndgrad
    >>> w = ndgrad.tensor([1.0], requires_grad=True)
    >>> opt = ndgrad.optim.Adamax([w], lr=0.1)
    >>> (2 * w).sum().backward()
    >>> opt.step()
    >>> round(w.item(), 4)
    0.9
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple

import numpy as np

from ..tensor import Tensor
from . import _differentiable
from .optimizer import (Optimizer, bump, check_betas, check_flags, check_nonneg, grad_array, hyper,
                        params_with_grad, real_view, scalar_state, step_tensor, zeros_state)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """``m = b1 m + (1 - b1) g``; ``u = max(b2 u, |g| + eps)``; ``p -= lr / (1 - b1^t) * m /
    u``, as ``torch.optim.Adamax``."""

    def __init__(self, params: Any, lr: float = 2e-3, betas: Tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, foreach: Optional[bool] = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        check_nonneg("learning rate", lr)
        check_nonneg("epsilon value", eps)
        check_betas(betas)
        check_nonneg("weight_decay value", weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        check_flags(defaults)
        super().__init__(params, defaults)

    def _init_state(self, state: dict, p: Tensor, group: dict) -> None:
        """``p``'s state before its first step, in torch's layout (also for
        ``differentiable=True``, optim/_differentiable.py)."""
        state["step"] = scalar_state(0.0)
        state["exp_avg"] = zeros_state(p)
        state["exp_inf"] = zeros_state(p)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter with a gradient; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            if group["differentiable"]:
                _differentiable.run(self, group, "Adamax")
                continue
            lr, (beta1, beta2) = hyper(group["lr"]), group["betas"]
            eps, wd = group["eps"], group["weight_decay"]
            for p in params_with_grad(group):
                state = self.state[p]
                if not state:
                    self._init_state(state, p, group)
                t = step_tensor(state)
                d = real_view(p._data)
                g = grad_array(p, group["maximize"], "Adamax")
                if wd != 0:
                    g = g + wd * d
                m, u = real_view(state["exp_avg"]._data), real_view(state["exp_inf"]._data)
                m += (g - m) * (1 - beta1)
                np.maximum(u * beta2, np.abs(g) + eps, out=u)
                d -= (lr / (1 - beta1 ** t)) * (m / u)
                bump(p)
        return loss
