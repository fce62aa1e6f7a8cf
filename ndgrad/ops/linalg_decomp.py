"""Matrix decompositions: QR, SVD, the Hermitian and general eigendecompositions, and what is
built on them (pseudo-inverse, least squares, Householder products, randomized low-rank SVD).

Note [Decomposition derivatives]
Each decomposition is one ``Op`` with several outputs and PyTorch's node (``LinalgQrBackward0``,
``LinalgSvdBackward0``, ``LinalgEighBackward0``, ``LinalgEigBackward0``). The VJP and JVP rules
are the standard analytic ones, derived from the defining identities (``A = Q R``,
``A = U S V^H``, ``A V = V diag(L)``), written with ndgrad ops so that they differentiate again.
Decompositions are unique only up to the signs (phases, for complex numbers) of the singular
vectors and eigenvectors; the rules pick the gauge in which the tangent of each vector is
orthogonal to the vector itself (``Im(v^H dv) = 0``), and like PyTorch the backward refuses a
complex loss that depends on that phase. The rules divide by differences of singular values or
eigenvalues: repeated ones give infinite or NaN gradients, as in PyTorch.

The nodes save their outputs as PyTorch does (``grad_fn._saved_U`` ...): ``_save_outputs``
stores them after ``apply``, since an op's declared ``saves`` can only name its first output.

Example:
    >>> import ndgrad
    >>> a = ndgrad.tensor([[3.0, 0.0], [4.0, 5.0]], requires_grad=True)
    >>> ndgrad.linalg.svdvals(a).sum().backward()
    >>> a.grad.shape
    ndgrad.Size([2, 2])
"""

from __future__ import annotations

from .. import return_types as _rt
from typing import Any, Optional

import numpy as np

from .. import _dtype
from ..autograd.grad_mode import is_grad_enabled
from ..autograd.saved import SavedTensor, SavedValue
from ..tensor import Tensor, _wrap
from . import linalg as _lin
from . import pointwise as _pw
from . import reduction as _red
from . import shape as _sh
from ._deprecations import warn_deprecated
from ._dispatch import Op, apply

__all__ = ["LinAlgError", "qr", "linalg_qr", "svd", "linalg_svd", "svdvals", "eigh",
           "eigvalsh", "eig", "eigvals", "pinv", "pinverse", "lstsq", "householder_product",
           "ormqr", "geqrf", "svd_lowrank", "pca_lowrank", "matrix_rank",
           "ldl_factor", "ldl_factor_ex", "ldl_solve", "nuclear_norm"]


try:   # one class for the whole namespace: the solvers' module defines it when present
    from .linalg_solve import LinAlgError
except ImportError:
    class LinAlgError(RuntimeError):  # type: ignore[no-redef]
        """A linear algebra computation failed (PyTorch's ``torch.linalg.LinAlgError``)."""

    LinAlgError.__module__ = "ndgrad.linalg"

# PyTorch's named tuples (torch.return_types.*)
QRResult = _rt.linalg_qr
SVDResult = _rt.linalg_svd
SVDOldResult = _rt.svd
EighResult = _rt.linalg_eigh
EigResult = _rt.linalg_eig
LstsqResult = _rt.linalg_lstsq
GeqrfResult = _rt.geqrf
QROldResult = _rt.qr


# ---------------------------------------------------------------------------- helpers
def _np_dt(t: Tensor) -> np.dtype:
    return t._data.dtype


def _is_c(t: Tensor) -> bool:
    return t._data.dtype.kind == "c"


def _mm(a: Tensor, b: Tensor) -> Tensor:
    if a._data.dtype != b._data.dtype:
        a, b = _same(a, b)
    return _lin.matmul(a, b)


def _same(a: Tensor, b: Tensor) -> tuple:
    """Both operands in their common (complex if either is) dtype."""
    da, db = a._data.dtype, b._data.dtype
    if da == db:
        return a, b
    dt = np.result_type(da, db)
    t = _dtype._FROM_NP[dt]
    return (a if da == dt else a.to(t)), (b if db == dt else b.to(t))


def _mT(x: Tensor) -> Tensor:
    return _sh.transpose(x, -2, -1)


def _mH(x: Tensor) -> Tensor:
    return _pw.conj(_sh.transpose(x, -2, -1))


def _eye(n: int, dt: np.dtype) -> Tensor:
    return _wrap(np.eye(n, dtype=dt))


def _diag(x: Tensor) -> Tensor:
    # the diagonal as a masked sum, so that batched backward (which lacks a rule for diagonal
    # views) runs through it
    n = x._data.shape[-1]
    return _red.sum(x * _eye(n, x._data.dtype), (-1,))


def _diag_embed(v: Tensor) -> Tensor:
    n = v._data.shape[-1]
    return _sh.unsqueeze(v, -1) * _eye(n, v._data.dtype)


def _re(x: Tensor) -> Tensor:
    """The real part, in x's (complex) dtype."""
    return (x + _pw.conj(x)) * 0.5 if _is_c(x) else x


def _i_im(x: Tensor) -> Tensor:
    """``i * Im(x)`` in x's complex dtype."""
    return (x - _pw.conj(x)) * 0.5


def _inv_gaps(lam: Tensor) -> Tensor:
    """``F[..., i, j] = 1 / (lam_j - lam_i)`` off the diagonal, 0 on it."""
    n = lam._data.shape[-1]
    e = _eye(n, lam._data.dtype)
    diff = _sh.unsqueeze(lam, -2) - _sh.unsqueeze(lam, -1)
    return _pw.reciprocal(diff + e) * (1 - e)


def _cols(x: Tensor, a: int, b: Optional[int] = None) -> Tensor:
    n = x._data.shape[-1]
    b = n if b is None else b
    return _sh.narrow(x, -1, a, b - a)


def _rows(x: Tensor, a: int, b: Optional[int] = None) -> Tensor:
    n = x._data.shape[-2]
    b = n if b is None else b
    return _sh.narrow(x, -2, a, b - a)


def _zeros(shape: tuple, dt: np.dtype) -> Tensor:
    return _wrap(np.zeros(shape, dt))


def _save_outputs(op: Op, results: tuple, values: tuple) -> None:
    """Store the node's saved values (see the module docstring): ``values`` holds, per name of
    ``op.saved_names``, an output index (int), ``("input", tensor)`` or ``("arg", value)``."""
    node = None
    for r in results:
        fn = r._grad_fn
        if fn is not None and getattr(type(fn), "_op", None) is op:
            node = fn
            break
    if node is None:
        return
    saved: list = []
    for v in values:
        if type(v) is int:
            saved.append(SavedTensor(results[v], True, v))
        elif v[0] == "input":
            saved.append(SavedTensor(v[1]))
        else:
            saved.append(SavedValue(v[1]))
    node._saved = tuple(saved)
    if any(r._fw_grads for r in results):
        # the saved outputs share the outputs' tangents, as apply arranges for saves it makes
        from ..autograd import forward_ad   # local import: forward_ad is API (see test_layering)
        forward_ad._share_with_saved_result(node, results)


def _declare_saved(op: Op, names: tuple) -> Op:
    op.saved_names = tuple(names)
    op.save_idx = ()
    return op


def _torch_type(dt: np.dtype) -> str:
    return {"float64": "Double", "float32": "Float", "float16": "Half", "bfloat16": "BFloat16",
            "complex64": "ComplexFloat", "complex128": "ComplexDouble", "int64": "Long",
            "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool"}.get(_dtype._FROM_NP[np.dtype(dt)].name, str(dt))


_LAPACK_DTYPES = frozenset(np.dtype(d) for d in (np.float32, np.float64, np.complex64,
                                                  np.complex128))


def _check_input(A: Any, fn: str, kernel: Optional[str] = None, name: str = "A",
                 low_precision_kernel: Optional[str] = None) -> np.ndarray:
    """PyTorch's checks of a matrix argument: at least 2-D, a floating point or complex dtype
    (``kernel``: the dtype error is NotImplementedError of that kernel, as for eigh)."""
    if not isinstance(A, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position 1) must be Tensor, not "
                        f"{type(A).__name__}")
    a = A._data
    dt = a.dtype
    if dt not in _LAPACK_DTYPES:
        is_float = dt.kind == "f" or dt == _dtype.bfloat16.np
        if kernel is not None and (not is_float or low_precision_kernel is None):
            if a.ndim < 2 and fn.startswith("linalg."):
                raise RuntimeError(f"{fn}: The input tensor {name} must have at least 2 "
                                   "dimensions.")
            raise NotImplementedError(f'"{kernel}" not implemented for \'{_torch_type(dt)}\'')
        if not is_float:
            raise RuntimeError(f"{fn}: Expected a floating point or complex tensor as input. "
                               f"Got {_torch_type(dt)}")
    if a.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor {name} must have at least 2 dimensions.")
    if dt not in _LAPACK_DTYPES:
        raise NotImplementedError(f'"{low_precision_kernel}" not implemented for '
                                  f"'{_torch_type(dt)}'")
    return a


