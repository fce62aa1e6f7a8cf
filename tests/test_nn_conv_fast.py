"""The convolution kernels' fast paths against torch (float64): col2im as one reduction
(Note [Col2im as one reduction]), the forward's columns kept for the weight gradient (Note
[Forward columns]), compact columns for few input channels (Note [Compact columns for few
input channels]), zeros written once per layout (``zeros_kept``), and the raw backward rule
computing bit for bit what the Tensor rule computes.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ndgrad
import ndgrad.nn.functional as F
from ndgrad.ops import nn_conv
from ndgrad.ops._workspace import scratch, zeros_kept

_TF = {1: TF.conv1d, 2: TF.conv2d, 3: TF.conv3d}
_NF = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}

CASES = [
    # (nd, C, O, kernel, padding, dilation, groups, spatial): O >= C takes col2im, O < C the
    # full correlation; few input rows per output channel take the compact columns
    (2, 8, 16, 3, 0, 1, 1, (9, 8)),
    (2, 3, 4, 3, 1, 1, 1, (6, 7)),
    (2, 4, 8, (2, 3), (1, 2), (2, 1), 2, (7, 6)),
    (2, 1, 8, 3, 0, 1, 1, (7, 6)),          # compact columns
    (2, 6, 2, 3, 1, 1, 1, (5, 6)),          # O < C: full correlation
    (1, 2, 6, 4, 2, 2, 1, (11,)),
    (1, 4, 4, 3, 0, 1, 4, (9,)),            # depthwise
    (3, 2, 4, (2, 3, 2), (1, 0, 1), 1, 1, (4, 5, 3)),
    (3, 1, 4, 2, 0, 1, 1, (3, 4, 3)),       # compact columns, 3-d
]
STRIDED = [(2, 4, 8, 3, 1, 1, 1, (9, 8)), (1, 3, 2, 3, 2, 1, 1, (10,))]   # general col2im


def _case(nd, c, o, k, pad, dil, groups, size, seed=0):
    k = (k,) * nd if isinstance(k, int) else k
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, c) + size)
    w = rng.standard_normal((o, c // groups) + k)
    return x, w, dict(padding=pad, dilation=dil, groups=groups)


def _torch_grads(x, w, kw, nd, gy):
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    y = _TF[nd](tx, tw, **kw)
    y.backward(torch.tensor(gy))
    return y.detach().numpy(), tx.grad.numpy(), tw.grad.numpy()


@pytest.mark.parametrize("case", CASES + [c + ("strided",) for c in STRIDED])
def test_kernels_match_torch_and_raw_rule_matches_tensor_rule(case):
    nd = case[0]
    x, w, kw = _case(*case[:8])
    if len(case) > 8:
        kw["stride"] = 2
    shape = tuple(_TF[nd](torch.tensor(x), torch.tensor(w), **kw).shape)
    gy = np.random.default_rng(1).standard_normal(shape)
    ty, tgx, tgw = _torch_grads(x, w, kw, nd, gy)
    nx = ndgrad.tensor(x, requires_grad=True)
    nw = ndgrad.tensor(w, requires_grad=True)
    y = _NF[nd](nx, nw, **kw)
    np.testing.assert_allclose(y.detach().numpy(), ty, rtol=1e-12, atol=1e-12)
    # a plain backward runs the raw rule; create_graph runs the Tensor rule
    raw = ndgrad.autograd.grad(y, [nx, nw], ndgrad.tensor(gy), retain_graph=True)
    ten = ndgrad.autograd.grad(y, [nx, nw], ndgrad.tensor(gy), create_graph=True)
    for r, t, ref in zip(raw, ten, (tgx, tgw)):
        np.testing.assert_allclose(r.numpy(), ref, rtol=1e-11, atol=1e-11)
        np.testing.assert_array_equal(r.numpy(), t.detach().numpy())
        assert r.is_contiguous()


def test_float32_step_matches_torch():
    """The shared bench's cnn step (conv-relu-conv-relu-mean, kernels' gradients) in float32."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 1, 12, 12)).astype(np.float32)
    k1 = (rng.standard_normal((8, 1, 3, 3)) / 3).astype(np.float32)
    k2 = (rng.standard_normal((16, 8, 3, 3)) / 8.5).astype(np.float32)
    out = []
    for lib, f in ((torch, TF), (ndgrad, F)):
        a, b = lib.tensor(k1, requires_grad=True), lib.tensor(k2, requires_grad=True)
        h = lib.relu(f.conv2d(lib.tensor(x), a))
        lib.relu(f.conv2d(h, b)).mean().backward()
        out.append((a.grad.numpy(), b.grad.numpy()))
    for n, t in zip(out[1], out[0]):
        np.testing.assert_allclose(n, t, rtol=2e-5, atol=1e-7)


