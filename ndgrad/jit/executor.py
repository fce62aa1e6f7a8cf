"""Running a compiled specialization: one lean ``DifferentiableGraphBackward`` node per call.

Note [Compiled call protocol]
A ``Plan`` is one specialization of a traced function: ``f`` (the forward, on raw ndarrays,
returning the real outputs then the temporaries that backward needs), ``df`` (the backward on
raw ndarrays, one compiled variant per pattern of undefined incoming gradients) and, for
``create_graph=True`` and batched gradients, ``df_graph`` run op by op with ndgrad ops (so the
backward records a graph of its own and can be differentiated again), plus the ``Gradient``
index lists (seed 004). A call (``Plan.__call__``):

* runs ``f`` on the inputs' arrays (no dispatcher, no per-op nodes);
* when gradients are recorded (grad mode on, some input in ``df_output_vjps`` requires grad),
  makes ONE node: edges for the inputs in ``df_output_vjps`` (``next_functions``), the real
  outputs listed in ``df_input_vjps`` get it as ``grad_fn`` with ``output_nr`` = their position
  there (floating/complex outputs only), the captured inputs and outputs become ``SavedTensor``s
  (version checks, saved-tensor hooks, freeing after backward and the second-backward error as
  in eager), the temporaries that are not captured are dropped;
* under ``no_grad``/``inference_mode`` (or when no input requires grad) only ``f``'s forward-only
  variant runs and nothing is saved.

Captures: with no saved-tensor hook active (the usual case) the node keeps them as one
``_Captures``: the arrays df reads, plus (tensor, version) pairs for the values a user can
modify in place (the captured inputs, and detached aliases of captured real outputs sharing
their version counters); a temporary only the node sees is a bare array. Unpacking checks the
versions and raises eager's message through a ``SavedTensor`` built for the error only. With
hooks active every capture is a ``SavedTensor`` (packed by the hooks), as in eager.

The node's ``apply`` unpacks the captures (version-checked) and runs ``df`` on
``[vjps][captures]``; an undefined gradient of an input stays ``None`` (the engine's zero: an
input reached only through outputs that got no gradient keeps ``.grad`` None, as in eager).
Everything else (tensor hooks on outputs, ``retain_grad``, node pre/post hooks, anomaly mode,
the profiler, ``retain_graph``) is the engine's own handling of any node.

Note [A failed compiled backward]
An eager node whose backward raises keeps its saved values (the engine releases them only
after a node ran), so a retry raises the same error again. A compiled df that owns its
captures (Note [Arguments owned by the backward]) has freed them when it raises; the node then
keeps the failure (``_Failed``: the error's type and arguments, not the error, whose traceback
holds df's frame) and a retry raises a new error of that type and arguments, as eager's retry
would. An interruption (KeyboardInterrupt and other non-``Exception`` errors), which eager could
retry successfully, gives the second-backward error on a retry: the values are gone.

Note [A compiled node accumulates its leaves]
``loss.backward()`` of a compiled loss runs one node feeding only leaves: the engine's lean entry
(Note [Lean backward entry] in autograd/engine.py) hands such a node to ``_run_alone`` (this
module registers it in the engine's ``_RUN_ALONE``), which checks what the engine's own
``_run_node_and_leaves`` checks (every successor an AccumulateGrad without hooks, each once, or
a leaf whose accumulator is not made yet, Note [Leaf accumulators made on demand]), publishes
the same counts of 0, runs df on the seed and then does the leaves' part itself
(``_to_leaves``): the innermost graph task accumulates into every leaf (``accumulate_grad``, no
``needed`` set) and publishes a count of 0 for each of the node's AccumulateGrad successors (the
general loop still counts the node's own pending edge, so it is never 0 there: ``apply`` run by
the general loop returns its gradients to the engine), none of them has hooks, and the node has
none. Then, in edge order, a first gradient nobody else holds, of its input's shape and dtype
and row-major like its row-major leaf, becomes ``.grad`` under the AccumulateGrad's lock (its
steal; ``_PENDING_LOCK`` for a leaf without one); any other gradient goes through the engine's
checks and fixes (``_check_gradient``) to that AccumulateGrad's own ``apply``. Anything else
takes the engine's general path, as before.
Gradient identity follows eager's: an output of df that is an incoming gradient's array is
handed on as that gradient's Tensor (an eager node hands ``g`` on unchanged, and AccumulateGrad
copies it since the caller still holds it: ``(w + x).backward(g)`` must not make ``w.grad``
share ``g``'s memory), and one array returned for two inputs (``(a + b) * c``: both gradients
are ``g * c``) is one Tensor, which AccumulateGrad copies for the first (two leaves must not
share one ``.grad`` array). Saves ~0.5 µs per leaf (mlp_small: 6 leaves per step).

Runtime internals relied on (this list is the one place to update): ``Node`` attributes
``next_functions``, ``_num_inputs``, ``_sequence_nr``, ``_input_meta``, ``_saved`` (a tuple, or
``node.RELEASED`` after ``release_variables``; the engine calls ``release_variables`` when
``_saved`` is truthy and the graph is not retained), ``name()``; ``node.next_sequence_nr``,
``node.SECOND_BACKWARD_MSG``; ``_dispatch._edge`` (``gradient_edge`` without its call),
``accumulate_grad.grad_accumulator`` and ``_ACC_LOCK`` (held while it makes an accumulator);
the engine's ``_RUN_ALONE`` registry and its contract (Note [Lean backward entry]);
``SavedTensor(t, is_output, output_nr)``, ``._version`` and ``.unpack(node)``; the engine's
``_check_gradient`` and ``_local.tasks`` (its last ``_GraphTask``'s ``keep_graph``,
``accumulate_grad``, ``needed`` and ``nodes``, the latter with 0 for the leaves of the lean
entry);
``AccumulateGrad``'s ``variable``, ``_lock``, ``_has_hooks`` and ``apply``, a leaf's ``_grad``
and ``_post_acc_hooks``;
``saved._hooks_in_use`` and ``INFERENCE_SAVE_MSG``; ``anomaly_mode.record(node)``;
``profiler.current()`` and ``profiler._Range``; the Tensor fields ``_data``, ``_grad_fn``,
``_requires_grad``, ``_output_nr``, ``_inference``, ``_base``, ``_blevel``, ``_grad_acc`` (a
leaf's weak reference to its AccumulateGrad, called wherever it is read), ``_hooks``,
``_version_counter`` (and, in api.py, ``_fw_grads`` and ``copy_``); ``grad_mode._state``
(``enabled``, ``inference``); the dispatcher's module flags ``_ANOMALY``, ``_PROFILING``,
``_BATCHING``, ``_FW_AD`` and, for views of inputs replayed after a call, ``_dispatch.apply``.

Example:
    >>> import numpy as np, ndgrad
    >>> from ndgrad.jit.executor import Plan
    >>> # y = x * x by hand: f returns (y, x) isn't needed, x is a captured input
    >>> plan = Plan(f=lambda x: (x * x,), f_nograd=lambda x: (x * x,),
    ...             df=lambda g, x: (2 * g * x,), f_real_outputs=1, df_input_vjps=[0],
    ...             df_input_captured_inputs=[0], df_input_captured_outputs=[],
    ...             df_output_vjps=[0], input_meta=[((2,), np.dtype("float32"))],
    ...             output_dtypes=[np.dtype("float32")])
    >>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> (y,) = plan([x])
    >>> y.grad_fn.name()
    'DifferentiableGraphBackward'
    >>> y.sum().backward(); x.grad
    tensor([2., 4.])
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..autograd import profiler as _profiler
from ..autograd.anomaly_mode import record as _anomaly_record
from ..autograd.accumulate_grad import _ACC_LOCK, AccumulateGrad, grad_accumulator
from ..autograd.engine import _RUN_ALONE, _check_gradient
from ..autograd.engine import _local as _engine_local
from ..autograd.grad_mode import _state
from ..autograd.node import RELEASED, SECOND_BACKWARD_MSG, Node, next_sequence_nr
from ..autograd.saved import INFERENCE_SAVE_MSG, SavedTensor, _hooks_in_use
from ..ops import _dispatch
from ..ops._dispatch import _edge
from ..tensor import Tensor
from .blas_threads import run_single_threaded
from .codegen import GeneratedFunction

__all__ = ["DifferentiableGraphBackward", "Plan"]

_new = object.__new__
_ndarray = np.ndarray
_DIFF_KINDS = frozenset("fc")    # floating, complex: dtypes that can carry gradients
_NO_EDGE = (None, 0)


class DifferentiableGraphBackward(Node):
    """The backward of one call of a compiled function: runs the compiled ``df``.

    ``next_functions`` holds the edges of the inputs listed in ``df_output_vjps``; the node
    receives one gradient per entry of ``df_input_vjps``.
    """

    _plan: Any = None
    _saved: Any = ()      # a tuple of SavedTensor, a _Captures, RELEASED or a _Failed
    # the edges; a leaf whose AccumulateGrad is not made yet is (leaf, its _PendingAcc)
    # (Note [Leaf accumulators made on demand]); _pending counts those
    _edges: tuple = ()
    _pending = 0

    def _next_functions(self) -> tuple:
        if self._pending:
            self._make_all()
        return self._edges

    def _make_all(self) -> None:
        """Make the accumulators of every pending edge."""
        with _PENDING_LOCK:
            for k in range(len(self._edges)):
                if self._edges[k][1].__class__ is _PendingAcc:
                    self._make_acc(k)

    def _set_next_functions(self, edges: tuple) -> None:
        self._edges = tuple(edges)
        self._pending = 0

    # the edges, every pending one made first (Note [Leaf accumulators made on demand])
    next_functions = property(_next_functions, _set_next_functions)

    def _make_acc(self, k: int) -> AccumulateGrad:
        """Edge ``k``'s AccumulateGrad, made now if it is pending (under ``_PENDING_LOCK``)."""
        edges = self._edges
        t, p = edges[k]
        if p.__class__ is not _PendingAcc:
            return t
        ref = t._grad_acc
        acc = ref() if ref is not None and ref is not p and ref.__class__ is _WeakRef else None
        if acc is None:
            acc = AccumulateGrad(t)
            t._grad_acc = _WeakRef(acc)
        self._edges = edges[:k] + ((acc, 0),) + edges[k + 1:]
        self._pending -= 1
        return acc

    def apply(self, grads: list) -> tuple:
        saved = self._saved
        if saved.__class__ is not _Captures:
            if saved is RELEASED:
                raise RuntimeError(SECOND_BACKWARD_MSG)
            if saved.__class__ is _Failed:
                saved.reraise()
        plan = self._plan
        batched = False
        if len(grads) == 1:         # the usual single output (a loss): no per-list work
            g = grads[0]
            if g is None:
                args: list = [None]
                mask: tuple = _ONE_UNDEFINED
            elif g._blevel:
                args, mask, batched = [], (), True
            else:
                args, mask = [g._data], _ONE_DEFINED
            g = None
        else:
            args = [None if g is None else g._data for g in grads]
            mask = tuple([g is None for g in args])
            batched = _has_batched(grads)
        if _state.enabled or _dispatch._BATCHING or batched:
            # create_graph=True (or batched gradients): run df op by op with ndgrad ops, so the
            # backward is recorded and differentiable again (Note [Compiled call protocol]).
            if saved.__class__ is _Captures:
                caps = saved.tensors(self)
            else:
                caps = [s.unpack(self) for s in saved]
            return tuple(plan.run_df_tensors(list(grads), caps))
        tasks = _engine_local.__dict__.get("tasks")     # current_graph_task_keeps_graph()
        del saved       # (Note [Arguments owned by the backward]: df may own the captures)
        outs = self._run_df(plan, args, mask, not tasks or tasks[-1].keep_graph)
        del args
        if plan.df_through or plan.df_twins:
            outs = _pass_through(plan, outs, grads)
        if _dispatch._TRANSFORM:       # created inside a func transform call
            return tuple([None if o is None else o if o.__class__ is Tensor else _wrap_born(o)
                          for o in outs])
        if tasks and not self._has_hooks and self._to_leaves(outs, tasks[-1]):
            return ()
        res: list[Optional[Tensor]] = []
        for o in outs:
            if o is None or o.__class__ is Tensor:
                res.append(o)
            else:
                t = _new(Tensor)
                t._data = o if type(o) is _ndarray else np.asarray(o)
                res.append(t)
        return tuple(res)

    def _run_df(self, plan: "Plan", args: list, mask: tuple, keep_graph: bool) -> tuple:
        """df's variant for ``mask`` on ``args`` (the incoming gradients' arrays) and the
        version-checked captures (the caller holds no reference to them)."""
        df: Any = plan.df_variants.get(mask)
        if df is None:
            df = plan.df_for(mask)
        saved = self._saved
        if saved.__class__ is _Captures:
            args.extend(saved.arrays_checked(self))
        else:
            args.extend([s.unpack(self)._data for s in saved])
        # Note [Arguments owned by the backward]
        # Eager autograd frees an op's saved values once its node has run, so its backward's
        # peak memory shrinks as it goes; df is one node for the whole graph. When the engine
        # will release this node's saved values anyway (retain_graph=False), they are released
        # before df runs and df gets its inputs as a list it empties (``call_owned``): the
        # generated code then frees each capture after its last reader, as eager does. Should
        # df raise, the captures are gone: the node keeps the failure (``_Failed``) and a retry
        # raises the same error, as eager's retry of a failing node would (Note [A failed
        # compiled backward]).
        if not keep_graph and getattr(df, "owned", False):
            self._saved = RELEASED
            del saved
            try:
                if df.__class__ is GeneratedFunction and df.single_thread:
                    return run_single_threaded(df.fn, (args,))  # df.call_owned(args)
                return df.call_owned(args)
            except BaseException as e:
                self._saved = _Failed(e)
                raise
        return df(*args)

    def _to_leaves(self, outs: tuple, task: Any) -> bool:
        """Accumulate ``outs`` into the leaves this node feeds, as their AccumulateGrad nodes
        would right after it; False (nothing done) unless the engine runs this node alone with
        its leaves in graph task ``task`` (Note [A compiled node accumulates its leaves])."""
        nodes = task.nodes
        if not task.accumulate_grad or task.needed is not None or nodes is None:
            return False
        for acc, p in self._edges:
            if acc is not None and p.__class__ is not _PendingAcc and (
                    acc.__class__ is not AccumulateGrad or acc._has_hooks
                    or nodes.get(acc) != 0):
                return False
        lays = self._plan.grad_layouts
        k = -1
        for o in outs:
            k += 1
            acc, p = self._edges[k]
            if acc is None or o is None:
                continue
            if o.__class__ is _ndarray:
                lay = lays[k]
                dt = o.dtype
                if o.shape == lay[0] and (dt is lay[1] or dt == lay[1]):
                    var = acc.variable if p.__class__ is not _PendingAcc else acc
                    # AccumulateGrad's steal of a first gradient nobody else holds, when both
                    # are row-major of one shape (its layout test, Note [AccumulateGrad: steal,
                    # clone or add]); any other case is AccumulateGrad's own
                    if var._grad is None and var._grad_fn is None and var._requires_grad \
                            and not var._post_acc_hooks:
                        vd = var._data
                        cs = lay[2]
                        if o.strides == cs and vd.strides == cs and vd.shape == lay[0]:
                            # a pending leaf: no AccumulateGrad exists, whose lock the steal
                            # would take; _PENDING_LOCK keeps it from being made meanwhile
                            lock = _PENDING_LOCK if p.__class__ is _PendingAcc else acc._lock
                            lock.acquire()
                            try:
                                if var._grad is None and (lock is not _PENDING_LOCK or (
                                        self._edges[k][1] is p and not var._hooks)):
                                    t = _new(Tensor)
                                    t._data = o
                                    var._grad = t
                                    continue
                            finally:
                                lock.release()
                    if p.__class__ is _PendingAcc:
                        acc = self._acc_at(k)
                    acc.apply([_wrap_plain(o)])
                    continue
                g = _wrap_plain(o)
            elif o.__class__ is Tensor:       # an incoming gradient handed on (_pass_through)
                g = o
            else:
                g = _wrap_plain(np.asarray(o))
            # another shape or dtype: the engine's checks and fixes, then AccumulateGrad
            if p.__class__ is _PendingAcc:
                acc = self._acc_at(k)
            acc.apply([_check_gradient(self, k, g, self._input_meta)])
        return True

    def _steal_pending(self, outs: tuple, lays: tuple) -> int:
        """``_to_leaves`` when every edge is a pending leaf (the usual step): steal the
        gradients into ``.grad`` under one hold of ``_PENDING_LOCK``, in edge order, up to the
        first that is not a plain steal; returns its position (``len(outs)``: all done)."""
        _PENDING_LOCK.acquire()
        try:
            edges = self._edges
            k = 0
            for o in outs:
                t, p = edges[k]
                if p.__class__ is not _PendingAcc:
                    break                   # made meanwhile
                if o is not None:
                    if o.__class__ is not _ndarray:
                        break
                    lay = lays[k]
                    dt = o.dtype
                    cs = lay[2]
                    if t._grad is not None or o.shape != lay[0] or o.strides != cs or (
                            dt is not lay[1] and dt != lay[1]) or t._grad_fn is not None or \
                            not t._requires_grad or t._post_acc_hooks or t._hooks:
                        break
                    vd = t._data
                    if vd.strides != cs or vd.shape != lay[0]:
                        break
                    g = _new(Tensor)
                    g._data = o
                    t._grad = g
                k += 1
            return k
        finally:
            _PENDING_LOCK.release()

    def _acc_at(self, k: int) -> AccumulateGrad:
        with _PENDING_LOCK:
            return self._make_acc(k)

    def release_variables(self) -> None:
        if self._saved:
            self._saved = RELEASED


