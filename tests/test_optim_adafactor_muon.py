"""Adafactor and Muon against torch.optim's: every configuration of torch's optim_db takes 20
steps from the same parameters and gradients (the optimizer rebuilt from its state_dict after
step 10) and matches torch's parameters at every step and its state at the end; Muon's
bfloat16 Newton-Schulz iteration gives torch's bits; torch's error inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.testing._internal.common_optimizers import optim_db

import ndgrad

SHAPES = {"Adafactor": [(3, 4), (5,), (2, 3, 4)], "Muon": [(3, 4), (5, 3), (4, 6)]}


def _configs():
    out = []
    for info in optim_db:
        name = info.optim_cls.__name__
        if name in SHAPES:
            for i, inp in enumerate(info.optim_inputs_func(device="cpu", dtype=torch.float64)):
                out.append(pytest.param(name, inp.kwargs, id=f"{name}-{i}-{inp.desc}"))
    out.append(pytest.param("Muon", {"nesterov": False, "adjust_lr_fn": "match_rms_adamw"},
                            id="Muon-plain-momentum-match_rms_adamw"))
    out.append(pytest.param("Adafactor", {"eps": (1e-20, 1e-2), "beta2_decay": -0.5,
                                          "lr": 0.1}, id="Adafactor-eps"))
    return out


def _convert(kw, lib):
    return {k: (lib.tensor(v.item()) if isinstance(v, torch.Tensor) else v)
            for k, v in kw.items()}


def _trajectory(lib, name, kw, p0, grads, dtype):
    params = [lib.tensor(p, dtype=dtype, requires_grad=True) for p in p0]
    opt = getattr(lib.optim, name)(params, **_convert(kw, lib))
    traj = []
    for step, gs in enumerate(grads):
        for p, g in zip(params, gs):
            p.grad = lib.tensor(g, dtype=dtype)
        opt.step()
        traj.append([p.detach().numpy().copy() for p in params])
        if step == 9:
            sd = opt.state_dict()
            opt = getattr(lib.optim, name)(params, **_convert(kw, lib))
            opt.load_state_dict(sd)
    state = {i: {k: v.numpy().copy() for k, v in s.items()}
             for i, s in opt.state_dict()["state"].items()}
    return traj, state


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,kw", _configs())
def test_twenty_steps_with_resume_equal_torch(name, kw, dtype):
    rng = np.random.default_rng(0)
    p0 = [rng.standard_normal(s) for s in SHAPES[name]]
    grads = [[rng.standard_normal(s) for s in SHAPES[name]] for _ in range(20)]
    t = _trajectory(torch, name, kw, p0, grads, getattr(torch, dtype))
    n = _trajectory(ndgrad, name, kw, p0, grads, getattr(ndgrad, dtype))
    rtol, atol = (1e-12, 1e-15) if dtype == "float64" else (1e-5, 1e-6)
    for step, (a, b) in enumerate(zip(n[0], t[0])):
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, rtol=rtol, atol=atol, err_msg=f"step {step}")
    assert n[1].keys() == t[1].keys()
    for i in t[1]:
        assert list(n[1][i]) == list(t[1][i])
        for k in t[1][i]:
            np.testing.assert_allclose(n[1][i][k], t[1][i][k], rtol=rtol, atol=atol,
                                       err_msg=k)


@pytest.mark.parametrize("shape", [(3, 4), (5, 3), (8, 16), (16, 8)])
def test_newton_schulz_in_bfloat16_gives_torch_bits(shape):
    from torch.optim._muon import _zeropower_via_newtonschulz
    from ndgrad.optim.muon import orthogonalize
    rng = np.random.default_rng(1)
    for coef, steps in (((3.4445, -4.7750, 2.0315), 5), ((3.4, -4.7, 2.0), 6)):
        g = rng.standard_normal(shape)
        ref = _zeropower_via_newtonschulz(torch.tensor(g), coef, steps, 1e-7).float().numpy()
        got = orthogonalize(g, coef, steps, 1e-7).astype(np.float32)
        np.testing.assert_array_equal(got, ref)


ERRORS = [
    ("Adafactor", {"lr": "two-element"}, ValueError, "Tensor lr must be 1-element"),
    ("Adafactor", {"lr": -1.0}, ValueError, "Learning rate should be >= 0 but is: -1.0"),
    ("Adafactor", {"eps": (-1e-30, 1e-3)}, ValueError, "epsilon1 should be >= 0 but is: "),
    ("Adafactor", {"eps": (None, -1.0)}, ValueError, "epsilon2 should be >= 0 but is: -1.0"),
    ("Adafactor", {"d": 0.0}, ValueError, "Clipping threshold d should be >= 1 but is: 0.0"),
    ("Adafactor", {"beta2_decay": 0.8}, ValueError, "beta2_decay should be <= 0 but is: 0.8"),
    ("Adafactor", {"weight_decay": -0.1}, ValueError, "weight_decay should be >= 0 but is: "),
    ("Muon", {"lr": "two-element"}, ValueError, "Tensor lr must be 1-element"),
    ("Muon", {"momentum": -0.5}, ValueError, "momentum should be >= 0 but is: -0.5"),
    ("Muon", {"weight_decay": -1.0}, ValueError, "weight decay should be >= 0 but is: -1.0"),
    ("Muon", {"adjust_lr_fn": "arbitrary"}, ValueError,
     "Adjust learning rate function arbitrary is not supported"),
]


@pytest.mark.parametrize("name,kw,err,msg", ERRORS)
def test_construction_errors_as_torch(name, kw, err, msg):
    for lib in (torch, ndgrad):
        args = {k: (lib.tensor([1e-3, 1e-3]) if v == "two-element" else v)
                for k, v in kw.items()}
        with pytest.raises(err, match=msg.replace("(", r"\(")):
            getattr(lib.optim, name)([lib.zeros(2, 2, requires_grad=True)], **args)


def test_muon_refuses_a_parameter_that_is_not_a_matrix():
    for lib in (torch, ndgrad):
        with pytest.raises(ValueError, match=r"Muon only supports 2D parameters whereas we "
                                             r"found a parameter with size: \w+.Size\(\[3\]\)"):
            lib.optim.Muon([lib.zeros(3, requires_grad=True)])


@pytest.mark.parametrize("name", ["Adafactor", "Muon"])
def test_step_errors_as_torch(name):
    for lib in (torch, ndgrad):
        z = lib.zeros(2, 2, dtype=lib.complex128, requires_grad=True)
        z.grad = lib.ones(2, 2, dtype=lib.complex128)
        with pytest.raises(RuntimeError, match=f"{name} does not support complex parameters"):
            getattr(lib.optim, name)([z]).step()
        w = lib.zeros(3, 2, requires_grad=True)
        w.grad = lib.sparse_coo_tensor([[0]], lib.ones(1, 2), (3, 2))
        with pytest.raises(RuntimeError, match=f"{name} does not support sparse gradients"):
            getattr(lib.optim, name)([w]).step()
