"""Tracing (ndgrad.jit.tracer): graphs, lifted tensors, functionalization, trace errors."""

from __future__ import annotations

import numpy as np
import pytest

import ndgrad
from ndgrad.jit import TraceError, interpret, trace_graph


@pytest.fixture(autouse=True)
def _seeded():
    ndgrad.manual_seed(0)      # the float32 comparisons below use random inputs


def _same(a, b):
    assert a.shape == b.shape and a._data.dtype == b._data.dtype
    np.testing.assert_array_equal(a._data, b._data)


def test_graph_printing_and_accessors():
    a = ndgrad.ones(2, 3, 4, requires_grad=True)
    b = ndgrad.ones(2, 3, 4, requires_grad=True)

    def f(a, b):
        return a * b * a + b

    g = trace_graph(f, (a, b)).graph
    g.lint()
    assert [n.kind() for n in g.nodes()] == ["mul", "mul", "add"]
    assert [v.debug_name for v in g.inputs()] == ["a", "b"]
    n0 = g.nodes()[0]
    assert n0.inputs() == g.inputs() and n0.outputs()[0].shape == (2, 3, 4)
    assert g.outputs()[0].node() is g.nodes()[2]
    text = str(g)
    assert text.splitlines()[0] == "graph(%a : f32[2, 3, 4] grad, %b : f32[2, 3, 4] grad):"
    assert "%0 : f32[2, 3, 4] grad = mul(%a, %b)" in text
    assert "test_jit_trace.py:" in text          # the user's line
    assert text.rstrip().endswith("return (%2)")
    dot = g.to_dot()
    assert dot.startswith('digraph "graph" {') and dot.count("->") >= 9


def test_interpret_matches_eager_on_new_inputs():
    rng = np.random.default_rng(0)
    x = ndgrad.tensor(rng.normal(size=(3, 4)))

    def f(x):
        return (ndgrad.where(x > 0, x, x * 0.5).exp().sum(1), (x < 0).sum())

    r = trace_graph(f, (x,))
    y = ndgrad.tensor(rng.normal(size=(3, 4)))
    out = interpret(r.graph, [y])
    for o, e in zip(out, f(y)):
        _same(o, e)
    kinds = [n.kind() for n in r.graph.nodes()]
    assert "gt" in kinds and "lt" in kinds and "Call" not in kinds     # comparisons are ops


def test_pytrees_and_constants():
    x = ndgrad.randn(3)

    def f(d, scale):
        return {"s": d["a"] * scale + d["b"], "l": [d["a"].sin(), 7]}

    r = trace_graph(f, ({"a": x, "b": x.cos()}, 2.0))
    assert r.num_inputs == 2 and r.num_outputs == 2
    from ndgrad.jit import unflatten
    out = unflatten(r.out_spec, interpret(r.graph, [x, x.cos()]))
    assert out["l"][1] == 7
    _same(out["s"], x * 2.0 + x.cos())


def test_closure_and_module_tensors_are_lifted_and_read_at_call_time():
    lin = ndgrad.nn.Linear(4, 3)
    w = ndgrad.randn(3)

    def f(x):
        k = ndgrad.ones(3) * 2       # built inside: a constant
        return lin(x) * w + k

    x = ndgrad.randn(5, 4)
    r = trace_graph(f, (x,))
    assert [v.debug_name for v in r.graph.inputs()] == ["x", "lin_weight", "lin_bias", "w"]
    assert r.lifted[0] is lin.weight and r.lifted[2] is w
    assert r.graph.inputs()[1].requires_grad
    with ndgrad.no_grad():
        w.mul_(3)                    # changed after tracing: read at call time
    out = interpret(r.graph, [x] + r.lifted)[0]
    np.testing.assert_allclose(out._data, f(x)._data, rtol=1e-6)


