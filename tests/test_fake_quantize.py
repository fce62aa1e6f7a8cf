"""Fake quantization (ndgrad/ops/quantize.py) against PyTorch: values bit for bit across dtypes,
scales and zero points (ties included), the straight-through gradient and its node, forward
AD, double backward, and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ndgrad

DTYPES = ["float32", "float64", "float16", "bfloat16"]


def _pair(arr, dtype, requires_grad=False):
    t = torch.tensor(arr, dtype=getattr(torch, dtype), requires_grad=requires_grad)
    n = ndgrad.tensor(arr, dtype=getattr(ndgrad, dtype), requires_grad=requires_grad)
    return n, t


def _np(t):
    return t.detach().float().numpy() if t.dtype == torch.bfloat16 else t.detach().numpy()


def _same(n, t):
    assert str(n.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    a = n.detach().float().numpy() if n.dtype == ndgrad.bfloat16 else n.detach().numpy()
    np.testing.assert_array_equal(a, _np(t))


def _data(seed, shape=(6, 7)):
    rng = np.random.default_rng(seed)
    x = rng.normal(scale=1.5, size=shape)
    x.flat[:6] = [0.05, -0.05, 0.25, -0.15, 0.35, 0.0]        # ties of the 0.1 grid
    return x


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scale,zp,qmin,qmax", [(0.1, 3, 0, 15), (0.037, 0, -128, 127),
                                                (0.3, -2, -8, 7), (1e-3, 200, 0, 255)])
def test_per_tensor_values_and_gradient_match_torch(dtype, scale, zp, qmin, qmax):
    n, t = _pair(_data(1), dtype, requires_grad=True)
    yn = ndgrad.fake_quantize_per_tensor_affine(n, scale, zp, qmin, qmax)
    yt = torch.fake_quantize_per_tensor_affine(t, scale, zp, qmin, qmax)
    _same(yn, yt)
    assert type(yn.grad_fn).__name__ == type(yt.grad_fn).__name__
    g = _data(2)
    yn.backward(ndgrad.tensor(g, dtype=yn.dtype))
    yt.backward(torch.tensor(g, dtype=yt.dtype))
    _same(n.grad, t.grad)
    # tensor qparams: the other overload and node
    sn, st = ndgrad.tensor(scale), torch.tensor(scale)
    zn, zt = ndgrad.tensor(zp, dtype=ndgrad.int32), torch.tensor(zp, dtype=torch.int32)
    yn = ndgrad.fake_quantize_per_tensor_affine(n, sn, zn, qmin, qmax)
    yt = torch.fake_quantize_per_tensor_affine(t, st, zt, qmin, qmax)
    _same(yn, yt)
    assert type(yn.grad_fn).__name__ == type(yt.grad_fn).__name__


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("zdtype", ["int32", "float32", "float16"])
@pytest.mark.parametrize("axis", [0, 1, -2])
def test_per_channel_values_and_gradient_match_torch(dtype, zdtype, axis):
    x = _data(3, (2, 4, 3))
    ax = axis % 3
    rng = np.random.default_rng(4)
    c = x.shape[ax]
    scale = rng.uniform(0.02, 0.4, c)
    scale[0] = 0.1
    zp = rng.integers(-3, 4, c) + (0.5 if zdtype != "int32" else 0)
    n, t = _pair(x, dtype, requires_grad=True)
    sn, st = _pair(scale, "float32")
    zn, zt = _pair(zp, zdtype)
    yn = ndgrad.fake_quantize_per_channel_affine(n, sn, zn, ax, -8, 7)
    yt = torch.fake_quantize_per_channel_affine(t, st, zt, ax, -8, 7)
    _same(yn, yt)
    assert type(yn.grad_fn).__name__ == type(yt.grad_fn).__name__
    yn.sum().backward()
    yt.sum().backward()
    _same(n.grad, t.grad)


def test_qat_straight_through_in_training_and_double_backward():
    rng = np.random.default_rng(5)
    w = rng.normal(size=(4, 3))
    out = {}
    for lib in (torch, ndgrad):
        W = lib.tensor(w, requires_grad=True)
        s = lib.tensor([0.05, 0.1, 0.2, 0.3], dtype=lib.float32)
        z = lib.zeros(4, dtype=lib.int32)
        wq = lib.fake_quantize_per_channel_affine(W, s, z, 0, -8, 7)
        loss = (wq.sum(1) ** 2).sum() + lib.fake_quantize_per_tensor_affine(W, 0.1, 0, -16,
                                                                            15).pow(3).sum()
        (g,) = lib.autograd.grad(loss, W, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), W)
        out[lib] = (loss.item(), g.detach().numpy(), gg.numpy())
    assert out[torch][0] == pytest.approx(out[ndgrad][0], rel=1e-12)
    np.testing.assert_allclose(out[ndgrad][1], out[torch][1], rtol=1e-12)
    np.testing.assert_allclose(out[ndgrad][2], out[torch][2], rtol=1e-12)


@pytest.mark.parametrize("case", [
    lambda m, d: m.fake_quantize_per_tensor_affine(d, 0.2, 0, -4, 4),
    lambda m, d: m.fake_quantize_per_tensor_affine(d, m.tensor(0.2), m.tensor(0), -4, 4),
    lambda m, d: m.fake_quantize_per_channel_affine(d, m.ones(5), m.zeros(5), 0, -4, 4),
])
def test_forward_ad_is_refused_as_in_torch(case):
    def f(m):
        fw = m.autograd.forward_ad
        with fw.dual_level():
            case(m, fw.make_dual(m.ones(5), m.ones(5)))
    _err(f)


@pytest.mark.filterwarnings("ignore:There is a performance drop")
def test_vmap_and_vmap_of_grad_match_torch():
    x = _data(8, (3, 4))
    s, z = np.array([0.1, 0.2, 0.05, 0.3]), np.array([0, 1, -1, 2])

    def results(lib):
        t = lib.tensor(x)
        st, zt = lib.tensor(s, dtype=lib.float32), lib.tensor(z, dtype=lib.int32)

        def f(r):
            return lib.fake_quantize_per_tensor_affine(r, 0.1, 0, -5, 5)

        def h(r):
            return lib.fake_quantize_per_channel_affine(r, st, zt, 0, -5, 5)
        vm, gr = lib.func.vmap, lib.func.grad
        return [vm(f)(t), vm(gr(lambda r: (f(r) ** 2).sum()))(t), vm(h)(t),
                vm(gr(lambda r: (h(r) ** 2).sum()))(t)]
    for a, b in zip(results(ndgrad), results(torch)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_input_changed_in_place_before_backward_is_refused():
    # ndgrad saves the input, not torch's mask (Note [Fake quantization])
    x = ndgrad.ones(3, requires_grad=True)
    y = x * 1
    q = ndgrad.fake_quantize_per_tensor_affine(y, 0.1, 0, -5, 5)
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        q.sum().backward()


def _err(fn):
    with pytest.raises(Exception) as et:
        fn(torch)
    with pytest.raises(type(et.value)) as en:
        fn(ndgrad)
    assert str(en.value) == str(et.value)


@pytest.mark.parametrize("case", [
    lambda m: m.fake_quantize_per_tensor_affine(m.ones(3), 0.1, 0, 5, 2),
    lambda m: m.fake_quantize_per_tensor_affine(m.ones(3), 0.1, 20, 0, 15),
    lambda m: m.fake_quantize_per_tensor_affine(m.ones(3, dtype=m.long), 0.1, 0, 0, 15),
    lambda m: m.fake_quantize_per_tensor_affine(m.ones(3), m.ones(2), m.zeros(2), 0, 15),
    lambda m: m.fake_quantize_per_channel_affine(m.ones(3, 4), m.ones(3), m.zeros(3), 1, 0, 9),
    lambda m: m.fake_quantize_per_channel_affine(m.ones(3, 4), m.ones(3), m.zeros(3), 2, 0, 9),
    lambda m: m.fake_quantize_per_channel_affine(m.ones(3, 4), m.ones(3), m.zeros(3), -2, 0, 9),
    lambda m: m.fake_quantize_per_channel_affine(m.ones(3, 4), m.ones(3, dtype=m.float64),
                                                 m.zeros(3), 0, 0, 9),
    lambda m: m.fake_quantize_per_channel_affine(m.ones(3, 4), m.ones(3),
                                                 m.zeros(3, dtype=m.long), 0, 0, 9),
    lambda m: m.fake_quantize_per_channel_affine(m.ones(3, 4), m.ones(3, 1), m.zeros(3), 0, 0, 9),
    lambda m: m.fake_quantize_per_channel_affine(m.ones(3, 4), m.ones(3), m.zeros(2), 0, 0, 9),
    lambda m: m.fake_quantize_per_channel_affine(m.ones(3, 4), m.ones(2), m.zeros(2), 0, 0, 9),
    lambda m: m.fake_quantize_per_channel_affine(m.ones(3, 4), m.ones(3),
                                                 m.full((3,), 20, dtype=m.int32), 0, 0, 9),
    lambda m: m.fake_quantize_per_channel_affine(m.ones(3, 4), m.ones(3),
                                                 m.zeros(3, dtype=m.int32), 0, 9, 0),
    lambda m: m.fake_quantize_per_channel_affine(m.ones(3, 4, dtype=m.long), m.ones(3),
                                                 m.zeros(3, dtype=m.int32), 0, 0, 9),
])
def test_errors_match_torch(case):
    _err(case)


@pytest.mark.parametrize("case", [
    lambda m, r: m.fake_quantize_per_tensor_affine(m.ones(3), m.tensor(0.1, requires_grad=r),
                                                   m.tensor(0), 0, 15),
    lambda m, r: m.fake_quantize_per_tensor_affine(m.ones(3), m.tensor(0.1),
                                                   m.tensor(0.0, requires_grad=r), 0, 15),
    lambda m, r: m.fake_quantize_per_channel_affine(m.ones(3, 2), m.ones(3, requires_grad=r),
                                                    m.zeros(3), 0, 0, 15),
    lambda m, r: m.fake_quantize_per_channel_affine(m.ones(3, 2), m.ones(3),
                                                    m.zeros(3, requires_grad=r), 0, 0, 15),
])
def test_qparams_that_require_grad_are_refused_in_grad_mode(case):
    _err(lambda m: case(m, True))
    with ndgrad.no_grad():
        assert case(ndgrad, True).tolist() == case(torch, False).tolist()
