"""In-place ops on a transform's own inputs (Note [Transform leaves] in
ndgrad/ops/views_inplace.py): a reverse transform's input is a leaf of its level, so torch
raises its leaf errors whatever the outer tensor is; jvp's inputs may be written and the
tangent passed in is updated in place. Each case against torch."""

import numpy as np
import pytest
import torch

import ndgrad

from _compare import outcome


def _nonleaf(m):
    return m.tensor([1.0, 2.0], requires_grad=True) * 3


def _leaf(m):
    return m.tensor([1.0, 2.0], requires_grad=True)


def _plain(m):
    return m.tensor([1.0, 2.0])


def _vjp_mul_(m, a):
    return m.func.vjp(lambda z: z.mul_(2), a)[0]


def _vjp_view_mul_(m, a):
    return m.func.vjp(lambda z: z[:1].mul_(2), a)[0]


def _vjp_setitem(m, a):
    def f(z):
        z[0] = 5.0
        return z * 1
    return m.func.vjp(f, a)[0]


def _grad_mul_(m, a):
    return m.func.grad(lambda z: z.mul_(2).sum())(a)


def _jacrev_mul_(m, a):
    return m.func.jacrev(lambda z: z.mul_(2))(a)


def _vjp_in_grad(m, a):
    # the brief's case: a non-leaf made inside an outer grad, written by an inner vjp
    def g(x):
        out, _ = m.func.vjp(lambda z: z.mul_(2), x * 3)
        return out.sum()
    return m.func.grad(g)(a.detach())


def _vjp_fn_in_grad(m, a):
    def g(x):
        _, fn = m.func.vjp(lambda z: z.mul_(2), x * 3)
        return fn(m.ones(2))[0].sum()
    return m.func.grad(g)(a.detach())


def _vjp_under_no_grad_inside(m, a):
    def f(z):
        with m.no_grad():
            z.mul_(2)
        return z * 1
    return m.func.vjp(f, a)[0]


def _grad_detach_mul_(m, a):
    return m.func.grad(lambda z: (z.detach().mul_(1), z.sum())[1])(a)


def _jvp_mul_(m, a):
    t = m.ones(2)
    p, tg = m.func.jvp(lambda z: z.mul_(2), (a,), (t,))
    return p, tg, t            # the tangent given is updated in place, as in torch


def _jvp_in_grad(m, a):
    return m.func.grad(lambda x: m.func.jvp(lambda z: z.mul_(2), (x * 3,),
                                            (m.ones(2),))[1].sum())(a.detach())


CASES = [_vjp_mul_, _vjp_view_mul_, _vjp_setitem, _grad_mul_, _jacrev_mul_, _vjp_in_grad,
         _vjp_fn_in_grad, _vjp_under_no_grad_inside, _grad_detach_mul_, _jvp_mul_,
         _jvp_in_grad]


def _values(r):
    rs = r if isinstance(r, tuple) else (r,)
    # torch may return a ZeroTensor, which refuses numpy()
    return [x.detach().numpy(force=True) if isinstance(x, torch.Tensor) else x.detach().numpy()
            for x in rs]


@pytest.mark.parametrize("make", [_nonleaf, _leaf, _plain], ids=lambda f: f.__name__)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_inplace_on_transform_input_as_torch(case, make):
    t = outcome(lambda: _values(case(torch, make(torch))))
    n = outcome(lambda: _values(case(ndgrad, make(ndgrad))))
    assert t[0] == n[0], (t, n)
    if t[0] == "ok":
        for a, b in zip(n[1], t[1]):
            np.testing.assert_allclose(a, b)
    else:
        assert n[1] == t[1]


def test_transform_leaf_stamp_is_inert_afterwards():
    x = ndgrad.tensor([1.0, 2.0], requires_grad=True) * 1
    kept = []
    ndgrad.func.vjp(lambda z: (kept.append(z), z * 2)[1], x)
    kept[0].mul_(2)               # the call has returned: an ordinary view of a non-leaf
    assert x.tolist() == [2.0, 4.0]
