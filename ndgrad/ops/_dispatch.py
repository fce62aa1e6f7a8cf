"""The op table's runtime: ``Op`` declares an operator once; ``apply`` runs it.

Note [One declaration per op]
An ``Op`` holds, together: the forward on ndarrays; the VJP rule, written with ndgrad ops on
Tensors so the same rule serves eager backward, ``create_graph=True`` and symbolic
differentiation; the JVP rule (forward mode, Note [JVP rules] in ops/_jvp.py); what it saves;
whether it returns a view. ``apply`` is the only place that turns a forward into a graph node:
grad-mode check, forward, wrap, and when any input requires grad, one node of the op's class
(``MulBackward0`` ...) with its edges, the inputs' metadata (the engine uses it to undo
broadcasting and cast dtypes, see autograd/engine.py ``_fix_gradient``) and the saved tensors.

Example:
    >>> import numpy as np, ndgrad
    >>> from ndgrad.ops._dispatch import Op, apply
    >>> square = Op("square", "PowBackward0", np.square, lambda ctx, g: 2 * g * ctx.saved[0],
    ...             saves=("self",))
    >>> x = ndgrad.tensor([3.0], requires_grad=True)
    >>> y = apply(square, (x,), (x._data,))
    >>> y.backward(); x.grad
    tensor([6.])
"""

from __future__ import annotations

import sys
import threading
import warnings
from importlib import import_module
from typing import Any, Callable, Optional, Sequence

import numpy as np

from .. import _dtype, _meta, _unsigned
from .._aligned import owns_memory as _owns_memory
from .._refcounts import SOLE_REFERENCE_TESTS
from ..autograd import anomaly_mode as _anomaly_mode
from ..autograd import batching as _batching_levels
from ..autograd import engine as _engine
from ..autograd import profiler as _profiler
from ..autograd.accumulate_grad import grad_accumulator
from ..autograd.grad_mode import _state
from ..autograd.node import SECOND_BACKWARD_MSG, OpNode, next_sequence_nr, \
    set_saved_attributes
from ..autograd.saved import SavedTensor, SavedTensorList, SavedValue, TensorList
from ..tensor import Tensor, _transform_local, _wrap
# Imported for its side effect: glibc's malloc thresholds (Note [Kernel workspace]), so that an
# eager step's large results reuse the last step's pages instead of faulting fresh ones in
# (mlp_large: ~2900 page faults per step without, ~10 with).
from . import _workspace  # noqa: F401

__all__ = ["Op", "apply", "grad_accumulator", "gradient_edge", "REGISTRY"]

REGISTRY: dict = {}
_NO_EDGE = (None, 0)
_ndarray = np.ndarray

# Note [No floating point warnings]
# PyTorch computes log(0), 1/0 or inf*0 silently; NumPy warns. A per-op np.errstate costs about
# 1.7 µs, more than a small op itself, so instead NumPy's floating point RuntimeWarnings are
# ignored when they are attributed to ndgrad's own modules (NumPy attributes them to the
# caller of the ufunc). The user's own NumPy code and NumPy's error state are unaffected.
_FP_WARNING = r"(divide by zero|invalid value|overflow|underflow) encountered"


def install_warning_filter() -> None:
    """(Re)install the filter; idempotent. Done at import; a test harness that resets the
    warning filters after importing ndgrad can call it again."""
    for f in warnings.filters:
        if f[0] == "ignore" and f[2] is RuntimeWarning and f[3] is not None and \
                f[3].pattern == r"ndgrad(\.|$)":
            return
    warnings.filterwarnings("ignore", message=_FP_WARNING, category=RuntimeWarning,
                            module=r"ndgrad(\.|$)")


install_warning_filter()
_new = object.__new__
# Floating point and complex results can carry gradients.
_DIFF_DTYPES = frozenset(d.np for d in _dtype._ALL if d.is_floating_point or d.is_complex)


