"""conv2d, pooling, interpolate and elementwise ops keep a channels-last input's layout, as
torch's CPU kernels (Note [Channels-last results] in ndgrad/ops/_channels_last.py)."""

import numpy as np
import pytest
import torch

import ndgrad

X = np.random.default_rng(0).standard_normal((2, 3, 6, 6))
W = np.random.default_rng(1).standard_normal((4, 3, 3, 3))


def _cases(lib):
    F = lib.nn.functional
    cl = lib.channels_last
    x = lib.tensor(X).contiguous(memory_format=cl)
    w = lib.tensor(W)
    return {
        "conv2d": lambda: F.conv2d(x, w, padding=1),
        "conv2d bias stride": lambda: F.conv2d(x, w, lib.ones(4, dtype=x.dtype), stride=2),
        "conv2d weight cl": lambda: F.conv2d(x.contiguous(), w.contiguous(memory_format=cl)),
        "conv2d contiguous": lambda: F.conv2d(x.contiguous(), w),
        "batch_norm": lambda: F.batch_norm(x, None, None, training=True),
        "relu": lambda: F.relu(x), "add": lambda: x + x, "mul scalar": lambda: x * 2,
        "max_pool2d": lambda: F.max_pool2d(x, 2),
        "max_pool2d indices": lambda: F.max_pool2d(x, 3, 1, 1, return_indices=True)[1],
        "avg_pool2d": lambda: F.avg_pool2d(x, 2),
        "adaptive_avg_pool2d": lambda: F.adaptive_avg_pool2d(x, 4),
        "adaptive_max_pool2d": lambda: F.adaptive_max_pool2d(x, 4),
        "interpolate nearest": lambda: F.interpolate(x, scale_factor=2),
        "interpolate bilinear": lambda: F.interpolate(x, size=(5, 7), mode="bilinear"),
        "interpolate bicubic": lambda: F.interpolate(x, scale_factor=2, mode="bicubic"),
        "nn.Conv2d": lambda: lib.nn.Conv2d(3, 2, 3).double()(x),
        "max_pool2d contiguous": lambda: F.max_pool2d(x.contiguous(), 2),
    }


@pytest.mark.parametrize("name", list(_cases(torch)))
def test_layout_matches_torch(name):
    res = []
    for lib in (ndgrad, torch):
        y = _cases(lib)[name]()
        res.append((y.is_contiguous(memory_format=lib.channels_last), y.is_contiguous(),
                    y.stride(), list(y.shape)))
    assert res[0] == res[1]


def test_values_and_gradients_through_a_channels_last_network():
    res = []
    for lib in (ndgrad, torch):
        F = lib.nn.functional
        rng = np.random.default_rng(2)
        x = lib.tensor(X).contiguous(memory_format=lib.channels_last).requires_grad_()
        w = lib.tensor(W).requires_grad_()
        y = F.conv2d(x, w, padding=1)
        y2 = F.max_pool2d(y.relu(), 2)
        y3 = F.interpolate(F.adaptive_avg_pool2d(y2, 2), scale_factor=2, mode="bilinear")
        loss = (F.batch_norm(y3, None, None, training=True)
                * lib.tensor(rng.standard_normal((2, 4, 4, 4)))).sum()
        loss.backward()
        res.append((loss.item(), x.grad.numpy().copy(), w.grad.numpy().copy(),
                    x.grad.is_contiguous(memory_format=lib.channels_last)))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-10)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(res[0][2], res[1][2], rtol=1e-9, atol=1e-12)
    assert res[0][3] == res[1][3]
