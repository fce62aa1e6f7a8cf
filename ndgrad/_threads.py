"""``set_num_threads`` / ``get_num_threads``: the CPU thread count, as in torch.

ndgrad's only multi-threaded kernels are BLAS calls through NumPy, so the count is NumPy's
bundled OpenBLAS thread count (found by ``ndgrad.jit.blas_threads``); with another BLAS the
count is remembered and reported but changes nothing.

Example:
    >>> import ndgrad
    >>> n = ndgrad.get_num_threads()
    >>> ndgrad.set_num_threads(1)
    >>> ndgrad.get_num_threads()
    1
    >>> ndgrad.set_num_threads(n)
"""

from __future__ import annotations

import os
from typing import Any, Optional

__all__ = ["set_num_threads", "get_num_threads"]

_count: Optional[int] = None


def _blas() -> Optional[tuple]:
    # local import: loading the jit package is deferred until threads are asked about
    from .jit import blas_threads
    return blas_threads._find()


def get_num_threads() -> int:
    """The number of threads used for parallel CPU work (BLAS)."""
    f = _blas()
    if f is not None:
        return int(f[0]())
    return _count if _count is not None else (os.cpu_count() or 1)


def set_num_threads(int: Any) -> None:  # noqa: A002  (torch's parameter name)
    """Set the number of threads used for parallel CPU work (BLAS)."""
    global _count
    if isinstance(int, bool) or not hasattr(int, "__index__"):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(int).__name__}")
    n = int.__index__()
    if n <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    _count = n
    f = _blas()
    if f is not None:
        f[1](n)


_interop = [os.cpu_count() or 1]


def get_num_interop_threads() -> int:
    """The number of threads for inter-op parallelism (ndgrad runs ops one after another; the
    value is kept for programs that set and read it)."""
    return _interop[0]


def set_num_interop_threads(int: Any) -> None:  # noqa: A002  (torch's parameter name)
    """Record the number of inter-op threads (see :func:`get_num_interop_threads`)."""
    if isinstance(int, bool) or not hasattr(int, "__index__"):
        raise RuntimeError(f"set_num_interop_threads expects an int, but got "
                           f"{type(int).__name__}")
    if int.__index__() <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    _interop[0] = int.__index__()
