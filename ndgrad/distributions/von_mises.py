"""``VonMises``: the circular normal distribution on ``[-pi, pi)``, density
``exp(kappa cos(x - loc)) / (2 pi I0(kappa))``.

Draws use Best and Fisher's rejection sampler on torch's uniform stream: the same numbers as
torch after ``manual_seed``.

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
        """Best and Fisher's (1979) wrapped-Cauchy rejection sampler in float64, with torch's
        draws: per round one ``rand((3,) + shape)`` for every element, a newly accepted
        proposal replacing the element's value, until each element has accepted once."""
        shape = tuple(self._extended_shape(sample_shape))
        with ndgrad.no_grad():
            loc = self.loc.to(ndgrad.float64)
            kappa = self.concentration.to(ndgrad.float64)
            tau = 1 + (1 + 4 * kappa ** 2).sqrt()
            rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
            # the envelope's parameter (1 + rho^2) / (2 rho), by its expansion for tiny kappa
            r = ndgrad.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho ** 2) / (2 * rho))
            x = ndgrad.zeros(shape, dtype=ndgrad.float64)
            done = ndgrad.zeros(shape, dtype=ndgrad.bool)
            while not bool(done.all()):
                u1, u2, u3 = ndgrad.rand((3,) + shape, dtype=ndgrad.float64).unbind()
                z = ndgrad.cos(math.pi * u1)
                f = (1 + r * z) / (r + z)
                c = kappa * (r - f)
                with np.errstate(divide="ignore", invalid="ignore"):
                    accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
                x = ndgrad.where(accept, (u3 - 0.5).sign() * f.acos(), x)
                done = done | accept
            return ((x + math.pi + loc) % (2 * math.pi) - math.pi).to(self.loc.dtype)

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
