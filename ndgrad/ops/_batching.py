"""Batching rules: every op of the op table on tensors with a leading batch dimension.

See Note [Batched backward] in autograd/batching.py for the design. This module holds

* ``batched_apply``: called by ``_dispatch.apply`` while a batch level is active; when an input
  is batched (or a logical proxy of a batched tensor) it runs the op's rule with the level
  suspended and marks the result as batched;
* ``call``: the entry of public ops that compute with shapes before reaching ``apply``; it runs
  the op on logical proxies (row 0 of each batched tensor) so that argument checks and dim
  arithmetic see logical shapes;
* ``RULES``: op -> ``rule(c, args)``. ``c.ts`` are the physical tensors (batched ones have the
  batch dimension first), ``c.arrs`` their arrays (cast like the op's inputs), ``c.bd`` 1 for
  batched inputs, ``c.ls`` the logical shapes, ``c.B`` the batch size; ``args`` are the op's
  logical arguments. A rule computes the op physically (recording the physical ops when a graph
  is recorded) with dims shifted past the batch dimension.

Example:
    >>> import ndgrad
    >>> w = ndgrad.ones(2, 3)
    >>> x = ndgrad.ones(3, requires_grad=True)
    >>> (j,) = ndgrad.autograd.grad(w @ x, x, ndgrad.eye(2), is_grads_batched=True)
    >>> j.shape
    ndgrad.Size([2, 3])
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import numpy as np

from ..autograd import batching as _bt
from ..autograd.batching import ACTIVE, VMAP
from ..autograd.saved import TensorList
from ..tensor import Size, Tensor, _new, _wrap
from .._torch_function import _disabled_torch_function_impl
from . import _dispatch, views_inplace
from ._dispatch import Op, apply
from ._jvp import bilinear as _jvp_bilinear
from ._util import check_broadcast, wrap_dim
from .views_inplace import VIEW_REPLAY, CopySlices

__all__ = ["RULES", "VJP_ONLY", "batched_apply", "call", "marked", "supports", "node_supported",
           "argminmax", "BatchedTensor", "BatchingUnsupported", "VmapError", "mark", "unmark",
           "per_entry"]

RULES: dict = {}
_EMPTY_SLICE = slice(None)


class _Call:
    """The physical view of one op call with batched inputs (see the module docstring)."""

    __slots__ = ("op", "ts", "arrs", "bd", "ls", "B")

    def __init__(self, op, ts, arrs, bd, ls, B) -> None:
        self.op, self.ts, self.arrs, self.bd, self.ls, self.B = op, ts, arrs, bd, ls, B


# Ops without a batching rule whose backward only uses ops that have one (their nodes can run
# on batched gradients).
VJP_ONLY: set = set()


def supports(op: Op) -> bool:
    """True if ``op`` has a batching rule."""
    return op in RULES


def _index_mappable(steps: tuple) -> bool:
    """View steps that map elements to elements of the same dtype (not real/imag views)."""
    return all(op.name not in ("real", "imag") for op, _, _ in steps)


def node_supported(node: Any) -> bool:
    """True if ``node`` can run on batched gradients (api.py checks every node of the graph
    before a vectorized backward; hooks are checked there)."""
    op = getattr(type(node), "_op", None)
    if op is not None:
        if op is VIEW_REPLAY and not _index_mappable(node._args[0]):
            return False
        return op in RULES or op in VJP_ONLY
    if type(node) is CopySlices:
        return _index_mappable(node._steps) and node_supported(node.fn)
    return False


class BatchingUnsupported(RuntimeError):
    """A call the batching rules cannot run batched (``vmap`` then runs the function per
    entry, a batched backward row by row)."""


def _unsupported(op: Any, why: str = "") -> RuntimeError:
    name = op.node_name if isinstance(op, Op) else getattr(op, "__name__", str(op))
    return BatchingUnsupported(f"ndgrad: batched gradients (is_grads_batched / vectorize=True) "
                               f"do not support {name} here{': ' + why if why else ''}")


def batched_apply(op: Op, tensors: tuple, arrays: tuple, args: tuple) -> Any:
    """Run ``op`` batched if an input is batched; None if none is (``apply`` goes on)."""
    for t in tensors:
        if t._bproxy is not None or (t._blevel and t._blevel in ACTIVE):
            break
    else:
        if VMAP and args:
            lv = _args_level(args)
            if lv:
                return _op_per_entry(op, list(tensors), list(arrays), [0] * len(tensors), args,
                                     lv, VMAP[lv])
        return None
    if len(tensors) != len(arrays):
        raise _unsupported(op, "operands that are not all tensors")
    ts, arrs, bd, ls = [], [], [], []
    level = B = 0
    for t, a in zip(tensors, arrays):
        p = t._bproxy
        if p is not None:
            t._bused = True
            if a.shape != t._data.shape:
                raise _unsupported(op, "an operand reshaped before the op")
            pa = p._data
            if pa.dtype != a.dtype:
                pa = pa.astype(a.dtype)
            lv, lshape, t = p._blevel, a.shape, p
        elif t._blevel and t._blevel in ACTIVE:
            if a.shape != t._data.shape:
                raise _unsupported(op, "an operand reshaped before the op")
            pa, lv, lshape = a, t._blevel, a.shape[1:]
        else:
            ts.append(t)
            arrs.append(a)
            bd.append(0)
            ls.append(a.shape if a is not None else ())
            continue
        if level and lv != level:
            if lv in VMAP and level in VMAP:     # nested vmap levels: lift to the inner one
                lts, larrs = _lifted(tensors, arrays)
                return batched_apply(op, lts, larrs, args)
            raise _unsupported(op, "tensors of two batch levels")
        level, B = lv, pa.shape[0]
        ts.append(t)
        arrs.append(pa)
        bd.append(1)
        ls.append(lshape)
    rule = _VECTOR.get(op) or RULES.get(op)
    if level in VMAP:
        if rule is None or (args and _args_level(args)):
            return _op_per_entry(op, ts, arrs, bd, args, level, B)
        c = _Call(op, ts, arrs, bd, ls, B)
        if _bt.RANDOMNESS[level] == "same":
            out = _same_randomness(c, args, rule, level)
        else:
            with _bt.suspended(level):
                out = rule(c, args)
        if type(out) is tuple:
            for o in out:
                mark(o, level)
        else:
            mark(out, level)
        return out
    if rule is None:
        raise _unsupported(op)
    c = _Call(op, ts, arrs, bd, ls, B)
    with _bt.suspended(level):
        out = rule(c, args)
    if type(out) is tuple:
        for o in out:
            o._blevel = level
    else:
        out._blevel = level
    return out


# ---------------------------------------------------------------------------- vmap levels
# Note [Vectorized vmap] in func/_vmap.py. A tensor batched at a vmap level is a
# ``BatchedTensor``: the same object layout as a Tensor (its class is switched in place), whose
# metadata methods report the logical shape while its level is alive and not suspended.
def _vlevel(t: Any) -> int:
    lv = t._blevel
    return lv if lv and lv in ACTIVE and lv in VMAP else 0


def VmapError(msg: str) -> RuntimeError:
    """torch's own refusals inside vmap (``.item()``, control flow, data access, dynamic
    shapes), a RuntimeError as in torch, marked as the user's error: never a reason to run
    per entry instead."""
    e = RuntimeError(msg)
    e._vmap_user = True                 # type: ignore[attr-defined]
    return e


class BatchedTensor(Tensor):
    """A tensor batched at a ``vmap`` level: ``_data`` holds the entries along dim 0, Python
    code sees one entry's (logical) shape. Outside its level it is an ordinary tensor."""

    __torch_function__ = _disabled_torch_function_impl   # ops return plain tensors

    @property
    def shape(self) -> Size:
        d = self._data.shape
        return Size(d[1:] if _vlevel(self) else d)

    def size(self, dim: Any = None) -> Any:
        shape = self.shape
        if dim is None:
            return shape
        return shape[wrap_dim(dim, len(shape))]

    @property
    def ndim(self) -> int:
        return self._data.ndim - (1 if _vlevel(self) else 0)

    def dim(self) -> int:
        return self._data.ndim - (1 if _vlevel(self) else 0)

    def ndimension(self) -> int:
        return self.dim()

    def numel(self) -> int:
        n = self._data.size
        if _vlevel(self):
            b = self._data.shape[0]
            return int(np.prod(self._data.shape[1:])) if not b else n // b
        return n

    def nelement(self) -> int:
        return self.numel()

    def __len__(self) -> int:
        if not _vlevel(self):
            return Tensor.__len__(self)
        if self._data.ndim == 1:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[1]

    def item(self) -> Any:
        if _vlevel(self):
            raise VmapError(_ITEM)
        return Tensor.item(self)

    def __bool__(self) -> bool:
        if _vlevel(self):
            raise VmapError(_CONTROL_FLOW)
        return Tensor.__bool__(self)

    def tolist(self) -> Any:
        if _vlevel(self):
            raise VmapError(_DATA)
        return Tensor.tolist(self)

    def numpy(self, *, force: bool = False) -> np.ndarray:
        if _vlevel(self):
            raise VmapError(_DATA)
        return Tensor.numpy(self, force=force)

    def __array__(self, dtype: Any = None) -> np.ndarray:      # no copy: as Tensor's
        if _vlevel(self):
            raise VmapError(_DATA)
        return Tensor.__array__(self, dtype)

    def __int__(self) -> int:
        if _vlevel(self):
            raise VmapError(_ITEM)
        return Tensor.__int__(self)

    def __float__(self) -> float:
        if _vlevel(self):
            raise VmapError(_ITEM)
        return Tensor.__float__(self)

    def __index__(self) -> int:
        if _vlevel(self):
            raise VmapError(_ITEM)
        return Tensor.__index__(self)

    def view_as(self, other: Tensor) -> Tensor:
        return self.view(other.shape)

    def reshape_as(self, other: Tensor) -> Tensor:
        return self.reshape(other.shape)

    def detach(self) -> Tensor:
        out = Tensor.detach(self)
        level = _vlevel(self)
        return mark(out, level) if level else out

    @property
    def data(self) -> Tensor:
        if _vlevel(self):
            raise VmapError("accessing `data` under vmap transform is not allowed")
        return Tensor.data.fget(self)   # type: ignore[attr-defined]

    @data.setter
    def data(self, value: Tensor) -> None:
        Tensor.data.fset(self, value)   # type: ignore[attr-defined]


