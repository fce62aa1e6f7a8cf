"""ndgrad.nn activations, dropout, padding and shuffles against torch: the modules (same
outputs and gradients, repr), in-place forms (values, version, node names), train/eval
behaviour and the statistics of the random ones (dropout masks, rrelu slopes, gumbel noise),
and errors (type and message)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn as tnn
import torch.nn.functional as TF

import ndgrad
import ndgrad.nn as nn
import ndgrad.nn.functional as F
from tests.nn_compare import assert_close, check_module, to_ndgrad

torch.manual_seed(0)
_X = torch.randn(2, 4, 3, 3, dtype=torch.float64) * 3

MODULES = [
    "ReLU()", "ReLU6()", "ELU(alpha=0.7)", "SELU()", "CELU(alpha=1.5)", "GELU()",
    "GELU(approximate='tanh')", "SiLU()", "Mish()", "Softplus(beta=2, threshold=3)",
    "Softsign()", "Softmin(dim=1)", "Softmax(dim=1)", "Softmax2d()", "LogSoftmax(dim=-1)",
    "Hardtanh(-2.0, 1.5)", "Hardswish()", "Hardsigmoid()", "Hardshrink(0.7)",
    "Softshrink(0.7)", "Tanhshrink()", "LeakyReLU(0.2)", "PReLU(dtype=DT)",
    "PReLU(4, init=0.1, dtype=DT)",
    "RReLU(0.1, 0.4)", "GLU(dim=1)", "LogSigmoid()", "Sigmoid()", "Tanh()",
    "Threshold(0.5, -2.0)",
    "Dropout(0.3)", "Dropout1d()", "Dropout2d()", "Dropout3d()", "AlphaDropout(0.2)",
    "FeatureAlphaDropout(0.2)",
    "ZeroPad1d(2)", "ZeroPad2d((1, 0, 2, 1))", "ConstantPad1d((2, -1), 3.5)",
    "ConstantPad2d(1, -1.0)", "ReflectionPad1d(2)", "ReflectionPad2d((2, 1, 0, 2))",
    "ReplicationPad1d((3, 1))", "ReplicationPad2d(2)", "CircularPad1d(2)",
    "CircularPad2d((1, 2, 2, 0))", "PixelShuffle(2)", "PixelUnshuffle(3)", "ChannelShuffle(2)",
]


def _input(spec: str) -> torch.Tensor:
    if spec.startswith("PixelUnshuffle"):
        return torch.randn(1, 2, 6, 6, dtype=torch.float64)
    if "Pad1d" in spec or spec.startswith("Dropout1d"):
        return _X[0]
    if spec.startswith(("ZeroPad2d", "ConstantPad2d", "ReflectionPad2d", "ReplicationPad2d",
                        "CircularPad2d")):
        return _X
    if spec.startswith("Dropout3d"):
        return _X.unsqueeze(0)
    return _X


@pytest.mark.parametrize("spec", MODULES)
def test_module_matches_torch(spec):
    tm = eval("tnn." + spec, {"tnn": tnn, "DT": torch.float64})
    nm = eval("nn." + spec, {"nn": nn, "DT": ndgrad.float64})
    assert repr(nm) == repr(tm)
    if "Dropout" in spec or spec.startswith("RReLU"):   # random in training: compare in eval
        tm.eval()
        nm.eval()
    x = _input(spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_module(tm, nm, x)
        if spec.startswith("PReLU(4"):
            nm = nn.PReLU(4, init=0.1)
            assert list(nm.state_dict()) == ["weight"]
            assert nm.weight.tolist() == pytest.approx([0.1] * 4)


def test_module_defaults_float32_and_dtype():
    assert nn.PReLU().weight.dtype == ndgrad.float32
    assert nn.PReLU(3, dtype=ndgrad.float64).weight.dtype == ndgrad.float64
    assert nn.PReLU(3).weight.requires_grad


INPLACE = ["relu", "relu6", "elu", "selu", "celu", "hardtanh", "leaky_relu", "rrelu",
           "hardswish", "silu", "mish", "hardsigmoid"]


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_kwarg_matches_torch(name):
    x = _X[0].clone().requires_grad_(True)
    nx = to_ndgrad(x, requires_grad=True)
    ty = x * 1
    ny = nx * 1
    tv, nv = ty._version, ny._version
    tr = getattr(TF, name)(ty, inplace=True)
    nr = getattr(F, name)(ny, inplace=True)
    assert nr is ny and tr is ty
    assert ny._version - nv == ty._version - tv
    assert type(nr.grad_fn).__name__ == type(tr.grad_fn).__name__
    assert_close(nr, tr, 1e-12, 1e-12)
    g = torch.randn_like(tr)
    tr.backward(g)
    nr.backward(to_ndgrad(g))
    assert_close(nx.grad, x.grad, 1e-12, 1e-12)


@pytest.mark.parametrize("name,args", [("relu_", ()), ("elu_", (0.5,)), ("selu_", ()),
                                       ("celu_", (2.0,)), ("hardtanh_", (-0.5, 2.0)),
                                       ("leaky_relu_", (0.3,)), ("threshold_", (0.1, 5.0)),
                                       ("rrelu_", ())])
def test_inplace_functions(name, args):
    x = _X[0].clone().requires_grad_(True)
    nx = to_ndgrad(x, requires_grad=True)
    tr = getattr(TF, name)(x * 1, *args)
    nr = getattr(F, name)(nx * 1, *args)
    assert type(nr.grad_fn).__name__ == type(tr.grad_fn).__name__
    assert_close(nr, tr, 1e-12, 1e-12)
    with pytest.raises(RuntimeError, match="in-place"):
        getattr(F, name)(nx, *args)


@pytest.mark.parametrize("name,args", [
    ("elu", ()), ("selu", ()), ("celu", ()), ("gelu", ()), ("silu", ()), ("mish", ()),
    ("softplus", ()), ("hardtanh", ()), ("relu6", ()), ("hardswish", ()), ("hardsigmoid", ()),
    ("hardshrink", ()), ("softshrink", ()), ("leaky_relu", ()), ("logsigmoid", ()),
    ("threshold", (0.1, 2.0)), ("softsign", ()), ("tanhshrink", ()), ("glu", (0,)),
    ("rrelu", ())])
def test_node_names(name, args):
    x = _X[0].clone().requires_grad_(True)
    assert type(getattr(F, name)(to_ndgrad(x, True), *args).grad_fn).__name__ == \
        type(getattr(TF, name)(x, *args).grad_fn).__name__


def test_node_names_prelu_pad_shuffles():
    x = _X.clone().requires_grad_(True)
    nx = to_ndgrad(x, True)
    w = torch.rand(4, dtype=torch.float64)
    assert type(F.prelu(nx, to_ndgrad(w)).grad_fn).__name__ == "PreluKernelBackward0"
    for mode, pad in [("constant", (1, 2)), ("reflect", (1, 1, 0, 1)), ("replicate", (1, 2, 0, 1)),
                      ("reflect", (1, 1, 1, 1, 1, 1))]:
        t = TF.pad(x, pad, mode)
        n = F.pad(nx, pad, mode)
        assert type(n.grad_fn).__name__ == type(t.grad_fn).__name__
    assert type(F.pixel_shuffle(nx, 2).grad_fn).__name__ == "PixelShuffleBackward0"
    assert type(F.pixel_unshuffle(nx, 3).grad_fn).__name__ == "PixelUnshuffleBackward0"
    assert type(F.channel_shuffle(nx, 2).grad_fn).__name__ == "ChannelShuffleBackward0"


def test_gradgrad_of_activations():
    for name in ["elu", "gelu", "silu", "mish", "softplus", "logsigmoid", "hardswish"]:
        x = _X[0].clone().requires_grad_(True)
        nx = to_ndgrad(x, True)
        (tg,) = torch.autograd.grad(getattr(TF, name)(x).pow(2).sum(), x, create_graph=True)
        (ng,) = ndgrad.autograd.grad(getattr(F, name)(nx).pow(2).sum(), nx, create_graph=True)
        (tgg,) = torch.autograd.grad(tg.sum(), x)
        (ngg,) = ndgrad.autograd.grad(ng.sum(), nx)
        assert_close(ngg, tgg, 1e-9, 1e-10, name)


# ---------------------------------------------------------------------------- random ones
def test_dropout_statistics_and_gradient():
    ndgrad.manual_seed(0)
    x = ndgrad.ones(200, 100, dtype=ndgrad.float64, requires_grad=True)
    p = 0.3
    y = F.dropout(x, p)
    vals = y.detach().numpy()
    kept = vals != 0
    assert abs(kept.mean() - (1 - p)) < 0.01
    np.testing.assert_allclose(vals[kept], 1 / (1 - p))
    y.backward(ndgrad.ones_like(y))
    np.testing.assert_allclose(x.grad.numpy(), kept / (1 - p))     # grad == mask * scale
    assert type(y.grad_fn).__name__ == "MulBackward0"


def test_dropout_noop_and_extremes():
    x = ndgrad.randn(5, 4)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert F.alpha_dropout(x, 0.5) is x          # training defaults to False
    assert F.dropout(x, 1.0).abs().sum().item() == 0
    m = nn.Dropout(0.5)
    assert m.training
    m.eval()
    assert m(x) is x
    m.train()
    ndgrad.manual_seed(1)
    assert (m(x).numpy() == 0).any()


@pytest.mark.parametrize("fn,shape,chan", [(F.dropout1d, (40, 30, 5), 1),
                                           (F.dropout1d, (60, 5), 0),
                                           (F.dropout2d, (20, 30, 3, 3), 1),
                                           (F.dropout3d, (10, 30, 2, 2, 2), 1),
                                           (F.dropout3d, (60, 2, 2, 2), 0),
                                           (F.feature_alpha_dropout, (20, 30, 4), 1)])
def test_channel_dropout_masks_whole_channels(fn, shape, chan):
    ndgrad.manual_seed(2)
    x = ndgrad.ones(*shape, dtype=ndgrad.float64)
    kw = {"training": True} if fn is F.feature_alpha_dropout else {}
    y = fn(x, 0.5, **kw).numpy()
    flat = y.reshape(int(np.prod(shape[:chan + 1])), -1)
    assert (flat == flat[:, :1]).all()                     # one value per channel
    frac = np.mean(flat[:, 0] == flat[:, 0].max())
    assert 0.35 < frac < 0.65


def test_alpha_dropout_keeps_mean_and_variance():
    ndgrad.manual_seed(3)
    x = ndgrad.randn(400, 250, dtype=ndgrad.float64)
    y = F.alpha_dropout(x, 0.2, training=True).numpy()
    assert abs(y.mean()) < 0.02
    assert abs(y.std() - 1) < 0.02
    z = nn.AlphaDropout(0.2).train()(x)
    assert z.shape == x.shape


def test_dropout_warnings_and_errors():
    x = ndgrad.randn(2, 3, 4)
    for fn in (F.dropout, F.dropout1d, F.dropout2d, F.dropout3d, F.alpha_dropout,
               F.feature_alpha_dropout):
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
            fn(x, 1.5)
    with pytest.raises(ValueError, match="dropout probability"):
        nn.Dropout(-0.1)
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input"):
        F.dropout1d(ndgrad.randn(2, 3, 4, 5))
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        F.dropout2d(x)
    with pytest.warns(UserWarning, match="Received a 3-D input to dropout3d"):
        F.dropout3d(x)
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        F.dropout(ndgrad.ones(3, dtype=ndgrad.int64), 0.5)


def test_rrelu_training_slopes():
    ndgrad.manual_seed(4)
    x = -ndgrad.rand(1000, dtype=ndgrad.float64) - 0.1
    x.requires_grad_(True)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    slope = (y / x).detach().numpy()
    assert slope.min() >= 0.1 and slope.max() <= 0.3
    assert abs(slope.mean() - 0.2) < 0.01
    y.backward(ndgrad.ones_like(y))
    np.testing.assert_allclose(x.grad.numpy(), slope)
    pos = ndgrad.rand(10, dtype=ndgrad.float64)
    assert (F.rrelu(pos, training=True) == pos).all()
    t = torch.tensor(x.detach().numpy())
    assert_close(F.rrelu(x.detach()), TF.rrelu(t))            # eval: the mean slope


def test_gumbel_softmax():
    ndgrad.manual_seed(5)
    logits = ndgrad.randn(6, 5, dtype=ndgrad.float64, requires_grad=True)
    y = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(y.sum(-1).detach().numpy(), 1)
    h = F.gumbel_softmax(logits, hard=True)
    hv = h.detach().numpy()
    assert set(np.unique(hv)) <= {0.0, 1.0} and (hv.sum(-1) == 1).all()
    h.backward(ndgrad.randn(6, 5, dtype=ndgrad.float64))
    assert logits.grad is not None and np.abs(logits.grad.numpy()).sum() > 0


# ---------------------------------------------------------------------------- errors
ERRORS = [
    ("softshrink", (torch.randn(3, dtype=torch.float64),), {"lambd": -0.5}),
    ("hardtanh", (torch.randn(3),), {"min_val": 0.5, "max_val": -0.5}),
    ("gelu", (torch.randn(3),), {"approximate": "asdf"}),
    ("rrelu", (torch.randn(3),), {"lower": 0.3, "upper": 0.1}),
    ("elu", (torch.arange(3),), {}),
    ("silu", (torch.arange(3),), {}),
    ("relu6", (torch.ones(2, dtype=torch.bool),), {}),
    ("glu", (torch.tensor(1.0),), {}),
    ("glu", (torch.randn(2, 3), 1), {}),
    ("celu", (torch.randn(3),), {"alpha": 0.0}),
    ("prelu", (torch.tensor(1.0), torch.rand(2)), {}),
    ("prelu", (torch.randn(2, 8, 3), torch.rand(9)), {}),
    ("prelu", (torch.randn(2, 8, 3), torch.rand(2, 4)), {}),
    ("softmax", (torch.arange(3), 0), {}),
    ("pad", (torch.randn(1, 3), (1, 1), "foo"), {}),
    ("pad", (torch.randn(1, 3), (1,)), {}),
    ("pad", (torch.randn(1, 3), (1, 1, 1, 1, 1, 1)), {}),
    ("pad", (torch.randn(1, 3), (3, 3), "reflect"), {}),
    ("pad", (torch.randn(1, 3), (1, 1), "reflect", 1.0), {}),
    ("pad", (torch.randn(1, 2, 3), (4, 0), "circular"), {}),
    ("pad", (torch.randn(2, 0, 3), (1, 1), "replicate"), {}),
    ("pad", (torch.randn(3), (1, 1), "reflect"), {}),
    ("pad", (torch.randn(1, 2, 3), (-4, 0), "replicate"), {}),
    ("pad", (torch.randn(1, 2, 3), (-2, -2)), {}),
    ("pad", (torch.randn(1, 1, 3, 3), (0, 0, 3, 3), "reflect"), {}),
    ("pad", (torch.randn(1, 1, 3, 3, 3), (0, 0, 0, 0, -4, 0), "replicate"), {}),
    ("pixel_shuffle", (torch.randn(1, 3, 2, 2), 2), {}),
    ("pixel_unshuffle", (torch.randn(1, 1, 3, 4), 2), {}),
    ("channel_shuffle", (torch.randn(1, 3, 2, 2), 2), {}),
]


@pytest.mark.parametrize("name,args,kwargs", ERRORS)
def test_errors_match_torch(name, args, kwargs):
    with pytest.raises(Exception) as te:
        getattr(TF, name)(*args, **kwargs)
    nargs = [to_ndgrad(a) for a in args]
    with pytest.raises(Exception) as ne:
        getattr(F, name)(*nargs, **kwargs)
    assert type(ne.value) is type(te.value), (ne.value, te.value)
    want = str(te.value).split("\n")[0]
    got = str(ne.value).split("\n")[0]
    if name == "pad" and "narrow" in want:      # torch words it through narrow()
        return
    assert got == want


def test_softmax_implicit_dim_warns_at_caller():
    x = ndgrad.randn(2, 3)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax") as rec:
        y = F.softmax(x)
    assert rec[0].filename == __file__
    assert_close(y, TF.softmax(torch.tensor(x.numpy()), 1), 1e-6, 1e-6)
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D"):
        nn.Softmax2d()(x)
    with pytest.raises(ValueError, match="expected 3D or 4D input"):
        nn.CircularPad2d(1)(x)


def test_pad_modes_match_torch_with_negative_pads():
    x = torch.randn(2, 3, 5, 6, dtype=torch.float64)
    nx = to_ndgrad(x)
    for mode, pad in [("constant", (-1, 2, 3, -2)), ("reflect", (-2, 3, 1, -1)),
                      ("replicate", (4, -2, -3, 5)), ("circular", (-1, 2, 2, -3))]:
        assert_close(F.pad(nx, pad, mode), TF.pad(x, pad, mode), 0, 0, f"{mode} {pad}")
    y = torch.randn(1, 2, 3, 4, 5, dtype=torch.float64)
    for mode in ("reflect", "replicate", "circular"):
        assert_close(F.pad(to_ndgrad(y), (1, 2, 2, 1, 0, 2), mode),
                     TF.pad(y, (1, 2, 2, 1, 0, 2), mode), 0, 0, mode)
    assert F.pad(ndgrad.ones(2, dtype=ndgrad.int64), (1, 1), value=7).tolist() == [7, 1, 1, 7]


@pytest.mark.parametrize("shape,pad", [
    ((1, 1, 1), (-2, 0)), ((1, 1, 3), (-4, 2)), ((1, 1, 3), (2, -4)), ((1, 1, 3), (-1, -3)),
    ((1, 1, 3), (-3, 0)), ((1, 1, 4), (-2, -2)), ((2, 3), (-1, -1, -2, -1)),
    ((2, 3), (-1, -1, -1, -1)), ((2, 3), (5, -1, 0, 0))])
def test_constant_pad_crops_each_side_as_torch(shape, pad):
    """A negative pad crops first, side by side: a crop below size 0 is torch's narrow() error
    even when the other side's padding would make the output size non-negative (found by
    tests/torch_moduledb.py's ConstantPad variants)."""
    x = torch.arange(float(np.prod(shape))).reshape(shape)
    try:
        want = TF.pad(x, pad)
    except RuntimeError as e:
        with pytest.raises(RuntimeError) as got:
            F.pad(to_ndgrad(x), pad)
        assert str(got.value) == str(e)
        return
    assert_close(F.pad(to_ndgrad(x), pad), want, 0, 0)


