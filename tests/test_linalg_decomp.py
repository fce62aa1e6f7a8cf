"""Decompositions (ndgrad/ops/linalg_decomp.py) where op_db's real samples do not reach:
complex inputs through gauge-invariant losses, the phase-dependence errors, LinAlgError,
saved values and the named-tuple results."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ndgrad


def _c(rng, *shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _absq(x):
    return (x * x.conj()).real


LOSSES = {
    "svd": lambda m, a: (lambda r: [_absq(r.U), r.S, _absq(r.Vh)])(m.linalg.svd(a)),
    "svd_wide": lambda m, a: (lambda r: [_absq(r.U), r.S])(m.linalg.svd(a.mT[:2], False)),
    "eigh": lambda m, a: (lambda r: [r.eigenvalues, _absq(r.eigenvectors)])(
        m.linalg.eigh(a + a.mH)),
    "eig": lambda m, a: (lambda r: [r.eigenvalues, _absq(r.eigenvectors)])(m.linalg.eig(a)),
    "qr": lambda m, a: list(m.linalg.qr(a)),
    "pinv": lambda m, a: [m.linalg.pinv(a)],
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_complex_gradients_and_gradgrad_match_torch(name):
    rng = np.random.default_rng(7)
    a = _c(rng, 3, 3)
    res = []
    for m in (torch, ndgrad):
        x = m.tensor(a, requires_grad=True)
        outs = LOSSES[name](m, x)
        cots = [m.tensor(np.random.default_rng(k).standard_normal(tuple(o.shape)), dtype=o.dtype)
                for k, o in enumerate(outs)]
        (g,) = m.autograd.grad(outs, x, cots, create_graph=True)
        w = m.tensor(_c(np.random.default_rng(9), 3, 3))
        s = (g * w).sum()
        (gg,) = m.autograd.grad(s.real if m is torch else s.real_part(), x)
        res.append((g.detach().numpy(), gg.numpy()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("fn,which,msg", [
    (lambda m, x: m.linalg.svd(x).U, "svd", "svd_backward: The singular vectors"),
    (lambda m, x: m.linalg.eigh(x + x.mH).eigenvectors, "eigh", "linalg_eigh_backward"),
    (lambda m, x: m.linalg.eig(x).eigenvectors, "eig", "linalg_eig_backward"),
])
def test_phase_dependent_losses_raise_like_torch(fn, which, msg):
    a = _c(np.random.default_rng(1), 3, 3)
    for m in (torch, ndgrad):
        x = m.tensor(a, requires_grad=True)
        with pytest.raises(RuntimeError, match=msg):
            fn(m, x).real.sum().backward()


def test_non_convergence_is_linalg_error():
    with pytest.raises(ndgrad.linalg.LinAlgError, match="non-finite"):
        ndgrad.linalg.svd(ndgrad.full((3, 3), float("nan")))
    assert issubclass(ndgrad.linalg.LinAlgError, RuntimeError)


_NAN, _INF = float("nan"), float("inf")
NONFINITE = {
    "nan": [[1.0, _NAN], [_NAN, 2.0]], "inf": [[1.0, _INF], [_INF, 2.0]],
    "-inf": [[-_INF, 0.0], [0.0, 1.0]], "nan diagonal": [[_NAN, 0.0], [0.0, 1.0]],
    "nan in the lower triangle": [[1.0, 0.0], [_NAN, 2.0]],
    "nan in the upper triangle": [[1.0, _NAN], [0.0, 2.0]],
    "nan 3x2": [[1.0, _NAN], [0.0, 1.0], [2.0, 3.0]],
}
NONFINITE_FNS = {
    "eigh": lambda m, a: list(m.linalg.eigh(a)), "eigh U": lambda m, a: list(
        m.linalg.eigh(a, UPLO="U")),
    "eigh batched": lambda m, a: list(m.linalg.eigh(m.stack([a, m.eye(2, dtype=a.dtype)]))),
    "svd": lambda m, a: list(m.linalg.svd(a)), "svd thin": lambda m, a: list(
        m.linalg.svd(a, full_matrices=False)),
    "svdvals": lambda m, a: [m.linalg.svdvals(a)],
    "svdvals batched": lambda m, a: [m.linalg.svdvals(m.stack([m.ones_like(a), a]))],
    "torch.svd": lambda m, a: list(m.svd(a)), "pinv": lambda m, a: [m.linalg.pinv(a)],
    "matrix_rank": lambda m, a: [m.linalg.matrix_rank(a)],
    "cond": lambda m, a: [m.linalg.cond(a)],
    "matrix_norm 2": lambda m, a: [m.linalg.matrix_norm(a, 2)],
    "nuclear norm": lambda m, a: [m.linalg.matrix_norm(a, "nuc")],
}


def _nonfinite_outcome(m, fn, a, dtype):
    try:
        return [np.asarray(r.numpy()) for r in fn(m, m.tensor(a, dtype=dtype))]
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return type(e).__name__, str(e)


@pytest.mark.parametrize("fname", NONFINITE_FNS)
def test_non_finite_input_as_torch(fname):
    """Note [Non-finite linalg input]: NaN refused by the SVD, NaN results otherwise."""
    fn = NONFINITE_FNS[fname]
    for name, a in NONFINITE.items():
        if fname.startswith("eigh") and len(a) != len(a[0]):
            continue
        for dt in ("float64", "float32"):
            ours = _nonfinite_outcome(ndgrad, fn, a, getattr(ndgrad, dt))
            theirs = _nonfinite_outcome(torch, fn, a, getattr(torch, dt))
            if isinstance(theirs, tuple):
                assert ours == theirs, (name, dt)
            else:
                assert isinstance(ours, list), (name, dt, ours)
                for o, t in zip(ours, theirs):
                    np.testing.assert_allclose(o, t, rtol=1e-5, atol=1e-6,
                                               err_msg=f"{name} {dt}")


def test_qr_modes_that_are_not_differentiable():
    x = ndgrad.randn(4, 3, dtype=ndgrad.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="mode='r'"):
        ndgrad.linalg.qr(x, mode="r").R.sum().backward()
    with pytest.raises(RuntimeError, match="mode='complete' and nrows > ncols"):
        ndgrad.linalg.qr(x, mode="complete").R.sum().backward()


def test_saved_values_and_result_types():
    x = ndgrad.randn(4, 3, dtype=ndgrad.float64, requires_grad=True)
    r = ndgrad.linalg.svd(x, full_matrices=False)
    fn = r.S.grad_fn
    assert type(fn).__name__ == "LinalgSvdBackward0"
    assert fn._saved_full_matrices is False and fn._saved_S_sym_argsize_minus_1 == 3
    assert fn._saved_U.shape == (4, 3) and fn._saved_Vh.shape == (3, 3)
    assert type(r).__name__ == "linalg_svd" and r._fields == ("U", "S", "Vh")
    q = ndgrad.linalg.qr(x)
    assert q.Q.grad_fn._saved_mode == "reduced"
    out = ndgrad.linalg.lstsq(x, ndgrad.randn(4, 2, dtype=ndgrad.float64))
    assert out._fields == ("solution", "residuals", "rank", "singular_values")
    assert out.rank.dtype == ndgrad.int64
