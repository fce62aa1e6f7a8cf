"""``vmap``: map a function over a dimension of its inputs.

Note [Vectorized vmap]
``vmap(f)(xs)`` calls ``f`` once, on batched tensors, as torch.func does:

* A new *vmap level* is opened (``autograd.batching.vmap_level``: a batch level, Note [Batched
  backward], that also records its batch size and randomness). Each mapped input, its in_dim
  moved first, becomes a ``BatchedTensor`` (ops/_batching.py): the Tensor's own layout with its
  class switched, ``_data`` the physical array with the batch first, ``_blevel`` the level.
  While the level is alive and not suspended, ``shape``, ``size()``, ``dim()``, ``ndim``,
  ``numel()``, ``len()``, ``T``/``mT``/``H``/``mH`` are one entry's (logical).
* Ops reaching ``apply`` run their batching rule on the physical arrays (``batched_apply``); at
  a vmap level an op without a rule, or with a batched tensor among its non-tensor arguments
  (a mask, an index), runs once per entry and the results are stacked (torch's slow-path
  fallback: exact, differentiable). Public functions that read shapes run on logical proxies
  (``_batching.call``); when a proxy is used for its values they run per entry, except
  ``cross_entropy``/``nll_loss`` with class targets, folded into the loss's own batch dim.
* Functions computing on ``_data`` without ``apply`` are wrapped in the ``ndgrad`` namespace
  and as ``BatchedTensor`` methods (``install_data_functions``; one dict test when no vmap level
  exists): comparisons, logical/bitwise ops, ``isnan`` ..., ``where``, ``masked_fill`` run
  elementwise with the batch aligned; ``*_like`` factories give batched results; ``nonzero``,
  ``any``, ``unique`` ... run per entry (a data-dependent shape is torch's error); indexing with
  a batched index runs per entry, writing one into an unbatched tensor is refused. ``.item()``,
  ``bool()``, ``int()``, ``float()``, ``.tolist()``, ``.numpy()`` of a batched tensor raise
  torch's errors; writing a batched value in place into an unbatched tensor raises torch's
  "vmap: inplace arithmetic" (ops/views_inplace.py ``_store``). ``autograd.Function`` on batched
  inputs runs per entry (ndgrad's Function has no ``vmap`` staticmethod).
* Reverse-mode transforms inside (``grad``, ``vjp``, ``jacrev``) differentiate batched leaves
  (``_common.fresh_leaf``: an unbatched input becomes a read-only broadcast view, one "copy"
  per entry) and run the backward pass with the level suspended, on the physical graph: the
  rules never mix entries, so each entry's gradient is its own. Per-example gradients of a
  module (``vmap(grad(loss), in_dims=(None, 0, 0))`` with ``functional_call``) are then one
  forward and one backward pass; the products with a broadcast weight are single GEMMs
  (``_batching.bmm3``).
* ``randomness="error"`` refuses any draw (the generator's position is compared around the
  call); ``"different"`` draws once with the batch size prepended (factories with a size) or on
  the physical batch (``rand_like``, dropout of a batched tensor), and a draw made on a logical
  proxy is redone per entry; ``"same"`` draws once with one entry's shape (factories as they
  are, ``*_like`` and random fills of a batched tensor broadcast one entry's draw, dropout's
  mask drawn on the logical proxy), and a draw from a batched input (``bernoulli(p)``) is
  torch's error.
* Forward mode: a tangent of a batched primal is batched at the same level (``mark`` batches
  the tangents a rule computed on the physical arrays; ``_common.batch_like`` broadcasts an
  unbatched tangent given to ``jvp``); ``jvp``, ``jacfwd``, ``hessian``, ``linearize`` run
  inside a vmap and a vmap runs inside them (``jacfwd(vmap(f))`` too), ``f`` called once.
  ``jacfwd`` inside a vmap is ``jvp`` vmapped over the unit tangents at a nested level
  (torch's definition).
* Nested vmaps: Note [Nested vmap levels] (ops/_batching.py): the inner level's batched
  tensors carry the entries of every enclosing level and its own in one leading dim; tensors
  of an enclosing level are lifted when they meet it. Outputs are reshaped back to the
  enclosing level. A ``vjp_fn`` made at a level and called in a nested one runs one backward
  per inner entry.
* Outputs: batched ones are moved from dim 0 to ``out_dims``; an unbatched output is expanded
  (as torch returns it).
* Errors: ``f`` runs once; an exception raised in it is the user's and is raised as is, so
  ``f``'s side effects (appends, in-place writes into closed-over tensors, draws) happen once,
  as in torch. Batching limitations are handled per op (an op without a rule runs once per
  entry), never by running ``f`` again; errors name logical shapes (the rules check
  broadcasting on them, public functions check their arguments on logical proxies).

Run by entries instead (``_run``: ``f`` once per entry, outputs stacked; exact for every op):
a vmap whose inputs are batched at a batch level that is not a vmap level (a batched
backward's gradients), a vmap inside a running batching rule, and an empty batch (one call on
zeros for the output structure). Inside ``jacfwd``/``hessian`` (their column-batched tangents
are at such a level) a vmap is vectorized: only tangents are batched there, and a jvp rule
computes a tangent from the physical primal of the vmap level. ``vmap(vjp_fn)`` is one
batched backward pass (``_common.VMAP_RULES``), ``jacrev``/``jacfwd`` vectorize themselves
(Note [Transform levels]).

Differences from torch: a free function not listed above that computes on ``_data`` (a plain
tensor built from ``x.numpy()`` is refused) sees physical arrays; broadcasting errors name
logical dims where torch's name its physical ones; by entries, ``.item()``/``bool`` are
allowed only on tensors ``f`` closes over, an in-place write into a closed-over tensor is
refused whatever is written, and an output that is an input's entry is a copy, not a view;
an inner ``"different"`` level inside an outer ``"same"`` one draws different values for
every entry of both (torch: the same for the outer entries), and ``*_like`` draws and random
fills in an inner ``"same"`` level inside an outer ``"different"`` one give the same values
for the outer entries too (factories draw as torch does); an inner vmap writing in place
into an input it maps but the outer level does not is refused only when the outer entries
wrote different values (torch: whenever the written value is batched at the outer level).

Example:
    >>> import ndgrad
    >>> from ndgrad.func import vmap
    >>> vmap(ndgrad.dot)(ndgrad.ones(3, 2), ndgrad.ones(3, 2))
    tensor([2., 2., 2.])
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, Optional

import importlib

import numpy as np

from ..autograd import batching as _bt
from ..ops import _batching, cat, stack
from ..ops import views_inplace as _views_inplace
from ..tensor import Tensor
from . import _common, _rng
from ._pytree import broadcast_prefix, tree_flatten, tree_unflatten

# the module (ndgrad.tensor, the attribute, is the factory function)
_tensor_mod: Any = importlib.import_module("ndgrad.tensor")

__all__ = ["vmap"]


class _State(threading.local):
    depth = 0
    outside: frozenset = frozenset()     # ids of the tensors the running function closes over


_state = _State()

# torch's messages, shared with the batched tensors (ops/_batching.py) and in-place writes
_ITEM, _CONTROL_FLOW = _batching._ITEM, _batching._CONTROL_FLOW
_INPLACE = _views_inplace._VMAP_INPLACE


def _check(t: Tensor, what: str) -> None:
    """Called by Tensor.item/__bool__: refused while a vmapped function runs, except on the
    tensors the function closes over (Note [Vectorized vmap])."""
    if _state.depth and id(t) not in _state.outside:
        raise RuntimeError(_ITEM if what == "item" else _CONTROL_FLOW)


_tensor_mod._vmap_check = _check
# torch refuses requires_grad_() inside vmap too: a live, unsuspended vmap level (the batched
# run) or a by-entries run of this thread
_tensor_mod._vmap_running = lambda: _state.depth > 0 or (_bt.VMAP and _bt.current_vmap() != 0)
_batching.fingerprint = _rng._fingerprint
_batching.rng_state = _rng.default_generator.get_state
_batching.set_rng_state = _rng.default_generator.set_state
_batching.install_data_functions(importlib.import_module("ndgrad"),
                                 importlib.import_module("ndgrad.ops"))


def _outside(func: Any, leaves: list, dims: list) -> dict:
    """The tensors ``func`` reaches without going through its mapped inputs: unmapped
    arguments, closure cells, defaults, ``functools.partial`` arguments, the module of a
    bound method, module-level names it reads; modules count with their parameters and
    buffers. ``id -> tensor``."""
    found: dict = {}

    def add(v: Any, depth: int = 0) -> None:
        if isinstance(v, Tensor):
            found[id(v)] = v
        elif depth < 2 and isinstance(v, (list, tuple)):
            for e in v:
                add(e, depth + 1)
        elif depth < 2 and isinstance(v, dict):
            for e in v.values():
                add(e, depth + 1)
        elif hasattr(v, "named_parameters") and hasattr(v, "named_buffers"):
            for _, p in v.named_parameters():
                found[id(p)] = p
            for _, b in v.named_buffers():
                found[id(b)] = b

    for x, d in zip(leaves, dims):
        if d is None:
            add(x)
    seen: set = set()
    todo = [func]
    while todo:
        f = todo.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        if isinstance(f, functools.partial):
            add(f.args)
            add(f.keywords)
            todo.append(f.func)
            continue
        self = getattr(f, "__self__", None)
        if self is not None and not isinstance(self, type(np)):
            add(self)
        if hasattr(f, "forward") and hasattr(f, "named_parameters"):
            add(f)
            f = getattr(type(f), "forward", None)
        code = getattr(f, "__code__", None)
        if code is None:
            continue
        for cell in getattr(f, "__closure__", None) or ():
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            if callable(v) and not isinstance(v, Tensor):
                todo.append(v)
            else:
                add(v)
        add(getattr(f, "__defaults__", None) or ())
        g = getattr(f, "__globals__", {})
        for name in code.co_names:
            v = g.get(name)
            if v is not None:
                add(v)
        wrapped = getattr(f, "__wrapped__", None)
        if wrapped is not None:
            todo.append(wrapped)
    return found


def _name(func: Any) -> str:
    return getattr(func, "__name__", repr(func))


def _in_dims_error(fname: str, in_dims: Any, msg: str) -> ValueError:
    return ValueError(f"vmap({fname}, in_dims={in_dims}, ...)(<inputs>): {msg}")


def vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: Optional[int] = None) -> Callable:
    """``func`` mapped over dimension ``in_dims`` of its inputs, the results stacked at
    ``out_dims``. ``in_dims`` is an int or a tuple with one entry per positional argument, each
    an int, None (not mapped) or a pytree matching that argument; ``out_dims`` likewise for the
    outputs. ``randomness`` is ``"error"``, ``"different"`` or ``"same"``. Nested ``vmap``
    and other transforms compose.

    >>> import ndgrad
    >>> from ndgrad.func import vmap
    >>> vmap(lambda x, y: x * y, in_dims=(1, None))(ndgrad.ones(2, 3), ndgrad.tensor(2.0))
    tensor([[2., 2.],
            [2., 2.],
            [2., 2.]])
    """
    _rng.check_randomness(randomness)
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        fname = _name(func)
        if not args:
            raise ValueError(f"vmap({fname})(<inputs>): got no inputs. Maybe you forgot to add "
                             "inputs, or you are trying to vmap over a function with no inputs. "
                             "The latter is unsupported.")
        if isinstance(in_dims, bool) or not isinstance(in_dims, (int, tuple)):
            raise _in_dims_error(fname, in_dims, "expected `in_dims` to be int or a "
                                 "(potentially nested) tuple matching the structure of inputs, "
                                 f"got: {type(in_dims)}.")
        leaves, spec = tree_flatten(args)
        dims = broadcast_prefix(in_dims, spec)
        if dims is None:
            raise _in_dims_error(fname, in_dims, "in_dims is not compatible with the structure "
                                 f"of `inputs`. in_dims has structure {tree_flatten(in_dims)[1]}"
                                 f" but inputs has structure {spec}.")
        sizes: list = []
        moved: list = []
        for x, d in zip(leaves, dims):
            if d is None:
                moved.append(None)
                continue
            if isinstance(d, bool) or not isinstance(d, int):
                raise _in_dims_error(fname, in_dims, f"Got in_dim={d} for an input but in_dim "
                                     "must be either an integer dimension or None.")
            if not isinstance(x, Tensor):
                raise _in_dims_error(fname, in_dims, f"Got in_dim={d} for an input but the "
                                     f"input is of type {type(x)}. We cannot vmap over "
                                     "non-Tensor arguments, please use None as the respective "
                                     "in_dim")
            n = x.dim()
            if not -n <= d < n:
                raise _in_dims_error(fname, in_dims, f"Got in_dim={d} for some input, but that "
                                     f"input is a Tensor of dimensionality {n} so expected "
                                     f"in_dim to satisfy -{n} <= in_dim < {n}.")
            sizes.append(x.shape[d])
            moved.append(x.movedim(d, 0) if d % n else x)
        if not sizes:
            raise ValueError("vmap: Expected at least one Tensor to vmap over")
        if any(s != sizes[0] for s in sizes):
            raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                             f"dimension, got sizes {sizes} for the mapped dimension")
        B = sizes[0]
        rule = _common.VMAP_RULES.get(func)
        if rule is not None and not kwargs and len(args) == 1 and B and \
                all(m is not None for m in moved):
            res = _vectorized(rule, moved, spec.children_specs[0], B, chunk_size)
            if res is not None:
                return _place(res, fname, out_dims)
        if B and _bt.vmap_nestable() and not any(
                isinstance(x, Tensor) and x._blevel in _bt.ACTIVE and x._blevel not in _bt.VMAP
                for x in leaves):
            return _batched_run(func, fname, leaves, moved, spec, kwargs, B, out_dims,
                                chunk_size, randomness)
        return _run(func, fname, leaves, moved, spec, kwargs, B, out_dims, randomness)

    return wrapped


def _batched_run(func: Callable, fname: str, leaves: list, moved: list, spec: Any,
                 kwargs: dict, B: int, out_dims: Any, chunk_size: Optional[int],
                 randomness: str) -> Any:
    """One call of ``func`` on batched tensors (``chunk_size`` entries at a time; Note
    [Vectorized vmap])."""
    step = chunk_size or B
    parts = []
    for s in range(0, B, step):
        n = min(step, B - s)
        chunk = [m if m is None or step >= B else m.narrow(0, s, n) for m in moved]
        parts.append(_batched_call(func, leaves, chunk, spec, kwargs, n, randomness))
    o_spec = parts[0][1]
    for p in parts[1:]:
        if p[1] != o_spec:
            raise ValueError(f"vmap({fname}, ...): `{fname}` returned outputs of different "
                             "structures for different chunks")
    odims = _out_dims(out_dims, o_spec, fname)
    results = []
    for j, od in enumerate(odims):
        col = [(p[0][j], p[2][j]) for p in parts]
        first, batched = col[0]
        if od is None:
            # batched at this level or an enclosing one: torch refuses both
            if any(b or (isinstance(c, Tensor) and _batching._vlevel(c)) for c, b in col):
                raise ValueError(f"vmap({fname}, ...): `{fname}` can not return a "
                                 "BatchedTensor when out_dim is None")
            results.append(first)
            continue
        outs = []
        for (c, b), p in zip(col, parts):
            if not isinstance(c, Tensor):
                raise ValueError(f"vmap({fname}, ...): `{fname}` must only return Tensors, got "
                                 f"type {type(c)}. Did you mean to set out_dims= to None for "
                                 "output?")
            if not b:
                c = c.unsqueeze(0).expand((p[3],) + tuple(c.shape))
            outs.append(c)
        r = outs[0] if len(outs) == 1 else cat(outs, 0)
        results.append(r.movedim(0, od) if od else r)
    return tree_unflatten(results, o_spec)


def _batched_call(func: Callable, leaves: list, moved: list, spec: Any, kwargs: dict,
                  B: int, randomness: str) -> Any:
    """``func`` run once at a new vmap level; its flat outputs (physical, batch first, plain
    tensors), their spec, which of them are batched, and B."""
    parent = _bt.current_vmap() if _bt.VMAP else 0
    P = _bt.VMAP[parent] if parent else 1
    copies = []                     # (input, its flattened copy, the copy's version)
    with _bt.vmap_level(P * B, randomness, parent) as level:
        args = []
        for x, m in zip(leaves, moved):
            if m is None:
                args.append(x)
            elif parent:            # Note [Nested vmap levels]: one dim for both levels
                own = m
                m = _batching.lift(m, parent)
                with _bt.suspended(parent):
                    a = m.reshape((P * B,) + tuple(m._data.shape[2:]))
                    if not np.shares_memory(a._data, own._data):
                        copies.append((own, m is not own, a, a._version))
                args.append(_batching.mark(a, level))
            else:
                a = m if m is not x else x.view_as(x)
                args.append(_batching.mark(a, level))
        # An exception is the user's, raised as is: batching limitations are handled per op
        # (ops/_batching.py), so nothing is run a second time.
        with _rng.policy(randomness) as rng:
            rng.before(0)
            out = func(*tree_unflatten(args, spec), **kwargs)
            rng.after(0)
        o_leaves, o_spec = tree_flatten(out)
        if copies:
            # an input flattened by a copy and written in place by ``f``: written back
            with _bt.suspended(level), _bt.suspended(parent):
                for m, lifted, a, v in copies:
                    if a._version == v:
                        continue
                    if lifted:      # not batched at the enclosing level: one value for all
                        rows = a.reshape((P,) + tuple(m._data.shape))
                        if P > 1 and not (rows._data == rows._data[:1]).all():
                            raise RuntimeError(_INPLACE)
                        m.copy_(rows[0])
                    else:
                        m.copy_(a.reshape(tuple(m._data.shape)))
        flags = []
        for o in o_leaves:
            b = isinstance(o, Tensor) and o._blevel == level
            flags.append(b)
    res = []
    for o, b in zip(o_leaves, flags):
        if b:
            _batching.unmark(o)
            if parent:
                o = _batching.mark(o.reshape((P, B) + tuple(o._data.shape[1:])), parent)
        res.append(o)
    return res, o_spec, flags, B


def _vectorized(rule: Callable, moved: list, spec: Any, B: int,
                chunk_size: Optional[int]) -> Any:
    """A function with its own batched form (``vjp_fn``: one batched backward pass), run on
    the mapped inputs with the batch first, ``chunk_size`` entries at a time."""
    step = chunk_size or B
    parts = []
    for s in range(0, B, step):
        chunk = [m if step >= B else m.narrow(0, s, min(step, B - s)) for m in moved]
        r = rule(chunk, spec)
        if r is None:
            return None
        parts.append(tree_flatten(r))
    o_spec = parts[0][1]
    leaves = [cat([p[0][j] for p in parts]) if len(parts) > 1 else parts[0][0][j]
              for j in range(len(parts[0][0]))]
    return tree_unflatten(leaves, o_spec)


def _place(res: Any, fname: str, out_dims: Any) -> Any:
    """Outputs with the batch first moved to ``out_dims``."""
    leaves, o_spec = tree_flatten(res)
    odims = _out_dims(out_dims, o_spec, fname)
    out = []
    for x, od in zip(leaves, odims):
        if od is None:
            raise ValueError(f"vmap({fname}, ...): `{fname}` can not return a BatchedTensor "
                             "when out_dim is None")
        out.append(x.movedim(0, od) if od else x)
    return tree_unflatten(out, o_spec)


def _out_dims(out_dims: Any, o_spec: Any, fname: str) -> list:
    if isinstance(out_dims, bool) or not (out_dims is None or isinstance(
            out_dims, (int, tuple, list, dict))):
        raise ValueError(f"vmap({fname}, ..., out_dims={out_dims}): `out_dims` must be an int, "
                         "None or a python collection of ints representing where in the "
                         "outputs the vmapped dimension should appear.")
    odims = broadcast_prefix(out_dims, o_spec)
    if odims is None:
        raise ValueError(f"vmap({fname}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
                         "compatible with the structure of `outputs`. out_dims has structure "
                         f"{tree_flatten(out_dims)[1]} but outputs has structure {o_spec}.")
    for od in odims:
        if od is not None and (isinstance(od, bool) or not isinstance(od, int)):
            raise ValueError(f"vmap({fname}, ..., out_dims={out_dims}): `out_dims` must be an "
                             "int, None or a python collection of ints representing where in "
                             "the outputs the vmapped dimension should appear.")
    return odims


def _call(func: Callable, args: Any, kwargs: dict, outside: frozenset) -> Any:
    prev = _state.outside
    _state.depth += 1
    _state.outside = outside if not _state.depth - 1 else prev | outside
    try:
        return func(*args, **kwargs)
    finally:
        _state.depth -= 1
        _state.outside = prev


def _run(func: Callable, fname: str, leaves: list, moved: list, spec: Any, kwargs: dict,
         B: int, out_dims: Any, randomness: str) -> Any:
    outs = []
    outside = _outside(func, leaves, [None if m is None else 0 for m in moved])
    mapped = {id(x) for x, m in zip(leaves, moved) if m is not None}
    versions = [(t, t._version) for t in outside.values() if id(t) not in mapped]
    ids = frozenset(outside)
    with _rng.policy(randomness) as rng:
        for b in range(max(B, 1)):
            if B:
                row = [x if m is None else m[b] for x, m in zip(leaves, moved)]
            else:                   # an empty batch: one call on zeros for the structure
                row = [x if m is None else m.new_zeros(tuple(m.shape[1:]))
                       for x, m in zip(leaves, moved)]
            rng.before(b)
            out = _call(func, tree_unflatten(row, spec), kwargs, ids)
            rng.after(b)
            for t, v in versions:
                if t._version != v:
                    raise RuntimeError(_INPLACE)
            outs.append(tree_flatten(out))
    o_spec = outs[0][1]
    for _, s in outs[1:]:
        if s != o_spec:
            raise ValueError(f"vmap({fname}, ...): `{fname}` returned outputs of different "
                             "structures for different batch entries")
    odims = _out_dims(out_dims, o_spec, fname)
    results = []
    for j, od in enumerate(odims):
        col = [o[0][j] for o in outs]
        first = col[0]
        if od is None:
            if isinstance(first, Tensor) and _batched(first, col, leaves, moved):
                raise ValueError(f"vmap({fname}, ...): `{fname}` can not return a "
                                 "BatchedTensor when out_dim is None")
            results.append(first)
            continue
        for c in col:
            if not isinstance(c, Tensor):
                raise ValueError(f"vmap({fname}, ...): `{fname}` must only return Tensors, got "
                                 f"type {type(c)}. Did you mean to set out_dims= to None for "
                                 "output?")
        if B:
            results.append(stack(col, od))
        else:
            results.append(stack(col, od).narrow(od % (first.dim() + 1), 0, 0))
    return tree_unflatten(results, o_spec)


def _batched(first: Tensor, col: list, leaves: list, moved: list) -> bool:
    """An output declared unbatched (out_dim None): is it batched? It is when its values
    differ between entries or it is (a view of) an entry of a mapped input."""
    if any(c._data.shape != first._data.shape for c in col):
        return True
    for c in col[1:]:
        if not (c is first or np.array_equal(c._data, first._data, equal_nan=True)):
            return True
    if any(first is x for x in leaves):
        return False
    return any(np.may_share_memory(first._data, m._data[0]) for m in moved
               if m is not None and m.shape[0])
