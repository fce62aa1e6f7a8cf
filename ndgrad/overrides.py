"""``torch.overrides``: the ``__torch_function__`` protocol's public helpers (Note [Torch
function protocol] in ``ndgrad/_torch_function.py``).

A class whose instances should stand in for tensors (a Tensor subclass, or any class) defines
``__torch_function__(cls, func, types, args=(), kwargs=None)``; every public function and
Tensor method given one of them calls it instead of running. A ``TorchFunctionMode`` sees every
call made while it is active.

Example:
    >>> import ndgrad
    >>> from ndgrad.overrides import TorchFunctionMode
    >>> class Double(TorchFunctionMode):
    ...     def __torch_function__(self, func, types, args=(), kwargs=None):
    ...         out = func(*args, **(kwargs or {}))
    ...         return out * 2 if func is ndgrad.sin else out
    >>> with Double():
    ...     y = ndgrad.sin(ndgrad.zeros(1) + 0.5)
    >>> round(y.item(), 4)
    0.9589
"""

from __future__ import annotations

from ._torch_function import (
    TorchFunctionMode, _disabled_torch_function_impl, handle_torch_function, has_torch_function,
    has_torch_function_unary, has_torch_function_variadic, is_tensor_like)

__all__ = ["TorchFunctionMode", "handle_torch_function", "has_torch_function",
           "has_torch_function_unary", "has_torch_function_variadic", "is_tensor_like",
           "_disabled_torch_function_impl"]
