"""``differentiate(graph) -> Gradient``: seed 004 (TorchScript's autodiff.cpp), step by step.

Note [Symbolic VJP rules]
There is one formula table: the op table's VJP rules, written with ndgrad ops on Tensors. To
build the gradient of a node, ``differentiate`` re-runs the node's op eagerly on example values
(grad mode on, so the real backward node exists with its saved values exactly as eager saves
them), then runs that node's ``apply`` with the tracer recording into the node's ``GradOf``
block: every op the rule runs becomes a node of the reverse graph, reading the forward values
it uses (captures). The example values only make the rule runnable: a rule that looks at the
data (``bool(t)``, ``.item()``) raises ``TraceError`` and the node gets an ``OpBackward`` node
instead, which runs the rule itself at run time (never a branch baked in). Shapes are static,
so every shape decision a rule makes is valid for every input of the traced shapes. The
engine's gradient fix-ups become ``SumToSize`` (broadcast undone; identity ones are folded by
``passes.fold_sizes``) and ``Cast`` nodes.

The steps follow the seed: ``add_reverse_inline`` (GradOf blocks in reverse order, grad_map,
AutogradZero/AutogradAdd, trimmed gradients of multi-output ops, df_input_vjps and
df_output_vjps), ``optimize`` (lift constants into the reverse block, fold sizes, undefined
gradients propagated (TorchScript's specializeAutogradZero, statically), CSE over f,
deduplicate captures, DCE dropping dead grad_map entries), DCE of f, ``lambda_lift_reverse``
(captures in topological order, temporaries appended to f, vjp inputs for temporaries, df's
inputs ``[output vjps][temporary vjps][captured inputs][captured outputs]``).

Example:
    >>> import ndgrad
    >>> from ndgrad.jit import trace_graph, differentiate
    >>> a = ndgrad.ones(2, 3, requires_grad=True)
    >>> b = ndgrad.ones(2, 3, requires_grad=True)
    >>> g = differentiate(trace_graph(lambda a, b: a * b * a + b, (a, b)).graph)
    >>> print(g.fields())
    Gradient(f_real_outputs=1, df_input_vjps=[0, 1], df_input_captured_inputs=[0, 1], \
df_input_captured_outputs=[1], df_output_vjps=[0, 1])
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from ..autograd.grad_mode import _state, enable_grad, no_grad
from ..ops._dispatch import _DIFF_DTYPES, apply
from ..ops.reduction import TRACEABLE_VJP as _reduction_rules
from ..ops.scan import TRACEABLE_VJP as _scan_rules
from ..ops.sort import TRACEABLE_VJP as _sort_rules
from ..tensor import Tensor, _wrap
from . import tracer as _tr
from .gradient import Gradient
from .interpret import replaying, run_block, run_node
from .ir import Block, Graph, Node, Value, _substitute, all_values, clone_block_into
from .passes import (eliminate_common_subexpression, eliminate_dead_code, fold_sizes,
                     lift_constants, specialize_autograd_zero)
from .tracer import TraceError, Tracer

__all__ = ["differentiate", "run_op_backward", "OPAQUE_VJP"]

# Ops whose VJP rule is always run as an ``OpBackward`` node (decided by the tests, each with
# its reason); data-dependent rules are found automatically (TraceError while recording).
OPAQUE_VJP: dict = {}

# Note [Traceable VJP rules]
# A few eager VJP rules branch on the data for speed (prod and cumprod divide by the input when
# it has no zero, else take the division-free product of the others). Recorded on example
# values, such a rule bakes in one branch, so differentiate would make it an OpBackward node.
# Instead the op's module declares a second rule without the branch (``TRACEABLE_VJP = {op:
# rule}``, same signature as ``Op.vjp``); differentiate records that one. Its values agree with
# the eager rule to rounding (not bitwise: other NumPy calls run), and it is built from ops of
# the table, so df is differentiable again. The eager backward keeps the fast rule.
_TRACEABLE: Optional[dict] = None


def traceable_rules() -> dict:
    """{Op: VJP rule} of the rules differentiate records instead of ``op.vjp``."""
    global _TRACEABLE
    if _TRACEABLE is None:
        _TRACEABLE = {**_reduction_rules, **_scan_rules, **_sort_rules}
    return _TRACEABLE


def _apply_rule(node: Any, grads: list) -> tuple:
    """``node.apply(grads)`` with the op's traceable rule when it has one."""
    rule = traceable_rules().get(node._op)
    if rule is None:
        return node.apply(grads)
    from ..autograd.node import _materialize  # local import: the engine's own helper
    if not node._output_meta:
        if grads[0] is None:
            return (None,) * len(node.next_functions)
        out = rule(node, grads[0])
    else:
        if all(g is None for g in grads):
            return (None,) * len(node.next_functions)
        out = rule(node, *_materialize(grads, node._output_meta))
    if type(out) is not tuple:
        out = (out,)
    return out + node._op.pad_meta


