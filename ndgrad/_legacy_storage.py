"""The legacy typed storage classes (``ndgrad.FloatStorage``, ``ndgrad.LongStorage`` ...) that
``Tensor.storage_type()`` returns, as torch's: ``FloatStorage(n)`` holds ``n`` elements (zeros
here; torch leaves them uninitialized), ``FloatStorage([1, 2])`` holds those values, and any
``TypedStorage`` of float32 elements is an instance of ``FloatStorage``.

Example:
    >>> import ndgrad
    >>> ndgrad.ones(2).storage_type() is ndgrad.FloatStorage
    True
    >>> ndgrad.DoubleStorage([1, 2]).tolist(), ndgrad.FloatStorage.dtype
    ([1.0, 2.0], ndgrad.float32)
"""

from __future__ import annotations

from typing import Any, Dict

import numpy as np

from . import _dtype
from .storage import TypedStorage, UntypedStorage


class _LegacyStorageMeta(type):
    """``FloatStorage.dtype`` and ``isinstance(t.storage(), FloatStorage)``."""

    _dt: Any

    @property
    def dtype(cls) -> Any:
        return cls._dt

    def __instancecheck__(cls, instance: Any) -> bool:
        return type.__instancecheck__(cls, instance) or (
            isinstance(instance, TypedStorage) and instance.dtype == cls._dt)


class _LegacyStorage(TypedStorage, metaclass=_LegacyStorageMeta):
    """A typed storage built from a size (zeros) or a sequence of values."""

    _dt: Any = None

    def __init__(self, *args: Any) -> None:
        np_dtype = type(self)._dt.np
        if len(args) > 1:
            raise TypeError(f"{type(self).__name__}(): expected at most 1 argument, got "
                            f"{len(args)}")
        if not args:
            values = np.zeros(0, dtype=np_dtype)
        elif isinstance(args[0], int) and not isinstance(args[0], bool):
            if args[0] < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {args[0]}")
            values = np.zeros(args[0], dtype=np_dtype)
        else:
            values = np.asarray(list(args[0]), dtype=np_dtype).reshape(-1)
        super().__init__(UntypedStorage(values.view(np.uint8).reshape(-1)), np_dtype)


class HalfStorage(_LegacyStorage):
    """Legacy storage of ``ndgrad.float16`` elements."""
    _dt = _dtype.float16


class BFloat16Storage(_LegacyStorage):
    """Legacy storage of ``ndgrad.bfloat16`` elements."""
    _dt = _dtype.bfloat16


class FloatStorage(_LegacyStorage):
    """Legacy storage of ``ndgrad.float32`` elements."""
    _dt = _dtype.float32


class DoubleStorage(_LegacyStorage):
    """Legacy storage of ``ndgrad.float64`` elements."""
    _dt = _dtype.float64


class ComplexFloatStorage(_LegacyStorage):
    """Legacy storage of ``ndgrad.complex64`` elements."""
    _dt = _dtype.complex64


class ComplexDoubleStorage(_LegacyStorage):
    """Legacy storage of ``ndgrad.complex128`` elements."""
    _dt = _dtype.complex128


class ByteStorage(_LegacyStorage):
    """Legacy storage of ``ndgrad.uint8`` elements."""
    _dt = _dtype.uint8


class CharStorage(_LegacyStorage):
    """Legacy storage of ``ndgrad.int8`` elements."""
    _dt = _dtype.int8


class ShortStorage(_LegacyStorage):
    """Legacy storage of ``ndgrad.int16`` elements."""
    _dt = _dtype.int16


class IntStorage(_LegacyStorage):
    """Legacy storage of ``ndgrad.int32`` elements."""
    _dt = _dtype.int32


class LongStorage(_LegacyStorage):
    """Legacy storage of ``ndgrad.int64`` elements."""
    _dt = _dtype.int64


class BoolStorage(_LegacyStorage):
    """Legacy storage of ``ndgrad.bool`` elements."""
    _dt = _dtype.bool


_CLASSES = (HalfStorage, BFloat16Storage, FloatStorage, DoubleStorage, ComplexFloatStorage,
            ComplexDoubleStorage, ByteStorage, CharStorage, ShortStorage, IntStorage, LongStorage,
            BoolStorage)
LEGACY_STORAGES: Dict[str, type] = {c.__name__: c for c in _CLASSES}
_BY_DTYPE = {c._dt.np: c for c in _CLASSES}


def storage_type(self: Any) -> type:
    """The legacy storage class of the tensor's dtype (``ndgrad.FloatStorage`` ...).

    Example:
        >>> import ndgrad
        >>> ndgrad.ones(1, dtype=ndgrad.int64).storage_type().__name__
        'LongStorage'
    """
    return _BY_DTYPE[self._data.dtype]
