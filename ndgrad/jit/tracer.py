"""Tracing: run a function once on example inputs with the dispatcher's recording flag on and
build the ``Graph`` of the ops it ran.

Note [Tracing]
* ``ops/_dispatch.apply`` calls ``record`` right after an op's forward while ``_TRACING`` is set
  (one flag branch, like the profiler's); ``ops/views_inplace.apply_inplace`` wraps its
  out-of-place function with ``wrap_inplace`` (functionalization, below). Only the thread that
  traces records: the active ``Tracer`` is thread-local.
* Values are found by tensor identity first, then by array identity (a tensor rebuilt around an
  array an op produced, e.g. a saved output unpacked by the engine). A tensor whose
  ``requires_grad`` differs from its value's (``t.detach()``, ``t.detach().requires_grad_()``)
  gets a ``Detach`` node. A tensor the trace has never seen is *lifted*: it becomes a graph input
  read at call time (a closure tensor, a module's parameter); if nothing but the trace (and
  the structure the function returned) still holds it when the function has returned (a
  tensor the function built with a factory), it becomes a ``Constant`` instead. A NumPy view
  of traced data is refused (Note [Data leaving the op table]).
* The tracer holds tensors and arrays only weakly (Note [The tracer holds nothing alive]).
* ``autograd.grad``, ``backward``-free functional transforms, vmap-style batched gradients and
  forward-mode AD all compute with ops of the op table, so their ops are recorded like any other:
  a whole training step or Hessian becomes one graph. Values computed where grad mode is off
  (``grad(create_graph=False)``) do not require grad, as in eager.
* Data-dependent escapes (``bool(t)``, ``t.item()``, ``t.tolist()``, ``t.numpy()``,
  ``np.asarray(t)``, ``float(t)``/``int(t)``/``t.__index__``) on a traced value raise
  ``TraceError`` naming the user's line; so do ops whose output shape depends on the data. Random
  draws become nodes drawing at run time (Note [Random nodes] in random_nodes.py); a draw the
  tracer cannot see (the generator moved between two recorded ops: ``check_rng``) raises.
* Functionalization: an in-place op on ``t`` records its out-of-place op; ``t`` then maps to the
  result. When ``t`` is a view of a base ``b`` (Note [Views and in-place operations] in
  ops/views_inplace.py), ``b`` maps to ``view_zero(b) + view_scatter(new)`` over ``t``'s view
  steps and every other view of ``b`` is replayed from it (``as_strided_view``) when next used.
  Graph inputs whose value changed are listed in ``TraceResult.mutated`` and their final values
  are extra graph outputs (the caller writes them back).

Example:
    >>> import ndgrad
    >>> from ndgrad.jit import trace_graph
    >>> r = trace_graph(lambda x: (x * 2).sin(), (ndgrad.ones(3),))
    >>> print(r.graph)  # doctest: +ELLIPSIS
    graph(%x : f32[3]):
      %0 : f32[3] = mul[other=2](%x)...
      %1 : f32[3] = sin(%0)...
      return (%1)
    <BLANKLINE>
"""

from __future__ import annotations

import ctypes
import functools
import inspect
import os
import sys
import threading
import weakref
from types import FrameType
from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from .. import _generator
from .._aligned import AlignedBlock
from .. import _out as _out_mod
from .._refcounts import SOLE_REFERENCE_TESTS
from ..autograd import engine as _engine
from ..autograd.grad_mode import _state
from ..autograd.node import OpNode
from ..autograd.saved import TensorList
from ..ops import _dispatch
from ..ops import binary as _binary
from ..ops import linalg_decomp as _linalg_decomp
from ..ops._dispatch import _DIFF_DTYPES
from ..ops.views_inplace import VIEW_REPLAY, VIEW_SCATTER, VIEW_ZERO
from ..tensor import Tensor, _wrap
from .ir import ArrayArg, Graph, Node, ScratchList, TensorArg, Value
from . import random_nodes as _random_nodes
from .passes import eliminate_dead_code

__all__ = ["TraceError", "TraceResult", "trace_graph", "Tracer", "flatten", "unflatten",
           "lifted_sources",
           "current_tracer", "RANDOM_OPS", "DATA_DEPENDENT_SHAPE_OPS"]


class TraceError(RuntimeError):
    """The traced function did something a graph cannot represent (data-dependent control flow,
    random numbers ...). The message names the user's line."""


# Names of op arguments that are lists the forward fills for the backward (Note [Graph
# interface]: ScratchList).
_SCRATCH_ARGS = ("saved", "cache")
# Ops whose backward computes its gradient in NumPy from the forward's data and hands it to
# the next op as an array argument: a graph would keep the traced call's gradient.
_NO_TRACED_GRADIENT = frozenset({"ctc_loss"})
# Ops drawing random numbers: recorded as nodes drawing at run time when
# ``random_nodes.accept_op`` accepts them, else refused (their samples would be baked in).
RANDOM_OPS = frozenset({"bernoulli", "cauchy", "exponential", "geometric", "log_normal",
                        "normal", "random", "uniform", "dropout", "alpha_dropout",
                        "feature_alpha_dropout", "multinomial", "poisson", "rrelu",
                        "randperm", "rrelu_with_noise"})
# Ops whose output shape depends on the input values: a static-shape graph cannot hold them.
DATA_DEPENDENT_SHAPE_OPS = frozenset({"nonzero", "masked_select", "unique", "unique_consecutive",
                                      "argwhere", "nonzero_static_dynamic", "bincount",
                                      "repeat_interleave_tensor"})

_REFUSED = RANDOM_OPS | DATA_DEPENDENT_SHAPE_OPS

_local = threading.local()
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_lock = threading.Lock()
_active_count = [0]


def current_tracer() -> Optional["Tracer"]:
    """The tracer active in this thread, or None."""
    return getattr(_local, "tracer", None)


_FILE_NAMES: dict = {}      # co_filename -> its basename, or None for ndgrad's own files
_MISSING = object()


def _file_name(fn: str) -> Optional[str]:
    """``fn``'s basename, or None for ndgrad's own files (cached in ``_FILE_NAMES``)."""
    base = _FILE_NAMES[fn] = (None if fn.startswith(_PKG_DIR) or fn.startswith("<frozen")
                              else os.path.basename(fn))
    return base


def user_source(skip_jit: bool = True) -> str:
    """``file:line`` of the innermost frame outside the ndgrad package (the user's line)."""
    f: Optional[FrameType] = sys._getframe(1)
    names = _FILE_NAMES
    while f is not None:
        fn = f.f_code.co_filename
        base = names.get(fn, _MISSING)
        if base is _MISSING:
            base = _file_name(fn)
        if base is not None:
            return f"{base}:{f.f_lineno}"
        f = f.f_back
    return ""


# Note [One source line per backward pass]
# Every op a rule records while a traced backward runs has the user's line that called the
# backward (``autograd.grad``, a functional transform ...), which the walk above finds only
# after ~15 frames of dispatcher, rule, node and engine per op: a row-by-row Hessian records
# ~590 such ops. While tracing, ``autograd.api.run_backward`` is wrapped (``_patch_plan``): the
# wrapper finds the line once and pushes it on ``Tracer.bw_sources`` for the pass, and
# ``_op_source`` walks up from an op only to the ``OpNode.apply`` frame the engine (directly
# or through ``_raw_apply``) called: above it are only the engine and the wrapper, so the
# answer is the pushed line. A user frame met first (a hook, a Python rule outside ndgrad)
# is named as before.
_OPNODE_APPLY = OpNode.apply.__code__
_RAW_APPLY = _dispatch._raw_apply.__code__
_ENGINE_FILE = _engine.__file__


def _op_source(top: str) -> str:
    """``user_source()`` for an op recorded by ``Tracer.record`` while a traced backward
    whose line is ``top`` runs (Note [One source line per backward pass])."""
    f: Optional[FrameType] = sys._getframe(2)
    names = _FILE_NAMES
    while f is not None:
        code = f.f_code
        if code is _OPNODE_APPLY:
            b = f.f_back
            if b is not None and (b.f_code is _RAW_APPLY or
                                  b.f_code.co_filename == _ENGINE_FILE):
                return top
        fn = code.co_filename
        base = names.get(fn, _MISSING)
        if base is _MISSING:
            base = _file_name(fn)
        if base is not None:
            return f"{base}:{f.f_lineno}"
        f = f.f_back
    return ""


# ---------------------------------------------------------------------------- pytrees
def flatten(obj: Any) -> tuple:
    """``(leaves, spec)``: Tensors of a nested tuple/list/dict, and the structure."""
    leaves: list = []
    return leaves, _flatten(obj, leaves)


def _flatten(obj: Any, leaves: list) -> Any:
    if isinstance(obj, Tensor):
        leaves.append(obj)
        return ("T",)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return ("namedtuple", type(obj), [_flatten(o, leaves) for o in obj])
    if isinstance(obj, (tuple, list)):
        return (type(obj).__name__ if type(obj) in (tuple, list) else "tuple",
                [_flatten(o, leaves) for o in obj])
    if isinstance(obj, dict):
        keys = list(obj)
        return ("dict", keys, [_flatten(obj[k], leaves) for k in keys])
    return ("C", obj)


def unflatten(spec: Any, leaves: Sequence[Any]) -> Any:
    """Rebuild the structure ``spec`` from ``leaves`` (inverse of ``flatten``)."""
    it = iter(leaves)
    return _unflatten(spec, it)


def _unflatten(spec: Any, it: Any) -> Any:
    kind = spec[0]
    if kind == "T":
        return next(it)
    if kind == "C":
        return spec[1]
    if kind == "namedtuple":
        return spec[1](*[_unflatten(s, it) for s in spec[2]])
    if kind == "tuple":
        return tuple(_unflatten(s, it) for s in spec[1])
    if kind == "list":
        return [_unflatten(s, it) for s in spec[1]]
    if kind == "dict":
        return {k: _unflatten(s, it) for k, s in zip(spec[1], spec[2])}
    raise ValueError(f"bad pytree spec {spec!r}")


# ---------------------------------------------------------------------------- the result
class TraceResult:
    """What ``trace_graph`` returns.

    Attributes:
        graph: the Graph. Inputs: [flattened tensor inputs][lifted tensors]; outputs: [flattened
            tensor outputs][final values of mutated inputs].
        in_spec, out_spec: pytree specs (``unflatten(spec, leaves)``); Python values of the
            inputs are baked into the graph (non-tensor leaves of ``in_spec``).
        num_inputs: number of flattened tensor inputs of the function.
        lifted: tensors read at call time, one per graph input after the first ``num_inputs``.
        num_outputs: number of flattened tensor outputs of the function.
        mutated: graph input indices whose tensors the function modified in place; the final
            value of ``mutated[i]`` is ``graph.outputs()[num_outputs + i]``.
        example_inputs: the flattened example tensors (inputs then lifted) the trace ran on.
    """

    def __init__(self, graph: Graph, in_spec: Any, out_spec: Any, num_inputs: int,
                 lifted: list, num_outputs: int, mutated: list, example_inputs: list) -> None:
        self.graph = graph
        self.in_spec = in_spec
        self.out_spec = out_spec
        self.num_inputs = num_inputs
        self.lifted = lifted
        self.num_outputs = num_outputs
        self.mutated = mutated
        self.example_inputs = example_inputs

    def __repr__(self) -> str:
        return (f"TraceResult(num_inputs={self.num_inputs}, lifted={len(self.lifted)}, "
                f"num_outputs={self.num_outputs}, mutated={self.mutated})\n{self.graph}")


