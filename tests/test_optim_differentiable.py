"""``differentiable=True`` optimizers against torch's (Note [Differentiable optimizer steps]):
one recorded step's outputs, node names and vector-Jacobian products; ndgrad's own gradcheck
of the step (torch's ``_diff_fn`` tests, as behaviour); gradients of a loss after several
steps with respect to the initial parameters and to tensor hyperparameters; the errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ndgrad

pytestmark = pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph")
# (optimizer, options, state keys given as inputs) as torch's TestDifferentiableOptimizer.
CASES = [
    ("SGD", {"lr": 0.9}, ["momentum_buffer"]),
    ("SGD", {"lr": 0.9, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1},
     ["momentum_buffer"]),
    ("SGD", {"lr": 0.9, "momentum": 0.5, "dampening": 0.2, "maximize": True}, []),
    ("Adam", {"lr": 0.9, "amsgrad": True}, ["step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"]),
    ("Adam", {"lr": 0.9, "weight_decay": 0.1}, ["step", "exp_avg", "exp_avg_sq"]),
    ("AdamW", {"lr": 0.9, "amsgrad": True}, ["step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"]),
    ("RMSprop", {"lr": 0.9, "maximize": True, "momentum": 0.9, "centered": True,
                 "weight_decay": 0.1}, ["step", "square_avg", "momentum_buffer", "grad_avg"]),
    ("RMSprop", {"lr": 0.9}, ["step", "square_avg"]),
    ("Adadelta", {"lr": 0.9, "weight_decay": 0.1}, ["step", "square_avg", "acc_delta"]),
    ("Adagrad", {"lr": 0.9, "weight_decay": 0.1, "lr_decay": 0.1}, ["step", "sum"]),
    ("Adamax", {"lr": 0.9, "weight_decay": 0.1}, ["step", "exp_avg", "exp_inf"]),
    ("ASGD", {"lr": 0.9}, ["step", "eta", "mu", "ax"]),
    ("ASGD", {"lr": 0.9, "weight_decay": 0.1, "maximize": True}, ["step", "eta", "mu", "ax"]),
    ("Rprop", {"lr": 0.9}, ["step", "prev", "step_size"]),
    ("NAdam", {"lr": 0.9}, ["step", "exp_avg", "exp_avg_sq", "mu_product"]),
    ("NAdam", {"lr": 0.9, "decoupled_weight_decay": True, "weight_decay": 0.1},
     ["step", "exp_avg", "exp_avg_sq", "mu_product"]),
    ("RAdam", {"lr": 0.9}, ["step", "exp_avg", "exp_avg_sq"]),
    ("RAdam", {"lr": 0.9, "weight_decay": 0.1, "decoupled_weight_decay": True},
     ["step", "exp_avg", "exp_avg_sq"]),
]
IDS = [f"{name}-{i}" for i, (name, _, _) in enumerate(CASES)]
COUNTERS = {"step", "eta", "mu"}          # state that is not a continuous variable


def _initial(keys, seed=0):
    rng = np.random.default_rng(seed)
    out = {"p": rng.random(10), "g": rng.random(10)}
    fixed = {"step": 10.0, "eta": 0.9, "mu": 1.0, "mu_product": 1.0}
    for k in keys:
        out[k] = np.array(fixed[k]) if k in fixed else rng.random(10)
    if "grad_avg" in out:
        out["grad_avg"] = 1e-2 * out["grad_avg"]
    return out


def _diff_fn(lib, name, kw, keys):
    """(p, grad, *state) -> (p after one step, *state that requires grad), as torch's
    ``_diff_fn``: the parameter is a clone (a non-leaf) and the state is cloned in."""
    def fn(p0, g0, *state):
        p = p0.clone()
        p.grad = g0
        opt = getattr(lib.optim, name)([p], differentiable=True, **kw)
        opt.state[p].update({k: v.clone() for k, v in zip(keys, state)})
        opt.step()
        return (p,) + tuple(v for v in opt.state[p].values()
                            if isinstance(v, lib.Tensor) and v.requires_grad)
    return fn


def _inputs(lib, arrays, keys):
    def t(a, rg):
        return lib.tensor(a, dtype=lib.float64, requires_grad=rg)
    return [t(arrays["p"], True), t(arrays["g"], True)] + [t(arrays[k], k not in COUNTERS)
                                                          for k in keys]


@pytest.mark.parametrize("name,kw,keys", CASES, ids=IDS)
def test_one_step_values_nodes_and_vjps_equal_torch(name, kw, keys):
    arrays = _initial(keys)
    res = []
    for lib in (torch, ndgrad):
        ins = _inputs(lib, arrays, keys)
        outs = _diff_fn(lib, name, kw, keys)(*ins)
        rng = np.random.default_rng(1)
        cots = [lib.tensor(rng.standard_normal(tuple(o.shape))) for o in outs]
        wrt = [x for x in ins if x.requires_grad]
        grads = [None if g is None else g.numpy()
                 for g in lib.autograd.grad(outs, wrt, cots, allow_unused=True)]
        res.append(([o.detach().numpy() for o in outs], [type(o.grad_fn).__name__ for o in outs],
                    grads))
    (tv, tn, tg), (nv, nn_, ng) = res
    assert nn_ == tn
    for a, b in zip(nv, tv):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    assert [g is None for g in ng] == [g is None for g in tg]
    for a, b in zip(ng, tg):
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name,kw,keys", [c for c in CASES if c[2]],
                         ids=[i for i, c in zip(IDS, CASES) if c[2]])
def test_one_step_passes_gradcheck(name, kw, keys):
    """As torch's: a momentum buffer made on this step is a detached copy of the gradient,
    so the case without a given buffer (SGD-2) is checked against torch only, above."""
    arrays = _initial(keys, seed=2)
    ins = _inputs(ndgrad, arrays, keys)
    assert ndgrad.autograd.gradcheck(_diff_fn(ndgrad, name, kw, keys), tuple(ins))


def _unrolled(lib, name, kw, p0, steps=3):
    """A loss after ``steps`` recorded updates of ``p = p0.clone()`` on a quadratic whose
    gradients are taken with ``create_graph``; returns (loss, p)."""
    A = lib.tensor([[2.0, 0.5, 0.0], [0.5, 1.0, 0.3], [0.0, 0.3, 1.5]], dtype=lib.float64)
    b = lib.tensor([1.0, -2.0, 0.5], dtype=lib.float64)
    p = p0.clone()
    opt = getattr(lib.optim, name)([p], differentiable=True, **kw)

    def f(x):
        x = x.clone()          # the ops save the clone, which no update modifies
        return 0.5 * (x @ (A @ x)) - b @ x + (x ** 4).sum() * 0.1
    for _ in range(steps):
        f(p).backward(inputs=(p,), create_graph=True)
        opt.step()
        opt.zero_grad()
    return f(p), p


UNROLLED = [
    ("SGD", {"lr": 0.1, "momentum": 0.9}), ("SGD", {"lr": 0.1, "nesterov": True,
                                                    "momentum": 0.5, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.1}), ("Adam", {"lr": 0.1, "amsgrad": True, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.1}), ("RMSprop", {"lr": 0.05, "momentum": 0.5}),
    ("RMSprop", {"lr": 0.05, "alpha": 0.9}),
    ("Adagrad", {"lr": 0.1}), ("Adadelta", {"lr": 0.5}), ("Adamax", {"lr": 0.1}),
    ("NAdam", {"lr": 0.1}), ("RAdam", {"lr": 0.1}), ("ASGD", {"lr": 0.1, "t0": 1}),
    ("Rprop", {"lr": 0.1}),
]


# torch's step saves a state tensor for backward that the next step updates in place
# (amsgrad's ``exp_avg_sq``, Adamax's ``exp_avg``, Rprop's ``step_size``): its version check
# refuses the backward through several steps, and ndgrad's does the same.
REFUSED = {"Adam-3", "Adamax-9", "Rprop-13"}


@pytest.mark.parametrize("name,kw,refused", [
    pytest.param(n, kw, f"{n}-{i}" in REFUSED, id=f"{n}-{i}") for i, (n, kw) in
    enumerate(UNROLLED)])
def test_loss_after_three_steps_differentiates_like_torch(name, kw, refused):
    """d(loss after 3 steps)/d(initial parameters), first and second order, equal torch's."""
    p_init = np.array([0.3, -0.7, 1.1])
    res = []
    for lib in (torch, ndgrad):
        p0 = lib.tensor(p_init, dtype=lib.float64, requires_grad=True)
        loss, p = _unrolled(lib, name, kw, p0)
        if refused:
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                lib.autograd.grad(loss, p0)
            continue
        (g,) = lib.autograd.grad(loss, p0, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), p0)
        res.append((loss.item(), p.detach().numpy(), g.detach().numpy(), h.numpy()))
    if refused:
        return
    for a, b in zip(res[1], res[0]):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-13)


