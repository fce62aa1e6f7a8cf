"""Gamma and Dirichlet draws whose gradient flows to the concentration.

Note [Implicit reparameterization]
A gamma variate has no closed-form inverse CDF, so its draw cannot be written as a smooth
function of a fixed noise. Holding the quantile ``u = P(alpha, x)`` fixed (``P`` the
regularized lower incomplete gamma function) and differentiating ``P(alpha, x(alpha)) = u``
gives ``dx/dalpha = -(dP/dalpha) / (dP/dx)``, with ``dP/dx`` the density. ``dP/dalpha`` has no
convenient closed form either; it is taken here by central differences of SciPy's ``gammainc``
with Richardson extrapolation (error far below the sampling noise any caller sees). Dirichlet
draws normalize independent gamma draws, so their gradient is the chain rule through that
normalization; Beta draws are two-component Dirichlet draws. The draws themselves are torch's
numbers for the seed (``gamma_array``, Note [Random streams]).
"""

from __future__ import annotations


import numpy as np

import ndgrad
from ndgrad._generator import gamma_array
from ndgrad.tensor import Tensor


def standard_gamma_grad(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``d x / d alpha`` of a Gamma(alpha, 1) draw ``x`` at a fixed quantile."""
    from scipy import special

    alpha = np.asarray(alpha, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)

    def central(h: np.ndarray) -> np.ndarray:
        return (special.gammainc(alpha + h, x) - special.gammainc(alpha - h, x)) / (2 * h)

    h = 1e-3 * np.minimum(alpha, 1.0)
    dp_dalpha = (4 * central(h / 2) - central(h)) / 3
    log_density = (alpha - 1) * np.log(x) - x - special.gammaln(alpha)
    return -dp_dalpha / np.exp(log_density)


def _draw_standard_gamma(alpha: np.ndarray) -> np.ndarray:
    return gamma_array(alpha, None)


class _StandardGamma(ndgrad.autograd.Function):
    @staticmethod
    def forward(ctx, alpha):
        draws = ndgrad.from_numpy(_draw_standard_gamma(alpha.detach().numpy()))
        ctx.save_for_backward(alpha, draws)
        return draws

    @staticmethod
    def backward(ctx, grad):
        alpha, draws = ctx.saved_tensors
        slope = standard_gamma_grad(alpha.detach().numpy(), draws.detach().numpy())
        return grad * ndgrad.from_numpy(slope.astype(alpha.detach().numpy().dtype))


def standard_gamma(alpha: Tensor) -> Tensor:
    """Gamma(alpha, 1) draws of ``alpha``'s shape, differentiable in ``alpha``."""
    if alpha.requires_grad and ndgrad.is_grad_enabled():
        return _StandardGamma.apply(alpha)
    return ndgrad.from_numpy(_draw_standard_gamma(alpha.detach().numpy()))


def _draw_dirichlet(alpha: np.ndarray) -> tuple:
    """Dirichlet draws and their float64 gammas: as torch's kernel, the gammas of a float64
    ``alpha`` (``gamma_array``'s float64 arithmetic), normalized in float64, then rounded to
    ``alpha``'s dtype once."""
    gam = _draw_standard_gamma(alpha.astype(np.float64))
    return np.asarray((gam / gam.sum(-1, keepdims=True)).astype(alpha.dtype)), gam


class _Dirichlet(ndgrad.autograd.Function):
    @staticmethod
    def forward(ctx, alpha):
        x, gam = _draw_dirichlet(alpha.detach().numpy())
        ctx.save_for_backward(alpha, ndgrad.from_numpy(gam))
        return ndgrad.from_numpy(x)

    @staticmethod
    def backward(ctx, grad):
        # x = G / S, S = sum(G): dx_i/dalpha_j = (delta_ij - x_i) * slope_j / S, slope_j the
        # implicit derivative of the gamma draw G_j (Note [Implicit reparameterization])
        alpha, gam = ctx.saved_tensors
        a = alpha.detach().numpy()
        G = gam.numpy()
        S = G.sum(-1, keepdims=True)
        slope = standard_gamma_grad(a.astype(np.float64), G)
        g = grad.detach().numpy().astype(np.float64)
        out = slope / S * (g - (g * (G / S)).sum(-1, keepdims=True))
        return ndgrad.from_numpy(out.astype(a.dtype))


def dirichlet(concentration: Tensor) -> Tensor:
    """Dirichlet draws (normalized gamma draws) of ``concentration``'s shape."""
    if concentration.requires_grad and ndgrad.is_grad_enabled():
        return _Dirichlet.apply(concentration)
    return ndgrad.from_numpy(_draw_dirichlet(concentration.detach().numpy())[0])
