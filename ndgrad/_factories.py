"""More factories: ``empty_strided``, ``Tensor.new_empty_strided``, ``empty_permuted``,
``scalar_tensor``, ``logspace``; and ``Tensor.resize_`` / ``resize_as_``.

Example:
    >>> import ndgrad
    >>> ndgrad.empty_strided((2, 3), (1, 2)).stride()
    (1, 2)
    >>> ndgrad.logspace(0, 2, 3)
    tensor([  1.,  10., 100.])
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

import numpy as np

from . import _creation, _dtype, _meta
from ._creation import _finish, _resolve
from .ops.views_inplace import _bump
from .tensor import Tensor

_tensor_module: Any = import_module("ndgrad.tensor")     # ndgrad.tensor is also a function

__all__ = ["empty_strided", "empty_permuted", "scalar_tensor", "logspace"]


def _strided(size: tuple, stride: tuple, dt: np.dtype, meta: bool = False) -> np.ndarray:
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    for n in size:
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: "
                               f"{list(size)}")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and "
                           f"strides={list(stride)}")
    if meta:
        return _meta.empty(size, dt, tuple(s * dt.itemsize for s in stride))
    if 0 in size:
        return np.empty(size, dtype=dt)
    n = 1 + sum((k - 1) * s for k, s in zip(size, stride))
    buf = np.zeros(n, dtype=dt)
    item = dt.itemsize
    return np.lib.stride_tricks.as_strided(buf, size, tuple(s * item for s in stride))


def empty_strided(size: Any, stride: Any, *, dtype: Any = None, layout: Any = None,
                  device: Any = None, requires_grad: bool = False,
                  pin_memory: Any = None) -> Tensor:
    """An uninitialized tensor with the given sizes and strides (in elements)."""
    return _finish(_strided(tuple(size), tuple(stride), _resolve(dtype),
                            _creation._on_meta(device)), requires_grad, device)


def new_empty_strided(self: Tensor, size: Any, stride: Any, *, dtype: Any = None,
                      layout: Any = None, device: Any = None, requires_grad: bool = False,
                      pin_memory: Any = None) -> Tensor:
    """``empty_strided`` with ``self``'s dtype unless ``dtype`` is given."""
    dt = _dtype.to_dtype(dtype).np if dtype is not None else self._data.dtype
    if device is None:
        device = self.device
    return _finish(_strided(tuple(size), tuple(stride), dt, _creation._on_meta(device)),
                   requires_grad, device)


def empty_permuted(size: Any, physical_layout: Any, *, dtype: Any = None, layout: Any = None,
                   device: Any = None, requires_grad: bool = False,
                   pin_memory: Any = None) -> Tensor:
    """An uninitialized tensor of ``size`` whose dims lie in memory in the order
    ``physical_layout`` (outermost first)."""
    size, perm = tuple(size), tuple(physical_layout)
    if len(perm) != len(size):
        raise RuntimeError("Number of dimensions in size does not match the length of the "
                           "physical_layout")
    if sorted(perm) != list(range(len(size))):
        raise RuntimeError("Duplicate dim not allowed" if len(set(perm)) != len(perm)
                           else "Dimension out of range")
    if _creation._on_meta(device):
        return _finish(_meta.empty(size, _resolve(dtype), order=perm), requires_grad, device)
    phys = np.empty(tuple(size[p] for p in perm), dtype=_resolve(dtype))
    return _finish(np.transpose(phys, np.argsort(perm)), requires_grad, device)


def scalar_tensor(s: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
                  requires_grad: bool = False, pin_memory: Any = None) -> Tensor:
    """A 0-d tensor holding the number ``s`` (in the default dtype unless ``dtype``)."""
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    if isinstance(s, complex) and not d.is_complex:
        d = d.to_complex()
    return _finish(np.asarray(_dtype.scalar_to(s, d), dtype=d.np), requires_grad, device)


def logspace(start: Any, end: Any, steps: int, base: float = 10.0, *, dtype: Any = None,
             layout: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """``base ** linspace(start, end, steps)``."""
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    for name, v in (("start", start), ("end", end)):
        if isinstance(v, Tensor) and v._data.ndim != 0:
            raise RuntimeError(f"logspace only supports 0-dimensional start and end tensors, "
                               f"but got {name} with {v._data.ndim} dimension(s).")
    lo, hi = (float(v.item()) if isinstance(v, Tensor) else v for v in (start, end))
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    exps: np.ndarray
    if d.is_complex:
        exps = np.linspace(complex(lo), complex(hi), steps)
    else:
        exps = np.linspace(float(lo), float(hi), steps)
    with np.errstate(all="ignore"):
        vals = np.power(float(base), exps)
    if d._category == _dtype._INT:
        vals = np.asarray(vals).real
        vals = np.where(np.isfinite(vals), vals, 0).astype(np.int64)
    return _finish(np.asarray(vals).astype(d.np), requires_grad, device)


# ---------------------------------------------------------------------------- resize_
def resize_(self: Tensor, *size: Any, memory_format: Any = None) -> Tensor:
    """Give ``self`` the shape ``size`` in place, keeping its first elements (in storage
    order); new elements are uninitialized (zeros here)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    shape = _creation._as_shape(size)
    if _tensor_module._TRANSFORM and self._tborn != _tensor_module._transform_local.tid:
        _tensor_module.refuse_captured("aten::resize_")    # Note [Captured tensors]
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    old = self._data
    n = int(np.prod(shape))
    if tuple(shape) != old.shape:
        fitted = _within_storage(old, n)
        if fitted is not None:          # fits in its storage from its offset: keeps sharing it
            self._data = fitted.reshape(shape)
        elif old.flags.c_contiguous and n <= old.size:
            self._data = old.reshape(-1)[:n].reshape(shape)
        elif self._base is not None:
            raise RuntimeError("Trying to resize storage that is not resizable")
        else:
            flat = np.zeros(max(n, old.size), dtype=old.dtype)
            flat[:old.size] = old.reshape(-1)
            self._data = flat[:n].reshape(shape)
        _bump(self)                 # a new shape moves the version; the same shape does not
    return self


def _within_storage(arr: np.ndarray, n: int) -> Any:
    """``n`` contiguous elements of ``arr``'s dtype from ``arr``'s first element, when its
    storage (the root array, contiguous) holds them: torch's ``resize_`` of a tensor whose
    storage is large enough, whatever its strides (a view too)."""
    root = _tensor_module._storage_root(arr)
    if not root.flags.c_contiguous or not root.flags.writeable and arr.flags.writeable:
        return None
    start = arr.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    end = start + n * arr.itemsize
    if start < 0 or end > root.nbytes:
        return None
    return root.reshape(-1).view(np.uint8)[start:end].view(arr.dtype)


def resize_as_(self: Tensor, the_template: Tensor, *, memory_format: Any = None) -> Tensor:
    """``resize_`` to ``the_template``'s shape."""
    return resize_(self, tuple(the_template._data.shape))
