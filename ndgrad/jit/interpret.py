"""The reference evaluator: run a Graph node by node with ndgrad ops through the dispatcher.

Under grad mode the ops record an eager autograd graph as usual, so interpreting ``df`` with
``create_graph=True`` differentiates it again (the create_graph fallback of the executor).
Undefined gradients are ``None`` (Note [Graph interface] in ir.py).

Example:
    >>> import ndgrad
    >>> from ndgrad.jit import trace_graph, interpret
    >>> g = trace_graph(lambda a, b: a * b + a, (ndgrad.ones(2), ndgrad.ones(2))).graph
    >>> interpret(g, [ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([3.0, 4.0])])
    [tensor([ 4., 10.])]
"""

from __future__ import annotations

import contextlib
import sys
import threading
from typing import Any, Iterator, List, Sequence

import numpy as np

from .. import _dtype
from ..autograd.grad_mode import _state, no_grad
from ..ops._dispatch import apply
from ..tensor import Tensor, _wrap
from .ir import Block, Graph, Node, TensorArg, Value

__all__ = ["interpret", "run_block", "materialize", "run_prim"]


def materialize(t: Any, v: Value) -> Tensor:
    """``t``, or zeros shaped like ``v`` when ``t`` is None (an AutogradZero)."""
    if t is None:
        return _wrap(np.zeros(v.shape, dtype=v.dtype))
    return t


def _as_tensor(x: Any) -> Any:
    if x is None or isinstance(x, Tensor):
        return x
    return _wrap(np.asarray(x))


def interpret(graph: Graph, inputs: Sequence[Any]) -> List[Any]:
    """Run ``graph`` on ``inputs`` (Tensors, ndarrays or None for undefined gradients); return
    its outputs (Tensors, or None for undefined values)."""
    gin = graph.inputs()
    if len(inputs) != len(gin):
        raise ValueError(f"graph takes {len(gin)} inputs, got {len(inputs)}")
    env: dict = {}
    for v, x in zip(gin, inputs):
        env[v] = _as_tensor(x)
    run_block(graph.block(), env)
    return [env[v] for v in graph.outputs()]


def run_block(block: Block, env: dict) -> None:
    for n in block._nodes:
        run_node(n, env)


def run_node(n: Node, env: dict) -> None:
    op = n.op
    if op is not None:
        ins = [materialize(env[v], v) for v in n._inputs]
        k = n.num_tensor_inputs
        tensors = tuple(ins[:k])
        if _state.enabled and _recorded_without_grad(n):
            # Recorded with grad mode off (e.g. grad(create_graph=False) inside the function).
            with no_grad():
                out = apply(op, tensors, tuple(t._data for t in tensors), n.call_args(ins))
        else:
            out = apply(op, tensors, tuple(t._data for t in tensors), n.call_args(ins))
        outs = (out,) if op.num_outputs == 1 else tuple(out)
        for v, t in zip(n._outputs, outs):
            if t._data.shape != v.shape:
                raise RuntimeError(
                    f"ndgrad.jit: {n.kind()} gave shape {list(t._data.shape)} where the traced "
                    f"graph has {list(v.shape)} (traced at {n.source or 'unknown'}): its output "
                    "shape depends on the data")
            env[v] = t
        return
    for v, t in zip(n._outputs, run_prim(n, [env[v] for v in n._inputs], env)):
        env[v] = t


def _recorded_without_grad(n: Node) -> bool:
    """A differentiable op whose tensor inputs require grad but whose float outputs do not."""
    if not n.op.differentiable:
        return False
    if not any(v.requires_grad for v in n._inputs[:n.num_tensor_inputs]):
        return False
    return not any(o.requires_grad for o in n._outputs)


