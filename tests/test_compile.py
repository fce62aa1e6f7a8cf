"""``ndgrad.compile`` and ``ndgrad.jit.trace`` (ndgrad/jit/api.py, executor.py): the same script
run eagerly and compiled gives the same values, gradients, hook order and errors; one
``DifferentiableGraphBackward`` node per call; guards, the cache bound, write-back of mutated
inputs, aliasing outputs, no leaks, threads."""

import gc
import threading
import warnings
import weakref

import numpy as np
import pytest

import ndgrad
from ndgrad.autograd.gradcheck import gradcheck, gradgradcheck
from ndgrad.autograd.graph import saved_tensors_hooks
from ndgrad.jit import TraceError


def compiled(fn, *example):
    """``ndgrad.compile(fn)`` already traced on inputs like ``example`` (the tracing call
    returns the eager run's result, Note [The tracing call's result] in api.py)."""
    cf = ndgrad.compile(fn)
    cf(*[x.detach().clone().requires_grad_(x.requires_grad) if isinstance(x, ndgrad.Tensor)
         else x for x in example])
    return cf


def leaves(*shapes, seed=0, dtype=ndgrad.float64, requires_grad=True):
    rng = np.random.default_rng(seed)
    return [ndgrad.tensor(rng.standard_normal(s), dtype=dtype, requires_grad=requires_grad)
            for s in shapes]


def mlp(x, w1, b1, w2, b2):
    h = (x @ w1 + b1).tanh()
    return ((h @ w2 + b2) ** 2).mean(), h


def grads_of(fn, args):
    for a in args:
        a.grad = None
    loss, h = fn(*args)
    loss.backward()
    return loss.detach(), h.detach(), [None if a.grad is None else a.grad.clone() for a in args]


# ---------------------------------------------------------------------------- values
def test_values_and_gradients_equal_eager():
    args = leaves((4, 3), (3, 5), (5,), (5, 2), (2,))
    cf = compiled(mlp, *args)
    e_loss, e_h, e_grads = grads_of(mlp, args)
    c_loss, c_h, c_grads = grads_of(cf, args)
    assert cf(*args)[0].grad_fn.name() == "DifferentiableGraphBackward"
    np.testing.assert_array_equal(c_loss.numpy(), e_loss.numpy())
    np.testing.assert_array_equal(c_h.numpy(), e_h.numpy())
    for c, e in zip(c_grads, e_grads):
        np.testing.assert_allclose(c.numpy(), e.numpy(), rtol=1e-12, atol=1e-14)


def test_one_node_whose_edges_are_the_inputs_that_require_grad():
    x, = leaves((3,), requires_grad=False)
    w, b = leaves((3,), (3,), seed=1)
    cf = compiled(lambda x, w, b: (x * w + b).sin(), x, w, b)
    y = cf(x, w, b)
    node = y.grad_fn
    assert node.name() == "DifferentiableGraphBackward"
    accs = [fn for fn, _ in node.next_functions]
    assert [a.variable for a in accs] == [w, b]
    assert y.requires_grad and not y.is_leaf


def test_gradcheck_through_the_compiled_node():
    x, w = leaves((3, 2), (2, 2))
    cf = compiled(lambda x, w: (x @ w).tanh() * x.sum(), x, w)
    assert gradcheck(cf, (x, w))
    assert gradgradcheck(cf, (x, w))


def test_double_backward_equals_eager():
    x, w = leaves((4, 3), (3, 3))

    def inner(x, w):
        return (x @ w).tanh().sum()

    def penalty(f):
        g, = ndgrad.autograd.grad(f(x, w), [x], create_graph=True)
        (g * g).sum().backward()
        return w.grad.clone()

    cf = compiled(inner, x, w)
    e = penalty(inner)
    w.grad = None
    c = penalty(cf)
    np.testing.assert_allclose(c.numpy(), e.numpy(), rtol=1e-12)


def test_undefined_output_gradient_leaves_grad_none_as_eager():
    a, b = leaves((2,), (2,))
    f = lambda a, b: (a * 2, b * 3)   # noqa: E731
    cf = compiled(f, a, b)
    out = cf(a, b)
    out[0].sum().backward()
    assert b.grad is None
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 2.0])


