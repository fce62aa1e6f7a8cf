"""Small generated functions run their matrix products on one BLAS thread.

Note [Single-threaded small GEMMs]
A matrix product of a few hundred thousand multiply-adds takes microseconds on one core, but
OpenBLAS splits it over its thread pool, and every call then waits for all pool threads to be
scheduled: on a machine whose cores are busy with other processes that wait is a scheduler
time slice, and a 30 µs training step was measured at 60-200 ms (2 BLAS threads, load 11 on
2 cores) against 80 µs on one thread. XLA runs such products single-threaded. A generated
function whose products are all small (at most ``MAX_MACS`` multiply-adds each) therefore
sets NumPy's bundled OpenBLAS to one thread for its duration and restores the previous count
after (a process-wide count of active calls, under a lock, so concurrent calls restore it
once). With another BLAS (no ``scipy_openblas`` library next to NumPy) nothing changes.
Large products (mlp_large) keep the whole pool.

Example:
    >>> from ndgrad.jit.blas_threads import single_blas_thread
    >>> with single_blas_thread():
    ...     pass
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from typing import Any, Callable, Optional

import numpy as np

from ..ops._scipy_threads import OneThread, locate

__all__ = ["single_blas_thread", "run_single_threaded", "MAX_MACS", "available",
           "column_major_first_is_faster"]

MAX_MACS = 1 << 21         # a 128x128x128 product
_lock = threading.Lock()
_depth = [0, 1]        # [active calls, the thread count to restore]
_funcs: Optional[tuple] = None
_searched = False


def _find() -> Optional[tuple]:
    global _funcs, _searched
    if not _searched:
        _searched = True
        # PyDLL: the two calls only read or write a count (no callbacks, no waiting on BLAS
        # threads when lowering it), so they keep the GIL: ~0.05 µs less per call than CDLL's
        # release and reacquire
        _funcs = locate(os.path.join(os.path.dirname(os.path.dirname(np.__file__)),
                                     "numpy.libs"),
                        "scipy_openblas_get_num_threads64_",
                        "scipy_openblas_set_num_threads64_", ctypes.PyDLL)
    return _funcs


def available() -> bool:
    """Whether NumPy's BLAS thread count can be set (NumPy's bundled OpenBLAS)."""
    return _find() is not None


def run_single_threaded(fn: Callable, args: Any) -> Any:
    """``fn(*args)`` with NumPy's BLAS on one thread (the previous count restored after); the
    lean form of ``single_blas_thread`` that generated functions call on every run."""
    f = _funcs
    if f is None:
        f = None if _searched else _find()
        if f is None:
            return fn(*args)
    # the same steps as single_blas_thread, without its frames (two per generated call)
    # (acquire/release in try/finally: ~0.1 µs less than a with block each, on 3.11)
    depth = _depth
    lock = _lock
    lock.acquire()
    try:
        if depth[0]:
            depth[0] += 1
        else:
            prev = depth[1] = f[0]()
            if prev != 1:
                f[1](1)
            depth[0] = 1
    finally:
        lock.release()
    try:
        return fn(*args)
    finally:
        lock.acquire()
        try:
            if depth[0] == 1:
                depth[0] = 0
                if depth[1] != 1:
                    f[1](depth[1])
            else:
                depth[0] -= 1
        finally:
            lock.release()


# Context manager: NumPy's BLAS uses one thread inside (Note [Single-threaded small GEMMs]);
# a no-op when the BLAS is not NumPy's bundled OpenBLAS. ``run_single_threaded`` is its lean
# form for generated functions, on the same count.
single_blas_thread = OneThread(_find, _lock, _depth)


# Note [Small products with a transposed second operand]
# A layer's input gradient in a generated backward is ``g @ t(W)``: with W row-major, the
# second operand is column-major and OpenBLAS runs its NT kernel, which for some small shapes
# is far slower than the TT form with ``g`` copied to column-major first (float32 32x128 by
# 128x128, one thread: 11.7 µs against 6.3 with the copy; mlp_small's backward has one), and
# for others faster (64x128 by 128x128: 15.7 against 18.3). No rule of shape predicts it on
# every CPU and OpenBLAS build, so the generated code asks ``column_major_first_is_faster``
# once per shape and dtype (seven single-threaded runs of each form, ~0.2 ms for a
# 32x128x128 float32 product, cached for the process; products under 2^16 multiply-adds are
# not measured) and emits ``np.matmul(np.asfortranarray(g), Wt)``
# where the TT form is clearly (15%) faster. The result is a new row-major array either way;
# the products are the same dot products, which OpenBLAS may round differently in the last
# bits by form, as NumPy's own choice of kernel can (Note [Transposed products in generated
# code] in gemm_layout.py).
_tt_choice: dict = {}
_TT_MIN_MACS = 1 << 16


def column_major_first_is_faster(m: int, k: int, n: int, dtype: Any) -> bool:
    """Whether ``np.asfortranarray(a) @ b.T`` (a ``m x k``, b ``n x k`` row-major) runs
    clearly faster than ``a @ b.T`` on one BLAS thread here (Note [Small products with a
    transposed second operand]); measured once per shape and dtype."""
    if m * k * n < _TT_MIN_MACS:
        return False            # a microsecond either way: not worth measuring
    key = (m, k, n, np.dtype(dtype))
    r = _tt_choice.get(key)
    if r is None:
        r = _tt_choice[key] = _measure_tt(m, k, n, np.dtype(dtype))
    return r


def _measure_tt(m: int, k: int, n: int, dtype: np.dtype) -> bool:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(dtype)
    bt = rng.standard_normal((n, k)).astype(dtype).T
    mm, asf, clock = np.matmul, np.asfortranarray, time.thread_time
    best = [float("inf"), float("inf")]
    with single_blas_thread():
        mm(a, bt)
        mm(asf(a), bt)
        for _ in range(3):          # alternating rounds, the best of each (CPU time: the
            for j in (0, 1):        # machine's load does not count)
                t0 = clock()
                for _ in range(2):
                    mm(a, bt) if j == 0 else mm(asf(a), bt)
                best[j] = min(best[j], clock() - t0)
    return best[1] < 0.85 * best[0]
