"""Helpers shared by the op modules: argument conversion and dtype promotion."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import _dtype
from .._creation import tensor as _new_tensor
from ..tensor import Tensor, _wrap, _wrap_dim

_SCALAR_TYPES = (int, float, bool, complex)
_CAT = {d.np: d._category for d in _dtype._ALL}


def category(arr: np.ndarray) -> int:
    return _CAT[arr.dtype]


def is_scalar(x: Any) -> bool:
    return type(x) in _SCALAR_TYPES or isinstance(x, (np.number, np.bool_))


def as_scalar(x: Any) -> Any:
    return x.item() if isinstance(x, np.generic) else x


def to_tensor(x: Any) -> Tensor:
    """Turn an operand (Tensor, ndarray, nested list, number) into a Tensor."""
    if isinstance(x, Tensor):
        return x
    return _new_tensor(x)


def check_tensor(x: Any, fn: str, arg: str = "input", pos: int = 1) -> Tensor:
    """``x`` if it is a Tensor, else PyTorch's argument TypeError."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{type_name(x)}")
    return x


def type_name(x: Any) -> str:
    """The type of ``x`` as PyTorch's messages name it (``int``, ``numpy.ndarray`` ...)."""
    t = type(x)
    mod = t.__module__.split(".")[0]
    return f"{mod}.{t.__name__}" if mod == "numpy" else t.__name__


def promote_pair(a: Tensor, b: Tensor) -> tuple:
    """Arrays of ``a`` and ``b`` cast to their PyTorch result type."""
    ad, bd = a._data, b._data
    if ad.dtype == bd.dtype:
        return ad, bd
    rt = _dtype.result_type(a, b).np
    return (ad if ad.dtype == rt else ad.astype(rt)), (bd if bd.dtype == rt else bd.astype(rt))


def promote_scalar(arr: np.ndarray, s: Any) -> np.ndarray:
    """Cast ``arr`` when the Python scalar ``s`` has a higher category (int tensor * 2.5)."""
    cat = _CAT[arr.dtype]
    scat = _dtype.scalar_category(s)
    if scat > cat:
        rt = _dtype.result_type(_wrap(arr), s)
        return arr.astype(rt.np)
    return arr


def scalar_operand(arr: np.ndarray, s: Any) -> tuple:
    """``(array, scalar)`` for ``tensor <op> s``: the array cast to the result dtype, and a
    Python int operand of an integer result wrapped around as PyTorch casts it (``uint8 + 300``
    adds 44; Note [Python numbers into a dtype])."""
    arr = promote_scalar(arr, s)
    if type(s) is int:
        if arr.dtype.kind in "iu":
            s = _dtype.wrap_int(s, _dtype._FROM_NP[arr.dtype])
        elif not -2 ** 63 <= s < 2 ** 64:
            _dtype._int_scalar(s)
    return arr, s


def to_float(arr: np.ndarray) -> np.ndarray:
    """Integer and bool arrays become the default float dtype (for exp, log, / ...)."""
    if _CAT[arr.dtype] < _dtype._FLOAT:
        return arr.astype(_dtype.get_default_dtype().np)
    return arr


def wrap_dim(dim: int, ndim: int) -> int:
    """Normalize a possibly negative dimension (PyTorch's IndexError when out of range)."""
    if 0 <= dim < ndim:
        return dim
    return _wrap_dim(dim, ndim)


def dims_tuple(dim: Any, ndim: int) -> tuple:
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (tuple, list)):
        out = tuple(wrap_dim(int(d), ndim) for d in dim)
        if len(set(out)) != len(out):
            raise RuntimeError(f"dim {out[0]} appears multiple times in the list of dims")
        return out
    return (wrap_dim(int(dim), ndim),)


def check_broadcast(*shapes: Sequence[int]) -> None:
    """Raise PyTorch's error if ``shapes`` do not broadcast (checked left to right, as the ops
    do)."""
    acc = tuple(shapes[0])
    for s in shapes[1:]:
        if tuple(s) != acc:
            try:
                acc = np.broadcast_shapes(acc, tuple(s))
            except ValueError:
                raise broadcast_error(acc, tuple(s)) from None


def broadcast_error(a: tuple, b: tuple) -> RuntimeError:
    ra, rb = list(reversed(a)), list(reversed(b))
    for i in range(max(len(a), len(b))):
        x = ra[i] if i < len(ra) else 1
        y = rb[i] if i < len(rb) else 1
        if x != y and x != 1 and y != 1:
            dim = max(len(a), len(b)) - 1 - i
            return RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b "
                                f"({y}) at non-singleton dimension {dim}")
    return RuntimeError(f"shapes {list(a)} and {list(b)} cannot be broadcast")
