"""float64 -> float16/bfloat16 conversions round through float32 as torch's do (Note [Double to
half] in ndgrad/_dtype.py), on every path: casts, creation, copies, in-place results, fills."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ndgrad


def _doubles() -> np.ndarray:
    """float64 values whose direct rounding to float16 differs from rounding through float32,
    plus ordinary ones."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal(200_000) * rng.choice([1e-3, 1.0, 1e3], 200_000)
    direct = a.astype(np.float16)
    via = a.astype(np.float32).astype(np.float16)
    tricky = a[direct != via]
    assert tricky.size >= 5
    return np.concatenate([tricky, a[:20], [0.0, -0.0, np.inf, -np.nan, 65520.0, 1e-8]])


A = _doubles()
DTYPES = [(ndgrad.float16, torch.float16), (ndgrad.bfloat16, torch.bfloat16)]


def _paths(lib, dt):
    x = lib.tensor(A, dtype=lib.float64)
    n = len(A)

    def into(fn):
        z = lib.zeros(n, dtype=dt)
        r = fn(z)
        return z if r is None else r

    return {
        "to": x.to(dt), "type": x.type(dt),
        "tensor(array)": lib.tensor(A, dtype=dt), "tensor(list)": lib.tensor(A.tolist(), dtype=dt),
        "tensor(tensor)": lib.tensor(x, dtype=dt), "as_tensor(array)": lib.as_tensor(A, dtype=dt),
        "as_tensor(tensor)": lib.as_tensor(x, dtype=dt), "new_tensor": x.new_tensor(A, dtype=dt),
        "copy_": into(lambda z: z.copy_(x)), "iadd": into(lambda z: z.__iadd__(x)),
        "add_": into(lambda z: z.add_(x)), "setitem": into(lambda z: z.__setitem__(slice(None), x)),
        "out=": into(lambda z: lib.add(x, 0, out=z)),
        "fill_": lib.stack([lib.zeros((), dtype=dt).fill_(float(v)) for v in A[:8]]),
        "full": lib.stack([lib.full((), float(v), dtype=dt) for v in A[:8]]),
        "setitem scalar": lib.stack([_set0(lib.zeros(1, dtype=dt), float(v)) for v in A[:8]]),
        "masked_fill": lib.stack([lib.zeros(1, dtype=dt).masked_fill(lib.ones(1, dtype=lib.bool),
                                                                     float(v))[0] for v in A[:8]]),
    }


def _set0(z, v):
    z[0] = v
    return z[0]


@pytest.mark.filterwarnings("ignore:To copy construct")
@pytest.mark.parametrize("dt, tdt", DTYPES, ids=["float16", "bfloat16"])
def test_double_to_half_rounds_through_float32(dt, tdt):
    ours, theirs = _paths(ndgrad, dt), _paths(torch, tdt)
    assert ours.keys() == theirs.keys()
    for name in ours:
        assert ours[name].dtype == dt, name
        got = ours[name].float().numpy()
        want = theirs[name].float().numpy()
        np.testing.assert_array_equal(got, want, err_msg=name)
