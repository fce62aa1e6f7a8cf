"""Reparameterized gamma, beta and Dirichlet samples (Note [Implicit reparameterization] in
ndgrad/distributions/_gamma_draws.py): the gradient of a drawn gamma sample with respect to
its concentration equals the finite-difference derivative of inverse-CDF sampling at the same
quantile; a Dirichlet (and Beta) draw's slope is that of its Beta marginal, as torch's; both
slopes agree with torch's kernels, and pathwise gradients average to the derivative of the
mean."""

import numpy as np
import pytest
import torch
from scipy import special

import ndgrad
from ndgrad.distributions import Beta, Dirichlet, Gamma, _gamma_draws


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
    ours = _gamma_draws.standard_gamma_grad(a, x)
    theirs = torch._standard_gamma_grad(torch.tensor(a), torch.tensor(x)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=2e-3)


def test_dirichlet_slope_is_the_beta_marginal_inverse_cdf_derivative():
    # D(x, a, t) * (1 - x) = d/da of the Beta(a, b) quantile function at x's quantile, b held
    a = np.array([0.05, 0.4, 1.5, 3.0, 20.0, 300.0])
    b = np.array([0.3, 0.4, 2.0, 0.7, 30.0, 5.0])
    x = np.array([1e-5, 0.3, 0.45, 0.9, 0.41, 0.97])
    u = special.betainc(a, b, x)
    expected = _fd(lambda aa: special.betaincinv(aa, b, u), a, h=1e-7)
    ours = _gamma_draws.dirichlet_grad(x, a, a + b) * (1 - x)
    np.testing.assert_allclose(ours, expected, rtol=1e-5)


def test_dirichlet_slope_agrees_with_torch_kernel():
    rng = np.random.default_rng(0)
    for a, b in [(0.4, 0.4), (1.5, 2.0), (0.1, 5.0), (5.0, 0.1), (20.0, 30.0), (1e3, 1e3)]:
        x = rng.beta(a, b, 40).clip(1e-9, 1 - 1e-9)
        ours = _gamma_draws.dirichlet_grad(x, np.full(40, a), np.full(40, a + b))
        theirs = torch._dirichlet_grad(torch.tensor(x), torch.full((40,), a, dtype=torch.float64),
                                       torch.full((40,), a + b, dtype=torch.float64)).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=2e-3)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dirichlet_and_beta_rsample_gradients_are_torchs(dtype):
    # the same draws for the seed, and torch's estimator: D_j * (g_j - sum_i x_i g_i)
    conc = np.array([[0.8, 2.0, 3.5], [1.0, 1.0, 4.0]])
    w = np.array([[1.0, -2.0, 0.5], [0.3, 0.0, 1.0]])
    out = []
    for lib in (torch, ndgrad):
        dt = getattr(lib, dtype)
        c = lib.tensor(conc, dtype=dt, requires_grad=True)
        lib.manual_seed(1)
        x = lib.distributions.Dirichlet(c).rsample((2,))
        (x * lib.tensor(w, dtype=dt)).sum().backward()
        c1 = lib.tensor([0.7, 2.0], dtype=dt, requires_grad=True)
        c0 = lib.tensor([1.5, 5.0], dtype=dt, requires_grad=True)
        lib.manual_seed(3)
        lib.distributions.Beta(c1, c0).rsample((3,)).pow(2).sum().backward()
        out.append([t.detach().numpy() for t in (x, c.grad, c1.grad, c0.grad)])
    theirs, ours = out
    np.testing.assert_array_equal(ours[0], theirs[0])
    for a, b in zip(ours[1:], theirs[1:]):
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=1e-6)


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


