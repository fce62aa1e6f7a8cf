"""Views, version counters and in-place operations: one subsystem.

Note [Views and in-place operations]
* A view shares its base's memory (a NumPy view) and its version counter, and remembers the
  root base (``_base``; a view of a view points at the root) and how to rebuild itself from it:
  ``_view_steps``, the chain of view ops (op, args, output index) applied to the root.
* Every in-place op bumps the shared version counter (and records where it happened, for error
  messages). Saved tensors compare versions when unpacked (autograd/saved.py).
* In-place on a non-view ``t`` rewrites ``t``'s history: the op is applied out of place to a
  snapshot of ``t`` (old history, old value), the result is written into ``t``'s memory, and
  ``t.grad_fn`` becomes the op's node.
* In-place on a view ``v`` of base ``b`` rewrites ``b``'s history: ``b.grad_fn`` becomes a
  ``CopySlices`` node wrapping the op's node. Its backward takes the gradient of ``b``, runs the
  op's backward on the region of ``v``, and puts the result back into that region (the other
  inputs of the op get their gradients directly).
* A view's ``grad_fn`` goes stale when the shared version moves (the base or any view of it was
  modified in place). It is regenerated lazily from the base's current history as one
  ``AsStridedBackward0`` node (``refresh_view``); the dispatcher refreshes views before using
  them as inputs (ops/_dispatch.py ``_edge``).
* Views created in no_grad mode, by multi-output view ops (unbind/split/chunk) or in inference
  mode remember it (``_view_creation``) and refuse in-place modification with grad mode on, as
  in PyTorch.

Example:
    >>> import ndgrad
    >>> x = ndgrad.ones(4, requires_grad=True)
    >>> y = x * 1
    >>> y[1:3].mul_(2)
    tensor([2., 2.], grad_fn=<AsStridedBackward0>)
    >>> y.grad_fn.name(), y._version
    ('torch::autograd::CopySlices', 1)
    >>> y.sum().backward(); x.grad
    tensor([1., 2., 2., 1.])
"""

from __future__ import annotations

import sys
from importlib import import_module
from typing import Any, Callable, Optional

import numpy as np

from .. import _dtype, _meta, _write_watch
from .._aligned import AlignedBlock
from .._layout import is_non_overlapping_and_dense
from ..autograd import batching as _bt
from ..autograd.grad_mode import _state, no_grad
from ..autograd.engine import _fix_gradient
from ..autograd.node import SECOND_BACKWARD_MSG, Node, next_sequence_nr
from ..tensor import Tensor, _new, _transform_local, _wrap
from . import _dispatch
from ._dispatch import _DIFF_DTYPES, Op, _edge, apply
from ._jvp import linear, zero
from ._util import broadcast_error, type_name

_tensor_mod: Any = import_module("ndgrad.tensor")  # the module; ndgrad.tensor is also a function

__all__ = ["apply_inplace", "refresh_view", "record_view", "NO_GRAD_VIEW", "MULTI_OUTPUT_VIEW",
           "INFERENCE_VIEW"]

LEAF_INPLACE_MSG = "a leaf Variable that requires grad is being used in an in-place operation."
LEAF_VIEW_INPLACE_MSG = ("a view of a leaf Variable that requires grad is being used in an "
                         "in-place operation.")
NO_GRAD_VIEW = "no_grad"
MULTI_OUTPUT_VIEW = "multi_output"
INFERENCE_VIEW = "inference"


# ---------------------------------------------------------------------------- recording views
def record_view(result: Tensor, source: Tensor, op: Op, args: tuple, index: Any) -> None:
    """Make ``result`` a view of ``source``'s root base (called by the dispatcher)."""
    base = source._base if source._base is not None else source
    vc = base._version_counter
    if vc is None:
        vc = base._version_counter = [0]
    if source._version_counter is None:
        source._version_counter = vc
    result._base = base
    result._version_counter = vc
    result._view_version = vc[0]
    if result._tborn:      # a view is captured or not as its source (Note [Captured tensors])
        result._tborn = source._tborn
    if source._tleaf:      # Note [Transform leaves]
        result._tleaf = -abs(source._tleaf)
    step = (op, args, index)
    result._view_steps = (source._view_steps + (step,)) if source._base is not None else (step,)
    if source._inference:
        result._inference = True
    if result._data.dtype not in _DIFF_DTYPES:
        return          # views of integer/bool tensors are never checked (as in PyTorch)
    # How the view was created (checked by in-place ops and when the view's history is
    # regenerated): inference mode wins, then no_grad, then multi-output; a view of a view
    # inherits its parent's kind unless created in one of these modes itself.
    new = (INFERENCE_VIEW if _state.inference else NO_GRAD_VIEW if not _state.enabled
           else MULTI_OUTPUT_VIEW if index is not None else None)
    prev = source._view_creation
    creation = prev if new is None or prev == INFERENCE_VIEW else new
    if creation is not None:
        result._view_creation = creation


