"""``cond``/``while_loop``/``fork``/``wait`` (ndgrad/_control_flow.py) and the sparse-times-dense
spellings and ``sparse.softmax``/``log_softmax`` (ndgrad/_compat_sparse.py), against torch."""

import numpy as np
import pytest
import torch

import ndgrad

from _compare import outcome


def test_cond_values_and_gradients():
    # torch.cond compiles its branches even in eager mode (seconds per call): the reference
    # here is torch running the branch directly, which is what torch.cond returns
    for pred in (True, False):
        res = []
        for m in (torch, ndgrad):
            x = m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)
            branches = (lambda v: (v * v).sum(), lambda v: v.sin().sum())
            if m is torch:
                out = branches[0 if pred else 1](x)
            else:
                out = m.cond(m.tensor(pred), branches[0], branches[1], (x,))
            out.backward()
            res.append((out.item(), x.grad.tolist()))
        assert res[0] == res[1]
    assert ndgrad.cond(0, lambda: ndgrad.ones(1), lambda: ndgrad.zeros(1)).tolist() == [0.0]


@pytest.mark.parametrize("fn", [
    lambda m: m.cond(m.tensor([True, False]), lambda x: x, lambda x: x, (m.ones(1),)),
    lambda m: m.cond("yes", lambda x: x, lambda x: x, (m.ones(1),)),
    lambda m: m.while_loop(1, lambda i: (i + 1,), (m.tensor(0),)),
])
def test_control_flow_matches_torch(fn):
    t, n = outcome(lambda: fn(torch)), outcome(lambda: fn(ndgrad))
    assert t[0] == n[0], (t, n)
    if t[0] == "ok":
        tv = t[1] if isinstance(t[1], tuple) else (t[1],)
        nv = n[1] if isinstance(n[1], tuple) else (n[1],)
        assert [getattr(v, "tolist", lambda v=v: v)() for v in tv] == \
            [getattr(v, "tolist", lambda v=v: v)() for v in nv]
    else:
        assert t[1].split(",")[0] == n[1].split(",")[0]


def test_while_loop_results_as_torch():
    # torch.while_loop compiles its functions (about a second a call): its results for these
    # calls, recorded from torch 2.13, are (tensor(3),), (tensor(3), tensor([8., 8.])), (3,)
    # and (tensor(0),)
    w = ndgrad.while_loop
    assert [v.tolist() for v in w(lambda i: i < 3, lambda i: (i + 1,), (ndgrad.tensor(0),))] \
        == [3]
    out = w(lambda i, x: i < 3, lambda i, x: (i + 1, x * 2), [ndgrad.tensor(0), ndgrad.ones(2)])
    assert [v.tolist() for v in out] == [3, [8.0, 8.0]]
    assert w(lambda i: i < 3, lambda i: (i + 1,), (0,)) == (3,)
    assert [v.tolist() for v in w(lambda i: i > 3, lambda i: (i + 1,), (ndgrad.tensor(0),))] \
        == [0]


def test_while_loop_checks_body_and_predicate():
    with pytest.raises(AssertionError, match="body_fn should return a tuple"):
        ndgrad.while_loop(lambda i: i < 3, lambda i: i + 1, (ndgrad.tensor(0),))
    with pytest.raises(AssertionError, match="same number of elements"):
        ndgrad.while_loop(lambda i: i < 3, lambda i: (i + 1, i), (ndgrad.tensor(0),))
    with pytest.raises(RuntimeError, match="boolean scalar tensor or a boolean"):
        ndgrad.while_loop(lambda i: ndgrad.tensor([True, True]), lambda i: (i + 1,),
                          (ndgrad.tensor(0),))
    with pytest.raises(RuntimeError, match="tuple or list"):
        ndgrad.while_loop(lambda i: i < 3, lambda i: (i + 1,), ndgrad.tensor(0))


def test_while_loop_gradient():
    x = ndgrad.tensor(1.5, dtype=ndgrad.float64, requires_grad=True)
    _, y = ndgrad.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * x),
                             (ndgrad.tensor(0), x))
    y.backward()
    assert abs(x.grad.item() - 4 * 1.5 ** 3) < 1e-12


def test_fork_wait_futures():
    for m in (torch, ndgrad):
        fut = m.fork(lambda a, b=1: a + b, m.ones(1), b=2)
        assert fut.done() and m.wait(fut).tolist() == [3.0] and fut.value().tolist() == [3.0]
        chained = fut.then(lambda f: f.wait() * 2)
        assert chained.wait().tolist() == [6.0]

    def boom():
        raise ValueError("boom")
    for m in (torch, ndgrad):
        with pytest.raises(ValueError, match="boom"):
            m.fork(boom)
        with pytest.raises(TypeError, match="incompatible function arguments"):
            m.wait(3)


