"""differentiate() -> Gradient: seed 004's contract on its own examples, against
torch._C._jit_differentiate as a structural oracle, and on random DAGs."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
from _jit_util import assert_same, check_contract, df_inputs, run_gradient
from hypothesis import given, settings
from hypothesis import strategies as st

import ndgrad
from ndgrad.jit import differentiate, interpret, trace_graph


def _kinds(g, kind):
    return [n for n in g.all_nodes() if n.kind() == kind]


def _grad_of_names(g):
    return sorted(n.attrs["name"] for n in _kinds(g, "GradOf"))


def _torch_oracle(ir: str) -> dict:
    """torch's Gradient for TorchScript IR, with the int[] size captures dropped (static shapes
    fold them in ndgrad)."""
    d = torch._C._jit_differentiate(torch._C.parse_ir(ir))
    f_outs = list(d.f.outputs())
    is_tensor = [o.type().kind() == "TensorType" for o in f_outs]
    names = [n.s("name") for n in d.df.nodes() if n.kind() == "prim::GradOf"]
    return {"f_real_outputs": d.f_real_outputs,
            "df_input_vjps": [i for i in d.df_input_vjps if is_tensor[i]],
            "df_input_captured_inputs": list(d.df_input_captured_inputs),
            "df_input_captured_outputs": [i for i in d.df_input_captured_outputs
                                          if is_tensor[i]],
            "df_output_vjps": list(d.df_output_vjps),
            "grad_of": sorted(s.replace("aten::", "") for s in names),
            "autograd_add": sum(1 for n in d.df.nodes() if n.kind() == "prim::AutogradAdd")}


def _fields(g) -> dict:
    return {"f_real_outputs": g.f_real_outputs, "df_input_vjps": g.df_input_vjps,
            "df_input_captured_inputs": g.df_input_captured_inputs,
            "df_input_captured_outputs": g.df_input_captured_outputs,
            "df_output_vjps": g.df_output_vjps, "grad_of": _grad_of_names(g.df),
            "autograd_add": len(_kinds(g.df, "AutogradAdd"))}


_ABA_IR = """
graph(%a : Float(2, 3, 4, strides=[12, 4, 1], requires_grad=1, device=cpu),
      %b : Float(2, 3, 4, strides=[12, 4, 1], requires_grad=1, device=cpu)):
  %2 : int = prim::Constant[value=1]()
  %3 : Tensor = aten::mul(%a, %b)
  %4 : Tensor = aten::mul(%3, %a)
  %5 : Tensor = aten::add(%4, %b, %2)
  return (%5)
