"""Padding layers, as in ``torch.nn.modules.padding``: ``ZeroPad``, ``ConstantPad``,
``ReflectionPad``, ``ReplicationPad`` and ``CircularPad`` in 1, 2 and 3 dims. ``padding`` is an
int (the same on every side) or a tuple ``(left, right[, top, bottom[, front, back]])``.

    >>> import ndgrad
    >>> import ndgrad.nn as nn
    >>> nn.ZeroPad2d((1, 2, 0, 1))
    ZeroPad2d((1, 2, 0, 1))
    >>> nn.ReflectionPad1d(2)(ndgrad.tensor([[[1.0, 2.0, 3.0]]])).tolist()
    [[[3.0, 2.0, 1.0, 2.0, 3.0, 2.0, 1.0]]]
"""

from __future__ import annotations

from typing import Any

from .. import functional as F
from ...tensor import Tensor
from .module import Module

__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ReflectionPad1d",
           "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d"]


def _ntuple(padding: Any, n: int) -> tuple:
    if isinstance(padding, (tuple, list)):
        return tuple(padding)
    return (padding,) * (2 * n)


class _PadNd(Module):
    _dims = 1
    _mode = "constant"

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _ntuple(padding, self._dims)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(Module):
    _dims = 1

    def __init__(self, padding: Any, value: float) -> None:
        super().__init__()
        self.value = value
        self.padding = _ntuple(padding, self._dims)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with ``value``."""
    _dims = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last 2 dims with ``value``."""
    _dims = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last 3 dims with ``value``."""
    _dims = 3


class ZeroPad1d(ConstantPad1d):
    """Pad the last dim with zeros."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pad the last 2 dims with zeros."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """Pad the last 3 dims with zeros."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    """Pad the last dim with its reflection (edge not repeated)."""
    _dims, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """Pad the last 2 dims with their reflection."""
    _dims, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    """Pad the last 3 dims with their reflection."""
    _dims, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    """Pad the last dim by repeating its edge values."""
    _dims, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """Pad the last 2 dims by repeating their edge values."""
    _dims, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    """Pad the last 3 dims by repeating their edge values."""
    _dims, _mode = 3, "replicate"


class _CircularPadNd(_PadNd):
    _mode = "circular"

    def forward(self, input: Tensor) -> Tensor:
        nd = input.dim()
        if nd not in (self._dims + 1, self._dims + 2):
            raise ValueError(f"expected {self._dims + 1}D or {self._dims + 2}D input (got {nd}D "
                             "input)")
        return F.pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    """Pad the last dim periodically (wrapping around)."""
    _dims = 1


class CircularPad2d(_CircularPadNd):
    """Pad the last 2 dims periodically."""
    _dims = 2


class CircularPad3d(_CircularPadNd):
    """Pad the last 3 dims periodically."""
    _dims = 3