# ---------------------------------------------------------------------------- the tracer
# Note [The tracer holds nothing alive]
# The maps from tensors and arrays to Values hold weak references, so a traced run frees its
# intermediates when eager would and its peak memory is eager's. A tensor's entry goes when the
# tensor dies (a weakref callback: some checks ask only whether a tensor id is mapped). An
# array's entry stays until the trace ends (a plain weakref without callback, one per recorded
# output: no Python callback per dead array, Note [First-call cost]); every read of the array
# map checks identity (``ref() is a``), which is
# also what guards the tensor map against a new object reusing a dead one's id before its
# callback ran. A dead array's entry is a small tuple holding a Value the graph holds anyway.
class _Entry:
    __slots__ = ("ref", "value", "gen")

    def __init__(self, ref: Any, value: Value, gen: int) -> None:
        self.ref, self.value, self.gen = ref, value, gen


class _KeyedRef(weakref.ref):
    """``weakref.KeyedRef`` without its Python ``__new__``/``__init__`` (one per tensor the
    trace maps: Note [First-call cost]); ``key`` is set after construction."""
    __slots__ = ("key",)
    key: int


_ref = weakref.ref


def _dropper(d: dict) -> Callable:
    """A weakref callback removing its key from ``d`` if the entry still holds that ref."""
    def drop(ref: Any) -> None:
        e = d.get(ref.key)
        if e is not None and e.ref is ref:
            del d[ref.key]
    return drop