def _check_square(a: np.ndarray, fn: str, name: str = "A") -> None:
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{fn}: {name} must be batches of square matrices, but they are "
                           f"{a.shape[-2]} by {a.shape[-1]} matrices")


def _needs_grad(*ts: Tensor) -> bool:
    return is_grad_enabled() and any(t.requires_grad for t in ts)


# ---------------------------------------------------------------------------- solves
# Private helpers of the backward rules (X = A^{-1} B and its triangular form); they are ops of
# their own so that the rules using them differentiate again.
def _solve_fwd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.size == 0 or b.size == 0:
        return np.zeros(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:],
                        np.result_type(a, b))
    return np.linalg.solve(a, b)


def _solve_vjp(ctx, g):
    a, x = ctx.saved
    gb = _solve(_mH(a), g)
    ga = -_mm(gb, _mH(x)) if ctx.needs_input_grad(0) else None
    return ga, gb


def _solve_jvp(ctx, da, db):
    a, b = ctx.inputs
    x = ctx.result
    rhs = db if db is not None else None
    if da is not None:
        t = _mm(da, x)
        rhs = -t if rhs is None else rhs - t
    return _solve(a, rhs)


SOLVE = Op("linalg_solve", "LinalgSolveExBackward0", _solve_fwd, _solve_vjp, inputs=("A", "B"),
           saves=("A", "result"), jvp=_solve_jvp)


def _solve(a: Tensor, b: Tensor) -> Tensor:
    a, b = _same(a, b)
    return apply(SOLVE, (a, b), (a._data, b._data))


def _tri_fwd(a: np.ndarray, b: np.ndarray, upper: bool) -> np.ndarray:
    return _solve_fwd(np.triu(a) if upper else np.tril(a), b)


def _tri_vjp(ctx, g):
    a, x = ctx.saved
    upper = ctx._args[0]
    gb = _trisolve(_mH(a), g, not upper)
    ga = None
    if ctx.needs_input_grad(0):
        ga = -_mm(gb, _mH(x))
        ga = _sh.triu(ga) if upper else _sh.tril(ga)
    return ga, gb


def _tri_jvp(ctx, da, db):
    a, b = ctx.inputs
    x = ctx.result
    upper = ctx._args[0]
    rhs = db
    if da is not None:
        t = _mm(_sh.triu(da) if upper else _sh.tril(da), x)
        rhs = -t if rhs is None else rhs - t
    return _trisolve(a, rhs, upper)


TRISOLVE = Op("linalg_solve_triangular", "LinalgSolveTriangularBackward0", _tri_fwd, _tri_vjp,
              inputs=("self", "B"), args=("upper",), saves=("self", "result"), jvp=_tri_jvp)


def _trisolve(a: Tensor, b: Tensor, upper: bool) -> Tensor:
    a, b = _same(a, b)
    return apply(TRISOLVE, (a, b), (a._data, b._data), (bool(upper),))


def _right_inv_h(z: Tensor, r: Tensor) -> Tensor:
    """``z R^{-H}`` for upper triangular ``R``."""
    return _mH(_trisolve(r, _mH(z), True))


def _right_inv(z: Tensor, r: Tensor) -> Tensor:
    """``z R^{-1}`` for upper triangular ``R``."""
    return _mH(_trisolve(_mH(r), _mH(z), False))


# ---------------------------------------------------------------------------- QR
def _qr_fwd(a: np.ndarray, mode: str) -> tuple:
    m, n = a.shape[-2:]
    r: Any
    if mode == "r":
        if a.size == 0:
            r = np.zeros(a.shape[:-2] + (min(m, n), n), a.dtype)
        else:
            r = np.linalg.qr(a, mode="r")
        return np.zeros((0,), a.dtype), np.ascontiguousarray(r, dtype=a.dtype)
    if a.size == 0:
        k = m if mode == "complete" else min(m, n)
        q = np.broadcast_to(np.eye(m, k, dtype=a.dtype), a.shape[:-2] + (m, k)).copy()
        return q, np.zeros(a.shape[:-2] + (k, n), a.dtype)
    q, r = np.linalg.qr(a, mode=mode)  # type: ignore[call-overload]  # mode: one of NumPy's
    return q.astype(a.dtype, copy=False), r.astype(a.dtype, copy=False)


def _qr_check_mode(ctx_args, m: int, n: int) -> None:
    mode = ctx_args[0]
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when "
                           "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going "
                           "to differentiate through linalg.qr.")
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and "
                           "nrows > ncols.")


def _qr_core_vjp(q: Tensor, r: Tensor, gq: Tensor, gr: Tensor) -> Tensor:
    """VJP of ``A = Q R`` for m >= n (R square)."""
    m_ = _mm(r, _mH(gr)) - _mm(_mH(gq), q)
    low = _sh.tril(m_, -1)
    g = low + _mH(low) + _diag_embed(_re(_diag(m_)))
    return _right_inv_h(gq + _mm(q, g), r)


def _qr_vjp(ctx, gq, gr):
    q, r, _ = ctx.saved
    m, n = ctx.input_shape(0)[-2:]
    _qr_check_mode(ctx._args, m, n)
    if m >= n:
        return _qr_core_vjp(q, r, gq, gr)
    u, v = _cols(r, 0, m), _cols(r, m)
    gu, gv = _cols(gr, 0, m), _cols(gr, m)
    y = _mm(q, v)
    gx = _qr_core_vjp(q, u, gq + _mm(y, _mH(gv)), gu)
    gy = _mm(q, gv)
    return _sh.cat([gx, gy], -1)


def _qr_core_jvp(q: Tensor, r: Tensor, da: Tensor) -> tuple:
    w = _right_inv(da, r)
    x = _mm(_mH(q), w)
    low = _sh.tril(x, -1)
    d = _diag(x)
    xc = _sh.triu(x, 1) + _mH(low) + _diag_embed(_re(d))      # X - C, C = Q^H dQ
    return w - _mm(q, xc), _mm(xc, r)


def _qr_jvp(ctx, da):
    q, r = ctx.result
    m, n = ctx.input_shape(0)[-2:]
    _qr_check_mode(ctx._args, m, n)
    da, _ = _same(da, q)
    if m >= n:
        return _qr_core_jvp(q, r, da)
    u, v = _cols(r, 0, m), _cols(r, m)
    dq, du = _qr_core_jvp(q, u, _cols(da, 0, m))
    y = _mm(q, v)
    dv = _mm(_mH(dq), y) + _mm(_mH(q), _cols(da, m))
    return dq, _sh.cat([du, dv], -1)


QR = _declare_saved(Op("linalg_qr", "LinalgQrBackward0", _qr_fwd, _qr_vjp, inputs=("A",),
                       args=("mode",), num_outputs=2, jvp=_qr_jvp), ("Q", "R", "mode"))


def _linalg_qr(A: Tensor, mode: str, fn: str) -> tuple:
    a = _check_input(A, "linalg.qr", None, "A", "geqrf_cpu")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    q, r = apply(QR, (A,), (a,), (mode,))
    _save_outputs(QR, (q, r), (0, 1, ("arg", mode)))
    return q, r


def linalg_qr(A: Tensor, mode: str = "reduced") -> Any:
    """The QR decomposition ``A = Q R`` (``mode``: ``'reduced'``, ``'complete'`` or ``'r'``,
    which returns an empty Q), as ``torch.linalg.qr``.

    >>> import ndgrad
    >>> q, r = ndgrad.linalg.qr(ndgrad.tensor([[3.0, 1.0], [4.0, 2.0]]))
    >>> (q @ r).round(decimals=4).tolist()
    [[3.0, 1.0], [4.0, 2.0]]
    """
    return QRResult(*_linalg_qr(A, mode, "linalg.qr"))


def qr(input: Tensor, some: bool = True) -> tuple:
    """``torch.qr``: the QR decomposition, reduced if ``some`` else complete."""
    warn_deprecated("qr")
    return QROldResult(*_linalg_qr(input, "reduced" if some else "complete", "qr"))


# ---------------------------------------------------------------------------- SVD
_SVD_ILL = ("linalg.svd: The algorithm failed to converge because the input matrix is "
            "ill-conditioned or has too many repeated singular values.")


