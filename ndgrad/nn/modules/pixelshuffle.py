"""``PixelShuffle`` and ``PixelUnshuffle``, as in ``torch.nn.modules.pixelshuffle``.

    >>> import ndgrad
    >>> import ndgrad.nn as nn
    >>> nn.PixelShuffle(2)(ndgrad.zeros(1, 8, 3, 3)).shape
    ndgrad.Size([1, 2, 6, 6])
"""

from __future__ import annotations

from .. import functional as F
from ...tensor import Tensor
from .module import Module

__all__ = ["PixelShuffle", "PixelUnshuffle"]


class PixelShuffle(Module):
    """``(*, C*r*r, H, W)`` to ``(*, C, H*r, W*r)``."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """``(*, C, H*r, W*r)`` to ``(*, C*r*r, H, W)``."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"
