"""What the function transforms share: argument checks, fresh differentiation leaves, and the
unwrapping of results (Note [Transform levels]).

Note [Transform levels]
torch.func keeps a stack of transform levels and wraps tensors per level. ndgrad gets the same
observable behaviour from the eager machinery:

* A reverse-mode transform (``grad``, ``vjp``, ``jacrev``) gives each differentiated input a
  fresh node: a view of it when it requires grad (its outer history is kept), else a detached
  alias made a leaf requiring grad, which keeps the outer forward AD tangents of the input.
  Gradients are taken with respect to those nodes only, so two nested transforms never see
  each other's variables (no perturbation confusion).
* Results are then *unwrapped*: a result whose graph reaches no live leaf other than this
  call's own fresh leaves is detached (nothing outside can want its history), so
  ``grad(f)(x)`` with an ``x`` that does not require grad returns a tensor that does not
  either, and nothing is ever accumulated into ``.grad``. A leaf is live when it was created
  outside every transform or inside a call still running in this thread (``_tborn``, see
  ``_live_leaf``): a leaf created inside ``f`` (``tensor(..., requires_grad=True)``) or in any
  transform call that has returned belongs to a dead level, as in torch, and keeps nothing
  attached. Under an outer ``no_grad`` every result is detached. The detached result keeps
  its forward AD tangents (unwrapped the same way), so ``jvp(grad(f))`` works.
  ``create_graph=True`` is used only when an output reaches an outside leaf (an outer
  transform, a closure requiring grad): otherwise every gradient would be detached anyway.
  ``jvp`` and ``jacfwd`` unwrap their results the same way, except that, as in torch, a
  tangent stays attached while a primal requires grad.
* Forward mode (``jvp``, ``jacfwd``) opens one forward AD level per call; levels nest (Note
  [Forward AD] in autograd/forward_ad.py). ``jacfwd`` and ``jacrev`` compute all columns/rows
  at once with a batch level (Note [Batched backward]) when no other level is active; inside
  a vmap ``jacfwd`` is ``jvp`` vmapped over the unit tangents at a nested vmap level;
  otherwise (or when the graph cannot run batched) one column/row at a time.
* ``vmap`` runs the function once on batched tensors at a vmap level (nested levels too); a
  reverse-mode transform inside it differentiates batched leaves, and a forward-mode one
  gives batched primals batched tangents (Note [Vectorized vmap] in _vmap.py).
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import weakref

import numpy as np
from typing import AbstractSet, Any, Iterable, Iterator, Sequence

from ..autograd import batching as _bt
from ..autograd import forward_ad as _fw
from ..autograd.accumulate_grad import AccumulateGrad
from ..ops import _batching
from ..ops import _dispatch
from ..tensor import Tensor, _transform_local
from ._pytree import tree_flatten

__all__ = ["check_argnums", "check_leaves", "fresh_leaf", "unwrap", "needs_graph",
           "detach_keep_tangents", "vectorizable", "VMAP_RULES", "vmap_level",
           "transform_scope", "batch_like"]

# function -> its batched form, for ``vmap`` (the ``vjp_fn`` of ``vjp``; Note [vmap by
# entries]). Weak keys, and not an attribute: ``functools.wraps`` copies attributes.
VMAP_RULES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


_transform_ids = itertools.count(1)


class _Live(threading.local):
    def __init__(self) -> None:
        self.tids: set = set()


_live = _Live()           # this thread's running transform calls (Note [Transform levels])


@contextlib.contextmanager
def transform_scope() -> Iterator[int]:
    """One grad/vjp/jvp call: tensors created inside are its own, the others are captured and
    may not be modified in place (Note [Captured tensors] in ops/views_inplace.py). Yields the
    call's id, to stamp its inputs with."""
    tid = next(_transform_ids)
    prev = _dispatch.enter_transform(tid)
    _live.tids.add(tid)
    try:
        yield tid
    finally:
        _live.tids.discard(tid)
        _dispatch.exit_transform(prev)


def adopt(tree: Any) -> Any:
    """Give the tensors of ``tree`` (a transform call's results) to the enclosing call of this
    thread, if any: to it they are tensors made inside, not captured ones (Note [Captured
    tensors] in ops/views_inplace.py). Returns ``tree``."""
    tid = _transform_local.tid
    if tid:
        for t in tree_flatten(tree)[0]:
            if isinstance(t, Tensor):
                t._tborn = tid
    return tree


def own_inputs(tensors: Iterable[Any], tid: int) -> None:
    """The transform's inputs may be modified in place by the function (not captured)."""
    for t in tensors:
        if isinstance(t, Tensor):
            t._tborn = tid


