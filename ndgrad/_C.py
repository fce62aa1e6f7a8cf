"""The few names of ``torch._C`` that Python code using the ``__torch_function__`` protocol
spells out (Note [Torch function protocol] in ``ndgrad/_torch_function.py``).

Example:
    >>> import ndgrad
    >>> class Plain(ndgrad.Tensor):
    ...     __torch_function__ = ndgrad._C._disabled_torch_function_impl
    >>> type(ndgrad.ones(1).as_subclass(Plain) + 1).__name__
    'Tensor'
"""

from __future__ import annotations

from ._torch_function import (
    DisableTorchFunction, DisableTorchFunctionSubclass, _disabled_torch_function_impl,
    is_torch_function_enabled as _is_torch_function_enabled,
    is_torch_function_mode_enabled as _is_torch_function_mode_enabled)

__all__ = ["DisableTorchFunction", "DisableTorchFunctionSubclass",
           "_disabled_torch_function_impl", "_is_torch_function_enabled",
           "_is_torch_function_mode_enabled"]