def replay_view(arr: np.ndarray, steps: tuple) -> np.ndarray:
    """Apply a view's recorded steps to an array shaped like its base. Used on gradients and
    index arrays, whose layout may differ from the base's: reshapes may copy here, and
    as_strided maps elements by their storage positions (Note [Storage] in ops/shape.py)."""
    for op, args, index in steps:
        name = op.name
        if name == "view":
            arr = np.reshape(arr, args[0])
        elif name == "as_strided":
            arr = as_strided_gather(arr, *args)
        else:
            arr = op.forward(arr, *args)
        if index is not None:
            arr = arr[index]
    return arr


def _view_index(shape: tuple, steps: tuple) -> np.ndarray:
    """For every element of the view, its flat (C-order) position in the base; -1 for an
    element outside the base (an as_strided view reading storage the base does not cover)."""
    n = 1
    for k in shape:
        n *= k
    # Positions start at 1 so that the 0 read outside the base becomes -1.
    return replay_view(np.arange(1, n + 1).reshape(shape), steps) - 1


# ---------------------------------------------------------------------------- as_strided maps
def storage_positions(shape: tuple, strides: tuple, offset: int) -> np.ndarray:
    """The storage position (in elements) of every element of a strided layout."""
    if 0 in shape:
        return np.zeros(shape, dtype=np.int64)
    pos = np.full((), offset, dtype=np.int64)
    for n, s in zip(shape, strides):
        pos = pos[..., None] + np.arange(n, dtype=np.int64) * s
    return pos


def as_strided_sources(geometry: tuple, size: tuple, stride: tuple, offset: int) -> np.ndarray:
    """For every element of ``as_strided(x, size, stride, offset)``, the flat (C-order) index
    of the element of ``x`` at the same storage position, or -1 if ``x`` has none there.
    ``geometry`` is ``x``'s (shape, strides, storage offset, storage size); where several
    elements of ``x`` share a position (an expanded ``x``), the first in C order is taken."""
    shape, strides, start = geometry[:3]
    want = storage_positions(size, stride, offset)
    n = 1
    for k in shape:
        n *= k
    if n == 0:
        return np.full(want.shape, -1, dtype=np.int64)
    dense, acc = True, 1
    for k, s in zip(reversed(shape), reversed(strides)):
        dense = dense and (s == acc or k == 1)
        acc *= k
    if dense:                              # x is dense in C order: positions are indices
        src = want - start
        return np.where((src >= 0) & (src < n), src, -1)
    have = storage_positions(shape, strides, start).reshape(-1)
    order = np.argsort(have, kind="stable")
    have = have[order]
    k = np.minimum(np.searchsorted(have, want), n - 1)
    return np.where(have[k] == want, order[k], -1)


def as_strided_gather(x: np.ndarray, size: tuple, stride: tuple, storage_offset: Any,
                      geometry: tuple) -> np.ndarray:
    """``as_strided`` of an array laid out as ``geometry`` says, by positions (a copy, with 0
    where the input has no element: a gradient there goes nowhere)."""
    offset = geometry[2] if storage_offset is None else storage_offset
    src = as_strided_sources(geometry, size, stride, offset)
    out = np.zeros(src.shape, dtype=x.dtype)
    hit = src >= 0
    out[hit] = np.reshape(x, -1)[src[hit]]
    return out


def _overlapping(steps: tuple) -> bool:
    return any(op.name in ("expand", "as_strided", "unfold") for op, _, _ in steps)


def _writable_region(out: np.ndarray, steps: tuple):
    """The view's region inside ``out``, or None if it cannot be written through (overlapping
    views, or a replayed reshape that had to copy)."""
    if _overlapping(steps):
        return None
    region = replay_view(out, steps)
    if not region.flags.writeable:
        return None
    if any(op.name == "view" for op, _, _ in steps) and not np.shares_memory(region, out):
        return None
    return region


def _view_scatter_fwd(g: np.ndarray, steps: tuple, shape: tuple, dtype: np.dtype) -> np.ndarray:
    out = np.zeros(shape, dtype=dtype)
    region = _writable_region(out, steps)
    if region is not None:
        region[...] = g                # also right for real/imag views of complex bases
        return out
    # Overlapping views: map every view element to its base position; repeats add up.
    idx_view = _view_index(shape, steps)
    idx = idx_view.reshape(-1)
    vals = np.broadcast_to(g, idx_view.shape).reshape(-1)
    inside = idx >= 0
    np.add.at(out.reshape(-1), idx[inside], vals[inside])
    return out


def _view_zero_fwd(g: np.ndarray, steps: tuple) -> np.ndarray:
    out = np.array(g, order="C", copy=True)
    region = _writable_region(out, steps)
    if region is not None:
        region[...] = 0
    else:
        idx = _view_index(g.shape, steps).reshape(-1)
        out.reshape(-1)[idx[idx >= 0]] = 0
    return out


