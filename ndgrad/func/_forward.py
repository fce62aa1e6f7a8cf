"""Forward-mode transforms: ``jvp``, ``linearize``, ``jacfwd`` and ``hessian`` (Note [Transform
levels] in _common.py).

Example:
    >>> import ndgrad
    >>> from ndgrad.func import jvp
    >>> jvp(ndgrad.sin, (ndgrad.tensor(0.0),), (ndgrad.tensor(2.0),))
    (tensor(0.), tensor(2.))
"""

from __future__ import annotations

import functools
import os
from typing import Any, Callable, Optional, Tuple

import numpy as np

from .. import _creation
from ..autograd import batching as _bt
from ..autograd import forward_ad as fwAD
from ..autograd.grad_mode import is_grad_enabled
from ..ops import _batching, stack
from ..tensor import Tensor, _wrap
from . import _common, _rng
from ._pytree import tree_flatten, tree_unflatten
from ._vmap import vmap
from ._reverse import Argnums, _check_tensors, _regroup, _split_aux, jacrev

__all__ = ["jvp", "linearize", "jacfwd", "hessian"]


def _check_outputs(leaves: list, what: str) -> None:
    for o in leaves:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{what}: expected f(*primals) to return only tensors, got "
                               f"unsupported type {type(o)}")


def _zeros_like(p: Tensor) -> Tensor:
    """Zeros of ``p``'s shape; batched like ``p`` inside a vmap level."""
    return _batching.like_call(_creation.zeros_like, p)


def _unpack(t: Tensor, level: int) -> Tuple[Tensor, Optional[Tensor]]:
    p, tg = fwAD.unpack_dual(t, level=level)
    return p, tg


def jvp(func: Callable, primals: Any, tangents: Any, *, strict: bool = False,
        has_aux: bool = False) -> Tuple[Any, ...]:
    """``(func(*primals), J @ tangents)`` by forward-mode AD (and ``aux`` with ``has_aux``).
    ``primals`` is a tuple of arguments (pytrees of tensors), ``tangents`` has its structure;
    outputs that do not depend on the primals get zero tangents (an error with ``strict``).

    >>> import ndgrad
    >>> from ndgrad.func import jvp
    >>> jvp(lambda x: x ** 2, (ndgrad.tensor([1.0, 2.0]),), (ndgrad.ones(2),))[1]
    tensor([2., 4.])
    """
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it "
                           "should be valid to call f(*primals).")
    p_leaves, p_spec = tree_flatten(primals)
    t_leaves, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have "
                           "the same python structure. For example, if primals is a tuple of "
                           "3 tensors, tangents also must be. Got primals with structure "
                           f"{p_spec} and tangents with structure {t_spec}")
    _common.check_leaves(p_leaves)
    _common.check_leaves(t_leaves)
    grad_on = is_grad_enabled()
    with fwAD.dual_level() as level:
        duals = [fwAD.make_dual(*_common.dual_pair(p, t), level=level)
                 for p, t in zip(p_leaves, t_leaves)]
        with _common.transform_scope() as tid:
            _common.own_inputs(duals, tid)
            out = func(*tree_unflatten(duals, p_spec))
        out, aux = _split_aux(out, has_aux, "jvp(f, primals, tangents)")
        o_leaves, o_spec = tree_flatten(out)
        _check_outputs(o_leaves, "jvp(f, primals, tangents)")
        aux_leaves, aux_spec = tree_flatten(aux) if has_aux else ([], None)
        if has_aux:
            _check_tensors(aux_leaves)
        prim, tang = [], []
        for o in o_leaves:
            p, tg = _unpack(o, level)
            if tg is None and strict:
                raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is "
                                   "independent of the inputs. This is not allowed with "
                                   "strict=True.")
            prim.append(p)
            tang.append(tg if tg is not None else _zeros_like(p))
        aux_leaves = [_unpack(a, level)[0] for a in aux_leaves]
    prim = _common.unwrap(prim, [], grad_on)
    tang = _unwrap_tangents(tang, p_leaves, grad_on)
    aux_leaves = _common.unwrap(aux_leaves, [], grad_on)
    res: tuple = (tree_unflatten(prim, o_spec), tree_unflatten(tang, o_spec))
    if has_aux:
        res = res + (tree_unflatten(aux_leaves, aux_spec),)
    return _common.adopt(res)     # an enclosing transform's own tensors (Note [Captured tensors])


def _unwrap_tangents(tangents: list, primals: list, grad_on: bool) -> list:
    """``unwrap`` for output tangents (Note [Transform levels] in _common.py): as in torch,
    they keep their history while an input primal requires grad."""
    if grad_on and any(p.requires_grad for p in primals):
        return _common.reborn(tangents)
    return _common.unwrap(tangents, [], grad_on)


