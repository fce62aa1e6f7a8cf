"""``vmap`` runs ``f`` once at every level: errors are raised as is (no second run), nested
vmaps, ``randomness="same"`` and forward mode under vmap are vectorized (Note [Vectorized vmap],
Note [Nested vmap levels]). Checked against torch.func."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.func as tfunc

import ndgrad
import ndgrad.func as nfunc
import ndgrad.nn.functional as nF


def _lib(m):
    return (torch, tfunc) if m == "torch" else (ndgrad, nfunc)


def _from(t, a):
    return torch.from_numpy(a.copy()) if t is torch else ndgrad.from_numpy(a.copy())


def _np(x):
    return x.detach().numpy()


X = np.random.default_rng(0).uniform(-1.0, 1.0, (2, 3, 4))
W = np.random.default_rng(1).uniform(-1.0, 1.0, (4, 5))


# ------------------------------------------------------------------------------ run once
@pytest.mark.parametrize("m", ["torch", "ndgrad"])
def test_f_runs_once_when_it_raises(m):
    t, F = _lib(m)
    calls = []

    def f(a, b):
        calls.append(1)
        return a + b
    with pytest.raises(RuntimeError, match="must match the size of tensor b") as e:
        F.vmap(f)(t.ones(4, 2), t.ones(4, 3))
    assert calls == [1]
    if m == "ndgrad":   # the logical dims (torch's message names its physical ones here)
        assert str(e.value) == ("The size of tensor a (2) must match the size of tensor b (3) "
                                "at non-singleton dimension 0")


@pytest.mark.parametrize("name", ["add", "where", "masked_fill", "mm", "view", "cat",
                                  "sum_dim", "linear"])
def test_errors_name_logical_shapes(name):
    """The batched call's error is the one ``f`` raises on one entry."""
    t = ndgrad
    a, b = t.ones(4, 2, 3, dtype=t.float64), t.ones(4, 3, 2, dtype=t.float64)
    fs = {"add": lambda x, y: x + y,
          "where": lambda x, y: t.where(x > 0, x, y),
          "masked_fill": lambda x, y: x.masked_fill(y > 0, 1.0),
          "mm": lambda x, y: x @ y.t(),
          "view": lambda x, y: x.view(4, -1),
          "cat": lambda x, y: t.cat([x, y]),
          "sum_dim": lambda x, y: x.sum(3),
          "linear": lambda x, y: nF.linear(x, t.ones(4, 2, dtype=t.float64))}
    f = fs[name]
    with pytest.raises(Exception) as one:
        f(a[0], b[0])
    with pytest.raises(Exception) as batched:
        nfunc.vmap(f)(a, b)
    assert type(batched.value) is type(one.value)
    assert str(batched.value) == str(one.value)


def _closed_over_writes(m):
    t, F = _lib(m)
    buf = t.zeros(3, dtype=t.float64)

    def f(r):
        buf.add_(1.0)
        return r * buf
    out = F.vmap(f)(t.ones(4, 3, dtype=t.float64))
    res = (_np(buf).copy(), _np(out))
    with pytest.raises(RuntimeError):     # then an error: written once, not again
        F.vmap(lambda r: (buf.add_(1.0), r.view(5))[1])(t.ones(4, 3, dtype=t.float64))
    return res + (_np(buf).copy(),)


def test_inplace_write_into_closed_over_tensor_happens_once():
    want, got = _closed_over_writes("torch"), _closed_over_writes("ndgrad")
    for u, v in zip(want, got):
        np.testing.assert_array_equal(u, v)
    np.testing.assert_array_equal(got[2], [2.0, 2.0, 2.0])


def test_random_draw_happens_once_when_f_raises():
    def f(r):
        noise = ndgrad.randn(3)
        return (r + noise).view(5)
    ndgrad.manual_seed(3)
    with pytest.raises(RuntimeError, match="invalid for input of size 3"):
        nfunc.vmap(f, randomness="different")(ndgrad.ones(4, 3))
    after = ndgrad.rand(2)
    ndgrad.manual_seed(3)
    ndgrad.randn(4, 3)                      # one draw for the whole batch
    assert ndgrad.equal(after, ndgrad.rand(2))


def _count_calls(m):
    t, F = _lib(m)
    n = [0]

    def f(r):
        n[0] += 1
        return (r.sin() * r).sum()
    x = _from(t, X)
    F.vmap(F.vmap(f))(x)
    F.vmap(lambda r: F.jvp(f, (r,), (r.cos(),)))(x[0])
    F.jvp(F.vmap(f), (x[0],), (x[0].cos(),))
    F.vmap(F.jacfwd(f))(x[0])
    F.vmap(F.hessian(f))(x[0])
    F.vmap(F.vmap(F.grad(f)))(x)
    F.jacfwd(F.vmap(f))(x[0])
    F.hessian(lambda a: F.vmap(f)(a).sum())(x[0])
    return n[0]


