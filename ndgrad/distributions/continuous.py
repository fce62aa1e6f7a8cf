"""Univariate continuous families with closed forms: Normal, Uniform, Exponential, Laplace,
Cauchy, Gumbel and StudentT.

Draws are built from ndgrad's standard uniform, normal and exponential fills, which give
torch's numbers for the seed (Note [Random streams] in ``ndgrad/_generator.py``), in the order
the textbook construction implies (``loc + scale * eps`` for a location-scale family).

Example:
    >>> import ndgrad
    >>> from ndgrad.distributions import Normal
    >>> d = Normal(ndgrad.tensor([0.0]), ndgrad.tensor([1.0]))
    >>> [round(v, 4) for v in d.log_prob(ndgrad.tensor([0.0])).tolist()]
    [-0.9189]
    >>> [round(v, 4) for v in d.cdf(ndgrad.tensor([0.0])).tolist()]
    [0.5]
"""

from __future__ import annotations

import math
from numbers import Number
from typing import Any, Optional

import ndgrad
from ndgrad.tensor import Tensor

from . import constraints
from .distribution import Distribution, _as_size
from .exp_family import ExponentialFamily
from .gamma import Chi2
from .utils import broadcast_all, euler_constant

__all__ = ["Cauchy", "Exponential", "GeneralizedPareto", "Gumbel", "Laplace", "Normal", "StudentT",
           "Uniform"]

_HALF_LOG_TWO_PI = 0.5 * math.log(2 * math.pi)


def _batch_of(*params: Any) -> ndgrad.Size:
    """The batch shape: ``()`` when every parameter was a Python number."""
    if all(isinstance(p, Number) for p in params):
        return ndgrad.Size(())
    return None  # type: ignore[return-value]


