"""topk and kthvalue report torch's index among equal elements (Note [Selection among equal
elements]), median/nanmedian the position-ordered one; checked against torch on tie-heavy
random inputs."""

import numpy as np
import pytest
import torch

import ndgrad


def _inputs(seed, count):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(rng.choice([1, 2, 3, 5, 16, 17, 40, 64, 65, 130, 300]))
        kind = rng.integers(0, 5)
        if kind == 0:
            a = rng.integers(0, 3, n).astype(np.int64)
        elif kind == 1:
            a = rng.integers(-2, 3, n).astype(np.float32)
            a[rng.random(n) < 0.2] = np.nan
        elif kind == 2:
            a = rng.choice([0.0, -0.0, 1.0], n)
        elif kind == 3:
            a = rng.normal(size=n).astype(np.float32)      # no ties: the vectorized path
        else:
            a = rng.integers(0, 4, n).astype(np.int8)
        yield a, rng


@pytest.mark.parametrize("seed", range(4))
def test_topk_indices_as_torch(seed):
    for a, rng in _inputs(seed, 60):
        n = len(a)
        k = int(rng.integers(0, n + 1))
        largest, sorted_ = bool(rng.integers(0, 2)), bool(rng.integers(0, 2))
        ours = ndgrad.from_numpy(a.copy()).topk(k, largest=largest, sorted=sorted_)
        theirs = torch.from_numpy(a.copy()).topk(k, largest=largest, sorted=sorted_)
        assert ours.indices.tolist() == theirs.indices.tolist(), (a.tolist(), k, largest,
                                                                  sorted_)
        np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())


@pytest.mark.parametrize("seed", range(4))
def test_kthvalue_indices_as_torch(seed):
    for a, rng in _inputs(100 + seed, 60):
        k = int(rng.integers(1, len(a) + 1))
        ours = ndgrad.from_numpy(a.copy()).kthvalue(k)
        theirs = torch.from_numpy(a.copy()).kthvalue(k)
        assert ours.indices.item() == theirs.indices.item(), (a.tolist(), k)
        np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())


def test_median_indices_as_torch():
    for a, _ in _inputs(7, 60):
        for name in ("median", "nanmedian"):
            ours = getattr(ndgrad.from_numpy(a.copy()), name)(0)
            theirs = getattr(torch.from_numpy(a.copy()), name)(0)
            assert ours.indices.item() == theirs.indices.item(), (name, a.tolist())


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int32", "float64"])
def test_dims_dtypes_and_keepdim(dim, dtype):
    rng = np.random.default_rng(3)
    a = rng.integers(0, 3, (4, 70, 3)).astype(np.float32)
    t = torch.from_numpy(a).to(getattr(torch, dtype))
    x = ndgrad.from_numpy(a).to(getattr(ndgrad, dtype))
    for k in (1, 2, 3):
        assert x.topk(k, dim).indices.tolist() == t.topk(k, dim).indices.tolist()
        assert x.topk(k, dim, largest=False, sorted=False).indices.tolist() == \
            t.topk(k, dim, largest=False, sorted=False).indices.tolist()
        for keepdim in (False, True):
            assert x.kthvalue(k, dim, keepdim).indices.tolist() == \
                t.kthvalue(k, dim, keepdim).indices.tolist()