class Op:
    """One operator: forward on ndarrays plus its derivative rules.

    Args:
        name: the op's name (``"mul"``).
        node: the backward node's class name (``"MulBackward0"``).
        forward: ``forward(*arrays, *args) -> ndarray`` (or a tuple for several outputs).
        vjp: ``vjp(ctx, *grads) -> grad or tuple of grads`` (one per tensor input, ``None``
            where not needed); ``ctx`` is the node: ``ctx.saved``, ``ctx.args``,
            ``ctx.needs_input_grad(i)``, ``ctx.input_shape(i)``.
        saves: names of what to save: tensor input names (see ``inputs``), ``"result"``, or
            names of non-tensor arguments (scalars PyTorch would save, e.g. ``other`` of
            ``x * 2``; released after backward like tensors). An argument given as a Tensor
            (Note [Tensor arguments]) is saved as a tensor.
        inputs: names of the tensor inputs, in order.
        args: names of the non-tensor arguments (shown as ``grad_fn._saved_<name>``).
        jvp: ``jvp(ctx, *tangents) -> tangent`` (a tuple for several outputs), the forward-mode
            rule: one tangent per tensor input (None: zero), ``ctx`` an ``ops._jvp.JvpContext``
            (``ctx.inputs``, ``ctx.result``, ``ctx._args``, ``ctx.level``). Shorthands for
            linear, elementwise, bilinear and constant ops are in ops/_jvp.py (Note [JVP
            rules]).
        view: the result is a view of the first input.
        num_outputs: number of outputs of the forward.
        pad: trailing ``(None, 0)`` edges, for Python-scalar operands that PyTorch wraps into
            tensors (``x * 2`` has two edges in PyTorch).
        differentiable: False for ops whose outputs never require grad (comparisons ...).
        save_if: per entry of ``saves``, the tensor inputs whose gradient needs that value
            (None: always saved), or a predicate ``(tensors, edges) -> bool``; a value nobody
            needs is not saved (unpacks as None). The order of ``saves`` is the order in which saved
            tensor hooks see the values: PyTorch's (``other`` before ``self`` for ``mul``).
        full_name: what ``node.name()`` returns when it differs from the class name
            (``torch::autograd::CopyBackwards``).
        raw: ``raw(ctx, g, saved) -> array or tuple of arrays (None: no gradient)``, or
            ``NotImplemented`` to leave the case to ``vjp``: the VJP on ndarrays for a plain
            backward (Note [Raw backward rules]): ``g`` the output's gradient array, ``saved``
            the saved values unpacked to arrays. Single-output ops only; it must compute what
            ``vjp`` computes, bit for bit, and never write into ``g`` or a saved array.
        raw_into: the same rule, allowed to write its result into ``g`` and return ``g``: run
            instead of ``raw`` when nothing but the engine holds the gradient (Note [Raw
            backward rules]).
    """

    __slots__ = ("save_if", "name", "node_name", "forward", "vjp", "jvp", "_saved_names",
                 "save_idx",
                 "inputs", "_arg_names", "view", "num_outputs", "pad", "differentiable",
                 "node_cls", "pad_edges", "pad_meta", "raw", "save_pairs", "raw_into",
                 "save_inputs2")

    def __init__(self, name: str, node: str, forward: Callable, vjp: Optional[Callable] = None,
                 *, saves: Sequence[str] = (), inputs: Sequence[str] = ("self",),
                 args: Sequence[str] = (), jvp: Optional[Callable] = None, view: bool = False,
                 num_outputs: int = 1, pad: int = 0, differentiable: bool = True,
                 full_name: Optional[str] = None, save_if: Optional[Sequence] = None,
                 raw: Optional[Callable] = None, raw_into: Optional[Callable] = None) -> None:
        self.name = name
        self.node_name = node
        self.forward = forward
        self.vjp = vjp
        self.jvp = jvp
        self.inputs = tuple(inputs)
        self._arg_names = tuple(args)
        self._saved_names = tuple(saves)
        # >= 0: tensor input; -1: the result; <= -2: non-tensor argument -2 - index.
        self.save_idx = tuple(-1 if s == "result" else self.inputs.index(s) if s in self.inputs
                              else -2 - self.arg_names.index(s) for s in saves)
        # Per saved value, the inputs whose gradient needs it (None: always saved). PyTorch
        # saves ``self`` of ``a * b`` only if ``b`` needs a gradient: ``y * c; y.add_(1)``
        # must then still backpropagate.
        self.save_if = (tuple(c if c is None or callable(c) else tuple(c) for c in save_if)
                        if save_if is not None else None)
        # The common save_if (mul, mm): each tensor input saved iff one other input has an
        # edge, as (input index, edge index) pairs for _record's short path.
        self.save_pairs = (tuple((i, c[0]) for i, c in zip(self.save_idx, self.save_if))
                           if self.save_if is not None and all(
                               type(c) is tuple and len(c) == 1 and i >= 0
                               for i, c in zip(self.save_idx, self.save_if)) else None)
        # Two tensor inputs saved always (save_if None): _record's short path.
        self.save_inputs2 = (self.save_idx if self.save_if is None and len(self.save_idx) == 2
                             and min(self.save_idx) >= 0 else None)
        self.view = view
        self.num_outputs = num_outputs
        self.pad = pad
        self.pad_edges = (_NO_EDGE,) * pad
        self.pad_meta = (None,) * pad
        self.differentiable = differentiable and vjp is not None
        self.raw = raw
        self.raw_into = raw_into
        attrs = {"_op": self, "__module__": "ndgrad.autograd"}
        if raw is not None:
            attrs["apply"] = _raw_apply
        if full_name is not None:
            attrs["_full_name"] = full_name
        self.node_cls: Any = type(node, (OpNode,), attrs)   # an OpNode subclass
        set_saved_attributes(self.node_cls, self._saved_names, self._arg_names)
        REGISTRY.setdefault(name, []).append(self)

    # Note [Saved attributes as descriptors] (autograd/node.py): the node class's
    # ``_saved_<name>`` properties follow these names.
    @property
    def saved_names(self) -> tuple:
        """Names of the saved values (``grad_fn._saved_<name>``)."""
        return self._saved_names

    @saved_names.setter
    def saved_names(self, names: Sequence[str]) -> None:
        self._saved_names = tuple(names)
        set_saved_attributes(self.node_cls, self._saved_names, self._arg_names)

    @property
    def arg_names(self) -> tuple:
        """Names of the non-tensor arguments (``grad_fn._saved_<name>``)."""
        return self._arg_names

    @arg_names.setter
    def arg_names(self, names: Sequence[str]) -> None:
        self._arg_names = tuple(names)
        set_saved_attributes(self.node_cls, self._saved_names, self._arg_names)

    def __repr__(self) -> str:
        return f"Op({self.name!r}, {self.node_name!r})"


# Note [Raw backward rules]
# A rule written with ndgrad ops (``g * x.cos()``) pays for a dispatch, a Tensor and a dtype
# check per op inside it: ~1 µs each, where NumPy needs ~0.25. When nothing can observe the
# rule's inner ops, the node runs the op's ``raw`` rule on arrays instead: grad mode off (no
# create_graph), no batched backward, forward AD, tracing or profiling (each of which sees or
# replaces the inner ops), the gradient a plain Tensor of float32/float64 and every saved array
# of that same dtype (so NumPy's promotion is PyTorch's: no mixed-dtype operands). Saved values
# are unpacked as ``unpack`` does (version check, the error after release); a value packed by
# saved tensor hooks sends the node to the Tensor rule (its unpack hook runs once). Anything
# else runs the Tensor rule, which stays the definition (create_graph, jit, vmap): the raw rule
# computes the same values with the same NumPy calls, may reuse temporaries it made (``out=``)
# but never writes into ``g`` or a saved array. Returning ``g`` itself (the very array) passes
# the gradient through: the node then returns the incoming Tensor object, as the Tensor rule
# of add does, so AccumulateGrad's steal test (the Tensor's reference count, Note
# [AccumulateGrad: steal, clone or add]) sees every holder; any other array is wrapped in a new
# Tensor, so it must be new: never a fresh wrapper around ``g``'s array, nor a view of ``g``
# where the Tensor rule returns no view (sum's broadcast view stands for its ``expand``). Two
# outputs that meet in one input buffer may be summed by the rule itself (``x * x``: the sum
# on one edge, None on the other), which is what the engine's buffer would hold.
#
# A rule may also come as ``raw_into``, which writes its result into ``g``'s array and returns
# it (relu's backward: a 4 MB gradient of mlp_large masked where it lies, no new array). It
# runs when nothing but the engine can reach that array: the Tensor ``g`` is referenced only by
# the engine's input list (a hook that kept it, a retained or captured gradient, a post hook's
# copy of the inputs, the root's seed all add references), its array only by that Tensor, and
# the array owns its memory (no view whose base someone else holds) and is writeable. This is
# AccumulateGrad's steal test (Note [AccumulateGrad: steal, clone or add]) applied to the
# array as well.
_RAW_DTYPES = frozenset((np.dtype(np.float32), np.dtype(np.float64)))
_getrefcount = sys.getrefcount
# References when only the engine holds the gradient: the engine's input list, the local name
# here and getrefcount's argument (the Tensor); the Tensor's ``_data``, the local name and the
# argument (the array).
# Below any possible count when the interpreter's counts are not the ones verified (Note
# [Sole-reference tests] in ndgrad/_refcounts.py): then nothing is written in place.
_G_REFS = 3 if SOLE_REFERENCE_TESTS else -8
_D_REFS = 3 if SOLE_REFERENCE_TESTS else -8
# Below this many elements ``out=`` costs more than the allocation it saves (as _mul_into's).
_INTO_MIN_SIZE = 16384
_op_node_apply = OpNode.apply
_SavedTensor = SavedTensor