class Tracer:
    """Records ops into ``graph`` (at its insertion point). ``lift``: what to do with a tensor
    the trace has not seen: ``"input"`` (lift it to a graph input, decided at the end) or
    ``"constant"`` (used while differentiating: tensors made inside VJP rules)."""

    # True while a call wrapped by _make_call runs: calls nested in it are not recorded.
    in_call = False
    # Set by differentiate() on the tracer that records the VJP rules (the second and third
    # example sets of Note [Data-independent rules], the values of the nodes that need them:
    # Note [Example values are transient]).
    examples_b: dict
    examples_c: dict
    example_inputs: Optional[Sequence[Any]]

    def __init__(self, graph: Graph, lift: str = "input") -> None:
        self.graph = graph
        self.lift = lift
        self.tmap: dict = {}          # id(tensor) -> _Entry
        self.amap: dict = {}          # id(ndarray) -> (weakref to the ndarray, Value)
        self._tdrop = _dropper(self.tmap)
        self.candidates: list = []    # [tensor, Value, snapshot or None] lifted so far
        self.cand_ids: dict = {}      # id(tensor) -> index in candidates
        self.gens: dict = {}          # id(base tensor) -> generation (bumped on each write)
        # id(ndarray) -> weak references to the NumPy views of it that ops of the trace made:
        # a write into the array makes their amap entries stale (``_forget_views``)
        self.views_of: dict = {}
        self.stale: dict = {}         # id(ndarray) -> weak reference, views forgotten so
        self.inputs: list = []        # (tensor, Value) for the function's inputs
        self.source_override: Optional[str] = None
        # lines of the traced backward passes running in this thread, innermost last (Note
        # [One source line per backward pass])
        self.bw_sources: List[str] = []
        # False while differentiating: requires_grad of the values a VJP rule reads does not
        # matter there (the rule runs in no_grad mode).
        self.check_requires_grad = True
        self.scratch = False
        self.new_constants: list = []   # constants made while recording, in order
        self._rng_state = _rng_fingerprint()

    # ---- values
    def bind(self, t: Tensor, v: Value) -> None:
        self.set_t(t, v)
        self.set_a(t._data, v)

    def set_t(self, t: Tensor, v: Value, gen_of: Optional[Tensor] = None) -> None:
        """Map tensor ``t`` to ``v`` (weakly: Note [The tracer holds nothing alive])."""
        k = id(t)
        r = _KeyedRef(t, self._tdrop)
        r.key = k
        self.tmap[k] = _Entry(r, v,
                              self._gen_of(t if gen_of is None else gen_of))

    def set_a(self, a: np.ndarray, v: Value) -> None:
        """Map array ``a`` to ``v`` (weakly)."""
        k = id(a)
        self.amap[k] = (_ref(a), v)

    def _forget_views(self, d: np.ndarray) -> None:
        """Drop the amap entries of the views ops made of the memory ``d`` is written into."""
        b = d.base
        root = d if b is None or b.__class__ is AlignedBlock else b   # Note [Aligned arrays]
        views = self.views_of.get(id(root))
        if not views:
            return
        amap = self.amap
        keep = []
        for r in views:
            a = r()
            if a is None:
                continue
            if a is not d and np.may_share_memory(a, d):
                e = amap.get(id(a))
                if e is not None and e[0]() is a:
                    del amap[id(a)]
                    self.stale[id(a)] = r
            else:
                keep.append(r)
        self.views_of[id(root)] = keep

    def lookup_a(self, a: Any) -> Optional[Value]:
        """The Value of array ``a`` if an op of the trace produced it."""
        known = self.amap.get(id(a))
        if known is not None and known[0]() is a:
            return known[1]
        return None

    def _gen_of(self, t: Tensor) -> int:
        b = t._base if t._base is not None else t
        return self.gens.get(id(b), 0)

    def source(self) -> str:
        return self.source_override if self.source_override is not None else user_source()

    def value_of(self, t: Tensor) -> Value:
        e = self.tmap.get(id(t))
        if e is not None and e.ref() is t:
            v = e.value
            if t._base is not None and e.gen != self._gen_of(t):
                v = self._replay_view(t)
        else:
            v = self.lookup_a(t._data)
            if v is not None:
                if t._base is not None and self._gen_of(t) and \
                        self.tmap.get(id(t._base)) is not None:
                    v = self._replay_view(t)
            else:
                v = self._unknown(t)
            self.set_t(t, v)
        if not self.check_requires_grad:
            return v
        b = t._base                     # Tensor.requires_grad, inlined
        rg = t._requires_grad or (b is not None and b._requires_grad)
        if rg != v.requires_grad:
            v = self._detach(v, rg)
            self.tmap[id(t)].value = v
        return v

    def _unknown(self, t: Tensor) -> Value:
        if self.lift == "constant" or t._data.size == 0:
            v = self.graph_constant(t._data)
            if t.requires_grad:
                v = self._detach(v, True)
            return v
        if t._base is not None:
            base = t._base
            if id(base) not in self.tmap:
                self.value_of(base)
            return self._replay_view(t)
        self.refuse_derived(t._data)
        v = Value(t._data.shape, t._data.dtype, t.requires_grad)
        g = self.graph
        v._block = g.block()
        v.offset = -1                      # placed among the graph inputs at the end
        self.cand_ids[id(t)] = len(self.candidates)
        self.candidates.append([t, v, None])
        return v

    def refuse_derived(self, a: Any) -> None:
        """Raise ``TraceError`` if ndarray ``a`` is a NumPy view of an array of the trace (an
        input's or an op's result) made outside the op table (Note [Data leaving the op
        table]): as a constant the graph would keep the example's values."""
        st = self.stale.get(id(a))
        if st is not None and st() is a:
            raise TraceError(
                f"ndgrad.jit: a tensor used at {self.source()} wraps the data of a view made "
                "before an in-place write into its base (e.g. ``v.detach()`` or ``v.data`` "
                "after ``base.add_(...)``); the trace cannot tell its value. Take the view "
                "again after the write")
        b = getattr(a, "base", None)
        while b is not None:
            if type(b) is np.ndarray and self.lookup_a(b) is not None:
                raise TraceError(
                    f"ndgrad.jit: an array used at {self.source()} is a view of a traced "
                    "tensor's data made outside the op table (e.g. through the private "
                    "``_data``); the graph would keep the example's values, so this function "
                    "cannot be traced. Use tensor operations (views, indexing) instead")
            b = getattr(b, "base", None)

    def graph_constant(self, arr: np.ndarray) -> Value:
        blk, idx = self.graph.insert_point()
        top = self.graph.block()
        # Constants go to the top of the graph's top block (they are valid everywhere).
        self.graph.set_insert_point(top, 0)
        v = self.graph.insert_constant(arr, source=self.source())
        self.new_constants.append(v)
        if blk is top and idx is not None:
            idx += 1
        self.graph.set_insert_point(blk, idx)
        return v

    def _detach(self, v: Value, requires_grad: bool) -> Value:
        n = self.graph.insert_prim("Detach", [v], [(v.shape, v.dtype, requires_grad)],
                                   source=self.source())
        return n.output()

    def _replay_view(self, t: Tensor) -> Value:
        """Rebuild view ``t`` from its base's current value."""
        base = t._base
        bv = self.value_of(base)
        arr = self._example(base)
        v = self.emit(VIEW_REPLAY, [bv], [arr], (t._view_steps,))[0]
        return v

    def _example(self, t: Tensor) -> np.ndarray:
        return t._data

    # ---- recording
    def emit(self, op: Any, values: Sequence[Value], arrays: Sequence[np.ndarray],
             args: tuple) -> List[Value]:
        """Record ``op`` on ``values`` (computing its outputs' types by running it on
        ``arrays``); for functionalization."""
        out = op.forward(*arrays, *args)
        outs = (np.asarray(out),) if op.num_outputs == 1 else tuple(np.asarray(o) for o in out)
        n = self._insert(op, list(values), len(values), args, outs)
        return n.outputs()

    def _insert(self, op: Any, in_values: list, k: int, args: tuple, outs: tuple) -> Node:
        rg_in = (_state.enabled and op.differentiable and
                 any(v.requires_grad for v in in_values[:k])) or \
            (op.view and k > 0 and in_values[0].requires_grad)  # a view of a tensor that
        # requires grad does, even made in no_grad mode (Tensor.requires_grad)
        types = [(o.shape, o.dtype, rg_in and o.dtype in _DIFF_DTYPES) for o in outs]
        return self.graph.append_op(op, in_values, tuple(args), types, k, self.source())

    # Note [First-call cost]
    # A compiled function's first call traces, optimizes and generates code (Note [The tracing
    # call's result] in api.py), and issue 11 bounds it at a tenth of XLA's compile time for
    # the same workload. A row-by-row Hessian recorded ~590 ops (now ~40: Note [Jacobian rows
    # traced batched]) and a 200-op chain records ~380, so the number of recorded ops and the
    # cost per recorded op are the levers (``python bench/jit.py --phases-only`` prints the
    # phases per workload):
    # * ``record`` looks a tensor up without mapping it again (``_fast_value``: a mapped
    #   tensor, a view whose base was not written since it was mapped, a tensor wrapping an
    #   array an op of the trace produced), builds its node inline (``Graph.append_op``: no
    #   constructor conversions, ``ir._value``) and maps each output array with a plain weak
    #   reference (Note [The tracer holds nothing alive]).
    # * ``Graph.copy``/``clone_node`` build nodes and values field by field too.
    # * CSE keys a flat tuple of ints, bools, strings and None without the recursive walk
    #   (types stay in the key: ``pow(x, 2)`` and ``pow(x, 2.0)`` are not merged); DCE runs
    #   without a generator per one-output node; the forward pipeline copies the traced graph
    #   with CSE applied in one pass (``passes.copy_eliminating_common_subexpressions``: the
    #   nodes CSE would remove are never cloned) and does not repeat the traced graph's DCE.
    # * An op a VJP rule records in a traced backward walks up only to the engine's
    #   ``OpNode.apply`` for the user's line (Note [One source line per backward pass]).
    # * Removed nodes die by reference counting (Note [Dead nodes die by reference counting]
    #   in ir.py), not in the collection after the first call.
    # What remains per op is the node, the lookups and the walk for the line;
    # tests/test_jit_build_cost.py checks that the shortcuts give the long ways' graphs.
    def _fast_value(self, t: Tensor) -> Optional[Value]:
        """``value_of(t)`` for the common cases, without mapping ``t`` (Note [First-call
        cost]): ``t`` is mapped already (a view: its base was not written since), or wraps an
        array an op of the trace produced (a view: its base was never written), and its
        ``requires_grad`` is its value's. None: ask ``value_of``."""
        b = t._base
        e = self.tmap.get(id(t))
        if e is not None:
            if e.ref() is not t or (b is not None and e.gen != self.gens.get(id(b), 0)):
                return None
            v = e.value
        elif b is not None and self.gens.get(id(b), 0):
            return None
        else:
            # not mapped: a tensor (or a view whose base was never written: ``value_of``
            # would map it at generation 0 with this same value) wrapping an op's array
            a = t._data
            known = self.amap.get(id(a))
            if known is None or known[0]() is not a:
                return None
            v = known[1]
        if self.check_requires_grad and (t._requires_grad or (b is not None and
                                                              b._requires_grad)) \
                != v.requires_grad:
            return None
        return v

    def record(self, op: Any, tensors: tuple, arrays: tuple, args: tuple, out: Any) -> Any:
        """The dispatcher's hook: record one op call whose forward returned ``out``."""
        name = op.name
        if name in _REFUSED:
            if name in RANDOM_OPS and _random_nodes.accept_op(self, op):
                pass                # Note [Random nodes]
            elif name in RANDOM_OPS:
                raise TraceError(f"ndgrad.jit: random op '{name}' at {self.source()} cannot "
                                 "be recorded in this form (a generator= argument, or "
                                 "bernoulli_ with a tensor of probabilities; Note [Random "
                                 "nodes]); draw it outside the traced function and pass the "
                                 "numbers as inputs")
            else:
                raise TraceError(f"ndgrad.jit: '{name}' at {self.source()} has an output shape "
                                 "that depends on the input values; a traced graph has static "
                                 "shapes")
        else:
            self.check_rng()
        if op.num_outputs == 1:
            if type(out) is not np.ndarray:
                out = np.asarray(out)
            outs: tuple = (out,)
        else:
            out = tuple(o if type(o) is np.ndarray else np.asarray(o) for o in out)
            outs = out
        values = []
        in_rule = self.lift == "constant"
        na = len(arrays)
        for i, t in enumerate(tensors):
            if in_rule and not self.knows(t) and not _uniform(t._data):
                # In a VJP rule: a tensor the rule computed from the data with NumPy would be
                # baked in; differentiate then runs the rule at run time (OpBackward). One
                # whose elements are all equal is mostly a Python scalar made a tensor
                # (``where(mask, g, 0)``) or zeros of a static shape: it is kept as a
                # constant, and differentiate's second recording on other values (Note
                # [Data-independent rules]) finds one that came from the data.
                _check_not_derived(t, op, self.source())
            v = self._fast_value(t)
            if v is None:
                v = self.value_of(t)
            if i < na:
                a = arrays[i]
                if a is not t._data and a is not None:
                    v = self._operand(v, t, a)
            values.append(v)
        if na > len(tensors):
            for a in arrays[len(tensors):]:
                known = self.lookup_a(a)
                if known is None:
                    self.refuse_derived(a)
                    known = self.graph_constant(a)
                values.append(known)
        k = len(values)
        self.scratch = False
        if args and not _plain_args(args):
            extra: list = []
            args = self._lift_args(args, extra, op)
            values.extend(extra)
        # _insert, inlined (Note [First-call cost])
        rg_in = False
        if _state.enabled and op.differentiable:
            for j in range(k):
                if values[j].requires_grad:
                    rg_in = True
                    break
        if not rg_in and op.view and k > 0 and values[0].requires_grad:
            rg_in = True        # a view of a tensor that requires grad does (Tensor.requires_grad)
        if rg_in and name in _NO_TRACED_GRADIENT:
            raise TraceError(f"ndgrad.jit: the gradient of '{name}' at {self.source()} is "
                             "computed outside the op table and cannot be compiled yet; "
                             "compile it without gradients (no_grad, or inputs that do not "
                             "require grad) or run it eagerly")
        diff = _DIFF_DTYPES
        types = [(o.shape, o.dtype, rg_in and o.dtype in diff) for o in outs]
        src = self.source_override
        if src is None:
            bw = self.bw_sources
            src = _op_source(bw[-1]) if bw else user_source()
        node = self.graph.append_op(op, values, args if type(args) is tuple else tuple(args),
                                    types, k, src)
        if self.scratch:
            node.attrs["scratch"] = True
            self.scratch = False
        amap = self.amap
        for o, v in zip(outs, node._outputs):
            amap[id(o)] = (_ref(o), v)
            b = o.base
            if b is not None and b.__class__ is not AlignedBlock:
                self.views_of.setdefault(id(b), []).append(_ref(o))
        return out

    def _arg_value(self, a: Tensor, op: Any, arrays: dict) -> Value:
        if not self.knows(a):
            same = arrays.get(id(a._data))
            if same is not None:            # wraps an ndarray argument of the same call
                return same if isinstance(same, Value) else self.value_of(a)
            _check_not_derived(a, op, self.source())
        return self.value_of(a)

    def _lift_args(self, args: tuple, extra: list, op: Any = None) -> tuple:
        """Replace tensors (and ndarrays that are traced values) in ``args`` by placeholders
        referring to extra inputs appended to ``extra``."""
        arrays: dict = {}               # id(ndarray in args) -> traced Value or True

        def scan(a: Any) -> None:
            t = type(a)
            if t is np.ndarray:
                known = self.lookup_a(a)
                if known is not None:
                    if a.dtype == np.bool_ and a.ndim and op is not None and \
                            op.name in ("index", "index_put"):
                        raise TraceError(
                            f"ndgrad.jit: indexing with a boolean mask computed in the graph "
                            f"at {self.source()}: the result's shape depends on the data")
                    arrays[id(a)] = known
                else:
                    self.refuse_derived(a)
                    arrays.setdefault(id(a), True)
                src = getattr(a, "_source", None)
                if src is not None:
                    scan(src)
            elif t is tuple or t is list or t is TensorList:
                for x in a:
                    scan(x)
        scan(args)
        changed = [False]
        slots: dict = {}

        def slot(v: Value) -> int:
            j = slots.get(id(v))
            if j is None:
                extra.append(v)
                j = slots[id(v)] = len(extra) - 1
            return j

        def sub(a: Any) -> Any:
            t = type(a)
            if isinstance(a, Tensor):
                changed[0] = True
                return TensorArg(slot(self._arg_value(a, op, arrays)))
            if t is np.ndarray:
                v = arrays.get(id(a))
                if isinstance(v, Value):
                    changed[0] = True
                    return ArrayArg(slot(v))
                return a
            if t is tuple or t is list or t is TensorList:
                return t([sub(x) for x in a])
            return a
        new = list(sub(a) for a in args)
        names = op.arg_names if op is not None else ()
        for i, a in enumerate(args):
            if type(a) is list and i < len(names) and names[i] in _SCRATCH_ARGS:
                new[i] = ScratchList()
                changed[0] = True
                self.scratch = True
        return tuple(new) if changed[0] else args

    def _operand(self, v: Value, t: Tensor, a: np.ndarray) -> Value:
        """The value of array ``a`` that an op received in place of tensor ``t``'s data."""
        known = self.lookup_a(a)
        if known is not None:
            return known
        d = t._data
        if a.dtype != d.dtype:
            conv = d.astype(a.dtype) if not (d.dtype.kind == "c" and a.dtype.kind != "c") \
                else None
            if conv is not None and conv.shape == a.shape and \
                    np.array_equal(conv, a, equal_nan=a.dtype.kind in "fc"):
                return self.graph.insert_prim("Cast", [v], [(a.shape, a.dtype, v.requires_grad)],
                                              {"dtype": a.dtype}, source=self.source()).output()
        elif a.shape == d.shape and (a.size == 0 or np.shares_memory(a, d) or
                                     np.array_equal(a, d, equal_nan=a.dtype.kind in "fc")):
            return v
        if a.shape != d.shape and a.dtype == d.dtype:
            try:
                b = np.broadcast_to(d, a.shape)
            except ValueError:
                b = None
            if b is not None and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"):
                return self.graph.insert_prim("BroadcastTo", [v],
                                              [(a.shape, a.dtype, v.requires_grad)],
                                              {"size": a.shape}, source=self.source()).output()
        raise TraceError(f"ndgrad.jit: an operand was transformed outside the op table before "
                         f"an op at {self.source()}; this op cannot be traced")

    def check_rng(self) -> None:
        fp = _rng_fingerprint()
        if fp != self._rng_state:
            self._rng_state = fp
            raise TraceError(f"ndgrad.jit: random numbers were drawn at or before "
                             f"{self.source()} outside a recorded draw, or the generator's "
                             "state was set (manual_seed, set_rng_state, fork_rng, NumPy's "
                             "generator: Note [Random nodes]); their samples would be baked "
                             "into the graph: do that outside the traced function")

    # ---- functionalization
    def wrap_inplace(self, target: Tensor, fn: Callable) -> Callable:
        """Wrap the out-of-place function of an in-place op on ``target``."""
        def traced(s: Tensor, *args: Any) -> Any:
            cur = self._before_write(target)
            if s is not target:
                self.set_t(s, cur, target)
                self.set_a(s._data, cur)
            old = target._data.copy() if target._base is not None else None
            res = fn(s, *args)
            self._after_inplace(target, res, old)
            return res
        return traced

    def _before_write(self, target: Tensor) -> Value:
        """``target``'s value before an in-place write (a lifted candidate keeps a copy of its
        data then: if it turns out to be a constant, that is its value)."""
        cur = self.value_of(target)
        for t in (target, target._base):
            ci = self.cand_ids.get(id(t)) if t is not None else None
            if ci is None or self.candidates[ci][2] is not None:
                continue
            e = self.tmap.get(id(t))
            if e is not None and e.value is self.candidates[ci][1]:
                self.candidates[ci][2] = t._data.copy()
        return cur

    def write_out(self, dst: Tensor, src: Tensor) -> None:
        """``out=``: ``src`` is about to be copied into ``dst`` (ndgrad/_out.py ``_write``)."""
        self._before_write(dst)
        if dst._data.shape == src._data.shape:
            self._after_inplace(dst, src, None)
            return
        v = self.value_of(src)          # dst is resized: it becomes src (cast to dst's dtype)
        if v.dtype != dst._data.dtype:
            v = self.graph.insert_prim("Cast", [v], [(v.shape, dst._data.dtype,
                                                      v.requires_grad)],
                                       {"dtype": dst._data.dtype}, source=self.source()).output()
        self.set_t(dst, v)
        self.pending_out = dst

    def _after_inplace(self, t: Tensor, res: Tensor, old: Optional[np.ndarray]) -> None:
        new = self.value_of(res)
        d = t._data
        if new.dtype != d.dtype:
            new = self.graph.insert_prim("Cast", [new], [(new.shape, d.dtype,
                                                          new.requires_grad)],
                                         {"dtype": d.dtype}, source=self.source()).output()
        if new.shape != d.shape:
            new = self.graph.insert_prim("BroadcastTo", [new], [(d.shape, d.dtype,
                                                                 new.requires_grad)],
                                         {"size": d.shape}, source=self.source()).output()
        base = t._base
        # The written array now holds the new value: a tensor wrapping it later (``detach()``,
        # ``.data``, an alias) reads that value, not the one an op of the trace produced there;
        # NumPy views of the same memory made by earlier ops are stale (a tensor wrapping one
        # later is refused as a view of traced data made outside the op table).
        self._forget_views(d)
        self.set_a(d, new)
        if base is None:
            self.gens[id(t)] = self.gens.get(id(t), 0) + 1
            self.set_t(t, new)
            return
        # A write through a view: the base becomes view_zero(base) + view_scatter(new).
        bv = self.value_of(base)
        steps = t._view_steps
        barr = base._data            # still the old data (the write happens after fn)
        zero = self.emit(VIEW_ZERO, [bv], [barr], (steps,))[0]
        new_arr = np.asarray(res._data)
        if new_arr.shape != d.shape:
            new_arr = np.broadcast_to(new_arr.astype(d.dtype), d.shape)
        scat = self.emit(VIEW_SCATTER, [new], [new_arr.astype(d.dtype, copy=False)],
                         (steps, barr.shape, barr.dtype))[0]
        add = _add_op(_binary)
        z = VIEW_ZERO.forward(barr, steps)
        s = VIEW_SCATTER.forward(new_arr.astype(d.dtype, copy=False), steps, barr.shape,
                                 barr.dtype)
        total = self.emit(add, [zero, scat], [z, s], _add_args(add))[0]
        if total.dtype != barr.dtype:
            total = self.graph.insert_prim("Cast", [total], [(barr.shape, barr.dtype,
                                                              total.requires_grad)],
                                           {"dtype": barr.dtype}, source=self.source()).output()
        self.gens[id(base)] = self.gens.get(id(base), 0) + 1
        self.set_t(base, total)
        self.set_a(barr, total)
        self.set_t(t, new)
        del old

    # ---- calls recorded whole (see _make_call)
    def placeholders(self, args: tuple, kwargs: dict) -> tuple:
        """A ``Call`` node's arguments: ``(args, kwargs, inputs, slots, traced)`` with every
        Tensor (inside tuples and lists too) replaced by a ``TensorArg`` numbering the
        distinct tensors in order of first use; ``inputs`` their graph values, ``slots`` their
        numbers by ``id``, ``traced`` whether any is traced or requires grad."""
        inputs: list = []
        slots: dict = {}
        traced = [False]

        def sub(a: Any) -> Any:
            if isinstance(a, Tensor):
                if self.knows(a) or a.requires_grad:
                    traced[0] = True
                j = slots.get(id(a))
                if j is None:
                    inputs.append(self.value_of(a))
                    j = slots[id(a)] = len(inputs) - 1
                return TensorArg(j)
            if type(a) in (tuple, list):
                return type(a)(sub(x) for x in a)
            return a
        targs = tuple(sub(a) for a in args)
        tkw = {k: sub(v) for k, v in kwargs.items()}
        return targs, tkw, inputs, slots, traced[0]

    def record_call(self, name: str, fn: Callable, args: tuple, kwargs: dict,
                    res: Any, differentiable: bool = False) -> None:
        outs = res if isinstance(res, tuple) else (res,)
        if not all(isinstance(o, Tensor) for o in outs):
            return
        if not differentiable and all(self.knows(o) for o in outs):
            return                          # it went through the op table
        targs, tkw, inputs, slots, traced = self.placeholders(args, kwargs)
        if not traced:
            return                          # nothing traced goes in: a constant
        mutates = tuple(slots[id(t)] for t in _updated_args(name, args, kwargs)
                        if id(t) in slots)  # Note [Calls that update their inputs]
        n = self.graph.insert_prim(
            "Call", inputs,
            [(o._data.shape, o._data.dtype, differentiable and o.requires_grad) for o in outs],
            {"fn": fn, "name": name, "args": targs, "kwargs": tkw,
             "tuple": isinstance(res, tuple), "differentiable": differentiable,
             "mutates": mutates},
            source=self.source())
        for o, v in zip(outs, n.outputs()):
            self.set_t(o, v)
            self.set_a(o._data, v)

    def knows(self, t: Tensor) -> bool:
        e = self.tmap.get(id(t))
        if e is not None and e.ref() is t:
            return True
        if self.lookup_a(t._data) is not None:
            return True
        return id(t) in self.cand_ids