def test_samplers_are_reproducible_and_need_no_grad():
    d = Gamma(ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([1.0, 1.0]))
    ndgrad.manual_seed(5)
    a = d.sample((3,))
    ndgrad.manual_seed(5)
    b = d.sample((3,))
    assert not a.requires_grad and bool((a == b).all())
    assert Gamma(1.0, 1.0).rsample().requires_grad is False


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("alpha", [0.05, 0.4, 1.0, 2.5])
def test_gamma_beta_dirichlet_draw_torchs_numbers(dtype, alpha):
    # Note [Gamma draws]: after the same seed, Gamma, Beta (mixup's lam) and Dirichlet samples
    # are torch's, bit for bit, and the generator is left where torch leaves it
    td, nd = getattr(torch, dtype), getattr(ndgrad, dtype)
    torch.manual_seed(1)
    ndgrad.manual_seed(1)
    pairs = [
        (torch.distributions.Gamma(torch.full((5,), alpha, dtype=td), 2.0).sample(),
         ndgrad.distributions.Gamma(ndgrad.full((5,), alpha, dtype=nd), 2.0).sample()),
        (torch.distributions.Beta(torch.tensor(alpha, dtype=td), torch.tensor(0.4, dtype=td))
         .sample((3,)),
         ndgrad.distributions.Beta(ndgrad.tensor(alpha, dtype=nd), ndgrad.tensor(0.4, dtype=nd))
         .sample((3,))),
        (torch.distributions.Dirichlet(torch.tensor([alpha, 1.0, 3.0], dtype=td)).sample((2,)),
         ndgrad.distributions.Dirichlet(ndgrad.tensor([alpha, 1.0, 3.0], dtype=nd)).sample((2,)))]
    for want, got in pairs:
        assert got.dtype == nd
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert ndgrad.randn(()).item() == torch.randn(()).item()
    # with a gradient: the same draws, recorded as torch records them
    torch.manual_seed(2)
    ndgrad.manual_seed(2)
    ta = torch.tensor(alpha, dtype=td, requires_grad=True)
    na = ndgrad.tensor(alpha, dtype=nd, requires_grad=True)
    ty = torch.distributions.Gamma(ta, 1.0).rsample((4,))
    ny = ndgrad.distributions.Gamma(na, 1.0).rsample((4,))
    np.testing.assert_array_equal(ny.detach().numpy(), ty.detach().numpy())
    assert type(ny.grad_fn).__name__ == type(ty.grad_fn).__name__ == "DivBackward0"
    tb = torch.distributions.Beta(ta, ta * 2).rsample((3,))
    nb = ndgrad.distributions.Beta(na, na * 2).rsample((3,))
    np.testing.assert_array_equal(nb.detach().numpy(), tb.detach().numpy())
    nb.sum().backward()
    assert na.grad is not None and np.isfinite(na.grad.item())


@pytest.mark.parametrize("ahead", [2.2, 0.01])
def test_gamma_draws_are_torchs_for_large_mixed_inputs(ahead, monkeypatch):
    # Note [Fast gamma draws]: many elements (rejections, boosted, zero, NaN, negative and
    # infinite alphas, a cached normal at the start), torch's values bit for bit and the
    # generator left where torch leaves it; ``ahead`` 0.01 draws the uniforms in many blocks
    import ndgrad._generator as gen
    monkeypatch.setattr(gen, "_GAMMA_AHEAD", ahead)
    rng = np.random.default_rng(0)
    alpha = np.concatenate([rng.uniform(0.01, 3.0, 700), np.exp(rng.uniform(-6, 6, 300)),
                            [0.0, -0.0, np.nan, -0.5, -3.0, np.inf, 1e-30, 1.0]])
    rng.shuffle(alpha)
    for dtype in (np.float64, np.float32):
        a = alpha.astype(dtype).reshape(4, -1)
        torch.manual_seed(5)
        ndgrad.manual_seed(5)
        torch.randn(1)                               # leaves a cached normal
        ndgrad.randn(1)
        want = torch._standard_gamma(torch.from_numpy(a))
        got = gen.gamma_array(a, None)
        assert got.dtype == a.dtype
        np.testing.assert_array_equal(got, want.numpy())
        assert ndgrad.randn(3).tolist() == torch.randn(3).tolist()
        assert ndgrad.rand(2, dtype=ndgrad.float64).tolist() == \
            torch.rand(2, dtype=torch.float64).tolist()
    conc = rng.uniform(0.2, 4.0, (50, 4))    # (rows of 5+: torch's sum order differs in the ulp)
    torch.manual_seed(6)
    ndgrad.manual_seed(6)
    want = torch.distributions.Dirichlet(torch.from_numpy(conc)).sample()
    got = ndgrad.distributions.Dirichlet(ndgrad.from_numpy(conc)).sample()
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    want = torch.distributions.Beta(torch.tensor(conc[:, 0]), torch.tensor(conc[:, 1])).sample()
    got = ndgrad.distributions.Beta(ndgrad.tensor(conc[:, 0]), ndgrad.tensor(conc[:, 1])).sample()
    np.testing.assert_array_equal(got.numpy(), want.numpy())
