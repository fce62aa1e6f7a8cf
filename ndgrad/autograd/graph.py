"""Graph inspection: ``Node``, ``GradientEdge`` and ``get_gradient_edge``.

Example:
    >>> import ndgrad
    >>> from ndgrad.autograd.graph import get_gradient_edge
    >>> x = ndgrad.ones(2, requires_grad=True)
    >>> edge = get_gradient_edge(x * 2)
    >>> edge.node.name(), edge.output_nr
    ('MulBackward0', 0)
"""

from __future__ import annotations

import threading
from typing import Any, Callable, NamedTuple, Optional, Sequence

from ..ops._dispatch import grad_accumulator, gradient_edge
from . import engine
from .hooks import _MultiHandle, RemovableHandle
from .node import Node
from .saved import SavedTensor, disable_saved_tensors_hooks, saved_tensors_hooks
from .saved_mutation import allow_mutation_on_saved_tensors, increment_version

__all__ = ["Node", "GradientEdge", "get_gradient_edge", "saved_tensors_hooks",
           "disable_saved_tensors_hooks", "SavedTensor", "save_on_cpu",
           "register_multi_grad_hook", "allow_mutation_on_saved_tensors", "increment_version"]


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept in host memory: everything already is in ndgrad, so this is
    ``saved_tensors_hooks`` with identity hooks (kept for PyTorch compatibility)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        super().__init__(lambda t: t, lambda t: t)


class GradientEdge(NamedTuple):
    """An edge of the graph: the node that receives the gradient and its input number."""

    node: Node
    output_nr: int
    ownership_token: Optional[Any] = None


def get_gradient_edge(tensor: Any) -> GradientEdge:
    """The edge through which ``tensor``'s gradient flows (its ``grad_fn`` or, for a leaf, its
    ``AccumulateGrad``). Usable as ``inputs=`` of ``backward``/``grad``."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does "
                           "not require gradients")
    node, nr = gradient_edge(tensor)
    return GradientEdge(node, nr)


def _node_of(t: Any) -> Node:
    """The node that receives ``t``'s gradient: its ``grad_fn``, or its ``AccumulateGrad``."""
    if isinstance(t, GradientEdge):
        return t.node
    if t.requires_grad and t.grad_fn is None:
        return grad_accumulator(t)
    if t.grad_fn is None:
        raise AssertionError("Expected gradient function to be set")
    return t.grad_fn


def _task_id() -> int:
    tid = engine.current_graph_task_id()
    if tid == -1:
        raise AssertionError("expected this hook to be called inside a backward call")
    return tid


def register_multi_grad_hook(tensors: Sequence[Any], fn: Callable[..., None], *,
                             mode: str = "all") -> RemovableHandle:
    """Register ``fn`` to run once per backward pass on the gradients of several tensors.

    ``mode="all"``: ``fn(grads)`` runs once the gradient of every tensor that this backward
    pass computes has been computed; ``grads`` is a list with one entry per tensor, ``None``
    for the tensors that the pass does not reach (not in the graph, or not on a path to the
    ``inputs`` of ``backward``/``grad``). ``mode="any"``: ``fn(grad)`` runs on the first
    gradient computed for any of the tensors. ``fn`` must not modify its arguments; what it
    returns is ignored. The hooks are tensor hooks (``Tensor.register_hook``), so they run in
    registration order with the other hooks of each tensor. ``remove()`` on the returned
    handle unregisters them all.

    As in PyTorch, ``"all"`` cannot follow a leaf whose gradient ``autograd.grad`` returns.

    >>> import ndgrad
    >>> from ndgrad.autograd.graph import register_multi_grad_hook
    >>> a = ndgrad.ones(2, requires_grad=True)
    >>> b = ndgrad.ones(2, requires_grad=True)
    >>> c = a * 3
    >>> h = register_multi_grad_hook((a, b, c), lambda gs: print([g is not None for g in gs]))
    >>> c.sum().backward()
    [True, False, True]
    >>> h.remove()
    """
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    lock = threading.Lock()
    if mode == "any":
        fired: set = set()          # ids of the backward passes in which fn ran

        def any_hook(grad: Any) -> None:
            tid = _task_id()
            with lock:
                if tid in fired:
                    return
                fired.add(tid)
            fn(grad)

        return _MultiHandle(tuple(t.register_hook(any_hook) for t in tensors
                                 if t.requires_grad))

    nodes = [_node_of(t) for t in tensors]
    n = len(tensors)
    # Per backward pass: [gradients still expected, the gradients so far]. The count is taken
    # at the first gradient, when the engine knows which of the nodes this pass runs.
    pending: dict = {}

    def all_hook(i: int) -> Callable[[Any], None]:
        def hook(grad: Any) -> None:
            tid = _task_id()
            with lock:
                entry = pending.get(tid)
                if entry is None:
                    expected = sum(1 for node in nodes if engine.will_engine_execute_node(node))
                    entry = pending[tid] = [expected, [None] * n]
                entry[1][i] = grad
                entry[0] -= 1
                if entry[0]:
                    return
                del pending[tid]
            fn(entry[1])
        return hook

    return _MultiHandle(tuple(t.register_hook(all_hook(i)) for i, t in enumerate(tensors)))