_PLAIN = frozenset({int, float, bool, str, type(None), complex})


def _plain_args(args: tuple) -> bool:
    """True when ``args`` holds only Python scalars, dtypes and tuples of ints: nothing
    ``_lift_args`` would replace (the common case, checked without its scan)."""
    for a in args:
        t = type(a)
        if t in _PLAIN or isinstance(a, np.dtype):
            continue
        if t is tuple and all(type(x) is int for x in a):
            continue
        return False
    return True


_DISPATCH_FILES = (os.path.abspath(_dispatch.__file__).rsplit(".", 1)[0],
                   os.path.abspath(__file__).rsplit(".", 1)[0])


def _uniform(a: np.ndarray) -> bool:
    """All elements of ``a`` equal (a 0-d array, zeros, a filled constant)."""
    if a.ndim == 0 or a.size == 0:
        return True
    first = a.reshape(-1)[:1]
    return bool((a == first).all()) if a.dtype.kind != "O" else False


def _check_not_derived(t: Tensor, op: Any, where: str) -> None:
    """Refuse a tensor argument that the op's Python wrapper computed itself (indices of
    max(dim), sort, topk ...; a mask's positions): it depends on the data but was computed
    outside the op table, so a graph would keep its example value. The wrapper is the first
    frame outside the dispatcher; the tensor is refused when one of its local variables that
    is not a parameter holds it (a tensor the caller passed is a parameter)."""
    f: Optional[FrameType] = sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).rsplit(".", 1)[0] in \
            _DISPATCH_FILES:
        f = f.f_back
    if f is None or not os.path.abspath(f.f_code.co_filename).startswith(_PKG_DIR):
        return
    code = f.f_code
    nparams = code.co_argcount + code.co_kwonlyargcount + \
        bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    params = set(code.co_varnames[:nparams])
    loc = f.f_locals

    def holds(val: Any) -> bool:
        return val is t or (type(val) in (tuple, list, TensorList) and any(x is t for x in val))
    if any(holds(loc.get(p)) for p in params):
        return                          # the caller passed it
    for name, val in loc.items():
        hit = val is t or (type(val) is TensorList and any(x is t for x in val)) or \
            (type(val) in (tuple, list) and any(x is t for x in val))
        if hit and name not in params:
            raise TraceError(
                f"ndgrad.jit: '{op.name if op is not None else '?'}' at {where} takes a tensor "
                f"argument ({name!r}) that {code.co_name}() computed from the data outside the "
                "op table; a traced graph would keep its example value, so this op cannot be "
                "traced")


def _add_op(binary: Any) -> Any:
    for name in ("ADD", "ADD_TENSOR"):
        op = getattr(binary, name, None)
        if op is not None:
            return op
    return _dispatch.REGISTRY["add"][0]


def _add_args(op: Any) -> tuple:
    return tuple(1 for _ in op.arg_names) if op.arg_names else ()


_RNG_VIEW: list = [None]    # (generator, its MT19937 key words, its position) as C views


def _rng_fingerprint() -> Any:
    """Something that changes when the default generator draws: the MT19937 position and two
    words of its key, read from NumPy's C state through views made once per generator (well
    under 1 µs; the ``state`` dict costs 100)."""
    g = _generator.default_generator
    mt = getattr(g, "_mt", None)
    if mt is None:
        return None
    view = _RNG_VIEW[0]
    if view is not None and view[0] is mt:      # the usual case: the views made already
        key = view[1]
        return (id(mt), view[2].value, key[0], key[623], getattr(g, "_next_normal", None))
    if view is None or view[0] is not mt:
        try:
            addr = mt.ctypes.state.value
            view = (mt, (ctypes.c_uint32 * 624).from_address(addr),
                    ctypes.c_int.from_address(addr + 624 * 4))
        except (AttributeError, TypeError, ValueError):
            st = mt.state["state"]
            return (id(mt), st["pos"], int(st["key"][0]), int(st["key"][-1]),
                    getattr(g, "_next_normal", None))
        _RNG_VIEW[0] = view       # holds the generator: the views' memory stays valid
    key = view[1]
    return (id(mt), view[2].value, key[0], key[623], getattr(g, "_next_normal", None))


# ---------------------------------------------------------------------------- escapes
class TracerWarning(Warning):
    """torch.jit's warning category for tracing problems (``torch.jit.TracerWarning``)."""


