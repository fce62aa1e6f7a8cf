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
from ndgrad.jit import codegen
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


@pytest.fixture(params=["default", "inplace_everywhere"])
def inplace_mode(request, monkeypatch):
    """Run a test as is, and again with every eligible line rewritten to reuse a dead buffer
    (Note [Buffers reused in place]: normally only for results of 8192+ elements)."""
    if request.param == "inplace_everywhere":
        monkeypatch.setattr(codegen, "INPLACE_MIN_NUMEL", 0)
    return request.param


def test_every_traceable_op_of_op_db_generates_the_interpreters_results(inplace_mode):
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


def test_gradient_f_and_df_through_codegen_equal_the_interpreter(inplace_mode):
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

    def hess(x, A):   # rows by a Python loop (functional.hessian traces batched: Note
        # [Jacobian rows traced batched] in tracer.py)
        x = x.detach().requires_grad_()
        g, = ndgrad.autograd.grad((A @ x).tanh().sum(), x, create_graph=True)
        return ndgrad.stack([ndgrad.autograd.grad(g, x, ndgrad.eye(6, dtype=x.dtype)[i],
                                                  retain_graph=True)[0] for i in range(6)])

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
    np.testing.assert_allclose(out, ndgrad.autograd.functional.hessian(
        lambda v: (A @ v).tanh().sum(), x).numpy(), rtol=1e-13, atol=1e-15)


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


# ---------------------------------------------------------------- Note [Buffers reused in place]
def _both(monkeypatch, fn, *xs):
    """The generated code of ``fn`` with every eligible result written into a dead buffer, and
    the code without the rewrite."""
    g = trace_graph(fn, xs).graph
    monkeypatch.setattr(codegen, "INPLACE_MIN_NUMEL", 0)
    reuse = generate(g)
    monkeypatch.setattr(codegen, "INPLACE_MIN_NUMEL", 1 << 62)
    plain = generate(g)
    assert "out=" not in plain.code
    return reuse, plain


def _f32(rng, *shape):
    return ndgrad.tensor(rng.standard_normal(shape).astype(np.float32))


def test_a_dead_intermediate_is_reused_in_place_with_the_same_bits(monkeypatch):
    rng = np.random.default_rng(5)
    x = _f32(rng, 4, 5)
    w = _f32(rng, 5, 3)

    def fn(x, w):
        h = ((x * 3).exp() + 1).tanh()
        return (h - x).relu() @ w

    reuse, plain = _both(monkeypatch, fn, x, w)
    # relu's operands: zeros first (Note [Signed zeros in max and min]), out= the dead input
    assert reuse.code.count("out=") >= 4 and \
        any("_np_maximum(" in ln and "out=(v" in ln for ln in reuse.code.splitlines())
    before = x._data.copy(), w._data.copy()
    a, b = reuse(x._data, w._data)[0], plain(x._data, w._data)[0]
    assert _same(a, b) and _same(a, fn(x, w)._data)
    assert _same(x._data, before[0]) and _same(w._data, before[1])


def test_in_place_never_writes_into_an_input_or_a_view_of_one(monkeypatch):
    rng = np.random.default_rng(6)
    x = _f32(rng, 3, 4)
    for fn in (lambda x: x.exp(), lambda x: x.t().exp() * 2, lambda x: (x[1:] + 1).sin()):
        reuse, plain = _both(monkeypatch, fn, x)
        assert "out=a0" not in reuse.code
        before = x._data.copy()
        assert _same(reuse(x._data)[0], plain(x._data)[0])
        assert _same(x._data, before)


def test_in_place_never_writes_into_an_output_or_a_view_of_one(monkeypatch):
    rng = np.random.default_rng(7)
    x = _f32(rng, 3, 4)
    for fn in (lambda x: ((y := x * 2), y.exp()),
               lambda x: ((y := x * 2)[0], y.exp()),
               lambda x: ((y := x * 2).t(), y.exp())):
        reuse, plain = _both(monkeypatch, fn, x)
        a, b = reuse(x._data), plain(x._data)
        assert all(_same(p, q) for p, q in zip(a, b))
        assert _same(np.asarray(a[0]), np.asarray(fn(x)[0]._data))


