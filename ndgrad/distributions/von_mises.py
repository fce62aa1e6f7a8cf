"""``VonMises``: the circular normal distribution on ``[-pi, pi)``, density
``exp(kappa cos(x - loc)) / (2 pi I0(kappa))``.

Draws use NumPy's von Mises sampler on ndgrad's generator (reproducible, not torch's numbers).

Example:
    >>> import ndgrad
    >>> from ndgrad.distributions import VonMises
    >>> d = VonMises(ndgrad.tensor([0.0]), ndgrad.tensor([1.0]))
    >>> [round(v, 4) for v in d.log_prob(ndgrad.tensor([0.0])).tolist()]
    [-1.0738]
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

import ndgrad
from ndgrad._generator import numpy_generator
from ndgrad.tensor import Tensor

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["VonMises"]


class VonMises(Distribution):
    """The von Mises distribution with mean direction ``loc`` and ``concentration``."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc: Any, concentration: Any,
                 validate_args: Optional[bool] = None) -> None:
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.size(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        return self._expand_params(VonMises, batch_shape, _instance, ("loc", "concentration"))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        k = self.concentration
        # log I0(k) = log(i0e(k)) + k, stable for large k
        return (k * ((value - self.loc).cos() - 1) - math.log(2 * math.pi)
                - ndgrad.special.i0e(k).log())

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        mu = self.loc.expand(shape).detach().numpy()
        kappa = self.concentration.expand(shape).detach().numpy()
        draws = numpy_generator(None).vonmises(mu.astype(np.float64), kappa.astype(np.float64))
        # back into [-pi, pi) around the wrapped mean direction
        wrapped = np.mod(np.asarray(draws) + math.pi, 2 * math.pi) - math.pi
        return ndgrad.from_numpy(np.asarray(wrapped, dtype=mu.dtype))

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        k = self.concentration
        return 1 - ndgrad.special.i1e(k) / ndgrad.special.i0e(k)
