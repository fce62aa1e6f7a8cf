"""Max pooling's 2x2-tile fast path (Note [Max pooling on 2x2 tiles] in ops/nn_pool.py)
against torch: values, indices and gradients on ties, odd sizes, NaN and infinities, signed
zeros, strided inputs and integer dtypes, with the general path's cases next to it (padding,
dilation, ceil_mode, other kernels) and float64 gradcheck / gradgradcheck on small shapes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ndgrad
import ndgrad.nn.functional as F
from ndgrad.ops import nn_pool


def _pair(a: np.ndarray):
    return torch.from_numpy(a.copy()), ndgrad.tensor(a.copy())


def _check(a: np.ndarray, exact: bool = True, **kw) -> None:
    """Values, indices and the input gradient (float inputs) of max_pool2d against torch
    (``exact``: bit for bit; overlapping windows sum their gradients in another order)."""
    t, n = _pair(a)
    fl = a.dtype.kind == "f"
    if fl:
        t.requires_grad_()
        n.requires_grad_()
    ty, ti = TF.max_pool2d(t, 2, return_indices=True, **kw)
    ny, ni = F.max_pool2d(n, 2, return_indices=True, **kw)
    np.testing.assert_array_equal(ni.numpy(), ti.numpy())
    np.testing.assert_array_equal(ny.detach().numpy(), ty.detach().numpy())
    assert np.array_equal(np.signbit(ny.detach().numpy()), np.signbit(ty.detach().numpy()))
    assert ni.dtype == ndgrad.int64
    if fl:
        g = np.random.default_rng(1).standard_normal(ty.shape).astype(a.dtype)
        ty.backward(torch.from_numpy(g))
        ny.backward(ndgrad.tensor(g))
        if exact:
            np.testing.assert_array_equal(n.grad.numpy(), t.grad.numpy())
        else:
            np.testing.assert_allclose(n.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-6)


def _ties(shape, seed=0, dtype=np.float32):
    # few distinct values: most windows hold equal maxima in every arrangement
    return np.random.default_rng(seed).integers(-1, 2, shape).astype(dtype)


@pytest.mark.parametrize("shape", [(2, 3, 8, 6), (2, 3, 7, 9), (1, 1, 2, 2), (3, 5, 4),
                                   (2, 2, 3, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tiles_match_torch_random_and_ties(shape, dtype):
    _check(np.random.default_rng(0).standard_normal(shape).astype(dtype))
    _check(_ties(shape, dtype=dtype))


def test_tiles_taken_and_general_path_agrees(monkeypatch):
    # the fast path runs for these arguments, and gives the general path's indices
    x = _ties((2, 3, 6, 8), seed=3)
    calls = []
    real = nn_pool._tiles2x2
    monkeypatch.setattr(nn_pool, "_tiles2x2", lambda *a: calls.append(1) or real(*a))
    F.max_pool2d(ndgrad.tensor(x), 2)
    F.max_pool2d(ndgrad.tensor(x), (2, 2), stride=2, padding=0, dilation=1)
    assert len(calls) == 2
    monkeypatch.undo()
    assert nn_pool._tiles2x2(x, (3, 4)) is not None
    general = nn_pool.max_pool_indices(x, (2, 2), (2, 2), (0, 0), (1, 1), (3, 4))
    nn_pool._found = None
    saved = nn_pool._TILE_DTYPES
    try:
        nn_pool._TILE_DTYPES = ()
        slow = nn_pool.max_pool_indices(x, (2, 2), (2, 2), (0, 0), (1, 1), (3, 4))
    finally:
        nn_pool._TILE_DTYPES = saved
        nn_pool._found = None
    np.testing.assert_array_equal(general, slow)


def test_tiles_every_tie_arrangement():
    # all 3^4 windows of values {0, 1, 2}: each order of equal maxima in one window
    import itertools
    w = np.array(list(itertools.product(range(3), repeat=4)), np.float32)   # (81, 4)
    x = w.reshape(81, 2, 2).reshape(1, 1, 81 * 2, 2)      # windows stacked down the plane
    _check(x)
    _check(np.ascontiguousarray(np.swapaxes(w.reshape(81, 2, 2), 1, 2)).reshape(1, 1, 162, 2))


def test_tiles_nan_inf_and_signed_zeros():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 2, 6, 6)).astype(np.float32)
    x[0, 0, 0, 1] = np.nan
    x[0, 0, 1, 0] = np.nan                 # two NaNs in one window: torch's NaN order
    x[0, 1, 2, 2] = np.inf
    x[1, 0, 4, 4:6] = -np.inf
    x[1, 0, 5, 4:6] = -np.inf              # a window of -inf only
    x[1, 1, 0:2, 0:2] = [[0.0, -0.0], [-0.0, 0.0]]
    x[1, 1, 0:2, 2:4] = [[-0.0, 0.0], [0.0, -0.0]]
    _check(x)
    y = np.full((1, 1, 4, 4), -np.inf, np.float32)
    _check(y)


def test_tiles_strided_inputs():
    base = np.random.default_rng(4).standard_normal((2, 6, 8, 3)).astype(np.float32)
    t, n = _pair(base)
    # channels_last-like (a permuted view) and a sliced view
    for f_t, f_n in ((lambda v: v.permute(0, 3, 1, 2), lambda v: v.permute(0, 3, 1, 2)),
                     (lambda v: v[:, ::2].permute(0, 3, 2, 1),
                      lambda v: v[:, ::2].permute(0, 3, 2, 1))):
        tv, nv = f_t(t).detach().requires_grad_(), f_n(n).detach().requires_grad_()
        ty, ti = TF.max_pool2d(tv, 2, return_indices=True)
        ny, ni = F.max_pool2d(nv, 2, return_indices=True)
        np.testing.assert_array_equal(ni.numpy(), ti.numpy())
        np.testing.assert_array_equal(ny.detach().numpy(), ty.detach().numpy())
        ty.sum().backward()
        ny.sum().backward()
        np.testing.assert_array_equal(nv.grad.numpy(), tv.grad.numpy())
    tv = torch.from_numpy(base).permute(0, 3, 1, 2).contiguous(
        memory_format=torch.channels_last)
    nv = ndgrad.tensor(np.ascontiguousarray(base.transpose(0, 3, 1, 2)))
    np.testing.assert_array_equal(F.max_pool2d(nv, 2).numpy(), TF.max_pool2d(tv, 2).numpy())


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8])
def test_tiles_integer_dtypes(dtype):
    x = np.random.default_rng(5).integers(0, 4, (2, 3, 6, 5)).astype(dtype)
    _check(x)


@pytest.mark.parametrize("kw", [{"padding": 1}, {"dilation": 2}, {"ceil_mode": True},
                                {"stride": 1}, {"stride": (2, 1)}])
def test_general_path_neighbours(kw):
    # arguments next to the fast path's take the general path, still torch's
    exact = "dilation" not in kw and kw.get("stride") != 1
    _check(_ties((2, 3, 7, 8), seed=6), exact, **kw)
    _check(np.random.default_rng(7).standard_normal((2, 3, 7, 8)).astype(np.float32), exact,
           **kw)


def test_tiles_gradcheck_and_double_backward():
    x = torch.from_numpy(np.random.default_rng(8).standard_normal((2, 2, 5, 4))).requires_grad_()
    n = ndgrad.tensor(x.detach().numpy().copy(), requires_grad=True)
    assert ndgrad.autograd.gradcheck(lambda v: F.max_pool2d(v, 2), (n,))
    assert ndgrad.autograd.gradgradcheck(lambda v: F.max_pool2d(v, 2), (n,))
    # double backward: d/dg of <grad_x(g), v> equals torch's
    ty = TF.max_pool2d(x, 2)
    ny = F.max_pool2d(n, 2)
    gt = torch.ones_like(ty, requires_grad=True)
    gn = ndgrad.ones_like(ny, requires_grad=True)
    (tx,) = torch.autograd.grad(ty, x, gt, create_graph=True)
    (nx,) = ndgrad.autograd.grad(ny, n, gn, create_graph=True)
    v = np.random.default_rng(9).standard_normal(x.shape)
    (tgg,) = torch.autograd.grad((tx * torch.from_numpy(v)).sum(), gt)
    (ngg,) = ndgrad.autograd.grad((nx * ndgrad.tensor(v)).sum(), gn)
    np.testing.assert_array_equal(ngg.numpy(), tgg.numpy())
