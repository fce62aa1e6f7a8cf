"""Note [Chain to one leaf] (autograd/engine.py): ``grad(loss, x)`` over a chain of op nodes
runs without the general analysis; it must give the general path's bits, PyTorch's values and
errors, and step aside for anything it does not handle."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ndgrad
from ndgrad.autograd import engine

RNG = np.random.default_rng(31)


def _general(monkeypatch):
    monkeypatch.setattr(engine, "_run_chain", lambda *a: engine._NOT_A_CHAIN)


def _spy(monkeypatch):
    used = []
    orig = engine._run_chain

    def spy(*a):
        r = orig(*a)
        used.append(r is not engine._NOT_A_CHAIN)
        return r
    monkeypatch.setattr(engine, "_run_chain", spy)
    return used


def _graphs(lib, x0, w0):
    """Chains and near-chains ending at x: x reached once, twice, through a multi-output node,
    and a graph with two op edges (general path)."""
    out = []
    for kind in ("once", "twice", "chunk", "branch"):
        x = lib.tensor(x0, requires_grad=True)
        w = lib.tensor(w0, requires_grad=True)
        h = x @ w
        if kind == "once":
            loss = h.tanh().sum()
        elif kind == "twice":
            loss = (h.tanh() * x).sum()
        elif kind == "chunk":
            loss = h.chunk(2, 0)[1].sin().sum()
        else:
            loss = (h.tanh() * h.exp()).sum()
        (g2,) = lib.autograd.grad(loss, [x], retain_graph=True)
        (g,) = lib.autograd.grad(loss, [x], create_graph=True)
        (g * g).sum().backward()
        out.append((kind, [g.detach().numpy().copy(), g2.numpy().copy(), x.grad.numpy().copy(),
                           w.grad.numpy().copy()]))
    return out


def test_chain_matches_general_path_and_torch(monkeypatch):
    x0 = RNG.standard_normal((4, 5))
    w0 = RNG.standard_normal((5, 5)) * 0.4
    used = _spy(monkeypatch)
    fast = _graphs(ndgrad, x0, w0)
    assert used == [True, True, True, True, True, True, False, False]
    _general(monkeypatch)
    slow = _graphs(ndgrad, x0, w0)
    ref = _graphs(torch, x0, w0)
    for (kind, a), (_, b), (_, c) in zip(fast, slow, ref):
        for p, q, r in zip(a, b, c):
            assert p.tobytes() == q.tobytes(), kind
            np.testing.assert_allclose(p, r, rtol=1e-10, atol=1e-12)


def test_chain_releases_saved_values_and_prunes():
    x = ndgrad.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    w = ndgrad.tensor(RNG.standard_normal((4, 2)), requires_grad=True)
    loss = (x @ w).tanh().sum()
    ndgrad.autograd.grad(loss, [x])
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        ndgrad.autograd.grad(loss, [x])
    assert w.grad is None and x.grad is None


def test_hooks_and_non_leaf_inputs_take_the_general_path(monkeypatch):
    used = _spy(monkeypatch)
    x = ndgrad.tensor(RNG.standard_normal(5), requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g) or g * 2)
    (g,) = ndgrad.autograd.grad(x.sin().sum(), [x])
    assert used == [False] and len(seen) == 1
    np.testing.assert_allclose(g.numpy(), 2 * np.cos(x.detach().numpy()))
    used.clear()
    y = ndgrad.tensor(RNG.standard_normal(5), requires_grad=True)
    h = y.sin()
    h.register_hook(lambda g: g * 3)
    (gy,) = ndgrad.autograd.grad(h.exp().sum(), [y])
    assert used == [False]
    ty = torch.tensor(y.detach().numpy(), requires_grad=True)
    th = ty.sin()
    th.register_hook(lambda g: g * 3)
    (tgy,) = torch.autograd.grad(th.exp().sum(), [ty])
    np.testing.assert_allclose(gy.numpy(), tgy.numpy(), rtol=1e-12)
    used.clear()
    (gh,) = ndgrad.autograd.grad(h.exp().sum(), [h])      # a non-leaf input (its hook runs)
    assert used == [False]
    (tgh,) = torch.autograd.grad(th.exp().sum(), [th])
    np.testing.assert_allclose(gh.numpy(), tgh.numpy(), rtol=1e-12)


def test_unreached_input_and_custom_function(monkeypatch):
    used = _spy(monkeypatch)
    x = ndgrad.tensor(RNG.standard_normal(3), requires_grad=True)
    z = ndgrad.tensor(RNG.standard_normal(3), requires_grad=True)
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        ndgrad.autograd.grad(x.sin().sum(), [z])
    assert used == [False]

    class Twice(ndgrad.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2
    used.clear()
    (g,) = ndgrad.autograd.grad(Twice.apply(x).sum(), [x])
    assert used == [False] and g.tolist() == [2.0, 2.0, 2.0]