# Note [Non-finite linalg input]
# torch's CPU SVD and Hermitian eigendecomposition hand non-finite input to LAPACK (gesdd,
# syevd/heevd) and report what it reports: gesdd refuses NaN (torch's "contained non-finite
# values" error, "(Batch element k): " first for a batch) and returns NaN factors for
# infinities; syevd returns NaN eigenvalues (and what it computed of the rest: a NaN on the
# diagonal of a diagonal matrix leaves the other eigenpairs exact). NumPy raises instead, so
# the matrices with non-finite entries go to SciPy's LAPACK wrappers with the same drivers.
def _svd_np(a: np.ndarray, full_matrices: bool, compute_uv: bool = True) -> Any:
    """``np.linalg.svd(a)`` with torch's errors and non-finite input handled as LAPACK's gesdd
    (Note [Non-finite linalg input])."""
    if np.isfinite(a).all():
        try:
            return np.linalg.svd(a, full_matrices=full_matrices,  # type: ignore[call-overload]
                                 compute_uv=compute_uv)
        except np.linalg.LinAlgError:
            raise LinAlgError(_SVD_ILL) from None
    import scipy.linalg
    batch = a.shape[:-2]
    flat = a.reshape((-1,) + a.shape[-2:])
    outs = []
    for i, m in enumerate(flat):
        if np.isnan(m).any():
            raise LinAlgError((f"linalg.svd: (Batch element {i}): " if batch else "linalg.svd: ")
                              + "The algorithm failed to converge because the input matrix "
                              "contained non-finite values.")
        try:
            if np.isfinite(m).all():
                outs.append(np.linalg.svd(m, full_matrices=full_matrices,  # type: ignore[call-overload]
                                          compute_uv=compute_uv))
            else:
                outs.append(scipy.linalg.svd(m, full_matrices=full_matrices,
                                             compute_uv=compute_uv, check_finite=False,
                                             lapack_driver="gesdd"))
        except (np.linalg.LinAlgError, ValueError):
            raise LinAlgError(_SVD_ILL) from None
    if not compute_uv:
        return np.stack(outs).reshape(batch + outs[0].shape)
    return tuple(np.stack([o[j] for o in outs]).reshape(batch + outs[0][j].shape)
                 for j in range(3))


def _eigh_np(a: np.ndarray, uplo: str) -> tuple:
    """``np.linalg.eigh(a, uplo)`` with torch's error, non-finite entries of the triangle read
    handled as LAPACK's syevd (Note [Non-finite linalg input])."""
    try:
        if np.isfinite(a).all() or np.isfinite(np.tril(a) if uplo == "L" else np.triu(a)).all():
            return np.linalg.eigh(a, UPLO=uplo)  # type: ignore[call-overload]  # "L" or "U"
        import scipy.linalg
        batch = a.shape[:-2]
        flat = a.reshape((-1,) + a.shape[-2:])
        outs = [scipy.linalg.eigh(m, lower=uplo == "L", check_finite=False, driver="evd")
                for m in flat]
        return (np.stack([o[0] for o in outs]).reshape(batch + outs[0][0].shape),
                np.stack([o[1] for o in outs]).reshape(batch + outs[0][1].shape))
    except (np.linalg.LinAlgError, ValueError):
        raise LinAlgError("linalg.eigh: The algorithm failed to converge because the input "
                          "matrix is ill-conditioned or has too many repeated eigenvalues "
                          "(error code: 1).") from None


def _svd_fwd(a: np.ndarray, full_matrices: bool) -> tuple:
    m, n = a.shape[-2:]
    k = min(m, n)
    rdt = np.empty(0, a.dtype).real.dtype
    if a.size == 0:
        b = a.shape[:-2]
        mu = m if full_matrices else k
        nv = n if full_matrices else k
        u = np.broadcast_to(np.eye(m, mu, dtype=a.dtype), b + (m, mu)).copy()
        vh = np.broadcast_to(np.eye(nv, n, dtype=a.dtype), b + (nv, n)).copy()
        return u, np.zeros(b + (k,), rdt), vh
    u, s, vh = _svd_np(a, full_matrices)
    return u.astype(a.dtype, copy=False), s.astype(rdt, copy=False), vh.astype(a.dtype,
                                                                                copy=False)


def _gauge_check(j_diag: np.ndarray, what: str) -> None:
    im = np.abs(np.imag(j_diag))
    if im.size and not np.all(im <= 1e-5 * max(1.0, float(np.abs(j_diag).max()))):
        if what == "svd":
            raise RuntimeError("svd_backward: The singular vectors in the complex case are "
                               "specified up to multiplication by e^{i phi}. The specified loss "
                               "function depends on this phase term, making it ill-defined.")
        raise RuntimeError(f"{what}: The eigenvectors in the complex case are specified up to "
                           "multiplication by e^{i phi}. The specified loss function depends on "
                           "this quantity, so it is ill-defined.")


def _svd_vjp(ctx, gu, gs, gvh):
    s, u, vh = ctx.saved[:3]
    m, n = ctx.input_shape(0)[-2:]
    k = min(m, n)
    dt = ctx.input_dtype(0)
    if u._data.shape[-1] != k:
        u, gu = _cols(u, 0, k), _cols(gu, 0, k)
    if vh._data.shape[-2] != k:
        vh, gvh = _rows(vh, 0, k), _rows(gvh, 0, k)
    cplx = dt.kind == "c"
    j = _mm(_mH(u), gu)
    kk = _mm(vh, _mH(gvh))
    if cplx:
        _gauge_check(np.diagonal(j._data, 0, -2, -1) + np.diagonal(kk._data, 0, -2, -1), "svd")
    f = _inv_gaps(s * s)
    s_row = _sh.unsqueeze(s, -2)
    s_col = _sh.unsqueeze(s, -1)
    inner = (f * (j - _mH(j))) * s_row + s_col * (f * (kk - _mH(kk))) + _diag_embed(gs)
    if cplx:
        # the phase term, split evenly between U and V (equal to i Im(diag J) / S for a
        # gauge-invariant loss; the even split keeps the rule invariant, which its own
        # derivative relies on)
        inner = inner + _diag_embed(_diag(_i_im(j - kk)) / (2 * s))
    ga = _mm(_mm(u, inner), vh)
    if m > k:
        ga = ga + _mm((gu - _mm(u, j)) / s_row, vh)
    if n > k:
        ga = ga + _mm(u, (gvh - _mm(_mH(kk), vh)) / s_col)
    return ga


def _svd_jvp(ctx, da):
    u_f, s, vh_f = ctx.result
    full = ctx._args[0]
    m, n = ctx.input_shape(0)[-2:]
    k = min(m, n)
    dt = ctx.input_dtype(0)
    if k == 0:
        return (_zeros(u_f._data.shape, dt), _zeros(s._data.shape, s._data.dtype),
                _zeros(vh_f._data.shape, dt))
    u, vh = _cols(u_f, 0, k), _rows(vh_f, 0, k)
    v = _mH(vh)
    dp = _mm(_mm(_mH(u), da), v)
    ds = _pw.real_part(_diag(dp))
    f = _inv_gaps(s * s)
    s_row = _sh.unsqueeze(s, -2)
    s_col = _sh.unsqueeze(s, -1)
    om_u = f * (dp * s_row + s_col * _mH(dp))
    om_v = f * (s_col * dp + _mH(dp) * s_row)
    if dt.kind == "c":
        om_u = om_u + _diag_embed(_diag(_i_im(dp)) / s)
    du = _mm(u, om_u)
    dv = _mm(v, om_v)
    if m > k:
        du = du + (_mm(da, v) - _mm(u, dp)) / s_row
    if n > k:
        dv = dv + (_mm(_mH(da), u) - _mm(v, _mH(dp))) / s_row
    if full and m > k:
        u2 = _cols(u_f, k)
        du = _sh.cat([du, -_mm(u, _mm(_mH(du), u2))], -1)
    if full and n > k:
        v2 = _mH(_rows(vh_f, k))
        dv = _sh.cat([dv, -_mm(v, _mm(_mH(dv), v2))], -1)
    return du, ds, _mH(dv)


SVD = _declare_saved(Op("linalg_svd", "LinalgSvdBackward0", _svd_fwd, _svd_vjp, inputs=("A",),
                        args=("full_matrices",), num_outputs=3, jvp=_svd_jvp),
                     ("S", "U", "Vh", "full_matrices", "S_sym_argsize_minus_1"))


def _svd(A: Tensor, full_matrices: bool, fn: str = "linalg.svd") -> tuple:
    a = _check_input(A, fn, None, "A", "linalg_svd_cpu")
    u, s, vh = apply(SVD, (A,), (a,), (bool(full_matrices),))
    _save_outputs(SVD, (u, s, vh), (1, 0, 2, ("arg", bool(full_matrices)),
                                    ("arg", s._data.shape[-1])))
    return u, s, vh


def linalg_svd(A: Tensor, full_matrices: bool = True, *, driver: Optional[str] = None) -> tuple:
    """The singular value decomposition ``A = U diag(S) Vh`` (``torch.linalg.svd``).

    >>> import ndgrad
    >>> ndgrad.linalg.svd(ndgrad.tensor([[3.0, 0.0], [0.0, -4.0]])).S.tolist()
    [4.0, 3.0]
    """
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on "
                           "CUDA inputs with cuSOLVER backend.")
    return SVDResult(*_svd(A, full_matrices))


def svdvals(A: Tensor, *, driver: Optional[str] = None) -> Tensor:
    """The singular values of ``A``, in descending order (``torch.linalg.svdvals``)."""
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on "
                           "CUDA inputs with cuSOLVER backend.")
    return _svd(A, False)[1]


