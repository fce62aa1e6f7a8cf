"""``ndgrad.lobpcg``: a few extreme eigenpairs of a symmetric (generalized) eigenproblem.

Note [lobpcg]
torch.lobpcg finds the ``k`` largest (or smallest) eigenpairs of ``A x = lambda B x`` with
Knyazev's locally optimal block preconditioned conjugate gradient, starting from a block ``X``
of ``n`` columns (``torch.randn((m, n))`` per matrix when not given: ndgrad draws the same
numbers, so the generator stream stays in step). ndgrad runs SciPy's LOBPCG
(``scipy.sparse.linalg.lobpcg``, a sparse COO ``A`` or ``B`` handed over as a SciPy sparse
matrix) in float64 and returns the eigenvalues in torch's order (descending for ``largest``,
ascending otherwise) and B-orthonormal eigenvectors; SciPy switches to a dense eigensolver for
problems too small for a block of ``n`` (``m < 5 n``). The eigenpairs agree with torch's to the
convergence tolerance; an eigenvector's sign is arbitrary in both. ``method``, ``tracker`` and
the ``ortho_*`` parameters tune torch's own iteration and are accepted and not used.

When ``A`` (or ``B``) requires grad, ``A`` is symmetrized as ``(A + A^T) / 2`` first, so its
gradient is symmetric, and the backward is the eigendecomposition's, restricted to the ``k``
computed pairs (torch's limitations: no sparse or complex input, no ``B``): for eigenvalue
gradients ``gD`` and eigenvector gradients ``gU``,
``U (diag(gD) + (U^T gU) * F) U^T + sum_i (lambda_i - A)^+ (I - U U^T) gU_i u_i^T`` with
``F_ij = 1 / (lambda_j - lambda_i)``; the pseudo-inverse on the complement of ``span(U)`` is a
solve with ``(lambda_i - A)(I - U U^T) + U U^T``. It is written with ndgrad ops, so it is
itself differentiable.

Example:
    >>> import ndgrad
    >>> A = ndgrad.diag(ndgrad.arange(1.0, 13.0, dtype=ndgrad.float64))
    >>> X0 = ndgrad.eye(12, 2, dtype=ndgrad.float64) + 0.1
    >>> E, X = ndgrad.lobpcg(A, k=2, X=X0)
    >>> [round(e, 6) for e in E.tolist()]
    [12.0, 11.0]
"""

from __future__ import annotations

import warnings
from typing import Any, Optional

import numpy as np

from . import _creation, _dtype, linalg
from .autograd.function import Function
from .tensor import Tensor, _wrap

__all__ = ["lobpcg"]

