"""Every op in ``op_db.OPS`` against PyTorch: forward values and dtypes (float32 and float64),
gradients for a random grad_output, the analytic Jacobian against central finite differences,
double backward, the grad_fn class name and the node's edges (``next_functions``)."""

from __future__ import annotations

import warnings
import zlib

import numpy as np
import pytest
import torch

import ndgrad
from op_db import OPS, make_inputs

CASES = [pytest.param(op, i, id=f"{op.name}-{i}") for op in OPS for i in range(len(op.samples))]
GRAD_CASES = [c for c in CASES if c.values[0].differentiable]
GRADGRAD_CASES = [c for c in CASES if c.values[0].double_backward]


def _rng(op, i, salt=0):
    return np.random.default_rng(zlib.crc32(f"{op.name}/{i}/{salt}".encode()))


def _arrays(op, i):
    return make_inputs(op, op.samples[i], _rng(op, i))


def _tensors(m, arrays, dtype="float64", requires_grad=False):
    return [m.tensor(a, dtype=getattr(m, dtype), requires_grad=requires_grad) for a in arrays]


def _outputs(out):
    """The op's result as a list of tensors (``max(dim)`` and ``split`` give tuples)."""
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _np(t):
    # force=True: PyTorch may return zero gradients as ZeroTensors, which need it.
    return t.detach().numpy(force=True) if isinstance(t, torch.Tensor) else t.detach().numpy()


def _dtype_name(t):
    return str(t.dtype).split(".")[-1]


def _run(op, i, m, dtype="float64", requires_grad=False):
    inputs = _tensors(m, _arrays(op, i), dtype, requires_grad)
    return inputs, _outputs(op.fn(m, *inputs))


def _assert_close(actual, expected, dtype="float64"):
    tol = {"float64": 1e-10, "float32": 1e-5, "float16": 2e-3}.get(dtype, 1e-10)
    np.testing.assert_allclose(np.asarray(actual, dtype=np.float64),
                               np.asarray(expected, dtype=np.float64), rtol=tol, atol=tol)


def _backward(m, outputs, grads):
    m.autograd.backward(outputs, grads)


def _random_like(m, outs, rng, requires_grad=False):
    return [m.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype,
                     requires_grad=requires_grad) for o in outs]


# ---------------------------------------------------------------------------- (a) forward
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op,i", CASES)
def test_forward_matches_torch(op, i, dtype):
    _, got = _run(op, i, ndgrad, dtype)
    _, want = _run(op, i, torch, dtype)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape)
        assert _dtype_name(g) == _dtype_name(w)
        if w.dtype.is_floating_point:
            _assert_close(_np(g), _np(w), _dtype_name(w))
        else:
            np.testing.assert_array_equal(_np(g), _np(w))


# ---------------------------------------------------------------------------- (b) gradients
def _grads_after_backward(op, i, m):
    inputs, outs = _run(op, i, m, requires_grad=True)
    diff = [o for o in outs if o.requires_grad]
    _backward(m, diff, _random_like(m, diff, _rng(op, i, "grad_output")))
    return inputs, [o.requires_grad for o in outs]


@pytest.mark.parametrize("op,i", GRAD_CASES)
def test_gradients_match_torch(op, i):
    got_inputs, got_rg = _grads_after_backward(op, i, ndgrad)
    want_inputs, want_rg = _grads_after_backward(op, i, torch)
    assert got_rg == want_rg
    for x, tx in zip(got_inputs, want_inputs):
        assert (x.grad is None) == (tx.grad is None)
        if tx.grad is not None:
            assert _dtype_name(x.grad) == _dtype_name(tx.grad) == _dtype_name(x)
            assert tuple(x.grad.shape) == tuple(x.shape)
            _assert_close(_np(x.grad), _np(tx.grad))


# ---------------------------------------------------------------------------- (c) Jacobian
def _flat_diff_outputs(op, arrays, keep):
    with ndgrad.no_grad():
        outs = _outputs(op.fn(ndgrad, *_tensors(ndgrad, arrays)))
    return np.concatenate([_np(outs[k]).astype(np.float64).ravel() for k in keep])


def _numerical_jacobian(op, arrays, keep):
    cols = []
    for j, a in enumerate(arrays):
        for e in range(a.size):
            plus = [b.copy() for b in arrays]
            minus = [b.copy() for b in arrays]
            plus[j].flat[e] += op.fd_eps
            minus[j].flat[e] -= op.fd_eps
            cols.append((_flat_diff_outputs(op, plus, keep)
                         - _flat_diff_outputs(op, minus, keep)) / (2 * op.fd_eps))
    return np.stack(cols, axis=1)


def _analytic_jacobian(inputs, outs):
    rows = []
    for k, o in enumerate(outs):
        for e in range(o.numel()):
            grads = [ndgrad.zeros(o2.shape, dtype=o2.dtype) for o2 in outs]
            grads[k].view(-1)[e] = 1.0
            gs = ndgrad.autograd.grad(outs, inputs, grads, retain_graph=True, allow_unused=True)
            rows.append(np.concatenate([
                (_np(g) if g is not None else np.zeros(tuple(x.shape))).ravel()
                for g, x in zip(gs, inputs)]))
    return np.stack(rows)


@pytest.mark.parametrize("op,i", GRAD_CASES)
def test_jacobian_matches_finite_differences(op, i):
    arrays = _arrays(op, i)
    assert all(a.size <= 12 for a in arrays), "keep samples tiny"
    inputs = _tensors(ndgrad, arrays, requires_grad=True)
    outs = _outputs(op.fn(ndgrad, *inputs))
    keep = [k for k, o in enumerate(outs) if o.requires_grad]
    assert keep, "a differentiable op must give at least one output that requires grad"
    analytic = _analytic_jacobian(inputs, [outs[k] for k in keep])
    numerical = _numerical_jacobian(op, arrays, keep)
    np.testing.assert_allclose(analytic, numerical, rtol=1e-5, atol=op.fd_atol)