def test_col2im_nonfinite_weight_matches_torch():
    """The wide grid's extra positions hold 0 * w: an inf weight takes the exact col2im, so
    the input gradient has torch's inf/NaN pattern."""
    x, w, kw = _case(2, 2, 4, 3, 1, 1, 1, (5, 6), seed=2)
    w[1, 0, 2, 1] = np.inf
    gy = np.ones((2, 4, 5, 6))
    _, tgx, _ = _torch_grads(x, w, kw, 2, gy)
    nx = ndgrad.tensor(x, requires_grad=True)
    F.conv2d(nx, ndgrad.tensor(w), **kw).backward(ndgrad.tensor(gy))
    np.testing.assert_array_equal(np.isnan(nx.grad.numpy()), np.isnan(tgx))
    np.testing.assert_allclose(nx.grad.numpy(), tgx, rtol=1e-12, atol=1e-12)


def test_forward_columns_are_used_once_and_freed():
    x = ndgrad.randn(2, 3, 8, 8, dtype=ndgrad.float64)
    w = ndgrad.randn(16, 3, 3, 3, dtype=ndgrad.float64, requires_grad=True)
    taken = []
    orig = nn_conv._take

    def spy(a, key):
        r = orig(a, key)
        taken.append(r is not None)
        return r
    nn_conv._take = spy
    try:
        y = F.conv2d(x, w)
        assert len(nn_conv._kept) == 1
        cols = weakref.ref(next(iter(nn_conv._kept.values()))[2][0])
        (gw,) = ndgrad.autograd.grad(y.sum(), [w], retain_graph=True)
        assert taken == [True] and not nn_conv._kept and cols() is None
        (gw2,) = ndgrad.autograd.grad(y.sum(), [w])     # recomputed: same bits
        assert taken == [True, False]
        np.testing.assert_array_equal(gw.numpy(), gw2.numpy())
    finally:
        nn_conv._take = orig
    # a graph dropped without a backward frees its columns (no collection needed)
    gc.disable()
    try:
        y = F.conv2d(x, w)
        cols = weakref.ref(next(iter(nn_conv._kept.values()))[2][0])
        del y
        assert not nn_conv._kept and cols() is None
    finally:
        gc.enable()
    # nothing kept when no weight gradient will be recorded
    with ndgrad.no_grad():
        F.conv2d(x, w)
    F.conv2d(x, w.detach())
    xr = x.clone().requires_grad_()
    F.conv2d(xr, w.detach()).sum().backward()
    assert not nn_conv._kept


def test_forward_columns_inplace_change_raises_and_many_convs_stay_correct():
    x = ndgrad.randn(2, 3, 7, 7, dtype=ndgrad.float64, requires_grad=True)
    w = ndgrad.randn(4, 3, 3, 3, dtype=ndgrad.float64, requires_grad=True)
    h = x * 1
    y = F.conv2d(h, w)
    with ndgrad.no_grad():
        h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    del y   # its graph holds the columns (and its saved input) until it goes
    # more convolutions than kept entries, same input with different parameters
    rng = np.random.default_rng(7)
    xs = rng.standard_normal((2, 3, 7, 7))
    ws = [rng.standard_normal((4, 3, 3, 3)) for _ in range(nn_conv._KEPT_MAX + 3)]
    outs = []
    for lib, f in ((torch, TF), (ndgrad, F)):
        xt = lib.tensor(xs)
        wt = [lib.tensor(a, requires_grad=True) for a in ws]
        tot = sum((f.conv2d(xt, a, padding=i % 3, stride=1 + i % 2) ** 2).sum()
                  for i, a in enumerate(wt))
        tot.backward()
        outs.append([a.grad.numpy() for a in wt])
    for n, t in zip(outs[1], outs[0]):
        np.testing.assert_allclose(n, t, rtol=1e-11, atol=1e-11)
    assert not nn_conv._kept


def test_zeros_kept_layouts_alternate():
    """Backward passes alternating between shapes reuse the same scratch slots: the zeros
    written for one layout must be rewritten after another layout used the slot."""
    shapes = [((2, 4, 9, 8), 3, 0), ((2, 4, 6, 11), 3, 1), ((2, 4, 9, 8), 3, 0),
              ((1, 4, 5, 5), 2, 1), ((2, 4, 9, 8), 3, 0)]
    rng = np.random.default_rng(8)
    w = rng.standard_normal((8, 4, 3, 3))
    for s, k, p in shapes:
        x = rng.standard_normal(s)
        wk = w[..., :k, :k].copy()
        gy_shape = TF.conv2d(torch.tensor(x), torch.tensor(wk), padding=p).shape
        gy = rng.standard_normal(tuple(gy_shape))
        _, tgx, tgw = _torch_grads(x, wk, {"padding": p}, 2, gy)
        nx, nw = ndgrad.tensor(x, requires_grad=True), ndgrad.tensor(wk, requires_grad=True)
        F.conv2d(nx, nw, padding=p).backward(ndgrad.tensor(gy))
        np.testing.assert_allclose(nx.grad.numpy(), tgx, rtol=1e-11, atol=1e-11)
        np.testing.assert_allclose(nw.grad.numpy(), tgw, rtol=1e-11, atol=1e-11)


