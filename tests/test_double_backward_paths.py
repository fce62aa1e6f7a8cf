"""The short paths a gradient penalty takes (issue 12's double_backward workload): multiplying
by a sum's broadcast 1.0 seed skipped (Note [Multiplying by a broadcast one] in
ops/pointwise.py), buffer sums in place (Note [Buffer sums in place] in autograd/engine.py),
the lean ``grad()`` entry (autograd/api.py). Each must give the bits of the general path and
PyTorch's values, and step aside whenever someone else could see the arrays involved."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ndgrad
from ndgrad.autograd import engine
from ndgrad.ops import pointwise

RNG = np.random.default_rng(12)


def _penalty(lib, x0, w0):
    """A gradient penalty: g = d/dx sum(tanh(x @ W)); (g * g).sum().backward()."""
    x = lib.tensor(x0, requires_grad=True)
    w = lib.tensor(w0, requires_grad=True)
    (g,) = lib.autograd.grad(lib.tanh(x @ w).sum(), [x], create_graph=True)
    (g * g).sum().backward()
    sq = lib.tensor(x0, requires_grad=True)
    (sq * sq).sum().backward()
    return [g.detach().numpy().copy(), w.grad.numpy().copy(), x.grad.numpy().copy(),
            sq.grad.numpy().copy()]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_broadcast_one_skip_keeps_bits_and_matches_torch(dtype, monkeypatch):
    x0 = RNG.standard_normal((24, 48)).astype(dtype)     # 1152 elements: above _ONE_MIN_SIZE
    w0 = (RNG.standard_normal((48, 48)) * 0.2).astype(dtype)
    hits = []
    seen = pointwise._is_broadcast_one

    def spy(g):
        r = seen(g)
        hits.append(r)
        return r
    monkeypatch.setattr(pointwise, "_is_broadcast_one", spy)
    fast = _penalty(ndgrad, x0, w0)
    # tanh's create_graph backward, its double backward, g * g and sq * sq
    assert hits.count(True) == 4
    monkeypatch.setattr(pointwise, "_ONE_MIN_SIZE", 10 ** 9)
    hits.clear()
    slow = _penalty(ndgrad, x0, w0)
    assert not any(hits)
    for a, b in zip(fast, slow):
        assert a.dtype == b.dtype == dtype and a.tobytes() == b.tobytes()
    ref = _penalty(torch, x0, w0)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    for a, b in zip(fast, ref):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_broadcast_one_is_only_an_exact_one():
    one = np.broadcast_to(np.array(1.0), (40, 40))
    assert pointwise._is_broadcast_one(one)
    assert not pointwise._is_broadcast_one(np.broadcast_to(np.array(2.0), (40, 40)))
    assert not pointwise._is_broadcast_one(np.ones((40, 40)))          # not a broadcast
    assert not pointwise._is_broadcast_one(np.broadcast_to(np.array(1.0), (4, 4)))  # small
    assert not pointwise._is_broadcast_one(np.broadcast_to(np.array(1, np.int64), (40, 40)))
    # a sum's seed scaled by the user (loss * 3) is no one: the product is computed
    x = ndgrad.tensor(RNG.standard_normal((40, 40)), requires_grad=True)
    (ndgrad.tanh(x).sum() * 3.0).backward()
    xt = torch.tensor(x.detach().numpy(), requires_grad=True)
    (torch.tanh(xt).sum() * 3.0).backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)


def _count_in_place(monkeypatch):
    calls = []
    add = engine._np_add

    def spy(*a, **k):
        calls.append(1)
        return add(*a, **k)
    monkeypatch.setattr(engine, "_np_add", spy)
    return calls


def test_buffer_sum_in_place_values(monkeypatch):
    calls = _count_in_place(monkeypatch)
    x0 = RNG.standard_normal((6, 5))
    x = ndgrad.tensor(x0, requires_grad=True)
    ((x * 2.0) + (x * 3.0).sin()).sum().backward()
    assert calls == [1]
    xt = torch.tensor(x0, requires_grad=True)
    ((xt * 2.0) + (xt * 3.0).sin()).sum().backward()
    assert x.grad.numpy().tobytes() == xt.grad.numpy().tobytes()
    # a gradient penalty: W's two gradients (x @ W and the inner gradient's W.t())
    calls.clear()
    x0, w0 = RNG.standard_normal((8, 6)), RNG.standard_normal((6, 6))
    got = _penalty(ndgrad, x0, w0)
    assert calls
    for a, b in zip(got, _penalty(torch, x0, w0)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_buffer_sum_leaves_held_gradients_alone(monkeypatch):
    calls = _count_in_place(monkeypatch)
    x = ndgrad.tensor(RNG.standard_normal((4, 3)), requires_grad=True)
    b = x * 3.0
    a = x * 2.0             # made last, so its node runs first: its gradient is the buffer's
    kept = []
    a.grad_fn.register_hook(lambda gi, go: kept.append(gi[0]))     # holds the first gradient
    (a + b).sum().backward()
    assert not calls
    assert kept[0].tolist() == [[2.0] * 3] * 4
    assert x.grad.tolist() == [[5.0] * 3] * 4
    # a tensor hook that keeps the gradient it sees
    y = ndgrad.tensor(RNG.standard_normal(3), requires_grad=True)
    seen = []
    y.register_hook(lambda g: seen.append(g))
    (y * 2.0 + y * 3.0).sum().backward()
    assert y.grad.tolist() == [5.0] * 3 and seen[0].tolist() == [5.0] * 3
    # the same Tensor on two edges (add passes its gradient through to both)
    z = ndgrad.tensor(RNG.standard_normal(3), requires_grad=True)
    (z.sin() + z.sin()).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), 2 * np.cos(z.detach().numpy()), rtol=1e-15)


def test_buffer_sum_under_create_graph_is_recorded(monkeypatch):
    calls = _count_in_place(monkeypatch)
    x = ndgrad.tensor(RNG.standard_normal(5), requires_grad=True)
    (g,) = ndgrad.autograd.grad((x * x.sin()).sum(), x, create_graph=True)
    assert not calls and g.grad_fn is not None
    (h,) = ndgrad.autograd.grad(g.sum(), x)
    xt = torch.tensor(x.detach().numpy(), requires_grad=True)
    (gt,) = torch.autograd.grad((xt * xt.sin()).sum(), xt, create_graph=True)
    (ht,) = torch.autograd.grad(gt.sum(), xt)
    np.testing.assert_allclose(h.numpy(), ht.numpy(), rtol=1e-12)


def test_lean_grad_entry_keeps_the_checks():
    x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    u = ndgrad.tensor([3.0], requires_grad=True)
    loss = (x * x).sum()
    for inputs in (x, [x], (x,)):
        (g,) = ndgrad.autograd.grad(loss, inputs, retain_graph=True)
        assert g.tolist() == [2.0, 4.0]
    with pytest.raises(RuntimeError, match="index 1 appears to not have been used"):
        ndgrad.autograd.grad(loss, [x, u], retain_graph=True)
    g, none = ndgrad.autograd.grad(loss, [x, u], retain_graph=True, allow_unused=True)
    assert none is None and g.tolist() == [2.0, 4.0]
    with pytest.raises(RuntimeError, match="does not require grad"):
        ndgrad.autograd.grad(loss, [ndgrad.tensor([1.0])], retain_graph=True)
    with pytest.raises(RuntimeError, match="cannot be empty"):
        ndgrad.autograd.grad(loss, [], retain_graph=True)
    ndgrad.autograd.grad(loss, x)                  # retain_graph defaults to create_graph
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        ndgrad.autograd.grad(loss, x)


def test_lean_grad_entry_of_a_leaf_loss():
    x = ndgrad.tensor(2.0, requires_grad=True)     # the loss is the leaf itself
    assert ndgrad.autograd.grad(x, x)[0].item() == 1.0
    assert ndgrad.autograd.grad(x, [x])[0].item() == 1.0
