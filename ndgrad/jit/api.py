"""``ndgrad.jit.trace`` and ``ndgrad.compile``: trace once per guard key, then run compiled code.

Note [Guards and specializations]
A specialization is valid for one *guard key*: grad mode, inference mode, and per input leaf
its kind; for a tensor its shape, dtype, ``requires_grad`` and which earlier argument it is
the same object as; for a Python value the value itself (it was baked into the graph). Tensors
the function reaches through closures or attributes were lifted to graph inputs by the tracer:
they are read at call time and their shape/dtype/requires_grad are checked against the
specialization too. Inputs carrying forward-mode tangents (a dual level is open) or batched
by the batching layer run the function eagerly: the generated code sees only arrays.
``trace`` keeps one specialization and raises on a miss; ``compile`` traces again per new key,
keeps at most ``cache_limit`` (8) of them, then warns once and runs the function eagerly for
further keys (torch.compile's recompile limit).

A specialization whose outputs need gradients is differentiated (``differentiate``, seed 004)
and runs as one ``DifferentiableGraphBackward`` node (executor.py); otherwise the forward
graph alone is compiled. Mutated inputs are written back after the call with ``copy_`` (their
version bumps, and a non-leaf gets the copy's history, as eager in-place ops do); outputs that
are inputs, repeated outputs and views of inputs or of other outputs are rebuilt as the same
objects or real views (Note [Compiled call protocol]).

Example:
    >>> import ndgrad
    >>> @ndgrad.compile
    ... def f(x, w):
    ...     return (x @ w).tanh().sum()
    >>> x, w = ndgrad.ones(2, 3), ndgrad.ones(3, 4, requires_grad=True)
    >>> loss = f(x, w)      # traces, differentiates, generates code, runs it
    >>> loss = f(x, w)      # runs the generated code
    >>> loss.grad_fn.name()
    'DifferentiableGraphBackward'
    >>> loss.backward()
    >>> w.grad.shape
    ndgrad.Size([3, 4])
"""

from __future__ import annotations

import functools
import gc
import os
import sys
import threading
import warnings
from typing import Any, Callable, Optional

import numpy as np

from ..autograd.grad_mode import _state
from ..ops import _autocast, _dispatch
from ..tensor import Tensor
from .blas_threads import single_blas_thread
from .codegen import GeneratedFunction, generate
from .executor import Plan
from .gradient import Gradient
from .passes import copy_eliminating_common_subexpressions, eliminate_common_subexpression
from . import config as _config
from . import random_nodes as _random_nodes
from .stack_batching import batch_stacks, fold_constants
from .tracer import _local as _tracer_local
from .tracer import TraceError, _check_trace, _trace_once, flatten, lifted_sources, unflatten

__all__ = ["trace", "compile", "TracedFunction", "CompiledFunction"]

_BACKENDS = ("numpy", "numba")
_NONE = type(None)
_SCALARS = (int, bool, str, _NONE, complex)


# ---------------------------------------------------------------------------- guard keys
def _guard(args: tuple, kwargs: dict) -> tuple:
    """``(key, tensor leaves)`` for a call (Note [Guards and specializations])."""
    key: list = [_state.enabled, _state.inference]
    if _autocast.active and _autocast.state.enabled["cpu"]:   # Note [Autocast]
        key.append(("autocast", _autocast.state.dtype["cpu"]))
    leaves: list = []
    for a in args:
        if type(a) is Tensor:        # the common case, inline (as _leaf does it)
            d = a._data
            key.append((d.shape, d.dtype, a._requires_grad))
            leaves.append(a)
        else:
            _leaf(a, key, leaves)
    if kwargs:
        _leaf(kwargs, key, leaves)
    if len(leaves) > 1 and len({id(t) for t in leaves}) != len(leaves):
        seen: dict = {}
        for i, t in enumerate(leaves):
            j = seen.setdefault(id(t), i)
            if j != i:
                key.append(("same", i, j))
    return tuple(key), leaves


# Note [The last specialization's fast check]
# A training loop calls a compiled function again and again with tensors of one kind. The
# full guard key (_guard) builds a tuple per argument and the cache hashes the whole key on
# every call; instead, the specialization a call of only tensor arguments (no keyword
# arguments, no argument repeated, autocast off) last ran is kept with its per-argument
# (shape, dtype, requires_grad) and the grad and inference modes (``_fast``), and a call that
# matches all of them (the same checks as the key's, without building it) runs it directly.
# Anything else (another kind of input, a repeated argument, a non-tensor argument, forward
# AD or batching active, a lifted tensor rebound) takes the full guard path, which also
# replaces the kept entry. A call that passed this check has distinct tensor arguments and no
# lifted ones, so its leaves may get their AccumulateGrad only when it is needed (Note [Leaf
# accumulators made on demand] in executor.py).
def _fast_entry(spec: Any, key: tuple, args: tuple) -> Optional[tuple]:
    """The kept entry for a call of ``args`` that ran ``spec`` under ``key``, or None."""
    if spec.guarded or any(type(a) is not Tensor for a in args):
        return None     # lifted tensors and module flags: the full path checks them
    return (spec, key[0], key[1], key[2:])


