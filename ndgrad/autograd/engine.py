"""The reverse-mode engine: runs the backward graph from given roots.

Note [Engine execution order]
Dependencies are counted over the graph reachable from the roots. A node is ready when every
node that feeds it has run; ready nodes run latest-created first (highest sequence number;
AccumulateGrad nodes before all others), the order PyTorch's CPU engine uses. Gradients
arriving at a node are summed in a per-node input buffer; ``None`` is the zero gradient and is
never materialized by the engine. The loop is iterative, so graph depth is limited only by
memory. When ``inputs`` are given, only nodes on a path to them run (``needed``); for
``autograd.grad`` the gradients are captured where they enter the input's node instead of being
accumulated. Tensor hooks run before captures; node pre hooks, the node, then node post hooks.

Example:
    >>> import ndgrad
    >>> x = ndgrad.ones(3, requires_grad=True)
    >>> (x * x).sum().backward()
    >>> x.grad.tolist()
    [2.0, 2.0, 2.0]
"""

from __future__ import annotations

import heapq
import itertools
import sys
import threading
from importlib import import_module
from typing import Any, Optional, Sequence

import numpy as np

from .._aligned import AlignedBlock
from .._refcounts import SOLE_REFERENCE_TESTS
from .._sparse import SparseTensor
from .._sparse_compressed import CompressedTensor
from .._layout import sparse_csr as _csr_layout
from . import anomaly_mode, grad_mode, profiler
from .accumulate_grad import AccumulateGrad
from .node import OpNode
from .batching import is_batched

__all__ = ["run_backward", "run_backward_scalar", "is_checkpoint_valid"]

_tensor_mod = import_module("ndgrad.tensor")  # the module; ndgrad.tensor is also a function

Tensor = _tensor_mod.Tensor

Edge = tuple  # (node, input_nr)


def run_backward(
    root_edges: Sequence[Edge],
    root_grads: Sequence[Any],
    keep_graph: bool,
    create_graph: bool,
    input_edges: Optional[Sequence[Edge]] = None,
    accumulate_grad: bool = True,
    plan: Optional[dict] = None,
) -> Optional[list]:
    """Run backward from ``root_edges`` seeded with ``root_grads``.

    Returns the gradients captured at ``input_edges`` when ``accumulate_grad`` is False.
    ``plan``: a dict kept by a caller that runs the same roots and inputs several times (the
    rows of a Jacobian); the graph analysis is done on the first run and reused.
    """
    state = _grad_state
    prev = state.enabled
    prev_receivers = state.receivers
    state.enabled = bool(create_graph)
    state.receivers = None
    try:
        tasks = _local.tasks
    except AttributeError:
        tasks = _local.tasks = []
    # _GraphTask(accumulate_grad, keep_graph, ...) without its __init__ frame
    task = _new(_GraphTask)
    task.id = _next_task_id()
    task.accumulate_grad = accumulate_grad
    task.keep_graph = keep_graph
    task.checkpoint_valid = accumulate_grad and input_edges is None
    task.nodes = task.needed = task.captures = None
    tasks.append(task)
    try:
        if anomaly_mode._enabled or profiler._ACTIVE:
            return _execute_instrumented(root_edges, root_grads, keep_graph, input_edges,
                                         accumulate_grad)
        return _execute(root_edges, root_grads, keep_graph, input_edges, accumulate_grad,
                        None, plan)
    finally:
        state.enabled = prev
        state.receivers = prev_receivers
        tasks.pop()


def run_backward_scalar(node: Any, nr: int, seed: Any, keep_graph: Any) -> None:
    """``run_backward(((node, nr),), (seed,), keep_graph, False)``: the usual
    ``loss.backward()`` (Note [Lean backward entry])."""
    state = _grad_state
    prev = state.enabled
    prev_receivers = state.receivers
    state.enabled = False
    state.receivers = None
    try:
        tasks = _local.tasks
    except AttributeError:
        tasks = _local.tasks = []
    task = _new(_GraphTask)         # _GraphTask(True, keep_graph) without its __init__ frame
    task.id = _next_task_id()
    task.accumulate_grad = task.checkpoint_valid = True
    task.keep_graph = keep_graph
    task.nodes = task.needed = task.captures = None
    tasks.append(task)
    try:
        if anomaly_mode._enabled or profiler._ACTIVE:
            _execute_instrumented(((node, nr),), (seed,), keep_graph, None, True)
        elif node._has_hooks or not _RUN_ALONE.get(node.__class__, _run_node_and_leaves)(
                node, nr, seed, keep_graph, task):
            _execute(((node, nr),), (seed,), keep_graph, None, True)
    finally:
        state.enabled = prev
        state.receivers = prev_receivers
        tasks.pop()


