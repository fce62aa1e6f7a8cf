"""Distributions over matrices: ``Wishart`` (positive-definite matrices, the sampling
distribution of a Gaussian scatter matrix) and ``LKJCholesky`` (Cholesky factors of
correlation matrices).

Wishart draws use Bartlett's decomposition ``X = L A A^T L^T``: ``L`` the Cholesky factor of
the scale matrix, ``A`` lower triangular with ``A_ii = sqrt(chi2(df - i))`` and standard normal
entries below the diagonal; the chi-squared variates are gamma draws, so the draw is
differentiable in ``df`` (Note [Implicit reparameterization] in ``_gamma_draws.py``).

Note [Wishart redraws]
torch 2.13 draws the chi-squared variates (one ``Chi2`` draw of ``sample_shape``), then the
normals below the diagonal in ``tril_indices`` order, and then, because its singularity test
is inverted, draws every positive-definite sample a second time (up to ``max_try_correction``
rounds while the new ones are singular) and keeps the second draw. ndgrad draws the same
numbers in the same order, so a seeded program gets torch's samples and the random stream
after them; it warns "Singular sample detected." only when a first draw really is singular
(torch warns at every draw with a positive-definite sample), and its draws stay differentiable
(torch's backward fails: it rewrites in place the mask its assignment saved).
LKJCholesky draws use the onion method: row ``i`` of the factor is ``sqrt(y_i) u_i`` followed by
``sqrt(1 - y_i)`` on the diagonal, with ``y_i ~ Beta(i / 2, eta + (d - 1 - i) / 2)`` and
``u_i`` uniform on the unit sphere of dimension ``i``.

Example:
    >>> import ndgrad
    >>> from ndgrad.distributions import LKJCholesky
    >>> d = LKJCholesky(2, ndgrad.tensor(1.0))
    >>> round(d.log_prob(ndgrad.eye(2)).item(), 4)
    -0.6931
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Optional

import ndgrad
from ndgrad.tensor import Tensor

from . import constraints
from .distribution import Distribution, _as_size
from .exp_family import ExponentialFamily
from .gamma import Beta, Chi2
from .utils import lazy_property

__all__ = ["LKJCholesky", "Wishart"]


def _log_det_from_tril(L: Tensor) -> Tensor:
    return 2 * L.diagonal(dim1=-2, dim2=-1).log().sum(-1)


class Wishart(ExponentialFamily):
    """The Wishart distribution with ``df`` degrees of freedom and a scale matrix given as
    exactly one of ``covariance_matrix``, ``precision_matrix`` or ``scale_tril``."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, df: Any, covariance_matrix: Optional[Tensor] = None,
                 precision_matrix: Optional[Tensor] = None, scale_tril: Optional[Tensor] = None,
                 validate_args: Optional[bool] = None) -> None:
        given = [(n, m) for n, m in (("covariance_matrix", covariance_matrix),
                                     ("precision_matrix", precision_matrix),
                                     ("scale_tril", scale_tril)) if m is not None]
        if len(given) != 1:
            # torch raises AssertionError here; kept for programs that catch it
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or "
                                 "scale_tril may be specified.")
        name, matrix = given[0]
        if matrix.dim() < 2:
            raise ValueError(f"{name} must be at least two-dimensional, with optional leading "
                             "batch dimensions")
        p = matrix.shape[-1]
        if not isinstance(df, Tensor):
            df = ndgrad.tensor(float(df), dtype=matrix.dtype)
        batch = tuple(ndgrad.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(df.shape)))
        self.df = df.expand(batch)
        setattr(self, name, matrix.expand(batch + (p, p)))
        if bool((self.df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        if name == "scale_tril":
            self._tril = matrix
        elif name == "covariance_matrix":
            self._tril = ndgrad.linalg.cholesky(matrix)
        else:
            self._tril = ndgrad.linalg.cholesky(ndgrad.linalg.inv(matrix))
        self._rules = {name: (constraints.lower_cholesky if name == "scale_tril"
                              else constraints.positive_definite),
                       "df": constraints.greater_than(p - 1)}
        super().__init__(batch, (p, p), validate_args=validate_args)

    @property
    def arg_constraints(self) -> dict:
        """The given scale parameter's constraint and ``df > p - 1``."""
        return self._rules

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._new_for_expand(Wishart, _instance)
        shape = tuple(_as_size(batch_shape))
        p = self._event_shape[-1]
        new.df = self.df.expand(shape)
        new._tril = self._tril
        new._rules = self._rules
        for name in ("covariance_matrix", "precision_matrix", "scale_tril"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(shape + (p, p)))
        return self._finish_expand(new, shape)

    def _full(self, m: Tensor) -> Tensor:
        return m.expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._full(self._tril)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        return self._full(self._tril @ self._tril.mT)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        return self._full(ndgrad.cholesky_inverse(self._tril))

    def _df_matrix(self) -> Tensor:
        return self.df.reshape(tuple(self.df.shape) + (1, 1))

    @property
    def mean(self) -> Tensor:
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        p = self._event_shape[-1]
        factor = self._df_matrix() - p - 1
        factor = ndgrad.where(factor > 0, factor, ndgrad.full_like(factor, math.nan))
        return factor * self.covariance_matrix

    @property
    def variance(self) -> Tensor:
        cov = self.covariance_matrix
        diag = cov.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (cov.pow(2) + diag.unsqueeze(-1) * diag.unsqueeze(-2))

    def _bartlett(self, sample_shape: tuple) -> Tensor:
        p = self._event_shape[-1]
        dtype = self._tril.dtype
        shape = tuple(sample_shape) + tuple(self._batch_shape)
        dof = self.df.unsqueeze(-1) - ndgrad.arange(p, dtype=dtype)
        diag = Chi2(dof).rsample(sample_shape).sqrt().clamp(min=ndgrad.finfo(dtype).eps)
        rows, cols = ndgrad.tril_indices(p, p, offset=-1)
        below = ndgrad.zeros(shape + (p, p), dtype=dtype)
        below[..., rows, cols] = ndgrad.randn(shape + (p * (p - 1) // 2,), dtype=dtype)
        LA = self._tril @ (diag.diag_embed() + below)
        return LA @ LA.mT

    def rsample(self, sample_shape: Any = (), max_try_correction: Optional[int] = None
                ) -> Tensor:
        """Bartlett draws in torch's order (Note [Wishart redraws])."""
        tries = 10 if max_try_correction is None else max_try_correction
        sample = self._bartlett(tuple(_as_size(sample_shape)))
        batch_dims = [-(k + 1) for k in range(len(self._batch_shape))]

        def per_sample(ok: Tensor) -> Tensor:
            return ok.amax(batch_dims) if batch_dims else ok
        valid = per_sample(self.support.check(sample.detach()))
        if not bool(valid.all()):
            warnings.warn("Singular sample detected.", stacklevel=2)
        redraw = valid
        for _ in range(tries if bool(redraw.any()) else 0):
            new = self._bartlett(tuple(redraw[redraw].shape))
            sample[redraw] = new
            # a new mask (torch rewrites the one the assignment saved, so its backward fails)
            redraw = redraw.clone()
            redraw[redraw.clone()] = per_sample(~self.support.check(new.detach()))
            if not bool(redraw.any()):
                break
        return sample

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        p = self._event_shape[-1]
        nu = self.df
        L = self._tril
        # tr(Sigma^{-1} X) as the elementwise product with the precision (both symmetric)
        trace = (ndgrad.cholesky_inverse(L) * value).sum((-2, -1))
        log_det_x = ndgrad.linalg.slogdet(value)[1]
        return (-0.5 * nu * p * math.log(2) - 0.5 * nu * _log_det_from_tril(L)
                - ndgrad.mvlgamma(0.5 * nu, p) + 0.5 * (nu - p - 1) * log_det_x - 0.5 * trace)

    def entropy(self) -> Tensor:
        p = self._event_shape[-1]
        nu = self.df
        shifts = ndgrad.arange(p, dtype=nu.dtype)
        psi_p = ndgrad.digamma(0.5 * (nu.unsqueeze(-1) - shifts)).sum(-1)
        return (0.5 * (p + 1) * _log_det_from_tril(self._tril) + 0.5 * p * (p + 1) * math.log(2)
                + ndgrad.mvlgamma(0.5 * nu, p) - 0.5 * (nu - p - 1) * psi_p + 0.5 * nu * p)

    @property
    def _natural_params(self) -> tuple:
        return -0.5 * self.precision_matrix, 0.5 * (self.df - self._event_shape[-1] - 1)

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        # with x = -Sigma^{-1} / 2 and y = (df - p - 1) / 2, df / 2 = y + (p + 1) / 2
        p = self._event_shape[-1]
        half_df = y + 0.5 * (p + 1)
        return -half_df * ndgrad.linalg.slogdet(-x)[1] + ndgrad.mvlgamma(half_df, p)


class LKJCholesky(Distribution):
    """The LKJ distribution over Cholesky factors of ``dim x dim`` correlation matrices, with
    density proportional to ``det(L L^T) ** (concentration - 1)`` on the correlation
    matrix."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration: Any = 1.0,
                 validate_args: Optional[bool] = None) -> None:
        if dim < 2:
            raise ValueError("Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        if not isinstance(concentration, Tensor):
            concentration = ndgrad.tensor(float(concentration))
        self.concentration = concentration
        super().__init__(concentration.shape, (dim, dim), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._new_for_expand(LKJCholesky, _instance)
        shape = _as_size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(shape)
        return self._finish_expand(new, shape)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        d = self.dim
        rows = ndgrad.arange(1, d, dtype=self.concentration.dtype)
        eta = self.concentration.unsqueeze(-1)
        with ndgrad.no_grad():
            y = Beta(0.5 * rows, eta + 0.5 * (d - 1 - rows)).sample(sample_shape)
            lead = tuple(y.shape[:-1])
            u = ndgrad.randn(lead + (d, d), dtype=y.dtype).tril(-1)
            u = u / u.norm(dim=-1, keepdim=True).clamp(min=ndgrad.finfo(y.dtype).tiny)
            y_full = ndgrad.cat([ndgrad.zeros_like(y[..., :1]), y], -1)
            off = u * y_full.sqrt().unsqueeze(-1)
            return off + (1 - y_full).sqrt().diag_embed()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        d = self.dim
        eta = self.concentration
        # unnormalized: sum_{i >= 2} (d - i + 2 eta - 2) log L_ii (i counted from 1)
        index = ndgrad.arange(2, d + 1, dtype=eta.dtype)
        powers = (d - index) + 2 * eta.unsqueeze(-1) - 2
        diag = value.diagonal(dim1=-2, dim2=-1)[..., 1:]
        unnormalized = (powers * diag.log()).sum(-1)
        # log of the normalizer over correlation matrices: for k = 1 .. d-1,
        # (2 eta - 2 + d - k)(d - k) log 2 + (d - k) log B(b_k, b_k), b_k = eta + (d - k - 1) / 2
        k = ndgrad.arange(1, d, dtype=eta.dtype)
        b = eta.unsqueeze(-1) + 0.5 * (d - k - 1)
        log_beta = 2 * ndgrad.lgamma(b) - ndgrad.lgamma(2 * b)
        log_norm = ((2 * eta.unsqueeze(-1) - 2 + d - k) * (d - k) * math.log(2)
                    + (d - k) * log_beta).sum(-1)
        return unnormalized - log_norm
