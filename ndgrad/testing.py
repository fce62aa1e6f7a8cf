"""``torch.testing``: ``assert_close`` and ``make_tensor``, with PyTorch's rules and messages.

``assert_close(actual, expected)`` compares tensors, NumPy arrays, Python numbers and nested
sequences/mappings of them: attributes first (shape, dtype, layout, optionally strides), then
the values, ``|actual - expected| <= atol + rtol * |expected|`` elementwise, with default
tolerances from the dtypes (float32: rtol 1.3e-6, atol 1e-5; float64: 1e-7 and 1e-7; ...;
integers and bools: exact). A failure raises ``AssertionError`` with PyTorch's report: how
many elements differ and where the greatest absolute and relative differences are.

``make_tensor(*shape, dtype=..., device=...)`` draws a tensor uniformly from ``[low, high)``
(default ``[-9, 9)``, integers ``[-9, 10)``, bools ``{0, 1}``) from the global generator in
PyTorch's way, so a seeded call gives PyTorch's values.

Example:
    >>> import ndgrad
    >>> from ndgrad.testing import assert_close
    >>> assert_close(ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([1.0, 2.0 + 1e-6]))
    >>> assert_close(ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([1.0, 2.5]))
    Traceback (most recent call last):
    AssertionError: Tensor-likes are not close!
    <BLANKLINE>
    Mismatched elements: 1 / 2 (50.0%)
    Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)
    Greatest relative difference: 0.20000000298023224 at index (1,) (up to 1.3e-06 allowed)
"""

from __future__ import annotations

import collections.abc
import math
import warnings
from typing import Any, Callable, Optional, Union

import numpy as np

from . import _creation, _dtype
from ._settings import finfo, iinfo
from ._warn import warn_user
from .autograd.grad_mode import no_grad
from .ops.rearrange import view_as_real
from .tensor import Tensor, check_device

__all__ = ["assert_close", "assert_allclose", "make_tensor"]

# (rtol, atol) by dtype name, PyTorch's defaults; other dtypes compare exactly
_TOLERANCES = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5),
               "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7),
               "complex32": (1e-3, 1e-5), "complex64": (1.3e-6, 1e-5),
               "complex128": (1e-7, 1e-7)}