def _fast_hit(fast: tuple, args: tuple) -> Any:
    """``fast``'s specialization when ``args`` match it (Note [The last specialization's fast
    check]), else None."""
    spec, enabled, inference, metas = fast
    if _state.enabled != enabled or _state.inference != inference or \
            len(args) != len(metas) or (_autocast.active and _autocast.state.enabled["cpu"]):
        return None
    for a, (shape, dtype, rg) in zip(args, metas):
        if a.__class__ is not Tensor:
            return None
        d = a._data
        if d.shape != shape or a._requires_grad != rg or (
                d.dtype is not dtype and d.dtype != dtype):
            return None
    # (every argument is a Tensor, hashed by identity: the set compares no values)
    if len(args) > 1 and len(set(args)) != len(args):
        return None
    return spec


def _leaf(a: Any, key: list, leaves: list) -> None:
    t = type(a)
    if t is Tensor or isinstance(a, Tensor):
        d = a._data
        key.append((d.shape, d.dtype, a._requires_grad))
        leaves.append(a)
    elif t is tuple or t is list or (isinstance(a, tuple)):
        key.append((t, len(a)))
        for x in a:
            _leaf(x, key, leaves)
    elif t is dict:
        key.append((dict, tuple(a)))
        for x in a.values():
            _leaf(x, key, leaves)
    elif t is float:
        key.append((float, repr(a)))         # -0.0 and nan are keys too
    elif t in _SCALARS:
        key.append((t, a))
    else:
        try:
            hash(a)
            key.append((t, a))
        except TypeError:
            key.append((t, id(a)))


def _describe(key: tuple) -> str:
    parts = ["grad mode " + ("on" if key[0] else "off")]
    if key[1]:
        parts.append("inference mode")
    for k in key[2:]:
        if type(k) is tuple and len(k) == 3 and isinstance(k[1], np.dtype):
            parts.append(f"{k[1].name}{list(k[0])}" + (" requires_grad" if k[2] else ""))
        elif type(k) is tuple and len(k) == 2 and k[0] in (float, int, bool, str, complex):
            parts.append(f"{k[1]}")
    return "(" + ", ".join(parts) + ")"


class _gc_paused:
    """Context manager: the cyclic garbage collector is off while a specialization is traced
    and built (it would traverse the growing graph's objects again and again: about a fifth
    of the first call). Memory freed by reference counting, which is how tensors die, is
    unaffected; the collector is switched back on afterwards, unless it was off already."""

    def __enter__(self) -> None:
        self.was = gc.isenabled()
        if self.was:
            gc.disable()

    def __exit__(self, *exc: Any) -> None:
        if self.was:
            gc.enable()


# ---------------------------------------------------------------------------- one specialization
class ModuleStateChanged(TraceError):
    """A traced call assigned attributes of modules it called (Note [Guarded module
    attributes]): its traced run's ``outputs`` are the call's result."""

    def __init__(self, modules: list, outputs: Any) -> None:
        names = ", ".join(sorted({type(m).__name__ for m in modules}))
        super().__init__(f"the traced call assigned attributes of {names}: generated code "
                         "would not repeat that")
        self.outputs = outputs


