"""``ndgrad.cpu.amp``: PyTorch's deprecated CPU spellings of autocast and GradScaler.

Example:
    >>> import warnings, ndgrad
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     with ndgrad.cpu.amp.autocast():
    ...         y = ndgrad.ones(2, 2) @ ndgrad.ones(2, 2)
    >>> y.dtype
    ndgrad.bfloat16
"""

from __future__ import annotations


from .. import _dtype
from ..amp import autocast_mode

__all__ = ["autocast", "GradScaler"]


autocast, GradScaler = autocast_mode._device_spellings("cpu", _dtype.bfloat16)
