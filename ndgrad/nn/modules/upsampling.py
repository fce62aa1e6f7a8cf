"""``Upsample``, ``UpsamplingNearest2d`` and ``UpsamplingBilinear2d``, as in
``torch.nn.modules.upsampling``: ``F.interpolate`` with stored arguments.

    >>> import ndgrad
    >>> import ndgrad.nn as nn
    >>> m = nn.Upsample(scale_factor=2)
    >>> m
    Upsample(scale_factor=2.0, mode='nearest')
    >>> m(ndgrad.ones(1, 1, 2)).shape
    ndgrad.Size([1, 1, 4])
"""

from __future__ import annotations

from typing import Any

from . import _functional_entries as F
from ...tensor import Tensor
from .module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


class Upsample(Module):
    """Resamples its input to ``size`` or by ``scale_factor`` (``F.interpolate``)."""

    __constants__ = ["size", "scale_factor", "mode", "align_corners", "name",
                     "recompute_scale_factor"]

    def __init__(self, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                 align_corners: Any = None, recompute_scale_factor: Any = None) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        self.scale_factor: Any      # a float, a tuple of floats or None
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = "scale_factor=" + repr(self.scale_factor)
        else:
            info = "size=" + repr(self.size)
        return info + ", mode=" + repr(self.mode)


class UpsamplingNearest2d(Upsample):
    """Nearest upsampling of (N, C, H, W) inputs."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling (``align_corners=True``) of (N, C, H, W) inputs."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
