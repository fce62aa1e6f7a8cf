"""``ExponentialFamily``: densities of the form ``h(x) exp(<t(x), eta> - A(eta))``.

A family gives its natural parameters ``eta`` (``_natural_params``), its log-normalizer ``A``
(``_log_normalizer``) and the expectation of ``log h(x)`` (``_mean_carrier_measure``). Since
``grad A(eta)`` is the mean of the sufficient statistic, the entropy is
``A(eta) - <eta, grad A(eta)> - E[log h(x)]``, computed here by autograd; ``kl_divergence``
uses the same gradient for the Bregman divergence of ``A`` between two members.

Example:
    >>> import ndgrad
    >>> from ndgrad.distributions import Exponential, ExponentialFamily
    >>> d = Exponential(ndgrad.tensor([2.0]))
    >>> [round(v, 5) for v in ExponentialFamily.entropy(d).tolist()]
    [0.30685]
"""

from __future__ import annotations

from typing import Any

import ndgrad
from ndgrad.tensor import Tensor

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """The base class of exponential-family distributions."""

    @property
    def _natural_params(self) -> tuple:
        raise NotImplementedError

    def _log_normalizer(self, *natural_params: Any) -> Tensor:
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> Any:
        raise NotImplementedError

    def _fold_batch(self, x: Tensor) -> Tensor:
        """``x`` summed over the dimensions after the batch dimensions."""
        return x.reshape(tuple(self._batch_shape) + (-1,)).sum(-1)

    def entropy(self) -> Tensor:
        """``A(eta) - <eta, grad A(eta)> - E[log h(x)]``, by autograd."""
        eta = [p.detach().requires_grad_() for p in self._natural_params]
        log_norm = self._log_normalizer(*eta)
        slopes = ndgrad.autograd.grad(log_norm.sum(), eta, create_graph=True)
        result = log_norm - self._mean_carrier_measure
        for e, g in zip(eta, slopes):
            result = result - self._fold_batch(e * g)
        return result