def _raw_apply(self: Any, grads: list) -> tuple:
    g = grads[0]
    if (g is None or _state.enabled or g.__class__ is not Tensor or _BATCHING or _FW_AD
            or _TRACING or _PROFILING or (_META and g._data.__class__ is _MetaArray)):
        # (meta tensors: the Tensor rule, whose ops keep results meta; Note [Meta arrays])
        return _op_node_apply(self, grads)
    d = g._data
    dt = d.dtype
    if dt not in _RAW_DTYPES:
        return _op_node_apply(self, grads)
    sv = self._saved
    if sv.__class__ is not tuple:       # RELEASED (empty) is a tuple subclass
        raise RuntimeError(SECOND_BACKWARD_MSG)
    if sv:
        n = len(sv)
        if n == 1:
            s = sv[0]
            # SavedTensor.unpack_data inlined for a plain saved tensor (no hooks, not released,
            # version unchanged); anything else asks unpack_data (which raises its errors)
            t = s._tensor if s.__class__ is _SavedTensor and s._unpack_hook is None else None
            vc = t._version_counter if t is not None else None
            v = (t._data if t is not None and (vc is None or vc[0] == s._version)
                 else s.unpack_data(self))
            if (v.dtype is not dt) if v.__class__ is _ndarray else v is NotImplemented:
                return _op_node_apply(self, grads)
            vals: tuple = (v,)
        elif n == 2:
            # unrolled: a comprehension is a frame of its own in this Python (Note [Per-op cost])
            s, s2 = sv
            t = s._tensor if s.__class__ is _SavedTensor and s._unpack_hook is None else None
            vc = t._version_counter if t is not None else None
            v = (t._data if t is not None and (vc is None or vc[0] == s._version)
                 else s.unpack_data(self))
            t = s2._tensor if s2.__class__ is _SavedTensor and s2._unpack_hook is None else None
            vc = t._version_counter if t is not None else None
            w = (t._data if t is not None and (vc is None or vc[0] == s2._version)
                 else s2.unpack_data(self))
            if ((v.dtype is not dt) if v.__class__ is _ndarray else v is NotImplemented) or \
                    ((w.dtype is not dt) if w.__class__ is _ndarray else w is NotImplemented):
                return _op_node_apply(self, grads)
            vals = (v, w)
        else:
            vals = tuple([s.unpack_data(self) for s in sv])
            for v in vals:
                if (v.dtype is not dt) if v.__class__ is _ndarray else v is NotImplemented:
                    return _op_node_apply(self, grads)
    else:
        vals = ()
    op = self._op
    if (op.raw_into is not None and d.size >= _INTO_MIN_SIZE and _getrefcount(g) <= _G_REFS
            and _getrefcount(d) <= _D_REFS and (d.base is None or _owns_memory(d))
            and d.flags.writeable):
        out = op.raw_into(self, d, vals)
    else:
        out = op.raw(self, d, vals)
    res: tuple
    if out.__class__ is tuple:
        if len(out) == 2:
            o, p = out
            # _wrap inlined for the usual new arrays
            if o is None or o is d:
                o = None if o is None else g
            elif o.__class__ is _ndarray:
                r = _new(Tensor)
                r._data = o
                if _TRANSFORM:
                    r._tborn = _transform_local.tid
                o = r
            else:
                o = _wrap(o)
            if p is None or p is d:
                p = None if p is None else g
            elif p.__class__ is _ndarray:
                r = _new(Tensor)
                r._data = p
                if _TRANSFORM:
                    r._tborn = _transform_local.tid
                p = r
            else:
                p = _wrap(p)
            res = (o, p)
        else:
            res = tuple([None if o is None else g if o is d else _wrap(o) for o in out])
    elif out is d:
        res = (g,)
    else:
        if out.__class__ is not _ndarray:
            if out is NotImplemented:        # the rule declined: the Tensor rule runs
                return _op_node_apply(self, grads)
            if out.__class__ is not _MetaArray:
                out = np.asarray(out)
        r = _new(Tensor)
        r._data = out
        if _TRANSFORM:
            r._tborn = _transform_local.tid
        res = (r,)
    pad = op.pad_meta
    return res + pad if pad else res


def gradient_edge(t: Tensor) -> tuple:
    """``(node, input_nr)`` through which ``t``'s gradient flows (``(None, 0)`` if none)."""
    return _edge(t)


