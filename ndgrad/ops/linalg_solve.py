"""Inverses, determinants, linear solvers, Cholesky and LU factorizations, the matrix
exponential, matrix norms, the condition number and the tensor solvers of ``ndgrad.linalg``.

Every op works on batches (all leading dims) of matrices. The VJP and JVP rules are written with
ndgrad ops, mostly with the ops of this module themselves (the gradient of a solve is a solve
with the adjoint matrix), so they differentiate again. Complex inputs follow PyTorch's
convention: the VJP of ``f`` is ``J^H g``. Failures PyTorch reports as
``torch.linalg.LinAlgError`` raise ``LinAlgError`` (a RuntimeError), with PyTorch's messages;
the ``*_ex`` variants return LAPACK's ``info`` instead. SciPy (LAPACK's ``getrf``, ``potrf``,
``expm``, triangular solves) is imported lazily inside the forwards that need it.

Example:
    >>> import ndgrad
    >>> A = ndgrad.tensor([[2.0, 0.0], [0.0, 4.0]], requires_grad=True)
    >>> ndgrad.linalg.det(A).backward()
    >>> A.grad
    tensor([[4., 0.],
            [0., 2.]])
"""

from __future__ import annotations

from .. import return_types as _rt
from contextlib import nullcontext
from typing import Any, Optional

import numpy as np

from .. import _dtype
from ..tensor import Tensor, _wrap
from . import linalg as _lin
from . import _scipy_threads
from ._deprecations import warn_deprecated
from ._dispatch import Op, apply
from ._jvp import zero
from .pointwise import apply_nondiff
from ._util import check_tensor, wrap_dim
from .products import per_row, scalar_name

__all__ = ["LinAlgError", "linalg_inv", "inv_ex", "det", "slogdet", "logdet", "solve",
           "solve_ex", "solve_triangular", "triangular_solve", "cholesky", "cholesky_ex",
           "cholesky_old", "cholesky_solve", "cholesky_inverse", "lu_factor", "lu_factor_ex",
           "lu", "lu_old", "lu_unpack", "lu_solve", "lu_solve_old", "matrix_exp", "linalg_norm",
           "matrix_norm", "cond", "tensorinv", "tensorsolve"]


class LinAlgError(RuntimeError):
    """A linear algebra failure (singular or not positive-definite input), as
    ``torch.linalg.LinAlgError``."""


# torch's class is named _LinAlgError (exported as linalg.LinAlgError): scripts that log
# type(e).__name__ or repr(e) print that name
LinAlgError.__name__ = LinAlgError.__qualname__ = "_LinAlgError"


inv_ex_result = _rt.linalg_inv_ex
slogdet_result = _rt.linalg_slogdet
slogdet_old_result = _rt.slogdet
solve_ex_result = _rt.linalg_solve_ex
cholesky_ex_result = _rt.linalg_cholesky_ex
lu_factor_result = _rt.linalg_lu_factor
lu_factor_ex_result = _rt.linalg_lu_factor_ex
lu_result = _rt.linalg_lu
lu_unpack_result = _rt.lu_unpack
triangular_solve_result = _rt.triangular_solve


# ---------------------------------------------------------------------------- helpers
def _mH(x: Tensor) -> Tensor:
    return x.transpose(-1, -2).conj()


def _check_tensor(x: Any, fn: str, arg: str = "A", pos: int = 1) -> None:
    if not isinstance(x, Tensor):
        check_tensor(x, fn, arg, pos)


def _check_float(x: Tensor, fn: str, low_ok: bool = False, low_impl: str = "") -> None:
    d = x._data.dtype
    if d.kind not in "fcV":
        raise RuntimeError(f"{fn}: Expected a floating point or complex tensor as input. Got "
                           f"{scalar_name(d)}")
    if not low_ok and (d.itemsize < 4 and d.kind in "fV"):
        if low_impl:
            raise NotImplementedError(f'"{low_impl}" not implemented for '
                                      f"'{scalar_name(d)}'")
        raise RuntimeError(f"{fn}: Low precision dtypes not supported. Got {scalar_name(d)}")


def _check_square(x: Tensor, fn: str, name: str = "A") -> None:
    d = x._data
    if d.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor {name} must have at least 2 dimensions.")
    if d.shape[-1] != d.shape[-2]:
        raise RuntimeError(f"{fn}: {name} must be batches of square matrices, but they are "
                           f"{d.shape[-2]} by {d.shape[-1]} matrices")


def _check_same_dtype(fn: str, a: Tensor, b: Tensor, an: str = "A", bn: str = "B") -> None:
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"{fn}: Expected {an} and {bn} to have the same dtype, but found "
                           f"{an} of type {scalar_name(a._data.dtype)} and {bn} of type "
                           f"{scalar_name(b._data.dtype)} instead")


def _batch_msg(idx: tuple, batch_shape: tuple) -> str:
    if not batch_shape:
        return ""
    flat = int(np.ravel_multi_index(idx, batch_shape)) if idx else 0
    return f"(Batch element {flat}): "


def _threads_for(work: int) -> Any:
    """One SciPy BLAS thread for a LAPACK call of ``work`` multiply-adds if it is small
    (Note [Single-threaded small SciPy LAPACK calls]), else SciPy's own thread count."""
    return _scipy_threads.one_thread() if _scipy_threads.small(work) else nullcontext()


def _getrf(a: np.ndarray) -> tuple:
    """LAPACK's LU of every matrix of ``a``: (LU, 1-based pivots int32, info int32)."""
    from scipy.linalg import get_lapack_funcs
    batch = a.shape[:-2]
    m, n = a.shape[-2:]
    lu = np.empty(a.shape, a.dtype)
    piv = np.empty(batch + (min(m, n),), np.int32)
    info = np.zeros(batch, np.int32)
    if a.size == 0:
        piv[...] = np.arange(1, min(m, n) + 1, dtype=np.int32)
        return lu, piv, info
    (getrf,) = get_lapack_funcs(("getrf",), (a,))
    with _threads_for(m * n * min(m, n)):
        for idx in np.ndindex(*batch):
            f, p, inf = getrf(a[idx], overwrite_a=False)
            lu[idx] = f
            piv[idx] = p + 1
            info[idx] = inf if inf > 0 else 0
    return lu, piv, info


def _potrf_info(a: np.ndarray) -> np.ndarray:
    """LAPACK's potrf info (0: positive-definite) for every matrix of ``a`` (lower triangle)."""
    from scipy.linalg import get_lapack_funcs
    batch = a.shape[:-2]
    info = np.zeros(batch, np.int32)
    if a.size == 0:
        return info
    (potrf,) = get_lapack_funcs(("potrf",), (a,))
    with _threads_for(a.shape[-1] ** 3):
        for idx in np.ndindex(*batch):
            _, inf = potrf(a[idx], lower=True, clean=True)
            info[idx] = inf if inf > 0 else 0
    return info


def _raise_info(info: np.ndarray, fn: str, msg, error: Optional[type] = None) -> None:
    """Raise for the first matrix whose LAPACK ``info`` is positive (``LinAlgError`` unless
    ``error`` is given)."""
    info = np.asarray(info)
    if not (info > 0).any():
        return
    idx = tuple(int(i) for i in np.argwhere(info > 0)[0]) if info.ndim else ()
    raise (error or LinAlgError)(f"{fn}: {_batch_msg(idx, info.shape)}{msg(int(info[idx]))}")


def _direct(c: Any, args: tuple) -> Any:
    """Batching rule of ops on batches of matrices with one input: the batch is one more
    leading dim."""
    return apply(c.op, tuple(c.ts), tuple(c.arrs), args)


# ---------------------------------------------------------------------------- inverse
def _inv_fwd(a: np.ndarray) -> tuple:
    n = a.shape[-1]
    info = np.zeros(a.shape[:-2], np.int32)
    if a.size == 0:
        return np.empty(a.shape, a.dtype), info
    try:
        inv = np.linalg.inv(a)
    except np.linalg.LinAlgError:
        lu, piv, info = _getrf(a)
        with np.errstate(all="ignore"):
            inv = np.full(a.shape, np.nan, a.dtype)
            for idx in np.ndindex(*a.shape[:-2]):
                if info[idx] == 0:
                    inv[idx] = np.linalg.inv(a[idx])
                else:
                    inv[idx] = _lu_solve_np(lu[idx], piv[idx], np.eye(n, dtype=a.dtype))
    return inv.astype(a.dtype, copy=False), info


def _inv_vjp(ctx, g, g_info=None):
    (inv,) = ctx.saved
    ih = _mH(inv)
    return -_lin.matmul(_lin.matmul(ih, g), ih)


def _inv_jvp(ctx, t):
    inv = ctx.result[0]
    return -_lin.matmul(_lin.matmul(inv, t), inv), None


LINALG_INV_EX = Op("linalg_inv_ex", "LinalgInvExBackward0", _inv_fwd, _inv_vjp,
                   inputs=("A",), saves=("result",), num_outputs=2, jvp=_inv_jvp)


def inv_ex(A: Tensor, *, check_errors: bool = False, out: Any = None) -> Any:
    """(inverse, info) of a batch of square matrices (info > 0: singular)."""
    _check_tensor(A, "linalg_inv_ex")
    _check_float(A, "linalg.inv")
    _check_square(A, "linalg.inv")
    inv, info = apply(LINALG_INV_EX, (A,), (A._data,))
    if check_errors:
        _raise_info(info._data, "linalg.inv_ex", _inv_msg)
    return inv_ex_result(inv, info)


