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
(Note [Lean backward entry] in autograd/engine.py) runs it, then each leaf's AccumulateGrad.
The node does the second part itself when that is the case: the innermost graph task
accumulates into every leaf (``accumulate_grad``, no ``needed`` set) and publishes a count of
0 for each of the node's AccumulateGrad successors (the lean entry's counts; the general loop
still counts the node's own pending edge then, so it is never 0 there), none of them has hooks,
and the node has none. Then, in edge order, a first gradient nobody else holds, of its input's
shape and dtype and row-major like its row-major leaf, becomes ``.grad`` under the
AccumulateGrad's lock (its steal); any other gradient goes through the engine's checks and
fixes (``_check_gradient``) to that AccumulateGrad's own ``apply``. The node returns no
gradients, so the engine has nothing left to do. Anything else returns the gradients to the
engine as before.
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
``accumulate_grad.grad_accumulator``;
``SavedTensor(t, is_output, output_nr)``, ``._version`` and ``.unpack(node)``; the engine's
``_check_gradient`` and ``_local.tasks`` (its last ``_GraphTask``'s ``keep_graph``,
``accumulate_grad``, ``needed`` and ``nodes``, the latter with 0 for the leaves of the lean
entry);
``AccumulateGrad``'s ``variable``, ``_lock``, ``_has_hooks`` and ``apply``, a leaf's ``_grad``
and ``_post_acc_hooks``;
``saved._hooks_in_use`` and ``INFERENCE_SAVE_MSG``; ``anomaly_mode.record(node)``;
``profiler.current()`` and ``profiler._Range``; the Tensor fields ``_data``, ``_grad_fn``,
``_requires_grad``, ``_output_nr``, ``_inference``, ``_base``, ``_blevel``, ``_grad_acc`` (a
leaf's weak reference to its AccumulateGrad), ``_version_counter`` (and, in api.py,
``_fw_grads`` and ``copy_``); ``grad_mode._state`` (``enabled``, ``inference``); the
dispatcher's module flags ``_ANOMALY``, ``_PROFILING``, ``_BATCHING``, ``_FW_AD`` and, for
views of inputs replayed after a call, ``_dispatch.apply``.

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

from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..autograd import profiler as _profiler
from ..autograd.anomaly_mode import record as _anomaly_record
from ..autograd.accumulate_grad import AccumulateGrad, grad_accumulator
from ..autograd.engine import _check_gradient
from ..autograd.engine import _local as _engine_local
from ..autograd.grad_mode import _state
from ..autograd.node import RELEASED, SECOND_BACKWARD_MSG, Node, next_sequence_nr
from ..autograd.saved import INFERENCE_SAVE_MSG, SavedTensor, _hooks_in_use
from ..ops import _dispatch
from ..ops._dispatch import _edge
from ..tensor import Tensor

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
        df = plan.df_variants.get(mask)
        if df is None:
            df = plan.df_for(mask)
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
        tasks = _engine_local.__dict__.get("tasks")     # current_graph_task_keeps_graph()
        if getattr(df, "owned", False) and tasks and not tasks[-1].keep_graph:
            self._saved = RELEASED
            del saved
            try:
                outs = df.call_owned(args)
            except BaseException as e:
                self._saved = _Failed(e)
                raise
        else:
            outs = df(*args)
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

    def _to_leaves(self, outs: tuple, task: Any) -> bool:
        """Accumulate ``outs`` into the leaves this node feeds, as their AccumulateGrad nodes
        would right after it; False (nothing done) unless the engine runs this node alone with
        its leaves in graph task ``task`` (Note [A compiled node accumulates its leaves])."""
        nodes = task.nodes
        if not task.accumulate_grad or task.needed is not None or nodes is None:
            return False
        edges = self.next_functions
        for acc, _ in edges:
            if acc is not None and (acc.__class__ is not AccumulateGrad or acc._has_hooks
                                    or nodes.get(acc) != 0):
                return False
        i = -1
        for (acc, _), o, lay in zip(edges, outs, self._plan.grad_layouts):
            i += 1
            if acc is None or o is None:
                continue
            if o.__class__ is _ndarray:
                dt = o.dtype
                if o.shape == lay[0] and (dt is lay[1] or dt == lay[1]):
                    var = acc.variable
                    # AccumulateGrad's steal of a first gradient nobody else holds, when both
                    # are row-major of one shape (its layout test, Note [AccumulateGrad: steal,
                    # clone or add]); any other case is AccumulateGrad's own
                    if var._grad is None and var._grad_fn is None and var._requires_grad \
                            and not var._post_acc_hooks:
                        vd = var._data
                        cs = lay[2]
                        if o.strides == cs and vd.strides == cs and vd.shape == lay[0]:
                            lock = acc._lock
                            lock.acquire()
                            try:
                                if var._grad is None:
                                    t = _new(Tensor)
                                    t._data = o
                                    var._grad = t
                                    continue
                            finally:
                                lock.release()
                    acc.apply([_wrap_plain(o)])
                    continue
                # another shape or dtype: the engine's checks and fixes, then AccumulateGrad
                acc.apply([_check_gradient(self, i, _wrap_plain(o), self._input_meta)])
            elif o.__class__ is Tensor:       # an incoming gradient handed on (_pass_through)
                acc.apply([_check_gradient(self, i, o, self._input_meta)])
            else:
                acc.apply([_check_gradient(self, i, _wrap_plain(np.asarray(o)),
                                           self._input_meta)])
        return True

    def release_variables(self) -> None:
        if self._saved:
            self._saved = RELEASED


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
        self.df_variants: dict = {}
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
    def __call__(self, tensors: Sequence[Tensor]) -> list:
        """Run the forward on ``tensors`` (the graph inputs); returns the real outputs as
        Tensors, recording one node when gradients are needed."""
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
                return self._call(tensors, record)
        return self._call(tensors, record)

    def _call(self, tensors: Sequence[Tensor], record: bool) -> list:
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
        outs = self.f(*arrays)
        node = DifferentiableGraphBackward()
        node._plan = self
        node._sequence_nr = next_sequence_nr()
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
        node.next_functions = tuple(edges)
        node._input_meta = self.input_meta
        node._num_inputs = len(self.df_input_vjps)
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
            node._saved = self._lean_captures(tensors, outs, res)
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