"""


def test_seed_example_a_b_a_plus_b():
    a = ndgrad.randn(2, 3, 4, requires_grad=True)
    b = ndgrad.randn(2, 3, 4, requires_grad=True)
    g = differentiate(trace_graph(lambda a, b: a * b * a + b, (a, b)).graph)
    check_contract(g)
    assert (g.f_real_outputs, g.df_input_vjps, g.df_input_captured_inputs,
            g.df_input_captured_outputs, g.df_output_vjps) == (1, [0, 1], [0, 1], [1], [0, 1])
    assert _grad_of_names(g.df) == ["add", "mul", "mul"]
    assert len(_kinds(g.df, "AutogradAdd")) == 3
    assert _fields(g) == _torch_oracle(_ABA_IR)
    text = str(g)
    assert text.startswith("Gradient(f_real_outputs=1, df_input_vjps=[0, 1], "
                           "df_input_captured_inputs=[0, 1], df_input_captured_outputs=[1], "
                           "df_output_vjps=[0, 1])\n"
                           "f = graph(%a : f32[2, 3, 4], %b : f32[2, 3, 4]):")
    assert "df = graph(" in text and 'GradOf[name="mul"]' in text
    # numbers: f then df equal eager backward (same NumPy calls in the same order: bitwise)
    x, y = ndgrad.randn(2, 3, 4), ndgrad.randn(2, 3, 4)
    gc = ndgrad.randn(2, 3, 4)
    (c,), grads = run_gradient(g, [x, y], [gc])
    xe, ye = x.clone().requires_grad_(), y.clone().requires_grad_()
    ce = xe * ye * xe + ye
    assert_same(c, ce.detach())
    ga, gb = ndgrad.autograd.grad(ce, (xe, ye), gc)
    assert_same(grads[0], ga)
    assert_same(grads[1], gb)
    dot = g.to_dot()
    assert dot.count("subgraph") >= 2 and '"cluster_f"' in dot and '"cluster_df"' in dot


def test_seed_example_only_a_requires_grad():
    a = ndgrad.randn(2, 3, 4, requires_grad=True)
    b = ndgrad.randn(2, 3, 4)
    g = differentiate(trace_graph(lambda a, b: a * b * a + b, (a, b)).graph)
    check_contract(g)
    assert g.df_output_vjps == [0] and len(g.df.outputs()) == 1
    assert g.df_input_vjps[0] == 0
    x, y, gc = ndgrad.randn(2, 3, 4), ndgrad.randn(2, 3, 4), ndgrad.randn(2, 3, 4)
    _, grads = run_gradient(g, [x, y], [gc])
    xe = x.clone().requires_grad_()
    (ga,) = ndgrad.autograd.grad(xe * y * xe + y, xe, gc)
    assert_same(grads[0], ga)


def test_autodiff_h_header_example():
    # y, n = f(x, m): df needs x, a temporary t and y  =>  f returns (y, n, t)
    def f(x, m):
        t = x.sin()
        y = (t * x).exp()
        n = m * 2
        return y, n

    x = ndgrad.randn(3, requires_grad=True)
    m = ndgrad.randn(3)
    g = differentiate(trace_graph(f, (x, m)).graph)
    check_contract(g)
    assert g.f_real_outputs == 2
    assert g.df_input_vjps == [0, 2]
    assert g.df_input_captured_inputs == [0]          # I0
    assert g.df_input_captured_outputs == [2, 0]      # O2 (t), O0 (y)
    assert g.df_output_vjps == [0]
    assert g.f.outputs()[2].node().kind() == "sin"
    xv, mv, gy = ndgrad.randn(3), ndgrad.randn(3), ndgrad.randn(3)
    (y, n), grads = run_gradient(g, [xv, mv], [gy, None])
    xe = xv.clone().requires_grad_()
    ye, ne = f(xe, mv)
    assert_same(y, ye.detach())
    assert_same(n, ne)
    (gx,) = ndgrad.autograd.grad(ye, xe, gy)
    assert_same(grads[0], gx)


def test_linear_without_input_grad_has_one_matmul():
    lin = ndgrad.nn.Linear(4, 3)
    x = ndgrad.randn(5, 4)
    g = differentiate(trace_graph(lambda x: ndgrad.nn.functional.linear(x, lin.weight,
                                                                        lin.bias), (x,)).graph)
    check_contract(g)
    mm = [n for n in g.df.all_nodes() if n.kind() in ("mm", "matmul", "addmm", "bmm", "mv")]
    assert len(mm) == 1
    assert g.df_output_vjps == [1, 2]                # weight, bias; not x
    xv, gy = ndgrad.randn(5, 4), ndgrad.randn(5, 3)
    _, grads = run_gradient(g, [xv, lin.weight.detach(), lin.bias.detach()], [gy])
    want = ndgrad.autograd.grad(ndgrad.nn.functional.linear(xv, lin.weight, lin.bias),
                                (lin.weight, lin.bias), gy)
    assert_same(grads[1], want[0], exact=False)
    assert_same(grads[2], want[1], exact=False)


def test_df_is_differentiable_again():
    # double backward: df is a graph of ndgrad ops, so it can be interpreted under grad mode
    # (create_graph) or differentiated again
    x = ndgrad.randn(4, requires_grad=True)
    g = differentiate(trace_graph(lambda x: (x.tanh() * x).sum(), (x,)).graph)
    xv = ndgrad.randn(4, dtype=ndgrad.float64).float().requires_grad_()
    outs = interpret(g.f, [xv])
    (gx,) = interpret(g.df, df_inputs(g, [xv], outs, [ndgrad.tensor(1.0)]))
    (h,) = ndgrad.autograd.grad(gx.sum(), xv)
    xe = xv.detach().requires_grad_()
    (ge,) = ndgrad.autograd.grad((xe.tanh() * xe).sum(), xe, create_graph=True)
    (he,) = ndgrad.autograd.grad(ge.sum(), xe)
    assert_same(gx.detach(), ge.detach(), exact=False, rtol=1e-6)
    assert_same(h, he, exact=False, rtol=1e-6)
    g2 = differentiate(g.df)           # the backward graph differentiated symbolically
    check_contract(g2)


def test_broadcast_sum_to_size_and_dtypes():
    a = ndgrad.randn(2, 3, requires_grad=True)
    b = ndgrad.randn(3, dtype=ndgrad.float64, requires_grad=True)
    g = differentiate(trace_graph(lambda a, b: (a * b).sum(0), (a, b)).graph)
    check_contract(g)
    sts = _kinds(g.df, "SumToSize")
    assert [tuple(n.attrs["size"]) for n in sts] == [(3,)]     # a's identity one is folded
    av, bv, gy = ndgrad.randn(2, 3), ndgrad.randn(3, dtype=ndgrad.float64), \
        ndgrad.randn(3, dtype=ndgrad.float64)
    _, grads = run_gradient(g, [av, bv], [gy])
    ae, be = av.clone().requires_grad_(), bv.clone().requires_grad_()
    want = ndgrad.autograd.grad((ae * be).sum(0), (ae, be), gy)
    assert_same(grads[0], want[0])
    assert_same(grads[1], want[1])


def test_mask_rule_records_symbolically():
    # clamp's rule builds its mask with comparison ops (ops of the table with no VJP): the mask
    # is recorded into the GradOf block, so the gradient is right for inputs on the other side
    # of the bounds than the traced ones
    x = ndgrad.tensor([-2.0, 0.5, 3.0], requires_grad=True)
    g = differentiate(trace_graph(lambda x: x.clamp(-1, 1), (x,)).graph)
    assert not _kinds(g.df, "OpBackward")
    assert _kinds(g.df, "ge") and _kinds(g.df, "le") and _kinds(g.df, "where")
    xv = ndgrad.tensor([0.3, -5.0, 0.1])
    _, grads = run_gradient(g, [xv], [ndgrad.ones(3)])
    np.testing.assert_array_equal(grads[0]._data, [1.0, 0.0, 1.0])


def test_opaque_rule_runs_at_run_time(monkeypatch):
    # an op listed in OPAQUE_VJP gets an OpBackward node: its rule runs at run time, on the
    # real values
    monkeypatch.setitem(sys.modules["ndgrad.jit.differentiate"].OPAQUE_VJP, "clamp", "test")
    x = ndgrad.tensor([-2.0, 0.5, 3.0], requires_grad=True)
    g = differentiate(trace_graph(lambda x: x.clamp(-1, 1), (x,)).graph)
    assert _kinds(g.df, "OpBackward")
    xv = ndgrad.tensor([0.3, -5.0, 0.1])
    _, grads = run_gradient(g, [xv], [ndgrad.ones(3)])
    np.testing.assert_array_equal(grads[0]._data, [1.0, 0.0, 1.0])


# ---------------------------------------------------------------------------- random DAGs
_UNARY = ["neg", "tanh", "exp", "sigmoid", "relu", "log"]
_BINARY = ["add", "sub", "mul", "div"]
_TS = {"neg": "aten::neg({})", "tanh": "aten::tanh({})", "exp": "aten::exp({})",
       "sigmoid": "aten::sigmoid({})", "relu": "aten::relu({})", "log": "aten::log({})",
       "add": "aten::add({}, {}, %one)", "sub": "aten::sub({}, {}, %one)",
       "mul": "aten::mul({}, {})", "div": "aten::div({}, {})"}


@st.composite
def _dags(draw):
    n_in = draw(st.integers(1, 3))
    rg = draw(st.lists(st.booleans(), min_size=n_in, max_size=n_in))
    if not any(rg):
        rg[0] = True
    steps = []
    n_vals = n_in
    for _ in range(draw(st.integers(1, 6))):
        if draw(st.booleans()):
            steps.append((draw(st.sampled_from(_UNARY)), draw(st.integers(0, n_vals - 1))))
        else:
            steps.append((draw(st.sampled_from(_BINARY)), draw(st.integers(0, n_vals - 1)),
                          draw(st.integers(0, n_vals - 1))))
        n_vals += 1
    outs = draw(st.lists(st.integers(0, n_vals - 1), min_size=1, max_size=3))
    return n_in, rg, steps, outs


def _run_dag(m, xs, steps, outs):
    vals = list(xs)
    for s in steps:
        if s[0] == "log":
            vals.append(m.log(vals[s[1]].abs() + 1))
        elif len(s) == 2:
            vals.append(getattr(m, s[0])(vals[s[1]]))
        elif s[0] == "div":
            vals.append(vals[s[1]] / (vals[s[2]].abs() + 1))
        else:
            vals.append(getattr(m, s[0])(vals[s[1]], vals[s[2]]))
    return tuple(vals[i] for i in outs)


@settings(max_examples=25, deadline=None)
@given(_dags())
def test_random_dags_agree_with_eager(dag):
    n_in, rg, steps, outs = dag
    rng = np.random.default_rng(len(steps))
    xs = [ndgrad.tensor(rng.standard_normal(3), requires_grad=r) for r in rg]
    r = trace_graph(lambda *a: _run_dag(ndgrad, a, steps, outs), tuple(xs))
    g = differentiate(r.graph)
    check_contract(g)
    ys = [ndgrad.tensor(rng.standard_normal(3), requires_grad=r_) for r_ in rg]
    eager = _run_dag(ndgrad, ys, steps, outs)
    cots = [ndgrad.tensor(rng.standard_normal(3)) if o.requires_grad else None for o in eager]
    real, grads = run_gradient(g, [y.detach() for y in ys], cots)
    for a, b in zip(real, eager):
        assert_same(a, b.detach())
    used = [(o, c) for o, c in zip(eager, cots) if c is not None]
    wrt = [i for i in range(n_in) if rg[i]]
    if used:
        want = ndgrad.autograd.grad([o for o, _ in used], [ys[i] for i in wrt],
                                    [c for _, c in used], allow_unused=True)
        for i, w in zip(wrt, want):
            assert_same(grads.get(i), w, exact=False, rtol=1e-5)


def _dag_ir(n_in, rg, steps, outs) -> str:
    ins = ", ".join(f"%x{i} : Float(3, strides=[1], requires_grad={int(r)}, device=cpu)"
                    for i, r in enumerate(rg))
    lines = [f"graph({ins}):", "  %one : int = prim::Constant[value=1]()"]
    names = [f"%x{i}" for i in range(n_in)]
    for k, s in enumerate(steps):
        v = f"%v{k}"
        if s[0] == "log":
            lines.append(f"  {v}a : Tensor = aten::abs({names[s[1]]})")
            lines.append(f"  {v}b : Tensor = aten::add({v}a, %one, %one)")
            lines.append(f"  {v} : Tensor = aten::log({v}b)")
        elif len(s) == 2:
            lines.append(f"  {v} : Tensor = " + _TS[s[0]].format(names[s[1]]))
        elif s[0] == "div":
            lines.append(f"  {v}a : Tensor = aten::abs({names[s[2]]})")
            lines.append(f"  {v}b : Tensor = aten::add({v}a, %one, %one)")
            lines.append(f"  {v} : Tensor = aten::div({names[s[1]]}, {v}b)")
        else:
            lines.append(f"  {v} : Tensor = " + _TS[s[0]].format(names[s[1]], names[s[2]]))
        names.append(v)
    lines.append(f"  return ({', '.join(names[i] for i in outs)})")
    return "\n".join(lines) + "\n"


@settings(max_examples=15, deadline=None)
@given(_dags())
def test_random_dags_match_torch_structure(dag):
    # the fields that do not depend on which values each formula saves: real outputs, the
    # output part of df_input_vjps, df_output_vjps, GradOf and AutogradAdd counts
    n_in, rg, steps, outs = dag
    rg = [True] * n_in                 # torch's Python binding treats every value as grad
    xs = [ndgrad.randn(3, requires_grad=True) for _ in range(n_in)]
    g = differentiate(trace_graph(lambda *a: _run_dag(ndgrad, a, steps, outs),
                                  tuple(xs)).graph)
    ora = _torch_oracle(_dag_ir(n_in, rg, steps, outs))
    mine = _fields(g)
    assert mine["f_real_outputs"] == ora["f_real_outputs"]
    n = g.f_real_outputs
    assert [i for i in mine["df_input_vjps"] if i < n] == \
        [i for i in ora["df_input_vjps"] if i < n]
    # inputs on a path to an output (the tracer drops dead nodes; torch keeps their GradOf)
    need = set(outs)
    for k in reversed(range(len(steps))):
        if n_in + k in need:
            need.update(steps[k][1:])
    reach = {i for i in range(n_in) if i in need}
    assert set(mine["df_output_vjps"]) == set(ora["df_output_vjps"]) & reach
    check_contract(g)


def test_repeated_outputs_and_inputs_as_outputs():
    x = ndgrad.randn(3, requires_grad=True)
    y = ndgrad.randn(3, requires_grad=True)

    def f(x, y):
        z = x * y
        return z, z, x, y.exp()

    g = differentiate(trace_graph(f, (x, y)).graph)
    check_contract(g)
    assert g.df_input_vjps[:4] == [0, 1, 2, 3]
    ir = """