def _inv_msg(i: int) -> str:
    return (f"The diagonal element {i} is zero, the inversion could not be completed because "
            "the input matrix is singular.")


def linalg_inv(A: Tensor, *, out: Any = None) -> Tensor:
    """The inverse of a batch of square matrices (``LinAlgError`` if one is singular).

    >>> import ndgrad
    >>> ndgrad.linalg.inv(ndgrad.tensor([[2.0, 0.0], [0.0, 4.0]]))
    tensor([[0.5000, 0.0000],
            [0.0000, 0.2500]])
    """
    _check_tensor(A, "linalg_inv")
    _check_float(A, "linalg.inv")
    _check_square(A, "linalg.inv")
    inv, info = apply(LINALG_INV_EX, (A,), (A._data,))
    _raise_info(info._data, "linalg.inv", _inv_msg)
    return inv


# ---------------------------------------------------------------------------- determinants
def _lu_args(A: Tensor, transposed: bool = False) -> tuple:
    """LAPACK's LU factors and pivots of ``a`` (of its transpose for det and slogdet, which
    PyTorch factors that way), as tensors: PyTorch computes det, slogdet and solve from them
    and saves them (``grad_fn._saved_LU``, ``_saved_pivots``); ndgrad saves the same values
    (its forwards and rules do not need them)."""
    return apply_nondiff(LU_FACTORS, (A,), (A._data,), (transposed,))


def _lu_factors_fwd(a: np.ndarray, transposed: bool) -> tuple:
    if transposed:
        a = np.ascontiguousarray(np.swapaxes(a, -1, -2))
    lu_, piv, _ = _getrf(a)
    return lu_, piv


# The saved LU factors of det/slogdet/solve: an op without VJP, so that a traced graph computes
# them in a node (Note [Index ops] in ops/sort.py) instead of keeping the traced values.
LU_FACTORS = Op("lu_factors", "LuFactorsBackward0", _lu_factors_fwd, args=("transposed",),
                num_outputs=2, jvp=zero)


def _det_fwd(a: np.ndarray, LU: Any = None, pivots: Any = None) -> np.ndarray:
    if a.size == 0:
        return np.ones(a.shape[:-2], a.dtype)
    return np.asarray(np.linalg.det(a)).astype(a.dtype, copy=False)


def _inv_for_grad(A: Tensor) -> Tensor:
    return inv_ex(A)[0]


def _det_vjp(ctx, g):
    A, _, _, d = ctx.saved
    if ctx.input_shape(0)[-1] == 1:          # det of 1x1 matrices: the entry itself
        return g.unsqueeze(-1).unsqueeze(-1)
    c = (g * d.conj()).unsqueeze(-1).unsqueeze(-1)
    return c * _mH(_inv_for_grad(A))


def _trace_inv_prod(A: Tensor, t: Tensor) -> Tensor:
    """``trace(inv(A) @ t)`` for batches."""
    return (_inv_for_grad(A).transpose(-1, -2) * t).sum((-2, -1))


def _det_jvp(ctx, t):
    return ctx.result * _trace_inv_prod(ctx.inputs[0], t)


LINALG_DET = Op("linalg_det", "LinalgDetBackward0", _det_fwd, _det_vjp, inputs=("A",),
                args=("LU", "pivots"), saves=("A", "LU", "pivots", "result"), jvp=_det_jvp)


def det(A: Tensor) -> Tensor:
    """Determinant of a batch of square matrices.

    >>> import ndgrad
    >>> ndgrad.linalg.det(ndgrad.tensor([[2.0, 1.0], [1.0, 2.0]])).item()
    3.0
    """
    _check_tensor(A, "linalg_det")
    _check_float(A, "linalg.det", low_impl="lu_cpu")
    _check_square(A, "linalg.det")
    return apply(LINALG_DET, (A,), (A._data,), _lu_args(A, True))


def _slogdet_fwd(a: np.ndarray, LU: Any = None, pivots: Any = None) -> tuple:
    if a.size == 0:
        b = a.shape[:-2]
        return np.ones(b, a.dtype), np.zeros(b, np.finfo(a.dtype).dtype)
    s, la = np.linalg.slogdet(a)
    return np.asarray(s).astype(a.dtype, copy=False), \
        np.asarray(la).astype(np.finfo(a.dtype).dtype, copy=False)


def _slogdet_vjp(ctx, g_sign, g_logabs):
    A, _, _, sign = ctx.saved
    complex_ = A._data.dtype.kind == "c"
    c = None
    if g_logabs is not None:
        c = g_logabs
    if complex_ and g_sign is not None:
        w = (g_sign * sign.conj()).imag
        w = w * 1j
        c = w if c is None else c + w
    if c is None:
        return None
    return c.unsqueeze(-1).unsqueeze(-1) * _mH(_inv_for_grad(A))


def _slogdet_jvp(ctx, t):
    A = ctx.inputs[0]
    sign, logabs = ctx.result
    tr = _trace_inv_prod(A, t)
    if A._data.dtype.kind == "c":
        return sign * (tr.imag * 1j), tr.real
    return _wrap(np.zeros_like(sign._data)), tr


LINALG_SLOGDET = Op("linalg_slogdet", "LinalgSlogdetBackward0", _slogdet_fwd, _slogdet_vjp,
                    inputs=("A",), args=("LU", "pivots"), saves=("A", "LU", "pivots", "result"),
                    num_outputs=2, jvp=_slogdet_jvp)


def slogdet(A: Tensor) -> Any:
    """(sign, log|det|) of a batch of square matrices.

    >>> import ndgrad
    >>> ndgrad.linalg.slogdet(ndgrad.tensor([[-2.0, 0.0], [0.0, 1.0]]))
    ndgrad.return_types.linalg_slogdet(
    sign=tensor(-1.),
    logabsdet=tensor(0.6931))
    """
    _check_tensor(A, "linalg_slogdet")
    _check_float(A, "linalg.slogdet")
    _check_square(A, "linalg.slogdet")
    s, la = apply(LINALG_SLOGDET, (A,), (A._data,), _lu_args(A, True))
    return slogdet_result(s, la)


def slogdet_old(A: Tensor) -> Any:
    """``torch.slogdet``: as ``linalg.slogdet``."""
    return slogdet_old_result(*slogdet(A))


def logdet(A: Tensor) -> Tensor:
    """log(det(A)): NaN for a negative determinant (real input), ``log`` of the complex
    determinant otherwise."""
    _check_tensor(A, "logdet")
    _check_float(A, "logdet")
    _check_square(A, "linalg.slogdet")
    sign, la = slogdet(A)
    if A._data.dtype.kind == "c":
        return la + sign.log()
    from .pointwise import where
    return where(sign == -1, _wrap(np.asarray(np.nan, la._data.dtype)), la)


# ---------------------------------------------------------------------------- solve
def _solve_np(a: np.ndarray, b: np.ndarray, left: bool, vector: bool) -> tuple:
    """X with A X = B (left) or X A = B, and LAPACK's info per matrix."""
    if not left:
        a = np.swapaxes(a, -1, -2)
        if not vector:
            b = np.swapaxes(b, -1, -2)
    bb = b[..., None] if vector else b
    batch = np.broadcast_shapes(a.shape[:-2], bb.shape[:-2])
    info = np.zeros(batch, np.int32)
    if a.size == 0 or bb.size == 0:
        x = np.zeros(batch + bb.shape[-2:], np.result_type(a, b))
    else:
        try:
            x = np.linalg.solve(a, bb)
        except np.linalg.LinAlgError:
            ab = np.broadcast_to(a, batch + a.shape[-2:])
            bq = np.broadcast_to(bb, batch + bb.shape[-2:])
            lu, piv, info = _getrf(np.ascontiguousarray(ab))
            x = np.empty(bq.shape, np.result_type(a, b))
            with np.errstate(all="ignore"):
                for idx in np.ndindex(*batch):
                    x[idx] = _lu_solve_np(lu[idx], piv[idx], bq[idx])
    if vector:
        x = x[..., 0]
    elif not left:
        x = np.swapaxes(x, -1, -2)
    return x.astype(a.dtype, copy=False), info


def _lu_solve_np(lu: np.ndarray, piv: np.ndarray, b: np.ndarray, trans: int = 0) -> np.ndarray:
    """Solve with one LU factorization (1-based pivots); singular factors give inf/nan."""
    from scipy.linalg import get_lapack_funcs
    (getrs,) = get_lapack_funcs(("getrs",), (lu, b))
    with np.errstate(all="ignore"), _threads_for(lu.shape[-1] ** 2 * b.shape[-1]):
        x, _ = getrs(lu, piv - 1, b, trans=trans)
    return x


def _solve_fwd(a: np.ndarray, b: np.ndarray, left: bool, vector: bool, LU: Any = None,
               pivots: Any = None) -> tuple:
    return _solve_np(a, b, left, vector)


def _solve_vjp(ctx, g, g_info=None):
    A, _, _, X = ctx.saved
    left, vector = ctx._args[:2]
    gB = _solve_raw(_mH(A), g, left, vector)
    gA = None
    if ctx.needs_input_grad(0):
        if vector:
            gA = -_lin.matmul(gB.unsqueeze(-1), X.unsqueeze(-1).transpose(-1, -2).conj())
        elif left:
            gA = -_lin.matmul(gB, _mH(X))
        else:
            gA = -_lin.matmul(_mH(X), gB)
    return gA, gB if ctx.needs_input_grad(1) else None


