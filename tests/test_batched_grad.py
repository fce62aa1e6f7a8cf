"""Vectorized backward (``grad(..., is_grads_batched=True)``, Note [Batched backward]) over every
differentiable op of ``op_db``: the one batched pass against the per-row loop and against
PyTorch's ``is_grads_batched``; then batched passes through backward graphs (double backward,
the Hessian case) and through graphs recorded by a batched pass (``create_graph=True``)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch

import ndgrad
from ndgrad.autograd import api as nd_api
from op_db import OPS, make_inputs

B = 3
CASES = [pytest.param(op, i, id=f"{op.name}-{i}") for op in OPS for i in range(len(op.samples))
         if op.differentiable]
GRADGRAD_CASES = [c for c in CASES if c.values[0].double_backward]

# Graphs with nodes that have no batching rule run one backward per row; every op of op_db
# has one (in-place writes through views, PyTorch's CopySlices, included).
ROW_LOOP_OPS: set = set()


def _rng(op, i, salt):
    return np.random.default_rng(zlib.crc32(f"{op.name}/{i}/{salt}".encode()))


def _np(t):
    return t.detach().numpy(force=True) if isinstance(t, torch.Tensor) else t.detach().numpy()


def _setup(op, i, m):
    arrays = make_inputs(op, op.samples[i], _rng(op, i, "x"))
    inputs = [m.tensor(a, dtype=m.float64, requires_grad=True) for a in arrays]
    out = op.fn(m, *inputs)
    outs = [o for o in (out if isinstance(out, (tuple, list)) else [out]) if o.requires_grad]
    rng = _rng(op, i, "v")
    gos = [m.tensor(rng.standard_normal((B,) + tuple(o.shape)), dtype=o.dtype) for o in outs]
    return inputs, outs, gos


def _as_arrays(grads, inputs):
    return [np.zeros((B,) + tuple(x.shape)) if g is None else _np(g)
            for g, x in zip(grads, inputs)]


class _Counter:
    """Counts the calls to the per-row fallback."""

    def __init__(self, monkeypatch):
        self.n = 0
        real = nd_api._row_loop

        def counted(*a, **k):
            self.n += 1
            return real(*a, **k)
        monkeypatch.setattr(nd_api, "_row_loop", counted)


@pytest.mark.parametrize("op,i", CASES)
def test_batched_grad_matches_row_loop_and_torch(op, i, monkeypatch):
    calls = _Counter(monkeypatch)
    inputs, outs, gos = _setup(op, i, ndgrad)
    batched = ndgrad.autograd.grad(outs, inputs, gos, is_grads_batched=True, allow_unused=True,
                                   retain_graph=True)
    assert calls.n == (1 if op.name in ROW_LOOP_OPS else 0)
    rows = [ndgrad.autograd.grad(outs, inputs, [g[b] for g in gos], allow_unused=True,
                                 retain_graph=True) for b in range(B)]
    for k, (bg, x) in enumerate(zip(batched, inputs)):
        if bg is None:
            assert all(r[k] is None for r in rows)
            continue
        assert tuple(bg.shape) == (B,) + tuple(x.shape)
        assert bg.dtype == x.dtype
        for b in range(B):
            want = np.zeros(tuple(x.shape)) if rows[b][k] is None else _np(rows[b][k])
            np.testing.assert_allclose(_np(bg[b]), want, rtol=1e-12, atol=1e-12)
    t_inputs, t_outs, t_gos = _setup(op, i, torch)
    t_batched = torch.autograd.grad(t_outs, t_inputs, t_gos, is_grads_batched=True,
                                    allow_unused=True)
    for got, want in zip(_as_arrays(batched, inputs), _as_arrays(t_batched, t_inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def _first_order(op, i, m):
    """Gradients of the op with create_graph=True, for a fixed grad_output that requires grad
    (so the batched pass below also differentiates through it)."""
    inputs, outs, _ = _setup(op, i, m)
    rng = _rng(op, i, "g")
    gos = [m.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype, requires_grad=True)
           for o in outs]
    grads = m.autograd.grad(outs, inputs, gos, create_graph=True, allow_unused=True)
    keep = [g for g in grads if g is not None and g.requires_grad]
    rng = _rng(op, i, "gg")
    ggs = [m.tensor(rng.standard_normal((B,) + tuple(g.shape)), dtype=g.dtype) for g in keep]
    return inputs + gos, keep, ggs


@pytest.mark.parametrize("op,i", GRADGRAD_CASES)
def test_batched_double_backward_matches_torch(op, i):
    leaves, grads, ggs = _first_order(op, i, ndgrad)
    t_leaves, t_grads, t_ggs = _first_order(op, i, torch)
    assert len(grads) == len(t_grads)
    if not grads:
        return
    got = ndgrad.autograd.grad(grads, leaves, ggs, is_grads_batched=True, allow_unused=True,
                               retain_graph=True)
    want = torch.autograd.grad(t_grads, t_leaves, t_ggs, is_grads_batched=True,
                               allow_unused=True)
    for g, w in zip(_as_arrays(got, leaves), _as_arrays(want, t_leaves)):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10)
    for b in range(B):
        row = ndgrad.autograd.grad(grads, leaves, [gg[b] for gg in ggs], allow_unused=True,
                                   retain_graph=True)
        for g, r in zip(got, row):
            if r is not None:
                np.testing.assert_allclose(_np(g[b]), _np(r), rtol=1e-12, atol=1e-12)


def _through_batched_graph(op, i, m):
    """``create_graph=True`` on a batched pass, then a backward through what it recorded."""
    inputs, outs, gos = _setup(op, i, m)
    grads = m.autograd.grad(outs, inputs, gos, is_grads_batched=True, create_graph=True,
                            allow_unused=True)
    rng = _rng(op, i, "w")
    terms = [(g * m.tensor(rng.standard_normal(tuple(g.shape)))).sum()
             for g in grads if g is not None and g.requires_grad]
    if not terms:
        return None
    res = m.autograd.grad(sum(terms), inputs, allow_unused=True)
    return _as_arrays([None if r is None else r.unsqueeze(0).expand(B, *r.shape) for r in res],
                      inputs)


@pytest.mark.parametrize("op,i", GRADGRAD_CASES)
def test_graph_recorded_by_batched_pass_matches_torch(op, i):
    got = _through_batched_graph(op, i, ndgrad)
    want = _through_batched_graph(op, i, torch)
    assert (got is None) == (want is None)
    if got is not None:
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------------------- API behaviour
def _outcome(fn):
    try:
        r = fn()
        return ("ok", [None if t is None else tuple(t.shape) for t in r])
    except Exception as e:  # noqa: BLE001
        return (type(e).__name__, str(e))


@pytest.mark.parametrize("case", ["scalar_without_grad_output", "batch_sizes_differ",
                                  "empty_batch", "unbatched_result", "unused_input"])
def test_batched_api_edge_cases_match_torch(case):
    def run(m):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        u = m.tensor([3.0], requires_grad=True)
        if case == "scalar_without_grad_output":
            return m.autograd.grad((x * x).sum(), x, is_grads_batched=True)
        if case == "batch_sizes_differ":
            return m.autograd.grad([x * x, x * 3], x, [m.ones(2, 2), m.ones(3, 2)],
                                   is_grads_batched=True)
        if case == "empty_batch":
            return m.autograd.grad(x * x, x, m.ones(0, 2), is_grads_batched=True)
        if case == "unbatched_result":
            return m.autograd.grad(x * x + x.detach(), x, m.ones(3, 2), is_grads_batched=True)
        return m.autograd.grad(x * x, [x, u], m.ones(3, 2), is_grads_batched=True,
                               allow_unused=True)
    assert _outcome(lambda: run(ndgrad)) == _outcome(lambda: run(torch))


def test_grad_outputs_requiring_grad_keep_history():
    # create_graph=True: the batched result depends on the grad_outputs, differentiably.
    x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    v = ndgrad.tensor([[1.0, 0.5], [2.0, -1.0]], requires_grad=True)
    (g,) = ndgrad.autograd.grad(x ** 3, x, v, is_grads_batched=True, create_graph=True)
    (gv,) = ndgrad.autograd.grad(g.sum(), v)
    np.testing.assert_allclose(gv.numpy(), np.broadcast_to(3 * x.detach().numpy() ** 2, (2, 2)))


def test_results_are_ordinary_tensors_after_the_pass():
    x = ndgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (j,) = ndgrad.autograd.grad(x.sin(), x, ndgrad.eye(3), is_grads_batched=True)
    assert j._blevel == 0
    assert tuple(j.sum(0).shape) == (3,)     # batch dim is a plain dim now
    np.testing.assert_allclose(j.sum(0).numpy(), np.cos([1.0, 2.0, 3.0]), rtol=1e-6)


def test_hooks_fall_back_to_row_loop(monkeypatch):
    calls = _Counter(monkeypatch)
    x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    seen = []
    y.register_hook(lambda g: seen.append(tuple(g.shape)))
    (j,) = ndgrad.autograd.grad(y, x, ndgrad.eye(2), is_grads_batched=True)
    assert calls.n == 1 and seen == [(2,), (2,)]       # the hook sees one row at a time
    np.testing.assert_allclose(j.numpy(), np.diag([2.0, 4.0]))


def test_unbatched_path_has_no_batch_state():
    x = ndgrad.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    assert x.grad._blevel == 0 and not ndgrad.ops._dispatch._BATCHING


def _batched_vs_loop(f, xs, out_shape, monkeypatch):
    calls = _Counter(monkeypatch)
    rng = np.random.default_rng(3)
    y = f(*xs)
    gos = ndgrad.tensor(rng.standard_normal((B,) + out_shape))
    got = ndgrad.autograd.grad(y, xs, gos, is_grads_batched=True, retain_graph=True)
    for b in range(B):
        row = ndgrad.autograd.grad(y, xs, gos[b], retain_graph=True)
        for g, r in zip(got, row):
            np.testing.assert_allclose(_np(g[b]), _np(r), rtol=1e-12, atol=1e-12)
    return calls.n


def test_custom_function_falls_back_to_row_loop(monkeypatch):
    class Cube(ndgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x
    x = ndgrad.tensor([0.5, -1.0, 2.0], dtype=ndgrad.float64, requires_grad=True)
    assert _batched_vs_loop(lambda a: Cube.apply(a).exp(), [x], (3,), monkeypatch) == 1


def test_views_and_in_place_writes_run_batched(monkeypatch):
    x = ndgrad.tensor(np.arange(12.0).reshape(3, 4) / 7, dtype=ndgrad.float64,
                      requires_grad=True)

    def f(a):
        z = a * 1.5
        z.diagonal().mul_(3)            # CopySlices over a diagonal view
        z[1:, ::2] = z[1:, ::2] * 2     # ... and over a strided slice
        return z.diagonal(1) * 2 + z.unfold(1, 2, 1).sum((1, 2))[:3]
    assert _batched_vs_loop(f, [x], (3,), monkeypatch) == 0


def test_real_view_of_complex_falls_back(monkeypatch):
    z = ndgrad.tensor([1 + 2j, -0.5 + 1j], requires_grad=True)

    def f(a):
        w = a * 1
        w.real.mul_(2)
        return (w * w.conj()).real
    x = z
    calls = _Counter(monkeypatch)
    y = f(x)
    gos = ndgrad.tensor(np.eye(2))
    got = ndgrad.autograd.grad(y, x, gos, is_grads_batched=True, retain_graph=True)[0]
    rows = [ndgrad.autograd.grad(y, x, gos[b], retain_graph=True)[0] for b in range(2)]
    assert calls.n == 1
    np.testing.assert_allclose(got.numpy(), np.stack([r.numpy() for r in rows]))
