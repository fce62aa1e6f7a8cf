"""Process-wide settings and type information of torch's top level: ``set_printoptions``,
``finfo``/``iinfo``, ``use_deterministic_algorithms``, ``set_float32_matmul_precision`` and the
constants ``pi``, ``e``, ``inf``, ``nan``.

ndgrad's kernels are deterministic NumPy and compute float32 products in float32, so the
determinism and matmul-precision settings are recorded and reported, and change nothing.

Example:
    >>> import ndgrad
    >>> ndgrad.finfo(ndgrad.float32).eps
    1.1920928955078125e-07
    >>> ndgrad.set_printoptions(precision=2)
    >>> ndgrad.tensor([1.23456])
    tensor([1.23])
    >>> ndgrad.set_printoptions(profile="default")
"""

from __future__ import annotations

import math
import warnings
from typing import Optional

import ml_dtypes
import numpy as np

from . import _dtype, _format

__all__ = ["set_printoptions", "get_printoptions", "finfo", "iinfo",
           "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_float32_matmul_precision",
           "get_float32_matmul_precision", "pi", "e", "inf", "nan"]

pi, e, inf, nan = math.pi, math.e, math.inf, math.nan

_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80),
             "full": (4, math.inf, 3, 80)}


def set_printoptions(precision: Optional[int] = None, threshold: Optional[float] = None,
                     edgeitems: Optional[int] = None, linewidth: Optional[int] = None,
                     profile: Optional[str] = None, sci_mode: Optional[bool] = None) -> None:
    """How tensors print: digits after the point, the element count above which a tensor is
    summarized, the items kept at each end when summarized, the line width, a ``profile``
    ("default", "short", "full") setting the first four, and ``sci_mode`` (None: automatic)."""
    if profile in _PROFILES:
        (_format.PRECISION, _format.THRESHOLD, _format.EDGEITEMS,
         _format.LINEWIDTH) = _PROFILES[profile]
    if precision is not None:
        _format.PRECISION = int(precision)
    if threshold is not None:
        _format.THRESHOLD = threshold
    if edgeitems is not None:
        _format.EDGEITEMS = int(edgeitems)
    if linewidth is not None:
        _format.LINEWIDTH = int(linewidth)
    _format.SCI_MODE = sci_mode


def get_printoptions() -> dict:
    """The current print options (see :func:`set_printoptions`)."""
    return {"precision": _format.PRECISION, "threshold": _format.THRESHOLD,
            "edgeitems": _format.EDGEITEMS, "linewidth": _format.LINEWIDTH,
            "sci_mode": _format.SCI_MODE}


class finfo:
    """Machine limits of a floating dtype (default: the default dtype): ``bits``, ``eps``,
    ``max``, ``min``, ``tiny`` (= ``smallest_normal``), ``resolution`` and ``dtype``."""

    def __init__(self, type: Optional[_dtype.dtype] = None) -> None:  # noqa: A002
        d = _dtype.get_default_dtype() if type is None else type
        if not isinstance(d, _dtype.dtype) or not (d.is_floating_point or d.is_complex):
            raise TypeError("torch.finfo() requires a floating point input type. Use "
                            "torch.iinfo to handle 'torch.finfo'")
        real = d.to_real() if d.is_complex else d
        info = ml_dtypes.finfo(real.np)      # NumPy's finfo, also for bfloat16
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = float(10.0 ** -info.precision)
        self.dtype = str(real).split(".")[-1]

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype: ``bits``, ``max``, ``min`` and ``dtype``."""

    def __init__(self, type: _dtype.dtype) -> None:  # noqa: A002
        if type == _dtype.bool:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if not isinstance(type, _dtype.dtype) or type.is_floating_point or type.is_complex:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo "
                            "to handle 'torch.iinfo'")
        info = np.iinfo(type.np)
        self.bits, self.max, self.min = int(info.bits), int(info.max), int(info.min)
        self.dtype = str(type).split(".")[-1]

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


_deterministic = {"on": False, "warn_only": False}
_matmul_precision = ["highest"]


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Record the determinism mode (ndgrad's kernels are always deterministic)."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' must be bool, not "
                        f"{type(mode).__name__}")
    _deterministic["on"], _deterministic["warn_only"] = mode, bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    """Whether :func:`use_deterministic_algorithms` turned the mode on."""
    return _deterministic["on"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether the determinism mode only warns."""
    return _deterministic["warn_only"]


def set_float32_matmul_precision(precision: str) -> None:
    """Record the float32 matmul precision ("highest", "high", "medium"); ndgrad always
    computes float32 products in float32."""
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _matmul_precision[0] = precision


def get_float32_matmul_precision() -> str:
    """The recorded float32 matmul precision."""
    return _matmul_precision[0]