def test_trace_errors_name_the_line():
    x = ndgrad.randn(3)

    def branch(x):
        if x.sum() > 0:            # the line
            return x
        return -x

    with pytest.raises(TraceError, match=r"bool\(tensor\) at test_jit_trace.py:\d+"):
        trace_graph(branch, (x,))
    for fn, what in [(lambda x: x.sum().item(), r"Tensor.item\(\)"),
                     (lambda x: x.tolist(), r"Tensor.tolist\(\)"),
                     (lambda x: x.numpy(), r"Tensor.numpy\(\)"),
                     (lambda x: np.asarray(x), r"np.asarray\(tensor\)"),
                     (lambda x: float(x.sum()), r"float\(tensor\)")]:
        with pytest.raises(TraceError, match=what + r" at test_jit_trace.py:\d+"):
            trace_graph(fn, (x,))
    # random numbers the tracer cannot see (NumPy's Poisson algorithm on the generator, as the
    # Poisson sampler draws, outside ``_generator.draw``) are refused; dropout, ``randn`` and
    # gumbel_softmax's noise are random nodes (tests/test_jit_random.py)
    from ndgrad._generator import numpy_generator
    with pytest.raises(TraceError, match="random"):
        trace_graph(lambda x: x + ndgrad.from_numpy(
            numpy_generator(None).poisson(2.0, x.shape).astype(np.float32)), (x,))
    # the patched methods are restored afterwards
    assert x.sum().item() == float(x._data.sum(dtype=np.float32))
    assert bool(ndgrad.tensor(1.0))


def test_functionalization_views_and_mutated_inputs():
    x = ndgrad.randn(4, 3)

    def f(x):
        y = x * 2
        y[1:3].mul_(3)
        y.add_(1)
        v = y[0]
        v.zero_()
        return y, v

    r = trace_graph(f, (x,))
    r.graph.lint()
    kinds = [n.kind() for n in r.graph.nodes()]
    assert "view_scatter" in kinds and not any(k.endswith("_") and k != "zero_" for k in kinds)
    for o, e in zip(interpret(r.graph, [x]), f(x)):
        _same(o, e)

    def g(x, b):
        x.add_(b)
        x[0] = 5.0
        return x.sum()

    x0, b = ndgrad.randn(3), ndgrad.randn(3)
    r = trace_graph(g, (x0.clone(), b))
    assert r.mutated == [0] and len(r.graph.outputs()) == 2
    xe = x0.clone()
    se = g(xe, b)
    out = interpret(r.graph, [x0, b])
    _same(out[0], se)
    _same(out[1], xe)


def test_autograd_grad_inside_is_traced():
    w = ndgrad.randn(3, requires_grad=True)

    def step(x):
        loss = (x * w).sin().sum()
        (gw,) = ndgrad.autograd.grad(loss, w)
        return loss, gw

    x = ndgrad.randn(3)
    r = trace_graph(step, (x,))
    loss_v, gw_v = r.graph.outputs()
    assert loss_v.requires_grad and not gw_v.requires_grad   # create_graph=False: detached
    x2 = ndgrad.randn(3)
    out = interpret(r.graph, [x2, w])
    ref = step(x2)
    _same(out[0], ref[0])
    _same(out[1], ref[1])
    assert out[1].grad_fn is None


