"""relu compares with a shared read-only array of zeros (Note [Zero operands]): bitwise the
results of ``np.maximum(x, 0)`` for every dtype, layout and special value, and torch's."""

import numpy as np
import pytest
import torch

import ndgrad
from ndgrad.ops._workspace import zeros_operand

def _bytes(a):
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


SPECIAL = [-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf, 1e-45, -1e-45, 3.5, -2.0]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int32",
                                   "int64", "int8", "uint8"])
@pytest.mark.parametrize("layout", ["c", "t", "slice", "0d", "big"])
def test_relu_matches_scalar_maximum_bitwise(dtype, layout):
    rng = np.random.default_rng(0)
    base = rng.standard_normal((70000,) if layout == "big" else (6, 10)) * 4
    if dtype.startswith(("float", "bfloat")):
        base.reshape(-1)[:len(SPECIAL)] = SPECIAL
    x = ndgrad.tensor(base).to(getattr(ndgrad, dtype))
    if layout == "t":
        x = x.t()
    elif layout == "slice":
        x = x[:, ::3]
    elif layout == "0d":
        x = x.reshape(-1)[3]
    a = x.numpy()
    # x unless below zero: NaN (its payload) and -0.0 pass, as torch's relu (Note [Signed
    # zeros in max and min] in ndgrad/ops/_ties.py)
    want = np.where(a < 0, np.zeros((), a.dtype), a).astype(a.dtype, copy=False)
    for got in (ndgrad.relu(x), ndgrad.relu(x.clone()), x.clone().relu_()):
        g = np.asarray(got.numpy())
        assert g.dtype == want.dtype and g.shape == want.shape
        assert np.array_equal(_bytes(g), _bytes(want))
    if dtype in ("float32", "float64"):
        t = torch.relu(torch.from_numpy(np.ascontiguousarray(a)))
        np.testing.assert_array_equal(np.asarray(ndgrad.relu(x).numpy()), t.numpy())


def test_zero_operand_is_shared_and_read_only():
    z = zeros_operand((3, 4), np.dtype(np.float32))
    assert z is zeros_operand((3, 4), np.dtype(np.float32)) and not z.flags.writeable
    with pytest.raises(ValueError):
        z[0, 0] = 1
    big = zeros_operand((1 << 22,), np.dtype(np.float64))
    assert big.shape == (1 << 22,) and float(big.max()) == 0.0
