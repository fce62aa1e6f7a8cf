"""The indexing family (ndgrad/ops/indexing.py) against PyTorch, beyond what tests/op_db.py
covers: scatter_reduce(prod) and index_reduce (whose tangents PyTorch does not compute, so
ndgrad's are checked against finite differences), ties of amax/amin, zeros of prod, errors,
in-place forms that raise, saved values and the non-differentiable queries."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ndgrad
import ndgrad.autograd.forward_ad as nfw

warnings.filterwarnings("ignore", message="index_reduce\\(\\) is in beta")


def _np(t):
    return t.detach().numpy()


def _both(arrays, requires_grad=True):
    nd = [ndgrad.tensor(a, dtype=ndgrad.float64, requires_grad=requires_grad) for a in arrays]
    tt = [torch.tensor(a, dtype=torch.float64, requires_grad=requires_grad) for a in arrays]
    return nd, tt


# Each case: (name, fn(m, x, src), shapes); x and src float64, ties and zeros built in.
_IDX = [[0, 2, 2], [1, 1, 1]]
_X = np.array([[2.0, -1.0, 3.0], [0.0, 4.0, -2.0]])
_S = np.array([[2.0, 3.0, 3.0], [0.0, 0.5, 0.0]])      # ties with x and among themselves, zeros
CASES = [
    (f"scatter_reduce_{r}_{inc}", lambda m, x, s, r=r, inc=inc: x.scatter_reduce(
        1, m.tensor(_IDX), s, r, include_self=inc))
    for r in ("prod", "amax", "amin", "mean", "sum") for inc in (True, False)
] + [
    (f"index_reduce_{r}_{inc}", lambda m, x, s, r=r, inc=inc: x.index_reduce(
        1, m.tensor([2, 0, 2]), s, r, include_self=inc))
    for r in ("prod", "amax", "amin", "mean") for inc in (True, False)
]


_S1 = np.array([[2.0, 3.0, 3.0], [0.0, 0.5, 1.5]])     # one zero per position


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_reduce_gradients_match_torch(name, fn):
    (x, s), (tx, ts) = _both([_X, _S1 if "prod" in name else _S])
    y, ty = fn(ndgrad, x, s), fn(torch, tx, ts)
    np.testing.assert_allclose(_np(y), ty.detach().numpy(), rtol=1e-12)
    assert type(y.grad_fn).__name__ == type(ty.grad_fn).__name__
    g = np.random.default_rng(0).standard_normal(_X.shape)
    got = ndgrad.autograd.grad(y, (x, s), ndgrad.tensor(g), create_graph=True)
    want = torch.autograd.grad(ty, (tx, ts), torch.tensor(g), create_graph=True)
    for a, b in zip(got, want):
        np.testing.assert_allclose(_np(a), b.detach().numpy(), rtol=1e-10, atol=1e-12)
    # double backward (prod's gradient depends on x and src)
    w = [np.random.default_rng(1).standard_normal(a.shape) for a in (_X, _S)]
    ng = [a for a in got if a.requires_grad]
    tg = [a for a in want if a.requires_grad]
    assert len(ng) == len(tg)
    if tg:
        gg = ndgrad.autograd.grad(sum((a * ndgrad.tensor(v)).sum() for a, v in zip(got, w)),
                                  (x, s), allow_unused=True)
        tgg = torch.autograd.grad(sum((a * torch.tensor(v)).sum() for a, v in zip(want, w)),
                                  (tx, ts), allow_unused=True)
        for a, b in zip(gg, tgg):
            if b is None:
                assert a is None or not _np(a).any()
            else:
                np.testing.assert_allclose(_np(a), b.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name,fn", [c for c in CASES if "prod" in c[0]],
                         ids=[c[0] for c in CASES if "prod" in c[0]])
def test_prod_with_zeros_gradients_match_torch(name, fn):
    """Two zeros of src at one position: first derivatives as PyTorch's, and PyTorch's error
    for the (unsupported) double backward."""
    (x, s), (tx, ts) = _both([_X, _S])
    y, ty = fn(ndgrad, x, s), fn(torch, tx, ts)
    g = np.random.default_rng(0).standard_normal(_X.shape)
    got = ndgrad.autograd.grad(y, (x, s), ndgrad.tensor(g), retain_graph=True)
    want = torch.autograd.grad(ty, (tx, ts), torch.tensor(g), retain_graph=True)
    for a, b in zip(got, want):
        np.testing.assert_allclose(_np(a), b.numpy(), rtol=1e-12, atol=1e-12)
    gs = torch.autograd.grad(ty, ts, torch.tensor(g), create_graph=True)[0]
    with pytest.raises(RuntimeError) as want_err:
        gs.sum().backward()
    gs = ndgrad.autograd.grad(y, s, ndgrad.tensor(g), create_graph=True)[0]
    with pytest.raises(RuntimeError) as got_err:
        gs.sum().backward()
    assert str(got_err.value) == str(want_err.value)


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_reduce_jvp_matches_finite_differences(name, fn):
    if "amax" in name or "amin" in name:
        xs, ss = _X + 0.01 * np.arange(6).reshape(2, 3), _S + 0.003 * np.arange(6).reshape(2, 3)
    else:
        xs, ss = _X, _S
    rng = np.random.default_rng(2)
    tx, ts = rng.standard_normal(xs.shape), rng.standard_normal(ss.shape)
    with nfw.dual_level():
        x = nfw.make_dual(ndgrad.tensor(xs), ndgrad.tensor(tx))
        s = nfw.make_dual(ndgrad.tensor(ss), ndgrad.tensor(ts))
        jvp = _np(nfw.unpack_dual(fn(ndgrad, x, s)).tangent)
    eps = 1e-6
    plus = _np(fn(ndgrad, ndgrad.tensor(xs + eps * tx), ndgrad.tensor(ss + eps * ts)))
    minus = _np(fn(ndgrad, ndgrad.tensor(xs - eps * tx), ndgrad.tensor(ss - eps * ts)))
    np.testing.assert_allclose(jvp, (plus - minus) / (2 * eps), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,fn", CASES[::3], ids=[c[0] for c in CASES[::3]])
def test_reduce_batched_gradients(name, fn):
    x, s = _both([_X, _S])[0]
    y = fn(ndgrad, x, s)
    gs = np.random.default_rng(3).standard_normal((3,) + _X.shape)
    batched = ndgrad.autograd.grad(y, (x, s), ndgrad.tensor(gs), retain_graph=True,
                                   is_grads_batched=True)
    for k in range(3):
        row = ndgrad.autograd.grad(y, (x, s), ndgrad.tensor(gs[k]), retain_graph=True)
        for b, r in zip(batched, row):
            np.testing.assert_allclose(_np(b)[k], _np(r), rtol=1e-12, atol=1e-12)


def test_saved_values_match_torch():
    def run(m):
        x = m.zeros(3, 4, dtype=m.float64, requires_grad=True)
        s = m.ones(2, 4, dtype=m.float64, requires_grad=True)
        fn = x.index_add(0, m.tensor([0, 2]), s, alpha=2).grad_fn
        r = x.scatter_reduce(0, m.tensor([[0, 1, 2, 0]]), s[:1], "amax", include_self=False)
        return (fn._saved_alpha, fn._saved_dim, fn._saved_source_dim,
                _np(fn._saved_index).tolist(), r.grad_fn._saved_reduce,
                r.grad_fn._saved_include_self, tuple(r.grad_fn._saved_src.shape))
    got = run(ndgrad)
    want = run(torch)
    assert got == want


def test_legacy_scatter_reduce_has_no_derivative():
    for m in (ndgrad, torch):
        x = m.ones(3, dtype=m.float64, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = x.scatter(0, m.tensor([0, 0]), 2.0, reduce="multiply")
        assert y.tolist() == [4.0, 1.0, 1.0]
        with pytest.raises(RuntimeError, match="derivative for aten::scatter is not implemented"):
            y.sum().backward()


# ---------------------------------------------------------------------------- errors
def _error_cases(m):
    x, s = m.zeros(3, 4), m.ones(3, 4)
    t = m.tensor
    return [
        lambda: x.scatter(0, t([[5, 1]]), s),
        lambda: x.scatter(2, t([[0, 1]]), s),
        lambda: x.scatter(0, t([[0.0, 1]]), s),
        lambda: x.scatter(0, t([0, 1]), s),
        lambda: x.scatter(0, t([[0, 1, 0, 0, 0]]), s[:, :2]),
        lambda: x.scatter(0, t([[0, 1]]), s, reduce="max"),
        lambda: x.long().scatter(0, t([[0]]), s),
        lambda: x.scatter_add(0, t([[0, 1]]), s.double()),
        lambda: x.scatter_reduce(0, t([[0, 1]]), s, "foo"),
        lambda: x.index_add(0, t([0, 5]), s[:2]),
        lambda: x.index_add(0, t([[0, 1]]), s[:2]),
        lambda: x.index_add(0, t([0, 1, 2]), s[:2]),
        lambda: x.index_add(0, t([0, 1]), m.ones(2, 3)),
        lambda: x.index_add(0, t([0, 1]), s[:2].double()),
        lambda: x.index_copy(0, t([0, 1], dtype=m.int32), s[:2]),
        lambda: x.index_copy(0, t([0, 5]), s[:2]),
        lambda: x.index_fill(0, t([0, 1], dtype=m.int32), 1.0),
        lambda: x.index_fill(0, t([0, 5]), 1.0),
        lambda: x.index_fill(0, t([0, 1]), m.ones(2)),
        lambda: x.index_reduce(0, t([0, 1]), s[:2], "sum"),
        lambda: x.index_reduce(0, t([0, 5]), s[:2], "prod"),
        lambda: x.masked_select(x.long()),
        lambda: x.masked_select(m.ones(5, dtype=m.bool)),
        lambda: x.masked_scatter(m.ones(3, 4, dtype=m.bool), m.ones(5)),
        lambda: x.masked_scatter(x.long(), s),
        lambda: x.take(t([12])),
        lambda: x.take(t([1], dtype=m.int32)),
        lambda: x.put(t([1, 2]), m.ones(3)),
        lambda: x.put(t([-13]), m.ones(1)),
        lambda: x.take_along_dim(t([1]), 0),
        lambda: x.take_along_dim(t([[1, 1, 1]]), 0),
        lambda: m.searchsorted(m.tensor([1.0, 2]), m.ones(3), side="x"),
        lambda: m.bucketize(m.ones(3), m.ones(2, 2)),
        lambda: m.isin(m.ones(2, dtype=m.complex64), m.ones(2, dtype=m.complex64)),
        lambda: m.ones(2, dtype=m.complex128, requires_grad=True).scatter_reduce(
            0, t([1]), m.ones(1, dtype=m.complex128), "sum"),
        lambda: m.ones(2, dtype=m.complex64).scatter_reduce(0, t([1]), m.ones(
            1, dtype=m.complex64), "amax"),
        lambda: m.ones(2, dtype=m.complex64).index_reduce(0, t([1]), m.ones(
            1, dtype=m.complex64), "mean"),
        lambda: x.index_add(1, t([0, 1]), m.ones(3)),
        lambda: x.index_copy(0, t([0]), m.ones(4)),
        lambda: m.zeros(()).take_along_dim(t(0), 0),
    ]


@pytest.mark.parametrize("k", range(len(_error_cases(torch))))
def test_errors_match_torch(k):
    with pytest.raises(Exception) as want:
        _error_cases(torch)[k]()
    with pytest.raises(Exception) as got:
        _error_cases(ndgrad)[k]()
    assert type(got.value) is type(want.value)
    assert str(got.value).splitlines()[0] == str(want.value).splitlines()[0]


@pytest.mark.parametrize("call", [
    lambda x, t: x.scatter_(0, t([[0, 9]]), ndgrad.ones(1, 2)),
    lambda x, t: x.scatter_add_(1, t([[0, 1, 2, 3, 4]]), ndgrad.ones(1, 5)),
    lambda x, t: x.index_add_(0, t([0, 3]), ndgrad.ones(2, 4)),
    lambda x, t: x.index_copy_(0, t([0, -1]), ndgrad.ones(2, 4)),
    lambda x, t: x.put_(t([0, 12]), ndgrad.ones(2)),
    lambda x, t: x.masked_scatter_(x == 0, ndgrad.ones(3)),
    lambda x, t: x.index_reduce_(0, t([0, 7]), ndgrad.ones(2, 4), "amax"),
])
def test_inplace_error_leaves_input_untouched(call):
    x = ndgrad.zeros(3, 4)
    v = x._version
    with pytest.raises((RuntimeError, IndexError)):
        call(x, ndgrad.tensor)
    assert x._version == v and not _np(x).any()


def test_inplace_forms_match_torch():
    for m in (ndgrad, torch):
        x = m.zeros(2, 3)
        v = x._version
        r = x.scatter_(1, m.tensor([[2], [0]]), 1.0).index_fill_(0, m.tensor([1]), 3.0)
        r = r.put_(m.tensor([0]), m.tensor([5.0]), accumulate=True)
        assert r is x and x._version > v
        if m is ndgrad:
            got = _np(x)
        else:
            np.testing.assert_array_equal(got, x.numpy())


# ---------------------------------------------------------------------------- queries
@pytest.mark.parametrize("fn", [
    lambda m: m.nonzero(m.tensor([[0, 1], [2, 0]])),
    lambda m: m.tensor([[0.0, 1], [2, 0]]).nonzero(as_tuple=True),
    lambda m: m.nonzero(m.tensor(3.0), as_tuple=True),
    lambda m: m.nonzero(m.tensor(0.0)),
    lambda m: m.argwhere(m.tensor([True, False, True])),
    lambda m: m.isin(m.tensor([1, 2, 3, 4]), m.tensor([2, 4])),
    lambda m: m.isin(m.tensor([1.0, 2.0]), 2.0, invert=True),
    lambda m: m.searchsorted(m.tensor([1.0, 3, 5]), m.tensor([[0.0, 3], [5, 6]]), right=True),
    lambda m: m.searchsorted(m.tensor([[1, 3], [2, 4]]), m.tensor([[3], [3]]), side="left"),
    lambda m: m.searchsorted(m.tensor([5, 1, 3]), 3, sorter=m.tensor([1, 2, 0])),
    lambda m: m.bucketize(m.tensor([0.5, 1.0, 2.5]), m.tensor([1.0, 2.0]), out_int32=True),
])
def test_queries_match_torch(fn):
    got, want = fn(ndgrad), fn(torch)
    if isinstance(want, tuple):
        assert len(got) == len(want)
    else:
        got, want = (got,), (want,)
    for a, b in zip(got, want):
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        np.testing.assert_array_equal(_np(a), b.numpy())


# ---------------------------------------------------------------------------- None/bool/... mixes
# Every combination (up to 3 items for 0-d and 1-d tensors, 2 for 2-d) of None, Python and
# 0-d tensor bools, ``...``, ints, slices and index lists: PyTorch's shapes, values, gradients
# and errors, reading and writing (bools are new dims indexed by [0] or []; an ``...`` that
# spans no dim leaves the advanced items around it adjacent).
_ATOMS = [None, True, False, Ellipsis, 0, -1, slice(None), slice(1, None), ("T", True),
          ("T", False), ("T", 0), ("T", [0])]


def _as_index(lib, combo):
    return tuple(lib.tensor(a[1]) if isinstance(a, tuple) else a for a in combo)


def _index_outcome(lib, base, combo):
    data = np.arange(1.0, 1.0 + int(np.prod(base))).reshape(base)
    idx = _as_index(lib, combo)
    try:
        x = lib.tensor(data, requires_grad=True)
        y = x[idx]
        y.sum().backward()
        w = lib.tensor(data)
        w[idx] = -1.0
        return (tuple(y.shape), y.detach().numpy().tolist(), x.grad.numpy().tolist(),
                w.numpy().tolist())
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return type(e).__name__, str(e).replace("torch", "ndgrad")


@pytest.mark.parametrize("base", [(), (3,), (2, 3)], ids=["0-d", "1-d", "2-d"])
def test_none_bool_ellipsis_mixes_match_torch(base):
    import itertools
    bad = []
    for k in range(1, 4 if len(base) < 2 else 3):
        for combo in itertools.product(_ATOMS, repeat=k):
            ours, theirs = (_index_outcome(lib, base, combo) for lib in (ndgrad, torch))
            if ours != theirs:
                bad.append((combo, ours, theirs))
    assert not bad, bad[:3]


def test_several_ellipses_past_the_last_dim_raise_like_torch():
    for idx in ((Ellipsis, Ellipsis, None), (Ellipsis, Ellipsis, True)):
        ours, theirs = (_index_outcome(lib, (3,), idx) for lib in (ndgrad, torch))
        assert ours == theirs and ours[0] == "IndexError"
    assert ndgrad.ones(())[None, False, ..., False].shape == (1, 0)