class _Specialization:
    """One traced version of a function, differentiated and compiled in the call that traced it
    (Note [The tracing call's result])."""

    def __init__(self, fn: Callable, args: tuple, kwargs: dict, backend: str,
                 check: bool = False) -> None:
        # the modules the trace calls, and their training flags: the graph holds what the
        # flags decided (Note [Compiled modules and training flags] in nn/compiled.py)
        nn_module = sys.modules.get("ndgrad.nn.modules.module")  # local import: nn if loaded
        if nn_module is None:
            res, self.first_outputs = _trace(fn, args, kwargs, check)
            seen: list = []
        else:
            with nn_module.recording_module_calls() as seen:
                res, self.first_outputs = _trace(fn, args, kwargs, check)
        # Note [Guarded module attributes] in nn/modules/module.py: _attr_version
        called = dict(reversed(seen))            # module -> its version when first called
        changed = [m for m, v in called.items() if m.__dict__.get("_attr_version", 0) != v]
        if changed:
            raise ModuleStateChanged(changed, self.first_outputs)
        self.module_flags = tuple((m, m.training, tuple(m._modules.values()),
                                   m.__dict__.get("_attr_version", 0)) for m in called)
        # building runs f on example values: its draws are put back (Note [Random nodes])
        gen_states = _random_nodes.snapshot(res.graph)
        self.graph = res.graph
        self.num_outputs = res.num_outputs
        self.mutated = tuple(res.mutated)
        self.out_spec = res.out_spec
        self.lifted = tuple(res.lifted)
        self.lifted_meta = tuple((t._data.shape, t._data.dtype, t._requires_grad)
                                 for t in self.lifted)
        # Note [Where lifted tensors live] in tracer.py: rebinding is checked on every call
        self.lifted_probes = tuple((p, t) for p, t in
                                   zip(lifted_sources(fn, self.lifted), self.lifted)
                                   if p is not None)
        self.guarded = bool(self.lifted or self.module_flags)   # lifted_ok() has work to do
        self.backend = backend
        self.needs_grad = _state.enabled and any(v.requires_grad for v in res.graph.outputs())
        self._plan: Optional[Plan] = None
        self._gradient: Optional[Gradient] = None
        self._lock = threading.Lock()
        examples = res.example_inputs
        del res            # the trace's example tensors are not kept
        updates = any(n.kind() == "Call" and n.attrs.get("mutates") for n in self.graph.nodes())
        if self.needs_grad and not self.mutated and not updates:
            # Note [The tracing call's result]: the compiled run's result is returned instead
            self.first_outputs = None
        self.build(examples)
        _random_nodes.restore(gen_states)

    def build(self, example_inputs: Optional[list] = None) -> Plan:
        """Differentiate (when outputs need gradients), optimize and generate code."""
        with self._lock:
            if self._plan is not None:
                return self._plan
            g = self.graph
            kinds = _output_kinds(g, self.num_outputs)
            if self.needs_grad:
                from .differentiate import differentiate   # local import: loaded when needed
                grad = differentiate(g.copy(), example_inputs)
                self._gradient = grad
                plan = _gradient_plan(grad, kinds, self.backend)
                assert isinstance(plan.f, GeneratedFunction)  # _gradient_plan generates f
                self.f_code = plan.f.code
            else:
                opt = copy_eliminating_common_subexpressions(g)
                _optimize(opt, cse_done=True)
                fwd = generate(opt, name="f", backend=self.backend,
                               copy_outputs=_merged_outputs(g, opt, self.num_outputs))
                plan = Plan(f=fwd, f_nograd=fwd, f_real_outputs=len(g.outputs()),
                            df_input_vjps=(), df_input_captured_inputs=(),
                            df_input_captured_outputs=(), df_output_vjps=(), input_meta=(),
                            output_dtypes=[v.dtype for v in g.outputs()], out_kinds=kinds)
                self.f_code = fwd.code
            self._plan = plan
            return plan

    @property
    def gradient(self) -> Any:
        if self._plan is None:
            self.build()
        return self._gradient

    @property
    def code(self) -> str:
        """The generated source: the forward, then each backward variant generated so far."""
        plan = self._plan if self._plan is not None else self.build()
        parts = [self.f_code]
        for mask, df in plan.df_variants.items():
            parts.append(f"# backward, undefined incoming gradients: {list(mask)}\n" + df.code)
        return "\n".join(parts)

    def flags_ok(self) -> bool:
        """The called modules' ``training`` flags, submodules and plain attributes are the
        trace's."""
        for m, flag, kids, version in self.module_flags:
            if m.training is not flag or (kids and tuple(m._modules.values()) != kids) or (
                    not kids and m._modules) or m.__dict__.get("_attr_version", 0) != version:
                return False
        return True

    def lifted_ok(self) -> bool:
        if self.module_flags and not self.flags_ok():
            return False                # another training mode: trace again
        for t, (shape, dtype, rg) in zip(self.lifted, self.lifted_meta):
            d = t._data
            if d.shape != shape or d.dtype != dtype or t._requires_grad != rg:
                return False
        for probe, t in self.lifted_probes:
            try:
                if probe() is not t:
                    return False        # the name now holds another tensor: trace again
            except Exception:   # noqa: BLE001 - the attribute or global is gone
                return False
        return True

    def run(self, leaves: Any, lazy: bool = False) -> Any:
        """Run on ``leaves`` (the tensor arguments; ``lazy``: distinct, nothing lifted, Note
        [Leaf accumulators made on demand] in executor.py)."""
        tensors = list(leaves) + list(self.lifted) if self.lifted else leaves
        plan = self._plan
        if plan is None:
            plan = self.build(tensors)
        outs = plan(tensors, lazy)
        n = self.num_outputs
        if self.mutated:
            for j, i in enumerate(self.mutated):
                _write_back(tensors[i], outs[n + j])
            outs = outs[:n]
        spec = self.out_spec
        if spec[0] == "T":
            return outs[0]             # one tensor returned: no structure to rebuild
        return unflatten(spec, outs)


