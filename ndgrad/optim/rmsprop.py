"""RMSprop: gradients scaled by a running root mean square (``centered``, ``momentum``).

Example:
    >>> import ndgrad
    >>> w = ndgrad.tensor([1.0], requires_grad=True)
    >>> opt = ndgrad.optim.RMSprop([w], lr=0.01)
    >>> (2 * w).sum().backward()
    >>> opt.step()
    >>> round(w.item(), 4)
    0.9
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ..tensor import Tensor
from . import _differentiable
from .optimizer import (Optimizer, bump, check_flags, check_nonneg, grad_array, hyper,
                        params_with_grad, real_view, scalar_state, step_tensor, zeros_state)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """``s = alpha s + (1 - alpha) g^2``; ``p -= lr g / (sqrt(s - gbar^2 if centered) + eps)``,
    through a momentum buffer when ``momentum > 0``, as ``torch.optim.RMSprop``."""

    def __init__(self, params: Any, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 capturable: bool = False, foreach: Optional[bool] = None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        check_nonneg("learning rate", lr)
        check_nonneg("epsilon value", eps)
        check_nonneg("momentum value", momentum)
        check_nonneg("weight_decay value", weight_decay)
        check_nonneg("alpha value", alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        check_flags(defaults)
        super().__init__(params, defaults)

    def _init_state(self, state: dict, p: Tensor, group: dict) -> None:
        """``p``'s state before its first step, in torch's layout (also for
        ``differentiable=True``, optim/_differentiable.py)."""
        state["step"] = scalar_state(0.0)
        state["square_avg"] = zeros_state(p)
        if group["momentum"] > 0:
            state["momentum_buffer"] = zeros_state(p)
        if group["centered"]:
            state["grad_avg"] = zeros_state(p)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter with a gradient; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            if group["differentiable"]:
                _differentiable.run(self, group, "RMSprop")
                continue
            lr, alpha, eps = hyper(group["lr"]), group["alpha"], group["eps"]
            wd, momentum = group["weight_decay"], group["momentum"]
            for p in params_with_grad(group):
                state = self.state[p]
                if not state:
                    self._init_state(state, p, group)
                step_tensor(state)
                d = real_view(p._data)
                g = grad_array(p, group["maximize"], "RMSprop")
                if wd != 0:
                    g = g + wd * d
                s = real_view(state["square_avg"]._data)
                np.multiply(s, alpha, out=s)
                s += (1 - alpha) * g * g
                if group["centered"]:
                    ga = real_view(state["grad_avg"]._data)
                    ga += (g - ga) * (1 - alpha)
                    avg = np.sqrt(s - ga * ga) + eps
                else:
                    avg = np.sqrt(s) + eps
                if momentum > 0:
                    buf = real_view(state["momentum_buffer"]._data)
                    np.multiply(buf, momentum, out=buf)
                    buf += g / avg
                    d -= lr * buf
                else:
                    d -= lr * (g / avg)
                bump(p)
        return loss