# Note [Frozen values in torch.jit.trace]
# ``trace_graph``, ``jit.trace`` of a function and ``compile`` refuse Python that reads a traced
# tensor's value (the graph would silently keep the branch taken; issue 11's contract).
# ``torch.jit.trace`` of an nn.Module (TorchScript's deployment path) accepts it, as torch's:
# inside a ``freezing_values`` wrapper (torchscript.py wraps the module's forward) the value
# is read from the example, a TracerWarning with torch's words is issued, and the graph keeps
# what that value led to (a branch, a constant), exactly what torch's trace records. The
# wrapper remembers the values its first trace read, in order: a later trace (inputs of
# another kind: another batch size, grad mode ...) is given the same values instead of
# reading its own, so every specialization keeps the example's branches and constants, as
# torch's one graph does (the trace check's second run, Note [Trace check], is such a later
# trace: it replays them too).
_FROZEN_WHAT = {"__bool__": "a Python boolean", "item": "a Python number",
                "__float__": "a Python float", "__int__": "a Python integer",
                "tolist": "a Python list", "numpy": "a NumPy array",
                "__array__": "a NumPy array", "__complex__": "a Python complex"}


class _FrozenValues:
    """The values a ``freezing_values`` wrapper's first trace read, replayed by later ones."""

    def __init__(self) -> None:
        self.values: list = []
        self.recorded = False      # the first trace is over: replay from now on
        self.pos = 0


def freezing_values(fn: Callable) -> Callable:
    """``fn`` run with its reads of traced values frozen (Note [Frozen values in
    torch.jit.trace])."""
    rec = _FrozenValues()

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        before = getattr(_local, "freeze", None)
        _local.freeze = rec
        rec.pos = 0
        try:
            return fn(*args, **kwargs)
        finally:
            _local.freeze = before
            if getattr(_local, "tracer", None) is not None:
                rec.recorded = True
    return run


def _frozen_read(name: str, rec: _FrozenValues, read: Callable) -> Any:
    """A traced value read under ``freezing_values``: the example's, replayed or read now."""
    if getattr(_local, "in_escape", False):       # float() calls item(): one read
        return read()
    if rec.recorded and rec.pos < len(rec.values):
        rec.pos += 1
        return rec.values[rec.pos - 1]
    if name in _FROZEN_WHAT:            # (an index is frozen silently, as torch's)
        import warnings
        warnings.warn(f"Converting a tensor to {_FROZEN_WHAT[name]} might cause the trace to "
                      "be incorrect. We can't record the data flow of Python values, so this "
                      "value will be treated as a constant in the future. This means that the "
                      "trace might not generalize to other inputs!", TracerWarning,
                      stacklevel=3)
    _local.in_escape = True
    try:
        value = read()
    finally:
        _local.in_escape = False
    if not rec.recorded:
        rec.values.append(value)
    return value


_ESCAPES = ("__bool__", "item", "tolist", "numpy", "__array__", "__float__", "__int__",
            "__index__", "__complex__", "backward")
_originals: dict = {}


def _make_escape(name: str, orig: Callable) -> Callable:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        tr = getattr(_local, "tracer", None)
        if tr is not None and tr.knows(self):
            rec = getattr(_local, "freeze", None)
            if name != "backward" and rec is not None:
                return _frozen_read(name, rec, lambda: orig(self, *args, **kwargs))
            if name == "backward":
                raise TraceError(
                    f"ndgrad.jit: Tensor.backward() at {user_source()} accumulates into .grad, "
                    "a side effect a compiled graph does not replay on later calls. Return the "
                    "gradients instead (ndgrad.autograd.grad(loss, params)), or call "
                    "backward() on the compiled function's output")
            what = {"__bool__": "bool(tensor)", "__float__": "float(tensor)",
                    "__int__": "int(tensor)", "__index__": "using a tensor as an index",
                    "__complex__": "complex(tensor)", "__array__": "np.asarray(tensor)"}.get(
                        name, f"Tensor.{name}()")
            raise TraceError(
                f"ndgrad.jit: {what} at {user_source()} reads the value of a traced tensor: "
                "data-dependent Python control flow cannot be traced (the graph would keep "
                "the branch taken for the example inputs). Use tensor ops (ndgrad.where ...) "
                "or call the function eagerly")
        return orig(self, *args, **kwargs)
    method.__name__ = name
    method.__qualname__ = f"Tensor.{name}"
    method.__doc__ = orig.__doc__
    return method


def _make_backward_escape(orig: Callable) -> Callable:
    """``ndgrad.autograd.backward`` refused on traced tensors, as ``Tensor.backward`` is."""
    def backward(tensors: Any, *args: Any, **kwargs: Any) -> Any:
        tr = getattr(_local, "tracer", None)
        roots = tensors if isinstance(tensors, (tuple, list)) else (tensors,)
        if tr is not None and any(isinstance(t, Tensor) and tr.knows(t) for t in roots):
            raise TraceError(
                f"ndgrad.jit: autograd.backward() at {user_source()} accumulates into .grad, "
                "a side effect a compiled graph does not replay on later calls. Return the "
                "gradients instead (ndgrad.autograd.grad(loss, params)), or compile only the "
                "model or loss (ndgrad.compile(model)) and call loss.backward() outside")
        return orig(tensors, *args, **kwargs)
    wrapper: Any = functools.wraps(orig)(backward)
    wrapper._jit_wrapper = True
    return wrapper


def _make_run_backward(orig: Callable) -> Callable:
    """``autograd.api.run_backward`` while tracing: the user's line found once per pass (Note
    [One source line per backward pass])."""
    def run_backward(*args: Any, **kwargs: Any) -> Any:
        tr = getattr(_local, "tracer", None)
        if tr is None:
            return orig(*args, **kwargs)
        stack = tr.bw_sources
        stack.append(user_source())
        try:
            return orig(*args, **kwargs)
        finally:
            stack.pop()
    wrapper: Any = functools.wraps(orig)(run_backward)
    wrapper._jit_wrapper = True
    return wrapper


# Note [Jacobian rows traced batched]
# ``autograd.functional.jacobian``/``hessian`` without ``vectorize`` run one backward pass per
# output element (``functional._jacobian_reverse_loop``): a 64-d Hessian records ~590 ops, the
# same ~9 ops 64 times, which stack batching (Note [Stack batching]) then folds back into one
# batched computation. While tracing, the loop is wrapped (``_make_jacobian_rows``): when the
# rows can be computed in one batched backward (no ``strict``, every output a real floating
# tensor requiring grad, no vmap level open, and every node of the graph has a batching rule
# and no hooks, ``autograd.api._graph_supports_batching``) the wrapper computes them as
# ``vectorize=True`` does, seeded with the standard basis, with ``retain_graph=True`` as the
# loop has. The graph records each op once instead of once per row (a 64-d Hessian: ~40
# recorded ops instead of ~590), and holds the batched computation stack batching would
# have built. Values are the row-by-row ones up to the summation order inside BLAS, as for
# stack batching; anything else takes the loop.
def _make_jacobian_rows(orig: Callable, functional: Any) -> Callable:
    """``functional._jacobian_reverse_loop`` while tracing (Note [Jacobian rows traced
    batched])."""
    from ..autograd import api as ag_api   # local import: the autograd layer's internals

    def rows(outputs: tuple, inputs: tuple, create_graph: bool, strict: bool) -> tuple:
        tr = getattr(_local, "tracer", None)
        if tr is None or tr.lift != "input" or strict or _dispatch._BATCHING or \
                not outputs or any(o._data.dtype.kind != "f" or not o.requires_grad or
                                   o._blevel for o in outputs) or \
                not ag_api._graph_supports_batching(
                    [e[0] for e in ag_api._root_edges(outputs)]):
            return orig(outputs, inputs, create_graph, strict)
        numels = [o.numel() for o in outputs]
        flat = [o.reshape(-1) for o in outputs]
        seeds = [s.reshape(s.shape[0], -1) for s in functional._basis(outputs)]
        res = list(ag_api.grad(flat, list(inputs), seeds, retain_graph=True,
                               create_graph=create_graph, allow_unused=True,
                               is_grads_batched=True))
        total = sum(numels)
        for j, r in enumerate(res):
            if r is None:
                res[j] = functional.zeros_like(inputs[j]).expand(
                    (total,) + tuple(inputs[j].shape))
        per_input = [[part.view(tuple(o.shape) + tuple(x.shape))
                      for part, o in zip(r.split(numels, 0), outputs)]
                     for r, x in zip(res, inputs)]
        return tuple(zip(*per_input))
    wrapper: Any = functools.wraps(orig)(rows)
    wrapper._jit_wrapper = True
    return wrapper


# Note [Functions outside the op table]
# A few non-differentiable functions (all/any, isclose, count_nonzero, searchsorted, bucketize,
# where(condition)) compute their result directly with NumPy instead of through an op of the
# table, so the dispatcher never sees them (comparisons, logical ops, the isnan family, argmax
# and the index computations of max(dim)/sort/topk ... are ops of the table: Note
# [Non-differentiable ops in the table] in ops/pointwise.py, Note [Index ops] in ops/sort.py).
# While tracing, these names (on Tensor and in the ndgrad namespace) are wrapped: a call on
# traced tensors is recorded as a ``Call`` node (attributes:
# the function and its arguments with ``TensorArg`` placeholders) whose outputs do not require
# grad. Any other tensor a function builds without the op table is taken as a constant (the op
# tests trace on one input and check on another, which finds such cases).
_CALL_NAMES = ("all", "any", "isclose", "searchsorted", "bucketize", "where")
_patched: list = []


# Functions whose Python wrapper computes part of the result from the data outside the op table
# (statistics of the normalizations, combinations):
# while tracing they are recorded whole, as a differentiable ``Call`` node (the function runs
# at run time, with recording suspended inside; its backward re-runs it under grad mode and
# asks autograd, ``CallBackward``): an opaque node whose backward is its own.
# Max pooling is in the op table (Note [Max pooling in the op table] in ops/nn_pool.py).
_DIFF_CALL_NAMES = ("layer_norm", "batch_norm", "group_norm", "instance_norm", "combinations")


# Note [Calls that update their inputs]
# batch_norm (training) and instance_norm (use_input_stats) update the running statistics they
# are given in place, and torch's batch_norm does so without a version bump, so the tracer
# cannot see it: it asks ``_updated_args``. The Call node lists those inputs
# (``attrs["mutates"]``). Only the compiled forward's run of the node may update them: the
# runs that only recompute values (differentiate's example run, the backward's re-run of the
# function, ``call_node(..., replay=True)``) give the function copies, and a first call whose
# graph has such a node returns the traced run's outputs (which updated the statistics once)
# instead of running the compiled code as well (Note [The tracing call's result] in api.py).
_STAT_UPDATES = {"batch_norm": ("training", 5, False), "instance_norm": ("use_input_stats", 5,
                                                                          True)}


