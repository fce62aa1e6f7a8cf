"""``ndgrad.xpu``: ndgrad computes on the CPU only; these answer the queries programs make
before choosing a device, as PyTorch's build without XPU does.

Example:
    >>> import ndgrad
    >>> ndgrad.xpu.is_available(), ndgrad.xpu.device_count()
    (False, 0)
"""

from __future__ import annotations

from ..tensor import check_device

from typing import Any

__all__ = ["is_available", "device_count", "is_initialized", "manual_seed", "manual_seed_all",
           "current_device", "synchronize", "empty_cache", "init", "get_device_name",
           "get_device_properties", "get_device_capability", "set_device", "get_arch_list",
           "get_gencode_flags", "is_bf16_supported", "seed", "seed_all", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "mem_get_info", "get_rng_state"]


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


def init() -> None:
    """Raises PyTorch's error: no XPU backend to initialize."""
    check_device("xpu")


def get_device_name(device: Any = None) -> str:
    """Raises PyTorch's error: no XPU device."""
    check_device("xpu")
    return ""


def get_device_properties(device: Any = None) -> Any:
    """Raises PyTorch's error: no XPU device."""
    check_device("xpu")


def get_device_capability(device: Any = None) -> dict:
    """Raises PyTorch's error: no XPU device."""
    check_device("xpu")
    return {}


def set_device(device: Any) -> None:
    """Raises PyTorch's error: no XPU device."""
    check_device("xpu")


def mem_get_info(device: Any = None) -> tuple:
    """Raises PyTorch's error: no XPU device."""
    check_device("xpu")
    return (0, 0)


def get_rng_state(device: Any = "xpu") -> Any:
    """Raises PyTorch's error: no XPU generator."""
    check_device("xpu")


def get_arch_list() -> list:
    """[]: this build targets no XPU architecture."""
    return []


def get_gencode_flags() -> str:
    """'': no XPU code is generated."""
    return ""


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """False: no XPU device."""
    return False


def seed() -> None:
    """Seeds no generator (there is no XPU device)."""


def seed_all() -> None:
    """Seeds no generator (there is no XPU device)."""


def memory_allocated(device: Any = None) -> int:
    """0: no XPU memory."""
    return 0


def max_memory_allocated(device: Any = None) -> int:
    """0: no XPU memory."""
    return 0


def memory_reserved(device: Any = None) -> int:
    """0: no XPU memory."""
    return 0
