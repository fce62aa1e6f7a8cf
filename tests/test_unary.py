"""The unary math family (ndgrad/ops/unary.py): in-place variants and dtype rules against
PyTorch. Values, gradients, JVPs and batching of the out-of-place ops are covered by op_db."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ndgrad

FLOAT_OPS = ["exp2", "expm1", "log2", "log10", "log1p", "rsqrt", "tan", "asin", "acos", "atan",
             "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc", "erfinv", "lgamma",
             "digamma", "deg2rad", "rad2deg", "logit", "sinc", "angle"]
ROUNDING = ["floor", "ceil", "trunc", "round"]
INPLACE = [n for n in FLOAT_OPS + ROUNDING + ["frac", "square", "nan_to_num"]
           if n != "angle"]
# inputs inside every op's domain (acosh: >= 1; asin/atanh/erfinv/logit: (0, 1))
VALUES = {"acosh": [1.25, 1.5, 2.75]}
DEFAULT = [0.125, 0.5, 0.75]


def _vals(name):
    return VALUES.get(name, DEFAULT)


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_matches_out_of_place_and_torch(name):
    x = ndgrad.tensor(_vals(name), dtype=ndgrad.float64)
    expected = getattr(ndgrad, name)(x)
    v = x._version
    r = getattr(x, name + "_")()
    assert r is x and x._version == v + 1
    np.testing.assert_allclose(x.numpy(), expected.numpy(), rtol=1e-12)
    t = torch.tensor(_vals(name), dtype=torch.float64)
    getattr(t, name + "_")()
    np.testing.assert_allclose(x.numpy(), t.numpy(), rtol=1e-10)
    assert hasattr(ndgrad, name + "_") == hasattr(torch, name + "_")


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_records_the_op(name):
    leaf = ndgrad.tensor(_vals(name), dtype=ndgrad.float64, requires_grad=True)
    y = leaf * 1
    getattr(y, name + "_")()
    tl = torch.tensor(_vals(name), dtype=torch.float64, requires_grad=True)
    ty = tl * 1
    getattr(ty, name + "_")()
    assert type(y.grad_fn).__name__ == type(ty.grad_fn).__name__
    if name in ("asinh", "acosh", "atanh"):     # PyTorch has no derivative for these in place
        with pytest.raises(NotImplementedError) as want:
            ty.sum().backward()
        with pytest.raises(NotImplementedError, match="inplace version of") as got:
            y.sum().backward()
        assert str(got.value) == str(want.value)
        return
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), tl.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize("dt", ["int64", "bool", "float16", "bfloat16", "complex64"])
@pytest.mark.parametrize("name", FLOAT_OPS + ROUNDING + ["frac", "square", "signbit",
                                                         "nan_to_num", "positive"])
def test_dtypes_match_torch(name, dt):
    vals = _vals(name) if dt != "bool" else [True, False, True]
    if dt == "int64":
        vals = [1, 2, 3]
    t = torch.tensor(vals, dtype=getattr(torch, dt))
    x = ndgrad.tensor(vals, dtype=getattr(ndgrad, dt))
    try:
        want = getattr(torch, name)(t)
    except (RuntimeError, NotImplementedError) as e:
        with pytest.raises(type(e)) as info:
            getattr(ndgrad, name)(x)
        assert str(info.value) == str(e).split("\n")[0]
        return
    got = getattr(ndgrad, name)(x)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    w = want.to(torch.complex128 if want.is_complex() else torch.float64).numpy()
    np.testing.assert_allclose(got.to(ndgrad.complex128 if want.is_complex() else
                                      ndgrad.float64).numpy(), w, rtol=2e-2, atol=2e-2)


def test_round_decimals_and_errors():
    vals = [1.25, -2.555, 12345.678]
    for d in (0, 1, 2, -1, -2):
        np.testing.assert_allclose(ndgrad.round(ndgrad.tensor(vals, dtype=ndgrad.float64),
                                                decimals=d).numpy(),
                                   torch.round(torch.tensor(vals, dtype=torch.float64),
                                               decimals=d).numpy())
    with pytest.raises(NotImplementedError, match="round_cpu"):
        ndgrad.round(ndgrad.tensor([1, 2]), decimals=1)


def test_nan_to_num_and_logit_arguments():
    vals = [float("nan"), float("inf"), -float("inf"), 0.5]
    for kw in ({}, {"nan": 1.0}, {"posinf": 9.0, "neginf": -9.0}):
        for dt in ("float32", "float16", "float64"):
            got = ndgrad.nan_to_num(ndgrad.tensor(vals, dtype=getattr(ndgrad, dt)), **kw)
            want = torch.nan_to_num(torch.tensor(vals, dtype=getattr(torch, dt)), **kw)
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    p = [0.0, 0.05, 0.5, 1.0]
    for eps in (None, 0.1):
        np.testing.assert_allclose(ndgrad.logit(ndgrad.tensor(p), eps).numpy(),
                                   torch.logit(torch.tensor(p), eps).numpy(), rtol=1e-6)
    x = ndgrad.tensor([0.5], requires_grad=True)
    assert ndgrad.logit(x, eps=0.2).grad_fn._saved_eps == 0.2
    assert ndgrad.logit(x).grad_fn._saved_eps is None


def test_positive_and_signbit():
    x = ndgrad.tensor([-0.0, 0.0, -2.0])
    assert ndgrad.positive(x) is x
    assert ndgrad.signbit(x).tolist() == torch.signbit(torch.tensor([-0.0, 0.0, -2.0])).tolist()
    assert not ndgrad.signbit(x.requires_grad_()).requires_grad


def test_angle_complex_gradient():
    vals = [1 + 1j, -2 + 0.5j, 0j]
    z = ndgrad.tensor(vals, requires_grad=True)
    tz = torch.tensor(vals, requires_grad=True)
    ndgrad.angle(z).sum().backward()
    torch.angle(tz).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), tz.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", ["exp2", "expm1", "log2", "log10", "log1p", "rsqrt", "tan",
                                  "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
                                  "atanh", "sinc", "angle", "square"])
def test_complex_gradients_and_gradgrad_match_torch(name):
    vals = [0.3 + 0.4j, -0.5 + 0.2j, -1.5 - 0.1j]
    z = ndgrad.tensor(vals, requires_grad=True)
    tz = torch.tensor(vals, requires_grad=True)
    y, ty = getattr(ndgrad, name)(z), getattr(torch, name)(tz)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    (g,) = ndgrad.autograd.grad(y.abs().sum(), z, create_graph=True)
    (tg,) = torch.autograd.grad(ty.abs().sum(), tz, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-4, atol=1e-5)
    (h,) = ndgrad.autograd.grad(g.abs().sum(), z)
    (th,) = torch.autograd.grad(tg.abs().sum(), tz)
    np.testing.assert_allclose(h.numpy(), th.numpy(), rtol=1e-3, atol=1e-4)


def test_inplace_with_arguments():
    vals = [0.125, 0.55, 0.8]
    for name, args, kw in (("round_", (), {"decimals": 1}), ("logit_", (0.2,), {}),
                           ("nan_to_num_", (), {"nan": 2.0})):
        x = ndgrad.tensor(vals, dtype=ndgrad.float64)
        t = torch.tensor(vals, dtype=torch.float64)
        getattr(ndgrad, name)(x, *args, **kw)
        getattr(torch, name)(t, *args, **kw)
        np.testing.assert_allclose(x.numpy(), t.numpy(), rtol=1e-12)
    z = ndgrad.tensor([1 + 1j], requires_grad=True)
    with pytest.raises(RuntimeError, match="complex dtype"):
        ndgrad.nan_to_num(z)


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("name", ["sign", "sgn"])
def test_sign_of_nan_and_negative_zero(name, dt):
    # torch's sign is (0 < x) - (x < 0): NaN gives 0, -0.0 gives +0.0
    vals = [-0.0, float("nan"), -float("nan"), 0.0, float("inf"), -2.5]
    r = getattr(ndgrad, name)(ndgrad.tensor(vals, dtype=getattr(ndgrad, dt)))
    t = getattr(torch, name)(torch.tensor(vals, dtype=getattr(torch, dt)))
    assert r.float().tolist() == t.float().tolist()
    assert r.signbit().tolist() == t.signbit().tolist()


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_complex_reciprocal_divides_as_torch(dt):
    # torch computes 1 / z by complex division: 1/0 = inf+nanj, 1/(3+0j) has imaginary +0
    vals = [1 + 2j, -1 - 1j, 0j, 3 + 0j, -2 + 0j, 1e-30j]
    r = ndgrad.tensor(vals, dtype=getattr(ndgrad, dt)).reciprocal()
    t = torch.tensor(vals, dtype=getattr(torch, dt)).reciprocal()
    np.testing.assert_array_equal(r.numpy(), t.numpy())
    ri, ti = r.numpy().imag, t.numpy().imag
    finite = ~np.isnan(ti)
    assert np.signbit(ri[finite]).tolist() == np.signbit(ti[finite]).tolist()
