"""``ndgrad.save`` and ``ndgrad.load`` in PyTorch's file format.

Note [Checkpoint format]
A file is PyTorch's zip archive: ``<name>/data.pkl`` (a protocol-2 pickle of the object) and
one record ``<name>/data/<key>`` of raw little-endian bytes per storage, plus ``version`` and
``byteorder``. In the pickle a tensor is ``torch._utils._rebuild_tensor_v2(storage, offset,
size, stride, requires_grad, hooks)`` where ``storage`` is a persistent id ``("storage",
torch.<Type>Storage, key, "cpu", numel)``; dtypes, sizes and devices are ``torch.float32``,
``torch.Size``, ``torch.device``. So ``torch.load`` reads what ``ndgrad.save`` writes and the
other way round. Tensors whose ndarrays share one buffer are written against one storage, so
views and shared memory survive the round trip.

Loading with ``weights_only=True`` (the default) resolves only an allow-list of names
(containers, tensors, storages, dtypes, sizes, devices): a file cannot make ``load`` run code.
Every tensor's extent is checked against its storage before any view is made.

Example:
    >>> import io, ndgrad
    >>> x = ndgrad.arange(6.0).reshape(2, 3)
    >>> buf = io.BytesIO()
    >>> ndgrad.save({"x": x, "row": x[1]}, buf)
    >>> _ = buf.seek(0)
    >>> out = ndgrad.load(buf)
    >>> out["row"]
    tensor([3., 4., 5.])
    >>> import numpy as np
    >>> np.shares_memory(out["row"].numpy(), out["x"].numpy())   # still one storage
    True
"""

from __future__ import annotations

import codecs
import collections
import io
import os
import pickle
import sys
import warnings
import zipfile
from typing import TYPE_CHECKING, Any, BinaryIO, ClassVar, Dict, List, Optional, Tuple, Union

import numpy as np

from . import _dtype, _layout
from ._aligned import AlignedBlock
from ._sparse import SparseTensor, sparse_coo_tensor
from ._sparse_compressed import CompressedTensor, compressed_from_arrays
from .tensor import Size, Tensor, _wrap, device

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals"]

FileLike = Union[str, os.PathLike, BinaryIO]

_STORAGE_NAMES = {
    "float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
    "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage",
    "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage",
    "bool": "BoolStorage", "complex64": "ComplexFloatStorage",
    "complex128": "ComplexDoubleStorage"}
_STORAGE_DTYPES = {v: k for k, v in _STORAGE_NAMES.items()}


class _Global:
    """A name written into the pickle as ``GLOBAL module name`` (torch's, which need not be
    importable here)."""

    _cache: Dict[Tuple[str, str], "_Global"] = {}
    module: str
    name: str

    def __new__(cls, module: str, name: str) -> "_Global":
        key = (module, name)
        if key not in cls._cache:
            obj = super().__new__(cls)
            obj.module, obj.name = module, name
            cls._cache[key] = obj
        return cls._cache[key]

    def __call__(self, *args: Any) -> Any:      # pickle requires reducers to be callable
        raise TypeError(f"{self.module}.{self.name} is a name for the file, not a function")


_REBUILD_TENSOR = _Global("torch._utils", "_rebuild_tensor_v2")
_REBUILD_TENSOR_V3 = _Global("torch._utils", "_rebuild_tensor_v3")
_UNTYPED_STORAGE = _Global("torch.storage", "UntypedStorage")
_REBUILD_PARAMETER = _Global("torch._utils", "_rebuild_parameter")
_REBUILD_SPARSE = _Global("torch._utils", "_rebuild_sparse_tensor")
_ORDERED_DICT = collections.OrderedDict


