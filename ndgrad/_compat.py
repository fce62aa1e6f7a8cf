"""Top-level names torch programs call that are spellings of what ndgrad has, or small
helpers: ``concat``, ``detach``, ``numel``, the ``is_*`` predicates, ``can_cast``, the
deprecated ``range``, ``asarray``, ``frombuffer``, ``vander``, the global switches
(``set_warn_always``, ``set_deterministic_debug_mode`` ...), the ``sym_*`` helpers with plain
Python semantics, and the functions torch 1.9 removed (``solve``, ``eig`` ...: they raise torch's
errors).

Example:
    >>> import ndgrad
    >>> ndgrad.concat([ndgrad.ones(1), ndgrad.zeros(1)]).tolist()
    [1.0, 0.0]
    >>> ndgrad.can_cast(ndgrad.float64, ndgrad.int32)
    False
"""

from __future__ import annotations

import builtins
import math
import warnings
from typing import Any, Optional

import numpy as np

from . import _creation, _dtype, _settings, ops
from . import storage as _storage
from ._compat_methods import REMOVED_FUNCTIONS
from .autograd import anomaly_mode as _anomaly
from .ops import rearrange as _ra
from .tensor import Tensor
from .tensor import device as _device
from ._warn import WARN_ALWAYS as _WARN_ALWAYS

solve = REMOVED_FUNCTIONS["solve"]
lstsq = REMOVED_FUNCTIONS["lstsq"]
eig = REMOVED_FUNCTIONS["eig"]
symeig = REMOVED_FUNCTIONS["symeig"]
matrix_rank = REMOVED_FUNCTIONS["matrix_rank"]


def concat(tensors: Any, dim: int = 0) -> Tensor:
    """``cat`` under its NumPy-style name."""
    return ops.cat(tensors, dim)


def concatenate(tensors: Any, dim: int = 0) -> Tensor:
    """``cat`` under its NumPy-style name (``axis=`` also accepted)."""
    return ops.cat(tensors, dim)


def detach(input: Tensor) -> Tensor:
    """``input.detach()``."""
    return input.detach()


def numel(input: Tensor) -> int:
    """``input.numel()``."""
    return input.numel()


def is_floating_point(input: Tensor) -> bool:
    """``input.is_floating_point()``."""
    return input.is_floating_point()


def is_complex(input: Tensor) -> bool:
    """``input.is_complex()``."""
    return input.is_complex()


def is_conj(input: Tensor) -> bool:
    """``input.is_conj()``: ndgrad conjugates eagerly, so always False."""
    return input.is_conj()


def is_neg(input: Tensor) -> bool:
    """``input.is_neg()``: ndgrad negates eagerly, so always False."""
    return input.is_neg()


def is_inference(input: Tensor) -> bool:
    """``input.is_inference()``."""
    return input.is_inference()


def get_device(input: Tensor) -> int:
    """``input.get_device()``: -1 for a CPU tensor."""
    return input.get_device()


def is_distributed(input: Tensor) -> bool:
    """False: no ndgrad tensor is a distributed tensor."""
    return False


def is_storage(obj: Any) -> bool:
    """Whether ``obj`` is a storage (``x.untyped_storage()``, ``x.storage()``).

    Example:
        >>> import ndgrad
        >>> ndgrad.is_storage(ndgrad.ones(2).untyped_storage()), ndgrad.is_storage(3)
        (True, False)
    """
    return isinstance(obj, (_storage.TypedStorage, _storage.UntypedStorage))


def can_cast(from_: _dtype.dtype, to: _dtype.dtype) -> bool:
    """Whether torch's casting rules allow ``from_`` to ``to`` in an in-place op: no complex
    to real, no floating to integral, nothing but bool to bool.

    Example:
        >>> import ndgrad
        >>> ndgrad.can_cast(ndgrad.int32, ndgrad.float32)
        True
    """
    if from_.is_complex:
        return to.is_complex
    if from_.is_floating_point:
        return to.is_floating_point or to.is_complex
    return from_ is _dtype.bool or to is not _dtype.bool