# Note [Lean backward entry]
# ``loss.backward()`` of a 0-d floating point loss with a history (no gradient, inputs or
# create_graph given, not a view) skips ``backward``'s argument handling (autograd/api.py) and
# enters here with its seed. When the loss's node feeds only leaves (AccumulateGrad nodes
# without hooks, each reached once: a compiled function's one node, Note [Compiled call
# protocol] in jit/executor.py), ``_run_node_and_leaves`` runs the node and then the
# accumulators in edge order, which is what ``_run`` does with such a graph (the node first,
# its leaves right after it in the order they became ready, Note [Engine fast loop]), with the
# same dependency counts published for ``will_engine_execute_node`` and the same gradient
# checks, without the dependency walk, the heap or input buffers. Anything else (hooks on the
# node or a leaf, a leaf reached twice, a non-leaf successor, anomaly mode, the profiler)
# takes the general path.
#
# A node class may run itself and its leaves its own way: ``_RUN_ALONE[cls]`` then replaces
# ``_run_node_and_leaves`` for its nodes, with the same signature and contract (the same
# results, counts published in ``task.nodes`` for the nodes that exist, False having done
# nothing when the graph is not of this shape). jit/executor.py registers the compiled node,
# whose leaves may have no AccumulateGrad yet (Note [Leaf accumulators made on demand]).
_RUN_ALONE: dict = {}


def _count_error(node: Any, expected: int, got: int) -> RuntimeError:
    """PyTorch's error for a backward function returning the wrong number of gradients."""
    return RuntimeError(f"Function {node.name()} returned an invalid number of gradients - "
                        f"expected {expected}, but got {got}")


def _run_node_and_leaves(node: Any, nr: int, seed: Any, keep_graph: Any, task: Any) -> bool:
    deps = {node: 0}
    n = 0
    for nxt, _ in node.next_functions:
        if nxt is not None:
            if nxt.__class__ is not AccumulateGrad or nxt._has_hooks or nxt in deps:
                return False
            deps[nxt] = 0
            n += 1
    task.nodes = deps                       # Note [Graph tasks]
    if node._num_inputs == 1:
        inputs = [seed]
    else:
        inputs = [None] * node._num_inputs
        inputs[nr] = seed
    seed = None
    outputs = node.apply(inputs)
    if not keep_graph and node._saved:
        node.release_variables()
    del inputs          # Drop our references so AccumulateGrad can steal gradients.
    if not outputs:
        return True
    edges = node.next_functions
    if len(outputs) != len(edges):
        raise _count_error(node, len(edges), len(outputs))
    meta = node._input_meta
    leaves = []
    i = -1
    for (nxt, _), g in zip(edges, outputs):
        i += 1
        if nxt is None:
            continue
        if g is not None:
            if g.__class__ is Tensor and meta and meta[i] is not None:
                m = meta[i]
                data = g._data
                dt = data.dtype
                if data.shape != m[0] or (dt is not m[1] and dt != m[1]):
                    g = _fix_gradient(node, i, g, m)
            else:
                g = _check_gradient(node, i, g, meta)
        leaves.append((nxt, [g]))
    outputs = g = data = None
    for acc, buf in leaves:
        acc.apply(buf)
    return True


# Per thread: ``tasks``, the graph tasks running (Note [Graph tasks]); the innermost one's
# ``checkpoint_valid`` says whether the backward may use reentrant checkpointing: only a plain
# ``backward()`` (no ``inputs``), which accumulates into every leaf (utils/checkpoint.py).
_local = threading.local()


def is_checkpoint_valid() -> bool:
    """False inside a backward pass that reentrant checkpointing cannot serve (``grad`` or
    ``backward(inputs=...)``)."""
    tasks = getattr(_local, "tasks", None)
    return tasks[-1].checkpoint_valid if tasks else True


# Note [Graph tasks]
# Each ``run_backward`` call is one graph task (PyTorch's GraphTask): the innermost one running
# in this thread is ``_local.tasks[-1]`` (a hook or a custom backward may start another one,
# reentrant, and threads run their own). Hooks that must know about the whole backward pass,
# like ``register_multi_grad_hook`` (autograd/graph.py), key their state by the task's id and
# ask ``will_engine_execute_node`` which nodes this pass runs.
_task_ids = itertools.count(1)


class _GraphTask:
    # run_backward and run_backward_scalar build it without this __init__: keep them in step
    __slots__ = ("id", "accumulate_grad", "keep_graph", "nodes", "needed", "captures",
                 "checkpoint_valid")

    def __init__(self, accumulate_grad: bool, keep_graph: bool = True) -> None:
        self.id = next(_task_ids)
        self.accumulate_grad = accumulate_grad
        self.keep_graph = keep_graph
        self.checkpoint_valid = accumulate_grad     # ``is_checkpoint_valid``
        self.nodes = self.needed = self.captures = None   # set by _execute