graph(%x : Float(3, strides=[1], requires_grad=1, device=cpu),
      %y : Float(3, strides=[1], requires_grad=1, device=cpu)):
  %z : Tensor = aten::mul(%x, %y)
  %e : Tensor = aten::exp(%y)
  return (%z, %z, %x, %e)
"""
    ora = _torch_oracle(ir)
    mine = _fields(g)
    for k in ("f_real_outputs", "df_input_vjps", "df_input_captured_inputs",
              "df_input_captured_outputs", "df_output_vjps", "grad_of", "autograd_add"):
        assert mine[k] == ora[k], k
    xv, yv = ndgrad.randn(3), ndgrad.randn(3)
    cots = [ndgrad.randn(3) for _ in range(4)]
    _, grads = run_gradient(g, [xv, yv], cots)
    xe, ye = xv.clone().requires_grad_(), yv.clone().requires_grad_()
    want = ndgrad.autograd.grad(list(f(xe, ye)), (xe, ye), cots)
    assert_same(grads[0], want[0], exact=False)
    assert_same(grads[1], want[1], exact=False)


@pytest.mark.parametrize("dtype", [ndgrad.float16, ndgrad.bfloat16, ndgrad.complex64])
def test_other_dtypes(dtype):
    x = ndgrad.randn(2, 3).to(dtype).requires_grad_()
    g = differentiate(trace_graph(lambda x: (x * x).sum(), (x,)).graph)
    check_contract(g)
    xv = ndgrad.randn(2, 3).to(dtype)
    gy = ndgrad.ones(()).to(dtype)
    _, grads = run_gradient(g, [xv], [gy])
    xe = xv.clone().requires_grad_()
    (want,) = ndgrad.autograd.grad((xe * xe).sum(), xe, gy)
    assert_same(grads[0], want)


def test_rule_branching_on_zeros_is_not_baked():
    # prod's rule takes another path when the input holds zeros; traced on values without
    # zeros, the graph must still be right for inputs with zeros (the rule runs at run time)
    x = ndgrad.tensor([[1.5, 2.0, -0.5], [0.7, 1.1, 3.0]], dtype=ndgrad.float64,
                      requires_grad=True)
    g = differentiate(trace_graph(lambda x: x.prod(1), (x,)).graph, [x.detach()])
    xv = ndgrad.tensor([[1.5, 0.0, -0.5], [0.0, 0.0, 3.0]], dtype=ndgrad.float64)
    gy = ndgrad.tensor([1.0, 2.0], dtype=ndgrad.float64)
    _, grads = run_gradient(g, [xv], [gy])
    xe = xv.clone().requires_grad_()
    (want,) = ndgrad.autograd.grad(xe.prod(1), xe, gy)
    assert_same(grads[0], want)