_SMALL_TRACE = 1 << 14      # Note [The tracing call's small GEMMs]: a 128x128 matrix


def _trace(fn: Callable, args: tuple, kwargs: dict, check: bool) -> tuple:
    """``(TraceResult, (outputs,))``: trace ``fn`` once and keep what the traced run returned.

    Note [The tracing call's result]
    Tracing runs ``fn`` for real (eager ops, in-place changes included). The same call then
    differentiates (when outputs need gradients), optimizes and generates code (``build``), as
    torch.compile and jax.jit compile in the first call: nothing is left for the second call,
    and a benchmark's first call shows the whole cost (bench/jit.py subtracts one steady run
    to report the overhead). What the call returns:
    * no output needs a gradient, or ``fn`` changed an input in place (itself or in a Call
      node, Note [Calls that update their inputs] in tracer.py): the traced run's outputs
      (running the compiled code as well would cost a second run, or apply the in-place
      changes twice);
    * otherwise the compiled run's outputs: the traced outputs are dropped before the build,
      since their eager graph holds every intermediate saved for backward while the compiled
      node keeps only df's captures (the first call's peak memory stays eager's, and its
      outputs have the same ``DifferentiableGraphBackward`` node as later calls').
    ``fn`` runs once (Python side effects happen once, as in eager) unless ``check``
    (``ndgrad.jit.trace(check_trace=True)``, Note [Trace check]) runs it a second time on
    perturbed values. The tracer decides which tensors are lifted by whether they are
    referenced after the call; the references the returned structure holds (a tensor the
    function built and returned, or the base of a returned view) do not count. The first
    call's tensors are not kept after it returns.
    """
    keep: list = []
    # Note [The tracing call's small GEMMs]
    # The traced run is an eager run, whose matrix products use the whole OpenBLAS pool; on a
    # loaded machine a small product then waits for pool threads (Note [Single-threaded small
    # GEMMs] in blas_threads.py): the double_backward workload's five 64x128x128 products took
    # 110 ms of a 130 ms first call, the generated code then running them in microseconds.
    # When every tensor argument is small (a product of two of them at most about
    # ``MAX_MACS``), the traced run uses one BLAS thread too. OpenBLAS may round a product
    # differently on another thread count, so this also keeps the first call's results those
    # of the generated code (which runs such products on one thread); a function that builds
    # large tensors from small arguments, or reads large lifted ones, traces on one thread.
    if all(t._data.size <= _SMALL_TRACE for t in flatten((args, kwargs))[0]):
        with single_blas_thread():
            res = _trace_once(fn, args, kwargs, keep)
    else:
        res = _trace_once(fn, args, kwargs, keep)
    if check:
        _check_trace(fn, args, kwargs, res, kept=True)
    return res, (keep.pop(),)


def _optimize(g: Any, cse_done: bool = False) -> None:
    """The forward-only pipeline: common subexpressions (unless ``cse_done``), constant
    folding, stack batching (Note [Stack batching])."""
    if not cse_done:
        eliminate_common_subexpression(g)
    # no dead code elimination here: the traced graph had it (tracer._finish), and CSE leaves
    # no dead node behind (a merged node's inputs are its twin's); fold_constants and
    # batch_stacks clean up after themselves
    fold_constants(g)
    if batch_stacks(g):
        eliminate_common_subexpression(g)


def _merged_outputs(orig: Any, opt: Any, n: int) -> list:
    """Output positions (< n) that are distinct values in ``orig`` but the same value as an
    earlier output in ``opt``: they are returned as copies, as eager returns distinct arrays."""
    o1, o2 = orig.outputs(), opt.outputs()
    out = []
    for k in range(min(n, len(o2))):
        for j in range(k):
            if o2[j] is o2[k] and o1[j] is not o1[k]:
                out.append(k)
                break
    return out


def _write_back(t: Tensor, new: Tensor) -> None:
    """The epilogue of a call that mutated input ``t``: eager ``copy_`` (bumps the version;
    records CopyBackwards when ``new`` carries history)."""
    if new is t:
        return
    t.copy_(new)