_next_task_id = _task_ids.__next__
_new = object.__new__
_grad_state = grad_mode._state


def current_graph_task_keeps_graph() -> bool:
    """False inside a backward pass that releases the saved values of the nodes it runs
    (``retain_graph=False``); True outside backward."""
    tasks = getattr(_local, "tasks", None)
    return tasks[-1].keep_graph if tasks else True


def current_graph_task_id() -> int:
    """The id of the backward pass running in this thread, or -1 outside backward."""
    tasks = getattr(_local, "tasks", None)
    return tasks[-1].id if tasks else -1


def will_engine_execute_node(node: Any) -> bool:
    """Whether the backward pass running in this thread runs ``node`` (reachable from the roots
    and, with ``inputs``, on a path to them), as PyTorch's ``_will_engine_execute_node``."""
    tasks = getattr(_local, "tasks", None)
    if not tasks:
        raise RuntimeError("_will_engine_execute_node should only be called during the backward "
                           "pass")
    task = tasks[-1]
    if task.nodes is None or node not in task.nodes:
        return False
    if task.needed is None or node in task.needed:
        return True
    if task.captures is not None and node in task.captures:
        if type(node) is AccumulateGrad:
            raise RuntimeError("A leaf node was passed to _will_engine_execute_node but we are "
                               "currently running autograd.grad(). This is currently not "
                               "supported.")
        return True
    return False


def _execute(root_edges, root_grads, keep_graph, input_edges, accumulate_grad, call=None,
             plan=None):
    # ``call`` replaces _call_function for the instrumented path; without ``inputs`` every node
    # is then "needed" (_EVERY_NODE) so that every node goes through ``call``.
    if plan:
        # The same graph again (run_backward's ``plan``): nodes never change their edges, so
        # the analysis holds; only the counts, consumed by the run, are copied.
        deps = dict(plan["deps"])
        needed, captures = plan["needed"], plan["captures"]
        counts = deps if plan["counts"] is None else dict(plan["counts"])
        captured = [None] * len(input_edges) if captures is not None else None
        general = False
        call = _call_function
        if needed is not None:
            grad_mode._state.receivers = counts       # Note [Pruned backward]
        task = _local.tasks[-1]
        task.nodes, task.needed, task.captures = deps, needed, captures
        return _run(root_edges, root_grads, keep_graph, deps, counts, needed, captures,
                    captured, general, call)
    if len(root_edges) == 1:
        if (call is None and plan is None and not accumulate_grad and input_edges is not None
                and len(input_edges) == 1):
            res = _run_chain(root_edges[0], root_grads[0], keep_graph, input_edges[0])
            if res is not _NOT_A_CHAIN:
                return res
        roots = [root_edges[0][0]]
    else:
        roots = [e[0] for e in root_edges]
    deps, parents = _dependencies(roots, input_edges is not None)
    for node in roots:
        deps[node] = deps.get(node, 0) + 1

    needed = captures = captured = None
    general = call is not None          # instrumented: every node goes through ``call``
    if call is None:
        call = _call_function
    elif input_edges is None:
        needed = _EVERY_NODE
    counts = deps
    if input_edges is not None:
        if len(input_edges) == 1:           # ``grad(loss, x)``: no loops
            node, nr = input_edges[0]
            targets = {node} if node is not None else set()
            needed = _ancestors(targets, parents)
            if accumulate_grad:
                needed |= targets
            else:
                captures = {node: [(nr, 0)]} if node is not None else {}
                captured = [None]
            node = None
        else:
            targets = set()
            for e in input_edges:      # a loop: a comprehension is a frame of its own
                if e[0] is not None:
                    targets.add(e[0])
            needed = _ancestors(targets, parents)
            if accumulate_grad:
                needed |= targets
            else:
                captures = {}
                for i, (node, nr) in enumerate(input_edges):
                    if node is not None:
                        captures.setdefault(node, []).append((nr, i))
                captured = [None] * len(input_edges)
        # Note [Engine fast loop]: only edges into these nodes carry gradients; one lookup in
        # ``counts`` per edge replaces the membership tests.
        counts = {}
        if captures is None:
            for n, c in deps.items():
                if n in needed:
                    counts[n] = c
        else:
            for n, c in deps.items():
                if n in needed or n in captures:
                    counts[n] = c
        grad_mode._state.receivers = counts       # Note [Pruned backward]
    task = _local.tasks[-1]                         # Note [Graph tasks]
    task.nodes, task.needed, task.captures = deps, needed, captures
    if plan is not None and not general:
        # counts None: the run counts in ``deps`` itself (no inputs= restriction)
        plan.update(deps=dict(deps), needed=needed, captures=captures,
                    counts=None if counts is deps else dict(counts))
    return _run(root_edges, root_grads, keep_graph, deps, counts, needed, captures, captured,
                general, call)


