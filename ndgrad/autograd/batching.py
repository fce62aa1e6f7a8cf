"""Batch levels: the state behind vectorized backward (``grad(..., is_grads_batched=True)``).

Note [Batched backward]
A batched backward runs the graph once on gradients that carry an extra leading batch dimension
of size B, instead of once per row. It is vmap restricted to what a backward pass needs:

* Each batched run opens a *level* (a fresh integer id, added to ``ACTIVE`` while the run
  lasts). A tensor whose ``_blevel`` (class default 0, see tensor.py) is an active level is
  *batched*: its ``_data`` is the physical array ``(B, *logical_shape)``. Once the level closes
  the same tensor is an ordinary tensor of shape ``(B, *logical_shape)``; stale ids are reset
  lazily. So nothing needs cleaning up, and tensors saved into a graph recorded during a batched
  run with ``create_graph=True`` are plain tensors for later backward passes.
* ``ops._dispatch.apply`` checks one module flag (``_BATCHING``, true while any level is active;
  the dispatcher keeps it in sync through ``watch``). When an input is batched it hands the call
  to the op's batching rule (ops/_batching.py), which computes the op on the physical arrays
  with its dims moved past the batch dimension, aligns a batched operand with an unbatched one
  of higher logical rank, and records (when recording) the *physical* op. The result is marked
  batched.
* Public ops whose Python code reads shapes before reaching ``apply`` (reshape, sum, cat,
  matmul ...) start with ``if input._blevel:`` and then run on a *proxy*: a tensor whose data
  is row 0 of the batched one, so all argument checks and dim arithmetic see the logical shape;
  ``apply`` recognizes the proxy (``_bproxy``) and substitutes the batched tensor.
* While a rule runs its physical ops the level is *suspended* (removed from ``ACTIVE``): the
  batched tensors then look like ordinary ones.
* In-place writes through views (``CopySlices``, ops/views_inplace.py) replay the view on the
  flattened rows through the flat positions of the view's elements in the base.
* The engine compares a batched gradient's *logical* shape with the input's metadata
  (engine.py ``_fix_gradient``); helpers that build tensors from a gradient's raw data
  (``_zeros_of``, ``_zeros_for``) copy its ``_blevel``.
* Graphs with a node that cannot run batched (custom Functions, nodes with hooks, in-place
  writes through real/imag views of complex tensors) fall back to one backward per row
  (autograd/api.py ``_batched``, ops/_batching.py ``node_supported``).
* ``func.vmap`` opens its own levels (``vmap_level``, Note [Vectorized vmap] in
  func/_vmap.py): there batched tensors show their logical shape to Python code, and ops
  without a rule run once per entry instead of raising. A vmap level nested in another
  records it (``PARENT``) and counts the entries of both (Note [Nested vmap levels] in
  ops/_batching.py).
* Adding an op: give it a rule in ``ops/_batching.py`` ``install`` (most are one of the
  generic ones: elementwise, dims shifted by one ...), and an ``if input._blevel:`` entry in
  its public function if that reads shapes or dims; otherwise graphs containing it fall back.
  tests/test_batched_grad.py runs every op of tests/op_db.py batched.

Example:
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> ndgrad.autograd.grad(x.exp() * 2, x, ndgrad.eye(2), is_grads_batched=True)[0].shape
    ndgrad.Size([2, 2])
"""

from __future__ import annotations

import itertools
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

__all__ = ["ACTIVE", "VMAP", "is_batched", "batch_level", "suspended", "vmap_level", "current_vmap",
           "vmap_nestable", "PARENT"]

ACTIVE: set = set()          # ids of the batch levels that are alive
VMAP: dict = {}              # level id -> batch size, for the levels opened by ``func.vmap``
RANDOMNESS: dict = {}        # vmap level id -> its ``randomness`` ("error", "different", "same")
PARENT: dict = {}            # vmap level id -> the vmap level it is nested in (0: none)
SUSPENDED: set = set()       # alive levels whose rule is running (see ``suspended``)
_next_level = itertools.count(1).__next__
_LOCK = threading.Lock()
_watchers: list = []         # called with bool(ACTIVE) on every change (see ``watch``)


def _sync() -> None:
    active = bool(ACTIVE)
    for fn in _watchers:
        fn(active)


def watch(fn: Callable[[bool], None]) -> None:
    """Call ``fn(any_level_alive)`` now and whenever levels open or close: how the dispatcher
    (ops/_dispatch.py, a layer above) keeps its ``_BATCHING`` flag in sync (Note
    [Instrumentation flags])."""
    with _LOCK:
        _watchers.append(fn)
        fn(bool(ACTIVE))


def is_batched(t: Any) -> bool:
    """True if ``t`` carries a batch dimension of a level that is alive."""
    lv = t._blevel
    if not lv:
        return False
    if lv in ACTIVE:
        return True
    if lv not in SUSPENDED:
        t._blevel = 0        # the level closed: ``t`` is an ordinary tensor now
    return False


@contextmanager
def batch_level() -> Iterator[int]:
    """Open a new batch level for the duration of the block; yields its id."""
    level = _next_level()
    with _LOCK:
        ACTIVE.add(level)
        _sync()
    try:
        yield level
    finally:
        with _LOCK:
            ACTIVE.discard(level)
            _sync()


@contextmanager
def vmap_level(size: int, randomness: str = "error", parent: int = 0) -> Iterator[int]:
    """A batch level opened by ``func.vmap`` over ``size`` entries (Note [Vectorized vmap] in
    func/_vmap.py): its batched tensors report their logical shape to Python code and ops
    without a batching rule run per entry instead of raising. A level nested in vmap level
    ``parent`` counts the entries of both: ``size`` is the parent's size times its own
    (Note [Nested vmap levels] in func/_vmap.py)."""
    with batch_level() as level:
        VMAP[level] = size
        RANDOMNESS[level] = randomness
        PARENT[level] = parent
        try:
            yield level
        finally:
            del VMAP[level]
            del RANDOMNESS[level]
            del PARENT[level]


def vmap_nestable() -> bool:
    """May a new vmap level open vectorized now? Yes unless a level is suspended (inside a
    running batching rule). A live batch level that is not a vmap level (the batched tangents
    of ``jacfwd``) batches other tensors than the vmap's: the two never meet in one op."""
    return not SUSPENDED


def current_vmap() -> int:
    """The innermost vmap level that is alive and not suspended (0 if none)."""
    best = 0
    for lv in VMAP:
        if lv in ACTIVE and lv > best:
            best = lv
    return best


@contextmanager
def suspended(level: int) -> Iterator[None]:
    """Within the block, tensors of ``level`` behave as ordinary (physical) tensors
    (re-entrant: a level suspended already stays so)."""
    with _LOCK:
        was = level in ACTIVE
        if was:
            ACTIVE.discard(level)
            SUSPENDED.add(level)
            _sync()
    try:
        yield
    finally:
        if was:
            with _LOCK:
                SUSPENDED.discard(level)
                ACTIVE.add(level)
                _sync()