def run_prim(n: Node, ins: list, env: dict) -> list:
    k = n._kind
    if k == "Constant":
        t = _wrap(n.attrs["value"])
        tr = _current_tracer()
        if tr is not None and tr.lift != "constant":
            # A graph run while tracing (df traced again for a second order): its constants
            # are constants of the new graph too, not data computed outside the op table.
            tr.bind(t, tr.graph_constant(t._data))
        return [t]
    if k == "AutogradZero":
        return [None]
    if k == "AutogradAdd":
        a, b = ins
        if a is None:
            return [b]
        if b is None:
            return [a]
        return [a + b]
    if k == "SumToSize":
        t = ins[0]
        if t is None:
            return [None]
        size = tuple(n.attrs["size"])
        if tuple(t._data.shape) == size:
            return [t]
        return [t._sum_to_checked(size)]
    if k == "Cast":
        t = ins[0]
        if t is None:
            return [None]
        dt = np.dtype(n.attrs["dtype"])
        if t._data.dtype == dt:
            return [t]
        if t._data.dtype.kind == "c" and dt.kind != "c":
            t = t.real_part() if hasattr(t, "real_part") else t.real
            if t._data.dtype == dt:
                return [t]
        return [t.to(_dtype._FROM_NP[dt])]
    if k == "BroadcastTo":
        t = ins[0]
        if t is None:
            return [None]
        return [t.expand(*n.attrs["size"])]
    if k == "Detach":
        t = ins[0]
        if t is None:
            return [None]
        d = t.detach()
        if n._outputs[0].requires_grad:
            if _state.enabled:
                d._set_requires_grad(True)
        return [d]
    if k == "GradOf":
        if all(x is None for x in ins):
            return [None] * len(n._outputs)
        b = n._blocks[0]
        for p, x in zip(b._params, ins):
            env[p] = x
        run_block_lazy(b, env)
        return [env[v] for v in b.outputs()]
    if k == "Call":
        a = n.attrs

        def sub(x: Any) -> Any:
            if type(x) is TensorArg:
                return materialize(ins[x.index], n._inputs[x.index])
            if type(x) in (tuple, list):
                return type(x)(sub(y) for y in x)
            return x
        return call_node(n, [materialize(x, v) for x, v in zip(ins, n._inputs)])
    if k == "OpBackward":
        from .differentiate import run_op_backward  # local import: differentiate imports this
        return run_op_backward(n, ins)
    if k == "CallBackward":
        from .differentiate import run_call_backward  # local import: differentiate imports this
        return run_call_backward(n, ins)
    raise RuntimeError(f"ndgrad.jit: cannot run primitive {k}")


# Set while a graph runs only to recompute values (differentiate's example run): Call nodes
# then update copies of their inputs (Note [Calls that update their inputs] in tracer.py).
_replaying = threading.local()


def call_node(n: Node, tensors: list, fn_args: Any = None, replay: bool = False) -> list:
    """Run a ``Call`` node on ``tensors`` (one per input); with ``replay`` (or inside
    ``replaying()``) the inputs it would update in place are copies."""
    a = n.attrs
    if a.get("mutates") and (replay or getattr(_replaying, "on", False)):
        tensors = list(tensors)
        for i in a["mutates"]:
            tensors[i] = tensors[i].detach().clone()

    def sub(x: Any) -> Any:
        if type(x) is TensorArg:
            return tensors[x.index]
        if type(x) in (tuple, list):
            return type(x)(sub(y) for y in x)
        return x
    res = a["fn"](*sub(a["args"]), **{k: sub(v) for k, v in a["kwargs"].items()})
    return list(res) if a["tuple"] else [res]


@contextlib.contextmanager
def replaying() -> Iterator[None]:
    """Runs inside recompute values only: Call nodes update copies of their inputs."""
    old = getattr(_replaying, "on", False)
    _replaying.on = True
    try:
        yield
    finally:
        _replaying.on = old


def run_block_lazy(block: Block, env: dict) -> None:
    """Run a GradOf body: an op whose tensor inputs are all undefined gives undefined outputs
    only through the primitives; ops materialize zeros (the rule is linear in its gradients)."""
    for n in block._nodes:
        run_node(n, env)


def _current_tracer() -> Any:
    tr_mod = sys.modules.get("ndgrad.jit.tracer")  # local import: tracer imports this module
    return tr_mod.current_tracer() if tr_mod is not None else None
