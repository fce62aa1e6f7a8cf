"""Reverse-mode transforms: ``grad``, ``grad_and_value``, ``vjp`` and ``jacrev`` (Note
[Transform levels] in _common.py).

Example:
    >>> import ndgrad
    >>> from ndgrad.func import grad
    >>> grad(lambda x: (x ** 3).sum())(ndgrad.tensor([1.0, 2.0]))
    tensor([ 3., 12.])
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional, Tuple, Union

import numpy as np

from .. import _creation
from ..autograd.api import grad as _autograd_grad
from ..autograd import batching as _bt
from ..autograd.grad_mode import enable_grad, is_grad_enabled
from ..ops import cat, stack
from ..ops import _batching
from ..ops._batching import lift, mark
from ..tensor import Tensor, _wrap
from . import _common
from ._pytree import tree_flatten, tree_unflatten

__all__ = ["grad", "grad_and_value", "vjp", "jacrev"]

Argnums = Union[int, Tuple[int, ...]]


def _wrap_args(args: tuple, nums: tuple, level: int = 0) -> Tuple[tuple, list, list, list]:
    """Replace the tensors of ``args[i]`` (i in ``nums``) by fresh leaves. Returns the new
    args, the fresh leaves, one (spec, count) per differentiated argument, and the leaves
    this call created (for unwrapping)."""
    new_args = list(args)
    leaves_all: list = []
    specs: list = []
    for i in nums:
        leaves, spec = tree_flatten(new_args[i])
        _common.check_leaves(leaves)
        new = [_common.fresh_leaf(x, level) for x in leaves]
        new_args[i] = tree_unflatten(new, spec)
        leaves_all.extend(new)
        specs.append((spec, len(new)))
    return tuple(new_args), leaves_all, specs, leaves_all


def _regroup(flat: list, specs: list, argnums: Argnums) -> Any:
    """Per-input results back in the structure of the differentiated arguments: the argument's
    own tree for an int ``argnums``, a tuple of them for a tuple."""
    out, pos = [], 0
    for spec, n in specs:
        out.append(tree_unflatten(flat[pos:pos + n], spec))
        pos += n
    return out[0] if isinstance(argnums, int) else tuple(out)


def _grads(outputs: list, inputs: list, grad_outputs: Optional[list],
           create_graph: bool = True, level: int = 0) -> list:
    """Gradients of ``outputs`` with respect to ``inputs``, zeros where independent."""
    if level:
        return _grads_batched(outputs, inputs, grad_outputs, create_graph, level)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs or [None] * len(outputs))
             if o.requires_grad]
    res: Any
    if pairs:
        res = _autograd_grad([p[0] for p in pairs], inputs, [p[1] for p in pairs],
                             retain_graph=True, create_graph=create_graph, allow_unused=True)
    else:
        res = [None] * len(inputs)
    return [r if r is not None else _creation.zeros_like(x) for r, x in zip(res, inputs)]


def _grads_batched(outputs: list, inputs: list, grad_outputs: Optional[list],
                   create_graph: bool, level: int) -> list:
    """``_grads`` inside a vmap level: the inputs are batched leaves (``fresh_leaf``), so the
    physical graph's gradient is each entry's own; it runs with the level suspended
    (Note [Vectorized vmap] in _vmap.py)."""
    with _bt.suspended(level):
        pairs = []
        for o, g in zip(outputs, grad_outputs or [None] * len(outputs)):
            if not o.requires_grad:
                continue
            ob = o._blevel == level
            if g is None:
                g = _creation.ones_like(o)
            elif g._blevel == level:
                if not ob:
                    # The leaves are all batched: an unbatched output does not depend on them
                    # and adds nothing to their gradients.
                    continue
            elif ob:
                g = g.unsqueeze(0).expand(o._data.shape)
            pairs.append((o, g))
        res: Any
        if pairs:
            res = _autograd_grad([p[0] for p in pairs], inputs, [p[1] for p in pairs],
                                 retain_graph=True, create_graph=create_graph,
                                 allow_unused=True)
        else:
            res = [None] * len(inputs)
        out = [r if r is not None else _creation.zeros_like(x) for r, x in zip(res, inputs)]
    return [mark(r, level) for r in out]


# ---------------------------------------------------------------------------- grad
def grad_and_value(func: Callable, argnums: Argnums = 0, has_aux: bool = False) -> Callable:
    """A function returning ``(gradient, value)`` of the scalar function ``func``: the
    gradient with respect to the arguments at ``argnums`` (each a tensor or a pytree of
    tensors), and ``func``'s output (``(output, aux)`` with ``has_aux``).

    >>> import ndgrad
    >>> from ndgrad.func import grad_and_value
    >>> g, v = grad_and_value(lambda x: (x * x).sum())(ndgrad.tensor([1.0, 2.0]))
    >>> g, v
    (tensor([2., 4.]), tensor(5.))
    """
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = _common.check_argnums(argnums, len(args))
        outer = is_grad_enabled()
        level = _common.vmap_level()
        with enable_grad():
            new_args, leaves, specs, own = _wrap_args(args, nums, level)
            with _common.transform_scope() as tid:
                _common.own_inputs(leaves, tid)
                _common.mark_leaves(leaves, tid)
                res_f = func(*new_args, **kwargs)
            out, aux = _split_aux(res_f, has_aux, "grad_and_value(f)(*args)")
            if not isinstance(out, Tensor):
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(out)}")
            if out.dim() != 0:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {out.dim()} dims. Maybe "
                                   "you wanted to use the vjp or jacrev APIs instead?")
            if not (out.is_floating_point() or out.is_complex()):
                raise RuntimeError("only Tensors of floating point dtype can require gradients")
            aux_leaves, aux_spec = tree_flatten(aux) if has_aux else ([], None)
            if has_aux:
                _check_tensors(aux_leaves)
            gs = _grads([out], leaves, None, _common.needs_graph([out], own, outer), level)
        res = _common.unwrap(gs + [out] + aux_leaves, own, outer)
        g = _regroup(res[:len(gs)], specs, argnums)
        value = res[len(gs)]
        if has_aux:
            return g, (value, tree_unflatten(res[len(gs) + 1:], aux_spec))
        return g, value
    return wrapper


def _check_tensors(leaves: list) -> None:
    for a in leaves:
        if not isinstance(a, Tensor):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(a)}")


def grad(func: Callable, argnums: Argnums = 0, has_aux: bool = False) -> Callable:
    """The gradient of the scalar function ``func`` with respect to its arguments at
    ``argnums``, as a function of the same arguments (``(gradient, aux)`` with ``has_aux``).
    Transforms compose: ``grad(grad(f))`` is the second derivative.

    >>> import ndgrad
    >>> from ndgrad.func import grad
    >>> grad(grad(ndgrad.sin))(ndgrad.tensor(0.5))
    tensor(-0.4794)
    """
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g, value = gv(*args, **kwargs)
        if has_aux:
            return g, value[1]
        return g
    return wrapper


# ---------------------------------------------------------------------------- vjp
def _split_aux(out: Any, has_aux: bool, what: str) -> Tuple[Any, Any]:
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{what}: output of function f should be a tuple: (output, aux) if "
                           "has_aux is True")
    return out


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> Tuple[Any, ...]:
    """``(func(*primals), vjp_fn)`` (and ``aux`` with ``has_aux``): ``vjp_fn(cotangents)``,
    with cotangents shaped like the output pytree, returns a tuple with one vector-Jacobian
    product per primal. ``vjp_fn`` may be called many times.

    >>> import ndgrad
    >>> from ndgrad.func import vjp
    >>> out, vjp_fn = vjp(lambda x: x * 3, ndgrad.ones(2))
    >>> vjp_fn(ndgrad.tensor([1.0, 2.0]))
    (tensor([3., 6.]),)
    """
    outer = is_grad_enabled()
    level = _common.vmap_level()
    with enable_grad():
        p_leaves, p_spec = tree_flatten(primals)
        _common.check_leaves(p_leaves)
        leaves = [_common.fresh_leaf(x, level) for x in p_leaves]
        with _common.transform_scope() as tid:
            _common.own_inputs(leaves, tid)
            _common.mark_leaves(leaves, tid)
            out = func(*tree_unflatten(leaves, p_spec))
        out, aux = _split_aux(out, has_aux, "vjp(f, *primals)")
        o_leaves, o_spec = tree_flatten(out)
        _check_outputs(o_leaves)
        aux_leaves, aux_spec = tree_flatten(aux) if has_aux else ([], None)
        if has_aux:
            _check_tensors(aux_leaves)

    def vjp_fn(cotangents: Any, retain_graph: bool = True,
               create_graph: Optional[bool] = None) -> tuple:
        c_leaves, c_spec = tree_flatten(cotangents)
        if c_spec != o_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as "
                               "pytree structure of outputs to the function. cotangents: "
                               f"{_short(c_spec)}, primal output: {_short(o_spec)}")
        _check_tensors(c_leaves)
        grad_on = is_grad_enabled()
        cur = _common.vmap_level()
        if level and level != cur:
            if not _nested_in(cur, level):
                raise RuntimeError("vjp_fn: called outside the vmap level its vjp was made in")
            with enable_grad():
                gs = _inner_entries(o_leaves, leaves, c_leaves, grad_on, level, cur)
            return _common.adopt(tree_unflatten(_common.unwrap(gs, leaves, grad_on), p_spec))
        if not level and cur and any(_batching._vlevel(c) for c in c_leaves):
            # made outside any vmap, called in one with batched cotangents: one backward pass
            # per entry, on the physical rows
            with enable_grad():
                gs = _outer_entries(o_leaves, leaves, c_leaves, grad_on, cur)
            return _common.adopt(tree_unflatten(_common.unwrap(gs, leaves, grad_on), p_spec))
        with enable_grad():
            gs = _grads(o_leaves, leaves, c_leaves,
                        _common.needs_graph(o_leaves + c_leaves, leaves, grad_on), level)
        return _common.adopt(tree_unflatten(_common.unwrap(gs, leaves, grad_on), p_spec))

    def batched(c_leaves: list, c_spec: Any) -> Any:
        """``vmap(vjp_fn)`` over cotangents with the batch dimension first: one batched
        backward pass (Note [Vectorized vmap])."""
        if level or c_spec != o_spec or not all(isinstance(c, Tensor) for c in c_leaves):
            return None
        grad_on = is_grad_enabled()
        with enable_grad():
            gs = _batched_rows(o_leaves, leaves, c_leaves,
                               _common.needs_graph(o_leaves + c_leaves, leaves, grad_on))
        return tree_unflatten(_common.unwrap(gs, leaves, grad_on), p_spec)

    _common.VMAP_RULES[vjp_fn] = batched
    res = _common.unwrap(o_leaves + aux_leaves, leaves, outer)
    out_value = tree_unflatten(res[:len(o_leaves)], o_spec)
    _common.adopt(res)            # an enclosing transform's own tensors (Note [Captured tensors])
    if has_aux:
        return out_value, vjp_fn, tree_unflatten(res[len(o_leaves):], aux_spec)
    return out_value, vjp_fn


def _nested_in(inner: int, outer: int) -> bool:
    """Is vmap level ``inner`` nested (at any depth) in vmap level ``outer``?"""
    while inner:
        inner = _bt.PARENT.get(inner, 0)
        if inner == outer:
            return True
    return False


def _inner_entries(o_leaves: list, leaves: list, c_leaves: list, grad_on: bool, level: int,
                   cur: int) -> list:
    """A ``vjp_fn`` made at vmap level ``level`` called inside a vmap level ``cur`` nested in
    it (Note [Nested vmap levels]): one backward pass at ``level`` per entry of the inner
    levels (their entries are the inner factor of ``cur``'s flattened batch), stacked."""
    P, T = _bt.VMAP[level], _bt.VMAP[cur]
    n = T // P if P else 0
    cs = [lift(c, cur) for c in c_leaves]
    graph = _common.needs_graph(o_leaves + c_leaves, leaves, grad_on)
    rows = []
    with _bt.suspended(cur):
        for b in range(n):
            cb = [mark(c.reshape((P, n) + tuple(c._data.shape[1:])).select(1, b), level)
                  for c in cs]
            rows.append(_grads(o_leaves, leaves, cb, graph, level))
        out = []
        with _bt.suspended(level):
            for j in range(len(leaves)):
                g = stack([r[j] for r in rows], 1)
                out.append(g.reshape((T,) + tuple(g._data.shape[2:])))
    return [mark(g, cur) for g in out]


def _outer_entries(o_leaves: list, leaves: list, c_leaves: list, grad_on: bool,
                   cur: int) -> list:
    """A ``vjp_fn`` made outside any vmap called inside vmap level ``cur`` with cotangents
    batched there (``vmap(lambda v: vjp_fn(v) ...)``): the gradients of every entry's
    cotangents, batched at ``cur``."""
    cs = [lift(c, cur) for c in c_leaves]
    graph = _common.needs_graph(o_leaves + c_leaves, leaves, grad_on)
    with _bt.suspended(cur):
        out = _batched_rows(o_leaves, leaves, cs, graph)
    return [mark(g, cur) for g in out]


def _check_outputs(leaves: list) -> None:
    for o in leaves:
        if not isinstance(o, Tensor):
            raise RuntimeError("vjp(f, *primals): expected f(*primals) to return only tensors, "
                               f"got unsupported type {type(o)}")
    for o in leaves:
        if not (o.is_floating_point() or o.is_complex()):
            raise RuntimeError("vjp(f, ...): All outputs of f must be floating-point or complex "
                               f"Tensors, got Tensor with dtype {o.dtype}")


def _short(spec: Any) -> str:
    """torch's short pytree notation: ``*`` a leaf, ``(*, *)`` a tuple ..."""
    if spec.is_leaf:
        return "*"
    kids = [_short(c) for c in spec.children]
    if spec.kind is dict:
        return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(spec.ctx, kids)) + "}"
    if spec.kind is list:
        return "[" + ", ".join(kids) + "]"
    return "(" + ", ".join(kids) + ("," if len(kids) == 1 else "") + ")"


