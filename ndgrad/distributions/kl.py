"""``kl_divergence(p, q)`` and ``register_kl``: closed-form Kullback-Leibler divergences
chosen by the types of both arguments.

Note [KL dispatch]
Rules are registered for a pair of classes. A call looks at every registered pair that both
arguments are instances of and ranks each by how far up ``type(p)``'s and ``type(q)``'s
method resolution orders its classes sit. The pair that is closest for ``p`` first (then for
``q``) wins; if the pair that is closest for ``q`` first is a different rule, the choice is
ambiguous and a ``RuntimeWarning`` asks for a rule for the exact pair. Lookups are memoized per
type pair; registering clears the memo.

Example:
    >>> import ndgrad
    >>> from ndgrad.distributions import Normal, kl_divergence
    >>> kl_divergence(Normal(0.0, 1.0), Normal(1.0, 1.0)).item()
    0.5
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Callable

import ndgrad
from ndgrad.tensor import Tensor

from .continuous import Cauchy, Exponential, Gumbel, Laplace, Normal, Uniform
from .discrete import Bernoulli, Binomial, Categorical, Geometric, OneHotCategorical, Poisson
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .gamma import Beta, Dirichlet, Gamma
from .independent import Independent
from .multivariate_normal import MultivariateNormal, _half_log_det
from .transformed_distribution import HalfNormal, TransformedDistribution
from .utils import _sum_last, euler_constant

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict = {}
_KL_MEMOIZE: dict = {}


def register_kl(type_p: type, type_q: type) -> Callable:
    """Decorator registering ``fn(p, q)`` as the KL divergence for ``type_p`` and
    ``type_q`` (Note [KL dispatch]).

    Example:
        >>> from ndgrad.distributions import Normal, register_kl
        >>> class Wide(Normal):
        ...     pass
        >>> @register_kl(Wide, Wide)
        ... def _kl_wide(p, q):
        ...     return (p.scale / q.scale).log()
    """
    for t in (type_p, type_q):
        if not issubclass(t, Distribution):
            raise TypeError(f"Expected a subclass of Distribution but got {t}")

    def decorate(fn: Callable) -> Callable:
        _KL_REGISTRY[type_p, type_q] = fn
        _KL_MEMOIZE.clear()
        return fn
    return decorate


def _rank(klass: type, sub: type) -> int:
    return sub.__mro__.index(klass)


def _lookup(type_p: type, type_q: type) -> Any:
    found = [(a, b) for a, b in _KL_REGISTRY if issubclass(type_p, a) and issubclass(type_q, b)]
    if not found:
        return NotImplemented
    by_p = min(found, key=lambda ab: (_rank(ab[0], type_p), _rank(ab[1], type_q)))
    by_q = min(found, key=lambda ab: (_rank(ab[1], type_q), _rank(ab[0], type_p)))
    rule, other = _KL_REGISTRY[by_p], _KL_REGISTRY[by_q]
    if rule is not other:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
                      f"Please register_kl({type_p.__name__}, {type_q.__name__})",
                      RuntimeWarning, stacklevel=3)
    return rule


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """``KL(p || q) = E_p[log p(x) - log q(x)]`` per batch element."""
    key = (type(p), type(q))
    if key not in _KL_MEMOIZE:
        _KL_MEMOIZE[key] = _lookup(*key)
    rule = _KL_MEMOIZE[key]
    if rule is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{type(p).__name__} and q type {type(q).__name__}")
    return rule(p, q)


def _infinite(p: Distribution) -> Tensor:
    """``inf`` of ``p``'s batch shape: ``q`` gives zero density where ``p`` has mass."""
    for value in p.__dict__.values():
        if isinstance(value, Tensor) and value.is_floating_point():
            dtype = value.dtype
            break
    else:
        dtype = ndgrad.get_default_dtype()
    return ndgrad.full(tuple(p.batch_shape), math.inf, dtype=dtype)


