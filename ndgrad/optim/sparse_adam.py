"""SparseAdam: Adam for sparse gradients (``embedding(sparse=True)``), updating only the rows
a gradient touches.

Example:
    >>> import ndgrad
    >>> w = ndgrad.zeros(3, 2, requires_grad=True)
    >>> opt = ndgrad.optim.SparseAdam([w], lr=0.1)
    >>> w.grad = ndgrad.sparse_coo_tensor([[0, 2]], ndgrad.ones(2, 2), (3, 2))
    >>> opt.step()
    >>> w[:, 0]
    tensor([-0.1000,  0.0000, -0.1000], grad_fn=<SelectBackward0>)
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional, Tuple

import numpy as np

from .._sparse import SparseTensor
from .optimizer import (Optimizer, bump, check_betas, check_nonneg, hyper, params_with_grad,
                        zeros_state)

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Adam's moments and update at the entries of each (coalesced) sparse gradient only, as
    ``torch.optim.SparseAdam``; dense gradients are refused."""

    def __init__(self, params: Any, lr: float = 1e-3, betas: Tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, maximize: bool = False) -> None:
        check_nonneg("learning rate", lr)
        check_nonneg("epsilon value", eps)
        check_betas(betas)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        sparse_params = [i for g in self.param_groups for i, p in enumerate(g["params"])
                         if isinstance(p, SparseTensor)]
        if sparse_params:
            raise ValueError(f"Sparse params at indices {sparse_params}: SparseAdam requires "
                             "dense parameter tensors")

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update at the entries of every parameter's sparse gradient."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, (beta1, beta2), eps = hyper(group["lr"]), group["betas"], group["eps"]
            for p in params_with_grad(group):
                if p.grad.__class__ is not SparseTensor:
                    raise RuntimeError("SparseAdam does not support dense gradients, please "
                                       "consider Adam instead")
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = zeros_state(p)
                    state["exp_avg_sq"] = zeros_state(p)
                state["step"] += 1
                t = state["step"]
                g = p.grad.coalesce()
                at = tuple(g._sp_indices)
                gv = -g._sp_values if group["maximize"] else g._sp_values
                m, v = state["exp_avg"]._data, state["exp_avg_sq"]._data
                old_m, old_v = m[at], v[at]
                dm = (gv - old_m) * (1 - beta1)
                dv = (gv * gv - old_v) * (1 - beta2)
                m[at] = old_m + dm
                v[at] = old_v + dv
                step_size = lr * math.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
                upd = (dm + old_m) / (np.sqrt(dv + old_v) + eps)
                d = p._data
                d[at] = d[at] - step_size * upd
                bump(p)
        return loss
