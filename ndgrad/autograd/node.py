"""Graph nodes: the backward functions the engine runs.

A ``Node`` is the backward of one forward operation. ``next_functions`` holds one edge
``(node, input_nr)`` per differentiable forward input (``(None, 0)`` where no gradient flows);
``apply`` maps gradients w.r.t. the forward outputs to gradients w.r.t. the forward inputs.

Example:
    >>> import ndgrad
    >>> x = ndgrad.ones(2, requires_grad=True)
    >>> y = x * 3
    >>> y.grad_fn.name()
    'MulBackward0'
    >>> y.grad_fn.next_functions[0][0].name()
    'torch::autograd::AccumulateGrad'
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Optional

from ..tensor import _zeros_meta
from .grad_mode import _state as _grad_state
from .hooks import HookDict, RemovableHandle, add_hook

# Raised on a second backward through freed saved values (re-exported by saved.py).
SECOND_BACKWARD_MSG = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed when "
    "you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward.")


class _Released(tuple):
    """Marker for a node whose saved tensors were freed (empty, so falsy)."""


RELEASED = _Released()

__all__ = ["Node", "OpNode", "next_sequence_nr", "set_saved_attributes"]

_seq = itertools.count()
next_sequence_nr = _seq.__next__


class Node:
    """Base class of every backward function (built-in ops, AccumulateGrad, custom Functions)."""

    next_functions: tuple = ()
    _num_inputs: int = 1         # gradients it receives = outputs of the forward op
    _sequence_nr: int = 0
    _pre_hooks: Optional[dict] = None
    _post_hooks: Optional[dict] = None
    # Note [Tensor hooks on non-leaf tensors]
    # ``Tensor.register_hook`` on a non-leaf stores the hook here, keyed by the tensor's
    # ``output_nr``; ``retain_grad`` stores its hook separately so that it always runs last.
    _tensor_pre_hooks: Optional[dict] = None
    _retains_grad_hooks: Optional[dict] = None
    _input_meta: tuple = ()      # (shape, numpy dtype) per edge, checked by the engine
    _saved: tuple = ()           # SavedTensor objects, released after the node ran
    # True once any hook is registered: the engine then takes its general path.
    _has_hooks: bool = False
    _metadata: Optional[dict] = None
    _anomaly_trace = None
    _full_name: Optional[str] = None

    def name(self) -> str:
        """The node's name, e.g. ``'MulBackward0'``."""
        return self._full_name or type(self).__name__

    def apply(self, grads: list) -> tuple:
        """Turn ``grads`` (one per output) into one gradient per input edge; subclasses
        must implement it."""
        raise NotImplementedError

    def __call__(self, *grads: Any) -> Any:
        out = self.apply(list(grads))
        return out[0] if len(out) == 1 else out

    def release_variables(self) -> None:
        """Free saved tensors (called after the node ran unless ``retain_graph``)."""

    def register_hook(self, fn: Callable) -> RemovableHandle:
        """Register ``fn(grad_inputs, grad_outputs)``, called after the node ran; it may return
        replacement ``grad_inputs``."""
        if self._post_hooks is None:
            self._post_hooks = HookDict()
        self._has_hooks = True
        return add_hook(self._post_hooks, fn)

    def register_prehook(self, fn: Callable) -> RemovableHandle:
        """Register ``fn(grad_outputs)``, called before the node runs; it may return replacement
        ``grad_outputs``."""
        if self._pre_hooks is None:
            self._pre_hooks = HookDict()
        self._has_hooks = True
        return add_hook(self._pre_hooks, fn)

    @property
    def metadata(self) -> dict:
        """A dict for arbitrary user data, created on first access."""
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def _add_tensor_pre_hook(self, output_nr: int, fn: Callable) -> RemovableHandle:
        if self._tensor_pre_hooks is None:
            self._tensor_pre_hooks = {}
        self._has_hooks = True
        hooks = self._tensor_pre_hooks.get(output_nr)
        if hooks is None:
            hooks = self._tensor_pre_hooks[output_nr] = HookDict()
        return add_hook(hooks, fn)

    def __repr__(self) -> str:     # torch's C++ nodes print their class name without namespace
        name = type(self).name(self).rsplit("::", 1)[-1]
        return f"<{name} object at {hex(id(self))}>"


