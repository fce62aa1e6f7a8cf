"""``convert_conv2d_weight_memory_format`` / ``convert_conv3d_weight_memory_format``: give the
weights of every (transposed) convolution in a module tree a memory format, as
``torch.nn.utils``'s.

Example:
    >>> import ndgrad
    >>> from ndgrad.nn.utils import convert_conv2d_weight_memory_format
    >>> m = ndgrad.nn.Sequential(ndgrad.nn.Conv2d(2, 3, 3))
    >>> m = convert_conv2d_weight_memory_format(m, ndgrad.channels_last)
    >>> m[0].weight.is_contiguous(memory_format=ndgrad.channels_last)
    True
"""

from __future__ import annotations

from typing import Any, TypeVar

from ..modules.conv import Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]

_M = TypeVar("_M", bound=Module)


def _convert(module: Any, memory_format: Any, kinds: tuple) -> Any:
    if isinstance(module, kinds):
        module.weight.data = module.weight.detach().clone().contiguous(
            memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, kinds)
    return module


def convert_conv2d_weight_memory_format(module: _M, memory_format: Any) -> _M:
    """Lay out the weight of every ``Conv2d``/``ConvTranspose2d`` in ``module`` (recursively)
    in ``memory_format``; returns ``module``."""
    return _convert(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module: _M, memory_format: Any) -> _M:
    """As ``convert_conv2d_weight_memory_format``, for ``Conv3d``/``ConvTranspose3d``."""
    return _convert(module, memory_format, (Conv3d, ConvTranspose3d))