# ---------------------------------------------------------------------------- jacrev
def _basis_rows(outputs: list, start: int, stop: int) -> list:
    """Rows ``start:stop`` of the identity over all outputs' elements, split per output:
    chunk ``k`` has shape ``(stop - start, *outputs[k].shape)``."""
    res, offset = [], 0
    n = stop - start
    for o in outputs:
        m = o.numel()
        a = np.zeros((n, m), dtype=o._data.dtype)
        lo, hi = max(start, offset), min(stop, offset + m)
        if lo < hi:
            r = np.arange(lo, hi)
            a[r - start, r - offset] = 1
        res.append(_wrap(a.reshape((n,) + tuple(o.shape))))
        offset += m
    return res


def _batched_rows(outputs: list, inputs: list, seeds: list, create_graph: bool = True) -> list:
    """``autograd.grad`` with batched grad_outputs; row by row when the batch level cannot be
    used (another level is active or a node refuses it)."""
    live = [(o, s) for o, s in zip(outputs, seeds) if o.requires_grad]
    n = seeds[0].shape[0] if seeds else 0
    if not live:
        return [_creation.zeros((n,) + tuple(x.shape), dtype=x.dtype) for x in inputs]
    outs, ss = [p[0] for p in live], [p[1] for p in live]
    res: Any = None
    if _common.vectorizable():
        try:
            res = _autograd_grad(outs, inputs, ss, retain_graph=True, create_graph=create_graph,
                                 allow_unused=True, is_grads_batched=True)
        except RuntimeError:
            # A node that cannot run batched (see _forward._columns_batched): row by row,
            # which raises again if the error is not the batching's.
            res = None
    if res is None:
        rows = [_autograd_grad(outs, inputs, [s[b] for s in ss], retain_graph=True,
                               create_graph=create_graph, allow_unused=True) for b in range(n)]
        res = []
        for j, x in enumerate(inputs):
            col = [r[j] for r in rows]
            res.append(None if all(c is None for c in col) else
                       stack([c if c is not None else _creation.zeros_like(x) for c in col]))
    return [r if r is not None else _creation.zeros((n,) + tuple(x.shape), dtype=x.dtype)
            for r, x in zip(res, inputs)]


