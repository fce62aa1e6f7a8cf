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

import collections
import sys
from typing import Any, Callable

from . import _torch_function
from ._torch_function import (
    TorchFunctionMode, _disabled_torch_function_impl, handle_torch_function, has_torch_function,
    has_torch_function_unary, has_torch_function_variadic, is_tensor_like)
from .tensor import Tensor

__all__ = ["TorchFunctionMode", "handle_torch_function", "has_torch_function",
           "has_torch_function_unary", "has_torch_function_variadic", "is_tensor_like",
           "get_overridable_functions", "get_ignored_functions",
           "_disabled_torch_function_impl"]

# The function namespaces, listed when loaded (``ndgrad.nn`` loads on first use).
_NAMESPACES = ("ndgrad", "ndgrad.linalg", "ndgrad.fft", "ndgrad.special", "ndgrad.autograd",
               "ndgrad.nn.functional")


def _overridable(fn: Any) -> bool:
    """A callable an argument's ``__torch_function__`` can take over: it looks at its arguments
    (a checking wrapper with a Tensor parameter, or a Python function taking part)."""
    if getattr(fn, "_tf_name", None) is None:
        return False
    schema = getattr(fn, "__signature_schema__", None)
    return schema is None or "Tensor" in schema.split("(", 1)[1]


def _public(namespace: Any) -> dict:
    return {n: v for n, v in vars(namespace).items() if not n.startswith("_") and callable(v)
            and not isinstance(v, type)}


def get_overridable_functions() -> dict:
    """``{namespace: [callables]}``: the functions of ndgrad's loaded namespaces and the Tensor
    methods that a ``__torch_function__`` can take over.

    >>> import ndgrad
    >>> from ndgrad.overrides import get_overridable_functions
    >>> found = get_overridable_functions()
    >>> ndgrad.sin in found[ndgrad], ndgrad.zeros in found[ndgrad]
    (True, False)
    """
    out: dict = collections.defaultdict(list)     # (a namespace not loaded yet: no entry)
    for name in _NAMESPACES:
        module = sys.modules.get(name)
        if module is not None:
            out[module] = [v for v in _public(module).values() if _overridable(v)]
    _torch_function.build_dispatchers()
    methods: list[Callable] = [v for n, v in vars(Tensor).items() if _overridable(v)
                               or n in _torch_function.DISPATCHED_NAMES]
    out[Tensor] = methods
    return out


def get_ignored_functions() -> set:
    """The public functions of ndgrad's loaded namespaces that no ``__torch_function__`` takes
    over (factories, predicates, settings).

    >>> import ndgrad
    >>> from ndgrad.overrides import get_ignored_functions
    >>> ndgrad.is_tensor in get_ignored_functions(), ndgrad.sin in get_ignored_functions()
    (True, False)
    """
    out: set = set()
    for name in _NAMESPACES:
        module = sys.modules.get(name)
        if module is not None:
            out.update(v for v in _public(module).values() if not _overridable(v)
                       and getattr(v, "__hash__", None) is not None)
    return out
