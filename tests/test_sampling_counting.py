"""Sampling (ndgrad/ops/sampling.py), counting (ops/counting.py), the factories of
ndgrad/_factories.py and ``gradient`` against PyTorch."""

import numpy as np
import pytest
import torch

import ndgrad


def _np(t):
    return t.detach().numpy()


def _same(a, b):
    """ndgrad result ``a`` equals torch result ``b`` (tensors, tuples of tensors)."""
    if isinstance(b, (tuple, list)):
        assert isinstance(a, (tuple, list)) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
        return
    assert tuple(a.shape) == tuple(b.shape)
    assert str(a.dtype).split(".")[1] == str(b.dtype).split(".")[1]
    np.testing.assert_allclose(_np(a), b.detach().numpy(), rtol=1e-6, atol=1e-12)


def _both(fn):
    _same(fn(ndgrad), fn(torch))


# ---------------------------------------------------------------------------- sampling
def test_normal_gradients_are_zero_with_torch_node_names():
    for lib in (torch, ndgrad):
        lib.manual_seed(0)
        m = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        s = lib.tensor([0.5, 1.0, 2.0], requires_grad=True)
        for out, wrt, node in ((lib.normal(m, s), (m, s), "NormalBackward3"),
                               (lib.normal(m, 2.0), (m,), "NormalBackward1"),
                               (lib.normal(1.0, s), (s,), "NormalBackward2"),
                               (lib.bernoulli(s / 4), (s,), "BernoulliBackward0")):
            assert out.grad_fn.name() == node
            for g in lib.autograd.grad((out * 3).sum(), wrt):
                assert _np(g).tolist() == [0.0, 0.0, 0.0]


def test_normal_broadcasts_and_checks_std():
    ndgrad.manual_seed(1)
    assert tuple(ndgrad.normal(ndgrad.zeros(2, 1), ndgrad.ones(3)).shape) == (2, 3)
    assert tuple(ndgrad.normal(0.0, 1.0, (4, 2), dtype=ndgrad.float64).shape) == (4, 2)
    for lib in (torch, ndgrad):
        with pytest.raises(RuntimeError, match="normal expects"):
            lib.normal(lib.zeros(2), -lib.ones(2))


def test_seeded_draws_repeat():
    ndgrad.manual_seed(3)
    a = ndgrad.empty(5).normal_()
    ndgrad.manual_seed(3)
    b = ndgrad.empty(5).normal_()
    assert _np(a).tolist() == _np(b).tolist()


@pytest.mark.parametrize("call,node", [
    ("uniform_(2, 3)", "UniformBackward0"), ("normal_(1, 2)", "NormalBackward0"),
    ("cauchy_()", "CauchyBackward0"), ("exponential_(2)", "ExponentialBackward0"),
    ("geometric_(0.3)", "GeometricBackward0"), ("log_normal_()", "LogNormalBackward0"),
    ("random_(1, 5)", "RandomBackward0"), ("random_(5)", "RandomBackward1"),
    ("random_()", "RandomBackward2"), ("bernoulli_(0.3)", "BernoulliBackward2")])
def test_inplace_fills(call, node):
    for lib in (torch, ndgrad):
        x = lib.ones(1000, dtype=lib.float64, requires_grad=True)
        y = x * 1
        eval("y." + call)  # noqa: S307
        assert y.grad_fn.name() == node and y._version == 1
        (g,) = lib.autograd.grad(y.sum(), x)
        assert not _np(g).any()
        with pytest.raises(RuntimeError, match="leaf Variable"):
            eval("x." + call)  # noqa: S307
    v = _np(ndgrad.empty(2000, dtype=ndgrad.float64).uniform_(2, 3))
    assert v.min() >= 2 and v.max() < 3
    g = _np(ndgrad.empty(2000).geometric_(0.5))
    assert g.min() >= 1 and (g == np.round(g)).all() and abs(g.mean() - 2) < 0.2
    r = _np(ndgrad.empty(2000, dtype=ndgrad.int64).random_(1, 5))
    assert set(r.tolist()) == {1, 2, 3, 4}


def test_fill_errors_match_torch():
    for call in ("uniform_(2, 1)", "exponential_(-1)", "geometric_(0)", "log_normal_(0, 0)",
                 "cauchy_(0, 0)", "normal_(0, -1)"):
        msgs = []
        for lib in (torch, ndgrad):
            with pytest.raises(RuntimeError) as e:
                eval("t." + call, {"t": lib.ones(3)})  # noqa: S307
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1]


def test_multinomial():
    ndgrad.manual_seed(0)
    w = ndgrad.tensor([[0.0, 1.0, 0.0, 3.0], [1.0, 1.0, 1.0, 1.0]])
    s = ndgrad.multinomial(w, 2)
    assert s.dtype == ndgrad.int64 and tuple(s.shape) == (2, 2)
    assert sorted(_np(s)[0].tolist()) == [1, 3]
    assert len(set(_np(s)[1].tolist())) == 2
    assert set(_np(ndgrad.multinomial(w[0], 50, True)).tolist()) <= {1, 3}
    for lib in (torch, ndgrad):
        with pytest.raises(RuntimeError, match="without replacement"):
            lib.multinomial(lib.ones(3), 4)


# ---------------------------------------------------------------------------- counting
X = np.array([[3, 1, 2], [1, 3, 3], [3, 1, 2]])


@pytest.mark.parametrize("kw", [{}, {"return_inverse": True}, {"return_counts": True},
                                {"return_inverse": True, "return_counts": True, "dim": 0},
                                {"return_counts": True, "dim": 1}])