VIEW_REPLAY = Op("as_strided_view", "AsStridedBackward0", replay_view,
                 lambda ctx, g: view_scatter(g, ctx._args[0], ctx.input_shape(0),
                                             ctx.input_dtype(0)),
                 args=("steps",), jvp=linear)
VIEW_SCATTER = Op("view_scatter", "AsStridedScatterBackward0", _view_scatter_fwd,
                  lambda ctx, g: apply(VIEW_REPLAY, (g,), (g._data,), (ctx._args[0],)),
                  args=("steps", "shape", "dtype"), jvp=linear)
VIEW_ZERO: Op = Op("view_zero", "CopySlicesBackward0", _view_zero_fwd,
               lambda ctx, g: apply(VIEW_ZERO, (g,), (g._data,), ctx._args), args=("steps",),
               jvp=linear)


def view_scatter(g: Tensor, steps: tuple, shape: tuple, dtype: Any = None) -> Tensor:
    """Zeros shaped like the base with ``g`` written into the view's region (differentiable).
    ``dtype`` is the base's (a real view of a complex base scatters into complex zeros)."""
    dt = g._data.dtype if dtype is None else np.dtype(dtype)
    return apply(VIEW_SCATTER, (g,), (g._data,), (steps, tuple(shape), dt))


def refresh_view(t: Tensor) -> bool:
    """Regenerate a stale view's ``grad_fn`` from its base; return its ``requires_grad``."""
    vc = t._version_counter
    base = t._base
    if t._view_version == vc[0]:
        # A view of a base that requires grad requires grad, even without history of its own
        # (created in no_grad mode, or before the base required grad), as in PyTorch.
        return t._requires_grad or base._requires_grad
    if t._grad_fn is None and not base._requires_grad:
        return t._requires_grad
    if t._view_creation is not None:
        raise RuntimeError(_view_rebase_message(t, indirect=True))
    t._view_version = vc[0]
    if base._requires_grad:
        node = VIEW_REPLAY.node_cls()
        node._sequence_nr = next_sequence_nr()
        node.next_functions = (_edge(base),)
        node._input_meta = ((base._data.shape, base._data.dtype),)
        node._args = (t._view_steps,)
        old_fn, old_nr = t._grad_fn, t._output_nr
        t._grad_fn = node
        t._output_nr = 0
        t._requires_grad = True
        if t._retains_grad:
            _move_retains_grad(t, old_fn, old_nr)
    return t._requires_grad


# The dispatcher and Tensor (layers below, Note [Layers] in autograd/__init__.py) call these.
_dispatch.record_view = record_view
_dispatch.refresh_view = refresh_view
_tensor_mod._refresh_view = refresh_view


# ---------------------------------------------------------------------------- CopySlices
class CopySlices(Node):
    """The base's node after an in-place op on one of its views (see the Note above)."""

    _full_name = "torch::autograd::CopySlices"

    fn: Optional[Node]       # None once released

    def __init__(self, base_edge: tuple, base_meta: tuple, steps: tuple, fn: Node) -> None:
        self._sequence_nr = next_sequence_nr()
        self.next_functions = (base_edge,) + fn.next_functions[1:]
        self._input_meta = (base_meta,) + fn._input_meta[1:]
        self._steps = steps
        self.fn = fn

    def apply(self, grads: list) -> tuple:
        g = grads[0]
        if g is None:
            return (None,) * len(self.next_functions)
        if self.fn is None:
            raise RuntimeError(SECOND_BACKWARD_MSG)
        steps = self._steps
        region = apply(VIEW_REPLAY, (g,), (g._data,), (steps,))
        # The op's node was never part of the graph: call it directly, as PyTorch does.
        res = list(self.fn.apply([region.clone()]))
        meta = self.fn._input_meta
        for i, r in enumerate(res):
            if r is not None and meta and meta[i] is not None and (
                    r._data.shape != meta[i][0] or r._data.dtype != meta[i][1]):
                res[i] = _fix_gradient(self.fn, i, r, meta[i])
        outside = apply(VIEW_ZERO, (g,), (g._data,), (steps,))
        # The base's shape from the metadata: ``g`` may carry a batch dimension
        # (Note [Batched backward]).
        g_base = outside if res[0] is None else outside + view_scatter(
            res[0], steps, self._input_meta[0][0], g._data.dtype)
        return (g_base,) + tuple(res[1:])

    def release_variables(self) -> None:
        # Drop the op's node rather than its saved values: a graph built by create_graph=True
        # may still reach that node directly (its saved output is attached to it).
        self.fn = None

    @property
    def _saved(self) -> tuple:  # type: ignore[override]  # computed here (Node stores it)
        # the engine releases saved values when this is non-empty
        return (self.fn,) if self.fn is not None else ()


# ---------------------------------------------------------------------------- in-place ops
_PKG_DIR = __file__[: -len("ops/views_inplace.py")]


_OWN_CODE: dict = {}     # code object -> whether it belongs to ndgrad (a cache for _site)


