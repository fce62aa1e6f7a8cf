"""Random numbers in traced functions: draws become graph nodes that draw at run time.

Note [Random nodes]
A traced function may draw random numbers (``nn.Dropout`` in training, ``ndgrad.randn``,
``x.uniform_()`` ...). Each draw becomes a node that draws again when the compiled code runs,
from the same generator and in the same order as the eager function, so a compiled call draws
exactly the numbers an eager call draws from the same generator state, and leaves the
generator in the same state. Two kinds of node:
* an op of the table that draws in its forward (``bernoulli``, ``normal``, ``uniform``,
  ``exponential``, ``cauchy``, ``geometric``, ``log_normal``, ``random``: ``RANDOM_NODE_OPS``) is
  recorded as usual; the generated code calls its forward, which draws. Only the default
  generator: an op given ``generator=`` is refused (its forward reads the generator of the
  eager call, ops/sampling.py ``_ACTIVE``).
* a draw outside the op table goes through ``_generator.draw(fn, *args)`` (Note [Draws in
  traced functions] in ndgrad/_generator.py); while tracing, ``record_draw`` records a
  ``Call`` node with ``attrs["random"]`` running ``run_draw(fn, *args)`` (Tensors in ``args``
  are the node's inputs). Its arrays are the values of the node, so the ops using them
  (dropout's ``input * noise``) read the node.
The generator is a hidden state threaded through these nodes, hence (``is_random``):
* CSE never merges two of them (two dropouts of one shape draw two masks), constant folding
  never runs one (``codegen.fold``, ``stack_batching.fold_constants``) and dead code
  elimination keeps them even when their result is unused (eager drew those numbers too);
* passes keep their relative order (no pass reorders nodes of the top block);
* they live in ``f`` only: a sample has no gradient, and ``df`` reads the forward's draws as
  captured values (dropout's backward multiplies by the forward's mask).
Drawing is a side effect the build must not repeat: ``differentiate`` runs ``f`` on example
values and ``check_trace`` runs the function a second time, so the generators a graph draws
from are put back afterwards (``snapshot``/``restore``). The first call of a compiled function
that returns the compiled run's outputs (Note [The tracing call's result] in api.py) rewinds
the generators to their state before the trace (``rewind``): the compiled run then draws what
the traced run drew. Draws the tracer cannot see (NumPy's generator, the samplers of
distributions drawn by NumPy's algorithms such as ``Poisson``) still raise ``TraceError``
(``Tracer.check_rng``).

Example:
    >>> import ndgrad
    >>> f = ndgrad.compile(lambda x: ndgrad.nn.functional.dropout(x, 0.5))
    >>> x = ndgrad.ones(6)
    >>> _ = ndgrad.manual_seed(1); a = f(x); b = f(x)
    >>> _ = ndgrad.manual_seed(1); ea = ndgrad.nn.functional.dropout(x, 0.5)
    >>> eb = ndgrad.nn.functional.dropout(x, 0.5)
    >>> a.tolist() == ea.tolist() and b.tolist() == eb.tolist()
    True
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from .. import _generator
from ..ops import sampling as _sampling
from ..tensor import _wrap
from .ir import Graph, Node, Value

__all__ = ["RANDOM_NODE_OPS", "TRACEABLE_RANDOM_OPS", "is_random", "values_unread",
           "record_draw", "run_draw", "accept_op", "before_op_draw", "snapshot", "restore",
           "rewind"]

# Ops of the table that draw in their forward, recorded as nodes drawing at run time.
RANDOM_NODE_OPS = frozenset({"bernoulli", "cauchy", "exponential", "geometric", "log_normal",
                             "normal", "random", "uniform"})
# Ops of the table whose noise is an argument drawn through ``_generator.draw`` (a random node
# of its own): they draw nothing themselves (rrelu in training).
_NOISE_ARGUMENT_OPS = frozenset({"rrelu_with_noise"})
# The random ops the graph path compiles (``ndgrad.jit.supported_ops``).
TRACEABLE_RANDOM_OPS = RANDOM_NODE_OPS | _NOISE_ARGUMENT_OPS


# Random ops whose tensor input gives only the shape and dtype of the sample (the in-place
# fills, ``bernoulli(x, p)``): ``x.new_empty(n).uniform_()`` reads no value of the empty tensor.
_SHAPE_ONLY = frozenset({_sampling.UNIFORM, _sampling.NORMAL_, _sampling.CAUCHY,
                         _sampling.EXPONENTIAL, _sampling.GEOMETRIC, _sampling.LOG_NORMAL,
                         _sampling.RANDOM_FROM_TO, _sampling.RANDOM_TO, _sampling.RANDOM,
                         _sampling.BERNOULLI_FILL, _sampling.BERNOULLI_P})


def values_unread(v: Value) -> bool:
    """Whether every use of ``v`` is the target of a random fill, which reads its shape only
    (the trace check then ignores the value of such a constant: ``empty``'s garbage)."""
    return bool(v._uses) and all(u.user.op in _SHAPE_ONLY and u.offset == 0 for u in v._uses)


def is_random(n: Node) -> bool:
    """Whether node ``n`` draws random numbers when it runs (Note [Random nodes])."""
    op = n.op
    if op is not None:
        return op.name in RANDOM_NODE_OPS
    return n._kind == "Call" and bool(n.attrs.get("random"))


def run_draw(fn: Callable, *args: Any) -> Any:
    """A random ``Call`` node's function: ``fn(*args)``'s arrays as Tensors."""
    out = fn(*args)
    if isinstance(out, tuple):
        return tuple(_wrap(o) for o in out)
    return _wrap(out)


def _tracer_module() -> Any:
    from . import tracer   # local import: tracer imports this module
    return tracer


def _remember(tr: Any, g: Any) -> None:
    """Keep generator ``g``'s state before the trace's first draw from it (for ``rewind``)."""
    first = tr.graph.__dict__.setdefault("_random_first", {})
    if id(g) not in first:
        first[id(g)] = (g, _state(g))


def record_draw(tr: Any, fn: Callable, args: tuple) -> Any:
    """``fn(*args)`` run for tracer ``tr`` and recorded as a random ``Call`` node whose
    outputs are the arrays it returned."""
    if tr.__dict__.get("_drawing"):
        return fn(*args)            # a draw inside a recorded one (``rand_like`` -> ``rand``)
    trm = _tracer_module()
    tr.check_rng()                  # nothing drew unrecorded before this draw
    for a in args:
        if isinstance(a, _generator.Generator):
            _remember(tr, a)
    _remember(tr, _generator.default_generator)
    tr._drawing = True
    try:
        out = fn(*args)
    finally:
        tr._drawing = False
    tr._rng_state = trm._rng_fingerprint()
    outs = out if isinstance(out, tuple) else (out,)
    targs, _, inputs, _, _ = tr.placeholders(args, {})
    n = tr.graph.insert_prim(
        "Call", inputs, [(o.shape, o.dtype, False) for o in outs],
        {"fn": run_draw, "name": getattr(fn, "__name__", "draw").lstrip("_"),
         "args": (fn,) + targs, "kwargs": {}, "tuple": isinstance(out, tuple),
         "differentiable": False, "random": True},
        source=tr.source())
    for o, v in zip(outs, n.outputs()):
        tr.set_a(o, v)
    return out


def before_op_draw(tr: Any) -> None:
    """An op of the table is about to draw: nothing drew unrecorded before it."""
    tr.check_rng()
    gen = _sampling._ACTIVE[-1]
    _remember(tr, gen if gen is not None else _generator.default_generator)


def accept_op(tr: Any, op: Any) -> bool:
    """Whether the random op ``op`` (whose forward has just drawn) is recorded as a node
    drawing at run time; raises ``TraceError`` when it drew from a generator given as
    ``generator=``."""
    if op.name in _NOISE_ARGUMENT_OPS:
        tr.check_rng()              # its noise is a node already (``draw``)
        return True
    if op.name not in RANDOM_NODE_OPS:
        return False
    gen = _sampling._ACTIVE[-1]
    if gen is not None and gen is not _generator.default_generator:
        trm = _tracer_module()
        raise trm.TraceError(
            f"ndgrad.jit: random op '{op.name}' at {tr.source()} draws from a generator "
            "passed as generator=: a compiled graph draws only from the default generator "
            "(ndgrad.manual_seed); use it, or draw outside the traced function")
    tr._rng_state = _tracer_module()._rng_fingerprint()
    return True


# ---------------------------------------------------------------------------- generator states
def _state(g: Any) -> tuple:
    return (g._mt.state, g._next_normal, g._seed)


def _set_state(g: Any, st: tuple) -> None:
    g._mt.state, g._next_normal, g._seed = st


def _generators(graph: Graph) -> list:
    """The generators the trace that built ``graph`` drew from (empty: it drew nothing),
    without a walk over the graph (Note [First-call cost] in tracer.py)."""
    return [g for g, _ in graph.__dict__.get("_random_first", {}).values()]


def snapshot(graph: Optional[Graph] = None) -> Optional[list]:
    """The states of the generators ``graph`` draws from (None: it draws from none), or of
    the default generator when ``graph`` is None; ``restore`` puts them back."""
    gens = [_generator.default_generator] if graph is None else _generators(graph)
    return [(g, _state(g)) for g in gens] or None


def restore(states: Optional[list]) -> None:
    """Put back the generator states of ``snapshot``."""
    for g, st in states or ():
        _set_state(g, st)


def rewind(graph: Graph) -> None:
    """Put the generators ``graph`` draws from back in their state before the trace's first
    draw (Note [Random nodes]: the first compiled run then draws what the traced run drew)."""
    for g, st in graph.__dict__.get("_random_first", {}).values():
        _set_state(g, st)