# ---------------------------------------------------------------------------- (d) double backward
def _double_backward(op, i, m):
    inputs, outs = _run(op, i, m, requires_grad=True)
    diff = [o for o in outs if o.requires_grad]
    grad_outputs = _random_like(m, diff, _rng(op, i, "grad_output"), requires_grad=True)
    grads = m.autograd.grad(diff, inputs, grad_outputs, create_graph=True, allow_unused=True)
    rng = _rng(op, i, "v")
    terms = [(g * m.tensor(rng.standard_normal(tuple(g.shape)))).sum()
             for g in grads if g is not None and g.requires_grad]
    if terms:
        sum(terms).backward()
    return ([g is not None and g.requires_grad for g in grads],
            [t.grad for t in inputs + grad_outputs])


@pytest.mark.parametrize("op,i", GRADGRAD_CASES)
def test_double_backward_matches_torch(op, i):
    got_rg, got = _double_backward(op, i, ndgrad)
    want_rg, want = _double_backward(op, i, torch)
    assert got_rg == want_rg
    for g, w in zip(got, want):
        assert (g is None) == (w is None)
        if w is not None:
            _assert_close(_np(g), _np(w))


# ---------------------------------------------------------------------------- (e), (f) graph
def _graph(op, i, m):
    _, outs = _run(op, i, m, requires_grad=True)
    nodes = []
    for o in outs:
        fn = o.grad_fn
        edges = fn.next_functions if fn is not None else ()
        nodes.append((type(fn).__name__, len(edges), [e[0] is None for e in edges]))
    return nodes


@pytest.mark.parametrize("op,i", CASES)
def test_grad_fn_name_matches_torch(op, i):
    got = [n[0] for n in _graph(op, i, ndgrad)]
    want = [n[0] for n in _graph(op, i, torch)]
    assert got == want


@pytest.mark.parametrize("op,i", CASES)
def test_next_functions_match_torch(op, i):
    got = [n[1:] for n in _graph(op, i, ndgrad)]
    want = [n[1:] for n in _graph(op, i, torch)]
    assert got == want


# ---------------------------------------------------------------------------- special values
SPECIAL = {
    "div_by_zero": lambda m, x: x / 0,
    "div_tensor_zero": lambda m, x: x / m.zeros_like(x),
    "rdiv": lambda m, x: 1 / x,
    "reciprocal": lambda m, x: m.reciprocal(x),
    "log": lambda m, x: m.log(x),
    "sqrt": lambda m, x: m.sqrt(x),
    "pow_negative": lambda m, x: x ** -1,
    "pow_half": lambda m, x: x ** 0.5,
    "exp_overflow": lambda m, x: m.exp(x * 100),
    "mul_overflow": lambda m, x: x * 1e38 * 1e38,
    "mul_inf": lambda m, x: x * float("inf"),
    "sigmoid": lambda m, x: m.sigmoid(x * 1e4),
    "tanh": lambda m, x: m.tanh(x * 1e4),
    "exp2": lambda m, x: m.exp2(x),
    "expm1": lambda m, x: m.expm1(x),
    "log2": lambda m, x: m.log2(x),
    "log10": lambda m, x: m.log10(x),
    "log1p": lambda m, x: m.log1p(x),
    "rsqrt": lambda m, x: m.rsqrt(x),
    "tan": lambda m, x: m.tan(x),
    "asin": lambda m, x: m.asin(x),
    "acos": lambda m, x: m.acos(x),
    "atan": lambda m, x: m.atan(x),
    "sinh": lambda m, x: m.sinh(x),
    "cosh": lambda m, x: m.cosh(x),
    "asinh": lambda m, x: m.asinh(x),
    "acosh": lambda m, x: m.acosh(x),
    "atanh": lambda m, x: m.atanh(x),
    "erf": lambda m, x: m.erf(x),
    "erfc": lambda m, x: m.erfc(x),
    "erfinv": lambda m, x: m.erfinv(x),
    "lgamma": lambda m, x: m.lgamma(x),
    "digamma": lambda m, x: m.digamma(x),
    "floor": lambda m, x: m.floor(x),
    "ceil": lambda m, x: m.ceil(x),
    "trunc": lambda m, x: m.trunc(x),
    "frac": lambda m, x: m.frac(x),
    "round": lambda m, x: m.round(x),
    "deg2rad": lambda m, x: m.deg2rad(x),
    "rad2deg": lambda m, x: m.rad2deg(x),
    "logit": lambda m, x: m.logit(x),
    "sinc": lambda m, x: m.sinc(x),
    "angle": lambda m, x: m.angle(x),
    "nan_to_num": lambda m, x: m.nan_to_num(x),
    "round_decimals": lambda m, x: m.round(x, decimals=2),
    "logit_eps": lambda m, x: m.logit(x, eps=0.1),
}


@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_special_values_match_torch_without_warnings(name):
    # PyTorch computes inf/nan silently; NumPy's floating point warnings must not leak.
    values = [0.0, -1.0, 2.0, float("inf"), -float("inf"), float("nan"), 1e30]
    results = []
    for m in (torch, ndgrad):
        x = m.tensor(values)
        # Appended, so the filters already installed (ndgrad's, see ops/_dispatch.py) keep
        # precedence and every other warning is recorded: what a user would see.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", append=True)
            results.append(_np(SPECIAL[name](m, x)))
        assert [str(w.message) for w in caught] == []
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)
