"""Convolution layers and functions against torch: modules (same weights, float64: outputs,
parameter and input gradients, state_dict keys), reprs, default initialization, errors, and a
LeNet-style CNN trained 20 steps with plain gradient descent giving torch's loss at every step.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ndgrad
import ndgrad.nn as nn
import ndgrad.nn.functional as F
from tests.nn_compare import check_module

D64 = {"dtype": torch.float64}
N64 = {"dtype": ndgrad.float64}


def _x(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape))


# ---------------------------------------------------------------------------- modules
CONV_CASES = [
    # (class name, args, kwargs, input shape)
    ("Conv1d", (3, 4, 3), {}, (2, 3, 9)),
    ("Conv1d", (4, 6, 4), {"stride": 2, "padding": 2, "dilation": 2, "groups": 2}, (2, 4, 11)),
    ("Conv1d", (3, 4, 4), {"padding": "same", "bias": False}, (3, 9)),
    ("Conv1d", (3, 4, 3), {"padding": 2, "padding_mode": "circular"}, (2, 3, 7)),
    ("Conv2d", (3, 4, 3), {}, (2, 3, 6, 7)),
    ("Conv2d", (4, 6, (3, 2)), {"stride": (2, 1), "padding": (1, 2), "dilation": (1, 2),
                                "groups": 2}, (2, 4, 7, 6)),
    ("Conv2d", (2, 4, (2, 3)), {"padding": "same", "dilation": (3, 1)}, (1, 2, 8, 5)),
    ("Conv2d", (2, 4, 3), {"padding": "valid"}, (2, 6, 5)),
    ("Conv2d", (2, 4, 3), {"padding": 1, "padding_mode": "reflect"}, (2, 2, 5, 6)),
    ("Conv2d", (2, 4, 3), {"padding": (2, 1), "padding_mode": "replicate"}, (2, 2, 5, 6)),
    ("Conv2d", (2, 4, 3), {"padding": 1, "padding_mode": "circular", "stride": 2},
     (2, 2, 5, 6)),
    ("Conv2d", (2, 4, 4), {"padding": "same", "padding_mode": "reflect"}, (2, 2, 6, 6)),
    ("Conv2d", (4, 4, 3), {"groups": 4, "bias": False}, (2, 4, 5, 5)),
    ("Conv3d", (2, 4, 2), {"stride": 2, "padding": 1}, (2, 2, 5, 4, 5)),
    ("Conv3d", (4, 2, (2, 3, 1)), {"groups": 2, "dilation": (2, 1, 1), "padding": "same"},
     (1, 4, 4, 5, 3)),
    ("Conv3d", (2, 2, 3), {"padding": 1, "padding_mode": "replicate"}, (1, 2, 3, 4, 3)),
]

TCONV_CASES = [
    ("ConvTranspose1d", (3, 4, 3), {}, (2, 3, 5)),
    ("ConvTranspose1d", (4, 6, 3), {"stride": 2, "padding": 1, "output_padding": 1,
                                    "groups": 2}, (2, 4, 5)),
    ("ConvTranspose2d", (3, 4, 3), {"stride": 2}, (2, 3, 4, 5)),
    ("ConvTranspose2d", (4, 2, (3, 2)), {"stride": (2, 3), "padding": 1,
                                         "output_padding": (1, 2), "groups": 2,
                                         "dilation": (1, 2), "bias": False}, (2, 4, 4, 3)),
    ("ConvTranspose2d", (2, 3, 3), {"dilation": 2, "output_padding": 1}, (2, 4, 4)),
    ("ConvTranspose3d", (2, 3, 2), {"stride": 2, "padding": 1}, (1, 2, 3, 3, 2)),
]


@pytest.mark.parametrize("name,args,kwargs,shape", CONV_CASES + TCONV_CASES)
def test_module_matches_torch(name, args, kwargs, shape):
    t = getattr(torch.nn, name)(*args, **kwargs, **D64)
    n = getattr(nn, name)(*args, **kwargs, **N64)
    assert repr(n) == repr(t)
    check_module(t, n, _x(*shape))


def test_transposed_output_size():
    t = torch.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, **D64)
    n = nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, **N64)
    x = _x(1, 3, 4, 4)
    for size in ([8, 8], (1, 2, 7, 8), ndgrad.Size([8, 7])):
        check_module(t, n, x)
        ts = list(size) if not isinstance(size, ndgrad.Size) else list(size)
        want = t(x, output_size=ts)
        got = n(ndgrad.tensor(x.numpy()), output_size=size)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="requested an output size of"):
        n(ndgrad.tensor(x.numpy()), output_size=[10, 10])
    with pytest.raises(ValueError, match="output_size must have 2 or 4 elements"):
        n(ndgrad.tensor(x.numpy()), output_size=[8])


def test_fold_unfold_modules():
    x = _x(2, 3, 6, 5)
    for kw in ({}, {"dilation": 2, "padding": 1, "stride": (2, 1)}):
        t, n = torch.nn.Unfold((2, 3), **kw), nn.Unfold((2, 3), **kw)
        assert repr(n) == repr(t)
        to, no = check_module(t, n, x)
        tf = torch.nn.Fold((6, 5), (2, 3), **kw)
        nf = nn.Fold((6, 5), (2, 3), **kw)
        assert repr(nf) == repr(tf)
        check_module(tf, nf, to.detach())
        assert no.grad_fn.name() == "Im2ColBackward0"


def test_functional_node_names_and_saved():
    x = ndgrad.randn(2, 3, 5, 5, requires_grad=True)
    w = ndgrad.randn(4, 3, 3, 3, requires_grad=True)
    y = F.conv2d(x, w, stride=2)
    assert y.grad_fn.name() == "ConvolutionBackward0"
    assert len(y.grad_fn.next_functions) == 3 and y.grad_fn.next_functions[2] == (None, 0)
    assert y.grad_fn._saved_stride == (2, 2) and y.grad_fn._saved_transposed is False
    (gx,) = ndgrad.autograd.grad(y.sum(), x, create_graph=True)
    assert gx.grad_fn.name() == "ConvolutionBackwardBackward0"
    u = F.unfold(x, 2)
    assert u.grad_fn.name() == "Im2ColBackward0"
    assert F.fold(u, (5, 5), 2).grad_fn.name() == "Col2ImBackward0"
    assert F.conv_transpose2d(x, w.transpose(0, 1)).grad_fn.name() == "ConvolutionBackward0"


def test_dtypes():
    # integers convolve exactly (torch does too); float16 computes in float32
    xi, wi = np.arange(18).reshape(1, 2, 3, 3), np.ones((1, 2, 2, 2), np.int64)
    got = F.conv2d(ndgrad.tensor(xi), ndgrad.tensor(wi))
    want = TF.conv2d(torch.tensor(xi), torch.tensor(wi))
    assert got.dtype == ndgrad.int64 and np.array_equal(got.numpy(), want.numpy())
    xh = _x(1, 2, 4, 4).half()
    wh = _x(3, 2, 2, 2, seed=1).half()
    got = F.conv2d(ndgrad.tensor(xh.numpy()), ndgrad.tensor(wh.numpy()))
    assert got.dtype == ndgrad.float16
    np.testing.assert_allclose(got.numpy().astype(np.float32),
                               TF.conv2d(xh, wh).numpy().astype(np.float32), rtol=2e-3,
                               atol=2e-3)
    # the default dtype of a layer is float32
    assert nn.Conv2d(2, 3, 3).weight.dtype == ndgrad.float32


def test_default_init_bounds():
    ndgrad.manual_seed(0)
    m = nn.Conv2d(6, 8, 3, groups=2)
    fan_in = 3 * 9
    bound = 1 / math.sqrt(fan_in)   # kaiming_uniform_(a=sqrt(5)) gives 1/sqrt(fan_in) too
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert w.shape == (8, 3, 3, 3) and np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert np.abs(b).max() <= bound
    t = nn.ConvTranspose2d(6, 8, 3, groups=2)
    assert tuple(t.weight.shape) == (6, 4, 3, 3)
    assert np.abs(t.weight.detach().numpy()).max() <= 1 / math.sqrt(4 * 9)


def test_lazy_conv():
    t = torch.nn.LazyConv2d(4, 3, padding=1, **D64)
    n = nn.LazyConv2d(4, 3, padding=1, **N64)
    assert repr(n) == repr(t)
    x = _x(2, 3, 5, 5)
    t(x)
    n(ndgrad.tensor(x.numpy()))
    assert type(n) is nn.Conv2d and repr(n) == repr(t)
    check_module(t, n, x)
    t = torch.nn.LazyConvTranspose1d(4, 3, 2, **D64)
    n = nn.LazyConvTranspose1d(4, 3, 2, **N64)
    x = _x(2, 3, 5)
    t(x)
    n(ndgrad.tensor(x.numpy()))
    check_module(t, n, x)


# ---------------------------------------------------------------------------- errors
def _r(*s):
    return np.random.default_rng(0).standard_normal(s).astype(np.float32)


ERROR_CASES = [
    ("conv2d", (_r(2, 5, 6, 6), _r(4, 3, 3, 3)), {}),
    ("conv2d", (_r(2, 3, 2, 2), _r(4, 3, 3, 3)), {}),
    ("conv2d", (_r(2, 3, 2, 2), _r(4, 3, 5, 5)), {"padding": 1}),
    ("conv2d", (_r(5), _r(4, 3, 3, 3)), {}),
    ("conv2d", (_r(1, 2, 3, 4, 5), _r(4, 3, 3, 3)), {}),
    ("conv2d", (_r(1, 4, 5, 5), _r(3, 2, 3, 3)), {"groups": 2}),
    ("conv2d", (_r(1, 3, 5, 5), _r(4, 1, 3, 3)), {"groups": 2}),
    ("conv2d", (_r(1, 3, 5, 5), _r(4, 3, 3, 3), _r(3)), {}),
    ("conv2d", (_r(1, 3, 5, 5), _r(4, 3, 3, 3), _r(4).astype(np.float64)), {}),
    ("conv2d", (_r(1, 3, 5, 5), _r(4, 3, 3, 3).astype(np.float64)), {}),
    ("conv2d", (_r(1, 3, 5, 5), _r(4, 3, 3, 3)), {"stride": 2, "padding": "same"}),
    ("conv2d", (_r(1, 3, 5, 5), _r(4, 3, 3, 3)), {"padding": "foo"}),
    ("conv2d", (_r(1, 3, 5, 5), _r(4, 3, 3, 3)), {"stride": (1, 1, 1)}),
    ("conv2d", (_r(1, 3, 5, 5), _r(4, 3, 3, 3)), {"stride": 0}),
    ("conv2d", (_r(1, 3, 5, 5), _r(4, 3, 3, 3)), {"padding": -1}),
    ("conv2d", (_r(1, 3, 5, 5), _r(4, 3, 3, 3)), {"dilation": 0}),
    ("conv2d", (_r(1, 3, 5, 5), _r(4, 3, 3, 3)), {"groups": 0}),
    ("conv2d", (_r(2, 3, 5, 5), _r(0, 3, 3, 3)), {}),
    ("conv2d", (np.ones((1, 1, 3, 3), bool), np.ones((1, 1, 2, 2), bool)), {}),
    ("conv1d", (_r(1, 1, 4), _r(1, 2)), {}),
    ("conv1d", (_r(1, 1, 2, 4), _r(1, 1, 2)), {}),
    ("conv_transpose2d", (_r(2, 5, 6, 6), _r(4, 3, 3, 3)), {}),
    ("conv_transpose2d", (_r(2, 4, 6, 6), _r(4, 3, 3, 3)), {"groups": 3}),
    ("conv_transpose2d", (_r(2, 4, 6, 6), _r(4, 3, 3, 3)), {"output_padding": 1}),
    ("conv_transpose2d", (_r(2, 4, 6, 6), _r(4, 3, 3, 3), _r(4)), {}),
    ("conv_transpose2d", (_r(6), _r(4, 3, 3, 3)), {}),
    ("conv_transpose2d", (_r(1, 4, 2, 2), _r(4, 3, 3, 3)), {"padding": 3}),
    ("conv_transpose2d", (_r(1, 4, 2, 2), _r(4, 3, 3, 3)), {"padding": "same"}),
    ("unfold", (_r(1, 3, 4, 4), 5), {}),
    ("unfold", (_r(1, 3, 4, 4), 0), {}),
    ("fold", (_r(1, 12, 8), (4, 4), 2), {"stride": 1}),
    ("fold", (_r(12), (4, 4), 2), {}),
    ("fold", (_r(1, 10, 9), (4, 4), 2), {}),
]


@pytest.mark.parametrize("fn,args,kwargs", ERROR_CASES)
def test_errors_match_torch(fn, args, kwargs):
    with pytest.raises(Exception) as te:
        getattr(TF, fn)(*[torch.from_numpy(a) if isinstance(a, np.ndarray) else a
                          for a in args], **kwargs)
    with pytest.raises(Exception) as ne:
        getattr(F, fn)(*[ndgrad.tensor(a) if isinstance(a, np.ndarray) else a
                         for a in args], **kwargs)
    assert ne.type is te.type, (ne.value, te.value)
    assert str(ne.value).split("\n")[0] == str(te.value).split("\n")[0]


@pytest.mark.parametrize("kwargs", [
    {"groups": 0}, {"groups": 2}, {"padding": "foo"}, {"padding": "same", "stride": 2},
    {"padding_mode": "zero"}])
def test_module_constructor_errors(kwargs):
    with pytest.raises(ValueError) as te:
        torch.nn.Conv2d(3, 4, 3, **kwargs)
    with pytest.raises(ValueError) as ne:
        nn.Conv2d(3, 4, 3, **kwargs)
    # a set of names is printed in hash order: compare its elements
    nw, tw = str(ne.value).replace("}", "{").split("{"), str(te.value).replace("}", "{").split("{")
    assert nw[0::2] == tw[0::2] and [sorted(p.split(", ")) for p in nw[1::2]] == \
        [sorted(p.split(", ")) for p in tw[1::2]]
    with pytest.raises(ValueError, match='Only "zeros" padding mode'):
        nn.ConvTranspose2d(3, 4, 3, padding_mode="reflect")


# ---------------------------------------------------------------------------- training
def _lenet(mod, Fm, **fk):
    class LeNet(mod.Module):
        def __init__(self):
            super().__init__()
            self.c1 = mod.Conv2d(1, 4, 5, padding=2, **fk)
            self.c2 = mod.Conv2d(4, 8, 3, **fk)
            self.f1 = mod.Linear(8 * 3 * 3, 16, **fk)
            self.f2 = mod.Linear(16, 10, **fk)

        def forward(self, x):
            x = Fm.max_pool2d(Fm.relu(self.c1(x)), 2)
            x = Fm.max_pool2d(Fm.relu(self.c2(x)), 2)
            return self.f2(Fm.relu(self.f1(x.flatten(1))))
    return LeNet()


def test_lenet_training_matches_torch():
    torch.manual_seed(0)
    tm = _lenet(torch.nn, TF, **D64)
    nm = _lenet(nn, F, **N64)
    nm.load_state_dict({k: ndgrad.tensor(v.numpy().copy()) for k, v in tm.state_dict().items()})
    assert list(nm.state_dict()) == list(tm.state_dict())
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((20, 8, 1, 16, 16))
    ys = rng.integers(0, 10, (20, 8))
    lr = 0.05
    for step in range(20):
        tl = TF.cross_entropy(tm(torch.from_numpy(xs[step])), torch.from_numpy(ys[step]))
        nl = F.cross_entropy(nm(ndgrad.tensor(xs[step])), ndgrad.tensor(ys[step]))
        assert abs(nl.item() - tl.item()) <= 1e-9 * abs(tl.item()), step
        tm.zero_grad()
        nm.zero_grad()
        tl.backward()
        nl.backward()
        with torch.no_grad():
            for p in tm.parameters():
                p -= lr * p.grad
        with ndgrad.no_grad():
            for p in nm.parameters():
                p -= lr * p.grad
    for (k, tp), (_, np_) in zip(tm.named_parameters(), nm.named_parameters()):
        np.testing.assert_allclose(np_.detach().numpy(), tp.detach().numpy(), rtol=1e-9,
                                   atol=1e-12, err_msg=k)


@pytest.mark.parametrize("outer", ["reverse-mode", "forward-mode"])
def test_batched_hessian_groups(outer):
    # vectorized second order through every batching rule (batched inputs, batched weights
    # folded into groups) against torch
    rng = np.random.default_rng(2)
    x, w, b = rng.standard_normal((1, 4, 4, 3)), rng.standard_normal((4, 2, 2, 2)), \
        rng.standard_normal(4)
    kw = {"groups": 2, "stride": (2, 1), "padding": 1}
    H = ndgrad.autograd.functional.hessian(
        lambda X, W, B: (F.conv2d(X, W, B, **kw) ** 3).sum(),
        tuple(ndgrad.tensor(a) for a in (x, w, b)), vectorize=True,
        outer_jacobian_strategy=outer)
    TH = torch.autograd.functional.hessian(
        lambda X, W, B: (TF.conv2d(X, W, B, **kw) ** 3).sum(),
        tuple(torch.tensor(a) for a in (x, w, b)))   # torch's vmap path is slow to start
    for i in range(3):
        for j in range(3):
            np.testing.assert_allclose(H[i][j].detach().numpy(), TH[i][j].detach().numpy(),
                                       rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------------------- fast paths
def test_wide_weight_grad_with_nonfinite_input_matches_torch():
    """Note [Wide im2col]: the extra grid positions must not turn an inf of the input into a
    NaN of a weight gradient entry that torch computes finite (the exact columns run again)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 2, 6, 7))
    x[0, 1, 2, 0] = np.inf
    x[1, 0, 3, 0] = -np.inf
    w = rng.standard_normal((3, 2, 2, 3))
    tw = torch.tensor(w, requires_grad=True)
    TF.conv2d(torch.tensor(x), tw, padding=(0, 1)).sum().backward()
    nw = ndgrad.tensor(w, requires_grad=True)
    F.conv2d(ndgrad.tensor(x), nw, padding=(0, 1)).sum().backward()
    np.testing.assert_array_equal(np.isnan(nw.grad.numpy()), np.isnan(tw.grad.numpy()))
    np.testing.assert_allclose(nw.grad.numpy(), tw.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_results_do_not_alias_kernel_scratch():
    """Note [Kernel workspace]: a later call reuses the scratch arrays; earlier results (all
    three kernels, cropped or not, padded or not, float32 and float16) stay as they were."""
    rng = np.random.default_rng(4)
    for dt in (np.float32, np.float16):
        for pad in (0, 1):
            x = ndgrad.tensor(rng.standard_normal((2, 3, 6, 6)).astype(dt), requires_grad=True)
            w = ndgrad.tensor(rng.standard_normal((2, 3, 3, 3)).astype(dt), requires_grad=True)
            y = F.conv2d(x, w, padding=pad)
            y.sum().backward()
            kept = [t.detach().numpy().copy() for t in (y, x.grad, w.grad)]
            x2 = ndgrad.tensor(rng.standard_normal((2, 3, 6, 6)).astype(dt), requires_grad=True)
            F.conv2d(x2, w.detach() * 3, padding=pad).sum().backward()
            for k, t in zip(kept, (y, x.grad, w.grad)):
                np.testing.assert_array_equal(k, t.detach().numpy())


@pytest.mark.parametrize("dtype,fn,shapes,kw", [
    (d, "conv2d", [(2, 3, 6, 6), (4, 3, 3, 3), (4,)], {"padding": 1}) for d in ("bfloat16",
                                                                              "float16")] + [
    (d, "conv2d", [(2, 3, 7, 7), (4, 3, 3, 3), (4,)], {"stride": 2}) for d in ("bfloat16",
                                                                             "float16")] + [
    (d, "conv1d", [(2, 3, 9), (4, 3, 3), (4,)], {}) for d in ("bfloat16", "float16")] + [
    ("bfloat16", "conv_transpose2d", [(2, 4, 4, 4), (4, 3, 3, 3), (3,)], {})])
def test_low_precision_conv_adds_bias_before_rounding(dtype, fn, shapes, kw):
    # torch's bfloat16/float16 CPU convolutions add the bias to the float32 accumulator and round
    # once (bit-exact here); float16 conv_transpose rounds otherwise in torch (not compared)
    g = torch.Generator().manual_seed(0)
    ts = [torch.randn(*s, generator=g).to(getattr(torch, dtype)) for s in shapes]
    want = getattr(TF, fn)(*ts, **kw)
    got = getattr(F, fn)(*(ndgrad.tensor(t.float().numpy()).to(getattr(ndgrad, dtype))
                           for t in ts), **kw)
    assert str(got.dtype) == str(want.dtype).replace("torch", "ndgrad")
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


def test_transposed_output_size_error_message_exact():
    # torch prints the requested size as passed (sliced to the spatial dims) and input.size()[2:]
    for shape, size in [((1, 3, 4, 4), [10, 10]), ((1, 3, 4, 4), (1, 2, 10, 3)),
                        ((3, 4, 4), (10, 10))]:
        x = _x(*shape)
        msgs = []
        for lib, v in ((torch, x), (ndgrad, ndgrad.tensor(x.numpy()))):
            m = lib.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, dtype=lib.float64)
            with pytest.raises(ValueError) as e:
                m(v, output_size=size)
            msgs.append(str(e.value).replace("ndgrad.", "torch."))
        assert msgs[1] == msgs[0]


