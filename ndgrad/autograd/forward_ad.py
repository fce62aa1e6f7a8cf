"""Forward-mode automatic differentiation: dual tensors and levels (``torch.autograd.forward_ad``).

Inside a dual level, ``make_dual(x, v)`` gives a tensor that carries the tangent ``v``; every op
on it computes its output's tangent with the op's JVP rule (the op table, ops/_jvp.py), and
``unpack_dual(y)`` returns ``(primal, tangent)``: the tangent is the Jacobian-vector product
``J v``. Beyond PyTorch, levels nest: the tangent computed at an inner level is itself dual at
the outer levels, so two nested levels give second derivatives (forward-over-forward).

Example:
    >>> import ndgrad
    >>> import ndgrad.autograd.forward_ad as fwAD
    >>> x = ndgrad.tensor([1.0, 2.0])
    >>> with fwAD.dual_level():
    ...     y = fwAD.make_dual(x, ndgrad.ones(2)) ** 3
    ...     fwAD.unpack_dual(y).tangent
    tensor([ 3., 12.])

Note [Forward AD]
* Tangents live on tensors, per level: ``t._fw_grads`` is ``{level: tangent}`` (the class
  default is None, so creating a tensor costs nothing more). Each level keeps a weak registry of
  the tensors holding a tangent at it; ``exit_dual_level`` deletes those tangents.
* Layout (seed 001, ``has_same_meta``): a tangent has its primal's size, strides, storage offset
  and storage size. A tangent that does not is copied into zeros laid out like the primal.
* Views: a view op's JVP (``linear``) applies the view to the input's tangent, so the tangent of
  a view is a view of its base's tangent. A view without a tangent whose base got one later
  (an in-place op on the base) reads it lazily: the view's recorded steps (``_view_steps``,
  ops/views_inplace.py) are replayed on the base's tangent.
* In-place ops (``apply_inplace``): the op's out-of-place result carries the new tangent; it is
  copied into the existing tangent (which keeps its identity, and views of it see the change).
  A tensor without a tangent gets this one; if it is a view, its base first gets a zero tangent
  and the view's tangent becomes the matching view of it (seed 001, case 4).
* Propagation: ``ops/_dispatch.apply`` checks one module flag, ``_FW_AD`` (Note [Instrumentation
  flags]), true while a level exists; then ``_fw_apply`` runs the op's JVP rule for every level
  at which an input has a tangent, lowest level first.
* Nesting: while the rule for level L runs, levels >= L are hidden (``_tls.limit``), so the ops
  of the rule propagate only the outer levels' tangents: the tangent at L is dual at levels < L
  and never at L or above. Lower levels are set first, so a rule for L that reads
  ``ctx.result`` sees the result's tangents at the outer levels.
* Backward inside a level (forward-over-reverse): VJP rules use saved tensors, which must carry
  their tangents. Saved inputs are the tensors themselves; a saved result is a detached alias
  (autograd/saved.py) that shares the result's tangent dict (``_share_with_saved_result``), and
  its unpacked copy for double backward takes the dict along.
* Custom Functions: ``Function.apply`` runs ``forward`` with propagation off
  (``_set_fwd_grad_enabled(False)``), then calls ``_function_jvp`` (Note [Function.jvp slot],
  autograd/function.py).

Note [Batched tangents]
A tangent may be *batched* (Note [Batched backward], autograd/batching.py): its ``_blevel`` is
an active batch level and its data is ``(B, *primal_shape)``, B tangents at once. Only the
size checks and layout of this module know of it (``_lshape``: the logical shape; a batched
tangent is stored as is, not copied into the primal's layout). JVP rules run their ops under
``_limit``, where ``apply`` hands calls with a batched tangent to the batching rules, so
every output's tangent comes out batched (or unbatched when it does not depend on the
tangents: the same for every row). ``functional.jacobian(..., strategy="forward-mode")`` uses
this to get all columns of a Jacobian in one forward pass. Not supported: nested dual levels
with a tangent batched this way (the ops of a batching rule propagate no tangents).
``ndgrad.func.vmap`` around or inside forward mode does not use it: there the tangent of a
``BatchedTensor`` is a ``BatchedTensor`` of the same vmap level (Note [Vectorized vmap] in
func/_vmap.py, Note [Nested vmap levels] in ops/_batching.py).
"""

