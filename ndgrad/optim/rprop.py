"""Rprop: resilient backpropagation, per-coordinate step sizes adapted by gradient signs.

Example:
    >>> import ndgrad
    >>> w = ndgrad.tensor([1.0], requires_grad=True)
    >>> opt = ndgrad.optim.Rprop([w], lr=0.1)
    >>> (2 * w).sum().backward()
    >>> opt.step()
    >>> round(w.item(), 4)
    0.9
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple

import numpy as np

from .. import _creation
from ..ops.pointwise import SIGN
from ..tensor import Tensor
from . import _differentiable
from .optimizer import (Optimizer, bump, check_flags, check_nonneg, grad_array, hyper,
                        params_with_grad, real_view, scalar_state, step_tensor, zeros_state)

__all__ = ["Rprop"]

_sign = SIGN.forward   # torch's sign on arrays: 0 for NaN, so a NaN gradient moves nothing


class Rprop(Optimizer):
    """Rprop as ``torch.optim.Rprop``: each coordinate's step size grows by ``etas[1]`` while
    its gradient keeps its sign and shrinks by ``etas[0]`` when it flips (that step is then
    skipped), clamped to ``step_sizes``; ``p -= sign(g) * step_size``."""

    def __init__(self, params: Any, lr: float = 1e-2, etas: Tuple[float, float] = (0.5, 1.2),
                 step_sizes: Tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: Optional[bool] = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_nonneg("learning rate", lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach,
                        maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        check_flags(defaults)
        super().__init__(params, defaults)

    def _init_state(self, state: dict, p: Tensor, group: dict) -> None:
        """``p``'s state before its first step, in torch's layout (also for
        ``differentiable=True``, optim/_differentiable.py)."""
        state["step"] = scalar_state(0.0)
        state["prev"] = zeros_state(p)
        grad = p.grad
        assert grad is not None, "a state is made for parameters with a gradient"
        lr = hyper(group["lr"])        # a complex parameter's parts each start at lr, as torch's
        state["step_size"] = _creation.full_like(grad.detach(),
                                                 complex(lr, lr) if grad.is_complex() else lr)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter with a gradient; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            if group["differentiable"]:
                _differentiable.run(self, group, "Rprop")
                continue
            etaminus, etaplus = group["etas"]
            lo, hi = group["step_sizes"]
            for p in params_with_grad(group):
                state = self.state[p]
                if not state:
                    self._init_state(state, p, group)
                step_tensor(state)
                d = real_view(p._data)
                g = np.array(grad_array(p, group["maximize"], "Rprop"), copy=True)
                prev, size = real_view(state["prev"]._data), real_view(state["step_size"]._data)
                s = _sign(g * prev)
                factor = np.where(s > 0, etaplus, np.where(s < 0, etaminus, 1.0))
                np.clip(size * factor.astype(size.dtype, copy=False), lo, hi, out=size)
                g[s < 0] = 0
                d -= _sign(g) * size
                bump(p)
                prev[...] = g
        return loss