def test_f_runs_once_under_transforms():
    """vmap, nested vmaps and forward mode on either side call ``f`` once (torch too)."""
    assert _count_calls("ndgrad") == _count_calls("torch") == 8


# ------------------------------------------------------------------------------ nested
def _nested_cases(t, F):
    x, w = _from(t, X), _from(t, W)

    def f(r):
        return (r.sin() @ w).softmax(-1)
    return {
        "vv": lambda: F.vmap(F.vmap(f))(x),
        "in_dims": lambda: F.vmap(F.vmap(f, in_dims=0), in_dims=1)(x.transpose(0, 1)),
        "in_dims_inner": lambda: F.vmap(F.vmap(lambda b, c: b * c, in_dims=(1, 0)))(
            x, x.transpose(1, 2)),
        "out_dims": lambda: F.vmap(F.vmap(f, out_dims=1), out_dims=-1)(x),
        "none": lambda: F.vmap(lambda a: F.vmap(lambda b, c: b * c + a.sum(),
                                                in_dims=(0, None))(a, a[0]))(x),
        "closure": lambda: F.vmap(lambda a: F.vmap(lambda b: b * a[0] + a.exp().sum())(a))(x),
        "unbatched_arg": lambda: F.vmap(lambda a: F.vmap(lambda b, c: b @ c, in_dims=(None, 0))(
            a, w.t()))(x),
        "three": lambda: F.vmap(F.vmap(F.vmap(lambda q: q.exp() * q.sum())))(x),
        "chunks": lambda: F.vmap(F.vmap(f, chunk_size=2), chunk_size=1)(x),
        "grad_inside": lambda: F.vmap(F.vmap(F.grad(lambda b: (b.sin() @ w).tanh().sum())))(x),
        "grad_between": lambda: F.vmap(F.grad(
            lambda a: F.vmap(lambda b: (b.sin() @ w).sum())(a).sum()))(x),
        "vjp_fn_inside": lambda: F.vmap(lambda a: F.vmap(F.vjp(lambda b: b.sin() @ w, a)[1])(
            t.stack([a.cos() @ w, a.sin() @ w]))[0])(x),
        "jvp_between": lambda: F.vmap(lambda a: F.jvp(F.vmap(lambda b: b.sin() * b), (a,),
                                                      (a.cos(),))[1])(x),
        "gather": lambda: F.vmap(F.vmap(lambda b: b.gather(0, b.argmax(0, keepdim=True))))(x),
        "tuple_out_dims": lambda: torch_cat_like(t, F.vmap(F.vmap(
            lambda r: (r.sin(), r.sum()), out_dims=(1, 0)), out_dims=(0, 1))(x)),
        "out_dims_none": lambda: F.vmap(lambda a: F.vmap(
            lambda r: (r * 2, x.sum()), out_dims=(0, None))(a))(x)[1],
        "kwargs": lambda: F.vmap(F.vmap(lambda r, scale=1.0: r * scale))(x, scale=3.0),
        "dict_input": lambda: F.vmap(F.vmap(lambda d: d["a"] * d["b"]))({"a": x, "b": x.cos()}),
        "jacrev_inside": lambda: F.vmap(F.vmap(F.jacrev(lambda r: r.sin() * r.sum())))(x),
        "cross_entropy": lambda: F.vmap(F.vmap(lambda b: (tF_or_nF(t)).cross_entropy(
            b.reshape(1, 4), t.tensor([2]))))(x),
    }


def torch_cat_like(t, outs):
    return t.cat([o.reshape(-1) for o in outs])


def tF_or_nF(t):
    return torch.nn.functional if t is torch else nF


@pytest.mark.parametrize("name", sorted(_nested_cases(torch, tfunc)))
def test_nested_vmap_matches_torch(name):
    _assert_matches(_nested_cases(ndgrad, nfunc)[name](), _nested_cases(torch, tfunc)[name]())


def _assert_matches(got, want):
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("m", ["torch", "ndgrad"])
def test_nested_vmap_errors_match_torch(m):
    t, F = _lib(m)
    x = _from(t, X)
    other = t.ones(5, 4, dtype=t.float64)
    with pytest.raises(ValueError, match="Expected all tensors to have the same size"):
        F.vmap(lambda a: F.vmap(lambda b, c: b + c)(a, other))(x)
    with pytest.raises(RuntimeError, match=r"vmap: It looks like you're calling \.item"):
        F.vmap(F.vmap(lambda b: b.sum().item()))(x)
    with pytest.raises(RuntimeError, match="vmap: inplace arithmetic"):
        F.vmap(lambda a: F.vmap(lambda b: a.mul_(b))(x[0]))(x[:, 0])
    with pytest.raises(ValueError, match="can not return a BatchedTensor when out_dim is None"):
        F.vmap(lambda a: F.vmap(lambda r: (r * 2, a.sum()), out_dims=(0, None))(a))(x)


