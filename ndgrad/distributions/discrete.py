"""Discrete families: Bernoulli, Categorical, OneHotCategorical (and its straight-through
variant), Binomial, Poisson and Geometric.

Families given by ``probs`` or ``logits`` keep the one given and derive the other on first
access (a ``lazy_property``). Bernoulli, Categorical and Geometric draws use ndgrad's
``bernoulli``, ``multinomial`` and uniform fills, which give torch's numbers for the seed;
Binomial and Poisson draws use NumPy's algorithms on ndgrad's generator (reproducible, not
torch's numbers).

Example:
    >>> import ndgrad
    >>> from ndgrad.distributions import Categorical
    >>> d = Categorical(logits=ndgrad.zeros(4))
    >>> round(d.entropy().item(), 4), round(d.log_prob(ndgrad.tensor(2)).item(), 4)
    (1.3863, -1.3863)
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
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Bernoulli", "Binomial", "Categorical", "Geometric", "OneHotCategorical",
           "OneHotCategoricalStraightThrough", "Poisson"]


def _softplus(x: Tensor) -> Tensor:
    return ndgrad.nn.functional.softplus(x)


def _one_of(probs: Any, logits: Any) -> None:
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


class _BinaryParams(Distribution):
    """``probs``/``logits`` of independent binary trials (Bernoulli, Binomial, Geometric)."""

    def _set_binary(self, probs: Any, logits: Any, *others: Any) -> tuple:
        _one_of(probs, logits)
        given = probs if probs is not None else logits
        values = broadcast_all(given, *others)
        setattr(self, "probs" if probs is not None else "logits", values[0])
        self._given = values[0]
        plain = isinstance(given, Number)
        return values, (ndgrad.Size(()) if plain else values[0].size())

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> ndgrad.Size:
        return self._given.size()

    def _expand_binary(self, family: type, batch_shape: Any, _instance: Any,
                       extra: tuple = ()) -> Any:
        new = self._expand_params(family, batch_shape, _instance,
                                  ("probs", "logits") + extra)
        new._given = new.probs if "probs" in self.__dict__ else new.logits
        return new


class Bernoulli(_BinaryParams, ExponentialFamily):
    """One trial that gives 1 with probability ``probs`` (or ``sigmoid(logits)``)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: Optional[bool] = None) -> None:
        _, shape = self._set_binary(probs, logits)
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        return self._expand_binary(Bernoulli, batch_shape, _instance)

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        ones = (self.probs >= 0.5).type_as(self.probs)
        return ones.masked_fill(self.probs == 0.5, math.nan)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with ndgrad.no_grad():
            return ndgrad.bernoulli(self.probs.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = ndgrad.broadcast_tensors(self.logits, value)
        return logits * value - _softplus(logits)

    def entropy(self) -> Tensor:
        return _softplus(self.logits) - self.probs * self.logits

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = ndgrad.arange(2, dtype=self._given.dtype)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values

    @property
    def _natural_params(self) -> tuple:
        return (self.logits,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return _softplus(x)


class Geometric(_BinaryParams):
    """The number of failures before the first success of trials with ``probs``."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: Optional[bool] = None) -> None:
        _, shape = self._set_binary(probs, logits)
        super().__init__(shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            bad = ~(self.probs > 0)
            if bool(bad.any()):
                raise ValueError(
                    f"Expected parameter probs ({type(self.probs).__name__} of shape "
                    f"{tuple(self.probs.shape)}) of distribution {self!r} to be positive but "
                    f"found invalid values:\n{self.probs[bad]}")

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        return self._expand_binary(Geometric, batch_shape, _instance)

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return ndgrad.zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        tiny = ndgrad.finfo(self.probs.dtype).tiny
        with ndgrad.no_grad():
            u = ndgrad.rand(shape, dtype=self.probs.dtype).clamp(min=tiny)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = ndgrad.broadcast_tensors(value, self.probs)
        return ndgrad.special.xlog1py(value, -probs) + probs.log()

    def entropy(self) -> Tensor:
        return (_softplus(self.logits) - self.probs * self.logits) / self.probs


class Binomial(_BinaryParams):
    """The number of successes in ``total_count`` trials with ``probs``."""

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count: Any = 1, probs: Any = None, logits: Any = None,
                 validate_args: Optional[bool] = None) -> None:
        (param, count), shape = self._set_binary(probs, logits, total_count)
        self.total_count = count.type_as(param)
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        return self._expand_binary(Binomial, batch_shape, _instance, ("total_count",))

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> Any:
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with ndgrad.no_grad():      # ndgrad.binomial draws torch's numbers for the seed
            return ndgrad.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        log_choose = (ndgrad.lgamma(n + 1) - ndgrad.lgamma(value + 1)
                      - ndgrad.lgamma(n - value + 1))
        # k log p + (n - k) log(1 - p) = k * logits - n * softplus(logits)
        return log_choose + value * logits - n * _softplus(logits)

    def _homogeneous_count(self, what: str) -> int:
        top = int(self.total_count.max().item())
        if not bool((self.total_count == top).all()):
            raise NotImplementedError(
                f"Inhomogeneous total count not supported by `{what}`.")
        return top

    def entropy(self) -> Tensor:
        self._homogeneous_count("entropy")
        support = self.enumerate_support(False)
        lp = self.log_prob(support)
        return -(lp.exp() * lp).sum(0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        top = self._homogeneous_count("enumerate_support")
        values = ndgrad.arange(1 + top, dtype=self._given.dtype)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


class Poisson(ExponentialFamily):
    """The number of events at ``rate`` per unit interval."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate: Any, validate_args: Optional[bool] = None) -> None:
        (self.rate,) = broadcast_all(rate)
        shape = ndgrad.Size(()) if isinstance(rate, Number) else self.rate.size()
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        return self._expand_params(Poisson, batch_shape, _instance, ("rate",))

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with ndgrad.no_grad():      # ndgrad.poisson draws torch's numbers for the seed
            return ndgrad.poisson(self.rate.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = ndgrad.broadcast_tensors(self.rate, value)
        return ndgrad.xlogy(value, rate) - rate - ndgrad.lgamma(value + 1)

    @property
    def _natural_params(self) -> tuple:
        return (self.rate.log(),)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return x.exp()

    @property
    def _mean_carrier_measure(self) -> Any:
        raise NotImplementedError


class Categorical(Distribution):
    """One of ``K`` categories (indices ``0 .. K-1``) with ``probs`` (normalized over the last
    dimension) or ``logits`` (unnormalized log probabilities)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(
        constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: Optional[bool] = None) -> None:
        _one_of(probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            self._given = self.probs
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
            self._given = self.logits
        self._n_categories = self._given.size(-1)
        shape = self._given.shape[:-1] if self._given.dim() > 1 else ndgrad.Size(())
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._new_for_expand(Categorical, _instance)
        shape = _as_size(batch_shape)
        full = tuple(shape) + (self._n_categories,)
        for name in ("probs", "logits"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(full))
        new._given = new.probs if "probs" in self.__dict__ else new.logits
        new._n_categories = self._n_categories
        return self._finish_expand(new, shape)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> ndgrad.Size:
        return self._given.size()

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> Any:
        return constraints.integer_interval(0, self._n_categories - 1)

    @property
    def mean(self) -> Tensor:
        return ndgrad.full(self._extended_shape(), math.nan, dtype=self.probs.dtype)

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Tensor:
        return ndgrad.full(self._extended_shape(), math.nan, dtype=self.probs.dtype)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = _as_size(sample_shape)
        count = math.prod(shape)
        with ndgrad.no_grad():
            rows = self.probs.reshape(-1, self._n_categories)
            picks = ndgrad.multinomial(rows, count, True).T
        return picks.reshape(self._extended_shape(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        index = value.long().unsqueeze(-1)
        index, table = ndgrad.broadcast_tensors(index, self.logits)
        return table.gather(-1, index[..., :1]).squeeze(-1)

    def entropy(self) -> Tensor:
        lowest = ndgrad.finfo(self.logits.dtype).min
        logits = self.logits.clamp(min=lowest)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = ndgrad.arange(self._n_categories, dtype=ndgrad.long)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


class OneHotCategorical(Distribution):
    """Categorical draws as one-hot vectors of length ``K`` (the event)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: Optional[bool] = None) -> None:
        self._index_dist = Categorical(probs, logits)
        param = self._index_dist._given
        super().__init__(param.shape[:-1], param.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._new_for_expand(type(self), _instance)
        new._index_dist = self._index_dist.expand(batch_shape)
        return self._finish_expand(new, batch_shape)

    @property
    def _given(self) -> Tensor:
        return self._index_dist._given

    @property
    def probs(self) -> Tensor:
        return self._index_dist.probs

    @property
    def logits(self) -> Tensor:
        return self._index_dist.logits

    @property
    def param_shape(self) -> ndgrad.Size:
        return self._index_dist.param_shape

    @property
    def mean(self) -> Tensor:
        return self._index_dist.probs

    @property
    def mode(self) -> Tensor:
        probs = self._index_dist.probs
        index = probs.argmax(-1)
        return ndgrad.nn.functional.one_hot(index, probs.shape[-1]).type_as(probs)

    @property
    def variance(self) -> Tensor:
        p = self._index_dist.probs
        return p * (1 - p)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        probs = self._index_dist.probs
        index = self._index_dist.sample(sample_shape)
        return ndgrad.nn.functional.one_hot(index, probs.shape[-1]).type_as(probs)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._index_dist.log_prob(value.argmax(-1))

    def entropy(self) -> Tensor:
        return self._index_dist.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        k = self._event_shape[0]
        values = ndgrad.eye(k, dtype=self._given.dtype)
        values = values.reshape((k,) + (1,) * len(self._batch_shape) + (k,))
        if expand:
            return values.expand((k,) + tuple(self._batch_shape) + (k,))
        return values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """One-hot draws whose gradient is that of the probabilities (the straight-through
    estimator): ``rsample`` returns ``sample + probs - probs.detach()``."""

    has_rsample = True

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        draws = self.sample(sample_shape)
        probs = self._index_dist.probs
        return draws + (probs - probs.detach())
