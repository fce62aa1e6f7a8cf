"""Transient memory of the compiled path (Note [Example values are transient] in
ndgrad/jit/differentiate.py, Note [Arguments owned by the backward] in ndgrad/jit/executor.py),
measured with tracemalloc (deterministic for NumPy's allocations)."""

import gc
import tracemalloc

import numpy as np
import pytest
import torch

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


# Note [Temporaries of tanh_backward] (ndgrad/ops/pointwise.py): the kernel a traced or
# create_graph backward runs for tanh makes one array, with the out-of-place formula's values.
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tanh_backward_makes_one_array_with_the_formula_values(dtype):
    rng = np.random.default_rng(1)
    g = ndgrad.tensor(rng.standard_normal((64, 512)).astype(dtype))     # >= 16384 elements
    r = ndgrad.tensor(np.tanh(rng.standard_normal((64, 512))).astype(dtype))
    g0, r0 = g._data.copy(), r._data.copy()
    out, kept, peak = _measure(lambda: ndgrad.ops.pointwise.tanh_backward(g, r))
    want = g0 * (dtype(1) - r0 * r0)
    np.testing.assert_array_equal(out._data, want)
    ref = torch.ops.aten.tanh_backward(torch.tensor(g0), torch.tensor(r0)).numpy()
    eps = np.finfo(dtype).eps         # torch may fuse 1 - r * r: cancellation near |r| = 1
    np.testing.assert_allclose(out._data, ref, rtol=8 * eps, atol=8 * eps * np.abs(g0).max())
    np.testing.assert_array_equal(g._data, g0)            # inputs untouched, result is new
    np.testing.assert_array_equal(r._data, r0)
    assert not np.may_share_memory(out._data, g._data)
    assert not np.may_share_memory(out._data, r._data)
    assert out._data.dtype == dtype
    size = g0.nbytes
    assert peak < size + size // 4, peak / size           # three arrays before


def test_tanh_backward_mixed_dtypes_and_small_arrays_keep_their_results():
    rng = np.random.default_rng(2)
    g64 = rng.standard_normal((128, 256))
    r32 = np.tanh(rng.standard_normal((128, 256))).astype(np.float32)
    got = ndgrad.ops.pointwise.TANH_BACKWARD.forward(g64, r32)   # no in-place path: float64
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, g64 * (np.float32(1) - r32 * r32))
    small_g, small_r = rng.standard_normal(5), np.tanh(rng.standard_normal(5))
    np.testing.assert_array_equal(ndgrad.ops.pointwise.TANH_BACKWARD.forward(small_g, small_r),
                                  small_g * (1.0 - small_r * small_r))
    bcast = ndgrad.ops.pointwise.TANH_BACKWARD.forward(g64, np.float64(0.5) * np.ones(256))
    np.testing.assert_array_equal(bcast, g64 * 0.75)      # broadcast operand: out of place


def test_traced_deep_tanh_step_matches_eager_and_torch():
    # the whole-step traced run (Tensor rules) with the in-place tanh_backward kernel gives
    # eager's gradients and torch's
    xs = _inputs()

    def step(x, *Ws):
        loss = _mlp(x, *Ws)
        return loss.detach(), ndgrad.autograd.grad(loss, list(Ws))

    loss, grads = ndgrad.compile(step)(*xs)
    want = ndgrad.autograd.grad(_mlp(*xs), xs[1:])
    tx = [torch.tensor(x._data, requires_grad=x.requires_grad) for x in xs]
    h = tx[0]
    for W in tx[1:]:
        h = torch.tanh(h @ W)
    tg = torch.autograd.grad((h * h).mean(), tx[1:])
    for a, b, c in zip(grads, want, tg):
        np.testing.assert_allclose(a._data, b._data, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(a._data, c.numpy(), rtol=1e-10, atol=1e-14)


def test_relu_backward_op_keeps_one_byte_per_element_beside_its_result():
    # threshold_backward runs as an op in traced and create_graph backward passes (the
    # engine's raw rule writes into the gradient instead): its transient is the int8 mask
    # only (Note [First-call cost] in ndgrad/jit/tracer.py), with PyTorch's values
    from ndgrad.ops.pointwise import threshold_backward
    rng = np.random.default_rng(0)
    g = ndgrad.tensor(rng.standard_normal((N, N)))
    r = ndgrad.tensor(np.maximum(rng.standard_normal((N, N)), 0))
    out, kept, peak = _measure(lambda: threshold_backward(g, r))
    # the mask (1 byte per element) and the ufunc's cast buffer (8192 elements); the two
    # masks of before took a byte more per element
    assert kept >= VALUE and peak - kept <= N * N + 8192 * 8 + 4096, (peak - kept) / (N * N)
    want = torch.ops.aten.threshold_backward(torch.from_numpy(g.numpy()),
                                             torch.from_numpy(r.numpy()), 0)
    np.testing.assert_array_equal(out.numpy(), want.numpy())