def _solve_jvp(ctx, tA, tB):
    A, B = ctx.inputs
    X = ctx.result[0]
    left, vector = ctx._args[:2]
    rhs = tB
    if tA is not None:
        if vector:
            p = _lin.matmul(tA, X.unsqueeze(-1)).squeeze(-1)
        elif left:
            p = _lin.matmul(tA, X)
        else:
            p = _lin.matmul(X, tA)
        rhs = -p if rhs is None else rhs - p
    return _solve_raw(A, rhs, left, vector), None


def _solve_raw(A: Tensor, B: Tensor, left: bool, vector: bool) -> Tensor:
    dt = np.promote_types(A._data.dtype, B._data.dtype)
    if A._data.dtype != dt:
        A = A.to(_dtype._FROM_NP[dt])
    if B._data.dtype != dt:
        B = B.to(_dtype._FROM_NP[dt])
    return apply(LINALG_SOLVE_EX, (A, B), (A._data, B._data), (left, vector, None, None))[0]


LINALG_SOLVE_EX = Op("linalg_solve_ex", "LinalgSolveExBackward0", _solve_fwd, _solve_vjp,
                     inputs=("A", "B"), args=("left", "vector", "LU", "pivots"),
                     saves=("A", "LU", "pivots", "result"),
                     num_outputs=2, jvp=_solve_jvp)


def _vector_case(A: np.ndarray, B: np.ndarray) -> bool:
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])


def _solve_checks(A: Tensor, B: Tensor, left: bool, fn: str) -> bool:
    _check_tensor(A, fn, "A", 1)
    _check_tensor(B, fn, "B", 2)
    _check_float(A, "linalg.solve")
    _check_square(A, "linalg.solve")
    _check_same_dtype("linalg.solve", A, B)
    a, b = A._data, B._data
    vector = _vector_case(a, b)
    n = a.shape[-1]
    if vector:
        if b.shape[-1] != n:
            raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                               f"{'AX = B' if left else 'XA = B'} ({a.shape[-2]}x{n} and "
                               f"{b.shape[-1]}x1)")
    else:
        k = b.shape[-2] if left else b.shape[-1]
        if b.ndim < 2 or k != n:
            bs = "x".join(str(s) for s in b.shape[-2:])
            raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                               f"{'AX = B' if left else 'XA = B'} ({a.shape[-2]}x{n} and {bs})")
        try:
            np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except ValueError:
            from ._util import broadcast_error
            raise broadcast_error(a.shape[:-2], b.shape[:-2]) from None
    return vector


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False,
             out: Any = None) -> Any:
    """(X, info) with ``A X = B`` (``X A = B`` for ``left=False``)."""
    from ._batching import call, marked
    if marked((A, B)):
        r = call(lambda a, b: solve_ex(a, b, left=left, check_errors=check_errors), A, B)
        if r is not NotImplemented:
            return r
    vector = _solve_checks(A, B, left, "linalg_solve_ex")
    x, info = apply(LINALG_SOLVE_EX, (A, B), (A._data, B._data),
                    (bool(left), vector) + _lu_args(A))
    if check_errors:
        _raise_info(info._data, "torch.linalg.solve_ex",
                    lambda i: "The solver failed because the input matrix is singular.")
    return solve_ex_result(x, info)


def solve(A: Tensor, B: Tensor, *, left: bool = True, out: Any = None) -> Tensor:
    """X with ``A X = B`` (``X A = B`` for ``left=False``); B may be a (batch of) vector(s).

    >>> import ndgrad
    >>> ndgrad.linalg.solve(ndgrad.tensor([[2.0, 0.0], [0.0, 4.0]]), ndgrad.tensor([2.0, 2.0]))
    tensor([1.0000, 0.5000])
    """
    from ._batching import call, marked
    if marked((A, B)):
        r = call(lambda a, b: solve(a, b, left=left), A, B)
        if r is not NotImplemented:
            return r
    vector = _solve_checks(A, B, left, "linalg_solve")
    x, info = apply(LINALG_SOLVE_EX, (A, B), (A._data, B._data),
                    (bool(left), vector) + _lu_args(A))
    _raise_info(info._data, "torch.linalg.solve",
                lambda i: "The solver failed because the input matrix is singular.")
    return x


# ---------------------------------------------------------------------------- triangular
def _tri_np(a: np.ndarray, b: np.ndarray, upper: bool, left: bool, unit: bool) -> np.ndarray:
    from scipy.linalg import solve_triangular as st
    if not left:       # X A = B  <=>  A^T X^T = B^T
        return np.swapaxes(_tri_np(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2), not upper,
                                   True, unit), -1, -2)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    ab = np.broadcast_to(a, batch + a.shape[-2:])
    bb = np.broadcast_to(b, batch + b.shape[-2:])
    dt = np.result_type(a, b)
    x = np.empty(bb.shape, dt)
    if x.size == 0:
        return x
    n = a.shape[-1]
    with np.errstate(all="ignore"), _threads_for(n * n * bb.shape[-1]):
        for idx in np.ndindex(*batch):
            x[idx] = st(ab[idx], bb[idx], lower=not upper, unit_diagonal=unit,
                        check_finite=False)
    return x


def _tri_part(t: Tensor, upper: bool, unit: bool) -> Tensor:
    k = 1 if unit else 0
    return t.triu(k) if upper else t.tril(-k)


def _solve_tri_fwd(a: np.ndarray, b: np.ndarray, upper: bool, left: bool,
                   unit: bool) -> np.ndarray:
    return _tri_np(a, b, upper, left, unit).astype(a.dtype, copy=False)


def _solve_tri_vjp(ctx, g):
    A, X = ctx.saved
    upper, left, unit = ctx._args
    gB = _solve_tri_raw(_mH(A), g, not upper, left, unit)
    gA = None
    if ctx.needs_input_grad(0):
        gA = -_lin.matmul(gB, _mH(X)) if left else -_lin.matmul(_mH(X), gB)
        gA = _tri_part(gA, upper, unit)
    return gA, gB if ctx.needs_input_grad(1) else None


def _solve_tri_jvp(ctx, tA, tB):
    A, B = ctx.inputs
    X = ctx.result
    upper, left, unit = ctx._args
    rhs = tB
    if tA is not None:
        tA = _tri_part(tA, upper, unit)
        p = _lin.matmul(tA, X) if left else _lin.matmul(X, tA)
        rhs = -p if rhs is None else rhs - p
    return _solve_tri_raw(A, rhs, upper, left, unit)


def _solve_tri_raw(A: Tensor, B: Tensor, upper: bool, left: bool, unit: bool) -> Tensor:
    dt = np.promote_types(A._data.dtype, B._data.dtype)
    if A._data.dtype != dt:
        A = A.to(_dtype._FROM_NP[dt])
    if B._data.dtype != dt:
        B = B.to(_dtype._FROM_NP[dt])
    return apply(LINALG_SOLVE_TRIANGULAR, (A, B), (A._data, B._data), (upper, left, unit))


LINALG_SOLVE_TRIANGULAR = Op(
    "linalg_solve_triangular", "LinalgSolveTriangularBackward0", _solve_tri_fwd, _solve_tri_vjp,
    inputs=("self", "B"), args=("upper", "left", "unitriangular"), saves=("self", "result"),
    jvp=_solve_tri_jvp)


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,
                     unitriangular: bool = False, out: Any = None) -> Tensor:
    """X with ``A X = B`` (``X A = B`` for ``left=False``) for triangular ``A`` (only its
    ``upper`` or lower triangle is read; ``unitriangular``: its diagonal is taken as ones)."""
    from ._batching import call, marked
    if marked((A, B)):
        r = call(lambda a, b: solve_triangular(a, b, upper=upper, left=left,
                                               unitriangular=unitriangular), A, B)
        if r is not NotImplemented:
            return r
    _check_tensor(A, "linalg_solve_triangular", "input", 1)
    _check_tensor(B, "linalg_solve_triangular", "B", 2)
    a, b = A._data, B._data
    fn = "linalg.solve_triangular"
    _check_float(A, fn)
    if a.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor A must have at least 2 dimensions.")
    if b.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor B must have at least 2 dimensions.")
    _check_square(A, fn)
    if a.dtype != b.dtype:
        raise RuntimeError(f"{fn}: Expected A and B to have the same dtype, but found A of type "
                           f"{scalar_name(a.dtype)} and B of type {scalar_name(b.dtype)} "
                           "instead")
    k = b.shape[-2] if left else b.shape[-1]
    if k != a.shape[-1]:
        bs = "x".join(str(s) for s in b.shape[-2:])
        raise RuntimeError(f"{fn}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({a.shape[-2]}x{a.shape[-1]} and "
                           f"{bs})")
    try:
        np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        from ._util import broadcast_error
        raise broadcast_error(a.shape[:-2], b.shape[:-2]) from None
    return apply(LINALG_SOLVE_TRIANGULAR, (A, B), (a, b),
                 (bool(upper), bool(left), bool(unitriangular)))


def _tsolve_fwd(b: np.ndarray, a: np.ndarray, upper: bool, transpose: bool,
                unit: bool) -> tuple:
    at = np.swapaxes(a, -1, -2) if transpose else a
    x = _tri_np(at, b, upper != transpose, True, unit).astype(a.dtype, copy=False)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return x, np.broadcast_to(a, batch + a.shape[-2:]).copy()


