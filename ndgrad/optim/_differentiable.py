"""The recorded update path of the optimizers (``differentiable=True``).

Note [Differentiable optimizer steps]
With ``differentiable=True`` a step is made of ndgrad tensor ops under grad mode, so autograd
records it: the parameter (which must then be a non-leaf, e.g. ``w.clone()``, as in torch: a leaf
that requires grad refuses the in-place update), its ``.grad`` and the state tensors all become
functions of what they were computed from, and a loss after ``k`` steps can be differentiated
with respect to the initial parameters, the gradients, the state or tensor hyperparameters
(``lr``, ``weight_decay``, ``betas``). The parameter and the state tensors are updated in place
(their identity is kept, as in the ndarray path of Note [Optimizer updates]); the op sequence
and the dtype of each intermediate (a float32 ``step`` tensor rounds the bias corrections as
torch's does) follow torch's single-tensor path, so values and gradients equal torch's. A value
that is saved for backward and later updated in place is cloned first, so autograd's version
check does not fire where torch's does not (and fires where torch's does: torch saves some
state tensors that the next step updates in place, e.g. Adamax's ``exp_avg``, so a backward
through several of its steps is refused by both).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict

from .. import _creation
from ..ops.pointwise import maximum
from ..ops.reduction import amax
from ..ops.shape import cat
from ..autograd.grad_mode import set_grad_enabled
from ..tensor import Tensor

from .optimizer import hyper

__all__ = ["run"]


def _scalar(x: Any) -> Any:
    """A tensor hyperparameter with one element as a 0-d tensor; other values unchanged."""
    if isinstance(x, Tensor) and x.dim() != 0:
        return x.squeeze()
    return x


def _needs_grad(x: Any) -> bool:
    return isinstance(x, Tensor) and x.requires_grad


def _grad(p: Tensor, group: Dict[str, Any]) -> Tensor:
    g = p.grad
    assert g is not None, "the step only visits parameters with a gradient"
    return -g if group.get("maximize") else g


def _l2(g: Tensor, p: Tensor, wd: Any) -> Tensor:
    """``g + wd * p``; a tensor ``wd`` that requires grad is kept in the graph."""
    if _needs_grad(wd):
        return g.addcmul(p.clone(), wd)
    return g.add(p, alpha=hyper(wd))


def _tick(state: Dict[str, Any]) -> float:
    t = state["step"]
    t._data += 1
    return float(t._data)


def _descend(p: Tensor, direction: Tensor, lr: Any) -> None:
    """``p -= lr * direction`` in place."""
    if _needs_grad(lr):
        p.addcmul_(direction, lr, value=-1)
    else:
        p.add_(direction, alpha=-hyper(lr))


def _power(beta: Any, step: Tensor) -> Tensor:
    """``beta ** step`` with the ``step`` tensor, in the dtype torch gives it (float32 unless
    float64 is the default). For a float ``beta``, rounded to that dtype as torch's scalar is,
    the power is taken in float64 and rounded once: torch's float32 ``pow`` is correctly
    rounded where NumPy's float32 power can be one ulp off (``0.9 ** 4``)."""
    if isinstance(beta, Tensor):
        return beta ** (step.clone() if beta.requires_grad else step)
    base = float(step.dtype.np.type(beta))            # the scalar in the op's dtype first
    return _creation.tensor(base ** float(step.item()), dtype=step.dtype)


# ---------------------------------------------------------------------------- algorithms
def _sgd(group: Dict[str, Any], p: Tensor, states: Dict[Tensor, Any]) -> None:
    g = _grad(p, group)
    if group["weight_decay"] != 0:
        g = _l2(g, p, group["weight_decay"])
    momentum = group["momentum"]
    if momentum != 0:
        state = states[p]               # no state entry without momentum, as torch
        buf = state.get("momentum_buffer")
        if buf is None:
            buf = state["momentum_buffer"] = g.detach().clone()
        else:
            buf.mul_(momentum).add_(g, alpha=1 - group["dampening"])
        g = g.add(buf, alpha=momentum) if group["nesterov"] else buf
    _descend(p, g, _scalar(group["lr"]))