def test_unique(kw):
    _both(lambda lib: lib.unique(lib.tensor(X), **kw))
    _both(lambda lib: lib.unique_consecutive(lib.tensor(X), **kw))
    _both(lambda lib: lib.tensor(X).unique(**kw))


@pytest.mark.parametrize("kw", [{}, {"return_inverse": True, "return_counts": True},
                                {"sorted": False, "return_inverse": True}])
def test_unique_keeps_every_nan(kw):
    # NaN != NaN: each one is its own value, sorted last in the order they occur
    nan = float("nan")
    _both(lambda lib: lib.unique(lib.tensor([2.0, nan, 1.0, nan, 2.0]), **kw))
    kw = {k: v for k, v in kw.items() if k != "sorted"}
    _both(lambda lib: lib.unique_consecutive(lib.tensor([nan, nan, 1.0, 1.0]), **kw))


@pytest.mark.parametrize("src", ["m.unique(m.tensor([1j, 1j]))",
                                 "m.unique(m.tensor([1j, 1j]), dim=0)",
                                 "m.unique_consecutive(m.tensor([1j, 1j]))"])
def test_unique_refuses_complex(src):
    with pytest.raises(NotImplementedError) as te:
        eval(src, {"m": torch})
    with pytest.raises(NotImplementedError) as ne:
        eval(src, {"m": ndgrad})
    assert str(ne.value) == str(te.value)


def test_bincount_histograms_indices():
    _both(lambda lib: lib.bincount(lib.tensor([0, 2, 2, 5])))
    _both(lambda lib: lib.bincount(lib.tensor([0, 2, 2]), lib.tensor([1.0, 2.0, 0.5]), 5))
    _both(lambda lib: lib.histc(lib.tensor([1.0, 2.0, 1.0, 5.0]), bins=4))
    _both(lambda lib: lib.histc(lib.tensor([1.0, 2.0, 1.0]), bins=4, min=0, max=3))
    _both(lambda lib: lib.histogram(lib.tensor([1.0, 2.0, 1.0]), bins=4, range=(0.0, 3.0),
                                    weight=lib.tensor([1.0, 2.0, 4.0]), density=True))
    _both(lambda lib: lib.histogramdd(lib.tensor([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0]]),
                                      bins=[3, 2]))
    _both(lambda lib: lib.unravel_index(lib.tensor([4, 1, -1]), (2, 3)))
    _both(lambda lib: lib.tril_indices(3, 4, -1))
    _both(lambda lib: lib.triu_indices(4, 3, 1, dtype=lib.int32))


@pytest.mark.parametrize("dtype", ["uint8", "int64", "bool"])
def test_histc_refuses_integers_with_torchs_words(dtype):
    msgs = []
    for m in (torch, ndgrad):
        with pytest.raises(NotImplementedError) as e:
            m.ones(3, dtype=getattr(m, dtype)).histc(bins=4)
        msgs.append(str(e.value))
    assert msgs[1] == msgs[0]


# ---------------------------------------------------------------------------- factories
def test_factories():
    for lib in (torch, ndgrad):
        assert lib.empty_strided((2, 3), (1, 2)).stride() == (1, 2)
        assert lib.empty_permuted((2, 3, 4), (0, 2, 1)).stride() == (12, 1, 3)
        assert lib.ones(2, dtype=lib.float64).new_empty_strided((2, 2), (1, 2)).dtype \
            == lib.float64
    _both(lambda lib: lib.scalar_tensor(3))
    _both(lambda lib: lib.scalar_tensor(3, dtype=lib.int64))
    _both(lambda lib: lib.logspace(0, 2, 3))
    _both(lambda lib: lib.logspace(0, 2, 4, base=2.0, dtype=lib.int64))
    _both(lambda lib: lib.logspace(lib.tensor(0.0), lib.tensor(1.0), 3))


def test_resize():
    for lib in (torch, ndgrad):
        t = lib.arange(6.0)
        assert t.resize_(2, 2) is t and t._version == 1
        assert _np(t).tolist() == [[0.0, 1.0], [2.0, 3.0]]
        t.resize_(2, 2)
        assert t._version == 1
        t.resize_as_(lib.ones(3))
        assert tuple(t.shape) == (3,)
        with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
            lib.ones(2, requires_grad=True).resize_(3)


# ---------------------------------------------------------------------------- gradient
@pytest.mark.parametrize("kw", [{}, {"spacing": 2.0}, {"edge_order": 2},
                                {"spacing": [2.0, 0.5], "dim": (0, 1)},
                                {"spacing": "coords", "dim": (1,), "edge_order": 2}])
def test_gradient(kw):
    a = np.random.default_rng(0).standard_normal((4, 5))
    coords = np.array([0.0, 0.5, 1.5, 1.7, 3.0])
    res, grads = [], []
    for lib in (torch, ndgrad):
        k = dict(kw)
        if k.get("spacing") == "coords":
            k["spacing"] = [lib.tensor(coords)]
        x = lib.tensor(a, requires_grad=True)
        out = lib.gradient(x, **k)
        res.append(out)
        grads.append(lib.autograd.grad(sum((o * o).sum() for o in out), x)[0])
        assert out[0].grad_fn.name() == "CatBackward0"
    _same(res[1], res[0])
    _same(grads[1], grads[0])
    for lib in (torch, ndgrad):
        with pytest.raises(RuntimeError, match="edge_order"):
            lib.gradient(lib.ones(3, 3), edge_order=3)