def _tsolve_vjp(ctx, gX, gM):
    X, A = ctx.saved
    upper, transpose, unit = ctx._args
    gb = gA = None
    if gX is not None:
        # op(A) X = b, op(A) = A or A^T; op(A)^H = conj(A) or A^H
        opA = A.transpose(-1, -2) if transpose else A
        gb = _solve_tri_raw(_mH(opA), gX, upper == transpose, True, unit)
        if ctx.needs_input_grad(1):
            gopA = -_lin.matmul(gb, _mH(X))
            gA = gopA.transpose(-1, -2) if transpose else gopA
            gA = _tri_part(gA, upper, unit)
    if gM is not None and ctx.needs_input_grad(1):
        gA = gM if gA is None else gA + gM
    return gb if ctx.needs_input_grad(0) else None, gA


def _tsolve_jvp(ctx, tb, tA):
    b, A = ctx.inputs
    X = ctx.result[0]
    upper, transpose, unit = ctx._args
    opA = A.transpose(-1, -2) if transpose else A
    rhs = tb
    if tA is not None:
        # PyTorch's tangent: the whole tangent of A, neither restricted to the triangle nor
        # transposed with ``transpose=True`` (its forward AD differs from its VJP here)
        p = _lin.matmul(tA, X)
        rhs = -p if rhs is None else rhs - p
    tX = _solve_tri_raw(opA, rhs, upper != transpose, True, unit)
    tM = tA if tA is not None else _wrap(np.zeros_like(ctx.result[1]._data))
    return tX, tM.expand(*ctx.result[1].shape) if tA is not None else tM


TRIANGULAR_SOLVE = Op("triangular_solve", "TriangularSolveBackward0", _tsolve_fwd, _tsolve_vjp,
                      inputs=("self", "A"), args=("upper", "transpose", "unitriangular"),
                      saves=("result", "A"), num_outputs=2, jvp=_tsolve_jvp)


def triangular_solve(b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False) -> Any:
    """``torch.triangular_solve``: (X, clone of A) with ``op(A) X = b``."""
    warn_deprecated("triangular_solve")
    from ._batching import call, marked
    if marked((b, A)):
        r = call(lambda x, y: triangular_solve(x, y, upper, transpose, unitriangular), b, A)
        if r is not NotImplemented:
            return r
    _check_tensor(b, "triangular_solve", "input", 1)
    _check_tensor(A, "triangular_solve", "A", 2)
    bd, a = b._data, A._data
    if bd.ndim < 2:
        raise RuntimeError("torch.triangular_solve: The input tensor b must have at least 2 "
                           "dimensions.")
    if a.ndim < 2:
        raise RuntimeError("torch.triangular_solve: The input tensor A must have at least 2 "
                           "dimensions.")
    _check_float(A, "torch.triangular_solve")
    _check_square(A, "torch.triangular_solve")
    if a.dtype != bd.dtype:
        raise RuntimeError(f"triangular_solve: Expected b and A to have the same dtype, but "
                           f"found b of type {scalar_name(bd.dtype)} and A of type "
                           f"{scalar_name(a.dtype)} instead.")
    if bd.shape[-2] != a.shape[-1]:
        raise RuntimeError(f"triangular_solve: Incompatible matrix sizes for A @ X = B: each A "
                           f"matrix is {a.shape[-2]} by {a.shape[-1]} but each b matrix is "
                           f"{bd.shape[-2]} by {bd.shape[-1]}")
    X, M = apply(TRIANGULAR_SOLVE, (b, A), (bd, a),
                 (bool(upper), bool(transpose), bool(unitriangular)))
    return triangular_solve_result(X, M)


# ---------------------------------------------------------------------------- Cholesky
def _chol_fwd(a: np.ndarray, upper: bool) -> tuple:
    """(L, info): lower factor of the lower triangle (upper: U = L^H of the upper one)."""
    if upper:
        a = np.swapaxes(a, -1, -2).conj()
    info = np.zeros(a.shape[:-2], np.int32)
    low = a.dtype.itemsize < 4 and a.dtype.kind in "fV"
    w = a.astype(np.float32) if low else a
    if w.size == 0:
        L = np.zeros(a.shape, a.dtype)
    else:
        try:
            L = np.linalg.cholesky(w)
        except np.linalg.LinAlgError:
            info = _potrf_info(w)
            L = np.zeros(w.shape, w.dtype)
            for idx in np.ndindex(*w.shape[:-2]):
                if info[idx] == 0:
                    L[idx] = np.linalg.cholesky(w[idx])
    L = L.astype(a.dtype, copy=False)
    if upper:
        L = np.swapaxes(L, -1, -2).conj()
    return np.ascontiguousarray(L), info


def _phi(x: Tensor) -> Tensor:
    """Lower triangle with the diagonal halved."""
    n = x.shape[-1]
    half = np.tril(np.ones((n, n)), -1) + 0.5 * np.eye(n)
    return x * _wrap(half.astype(np.finfo(x._data.dtype).dtype))


def _chol_grad(L: Tensor, gL: Tensor) -> Tensor:
    """The (Hermitian) gradient of A = L L^H for the gradient ``gL`` of lower ``L``."""
    # Hermitian off the diagonal; the diagonal keeps its imaginary part (PyTorch's choice
    # among the gradients that agree on Hermitian directions)
    Y = _lin.matmul(_mH(L), gL)
    n = Y.shape[-1]
    Q = Y.tril(-1)
    P = (Q + _mH(Q)) * 0.5 + Y * _wrap(0.5 * np.eye(n, dtype=np.finfo(Y._data.dtype).dtype))
    S = _solve_tri_raw(_mH(L), P, True, True, False)          # L^-H P
    return _solve_tri_raw(L, S, False, False, False)          # L^-H P L^-1


def _chol_vjp(ctx, gL, g_info=None):
    (L,) = ctx.saved
    upper = ctx._args[0]
    if upper:
        return _chol_grad(_mH(L), _mH(gL))
    return _chol_grad(L, gL)


def _chol_jvp(ctx, t):
    L = ctx.result[0]
    upper = ctx._args[0]
    if upper:
        L = _mH(L)
    M = _solve_tri_raw(L, t, False, True, False)               # L^-1 tA
    M = _solve_tri_raw(_mH(L), M, True, False, False)          # L^-1 tA L^-H
    tL = _lin.matmul(L, _phi(M))
    return (_mH(tL) if upper else tL), None


LINALG_CHOLESKY_EX = Op("linalg_cholesky_ex", "LinalgCholeskyExBackward0", _chol_fwd, _chol_vjp,
                        inputs=("self",), args=("upper",), saves=("result",), num_outputs=2,
                        jvp=_chol_jvp)


def _chol_old_fwd(a: np.ndarray, upper: bool) -> np.ndarray:
    return _chol_fwd(a, upper)[0]


def _chol_old_vjp(ctx, gL):
    (L,) = ctx.saved
    upper = ctx._args[0]
    if upper:
        return _chol_grad(_mH(L), _mH(gL))
    return _chol_grad(L, gL)


CHOLESKY = Op("cholesky", "CholeskyBackward0", _chol_old_fwd, _chol_old_vjp, args=("upper",),
              saves=("result",), jvp=lambda ctx, t: _chol_jvp(
                  type("C", (), {"result": (ctx.result,), "_args": ctx._args})(), t)[0])


def _chol_msg(i: int) -> str:
    return ("The factorization could not be completed because the input is not "
            f"positive-definite (the leading minor of order {i} is not positive-definite).")


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False,
                out: Any = None) -> Any:
    """(L, info): the Cholesky factor of a batch of Hermitian positive-definite matrices."""
    _check_tensor(A, "linalg_cholesky_ex")
    _check_float(A, "linalg.cholesky", low_impl="cholesky_cpu")
    _check_square(A, "linalg.cholesky")
    L, info = apply(LINALG_CHOLESKY_EX, (A,), (A._data,), (bool(upper),))
    if check_errors:
        _raise_info(info._data, "linalg.cholesky_ex", _chol_msg)
    return cholesky_ex_result(L, info)


def cholesky(A: Tensor, *, upper: bool = False, out: Any = None) -> Tensor:
    """The Cholesky factor ``L`` (``A = L L^H``; ``upper``: ``U`` with ``A = U^H U``).

    >>> import ndgrad
    >>> ndgrad.linalg.cholesky(ndgrad.tensor([[4.0, 2.0], [2.0, 2.0]]))
    tensor([[2., 0.],
            [1., 1.]])
    """
    _check_tensor(A, "linalg_cholesky")
    _check_float(A, "linalg.cholesky", low_impl="cholesky_cpu")
    _check_square(A, "linalg.cholesky")
    L, info = apply(LINALG_CHOLESKY_EX, (A,), (A._data,), (bool(upper),))
    _raise_info(info._data, "linalg.cholesky", _chol_msg)
    return L


def cholesky_old(A: Tensor, upper: bool = False, out: Any = None) -> Tensor:
    """``torch.cholesky`` (deprecated in PyTorch): CholeskyBackward0."""
    warn_deprecated("cholesky")
    _check_tensor(A, "cholesky", "input", 1)
    _check_float(A, "cholesky", low_impl="cholesky_cpu")
    _check_square(A, "cholesky")
    info = _chol_fwd(A._data, bool(upper))[1]
    _raise_info(info, "cholesky", _chol_msg)
    return apply(CHOLESKY, (A,), (A._data,), (bool(upper),))


