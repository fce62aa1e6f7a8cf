"""Second-order nodes that keep an op's input in the graph of its gradient.

Note [Input ties]
Some VJP rules do not read the op's input: pooling's gradient is the cotangent scattered or
averaged back, prelu's gradient with respect to its input reads only the sign of the input and
the weight. Their ``create_graph=True`` result would then not depend on the input at all, while
PyTorch's backward kernels take the input as an argument, so PyTorch's second-order node
(``MaxPool2DWithIndicesBackwardBackward0`` ...) has an edge to it: the gradient requires grad
and differentiating it again gives zeros for the input instead of "does not require grad".
``tie(result, ctx)`` reproduces that: when a graph is being recorded and the op's input has an
edge, ``result`` passes through one more node, named as PyTorch names the second-order node,
whose edges are ``result``'s and the input's; its backward passes the cotangent on to
``result`` and gives the input zeros. Nothing is recorded when the backward is not
differentiated (the usual case), so first-order backward costs one flag test.

Example:
    >>> import ndgrad, ndgrad.nn.functional as F
    >>> x = ndgrad.ones(1, 1, 2, 2, requires_grad=True)
    >>> g, = ndgrad.autograd.grad(F.max_pool2d(x, 2).sum(), x, create_graph=True)
    >>> type(g.grad_fn).__name__
    'MaxPool2DWithIndicesBackwardBackward0'
    >>> ndgrad.autograd.grad(g.sum(), x)[0].sum().item()
    0.0
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.grad_mode import _state
from ..tensor import Tensor, _new, _wrap
from . import _dispatch
from ._batching import RULES
from ._dispatch import Op, apply

__all__ = ["tie", "tied"]

# first-order op -> its tie op
_TIES: dict = {}


def _tie_vjp(ctx: Any, g: Tensor) -> tuple:
    shape, dtype = ctx._input_meta[1]
    return g, _wrap(np.zeros(shape, dtype))


def _tie_forward(g: np.ndarray, x: np.ndarray) -> np.ndarray:
    return g


def tied(op: Op, node: str = "") -> None:
    """Declare that ``op``'s VJP result is tied to its first input (Note [Input ties]); the
    second-order node is called ``node`` (default: the op's node name with ``Backward0``
    replaced by ``BackwardBackward0``)."""
    name = node or op.node_name[:-len("Backward0")] + "BackwardBackward0"
    t = Op("_tie_" + op.name, name, _tie_forward, _tie_vjp, inputs=("grad", "self"),
           jvp=lambda ctx, tg, tx: tg)
    _TIES[op] = t
    RULES[t] = lambda c, args: apply(c.op, tuple(c.ts), tuple(c.arrs), args)


def tie(result: Tensor, ctx: Any, i: int = 0) -> Tensor:
    """``result`` (the gradient for input ``i`` of the node ``ctx``) tied to that input when a
    graph is recorded (Note [Input ties])."""
    if not _state.enabled or _dispatch._TRACING or result is None:
        return result
    edge = ctx.next_functions[i]
    op = _TIES.get(ctx._op)
    if edge[0] is None or op is None:
        return result
    shape, dtype = ctx._input_meta[i]
    # A stand-in for the input: its edge, its metadata, no data (the tie never reads it).
    proxy = _new(Tensor)
    proxy._data = np.broadcast_to(np.zeros((), dtype), shape)
    proxy._grad_fn, proxy._output_nr = edge
    proxy._requires_grad = True
    return apply(op, (result, proxy), (result._data, proxy._data))
