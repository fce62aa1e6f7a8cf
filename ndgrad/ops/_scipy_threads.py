"""Small LAPACK calls through SciPy run on one thread of SciPy's own OpenBLAS.

Note [Single-threaded small SciPy LAPACK calls]
SciPy wheels bundle their own OpenBLAS (``scipy.libs/libscipy_openblas*``), separate from
NumPy's, with its own thread pool (``ndgrad.set_num_threads`` and the jit's
Note [Single-threaded small GEMMs] only reach NumPy's). Its triangular solves (``trtrs``)
hand even a 2x2 system to every pool thread, and each call then waits for the pool to be
scheduled: on a machine whose two cores are busy with other processes a Kalman filter's
per-step ``solve_triangular`` of a 1x1 factor took ~350 µs against ~6 µs on one thread, and
the whole filter with its backward ran 10x slower than on one thread. The LAPACK calls of
``linalg_solve.py`` whose work is small (``small(work)``: at most ``MAX_WORK`` multiply-adds)
therefore run inside ``one_thread()``, which lowers SciPy's count to one and restores it
after (a process-wide count of active calls under a lock, as the jit's). With another SciPy
build (no bundled OpenBLAS) nothing changes. Results are the same: one thread runs the same
kernels on the same blocks.

Example:
    >>> from ndgrad.ops._scipy_threads import one_thread
    >>> with one_thread():
    ...     pass
"""

from __future__ import annotations

import ctypes
import glob
import os
import threading
from typing import Any, Callable, Optional

__all__ = ["one_thread", "OneThread", "locate", "small", "MAX_WORK"]

MAX_WORK = 1 << 21          # a 128x128x128 product
_lock = threading.Lock()
_depth = [0, 1]             # [active calls, the thread count to restore]
_funcs: Optional[tuple] = None
_searched = False


def locate(libs: str, get: str, put: str, loader: Callable = ctypes.CDLL) -> Optional[tuple]:
    """``(get, set)`` of the thread count of the OpenBLAS bundled in the wheel directory
    ``libs`` (``scipy.libs``, ``numpy.libs``), by its exported names, or None."""
    for path in sorted(glob.glob(os.path.join(libs, "*openblas*"))):
        try:
            lib = loader(path)
            g, p = getattr(lib, get), getattr(lib, put)
        except (OSError, AttributeError):
            continue
        g.restype = ctypes.c_int
        # no argtypes: a Python int goes as a C int by default (half the call's cost)
        p.restype = None
        return g, p
    return None


def _find() -> Optional[tuple]:
    global _funcs, _searched
    if not _searched:
        _searched = True
        try:
            import scipy
        except ImportError:
            return None
        _funcs = locate(os.path.join(os.path.dirname(os.path.dirname(scipy.__file__)),
                                     "scipy.libs"),
                        "scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads")
    return _funcs


def small(work: int) -> bool:
    """Whether a LAPACK call of about ``work`` multiply-adds is small enough for one thread."""
    return work <= MAX_WORK


class OneThread:
    """Context manager: a bundled OpenBLAS (found by ``find``: ``(get, set)`` of its thread
    count, or None for another BLAS) runs on one thread inside; a process-wide count of active
    users (``depth``: [active, count to restore], under ``lock``) restores the count once.
    Calling the instance returns it, so ``with one_thread():`` reads as a class would. Used
    for SciPy's OpenBLAS here and NumPy's in ``jit/blas_threads.py``."""

    __slots__ = ("_find", "_lock", "_depth")

    def __init__(self, find: Callable[[], Optional[tuple]], lock: Any, depth: list) -> None:
        self._find, self._lock, self._depth = find, lock, depth

    def __call__(self) -> "OneThread":
        return self

    def __enter__(self) -> None:
        f = self._find()
        if f is None:
            return
        depth = self._depth
        with self._lock:
            if depth[0] == 0:
                depth[1] = f[0]()
                if depth[1] != 1:
                    f[1](1)
            depth[0] += 1

    def __exit__(self, *exc: Any) -> None:
        f = self._find()
        if f is None:
            return
        depth = self._depth
        with self._lock:
            depth[0] -= 1
            if depth[0] == 0 and depth[1] != 1:
                f[1](depth[1])


# SciPy's OpenBLAS on one thread (Note [Single-threaded small SciPy LAPACK calls])
one_thread = OneThread(_find, _lock, _depth)
