"""ndgrad.optim against torch.optim: update trajectories (float64, every algorithm and its
options), state_dict layout, load_state_dict, argument errors, step hooks, zero_grad and the
``.grad`` identity and version rules of Note [Optimizer updates]."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
import torch

import ndgrad
import ndgrad.optim as nopt

CONFIGS = [
    ("SGD", dict(lr=0.05)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, maximize=True)),
    ("Adam", dict(lr=0.1)),
    ("Adam", dict(lr=0.1, amsgrad=True, weight_decay=0.1, maximize=True)),
    ("Adam", dict(lr=0.1, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.1)),
    ("AdamW", dict(lr=0.1, amsgrad=True, betas=(0.8, 0.99))),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1, weight_decay=0.1)),
    ("Adadelta", dict(weight_decay=0.1)),
    ("Adamax", dict(lr=0.1, weight_decay=0.1)),
    ("NAdam", dict(lr=0.1)),
    ("NAdam", dict(lr=0.1, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.1)),
    ("RAdam", dict(lr=0.1, weight_decay=0.1, decoupled_weight_decay=True)),
    ("ASGD", dict(lr=0.05, t0=3, weight_decay=0.1)),
    ("Rprop", dict(lr=0.05, etas=(0.4, 1.3), step_sizes=(1e-4, 0.2))),
    ("LBFGS", dict(lr=0.5, max_iter=5)),
    ("LBFGS", dict(line_search_fn="strong_wolfe", max_iter=10, history_size=3)),
]


def _problem(lib, seed=0):
    rng = np.random.default_rng(seed)
    A, b = rng.standard_normal((5, 3)), rng.standard_normal(5)
    w = lib.tensor(rng.standard_normal(3), requires_grad=True)
    c = lib.tensor(rng.standard_normal((2, 2)), requires_grad=True)
    At, bt = lib.tensor(A), lib.tensor(b)

    def loss_fn():
        return ((At @ w - bt) ** 2).sum() + 0.1 * (c ** 3).sum() + (c ** 2).sum()
    return [w, c], loss_fn


def _run(lib, ns, name, kw, steps):
    params, loss_fn = _problem(lib)
    opt = getattr(ns, name)([{"params": [params[0]]}, {"params": [params[1]]}]
                            if name != "LBFGS" else params, **kw)
    losses = []

    def closure():
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss
    for _ in range(steps):
        if name == "LBFGS":
            losses.append(float(opt.step(closure).detach()))
        else:
            losses.append(float(closure().detach()))
            opt.step()
    return opt, params, losses


@pytest.mark.parametrize("name,kw", CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in
                                                 enumerate(CONFIGS)])
def test_trajectory_matches_torch(name, kw):
    steps = 3 if name == "LBFGS" else 8
    t_opt, t_params, t_losses = _run(torch, torch.optim, name, kw, steps)
    n_opt, n_params, n_losses = _run(ndgrad, nopt, name, kw, steps)
    np.testing.assert_allclose(n_losses, t_losses, rtol=1e-9, atol=1e-12)
    for n, t in zip(n_params, t_params):
        np.testing.assert_allclose(n.detach().numpy(), t.detach().numpy(), rtol=1e-9,
                                   atol=1e-12)
    if name == "LBFGS":
        return
    # state_dict: torch's layout, keys, dtypes and values
    t_sd, n_sd = t_opt.state_dict(), n_opt.state_dict()
    assert [{k: v for k, v in g.items()} for g in n_sd["param_groups"]] == \
        [{k: v for k, v in g.items()} for g in t_sd["param_groups"]]
    assert sorted(n_sd["state"]) == sorted(t_sd["state"])
    for i in t_sd["state"]:
        assert list(n_sd["state"][i]) == list(t_sd["state"][i])
        for k, tv in t_sd["state"][i].items():
            nv = n_sd["state"][i][k]
            assert str(nv.dtype).split(".")[-1] == str(tv.dtype).split(".")[-1], k
            np.testing.assert_allclose(nv.numpy(), tv.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name,kw", [c for c in CONFIGS if c[0] != "LBFGS"][::2])
def test_load_state_dict_resumes(name, kw):
    """Four steps, save, a fresh optimizer loads the state and the next four steps agree
    with an uninterrupted run of eight."""
    _, full, _ = _run(ndgrad, nopt, name, kw, 8)
    opt, params, _ = _run(ndgrad, nopt, name, kw, 4)
    sd = copy.deepcopy(opt.state_dict())
    params2 = [p.detach().clone().requires_grad_(True) for p in params]
    _, loss_fn = _problem(ndgrad)
    opt2 = getattr(nopt, name)([{"params": [params2[0]]}, {"params": [params2[1]]}], **kw)
    opt2.load_state_dict(sd)

    # the same loss function, on the new parameters
    rng = np.random.default_rng(0)
    A, b = ndgrad.tensor(rng.standard_normal((5, 3))), ndgrad.tensor(rng.standard_normal(5))
    for _ in range(4):
        opt2.zero_grad()
        w, c = params2
        (((A @ w - b) ** 2).sum() + 0.1 * (c ** 3).sum() + (c ** 2).sum()).backward()
        opt2.step()
    # (1e-9: loading casts scalar states such as NAdam's float32 mu_product to the parameter's
    # float64, as torch does, so the resumed run rounds differently in the last digits)
    for a, b_ in zip(params2, full):
        np.testing.assert_allclose(a.detach().numpy(), b_.detach().numpy(), rtol=1e-9)


def test_load_state_dict_errors_and_casts():
    w = ndgrad.zeros(2, dtype=ndgrad.float64, requires_grad=True)
    opt = nopt.Adam([w])
    w.grad = ndgrad.ones(2, dtype=ndgrad.float64)
    opt.step()
    sd = opt.state_dict()
    w32 = ndgrad.zeros(2, requires_grad=True)
    opt32 = nopt.Adam([w32])
    opt32.load_state_dict(sd)
    assert opt32.state[w32]["exp_avg"].dtype == ndgrad.float32
    assert opt32.state[w32]["step"].dtype == ndgrad.float32
    assert opt32.state[w32]["exp_avg"] is not sd["state"][0]["exp_avg"]
    with pytest.raises(ValueError, match="different number of parameter groups"):
        nopt.Adam([{"params": [w32]}, {"params": [ndgrad.zeros(1, requires_grad=True)]}]
                  ).load_state_dict(sd)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        nopt.Adam([w32, ndgrad.zeros(1, requires_grad=True)]).load_state_dict(sd)


def _shared_state_run(lib, name):
    """Load an optimizer from another's live state_dict() (no deepcopy), step both."""
    p = lib.nn.Parameter(lib.ones(2, dtype=lib.float64))
    q = lib.nn.Parameter(lib.ones(2, dtype=lib.float64))
    kw = {"momentum": 0.9} if name in ("SGD", "RMSprop") else {}
    o, o2 = getattr(lib.optim, name)([p], lr=0.1, **kw), getattr(lib.optim, name)([q], lr=0.1,
                                                                                   **kw)
    p.grad = lib.ones(2, dtype=lib.float64)
    o.step()
    o2.load_state_dict(o.state_dict())
    shared = {k: v is o.state[p][k] for k, v in o2.state[q].items()}
    p.grad = lib.tensor([1.0, 2.0], dtype=lib.float64)
    q.grad = lib.tensor([3.0, 1.0], dtype=lib.float64)
    o.step()
    o2.step()
    state = {k: v.tolist() for k, v in o2.state[q].items()}
    return shared, p.tolist(), q.tolist(), state


