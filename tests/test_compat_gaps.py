"""Forward AD writing a batched tangent into an unbatched one, and cdist's Jacobians."""

import numpy as np
import pytest
import torch

import ndgrad

from _compare import outcome


def _jacobian_with_inner_dual(m):
    fwAD = m.autograd.forward_ad
    base = m.ones(3, dtype=m.float64)
    t = m.tensor([0.5, 0.25, 1.0], dtype=m.float64)

    def f(x):
        w = fwAD.make_dual(base.clone(), t)     # unbatched tangent at the jacobian's level
        w.add_(x)                                # x's tangent is batched (vectorized)
        return w
    return m.autograd.functional.jacobian(f, m.zeros(3, dtype=m.float64), vectorize=True,
                                          strategy="forward-mode")


def test_batched_tangent_into_unbatched_tangent_refused_as_torch():
    t = outcome(lambda: _jacobian_with_inner_dual(torch))
    n = outcome(lambda: _jacobian_with_inner_dual(ndgrad))
    assert t[0] == n[0] == "RuntimeError"
    assert t[1] == n[1]


def test_unbatched_into_batched_and_same_batching_still_work():
    x = ndgrad.tensor([1.0, 2.0, 3.0], dtype=ndgrad.float64)

    def f(v):
        y = v.clone()
        y.mul_(ndgrad.tensor([2.0, 3.0, 4.0], dtype=ndgrad.float64))
        y[1:] = v[:2]
        return y
    j = ndgrad.autograd.functional.jacobian(f, x, vectorize=True, strategy="forward-mode")
    assert j.tolist() == [[2.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]


@pytest.mark.parametrize("shapes", [((4, 3), (5, 3)), ((4, 3), (2, 5, 3)), ((2, 4, 3), (5, 3)),
                                    ((2, 1, 4, 3), (3, 5, 3)), ((26, 2), (2, 2))])
@pytest.mark.parametrize("p", [2.0, 1.0, 0.5, 3.0, float("inf")])
def test_cdist_jacrev_matches_jacobian_and_finite_differences(shapes, p):
    # torch 2.13's own torch.func.jacrev(cdist) disagrees with its jacobian here (by up to
    # 40 for p=0.5): ndgrad's batched VJP agrees with the per-row one and with torch's
    # torch.autograd.functional.jacobian
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(s) for s in shapes)

    def f(x, y):
        return ndgrad.cdist(x, y, p=p)
    x, y = ndgrad.tensor(a), ndgrad.tensor(b)
    jr = ndgrad.func.jacrev(f, argnums=(0, 1))(x, y)
    jac = ndgrad.autograd.functional.jacobian(f, (x, y))
    ref = torch.autograd.functional.jacobian(
        lambda u, v: torch.cdist(u, v, p=p), (torch.tensor(a), torch.tensor(b)))
    for r, j, t in zip(jr, jac, ref):
        np.testing.assert_allclose(r.numpy(), j.numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(r.numpy(), t.numpy(), rtol=1e-9, atol=1e-9)
    if a.size <= 12:
        assert ndgrad.autograd.gradcheck(f, (x.requires_grad_(), y.requires_grad_()))


def test_num_threads_as_torch():
    n = ndgrad.get_num_threads()
    try:
        ndgrad.set_num_threads(1)
        assert ndgrad.get_num_threads() == 1
        ndgrad.set_num_threads(2)
        assert ndgrad.get_num_threads() == 2
    finally:
        ndgrad.set_num_threads(n)
    for bad in (0, -1, 2.5, "2", True):
        t = outcome(lambda: torch.set_num_threads(bad))
        assert t[0] == "RuntimeError"
        assert outcome(lambda: ndgrad.set_num_threads(bad)) == t
