"""KL divergences between different families, as ``-H(p) - E_p[log q(X)]``.

Each target family ``q`` has its expected log density under ``p`` written with a few
expectations of ``p`` (mean, variance, ``E[log X]``, ``E[log(1 - X)]``, ``E[exp(-t X)]``);
each source family supplies those it has in closed form. Where ``q`` has zero density on part
of ``p``'s support the divergence is ``inf`` (registered once per pair below).

Example:
    >>> import ndgrad
    >>> from ndgrad.distributions import Exponential, Normal, kl_divergence
    >>> round(kl_divergence(Exponential(ndgrad.tensor(1.0)), Normal(1.0, 1.0)).item(), 4)
    0.4189
"""

from __future__ import annotations

import math
from typing import Any

import ndgrad
from ndgrad.tensor import Tensor

from .continuous import Exponential, Gumbel, Laplace, Normal, Uniform
from .continuous_bernoulli import ContinuousBernoulli
from .discrete import Bernoulli, Binomial, Poisson
from .gamma import Beta, Gamma
from .kl import _infinite, register_kl
from .low_rank_multivariate_normal import LowRankMultivariateNormal
from .multivariate_normal import MultivariateNormal, _half_log_det
from .transformed_families import Pareto

_HALF_LOG_TWO_PI = 0.5 * math.log(2 * math.pi)


# --- expectations under p -------------------------------------------------------------------

def _uniform_mean_xlogx(lo: Tensor, hi: Tensor) -> Tensor:
    """``E[log X]`` for ``X ~ Uniform(lo, hi)``, ``0 < lo``: the mean of ``log`` over the
    interval, ``(hi log hi - lo log lo) / (hi - lo) - 1``."""
    return (ndgrad.xlogy(hi, hi) - ndgrad.xlogy(lo, lo)) / (hi - lo) - 1


def _mean_log(p: Any) -> Tensor:
    """``E_p[log X]``."""
    if isinstance(p, Beta):
        return ndgrad.digamma(p.concentration1) - ndgrad.digamma(
            p.concentration1 + p.concentration0)
    if isinstance(p, Gamma):
        return ndgrad.digamma(p.concentration) - p.rate.log()
    if isinstance(p, Exponential):
        return -p.rate.log() - 0.57721566490153286060
    if isinstance(p, Pareto):
        return p.scale.log() + p.alpha.reciprocal()
    if isinstance(p, Uniform):
        return _uniform_mean_xlogx(p.low.clamp(min=0), p.high)
    raise NotImplementedError


def _mean_log_complement(p: Any) -> Tensor:
    """``E_p[log(1 - X)]``."""
    if isinstance(p, Beta):
        return ndgrad.digamma(p.concentration0) - ndgrad.digamma(
            p.concentration1 + p.concentration0)
    if isinstance(p, Uniform):
        return _uniform_mean_xlogx((1 - p.high).clamp(min=0), 1 - p.low)
    raise NotImplementedError


def _laplace_transform(p: Any, t: Tensor) -> Tensor:
    """``E_p[exp(-t X)]``."""
    if isinstance(p, Exponential):
        return p.rate / (p.rate + t)
    if isinstance(p, Gamma):
        return (p.rate / (p.rate + t)).pow(p.concentration)
    if isinstance(p, Normal):
        return (-t * p.loc + 0.5 * (t * p.scale).pow(2)).exp()
    if isinstance(p, Uniform):
        span = p.high - p.low
        return ((-t * p.low).exp() - (-t * p.high).exp()) / (t * span)
    raise NotImplementedError


# --- expected log densities of q ------------------------------------------------------------

def _cross_normal(p: Any, q: Normal) -> Tensor:
    spread = p.variance + (p.mean - q.loc).pow(2)
    return -q.scale.log() - _HALF_LOG_TWO_PI - spread / (2 * q.scale.pow(2))


def _cross_exponential(p: Any, q: Exponential) -> Tensor:
    return q.rate.log() - q.rate * p.mean


