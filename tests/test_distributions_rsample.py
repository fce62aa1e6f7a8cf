"""Reparameterized gamma, beta and Dirichlet samples (Note [Implicit reparameterization] in
ndgrad/distributions/_sampling.py): the gradient of a drawn sample with respect to its
concentration equals the finite-difference derivative of inverse-CDF sampling at the same
quantile, agrees with torch's kernels, and averages to the derivative of the mean."""

import numpy as np
import pytest
import torch
from scipy import special

import ndgrad
from ndgrad.distributions import Beta, Dirichlet, Gamma, _sampling


def _fd(f, a, h=1e-6):
    return (f(a + h) - f(a - h)) / (2 * h)


@pytest.mark.parametrize("dtype", [ndgrad.float32, ndgrad.float64])
def test_gamma_rsample_gradient_is_the_inverse_cdf_derivative(dtype):
    alpha = ndgrad.tensor([0.3, 1.0, 2.5, 12.0], dtype=dtype, requires_grad=True)
    rate = ndgrad.tensor([1.0, 2.0, 0.5, 1.5], dtype=dtype, requires_grad=True)
    ndgrad.manual_seed(0)
    x = Gamma(alpha, rate).rsample((3,))
    assert x.dtype == dtype and tuple(x.shape) == (3, 4)
    x.sum().backward()
    a = alpha.detach().numpy().astype(np.float64)
    r = rate.detach().numpy().astype(np.float64)
    xs = x.detach().numpy().astype(np.float64) * r          # the standard gamma draws
    u = special.gammainc(a, xs)
    dx_da = _fd(lambda aa: special.gammaincinv(aa, u), a) / r
    rtol = 1e-3 if dtype == ndgrad.float32 else 1e-6
    np.testing.assert_allclose(alpha.grad.numpy(), dx_da.sum(0), rtol=rtol)
    np.testing.assert_allclose(rate.grad.numpy(), (-xs / r ** 2).sum(0), rtol=rtol)


def test_gamma_gradient_agrees_with_torch_kernel():
    a = np.array([0.2, 0.7, 1.0, 3.0, 9.0, 40.0])
    x = np.array([0.05, 0.4, 1.3, 2.0, 11.0, 35.0])
    ours = _sampling.standard_gamma_grad(a, x)
    theirs = torch._standard_gamma_grad(torch.tensor(a), torch.tensor(x)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=2e-3)


def test_dirichlet_gradient_is_the_inverse_cdf_derivative_of_the_beta_marginal():
    a = np.array([0.4, 2.0, 10.0, 1.5])
    t = np.array([1.3, 4.0, 11.0, 9.0])
    x = np.array([0.3, 0.5, 0.9, 0.05])
    b = t - a
    u = special.betainc(a, b, x)
    # the Beta(a, b) sample's derivative in a (b fixed), over 1 - x
    fd = _fd(lambda aa: special.betaincinv(aa, b, u), a) / (1 - x)
    ours = _sampling.dirichlet_grad(x, a, t)
    np.testing.assert_allclose(ours, fd, rtol=1e-6)
    # torch's kernel approximates the same function
    theirs = torch._dirichlet_grad(torch.tensor(x), torch.tensor(a), torch.tensor(t)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-3)


def test_dirichlet_backward_projects_like_torch():
    conc = ndgrad.tensor([[0.8, 2.0, 3.5], [1.0, 1.0, 4.0]], dtype=ndgrad.float64,
                         requires_grad=True)
    ndgrad.manual_seed(1)
    x = Dirichlet(conc).rsample()
    w = np.array([[1.0, -2.0, 0.5], [0.3, 0.0, 1.0]])
    (x * ndgrad.tensor(w)).sum().backward()
    xn, a = x.detach().numpy(), conc.detach().numpy()
    g = _sampling.dirichlet_grad(xn, a, np.broadcast_to(a.sum(-1, keepdims=True), a.shape))
    np.testing.assert_allclose(conc.grad.numpy(),
                               g * (w - (xn * w).sum(-1, keepdims=True)), rtol=1e-12)
    assert np.allclose(xn.sum(-1), 1.0) and (xn > 0).all()


def test_reparameterized_gradients_average_to_the_mean_derivative():
    # E[d x / d theta] = d E[x] / d theta for a pathwise estimator
    ndgrad.manual_seed(2)
    alpha = ndgrad.tensor([0.5, 3.0], dtype=ndgrad.float64, requires_grad=True)
    Gamma(alpha, 2.0).rsample((4000,)).sum().backward()
    np.testing.assert_allclose(alpha.grad.numpy() / 4000, [0.5, 0.5], rtol=0.05)

    c1 = ndgrad.tensor(2.0, dtype=ndgrad.float64, requires_grad=True)
    c0 = ndgrad.tensor(3.0, dtype=ndgrad.float64, requires_grad=True)
    Beta(c1, c0).rsample((4000,)).sum().backward()
    # mean c1 / (c1 + c0): derivatives c0 / s^2 and -c1 / s^2
    np.testing.assert_allclose([c1.grad.item() / 4000, c0.grad.item() / 4000],
                               [3 / 25, -2 / 25], rtol=0.06)

    conc = ndgrad.tensor([1.0, 2.0, 3.0], dtype=ndgrad.float64, requires_grad=True)
    w = ndgrad.tensor([1.0, 0.0, -1.0], dtype=ndgrad.float64)
    (Dirichlet(conc).rsample((4000,)) * w).sum().backward()
    a = np.array([1.0, 2.0, 3.0])
    s = a.sum()
    wn = np.array([1.0, 0.0, -1.0])
    expected = (wn - (a * wn).sum() / s) / s          # d/da of sum_i w_i a_i / s
    np.testing.assert_allclose(conc.grad.numpy() / 4000, expected, atol=0.01)


def test_beta_rsample_gradient_matches_torch_formula_on_same_draw():
    # Beta draws x through Dirichlet([c1, c0]) and differentiates the first component
    c1 = ndgrad.tensor([0.7, 2.0], dtype=ndgrad.float64, requires_grad=True)
    c0 = ndgrad.tensor([1.5, 5.0], dtype=ndgrad.float64, requires_grad=True)
    ndgrad.manual_seed(3)
    x = Beta(c1, c0).rsample()
    x.sum().backward()
    xn = x.detach().numpy()
    a1, a0 = c1.detach().numpy(), c0.detach().numpy()
    u = special.betainc(a1, a0, xn)
    # x = I^{-1}(c1, c0; u): both partial derivatives by finite differences
    d1 = _fd(lambda aa: special.betaincinv(aa, a0, u), a1)
    d0 = _fd(lambda bb: special.betaincinv(a1, bb, u), a0)
    np.testing.assert_allclose(c1.grad.numpy(), d1, rtol=1e-5)
    np.testing.assert_allclose(c0.grad.numpy(), d0, rtol=1e-5)


def test_samplers_are_reproducible_and_need_no_grad():
    d = Gamma(ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([1.0, 1.0]))
    ndgrad.manual_seed(5)
    a = d.sample((3,))
    ndgrad.manual_seed(5)
    b = d.sample((3,))
    assert not a.requires_grad and bool((a == b).all())
    assert Gamma(1.0, 1.0).rsample().requires_grad is False
