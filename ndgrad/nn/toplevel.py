"""The ``nn.functional`` kernels PyTorch also exposes at the top of ``torch`` (``torch.conv2d``,
``torch.dropout``, ``torch.layer_norm`` ...). ``ndgrad.<name>`` loads them on first use
(``ndgrad.__getattr__``), so ``import ndgrad`` does not import ``nn``.

Where torch's top-level signature equals ``F``'s, the name is ``F``'s function; where it differs
(``torch.dropout(input, p, train)``, ``torch.embedding(weight, indices, ...)``,
``torch.batch_norm(input, weight, bias, running_mean, running_var, ...)``), a wrapper takes
torch's order.

Example:
    >>> import ndgrad
    >>> ndgrad.dropout(ndgrad.ones(3), 0.5, False)
    tensor([1., 1., 1.])
"""

from __future__ import annotations

from typing import Any, List, Optional

from ..tensor import Tensor
from . import functional as F

# torch.<name> is F.<name>: the same positional order and defaults.
SAME_AS_FUNCTIONAL = (
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "bilinear", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle",
    "cosine_similarity", "pairwise_distance", "pdist", "selu", "selu_", "celu", "celu_", "prelu",
    "rrelu", "rrelu_", "hardshrink", "threshold", "threshold_", "avg_pool1d",
    "adaptive_avg_pool1d", "max_pool1d", "max_pool2d", "max_pool3d")


def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.dropout(input, p, train)``."""
    return F.dropout(input, p, train)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    return F.dropout(input, p, train, inplace=True)


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    return F.alpha_dropout(input, p, train)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    return F.feature_alpha_dropout(input, p, train)


def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """``torch.embedding(weight, indices, ...)``: the weight first; ``padding_idx=-1`` means
    none."""
    return F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def layer_norm(input: Tensor, normalized_shape: List[int], weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5,
               cudnn_enable: bool = True) -> Tensor:
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5,
               cudnn_enabled: bool = True) -> Tensor:
    return F.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input: Tensor, weight: Optional[Tensor], bias: Optional[Tensor],
               running_mean: Optional[Tensor], running_var: Optional[Tensor], training: bool,
               momentum: float, eps: float, cudnn_enabled: bool) -> Tensor:
    """``torch.batch_norm``: weight and bias before the running statistics."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                        eps)


def instance_norm(input: Tensor, weight: Optional[Tensor], bias: Optional[Tensor],
                  running_mean: Optional[Tensor], running_var: Optional[Tensor],
                  use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool) -> Tensor:
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                           momentum, eps)


NAMES = frozenset(SAME_AS_FUNCTIONAL) | {
    "dropout", "dropout_", "alpha_dropout", "feature_alpha_dropout", "embedding", "layer_norm",
    "group_norm", "batch_norm", "instance_norm"}


def get(name: str) -> Any:
    return getattr(F, name) if name in SAME_AS_FUNCTIONAL else globals()[name]
