"""Autocast's per-thread state and the casts the ops apply under it (``ndgrad.amp.autocast``).

Note [Autocast]
Inside an enabled CPU autocast region, an op of the *lower precision* list (the matrix
products, linear, the convolutions, prelu, scaled_dot_product_attention) first casts its
floating inputs other than float64 to the region's dtype (bfloat16 by default, or float16);
an op of the *float32* list (the losses, prod, cdist, trace, grid_sample, the linalg
decompositions and solvers, the FFTs) casts its float16/bfloat16 inputs to float32. Every
other op runs on its inputs as they are. The lists are PyTorch's CPU lists, for the ops ndgrad
has. A cast is the ``to`` op (``ToCopyBackward0`` in the graph), so gradients flow back in the
input's own dtype. Casts of leaves that require grad are cached until the outermost region
exits (with ``cache_enabled``; only float32 to the region's dtype, and only under grad mode):
a weight used twice in a region is cast once and both uses share the cast's node, as in
PyTorch.

The ops test the module global ``active`` first (a count of enabled CPU regions in all
threads), so an op outside any region pays one global read; the state itself is per thread.
The entry points are :func:`lower` and :func:`fp32` (which test this thread's state), called
at the top of each op on the lists, ``if _autocast.active: a, b = _autocast.lower(a, b)``,
before its argument checks (casting first is what lets ``float32 @ bfloat16`` run inside a
region); an input that is not a Tensor is passed through for the op's own checks to reject.

Example:
    >>> import ndgrad
    >>> x, w = ndgrad.ones(2, 3), ndgrad.ones(3, 4)
    >>> with ndgrad.autocast("cpu"):
    ...     (x @ w).dtype, ndgrad.nn.functional.mse_loss(x @ w, ndgrad.zeros(2, 4)).dtype
    (ndgrad.bfloat16, ndgrad.float32)
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import numpy as np

from .. import _dtype
from ..autograd import grad_mode as _grad_mode
from ..tensor import Tensor
from .pointwise import to

__all__: list = []

# Enabled CPU autocast regions across all threads (Note [Autocast]): the ops' fast test.
active = 0
_count_lock = threading.Lock()


class _State(threading.local):
    def __init__(self) -> None:
        self.enabled = {"cpu": False, "cuda": False}
        self.dtype = {"cpu": _dtype.bfloat16, "cuda": _dtype.float16}
        self.cache_enabled = True
        self.depth = 0          # nested autocast regions of this thread (any device)
        self.cache: dict = {}   # (id(leaf), dtype) -> (leaf, its cast)


state = _State()


def count(delta: int) -> None:
    """Adjust ``active`` when a thread's CPU autocast turns on (+1) or off (-1)."""
    global active
    with _count_lock:
        active += delta


_F32 = np.dtype(np.float32)
_ELIGIBLE = frozenset((np.dtype(np.float32), np.dtype(np.float16), _dtype.bfloat16.np))
_HALVES = _dtype.HALF_NP


def _cast(x: Any, target: _dtype.dtype, eligible: frozenset) -> Any:
    if not isinstance(x, Tensor):
        return x
    dt = x._data.dtype
    if dt not in eligible or dt == target.np:
        return x
    # PyTorch caches only float32 -> lower precision casts of leaves that require grad; a cast
    # made without grad mode has no history and is not kept for later uses in the region
    if not (state.cache_enabled and x.requires_grad and x.grad_fn is None
            and dt == _F32 and target.np != _F32 and _grad_mode.is_grad_enabled()):
        return to(x, target)
    key = (id(x), target)
    hit = state.cache.get(key)
    if hit is not None and hit[0] is x:
        return hit[1]
    cast = to(x, target)
    state.cache[key] = (x, cast)
    return cast


def lower(*xs: Any) -> tuple:
    """``xs`` with each float32/float16/bfloat16 Tensor cast to the region's CPU dtype (the
    lower precision list's policy) when this thread's CPU autocast is on; other values, or all
    when it is off, as they are."""
    if not state.enabled["cpu"]:
        return xs
    target = state.dtype["cpu"]
    return tuple(_cast(x, target, _ELIGIBLE) for x in xs)


def fp32(*xs: Any) -> tuple:
    """``xs`` with each float16/bfloat16 Tensor cast to float32 (the float32 list's policy) when
    this thread's CPU autocast is on."""
    if not state.enabled["cpu"]:
        return xs
    return tuple(_cast(x, _dtype.float32, _HALVES) for x in xs)


def clear_cache() -> None:
    """Forget this thread's cached casts."""
    state.cache.clear()


def fp32_op(fn: Any) -> Any:
    """``fn`` with its Tensor arguments passed through :func:`fp32` inside a CPU autocast region
    (for the float32 list's functions that are assembled into namespaces: ``ndgrad.linalg``,
    ``ndgrad.fft`` and the top-level decompositions)."""
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        if active and state.enabled["cpu"]:
            args = fp32(*args)
            kwargs = {k: fp32(v)[0] for k, v in kwargs.items()}
        return fn(*args, **kwargs)
    return run


# PyTorch's CPU float32 list among the functions of ndgrad.linalg, ndgrad.fft and the top level
# that no op body hooks itself (Note [Autocast]).
FP32_LINALG = ("cond", "matrix_rank", "solve", "cholesky", "svdvals", "eigvals", "eigvalsh",
               "inv", "householder_product", "tensorinv", "tensorsolve", "qr", "svd", "eig",
               "eigh", "lstsq", "inv_ex", "cholesky_ex")
FP32_TOP = ("inverse", "cholesky", "cholesky_solve", "cholesky_inverse", "lu_solve", "ormqr",
            "pinverse", "geqrf", "qr", "svd", "triangular_solve", "quantile", "nanquantile",
            "stft")