# Note [Instrumentation flags]
# Anomaly mode (autograd/anomaly_mode.py) and the profiler (autograd/profiler.py) must cost
# nothing measurable when off, so the hot path reads one plain module global each: ``apply``
# checks ``_PROFILING`` (then ``_prof_apply`` records the op, or returns ``_prof_skip`` and the
# op runs unrecorded), ``_new_node`` checks ``_ANOMALY`` (then ``_anomaly_record`` stores the
# forward stack on the node). The modes belong to the runtime, a layer below, which must not
# import the op table (Note [Layers] in autograd/__init__.py): so this module registers setters
# with them at import (bottom of this file) and they call them on every switch. Nothing else
# should set these names.
_PROFILING = False
_prof_apply = _profiler._prof_apply
_prof_skip = _profiler._SKIP
_ANOMALY = False
_anomaly_record = _anomaly_mode.record
# True while a batched backward runs (Note [Batched backward], autograd/batching.py); then
# ``_batched_apply`` (ops/_batching.py) takes calls with batched inputs, else returns None.
_BATCHING = False
_batched_apply: Any = None
# True while a forward AD level exists (Note [Forward AD], autograd/forward_ad.py): then
# ``_fw_apply`` gives the outputs of ``apply`` their tangents, and ``apply_inplace``
# (ops/views_inplace.py) wraps its op with ``_fw_inplace`` so that tangents are updated in place.
_FW_AD = False
_fw_apply: Any = None
_fw_inplace: Any = None
# True while some thread traces a function into a graph (Note [Tracing] in jit/tracer.py): then
# ``_trace_record`` sees every op's forward result (and returns it as ndarrays), and
# ``apply_inplace`` wraps its op with ``_trace_inplace`` (functionalization). Set only through
# ``set_tracing``.
_TRACING = False
_trace_record: Any = None
_trace_inplace: Any = None
# How many grad/vjp/jvp transform calls are live in all threads; results are stamped with the
# running thread's innermost one (``_transform_local.tid``; Note [Captured tensors] in
# ops/views_inplace.py). Kept only by ``enter_transform``/``exit_transform``.
_TRANSFORM = 0
# Note [Barebones unsigned dtypes] (_dtype.py): off until a uint16/32/64 tensor is first made.
_UNSIGNED = False


def _set_unsigned() -> None:
    global _UNSIGNED
    _UNSIGNED = True


_dtype.UNSIGNED_WATCHERS.append(_set_unsigned)
# Note [Meta arrays] (_meta.py): off until a meta tensor is first made.
_META = False


def _set_meta() -> None:
    global _META
    _META = True


_meta.WATCHERS.append(_set_meta)
_MetaArray = _meta.MetaArray
_transform_lock = threading.Lock()
_tensor_module: Any = import_module("ndgrad.tensor")  # ndgrad.tensor is also a function