_RANGE_WARNING = ("torch.range is deprecated and will be removed in a future release because its "
                  "behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).")


def range(start: Any = 0, end: Any = None, step: Any = 1, *, out: Any = None, dtype: Any = None,
          layout: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """The deprecated inclusive ``range``: ``start, start + step, ..., end`` (warns as torch;
    the default dtype unless ``dtype`` is given).

    Example:
        >>> import ndgrad, warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     ndgrad.range(0, 1, 0.5).tolist()
        [0.0, 0.5, 1.0]
    """
    warnings.warn(_RANGE_WARNING, UserWarning, stacklevel=2)
    if end is None:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    s, e, st = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    if st == 0:
        raise RuntimeError("step must be nonzero")
    if (st > 0 and e < s) or (st < 0 and e > s):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = int(math.floor((e - s) / st)) + 1
    d = dtype if dtype is not None else _dtype.get_default_dtype()
    values = s + np.arange(n, dtype=np.float64) * st
    out_t = _creation.tensor(values.astype(d.np), requires_grad=requires_grad)
    if out is not None:
        if out.numel() != n:          # an out with n elements keeps its shape, as torch's
            out.resize_(n)
        out.copy_(out_t.reshape(out.shape))
        return out
    return out_t


def _torch_name(d: Any) -> str:
    return _dtype._FROM_NP[np.dtype(d)]._torch_name


_MISSING: Any = object()


def asarray(obj: Any, *, dtype: Any = None, device: Any = None, copy: Optional[bool] = None,
            requires_grad: Any = _MISSING) -> Tensor:
    """A tensor from ``obj``, sharing memory with a tensor, an ndarray or a buffer when it can
    (``copy=False``: must share, else ValueError; ``copy=True``: never shares).

    Example:
        >>> import ndgrad, numpy as np
        >>> a = np.zeros(2)
        >>> t = ndgrad.asarray(a)
        >>> t[0] = 1.0
        >>> a.tolist()
        [1.0, 0.0]
    """
    want = dtype.np if isinstance(dtype, _dtype.dtype) else None
    if dtype is not None and want is None:
        raise TypeError(f"asarray(): argument 'dtype' must be torch.dtype, not "
                        f"{type(dtype).__name__}")
    if isinstance(obj, Tensor):
        if obj.requires_grad and requires_grad is _MISSING:
            warnings.warn("torch.asarray: unspecified requires_grad now defaults to "
                          "obj.requires_grad instead of False. Pass requires_grad=False "
                          "explicitly to get the old behavior and silence this warning.",
                          UserWarning, stacklevel=2)
        cast = want is not None and want != obj._data.dtype
        if cast and copy is False:
            raise ValueError(f"can't alias tensor with dtype '{_torch_name(obj._data.dtype)}' "
                             f"into dtype '{_torch_name(want)}'.")
        out = obj.to(dtype) if cast else (obj.clone() if copy else obj)
        if requires_grad is _MISSING:
            return out
        if requires_grad and not out.requires_grad:
            out.requires_grad_(True)
        elif not requires_grad and out.requires_grad:
            out = out.detach()
        return out
    rg = bool(requires_grad) if requires_grad is not _MISSING else False
    if isinstance(obj, np.ndarray):
        cast = want is not None and want != obj.dtype
        if cast and copy is False:
            raise ValueError(f"can't alias tensor with dtype '{_torch_name(obj.dtype)}' into "
                             f"dtype '{_torch_name(want)}'.")
        arr = obj.astype(want) if cast else (obj.copy() if copy else obj)
        if arr is obj and not arr.flags.writeable:
            _creation._check_shareable(arr)     # torch shares it: its read-only warning
        t = _creation.from_numpy(arr) if arr.flags.writeable else _creation.tensor(arr)
        return t.requires_grad_(True) if rg else t
    if isinstance(obj, np.generic):
        return _creation.tensor(obj, dtype=dtype, requires_grad=rg)
    if not isinstance(obj, (list, tuple, builtins.int, builtins.float, builtins.bool,
                            builtins.complex)):
        try:
            memoryview(obj)
        except TypeError:
            pass
        else:
            t = frombuffer(obj, dtype=dtype if dtype is not None else
                           _dtype.get_default_dtype())
            if copy:
                t = t.clone()
            return t.requires_grad_(True) if rg else t
    if copy is False:
        raise ValueError("can't alias arbitrary sequence into a tensor.")
    return _creation.tensor(obj, dtype=dtype, requires_grad=rg)


_READONLY_WARNED = [False]


def frombuffer(buffer: Any, *, dtype: _dtype.dtype, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Tensor:
    """A 1-D tensor viewing the bytes of an object with the buffer protocol (a read-only
    buffer is copied, with torch's warning about it).

    Example:
        >>> import ndgrad
        >>> b = bytearray(b"\\x01\\x02")
        >>> t = ndgrad.frombuffer(b, dtype=ndgrad.uint8)
        >>> t[0] = 7
        >>> b[0]
        7
    """
    try:
        view = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    if not isinstance(dtype, _dtype.dtype):
        raise TypeError(f"frombuffer(): argument 'dtype' must be torch.dtype, not "
                        f"{type(dtype).__name__}")
    length = view.nbytes
    size = dtype.np.itemsize
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if offset < 0 or offset >= length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % size:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} "
                             f"bytes) must be a multiple of element size ({size})")
        count = (length - offset) // size
    elif offset + count * size > length:
        raise ValueError(f"requested buffer length ({count} * {size} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({length} bytes)")
    arr = np.frombuffer(view.cast("B") if view.ndim != 1 or view.format != "B" else view,
                        dtype=dtype.np, count=count, offset=offset)
    if not arr.flags.writeable:
        if not _READONLY_WARNED[0]:
            _READONLY_WARNED[0] = True
            warnings.warn("The given buffer is not writable: ndgrad copies it (torch would "
                          "share its memory and let the tensor write to it).", UserWarning,
                          stacklevel=2)
        arr = arr.copy()
    t = _creation.from_numpy(arr)
    return t.requires_grad_(True) if requires_grad else t