class _Layout:
    """``torch.serialization._get_layout("torch.<name>")`` in the pickle."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __reduce__(self) -> Any:
        return (_Global("torch.serialization", "_get_layout"), (f"torch.{self.name}",))


_LAYOUT_COO = _Layout("sparse_coo")
_LAYOUTS = {_layout.sparse_csr: _Layout("sparse_csr"), _layout.sparse_csc: _Layout("sparse_csc")}
_LAYOUT_NAMES = {"torch.sparse_coo": _layout.sparse_coo, "torch.sparse_csr": _layout.sparse_csr,
                 "torch.sparse_csc": _layout.sparse_csc}


# ---------------------------------------------------------------------------- save
class _Storage:
    """One buffer to write: a flat, contiguous ndarray under a key."""

    def __init__(self, key: str, flat: np.ndarray) -> None:
        self.key, self.flat = key, flat


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray) and a.base.__class__ is not AlignedBlock:
        a = a.base     # an aligned array is its storage's root (Note [Aligned arrays])
    return a


class _Pickler(pickle._Pickler):
    dispatch: ClassVar[dict] = dict(pickle._Pickler.dispatch)

    if TYPE_CHECKING:   # the pure-Python pickler's own methods, absent from typeshed's stub
        def write(self, data: bytes) -> None: ...
        def memoize(self, obj: Any) -> None: ...
        def save(self, obj: Any) -> None: ...

    def __init__(self, file: BinaryIO) -> None:
        super().__init__(file, protocol=2)
        self.storages: Dict[int, _Storage] = {}

    def _write_global(self, obj: _Global) -> None:
        self.write(pickle.GLOBAL + obj.module.encode("utf-8") + b"\n"
                   + obj.name.encode("utf-8") + b"\n")
        self.memoize(obj)

    dispatch[_Global] = _write_global

    def _write_dtype(self, obj: Any) -> None:
        self.save(_Global("torch", str(obj).rsplit(".", 1)[-1]))

    dispatch[_dtype.dtype] = _write_dtype
    dispatch[_dtype._Barebones] = _write_dtype

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, _Storage):
            if obj.flat.dtype in _dtype.BAREBONES_NP:     # no typed storage class: bytes
                return ("storage", _UNTYPED_STORAGE, obj.key, "cpu", obj.flat.nbytes)
            name = _STORAGE_NAMES[str(obj.flat.dtype)]
            return ("storage", _Global("torch", name), obj.key, "cpu", obj.flat.size)
        return None

    def _storage_of(self, a: np.ndarray) -> Tuple[_Storage, int, Tuple[int, ...]]:
        """The storage of an ndarray, its offset and strides in elements (a copy when the
        array is not an aligned, non-negative strided view of a contiguous buffer)."""
        root = _root(a)
        item = a.itemsize
        ok = (root.dtype == a.dtype and root.flags.c_contiguous and all(s >= 0 for s in
                                                                       a.strides))
        if ok:
            off = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
            ok = off % item == 0 and all(s % item == 0 for s in a.strides)
        if not ok:
            root = np.ascontiguousarray(a)
            off = 0
            strides = tuple(s // item for s in root.strides)
        else:
            strides = tuple(s // item for s in a.strides)
        st = self.storages.get(id(root))
        if st is None:
            st = _Storage(str(len(self.storages)), root)
            self.storages[id(root)] = st
        return st, off // item, strides

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, SparseTensor):
            parts = (_wrap(obj._sp_indices), _wrap(obj._sp_values), Size(obj._sp_shape),
                     obj.is_coalesced())
            return (_REBUILD_SPARSE, (_LAYOUT_COO, parts))
        if isinstance(obj, CompressedTensor):       # torch's (compressed, plain, values, size)
            cparts = (_wrap(obj._cs_compressed), _wrap(obj._cs_plain), _wrap(obj._cs_values),
                      Size(obj._cs_shape))
            return (_REBUILD_SPARSE, (_LAYOUTS[obj._cs_layout], cparts))
        if isinstance(obj, Tensor):
            a = obj._data
            if type(obj).__name__ == "Parameter":   # its data as a plain tensor, then the flag
                return (_REBUILD_PARAMETER, (_wrap(a), obj.requires_grad, _ORDERED_DICT()))
            st, offset, strides = self._storage_of(a)
            if a.dtype in _dtype.BAREBONES_NP:    # torch's form for dtypes without a
                return (_REBUILD_TENSOR_V3,         # typed storage: bytes plus the dtype
                        (st, offset, Size(a.shape), strides, obj.requires_grad,
                         _ORDERED_DICT(), obj.dtype))
            return (_REBUILD_TENSOR,
                    (st, offset, Size(a.shape), strides, obj.requires_grad, _ORDERED_DICT()))
        if isinstance(obj, Size):
            return (_Global("torch", "Size"), (tuple(obj),))
        if isinstance(obj, device):
            return (_Global("torch", "device"), (str(obj),))
        return NotImplemented


def _open_write(f: FileLike) -> Tuple[BinaryIO, bool, str]:
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        name = os.path.splitext(os.path.basename(path))[0] or "archive"
        return open(path, "wb"), True, name
    if not hasattr(f, "write"):
        raise AttributeError(f"expected 'f' to be string, path, or a file-like object with a "
                             f"'write' attribute, but got {type(f).__name__}")
    return f, False, "archive"


def save(obj: Any, f: FileLike, pickle_module: Any = pickle, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True,
         _disable_byteorder_record: bool = False) -> None:
    """Write ``obj`` (tensors, state dicts, optimizer state, nested containers of them, and
    any picklable object) to a path or binary file, in PyTorch's format (Note [Checkpoint
    format]): ``torch.load`` reads it back, as ``ndgrad.load`` reads ``torch.save``'s files."""
    if not _use_new_zipfile_serialization:
        raise NotImplementedError("ndgrad.save writes only the zip-file format "
                                  "(_use_new_zipfile_serialization=True)")
    buf = io.BytesIO()
    pickler = _Pickler(buf)
    pickler.dump(obj)
    out, close, name = _open_write(f)
    try:
        with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as z:
            z.writestr(f"{name}/data.pkl", buf.getvalue())
            if not _disable_byteorder_record:
                z.writestr(f"{name}/byteorder", sys.byteorder)
            for st in pickler.storages.values():
                z.writestr(f"{name}/data/{st.key}", st.flat.tobytes())
            z.writestr(f"{name}/version", "3\n")
    finally:
        if close:
            out.close()