def test_same_padding_checks_the_padded_input_and_1d_transposed_sizes():
    # 'same' with an even dilated kernel pads the odd extra first, then checks sizes (a 1-row
    # input with a 4-row kernel works); torch's messages show that padded input, and a 1-d
    # transposed conv's sizes as the 2-d ones it runs
    for m in (torch, ndgrad):
        y = m.nn.functional.conv2d(m.ones(1, 1, 1, 5, dtype=m.float64),
                                   m.ones(1, 1, 4, 4, dtype=m.float64), padding="same",
                                   dilation=(1, 2))
        assert tuple(y.shape) == (1, 1, 1, 5)
    cases = [lambda m: m.nn.functional.conv2d(m.ones(1, 2, 1, 5), m.ones(1, 1, 4, 4),
                                              padding="same"),
             lambda m: m.nn.functional.conv_transpose1d(m.ones(1, 1, 1), m.ones(1, 1, 1),
                                                        padding=2),
             lambda m: m.nn.functional.conv_transpose1d(m.ones(1, 2), m.ones(1, 1, 2),
                                                        padding=2, dilation=1)]
    for case in cases:
        msgs = []
        for m in (torch, ndgrad):
            with pytest.raises(RuntimeError) as e:
                case(m)
            msgs.append(str(e.value))
        assert msgs[1] == msgs[0]
    x = _x(2, 3, 1, 6)
    t = torch.nn.Conv2d(3, 2, (4, 3), padding="same", dilation=(1, 2), **D64)
    n = nn.Conv2d(3, 2, (4, 3), padding="same", dilation=(1, 2), **N64)
    check_module(t, n, x)