def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> tuple:
    """``torch.svd``: ``(U, S, V)`` with ``input = U diag(S) V^H``; ``compute_uv=False`` gives
    zero U and V (no gradient)."""
    if isinstance(input, Tensor) and input._data.ndim < 2:
        raise RuntimeError(f"linalg.svd: input should have at least 2 dimensions, but has "
                           f"{input._data.ndim} dimensions instead")
    if not compute_uv:
        u, s, vh = _svd(input, False)
        a = input._data
        m, n = a.shape[-2:]
        return SVDOldResult(_zeros(a.shape[:-2] + (m, m), a.dtype), s,
                            _zeros(a.shape[:-2] + (n, n), a.dtype))
    u, s, vh = _svd(input, not some)
    return SVDOldResult(u, s, _mH(vh))


# ---------------------------------------------------------------------------- eigh
def _eigh_fwd(a: np.ndarray, uplo: str) -> tuple:
    rdt = np.empty(0, a.dtype).real.dtype
    if a.size == 0:
        n = a.shape[-1]
        return np.zeros(a.shape[:-1], rdt), np.zeros(a.shape[:-2] + (n, n), a.dtype)
    w, v = _eigh_np(a, uplo)
    return w.astype(rdt, copy=False), v.astype(a.dtype, copy=False)


def _eigh_vjp(ctx, gl, gv):
    lam, v = ctx.saved[:2]
    j = _mm(_mH(v), gv)
    if _is_c(v):
        _gauge_check(np.diagonal(j._data, 0, -2, -1), "linalg_eigh_backward")
    f = _inv_gaps(lam)
    inner = f * (j - _mH(j)) * 0.5 + _diag_embed(gl)
    return _mm(_mm(v, inner), _mH(v))


def _eigh_jvp(ctx, da):
    lam, v = ctx.result
    if v._data.size == 0:
        return _zeros(lam._data.shape, lam._data.dtype), _zeros(v._data.shape, v._data.dtype)
    da, _ = _same(da, v)
    p = _mm(_mm(_mH(v), da), v)
    dl = _pw.real_part(_diag(p))
    return dl, _mm(v, _inv_gaps(lam) * p)


EIGH = _declare_saved(Op("linalg_eigh", "LinalgEighBackward0", _eigh_fwd, _eigh_vjp,
                         inputs=("A",), args=("UPLO",), num_outputs=2, jvp=_eigh_jvp),
                      ("eigenvalues", "eigenvectors"))


def _eigh(A: Tensor, UPLO: str, fn: str) -> tuple:
    a = _check_input(A, "linalg.eigh", "linalg_eigh_cpu")
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    _check_square(a, "linalg.eigh")
    lam, v = apply(EIGH, (A,), (a,), (UPLO.upper(),))
    _save_outputs(EIGH, (lam, v), (0, 1))
    return lam, v


def eigh(A: Tensor, UPLO: str = "L") -> tuple:
    """Eigenvalues (ascending) and orthonormal eigenvectors of a Hermitian matrix, read from its
    lower (``UPLO='L'``) or upper triangle (``torch.linalg.eigh``).

    >>> import ndgrad
    >>> ndgrad.linalg.eigh(ndgrad.tensor([[2.0, 1.0], [1.0, 2.0]])).eigenvalues.tolist()
    [1.0, 3.0]
    """
    return EighResult(*_eigh(A, UPLO, "linalg.eigh"))


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """The eigenvalues of a Hermitian matrix, ascending (``torch.linalg.eigvalsh``)."""
    return _eigh(A, UPLO, "linalg.eigvalsh")[0]


# ---------------------------------------------------------------------------- eig
def _complex_of(dt: np.dtype) -> np.dtype:
    return np.dtype(np.complex64) if dt in (np.float32, np.complex64) else np.dtype(
        np.complex128)


def _eig_fwd(a: np.ndarray) -> tuple:
    cdt = _complex_of(a.dtype)
    if a.size == 0:
        n = a.shape[-1]
        return np.zeros(a.shape[:-1], cdt), np.zeros(a.shape[:-2] + (n, n), cdt)
    w, v = np.linalg.eig(a)
    return w.astype(cdt, copy=False), v.astype(cdt, copy=False)


def _eig_vjp(ctx, gl, gv):
    lam, v = ctx.saved[:2]
    vh = _mH(v)
    jv = _mm(vh, gv)
    _gauge_check(np.diagonal(jv._data, 0, -2, -1), "linalg_eig_backward")
    w = _mm(vh, v)
    gx = jv - _mm(w, _diag_embed(_re(_diag(jv))))
    gp = _pw.conj(_inv_gaps(lam)) * gx + _diag_embed(gl)
    return _solve(vh, _mm(gp, vh))


def _eig_jvp(ctx, da):
    lam, v = ctx.result
    if v._data.size == 0:
        return _zeros(lam._data.shape, lam._data.dtype), _zeros(v._data.shape, v._data.dtype)
    p = _solve(v, _mm(da, v))
    x = _inv_gaps(lam) * p
    w = _mm(_mH(v), v)
    dv = _mm(v, x - _diag_embed(_re(_diag(_mm(w, x)))))
    return _diag(p), dv


EIG = _declare_saved(Op("linalg_eig", "LinalgEigBackward0", _eig_fwd, _eig_vjp, inputs=("A",),
                        num_outputs=2, jvp=_eig_jvp), ("eigenvalues", "eigenvectors"))


def _eig(A: Tensor, fn: str) -> tuple:
    if not isinstance(A, Tensor):
        raise TypeError(f"{fn.replace('.', '_')}(): argument 'input' (position 1) must be "
                        f"Tensor, not {type(A).__name__}")
    a = A._data
    if a.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor A must have at least 2 dimensions.")
    if a.dtype not in _LAPACK_DTYPES:
        if a.dtype.kind == "f" or a.dtype == _dtype.bfloat16.np:
            raise NotImplementedError(f'"linalg_eig_out_cpu" not implemented for '
                                      f"'{_torch_type(a.dtype)}'")
        raise RuntimeError(f"Unknown Complex ScalarType for {_torch_type(a.dtype)}")
    _check_square(a, "linalg.eig")
    if not np.isfinite(a).all():
        raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or NaNs.")
    lam, v = apply(EIG, (A,), (a,))
    _save_outputs(EIG, (lam, v), (0, 1))
    return lam, v


def eig(A: Tensor) -> tuple:
    """Eigenvalues and eigenvectors (unit norm, complex) of a square matrix
    (``torch.linalg.eig``).

    >>> import ndgrad
    >>> ndgrad.linalg.eig(ndgrad.tensor([[2.0, 0.0], [0.0, 3.0]])).eigenvalues
    tensor([2.+0.j, 3.+0.j])
    """
    return EigResult(*_eig(A, "linalg.eig"))


def eigvals(A: Tensor) -> Tensor:
    """The eigenvalues of a square matrix, complex (``torch.linalg.eigvals``)."""
    return _eig(A, "linalg.eigvals")[0]


# ---------------------------------------------------------------------------- pinv
def _pinv_fwd(a: np.ndarray, atol: Any, rtol: Any, hermitian: bool) -> np.ndarray:
    m, n = a.shape[-2:]
    if a.size == 0:
        return np.zeros(a.shape[:-2] + (n, m), a.dtype)
    rdt = np.empty(0, a.dtype).real.dtype
    if hermitian:
        w, v = _eigh_np(a, "L")
        sv = np.abs(w)
    else:
        u, sv, vh = _svd_np(a, False)
    thr = _threshold(sv, atol, rtol, m, n)
    if hermitian:
        keep = sv > thr
        winv = np.where(keep, 1.0 / np.where(keep, w, 1.0), 0.0).astype(rdt)
        p = (v * winv[..., None, :]) @ np.conj(np.swapaxes(v, -1, -2))
    else:
        keep = sv > thr
        sinv = np.where(keep, 1.0 / np.where(keep, sv, 1.0), 0.0).astype(rdt)
        p = np.conj(np.swapaxes(vh, -1, -2)) * sinv[..., None, :] @ np.conj(
            np.swapaxes(u, -1, -2))
    return p.astype(a.dtype, copy=False)


def _threshold(sv: np.ndarray, atol: Any, rtol: Any, m: int, n: int) -> np.ndarray:
    """``max(atol, rtol * largest singular value)`` per matrix, with PyTorch's defaults
    (``rtol = eps * max(m, n)`` unless a positive ``atol`` is given)."""
    rdt = sv.dtype
    smax = sv.max(axis=-1, keepdims=True) if sv.shape[-1] else np.zeros(sv.shape[:-1] + (1,))
    at = 0.0 if atol is None else _tol_array(atol)
    if rtol is None:
        rt = (np.finfo(rdt).eps * max(m, n)) if atol is None or _is_zero(atol) else 0.0
    else:
        rt = _tol_array(rtol)
    return np.maximum(at, rt * smax)