def _updated_args(name: str, args: tuple, kwargs: dict) -> list:
    """The running-statistics tensors a ``batch_norm``/``instance_norm`` call updates."""
    spec = _STAT_UPDATES.get(name)
    if spec is None:
        return []
    flag_name, flag_pos, default = spec
    flag = kwargs.get(flag_name, args[flag_pos] if len(args) > flag_pos else default)
    if not flag:
        return []
    stats = [kwargs.get(k, args[i] if len(args) > i else None)
             for i, k in ((1, "running_mean"), (2, "running_var"))]
    return [t for t in stats if isinstance(t, Tensor)]


def _wants_call(name: str, args: tuple, kwargs: dict) -> bool:
    if name in ("max", "min"):          # only the (values, indices) form computes indices
        return "dim" in kwargs or (len(args) > 1 and not isinstance(args[1], Tensor))
    return True


def _make_call(name: str, orig: Callable, differentiable: bool = False) -> Callable:
    def method(*args: Any, **kwargs: Any) -> Any:
        tr = getattr(_local, "tracer", None)
        if tr is None or tr.in_call or (differentiable and (
                tr.lift == "constant" or not _wants_call(name, args, kwargs))):
            return orig(*args, **kwargs)
        tr.in_call = True
        if differentiable:
            _local.tracer = None         # the function runs whole: nothing inside is recorded
        try:
            res = orig(*args, **kwargs)
        finally:
            _local.tracer = tr
            tr.in_call = False
        tr.record_call(name, orig, args, kwargs, res, differentiable)
        return res
    method.__name__ = getattr(orig, "__name__", name)
    method.__qualname__ = getattr(orig, "__qualname__", name)
    method.__doc__ = getattr(orig, "__doc__", None)
    marked: Any = method       # function attributes, which a type checker does not know on a def
    marked.__wrapped__ = orig
    marked._jit_wrapper = True
    return method


class _FunctionApply:
    """``cls.apply`` of a custom Function as a ``Call`` node's function; equal for the same
    Function, so two traces of one program compare equal (Note [Trace check])."""

    __slots__ = ("cls", "func")

    def __init__(self, cls: Any, func: Callable) -> None:
        self.cls, self.func = cls, func

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(self.cls, *args, **kwargs)

    def __eq__(self, other: object) -> bool:
        return type(other) is _FunctionApply and other.cls is self.cls and \
            other.func is self.func

    def __hash__(self) -> int:
        return hash((id(self.cls), id(self.func)))


def _make_function_apply(orig: Any) -> Any:
    """``autograd.Function.apply`` while tracing: the Function is recorded whole, as a
    differentiable ``Call`` node (its forward runs at run time, and its backward is the user's
    ``backward`` through autograd, ``CallBackward``), as TorchScript records a PythonOp. Its
    outputs are found by array identity otherwise, and the graph would cut the gradient."""
    func = orig.__func__

    def apply(cls: Any, *args: Any, **kwargs: Any) -> Any:
        tr = getattr(_local, "tracer", None)
        if tr is None or tr.in_call or tr.lift == "constant":
            return func(cls, *args, **kwargs)
        res = _make_call(f"{cls.__name__}.apply", _FunctionApply(cls, func), True)(
            *args, **kwargs)
        outs = res if isinstance(res, tuple) else (res,)
        if not all(isinstance(o, Tensor) for o in outs):
            raise TraceError(
                f"ndgrad.jit: the custom autograd.Function {cls.__name__} at {user_source()} "
                "returns values that are not tensors; only Functions whose outputs are all "
                "tensors can be traced")
        return res
    marked: Any = apply
    marked._jit_wrapper = True
    marked.__wrapped__ = func
    return classmethod(apply)


# (key, plan): the patches of the last install, reused while sys.modules and every patched
# name are unchanged (building the plan scans every ndgrad module: about 1 ms per trace).
_PLAN: list = [None, ()]


def _space(holder: Any) -> Any:
    return holder.__dict__ if holder is Tensor else vars(holder)


def _patch_plan() -> Any:
    """``[(holder, name, original, wrapper)]``: the functions wrapped while tracing (Note
    [Functions outside the op table]); ``ndgrad.autograd.backward`` refused."""
    import ndgrad  # local import: the package namespace (it imports jit lazily)
    functional = sys.modules.get("ndgrad.nn.functional")  # local import: only if loaded
    masked = sys.modules.get("ndgrad.masked")  # local import: only if loaded (lazy)
    linalg = getattr(ndgrad, "linalg", None)
    key = (len(sys.modules), id(functional), id(masked), id(linalg))
    if _PLAN[0] == key and all(_space(h).get(n) is o for h, n, o, _ in _PLAN[1]):
        return _PLAN[1]
    plan: list = []
    seen: set = set()
    wrapped: dict = {}          # id(original) -> its wrapper

    def add(holder: Any, name: str, orig: Any, diff: bool, wrapper: Any = None) -> None:
        if (id(holder), name) in seen:
            return
        seen.add((id(holder), name))
        if wrapper is None:
            w = wrapped.get(id(orig))
            if w is None:
                w = wrapped[id(orig)] = (orig, _make_call(name, orig, diff))
            wrapper = w[1]
        plan.append((holder, name, orig, wrapper))

    for holder in (Tensor, ndgrad, linalg, functional):
        if holder is None:
            continue
        space = _space(holder)
        for names, diff in ((_CALL_NAMES, False), (_DIFF_CALL_NAMES, True)):
            for name in names:
                orig = space.get(name)
                if orig is None or not callable(orig) or isinstance(orig, type):
                    continue
                add(holder, name, orig, diff)
    # ndgrad.masked computes its masks with NumPy: every function of it is a Call.
    for name in getattr(masked, "__all__", ()):
        val = vars(masked).get(name)
        if inspect.isfunction(val) and not getattr(val, "_jit_wrapper", False):
            add(masked, name, val, True, _make_call(name, val, True))
    # The same functions as module globals of ndgrad's own modules (nn modules call them
    # through the op family, e.g. ``F.layer_norm`` with F = ops.nn_norm).
    for modname, mod in list(sys.modules.items()):
        if mod is None or not modname.startswith("ndgrad.") or \
                modname.startswith("ndgrad.jit") or mod is masked:
            continue
        space = vars(mod)
        for names, diff in ((_CALL_NAMES, False), (_DIFF_CALL_NAMES, True)):
            for name in names:
                val = space.get(name)
                if val is None or not inspect.isfunction(val) or \
                        getattr(val, "_jit_wrapper", False):
                    continue
                add(mod, name, val, diff)
    # torch.autograd.backward(loss) accumulates into .grad like loss.backward()
    ag = sys.modules.get("ndgrad.autograd")   # local import: loaded with ndgrad
    orig_bw = getattr(ag, "backward", None)
    if orig_bw is not None and not getattr(orig_bw, "_jit_wrapper", False):
        add(ag, "backward", orig_bw, False, _make_backward_escape(orig_bw))
    # one user line per traced backward pass (Note [One source line per backward pass])
    ag_api = sys.modules.get("ndgrad.autograd.api")   # local import: loaded with ndgrad
    orig_rb = getattr(ag_api, "run_backward", None)
    if orig_rb is not None and not getattr(orig_rb, "_jit_wrapper", False):
        add(ag_api, "run_backward", orig_rb, False, _make_run_backward(orig_rb))
    # Note [Jacobian rows traced batched]
    fnl = sys.modules.get("ndgrad.autograd.functional")   # local import: loaded with ndgrad
    orig_jl = getattr(fnl, "_jacobian_reverse_loop", None)
    if orig_jl is not None and not getattr(orig_jl, "_jit_wrapper", False):
        add(fnl, "_jacobian_reverse_loop", orig_jl, False, _make_jacobian_rows(orig_jl, fnl))
    # a custom autograd.Function is recorded whole (its own backward runs at run time)
    fn_mod = sys.modules.get("ndgrad.autograd.function")   # local import: loaded with ndgrad
    if fn_mod is not None:
        orig_apply = vars(fn_mod.Function)["apply"]
        if not getattr(orig_apply.__func__, "_jit_wrapper", False):
            add(fn_mod.Function, "apply", orig_apply, True, _make_function_apply(orig_apply))
    _PLAN[0], _PLAN[1] = key, tuple(plan)
    return _PLAN[1]


def _install() -> None:
    with _lock:
        _active_count[0] += 1
        if _active_count[0] == 1:
            for name in _ESCAPES:
                orig = Tensor.__dict__[name]
                _originals[name] = orig
                setattr(Tensor, name, _make_escape(name, orig))
            for holder, name, orig, wrapper in _patch_plan():
                _patched.append((holder, name, orig))
                setattr(holder, name, wrapper)
            _linalg_decomp._save_outputs = _save_outputs_hook
            _out_mod._write = _write_hook
            _dispatch.set_tracing(_record_hook, _inplace_hook)
            _generator.TRACE_HOOK[:] = [_draw_hook, _before_draw_hook]


def _uninstall() -> None:
    with _lock:
        _active_count[0] -= 1
        if _active_count[0] == 0:
            try:
                _dispatch.set_tracing(None, None)
                _generator.TRACE_HOOK[:] = [None, None]
            finally:                    # the patches go even if the line above failed
                _linalg_decomp._save_outputs = SAVE_OUTPUTS
                _out_mod._write = OUT_WRITE
                for holder, name, orig in reversed(_patched):
                    setattr(holder, name, orig)
                _patched.clear()
                for name, orig in _originals.items():
                    setattr(Tensor, name, orig)
                _originals.clear()


# Note [Outputs saved after apply]
# Decompositions (qr, svd, eigh, eig, lstsq) save their outputs for backward after ``apply``
# returns (ops/linalg_decomp.py ``_save_outputs``). While tracing, that function is wrapped so
# that the graph node keeps the recipe (``attrs["saved_outputs"]``: output indices,
# ``("input", i)`` for tensor input i, ``("arg", value)``); differentiate replays it on the
# backward node it rebuilds (``resave_outputs``).
SAVE_OUTPUTS = _linalg_decomp._save_outputs


def _save_outputs_hook(op: Any, results: tuple, values: tuple) -> None:
    SAVE_OUTPUTS(op, results, values)
    tr = getattr(_local, "tracer", None)
    if tr is None or tr.lift == "constant":
        return
    vals = [tr.value_of(r) for r in results]
    node = vals[0].node()
    if node is None or node.op is not op:
        return
    recipe: list = []              # ints and ("input", position) pairs
    for v in values:
        if type(v) is int:
            recipe.append(v)
        elif v[0] == "input":
            iv = tr.value_of(v[1])
            recipe.append(("input", node._inputs.index(iv)))
        else:
            recipe.append(v)
    node.attrs["saved_outputs"] = tuple(recipe)


