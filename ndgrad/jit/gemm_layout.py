"""Which matrix products of a generated function compute their result transposed.

Note [Transposed products in generated code]
NumPy's ``a @ b`` writes a new C-contiguous array. OpenBLAS computes a product and its
transpose, ``(b.T @ a.T).T``, at different speeds: on the 2-core test machine a layer's input
gradient ``g @ W.t()`` (g 512x1024 or 512x2048, W 2048x1024 or 2048x2048, float32) took 5-9%
longer than ``(W @ g.T).T`` (single thread, CPU time: 10.0 and 20.4 ms against 9.6 and 18.7;
the lead's quiet 2-thread figures: ~5%), while the forward and weight-gradient products run at
the same speed either way (within 1.5%). The transposed form gives a column-major (F-order)
result, and an element-wise op mixing a column-major and a row-major operand walks one of them
across rows (several times slower), so a product is transposed only when every array it meets
element-wise can be transposed with it. Inside a generated function the layout of an
intermediate is free (no user sees it): the whole hidden chain of an MLP step, activations and
their gradients, then lives transposed (mlp_large: both hidden layers, 4 MB each).

``transposed_products(graph)`` groups the 2-D values of the top-level block that element-wise
ops join (their result and every operand of the result's shape, parity flipped through ``t``,
a ``Detach`` the same array)
and transposes a group when: no value of it is pinned (a graph input or output, a reduction's or
reshape's operand, any use this analysis does not know, a nested block), every matrix product in
it currently gives the same layout, all its values are large (``MIN_NUMEL``: small ones run in
the numba VM or cost more in calls than in GEMM time), and it holds a product of the measured
slow form: ``g @ t(W)`` (the second operand a ``t`` of a value outside the group, the first not)
with fewer rows than columns. Graph outputs (the gradients of the weights) stay row-major,
PyTorch's layout. Element-wise results of all-transposed operands are transposed too, and
written into dead transposed buffers as row-major ones are (Note [Buffers reused in place] in
codegen.py). Values: an element-wise op computes every element from the same operands in
either layout (the same bits); a transposed product computes the same dot products, but
OpenBLAS may block ``K`` differently by orientation, so the last bits can differ from eager's
(equal for mlp_large's products here, not for a 256x512 by 512x512 float32 one), as NumPy's own
choice of kernel can.

Example:
    >>> import ndgrad
    >>> from ndgrad.jit import trace_graph
    >>> x, w = ndgrad.ones(4, 8), ndgrad.ones(8, 8)
    >>> transposed_products(trace_graph(lambda x, w: (x @ w).relu(), (x, w)).graph)
    frozenset()
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ..ops import linalg as _linalg
from ..ops import shape as _shape

__all__ = ["transposed_products", "MIN_NUMEL"]

MIN_NUMEL = 1 << 16      # elements of every value of a transposed group
_FLOATS = frozenset((np.dtype(np.float32), np.dtype(np.float64)))


class _Groups:
    """Union-find over values with the parity of each value's layout relative to its root."""

    def __init__(self) -> None:
        self.parent: dict = {}
        self.parity: dict = {}
        self.pinned: set = set()

    def find(self, v: Any) -> tuple:
        p = self.parent.setdefault(v, v)
        if p is v:
            self.parity.setdefault(v, 0)
            return v, 0
        root, par = self.find(p)
        par ^= self.parity[v]
        self.parent[v], self.parity[v] = root, par
        return root, par

    def join(self, a: Any, b: Any, flip: int) -> None:
        ra, pa = self.find(a)
        rb, pb = self.find(b)
        if ra is rb:
            if pa ^ pb != flip:
                self.pinned.add(ra)       # contradictory layouts: leave the group alone
            return
        self.parent[rb] = ra
        self.parity[rb] = pa ^ pb ^ flip
        if rb in self.pinned:
            self.pinned.add(ra)

    def pin(self, v: Any) -> None:
        self.pinned.add(self.find(v)[0])


