"""The passes: printed graphs before and after (golden text), the same results before and
after on random inputs, lint after every transform."""

from __future__ import annotations

import numpy as np
from _jit_util import assert_same, check_contract, run_gradient

import ndgrad
from ndgrad.jit import Graph, differentiate, interpret, trace_graph
from ndgrad.jit.passes import (eliminate_common_subexpression, eliminate_dead_code, fold_sizes,
                               specialize_autograd_zero)


def _strip(g):
    for n in g.all_nodes():
        n.source = ""
    return g


def _same_results(before: Graph, after: Graph, n: int = 2):
    rng = np.random.default_rng(0)
    for _ in range(n):
        ins = [ndgrad.tensor(rng.standard_normal(v.shape)).to(ndgrad.float32)
               if v.dtype == np.float32 else None for v in before.inputs()]
        for a, b in zip(interpret(before, ins), interpret(after, ins)):
            assert_same(a, b)


def test_cse_golden():
    x = ndgrad.randn(2, 3, requires_grad=True)
    g = _strip(trace_graph(lambda x: x.exp() + x.exp(), (x,)).graph)
    before = g.copy()
    assert str(g) == """\
graph(%x : f32[2, 3] grad):
  %0 : f32[2, 3] grad = exp(%x)
  %1 : f32[2, 3] grad = exp(%x)
  %2 : f32[2, 3] grad = add(%0, %1)
  return (%2)
"""
    eliminate_common_subexpression(g)
    g.lint()
    assert str(g) == """\
graph(%x : f32[2, 3] grad):
  %0 : f32[2, 3] grad = exp(%x)
  %1 : f32[2, 3] grad = add(%0, %0)
  return (%1)
"""
    _same_results(before, g)


def test_dce_golden():
    from ndgrad.ops._dispatch import REGISTRY
    exp, sin = REGISTRY["exp"][0], REGISTRY["sin"][0]
    g = Graph()
    x = g.add_input((3,), np.float32, name="x")
    a = g.insert_op(exp, [x], (), [((3,), np.float32, False)]).output()
    g.insert_op(sin, [a], (), [((3,), np.float32, False)])       # dead
    g.register_output(a)
    g.lint()
    before = g.copy()
    eliminate_dead_code(g.block())
    g.lint()
    assert str(g) == "graph(%x : f32[3]):\n  %0 : f32[3] = exp(%x)\n  return (%0)\n"
    _same_results(before, g)


_TANH = lambda a, b: (a * b + 2).tanh()   # noqa: E731

_DF_UNOPTIMIZED = """\
df = graph(%0 : f32[2, 3], %a : f32[2, 3], %b : f32[3], %1 : f32[2, 3]):
  %2 : f32[2, 3] = GradOf[name="tanh"](%0)
    block0():
      %3 : f32[2, 3] = tanh_backward(%0, %1)
      %4 : f32[2, 3] = SumToSize[size=(2, 3)](%3)
      -> (%4)
  %5 : f32[2, 3] = GradOf[name="add"](%2)
    block0():
      %6 : f32[2, 3] = SumToSize[size=(2, 3)](%2)
      -> (%6)
  %7 : f32[2, 3], %8 : f32[3] = GradOf[name="mul"](%5)
    block0():
      %9 : f32[2, 3] = mul(%5, %b)
      %10 : f32[2, 3] = mul(%5, %a)
      %11 : f32[2, 3] = SumToSize[size=(2, 3)](%9)
      %12 : f32[3] = SumToSize[size=(3,)](%10)
      -> (%11, %12)
  return (%7, %8)
"""
_DF_OPTIMIZED = """\
df = graph(%0 : f32[2, 3], %a : f32[2, 3], %b : f32[3], %1 : f32[2, 3]):
  %2 : f32[2, 3] = GradOf[name="tanh"](%0)
    block0():
      %3 : f32[2, 3] = tanh_backward(%0, %1)
      -> (%3)
  %4 : f32[2, 3] = GradOf[name="add"](%2)
    block0():
      -> (%2)
  %5 : f32[2, 3], %6 : f32[3] = GradOf[name="mul"](%4)
    block0():
      %7 : f32[2, 3] = mul(%4, %b)
      %8 : f32[2, 3] = mul(%4, %a)
      %9 : f32[3] = SumToSize[size=(3,)](%8)
      -> (%7, %9)
  return (%5, %6)
"""
_DF_LOWERED = """\
graph(%0 : f32[2, 3], %a : f32[2, 3], %b : f32[3], %1 : f32[2, 3]):
  %2 : f32[2, 3] = tanh_backward(%0, %1)
  %3 : f32[2, 3] = mul(%2, %b)
  %4 : f32[2, 3] = mul(%2, %a)
  %5 : f32[3] = SumToSize[size=(3,)](%4)
  return (%3, %5)
"""


def _tanh_gradient(optimize: bool):
    a = ndgrad.randn(2, 3, requires_grad=True)
    b = ndgrad.randn(3, requires_grad=True)
    return differentiate(_strip(trace_graph(_TANH, (a, b)).graph), optimize_graphs=optimize)