def mark_leaves(tensors: Iterable[Any], tid: int) -> None:
    """A reverse transform's input nodes are leaves of its level: in-place ops on them (or
    their views) raise torch's leaf errors while the call ``tid`` runs (Note [Transform
    leaves] in ops/views_inplace.py). The leaves themselves already do; the views standing
    for inputs that require grad are stamped."""
    for t in tensors:
        if isinstance(t, Tensor) and t._grad_fn is not None:
            t._tleaf = tid


def check_argnums(argnums: Any, nargs: int) -> tuple:
    """The positions to differentiate, as a tuple; torch's errors for bad ``argnums``."""
    if isinstance(argnums, bool) or not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    nums = (argnums,) if isinstance(argnums, int) else argnums
    if not nums:
        raise RuntimeError("argnums must be non-empty")
    for a in nums:
        if isinstance(a, bool) or not isinstance(a, int):
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
        if not -nargs <= a < nargs:
            raise RuntimeError(f"Got argnum={a}, but only {nargs} positional inputs")
    wrapped = tuple(a % nargs for a in nums)
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return wrapped


def check_leaves(leaves: Iterable[Any]) -> None:
    for x in leaves:
        if not isinstance(x, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")


def vmap_level() -> int:
    """The innermost live vmap level (0 if none): a reverse-mode transform inside it
    differentiates batched leaves (Note [Vectorized vmap] in _vmap.py)."""
    return _bt.current_vmap() if _bt.VMAP else 0


def _keep_class(d: Tensor, v: Tensor) -> None:
    d._blevel = v._blevel
    if v.__class__ is not Tensor and d.__class__ is Tensor and v._blevel:
        d.__class__ = v.__class__


def fresh_leaf(x: Tensor, level: int = 0) -> Tensor:
    """A node standing for ``x`` in one reverse-mode transform (Note [Transform levels]).
    Inside a vmap level (``level``) the node is batched: an unbatched ``x`` is expanded to one
    copy per entry, so that each entry's gradient is its own (Note [Vectorized vmap])."""
    if level and x._blevel != level:
        if not (x.is_floating_point() or x.is_complex()):
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if _batching._vlevel(x):
            # batched at an enclosing vmap level (Note [Nested vmap levels]): lifted, a copy
            if x.requires_grad:
                return _batching.lift(x, level)
            d = x.detach()
            for lv in range(len(_fw._levels)):
                tg = _fw._tangent(x, lv)
                if tg is not None:
                    _fw._store(d, lv, tg)
            return _batching.lift(d, level)._set_requires_grad(True)
        with _bt.suspended(level):
            shape = (_bt.VMAP[level],) + tuple(x._data.shape)
            # Under a forward AD level the leaf is a real copy: a tangent takes its primal's
            # layout, and none can be written into an expanded one (Note [Batched tangents]).
            if x.requires_grad:
                e = x.unsqueeze(0).expand(shape)
                if _fw._levels:
                    e = e.clone()
            else:
                # A read-only broadcast view, not a copy: each entry's leaf is the same data
                # (the batching rules read it; nothing writes into a transform's leaf).
                e = Tensor.__new__(Tensor)
                e._data = np.broadcast_to(x._data, shape)
                if _fw._levels:
                    e._data = e._data.copy()
                    for lv in range(len(_fw._levels)):
                        tg = _fw._tangent(x, lv)
                        if tg is not None:
                            _fw._store(e, lv, tg.unsqueeze(0).expand(shape).clone())
                e._set_requires_grad(True)
        return _batching.mark(e, level)
    if x.requires_grad:
        return x.view_as(x)
    if not (x.is_floating_point() or x.is_complex()):
        raise RuntimeError("only Tensors of floating point dtype can require gradients")
    leaf = x.detach()
    _keep_class(leaf, x)
    if _fw._levels:                  # ``detach`` drops tangents: an outer jvp's stay
        for level in range(len(_fw._levels)):
            tg = _fw._tangent(x, level)
            if tg is not None:
                _fw._store(leaf, level, tg)
    return leaf._set_requires_grad(True)


def _live_leaf(v: Tensor, own: AbstractSet[Any]) -> bool:
    """Is the leaf ``v`` one an enclosing level may differentiate: not this call's own, and
    created outside every transform or in a call of this thread still running (Note
    [Transform levels])?"""
    return id(v) not in own and (not v._tborn or v._tborn in _live.tids)


def _reaches_outside(t: Tensor, own: AbstractSet[Any]) -> bool:
    """Does ``t``'s graph reach a live leaf requiring grad other than this call's own?"""
    fn = t._grad_fn
    if fn is None:
        return _live_leaf(t, own)
    seen = set()
    stack = [fn]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if type(node) is AccumulateGrad:
            if _live_leaf(node.variable, own):
                return True
            continue
        for nxt, _ in node.next_functions:
            if nxt is not None:
                stack.append(nxt)
    return False


def needs_graph(tensors: Sequence[Any], own: Sequence[Tensor], grad_enabled: bool) -> bool:
    """Must gradients be taken with ``create_graph=True``? Only when an output (or a
    cotangent) reaches a leaf outside this call: otherwise every gradient would be detached
    by ``unwrap`` anyway. (Forward AD tangents flow through the backward pass either way.)"""
    if not grad_enabled:
        return False
    ids = {id(t) for t in own}
    return any(isinstance(t, Tensor) and t.requires_grad and _reaches_outside(t, ids)
               for t in tensors)


def detach_keep_tangents(v: Tensor, own: AbstractSet[Any] = frozenset(), grad_enabled: bool = False
                         ) -> Tensor:
    """``v.detach()`` that keeps ``v``'s forward AD tangents: dropping the history of an inner
    transform must not drop an outer ``jvp``'s tangents (themselves unwrapped the same way)."""
    d = v.detach()
    _keep_class(d, v)              # a batched tangent stays batched (Note [Batched tangents])
    if _fw._levels:
        for level in range(len(_fw._levels)):
            tg = _fw._tangent(v, level)
            if tg is not None:
                if tg.requires_grad and (not grad_enabled or not _reaches_outside(tg, own)):
                    tg = detach_keep_tangents(tg, own, grad_enabled)
                _fw._store(d, level, tg)
    return d


def unwrap(values: Sequence[Any], own: Sequence[Tensor], grad_enabled: bool) -> list:
    """Detach the results that need no history outside this transform call."""
    ids = {id(t) for t in own}
    out = []
    for v in values:
        if isinstance(v, Tensor) and v.requires_grad and (
                not grad_enabled or not _reaches_outside(v, ids)):
            v = detach_keep_tangents(v, ids, grad_enabled)
        out.append(v)
    return reborn(out)


def reborn(values: list) -> list:
    """A result created in a transform call that has returned now belongs to this thread's
    innermost running call (0: none), so a later ``requires_grad_()`` makes it a live leaf
    (Note [Transform levels]). Returns ``values``."""
    for v in values:
        if isinstance(v, Tensor) and v._tborn and v._tborn not in _live.tids:
            v._tborn = _transform_local.tid
    return values


def vectorizable() -> bool:
    """May a transform open a batch level now? Only when no batch level and no forward AD
    level is active (a batched value meeting another level's batch or tangents is not
    supported by the batching rules)."""
    return not _bt.ACTIVE and _fw._current_level < 0


def _nested(inner: int, outer: int) -> bool:
    """Is vmap level ``inner`` nested (at any depth) in vmap level ``outer``?"""
    while inner:
        inner = _bt.PARENT.get(inner, 0)
        if inner == outer:
            return True
    return False


def dual_pair(primal: Tensor, tangent: Tensor) -> tuple:
    """``(primal, tangent)`` for one dual of ``jvp`` inside vmap levels: both batched at the
    innermost level either is batched at. A tangent batched at a deeper level than its primal
    (``vmap(lambda t: jvp(f, (p,), (t,)))`` over tangents, ``p`` unbatched or batched at an
    enclosing level) lifts the primal (the same point for every tangent); otherwise the
    tangent is broadcast over the primal's level (``batch_like``)."""
    lt, lp = _batching._vlevel(tangent), _batching._vlevel(primal)
    if lt and lt != lp and (not lp or _nested(lt, lp)):
        lifted = _batching.lift(primal, lt)
        with _bt.suspended(lt):
            # a real copy: a tangent takes its primal's layout, none is written into an
            # expanded one (as fresh_leaf under a forward AD level)
            lifted = lifted.clone()
        return _batching.mark(lifted, lt), tangent
    return primal, batch_like(primal, tangent)


def batch_like(primal: Tensor, tangent: Tensor) -> Tensor:
    """``tangent`` for a dual of ``primal`` (Note [Vectorized vmap]): when ``primal`` is
    batched at a live vmap level and ``tangent`` is not, a read-only broadcast of
    ``tangent`` over that level's batch (the same tangent for every entry)."""
    level = primal._blevel
    if not level or level not in _bt.VMAP or not _bt.is_batched(primal) or \
            tangent._blevel == level:
        return tangent
    if _batching._vlevel(tangent):          # batched at an enclosing vmap level
        return _batching.lift(tangent, level)
    with _bt.suspended(level):
        e = tangent.unsqueeze(0).expand((_bt.VMAP[level],) + tuple(tangent._data.shape))
    return _batching.mark(e, level)
