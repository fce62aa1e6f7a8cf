"""Generated NumPy code (ndgrad/jit/codegen.py) against the reference interpreter: every op of
tests/op_db.py that traces gives bitwise the interpreter's results through ``generate`` (one
cheap sample each); the forward and backward of a Gradient likewise; the source is readable,
frees values at their last use and shows in tracebacks."""

import linecache
import traceback

import numpy as np
import pytest

import ndgrad
from ndgrad.jit import TraceError, interpret, trace_graph
from ndgrad.jit.codegen import generate
from op_db import OPS, make_inputs


def _same(a, b):
    if a is None or b is None:
        return a is None and b is None
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)


def _trace_op(op, rng, requires_grad=False):
    arrays = make_inputs(op, op.samples[0], rng)
    xs = [ndgrad.tensor(a, requires_grad=requires_grad) for a in arrays]
    return trace_graph(lambda *ts: op.fn(ndgrad, *ts), tuple(xs), check=False), xs


def test_every_traceable_op_of_op_db_generates_the_interpreters_results():
    rng = np.random.default_rng(0)
    done, untraceable = 0, []
    for op in OPS:
        try:
            res, xs = _trace_op(op, rng)
        except TraceError:
            untraceable.append(op.name)
            continue
        g = res.graph
        ins = xs + list(res.lifted)
        ref = interpret(g, ins)
        gen = generate(g)
        out = gen(*[t._data for t in ins])
        assert len(out) == len(ref), op.name
        for r, o in zip(ref, out):
            assert _same(r._data, o), (op.name, gen.code)
        done += 1
    # the tracer's own tests check which ops trace; here: nearly all of them do
    assert done >= 0.9 * len(OPS), (done, len(OPS), untraceable)


def test_gradient_f_and_df_through_codegen_equal_the_interpreter():
    from ndgrad.jit.differentiate import differentiate
    rng = np.random.default_rng(1)
    done = 0
    for op in OPS:
        if not op.differentiable:
            continue
        try:
            res, xs = _trace_op(op, rng, requires_grad=True)
        except TraceError:
            continue
        g = res.graph
        if not any(v.requires_grad for v in g.outputs()):
            continue
        try:
            grad = differentiate(g.copy())
        except Exception:   # noqa: BLE001 - differentiate's own tests cover its failures
            continue
        ins = [t.detach() for t in xs + list(res.lifted)]
        f_ref = interpret(grad.f, ins)
        f_out = generate(grad.f)(*[t._data for t in ins])
        for r, o in zip(f_ref, f_out):
            assert _same(r._data, o), (op.name, "f")
        caps = [ins[i] for i in grad.df_input_captured_inputs] + \
               [f_ref[i] for i in grad.df_input_captured_outputs]
        nvjp = len(grad.df_input_vjps)
        vjps = [ndgrad.tensor(rng.standard_normal(f_ref[i]._data.shape)).to(f_ref[i].dtype)
                if i < grad.f_real_outputs and k % 2 == 0 else None
                for k, i in enumerate(grad.df_input_vjps)]
        df_graph = grad.df
        try:
            with ndgrad.no_grad():
                d_ref = interpret(df_graph, vjps + caps)
        except Exception:   # noqa: BLE001 - the reference itself fails: not codegen's concern
            continue
        mask = [v is None for v in vjps]
        gen = generate(df_graph, undefined=[i for i, m in enumerate(mask) if m])
        d_out = gen(*[None if v is None else v._data for v in vjps], *[c._data for c in caps])
        assert len(d_out) == len(d_ref)
        for r, o in zip(d_ref, d_out):
            assert _same(None if r is None else r._data, o), (op.name, "df", gen.code)
        del nvjp
        done += 1
    assert done >= 0.8 * sum(op.differentiable for op in OPS)


def test_code_frees_values_at_last_use_and_binds_constants():
    x = ndgrad.ones(4)
    g = trace_graph(lambda x: ((x * 3).exp() + 1).tanh().sum(), (x,)).graph
    gen = generate(g)
    code = gen.code
    assert code.startswith("def f(a0):")
    assert "del a0" in code and "del v1" in code
    assert "_np_exp(" in code and "_np_tanh(" in code
    np.testing.assert_array_equal(gen(x._data)[0], interpret(g, [x])[0]._data)


