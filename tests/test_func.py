"""ndgrad.func against torch.func: the same functions (written once for both libraries) give
the same values, structures and errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.func as tf

import ndgrad
import ndgrad.func as nf
import ndgrad.nn as nn

F64 = ndgrad.float64


# ---------------------------------------------------------------------------- helpers
def to_np(tree):
    """A pytree of ndgrad or torch tensors as the same pytree of float64 ndarrays."""
    if isinstance(tree, ndgrad.Tensor):
        return tree.detach().numpy().copy()
    if isinstance(tree, torch.Tensor):
        return tree.detach().numpy().copy()
    if isinstance(tree, dict):
        return {k: to_np(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(to_np(v) for v in tree)
    return tree


def same(a, b, rtol=1e-10, atol=1e-12):
    """``a`` (ndgrad) and ``b`` (torch) have the same structure and values."""
    a, b = to_np(a), to_np(b)
    if isinstance(b, dict):
        assert isinstance(a, dict) and list(a) == list(b), (a, b)
        for k in b:
            same(a[k], b[k], rtol, atol)
    elif isinstance(b, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), (type(a), type(b), a, b)
        for x, y in zip(a, b):
            same(x, y, rtol, atol)
    elif isinstance(b, np.ndarray):
        assert isinstance(a, np.ndarray), (a, b)
        assert a.shape == b.shape, (a.shape, b.shape)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    else:
        assert a == b, (a, b)


def pair(*shape, seed=0, lo=-1.0, hi=1.0):
    """The same random float64 values as an ndgrad and a torch tensor."""
    a = np.random.default_rng(seed).uniform(lo, hi, shape)
    return ndgrad.tensor(a, dtype=F64), torch.tensor(a, dtype=torch.float64)


def both(fn, *args):
    """``fn(lib, *args)`` for ndgrad and torch; args given as (ndgrad, torch) pairs."""
    return fn(ndgrad, *[a[0] for a in args]), fn(torch, *[a[1] for a in args])


def err(fn_nd, fn_t):
    """Run both; they must raise the same exception type with the same message start."""
    with pytest.raises(Exception) as et:
        fn_t()
    with pytest.raises(Exception) as en:
        fn_nd()
    assert type(en.value) is type(et.value), (en.value, et.value)
    msg_t = str(et.value).split("\n")[0][:60]
    assert str(en.value).startswith(msg_t), (str(en.value), msg_t)


# Functions written once for both libraries: ``lib`` is ndgrad or torch.
def f_scalar(lib, x):
    return (lib.sin(x) * x ** 2).sum()


def f_two(lib, x, y):
    return (lib.tanh(x) * y.exp()).sum() + (x * y).prod()


def f_vec(lib, x):
    return lib.stack([x.sin().sum(), (x ** 3).sum(), (x[0] * x[-1])])


def f_tree_in(lib, d):
    return (d["a"] * d["b"][0]).sum() + d["b"][1].exp().sum()


def f_tree_out(lib, x, y):
    return {"s": (x * y).sum(), "v": [x.sin() * y, (x.cos(),)]}


# ---------------------------------------------------------------------------- grad
def test_grad_values_and_argnums():
    x, y = pair(3, seed=1), pair(3, seed=2)
    a, b = both(lambda lib, x: (tf if lib is torch else nf).grad(
        lambda t: f_scalar(lib, t))(x), x)
    same(a, b)
    for argnums in (0, 1, (0, 1), (1, 0), -1, (-2,)):
        ga = nf.grad(lambda u, v: f_two(ndgrad, u, v), argnums=argnums)(x[0], y[0])
        gb = tf.grad(lambda u, v: f_two(torch, u, v), argnums=argnums)(x[1], y[1])
        same(ga, gb)


def test_grad_pytree_input_and_aux():
    d_nd = {"a": pair(2, 2, seed=3)[0], "b": [pair(2, seed=4)[0], pair(5, seed=5)[0]]}
    d_t = {"a": pair(2, 2, seed=3)[1], "b": [pair(2, seed=4)[1], pair(5, seed=5)[1]]}
    same(nf.grad(lambda d: f_tree_in(ndgrad, d))(d_nd),
         tf.grad(lambda d: f_tree_in(torch, d))(d_t))

    def with_aux(lib):
        def f(x):
            y = x.sin()
            return y.sum(), {"y": y, "pair": (x * 2, y.cos())}
        return f
    x = pair(4, seed=6)
    ga, aux_a = nf.grad(with_aux(ndgrad), has_aux=True)(x[0])
    gb, aux_b = tf.grad(with_aux(torch), has_aux=True)(x[1])
    same(ga, gb)
    same(aux_a, aux_b)
    assert not aux_a["y"].requires_grad
    ga, (va, aux_a) = nf.grad_and_value(with_aux(ndgrad), has_aux=True)(x[0])
    gb, (vb, aux_b) = tf.grad_and_value(with_aux(torch), has_aux=True)(x[1])
    same((ga, va, aux_a), (gb, vb, aux_b))


def test_grad_requires_grad_and_no_side_effects():
    x = ndgrad.tensor([1.0, 2.0], dtype=F64)
    g = nf.grad(lambda t: (t ** 3).sum())(x)
    assert not g.requires_grad and not x.requires_grad
    # An input requiring grad: the result keeps the outer history (as torch.func does), and
    # nothing is accumulated into .grad.
    w = ndgrad.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    tw = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    g = nf.grad(lambda t: (t ** 3).sum())(w)
    tg = tf.grad(lambda t: (t ** 3).sum())(tw)
    assert g.requires_grad and tg.requires_grad
    assert w.grad is None
    g.sum().backward()
    tg.sum().backward()
    same(w.grad, tw.grad)
    # A closure requiring grad keeps the result differentiable too.
    z = ndgrad.tensor(3.0, dtype=F64, requires_grad=True)
    g = nf.grad(lambda t: (z * t ** 2).sum())(x)
    assert g.requires_grad
    (dz,) = ndgrad.autograd.grad(g.sum(), z)
    same(dz, torch.tensor(6.0, dtype=torch.float64))
    # Outer no_grad: gradients are still computed, the result has no history.
    with ndgrad.no_grad():
        g = nf.grad(lambda t: (t ** 2).sum())(w)
    assert not g.requires_grad
    same(g, 2 * tw.detach())
    # no_grad inside the function is respected: a constant output.
    g = nf.grad(lambda t: _no_grad_sum(t) + (t * 2).sum())(x)
    same(g, torch.full((2,), 2.0, dtype=torch.float64))


def test_grad_through_in_place_ops():
    def f(lib):
        def g(t):
            u = t.clone()
            u[0] = t[1] * 3
            u.mul_(t)
            return u.sum() * t.sum()
        return g
    x = pair(3, seed=36)
    same(nf.grad(f(ndgrad))(x[0]), tf.grad(f(torch))(x[1]))
    same(nf.hessian(f(ndgrad))(x[0]), tf.hessian(f(torch))(x[1]))
    same(nf.vmap(nf.grad(f(ndgrad)))(pair(2, 3, seed=37)[0]),
         tf.vmap(tf.grad(f(torch)))(pair(2, 3, seed=37)[1]))


def _no_grad_sum(t):
    with ndgrad.no_grad():
        return (t ** 2).sum()


def test_nested_grad_no_perturbation_confusion():
    cases = [
        lambda lib, G: G(lambda x: G(lambda y: x * y)(x))(lib.tensor(3.0, dtype=lib.float64)),
        lambda lib, G: G(lambda x: x * G(lambda y: x + y)(x))(lib.tensor(3.0, dtype=lib.float64)),
        lambda lib, G: G(lambda x: G(lambda y: (x * y).sin())(x * 2))(
            lib.tensor(0.7, dtype=lib.float64)),
        lambda lib, G: G(G(G(lib.sin)))(lib.tensor(0.3, dtype=lib.float64)),
        lambda lib, G: G(lambda x: G(lambda y: (y ** 2 * x).sum())(x).sum())(
            lib.tensor([0.5, -1.5], dtype=lib.float64)),
    ]
    for c in cases:
        same(c(ndgrad, nf.grad), c(torch, tf.grad))


# ---------------------------------------------------------------------------- vjp / jvp
def test_vjp_pytrees_aux_and_repeated_calls():
    x, y = pair(3, seed=7), pair(3, seed=8)
    out_a, fn_a = nf.vjp(lambda u, v: f_tree_out(ndgrad, u, v), x[0], y[0])
    out_b, fn_b = tf.vjp(lambda u, v: f_tree_out(torch, u, v), x[1], y[1])
    same(out_a, out_b)
    ct = {"s": pair(seed=9), "v": [pair(3, seed=10), (pair(3, seed=11),)]}
    ct_a = {"s": ct["s"][0], "v": [ct["v"][0][0], (ct["v"][1][0][0],)]}
    ct_b = {"s": ct["s"][1], "v": [ct["v"][0][1], (ct["v"][1][0][1],)]}
    for _ in range(2):                       # vjp_fn may be called again
        same(fn_a(ct_a), fn_b(ct_b))
    o_a, f_a, aux_a = nf.vjp(lambda u: (u.exp(), {"k": u * 3}), x[0], has_aux=True)
    o_b, f_b, aux_b = tf.vjp(lambda u: (u.exp(), {"k": u * 3}), x[1], has_aux=True)
    same((o_a, aux_a), (o_b, aux_b))
    same(f_a(y[0]), f_b(y[1]))
    err(lambda: fn_a(ct_a["s"]), lambda: fn_b(ct_b["s"]))
    # An output independent of the input: a zero vjp.
    _, f_a = nf.vjp(lambda u: ndgrad.ones(2, dtype=F64), x[0])
    _, f_b = tf.vjp(lambda u: torch.ones(2, dtype=torch.float64), x[1])
    same(f_a(ndgrad.ones(2, dtype=F64)), f_b(torch.ones(2, dtype=torch.float64)))


@pytest.mark.filterwarnings("ignore:Attempted to insert a get_attr Node")   # torch.linearize's
def test_jvp_pytrees_aux_and_linearize():
    x, y, tx, ty = (pair(3, seed=s) for s in (12, 13, 14, 15))
    ra = nf.jvp(lambda u, v: f_tree_out(ndgrad, u, v), (x[0], y[0]), (tx[0], ty[0]))
    rb = tf.jvp(lambda u, v: f_tree_out(torch, u, v), (x[1], y[1]), (tx[1], ty[1]))
    same(ra, rb)
    ra = nf.jvp(lambda d: (d["a"].sin() * d["b"], d["a"]), ({"a": x[0], "b": y[0]},),
                ({"a": tx[0], "b": ty[0]},), has_aux=True)
    rb = tf.jvp(lambda d: (d["a"].sin() * d["b"], d["a"]), ({"a": x[1], "b": y[1]},),
                ({"a": tx[1], "b": ty[1]},), has_aux=True)
    same(ra, rb)
    same(nf.jvp(lambda u: ndgrad.ones(2, dtype=F64), (x[0],), (tx[0],)),
         tf.jvp(lambda u: torch.ones(2, dtype=torch.float64), (x[1],), (tx[1],)))
    out_a, jfn_a = nf.linearize(lambda u: u.sin() * u, x[0])
    out_b, jfn_b = tf.linearize(lambda u: u.sin() * u, x[1])
    same(out_a, out_b)
    same(jfn_a(tx[0]), jfn_b(tx[1]))
    same(jfn_a(ty[0]), jfn_b(ty[1]))
    err(lambda: jfn_a(tx[0][:2]), lambda: jfn_b(tx[1][:2]))
    err(lambda: jfn_a((tx[0],)), lambda: jfn_b((tx[1],)))
    err(lambda: jfn_a(tx[0], tx[0]), lambda: jfn_b(tx[1], tx[1]))


# ---------------------------------------------------------------------------- Jacobians
@pytest.mark.parametrize("name", ["jacrev", "jacfwd"])
def test_jacobians(name):
    J, TJ = getattr(nf, name), getattr(tf, name)
    x, y = pair(3, seed=16), pair(2, 3, seed=17)
    same(J(lambda u: f_vec(ndgrad, u))(x[0]), TJ(lambda u: f_vec(torch, u))(x[1]))
    for argnums in (0, 1, (0, 1), (1,)):
        same(J(lambda u, v: f_tree_out(ndgrad, u, v), argnums=argnums)(x[0], y[0]),
             TJ(lambda u, v: f_tree_out(torch, u, v), argnums=argnums)(x[1], y[1]))
    d_a, d_b = {"p": x[0], "q": [y[0]]}, {"p": x[1], "q": [y[1]]}
    same(J(lambda d: d["p"] * d["q"][0])(d_a), TJ(lambda d: d["p"] * d["q"][0])(d_b))
    same(J(lambda u: (u.exp(), {"aux": u.sum()}), has_aux=True)(x[0]),
         TJ(lambda u: (u.exp(), {"aux": u.sum()}), has_aux=True)(x[1]))
    same(J(lambda u: ndgrad.ones(2, dtype=F64))(x[0]),
         TJ(lambda u: torch.ones(2, dtype=torch.float64))(x[1]))
    if name == "jacrev":
        for chunk in (1, 2, 5):
            same(J(lambda u: f_vec(ndgrad, u), chunk_size=chunk)(x[0]),
                 TJ(lambda u: f_vec(torch, u), chunk_size=chunk)(x[1]))


def test_jacobians_through_ops_without_batching_rules():
    # sort, det, cumprod, fft: the batched passes fall back where a rule is missing.
    x = pair(6, seed=35)

    def f(lib, t):
        m = t.reshape(2, 3) @ t.reshape(3, 2)
        return lib.stack([lib.linalg.det(m), lib.sort(t).values[:2].sum(),
                          t.cumprod(0)[-1], lib.fft.rfft(t).abs().sum()]).sin()
    for name in ("jacrev", "jacfwd"):
        same(getattr(nf, name)(lambda t: f(ndgrad, t))(x[0]),
             getattr(tf, name)(lambda t: f(torch, t))(x[1]), rtol=1e-9)
    same(nf.hessian(lambda t: f(ndgrad, t).sum())(x[0]),
         tf.hessian(lambda t: f(torch, t).sum())(x[1]), rtol=1e-8, atol=1e-10)


def test_hessian_and_second_order_compositions():
    x, y = pair(3, seed=18), pair(3, seed=19)
    same(nf.hessian(lambda u: f_scalar(ndgrad, u))(x[0]),
         tf.hessian(lambda u: f_scalar(torch, u))(x[1]))
    same(nf.hessian(lambda u, v: f_two(ndgrad, u, v), argnums=(0, 1))(x[0], y[0]),
         tf.hessian(lambda u, v: f_two(torch, u, v), argnums=(0, 1))(x[1], y[1]))
    for outer, inner in ((nf.jacrev, nf.jacrev), (nf.jacfwd, nf.jacfwd),
                         (nf.jacrev, nf.jacfwd), (nf.jacfwd, nf.jacrev)):
        to, ti = getattr(tf, outer.__name__), getattr(tf, inner.__name__)
        same(outer(inner(lambda u: f_vec(ndgrad, u)))(x[0]),
             to(ti(lambda u: f_vec(torch, u)))(x[1]))
    # Forward over reverse and reverse over forward through jvp/grad.
    v = pair(3, seed=20)
    same(nf.jvp(nf.grad(lambda u: f_scalar(ndgrad, u)), (x[0],), (v[0],)),
         tf.jvp(tf.grad(lambda u: f_scalar(torch, u)), (x[1],), (v[1],)))
    same(nf.grad(lambda u: nf.jvp(lambda w: f_scalar(ndgrad, w), (u,), (v[0],))[1])(x[0]),
         tf.grad(lambda u: tf.jvp(lambda w: f_scalar(torch, w), (u,), (v[1],))[1])(x[1]))
    # Nested jvp: forward over forward.
    same(nf.jvp(lambda u: nf.jvp(lambda w: w.sin() * w, (u,), (v[0],))[1], (x[0],), (y[0],)),
         tf.jvp(lambda u: tf.jvp(lambda w: w.sin() * w, (u,), (v[1],))[1], (x[1],), (y[1],)))


# ---------------------------------------------------------------------------- vmap
def test_vmap_in_dims_out_dims():
    x, y = pair(4, 3, seed=21), pair(3, 4, seed=22)
    s = pair(seed=23)

    def run(fn, args, **kw):
        return (nf.vmap(lambda *a: fn(ndgrad, *a), **kw)(*[a[0] for a in args]),
                tf.vmap(lambda *a: fn(torch, *a), **kw)(*[a[1] for a in args]))

    def f(lib, u, v):
        return u.sin() * v
    same(*run(f, (x, x)))
    same(*run(f, (x, y), in_dims=(0, 1)))
    same(*run(f, (x, y), in_dims=(0, -1), out_dims=1))
    same(*run(f, (x, y), in_dims=(0, 1), out_dims=-1))
    same(*run(f, (x, s), in_dims=(1, None)))
    same(*run(lambda lib, u: u.sum(), (x,)))                       # 0-d results: a vector
    same(*run(lambda lib, u: (u, u.sum() * 2), (x,), out_dims=(1, 0)))

    def g(lib, d, k):
        return {"out": d["a"] @ d["b"], "k": [d["a"] * k]}
    d_a = {"a": x[0], "b": y[0]}
    d_b = {"a": x[1], "b": y[1]}
    ra = nf.vmap(lambda d, k: g(ndgrad, d, k), in_dims=({"a": 0, "b": 1}, None),
                 out_dims={"out": 0, "k": [1]})(d_a, 2.0)
    rb = tf.vmap(lambda d, k: g(torch, d, k), in_dims=({"a": 0, "b": 1}, None),
                 out_dims={"out": 0, "k": [1]})(d_b, 2.0)
    same(ra, rb)
    # A non-tensor output with out_dims None, a tensor unrelated to the batch likewise.
    ra = nf.vmap(lambda u: (u * 2, 3, x[0]), out_dims=(0, None, None))(x[0])
    rb = tf.vmap(lambda u: (u * 2, 3, x[1]), out_dims=(0, None, None))(x[1])
    same(ra, rb)
    assert ra[2] is x[0]
    # kwargs are passed unmapped; chunk_size gives the same result.
    same(nf.vmap(lambda u, *, k: u * k, chunk_size=3)(x[0], k=2.0),
         tf.vmap(lambda u, *, k: u * k, chunk_size=3)(x[1], k=2.0))
    # An empty batch.
    same(nf.vmap(lambda u: u.sum())(ndgrad.ones(0, 2, dtype=F64)),
         tf.vmap(lambda u: u.sum())(torch.ones(0, 2, dtype=torch.float64)))


def test_vmap_nested_and_composed():
    x, y = pair(2, 3, 4, seed=24), pair(3, 4, seed=25)

    def inner(lib, u, v):
        return (u * v).sum(-1).tanh()
    same(nf.vmap(nf.vmap(lambda u, v: inner(ndgrad, u, v)), in_dims=(0, None))(x[0], y[0]),
         tf.vmap(tf.vmap(lambda u, v: inner(torch, u, v)), in_dims=(0, None))(x[1], y[1]))
    same(nf.vmap(nf.vmap(lambda u, v: inner(ndgrad, u, v), in_dims=(1, 0)), in_dims=(2, 1))(
        x[0], y[0]), tf.vmap(tf.vmap(lambda u, v: inner(torch, u, v), in_dims=(1, 0)),
                             in_dims=(2, 1))(x[1], y[1]))
    # Per-sample gradients, vmap of jacrev / hessian, grad and jacfwd of a vmapped function.
    w = pair(4, seed=26)

    def loss(lib, w, xb):
        return ((xb @ w).tanh() ** 2).sum()
    same(nf.vmap(nf.grad(lambda w_, xb: loss(ndgrad, w_, xb)), in_dims=(None, 0))(w[0], x[0]),
         tf.vmap(tf.grad(lambda w_, xb: loss(torch, w_, xb)), in_dims=(None, 0))(w[1], x[1]))
    same(nf.vmap(nf.hessian(lambda r: (r.sin() ** 2).sum()))(y[0]),
         tf.vmap(tf.hessian(lambda r: (r.sin() ** 2).sum()))(y[1]))
    same(nf.vmap(nf.jacrev(lambda r: r.exp() * r.sum()))(y[0]),
         tf.vmap(tf.jacrev(lambda r: r.exp() * r.sum()))(y[1]))
    same(nf.grad(lambda w_: nf.vmap(lambda xb: loss(ndgrad, w_, xb))(x[0]).sum())(w[0]),
         tf.grad(lambda w_: tf.vmap(lambda xb: loss(torch, w_, xb))(x[1]).sum())(w[1]))
    same(nf.jacfwd(lambda w_: nf.vmap(lambda r: (r * w_).sum())(y[0]))(w[0]),
         tf.jacfwd(lambda w_: tf.vmap(lambda r: (r * w_).sum())(y[1]))(w[1]))
    same(nf.vmap(lambda r: nf.jvp(lambda t: t.sin() * t, (r,), (r.cos(),)))(y[0]),
         tf.vmap(lambda r: tf.jvp(lambda t: t.sin() * t, (r,), (r.cos(),)))(y[1]))
    same(nf.vmap(lambda r: nf.vjp(lambda t: t.exp() * t, r)[1](r + 1))(y[0]),
         tf.vmap(lambda r: tf.vjp(lambda t: t.exp() * t, r)[1](r + 1))(y[1]))
    same(nf.jvp(nf.vmap(lambda r: (r ** 3).sum()), (y[0],), (y[0] * 2,)),
         tf.jvp(tf.vmap(lambda r: (r ** 3).sum()), (y[1],), (y[1] * 2,)))
    same(nf.vmap(nf.jacfwd(lambda r: r.tanh() * r[0]))(y[0]),
         tf.vmap(tf.jacfwd(lambda r: r.tanh() * r[0]))(y[1]))
    same(nf.jacrev(nf.vmap(lambda r: (r * r).sum()))(y[0]),
         tf.jacrev(tf.vmap(lambda r: (r * r).sum()))(y[1]))
    # grad of grad with argnums, both levels differentiating different arguments.
    same(nf.grad(lambda a, b: nf.grad(lambda u, v: (u * v.sin()).sum(), argnums=1)(a, b).sum(),
                 argnums=(0, 1))(w[0], w[0] * 2),
         tf.grad(lambda a, b: tf.grad(lambda u, v: (u * v.sin()).sum(), argnums=1)(a, b).sum(),
                 argnums=(0, 1))(w[1], w[1] * 2))


def test_vmap_falls_back_for_any_op():
    # Ops with no batching rule (sort, linalg, fft, cumprod ...) work inside vmap.
    x = pair(3, 4, 4, seed=27)

    def f(lib, m):
        s = lib.sort(m.reshape(-1)).values[:3]
        return lib.linalg.det(m @ m.mT + lib.eye(4, dtype=m.dtype)) + s.sum() + \
            lib.fft.rfft(m[0]).abs().sum() + m.cumprod(0).sum()
    same(*both(lambda lib, a: (nf if lib is ndgrad else tf).vmap(lambda m: f(lib, m))(a), x),
         rtol=1e-9)


def test_vmap_and_per_example_grads_through_nn_functional():
    import torch.nn.functional as TF
    import ndgrad.nn.functional as NF
    x, w = pair(3, 2, 6, 6, seed=38), pair(4, 2, 3, 3, seed=39)
    labels = np.random.default_rng(40).integers(0, 4, (3,))

    def net(F, xb, wb, lb):
        h = F.max_pool2d(F.conv2d(xb[None], wb), 2).relu()
        h = F.layer_norm(h, h.shape[-2:])
        return F.cross_entropy(h.mean((-1, -2)), lb[None])
    la, lb = ndgrad.tensor(labels), torch.tensor(labels)
    same(nf.vmap(lambda a, b: net(NF, a, w[0], b))(x[0], la),
         tf.vmap(lambda a, b: net(TF, a, w[1], b))(x[1], lb))
    same(nf.vmap(nf.grad(lambda wb, a, b: net(NF, a, wb, b)), in_dims=(None, 0, 0))(w[0], x[0], la),
         tf.vmap(tf.grad(lambda wb, a, b: net(TF, a, wb, b)), in_dims=(None, 0, 0))(w[1], x[1], lb))


def test_vmap_randomness():
    x = ndgrad.zeros(4, 3, dtype=F64)
    with pytest.raises(RuntimeError, match="vmap: called random operation while in randomness "
                                           "error mode"):
        nf.vmap(lambda u: u + ndgrad.rand(3, dtype=F64))(x)
    ndgrad.manual_seed(0)
    same_rows = nf.vmap(lambda u: u + ndgrad.rand(3, dtype=F64), randomness="same")(x)
    after_same = ndgrad.rand(2)
    assert (same_rows == same_rows[0]).all().item()
    ndgrad.manual_seed(0)
    first = ndgrad.rand(3, dtype=F64)
    np.testing.assert_array_equal(same_rows[0].numpy(), first.numpy())
    np.testing.assert_array_equal(after_same.numpy(), ndgrad.rand(2).numpy())  # one draw used
    diff = nf.vmap(lambda u: ndgrad.nn.functional.dropout(u + 1, 0.5), randomness="different")(
        ndgrad.zeros(8, 50, dtype=F64))
    assert not all((diff[i] == diff[0]).all().item() for i in range(1, 8))
    # jacfwd refuses randomness the same way.
    with pytest.raises(RuntimeError, match="randomness error mode"):
        nf.jacfwd(lambda u: u * ndgrad.rand(3, dtype=F64))(ndgrad.ones(3, dtype=F64))


def test_vmap_errors():
    xn, xt = pair(3, 2, seed=28)
    cases = [
        lambda V, x: V(lambda a: a, in_dims=2)(x),
        lambda V, x: V(lambda a: a, in_dims=(0, 0))(x),
        lambda V, x: V(lambda a: a, in_dims=[0])(x),
        lambda V, x: V(lambda a: a, in_dims=(1.0,))(x),
        lambda V, x: V(lambda a: a, in_dims=(None,))(x),
        lambda V, x: V(lambda a, b: a + b)(x, x[:2]),
        lambda V, x: V(lambda a: a)(1.0),
        lambda V, x: V(lambda a: a)(),
        lambda V, x: V(lambda a: 1)(x),
        lambda V, x: V(lambda a: (a, None))(x),
        lambda V, x: V(lambda a: a, out_dims=3)(x),
        lambda V, x: V(lambda a: a, out_dims=(0, 0))(x),
        lambda V, x: V(lambda a: a, out_dims=1.0)(x),
        lambda V, x: V(lambda a: a, out_dims=None)(x),
        lambda V, x: V(lambda a: a.sum().item())(x),
        lambda V, x: V(lambda a: a if a.sum() > 0 else -a)(x),
        lambda V, x: V(lambda a: a, chunk_size=0)(x),
        lambda V, x: V(lambda a: a, randomness="foo")(x),
        lambda V, x: V(lambda a: a)(x[0, 0]),
    ]
    for c in cases:
        err(lambda c=c: c(nf.vmap, xn), lambda c=c: c(tf.vmap, xt))
    # Writing a batched value into a tensor the function closes over.
    yn, yt = ndgrad.zeros(2, dtype=F64), torch.zeros(2, dtype=torch.float64)
    err(lambda: nf.vmap(lambda a: yn.mul_(a))(xn), lambda: tf.vmap(lambda a: yt.mul_(a))(xt))
    err(lambda: nf.vmap(lambda a: yn.copy_(a))(xn), lambda: tf.vmap(lambda a: yt.copy_(a))(xt))
    # In place on the mapped input itself writes through to it, as in torch.
    an, at = xn.clone(), xt.clone()
    nf.vmap(lambda a: a.mul_(2))(an)
    tf.vmap(lambda a: a.mul_(2))(at)
    same(an, at)
    # .item() of a tensor the function closes over is allowed.
    cn, ct = ndgrad.tensor(3.0), torch.tensor(3.0)
    same(nf.vmap(lambda a: a * cn.item())(xn), tf.vmap(lambda a: a * ct.item())(xt))


def test_vmap_of_vjp_fn_is_one_batched_backward(monkeypatch):
    x = pair(3, 4, seed=32)
    cts = {"a": pair(5, 3, 4, seed=33), "b": pair(5, 4, seed=34)}

    def f(lib):
        return lambda t: {"a": t.sin() * 2, "b": (t * t).sum(0)}
    _, fn_a = nf.vjp(f(ndgrad), x[0])
    _, fn_b = tf.vjp(f(torch), x[1])
    calls = []
    orig = nf._reverse._batched_rows
    monkeypatch.setattr(nf._reverse, "_batched_rows",
                        lambda *a: calls.append(1) or orig(*a))
    ct_a = {k: v[0] for k, v in cts.items()}
    ct_b = {k: v[1] for k, v in cts.items()}
    same(nf.vmap(fn_a)(ct_a), tf.vmap(fn_b)(ct_b))
    assert len(calls) == 1
    same(nf.vmap(fn_a, chunk_size=2, out_dims=1)(ct_a),
         tf.vmap(fn_b, chunk_size=2, out_dims=1)(ct_b))
    assert len(calls) == 4
    mv = {"a": ct_a["a"].movedim(0, 2), "b": ct_a["b"]}
    same(nf.vmap(fn_a, in_dims=({"a": 2, "b": 0},))(mv),
         tf.vmap(fn_b, in_dims=({"a": 2, "b": 0},))({"a": ct_b["a"].movedim(0, 2),
                                                      "b": ct_b["b"]}))


def test_transform_errors():
    xn, xt = pair(3, 2, seed=29)
    cases = [
        lambda M, x: M.grad(lambda a: a)(x),
        lambda M, x: M.grad(lambda a: (a.sum(), 1), has_aux=True)(x),
        lambda M, x: M.grad(lambda a: a.sum(), has_aux=True)(x),
        lambda M, x: M.grad(lambda a: a.sum(), argnums=2)(x),
        lambda M, x: M.grad(lambda a: a.sum(), argnums=(0, 0))(x),
        lambda M, x: M.grad(lambda a: a.sum(), argnums=1.0)(x),
        lambda M, x: M.grad(lambda a: a.sum(), argnums=())(x),
        lambda M, x: M.grad(lambda a: 3)(x),
        lambda M, x: M.grad(lambda a: a.sum())(3.0),
        lambda M, x: M.grad(lambda a: a.sum().reshape(1))(x),
        lambda M, x: M.vjp(lambda a: 3, x),
        lambda M, x: M.vjp(lambda a: (a, a), x)[1](x),
        lambda M, x: M.jvp(lambda a: a, x, (x,)),
        lambda M, x: M.jvp(lambda a: a, (x,), x),
        lambda M, x: M.jvp(lambda a: 3, (x,), (x,)),
        lambda M, x: M.jvp(lambda a: a, (x,), (x[0],)),
        lambda M, x: M.jvp(lambda a: a, (x,), (x,), has_aux=True),
        lambda M, x: M.jvp(lambda a: a.new_ones(2), (x,), (x,), strict=True),
        lambda M, x: M.jacrev(lambda a: 3)(x),
        lambda M, x: M.jacrev(lambda a: a, chunk_size=0)(x),
        lambda M, x: M.jacfwd(lambda a: a, randomness="x")(x),
        lambda M, x: M.hessian(lambda a: a.sum(), argnums=(0, 0))(x),
        lambda M, x: M.grad(lambda a: a.mul_(2).sum())(x.clone()),
        lambda M, x: M.vjp(lambda a: a > 0, x),
        lambda M, x: M.jacrev(lambda a: a > 0)(x),
        lambda M, x: M.grad(lambda a: (a * 1j).sum())(x),
    ]
    for c in cases:
        err(lambda c=c: c(nf, xn), lambda c=c: c(tf, xt))


# ---------------------------------------------------------------------------- functional_call
def _mlps():
    ndgrad.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2)).double()
    t = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(),
                            torch.nn.Linear(5, 2)).double()
    t.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in m.state_dict().items()})
    return m, t


def test_functional_call_with_transforms():
    m, t = _mlps()
    x = pair(4, 3, seed=30)
    rng = np.random.default_rng(31)
    new = {k: rng.standard_normal(tuple(v.shape)) for k, v in m.named_parameters()}
    p_a = {k: ndgrad.tensor(v, dtype=F64) for k, v in new.items()}
    p_b = {k: torch.tensor(v, dtype=torch.float64) for k, v in new.items()}
    before = {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}
    same(nf.functional_call(m, p_a, (x[0],)), tf.functional_call(t, p_b, (x[1],)))
    same(nf.functional_call(m, p_a, x[0]), tf.functional_call(t, p_b, x[1]))
    # A tuple of dicts, kwargs.
    keys = list(p_a)
    split_a = ({k: p_a[k] for k in keys[:2]}, {k: p_a[k] for k in keys[2:]})
    split_b = ({k: p_b[k] for k in keys[:2]}, {k: p_b[k] for k in keys[2:]})
    same(nf.functional_call(m, split_a, (), {"input": x[0]}),
         tf.functional_call(t, split_b, (), {"input": x[1]}))

    def loss(lib, F, mod, p, xb):
        return (F.functional_call(mod, p, (xb,)) ** 2).mean()
    # Gradient with respect to the parameter dict; per-example gradients; an ensemble.
    same(nf.grad(lambda p: loss(ndgrad, nf, m, p, x[0]))(p_a),
         tf.grad(lambda p: loss(torch, tf, t, p, x[1]))(p_b))
    same(nf.vmap(nf.grad(lambda p, xb: loss(ndgrad, nf, m, p, xb)), in_dims=(None, 0))(
        p_a, x[0]),
        tf.vmap(tf.grad(lambda p, xb: loss(torch, tf, t, p, xb)), in_dims=(None, 0))(p_b, x[1]))
    ens_a = {k: ndgrad.stack([v, v * 0.5]) for k, v in p_a.items()}
    ens_b = {k: torch.stack([v, v * 0.5]) for k, v in p_b.items()}
    same(nf.vmap(lambda p: nf.functional_call(m, p, (x[0],)))(ens_a),
         tf.vmap(lambda p: tf.functional_call(t, p, (x[1],)))(ens_b))
    same(nf.jacrev(lambda p: nf.functional_call(m, p, (x[0],)))(p_a),
         tf.jacrev(lambda p: tf.functional_call(t, p, (x[1],)))(p_b))
    # The module's own parameters are untouched and got no .grad.
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k])
    assert all(p.grad is None for p in m.parameters())
    # strict and tie_weights.
    err(lambda: nf.functional_call(m, {keys[0]: p_a[keys[0]]}, (x[0],), strict=True),
        lambda: tf.functional_call(t, {keys[0]: p_b[keys[0]]}, (x[1],), strict=True))


def test_stack_module_state_ensemble():
    ms, ts = zip(*[_mlps() for _ in range(3)])
    for i, m in enumerate(ms):                    # distinct members
        for p, q in zip(m.parameters(), ts[i].parameters()):
            with ndgrad.no_grad():
                p.mul_(i + 1)
            with torch.no_grad():
                q.mul_(i + 1)
    pa, ba = nf.stack_module_state(ms)
    pb, bb = tf.stack_module_state(ts)
    same(pa, pb)
    assert all(v.is_leaf and v.requires_grad for v in pa.values())
    x = pair(5, 3, seed=41)
    same(nf.vmap(lambda p, b: nf.functional_call(ms[0], (p, b), x[0]))(pa, ba),
         tf.vmap(lambda p, b: tf.functional_call(ts[0], (p, b), x[1]))(pb, bb))
    err(lambda: nf.stack_module_state([]), lambda: tf.stack_module_state([]))
    err(lambda: nf.stack_module_state([ms[0], nn.Linear(3, 5)]),
        lambda: tf.stack_module_state([ts[0], torch.nn.Linear(3, 5)]))
    ms[1].eval()
    ts[1].eval()
    err(lambda: nf.stack_module_state(ms), lambda: tf.stack_module_state(ts))


def test_functional_call_tied_weights():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2, bias=False)
            self.b = nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))
    m = Tied()
    w = ndgrad.eye(2) * 2
    x = ndgrad.ones(1, 2)
    np.testing.assert_array_equal(nf.functional_call(m, {"a.weight": w}, (x,)).numpy(),
                                  [[4.0, 4.0]])
    out = nf.functional_call(m, {"a.weight": w}, (x,), tie_weights=False)
    np.testing.assert_allclose(out.detach().numpy(), (x @ m.a.weight.detach().T * 2).numpy())


def test_reachable_lazily():
    assert ndgrad.func is nf
    assert set(nf.__all__) >= {"grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd",
                               "hessian", "vmap", "functional_call", "linearize",
                               "stack_module_state"}
