"""``Tensor.untyped_storage()`` and ``Tensor.storage()``: windows onto a tensor's storage.

There is no second storage model: a storage object is a view of the bytes of the tensor's
storage as ndgrad already defines it (Note [Storage] in ops/shape.py: the root array of the
tensor's data, from its first element to the end of its memory). It shares that memory, so
writing through it changes every tensor over the storage, and two tensors share a storage
exactly when their storages' ``data_ptr()`` agree. Only what programs commonly use is here:
sizes, ``data_ptr``, element access and assignment, ``tolist``, iteration, printing,
``is_shared``; storages cannot be created, resized or converted on their own.

Example:
    >>> import ndgrad
    >>> x = ndgrad.arange(4.0)
    >>> s = x[2:].untyped_storage()
    >>> s.data_ptr() == x.data_ptr(), s.nbytes(), len(x.storage())
    (True, 16, 4)
"""

from __future__ import annotations

import operator
import warnings
from typing import Any, Iterator, List

import numpy as np

from . import _shared_memory
from ._dtype import _FROM_NP, BAREBONES
from .ops.shape import _StorageWindow
from .tensor import Tensor, _CPU, _ptr, _storage_nbytes, _storage_root

__all__ = ["UntypedStorage", "TypedStorage"]

_warned_typed = False


def _bytes_of(t: Tensor) -> np.ndarray:
    """A uint8 array over all of ``t``'s storage (shares its memory)."""
    root = _storage_root(t._data)
    n = _storage_nbytes(root)
    window = _StorageWindow({"version": 3, "shape": (n,), "typestr": "|u1",
                             "data": (_ptr(root), not root.flags.writeable)}, root)
    return np.asarray(window)


def _index(idx: Any, n: int, kind: str) -> int:
    if not isinstance(idx, (int, np.integer)) or isinstance(idx, bool):
        raise TypeError(f"can't index a {kind} with {type(idx).__name__}")
    i = operator.index(idx)
    if i < 0:
        i += n
    if not 0 <= i < n:
        raise IndexError(f"index {i} out of range for storage of size {n}")
    return i


def _lines(values: List[Any], footer: str) -> str:
    return "".join(f" {v}\n" for v in values) + (" \n" if not values else "") + footer


class UntypedStorage:
    """The bytes of a tensor's storage (``Tensor.untyped_storage()``): ``len``/``nbytes``/
    ``size`` in bytes, ``s[i]`` a byte as an int, ``s[a:b]`` a storage over those bytes.

    >>> import ndgrad
    >>> s = ndgrad.tensor([1], dtype=ndgrad.int16).untyped_storage()
    >>> s.tolist(), s.element_size()
    ([1, 0], 1)
    """

    def __init__(self, data: np.ndarray) -> None:
        self._bytes = data

    def nbytes(self) -> int:
        """Size of the storage in bytes."""
        return int(self._bytes.size)

    def size(self) -> int:
        """Size of the storage in bytes (as ``nbytes``)."""
        return int(self._bytes.size)

    def __len__(self) -> int:
        return int(self._bytes.size)

    def element_size(self) -> int:
        """Bytes per element: 1."""
        return 1

    def data_ptr(self) -> int:
        """Address of the storage's first byte."""
        return _ptr(self._bytes)

    @property
    def device(self) -> Any:
        """Where the storage lives: the CPU."""
        return _CPU

    def is_shared(self) -> bool:
        """Whether the storage is in shared memory (``Tensor.share_memory_``)."""
        return _shared_memory._block_of(self._bytes) is not None

    def tolist(self) -> List[int]:
        """The bytes as a list of ints."""
        return self._bytes.tolist()

    def __iter__(self) -> Iterator[int]:
        return iter(self.tolist())

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, slice):
            return UntypedStorage(self._bytes[idx])
        return int(self._bytes[_index(idx, len(self), "ndgrad.UntypedStorage")])

    def __setitem__(self, idx: Any, value: Any) -> None:
        if not isinstance(value, (int, np.integer)):
            raise RuntimeError("can only set storage content with a int types, but got "
                               f"{type(value).__name__} instead")
        i = operator.index(idx)
        if not 0 <= i < len(self):           # torch's byte setter takes no negative index
            raise RuntimeError("out of bounds")
        self._bytes[i] = int(value) % 256

    def type(self) -> str:
        """The storage's type name."""
        return "ndgrad.storage.UntypedStorage"

    def __repr__(self) -> str:
        return _lines(self.tolist(), f"[ndgrad.storage.UntypedStorage(device=cpu) of size "
                                     f"{len(self)}]")


