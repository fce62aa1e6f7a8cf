"""Forward AD and vmap through F.embedding's weight, against torch: dual tensors, func.jvp,
jacfwd, vmap over the weight, their compositions, and max_norm (whose renormalization leaves
the tangent alone)."""

import numpy as np
import pytest
import torch

import ndgrad

from _compare import outcome

W = [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
TW = [[1.0, 10.0], [100.0, 1000.0], [1e4, 1e5]]
IDX = [[2, 0], [0, 1]]
KWARGS = [{}, {"padding_idx": 0}, {"padding_idx": -1}, {"scale_grad_by_freq": True},
          {"sparse": True}]


def _arrays(r):
    if isinstance(r, (tuple, list)):
        return [a for x in r for a in _arrays(x)]
    return [r.detach().numpy().copy()]


def _compare(fn):
    t, n = fn(torch), fn(ndgrad)
    ta, na = _arrays(t), _arrays(n)
    assert len(ta) == len(na)
    for a, b in zip(ta, na):
        np.testing.assert_allclose(b, a, rtol=1e-12)


def _data(m):
    return (m.tensor(W, dtype=m.float64), m.tensor(TW, dtype=m.float64), m.tensor(IDX))


@pytest.mark.parametrize("kw", KWARGS, ids=str)
def test_dual_weight(kw):
    def run(m):
        w, tw, idx = _data(m)
        fw = m.autograd.forward_ad
        with fw.dual_level():
            return tuple(fw.unpack_dual(m.nn.functional.embedding(idx, fw.make_dual(w, tw),
                                                                  **kw)))
    _compare(run)


@pytest.mark.parametrize("kw", KWARGS[:4], ids=str)
def test_func_transforms_over_the_weight(kw):
    def run(m):
        w, tw, idx = _data(m)
        F, func = m.nn.functional, m.func

        def emb(ww):
            return F.embedding(idx, ww, **kw)

        def loss(ww):
            return (emb(ww) ** 3).sum()
        both = m.stack([w, tw])
        return (func.jvp(emb, (w,), (tw,)),
                func.jacfwd(emb)(w),
                func.vmap(emb)(both),
                func.vmap(lambda ii, ww: F.embedding(ii, ww, **kw))(idx, both),
                func.vmap(lambda tt: func.jvp(emb, (w,), (tt,)))(both),
                func.jvp(func.vmap(emb), (both,), (both.flip(0),)),
                func.jvp(func.grad(loss), (w,), (tw,)),
                func.hessian(loss)(w))
    _compare(run)


def test_forward_and_reverse_together():
    def run(m):
        w, tw, idx = _data(m)
        fw = m.autograd.forward_ad
        wr = w.clone().requires_grad_()
        with fw.dual_level():
            p, t = fw.unpack_dual(m.nn.functional.embedding(idx, fw.make_dual(wr, tw),
                                                            padding_idx=1))
            (t.sum() + (p ** 2).sum()).backward()
        return p, t, wr.grad
    _compare(run)


def test_max_norm_renormalizes_the_data_and_keeps_the_tangent():
    def run(m):
        w, tw, idx = _data(m)
        fw = m.autograd.forward_ad
        w = w.clone()
        with fw.dual_level():
            d = fw.make_dual(w, tw)
            p, t = fw.unpack_dual(m.nn.functional.embedding(idx, d, max_norm=1.0))
        return p, t, w, tw           # the weight is renormalized in place, the tangent is not
    _compare(run)


def test_embedding_bag_forward_ad_refused_as_torch():
    def run(m):
        def f(w):
            return m.nn.functional.embedding_bag(m.tensor([0, 1]), w, m.tensor([0]))
        return m.func.jvp(f, (m.ones(2, 2),), (m.ones(2, 2),))
    t, n = outcome(lambda: run(torch)), outcome(lambda: run(ndgrad))
    assert t[0] == n[0] == "NotImplementedError"
    assert t[1] == n[1]


def test_max_norm_renorm_leaves_other_threads_forward_ad_alone():
    # While one thread's embedding renormalizes its weight (forward AD off for that write),
    # forward AD running in another thread keeps propagating tangents.
    import threading

    writing, done = threading.Event(), threading.Event()

    class SlowWeight(ndgrad.Tensor):
        def __setitem__(self, index, value):
            writing.set()                  # inside the renorm's write: let the other run
            assert done.wait(10)
            super().__setitem__(index, value)

    weight = ndgrad.tensor([[3.0, 4.0], [0.1, 0.1]]).as_subclass(SlowWeight)
    errors = []

    def renorm():
        try:
            ndgrad.nn.functional.embedding(ndgrad.tensor([0]), weight, max_norm=1.0)
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    fw = ndgrad.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([1.0, 1.0]))
        t = threading.Thread(target=renorm)
        t.start()
        try:
            assert writing.wait(10)
            tangent = fw.unpack_dual((x * x).sin()).tangent
        finally:
            done.set()
            t.join()
    assert not errors
    assert tangent is not None
    np.testing.assert_allclose(tangent.numpy(), 2 * np.array([1.0, 2.0]) * np.cos([1.0, 4.0]),
                               rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(weight.detach().numpy()[0]), 1.0, rtol=1e-6)
