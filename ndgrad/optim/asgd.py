"""ASGD: averaged stochastic gradient descent.

Example:
    >>> import ndgrad
    >>> w = ndgrad.tensor([1.0], requires_grad=True)
    >>> opt = ndgrad.optim.ASGD([w], lr=0.1)
    >>> (2 * w).sum().backward()
    >>> opt.step()
    >>> round(w.item(), 4)
    0.8
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ..tensor import Tensor
from . import _differentiable
from .optimizer import (Optimizer, bump, check_flags, check_nonneg, grad_array, hyper,
                        params_with_grad, real_view, scalar_state, set_scalar, step_tensor,
                        zeros_state)

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """ASGD as ``torch.optim.ASGD``: ``p = p (1 - lambd eta) - eta g``; the average ``ax``
    follows ``p`` with weight ``mu``; ``eta = lr / (1 + lambd lr t)^alpha`` and ``mu = 1 /
    max(1, t - t0)`` are scalar state tensors."""

    def __init__(self, params: Any, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0, foreach: Optional[bool] = None,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        check_nonneg("learning rate", lr)
        check_nonneg("weight_decay value", weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        check_flags(defaults)
        super().__init__(params, defaults)

    def _init_state(self, state: dict, p: Tensor, group: dict) -> None:
        """``p``'s state before its first step, in torch's layout (also for
        ``differentiable=True``, optim/_differentiable.py)."""
        state["step"] = scalar_state(0.0)
        state["eta"] = scalar_state(hyper(group["lr"]))
        state["mu"] = scalar_state(1.0)
        state["ax"] = zeros_state(p)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter with a gradient; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            if group["differentiable"]:
                _differentiable.run(self, group, "ASGD")
                continue
            lr, lambd, alpha, t0 = hyper(group["lr"]), group["lambd"], group["alpha"], \
                group["t0"]
            wd = group["weight_decay"]
            for p in params_with_grad(group):
                state = self.state[p]
                if not state:
                    self._init_state(state, p, group)
                t = step_tensor(state)
                d = real_view(p._data)
                g = grad_array(p, group["maximize"], "ASGD")
                if wd != 0:
                    g = g + wd * d
                eta = float(state["eta"]._data)
                np.multiply(d, 1 - lambd * eta, out=d)
                d -= eta * g
                bump(p)
                ax, mu = real_view(state["ax"]._data), float(state["mu"]._data)
                if mu != 1:
                    ax += (d - ax) * mu
                else:
                    ax[...] = d
                set_scalar(state["eta"], lr / ((1 + lambd * lr * t) ** alpha), True)
                set_scalar(state["mu"], 1 / max(1, t - t0), True)
        return loss
