"""PyTorch-style ``repr`` of tensors.

Example:
    >>> import ndgrad
    >>> ndgrad.tensor([1.0, 2.5])
    tensor([1.0000, 2.5000])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _dtype

PRECISION = 4


def _float_formatter(values: np.ndarray):
    finite = values[np.isfinite(values)].astype(np.float64)
    if finite.size == 0:
        return lambda v: _special(v) or f"{v}"
    absf = np.abs(finite)
    nonzero = absf[absf > 0]
    int_mode = bool(np.all(finite == np.round(finite)))
    sci = False
    if nonzero.size:
        mx, mn = nonzero.max(), nonzero.min()
        if int_mode:
            sci = mx > 1e8
        else:
            sci = mx / mn > 1000.0 or mx > 1e8 or mn < 1e-4
    if sci:
        fmt = lambda v: _special(v) or f"{v:.{PRECISION}e}"  # noqa: E731
    elif int_mode:
        fmt = lambda v: _special(v) or f"{v:.0f}."  # noqa: E731
    else:
        fmt = lambda v: _special(v) or f"{v:.{PRECISION}f}"  # noqa: E731
    width = max(len(fmt(float(v))) for v in np.concatenate([finite[:1000], values[
        ~np.isfinite(values)][:3].astype(np.float64)]))
    return lambda v: fmt(float(v)).rjust(width)


def _special(v: float) -> str:
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return ""


def _formatter(arr: np.ndarray) -> dict:
    kind = arr.dtype.kind
    if kind == "b":
        width = 5 if arr.any() and not arr.all() else (4 if arr.all() else 5)
        return {"bool": lambda v: str(bool(v)).rjust(width)}
    if kind in "iu":
        width = max((len(str(v)) for v in arr.ravel()[:1000]), default=1)
        return {"int": lambda v: str(v).rjust(width)}
    if kind == "c":
        rf = _float_formatter(arr.real.ravel())
        imf = _float_formatter(arr.imag.ravel())

        def cfmt(v: complex) -> str:
            im = imf(abs(v.imag)).strip()
            sign = "-" if v.imag < 0 or (v.imag == 0 and np.signbit(v.imag)) else "+"
            return f"{rf(v.real)}{sign}{im}j"
        return {"complexfloat": cfmt}
    ff = _float_formatter(arr.astype(np.float64).ravel())
    return {"float_kind": ff}


def format_tensor(t: Any) -> str:
    arr = t._data
    d = _dtype._FROM_NP[arr.dtype]
    prefix = "tensor("
    if arr.size == 0:
        body = "[]"
    else:
        shown = arr.astype(np.float32) if d is _dtype.bfloat16 else arr
        body = np.array2string(shown, separator=", ", prefix=prefix, formatter=_formatter(shown),
                               threshold=1000, edgeitems=3, max_line_width=80)
    suffixes = []
    if arr.size == 0 and arr.shape != (0,):
        suffixes.append(f"size={tuple(arr.shape)}")
    default_float = _dtype.get_default_dtype()
    if d not in (default_float, _dtype.int64, _dtype.bool, default_float.to_complex()):
        suffixes.append(f"dtype=ndgrad.{d.name}")
    if t._grad_fn is not None:
        suffixes.append(f"grad_fn=<{t._grad_fn.name()}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    return prefix + body + "".join(", " + s for s in suffixes) + ")"