def _gradient_plan(grad: Any, kinds: tuple, backend: str) -> Plan:
    from .interpret import interpret   # local import: the create_graph path only

    f = generate(grad.f, name="f", backend=backend, private_from=grad.f_real_outputs)
    df_graph = grad.df
    df_opt = df_graph.copy()        # the seed runs CSE over f only; df gets it too
    eliminate_common_subexpression(df_opt)

    def build(mask: tuple) -> Any:
        return generate(df_opt, undefined=[i for i, m in enumerate(mask) if m], name="df",
                        backend=backend, owned=True)

    # Note [Differentiating a compiled backward]
    # Under create_graph=True the backward must record a graph of its own. df is a graph of
    # ndgrad ops, so it is compiled the same way as any function (TorchScript differentiates
    # df again in its GraphExecutor): a compiled function of df's inputs, whose outputs get
    # one DifferentiableGraphBackward node of their own. Batched gradients (vmap over the
    # cotangents) run df op by op through the batching layer instead.
    def run_df(*xs: Any) -> list:
        return interpret(df_graph, list(xs))

    df_compiled = CompiledFunction(run_df, backend, True, 8)
    # A CallBackward node re-runs a function recorded whole (a normalization ...) whose
    # backward reads values it computed outside the op table: traced again, they would be
    # baked into df's code as the traced call's constants. Such a df runs op by op.
    whole_calls = _has_kind(df_graph.block(), "CallBackward")

    def df_tensors(vjps: list, caps: list) -> list:
        if whole_calls or _dispatch._BATCHING or any(x is not None and x._blevel
                                                     for x in vjps):
            return list(interpret(df_graph, vjps + caps))
        return list(df_compiled(*vjps, *caps))

    f_ins = grad.f.inputs()
    f_outs = grad.f.outputs()
    df_vjps = df_opt.inputs()[:len(grad.df_input_vjps)]
    df_outs = df_opt.outputs()
    through = [(k, j) for k, o in enumerate(df_outs) for j, v in enumerate(df_vjps)
               if tuple(o.shape) == tuple(v.shape) and o.dtype == v.dtype]
    by_type: dict = {}
    for k, o in enumerate(df_outs):
        by_type.setdefault((tuple(o.shape), o.dtype), []).append(k)
    twins = [tuple(ks) for ks in by_type.values() if len(ks) > 1]
    plan = Plan(f=f, f_nograd=f, f_real_outputs=grad.f_real_outputs,
                df_input_vjps=grad.df_input_vjps,
                df_input_captured_inputs=grad.df_input_captured_inputs,
                df_input_captured_outputs=grad.df_input_captured_outputs,
                df_output_vjps=grad.df_output_vjps,
                input_meta=[(f_ins[i].shape, f_ins[i].dtype) for i in grad.df_output_vjps],
                output_dtypes=[v.dtype for v in f_outs], df_builder=build,
                df_tensors=df_tensors, out_kinds=kinds + (None,) * (grad.f_real_outputs
                                                                   - len(kinds)),
                df_through=through, df_twins=twins)
    return plan


def _has_kind(block: Any, kind: str) -> bool:
    """Whether a node of ``kind`` is in ``block`` or its nested blocks."""
    for n in block._nodes:
        if n.kind() == kind or any(_has_kind(b, kind) for b in n._blocks):
            return True
    return False


def _output_kinds(g: Any, num_outputs: int) -> tuple:
    """Per real output of ``g``: None, or how to rebuild it as an existing tensor or a view
    (Note [Compiled call protocol] in executor.py)."""
    ins = {v: i for i, v in enumerate(g.inputs())}
    outs = g.outputs()
    first: dict = {}
    kinds = []
    for k, v in enumerate(outs):
        kind = None
        if k < num_outputs:
            if v in ins:
                kind = ("input", ins[v])
            elif v in first:
                kind = ("dup", first[v])
            else:
                kind = _view_kind(v, ins, first)
        first.setdefault(v, k)
        kinds.append(kind)
    return tuple(kinds)


def _view_kind(v: Any, ins: dict, first: dict) -> Optional[tuple]:
    chain = []
    while True:
        n = v.node()
        if n is None or n.op is None or not n.op.view or n.num_tensor_inputs != 1 or \
                len(n.inputs()) != 1:
            return None
        chain.append(n)
        v = n.input(0)
        if v in ins:
            return ("view", "input", ins[v], functools.partial(_replay, tuple(reversed(chain))))
        if v in first:
            return ("view", "output", first[v], functools.partial(_replay,
                                                                  tuple(reversed(chain))))


def _replay(chain: tuple, base: Tensor) -> Tensor:
    t = base
    for n in chain:
        t = _dispatch.apply(n.op, (t,), (t._data,), n.args)
    return t


