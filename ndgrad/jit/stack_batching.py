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
    computation (Note [Stack batching]) and every ``bmm`` of one expanded matrix into a matrix
    product (Note [Batched products of one matrix]); returns how many were rewritten."""
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
    done += _unbroadcast_products(g, dead)
    if done:
        destroy_nodes(dead)        # Note [Linear graph edits] in ir.py
        _collapse_views(g)
        eliminate_dead_code(g.block())
    return done


def _collapse_views(g: Graph) -> None:
    """After a rewrite: a chain of reshapes becomes one reshape of the chain's start (none when
    the shapes agree), ``t(t(x))`` becomes ``x`` and a ``split`` into one whole piece its
    input; values the graph returns keep their nodes (what they alias stays the same)."""
    blk = g.block()
    outs = set(g.outputs())
    for n in list(blk._nodes):
        if len(n.outputs()) != 1 or n.num_tensor_inputs != len(n.inputs()) or \
                len(n.inputs()) != 1 or n.output() in outs:
            continue
        out, x = n.output(), n.inputs()[0]
        op = n.op
        if op in _RESHAPES:
            src = x
            while True:
                p = src.node()
                if p is None or p.op not in _RESHAPES or len(p.inputs()) != 1 or \
                        p.num_tensor_inputs != 1:
                    break
                src = p.inputs()[0]
            if src.dtype != out.dtype or src.requires_grad != out.requires_grad:
                continue
            if tuple(src.shape) == tuple(out.shape):
                out.replace_all_uses_with(src)
            elif src is not x:
                g.set_insert_point(blk, blk._nodes.index(n))
                try:
                    r = g.insert_op(_shape.RESHAPE_COPY, [src], (tuple(out.shape),),
                                    [(tuple(out.shape), out.dtype, out.requires_grad)],
                                    source=n.source).output()
                finally:
                    g.set_insert_point(blk, None)
                out.replace_all_uses_with(r)
        elif op is _shape.T_OP:
            p = x.node()
            if p is not None and p.op is _shape.T_OP and len(p.inputs()) == 1:
                src = p.inputs()[0]
                if len(src.shape) == 2 and src.requires_grad == out.requires_grad:
                    out.replace_all_uses_with(src)
        elif op in (_shape.SPLIT, _shape.SPLIT_SIZES):
            dim, bounds = n.args
            if len(bounds) == 1 and tuple(bounds[0]) == (0, x.shape[dim]) and \
                    x.requires_grad == out.requires_grad:
                out.replace_all_uses_with(x)


# Note [Batched products of one matrix]
# A batched backward (``is_grads_batched``, ``vectorize=True``, Note [Jacobian rows traced
# batched] in tracer.py) runs a matrix-vector or matrix product whose matrix is the same for
# every row as ``bmm`` of the matrix expanded along the batch axis: NumPy then runs B small
# products. ``batch_stacks`` rewrites such a ``bmm`` into one matrix product, as it does for a
# stack of products: ``bmm(X, expand(M)) = (X.reshape(B*p, n) @ M).reshape(B, p, k)`` and, for
# one column per row (a batched ``mv``), ``bmm(expand(M), X) = (X.reshape(B, n) @ M.T)
# .reshape(B, m, 1)``. Like stack batching, the rewrite is not bitwise (BLAS sums in its own
# order).
_SAME_SHAPE_VIEWS = frozenset((_shape.VIEW, _shape.RESHAPE_COPY, _shape.EXPAND))


def _strip(v: Any) -> Any:
    """``v`` without the views and expands to its own shape above it."""
    while True:
        n = v.node()
        if n is None or n.op not in _SAME_SHAPE_VIEWS or len(n.outputs()) != 1 or \
                not n.inputs() or n.inputs()[0].shape != v.shape or \
                n.inputs()[0].dtype != v.dtype:
            return v
        v = n.inputs()[0]


def _expanded_matrix(v: Any) -> Any:
    """The 2-D value ``M`` when ``v`` (3-D) is ``M`` expanded along a new leading axis."""
    v = _strip(v)
    n = v.node()
    if n is None or n.op is not _shape.EXPAND or not n.inputs():
        return None
    m = _strip(n.inputs()[0])
    item = tuple(v.shape[1:])
    if tuple(m.shape) == (1,) + item:      # expanded from an unsqueezed (or viewed) matrix
        p = m.node()
        if p is None or p.op not in _RESHAPES or len(p.inputs()) != 1:
            return None
        m = _strip(p.inputs()[0])
    return m if tuple(m.shape) == item and m.dtype == v.dtype else None


def _unbroadcast_products(g: Graph, dead: list) -> int:
    """Rewrite each ``bmm`` of one expanded matrix into a matrix product (Note [Batched
    products of one matrix]); the replaced nodes are appended to ``dead``."""
    done = 0
    blk = g.block()
    for n in list(blk._nodes):
        if n.op is not _linalg.BMM or len(n.inputs()) != 2 or n.num_tensor_inputs != 2:
            continue
        a, b = n.inputs()
        out = n.output()
        if len(out.shape) != 3 or len(a.shape) != 3 or len(b.shape) != 3:
            continue
        B, m, k = out.shape
        ma, mb = _expanded_matrix(a), _expanded_matrix(b)
        rg, dt, src = out.requires_grad, out.dtype, n.source
        g.set_insert_point(blk, blk._nodes.index(n))
        try:
            if mb is not None and ma is None:
                p, q = a.shape[1], a.shape[2]
                x = g.insert_op(_shape.RESHAPE_COPY, [_strip(a)], ((B * p, q),),
                                [((B * p, q), dt, rg)], source=src).output()
                r = g.insert_op(_linalg.MM, [x, mb], (), [((B * p, k), dt, rg)],
                                source=src).output()
            elif ma is not None and mb is None and k == 1:
                q = b.shape[1]
                x = g.insert_op(_shape.RESHAPE_COPY, [_strip(b)], ((B, q),),
                                [((B, q), dt, rg)], source=src).output()
                mt = g.insert_op(_shape.T_OP, [ma], (), [((q, m), dt, ma.requires_grad)],
                                 source=src).output()
                r = g.insert_op(_linalg.MM, [x, mt], (), [((B, m), dt, rg)],
                                source=src).output()
            else:
                continue
            res = g.insert_op(_shape.RESHAPE_COPY, [r], (tuple(out.shape),),
                              [(tuple(out.shape), dt, rg)], source=src).output()
        finally:
            g.set_insert_point(blk, None)
        out.replace_all_uses_with(res)
        dead.append(n)
        done += 1
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