def _chol_solve_np(b: np.ndarray, L: np.ndarray, upper: bool) -> np.ndarray:
    if upper:
        y = _tri_np(np.swapaxes(L, -1, -2).conj(), b, False, True, False)
        return _tri_np(L, y, True, True, False)
    y = _tri_np(L, b, False, True, False)
    return _tri_np(np.swapaxes(L, -1, -2).conj(), y, True, True, False)


def _chol_solve_fwd(b: np.ndarray, L: np.ndarray, upper: bool) -> np.ndarray:
    return _chol_solve_np(b, L, upper).astype(b.dtype, copy=False)


def _chol_factor_grad(gA: Tensor, L: Tensor, upper: bool) -> Tensor:
    """Gradient of the factor of A = L L^H (U^H U) for the gradient gA of A."""
    s = gA + _mH(gA)
    return _lin.matmul(L, s) if upper else _lin.matmul(s, L)


def _chol_solve_vjp(ctx, g):
    X, L = ctx.saved
    upper = ctx._args[0]
    gB = _chol_solve_raw(g, L, upper)
    gL = None
    if ctx.needs_input_grad(1):
        gA = -_lin.matmul(gB, _mH(X))
        gL = _chol_factor_grad(gA, L, upper)
    return gB if ctx.needs_input_grad(0) else None, gL


def _chol_solve_jvp(ctx, tB, tL):
    B, L = ctx.inputs
    X = ctx.result
    upper = ctx._args[0]
    rhs = tB
    if tL is not None:
        tA = _lin.matmul(_mH(tL), L) + _lin.matmul(_mH(L), tL) if upper else \
            _lin.matmul(tL, _mH(L)) + _lin.matmul(L, _mH(tL))
        p = _lin.matmul(tA, X)
        rhs = -p if rhs is None else rhs - p
    return _chol_solve_raw(rhs, L, upper)


def _chol_solve_raw(B: Tensor, L: Tensor, upper: bool) -> Tensor:
    return apply(CHOLESKY_SOLVE, (B, L), (B._data, L._data), (upper,))


CHOLESKY_SOLVE = Op("cholesky_solve", "CholeskySolveBackward0", _chol_solve_fwd,
                    _chol_solve_vjp, inputs=("self", "input2"), args=("upper",),
                    saves=("result", "input2"), jvp=_chol_solve_jvp)


def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False, out: Any = None) -> Tensor:
    """X with ``A X = B`` for ``A = L L^H`` (``upper``: ``A = U^H U``)."""
    from ._batching import call, marked
    if marked((B, L)):
        r = call(lambda x, y: cholesky_solve(x, y, upper), B, L)
        if r is not NotImplemented:
            return r
    _check_tensor(B, "cholesky_solve", "input", 1)
    _check_tensor(L, "cholesky_solve", "input2", 2)
    bd, ld = B._data, L._data
    if bd.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {bd.ndim} dimensions "
                           "instead")
    if ld.ndim < 2:
        raise RuntimeError(f"u should have at least 2 dimensions, but has {ld.ndim} dimensions "
                           "instead")
    if bd.dtype != ld.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{scalar_name(bd.dtype)} and A of type {scalar_name(ld.dtype)} "
                           "instead.")
    _check_float(L, "cholesky_solve", low_impl="cholesky_solve_cpu")
    if ld.shape[-1] != ld.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are {ld.shape[-2]} "
                           f"by {ld.shape[-1]} matrices")
    if bd.shape[-2] != ld.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is "
                           f"{ld.shape[-2]} by {ld.shape[-1]} but each b matrix is "
                           f"{bd.shape[-2]} by {bd.shape[-1]}")
    return apply(CHOLESKY_SOLVE, (B, L), (bd, ld), (bool(upper),))


def _chol_inv_fwd(lf: np.ndarray, upper: bool) -> np.ndarray:
    n = lf.shape[-1]
    eye = np.broadcast_to(np.eye(n, dtype=lf.dtype), lf.shape)
    return _chol_solve_np(eye, lf, upper).astype(lf.dtype, copy=False)


def _chol_inv_vjp(ctx, g):
    L, R = ctx.saved
    upper = ctx._args[0]
    gA = -_lin.matmul(_lin.matmul(_mH(R), g), _mH(R))
    return _chol_factor_grad(gA, L, upper)


def _chol_inv_jvp(ctx, tL):
    L = ctx.inputs[0]
    R = ctx.result
    upper = ctx._args[0]
    tA = _lin.matmul(_mH(tL), L) + _lin.matmul(_mH(L), tL) if upper else \
        _lin.matmul(tL, _mH(L)) + _lin.matmul(L, _mH(tL))
    return -_lin.matmul(_lin.matmul(R, tA), R)


CHOLESKY_INVERSE = Op("cholesky_inverse", "CholeskyInverseBackward0", _chol_inv_fwd,
                      _chol_inv_vjp, args=("upper",), saves=("self", "result"),
                      jvp=_chol_inv_jvp)


def cholesky_inverse(L: Tensor, upper: bool = False, out: Any = None) -> Tensor:
    """The inverse of ``A = L L^H`` (``upper``: ``A = U^H U``) from its Cholesky factor."""
    _check_tensor(L, "cholesky_inverse", "input", 1)
    ld = L._data
    _check_float(L, "cholesky_inverse", low_impl="cholesky_inverse_cpu")
    if ld.ndim < 2:
        raise RuntimeError("cholesky_inverse: The input tensor input must have at least 2 "
                           "dimensions.")
    if ld.shape[-1] != ld.shape[-2]:
        raise RuntimeError(f"cholesky_inverse: A must be batches of square matrices, but they "
                           f"are {ld.shape[-2]} by {ld.shape[-1]} matrices")
    return apply(CHOLESKY_INVERSE, (L,), (ld,), (bool(upper),))


# ---------------------------------------------------------------------------- LU
def _perm_from_pivots(piv: np.ndarray, m: int) -> np.ndarray:
    """Row permutation ``perm`` (P = I[:, perm]^T...) from 1-based LAPACK pivots: returns the
    permutation matrix P with A = P L U, for every batch element."""
    batch = piv.shape[:-1]
    P = np.empty(batch + (m, m), np.float64)
    for idx in np.ndindex(*batch):
        perm = np.arange(m)
        for i, p in enumerate(piv[idx]):
            j = int(p) - 1
            perm[i], perm[j] = perm[j], perm[i]
        # rows of A were permuted: (P^T A)[i] = A[perm[i]]  =>  P[perm[i], i] = 1
        Pm = np.zeros((m, m))
        Pm[perm, np.arange(m)] = 1
        P[idx] = Pm
    return P


def _unpack_np(lu: np.ndarray, m: int, n: int) -> tuple:
    k = min(m, n)
    L = np.tril(lu[..., :, :k], -1) + np.eye(m, k, dtype=lu.dtype)
    U = np.triu(lu[..., :k, :])
    return L, U


def _lu_factor_fwd(a: np.ndarray, pivot: bool) -> tuple:
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    lu, piv, info = _getrf(a)
    return lu, piv, info


def _lu_grad(A: Tensor, P: Tensor, L: Tensor, U: Tensor, gL: Any, gU: Any) -> Tensor:
    """Gradient of A for A = P L U with gradients gL, gU of the factors (any shape)."""
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    if m == n:
        X: Any = None       # the sum of the factors' terms present (None: no gradient)
        if gL is not None:
            X = _lin.matmul(_mH(L), gL).tril(-1)
        if gU is not None:
            y = _lin.matmul(gU, _mH(U)).triu()
            X = y if X is None else X + y
        Y = _solve_tri_raw(_mH(L), X, True, True, True)            # L^-H X
        Y = _solve_tri_raw(_mH(U), Y, False, False, False)         # L^-H X U^-H
        return _lin.matmul(P, Y)
    if m < n:      # wide: L square (m x m), U = [U1 | U2]
        U1 = U[..., :, :k]
        gU1 = gU[..., :, :k] if gU is not None else None
        gU2 = gU[..., :, k:] if gU is not None else None
        X = None
        if gL is not None:
            X = _lin.matmul(_mH(L), gL).tril(-1)
        if gU1 is not None:
            y = _lin.matmul(gU1, _mH(U1)).triu()
            X = y if X is None else X + y
        if gU2 is not None:
            y = -_lin.matmul(gU2, _mH(U[..., :, k:])).tril(-1)
            X = y if X is None else X + y
        Y = _solve_tri_raw(_mH(L), X, True, True, True)
        Y = _solve_tri_raw(_mH(U1), Y, False, False, False)
        Y = _pad_cols(Y, n)
        if gU2 is not None:
            Y = Y + _shift_cols(_solve_tri_raw(_mH(L), gU2, True, True, True), n)
        return _lin.matmul(P, Y)
    # tall: L = [L1; L2] (m x n), U square
    L1 = L[..., :k, :]
    gL1 = gL[..., :k, :] if gL is not None else None
    gL2 = gL[..., k:, :] if gL is not None else None
    X = None
    if gL1 is not None:
        X = _lin.matmul(_mH(L1), gL1).tril(-1)
    if gU is not None:
        y = _lin.matmul(gU, _mH(U)).triu()
        X = y if X is None else X + y
    if gL2 is not None:
        y = -_lin.matmul(_mH(L[..., k:, :]), gL2).triu()
        X = y if X is None else X + y
    Y = _solve_tri_raw(_mH(L1), X, True, True, True)
    Y = _pad_rows(_solve_tri_raw(_mH(U), Y, False, False, False), m)
    if gL2 is not None:
        Y = Y + _shift_rows(_solve_tri_raw(_mH(U), gL2, False, False, False), m)
    return _lin.matmul(P, Y)