def _tolerances(*dtypes: Any, table: dict = _TOLERANCES) -> tuple:
    pairs = [table.get(d.name, (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


class _Mismatch(AssertionError):
    """A failed comparison, with the path of the item inside nested inputs."""


class _Structure(_Mismatch):
    """Nested inputs of different structure (lengths, keys): reported as is, never replaced
    by ``msg`` (as PyTorch's)."""


def _fail(msg: str) -> None:
    raise _Mismatch(msg)


# ---------------------------------------------------------------------------- values
def _is_tensor_like(x: Any) -> bool:
    return isinstance(x, (Tensor, np.ndarray))


def _number_report(actual: Any, expected: Any, rtol: float, atol: float,
                   equal_nan: bool) -> Optional[str]:
    if isinstance(actual, (bool, np.bool_)):
        if bool(actual) != bool(expected):
            return f"Booleans mismatch: {bool(actual)} is not {bool(expected)}"
        return None
    a, e = (complex(v) if isinstance(v, (complex, np.complexfloating)) else
            (int(v) if isinstance(v, (int, np.integer)) else float(v)) for v in (actual, expected))
    both_nan = _isnan(a) and _isnan(e)
    if a == e or (equal_nan and both_nan):
        return None
    if not _isnan(a) and not _isnan(e) and abs(a - e) <= atol + rtol * abs(e):
        return None
    return _scalar_report(a, e, abs(a - e), rtol, atol)


def _isnan(v: Any) -> bool:
    return isinstance(v, complex) and (math.isnan(v.real) or math.isnan(v.imag)) or \
        isinstance(v, float) and math.isnan(v)


def _rel(diff: Any, e: Any) -> float:
    try:
        return diff / abs(e)
    except ZeroDivisionError:
        return math.nan if diff == 0 else math.inf


def _scalar_report(a: Any, e: Any, diff: Any, rtol: float, atol: float) -> str:
    exact = rtol == 0 and atol == 0
    word = "equal" if exact else "close"
    rel = _rel(diff, e)
    lines = [f"Scalars are not {word}!", "", f"Expected {e} but got {a}."]
    if exact:
        lines += [f"Absolute difference: {diff}", f"Relative difference: {rel}"]
    else:
        lines += [f"Absolute difference: {diff} (up to {atol} allowed)",
                  f"Relative difference: {rel} (up to {rtol} allowed)"]
    return "\n".join(lines)


def _tensor_report(a: np.ndarray, e: np.ndarray, rtol: float, atol: float, equal_nan: bool,
                   scalar: bool) -> Optional[str]:
    """None when close, else PyTorch's report of the values of ``a`` against ``e``."""
    kind = a.dtype.kind
    if kind in "biu":           # integers and bools: differences in int64, relative in float32
        ai, ei = a.astype(np.int64), e.astype(np.int64)
        diff = np.abs(ai - ei)
        bad = diff > atol + rtol * np.abs(ei)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = (diff.astype(np.float32) / np.abs(ei).astype(np.float32))
    else:
        with np.errstate(invalid="ignore", over="ignore"):
            close = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan)
            bad = ~close
            diff = np.abs(a - e)
            diff = np.where(np.isinf(a) & np.isinf(e) & (a == e), 0, diff).astype(diff.dtype)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = (diff / np.abs(e)).astype(diff.dtype)
    n_bad = int(np.count_nonzero(bad))
    if n_bad == 0:
        return None
    diff = np.where(bad, diff, 0).astype(diff.dtype)    # the report looks at mismatches only
    rel = np.where(bad, rel, 0).astype(rel.dtype)
    exact = rtol == 0 and atol == 0
    word = "equal" if exact else "close"
    if scalar:
        ax, ex = a.reshape(()).item(), e.reshape(()).item()
        return _scalar_report(ax, ex, diff.reshape(()).item(), rtol, atol)

    def where(v: np.ndarray) -> tuple:
        flat = v.reshape(-1)
        nans = np.flatnonzero(np.isnan(flat)) if flat.dtype.kind in "fc" else \
            np.zeros(0, np.int64)
        k = int(nans[0]) if len(nans) else int(np.argmax(flat))
        return flat[k].item(), tuple(int(i) for i in np.unravel_index(k, v.shape))

    dmax, di = where(diff)
    rmax, ri = where(rel)
    total = a.size
    up_a = "" if exact else f" (up to {atol} allowed)"
    up_r = "" if exact else f" (up to {rtol} allowed)"
    return "\n".join([
        f"Tensor-likes are not {word}!", "",
        f"Mismatched elements: {n_bad} / {total} ({100.0 * n_bad / total:.1f}%)",
        f"Greatest absolute difference: {dmax} at index {di}{up_a}",
        f"Greatest relative difference: {rmax} at index {ri}{up_r}"])


def _attr_mismatch(name: str, a: Any, e: Any) -> None:
    _fail(f"The values for attribute '{name}' do not match: {a} != {e}.")


def _compare_tensor_likes(actual: Any, expected: Any, rtol: Optional[float],
                          atol: Optional[float], equal_nan: bool, check_dtype: bool,
                          check_layout: bool, check_stride: bool) -> None:
    if isinstance(actual, Tensor):
        if check_layout and actual.layout != expected.layout:
            _attr_mismatch("layout", actual.layout, expected.layout)
        if actual.shape != expected.shape:
            _attr_mismatch("shape", actual.shape, expected.shape)
        if check_dtype and actual.dtype != expected.dtype:
            _attr_mismatch("dtype", actual.dtype, expected.dtype)
        if check_stride and actual.stride() != expected.stride():
            _attr_mismatch("stride()", actual.stride(), expected.stride())
        da, de = actual.dtype, expected.dtype
        a = actual.detach().to_dense().numpy() if actual.is_sparse else actual.detach().numpy()
        e = expected.detach().to_dense().numpy() if expected.is_sparse else \
            expected.detach().numpy()
    else:
        if actual.shape != expected.shape:
            _attr_mismatch("shape", actual.shape, expected.shape)
        if check_dtype and actual.dtype != expected.dtype:
            _attr_mismatch("dtype", actual.dtype, expected.dtype)
        da, de = (_dtype._FROM_NP[x.dtype] for x in (actual, expected))
        a, e = actual, expected
    if rtol is None:
        rtol, atol = _tolerances(da, de)
    if a.dtype != e.dtype:
        common = _dtype.promote_types(da, de).np
        a, e = a.astype(common), e.astype(common)
    assert rtol is not None and atol is not None
    report = _tensor_report(a, e, rtol, atol, equal_nan,
                            isinstance(actual, Tensor) and actual.dim() == 0)
    if report is not None:
        _fail(report)


# ---------------------------------------------------------------------------- structure
def _compare(actual: Any, expected: Any, path: str, **kw: Any) -> None:
    try:
        _compare_one(actual, expected, **kw)
    except _Mismatch as m:
        if path and not getattr(m, "pathed", False):
            m = type(m)(f"{m}\n\nThe failure occurred for item {path}")
            m.pathed = True    # type: ignore[attr-defined]
        raise m from None
    except _NoPair as err:
        if path and not getattr(err, "pathed", False):
            named = _NoPair(f"{err}\n\nThe failure occurred for item {path}")
            named.pathed = True    # type: ignore[attr-defined]
            raise named from None
        raise
    except _Nested as n:
        items = n.items
        for key, (a, e) in items:
            _compare(a, e, f"{path}[{key!r}]", **kw)


class _Nested(Exception):
    def __init__(self, items: list) -> None:
        super().__init__()
        self.items = items


def _compare_one(actual: Any, expected: Any, *, rtol: Optional[float], atol: Optional[float],
                 equal_nan: bool, check_dtype: bool, check_layout: bool,
                 check_stride: bool, allow_subclasses: bool) -> None:
    if actual is None and expected is None:
        return
    if isinstance(actual, Tensor) and isinstance(expected, Tensor) or \
            isinstance(actual, np.ndarray) and isinstance(expected, np.ndarray):
        if not allow_subclasses and type(actual) is not type(expected):
            _fail(f"Except for Python scalars, type equality is required if "
                  f"allow_subclasses=False, but got {type(actual)} and {type(expected)} "
                  "instead.")
        _compare_tensor_likes(actual, expected, rtol, atol, equal_nan, check_dtype,
                              check_layout, check_stride)
        return
    numbers = (bool, int, float, complex, np.number, np.bool_)
    if isinstance(actual, numbers) and isinstance(expected, numbers):
        ta, te = _py_type(actual), _py_type(expected)
        if check_dtype and ta is not te:
            _fail(f"The (d)types do not match: {ta} != {te}.")
        if rtol is None:
            rtol, atol = (0.0, 0.0) if ta in (bool, int) else (1e-7, 1e-7)
        assert atol is not None
        report = _number_report(actual, expected, rtol, atol, equal_nan)
        if report is not None:
            _fail(report)
        return
    seq = collections.abc.Sequence
    if isinstance(actual, seq) and isinstance(expected, seq) and \
            not isinstance(actual, str) and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise _Structure(f"The length of the sequences mismatch: {len(actual)} != "
                             f"{len(expected)}")
        raise _Nested(list(enumerate(zip(actual, expected))))
    mapping = collections.abc.Mapping
    if isinstance(actual, mapping) and isinstance(expected, mapping):
        ka, ke = set(actual.keys()), set(expected.keys())
        if ka != ke:
            raise _Structure("The keys of the mappings do not match:\n"
                             f"Missing keys in the actual mapping: {sorted(ke - ka)}\n"
                             f"Additional keys in the actual mapping: {sorted(ka - ke)}")
        raise _Nested([(k, (actual[k], expected[k])) for k in actual])
    if actual is None or expected is None:
        _fail(f"None mismatch: {actual} is not {expected}")
    raise _NoPair(f"No comparison pair was able to handle inputs of type {type(actual)} and "
                  f"{type(expected)}.")


class _NoPair(TypeError):
    """Inputs no comparison handles: a TypeError naming the item inside nested inputs."""


def _py_type(v: Any) -> type:
    if isinstance(v, (bool, np.bool_)):
        return bool
    if isinstance(v, (int, np.integer)):
        return int
    if isinstance(v, (float, np.floating)):
        return float
    return complex


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True,
                 rtol: Optional[float] = None, atol: Optional[float] = None,
                 equal_nan: bool = False, check_device: bool = True, check_dtype: bool = True,
                 check_layout: bool = True, check_stride: bool = False,
                 msg: Union[str, Callable[[str], str], None] = None) -> None:
    """Assert that ``actual`` and ``expected`` are close (see the module docstring), as
    ``torch.testing.assert_close``; ``msg`` replaces the report (a callable gets it and returns
    the message).

    >>> import ndgrad
    >>> ndgrad.testing.assert_close({"w": ndgrad.ones(2)}, {"w": ndgrad.ones(2)})
    """
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got "
                         f"no {'atol' if atol is None else 'rtol'}.")
    try:
        _compare(actual, expected, "", rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_dtype=check_dtype, check_layout=check_layout,
                 check_stride=check_stride, allow_subclasses=allow_subclasses)
    except _Mismatch as m:
        text = str(m)
        if msg is not None and not isinstance(m, _Structure):
            text = msg(text) if callable(msg) else msg
        raise AssertionError(text) from None
    except _NoPair as e:
        raise TypeError(str(e)) from None