class _Reverse:
    def __init__(self, block: Block) -> None:
        self.grad_map: dict = {}
        self.reverse_block = block


def _synth(v: Value, rng: np.random.Generator) -> np.ndarray:
    dt = v.dtype
    if dt.kind == "f" or dt.name == "bfloat16":
        return rng.standard_normal(v.shape).astype(dt)
    if dt.kind == "c":
        return (rng.standard_normal(v.shape) + 1j * rng.standard_normal(v.shape)).astype(dt)
    return np.zeros(v.shape, dtype=dt)


def _other(t: Tensor, special: bool = True) -> Tensor:
    """Other example values for a gradient: an affine map of ``t`` with zeros and ties (zeros
    of an AutogradZero stay zeros)."""
    d = t._data
    if not d.any():
        return t
    d = d * -1.37 + 0.31
    return _wrap((_special(d) if special else d).astype(t._data.dtype))


def _special(arr: np.ndarray) -> np.ndarray:
    """The second example set's values: ``arr`` with a zero in every third element and ties
    (each element after a zero repeats the one before it): the special values rules branch on
    (prod's zeros, max's ties)."""
    out = np.array(arr, copy=True)
    flat = out.reshape(-1)
    if flat.size >= 2:
        flat[1::3] = flat[0::3][:flat[1::3].size]
    if flat.size >= 3:
        flat[2::3] = 0
    return out


def _examples(f: Graph, example_inputs: Optional[Sequence[Any]], second: bool = False,
              special: bool = True, keep: Optional[set] = None) -> dict:
    """Example values of every value of ``f``: from ``example_inputs`` or random; the
    ``second`` set has other values in the floating inputs, with zeros and ties (random ones if
    f cannot run on those). With ``keep`` only the values in ``keep`` are returned, and every
    other value is released as soon as its last reader has run (Note [Example values are
    transient])."""
    for attempt in ((not special, True) if second else (False,)):
        try:
            return _run_examples(f, example_inputs, second, bool(attempt), keep)
        except Exception:   # noqa: BLE001 (zeros outside f's domain: plain random values)
            if not second or attempt:
                raise
    raise AssertionError("unreachable")


def _example_input(f: Graph, i: int, v: Value, example_inputs: Optional[Sequence[Any]],
                   second: bool, plain: bool) -> Tensor:
    floating = v.dtype.kind in "fc" or v.dtype.name == "bfloat16"
    if example_inputs is not None and not (second and floating):
        x = example_inputs[i]
        arr = x._data if isinstance(x, Tensor) else np.asarray(x)
    else:
        arr = _synth(v, np.random.default_rng((0, i)))
    if second and floating and not plain:
        arr = _special(arr * -1.3 + 0.2 if arr.size else arr).astype(arr.dtype)
    return _wrap(arr)


def _run_examples(f: Graph, example_inputs: Optional[Sequence[Any]], second: bool,
                  plain: bool, keep: Optional[set]) -> dict:
    ins = f.inputs()
    nodes = f.block()._nodes
    env: dict = {}
    if keep is None or any(n._blocks for n in nodes):
        for i, v in enumerate(ins):
            env[v] = _example_input(f, i, v, example_inputs, second, plain)
        with no_grad(), replaying():
            run_block(f.block(), env)
        return env if keep is None else {v: env[v] for v in keep if v in env}
    # Streaming: an input is made just before its first reader, a value dropped after its
    # last one (unless kept); nodes after the last kept value's producer do not run.
    index = {v: i for i, v in enumerate(ins)}
    last: dict = {}
    for j, n in enumerate(nodes):
        for v in n._inputs:
            last[v] = j
    stop = max((j for j, n in enumerate(nodes) if any(o in keep for o in n._outputs)),
               default=-1)
    stop = max([stop] + [last.get(v, -1) for v in keep if v in index])
    for v in keep:
        if v in index and v not in last:
            env[v] = _example_input(f, index[v], v, example_inputs, second, plain)
    with no_grad(), replaying():
        for j in range(stop + 1):
            n = nodes[j]
            for v in n._inputs:
                if v not in env and v in index:
                    env[v] = _example_input(f, index[v], v, example_inputs, second, plain)
            run_node(n, env)
            for v in n._inputs:
                if last[v] == j and v not in keep:
                    env.pop(v, None)
            for o in n._outputs:
                if o not in last and o not in keep:
                    env.pop(o, None)
    return {v: env[v] for v in keep if v in env}