def _site() -> Any:
    """(file, line) of the first caller outside ndgrad, formatted only if an error needs it.
    Runs on every in-place op (optimizer updates too), so it stays a few dict lookups."""
    f: Any = sys._getframe(2)
    own = _OWN_CODE
    while f is not None:
        code = f.f_code
        inside = own.get(code)
        if inside is None:
            inside = own[code] = code.co_filename.startswith(_PKG_DIR)
        if not inside:
            return _Site((code.co_filename, f.f_lineno))
        f = f.f_back
    return None


class _Site(tuple):
    """(filename, line), printed as ``filename:line``."""

    __slots__ = ()

    def __str__(self) -> str:
        return f"{self[0]}:{self[1]}"


def _bump(t: Tensor) -> None:
    vc = t._version_counter
    if vc is None:
        vc = t._version_counter = [0]
    vc[0] += 1
    if len(vc) == 1:
        vc.append(None)
    vc[1] = _site()




def _check_inplace(self: Tensor, recording: bool, writes: bool = True) -> None:
    """PyTorch's refusals, in PyTorch's order, all raised before anything is written.
    ``recording``: grad mode is on and some input (``self`` included) requires grad.
    ``writes``: the op writes elements (not only metadata: ``squeeze_``)."""
    if self._inference and not _state.inference:
        raise RuntimeError(
            "Inplace update to inference tensor outside InferenceMode is not allowed.You can "
            "make a clone to get a normal tensor before doing inplace update.See "
            "https://github.com/pytorch/rfcs/pull/17 for more details.")
    if recording:
        tleaf = self._tleaf
        if tleaf and abs(tleaf) == _transform_local.tid:        # Note [Transform leaves]
            raise RuntimeError(LEAF_INPLACE_MSG if tleaf > 0 else LEAF_VIEW_INPLACE_MSG)
        base = self._base
        if base is not None:
            if self._view_creation is not None:
                raise RuntimeError(_view_rebase_message(self, indirect=False))
            if base._grad_fn is None and base._requires_grad:
                raise RuntimeError(LEAF_VIEW_INPLACE_MSG)
        elif self._grad_fn is None and self._requires_grad:
            raise RuntimeError(LEAF_INPLACE_MSG)
    if _dispatch._TRANSFORM and self._tborn != _transform_local.tid:
        _check_capture(self)
    if writes and not self._data.flags.writeable and type(self._data) is not _meta.MetaArray:
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation.")
    if writes and _write_watch.watch is not None:      # Note [Write watchers]
        _write_watch.watch(self._data)


# Note [Captured tensors]
# torch.func's grad, vjp and jvp refuse an in-place op on a tensor the transformed function did
# not create (one it captured: a closure, a global, a module's buffer, a view or ``.data`` of
# one, a tensor made by an enclosing transform), whatever the written value and the grad mode;
# the transform's own inputs and the tensors made inside it may be modified. ndgrad keeps no
# per-level wrappers, so it tells them apart by a stamp: ``func`` gives each call a fresh id
# (``_dispatch.enter_transform``, func/_common.py ``transform_scope``); while one is live, the
# tensors created (dispatcher results, ``_wrap``, backward rules' results, the legacy
# constructor) carry it as ``_tborn``, views, ``detach()`` and ``.data`` carry their source's,
# and ``_check_inplace`` (every in-place op and in-place view op), ``detach_`` and ``resize_``
# refuse a tensor whose stamp is not the innermost call's (``refuse_captured`` in tensor.py
# words it; the hot paths pay one module-global test, the count of live calls in all threads,
# when no transform runs). The innermost call is per thread (``tensor._transform_local``):
# each thread stamps with and checks against its own, and a thread running no transform is
# not checked. A transform's results are the enclosing call's own (``_common.adopt``): an
# outer ``grad`` may write into what an inner ``jvp``/``vjp`` returned, as in torch. vmap
# opens no such call (torch checks at its grad/jvp levels only).
#
# Note [Transform leaves]
# In torch.func a reverse-mode transform (grad, vjp, jacrev) makes each input a leaf of its
# level, so an in-place op on it (or on a view of it) raises the leaf errors even when the
# outer tensor is not a leaf. ndgrad's node for an input requiring grad is a view of it
# (func/_common.py ``fresh_leaf``), so ``func`` stamps that node's ``_tleaf`` with the call's
# id (``_common.mark_leaves``) and its views carry the negated id; while that call is the
# thread's innermost, ``_check_inplace`` raises the leaf error (the view's for a negative
# stamp) when grad is recorded. After the call the stamp is inert.
def _check_capture(self: Tensor) -> None:
    """Refuse an in-place op on a tensor captured by the live transform call."""
    _tensor_mod.refuse_captured("aten::" + _inplace_name())


