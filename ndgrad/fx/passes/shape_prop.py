"""``ShapeProp`` (torch.fx.passes.shape_prop): run a GraphModule on example inputs and record
each node's result in ``node.meta['tensor_meta']`` (a ``TensorMetadata``: shape, dtype,
requires_grad, stride, memory_format, is_quantized, qparams) and ``node.meta['type']``.

Example:
    >>> import ndgrad, ndgrad.fx as fx
    >>> from ndgrad.fx.passes.shape_prop import ShapeProp
    >>> gm = fx.symbolic_trace(lambda x: x.sum(0))
    >>> _ = ShapeProp(gm).propagate(ndgrad.ones(3, 2))
    >>> [n.meta["tensor_meta"].shape for n in gm.graph.nodes if n.op != "output"]
    [ndgrad.Size([3, 2]), ndgrad.Size([2])]
"""

from __future__ import annotations

from typing import Any, Dict, NamedTuple, Optional, Tuple

import ndgrad

from ..interpreter import Interpreter
from ..node import Node, map_aggregate

__all__ = ["TensorMetadata", "ShapeProp", "_extract_tensor_metadata"]


class TensorMetadata(NamedTuple):
    shape: Any
    dtype: Any
    requires_grad: bool
    stride: Tuple[int, ...]
    memory_format: Optional[Any]
    is_quantized: bool
    qparams: Dict[str, Any]


def _extract_tensor_metadata(result: ndgrad.Tensor, include_contiguity: bool = True
                             ) -> TensorMetadata:
    memory_format = None
    if include_contiguity:
        for fmt in (ndgrad.contiguous_format, ndgrad.channels_last, ndgrad.channels_last_3d):
            try:
                if result.is_contiguous(memory_format=fmt):
                    memory_format = fmt
                    break
            except RuntimeError:
                continue
    return TensorMetadata(result.shape, result.dtype, result.requires_grad, result.stride(),
                          memory_format, False, {})


class ShapeProp(Interpreter):
    """Records each node's result metadata while running the graph (see the module
    docstring)."""

    def __init__(self, gm: Any, fake_mode: Optional[Any] = None) -> None:
        super().__init__(gm)
        self.fake_mode = fake_mode

    def run_node(self, n: Node) -> Any:
        result = super().run_node(n)
        found = [False]

        def extract(obj: Any) -> Any:
            if isinstance(obj, ndgrad.Tensor):
                found[0] = True
                return _extract_tensor_metadata(obj)
            return obj

        meta = map_aggregate(result, extract)
        if found[0]:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args: Any) -> Any:
        """Run the graph on ``args``, recording metadata; returns the result."""
        return super().run(*args)
