"""``ndgrad.amp``: automatic mixed precision, as ``torch.amp``.

:class:`autocast` runs the matrix products and convolutions of a region in bfloat16 (or float16)
on the CPU and the losses and decompositions in float32 (Note [Autocast] in
ndgrad/ops/_autocast.py); :class:`GradScaler` scales a loss so that small float16 gradients do
not underflow, unscales them before the optimizer's step and skips steps whose gradients
overflowed. ndgrad has only the CPU: a ``"cuda"`` autocast or scaler warns and disables itself,
as PyTorch's CPU build does, so scripts written for GPUs run unchanged.

Example:
    >>> import ndgrad
    >>> scaler = ndgrad.amp.GradScaler("cuda", enabled=False)
    >>> with ndgrad.autocast(device_type="cpu", dtype=ndgrad.bfloat16):
    ...     y = ndgrad.ones(2, 3) @ ndgrad.ones(3, 2)
    >>> y.dtype, scaler.is_enabled()
    (ndgrad.bfloat16, False)
"""

from .autocast_mode import (autocast, custom_bwd, custom_fwd, get_autocast_dtype,
                            is_autocast_available)
from .grad_scaler import GradScaler

__all__ = ["autocast", "custom_bwd", "custom_fwd", "get_autocast_dtype", "is_autocast_available",
           "GradScaler"]
