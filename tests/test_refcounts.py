"""Note [Sole-reference tests]: the reference counts the engine's steal and in-place tests rely
on are checked at import; with unverified counts every gradient is copied, with the same
results."""

import sys

import numpy as np

import ndgrad
from ndgrad import _refcounts
from ndgrad.autograd import accumulate_grad
from ndgrad.ops import _dispatch


def test_this_interpreter_reports_the_verified_counts():
    expected = (sys.implementation.name == "cpython" and _refcounts._gil_enabled()
                and _refcounts._local_and_argument() == 2)
    assert _refcounts.SOLE_REFERENCE_TESTS is expected
    if expected:
        assert accumulate_grad._BASE_REFS == 3 and _dispatch._G_REFS == _dispatch._D_REFS == 3


def _step():
    rng = np.random.default_rng(0)
    x = ndgrad.tensor(rng.standard_normal((64, 300)))
    w = ndgrad.tensor(rng.standard_normal((300, 300)), requires_grad=True)
    b = ndgrad.tensor(rng.standard_normal(300), requires_grad=True)
    h = ndgrad.relu(x @ w + b)             # 19200 elements: relu's backward may write in place
    (ndgrad.tanh(h) * h).mean().backward()
    return w.grad.numpy().copy(), b.grad.numpy().copy()


def test_unverified_counts_copy_every_gradient_with_the_same_results(monkeypatch):
    fast = _step()
    monkeypatch.setattr(accumulate_grad, "_BASE_REFS", -8)
    monkeypatch.setattr(_dispatch, "_G_REFS", -8)
    monkeypatch.setattr(_dispatch, "_D_REFS", -8)
    slow = _step()
    for a, b in zip(fast, slow):
        np.testing.assert_array_equal(a, b)