# ---------------------------------------------------------------------------- load
def _rebuild_tensor(storage: np.ndarray, offset: int, size: Any, stride: Any,
                    requires_grad: bool, hooks: Any = None, metadata: Any = None) -> Tensor:
    """A tensor viewing ``storage`` (checked to lie inside it)."""
    if not isinstance(storage, np.ndarray):
        raise RuntimeError(f"ndgrad.load: expected a storage, got {type(storage).__name__}")
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    offset = int(offset)
    if len(size) != len(stride) or offset < 0 or any(s < 0 for s in size) or \
            any(s < 0 for s in stride):
        raise RuntimeError("ndgrad.load: invalid tensor geometry in the file (corrupted?)")
    if all(s > 0 for s in size):
        last = offset + sum((n - 1) * s for n, s in zip(size, stride))
        if last >= storage.size:
            raise RuntimeError(f"ndgrad.load: a tensor of size {list(size)} at offset {offset} "
                               f"does not fit its storage of {storage.size} elements "
                               "(corrupted or truncated file)")
    item = storage.itemsize
    arr = np.lib.stride_tricks.as_strided(storage[offset:] if storage.size else storage,
                                          shape=size, strides=tuple(s * item for s in stride))
    t = _wrap(arr)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_tensor_v3(storage: np.ndarray, offset: int, size: Any, stride: Any,
                       requires_grad: bool, hooks: Any, dtype: Any,
                       metadata: Any = None) -> Tensor:
    """torch's form for a tensor over an untyped (byte) storage: the bytes viewed as
    ``dtype``, then as ``_rebuild_tensor``."""
    if not isinstance(storage, np.ndarray) or not isinstance(dtype, _dtype.dtype):
        raise RuntimeError("ndgrad.load: invalid tensor record in the file (corrupted?)")
    if storage.dtype != dtype.np:
        if storage.dtype != np.uint8 or storage.size % dtype.itemsize:
            raise RuntimeError(f"ndgrad.load: a storage of {storage.size} bytes cannot hold "
                               f"{dtype} elements (corrupted file?)")
        storage = storage.view(dtype.np)
    return _rebuild_tensor(storage, offset, size, stride, requires_grad, hooks)