def _run_alone(node: DifferentiableGraphBackward, nr: int, seed: Tensor, keep_graph: Any,
               task: Any) -> bool:
    """The engine's lean entry for a compiled node (``engine._RUN_ALONE``, Note [Lean backward
    entry]): when the node feeds only leaves (AccumulateGrad nodes without hooks, or leaves
    whose accumulator is not made yet, each once), run df on ``seed`` and accumulate the
    gradients into the leaves; False, having done nothing, otherwise."""
    edges = node._edges
    pending = node._pending
    if pending:
        for t, p in edges:
            if p.__class__ is _PendingAcc and (t._hooks or t._post_acc_hooks):
                # hooks will run (or the general path): every leaf's accumulator exists then,
                # for will_engine_execute_node as for the engine's own lean run
                edges = node.next_functions
                pending = 0
                break
    deps: dict = {node: 0}
    if pending != len(edges):
        for acc, p in edges:
            if acc is not None and p.__class__ is not _PendingAcc:
                if acc.__class__ is not AccumulateGrad or acc._has_hooks or acc in deps:
                    return False
                deps[acc] = 0
    del edges
    saved = node._saved
    if saved.__class__ is not _Captures:
        if saved is RELEASED:
            raise RuntimeError(SECOND_BACKWARD_MSG)
        if saved.__class__ is _Failed:
            saved.reraise()
    if seed._blevel or _dispatch._BATCHING or _dispatch._TRANSFORM:
        return False
    del saved       # (Note [Arguments owned by the backward]: df may own the captures)
    task.nodes = deps                       # Note [Graph tasks] in autograd/engine.py
    plan = node._plan
    n = node._num_inputs
    args: list
    mask: Any
    if n == 1:
        args = [seed._data]
        mask = _ONE_DEFINED
    else:
        args = [None] * n
        args[nr] = seed._data
        mask = plan.seed_masks.get(nr)
        if mask is None:
            mask = plan.seed_masks[nr] = tuple([j != nr for j in range(n)])
    outs: Any = node._run_df(plan, args, mask, keep_graph)
    del args
    if not keep_graph and node._saved:
        node._saved = RELEASED
    if plan.df_through or plan.df_twins:
        pairs = plan.twin_pairs
        one = pairs is None
        if not one:
            for j, k in pairs:
                o = outs[j]
                if o is not None and o is outs[k]:
                    one = True
                    break
            o = None
        if one:
            grads: list = [None] * n
            grads[nr] = seed
            outs = _pass_through(plan, outs, grads)
            del grads
    del seed
    if node._pending == len(outs):
        # every edge a pending leaf (the usual step): steals, up to the first that is not one
        k = node._steal_pending(outs, plan.grad_layouts)
        if k == len(outs):
            return True
        outs = (None,) * k + tuple(outs[k:])
    if node._to_leaves(outs, task):
        return True
    # refused (it cannot be, after the checks above, unless its rules change): the engine's
    # own checks and accumulation, in edge order
    edges = node.next_functions
    meta = node._input_meta
    leaves = []
    g: Any = None
    for i, ((acc, _), o) in enumerate(zip(edges, outs)):
        if acc is not None and o is not None:
            g = o if o.__class__ is Tensor else _wrap_plain(
                o if type(o) is _ndarray else np.asarray(o))
            leaves.append((acc, [_check_gradient(node, i, g, meta)]))
    outs = g = None
    for acc, buf in leaves:
        acc.apply(buf)
    return True