def _inplace_name() -> str:
    """The public in-place method being run (for the message): the innermost caller named like
    one (``add_``), ``copy_`` for item assignment."""
    f: Any = sys._getframe(2)
    while f is not None:
        name = f.f_code.co_name
        if name in ("setitem", "__setitem__"):
            return "copy_"
        if name.endswith("_") and not name.startswith("_"):
            return name
        f = f.f_back
    return "copy_"


_NO_GRAD_HINT = (
    " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify "
    "your code by moving both the view and the inplace either both inside the {} block (if you "
    "don't want the inplace to be tracked) or both outside (if you want the inplace to be "
    "tracked).")


def _view_rebase_message(t: Tensor, indirect: bool) -> str:
    """Why a view made in no_grad/inference mode or by a multi-output op cannot be modified in
    place (``indirect``: its base or another view of it was modified), worded as PyTorch."""
    creation = t._view_creation
    fn = t._grad_fn
    name = ""
    if fn is not None:
        name = fn.name()
        name = name[:-len("Backward0")] if name.endswith("Backward0") else name
    modified = "its base or another view of its base has been" if indirect else "is being"
    if creation != MULTI_OUTPUT_VIEW or fn is None:
        prefix = (f"Output {t._output_nr} of {name} is a view of a view which was created in"
                  if fn is not None else "A view was created in")
        if creation == INFERENCE_VIEW:
            msg = f"{prefix} inference mode and {modified} modified inplace in normal mode."
        else:
            msg = (f"{prefix} no_grad mode and {modified} modified inplace with grad mode "
                   "enabled.")
    else:
        msg = f"Output {t._output_nr} of {name} is a view and {modified} modified inplace."
    if creation == MULTI_OUTPUT_VIEW:
        return msg + (" This view is the output of a function that returns multiple views. Such "
                      "functions do not allow the output views to be modified inplace. You "
                      "should replace the inplace operation by an out-of-place one.")
    return msg + _NO_GRAD_HINT.format("inference_mode" if creation == INFERENCE_VIEW
                                      else "no_grad")


def _store(self: Tensor, res: Tensor) -> None:
    if res._blevel and res._blevel != self._blevel:    # Note [Vectorized vmap], func/_vmap.py
        _vmap_store_check(res)
    src = res._data
    dst = self._data
    if src.dtype != dst.dtype and not np.can_cast(src.dtype, dst.dtype, "same_kind"):
        raise RuntimeError(
            f"result type {_dtype._FROM_NP[src.dtype]._torch_name} can't be cast to the desired "
            f"output type {_dtype._FROM_NP[dst.dtype]._torch_name}")
    if src.shape != dst.shape:
        try:
            target = np.broadcast_shapes(src.shape, dst.shape)
        except ValueError:
            target = None
        if target != dst.shape:
            shown = list(target) if target is not None else list(src.shape)
            raise RuntimeError(f"output with shape {list(dst.shape)} doesn't match the "
                               f"broadcast shape {shown}")
    _dtype.copyto(dst, src)


_VMAP_INPLACE = (
    "vmap: inplace arithmetic(self, *extra_args) is not possible because there exists a "
    "Tensor `other` in extra_args that has more elements than `self`. This happened due to "
    "`other` being vmapped over but `self` not being vmapped over in a vmap. Please try to use "
    "out-of-place operators instead of inplace arithmetic. If said operator is being called "
    "inside the PyTorch framework, please file a bug report instead.")


def _vmap_store_check(res: Tensor) -> None:
    """A batched result written into a tensor that is not batched at its vmap level."""
    if res._blevel in _bt.VMAP and res._blevel in _bt.ACTIVE:
        raise RuntimeError(_VMAP_INPLACE)


def _overlaps(dst: np.ndarray, src: np.ndarray, full_too: bool) -> bool:
    """PyTorch's overlap test between the written-to array and an input: only when both are
    dense can it tell (otherwise the op is allowed); equal ranges with equal strides are a full
    overlap (allowed by elementwise ops), other shared ranges a partial one."""
    db = dst.base
    sb = src.base
    if ((db is None or db.__class__ is AlignedBlock)   # Note [Aligned arrays]
            and (sb is None or sb.__class__ is AlignedBlock)
            and dst is not src and (db is None or db is not sb)):
        return False                     # two arrays owning their memory: disjoint
    if dst.size == 0 or src.size == 0 or not np.may_share_memory(dst, src):
        return False
    if not (is_non_overlapping_and_dense(dst) and is_non_overlapping_and_dense(src)):
        return False
    a = dst.__array_interface__["data"][0]
    b = src.__array_interface__["data"][0]
    if a == b and dst.nbytes == src.nbytes and dst.strides == src.strides:
        return full_too
    return a < b + src.nbytes and b < a + dst.nbytes


def _move_retains_grad(t: Tensor, old_fn: Any, old_nr: int) -> None:
    """``retain_grad()`` follows the tensor to its new history (in-place op, regenerated
    view), as in PyTorch."""
    hooks = old_fn._retains_grad_hooks if old_fn is not None else None
    hook = hooks.pop(old_nr, None) if hooks else None
    fn = t._grad_fn
    if hook is None or fn is None:
        return
    if fn._retains_grad_hooks is None:
        fn._retains_grad_hooks = {}
    fn._retains_grad_hooks[t._output_nr] = hook
    fn._has_hooks = True