def _cross_gamma(p: Any, q: Gamma) -> Tensor:
    a, b = q.concentration, q.rate
    return a * b.log() + (a - 1) * _mean_log(p) - b * p.mean - ndgrad.lgamma(a)


def _cross_gumbel(p: Any, q: Gumbel) -> Tensor:
    shift = (p.mean - q.loc) / q.scale
    tail = (q.loc / q.scale).exp() * _laplace_transform(p, q.scale.reciprocal())
    return -q.scale.log() - shift - tail


def _cross_beta(p: Any, q: Beta) -> Tensor:
    a, b = q.concentration1, q.concentration0
    log_beta = ndgrad.lgamma(a) + ndgrad.lgamma(b) - ndgrad.lgamma(a + b)
    return (a - 1) * _mean_log(p) + (b - 1) * _mean_log_complement(p) - log_beta


def _cross_continuous_bernoulli(p: Any, q: ContinuousBernoulli) -> Tensor:
    m = p.mean
    return q._log_norm() + m * q.probs.log() + (1 - m) * (-q.probs).log1p()


def _cross_pareto(p: Any, q: Pareto) -> Tensor:
    return q.alpha.log() + q.alpha * q.scale.log() - (q.alpha + 1) * _mean_log(p)


def _kl_via(cross: Any, p: Any, q: Any) -> Tensor:
    return -p.entropy() - cross(p, q)


def _register_cross(ps: tuple, q_type: type, cross: Any, guard: Any = None) -> None:
    """Register ``KL(p || q) = -H(p) - cross(p, q)`` for each ``p`` type; ``guard(p, q)``,
    when given, is a boolean tensor marking where ``q`` misses part of ``p``'s support."""
    def rule(p: Any, q: Any) -> Tensor:
        out = _kl_via(cross, p, q)
        if guard is not None:
            out = out.masked_fill(guard(p, q), math.inf)
        return out
    for p_type in ps:
        register_kl(p_type, q_type)(rule)


def _below_zero(p: Any, q: Any) -> Tensor:
    return p.low < 0


_register_cross((Beta, ContinuousBernoulli, Exponential, Gamma, Gumbel, Laplace, Uniform),
                Normal, _cross_normal)
_register_cross((Beta, ContinuousBernoulli, Gamma, Pareto), Exponential, _cross_exponential)
_register_cross((Uniform,), Exponential, _cross_exponential, _below_zero)
_register_cross((Beta, Exponential, Pareto), Gamma, _cross_gamma)
_register_cross((Uniform,), Gamma, _cross_gamma, _below_zero)
_register_cross((Exponential, Gamma, Uniform), Gumbel, _cross_gumbel)
_register_cross((Uniform,), Beta, _cross_beta, lambda p, q: (p.low < 0) | (p.high > 1))
_register_cross((Beta,), ContinuousBernoulli, _cross_continuous_bernoulli)
_register_cross((Uniform,), ContinuousBernoulli, _cross_continuous_bernoulli,
                lambda p, q: (p.low < 0) | (p.high > 1))
_register_cross((Uniform,), Pareto, _cross_pareto, lambda p, q: p.low < q.scale)


@register_kl(Pareto, Normal)
def _pareto_normal(p: Pareto, q: Normal) -> Tensor:
    # the variance is infinite for alpha <= 2
    return _kl_via(_cross_normal, p, q).masked_fill(p.alpha <= 2, math.inf)


@register_kl(Gumbel, Normal)
def _gumbel_normal(p: Gumbel, q: Normal) -> Tensor:
    return _kl_via(_cross_normal, p, q)


@register_kl(Normal, Gumbel)
def _normal_gumbel(p: Normal, q: Gumbel) -> Tensor:
    return _kl_via(_cross_gumbel, p, q)


@register_kl(Normal, Laplace)
def _normal_laplace(p: Normal, q: Laplace) -> Tensor:
    # E|X - mu| for X ~ N(m, s^2): s sqrt(2/pi) exp(-d^2 / 2s^2) + d (1 - 2 Phi(-d / s))
    d = p.loc - q.loc
    s = p.scale
    folded = (s * math.sqrt(2 / math.pi) * (-(d / s).pow(2) / 2).exp()
              + d * ndgrad.erf(d / (s * math.sqrt(2))))
    return -p.entropy() + (2 * q.scale).log() + folded / q.scale