# The deprecated assert_allclose's own, looser defaults (other dtypes compare exactly)
_ALLCLOSE_TOLERANCES = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5),
                        "float64": (1e-5, 1e-8)}


def assert_allclose(actual: Any, expected: Any, rtol: Optional[float] = None,
                    atol: Optional[float] = None, equal_nan: bool = True,
                    msg: str = "") -> None:
    """The deprecated ``torch.testing.assert_allclose`` (a ``FutureWarning``): ``assert_close``
    without the dtype check, NaNs equal by default, numbers and lists taken as tensors (the
    expected one in the actual's dtype), and its own default tolerances (float32: rtol 1e-4,
    atol 1e-5; float16: 1e-3 and 1e-3; float64: 1e-5 and 1e-8).

    >>> import ndgrad, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     ndgrad.testing.assert_allclose(ndgrad.tensor([1.0, 2.0]), [1.0, 2.00001])
    """
    warn_user("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed "
              "in a future release. Please use `torch.testing.assert_close()` instead. You can "
              "find detailed upgrade instructions in "
              "https://github.com/pytorch/pytorch/issues/61844.", FutureWarning)
    if not isinstance(actual, Tensor):
        actual = _creation.tensor(actual)
    if not isinstance(expected, Tensor):
        expected = _creation.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = _tolerances(actual._data.dtype, expected._data.dtype,
                                 table=_ALLCLOSE_TOLERANCES)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_dtype=False, check_stride=False, msg=msg or None)