def _outer_grad(m):
    t, F = _lib(m)
    w = _from(t, W).requires_grad_(True)
    out = F.vmap(F.vmap(lambda b: (b @ w).tanh().sum()))(_from(t, X))
    out.sum().backward()
    return _np(w.grad)


def test_nested_vmap_gradient_reaches_outer_leaf():
    np.testing.assert_allclose(_outer_grad("ndgrad"), _outer_grad("torch"), rtol=1e-10)


# ------------------------------------------------------------------------------ randomness
def _draws(f, randomness, B=4):
    ndgrad.manual_seed(7)
    out = nfunc.vmap(f, randomness=randomness)(ndgrad.ones(B, 3, dtype=ndgrad.float64))
    return out, ndgrad.rand(2)


_RANDOM_FS = {
    "randn": (lambda r: r * ndgrad.randn(3, dtype=ndgrad.float64), (3,)),
    "rand_like": (lambda r: ndgrad.rand_like(r) + r, (3,)),
    "randint": (lambda r: r + ndgrad.randint(0, 10, (3,)), None),
    "normal_": (lambda r: r.clone().normal_(), (3,)),
    "dropout": (lambda r: nF.dropout(r, 0.5), None),
}


@pytest.mark.parametrize("name", sorted(_RANDOM_FS))
def test_randomness_same_different_error(name):
    f, one = _RANDOM_FS[name]
    same, after_same = _draws(f, "same")
    assert all(ndgrad.equal(same[0], same[i]) for i in range(4))
    diff, _ = _draws(f, "different")
    assert not all(ndgrad.equal(diff[0], diff[i]) for i in range(4))
    with pytest.raises(RuntimeError, match="vmap: called random operation while in randomness "
                                           "error mode"):
        nfunc.vmap(f)(ndgrad.ones(4, 3, dtype=ndgrad.float64))
    if one is not None:         # "same": the generator advanced by one entry's draw
        ndgrad.manual_seed(7)
        first = ndgrad.randn(*one, dtype=ndgrad.float64) if name != "rand_like" else \
            ndgrad.rand(*one, dtype=ndgrad.float64)
        assert ndgrad.equal(after_same, ndgrad.rand(2))
        if name in ("randn", "normal_"):
            np.testing.assert_array_equal(_np(same[0]), _np(first))


@pytest.mark.parametrize("m", ["torch", "ndgrad"])
def test_randomness_same_with_batched_input_is_torchs_error(m):
    t, F = _lib(m)
    with pytest.raises(RuntimeError, match="Vmap does not currently support same "
                                           "randomness with a batched tensor input"):
        F.vmap(lambda r: t.bernoulli(r * 0.5), randomness="same")(t.ones(4, 3))


@pytest.mark.parametrize("m", ["torch", "ndgrad"])
def test_randomness_in_nested_levels(m):
    """An inner "same" level draws as its enclosing level: torch's structure."""
    t, F = _lib(m)
    o = F.vmap(F.vmap(lambda r: r * t.randn(4), randomness="same"),
               randomness="different")(t.ones(2, 3, 4))
    assert t.equal(o[0, 0], o[0, 1]) and not t.equal(o[0, 0], o[1, 0])
    o = F.vmap(F.vmap(lambda r: r * t.randn(4), randomness="different"),
               randomness="different")(t.ones(2, 3, 4))
    assert not t.equal(o[0, 0], o[0, 1]) and not t.equal(o[0, 0], o[1, 0])