def _meta_grads(lib, name, hyper, steps=2):
    """torch's multi-step hyperparameter test: MSE of ``x * sum(p)`` against ``y`` after
    ``steps`` updates, differentiated with respect to tensor hyperparameters."""
    rng = np.random.default_rng(3)
    p = lib.tensor(rng.random(10), dtype=lib.float64, requires_grad=True).clone()
    kw = {"differentiable": True}
    hyp = {k: lib.tensor(v, dtype=lib.float64, requires_grad=True) for k, v in hyper.items()}
    wrt = list(hyp.values())
    if "beta1" in hyp:
        kw["betas"] = (hyp.pop("beta1"), hyp.pop("beta2"))
    kw.update(hyp)
    opt = getattr(lib.optim, name)([p], **kw)
    x = lib.tensor([1.0], dtype=lib.float64)
    y = lib.tensor([2.0], dtype=lib.float64)
    for _ in range(steps):
        loss = lib.nn.functional.mse_loss(x * p.sum(), y)
        loss.backward(inputs=(p,), create_graph=True)
        opt.step()
        opt.zero_grad()
    loss = lib.nn.functional.mse_loss(x * p.sum(), y)
    return loss.item(), [g.numpy() for g in lib.autograd.grad(loss, wrt)]


@pytest.mark.parametrize("name,hyper", [
    ("Adam", {"lr": 0.001}), ("Adam", {"weight_decay": 0.999}),
    ("Adam", {"beta1": 0.9, "beta2": 0.999}), ("AdamW", {"lr": 0.01, "weight_decay": 0.5}),
    ("AdamW", {"beta1": 0.8, "beta2": 0.99}), ("SGD", {"lr": 0.05}),
    ("SGD", {"lr": 0.05, "weight_decay": 0.3}),
])
def test_gradients_with_respect_to_hyperparameters_equal_torch(name, hyper):
    t = _meta_grads(torch, name, hyper)
    n = _meta_grads(ndgrad, name, hyper)
    np.testing.assert_allclose(n[0], t[0], rtol=1e-12, atol=1e-20)
    for a, b in zip(n[1], t[1]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-14)