# ---- mixed dtypes (a float32 layer called with float64 inputs): torch's refusal, word for word
# (found by tests/torch_moduledb.py's "mixed" check) ----
def _d(m):
    return m.float64


_MIXED = {
    "linear+bias": lambda m: m.nn.functional.linear(m.ones(2, 3, dtype=_d(m)), m.ones(4, 3),
                                                    m.ones(4)),
    "linear 3d": lambda m: m.nn.functional.linear(m.ones(5, 2, 3, dtype=_d(m)), m.ones(4, 3),
                                                  m.ones(4)),
    "linear bias only": lambda m: m.nn.functional.linear(
        m.ones(2, 3, dtype=_d(m)), m.ones(4, 3, dtype=_d(m)), m.ones(4)),
    "addmm self": lambda m: m.addmm(m.ones(4, dtype=_d(m)), m.ones(2, 3, dtype=_d(m)),
                                    m.ones(3, 4)),
    "addmm mats": lambda m: m.addmm(m.ones(4), m.ones(2, 3, dtype=_d(m)), m.ones(3, 4)),
    "baddbmm": lambda m: m.baddbmm(m.ones(4), m.ones(1, 2, 3, dtype=_d(m)), m.ones(1, 3, 4)),
    "addbmm": lambda m: m.addbmm(m.ones(4), m.ones(1, 2, 3, dtype=_d(m)), m.ones(1, 3, 4)),
    "addmv": lambda m: m.addmv(m.ones(2), m.ones(2, 3, dtype=_d(m)), m.ones(3)),
    "bmm": lambda m: m.bmm(m.ones(1, 2, 3, dtype=_d(m)), m.ones(1, 3, 4)),
    "batched matmul": lambda m: m.matmul(m.ones(2, 2, 3, dtype=_d(m)), m.ones(2, 3, 4)),
    "conv bias first": lambda m: m.nn.functional.conv2d(m.ones(1, 2, 5, 5, dtype=_d(m)),
                                                        m.ones(3, 2, 3, 3), m.ones(3)),
    "conv unbatched": lambda m: m.nn.functional.conv1d(m.ones(2, 5, dtype=_d(m)),
                                                       m.ones(3, 2, 3), m.ones(3)),
    "conv same": lambda m: m.nn.functional.conv1d(m.ones(1, 2, 5, dtype=_d(m)),
                                                  m.ones(3, 2, 3), m.ones(3), padding="same"),
    "conv valid": lambda m: m.nn.functional.conv1d(m.ones(2, 5, dtype=_d(m)), m.ones(3, 2, 3),
                                                   m.ones(3), padding="valid"),
    "conv_transpose float bias": lambda m: m.nn.functional.conv_transpose2d(
        m.ones(1, 2, 5, 5, dtype=_d(m)), m.ones(2, 3, 3, 3, dtype=_d(m)), m.ones(3)),
    "conv_transpose weight": lambda m: m.nn.functional.conv_transpose1d(
        m.ones(1, 2, 5, dtype=_d(m)), m.ones(2, 3, 3), m.ones(3)),
    "multi_margin weight": lambda m: m.nn.functional.multi_margin_loss(
        m.ones(2, 3, dtype=_d(m)), m.tensor([0, 7]), weight=m.ones(3)),
    "fractional samples": lambda m: m.nn.functional.fractional_max_pool2d(
        m.ones(1, 2, 5, 5, dtype=_d(m)), 2, output_size=2, _random_samples=m.ones(1, 2, 2)),
}


