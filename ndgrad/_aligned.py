"""Large arrays at cache-line-aligned addresses (Note [Aligned arrays]).

Note [Aligned arrays]
glibc's ``malloc`` returns 16-byte aligned blocks, and with the mmap threshold raised (Note
[Kernel workspace] in ops/_workspace.py) every large NumPy array lives on the heap at an
arbitrary multiple of 16 bytes modulo 64. OpenBLAS's sgemm reads its operands' rows with
64-byte vector loads while packing them and reads and writes the result's tiles the same way:
at an offset of 16, 32 or 48 bytes every such access spans two cache lines. Measured on this
machine (``/tmp`` A/B in session 24: the four distinct products of mlp_large, operands and
result allocated by hand, interleaved configurations, CPU time of one BLAS thread, 28 rounds):
64-byte aligned 54.4 ms (median), page-aligned 54.5, 2048 bytes past a page 54.5, 16 bytes
past 64 56.2, 32 past 64 55.9: 3-4% for the GEMMs, and nothing more for coarser alignment
(4 KiB or 2 MiB). So arrays of at least ``MIN_BYTES`` that ndgrad creates for large results
(tensor copies, products, relu and its backward, the compiled step's buffers) come from
``empty``: a block of ``ALIGN - 1`` spare bytes is allocated as an ``AlignedBlock`` (a private
uint8 ndarray subclass) and the array is an exact ndarray placed in it at the first 64-byte
boundary; below ``MIN_BYTES`` it is ``np.empty`` (the ~1.5 us of finding the address would
be a cost for small arrays, and their accesses are few).

Invariants, for every reader of ``.base``:

* an aligned array is the owner of its memory for everything but NumPy: its ``.base`` is its
  block, which nothing else references (``sole_block``); views of it have the array itself as
  ``.base`` (NumPy does not collapse a chain of bases through a subclass), so the storage root
  (``tensor._storage_root``, serialization's ``_root``) stops at it: ``storage_offset()`` is 0,
  the storage is its own bytes, ``torch.save`` writes no padding;
* code that writes into an array only when nothing else can see it (relu in place, the
  engine's in-place sums, raw backward rules' ``out=``) accepts ``base is None`` or a sole
  block (``owns_memory``), so an aligned result keeps those paths;
* padding is at most 63 bytes per array, but a block of ``n + 63`` bytes no longer fits the
  ``n``-byte hole a freed NumPy array of the same shape left in the heap, so the heap grows
  instead: with ``MIN_BYTES`` at 1 MiB the ``memory`` workload's peak rose from 80 to 85 MiB
  over its baseline (minimum 100) and the compiled step's to 87, above eager's (issue 11's
  bound). ``MIN_BYTES`` is therefore 2 MiB, which leaves that workload's 1 MiB activations
  alone (82 eager, 81 compiled, lead's quiet runs) and still covers every array of mlp_large
  (2 MiB and more).

Huge pages (measured, not used). THP is ``madvise`` here and NumPy already madvises its blocks
of 4 MiB or more, so only the 2 MiB-aligned ranges inside a block are huge. Placing blocks of
2 (or 4) MiB and more at 2 MiB boundaries (up to 2 MiB of untouched padding each) cut the
first mlp_large step's minor faults in a fresh process from ~5760 to ~4400 (~3300), eager and
compiled (~1000 of them are OpenBLAS's own buffers), but its CPU time did not drop: the
first step's excess over a steady one was 11-13 ms (median of 4 fresh processes) without
and 57-104 ms with (load average 6-7; a huge page fault zeroes 2 MiB, and ``defrag`` is
``madvise``, so it may compact memory first). Alone, 12 fresh 2 MiB-aligned blocks of 2 MiB
took 10.1-10.3 ms of CPU time to touch in 4 KiB pages (~6000 faults) and 44-61 ms as huge
pages (12-430 faults), three processes each. The same holds for NumPy's own madvise: with
``np._core.multiarray._set_madvise_hugepage(False)`` the first eager mlp_large step took
13800 faults instead of 5760-7700 and 271-296 ms of process CPU time instead of 314-358
(steady steps ~260-300 either way; 2 BLAS threads, load average 9-12, four fresh processes
each; the compiled tier's first call 252-309 against 270-374). Not changed here: it is a
process-wide NumPy setting, and how much a huge page costs depends on how fragmented free
memory is (on a quiet machine the first step's faults cost ~21 ms in all).

Example:
    >>> import numpy as np
    >>> a = empty((512, 1024), np.float32)
    >>> a.ctypes.data % ALIGN, type(a) is np.ndarray, owns_memory(a)
    (0, True, True)
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from . import _meta
from ._refcounts import SOLE_REFERENCE_TESTS

__all__ = ["ALIGN", "MIN_BYTES", "AlignedBlock", "binary", "copy", "empty", "owns_memory"]

ALIGN = 64
MIN_BYTES = 2 << 20


class AlignedBlock(np.ndarray):
    """The uint8 memory under an aligned array (Note [Aligned arrays]); never handed out."""


_U8 = np.dtype(np.uint8)
_ndarray = np.ndarray
_new = np.ndarray.__new__
_getrefcount = sys.getrefcount
# the block's holders when nothing else has it: the array's ``base``, a local name and
# getrefcount's argument; below any count when the counts are not the verified ones (Note
# [Sole-reference tests] in _refcounts.py): an aligned array then never counts as an owner
_BLOCK_REFS = 3 if SOLE_REFERENCE_TESTS else -8


def empty(shape: tuple, dtype: Any) -> np.ndarray:
    """An uninitialized C-contiguous array; at a 64-byte boundary when it has at least
    ``MIN_BYTES`` (Note [Aligned arrays]).

    >>> empty((2, 3), np.float64).shape
    (2, 3)
    """
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < MIN_BYTES or dtype.hasobject:
        return np.empty(shape, dtype)
    if _meta.FORWARDS[0] and _meta.in_forward():     # an op's output on meta inputs
        return _meta.empty(shape, dtype)
    blk = _new(AlignedBlock, (nbytes + ALIGN - 1,), _U8)
    off = -blk.__array_interface__["data"][0] & (ALIGN - 1)
    return _ndarray(shape, dtype, blk, off)


def copy(a: np.ndarray) -> np.ndarray:
    """``np.array(a, copy=True)`` (order ``K``): a C- or F-contiguous copy of a large array
    at a 64-byte boundary (Note [Aligned arrays]).

    >>> b = copy(np.ones((1024, 512), np.float32).T)
    >>> b.flags.f_contiguous, b.ctypes.data % ALIGN, float(b.sum())
    (True, 0, 524288.0)
    """
    if a.nbytes < MIN_BYTES or a.dtype.hasobject:
        return np.array(a, copy=True)
    if a.flags.c_contiguous:
        out = empty(a.shape, a.dtype)
        np.copyto(out, a)
        return out
    if a.flags.f_contiguous:
        t = a.T
        out = empty(t.shape, a.dtype)
        np.copyto(out, t)
        return out.T
    return np.array(a, copy=True)


_BINARY_DTYPES = frozenset((np.dtype(np.float32), np.dtype(np.float64)))


def binary(ufunc: np.ufunc, a: Any, b: Any) -> Any:
    """``ufunc(a, b)``, into an aligned result when ``a`` is a large C-contiguous float32 or
    float64 array and ``b`` an array of its dtype and shape, C-contiguous or one broadcast
    value: then NumPy's own result would be C-contiguous of that dtype, so only the address
    differs (Note [Aligned arrays]).

    >>> x = np.ones((512, 1024), np.float32)
    >>> r = binary(np.subtract, x, x)
    >>> r.ctypes.data % ALIGN, r.dtype == x.dtype, float(r.sum())
    (0, True, 0.0)
    """
    if (a.__class__ is _ndarray and b.__class__ is _ndarray and a.nbytes >= MIN_BYTES
            and a.dtype is b.dtype and a.dtype in _BINARY_DTYPES and a.shape == b.shape
            and a.flags.c_contiguous and (b.flags.c_contiguous or not any(b.strides))):
        return ufunc(a, b, out=empty(a.shape, a.dtype))
    return ufunc(a, b)


def owns_memory(a: np.ndarray) -> bool:
    """Whether ``a`` owns its memory as far as ndgrad is concerned: no base, or an aligned
    array's block that nothing else holds (Note [Aligned arrays]).

    >>> x = np.zeros(3)
    >>> owns_memory(x), owns_memory(x[1:])
    (True, False)
    """
    b = a.base
    return b is None or (b.__class__ is AlignedBlock and _getrefcount(b) <= _BLOCK_REFS)