class _LocScale(Distribution):
    """Shared construction of the two-parameter location-scale families."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: Optional[bool] = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        shape = _batch_of(loc, scale) or self.loc.size()
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        return self._expand_params(type(self)._family(), batch_shape, _instance,
                                   ("loc", "scale"))

    @classmethod
    def _family(cls) -> type:
        """The public family a subclass belongs to (Normal for ``class My(Normal)``): the
        class whose ``__init__`` a user subclass must keep for the generic ``expand``."""
        return next(k for k in cls.__mro__ if _LocScale in k.__bases__)

    def _standardize(self, value: Tensor) -> Tensor:
        return (value - self.loc) / self.scale


class Normal(_LocScale, ExponentialFamily):
    """The normal (Gaussian) distribution with mean ``loc`` and standard deviation ``scale``.

    Example:
        >>> import ndgrad
        >>> _ = ndgrad.manual_seed(0)
        >>> tuple(Normal(ndgrad.zeros(2), 1.0).rsample((3,)).shape)
        (3, 2)
    """

    _mean_carrier_measure = 0

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = ndgrad.randn(shape, dtype=self.loc.dtype)
        return self.loc + eps * self.scale

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with ndgrad.no_grad():
            return self.rsample(sample_shape)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = self._standardize(value)
        return -0.5 * z * z - self.scale.log() - _HALF_LOG_TWO_PI

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + ndgrad.erf(self._standardize(value) / math.sqrt(2)))

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc + self.scale * ndgrad.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self) -> Tensor:
        return 0.5 + _HALF_LOG_TWO_PI + self.scale.log()

    @property
    def _natural_params(self) -> tuple:
        precision = self.scale.pow(-2)
        return self.loc * precision, -0.5 * precision

    def _log_normalizer(self, a: Tensor, b: Tensor) -> Tensor:
        # with a = mu / s^2, b = -1 / (2 s^2): A = mu^2 / (2 s^2) + log(s sqrt(2 pi))
        return -a.pow(2) / (4 * b) + 0.5 * (-math.pi / b).log()


class Laplace(_LocScale):
    """The Laplace (double exponential) distribution."""

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale.pow(2)

    @property
    def stddev(self) -> Tensor:
        return math.sqrt(2) * self.scale

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = ndgrad.finfo(self.loc.dtype).eps
        u = ndgrad.empty(shape, dtype=self.loc.dtype).uniform_(eps - 1, 1)
        # inverse CDF of a symmetric exponential at (u + 1) / 2
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        d = value - self.loc
        return 0.5 - 0.5 * d.sign() * (-d.abs() / self.scale).expm1()

    def icdf(self, value: Tensor) -> Tensor:
        half = value - 0.5
        return self.loc - self.scale * half.sign() * (-2 * half.abs()).log1p()

    def entropy(self) -> Tensor:
        return 1 + (2 * self.scale).log()


class Cauchy(_LocScale):
    """The Cauchy (Lorentz) distribution: no mean, infinite variance."""

    @property
    def mean(self) -> Tensor:
        return ndgrad.full(self._extended_shape(), math.nan, dtype=self.loc.dtype)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return ndgrad.full(self._extended_shape(), math.inf, dtype=self.loc.dtype)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = ndgrad.empty(shape, dtype=self.loc.dtype).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - self._standardize(value).pow(2).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._standardize(value).atan() / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        return (math.pi * (value - 0.5)).tan() * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + self.scale.log()


class Gumbel(_LocScale):
    """The Gumbel (type I extreme value) distribution."""

    has_rsample = True

    @property
    def mean(self) -> Tensor:
        return self.loc + self.scale * euler_constant

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        info = ndgrad.finfo(self.loc.dtype)
        u = ndgrad.rand(shape, dtype=self.loc.dtype).clamp(min=info.tiny, max=1 - info.eps)
        return self.loc - self.scale * (-u.log()).log()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = self._standardize(value)
        return -(z + (-z).exp()) - self.scale.log()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return (-(-self._standardize(value)).exp()).exp()

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc - self.scale * (-value.log()).log()

    def entropy(self) -> Tensor:
        return self.scale.log() + (1 + euler_constant)


class Uniform(Distribution):
    """The continuous uniform distribution on ``[low, high)``."""

    arg_constraints = {"low": constraints.dependent(is_discrete=False, event_dim=0),
                       "high": constraints.dependent(is_discrete=False, event_dim=0)}
    has_rsample = True

    def __init__(self, low: Any, high: Any, validate_args: Optional[bool] = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        shape = _batch_of(low, high) or self.low.size()
        super().__init__(shape, validate_args=validate_args)
        if self._validate_args and not bool(self.low.lt(self.high).all()):
            rule = constraints.less_than(self.high)
            raise ValueError(self._invalid_parameter_message("low", self.low, rule))

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        return self._expand_params(Uniform, batch_shape, _instance, ("low", "high"))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> Any:
        return constraints.interval(self.low, self.high)

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        return math.nan * self.high

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        u = ndgrad.rand(self._extended_shape(sample_shape), dtype=self.low.dtype)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        inside = self.low.le(value).type_as(self.low) * self.high.gt(value).type_as(self.low)
        return inside.log() - (self.high - self.low).log()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value: Tensor) -> Tensor:
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        return (self.high - self.low).log()


class Exponential(ExponentialFamily):
    """The exponential distribution with ``rate`` (mean ``1 / rate``)."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, rate: Any, validate_args: Optional[bool] = None) -> None:
        (self.rate,) = broadcast_all(rate)
        shape = ndgrad.Size(()) if isinstance(rate, Number) else self.rate.size()
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        return self._expand_params(Exponential, batch_shape, _instance, ("rate",))

    @property
    def mean(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def mode(self) -> Tensor:
        return ndgrad.zeros_like(self.rate)

    @property
    def stddev(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.rate.pow(-2)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return ndgrad.empty(shape, dtype=self.rate.dtype).exponential_() / self.rate

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        return -(-value).log1p() / self.rate

    def entropy(self) -> Tensor:
        return 1.0 - self.rate.log()

    @property
    def _natural_params(self) -> tuple:
        return (-self.rate,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return -(-x).log()


class StudentT(Distribution):
    """Student's t distribution with ``df`` degrees of freedom, location and scale."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df: Any, loc: Any = 0.0, scale: Any = 1.0,
                 validate_args: Optional[bool] = None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df, validate_args=validate_args)
        super().__init__(self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._expand_params(StudentT, batch_shape, _instance, ("df", "loc", "scale"))
        new._chi2 = self._chi2.expand(_as_size(batch_shape))
        return new

    @property
    def mean(self) -> Tensor:
        m = self.loc.clone()
        return ndgrad.where(self.df > 1, m, ndgrad.full_like(m, math.nan))

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2)
        heavy = ndgrad.where(df > 1, ndgrad.full_like(df, math.inf),
                             ndgrad.full_like(df, math.nan))
        return ndgrad.where(df > 2, finite, heavy)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        x = ndgrad.randn(shape, dtype=self.df.dtype)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * x * (z / self.df).rsqrt()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        half = 0.5 * self.df
        log_norm = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
                    + ndgrad.lgamma(half) - ndgrad.lgamma(half + 0.5))
        return -0.5 * (self.df + 1) * (y.pow(2) / self.df).log1p() - log_norm

    def entropy(self) -> Tensor:
        half = 0.5 * self.df
        log_beta = ndgrad.lgamma(half) + math.lgamma(0.5) - ndgrad.lgamma(half + 0.5)
        return (self.scale.log() + (half + 0.5) * (ndgrad.digamma(half + 0.5)
                                                   - ndgrad.digamma(half))
                + 0.5 * self.df.log() + log_beta)


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution: location ``loc``, ``scale`` and shape
    ``concentration`` (``xi``); the support is ``[loc, inf)`` for ``xi >= 0`` and ``[loc,
    loc - scale / xi]`` for ``xi < 0``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, concentration: Any,
                 validate_args: Optional[bool] = None) -> None:
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        shape = _batch_of(loc, scale, concentration) or self.loc.size()
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        return self._expand_params(GeneralizedPareto, batch_shape, _instance,
                                   ("loc", "scale", "concentration"))

    def _safe_xi(self) -> Tensor:
        """The shape with zeros replaced by one (their branch is taken elsewhere)."""
        xi = self.concentration
        return ndgrad.where(xi == 0, ndgrad.ones_like(xi), xi)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> Any:
        xi = self.concentration
        upper = ndgrad.where(xi < 0, self.loc - self.scale / self._safe_xi(),
                             ndgrad.full_like(self.loc, math.inf))
        return constraints.interval(self.loc, upper)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        u = ndgrad.rand(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.icdf(u)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        xi = self._safe_xi()
        general = -(1 / xi + 1) * (xi * z).log1p()
        body = ndgrad.where(self.concentration == 0, -z, general)
        return body - self.scale.log()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        xi = self._safe_xi()
        log_tail = ndgrad.where(self.concentration == 0, -z, -(xi * z).log1p() / xi)
        return -log_tail.expm1()

    def icdf(self, value: Tensor) -> Tensor:
        xi = self._safe_xi()
        log_tail = (-value).log1p()
        general = (-xi * log_tail).expm1() / xi
        z = ndgrad.where(self.concentration == 0, -log_tail, general)
        return self.loc + self.scale * z

    @property
    def mean(self) -> Tensor:
        xi = self.concentration
        value = self.loc + self.scale / (1 - xi)
        return ndgrad.where(xi < 1, value, ndgrad.full_like(value, math.inf))

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        xi = self.concentration
        value = self.scale.pow(2) / ((1 - xi).pow(2) * (1 - 2 * xi))
        return ndgrad.where(xi < 0.5, value, ndgrad.full_like(value, math.inf))

    def entropy(self) -> Tensor:
        return self.scale.log() + self.concentration + 1
