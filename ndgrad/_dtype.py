"""Dtypes: ndgrad's names for NumPy dtypes, and PyTorch's type promotion.

Example:
    >>> import ndgrad
    >>> ndgrad.float32.is_floating_point
    True
    >>> ndgrad.promote_types(ndgrad.int64, ndgrad.float16)
    ndgrad.float16
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np
from ml_dtypes import bfloat16 as _np_bfloat16

__all__ = [
    "dtype", "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "bool", "half",
    "float", "double",
    "cfloat", "cdouble", "short", "int", "long", "get_default_dtype", "set_default_dtype",
    "promote_types", "result_type",
]

# Categories, in promotion order: a higher category wins regardless of size.
_BOOL, _INT, _FLOAT, _COMPLEX = 0, 1, 2, 3


class dtype:
    """A tensor element type (``ndgrad.float32`` ...), wrapping a NumPy dtype."""

    __slots__ = ("name", "np", "itemsize", "is_floating_point", "is_complex", "is_signed",
                 "_category", "_torch_name")

    def __init__(self, name: str, np_dtype, category: _builtins.int, torch_name: str) -> None:
        self.name = name
        self.np = nd = np.dtype(np_dtype)
        self.itemsize = nd.itemsize
        self._category = category
        self.is_floating_point = category == _FLOAT
        self.is_complex = category == _COMPLEX
        self.is_signed = not (name.startswith("uint") or name == "bool")
        self._torch_name = torch_name

    def __repr__(self) -> str:
        return f"ndgrad.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))

    def to_real(self) -> "dtype":
        """The real counterpart of a complex dtype (itself otherwise)."""
        return {"complex64": float32, "complex128": float64}.get(self.name, self)

    def to_complex(self) -> "dtype":
        return {"float64": complex128, "complex128": complex128}.get(self.name, complex64)


float16 = dtype("float16", np.float16, _FLOAT, "Half")
bfloat16 = dtype("bfloat16", _np_bfloat16, _FLOAT, "BFloat16")
float32 = dtype("float32", np.float32, _FLOAT, "Float")
float64 = dtype("float64", np.float64, _FLOAT, "Double")
complex64 = dtype("complex64", np.complex64, _COMPLEX, "ComplexFloat")
complex128 = dtype("complex128", np.complex128, _COMPLEX, "ComplexDouble")
uint8 = dtype("uint8", np.uint8, _INT, "Byte")

#: Called once, the first time a barebones unsigned dtype is used (Note [Barebones unsigned
#: dtypes]); ``ops/_dispatch`` registers the switch of its hot-path flag here.
UNSIGNED_WATCHERS: list = []
UNSIGNED_SEEN = [False]
_ARMED = [False]    # set at the end of ``import ndgrad``: module-level tables read ``.np`` freely


def unsigned_seen() -> None:
    """Switch on the barebones-unsigned checks (idempotent)."""
    if _ARMED[0] and not UNSIGNED_SEEN[0]:
        UNSIGNED_SEEN[0] = True
        for w in UNSIGNED_WATCHERS:
            w()


_np_slot: Any = dtype.__dict__["np"]     # the slot descriptor, read without the switch


class _Barebones(dtype):
    """uint16/uint32/uint64: reading ``.np`` (every way of making an array of the dtype)
    switches the unsigned checks on."""

    __slots__ = ()

    @property
    def np(self) -> np.dtype:
        unsigned_seen()
        return _np_slot.__get__(self)

    @np.setter
    def np(self, value: np.dtype) -> None:
        _np_slot.__set__(self, value)


uint16 = _Barebones("uint16", np.uint16, _INT, "UInt16")
uint32 = _Barebones("uint32", np.uint32, _INT, "UInt32")
uint64 = _Barebones("uint64", np.uint64, _INT, "UInt64")
int8 = dtype("int8", np.int8, _INT, "Char")
int16 = dtype("int16", np.int16, _INT, "Short")
int32 = dtype("int32", np.int32, _INT, "Int")
int64 = dtype("int64", np.int64, _INT, "Long")
bool = dtype("bool", np.bool_, _BOOL, "Bool")  # noqa: A001 - PyTorch's name
half, float, double = float16, float32, float64  # noqa: A001
cfloat, cdouble = complex64, complex128
short, int, long = int16, int32, int64  # noqa: A001

#: The NumPy dtypes of float16 and bfloat16: the types torch computes in float32 and rounds
#: once (Note [Low-precision accumulation] in ops/reduction.py, and the kernels that say so).
HALF_NP = frozenset((float16.np, bfloat16.np))

_F64 = np.dtype(np.float64)
_F32 = np.dtype(np.float32)


# Note [Double to half]
# torch converts a double to Half or BFloat16 by way of float (c10's conversions start from a
# float), so the value is rounded twice: a double just past a float16 rounding boundary can
# land on it in float32 and then round to even (about 7 in 200,000 random values differ from
# a direct rounding). Every float64 -> float16/bfloat16 conversion of values (casts, copies,
# in-place results, tensor creation) goes through ``cast`` or ``copyto``; a Python float
# operand that torch converts to the dtype goes through ``number_in`` (clamp/hardtanh bounds,
# nan_to_num replacements, threshold's value, hardshrink's lambda, comparisons, pow, fmod,
# remainder, xlogy and the other ``_binary_op`` numbers) or ``scalar_to`` (the checked ones:
# fill_, full, masked_fill, where, index_fill, scatter, alpha ...). Other kernels compute in
# float32 with the number in float32, never rounded to the dtype: mul/div (Note [Half times a
# Python number] in ops/pointwise.py), floor/trunc division, threshold's comparison,
# softshrink, arange's elements, normal_/uniform_ samples. tests/test_half_python_numbers.py
# pins each op to torch bitwise.
def cast(x: np.ndarray, dt: np.dtype, copy: builtins.bool = True) -> np.ndarray:
    """``x.astype(dt, copy=copy)``, float64 to float16/bfloat16 rounded through float32 as
    torch does (Note [Double to half]).

    >>> import numpy as np
    >>> from ndgrad import _dtype
    >>> v = np.array([1.1967773426534207])
    >>> _dtype.cast(v, np.dtype(np.float16))[0].item(), v.astype(np.float16)[0].item()
    (1.197265625, 1.1962890625)
    """
    if x.dtype == _F64 and dt in HALF_NP:
        return x.astype(_F32).astype(dt, copy=False)
    return x.astype(dt, copy=copy)


def number_in(value: Any, dt: np.dtype) -> Any:
    """A Python float operand of an op computing in ``dt``, as torch converts it to the dtype:
    for float16/bfloat16 rounded through float32 (Note [Double to half]; returned as the Python
    float of the rounded value, which NumPy then stores exactly); anything else unchanged.

    >>> import numpy as np
    >>> from ndgrad import _dtype
    >>> v = 1 + 2 ** -11 + 2 ** -40                 # just past a float16 tie
    >>> _dtype.number_in(v, np.dtype(np.float16)), np.float16(v).item()
    (1.0, 1.0009765625)
    """
    if type(value) is not _pyfloat or dt not in HALF_NP:
        return value
    if -65504.0 <= value <= 65504.0:     # the common case: no overflow to silence
        return _pyfloat(_F32.type(value).astype(dt))
    with np.errstate(over="ignore"):
        return _pyfloat(_F32.type(value).astype(dt))


def copyto(dst: np.ndarray, src: Any) -> None:
    """``np.copyto(dst, src, casting="unsafe")`` with ``cast``'s rounding."""
    if dst.dtype in HALF_NP and getattr(src, "dtype", None) == _F64:
        src = src.astype(_F32)
    np.copyto(dst, src, casting="unsafe")


