"""``ndgrad.cuda.amp``: PyTorch's deprecated CUDA spellings of autocast and GradScaler. There is
no CUDA here: both warn and disable themselves, so GPU training scripts run on the CPU unchanged.

Example:
    >>> import warnings, ndgrad
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     ndgrad.cuda.amp.GradScaler().is_enabled()
    False
"""

from __future__ import annotations

import warnings
from typing import Any

from .. import _dtype
from ..amp import autocast_mode, grad_scaler

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(autocast_mode.autocast):
    """``torch.cuda.amp.autocast(...)``: deprecated for ``torch.amp.autocast("cuda", ...)``."""

    def __init__(self, enabled: bool = True, dtype: _dtype.dtype = _dtype.float16,
                 cache_enabled: bool = True) -> None:
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(grad_scaler.GradScaler):
    """``torch.cuda.amp.GradScaler(...)``: deprecated for ``torch.amp.GradScaler("cuda", ...)``."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)


def custom_fwd(fwd: Any = None, *, cast_inputs: Any = None) -> Any:
    """``torch.cuda.amp.custom_fwd``: deprecated for ``torch.amp.custom_fwd(..., "cuda")``."""
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=2)
    return autocast_mode.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd: Any = None) -> Any:
    """``torch.cuda.amp.custom_bwd``: deprecated for ``torch.amp.custom_bwd(..., "cuda")``."""
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_bwd(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=2)
    return autocast_mode.custom_bwd(bwd, device_type="cuda")