def test_nn_modules_with_wrapper_computed_parts():
    # normalizations compute statistics in Python: recorded whole as differentiable Call nodes,
    # run at call time; gradients through CallBackward. Max pooling is two op-table ops (Note
    # [Max pooling in the op table] in ops/nn_pool.py): no Call.
    from _jit_util import assert_same, run_gradient

    from ndgrad.jit import differentiate
    ln = ndgrad.nn.LayerNorm(3)
    pool = ndgrad.nn.MaxPool2d(2)
    for mod, shape, call in [(ln, (4, 3), True), (pool, (1, 2, 4, 4), False)]:
        x = ndgrad.randn(*shape, dtype=ndgrad.float32, requires_grad=True)
        r = trace_graph(mod, (x,))
        assert any(n.kind() == "Call" for n in r.graph.nodes()) == call
        g = differentiate(r.graph)
        assert any(n.kind() == "CallBackward" for n in g.df.all_nodes()) == call
        y = ndgrad.randn(*shape)
        gy = ndgrad.randn(*mod(y).shape)
        params = [t.detach() for t in r.lifted]
        real, grads = run_gradient(g, [y] + params, [gy])
        ye = y.clone().requires_grad_()
        out = mod(ye)
        assert_same(real[0], out.detach())
        want = ndgrad.autograd.grad(out, [ye] + list(r.lifted), gy)
        for i, w in enumerate(want):
            assert_same(grads[i], w, exact=False, rtol=1e-6)


def test_batchnorm_running_stats_update_at_call_time():
    bn = ndgrad.nn.BatchNorm1d(3)
    x = ndgrad.randn(8, 3)
    r = trace_graph(bn, (x,))
    assert float(bn.num_batches_tracked) == 1.0     # the trace ran once (the check restores)
    rm = bn.running_mean.clone()
    y = ndgrad.randn(8, 3)
    out = interpret(r.graph, [y] + r.lifted)
    ref = ndgrad.nn.BatchNorm1d(3)
    ref.running_mean.copy_(rm)
    ref.running_var.copy_(bn.running_var)          # (already updated by the interpreted call)
    assert not np.array_equal(bn.running_mean._data, rm._data)
    np.testing.assert_allclose(out[0]._data, ndgrad.nn.functional.batch_norm(
        y, rm, ndgrad.ones(3), training=True, weight=bn.weight, bias=bn.bias)._data,
        rtol=1e-5, atol=1e-6)


def test_functionalized_inplace_differentiates_like_eager():
    from _jit_util import assert_same, run_gradient

    from ndgrad.jit import differentiate

    def f(x, w):
        y = x * w
        y[0].mul_(2.0)
        y[:, 1:] = y[:, 1:].exp()
        return y.sum(1)

    x = ndgrad.randn(3, 4, requires_grad=True)
    w = ndgrad.randn(3, 4, requires_grad=True)
    g = differentiate(trace_graph(f, (x, w)).graph)
    xv, wv, gy = ndgrad.randn(3, 4), ndgrad.randn(3, 4), ndgrad.randn(3)
    real, grads = run_gradient(g, [xv, wv], [gy])
    xe, we = xv.clone().requires_grad_(), wv.clone().requires_grad_()
    out = f(xe, we)
    assert_same(real[0], out.detach())
    want = ndgrad.autograd.grad(out, (xe, we), gy)
    assert_same(grads[0], want[0], exact=False, rtol=1e-6)
    assert_same(grads[1], want[1], exact=False, rtol=1e-6)


def test_inplace_on_leaf_requiring_grad_raises_eagers_error():
    x = ndgrad.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        trace_graph(lambda x: x.add_(1), (x,))


def test_trace_check_finds_values_computed_outside_the_op_table():
    def sneaky(x):
        m = ndgrad.tensor(np.asarray(x.detach()._data > 0, dtype=np.float32))   # NumPy
        return x * m

    with pytest.raises(TraceError, match=r"computed from the data outside the op table"):
        trace_graph(sneaky, (ndgrad.randn(5),))
    r = trace_graph(sneaky, (ndgrad.randn(5),), check=False)     # unchecked: the mask is baked
    assert r.graph.nodes()[0].kind() == "Constant"