# ---------------------------------------------------------------------------- trace
class TracedFunction:
    """``fn`` traced for one set of example inputs (``ndgrad.jit.trace``): ``graph``,
    ``gradient`` (None when no output needs a gradient), ``code``; inputs of another guard key
    (another batch size ...) are traced again, once per key, as ``ndgrad.compile`` does (torch's
    traced functions accept other shapes)."""

    def __init__(self, fn: Callable, example_inputs: Any, backend: str = "numpy",
                 check_trace: bool = True) -> None:
        if isinstance(example_inputs, Tensor) or not isinstance(example_inputs, (tuple, list)):
            example_inputs = (example_inputs,)
        args = tuple(example_inputs)
        self._fn = fn
        self._others: Optional[CompiledFunction] = None    # the other keys' specializations
        self._key, _ = _guard(args, {})
        with _gc_paused():
            self._spec = _Specialization(fn, args, {}, backend, check_trace)
        self._spec.first_outputs = None
        functools.update_wrapper(self, fn, updated=())

    @property
    def graph(self) -> Any:
        """The traced graph (before differentiation)."""
        return self._spec.graph

    @property
    def gradient(self) -> Any:
        """The ``Gradient`` (seed 004) when the outputs need gradients, else None."""
        return self._spec.gradient

    @property
    def code(self) -> str:
        """The generated NumPy source (forward and the backward variants built so far)."""
        return self._spec.code

    def __call__(self, *args: Any) -> Any:
        if _tracer_local.__dict__.get("tracer") is not None:
            return self._fn(*args)         # inside an outer trace: inlined into it
        key, leaves = _guard(args, {})
        if key == self._key and not self._spec.flags_ok():
            raise RuntimeError(
                "ndgrad.jit.trace: a module the function calls was switched between training "
                "and evaluation since the trace; trace it again in this mode, or use "
                "ndgrad.compile, which traces once per mode")
        if key == self._key and not self._spec.lifted_ok():
            raise RuntimeError(
                "ndgrad.jit.trace: a tensor the function reads outside its arguments (a "
                "module parameter, a closure or global tensor) was replaced or changed shape, "
                "dtype or requires_grad since the trace; trace it again, or use "
                "ndgrad.compile, which traces again when that happens")
        if key != self._key:
            if self._others is None:
                self._others = CompiledFunction(self._fn, "numpy", True, 8)
            return self._others(*args)
        return self._spec.run(leaves)

    def run_if_traced_for(self, args: tuple) -> Any:
        """The traced program's result for ``args`` when they are of the example's kind (and
        no module flag or lifted tensor changed since), else ``NotImplemented``."""
        if _tracer_local.__dict__.get("tracer") is not None:
            return NotImplemented
        key, leaves = _guard(args, {})
        if key != self._key or not self._spec.flags_ok() or not self._spec.lifted_ok():
            return NotImplemented
        return self._spec.run(leaves)


def trace(fn: Callable, example_inputs: Any, check_trace: bool = True) -> TracedFunction:
    """Trace ``fn`` on ``example_inputs`` (a tuple of arguments, or one tensor), differentiate
    and compile it, and return a callable running the compiled code, with ``.graph``,
    ``.gradient`` and ``.code``.

    ``check_trace`` (torch.jit.trace's flag and default): run ``fn`` a second time on perturbed
    values of the inputs and lifted tensors and require the same program (Note [Trace check] in
    tracer.py), which finds values computed from the data outside the op table that the tracer
    cannot see. ``fn``'s Python side effects then run twice, and while the second run lasts the
    lifted tensors (parameters ...) hold perturbed values that another thread could read.
    ``ndgrad.compile`` never runs this check (as torch.compile runs a function once).

    >>> import ndgrad
    >>> a = ndgrad.ones(2, 3, 4, requires_grad=True)
    >>> b = ndgrad.ones(2, 3, 4, requires_grad=True)
    >>> cf = ndgrad.jit.trace(lambda a, b: a * b * a + b, (a, b))
    >>> cf.gradient.df_input_vjps, cf.gradient.df_output_vjps
    ([0, 1], [0, 1])
    >>> cf(a, b).grad_fn.name()
    'DifferentiableGraphBackward'
    """
    return TracedFunction(fn, example_inputs, check_trace=check_trace)


# ---------------------------------------------------------------------------- compile
_EAGER = object()
# traced calls of one kind of input that assign module attributes before it runs eagerly (the
# first may be a lazy module's initialization: Note [Guarded module attributes])
_STATE_CHANGES_BEFORE_EAGER = 3
# torch.compile's modes and backend names, accepted for the programs that pass them
_TORCH_MODES = (None, "default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs",
                "max-autotune")
_MODES_KEPT = 4       # specializations of other training-flag tuples kept per guard key
_TORCH_BACKENDS = ("inductor", "eager", "aot_eager", "aot_eager_decomp_partition",
                   "cudagraphs", "openxla", "tvm", "onnxrt")