def differentiate(graph: Graph, example_inputs: Optional[Sequence[Any]] = None,
                  optimize_graphs: bool = True) -> Gradient:
    """Split ``graph`` into a forward graph ``f`` and a backward graph ``df`` (seed 004).

    Takes ownership of ``graph``, as the seed does: it becomes ``gradient.f`` (modified in
    place; pass ``graph.copy()`` to keep the original). Inputs that require grad get
    gradients. ``example_inputs`` (one array or Tensor per input) only
    make the VJP rules runnable while they are recorded; by default random values are used.
    ``optimize_graphs=False`` skips the seed's ``Optimize`` step (to look at its effect).
    """
    grad = Gradient()
    f = graph
    grad.f = f
    for n in list(f.all_nodes()):
        if n.kind() in ("GradOf",):
            from .passes import lower_grad_of  # local import: same layer, used once here
            lower_grad_of(f.block())
            break
    ex = _examples(f, example_inputs)
    tracer = Tracer(f, lift="constant")
    tracer.check_requires_grad = False
    tracer.examples_b = _examples(f, example_inputs, second=True, keep=_to_verify(f))
    tracer.examples_c = {}
    tracer.example_inputs = example_inputs
    with _tr.tracing(tracer):
        rev = add_reverse_inline(grad, ex, tracer)
    del ex, tracer
    if optimize_graphs:
        optimize(grad, rev)
    eliminate_dead_code(f.block())
    lambda_lift_reverse(grad, rev)
    for v in all_values(f):            # f runs on detached values
        v.requires_grad = False
    return grad


# Note [Example values are transient]
# The example values only make the VJP rules runnable while they are recorded; none of them
# outlives ``differentiate`` (the graph keeps only constants the rules made). The reverse pass
# visits f's nodes last to first, and a node's rule reads the example values of the node's
# inputs and the example gradients of its outputs only, so once a node is done the example
# values of its outputs and the example gradients of its outputs are dropped; gradients of f's
# inputs get no example value (no rule reads them). The second example set (Note
# [Data-independent rules]) is needed only for the nodes whose rule is not verified yet, one
# per rule key: it is computed streaming (each value released after its last reader) keeping
# only those nodes' inputs, and recomputed the same way for a node found missing later. So
# the transient memory is about one set of f's values, below what eager autograd keeps for
# the same function (its saved values and gradients).


def _to_verify(f: Graph) -> set:
    """Inputs of the nodes whose rule the second example set will verify: the last node of
    each rule key (in the reverse pass's order) not verified yet, gradients assumed defined."""
    keep: set = set()
    seen: set = set()
    for n in reversed(f.nodes()):
        if n.op is None or n.op.name in OPAQUE_VJP or \
                not any(o.requires_grad for o in n._outputs):
            continue
        key = _rule_key(n, None)
        if key is not None and (key in seen or key in _VERIFIED):
            continue
        seen.add(key)
        keep.update(n._inputs)
    return keep


def _examples_for(tracer: Tracer, n: Node, plain: bool) -> dict:
    """The second (``plain``: third) example set's values of ``n``'s inputs, computed when
    missing (Note [Example values are transient])."""
    store = tracer.examples_c if plain else tracer.examples_b
    missing = {v for v in n._inputs if v not in store}
    if missing:
        prev = _tr._local.tracer
        _tr._local.tracer = None
        try:
            store.update(_examples(tracer.graph, tracer.example_inputs, True, not plain,
                                   keep=missing))
        finally:
            _tr._local.tracer = prev
    return store


