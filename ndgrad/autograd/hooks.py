"""Removable hook handles shared by tensors and nodes.

A handle references its hooks dict weakly, as PyTorch's do: ``h = x.register_hook(f); del x``
frees ``f`` with ``x`` (the handle does not keep it alive), and ``h.remove()`` afterwards is a
no-op. Hook dicts are ``HookDict`` (a dict that can be weakly referenced).

Example:
    >>> import ndgrad
    >>> x = ndgrad.ones(2, requires_grad=True)
    >>> h = x.register_hook(lambda g: g * 2)
    >>> h.remove()
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any

_ids = itertools.count()


class HookDict(dict):
    """The hooks of one tensor or node, ``id -> fn`` in registration order."""

    __slots__ = ("__weakref__",)


class RemovableHandle:
    """Returned by every ``register_*hook``; ``remove()`` unregisters the hook."""

    __slots__ = ("_hooks_ref", "id")
    _hooks_ref: Any       # a weak reference to the hooks' dict, or a _Strong one

    def __init__(self, hooks: dict) -> None:
        try:
            self._hooks_ref = weakref.ref(hooks)
        except TypeError:                 # a plain dict cannot be weakly referenced
            self._hooks_ref = _Strong(hooks)
        self.id = next(_ids)

    def remove(self) -> None:
        hooks = self._hooks_ref()
        if hooks is not None:
            hooks.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


class _Strong:
    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __call__(self) -> Any:
        return self.obj


def add_hook(hooks: dict, fn) -> RemovableHandle:
    if not callable(fn):
        raise TypeError(f"hook must be callable, got {type(fn).__name__}")
    handle = RemovableHandle(hooks)
    hooks[handle.id] = fn
    return handle


class _MultiHandle(RemovableHandle):
    """The handle of several hooks registered together (``register_multi_grad_hook``)."""

    __slots__ = ("handles",)

    def __init__(self, handles: tuple) -> None:
        self._hooks_ref = _Strong(None)
        self.id = next(_ids)
        self.handles = handles

    def remove(self) -> None:
        for h in self.handles:
            h.remove()