def test_in_place_waits_for_every_view_of_a_buffer_to_die(monkeypatch):
    rng = np.random.default_rng(8)
    x = _f32(rng, 4, 4)

    def fn(x):
        y = x * 2
        v = y.t()              # a view of y, alive after y's last direct use
        z = y.exp()
        return z + v

    reuse, plain = _both(monkeypatch, fn, x)
    assert "out=v1" not in reuse.code.split("_np_exp")[1].splitlines()[0]
    assert _same(reuse(x._data)[0], plain(x._data)[0])
    assert _same(reuse(x._data)[0], fn(x)._data)


def test_in_place_never_writes_into_a_captured_value(monkeypatch):
    # tanh's result is captured for backward (an output of f): the next op must not reuse it
    monkeypatch.setattr(codegen, "INPLACE_MIN_NUMEL", 0)
    rng = np.random.default_rng(9)
    w = _f32(rng, 4, 4).requires_grad_()
    cap = _f32(rng, 4, 4)        # a closure tensor: a lifted graph input

    def fn(x):
        h = (x * w).tanh()
        return ((h * 3 + cap).relu() * h).sum()

    x = _f32(rng, 4, 4)
    cf = ndgrad.compile(fn)
    for _ in range(2):           # the first call traces, the second runs the generated code
        w.grad = None
        before = cap._data.copy()
        cf(x).backward()
        assert _same(cap._data, before)
    got = w.grad._data
    w.grad = None
    fn(x).backward()
    np.testing.assert_allclose(got, w.grad._data, rtol=1e-6)
    assert "out=" in cf.code


def test_in_place_checks_the_layout_of_operands_it_cannot_know(monkeypatch):
    # a Fortran-ordered input: the rewrite falls back to a new array, so the result has the
    # layout (and a later reduction the bits) of the plain code
    rng = np.random.default_rng(10)
    x, t = _f32(rng, 6, 5), _f32(rng, 6, 5)
    reuse, plain = _both(monkeypatch, lambda x, t: ((x * 2) - t).sum(0), x, t)
    assert ".flags.c_contiguous" in reuse.code
    for xx in (x._data, np.asfortranarray(x._data)):
        for tt in (t._data, np.asfortranarray(t._data)):
            a, b = reuse(xx, tt)[0], plain(xx, tt)[0]
            assert _same(a, b)
    # an element-wise result of an input of unknown layout is checked too before reuse
    reuse, plain = _both(monkeypatch, lambda x, t: (((x * 2) + 1) - t) @ t.t(), x, t)
    assert "v2.flags.c_contiguous" in reuse.code or "v1.flags.c_contiguous" in reuse.code
    for xx in (x._data, np.asfortranarray(x._data)):
        a, b = reuse(xx, t._data)[0], plain(xx, t._data)[0]
        assert _same(a, b)


def test_relu_backward_in_place_keeps_the_exact_select_for_nan(monkeypatch):
    monkeypatch.setattr(codegen, "INPLACE_MIN_NUMEL", 0)
    x = ndgrad.tensor([[-1.0, 2.0], [3.0, -4.0]], requires_grad=True)
    g = ndgrad.tensor([[float("nan"), float("inf")], [-1.0, float("-inf")]])
    cf = ndgrad.compile(lambda x, g: ndgrad.autograd.grad((x * 1).relu(), x, g)[0])
    for _ in range(2):
        got = cf(x, g)
    ref = ndgrad.autograd.grad((x * 1).relu(), x, g)[0]
    assert _same(got._data, ref._data)
    assert _same(got._data, np.array([[0.0, np.inf], [-1.0, 0.0]], np.float32))


# ------------------------------------------------------ Note [Expands left to broadcasting]
def test_an_expand_read_element_wise_is_left_to_numpy_broadcasting():
    rng = np.random.default_rng(11)
    x, y = _f32(rng, 3, 1), _f32(rng, 3, 4)
    s = _f32(rng)

    def fn(x, y, s):
        e = s.expand(3, 4)
        a = (e / 3 + x.expand(3, 4)) * y        # read element-wise only: never emitted
        b = (x.expand(3, 4) * 2) @ y.t()        # read by a product: emitted before it
        return a, b, x.expand(3, 4) + 1, s.expand(2, 2)

    g = trace_graph(fn, (x, y, s)).graph
    gen = generate(g)
    code = gen.code
    # emitted: the product's operand, the expand returned, the pending result returned (copied)
    assert code.count("_broadcast_view(") == 3, code
    assert "_expand_fwd" not in code
    out = gen(x._data, y._data, s._data)
    ref = interpret(g, [x, y, s])
    for r, o in zip(ref, out):
        assert _same(r._data, o)
    assert out[3].shape == (2, 2) and not out[3].flags.writeable   # the eager view, as eager
    assert out[2].flags.writeable and out[2].flags.c_contiguous    # a new array, as eager


