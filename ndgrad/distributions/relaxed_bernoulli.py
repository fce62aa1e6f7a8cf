"""Relaxed (concrete) Bernoulli distributions: continuous stand-ins for a Bernoulli trial
whose draws are differentiable in the parameters, sharper as ``temperature`` goes to zero.

``LogitRelaxedBernoulli`` draws ``(logit(u) + logits) / temperature`` with ``u`` uniform;
``RelaxedBernoulli`` is its sigmoid, on ``(0, 1)``.

Example:
    >>> import ndgrad
    >>> from ndgrad.distributions import RelaxedBernoulli
    >>> _ = ndgrad.manual_seed(0)
    >>> x = RelaxedBernoulli(ndgrad.tensor(0.5), probs=ndgrad.tensor([0.3, 0.9])).rsample()
    >>> bool(((x > 0) & (x < 1)).all())
    True
"""

from __future__ import annotations

from numbers import Number
from typing import Any, Optional

import ndgrad
from ndgrad.tensor import Tensor

from . import constraints
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import SigmoidTransform
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


class LogitRelaxedBernoulli(Distribution):
    """The logit of a relaxed Bernoulli draw (support: the real line)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature: Tensor, probs: Any = None, logits: Any = None,
                 validate_args: Optional[bool] = None) -> None:
        self.temperature = temperature
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        given = probs if probs is not None else logits
        (value,) = broadcast_all(given)
        setattr(self, "probs" if probs is not None else "logits", value)
        self._given = value
        shape = ndgrad.Size(()) if isinstance(given, Number) else value.size()
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._expand_params(LogitRelaxedBernoulli, batch_shape, _instance,
                                  ("probs", "logits"))
        new.temperature = self.temperature
        new._given = new.probs if "probs" in self.__dict__ else new.logits
        return new

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> ndgrad.Size:
        return self._given.size()

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        p = clamp_probs(self.probs.expand(shape))
        u = clamp_probs(ndgrad.rand(shape, dtype=p.dtype))
        noise = u.log() - (-u).log1p()
        return (noise + p.log() - (-p).log1p()) / self.temperature

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = ndgrad.broadcast_tensors(self.logits, value)
        shifted = logits - value * self.temperature
        return self.temperature.log() + shifted - 2 * ndgrad.nn.functional.softplus(shifted)


class RelaxedBernoulli(TransformedDistribution):
    """The sigmoid of a ``LogitRelaxedBernoulli`` draw (support: the unit interval)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature: Tensor, probs: Any = None, logits: Any = None,
                 validate_args: Optional[bool] = None) -> None:
        base = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._new_for_expand(RelaxedBernoulli, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def temperature(self) -> Tensor:
        return self.base_dist.temperature

    @property
    def logits(self) -> Tensor:
        return self.base_dist.logits

    @property
    def probs(self) -> Tensor:
        return self.base_dist.probs