_ALL = (float16, bfloat16, float32, float64, complex64, complex128,
        uint8, int8, int16, int32, int64, bool, uint16, uint32, uint64)

# Note [Barebones unsigned dtypes]
# uint16, uint32 and uint64 are torch's "limited support" dtypes: they exist, are created,
# cast, copied, viewed, printed, saved and sorted, but promote with no other integer (or bool,
# or complex) dtype and most kernels refuse them. ``promote_types`` raises torch's error for a
# mixed pair; ``ops/_unsigned.py`` holds the ops that accept them and raises torch's
# NotImplementedError for every other op (checked in ``ops/_dispatch.apply`` and the entry
# points that do not go through it, only once such a tensor exists: ``UNSIGNED_SEEN``).
BAREBONES = frozenset((uint16, uint32, uint64))
BAREBONES_NP = frozenset(_np_slot.__get__(d) for d in BAREBONES)
_FROM_NP: dict = {_np_slot.__get__(d): d for d in _ALL}
_NAMES = {d.name: d for d in _ALL}


def _by_name(name: str) -> dtype:
    return _NAMES[name]


def from_numpy_dtype(np_dtype) -> dtype:
    """The ndgrad dtype of a NumPy dtype, with PyTorch's error for unsupported ones."""
    try:
        d = _FROM_NP[np_dtype]
    except (KeyError, TypeError):
        nd = np.dtype(np_dtype)
        if nd not in _FROM_NP:
            raise _unsupported(nd) from None
        d = _FROM_NP[nd]
    if d.__class__ is _Barebones:
        unsigned_seen()
    return d


