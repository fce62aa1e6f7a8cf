"""``LowRankMultivariateNormal``: a Gaussian whose covariance is a low-rank term plus a
diagonal, ``W W^T + diag(D)`` with ``W`` of shape ``n x m`` (``m`` small).

Densities use the Woodbury identity and the matrix determinant lemma with the ``m x m``
capacitance matrix ``K = I + W^T D^{-1} W``: ``Sigma^{-1} = D^{-1} - D^{-1} W K^{-1} W^T
D^{-1}`` and ``log det Sigma = log det K + sum(log D)``, so no ``n x n`` factorization is
needed. Draws are ``loc + W e1 + sqrt(D) e2`` with standard normal ``e1`` (length ``m``) drawn
before ``e2`` (length ``n``).

Example:
    >>> import ndgrad
    >>> from ndgrad.distributions import LowRankMultivariateNormal
    >>> d = LowRankMultivariateNormal(ndgrad.zeros(2), ndgrad.zeros(2, 1), ndgrad.ones(2))
    >>> round(d.log_prob(ndgrad.zeros(2)).item(), 4)
    -1.8379
"""

from __future__ import annotations

import math
from typing import Any, Optional

import ndgrad
from ndgrad.tensor import Tensor

from . import constraints
from .distribution import Distribution, _as_size
from .utils import lazy_property

__all__ = ["LowRankMultivariateNormal"]


def _capacitance_tril(W: Tensor, D: Tensor) -> Tensor:
    """Cholesky factor of ``I + W^T D^{-1} W``."""
    m = W.shape[-1]
    scaled = W / D.unsqueeze(-1)
    K = W.mT @ scaled + ndgrad.eye(m, dtype=W.dtype)
    return ndgrad.linalg.cholesky(K)


class LowRankMultivariateNormal(Distribution):
    """The multivariate normal with covariance ``cov_factor @ cov_factor.T +
    diag(cov_diag)``."""

    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, cov_factor: Tensor, cov_diag: Tensor,
                 validate_args: Optional[bool] = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        n = loc.shape[-1]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if cov_factor.shape[-2] != n:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {n} x m")
        if tuple(cov_diag.shape[-1:]) != (n,):
            raise ValueError("cov_diag must be a batch of vectors with shape "
                             f"{_as_size(loc.shape[-1:])}")
        try:
            batch = ndgrad.broadcast_shapes(tuple(loc.shape[:-1]), tuple(cov_factor.shape[:-2]),
                                            tuple(cov_diag.shape[:-1]))
        except RuntimeError:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor "
                             f"{cov_factor.shape}, cov_diag {cov_diag.shape}") from None
        batch = tuple(batch)
        self.loc = loc.expand(batch + (n,))
        self.cov_factor = cov_factor.expand(batch + tuple(cov_factor.shape[-2:]))
        self.cov_diag = cov_diag.expand(batch + (n,))
        self._W = cov_factor
        self._D = cov_diag
        self._K_tril = _capacitance_tril(cov_factor, cov_diag)
        super().__init__(batch, (n,), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._new_for_expand(LowRankMultivariateNormal, _instance)
        shape = tuple(_as_size(batch_shape))
        n = self._event_shape[0]
        new.loc = self.loc.expand(shape + (n,))
        new.cov_factor = self.cov_factor.expand(shape + tuple(self.cov_factor.shape[-2:]))
        new.cov_diag = self.cov_diag.expand(shape + (n,))
        new._W, new._D, new._K_tril = self._W, self._D, self._K_tril
        return self._finish_expand(new, shape)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @lazy_property
    def variance(self) -> Tensor:
        per = self._W.pow(2).sum(-1) + self._D
        return per.expand(tuple(self._batch_shape) + tuple(self._event_shape))

    def _full(self, m: Tensor) -> Tensor:
        return m.expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        return self._full(self._W @ self._W.mT + self._D.diag_embed())

    @lazy_property
    def scale_tril(self) -> Tensor:
        return ndgrad.linalg.cholesky(self.covariance_matrix)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        inv_d = self._D.reciprocal()
        scaled = self._W * inv_d.unsqueeze(-1)                 # D^{-1} W
        half = ndgrad.linalg.solve_triangular(self._K_tril, scaled.mT, upper=False)
        return self._full(inv_d.diag_embed() - half.mT @ half)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        m = self._W.shape[-1]
        e1 = ndgrad.randn(tuple(shape[:-1]) + (m,), dtype=self.loc.dtype)
        e2 = ndgrad.randn(shape, dtype=self.loc.dtype)
        low = (self._W @ e1.unsqueeze(-1)).squeeze(-1)
        return self.loc + low + self._D.sqrt() * e2

    def _log_det(self) -> Tensor:
        k = 2 * self._K_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return k + self._D.log().sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        inv_d = self._D.reciprocal()
        plain = (diff.pow(2) * inv_d).sum(-1)
        proj = ((self._W * inv_d.unsqueeze(-1)).mT @ diff.unsqueeze(-1))   # W^T D^{-1} x
        Kb = self._K_tril.expand(tuple(proj.shape[:-2]) + tuple(self._K_tril.shape[-2:]))
        corr = ndgrad.linalg.solve_triangular(Kb, proj, upper=False).pow(2).sum((-2, -1))
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + self._log_det() + plain - corr)

    def entropy(self) -> Tensor:
        n = self._event_shape[0]
        h = 0.5 * (n * (1.0 + math.log(2 * math.pi)) + self._log_det())
        return h.expand(self._batch_shape) if len(self._batch_shape) else h