def _requires_grad(t: Tensor) -> bool:
    return t._requires_grad or (t._base is not None and t._base._requires_grad)


_FAST_FLOAT_DTYPES = frozenset(np.dtype(d) for d in ("float16", "float32", "float64"))


def inplace_binary(self: Tensor, other: Any, ufunc: np.ufunc, fn: Callable[..., Tensor]) -> Tensor:
    """``self += other`` and friends (``add_``/``sub_``/``mul_``/``div_`` without ``alpha``).

    When nothing is recorded (optimizer updates under ``no_grad``), the common case writes
    straight into ``self`` with the ufunc's ``out=``; everything else takes ``apply_inplace``.
    """
    d = self._data
    if (not _state.enabled and not _dispatch._FW_AD and not _dispatch._TRANSFORM
            and _write_watch.watch is None
            and not self._inference
            and d.dtype in _FAST_FLOAT_DTYPES and d.flags.writeable
            and (d.base is None or d.base.__class__ is AlignedBlock)):   # Note [Aligned arrays]
        t = type(other)
        if t is float or t is int:
            ufunc(d, other, out=d)
            _bump(self)
            return self
        if t is Tensor:
            od = other._data
            if (od.dtype is d.dtype and (od.base is None or od.base.__class__ is AlignedBlock)
                    and od is not d and od.ndim <= d.ndim):
                try:
                    ufunc(d, od, out=d)
                except ValueError:
                    pass                    # shape errors: the general path words them
                else:
                    _bump(self)
                    return self
    return apply_inplace(self, fn, other)


def apply_inplace(self: Tensor, fn: Callable[..., Tensor], *args: Any,
                  overlap: str = "partial") -> Tensor:
    """Compute ``fn(self, *args)`` and store it into ``self``, keeping autograd consistent.

    ``fn`` is the out-of-place op (``lambda a, b: a * b`` for ``mul_``). ``overlap``: which
    memory overlap between ``self`` and a tensor argument is refused, as PyTorch's kernels do:
    ``"partial"`` (elementwise ops), ``"any"`` (``index_put_``) or ``"none"`` (values read as
    scalars: ``fill_``, ``masked_fill_``).
    """
    # Whether some input requires grad, without regenerating any view's history (which may
    # raise for views that cannot be modified in place: _check_inplace words that error).
    recording = _state.enabled and (_requires_grad(self) or any(
        isinstance(a, Tensor) and _requires_grad(a) for a in args))
    _check_inplace(self, recording)
    if overlap != "none":
        for a in args:
            if isinstance(a, Tensor) and _overlaps(self._data, a._data, overlap == "any"):
                raise RuntimeError(
                    "unsupported operation: some elements of the input tensor and the "
                    "written-to tensor refer to a single memory location. Please clone() the "
                    "tensor before performing the operation.")
    if recording and self._base is not None:
        refresh_view(self)
    if _dispatch._FW_AD:   # forward AD: fn also updates self's tangents (autograd/forward_ad.py)
        fn = _dispatch._fw_inplace(self, fn)
    if _dispatch._TRACING:  # functionalization while tracing (Note [Tracing], jit/tracer.py)
        fn = _dispatch._trace_inplace(self, fn)
    if not recording:
        if _state.enabled:
            with no_grad():
                res = fn(self, *args)
        else:                          # optimizer updates: already in no_grad
            res = fn(self, *args)
        _store(self, res)
        if not self._inference:
            _bump(self)
        return self
    snapshot = _new(Tensor)
    snapshot._data = self._data.copy()   # the old value, for rules that need it
    if self._blevel:                     # a vmap's BatchedTensor stays one (func/_vmap.py)
        snapshot._blevel = self._blevel
        snapshot.__class__ = self.__class__
    snapshot._grad_fn = self._grad_fn
    snapshot._output_nr = self._output_nr
    snapshot._requires_grad = self._requires_grad
    res = fn(snapshot, *args)
    node = res._grad_fn
    base = self._base
    base_edge: Any = _edge(base) if base is not None else None
    _store(self, res)
    _bump(self)
    if node is None:
        return self
    _repoint_saved_result(node, self)
    if base is None:
        old_fn, old_nr = self._grad_fn, self._output_nr
        self._grad_fn = node
        self._output_nr = res._output_nr
        self._requires_grad = True
        if self._retains_grad:
            _move_retains_grad(self, old_fn, old_nr)
        return self
    # In-place on a view: the base's history is rewritten; views regenerate lazily.
    base._grad_fn = CopySlices(base_edge, (base._data.shape, base._data.dtype),
                               self._view_steps, node)
    base._requires_grad = True
    base._output_nr = 0
    refresh_view(self)
    return self