def _unsupported(nd: np.dtype) -> TypeError:
    return TypeError(
        f"can't convert np.ndarray of type numpy.{nd.type.__name__}. The only supported types "
        "are: float64, float32, float16, complex64, complex128, int64, int32, int16, int8, "
        "uint64, uint32, uint16, uint8, and bool.")


def to_dtype(d) -> dtype:
    """Accept an ndgrad dtype, a NumPy dtype/type or a Python type and return the ndgrad dtype."""
    if isinstance(d, dtype):
        return d
    if d is _pyfloat:
        return _default[0]
    if d is _pyint:
        return int64
    if d is _pybool:
        return bool
    if d is _pycomplex:
        return _default[0].to_complex()
    return from_numpy_dtype(np.dtype(d))


import builtins as _builtins  # noqa: E402

_pyfloat, _pyint, _pybool, _pycomplex = (_builtins.float, _builtins.int, _builtins.bool,
                                         _builtins.complex)

_default = [float32]


def get_default_dtype() -> dtype:
    """The dtype of Python floats turned into tensors (``float32`` unless changed)."""
    return _default[0]


def set_default_dtype(d: dtype) -> None:
    """Set the default floating point dtype (float16, bfloat16, float32 or float64): the dtype
    of Python floats in ``tensor``, of ``zeros``/``randn``/``arange(1.)`` ... and of integer
    tensors promoted by ``/`` or ``exp``. Only ndgrad dtype objects are accepted, as in PyTorch.

    >>> import ndgrad
    >>> ndgrad.set_default_dtype(ndgrad.float64)
    >>> (ndgrad.tensor([1]) / 2).dtype
    ndgrad.float64
    >>> ndgrad.set_default_dtype(ndgrad.float32)
    """
    if not isinstance(d, dtype):
        raise TypeError("invalid dtype object: only floating-point types are supported as the "
                        "default type")
    if not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _default[0] = d


# Promotion inside one category is size-based; across categories the higher wins.
_ORDER = {bool: 0, uint8: 1, int8: 2, int16: 3, int32: 4, int64: 5, float16: 6, bfloat16: 7,
          float32: 8, float64: 9, complex64: 10, complex128: 11, uint16: 3, uint32: 4, uint64: 5}


def promote_types(a: dtype, b: dtype) -> dtype:
    """PyTorch's ``promote_types``: the smallest dtype both ``a`` and ``b`` cast to safely."""
    if a is b:
        return a
    r = _PROMOTED.get((a, b))
    if r is None:
        r = _PROMOTED[a, b] = _promote(a, b)
    return r


_PROMOTED: dict = {}     # (a, b) -> promote_types(a, b): one dict lookup on the hot path