def resave_outputs(node: Any, op: Any, results: tuple, inputs: Sequence[Any]) -> None:
    """Replay ``node.attrs["saved_outputs"]`` on a rebuilt backward node's results."""
    recipe = node.attrs.get("saved_outputs")
    if recipe is None:
        return
    vals = tuple(("input", inputs[r[1]]) if type(r) is tuple and r[0] == "input" else r
                 for r in recipe)
    SAVE_OUTPUTS(op, results, vals)


OUT_WRITE = _out_mod._write


def _write_hook(name: str, dst: Tensor, src: Tensor) -> None:
    tr = getattr(_local, "tracer", None)
    if (name in _out_mod._RANGES and dst._data.shape != src._data.shape
            and dst._data.size == src._data.size):
        src = src.reshape(dst._data.shape)      # out keeps its shape (Note [out= arguments])
    if tr is not None and tr.lift != "constant":
        tr.write_out(dst, src)
    OUT_WRITE(name, dst, src)
    if tr is not None and getattr(tr, "pending_out", None) is dst:
        tr.set_a(dst._data, tr.tmap[id(dst)].value)
        tr.pending_out = None


def _record_hook(op: Any, tensors: tuple, arrays: tuple, args: tuple, out: Any) -> Any:
    tr = getattr(_local, "tracer", None)
    if tr is None:
        return out
    return tr.record(op, tensors, arrays, args, out)


def _inplace_hook(target: Tensor, fn: Callable) -> Callable:
    tr = getattr(_local, "tracer", None)
    if tr is None:
        return fn
    return tr.wrap_inplace(target, fn)


def _draw_hook(fn: Callable, args: tuple) -> Any:
    """``_generator.draw`` while tracing (Note [Draws in traced functions])."""
    tr = getattr(_local, "tracer", None)
    if tr is None:
        return fn(*args)
    return _random_nodes.record_draw(tr, fn, args)


def _before_draw_hook() -> None:
    tr = getattr(_local, "tracer", None)
    if tr is not None:
        _random_nodes.before_op_draw(tr)