def matrix_rank(A: Tensor, tol: Any = None, hermitian: bool = False, *, atol: Any = None,
                rtol: Any = None) -> Tensor:
    """The numerical rank: the number of singular values (absolute eigenvalues if
    ``hermitian``) above ``max(atol, rtol * largest)`` (``torch.linalg.matrix_rank``; the old
    ``tol`` is ``atol`` with ``rtol = 0``). Not differentiable.

    >>> import ndgrad
    >>> ndgrad.linalg.matrix_rank(ndgrad.tensor([[1.0, 2.0], [2.0, 4.0]])).item()
    1
    """
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg_matrix_rank(): argument 'input' (position 1) must be Tensor, "
                        f"not {type(A).__name__}")
    a = A._data
    if a.dtype not in _LAPACK_DTYPES:
        raise RuntimeError("This function doesn't handle types other than float and double")
    if a.ndim < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least 2 "
                           "dimensions.")
    if tol is not None:
        atol, rtol = tol, 0.0
    m, n = a.shape[-2:]
    rdt = np.empty(0, a.dtype).real.dtype
    if a.size == 0:
        return _wrap(np.zeros(a.shape[:-2], np.int64))
    if hermitian:
        _check_square(a, "linalg.eigh")
        sv = np.abs(_eigh_np(a, "L")[0]).astype(rdt)
    else:
        sv = _svd_np(a, False, compute_uv=False).astype(rdt)
    thr = _threshold(sv, atol, rtol, m, n)
    return _wrap(np.sum(sv > thr, axis=-1).astype(np.int64))


def _tol_array(t: Any) -> Any:
    if isinstance(t, Tensor):
        return t._data[..., None] if t._data.ndim else float(t._data)
    return float(t)


def _is_zero(t: Any) -> bool:
    return not isinstance(t, Tensor) and float(t) == 0.0


def _pinv_vjp_formula(a: Tensor, p: Tensor, g: Tensor) -> Tensor:
    """VJP of ``P = pinv(A)`` (for A of locally constant rank)."""
    m, n = a._data.shape[-2:]
    ph = _mH(p)
    gh = _mH(g)
    ga = -_mm(_mm(ph, g), ph)
    # (I - A P) g^H P P^H  +  P^H P g^H (I - P A)
    t1 = _mm(gh, _mm(p, ph))
    ga = ga + t1 - _mm(a, _mm(p, t1))
    t2 = _mm(_mm(ph, p), gh)
    ga = ga + t2 - _mm(_mm(t2, p), a)
    return ga


def _pinv_jvp_formula(a: Tensor, p: Tensor, da: Tensor) -> Tensor:
    ph = _mH(p)
    dah = _mH(da)
    dp = -_mm(_mm(p, da), p)
    t1 = _mm(_mm(p, ph), dah)
    dp = dp + t1 - _mm(_mm(t1, a), p)
    t2 = _mm(dah, _mm(ph, p))
    dp = dp + t2 - _mm(p, _mm(a, t2))
    return dp


def _pinv_vjp(ctx, g):
    a, p = ctx.saved
    return _pinv_vjp_formula(a, p, g)


def _pinv_jvp(ctx, da):
    return _pinv_jvp_formula(ctx.inputs[0], ctx.result, da)


PINV = Op("linalg_pinv", "LinalgPinvBackward0", _pinv_fwd, _pinv_vjp, inputs=("self",),
          args=("atol", "rtol", "hermitian"), saves=("self", "result"), jvp=_pinv_jvp)


def pinv(A: Tensor, rcond: Any = None, hermitian: bool = False, *, atol: Any = None,
         rtol: Any = None) -> Tensor:
    """The Moore-Penrose pseudo-inverse (``torch.linalg.pinv``): singular values at most
    ``max(atol, rtol * largest)`` are treated as zero (``rtol`` defaults to ``eps * max(m, n)``
    when neither is given, else 0). The positional ``rcond`` (PyTorch's older overload) is
    ``rtol``.

    >>> import ndgrad
    >>> ndgrad.linalg.pinv(ndgrad.tensor([[2.0, 0.0], [0.0, 0.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.0]]
    """
    if rcond is not None:
        rtol = rcond
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg_pinv(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(A).__name__}")
    a = A._data
    if a.ndim < 2 or a.dtype not in _LAPACK_DTYPES:
        raise RuntimeError(f"linalg.pinv({_torch_type(a.dtype)}{{{list(a.shape)}}}): expected a "
                           "tensor with 2 or more dimensions of float, double, cfloat or cdouble "
                           "types")
    if hermitian:
        _check_square(a, "linalg.eigh")
    for t in (atol, rtol):
        if isinstance(t, Tensor) and t._data.dtype.kind == "c":
            raise RuntimeError("linalg.pinv: atol and rtol must not be complex")
    return apply(PINV, (A,), (a,), (atol, rtol, bool(hermitian)))


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """``torch.pinverse``: ``linalg.pinv(input, rtol=rcond)``."""
    return pinv(input, rtol=rcond)


# ---------------------------------------------------------------------------- lstsq
_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _lstsq_fwd(a: np.ndarray, b: np.ndarray, rcond: Optional[float], driver: str) -> tuple:
    import scipy.linalg
    m, n = a.shape[-2:]
    k = b.shape[-1]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + (m, n))
    b = np.broadcast_to(b, batch + (m, k))
    x = np.zeros(batch + (n, k), a.dtype)
    rdt = np.empty(0, a.dtype).real.dtype
    ranks = np.zeros(batch, np.int64)
    svs = np.zeros(batch + (min(m, n),), rdt)
    if rcond is None:
        rcond = np.finfo(rdt).eps * max(m, n)
    if a.size and b.size:
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            # LAPACK's drivers fail on them in PyTorch too (an MKL parameter error, an internal
            # assert, zeros or NaN by driver); ndgrad says what is wrong instead of leaking
            # SciPy's check_finite ValueError
            raise RuntimeError("torch.linalg.lstsq: the input contains infinities or NaNs: "
                               "the least squares solution could not be computed")
        for idx in np.ndindex(*batch):
            if driver == "gels":
                sol, _, rk, sv = np.linalg.lstsq(a[idx], b[idx], rcond=None)
            else:
                sol, _, rk, sv = scipy.linalg.lstsq(a[idx], b[idx], cond=rcond,
                                                    lapack_driver=driver)
            x[idx] = sol
            ranks[idx] = rk
            if sv is not None and driver != "gels":
                svs[idx] = sv
    elif a.size:
        ranks[...] = np.linalg.matrix_rank(a) if a.size else 0
    res_ok = m > n and driver != "gelsy" and bool(np.all(ranks == n))
    if res_ok:
        r = a @ x - b
        res = np.sum(np.abs(r) ** 2, axis=-2).astype(rdt)
    else:
        res = np.zeros((0,), rdt)
    return x, res, ranks, svs


def _lstsq_vjp(ctx, gx, gres):
    b, a, x = ctx.saved
    p = pinv(a)
    need_a, need_b = ctx.needs_input_grad(0), ctx.needs_input_grad(1)
    gb = _mm(_mH(p), gx) if need_b else None
    ga = _pinv_vjp_formula(a, p, _mm(gx, _mH(b))) if need_a else None
    if gres._data.size:
        # residuals ||A X - B||^2 per column: A^H (A X - B) = 0 at the solution, so only the
        # explicit dependence on A and B remains
        r = _mm(a, x) - b
        gr = r * _sh.unsqueeze(gres, -2) * 2
        if need_a:
            ga = ga + _mm(gr, _mH(x))
        if need_b:
            gb = gb - gr
    return ga, gb


def _lstsq_jvp(ctx, da, db):
    a, b = ctx.inputs
    x, res = ctx.result
    p = pinv(a)
    dx = None
    if da is not None:
        dx = _mm(_pinv_jvp_formula(a, p, da), b)
    if db is not None:
        t = _mm(p, db)
        dx = t if dx is None else dx + t
    if not res._data.size:
        return dx, _zeros(res._data.shape, res._data.dtype)
    r = _mm(a, x) - b
    dr = None
    if da is not None:
        dr = _mm(da, x)
    if db is not None:
        dr = -db if dr is None else dr - db
    dres = _red.sum(_pw.real_part(_pw.conj(r) * dr), (-2,)) * 2
    return dx, dres


LSTSQ = Op("linalg_lstsq", "LinalgLstsqBackward0",
           lambda a, b, rcond, driver: _lstsq_fwd(a, b, rcond, driver)[:2], _lstsq_vjp,
           inputs=("self", "b"), args=("rcond", "driver"), num_outputs=2, jvp=_lstsq_jvp)
_declare_saved(LSTSQ, ("b", "self", "solution"))