@pytest.mark.parametrize("name", ["Adam", "SGD", "Adagrad", "RMSprop"])
def test_load_state_dict_shares_uncast_state_tensors_as_torch(name):
    """torch's load_state_dict keeps the given state tensors when no cast is needed (``step``
    too): two optimizers loaded from one live state_dict() update the same tensors."""
    got, want = _shared_state_run(ndgrad, name), _shared_state_run(torch, name)
    assert got[0] == want[0] and all(want[0].values())
    for g, w in zip(got[1:3], want[1:3]):
        np.testing.assert_allclose(g, w, rtol=1e-14)
    assert list(got[3]) == list(want[3])
    for k in want[3]:
        np.testing.assert_allclose(got[3][k], want[3][k], rtol=1e-14)


@pytest.mark.parametrize("call,err,msg", [
    (lambda o, lib, p: o.SGD(p, lr=-1), ValueError, "Invalid learning rate: -1"),
    (lambda o, lib, p: o.SGD(p, momentum=-0.5), ValueError, "Invalid momentum value: -0.5"),
    (lambda o, lib, p: o.SGD(p, nesterov=True), ValueError,
     "Nesterov momentum requires a momentum and zero dampening"),
    (lambda o, lib, p: o.Adam(p, betas=(1.0, 0.9)), ValueError,
     "Invalid beta parameter at index 0: 1.0"),
    (lambda o, lib, p: o.Adam(p, eps=-1.0), ValueError, "Invalid epsilon value: -1.0"),
    (lambda o, lib, p: o.AdamW(p, weight_decay=-1), ValueError, "Invalid weight_decay value: -1"),
    (lambda o, lib, p: o.Adadelta(p, rho=2.0), ValueError, "Invalid rho value: 2.0"),
    (lambda o, lib, p: o.Rprop(p, etas=(1.5, 1.2)), ValueError, "Invalid eta values: 1.5, 1.2"),
    (lambda o, lib, p: o.LBFGS([{"params": p}, {"params": [lib.zeros(1, requires_grad=True)]}]),
     ValueError, "LBFGS doesn't support per-parameter options"),
    (lambda o, lib, p: o.SGD(p[0], lr=0.1), TypeError,
     "params argument given to the optimizer should be an iterable of Tensors or dicts, but "
     "got torch.FloatTensor"),
    (lambda o, lib, p: o.SGD([], lr=0.1), ValueError, "optimizer got an empty parameter list"),
    (lambda o, lib, p: o.SGD([{"params": set(p)}], lr=0.1), TypeError, "ordered collections"),
    (lambda o, lib, p: o.SGD([{"params": p}, {"params": p}], lr=0.1), ValueError,
     "some parameters appear in more than one parameter group"),
    (lambda o, lib, p: o.SGD([1.0], lr=0.1), TypeError,
     "optimizer can only optimize Tensors, but one of the params is float"),
    (lambda o, lib, p: o.SGD([p[0] * 2], lr=0.1), ValueError, "can't optimize a non-leaf Tensor"),
])
def test_argument_errors_like_torch(call, err, msg):
    pattern = msg.replace("(", r"\(").replace(")", r"\)")
    for lib, ns in ((torch, torch.optim), (ndgrad, nopt)):
        with pytest.raises(err, match=pattern):
            call(ns, lib, [lib.zeros(2, requires_grad=True)])


