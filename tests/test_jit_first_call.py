"""The first call of a compiled function (ndgrad/jit/api.py Note [The tracing call's result],
tracer.py Note [The tracer holds nothing alive], Note [Data leaving the op table]): it traces
once, builds everything (differentiation, passes, code) in that call, keeps no intermediate
alive longer than eager, and refuses values that leave the op table through NumPy views."""

import gc
import weakref

import numpy as np
import pytest
import torch

import ndgrad
import ndgrad.jit.api as jit_api
from ndgrad.jit import TraceError


@pytest.fixture(autouse=True)
def _seed():
    ndgrad.manual_seed(0)


def _counting(monkeypatch):
    """Count code generation and differentiation calls made by ndgrad.jit.api."""
    import importlib
    diff_mod = importlib.import_module("ndgrad.jit.differentiate")
    counts = {"generate": 0, "differentiate": 0}
    gen, diff = jit_api.generate, diff_mod.differentiate

    def generate(*a, **k):
        counts["generate"] += 1
        return gen(*a, **k)

    def differentiate(*a, **k):
        counts["differentiate"] += 1
        return diff(*a, **k)
    monkeypatch.setattr(jit_api, "generate", generate)
    monkeypatch.setattr(diff_mod, "differentiate", differentiate)
    return counts


# ---------------------------------------------------------------------------- trace once
def test_compile_runs_the_function_once_on_its_first_call():
    calls = []

    @ndgrad.compile
    def f(x):
        calls.append(1)                  # a Python side effect: eager runs it once per call
        return (x * 2).sin().sum()

    x = ndgrad.randn(4, requires_grad=True)
    out = f(x)
    assert len(calls) == 1               # traced once: no second (check) run
    want = torch.tensor(x._data, requires_grad=True)
    (want * 2).sin().sum().backward()
    out.backward()
    np.testing.assert_allclose(x.grad._data, want.grad.numpy(), rtol=1e-6)
    f(x)
    assert len(calls) == 1               # the compiled code does not run the Python body


def test_jit_trace_check_trace_runs_twice_and_can_be_turned_off():
    calls = []

    def f(x):
        calls.append(1)
        return x.exp()

    ndgrad.jit.trace(f, (ndgrad.randn(3),))
    assert len(calls) == 2               # torch.jit.trace's default: check_trace=True
    calls.clear()
    ndgrad.jit.trace(f, (ndgrad.randn(3),), check_trace=False)
    assert len(calls) == 1


def test_check_trace_catches_a_value_computed_from_the_data_with_numpy():
    def sneaky(x):
        m = ndgrad.tensor((x.detach()._data > 0).astype(np.float32))     # NumPy, a copy
        return x * m

    x = ndgrad.tensor(np.random.default_rng(0).standard_normal(64), dtype=ndgrad.float32)
    with pytest.raises(TraceError, match="computed from the data outside the op table"):
        ndgrad.jit.trace(sneaky, (x,))
    # without the check a fresh NumPy array computed through the private _data is a constant
    # (docs/differences.md); the graph says so
    cf = ndgrad.jit.trace(sneaky, (x,), check_trace=False)
    assert cf.graph.nodes()[0].kind() == "Constant"


# ---------------------------------------------------------------------------- data leaving
def test_a_numpy_view_of_traced_data_wrapped_as_a_tensor_is_refused():
    def f(x):
        return x[1:] * ndgrad.from_numpy(x._data[1:])

    with pytest.raises(TraceError, match=r"test_jit_first_call.py:\d+.*view of a traced"):
        ndgrad.compile(f)(ndgrad.randn(4))


def test_a_numpy_view_of_an_intermediate_is_refused():
    def f(x):
        y = x.exp()
        return x + ndgrad.from_numpy(y._data[:, 0:1])

    with pytest.raises(TraceError, match="view of a traced tensor's data"):
        ndgrad.compile(f)(ndgrad.randn(3, 2))


def test_a_view_of_traced_data_assigned_through_setitem_is_refused():
    # the assigned tensor wraps a NumPy view of an input
    def f(x, v):
        y = x.clone()
        y[0] = ndgrad.from_numpy(v._data[1:])
        return y

    with pytest.raises(TraceError, match="view of a traced tensor's data"):
        ndgrad.compile(f)(ndgrad.randn(2, 3), ndgrad.randn(4))