# Note [Chain to one leaf]
# ``grad(loss, x)`` for a leaf ``x`` (a gradient penalty's inner gradient, create_graph or not)
# often walks a chain: from the loss, each node has at most one edge to another op node, and
# its other edges end at leaves. Then the general analysis (dependency counts with parents, the
# ancestors of ``x``, the counts of the nodes that get gradients) and the scheduling loop (heap,
# buffers, membership tests per node) are the chain itself: ``_run_chain`` walks it once, the
# nodes up to the last one with an edge to ``x``'s accumulator are the ones needed (published
# as the receivers of Note [Pruned backward] and in the graph task, as ``_execute`` does), and
# runs them in order, handing each one's gradient to the next, summing ``x``'s gradients as
# its input buffer would (``_sum_grads``, in edge order) and capturing the sum once every edge
# to ``x`` has delivered (none if a node returned nothing). Same validation of every gradient
# against its input's metadata, same release of saved values. Anything else takes the general
# path: several roots or inputs, ``x`` not a leaf, an accumulator or a node with hooks (tensor
# hooks, retain_grad, pre or post hooks), a node that is not a built-in op's (custom
# Functions, compiled nodes), a node reached twice, two op edges, ``x`` not reached,
# accumulation (``backward(inputs=...)``), a Jacobian's plan, anomaly mode or the profiler.
_NOT_A_CHAIN = object()


def _run_chain(root_edge, seed, keep_graph, input_edge):
    target, tnr = input_edge
    node, nr = root_edge
    if (target is None or target.__class__ is not AccumulateGrad or target._has_hooks
            or target.variable._hooks):
        return _NOT_A_CHAIN
    chain = []
    deps = {node: 1}
    get = deps.get
    last = -1               # index in ``chain`` of the last node with an edge to ``target``
    tcount = 0
    acc_cls = AccumulateGrad
    while True:
        if node._has_hooks or not isinstance(node, OpNode):
            return _NOT_A_CHAIN
        chain.append((node, nr))
        nxt = None
        for e, enr in node.next_functions:
            if e is None:
                continue
            c = get(e)
            deps[e] = 1 if c is None else c + 1
            if e is target:
                last = len(chain) - 1
                tcount += 1
            elif e.__class__ is not acc_cls:
                if nxt is not None or c is not None:
                    return _NOT_A_CHAIN          # two op edges, or a node reached twice
                nxt, nnr = e, enr
        if nxt is None:
            break
        node, nr = nxt, nnr
    if last < 0:
        return _NOT_A_CHAIN
    counts: dict = {}
    for k in range(last + 1):
        counts[chain[k][0]] = 1
    counts[target] = tcount
    _grad_state.receivers = counts                  # Note [Pruned backward]
    task = _local.tasks[-1]                         # Note [Graph tasks]
    needed = set(counts)
    needed.discard(target)
    task.nodes, task.needed, task.captures = deps, needed, {target: [(tnr, 0)]}
    tbuf = [None] * target._num_inputs
    _Tensor = Tensor
    g = seed
    for k in range(last + 1):
        node, nr = chain[k]
        n = node._num_inputs
        if n == 1:
            inputs = [g]
        else:
            inputs = [None] * n
            inputs[nr] = g
        g = None
        outputs = node.apply(inputs)
        if not keep_graph and node._saved:
            node.release_variables()
        inputs = None
        if not outputs:
            return [None]       # the rest never becomes ready: nothing captured
        edges = node.next_functions
        if len(outputs) != len(edges):
            raise _count_error(node, len(edges), len(outputs))
        meta = node._input_meta
        follow = chain[k + 1][0] if k < last else None
        i = -1
        for (e, enr), og in zip(edges, outputs):
            i += 1
            if e is None or (e is not target and e is not follow):
                continue                    # a leaf no input needs
            if og is not None:
                if og.__class__ is _Tensor:
                    if meta:
                        m = meta[i]
                        if m is not None:
                            data = og._data
                            dt = data.dtype
                            if data.shape != m[0] or (dt is not m[1] and dt != m[1]):
                                og = _fix_gradient(node, i, og, m)
                else:
                    og = _check_gradient(node, i, og, meta)
            if e is target:
                tcount -= 1
                if og is not None:
                    old = tbuf[enr]
                    tbuf[enr] = og if old is None else _sum_grads(old, og)
                    old = None
            else:
                g = og
        outputs = og = data = None
    if tcount:
        return [None]
    return [tbuf[tnr]]