def _pad_cols(x: Tensor, n: int) -> Tensor:
    """``[x, 0]`` with ``n`` columns (a product with a constant, so it batches)."""
    return _lin.matmul(x, _wrap(np.eye(x.shape[-1], n, dtype=x._data.dtype)))


def _pad_rows(x: Tensor, m: int) -> Tensor:
    """``[x; 0]`` with ``m`` rows."""
    return _lin.matmul(_wrap(np.eye(m, x.shape[-2], dtype=x._data.dtype)), x)


def _shift_cols(x: Tensor, n: int) -> Tensor:
    """``[0, x]`` with ``n`` columns."""
    return _lin.matmul(x, _wrap(np.eye(x.shape[-1], n, n - x.shape[-1], dtype=x._data.dtype)))


def _shift_rows(x: Tensor, m: int) -> Tensor:
    """``[0; x]`` with ``m`` rows."""
    return _lin.matmul(_wrap(np.eye(m, x.shape[-2], -(m - x.shape[-2]), dtype=x._data.dtype)),
                       x)


def _split_lu(LU: Tensor) -> tuple:
    m, n = LU.shape[-2], LU.shape[-1]
    k = min(m, n)
    L = LU[..., :, :k].tril(-1) + _wrap(np.eye(m, k, dtype=LU._data.dtype))
    U = LU[..., :k, :].triu()
    return L, U


def _lu_factor_vjp(ctx, gLU):
    A, LU = ctx.saved
    m = A.shape[-2]
    k = min(m, A.shape[-1])
    L, U = _split_lu(LU)
    P = _wrap(_perm_from_pivots(_getrf(A._data)[1], m).astype(A._data.dtype))
    return _lu_grad(A, P, L, U, gLU[..., :, :k].tril(-1), gLU[..., :k, :].triu())


def _lu_jvp_square(L: Tensor, U: Tensor, M: Tensor) -> tuple:
    """Tangents (tL, tU) of M = L U (square) for the tangent M of the product."""
    N = _solve_tri_raw(L, M, False, True, True)           # L^-1 M
    N = _solve_tri_raw(U, N, True, False, False)          # L^-1 M U^-1
    return _lin.matmul(L, N.tril(-1)), _lin.matmul(N.triu(), U)


def _lu_jvp_factors(A: Tensor, P: Tensor, L: Tensor, U: Tensor, tA: Tensor) -> tuple:
    """Tangents (tL, tU) of A = P L U."""
    m, n = A.shape[-2], A.shape[-1]
    M = _lin.matmul(P.transpose(-1, -2), tA)
    if m == n:
        return _lu_jvp_square(L, U, M)
    if m < n:        # wide: U = [U1, U2]; U2 = L^-1 P^T A2
        tL, tU1 = _lu_jvp_square(L, U[..., :, :m], M[..., :, :m])
        tU2 = _solve_tri_raw(L, M[..., :, m:] - _lin.matmul(tL, U[..., :, m:]), False, True,
                             True)
        return tL, _pad_cols(tU1, n) + _shift_cols(tU2, n)
    # tall: L = [L1; L2]; L2 = (P^T A)_2 U^-1
    tL1, tU = _lu_jvp_square(L[..., :n, :], U, M[..., :n, :])
    tL2 = _solve_tri_raw(U, M[..., n:, :] - _lin.matmul(L[..., n:, :], tU), True, False, False)
    return _pad_rows(tL1, m) + _shift_rows(tL2, m), tU


def _lu_factor_jvp(ctx, t):
    A = ctx.inputs[0]
    LU, piv, info = ctx.result
    L, U = _split_lu(LU)
    P = _wrap(_perm_from_pivots(piv._data, A.shape[-2]).astype(A._data.dtype))
    tL, tU = _lu_jvp_factors(A, P, L, U, t)
    m, n = A.shape[-2], A.shape[-1]
    if m < n:
        tL = _pad_cols(tL, n)
    elif m > n:
        tU = _pad_rows(tU, m)
    return tL + tU, None, None


LINALG_LU_FACTOR_EX = Op("linalg_lu_factor_ex", "LinalgLuFactorExBackward0", _lu_factor_fwd,
                         _lu_factor_vjp, inputs=("A",), args=("pivot",),
                         saves=("A", "result"), num_outputs=3, jvp=_lu_factor_jvp)


def _lu_checks(A: Tensor, fn: str) -> None:
    _check_float(A, fn, low_impl="lu_cpu")
    if A._data.ndim < 2:
        raise RuntimeError(f"{fn}: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(A.shape)} instead")


def _lu_msg(i: int) -> str:
    return (f"U[{i},{i}] is zero and using it on lu_solve would result in a division by zero. "
            "If you still want to perform the factorization, consider calling "
            "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


def _no_pivot(pivot: bool, fn: str) -> None:
    if not pivot:
        raise RuntimeError(f"{fn}: LU without pivoting is not implemented on the CPU")


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False,
                 out: Any = None) -> Any:
    """(LU, pivots, info): the packed LU factorization with partial pivoting (LAPACK's)."""
    _check_tensor(A, "linalg_lu_factor_ex")
    _lu_checks(A, "torch.lu_factor")
    _no_pivot(pivot, "linalg.lu_factor")
    LU, piv, info = apply(LINALG_LU_FACTOR_EX, (A,), (A._data,), (True,))
    if check_errors:
        _raise_info(info._data, "torch.linalg.lu_factor_ex", _lu_msg)
    return lu_factor_ex_result(LU, piv, info)


def lu_factor(A: Tensor, *, pivot: bool = True, out: Any = None) -> Any:
    """(LU, pivots): the packed LU factorization (``LinAlgError`` for singular input)."""
    _check_tensor(A, "linalg_lu_factor")
    _lu_checks(A, "torch.lu_factor")
    _no_pivot(pivot, "linalg.lu_factor")
    LU, piv, info = apply(LINALG_LU_FACTOR_EX, (A,), (A._data,), (True,))
    _raise_info(info._data, "torch.linalg.lu_factor", _lu_msg, RuntimeError)
    return lu_factor_result(LU, piv)


def lu_old(A: Tensor, pivot: bool = True, get_infos: bool = False, out: Any = None) -> Any:
    """``torch.lu``: (LU, pivots[, infos])."""
    warn_deprecated("lu")
    _check_tensor(A, "lu", "A", 1)
    _lu_checks(A, "torch.lu_factor")
    _no_pivot(pivot, "linalg.lu_factor")
    LU, piv, info = apply(LINALG_LU_FACTOR_EX, (A,), (A._data,), (True,))
    if get_infos:
        return LU, piv, info
    return LU, piv              # PyTorch's torch.lu does not refuse singular matrices


def _lu_fwd(a: np.ndarray, pivot: bool) -> tuple:
    m, n = a.shape[-2:]
    lu_, piv, info = _getrf(a)
    L, U = _unpack_np(lu_, m, n)
    # P as int8: not a differentiable output (PyTorch's P does not require grad); the public
    # function casts it to A's dtype
    P = _perm_from_pivots(piv, m).astype(np.int8)
    return P, L, U


def _float_P(P: Tensor, like: Tensor) -> Tensor:
    return _wrap(P._data.astype(like._data.dtype))


def _lu_vjp(ctx, gL, gU):
    (A,) = ctx.saved
    P, L, U = apply(LINALG_LU, (A,), (A._data,), ctx._args)   # the factors, differentiable
    return _lu_grad(A, _float_P(P, A), L, U, gL, gU)


def _lu_jvp(ctx, t):
    A = ctx.inputs[0]
    P, L, U = ctx.result
    tL, tU = _lu_jvp_factors(A, _float_P(P, A), L, U, t)
    return None, tL, tU


LINALG_LU = Op("linalg_lu", "LinalgLuBackward0", _lu_fwd, _lu_vjp, inputs=("A",),
               args=("pivot",), saves=("A",), num_outputs=3, jvp=_lu_jvp)


def lu(A: Tensor, *, pivot: bool = True, out: Any = None) -> Any:
    """(P, L, U) with ``A = P L U``."""
    _check_tensor(A, "linalg_lu")
    _lu_checks(A, "linalg.lu")
    _no_pivot(pivot, "linalg.lu")
    P, L, U = apply(LINALG_LU, (A,), (A._data,), (True,))
    return lu_result(_float_P(P, A), L, U)


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True,
              unpack_pivots: bool = True, out: Any = None) -> Any:
    """(P, L, U) from a packed LU factorization."""
    _check_tensor(LU_data, "lu_unpack", "LU_data", 1)
    _check_tensor(LU_pivots, "lu_unpack", "LU_pivots", 2)
    if LU_pivots._data.dtype != np.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor "
                           "of torch.int32 dtype. Note: this function is intended to be used "
                           "with the output produced by torch.linalg.lu_factor")
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    dt = LU_data._data.dtype
    if unpack_data:
        L, U = apply(LU_UNPACK, (LU_data,), (LU_data._data,), (m, n))
    else:
        L = _wrap(np.empty((0,), dt))
        U = _wrap(np.empty((0,), dt))
    if unpack_pivots:
        P = _wrap(_perm_from_pivots(LU_pivots._data, m).astype(dt))
    else:
        P = _wrap(np.empty((0,), dt))
    return lu_unpack_result(P, L, U)


