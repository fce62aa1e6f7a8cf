"""``ndgrad.mps``: torch.mps as PyTorch's builds without Metal expose it. ndgrad computes on the
CPU only, so ``is_available()`` is False, ``device_count()`` is 0, ``manual_seed`` does nothing
(``ndgrad.manual_seed`` may call it, as torch's does) and everything that needs the device
raises torch's RuntimeError ("Cannot execute ... without MPS backend.").

Example:
    >>> import ndgrad
    >>> ndgrad.mps.is_available(), ndgrad.mps.device_count()
    (False, 0)
    >>> device = "mps" if ndgrad.backends.mps.is_available() else "cpu"
    >>> ndgrad.ones(2, device=device).device
    device(type='cpu')
"""

from __future__ import annotations

import os
from typing import Any, NoReturn, Union

from . import profiler
from .event import Event, _no_mps

__all__ = ["compile_shader", "load_metallib", "device_count", "get_rng_state", "manual_seed",
           "seed", "set_rng_state", "synchronize", "empty_cache",
           "set_per_process_memory_fraction", "current_allocated_memory",
           "driver_allocated_memory", "Event", "profiler", "recommended_max_memory",
           "is_available"]


def is_available() -> bool:
    """False: ndgrad has no MPS backend."""
    return False


def device_count() -> int:
    """0: no MPS device."""
    return 0


def manual_seed(seed: int) -> None:
    """Does nothing without MPS (``ndgrad.manual_seed`` seeds the CPU generator)."""
    return None


def seed() -> NoReturn:
    """Refused: there is no MPS generator."""
    _no_mps("getDefaultGenerator")


def get_rng_state(device: Union[int, str, Any] = "mps") -> NoReturn:
    """Refused: there is no MPS generator."""
    _no_mps("getDefaultGenerator")


def set_rng_state(new_state: Any, device: Union[int, str, Any] = "mps") -> NoReturn:
    """Refused: there is no MPS generator."""
    _no_mps("getDefaultGenerator")


def synchronize() -> NoReturn:
    """Refused: there is no MPS device to wait for."""
    _no_mps("deviceSynchronize")


def empty_cache() -> NoReturn:
    """Refused: there is no MPS allocator."""
    _no_mps("emptyCache")


def set_per_process_memory_fraction(fraction: float) -> NoReturn:
    """Refused: there is no MPS allocator."""
    _no_mps("setMemoryFraction")


def current_allocated_memory() -> NoReturn:
    """Refused: there is no MPS allocator."""
    _no_mps("getCurrentAllocatedMemory")


def driver_allocated_memory() -> NoReturn:
    """Refused: there is no MPS allocator."""
    _no_mps("getDriverAllocatedMemory")


def recommended_max_memory() -> NoReturn:
    """Refused: there is no MPS device."""
    _no_mps("getRecommendedMaxMemory")


def compile_shader(source: str) -> NoReturn:
    """Refused: Metal shaders need the MPS backend."""
    raise RuntimeError("MPS is not available")


def load_metallib(source: Union[bytes, bytearray, str, "os.PathLike[str]"]) -> NoReturn:
    """Refused (after torch's type check of ``source``): Metal libraries need MPS."""
    if not isinstance(source, (bytes, bytearray, str, os.PathLike)):
        raise TypeError(f"expected bytes or path, got {type(source).__name__}")
    raise RuntimeError("MPS is not available")