_ITEM = ("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over "
         "calling .item() on a Tensor, please try to rewrite what you're doing with other "
         "operations. If error is occurring somewhere inside PyTorch internals, please file a "
         "bug report.")
_CONTROL_FLOW = ("vmap: It looks like you're attempting to use a Tensor in some data-dependent "
                 "control flow. We don't support that yet, please file an issue at "
                 "https://github.com/pytorch/pytorch/issues .")
_DATA = ("Cannot access data pointer of Tensor that doesn't have storage (a BatchedTensor "
         "inside vmap: its values are those of every batch entry)")
_DYNAMIC = ("vmap: We do not support batching operators that can output dynamic shape. "
            "Attempted to vmap over aten::{}. Please file an issue at "
            "https://github.com/pytorch/pytorch/issues if you need this feature.")
_NO_FALLBACK = "Batching rule not implemented for aten::{}. We could not generate a fallback."
_ISSUE = ("Please file an issue at https://github.com/pytorch/pytorch/issues if you need this "
          "feature.")
_BOOL_MASK = ("vmap: We do not support batching operators that can support dynamic shape. "
              "Attempting to batch over indexing with a boolean mask.")
_MASKED_SELECT = ("vmap: Attempted to vmap over `mask` in torch.masked_select(self, mask) We "
                  "cannot support this because for each batch this would return a differently "
                  "shaped Tensor. " + _ISSUE)


def _refusal(name: str, args: tuple, kwargs: dict) -> Any:
    """torch's own error for data function ``name`` on these batched arguments (refused even
    when every entry's result would have one shape), or None when torch runs it per entry."""
    if name == "nonzero":
        as_tuple = kwargs.get("as_tuple", args[1] if len(args) > 1 else False)
        return _NO_FALLBACK.format("nonzero_numpy") if as_tuple else _DYNAMIC.format("nonzero")
    if name == "unique":
        dim = kwargs.get("dim", args[4] if len(args) > 4 else None)
        return _DYNAMIC.format("_unique2" if dim is None else "unique_dim")
    if name == "unique_consecutive":
        return _DYNAMIC.format("unique_consecutive")
    if name == "where":                 # the one-argument form: nonzero's tuple
        return _DYNAMIC.format("where")
    if name == "equal":
        return _NO_FALLBACK.format("equal")
    if name == "allclose":
        return "vmap over torch.allclose isn't supported yet. " + _ISSUE
    if name == "masked_select":
        mask = kwargs.get("mask", args[1] if len(args) > 1 else None)
        if isinstance(mask, Tensor) and _vlevel(mask):
            return _MASKED_SELECT
    return None


def refuse_batched_mask(index: Any) -> None:
    """torch's refusal of a boolean (or uint8) mask batched at an active vmap level used as an
    index (``x[mask]``, ``x[mask] = v``, ``index_put``): each entry would select a different
    number of elements."""
    items = index if isinstance(index, (tuple, list)) else (index,)
    for i in items:
        if isinstance(i, Tensor) and i._data.dtype in (np.bool_, np.uint8) and _vlevel(i):
            raise VmapError(_BOOL_MASK)


def mark(t: Tensor, level: int) -> Tensor:
    """Make ``t`` (physical, batch first) batched at vmap level ``level``; returns ``t``.
    Its forward AD tangents of the same physical shape are batched too (Note [Vectorized
    vmap]: a rule computes them on the physical arrays)."""
    t._blevel = level
    t.__class__ = BatchedTensor
    grads = t._fw_grads
    if grads:
        shape = t._data.shape
        for tg in grads.values():
            if tg._blevel != level and tg._data.shape == shape:
                mark(tg, level)
    return t


def unmark(t: Tensor) -> Tensor:
    """The inverse of ``mark``: ``t`` (and its tangents) become ordinary physical tensors."""
    t.__class__ = Tensor
    t._blevel = 0
    grads = t._fw_grads
    if grads:
        for tg in grads.values():
            if tg.__class__ is BatchedTensor:
                unmark(tg)
    return t


def _args_level(args: Any) -> int:
    """The innermost vmap level of the batched tensors among an op's non-tensor arguments
    (0 if none)."""
    best = 0
    for a in args:
        if isinstance(a, Tensor):
            lv = _vlevel(a)
            if lv > best:
                best = lv
        elif isinstance(a, (tuple, list, TensorList)) and type(a) is not str:
            try:
                items = list(a)
            except TypeError:
                continue
            for e in items:
                if isinstance(e, Tensor) and _vlevel(e) > best:
                    best = e._blevel
    return best