def test_a_tensor_sharing_a_traced_array_is_the_same_value():
    # wrapping the very array an op produced is that op's value, not a constant
    def f(x):
        y = x.sin()
        return ndgrad.from_numpy(y._data) * 2

    cf = ndgrad.compile(f)
    cf(ndgrad.randn(3))
    x2 = ndgrad.randn(3)
    np.testing.assert_array_equal(cf(x2)._data, (x2.sin() * 2)._data)
    assert not any(n.kind() == "Constant" for n in cf.specializations()[0].graph.nodes())


# ---------------------------------------------------------------------------- the first call builds
def test_the_first_call_differentiates_and_generates_code(monkeypatch):
    counts = _counting(monkeypatch)
    cf = ndgrad.compile(lambda x, w: (x @ w).tanh().sum())
    x, w = ndgrad.randn(2, 3), ndgrad.randn(3, 4, requires_grad=True)
    out = cf(x, w)
    assert counts == {"generate": 1, "differentiate": 1}
    spec = cf.specializations()[0]
    assert spec.gradient is not None and "def f(" in spec.code
    out.backward()                       # the backward variant is generated on first use
    counts_after_first = dict(counts)
    cf(x, w)
    assert counts == counts_after_first  # the second call builds nothing
    assert "def f(" in cf.code


def test_jit_trace_builds_before_returning(monkeypatch):
    counts = _counting(monkeypatch)
    a = ndgrad.randn(2, requires_grad=True)
    cf = ndgrad.jit.trace(lambda a: a * a, (a,), check_trace=False)
    assert counts == {"generate": 1, "differentiate": 1}
    assert cf.gradient.df_input_vjps == [0]


def test_the_first_call_returns_the_traced_run_of_a_mutating_function_once():
    @ndgrad.compile
    def f(x):
        x.add_(1)
        return x * 2

    x = ndgrad.zeros(3)
    out = f(x)
    np.testing.assert_array_equal(x._data, [1, 1, 1])     # mutated once
    np.testing.assert_array_equal(out._data, [2, 2, 2])
    f(x)
    np.testing.assert_array_equal(x._data, [2, 2, 2])


def test_tensors_built_and_returned_by_the_function_stay_constants_not_inputs():
    calls = []

    @ndgrad.compile
    def f(x):
        calls.append(1)
        z = ndgrad.zeros(4)
        return x + 1, z, z[1:]

    out = f(ndgrad.ones(2))
    assert len(calls) == 1
    spec = f.specializations()[0]
    assert len(spec.graph.inputs()) == 1 and not spec.lifted
    a, z, zv = f(ndgrad.ones(2))
    np.testing.assert_array_equal(z._data, np.zeros(4))
    assert zv._base is z                 # the view is rebuilt on the returned tensor
    assert z is not out[1]               # a fresh tensor per call, as eager


def test_a_closed_over_tensor_returned_is_still_lifted():
    w = ndgrad.ones(3)

    @ndgrad.compile
    def f(x):
        return x * w, w

    f(ndgrad.ones(3))
    assert f.specializations()[0].lifted == (w,)
    w.mul_(2)
    y, w_out = f(ndgrad.ones(3))
    np.testing.assert_array_equal(y._data, [2, 2, 2])
    assert w_out is w


# ---------------------------------------------------------------------------- memory
def test_intermediates_die_during_the_trace_as_in_eager():
    refs = []
    alive_during_trace = []

    def f(x):
        h = x
        for _ in range(6):
            h = (h * 1.5).sin()          # x needs no grad: nothing is saved for backward
            refs.append((weakref.ref(h), weakref.ref(h._data)))
        alive_during_trace.append(sum(r() is not None or a() is not None
                                      for r, a in refs[:-1]))
        return h

    cf = ndgrad.compile(f)
    x = ndgrad.randn(8)
    before = gc.isenabled()
    out = cf(x)
    assert gc.isenabled() == before      # the collector is back on after the build
    assert alive_during_trace == [0]     # the tracer kept none of the earlier values alive
    r = weakref.ref(out)
    del out
    assert r() is None                   # nothing keeps the first call's output either
    np.testing.assert_allclose(cf(x)._data, f(x)._data)


def test_intermediates_saved_for_backward_die_after_the_inner_backward():
    refs = []
    alive = []

    def step(x, w):
        h = (x @ w).tanh()
        refs.append(weakref.ref(h._data))
        loss = (h * h).sum()
        g, = ndgrad.autograd.grad(loss, [w])
        del h, loss
        alive.append(refs[0]() is not None)
        return g

    x, w = ndgrad.randn(4, 3), ndgrad.randn(3, 2, requires_grad=True)
    cf = ndgrad.compile(step)
    g1 = cf(x, w)
    assert alive == [False]              # freed when eager frees it: after the grad call
    np.testing.assert_allclose(cf(x, w)._data, g1._data, rtol=1e-12)


