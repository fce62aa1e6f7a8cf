"""NAdam: Adam with Nesterov momentum and a momentum-decay schedule.

Example:
    >>> import ndgrad
    >>> w = ndgrad.tensor([1.0], requires_grad=True)
    >>> opt = ndgrad.optim.NAdam([w], lr=0.1)
    >>> (2 * w).sum().backward()
    >>> opt.step()
    >>> w.item() < 1.0
    True
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple

import numpy as np

from ..tensor import Tensor
from . import _differentiable
from .optimizer import (Optimizer, adam_moments, bump, check_betas, check_flags, check_nonneg,
                        grad_array, hyper, params_with_grad, real_view, scalar_state, set_scalar,
                        step_tensor, weight_decay, zeros_state)

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """NAdam as ``torch.optim.NAdam``: momentum coefficients ``mu_t = b1 (1 - 0.5 *
    0.96^(t psi))`` (``psi = momentum_decay``), their running product kept as a scalar state
    tensor, and the Nesterov-style update from the current gradient and the first moment."""

    def __init__(self, params: Any, lr: float = 2e-3, betas: Tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: Optional[bool] = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_nonneg("learning rate", lr)
        check_nonneg("epsilon value", eps)
        check_betas(betas)
        check_nonneg("weight_decay value", weight_decay)
        check_nonneg("momentum_decay value", momentum_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable)
        check_flags(defaults)
        super().__init__(params, defaults)

    def _init_state(self, state: dict, p: Tensor, group: dict) -> None:
        """``p``'s state before its first step, in torch's layout (also for
        ``differentiable=True``, optim/_differentiable.py)."""
        state["step"] = scalar_state(0.0)
        state["mu_product"] = scalar_state(1.0)
        state["exp_avg"] = zeros_state(p)
        state["exp_avg_sq"] = zeros_state(p)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter with a gradient; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            if group["differentiable"]:
                _differentiable.run(self, group, "NAdam")
                continue
            lr, (beta1, beta2) = hyper(group["lr"]), group["betas"]
            eps, wd, psi = group["eps"], group["weight_decay"], group["momentum_decay"]
            for p in params_with_grad(group):
                state = self.state[p]
                if not state:
                    self._init_state(state, p, group)
                t = step_tensor(state)
                d = real_view(p._data)
                g = weight_decay(d, grad_array(p, group["maximize"], "NAdam"), lr, wd,
                                 group["decoupled_weight_decay"])
                mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * psi))
                mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * psi))
                prod_t = state["mu_product"]
                mu_product = set_scalar(prod_t, prod_t._data * prod_t._data.dtype.type(mu))
                m, v = real_view(state["exp_avg"]._data), real_view(state["exp_avg_sq"]._data)
                adam_moments(m, v, g, beta1, beta2)
                denom = np.sqrt(v / (1 - beta2 ** t)) + eps
                d += (-lr * (1.0 - mu) / (1.0 - mu_product)) * (g / denom)
                d += (-lr * mu_next / (1.0 - mu_product * mu_next)) * (m / denom)
                bump(p)
        return loss