@register_kl(Beta, Uniform)
def _beta_uniform(p: Beta, q: Uniform) -> Tensor:
    out = -p.entropy() + (q.high - q.low).log()
    return out.masked_fill((q.low > 0) | (q.high < 1), math.inf)


@register_kl(ContinuousBernoulli, Uniform)
def _continuous_bernoulli_uniform(p: ContinuousBernoulli, q: Uniform) -> Tensor:
    out = -p.entropy() + (q.high - q.low).log()
    return out.masked_fill((q.low > 0) | (q.high < 1), math.inf)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _continuous_bernoulli_pair(p: ContinuousBernoulli, q: ContinuousBernoulli) -> Tensor:
    return -p.entropy() - _cross_continuous_bernoulli(p, q)


@register_kl(Pareto, Pareto)
def _pareto_pareto(p: Pareto, q: Pareto) -> Tensor:
    ratio = q.alpha / p.alpha
    out = -ratio.log() + q.alpha * (p.scale / q.scale).log() + ratio - 1
    return out.masked_fill(p.scale < q.scale, math.inf)


@register_kl(Pareto, Gamma)
def _pareto_gamma(p: Pareto, q: Gamma) -> Tensor:
    return _kl_via(_cross_gamma, p, q).masked_fill(p.alpha <= 1, math.inf)


@register_kl(Bernoulli, Poisson)
def _bernoulli_poisson(p: Bernoulli, q: Poisson) -> Tensor:
    return -p.entropy() + q.rate - p.probs * q.rate.log()


def _register_infinite(pairs: list) -> None:
    for a, b in pairs:
        register_kl(a, b)(lambda p, q: _infinite(p))


# q is zero on part of p's support everywhere
_register_infinite([(Poisson, Bernoulli), (Poisson, Binomial), (Beta, Pareto),
                    (ContinuousBernoulli, Pareto), (Pareto, Beta), (Pareto, Uniform),
                    (Pareto, ContinuousBernoulli)]
                   + [(a, ContinuousBernoulli) for a in (Exponential, Gamma, Gumbel, Laplace,
                                                         Normal)]
                   + [(a, Pareto) for a in (Exponential, Gamma, Gumbel, Laplace, Normal)])


# --- Gaussians with low-rank covariance ------------------------------------------------------

def _gaussian(d: Any) -> tuple:
    """``(loc, Cholesky factor of the covariance)`` of a multivariate Gaussian."""
    if isinstance(d, MultivariateNormal):
        return d.loc, d._tril
    return d.loc, ndgrad.linalg.cholesky(d._W @ d._W.mT + d._D.diag_embed())


def _gaussian_kl(p: Any, q: Any) -> Tensor:
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two (Low Rank) Multivariate Normals with "
                         "different event shapes cannot be computed")
    (mp, Lp), (mq, Lq) = _gaussian(p), _gaussian(q)
    n = p.event_shape[0]
    batch = ndgrad.broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape))
    Lp = Lp.expand(tuple(batch) + (n, n))
    Lq = Lq.expand(tuple(batch) + (n, n))
    spread = ndgrad.linalg.solve_triangular(Lq, Lp, upper=False).pow(2).sum((-2, -1))
    diff = (mq - mp).expand(tuple(batch) + (n,)).unsqueeze(-1)
    gap = ndgrad.linalg.solve_triangular(Lq, diff, upper=False).pow(2).sum((-2, -1))
    return (_half_log_det(Lq) - _half_log_det(Lp)) + 0.5 * (spread + gap - n)


for _pq in ((LowRankMultivariateNormal, LowRankMultivariateNormal),
            (LowRankMultivariateNormal, MultivariateNormal),
            (MultivariateNormal, LowRankMultivariateNormal)):
    register_kl(*_pq)(_gaussian_kl)
