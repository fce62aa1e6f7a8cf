"""Adagrad: per-coordinate learning rates from the sum of squared gradients.

Example:
    >>> import ndgrad
    >>> w = ndgrad.tensor([1.0], requires_grad=True)
    >>> opt = ndgrad.optim.Adagrad([w], lr=0.1)
    >>> (2 * w).sum().backward()
    >>> opt.step()
    >>> round(w.item(), 4)
    0.9
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from .. import _creation
from . import _differentiable
from .optimizer import (Optimizer, bump, check_flags, check_nonneg, grad_array, hyper,
                        params_with_grad, real_view, scalar_state, step_tensor)

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """``s += g^2``; ``p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(s) + eps)``, as
    ``torch.optim.Adagrad`` (the state is created for every parameter at construction, with
    ``sum`` filled with ``initial_accumulator_value``)."""

    def __init__(self, params: Any, lr: float = 1e-2, lr_decay: float = 0,
                 weight_decay: float = 0, initial_accumulator_value: float = 0,
                 eps: float = 1e-10, foreach: Optional[bool] = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: Optional[bool] = None) -> None:
        check_nonneg("learning rate", lr)
        check_nonneg("lr_decay value", lr_decay)
        check_nonneg("weight_decay value", weight_decay)
        check_nonneg("initial_accumulator_value value", initial_accumulator_value)
        check_nonneg("epsilon value", eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        check_flags(defaults)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = scalar_state(0.0)
                state["sum"] = _creation.full_like(p.detach(),
                                                   group["initial_accumulator_value"])

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter with a gradient; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            if group["differentiable"]:
                _differentiable.run(self, group, "Adagrad")
                continue
            lr, wd, eps = hyper(group["lr"]), group["weight_decay"], group["eps"]
            for p in params_with_grad(group):
                state = self.state[p]
                t = step_tensor(state)
                d = real_view(p._data)
                g = grad_array(p, group["maximize"], sparse="")
                if wd != 0:
                    if p.grad.is_sparse:
                        raise RuntimeError("weight_decay option is not compatible with sparse "
                                           "gradients")
                    g = g + wd * d
                clr = lr / (1 + (t - 1) * group["lr_decay"])
                s = real_view(state["sum"]._data)
                s += g * g
                d -= clr * (g / (np.sqrt(s) + eps))
                bump(p)
        return loss