from __future__ import annotations

import sys

import functools
import threading
import weakref
from importlib import import_module
from typing import Any, Callable, NamedTuple, Optional, Sequence

import numpy as np

from .. import _format
from . import batching as _bt
from ..ops import _dispatch as _d
from ..ops import _jvp

_tensor_mod = import_module("ndgrad.tensor")  # the module; ndgrad.tensor is also a function

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual", "dual_level"]

_current_level = -1
_levels: list = []                 # per active level: {id(tensor): tensor}, weak values
_lock = threading.Lock()


_tls = _jvp.FW_STATE               # this thread's propagation state (ops/_jvp.py)

_DIFF = _d._DIFF_DTYPES


# ---------------------------------------------------------------------------- levels
def enter_dual_level() -> int:
    """Enter a new forward grad level and return it; it becomes the default level of
    ``make_dual``/``unpack_dual``. Levels nest (PyTorch allows only one).

    >>> import ndgrad.autograd.forward_ad as fwAD
    >>> lvl = fwAD.enter_dual_level(); fwAD.exit_dual_level(level=lvl); lvl
    0
    """
    global _current_level
    with _lock:
        if _current_level != len(_levels) - 1:
            raise RuntimeError("Entering a new forward AD level but the current level is not "
                               "valid. Make sure you did not modify it directly.")
        _levels.append(weakref.WeakValueDictionary())
        _current_level = len(_levels) - 1
        _d._FW_AD = True
        return _current_level


def exit_dual_level(*, level: Optional[int] = None) -> None:
    """Exit the innermost forward grad level, deleting every tangent associated with it.

    >>> import ndgrad.autograd.forward_ad as fwAD
    >>> fwAD.exit_dual_level()
    Traceback (most recent call last):
    RuntimeError: Dual level must be a positive number.
    """
    global _current_level
    with _lock:
        if level is None:
            level = _current_level
        if level != _current_level:
            raise RuntimeError("Trying to exit a forward AD level that was not the last one that "
                               "was created. This is not supported.")
        if level < 0:
            raise RuntimeError("Dual level must be a positive number.")
        registry = _levels.pop()
        for t in list(registry.values()):
            grads = t._fw_grads
            if grads:
                grads.pop(level, None)
        _current_level = level - 1
        if not _levels:
            _d._FW_AD = False


class dual_level:
    """Context manager (or decorator) for a forward AD level: enters a level on entry (``as``
    gives it) and exits it, deleting its tangents, on exit.

    >>> import ndgrad
    >>> import ndgrad.autograd.forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     y = fwAD.make_dual(ndgrad.tensor([2.0]), ndgrad.tensor([1.0])).sin()
    ...     t = fwAD.unpack_dual(y).tangent
    >>> t, fwAD.unpack_dual(y).tangent
    (tensor([-0.4161]), None)
    """

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc: object) -> None:
        exit_dual_level()

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with dual_level():
                return fn(*args, **kwargs)
        return wrapper