# ---------------------------------------------------------------------------- reverse
def add_reverse_inline(grad: Gradient, ex: dict, tracer: Tracer) -> _Reverse:
    f = grad.f
    rev_node = Node("Reverse")
    rb = rev_node.add_block()
    rb.graph = f
    rev = _Reverse(rb)
    grad_map = rev.grad_map
    rex: dict = {}                     # reverse value -> example Tensor
    rng = np.random.default_rng(1)
    f.set_insert_point(rb, None)

    # Note [Example values are transient]: rex holds the example gradients of the values of
    # grad_map whose producer is still to be visited; ``held`` counts those holders.
    held: dict = {}
    f_inputs = set(f.inputs())

    def hold(x: Value, g: Value) -> None:
        grad_map[x] = g
        if x not in f_inputs:
            held[g] = held.get(g, 0) + 1

    def release(g: Value) -> None:
        c = held.get(g, 0) - 1
        if c > 0:
            held[g] = c
            return
        held.pop(g, None)
        rex.pop(g, None)

    def get_grad(v: Value) -> Value:
        g = grad_map.get(v)
        if g is None:
            z = f.insert_prim("AutogradZero", [], [(v.shape, v.dtype, False)])
            g = z.output()
            rex[g] = _wrap(np.zeros(v.shape, dtype=v.dtype))
            hold(v, g)
        return g

    def set_grad(x: Value, dx: Value) -> None:
        prev = grad_map.get(x)
        if prev is not None:
            n = f.insert_prim("AutogradAdd", [prev, dx], [(x.shape, x.dtype, False)])
            if x not in f_inputs:
                rex[n.output()] = _wrap(rex[prev]._data + rex[dx]._data)
                release(prev)
            hold(x, n.output())
        else:
            hold(x, dx)
        if dx not in held:
            rex.pop(dx, None)

    for i, o in enumerate(f.outputs()):
        if not o.requires_grad:
            continue
        p = rb.add_input(o.shape, o.dtype)
        rex[p] = _wrap(_synth(o, rng))
        set_grad(o, p)
        grad.df_input_vjps.append(i)

    for n in reversed(f.nodes()):
        if any(o.requires_grad for o in n._outputs):
            grads_in = linear_gradient_for_node(n, [get_grad(o) for o in n._outputs], ex, rex,
                                                tracer)
            assert len(grads_in) == len(n._inputs)
            for v, gv in zip(n._inputs, grads_in):
                if not v.requires_grad or gv is None:
                    continue
                set_grad(v, gv)
        for o in n._outputs:           # Note [Example values are transient]
            g = grad_map.get(o)
            if g is not None:
                release(g)
            ex.pop(o, None)
            tracer.examples_b.pop(o, None)
            tracer.examples_c.pop(o, None)

    for i, v in enumerate(f.inputs()):
        if not v.requires_grad or v not in grad_map:
            continue
        rb.register_output(get_grad(v))
        grad.df_output_vjps.append(i)
    f.set_insert_point(f.block(), None)
    return rev


def _trimmed(n: Node, grads: list) -> list:
    """Gradients for the differentiable outputs only (the seed's needTrimGrad: max(dim)'s
    indices, topk's indices ... get no gradient)."""
    if n.op is not None and len(n._outputs) > 1:
        return [g for g, o in zip(grads, n._outputs) if o.dtype in _DIFF_DTYPES]
    return grads


def linear_gradient_for_node(n: Node, grads: list, ex: dict, rex: dict,
                             tracer: Tracer) -> List[Optional[Value]]:
    f = tracer.graph
    grads = _trimmed(n, grads)
    gof = f.insert_prim("GradOf", grads, [], {"name": n.kind()}, source=n.source)
    blk = gof.add_block()
    blk.graph = f
    saved = f.insert_point()
    f.set_insert_point(blk, None)
    tracer.source_override = n.source
    try:
        results = _gradient(n, grads, ex, rex, tracer, blk)
    finally:
        tracer.source_override = None
        f.set_insert_point(*saved)
    out: List[Optional[Value]] = []
    for r in results:
        if r is None:
            out.append(None)
            continue
        blk.register_output(r)
        o = gof.add_output(r.shape, r.dtype, False)
        rex[o] = rex.pop(r)
        out.append(o)
    return out


def _sum_to(arr: np.ndarray, shape: tuple) -> np.ndarray:
    if arr.shape == tuple(shape):
        return arr
    lead = arr.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                      if s == 1 and arr.shape[lead + i] != 1)
    return np.add.reduce(arr, axis=dims, keepdims=True).reshape(shape)


def _cast(arr: np.ndarray, dt: np.dtype) -> np.ndarray:
    if arr.dtype.kind == "c" and dt.kind != "c":
        arr = arr.real
    return arr.astype(dt)


def _fix(f: Graph, g: Value, garr: np.ndarray, v: Value, rex: dict) -> Value:
    """The engine's fix-ups of a gradient for input ``v``: broadcast undone, dtype cast."""
    s = f.insert_prim("SumToSize", [g], [(v.shape, g.dtype, False)], {"size": v.shape},
                      source=tracer_source(f))
    out = s.output()
    arr = _sum_to(garr, v.shape)
    rex[out] = _wrap(arr)
    if g.dtype != v.dtype:
        c = f.insert_prim("Cast", [out], [(v.shape, v.dtype, False)], {"dtype": v.dtype},
                          source=tracer_source(f))
        rex.pop(out)
        out = c.output()
        rex[out] = _wrap(_cast(arr, v.dtype))
    return out


def tracer_source(f: Graph) -> str:
    tr = _tr.current_tracer()
    return (tr.source_override or "") if tr is not None else ""