def _run(root_edges, root_grads, keep_graph, deps, counts, needed, captures, captured, general,
         call):
    buffers: dict = {}
    ready: list = []
    tie = 0
    for (node, nr), g in zip(root_edges, root_grads):
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * node._num_inputs
        if g is not None:
            old = buf[nr]
            buf[nr] = g if old is None else old + g
        # A root that no input needs keeps its count in ``deps`` only (it runs its tensor
        # hooks and is skipped, below).
        cnt = counts if node in counts else deps
        d = cnt[node] - 1
        cnt[node] = d
        if d == 0:
            tie += 1
            heapq.heappush(ready, (-node._sequence_nr, tie, node, buffers.pop(node)))
    g = old = buf = None
    # Note [Engine fast loop]: ``direct`` holds the only ready node (the usual single root).
    direct = None
    if len(ready) == 1:
        _, _, node, buf = ready.pop()
        direct = (node, buf)
        node = buf = None

    heappop, heappush = heapq.heappop, heapq.heappush
    get = counts.get
    _Tensor = Tensor
    _AccumulateGrad = AccumulateGrad
    # Note [Engine fast loop]
    # ``direct`` holds the only ready node and its input buffer when the heap is empty, so a
    # chain never touches the heap. A node whose gradients all arrive at once (count 1, the
    # usual case) gets its input list built right there and never enters ``buffers``. A leaf's
    # AccumulateGrad without hooks that becomes ready runs as soon as the node that fed it has
    # handed on all its outputs (``leaves``), not through the heap: the heap would run it next
    # anyway (AccumulateGrad has the highest priority, so none waits in the heap while another
    # node runs; several ready ones run in the order they became ready, the heap's tie order),
    # and an MLP's backward then runs as a chain (``direct``) with no heap at all.
    # Leaves (AccumulateGrad without hooks) that became ready while a node's outputs were
    # handed on: run right after that, in order, without the heap (Note [Engine fast loop]).
    leaves = []
    fast_leaves = needed is None and not general
    while ready or direct is not None:
        if direct is not None:
            node, inputs = direct
            direct = None
        else:
            _, _, node, inputs = heappop(ready)
        if needed is not None and ((captures is not None and node in captures)
                                   or node not in needed):
            # Tensor hooks run once, before captures and whether or not the node runs.
            inputs = _call_tensor_pre_hooks(node, inputs)
            if captures is not None:
                caps = captures.get(node)
                if caps is not None:
                    for nr, i in caps:
                        captured[i] = inputs[nr]
            if node not in needed:
                continue
            outputs = call(node, inputs, keep_graph, False)
        elif general or node._has_hooks:
            outputs = call(node, inputs, keep_graph, True)
        else:
            # Fast path: no hooks of any kind on this node.
            outputs = node.apply(inputs)
            if not keep_graph and node._saved:
                node.release_variables()
        inputs = None
        if not outputs:
            continue
        edges = node.next_functions
        if len(outputs) != len(edges):
            raise _count_error(node, len(edges), len(outputs))
        meta = node._input_meta
        i = -1
        flushed = False
        for (nxt, nr), g in zip(edges, outputs):
            i += 1
            if nxt is None:
                continue
            d = get(nxt)
            if d is None:           # not on a path to ``inputs``
                continue
            if g is not None:
                # Validate against the forward input's metadata: undo broadcasting, cast dtype.
                if g.__class__ is _Tensor:
                    if meta:
                        m = meta[i]
                        if m is not None:
                            data = g._data
                            dt = data.dtype
                            if data.shape != m[0] or (dt is not m[1] and dt != m[1]):
                                g = _fix_gradient(node, i, g, m)
                else:
                    g = _check_gradient(node, i, g, meta)
            d -= 1
            counts[nxt] = d
            if d == 0:
                buf = buffers.pop(nxt, None) if buffers else None
                if buf is None:
                    n = nxt._num_inputs
                    if n == 1:
                        buf = [g]
                    else:
                        buf = [None] * n
                        buf[nr] = g
                elif g is not None:
                    old = buf[nr]
                    buf[nr] = g if old is None else _sum_grads(old, g)
                if fast_leaves and nxt.__class__ is _AccumulateGrad:
                    if not nxt._has_hooks and not flushed:
                        leaves.append((nxt, buf))
                        continue
                    # one with hooks goes through the heap: the ones before it (and after
                    # it, ``flushed``) too, so that all run in the order they became ready
                    flushed = True
                    for acc, lbuf in leaves:
                        tie += 1
                        heappush(ready, (-acc._sequence_nr, tie, acc, lbuf))
                    leaves.clear()
                    lbuf = None
                if direct is None and not ready:
                    direct = (nxt, buf)
                else:
                    if direct is not None:
                        tie += 1
                        heappush(ready, (-direct[0]._sequence_nr, tie) + direct)
                        direct = None
                    tie += 1
                    heappush(ready, (-nxt._sequence_nr, tie, nxt, buf))
            else:
                buf = buffers.get(nxt)
                if buf is None:
                    buf = buffers[nxt] = [None] * nxt._num_inputs
                if g is not None:
                    old = buf[nr]
                    buf[nr] = g if old is None else _sum_grads(old, g)
        # Drop our references so AccumulateGrad can steal gradients (see accumulate_grad.py).
        outputs = g = old = buf = data = dt = None
        if leaves:
            for acc, lbuf in leaves:
                acc.apply(lbuf)
            leaves.clear()
            lbuf = None
    return captured


