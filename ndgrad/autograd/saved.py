"""Saved tensors: values a node keeps for its backward, checked against in-place changes.

Note [Saved tensors and version counters]
A ``SavedTensor`` remembers the version of the tensor when it was saved. Every in-place op bumps
the version counter shared by a tensor, its views and its detached aliases; unpacking a saved
tensor whose counter moved raises PyTorch's "modified by an inplace operation" error. An op that
saves its own output keeps a detached alias (no ``grad_fn``, so no reference cycle between the
node and its output) and rebuilds the output's history on unpack when a graph is being recorded
(double backward). ``release()`` drops the value: unpacking afterwards raises the "backward
through the graph a second time" error.

Example:
    >>> import ndgrad
    >>> x = ndgrad.ones(2, requires_grad=True)
    >>> y = x.exp()
    >>> y.grad_fn._saved_result.shape
    ndgrad.Size([2])
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Callable

import numpy as np

from .._dtype import from_numpy_dtype
from .accumulate_grad import grad_accumulator
from .grad_mode import _state as _grad_state
from .node import SECOND_BACKWARD_MSG

_new = object.__new__

__all__ = ["SavedTensor", "SavedTensorList", "TensorList", "SavedValue", "SECOND_BACKWARD_MSG",
           "saved_tensors_hooks", "disable_saved_tensors_hooks"]

class SavedValue:
    """A saved non-tensor value (the scalar of ``x * 2``); freed with the node's tensors."""

    __slots__ = ("_value",)

    def __init__(self, value: Any) -> None:
        self._value = value

    def unpack(self, node: Any = None) -> Any:
        """The value that was saved."""
        return self._value

    def release(self) -> None:
        """Drop the saved value."""
        self._value = None

    def unpack_data(self, node: Any = None) -> Any:
        """The value, for a backward rule on raw arrays (Note [Raw backward rules])."""
        return self._value


class SavedTensor:
    """A tensor saved for backward: version-checked on unpack, or packed by the active
    saved-tensor hooks (see ``saved_tensors_hooks``)."""

    __slots__ = ("_tensor", "_version", "_is_output", "_freed", "_output_nr", "_packed",
                 "_unpack_hook", "_identity")

    def __init__(self, tensor: Any, is_output: bool = False, output_nr: int = 0) -> None:
        if tensor._inference:
            raise RuntimeError(INFERENCE_SAVE_MSG)
        vc = tensor._version_counter
        self._is_output = is_output
        self._output_nr = output_nr
        self._freed = False
        self._unpack_hook = None
        if _hooks_in_use[0]:
            stack = getattr(_hooks_local, "stack", None)
            if stack:
                pack, unpack = stack[-1]
                self._tensor = None
                self._version = 0
                self._identity = None if is_output else _autograd_identity(tensor)
                self._packed = _call_pack(pack, tensor)
                self._unpack_hook = unpack
                return
        if is_output:
            # Detached alias sharing data and version counter: breaks the node<->output cycle.
            if vc is None:
                vc = tensor._version_counter = [0]
            alias = _new(type(tensor))
            alias._data = tensor._data
            alias._version_counter = vc
            tensor = alias
        self._tensor = tensor
        self._version = vc[0] if vc is not None else 0

    def unpack(self, node: Any = None) -> Any:
        """The saved tensor, rebuilt for use in backward; raises once released."""
        if self._freed:
            raise RuntimeError(SECOND_BACKWARD_MSG)
        if self._unpack_hook is not None:
            t = self._unpack_hook(self._packed)
            if not hasattr(t, "_data"):
                raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but "
                                f"got result of type {type(t).__name__}")
            vc = None          # with hooks the value is theirs: no version check (as PyTorch)
            ident = self._identity
            if ident is not None:
                # The hook gives the value; the autograd identity is the saved tensor's, so
                # that double backward reaches the original graph (as PyTorch).
                out = _new(type(t))
                out._data = t._data
                out._version_counter = t._version_counter
                fn, nr_or_acc = ident
                if fn is not None:
                    out._grad_fn = fn
                    out._output_nr = nr_or_acc
                else:
                    out._grad_acc = weakref.ref(nr_or_acc)
                out._requires_grad = True
                return out
        else:
            t = self._tensor
            assert t is not None                 # released values raised above
            vc = t._version_counter
            if vc is not None and vc[0] != self._version:
                raise RuntimeError(_modified_message(t, node, self, vc[0]))
        if self._is_output and node is not None:
            if _grad_state.enabled:
                # Double backward: the saved output must carry its history.
                out = _new(type(t))
                out._data = t._data
                out._version_counter = vc if vc is not None else t._version_counter
                out._grad_fn = node
                out._requires_grad = True
                out._output_nr = self._output_nr
                out._fw_grads = t._fw_grads    # its tangents too (autograd/forward_ad.py)
                return out
        return t

    def unpack_data(self, node: Any = None) -> Any:
        """The saved tensor's ndarray, checked as ``unpack`` checks it, or ``NotImplemented``
        when saved tensor hooks packed it (Note [Raw backward rules] in ops/_dispatch.py)."""
        if self._unpack_hook is not None:
            return NotImplemented          # packed by hooks: the Tensor rule unpacks it
        t = self._tensor
        if t is None:
            return self.unpack(node)       # released: raises
        vc = t._version_counter
        if vc is not None and vc[0] != self._version:
            raise RuntimeError(_modified_message(t, node, self, vc[0]))
        return t._data

    def release(self) -> None:
        """Free the saved tensor; unpacking afterwards raises."""
        self._freed = True
        self._tensor = None
        self._packed = None
        self._identity = None

    def register_hooks(self, pack_hook: Callable[[Any], Any],
                       unpack_hook: Callable[[Any], Any]) -> None:
        """Pack this saved tensor now with ``pack_hook``; unpack it with ``unpack_hook``."""
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("Expected pack_hook and unpack_hook to be callable")
        if self._unpack_hook is not None:
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have already "
                               "been set. Hint: only one pair of hooks is allowed at a time.")
        if self._freed:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor after it has been freed. Saved "
                "intermediate values of the graph are freed when you call .backward() or "
                "autograd.grad(). Specify retain_graph=True if you need to backward through the "
                "graph a second time or if you need to access saved variables after calling "
                "backward.")
        self._identity = None if self._is_output else _autograd_identity(self._tensor)
        self._packed = _call_pack(pack_hook, self._tensor)
        self._unpack_hook = unpack_hook
        self._tensor = None