class OpNode(Node):
    """The node of a built-in op. One subclass per op (named like PyTorch's, ``MulBackward0``)
    carries the op as ``_op``; instances carry the saved values and non-tensor arguments."""

    _op: Any = None
    _args: tuple = ()
    _output_meta: tuple = ()

    def apply(self, grads: list) -> tuple:
        if not self._output_meta:
            g = grads[0]
            if g is None:
                return (None,) * len(self.next_functions)
            out = self._op.vjp(self, g)
        else:
            if all(g is None for g in grads):
                return (None,) * len(self.next_functions)
            out = self._op.vjp(self, *_materialize(grads, self._output_meta))
        if type(out) is not tuple:
            out = (out,)
        pad = self._op.pad_meta     # (None,) per trailing Python-scalar edge (Op.pad)
        if pad:
            out = out + pad
        return out

    @property
    def saved(self) -> tuple:
        """The saved values, unpacked (version-checked)."""
        sv = self._saved
        if sv is RELEASED:
            raise RuntimeError(SECOND_BACKWARD_MSG)
        if len(sv) == 1:
            return (sv[0].unpack(self),)
        if len(sv) == 2:      # unrolled: a comprehension is a frame of its own
            return (sv[0].unpack(self), sv[1].unpack(self))
        return tuple([s.unpack(self) for s in sv])

    def needs_input_grad(self, i: int) -> bool:
        """Whether input ``i``'s gradient is wanted: it has a graph edge and, in a backward
        pass restricted by ``inputs``, the edge leads to one of them."""
        nxt = self.next_functions[i][0]
        if nxt is None:
            return False
        # Note [Pruned backward]
        # ``grad(out, x)`` needs no gradient for the weights: the engine publishes the nodes
        # that receive gradients and a rule skips the rest (PyTorch's
        # task_should_compute_output), e.g. one GEMM of mm's two. A node outside the pass
        # (the op node a CopySlices runs inside its own rule) keeps every gradient.
        receivers = _grad_state.receivers
        return receivers is None or nxt in receivers or self not in receivers

    def needs_input_grads(self) -> tuple:
        """``(needs_input_grad(0), needs_input_grad(1))`` in one call: what a binary op's raw
        rule asks on every backward (Note [Raw backward rules] in ops/_dispatch.py)."""
        edges = self.next_functions
        n0 = edges[0][0]
        n1 = edges[1][0]
        receivers = _grad_state.receivers
        if receivers is None:
            return n0 is not None, n1 is not None
        outside = self not in receivers                 # Note [Pruned backward]
        return (n0 is not None and (outside or n0 in receivers),
                n1 is not None and (outside or n1 in receivers))

    @property
    def args(self) -> tuple:
        """The op's non-tensor arguments."""
        return self._args

    def input_shape(self, i: int = 0) -> tuple:
        """Shape of tensor input ``i`` at forward time."""
        return self._input_meta[i][0]

    def input_dtype(self, i: int = 0) -> Any:
        """NumPy dtype of tensor input ``i`` at forward time."""
        return self._input_meta[i][1]

    def release_variables(self) -> None:
        if self._saved:
            self._saved = RELEASED

    def __dir__(self) -> list:
        # dir(grad_fn) lists _saved_<name> and _raw_saved_<name>, as PyTorch's nodes do (tools
        # such as ndgrad.viz.make_dot find a node's saved values and arguments this way).
        cls = type(self)
        names = {n for n in super().__dir__()
                 if not isinstance(getattr(cls, n, None), _SavedAttr)}
        op = cls._op
        if op is not None:
            names.update("_saved_" + n for n in op.saved_names)
            names.update("_saved_" + n for n in op.arg_names[:len(self._args)])
            names.update("_raw_saved_" + n for n in op.saved_names)
        return sorted(names)


# Note [Saved attributes as descriptors]
# ``grad_fn._saved_self``, ``grad_fn._raw_saved_self`` and ``grad_fn._saved_<argument>`` are
# properties that ``set_saved_attributes`` puts on each op's node class (from the op's
# ``saved_names`` and ``arg_names``, again whenever those change), not a ``__getattr__``: a
# class with ``__getattr__`` gets CPython's slow attribute hook for every lookup on its
# instances (no specialised ``LOAD_ATTR``), ~9 ns more per ``node._saved``, ``node._op`` ...,
# of which an op's forward and backward make a few dozen. An attribute the class itself sets
# (``_saved_accumulate = False``) is left alone, as a class attribute was found before
# ``__getattr__`` was asked.
class _SavedAttr(property):
    """A ``_saved_<name>`` or ``_raw_saved_<name>`` property (Note [Saved attributes as
    descriptors])."""


def _saved_attr(i: int) -> _SavedAttr:
    def get(self: Any) -> Any:
        sv = self._saved
        if sv is RELEASED:
            raise RuntimeError(SECOND_BACKWARD_MSG)
        return sv[i].unpack(self)
    return _SavedAttr(get)


def _raw_saved_attr(i: int) -> _SavedAttr:
    def get(self: Any) -> Any:
        sv = self._saved
        if sv is RELEASED:
            raise RuntimeError(SECOND_BACKWARD_MSG)
        v = sv[i]
        # A saved list of tensors (autograd/saved.py): its SavedTensors, as PyTorch.
        return tuple(v._items) if hasattr(v, "_items") else v
    return _SavedAttr(get)


def _arg_attr(name: str, i: int) -> _SavedAttr:
    def get(self: Any) -> Any:
        args = self._args
        if i < len(args):
            return args[i]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
    return _SavedAttr(get)


def set_saved_attributes(cls: type, saved_names: tuple, arg_names: tuple) -> None:
    """(Re)install the ``_saved_*`` properties of an op's node class."""
    for k, v in list(cls.__dict__.items()):
        if isinstance(v, _SavedAttr):
            delattr(cls, k)
    attrs: dict = {}
    for i, n in enumerate(arg_names):
        attrs["_saved_" + n] = _arg_attr("_saved_" + n, i)
    for i, n in enumerate(saved_names):       # a saved value wins over an argument's name
        if n not in saved_names[:i]:
            attrs["_saved_" + n] = _saved_attr(i)
            attrs["_raw_saved_" + n] = _raw_saved_attr(i)
    for k, v in attrs.items():
        if k not in cls.__dict__:
            setattr(cls, k, v)


def _materialize(grads: list, meta: tuple) -> list:
    return [g if g is not None else _zeros_meta(*m) for g, m in zip(grads, meta)]
