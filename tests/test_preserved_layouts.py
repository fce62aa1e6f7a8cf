"""The layout of ``preserve_format`` copies (Note [Preserved layouts] in ndgrad/_layout.py):
``ndgrad.tensor`` of a tensor or ndarray, ``as_tensor``, ``clone()``, ``.to`` and the
``*_like`` factories give torch's strides, contiguity and warnings, with the same values."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ndgrad
from ndgrad._layout import infer_dense_strides

LIBS = {"ndgrad": ndgrad, "torch": torch}
FORTRAN = np.asfortranarray(np.arange(24.0).reshape(2, 3, 4))


def _cases(lib):
    t = lib.arange(6.0).reshape(2, 3)
    cl = lib.arange(24.0).reshape(1, 2, 3, 4).to(memory_format=lib.channels_last)
    e = lib.arange(3.0).expand(2, 3)
    p = lib.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1)
    return {
        "tensor(t.T)": lambda: lib.tensor(t.t()),
        "tensor(t.T, float32)": lambda: lib.tensor(t.t(), dtype=lib.float32),
        "tensor(t.T, requires_grad)": lambda: lib.tensor(t.t(), requires_grad=True),
        "tensor(channels_last)": lambda: lib.tensor(cl),
        "tensor(sliced)": lambda: lib.tensor(t[:, ::2]),
        "tensor(expanded)": lambda: lib.tensor(e),
        "as_tensor(t.T)": lambda: lib.as_tensor(t.t()),
        "as_tensor(t.T, float64)": lambda: lib.as_tensor(t.t(), dtype=lib.float64),
        "clone(t.T)": lambda: t.t().clone(),
        "clone(channels_last)": lambda: cl.clone(),
        "clone(expanded)": lambda: e.clone(),
        "clone(permuted slice)": lambda: p[:, :, ::2].clone(),
        "clone(expanded permuted)": lambda: lib.arange(4.0).reshape(4, 1, 1).expand(4, 3, 2)
        .permute(1, 2, 0).clone(),
        "clone(equal strides)": lambda: lib.ones(2, 1, 2).expand(2, 3, 2).transpose(0, 2)
        .clone(),
        "clone(t.T[::2])": lambda: lib.arange(12.0).reshape(3, 4).t()[::2].clone(),
        "double(expanded)": lambda: e.double(),
        "zeros_like(expanded)": lambda: lib.zeros_like(e),
        "empty_like(permuted slice)": lambda: lib.empty_like(p[:, :, ::2]),
        "tensor(fortran)": lambda: lib.tensor(FORTRAN),
        "as_tensor(fortran)": lambda: lib.as_tensor(FORTRAN),
        "as_tensor(fortran, float32)": lambda: lib.as_tensor(FORTRAN, dtype=lib.float32),
        "from_numpy(fortran)": lambda: lib.from_numpy(FORTRAN),
        "tensor(ndarray sliced)": lambda: lib.tensor(np.arange(12.0).reshape(3, 4)[:, ::2]),
        "tensor(ndarray broadcast)": lambda: lib.tensor(np.broadcast_to(np.arange(3.0),
                                                                        (2, 3))),
        "tensor(ndarray transposed)": lambda: lib.tensor(np.arange(24.0).reshape(2, 3, 4)
                                                         .transpose(2, 0, 1)),
    }


def _run(lib, name):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = _cases(lib)[name]()
    msgs = [str(m.message).split(",")[0] for m in w]
    vals = None if name.startswith("empty_like") else r.detach().numpy().tolist()
    return (tuple(r.shape), r.stride(), r.is_contiguous(), msgs, vals)


@pytest.mark.parametrize("name", list(_cases(torch)))
def test_layout_and_warnings_match_torch(name):
    ours = _run(ndgrad, name)
    theirs = _run(torch, name)
    assert [m.replace("ndgrad", "torch") for m in ours[3]] == theirs[3]
    assert ours[:3] == theirs[:3] and ours[4] == theirs[4]


def test_preserve_format_strides_match_torch_empty_like():
    from ndgrad import _layout
    rng = np.random.default_rng(0)
    base = np.zeros(400, np.float32)
    for _ in range(300):
        nd = int(rng.integers(1, 5))
        shape = tuple(int(v) for v in rng.integers(1, 4, nd))
        strides = tuple(int(v) for v in rng.choice([0, 1, 2, 3, 4, 6, 12], nd))
        want = torch.empty_like(torch.zeros(400).as_strided(shape, strides)).stride()
        arr = np.lib.stride_tricks.as_strided(base, shape, tuple(4 * s for s in strides))
        got = _layout.empty(shape, np.float64, _layout.preserve_format, arr)
        big = [d for d in range(nd) if shape[d] > 1]      # a size-1 dim's stride is free
        assert [got.strides[d] // 8 for d in big] == [want[d] for d in big], (shape, strides)
    assert infer_dense_strides((2, 3), (0, 1)) == (3, 1)