# ------------------------------------------------------------------------------ forward mode
def _forward_cases(t, F):
    x, w = _from(t, X[0]), _from(t, W)

    def f(r):
        return (r.sin() @ w).tanh() * r.sum()

    def s(r):
        return (r.sin() * r.exp()).sum() + (r @ w).pow(2).sum()
    return {
        "vmap_jvp": lambda: F.vmap(lambda r: F.jvp(f, (r,), (r.cos(),))[1])(x),
        "vmap_jvp_unbatched_tangent": lambda: F.vmap(
            lambda r: F.jvp(f, (r,), (t.ones(4, dtype=t.float64),))[1])(x),
        "vmap_jvp_batched_tangent_only": lambda: F.vmap(
            lambda v: F.jvp(f, (x[0],), (v,))[1])(x),
        "vmap_jacfwd": lambda: F.vmap(F.jacfwd(f))(x),
        "vmap_hessian": lambda: F.vmap(F.hessian(s))(x),
        "jvp_vmap": lambda: F.jvp(F.vmap(f), (x,), (x.cos(),))[1],
        "vmap_vmap_jacfwd": lambda: F.vmap(F.vmap(F.jacfwd(f)))(_from(t, X)),
        "jvp_vmap_grad": lambda: F.jvp(F.vmap(F.grad(s)), (x,), (x.cos(),))[1],
        "jacfwd_vmap": lambda: F.jacfwd(F.vmap(f))(x),
        "hessian_vmap": lambda: F.hessian(lambda a: F.vmap(s)(a).sum())(x),
        "jacfwd_vmap_vmap": lambda: F.jacfwd(F.vmap(F.vmap(lambda q: q.exp() * q.sum())))(x),
        # tangents batched at an inner level, the primal unbatched or at the outer one (the
        # NTK tutorial's jvp of vjps): the primal is lifted to the tangents' level
        "vmap_vmap_jvp_unbatched_primal": lambda: F.vmap(lambda c: F.vmap(
            lambda v: F.jvp(lambda q: f(q * c), (x[0],), (v,))[1])(x))(x[:, 0]),
        "vmap_hvp_over_tangents": lambda: F.vmap(
            lambda v: F.jvp(F.grad(s), (x[0],), (v,))[1])(x),
        "vmap_vmap_jvp_outer_primal": lambda: F.vmap(lambda r: F.vmap(
            lambda v: F.jvp(f, (r,), (v,))[1])(x[:2]))(x),
    }


def _vjp_fn_cases(t, F):
    x, w = _from(t, X[0]), _from(t, W)

    def f(r):
        return (r.sin() @ w).tanh() * r.sum()
    _, vjp_fn = F.vjp(f, x[0])
    basis = t.eye(5, dtype=t.float64)

    def ntk(a, b):
        _, fn = F.vjp(f, a)
        return F.vmap(lambda v: F.jvp(f, (b,), fn(v))[1])(basis)
    return {
        # a vjp_fn made outside vmap, called on batched cotangents inside one
        "vmap_calls_outer_vjp_fn": lambda: F.vmap(lambda v: vjp_fn(v * 2.0)[0])(basis),
        "vmap_vmap_calls_outer_vjp_fn": lambda: F.vmap(lambda s: F.vmap(
            lambda v: vjp_fn(v * s)[0])(basis))(x[:, 0]),
        "ntk_vjp_jvp": lambda: F.vmap(F.vmap(ntk, (None, 0)), (0, None))(x[:2], x),
    }


@pytest.mark.parametrize("name", sorted(_vjp_fn_cases(torch, tfunc)))
def test_vjp_fn_under_vmap_matches_torch(name):
    _assert_matches(_vjp_fn_cases(ndgrad, nfunc)[name](), _vjp_fn_cases(torch, tfunc)[name]())


@pytest.mark.parametrize("name", sorted(_forward_cases(torch, tfunc)))
def test_forward_mode_under_vmap_matches_torch(name):
    _assert_matches(_forward_cases(ndgrad, nfunc)[name](), _forward_cases(torch, tfunc)[name]())


def test_forward_mode_under_vmap_matches_finite_differences():
    x = ndgrad.from_numpy(X[0].copy())
    w = ndgrad.from_numpy(W.copy())
    v = ndgrad.from_numpy(np.cos(X[0]))

    def f(r):
        return (r.sin() @ w).tanh()
    got = nfunc.vmap(lambda r, d: nfunc.jvp(f, (r,), (d,))[1])(x, v)
    eps = 1e-6
    fd = (_np(f(x + eps * v)) - _np(f(x - eps * v))) / (2 * eps)
    np.testing.assert_allclose(_np(got), fd, rtol=1e-6, atol=1e-8)


def _nested_inplace(m):
    t, F = _lib(m)
    sums = []
    for ind in (0, 1):
        x = t.ones(2, 3, 4, dtype=t.float64)
        F.vmap(F.vmap(lambda r: r.mul_(2), in_dims=ind))(x)
        sums.append(float(x.sum()))
    x = t.ones(3, 4, dtype=t.float64)
    F.vmap(lambda b: F.vmap(lambda r: r.mul_(2))(x) * b)(t.ones(2, dtype=t.float64))
    return sums + [float(x.sum())]


def test_nested_vmap_writes_inputs_in_place():
    """An in-place write into a mapped input reaches the caller's tensor at every level, also
    when flattening the levels needed a copy (in_dims=1)."""
    assert _nested_inplace("ndgrad") == _nested_inplace("torch") == [48.0, 48.0, 24.0]