def transposed_products(graph: Any, elementwise: Optional[Callable] = None) -> frozenset:
    """The matrix-product nodes of ``graph``'s top-level block to emit as ``(b.T @ a.T).T``
    (Note [Transposed products in generated code]). ``elementwise(node)``: whether the code
    generator emits the node as one element-wise NumPy call (its ``_Gen.elementwise``, with
    relu and relu's backward added here)."""
    nodes = graph.block().nodes()
    top = set(nodes)
    groups = _Groups()
    products = []
    for v in graph.inputs():
        groups.pin(v)
    for v in graph.outputs():
        groups.pin(v)
    for n in nodes:
        outs = n.outputs()
        op = n.op
        if _alias(n):
            groups.join(n.input(), n.output(), 0)
            continue
        if op is None or len(outs) != 1 or n.blocks():
            for o in outs:
                groups.pin(o)
            continue
        out = outs[0]
        if len(out.shape) != 2:
            continue                      # not a matrix: its uses pin the matrices it reads
        if op is _linalg.MM and out.dtype in _FLOATS:
            groups.find(out)
            products.append(n)
        elif op is _shape.T_OP:
            groups.join(n.inputs()[0], out, 1)
        elif _joins(n, elementwise):
            for v in n.inputs():
                if tuple(v.shape) == tuple(out.shape):
                    groups.join(out, v, 0)
        else:
            groups.pin(out)
    # every use a value has outside what joined it above pins it
    for n in nodes:
        op = n.op
        known = _alias(n) or op is not None and len(n.outputs()) == 1 and (
            op is _linalg.MM or op is _shape.T_OP or _joins(n, elementwise))
        for v in n.inputs():
            if len(v.shape) == 2 and not known:
                groups.pin(v)
    for v in list(groups.parent):
        if any(u.user not in top for u in v.uses()) or (
                v.node() is not None and v.node() not in top) or np.prod(v.shape) < MIN_NUMEL:
            groups.pin(v)
    by_root: dict = {}
    for n in products:
        root, par = groups.find(n.output())
        by_root.setdefault(root, []).append((n, par))
    chosen: list = []
    for root, members in by_root.items():
        if root in groups.pinned or len({p for _, p in members}) != 1:
            continue
        if any(_slow_form(n, groups, root) for n, _ in members):
            chosen.extend(n for n, _ in members)
    return frozenset(chosen)


def _alias(n: Any) -> bool:
    """A primitive the generated code emits as no code, its output the input's array."""
    k = n.kind()
    if n.op is not None or len(n.inputs()) != 1 or len(n.outputs()) != 1:
        return False
    return k == "Detach" or k == "SumToSize" and tuple(n.attrs["size"]) == tuple(
        n.input().shape)


def _joins(n: Any, elementwise: Optional[Callable]) -> bool:
    from ..ops import pointwise as _pw   # local import: the op table is loaded by then
    out = n.output()
    if out.dtype not in _FLOATS:
        return False
    if n.op in (_pw.RELU, _pw.THRESHOLD_BACKWARD, _pw.TANH_BACKWARD):
        ok = True
    else:
        ok = elementwise is not None and elementwise(n)
    if not ok:
        return False
    # operands of the result's shape join it; any other operand must be a single element
    # (a scalar, NumPy broadcasts it in either layout)
    return all(tuple(v.shape) == tuple(out.shape) or int(np.prod(v.shape)) == 1
               for v in n.inputs())


def _slow_form(n: Any, groups: _Groups, root: Any) -> bool:
    """``g @ t(W)`` with fewer rows than columns, ``t(W)`` from outside the group."""
    a, b = n.inputs()
    src = b.node()
    if src is None or src.op is not _shape.T_OP:
        return False
    if groups.find(b)[0] is root or (a.node() is not None and a.node().op is _shape.T_OP):
        return False
    rows, cols = n.output().shape
    return rows < cols
