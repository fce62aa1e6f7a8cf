"""Loss modules, as in ``torch.nn.modules.loss``: the same constructor arguments and
attributes, ``weight``/``pos_weight`` registered as buffers (so ``state_dict()`` keys equal
torch's), the deprecated ``size_average``/``reduce`` mapped to ``reduction`` with torch's
warning; ``forward`` calls ``ndgrad.nn.functional``.

    >>> import ndgrad
    >>> import ndgrad.nn as nn
    >>> loss = nn.CrossEntropyLoss(weight=ndgrad.tensor([1.0, 2.0]))
    >>> list(loss.state_dict())
    ['weight']
    >>> round(loss(ndgrad.tensor([[0.0, 0.0]]), ndgrad.tensor([1])).item(), 4)
    0.6931
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Optional

from ... import _dtype
from ...ops.nn_loss import _legacy_reduction
from ...tensor import Tensor
from .. import functional as F
from .distance import PairwiseDistance
from .linear import Linear
from .module import Module

__all__ = ["L1Loss", "MSELoss", "CrossEntropyLoss", "NLLLoss", "NLLLoss2d", "BCELoss",
           "BCEWithLogitsLoss", "KLDivLoss", "SmoothL1Loss", "HuberLoss", "PoissonNLLLoss",
           "GaussianNLLLoss", "CosineEmbeddingLoss", "MarginRankingLoss", "HingeEmbeddingLoss",
           "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss", "SoftMarginLoss",
           "MultiMarginLoss", "TripletMarginLoss", "TripletMarginWithDistanceLoss", "CTCLoss",
           "LinearCrossEntropyLoss", "LinearCrossEntropyOptions"]


class _Loss(Module):
    """Base of the losses: holds ``reduction`` (from the legacy arguments if given)."""

    def __init__(self, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean") -> None:
        super().__init__()
        if size_average is not None or reduce is not None:
            self.reduction = _legacy_reduction(size_average, reduce)
        else:
            self.reduction = reduction


class _WeightedLoss(_Loss):
    """A loss with a per-class ``weight`` buffer."""

    def __init__(self, weight: Optional[Tensor] = None, size_average: Any = None,
                 reduce: Any = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    """Mean absolute error."""

    def __init__(self, size_average=None, reduce=None, reduction="mean") -> None:
        super().__init__(size_average, reduce, reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """Mean squared error."""

    def __init__(self, size_average=None, reduce=None, reduction="mean") -> None:
        super().__init__(size_average, reduce, reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy of logits against class indices or probabilities."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean", label_smoothing=0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_WeightedLoss):
    """Negative log likelihood of class indices."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy of logits (``weight`` and ``pos_weight`` are buffers)."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean",
                 pos_weight=None) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence (``input`` in log space)."""

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class SmoothL1Loss(_Loss):
    """Smooth L1 loss with threshold ``beta``."""

    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Huber loss with threshold ``delta``."""

    def __init__(self, reduction="mean", delta=1.0) -> None:
        if not isinstance(delta, (float, int)):
            raise TypeError(f"delta must be a float or int, got: {type(delta)}")
        super().__init__(None, None, reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class PoissonNLLLoss(_Loss):
    """Poisson negative log likelihood."""

    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-08, reduce=None,
                 reduction="mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full,
                                  eps=self.eps, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Gaussian negative log likelihood."""

    def __init__(self, *, full=False, eps=1e-06, reduction="mean") -> None:
        super().__init__(None, None, reduction)
        self.full = full
        self.eps = eps

    def forward(self, input: Tensor, target: Tensor, var: Any) -> Tensor:
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """Cosine embedding loss."""

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                       reduction=self.reduction)


class MarginRankingLoss(_Loss):
    """Margin ranking loss."""

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin,
                                     reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """Hinge embedding loss."""

    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss (targets padded with -1)."""

    def __init__(self, size_average=None, reduce=None, reduction="mean") -> None:
        super().__init__(size_average, reduce, reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """Two-class logistic loss."""

    def __init__(self, size_average=None, reduce=None, reduction="mean") -> None:
        super().__init__(size_average, reduce, reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Multi-label one-versus-all logistic loss."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight,
                                             reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss."""

    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                 reduction="mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got "
                             f"{weight.dim()}D instead")
        self.p = p
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=self.weight,
                                   reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """Triplet loss with the p-norm distance."""

    def __init__(self, margin=1.0, p=2.0, eps=1e-06, swap=False, size_average=None, reduce=None,
                 reduction="mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin
        self.p = p
        self.eps = eps
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                     eps=self.eps, swap=self.swap, reduction=self.reduction)


class CTCLoss(_Loss):
    """Connectionist Temporal Classification loss."""

    def __init__(self, blank=0, reduction="mean", zero_infinity=False) -> None:
        super().__init__(None, None, reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths: Any,
                target_lengths: Any) -> Tensor:
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)


class NLLLoss2d(NLLLoss):
    """``NLLLoss`` under its old name for 2-d inputs."""


class TripletMarginWithDistanceLoss(_Loss):
    """Triplet loss with any distance function (default ``PairwiseDistance()``)."""

    def __init__(self, *, distance_function: Optional[Callable] = None, margin: float = 1.0,
                 swap: bool = False, reduction: str = "mean") -> None:
        super().__init__(None, None, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater "
                             f"than 0, got {margin} instead")
        self.distance_function = (distance_function if distance_function is not None
                                  else PairwiseDistance())
        self.margin = margin
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)


_ACC_POLICIES = ("auto", "accurate", "balanced", "compact")


@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """torch's chunking options of ``linear_cross_entropy``, validated as torch does. torch
    splits the batch into chunks so the whole logits matrix never exists at once (a memory
    saving on large vocabularies); ndgrad computes the same loss in one piece, so the options
    are accepted and change nothing.

    >>> import ndgrad.nn as nn
    >>> nn.LinearCrossEntropyOptions(batch_chunk_size=2).batch_chunk_size
    2
    """

    allow_retain_graph: bool = False
    batch_chunk_size: Optional[int] = None
    chunking_method: Optional[str] = "auto"
    acc_policy: str = "auto"
    acc_dtype: Any = None

    def __post_init__(self) -> None:
        if self.acc_policy not in _ACC_POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            factor = factor if sep else "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        b = self.batch_chunk_size
        if not (b is None or isinstance(b, int) and b > 0):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {b!r}")
        ok = (_dtype.float16, _dtype.bfloat16, _dtype.float32, _dtype.float64)
        if self.acc_dtype is not None and self.acc_dtype not in ok:
            raise ValueError(
                f"acc_dtype must be one of {{None, torch.float16, torch.bfloat16, "
                f"torch.float32, torch.float64}}, got {self.acc_dtype!r}. Pass "
                "acc_dtype=None to let the op pick automatically.")


class LinearCrossEntropyLoss(_WeightedLoss):
    """Cross entropy of ``linear(input)`` logits: an internal ``Linear`` (``self.linear``)
    from ``in_features`` to ``num_classes * prod(out_features)`` (its weight stored flat, as
    torch's), reshaped to ``(num_classes, *out_features, in_features)`` for
    ``F.linear_cross_entropy``.

    >>> import ndgrad, ndgrad.nn as nn
    >>> loss = nn.LinearCrossEntropyLoss(3, 4)
    >>> list(loss.state_dict())
    ['linear.weight']
    >>> loss(ndgrad.ones(2, 3), ndgrad.tensor([0, 3])).shape
    ndgrad.Size([])
    """

    def __init__(self, in_features: int, num_classes: int, *, out_features: tuple = (),
                 bias: bool = False, device: Any = None, dtype: Any = None,
                 reduction: str = "mean", weight: Optional[Tensor] = None,
                 ignore_index: Optional[int] = None, label_smoothing: float = 0.0,
                 options: Optional[LinearCrossEntropyOptions] = None) -> None:
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got "
                               f"{tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got "
                               f"{label_smoothing}")
        super().__init__(weight, None, None, reduction)
        self.num_classes = num_classes
        self.out_features = out_features
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.linear = Linear(in_features, math.prod(out_features, start=num_classes), bias=bias,
                             device=device, dtype=dtype)
        self.options = options

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        lin = self.linear
        shape = (self.num_classes, *self.out_features)
        return F.linear_cross_entropy(
            input, lin.weight.reshape(shape + (lin.in_features,)), target,
            linear_bias=None if lin.bias is None else lin.bias.reshape(shape),
            weight=self.weight, reduction=self.reduction, ignore_index=self.ignore_index,
            label_smoothing=self.label_smoothing, options=self.options)

    def extra_repr(self) -> str:
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