def _bernoulli_terms(p1: Tensor, p2: Tensor) -> Tensor:
    """``p1 log(p1/p2) + (1-p1) log((1-p1)/(1-p2))`` with ``0 log 0 = 0``."""
    return (ndgrad.xlogy(p1, p1) - ndgrad.xlogy(p1, p2)
            + ndgrad.xlogy(1 - p1, 1 - p1) - ndgrad.xlogy(1 - p1, 1 - p2))


# --- same family ----------------------------------------------------------------------------

@register_kl(Normal, Normal)
def _normal_normal(p: Normal, q: Normal) -> Tensor:
    ratio = (p.scale / q.scale).pow(2)
    gap = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (ratio + gap - 1 - ratio.log())


@register_kl(HalfNormal, HalfNormal)
def _halfnormal_halfnormal(p: HalfNormal, q: HalfNormal) -> Tensor:
    ratio = (p.scale / q.scale).pow(2)
    return 0.5 * (ratio - 1 - ratio.log())


@register_kl(Laplace, Laplace)
def _laplace_laplace(p: Laplace, q: Laplace) -> Tensor:
    gap = (p.loc - q.loc).abs()
    ratio = p.scale / q.scale
    return -ratio.log() + gap / q.scale + ratio * (-gap / p.scale).exp() - 1


@register_kl(Cauchy, Cauchy)
def _cauchy_cauchy(p: Cauchy, q: Cauchy) -> Tensor:
    num = (p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)
    return (num / (4 * p.scale * q.scale)).log()


@register_kl(Gumbel, Gumbel)
def _gumbel_gumbel(p: Gumbel, q: Gumbel) -> Tensor:
    ratio = p.scale / q.scale
    shift = (p.loc - q.loc) / q.scale
    tail = (ndgrad.lgamma(1 + ratio) - shift).exp()
    return -ratio.log() + shift + euler_constant * (ratio - 1) + tail - 1


@register_kl(Uniform, Uniform)
def _uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    out = ((q.high - q.low) / (p.high - p.low)).log()
    uncovered = (q.low > p.low) | (q.high < p.high)
    return out.masked_fill(uncovered, math.inf)


@register_kl(Exponential, Exponential)
def _exponential_exponential(p: Exponential, q: Exponential) -> Tensor:
    ratio = q.rate / p.rate
    return ratio - 1 - ratio.log()


@register_kl(Gamma, Gamma)
def _gamma_gamma(p: Gamma, q: Gamma) -> Tensor:
    a, b = p.concentration, p.rate
    c, d = q.concentration, q.rate
    return ((a - c) * ndgrad.digamma(a) - ndgrad.lgamma(a) + ndgrad.lgamma(c)
            + c * (b.log() - d.log()) + a * (d - b) / b)


@register_kl(Beta, Beta)
def _beta_beta(p: Beta, q: Beta) -> Tensor:
    a1, b1 = p.concentration1, p.concentration0
    a2, b2 = q.concentration1, q.concentration0
    lbeta = lambda x, y: ndgrad.lgamma(x) + ndgrad.lgamma(y) - ndgrad.lgamma(x + y)  # noqa: E731
    return (lbeta(a2, b2) - lbeta(a1, b1) + (a1 - a2) * ndgrad.digamma(a1)
            + (b1 - b2) * ndgrad.digamma(b1) + (a2 - a1 + b2 - b1) * ndgrad.digamma(a1 + b1))


@register_kl(Dirichlet, Dirichlet)
def _dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    a, b = p.concentration, q.concentration
    total = a.sum(-1)
    return (ndgrad.lgamma(total) - ndgrad.lgamma(a).sum(-1) - ndgrad.lgamma(b.sum(-1))
            + ndgrad.lgamma(b).sum(-1)
            + ((a - b) * (ndgrad.digamma(a) - ndgrad.digamma(total).unsqueeze(-1))).sum(-1))