# Note [Per-op cost]
# The budget of one small op, ``sin`` of a (16,) float32 tensor that requires grad, and of its
# backward node, in ns (``python bench/per_op_cost.py``: minimum of short rounds in 3 fresh
# processes, on this project's 2-core VM, loaded by other jobs (load average ~10),
# 2026-11-27, session 22; session 21's budget, same script, in brackets):
#
#   forward   NumPy kernel np.sin                                      240   (241)
#             apply: flags, forward call, wrap (no grad)               400   (367)
#             op function (dtype check) + signature wrapper            144   (124)
#             recording: node, edges, input metadata                   472   (437)
#             saving one tensor (SavedTensor)                          148   (147)
#             a leaf's new AccumulateGrad (per leaf and step)          336   (325)
#   backward  raw rule on arrays: np.cos, np.multiply                  551   (565)
#             the node around it: checks, unpack, wrap (*)             749   (750)
#             engine per node: count, validate, buffer, schedule       629   (830)
#             AccumulateGrad, first gradient stolen                    589   (605)
#             ``(w * w).sum().backward()``, the whole backward         15680 (15200)
#               (its entry through ``autograd.backward``: 17468)
#   create_graph: the Tensor rule recording its two ops              +2520 (+2465)
#
# (the forward lines moved within this machine's noise; in the same minute session 21's code
# gave 411/128/477 for them, and 855 for the engine per node). Session 22's cuts: nodes have
# no ``__getattr__`` any more (Note [Saved attributes as descriptors] in autograd/node.py):
# with it CPython did not specialise any attribute load on a node (18 ns against 9.7 for
# ``node._saved``, ``node._op`` ...), which the engine and the raw rules make a few dozen times
# per node; binary raw rules ask ``needs_input_grads()`` once for both operands; the node's
# two saved values, its two gradients (``_raw_apply``), mul's and mm's two saves (``_record``)
# and ``OpNode.saved`` are handled without list comprehensions (each is a frame of its own on
# Python 3.11, ~0.3 µs); mm's ``g @ W.T`` for a few dozen rows copies ``g`` column-major first
# (Note [Small NT products] in ops/linalg.py: 11.4 -> 6.2 µs for mlp_small's 32x128 @ 128x128,
# and that product no longer goes to OpenBLAS's second thread, which on a loaded machine
# stalled whole steps for milliseconds). Step times (load ~7-13; /tmp scripts mirroring the
# shared bench's step; one thread: CPU time of the thread or best of 300 rounds of 10 steps):
# mlp_small's step 131-134 µs best against 141-142 for session 21's code in the same minutes,
# its backward 81-85 µs (p10) against 91-95, its forward 37-39 unchanged; torch's step on one
# thread 147-150 best (CPU time). On 2 threads (wall time, 100 rounds of 10 steps at load ~13):
# ndgrad 132-134 best, 137-141 p25, 145-150 median; torch 137-140 best, 144-147 p25, 2.6-4 ms
# median (its threads stall at that load); session 21's code 141-143 best, 3-55 ms median.
# double_backward ~310-320 µs min, unchanged within noise (torch ~390 on one thread: it wins
# only with its second thread). Where the rest of mlp_small goes: attribute loads of class
# defaults on Tensors and nodes (``t._grad_fn``, ``node._has_hooks``: ~10-11 ns against ~4 for
# an instance's own attribute, a few hundred per step), and ~5 µs per backward of a fresh graph
# that a retained graph run again does not pay (12.4 against 8.6 µs for ``(w * w).sum()``,
# same code path, not the garbage collector: not found).
#
# Session 23, double_backward (the shared bench's gradient penalty: ``g = grad(sum(tanh(x @ W)),
# x, create_graph=True)``, then ``sum(g * g).backward()`` into W and x): why the harness put
# ndgrad ~4% behind torch (0.259 against 0.250 ms) when the pieces timed one by one were ahead.
# On one thread ndgrad's step is the faster one (CPU time, medians, load 5-11: ndgrad 315-330
# µs, torch 355-410): its six 64x128x128 float64 products take ~28 µs each with OpenBLAS
# against ~45 with torch's MKL on this AMD CPU, and np.tanh 7 µs against torch's 33. A second
# thread takes the products to ~17 µs (OpenBLAS) and torch's to ~30 with its tanh to ~20:
# torch gains 110-160 µs from it, ndgrad ~66, as ~100 µs of ndgrad's step is single-threaded
# Python (the ops' dispatch and nodes, the engine) and ~40 NumPy element-wise passes. So a
# quiet 2-thread run (what the harness measures) shows ndgrad behind, a loaded one or one
# thread ahead; last session's pieces were timed on a loaded machine. Not it: the garbage
# collector (``gc.disable()`` moves the step by < 1 µs; ~190 tracked objects per step), page
# faults (none per step), the adapter's ``t.grad = None`` and returned arrays (~5 µs, the
# same for both). Under load (average 5-11) the medians of both are 100-300 ms in a third of
# the runs: a BLAS second thread (OpenBLAS's, torch's OpenMP) descheduled while the other
# waits; compare minima or CPU time there. Cuts: multiplying by a sum's broadcast 1.0 seed
# skipped (Note [Multiplying by a broadcast one] in ops/pointwise.py: three passes fewer);
# two gradients meeting in a buffer summed into the first one's array (Note [Buffer sums in
# place] in autograd/engine.py: W's two gradients); TBackward0 runs a raw rule (``g.T``);
# tanh_backward's two saves without ``_saved_values``; ``grad()`` of a 0-d loss skips its
# argument handling (autograd/api.py); AccumulateGrad adds a later gradient without
# ``_accumulate``'s frame; mm's Tensor rule calls ``conj()`` only for complex operands.
# One thread, CPU time of the main thread, 3000 steps, 4 alternating process pairs, load 8-11:
# step median 314-325 µs against 325-332 before, minimum 296-305 against 309-311.
# Tried and left: a GEMM with beta=1 into the buffer (SciPy's dgemm) for those two sums: SciPy
# links its own OpenBLAS build (0.3.30, 32-bit integers) next to NumPy's (0.3.31, ILP64), so
# bits could differ from the unfused product, and the raw rule would need the buffer (~5 µs).
#
# Session 24, the same workload. Where its Python goes (``python bench/per_op_cost.py``, its
# ``penalty:`` lines: the step on a 4x8 input and 8x8 weight, so that NumPy's kernels are a few
# hundred ns; fastest of 400 steps, 3 processes, one thread, load 10-12, ns; session 23's code
# in brackets, same minutes):
#
#   forward   x @ W, tanh, sum (3 recorded ops, 2 new leaf accumulators)   11607  (11747)
#   grad      grad(s, [x], create_graph=True): 3 nodes, 3 recorded ops     32950  (37896)
#   gg        (g * g).sum()                                                  7181   (7351)
#   backward  loss.backward(): 9 nodes, 2 of them leaves                   43966  (44316)
#             total                                                         95704 (101310)
#
# i.e. ~10.5k bytecodes and ~170 Python calls per step (a tracer's counts: ~9 ns per bytecode
# on average here, calls and allocations included); no single line above ~3 µs. Inside ``grad``
# (perf_counter marks): the call through the torch-function wrapper and grad's checks ~4 µs,
# the graph analysis (dependencies with parents, ancestors of x, counts) ~5, the scheduling
# loop ~7, the three nodes' rules ~21; inside the backward: entry and dependency walk ~6, loop
# ~13, the seven op nodes ~27, the two accumulators ~3.5. At 64x128 (one thread) the six
# products are ~26.5 µs each on every BLAS form (NN, NT, TN, and the transposed variants:
# within 1 µs of each other; ~15.5 on two threads), np.tanh ~7-10, the element-wise passes
# ~1.2 each. Cuts: ``grad(loss, x)`` over a chain of op nodes to one leaf runs without the
# general analysis and loop (Note [Chain to one leaf] in autograd/engine.py: -5 µs of the
# ``grad`` line); the backward through tanh reuses the ``1 - y*y`` tanh's create_graph backward
# made (Note [Reusing tanh's 1 - y*y] in ops/pointwise.py: two passes, ~2.5 µs at 64x128);
# raw rules unpack their saved tensors and wrap two results inline; ``_record`` makes a binary
# op's edges inline; graph tasks are built without ``__init__`` and carry the checkpoint flag
# (two thread-local accesses fewer per backward); the one-input analysis has no loops; the
# torch-function wrapper's fast path takes lists and keywords of plain values (``grad(loss,
# [x], create_graph=True)`` skipped it); AccumulateGrad's in-place add tests the usual layout
# inline; mm's raw rule tests a layout with one flags object. One thread, CPU time, the
# harness's step, alternating processes, load 5-10: double_backward 301-331 µs median against
# 320-347 (-5%); chain, mlp_small, hessian, hessian_vec unchanged within the noise (+-2%).
# The harness (``peers.py --workloads double_backward``, 2 threads, load 4-5, never quiet this
# session; cells where torch's OpenMP threads stalled, 100+ ms medians, left out): ndgrad
# 0.235-0.242 ms median (0.223-0.228 min) against session 23's code 0.249-0.250 (0.232-0.238)
# in the same minutes, torch 0.241-0.247; ratios 0.95-0.98 in those cells, and 0.92-0.97 in a
# 3-round run where both were slower (0.345-0.350 against 0.355-0.379). Not confirmed <= 0.95
# in a quiet run. What is left: the backward's 9 nodes (~27 µs of rules, ~13 of loop, ~6 of
# entry and dependency walk at load), each recorded op ~3-4 µs, and on two threads the six
# products (~93 µs) against a Python part that does not shrink with the second thread.
# Tried and dropped: zipping the input metadata into the engine's edge loop (more bytecodes
# than the index it saves); a raw rule for a create_graph node whose gradient needs no grad
# (sum's seed): its Tensor rule's result is a view of the seed, which hooks and saved-tensor
# version checks can see, so the raw rule's plain Tensor would change what they see.
#
# (*) includes ~250 of the measurement's own grad-mode switch and list. Session 21 cut the
# entry and the leaves: ``loss.backward()`` of a 0-d loss skips ``backward``'s argument
# handling, and a node that feeds only leaves (a compiled function's one node) runs with its
# accumulators without the dependency walk, heap or buffers (Note [Lean backward entry] in
# autograd/engine.py); a single root starts as the engine's direct node; the dependency walk
# does not walk AccumulateGrad nodes; a leaf's AccumulateGrad is made without its __init__ frame
# and its steal test takes the lock without a with block; a full sum's backward and expand
# build np.broadcast_to's view directly (``broadcast_view`` in ops/shape.py: ~0.55 µs against
# ~1.8); the compiled node takes a single incoming gradient without per-list work. Where the
# time of a step goes (one thread, CPU time of the thread, machine at load ~7, medians of 30
# rounds): mlp_small 146-154 µs eager (151-165 before), of which a NumPy-only step with the
# same ops takes 55 (forward 21, backward 33): ~95 µs are ndgrad's, ~2.3 µs per forward op and
# ~3 per backward node; its compiled step (``ndgrad.compile``, one node) 76-80 µs (91-92
# before), of which the generated forward and backward take 19.5 and 34; double_backward
# ~330 µs (unchanged within noise), GEMM-bound (6 float64 64x128x128 products).
# BLAS threads: on an idle core pair OpenBLAS runs a 64x128x128 float64 product in ~17 µs on 2
# threads and ~26 on one, so a single-threaded switch for eager's small products (as
# Note [Single-threaded small GEMMs] in jit/blas_threads.py does for generated code, ~0.4 µs
# per switch) would slow double_backward down on a quiet machine; on a loaded one the 2-thread
# products take 70-180 µs (they wait for the second thread), which is what makes eager steps
# erratic there. mlp_small's float32 products run one thread either way, except
# ``g @ W.t()`` (OpenBLAS's NT form: 11.7 µs on one thread against 5.3 for the same product
# with ``g`` copied to column-major first, the TT form; 6.2 for x @ W; what backward now does,
# Note [Small NT products]).
# Session 20's cuts: raw rules for add and sub (a bias's gradient summed in the rule, no
# dispatch) and for adding or subtracting a scalar; a raw rule may pass ``g`` through (the node
# hands on the same Tensor) and may come as ``raw_into``, written into a gradient only the
# engine holds (relu's and tanh's backward: no new array); ``x * x`` sums its two gradients in
# place; mean's backward divides before it broadcasts; leaves' AccumulateGrad nodes run as
# soon as their producer has handed on its outputs, so an MLP's backward is a chain with no
# heap; mm's gradient of a column-major operand (``W.t()``) comes out column-major, as
# PyTorch's (Note [Gradient layout of mm] in ops/linalg.py), so a gradient penalty's two
# gradients of W sum in order (the mixed-layout sum was ~14 µs); glibc's malloc thresholds are
# set when the op table loads (Note [Kernel workspace]): mlp_large's step faulted ~2900 fresh
# pages in (4 KB each, 2-8 ms of system time) and now ~10.
# An elementwise op's forward plus backward is thus ~3.5-4 µs, of which ~0.8 µs is NumPy;
# PyTorch spends ~4.6 µs on the same (the shared bench's chain). What keeps it there: one plain
# module flag per instrumentation (Note [Instrumentation flags]); the forward called without
# star-args when an op has no arguments; ``_record`` building the node, its edges and metadata
# and the common saves (one value; mul's and mm's save_if pairs) inline; saved values packed
# only when a saved-tensor hook is active; backward rules on raw ndarrays when nothing can
# observe their inner ops (Note [Raw backward rules]); the engine's loop (Note [Engine fast
# loop] in autograd/engine.py) with one count lookup per edge, input lists built when a node's
# only gradient arrives, no heap for chains, a dependency pass without sets for one root;
# AccumulateGrad's inline steal; operator fast paths (Note [Operator fast paths] in
# _tensor_methods.py) for same-dtype tensors, Python and NumPy float scalars (cached 0-d
# arrays, one dict per dtype), matrix @ matrix/vector. Higher order: rules that skip gradients
# nobody asked for (Note [Pruned backward] in autograd/node.py: one GEMM of mm's two in a
# gradient penalty; add/sub skip the other operand's), a full sum's backward as one expand (no
# unsqueezes, no argument checks), mv's backward as one mv, Jacobian rows seeded one-hot with
# the graph analysis shared by all rows (autograd/functional.py, ``run_backward``'s plan).
# Where the rest goes: Python calls (~50-100 ns each; a recorded op is ~20 of them, mlp_small's
# step ~570), Tensor and node instance dicts, the thread-local grad mode read on every op, and
# the cyclic garbage collector (the live graph of each step is promoted through the
# generations; ~2-3% of mlp_small's step).
def apply(op: Op, tensors: tuple, arrays: tuple, args: tuple = ()) -> Any:
    """Run ``op`` on ``tensors`` (whose data, possibly cast, is ``arrays``) and record it."""
    if _BATCHING:
        res = _batched_apply(op, tensors, arrays, args)
        if res is not None:
            return res
    if _PROFILING:
        res = _prof_apply(op, tensors, arrays, args)
        if res is not _prof_skip:
            return res
    if _UNSIGNED:
        _unsigned.check(op.name, arrays, args, op.node_name)
    if _META:
        out = _meta_forward(op, tensors, arrays, args)
    else:
        out = op.forward(*arrays, *args) if args else op.forward(*arrays)
    if _TRACING:
        out = _trace_record(op, tensors, arrays, args, out)
    if op.num_outputs == 1:
        if type(out) is not _ndarray and type(out) is not _MetaArray:
            out = np.asarray(out)
        result = _new(Tensor)
        result._data = out
        if _TRANSFORM:
            result._tborn = _transform_local.tid
        if _state.enabled:
            if op.differentiable:
                for t in tensors:
                    # A view whose base was modified in place refreshes its history first.
                    if t._requires_grad or (t._base is not None and refresh_view(t)):
                        if out.dtype in _DIFF_DTYPES:
                            _record(op, tensors, result, args)
                        break
        elif _state.inference and not op.view:
            result._inference = True
        if op.view:
            record_view(result, tensors[0], op, args, None)
        if _FW_AD:
            _fw_apply(op, tensors, (result,), args)
        return result
    results = tuple(_wrap(o) for o in out)
    if _state.enabled:
        if op.differentiable:
            for t in tensors:
                if t._requires_grad or (t._base is not None and refresh_view(t)):
                    _record_multi(op, tensors, results, args)
                    break
    elif _state.inference and not op.view:
        for r in results:
            r._inference = True
    if op.view:
        for i, r in enumerate(results):
            record_view(r, tensors[0], op, args, i)
    if _FW_AD:
        _fw_apply(op, tensors, results, args)
    return results


