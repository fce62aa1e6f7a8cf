"""Graph passes (seed 004's ``Optimize`` and what lowering needs).

* ``eliminate_dead_code(block, callback)``: drop nodes nothing uses (recursively in blocks);
  ``callback(live_values)`` is called with the set of live values (differentiate uses it to erase
  dead ``grad_map`` entries, the seed's ``eliminateDeadCode(ReverseDetails)``).
* ``eliminate_common_subexpression(graph)``: one node per (kind, inputs, arguments) in each
  block scope; constants by value. ``copy_eliminating_common_subexpressions(graph)``: a copy
  with CSE applied, in one pass.
* ``lift_constants(block, into)``: constants used inside ``block`` that live outside ``into``
  are cloned to the start of ``into`` (the seed's ``liftConstants``: cheaper to rebuild in df than
  to capture).
* ``fold_sizes(block)``: a ``SumToSize`` whose input already has the target shape (shapes are
  static) is the identity and is removed (the seed's ``foldSizeIfNotEqual``).
* ``specialize_autograd_zero(block)``: GradOf nodes whose gradients are all undefined give
  undefined gradients; ``AutogradAdd`` with an undefined side is the other side.
* ``lower_grad_of(block)``: inline ``GradOf`` bodies (TorchScript's LowerGradOf); the result is a
  plain graph of ops and primitives.

Example:
    >>> import ndgrad
    >>> from ndgrad.jit import trace_graph
    >>> from ndgrad.jit.passes import eliminate_common_subexpression
    >>> g = trace_graph(lambda x: x.exp() + x.exp(), (ndgrad.ones(2),)).graph
    >>> eliminate_common_subexpression(g); [n.kind() for n in g.nodes()]
    ['exp', 'add']
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

import numpy as np

from .ir import Block, Graph, Node, TensorArg, Value, clone_node, destroy_nodes
from .random_nodes import is_random

__all__ = ["eliminate_dead_code", "eliminate_common_subexpression",
           "copy_eliminating_common_subexpressions", "lift_constants",
           "fold_sizes", "lower_grad_of", "specialize_autograd_zero"]


# ---------------------------------------------------------------------------- DCE
def eliminate_dead_code(block: Block, callback: Optional[Callable] = None) -> None:
    """Remove every node none of whose outputs is used (transitively), in ``block`` and its
    nested blocks."""
    live: set = set()
    _mark_live(block, live)
    _sweep(block, live)
    if callback is not None:
        callback(live)


def _used_outside(o: Value, block: Block) -> bool:
    """A use of ``o`` by a node outside ``block`` and its nested blocks (f's values read by
    the detached reverse block while differentiating)."""
    for u in o._uses:
        b = u.user.owning_block
        while b is not None and b is not block:
            b = b.owning_node.owning_block if b.owning_node is not None else None
        if b is None:
            return True
    return False


def _mark_live(block: Block, live: set) -> None:
    for v in block.outputs():
        live.add(v)
    for n in reversed(block._nodes):
        outs = n._outputs
        if len(outs) == 1:          # the usual node: no generator (Note [First-call cost])
            o = outs[0]
            if o not in live:
                if (not o._uses or not _used_outside(o, block)) and not is_random(n):
                    continue        # a draw stays: eager drew it (Note [Random nodes])
                live.add(o)
        elif any(o in live or _used_outside(o, block) for o in outs) or is_random(n):
            for o in outs:
                if o not in live and (_used_outside(o, block) or is_random(n)):
                    live.add(o)
        else:
            continue
        for b in n._blocks:
            # Only the block outputs that the node's live outputs return are needed.
            bouts = b.outputs()
            needed = [bouts[i] for i, o in enumerate(outs) if o in live]
            _mark_live_block(b, needed, live)
        live.update(n._inputs)


def _mark_live_block(b: Block, needed: list, live: set) -> None:
    for v in needed:
        live.add(v)
    for n in reversed(b._nodes):
        if any(o in live for o in n._outputs):
            for sb in n._blocks:
                outs = sb.outputs()
                _mark_live_block(sb, [outs[i] for i, o in enumerate(n._outputs) if o in live],
                                 live)
            for v in n._inputs:
                live.add(v)


def _sweep(block: Block, live: set) -> None:
    dead = []
    for n in block._nodes:
        outs = n._outputs
        if (outs[0] not in live) if len(outs) == 1 else not any(o in live for o in outs):
            dead.append(n)
            continue
        for b in n._blocks:
            # Drop block outputs whose node output is dead.
            drop = [i for i, o in enumerate(n._outputs) if o not in live]
            if drop:
                _drop_outputs(n, b, drop)
            _sweep(b, live)
    if dead:
        destroy_nodes(dead, check=False)     # once per block (Note [Linear graph edits])


def _drop_outputs(n: Node, b: Block, dead: list) -> None:
    ret = b.return_node()
    keep_vals = [v for i, v in enumerate(ret._inputs) if i not in dead]
    ret.remove_all_inputs()
    for v in keep_vals:
        ret.add_input(v)
    keep_outs = [o for i, o in enumerate(n._outputs) if i not in dead]
    for i, o in enumerate(keep_outs):
        o.offset = i
    n._outputs = keep_outs


# ---------------------------------------------------------------------------- CSE
def _hashable(a: Any) -> Any:
    if isinstance(a, np.ndarray):
        return ("nd", a.dtype.str, a.shape, a.tobytes())
    if isinstance(a, (list, tuple)):
        return (type(a).__name__, tuple(_hashable(x) for x in a))
    if isinstance(a, dict):
        return ("dict", tuple((k, _hashable(v)) for k, v in a.items()))
    if isinstance(a, np.dtype):
        return ("dtype", a.str)
    if isinstance(a, (float, np.floating)):
        if a != a:
            return ("nan",)
        if a == 0:      # 0.0 == -0.0, but x * -0.0 is not x * 0.0
            return (type(a).__name__, a, math.copysign(1.0, float(a)))
    if isinstance(a, TensorArg):
        return ("targ", a.index)
    hash(a)
    return (type(a).__name__, a)


_NO_CSE = frozenset(("AutogradZero", "Return", "OpBackward"))
_SCALARS = frozenset((int, bool, str, type(None)))


def _args_key(args: tuple) -> Any:
    """``_hashable(args)``, with a shortcut for the usual flat tuple of ints, bools, strings,
    None and nonzero non-NaN floats (Note [First-call cost]; NaN and zeros go the long way:
    NaN needs its own key, and -0.0 must not equal 0.0)."""
    for a in args:
        t = type(a)
        if t not in _SCALARS and not (t is tuple and all(type(x) is int for x in a)) and \
                not (t is float and a == a and a != 0):
            return _hashable(args)
    return ("tuple", tuple([(type(a).__name__, a) for a in args]))


def _key(n: Node, inputs: Optional[list] = None) -> Any:
    """CSE's key of ``n`` (None: never merged); ``inputs``: the values standing for its
    inputs (default: its inputs)."""
    if n._blocks or n._kind in _NO_CSE or is_random(n):
        return None                 # two draws are two samples (Note [Random nodes])
    try:
        attrs = _hashable(n.attrs) if n.attrs else ("dict", ())
        args = _args_key(n.args) if n.args else ("tuple", ())
    except TypeError:
        return None
    return (n._kind, id(n.op), n.num_tensor_inputs,
            tuple([id(v) for v in (n._inputs if inputs is None else inputs)]), args, attrs)


def _same_types(a: Node, b: Node) -> bool:
    for x, y in zip(a._outputs, b._outputs):
        if x.requires_grad != y.requires_grad or x.shape != y.shape or x.dtype != y.dtype:
            return False
    return True


def copy_eliminating_common_subexpressions(graph: Graph) -> Graph:
    """``graph.copy()`` then ``eliminate_common_subexpression`` on the copy, in one pass that
    does not clone the nodes CSE would remove (Note [First-call cost] in tracer.py); a graph
    with nested blocks takes the two steps."""
    if any(n._blocks for n in graph.block()._nodes):
        g = graph.copy()
        eliminate_common_subexpression(g)
        return g
    g, env = graph.copy_inputs()
    blk = g.block()
    seen: dict = {}
    for n in graph.block()._nodes:
        k = _key(n, [env[v] for v in n._inputs])
        if k is not None:
            prev = seen.get(k)
            if prev is not None and _same_types(prev, n):
                for o, p in zip(n._outputs, prev._outputs):
                    env[o] = p
                continue
            m = clone_node(n, env, blk)
            if prev is None:
                seen[k] = m
        else:
            clone_node(n, env, blk)
    for v in graph.outputs():
        g.register_output(env[v])
    return g


def eliminate_common_subexpression(graph: Graph, block: Optional[Block] = None,
                                   seen: Optional[dict] = None) -> None:
    """Replace a node equal to an earlier one (same kind, op, inputs, arguments) by it."""
    block = graph.block() if block is None else block
    seen = {} if seen is None else seen
    dead = []
    for n in block._nodes:
        for sub in n._blocks:
            eliminate_common_subexpression(graph, sub, dict(seen))
        k = _key(n)
        if k is None:
            continue
        prev = seen.get(k)
        if prev is None:
            seen[k] = n
            continue
        if not _same_types(prev, n):
            continue
        for a, b in zip(prev._outputs, n._outputs):
            b.replace_all_uses_with(a)
        dead.append(n)
    if dead:
        destroy_nodes(dead)                  # once per block (Note [Linear graph edits])


# ---------------------------------------------------------------------------- constants
def _in_block(n: Node, container: Block) -> bool:
    b = n.owning_block
    while b is not None:
        if b is container:
            return True
        b = b.owning_node.owning_block if b.owning_node is not None else None
    return False


def lift_constants(block: Block, into: Block) -> None:
    """Clone constants that nodes of ``block`` use and that live outside ``into`` to the start
    of ``into``, so that df rebuilds them instead of capturing them."""
    for n in list(block._nodes):
        _lift_node(n, into)
    _lift_node(block.return_node(), into)


def _lift_node(n: Node, into: Block) -> None:
    for i, v in enumerate(list(n._inputs)):
        p = v.node()
        if p is None or p._kind != "Constant" or _in_block(p, into):
            continue
        c = Node("Constant", None, dict(p.attrs))
        c.source = p.source
        c.add_output(v.shape, v.dtype, v.requires_grad)
        into.prepend(c)
        n.replace_input(i, c.output())
    for b in n._blocks:
        lift_constants(b, into)


# ---------------------------------------------------------------------------- sizes
def fold_sizes(block: Block) -> None:
    """Remove ``SumToSize`` nodes whose input already has the target shape."""
    dead = []
    for n in block._nodes:
        for b in n._blocks:
            fold_sizes(b)
        if n._kind == "SumToSize" and tuple(n._inputs[0].shape) == tuple(n.attrs["size"]):
            n.output().replace_all_uses_with(n._inputs[0])
            dead.append(n)
    if dead:
        destroy_nodes(dead)


# ---------------------------------------------------------------------------- zeros
def specialize_autograd_zero(block: Block) -> None:
    """Propagate undefined gradients (TorchScript's specializeAutogradZero, done statically):
    a GradOf whose inputs are all AutogradZero has AutogradZero outputs (the rule is linear);
    ``AutogradAdd(zero, x)`` is ``x``."""
    def is_zero(v: Value) -> bool:
        p = v.node()
        return p is not None and p._kind == "AutogradZero"

    dead = []
    new_nodes = []
    for n in block._nodes:
        if n._kind == "GradOf" and n._inputs and all(is_zero(v) for v in n._inputs):
            for o in n._outputs:
                z = Node("AutogradZero")
                z.source = n.source
                out = z.add_output(o.shape, o.dtype, False)
                z.owning_block = block
                new_nodes.append(z)
                o.replace_all_uses_with(out)
            dead.append(n)
            continue
        new_nodes.append(n)
        if n._kind == "AutogradAdd":
            a, b = n._inputs
            if is_zero(a) or is_zero(b):
                n.output().replace_all_uses_with(b if is_zero(a) else a)
                dead.append(n)
        else:
            for sub in n._blocks:
                specialize_autograd_zero(sub)
    block._nodes = new_nodes
    if dead:
        destroy_nodes(dead)                  # Note [Linear graph edits]


# ---------------------------------------------------------------------------- GradOf
def lower_grad_of(block: Block) -> None:
    """Inline every GradOf body in place of the node (a GradOf whose inputs are all undefined
    has undefined outputs; after lowering, ops materialize zeros instead, which gives the same
    values)."""
    new_nodes = []
    dead = []
    for n in block._nodes:
        for b in n._blocks:
            lower_grad_of(b)
        if n._kind != "GradOf":
            new_nodes.append(n)
            continue
        body = n._blocks[0]
        for sub in body._nodes:
            sub.owning_block = block
            new_nodes.append(sub)
        body._nodes = []
        for o, v in zip(n._outputs, body.outputs()):
            o.replace_all_uses_with(v)
        dead.append(n)
    block._nodes = new_nodes
    if dead:
        destroy_nodes(dead)                  # Note [Linear graph edits]


def _values(block: Block) -> list:
    out = []
    for n in block._nodes:
        out.extend(n._outputs)
    return out


def _unused(_: Value) -> None:
    return None