def _repoint_saved_result(node: Node, self: Tensor) -> None:
    # Ops that save their output (exp_, tanh_ ...) must see ``self`` at its new version.
    for s in getattr(node, "_saved", ()):
        if getattr(s, "_is_output", False):
            alias = _new(Tensor)
            alias._data = self._data
            alias._version_counter = self._version_counter
            s._tensor = alias
            s._version = self._version_counter[0]


# ---------------------------------------------------------------------------- specific ops
def _zeros_for(g: Tensor) -> Tensor:
    z = _wrap(np.zeros_like(g._data))
    z._blevel = g._blevel          # batched like ``g`` (Note [Batched backward])
    return z


def _copy_fwd(s: np.ndarray, src: np.ndarray) -> np.ndarray:
    out = np.empty_like(s)
    _dtype.copyto(out, src)
    return out


COPY = Op("copy_", "CopyBackwards", _copy_fwd,
          lambda ctx, g: (_zeros_for(g) if ctx.needs_input_grad(0) else None,
                          g if ctx.needs_input_grad(1) else None),
          inputs=("self", "src"), full_name="torch::autograd::CopyBackwards", jvp=linear)
FILL_SCALAR = Op("fill_", "FillBackward2", lambda s, v: np.full_like(s, v),
                 lambda ctx, g: _zeros_for(g), args=("value",), jvp=zero)
FILL_TENSOR = Op("fill_", "FillBackward3", lambda s, v: np.full_like(s, v),
                 lambda ctx, g: (_zeros_for(g) if ctx.needs_input_grad(0) else None,
                                 g.sum() if ctx.needs_input_grad(1) else None),
                 inputs=("self", "value"), jvp=linear)
ZERO = Op("zero_", "ZeroBackward0", np.zeros_like, lambda ctx, g: _zeros_for(g), jvp=zero)