# Note [Buffer sums in place]
# Two gradients that meet in a node's input buffer are summed, ``old + g``: a new array and a
# dispatched add. When grad mode is off (no create_graph) and nothing but the buffer holds
# ``old`` and its memory, the sum goes into ``old``'s array instead (same operands, same
# order, same bits): a gradient penalty's two gradients of ``W`` (``x @ W`` and the inner
# gradient's ``W.t()``) are added into the first one. "Nothing else holds it" is
# AccumulateGrad's sole-reference test (Note [AccumulateGrad: steal, clone or add]) on the
# Tensor (the buffer's slot, the caller's name, the parameter and getrefcount's argument), on
# its array, and on the array's base when it is a view covering all of a base nobody else
# holds (a transposed product handed on by ``t()``'s backward); the Tensor is no tracked view,
# has no forward-AD tangent and no batch level. Anything else (a hook or a retained gradient
# holding it, a pass-through of one Tensor to two edges, a read-only broadcast view, sparse or
# subclass gradients) gets ``old + g``, and so does every sum while something must see it as
# an op: the jit's tracer (which records the add into its graph; ops/_dispatch.py's
# ``set_tracing`` tells this module), the profiler, a functional transform.
_getrefcount = sys.getrefcount
_ndarray = np.ndarray
_np_add = np.add
_OLD_REFS = 4 if SOLE_REFERENCE_TESTS else -8
_ARRAY_REFS = 3 if SOLE_REFERENCE_TESTS else -8
_TRACING = False                # set by ops/_dispatch.py's set_tracing


def set_tracing(active: bool) -> None:
    """Whether the jit's tracer records ops now (Note [Buffer sums in place])."""
    global _TRACING
    _TRACING = active


def _sum_grads(old: Any, g: Any) -> Any:
    """``old + g`` for two gradients meeting in an input buffer, in place when only the buffer
    holds ``old`` (Note [Buffer sums in place])."""
    if (old.__class__ is Tensor and g.__class__ is Tensor and not grad_mode._state.enabled
            and not _TRACING and not profiler._ACTIVE and not _tensor_mod._TRANSFORM
            and _getrefcount(old) <= _OLD_REFS and old._base is None and not old._blevel
            and not g._blevel and not old._fw_grads and not g._fw_grads):
        d = old._data
        e = g._data
        if (d.__class__ is _ndarray and e.__class__ is _ndarray and d.dtype is e.dtype
                and d.shape == e.shape and d.flags.writeable
                and _getrefcount(d) <= _ARRAY_REFS):
            b = d.base
            if b is None or ((b.__class__ is _ndarray and b.base is None and b.nbytes == d.nbytes
                              or b.__class__ is AlignedBlock)   # Note [Aligned arrays]
                             and _getrefcount(b) <= _ARRAY_REFS):
                _np_add(d, e, out=d)
                return old
    return old + g


def _check_gradient(node, i: int, g, meta: tuple):
    """Gradient ``g`` for input ``i`` of ``node`` that is not a plain Tensor (a sparse one, a
    Tensor subclass, something else) checked against the input's metadata."""
    if g.__class__ is Tensor:
        m = meta[i] if meta else None
        return g if m is None else _fix_gradient(node, i, g, m) if (
            g._data.shape != m[0] or g._data.dtype != m[1]) else g
    if g.__class__ is SparseTensor:     # checked without densifying
        m = meta[i] if meta else None
        return _fix_sparse_gradient(node, i, g, m) if m is not None else g
    if g.__class__ is CompressedTensor:     # likewise (CSR/CSC)
        m = meta[i] if meta else None
        if i in getattr(node, "_strided_inputs", ()):    # a custom Function's strided input
            raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index "
                               f"{i} - expected layout Strided but got "
                               f"{'SparseCsr' if g.layout is _csr_layout else 'SparseCsc'}")
        if m is not None and g._cs_shape != tuple(m[0]):
            raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index "
                               f"{i} - got {list(g._cs_shape)} but expected shape compatible "
                               f"with {list(m[0])}")
        return g.to(_tensor_mod._dtype._FROM_NP[m[1]]) if m is not None and \
            g._cs_values.dtype != m[1] else g
    try:
        data = g._data
    except AttributeError:
        raise TypeError(f"Function {node.name()} returned a non-Tensor "
                        f"gradient at index {i}: {type(g).__name__}") from None
    m = meta[i] if meta else None
    if m is not None and (data.shape != m[0] or data.dtype != m[1]):
        g = _fix_gradient(node, i, g, m)
    return g


