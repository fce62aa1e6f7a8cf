"""DLPack exchange for the ndarrays under ndgrad's tensors.

NumPy's own ``ndarray.__dlpack__`` and ``np.from_dlpack`` do the work (ndgrad tensors wrap
ndarrays, so exchange is zero copy both ways). The one thing NumPy lacks is bfloat16: it has no
such dtype, while ndgrad stores bfloat16 as ml_dtypes' ``bfloat16``. For it the DLPack dtype
field alone is rewritten in the capsule (Note [bfloat16 through NumPy's DLPack]).

Note [bfloat16 through NumPy's DLPack]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A bfloat16 array is exported as its uint16 view (NumPy's exporter), after which the capsule's
``DLDataType.code`` is changed from kDLUInt (1) to kDLBfloat (4); imported the other way round:
the producer's capsule has kDLBfloat turned into kDLUInt before NumPy consumes it, and the
resulting uint16 array is viewed as bfloat16. Same bits, same memory, and the producer's
deleter still owns the capsule. Only the 4-byte dtype field of the DLTensor is touched; its
offset is fixed by the DLPack ABI (below).
"""

from __future__ import annotations

import ctypes
import enum
from typing import Any, Optional

import ml_dtypes
import numpy as np

__all__ = ["DLDeviceType", "export_array", "import_array", "is_capsule"]


class DLDeviceType(enum.IntEnum):
    """DLPack's device codes (``__dlpack_device__`` returns ``(DLDeviceType.kDLCPU, 0)``)."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


_KDL_UINT, _KDL_BFLOAT = 1, 4
_BF16 = np.dtype(ml_dtypes.bfloat16)
# Byte offset of DLTensor.dtype inside the capsule's struct: DLTensor starts with data (8),
# device (8) and ndim (4); DLManagedTensorVersioned puts version (8), manager_ctx (8), deleter
# (8) and flags (8) before its DLTensor.
_DTYPE_OFFSET = {b"dltensor": 20, b"dltensor_versioned": 52}

_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype, _get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype, _get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object,
                                                                 ctypes.c_char_p]


def is_capsule(obj: Any) -> bool:
    """Whether ``obj`` is a PyCapsule (a legacy ``to_dlpack`` result)."""
    return type(obj).__name__ == "PyCapsule"


def _dtype_field(capsule: Any) -> Optional[ctypes.Array]:
    """The (code, bits, lanes lo, lanes hi) bytes of the capsule's DLDataType, or None for a
    capsule that is not an unconsumed DLPack tensor."""
    name = _get_name(capsule)
    if name not in _DTYPE_OFFSET:
        return None
    base = _get_pointer(capsule, name)
    return (ctypes.c_uint8 * 4).from_address(base + _DTYPE_OFFSET[name])


def _retag(capsule: Any, old: int, new: int) -> bool:
    field = _dtype_field(capsule)
    if field is not None and field[0] == old and field[1] == 16:
        field[0] = new
        return True
    return False


def export_array(arr: np.ndarray, **kwargs: Any) -> Any:
    """``arr.__dlpack__(**kwargs)``, bfloat16 included."""
    bfloat16 = arr.dtype == _BF16
    if bfloat16:
        arr = arr.view(np.uint16)
    if not arr.flags.writeable and kwargs.get("max_version") is None and arr.size:
        # A legacy capsule cannot say "read-only", so NumPy refuses to make one for a read-only
        # array; ndgrad's are read-only views such as expand()'s, which PyTorch exports.
        arr = _writable(arr)
    capsule = arr.__dlpack__(**kwargs)
    if bfloat16:
        _retag(capsule, _KDL_UINT, _KDL_BFLOAT)
    return capsule


class _Producer:
    """What ``np.from_dlpack`` consumes: forwards to the real producer (or hands out a legacy
    capsule once) and turns a bfloat16 capsule into a uint16 one on the way."""

    def __init__(self, source: Any) -> None:
        self.source = source
        self.bfloat16 = False
        self.legacy = False

    def __dlpack__(self, **kwargs: Any) -> Any:
        # NumPy asks with DLPack 1.0's keywords and itself retries without them when an old
        # producer raises TypeError.
        capsule = self.source if is_capsule(self.source) else self.source.__dlpack__(**kwargs)
        self.legacy = _get_name(capsule) == b"dltensor"
        self.bfloat16 = _retag(capsule, _KDL_BFLOAT, _KDL_UINT)
        return capsule

    def __dlpack_device__(self) -> tuple:
        if is_capsule(self.source):
            return (DLDeviceType.kDLCPU, 0)
        return self.source.__dlpack_device__()


def import_array(obj: Any, copy: Optional[bool] = None) -> np.ndarray:
    """The ndarray (sharing memory unless ``copy``) that NumPy builds from a DLPack producer
    or a legacy capsule, bfloat16 included."""
    producer = _Producer(obj)
    arr = np.from_dlpack(producer, copy=copy)
    if producer.legacy and not arr.flags.writeable:
        arr = _writable(arr)
    return arr.view(_BF16) if producer.bfloat16 else arr


class _Memory:
    """The memory of an ndarray, described again as writable (keeps the array alive)."""

    def __init__(self, arr: np.ndarray) -> None:
        self.arr = arr
        iface = dict(arr.__array_interface__)
        iface["data"] = (iface["data"][0], False)
        self.__array_interface__ = iface


def _writable(arr: np.ndarray) -> np.ndarray:
    # NumPy marks an array from a legacy (unversioned) capsule read-only, as that format cannot
    # say whether the memory may be written; PyTorch takes such memory as writable, and so
    # does ndgrad (a versioned capsule's read-only flag is kept).
    if arr.size == 0:
        return arr.copy()
    return np.asarray(_Memory(arr))