def _rebuild_parameter(data: Tensor, requires_grad: bool, hooks: Any = None,
                       state: Any = None) -> Any:
    try:
        # local import: nn sits above the core; a file with parameters needs its class
        from .nn.parameter import Parameter
    except ImportError:
        return data.detach().requires_grad_(requires_grad)
    if not isinstance(Parameter, type):
        return data.detach().requires_grad_(requires_grad)
    p = Parameter(data, requires_grad=requires_grad)
    if state:
        for k, v in state.items():
            setattr(p, k, v)
    return p


def _rebuild_sparse(layout: Any, data: Any) -> Any:
    if layout in (_layout.sparse_csr, _layout.sparse_csc):
        compressed, plain, values, size = data
        return compressed_from_arrays(compressed, plain, values, tuple(size), layout)
    if layout is not _layout.sparse_coo:
        raise RuntimeError(f"ndgrad.load: sparse layout {layout} is not supported")
    if len(data) == 3:                          # files of older torch versions
        data = tuple(data) + (None,)
    indices, values, size, coalesced = data
    return sparse_coo_tensor(indices, values, tuple(size),
                             is_coalesced=None if coalesced is None else bool(coalesced))


def _get_layout(name: str) -> Any:
    if name not in _LAYOUT_NAMES:
        raise RuntimeError(f"ndgrad.load: layout {name} is not supported")
    return _LAYOUT_NAMES[name]


_SAFE_BUILTINS = {"set": set, "frozenset": frozenset, "complex": complex, "slice": slice,
                  "bytearray": bytearray, "range": range}


# Globals the user allows in weights-only files (``add_safe_globals``), by "module.name".
_USER_SAFE: Dict[str, Any] = {}
# Tuples of another form than (object, "module.name"): listed, refused at load (_check_user).
_USER_BAD: List[Any] = []


def _global_name(obj: Any) -> str:
    return f"{obj.__module__}.{obj.__qualname__}"


def add_safe_globals(safe_globals: List[Any]) -> None:
    """Allow these classes/functions in files loaded with ``weights_only=True`` (each an
    object, or ``(object, "module.name")`` for one saved under another name), as
    ``torch.serialization.add_safe_globals``.

    >>> import ndgrad, collections
    >>> ndgrad.serialization.add_safe_globals([collections.namedtuple("P", "x")])
    >>> ndgrad.serialization.clear_safe_globals()
    """
    for entry in safe_globals:
        if isinstance(entry, tuple):
            if len(entry) != 2 or not isinstance(entry[1], str):
                # kept as given, as torch's; refused when a load consults them (_check_user)
                if entry not in _USER_BAD:
                    _USER_BAD.append(entry)
                continue
            _USER_SAFE[entry[1]] = entry[0]
        else:
            _USER_SAFE[_global_name(entry)] = entry


class _BadSafeGlobals(Exception):
    """Carries torch's error for a malformed ``add_safe_globals`` entry out of the unpickler
    (``load`` re-raises the original, unwrapped)."""


def _check_user() -> None:
    """torch's refusal of malformed entries, raised when a load consults the user's list."""
    for f in _USER_BAD:
        if len(f) != 2:
            err: Exception = ValueError("Expected tuple of length 2 (global, str of callable "
                                        f"full path), but got tuple of length: {len(f)}")
        else:
            err = TypeError("Expected second item in tuple to be str of callable full path, "
                            f"but got: {type(f[1])}")
        raise _BadSafeGlobals(err)


def get_safe_globals() -> List[Any]:
    """The globals ``add_safe_globals`` allowed (``(object, name)`` for renamed ones)."""
    return [obj if _global_name(obj) == key else (obj, key)
            for key, obj in _USER_SAFE.items()] + list(_USER_BAD)


def clear_safe_globals() -> None:
    """Forget every global ``add_safe_globals`` allowed."""
    _USER_SAFE.clear()
    _USER_BAD.clear()