def test_a_mean_backward_divides_one_element():
    x = ndgrad.ones(5, 6, requires_grad=True)
    cf = ndgrad.compile(lambda x: (x * x).mean())
    for _ in range(2):
        x.grad = None
        cf(x).backward()
    assert "_broadcast_view" not in cf.code and "_expand_fwd" not in cf.code
    assert _same(x.grad._data, np.full((5, 6), 2 / 30, np.float32))


def test_a_whole_step_mean_backward_folds_the_gradient_and_writes_in_place(monkeypatch):
    # ndgrad_jit's form: the loss's gradient is a constant expanded to the batch; the constant
    # is divided once (folded) and the products by it are written into dead buffers
    monkeypatch.setattr(codegen, "INPLACE_MIN_NUMEL", 0)
    rng = np.random.default_rng(12)
    x, t = _f32(rng, 6, 5), _f32(rng, 6, 5)
    w = _f32(rng, 5, 5).requires_grad_(True)

    def step(x, t, w):
        d = x @ w - t
        loss = (d * d).mean()
        return loss.detach(), ndgrad.autograd.grad(loss, [w])[0]

    cf = ndgrad.compile(step)
    for _ in range(2):
        loss, g = cf(x, t, w)
    code = cf.code
    assert "_expand_fwd" not in code and "_broadcast_view" not in code, code
    assert "_np_true_divide(v" not in code.split("# mean")[1], code     # no array divided
    assert code.count("out=") >= 3, code
    el, eg = step(x, t, w)
    assert _same(loss._data, el._data) and _same(g._data, eg._data)


def test_an_element_wise_op_on_expanded_constants_is_folded_at_their_shape():
    # larger than codegen._FOLD_MAX: the expanded constant is not folded at its full size
    shape = (300, 300)
    x = _f32(np.random.default_rng(13), *shape)

    def fn(x):
        c = ndgrad.tensor(np.float32(2.0)).expand(*shape)
        return (c * 3 + 1) * x, (c - 1) + 0 * x, c / 7

    g = trace_graph(fn, (x,)).graph
    gen = generate(g)
    code = gen.code
    assert "_expand_fwd" not in code and code.count("_broadcast_view(") == 1, code
    assert all(a.size == 1 for k, a in gen.fn.__globals__.items() if k.startswith("_const"))
    out = gen(x._data)
    for r, o in zip(interpret(g, [x]), out):
        assert _same(r._data, o) and o.shape == shape and o.flags.writeable


def test_the_blas_thread_count_is_restored_when_generated_code_raises():
    from ndgrad.jit import blas_threads
    a = ndgrad.ones(8, 8)
    small = generate(trace_graph(lambda a: a @ a, (a,)).graph)
    assert small.single_thread
    with pytest.raises(ValueError):
        small(np.ones((8, 3)))       # the product fails inside the single-threaded region
    if blas_threads.available():
        before = blas_threads._find()[0]()
        with pytest.raises(ValueError):
            small(np.ones((8, 3)))
        assert blas_threads._find()[0]() == before and blas_threads._depth[0] == 0


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_an_op_with_a_variable_number_of_results_and_one_result_is_unpacked(backend):
    # split/unbind return a sequence even when the node has one result; a vectorized Hessian
    # splits its rows into one piece (it crashed on the compiled call: 'tuple' has no reshape)
    rng = np.random.default_rng(21)
    x = ndgrad.tensor(rng.standard_normal(6))
    A = ndgrad.tensor(rng.standard_normal((6, 6)))

    def h(x):
        return ndgrad.autograd.functional.hessian(
            lambda x: ndgrad.tanh(A @ x).sum(), x, vectorize=True)

    def parts(x):
        (a,) = x.split(6)
        (b,) = x.reshape(1, 6).unbind(0)
        return a * b

    for fn in (h, parts):
        compiled = ndgrad.compile(fn, backend=backend)
        first, second = compiled(x), compiled(x)   # the second call runs the generated code
        np.testing.assert_allclose(second.numpy(), fn(x).numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(first.numpy(), second.numpy(), rtol=1e-12, atol=1e-14)