class TensorList(tuple):
    """Optional tensors passed to an op as one non-tensor argument (the index tensors of
    ``x[idx]``, None where a slice keeps a dim); saved as a ``SavedTensorList``."""

    __slots__ = ()


class SavedTensorList:
    """A saved ``TensorList``: each tensor saved (packed, version-checked) in order; unpacks
    as a tuple holding None where the list did."""

    __slots__ = ("_items",)

    def __init__(self, tensors: TensorList) -> None:
        self._items = [None if t is None else SavedTensor(t) for t in tensors]

    def unpack(self, node: Any = None) -> tuple:
        """The saved tensors (None entries kept)."""
        return tuple([None if s is None else s.unpack(node) for s in self._items])

    def unpack_data(self, node: Any = None) -> Any:
        """Not arrays: the Tensor rule unpacks it (Note [Raw backward rules])."""
        return NotImplemented

    def release(self) -> None:
        """Free every saved tensor."""
        for s in self._items:
            if s is not None:
                s.release()


def _autograd_identity(tensor: Any) -> Any:
    """What a hook-packed tensor's unpacked value is attached to: ``(grad_fn, output_nr)``,
    ``(None, AccumulateGrad)`` for a leaf that requires grad, or None."""
    fn = tensor.grad_fn if tensor._base is not None else tensor._grad_fn
    if fn is not None:
        return (fn, tensor._output_nr)
    if tensor._requires_grad:
        return (None, grad_accumulator(tensor))
    return None


def _call_pack(pack: Callable[[Any], Any], tensor: Any) -> Any:
    """Run a pack hook as PyTorch does: in no_grad mode, and refusing in-place changes of the
    tensor it is given."""
    vc = tensor._version_counter
    before = vc[0] if vc is not None else 0
    prev = _grad_state.enabled
    _grad_state.enabled = False
    try:
        packed = pack(tensor)
    finally:
        _grad_state.enabled = prev
    vc = tensor._version_counter
    if (vc[0] if vc is not None else 0) != before:
        raise RuntimeError(
            "A saved tensor pack hook is modifying its input in place. Tensors provided as input "
            "to pack hook cannot be modified by in-place operations as this can lead to "
            "unexpected side-effects. Please open an issue if you need to perform in-place "
            "operations on the input to a pack hook.")
    return packed