def linearize(func: Callable, *primals: Any) -> Tuple[Any, Callable]:
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is the Jacobian-vector product of
    ``func`` at ``primals`` (each call runs forward mode again).

    >>> import ndgrad
    >>> from ndgrad.func import linearize
    >>> out, jvp_fn = linearize(ndgrad.sin, ndgrad.tensor(0.0))
    >>> jvp_fn(ndgrad.tensor(3.0))
    tensor(3.)
    """
    p_leaves, p_spec = tree_flatten(primals)
    _common.check_leaves(p_leaves)
    out = func(*primals)
    o_leaves, o_spec = tree_flatten(out)
    _check_outputs(o_leaves, "linearize(f, *primals)")
    frozen = tree_unflatten([p.detach() for p in p_leaves], p_spec)

    def jvp_fn(*tangents: Any) -> Any:
        t_leaves, t_spec = tree_flatten(tangents)
        if t_spec != p_spec:
            raise RuntimeError(f"Expected the tangents {t_spec} to have the same argspec as the "
                               f"primals {p_spec}")
        for i, (p, t) in enumerate(zip(p_leaves, t_leaves)):
            if not isinstance(t, Tensor):
                raise RuntimeError(f"Expected tensors, got unsupported type {type(t)}")
            if t.shape != p.shape:
                raise RuntimeError(f"tangent:{i} with shape torch.Size({list(t.shape)}) in "
                                   "flattened pytree doesn't match the shape "
                                   f"torch.Size({list(p.shape)}) of the corresponding primal.")
        return jvp(func, frozen, tangents)[1]

    return _common.adopt(out), jvp_fn


# ---------------------------------------------------------------------------- jacfwd
def _basis(leaves: list) -> list:
    """The identity over all elements of ``leaves``: chunk ``k`` has shape
    ``(total, *leaves[k].shape)``."""
    total = sum(x.numel() for x in leaves)
    out, start = [], 0
    for x in leaves:
        n = x.numel()
        a = np.zeros((total, n), dtype=x._data.dtype)
        a[np.arange(start, start + n), np.arange(n)] = 1
        out.append(_wrap(a.reshape((total,) + tuple(x.shape))))
        start += n
    return out


def _columns_batched(call: Callable, leaves: list, basis: list) -> Optional[tuple]:
    """All columns in one forward pass with batched tangents, or None if a batching rule
    refuses."""
    total = basis[0].shape[0] if basis else 0
    try:
        with _bt.batch_level() as blevel:
            tangents = []
            for t in basis:
                t = t._alias() if hasattr(t, "_alias") else t.detach()
                t._blevel = blevel
                tangents.append(t)
            with fwAD.dual_level() as level:
                duals = [fwAD.make_dual(x, t, level=level) for x, t in zip(leaves, tangents)]
                o_leaves, o_spec, aux = call(duals)
                prim, cols = [], []
                for o in o_leaves:
                    p, tg = _unpack(o, level)
                    prim.append(p)
                    cols.append((tg, tg is not None and tg._blevel == blevel))
                aux = [_unpack(a, level)[0] for a in aux]
    except (RuntimeError, NotImplementedError) as e:
        # A batching rule refused, or a corner of batched tangents the layer does not cover
        # (in-place ops writing a batched tangent into an unbatched one): the columns are
        # computed one at a time instead, which raises again if the error is the function's.
        # An error the function raised itself, or one torch's vmap raises too (``.item()``),
        # is the user's: raised as it is, without running the function again.
        if _users_error(e):
            raise
        return None
    jac_cols = []
    for p, (tg, batched) in zip(prim, cols):
        if tg is None:
            c = _creation.zeros((total,) + tuple(p.shape), dtype=p.dtype)
        elif not batched:
            c = tg.unsqueeze(0).expand((total,) + tuple(p.shape))
        else:
            tg._blevel = 0
            c = tg
        jac_cols.append(c)
    return prim, o_spec, aux, jac_cols


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _users_error(e: BaseException) -> bool:
    """Was ``e`` raised by the function being differentiated (its innermost frame outside
    ndgrad), or is it one of vmap's refusals of the function's own requests?"""
    if getattr(e, "_vmap_user", False):
        return True
    tb = e.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    path = os.path.abspath(tb.tb_frame.f_code.co_filename)
    return not path.startswith(_PACKAGE + os.sep)


def _columns_vmap(call: Callable, leaves: list, basis: list, randomness: str) -> tuple:
    """All columns in one call of the function inside a running vmap: ``jvp`` vmapped over
    the unit tangents at a nested vmap level (Note [Nested vmap levels] in _vmap.py), the
    primals lifted to it."""
    holder: dict = {}

    def column(*tangents: Tensor) -> tuple:
        inner = _bt.current_vmap()
        with fwAD.dual_level() as level:
            # a copy: a tangent takes its primal's layout, which must not be a broadcast
            duals = [fwAD.make_dual(_batching.lift(x, inner).clone(), t, level=level)
                     for x, t in zip(leaves, tangents)]
            o_leaves, holder["spec"], aux = call(duals)
            prim, cols = [], []
            for o in o_leaves:
                p, tg = _unpack(o, level)
                prim.append(p)
                cols.append(tg if tg is not None else _zeros_like(p))
            aux = [_unpack(a, level)[0] for a in aux]
        holder["n"] = len(prim)
        return tuple(prim) + tuple(cols) + tuple(aux)

    out = vmap(column, randomness=randomness)(*basis)
    n = holder["n"]
    return ([p.select(0, 0) for p in out[:n]], holder["spec"],
            [a.select(0, 0) for a in out[2 * n:]], list(out[n:2 * n]))


def _columns_loop(call: Callable, leaves: list, basis: list, randomness: str) -> tuple:
    """One forward pass per column (unit tangent)."""
    total = basis[0].shape[0] if basis else 0
    per_col = []
    prim: Any = None
    o_spec: Any = None
    aux: Any = None
    with _rng.policy(randomness) as rng:
        for k in range(max(total, 1)):
            rng.before(k)
            with fwAD.dual_level() as level:
                if total:
                    duals = [fwAD.make_dual(x, _common.batch_like(x, t[k]), level=level)
                             for x, t in zip(leaves, basis)]
                else:
                    duals = list(leaves)
                o_leaves, o_spec, a = call(duals)
                cols = []
                ps = []
                for o in o_leaves:
                    p, tg = _unpack(o, level)
                    ps.append(p)
                    cols.append(tg if tg is not None else _zeros_like(p))
                if k == 0:
                    prim, aux = ps, [_unpack(x, level)[0] for x in a]
            rng.after(k)
            per_col.append(cols)
    if not total:
        return prim, o_spec, aux, [_creation.zeros((0,) + tuple(p.shape), dtype=p.dtype)
                                   for p in prim]
    return prim, o_spec, aux, [stack([c[i] for c in per_col]) for i in range(len(prim))]


def jacfwd(func: Callable, argnums: Argnums = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable:
    """The Jacobian of ``func`` with respect to the arguments at ``argnums``, by forward mode:
    all columns in one forward pass with a batch of unit tangents (inside a ``vmap``: ``jvp``
    vmapped over them, one call of ``func``; one pass per column when another transform's
    level is active, a batched pass fails, or ``randomness="different"`` asks for fresh draws
    per column outside a vmap). Structure as :func:`jacrev`.

    >>> import ndgrad
    >>> from ndgrad.func import jacfwd
    >>> jacfwd(lambda x: x.sin())(ndgrad.tensor([0.0, 0.0]))
    tensor([[1., 0.],
            [0., 1.]])
    """
    _rng.check_randomness(randomness)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = _common.check_argnums(argnums, len(args))
        args = list(args)  # type: ignore[assignment]  # a mutable copy of the call
        specs: list = []
        leaves: list = []
        for i in nums:
            lv, spec = tree_flatten(args[i])
            _common.check_leaves(lv)
            specs.append((spec, len(lv)))
            leaves.extend(lv)

        holder: dict = {}

        def call(duals: list) -> tuple:
            new_args, pos = list(args), 0
            for i, (spec, n) in zip(nums, specs):
                new_args[i] = tree_unflatten(duals[pos:pos + n], spec)
                pos += n
            with _common.transform_scope() as tid:
                _common.own_inputs(duals, tid)
                out = func(*new_args, **kwargs)
            out, aux = _split_aux(out, has_aux, "jacfwd(f, *args)")
            o_leaves, o_spec = tree_flatten(out)
            _check_outputs(o_leaves, "jvp(f, primals, tangents)")
            aux_leaves, holder["aux_spec"] = tree_flatten(aux) if has_aux else ([], None)
            if has_aux:
                _check_tensors(aux_leaves)
            return o_leaves, o_spec, aux_leaves

        basis = _basis(leaves)
        grad_on = is_grad_enabled()
        res = None
        # "different" draws afresh for every column: one run per column.
        if _common.vectorizable() and randomness != "different":
            with _rng.policy(randomness) as rng:
                rng.before(0)
                res = _columns_batched(call, leaves, basis)
                rng.after(0)
                if res is None:
                    rng.restore()         # the column loop starts from the same state
        if res is None and leaves and basis[0].shape[0] and _bt.VMAP and \
                _bt.current_vmap() and _bt.vmap_nestable():
            res = _columns_vmap(call, leaves, basis, randomness)
        if res is None:
            res = _columns_loop(call, leaves, basis, randomness)
        prim, o_spec, aux, cols = res
        cols = _unwrap_tangents(cols, leaves, grad_on)
        aux = _common.unwrap(aux, [], grad_on)
        numels = [x.numel() for x in leaves]
        jac = []
        for p, c in zip(prim, cols):
            parts = c.split(numels, 0) if numels else ()
            blocks = [part.movedim(0, -1).reshape(tuple(p.shape) + tuple(x.shape))
                      for part, x in zip(parts, leaves)]
            jac.append(_regroup(blocks, specs, argnums))
        jac = tree_unflatten(jac, o_spec)
        if has_aux:
            return jac, tree_unflatten(aux, holder["aux_spec"])
        return jac
    return wrapper


def hessian(func: Callable, argnums: Argnums = 0) -> Callable:
    """The Hessian of the scalar function ``func``: ``jacfwd(jacrev(func, argnums), argnums)``
    (forward-over-reverse).

    >>> import ndgrad
    >>> from ndgrad.func import hessian
    >>> hessian(lambda x: (x ** 3).sum())(ndgrad.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    return jacfwd(jacrev(func, argnums), argnums)