# ---------------------------------------------------------------------------- make_tensor
def _bounds(low: Any, high: Any, d: Any, lo_incl: float, hi_excl: float, dlow: float,
            dhigh: float) -> tuple:
    low = dlow if low is None else low
    high = dhigh if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and (d.is_floating_point or d.is_complex):
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or "
                      "complex types is deprecated since 2.1 and will be removed in 2.3. Use "
                      "`torch.full(...)` instead.", FutureWarning, stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lo_incl or low >= hi_excl:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                         f"but {d} only supports [{lo_incl}, {hi_excl})")
    low, high = min(max(low, lo_incl), hi_excl), min(max(high, lo_incl), hi_excl)
    if not (d.is_floating_point or d.is_complex):
        return math.ceil(low), math.ceil(high)
    return low, high


def make_tensor(*shape: Any, dtype: Any, device: Any, low: Optional[float] = None,
                high: Optional[float] = None, requires_grad: bool = False,
                noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format: Any = None) -> Tensor:
    """A tensor of ``shape`` with values drawn uniformly from ``[low, high)`` (the draws
    PyTorch's ``make_tensor`` makes, from the global generator).

    >>> import ndgrad
    >>> _ = ndgrad.manual_seed(0)
    >>> ndgrad.testing.make_tensor(3, dtype=ndgrad.float32, device="cpu")
    tensor([-0.0674,  4.8280, -7.4074])
    """
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = tuple(shape[0])
    shape = tuple(int(s) for s in shape)
    d = _dtype.to_dtype(dtype)
    if device is not None:
        check_device(device)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got noncontiguous={noncontiguous} and "
                         f"memory_format={memory_format}")
    integral = not (d.is_floating_point or d.is_complex)
    if requires_grad and integral:
        raise ValueError("`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got dtype={d}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = shape[:-1] + (2 * shape[-1],)
    if d is _dtype.bool:
        lo, hi = _bounds(low, high, d, 0, 2, 0, 2)
        result = _creation.randint(lo, hi, shape, dtype=d)
    elif integral:
        ii = iinfo(d)
        # randint's bound is exclusive (int64's maximum cannot be one: randint works in int64)
        lo, hi = _bounds(low, high, d, ii.min, ii.max + (d is not _dtype.int64), -9, 10)
        result = _creation.randint(lo, hi, shape, dtype=d)
    else:
        info = finfo(d)
        lo, hi = _bounds(low, high, d, info.min, info.max, -9, 9)
        result = _creation.empty(shape, dtype=d)
        target = view_as_real(result) if d.is_complex else result
        with no_grad():
            if hi - lo >= info.max:     # uniform_ wants to - from within the dtype's range
                target.uniform_(lo / 2, hi / 2).mul_(2)
            else:
                target.uniform_(lo, hi)
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if integral else finfo(d).tiny
    if not integral:
        result.requires_grad_(requires_grad)
    return result