_RUN_ALONE[DifferentiableGraphBackward] = _run_alone


# Note [Leaf accumulators made on demand]
# A leaf references its AccumulateGrad weakly (``_grad_acc``) and the graph holds it, as
# PyTorch's leaf holds its accumulator: a training step's graph dies at the end of the step and
# with it the six accumulators of mlp_small's leaves, made again in the next step (~0.4 µs each,
# made and freed). Nothing but the graph can see a new accumulator until someone asks for it,
# so a compiled call of distinct tensors (the guard's fast path) gives a leaf without a live
# accumulator a *pending* edge: ``(leaf, _PendingAcc)`` in the node's ``_edges``, the leaf held
# as the accumulator would hold it. The leaf's ``_grad_acc`` is then the ``_PendingAcc``, which
# is called as the weak reference it stands for by everything that asks for the accumulator
# (``grad_accumulator``, ``register_hook``, ``autograd.grad``'s inputs, the dispatcher making
# another graph over the leaf): it makes the accumulator in the node's edge and returns it, so
# every graph over the leaf shares one accumulator while the node lives, as in PyTorch.
# ``next_functions`` (the engine's general path, a user) makes every pending one. The lean
# backward (``_run_alone``, registered in the engine's ``_RUN_ALONE``) steals a pending leaf's
# gradient into ``.grad`` as AccumulateGrad would, making nothing; any other case (an existing
# gradient, another layout, hooks) makes the accumulator and calls it.
# A plan keeps one ``_PendingAcc`` per edge and leaf (made once; the leaf keeps it between
# steps, so a step allocates none) and a weak reference to its last node (``_slot``), the only
# node of the plan that can have pending edges: a call that finds that node alive with pending
# edges makes them first. A ``_PendingAcc`` answers for its edge of the slot's node when that
# edge is its leaf's, else returns None (no node feeds the leaf: no accumulator). Locks: the
# edges are made pending under the accumulator module's ``_ACC_LOCK`` (no ``grad_accumulator``
# makes one meanwhile), pending edges are made real or stolen into under ``_PENDING_LOCK``
# (taken inside ``_ACC_LOCK``, never the other way).
_PENDING_LOCK = threading.Lock()
_WeakRef = weakref.ref