def _lu_unpack_fwd(lu: np.ndarray, m: int, n: int) -> tuple:
    return _unpack_np(lu, m, n)


def _lu_unpack_vjp(ctx, gL, gU):
    m, n = ctx._args
    out = None
    if gL is not None:
        out = _pad_cols(gL.tril(-1), n)
    if gU is not None:
        gu = _pad_rows(gU.triu(), m)
        out = gu if out is None else out + gu
    return out


def _lu_unpack_jvp(ctx, t):
    m, n = ctx._args
    k = min(m, n)
    return t[..., :, :k].tril(-1), t[..., :k, :].triu()


LU_UNPACK = Op("lu_unpack", "LuUnpackBackward0", _lu_unpack_fwd, _lu_unpack_vjp,
               inputs=("LU_data",), args=("m", "n"), num_outputs=2, jvp=_lu_unpack_jvp)


def _lu_solve_fwd(lu: np.ndarray, b: np.ndarray, piv: Tensor, left: bool,
                  adjoint: bool) -> np.ndarray:
    p = piv._data
    batch = np.broadcast_shapes(lu.shape[:-2], b.shape[:-2], p.shape[:-1])
    n = lu.shape[-1]
    lub = np.broadcast_to(lu, batch + lu.shape[-2:])
    pb = np.broadcast_to(p, batch + p.shape[-1:])
    if not left:   # X A = B  <=>  A^H X^H = B^H
        bb = np.swapaxes(b, -1, -2).conj()
        adj = not adjoint
    else:
        bb, adj = b, adjoint
    bb = np.broadcast_to(bb, batch + bb.shape[-2:])
    trans = (2 if lu.dtype.kind == "c" else 1) if adj else 0
    x = np.empty(bb.shape, np.result_type(lu, b))
    if x.size and n:
        for idx in np.ndindex(*batch):
            x[idx] = _lu_solve_np(lub[idx], pb[idx], bb[idx], trans)
    elif x.size:
        x[...] = 0
    if not left:
        x = np.swapaxes(x, -1, -2).conj()
    return x.astype(lu.dtype, copy=False)


def _lu_solve_vjp(ctx, g):
    LU, X = ctx.saved
    piv, left, adjoint = ctx._args
    gB = _lu_solve_raw(LU, piv, g, left, not adjoint)
    gLU = None
    if ctx.needs_input_grad(0):
        # gradient of A (op(A) = A or A^H), then through A = P L U to the packed factors
        if left:
            gopA = -_lin.matmul(gB, _mH(X))
        else:
            gopA = -_lin.matmul(_mH(X), gB)
        gA = _mH(gopA) if adjoint else gopA
        m = LU.shape[-1]
        P = _wrap(_perm_from_pivots(piv._data, m).astype(LU._data.dtype))
        L, U = _split_lu(LU)
        # dA = P (dL U + L dU):  gL = tril(P^T gA U^H, -1), gU = triu(L^H P^T gA)
        PtgA = _lin.matmul(P.transpose(-1, -2), gA)
        gLU = _lin.matmul(PtgA, _mH(U)).tril(-1) + _lin.matmul(_mH(L), PtgA).triu()
    return gLU, gB if ctx.needs_input_grad(1) else None


def _lu_solve_jvp(ctx, tLU, tB):
    LU, B = ctx.inputs
    X = ctx.result
    piv, left, adjoint = ctx._args
    rhs = tB
    if tLU is not None:
        m = LU.shape[-1]
        P = _wrap(_perm_from_pivots(piv._data, m).astype(LU._data.dtype))
        L, U = _split_lu(LU)
        tA = _lin.matmul(P, _lin.matmul(tLU.tril(-1), U) + _lin.matmul(L, tLU.triu()))
        if adjoint:
            tA = _mH(tA)
        p = _lin.matmul(tA, X) if left else _lin.matmul(X, tA)
        rhs = -p if rhs is None else rhs - p
    return _lu_solve_raw(LU, piv, rhs, left, adjoint)


def _lu_solve_raw(LU: Tensor, piv: Tensor, B: Tensor, left: bool, adjoint: bool) -> Tensor:
    return apply(LINALG_LU_SOLVE, (LU, B), (LU._data, B._data), (piv, left, adjoint))


LINALG_LU_SOLVE = Op("linalg_lu_solve", "LinalgLuSolveBackward0", _lu_solve_fwd, _lu_solve_vjp,
                     inputs=("LU", "B"), args=("pivots", "left", "adjoint"),
                     saves=("LU", "result"), jvp=_lu_solve_jvp)


def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True,
             adjoint: bool = False, out: Any = None) -> Tensor:
    """X with ``A X = B`` from the LU factorization of ``A`` (``left=False``: ``X A = B``;
    ``adjoint``: with ``A^H``)."""
    from ._batching import call, marked
    if marked((LU, B)):
        r = call(lambda a, b: lu_solve(a, pivots, b, left=left, adjoint=adjoint), LU, B)
        if r is not NotImplemented:
            return r
    _check_tensor(LU, "linalg_lu_solve", "LU", 1)
    _check_tensor(pivots, "linalg_lu_solve", "pivots", 2)
    _check_tensor(B, "linalg_lu_solve", "B", 3)
    lu_, b = LU._data, B._data
    fn = "linalg.lu_solve"
    if lu_.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor LU must have at least 2 dimensions.")
    if b.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor B must have at least 2 dimensions.")
    _check_square(LU, fn, "LU")
    k = b.shape[-2] if left else b.shape[-1]
    if k != lu_.shape[-1]:
        raise RuntimeError(f"{fn}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({lu_.shape[-2]}x{lu_.shape[-1]} "
                           f"and {b.shape[-2]}x{b.shape[-1]})")
    if pivots._data.dtype != np.int32:
        raise RuntimeError(f"{fn}: Expected pivots to be integral. Got "
                           f"{scalar_name(pivots._data.dtype)}")
    if lu_.dtype != b.dtype:
        raise RuntimeError(f"{fn}: Expected LU and B to have the same dtype, but found LU of "
                           f"type {scalar_name(lu_.dtype)} and B of type "
                           f"{scalar_name(b.dtype)} instead")
    if pivots._data.shape[-1:] != lu_.shape[-1:] or \
            pivots._data.shape[:-1] != lu_.shape[:-2]:
        raise RuntimeError(f"{fn}: Expected LU.shape[:-1] and pivots.shape to be the same.")
    return apply(LINALG_LU_SOLVE, (LU, B), (lu_, b), (pivots, bool(left), bool(adjoint)))


def lu_solve_old(b: Tensor, LU_data: Tensor, LU_pivots: Tensor, out: Any = None) -> Tensor:
    """``torch.lu_solve(b, LU_data, LU_pivots)``."""
    warn_deprecated("lu_solve")
    return lu_solve(LU_data, LU_pivots, b)


# ---------------------------------------------------------------------------- matrix_exp
def _expm_fwd(a: np.ndarray) -> np.ndarray:
    from scipy.linalg import expm
    if a.size == 0:
        return a.copy()
    # computed in double precision and rounded: float32 results within an ulp or so
    w = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    # its Pade products are SciPy BLAS calls (Note [Single-threaded small SciPy LAPACK calls])
    with _threads_for(a.shape[-1] ** 3):
        r = expm(w)
    return np.asarray(r).astype(a.dtype, copy=False)


def _expm_block(A: Tensor, E: Tensor) -> Tensor:
    """The upper-right block of exp([[A, E], [0, A]]): the derivative of exp at A along E.
    The block matrix is assembled with constant products (``[I; 0] A [I, 0]`` ...), which
    batch like any product."""
    n = A.shape[-1]
    dt = np.result_type(A._data.dtype, E._data.dtype)
    top = _wrap(np.eye(2 * n, n, dtype=dt))           # [I; 0]
    bot = _wrap(np.eye(2 * n, n, -n, dtype=dt))       # [0; I]
    M = _lin.matmul(_lin.matmul(top, A), top.mT) + \
        _lin.matmul(_lin.matmul(top, E), bot.mT) + \
        _lin.matmul(_lin.matmul(bot, A), bot.mT)
    return apply(MATRIX_EXP, (M,), (M._data,))[..., :n, n:]


def _expm_vjp(ctx, g):
    (A,) = ctx.saved
    return _expm_block(_mH(A), g)


def _expm_jvp(ctx, t):
    return _expm_block(ctx.inputs[0], t)


MATRIX_EXP = Op("linalg_matrix_exp", "LinalgMatrixExpBackward0", _expm_fwd, _expm_vjp,
                saves=("self",), jvp=_expm_jvp)


def matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential of a batch of square matrices.

    >>> import ndgrad
    >>> ndgrad.linalg.matrix_exp(ndgrad.zeros(2, 2))
    tensor([[1., 0.],
            [0., 1.]])
    """
    _check_tensor(A, "linalg_matrix_exp")
    _check_float(A, "linalg.matrix_exp", low_ok=True)
    _check_square(A, "linalg.matrix_exp")
    return apply(MATRIX_EXP, (A,), (A._data,))


# ---------------------------------------------------------------------------- norms
def _svdvals(A: Tensor) -> Tensor:
    from .linalg_decomp import svdvals   # linalg_decomp imports this module
    return svdvals(A)


def _dims2(dim: Any, nd: int, fn: str) -> tuple:
    if isinstance(dim, (int, np.integer)) or len(dim) != 2:
        raise RuntimeError(f"{fn}: dim must be a 2-tuple. Got "
                           + " ".join(str(d) for d in (dim if not isinstance(dim, int)
                                                       else [dim])))
    d0, d1 = wrap_dim(dim[0], nd), wrap_dim(dim[1], nd)
    if d0 == d1:
        raise RuntimeError(f"{fn}: dims must be different. Got ({dim[0]}, {dim[1]})")
    return d0, d1


def matrix_norm(A: Tensor, ord: Any = "fro", dim: Any = (-2, -1), keepdim: bool = False, *,
                dtype: Any = None, out: Any = None) -> Tensor:
    """Matrix norm over ``dim``: ``'fro'``, ``'nuc'``, ``inf``, ``-inf``, ``1``, ``-1``, ``2``,
    ``-2``.

    >>> import ndgrad
    >>> ndgrad.linalg.matrix_norm(ndgrad.tensor([[1.0, -2.0], [3.0, 4.0]]), 1).item()
    6.0
    """
    _check_tensor(A, "linalg_matrix_norm")
    fn = "linalg.matrix_norm"
    if A._data.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor A must have at least 2 dimensions.")
    d0, d1 = _dims2(dim, A._data.ndim, fn)
    if dtype is not None:
        A = A.to(dtype)
    d = A._data.dtype
    if d.kind not in "fcV":
        raise RuntimeError(f"{fn}: Expected a floating point or complex tensor as input. Got "
                           f"{scalar_name(d)}")
    if isinstance(ord, str):
        if ord == "fro":
            return _lin.vector_norm(A, 2, (d0, d1), keepdim)
        if ord != "nuc":
            raise RuntimeError(f"{fn}: Order {ord} not supported.")
        ordv = None
    else:
        ordv = float(ord)
        if ordv not in (1.0, -1.0, 2.0, -2.0, float("inf"), float("-inf")):
            raise RuntimeError(f"{fn}: Order {ord} not supported.")
    if (ordv is None or abs(ordv) == 2 or ordv < 0) and (A.shape[d0] == 0 or A.shape[d1] == 0):
        if ordv is None or abs(ordv) == 2:
            pass
        if ordv is not None and ordv < 0 or ordv is None and False:
            raise RuntimeError(f"{fn}: The input tensor A must have non-zero dims when "
                               "computing this norm")
    if ordv is None or abs(ordv) == 2:
        # singular values over the two dims, moved last
        perm = [i for i in range(A.ndim) if i not in (d0, d1)] + [d0, d1]
        s = _svdvals(A.permute(*perm))
        if ordv is None:
            r = s.sum(-1)
        elif ordv > 0:
            r = s.amax(-1)
        else:
            r = s.amin(-1)
        if keepdim:
            for dd in sorted((d0, d1)):
                r = r.unsqueeze(dd)
        return r
    if abs(ordv) == float("inf"):
        d0, d1 = d1, d0
    # |ord| == 1: max/min column sum (over d0), then over d1
    s = _lin.vector_norm(A, 1, (d0,), keepdim)
    if not keepdim and d0 < d1:
        d1 -= 1
    return s.amax(d1, keepdim=keepdim) if ordv > 0 else s.amin(d1, keepdim=keepdim)


def linalg_norm(A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *,
                dtype: Any = None, out: Any = None) -> Tensor:
    """``torch.linalg.norm``: a vector norm (1 dim, or all elements when ``ord`` and ``dim``
    are None) or a matrix norm (2 dims, or a 2-D input with ``ord`` given).

    >>> import ndgrad
    >>> ndgrad.linalg.norm(ndgrad.tensor([3.0, 4.0])).item()
    5.0
    """
    _check_tensor(A, "linalg_norm")
    if dim is not None:
        dims = [dim] if isinstance(dim, (int, np.integer)) else list(dim)
    else:
        dims = None
    if dims is not None and len(dims) == 2 or (dims is None and ord is not None and A.ndim == 2):
        if dims is None:
            dims = [-2, -1]
        return matrix_norm(A, "fro" if ord is None else ord, tuple(dims), keepdim, dtype=dtype)
    if isinstance(ord, str) and (dims is not None and len(dims) == 1 or A.ndim == 1):
        # a matrix norm asked of a vector: matrix_norm's own checks
        if A.ndim < 2:
            raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                               "dimensions.")
        assert dims is not None     # a 2-d or larger A: reached through a one-dim dim
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dims[0]}")
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got "
                           f"{dims}" if dims is not None else
                           "linalg.norm: If dim is not specified but ord is, the input must be 1D "
                           f"or 2D. Got {A.ndim}D.")
    if dims is None and ord is not None and A.ndim != 1:
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be "
                           f"1D or 2D. Got {A.ndim}D.")
    if dims is not None and len(dims) not in (1,):
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got "
                           f"{dims}")
    return _lin.vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)


def cond(A: Tensor, p: Any = None, *, out: Any = None) -> Tensor:
    """Condition number of a batch of matrices in the norm ``p`` (None, 2, -2: from the
    singular values; 'fro', 'nuc', inf, -inf, 1, -1: ``norm(A) * norm(inv(A))``)."""
    _check_tensor(A, "linalg_cond")
    fn = "linalg.cond"
    if A._data.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor A must have at least 2 dimensions.")
    if p is None or (not isinstance(p, str) and abs(float(p)) == 2):
        s = _svdvals(A)
        big, small = s[..., 0], s[..., -1]
        if p is not None and float(p) < 0:
            return small / big
        return big / small
    if isinstance(p, str) and p not in ("fro", "nuc"):
        raise RuntimeError(f"{fn}: Order {p} not supported.")
    if not isinstance(p, str) and float(p) not in (1.0, -1.0, float("inf"), float("-inf")):
        raise RuntimeError(f"{fn}: Order {p} not supported.")
    _check_square(A, fn)
    inv, info = inv_ex(A)
    r = matrix_norm(A, p) * matrix_norm(inv, p)
    bad = info._data > 0
    if bad.any():
        from .pointwise import where
        r = where(_wrap(bad), _wrap(np.asarray(np.inf, r._data.dtype)), r)
    return r


def tensorinv(A: Tensor, ind: int = 2, *, out: Any = None) -> Tensor:
    """The tensor inverse of ``A`` w.r.t. its first ``ind`` dims."""
    _check_tensor(A, "linalg_tensorinv")
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    shape = tuple(A.shape)
    a_shape, b_shape = shape[:ind], shape[ind:]
    p, q = int(np.prod(a_shape)), int(np.prod(b_shape))
    if p != q:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {q} != {p}")
    return linalg_inv(A.reshape(p, q)).reshape(*(b_shape + a_shape))


def tensorsolve(A: Tensor, B: Tensor, dims: Any = None, *, out: Any = None) -> Tensor:
    """X with ``tensordot(A, X, X.ndim) = B``."""
    _check_tensor(A, "linalg_tensorsolve", "A", 1)
    _check_tensor(B, "linalg_tensorsolve", "B", 2)
    if dims is not None:
        nd = A.ndim
        ds = [wrap_dim(d, nd) for d in dims]
        rest = [i for i in range(nd) if i not in ds]
        A = A.permute(*(rest + ds))
    shape = tuple(A.shape)
    nb = B.ndim
    x_shape = shape[nb:]
    p = int(np.prod(shape[:nb]))
    q = int(np.prod(x_shape))
    if p != q:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:"
                           f"]) == prod(self.shape[:other.ndim]), but got {q} != {p}")
    return solve(A.reshape(p, q), B.reshape(p)).view(*x_shape)


def _name_result(op: Op, name: str) -> None:
    """Show the saved result under PyTorch's name (``grad_fn._saved_inverse``)."""
    op.saved_names = tuple(name if n == "result" else n for n in op.saved_names)


for _op, _res in ((LINALG_INV_EX, "inverse"), (LINALG_CHOLESKY_EX, "L"), (LINALG_SLOGDET, "sign"),
                  (TRIANGULAR_SOLVE, "solution"), (LINALG_LU_FACTOR_EX, "LU")):
    _name_result(_op, _res)


def _register() -> None:
    from ._batching import RULES
    for op in (LINALG_INV_EX, LINALG_DET, LINALG_SLOGDET, LINALG_CHOLESKY_EX, CHOLESKY,
               CHOLESKY_INVERSE, MATRIX_EXP, LU_UNPACK):
        RULES[op] = _direct
    for op in (LINALG_SOLVE_EX, LINALG_SOLVE_TRIANGULAR, TRIANGULAR_SOLVE, CHOLESKY_SOLVE,
               LINALG_LU_FACTOR_EX, LINALG_LU, LINALG_LU_SOLVE):
        RULES[op] = per_row


_register()


from ._batching import RULES as _RULES  # noqa: E402 (after the op it maps)

# LAPACK factors every matrix of the leading (batch) dims: the physical batch is one more.
_RULES[LU_FACTORS] = lambda c, args: apply(LU_FACTORS, tuple(c.ts), tuple(c.arrs), args)