def _dependencies(roots, want_parents: bool):
    """Count, for every node reachable from ``roots``, the edges that point at it."""
    deps: dict = {}
    if not want_parents and len(roots) == 1:
        # the usual case (one root, no ``inputs``): no root set, no parents
        # (a leaf's AccumulateGrad, which has no edges, is counted but never walked)
        root = roots[0]
        stack = [root]
        get = deps.get
        push = stack.append
        acc_cls = AccumulateGrad
        while stack:
            for nxt, _ in stack.pop().next_functions:
                if nxt is None:
                    continue
                c = get(nxt)
                if c is None:
                    deps[nxt] = 1
                    if nxt.__class__ is not acc_cls and nxt is not root:
                        push(nxt)
                else:
                    deps[nxt] = c + 1
        return deps, None
    root_set = set(roots)
    stack = list(root_set)
    get = deps.get
    push = stack.append
    acc_cls = AccumulateGrad
    if not want_parents:
        while stack:
            fn = stack.pop()
            for nxt, _ in fn.next_functions:
                if nxt is None:
                    continue
                c = get(nxt)
                if c is None:
                    deps[nxt] = 1
                    # roots are already on the stack; AccumulateGrad has no edges
                    if nxt not in root_set and nxt.__class__ is not acc_cls:
                        push(nxt)
                else:
                    deps[nxt] = c + 1
        return deps, None
    parents: dict = {}
    while stack:
        fn = stack.pop()
        for nxt, _ in fn.next_functions:
            if nxt is None:
                continue
            c = get(nxt)
            if c is None:
                deps[nxt] = 1
                parents[nxt] = [fn]
                if nxt not in root_set and nxt.__class__ is not acc_cls:
                    push(nxt)
            else:
                deps[nxt] = c + 1
                parents[nxt].append(fn)
    return deps, parents


def _ancestors(targets: set, parents: dict) -> set:
    found: set = set()
    stack = list(targets)
    while stack:
        node = stack.pop()
        for p in parents.get(node, ()):
            if p not in found:
                found.add(p)
                stack.append(p)
    return found


def _hook_name(hook: Any) -> str:
    return getattr(hook, "__name__", type(hook).__name__)


def _check_hook_result(name: str, old: Any, new: Any) -> Any:
    """A hook's replacement gradient must be a tensor of the same size and dtype."""
    if new is None:
        return old
    if not isinstance(new, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(new).__name__}'")
    if old is None:
        return new
    if new._data.dtype != old._data.dtype:
        raise RuntimeError(
            f"hook '{name}' has changed the type of value (was {_type_name(old)} got "
            f"{_type_name(new)})")
    if new._data.shape != old._data.shape:
        raise RuntimeError(f"hook '{name}' has changed the size of value")
    return new


def _type_name(t: Any) -> str:
    return f"torch.{t.dtype._torch_name}Tensor"


def _check_hook_results(hook: Any, old: Sequence[Any], new: Any) -> list:
    if not isinstance(new, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(new).__name__}'")
    new = list(new)
    if len(new) != len(old):
        raise RuntimeError(
            f"hook '{_hook_name(hook)}' has returned an incorrect number of values (got "
            f"{len(new)}, but expected {len(old)})")
    return [_check_hook_result(_hook_name(hook), o, n) if n is not None else None
            for o, n in zip(old, new)]


def _call_tensor_pre_hooks(node, inputs: list) -> list:
    if type(node) is AccumulateGrad:
        hooks = node.variable._hooks
        if hooks and inputs[0] is not None:
            g = inputs[0]
            for hook in tuple(hooks.values()):
                g = _check_hook_result(_hook_name(hook), g, hook(g))
            inputs[0] = g
        return inputs
    th = node._tensor_pre_hooks
    if th:
        for nr, hooks in th.items():
            g = inputs[nr]
            if g is None:
                continue
            for hook in tuple(hooks.values()):
                g = _check_hook_result(_hook_name(hook), g, hook(g))
            inputs[nr] = g
    rh = node._retains_grad_hooks
    if rh:
        for nr, hook in tuple(rh.items()):
            if inputs[nr] is not None:
                hook(inputs[nr])
    return inputs