def test_topk_gradient_goes_to_the_reported_elements():
    a = np.array([1.0, 3.0, 3.0, 0.0, 3.0] * 20)
    x = ndgrad.tensor(a, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    x.topk(2).values.sum().backward()
    t.topk(2).values.sum().backward()
    assert x.grad.tolist() == t.grad.tolist()


@pytest.mark.parametrize("largest", [True, False])
def test_topk_partial_sort_path_with_ties_and_nan(largest):
    rng = np.random.default_rng(11)
    a = rng.integers(0, 6, (5, 1000)).astype(np.float64)
    a[rng.random(a.shape) < 0.01] = np.nan
    a[1, :] = 2.0                                     # one row all equal
    for k in (1, 2, 5, 15):
        ours = ndgrad.from_numpy(a.copy()).topk(k, largest=largest)
        theirs = torch.from_numpy(a.copy()).topk(k, largest=largest)
        assert ours.indices.tolist() == theirs.indices.tolist()


@pytest.mark.parametrize("seed", range(3))
def test_sort_and_argsort_indices_as_torch(seed):
    for a, rng in _inputs(200 + seed, 50):
        desc = bool(rng.integers(0, 2))
        stable = [None, False, True][int(rng.integers(0, 3))]
        kw = {} if stable is None else {"stable": stable}
        ours = ndgrad.from_numpy(a.copy()).sort(descending=desc, **kw)
        theirs = torch.from_numpy(a.copy()).sort(descending=desc, **kw)
        assert ours.indices.tolist() == theirs.indices.tolist(), (a.tolist(), desc, stable)
        np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
        assert ndgrad.from_numpy(a.copy()).argsort(descending=desc, stable=bool(stable)).tolist() \
            == torch.from_numpy(a.copy()).argsort(descending=desc, stable=bool(stable)).tolist()


@pytest.mark.parametrize("case", ["1-D int radix", "1-D int descending", "2-D int rows",
                                  "bool", "float with NaN", "dim 0"])
def test_sort_large_and_special_as_torch(case):
    rng = np.random.default_rng(5)
    a = {"1-D int radix": lambda: rng.integers(0, 5, 40000),
         "1-D int descending": lambda: rng.integers(0, 5, 3000),
         "2-D int rows": lambda: rng.integers(0, 5, (3, 40000)).astype(np.int32),
         "bool": lambda: rng.integers(0, 2, 5000).astype(bool),
         "float with NaN": lambda: np.where(rng.random(3000) < 0.1, np.nan,
                                            rng.integers(0, 3, 3000)).astype(np.float32),
         "dim 0": lambda: rng.integers(0, 3, (200, 3)).astype(np.float64)}[case]()
    for desc in (False, True):
        dim = 0 if case == "dim 0" else -1
        assert ndgrad.from_numpy(a.copy()).sort(dim, desc).indices.tolist() == \
            torch.from_numpy(a.copy()).sort(dim, desc).indices.tolist()


def test_vectorized_std_sort_replay_equals_the_scalar_one():
    from ndgrad.ops._std_sort import sort_rows, std_sort_order
    rng = np.random.default_rng(9)
    for _ in range(60):
        n, nr = int(rng.integers(1, 300)), int(rng.integers(1, 4))
        keys = rng.integers(0, int(rng.integers(1, 40)), (nr, n))
        got = sort_rows(keys)
        assert [got[r].tolist() for r in range(nr)] == \
            [std_sort_order(keys[r].tolist()) for r in range(nr)]


def test_sort_large_float_with_ties_as_torch():
    a = np.maximum(np.random.default_rng(2).normal(size=(2, 20000)), 0).astype(np.float32)
    for desc in (False, True):
        assert ndgrad.from_numpy(a.copy()).sort(descending=desc).indices.tolist() == \
            torch.from_numpy(a.copy()).sort(descending=desc).indices.tolist()


def test_vectorized_nth_element_replay_equals_the_scalar_one():
    from ndgrad.ops._std_sort import nth_element, nth_rows
    rng = np.random.default_rng(10)
    for _ in range(200):
        n, nr = int(rng.integers(1, 120)), int(rng.integers(1, 4))
        keys = rng.integers(0, int(rng.integers(1, n + 2)), (nr, n))
        nth = int(rng.integers(0, n))
        got = nth_rows(keys, nth)
        for r in range(nr):
            p = list(range(n))
            nth_element(keys[r].tolist(), p, 0, nth, n)
            assert got[r].tolist() == p


@pytest.mark.parametrize("sorted_", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int64", "uint8"])
def test_topk_nth_element_path_on_many_rows_as_torch(sorted_, dtype):
    # k * 64 > n: the rows go through the vectorized nth_element replay together (tie-free
    # rows too when not sorted), NaN and -0.0 included
    rng = np.random.default_rng(11)
    a = rng.integers(-3, 4, (6, 5, 90)).astype(dtype)
    if dtype.startswith("float"):
        a[0] = rng.normal(size=(5, 90))
        a[1][rng.random((5, 90)) < 0.2] = np.nan
        a[2][a[2] == 0] = -0.0
    for dim in (-1, 1):
        for k, largest in ((1, True), (2, False), (30, True), (89, False), (90, True)):
            if k > a.shape[dim]:
                continue
            ours = ndgrad.from_numpy(a.copy()).topk(k, dim, largest, sorted_)
            theirs = torch.from_numpy(a.copy()).topk(k, dim, largest, sorted_)
            assert ours.indices.tolist() == theirs.indices.tolist(), (dim, k, largest)