def _gradient(n: Node, grads: list, ex: dict, rex: dict, tracer: Tracer,
              blk: Block) -> List[Optional[Value]]:
    f = tracer.graph
    k = n._kind
    ins = n._inputs
    if n.op is None:
        g = grads[0] if grads else None
        if k == "Call" and n.attrs.get("differentiable"):
            return _call_backward(n, grads, ex, rex, tracer)
        if k in ("Constant", "AutogradZero", "Detach", "Call"):
            return [None] * len(ins)
        if k == "AutogradAdd":
            return [g, g]
        if k == "SumToSize":
            assert g is not None  # one output, so one gradient (a GradOf block parameter)
            b = f.insert_prim("BroadcastTo", [g], [(ins[0].shape, g.dtype, False)],
                              {"size": ins[0].shape}, source=n.source)
            rex[b.output()] = _wrap(np.broadcast_to(rex[g]._data, ins[0].shape))
            return [b.output()]
        if k == "BroadcastTo":
            assert g is not None  # one output, so one gradient
            return [_fix(f, g, rex[g]._data, ins[0], rex)]
        if k == "Cast":
            assert g is not None  # one output, so one gradient
            return [_fix(f, g, rex[g]._data, ins[0], rex)]
        raise NotImplementedError(f"ndgrad.jit.differentiate: cannot differentiate a {k} node")
    op = n.op
    if op.name in OPAQUE_VJP:
        return _opaque(n, grads, ex, rex, tracer, blk)
    key = _rule_key(n, grads)
    if key is not None and _VERIFIED.get(key) is False:
        return _opaque(n, grads, ex, rex, tracer, blk)
    try:
        res, sig = _record_rule(n, grads, ex, rex, tracer, blk)
        if res is None:
            return [None] * len(ins)
        # Note [Data-independent rules]: record the rule a second time on other example values
        # (in a scratch block); a different program, or a constant with another value, means
        # the rule read the data outside the op table: it then runs at run time instead. The
        # verdict is cached per (op, arguments, input types, undefined gradients).
        if key is None or key not in _VERIFIED:
            scratch = Block(f)
            saved = f.insert_point()
            f.set_insert_point(scratch, None)
            try:
                try:
                    exb = _examples_for(tracer, n, False)
                    rexb = {g: _other(rex[g]) for g in grads}
                    _, sig_b = _record_rule(n, grads, exb, rexb, tracer, scratch)
                except TraceError:
                    raise
                except Exception:  # noqa: BLE001 (zeros/ties outside the rule's domain)
                    for m in reversed(scratch.nodes()):
                        m.destroy_recursive()
                    exc = _examples_for(tracer, n, True)
                    rexb = {g: _other(rex[g], False) for g in grads}
                    _, sig_b = _record_rule(n, grads, exc, rexb, tracer, scratch)
            finally:
                f.set_insert_point(*saved)
                for m in reversed(scratch.nodes()):
                    m.destroy_recursive()
            same = _same_signature(sig, sig_b)
            if key is not None:
                if len(_VERIFIED) > 4096:
                    _VERIFIED.clear()
                _VERIFIED[key] = same
            if not same:
                raise TraceError(f"the VJP rule of {op.name} depends on the data")
    except TraceError:
        if key is not None:
            _VERIFIED[key] = False
        for m in reversed(blk.nodes()):
            m.destroy_recursive()
        return _opaque(n, grads, ex, rex, tracer, blk)
    out: List[Optional[Value]] = []
    for v, r in zip(ins, res):
        if r is None:
            out.append(None)
            continue
        gv, garr = r
        out.append(_fix(f, gv, garr, v, rex))
    return out


_VERIFIED: dict = {}      # rule key -> True (recorded the same twice) / False (data-dependent)


def _rule_key(n: Node, grads: Optional[list]) -> Any:
    from .passes import _hashable  # local import: the same key the CSE pass uses
    try:
        args = _hashable(n.args)
    except TypeError:
        return None
    zero = (False,) * len(_trimmed(n, n._outputs)) if grads is None else \
        tuple(g.node() is not None and g.node()._kind == "AutogradZero" for g in grads)
    types = tuple((v.shape, v.dtype.str, v.requires_grad) for v in n._inputs)
    return (id(n.op), args, types, zero)