A = np.array([[0.0, 2.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 3.0]])
D = np.arange(6.0).reshape(3, 2)


@pytest.mark.parametrize("name", ["spmm", "dsmm", "smm", "hspmm"])
def test_sparse_products_match_torch(name):
    res = []
    for m in (torch, ndgrad):
        # torch has no derivative for smm/hspmm: their gradients are checked on ndgrad only
        grads = name in ("spmm", "dsmm")
        s = m.tensor(A).to_sparse().requires_grad_(grads)
        d = m.tensor(D, requires_grad=grads)
        out = getattr(m, name)(s, d)
        dense = out.to_dense() if out.is_sparse else out
        entry = [dense.tolist(), out.is_sparse, out.is_sparse and out.sparse_dim()]
        if grads:
            (dense * dense).sum().backward()
            entry += [s.grad.to_dense().tolist(), d.grad.tolist()]
        res.append(entry)
    assert res[0] == res[1]


def test_smm_hspmm_gradients_match_sparse_mm():
    for name in ("smm", "hspmm"):
        grads = []
        for fn in (ndgrad.sparse.mm, getattr(ndgrad, name)):
            s = ndgrad.tensor(A).to_sparse().requires_grad_()
            d = ndgrad.tensor(D, requires_grad=True)
            out = fn(s, d)
            dense = out.to_dense() if out.is_sparse else out
            (dense * dense).sum().backward()
            grads.append((s.grad.to_dense().tolist(), d.grad.tolist()))
        assert grads[0] == grads[1]


def test_sspaddmm_saddmm_and_errors():
    for name in ("sspaddmm", "saddmm"):
        res = []
        for m in (torch, ndgrad):
            s = m.tensor(A).to_sparse()
            out = getattr(m, name)(s, s, m.ones(3, 3, dtype=m.float64), beta=2, alpha=0.5)
            res.append((out.is_sparse, out.to_dense().tolist()))
        assert res[0] == res[1]
    t = outcome(lambda: torch.smm(torch.ones(2, 2), torch.ones(2, 2)))
    n = outcome(lambda: ndgrad.smm(ndgrad.ones(2, 2), ndgrad.ones(2, 2)))
    assert t == n
    assert ndgrad.spmm(ndgrad.ones(2, 2), ndgrad.ones(2, 2)).tolist() == [[2.0, 2.0]] * 2
    assert outcome(lambda: ndgrad.hspmm(ndgrad.ones(2, 2), ndgrad.ones(2, 2)))[0] == \
        outcome(lambda: torch.hspmm(torch.ones(2, 2), torch.ones(2, 2)))[0]


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dim", [0, 1])
def test_sparse_softmax_values_and_gradients(log, dim):
    w = np.arange(9.0).reshape(3, 3)
    res = []
    for m in (torch, ndgrad):
        x = m.tensor(A).to_sparse().requires_grad_()
        fn = m.sparse.log_softmax if log else m.sparse.softmax
        y = fn(x, dim)
        (y.to_dense() * m.tensor(w)).sum().backward()
        res.append((y.is_sparse, y.to_dense().detach().numpy(), x.grad.to_dense().numpy()))
    assert res[0][0] == res[1][0]
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-12)
    np.testing.assert_allclose(res[0][2], res[1][2], rtol=1e-10, atol=1e-12)


def test_sparse_softmax_negative_dim():
    # torch 2.13's backward for a negative dim is wrong (its gradient of a softmax does not
    # sum to zero over the group): ndgrad's -1 gives the values and gradients of dim 1
    for log in (False, True):
        fn = ndgrad.sparse.log_softmax if log else ndgrad.sparse.softmax
        res = []
        for dim in (1, -1):
            x = ndgrad.tensor(A).to_sparse().requires_grad_()
            y = fn(x, dim)
            (y.to_dense() * ndgrad.arange(9.0, dtype=ndgrad.float64).reshape(3, 3)).sum() \
                .backward()
            res.append((y.to_dense().tolist(), x.grad.to_dense().tolist()))
        assert res[0] == res[1]
        ref = (torch.sparse.log_softmax if log else torch.sparse.softmax)(
            torch.tensor(A).to_sparse(), -1)
        np.testing.assert_allclose(ref.to_dense().numpy(), np.array(res[0][0]), rtol=1e-12)


def test_sparse_softmax_on_a_dense_dim_and_dtype():
    idx, vals = [[0, 2]], np.array([[1.0, 2.0], [0.5, -1.0]])
    res = []
    for m in (torch, ndgrad):
        x = m.sparse_coo_tensor(m.tensor(idx), m.tensor(vals, dtype=m.float32), (3, 2))
        y = m.sparse.softmax(x, 1, dtype=m.float64)
        res.append((str(y.dtype)[-7:], y.to_dense().numpy()))
    assert res[0][0] == res[1][0]
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-14)