def _promote(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    if (a.__class__ is _Barebones or b.__class__ is _Barebones) and not (
            a.is_floating_point or b.is_floating_point):
        raise RuntimeError("Promotion for uint16, uint32, uint64 types is not supported, "
                           f"attempted to promote {a._torch_name} and {b._torch_name}")
    pair = {a, b}
    if pair == {float16, bfloat16}:
        return float32
    if pair == {uint8, int8}:
        return int16
    if a._category == _COMPLEX or b._category == _COMPLEX:
        real = _promote(a.to_real(), b.to_real())
        return complex128 if real is float64 else complex64
    return a if _ORDER[a] > _ORDER[b] else b


def scalar_category(value) -> _builtins.int:
    """The promotion category of a Python number (bool < int < float < complex)."""
    t = type(value)
    if t is _pybool or t is np.bool_:
        return _BOOL
    if t is _pyint or isinstance(value, np.integer):
        return _INT
    if t is _pyfloat or isinstance(value, np.floating):
        return _FLOAT
    if t is _pycomplex or isinstance(value, np.complexfloating):
        return _COMPLEX
    raise TypeError(f"unsupported scalar type {t.__name__}")


def _default_for_category(cat: _builtins.int) -> dtype:
    if cat == _BOOL:
        return bool
    if cat == _INT:
        return int64
    if cat == _FLOAT:
        return _default[0]
    return _default[0].to_complex()


def result_type(*operands) -> dtype:
    """PyTorch's ``result_type`` over tensors and Python scalars.

    Tensors with dimensions take priority over zero-dimensional tensors, which take priority
    over Python scalars; a lower-priority operand only matters if its category is higher.

    >>> import ndgrad
    >>> ndgrad.result_type(ndgrad.ones(2, dtype=ndgrad.int32), 2.5)
    ndgrad.float32
    """
    dim_result = zero_result = scalar_cat = None
    for op in operands:
        d = getattr(op, "dtype", None)
        if isinstance(d, dtype):
            if op.ndim > 0:
                dim_result = d if dim_result is None else promote_types(dim_result, d)
            else:
                zero_result = d if zero_result is None else promote_types(zero_result, d)
        else:
            c = scalar_category(op)
            scalar_cat = c if scalar_cat is None else max(scalar_cat, c)
    result = dim_result
    if zero_result is not None:
        if result is None:
            result = zero_result
        elif zero_result._category > result._category:
            result = _promote_category(result, zero_result)
    if scalar_cat is not None:
        if result is None:
            result = _default_for_category(scalar_cat)
        elif scalar_cat > result._category:
            result = _promote_category(result, _default_for_category(scalar_cat))
    if result is None:
        raise TypeError("result_type() received an invalid combination of arguments - got ()")
    return result


def _promote_category(low: dtype, high: dtype) -> dtype:
    # A higher-category operand of lower priority: complex keeps the precision of a float.
    if high._category == _COMPLEX and low._category == _FLOAT:
        return complex128 if low is float64 else complex64
    return high


# ---------------------------------------------------------------------------- Python numbers
# Note [Python numbers into a dtype]
# PyTorch turns a Python number into an element of a dtype in three ways; NumPy alone would
# raise, wrap or round differently, so every such place goes through one of these helpers.
# * checked (``fill_``, ``full``, ``masked_fill``, scalar clamp bounds, ``alpha``, a scalar
#   exponent, ``where`` with a scalar, ``x[i] = number`` ...): ``scalar_to``. A value the dtype
#   cannot hold raises "value cannot be converted to type <C type> without overflow": floats
#   outside the range, NaN and infinities into integer types, finite values beyond the largest
#   float of a floating type, a nonzero imaginary part into a real type. Unsigned types accept
#   negative ints down to -max (two's complement: uint8 takes -1 as 255); bool takes anything.
#   ``where`` and ``x[i] = number`` let float16 and bfloat16 round to inf (``relaxed``).
# * wrapped (arithmetic, comparisons and bitwise ops with a Python int): ``wrap_int``. The
#   number is cast like an int64 tensor would be, so it wraps around (uint8 + 300 adds 44).
# * an element of ``tensor(data, dtype=...)`` given as Python numbers: ``check_data``. Ints
#   must fit int64, then both ints and floats are checked against an integer dtype as above;
#   floats round freely into a floating dtype (1e40 becomes inf); complex into a real dtype is
#   a TypeError. Tensors and ndarrays are cast without any check.
# Python ints outside [-2**63, 2**64) cannot be scalars at all (``_int_scalar``).
_INT_RANGE = {uint8: (0, 255), int8: (-128, 127), int16: (-2 ** 15, 2 ** 15 - 1),
              int32: (-2 ** 31, 2 ** 31 - 1), int64: (-2 ** 63, 2 ** 63 - 1),
              uint16: (0, 2 ** 16 - 1), uint32: (0, 2 ** 32 - 1), uint64: (0, 2 ** 64 - 1)}
_FLOAT_MAX = {float16: 65504.0, bfloat16: 3.3895313892515355e+38,
              float32: 3.4028234663852886e+38, float64: 1.7976931348623157e+308,
              complex64: 3.4028234663852886e+38, complex128: 1.7976931348623157e+308}
_C_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
            "int64": "int64_t", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "float32": "float", "float64": "double", "complex64": "c10::complex<float>",
            "complex128": "c10::complex<double>", "bool": "bool", "uint16": "uint16_t",
            "uint32": "uint32_t", "uint64": "uint64_t"}


def overflow_error(d: dtype, short: _builtins.bool = False) -> RuntimeError:
    """PyTorch's error for a number ``d`` cannot hold (``short``: the dtype's own name, as
    ``tensor()`` words it, instead of the C type)."""
    name = d.name if short else _C_NAMES[d.name]
    return RuntimeError(f"value cannot be converted to type {name} without overflow")


def _int_scalar(v: _builtins.int) -> _builtins.int:
    if v >= 2 ** 64:
        raise OverflowError("int too big to convert")
    if v < -2 ** 63:
        raise OverflowError("can't convert negative int to unsigned")
    return v


def _real_fits(f: _builtins.float, d: dtype) -> _builtins.bool:
    if d._category == _INT:
        lo, hi = _INT_RANGE[d]
        return lo <= f <= hi             # exact float/int comparison; False for NaN
    return not (abs(f) > _FLOAT_MAX[d]) or f != f or abs(f) == _inf


