"""In-place view ops (x.squeeze_(), t_, transpose_ ...) against PyTorch (Note [In-place view
ops] in ndgrad/ops/views_inplace.py)."""

import numpy as np
import pytest
import torch

import ndgrad

CASES = [("squeeze_", ()), ("squeeze_", (1,)), ("squeeze_", ((1, 2),)), ("unsqueeze_", (0,)),
         ("transpose_", (0, 2)), ("swapdims_", (0, 1)), ("swapaxes_", (2, 1)),
         ("as_strided_", ((3, 2), (1, 3)))]
X = np.arange(6.0).reshape(2, 1, 3)


def _run(lib, name, args, through_view):
    x = lib.tensor(X, requires_grad=True)
    y = x * 2
    t = y.view(2, 1, 3) if through_view else y
    v = t._version
    r = getattr(t, name)(*args)
    assert r is t
    out = (tuple(t.shape), t.stride(), t._version - v, t.grad_fn.name(), t._base is not None)
    w = lib.tensor(np.arange(t.numel(), dtype=np.float64).reshape(tuple(t.shape)))
    (t * w).sum().backward()
    return out, x.grad.numpy()


@pytest.mark.parametrize("through_view", [False, True])
@pytest.mark.parametrize("name,args", CASES)
def test_against_torch(name, args, through_view):
    a, ga = _run(torch, name, args, through_view)
    b, gb = _run(ndgrad, name, args, through_view)
    assert a == b
    np.testing.assert_allclose(gb, ga)


def test_t_():
    for lib in (torch, ndgrad):
        y = lib.tensor(np.ones((2, 3)), requires_grad=True) * 1
        y.t_()
        assert tuple(y.shape) == (3, 2) and y.grad_fn.name() == "TBackward1"
        with pytest.raises(RuntimeError, match=r"t_\(\) expects a tensor with <= 2 dimensions"):
            lib.ones(2, 2, 2).t_()


def test_refusals_and_plain_tensors():
    for lib in (torch, ndgrad):
        x = lib.ones(2, 1, requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            x.squeeze_()
        a, _ = (x * 1).unbind(1)[0], None
        with pytest.raises(RuntimeError, match="output of a function that returns multiple views"):
            a.unsqueeze_(0)
        z = lib.ones(2, 1)
        z.unsqueeze_(0)
        assert tuple(z.shape) == (1, 2, 1) and z._version == 1 and z.grad_fn is None
        e = lib.ones(1, 3).expand(2, 3)   # nothing is written: overlapping elements are fine
        e.t_()
        assert tuple(e.shape) == (3, 2)
