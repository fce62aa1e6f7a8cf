"""Count vectors and overdispersed counts: Multinomial and NegativeBinomial.

Multinomial draws count ``total_count`` categorical draws (torch's numbers for the seed);
NegativeBinomial draws use NumPy's algorithm on ndgrad's generator.

Example:
    >>> import ndgrad
    >>> from ndgrad.distributions import Multinomial
    >>> d = Multinomial(4, probs=ndgrad.tensor([0.5, 0.5]))
    >>> round(d.log_prob(ndgrad.tensor([2.0, 2.0])).exp().item(), 4)
    0.375
"""

from __future__ import annotations

import math
from numbers import Number
from typing import Any, Optional


import ndgrad
from ndgrad.tensor import Tensor

from . import constraints
from .discrete import Binomial, Categorical, _BinaryParams
from .distribution import Distribution, _as_size
from .gamma import Gamma

__all__ = ["Multinomial", "NegativeBinomial"]


def _log_sigmoid(x: Tensor) -> Tensor:
    return -ndgrad.nn.functional.softplus(-x)


class NegativeBinomial(_BinaryParams):
    """The number of successes (each with ``probs``) before ``total_count`` failures."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count: Any, probs: Any = None, logits: Any = None,
                 validate_args: Optional[bool] = None) -> None:
        (param, count), shape = self._set_binary(probs, logits, total_count)
        self.total_count = count.type_as(param)
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        return self._expand_binary(NegativeBinomial, batch_shape, _instance, ("total_count",))

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.logits.exp()

    @property
    def mode(self) -> Tensor:
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self) -> Tensor:
        return self.mean / ndgrad.sigmoid(-self.logits)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        # a gamma-Poisson mixture: the Poisson rate is Gamma(r, rate = exp(-logits)); both
        # draws are torch's numbers for the seed
        with ndgrad.no_grad():
            gamma = Gamma(self.total_count, (-self.logits).exp(), validate_args=False)
            return ndgrad.poisson(gamma.sample(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        r, logits = self.total_count, self.logits
        weight = r * _log_sigmoid(-logits) + value * _log_sigmoid(logits)
        log_choose = (ndgrad.lgamma(r + value) - ndgrad.lgamma(1.0 + value)
                      - ndgrad.lgamma(r))
        # r = 0 puts all mass at 0, where the log-gamma terms are 0 - 0 - inf
        log_choose = log_choose.masked_fill(r + value == 0.0, 0.0)
        return weight + log_choose


class Multinomial(Distribution):
    """Counts of ``total_count`` categorical draws over the last dimension's categories."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count: int = 1, probs: Any = None, logits: Any = None,
                 validate_args: Optional[bool] = None) -> None:
        if not isinstance(total_count, Number):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._index_dist = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        param = self._index_dist._given
        super().__init__(param.shape[:-1], param.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._new_for_expand(Multinomial, _instance)
        shape = _as_size(batch_shape)
        new.total_count = self.total_count
        new._index_dist = self._index_dist.expand(shape)
        new._binomial = self._binomial.expand(tuple(shape) + tuple(self._event_shape))
        return self._finish_expand(new, shape)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self) -> Any:
        return constraints.multinomial(self.total_count)

    @property
    def logits(self) -> Tensor:
        return self._index_dist.logits

    @property
    def probs(self) -> Tensor:
        return self._index_dist.probs

    @property
    def param_shape(self) -> ndgrad.Size:
        return self._index_dist.param_shape

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = _as_size(sample_shape)
        k = self._event_shape[0]
        picks = self._index_dist.sample((self.total_count,) + tuple(shape))
        # one draw per leading index: count them per category
        picks = picks.movedim(0, -1)
        counts = ndgrad.zeros(tuple(picks.shape[:-1]) + (k,), dtype=self.probs.dtype)
        ones = ndgrad.ones(tuple(picks.shape), dtype=self.probs.dtype)
        return counts.scatter_add(-1, picks, ones)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = ndgrad.broadcast_tensors(self.logits, value)
        logits = logits.clone()
        logits = logits.masked_fill((value == 0) & (logits == -math.inf), 0.0)
        log_choose = ndgrad.lgamma(value.sum(-1) + 1) - ndgrad.lgamma(value + 1).sum(-1)
        return log_choose + (logits * value).sum(-1)

    def entropy(self) -> Tensor:
        # H = -log n! + sum_i E[log x_i!] - n sum_i p_i log p_i, x_i ~ Binomial(n, p_i)
        n = ndgrad.tensor(float(self.total_count), dtype=self.probs.dtype)
        counts = self._binomial.enumerate_support(False)
        weights = self._binomial.log_prob(counts).exp()
        expected = (weights * ndgrad.lgamma(counts + 1)).sum(0).sum(-1)
        cross = (self.probs * self._index_dist.logits).sum(-1)
        return -ndgrad.lgamma(n + 1) + expected - n * cross
