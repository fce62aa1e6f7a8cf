"""mode's index is the one torch's CPU kernel reports (Note [mode's index]): for rows longer
than 16 that is where std::sort's unstable partitions leave the winning run's last element, not
the value's last occurrence; checked against torch on random, patterned, NaN and batched rows,
and the replayed sort itself against sorted()."""

from __future__ import annotations

import random

import numpy as np
import torch

import ndgrad
from ndgrad.ops._std_sort import std_sort_order


def _check(t):
    want = torch.mode(t)
    got = ndgrad.mode(ndgrad.from_numpy(t.numpy().copy()))
    np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())


def test_mode_index_matches_torch():
    g = torch.Generator().manual_seed(0)
    for n, hi in ((5, 3), (17, 4), (50, 6), (300, 20), (1000, 7)):
        _check(torch.randint(0, hi, (n,), generator=g))
    for n in (40, 129):
        _check(torch.tensor([min(i, n - i) for i in range(n)]))      # organ pipe
        _check(torch.arange(n).flip(0) % 5)
    x = torch.randint(0, 5, (60,), generator=g).double()
    x[::7] = float("nan")
    _check(x)
    b = torch.randint(0, 4, (3, 40, 2), generator=g)
    for dim, keep in ((1, False), (-1, True), (0, False)):
        want = torch.mode(b, dim, keep)
        got = ndgrad.mode(ndgrad.tensor(b.numpy()), dim, keep)
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
    f = torch.randint(0, 3, (33,), generator=g).to(torch.bfloat16)
    want = torch.mode(f)
    got = ndgrad.tensor(f.float().numpy()).to(ndgrad.bfloat16).mode()
    assert got.indices.item() == want.indices.item()


def test_replayed_sort_orders_values():
    rnd = random.Random(0)
    for _ in range(50):
        v = [rnd.randint(0, 9) for _ in range(rnd.randint(0, 200))]
        assert [v[i] for i in std_sort_order(v)] == sorted(v)
    v = list(range(64)) * 3                 # deep partitions
    assert [v[i] for i in std_sort_order(v)] == sorted(v)


def _same(got, want):
    np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    np.testing.assert_array_equal(got.values.float().numpy() if want.values.dtype == torch.bfloat16
                                  else got.values.numpy(),
                                  want.values.float().numpy() if want.values.dtype == torch.bfloat16
                                  else want.values.numpy())
    assert str(got.values.dtype).split(".")[-1] == str(want.values.dtype).split(".")[-1]
    assert tuple(got.indices.shape) == tuple(want.indices.shape)


def _nd(t):
    if t.dtype == torch.bfloat16:
        return ndgrad.tensor(t.float().numpy()).to(ndgrad.bfloat16)
    return ndgrad.tensor(t.numpy())


def test_vectorized_mode_matches_torch_on_ties_dims_dtypes():
    g = torch.Generator().manual_seed(1)
    for n in (1, 2, 15, 16, 17, 18, 31, 33, 64, 100, 257):
        for hi in (2, 3, 7, 50):
            x = torch.randint(0, hi, (6, n), generator=g)
            _same(ndgrad.mode(_nd(x)), torch.mode(x))
    x = torch.randint(-3, 4, (3, 70, 5), generator=g)
    for dt in (torch.int8, torch.int64, torch.float16, torch.bfloat16, torch.float32,
               torch.float64, torch.bool, torch.uint8):
        y = x.to(dt)
        for dim in (0, 1, -1):
            for keep in (False, True):
                _same(ndgrad.mode(_nd(y), dim, keep), torch.mode(y, dim, keep))
                _same(_nd(y).mode(dim, keepdim=keep), y.mode(dim, keepdim=keep))


def test_vectorized_mode_nan_signed_zero_and_empty():
    g = torch.Generator().manual_seed(2)
    x = torch.randint(0, 4, (8, 45), generator=g).double()
    x[1, ::5] = float("nan")                 # rows with NaN beside rows without
    x[4, :30] = float("nan")
    x[6] = float("nan")
    _same(ndgrad.mode(_nd(x)), torch.mode(x))
    z = torch.tensor([0.0, -0.0, 1.0] * 12).reshape(2, 18)
    z[1] = z[1].flip(0)
    _same(ndgrad.mode(_nd(z)), torch.mode(z))
    assert np.array_equal(np.signbit(ndgrad.mode(_nd(z)).values.numpy()),
                          np.signbit(torch.mode(z).values.numpy()))
    e = torch.empty(0, 40)
    _same(ndgrad.mode(_nd(e), 1), torch.mode(e, 1))
    _same(ndgrad.mode(_nd(e), 1, True), torch.mode(e, 1, True))
    for lib, t in ((torch, e), (ndgrad, _nd(e))):
        try:
            lib.mode(t, 0)
        except IndexError as err:
            assert "Expected reduction dim 0 to have non-zero size" in str(err)
        else:
            raise AssertionError("no error")


def _killer(n):
    """McIlroy's adversary run against the replayed std::sort: an input that drives the
    median-of-three partitions to the depth limit, where std::sort switches to heapsort."""
    val = [n] * n                            # n: still undecided
    state = {"solid": 0, "cand": 0}

    class Item:
        def __init__(self, i):
            self.i = i

        def __lt__(self, other):
            x, y = self.i, other.i
            if val[x] == n and val[y] == n:
                val[x if x == state["cand"] else y] = state["solid"]
                state["solid"] += 1
            if val[x] == n:
                state["cand"] = x
            elif val[y] == n:
                state["cand"] = y
            return val[x] < val[y]

    std_sort_order([Item(i) for i in range(n)])
    for i in range(n):
        if val[i] == n:
            val[i] = state["solid"]
            state["solid"] += 1
    return np.array(val)


def test_vectorized_mode_heapsort_fallback_matches_torch(monkeypatch):
    import ndgrad.ops._std_sort as S
    sizes = []
    real = S._heapsort
    monkeypatch.setattr(S, "_heapsort", lambda v, p, f, last: (sizes.append(last - f),
                                                               real(v, p, f, last)))
    k = _killer(200)
    for top in (2, 5):
        x = torch.from_numpy(np.minimum(k, 200 - top))      # the mode: the merged largest
        _same(ndgrad.mode(_nd(x)), torch.mode(x))
    assert sizes                              # the depth limit was reached


def test_vectorized_mode_agrees_with_the_replay():
    from ndgrad.ops._std_sort import mode_position, mode_positions
    rng = np.random.default_rng(0)
    for n in (20, 40, 90):
        rows = rng.integers(0, rng.integers(2, 12), (40, n))
        want = [mode_position(r) for r in rows.tolist()]
        assert mode_positions(rows).tolist() == want
