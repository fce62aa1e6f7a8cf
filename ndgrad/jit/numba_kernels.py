"""Element-wise kernels of the numba tier for large arrays, where NumPy needs several passes.

Note [Large relu backward in one pass]
relu's backward on the NumPy tier is three passes (``relu_backward_bits`` in ops/pointwise.py:
a comparison into a byte mask, the mask turned into 0/-1, the gradient's bits and-ed with it
through a sign-extending cast), and on mlp_large's 512x2048 float32 values it takes 0.23-0.28
ms where one pass over the same arrays takes ~0.08 (this machine, one thread, minima). With
``backend="numba"`` the generated code (codegen.py) therefore writes relu's backward into a
dead gradient buffer with ``relu_backward_into``: one loop over both arrays, ``g = 0`` where
``r <= 0``: PyTorch's mask (a NaN result passes the gradient, -0.0 does not), the bits of the
NumPy tier's result (a kept value is the same float, a dropped one is +0.0). It applies when
``g`` and ``r`` have the same dtype (float32/float64), shape and layout (both C- or both
F-contiguous: a transposed group of gemm_layout.py has both F), and at least ``MIN_NUMEL``
elements; else the NumPy form runs. The loop is compiled once per process on first use
(``cache=True``: later processes load it from numba's cache) and holds no GIL.

Example:
    >>> import numpy as np
    >>> from ndgrad.jit.numba_kernels import MIN_NUMEL
    >>> MIN_NUMEL
    65536
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

__all__ = ["relu_backward_into", "MIN_NUMEL"]

MIN_NUMEL = 1 << 16      # below, NumPy's three calls cost about as much as the dispatch
_lock = threading.Lock()
_kernel: Any = None
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _build() -> Any:
    try:
        import numba   # the optional tier: imported only here
    except ImportError:        # installed but broken (numba_backend.vm_unavailable warned)
        return None

    @numba.njit(cache=True, nogil=True, fastmath=False, boundscheck=False)
    def relu_bwd(g, r):  # pragma: no cover - compiled by numba
        for i in range(g.size):
            if r[i] <= 0:
                g[i] = 0
    return relu_bwd


def _flat(a: np.ndarray) -> np.ndarray:
    """A 1-D view of a C- or F-contiguous array in memory order."""
    return a.reshape(-1) if a.flags.c_contiguous else a.T.reshape(-1)


def relu_backward_into(g: np.ndarray, r: np.ndarray) -> bool:
    """Write relu's backward into ``g`` (``g`` where ``not r <= 0``, else 0) in one pass when
    Note [Large relu backward in one pass] applies; return whether it did (else ``g`` is
    untouched and the caller runs the NumPy form)."""
    global _kernel
    if (g.dtype not in _FLOATS or r.dtype != g.dtype or g.shape != r.shape
            or g.size < MIN_NUMEL or not g.flags.writeable):
        return False
    gc, rc = g.flags.c_contiguous, r.flags.c_contiguous
    if not (gc and rc or not gc and not rc and g.flags.f_contiguous and r.flags.f_contiguous):
        return False
    k = _kernel
    if k is None:
        with _lock:
            if _kernel is None:
                _kernel = _build() or _NO_KERNEL
            k = _kernel
    if k is _NO_KERNEL:
        return False
    k(_flat(g), _flat(r))
    return True


def _NO_KERNEL(g: np.ndarray, r: np.ndarray) -> None:   # numba failed to import
    raise AssertionError("unreachable")