def _call_function(node, inputs: list, keep_graph: bool, run_tensor_hooks: bool,
                   apply: Any = None) -> tuple:
    if run_tensor_hooks and (node._tensor_pre_hooks or node._retains_grad_hooks
                             or type(node) is AccumulateGrad):
        inputs = _call_tensor_pre_hooks(node, inputs)
    pre = node._pre_hooks
    if pre:
        for hook in tuple(pre.values()):
            res = hook(tuple(inputs))
            if res is not None:
                inputs = _check_hook_results(hook, inputs, res)
    post = node._post_hooks
    if post:
        grad_outputs = tuple(inputs)
    outputs = node.apply(inputs) if apply is None else apply(node, inputs)
    if not keep_graph:
        node.release_variables()
    if post:
        for hook in tuple(post.values()):
            res = hook(tuple(outputs), grad_outputs)
            if res is not None:
                outputs = tuple(_check_hook_results(hook, outputs, res))
    return outputs


class _EveryNode:
    """A ``needed`` set that contains every node (the instrumented path runs them all)."""

    def __contains__(self, node: Any) -> bool:
        return True


_EVERY_NODE = _EveryNode()


class _Instrumented:
    """Runs nodes for the instrumented path: anomaly checks (Note [Anomaly mode]) and profiler
    ranges (Note [Profiler]). ``node`` is the last node run, to blame when an error escapes."""

    def __init__(self) -> None:
        self.anomaly = anomaly_mode._enabled
        self.check_nan = self.anomaly and anomaly_mode._check_nan
        self.prof = profiler.current()
        self.node = None

    def __call__(self, node, inputs: list, keep_graph: bool, run_tensor_hooks: bool) -> tuple:
        self.node = node
        tls = anomaly_mode._tls
        prev = tls.node
        tls.node = node           # nodes created now have ``node`` as parent
        try:
            prof = self.prof
            if prof is None:
                outputs = _call_function(node, inputs, keep_graph, run_tensor_hooks)
            else:
                with profiler._Range(prof, "autograd::engine::evaluate_function: " + node.name()):
                    outputs = _call_function(node, inputs, keep_graph, run_tensor_hooks,
                                             self._profiled_apply)
        finally:
            tls.node = prev
        if self.check_nan and outputs:
            anomaly_mode.check_outputs_for_nan(node, outputs)
        return outputs

    def _profiled_apply(self, node, inputs: list) -> tuple:
        shapes = None
        assert self.prof is not None        # used only while a profiler records
        if self.prof.record_shapes:
            shapes = [list(g._data.shape) if g is not None else [] for g in inputs]
        with profiler._Range(self.prof, node.name(), shapes):
            return node.apply(inputs)


def _execute_instrumented(root_edges, root_grads, keep_graph, input_edges, accumulate_grad):
    inst = _Instrumented()
    try:
        return _execute(root_edges, root_grads, keep_graph, input_edges, accumulate_grad, inst)
    except Exception:
        if inst.anomaly and inst.node is not None:
            anomaly_mode.report(inst.node)
        raise


def _fix_gradient(node, i: int, g, meta: tuple):
    """Bring gradient ``g`` for input ``i`` to the input's shape (summing broadcast dimensions)
    and dtype, or raise PyTorch's invalid-gradient error."""
    shape, dtype = meta
    data = g._data
    gshape = data.shape
    if g._blevel and is_batched(g):
        gshape = gshape[1:]        # compare logical shapes (Note [Batched backward])
    if gshape != shape:
        if not _is_expandable_to(shape, gshape):
            raise RuntimeError(
                f"Function {node.name()} returned an invalid gradient at index {i} - got "
                f"{list(gshape)} but expected shape compatible with {list(shape)}")
        g = g._sum_to_checked(shape)
    if g._data.dtype != dtype:
        if g._data.dtype.kind == "c" and dtype.kind != "c":
            g = g.real_part()          # a real input's gradient is the real part
        if g._data.dtype != dtype:
            g = g.to(_tensor_mod._dtype._FROM_NP[dtype])
    return g


def _fix_sparse_gradient(node, i: int, g, meta: tuple):
    """A sparse gradient must have the input's exact shape; its values take the dtype."""
    shape, dtype = meta
    if tuple(g._sp_shape) != tuple(shape):
        raise RuntimeError(
            f"Function {node.name()} returned an invalid gradient at index {i} - got "
            f"{list(g._sp_shape)} but expected shape compatible with {list(shape)}")
    if g._sp_values.dtype != dtype:
        g = g.to(_tensor_mod._dtype._FROM_NP[dtype])
    return g


def _is_expandable_to(shape: tuple, desired: tuple) -> bool:
    if len(shape) > len(desired):
        return False
    for s, d in zip(reversed(shape), reversed(desired)):
        if s != d and s != 1:
            return False
    return True