@pytest.mark.parametrize("name", ["lstm", "mha", "sdpa"])
def test_ops_with_scratch_lists(name):
    # recurrent cells and attention fill a ``saved`` list in their forward: a fresh list per
    # run (ScratchList); the same tensor passed three times stays one input
    from _jit_util import assert_same, run_gradient

    from ndgrad.jit import differentiate
    nn = ndgrad.nn
    if name == "lstm":
        mod, shapes = nn.LSTM(3, 4), [(2, 1, 3)]
        fn = lambda x: mod(x)[0]   # noqa: E731
    elif name == "mha":
        mod, shapes = nn.MultiheadAttention(4, 2), [(3, 1, 4)]
        fn = lambda x: mod(x, x, x)[0]   # noqa: E731
    else:
        shapes = [(1, 3, 4)]
        fn = lambda x: nn.functional.scaled_dot_product_attention(x, x, x)   # noqa: E731
    x = ndgrad.randn(*shapes[0], requires_grad=True)
    r = trace_graph(fn, (x,))
    g = differentiate(r.graph)
    y = ndgrad.randn(*shapes[0])
    out = fn(y.clone().requires_grad_())
    gy = ndgrad.randn(*out.shape)
    real, grads = run_gradient(g, [y] + [t.detach() for t in r.lifted], [gy])
    assert_same(real[0], out.detach(), exact=False, rtol=1e-5)
    ye = y.clone().requires_grad_()
    (want,) = ndgrad.autograd.grad(fn(ye), ye, gy)
    assert_same(grads[0], want, exact=False, rtol=1e-5)
    for _ in range(2):             # the scratch list does not grow across runs
        interpret(r.graph, [y] + r.lifted)
    assert all(not a for n in r.graph.nodes() for a in n.args if type(a) is list)


def test_out_arguments_are_functionalized():
    def f(a, b):
        c = ndgrad.empty(3)
        ndgrad.add(a, b, out=c)
        d = ndgrad.zeros(4)
        ndgrad.mul(a, b, out=d[1:])          # through a view of d
        return c * 2 + d[1:], d

    a, b = ndgrad.randn(3), ndgrad.randn(3)
    r = trace_graph(f, (a, b))
    r.graph.lint()
    x, y = ndgrad.randn(3), ndgrad.randn(3)
    for o, e in zip(interpret(r.graph, [x, y]), f(x, y)):
        _same(o, e)


def test_backward_inside_a_traced_function_is_refused():
    # loss.backward() accumulates into .grad: a side effect a compiled graph would not replay on
    # later calls, so tracing refuses it (both spellings) and the user's .grad is untouched,
    # also by the trace check's second run.
    w = ndgrad.ones(3, requires_grad=True)
    x = ndgrad.tensor([1.0, 2.0, 3.0])
    for call in (lambda loss: loss.backward(), lambda loss: ndgrad.autograd.backward(loss)):
        def step(x, call=call):
            loss = (w * x).sum()
            call(loss)
            return loss.detach()

        with pytest.raises(TraceError, match="accumulates into .grad"):
            trace_graph(step, (x,))
        assert w.grad is None
    with pytest.raises(TraceError, match="accumulates into .grad"):
        ndgrad.compile(lambda x: step(x))(x)
    (w * x).sum().backward()            # eager backward still works after the refusals
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 2.0, 3.0])


def test_an_interrupted_install_leaves_nothing_patched(monkeypatch):
    from ndgrad.jit import tracer
    from ndgrad.ops import _dispatch
    before = ndgrad.Tensor.__dict__["__bool__"]

    real = _dispatch.set_tracing

    def boom(*a):   # the install's last step is interrupted; switching off still works
        if a[0] is not None:
            raise KeyboardInterrupt
        real(*a)

    monkeypatch.setattr(_dispatch, "set_tracing", boom)
    with pytest.raises(KeyboardInterrupt):
        trace_graph(lambda x: x * 2, (ndgrad.ones(2),))
    monkeypatch.undo()
    assert ndgrad.Tensor.__dict__["__bool__"] is before
    assert tracer._active_count[0] == 0 and tracer.current_tracer() is None
    g = trace_graph(lambda x: x * 2, (ndgrad.ones(2),)).graph
    assert [n.kind() for n in g.nodes()] == ["mul"]
