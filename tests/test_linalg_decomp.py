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
