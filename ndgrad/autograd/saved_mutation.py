"""``allow_mutation_on_saved_tensors`` and ``increment_version``.

Inside ``allow_mutation_on_saved_tensors()`` a tensor saved for backward may be modified in
place: the first in-place write to it copies its values as they were, and the backward reads
that copy, so gradients are those of the values the forward used. Forward and backward must
both run inside the same context (a backward after it exits raises, as in PyTorch).

Which writes are seen, as in PyTorch: writes through the saved tensor itself or any tensor
starting at the same address with the same storage (``.data``, ``detach()``, a view at offset
0). A write through a view at another offset, or to the base of a saved view, is not seen and
the backward reads the new values (PyTorch keys saved tensors by data address the same way).

Example:
    >>> import ndgrad
    >>> from ndgrad.autograd.graph import allow_mutation_on_saved_tensors
    >>> with allow_mutation_on_saved_tensors():
    ...     a = ndgrad.ones(3, requires_grad=True)
    ...     b = a.clone()
    ...     out = (b ** 2).sum()
    ...     _ = b.sin_()
    ...     out.backward()
    >>> a.grad
    tensor([2., 2., 2.])
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable
from typing import Any, Dict, List

import numpy as np

from .. import _write_watch
from ..ops import views_inplace as _views_inplace
from ..tensor import Tensor
from .grad_mode import no_grad
from .saved import saved_tensors_hooks

__all__ = ["allow_mutation_on_saved_tensors", "increment_version"]

_OUTSIDE = ("Trying to backward outside of the 'allow_mutation_on_saved_tensors' context"
            "in which the graph was originally recorded.")
_active: List["_AllowMutationOnSavedContext"] = []
_lock = threading.Lock()


def _address(arr: np.ndarray) -> int:
    return arr.__array_interface__["data"][0]


class _Packed:
    """What a saved tensor is packed into: the tensor, and its copy once it was written to."""

    __slots__ = ("tensor", "original", "__weakref__")

    def __init__(self, tensor: Tensor) -> None:
        self.tensor = tensor
        self.original: Any = None


class _AllowMutationOnSavedContext:
    """The state of one ``allow_mutation_on_saved_tensors`` context: the packed saved tensors
    by data address (``saved``), and whether the context is still open (``open``)."""

    def __init__(self) -> None:
        self.saved: Dict[int, List[weakref.ref]] = {}
        self.open = True

    def pack(self, t: Tensor) -> _Packed:
        p = _Packed(t)
        with _lock:
            self.saved.setdefault(_address(t._data), []).append(weakref.ref(p))
        return p

    def unpack(self, p: _Packed) -> Tensor:
        if not self.open:
            raise AssertionError(_OUTSIDE)
        return p.tensor if p.original is None else p.original

    def written(self, arr: np.ndarray) -> None:
        """An in-place write into ``arr`` is about to happen: copy the saved tensors that
        start at its address and were not copied yet."""
        with _lock:
            refs = self.saved.pop(_address(arr), None)
        if not refs:
            return
        with no_grad():
            for r in refs:
                p = r()
                if p is not None and p.original is None:
                    p.original = p.tensor.clone()


class allow_mutation_on_saved_tensors:
    """Context manager: tensors saved for backward may be modified in place inside; the backward
    uses their values from before the modification (see the module docstring)."""

    def __enter__(self) -> _AllowMutationOnSavedContext:
        with _lock:
            if _active:
                raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
            ctx = _AllowMutationOnSavedContext()
            _active.append(ctx)
        self._ctx = ctx
        self._hooks = saved_tensors_hooks(ctx.pack, ctx.unpack)
        self._hooks.__enter__()
        _write_watch.set_watcher("allow_mutation_on_saved_tensors", ctx.written)
        return ctx

    def __exit__(self, *exc: Any) -> None:
        _write_watch.set_watcher("allow_mutation_on_saved_tensors", None)
        self._hooks.__exit__(*exc)
        ctx = self._ctx
        ctx.open = False
        ctx.saved.clear()
        with _lock:
            _active.remove(ctx)


def increment_version(tensor: Any) -> None:
    """Bump the version counter of ``tensor`` (or of each tensor of an iterable) as an in-place
    change would, so saved tensors of it refuse to be used by a backward.

    >>> import ndgrad
    >>> from ndgrad.autograd.graph import increment_version
    >>> t = ndgrad.ones(2)
    >>> increment_version([t, t]); t._version
    2
    """
    if isinstance(tensor, Tensor):
        _views_inplace._bump(tensor)
        return
    if not isinstance(tensor, Iterable):
        raise RuntimeError("increment_version expect a Iterable[Tensor] as input")
    for t in tensor:        # each bumped in turn, as in PyTorch (a bad element stops there)
        if not isinstance(t, Tensor):
            raise RuntimeError("increment_version expects each element of the iterable to be "
                               "a tensor")
        _views_inplace._bump(t)
