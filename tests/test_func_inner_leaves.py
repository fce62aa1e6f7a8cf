"""Leaves created inside a transformed function (``tensor(..., requires_grad=True)`` in ``f``)
belong to the transform's level: the results do not keep their history (Note [Transform
levels] in ndgrad/func/_common.py). Each case is run under torch and ndgrad and the
``requires_grad`` of every result compared, with the values."""

import numpy as np
import pytest
import torch

import ndgrad


def _w(m):
    return m.tensor([2.0, 3.0], requires_grad=True)


def _lin(m):
    return lambda x: x * _w(m)


def _sq(m):
    return lambda x: (x * x * _w(m)).sum()


def _case_grad(m, x):
    return [m.func.grad(_sq(m))(x)]


def _case_grad_and_value(m, x):
    return list(m.func.grad_and_value(_sq(m))(x))


def _case_grad_aux(m, x):
    def f(x):
        w = _w(m)
        return (x * w).sum(), w * 2
    g, aux = m.func.grad(f, has_aux=True)(x)
    return [g, aux]


def _case_vjp(m, x):
    out, fn = m.func.vjp(_lin(m), x)
    return [out, fn(m.ones(2))[0]]


def _case_jacrev(m, x):
    return [m.func.jacrev(_lin(m))(x)]


def _case_jvp(m, x):
    return list(m.func.jvp(_lin(m), (x,), (m.ones(2),)))


def _case_jvp_plus_outer(m, x):
    # the primal reaches the outside leaf; the tangent only the inner one
    outer = m.tensor([1.0, 1.0], requires_grad=True)
    return list(m.func.jvp(lambda y: y * _w(m) + outer, (x.detach(),), (m.ones(2),)))


def _case_jacfwd(m, x):
    return [m.func.jacfwd(_lin(m))(x)]


def _case_hessian(m, x):
    return [m.func.hessian(_sq(m))(x)]


def _case_nested(m, x):
    def outer(y):
        def inner(z):
            return (z * m.tensor(3.0, requires_grad=True) * y).sum()
        return m.func.grad(inner)(y).sum()
    return [m.func.grad(outer)(x)]


def _case_closure_outside(m, x):
    # a closure requiring grad created outside keeps its history (not an inner leaf)
    w = m.tensor([2.0, 3.0], requires_grad=True)
    return [m.func.grad(lambda y: (y * y * w).sum())(x)]


def _case_vjp_fn_in_later_grad(m, x):
    # cotangents made by a later transform are outside the vjp call
    out, fn = m.func.vjp(_lin(m), x)
    return [m.func.grad(lambda c: fn(c)[0].sum() * c.sum())(m.ones(2))]


CASES = [_case_grad, _case_grad_and_value, _case_grad_aux, _case_vjp, _case_jacrev, _case_jvp,
         _case_jvp_plus_outer, _case_jacfwd, _case_hessian, _case_nested,
         _case_closure_outside, _case_vjp_fn_in_later_grad]


@pytest.mark.parametrize("x_requires_grad", [False, True])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_inner_leaves_do_not_leak_history(case, x_requires_grad):
    t = case(torch, torch.tensor([1.0, 2.0], requires_grad=x_requires_grad))
    n = case(ndgrad, ndgrad.tensor([1.0, 2.0], requires_grad=x_requires_grad))
    assert [r.requires_grad for r in n] == [r.requires_grad for r in t]
    assert [r.grad_fn is None for r in n] == [r.grad_fn is None for r in t]
    for a, b in zip(n, t):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy())


def test_inner_leaf_gets_no_grad_and_outer_input_does():
    seen = []

    def f(x):
        w = ndgrad.tensor([2.0, 3.0], requires_grad=True)
        seen.append(w)
        return x * w
    x = ndgrad.tensor([1.0, 1.0], requires_grad=True)
    out, _ = ndgrad.func.vjp(f, x)
    out.sum().backward()
    assert x.grad.tolist() == [2.0, 3.0]


def _result_of(m, kind, x):
    f = m.func
    return {"grad": lambda: f.grad(lambda y: (y * y).sum())(x),
            "jacrev": lambda: f.jacrev(lambda y: y * y)(x),
            "vjp": lambda: f.vjp(lambda y: y * y, x)[0],
            "jvp": lambda: f.jvp(lambda y: y * y, (x,), (x,))[1],
            "jacfwd": lambda: f.jacfwd(lambda y: y * y)(x),
            "vmap": lambda: f.vmap(lambda y: y * y)(x)}[kind]()


@pytest.mark.parametrize("kind", ["grad", "jacrev", "vjp", "jvp", "jacfwd", "vmap"])
def test_result_made_leaf_later_is_live(kind):
    # a transform's result turned into a leaf afterwards is an ordinary outside leaf
    def run(m):
        x = m.tensor([1.0, 2.0])
        r = _result_of(m, kind, x).requires_grad_()
        return m.func.grad(lambda y: (y * r.sum()).sum())(x).requires_grad
    assert run(ndgrad) == run(torch) is True
