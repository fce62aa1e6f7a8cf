"""Batching of repeated computations gathered by ``stack`` (horizontal batching).

Note [Stack batching]
A Jacobian or Hessian computed row by row (``autograd.functional.hessian`` without
``vectorize``, a Python loop of ``autograd.grad``) traces into B copies of one computation that
differ only in a constant (the one-hot seed of each row), gathered by one ``stack``. The pass
pushes the ``stack`` up through the copies: ``stack([op(x_i, y) for i]) = op(stack(x_i), y)``
when ``op`` computes each item independently along a new leading axis (elementwise ops with
NumPy broadcasting, reshapes, matmuls of matrices, matrix-vector products), until it reaches
the constants, which are stacked at generation time. B small products become one batched
product, as ``vmap`` would make them. Values are those of the row-by-row computation up to the
summation order inside BLAS (the batched matmul may block differently): the pass is not
bitwise.

Example:
    >>> import ndgrad
    >>> from ndgrad.jit import trace_graph
    >>> from ndgrad.jit.stack_batching import batch_stacks
    >>> A = ndgrad.ones(4, 4)
    >>> g = trace_graph(lambda A: ndgrad.stack([(A @ ndgrad.eye(4)[i:i + 1].t()).tanh()
    ...                                         for i in range(4)]), (A,)).graph
    >>> fold_constants(g), batch_stacks(g)
    (8, 1)
    >>> sorted(n.kind() for n in g.nodes())
    ['Constant', 'mm', 'tanh']
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..ops import linalg as _linalg
from ..ops import pointwise as _pw
from ..ops import shape as _shape
from .ir import Graph, Node, destroy_nodes
from .passes import eliminate_dead_code
from .random_nodes import is_random

__all__ = ["batch_stacks", "fold_constants"]

_RESHAPES = frozenset((_shape.VIEW, _shape.RESHAPE_COPY, _shape.SQUEEZE, _shape.SQUEEZE_DIM,
                       _shape.SQUEEZE_DIMS, _shape.UNSQUEEZE))
_ELEMENTWISE = frozenset((_pw.ADD, _pw.SUB, _pw.MUL, _pw.DIV, _pw.MUL_S, _pw.DIV_S, _pw.ADD_S,
                          _pw.SUB_S, _pw.TANH_BACKWARD))
_MATMULS = frozenset((_linalg.MM, _linalg.BMM))
_MIN_ITEMS = 4


def fold_constants(g: Graph) -> int:
    """Replace every top-level op node whose inputs are all constants by constants holding its
    results (computed now with the op's forward); returns how many nodes were folded."""
    from .codegen import _run_op, materializes   # local import: codegen's evaluation
    done = 0
    blk = g.block()
    new_nodes = []
    for n in blk._nodes:
        ins = n._inputs
        consts = [v._node for v in ins if v._node is not None and v._node._kind == "Constant"]
        if n.op is None or not ins or len(consts) != len(ins) or is_random(n):
            new_nodes.append(n)
            continue
        vals = [c.attrs["value"] for c in consts]
        if materializes(n, vals):
            new_nodes.append(n)
            continue
        outs = _run_op(n, vals)
        for o, arr in zip(n._outputs, outs):
            arr = np.array(arr, copy=True)
            arr.flags.writeable = False
            c = Node("Constant", attrs={"value": arr})
            c.source = n.source
            c.owning_block = blk
            cv = c.add_output(arr.shape, arr.dtype, False)
            o.replace_all_uses_with(cv)
            new_nodes.append(c)
        n.remove_all_inputs()
        n.owning_block = None
        done += 1
    if done:
        blk._nodes = new_nodes
        eliminate_dead_code(blk)
    return done


def batch_stacks(g: Graph) -> int:
    """Rewrite every ``stack`` along dim 0 of >= 4 isomorphic computations into one batched
    computation; returns how many stacks were rewritten (Note [Stack batching])."""
    done = 0
    dead: list = []
    for n in list(g.nodes()):
        if n.op is not _shape.STACK or tuple(n.args) not in ((0,),) or \
                len(n.inputs()) < _MIN_ITEMS or n.num_tensor_inputs != len(n.inputs()):
            continue
        blk = g.block()
        g.set_insert_point(blk, blk._nodes.index(n))
        try:
            res = _batched(g, tuple(n.inputs()), {})
        finally:
            g.set_insert_point(blk, None)
        if res is not None and res[0] == "b" and res[1].shape == n.output().shape and \
                res[1].dtype == n.output().dtype:
            n.output().replace_all_uses_with(res[1])
            dead.append(n)
            done += 1
    if done:
        destroy_nodes(dead)        # Note [Linear graph edits] in ir.py
        eliminate_dead_code(g.block())
    return done


def _batched(g: Graph, items: tuple, memo: dict) -> Optional[tuple]:
    """``("s", v)`` when every item is ``v``, ``("b", v)`` with ``v`` = the items stacked along
    a new axis 0, or None when the pass cannot express it."""
    key = tuple(id(v) for v in items)
    if key in memo:
        return memo[key]
    memo[key] = res = _batch(g, items, memo)
    return res


def _batch(g: Graph, items: tuple, memo: dict) -> Optional[tuple]:
    first = items[0]
    if all(v is first for v in items):
        return ("s", first)
    nodes = [v.node() for v in items]
    if any(n is None for n in nodes) or any(v.shape != first.shape or v.dtype != first.dtype
                                            for v in items):
        return None
    n0 = nodes[0]
    if all(n.kind() == "Constant" for n in nodes):
        arr = np.stack([n.attrs["value"] for n in nodes])
        return ("b", g.insert_constant(arr))
    op = n0.op
    if op is None or len(n0.outputs()) != 1:
        return None
    k = len(n0.inputs())
    if n0.num_tensor_inputs != k:
        return None
    for n in nodes[1:]:
        if n.op is not op or len(n.inputs()) != k or not _same_args(n.args, n0.args) or \
                n.num_tensor_inputs != k:
            return None
    parts = []
    for p in range(k):
        col = tuple(n.inputs()[p] for n in nodes)
        if any(v.shape != col[0].shape for v in col):
            return None
        r = _batched(g, col, memo)
        if r is None:
            return None
        parts.append(r)
    if all(kind == "s" for kind, _ in parts):
        return ("s", first)        # the same op on the same values: equal items
    B = len(items)
    out_shape = (B,) + tuple(first.shape)
    rg = any(v.requires_grad for _, v in parts)
    ins = [v for _, v in parts]
    if op in _RESHAPES:
        return ("b", g.insert_op(_shape.RESHAPE_COPY, ins, (out_shape,),
                                 [(out_shape, first.dtype, rg)], source=n0.source).output())
    if op in _ELEMENTWISE or (isinstance(op.forward, np.ufunc) and not n0.args):
        # NumPy broadcasting keeps the new axis leading iff every batched operand has the
        # item's full rank
        if any(kind == "b" and len(v.shape) != len(out_shape) for kind, v in parts):
            return None
        return ("b", g.insert_op(op, ins, n0.args, [(out_shape, first.dtype, rg)],
                                 source=n0.source).output())
    if op in _MATMULS:
        if any(len(v.shape) < 2 for v in (n0.inputs()[0], n0.inputs()[1])):
            return None
        return ("b", g.insert_op(op, ins, n0.args, [(out_shape, first.dtype, rg)],
                                 source=n0.source).output())
    if op is _linalg.MV:
        (km, m), (kv, v) = parts
        if km == "b" and kv == "s":     # stack(M_i @ v) = M_b @ v: matmul broadcasts M's batch
            return ("b", g.insert_op(op, ins, n0.args, [(out_shape, first.dtype, rg)],
                                     source=n0.source).output())
        if km == "s" and kv == "b":     # stack(M @ v_i) = V @ M.T, one matrix product
            mt_shape = (m.shape[1], m.shape[0])
            mt = g.insert_op(_shape.T_OP, [m], (), [(mt_shape, m.dtype, m.requires_grad)],
                             source=n0.source).output()
            return ("b", g.insert_op(_linalg.MM, [v, mt], (), [(out_shape, first.dtype, rg)],
                                     source=n0.source).output())
    return None


def _same_args(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same_args(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b))
    try:
        return bool(a == b)
    except Exception:   # noqa: BLE001 - incomparable arguments: not the same
        return False