def _edge(t: Tensor) -> tuple:
    if t._base is not None:
        refresh_view(t)
    fn = t._grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    if t._requires_grad:
        return (grad_accumulator(t), 0)
    return _NO_EDGE


def _new_node(op: Op, tensors: tuple, args: tuple) -> OpNode:
    node = op.node_cls()
    node._sequence_nr = next_sequence_nr()
    edges: tuple
    meta: tuple
    if len(tensors) == 1:
        t = tensors[0]
        d = t._data
        edges = (_edge(t),)
        meta = ((d.shape, d.dtype),)
    else:
        edges = tuple([_edge(t) for t in tensors])
        meta = tuple([(t._data.shape, t._data.dtype) for t in tensors])
    if op.pad:
        edges += op.pad_edges
        meta += op.pad_meta
    node.next_functions = edges
    node._input_meta = meta
    if args:
        node._args = args
    if _ANOMALY:
        _anomaly_record(node)
    return node


# Note [Tensor arguments]
# A tensor operand that gets no gradient (where's condition, masked_fill's mask, gather's index,
# the indices max(dim) returns) is passed among the non-tensor ``args`` as the Tensor itself; the
# op's forward reads its ``_data``. Naming it in ``saves`` saves it like PyTorch does: checked
# against in-place changes at unpack, and seen by saved tensor hooks. A variable number of them
# (the index tensors of ``x[idx]``) is passed as one ``TensorList``, saved tensor by tensor.
def _save(i: int, tensors: tuple, result: Tensor, args: tuple) -> Any:
    if i >= 0:
        return SavedTensor(tensors[i])
    if i == -1:
        return SavedTensor(result, True, 0)
    v = args[-2 - i]
    t = type(v)
    if t is Tensor:
        return SavedTensor(v)
    return SavedTensorList(v) if t is TensorList else SavedValue(v)


