"""Reusable scratch arrays for kernels whose temporaries are large (im2col columns, padded copies).

Note [Kernel workspace]
A convolution step allocates megabytes of temporaries (im2col columns, the GEMM's columns
before col2im, padded and widened copies) and frees them at once. glibc serves such blocks from
fresh pages (``mmap``, or heap growth that a later ``free`` trims again), and each first touch
of a page is a page fault: on the shared 2-core test machine the cnn workload of the shared
bench took ~1400 faults and more system time than compute per step. A kernel therefore asks
``scratch(slot, shape, dtype)`` for a temporary that never leaves it: one array per (thread,
slot) is kept and reused while it is large enough, so a training loop touches the same pages
every step. Rules for callers:

* a scratch array is dead when the kernel returns: never return it, a view of it, or an array
  that may alias it (``np.ascontiguousarray`` of an already contiguous view returns the view:
  copy explicitly);
* a kernel uses distinct slots for temporaries that are alive at the same time, and does not
  call another kernel that uses the same slot while it holds one;
* blocks above ``_MAX_BYTES`` are not kept (a large model pays the allocation, which is small
  next to its compute), so a thread keeps at most ``_MAX_BYTES`` per slot.

The results of ops are fresh arrays (they become tensors) and still churn: a step of the cnn
workload allocates and frees ~4 MB of them. With glibc's default (dynamic) thresholds, blocks
above 128 KiB are mmapped until a free raises the threshold, and the heap top is trimmed past
twice that, so the same pages are returned and faulted in again every step (~570 faults per
cnn step after the scratch arrays; under load the step took 2-7x longer than with no faults).
Importing this module therefore sets glibc's ``M_MMAP_THRESHOLD`` to 32 MiB (the largest
value glibc accepts on 64-bit) and ``M_TRIM_THRESHOLD`` to 64 MiB (``mallopt``; glibc only,
nothing elsewhere): blocks below 32 MiB come from the heap, and up to 64 MiB of free heap top
is kept for the next step instead of being returned. (At 16 MiB, mlp_large's 2048x2048
float32 weight gradient, 16 MiB and a header, was still mmapped: ~270 page faults and 2-4 ms
of system time per step, as transparent huge pages are zeroed; none at 32 MiB.) The cost is
that much resident memory after a peak. Setting the environment variable
``NDGRAD_MALLOC_TUNING=0`` before the import leaves malloc alone.

Example:
    >>> import numpy as np
    >>> a = scratch("doc", (2, 3), np.float32)
    >>> a.shape, a.dtype == np.float32, scratch("doc", (3, 2), np.float32).base is a.base
    ((2, 3), True, True)
"""

from __future__ import annotations

import ctypes
import math
import os
import sys
import threading
from typing import Any

import numpy as np

from .. import _meta

__all__ = ["scratch", "zeros_kept", "zeros_operand"]

_MAX_BYTES = 32 << 20
_local = threading.local()


def scratch(slot: str, shape: tuple, dtype: np.dtype, zero: bool = False) -> np.ndarray:
    """An uninitialized (``zero``: zeroed) C-contiguous array of ``shape`` and ``dtype`` that
    lives until the next ``scratch`` call for ``slot`` on this thread (Note [Kernel
    workspace])."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > _MAX_BYTES or dtype.hasobject:
        if _meta.FORWARDS[0] and _meta.in_forward():   # Note [Meta forwards] in _meta.py
            return _meta.empty(shape, dtype)
        return np.zeros(shape, dtype) if zero else np.empty(shape, dtype)
    bufs = getattr(_local, "bufs", None)
    if bufs is None:
        bufs = _local.bufs = {}
    buf = bufs.get(slot)
    if buf is None or buf.nbytes < nbytes:
        buf = bufs[slot] = np.empty(max(nbytes, 4096), np.uint8)
    out = buf[:nbytes].view(dtype).reshape(shape)
    if zero:
        out.fill(0)
    return out


def zeros_kept(slot: str, out: np.ndarray, layout: Any) -> bool:
    """Whether ``out``, just returned by ``scratch(slot, ...)``, is the memory of the last call
    that asked with the same ``layout`` on this thread, so that zeros the caller wrote then
    are still there; records this call. Valid only for a slot whose caller, for one layout,
    writes the same parts every call and zeroes the rest when this returns False.

    >>> a = scratch("doc2", (4,), np.float32)
    >>> zeros_kept("doc2", a, "x"), zeros_kept("doc2", scratch("doc2", (4,), np.float32), "x")
    (False, True)
    """
    buf = getattr(_local, "bufs", {}).get(slot)
    if buf is None or out.base is not buf:
        return False
    rec = getattr(_local, "zeroed", None)
    if rec is None:
        rec = _local.zeroed = {}
    prev = rec.get(slot)
    rec[slot] = (buf, layout)
    return prev is not None and prev[0] is buf and prev[1] == layout


# Note [Zero operands]
# NumPy 2.4's ``np.maximum(x, 0)`` on float32 takes a broadcast-scalar loop that is several
# times slower than the loop for two contiguous arrays: on this machine 258 against 30 us for
# 1.2M floats, 1.8 against 0.3 us for 16 (float64 141 against 62 us), with bitwise equal
# results (NaN, -0.0, denormals). relu therefore compares with an array of zeros:
# ``zeros_operand`` returns a read-only view of a private anonymous ``mmap`` that nothing ever
# writes, so every page of it maps the kernel's shared zero page: it costs no memory and its
# reads hit the cache, whatever its length. Shapes seen before come from a small dict.
_ZERO_MAPS: dict = {}
_ZERO_SHAPES: dict = {}
_ZERO_SHAPES_MAX = 256


def zeros_operand(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """A read-only C-contiguous array of zeros of ``shape`` and ``dtype`` (Note [Zero
    operands]); shared by every caller, never to be written or returned.

    >>> z = zeros_operand((2, 3), np.dtype(np.float32))
    >>> z.sum(), z.flags.writeable, zeros_operand((2, 3), np.dtype(np.float32)) is z
    (np.float32(0.0), False, True)
    """
    key = (shape, dtype)
    z = _ZERO_SHAPES.get(key)
    if z is not None:
        return z
    n = math.prod(shape)
    flat = _ZERO_MAPS.get(dtype)
    if flat is None or flat.size < n:
        import mmap
        nbytes = max(n * dtype.itemsize, 1 << 16)
        m = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                      prot=mmap.PROT_READ)
        flat = _ZERO_MAPS[dtype] = np.frombuffer(m, dtype=dtype,
                                                 count=nbytes // dtype.itemsize)
    z = flat[:n].reshape(shape)
    if len(_ZERO_SHAPES) < _ZERO_SHAPES_MAX:
        _ZERO_SHAPES[key] = z
    return z


_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def _tune_malloc() -> bool:
    """Set glibc's mmap and trim thresholds (Note [Kernel workspace]); True if done."""
    if os.environ.get("NDGRAD_MALLOC_TUNING", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        if not hasattr(libc, "gnu_get_libc_version"):
            return False
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, 32 << 20)) and bool(
        mallopt(_M_TRIM_THRESHOLD, 64 << 20))


MALLOC_TUNED = _tune_malloc()