def _adam(group: Dict[str, Any], p: Tensor, states: Dict[Tensor, Any]) -> None:
    state = states[p]
    amsgrad = group["amsgrad"]
    lr, wd = _scalar(group["lr"]), group["weight_decay"]
    beta1, beta2 = (_scalar(b) for b in group["betas"])
    g = _grad(p, group)
    step = state["step"]
    _tick(state)
    if wd != 0:
        if group["decoupled_weight_decay"]:
            p.mul_(1 - lr * wd)
        else:
            g = _l2(g, p, wd)
    m, v = state["exp_avg"], state["exp_avg_sq"]
    m.lerp_(g, 1 - beta1)
    if _needs_grad(beta2):
        v.lerp_(g.square(), 1 - beta2)
    else:
        v.mul_(beta2).addcmul_(g, g, value=1 - hyper(beta2))
    bc1 = 1 - _power(beta1, step)
    bc2 = 1 - _power(beta2, step)
    neg_step = -(lr / bc1)
    if amsgrad:
        vmax = state["max_exp_avg_sq"]
        vmax.copy_(maximum(vmax.clone(), v))
        v = vmax
    denom = (v.sqrt() / (bc2.sqrt() * neg_step)).add_(group["eps"] / neg_step)
    p.addcdiv_(m.clone(), denom)


def _rmsprop(group: Dict[str, Any], p: Tensor, states: Dict[Tensor, Any]) -> None:
    state = states[p]
    momentum, alpha = group["momentum"], group["alpha"]
    _tick(state)
    g = _grad(p, group)
    if group["weight_decay"] != 0:
        g = _l2(g, p, group["weight_decay"])
    sq = state["square_avg"]
    sq.mul_(alpha).addcmul_(g, g, value=1 - alpha)
    if group["centered"]:
        ga = state["grad_avg"]
        ga.lerp_(g, 1 - alpha)
        avg = sq.addcmul(ga, ga, value=-1).sqrt()
    else:
        avg = sq.sqrt()
    avg = avg.add(group["eps"])
    lr = _scalar(group["lr"])
    if momentum > 0:
        buf = state["momentum_buffer"]
        buf.mul_(momentum).addcdiv_(g, avg)
        _descend(p, buf, lr)
    else:
        _descend(p, g / avg, lr) if _needs_grad(lr) else p.addcdiv_(g, avg, value=-hyper(lr))


def _adagrad(group: Dict[str, Any], p: Tensor, states: Dict[Tensor, Any]) -> None:
    state = states[p]
    t = _tick(state)
    g = _grad(p, group)
    if group["weight_decay"] != 0:
        g = _l2(g, p, group["weight_decay"])
    clr = _scalar(group["lr"]) / (1 + (t - 1) * group["lr_decay"])
    s = state["sum"]
    s.addcmul_(g, g, value=1)
    std = s.sqrt() + group["eps"]
    _descend(p, g / std, clr) if _needs_grad(clr) else p.addcdiv_(g, std, value=-hyper(clr))


def _adadelta(group: Dict[str, Any], p: Tensor, states: Dict[Tensor, Any]) -> None:
    state = states[p]
    _tick(state)
    rho, eps = group["rho"], group["eps"]
    g = _grad(p, group)
    if group["weight_decay"] != 0:
        g = _l2(g, p, group["weight_decay"])
    sq, acc = state["square_avg"], state["acc_delta"]
    sq.mul_(rho).addcmul_(g, g, value=1 - rho)
    delta = acc.add(eps).sqrt() / sq.add(eps).sqrt() * g
    acc.mul_(rho).addcmul_(delta, delta, value=1 - rho)
    _descend(p, delta, _scalar(group["lr"]))


def _adamax(group: Dict[str, Any], p: Tensor, states: Dict[Tensor, Any]) -> None:
    state = states[p]
    t = _tick(state)
    beta1, beta2 = group["betas"]
    g = _grad(p, group)
    if group["weight_decay"] != 0:
        g = _l2(g, p, group["weight_decay"])
    m, u = state["exp_avg"], state["exp_inf"]
    m.lerp_(g, 1 - beta1)
    both = cat([u.mul_(beta2).unsqueeze(0), g.abs().add(group["eps"]).unsqueeze(0)], 0)
    u.copy_(amax(both, 0))
    clr = _scalar(group["lr"]) / (1 - beta1 ** t)
    if _needs_grad(clr):
        _descend(p, m / u, clr)
    else:
        p.addcdiv_(m, u, value=-hyper(clr))