def _record(op: Op, tensors: tuple, result: Tensor, args: tuple) -> None:
    # _new_node, _edge and _save inlined for the common cases (Note [Per-op cost]).
    node = op.node_cls()
    node._sequence_nr = next_sequence_nr()
    edges: tuple
    meta: tuple
    if len(tensors) == 1:
        t = tensors[0]
        if t._base is not None:
            refresh_view(t)
        fn = t._grad_fn
        if fn is not None:
            edges = ((fn, t._output_nr),)
        elif t._requires_grad:
            edges = ((grad_accumulator(t), 0),)
        else:
            edges = (_NO_EDGE,)
        d = t._data
        meta = ((d.shape, d.dtype),)
    elif len(tensors) == 2:
        a, b = tensors
        da, db = a._data, b._data
        # _edge inlined for the usual operands: no views, a history or a leaf's accumulator
        if a._base is None:
            fn = a._grad_fn
            ea = ((fn, a._output_nr) if fn is not None else (grad_accumulator(a), 0)
                  if a._requires_grad else _NO_EDGE)
        else:
            ea = _edge(a)
        if b._base is None:
            fn = b._grad_fn
            eb = ((fn, b._output_nr) if fn is not None else (grad_accumulator(b), 0)
                  if b._requires_grad else _NO_EDGE)
        else:
            eb = _edge(b)
        edges = (ea, eb)
        meta = ((da.shape, da.dtype), (db.shape, db.dtype))
    else:
        edges = tuple([_edge(t) for t in tensors])
        meta = tuple([(t._data.shape, t._data.dtype) for t in tensors])
    if op.pad:
        edges += op.pad_edges
        meta += op.pad_meta
    node.next_functions = edges
    node._input_meta = meta
    if args:
        node._args = args
    if _ANOMALY:
        _anomaly_record(node)
    # History first: a pack hook sees a saved output with its grad_fn, as in PyTorch.
    result._grad_fn = node
    result._requires_grad = True
    idx = op.save_idx
    if idx:
        if op.save_if is None and len(idx) == 1:
            i = idx[0]
            if i >= 0:
                node._saved = (SavedTensor(tensors[i]),)
            elif i == -1:
                node._saved = (SavedTensor(result, True, 0),)
            else:
                node._saved = (_save(i, tensors, result, args),)
        elif op.save_inputs2 is not None:
            # two tensor inputs saved unconditionally (tanh_backward's grad_output and output)
            i, j = op.save_inputs2
            node._saved = (SavedTensor(tensors[i]), SavedTensor(tensors[j]))
        elif op.save_pairs is not None:
            pairs = op.save_pairs
            if len(pairs) == 2:     # mul, mm: unrolled (a comprehension is a frame of its own)
                (i, k), (j, m) = pairs
                node._saved = (SavedTensor(tensors[i]) if edges[k][0] is not None
                               else _NOT_SAVED,
                               SavedTensor(tensors[j]) if edges[m][0] is not None
                               else _NOT_SAVED)
            else:
                node._saved = tuple([SavedTensor(tensors[i]) if edges[k][0] is not None
                                     else _NOT_SAVED for i, k in pairs])
        else:
            node._saved = _saved_values(op, node, tensors, result, args)


def _saved_values(op: Op, node: Any, tensors: tuple, result: Tensor, args: tuple) -> tuple:
    if op.save_if is None:
        return tuple([_save(i, tensors, result, args) for i in op.save_idx])
    edges = node.next_functions
    out = []
    cond: Any   # None, a tuple of input indices, or a predicate (Op.save_if)
    for i, cond in zip(op.save_idx, op.save_if):
        if cond is None:
            keep = True
        elif type(cond) is tuple:
            keep = False
            for k in cond:
                if edges[k][0] is not None:
                    keep = True
                    break
        else:
            keep = cond(tensors, edges)
        out.append(_save(i, tensors, result, args) if keep else _NOT_SAVED)
    return tuple(out)


