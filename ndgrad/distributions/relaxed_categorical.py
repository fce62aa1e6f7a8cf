"""Relaxed (concrete / Gumbel-softmax) categorical distributions: continuous stand-ins for a
one-hot categorical draw, differentiable in the parameters.

``ExpRelaxedCategorical`` draws the log of a point of the simplex: ``(logits + g) /
temperature`` normalized with ``logsumexp``, ``g`` standard Gumbel noise;
``RelaxedOneHotCategorical`` is its exponential, a point of the simplex.

Example:
    >>> import ndgrad
    >>> from ndgrad.distributions import RelaxedOneHotCategorical
    >>> _ = ndgrad.manual_seed(0)
    >>> x = RelaxedOneHotCategorical(ndgrad.tensor(0.5), logits=ndgrad.zeros(3)).rsample()
    >>> round(x.sum().item(), 5)
    1.0
"""

from __future__ import annotations

import math
from typing import Any, Optional

import ndgrad
from ndgrad.tensor import Tensor

from . import constraints
from .discrete import Categorical
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform
from .utils import clamp_probs

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


class ExpRelaxedCategorical(Distribution):
    """The log of a relaxed one-hot categorical draw (support: real vectors)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature: Tensor, probs: Any = None, logits: Any = None,
                 validate_args: Optional[bool] = None) -> None:
        self._index_dist = Categorical(probs, logits)
        self.temperature = temperature
        param = self._index_dist._given
        super().__init__(param.shape[:-1], param.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._new_for_expand(ExpRelaxedCategorical, _instance)
        new.temperature = self.temperature
        new._index_dist = self._index_dist.expand(batch_shape)
        return self._finish_expand(new, batch_shape)

    @property
    def param_shape(self) -> ndgrad.Size:
        return self._index_dist.param_shape

    @property
    def logits(self) -> Tensor:
        return self._index_dist.logits

    @property
    def probs(self) -> Tensor:
        return self._index_dist.probs

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = clamp_probs(ndgrad.rand(shape, dtype=self.logits.dtype))
        gumbel = -(-u.log()).log()
        scores = (self.logits + gumbel) / self.temperature
        return scores - scores.logsumexp(-1, keepdim=True)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        k = self._event_shape[0]
        logits, value = ndgrad.broadcast_tensors(self.logits, value)
        t = self.temperature
        # density of the log-concrete variable: Gamma(K) t^(K-1) prod(a_i e^{-t x_i})
        # / (sum_i a_i e^{-t x_i})^K with a = exp(logits)
        shifted = logits - value * t
        log_t = t.log() if isinstance(t, Tensor) else math.log(t)
        const = math.lgamma(k) + (k - 1) * log_t
        return const + shifted.sum(-1) - k * shifted.logsumexp(-1)


class RelaxedOneHotCategorical(TransformedDistribution):
    """The exponential of an ``ExpRelaxedCategorical`` draw (support: the simplex)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature: Tensor, probs: Any = None, logits: Any = None,
                 validate_args: Optional[bool] = None) -> None:
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._new_for_expand(RelaxedOneHotCategorical, _instance)
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
