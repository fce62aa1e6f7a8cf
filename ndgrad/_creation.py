"""Tensor creation: ``tensor``, ``as_tensor``, ``from_numpy``, ``zeros`` ... and random numbers.

Example:
    >>> import ndgrad
    >>> _ = ndgrad.manual_seed(0)
    >>> ndgrad.zeros(2, 3).shape
    ndgrad.Size([2, 3])
    >>> ndgrad.tensor([1, 2]).dtype
    ndgrad.int64
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from . import _dlpack, _dtype, _layout, _unsigned
from ._generator import (Generator, default_generator, draw, normal_array, randint_array,
                         randperm_array, uniform_array)
from .autograd.grad_mode import _state as _grad_state
from . import _meta
from .tensor import Tensor, _wrap, check_device, factory_device
from .tensor import _as_shape as _raw_shape
from ._warn import warn_user, warn_user_once

__all__ = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "full", "empty", "arange",
           "linspace", "eye", "rand", "randn", "randint", "zeros_like", "ones_like", "full_like",
           "empty_like", "rand_like", "randn_like", "randint_like", "manual_seed", "seed",
           "initial_seed", "get_rng_state", "set_rng_state", "randperm"]

REQUIRES_GRAD_DTYPE_MSG = "Only Tensors of floating point and complex dtype can require gradients"


def _finish(arr: np.ndarray, requires_grad: bool, device: Any = None,
            default: bool = True) -> Tensor:
    # ``default``: a factory that takes the default device when given none (Note [Meta arrays])
    if (device is not None or default) and factory_device(device) is not None:
        arr = _meta.to_meta(arr)
    t = _wrap(arr)
    if requires_grad:
        if _dtype._FROM_NP[arr.dtype]._category < _dtype._FLOAT:
            raise RuntimeError(REQUIRES_GRAD_DTYPE_MSG)
        t._requires_grad = True
    if _grad_state.inference:
        t._inference = True        # created in inference_mode
    return t


def check_extras(fn: str, layout: Any, pin_memory: Any) -> bool:
    """Check a factory's ``layout=``/``pin_memory=`` keywords as the checking wrapper does
    (Note [Layout and pinned-memory arguments] in ``_signature.py``), for the factories that
    parse their own arguments; True when the result must become sparse (``finish_layout``)."""
    if pin_memory is not None and type(pin_memory) is not bool:
        raise TypeError(f"{fn}(): argument 'pin_memory' must be bool, not "
                        f"{type(pin_memory).__name__}")
    if pin_memory:
        _layout.no_pinned_memory()
    if layout is None or layout is _layout.strided:
        return False
    if type(layout) is not _layout.layout:
        raise TypeError(f"{fn}(): argument 'layout' must be layout, not {type(layout).__name__}")
    _layout.check_factory_layout(fn, layout)
    return True


def _on_meta(device: Any) -> bool:
    """Whether a factory given ``device`` creates a meta tensor (explicitly, by the default
    device or a ``with ndgrad.device(...)`` context): it must then allocate nothing."""
    return factory_device(device) is not None


def _meta_finish(shape: tuple, nd: Any, requires_grad: bool, order: Any = None) -> Tensor:
    return _finish(_meta.empty(shape, nd, order=order), requires_grad)


def _as_shape(args: Any) -> tuple:
    shape = _raw_shape(args)
    for n in shape:
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: "
                               f"{list(shape)}")
    return shape


def _ragged_message(data: Any) -> str:
    """PyTorch's message for nested sequences of unequal lengths (first mismatch, depth first)."""
    sizes = []
    d = data
    while isinstance(d, (list, tuple)):
        sizes.append(len(d))
        if not d:
            break
        d = d[0]

    def walk(seq: Any, dim: int) -> str:
        if dim >= len(sizes):
            return ""
        n = len(seq) if isinstance(seq, (list, tuple)) else None
        if n != sizes[dim]:
            return f"expected sequence of length {sizes[dim]} at dim {dim} (got {n})"
        for item in seq:
            msg = walk(item, dim + 1)
            if msg:
                return msg
        return ""

    return walk(data, 0) or "could not build a tensor from ragged nested sequences"