_NOT_SAVED = SavedValue(None)   # a value no needed gradient uses (see Op.save_if)


def _record_multi(op: Op, tensors: tuple, results: tuple, args: tuple) -> None:
    node = _new_node(op, tensors, args)
    # Only differentiable outputs are inputs of the node (max(dim): values, not indices).
    diff = [r for r in results if r._data.dtype in _DIFF_DTYPES]
    node._num_inputs = len(diff)
    node._output_meta = tuple((r._data.shape, r._data.dtype) for r in diff)
    for i, r in enumerate(diff):
        r._grad_fn = node
        r._requires_grad = True
        r._output_nr = i
    if op.save_idx:   # after the history, as in _record
        node._saved = _saved_values(op, node, tensors, results[0], args)


# Bound by ops/views_inplace.py when it is imported (it imports this module).
record_view: Any = None
refresh_view: Any = None


# ---------------------------------------------------------------------------- registration
# Note [Instrumentation flags]: the runtime's modes switch the dispatcher's flags.
def _set_anomaly(mode: bool) -> None:
    global _ANOMALY
    _ANOMALY = mode


def _set_profiling(flag: bool) -> None:
    global _PROFILING
    _PROFILING = flag


def set_tracing(record: Any, inplace: Any) -> None:
    """Install (or with None, remove) the tracer's hooks (Note [Tracing] in jit/tracer.py)."""
    global _TRACING, _trace_record, _trace_inplace
    _trace_record, _trace_inplace = record, inplace
    _TRACING = record is not None
    _engine.set_tracing(_TRACING)     # Note [Buffer sums in place]: the tracer sees the sums


def enter_transform(tid: int) -> int:
    """Enter the grad/vjp/jvp transform call ``tid`` (> 0) in this thread (Note [Captured
    tensors] in ops/views_inplace.py); returns the thread's enclosing call, for
    ``exit_transform``."""
    global _TRANSFORM
    prev = _transform_local.tid
    with _transform_lock:
        _TRANSFORM += 1
        _tensor_module._TRANSFORM = _TRANSFORM
    _transform_local.tid = tid
    return prev


def exit_transform(prev: int) -> None:
    """Leave this thread's innermost transform call; ``prev`` is ``enter_transform``'s result."""
    global _TRANSFORM
    _transform_local.tid = prev
    with _transform_lock:
        _TRANSFORM -= 1
        _tensor_module._TRANSFORM = _TRANSFORM


def _set_batching(flag: bool) -> None:
    global _BATCHING
    _BATCHING = flag


_anomaly_mode.watch(_set_anomaly)
_profiler.attach(apply, _set_profiling)
_batching_levels.watch(_set_batching)


# Note [Meta arrays] (_meta.py): the ops that need values torch's meta kernels do not have, and
# its error for each (the default: no meta kernel registered).
_META_NONZERO = (
    "The register_meta function for torch.nonzero() raises unimplemented by default, as a "
    "correct data-independent implementation does not exist. This implementation returns a "
    "fake value, assuming all elements of the tensor are non-zero. To enable this "
    "registration, please set "
    "'torch.fx.experimental._config.meta_nonzero_assume_all_nonzero' to True.")
_META_REFUSED = {"nonzero": _META_NONZERO, "argwhere": _META_NONZERO,
                 "masked_select": "masked_select", "unique": "_unique2",
                 "unique_consecutive": "unique_consecutive", "equal": "equal",
                 "bincount": "bincount", "histc": "histc", "histogram": "histogram",
                 "repeat_interleave": "repeat_interleave",
                 "allclose": "Tensor.item() cannot be called on meta tensors"}


def _meta_refusal(name: str) -> Exception:
    msg = _META_REFUSED[name]
    if name == "repeat_interleave":
        return RuntimeError("cannot repeat_interleave a meta tensor without output_size")
    if name == "allclose":
        return RuntimeError(msg)
    if " " not in msg:
        msg = (f"aten::{msg}: attempted to run this operator with Meta tensors, but there was "
               "no fake impl or Meta kernel registered. You may have run into this message "
               "while using an operator with PT2 compilation APIs (torch.compile/torch.export); "
               "in order to use this operator with those APIs you'll need to add a fake impl. "
               "Please see the following for next steps:  "
               "https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html")
    return NotImplementedError(msg)


def _meta_forward(op: Op, tensors: tuple, arrays: tuple, args: tuple) -> Any:
    """The forward once meta tensors exist: with a meta input, torch's device and
    data-dependence checks, then the forward on meta arrays, its results made meta."""
    for a in arrays:
        if a.__class__ is _MetaArray:
            break
    else:
        for t in tensors:
            if t._data.__class__ is _MetaArray:
                break
        else:                            # no meta input: the cpu forward
            return op.forward(*arrays, *args) if args else op.forward(*arrays)
    first = None
    meta = False
    for t in tensors:
        m = type(t._data) is _MetaArray
        meta = meta or m
        if m or t._data.ndim and t._data.size:   # a cpu 0-d (or empty placeholder) tensor
            #                                         goes with any device
            dev = "meta" if m else "cpu"
            if first is None:
                first = dev
            elif dev != first and op.name != "copy_":
                raise RuntimeError(f"Tensor on device {dev} is not on the expected device "
                                   f"{first}!")
    if not meta:
        for a in arrays:
            if type(a) is _MetaArray:
                meta = True
    if not meta:
        return op.forward(*arrays, *args) if args else op.forward(*arrays)
    if op.name in _META_REFUSED:
        raise _meta_refusal(op.name)
    if op.name == "copy_" and type(arrays[0]) is not _MetaArray:
        raise NotImplementedError(_tensor_module.META_COPY_MSG)
    return _meta.run_forward(op.forward, arrays, args)


def meta_refuse(name: str, *tensors: Any) -> None:
    """torch's error for op ``name`` if one of ``tensors`` is a meta tensor (the ops outside
    ``apply`` whose results depend on values: Note [Meta arrays])."""
    if _META:
        for t in tensors:
            if isinstance(t, Tensor) and type(t._data) is _MetaArray:
                raise _meta_refusal(name)
