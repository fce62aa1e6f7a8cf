"""``TransformedDistribution``: a base distribution pushed through a sequence of transforms,
with the density by the change of variables formula; and the families defined that way
(LogNormal, HalfNormal, HalfCauchy).

Example:
    >>> import ndgrad
    >>> from ndgrad.distributions import LogNormal
    >>> d = LogNormal(0.0, 1.0)
    >>> round(d.log_prob(ndgrad.tensor(1.0)).item(), 4), round(d.mean.item(), 4)
    (-0.9189, 1.6487)
"""

from __future__ import annotations

import math
from typing import Any, Optional

import ndgrad
from ndgrad.tensor import Tensor

from . import constraints
from .continuous import Cauchy, Normal
from .distribution import Distribution, _as_size
from .independent import Independent
from .transforms import AbsTransform, ComposeTransform, ExpTransform, Transform
from .utils import _sum_last

__all__ = ["HalfCauchy", "HalfNormal", "LogNormal", "TransformedDistribution"]


class TransformedDistribution(Distribution):
    """Draws of ``base_distribution`` mapped by ``transforms`` (a Transform or a list)."""

    arg_constraints: dict = {}
    base_dist: Any

    def __init__(self, base_distribution: Distribution, transforms: Any,
                 validate_args: Optional[bool] = None) -> None:
        if isinstance(transforms, Transform):
            self.transforms = [transforms]
        elif isinstance(transforms, list):
            if not all(isinstance(t, Transform) for t in transforms):
                raise ValueError("transforms must be a Transform or a list of Transforms")
            self.transforms = transforms
        else:
            raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
        chain = ComposeTransform(self.transforms)
        base_shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        base_event = len(base_distribution.event_shape)
        need = chain.domain.event_dim
        if len(base_shape) < need:
            raise ValueError(f"base_distribution needs to have shape with size at least {need}, "
                             f"but got {_as_size(base_shape)}.")
        out_shape = tuple(chain.forward_shape(base_shape))
        in_shape = tuple(chain.inverse_shape(out_shape))
        if in_shape != base_shape:
            base_distribution = base_distribution.expand(in_shape[:len(in_shape) - base_event])
        extra = need - len(base_distribution.event_shape)
        if extra > 0:
            base_distribution = Independent(base_distribution, extra)
        self.base_dist = base_distribution
        depth = chain.codomain.event_dim + max(base_event - need, 0)
        cut = len(out_shape) - depth
        super().__init__(out_shape[:cut], out_shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._new_for_expand(TransformedDistribution, _instance)
        shape = _as_size(batch_shape)
        full = tuple(shape) + tuple(self._event_shape)
        base_full = ComposeTransform(self.transforms).inverse_shape(full)
        base_batch = tuple(base_full)[:len(base_full) - len(self.base_dist.event_shape)]
        new.base_dist = self.base_dist.expand(base_batch)
        new.transforms = self.transforms
        return self._finish_expand(new, shape)

    @constraints.dependent_property(is_discrete=False)
    def support(self) -> Any:
        if not self.transforms:
            return self.base_dist.support
        rule = self.transforms[-1].codomain
        if len(self._event_shape) > rule.event_dim:
            rule = constraints.independent(rule, len(self._event_shape) - rule.event_dim)
        return rule

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        return self.base_dist.has_rsample

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with ndgrad.no_grad():
            x = self.base_dist.sample(sample_shape)
            for t in self.transforms:
                x = t(x)
            return x

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        x = self.base_dist.rsample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        depth = len(self._event_shape)
        total: Any = 0.0
        y = value
        for t in reversed(self.transforms):
            x = t.inv(y)
            depth += t.domain.event_dim - t.codomain.event_dim
            total = total - _sum_last(t.log_abs_det_jacobian(x, y),
                                      depth - t.domain.event_dim)
            y = x
        base = _sum_last(self.base_dist.log_prob(y), depth - len(self.base_dist.event_shape))
        return total + base

    def _direction(self) -> Any:
        sign = 1
        for t in self.transforms:
            sign = sign * t.sign
        return sign

    def cdf(self, value: Tensor) -> Tensor:
        for t in reversed(self.transforms):
            value = t.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        p = self.base_dist.cdf(value)
        sign = self._direction()
        return p if isinstance(sign, int) and sign == 1 else sign * (p - 0.5) + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        sign = self._direction()
        if not (isinstance(sign, int) and sign == 1):
            value = sign * (value - 0.5) + 0.5
        x = self.base_dist.icdf(value)
        for t in self.transforms:
            x = t(x)
        return x


class LogNormal(TransformedDistribution):
    """``exp(X)`` for ``X ~ Normal(loc, scale)``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: Optional[bool] = None) -> None:
        base = Normal(loc, scale, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._new_for_expand(LogNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self) -> Tensor:
        return self.base_dist.loc

    @property
    def scale(self) -> Tensor:
        return self.base_dist.scale

    @property
    def mean(self) -> Tensor:
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self) -> Tensor:
        return (self.loc - self.scale.pow(2)).exp()

    @property
    def variance(self) -> Tensor:
        s2 = self.scale.pow(2)
        return s2.expm1() * (2 * self.loc + s2).exp()

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() + self.loc


class HalfNormal(TransformedDistribution):
    """``|X|`` for ``X ~ Normal(0, scale)``."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale: Any, validate_args: Optional[bool] = None) -> None:
        base = Normal(0, scale, validate_args=False)
        super().__init__(base, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._new_for_expand(HalfNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def scale(self) -> Tensor:
        return self.base_dist.scale

    @property
    def mean(self) -> Tensor:
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def mode(self) -> Tensor:
        return ndgrad.zeros_like(self.scale)

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2) * (1 - 2 / math.pi)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        lp = self.base_dist.log_prob(value) + math.log(2)
        return ndgrad.where(value >= 0, lp, ndgrad.full_like(lp, -math.inf))

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob: Tensor) -> Tensor:
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() - math.log(2)


class HalfCauchy(TransformedDistribution):
    """``|X|`` for ``X ~ Cauchy(0, scale)``."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale: Any, validate_args: Optional[bool] = None) -> None:
        base = Cauchy(0, scale, validate_args=False)
        super().__init__(base, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._new_for_expand(HalfCauchy, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def scale(self) -> Tensor:
        return self.base_dist.scale

    @property
    def mean(self) -> Tensor:
        return ndgrad.full(self._extended_shape(), math.inf, dtype=self.scale.dtype)

    @property
    def mode(self) -> Tensor:
        return ndgrad.zeros_like(self.scale)

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = ndgrad.as_tensor(value, dtype=self.scale.dtype)
        lp = self.base_dist.log_prob(value) + math.log(2)
        return ndgrad.where(value >= 0, lp, ndgrad.full_like(lp, -math.inf))

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob: Tensor) -> Tensor:
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() - math.log(2)