_inf = _pyfloat("inf")


def scalar_to(value, d: dtype, relaxed: _builtins.bool = False):
    """``value`` (a Python or NumPy number) converted to dtype ``d`` with PyTorch's overflow
    check (see Note [Python numbers into a dtype]); returns a Python number NumPy stores into
    an array of ``d`` unchanged. ``relaxed``: float16 and bfloat16 round out-of-range values to
    infinity instead.

    >>> from ndgrad._dtype import scalar_to, uint8
    >>> scalar_to(-1, uint8)
    255
    >>> scalar_to(300, uint8)
    Traceback (most recent call last):
    RuntimeError: value cannot be converted to type uint8_t without overflow
    """
    if type(value) is _pyfloat and d._category == _FLOAT and -65504.0 <= value <= 65504.0:
        if d.itemsize == 2:              # rounded through float32 (Note [Double to half])
            return _pyfloat(_F32.type(value))
        return value                     # the common case: fits every floating type
    if isinstance(value, (_pybool, np.bool_)):
        return _pybool(value)
    if isinstance(value, (_pyint, np.integer)):
        v = _int_scalar(_pyint(value))
        if d._category == _INT:
            lo, hi = _INT_RANGE[d]
            if v > hi or v < (-hi if lo == 0 else lo):
                raise overflow_error(d)
            return v % (hi + 1) if v < lo else v
        if d is bool:
            return v != 0
        if d._category == _FLOAT and abs(v) > _FLOAT_MAX[d] and not (relaxed and d.itemsize == 2):
            raise overflow_error(d)
        return v
    if isinstance(value, (_pycomplex, np.complexfloating)):
        c = _pycomplex(value)
        if d is bool:
            return c != 0
        if d._category == _COMPLEX:
            if not (_real_fits(c.real, d) and _real_fits(c.imag, d)):
                raise overflow_error(d)
            return c
        if c.imag != 0:
            raise overflow_error(d)
        value = c.real
    f = _pyfloat(value)
    if d is bool:
        return f != 0
    if not _real_fits(f, d) and not (relaxed and d.itemsize == 2 and d._category == _FLOAT):
        raise overflow_error(d)
    if d.itemsize == 2 and d._category == _FLOAT and abs(f) < 3.4e38:
        f = _pyfloat(_F32.type(f))       # Note [Double to half]
    return _pyint(f) if d._category == _INT else f


def wrap_int(value: _builtins.int, d: dtype) -> _builtins.int:
    """A Python int operand of an integer tensor of dtype ``d``, wrapped around as PyTorch's
    cast of an int64 scalar does (``uint8 + 300`` adds 44)."""
    lo, hi = _INT_RANGE[d]
    if lo <= value <= hi:
        return value
    _int_scalar(value)
    span = (hi - lo) + 1
    v = value % span
    return v - span if v > hi else v


def check_data(arr: np.ndarray, d: dtype) -> None:
    """Check Python numbers (gathered in ``arr``, of their own inferred NumPy dtype) before
    ``tensor(data, dtype=d)`` casts them, as PyTorch checks each element."""
    kind = arr.dtype.kind
    if d is bool or arr.size == 0 or kind == "b":
        return
    if d is uint64:                      # read as unsigned 64-bit ints: no floats at all
        if kind == "i" and arr.min() < 0:
            uint64_item(-1)
        if kind in "fc":
            raise TypeError("an integer is required")
        return
    if kind == "c" and d._category != _COMPLEX:
        if d._category == _INT:
            raise TypeError("'complex' object cannot be interpreted as an integer")
        raise TypeError("must be real number, not complex")
    if d._category != _INT:
        return
    if kind == "u" and arr.max() > 2 ** 63 - 1:
        raise ValueError("Overflow when unpacking long long")
    lo, hi = _INT_RANGE[d]
    if kind in "iu":
        mn, mx = _pyint(arr.min()), _pyint(arr.max())
        if mx > hi or mn < (-hi if lo == 0 else lo):
            raise overflow_error(d, short=True)
    elif kind == "f" and not (lo <= _pyfloat(arr.min()) and _pyfloat(arr.max()) <= hi):
        raise overflow_error(d, short=True)      # also NaN: its comparisons are False


def uint64_item(v: Any) -> None:
    """Check one Python number of ``tensor(data, dtype=uint64)``, which torch reads as an
    unsigned 64-bit int (a float is refused, not truncated)."""
    if not isinstance(v, _pyint):
        raise TypeError("an integer is required")
    if v < 0:
        raise OverflowError("can't convert negative int to unsigned")
    if v >= 2 ** 64:
        raise OverflowError("int too big to convert")