class _PendingAcc:
    """A leaf's ``_grad_acc`` while a compiled node feeds the leaf without its AccumulateGrad
    (Note [Leaf accumulators made on demand]): called as the weak reference it stands for, it
    makes the accumulator in the node and returns it, or returns None when no node of its
    plan feeds the leaf (the leaf has no accumulator)."""

    __slots__ = ("slot", "k", "leaf_id")

    def __init__(self, slot: list, k: int, leaf_id: int) -> None:
        self.slot = slot            # the plan's [weak reference to its last pending node]
        self.k = k                  # the edge it stands for
        self.leaf_id = leaf_id      # id() of the leaf it was made for (which holds it)

    def __call__(self) -> Optional[AccumulateGrad]:
        with _PENDING_LOCK:
            r = self.slot[0]
            node = r() if r is not None else None
            if node is None:
                return None
            acc, p = node._edges[self.k]
            if p is self:
                return node._make_acc(self.k)
            if acc.__class__ is AccumulateGrad and id(acc.variable) == self.leaf_id:
                return acc          # made already (the leaf's reference was set after)
            return None


class _Captures:
    """A node's captures when no saved-tensor hook was active at the call (``_saved``): the
    arrays df reads, in df's order, and the tensors whose version is checked at unpack (the
    captured inputs, and detached aliases of the captured real outputs sharing their version
    counters), without a ``SavedTensor`` per value. Temporaries only the node sees are kept as
    bare arrays (nothing else can modify them in place). Unpacking raises eager's error for a
    value modified in place since the call (Note [Compiled call protocol])."""

    __slots__ = ("arrays", "checks", "plan")

    def __init__(self, arrays: list, checks: list, plan: "Plan") -> None:
        self.arrays = arrays
        self.checks = checks        # (position in arrays, tensor, version at the call)
        self.plan = plan

    def arrays_checked(self, node: Node) -> list:
        for k, t, version in self.checks:
            vc = t._version_counter
            if vc is not None and vc[0] != version:
                self._raise_modified(node, k, t, version)
        return self.arrays

    def _raise_modified(self, node: Node, k: int, t: Tensor, version: int) -> None:
        nr = self.plan.cap_nr[k]
        s = SavedTensor(t, nr is not None, nr or 0)
        s._version = version
        s.unpack(node)         # raises eager's message (saved.py)
        raise AssertionError("unreachable: the version check failed above")

    def tensors(self, node: Node) -> list:
        """The captures as Tensors for df run with ndgrad ops: inputs as themselves, outputs
        that are the node's own as tensors carrying it as history when grad mode is on (double
        backward), as ``SavedTensor.unpack`` gives them."""
        self.arrays_checked(node)
        plan = self.plan
        by_pos = {k: t for k, t, _ in self.checks}
        enabled = _state.enabled
        out = []
        for k, a in enumerate(self.arrays):
            t = by_pos.get(k)
            if k < plan.n_cap_inputs:
                out.append(t)
                continue
            nr = plan.cap_nr[k]
            if nr is not None and enabled:
                h = _new(Tensor)
                h._data = a
                h._version_counter = t._version_counter if t is not None else [0]
                h._grad_fn = node
                h._requires_grad = True
                h._output_nr = nr
                out.append(h)
            elif t is not None:
                out.append(t)
            else:
                p = _new(Tensor)
                p._data = a
                out.append(p)
        return out


