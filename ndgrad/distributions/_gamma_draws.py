"""Gamma and Dirichlet draws whose gradient flows to the concentration.

Note [Implicit reparameterization]
A gamma variate has no closed-form inverse CDF, so its draw cannot be written as a smooth
function of a fixed noise. Holding the quantile ``u = P(alpha, x)`` fixed (``P`` the
regularized lower incomplete gamma function) and differentiating ``P(alpha, x(alpha)) = u``
gives ``dx/dalpha = -(dP/dalpha) / (dP/dx)``, with ``dP/dx`` the density. ``dP/dalpha`` has no
convenient closed form either; it is taken here by central differences of SciPy's ``gammainc``
with Richardson extrapolation (error far below the sampling noise any caller sees). Dirichlet
draws normalize independent gamma draws, so their gradient is the chain rule through that
normalization; Beta draws are two-component Dirichlet draws.

Note [Gamma draws]
The draws are torch's numbers (Note [Random streams] in ndgrad/_generator.py): per element in
row-major order, Marsaglia and Tsang's acceptance-rejection with float64 uniforms (53 bits of
a 64-bit draw) and float64 normals (Box-Muller pairs, the second kept for the next call), an
``alpha < 1`` boosted to ``alpha + 1`` by one uniform; the arithmetic on ``alpha`` itself in
the tensor's type (float32 below float64) and the constants as torch's single-precision
literals, as its kernel. Dirichlet draws (hence Beta) draw their gammas from a float64
``alpha`` and normalize in float64. A Python loop per element: fine for the sizes sampled in
training scripts (mixup's one Beta draw, a batch of Gamma draws).
"""

from __future__ import annotations

import math

import numpy as np

import ndgrad
from ndgrad._generator import default_generator, uniform_bits
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


_THIRD = np.float32(1) / np.float32(3)       # torch's ``1.0f / 3.0f``
_K = float(np.float32(0.0331))


def _normal64(g) -> float:
    """One float64 standard normal as torch's ``normal_distribution<double>``."""
    if g._next_normal is not None:
        v, g._next_normal = g._next_normal, None
        return v
    u1, u2 = uniform_bits(g, 2, np.float64)
    r = math.sqrt(-2.0 * math.log1p(-u2))
    theta = 2.0 * math.pi * u1
    g._next_normal = r * math.sin(theta)
    return r * math.cos(theta)


def _gamma_one(g, alpha, kind) -> float:
    """One Gamma(alpha, 1) draw (Note [Gamma draws]); ``kind`` the type of ``alpha``'s
    arithmetic (np.float32 or np.float64)."""
    a = kind(alpha)
    scale = 1.0
    if a < 1:
        if a == 0:
            return 0.0
        scale *= (1.0 - float(uniform_bits(g, 1, np.float64)[0])) ** float(kind(1) / a)
        a = kind(a + kind(1))
    d = float(kind(a - kind(_THIRD)))
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        while True:
            x = _normal64(g)
            y = 1.0 + c * x
            if y > 0:
                break
        v = y * y * y
        u = 1.0 - float(uniform_bits(g, 1, np.float64)[0])
        xx = x * x
        if u < 1.0 - _K * xx * xx:
            return scale * d * v
        if math.log(u) < 0.5 * xx + d * (1.0 - v + math.log(v)):
            return scale * d * v


def _draw_standard_gamma(alpha: np.ndarray, kind=None) -> np.ndarray:
    """Gamma(alpha, 1) draws of ``alpha``'s dtype, torch's numbers (Note [Gamma draws])."""
    if kind is None:
        kind = np.float64 if alpha.dtype == np.float64 else np.float32
    flat = np.ascontiguousarray(alpha, dtype=np.float64).reshape(-1)
    out = np.fromiter((_gamma_one(default_generator, a, kind) for a in flat.tolist()),
                      np.float64, flat.size).reshape(alpha.shape)
    out = out.astype(alpha.dtype)
    return np.asarray(np.maximum(out, np.finfo(alpha.dtype).tiny))


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
    """Dirichlet draws and their float64 gammas: gammas of a float64 ``alpha``, normalized in
    float64 (Note [Gamma draws])."""
    gam = _draw_standard_gamma(alpha.astype(np.float64), np.float64)
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
