"""Activations at NaN, +-inf and +-0 against PyTorch: values and gradients.

PyTorch's CPU kernels for some activations (hardtanh, elu, the shrinks) answer differently at a
NaN in their vectorized loop and in its scalar tail (the last elements that fill no vector); the
inputs here are 64 elements with the special values first, so PyTorch takes its vectorized loop
for float32 and float64, and ndgrad must match it. relu's and threshold's masks are the same in
both loops: ``x <= threshold`` replaces (zero gradient), so a NaN passes the gradient through.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ndgrad
import ndgrad.nn.functional as F

SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 6.0, -6.0, 0.5, -0.5, 1e-30, -1e-30]


def _inputs(dtype):
    x = np.linspace(-3.0, 3.0, 64).astype(dtype)
    x[:len(SPECIAL)] = SPECIAL
    g = np.linspace(1.0, 2.0, 64).astype(dtype)
    return x, g


CASES = {
    "relu": (lambda m, x: m.relu(x), lambda x: torch.relu(x)),
    "relu_method": (lambda m, x: x.relu(), lambda x: x.relu()),
    "F.relu": (lambda m, x: F.relu(x), lambda x: TF.relu(x)),
    "F.relu_inplace": (lambda m, x: F.relu(x * 1, inplace=True),
                       lambda x: TF.relu(x * 1, inplace=True)),
    "threshold": (lambda m, x: F.threshold(x, 0.5, 2.0), lambda x: TF.threshold(x, 0.5, 2.0)),
    "threshold_0": (lambda m, x: F.threshold(x, 0.0, 0.0), lambda x: TF.threshold(x, 0.0, 0.0)),
    "threshold_inplace": (lambda m, x: F.threshold(x * 1, 0.5, -1.0, inplace=True),
                          lambda x: TF.threshold(x * 1, 0.5, -1.0, inplace=True)),
    "leaky_relu": (lambda m, x: F.leaky_relu(x, 0.1), lambda x: TF.leaky_relu(x, 0.1)),
    "hardtanh": (lambda m, x: F.hardtanh(x), lambda x: TF.hardtanh(x)),
    "relu6": (lambda m, x: F.relu6(x), lambda x: TF.relu6(x)),
    "softshrink": (lambda m, x: F.softshrink(x), lambda x: TF.softshrink(x)),
    "hardshrink": (lambda m, x: F.hardshrink(x, 0.5), lambda x: TF.hardshrink(x, 0.5)),
    "elu": (lambda m, x: F.elu(x), lambda x: TF.elu(x)),
}


def _same(a, b):
    # equal up to the sign of zero and the last bits of exp (elu): the masks are the point
    return np.allclose(a, b, rtol=1e-6, atol=0.0, equal_nan=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(CASES))
def test_special_values_match_torch(name, dtype):
    f_nd, f_t = CASES[name]
    x, g = _inputs(dtype)
    xn = ndgrad.tensor(x, requires_grad=True)
    yn = f_nd(ndgrad, xn)
    yn.backward(ndgrad.tensor(g))
    xt = torch.tensor(x, requires_grad=True)
    yt = f_t(xt)
    yt.backward(torch.tensor(g))
    assert _same(yn.detach().numpy(), yt.detach().numpy())
    assert _same(xn.grad.numpy(), xt.grad.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_gradient_passes_at_nan_on_every_path(dtype, monkeypatch):
    # the raw rule, the raw rule written in place, the Tensor rule (create_graph), double
    # backward, forward AD and both compiled backends give torch's mask, bit for bit alike
    from ndgrad.ops import _dispatch
    monkeypatch.setattr(_dispatch, "_INTO_MIN_SIZE", 0)
    x, g = _inputs(dtype)
    xt = torch.tensor(x, requires_grad=True)
    (want,) = torch.autograd.grad(torch.relu(xt * 1), [xt], torch.tensor(g))
    want = want.numpy()
    assert want[0] == g[0]                                  # NaN passes in torch
    got = []
    for create_graph in (False, True):
        xn = ndgrad.tensor(x, requires_grad=True)
        (gx,) = ndgrad.autograd.grad(ndgrad.relu(xn * 1), [xn], ndgrad.tensor(g),
                                     create_graph=create_graph)
        got.append(gx.detach().numpy())
    assert got[0].tobytes() == got[1].tobytes()
    np.testing.assert_array_equal(got[0], want)
    import ndgrad.autograd.forward_ad as fwad
    with fwad.dual_level():
        d = fwad.make_dual(ndgrad.tensor(x), ndgrad.tensor(g))
        tangent = fwad.unpack_dual(ndgrad.relu(d)).tangent
    np.testing.assert_array_equal(tangent.numpy(), want)

    def step(a, w):
        y = ndgrad.relu(a * 1)
        return ndgrad.autograd.grad(y, [a], w)[0]
    for backend in ("numpy", "numba"):
        c = ndgrad.compile(step, backend=backend)
        out = c(ndgrad.tensor(x, requires_grad=True), ndgrad.tensor(g))
        assert out.numpy().tobytes() == got[0].tobytes(), backend
