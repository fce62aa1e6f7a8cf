"""Adadelta: step sizes from running averages of squared gradients and squared updates.

Example:
    >>> import ndgrad
    >>> w = ndgrad.tensor([1.0], requires_grad=True)
    >>> opt = ndgrad.optim.Adadelta([w])
    >>> (2 * w).sum().backward()
    >>> opt.step()
    >>> w.item() < 1.0
    True
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ..tensor import Tensor
from . import _differentiable
from .optimizer import (Optimizer, bump, check_flags, check_nonneg, grad_array, hyper,
                        params_with_grad, real_view, scalar_state, step_tensor, zeros_state)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """``s = rho s + (1 - rho) g^2``; ``u = sqrt(a + eps) / sqrt(s + eps) * g``; ``a = rho a +
    (1 - rho) u^2``; ``p -= lr u``, as ``torch.optim.Adadelta``."""

    def __init__(self, params: Any, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: Optional[bool] = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_nonneg("learning rate", lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_nonneg("epsilon value", eps)
        check_nonneg("weight_decay value", weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        check_flags(defaults)
        super().__init__(params, defaults)

    def _init_state(self, state: dict, p: Tensor, group: dict) -> None:
        """``p``'s state before its first step, in torch's layout (also for
        ``differentiable=True``, optim/_differentiable.py)."""
        state["step"] = scalar_state(0.0)
        state["square_avg"] = zeros_state(p)
        state["acc_delta"] = zeros_state(p)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter with a gradient; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            if group["differentiable"]:
                _differentiable.run(self, group, "Adadelta")
                continue
            lr, rho, eps, wd = hyper(group["lr"]), group["rho"], group["eps"], \
                group["weight_decay"]
            for p in params_with_grad(group):
                state = self.state[p]
                if not state:
                    self._init_state(state, p, group)
                step_tensor(state)
                d = real_view(p._data)
                g = grad_array(p, group["maximize"], "Adadelta")
                if wd != 0:
                    g = g + wd * d
                s, a = real_view(state["square_avg"]._data), real_view(state["acc_delta"]._data)
                np.multiply(s, rho, out=s)
                s += (1 - rho) * g * g
                delta = np.sqrt(a + eps) / np.sqrt(s + eps) * g
                np.multiply(a, rho, out=a)
                a += (1 - rho) * delta * delta
                d -= lr * delta
                bump(p)
        return loss
