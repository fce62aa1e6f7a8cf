"""``ndgrad.cpu``: the CPU device's module, as ``torch.cpu`` (always available; one device).

Example:
    >>> import ndgrad
    >>> ndgrad.cpu.is_available(), ndgrad.cpu.device_count(), ndgrad.cpu.current_device()
    (True, 1, 'cpu')
"""

from __future__ import annotations

from typing import Any

__all__ = ["is_available", "device_count", "current_device", "synchronize"]


def is_available() -> bool:
    """True: the CPU is always there."""
    return True


def device_count() -> int:
    """1: PyTorch counts the CPU as one device."""
    return 1


def current_device() -> str:
    """``'cpu'``."""
    return "cpu"


def synchronize(device: Any = None) -> None:
    """Nothing to wait for: CPU ops finish before they return."""