def test_zeros_kept_reports_reuse_per_layout():
    a = scratch("test_zk", (3, 4), np.float64)
    assert not zeros_kept("test_zk", a, ("L", 1))
    assert zeros_kept("test_zk", scratch("test_zk", (3, 4), np.float64), ("L", 1))
    assert not zeros_kept("test_zk", scratch("test_zk", (3, 4), np.float64), ("L", 2))
    assert not zeros_kept("test_zk", np.zeros((3, 4)), ("L", 2))   # not the slot's memory


def test_raw_rule_with_bias_matches_tensor_rule_and_torch():
    x, w, kw = _case(2, 3, 6, 3, 1, 1, 1, (5, 6), seed=9)
    b = np.random.default_rng(9).standard_normal(6)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    (TF.conv2d(tx, tw, tb, **kw) ** 2).sum().backward()
    nx, nw, nb = (ndgrad.tensor(a, requires_grad=True) for a in (x, w, b))
    y = (F.conv2d(nx, nw, nb, **kw) ** 2).sum()
    raw = ndgrad.autograd.grad(y, [nx, nw, nb], retain_graph=True)
    ten = ndgrad.autograd.grad(y, [nx, nw, nb], create_graph=True)
    for r, t, ref in zip(raw, ten, (tx.grad, tw.grad, tb.grad)):
        np.testing.assert_allclose(r.numpy(), ref.numpy(), rtol=1e-11, atol=1e-11)
        np.testing.assert_array_equal(r.numpy(), t.detach().numpy())


def test_checked_signatures_still_reject_bad_calls():
    x = ndgrad.randn(1, 3, 6, 6)
    w = ndgrad.randn(4, 3, 3, 3)
    F.conv2d(x, w)                                   # this signature passes and is remembered
    F.conv2d(x, w)
    with pytest.raises(RuntimeError, match="expected input"):
        F.conv2d(ndgrad.randn(1, 2, 6, 6), w)
    with pytest.raises(RuntimeError, match="expected scalar type"):
        F.conv2d(x, w.double())
    with pytest.raises(RuntimeError, match="expected bias"):
        F.conv2d(x, w, ndgrad.randn(3))
    with pytest.raises(RuntimeError, match="Kernel size can't be greater"):
        F.conv2d(x[..., :2, :2], w)


def test_a_kernel_without_margins_between_two_with_margins_keeps_input_gradients_exact():
    # a 1x1 convolution writes the whole col2im buffer, margins included: the next 3x3 call
    # on the same buffer shape must zero its margins again (ResNet bottlenecks mix them)
    rng = np.random.default_rng(3)
    xa, wa = rng.standard_normal((2, 3, 6, 6)), rng.standard_normal((8, 3, 3, 3))
    xb, wb = rng.standard_normal((2, 3, 7, 7)), rng.standard_normal((32, 3, 1, 1))
    for xs, ws, pad in [(xa, wa, 1), (xb, wb, 0), (xa, wa, 1), (xb, wb, 0), (xa, wa, 1)]:
        grads = []
        for lib, conv in ((ndgrad, F.conv2d), (torch, TF.conv2d)):
            x = lib.tensor(xs, requires_grad=True)
            w = lib.tensor(ws, requires_grad=True)
            y = conv(x, w, padding=pad)
            y.backward(lib.ones_like(y))
            grads.append(x.grad.numpy())
        np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("write", ["data", "data_view", "data_no_grad"])
def test_forward_columns_follow_writes_the_version_check_does_not_see(write):
    # Note [Forward columns]: a write through .data (no version bump, in torch too)
    # drops the kept columns; the weight gradient reads the input as it is at backward
    rng = np.random.default_rng(5)
    xs = rng.standard_normal((2, 4, 7, 7))
    ws = rng.standard_normal((3, 4, 3, 3))
    grads = []
    for lib, conv in ((ndgrad, F.conv2d), (torch, TF.conv2d)):
        x = lib.tensor(xs)
        w = lib.tensor(ws, requires_grad=True)
        y = conv(x, w, padding=1)
        if write == "data":
            x.data.mul_(0.5)
        elif write == "data_view":
            x.data[:, 1:3].zero_()
        else:
            with lib.no_grad():
                x.data.mul_(-1.0)
        (y * y).sum().backward()
        grads.append(w.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-12)
    assert not nn_conv._kept
    from ndgrad import _write_watch
    assert _write_watch.watch is None
