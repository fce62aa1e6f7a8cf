"""Helpers for the ndgrad.jit tests: run a Gradient's f then df as the executor would."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ndgrad.jit import interpret


def df_inputs(grad: Any, inputs: Sequence[Any], outs: Sequence[Any],
              cotangents: Sequence[Any]) -> list:
    """df's inputs: [output vjps][temporary vjps (None)][captured inputs][captured outputs]."""
    n = grad.f_real_outputs
    vjps = [cotangents[i] if i < n else None for i in grad.df_input_vjps]
    caps = [inputs[i] for i in grad.df_input_captured_inputs]
    caps += [outs[i] for i in grad.df_input_captured_outputs]
    return vjps + caps


def run_gradient(grad: Any, inputs: Sequence[Any], cotangents: Sequence[Any]) -> tuple:
    """Run ``grad.f`` on ``inputs`` then ``grad.df`` with ``cotangents`` (one per real output
    of f, None for undefined); return (real outputs, {input index: gradient or None})."""
    outs = interpret(grad.f, list(inputs))
    n = grad.f_real_outputs
    grads = interpret(grad.df, df_inputs(grad, inputs, outs, cotangents))
    assert len(grads) == len(grad.df_output_vjps)
    return outs[:n], dict(zip(grad.df_output_vjps, grads))


def check_contract(grad: Any) -> None:
    """The invariants of Note [Gradient contract] (tests/test_jit_differentiate.py)."""
    f, df = grad.f, grad.df
    f.lint()
    df.lint()
    nvj = len(grad.df_input_vjps)
    assert len(df.inputs()) == nvj + len(grad.df_input_captured_inputs) + \
        len(grad.df_input_captured_outputs)
    assert len(df.outputs()) == len(grad.df_output_vjps)
    assert all(0 <= i < len(f.outputs()) for i in grad.df_input_vjps)
    assert all(0 <= i < len(f.outputs()) for i in grad.df_input_captured_outputs)
    assert all(0 <= i < len(f.inputs()) for i in grad.df_input_captured_inputs)
    assert grad.df_output_vjps == sorted(set(grad.df_output_vjps))
    # temporaries: exactly the outputs after the real ones, each captured
    temps = set(range(grad.f_real_outputs, len(f.outputs())))
    assert temps <= set(grad.df_input_captured_outputs)
    # captures in topological order: inputs, then outputs by position of their producer
    order = {v: i for i, v in enumerate(f.inputs())}
    for k, node in enumerate(f.nodes()):
        for o in node.outputs():
            order.setdefault(o, len(f.inputs()) + k)
    caps = [f.outputs()[i] for i in grad.df_input_captured_outputs]
    ranks = [order[v] for v in caps]
    assert ranks == sorted(ranks), ranks


def assert_same(a: Any, b: Any, exact: bool = True, rtol: float = 1e-12) -> None:
    if a is None or b is None:
        za = a is None or not np.any(a._data)
        zb = b is None or not np.any(b._data)
        assert za and zb, (a, b)
        return
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a._data.dtype == b._data.dtype, (a._data.dtype, b._data.dtype)
    if exact:
        np.testing.assert_array_equal(a._data, b._data)
    else:
        np.testing.assert_allclose(a._data, b._data, rtol=rtol, atol=rtol)