class _set_fwd_grad_enabled:
    """Turn tangent propagation on or off in this thread (PyTorch's private
    ``_set_fwd_grad_enabled``); used around a custom Function's forward."""

    def __init__(self, mode: bool) -> None:
        self.prev = _tls.enabled
        _tls.enabled = bool(mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        _tls.enabled = self.prev


def _is_fwd_grad_enabled() -> bool:
    return _tls.enabled


# ---------------------------------------------------------------------------- public API
class UnpackedDualTensor(NamedTuple):
    """What ``unpack_dual`` returns: the primal and the tangent (None if there is none)."""

    primal: Any
    tangent: Optional[Any]


def make_dual(tensor: Any, tangent: Any, *, level: Optional[int] = None) -> Any:
    """A view of ``tensor`` carrying ``tangent`` at ``level`` (default: the current level).

    The tangent is stored as is when it has ``tensor``'s layout, else copied into one that
    has. Backward-differentiable with respect to ``tensor``.

    >>> import ndgrad
    >>> import ndgrad.autograd.forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     x = fwAD.make_dual(ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([1.0, 0.0]))
    ...     fwAD.unpack_dual(x * x).tangent
    tensor([2., 0.])
    """
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: "
                         f"{tangent.dtype}")
    if level > _current_level:
        raise RuntimeError("Invalid level given to _make_dual")
    if _tangent(tensor, level) is not None:
        raise RuntimeError("Making a dual Tensor based on a Tensor that already has a forward "
                           f"gradient at the same level {level} is not supported.")
    if _tangent(tangent, level) is not None:
        raise RuntimeError("Setting a forward grad that itself has a forward gradient at the "
                           f"same level{level} is not supported.")
    _check_size(tensor, tangent)
    result = _d.apply(_jvp.MAKE_DUAL, (tensor,), (tensor._data,))
    _set(result, tangent, level)
    return result


def unpack_dual(tensor: Any, *, level: Optional[int] = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor`` at ``level`` (default: the current level).

    ``primal`` is a view of ``tensor`` without the tangent at ``level``; ``tangent`` is the
    tangent itself (not a copy), or None. Outside any level: ``(tensor, None)``.

    >>> import ndgrad
    >>> import ndgrad.autograd.forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     p, t = fwAD.unpack_dual(fwAD.make_dual(ndgrad.zeros(2), ndgrad.ones(2)).exp())
    >>> p, t
    (tensor([1., 1.]), tensor([1., 1.]))
    """
    if level is None:
        level = _current_level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    if not isinstance(tensor, _tensor_mod.Tensor):
        raise TypeError(f"_unpack_dual(): argument 'dual' (position 1) must be Tensor, not "
                        f"{type(tensor).__name__}")
    if level > _current_level and tensor._fw_grads:
        raise RuntimeError("Invalid level given to _fw_primal")
    tangent = _tangent(tensor, level) if _tls.enabled else None
    primal = _d.apply(_jvp.FW_PRIMAL, (tensor,), (tensor._data,), (level,))
    return UnpackedDualTensor(primal, tangent)


# ---------------------------------------------------------------------------- tangent storage
def _lshape(t: Any) -> tuple:
    """``t``'s logical shape: without the batch dimension of a batched tangent (Note [Batched
    tangents])."""
    lv = t._blevel
    if lv and lv in _bt.ACTIVE:
        return t._data.shape[1:]
    return t._data.shape


def _is_batched(t: Any) -> bool:
    lv = t._blevel
    return bool(lv) and lv in _bt.ACTIVE


def _check_size(t: Any, tangent: Any) -> None:
    if _lshape(t) != _lshape(tangent):
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size {list(_lshape(t))} "
            f"while the given forward gradient is of size {list(_lshape(tangent))}.")


class _limit:
    """Hide levels >= ``level`` in this thread while computing level ``level``'s tangents."""

    __slots__ = ("level", "prev")

    def __init__(self, level: int) -> None:
        self.level = level

    def __enter__(self) -> None:
        self.prev = _tls.limit
        _tls.limit = self.level

    def __exit__(self, *exc: object) -> None:
        _tls.limit = self.prev


def _visible() -> int:
    """How many levels (0 .. n-1) ops propagate in this thread right now."""
    if not _tls.enabled:
        return 0
    n = len(_levels)
    lim = _tls.limit
    return n if lim is None or lim > n else lim


def _store(t: Any, level: int, tangent: Any) -> None:
    grads = t._fw_grads
    if grads is None:
        grads = t._fw_grads = {}
    grads[level] = tangent
    _levels[level][id(t)] = t


