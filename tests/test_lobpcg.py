"""ndgrad.lobpcg (Note [lobpcg]) against torch.lobpcg: eigenpairs of standard, generalized,
batched and sparse problems, the generator stream after a random start, the gradient of
eigenvalues and (sign-fixed) eigenvectors, and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ndgrad

RNG = np.random.default_rng(0)
M15 = RNG.standard_normal((15, 15))
SPD = M15 @ M15.T
BMAT = np.eye(15) + 0.1 * (M15 + M15.T) @ (M15 + M15.T).T / 15


def _run(m, fn):
    m.manual_seed(0)
    return fn(m)


def _close(a, b, tol=1e-7):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("generalized", [False, True])
def test_eigenpairs_match_torch(largest, generalized):
    def fn(m):
        A = m.tensor(SPD)
        B = m.tensor(BMAT) if generalized else None
        E, X = m.lobpcg(A, k=2, B=B, largest=largest)
        after = m.randn(3)                   # the random start used the same draws
        return E, X, after, A, B

    te, tx, tr, tA, tB = _run(torch, fn)
    ne, nx, nr, nA, nB = _run(ndgrad, fn)
    assert ne.dtype == ndgrad.float64 and tuple(nx.shape) == (15, 2)
    _close(ne.numpy(), te.numpy())
    _close(nr.numpy(), tr.numpy(), 0)
    sign = np.sign(nx.numpy()[0]) * np.sign(tx.numpy()[0])
    _close(nx.numpy() * sign, tx.numpy(), 1e-6)
    b = BMAT if generalized else np.eye(15)
    _close(nx.numpy().T @ b @ nx.numpy(), np.eye(2))          # B-orthonormal


def test_batched_sparse_float32_and_given_start():
    x0 = RNG.standard_normal((15, 3))
    for m in (torch, ndgrad):
        A = m.tensor(np.stack([SPD, 2 * SPD]))
        E, X = m.lobpcg(A, k=2, X=m.tensor(np.stack([x0, x0])))
        if m is torch:
            want = E.numpy()
        else:
            assert tuple(X.shape) == (2, 15, 2)
            _close(E.numpy(), want)
    idx = np.nonzero(np.abs(SPD) > 1.0)
    dense = np.where(np.abs(SPD) > 1.0, SPD, 0.0) + 20 * np.eye(15)
    for m in (torch, ndgrad):
        S = m.sparse_coo_tensor(m.tensor(np.stack(idx)), m.tensor(SPD[idx]), (15, 15))
        S = S + m.tensor(20 * np.eye(15)).to_sparse()
        E, _ = m.lobpcg(S, k=1, X=m.tensor(x0[:, :1]), largest=False)
        E32, X32 = m.lobpcg(m.tensor(dense, dtype=m.float32), k=2,
                            X=m.tensor(x0[:, :2], dtype=m.float32))
        if m is torch:
            want = E.numpy(), E32.numpy()
        else:
            _close(E.numpy(), want[0])
            assert E32.dtype == X32.dtype == ndgrad.float32
            _close(E32.numpy(), want[1], 1e-4)
    _close(want[0], np.linalg.eigvalsh(dense)[:1])


def test_gradient_matches_torch():
    G = RNG.standard_normal((15, 2))
    gd = RNG.standard_normal(2)
    got = []
    for m in (torch, ndgrad):
        m.manual_seed(1)
        A = m.tensor(SPD + RNG.standard_normal((15, 15)) * 0 + np.triu(M15) * 0.1,
                     requires_grad=True)
        E, U = m.lobpcg(A, k=2, largest=False)
        U = U * U[0].sign()
        ((E * m.tensor(gd)).sum() + (U * m.tensor(G)).sum()).backward()
        got.append(A.grad.numpy())
    _close(got[1], got[0], 1e-6)
    _close(got[1], got[1].T)                               # symmetric: A is symmetrized
    # eigenvalue gradients alone: u u^T
    A = ndgrad.tensor(SPD, requires_grad=True)
    E, U = ndgrad.lobpcg(A, k=1, X=ndgrad.tensor(RNG.standard_normal((15, 1))))
    E.sum().backward()
    _close(A.grad.numpy(), U.detach().numpy() @ U.detach().numpy().T)


def test_errors_match_torch():
    def errors(m):
        out = []
        A = m.tensor(SPD)
        cases = [lambda: m.lobpcg(A, k=6), lambda: m.lobpcg(A[:, :14], k=1),
                 lambda: m.lobpcg(A, k=1, B=m.tensor(SPD[:14, :14])),
                 lambda: m.lobpcg(A.long(), k=2),
                 lambda: m.lobpcg(A, k=2, X=m.ones(14, 2, dtype=m.float64)),
                 lambda: m.lobpcg(A, k=2, X=m.ones(15, 2)),
                 lambda: m.lobpcg(A.to(m.complex128), k=2)]
        Ar = m.tensor(SPD, requires_grad=True)
        E, _ = m.lobpcg(Ar, k=1, B=m.tensor(BMAT), X=m.ones(15, 1, dtype=m.float64))
        cases.append(lambda: E.sum().backward())
        for c in cases:
            with pytest.raises(Exception) as e:
                c()
            out.append((e.type, str(e.value).replace("torch.", "ndgrad.")))
        return out

    assert errors(ndgrad) == errors(torch)


def test_small_problem_where_scipys_iterations_stall_matches_torch():
    """SciPy's LOBPCG gives up on this 12x12 problem at its first iteration and returns its
    start; the dense fallback gives the eigenpairs torch's iterations converge to."""
    res = []
    for lib in (torch, ndgrad):
        A = lib.diag(lib.arange(1.0, 13.0, dtype=lib.float64))
        X0 = lib.eye(12, 2, dtype=lib.float64) + 0.1
        res.append([lib.lobpcg(A, k=2, X=X0, largest=big)[0].tolist() for big in (True, False)])
    np.testing.assert_allclose(np.array(res[1]), np.array(res[0]), rtol=1e-6)


def test_rank_deficient_start_raises_torchs_error_type():
    for lib in (torch, ndgrad):
        A = lib.diag(lib.arange(1.0, 13.0, dtype=lib.float64))
        with pytest.raises(lib.linalg.LinAlgError, match="not positive-definite"):
            lib.lobpcg(A, k=2, X=lib.ones(12, 2, dtype=lib.float64))
