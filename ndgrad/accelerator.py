"""``ndgrad.accelerator``: the device-agnostic accelerator queries of PyTorch 2.6+. ndgrad has
no accelerator (it computes on the CPU), so programs that pick
``torch.accelerator.current_accelerator() or "cpu"`` run on the CPU.

Example:
    >>> import ndgrad
    >>> ndgrad.accelerator.is_available(), ndgrad.accelerator.current_accelerator()
    (False, None)
"""

from __future__ import annotations

from typing import Any, Optional

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index",
           "set_device_index", "synchronize", "current_stream"]

_NONE = "Cannot access accelerator device when none is available."


def is_available() -> bool:
    """False: no accelerator."""
    return False


def current_accelerator(check_available: bool = False) -> Optional[Any]:
    """None: no accelerator."""
    return None


def device_count() -> int:
    """0: no accelerator devices."""
    return 0


def current_device_index() -> int:
    """Raises PyTorch's error: no accelerator."""
    raise RuntimeError(_NONE)


def set_device_index(device: Any) -> None:
    """Raises PyTorch's error: no accelerator."""
    raise RuntimeError(_NONE)


def synchronize(device: Any = None) -> None:
    """Raises PyTorch's error: no accelerator."""
    raise RuntimeError(_NONE)


def current_stream(device: Any = None) -> Any:
    """Raises PyTorch's error: no accelerator."""
    raise RuntimeError(_NONE)