def _tangent(t: Any, level: int) -> Any:
    """``t``'s tangent at ``level``: its own, or for a view, the view of its base's tangent."""
    grads = t._fw_grads
    if grads is not None:
        tg = grads.get(level)
        if tg is not None:
            return tg
    base = t._base
    if base is None or base._fw_grads is None:
        return None
    bt = base._fw_grads.get(level)
    if bt is None:
        return None
    tg = _replay(bt, t._view_steps, level)
    if tg is not None:
        _store(t, level, tg)
    return tg


def _current_tangent(t: Any) -> Any:
    """The tangent at the current level (what ``repr`` shows), or None."""
    level = _current_level
    return _tangent(t, level) if level >= 0 and _tls.enabled else None


def _forward_view(steps: tuple, level: int) -> bool:
    """Is a view with these steps a view for forward AD at ``level``? Not if it was made by
    ``unpack_dual(..., level)`` (its primal has no tangent at that level by definition)."""
    fw_primal = _jvp.FW_PRIMAL
    return not any(op is fw_primal and args[0] == level for op, args, _ in steps)


def _replay(base_tangent: Any, steps: tuple, level: int) -> Any:
    """The view of ``base_tangent`` made by ``steps`` (ops/views_inplace.py), with ndgrad ops."""
    if not _forward_view(steps, level):
        return None
    r = base_tangent
    with _limit(level):
        for op, args, index in steps:
            out = _d.apply(op, (r,), (r._data,), args)
            r = out[index] if index is not None else out
    return r


def _root(arr: np.ndarray) -> np.ndarray:
    return _tensor_mod._storage_root(arr)      # Note [Storage] in ops/shape.py


def _ptr(arr: np.ndarray) -> int:
    return arr.__array_interface__["data"][0]


def _same_meta(a: np.ndarray, b: np.ndarray) -> bool:
    """Seed 001's ``has_same_meta`` for a tangent ``a`` and its primal ``b`` (in elements)."""
    if a.shape != b.shape:
        return False
    ra, rb = _root(a), _root(b)
    ia, ib = a.itemsize, b.itemsize
    if _tensor_mod._storage_nbytes(ra) // ia != _tensor_mod._storage_nbytes(rb) // ib:
        return False
    if a.size == 0:
        return True
    if (_ptr(a) - _ptr(ra)) // ia != (_ptr(b) - _ptr(rb)) // ib:
        return False
    for sa, sb, n in zip(a.strides, b.strides, a.shape):
        if n > 1 and sa // ia != sb // ib:
            return False
    return True