def test_a_large_broadcast_of_a_constant_is_not_stored_dense():
    # the backward of mean() is a broadcast scalar; folding it (and arithmetic on it) at
    # compile time would keep a dense (512, 256) array alive as long as the function
    import tracemalloc

    def step(x):
        return ndgrad.autograd.grad((x * x).mean(), [x])[0]

    x = ndgrad.randn(512, 256, requires_grad=True)
    cf = ndgrad.compile(step)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        g = cf(x)
        del g
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 512 * 256 * 4 // 4      # well under one dense float32 copy
    np.testing.assert_allclose(cf(x)._data, 2 * x._data / x.numel(), rtol=1e-6)


def test_the_patches_follow_a_rebound_function(monkeypatch):
    # the functions wrapped while tracing (isclose is still recorded as a Call node) are
    # planned once and reused; a name rebound since the last trace is planned again (its new
    # function is wrapped, then put back)
    ndgrad.compile(lambda x: x.sum())(ndgrad.ones(2))
    orig = ndgrad.isclose

    def my_isclose(a, b):
        return orig(a, b)
    monkeypatch.setattr(ndgrad, "isclose", my_isclose)
    inside = []

    def f(x):
        inside.append(getattr(ndgrad.isclose, "__wrapped__", None))
        return ndgrad.isclose(x, x * 1)

    out = ndgrad.compile(f)(ndgrad.ones(2))
    assert inside == [my_isclose]
    assert ndgrad.isclose is my_isclose
    np.testing.assert_array_equal(out._data, [True, True])


class _Triple(ndgrad.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x)
        return x * 2, x * y

    @staticmethod
    def backward(ctx, g1, g2):
        (x,) = ctx.saved_tensors
        return g1 * 3 + g2, g2 * x


class _Pair(ndgrad.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2, 5

    @staticmethod
    def backward(ctx, g, _):
        return g


def test_custom_function_keeps_its_backward_when_compiled():
    # the Function is recorded whole (a Call node) and its own backward runs, on the first
    # call and later ones; eager gives the same gradients
    def f(x, w):
        a, b = _Triple.apply(x * w, w)
        return (a * b).sum()
    x, w = ndgrad.tensor([1.0, 2.0, 3.0]), ndgrad.tensor([0.5, -1.0, 2.0], requires_grad=True)
    f(x, w).backward()
    want = w.grad.clone()
    for g in (ndgrad.compile(f), ndgrad.jit.trace(f, (x, w))):
        for _ in range(2):
            w.grad = None
            g(x, w).backward()
            np.testing.assert_allclose(w.grad._data, want._data, rtol=1e-6)
    assert "Call" in [n.kind() for n in ndgrad.jit.trace(f, (x, w)).graph.nodes()]


def test_custom_function_with_non_tensor_outputs_is_refused():
    x = ndgrad.ones(2, requires_grad=True)
    with pytest.raises(ndgrad.jit.TraceError, match="not tensors"):
        ndgrad.compile(lambda t: _Pair.apply(t)[0].sum())(x)


def test_module_with_backward_hook_keeps_its_gradients_when_compiled():
    # the hook's identity Function is recorded whole; the gradients are eager's (the hook
    # itself fires in eager only: docs/differences.md)
    lin = ndgrad.nn.Linear(3, 2)
    lin.register_full_backward_hook(lambda m, gi, go: None)
    x = ndgrad.ones(4, 3)
    with pytest.warns(UserWarning, match="no inputs require gradients"):
        lin(x).sum().backward()
    want = lin.weight.grad.clone()
    cf = ndgrad.compile(lambda t: lin(t).sum())
    for _ in range(2):
        lin.weight.grad = None
        cf(x).backward()
        np.testing.assert_allclose(lin.weight.grad._data, want._data, rtol=1e-6)


def test_traced_function_names_a_replaced_lifted_tensor():
    lin = ndgrad.nn.Linear(3, 4)
    tf = ndgrad.jit.trace(lambda x: lin(x).sum(), (ndgrad.ones(2, 3),))
    lin.weight = ndgrad.nn.Parameter(ndgrad.ones(4, 3))
    with pytest.raises(RuntimeError, match="reads outside its arguments .* was replaced"):
        tf(ndgrad.ones(2, 3))