def lstsq(A: Tensor, B: Tensor, rcond: Optional[float] = None, *,
          driver: Optional[str] = None) -> tuple:
    """Least-squares solution of ``A X = B`` (``torch.linalg.lstsq``): returns ``(solution,
    residuals, rank, singular_values)``, the last three computed as the ``driver`` does
    (``'gelsy'`` by default). Only the solution is differentiable.

    >>> import ndgrad
    >>> a = ndgrad.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    >>> ndgrad.linalg.lstsq(a, ndgrad.tensor([[1.0], [2.0], [3.0]])).solution.tolist()
    [[1.0], [2.0]]
    """
    for t, nm, pos in ((A, "self", 1), (B, "b", 2)):
        if not isinstance(t, Tensor):
            raise TypeError(f"linalg_lstsq(): argument '{nm}' (position {pos}) must be Tensor, "
                            f"not {type(t).__name__}")
    a, b = A._data, B._data
    if a.dtype not in _LAPACK_DTYPES or b.dtype not in _LAPACK_DTYPES:
        raise RuntimeError("This function doesn't handle types other than float and double")
    if a.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if b.ndim < 1:
        raise RuntimeError("torch.linalg.lstsq: other must have at least 1 dimension.")
    if a.dtype != b.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same "
                           f"dtype, but got input's dtype {_dtype._FROM_NP[a.dtype]._torch_name}"
                           f" and other's dtype {_dtype._FROM_NP[b.dtype]._torch_name}")
    vector = b.ndim == a.ndim - 1
    if vector:
        if a.shape[-2] != b.shape[-1]:
            raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-1)")
        B = _sh.unsqueeze(B, -1)
        b = B._data
    elif a.shape[-2] != b.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    if driver is None:
        driver = "gelsy"
    if driver not in _DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of "
                           "(gels, gelsy, gelsd, gelss)")
    try:
        np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise RuntimeError(f"The size of tensor a ({a.shape[-3]}) must match the size of tensor b "
                           f"({b.shape[-3]}) at non-singleton dimension 0") from None
    x, res = apply(LSTSQ, (A, B), (a, b), (rcond, driver))
    _save_outputs(LSTSQ, (x, res), (("input", B), ("input", A), 0))
    full: Any = _lstsq_fwd(a, b, rcond, driver) if driver != "gels" else None
    rdt = np.empty(0, a.dtype).real.dtype
    if driver == "gels":
        rank = _wrap(np.zeros((0,), np.int64))
    else:
        rank = _wrap(np.asarray(full[2], np.int64))
    if driver in ("gelsd", "gelss"):
        sv = _wrap(np.asarray(full[3], rdt))
    else:
        sv = _wrap(np.zeros((0,), rdt))
    if vector:
        x = _sh.squeeze(x, -1)
    return LstsqResult(x, res, rank, sv)


# ---------------------------------------------------------------------------- Householder
def _hh_vectors_np(a: np.ndarray, k: int) -> list:
    m = a.shape[-2]
    vs = []
    for i in range(k):
        v = np.zeros(a.shape[:-2] + (m,), a.dtype)
        v[..., i] = 1
        v[..., i + 1:] = a[..., i + 1:, i]
        vs.append(v)
    return vs


def _hh_fwd(a: np.ndarray, tau: np.ndarray, ncols: Optional[int] = None) -> np.ndarray:
    """``H_1 ... H_k`` applied to the first ``ncols`` columns of the identity."""
    m, n = a.shape[-2:]
    ncols = n if ncols is None else ncols
    k = tau.shape[-1]
    batch = np.broadcast_shapes(a.shape[:-2], tau.shape[:-1])
    y = np.broadcast_to(np.eye(m, ncols, dtype=a.dtype), batch + (m, ncols)).copy()
    for i, v in reversed(list(enumerate(_hh_vectors_np(a, k)))):
        t = tau[..., i][..., None, None]
        w = np.conj(v)[..., None, :] @ y
        y = y - t * (v[..., :, None] * w)
    return y


def _below(m: int, i: int, dt: np.dtype) -> Tensor:
    """The mask of the entries below ``i`` of a length-``m`` vector."""
    return _wrap((np.arange(m) > i).astype(dt))


def _unit(m: int, i: int, dt: np.dtype) -> Tensor:
    e = np.zeros(m, dt)
    e[i] = 1
    return _wrap(e)


def _hh_vector(a: Tensor, i: int) -> Tensor:
    """Householder vector ``i`` of ``a``: 1 at ``i``, column ``i`` of ``a`` below it (built with
    pointwise ops, which batched backward handles)."""
    m = a._data.shape[-2]
    dt = a._data.dtype
    return _sh.select(a, -1, i) * _below(m, i, dt) + _unit(m, i, dt)


def _hh_product(a: Tensor, tau: Tensor, ncols: int) -> list:
    """The Householder recurrence with ndgrad ops: ``ys[i] = H_i ... H_k E`` (``ys[k] = E``)."""
    m = a._data.shape[-2]
    k = tau._data.shape[-1]
    batch = np.broadcast_shapes(a._data.shape[:-2], tau._data.shape[:-1])
    e = _wrap(np.broadcast_to(np.eye(m, ncols, dtype=a._data.dtype), batch + (m, ncols)).copy())
    ys: list = [None] * (k + 1)
    ys[k] = e
    y = e
    for i in range(k - 1, -1, -1):
        v = _hh_vector(a, i)
        t = _sh.unsqueeze(_sh.unsqueeze(_sh.select(tau, -1, i), -1), -1)
        w = _mm(_sh.unsqueeze(_pw.conj(v), -2), y)
        y = y - t * (_sh.unsqueeze(v, -1) * w)
        ys[i] = y
    return ys


def _hh_vjp_core(a: Tensor, tau: Tensor, g: Tensor, ncols: int, need_a: bool,
                 need_tau: bool) -> tuple:
    m, n = a._data.shape[-2:]
    k = tau._data.shape[-1]
    if k == 0 or a._data.size == 0 or g._data.size == 0:
        return None, None
    ys = _hh_product(a, tau, ncols)
    gy = g
    ga = gt = None
    for i in range(k):
        v = _hh_vector(a, i)
        t = _sh.unsqueeze(_sh.unsqueeze(_sh.select(tau, -1, i), -1), -1)
        y_next = ys[i + 1]
        vc = _sh.unsqueeze(v, -1)
        vr = _sh.unsqueeze(_pw.conj(v), -2)
        gyy = _mm(gy, _mH(y_next))              # gY Y'^H
        if need_a and i + 1 < m:
            gv = -_pw.conj(t) * _mm(gyy, vc) - t * _mm(_mH(gyy), vc)
            col = _sh.unsqueeze(_sh.squeeze(gv, -1) * _below(m, i, gv._data.dtype), -1)
            term = col * _unit(n, i, gv._data.dtype)
            ga = term if ga is None else ga + term
        if need_tau:
            gti = -_sh.squeeze(_sh.squeeze(_mm(_mm(vr, gyy), vc), -1), -1)
            term = _sh.unsqueeze(gti, -1) * _unit(k, i, gti._data.dtype)
            gt = term if gt is None else gt + term
        gy = gy - _pw.conj(t) * _mm(vc, _mm(vr, gy))  # H_i^H gY
    if need_a and ga is None:
        ga = _zeros(a._data.shape, g._data.dtype)
    return ga, gt


def _hh_vjp(ctx, g):
    a, tau, _ = ctx.saved
    return _hh_vjp_core(a, tau, g, a._data.shape[-1], ctx.needs_input_grad(0),
                        ctx.needs_input_grad(1))


def _hh_jvp_core(a: Tensor, tau: Tensor, da: Optional[Tensor], dtau: Optional[Tensor],
                 ncols: int) -> Tensor:
    m = a._data.shape[-2]
    k = tau._data.shape[-1]
    ys = _hh_product(a, tau, ncols)
    if da is None:
        da = _zeros(a._data.shape, a._data.dtype)
    if dtau is None:
        dtau = _zeros(tau._data.shape, tau._data.dtype)
    dy = _zeros(ys[k]._data.shape, ys[k]._data.dtype)
    for i in range(k - 1, -1, -1):
        v = _hh_vector(a, i)
        dv = _sh.select(da, -1, i) * _below(m, i, da._data.dtype)
        t = _sh.unsqueeze(_sh.unsqueeze(_sh.select(tau, -1, i), -1), -1)
        dt_ = _sh.unsqueeze(_sh.unsqueeze(_sh.select(dtau, -1, i), -1), -1)
        y_next = ys[i + 1]
        vc, dvc = _sh.unsqueeze(v, -1), _sh.unsqueeze(dv, -1)
        vr, dvr = _sh.unsqueeze(_pw.conj(v), -2), _sh.unsqueeze(_pw.conj(dv), -2)
        w = _mm(vr, y_next)
        dw = _mm(dvr, y_next) + _mm(vr, dy)
        dy = dy - dt_ * (vc * w) - t * (dvc * w) - t * (vc * dw)
    return dy


def _hh_jvp(ctx, da, dtau):
    a, tau = ctx.inputs
    return _hh_jvp_core(a, tau, da, dtau, a._data.shape[-1])