_CPP = {"float32": "float", "float64": "double", "int64": "long int", "int32": "int",
        "int16": "short int", "int8": "signed char", "uint8": "unsigned char", "bool": "bool",
        "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


def _cpp(d: _dtype.dtype) -> str:
    return _CPP.get(d.name, d.name)


def _matrix(t: Tensor, m: int) -> Any:
    """A SciPy sparse matrix for a 2-D sparse COO tensor, else the float64 ndarray."""
    if getattr(t, "is_sparse", False) and t.dim() == 2:
        import scipy.sparse
        c = t.coalesce()
        idx = c._indices()._data
        return scipy.sparse.csr_matrix((c._values()._data.astype(np.float64),
                                        (idx[0], idx[1])), shape=(m, m))
    return np.asarray(t._data, dtype=np.float64)


def _one(a: Any, b: Any, x: np.ndarray, ik: Any, niter: int, tol: float,
         largest: bool) -> tuple:
    from scipy.sparse.linalg import lobpcg as sp_lobpcg
    maxiter = niter if niter >= 0 else 1 << 30
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            e, v = sp_lobpcg(a, np.array(x, dtype=np.float64), B=b, M=ik, tol=tol,
                             maxiter=max(maxiter, 1), largest=largest)
        except ValueError as exc:    # a rank-deficient start: torch's Cholesky of X^T B X fails
            if "Linearly dependent" not in str(exc):
                raise
            raise linalg.LinAlgError(
                "linalg.cholesky: The factorization could not be completed because the input is "
                "not positive-definite.") from None
    if not _converged(a, b, e, v, tol):
        e, v = _dense(a, b, x.shape[1], largest)
    order = np.argsort(-e if largest else e, kind="stable")
    return e[order], v[:, order]


def _converged(a: Any, b: Any, e: np.ndarray, v: np.ndarray, tol: float) -> bool:
    """Whether SciPy's iterations reached ``tol`` (it can stop early on small or clustered
    problems and return its start: then the answer is not torch's)."""
    if not (np.all(np.isfinite(e)) and np.all(np.isfinite(v))):
        return False
    bv = v if b is None else b @ v
    res = np.linalg.norm(a @ v - bv * e, axis=0)
    return bool(np.all(res <= max(tol, 1e-12) * 10 * max(1.0, float(np.abs(e).max()))))


def _dense(a: Any, b: Any, n: int, largest: bool) -> tuple:
    """The ``n`` extreme eigenpairs by a dense (generalized) symmetric eigensolver: the pairs
    LOBPCG converges to, where SciPy's iterations did not."""
    import scipy.linalg
    ad = a.toarray() if hasattr(a, "toarray") else np.asarray(a)
    bd = None if b is None else (b.toarray() if hasattr(b, "toarray") else np.asarray(b))
    w, u = scipy.linalg.eigh(ad, bd)
    pick = slice(len(w) - n, None) if largest else slice(0, n)
    return w[pick], u[:, pick]


def _forward(A: Tensor, k: int, B: Optional[Tensor], X: Optional[Tensor], n: int,
             iK: Optional[Tensor], niter: int, tol: float, largest: bool,
             dt: _dtype.dtype) -> tuple:
    m = A.shape[-1]
    batch = tuple(A.shape[:-2])
    count = int(np.prod(batch)) if batch else 1
    dense_a = None if getattr(A, "is_sparse", False) else np.asarray(A._data, np.float64)
    dense_b = None
    if B is not None and not getattr(B, "is_sparse", False):
        dense_b = np.asarray(B._data, np.float64)
    ik = None if iK is None else _matrix(iK, m)
    E = np.empty((count, k))
    V = np.empty((count, m, k))
    xs = None if X is None else np.asarray(X._data, np.float64).reshape((-1, m, n))
    for i in range(count):
        if xs is not None:
            x0 = xs[i] if xs.shape[0] == count else xs[0]
        else:
            x0 = _creation.randn((m, n), dtype=dt)._data
            if x0.shape != (m, n):
                raise AssertionError(f"X shape mismatch: got {x0.shape}, expected {(m, n)}")
        if batch:
            full = np.asarray(A._data, np.float64) if dense_a is None else dense_a
            a = full.reshape(count, m, m)[i]
            b = None if B is None else np.asarray(B._data, np.float64).reshape(count, m, m)[i]
        else:
            a = _matrix(A, m) if dense_a is None else dense_a
            b = None if B is None else (_matrix(B, m) if dense_b is None else dense_b)
        tol_abs = tol * max(1.0, float(np.abs(a).max()) if dense_a is not None else 1.0)
        e, v = _one(a, b, x0, ik, niter, tol_abs, largest)
        E[i] = e[:k]
        V[i] = v[:, :k]
    npdt = dt.np
    return (_wrap(E.reshape(batch + (k,)).astype(npdt)),
            _wrap(V.reshape(batch + (m, k)).astype(npdt)))


class _Lobpcg(Function):
    @staticmethod
    def forward(ctx, A, k, B, X, n, iK, niter, tol, largest, dt):
        D, U = _forward(A, k, B, X, n, iK, niter, tol, largest, dt)
        ctx.save_for_backward(A, B, D, U)
        return D, U

    @staticmethod
    def backward(ctx, gD, gU):
        A, B, D, U = ctx.saved_tensors
        if A.is_sparse or (B is not None and B.is_sparse and ctx.needs_input_grad[2]):
            raise ValueError("lobpcg.backward does not support sparse input yet. "
                             "Note that lobpcg.forward does though.")
        if A.is_complex() or (B is not None and B.is_complex()):
            raise ValueError("lobpcg.backward does not support complex input yet. "
                             "Note that lobpcg.forward does though.")
        if B is not None:
            raise ValueError("lobpcg.backward does not support backward with B != I yet.")
        eye, zeros_like = _creation.eye, _creation.zeros_like
        gD = zeros_like(D) if gD is None else gD
        gU = zeros_like(U) if gU is None else gU
        Ut = U.mT
        F = D.unsqueeze(-2) - D.unsqueeze(-1)
        k = D.shape[-1]
        off = ~eye(k, dtype=_dtype.bool)
        F = (F + (~off).to(F.dtype)).reciprocal() * off.to(F.dtype)
        inner = U @ ((gD.diag_embed() + (Ut @ gU) * F) @ Ut)
        m = A.shape[-1]
        UUt = U @ Ut
        P = eye(m, dtype=A.dtype) - UUt
        shifted = D.unsqueeze(-1).unsqueeze(-1) * eye(m, dtype=A.dtype) - A.unsqueeze(-3)
        M = shifted @ P.unsqueeze(-3) + UUt.unsqueeze(-3)
        rhs = (P @ gU).mT.unsqueeze(-1)
        z = linalg.solve(M, rhs).squeeze(-1)
        gA = inner + z.mT @ Ut
        return (gA,) + (None,) * 9


def lobpcg(A: Tensor, k: Optional[int] = None, B: Optional[Tensor] = None,
           X: Optional[Tensor] = None, n: Optional[int] = None, iK: Optional[Tensor] = None,
           niter: Optional[int] = None, tol: Optional[float] = None,
           largest: Optional[bool] = None, method: Optional[str] = None, tracker: Any = None,
           ortho_iparams: Optional[dict] = None, ortho_fparams: Optional[dict] = None,
           ortho_bparams: Optional[dict] = None) -> tuple:
    """The ``k`` largest (``largest=False``: smallest) eigenpairs ``(E, X)`` of the symmetric
    ``A x = lambda B x`` (Note [lobpcg]); ``A`` has at least ``3 n`` rows.

    >>> import ndgrad
    >>> A = ndgrad.diag(ndgrad.arange(1.0, 10.0, dtype=ndgrad.float64))
    >>> E, _ = ndgrad.lobpcg(A, k=1, largest=False, X=ndgrad.ones(9, 1, dtype=ndgrad.float64))
    >>> round(E.item(), 6)
    1.0
    """
    if A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape {A.shape}")
    if B is not None and A.shape != B.shape:
        raise AssertionError(f"A and B must have same shape, got {A.shape} vs {B.shape}")
    dt = A.dtype if A.is_floating_point() else _dtype.float32
    if tol is None:
        tol = {"float64": 2.23e-16}.get(dt.name, 1.2e-07) ** 0.5
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m})"
                         f" is smaller than 3 x the number of requested eigenpairs (={n})")
    x_dt = dt if X is None else X.dtype
    if A.dtype != x_dt or A.is_complex():       # torch's first product, A @ X, refuses
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_cpp(A.dtype)} != {_cpp(x_dt)}")
    if X is not None and A.dim() == 2 and tuple(X.shape) != (m, n):
        raise AssertionError(f"X shape mismatch: got {X.shape}, expected {(m, n)}")
    niter = 1000 if niter is None else int(niter)
    largest = True if largest is None else bool(largest)
    if A.requires_grad or (B is not None and B.requires_grad):
        A_sym = (A + A.mT) / 2
        B_sym = (B + B.mT) / 2 if B is not None else None
        return tuple(_Lobpcg.apply(A_sym, k, B_sym, X, n, iK, niter, tol, largest, dt))
    return _forward(A, k, B, X, n, iK, niter, tol, largest, dt)
