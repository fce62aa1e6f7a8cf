"""Vectorized ``ndgrad.func.vmap`` (Note [Vectorized vmap] in ndgrad/func/_vmap.py) against
torch.func: the function runs once on batched tensors whose Python-visible metadata is one
entry's, data functions keep logical semantics, torch's vmap errors, ops without a batching
rule run per entry, and the transforms compose."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.func as tf

import ndgrad
import ndgrad.func as nf
from ndgrad.ops import _batching
from ndgrad.ops._dispatch import REGISTRY, Op, apply
from test_func import err, pair, same

F64 = ndgrad.float64


def both(fn, *args, in_dims=0, ncalls=1, **kw):
    """``vmap(fn(lib))`` of ndgrad and torch on the same data; ndgrad's ``fn`` must be called
    once per chunk (the vectorized route, no per-entry rerun)."""
    calls = []

    def counted(*a):
        calls.append(1)
        return fn(ndgrad, *a)
    rn = nf.vmap(counted, in_dims=in_dims, **kw)(*[a[0] for a in args])
    rt = tf.vmap(lambda *a: fn(torch, *a), in_dims=in_dims, **kw)(*[a[1] for a in args])
    assert len(calls) == ncalls, len(calls)
    return rn, rt


def test_logical_metadata_inside_the_function():
    x, y = pair(4, 3, 2, seed=1), pair(3, 2, seed=2)
    seen = {}

    def f(lib, a, b):
        seen.setdefault(lib.__name__, []).append(
            (tuple(a.shape), tuple(a.size()), a.size(-1), a.dim(), a.ndim, a.numel(), len(a),
             tuple(a.T.shape), tuple(a.mT.shape), tuple(b.shape), [tuple(r.shape) for r in a]))
        return a * b + a.new_zeros(a.shape) + a.sum()
    same(*both(f, x, y, in_dims=(0, None)))
    assert seen["ndgrad"] == seen["torch"]
    # mapped over another dim, and an unbatched output is expanded at out_dims
    same(*both(lambda lib, a: (a.sum(0), lib.ones(2, dtype=a.dtype)), x, in_dims=2,
               out_dims=(1, 0)))
    same(*both(lambda lib, a: a.sum(), x, chunk_size=3, ncalls=2))


def test_data_functions_see_logical_values():
    x, idx = pair(4, 3, 2, seed=3), np.array([[1, 0], [2, 2], [0, 1], [1, 1]])
    ix = (ndgrad.tensor(idx), torch.tensor(idx))

    def masks(lib, a):
        m = (a > 0) & ~lib.isnan(a) | (0.5 < a)
        return (lib.where(m, a, 0.0) + lib.gt(a, 0.1).to(a.dtype) + a.masked_fill(a < 0, 2.0)
                + lib.zeros_like(a) + lib.ones_like(a.sum()) + (a == a[0]).to(a.dtype)
                + (a > 0).any(0).to(a.dtype) + a.argmax(0).to(a.dtype))
    same(*both(masks, x))
    same(*both(lambda lib, a: a.detach() + a.argsort(-1).to(a.dtype)
               + lib.bucketize(a, lib.tensor([-0.5, 0.0, 0.5], dtype=a.dtype)).to(a.dtype), x))
    same(*both(lambda lib, a, i: a[i], x, ix))                      # batched index
    same(*both(lambda lib, a, i: a[i], x, ix, in_dims=(None, 0)))   # unbatched base

    def write(lib, a, i):
        c = a.clone()
        c[i] = 7.0
        c[0] = a[1] * 2
        return c.mul_(a)
    same(*both(write, x, ix))


def test_vmap_errors_inside_the_batched_call():
    xn, xt = pair(3, 2, seed=4)
    for fn in (lambda lib, a: a.sum().item(), lambda lib, a: a if a.sum() > 0 else -a,
               lambda lib, a: float(a.sum()), lambda lib, a: (a > 0).nonzero(),
               lambda lib, a: lib.zeros(2, dtype=a.dtype).mul_(a),
               lambda lib, a: a.tolist(), lambda lib, a: a.data):
        err(lambda fn=fn: nf.vmap(lambda a: fn(ndgrad, a))(xn),
            lambda fn=fn: tf.vmap(lambda a: fn(torch, a))(xt))
    # an unbatched tensor's .item() is allowed
    same(*both(lambda lib, a: a * lib.ones(1, dtype=a.dtype).sum().item(), (xn, xt)))
    with pytest.raises(RuntimeError, match="randomness error mode"):
        nf.vmap(lambda a: a + ndgrad.rand(2, dtype=F64))(xn)


_calls = []


def _plus_sq_fwd(a):
    _calls.append(a.shape)
    return a + a * a


@pytest.fixture
def plus_sq():
    """An op no batching rule knows: inside vmap it runs per entry (exact), forward and
    backward. Made per test and taken out of the op registry afterwards (tests that walk every
    op of the table must not see it)."""
    op = Op("plus_sq_test", "PlusSqBackward0", _plus_sq_fwd,
            lambda ctx, g: g * (1 + 2 * ctx.saved[0]), saves=("self",))
    yield op
    REGISTRY["plus_sq_test"].remove(op)
    if not REGISTRY["plus_sq_test"]:
        del REGISTRY["plus_sq_test"]


def test_op_without_batching_rule_runs_per_entry(plus_sq):
    _PLUS_SQ = plus_sq
    assert not _batching.supports(_PLUS_SQ)
    x = ndgrad.tensor(np.random.default_rng(5).normal(size=(3, 2)))

    def f(a):
        return apply(_PLUS_SQ, (a,), (a._data,)).sin().sum()
    _calls.clear()
    r = nf.vmap(f)(x)
    assert _calls == [(2,)] * 3           # once per entry, on one entry's data
    np.testing.assert_allclose(r.numpy(), np.sin(x.numpy() + x.numpy() ** 2).sum(1))
    g = nf.vmap(nf.grad(f))(x)
    xn = x.numpy()
    np.testing.assert_allclose(g.numpy(), np.cos(xn + xn ** 2) * (1 + 2 * xn), rtol=1e-12)


def test_nested_vmap_levels():
    x, y = pair(2, 3, 4, seed=6), pair(3, seed=7)
    seen = {}

    def f(lib, a, b):
        def inner(u, v):
            seen.setdefault(lib.__name__, []).append((tuple(u.shape), tuple(v.shape)))
            return (u * v).sum() + u.max()
        V = nf if lib is ndgrad else tf
        return V.vmap(inner, in_dims=(1, None))(a, b)
    same(*both(f, x, y, in_dims=(0, None)))
    assert set(seen["ndgrad"]) == set(seen["torch"])


def test_transforms_compose_with_vectorized_vmap():
    w, x, y = pair(3, 2, seed=8), pair(5, 3, seed=9), pair(5, 2, seed=10)

    def loss(lib, w_, xb, yb):
        return ((xb @ w_).tanh() - yb).pow(2).sum() + (w_ * w_).sum()
    same(*both(lambda lib, a, b, c: (nf if lib is ndgrad else tf).grad(
        lambda w_: loss(lib, w_, b, c))(a), w, x, y, in_dims=(None, 0, 0)))
    same(*both(lambda lib, a, b: (nf if lib is ndgrad else tf).jacrev(
        lambda w_: (b @ w_).exp())(a), w, x, in_dims=(None, 0)))
    same(*both(lambda lib, a, b: (nf if lib is ndgrad else tf).vjp(
        lambda w_: (b @ w_).sin(), a)[1](b[:2])[0], w, x, in_dims=(None, 0)))
    # grad / jacrev of a vmapped function
    same(nf.grad(lambda w_: nf.vmap(lambda b, c: loss(ndgrad, w_, b, c))(x[0], y[0]).sum())(w[0]),
         tf.grad(lambda w_: tf.vmap(lambda b, c: loss(torch, w_, b, c))(x[1], y[1]).sum())(w[1]))
    same(nf.jacrev(lambda w_: nf.vmap(lambda b: (b @ w_).sin())(x[0]))(w[0]),
         tf.jacrev(lambda w_: tf.vmap(lambda b: (b @ w_).sin())(x[1]))(w[1]))


def test_per_example_gradients_with_functional_call():
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))
    tm = tm.double()
    m = ndgrad.nn.Sequential(ndgrad.nn.Linear(6, 5), ndgrad.nn.ReLU(), ndgrad.nn.Linear(5, 3))
    m = m.double()
    tp = {k: v.detach() for k, v in tm.named_parameters()}
    p = {k: ndgrad.tensor(v.numpy()) for k, v in tp.items()}
    x, labels = pair(4, 6, seed=11), np.random.default_rng(12).integers(0, 3, (4,))
    y = (ndgrad.tensor(labels), torch.tensor(labels))

    def loss(lib, F, mod, params, xb, yb):
        out = F.functional_call(mod, params, (xb[None],))
        return lib.nn.functional.cross_entropy(out, yb[None])
    calls = []

    def nd_loss(params, xb, yb):
        calls.append(1)
        return loss(ndgrad, nf, m, params, xb, yb)
    gn = nf.vmap(nf.grad(nd_loss), in_dims=(None, 0, 0))(p, x[0], y[0])
    gt = tf.vmap(tf.grad(lambda params, xb, yb: loss(torch, tf, tm, params, xb, yb)),
                 in_dims=(None, 0, 0))(tp, x[1], y[1])
    assert len(calls) == 1
    same(gn, gt, rtol=1e-9)


def test_autograd_function_runs_per_entry():
    class Cube(ndgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            assert x.shape == (2,)              # one entry
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * g * x ** 2
    xn, xt = pair(3, 2, seed=13)
    same(nf.vmap(lambda a: Cube.apply(a).sin())(xn), (xt ** 3).sin())
    same(nf.vmap(nf.grad(lambda a: Cube.apply(a).sum()))(xn), 3 * xt ** 2)


def test_randomness_different_is_one_batched_draw():
    x = ndgrad.zeros(6, 3, dtype=F64)
    calls = []

    def f(u):
        calls.append(1)
        return (u + ndgrad.rand(3, dtype=F64) + ndgrad.randn((3,), dtype=F64)
                + ndgrad.randint(0, 5, (3,)) + ndgrad.rand_like(u)
                + ndgrad.nn.functional.dropout(u + 1, 0.5))
    r = nf.vmap(f, randomness="different")(x)
    assert len(calls) == 1 and r.shape == (6, 3)
    assert len({tuple(row) for row in r.numpy().round(12)}) == 6       # independent rows
    with pytest.raises(RuntimeError, match="randomness error mode"):
        nf.vmap(lambda u: ndgrad.nn.functional.dropout(u, 0.5))(x)


def test_vectorized_losses_match_per_entry_runs():
    rng = np.random.default_rng(14)
    x, t = rng.standard_normal((4, 3, 5)), rng.integers(0, 5, (4, 3))
    t[1, 0] = 2
    w = ndgrad.tensor(rng.uniform(0.5, 2, 5))
    F = ndgrad.nn.functional
    for kw in (dict(), dict(reduction="sum"), dict(reduction="none"), dict(ignore_index=2),
               dict(label_smoothing=0.1), dict(weight=w), dict(weight=w, label_smoothing=0.2)):
        for name in ("cross_entropy", "nll_loss"):
            if name == "nll_loss" and "label_smoothing" in kw:
                continue

            def f(a, b, name=name, kw=kw):
                return getattr(F, name)(a, b, **kw).sum()
            xs, ts = ndgrad.tensor(x), ndgrad.tensor(t)
            fast = nf.vmap(nf.grad_and_value(f))(xs, ts)
            rows = [nf.grad_and_value(f)(xs[i], ts[i]) for i in range(len(x))]  # by entries
            slow = tuple(torch.stack([torch.tensor(r[j].numpy()) for r in rows])
                         for j in range(2))
            same(fast, slow, rtol=1e-12)


def test_unbatched_receiver_with_batched_argument():
    x, y = pair(4, 3, seed=15), pair(3, seed=16)
    same(*both(lambda lib, a, c: (c.lt(a).to(a.dtype) + c.logical_and(a > 0).to(a.dtype)
                                  + c.where(a > 0, a)), x, y, in_dims=(0, None)))


def _bn_batched_stats(lib, F, vm):
    lib.manual_seed(0)
    x = lib.randn(3, 5, 4, dtype=lib.float64, requires_grad=True)
    rm, rv = lib.zeros(3, 4, dtype=lib.float64), lib.ones(3, 4, dtype=lib.float64)
    out = vm(lambda a, m, v: F.batch_norm(a, m, v, training=True, momentum=0.3))(x, rm, rv)
    g, = lib.autograd.grad((out * lib.arange(60.0, dtype=lib.float64).view(3, 5, 4)).sum(), x)
    # a BatchNorm ensemble: stacked buffers, functional_call under vmap (training mode)
    bn = lib.nn.BatchNorm1d(4).double()
    bufs = {k: v.unsqueeze(0).repeat(3, *[1] * v.dim()) for k, v in bn.named_buffers()}
    params = {k: v.detach() for k, v in bn.named_parameters()}
    vm(lambda p, b, a: lib.func.functional_call(bn, (p, b), (a,)), in_dims=(None, 0, 0))(
        params, bufs, x.detach())
    return [out.detach().numpy(), g.numpy(), rm.numpy(), rv.numpy()] + \
        [b.double().numpy() for b in bufs.values()]


def test_batch_norm_updates_batched_running_stats_per_entry():
    """Batched running statistics in training mode: each entry's are updated once, from its
    own batch (entry 0 was updated twice, once from a proxy pass), as torch."""
    want = _bn_batched_stats(torch, torch.nn.functional, tf.vmap)
    got = _bn_batched_stats(ndgrad, ndgrad.nn.functional, nf.vmap)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_batch_norm_refuses_unbatched_running_stats_in_training():
    # torch's error, raised once (not re-run per entry), and the statistics stay untouched
    for lib, F, vm in ((torch, torch.nn.functional, tf.vmap),
                       (ndgrad, ndgrad.nn.functional, nf.vmap)):
        rm, rv = lib.zeros(3), lib.ones(3)
        x = lib.arange(24.).reshape(2, 4, 3)
        with pytest.raises(RuntimeError, match="Batch norm got a batched tensor as input"):
            vm(lambda a, F=F, rm=rm, rv=rv: F.batch_norm(a, rm, rv, training=True))(x)
        assert rm.tolist() == [0.0, 0.0, 0.0] and rv.tolist() == [1.0, 1.0, 1.0]
        with pytest.raises(RuntimeError, match="Batch norm got a batched tensor as input"):
            vm(lib.nn.BatchNorm1d(3))(x)
