"""DLPack exchange, as ``torch.utils.dlpack``: ``to_dlpack`` gives a legacy capsule,
``from_dlpack`` takes any producer or capsule (Note [DLPack and NumPy] in ndgrad/tensor.py).

>>> import ndgrad
>>> from ndgrad.utils.dlpack import from_dlpack, to_dlpack
>>> t = ndgrad.arange(3)
>>> u = from_dlpack(to_dlpack(t))
>>> u[0] = 9
>>> t
tensor([9, 1, 2])
"""

from __future__ import annotations

from typing import Any

from .._creation import from_dlpack
from .._dlpack import DLDeviceType, export_array
from ..tensor import Tensor

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]


def to_dlpack(tensor: Tensor) -> Any:
    """A legacy DLPack capsule (``"dltensor"``) sharing ``tensor``'s memory; it can be consumed
    once. Like PyTorch's ``to_dlpack``, it does not refuse a tensor that requires grad (the
    capsule carries no autograd history); ``Tensor.__dlpack__`` does.

    >>> import ndgrad
    >>> from ndgrad.utils.dlpack import to_dlpack
    >>> to_dlpack(ndgrad.ones(2))
    <capsule object "dltensor" at 0x...>
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dlpack(): argument 'tensor' (position 1) must be Tensor, not "
                        f"{type(tensor).__name__}")
    return export_array(tensor._data)
