"""``BatchNorm1d/2d/3d`` (and their lazy forms), as in ``torch.nn.modules.batchnorm``: the same
parameters and buffers in the same order (``weight``, ``bias``, ``running_mean``,
``running_var``, ``num_batches_tracked``), running statistics updated in training with
``momentum`` (None: a cumulative average over the batches seen), used in evaluation.

    >>> import ndgrad
    >>> import ndgrad.nn as nn
    >>> m = nn.BatchNorm1d(2)
    >>> m
    BatchNorm1d(2, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
    >>> _ = m(ndgrad.tensor([[0.0, 1.0], [2.0, 5.0]]))
    >>> m.running_mean, int(m.num_batches_tracked)
    (tensor([0.1000, 0.3000]), 1)
"""

from __future__ import annotations

from typing import Any, Optional

from ... import _creation, _dtype
from . import _functional_entries as F
from ...tensor import Tensor
from .. import init
from ..parameter import Parameter, UninitializedBuffer, UninitializedParameter
from .module import LazyModuleMixin, Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d", "SyncBatchNorm"]


class _NormBase(Module):
    """Parameters, buffers and running-statistics bookkeeping shared by batch and instance
    norm."""

    _version = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: Optional[float] = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        kw = {"device": device, "dtype": dtype}
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = Parameter(_creation.empty(num_features, **kw))
            if bias:
                self.bias = Parameter(_creation.empty(num_features, **kw))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if self.track_running_stats:
            self.register_buffer("running_mean", _creation.zeros(num_features, **kw))
            self.register_buffer("running_var", _creation.ones(num_features, **kw))
            self.register_buffer("num_batches_tracked",
                                 _creation.tensor(0, dtype=_dtype.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Running mean 0, running variance 1, no batch tracked."""
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """Running statistics reset; weight 1, bias 0."""
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input: Tensor) -> None:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            # checkpoints older than version 2 have no num_batches_tracked: 0
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = (self.num_batches_tracked
                                   if self.num_batches_tracked is not None
                                   else _creation.tensor(0, dtype=_dtype.int64))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)


class _BatchNorm(_NormBase):
    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            if self.num_batches_tracked is not None:
                self.num_batches_tracked.add_(1)
                if self.momentum is None:      # cumulative moving average
                    factor = 1.0 / float(self.num_batches_tracked)
                else:
                    factor = self.momentum
        if self.training:
            bn_training = True
        else:
            bn_training = self.running_mean is None and self.running_var is None
        track = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if track else None,
                            self.running_var if track else None, self.weight, self.bias,
                            bn_training, factor, self.eps)


def _dim_check(dims: tuple, text: str):
    def check(self: Any, input: Tensor) -> None:
        if input.dim() not in dims:
            raise ValueError(f"expected {text} input (got {input.dim()}D input)")
    return check


class BatchNorm1d(_BatchNorm):
    """Batch normalization of a (N, C) or (N, C, L) input over N (and L), per channel."""

    _check_input_dim = _dim_check((2, 3), "2D or 3D")


class BatchNorm2d(_BatchNorm):
    """Batch normalization of a (N, C, H, W) input over N, H, W, per channel."""

    _check_input_dim = _dim_check((4,), "4D")


class BatchNorm3d(_BatchNorm):
    """Batch normalization of a (N, C, D, H, W) input over N, D, H, W, per channel."""

    _check_input_dim = _dim_check((5,), "5D")


class SyncBatchNorm(_BatchNorm):
    """Batch norm (ndgrad runs in one process: the same as BatchNorm over the local batch)."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: Optional[float] = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 process_group: Any = None, device: Any = None, dtype: Any = None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats,
                         device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")


class _LazyNormBase(LazyModuleMixin, _NormBase):
    """Norm modules whose ``num_features`` is read from the first input's dim 1."""

    weight: Any     # UninitializedParameter until the first input, then Parameter
    bias: Any

    def __init__(self, eps: float = 1e-5, momentum: Optional[float] = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None,
                 *, bias: bool = True) -> None:
        kw = {"device": device, "dtype": dtype}
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = UninitializedParameter(**kw)
            if bias:
                self.bias = UninitializedParameter(**kw)
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(**kw)
            self.running_var = UninitializedBuffer(**kw)
            self.num_batches_tracked = _creation.tensor(0, dtype=_dtype.int64)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            if self.affine:
                self.weight.materialize((self.num_features,))
                if self.bias is not None:
                    self.bias.materialize((self.num_features,))
            if self.track_running_stats:
                self.running_mean.materialize((self.num_features,))
                self.running_var.materialize((self.num_features,))
            self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    """``BatchNorm1d`` with ``num_features`` inferred from the first input."""

    cls_to_become = BatchNorm1d
    _check_input_dim = _dim_check((2, 3), "2D or 3D")


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    """``BatchNorm2d`` with ``num_features`` inferred from the first input."""

    cls_to_become = BatchNorm2d
    _check_input_dim = _dim_check((4,), "4D")


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    """``BatchNorm3d`` with ``num_features`` inferred from the first input."""

    cls_to_become = BatchNorm3d
    _check_input_dim = _dim_check((5,), "5D")
