"""``MixtureSameFamily``: a finite mixture whose components are the last batch dimension of
one distribution, weighted by a ``Categorical``.

Example:
    >>> import ndgrad
    >>> from ndgrad.distributions import Categorical, MixtureSameFamily, Normal
    >>> mix = MixtureSameFamily(Categorical(ndgrad.ones(2)),
    ...                         Normal(ndgrad.tensor([-1.0, 1.0]), 1.0))
    >>> round(mix.mean.item(), 4), tuple(mix.sample((3,)).shape)
    (0.0, (3,))
"""

from __future__ import annotations

from typing import Any, Optional

import ndgrad
from ndgrad.tensor import Tensor

from . import constraints
from .discrete import Categorical
from .distribution import Distribution, _as_size

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """A mixture of the components ``component_distribution`` (its rightmost batch dimension
    indexes them) with weights ``mixture_distribution``."""

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, mixture_distribution: Categorical,
                 component_distribution: Distribution,
                 validate_args: Optional[bool] = None) -> None:
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of "
                             "ndgrad.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution need to be an instance of "
                             "ndgrad.distributions.Distribution")
        mix_batch = tuple(mixture_distribution.batch_shape)
        comp_batch = tuple(component_distribution.batch_shape)
        if not comp_batch:
            raise ValueError("`component_distribution` must have at least one batch "
                             "dimension")
        for a, b in zip(reversed(mix_batch), reversed(comp_batch[:-1])):
            if a != 1 and b != 1 and a != b:
                raise ValueError(f"`mixture_distribution.batch_shape` ({_as_size(mix_batch)}) "
                                 "is not compatible with `component_distribution.batch_shape`"
                                 f"({_as_size(comp_batch)})")
        k = mixture_distribution.logits.shape[-1]
        if k != comp_batch[-1]:
            raise ValueError(f"`mixture_distribution component` ({k}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({comp_batch[-1]})")
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        self._num_component = k
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(comp_batch[:-1], component_distribution.event_shape,
                         validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._new_for_expand(MixtureSameFamily, _instance)
        shape = _as_size(batch_shape)
        new._component_distribution = self._component_distribution.expand(
            tuple(shape) + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        return self._finish_expand(new, shape)

    @property
    def mixture_distribution(self) -> Categorical:
        return self._mixture_distribution

    @property
    def component_distribution(self) -> Distribution:
        return self._component_distribution

    @constraints.dependent_property
    def support(self) -> Any:
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    def _weights(self) -> Tensor:
        """Mixture probabilities shaped to broadcast against component statistics."""
        p = self._mixture_distribution.probs
        return p.reshape(tuple(p.shape) + (1,) * self._event_ndims)

    @property
    def mean(self) -> Tensor:
        axis = -1 - self._event_ndims
        return (self._weights() * self._component_distribution.mean).sum(axis)

    @property
    def variance(self) -> Tensor:
        # law of total variance: E[Var(X | k)] + Var(E[X | k])
        axis = -1 - self._event_ndims
        w = self._weights()
        inner = (w * self._component_distribution.variance).sum(axis)
        centre = (w * self._component_distribution.mean).sum(axis)
        spread = (w * (self._component_distribution.mean - centre.unsqueeze(axis)).pow(2))
        return inner + spread.sum(axis)

    def _per_component(self, value: Tensor) -> Tensor:
        return value.unsqueeze(-1 - self._event_ndims)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        each = self._component_distribution.cdf(self._per_component(value))
        return (each * self._mixture_distribution.probs).sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        each = self._component_distribution.log_prob(self._per_component(value))
        log_w = ndgrad.log_softmax(self._mixture_distribution.logits, dim=-1)
        return (each + log_w).logsumexp(-1)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with ndgrad.no_grad():
            shape = tuple(sample_shape)
            picks = self._mixture_distribution.sample(shape)
            draws = self._component_distribution.sample(shape)
            axis = len(shape) + len(self._batch_shape)
            index = picks.reshape(tuple(picks.shape) + (1,) * (self._event_ndims + 1))
            index = index.expand(tuple(picks.shape) + (1,) + tuple(self._event_shape))
            return draws.gather(axis, index).squeeze(axis)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(\n  {self._mixture_distribution!r},\n  "
                f"{self._component_distribution!r})")
