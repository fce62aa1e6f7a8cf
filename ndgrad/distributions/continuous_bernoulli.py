"""``ContinuousBernoulli``: the density ``C(lam) lam^x (1 - lam)^(1 - x)`` on ``[0, 1]``.

Note [Continuous Bernoulli near one half]
The normalizer ``C(lam) = 2 atanh(1 - 2 lam) / (1 - 2 lam)`` and the closed-form moments are
ratios whose numerator and denominator vanish at ``lam = 1/2``. Inside ``[0.499, 0.501]`` they
are replaced by their Taylor series in ``d = lam - 1/2`` (derived symbolically):
``log C = log 2 + 4 d^2 / 3 + 104 d^4 / 45``, ``mean = 1/2 + d/3 + 16 d^3 / 45``,
``variance = 1/12 - d^2 / 15 - 128 d^4 / 945``; the CDF and its inverse are the uniform's.
Outside that band the exact forms are evaluated at parameters clamped out of it, so neither
branch produces a NaN gradient.

Example:
    >>> import ndgrad
    >>> from ndgrad.distributions import ContinuousBernoulli
    >>> d = ContinuousBernoulli(ndgrad.tensor([0.5, 0.8]))
    >>> [round(v, 4) for v in d.mean.tolist()]
    [0.5, 0.612]
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Any, Optional

import ndgrad
from ndgrad.tensor import Tensor

from . import constraints
from .discrete import _BinaryParams
from .distribution import Distribution
from .exp_family import ExponentialFamily

__all__ = ["ContinuousBernoulli"]

_BAND = (0.499, 0.501)


class ContinuousBernoulli(_BinaryParams, ExponentialFamily):
    """The continuous Bernoulli distribution with shape ``probs`` (or ``logits``)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, probs: Any = None, logits: Any = None, lims: tuple = _BAND,
                 validate_args: Optional[bool] = None) -> None:
        if probs is not None and isinstance(probs, Real):
            probs = ndgrad.tensor(float(probs))
        _, shape = self._set_binary(probs, logits)
        self._lims = lims
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._expand_binary(ContinuousBernoulli, batch_shape, _instance)
        new._lims = self._lims
        return new

    def _outside(self) -> Tensor:
        lo, hi = self._lims
        return (self.probs <= lo) | (self.probs >= hi)

    def _clamped(self) -> Tensor:
        """``probs`` outside the band; inside it, a point below the band (unused value)."""
        lo = self._lims[0]
        return ndgrad.where(self._outside(), self.probs, ndgrad.full_like(self.probs, lo))

    def _log_norm(self) -> Tensor:
        p = self._clamped()
        twice_atanh = (-p).log1p() - p.log()       # 2 atanh(1 - 2p) = log((1 - p) / p)
        exact = (twice_atanh.abs()).log() - (1 - 2 * p).abs().log()
        d = self.probs - 0.5
        series = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * d.pow(2)) * d.pow(2)
        return ndgrad.where(self._outside(), exact, series)

    @property
    def mean(self) -> Tensor:
        p = self._clamped()
        exact = p / (2 * p - 1) + 1 / ((-p).log1p() - p.log())
        d = self.probs - 0.5
        series = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * d.pow(2)) * d
        return ndgrad.where(self._outside(), exact, series)

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    @property
    def variance(self) -> Tensor:
        p = self._clamped()
        exact = p * (p - 1) / (1 - 2 * p).pow(2) + 1 / ((-p).log1p() - p.log()).pow(2)
        d2 = (self.probs - 0.5).pow(2)
        series = 1.0 / 12.0 - (1.0 / 15.0 + 128.0 / 945.0 * d2) * d2
        return ndgrad.where(self._outside(), exact, series)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        u = ndgrad.rand(self._extended_shape(sample_shape), dtype=self.probs.dtype)
        return self.icdf(u)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = ndgrad.broadcast_tensors(self.logits, value)
        bernoulli = value * logits - ndgrad.nn.functional.softplus(logits)
        return bernoulli + self._log_norm()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        p = self._clamped()
        exact = (p.pow(value) * (1 - p).pow(1 - value) + p - 1) / (2 * p - 1)
        inside = ndgrad.where(self._outside(), exact, value)
        above = ndgrad.where(value >= 1, ndgrad.ones_like(inside), inside)
        return ndgrad.where(value <= 0, ndgrad.zeros_like(inside), above)

    def icdf(self, value: Tensor) -> Tensor:
        p = self._clamped()
        exact = (((2 * p - 1) * value - p).log1p() - (-p).log1p()) / (p.log() - (-p).log1p())
        return ndgrad.where(self._outside(), exact, value)

    def entropy(self) -> Tensor:
        log_p = self.probs.log()
        log_q = (-self.probs).log1p()
        m = self.mean
        return -self._log_norm() - m * log_p - (1 - m) * log_q

    @property
    def _natural_params(self) -> tuple:
        return (self.logits,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        # A(eta) = log((e^eta - 1) / eta), by its series where eta is near zero
        small = x.abs() < 1e-2
        safe = ndgrad.where(small, ndgrad.ones_like(x), x)
        exact = (safe.expm1().abs()).log() - safe.abs().log()
        series = x / 2 + x.pow(2) / 24 - x.pow(4) / 2880
        return ndgrad.where(small, series, exact)