def test_hyperparameter_gradient_passes_gradcheck():
    def f(lr, beta1, beta2):
        p = ndgrad.tensor([0.2, -0.4, 0.9], dtype=ndgrad.float64, requires_grad=True).clone()
        opt = ndgrad.optim.Adam([p], lr=lr, betas=(beta1, beta2), differentiable=True)
        for _ in range(2):
            q = p.clone()
            ((q ** 2).sum() + q.prod()).backward(inputs=(p,), create_graph=True)
            opt.step()
            opt.zero_grad()
        return (p.clone() ** 2).sum()
    args = tuple(ndgrad.tensor(v, dtype=ndgrad.float64, requires_grad=True)
                 for v in (0.05, 0.9, 0.99))
    assert ndgrad.autograd.gradcheck(f, args)
    assert ndgrad.autograd.gradgradcheck(f, args)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adagrad"])
def test_fused_and_differentiable_refused(name):
    for lib in (torch, ndgrad):
        with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
            getattr(lib.optim, name)([lib.zeros(2, requires_grad=True)], fused=True,
                                     differentiable=True)


@pytest.mark.parametrize("name", ["Adam", "RMSprop", "Rprop", "NAdam", "ASGD"])
def test_foreach_and_differentiable_refused_at_step(name):
    for lib in (torch, ndgrad):
        p = lib.zeros(2, dtype=lib.float64, requires_grad=True).clone()
        p.grad = lib.ones(2, dtype=lib.float64)
        opt = getattr(lib.optim, name)([p], foreach=True, differentiable=True)
        with pytest.raises(AssertionError, match="_foreach ops don't support autograd"):
            opt.step()


def test_sgd_foreach_differentiable_records_like_torch():
    out = []
    for lib in (torch, ndgrad):
        w = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        p = w.clone()
        p.grad = lib.tensor([0.5, -1.0], dtype=lib.float64)
        lib.optim.SGD([p], lr=0.1, foreach=True, differentiable=True).step()
        out.append((type(p.grad_fn).__name__, p.detach().numpy()))
    assert out[0][0] == out[1][0]
    np.testing.assert_allclose(out[1][1], out[0][1], rtol=1e-15)


@pytest.mark.parametrize("name", ["SGD", "Adam", "Rprop"])
def test_leaf_parameter_refused_as_torch(name):
    for lib in (torch, ndgrad):
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        w.grad = lib.ones(2)
        opt = getattr(lib.optim, name)([w], differentiable=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being "
                                               "used in an in-place operation"):
            opt.step()
        assert lib.equal(w.detach(), lib.tensor([1.0, 2.0]))


def test_step_records_even_under_no_grad():
    """A differentiable step turns grad mode on, as torch's does."""
    for lib in (torch, ndgrad):
        w = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        p = w.clone()
        p.grad = lib.ones(2, dtype=lib.float64)
        opt = lib.optim.Adam([p], differentiable=True)
        with lib.no_grad():
            opt.step()
        assert type(p.grad_fn).__name__ == "AddcdivBackward0"
        assert not lib.is_grad_enabled() or lib.is_grad_enabled()


def test_asgd_averaging_backward_refused_as_torch():
    """With ``mu != 1`` ASGD saves ``mu`` for backward and then overwrites it: torch's version
    check refuses that backward, and ndgrad's does too."""
    keys = ["step", "eta", "mu", "ax"]
    arrays = _initial(keys)
    arrays["mu"] = np.array(0.5)
    for lib in (torch, ndgrad):
        ins = _inputs(lib, arrays, keys)
        outs = _diff_fn(lib, "ASGD", {"lr": 0.9}, keys)(*ins)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            outs[-1].sum().backward()
