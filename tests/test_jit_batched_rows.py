"""A traced row-by-row Jacobian or Hessian (``autograd.functional`` without ``vectorize``)
records one batched backward instead of one backward per row (tracer.py Note [Jacobian rows
traced batched]) and takes the loop whenever the batched backward could differ from it (strict
mode, hooks, outputs that do not require grad); ``batch_stacks`` turns the batched products of
one matrix into matrix products and collapses the view chains the rewrites leave
(stack_batching.py Note [Batched products of one matrix]). Values are checked against PyTorch
and eager ndgrad."""

import numpy as np
import pytest
import torch

import ndgrad
from ndgrad.autograd import functional as F
from ndgrad.jit import trace_graph
from ndgrad.jit.codegen import generate
from ndgrad.jit.stack_batching import batch_stacks, fold_constants


def _inputs(n=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n), rng.standard_normal((n, n)) / np.sqrt(n)


def _kinds(g):
    return [n.kind() for n in g.nodes()]


def _hess(x, A):
    return F.hessian(lambda v: (A @ v).tanh().sum(), x)


def test_a_traced_hessian_records_each_op_once_and_matches_torch():
    xa, Aa = _inputs()
    x, A = ndgrad.tensor(xa), ndgrad.tensor(Aa)
    g = trace_graph(_hess, (x, A)).graph
    kinds = _kinds(g)
    assert "stack" not in kinds and kinds.count("tanh") == 1 and len(kinds) < 40
    ref = torch.autograd.functional.hessian(lambda v: (torch.tensor(Aa) @ v).tanh().sum(),
                                            torch.tensor(xa)).numpy()
    c = ndgrad.compile(_hess)
    for _ in range(2):                       # the traced call, then the generated code
        np.testing.assert_allclose(c(x, A).numpy(), ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(_hess(x, A).numpy(), ref, rtol=1e-12, atol=1e-14)


def test_a_traced_jacobian_of_two_inputs_and_two_outputs_matches_torch():
    rng = np.random.default_rng(1)
    aa, ba = rng.standard_normal(3), rng.standard_normal((2, 3))

    def jac(lib, a, b):
        return lib.autograd.functional.jacobian(
            lambda a, b: ((a * b).sin(), (b @ a).exp()), (a, b))

    got = ndgrad.compile(lambda a, b: jac(ndgrad, a, b))
    ref = jac(torch, torch.tensor(aa), torch.tensor(ba))
    for _ in range(2):
        out = got(ndgrad.tensor(aa), ndgrad.tensor(ba))
        for i in range(2):
            for j in range(2):
                assert tuple(out[i][j].shape) == tuple(ref[i][j].shape)
                np.testing.assert_allclose(out[i][j].numpy(), ref[i][j].numpy(), rtol=1e-12,
                                           atol=1e-14)
    g = trace_graph(lambda a, b: jac(ndgrad, a, b), (ndgrad.tensor(aa), ndgrad.tensor(ba))).graph
    assert "stack" not in _kinds(g)


def test_strict_mode_keeps_the_loop_and_its_error():
    xa, Aa = _inputs(4)
    x, A = ndgrad.tensor(xa), ndgrad.tensor(Aa)
    g = trace_graph(lambda x, A: F.hessian(lambda v: (A @ v).tanh().sum(), x, strict=True),
                    (x, A)).graph
    assert "stack" in _kinds(g)
    c = ndgrad.compile(lambda x: F.jacobian(lambda v: ndgrad.ones(3, dtype=v.dtype) * 2, x,
                                            strict=True))
    with pytest.raises(RuntimeError, match="does not require grad"):
        torch.autograd.functional.jacobian(lambda v: torch.ones(3, dtype=v.dtype) * 2,
                                           torch.tensor(xa), strict=True)
    with pytest.raises(RuntimeError, match="does not require grad"):
        c(x)


def test_an_output_that_does_not_require_grad_keeps_the_loop_and_gives_zeros():
    xa, _ = _inputs(4)
    f = ndgrad.compile(lambda x: F.jacobian(lambda v: (v.detach() * 2, v.sin()), x))
    out = f(ndgrad.tensor(xa))
    ref = torch.autograd.functional.jacobian(lambda v: (v.detach() * 2, v.sin()),
                                             torch.tensor(xa))
    for o, r in zip(out, ref):
        np.testing.assert_allclose(o.numpy(), r.numpy(), rtol=1e-13, atol=0)


def test_a_hook_in_the_graph_keeps_the_loop_and_sees_every_row():
    xa, Aa = _inputs(4)
    seen = []

    def f(x, A):
        def inner(v):
            h = A @ v
            h.register_hook(lambda g: seen.append(tuple(g.shape)))
            return h.tanh().sum()
        return F.hessian(inner, x)

    eager = f(ndgrad.tensor(xa), ndgrad.tensor(Aa)).numpy()
    n_eager = len(seen)
    seen.clear()
    g = trace_graph(f, (ndgrad.tensor(xa), ndgrad.tensor(Aa)), check=False).graph
    assert "stack" in _kinds(g) and len(seen) == n_eager and set(seen) == {(4,)}
    out = generate(g)(xa, Aa)[0]
    np.testing.assert_allclose(out, eager, rtol=1e-13, atol=1e-15)


def test_batched_products_of_one_matrix_become_matrix_products():
    rng = np.random.default_rng(2)
    Xa, Ma, Na, va = (rng.standard_normal((6, 2, 3)), rng.standard_normal((3, 4)),
                      rng.standard_normal((5, 3)), rng.standard_normal((6, 3, 1)))

    def f(X, M, N, v):
        return (ndgrad.bmm(X, M.expand(6, 3, 4)),            # (B, p, n) @ M: one product
                ndgrad.bmm(N.unsqueeze(0).expand(6, 5, 3), v))  # N @ (B, n, 1): one product

    ts = [ndgrad.tensor(a) for a in (Xa, Ma, Na, va)]
    g = trace_graph(f, tuple(ts)).graph
    assert _kinds(g).count("bmm") == 2
    fold_constants(g)
    assert batch_stacks(g) == 2
    g.lint()
    assert "bmm" not in _kinds(g) and _kinds(g).count("mm") == 2
    out = generate(g)(Xa, Ma, Na, va)
    np.testing.assert_allclose(out[0], Xa @ Ma, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(out[1], Na @ va, rtol=1e-13, atol=1e-15)
    ref = torch.bmm(torch.tensor(Xa), torch.tensor(Ma).expand(6, 3, 4)).numpy()
    np.testing.assert_allclose(out[0], ref, rtol=1e-13, atol=1e-15)


def test_a_bmm_of_two_batched_operands_or_several_columns_is_left_alone():
    rng = np.random.default_rng(3)
    Xa, Ya, Ma = (rng.standard_normal((4, 2, 3)), rng.standard_normal((4, 3, 2)),
                  rng.standard_normal((2, 3)))

    def f(X, Y, M):
        return ndgrad.bmm(X, Y), ndgrad.bmm(M.expand(4, 2, 3), Y)   # k = 2 columns: kept

    ts = [ndgrad.tensor(a) for a in (Xa, Ya, Ma)]
    g = trace_graph(f, tuple(ts)).graph
    assert batch_stacks(g) == 0 and _kinds(g).count("bmm") == 2


def test_the_view_chains_left_by_a_rewrite_collapse_and_outputs_keep_their_nodes():
    xa, Aa = _inputs(6, seed=5)
    x, A = ndgrad.tensor(xa), ndgrad.tensor(Aa)
    g = trace_graph(lambda x, A: F.hessian(lambda v: (A @ v).tanh().sum(), x, vectorize=True),
                    (x, A)).graph
    fold_constants(g)
    assert batch_stacks(g) >= 2
    g.lint()
    kinds = _kinds(g)
    assert "bmm" not in kinds and "split" not in kinds and "expand" not in kinds
    assert kinds.count("t") <= 1
    out_node = g.outputs()[0].node()
    assert out_node is not None and out_node.kind() == "view"   # the returned view stays
    np.testing.assert_allclose(generate(g)(xa, Aa)[0], _hess(x, A).numpy(), rtol=1e-13,
                               atol=1e-15)


def test_a_batched_hessian_with_create_graph_differentiates_like_torch():
    xa, Aa = _inputs(5, seed=7)

    def f(lib, x, A):
        return lib.autograd.functional.hessian(lambda v: (A @ v).tanh().sum(), x,
                                               create_graph=True).pow(2).sum()

    c = ndgrad.compile(lambda x, A: f(ndgrad, x, A))
    xt, At = torch.tensor(xa, requires_grad=True), torch.tensor(Aa, requires_grad=True)
    yt = f(torch, xt, At)
    yt.backward()
    for _ in range(2):
        x, A = ndgrad.tensor(xa, requires_grad=True), ndgrad.tensor(Aa, requires_grad=True)
        y = c(x, A)
        y.backward()
        assert type(y.grad_fn).__name__ == "DifferentiableGraphBackward"
        np.testing.assert_allclose(y.item(), yt.item(), rtol=1e-12)
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-11, atol=1e-13)
        np.testing.assert_allclose(A.grad.numpy(), At.grad.numpy(), rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("name", ["identity", "unused_input", "float32_output", "matrix_out"])
def test_batched_rows_give_torchs_shapes_dtypes_and_values(name):
    fns = {"identity": lambda L, x, y: x,
           "unused_input": lambda L, x, y: x.sin(),
           "float32_output": lambda L, x, y: (x.exp(), (y * 2).to(L.float32)),
           "matrix_out": lambda L, x, y: x[:2, None] * y[None, :]}
    f = fns[name]
    rng = np.random.default_rng(8)
    xa, ya = rng.standard_normal(3), rng.standard_normal(2)
    ref = torch.autograd.functional.jacobian(lambda x, y: f(torch, x, y),
                                             (torch.tensor(xa), torch.tensor(ya)))
    c = ndgrad.compile(lambda x, y: F.jacobian(lambda x, y: f(ndgrad, x, y), (x, y)))

    def leaves(r):
        return [t for o in (r if isinstance(r, tuple) else (r,))
                for t in (o if isinstance(o, tuple) else (o,))]
    for _ in range(2):
        got = leaves(c(ndgrad.tensor(xa), ndgrad.tensor(ya)))
        want = leaves(ref)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert tuple(g.shape) == tuple(w.shape)
            assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, atol=1e-7)
