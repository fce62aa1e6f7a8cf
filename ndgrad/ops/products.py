"""Products beyond ``matmul``: the fused ``addmm`` family, ``einsum``, ``tensordot``, ``kron``,
``cross``, ``inner``/``outer``/``vdot``, ``multi_dot``, ``vecdot``, ``matrix_power``,
``vander`` and ``linalg.diagonal``.

The fused products (``addmm``, ``addmv``, ``addr``, ``addbmm``, ``baddbmm``) compute
``beta * input + alpha * (m1 x m2)`` in one op; their VJPs are matrix products with the
conjugated other operand (PyTorch's complex convention) scaled by ``conj(alpha)``. ``einsum``
is one op whose forward is ``np.einsum`` on a canonical equation (no ellipsis, explicit output);
the gradient of an operand is again an einsum, of the output gradient with the other operands.
Ops PyTorch builds from others (``tensordot``, ``kron``, ``inner``, ``outer``, ``multi_dot``,
``matrix_power``, ``vander``) are composites, so they record PyTorch's nodes.

Example:
    >>> import ndgrad
    >>> a = ndgrad.ones(2, 3, requires_grad=True)
    >>> ndgrad.einsum("ij,kj->ik", a, ndgrad.ones(4, 3)).sum().backward()
    >>> a.grad
    tensor([[4., 4., 4.],
            [4., 4., 4.]])
"""

from __future__ import annotations

import string
from typing import Any, Sequence

import numpy as np

from .. import _dtype
from ..autograd.saved import TensorList
from ..tensor import Tensor, _wrap
from . import linalg as _lin
from ._deprecations import warn_deprecated
from ._dispatch import Op, apply
from ._util import check_tensor, wrap_dim
from . import _autocast

__all__ = ["addmm", "addmv", "addr", "addbmm", "baddbmm", "einsum", "tensordot", "kron",
           "cross", "linalg_cross", "inner", "outer", "ger", "vdot", "chain_matmul",
           "multi_dot", "vecdot", "matrix_power", "vander", "linalg_diagonal"]


def _mH(x: Tensor) -> Tensor:
    return x.transpose(-1, -2).conj()


def _conj_scalar(s: Any) -> Any:
    return s.conjugate() if isinstance(s, complex) else s


def _scale(t: Tensor, s: Any) -> Tensor:
    return t if s == 1 else t * s


def _cpp(a: np.ndarray) -> str:
    return _lin._cpp(_dtype._FROM_NP[a.dtype])


def _check_tensor(x: Any, fn: str, arg: str, pos: int) -> None:
    if not isinstance(x, Tensor):
        check_tensor(x, fn, arg, pos)