class TypedStorage:
    """A tensor's storage seen as elements of its dtype (``Tensor.storage()``, deprecated in
    torch as in ndgrad): ``len``/``size`` in elements, ``s[i]`` a Python number.

    >>> import ndgrad, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     s = ndgrad.tensor([1.5, 2.0]).storage()
    >>> s[0], len(s), s.nbytes(), s.dtype
    (1.5, 2, 8, ndgrad.float32)
    """

    def __init__(self, untyped: UntypedStorage, np_dtype: np.dtype) -> None:
        self._untyped = untyped
        self._np = np.dtype(np_dtype)

    @property
    def dtype(self) -> Any:
        """The element type."""
        return _FROM_NP[self._np]

    @property
    def device(self) -> Any:
        """Where the storage lives: the CPU."""
        return _CPU

    def _elements(self) -> np.ndarray:
        b = self._untyped._bytes
        n = len(self)
        return b[:n * self._np.itemsize].view(self._np)

    def untyped(self) -> UntypedStorage:
        """The same storage as bytes."""
        return self._untyped

    def __len__(self) -> int:
        return self._untyped.nbytes() // self._np.itemsize

    def size(self) -> int:
        """Number of elements."""
        return len(self)

    def nbytes(self) -> int:
        """Size in bytes."""
        return self._untyped.nbytes()

    def element_size(self) -> int:
        """Bytes per element."""
        return self._np.itemsize

    def data_ptr(self) -> int:
        """Address of the first element."""
        return self._untyped.data_ptr()

    def is_shared(self) -> bool:
        """Whether the storage is in shared memory."""
        return self._untyped.is_shared()

    def _py(self, v: Any) -> Any:
        d = self.dtype
        if d.is_complex:
            return complex(v)
        if d.is_floating_point:
            return float(v)
        if self._np == np.bool_:
            return bool(v)
        return int(v)

    def tolist(self) -> List[Any]:
        """The elements as Python numbers."""
        return [self._py(v) for v in self._elements()]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.tolist())

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        return self._py(self._elements()[_index(idx, len(self), "ndgrad.TypedStorage")])

    def __setitem__(self, idx: Any, value: Any) -> None:
        n = len(self)
        i = operator.index(idx)
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of bounds for dimension 0 with size {n}")
        self._elements()[i] = value

    def type(self) -> str:
        """The storage's legacy type name (``ndgrad.FloatStorage`` ...)."""
        names = {"float32": "Float", "float64": "Double", "float16": "Half",
                 "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                 "int8": "Char", "uint8": "Byte", "bool": "Bool", "complex64": "ComplexFloat",
                 "complex128": "ComplexDouble"}
        if self.dtype in BAREBONES:             # no legacy storage class for these
            return "ndgrad.storage.TypedStorage"
        return f"ndgrad.{names.get(self.dtype.name, self.dtype.name)}Storage"

    def __repr__(self) -> str:
        return _lines(self.tolist(), f"[ndgrad.storage.TypedStorage(dtype={self.dtype}, "
                                     f"device=cpu) of size {len(self)}]")


def untyped_storage(t: Tensor) -> UntypedStorage:
    """The tensor's storage as bytes (``Tensor.untyped_storage``); shares its memory.

    >>> import ndgrad
    >>> ndgrad.zeros(3).untyped_storage().nbytes()
    12
    """
    return UntypedStorage(_bytes_of(t))


def storage(t: Tensor) -> TypedStorage:
    """The tensor's storage as elements of its dtype (``Tensor.storage``; torch warns once
    that TypedStorage is deprecated, and so does ndgrad).

    >>> import ndgrad, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     ndgrad.arange(3.0)[1:].storage().tolist()
    [0.0, 1.0, 2.0]
    """
    global _warned_typed
    if not _warned_typed:
        _warned_typed = True
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                      "UntypedStorage will be the only storage class. This should only matter "
                      "to you if you are using storages directly.  To access UntypedStorage "
                      "directly, use tensor.untyped_storage() instead of tensor.storage()",
                      UserWarning, stacklevel=2)
    return TypedStorage(UntypedStorage(_bytes_of(t)), t._data.dtype)
