"""Elementwise maximum and minimum that return their first operand on ties.

Note [Signed zeros in max and min]
PyTorch's relu, hardtanh, elu and clamp with Python-number bounds return the input where it
equals the bound: ``relu(-0.0)`` and ``clamp(-0.0, min=0.0)`` are ``-0.0``. (Between two tensors,
``maximum``, ``minimum`` and ``clamp`` with tensor bounds return the second operand on ties in
PyTorch's vectorized loops and the first in their scalar tails, so those keep NumPy's loops,
which agree with the vectorized body.) NumPy leaves the choice to its loops: the float32, float64
and bfloat16 ones return the second operand on ties (the SIMD max instructions), float16's
the first. ``maximum(x, other)`` here calls ``np.maximum`` with the operands in the order that
keeps ``x`` for the dtype (probed once per dtype on contiguous, strided and broadcast operands
of several lengths, so the vector body and the scalar tail agree); a dtype whose loops disagree
gets a second pass that writes ``x`` back where it equals the result. NaN propagates either way.
Same speed as the plain call: the order of two arrays costs nothing, and a scalar that would go
first (NumPy's loop for it is ~1.5x slower on contiguous data) goes second when it is nonzero
(then no tie between zeros can happen) or becomes the shared array of zeros when it is +0.0.

Example:
    >>> import numpy as np
    >>> from ndgrad.ops._ties import maximum
    >>> np.signbit(maximum(np.array([-0.0, 0.0]), np.array([0.0, -0.0])))
    array([ True, False])
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
from ml_dtypes import bfloat16

from ._workspace import zeros_operand

__all__ = ["maximum", "minimum", "relu"]

# (ufunc, dtype) -> True: the ufunc returns its second operand on ties; False: its first;
# None: it depends on the shapes (fixed up afterwards).
_SECOND: dict = {}
_LENGTHS = (1, 2, 3, 7, 8, 9, 16, 17, 31, 33, 64, 67, 130, 1025)


def _probe(uf: Any, dt: np.dtype) -> Optional[bool]:
    seen = set()
    z = np.zeros((), dt)
    for n in _LENGTHS:
        neg = np.full(n, -0.0, dt)
        pos = np.zeros(n, dt)
        for a, b in ((neg, pos), (pos, neg), (neg[::2], pos[::2]), (neg, pos[:1]), (neg, z),
                     (z, neg)):
            r = uf(a, b)
            sa = np.broadcast_to(np.signbit(a), r.shape)
            sr = np.signbit(r)
            seen.add(bool((sr == sa).all()) and "first" or
                     bool((sr == np.broadcast_to(np.signbit(b), r.shape)).all()) and "second"
                     or "mixed")
    if seen == {"first"}:
        return False
    if seen == {"second"}:
        return True
    return None


def _order(uf: Any, dt: np.dtype) -> Optional[bool]:
    key = (uf, dt)
    try:
        return _SECOND[key]
    except KeyError:
        pass
    v = _probe(uf, dt) if dt.kind == "f" or dt.name == "bfloat16" else False
    _SECOND[key] = v
    return v


def _call(uf: Any, x: np.ndarray, other: Any, out: Optional[np.ndarray]) -> Any:
    t = type(other)
    if t is float or t is int or t is bool:
        dt = x.dtype
        scalar = True
    else:
        dt = x.dtype if getattr(other, "dtype", None) == x.dtype else np.result_type(x, other)
        scalar = t is not np.ndarray or not other.ndim
    second = _order(uf, dt)
    if second:
        if scalar and x.dtype == dt and x.ndim and x.flags.c_contiguous:
            # NumPy's loop for a scalar first operand is ~1.5x slower on contiguous data: a
            # nonzero scalar cannot tie with a signed zero (the order does not matter), zero
            # becomes a shared array of zeros (Note [Zero operands] in _workspace.py)
            if other != 0:
                return uf(x, other) if out is None else uf(x, other, out=out)
            if not np.signbit(other):
                other = zeros_operand(x.shape, dt)
        return uf(other, x) if out is None else uf(other, x, out=out)
    if second is False:
        return uf(x, other) if out is None else uf(x, other, out=out)
    r = uf(x, other) if out is None else uf(x, other, out=out)
    if out is x:
        return r
    np.copyto(r, x, where=np.asarray(r == x), casting="unsafe")
    return r


def relu(x: np.ndarray, zero: Any, out: Optional[np.ndarray] = None) -> np.ndarray:
    """``np.maximum(x, zero)`` (``zero``: 0 or an array of zeros) returning ``x`` on ties:
    relu's forward, without the general checks."""
    s = RELU_SECOND.get(x.dtype, False)
    if s:
        return np.maximum(zero, x) if out is None else np.maximum(zero, x, out=out)
    if s is False:
        return np.maximum(x, zero) if out is None else np.maximum(x, zero, out=out)
    return _call(np.maximum, x, zero, out)


def maximum(x: np.ndarray, other: Any, out: Optional[np.ndarray] = None) -> Any:
    """``np.maximum(x, other)`` returning ``x`` on ties (Note [Signed zeros in max and min])."""
    return _call(np.maximum, x, other, out)


def minimum(x: np.ndarray, other: Any, out: Optional[np.ndarray] = None) -> Any:
    """``np.minimum(x, other)`` returning ``x`` on ties (Note [Signed zeros in max and min])."""
    return _call(np.minimum, x, other, out)


# relu's dtypes, probed at import (ops/pointwise.py reads it)
RELU_SECOND = {np.dtype(d): _order(np.maximum, np.dtype(d))
                for d in (np.float16, np.float32, np.float64, bfloat16)}
