"""relu's forward written into a temporary product (Note [relu in place on a temporary] in
ndgrad/ops/pointwise.py): used only when nothing else can see the product's array, and then
the same values, nodes and gradients as a new array."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ndgrad
import ndgrad.nn.functional as F
from ndgrad.autograd.graph import saved_tensors_hooks
from ndgrad.ops import pointwise

RNG = np.random.default_rng(5)
N = 256        # 256 x 256 = 65536 elements: the smallest size written in place


def _data(dtype=np.float32):
    x = RNG.standard_normal((N, 64)).astype(dtype)
    w = RNG.standard_normal((64, N)).astype(dtype)
    return x, w


@pytest.fixture
def into_calls(monkeypatch):
    calls = []
    fwd = pointwise.RELU_INTO.forward

    def spy(a):
        calls.append(a)
        return fwd(a)
    monkeypatch.setattr(pointwise.RELU_INTO, "forward", spy)
    return calls


def _reference(x, w, g):
    xt = torch.tensor(x)
    wt = torch.tensor(w, requires_grad=True)
    h = torch.relu(xt @ wt)
    h.backward(torch.tensor(g))
    return h.detach().numpy(), wt.grad.numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("form", ["function", "method"])
def test_temporary_product_is_written_in_place(form, dtype, into_calls):
    x, w = _data(dtype)
    g = RNG.standard_normal((N, N)).astype(dtype)
    xn, wn = ndgrad.tensor(x), ndgrad.tensor(w, requires_grad=True)
    h = ndgrad.relu(xn @ wn) if form == "function" else (xn @ wn).relu()
    assert len(into_calls) == 1 and np.shares_memory(h._data, into_calls[0])
    assert type(h.grad_fn).__name__ == "ReluBackward0"
    assert h.grad_fn._saved_result is not None
    h.backward(ndgrad.tensor(g))
    want_h, want_gw = _reference(x, w, g)
    np.testing.assert_allclose(h.detach().numpy(), want_h, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(wn.grad.numpy(), want_gw, rtol=1e-4, atol=1e-4)
    # bit for bit what a new array gives
    y = xn @ wn
    np.testing.assert_array_equal(h.detach().numpy(), ndgrad.relu(y).detach().numpy())


def test_product_a_caller_can_see_is_not_written(into_calls):
    x, w = _data()
    xn, wn = ndgrad.tensor(x), ndgrad.tensor(w, requires_grad=True)
    y = xn @ wn
    before = y.detach().numpy().copy()
    h = ndgrad.relu(y)                                   # held by the caller
    np.testing.assert_array_equal(y.detach().numpy(), before)
    assert not np.shares_memory(h._data, y._data)
    views = [xn @ wn]
    ndgrad.relu(views[0])                                # held by a list
    keep = xn @ wn
    ndgrad.relu(keep.view(N, N))                         # a view of it
    data = (xn @ wn).detach()
    ndgrad.relu(data)                                    # no grad_fn, held by the caller
    ndgrad.relu(ndgrad.tensor(x @ w))                    # a leaf wrapping a temporary: fine
    assert len(into_calls) == 1
    leaf = ndgrad.relu(ndgrad.tensor(x @ w, requires_grad=True))  # a leaf requiring grad
    assert len(into_calls) == 1 and leaf.requires_grad
    small = ndgrad.relu(xn[:8] @ wn)                     # below the size threshold
    assert len(into_calls) == 1 and small.shape == (8, N)


def test_hooks_retain_grad_and_saved_tensor_hooks_see_the_right_values(into_calls):
    x, w = _data()
    g = RNG.standard_normal((N, N)).astype(np.float32)
    want_h, want_gw = _reference(x, w, g)
    xn, wn = ndgrad.tensor(x), ndgrad.tensor(w, requires_grad=True)
    product = (xn @ wn).detach().numpy().copy()
    seen = []

    def with_hook(t):
        # the hook's closure keeps the product: it is not written
        t.register_hook(lambda grad: seen.append((grad.numpy().copy(), t.detach().numpy())))
        return t
    h = ndgrad.relu(with_hook(xn @ wn))
    assert not into_calls
    h.backward(ndgrad.tensor(g))
    np.testing.assert_array_equal(seen[0][1], product)
    np.testing.assert_array_equal(seen[0][0], np.where(want_h > 0, g, 0))

    def retained(t):
        t.retain_grad()
        seen.append(t)
        return t
    h = ndgrad.relu(retained(xn @ wn))
    assert not into_calls
    h.backward(ndgrad.tensor(g))
    np.testing.assert_array_equal(seen[-1].detach().numpy(), product)
    np.testing.assert_array_equal(seen[-1].grad.numpy(), np.where(want_h > 0, g, 0))
    # saved tensor hooks: relu saves its result, which the pack hook sees as relu's values
    packed = []
    wn.grad = None
    with saved_tensors_hooks(lambda t: packed.append(t.detach().numpy().copy()) or t,
                             lambda t: t):
        h = ndgrad.relu(xn @ wn)
    assert len(into_calls) == 1
    np.testing.assert_array_equal(packed[-1], h.detach().numpy())
    np.testing.assert_allclose(packed[-1], want_h, rtol=1e-4, atol=1e-4)
    h.backward(ndgrad.tensor(g))
    np.testing.assert_allclose(wn.grad.numpy(), want_gw, rtol=1e-4, atol=1e-4)


def test_retain_graph_and_create_graph_through_an_in_place_relu(into_calls):
    x, w = _data(np.float64)
    xn, wn = ndgrad.tensor(x), ndgrad.tensor(w, requires_grad=True)
    h = ndgrad.relu(xn @ wn)
    assert len(into_calls) == 1
    loss = (h * h).sum()
    (g1,) = ndgrad.autograd.grad(loss, [wn], retain_graph=True)
    (g2,) = ndgrad.autograd.grad(loss, [wn], create_graph=True)
    np.testing.assert_array_equal(g1.numpy(), g2.detach().numpy())
    (gg,) = ndgrad.autograd.grad(g2.sum(), [wn])
    xt, wt = torch.tensor(x), torch.tensor(w, requires_grad=True)
    ht = torch.relu(xt @ wt)
    (t2,) = torch.autograd.grad((ht * ht).sum(), [wt], create_graph=True)
    (tgg,) = torch.autograd.grad(t2.sum(), [wt])
    np.testing.assert_allclose(g1.numpy(), t2.detach().numpy(), rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(gg.numpy(), tgg.numpy(), rtol=1e-10, atol=1e-9)


def test_internal_callers_and_functional_relu_never_write(into_calls):
    # the unchecked relu called from library code whose caller keeps the operand in a local,
    # and F.relu (another call chain): a new array
    x, w = _data()
    xn, wn = ndgrad.tensor(x), ndgrad.tensor(w, requires_grad=True)

    def composite(a):
        y = a @ wn
        r = pointwise.relu(y)
        return r, y
    r, y = composite(xn)
    assert not np.shares_memory(r._data, y._data)
    np.testing.assert_array_equal(y.detach().numpy(), (xn @ wn).detach().numpy())
    F.relu(xn @ wn)
    assert not into_calls


def test_compiled_and_vmapped_relu_use_the_table_op(into_calls):
    x, w = _data()
    xn, wn = ndgrad.tensor(x), ndgrad.tensor(w)
    f = ndgrad.compile(lambda a, b: ndgrad.relu(a @ b))
    # (a compiled product of this size runs on one BLAS thread: other last bits than eager's)
    np.testing.assert_allclose(f(xn, wn).numpy(), np.maximum(x @ w, 0), rtol=1e-5, atol=1e-5)
    out = ndgrad.func.vmap(lambda a: ndgrad.relu(a @ wn))(ndgrad.tensor(x[None].repeat(2, 0)))
    assert out.shape == (2, N, N)
    assert not into_calls