class _Failed(tuple):
    """``_saved`` of a node whose owned df raised after its captures were handed over (Note
    [A failed compiled backward]): falsy, so the engine does not release it. It keeps the
    error's type and arguments, not the error (whose traceback holds df's frame and so the
    captures)."""

    _kind: type
    _args: tuple

    def __new__(cls, exc: BaseException) -> "_Failed":
        self = super().__new__(cls)
        self._kind, self._args = type(exc), exc.args
        return self

    def reraise(self) -> None:
        kind = self._kind
        if not issubclass(kind, Exception):
            # interrupted (KeyboardInterrupt ...): the values are freed, as after a backward
            raise RuntimeError(SECOND_BACKWARD_MSG)
        try:
            err = kind(*self._args)
        except Exception:   # noqa: BLE001 - an exception type with another constructor
            err = RuntimeError(*self._args)
        raise err


_ONE_DEFINED = (False,)
_ONE_UNDEFINED = (True,)


def _pass_through(plan: "Plan", outs: tuple, grads: list) -> tuple:
    """df's outputs as an eager node would hand them on (Note [A compiled node accumulates
    its leaves]): one that is an incoming gradient's array becomes that gradient's Tensor
    (AccumulateGrad then copies it rather than steal it: the caller still holds it), and one
    array returned for several inputs becomes one Tensor shared by them (the first leaves copy
    it). ``plan.df_through`` (pairs) and ``plan.df_twins`` (groups) list the outputs and
    gradients of equal shape and dtype, the only ones that can be the same array."""
    res = None
    for k, j in plan.df_through:
        o = outs[k]
        g = grads[j]
        if o is not None and g is not None and g._data is o:
            if res is None:
                res = list(outs)
            res[k] = g
    for group in plan.df_twins:
        if len(group) == 2:
            j, k = group
            o = outs[k]
            if o is None or o is not outs[j]:
                continue
        first: dict = {}
        for k in group:
            o = outs[k]
            if o is None:
                continue
            j = first.setdefault(id(o), k)
            if j != k:
                if res is None:
                    res = list(outs)
                t = res[j]
                if t.__class__ is not Tensor:
                    t = res[j] = _wrap_plain(o if type(o) is _ndarray else np.asarray(o))
                res[k] = t
    return outs if res is None else tuple(res)