def test_zero_grad_and_grad_identity_and_version():
    w = ndgrad.ones(3, requires_grad=True)
    opt = nopt.SGD([w], lr=0.1, momentum=0.9)
    (w * w).sum().backward()
    g = w.grad
    v = w._version
    opt.step()
    assert w._version == v + 1
    assert w.grad is g                      # the optimizer reads .grad, never replaces it
    (w * w).sum().backward()                # accumulates in place into the same tensor
    assert w.grad is g
    opt.zero_grad(set_to_none=False)
    assert w.grad is g and (g == 0).all().item()
    opt.zero_grad()
    assert w.grad is None
    opt.step()                              # no gradient: nothing happens
    assert w._version == v + 1


def test_step_hooks_order_and_closure():
    w = ndgrad.ones(1, requires_grad=True)
    opt = nopt.SGD([w], lr=0.1)
    seen = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: seen.append(("pre", o is opt)))
    h2 = opt.register_step_post_hook(lambda o, a, k: seen.append(("post", o is opt)))
    g1 = nopt.optimizer.register_optimizer_step_pre_hook(lambda o, a, k: seen.append("gpre"))

    def closure():
        opt.zero_grad()
        loss = (w * 3).sum()
        loss.backward()
        return loss
    loss = opt.step(closure)
    assert loss.item() == 3.0 and abs(w.item() - 0.7) < 1e-6
    assert seen == ["gpre", ("pre", True), ("post", True)]
    for h in (h1, h2, g1):
        h.remove()
    opt.step(closure)
    assert len(seen) == 3


