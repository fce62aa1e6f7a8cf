"""Every op of tests/op_db.py through the graph path: trace it with each subset of its inputs
requiring grad, differentiate, run f then df (a random cotangent, and undefined ones) on OTHER
inputs than the trace's, and compare with eager (forward bitwise, gradients to 1e-12 in float64)
and with torch. Tracing on one input and checking on another is what finds a value computed
from the data outside the op table and baked into a graph."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from _jit_util import assert_same, check_contract, run_gradient
from op_db import OPS, make_inputs

import ndgrad
from ndgrad.jit import TraceError, differentiate, trace_graph

# Ops the graph path refuses, each with why. A refusal is a TraceError at trace time (checked
# below): never a graph that is silently wrong.
_MASK_SHAPE = "boolean-mask indexing: the result's shape depends on the data"
EXCLUDED = {n: _MASK_SHAPE for n in ("getitem_mask", "setitem_mask_scalar", "setitem_mask_0d",
                                     "masked_select", "masked_select_broadcast")}


def _subsets(n: int, differentiable: bool) -> list:
    if not differentiable:
        return [()]
    if n > 2:
        return [(i,) for i in range(n)] + [tuple(range(n))]
    return [s for r in range(1, n + 1) for s in itertools.combinations(range(n), r)]


def _outputs(out) -> list:
    return list(out) if isinstance(out, (tuple, list)) else [out]


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_op_through_graph(op):
    shapes = op.samples[0]
    rng = np.random.default_rng(0)
    a_arrays = make_inputs(op, shapes, rng)
    b_arrays = make_inputs(op, shapes, rng)
    if op.name in EXCLUDED:
        with pytest.raises(TraceError):
            for sub in _subsets(len(a_arrays), op.differentiable):
                ta = [ndgrad.tensor(a, requires_grad=i in sub) for i, a in enumerate(a_arrays)]
                trace_graph(lambda *xs: op.fn(ndgrad, *xs), tuple(ta))
        return
    for sub in _subsets(len(a_arrays), op.differentiable):
        ta = [ndgrad.tensor(a, requires_grad=i in sub) for i, a in enumerate(a_arrays)]
        r = trace_graph(lambda *xs: op.fn(ndgrad, *xs), tuple(ta))
        r.graph.lint()
        CALLS.update(n.attrs["name"] for n in r.graph.nodes() if n.kind() == "Call")
        grad = differentiate(r.graph, a_arrays)
        check_contract(grad)
        tb = [ndgrad.tensor(b, requires_grad=i in sub) for i, b in enumerate(b_arrays)]
        eager = _outputs(op.fn(ndgrad, *tb))
        crng = np.random.default_rng(5)
        cots = [ndgrad.tensor(crng.standard_normal(o.shape)).to(o.dtype) if o.requires_grad
                else None for o in eager]
        real, grads = run_gradient(grad, [t.detach() for t in tb], cots)
        for x, y in zip(real, eager):
            assert_same(x, y.detach())
        used = [(o, c) for o, c in zip(eager, cots) if c is not None]
        if not used:
            assert not any(g is not None and g._data.any() for g in grads.values())
            continue
        want = ndgrad.autograd.grad([o for o, _ in used], [tb[i] for i in sub],
                                    [c for _, c in used], allow_unused=True)
        for i, e in zip(sub, want):
            assert_same(grads.get(i), e, exact=False)
        # undefined cotangents: no gradient (None or zeros)
        _, zero = run_gradient(grad, [t.detach() for t in tb], [None] * len(cots))
        assert all(g is None or not g._data.any() for g in zero.values())
        if len(sub) == len(a_arrays) and op.name in _TORCH_CHECKED:
            tt = [torch.tensor(b, requires_grad=True) for b in b_arrays]
            tout = _outputs(op.fn(torch, *tt))
            tg = torch.autograd.grad([tout[k] for k, c in enumerate(cots) if c is not None],
                                     tt, [torch.tensor(c._data) for c in cots if c is not None],
                                     allow_unused=True)
            for i, t in enumerate(tg):
                if t is not None and grads.get(i) is not None:
                    np.testing.assert_allclose(grads[i]._data, t.numpy(), rtol=1e-10,
                                               atol=1e-10)


# A few ops are also compared with torch directly (the op tests compare every eager op with
# torch already; these check the graph path end to end).
_TORCH_CHECKED = {"mul", "div", "tanh", "matmul", "sum_dim", "softmax", "log_softmax",
                  "where", "addmm", "exp", "pow_tensor", "clamp"}


CALLS: set = set()


def test_exclusions_are_ops():
    names = {op.name for op in OPS}
    assert set(EXCLUDED) <= names