# Note [Nested vmap levels]: a vmap level opened inside another one is *flattened*: its
# batched tensors carry the entries of every enclosing level and its own in one leading dim
# (outer entries first: entry ``(b1, b2)`` is row ``b1 * B2 + b2``), so every rule sees one
# batch dim. A tensor batched at an enclosing level only is *lifted* when it meets the inner
# level (each of its rows repeated for the inner entries, differentiably); an unbatched one
# broadcasts as usual.
def lift(t: Tensor, level: int) -> Tensor:
    """``t``, unbatched or batched at a vmap level enclosing ``level``, as a tensor batched
    at ``level`` (the same value for the entries of the inner levels)."""
    src = _vlevel(t) if t._blevel != level else level
    if src == level:
        return t
    T = VMAP[level]
    with _bt.suspended(level):
        if src:
            with _bt.suspended(src):
                d = t._data.shape
                e = _shape.unsqueeze(t, 1)
                e = _shape.expand(e, (d[0], T // d[0]) + d[1:]) if d[0] else e
                e = _shape.reshape(e, (T,) + d[1:])
        else:
            e = _batch_expand(t, T)
    return mark(e, level)


def _lift_to(x: Any, level: int) -> Any:
    """``x`` lifted to ``level`` if it is a tensor batched at an enclosing vmap level."""
    if isinstance(x, Tensor) and x._blevel != level and _vlevel(x):
        return lift(x, level)
    return x


def _lifted(tensors: tuple, arrays: tuple) -> tuple:
    """The operands of one op whose batched ones are at nested vmap levels, all lifted to the
    innermost (Note [Nested vmap levels])."""
    top = 0
    for t in tensors:
        b = t._bproxy if t._bproxy is not None else t
        lv = _vlevel(b)
        top = max(top, lv)
    ts, arrs = [], []
    for t, a in zip(tensors, arrays):
        b = t._bproxy if t._bproxy is not None else t
        lv = _vlevel(b)
        if lv and lv != top:
            if t._bproxy is not None:
                t._bused = True
            b = lift(b, top)
            ts.append(b)
            arrs.append(_arr(b, a))
        else:
            ts.append(t)
            arrs.append(a)
    return tuple(ts), tuple(arrs)


def _row(x: Any, b: int, level: int) -> Any:
    """Entry ``b`` of ``x`` if it is batched at ``level`` or an enclosing vmap level (level
    suspended), else ``x``."""
    if isinstance(x, Tensor):
        if x._blevel == level:
            return _shape.select(x, 0, b)
        if _vlevel(x):
            return _shape.select(lift(x, level), 0, b)
        return x
    if type(x) is TensorList:
        return TensorList(tuple(_row(e, b, level) for e in x))
    if type(x) in (list, tuple):
        return type(x)(_row(e, b, level) for e in x)
    if isinstance(x, dict):
        return {k: _row(v, b, level) for k, v in x.items()}
    return x


def _stack_rows(outs: list, level: int, what: Any) -> Any:
    first = outs[0]
    if first is None and all(o is None for o in outs):
        return None
    if isinstance(first, Tensor):
        for i, o in enumerate(outs):      # torch's fallback stacks the entries' results
            if o._data.shape != first._data.shape:
                raise VmapError(f"stack expects each tensor to be equal size, but got "
                                f"{list(first._data.shape)} at entry 0 and "
                                f"{list(o._data.shape)} at entry {i}")
        return mark(_shape.stack(outs, 0), level)
    if isinstance(first, tuple) and first and all(isinstance(o, Tensor) for o in first):
        items = [_stack_rows([o[i] for o in outs], level, what) for i in range(len(first))]
        named: Any = first
        return named._make(items) if hasattr(first, "_fields") else tuple(items)
    raise _unsupported(what, "a result that is not a tensor")


def _op_per_entry(op: Op, ts: list, arrs: list, bd: list, args: tuple, level: int,
                  B: int) -> Any:
    """An op without a batching rule at a vmap level: run once per entry and stack (exact;
    torch's slow-path fallback)."""
    if not B:
        raise _unsupported(op, "an empty batch")
    outs = []
    replay = _Replay(level)
    with _bt.suspended(level):
        for b in range(B):
            rts, rarrs = [], []
            for t, a, isb in zip(ts, arrs, bd):
                if isb:
                    r = _shape.select(t, 0, b)
                    rts.append(r)
                    rarrs.append(_arr(r, a))
                else:
                    rts.append(t)
                    rarrs.append(a)
            outs.append(apply(op, tuple(rts), tuple(rarrs), _row(args, b, level)))
            replay(b)
        return _stack_rows(outs, level, op.name)


def function_per_entry(cls: Any, args: tuple) -> Any:
    """``autograd.Function`` ``cls`` applied to batched inputs: once per entry (ndgrad's
    Function has no vmap rule), or NotImplemented when no input is batched."""
    if not _args_level(args):
        return NotImplemented
    return per_entry(cls.apply, *args)


def per_entry(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """``fn`` (a function computing on tensors' data outside ``apply``) run once per entry of
    the innermost vmap level among its tensor arguments, the results stacked (batched)."""
    level = _args_level(args) or _args_level(tuple(kwargs.values()))
    if not level:
        return fn(*args, **kwargs)
    refused = _refusal(getattr(fn, "__name__", ""), args, kwargs)
    if refused is not None:
        raise VmapError(refused)
    B = VMAP[level]
    if not B:
        raise _unsupported(fn, "an empty batch")
    replay = _Replay(level)
    outs = []
    with _bt.suspended(level):
        for b in range(B):
            outs.append(fn(*_row(args, b, level), **_row(kwargs, b, level)))
            replay(b)
        return _stack_rows(outs, level, fn)


# ---------------------------------------------------------------------------- proxies
def _proxify(x: Any, proxies: list) -> Any:
    if isinstance(x, Tensor):
        if x._blevel and _bt.is_batched(x):
            d = x._data
            if d.shape[0] == 0:
                raise _unsupported("an empty batch")
            p = _new(Tensor)
            p._data = d[0, ...]
            p._bproxy = x
            p._requires_grad = x._requires_grad
            p._grad_fn = x._grad_fn
            p._output_nr = x._output_nr
            proxies.append(p)
            return p
        return x
    if type(x) in (list, tuple) and any(isinstance(e, Tensor) for e in x):
        return type(x)(_proxify(e, proxies) for e in x)
    return x


def _unproxy(out: Any) -> Any:
    if isinstance(out, Tensor):
        return out._bproxy if out._bproxy is not None else out
    if isinstance(out, tuple):
        items = [_unproxy(o) for o in out]
        named: Any = out
        return named._make(items) if hasattr(out, "_fields") else tuple(items)
    return out


def call(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """Run public op ``fn`` with its batched tensor arguments replaced by logical proxies.

    Returns NotImplemented when no argument is batched at an active level (the caller then
    runs its ordinary code).
    """
    if VMAP:
        impl = _VMAP_IMPL.get(getattr(fn, "__name__", None))
        if impl is not None and getattr(fn, "__module__", None) == impl[0]:
            r = impl[1](fn, *args, **kwargs)
            if r is not NotImplemented:
                return r
    proxies: list = []
    pargs = tuple(_proxify(a, proxies) for a in args)
    pkwargs = {k: _proxify(v, proxies) for k, v in kwargs.items()}
    if not proxies:
        return NotImplemented
    level = proxies[0]._bproxy._blevel
    different = _bt.RANDOMNESS.get(level) == "different"
    mark_rng = fingerprint() if different else None
    saved_rng = rng_state() if different else None
    out = _unproxy(fn(*pargs, **pkwargs))
    if mark_rng is not None and fingerprint() != mark_rng:
        # a draw on one entry's proxy would be shared: independent draws per entry, from
        # where the generator stood (the proxy's draw is taken back: the entries draw what
        # torch's one draw over the batch does, dropout's mask row after row)
        set_rng_state(saved_rng)
        return per_entry(fn, *args, **kwargs)
    for p in proxies:
        if not p.__dict__.get("_bused") and not _returned(out, p._bproxy):
            if p._bproxy._blevel in VMAP:      # vmap: the op per entry (exact)
                return per_entry(fn, *args, **kwargs)
            raise _unsupported(fn, "a batched tensor used for its values (an index, a mask, a "
                                   "condition ...) rather than as a differentiable operand")
    return out


def marked(seq: Any) -> bool:
    """True if a list/tuple holds a tensor with a batch level (maybe stale)."""
    if not isinstance(seq, (list, tuple)):
        return False
    for t in seq:               # a loop, not any(<generator>): on every matmul's path
        if isinstance(t, Tensor) and t._blevel:
            return True
    return False


def _returned(out: Any, t: Tensor) -> bool:
    if isinstance(out, tuple):
        return any(o is t for o in out)
    return out is t


def argminmax(input: Tensor, dim: Any, keepdim: bool, is_max: bool) -> Any:
    """Batched ``argmax``/``argmin`` (they do not go through ``apply``), or NotImplemented."""
    if not _bt.is_batched(input):
        return NotImplemented
    x = input._data
    f = np.argmax if is_max else np.argmin
    if dim is None:
        r = f(x.reshape(x.shape[0], -1), axis=1)
    else:
        d = wrap_dim(dim, x.ndim - 1) + 1 if x.ndim > 1 else 1
        if x.ndim == 1:
            x = x.reshape(-1, 1)
        r = f(x, axis=d, keepdims=keepdim)
        if input._data.ndim == 1:
            r = r.reshape(-1)
    out = _wrap(np.asarray(r, dtype=np.int64))
    out._blevel = input._blevel
    return out


# ---------------------------------------------------------------------------- helpers
def _arr(t: Tensor, like: np.ndarray) -> np.ndarray:
    a = t._data
    return a if a.dtype == like.dtype else a.astype(like.dtype)


def _pad(t: Tensor, B: int, lshape: tuple, rank: int) -> Tensor:
    """A batched tensor with logical shape ``lshape`` viewed with logical rank ``rank``."""
    if len(lshape) >= rank:
        return t
    return _shape.reshape(t, (B,) + (1,) * (rank - len(lshape)) + tuple(lshape))


def _batch_expand(t: Tensor, B: int) -> Tensor:
    """An unbatched tensor expanded to a batch of ``B`` identical rows."""
    return _shape.expand(_shape.unsqueeze(t, 0), (B,) + t._data.shape)


def _shift(dims: Any) -> tuple:
    return tuple(d + 1 for d in dims)


def _slot_shape(shape: tuple, idx: tuple) -> tuple:
    """Shape of ``x[idx]`` for ``x`` of ``shape`` (without touching real data)."""
    return np.broadcast_to(np.zeros((), np.int8), shape)[idx].shape


def _batch_axis(idx: tuple) -> int:
    """Where NumPy puts the batch axis when ``(slice(None),) + idx`` indexes a batched array.

    With all advanced indices adjacent (integers count as advanced once an array is present)
    their result dims replace them in place and the batch axis stays first; otherwise the
    broadcast advanced dims go first and the batch axis follows them.
    """
    if not any(isinstance(it, (np.ndarray, bool)) for it in idx):
        return 0
    pos = [i for i, it in enumerate(idx) if isinstance(it, (np.ndarray, bool, int, np.integer))]
    if pos[-1] - pos[0] == len(pos) - 1:
        return 0
    nd = 0
    for it in idx:
        if isinstance(it, np.ndarray):
            nd = max(nd, 1 if it.dtype == np.bool_ else it.ndim)
        elif isinstance(it, bool):
            nd = max(nd, 1)
    return nd


# ---------------------------------------------------------------------------- rules
def _pointwise(mask_arg: Any = None) -> Callable:
    """Elementwise ops: batched operands of lower logical rank get singleton dims after the
    batch dim, so that NumPy's right-aligned broadcasting lines up the logical dims."""
    def rule(c: _Call, args: tuple) -> Any:
        ls = c.ls
        if mask_arg is not None:
            ls = [np.shape(args[mask_arg])] + list(ls)
        check_broadcast(*ls)    # the user's error, with logical shapes
        rank = max(len(s) for s in ls)
        ts, arrs = list(c.ts), list(c.arrs)
        for i, (b, s) in enumerate(zip(c.bd, c.ls)):
            if b and len(s) < rank:
                ts[i] = _pad(ts[i], c.B, s, rank)
                arrs[i] = _arr(ts[i], c.arrs[i])
        return apply(c.op, tuple(ts), tuple(arrs), args)
    return rule


def _dims_first(c: _Call, args: tuple) -> Any:
    """Reductions whose first argument is a tuple of dims (sum, mean, prod(dim), amax)."""
    return apply(c.op, tuple(c.ts), tuple(c.arrs), (_shift(args[0]),) + tuple(args[1:]))


def _dim_first(c: _Call, args: tuple) -> Any:
    """Ops whose first argument is one dim (unsqueeze, unbind, split, cat, stack ...)."""
    return apply(c.op, tuple(c.ts), tuple(c.arrs), (args[0] + 1,) + tuple(args[1:]))


def _dim_first_scan(c: _Call, args: tuple) -> Any:
    """softmax, log_softmax, cumsum: one dim first; a 0-d row is scanned as a row of one."""
    if c.ls[0]:
        return _dim_first(c, args)
    t = _shape.reshape(c.ts[0], (c.B, 1))
    r = apply(c.op, (t,), (_arr(t, c.arrs[0]),), (1,) + tuple(args[1:]))
    return _shape.reshape(r, (c.B,))


def _prod_all(c: _Call, args: tuple) -> Any:
    # ProdBackward0's rule takes the product of all elements: use prod over one flat dim.
    t = _shape.reshape(c.ts[0], (c.B, -1))
    return apply(_red.PROD_DIM, (t,), (_arr(t, c.arrs[0]),), ((1,), False, args[2]))


def _max_all(c: _Call, args: tuple) -> Any:
    op = AMAX if c.op is _red.MAX_ALL else AMIN
    dims = tuple(range(1, len(c.ls[0]) + 1))
    return apply(op, tuple(c.ts), tuple(c.arrs), (dims, False))


def _max_dim(c: _Call, args: tuple) -> Any:
    dim, keepdim = args[0], args[1]
    t, a = c.ts[0], c.arrs[0]
    if not c.ls[0]:                       # a 0-d row: max over a dim of size 1
        t = _shape.reshape(t, (c.B, 1))
        a = _arr(t, a)
        d, keepdim = 1, False
    else:
        d = dim + 1
    f = np.argmax if c.op is _red.MAX_DIM else np.argmin
    idx = _wrap(f(a, axis=d, keepdims=keepdim))        # the indices output (a tensor argument)
    return apply(c.op, (t,), (a,), (d, keepdim, idx))


def _index_arg(c: _Call, args: tuple) -> Any:
    """gather, scatter: (dim, index[, shape]) with the index repeated over the batch (gather's
    index is a tensor argument, the scatters' an array)."""
    index = args[1]
    arr = index._data if isinstance(index, Tensor) else index
    idx: Any = np.broadcast_to(arr, (c.B,) + arr.shape)
    if arr is not index:
        idx = _wrap(idx)
    rest = ((c.B,) + tuple(args[2]),) if len(args) > 2 else ()
    return apply(c.op, tuple(c.ts), tuple(c.arrs), (args[0] + 1, idx) + rest)


def _sum_to_size(c: _Call, args: tuple) -> Any:
    # The op sums leading dims and size-1 dims: the batch dim must stay leading, so the
    # reduced leading logical dims are kept as size 1 and dropped by a view afterwards.
    size = tuple(args[1])
    lead = len(c.ls[0]) - len(size)
    r = apply(c.op, tuple(c.ts), tuple(c.arrs),
              (_shift(args[0]), (c.B,) + (1,) * lead + size))
    return _shape.reshape(r, (c.B,) + size) if lead else r


def _view(c: _Call, args: tuple) -> Any:
    shape = (c.B,) + tuple(args[0])
    op = c.op
    if op is _shape.VIEW and not _shape._can_view(c.arrs[0], shape):
        op = _shape.RESHAPE_COPY
    return apply(op, tuple(c.ts), tuple(c.arrs), (shape,))


def _transpose(c: _Call, args: tuple) -> Any:
    n = len(c.ls[0])
    if c.op is _shape.T_OP:
        pair = (1, 2) if n == 2 else (0, 0)
    else:
        pair = (args[0] + 1, args[1] + 1) if n else (0, 0)
    return apply(_shape.TRANSPOSE, tuple(c.ts), tuple(c.arrs), pair)


def _permute(c: _Call, args: tuple) -> Any:
    return apply(c.op, tuple(c.ts), tuple(c.arrs), ((0,) + _shift(args[0]),))


def _expand(c: _Call, args: tuple) -> Any:
    shape = tuple(args[0])
    t = _pad(c.ts[0], c.B, c.ls[0], len(shape))
    return apply(c.op, (t,), (_arr(t, c.arrs[0]),), ((c.B,) + shape,))


def _basic_index(c: _Call, args: tuple) -> Any:
    return apply(c.op, tuple(c.ts), tuple(c.arrs), (((_EMPTY_SLICE,) + tuple(args[0])),))


def _batched_indices(args: tuple) -> tuple:
    # The saved index tensors after the NumPy index (Note [Saved index tensors]): one more
    # leading dim, kept.
    return (TensorList((None,) + tuple(args[1])),) if len(args) > 1 else ()


def _advanced_index(c: _Call, args: tuple) -> Any:
    idx = tuple(args[0])
    r = apply(c.op, tuple(c.ts), tuple(c.arrs),
              ((_EMPTY_SLICE,) + idx,) + _batched_indices(args))
    k = _batch_axis(idx)
    return _shape.movedim(r, k, 0) if k else r


def _index_backward(c: _Call, args: tuple) -> Any:
    """_slice_backward/_index_backward: write ``g`` at ``idx`` into zeros of ``shape``."""
    idx, shape = tuple(args[0]), tuple(args[1])
    slot = _slot_shape(shape, idx)
    g = _pad(c.ts[0], c.B, c.ls[0], len(slot))
    k = _batch_axis(idx)
    if k:
        g = _shape.movedim(_shape.expand(g, (c.B,) + slot), 0, k)
    return apply(c.op, (g,), (_arr(g, c.arrs[0]),), ((_EMPTY_SLICE,) + idx, (c.B,) + shape))


def _index_put(c: _Call, args: tuple) -> Any:
    """index_put and setitem: ``x[idx] = v`` with ``x`` and/or ``v`` batched."""
    idx = tuple(args[0])
    (x, v), (bx, bv) = c.ts, c.bd
    xshape = c.ls[0]
    if not bx:
        x = _batch_expand(x, c.B)
    slot = _slot_shape(xshape, idx)
    k = _batch_axis(idx)
    if bv or k:
        v = _pad(v, c.B, c.ls[1], len(slot)) if bv else \
            _batch_expand(_shape.expand(v, slot), c.B)
        v = _shape.expand(v, (c.B,) + slot)
        if k:
            v = _shape.movedim(v, 0, k)
    return apply(c.op, (x, v), (_arr(x, c.arrs[0]), _arr(v, c.arrs[1])),
                 ((_EMPTY_SLICE,) + idx,) + _batched_indices(args))


def _zero_at(c: _Call, args: tuple) -> Any:
    return apply(c.op, tuple(c.ts), tuple(c.arrs), ((_EMPTY_SLICE,) + tuple(args[0]),))


def _concat(c: _Call, args: tuple) -> Any:
    ts = [t if b else _batch_expand(t, c.B) for t, b in zip(c.ts, c.bd)]
    arrs = [_arr(t, a) for t, a in zip(ts, c.arrs)]
    return apply(c.op, tuple(ts), tuple(arrs), (args[0] + 1,))


def _matmul_like(c: _Call, args: tuple) -> Any:
    """mm, bmm: NumPy-style broadcasting matmul lines up the batch dimension."""
    if c.op is _lin.MM:
        return _batched_matmul(c.ts[0], c.ts[1], c.bd[0], c.bd[1], c.B)
    return _lin.matmul(c.ts[0], c.ts[1])


def _mv(c: _Call, args: tuple) -> Any:
    a, v = c.ts
    if c.bd[1]:
        return _shape.squeeze(_lin.matmul(a, _shape.unsqueeze(v, -1)), -1)
    return _lin.matmul(a, v)


def _dot(c: _Call, args: tuple) -> Any:
    a, b = c.ts
    if c.bd[0] and c.bd[1]:
        return _red.sum(a * b, -1)
    return _lin.matmul(a, b) if c.bd[0] else _lin.matmul(b, a)


def _copy_like(c: _Call, args: tuple) -> Any:
    return apply(c.op, tuple(c.ts), tuple(c.arrs), (c.arrs[0],))


def _fill_like(c: _Call, args: tuple) -> Any:
    """copy_/fill_(tensor): the result has the shape of ``self``, which may be unbatched."""
    ts = list(c.ts)
    if not c.bd[0]:
        ts[0] = _batch_expand(ts[0], c.B)
    if len(ts) > 1 and c.bd[1]:
        ts[1] = _pad(ts[1], c.B, c.ls[1], len(c.ls[0]))
    return apply(c.op, tuple(ts), tuple(_arr(t, a) for t, a in zip(ts, c.arrs)), args)


# In-place writes through views (CopySlices, ops/views_inplace.py) replay the view's steps on
# the base's gradient. Batched, the view is described by the flat position in the base of each
# of its elements (the same for every row), and the replay is an indexing op on the flattened
# rows. A position of -1 (an as_strided view reading storage outside its input) reads 0 and
# receives nothing.
def _view_positions(steps: tuple, base_shape: tuple) -> np.ndarray:
    if not _index_mappable(steps):
        raise _unsupported("AsStridedBackward0", "a real/imag view of a complex tensor")
    pos = _vi._view_index(tuple(base_shape), steps)
    if pos.size and pos.max() < 0 and 0 in base_shape:
        raise _unsupported("AsStridedBackward0", "an as_strided view of an empty tensor")
    return pos


def _flat_rows(t: Tensor, B: int) -> Tensor:
    return _shape.reshape(t, (B, -1))


def _flat_index(g: Tensor, ga: np.ndarray, flat: np.ndarray) -> Tensor:
    """``g[:, flat]`` for rows ``g`` (data ``ga``)."""
    idx = (_EMPTY_SLICE, flat)
    return apply(_shape.INDEX, (g,), (ga,), (idx, _shape._index_tensors(idx, 2)))


def _view_replay(c: _Call, args: tuple) -> Any:
    pos = _view_positions(args[0], c.ls[0])
    flat = pos.reshape(-1)
    outside = flat < 0
    g = _flat_rows(c.ts[0], c.B)
    r = _flat_index(g, _arr(g, c.arrs[0]), np.where(outside, 0, flat))
    if outside.any():
        r = r * _wrap((~outside).astype(r._data.dtype))
    return _shape.reshape(r, (c.B,) + pos.shape)


def _view_scatter(c: _Call, args: tuple) -> Any:
    steps, shape, dtype = args
    if np.dtype(dtype) != c.arrs[0].dtype:
        raise _unsupported(c.op, "a real/imag view of a complex tensor")
    pos = _view_positions(steps, shape)
    g = _shape.expand(_pad(c.ts[0], c.B, c.ls[0], pos.ndim), (c.B,) + pos.shape)
    g = _flat_rows(g, c.B)
    flat = pos.reshape(-1)
    ga = _arr(g, c.arrs[0])
    if (flat < 0).any():
        keep = np.flatnonzero(flat >= 0)
        g = _flat_index(g, ga, keep)
        flat, ga = flat[keep], g._data
    n = int(np.prod(shape))
    r = apply(_shape.INDEX_BACKWARD, (g,), (ga,), ((_EMPTY_SLICE, flat), (c.B, n)))
    return _shape.reshape(r, (c.B,) + tuple(shape))


def _view_zero(c: _Call, args: tuple) -> Any:
    flat = _view_positions(args[0], c.ls[0]).reshape(-1)
    g = _flat_rows(c.ts[0], c.B)
    r = apply(_shape.ZERO_AT, (g,), (_arr(g, c.arrs[0]),),
              ((_EMPTY_SLICE, flat[flat >= 0]),))
    return _shape.reshape(r, (c.B,) + tuple(c.ls[0]))


def _as_strided(c: _Call, args: tuple) -> Any:
    """as_strided of each row: the input's recorded geometry maps every element of the result
    to a flat position in the (logical) input, the same for every row; -1 reads 0."""
    size, stride, storage_offset, geometry = args
    offset = geometry[2] if storage_offset is None else storage_offset
    src = _vi.as_strided_sources(geometry, tuple(size), tuple(stride), offset)
    flat = src.reshape(-1)
    outside = flat < 0
    g = _flat_rows(c.ts[0], c.B)
    r = _flat_index(g, _arr(g, c.arrs[0]), np.where(outside, 0, flat))
    if outside.any():
        r = r * _wrap((~outside).astype(r._data.dtype))
    return _shape.reshape(r, (c.B,) + tuple(size))


# ---------------------------------------------------------------------------- amax / amin
def _amax_fwd(x: np.ndarray, dims: tuple, keepdim: bool) -> np.ndarray:
    return np.max(x, axis=dims, keepdims=keepdim)


def _amin_fwd(x: np.ndarray, dims: tuple, keepdim: bool) -> np.ndarray:
    return np.min(x, axis=dims, keepdims=keepdim)


def _amax_vjp(ctx, g):
    # The gradient is shared evenly between tied extrema (as for max() over all elements).
    x, r = ctx.saved
    dims, keepdim = ctx._args
    if not dims:
        return g
    if not keepdim:
        for d in sorted(dims):
            r = r.unsqueeze(d)
            g = g.unsqueeze(d)
    mask = x == r
    return g * mask / mask.sum(dims, keepdim=True)


def _amax_jvp(ctx, t):
    # The mean of the tangents of the tied extrema (the transpose of the rule above).
    x, r = ctx.inputs[0], ctx.result
    dims, keepdim = ctx._args
    if not dims:
        return t
    if not keepdim:
        for d in sorted(dims):
            r = r.unsqueeze(d)
    mask = x == r
    return (t * mask).sum(dims, keepdim) / mask.sum(dims, keepdim)


# max()/min() over all elements of a batched tensor: a reduction over the logical dims.
AMAX = Op("amax", "AmaxBackward0", _amax_fwd, _amax_vjp, saves=("self", "result"),
          args=("dim", "keepdim"), jvp=_amax_jvp)
AMIN = Op("amin", "AminBackward0", _amin_fwd, _amax_vjp, saves=("self", "result"),
          args=("dim", "keepdim"), jvp=_amax_jvp)

_shape: Any = None
_red: Any = None
_lin: Any = None
_vi: Any = None
_prod: Any = None


def install() -> None:
    """Fill ``RULES`` and bind ``batched_apply`` into the dispatcher (once, at import)."""
    global _shape, _red, _lin, _vi
    from . import linalg, pointwise, reduction, shape  # local import: they import this module
    _shape, _red, _lin = shape, reduction, linalg
    pw = pointwise
    elementwise = [
        pw.ADD, pw.ADD_S, pw.SUB, pw.SUB_S, pw.RSUB_S, pw.MUL, pw.MUL_S, pw.DIV, pw.DIV_S,
        pw.RECIPROCAL, pw.POW_S, pw.POW, pw.RPOW, pw.DIV_MODE, pw.NEG, pw.EXP, pw.LOG,
        pw.SIN, pw.COS, pw.TANH_BACKWARD, pw.SIGMOID_BACKWARD, pw.TANH, pw.SQRT, pw.SIGMOID,
        pw.THRESHOLD_BACKWARD, pw.RELU, pw.ABS, pw.SIGN, pw.SGN, pw.CONJ, pw.CLAMP_S,
        pw.CLAMP_T, pw.CLAMP_MIN_S, pw.CLAMP_MAX_S, pw.CLAMP_MIN_T, pw.CLAMP_MAX_T,
        pw.MAXIMUM, pw.MINIMUM, pw.TO, pw.CLONE, pw.REAL]
    from . import unary  # local import: as above
    for op in elementwise + list(unary.ELEMENTWISE_OPS):
        RULES[op] = _pointwise()
    for op in pw.COMPARISON_OPS + (unary.SIGNBIT,):     # no VJP: bool results
        RULES[op] = _pointwise()
    for op in (pw.WHERE, pw.MASKED_FILL_S, pw.MASKED_FILL_T):
        RULES[op] = _pointwise(mask_arg=0)
    RULES[pw.COPY_LIKE] = _copy_like
    # A batch of copies in a memory format: the layout of the physical batch is not observable.
    RULES[pw.CLONE_FMT] = lambda c, args: apply(pw.CLONE, tuple(c.ts), tuple(c.arrs))
    RULES[pw.TO_FMT] = lambda c, args: apply(pw.TO, tuple(c.ts), tuple(c.arrs), args[:1])
    r = reduction
    for op in (r.SUM, r.SUM_DIM, r.MEAN, r.MEAN_DIM, r.PROD_DIM, AMAX, AMIN):
        RULES[op] = _dims_first
    RULES[r.PROD] = _prod_all
    from .scan import CUMSUM  # local import: as above
    from .softmax import LOG_SOFTMAX, LOGSUMEXP, SOFTMAX  # local import: as above
    for op in (SOFTMAX, LOG_SOFTMAX, CUMSUM):
        RULES[op] = _dim_first_scan
    RULES[LOGSUMEXP] = RULES[r.VAR] = RULES[r.STD] = _dims_first
    RULES[shape.INDEX_SELECT] = _dim_first
    RULES[shape.INDEX_ADD_ZEROS] = lambda c, args: apply(
        c.op, tuple(c.ts), tuple(c.arrs), (args[0] + 1, args[1], (c.B,) + tuple(args[2])))
    RULES[r.PROD_OTHERS] = _dim_first
    RULES[r.SUM_TO_SIZE] = _sum_to_size
    RULES[r.MAX_ALL] = RULES[r.MIN_ALL] = _max_all
    RULES[r.MAX_DIM] = RULES[r.MIN_DIM] = _max_dim
    for op in (r.GATHER, r.SCATTER_ZEROS, r.SCATTER_ADD_ZEROS):
        RULES[op] = _index_arg
    s = shape
    RULES[s.VIEW] = RULES[s.RESHAPE_COPY] = _view
    RULES[s.TRANSPOSE] = RULES[s.T_OP] = _transpose
    RULES[s.PERMUTE] = _permute
    RULES[s.EXPAND] = _expand
    for op in (s.SQUEEZE, s.SQUEEZE_DIM, s.SQUEEZE_DIMS):
        RULES[op] = _dims_first
    for op in (s.UNSQUEEZE, s.UNBIND, s.SPLIT, s.SPLIT_SIZES):
        RULES[op] = _dim_first
    for op in s._BASIC.values():
        RULES[op] = _basic_index
    RULES[s.INDEX] = _advanced_index
    RULES[s.SLICE_BACKWARD] = RULES[s.INDEX_BACKWARD] = _index_backward
    RULES[s.ZERO_AT] = _zero_at
    for op in (s.INDEX_PUT, s.INDEX_PUT_ACC, s.SETITEM_VIEW, s.SETITEM_COPY, s.SETITEM_FILL):
        RULES[op] = _index_put
    RULES[s.CAT] = RULES[s.STACK] = _concat
    RULES[s.TRIU] = RULES[s.TRIL] = _pointwise()    # on the last two dims: batch-agnostic
    RULES[linalg.MM] = RULES[linalg.BMM] = _matmul_like
    RULES[linalg.MV] = _mv
    RULES[linalg.DOT] = _dot
    RULES[linalg.SQUEEZE_RESULT] = _dims_first_int
    RULES[linalg.VECTOR_NORM] = _dims_first
    vi = views_inplace
    _vi = vi
    RULES[vi.VIEW_REPLAY] = _view_replay
    RULES[vi.VIEW_SCATTER] = _view_scatter
    RULES[vi.VIEW_ZERO] = _view_zero
    RULES[vi.COPY] = RULES[vi.FILL_TENSOR] = _fill_like
    RULES[vi.FILL_SCALAR] = RULES[vi.ZERO] = _pointwise()
    for name in ("REAL_VIEW", "IMAG_VIEW"):
        if hasattr(s, name):
            RULES[getattr(s, name)] = _pointwise()
    for name in ("DIAGONAL", "UNFOLD"):
        if hasattr(s, name):
            VJP_ONLY.add(getattr(s, name))
    RULES[s.AS_STRIDED] = _as_strided
    global _prod
    from . import products as _prod_mod  # local import: as above
    _prod = _prod_mod
    for op in (_prod.ADDMM, _prod.ADDMV, _prod.BADDBMM):
        _VECTOR[op] = _addmm_like
    from . import sampling as sm  # local import: as above
    for name in ("UNIFORM", "NORMAL_", "CAUCHY", "EXPONENTIAL", "GEOMETRIC", "LOG_NORMAL",
                 "RANDOM_FROM_TO", "RANDOM_TO", "RANDOM", "BERNOULLI_FILL"):
        RANDOM_FILLS.add(getattr(sm, name))
    from . import _jvp as jv  # local import: as above
    for op in (jv.MAKE_DUAL, jv.FW_PRIMAL):         # identity views
        RULES[op] = lambda c, args: apply(c.op, tuple(c.ts), tuple(c.arrs), args)
    RULES[BMM3] = lambda c, args: _lin.matmul(c.ts[0], c.ts[1])   # 3-D operands: broadcasts
    _dispatch._batched_apply = batched_apply


# ---------------------------------------------------------------------------- physical bmm
# Batched products made by the rules below: a (B, n, k) @ (B, k, m) product whose operand is a
# broadcast (stride-0) batch (an unbatched weight, or a vmap'd transform's leaf) is one GEMM on
# the stacked rows, and an outer product (k == 1) a broadcast multiply: NumPy's stacked matmul
# runs both without BLAS, up to 50x slower.
def _bmm_fwd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    B, n, k = a.shape
    m = b.shape[2]
    if B > 1 and k == 1 and a.dtype.kind == "f":
        r = a * b
    elif B > 1 and b.strides[0] == 0:
        r = np.matmul(a.reshape(B * n, k), b[0]).reshape(B, n, m)
    elif B > 1 and a.strides[0] == 0:
        r = np.swapaxes(np.matmul(np.swapaxes(b, 1, 2).reshape(B * m, k), a[0].T)
                        .reshape(B, m, n), 1, 2)
    else:
        r = np.matmul(a, b)
    return r if r.dtype == a.dtype else r.astype(a.dtype)


def _bmm_vjp(ctx: Any, g: Tensor) -> tuple:
    b, a = ctx.saved
    return (bmm3(g, _shape.transpose(b, 1, 2).conj()) if ctx.needs_input_grad(0) else None,
            bmm3(_shape.transpose(a, 1, 2).conj(), g) if ctx.needs_input_grad(1) else None)


def bmm3(a: Tensor, b: Tensor) -> Tensor:
    """``a @ b`` of two 3-D tensors with the same batch size (physical: no batching)."""
    return apply(BMM3, (a, b), (a._data, b._data))


BMM3 = Op("bmm", "BmmBackward0", _bmm_fwd, _bmm_vjp, inputs=("self", "mat2"),
          saves=("mat2", "self"), save_if=((0,), (1,)),
          jvp=_jvp_bilinear(lambda a, b: bmm3(a, b)))


def _batched_matmul(a: Tensor, b: Tensor, ba: bool, bb: bool, B: int) -> Tensor:
    """Physical product of batched matrices (B, n, k) / (B, k, m), either side unbatched
    (2-D); the result is (B, n, m)."""
    if ba and not bb:
        n, k = a._data.shape[1:]
        flat = _shape.reshape(a, (B * n, k))
        return _shape.reshape(_lin.mm(flat, b), (B, n, b._data.shape[1]))
    if bb and not ba:
        a = _shape.expand(_shape.unsqueeze(a, 0), (B,) + a._data.shape)
    return bmm3(a, b)


# Vectorized rules replacing another module's per-row rule (looked up before ``RULES``).
_VECTOR: dict = {}


def _addmm_like(c: _Call, args: tuple) -> Any:
    """addmm/addmv/baddbmm: ``beta * input + alpha * (m1 @ m2)`` with a broadcasting
    matmul over the batch dim (``input`` ignored when ``beta`` is 0, as in torch)."""
    beta, alpha = args
    x, m1, m2 = c.ts
    rank = len(c.ls[1])
    if c.op is _prod.ADDMV and c.bd[2]:
        p = _shape.squeeze(_lin.matmul(m1, _shape.unsqueeze(m2, -1)), -1)
        rank = 1
    elif c.op is _prod.ADDMM:
        p = _batched_matmul(m1, m2, c.bd[1], c.bd[2], c.B)
    else:
        p = _lin.matmul(m1, m2)
        if c.op is _prod.ADDMV:
            rank = 1
    if alpha != 1:
        p = p * alpha
    if beta == 0:
        return p
    if c.bd[0]:
        x = _pad(x, c.B, c.ls[0], rank)
    return p + (x if beta == 1 else x * beta)


def _dims_first_int(c: _Call, args: tuple) -> Any:
    """squeeze_ of matmul's result: one int dim (or a tuple)."""
    d = args[0]
    return apply(c.op, tuple(c.ts), tuple(c.arrs),
                 (_shift(d) if isinstance(d, tuple) else d + 1,))


# ---------------------------------------------------------------------------- data functions
# Note [Vectorized vmap] in func/_vmap.py: functions that compute on tensors' data without
# ``apply`` (comparisons, masks, ``*_like`` factories, data-dependent shapes) are wrapped, in
# the ``ndgrad`` namespace and as ``BatchedTensor`` methods, by ``install_data_functions``.
# The wrappers cost one dict test when no vmap level exists.
ELEMENTWISE_DATA = (
    "eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "isfinite", "isposinf",
    "isneginf", "isreal", "signbit", "logical_and", "logical_or", "logical_xor", "logical_not",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "isclose", "where",
    "masked_fill")
ELEMENTWISE_DUNDERS = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__and__",
                       "__or__", "__xor__", "__rand__", "__ror__", "__rxor__", "__invert__")
LIKE_DATA = ("zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like",
             "randint_like")
RANDOM_FACTORIES = ("rand", "randn", "randint", "normal")
PER_ENTRY_DATA = ("multinomial", "nonzero", "argwhere", "count_nonzero", "any", "all", "unique",
                  "unique_consecutive", "bincount", "isin", "masked_select", "equal",
                  "allclose", "argsort", "searchsorted", "bucketize", "histc", "histogram")


def elementwise_call(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """``fn``, an elementwise function on data, with batched arguments: batched tensors get
    singleton dims after the batch dim up to the highest logical rank, then ``fn`` runs on the
    physical tensors with the level suspended and its results are batched."""
    level = _args_level(args) or _args_level(tuple(kwargs.values()))
    if not level:
        return fn(*args, **kwargs)
    B = VMAP[level]
    args = tuple(_lift_to(a, level) for a in args)
    kwargs = {k: _lift_to(v, level) for k, v in kwargs.items()}
    rank = 0
    shapes = []
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, Tensor):
            lshape = a._data.shape[1:] if a._blevel == level else a._data.shape
            shapes.append(lshape)
            rank = max(rank, len(lshape))
    if getattr(fn, "__name__", "") == "masked_fill" and len(shapes) > 1:
        shapes[:2] = shapes[1::-1]          # its check reads (mask, input)
    check_broadcast(*shapes)    # the user's error, with logical shapes

    def align(a: Any) -> Any:
        if isinstance(a, Tensor) and a._blevel == level:
            lshape = a._data.shape[1:]
            if len(lshape) < rank:
                return _shape.reshape(a, (B,) + (1,) * (rank - len(lshape)) + lshape)
        return a
    with _bt.suspended(level):
        out = fn(*[align(a) for a in args], **{k: align(v) for k, v in kwargs.items()})
    return _mark_out(out, level)


def like_call(fn: Callable, input: Any, *args: Any, **kwargs: Any) -> Any:
    """A ``*_like`` factory of a batched tensor: one batched result (torch's semantics)."""
    if not (isinstance(input, Tensor) and _vlevel(input)):
        return fn(input, *args, **kwargs)
    level = input._blevel
    with _bt.suspended(level):
        if _bt.RANDOMNESS.get(level) == "same" and fn.__name__ in _RANDOM_LIKE:
            # one draw of one entry's shape, the same values for every entry
            one = fn(_shape.select(input, 0, 0), *args, **kwargs)
            out = _wrap(np.ascontiguousarray(np.broadcast_to(one._data, input._data.shape)))
            out._set_requires_grad(one.requires_grad)
        else:
            out = fn(input, *args, **kwargs)
    return _mark_out(out, level)


def _same_randomness(c: _Call, args: tuple, rule: Callable, level: int) -> Any:
    """An op at a vmap level with ``randomness="same"``: a random fill of a batched tensor
    (``uniform_``, ``normal_`` ...) draws one entry's values and writes them into every
    entry; any other draw from a batched input is torch's error."""
    with _bt.suspended(level):
        if c.op in RANDOM_FILLS:
            t = c.ts[0]
            row = _shape.select(t, 0, 0)
            one = apply(c.op, (row,), (_arr(row, c.arrs[0]),), args)
            return _wrap(np.ascontiguousarray(np.broadcast_to(one._data, t._data.shape)))
        before = fingerprint()
        out = rule(c, args)
    if fingerprint() != before:
        raise VmapError(_SAME_BATCHED)
    return out


RANDOM_FILLS: set = set()


_RANDOM_LIKE = ("rand_like", "randn_like", "randint_like")


class _Replay:
    """Called after entry ``b`` of an op run once per entry: under ``randomness="same"`` a
    draw made from a batched input has no single-draw form: torch's error."""

    __slots__ = ("mark",)

    def __init__(self, level: int) -> None:
        self.mark = fingerprint() if _bt.RANDOMNESS.get(level) == "same" else None

    def __call__(self, b: int) -> None:
        if not b and self.mark is not None and fingerprint() != self.mark:
            raise VmapError(_SAME_BATCHED)


_SAME_BATCHED = ("Vmap does not currently support same randomness with a batched tensor "
                 "input. Please file an issue with functorch")


def _mark_out(out: Any, level: int) -> Any:
    if isinstance(out, Tensor):
        return mark(out, level)
    if isinstance(out, tuple):
        for o in out:
            if isinstance(o, Tensor):
                mark(o, level)
    return out


def _aware(fn: Callable, kind: Callable) -> Callable:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if VMAP:
            return kind(fn, *args, **kwargs)
        return fn(*args, **kwargs)
    for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
        setattr(wrapper, attr, getattr(fn, attr, None))
    wrapper.__wrapped__ = fn            # type: ignore[attr-defined]
    wrapper.__dict__.update({k: v for k, v in getattr(fn, "__dict__", {}).items()
                             if k != "__wrapped__"})
    return wrapper


def _random_call(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """A random factory with an explicit size inside a vmap level with
    ``randomness="different"``: one draw with the batch size prepended, batched. (Under
    ``"error"`` the draw is refused by the caller; tensor-shaped draws such as ``rand_like`` or
    ``dropout`` of a batched tensor are batched draws already.)"""
    level = _bt.current_vmap()
    # A level with "same" draws as its enclosing level does (Note [Nested vmap levels]):
    # different values for the entries of an enclosing "different" level.
    while level and _bt.RANDOMNESS.get(level) == "same":
        level = _bt.PARENT.get(level, 0)
    if not level or _bt.RANDOMNESS.get(level) != "different" or _args_level(args) or \
            _args_level(tuple(kwargs.values())):
        return fn(*args, **kwargs)
    B = VMAP[level]
    new = list(args)
    if "size" in kwargs and kwargs["size"] is not None:
        kwargs["size"] = (B,) + tuple(kwargs["size"])
    else:
        for i, a in enumerate(new):
            if isinstance(a, (tuple, list)) and all(isinstance(v, int) for v in a):
                new[i] = (B,) + tuple(a)
                break
        else:
            if fn.__name__ in ("rand", "randn") and all(isinstance(v, int) for v in new):
                new = [B] + new
            else:
                return per_entry_draws(fn, B, level, new, kwargs)
    return mark(fn(*new, **kwargs), level)


def per_entry_draws(fn: Callable, B: int, level: int, args: list, kwargs: dict) -> Any:
    with _bt.suspended(level):
        return _stack_rows([fn(*args, **kwargs) for _ in range(B)], level, fn)


def _wrap_public(namespace: Any, name: str, kind: Callable) -> None:
    """Make ``namespace.name`` vmap-aware. A function generated from a declared signature
    (Note [Declared signatures]) keeps its argument checks and their messages: the
    implementation it calls is wrapped in its own globals."""
    fn: Any = getattr(namespace, name, None)
    if fn is None or hasattr(fn, "_vmap_aware"):
        return
    env: dict = getattr(fn, "__globals__", {})
    impl: Callable = env.get("_impl") or fn
    if impl is not fn and impl is getattr(fn, "__wrapped__", None) and env is not getattr(
            sys.modules.get(getattr(fn, "__module__", "")), "__dict__", None):
        env["_impl"] = _aware(impl, kind)
        fn._vmap_aware = True
        return
    w = _aware(fn, kind)
    w._vmap_aware = True                # type: ignore[attr-defined]
    setattr(namespace, name, w)


def _where_call(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    given = [a for a in args + tuple(kwargs.values()) if a is not None]
    if len(given) == 1:                 # where(condition): nonzero's tuple
        return per_entry(fn, *args, **kwargs)
    return elementwise_call(fn, *args, **kwargs)


def _batched_method(fn: Callable, kind: Callable) -> Callable:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return kind(fn, self, *args, **kwargs)
    method.__name__ = getattr(fn, "__name__", "method")
    method.__doc__ = getattr(fn, "__doc__", None)
    return method


_DATA_INSTALLED: list = []


def install_data_functions(namespace: Any, ops: Any) -> None:
    """Wrap the data functions of ``namespace`` (the ``ndgrad`` module) and give
    ``BatchedTensor`` the matching methods (once); ``ops`` is ``ndgrad.ops``, whose
    ``getitem`` the Tensor methods look up at call time."""
    if _DATA_INSTALLED:
        return
    _DATA_INSTALLED.append(True)
    kinds = [(ELEMENTWISE_DATA, elementwise_call), (LIKE_DATA, like_call),
             (PER_ENTRY_DATA, per_entry)]
    for names, kind in kinds:
        for name in names:
            k = _where_call if name == "where" else kind
            _wrap_public(namespace, name, k)
            m = getattr(Tensor, name, None)
            if m is not None:
                # batched receiver; an unbatched receiver with a batched argument goes
                # through the wrapped implementation of the Tensor method itself
                setattr(BatchedTensor, name, _batched_method(m, k))
                if getattr(m, "__globals__", {}).get("_impl") is getattr(m, "__wrapped__", 0):
                    _wrap_public(Tensor, name, k)
    for name in RANDOM_FACTORIES:
        _wrap_public(namespace, name, _random_call)
    for name in ELEMENTWISE_DUNDERS:
        m = getattr(Tensor, name, None)
        if m is not None:
            setattr(BatchedTensor, name, _batched_method(m, elementwise_call))
    BatchedTensor.__hash__ = Tensor.__hash__    # type: ignore[method-assign]
    # Properties whose code reads the physical ``_data`` for dims: run on a logical proxy.
    for name in ("T", "mT", "H", "mH"):
        prop = getattr(Tensor, name, None)
        if isinstance(prop, property) and prop.fget is not None:
            setattr(BatchedTensor, name, property(_proxied(prop.fget)))
    ops.getitem = _getitem_aware(ops.getitem)
    views_inplace.setitem = _setitem_aware(views_inplace.setitem)


def _proxied(fget: Callable) -> Callable:
    def get(self: Any) -> Any:
        if _vlevel(self):
            return call(fget, self)
        return fget(self)
    return get


def _getitem_aware(fn: Callable) -> Callable:
    def getitem(input: Any, index: Any) -> Any:
        if VMAP and _args_level((index,)):         # a batched index: per entry
            refuse_batched_mask(index)
            return per_entry(fn, input, index)
        return fn(input, index)
    getitem.__wrapped__ = fn            # type: ignore[attr-defined]
    return getitem


def _setitem_aware(fn: Callable) -> Callable:
    def setitem(self: Any, index: Any, value: Any) -> None:
        if VMAP:
            lv = _args_level((index, value))
            if lv:
                refuse_batched_mask(index)
            if lv and self._blevel != lv:
                raise RuntimeError(views_inplace._VMAP_INPLACE)
            if lv:
                return per_entry(fn, self, index, value)
        return fn(self, index, value)
    setitem.__wrapped__ = fn            # type: ignore[attr-defined]
    return setitem


# ---------------------------------------------------------------------------- vmap losses
# The default generator's position (set by func/_rng.py): has a function drawn?
fingerprint: Callable = lambda: None
# The default generator's state, saved and restored around a draw to be redone (func/_rng.py).
rng_state: Callable = lambda: None
set_rng_state: Callable = lambda state: None


# Public functions whose batched form at a vmap level is computed here instead of per entry
# (their class-index target is used for its values): name -> (module, impl).
def _loss_vmap(fn: Callable, input: Any, target: Any, weight: Any = None,
               size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
               reduction: str = "mean", label_smoothing: float = 0.0) -> Any:
    """cross_entropy / nll_loss with class indices at a vmap level: the entries are folded
    into the loss's own batch dim (reduction 'none'), then reduced per entry."""
    level = _args_level((input, target))
    if (not level or size_average is not None or reduce is not None
            or reduction not in ("none", "sum", "mean")
            or (weight is not None and _vlevel(weight))
            or target._data.dtype.kind not in "iu"):
        return NotImplemented
    B = VMAP[level]
    input, target = _lift_to(input, level), _lift_to(target, level)
    li = input._data.shape[1:] if input._blevel == level else input._data.shape
    lt = target._data.shape[1:] if target._blevel == level else target._data.shape
    if not B or not li or len(lt) != len(li) - 1:
        return NotImplemented
    extra = (label_smoothing,) if fn.__name__ == "cross_entropy" else ()
    with _bt.suspended(level):
        x = input if input._blevel == level else _batch_expand(input, B)
        t = target if target._blevel == level else _batch_expand(target, B)
        if len(li) == 1:
            xf, tf = x, t
        else:
            xf = _shape.reshape(x, (B * li[0],) + tuple(li[1:]))
            tf = _shape.reshape(t, (B * lt[0],) + tuple(lt[1:]))
        loss = fn(xf, tf, weight, None, ignore_index, None, "none", *extra)
        rows = _shape.reshape(loss, (B, -1))
        if reduction == "none":
            out = _shape.reshape(loss, (B,) + tuple(lt))
        elif reduction == "sum":
            out = _red.sum(rows, 1)
        else:
            ti = tf._data.reshape(B, -1)
            keep = ti != ignore_index
            if weight is not None:
                w = weight._data[np.where(keep, ti, 0)] * keep
            else:
                w = keep
            denom = np.asarray(w.sum(1), dtype=rows._data.dtype)
            # An entry whose targets are all ignored is NaN with a zero gradient, as in torch.
            empty = denom == 0
            scale = np.divide(1, denom, out=np.zeros_like(denom), where=~empty)
            out = _red.sum(rows, 1) * _wrap(scale)
            if empty.any():
                out = out + _wrap(np.where(empty, np.nan, 0).astype(denom.dtype))
    return mark(out, level)


_VMAP_IMPL: dict = {"cross_entropy": ("ndgrad.ops.nn_loss", _loss_vmap),
                    "nll_loss": ("ndgrad.ops.nn_loss", _loss_vmap)}