class CompiledFunction:
    """What ``ndgrad.compile(fn)`` returns: calls trace and compile ``fn`` once per guard key
    (Note [Guards and specializations])."""

    def __init__(self, fn: Callable, backend: str, fullgraph: bool, cache_limit: int) -> None:
        self._fn = fn
        self._backend = backend
        self._fullgraph = fullgraph
        self._cache_limit = cache_limit
        self._cache: dict = {}
        self._lock = threading.Lock()
        self._warned = False
        self._fast: Optional[tuple] = None     # Note [The last specialization's fast check]
        self._other_modes: dict = {}           # key -> specializations of other flag tuples
        self._state_changes: dict = {}         # key -> traced calls that assigned attributes
        self._generation = _config.GENERATION[0]
        functools.update_wrapper(self, fn, updated=())

    def _forget(self) -> None:
        """``reset()`` happened since the last call: trace again (ndgrad/jit/config.py)."""
        with self._lock:
            self._cache.clear()
            self._other_modes.clear()
            self._state_changes.clear()
            self._fast = None
            self._warned = False
            self._generation = _config.GENERATION[0]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _tracer_local.__dict__.get("tracer") is not None:
            # called while an outer function is being traced: its ops belong to that trace
            return self._fn(*args, **kwargs)
        if self._generation != _config.GENERATION[0]:
            self._forget()
        fast = self._fast
        if fast is not None and not kwargs and not _dispatch._FW_AD and not _dispatch._BATCHING:
            spec = _fast_hit(fast, args)
            if spec is not None:
                return spec.run(args, True)
        key, leaves = _guard(args, kwargs)
        if _dispatch._FW_AD or _dispatch._BATCHING:
            # forward-mode tangents and batched tensors live on Tensors, which the generated
            # code does not see: such calls run eagerly (Note [Guards and specializations])
            for t in leaves:
                if t._fw_grads or t._blevel:
                    return self._fn(*args, **kwargs)
        spec = self._cache.get(key)
        if spec is None or (spec is not _EAGER and spec.guarded and not spec.lifted_ok()):
            spec, out = self._specialize(key, args, kwargs)
            if out is not None:
                return out[0]      # Note [The tracing call's result]
        if spec is _EAGER:
            return self._fn(*args, **kwargs)
        if not kwargs and len(key) == len(args) + 2 and len(leaves) == len(args):
            self._fast = _fast_entry(spec, key, args)
        return spec.run(leaves)

    def _specialize(self, key: tuple, args: tuple, kwargs: dict) -> Any:
        with self._lock:
            spec = self._cache.get(key)
            if spec is not None and (spec is _EAGER or not spec.guarded or spec.lifted_ok()):
                return spec, None
            if spec is not None and not spec.flags_ok():
                # another tuple of training flags: a specialization traced under it is kept
                # (Note [Compiled modules and training flags] in nn/compiled.py)
                kept = self._other_modes.setdefault(key, [])
                for alt in kept:
                    if alt.lifted_ok():
                        kept.remove(alt)
                        kept.append(spec)
                        self._cache[key] = alt
                        return alt, None
                kept.append(spec)
                del kept[:-_MODES_KEPT]
            real = sum(1 for s in self._cache.values() if s is not _EAGER)
            if spec is None and real >= self._cache_limit:
                if not self._warned:
                    self._warned = True
                    warnings.warn(
                        f"ndgrad.compile: {getattr(self._fn, '__name__', 'function')} hit the "
                        f"cache limit ({self._cache_limit} specializations); further kinds of "
                        "input run eagerly. Last call: " + _describe(key), stacklevel=4)
                return _EAGER, None
            before = _random_nodes.snapshot()
            try:
                with _gc_paused():
                    spec = _Specialization(self._fn, args, kwargs, self._backend)
            except ModuleStateChanged as e:
                # the traced run was the eager call, side effects included: it is the result
                n = self._state_changes[key] = self._state_changes.get(key, 0) + 1
                if n >= _STATE_CHANGES_BEFORE_EAGER:
                    warnings.warn(f"ndgrad.compile: running eagerly for {_describe(key)}: {e} "
                                  "(Note [Guarded module attributes])", stacklevel=4)
                    self._cache[key] = _EAGER
                return None, e.outputs
            except TraceError as e:
                _random_nodes.restore(before)   # the eager run draws what the trace drew
                if self._fullgraph:
                    raise
                warnings.warn(f"ndgrad.compile: running eagerly for {_describe(key)}: {e}",
                              stacklevel=4)
                self._cache[key] = _EAGER
                return _EAGER, None
            except Exception as e:              # building the code failed
                if not _config.config.suppress_errors:
                    raise
                _random_nodes.restore(before)
                warnings.warn(f"ndgrad.compile: running eagerly for {_describe(key)} "
                              f"(suppress_errors): {type(e).__name__}: {e}", stacklevel=4)
                self._cache[key] = _EAGER
                return _EAGER, None
            self._cache[key] = spec
            out = spec.first_outputs
            spec.first_outputs = None
            if out is None:
                _random_nodes.rewind(spec.graph)   # Note [Random nodes]
            return spec, out

    @property
    def code(self) -> str:
        """The generated source of every specialization so far."""
        return "\n\n".join(s.code for s in self._cache.values() if s is not _EAGER)

    def specializations(self) -> list:
        """The compiled specializations (traced graph, gradient, code) so far."""
        return [s for s in self._cache.values() if s is not _EAGER]