# ---------------------------------------------------------------------------- hooks
def _hook_events(fn):
    a, b = leaves((3,), (3,))
    events = []
    a.register_hook(lambda g: events.append("a"))
    b.register_hook(lambda g: events.append("b"))
    y = fn(a, b)
    y.retain_grad()
    y.register_hook(lambda g: events.append("y"))
    y.grad_fn.register_prehook(lambda go: events.append("pre"))
    y.grad_fn.register_hook(lambda gi, go: events.append("post"))
    y.sum().backward()
    return events, y.grad


def test_hook_order_matches_eager():
    f = lambda a, b: a * b   # noqa: E731
    cf = compiled(f, *leaves((3,), (3,)))
    e_events, e_grad = _hook_events(f)
    c_events, c_grad = _hook_events(cf)
    assert c_events == e_events
    np.testing.assert_array_equal(c_grad.numpy(), e_grad.numpy())


def test_saved_tensor_hooks_see_the_captures():
    x, = leaves((3,))
    packed = []
    cf = compiled(lambda x: x.exp() * x, x)
    with saved_tensors_hooks(lambda t: packed.append(t.shape) or t, lambda t: t):
        y = cf(x)
    assert packed
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), (x.exp() * (x + 1)).detach().numpy())


# ---------------------------------------------------------------------------- saved values
def test_second_backward_raises_unless_retain_graph():
    x, = leaves((3,))
    cf = compiled(lambda x: x.exp().sum(), x)
    y = cf(x)
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.exp().detach().numpy())
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_inplace_change_of_a_captured_input_raises_eagers_error():
    def run(fn):
        x, w = leaves((3,), (3,))
        y = fn(x, w)
        with ndgrad.no_grad():
            w.mul_(2)
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
        return str(info.value)

    f = lambda x, w: x * w   # noqa: E731
    cf = compiled(f, *leaves((3,), (3,)))
    e, c = run(f), run(cf)
    assert "modified by an inplace operation" in c
    assert "is at version 1; expected version 0 instead" in c and \
        "is at version 1; expected version 0 instead" in e


def test_no_leak_after_backward():
    x, = leaves((50,))
    cf = compiled(lambda x: (x.tanh() * 2).sum(), x)
    y = cf(x)
    node = weakref.ref(y.grad_fn)
    saved = list(y.grad_fn._saved.arrays)      # executor._Captures
    refs = [weakref.ref(a) for a in saved if a.base is None]
    del saved
    y.backward()
    del y
    gc.collect()
    assert node() is None
    assert refs and all(r() is None for r in refs)


def test_no_node_and_no_captures_under_no_grad_and_inference_mode():
    x, = leaves((3,))
    cf = compiled(lambda x: x.exp() * 2, x)
    with ndgrad.no_grad():
        cf(x)
        y = cf(x)
    assert y.grad_fn is None and not y.requires_grad
    with ndgrad.inference_mode():
        cf(x)
        z = cf(x)
    assert z.grad_fn is None and z.is_inference()
    np.testing.assert_array_equal(z.numpy(), (x.exp() * 2).detach().numpy())


# ---------------------------------------------------------------------------- guards
def test_recompiles_per_guard_key_and_warns_once_at_the_cache_limit():
    calls = []

    def f(x, s):
        calls.append(1)
        return x * s

    cf = ndgrad.compile(f, cache_limit=2)
    x = ndgrad.ones(3)
    assert cf(x, 2.0).tolist() == [2.0] * 3            # traces (the tracer may run f twice)
    traced = len(calls)
    assert cf(x, 2.0).tolist() == [2.0] * 3            # cached: f is not run again
    assert len(calls) == traced
    assert cf(x, 3.0).tolist() == [3.0] * 3            # a new Python value: traced again
    assert len(calls) > traced
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert cf(ndgrad.ones(4), 3.0).tolist() == [3.0] * 4   # limit reached: eager
        assert cf(ndgrad.ones(5), 3.0).tolist() == [3.0] * 5
    assert len([m for m in w if "cache limit" in str(m.message)]) == 1
    assert len(cf.specializations()) == 2