INFERENCE_SAVE_MSG = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
    "inference mode in computation tracked by autograd. To work around this, you can make a "
    "clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead of "
    "`torch.inference_mode()`.")


# ---------------------------------------------------------------------------- saved-tensor hooks
_hooks_local = threading.local()     # .stack: [(pack, unpack)], .disabled: message or None
_hooks_in_use = [0]                  # threads with hooks active: the hot path checks only this


class saved_tensors_hooks:
    """Context manager: every tensor saved for backward inside is passed to ``pack_hook`` when
    saved, and the packed value to ``unpack_hook`` when backward needs it. Nested managers:
    the innermost one applies. Thread-local.

    >>> import ndgrad
    >>> from ndgrad.autograd.graph import saved_tensors_hooks
    >>> x = ndgrad.ones(2, requires_grad=True)
    >>> with saved_tensors_hooks(lambda t: t * 1, lambda p: p):
    ...     y = (x * x).sum()
    >>> y.backward(); x.grad
    tensor([2., 2.])
    """

    def __init__(self, pack_hook: Callable[[Any], Any],
                 unpack_hook: Callable[[Any], Any]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> "saved_tensors_hooks":
        disabled = getattr(_hooks_local, "disabled", None)
        if disabled is not None:
            raise RuntimeError(disabled)
        stack = getattr(_hooks_local, "stack", None)
        if stack is None:
            stack = _hooks_local.stack = []
        stack.append((self.pack_hook, self.unpack_hook))
        with _lock:
            _hooks_in_use[0] += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        _hooks_local.stack.pop()
        with _lock:
            _hooks_in_use[0] -= 1


class disable_saved_tensors_hooks:
    """Context manager under which using ``saved_tensors_hooks`` raises ``error_message``."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self) -> None:
        if getattr(_hooks_local, "stack", None):      # hooks already active in this thread
            raise RuntimeError(self.error_message)
        self._prev = getattr(_hooks_local, "disabled", None)
        _hooks_local.disabled = self.error_message

    def __exit__(self, *exc: Any) -> None:
        _hooks_local.disabled = self._prev


_lock = threading.Lock()


def _modified_message(t: Any, node: Any, saved: SavedTensor, current: int) -> str:
    dt = from_numpy_dtype(t._data.dtype)._torch_name
    # PyTorch's legacy type names: torch.FloatTensor ..., but CPUBoolType for bool.
    kind = "CPUBoolType" if t._data.dtype == np.bool_ else f"torch.{dt}Tensor"
    shape = list(t._data.shape)
    where = ""
    # Name the forward op that produced the tensor as PyTorch does: "ExpBackward0" -> "Exp",
    # "MaxBackward1" -> "Max1".
    if saved._is_output and node is not None:
        fn, nr = node, saved._output_nr
    else:
        if t._base is not None:        # a stale view names its regenerated history
            try:
                _ = t.grad_fn
            except RuntimeError:
                pass
        fn, nr = t._grad_fn, t._output_nr
    if fn is not None:
        label = fn.name().replace("Backward0", "").replace("Backward", "")
        where = f", which is output {nr} of {label},"
    vc = t._version_counter
    modified = (f" It was last modified in place at {vc[1]}."
                if vc is not None and len(vc) > 1 and vc[1] else "")
    site = _forward_site(node)
    saved_at = (f" It was saved for backward by {node.name()} at {site}." if site else
                " Hint: enable anomaly detection with ndgrad.autograd.set_detect_anomaly(True) "
                "to also see where it was saved for backward.")
    return (
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [{kind} {shape}]{where} is at version {current}; expected "
        f"version {saved._version} instead.{modified}{saved_at}")


def _forward_site(node: Any) -> str:
    """``file:line`` of the user code that ran ``node``'s forward, when anomaly mode recorded
    the forward stack (recording it always would cost ~1 µs per op)."""
    trace = getattr(node, "_anomaly_trace", None) if node is not None else None
    trace = getattr(trace, "stack", trace)      # anomaly_mode._ForwardTrace
    if not trace:
        return ""
    if isinstance(trace, str):
        lines = [ln for ln in trace.splitlines() if ln.strip().startswith("File ")]
        user = [ln for ln in lines if "/ndgrad/" not in ln]
        return (user or lines or [""])[-1].strip()
    frames = [f for f in trace if "/ndgrad/" not in getattr(f, "filename", "")]
    f = (frames or list(trace))[-1]
    return f"{f.filename}:{f.lineno}"
