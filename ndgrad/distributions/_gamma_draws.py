"""Gamma and Dirichlet draws whose gradient flows to the concentration.

Note [Implicit reparameterization]
A gamma variate has no closed-form inverse CDF, so its draw cannot be written as a smooth
function of a fixed noise. Holding the quantile ``u = P(alpha, x)`` fixed (``P`` the
regularized lower incomplete gamma function) and differentiating ``P(alpha, x(alpha)) = u``
gives ``dx/dalpha = -(dP/dalpha) / (dP/dx)``, with ``dP/dx`` the density. ``dP/dalpha`` has no
convenient closed form either; it is taken here by central differences of SciPy's ``gammainc``
with Richardson extrapolation (error far below the sampling noise any caller sees).

Dirichlet draws normalize independent gamma draws, but their gradient is not the chain rule
through that normalization (which would depend on the gammas, not only on the draw): as
torch's, each coordinate ``x_j`` is treated as a Beta(a_j, t - a_j) draw (``t`` the total
concentration), differentiated at a fixed quantile of that marginal with the other
concentrations held, ``D_j = (dx_j/da_j) / (1 - x_j)``, and the gradient is
``D_j * (g_j - sum_i x_i g_i)``: the same per-draw numbers as torch (to the accuracy of its
series approximations, ~1e-3 relative at worst). ``dI/da`` of the regularized incomplete beta
function ``I`` is taken by central differences as above. Beta draws are two-component
Dirichlet draws. The draws themselves are torch's numbers for the seed (``gamma_array``, Note
[Random streams]).
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


def dirichlet_grad(x: np.ndarray, alpha: np.ndarray, total: np.ndarray) -> np.ndarray:
    """``D`` of Note [Implicit reparameterization]: the slope of a Dirichlet coordinate ``x``
    in its concentration ``alpha`` (total ``total``), divided by ``1 - x``."""
    from scipy import special

    x, a, t = (np.asarray(v, dtype=np.float64) for v in (x, alpha, total))
    b = t - a

    def central(h: np.ndarray) -> np.ndarray:
        return (special.betainc(a + h, b, x) - special.betainc(a - h, b, x)) / (2 * h)

    h = 1e-4 * np.minimum(a, 1.0)
    with np.errstate(all="ignore"):
        di_da = (4 * central(h / 2) - central(h)) / 3
        log_density = (special.xlogy(a - 1, x) + special.xlog1py(b - 1, -x)
                       - special.betaln(a, b))
        slope = -di_da / np.exp(log_density) / (1 - x)
    # a draw at the edge of the simplex (underflow of a tiny concentration) does not move
    return np.where(np.isfinite(slope) & (x > 0) & (x < 1), slope, 0.0)


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
        x, _ = _draw_dirichlet(alpha.detach().numpy())
        out = ndgrad.from_numpy(x)
        ctx.save_for_backward(alpha, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        # D_j * (g_j - sum_i x_i g_i) (Note [Implicit reparameterization])
        alpha, x = ctx.saved_tensors
        a = alpha.detach().numpy()
        xs = x.detach().numpy().astype(np.float64)
        total = np.broadcast_to(a.astype(np.float64).sum(-1, keepdims=True), a.shape)
        d = dirichlet_grad(xs, a, total)
        g = grad.detach().numpy().astype(np.float64)
        out = d * (g - (g * xs).sum(-1, keepdims=True))
        return ndgrad.from_numpy(out.astype(a.dtype))


def dirichlet(concentration: Tensor) -> Tensor:
    """Dirichlet draws (normalized gamma draws) of ``concentration``'s shape."""
    if concentration.requires_grad and ndgrad.is_grad_enabled():
        return _Dirichlet.apply(concentration)
    return ndgrad.from_numpy(_draw_dirichlet(concentration.detach().numpy())[0])
