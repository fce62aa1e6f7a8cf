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

from typing import Any, NamedTuple, Optional

from .node import Node
from .saved import SavedTensor, disable_saved_tensors_hooks, saved_tensors_hooks

__all__ = ["Node", "GradientEdge", "get_gradient_edge", "saved_tensors_hooks",
           "disable_saved_tensors_hooks", "SavedTensor", "save_on_cpu"]


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
    from ..ops._dispatch import gradient_edge
    node, nr = gradient_edge(tensor)
    return GradientEdge(node, nr)
