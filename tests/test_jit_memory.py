"""Transient memory of the compiled path (Note [Example values are transient] in
ndgrad/jit/differentiate.py, Note [Arguments owned by the backward] in ndgrad/jit/executor.py),
measured with tracemalloc (deterministic for NumPy's allocations)."""

import gc
import tracemalloc

import numpy as np
import pytest

import ndgrad
from ndgrad.jit import differentiate, trace_graph

L, N = 8, 256
VALUE = N * N * 8          # bytes of one float64 N x N value


def _mlp(x, *Ws):
    h = x
    for W in Ws:
        h = ndgrad.tanh(h @ W)
    return (h * h).mean()


def _inputs(rg=True):
    rng = np.random.default_rng(0)
    return [ndgrad.tensor(rng.standard_normal((N, N)))] + \
        [ndgrad.tensor(rng.standard_normal((N, N)) / 16, requires_grad=rg) for _ in range(L)]


def _measure(fn):
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        out = fn()
        gc.collect()
        cur, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return out, cur - base, peak - base


def test_differentiate_keeps_no_example_values():
    xs = _inputs()
    g = trace_graph(_mlp, tuple(xs), check=False).graph
    grad, kept, peak = _measure(lambda: differentiate(g, [x._data for x in xs]))
    assert grad.df_output_vjps == list(range(1, L + 1))
    # nothing of the size of a value survives the build (the graphs are small objects) ...
    assert kept < VALUE // 2, kept
    # ... and at most about one set of f's values (2 per layer) lives at a time; holding both
    # example sets and every example gradient took over 70 values here
    assert peak < 40 * VALUE, peak / VALUE


def test_compiled_backward_frees_captures_like_eager():
    xs = _inputs()
    _, _, eager_peak = _measure(lambda: _mlp(*xs).backward())
    eager = [w.grad._data.copy() for w in xs[1:]]

    xs = _inputs()
    cf = ndgrad.compile(_mlp)
    cf(*xs).backward()                        # builds; the next call is a plain run
    for w in xs[1:]:
        w.grad = None

    def step():
        loss = cf(*xs)
        loss.backward()
        return loss
    loss, _, peak = _measure(step)
    for w, e in zip(xs[1:], eager):
        np.testing.assert_allclose(w.grad._data, e, rtol=1e-12, atol=1e-14)
    # the captures (one activation per layer) die as df goes, as eager's saved values do:
    # holding them all to the end of df took 8 values more here
    assert peak <= eager_peak + VALUE, (peak / VALUE, eager_peak / VALUE)
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()


def test_compiled_backward_retain_graph_keeps_captures():
    xs = _inputs()
    cf = ndgrad.compile(_mlp)
    loss = cf(*xs)
    loss.backward(retain_graph=True)
    first = [w.grad._data.copy() for w in xs[1:]]
    for w in xs[1:]:
        w.grad = None
    loss.backward()
    for w, e in zip(xs[1:], first):
        np.testing.assert_array_equal(w.grad._data, e)