def test_repr_like_torch():
    w = ndgrad.ones(1, requires_grad=True)
    tw = torch.ones(1, requires_grad=True)
    assert repr(nopt.Adam([w], lr=0.1)) == repr(torch.optim.Adam([tw], lr=0.1))
    assert repr(nopt.SGD([w], lr=0.1)) == repr(torch.optim.SGD([tw], lr=0.1))


def test_add_param_group_defaults():
    a, b = ndgrad.ones(1, requires_grad=True), ndgrad.ones(2, requires_grad=True)
    opt = nopt.Adam([a], lr=0.1)
    opt.add_param_group({"params": b, "betas": (0.5, 0.9)})
    assert opt.param_groups[1]["lr"] == 0.1 and opt.param_groups[1]["betas"] == (0.5, 0.9)
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})


# ---------------------------------------------------------------------------- schedulers
SCHEDULERS = [
    ("LambdaLR", lambda S, o: S.LambdaLR(o, lambda e: 0.9 ** e)),
    ("MultiplicativeLR", lambda S, o: S.MultiplicativeLR(o, lambda e: 0.95)),
    ("StepLR", lambda S, o: S.StepLR(o, 3, 0.5)),
    ("MultiStepLR", lambda S, o: S.MultiStepLR(o, [2, 5, 5, 9], 0.5)),
    ("ConstantLR", lambda S, o: S.ConstantLR(o, 0.25, 4)),
    ("LinearLR", lambda S, o: S.LinearLR(o, 0.2, 0.9, 6)),
    ("ExponentialLR", lambda S, o: S.ExponentialLR(o, 0.9)),
    ("PolynomialLR", lambda S, o: S.PolynomialLR(o, 8, 2.0)),
    ("CosineAnnealingLR", lambda S, o: S.CosineAnnealingLR(o, 7, 0.01)),
    ("CosineAnnealingWarmRestarts", lambda S, o: S.CosineAnnealingWarmRestarts(o, 3, 2, 0.01)),
    ("CyclicLR", lambda S, o: S.CyclicLR(o, 0.1, 1.0, step_size_up=4, mode="triangular2")),
    ("CyclicLR-exp", lambda S, o: S.CyclicLR(o, [0.1, 0.2], 1.0, step_size_up=3,
                                             step_size_down=5, mode="exp_range", gamma=0.9)),
    ("OneCycleLR", lambda S, o: S.OneCycleLR(o, 1.0, total_steps=30)),
    ("OneCycleLR-3", lambda S, o: S.OneCycleLR(o, [1.0, 2.0], epochs=3, steps_per_epoch=10,
                                               three_phase=True, anneal_strategy="linear")),
    ("SequentialLR", lambda S, o: S.SequentialLR(o, [S.ConstantLR(o, 0.5, 3),
                                                     S.ExponentialLR(o, 0.9)], [4])),
    ("ChainedScheduler", lambda S, o: S.ChainedScheduler([S.ConstantLR(o, 0.5, 3),
                                                          S.ExponentialLR(o, 0.9)])),
]


def _sched_run(lib, ns, make):
    w, w2 = lib.zeros(2, requires_grad=True), lib.zeros(1, requires_grad=True)
    opt = ns.SGD([{"params": [w]}, {"params": [w2], "lr": 0.5}], lr=1.0, momentum=0.9)
    s = make(ns.lr_scheduler, opt)
    lrs, moms = [list(s.get_last_lr())], []
    for _ in range(29 if isinstance(s, ns.lr_scheduler.OneCycleLR) else 99):
        opt.step()
        s.step()
        lrs.append(list(s.get_last_lr()))
        moms.append([g["momentum"] for g in opt.param_groups])
    return np.array(lrs, dtype=float), np.array(moms, dtype=float)


