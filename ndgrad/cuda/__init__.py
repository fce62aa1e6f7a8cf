"""``ndgrad.cuda``: ndgrad computes on the CPU only; these answer the queries programs make
before choosing a device, as PyTorch's CPU build does.

Example:
    >>> import ndgrad
    >>> ndgrad.device("cuda" if ndgrad.cuda.is_available() else "cpu")
    device(type='cpu')
"""

from __future__ import annotations

from ..tensor import check_device

__all__ = ["is_available", "device_count", "is_initialized", "manual_seed", "manual_seed_all",
           "current_device", "synchronize"]


def is_available() -> bool:
    """False: there is no CUDA backend."""
    return False


def device_count() -> int:
    """0: no CUDA devices."""
    return 0


def is_initialized() -> bool:
    """False: CUDA is never initialized."""
    return False


def manual_seed(seed: int) -> None:
    """Seeds no generator (there is no CUDA device); accepted so seeding code runs."""


def manual_seed_all(seed: int) -> None:
    """Seeds no generator (there is no CUDA device); accepted so seeding code runs."""


def current_device() -> int:
    """Raises PyTorch's error: no CUDA backend."""
    check_device("cuda")
    return 0


def synchronize(device: object = None) -> None:
    """Raises PyTorch's error: no CUDA backend."""
    check_device("cuda")
