"""A convolution whose ``apply`` raises after its forward kept the im2col columns for the
weight gradient (Note [Forward columns] in ndgrad/ops/nn_conv.py) frees them at once: no
entry stays in the table, no in-place write watcher stays installed."""

import gc
import weakref

import numpy as np
import pytest

import ndgrad
from ndgrad import _write_watch
from ndgrad.ops import nn_conv


def _arrays(v):
    if isinstance(v, np.ndarray):
        return [v]
    if isinstance(v, (tuple, list)):
        return [a for x in v for a in _arrays(x)]
    return []


@pytest.mark.parametrize("bias", [False, True])
def test_columns_freed_when_apply_raises(bias):
    x = ndgrad.randn(1, 2, 6, 6)
    w = ndgrad.randn(3, 2, 3, 3, requires_grad=True)
    b = ndgrad.randn(3, requires_grad=True) if bias else None
    seen = []

    def pack(t):
        # called after the forward ran: the columns are kept by now
        seen.extend(weakref.ref(a) for e in nn_conv._kept.values() for a in _arrays(e[2]))
        raise RuntimeError("pack refuses")
    with pytest.raises(RuntimeError, match="pack refuses"):
        with ndgrad.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            ndgrad.nn.functional.conv2d(x, w, b)
    assert seen                                 # the forward did keep columns
    assert nn_conv._kept == {}
    assert getattr(nn_conv._keep_flag, "entry", None) is None
    assert _write_watch.watch is None
    gc.collect()
    assert all(r() is None for r in seen)       # and nothing holds them any more
    # the next convolution keeps and uses its own columns as usual
    y = ndgrad.nn.functional.conv2d(x, w, b)
    y.sum().backward()
    assert w.grad is not None and nn_conv._kept == {}
