"""``InstanceNorm1d/2d/3d`` (and their lazy forms), as in ``torch.nn.modules.instancenorm``:
each (sample, channel) normalized over its spatial dims; no affine parameters and no running
statistics by default; an input without batch dim is accepted.

    >>> import ndgrad
    >>> import ndgrad.nn as nn
    >>> nn.InstanceNorm1d(1)(ndgrad.tensor([[[1.0, 3.0]]]))
    tensor([[[-1.0000,  1.0000]]])
"""

from __future__ import annotations

import warnings
from typing import Any

from . import _functional_entries as F
from ...tensor import Tensor
from .batchnorm import _LazyNormBase, _NormBase

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class _InstanceNorm(_NormBase):
    _no_batch_dim = 0
    _dims: tuple = ()
    _dims_text = ""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() not in self._dims:
            raise ValueError(f"expected {self._dims_text} input (got {input.dim()}D input)")

    def _get_no_batch_dim(self) -> int:
        return self._no_batch_dim

    def _apply_instance_norm(self, input: Tensor) -> Tensor:
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight,
                               self.bias, self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        version = local_metadata.get("version", None)
        if version is None and not self.track_running_stats:
            keys = [prefix + n for n in ("running_mean", "running_var")
                    if prefix + n in state_dict]
            if keys:
                klass = type(self).__name__
                names = " and ".join(f'"{k}"' for k in keys)
                error_msgs.append(
                    f"Unexpected running stats buffer(s) {names} for {klass} with "
                    f"track_running_stats=False. If state_dict is a checkpoint saved before "
                    f"0.4.0, this may be expected because {klass} does not track running "
                    f"stats by default since 0.4.0. Please remove these keys from state_dict. "
                    f"If the running stats are actually needed, instead set "
                    f"track_running_stats=True in {klass} to enable them. See the "
                    f"documentation of {klass} for details.")
                for k in keys:
                    state_dict.pop(k)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        feature_dim = input.dim() - self._get_no_batch_dim()
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match "
                                 f"num_features ({self.num_features}), but got: "
                                 f"{input.size(feature_dim)}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. "
                          "You can silence this warning by not passing in num_features, "
                          "which is not used because affine=False", stacklevel=2)
        if input.dim() == self._get_no_batch_dim():
            return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)
        return self._apply_instance_norm(input)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of a (N, C, L) or (C, L) input."""

    _no_batch_dim, _dims, _dims_text = 2, (2, 3), "2D or 3D"


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of a (N, C, H, W) or (C, H, W) input."""

    _no_batch_dim, _dims, _dims_text = 3, (3, 4), "3D or 4D"


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of a (N, C, D, H, W) or (C, D, H, W) input."""

    _no_batch_dim, _dims, _dims_text = 4, (4, 5), "4D or 5D"


class LazyInstanceNorm1d(_LazyNormBase, _InstanceNorm):
    """``InstanceNorm1d`` with ``num_features`` inferred from the first input."""

    cls_to_become = InstanceNorm1d
    _no_batch_dim, _dims, _dims_text = 2, (2, 3), "2D or 3D"


class LazyInstanceNorm2d(_LazyNormBase, _InstanceNorm):
    """``InstanceNorm2d`` with ``num_features`` inferred from the first input."""

    cls_to_become = InstanceNorm2d
    _no_batch_dim, _dims, _dims_text = 3, (3, 4), "3D or 4D"


class LazyInstanceNorm3d(_LazyNormBase, _InstanceNorm):
    """``InstanceNorm3d`` with ``num_features`` inferred from the first input."""

    cls_to_become = InstanceNorm3d
    _no_batch_dim, _dims, _dims_text = 4, (4, 5), "4D or 5D"
