"""Note [Reusing tanh's 1 - y*y] (ops/pointwise.py): a gradient penalty's backward through
tanh multiplies by the ``1 - y*y`` its create_graph backward made, with the bits of computing
it again, and computes it again whenever that array may have changed."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ndgrad
from ndgrad.ops import pointwise

RNG = np.random.default_rng(24)


def _penalty(lib, x0, w0, between=None):
    x = lib.tensor(x0, requires_grad=True)
    w = lib.tensor(w0, requires_grad=True)
    y = lib.tanh(x @ w)
    (g,) = lib.autograd.grad(y.sum(), [x], create_graph=True)
    if between is not None:
        between(y, g)
    (g * g).sum().backward()
    return y, [g.detach().numpy().copy(), w.grad.numpy().copy(), x.grad.numpy().copy()]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(4, 6), (40, 48)])   # below and above _ONE_MIN_SIZE
def test_reused_one_minus_square_keeps_bits(dtype, shape, monkeypatch):
    x0 = RNG.standard_normal(shape).astype(dtype)
    w0 = (RNG.standard_normal((shape[1], shape[1])) * 0.2).astype(dtype)
    used = []
    cached = pointwise._tanh_cached
    monkeypatch.setattr(pointwise, "_tanh_cached",
                        lambda ctx, r: used.append(1) or cached(ctx, r))
    y, fast = _penalty(ndgrad, x0, w0)
    assert used == [1] and y.grad_fn._one_minus_sq is None      # used once, then let go
    # the rule without the reuse: the same bits
    monkeypatch.setattr(pointwise.TANH, "vjp",
                        lambda ctx, g: pointwise.tanh_backward(g, ctx.saved[0]))
    used.clear()
    _, slow = _penalty(ndgrad, x0, w0)
    assert used == []
    for a, b in zip(fast, slow):
        assert a.dtype == b.dtype == dtype and a.tobytes() == b.tobytes()
    _, ref = _penalty(torch, x0, w0)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    for a, b in zip(fast, ref):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_in_place_change_of_the_array_raises_as_torch():
    # ``1 - y*y`` is the create_graph graph's own tensor (mm's saved ``self``): changed in
    # place, the backward raises PyTorch's error before tanh's node could use it
    x0 = RNG.standard_normal((8, 5))
    w0 = RNG.standard_normal((5, 5)) * 0.3

    def bump(y, g):
        g.grad_fn._saved_self.mul_(2.0)
    for lib in (ndgrad, torch):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            _penalty(lib, x0, w0, bump)


def test_a_version_bump_computes_again(monkeypatch):
    # the kept array's version moved (a write through its tensor or a view of it): not used
    x0 = RNG.standard_normal((8, 5))
    w0 = RNG.standard_normal((5, 5)) * 0.3
    _, ref = _penalty(ndgrad, x0, w0)
    seen = []
    fwd = pointwise._tanh_backward_fwd
    monkeypatch.setattr(pointwise, "_tanh_backward_fwd",
                        lambda g, r: seen.append(1) or fwd(g, r))

    def bump(y, g):
        # as if the array had been written since (its tensor's counter past the kept version)
        arr, vc, v = y.grad_fn._one_minus_sq
        y.grad_fn._one_minus_sq = (arr, vc, v - 1)
        seen.clear()
    _, got = _penalty(ndgrad, x0, w0, bump)
    assert seen == [1]          # the raw rule computed 1 - y*y again
    for a, b in zip(got, ref):
        assert a.tobytes() == b.tobytes()


def test_not_a_broadcast_one_is_not_kept():
    # tanh's create_graph backward with a real gradient leaves nothing on the node
    x = ndgrad.tensor(RNG.standard_normal(6), requires_grad=True)
    y = x.tanh()
    (g,) = ndgrad.autograd.grad(y, [x], ndgrad.tensor(RNG.standard_normal(6)),
                                create_graph=True)
    assert y.grad_fn._one_minus_sq is None
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    assert g.shape == tx.shape