@pytest.mark.parametrize("dtype,name", [
    (d, n) for d in ("bfloat16", "float16")
    for n in ("gelu", "gelu_tanh", "silu", "tanh", "sigmoid", "softmax", "log_softmax_dim0")
    if (n, d) != ("sigmoid", "float16")])   # torch's float16 sigmoid backward rounds in steps
def test_low_precision_forward_and_backward_round_once(dtype, name):
    # torch's float16/bfloat16 kernels compute in float32 and round the result once, in the
    # forward and in the backward (g * derivative): bit-identical values and gradients
    fns = {"gelu": lambda m, t: m.nn.functional.gelu(t),
           "gelu_tanh": lambda m, t: m.nn.functional.gelu(t, approximate="tanh"),
           "silu": lambda m, t: m.nn.functional.silu(t), "tanh": lambda m, t: m.tanh(t),
           "sigmoid": lambda m, t: m.sigmoid(t), "softmax": lambda m, t: m.softmax(t, -1),
           "log_softmax_dim0": lambda m, t: m.log_softmax(t, 0)}
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(16, 24, generator=gen).to(getattr(torch, dtype)).requires_grad_()
    g = torch.randn(16, 24, generator=gen).to(x.dtype)
    y = fns[name](torch, x)
    y.backward(g)
    nx = ndgrad.tensor(x.detach().float().numpy()).to(getattr(ndgrad, dtype)).requires_grad_()
    ny = fns[name](ndgrad, nx)
    ny.backward(ndgrad.tensor(g.float().numpy()).to(nx.dtype))
    assert str(ny.dtype) == str(y.dtype).replace("torch", "ndgrad")
    np.testing.assert_array_equal(ny.detach().float().numpy(), y.detach().float().numpy())
    np.testing.assert_array_equal(nx.grad.float().numpy(), x.grad.float().numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_rrelu_training_draws_torchs_slopes(dtype):
    # one float64 uniform per non-positive element, in row-major order (a transposed input
    # too), none for positive ones: after the same seed, torch's slopes and the same stream after
    x = torch.randn(6, 5, generator=torch.Generator().manual_seed(0)).to(getattr(torch, dtype))
    x[0, 0] = 0.0
    for view in (lambda t: t, lambda t: t.t()):
        torch.manual_seed(3)
        ndgrad.manual_seed(3)
        xt = view(x.clone()).requires_grad_()
        nx = view(ndgrad.tensor(x.float().numpy()).to(getattr(ndgrad, dtype))).requires_grad_()
        y = TF.rrelu(xt, 0.1, 0.3, training=True)
        ny = F.rrelu(nx, 0.1, 0.3, training=True)
        np.testing.assert_array_equal(ny.detach().float().numpy(), y.detach().float().numpy())
        y.sum().backward()
        ny.sum().backward()
        np.testing.assert_array_equal(nx.grad.float().numpy(), xt.grad.float().numpy())
        assert ndgrad.rand(()).item() == torch.rand(()).item()


def test_rrelu_training_on_a_zero_dim_tensor():
    torch.manual_seed(1)
    ndgrad.manual_seed(1)
    assert F.rrelu(ndgrad.tensor(-2.0), training=True).item() == \
        TF.rrelu(torch.tensor(-2.0), training=True).item()
    assert F.rrelu(ndgrad.tensor(3.0), training=True).item() == 3.0


def _piecewise_double_backward(lib, name):
    F = lib.nn.functional
    f = {"leaky_relu": lambda x: F.leaky_relu(x, 0.2), "hardtanh": F.hardtanh,
         "relu6": F.relu6, "threshold": lambda x: F.threshold(x, 0.1, 0.0),
         "hardshrink": F.hardshrink, "softshrink": F.softshrink}[name]
    x = lib.tensor([[1.0, -2.0, 0.3], [0.7, 0.2, -0.1]], dtype=lib.float64,
                   requires_grad=True)
    g, = lib.autograd.grad((f(x) * lib.arange(6.0, dtype=lib.float64).view(2, 3)).sum(), x,
                           create_graph=True)
    (g * g).sum().backward()
    return (g.requires_grad, type(g.grad_fn).__name__,
            [type(n[0]).__name__ for n in g.grad_fn.next_functions], g.tolist(), x.grad.tolist())


@pytest.mark.parametrize("name", ["leaky_relu", "hardtanh", "relu6", "threshold", "hardshrink",
                                  "softshrink"])
def test_piecewise_activation_double_backward_reaches_input_as_torch(name):
    """A piecewise-constant derivative: torch's backward is an op of (grad, self), so the
    gradient of a gradient reaches the input with zeros (a WGAN-GP penalty of a LeakyReLU
    critic w.r.t. its input), where ndgrad left the input out of the graph."""
    assert _piecewise_double_backward(ndgrad, name) == _piecewise_double_backward(torch, name)