_SCALAR_NAMES = {"float64": "Double", "float32": "Float", "float16": "Half",
                 "bfloat16": "BFloat16", "complex64": "ComplexFloat",
                 "complex128": "ComplexDouble", "int64": "Long", "int32": "Int",
                 "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def scalar_name(d: np.dtype) -> str:
    """PyTorch's ScalarType name of a dtype (``Double``, ``Float`` ...)."""
    return _SCALAR_NAMES.get(_dtype._FROM_NP[np.dtype(d)].name, str(d))


# ---------------------------------------------------------------------------- per-row batching
_SCRATCH_NAMES = ("saved", "cache")   # lists an op's forward fills for its backward


def per_row(c: Any, args: tuple) -> Any:
    """Batching rule for any op: the op on each row of the batched inputs, stacked (the
    unbatched inputs are shared by every row; a list the forward fills for the backward,
    ``saved``, is a fresh one per row)."""
    from . import shape as _shape
    from ._batching import _unsupported
    if c.B == 0:
        raise _unsupported(c.op, "an empty batch")
    names = c.op.arg_names
    scratch = [i for i, a in enumerate(args)
               if type(a) is list and i < len(names) and names[i] in _SCRATCH_NAMES]
    rows = []
    for k in range(c.B):
        ts = tuple(_shape.select(t, 0, k) if b else t for t, b in zip(c.ts, c.bd))
        arrs = tuple(t._data if t._data.dtype == a.dtype else t._data.astype(a.dtype)
                     for t, a in zip(ts, c.arrs))
        row_args = args
        if scratch:
            row_args = tuple([] if i in scratch else a for i, a in enumerate(args))
        rows.append(apply(c.op, ts, arrs, row_args))
    if isinstance(rows[0], tuple):
        return tuple(_shape.stack([r[i] for r in rows], 0) for i in range(len(rows[0])))
    return _shape.stack(rows, 0)


# ---------------------------------------------------------------------------- addmm family
# kind: "mm" (2-D x 2-D), "mv" (2-D x 1-D), "r" (outer product of vectors), "bmm" (batched,
# "baddbmm"), "addbmm" (batched, summed over the batch).
def _product_np(kind: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if kind == "r":
        r = np.multiply.outer(a, b)
    else:
        r = _lin._matmul_fwd(a, b)
        if kind == "addbmm":
            r = r.sum(0)
    return r


def _product(kind: str, a: Tensor, b: Tensor) -> Tensor:
    if kind == "r":
        return a.unsqueeze(-1) * b
    r = _lin.matmul(a, b)
    return r.sum(0) if kind == "addbmm" else r


def _addmm_like_fwd(kind: str):
    def fwd(x: np.ndarray, a: np.ndarray, b: np.ndarray, beta: Any, alpha: Any) -> np.ndarray:
        dt = a.dtype
        if dt.itemsize < 4 and dt.kind in "fV":     # float16/bfloat16 accumulate in float32
            if kind == "addbmm":        # one rounded accumulation per batch element
                f = np.float32
                shape = (a.shape[1], b.shape[2])
                acc = np.zeros(shape, dt) if beta == 0 else \
                    np.broadcast_to((x.astype(f) * beta).astype(dt), shape)
                for i in range(a.shape[0]):
                    acc = (acc.astype(f) + alpha * (a[i].astype(f) @ b[i].astype(f))).astype(dt)
                return np.array(acc, dtype=dt)
            x, a, b = x.astype(np.float32), a.astype(np.float32), b.astype(np.float32)
        p = _product_np(kind, a, b)
        if alpha != 1:
            p = p * alpha
        if beta == 0:
            out = np.broadcast_to(p, np.broadcast_shapes(p.shape, x.shape)).copy()
        else:
            out = p + (x if beta == 1 else x * beta)
        return np.asarray(out).astype(dt, copy=False)
    return fwd


def _addmm_like_vjp(kind: str):
    def vjp(ctx, g):
        m1, m2 = ctx.saved[:2]
        beta, alpha = ctx._args
        gi = g1 = g2 = None
        ca = _conj_scalar(alpha)
        if ctx.needs_input_grad(0):
            gi = g * _conj_scalar(beta) if beta != 1 else g
        if ctx.needs_input_grad(1):
            if kind == "r":
                g1 = _lin.mv(g, m2.conj())
            elif kind == "mv":
                g1 = g.unsqueeze(-1) * m2.conj()
            elif kind == "addbmm":
                n = ctx.input_shape(1)[0]
                g1 = _lin.bmm(g.unsqueeze(0).expand(n, -1, -1), _mH(m2))
            else:
                g1 = _lin.matmul(g, _mH(m2))
            g1 = _scale(g1, ca)
        if ctx.needs_input_grad(2):
            if kind == "r":
                g2 = _lin.mv(g.transpose(0, 1), m1.conj())
            elif kind == "mv":
                g2 = _lin.mv(_mH(m1), g)
            elif kind == "addbmm":
                n = ctx.input_shape(2)[0]
                g2 = _lin.bmm(_mH(m1), g.unsqueeze(0).expand(n, -1, -1))
            else:
                g2 = _lin.matmul(_mH(m1), g)
            g2 = _scale(g2, ca)
        return gi, g1, g2
    return vjp


def _addmm_like_jvp(kind: str):
    def jvp(ctx, ti, t1, t2):
        _, m1, m2 = ctx.inputs
        beta, alpha = ctx._args
        out = None
        if t1 is not None:
            out = _product(kind, t1, m2)
        if t2 is not None:
            p = _product(kind, m1, t2)
            out = p if out is None else out + p
        if out is not None:
            out = _scale(out, alpha)
        if ti is not None and beta != 0:
            s = _scale(ti, beta)
            out = s if out is None else out + s
        if out is None:
            return _wrap(np.zeros_like(ctx.result._data))
        return out
    return jvp


def _addmm_op(name: str, node: str, kind: str, m1: str, m2: str) -> Op:
    return Op(name, node, _addmm_like_fwd(kind), _addmm_like_vjp(kind),
              inputs=("self", m1, m2), args=("beta", "alpha"),
              saves=(m1, m2, "alpha", "beta"), save_if=((2,), (1,), None, None),
              jvp=_addmm_like_jvp(kind))


ADDMM = _addmm_op("addmm", "AddmmBackward0", "mm", "mat1", "mat2")
ADDMV = _addmm_op("addmv", "AddmvBackward0", "mv", "mat", "vec")
ADDR = _addmm_op("addr", "AddrBackward0", "r", "vec1", "vec2")
BADDBMM = _addmm_op("baddbmm", "BaddbmmBackward0", "bmm", "batch1", "batch2")
ADDBMM = _addmm_op("addbmm", "AddbmmBackward0", "addbmm", "batch1", "batch2")


def _check_scalars(name: str, a: np.ndarray, beta: Any, alpha: Any) -> tuple:
    """``beta`` and ``alpha`` as the fused products take them (PyTorch's rules): a complex
    number for a real input keeps its real part when its imaginary part is 0 and is refused
    otherwise (in the op's math type: float for half precision); ``addr`` refuses floating
    numbers for integer results and bool numbers for non-bool results."""
    kind = a.dtype.kind
    if name == "addr":
        for v, n in ((beta, "beta"), (alpha, "alpha")):
            if kind == "b":
                if isinstance(v, (float, complex, np.floating, np.complexfloating)):
                    raise RuntimeError(f"For integral input tensors, argument {n} must not be a "
                                       "floating point number.")
            elif isinstance(v, (bool, np.bool_)):
                raise RuntimeError(f"Boolean {n} only supported for Boolean results.")
            elif kind in "iu" and isinstance(v, (float, complex, np.floating,
                                                  np.complexfloating)):
                raise RuntimeError(f"For integral input tensors, argument {n} must not be a "
                                   "floating point number.")
    if kind != "c":
        out = []
        for v in (beta, alpha):
            if isinstance(v, (complex, np.complexfloating)):
                if v.imag != 0:
                    math = _dtype.float32 if a.dtype.itemsize == 2 and kind == "f" else \
                        _dtype._FROM_NP[a.dtype]
                    raise _dtype.overflow_error(math)
                v = v.real
            out.append(v)
        beta, alpha = out
    return beta, alpha


def _check_dtypes(name: str, x: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """PyTorch's dtype checks of the fused products, in its order and words."""
    if x.dtype == a.dtype == b.dtype:
        return
    T = [_dtype._FROM_NP[t.dtype]._torch_name for t in (x, a, b)]
    if name == "addmv":
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {T[0]}, "
                           f"{T[1]}, and {T[2]}")
    if name == "baddbmm":
        if x.dtype != a.dtype:
            raise RuntimeError(f"Input dtypes must be the same, got: input {_cpp(x)}, batch1: "
                               f"{_cpp(a)}, batch2: {_cpp(b)}")
        raise RuntimeError(f"expected scalar type {T[1]} but found {T[2]}")
    if x.dtype != b.dtype:                       # addmm, addbmm
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {T[0]} and {T[2]}")
    raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {T[1]} and {T[2]}")


def _scalar(s: Any) -> Any:
    if isinstance(s, Tensor):
        s = s.item()
    if isinstance(s, np.generic):
        s = s.item()
    return s


def _expand_check(x: np.ndarray, shape: tuple) -> None:
    try:
        if np.broadcast_shapes(x.shape, shape) == tuple(shape):
            return
    except ValueError:
        pass
    xs = x.shape
    for i in range(1, len(xs) + 1):
        if i > len(shape):
            break
        if xs[-i] != shape[-i] and xs[-i] != 1:
            raise RuntimeError(f"The expanded size of the tensor ({shape[-i]}) must match the "
                               f"existing size ({xs[-i]}) at non-singleton dimension "
                               f"{len(shape) - i}.  Target sizes: {list(shape)}.  Tensor sizes: "
                               f"{list(xs)}")
    raise RuntimeError(f"The expand of the tensor with sizes {list(xs)} to {list(shape)} is "
                       "not possible: the number of sizes provided must be greater or equal "
                       "to the number of dimensions in the tensor")


def _fused(op: Op, name: str, input: Tensor, m1: Tensor, m2: Tensor, beta: Any, alpha: Any,
           out_shape: tuple) -> Tensor:
    beta, alpha = _scalar(beta), _scalar(alpha)
    x, a, b = input._data, m1._data, m2._data
    _check_dtypes(name, x, a, b)
    beta, alpha = _check_scalars(name, a, beta, alpha)
    if a.dtype.kind in "iu":      # PyTorch casts the scalars to the integer type
        beta, alpha = int(beta.real if isinstance(beta, complex) else beta), \
            int(alpha.real if isinstance(alpha, complex) else alpha)
    _expand_check(x, out_shape)
    return apply(op, (input, m1, m2), (x, a, b), (beta, alpha))


def _bcall(fn, *args, **kwargs):
    from ._batching import call, marked
    if marked(args) or marked(tuple(kwargs.values())):
        return call(fn, *args, **kwargs)
    return NotImplemented


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` for matrices ``mat1``, ``mat2`` (``input``
    broadcast to the product's shape; with ``beta == 0`` it is ignored, NaN included).

    >>> import ndgrad
    >>> ndgrad.addmm(ndgrad.ones(2, 2), ndgrad.ones(2, 3), ndgrad.ones(3, 2), beta=2).tolist()
    [[5.0, 5.0], [5.0, 5.0]]
    """
    if _autocast.active:  # Note [Autocast]
        input, mat1, mat2 = _autocast.lower(input, mat1, mat2)
    r = _bcall(addmm, input, mat1, mat2, beta=beta, alpha=alpha)
    if r is not NotImplemented:
        return r
    a, b = mat1._data, mat2._data
    if a.ndim != 2:
        raise RuntimeError(f"mat1 must be a matrix, got {a.ndim}-D tensor")
    if b.ndim != 2:
        raise RuntimeError(f"mat2 must be a matrix, got {b.ndim}-D tensor")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]}"
                           f" and {b.shape[0]}x{b.shape[1]})")
    return _fused(ADDMM, "addmm", input, mat1, mat2, beta, alpha, (a.shape[0], b.shape[1]))


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``.

    >>> import ndgrad
    >>> ndgrad.addmv(ndgrad.ones(2), ndgrad.ones(2, 3), ndgrad.ones(3)).tolist()
    [4.0, 4.0]
    """
    r = _bcall(addmv, input, mat, vec, beta=beta, alpha=alpha)
    if r is not NotImplemented:
        return r
    a, b = mat._data, vec._data
    if a.ndim != 2 or b.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input._data.ndim}, "
                           f"{a.ndim}, {b.ndim}")
    if a.shape[1] != b.shape[0] or (input._data.ndim == 1 and input._data.shape[0] not in
                                    (1, a.shape[0])):
        raise RuntimeError(f"size mismatch, got input ({input._data.shape[0] if input.ndim else 1})"
                           f", mat ({a.shape[0]}x{a.shape[1]}), vec ({b.shape[0]})")
    return _fused(ADDMV, "addmv", input, mat, vec, beta, alpha, (a.shape[0],))


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``.

    >>> import ndgrad
    >>> ndgrad.addr(ndgrad.zeros(2, 2), ndgrad.ones(2), ndgrad.ones(2)).tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    r = _bcall(addr, input, vec1, vec2, beta=beta, alpha=alpha)
    if r is not NotImplemented:
        return r
    a, b = vec1._data, vec2._data
    if a.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {a.ndim}-D")
    if b.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec2, but got {b.ndim}-D")
    rt = _dtype.result_type(input, vec1, vec2)   # addr promotes (the other fused ops refuse)
    input, vec1, vec2 = (t if t._data.dtype == rt.np else t.to(rt) for t in (input, vec1, vec2))
    if rt.np.kind == "b":                          # logical: (beta and input) or (alpha and outer)
        beta, alpha = _check_scalars("addr", vec1._data, _scalar(beta), _scalar(alpha))
        shape = (a.shape[0], b.shape[0])
        _expand_check(input._data, shape)
        r = np.logical_and.outer(vec1._data, vec2._data) if alpha else np.zeros(shape, bool)
        if beta:
            r = r | input._data
        return _wrap(np.ascontiguousarray(np.broadcast_to(r, shape)))
    return _fused(ADDR, "addr", input, vec1, vec2, beta, alpha, (a.shape[0], b.shape[0]))


def _check_batches(a: np.ndarray, b: np.ndarray) -> None:
    if a.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got "
                           f"{a.shape[0]} and {b.shape[0]}")
    if a.shape[2] != b.shape[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({a.shape[1]}x{a.shape[2]} and "
                           f"{b.shape[1]}x{b.shape[2]})")


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1,
            alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * bmm(batch1, batch2)``."""
    if _autocast.active:  # Note [Autocast]
        input, batch1, batch2 = _autocast.lower(input, batch1, batch2)
    r = _bcall(baddbmm, input, batch1, batch2, beta=beta, alpha=alpha)
    if r is not NotImplemented:
        return r
    a, b = batch1._data, batch2._data
    _check_batches(a, b)
    return _fused(BADDBMM, "baddbmm", input, batch1, batch2, beta, alpha,
                  (a.shape[0], a.shape[1], b.shape[2]))


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1,
           alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``."""
    if _autocast.active:  # Note [Autocast]
        input, batch1, batch2 = _autocast.lower(input, batch1, batch2)
    r = _bcall(addbmm, input, batch1, batch2, beta=beta, alpha=alpha)
    if r is not NotImplemented:
        return r
    a, b = batch1._data, batch2._data
    _check_batches(a, b)
    return _fused(ADDBMM, "addbmm", input, batch1, batch2, beta, alpha, (a.shape[1], b.shape[2]))


# ---------------------------------------------------------------------------- einsum
_LETTERS = string.ascii_uppercase + string.ascii_lowercase


def _einsum_fwd(*arrays_and_args: Any) -> np.ndarray:
    *arrays, eq, _ops = arrays_and_args
    dt = arrays[0].dtype
    low = dt.itemsize < 4 and dt.kind in "fV"
    ins = [a.astype(np.float32) if low else a for a in arrays]
    r = np.einsum(eq, *ins, optimize=len(arrays) > 2)
    return np.asarray(r).astype(dt, copy=False)


def _split_eq(eq: str) -> tuple:
    lhs, out = eq.split("->")
    return lhs.split(","), out


def _einsum_grad(eq: str, ops: Sequence[Tensor], k: int, g: Tensor, shape: tuple) -> Tensor:
    """The gradient of operand ``k`` of the einsum ``eq`` for output gradient ``g``."""
    subs, out = _split_eq(eq)
    target = subs[k]
    terms = [out] + [s for j, s in enumerate(subs) if j != k]
    tensors = [g] + [o.conj() for j, o in enumerate(ops) if j != k]
    used = set("".join(terms))
    free = [c for c in _LETTERS if c not in set(eq)]
    res = []
    seen: dict = {}
    dt = g._data.dtype
    for pos, c in enumerate(target):
        n = shape[pos]
        if c in seen:                       # a repeated label: its diagonal
            f = free.pop()
            terms.append(c + f)
            tensors.append(_wrap(np.eye(n, dtype=dt)))
            res.append(f)
            continue
        seen[c] = n
        if c not in used:                   # summed within this operand only
            terms.append(c)
            tensors.append(_wrap(np.ones(n, dtype=dt)))
            used.add(c)
        res.append(c)
    return _einsum_raw(",".join(terms) + "->" + "".join(res), tensors)


def _einsum_vjp(ctx, g):
    eq = ctx._args[0]
    ops = ctx.saved[0]
    return tuple(_einsum_grad(eq, ops, k, g, ctx.input_shape(k))
                 if ctx.needs_input_grad(k) else None for k in range(len(ops)))


def _einsum_jvp(ctx, *tangents):
    eq = ctx._args[0]
    ops = ctx.inputs
    out = None
    for k, t in enumerate(tangents):
        if t is None:
            continue
        r = _einsum_raw(eq, [t if j == k else o for j, o in enumerate(ops)])
        out = r if out is None else out + r
    return out


EINSUM = Op("einsum", "EinsumBackward0", _einsum_fwd, _einsum_vjp, inputs=(),
            args=("equation", "operands"), saves=("operands",), jvp=_einsum_jvp)


def _einsum_raw(eq: str, tensors: Sequence[Tensor]) -> Tensor:
    ts = tuple(tensors)
    dt = ts[0]._data.dtype
    for t in ts[1:]:
        dt = np.promote_types(dt, t._data.dtype)
    ts = tuple(t if t._data.dtype == dt else t.to(_dtype._FROM_NP[dt]) for t in ts)
    return apply(EINSUM, ts, tuple(t._data for t in ts), (eq, TensorList(ts)))


def _einsum_batch_rule(c: Any, args: tuple) -> Any:
    eq = args[0]
    subs, out = _split_eq(eq)
    f = [x for x in _LETTERS if x not in set(eq)][-1]
    subs = [f + s if b else s for s, b in zip(subs, c.bd)]
    neq = ",".join(subs) + "->" + f + out
    return apply(EINSUM, tuple(c.ts), tuple(c.arrs), (neq, TensorList(c.ts)))


def _sublist_to_str(sub: Any) -> str:
    s = ""
    for v in sub:
        if v is Ellipsis:
            s += "..."
        elif isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            if not 0 <= v < 52:
                raise RuntimeError("einsum(): subscript in subscript list is not within the "
                                   f"valid range [0, 52), got {v}")
            s += _LETTERS[26 + v] if v < 26 else _LETTERS[v - 26]
        else:
            raise TypeError("einsum(): expected subscripts to be integers or Ellipsis")
    return s


def _canonical(eq: str, shapes: list) -> str:
    """``eq`` with ellipses replaced by letters and the output made explicit (PyTorch's
    implicit output: the ellipsis dims, then the labels used once, in alphabetical order)."""
    eq = eq.replace(" ", "")
    if "->" in eq:
        lhs, out = eq.split("->", 1)
        explicit = True
    else:
        lhs, out, explicit = eq, "", False
    subs = lhs.split(",")
    if len(subs) > len(shapes):
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                           "equation")
    if len(subs) < len(shapes):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the "
                           "equation")
    for i, ch in enumerate(eq):
        if ch not in _LETTERS and ch not in ".,->":
            raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation "
                               f"string, subscripts must be in [a-zA-Z]")
    used = set(eq)
    free = [c for c in _LETTERS if c not in used]
    ell_rank = 0
    parsed = []
    for k, (s, shp) in enumerate(zip(subs, shapes)):
        if s.count("...") > 1 or (s.replace("...", "").count(".")):
            raise RuntimeError("einsum(): found '.' for operand " + str(k) + " that is not part "
                               "of any ellipsis")
        if "..." in s:
            n_ell = len(shp) - (len(s) - 3)
            if n_ell < 0:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation "
                                   f"({len(s) - 3}) is more than the number of dimensions "
                                   f"({len(shp)}) for operand {k}")
            ell_rank = max(ell_rank, n_ell)
        elif len(s) != len(shp):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(s)}) "
                               f"does not match the number of dimensions ({len(shp)}) for "
                               f"operand {k} and no ellipsis was given")
        parsed.append(s)
    ell = "".join(free[:ell_rank])
    new_subs = []
    for s, shp in zip(parsed, shapes):
        if "..." in s:
            n_ell = len(shp) - (len(s) - 3)
            s = s.replace("...", ell[ell_rank - n_ell:])
        new_subs.append(s)
    if explicit:
        if out.count("...") > 1:
            raise RuntimeError("einsum(): found '.' for output that is not part of any ellipsis")
        out = out.replace("...", ell)
        for c in out:
            if out.count(c) > 1:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in "
                                   "the output")
            if c not in "".join(new_subs):
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the "
                                   "equation for any input operand")
    else:
        joined = "".join(parsed).replace("...", "")
        out = ell + "".join(sorted(c for c in set(joined) if joined.count(c) == 1))
    # sizes must agree (or be 1: broadcast)
    sizes: dict = {}
    for k, (s, shp) in enumerate(zip(new_subs, shapes)):
        for j, (c, n) in enumerate(zip(s, shp)):
            m = sizes.get(c)
            if m is None or m == 1:
                sizes[c] = n
            elif n != 1 and n != m:
                if c in ell:            # PyTorch's words, its missing space included
                    raise RuntimeError(f"einsum(): dimension {j} covered by ellipsis in operand "
                                       f"{k}has size {n} which does not broadcast with "
                                       f"previously seen ellipsis with size {m} for the "
                                       "respective dimension")
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {k} which "
                                   f"does not broadcast with previously seen size {m}")
    return ",".join(new_subs) + "->" + out


def einsum(*args: Any) -> Tensor:
    """Einstein summation (``torch.einsum``): ``einsum("ij,jk->ik", a, b)``, the operands as a
    list (``einsum("ij,jk", [a, b])``) or the sublist form (``einsum(a, [0, 1], b, [1, 2])``).

    >>> import ndgrad
    >>> ndgrad.einsum("ii", ndgrad.eye(3)).item()
    3.0
    """
    if not args:
        raise TypeError("einsum(): must specify the equation string and at least one operand, "
                        "or at least one operand and its subscripts list")
    if isinstance(args[0], str):
        eq = args[0]
        ops: Any = args[1:]
        if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
            ops = tuple(ops[0])
    else:
        ops, subs = list(args[0::2]), list(args[1::2])
        out = None
        if len(ops) > len(subs):
            out = ops.pop()
            if isinstance(out, Tensor):
                raise TypeError("einsum(): sublist format requires a subscript list after each "
                                "operand")
        eq = ",".join(_sublist_to_str(s) for s in subs)
        if out is not None:
            eq += "->" + _sublist_to_str(out)
    for i, o in enumerate(ops):
        if not isinstance(o, Tensor):
            raise TypeError(f"einsum(): argument 'tensors' must be tuple of Tensors, but found "
                            f"element of type {type(o).__name__} at pos {i}")
    if not ops:
        raise RuntimeError("einsum(): must provide at least one operand")
    from ._batching import call, marked
    if marked(tuple(ops)):
        r = call(lambda *o: einsum(eq, *o), *ops)
        if r is not NotImplemented:
            return r
    canon = _canonical(eq, [o._data.shape for o in ops])
    if _autocast.active and _contracts(canon):  # Note [Autocast]: PyTorch contracts with bmm
        ops = _autocast.lower(*ops)
    d0 = ops[0]._data.dtype
    for o in ops[1:]:
        if o._data.dtype != d0:
            raise RuntimeError(f"expected scalar type {scalar_name(d0)} but found "
                               f"{scalar_name(o._data.dtype)}")
    return apply(EINSUM, tuple(ops), tuple(o._data for o in ops), (canon, TensorList(ops)))


def _contracts(canon: str) -> bool:
    """Whether an einsum sums a label shared by two operands (PyTorch then runs bmm, which
    autocast casts; without one it multiplies, which it does not)."""
    ins, out = canon.split("->")
    terms = ins.split(",")
    return any(c not in out and sum(c in t for t in terms) > 1 for c in set(ins) - {","})


# ---------------------------------------------------------------------------- tensordot & co
def tensordot(a: Tensor, b: Tensor, dims: Any = 2, out: Any = None) -> Tensor:
    """Contraction of ``a``'s ``dims[0]`` with ``b``'s ``dims[1]`` (or of the last ``dims``
    dims of ``a`` with the first ``dims`` of ``b``).

    >>> import ndgrad
    >>> ndgrad.tensordot(ndgrad.ones(2, 3), ndgrad.ones(3, 4), 1).shape
    ndgrad.Size([2, 4])
    """
    _check_tensor(a, "tensordot", "a", 1)
    _check_tensor(b, "tensordot", "b", 2)
    if a._data.dtype != b._data.dtype:
        raise RuntimeError("both inputs should have same dtype")
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    na, nb = a._data.ndim, b._data.ndim
    if isinstance(dims, (int, np.integer)):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > na or dims > nb:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da, db = list(range(na - dims, na)), list(range(dims))
    else:
        if len(dims) != 2:
            raise RuntimeError("tensordot expects dims to be a pair of lists of dims")
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    da = [wrap_dim(d, na) for d in da]
    db = [wrap_dim(d, nb) for d in db]
    sa, sb = a._data.shape, b._data.shape
    for x, y in zip(da, db):
        if sa[x] != sb[y] and sa[x] != 1 and sb[y] != 1:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {sa[x]}"
                               f" in dim {x} and second has size {sb[y]} in dim {y}")
    # size-1 contracted dims broadcast: sum the other operand over them first
    for x, y in zip(da, db):
        if sa[x] != sb[y]:
            if sa[x] == 1:
                b = b.sum(y, keepdim=True)
            else:
                a = a.sum(x, keepdim=True)
    free_a = [d for d in range(na) if d not in da]
    free_b = [d for d in range(nb) if d not in db]
    sa, sb = a._data.shape, b._data.shape
    m = int(np.prod([sa[d] for d in free_a]))
    k = int(np.prod([sa[d] for d in da]))
    n = int(np.prod([sb[d] for d in free_b]))
    t1 = a.permute(*(free_a + da)).reshape(m, k)
    t2 = b.permute(*(db + free_b)).reshape(k, n)
    r = _lin.mm(t1, t2)
    return r.reshape(tuple([sa[d] for d in free_a] + [sb[d] for d in free_b]))


def kron(input: Tensor, other: Tensor) -> Tensor:
    """Kronecker product.

    >>> import ndgrad
    >>> ndgrad.kron(ndgrad.eye(2), ndgrad.ones(1, 2)).tolist()
    [[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]]
    """
    _check_tensor(input, "kron", "input", 1)
    _check_tensor(other, "kron", "other", 2)
    n = max(input.ndim, other.ndim)
    a = input.reshape((1,) * (n - input.ndim) + tuple(input.shape))
    b = other.reshape((1,) * (n - other.ndim) + tuple(other.shape))
    sa, sb = a.shape, b.shape
    ai = a.reshape(*[v for s in sa for v in (s, 1)])
    bi = b.reshape(*[v for s in sb for v in (1, s)])
    r = ai * bi
    return _lin._unsafe_view(r, tuple(x * y for x, y in zip(sa, sb)))


def _cross_fwd(a: np.ndarray, b: np.ndarray, dim: int) -> np.ndarray:
    a, b = np.broadcast_arrays(a, b)
    a0, a1, a2 = (np.take(a, i, axis=dim) for i in range(3))
    b0, b1, b2 = (np.take(b, i, axis=dim) for i in range(3))
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=dim)


def _cross_vjp(ctx, g):
    b, a = ctx.saved
    dim = ctx._args[0]
    ga = _cross_raw(b.conj(), g, dim) if ctx.needs_input_grad(0) else None
    gb = _cross_raw(g, a.conj(), dim) if ctx.needs_input_grad(1) else None
    return ga, gb


def _cross_raw(a: Tensor, b: Tensor, dim: int) -> Tensor:
    n = max(a.ndim, b.ndim)
    d = dim - n if dim >= 0 else dim      # negative: stable under broadcasting
    dt = np.promote_types(a._data.dtype, b._data.dtype)
    if a._data.dtype != dt:
        a = a.to(_dtype._FROM_NP[dt])
    if b._data.dtype != dt:
        b = b.to(_dtype._FROM_NP[dt])
    return apply(LINALG_CROSS, (a, b), (a._data, b._data), (d,))


def _cross_jvp(ctx, ta, tb):
    a, b = ctx.inputs
    d = ctx._args[0]
    out = _cross_raw(ta, b, d) if ta is not None else None
    if tb is not None:
        r = _cross_raw(a, tb, d)
        out = r if out is None else out + r
    return out


LINALG_CROSS = Op("linalg_cross", "LinalgCrossBackward0", _cross_fwd, _cross_vjp,
                  inputs=("self", "other"), args=("dim",), saves=("other", "self"),
                  save_if=((0,), (1,)), jvp=_cross_jvp)


def _cross_batch(c: Any, args: tuple) -> Any:
    d = args[0]
    rank = max(len(s) for s in c.ls)
    ts = []
    from . import shape as _shape
    for t, b, s in zip(c.ts, c.bd, c.ls):
        if b and len(s) < rank:
            t = _shape.reshape(t, (c.B,) + (1,) * (rank - len(s)) + tuple(s))
        ts.append(t)
    arrs = tuple(t._data.astype(a.dtype, copy=False) for t, a in zip(ts, c.arrs))
    return apply(c.op, tuple(ts), arrs, (d,))


def linalg_cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """Cross product of 3-vectors along ``dim`` (inputs broadcast)."""
    r = _bcall(linalg_cross, input, other, dim=dim)
    if r is not NotImplemented:
        return r
    _check_tensor(input, "linalg_cross", "input", 1)
    _check_tensor(other, "linalg_cross", "other", 2)
    a, b = input._data, other._data
    if a.ndim != b.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected scalar type {scalar_name(a.dtype)} but found "
                           f"{scalar_name(b.dtype)}")
    n = a.ndim
    d = wrap_dim(dim, n)
    if a.shape[d] != 3 or b.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{a.shape[d]} and {b.shape[d]}")
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        from ._util import broadcast_error
        raise broadcast_error(a.shape, b.shape) from None
    return apply(LINALG_CROSS, (input, other), (a, b), (d - n,))


def cross(input: Tensor, other: Tensor, dim: Any = None) -> Tensor:
    """``torch.cross``: like ``linalg.cross``; without ``dim``, the first dim of size 3."""
    _check_tensor(input, "cross", "input", 1)
    _check_tensor(other, "cross", "other", 2)
    if dim is None:
        from .._warn import warn_user_once
        warn_user_once("Using torch.cross without specifying the dim arg is deprecated.\n"
                       "Please either pass the dim explicitly or simply use torch.linalg.cross."
                       "\nThe default value of dim will change to agree with that of "
                       "linalg.cross in a future release.")
        a, b = input._data, other._data
        if a.ndim != b.ndim:
            raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
        try:
            shp = np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            from ._util import broadcast_error
            raise broadcast_error(a.shape, b.shape) from None
        dim = next((i for i, s in enumerate(shp) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return linalg_cross(input, other, dim=dim)


def inner(input: Tensor, other: Tensor) -> Tensor:
    """Inner product over the last dims (a product when one operand is 0-d)."""
    _check_tensor(input, "inner", "input", 1)
    _check_tensor(other, "inner", "other", 2)
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    sa, sb = input._data.shape[-1], other._data.shape[-1]
    if sa != sb:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, ([-1], [-1]))


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """Outer product of two vectors."""
    _check_tensor(input, "outer", "input", 1)
    _check_tensor(vec2, "outer", "vec2", 2)
    if input.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {input.ndim}-D" if
                           input.ndim != 1 else
                           f"outer: Expected 1-D argument vec2, but got {vec2.ndim}-D")
    return input.reshape(-1, 1) * vec2


ger = outer


def _vdot_fwd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    r = np.vdot(a, b)
    return np.asarray(r).astype(a.dtype, copy=False)


def _vdot_vjp(ctx, g):
    b, a = ctx.saved
    ga = g.conj() * b if ctx.needs_input_grad(0) else None
    gb = g * a if ctx.needs_input_grad(1) else None
    return ga, gb


def _vdot_jvp(ctx, ta, tb):
    a, b = ctx.inputs
    out = _vdot_raw(ta, b) if ta is not None else None
    if tb is not None:
        r = _vdot_raw(a, tb)
        out = r if out is None else out + r
    return out


def _vdot_raw(a: Tensor, b: Tensor) -> Tensor:
    return apply(VDOT, (a, b), (a._data, b._data))


VDOT = Op("vdot", "VdotBackward0", _vdot_fwd, _vdot_vjp, inputs=("self", "other"),
          saves=("other", "self"), save_if=((0,), (1,)), jvp=_vdot_jvp)


def _vdot_batch(c: Any, args: tuple) -> Any:
    from ._batching import _batch_expand
    a, b = (t if bd else _batch_expand(t, c.B) for t, bd in zip(c.ts, c.bd))
    return (a.conj() * b).sum(-1)


def vdot(input: Tensor, other: Tensor) -> Tensor:
    """``sum(conj(input) * other)`` for 1-D tensors.

    >>> import ndgrad
    >>> ndgrad.vdot(ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([3.0, 4.0])).item()
    11.0
    """
    r = _bcall(vdot, input, other)
    if r is not NotImplemented:
        return r
    _check_tensor(input, "vdot", "input", 1)
    _check_tensor(other, "vdot", "other", 2)
    a, b = input._data, other._data
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.dtype != b.dtype:
        raise RuntimeError(f"vdot : expected both vectors to have same dtype, but found "
                           f"{scalar_name(a.dtype)} and {scalar_name(b.dtype)}")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
                           f"[{b.shape[0]}] to have the same number of elements, but got "
                           f"{a.shape[0]} and {b.shape[0]} elements respectively")
    return apply(VDOT, (input, other), (a, b))


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """``sum(conj(x) * y, dim)`` with broadcasting (``linalg.vecdot``)."""
    if _autocast.active:  # Note [Autocast]
        x, y = _autocast.lower(x, y)
    _check_tensor(x, "linalg_vecdot", "x", 1)
    _check_tensor(y, "linalg_vecdot", "y", 2)
    if x._data.dtype != y._data.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found "
                           f"x of type {scalar_name(x._data.dtype)} and y of type "
                           f"{scalar_name(y._data.dtype)} instead")
    if x._data.dtype.kind not in "fcV":
        raise RuntimeError("linalg.vecdot: Expected a floating point or complex tensor as input. "
                           f"Got {scalar_name(x._data.dtype)}")
    if x.ndim == 1 and y.ndim == 1 and wrap_dim(dim, 1) == 0:
        return vdot(x, y)
    return (x.conj() * y).sum(dim)


def multi_dot(tensors: Sequence[Tensor], *, out: Any = None) -> Tensor:
    """Product of a chain of matrices (the first and last may be vectors), multiplied in the
    cheapest order."""
    ts = list(tensors)
    n = len(ts)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    for t in ts:
        _check_tensor(t, "linalg_multi_dot", "tensors", 1)
    first_1d, last_1d = ts[0].ndim == 1, ts[-1].ndim == 1
    if ts[0].ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got "
                           f"{ts[0].ndim}D")
    if ts[-1].ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got "
                           f"{ts[-1].ndim}D")
    for i in range(1, n - 1):
        if ts[i].ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {ts[i].ndim}D")
    d0 = ts[0]._data.dtype
    for i, t in enumerate(ts):
        if t._data.dtype != d0:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor "
                               f"0 is {_cpp(ts[0]._data)} and tensor {i} {_cpp(t._data)}")
    out_shape = []
    if first_1d:
        ts[0] = ts[0].unsqueeze(0)
    if last_1d:
        ts[-1] = ts[-1].unsqueeze(-1)
    for i in range(n - 1):
        if ts[i].shape[1] != ts[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes "
                               f"{list(ts[i].shape)} and {list(ts[i + 1].shape)} cannot be "
                               "multiplied")
    if not first_1d:
        out_shape.append(ts[0].shape[0])
    if not last_1d:
        out_shape.append(ts[-1].shape[1])
    if n == 2:
        r = _lin.mm(ts[0], ts[1])
    elif n == 3:
        a, b = ts[0].shape
        c, d = ts[2].shape
        cost_1 = (a * c) * (b + d)
        cost_2 = (b * d) * (a + c)
        r = _lin.mm(_lin.mm(ts[0], ts[1]), ts[2]) if cost_1 < cost_2 else \
            _lin.mm(ts[0], _lin.mm(ts[1], ts[2]))
    else:
        p = [ts[0].shape[0]] + [t.shape[1] for t in ts]
        cost: list = [[0] * n for _ in range(n)]
        split = [[0] * n for _ in range(n)]
        for length in range(1, n):
            for i in range(n - length):
                j = i + length
                cost[i][j] = None
                for k in range(i, j):
                    q = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                    if cost[i][j] is None or q < cost[i][j]:
                        cost[i][j] = q
                        split[i][j] = k

        def chain(i: int, j: int) -> Tensor:
            if i == j:
                return ts[i]
            k = split[i][j]
            return _lin.mm(chain(i, k), chain(k + 1, j))
        r = chain(0, n - 1)
    return r.view(*out_shape)       # PyTorch views the product to the result's shape


def chain_matmul(*matrices: Tensor, out: Any = None) -> Tensor:
    """``multi_dot`` of 2-D tensors (deprecated in PyTorch)."""
    warn_deprecated("chain_matmul")
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if len(matrices) == 0:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {m.ndim}, expected 2 instead.")
    if len(matrices) == 1:
        return matrices[0].clone()
    return multi_dot(matrices)


def _square_check(A: Tensor, fn: str) -> None:
    if A.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{fn}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")


def matrix_power(A: Tensor, n: int) -> Tensor:
    """``A`` to the integer power ``n`` (negative: of its inverse), by repeated squaring."""
    _check_tensor(A, "linalg_matrix_power", "input", 1)
    _square_check(A, "linalg.matrix_power")
    if n == 0:
        from .._creation import eye
        e = eye(A.shape[-1], dtype=A.dtype)
        return A.clone().copy_(e.expand(*A.shape))
    if n < 0:
        from .linalg_solve import linalg_inv
        A = linalg_inv(A)
        n = -n
    elif n == 1:
        return A.clone()
    if n == 1:
        return A
    if n == 2:
        return _lin.matmul(A, A)
    if n == 3:
        return _lin.matmul(_lin.matmul(A, A), A)
    result = None
    z = A
    while n:
        if n & 1:
            result = z if result is None else _lin.matmul(result, z)
        n >>= 1
        if n:
            z = _lin.matmul(z, z)
    assert result is not None            # n > 3 has a set bit
    return result


def vander(x: Tensor, N: Any = None) -> Tensor:
    """Vandermonde matrix ``[x^0, x^1, ..., x^(N-1)]`` along a new last dim."""
    _check_tensor(x, "linalg_vander", "x", 1)
    if x.ndim == 0:
        x = x.reshape(1)
    n = x.shape[-1] if N is None else int(N)
    if n < 2:
        raise RuntimeError("N must be greater than 1.")
    if x._data.dtype.kind in "biu":
        x = x.to(_dtype.int64)
    ones = _wrap(np.ones(tuple(x.shape) + (1,), dtype=x._data.dtype))
    xs = x.unsqueeze(-1).expand(*x.shape, n - 1)
    from .scan import cumprod
    powers = cumprod(xs, -1)
    from . import shape as _shape
    return _shape.cat([ones, powers], -1)


def linalg_diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """``diagonal(A, offset, dim1, dim2)`` with the matrix dims last by default."""
    from .shape import diagonal
    return diagonal(A, offset, dim1, dim2)


def _register() -> None:
    from ._batching import RULES
    for op in (ADDMM, ADDMV, ADDR, BADDBMM, ADDBMM):
        RULES[op] = per_row
    RULES[EINSUM] = _einsum_batch_rule
    RULES[LINALG_CROSS] = _cross_batch
    RULES[VDOT] = _vdot_batch
    # diagonal (shape.py's op, used by linalg.diagonal): its dims, already non-negative,
    # shifted past the batch dim
    from .shape import DIAGONAL
    RULES.setdefault(DIAGONAL, lambda c, args: apply(
        c.op, tuple(c.ts), tuple(c.arrs), (args[0], args[1] + 1, args[2] + 1)))


_register()