def _infer_array(data: Any, target: Optional[_dtype.dtype] = None) -> np.ndarray:
    """``data`` as an ndarray of the inferred dtype. With a ``target`` dtype the caller casts
    afterwards, so Python numbers keep full precision until then (no float32 detour)."""
    # large copies at a 64-byte boundary (Note [Aligned arrays] in _aligned.py)
    if isinstance(data, Tensor):       # laid out as a preserve_format clone (torch's copy)
        return _layout.preserve_copy(data._data)
    if isinstance(data, np.ndarray):
        # torch reads the array in place first; the copy shares nothing: no read-only warning
        _check_shareable(data, False)
        _dtype.from_numpy_dtype(data.dtype)
        return _layout.preserve_copy(data)
    if isinstance(data, np.generic):
        return np.array(data)
    if isinstance(data, list) and data and isinstance(data[0], np.ndarray):
        warn_user_once("Creating a tensor from a list of numpy.ndarrays is extremely slow. "
                       "Please consider converting the list to a single numpy.ndarray with "
                       "numpy.array() before converting to a tensor.")
    try:
        arr = np.array(data)
    except ValueError:
        raise ValueError(_ragged_message(data)) from None
    except TypeError:
        # NumPy 2.4 fails on nested lists of objects whose __array__ gives 0-d arrays (and,
        # after one gave a bfloat16, on any list of them): the tensors' numbers instead (the
        # dtype comes from the tensors all the same, _numpy_scalar_dtype)
        if not any(isinstance(v, Tensor) for v in _leaves(data)):
            raise
        arr = np.array(_numbers(data))
    kind = arr.dtype.kind
    if kind == "O" or (kind == "f" and arr.size and abs(arr).max() >= 2.0 ** 63):
        arr = _big_ints(data, arr, target)
        kind = arr.dtype.kind
    if target is not None and kind in "fiucb":
        return arr
    if isinstance(data, (list, tuple)) and kind in "fiucb" and (
            arr.size <= 4096 or isinstance(_first_leaf(data), (np.generic, np.ndarray, Tensor))):
        # (a long list is scanned only when it starts with a NumPy scalar or a tensor: ~50 ns
        # a leaf)
        found = _numpy_scalar_dtype(data)
        if found is not None:
            return arr.astype(found.np, copy=False)
    if kind == "f" or arr.dtype.name == "bfloat16":
        if not _contains_tensor(data):
            arr = arr.astype(_dtype.get_default_dtype().np)
    elif kind in "iu":
        if not _contains_tensor(data):
            if kind == "u" and arr.size and arr.max() > 2 ** 63 - 1:
                raise ValueError("Overflow when unpacking long long")
            arr = arr.astype(np.int64)
    elif kind == "c":
        if not _contains_tensor(data):
            arr = arr.astype(_dtype.get_default_dtype().to_complex().np)
    elif kind == "b":
        pass
    elif kind in "US":     # PyTorch names the element's type: str or bytes
        raise TypeError(f"new(): invalid data type '{'str' if kind == 'U' else 'bytes'}'")
    else:
        raise RuntimeError(f"Could not infer dtype of {_culprit(data)}")
    return arr


def _leaf_types(data: Any, out: set) -> set:
    """The types of the leaves of nested lists/tuples (``map(type, ...)`` on the innermost)."""
    if data and isinstance(data[0], (list, tuple)):
        for item in data:
            if isinstance(item, (list, tuple)):
                _leaf_types(item, out)
            else:
                out.add(type(item))
    else:
        out.update(map(type, data))
    return out


def _numbers(data: Any) -> Any:
    """Nested lists with each (one-element) tensor replaced by its Python number."""
    if isinstance(data, (list, tuple)):
        return [_numbers(v) for v in data]
    return data.item() if isinstance(data, Tensor) else data


def _first_leaf(data: Any) -> Any:
    while isinstance(data, (list, tuple)) and data:
        data = data[0]
    return data


_PY_NUMBERS = frozenset((float, int, bool, complex))


def _numpy_scalar_dtype(data: Any) -> Optional[_dtype.dtype]:
    """PyTorch's dtype for a sequence holding NumPy scalars or (one-element) tensors: each
    leaf's type (a NumPy scalar or a tensor its own dtype, a Python float the default dtype,
    an int int64, a complex the default complex type), promoted over the leaves; None when
    every leaf is a Python number."""
    types = _leaf_types(data, set())
    if types <= _PY_NUMBERS:            # the common case, decided in one set test
        return None
    found: Optional[_dtype.dtype] = None
    if any(issubclass(t, (Tensor, np.ndarray)) for t in types):
        for leaf in _leaves(data):       # tensors and arrays: each its own dtype
            if isinstance(leaf, (Tensor, np.ndarray)):
                a = leaf._data if isinstance(leaf, Tensor) else leaf
                d = _dtype._FROM_NP.get(a.dtype)
                if d is None:
                    return None
                found = d if found is None else _dtype.promote_types(found, d)
    for t in types:
        if issubclass(t, (Tensor, np.ndarray)):
            continue
        if issubclass(t, np.generic):
            d = _dtype._FROM_NP.get(np.dtype(t))
            if d is None:
                return None
        elif t is bool:
            d = _dtype.bool
        elif t is int:
            d = _dtype.int64
        elif t is float:
            d = _dtype.get_default_dtype()
        elif t is complex:
            d = _dtype.get_default_dtype().to_complex()
        else:
            return None
        found = d if found is None else _dtype.promote_types(found, d)
    return found


def _culprit(data: Any) -> str:
    """The type name PyTorch's "Could not infer dtype" names: the first element that is not a
    number (``torch.dtype`` for a dtype)."""
    for leaf in _leaves(data):
        if not isinstance(leaf, (bool, int, float, complex, np.generic, np.ndarray, Tensor)):
            return "torch.dtype" if isinstance(leaf, _dtype.dtype) else type(leaf).__name__
    return type(data).__name__