class safe_globals:
    """Context manager: ``add_safe_globals(globals)`` inside the block only.

    >>> import ndgrad, collections
    >>> with ndgrad.serialization.safe_globals([collections.Counter]):
    ...     len(ndgrad.serialization.get_safe_globals())
    1
    """

    def __init__(self, safe_globals: List[Any]) -> None:
        self._globals = safe_globals

    def __enter__(self) -> None:
        add_safe_globals(self._globals)

    def __exit__(self, *exc: Any) -> None:
        # torch removes the block's entries, also ones that were listed before it
        for entry in self._globals:
            if isinstance(entry, tuple) and (len(entry) != 2 or not isinstance(entry[1], str)):
                if entry in _USER_BAD:
                    _USER_BAD.remove(entry)
                continue
            key = entry[1] if isinstance(entry, tuple) else _global_name(entry)
            _USER_SAFE.pop(key, None)


def _safe_global(module: str, name: str, user: bool = True) -> Any:
    """The allow-listed names a weights-only file may use, mapped to ndgrad's, or None
    (``user``: the user's list too; malformed entries in it refused as torch refuses them
    when it reaches that list, after its own)."""
    if user and _USER_BAD and (f"{module}.{name}" in _USER_SAFE or
                               _safe_global(module, name, False) is None):
        _check_user()
    found = _USER_SAFE.get(f"{module}.{name}") if user else None
    if found is not None:
        return found
    if module == "collections" and name in ("OrderedDict", "Counter"):
        return getattr(collections, name)       # Counter: MultiStepLR's milestones
    if module == "torch._utils" and name == "_rebuild_tensor_v2":
        return _rebuild_tensor
    if module == "torch._utils" and name == "_rebuild_tensor_v3":
        return _rebuild_tensor_v3
    if module == "torch.storage" and name == "UntypedStorage":
        return "uint8"                          # a storage of bytes
    if module == "torch._utils" and name == "_rebuild_sparse_tensor":
        return _rebuild_sparse
    if module == "torch.serialization" and name == "_get_layout":
        return _get_layout
    if module == "torch._utils" and name in ("_rebuild_parameter",
                                             "_rebuild_parameter_with_state"):
        return _rebuild_parameter
    if module == "torch":
        if name in _STORAGE_DTYPES:
            return _STORAGE_DTYPES[name]
        if name == "Size":
            return Size
        if name == "device":
            return device
        if isinstance(getattr(_dtype, name, None), _dtype.dtype):
            return getattr(_dtype, name)
    if module == "_codecs" and name == "encode":
        return codecs.encode
    if module in ("builtins", "__builtin__") and name in _SAFE_BUILTINS:
        return _SAFE_BUILTINS[name]
    return None


def _weights_only_error(detail: str) -> pickle.UnpicklingError:
    return pickle.UnpicklingError(
        "Weights only load failed. Re-running `ndgrad.load` with `weights_only` set to `False` "
        "will likely succeed, but it can result in arbitrary code execution. Do it only if you "
        f"got the file from a trusted source.\n\n{detail}")


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: BinaryIO, archive: zipfile.ZipFile, prefix: str,
                 weights_only: bool, swap: bool) -> None:
        super().__init__(file)
        self._archive, self._prefix = archive, prefix
        self._weights_only, self._swap = weights_only, swap
        self._loaded: Dict[str, np.ndarray] = {}

    def find_class(self, module: str, name: str) -> Any:
        found = _safe_global(module, name)
        if found is not None:
            return found
        if self._weights_only:
            raise _weights_only_error(
                f"Unsupported global: GLOBAL {module}.{name} was not an allowed global by "
                f"default. Please use `ndgrad.serialization.add_safe_globals([{name}])` or the "
                f"`ndgrad.serialization.safe_globals([{name}])` context manager to allowlist "
                "this global if you trust this class/function.")
        return super().find_class(module, name)

    def persistent_load(self, pid: Any) -> np.ndarray:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"ndgrad.load: unknown persistent id {pid!r}")
        _, kind, key, _location, numel = pid
        if not isinstance(kind, str) or kind not in _STORAGE_NAMES:
            raise pickle.UnpicklingError(f"ndgrad.load: unknown storage type {kind!r}")
        key = str(key)
        if key not in self._loaded:
            try:
                raw = self._archive.read(f"{self._prefix}data/{key}")
            except KeyError:
                raise RuntimeError(f"PytorchStreamReader failed locating file data/{key}: file "
                                   "not found") from None
            dt = getattr(_dtype, kind).np
            if len(raw) != int(numel) * dt.itemsize:
                raise RuntimeError(f"ndgrad.load: storage {key} holds {len(raw)} bytes, "
                                   f"expected {int(numel) * dt.itemsize} (truncated file?)")
            arr = np.frombuffer(raw, dtype=dt).copy()
            if self._swap:
                arr = arr.byteswap()
            self._loaded[key] = arr
        return self._loaded[key]