def jacrev(func: Callable, argnums: Argnums = 0, *, has_aux: bool = False,
           chunk_size: Optional[int] = None, _preallocate_and_copy: bool = False) -> Callable:
    """The Jacobian of ``func`` with respect to the arguments at ``argnums``, by reverse mode:
    all rows in one batched backward pass (``chunk_size`` rows at a time if given). For output
    ``o`` and input ``x`` the block has shape ``o.shape + x.shape``; the result has the
    output's pytree structure with the inputs' structure at each leaf.

    >>> import ndgrad
    >>> from ndgrad.func import jacrev
    >>> jacrev(lambda x: x ** 2)(ndgrad.tensor([1.0, 2.0]))
    tensor([[2., 0.],
            [0., 4.]])
    """
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = _common.check_argnums(argnums, len(args))
        level = _common.vmap_level()
        outer = is_grad_enabled()
        with enable_grad():
            new_args, leaves, specs, own = _wrap_args(args, nums, level)
            with _common.transform_scope() as tid:
                _common.own_inputs(leaves, tid)
                _common.mark_leaves(leaves, tid)
                out = func(*new_args, **kwargs)
            out, aux = _split_aux(out, has_aux, "jacrev(f, *args)")
            o_leaves, o_spec = tree_flatten(out)
            _check_outputs(o_leaves)
            aux_leaves, aux_spec = tree_flatten(aux) if has_aux else ([], None)
            if has_aux:
                _check_tensors(aux_leaves)
            total = sum(o.numel() for o in o_leaves)
            step = chunk_size or max(total, 1)
            graph = _common.needs_graph(o_leaves, own, outer)
            if level:       # inside vmap: one physical backward per row (Note [Vectorized vmap])
                rows = [_grads(o_leaves, leaves, [b[0] for b in _basis_rows(o_leaves, k, k + 1)],
                               graph, level) for k in range(total)]
                parts = [[stack([r[j] for r in rows]) for j in range(len(leaves))]] \
                    if total else []
            else:
                parts = [_batched_rows(o_leaves, leaves, _basis_rows(
                    o_leaves, s, min(s + step, total)), graph)
                    for s in range(0, total, step)] if total else []
            per_input = []
            for j, x in enumerate(leaves):
                if not parts:
                    full = _creation.zeros((0,) + tuple(x.shape), dtype=x.dtype)
                elif len(parts) == 1:
                    full = parts[0][j]
                else:
                    full = cat([p[j] for p in parts], 0)
                per_input.append(full)
            blocks = []            # blocks[k][j]: output k, input j
            numels = [o.numel() for o in o_leaves]
            splits = [r.split(numels, 0) if numels else () for r in per_input]
            for k, o in enumerate(o_leaves):
                blocks.append([splits[j][k].reshape(tuple(o.shape) + tuple(x.shape))
                               for j, x in enumerate(leaves)])
        flat = [b for row in blocks for b in row]
        res = _common.unwrap(flat + aux_leaves, own, outer)
        nin = len(leaves)
        jac = [_regroup(res[k * nin:(k + 1) * nin], specs, argnums)
               for k in range(len(o_leaves))]
        jac = tree_unflatten(jac, o_spec)
        if has_aux:
            return jac, tree_unflatten(res[len(flat):], aux_spec)
        return jac
    return wrapper