def _big_ints(data: Any, arr: np.ndarray, target: Optional[_dtype.dtype]) -> np.ndarray:
    """Python ints beyond int64 (NumPy keeps them as objects, or turns them into floats next to
    other ints). PyTorch reads them as floats when the target dtype or another element is a
    float, and refuses them otherwise."""
    items = arr.reshape(-1).tolist() if arr.dtype.kind == "O" else list(_leaves(data))
    if not all(isinstance(v, (int, float, complex)) for v in items):
        return arr                       # not numbers: reported by the caller
    if target is _dtype.bool:
        return np.array([bool(v) for v in items]).reshape(arr.shape)
    if any(isinstance(v, complex) for v in items) or (target is not None and target.is_complex):
        return np.array([complex(v) for v in items]).reshape(arr.shape)
    if any(isinstance(v, float) for v in items) or (target is not None
                                                     and target.is_floating_point):
        return np.array([float(v) for v in items]).reshape(arr.shape)
    if target is _dtype.uint64:          # read as unsigned 64-bit ints, each checked
        for v in items:
            _dtype.uint64_item(v)
        return np.array(items, dtype=np.uint64).reshape(arr.shape)
    raise ValueError("Overflow when unpacking long long")


def _leaves(data: Any) -> Any:
    if isinstance(data, (list, tuple)):
        for item in data:
            yield from _leaves(item)
    else:
        yield data


def _contains_tensor(data: Any) -> bool:
    if isinstance(data, Tensor):
        return True
    if isinstance(data, (list, tuple)) and data:
        return _contains_tensor(data[0])
    return False


def _check_scalar_tensors(data: Any, d: Optional[_dtype.dtype] = None) -> None:
    """Tensors inside a nested list are read as numbers: each must have one element (and be
    an integer or bool tensor when the requested dtype ``d`` is integer or bool)."""
    to_int = d is not None and not (d.is_floating_point or d.is_complex)
    for v in data:
        if isinstance(v, Tensor):
            if v._data.size != 1:
                raise ValueError("only one element tensors can be converted to Python scalars")
            if to_int and v._data.dtype.kind in "fcV":
                raise TypeError("only integer tensors of a single element can be converted to "
                                "an index")
        elif isinstance(v, (list, tuple)):
            _check_scalar_tensors(v, d)


def tensor(data: Any, dtype: Optional[_dtype.dtype] = None, device: Any = None,
           requires_grad: bool = False, pin_memory: Optional[bool] = None) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, numbers, ndarrays, tensors).

    Python floats become the default dtype (float32), ints int64, bools bool.

    >>> import ndgrad
    >>> ndgrad.tensor([[1.0, 2.0]], requires_grad=True)
    tensor([[1., 2.]], requires_grad=True)
    """
    check_extras("tensor", None, pin_memory)
    if isinstance(data, Tensor):
        warn_copy_construct("torch.tensor")
    d = _dtype.to_dtype(dtype) if dtype is not None else None
    if isinstance(data, (list, tuple)) and _contains_tensor(data):
        _check_scalar_tensors(data, d)
    arr = _infer_array(data, d)
    if d is not None:
        if not isinstance(data, (Tensor, np.ndarray)):
            _dtype.check_data(arr, d)  # Python numbers (Note [Python numbers into a dtype])
        arr = _dtype.cast(arr, d.np, copy=False)
    return _finish(arr, requires_grad, device)


def warn_copy_construct(name: str) -> None:
    """PyTorch's advice when a tensor is copy-constructed from a tensor (``name(tensor)``)."""
    warn_user("To copy construct from a tensor, it is recommended to use "
              "sourceTensor.detach().clone() or sourceTensor.detach().clone()"
              f".requires_grad_(True), rather than {name}(sourceTensor).")


def as_tensor(data: Any, dtype: Optional[_dtype.dtype] = None, device: Any = None) -> Tensor:
    """Like ``tensor`` but shares memory with ``data`` when it is already a tensor or an ndarray
    of the requested dtype."""
    if isinstance(data, Tensor):
        return data if dtype is None else data.to(dtype)
    if isinstance(data, np.ndarray):
        _check_shareable(data)
        d = _dtype.to_dtype(dtype).np if dtype is not None else data.dtype
        _dtype.from_numpy_dtype(d)
        return _finish(_dtype.cast(data, np.dtype(d), copy=False), False, device)
    return tensor(data, dtype=dtype, device=device)


def _check_shareable(a: np.ndarray, shared: bool = True) -> None:
    """PyTorch's refusals of an array a tensor would share: negative strides (with elements)
    and a non-native byte order; and, when the tensor does share it (``shared``), its warning
    for a read-only array."""
    st = a.strides
    if st and min(st) < 0 and a.size:
        raise ValueError("At least one stride in the given numpy array is negative, and tensors "
                         "with negative strides are not currently supported. (You can probably "
                         "work around this by making a copy of your array  with "
                         "array.copy().) ")
    if not a.dtype.isnative:
        raise ValueError("given numpy array has byte order different from the native byte "
                         "order. Conversion between byte orders is currently not supported.")
    if shared and not a.flags.writeable:
        warn_user_once("The given NumPy array is not writable, and PyTorch does not support "
                       "non-writable tensors. This means writing to this tensor will result in "
                       "undefined behavior. You may want to copy the array to protect its data "
                       "or make it writable before converting it to a tensor. This type of "
                       "warning will be suppressed for the rest of this program.")


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor sharing memory with ``ndarray`` (no copy); writes show through both ways."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    _check_shareable(ndarray)
    _dtype.from_numpy_dtype(ndarray.dtype)
    return _wrap(ndarray)


