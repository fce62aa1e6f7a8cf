"""``Fold`` and ``Unfold``, as in ``torch.nn.modules.fold``: col2im and im2col as layers.

    >>> import ndgrad
    >>> import ndgrad.nn as nn
    >>> nn.Unfold(kernel_size=2)(ndgrad.ones(1, 3, 4, 4)).shape
    ndgrad.Size([1, 12, 9])
    >>> nn.Fold(output_size=(4, 4), kernel_size=2)(ndgrad.ones(1, 12, 9)).shape
    ndgrad.Size([1, 3, 4, 4])
"""

from __future__ import annotations

from typing import Any

from . import _functional_entries as F
from ...tensor import Tensor
from .module import Module

__all__ = ["Fold", "Unfold"]


class Fold(Module):
    """Sums sliding blocks (N, C * prod(kernel_size), L) into a (N, C, *output_size) tensor."""

    __constants__ = ["output_size", "kernel_size", "dilation", "padding", "stride"]

    def __init__(self, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
                 stride: Any = 1) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """Extracts sliding blocks of a (N, C, H, W) input as columns (N, C * kH * kW, L)."""

    __constants__ = ["kernel_size", "dilation", "padding", "stride"]

    def __init__(self, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
                 stride: Any = 1) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")