def _read_all(f: FileLike) -> bytes:
    if isinstance(f, (str, os.PathLike)):
        with open(os.fspath(f), "rb") as fh:
            return fh.read()
    if not hasattr(f, "read"):
        raise AttributeError(f"expected 'f' to be string, path, or a file-like object with a "
                             f"'read' attribute, but got {type(f).__name__}")
    return f.read()


def load(f: FileLike, map_location: Any = None, pickle_module: Any = None, *,
         weights_only: Optional[bool] = None, mmap: Optional[bool] = None,
         **pickle_load_args: Any) -> Any:
    """Read an object written by ``ndgrad.save`` or ``torch.save`` (zip format).

    With ``weights_only=True`` (the default) only tensors, storages, containers, dtypes,
    sizes and devices can be loaded, so a file cannot run code; ``weights_only=False`` loads
    any pickled object, which can execute arbitrary code: only for trusted files."""
    if weights_only is None:
        weights_only = True
    data = _read_all(f)
    buf = io.BytesIO(data)
    if not zipfile.is_zipfile(buf):
        if data[:2] == b"\x80\x02" or data[:1] == b"\x80":
            raise RuntimeError("ndgrad.load: this is PyTorch's legacy (pre-1.6, non-zip) "
                               "format, which ndgrad does not read; re-save the file with a "
                               "recent torch.save")
        raise RuntimeError("PytorchStreamReader failed reading zip archive: failed finding "
                           "central directory (not a checkpoint, or a truncated file)")
    try:
        archive = zipfile.ZipFile(buf)
        names = archive.namelist()
    except (zipfile.BadZipFile, OSError) as e:
        raise RuntimeError(f"PytorchStreamReader failed reading zip archive: {e}") from None
    pkl = [n for n in names if n.endswith("data.pkl") and n.count("/") == 1]
    if not pkl:
        raise RuntimeError("PytorchStreamReader failed locating file data.pkl: file not found")
    prefix = pkl[0][:-len("data.pkl")]
    order = archive.read(prefix + "byteorder").decode() if prefix + "byteorder" in names \
        else "little"
    try:
        raw = archive.read(pkl[0])
    except (zipfile.BadZipFile, OSError, EOFError) as e:
        raise RuntimeError(f"PytorchStreamReader failed reading file data.pkl: {e}") from None
    if not weights_only:
        warnings.warn("ndgrad.load with weights_only=False can execute arbitrary code "
                      "stored in the file; use it only for files from a trusted source.",
                      UserWarning, stacklevel=2)
    unpickler = _Unpickler(io.BytesIO(raw), archive, prefix, weights_only,
                           swap=order != sys.byteorder)
    try:
        return unpickler.load()
    except pickle.UnpicklingError:
        raise
    except _BadSafeGlobals as e:
        raise e.args[0] from None
    except EOFError:
        raise RuntimeError(f"ndgrad.load: {pkl[0]} ends early (a truncated or corrupted "
                           "file)") from None
    except (ValueError, KeyError, IndexError, TypeError) as e:
        if weights_only:
            raise _weights_only_error(f"{type(e).__name__}: {e}") from None
        raise