@pytest.mark.parametrize("name,make", SCHEDULERS, ids=[n for n, _ in SCHEDULERS])
def test_scheduler_matches_torch(name, make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_lrs, t_moms = _sched_run(torch, torch.optim, make)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # SequentialLR's step(0) warns, in torch too
        n_lrs, n_moms = _sched_run(ndgrad, nopt, make)
    np.testing.assert_allclose(n_lrs, t_lrs, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(n_moms, t_moms, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name,make", SCHEDULERS + [
    ("ReduceLROnPlateau", lambda S, o: S.ReduceLROnPlateau(o, mode="max")),
    ("CyclicLR-fn", lambda S, o: S.CyclicLR(o, 0.1, 1.0, scale_fn=lambda x: 0.5)),
], ids=[n for n, _ in SCHEDULERS] + ["ReduceLROnPlateau", "CyclicLR-fn"])
def test_scheduler_state_dict_keys_match_torch(name, make):
    # what a script printing scheduler.state_dict() sees: torch's keys, and torch's values
    # for the plain ones (lambdas are not saved: None)
    out = []
    for lib, ns in ((torch, torch.optim), (ndgrad, nopt)):
        w = lib.zeros(2, requires_grad=True)
        opt = ns.SGD([{"params": [w]}, {"params": [lib.zeros(1, requires_grad=True)]}],
                     lr=1.0, momentum=0.9)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = make(ns.lr_scheduler, opt)
            opt.step()
            s.step(1.0) if name == "ReduceLROnPlateau" else s.step()
        sd = s.state_dict()
        if "_schedulers" in sd:
            sd = {k: v for k, v in sd.items() if k != "_schedulers"}
        plain = {k: v for k, v in sd.items() if isinstance(v, (bool, int, float, str, list,
                                                               type(None)))}
        out.append((sorted(sd), plain))
    assert out[1][0] == out[0][0]
    assert out[1][1] == out[0][1]


def test_reduce_on_plateau_matches_torch():
    out = []
    for lib, ns in ((torch, torch.optim), (ndgrad, nopt)):
        w, w2 = lib.zeros(2, requires_grad=True), lib.zeros(1, requires_grad=True)
        opt = ns.SGD([{"params": [w]}, {"params": [w2], "lr": 0.5}], lr=1.0)
        s = ns.lr_scheduler.ReduceLROnPlateau(opt, patience=2, cooldown=1, factor=0.5,
                                              min_lr=[0.01, 0.2])
        r = []
        for m in [5, 4, 4, 4, 4, 4, 3, 3, 3, 3, 3, 3, 3, 3, 3]:
            s.step(m)
            r.append(s.get_last_lr())
        out.append(np.array(r))
    np.testing.assert_allclose(out[1], out[0])


def test_scheduler_warnings_and_state_dict():
    w = ndgrad.zeros(1, requires_grad=True)
    opt = nopt.SGD([w], lr=1.0)
    s = nopt.lr_scheduler.StepLR(opt, 2)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        s.step()
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        s.get_lr()
    sd = s.state_dict()
    assert "optimizer" not in sd and sd["step_size"] == 2 and sd["last_epoch"] == 1
    s2 = nopt.lr_scheduler.StepLR(opt, 5)
    s2.load_state_dict(sd)
    assert s2.step_size == 2
    with pytest.raises(KeyError) as ours:
        nopt.lr_scheduler.StepLR(nopt.SGD([ndgrad.zeros(1, requires_grad=True)], lr=1.0), 2,
                                 last_epoch=3)
    with pytest.raises(KeyError) as theirs:
        torch.optim.lr_scheduler.StepLR(torch.optim.SGD([torch.zeros(1, requires_grad=True)],
                                                        lr=1.0), 2, last_epoch=3)
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        nopt.lr_scheduler.ReduceLROnPlateau(opt, factor=1.5)


# ---------------------------------------------------------------------------- swa_utils
def test_swalr_matches_torch():
    from torch.optim import swa_utils as ts

    from ndgrad.optim import swa_utils as ns
    out = []
    for lib, S in ((torch, ts), (ndgrad, ns)):
        w, w2 = lib.zeros(2, requires_grad=True), lib.zeros(1, requires_grad=True)
        opt = lib.optim.SGD([{"params": [w]}, {"params": [w2], "lr": 0.3}], lr=1.0)
        lrs = []
        for strategy, epochs in (("cos", 5), ("linear", 3), ("cos", 0)):
            for g, lr in zip(opt.param_groups, (1.0, 0.3)):
                g["lr"] = lr
                g.pop("initial_lr", None)
            s = S.SWALR(opt, swa_lr=[0.05, 0.1], anneal_epochs=epochs,
                        anneal_strategy=strategy)
            for _ in range(8):
                opt.step()
                s.step()
                lrs.append(s.get_last_lr())
        out.append(np.array(lrs))
    np.testing.assert_allclose(out[1], out[0], rtol=1e-15)
    with pytest.raises(ValueError, match="anneal_strategy must by one of"):
        ns.SWALR(opt, 0.1, anneal_strategy="step")


@pytest.mark.parametrize("kind", ["swa", "ema", "ema_multi"])
def test_averaged_model_matches_torch(kind):
    from torch.optim import swa_utils as ts

    from ndgrad.optim import swa_utils as ns
    out = []
    for lib, S in ((torch, ts), (ndgrad, ns)):
        m = lib.nn.Linear(3, 2).double()
        with lib.no_grad():
            m.weight.copy_(lib.tensor(np.arange(6.0).reshape(2, 3)))
            m.bias.copy_(lib.tensor([1.0, 2.0]))
        kw = {"swa": {}, "ema": {"avg_fn": S.get_ema_avg_fn(0.8)},
              "ema_multi": {"multi_avg_fn": S.get_ema_multi_avg_fn(0.9)}}[kind]
        avg = S.AveragedModel(m, **kw)
        for _ in range(4):
            with lib.no_grad():
                m.weight.mul_(1.1)
                m.bias.add_(0.5)
            avg.update_parameters(m)
        out.append((avg.module.weight.detach().numpy().copy(), int(avg.n_averaged),
                    list(avg.state_dict()), avg(lib.ones(1, 3, dtype=lib.float64)).tolist()))
    np.testing.assert_allclose(out[1][0], out[0][0], rtol=1e-15)
    assert out[1][1:] == out[0][1:]


def _averaged_bn(lib, S, kw, use_buffers):
    lib.manual_seed(0)
    net = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4))
    avg = S.AveragedModel(net, use_buffers=use_buffers, **kw)
    for i in range(3):
        net(lib.randn(5, 3))
        with lib.no_grad():
            for p in net.parameters():
                p.add_(0.1 * i)
        avg.update_parameters(net)
    return [(k, str(v.dtype).split(".")[1], v.tolist()) for k, v in avg.state_dict().items()]