def from_dlpack(ext_tensor: Any, *, device: Any = None, copy: Optional[bool] = None) -> Tensor:
    """A tensor sharing memory with any DLPack producer (an object with ``__dlpack__``: a
    PyTorch tensor, a NumPy array, a JAX or CuPy array on the CPU ...) or a legacy DLPack
    capsule; ``copy=True`` copies. Writes show through both ways (Note [DLPack and NumPy]).
    bool, integer, float16, bfloat16, float32/64 and complex dtypes.

    >>> import numpy as np, ndgrad
    >>> a = np.arange(3.0)
    >>> t = ndgrad.from_dlpack(a)
    >>> t[0] = 7.0
    >>> a
    array([7., 1., 2.])
    """
    if device is not None:
        check_device(device)
    if not (_dlpack.is_capsule(ext_tensor) or hasattr(ext_tensor, "__dlpack__")):
        raise RuntimeError(_INVALID_CAPSULE)
    if getattr(ext_tensor, "is_neg", None) is not None and ext_tensor.is_neg():
        # PyTorch exports a negative view's raw memory (its values come out negated)
        raise BufferError("Can't import tensors with the negative bit set, use "
                          "tensor.resolve_neg()")
    try:
        arr = _dlpack.import_array(ext_tensor, copy=copy)
    except ValueError as e:         # a legacy capsule that was consumed already
        if "capsule" not in str(e).lower():
            raise
        raise RuntimeError(_INVALID_CAPSULE) from None
    _dtype.from_numpy_dtype(arr.dtype)
    return _wrap(arr)


_INVALID_CAPSULE = ("from_dlpack received an invalid capsule. Note that DLTensor capsules can "
                    "be consumed only once, so you might have already constructed a tensor "
                    "from it once.")


def _resolve(dtype: Any) -> np.dtype:
    return (_dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()).np


