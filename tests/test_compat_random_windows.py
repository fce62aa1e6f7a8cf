"""torch's window factories (ndgrad/_compat_windows.py) and ``poisson``/``binomial``
(ndgrad/_compat_random.py) against torch: window values and errors, and the samples drawn from
the same seed (ndgrad reproduces torch's CPU streams for them)."""

import numpy as np
import pytest
import torch

import ndgrad

from _compare import outcome

WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"]


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("length", [0, 1, 2, 5, 16])
@pytest.mark.parametrize("periodic", [True, False])
def test_window_values_match_torch(name, length, periodic):
    for dt, rtol in (("float64", 1e-12), ("float32", 2e-6)):
        t = getattr(torch, name)(length, periodic, dtype=getattr(torch, dt))
        n = getattr(ndgrad, name)(length, periodic, dtype=getattr(ndgrad, dt))
        assert str(n.dtype).split(".")[1] == dt and n.shape == tuple(t.shape)
        np.testing.assert_allclose(n.numpy(), t.numpy(), rtol=rtol, atol=2e-7)


def test_window_extra_parameters_defaults_and_requires_grad():
    for m in (torch, ndgrad):
        assert m.hann_window(4).dtype == m.float32
        assert m.hann_window(3, requires_grad=True).requires_grad
    np.testing.assert_allclose(ndgrad.hamming_window(7, False, 0.5, 0.5).numpy(),
                               torch.hamming_window(7, False, 0.5, 0.5).numpy(), rtol=1e-6)
    np.testing.assert_allclose(ndgrad.kaiser_window(9, True, 5.0).numpy(),
                               torch.kaiser_window(9, True, 5.0).numpy(), rtol=1e-6)
    np.testing.assert_allclose(ndgrad.kaiser_window(9, beta=0.5, periodic=False).numpy(),
                               torch.kaiser_window(9, beta=0.5, periodic=False).numpy(),
                               rtol=1e-6)


@pytest.mark.parametrize("name", WINDOWS)
def test_window_errors_match_torch(name):
    for call in (lambda m: getattr(m, name)(-1), lambda m: getattr(m, name)(2.5),
                 lambda m: getattr(m, name)(3, dtype=m.int64)):
        t, n = outcome(lambda c=call: c(torch)), outcome(lambda c=call: c(ndgrad))
        assert t[0] == n[0]
        assert t[1].split(",")[0].split(" got")[0] == n[1].split(",")[0].split(" got")[0]


# torch's overloads: alpha/beta only after periodic; wrong arguments name the overloads.
WINDOW_CALLS = [
    "hamming_window(5, alpha=0.5)", "hamming_window(5, True, 0.5)",
    "hamming_window(5, True, 0.5, 0.4)", "hamming_window(5, True, alpha=0.5, beta=0.4)",
    "hamming_window(5, beta=0.4)", "hamming_window(5, True, beta=0.4)", "hamming_window(5, 0.5)",
    "hamming_window(5, periodic=True, alpha=1, beta=2)",
    "hamming_window(5, periodic=False, beta=0.3)",
    "hamming_window(5, alpha=0.5, dtype=m.float64)", "hamming_window(5, True, 0.5, 0.4, m.float64)",
    "hamming_window(5, None)", "hamming_window(5, periodic=None)", "hamming_window(5.0)",
    "hann_window(5, True, 0.5)", "hann_window(5, alpha=0.5)", "hann_window(5, m.float64)",
    "hann_window(5, periodic=False, requires_grad=True)", "bartlett_window(5, 1)",
    "blackman_window(5, beta=1)", "blackman_window(5, True, m.float64)", "kaiser_window(5, 3.0)",
    "kaiser_window(5, beta=3.0)", "kaiser_window(5, False, 3.0)", "kaiser_window(5, True, None)",
    "kaiser_window(5, periodic=False, beta=3.0)", "kaiser_window(5, beta=12.0, periodic=True)",
    "hamming_window(window_length=5, periodic=False)",
    "hamming_window(5, True, 0.5, layout=m.strided)",
]


@pytest.mark.parametrize("call", WINDOW_CALLS)
def test_window_overloads_match_torch(call):
    t, n = (outcome(lambda m=m: eval("m." + call)) for m in (torch, ndgrad))
    if t[0] != "ok":
        assert n == t
    else:
        assert n[0] == "ok", n
        np.testing.assert_allclose(n[1].detach().numpy(), t[1].detach().numpy(), rtol=1e-6)
        assert n[1].requires_grad == t[1].requires_grad


RATES = [0.5, 3.0, 7.5, 0.0, 12.0, 50.0, 1000.0, 2.0, 15.5, 9.99, 10.0]
COUNTS = [5.0, 10.0, 100.0, 1000.0, 40.0, 3.0, 0.0, 20.0, 7.0, 50.0]
PROBS = [0.5, 0.2, 0.3, 0.9, 0.99, 0.1, 0.5, 0.7, 1.0, 0.0]


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_poisson_and_binomial_follow_torch_streams(dt):
    res = []
    for m in (torch, ndgrad):
        d = getattr(m, dt)
        m.manual_seed(7)
        p = m.poisson(m.tensor(RATES * 2, dtype=d))
        b = m.binomial(m.tensor(COUNTS * 2, dtype=d), m.tensor(PROBS * 2, dtype=d))
        g = m.Generator().manual_seed(3)
        pg = m.poisson(m.tensor([[4.0, 30.0], [0.25, 11.0]], dtype=d), g)
        bg = m.binomial(m.tensor([[30.0], [8.0]], dtype=d), m.tensor([[0.4, 0.6]], dtype=d),
                        generator=g)
        after = m.rand(3).tolist()
        res.append((p.tolist(), b.tolist(), pg.tolist(), bg.tolist(), after,
                    str(p.dtype)[-7:], str(b.dtype)[-7:]))
    assert res[0] == res[1]


def test_poisson_and_binomial_gradients_are_zero_and_errors_match_torch():
    for m in (torch, ndgrad):
        x = m.tensor([1.0, 20.0], requires_grad=True)
        y = m.poisson(x)
        assert y.requires_grad
        y.sum().backward()
        assert x.grad.tolist() == [0.0, 0.0]
    for fn in (lambda m: m.poisson(m.tensor([-1.0])), lambda m: m.poisson(m.tensor([1])),
               lambda m: m.binomial(m.tensor([5]), m.tensor([0.5])),
               lambda m: m.poisson("a")):
        t, n = outcome(lambda f=fn: f(torch)), outcome(lambda f=fn: f(ndgrad))
        assert t[0] == n[0] and t[1].split(",")[0] == n[1].split(",")[0], (t, n)


def test_binomial_distribution_moments():
    ndgrad.manual_seed(0)
    n, p = 30.0, 0.35
    s = ndgrad.binomial(ndgrad.full((4000,), n, dtype=ndgrad.float64),
                        ndgrad.full((4000,), p, dtype=ndgrad.float64)).numpy()
    assert abs(s.mean() - n * p) < 0.2 and abs(s.var() - n * p * (1 - p)) < 0.8
    lam = 25.0
    s = ndgrad.poisson(ndgrad.full((4000,), lam, dtype=ndgrad.float64)).numpy()
    assert abs(s.mean() - lam) < 0.4 and abs(s.var() - lam) < 2.5
