"""Autograd inside a traced function: autograd.grad (create_graph False/True), the functional
transforms (hessian, jacobian, vjp, jvp, hvp, vhp; vectorize=True, forward-mode strategies,
is_grads_batched) and forward-mode AD are traced into the same graph, so a whole training step
or Hessian is one graph. Each graph is run on OTHER inputs than the trace's and compared with
eager."""

from __future__ import annotations

import numpy as np
import pytest

import ndgrad
import ndgrad.autograd.forward_ad as fwAD
import ndgrad.autograd.functional as AF
from ndgrad.jit import differentiate, flatten, interpret, trace_graph


def _f(x):
    return (x.sin() * x).sum()


def _g(x):
    return x.sin() * x.exp()


def _check(fn, n_inputs=1, requires_grad=False):
    rng = np.random.default_rng(0)
    mk = lambda: [ndgrad.tensor(rng.standard_normal(4), requires_grad=requires_grad)  # noqa: E731
                  for _ in range(n_inputs)]
    xs, ys = mk(), mk()
    r = trace_graph(fn, tuple(xs))
    r.graph.lint()
    out = interpret(r.graph, [y.detach() for y in ys] + r.lifted)
    ref, _ = flatten(fn(*ys))
    assert len(ref) == r.num_outputs
    for a, b in zip(out, ref):
        np.testing.assert_allclose(a._data, b._data, rtol=1e-12, atol=1e-12)
    return r


@pytest.mark.parametrize("name, fn", [
    ("hessian", lambda x: AF.hessian(_f, x)),
    ("hessian_vectorize", lambda x: AF.hessian(_f, x, vectorize=True)),
    ("hessian_forward_outer", lambda x: AF.hessian(_f, x, vectorize=True,
                                                  outer_jacobian_strategy="forward-mode")),
    ("jacobian", lambda x: AF.jacobian(_g, x)),
    ("jacobian_vectorize", lambda x: AF.jacobian(_g, x, vectorize=True)),
    ("jacobian_forward", lambda x: AF.jacobian(_g, x, vectorize=True, strategy="forward-mode")),
    ("vjp", lambda x: AF.vjp(_g, x, x.cos())),
    ("jvp", lambda x: AF.jvp(_g, x, x.cos())),
    ("hvp", lambda x: AF.hvp(_f, x, x.cos())),
    ("vhp", lambda x: AF.vhp(_f, x, x.cos())),
])
def test_functional_transforms_trace(name, fn):
    r = _check(fn)
    assert len(r.graph.nodes()) > 3


def test_grad_inside_create_graph_false_and_true():
    def step(x):
        y = _f(x)
        (g,) = ndgrad.autograd.grad(y, x)
        return y.detach(), g

    r = _check(step, requires_grad=True)
    assert not r.graph.outputs()[1].requires_grad       # grad(create_graph=False): detached

    def double(x):
        (g,) = ndgrad.autograd.grad(_f(x), x, create_graph=True)
        (h,) = ndgrad.autograd.grad(g.sum(), x)
        return g, h

    r = _check(double, requires_grad=True)
    assert r.graph.outputs()[0].requires_grad           # create_graph=True: differentiable
    # the traced gradient graph differentiates again: third derivatives agree with eager
    grad = differentiate(r.graph)
    x = ndgrad.randn(4, dtype=ndgrad.float64)
    outs = interpret(grad.f, [x])
    from _jit_util import df_inputs
    (d3,) = interpret(grad.df, df_inputs(grad, [x], outs, [ndgrad.ones(4, dtype=x.dtype),
                                                            None]))
    xe = x.clone().requires_grad_()
    (ge,) = ndgrad.autograd.grad(_f(xe), xe, create_graph=True)
    (he,) = ndgrad.autograd.grad(ge.sum(), xe)
    np.testing.assert_allclose(d3._data, he._data, rtol=1e-12, atol=1e-12)


def test_whole_training_step_is_one_graph():
    lin1, lin2 = ndgrad.nn.Linear(4, 8), ndgrad.nn.Linear(8, 2)

    def step(x, t):
        loss = ((lin2(lin1(x).tanh()) - t) ** 2).mean()
        grads = ndgrad.autograd.grad(loss, [lin1.weight, lin1.bias, lin2.weight, lin2.bias])
        return loss.detach(), grads

    rng = np.random.default_rng(1)
    x, t = ndgrad.tensor(rng.standard_normal((5, 4))), ndgrad.tensor(rng.standard_normal((5, 2)))
    x, t = x.float(), t.float()
    r = trace_graph(step, (x, t))
    assert [v.debug_name for v in r.graph.inputs()] == [
        "x", "t", "lin1_weight", "lin1_bias", "lin2_weight", "lin2_bias"]
    x2 = ndgrad.tensor(rng.standard_normal((5, 4))).float()
    out = interpret(r.graph, [x2, t] + r.lifted)
    ref, _ = flatten(step(x2, t))
    for a, b in zip(out, ref):
        np.testing.assert_array_equal(a._data, b._data)


def test_forward_ad_inside():
    def fwd(x):
        with fwAD.dual_level():
            d = fwAD.make_dual(x, x.cos())
            out = (d.sin() * d).sum()
            return fwAD.unpack_dual(out).tangent

    _check(fwd)


def test_is_grads_batched_inside():
    w = ndgrad.randn(3, 4, dtype=ndgrad.float64)

    def jac(x):
        y = w @ x.sin()
        return ndgrad.autograd.grad(y, x, ndgrad.eye(3, dtype=ndgrad.float64),
                                    is_grads_batched=True)[0]

    _check(jac, requires_grad=True)
