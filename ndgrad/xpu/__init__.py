"""``ndgrad.xpu``: ndgrad computes on the CPU only; these answer the queries programs make
before choosing a device, as PyTorch's build without XPU does.

Example:
    >>> import ndgrad
    >>> ndgrad.xpu.is_available(), ndgrad.xpu.device_count()
    (False, 0)
"""

from __future__ import annotations

from ..tensor import check_device

__all__ = ["is_available", "device_count", "is_initialized", "manual_seed", "manual_seed_all",
           "current_device", "synchronize", "empty_cache"]


def is_available() -> bool:
    """False: there is no XPU backend."""
    return False


def device_count() -> int:
    """0: no XPU devices."""
    return 0


def is_initialized() -> bool:
    """False: XPU is never initialized."""
    return False


def manual_seed(seed: int) -> None:
    """Seeds no generator (there is no XPU device); accepted so seeding code runs."""


def manual_seed_all(seed: int) -> None:
    """Seeds no generator (there is no XPU device); accepted so seeding code runs."""


def empty_cache() -> None:
    """Nothing to free (no XPU memory)."""


def current_device() -> int:
    """Raises PyTorch's error: no XPU backend."""
    check_device("xpu")
    return 0


def synchronize(device: object = None) -> None:
    """Raises PyTorch's error: no XPU backend."""
    check_device("xpu")