def _nadam(group: Dict[str, Any], p: Tensor, states: Dict[Tensor, Any]) -> None:
    state = states[p]
    t = _tick(state)
    lr, wd, psi = _scalar(group["lr"]), group["weight_decay"], group["momentum_decay"]
    beta1, beta2 = group["betas"]
    g = _grad(p, group)
    if wd != 0:
        if group["decoupled_weight_decay"]:
            p.mul_(1 - lr * wd)
        else:
            g = _l2(g, p, wd)
    mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * psi))
    mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * psi))
    prod = state["mu_product"]
    prod.mul_(mu)
    m, v = state["exp_avg"], state["exp_avg_sq"]
    m.lerp_(g, 1 - beta1)
    v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
    denom = v.div(1 - beta2 ** t).sqrt().add(group["eps"])
    p.addcdiv_(g * (-lr * (1.0 - mu) / (1.0 - prod)), denom)
    p.addcdiv_(m * (-lr * mu_next / (1.0 - prod * mu_next)), denom)


def _radam(group: Dict[str, Any], p: Tensor, states: Dict[Tensor, Any]) -> None:
    state = states[p]
    t = _tick(state)
    lr, wd = _scalar(group["lr"]), group["weight_decay"]
    beta1, beta2 = group["betas"]
    g = _grad(p, group)
    if wd != 0:
        if group["decoupled_weight_decay"]:
            p.mul_(1 - lr * wd)
        else:
            g = _l2(g, p, wd)
    m, v = state["exp_avg"], state["exp_avg_sq"]
    m.lerp_(g, 1 - beta1)
    v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
    bc2 = 1 - beta2 ** t
    m_hat = m / (1 - beta1 ** t)
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * t * (beta2 ** t) / bc2
    if rho_t > 5.0:
        rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                         / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
        adaptive = (bc2 ** 0.5) / v.sqrt().add(group["eps"])
        p.add_(m_hat * lr * adaptive * rect, alpha=-1.0)
    else:
        p.add_(m_hat * lr, alpha=-1.0)


def _asgd(group: Dict[str, Any], p: Tensor, states: Dict[Tensor, Any]) -> None:
    state = states[p]
    lr = hyper(group["lr"])
    t = _tick(state)
    lambd, alpha = group["lambd"], group["alpha"]
    g = _grad(p, group)
    if group["weight_decay"] != 0:
        g = _l2(g, p, group["weight_decay"])
    eta, mu, ax = state["eta"], state["mu"], state["ax"]
    e = eta.item()
    p.mul_(1 - lambd * e)
    p.add_(g, alpha=-e)
    if mu.item() != 1:
        ax.add_(p.sub(ax).mul_(mu))
    else:
        ax.copy_(p)
    eta.copy_(_creation.tensor(lr / ((1 + lambd * lr * t) ** alpha)))
    mu.copy_(_creation.tensor(1 / max(1, t - group["t0"])))


def _rprop(group: Dict[str, Any], p: Tensor, states: Dict[Tensor, Any]) -> None:
    state = states[p]
    _tick(state)
    etaminus, etaplus = group["etas"]
    lo, hi = group["step_sizes"]
    g = _grad(p, group)
    prev, size = state["prev"], state["step_size"]
    factor = g.mul(prev.clone()).sign()
    factor[factor.gt(0)] = etaplus
    factor[factor.lt(0)] = etaminus
    factor[factor.eq(0)] = 1
    size.mul_(factor).clamp_(lo, hi)
    g = g.clone()
    g[factor.eq(etaminus)] = 0
    p.addcmul_(g.sign(), size, value=-1)
    prev.copy_(g)


_ALGORITHMS: Dict[str, Callable[[Dict[str, Any], Tensor, Dict[Tensor, Any]], None]] = {
    "SGD": _sgd, "Adam": _adam, "AdamW": _adam, "RMSprop": _rmsprop, "Adagrad": _adagrad,
    "Adadelta": _adadelta, "Adamax": _adamax, "NAdam": _nadam, "RAdam": _radam,
    "ASGD": _asgd, "Rprop": _rprop,
}


def run(optimizer: Any, group: Dict[str, Any], name: str) -> None:
    """Update the parameters of ``group`` with recorded tensor ops (grad mode on, as torch's
    step runs for a differentiable optimizer); ``name`` selects the algorithm."""
    if group.get("foreach") and name != "SGD":
        raise AssertionError("_foreach ops don't support autograd")
    update = _ALGORITHMS[name]
    with set_grad_enabled(True):
        for p in group["params"]:
            if p.grad is None:
                continue
            if not optimizer.state.get(p):
                fresh: dict = {}
                optimizer._init_state(fresh, p, group)
                if fresh:           # SGD without momentum keeps no state, as in torch
                    optimizer.state[p] = fresh
            update(group, p, optimizer.state)