def fill_(self: Tensor, value: Any) -> Tensor:
    """Fill with a scalar or a 0-d tensor (differentiable in the tensor)."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.ndim} dimensions.")
        return apply_inplace(self, lambda s, v: apply(FILL_TENSOR, (s, v), (s._data, v._data)),
                             value, overlap="none")
    if not isinstance(value, _SCALARS):
        raise TypeError(f"fill_(): argument 'value' (position 1) must be Number, not "
                        f"{type_name(value)}")
    v = _dtype.scalar_to(value, _dtype._FROM_NP[self._data.dtype])
    return apply_inplace(self, lambda s: apply(FILL_SCALAR, (s,), (s._data,), (v,)))


def zero_(self: Tensor) -> Tensor:
    """Fill ``self`` with zeros in place and return it."""
    return apply_inplace(self, lambda s: apply(ZERO, (s,), (s._data,)))


def masked_fill_(self: Tensor, mask: Tensor, value: Any) -> Tensor:
    """Fill where ``mask`` with a number or a 0-d tensor (differentiable in both)."""
    from .pointwise import masked_fill  # local import: a family above (imports this module)
    if isinstance(mask, Tensor):
        try:
            np.broadcast_shapes(self._data.shape, mask._data.shape)
        except ValueError:
            raise broadcast_error(self._data.shape, mask._data.shape) from None
    if isinstance(value, Tensor):
        return apply_inplace(self, lambda s, m, v: masked_fill(s, m, v), mask, value,
                             overlap="none")
    return apply_inplace(self, lambda s, m: masked_fill(s, m, value), mask, overlap="none")


def copy_(self: Tensor, src: Any, non_blocking: bool = False) -> Tensor:
    """Copy ``src`` (broadcast, cast) into ``self``; ``src`` gets the gradient."""
    if isinstance(src, _SCALARS):       # a number is a 0-d tensor here, as in PyTorch
        src = _wrap(np.asarray(src.item() if isinstance(src, np.generic) else src))
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'other' (position 1) must be Tensor, not "
                        f"{type(src).__name__}")
    if src._blevel and src._blevel != self._blevel:    # Note [Vectorized vmap], func/_vmap.py
        _vmap_store_check(src)
    try:
        np.broadcast_to(src._data, self._data.shape)
    except ValueError:
        try:
            shown = list(np.broadcast_shapes(self._data.shape, src._data.shape))
        except ValueError:
            raise broadcast_error(self._data.shape, src._data.shape) from None
        raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the "
                           f"broadcast shape {shown}") from None
    return apply_inplace(self, lambda s, o: apply(COPY, (s, o), (s._data, o._data)), src)


_SCALARS = (bool, int, float, complex, np.number, np.bool_)


def _setitem_value(self: Tensor, value: Any) -> Tensor:
    """The value of ``self[index] = value`` as a tensor: PyTorch accepts a tensor or a number,
    and converts a number to ``self``'s dtype with its check (float16 and bfloat16 may round
    to inf; Note [Python numbers into a dtype])."""
    if isinstance(value, Tensor):
        return value
    dt = _dtype._FROM_NP[self._data.dtype]
    if not isinstance(value, _SCALARS):
        kind = type(value)
        shown = kind.__name__ if kind.__module__ == "builtins" else \
            f"{kind.__module__.split('.')[0]}.{kind.__name__}"
        raise TypeError(f"can't assign a {shown} to a torch.{dt._torch_name}Tensor")
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) \
            and not -2 ** 63 <= int(value) < 2 ** 63:
        raise ValueError("Overflow when unpacking long long")
    v = _dtype.scalar_to(value, dt, relaxed=True)
    return _wrap(np.asarray(v, dtype=self._data.dtype))


def _strip_leading_ones(v: Tensor) -> Tensor:
    # PyTorch drops a value's leading size-1 dims before writing it (x[0] = ones(1, n)).
    shape = v._data.shape
    k = 0
    while k < len(shape) and shape[k] == 1:
        k += 1
    return v.reshape(shape[k:]) if k else v


def setitem(self: Tensor, index: Any, value: Any) -> None:
    """``self[index] = value``: basic indexing copies into a view (``CopySlices`` on ``self``);
    an index covering everything writes ``self`` directly; advanced indexing is ``index_put_``."""
    from . import shape  # local import: a family above (shape imports this module)
    if index is False:           # PyTorch writes nothing and records nothing (shapes unchecked)
        _setitem_value(self, value)
        return
    idx, basic, name = shape._normalize_index(index, self._data.shape)
    if (self._requires_grad and self._grad_fn is None and _state.enabled
            and shape._writes_view(idx, basic, self._data.shape)):
        raise RuntimeError(LEAF_VIEW_INPLACE_MSG)
    number = not isinstance(value, Tensor)
    value = _setitem_value(self, value)
    indices = None
    if not basic:
        # The user's index tensors are saved (Note [Saved index tensors]).
        indices = shape._index_tensors(idx, self._data.ndim, index)
        split = shape._split_advanced(idx, self._data.shape)
        if split is not None:
            # PyTorch: index_put_ into the view made by the basic part of the index.
            view = shape._getitem(self, split[0], True, shape._basic_name(split[0]))
            apply_inplace(view, lambda s, v: shape.setitem(s, split[1], v, indices), value,
                          overlap="any")
            return
    elif not shape._selects_everything(idx, self._data.shape):
        view = shape._getitem(self, idx, True, name)
        value = _strip_leading_ones(value)
        vshape = value._data.shape
        try:
            np.broadcast_to(np.empty(vshape), view._data.shape)
        except ValueError:
            raise shape._setitem_shape_error(vshape, view._data.shape,
                                             value._data.dtype) from None
        # PyTorch wraps a Python value in a tensor: fill_(Tensor) for a number.
        fill_(view, value) if number else copy_(view, value)
        return
    apply_inplace(self, lambda s, v: shape.setitem(s, idx, v, indices), value,
                  overlap="partial" if basic else "any")


# ---------------------------------------------------------------------------- in-place view ops
# Note [In-place view ops]
# ``x.squeeze_()``, ``unsqueeze_``, ``t_``, ``transpose_``, ``swapdims_``, ``as_strided_``
# change ``x``'s metadata (shape, strides), not its elements. As PyTorch: the view op runs out of
# place on ``x`` (old history), then ``x`` takes the result's layout and its node, renamed as
# PyTorch names the in-place formula (SqueezeBackward3 ...); ``x``'s version moves once; a view
# stays a view of the same base (its recorded steps now end with the new op), a non-view stays
# a non-view. The refusals are the in-place ones (a leaf that requires grad, views made by
# multi-output ops or in no_grad mode), minus the check for overlapping elements (nothing is
# written).
_RENAMED: dict = {}


def _renamed(cls: type, name: str) -> type:
    key = (cls, name)
    if key not in _RENAMED:
        _RENAMED[key] = type(name, (cls,), {})
    return _RENAMED[key]


def inplace_view(self: Tensor, view_fn: Callable[..., Tensor], node_name: str,
                 *args: Any) -> Tensor:
    """``self`` changed in place into ``view_fn(self, *args)`` (Note [In-place view ops])."""
    recording = _state.enabled and _requires_grad(self)
    _check_inplace(self, recording, writes=False)
    if recording and self._base is not None:
        refresh_view(self)
    r = view_fn(self, *args)
    old_fn, old_nr = self._grad_fn, self._output_nr
    self._data = r._data
    fn = r._grad_fn
    if fn is not None:
        fn.__class__ = _renamed(type(fn), node_name)
        self._grad_fn, self._output_nr = fn, r._output_nr
        self._requires_grad = r._requires_grad
        if self._retains_grad:
            _move_retains_grad(self, old_fn, old_nr)
    if r._fw_grads:
        self._fw_grads = r._fw_grads
    if self._base is not None and r._base is self._base:
        self._view_steps = r._view_steps
        self._view_version = r._view_version
    _bump(self)
    if self._base is not None:
        self._view_version = self._version_counter[0]
    return self