def _record_rule(n: Node, grads: list, ex: dict, rex: dict, tracer: Tracer,
                 blk: Block) -> tuple:
    """Run ``n``'s VJP rule on the example values ``ex``/``rex`` recording into ``blk``;
    return ([(value, example array) or None per input], signature of what was recorded)."""
    c0 = len(tracer.new_constants)
    ctx_node, outs = _rerun(n, ex, tracer)
    if ctx_node is None:
        return None, None
    gts = []
    for gv in grads:
        t = rex[gv]
        tracer.bind(t, gv)
        gts.append(t)
    with no_grad():
        res = _apply_rule(ctx_node, gts)
    kk = n.num_tensor_inputs
    out = []
    for i in range(len(n._inputs)):
        g = res[i] if i < kk and i < len(res) else None
        out.append(None if g is None else (tracer.value_of(g), g._data))
    consts = tracer.new_constants[c0:]
    sig = ([_node_sig(m) for m in blk.all_nodes()],
           [c.node().attrs["value"] for c in consts],
           [None if r is None else (r[0].shape, r[0].dtype.str) for r in out])
    return out, sig


def _node_sig(m: Node) -> Any:
    from .passes import _hashable  # local import: the same key the CSE pass uses
    try:
        args = _hashable(m.args)
        attrs = _hashable({k: v for k, v in m.attrs.items() if k != "value"})
    except TypeError:
        args = attrs = repr((m.args, m.attrs))
    return (m._kind, id(m.op), args, attrs, len(m._inputs))


