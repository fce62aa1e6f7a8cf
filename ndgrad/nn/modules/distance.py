"""Distance modules, as in ``torch.nn.modules.distance``.

    >>> import ndgrad
    >>> import ndgrad.nn as nn
    >>> nn.PairwiseDistance(p=1.0)
    PairwiseDistance()
    >>> nn.CosineSimilarity()(ndgrad.tensor([[1.0, 0.0]]), ndgrad.tensor([[2.0, 0.0]])).tolist()
    [1.0]
"""

from __future__ import annotations

from ...tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["PairwiseDistance", "CosineSimilarity"]


class PairwiseDistance(Module):
    """``F.pairwise_distance`` with ``p`` stored as ``norm``."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    """``F.cosine_similarity`` along ``dim``."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)
