"""The op table's runtime: ``Op`` declares an operator once; ``apply`` runs it.

Note [One declaration per op]
An ``Op`` holds, together: the forward on ndarrays; the VJP rule, written with ndgrad ops on
Tensors so the same rule serves eager backward, ``create_graph=True`` and symbolic
differentiation; an optional JVP rule; what it saves; whether it returns a view. ``apply`` is
the only place that turns a forward into a graph node: grad-mode check, forward, wrap, and when
any input requires grad, one node of the op's class (``MulBackward0`` ...) with its edges, the
inputs' metadata (the engine uses it to undo broadcasting and cast dtypes, see
autograd/engine.py ``_validate_outputs``) and the saved tensors.

Example:
    >>> import numpy as np, ndgrad
    >>> from ndgrad.ops._dispatch import Op, apply
    >>> square = Op("square", "PowBackward0", np.square, lambda ctx, g: 2 * g * ctx.saved[0],
    ...             saves=("self",))
    >>> x = ndgrad.tensor([3.0], requires_grad=True)
    >>> y = apply(square, (x,), (x._data,))
    >>> y.backward(); x.grad
    tensor([6.])
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..autograd.accumulate_grad import AccumulateGrad
from ..autograd.grad_mode import _state
from ..autograd.node import OpNode, next_sequence_nr
from ..autograd.saved import SavedTensor
from ..tensor import Tensor, _wrap

__all__ = ["Op", "apply", "grad_accumulator", "gradient_edge", "REGISTRY"]

REGISTRY: dict = {}
_NO_EDGE = (None, 0)
_ndarray = np.ndarray
_new = object.__new__
_GRAD_KINDS = frozenset("fc")  # floating point and complex results can carry gradients
_kind_is_diff = {np.dtype(d): np.dtype(d).kind in "fc" or np.dtype(d).name == "bfloat16"
                 for d in ("float16", "float32", "float64", "complex64", "complex128", "bool",
                           "int8", "int16", "int32", "int64", "uint8")}


def _differentiable_dtype(dt: np.dtype) -> bool:
    r = _kind_is_diff.get(dt)
    if r is None:
        r = _kind_is_diff[dt] = dt.kind in "fc" or dt.name == "bfloat16"
    return r


class Op:
    """One operator: forward on ndarrays plus its derivative rules.

    Args:
        name: the op's name (``"mul"``).
        node: the backward node's class name (``"MulBackward0"``).
        forward: ``forward(*arrays, *args) -> ndarray`` (or a tuple for several outputs).
        vjp: ``vjp(ctx, *grads) -> grad or tuple of grads`` (one per tensor input, ``None``
            where not needed); ``ctx`` is the node: ``ctx.saved``, ``ctx.args``,
            ``ctx.needs_input_grad(i)``, ``ctx.input_shape(i)``.
        saves: names of what to save: tensor input names (see ``inputs``) or ``"result"``.
        inputs: names of the tensor inputs, in order.
        args: names of the non-tensor arguments (shown as ``grad_fn._saved_<name>``).
        jvp: ``jvp(ctx, tangents...) -> tangent`` for forward mode (None: not yet declared).
        view: the result is a view of the first input.
        num_outputs: number of outputs of the forward.
        pad: trailing ``(None, 0)`` edges, for Python-scalar operands that PyTorch wraps into
            tensors (``x * 2`` has two edges in PyTorch).
        differentiable: False for ops whose outputs never require grad (comparisons ...).
    """

    __slots__ = ("name", "node_name", "forward", "vjp", "jvp", "saved_names", "save_idx",
                 "inputs", "arg_names", "view", "num_outputs", "pad", "differentiable",
                 "node_cls")

    def __init__(self, name: str, node: str, forward: Callable, vjp: Optional[Callable] = None,
                 *, saves: Sequence[str] = (), inputs: Sequence[str] = ("self",),
                 args: Sequence[str] = (), jvp: Optional[Callable] = None, view: bool = False,
                 num_outputs: int = 1, pad: int = 0, differentiable: bool = True) -> None:
        self.name = name
        self.node_name = node
        self.forward = forward
        self.vjp = vjp
        self.jvp = jvp
        self.inputs = tuple(inputs)
        self.arg_names = tuple(args)
        self.saved_names = tuple(saves)
        self.save_idx = tuple(-1 if s == "result" else self.inputs.index(s) for s in saves)
        self.view = view
        self.num_outputs = num_outputs
        self.pad = pad
        self.differentiable = differentiable and vjp is not None
        self.node_cls = type(node, (OpNode,), {"_op": self, "__module__": "ndgrad.autograd"})
        REGISTRY.setdefault(name, []).append(self)

    def __repr__(self) -> str:
        return f"Op({self.name!r}, {self.node_name!r})"


def grad_accumulator(t: Tensor) -> AccumulateGrad:
    """The leaf's AccumulateGrad node (created on demand, referenced weakly by the tensor)."""
    ref = t._grad_acc
    acc = ref() if ref is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        t._grad_acc = weakref.ref(acc)
    return acc


def gradient_edge(t: Tensor) -> tuple:
    fn = t._grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    if t._requires_grad:
        return (grad_accumulator(t), 0)
    return _NO_EDGE


def apply(op: Op, tensors: tuple, arrays: tuple, args: tuple = ()) -> Any:
    """Run ``op`` on ``tensors`` (whose data, possibly cast, is ``arrays``) and record it."""
    out = op.forward(*arrays, *args)
    if op.num_outputs == 1:
        if type(out) is not _ndarray:
            out = np.asarray(out)
        result = _new(Tensor)
        result._data = out
        if _state.enabled and op.differentiable:
            for t in tensors:
                if t._requires_grad:
                    if _differentiable_dtype(out.dtype):
                        _record(op, tensors, (result,), args)
                    break
        if op.view:
            _mark_view(result, tensors[0])
        return result
    results = tuple(_wrap(o) for o in out)
    if _state.enabled and op.differentiable:
        for t in tensors:
            if t._requires_grad:
                _record(op, tensors, results, args)
                break
    if op.view:
        for r in results:
            _mark_view(r, tensors[0])
    return results


def _record(op: Op, tensors: tuple, results: tuple, args: tuple) -> None:
    node = op.node_cls()
    node._sequence_nr = next_sequence_nr()
    edges = []
    for t in tensors:
        fn = t._grad_fn
        if fn is not None:
            edges.append((fn, t._output_nr))
        elif t._requires_grad:
            edges.append((grad_accumulator(t), 0))
        else:
            edges.append(_NO_EDGE)
    meta = [(t._data.shape, t._data.dtype) for t in tensors]
    if op.pad:
        node._pad = op.pad
        edges += [_NO_EDGE] * op.pad
        meta += [None] * op.pad
    node.next_functions = tuple(edges)
    node._input_meta = tuple(meta)
    if args:
        node._args = args
    if op.save_idx:
        node._saved = tuple(SavedTensor(tensors[i]) if i >= 0 else
                            SavedTensor(results[0], True, 0) for i in op.save_idx)
    if len(results) == 1:
        r = results[0]
        r._grad_fn = node
        r._requires_grad = True
    else:
        node.num_inputs = len(results)
        node._output_meta = tuple((r._data.shape, r._data.dtype) for r in results)
        for i, r in enumerate(results):
            if _differentiable_dtype(r._data.dtype):
                r._grad_fn = node
                r._requires_grad = True
                r._output_nr = i


def _mark_view(result: Tensor, source: Tensor) -> None:
    base = source._base if source._base is not None else source
    result._base = base
    result._version_counter = base._vc()
    if source._version_counter is None:
        source._version_counter = base._version_counter
