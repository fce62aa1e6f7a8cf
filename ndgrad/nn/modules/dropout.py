"""Dropout layers, as in ``torch.nn.modules.dropout``: active in training mode
(``module.train()``), the identity in evaluation mode (``module.eval()``).

    >>> import ndgrad
    >>> import ndgrad.nn as nn
    >>> m = nn.Dropout(p=0.2)
    >>> m
    Dropout(p=0.2, inplace=False)
    >>> x = ndgrad.ones(4)
    >>> m.eval()(x) is x
    True
"""

from __future__ import annotations

from .. import functional as F
from ...tensor import Tensor
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
           "FeatureAlphaDropout"]


class _DropoutNd(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability ``p``, scale the rest by ``1 / (1 - p)``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Zero whole channels of ``(N, C, L)`` / ``(C, L)`` inputs."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zero whole channels of ``(N, C, H, W)`` inputs."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zero whole channels of ``(N, C, D, H, W)`` / ``(C, D, H, W)`` inputs."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps SELU's self-normalization (mean 0, variance 1)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """``AlphaDropout`` on whole channels."""

    def forward(self, input: Tensor) -> Tensor:
        return F.feature_alpha_dropout(input, self.p, self.training)
