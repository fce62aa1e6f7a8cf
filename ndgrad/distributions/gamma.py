"""The gamma family and the distributions built from gamma variates: Gamma, Chi2, Dirichlet
and Beta. Their draws are reparameterized implicitly (Note [Implicit reparameterization] in
``_gamma_draws.py``).

Example:
    >>> import ndgrad
    >>> from ndgrad.distributions import Beta, Gamma
    >>> d = Gamma(ndgrad.tensor([2.0]), 1.0)
    >>> [round(v, 4) for v in d.log_prob(ndgrad.tensor([1.0])).tolist()]
    [-1.0]
    >>> round(Beta(2.0, 2.0).mean.item(), 4)
    0.5
"""

from __future__ import annotations

from numbers import Number, Real
from typing import Any, Optional

import ndgrad
from ndgrad.tensor import Tensor

from . import _gamma_draws, constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Beta", "Chi2", "Dirichlet", "FisherSnedecor", "Gamma"]


class Gamma(ExponentialFamily):
    """The gamma distribution with shape ``concentration`` and inverse scale ``rate``."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration: Any, rate: Any,
                 validate_args: Optional[bool] = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        plain = isinstance(concentration, Number) and isinstance(rate, Number)
        shape = ndgrad.Size(()) if plain else self.concentration.size()
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        return self._expand_params(Gamma, batch_shape, _instance, ("concentration", "rate"))

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        draws = _gamma_draws.standard_gamma(self.concentration.expand(shape))
        out = draws / self.rate.expand(shape)
        out.detach().clamp_(min=ndgrad.finfo(out.dtype).tiny)   # unrecorded, as torch's
        return out

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration, self.rate
        return ndgrad.xlogy(a, b) + ndgrad.xlogy(a - 1, value) - b * value - ndgrad.lgamma(a)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ndgrad.special.gammainc(self.concentration, self.rate * value)

    def entropy(self) -> Tensor:
        a = self.concentration
        return a - self.rate.log() + ndgrad.lgamma(a) + (1 - a) * ndgrad.digamma(a)

    @property
    def _natural_params(self) -> tuple:
        return self.concentration - 1, -self.rate

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return ndgrad.lgamma(x + 1) + (x + 1) * (-y.reciprocal()).log()


class Chi2(Gamma):
    """The chi-squared distribution with ``df`` degrees of freedom: Gamma(df / 2, 1 / 2)."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df: Any, validate_args: Optional[bool] = None) -> None:
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._new_for_expand(Chi2, _instance)
        return Gamma.expand(self, batch_shape, new)

    @property
    def df(self) -> Tensor:
        return self.concentration * 2


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution on the simplex with ``concentration`` (last dimension: the
    categories)."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Tensor, validate_args: Optional[bool] = None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = concentration.shape
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        return self._expand_params(Dirichlet, batch_shape, _instance, ("concentration",))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return _gamma_draws.dirichlet(self.concentration.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        a = self.concentration
        return (ndgrad.xlogy(a - 1.0, value).sum(-1) + ndgrad.lgamma(a.sum(-1))
                - ndgrad.lgamma(a).sum(-1))

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        a = self.concentration
        inner = (a - 1).clamp(min=0.0)
        inner = inner / inner.sum(-1, keepdim=True)
        # where some concentration is below one the density peaks at that vertex
        below = a < 1
        vertex = ndgrad.nn.functional.one_hot(a.argmax(-1), a.shape[-1]).type_as(inner)
        return ndgrad.where(below.all(-1, keepdim=True), vertex, inner)

    @property
    def variance(self) -> Tensor:
        total = self.concentration.sum(-1, keepdim=True)
        share = self.concentration / total
        return share * (1 - share) / (total + 1)

    def entropy(self) -> Tensor:
        a = self.concentration
        k = a.size(-1)
        total = a.sum(-1)
        return (ndgrad.lgamma(a).sum(-1) - ndgrad.lgamma(total)
                - (k - total) * ndgrad.digamma(total)
                - ((a - 1.0) * ndgrad.digamma(a)).sum(-1))

    @property
    def _natural_params(self) -> tuple:
        return (self.concentration,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return ndgrad.lgamma(x).sum(-1) - ndgrad.lgamma(x.sum(-1))

    @property
    def _mean_carrier_measure(self) -> Any:
        return 0


class Beta(ExponentialFamily):
    """The beta distribution on ``[0, 1]``: a two-category Dirichlet's first coordinate."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Any, concentration0: Any,
                 validate_args: Optional[bool] = None) -> None:
        if isinstance(concentration1, Real) and isinstance(concentration0, Real):
            pair = ndgrad.tensor([float(concentration1), float(concentration0)])
        else:
            c1, c0 = broadcast_all(concentration1, concentration0)
            pair = ndgrad.stack([c1, c0], -1)
        self._pair = Dirichlet(pair, validate_args=validate_args)
        super().__init__(self._pair._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._new_for_expand(Beta, _instance)
        new._pair = self._pair.expand(batch_shape)
        return self._finish_expand(new, batch_shape)

    @property
    def concentration1(self) -> Tensor:
        return self._pair.concentration[..., 0]

    @property
    def concentration0(self) -> Tensor:
        return self._pair.concentration[..., 1]

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        return self._pair.mode[..., 0]

    @property
    def variance(self) -> Tensor:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return self._pair.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        both = ndgrad.stack([value, 1.0 - value], -1)
        return self._pair.log_prob(both)

    def entropy(self) -> Tensor:
        return self._pair.entropy()

    @property
    def _natural_params(self) -> tuple:
        return self.concentration1, self.concentration0

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return ndgrad.lgamma(x) + ndgrad.lgamma(y) - ndgrad.lgamma(x + y)

    @property
    def _mean_carrier_measure(self) -> Any:
        return 0


class FisherSnedecor(Distribution):
    """The F distribution: the ratio of two chi-squared variates, each over its degrees of
    freedom ``df1`` and ``df2``."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1: Any, df2: Any, validate_args: Optional[bool] = None) -> None:
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._top = Gamma(self.df1 * 0.5, self.df1 * 0.5)
        self._bottom = Gamma(self.df2 * 0.5, self.df2 * 0.5)
        plain = isinstance(df1, Number) and isinstance(df2, Number)
        shape = ndgrad.Size(()) if plain else self.df1.size()
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._expand_params(FisherSnedecor, batch_shape, _instance, ("df1", "df2"))
        new._top = self._top.expand(batch_shape)
        new._bottom = self._bottom.expand(batch_shape)
        return new

    @property
    def mean(self) -> Tensor:
        d2 = self.df2
        return ndgrad.where(d2 > 2, d2 / (d2 - 2), ndgrad.full_like(d2, float("nan")))

    @property
    def mode(self) -> Tensor:
        d1, d2 = self.df1, self.df2
        value = (d1 - 2) / d1 * d2 / (d2 + 2)
        return ndgrad.where(d1 > 2, value, ndgrad.full_like(value, float("nan")))

    @property
    def variance(self) -> Tensor:
        d1, d2 = self.df1, self.df2
        value = 2 * d2.pow(2) * (d1 + d2 - 2) / (d1 * (d2 - 2).pow(2) * (d2 - 4))
        return ndgrad.where(d2 > 4, value, ndgrad.full_like(value, float("nan")))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        ratio = self._top.rsample(sample_shape) / self._bottom.rsample(sample_shape)
        return ratio.clamp(min=ndgrad.finfo(ratio.dtype).tiny)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        h1, h2 = self.df1 * 0.5, self.df2 * 0.5
        ratio = self.df1 / self.df2
        log_beta = ndgrad.lgamma(h1) + ndgrad.lgamma(h2) - ndgrad.lgamma(h1 + h2)
        return (h1 * ratio.log() + (h1 - 1) * value.log() - (h1 + h2) * (ratio * value).log1p()
                - log_beta)