def zeros(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of zeros of the given shape."""
    try:
        shape = _as_shape(size)
    except RuntimeError as e:           # PyTorch's zeros words its own negative-size error
        if "negative dimension" in str(e):
            raise RuntimeError("zeros: Dimension size must be non-negative.") from None
        raise
    if _on_meta(device):
        return _meta_finish(shape, _resolve(dtype), requires_grad)
    return _finish(np.zeros(shape, dtype=_resolve(dtype)), requires_grad, device)


def ones(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones of the given shape."""
    if _on_meta(device):
        return _meta_finish(_as_shape(size), _resolve(dtype), requires_grad)
    return _finish(np.ones(_as_shape(size), dtype=_resolve(dtype)), requires_grad, device)


def empty(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
          memory_format: Any = None) -> Tensor:
    """An uninitialized tensor of the given shape (in ``memory_format``, by default
    contiguous)."""
    fmt = _layout.check(memory_format, "empty")
    if fmt is _layout.preserve_format and memory_format is not None:
        raise RuntimeError("unsupported memory format Preserve")
    if _on_meta(device):
        shape = _as_shape(size)
        return _meta_finish(shape, _resolve(dtype), requires_grad, _format_order(fmt, shape))
    return _finish(_layout.empty(_as_shape(size), _resolve(dtype), fmt), requires_grad, device)


def full(size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value`` (dtype inferred from the value)."""
    d = _dtype.result_type(fill_value) if dtype is None else _dtype.to_dtype(dtype)
    value = _dtype.scalar_to(_fill_value(fill_value), d)
    if _on_meta(device):
        return _meta_finish(_as_shape((size,)), d.np, requires_grad)
    return _finish(np.full(_as_shape((size,)), value, dtype=d.np), requires_grad, device)


def _fill_value(v: Any) -> Any:
    # A one-element tensor is read as its number (PyTorch's Scalar argument).
    return v.item() if isinstance(v, Tensor) else v


def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """Values from ``start`` to ``end`` (exclusive) by ``step``; int64 unless a bound is a float.

    >>> import ndgrad
    >>> ndgrad.arange(3)
    tensor([0, 1, 2])
    """
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if dtype is None:
        is_float = any(isinstance(v, (float, np.floating)) for v in vals)
        dtype = _dtype.get_default_dtype() if is_float else _dtype.int64
    d = _dtype.to_dtype(dtype)
    if d is _dtype.bool or d.is_complex or d in _dtype.BAREBONES:
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{d._torch_name}'")
    # PyTorch reads the bounds in int64 (integer dtypes) or double, checked, then computes the
    # length from those: arange(0, 3.5, dtype=int64) has 3 elements.
    integral = d._category == _dtype._INT
    lo, hi, st = (_dtype.scalar_to(v, _dtype.int64 if integral else _dtype.float64) for v in vals)
    if not integral and not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"unsupported range: {lo:g} -> {hi:g}")
    if not (st > 0 or st < 0):
        # A fractional step that an integer dtype truncates to 0 is a ValueError in PyTorch.
        raise (ValueError if integral and vals[2] != 0 else RuntimeError)("step must be nonzero")
    if not ((st > 0 and hi >= lo) or (st < 0 and hi <= lo)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = -((lo - hi) // st) if integral else math.ceil((hi - lo) / st)
    if not 0 <= n <= 2 ** 63 - 1:
        raise RuntimeError("invalid size, possible overflow?")
    if _on_meta(device):
        return _meta_finish((int(n),), d.np, requires_grad)
    if integral:
        with np.errstate(over="ignore"):
            arr = np.arange(n, dtype=np.int64) * np.int64(st) + np.int64(lo)
    elif d.np in _dtype.HALF_NP:
        # float16/bfloat16 as torch's kernel: start and step in float32, each element computed
        # in float32 and rounded once (Note [Double to half]). Its vector loop restarts from a
        # rounded running start every vector, which this does not follow: with a step that is
        # not exact in the dtype, elements past the first 16 can differ in the last bit.
        f32 = np.float32
        with np.errstate(over="ignore"):
            arr = f32(lo) + f32(st) * np.arange(n, dtype=f32)
    else:
        arr = lo + st * np.arange(n, dtype=np.float64)
    return _finish(arr.astype(d.np), requires_grad, device)


def linspace(start: Any, end: Any, steps: int, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    if dtype is not None:
        _unsigned.check_dtype("linspace_cpu", _dtype.to_dtype(dtype))
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    for name, v in (("start", start), ("end", end)):
        if isinstance(v, Tensor) and v._data.ndim != 0:
            raise RuntimeError(f"linspace only supports 0-dimensional start and end tensors, "
                               f"but got {name} with {v._data.ndim} dimension(s).")
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end)]
    if dtype is None:
        cplx = any(isinstance(v, (complex, np.complexfloating)) for v in vals)
        d = _dtype.get_default_dtype().to_complex() if cplx else _dtype.get_default_dtype()
    else:
        d = _dtype.to_dtype(dtype)
    # PyTorch converts the bounds to the dtype (checked); a complex dtype's real and imaginary
    # parts are the real dtype's linspace of the bounds' parts, bit for bit.
    lo, hi = (_dtype.scalar_to(v, d) for v in vals)
    if _on_meta(device):
        return _meta_finish((steps,), d.np, requires_grad)
    if d.is_complex:
        r = d.to_real()
        lo_c, hi_c = complex(lo), complex(hi)
        arr = np.empty(steps, d.np)
        arr.real = _linspace_real(lo_c.real, hi_c.real, steps, r)
        arr.imag = _linspace_real(lo_c.imag, hi_c.imag, steps, r)
    else:
        arr = _linspace_real(lo, hi, steps, d)
    return _finish(arr.astype(d.np), requires_grad, device)


def _linspace_real(lo: Any, hi: Any, steps: int, d: Any) -> np.ndarray:
    """torch's linspace of the bounds ``lo``, ``hi`` (already of the real dtype ``d``): the
    first half filled forwards from ``lo``, the second backwards from ``hi``, with a double
    step for integer dtypes."""
    if d._category == _dtype._INT:
        work = np.float64
    else:
        work = d.np.type if d.itemsize > 2 else np.float32
    lo_w, hi_w = np.asarray(lo, dtype=work), np.asarray(hi, dtype=work)
    idx = np.arange(steps)
    with np.errstate(all="ignore"):
        step = (hi_w - lo_w) / work(max(steps - 1, 1)) if steps > 1 else work(0)
        half = steps // 2
        if work in (np.float32, np.float64) and (d._category == _dtype._INT or d.itemsize > 2):
            # torch's kernel is compiled with fused multiply-adds (Note [linspace's fma])
            mult = np.where(idx < half, idx, -(steps - idx - 1)).astype(work)
            arr = _fma(mult, step, np.where(idx < half, lo_w, hi_w).astype(work))
        elif d in (_dtype.float16, _dtype.bfloat16):
            # float16/bfloat16: torch rounds every operation to the dtype, the index and the
            # divisor included (``Half * int64`` converts the integer to Half first)
            h = d.np.type

            def rnd(x: Any) -> np.ndarray:
                return np.asarray(x, np.float32).astype(h).astype(np.float32)
            lo_h, hi_h = rnd(lo_w), rnd(hi_w)
            step = rnd(rnd(hi_h - lo_h) / rnd(max(steps - 1, 1)))
            arr = np.where(idx < half, rnd(lo_h + rnd(step * rnd(idx))),
                           rnd(hi_h - rnd(step * rnd(steps - idx - 1))))
        else:
            arr = np.where(idx < half, lo_w + step * idx.astype(work),
                           hi_w - step * (steps - idx - 1).astype(work))
        if steps == 1:
            arr = np.full(1, lo_w)
    return arr.astype(d.np)


# Note [linspace's fma]
# torch's CPU linspace computes ``start + step * i`` for the first half and ``end - step *
# (steps - 1 - i)`` for the second, and its kernels are compiled with FMA contraction: each
# value is rounded once, not after the product and again after the sum. The two differ in the
# last bit for most sizes, and visibly where the exact value is 0 (``linspace(-1, 1, 7)[3]``
# is 5.55e-17 in torch), which decides which side of a pixel an identity ``affine_grid``
# samples. ``_fma`` rounds ``a * b + c`` once: in float32 through the exact float64 product and
# an exactly split sum (a float64 that falls on a float32 midpoint goes the true sum's way);
# in float64 through the error-free product and sum (Dekker, Knuth), exact but for ties of the
# final addition.
def _fma(a: np.ndarray, b: Any, c: np.ndarray) -> np.ndarray:
    """``a * b + c`` (arrays of one float dtype, float32 or float64) rounded once."""
    if a.dtype == np.float32:
        a64, b64, c64 = a.astype(np.float64), np.float64(b), c.astype(np.float64)
        p = a64 * b64                       # exact: a 24-bit by 24-bit product
        s = p + c64
        t = s - p
        e = (p - (s - t)) + (c64 - t)       # s + e == p + c exactly
        r = s.astype(np.float32)
        up = np.nextafter(r, np.float32(np.inf))
        down = np.nextafter(r, np.float32(-np.inf))
        back = r.astype(np.float64)
        hi_tie = (e != 0) & (s == (back + up.astype(np.float64)) / 2)
        lo_tie = (e != 0) & (s == (back + down.astype(np.float64)) / 2)
        r = np.where(hi_tie & (e > 0), up, np.where(lo_tie & (e < 0), down, r))
        return r
    b = np.float64(b)
    p = a * b
    split = 134217729.0                      # 2**27 + 1
    ca, cb = split * a, split * b
    ah = ca - (ca - a)
    al = a - ah
    bh = cb - (cb - b)
    bl = b - bh
    ep = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    t = s - p
    es = (p - (s - t)) + (c - t)
    r = s + (ep + es)
    return np.where(np.isfinite(r), r, s)     # near overflow the split is not exact: one add


def eye(n: int, m: Optional[int] = None, *, dtype: Any = None, device: Any = None,
        requires_grad: bool = False) -> Tensor:
    """The identity matrix (``n`` x ``m``)."""
    if dtype is not None:
        _unsigned.check_dtype("eye", _dtype.to_dtype(dtype))
    for name, v in (("n", n), ("m", m)):
        if v is not None and v < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {v}")
    if _on_meta(device):
        return _meta_finish((n, n if m is None else m), _resolve(dtype), requires_grad)
    return _finish(np.eye(n, m, dtype=_resolve(dtype)), requires_grad, device)


# ---------------------------------------------------------------------------- random
class _RNG:
    """The default generator's NumPy view (Note [Random streams] in ``_generator.py``)."""
    gen = default_generator._np


def manual_seed(seed: int) -> Generator:
    """Seed ndgrad's default random generator (``rand``, ``randn``, ``randperm``, samplers
    ...); returns it."""
    return default_generator.manual_seed(int(seed))     # int(): as torch's function


def seed() -> int:
    """Seed the default generator non-deterministically and return the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The default generator's seed."""
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The default generator's state (a uint8 tensor)."""
    return default_generator.get_state()


def set_rng_state(new_state: Tensor) -> None:
    """Restore the default generator's state from ``get_rng_state``."""
    default_generator.set_state(new_state)


def randperm(n: int, *, generator: Optional[Generator] = None, dtype: Any = None,
             layout: Any = None, device: Any = None, requires_grad: bool = False,
             pin_memory: Optional[bool] = None) -> Tensor:
    """A random permutation of ``0 .. n-1``, drawn as torch draws it: the same seed gives
    torch's permutation (Note [Random streams]).

    >>> import ndgrad
    >>> ndgrad.randperm(4, generator=ndgrad.Generator().manual_seed(0))
    tensor([0, 1, 3, 2])
    """
    check_extras("randperm", layout, pin_memory)
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.int64
    _unsigned.check_dtype("randperm", d)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    if d is _dtype.bool or d.is_complex:
        raise NotImplementedError(f"\"randperm\" not implemented for '{d._torch_name}'")
    # torch's limits: floats count exactly up to 2^(mantissa bits + 1) (no check for bfloat16)
    if d is _dtype.float16 and n > 2049:
        raise RuntimeError("n cannot be greater than 2049 for Half type.")
    if d in (_dtype.float32, _dtype.float64):
        bits = np.finfo(d.np).nmant + 1
        if n > 2 ** bits + 1:
            raise RuntimeError(f"n cannot be greater than 2^{bits}+1 for {d._torch_name} type.")
    if not d.is_floating_point and not d.is_complex and n > 0 and \
            n - 1 > np.iinfo(d.np).max:
        raise RuntimeError(f"value cannot be converted to type {d.np.name}_t without overflow")
    if _on_meta(device):
        return _meta_finish((int(n),), d.np, requires_grad)
    arr = draw(_randperm_array, int(n), d.np, generator)
    return _finish(arr, requires_grad, device)


# The draws of the functions below go through ``draw`` (Note [Draws in traced functions] in
# _generator.py): a compiled function draws them again at run time.
def _randperm_array(n: int, nd: np.dtype, generator: Optional[Generator]) -> np.ndarray:
    return randperm_array(n, generator).astype(nd)


def _rand_array(shape: tuple, nd: np.dtype, generator: Optional[Generator]) -> np.ndarray:
    if nd.kind != "c":
        return uniform_array(shape, 0.0, 1.0, nd, generator)
    return uniform_array(shape + (2,), 0.0, 1.0, nd.type(0).real.dtype, generator
                         ).view(nd)[..., 0]


def _randn_array(shape: tuple, nd: np.dtype, generator: Optional[Generator]) -> np.ndarray:
    if nd.kind == "c":      # real and imaginary parts interleaved, each of variance 1/2
        part = nd.type(0).real.dtype
        arr = normal_array(shape + (2,), 0.0, math.sqrt(0.5), part, generator).view(nd)[..., 0]
    else:
        arr = normal_array(shape, 0.0, 1.0, nd, generator)
    return arr.astype(nd)


def _randint_array(low: int, high: int, shape: tuple, nd: np.dtype,
                   generator: Optional[Generator]) -> np.ndarray:
    return randint_array(low, high, shape, generator).astype(nd)


def _like_array(kind: str, input: Tensor, nd: np.dtype, memory_format: Any, bounds: tuple
                ) -> np.ndarray:
    """``rand_like``/``randn_like``/``randint_like``'s samples, laid out like ``input``."""
    shape = input._data.shape
    if kind == "randint_like":
        r = randint(bounds[0], bounds[1], shape, dtype=_dtype._FROM_NP[nd], device="cpu")
    else:
        r = (rand if kind == "rand_like" else randn)(shape, dtype=_dtype._FROM_NP[nd],
                                                     device="cpu")
    return _like_layout(input, r._data, memory_format, kind)


def _floating(dtype: Any, fn: str) -> np.dtype:
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    if not (d.is_floating_point or d.is_complex):
        raise NotImplementedError(f"\"{fn}\" not implemented for '{d._torch_name}'")
    return d.np


def rand(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
         generator: Any = None) -> Tensor:
    """Uniform samples in [0, 1)."""
    nd = _floating(dtype, "check_uniform_bounds")
    if _on_meta(device):
        return _meta_finish(_as_shape(size), nd, requires_grad)
    return _finish(draw(_rand_array, _as_shape(size), nd, generator), requires_grad, device)


def randn(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
          generator: Any = None) -> Tensor:
    """Standard normal samples."""
    nd = _floating(dtype, "normal_kernel_cpu")
    if _on_meta(device):
        return _meta_finish(_as_shape(size), nd, requires_grad)
    return _finish(draw(_randn_array, _as_shape(size), nd, generator), requires_grad, device)


def randint(low: Any = None, high: Any = None, size: Any = None, *, generator: Any = None,
            dtype: Any = None, layout: Any = None, device: Any = None,
            pin_memory: Optional[bool] = None, requires_grad: bool = False) -> Tensor:
    """Integers uniformly drawn from [low, high): ``randint(high, size)``, ``randint(low, high,
    size)``, or by keyword (``randint(3, size=(2,))``, ``randint(high=3, size=(2,))``).

    >>> import ndgrad
    >>> _ = ndgrad.manual_seed(0)
    >>> ndgrad.randint(3, size=(4,))
    tensor([2, 0, 2, 0])
    """
    check_extras("randint", layout, pin_memory)
    position = 3
    if size is None:
        low, high, size, position = 0, low, high, 2
    elif high is None:
        low, high = 0, low
    elif low is None:
        low = 0
    if high is None or size is None:
        raise TypeError("randint() missing required argument 'size'")
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"randint(): argument 'size' (position {position}) must be tuple of "
                        f"ints, not {type(size).__name__}")
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.int64
    _check_random_bounds(low, high, d)
    if _on_meta(device):
        return _meta_finish(_as_shape((size,)), d.np, requires_grad)
    arr = draw(_randint_array, low, high, _as_shape((size,)), d.np, generator)
    return _finish(arr, requires_grad, device)


_RANDOM_TYPE_NAMES = {"uint8": "unsigned char", "int8": "signed char", "int16": "short int",
                      "int32": "int", "int64": "long int", "bool": "bool",
                      "uint16": "short unsigned int", "uint32": "unsigned int",
                      "uint64": "long unsigned int"}


def _check_random_bounds(low: Any, high: Any, d: _dtype.dtype) -> None:
    """PyTorch's checks of ``randint``'s bounds against int64 and an integer or bool dtype."""
    for v in (low, high):
        if isinstance(v, int) and not -2 ** 63 <= v <= 2 ** 63 - 1:
            raise ValueError("Overflow when unpacking long long")
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    if d.is_complex:
        raise RuntimeError("check_random_bounds handles only integral, floating-point and "
                           "boolean types")
    rng = (0, 1) if d is _dtype.bool else _dtype._INT_RANGE.get(d)
    if rng is None:
        return
    name = _RANDOM_TYPE_NAMES[d.name]
    if not rng[0] <= low <= rng[1]:
        raise RuntimeError(f"from is out of bounds for {name}")
    if not rng[0] <= high - 1 <= rng[1]:
        raise RuntimeError(f"to - 1 is out of bounds for {name}")


def _like(t: Tensor, dtype: Any) -> tuple:
    return t._data.shape, (_dtype.to_dtype(dtype).np if dtype is not None else t._data.dtype)


def _like_on_meta(input: Tensor, device: Any) -> bool:
    """Whether a ``*_like`` factory makes a meta tensor: ``device``, by default ``input``'s."""
    if device is None:
        return type(input._data) is _meta.MetaArray
    return factory_device(check_device(device)) is not None


def _meta_like(input: Tensor, nd: Any, memory_format: Any, fn: str,
               requires_grad: bool) -> Tensor:
    fmt = _layout.check(memory_format, fn)
    x = input._data
    if fmt is _layout.preserve_format:
        arr = _meta.like(x, dtype=nd) if _layout.is_non_overlapping_and_dense(x) else \
            _meta.empty(x.shape, nd, order=_meta._dense_order(x))
    else:
        arr = _meta.empty(x.shape, nd, order=_format_order(fmt, x.shape))
    return _finish(arr, requires_grad, None, False)


def _format_order(fmt: Any, shape: tuple) -> Any:
    """The dims outermost first of a memory format (None: C order)."""
    if fmt is _layout.channels_last and len(shape) == 4:
        return (0, 2, 3, 1)
    if fmt is _layout.channels_last_3d and len(shape) == 5:
        return (0, 2, 3, 4, 1)
    return None


def _like_layout(input: Tensor, arr: np.ndarray, memory_format: Any, fn: str) -> np.ndarray:
    """``arr`` (C-ordered, the shape of ``input``) laid out in ``memory_format`` (by default
    ``preserve_format``: like ``input``)."""
    fmt = _layout.check(memory_format, fn)
    if fmt is _layout.contiguous_format or (fmt is _layout.preserve_format
                                            and input._data.flags.c_contiguous):
        return arr
    out = _layout.empty(arr.shape, arr.dtype, fmt, input._data)
    np.copyto(out, arr)
    return out


def zeros_like(input: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    """Zeros with the shape (and, by default, the layout) of ``input``."""
    shape, nd = _like(input, dtype)
    if _like_on_meta(input, device):
        return _meta_like(input, nd, memory_format, "zeros_like", requires_grad)
    arr = _like_layout(input, np.zeros(shape, dtype=nd), memory_format, "zeros_like")
    return _finish(arr, requires_grad, device, False)


def ones_like(input: Tensor, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    """Ones with the shape (and, by default, the layout) of ``input``."""
    shape, nd = _like(input, dtype)
    if _like_on_meta(input, device):
        return _meta_like(input, nd, memory_format, "ones_like", requires_grad)
    arr = _like_layout(input, np.ones(shape, dtype=nd), memory_format, "ones_like")
    return _finish(arr, requires_grad, device, False)


def empty_like(input: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    """An uninitialized tensor with the shape (and, by default, the layout) of ``input``."""
    shape, nd = _like(input, dtype)
    if _like_on_meta(input, device):
        return _meta_like(input, nd, memory_format, "empty_like", requires_grad)
    fmt = _layout.check(memory_format, "empty_like")
    return _finish(_layout.empty(shape, nd, fmt, input._data), requires_grad, device, False)


def full_like(input: Tensor, fill_value: Any, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    """``fill_value`` everywhere, with the shape (and, by default, the layout) of ``input``."""
    shape, nd = _like(input, dtype)
    value = _dtype.scalar_to(_fill_value(fill_value), _dtype._FROM_NP[nd])
    if _like_on_meta(input, device):
        return _meta_like(input, nd, memory_format, "full_like", requires_grad)
    arr = _like_layout(input, np.full(shape, value, dtype=nd), memory_format, "full_like")
    return _finish(arr, requires_grad, device, False)


def rand_like(input: Tensor, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    """Uniform samples in [0, 1) with the shape of ``input``."""
    _, nd = _like(input, dtype)
    if _like_on_meta(input, device):
        return _meta_like(input, nd, memory_format, "rand_like", requires_grad)
    return _finish(draw(_like_array, "rand_like", input, nd, memory_format, ()), requires_grad,
                   None, False)


def randn_like(input: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    """Standard normal samples with the shape of ``input``."""
    _, nd = _like(input, dtype)
    if _like_on_meta(input, device):
        return _meta_like(input, nd, memory_format, "randn_like", requires_grad)
    return _finish(draw(_like_array, "randn_like", input, nd, memory_format, ()), requires_grad,
                   None, False)


def randint_like(input: Tensor, low: int, high: Any = None, *, dtype: Any = None,
                 layout: Any = None, device: Any = None, pin_memory: Optional[bool] = None,
                 requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    """Integers uniformly drawn from [low, high) (``randint_like(x, high)``: [0, high)) with the
    shape of ``input``."""
    check_extras("randint_like", layout, pin_memory)
    if high is None:
        low, high = 0, low
    _, nd = _like(input, dtype)
    if _like_on_meta(input, device):
        return _meta_like(input, nd, memory_format, "randint_like", requires_grad)
    return _finish(draw(_like_array, "randint_like", input, nd, memory_format, (low, high)),
                   requires_grad, None, False)