def vander(x: Tensor, N: Optional[int] = None, increasing: bool = False) -> Tensor:
    """The Vandermonde matrix of a 1-D tensor: powers ``N-1`` down to ``0`` (or up, with
    ``increasing``); bools and integers give int64.

    Example:
        >>> import ndgrad
        >>> ndgrad.vander(ndgrad.tensor([1, 2, 3]), N=3).tolist()
        [[1, 1, 1], [4, 2, 1], [9, 3, 1]]
    """
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if x._data.dtype.kind in "biu":
        x = x.to(_dtype.int64)
    if n <= 1:
        base = x.unsqueeze(-1).expand(x.shape[0], n)
        m = ops.pow(base, 0)
    else:
        m = ops.products.vander(x, n)
    return m if increasing else _ra.flip(m, (-1,))


# ---- global switches ----


def set_warn_always(b: bool) -> None:
    """Whether ndgrad's once-only warnings should warn on every occurrence (a flag, as torch's;
    ndgrad's warnings go through Python's ``warnings`` filters)."""
    if type(b) is not builtins.bool:
        raise RuntimeError(f"setWarnOnlyOnce expects a bool, but got {type(b).__name__}")
    _WARN_ALWAYS[0] = b


def is_warn_always_enabled() -> bool:
    """The flag ``set_warn_always`` sets.

    Example:
        >>> import ndgrad
        >>> ndgrad.is_warn_always_enabled()
        False
    """
    return _WARN_ALWAYS[0]