@pytest.mark.parametrize("use_buffers", [True, False])
@pytest.mark.parametrize("kind", ["default", "swa", "ema", "swa_multi_int", "ema_multi"])
def test_averaged_model_with_batchnorm_buffers_matches_torch(kind, use_buffers):
    """use_buffers averages num_batches_tracked (int64) too: the multi-tensor functions run
    once per dtype (EMA truncates into the integer buffer), the cpu default is the per-tensor
    running mean; swa_multi on an integer buffer is torch's addcdiv error."""
    from torch.optim import swa_utils as ts

    from ndgrad.optim import swa_utils as ns
    kws = {"default": lambda S: {}, "swa": lambda S: {"avg_fn": S.get_swa_avg_fn()},
           "ema": lambda S: {"avg_fn": S.get_ema_avg_fn(0.5)},
           "swa_multi_int": lambda S: {"multi_avg_fn": S.get_swa_multi_avg_fn()},
           "ema_multi": lambda S: {"multi_avg_fn": S.get_ema_multi_avg_fn(0.5)}}
    if kind == "swa_multi_int" and use_buffers:
        for lib, S in ((torch, ts), (ndgrad, ns)):
            with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer"):
                _averaged_bn(lib, S, kws[kind](S), use_buffers)
        return
    want = _averaged_bn(torch, ts, kws[kind](ts), use_buffers)
    got = _averaged_bn(ndgrad, ns, kws[kind](ns), use_buffers)
    assert [g[:2] for g in got] == [w[:2] for w in want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g[2]), np.asarray(w[2]), rtol=1e-6, atol=1e-7)


