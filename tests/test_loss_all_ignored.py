"""cross_entropy / nll_loss when targets are ignored (ignore_index) or weigh nothing: torch's
values (nan for an empty mean) and gradients (0 where a target is ignored, nan where it counts
with weight 0 in an empty mean), first and second order and forward mode."""

import numpy as np
import pytest
import torch

import ndgrad

X = [[0.1, 0.2, 0.3], [0.5, -1.0, 2.0]]


def _both(fn):
    return fn(torch), fn(ndgrad)


def _same(t, n, sign=True):
    a, b = t.detach().numpy(), n.detach().numpy()
    np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)
    if sign:    # the sign of zero too: torch writes nothing where a target is ignored (+0)
        assert (np.signbit(a) == np.signbit(b)).all(), (a, b)


@pytest.mark.parametrize("fn,smoothing", [("cross_entropy", 0.0), ("cross_entropy", 0.2),
                                          ("nll_loss", 0.0)])
@pytest.mark.parametrize("weight", [None, [1.0, 2.0, 3.0]])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("target", [[-100, -100], [1, -100], [7, 7]])
def test_ignored_targets_values_and_gradients(fn, weight, smoothing, reduction, target):
    ignore = 7 if target == [7, 7] else -100

    def run(m):
        x = m.tensor(X, dtype=m.float64, requires_grad=True)
        kw = {} if weight is None else {"weight": m.tensor(weight, dtype=m.float64)}
        if smoothing:
            kw["label_smoothing"] = smoothing
        inp = x if fn == "cross_entropy" else x.log_softmax(1)
        loss = getattr(m.nn.functional, fn)(inp, m.tensor(target), reduction=reduction,
                                            ignore_index=ignore, **kw)
        (g,) = m.autograd.grad(loss.sum(), x, create_graph=True)
        (gg,) = m.autograd.grad((g * g).sum(), x, allow_unused=True, materialize_grads=True)
        return loss, g, gg
    t, n = _both(run)
    _same(t[0], n[0])
    _same(t[1], n[1])
    _same(t[2], n[2], sign=False)     # second order: values only


def test_zero_weight_counted_target_is_nan_ignored_is_zero():
    def run(m):
        x = m.tensor(X, requires_grad=True)
        loss = m.nn.functional.nll_loss(x, m.tensor([1, -100]), weight=m.tensor([1.0, 0.0, 1.0]))
        loss.backward()
        return loss, x.grad
    t, n = _both(run)
    assert np.isnan(n[0].item())
    _same(t[1], n[1])
    assert np.isnan(n[1][0, 1].item()) and n[1][1].tolist() == [0.0, 0.0, 0.0]


def test_forward_mode_of_an_empty_mean():
    def run(m):
        def f(x):
            return m.nn.functional.cross_entropy(x, m.tensor([-100, -100]), label_smoothing=0.1)
        return m.func.jvp(f, (m.tensor(X),), (m.ones(2, 3),))
    t, n = _both(run)
    assert np.isnan(n[0].item()) and np.isnan(n[1].item())
    assert np.isnan(t[0].item()) and np.isnan(t[1].item())


def test_spatial_targets_all_ignored():
    def run(m):
        x = m.zeros(2, 3, 4, requires_grad=True)
        loss = m.nn.functional.cross_entropy(x, m.full((2, 4), 7), ignore_index=7)
        loss.backward()
        return loss, x.grad
    t, n = _both(run)
    assert np.isnan(n[0].item())
    _same(t[1], n[1])
