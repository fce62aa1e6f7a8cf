"""Adafactor: Adam-like steps with a factored second moment (a row and a column factor per
matrix), relative step sizes and update clipping, as ``torch.optim.Adafactor``.

Example:
    >>> import ndgrad
    >>> w = ndgrad.tensor([[1.0, -2.0], [0.5, 3.0]], requires_grad=True)
    >>> opt = ndgrad.optim.Adafactor([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w.shape, sorted(opt.state[w])
    (ndgrad.Size([2, 2]), ['col_var', 'row_var', 'step'])
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple

import numpy as np

from .. import _creation
from ..tensor import Tensor

from .optimizer import (Optimizer, bump, grad_array, hyper, lerp_, params_with_grad,
                        scalar_state, step_tensor)

__all__ = ["Adafactor"]


def _norm(a: np.ndarray, **kw: Any) -> Any:
    return np.sqrt(np.sum(a * a, **kw))


class Adafactor(Optimizer):
    """Per step ``t``: second-moment weight ``t ** beta2_decay``; a matrix's variance is
    estimated from running row and column means of ``g^2`` (their outer product over the mean
    row factor), a vector's directly; the update ``g / sqrt(var)`` is clipped to RMS ``d`` and
    scaled by ``max(eps2, RMS(p)) * min(lr, 1 / sqrt(t))``; ``weight_decay`` scales ``p`` by
    ``1 - lr * weight_decay`` first."""

    def __init__(self, params: Any, lr: Any = 1e-2, beta2_decay: float = -0.8,
                 eps: Tuple[Optional[float], float] = (None, 1e-3), d: float = 1.0,
                 weight_decay: float = 0.0, *, foreach: Optional[bool] = None,
                 maximize: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= hyper(lr):
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                        weight_decay=weight_decay, foreach=foreach, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter with a gradient; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, wd, d = hyper(group["lr"]), group["weight_decay"], group["d"]
            eps1, eps2 = group["eps"]
            for p in params_with_grad(group):
                if p.is_complex():
                    raise RuntimeError("Adafactor does not support complex parameters")
                g = grad_array(p, group["maximize"], "Adafactor")
                state = self.state[p]
                if not state:
                    state["step"] = scalar_state(0.0)
                    if g.ndim > 1:
                        state["row_var"] = _creation.zeros(g.shape[:-1] + (1,), dtype=p.dtype)
                        state["col_var"] = _creation.zeros(g.shape[:-2] + (1, g.shape[-1]),
                                                           dtype=p.dtype)
                    else:
                        state["variance"] = _creation.zeros(g.shape, dtype=p.dtype)
                e1 = float(np.finfo(p._data.dtype).eps) if eps1 is None else eps1
                t = step_tensor(state)
                weight = t ** group["beta2_decay"]
                rho = min(lr, 1 / (t ** 0.5))
                data = p._data
                alpha = max(eps2, float(_norm(data)) / (data.size ** 0.5)) * rho
                if wd != 0:
                    np.multiply(data, 1 - lr * wd, out=data)
                if g.ndim > 1:
                    row, col = state["row_var"]._data, state["col_var"]._data
                    lerp_(row, _norm(g, axis=-1, keepdims=True) ** 2 / g.shape[-1], weight)
                    lerp_(col, _norm(g, axis=-2, keepdims=True) ** 2 / g.shape[-2], weight)
                    var = np.matmul(row, col)
                    var /= np.maximum(row.mean(axis=-2, keepdims=True), e1)
                else:
                    v = state["variance"]._data
                    lerp_(v, g * g, weight)
                    var = v.copy()
                update = 1 / np.sqrt(np.maximum(var, e1 * e1))
                update *= g
                denom = max(1.0, float(_norm(update)) / ((update.size ** 0.5) * d))
                data -= (alpha / denom) * update
                bump(p)
        return loss