def _zeros_like_layout(p: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Zeros of ``dtype`` with ``p``'s size, strides, storage offset and storage size."""
    root = _root(p)
    item = p.itemsize
    strides = [s // item for s in p.strides]
    if p.size == 0 or any(s < 0 for s in strides) or any(s * item != s0 for s, s0 in
                                                         zip(strides, p.strides)):
        return np.zeros(p.shape, dtype=dtype)
    offset = (_ptr(p) - _ptr(root)) // item
    if offset < 0:                     # a root with negative strides: no such layout
        return np.zeros(p.shape, dtype=dtype)
    buf = np.zeros(_tensor_mod._storage_nbytes(root) // item, dtype=dtype)
    out = np.ndarray(p.shape, dtype=dtype, buffer=buf, offset=offset * buf.itemsize,
                     strides=[s * buf.itemsize for s in strides])
    if any(s == 0 and n > 1 for s, n in zip(strides, p.shape)):
        out.flags.writeable = False    # overlapping (expanded): copying into it is refused
    return out


def _set(t: Any, tangent: Any, level: int) -> None:
    """Store ``tangent`` (already of ``t``'s size) as ``t``'s tangent, in ``t``'s layout (a
    batched tangent is stored as is)."""
    if not _is_batched(tangent) and not _same_meta(tangent._data, t._data):
        z = _tensor_mod._wrap(_zeros_like_layout(t._data, tangent._data.dtype))
        with _limit(level):
            z.copy_(tangent)
        tangent = z
    _store(t, level, tangent)


def _set_inplace(t: Any, tangent: Any, level: int) -> None:
    """Give ``t`` (which has no tangent at ``level``) a tangent after an in-place op. If ``t``
    is a view, its base first gets a zero tangent and ``t``'s is the matching view of it."""
    base = t._base
    if base is not None and _forward_view(t._view_steps, level):
        if _same_meta(tangent._data, base._data) and _same_meta(tangent._data, t._data):
            base_tangent = tangent
        else:
            if _is_batched(tangent):
                base_tangent = _tensor_mod._wrap(np.zeros(
                    tangent._data.shape[:1] + base._data.shape, dtype=tangent._data.dtype))
                base_tangent._blevel = tangent._blevel
            else:
                base_tangent = _tensor_mod._wrap(_zeros_like_layout(base._data,
                                                                    tangent._data.dtype))
            view = _replay(base_tangent, t._view_steps, level)
            with _limit(level):
                view.copy_(tangent)
            tangent = view
        _store(base, level, base_tangent)
    _set(t, tangent, level)


# ---------------------------------------------------------------------------- dispatcher hooks
def _fw_apply(op: Any, tensors: tuple, outs: tuple, args: tuple) -> None:
    """Called by ``apply`` after every op while a level exists: set the outputs' tangents."""
    n = _visible()
    if not n:
        return
    diff = [o._data.dtype in _DIFF for o in outs]
    if not any(diff):
        return
    for level in range(n):
        tangents = [_tangent(t, level) for t in tensors]
        for tg in tangents:
            if tg is not None:
                break
        else:
            continue
        rule = op.jvp
        if rule is None:
            raise NotImplementedError(f"Trying to use forward AD with aten::{op.name} that does "
                                      "not support it.")
        ctx = _jvp.JvpContext(op, tensors, outs[0] if op.num_outputs == 1 else outs, args,
                              level)
        with _limit(level):
            res = rule(ctx, *tangents)
        if op.num_outputs == 1:
            res = (res,)
        blevel = _batched_level(tangents)
        for o, tg, d in zip(outs, res, diff):
            if tg is None or not d:
                continue
            if blevel and not _is_batched(tg):
                tg = _as_batched(tg, blevel, tangents)
            if _lshape(tg) != o._data.shape:
                with _limit(level):
                    tg = tg.expand(o._data.shape)
            elif not op.view and _aliases(tg, tangents):
                with _limit(level):
                    tg = tg.clone()
            _set(o, tg, level)
    node = outs[0]._grad_fn
    if node is not None and -1 in op.save_idx:
        _share_with_saved_result(node, outs)


def _batched_level(tangents: Sequence) -> int:
    for t in tangents:
        if t is not None and _is_batched(t):
            return t._blevel
    return 0


def _as_batched(tg: Any, blevel: int, tangents: Sequence) -> Any:
    """A tangent computed without the batched tangents (a constant one, such as zeros): the
    same for every row, materialized so that in-place updates of it can be batched."""
    n = next(t._data.shape[0] for t in tangents if t is not None and t._blevel == blevel)
    out = _tensor_mod._wrap(np.ascontiguousarray(np.broadcast_to(
        tg._data, (n,) + tg._data.shape)))
    out._blevel = blevel
    return out


def _share_with_saved_result(node: Any, outs: tuple) -> None:
    # A node that saved its result keeps a detached alias of it (autograd/saved.py). The alias
    # shares the result's tangents, so that backward rules using it see them when they run
    # inside a level (forward-over-reverse: the tangent of a gradient).
    for s in node._saved:
        alias = getattr(s, "_tensor", None)
        if alias is not None and getattr(s, "_is_output", False):
            grads = outs[s._output_nr]._fw_grads
            if grads:
                alias._fw_grads = grads
                for level in grads:
                    _levels[level][id(alias)] = alias


def _aliases(tg: Any, tangents: Sequence) -> bool:
    return any(t is not None and (t is tg or np.may_share_memory(t._data, tg._data))
               for t in tangents)


def _inplace_fn(self: Any, fn: Callable) -> Callable:
    """Called by ``apply_inplace`` while a level exists: wrap its out-of-place ``fn`` so that
    the result's tangents are written into ``self``'s (see Note [Forward AD])."""
    n = _visible()
    if not n:
        return fn

    def call(s: Any, *args: Any) -> Any:
        if s is not self:                  # apply_inplace's snapshot of the old value
            for level in range(n):
                st = _tangent(self, level)
                if st is not None:
                    with _limit(level):
                        _store(s, level, st.clone())
        res = fn(s, *args)
        _update_inplace(self, res, n)
        return res
    return call


_BATCHED_INTO_UNBATCHED = (
    "vmap: aten::copy_(self, *extra_args) is not possible because there exists a Tensor "
    "`other` in extra_args that has more elements than `self`. This happened due to `other` "
    "being vmapped over but `self` not being vmapped over at level {}. Please try to use "
    "out-of-place operators instead of aten::copy_. If said operator is being called inside "
    "the PyTorch framework, please file a bug report instead.")


def _update_inplace(self: Any, res: Any, n: int) -> None:
    tl = _tensor_mod._transform_local
    tid = tl.tid
    if not tid:
        _update_tangents(self, res, n)
        return
    # The tangent written is the op's own business, not the function's: a tangent passed to
    # ``jvp`` (made outside it) is updated in place, as in torch, not refused as captured
    # (Note [Captured tensors] in ops/views_inplace.py).
    tl.tid = 0
    try:
        _update_tangents(self, res, n)
    finally:
        tl.tid = tid


def _update_tangents(self: Any, res: Any, n: int) -> None:
    src, dst = res._data, self._data
    if dst.dtype not in _DIFF:
        return
    # Results that apply_inplace will refuse to store (its errors come first): no update.
    if src.dtype != dst.dtype and not np.can_cast(src.dtype, dst.dtype, "same_kind"):
        return
    if src.shape != dst.shape:
        try:
            if np.broadcast_shapes(src.shape, dst.shape) != dst.shape:
                return
        except ValueError:
            return
    for level in range(n):
        rt = _tangent(res, level)
        st = _tangent(self, level)
        if rt is st:
            continue
        with _limit(level):
            if st is None:
                if _lshape(rt) != dst.shape:
                    rt = rt.expand(dst.shape)
                _set_inplace(self, rt, level)
            elif rt is None:
                st.zero_()
            else:
                if _is_batched(rt) and not _is_batched(st):
                    # B tangents cannot be written into one: torch's vmap refuses the copy_
                    raise RuntimeError(_BATCHED_INTO_UNBATCHED.format(
                        sum(1 for lv in _bt.ACTIVE if lv <= rt._blevel)))
                if np.may_share_memory(rt._data, st._data):
                    rt = rt.clone()
                st.copy_(rt)


# ---------------------------------------------------------------------------- custom Functions
def _function_jvp(cls: Any, ctx: Any, inputs: Sequence, outputs: Sequence) -> None:
    """Forward AD of a custom Function (called by ``Function.apply``, Note [Function.jvp
    slot]): calls ``cls.jvp(ctx, *tangents)`` per level and attaches the results."""
    Tensor = _tensor_mod.Tensor
    n = _visible()
    if not n:
        return
    dirty = {id(t) for t in getattr(ctx, "dirty_tensors", ())}
    input_ids = {id(a) for a in inputs if isinstance(a, Tensor)}
    for o in outputs:
        # Tangents the ops inside ``forward`` may have attached are not the Function's.
        if isinstance(o, Tensor) and id(o) not in dirty and o._fw_grads:
            o._fw_grads = None
    for level in range(n):
        tangents = [_tangent(a, level) if isinstance(a, Tensor) else None for a in inputs]
        if all(t is None for t in tangents):
            continue
        if ctx.materialize_grads:          # zeros for inputs without a tangent, as in backward
            tangents = [t if t is not None or not isinstance(a, Tensor)
                        or a._data.dtype not in _DIFF
                        else _tensor_mod._wrap(np.zeros_like(a._data))
                        for a, t in zip(inputs, tangents)]
        # ``jvp`` gets the ctx itself (attributes set, read and deleted as in forward and
        # backward); only its ``saved_tensors`` are those of ``save_for_forward``.
        ctx._in_jvp = True
        try:
            with _limit(level):
                res = cls.jvp(ctx, *tangents)
        finally:
            del ctx._in_jvp
        res = res if isinstance(res, tuple) else (res,)
        if len(res) != len(outputs):
            raise RuntimeError(f"Function's jvp returned an invalid number of forward gradients "
                               f"(expected {len(outputs)} but got {len(res)})")
        for o, tg in zip(outputs, res):
            if tg is None or not isinstance(o, Tensor) or o._data.dtype not in _DIFF:
                continue
            _check_size(o, tg)
            if id(o) in dirty:
                st = _tangent(o, level)
                if st is None:
                    _set_inplace(o, tg, level)
                elif st is not tg:
                    raise RuntimeError(
                        "An inplace custom Function is not modifying the forward mode gradients "
                        "inplace. If the forward is modifying an input inplace, then the jvp "
                        "function must modify the corresponding gradient inplace.")
                continue
            if o._base is not None and (id(o) in input_ids or _views_input(o, inputs)) \
                    and tg._base is None:
                raise RuntimeError("A custom Function's forward is returning a view (or an input "
                                   "as-is) but the jvp is not returning a view.")
            _set(o, tg, level)


def _views_input(o: Any, inputs: Sequence) -> bool:
    Tensor = _tensor_mod.Tensor
    return any(isinstance(a, Tensor) and np.may_share_memory(o._data, a._data) for a in inputs)


# ---------------------------------------------------------------------------- gradcheck
def check_jvp_against_numerical(func: Callable, inputs: Sequence, i_list: Sequence[int],
                                eps: float, atol: float, rtol: float) -> None:
    """``gradcheck(..., check_forward_ad=True)``: every column of the Jacobian computed with
    forward AD (one unit tangent per input element) against central finite differences.
    Raises ``GradcheckError`` ("Jacobian mismatch for output k with respect to input i")."""
    # The module (``ndgrad.autograd.gradcheck`` the attribute is the function, as in PyTorch).
    # local import: gradcheck imports this module at module level
    gc = sys.modules["ndgrad.autograd.gradcheck"]
    inputs = tuple(inputs)
    outputs = gc._outputs(func, inputs)
    out_idx = gc._diff_outputs(outputs)
    for i in i_list:
        x = inputs[i]
        numeric = gc._numerical_columns(func, inputs, i, eps, out_idx)
        n_in = x.numel()
        data = x.detach().numpy()
        directions = (1.0, 1j) if data.dtype.kind == "c" else (1.0,)
        for di, direction in enumerate(directions):
            ana = []
            for k in out_idx:
                out = outputs[k].detach().numpy()
                ana.append(np.zeros((n_in, out.size), dtype=np.complex128 if out.dtype.kind == "c"
                                    or data.dtype.kind == "c" else np.float64))
            for j in range(n_in):
                u = np.zeros(data.shape, dtype=data.dtype)
                u.reshape(-1)[j] = direction
                with dual_level() as lvl:
                    duals = list(inputs)
                    duals[i] = make_dual(x, _tensor_mod._wrap(u), level=lvl)
                    outs = gc._outputs(func, tuple(duals))
                    for pos, k in enumerate(out_idx):
                        t = unpack_dual(outs[k], level=lvl).tangent
                        if t is not None:
                            ana[pos][j] = t.detach().numpy().reshape(-1)
            for pos, k in enumerate(out_idx):
                num = numeric[pos][di]
                if not np.allclose(ana[pos], num, rtol=rtol, atol=atol):
                    what = "" if di == 0 else " (tangent = 1j)"
                    raise gc.GradcheckError(gc._error(k, i, num, ana[pos], what))


# The dispatcher calls these while a level exists (Note [Instrumentation flags] in
# ops/_dispatch.py); printing a tensor shows its tangent.
_d._fw_apply = _fw_apply
_d._fw_inplace = _inplace_fn
_format._tangent_of = _current_tangent