def _same_signature(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    if a[0] != b[0] or a[2] != b[2] or len(a[1]) != len(b[1]):
        return False
    return all(x.shape == y.shape and x.dtype == y.dtype and
               np.array_equal(x, y, equal_nan=x.dtype.kind in "fc") for x, y in zip(a[1], b[1]))


def _leaves(ins: Sequence[Value], tensors: Sequence[Tensor], k: int) -> list:
    leaves = []
    for v, t in zip(ins[:k], tensors[:k]):
        leaf = _wrap(t._data)
        if v.requires_grad and t._data.dtype in _DIFF_DTYPES:
            leaf._requires_grad = True
        leaves.append(leaf)
    return leaves


def _rerun(n: Node, ex: dict, tracer: Tracer) -> tuple:
    """Run ``n``'s op eagerly (not recorded) on example leaves with grad mode on; bind the
    leaves, tensor arguments and results to ``n``'s values; return (backward node, results)."""
    k = n.num_tensor_inputs
    ins = n._inputs
    tens = [ex[v] for v in ins]
    leaves = _leaves(ins, tens, k)
    for leaf, v in zip(leaves, ins[:k]):
        tracer.bind(leaf, v)
    for t, v in zip(tens[k:], ins[k:]):
        tracer.bind(t, v)
    args = n.call_args(leaves + tens[k:])
    prev = _tr._local.tracer
    _tr._local.tracer = None
    try:
        with enable_grad():
            out = apply(n.op, tuple(leaves), tuple(t._data for t in leaves), args)
    finally:
        _tr._local.tracer = prev
    outs = (out,) if n.op.num_outputs == 1 else tuple(out)
    _tr.resave_outputs(n, n.op, outs, leaves + tens[k:])
    node = None
    for o, v in zip(outs, n._outputs):
        tracer.bind(o, v)
        if node is None and o._grad_fn is not None and \
                getattr(type(o._grad_fn), "_op", None) is n.op:
            node = o._grad_fn
    return node, outs


# ---------------------------------------------------------------------------- opaque rules
def _opaque(n: Node, grads: list, ex: dict, rex: dict, tracer: Tracer,
            blk: Block) -> List[Optional[Value]]:
    """An ``OpBackward`` node: the op's VJP rule runs at run time on the real values."""
    f = tracer.graph
    k = n.num_tensor_inputs
    ins = n._inputs
    want = [i for i, v in enumerate(ins[:k]) if v.requires_grad]
    attrs = {"op": n.op, "args": n.args, "k": k, "n_grads": len(grads),
             "saved_outputs": n.attrs.get("saved_outputs"),
             "n_inputs": len(ins), "needs": tuple(v.requires_grad for v in ins[:k]),
             "outputs": want}
    return _runtime_backward("OpBackward", run_op_backward, n, grads, want, attrs, ex, rex, f)


def _call_backward(n: Node, grads: list, ex: dict, rex: dict,
                   tracer: Tracer) -> List[Optional[Value]]:
    """A ``CallBackward`` node for a differentiable ``Call``: autograd through a re-run of the
    function at run time."""
    f = tracer.graph
    ins = n._inputs
    want = [i for i, v in enumerate(ins) if v.requires_grad and v.dtype in _DIFF_DTYPES]
    attrs = {"call": n, "n_grads": len(grads), "needs": tuple(v.requires_grad for v in ins),
             "outputs": want}
    return _runtime_backward("CallBackward", run_call_backward, n, grads, want, attrs, ex, rex,
                             f)


def _runtime_backward(kind: str, run: Callable, n: Node, grads: list, want: list, attrs: dict,
                      ex: dict, rex: dict, f: Graph) -> List[Optional[Value]]:
    """Insert a ``kind`` node (its backward runs at run time) with the gradients of inputs
    ``want`` as outputs, and run it once untraced on the example values (``rex``)."""
    ins = n._inputs
    node = f.insert_prim(kind, list(grads) + list(ins),
                         [(ins[i].shape, ins[i].dtype, False) for i in want], attrs,
                         source=n.source)
    prev = _tr._local.tracer
    _tr._local.tracer = None
    try:
        arrs = run(node, [rex[g] for g in grads] + [ex[v] for v in ins])
    finally:
        _tr._local.tracer = prev
    out: List[Optional[Value]] = [None] * len(ins)
    for j, i in enumerate(want):
        o = node.output(j)
        rex[o] = arrs[j] if arrs[j] is not None else _wrap(np.zeros(o.shape, o.dtype))
        out[i] = o
    return out


def run_call_backward(n: Node, ins: list) -> list:
    """Run a ``CallBackward`` node: call the function again on the inputs (fresh leaves where an
    input does not require grad already) with grad mode on, then ``autograd.grad``; with grad
    mode on and inputs that require grad (create_graph) the result is differentiable."""
    from ..autograd import grad as _grad  # local import: the API of the layer below's package
    from .interpret import call_node      # local import: interpret is imported above as well
    a = n.attrs
    call = a["call"]
    ng = a["n_grads"]
    grads = ins[:ng]
    inputs = ins[ng:]
    if all(g is None for g in grads):
        return [None] * len(a["outputs"])
    create = _state.enabled and any(t.requires_grad for t in inputs)
    leaves = []
    for t, need in zip(inputs, a["needs"]):
        if need and not t.requires_grad and t._data.dtype in _DIFF_DTYPES:
            leaf = _wrap(t._data)
            leaf._requires_grad = True
            leaves.append(leaf)
        else:
            leaves.append(t)
    with enable_grad():
        outs = call_node(call, leaves, replay=True)   # Note [Calls that update their inputs]
        pairs = [(o, g) for o, g in zip(outs, grads) if g is not None and o.requires_grad]
        wrt = [leaves[i] for i in a["outputs"]]
        if not pairs:
            return [None] * len(wrt)
        res = _grad([o for o, _ in pairs], wrt, [g for _, g in pairs], allow_unused=True,
                    create_graph=create)
    return [r if create or r is None else r.detach() for r in res]


def run_op_backward(n: Node, ins: list) -> list:
    """Run an ``OpBackward`` node: rebuild the op's backward node on the input values (grad
    mode on; inputs that already require grad are used as they are, so that create_graph
    differentiates through them) and apply its VJP rule to the gradients."""
    a = n.attrs
    op = a["op"]
    ng, ni, k = a["n_grads"], a["n_inputs"], a["k"]
    grads = ins[:ng]
    if all(g is None for g in grads):
        return [None] * len(a["outputs"])
    inputs = ins[ng:ng + ni]
    leaves = []
    for t, need in zip(inputs[:k], a["needs"]):
        if t.requires_grad or not need:
            leaves.append(t)
        else:
            leaf = _wrap(t._data)
            leaf._requires_grad = t._data.dtype in _DIFF_DTYPES
            leaves.append(leaf)
    args = _resolve(a["args"], inputs, k)
    with enable_grad():
        out = apply(op, tuple(leaves), tuple(t._data for t in leaves), args)
    outs = (out,) if op.num_outputs == 1 else tuple(out)
    _tr.resave_outputs(n, op, outs, leaves + list(inputs[k:]))
    node = next((o._grad_fn for o in outs if o._grad_fn is not None), None)
    if node is None:
        return [None] * len(a["outputs"])
    diff = [g for g, o in zip(grads, outs) if o._data.dtype in _DIFF_DTYPES] \
        if op.num_outputs != 1 else list(grads)
    res = node.apply(list(diff))
    result = []
    from ..autograd.engine import _fix_gradient  # local import: the engine's fix-ups, once
    for i in a["outputs"]:
        g = res[i] if i < len(res) else None
        if g is not None:
            g = _fix_gradient(node, i, g, (inputs[i]._data.shape, inputs[i]._data.dtype))
        result.append(g)
    return result


def _resolve(args: tuple, inputs: list, k: int) -> tuple:
    return tuple(_substitute(x, inputs, k) for x in args)


# ---------------------------------------------------------------------------- optimize
def optimize(grad: Gradient, rev: _Reverse) -> None:
    """The seed's ``Optimize``."""
    rb = rev.reverse_block
    lift_constants(rb, rb)
    fold_sizes(rb)
    specialize_autograd_zero(rb)
    eliminate_common_subexpression(grad.f)
    deduplicate_captures(grad, rev)
    grad_map = rev.grad_map

    def drop_dead(live: set) -> None:
        for x in [x for x, dx in grad_map.items() if dx not in live]:
            del grad_map[x]
    eliminate_dead_code(rb, drop_dead)


def get_reverse_captures(grad: Gradient) -> List[Value]:
    """Values of f used in the reverse block, in topological order (inputs first)."""
    f = grad.f
    primal = f.block()
    seen: set = set()
    caps: List[Value] = []

    def check(v: Value) -> None:
        for u in v._uses:
            if u.user.owning_block is primal:
                continue
            if v not in seen:
                seen.add(v)
                caps.append(v)
    for v in f.inputs():
        check(v)
    for n in f.nodes():
        for o in n._outputs:
            check(o)
    return caps


def deduplicate_captures(grad: Gradient, rev: _Reverse) -> None:
    """The seed's ``deduplicateSizeCaptures``, for static shapes: there are no size captures,
    but a view of a captured value (``t(W)`` next to ``W``) used only by the reverse block is
    recomputed there instead of captured too (a view costs no copy)."""
    primal = grad.f.block()
    rb = rev.reverse_block
    caps = get_reverse_captures(grad)
    cset = set(caps)
    pos = 0
    for c in caps:
        n = c.node()
        if n is None or n.op is None or not n.op.view or len(n._outputs) != 1:
            continue
        if any(u.user.owning_block is primal for u in c._uses):
            continue
        if not all(v in cset or (v._node is not None and v._node._kind == "Constant")
                   for v in n._inputs):
            continue
        m = Node(n._kind, n.op, dict(n.attrs))
        m.args, m.num_tensor_inputs, m.source = n.args, n.num_tensor_inputs, n.source
        for v in n._inputs:
            m.add_input(v)
        o = m.add_output(c.shape, c.dtype, False)
        m.owning_block = rb
        rb._nodes.insert(pos, m)
        pos += 1
        c.replace_all_uses_with(o)
        n.destroy()
        cset.discard(c)


# ---------------------------------------------------------------------------- lambda lift
def lambda_lift_reverse(grad: Gradient, rev: _Reverse) -> None:
    f = grad.f
    rb = rev.reverse_block
    grad_map = rev.grad_map
    captures = get_reverse_captures(grad)
    grad.f_real_outputs = len(f.outputs())
    out_idx: dict = {}
    for i, o in enumerate(f.outputs()):
        out_idx.setdefault(o, i)
    in_idx = {v: i for i, v in enumerate(f.inputs())}
    for c in captures:
        if c in out_idx:
            grad.df_input_captured_outputs.append(out_idx[c])
        elif c in in_idx:
            grad.df_input_captured_inputs.append(in_idx[c])
        else:
            f.register_output(c)
            grad.df_input_captured_outputs.append(len(f.outputs()) - 1)
    outs = f.outputs()
    for i in range(grad.f_real_outputs, len(outs)):
        tmp = outs[i]
        if tmp not in grad_map:
            continue
        vin = rb.add_input(tmp.shape, tmp.dtype)
        prev = grad_map[tmp]
        add = Node("AutogradAdd")
        add.add_input(vin)
        add.add_input(vin)
        new = add.add_output(tmp.shape, tmp.dtype, False)
        pn = prev.node()
        if pn is None:
            rb.prepend(add)
        else:
            blk = pn.owning_block
            blk._nodes.insert(blk._nodes.index(pn) + 1, add)
            add.owning_block = blk
        prev.replace_all_uses_with(new)
        add.replace_input(1, prev)
        grad_map[tmp] = new
        grad.df_input_vjps.append(i)
    df = Graph()
    env: dict = {}
    for p in rb._params:
        env[p] = df.add_input(p.shape, p.dtype, False)
    for idx in grad.df_input_captured_inputs:
        v = f.inputs()[idx]
        env[v] = df.add_input(v.shape, v.dtype, False, name=v._name)
    for idx in grad.df_input_captured_outputs:
        v = f.outputs()[idx]
        env[v] = df.add_input(v.shape, v.dtype, False, name=v._name)
    clone_block_into(rb, df.block(), env)
    for v in rb.outputs():
        df.register_output(env[v])
    for v in all_values(df):           # df runs on detached values too
        v.requires_grad = False
    # The reverse node was only a holder: drop its uses of f's values.
    for m in reversed(rb.nodes()):
        m.destroy_recursive()
    rb.return_node().remove_all_inputs()
    grad.df = df
