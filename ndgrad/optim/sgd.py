"""Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay.

Example:
    >>> import ndgrad
    >>> w = ndgrad.tensor([1.0], requires_grad=True)
    >>> opt = ndgrad.optim.SGD([w], lr=0.1, momentum=0.9)
    >>> (2 * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([0.8000], requires_grad=True)
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from .. import _creation

from . import _differentiable
from .optimizer import (Optimizer, bump, check_flags, check_nonneg, grad_array, hyper,
                        params_with_grad, real_view)

__all__ = ["SGD"]


class SGD(Optimizer):
    """``p -= lr * g`` where ``g`` is the gradient plus ``weight_decay * p``, through a momentum
    buffer ``b = momentum * b + (1 - dampening) * g`` when ``momentum`` is non-zero (``g +
    momentum * b`` with ``nesterov``), as ``torch.optim.SGD``."""

    def __init__(self, params: Any, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: Optional[bool] = None, differentiable: bool = False,
                 fused: Optional[bool] = None) -> None:
        check_nonneg("learning rate", lr)
        check_nonneg("momentum value", momentum)
        check_nonneg("weight_decay value", weight_decay)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        foreach=foreach, differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        check_flags(defaults)
        super().__init__(params, defaults)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter with a gradient; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            if group["differentiable"]:
                _differentiable.run(self, group, "SGD")
                continue
            lr, wd = hyper(group["lr"]), group["weight_decay"]
            momentum, dampening = group["momentum"], group["dampening"]
            for p in params_with_grad(group):
                d = real_view(p._data)
                g = grad_array(p, group["maximize"], sparse="")
                if wd != 0:
                    if p.grad.is_sparse:
                        raise RuntimeError("add(sparse, dense) is not supported. Use "
                                           "add(dense, sparse) instead.")
                    g = g + wd * d
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = state["momentum_buffer"] = _creation.tensor(
                            np.array(g).view(p._data.dtype).reshape(p._data.shape))
                        b = real_view(buf._data)
                    else:
                        b = real_view(buf._data)
                        np.multiply(b, momentum, out=b)
                        b += (1 - dampening) * g
                    g = g + momentum * b if group["nesterov"] else b
                d -= lr * g
                bump(p)
        return loss