def set_deterministic_debug_mode(debug_mode: Any) -> None:
    """0/``"default"``: deterministic algorithms off; 1/``"warn"``: on, warning only;
    2/``"error"``: on (``use_deterministic_algorithms``)."""
    if isinstance(debug_mode, str):
        modes = {"default": 0, "warn": 1, "error": 2}
        if debug_mode not in modes:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, "
                               f"`warn`, `error`, but got {debug_mode}")
        debug_mode = modes[debug_mode]
    elif type(debug_mode) is not builtins.int:
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    _settings.use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """0, 1 or 2, from ``use_deterministic_algorithms``'s state.

    Example:
        >>> import ndgrad
        >>> ndgrad.get_deterministic_debug_mode()
        0
    """
    if not _settings.are_deterministic_algorithms_enabled():
        return 0
    return 1 if _settings.is_deterministic_algorithms_warn_only_enabled() else 2


def set_flush_denormal(mode: bool) -> bool:
    """NumPy cannot flush denormals to zero, so this returns False (torch's answer on a CPU
    without the feature) and changes nothing."""
    if type(mode) is not builtins.bool:
        raise RuntimeError(f"flush_denormal expects a bool, but got {type(mode).__name__}")
    return False


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection on or off globally (``autograd.set_detect_anomaly``'s state)."""
    _anomaly._set(enabled, check_nan)


# ---- sym_* helpers: plain Python semantics (ndgrad traces no symbolic shapes) ----
_SYM_NUMBERS = (np.integer, np.floating, builtins.int, builtins.float)


def sym_int(a: Any) -> int:
    """``int(a)`` (truncates a float).

    Example:
        >>> import ndgrad
        >>> ndgrad.sym_int(-2.7), ndgrad.sym_float(3), ndgrad.sym_max(1, 2.0)
        (-2, 3.0, 2.0)
    """
    return builtins.int(a)


def sym_float(a: Any) -> float:
    """``float(a)``."""
    return builtins.float(a)


def _sym_check(a: Any) -> None:
    if not isinstance(a, _SYM_NUMBERS):
        raise AssertionError(f"expected {_SYM_NUMBERS}, got {type(a)}")


def sym_max(a: Any, b: Any) -> Any:
    """``max(a, b)``, a float if either is."""
    _sym_check(a)
    _sym_check(b)
    m = builtins.max(a, b)
    return builtins.float(m) if isinstance(a, builtins.float) or isinstance(b, builtins.float) \
        else m


def sym_min(a: Any, b: Any) -> Any:
    """``min(a, b)``, a float if either is."""
    _sym_check(a)
    _sym_check(b)
    m = builtins.min(a, b)
    return builtins.float(m) if isinstance(a, builtins.float) or isinstance(b, builtins.float) \
        else m


def sym_not(a: Any) -> bool:
    """``not a``."""
    return not a


def sym_sqrt(a: Any) -> float:
    """``math.sqrt(a)``."""
    return math.sqrt(a)


def sym_ite(b: bool, t: Any, f: Any) -> Any:
    """``t if b else f``; ``b`` must be a bool."""
    if type(b) is not builtins.bool:
        raise AssertionError(f"expected SymBool or bool, got {type(b)}")
    return t if b else f


def sym_sum(args: Any) -> Any:
    """``sum(args)`` (0 for none)."""
    return builtins.sum(args)


def get_device_module(device: Any = None) -> Any:
    """The module of a device type (``ndgrad.cpu``, ``ndgrad.cuda``, ``ndgrad.mps`` ...), as
    ``torch.get_device_module``; with no device, the current accelerator's, here the cpu's.

    >>> import ndgrad
    >>> ndgrad.get_device_module("cuda:0").__name__, ndgrad.get_device_module().__name__
    ('ndgrad.cuda', 'ndgrad.cpu')
    """
    import importlib
    if device is None:
        kind = "cpu"                  # no accelerator: torch answers with torch.cpu
    elif isinstance(device, (str, _device)):
        kind = _device(device).type
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect torch.device, str, or "
                           f"None")
    try:
        return importlib.import_module(f"ndgrad.{kind}")
    except ImportError:
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered "
                           f"as 'torch.{kind}'.") from None