@pytest.mark.parametrize("case", sorted(_MIXED))
def test_mixed_dtype_refusals_like_torch(case):
    f = _MIXED[case]
    try:
        want = f(torch)
    except RuntimeError as e:
        with pytest.raises(RuntimeError) as got:
            f(ndgrad)
        assert str(got.value) == str(e)
        return
    got = f(ndgrad)                   # the transposed convolution adds a float32 bias
    assert str(got.dtype)[7:] == str(want.dtype)[6:]
    np.testing.assert_allclose(got.numpy(), want.numpy())


def test_conv_transpose_takes_any_iterable_argument_as_torch():
    """torch's ConvTranspose turns an iterable argument into the tuple of its items, so
    ``padding="same"`` becomes its characters: the same repr, and the functional refuses them
    with torch's TypeError at the call (found by tests/torch_moduledb.py's variants)."""
    tm, nm = torch.nn.ConvTranspose1d(2, 3, 3, padding="same"), nn.ConvTranspose1d(
        2, 3, 3, padding="same")
    assert repr(nm) == repr(tm)
    with pytest.raises(TypeError) as want:
        tm(torch.ones(1, 2, 5))
    with pytest.raises(TypeError) as got:
        nm(ndgrad.ones(1, 2, 5))
    assert str(got.value).replace(" (position 5)", "") == str(want.value).replace(
        " (position 5)", "")