HOUSEHOLDER = Op("linalg_householder_product", "LinalgHouseholderProductBackward0",
                 lambda a, tau: _hh_fwd(a, tau), _hh_vjp, inputs=("input", "tau"),
                 saves=("input", "tau", "result"), jvp=_hh_jvp)


def _hh_checks(a: np.ndarray, tau: np.ndarray, fn: str, kernel: str) -> None:
    if a.ndim < 2:
        raise RuntimeError(f"{fn}: input must have at least 2 dimensions.")
    if a.dtype not in _LAPACK_DTYPES:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_torch_type(a.dtype)}\'')
    if tau.ndim != a.ndim - 1:
        raise RuntimeError(f"{fn}: Expected tau to have one dimension less than input, but got "
                           f"tau.ndim equal to {tau.ndim} and input.ndim is equal to {a.ndim}")
    if a.dtype != tau.dtype:
        raise RuntimeError(f"{fn}: tau dtype {_dtype._FROM_NP[tau.dtype]._torch_name} does not "
                           f"match input dtype {_dtype._FROM_NP[a.dtype]._torch_name}")


def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first n columns of ``H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^H`` with ``v_i`` stored
    below the diagonal of column ``i`` of ``A`` (``torch.linalg.householder_product``).

    >>> import ndgrad
    >>> a = ndgrad.tensor([[1.0, 0.0], [1.0, 1.0]])
    >>> ndgrad.linalg.householder_product(a, ndgrad.tensor([1.0, 0.0])).tolist()
    [[0.0, -1.0], [-1.0, 0.0]]
    """
    for arg, nm, pos in ((A, "input", 1), (tau, "tau", 2)):
        if not isinstance(arg, Tensor):
            raise TypeError(f"linalg_householder_product(): argument '{nm}' (position {pos}) "
                            f"must be Tensor, not {type(arg).__name__}")
    a, t = A._data, tau._data
    fn = "torch.linalg.householder_product"
    _hh_checks(a, t, fn, "orgqr_cpu")
    if a.shape[-2] < a.shape[-1]:
        raise RuntimeError(f"{fn}: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if a.shape[-1] < t.shape[-1]:
        raise RuntimeError(f"{fn}: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    if a.shape[:-2] != t.shape[:-1]:
        raise RuntimeError(f"{fn}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(t.shape[:-1])}")
    return apply(HOUSEHOLDER, (A, tau), (a, t))


def _ormqr_fwd(a: np.ndarray, tau: np.ndarray, c: np.ndarray, left: bool,
               transpose: bool) -> np.ndarray:
    q = _hh_fwd(a, tau, a.shape[-2])
    if transpose:
        q = np.conj(np.swapaxes(q, -1, -2))
    return q @ c if left else c @ q


def _ormqr_vjp(ctx, g):
    tau, c, a, left, transpose = ctx.saved[:5]
    m = a._data.shape[-2]
    q = _hh_product(a, tau, m)[0]
    qo = _mH(q) if transpose else q
    gc = None
    if ctx.needs_input_grad(2):
        gc = _mm(_mH(qo), g) if left else _mm(g, _mH(qo))
    ga = gt = None
    if ctx.needs_input_grad(0) or ctx.needs_input_grad(1):
        gqo = _mm(g, _mH(c)) if left else _mm(_mH(c), g)
        gq = _mH(gqo) if transpose else gqo
        ga, gt = _hh_vjp_core(a, tau, gq, m, ctx.needs_input_grad(0), ctx.needs_input_grad(1))
    return ga, gt, gc


def _no_forward_ad(name: str):
    def jvp(ctx, *tangents):
        raise NotImplementedError(
            f"Trying to use forward AD with {name} that does not support it because it has not "
            "been implemented yet.\nPlease file an issue to PyTorch at "
            "https://github.com/pytorch/pytorch/issues/new?template=feature-request.yml so that "
            "we can prioritize its implementation or submit a PR adding the implementation to "
            "derivatives.yaml")
    return jvp


# PyTorch has no forward-mode rule for ormqr (nor geqrf): they raise its error.
_ormqr_jvp = _no_forward_ad("ormqr")


ORMQR = Op("ormqr", "OrmqrBackward0", _ormqr_fwd, _ormqr_vjp, inputs=("self", "input2",
                                                                       "input3"),
           args=("left", "transpose"), saves=("input2", "input3", "self", "left", "transpose",
                                              "result"), jvp=_ormqr_jvp)


def ormqr(input: Tensor, input2: Tensor, input3: Tensor, left: bool = True,
          transpose: bool = False) -> Tensor:
    """``Q @ input3`` (or ``input3 @ Q``, ``Q^H`` if ``transpose``) for the full Householder
    product ``Q`` of ``(input, input2)`` (``torch.ormqr``)."""
    for arg, nm, pos in ((input, "input", 1), (input2, "input2", 2), (input3, "input3", 3)):
        if not isinstance(arg, Tensor):
            raise TypeError(f"ormqr(): argument '{nm}' (position {pos}) must be Tensor, not "
                            f"{type(arg).__name__}")
    a, t, c = input._data, input2._data, input3._data
    fn = "torch.ormqr"
    if a.ndim < 2:
        raise RuntimeError(f"{fn}: input must have at least 2 dimensions.")
    if c.ndim != a.ndim:
        raise RuntimeError(f"{fn}: input.dim() must be equal to other.dim(), but got "
                           f"{a.ndim} and {c.ndim}")
    if t.ndim != a.ndim - 1:
        raise RuntimeError(f"{fn}: input.dim() - tau.dim() should be 1, but got "
                           f"{a.ndim - t.ndim}")
    side = c.shape[-2] if left else c.shape[-1]
    if t.shape[-1] != min(side, a.shape[-1]):
        raise RuntimeError(f"{fn}: tau.shape[-1] must be equal to min(other.shape[-2], "
                           "input.shape[-1])")
    if a.shape[-2] != side:
        raise RuntimeError(f"{fn}: other.shape[{-2 if left else -1}] must be equal to "
                           "input.shape[-2]")
    _hh_checks(a, t, fn, "ormqr_cpu")
    if c.dtype != a.dtype:
        raise RuntimeError(f"{fn}: other dtype {_dtype._FROM_NP[c.dtype]._torch_name} does not "
                           f"match input dtype {_dtype._FROM_NP[a.dtype]._torch_name}")
    return apply(ORMQR, (input, input2, input3), (a, t, c), (bool(left), bool(transpose)))


def _geqrf_fwd(a: np.ndarray) -> tuple:
    import scipy.linalg
    m, n = a.shape[-2:]
    out = np.zeros(a.shape, a.dtype)
    tau = np.zeros(a.shape[:-2] + (min(m, n),), a.dtype)
    if a.size:
        for idx in np.ndindex(*a.shape[:-2]):
            (qr_, t), _ = scipy.linalg.qr(a[idx], mode="raw")
            out[idx] = qr_
            tau[idx] = t
    return out, tau


def _geqrf_vjp(ctx, *gs):
    raise NotImplementedError("the derivative for 'geqrf' is not implemented.")


GEQRF = Op("geqrf", "GeqrfBackward0", _geqrf_fwd, _geqrf_vjp, num_outputs=2,
           jvp=_no_forward_ad("geqrf"))


def geqrf(input: Tensor) -> tuple:
    """LAPACK's compact QR (``torch.geqrf``): R on and above the diagonal, the Householder
    vectors below it, and their scalars ``tau``. Not differentiable."""
    if not isinstance(input, Tensor):
        raise TypeError(f"geqrf(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    a = input._data
    if a.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if a.dtype not in _LAPACK_DTYPES:
        raise NotImplementedError(f'"geqrf_cpu" not implemented for \'{_torch_type(a.dtype)}\'')
    if a.dtype.kind == "c" and _needs_grad(input):
        raise RuntimeError("geqrf does not support automatic differentiation for outputs with "
                           "complex dtype.")
    return GeqrfResult(*apply(GEQRF, (input,), (a,)))


def nuclear_norm(A: Tensor, dims: tuple, keepdim: bool = False) -> Tensor:
    """The sum of the singular values of the matrices spanned by ``dims`` (``torch.norm(A,
    'nuc', dim)``): a composite of a permutation, svdvals and a sum, as PyTorch records it."""
    from ._util import wrap_dim
    n = A._data.ndim
    d0, d1 = wrap_dim(dims[0], n), wrap_dim(dims[1], n)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dims[0]}, "
                           f"{dims[1]})")
    rest = [d for d in range(n) if d not in (d0, d1)]
    perm = tuple(rest) + (d0, d1)
    s = svdvals(_sh.permute(A, perm))
    r = _red.sum(s, (-1,))
    if keepdim:
        for d in sorted((d0, d1)):
            r = _sh.unsqueeze(r, d)
    return r


# ---------------------------------------------------------------------------- LDL
# Bunch-Kaufman LDL^T (LAPACK's sytrf/hetrf, lower triangle) and its solve. PyTorch has no
# derivative for them: a NotImplemented node whose backward raises.
LDLFactorResult = _rt.linalg_ldl_factor
LDLFactorExResult = _rt.linalg_ldl_factor_ex


def _lapack(name: str, dt: np.dtype) -> Any:
    import scipy.linalg.lapack as lp
    prefix = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}[dt.name]
    return getattr(lp, prefix + name)


def _ldl_fwd(a: np.ndarray, hermitian: bool) -> tuple:
    ld = np.zeros(a.shape, a.dtype)
    piv = np.zeros(a.shape[:-1], np.int32)
    info = np.zeros(a.shape[:-2], np.int32)
    if a.size:
        f = _lapack("hetrf" if hermitian and a.dtype.kind == "c" else "sytrf", a.dtype)
        for idx in np.ndindex(*a.shape[:-2]):
            l_, p_, i_ = f(a[idx], lower=1)
            ld[idx] = np.tril(l_)
            piv[idx] = p_
            info[idx] = i_
    return ld, piv, info


def _no_derivative(name: str):
    def vjp(ctx, *gs):
        raise RuntimeError(f"derivative for aten::{name} is not implemented")
    return vjp


def _jvp_not_implemented(name: str):
    def jvp(ctx, *tangents):
        raise NotImplementedError(f"Trying to use forward AD with {name} that does not support "
                                  "it.")
    return jvp


LDL_FACTOR = Op("linalg_ldl_factor_ex", "NotImplemented", _ldl_fwd,
                _no_derivative("linalg_ldl_factor_ex"), args=("hermitian",), num_outputs=3,
                jvp=_jvp_not_implemented("aten::linalg_ldl_factor_ex"),
                full_name="torch::autograd::NotImplemented")


def _ldl_solve_fwd(ld: np.ndarray, b: np.ndarray, pivots: Tensor, hermitian: bool) -> np.ndarray:
    piv = pivots._data
    batch = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2], piv.shape[:-1])
    ld = np.broadcast_to(ld, batch + ld.shape[-2:])
    bb = np.broadcast_to(b, batch + b.shape[-2:])
    piv = np.broadcast_to(piv, batch + piv.shape[-1:])
    out = np.zeros(batch + b.shape[-2:], b.dtype)
    if out.size:
        f = _lapack("hetrs" if hermitian and b.dtype.kind == "c" else "sytrs", b.dtype)
        for idx in np.ndindex(*batch):
            out[idx] = f(ld[idx], piv[idx], bb[idx], lower=1)[0]
    return out


LDL_SOLVE = Op("linalg_ldl_solve", "NotImplemented", _ldl_solve_fwd,
               _no_derivative("linalg_ldl_solve"), inputs=("LD", "B"),
               args=("pivots", "hermitian"), jvp=_jvp_not_implemented("aten::linalg_ldl_solve"),
               full_name="torch::autograd::NotImplemented")


def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False) -> tuple:
    """``(LD, pivots, info)``: the compact LDL^T factorization of a symmetric (Hermitian if
    ``hermitian``) matrix, as LAPACK's sytrf returns it (``torch.linalg.ldl_factor_ex``)."""
    fn = "torch.linalg.ldl_factor_ex"
    a = _check_input(A, fn, None, "A", "ldl_factor_kernel_cpu")
    _check_square(a, fn)
    ld, piv, info = apply(LDL_FACTOR, (A,), (a,), (bool(hermitian),))
    if check_errors and np.any(info._data != 0):
        raise LinAlgError(f"{fn}: Unknown error code: {int(info._data.max())}.")
    return LDLFactorExResult(ld, piv, info)


