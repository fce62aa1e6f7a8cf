"""Removable hook handles shared by tensors and nodes.

Example:
    >>> import ndgrad
    >>> x = ndgrad.ones(2, requires_grad=True)
    >>> h = x.register_hook(lambda g: g * 2)
    >>> h.remove()
"""

from __future__ import annotations

import itertools
from typing import Any

_ids = itertools.count()


class RemovableHandle:
    """Returned by every ``register_*hook``; ``remove()`` unregisters the hook."""

    __slots__ = ("_hooks", "id")

    def __init__(self, hooks: dict) -> None:
        self._hooks = hooks
        self.id = next(_ids)

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


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
        super().__init__({})
        self.handles = handles

    def remove(self) -> None:
        for h in self.handles:
            h.remove()