@register_kl(Poisson, Poisson)
def _poisson_poisson(p: Poisson, q: Poisson) -> Tensor:
    return ndgrad.xlogy(p.rate, p.rate) - ndgrad.xlogy(p.rate, q.rate) - (p.rate - q.rate)


@register_kl(Bernoulli, Bernoulli)
def _bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    return _bernoulli_terms(p.probs, q.probs)


@register_kl(Binomial, Binomial)
def _binomial_binomial(p: Binomial, q: Binomial) -> Tensor:
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > "
                                  "p.total_count is not implemented")
    out = p.total_count * _bernoulli_terms(p.probs, q.probs)
    return out.masked_fill(p.total_count > q.total_count, math.inf)


@register_kl(Geometric, Geometric)
def _geometric_geometric(p: Geometric, q: Geometric) -> Tensor:
    # -H(p) - E_p[k] log(1 - q) - log q, with E_p[k] = 1/p - 1
    return -p.entropy() - (1 / p.probs - 1) * (-q.probs).log1p() - q.probs.log()


@register_kl(Categorical, Categorical)
def _categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    each = p.probs * (p.logits - q.logits)
    return each.masked_fill(p.probs == 0, 0.0).sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _onehot_onehot(p: OneHotCategorical, q: OneHotCategorical) -> Tensor:
    return _categorical_categorical(p._index_dist, q._index_dist)


@register_kl(MultivariateNormal, MultivariateNormal)
def _mvn_mvn(p: MultivariateNormal, q: MultivariateNormal) -> Tensor:
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different "
                         "event shapes cannot be computed")
    n = p.event_shape[0]
    batch = ndgrad.broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape))
    Lq = q._tril.expand(tuple(batch) + (n, n))
    Lp = p._tril.expand(tuple(batch) + (n, n))
    spread = ndgrad.linalg.solve_triangular(Lq, Lp, upper=False).pow(2).sum((-2, -1))
    diff = (q.loc - p.loc).expand(tuple(batch) + (n,)).unsqueeze(-1)
    gap = ndgrad.linalg.solve_triangular(Lq, diff, upper=False).pow(2).sum((-2, -1))
    return (_half_log_det(Lq) - _half_log_det(Lp)) + 0.5 * (spread + gap - n)


@register_kl(Independent, Independent)
def _independent_independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return _sum_last(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(TransformedDistribution, TransformedDistribution)
def _transformed_transformed(p: TransformedDistribution, q: TransformedDistribution) -> Tensor:
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError
    extra = len(p.event_shape) - len(p.base_dist.event_shape)
    return _sum_last(kl_divergence(p.base_dist, q.base_dist), extra)


@register_kl(ExponentialFamily, ExponentialFamily)
def _exponential_family_bregman(p: ExponentialFamily, q: ExponentialFamily) -> Tensor:
    """The Bregman divergence of the log-normalizer: ``A(eta_q) - A(eta_p) - <eta_q - eta_p,
    grad A(eta_p)>`` (the carrier measures cancel within one family)."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot be computed using Bregman divergences")
    eta_p = [x.detach().requires_grad_() for x in p._natural_params]
    eta_q = q._natural_params
    a_p = p._log_normalizer(*eta_p)
    slopes = ndgrad.autograd.grad(a_p.sum(), eta_p, create_graph=True)
    out = q._log_normalizer(*eta_q) - a_p
    for ep, eq, g in zip(eta_p, eta_q, slopes):
        out = out - p._fold_batch((eq - ep) * g)
    return out


# --- a real-line p against a q with a bounded or half-bounded support -------------------------

def _register_infinite(ps: tuple, qs: tuple) -> None:
    for a in ps:
        for b in qs:
            register_kl(a, b)(lambda p, q: _infinite(p))


_register_infinite((Normal, Laplace, Gumbel), (Beta, Exponential, Gamma, Uniform))
_register_infinite((Exponential, Gamma), (Beta, Uniform))