def _c_strides(shape: tuple, itemsize: int) -> tuple:
    out = []
    step = itemsize
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


def _wrap_plain(o: Any) -> Tensor:
    t = _new(Tensor)
    t._data = o
    return t


def _wrap_born(o: Any) -> Tensor:
    t = _new(Tensor)
    t._data = o if type(o) is _ndarray else np.asarray(o)
    t._tborn = _dispatch._transform_local.tid   # Note [Captured tensors] (ops/views_inplace.py)
    return t


def _has_batched(grads: list) -> bool:
    for g in grads:
        if g is not None and g._blevel:
            return True
    return False


class Plan:
    """One compiled specialization: the forward/backward programs and the ``Gradient`` index
    lists that connect them to the eager engine (Note [Compiled call protocol]).

    Args:
        f: ``f(*input_arrays) -> tuple`` of the real outputs then the temporaries.
        f_nograd: the forward without temporaries, for calls that record nothing.
        df: ``df(*vjps, *captures) -> tuple`` for the case where every incoming gradient is
            defined; ``df_builder(mask)`` builds the variant for other definedness patterns.
        df_tensors: ``df_tensors(vjps, captures) -> list`` of Tensors or None, computed with
            ndgrad ops (recorded under grad mode); used for create_graph and batched grads.
        input_meta: ``(shape, numpy dtype)`` per input listed in ``df_output_vjps``.
        output_dtypes: numpy dtype of every output of ``f`` (real and temporaries).
    """

    def __init__(self, *, f: Callable, f_nograd: Callable, df: Optional[Callable] = None,
                 f_real_outputs: int, df_input_vjps: Sequence[int],
                 df_input_captured_inputs: Sequence[int],
                 df_input_captured_outputs: Sequence[int], df_output_vjps: Sequence[int],
                 input_meta: Sequence[tuple], output_dtypes: Sequence[Any],
                 df_builder: Optional[Callable] = None, df_tensors: Optional[Callable] = None,
                 out_kinds: Optional[Sequence] = None, df_through: Sequence[tuple] = (),
                 df_twins: Sequence[tuple] = (),
                 name: str = "DifferentiableGraphBackward") -> None:
        self.f = f
        self.f_nograd = f_nograd
        self.f_real_outputs = f_real_outputs
        self.df_input_vjps = tuple(df_input_vjps)
        self.df_input_captured_inputs = tuple(df_input_captured_inputs)
        self.df_input_captured_outputs = tuple(df_input_captured_outputs)
        self.df_output_vjps = tuple(df_output_vjps)
        self.input_meta = tuple((tuple(s), np.dtype(d)) for s, d in input_meta)
        # per input in df_output_vjps: (shape, dtype, row-major strides), Note [A compiled node
        # accumulates its leaves]
        self.grad_layouts = tuple((s, d, _c_strides(s, d.itemsize)) for s, d in self.input_meta)
        self.df_builder = df_builder
        self.df_tensors = df_tensors
        # (output k, incoming gradient j) of df whose shapes and dtypes are equal: output k can
        # be gradient j handed on (Note [A compiled node accumulates its leaves])
        self.df_through = tuple(df_through)
        # groups of df's outputs of equal shape and dtype (whose arrays can be one)
        self.df_twins = tuple(df_twins)
        # the twins as pairs, when there are only pairs and no df_through (checked inline)
        self.twin_pairs = None if self.df_through or any(len(g) != 2 for g in self.df_twins) \
            else self.df_twins
        self.df_variants: dict = {}
        self.n_vjps = len(self.df_input_vjps)
        # nr -> the incoming-gradient mask of a backward seeded at output nr alone
        self.seed_masks: dict = {}
        # Note [Leaf accumulators made on demand]: [a weak reference to the last node with
        # pending edges], and per edge the _PendingAcc last made for it
        self._slot: list = [None]
        self._pend_refs: list = [None] * len(self.df_output_vjps)
        # Per real output: None (a new tensor), ("input", i) (input i itself), ("dup", j) (the
        # same tensor as output j), ("view", "input"|"output", i, replay) (replay(base) redoes
        # the view ops on input/output i eagerly, so the result is a real view of it).
        kinds = tuple(out_kinds) if out_kinds is not None else (None,) * f_real_outputs
        self.out_kinds = kinds
        self.special = tuple(k for k, kind in enumerate(kinds) if kind is not None)
        if df is not None:
            self.df_variants[(False,) * len(self.df_input_vjps)] = df
        # Which real outputs get the node as grad_fn, and with which output_nr.
        nr_of: dict[int, int] = {}
        for i, off in enumerate(self.df_input_vjps):
            nr_of.setdefault(off, i)
        self.output_nr = nr_of
        self.attach = tuple((off, nr) for off, nr in nr_of.items()
                            if off < f_real_outputs and kinds[off] is None
                            and np.dtype(output_dtypes[off]).kind in _DIFF_KINDS)
        attached = dict(self.attach)
        # A captured output is saved as the node's output (rebuilt with its history under
        # create_graph) when it has an output_nr, else as a plain value.
        self.saved_outputs = tuple(
            (off, attached.get(off, nr_of.get(off) if off >= f_real_outputs and np.dtype(
                output_dtypes[off]).kind in _DIFF_KINDS else None))
            for off in self.df_input_captured_outputs)
        # Captures in df's order: the captured inputs, then the captured outputs; per position
        # the output_nr the value is saved with (None: a plain value).
        self.n_cap_inputs = len(self.df_input_captured_inputs)
        # no real output captured: the captured outputs are bare arrays (_lean_captures)
        self.cap_plain = all(off >= f_real_outputs for off, _ in self.saved_outputs)
        self.cap_offsets = tuple(off for off, _ in self.saved_outputs)
        self.cap_nr = (None,) * self.n_cap_inputs + tuple(
            nr if nr is not None and (off >= f_real_outputs or off in attached) else None
            for off, nr in self.saved_outputs)
        self.name = name

    def df_for(self, mask: tuple) -> Callable:
        """The compiled backward for one pattern of undefined (True) incoming gradients."""
        df = self.df_variants.get(mask)
        if df is None:
            if self.df_builder is None:
                raise RuntimeError("no backward compiled for this pattern of gradients")
            df = self.df_variants[mask] = self.df_builder(mask)
        return df

    def run_df_tensors(self, vjps: list, caps: list) -> list:
        """The backward with ndgrad ops on Tensors (recorded when grad mode is on)."""
        if self.df_tensors is None:
            raise RuntimeError("this compiled function cannot be differentiated twice")
        return self.df_tensors(vjps, caps)

    # ------------------------------------------------------------------ the call
    def __call__(self, tensors: Sequence[Tensor], lazy: bool = False) -> list:
        """Run the forward on ``tensors`` (the graph inputs); returns the real outputs as
        Tensors, recording one node when gradients are needed. ``lazy``: ``tensors`` are
        distinct objects, and leaves without an AccumulateGrad get none until one is needed
        (Note [Leaf accumulators made on demand])."""
        record = False
        if _state.enabled:
            for i in self.df_output_vjps:
                t = tensors[i]
                if t._requires_grad or t._base is not None and t.requires_grad:
                    record = True
                    break
        prof = _profiler.current() if _dispatch._PROFILING else None
        if prof is not None:
            with _profiler._Range(prof, "ndgrad::" + self.name.replace("Backward", "")):
                return self._call(tensors, record, lazy)
        return self._call(tensors, record, lazy)

    def _call(self, tensors: Sequence[Tensor], record: bool, lazy: bool = False) -> list:
        arrays = [t._data for t in tensors]
        if not record:
            outs = self.f_nograd(*arrays)
            res = []
            inference = _state.inference
            for o in outs[:self.f_real_outputs]:
                t = _new(Tensor)
                t._data = o if type(o) is _ndarray else np.asarray(o)
                if inference:
                    t._inference = True
                if _dispatch._TRANSFORM:       # Note [Captured tensors] (ops/views_inplace.py)
                    t._tborn = _dispatch._transform_local.tid
                res.append(t)
            if self.special:
                self._fix_outputs(tensors, res)
            return res
        f = self.f
        if f.__class__ is GeneratedFunction and f.single_thread and not f.owned:
            outs = run_single_threaded(f.fn, arrays)    # f(*arrays) without its frame
        else:
            outs = f(*arrays)
        node = _new(DifferentiableGraphBackward)
        node._plan = self
        node._sequence_nr = next_sequence_nr()
        if not lazy or not self._lazy_edges(tensors, node):
            edges = []
            for i in self.df_output_vjps:
                t = tensors[i]
                # a leaf that requires grad: its AccumulateGrad, as _dispatch._edge finds it
                if t._grad_fn is None and t._base is None and t._requires_grad:
                    ref = t._grad_acc
                    acc = ref() if ref is not None else None
                    edges.append((acc if acc is not None else grad_accumulator(t), 0))
                else:
                    edges.append(_edge(t))
            node._edges = tuple(edges)
        node._input_meta = self.input_meta
        node._num_inputs = self.n_vjps
        if _dispatch._ANOMALY:
            _anomaly_record(node)
        nreal = self.f_real_outputs
        res = []
        for k in range(nreal):
            o = outs[k]
            t = _new(Tensor)
            t._data = o if type(o) is _ndarray else np.asarray(o)
            if _dispatch._TRANSFORM:           # Note [Captured tensors] (ops/views_inplace.py)
                t._tborn = _dispatch._transform_local.tid
            res.append(t)
        # History first: a pack hook sees a saved output with its grad_fn (as _dispatch._record).
        for off, out_nr in self.attach:
            t = res[off]
            t._grad_fn = node
            t._requires_grad = True
            t._output_nr = out_nr
        if self.special:
            self._fix_outputs(tensors, res)
        if not _hooks_in_use[0]:
            if not self.cap_plain:
                node._saved = self._lean_captures(tensors, outs, res)
                return res
            # _lean_captures when no real output is captured (the temporaries are bare arrays)
            checks = []
            caps = []
            k = 0
            for i in self.df_input_captured_inputs:
                t = tensors[i]
                if t._inference:
                    raise RuntimeError(INFERENCE_SAVE_MSG)
                vc = t._version_counter
                checks.append((k, t, vc[0] if vc is not None else 0))
                caps.append(arrays[i])
                k += 1
            for off in self.cap_offsets:
                o = outs[off]
                caps.append(o if type(o) is _ndarray else np.asarray(o))
            c = _new(_Captures)
            c.arrays = caps
            c.checks = checks
            c.plan = self
            node._saved = c
            return res
        saved = [SavedTensor(tensors[i]) for i in self.df_input_captured_inputs]
        for off, nr in self.saved_outputs:
            if off < nreal:
                t = res[off]
            else:
                o = outs[off]
                t = _new(Tensor)
                t._data = o if type(o) is _ndarray else np.asarray(o)
            # A captured output that is the node's output nr (a real output attached above, or
            # a temporary whose gradient df also takes) is saved as the node's output: under
            # create_graph its unpacked value carries the node as history (double backward).
            saved.append(SavedTensor(t, True, nr) if nr is not None and (
                off >= nreal or t._grad_fn is node) else SavedTensor(t))
        node._saved = tuple(saved)
        return res

    def _lazy_edges(self, tensors: Sequence[Tensor], node: DifferentiableGraphBackward) -> bool:
        """``node``'s edges, leaves without an accumulator as pending edges (Note [Leaf
        accumulators made on demand]); False (nothing done) when an input is a view, whose
        edge ``_dispatch._edge`` must find."""
        refs = self._pend_refs
        slot = self._slot
        edges = []
        installs = None
        pending = 0
        lock = _ACC_LOCK            # no accumulator is made for these leaves meanwhile
        lock.acquire()
        try:
            r = slot[0]
            if r is not None:
                prev = r()
                if prev is not None and prev._pending:
                    prev._make_all()        # the last node's pending edges: made now
                prev = None
            k = -1
            for i in self.df_output_vjps:
                k += 1
                t = tensors[i]
                if t._base is not None:
                    return False
                if t._grad_fn is not None:
                    edges.append((t._grad_fn, t._output_nr))
                elif not t._requires_grad:
                    edges.append(_NO_EDGE)
                else:
                    ref = t._grad_acc
                    p = refs[k]
                    if ref is not p or p is None or t._hooks:
                        acc = ref() if ref is not None else None
                        if acc is None and t._hooks:
                            # what grad_accumulator does (its lock is held here)
                            acc = AccumulateGrad(t)
                            t._grad_acc = _WeakRef(acc)
                        if acc is not None:
                            # a weak reference, or another plan's _PendingAcc that made it
                            edges.append((acc, 0))
                            continue
                        if p is None or p.leaf_id != id(t):
                            p = refs[k] = _PendingAcc(slot, k, id(t))
                        if installs is None:
                            installs = [(t, p)]
                        else:
                            installs.append((t, p))
                    edges.append((t, p))
                    pending += 1
            node._edges = tuple(edges)
            if pending:
                node._pending = pending
                slot[0] = _WeakRef(node)
                if installs is not None:
                    for t, p in installs:
                        t._grad_acc = p
            return True
        finally:
            lock.release()

    def _lean_captures(self, tensors: Sequence[Tensor], outs: tuple, res: list) -> _Captures:
        """The captures without saved-tensor hooks: what ``SavedTensor`` keeps and checks, as
        bare arrays plus (tensor, version) pairs (``_Captures``)."""
        arrays = []
        checks = []
        k = 0
        for i in self.df_input_captured_inputs:
            t = tensors[i]
            if t._inference:
                raise RuntimeError(INFERENCE_SAVE_MSG)
            vc = t._version_counter
            checks.append((k, t, vc[0] if vc is not None else 0))
            arrays.append(t._data)
            k += 1
        nreal = self.f_real_outputs
        for off, _ in self.saved_outputs:
            if off < nreal:
                t = res[off]
                if t._inference:
                    raise RuntimeError(INFERENCE_SAVE_MSG)
                vc = t._version_counter
                if self.cap_nr[k] is not None:
                    # the node's own output: a detached alias sharing the version counter (no
                    # node <-> output cycle), as SavedTensor saves outputs
                    if vc is None:
                        vc = t._version_counter = [0]
                    alias = _new(Tensor)
                    alias._data = t._data
                    alias._version_counter = vc
                    t = alias
                checks.append((k, t, vc[0] if vc is not None else 0))
                arrays.append(t._data)
            else:
                o = outs[off]
                arrays.append(o if type(o) is _ndarray else np.asarray(o))
            k += 1
        return _Captures(arrays, checks, self)

    def _fix_outputs(self, tensors: Sequence[Tensor], res: list) -> None:
        kinds = self.out_kinds
        for k in self.special:
            kind = kinds[k]
            assert kind is not None  # self.special lists only the outputs with a kind
            tag = kind[0]
            if tag == "input":
                res[k] = tensors[kind[1]]
            elif tag == "dup":
                res[k] = res[kind[1]]
            else:
                base = tensors[kind[2]] if kind[1] == "input" else res[kind[2]]
                res[k] = kind[3](base)
