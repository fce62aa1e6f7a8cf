"""``MultivariateNormal``: the Gaussian on vectors, given by a covariance matrix, a precision
matrix or a lower Cholesky factor of the covariance.

Internally every parameterization is reduced to the Cholesky factor ``L`` of the covariance
(``L L^T = Sigma``) without broadcasting its batch dimensions; the three matrices are derived
from it on first access. Draws are ``loc + L @ eps`` with standard normal ``eps`` (torch's
numbers for the seed).

Example:
    >>> import ndgrad
    >>> from ndgrad.distributions import MultivariateNormal
    >>> d = MultivariateNormal(ndgrad.zeros(2), covariance_matrix=ndgrad.eye(2))
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

__all__ = ["MultivariateNormal"]


def _solve_lower(L: Tensor, b: Tensor) -> Tensor:
    """``L^{-1} b`` for lower-triangular ``L`` and a column-stacked ``b``."""
    return ndgrad.linalg.solve_triangular(L, b, upper=False)


def _mahalanobis_sq(L: Tensor, diff: Tensor) -> Tensor:
    """``|L^{-1} diff|^2`` over the last dimension, broadcasting batch dimensions."""
    shape = ndgrad.broadcast_shapes(tuple(L.shape[:-2]), tuple(diff.shape[:-1]))
    n = L.shape[-1]
    Lb = L.expand(tuple(shape) + (n, n))
    db = diff.expand(tuple(shape) + (n,))
    return _solve_lower(Lb, db.unsqueeze(-1)).squeeze(-1).pow(2).sum(-1)


def _half_log_det(L: Tensor) -> Tensor:
    return L.diagonal(dim1=-2, dim2=-1).log().sum(-1)


class MultivariateNormal(Distribution):
    """The multivariate normal distribution with mean ``loc`` and exactly one of
    ``covariance_matrix``, ``precision_matrix`` or ``scale_tril``."""

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, covariance_matrix: Optional[Tensor] = None,
                 precision_matrix: Optional[Tensor] = None, scale_tril: Optional[Tensor] = None,
                 validate_args: Optional[bool] = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if sum(m is not None for m in (covariance_matrix, precision_matrix, scale_tril)) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        if scale_tril is not None:
            if scale_tril.dim() < 2:
                raise ValueError("scale_tril matrix must be at least two-dimensional, with "
                                 "optional leading batch dimensions")
            matrix, name = scale_tril, "scale_tril"
        elif covariance_matrix is not None:
            if covariance_matrix.dim() < 2:
                raise ValueError("covariance_matrix must be at least two-dimensional, with "
                                 "optional leading batch dimensions")
            matrix, name = covariance_matrix, "covariance_matrix"
        else:
            assert precision_matrix is not None
            if precision_matrix.dim() < 2:
                raise ValueError("precision_matrix must be at least two-dimensional, with "
                                 "optional leading batch dimensions")
            matrix, name = precision_matrix, "precision_matrix"
        batch = ndgrad.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1]))
        setattr(self, name, matrix.expand(tuple(batch) + tuple(matrix.shape[-2:])))
        self.loc = loc.expand(tuple(batch) + (-1,))
        super().__init__(batch, self.loc.shape[-1:], validate_args=validate_args)
        if name == "scale_tril":
            self._tril = matrix
        elif name == "covariance_matrix":
            self._tril = ndgrad.linalg.cholesky(matrix)
        else:
            self._tril = ndgrad.linalg.cholesky(ndgrad.linalg.inv(matrix))

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._new_for_expand(MultivariateNormal, _instance)
        shape = _as_size(batch_shape)
        n = self._event_shape[0]
        new.loc = self.loc.expand(tuple(shape) + (n,))
        new._tril = self._tril
        for name in ("covariance_matrix", "precision_matrix", "scale_tril"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(tuple(shape) + (n, n)))
        return self._finish_expand(new, shape)

    def _full_matrix(self, m: Tensor) -> Tensor:
        return m.expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._full_matrix(self._tril)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        return self._full_matrix(self._tril @ self._tril.mT)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        return self._full_matrix(ndgrad.cholesky_inverse(self._tril))

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        per_row = self._tril.pow(2).sum(-1)
        return per_row.expand(tuple(self._batch_shape) + tuple(self._event_shape))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = ndgrad.randn(shape, dtype=self.loc.dtype)
        return self.loc + (self._tril @ eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n = self._event_shape[0]
        m = _mahalanobis_sq(self._tril, value - self.loc)
        return -0.5 * (n * math.log(2 * math.pi) + m) - _half_log_det(self._tril)

    def entropy(self) -> Tensor:
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + math.log(2 * math.pi)) + _half_log_det(self._tril)
        return h.expand(self._batch_shape) if len(self._batch_shape) else h
