"""``autograd.is_tensor_like``: whether an object takes part in the tensor protocol.

Example:
    >>> import ndgrad
    >>> ndgrad.autograd.is_tensor_like(ndgrad.ones(1)), ndgrad.autograd.is_tensor_like(3)
    (True, False)
"""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor


def is_tensor_like(inp: Any) -> bool:
    """True for a Tensor (or Tensor subclass, or the class itself) and for any object whose
    type defines ``__torch_function__`` (a tensor-like wrapper)."""
    if isinstance(inp, Tensor) or (isinstance(inp, type) and issubclass(inp, Tensor)):
        return True
    return hasattr(inp, "__torch_function__")
