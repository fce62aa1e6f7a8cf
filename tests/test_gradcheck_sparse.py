"""``gradcheck`` on sparse COO inputs against torch's (Note [gradcheck on sparse inputs]):
the same functions pass and fail in both, with ``masked=False`` (every element perturbed) and
``masked=True`` (stored elements only), in slow and fast mode; a wrong sparse backward is
caught; sparse outputs are refused."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ndgrad
from ndgrad.autograd.gradcheck import GradcheckError as NdGradcheckError
from torch.autograd.gradcheck import GradcheckError as TorchGradcheckError

warnings.filterwarnings("ignore", message="Sparse invariant checks")


def _leaf(lib):
    return lib.sparse_coo_tensor([[1, 0, 1], [2, 2, 2]], lib.tensor([3.0, 4.0, 5.0],
                                 dtype=lib.float64), (2, 3), requires_grad=True)


def _m(lib):
    return lib.tensor(np.arange(6.0).reshape(3, 2) - 1.5, requires_grad=True)


CASES = {
    "to_dense": lambda lib, s: s.to_dense(),
    "to_dense_unmasked": lambda lib, s: s.to_dense(masked_grad=False),
    "sparse.mm": lambda lib, s: lib.sparse.mm(s, _m(lib)),
    "sparse.addmm": lambda lib, s: lib.sparse.addmm(lib.ones(2, 2, dtype=lib.float64), s,
                                                    _m(lib), beta=0.5, alpha=2.0),
    "mm": lambda lib, s: lib.mm(s, _m(lib)),
    "sum": lambda lib, s: lib.sparse.sum(s),
    "sum_dim": lambda lib, s: lib.sparse.sum(s, 1).to_dense(),
    "values": lambda lib, s: s.coalesce().values(),
    "arith": lambda lib, s: ((s * 2.0 + s) / 3.0 - s).to_dense().exp(),
    "dense_plus_sparse": lambda lib, s: (lib.ones(2, 3, dtype=lib.float64) + s).sin(),
    "sparse_output": lambda lib, s: s * 2.0,
}


def _outcome(lib, name, masked, fast):
    f = CASES[name]
    try:
        lib.autograd.gradcheck(lambda s: f(lib, s), (_leaf(lib),), masked=masked,
                               fast_mode=fast)
    except Exception as e:            # the outcome compared with torch's is the type
        return type(e).__name__, str(e)
    return "pass", ""


@pytest.mark.parametrize("fast", [False, True], ids=["slow", "fast"])
@pytest.mark.parametrize("masked", [False, True], ids=["unmasked", "masked"])
@pytest.mark.parametrize("name", list(CASES))
def test_same_outcome_as_torch(name, masked, fast):
    t = _outcome(torch, name, masked, fast)
    n = _outcome(ndgrad, name, masked, fast)
    assert n[0] == t[0], (n, t)
    if t[0] == "GradcheckError":
        assert n[1].splitlines()[0] == t[1].splitlines()[0]
    if t[0] == "ValueError":
        assert n[1] == t[1]


def test_masked_semantics_decide():
    """The masked gradients of to_dense and sparse.mm pass only with masked=True; the dense
    gradient of mm passes only with masked=False (slow mode, in both libraries)."""
    for name, ok_masked in (("to_dense", True), ("sparse.mm", True), ("mm", False)):
        for lib in (torch, ndgrad):
            assert (_outcome(lib, name, True, False)[0] == "pass") == ok_masked
            assert (_outcome(lib, name, False, False)[0] == "pass") != ok_masked


def _function(lib, factor):
    class Dense(lib.autograd.Function):
        @staticmethod
        def forward(ctx, s):
            ctx.save_for_backward(s)
            return s.to_dense() * 1.0

        @staticmethod
        def backward(ctx, g):
            (s,) = ctx.saved_tensors
            c = s.detach().coalesce()
            return lib.sparse_coo_tensor(c.indices(), g[tuple(c.indices())] * factor, c.shape)
    return Dense.apply


@pytest.mark.parametrize("fast", [False, True])
def test_wrong_sparse_backward_is_caught(fast):
    for lib in (torch, ndgrad):
        with pytest.raises(NdGradcheckError if lib is ndgrad else TorchGradcheckError,
                           match="Jacobian mismatch for output 0 with respect to input 0"):
            lib.autograd.gradcheck(_function(lib, 2.0), (_leaf(lib),), masked=True,
                                   fast_mode=fast)
    # the right backward passes (torch's gradcheck cannot run this one: its check of the
    # Function's sparse gradient calls an op torch has no sparse kernel for)
    assert ndgrad.autograd.gradcheck(_function(ndgrad, 1.0), (_leaf(ndgrad),), masked=True,
                                     fast_mode=fast)


def test_wrong_layout_of_sparse_gradient_is_caught():
    """A backward giving a sparse gradient to a dense input fails the layout check."""
    class ToSparseGrad(ndgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return g.to_sparse()
    x = ndgrad.tensor([1.0, 2.0], dtype=ndgrad.float64, requires_grad=True)
    with pytest.raises(NdGradcheckError,
                       match=r"grad is incorrect layout \(ndgrad.sparse_coo is not "
                             r"ndgrad.strided\)"):
        ndgrad.autograd.gradcheck(ToSparseGrad.apply, (x,))


@pytest.mark.parametrize("masked", [False, True])
def test_hybrid_sparse_input(masked):
    """One sparse and one dense dimension: values rows stand for dense rows."""
    res = []
    for lib in (torch, ndgrad):
        s = lib.sparse_coo_tensor([[0, 2]], lib.tensor(np.arange(4.0).reshape(2, 2) + 1),
                                  (3, 2), requires_grad=True)
        try:
            lib.autograd.gradcheck(lambda s, lib=lib: lib.sparse.sum(s, 1).to_dense().exp(), (s,),
                                   masked=masked)
            res.append("pass")
        except Exception as e:
            res.append(type(e).__name__)
    assert res[1] == res[0] == ("pass" if masked else "GradcheckError")


def test_gradgradcheck_through_sparse_mm():
    """Second order through sparse.mm's recorded backward (with respect to the dense
    argument); with the sparse argument among the inputs, its gradient is a sparse output,
    which both refuse."""
    for lib in (torch, ndgrad):
        s = _leaf(lib)
        c = s.detach()
        assert lib.autograd.gradgradcheck(lambda m, c=c, lib=lib: lib.sparse.mm(c, m).exp(),
                                          (_m(lib),), masked=True)
        with pytest.raises(ValueError, match="Sparse output is not supported at gradcheck"):
            lib.autograd.gradgradcheck(lambda s, m, lib=lib: lib.sparse.mm(s, m), (s, _m(lib)),
                                       masked=True)