def ldl_factor(A: Tensor, *, hermitian: bool = False) -> tuple:
    """``(LD, pivots)`` of ``torch.linalg.ldl_factor`` (see ``ldl_factor_ex``).

    >>> import ndgrad
    >>> ndgrad.linalg.ldl_factor(ndgrad.tensor([[4.0, 2.0], [2.0, 3.0]])).LD.tolist()
    [[4.0, 0.0], [0.5, 2.0]]
    """
    ld, piv, info = ldl_factor_ex(A, hermitian=hermitian)
    if np.any(info._data != 0):
        raise RuntimeError(f"torch.linalg.ldl_factor: Unknown error code: "
                           f"{int(info._data.max())}.")
    return LDLFactorResult(ld, piv)


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False) -> Tensor:
    """Solve ``A X = B`` from ``ldl_factor``'s ``(LD, pivots)`` (``torch.linalg.ldl_solve``)."""
    ld, b = LD._data, B._data
    if ld.ndim < 2:
        raise RuntimeError("torch.linalg.ldl_solve: The input tensor LD must have at least 2 "
                           "dimensions.")
    if b.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{max(b.ndim, 1)}"
                         f", {max(b.ndim, 1) - 1}], but got -2)")
    _check_square(ld, "torch.linalg.ldl_solve", "LD")
    if b.dtype != ld.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{_torch_type(b.dtype)} and A of type {_torch_type(ld.dtype)} "
                           "instead.")
    if b.shape[-2] != ld.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for torch.linalg.ldl_solve: each A matrix "
                           f"is {ld.shape[-2]} by {ld.shape[-1]} but each b matrix is "
                           f"{b.shape[-2]} by {b.shape[-1]}")
    if pivots._data.dtype.kind not in "iu":
        raise RuntimeError("torch.linalg.ldl_solve: Expected LD.shape[:-1] and pivots.shape to "
                           "be the same, and pivots to be an integer tensor")
    return apply(LDL_SOLVE, (LD, B), (ld, b), (_wrap(pivots._data.astype(np.int32)),
                                               bool(hermitian)))


# ---------------------------------------------------------------------------- low rank
def _approx_basis(a: Tensor, q: int, niter: int, m_: Optional[Tensor]) -> Tensor:
    from .._creation import randn
    n = a._data.shape[-1]
    dt = _dtype._FROM_NP[a._data.dtype]
    r = randn(*(a._data.shape[:-2] + (n, q)), dtype=dt)
    x = _mm(a, r)
    if m_ is not None:
        x = x - _mm(m_, r)
    qm = linalg_qr(x).Q
    for _ in range(niter):
        x = _mm(_mH(a), qm)
        if m_ is not None:
            x = x - _mm(_mH(m_), qm)
        qm = linalg_qr(x).Q
        x = _mm(a, qm)
        if m_ is not None:
            x = x - _mm(m_, qm)
        qm = linalg_qr(x).Q
    return qm


def svd_lowrank(A: Tensor, q: Optional[int] = 6, niter: int = 2,
                M: Optional[Tensor] = None) -> tuple:
    """Randomized rank-``q`` SVD ``(U, S, V)`` of ``A - M`` (``torch.svd_lowrank``; Halko,
    Martinsson and Tropp's range finder with ``niter`` subspace iterations)."""
    q = 6 if q is None else q
    m, n = A._data.shape[-2:]
    if M is not None and M._data.shape != A._data.shape:
        M = _sh.expand(M, A._data.shape)
    if m < n:
        # A^H = Q Ub S Vbh gives A = Vbh^H S (Q Ub)^H
        ah = _mH(A)
        mh = _mH(M) if M is not None else None
        qm = _approx_basis(ah, q, niter, mh)
        b = _mm(_mH(qm), ah)
        if mh is not None:
            b = b - _mm(_mH(qm), mh)
        ub, s, vbh = linalg_svd(b, full_matrices=False)
        return _mH(vbh), s, _mm(qm, ub)
    qm = _approx_basis(A, q, niter, M)
    b = _mm(_mH(qm), A)
    if M is not None:
        b = b - _mm(_mH(qm), M)
    u, s, vh = linalg_svd(b, full_matrices=False)
    return _mm(qm, u), s, _mH(vh)


def pca_lowrank(A: Tensor, q: Optional[int] = None, center: bool = True,
                niter: int = 2) -> tuple:
    """Principal components of ``A`` through a randomized SVD (``torch.pca_lowrank``)."""
    m, n = A._data.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)="
                         f"{min(m, n)}")
    if niter < 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return svd_lowrank(A, q, niter=niter)
    c = _red.mean(A, (-2,), True)
    return svd_lowrank(A - c, q, niter=niter)


# ---------------------------------------------------------------------------- batching
def _expand_rule(c, args):
    from ._batching import _arr, _batch_expand
    ts = [t if b else _batch_expand(t, c.B) for t, b in zip(c.ts, c.bd)]
    return apply(c.op, tuple(ts), tuple(_arr(t, a) for t, a in zip(ts, c.arrs)), args)


def _register() -> None:
    from ._batching import RULES
    for op in (SOLVE, TRISOLVE, QR, SVD, EIGH, EIG, PINV, LSTSQ, HOUSEHOLDER, ORMQR, GEQRF,
               LDL_FACTOR):
        RULES[op] = _expand_rule


_register()
