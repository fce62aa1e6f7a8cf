"""Signed zeros through relu and its siblings, clamp, maximum and minimum, as torch
(Note [Signed zeros in max and min] in ndgrad/ops/_ties.py)."""

import numpy as np
import pytest
import torch

import ndgrad

VALUES = [-0.0, 0.0, -1.0, 1.0, float("nan"), -1e-30, 2.0, -3.0]


def _fns(lib):
    F = lib.nn.functional
    return {
        "relu": lib.relu, "F.relu": F.relu, "nn.ReLU": lib.nn.ReLU(),
        "relu_": lambda t: lib.relu_(t.clone()), "Tensor.relu_": lambda t: t.clone().relu_(),
        "F.relu inplace": lambda t: F.relu(t.clone(), inplace=True),
        "threshold": lambda t: F.threshold(t, 0.0, 0.0),
        "threshold -1": lambda t: F.threshold(t, -1.0, -0.0),
        "relu6": F.relu6, "nn.ReLU6": lib.nn.ReLU6(), "hardtanh": F.hardtanh,
        "hardtanh(0, 1)": lambda t: F.hardtanh(t, 0.0, 1.0),
        "hardtanh_": lambda t: F.hardtanh_(t.clone(), 0.0, 1.0),
        "leaky_relu": F.leaky_relu, "elu": F.elu, "celu": F.celu, "selu": F.selu,
        "hardshrink": F.hardshrink, "hardswish": F.hardswish,
        "rrelu eval": lambda t: F.rrelu(t, training=False),
        "prelu": lambda t: F.prelu(t, lib.tensor([0.25], dtype=t.dtype)),
        "clamp(min=0)": lambda t: t.clamp(min=0), "clamp(0, 0)": lambda t: t.clamp(0.0, 0.0),
        "clamp(max=0)": lambda t: t.clamp(max=0), "clamp_min": lambda t: lib.clamp_min(t, 0.0),
        "clamp_max": lambda t: lib.clamp_max(t, -0.0),
        "softshrink big": lambda t: lib.nn.functional.softshrink(t.repeat(8))[:8],
        "relu strided": lambda t: lib.relu(t.repeat(2)[::2]),
        "clamp strided": lambda t: t.repeat(2)[::2].clamp(min=0),
        "relu big": lambda t: lib.relu(t.repeat(5000))[:8],
        "clamp big": lambda t: t.repeat(5000).clamp(min=0)[:8],
    }


def _bits(t):
    a = t.float().numpy() if t.dtype in (torch.bfloat16, ndgrad.bfloat16) else t.numpy()
    a = a.astype(np.float64)
    return [None if np.isnan(v) else bool(np.signbit(v)) for v in a], a     # NaN: any sign


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
@pytest.mark.parametrize("name", list(_fns(torch)))
def test_signed_zeros_match_torch(name, dtype):
    got = _fns(ndgrad)[name](ndgrad.tensor(VALUES, dtype=getattr(ndgrad, dtype)))
    want = _fns(torch)[name](torch.tensor(VALUES, dtype=getattr(torch, dtype)))
    (s, a), (st, at) = _bits(got), _bits(want)
    assert s == st
    # values too (elu's float32 kernel differs from torch's in the last bit at -3)
    np.testing.assert_allclose(a, at, rtol=1e-6)


def test_relu_backward_and_compiled_keep_signs():
    x = ndgrad.tensor(VALUES, requires_grad=True)
    y = ndgrad.relu(x)
    y.sum().backward()
    xt = torch.tensor(VALUES, requires_grad=True)
    torch.relu(xt).sum().backward()
    assert _bits(y.detach())[0] == _bits(torch.relu(xt.detach()))[0]
    assert _bits(x.grad)[0] == _bits(xt.grad)[0]

    def f(t):
        return ndgrad.relu(t * 1.0)
    z = ndgrad.tensor([-0.0, 0.0, -2.0, 3.0])
    assert np.signbit(ndgrad.compile(f)(z).numpy()).tolist() == [True, False, False, False]


def test_numba_vm_relu_keeps_negative_zero():
    from ndgrad.jit import numba_backend
    assert numba_backend.available()       # the test extra installs numba
    from test_jit_numba import _run
    x = np.array([-0.0, 0.0, -1.0, np.nan, 2.0])
    r = _run("relu", np.float64, x)
    assert np.signbit(r).tolist()[:3] == [True, False, False] and np.isnan(r[3]) and r[4] == 2