def test_ema_decay_out_of_range_is_torchs_error():
    from ndgrad.optim import swa_utils as ns
    for fn in (ns.get_ema_avg_fn, ns.get_ema_multi_avg_fn):
        with pytest.raises(ValueError, match=r"Invalid decay value 1.5 provided. Please provide "
                                             r"a value in \[0,1\] range."):
            fn(1.5)


# ---------------------------------------------------------------------------- torch's optim_db
def _optim_db_cases():
    from torch.testing._internal.common_optimizers import optim_db
    names = {"SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam",
             "RAdam", "ASGD", "Rprop"}
    cases = []
    for info in optim_db:
        name = info.optim_cls.__name__
        if name not in names:
            continue
        for i, inp in enumerate(info.optim_inputs_func(device="cpu", dtype=torch.float64)):
            cases.append(pytest.param(name, inp.kwargs, id=f"{name}-{i}-{inp.desc}"))
            kw = inp.kwargs
            if not (kw.get("fused") or kw.get("foreach") or kw.get("capturable")):
                # the same configuration on the recorded path (torch's CPU optim_db has none)
                cases.append(pytest.param(name, dict(kw, differentiable=True),
                                          id=f"{name}-{i}-{inp.desc}-differentiable"))
    return cases


def _convert(kw, lib):
    return {k: (lib.tensor(v.item()) if isinstance(v, torch.Tensor) else v)
            for k, v in kw.items()}


@pytest.mark.parametrize("name,kw", _optim_db_cases())
def test_optim_db_configs_twenty_steps_with_resume(name, kw):
    """Every configuration torch's own optimizer tests use: 20 steps from the same parameters
    and gradients, the optimizer rebuilt from its state_dict after step 10; parameters equal
    torch's at every step (float64, 1e-12 relative), the state equal at the end. With
    ``differentiable=True`` the parameters are non-leaf clones and the steps are recorded."""
    diff = bool(kw.get("differentiable"))
    rng = np.random.default_rng(0)
    shapes = [(3, 4), (5,)]
    p0 = [rng.standard_normal(s) for s in shapes]
    grads = [[rng.standard_normal(s) for s in shapes] for _ in range(20)]
    runs = []
    # Adam's recorded path takes its bias corrections from the float32 ``step`` tensor, where
    # torch's float32 sqrt (SLEEF, not always correctly rounded) differs from NumPy's by an
    # ulp now and then (a 1e-10 drift over 20 steps): compared with float64 steps (float64
    # default dtype) here; tests/test_optim_differentiable.py runs three float32 steps.
    wide = diff and name in ("Adam", "AdamW")
    for lib, ns in ((torch, torch.optim), (ndgrad, nopt)):
        old_default = lib.get_default_dtype()
        if wide:
            lib.set_default_dtype(lib.float64)
        try:
            runs.append(_twenty_steps(lib, ns, name, kw, diff, p0, grads))
        finally:
            lib.set_default_dtype(old_default)
    _compare_runs(runs)


def _twenty_steps(lib, ns, name, kw, diff, p0, grads):
    params = [lib.tensor(p.copy(), requires_grad=True) for p in p0]
    if diff:
        params = [p.clone() for p in params]
    opt = getattr(ns, name)(params, **_convert(kw, lib))
    traj = []
    for step, gs in enumerate(grads):
        for p, g in zip(params, gs):
            p.grad = lib.tensor(g)
        opt.step()
        traj.append([p.detach().numpy().copy() for p in params]
                    + [type(p.grad_fn).__name__ for p in params if diff])
        if step == 9:
            sd = opt.state_dict()
            opt = getattr(ns, name)(params, **_convert(kw, lib))
            opt.load_state_dict(sd)
    state = {i: {k: (v.detach().numpy().copy() if hasattr(v, "numpy") else v)
                 for k, v in s.items()} for i, s in opt.state_dict()["state"].items()}
    return traj, state