def test_optimize_fold_sizes_and_lower_grad_of_golden():
    g0, g1 = _tanh_gradient(False), _tanh_gradient(True)
    for g in (g0, g1):
        check_contract(g)
    assert str(g0).split("df = ")[1] == _DF_UNOPTIMIZED[len("df = "):]
    assert str(g1).split("df = ")[1] == _DF_OPTIMIZED[len("df = "):]
    _same_results(g0.df, g1.df)
    # fold_sizes alone on the unoptimized df removes the identity SumToSize nodes
    df = g0.df.copy()
    fold_sizes(df.block())
    df.lint()
    assert [tuple(n.attrs["size"]) for n in df.all_nodes() if n.kind() == "SumToSize"] == \
        [(3,)]
    _same_results(g0.df, df)
    low = g1.lowered_df()
    low.lint()
    assert str(low) == _DF_LOWERED
    _same_results(g1.df, low)
    # f then df, before and after the passes, against eager
    rng = np.random.default_rng(3)
    av = ndgrad.tensor(rng.standard_normal((2, 3))).float()
    bv = ndgrad.tensor(rng.standard_normal(3)).float()
    gy = ndgrad.tensor(rng.standard_normal((2, 3))).float()
    ae, be = av.clone().requires_grad_(), bv.clone().requires_grad_()
    want = ndgrad.autograd.grad(_TANH(ae, be), (ae, be), gy)
    for g in (g0, g1):
        _, grads = run_gradient(g, [av, bv], [gy])
        assert_same(grads[0], want[0])
        assert_same(grads[1], want[1])


def test_lift_constants_into_df():
    x = ndgrad.randn(5, 4, requires_grad=True)
    w = ndgrad.randn(3, 4, requires_grad=True)

    def fn(x, w):
        return (x @ w.t()).sum() + (w * ndgrad.full((3, 4), 2.0)).sum()

    g0 = differentiate(trace_graph(fn, (x, w)).graph, optimize_graphs=False)
    g1 = differentiate(trace_graph(fn, (x, w)).graph)
    # unoptimized: the constant is captured (an extra f output); lifted: rebuilt in df
    consts0 = [n for n in g0.df.nodes() if n.kind() == "Constant"]
    consts1 = [n for n in g1.df.nodes() if n.kind() == "Constant"]
    assert not consts0 and len(consts1) == 1
    assert len(g0.f.outputs()) == len(g1.f.outputs()) + 1
    assert g0.f.outputs()[1].node().kind() == "Constant"
    xv, wv, gy = ndgrad.randn(5, 4), ndgrad.randn(3, 4), ndgrad.tensor(1.5)
    r0 = run_gradient(g0, [xv, wv], [gy])[1]
    r1 = run_gradient(g1, [xv, wv], [gy])[1]
    for k in (0, 1):
        assert_same(r0[k], r1[k])


def test_specialize_autograd_zero():
    # an output that needs no gradient: its GradOf gets undefined inputs and disappears
    x = ndgrad.randn(3, requires_grad=True)
    g = differentiate(trace_graph(lambda x: (x.sin(), x.cos()), (x,)).graph)
    check_contract(g)
    xv = ndgrad.randn(3)
    _, grads = run_gradient(g, [xv], [ndgrad.ones(3), None])
    assert_same(grads[0], xv.cos())
    _, grads = run_gradient(g, [xv], [None, None])
    assert grads[0] is None
    # the pass on a block: AutogradAdd(zero, v) is v
    from ndgrad.jit.ir import Node
    gr = Graph()
    v = gr.add_input((3,), np.float32, name="v")
    z = gr.insert_prim("AutogradZero", [], [((3,), np.float32, False)]).output()
    s = gr.insert_prim("AutogradAdd", [z, v], [((3,), np.float32, False)]).output()
    gr.register_output(s)
    specialize_autograd_zero(gr.block())
    eliminate_dead_code(gr.block())
    gr.lint()
    assert str(gr) == "graph(%v : f32[3]):\n  return (%v)\n"
    assert Node is not None


def test_deduplicate_captures_recomputes_views_in_df():
    # a view used only by the backward of a value that is captured anyway is recomputed in df
    from ndgrad.jit.differentiate import (_Reverse, deduplicate_captures,
                                          get_reverse_captures)
    from ndgrad.jit.gradient import Gradient
    from ndgrad.jit.ir import Block, Node
    from ndgrad.ops._dispatch import REGISTRY
    t_op = REGISTRY["t"][0]
    grad = Gradient()
    f = grad.f
    w = f.add_input((3, 4), np.float32, name="w")
    wt = f.insert_op(t_op, [w], (), [((4, 3), np.float32, False)]).output()
    rb = Block(f)
    use = Node("AutogradAdd")
    use.add_input(wt)
    use.add_input(wt)
    use.add_output((4, 3), np.float32, False)
    rb.append(use)
    use2 = Node("Detach")
    use2.add_input(w)
    use2.add_output((3, 4), np.float32, False)
    rb.append(use2)
    assert get_reverse_captures(grad) == [w, wt]
    deduplicate_captures(grad, _Reverse(rb))
    assert get_reverse_captures(grad) == [w]
    assert rb.nodes()[0].kind() == "t" and rb.nodes()[0].input() is w