def test_tracebacks_show_generated_lines():
    x = ndgrad.ones(2, 2)
    g = trace_graph(lambda x: x @ x, (x,)).graph
    gen = generate(g)
    assert linecache.getline(gen.filename, 2).strip().startswith("v1 =")
    with pytest.raises(ValueError) as info:
        gen(np.ones((2, 3)))
    text = "".join(traceback.format_exception(info.value))
    assert gen.filename in text and "v1 = " in text


def test_matmul_of_transposed_values_uses_views_not_copies():
    a = ndgrad.ones(3, 4)
    b = ndgrad.ones(3, 5)
    g = trace_graph(lambda a, b: a.t() @ b, (a, b)).graph
    gen = generate(g)
    assert "copy" not in gen.code
    np.testing.assert_array_equal(gen(a._data, b._data)[0], a._data.T @ b._data)


def test_stack_batching_turns_a_row_by_row_hessian_into_batched_products():
    from ndgrad.jit.stack_batching import batch_stacks, fold_constants
    rng = np.random.default_rng(3)
    A = ndgrad.tensor(rng.standard_normal((6, 6)))
    x = ndgrad.tensor(rng.standard_normal(6))

    def hess(x, A):
        return ndgrad.autograd.functional.hessian(lambda v: (A @ v).tanh().sum(), x)

    g = trace_graph(hess, (x, A)).graph
    ref = interpret(g, [x, A])[0]._data
    before = sum(n.kind() in ("mm", "mv") for n in g.nodes())
    fold_constants(g)
    assert batch_stacks(g) == 1
    g.lint()
    after = sum(n.kind() in ("mm", "mv") for n in g.nodes())
    assert before > 6 and after <= 3
    out = generate(g)(x._data, A._data)[0]
    np.testing.assert_allclose(out, ref, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(out, hess(x, A).numpy(), rtol=1e-13, atol=1e-15)


def test_stack_batching_of_matrix_vector_products_with_a_batched_matrix():
    from ndgrad.jit.stack_batching import batch_stacks, fold_constants
    rng = np.random.default_rng(4)
    A = ndgrad.tensor(rng.standard_normal((5, 3)))
    x = ndgrad.tensor(rng.standard_normal(3))

    def f(A, x):   # stack(M_i @ x) with M_i = A * C_i: the matrices differ, the vector is shared
        return ndgrad.stack([ndgrad.mv(A * ndgrad.full((5, 3), i + 1.0, dtype=A.dtype), x)
                             for i in range(4)])

    g = trace_graph(f, (A, x)).graph
    fold_constants(g)
    assert batch_stacks(g) == 1
    g.lint()
    assert [n.kind() for n in g.nodes()].count("mv") == 1
    np.testing.assert_allclose(generate(g)(A._data, x._data)[0], f(A, x).numpy(), rtol=1e-13,
                               atol=1e-15)


def test_stack_batching_leaves_non_isomorphic_items_alone():
    from ndgrad.jit.stack_batching import batch_stacks
    x = ndgrad.ones(3)
    g = trace_graph(lambda x: ndgrad.stack([x.sin(), x.cos(), x.exp(), x.tanh()]), (x,)).graph
    assert batch_stacks(g) == 0
    np.testing.assert_array_equal(generate(g)(x._data)[0], interpret(g, [x])[0]._data)


def test_small_products_run_on_one_blas_thread_and_the_count_is_restored():
    from ndgrad.jit import blas_threads
    a = ndgrad.ones(8, 8)
    small = generate(trace_graph(lambda a: (a @ a).tanh(), (a,)).graph)
    assert small.single_thread
    big = ndgrad.ones(600, 600)
    assert not generate(trace_graph(lambda a: a @ a, (big,)).graph).single_thread
    assert not generate(trace_graph(lambda a: a.tanh(), (a,)).graph).single_thread
    if blas_threads.available():
        get = blas_threads._find()[0]
        before = get()
        seen = []
        orig = small.fn
        small.fn = lambda *xs: (seen.append(get()), orig(*xs))[1]
        out = small(a._data)
        assert seen == [1] and get() == before
        np.testing.assert_allclose(out[0], np.tanh(a._data @ a._data))
