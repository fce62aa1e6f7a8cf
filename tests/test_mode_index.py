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
