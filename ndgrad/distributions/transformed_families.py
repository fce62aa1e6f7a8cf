"""Families defined as a simple distribution pushed through fixed transforms: Pareto,
Weibull and InverseGamma (from exponential and gamma variates), Kumaraswamy (from a uniform)
and LogisticNormal (a normal vector through stick breaking). Densities come from
``TransformedDistribution``; moments and entropies are the closed forms.

Example:
    >>> import ndgrad
    >>> from ndgrad.distributions import Pareto
    >>> d = Pareto(ndgrad.tensor([1.0]), ndgrad.tensor([3.0]))
    >>> round(d.mean.item(), 4), round(d.log_prob(ndgrad.tensor([2.0])).item(), 4)
    (1.5, -1.674)
"""

from __future__ import annotations

import math
from typing import Any, Optional

import ndgrad
from ndgrad.tensor import Tensor

from . import constraints
from .continuous import Exponential, Normal, Uniform
from .distribution import Distribution
from .gamma import Gamma
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform, PowerTransform, StickBreakingTransform
from .utils import broadcast_all, euler_constant

__all__ = ["InverseGamma", "Kumaraswamy", "LogisticNormal", "Pareto", "Weibull"]


def _where_above(cond: Tensor, value: Tensor, fill: float) -> Tensor:
    return ndgrad.where(cond, value, ndgrad.full_like(value, fill))


class Pareto(TransformedDistribution):
    """The Pareto (type I) distribution: ``scale * exp(E / alpha)`` with ``E`` standard
    exponential."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale: Any, alpha: Any, validate_args: Optional[bool] = None) -> None:
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base = Exponential(self.alpha, validate_args=validate_args)
        steps = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base, steps, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._new_for_expand(Pareto, _instance)
        new.scale = self.scale.expand(batch_shape)
        new.alpha = self.alpha.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self) -> Tensor:
        a = self.alpha.clamp(min=1)
        return _where_above(self.alpha > 1, a * self.scale / (a - 1), math.inf)

    @property
    def mode(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        a = self.alpha.clamp(min=2)
        finite = self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))
        return _where_above(self.alpha > 2, finite, math.inf)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> Any:
        return constraints.greater_than_eq(self.scale)

    def entropy(self) -> Tensor:
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


class Weibull(TransformedDistribution):
    """The Weibull distribution: ``scale * E ** (1 / concentration)`` with ``E`` standard
    exponential."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale: Any, concentration: Any,
                 validate_args: Optional[bool] = None) -> None:
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base = Exponential(ndgrad.ones_like(self.scale), validate_args=validate_args)
        steps = [PowerTransform(exponent=self.concentration_reciprocal),
                 AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base, steps, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._new_for_expand(Weibull, _instance)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        base = self.base_dist.expand(batch_shape)
        steps = [PowerTransform(exponent=new.concentration_reciprocal),
                 AffineTransform(loc=0, scale=new.scale)]
        TransformedDistribution.__init__(new, base, steps, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.scale * ndgrad.lgamma(1 + self.concentration_reciprocal).exp()

    @property
    def mode(self) -> Tensor:
        k = self.concentration
        return self.scale * ((k - 1) / k).pow(k.reciprocal())

    @property
    def variance(self) -> Tensor:
        r = self.concentration_reciprocal
        second = ndgrad.lgamma(1 + 2 * r).exp()
        first = ndgrad.lgamma(1 + r).exp()
        return self.scale.pow(2) * (second - first.pow(2))

    def entropy(self) -> Tensor:
        r = self.concentration_reciprocal
        return euler_constant * (1 - r) + (self.scale * r).log() + 1


class InverseGamma(TransformedDistribution):
    """The reciprocal of a ``Gamma(concentration, rate)`` variate."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration: Any, rate: Any,
                 validate_args: Optional[bool] = None) -> None:
        base = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -base.rate.new_ones(())
        super().__init__(base, PowerTransform(neg_one), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._new_for_expand(InverseGamma, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def concentration(self) -> Tensor:
        return self.base_dist.concentration

    @property
    def rate(self) -> Tensor:
        return self.base_dist.rate

    @property
    def mean(self) -> Tensor:
        a = self.concentration
        return _where_above(a > 1, self.rate / (a - 1), math.inf)

    @property
    def mode(self) -> Tensor:
        return self.rate / (self.concentration + 1)

    @property
    def variance(self) -> Tensor:
        a = self.concentration
        finite = self.rate.pow(2) / ((a - 1).pow(2) * (a - 2))
        return _where_above(a > 2, finite, math.inf)

    def entropy(self) -> Tensor:
        a = self.concentration
        return a + self.rate.log() + ndgrad.lgamma(a) - (1 + a) * ndgrad.digamma(a)


def _moment(c1: Tensor, c0: Tensor, n: int) -> Tensor:
    """``E[X^n]`` of a Kumaraswamy variate: ``c0 * B(1 + n / c1, c0)``."""
    a = 1 + n / c1
    return (c0.log() + ndgrad.lgamma(a) + ndgrad.lgamma(c0) - ndgrad.lgamma(a + c0)).exp()


class Kumaraswamy(TransformedDistribution):
    """The Kumaraswamy distribution on ``(0, 1)``: ``(1 - U ** (1 / c0)) ** (1 / c1)`` for a
    uniform ``U``, density ``c1 c0 x^(c1-1) (1 - x^c1)^(c0-1)``."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Any, concentration0: Any,
                 validate_args: Optional[bool] = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1,
                                                                 concentration0)
        c1 = self.concentration1
        base = Uniform(ndgrad.zeros_like(c1), ndgrad.ones_like(c1),
                       validate_args=validate_args)
        steps = [PowerTransform(exponent=self.concentration0.reciprocal()),
                 AffineTransform(loc=1.0, scale=-1.0),
                 PowerTransform(exponent=c1.reciprocal())]
        super().__init__(base, steps, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._new_for_expand(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self) -> Tensor:
        return _moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        inside = ((a - 1) / (a * b - 1)).pow(a.reciprocal())
        return _where_above((a >= 1) & (b >= 1), inside, math.nan)

    @property
    def variance(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        return _moment(a, b, 2) - _moment(a, b, 1).pow(2)

    def entropy(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        harmonic_b = ndgrad.digamma(b + 1) + euler_constant
        return (1 - a.reciprocal()) * harmonic_b + (1 - b.reciprocal()) - (a * b).log()


class LogisticNormal(TransformedDistribution):
    """A normal vector of length ``K - 1`` through stick breaking: a point of the
    ``K``-simplex."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: Optional[bool] = None) -> None:
        base: Distribution = Normal(loc, scale, validate_args=validate_args)
        if not base.batch_shape:
            base = base.expand([1])
        super().__init__(base, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._new_for_expand(LogisticNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self) -> Tensor:
        return self.base_dist.base_dist.loc

    @property
    def scale(self) -> Tensor:
        return self.base_dist.base_dist.scale