def test_requires_grad_and_grad_mode_are_part_of_the_key():
    cf = ndgrad.compile(lambda x: x * 2)
    x = ndgrad.ones(2)
    cf(x)
    assert cf(x).grad_fn is None
    xr = ndgrad.ones(2, requires_grad=True)
    cf(xr)
    assert cf(xr).grad_fn.name() == "DifferentiableGraphBackward"
    with ndgrad.no_grad():
        cf(xr)
        assert cf(xr).grad_fn is None
    assert len(cf.specializations()) == 3


def test_trace_keeps_its_specialization_and_traces_other_inputs_again():
    a, b = leaves((2, 3), (2, 3))
    cf = ndgrad.jit.trace(lambda a, b: a * b * a + b, (a, b))
    assert [n.kind() for n in cf.graph.nodes()] == ["mul", "mul", "add"]
    g = cf.gradient
    assert (g.f_real_outputs, g.df_input_vjps, g.df_input_captured_inputs,
            g.df_input_captured_outputs, g.df_output_vjps) == (1, [0, 1], [0, 1], [1], [0, 1])
    out = cf(a, b)
    assert out.grad_fn.name() == "DifferentiableGraphBackward"
    assert "def f(a0, a1):" in cf.code
    c, d = leaves((3, 3), (3, 3))     # another kind of input: traced again (torch's traced
    np.testing.assert_allclose(cf(c, d).detach().numpy(),       # functions take other shapes)
                               (c * d * c + d).detach().numpy())
    assert cf(a, b).grad_fn.name() == "DifferentiableGraphBackward"


def test_data_dependent_control_flow_raises_or_runs_eagerly():
    def f(x):
        return x * 2 if x.sum() > 0 else x

    with pytest.raises(TraceError):
        ndgrad.compile(f)(ndgrad.ones(2))
    cf = ndgrad.compile(f, fullgraph=False)
    with pytest.warns(UserWarning, match="running eagerly"):
        assert cf(ndgrad.ones(2)).tolist() == [2.0, 2.0]
    assert cf(-ndgrad.ones(2)).tolist() == [-1.0, -1.0]


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown backend"):
        ndgrad.compile(lambda x: x, backend="tensorrt-like")
    dyn = ndgrad.compile(lambda x: x * 2, dynamic=True)    # a hint: one specialization a shape
    assert dyn(ndgrad.ones(2)).tolist() == [2.0, 2.0] and dyn(ndgrad.ones(3)).shape == (3,)
    assert len(dyn.specializations()) == 2
    with pytest.raises(TypeError, match="expects a callable"):
        ndgrad.compile(3)

    @ndgrad.compile(backend="numpy")
    def g(x):
        return x + 1
    g(ndgrad.zeros(1))
    assert g(ndgrad.zeros(1)).tolist() == [1.0]


# ---------------------------------------------------------------------------- aliasing, mutation
def test_outputs_that_are_inputs_or_views_of_them():
    cf = ndgrad.compile(lambda x: (x, x[0], x.t(), x * 2))
    x = ndgrad.ones(2, 2)
    cf(x)
    same, row, t, dbl = cf(x)
    assert same is x and row._base is x and t._base is x and dbl._base is None
    row.add_(5)
    assert x[0].tolist() == [6.0, 6.0]


def test_mutated_input_is_written_back_with_its_version_bumped():
    def f(x, buf):
        buf.add_(1)
        return x * buf

    e_buf, c_buf = ndgrad.zeros(2), ndgrad.zeros(2)
    cf = ndgrad.compile(f)
    x = ndgrad.ones(2)
    for k in range(3):
        e = f(x, e_buf)
        c = cf(x, c_buf)
        assert c.tolist() == e.tolist()
        assert c_buf.tolist() == e_buf.tolist() == [k + 1.0] * 2
        assert c_buf._version == e_buf._version


def test_mutation_of_a_non_leaf_rebases_its_history_as_eager():
    def f(y):
        y.mul_(3)
        return y.sum()

    def run(fn):
        x, = leaves((3,))
        y = x * 1
        out = fn(y)
        (out + y.sum()).backward()
        return x.grad

    cf = ndgrad.compile(f)
    e = run(f)
    run(cf)
    c = run(cf)
    np.testing.assert_array_equal(c.numpy(), e.numpy())


