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
from ..amp import autocast_mode

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


autocast, GradScaler = autocast_mode._device_spellings("cuda", _dtype.float16)


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