def compile(fn: Optional[Callable] = None, *, backend: Optional[str] = None,
            fullgraph: bool = True, dynamic: Optional[bool] = False,
            cache_limit: Optional[int] = None,
            mode: Optional[str] = None, options: Optional[dict] = None, disable: bool = False,
            name: Optional[str] = None, recompile_limit: Optional[int] = None) -> Any:
    """Compile ``fn`` (torch.compile's entry point; also usable as ``@ndgrad.compile`` or
    ``@ndgrad.compile(backend=...)``): each call traces ``fn`` once per guard key and then runs
    generated NumPy code; when outputs need gradients, their ``grad_fn`` is ONE
    ``DifferentiableGraphBackward`` node running the compiled backward.

    Args:
        backend: ``"numpy"`` (generated straight-line NumPy) or ``"numba"`` (``ndgrad[fast]``:
            runs of small float32/float64 elementwise ops in a VM compiled once, Note
            [Elementwise VM] in numba_backend.py). None: the environment variable
            ``NDGRAD_COMPILE_BACKEND`` if set (to benchmark both tiers with unchanged code),
            else ``"numpy"``.
        fullgraph: True: a function that cannot be traced raises ``ndgrad.jit.TraceError``;
            False: that kind of input runs eagerly (with a warning).
        dynamic: accepted as torch's hint; every input shape gets its own specialization
            (True runs the same way, with the same results).
        cache_limit: specializations kept before new kinds of input run eagerly
            (``recompile_limit``, torch's name, sets it too; None: ``torch._dynamo.config``'s
            ``recompile_limit``, 8 unless a program changed it; ndgrad/jit/config.py).
        mode, options, name: torch.compile's tuning arguments, checked as torch checks them
            and otherwise without effect (there is one code generator).
        disable: True returns ``fn`` itself, as torch does.

    torch's backend names (``"inductor"``, ``"eager"``, ``"aot_eager"``, ``"cudagraphs"``
    ...) select the default backend, so ``torch.compile(model, backend="inductor")`` runs. A
    module is returned as an ``nn.Module`` (``OptimizedModule``, Note [Compiled modules and
    training flags] in nn/compiled.py).

    >>> import ndgrad
    >>> f = ndgrad.compile(lambda x: x.sin() * 2)
    >>> f(ndgrad.zeros(2))
    tensor([0., 0.])
    """
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if mode not in _TORCH_MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                           + ", ".join(m for m in _TORCH_MODES if m))
    if recompile_limit is not None:
        cache_limit = recompile_limit
    if cache_limit is None:
        cache_limit = _config.config.recompile_limit
    if disable:
        return (lambda f: f) if fn is None else fn
    if backend in _TORCH_BACKENDS:
        backend = None
    if backend is None:
        backend = os.environ.get("NDGRAD_COMPILE_BACKEND") or "numpy"
    if backend not in _BACKENDS:
        raise ValueError(f"ndgrad.compile: unknown backend {backend!r}; choose one of "
                         f"{', '.join(repr(b) for b in _BACKENDS)}")
    if backend == "numba":
        from .numba_backend import available   # local import: the optional tier
        if not available():
            raise ImportError("ndgrad.compile(backend='numba') needs numba: "
                              "pip install 'ndgrad[fast]'")
    if not isinstance(cache_limit, int) or cache_limit < 0:
        raise ValueError(f"ndgrad.compile: cache_limit must be a non-negative int, got "
                         f"{cache_limit!r}")

    def wrap(f: Callable) -> Any:
        if not callable(f):
            raise TypeError(f"ndgrad.compile expects a callable, got {type(f).__name__}")
        nn_module = sys.modules.get("ndgrad.nn.modules.module")  # local import: nn if loaded
        if nn_module is not None and isinstance(f, nn_module.Module):
            from ..nn.compiled import OptimizedModule   # local import: as above
            return OptimizedModule(f, backend=backend, fullgraph=fullgraph,
                                   cache_limit=cache_limit)
        return CompiledFunction(f, backend, fullgraph, cache_limit)

    return wrap if fn is None else wrap(fn)