# ---------------------------------------------------------------------------- runtime
def test_two_threads_call_one_compiled_function():
    cf = compiled(lambda x, w: (x @ w).tanh().sum(), *leaves((3, 4), (4, 2)))
    results = {}

    def work(k):
        x, w = leaves((3, 4), (4, 2), seed=k)
        for _ in range(20):
            w.grad = None
            y = cf(x, w)
            y.backward()
        results[k] = (y.item(), w.grad.numpy().copy())

    ts = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for k in range(2):
        x, w = leaves((3, 4), (4, 2), seed=k)
        y = (x @ w).tanh().sum()
        y.backward()
        assert results[k][0] == pytest.approx(y.item(), rel=1e-12)
        np.testing.assert_allclose(results[k][1], w.grad.numpy(), rtol=1e-12)


def test_anomaly_mode_and_profiler_see_the_node():
    x, = leaves((3,))
    cf = compiled(lambda x: x.sqrt(), x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with ndgrad.autograd.detect_anomaly(check_nan=True):
            neg = -x.detach().abs() - 1
            cf(neg.requires_grad_())
            y = cf(neg)
            assert y.grad_fn.name() == "DifferentiableGraphBackward"
            assert y.grad_fn._anomaly_trace is not None
            with pytest.raises(RuntimeError, match="returned nan values"):
                y.sum().backward()
    x = x.detach().abs().requires_grad_()
    with ndgrad.autograd.profiler.profile() as prof:
        cf(x).sum().backward()
    names = [e.name for e in prof.function_events]
    assert any("DifferentiableGraphBackward" in n for n in names)


def test_batched_gradients_through_the_node():
    x, = leaves((3,))
    cf = compiled(lambda x: x.sin() * x, x)
    y = cf(x)
    eye = ndgrad.eye(3, dtype=ndgrad.float64)
    jac, = ndgrad.autograd.grad(y, [x], eye, is_grads_batched=True)
    expect = np.diag((x.cos() * x + x.sin()).detach().numpy())
    np.testing.assert_allclose(jac.numpy(), expect, rtol=1e-12)


def test_a_compiled_function_called_inside_a_traced_one_is_inlined():
    inner = ndgrad.compile(lambda x, w: (x @ w).tanh().sum())

    def penalty(w, x):
        g, = ndgrad.autograd.grad(inner(x, w), [x], create_graph=True)
        return (g * g).sum()

    outer = ndgrad.compile(penalty)
    x, w = leaves((3, 4), (4, 4))
    expect = None
    for _ in range(3):
        w.grad = None
        loss = outer(w, x)
        loss.backward()
        if expect is None:
            expect = (loss.item(), w.grad.numpy().copy())
        assert loss.item() == pytest.approx(expect[0], rel=1e-12)
        np.testing.assert_allclose(w.grad.numpy(), expect[1], rtol=1e-12)
    assert loss.grad_fn.name() == "DifferentiableGraphBackward"


def test_a_compiled_module_trains_like_the_eager_one():
    from ndgrad import nn

    def run(compile_module):
        ndgrad.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
        opt = ndgrad.optim.SGD(model.parameters(), lr=0.1)
        f = ndgrad.compile(model) if compile_module else model
        x, y = ndgrad.randn(16, 4), ndgrad.randn(16, 1)
        losses = []
        for _ in range(4):
            opt.zero_grad()
            loss = ((f(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    assert run(True) == run(False)


def test_keyword_arguments_and_non_tensor_outputs():
    g = ndgrad.compile(lambda x, *, scale=2.0: {"y": x * scale, "n": 3})
    x = ndgrad.ones(2)
    assert g(x, scale=3.0)["y"].tolist() == [3.0, 3.0]
    out = g(x, scale=3.0)
    assert out["n"] == 3 and out["y"].tolist() == [3.0, 3.0]
    assert g(x, scale=4.0)["y"].tolist() == [4.0, 4.0]


def test_forward_mode_tangents_through_a_compiled_function():
    import ndgrad.autograd.forward_ad as fwAD
    cf = compiled(lambda x: (x * x).sin(), *leaves((3,), requires_grad=False))
    x, t = leaves((3,), (3,), seed=4, requires_grad=False)
    with fwAD.dual_level():
        y = cf(fwAD.make_dual(x, t))
        _, tangent = fwAD.unpack_dual(y)
    expect = (2 * x * (x * x).cos() * t).numpy()
    np.testing.assert_allclose(tangent.numpy(), expect, rtol=1e-12)


def test_rebinding_a_closed_over_tensor_traces_again():
    # Note [Where lifted tensors live]: a closure variable, a global and a module parameter
    # rebound to another tensor are noticed on the next call (updates in place always are).
    s = ndgrad.tensor(2.0)
    f = ndgrad.compile(lambda x: x * s)
    x = ndgrad.ones(2)
    for _ in range(3):
        np.testing.assert_array_equal(f(x).numpy(), [2.0, 2.0])
    s = ndgrad.tensor(5.0)   # noqa: F841 (read by the lambda through its closure cell)
    np.testing.assert_array_equal(f(x).numpy(), [5.0, 5.0])
    np.testing.assert_array_equal(f(x).numpy(), [5.0, 5.0])

    lin = ndgrad.nn.Linear(3, 1)
    g = ndgrad.compile(lambda x: lin(x).sum())
    xs = ndgrad.ones(4, 3)
    for _ in range(3):
        g(xs)
    lin.weight = ndgrad.nn.Parameter(ndgrad.zeros(1, 3))
    lin.bias = ndgrad.nn.Parameter(ndgrad.zeros(1))
    assert g(xs).item() == 0.0
    assert g(xs).item() == 0.0
    with ndgrad.no_grad():
        lin.bias.fill_(1.0)        # in place: the same object, read at call time
    assert g(xs).item() == 4.0


GLOBAL_SCALE = ndgrad.tensor(3.0)


def _times_global(x):
    return x * GLOBAL_SCALE


def test_rebinding_a_global_tensor_traces_again():
    global GLOBAL_SCALE
    f = ndgrad.compile(_times_global)
    x = ndgrad.ones(2)
    for _ in range(2):
        np.testing.assert_array_equal(f(x).numpy(), [3.0, 3.0])
    old = GLOBAL_SCALE
    try:
        GLOBAL_SCALE = ndgrad.tensor(7.0)
        np.testing.assert_array_equal(f(x).numpy(), [7.0, 7.0])
    finally:
        GLOBAL_SCALE = old


def _detach_after_add(x):
    y = x * 2
    y.add_(1)
    return y.detach() * 3


def _data_after_add(x):
    y = x * 2
    y.add_(1)
    return y.data * 3


def _alias_after_setitem(x):
    y = x * 2
    y[0] = 100.0
    return y.detach() * 3


def _detach_under_no_grad_after_mul(x):
    y = x * 2
    y.mul_(5)
    with ndgrad.no_grad():
        w = y.detach()
    return w + 1


@pytest.mark.parametrize("fn", [_detach_after_add, _data_after_add, _alias_after_setitem,
                                _detach_under_no_grad_after_mul])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_an_alias_made_after_an_inplace_write_reads_the_written_value(fn, requires_grad):
    # detach()/.data wrap the array the in-place op wrote: the trace must map it to the new
    # value (the compiled calls returned the value before the write)
    expected = fn(ndgrad.tensor([1.0, 2.0], requires_grad=requires_grad)).tolist()
    compiled = ndgrad.compile(fn)
    for _ in range(3):
        assert compiled(ndgrad.tensor([1.0, 2.0], requires_grad=requires_grad)).tolist() == \
            expected


def test_an_alias_of_a_view_made_before_a_write_into_its_base_is_refused():
    # the view's array was produced before the write: the trace cannot tell its new value
    def stale(x):
        y = x * 2
        v = y[0:1]
        y.add_(1)
        return v.detach() * 3

    with pytest.raises(TraceError, match="view made before an in-place write"):
        ndgrad.compile(stale)(ndgrad.tensor([1.0, 2.0]))

    def disjoint(x):                 # the write does not touch the view: nothing is stale
        y = x * 2
        v = y[0:1]
        y[1:2].add_(1)
        return v.detach() * 3, y * 1
    expected = [t.tolist() for t in disjoint(ndgrad.tensor([1.0, 2.0]))]
    compiled = ndgrad.compile(disjoint)
    for _ in range(2):
        assert [t.tolist() for t in compiled(ndgrad.tensor([1.0, 2.0]))] == expected