class tracing:
    """Context manager: make ``tracer`` the active tracer of this thread."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer

    def __enter__(self) -> Tracer:
        self.prev = getattr(_local, "tracer", None)
        _local.tracer = self.tracer
        try:
            _install()
        except BaseException:
            # an interrupted install (KeyboardInterrupt ...) must not leave patches behind:
            # _uninstall undoes the count and every patch recorded so far
            _local.tracer = self.prev
            _uninstall()
            raise
        return self.tracer

    def __exit__(self, *exc: Any) -> None:
        _local.tracer = self.prev
        _uninstall()


# ---------------------------------------------------------------------------- trace_graph
def _param_names(fn: Callable, n: int) -> List[str]:
    if not inspect.isfunction(fn) and not inspect.ismethod(fn) and hasattr(fn, "forward"):
        fn = fn.forward
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return [f"x{i}" for i in range(n)]
    names = []
    for i in range(n):
        if i < len(params) and params[i].kind in (params[i].POSITIONAL_ONLY,
                                                  params[i].POSITIONAL_OR_KEYWORD):
            names.append(params[i].name)
        else:
            names.append(f"x{i}")
    return names


def trace_graph(fn: Callable, example_inputs: Any, kwargs: Optional[dict] = None,
                check: bool = True) -> TraceResult:
    """Run ``fn(*example_inputs, **kwargs)`` once, recording its ops into a Graph.

    ``example_inputs`` is a tuple of arguments (a single Tensor is taken as one argument); each
    may be a Tensor, a nested tuple/list/dict of Tensors, or a Python value (baked in).

    With ``check`` (Note [Trace check]) ``fn`` runs a second time on other values of the
    floating point inputs and lifted tensors (their data swapped in and restored afterwards,
    with their version counters and ``.grad``), and the two graphs must be the same program
    with the same constants, else ``TraceError`` names the line of the first difference (a value
    computed from the data outside the op table, or data-dependent control flow the escapes did
    not catch). Like ``torch.jit.trace(check_trace=True)``, Python side effects of ``fn`` run
    twice.

    >>> import ndgrad
    >>> x = ndgrad.ones(2, requires_grad=True)
    >>> r = trace_graph(lambda x: x.exp().sum(), (x,))
    >>> [n.kind() for n in r.graph.nodes()], r.graph.outputs()[0].requires_grad
    (['exp', 'sum'], True)
    """
    if isinstance(example_inputs, Tensor) or not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    args = tuple(example_inputs)
    kwargs = dict(kwargs or {})
    result = _trace_once(fn, args, kwargs)
    if check:
        _check_trace(fn, args, kwargs, result)
    return result


def _output_refs(keep: list) -> dict:
    """id(tensor) -> references the structure in ``keep`` holds to that tensor (as a container
    element, or as the ``_base`` of a view it holds): the tensors the function returned are
    kept for the caller, and these references must not count as "alive outside the trace"."""
    refs: dict = {}
    seen: set = set()

    def walk(obj: Any) -> None:
        if isinstance(obj, Tensor):
            if id(obj) not in seen:
                seen.add(id(obj))
                if obj._base is not None:
                    refs[id(obj._base)] = refs.get(id(obj._base), 0) + 1
            return
        if isinstance(obj, dict):
            items: Any = obj.values()
        elif isinstance(obj, (tuple, list)):
            items = obj
        else:
            return
        for x in items:
            if isinstance(x, Tensor):
                refs[id(x)] = refs.get(id(x), 0) + 1
            walk(x)
    walk(keep)
    return refs


def _trace_once(fn: Callable, args: tuple, kwargs: dict,
                keep: Optional[list] = None) -> TraceResult:
    """One traced run of ``fn``; with ``keep``, what ``fn`` returned is appended to it (the
    first call of a compiled function returns it: Note [The tracing call's result])."""
    leaves, in_spec = flatten((args, kwargs))
    g = Graph()
    tr = Tracer(g)
    names = _param_names(fn, len(args))
    counts: dict = {}
    # Name each input after its parameter (``x``, or ``x_0``, ``x_1`` inside a structure).
    arg_of_leaf = []
    for i, a in enumerate(args):
        sub, _ = flatten(a)
        arg_of_leaf.extend([(i, len(sub))] * len(sub))
    kw_names = []
    for key, val in kwargs.items():
        sub, _ = flatten(val)
        kw_names.extend([key] if len(sub) == 1 else [f"{key}_{j}" for j in range(len(sub))])
    seen_ids: dict = {}
    for k, t in enumerate(leaves):
        if id(t) in seen_ids:            # the same tensor passed twice: the graph reads the
            # first position (this input stays unused, but keeps the positions of the leaves)
            g.add_input(t._data.shape, t._data.dtype, t.requires_grad)
        if k < len(arg_of_leaf):
            i, cnt = arg_of_leaf[k]
            base = names[i]
            j = counts.get(i, 0)
            counts[i] = j + 1
            name = base if cnt == 1 else f"{base}_{j}"
        else:
            name = kw_names[k - len(arg_of_leaf)]
        if id(t) in seen_ids:
            g.inputs()[-1].debug_name = name
            continue
        v = g.add_input(t._data.shape, t._data.dtype, t.requires_grad, name=name)
        seen_ids[id(t)] = v
        tr.bind(t, v)
        tr.inputs.append((t, v))
    # A leaf repeated in the inputs maps every graph input position to the first value: the
    # duplicate positions are inputs the graph does not use.
    with tracing(tr):
        out = fn(*args, **kwargs)
        out_leaves, out_spec = flatten(out)
        out_values = [tr.value_of(t) for t in out_leaves]
        # Final values of inputs and lifted tensors (views replayed where their base changed).
        finals = [(t, v, tr.value_of(t)) for t, v in tr.inputs]
        cfinals = [(c, c[1], tr.value_of(c[0])) for c in list(tr.candidates)]
        tr.check_rng()
    if keep is not None:
        keep.append(out)
    del out, out_leaves
    for v in out_values:
        g.register_output(v)
    mutated_vals = []
    mutated_inputs: List[tuple] = []     # (kind, index or candidate, final value)
    for idx, (_t, v, fv) in enumerate(finals):
        if fv is not v:
            mutated_inputs.append(("input", idx, fv))
    for c, v, fv in cfinals:
        if fv is not v:
            mutated_inputs.append(("lifted", c, fv))
    # Decide the lifted candidates: alive outside the trace -> graph input; else constant.
    cands = tr.candidates
    tr.tmap.clear()
    tr.amap.clear()
    tr.inputs = []
    del finals, cfinals     # their references would count in the refcounts below
    lifted = []
    out_refs = _output_refs(keep) if keep else {}
    for c in cands:
        t, v, snap = c
        c[0] = None
        refs = sys.getrefcount(t) - out_refs.get(id(t), 0)
        # with unverified counts (Note [Sole-reference tests]) every candidate is lifted:
        # read at call time, never a stale constant
        if refs > 2 or not SOLE_REFERENCE_TESTS:
            lifted.append((t, v))
        else:
            # Built inside the function: a constant holding its value at first use.
            arr = snap if snap is not None else t._data
            g.set_insert_point(g.block(), 0)
            cv = g.insert_constant(arr, source=_first_use_source(v))
            g.set_insert_point(g.block(), None)
            if v.requires_grad:
                det = Node("Detach")
                det.add_input(cv)
                det.add_output(v.shape, v.dtype, True)
                g.block()._nodes.insert(1, det)
                det.owning_block = g.block()
                cv = det.output()
            v.replace_all_uses_with(cv)
        del t
    lifted_names = _lifted_names(fn)
    used = {v._name for v in g.inputs()}
    for t, v in lifted:
        nm = lifted_names.get(id(t), "lifted")
        cand, j = nm, 1
        while cand in used:
            cand, j = f"{nm}_{j}", j + 1
        used.add(cand)
        v.debug_name = cand
        v.offset = len(g.block()._params)
        v._block = g.block()
        g.block()._params.append(v)
    num_inputs = len(leaves)
    for kind, who, fv in mutated_inputs:
        if kind == "input":
            mutated_vals.append((who, fv))
        else:
            for j, (_t, v) in enumerate(lifted):
                if v is who[1]:
                    mutated_vals.append((len(g.inputs()) - len(lifted) + j, fv))
    graph_inputs_of_leaf = []
    for t in leaves:
        graph_inputs_of_leaf.append(t)
    for _, fv in mutated_vals:
        g.register_output(fv)
    mutated = [i for i, _ in mutated_vals]
    _finish(g)
    return TraceResult(g, in_spec, out_spec, num_inputs, [t for t, _ in lifted],
                       len(out_values), mutated, list(leaves) + [t for t, _ in lifted])


# Note [Data leaving the op table]
# A graph is correct when every value computed from the inputs reaches it through an op of the
# table. The ways data can leave the table while tracing, and what the tracer does with each:
# * Python reading a value (``bool``, ``.item()``, ``.tolist()``, ``.numpy()``, ``float`` ...):
#   the escapes raise ``TraceError``.
# * ndgrad functions whose Python wrapper computes part of the result with NumPy: recorded
#   whole as ``Call`` nodes (Note [Functions outside the op table]) and run again at run time;
#   a VJP rule doing so is refused by ``_check_not_derived`` (differentiate then runs the rule
#   at run time).
# * An ndarray that is a NumPy *view* of an array of the trace (an input's data or an op's
#   result), reaching the graph as a tensor the trace never saw, an op operand or an index
#   argument: ``Tracer.refuse_derived`` raises ``TraceError`` naming the line (the arrays of
#   the trace are known by identity, and a view's ``base`` leads to them). The very array of a
#   traced value is that value, not a constant.
# What stays undetected by a single trace: user code reaching the private ``Tensor._data`` and
# computing a *new* array from it with NumPy (``np.sort(t._data)``), or an index array made
# from one; that array becomes a constant. ``ndgrad.jit.trace(check_trace=True)`` (its default)
# finds such values with a second, perturbed trace (Note [Trace check]); ``ndgrad.compile``
# traces once, as torch.compile does (docs/differences.md).

# Note [Trace check]
# The tracer sees ops of the op table; a tensor some function computes from the data with NumPy
# outside the table (a mask, indices), or a Python decision it takes on the data without the
# escapes seeing it, would silently become part of the graph with the example's value. The
# check traces a second time with other values and compares the two programs node by node.
# It runs for ``trace_graph(check=True)`` and ``ndgrad.jit.trace(check_trace=True)``, never for
# ``ndgrad.compile``. While it runs, the lifted tensors (parameters ...) hold perturbed values
# that another thread reading them would see (docs/differences.md).
def _perturb(arr: np.ndarray, rng: np.random.Generator, mode: int) -> np.ndarray:
    if arr.dtype.kind not in "fc" and arr.dtype.name != "bfloat16":
        return arr.copy()
    x = arr.astype(np.complex128 if arr.dtype.kind == "c" else np.float64)
    if mode == 0:           # new values, signs included
        scale = float(np.abs(x).mean()) + 1.0 if x.size else 1.0
        y = rng.standard_normal(x.shape) * scale
        if arr.dtype.kind == "c":
            y = y + 1j * rng.standard_normal(x.shape) * scale
    else:                   # same signs and zeros, other magnitudes
        y = x * rng.uniform(0.5, 1.5, x.shape)
    return np.asarray(y).astype(arr.dtype)


def _node_signature(g: Graph) -> list:
    from .passes import _hashable  # local import: passes imports this module's neighbours
    pos: dict = {}
    for i, v in enumerate(g.inputs()):
        pos[v] = ("in", i)
    sig = []
    for k, n in enumerate(g.nodes()):
        try:
            args = _hashable(n.args)
            attrs = _hashable({a: b for a, b in n.attrs.items() if a != "value"})
        except TypeError:
            args = attrs = None
        value = n.attrs.get("value")
        if value is not None and _random_nodes.values_unread(n._outputs[0]):
            value = None            # filled with random numbers: its values are never read
        sig.append((n, (n.kind(), id(n.op), args, attrs,
                        tuple(pos.get(v, ("?",)) for v in n._inputs)), value))
        for j, o in enumerate(n._outputs):
            pos[o] = (k, j)
    out = tuple(pos.get(v, ("?",)) for v in g.outputs())
    return sig + [(None, ("return", out), None)]


def _check_trace(fn: Callable, args: tuple, kwargs: dict, result: TraceResult,
                 kept: bool = False) -> None:
    leaves, spec = flatten((args, kwargs))
    lifted = result.lifted
    state = [(t, t._data, list(t._version_counter) if t._version_counter else None, t._grad)
             for t in lifted]
    second = None
    # the second run's draws are not the call's: the generators are put back (Note [Random
    # nodes] in random_nodes.py)
    gen_states = _random_nodes.snapshot(result.graph)
    for mode in (0, 1):
        rng = np.random.default_rng(7 + mode)
        new_leaves = []
        made: dict = {}                 # the same tensor twice stays the same tensor
        for t in leaves:
            c = made.get(id(t))
            if c is None:
                c = made[id(t)] = _wrap(_perturb(t._data, rng, mode))
                if t.requires_grad and t._grad_fn is None:
                    c._set_requires_grad(True)
            new_leaves.append(c)
        a2, k2 = unflatten(spec, new_leaves)
        try:
            for t, d, _, _ in state:
                t._data = _perturb(d, rng, mode)
                # a backward inside fn accumulates into .grad in place: the check's gradients
                # go to a fresh .grad, and the user's tensor is put back untouched below
                t._grad = None
            # its outputs are kept while it decides what to lift when the traced run's were
            # (``kept``): a tensor built inside fn and saved by an output's graph, such as an
            # RNN cell's zero state, is then lifted in both runs, not in one only
            second = _trace_once(fn, a2, k2, [] if kept else None)
        except TraceError:
            raise
        except Exception:   # noqa: BLE001 (values outside the function's domain: try others)
            second = None
        finally:
            _random_nodes.restore(gen_states)
            for t, d, vc, grad in state:
                t._data = d
                if vc is not None:
                    t._version_counter[:] = vc
                t._grad = grad
        if second is not None:
            break
    if second is None:
        return                  # no other values were valid for fn: nothing to compare
    s1, s2 = _node_signature(result.graph), _node_signature(second.graph)
    for (n1, k1, v1), (_n2, k2, v2) in zip(s1, s2):
        where = (n1.source if n1 is not None and n1.source else
                 _first_use_source(n1.output()) if n1 is not None and n1._outputs else "")
        if k1 != k2:
            raise TraceError(
                f"ndgrad.jit: the traced function runs other operations on other input values "
                f"(from {where or 'its end'} on): data-dependent control flow or a value "
                "computed outside the op table; it cannot be traced")
        if v1 is not None and not (v1.shape == v2.shape and v1.dtype == v2.dtype and
                                   np.array_equal(v1, v2, equal_nan=v1.dtype.kind in "fc")):
            raise TraceError(
                f"ndgrad.jit: a tensor used at {where or 'unknown'} was computed from the data "
                "outside the op table (its value differs between two traces); the graph would "
                "keep the example's value, so this function cannot be traced")
    if len(s1) != len(s2):
        raise TraceError("ndgrad.jit: the traced function runs a different number of operations "
                         "on other input values; it cannot be traced")


def _first_use_source(v: Value) -> str:
    for u in v._uses:
        if u.user.source:
            return u.user.source
    return ""


def _lifted_names(fn: Callable) -> dict:
    """id(tensor) -> a name for tensors ``fn`` reaches: closure variables, globals it names,
    parameters and buffers of a module (``fn`` itself or a bound method's ``self``)."""
    names: dict = {}
    mods = []
    target = fn
    if hasattr(fn, "__self__"):
        mods.append(fn.__self__)
        target = fn.__func__ if hasattr(fn, "__func__") else fn
    mods.append(fn)
    for m in mods:
        for meth in ("named_parameters", "named_buffers"):
            f = getattr(m, meth, None)
            if callable(f):
                try:
                    for nm, t in f():
                        names.setdefault(id(t), nm.replace(".", "_"))
                except TypeError:
                    pass
    code = getattr(target, "__code__", None)
    if code is None and hasattr(fn, "forward"):
        code = getattr(getattr(fn, "forward", None), "__code__", None)
    if code is not None:
        cells = getattr(target, "__closure__", None) or ()
        for nm, cell in zip(code.co_freevars, cells):
            try:
                val = cell.cell_contents
            except ValueError:
                continue
            _name_tensors(val, nm, names)
        glb = getattr(target, "__globals__", {})
        for nm in code.co_names:
            _name_tensors(glb.get(nm), nm, names)
    return names


def _name_tensors(val: Any, nm: str, names: dict) -> None:
    if isinstance(val, Tensor):
        names.setdefault(id(val), nm)
        return
    for meth in ("named_parameters", "named_buffers"):
        f = getattr(val, meth, None)
        if callable(f) and not isinstance(val, type):
            try:
                for sub, t in f():
                    names.setdefault(id(t), f"{nm}_{sub}".replace(".", "_"))
            except TypeError:
                pass


# Note [Where lifted tensors live]
# A lifted tensor is read at call time from the object the trace saw; if the user rebinds the
# name it was reached through (``s = ndgrad.tensor(5.)`` for a closure or global ``s``,
# ``model.lin.weight = nn.Parameter(...)``), the compiled function must notice, as
# torch.compile's guards do. ``lifted_sources`` gives, per lifted tensor, a probe returning the
# object found now where the trace found it (a closure cell, a global, a module attribute
# path); ndgrad.jit.api checks the probes on every call and traces again when one differs.
def lifted_sources(fn: Callable, tensors: Sequence[Tensor]) -> List[Optional[Callable]]:
    """Per tensor, a zero-argument probe returning what is now where ``fn`` reached it (None
    when it was reached otherwise, e.g. through a container: then it is not guarded)."""
    probes: dict = {}
    roots: list = []
    while hasattr(fn, "__wrapped__"):      # torch.jit.trace's wrappers (freezing_values ...)
        fn = fn.__wrapped__
    target = fn
    if hasattr(fn, "__self__"):
        roots.append(lambda m=fn.__self__: m)
        target = fn.__func__ if hasattr(fn, "__func__") else fn
    roots.append(lambda m=fn: m)
    for root in roots:
        _probe_module(root, probes)
    code = getattr(target, "__code__", None)
    if code is None and hasattr(fn, "forward"):
        code = getattr(getattr(fn, "forward", None), "__code__", None)
    if code is not None:
        for cell in getattr(target, "__closure__", None) or ():
            _probe_value(lambda c=cell: c.cell_contents, probes)
        glb = getattr(target, "__globals__", {})
        for nm in code.co_names:
            if nm in glb:
                _probe_value(lambda g=glb, n=nm: g[n], probes)
    return [probes.get(id(t)) for t in tensors]


def _probe_value(get: Callable, probes: dict) -> None:
    try:
        val = get()
    except Exception:   # noqa: BLE001 - an empty cell: nothing reached through it
        return
    if isinstance(val, Tensor):
        probes.setdefault(id(val), get)
    else:
        _probe_module(get, probes)


def _probe_module(get: Callable, probes: dict) -> None:
    mod = get()
    if isinstance(mod, type):
        return
    for meth in ("named_parameters", "named_buffers"):
        f = getattr(mod, meth, None)
        if not callable(f):
            continue
        try:
            items = list(f())
        except TypeError:
            continue
        for path, t in items:
            probes.setdefault(id(t), lambda g=get, p=tuple(path.split(".")): _walk(g(), p))


def _walk(obj: Any, path: tuple) -> Any:
    for part in path:
        obj = getattr(obj, part)
    return obj


def _finish(g: Graph) -> None:
    """Drop nodes nothing uses (recorded ops whose results the function discarded)."""
    eliminate_dead_code(g.block())