def _compare_runs(runs):
    for step, (t, n) in enumerate(zip(runs[0][0], runs[1][0])):
        for a, b in zip(n, t):
            if isinstance(b, str):             # the node recorded by a differentiable step
                assert a == b != "NoneType"
                continue
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14, err_msg=f"step {step}")
    assert runs[1][1].keys() == runs[0][1].keys()
    for i in runs[0][1]:
        assert list(runs[1][1][i]) == list(runs[0][1][i])
        for k, v in runs[0][1][i].items():
            np.testing.assert_allclose(np.asarray(runs[1][1][i][k], dtype=float),
                                       np.asarray(v, dtype=float), rtol=1e-12, atol=1e-14,
                                       err_msg=k)


def test_lbfgs_state_saves_and_resumes_like_torch():
    import io
    res = []
    for lib in (torch, ndgrad):
        w = lib.tensor([3.0, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
        opt = lib.optim.LBFGS([w], max_iter=3, history_size=2)

        def closure(w=w):
            w.grad = None
            loss = ((w - 1) ** 4).sum() + (w ** 2).sum()
            loss.backward()
            return loss
        opt.step(closure)
        buf = io.BytesIO()
        lib.save(opt.state_dict(), buf)
        buf.seek(0)
        opt = lib.optim.LBFGS([w], max_iter=3, history_size=2)
        opt.load_state_dict(lib.load(buf))
        for _ in range(2):
            opt.step(closure)
        res.append(w.detach().numpy().copy())
    np.testing.assert_allclose(res[1], res[0], rtol=1e-12)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name,kw", [("Adam", {}), ("AdamW", {}), ("AdamW", {"amsgrad": True}),
                                     ("Adam", {"betas": (0.3, 0.9)}),
                                     ("AdamW", {"maximize": True, "weight_decay": 0.1}),
                                     ("Adam", {"weight_decay": 0.1})])
def test_adam_on_low_precision_parameters_rounds_per_torch_op(dtype, name, kw):
    # Note [Low-precision Adam]: each of torch's tensor ops in float32, rounded once: the
    # parameters and moments are bit-identical after a few steps
    g = torch.Generator().manual_seed(0)
    p0 = torch.randn(4000, generator=g).to(getattr(torch, dtype))
    tp = p0.clone().requires_grad_()
    nparam = ndgrad.tensor(p0.float().numpy()).to(getattr(ndgrad, dtype)).requires_grad_()
    topt = getattr(torch.optim, name)([tp], lr=0.01, **kw)
    nopt = getattr(ndgrad.optim, name)([nparam], lr=0.01, **kw)
    for _ in range(4):
        gr = torch.randn(4000, generator=g).to(tp.dtype)
        tp.grad = gr.clone()
        nparam.grad = ndgrad.tensor(gr.float().numpy()).to(nparam.dtype)
        topt.step()
        nopt.step()
    assert nparam.dtype == getattr(ndgrad, dtype)
    np.testing.assert_array_equal(nparam.detach().float().numpy(), tp.detach().float().numpy())
    for key in ("exp_avg", "exp_avg_sq"):
        np.testing.assert_array_equal(nopt.state[nparam][key].float().numpy(),
                                      topt.state[tp][key].float().numpy())


def test_rprop_nan_gradient_leaves_the_parameter_as_torch():
    # torch's sign of NaN is 0: a NaN gradient moves nothing, and the next step's product with
    # the stored NaN keeps the step size
    def run(lib):
        p = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        opt = lib.optim.Rprop([p], lr=0.1)
        out = []
        for g in ([1.0, float("nan"), -1.0], [1.0, 1.0, float("nan")], [-1.0, 2.0, 3.0]):
            p.grad = lib.tensor(g)
            opt.step()
            out.append((p.tolist(), opt.state[p]["step_size"].tolist()))
        return out
    assert run(ndgrad) == run(torch)
