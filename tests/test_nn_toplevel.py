"""The nn kernels torch exposes at its top level (``torch.conv2d``, ``torch.dropout`` ...) exist
in ndgrad with torch's argument order and give torch's values."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ndgrad
from ndgrad.nn import toplevel

R = np.random.default_rng(0)
X4 = R.standard_normal((2, 4, 6, 6))
X3 = R.standard_normal((2, 4, 7))
X5 = R.standard_normal((1, 2, 4, 4, 4))
W2 = R.standard_normal((3, 4, 3, 3))
V = R.standard_normal((3, 5))


def _t(lib, a):
    return lib.tensor(a)


CALLS = {
    "conv1d": lambda L: L.conv1d(_t(L, X3), _t(L, W2[:, :, 0]), None, 1, 1),
    "conv2d": lambda L: L.conv2d(_t(L, X4), _t(L, W2), _t(L, np.ones(3)), 2, 1),
    "conv3d": lambda L: L.conv3d(_t(L, X5), _t(L, np.ones((2, 2, 2, 2, 2)))),
    "conv_transpose1d": lambda L: L.conv_transpose1d(_t(L, X3), _t(L, np.ones((4, 3, 2)))),
    "conv_transpose2d": lambda L: L.conv_transpose2d(_t(L, X4), _t(L, W2.transpose(1, 0, 2, 3)),
                                                     None, 2),
    "conv_transpose3d": lambda L: L.conv_transpose3d(_t(L, X5), _t(L, np.ones((2, 1, 2, 2, 2)))),
    "bilinear": lambda L: L.bilinear(_t(L, V), _t(L, V), _t(L, np.ones((2, 5, 5))), None),
    "pixel_shuffle": lambda L: L.pixel_shuffle(_t(L, X4), 2),
    "pixel_unshuffle": lambda L: L.pixel_unshuffle(_t(L, X4), 2),
    "channel_shuffle": lambda L: L.channel_shuffle(_t(L, X4), 2),
    "native_channel_shuffle": lambda L: L.native_channel_shuffle(_t(L, X4), 2),
    "cosine_similarity": lambda L: L.cosine_similarity(_t(L, V), _t(L, V[::-1].copy())),
    "pairwise_distance": lambda L: L.pairwise_distance(_t(L, V), _t(L, V[::-1].copy())),
    "pdist": lambda L: L.pdist(_t(L, V)),
    "selu": lambda L: L.selu(_t(L, V)),
    "selu_": lambda L: L.selu_(_t(L, V)),
    "celu": lambda L: L.celu(_t(L, V), 0.5),
    "celu_": lambda L: L.celu_(_t(L, V)),
    "prelu": lambda L: L.prelu(_t(L, V), _t(L, np.array([0.1]))),
    "rrelu": lambda L: L.rrelu(_t(L, V)),
    "rrelu_": lambda L: L.rrelu_(_t(L, V)),
    "hardshrink": lambda L: L.hardshrink(_t(L, V), 0.3),
    "threshold": lambda L: L.threshold(_t(L, V), 0.1, 20.0),
    "threshold_": lambda L: L.threshold_(_t(L, V), 0.1, 20.0),
    "avg_pool1d": lambda L: L.avg_pool1d(_t(L, X3), 2, 1, 1, True, False),
    "adaptive_avg_pool1d": lambda L: L.adaptive_avg_pool1d(_t(L, X3), 3),
    "max_pool1d": lambda L: L.max_pool1d(_t(L, X3), 2),
    "max_pool2d": lambda L: L.max_pool2d(_t(L, X4), 3, 2, 1),
    "max_pool3d": lambda L: L.max_pool3d(_t(L, X5), 2),
    "dropout": lambda L: L.dropout(_t(L, V), 0.5, False),
    "dropout_": lambda L: L.dropout_(_t(L, V), 0.0, True),
    "alpha_dropout": lambda L: L.alpha_dropout(_t(L, V), 0.5, False),
    "feature_alpha_dropout": lambda L: L.feature_alpha_dropout(_t(L, X4), 0.5, False),
    "embedding": lambda L: L.embedding(_t(L, V), L.tensor([2, 0, 2]), 0),
    "layer_norm": lambda L: L.layer_norm(_t(L, V), [5], _t(L, np.arange(5.0)), None, 1e-3),
    "group_norm": lambda L: L.group_norm(_t(L, X4), 2, None, _t(L, np.ones(4))),
    "batch_norm": lambda L: L.batch_norm(_t(L, X4), _t(L, np.arange(4.0)), None,
                                         _t(L, np.zeros(4)), _t(L, np.ones(4)), False, 0.1,
                                         1e-5, True),
    "instance_norm": lambda L: L.instance_norm(_t(L, X4), None, None, None, None, True, 0.1,
                                               1e-5, True),
}


def test_the_list_is_complete():
    assert ndgrad._NN_TOPLEVEL == toplevel.NAMES == set(CALLS)
    for name in CALLS:
        assert hasattr(torch, name), name


@pytest.mark.parametrize("name", sorted(CALLS))
def test_top_level_kernel_matches_torch(name):
    want = CALLS[name](torch)
    got = CALLS[name](ndgrad)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int64"])
@pytest.mark.parametrize("rows", [0, 1, 3])
@pytest.mark.parametrize("cols", [0, 2])
def test_pdist_half_types_refused_as_torch(dtype, rows, cols):
    def run(lib):
        try:
            r = lib.pdist(lib.ones(rows, cols, dtype=getattr(lib, dtype)))
        except (RuntimeError, NotImplementedError) as e:
            return type(e), str(e)
        return tuple(r.shape)
    assert run(ndgrad) == run(torch)
