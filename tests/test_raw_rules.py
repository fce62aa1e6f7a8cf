"""Raw backward rules (Note [Raw backward rules] in ndgrad/ops/_dispatch.py): a plain backward
runs an op's ``raw`` rule on arrays; it must give bit for bit the gradients of the Tensor rule
(which a ``create_graph`` backward runs), and fall back to it whenever it cannot apply."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ndgrad
from ndgrad.autograd.graph import saved_tensors_hooks
from ndgrad.ops import _dispatch, linalg, pointwise, reduction
from ndgrad.ops import shape as shape_ops

RNG = np.random.default_rng(0)


def _arr(shape, dtype, positive=False):
    a = RNG.uniform(0.5, 2.0, shape) if positive else RNG.uniform(-2.0, 2.0, shape)
    return a.astype(dtype)


# name -> (op whose raw rule runs, input shapes, positive inputs, function of the tensors)
CASES = {
    "sin": (pointwise.SIN, [(3, 4)], False, lambda x: x.sin()),
    "cos": (pointwise.COS, [(3, 4)], False, lambda x: x.cos()),
    "exp": (pointwise.EXP, [(3, 4)], False, lambda x: x.exp()),
    "log": (pointwise.LOG, [(3, 4)], True, lambda x: x.log()),
    "tanh": (pointwise.TANH, [(3, 4)], False, lambda x: x.tanh()),
    "sqrt": (pointwise.SQRT, [(3, 4)], True, lambda x: x.sqrt()),
    "sigmoid": (pointwise.SIGMOID, [(3, 4)], False, lambda x: x.sigmoid()),
    "relu": (pointwise.RELU, [(3, 4)], False, lambda x: x.relu()),
    "mul": (pointwise.MUL, [(3, 4), (4,)], False, lambda x, y: x * y),
    "square": (pointwise.MUL, [(3, 4)], False, lambda x: x * x),
    "mul_scalar": (pointwise.MUL_S, [(3, 4)], False, lambda x: x * 2.5),
    "mul_int": (pointwise.MUL_S, [(3, 4)], False, lambda x: x * 3),
    "div": (pointwise.DIV, [(3, 4), (3, 1)], True, lambda x, y: x / y),
    "div_scalar": (pointwise.DIV_S, [(3, 4)], False, lambda x: x / 3.0),
    "mm": (linalg.MM, [(3, 4), (4, 5)], False, lambda x, y: x @ y),
    # Note [Gradient layout of mm]: transposed operands' gradients are computed transposed
    "mm_t_other": (linalg.MM, [(3, 4), (5, 4)], False, lambda x, y: x @ y.t()),
    "mm_t_self": (linalg.MM, [(4, 3), (4, 5)], False, lambda x, y: x.t() @ y),
    # Note [Small NT products]: inside the window the left operand is copied column-major
    "mm_nt_window": (linalg.MM, [(32, 64), (64, 128)], False, lambda x, y: x @ y),
    "mm_nt_window_t_self": (linalg.MM, [(128, 32), (128, 64)], False, lambda x, y: x.t() @ y),
    "mean": (reduction.MEAN, [(3, 4)], False, lambda x: x.mean()),
    "mean_dim1": (reduction.MEAN_DIM, [(3, 4)], False, lambda x: x.mean(1)),
    "mean_keepdim": (reduction.MEAN_DIM, [(2, 3, 4)], False, lambda x: x.mean((0, 2), True)),
    "sum": (reduction.SUM, [(3, 4)], False, lambda x: x.sum()),
    "sum_dim1": (reduction.SUM_DIM, [(2, 3, 4)], False, lambda x: x.sum(1)),
    "sum_dims02": (reduction.SUM_DIM, [(2, 3, 4)], False, lambda x: x.sum((2, 0))),
    "add": (pointwise.ADD, [(3, 4), (3, 4)], False, lambda x, y: x + y),
    "square_0d": (pointwise.MUL, [()], False, lambda x: x * x),
    "add_0d": (pointwise.ADD, [(), (3,)], False, lambda x, y: x + y),
    "tanh_0d": (pointwise.TANH, [()], False, lambda x: x.tanh()),
    "relu_0d": (pointwise.RELU, [()], False, lambda x: x.relu()),
    "add_same": (pointwise.ADD, [(3, 4)], False, lambda x: x + x),
    "add_bias": (pointwise.ADD, [(3, 4), (4,)], False, lambda x, y: x + y),
    "add_both_broadcast": (pointwise.ADD, [(3, 1), (2, 1, 4)], False, lambda x, y: x + y),
    "sub": (pointwise.SUB, [(3, 4), (3, 4)], False, lambda x, y: x - y),
    "sub_broadcast": (pointwise.SUB, [(1, 4), (3, 1)], False, lambda x, y: x - y),
    "add_scalar": (pointwise.ADD_S, [(3, 4)], False, lambda x: x + 2.5),
    "sub_scalar": (pointwise.SUB_S, [(3, 4)], False, lambda x: x - 2.5),
    "t": (shape_ops.T_OP, [(3, 4)], False, lambda x: x.t()),
    "t_1d": (shape_ops.T_OP, [(4,)], False, lambda x: x.t()),
    "tanh_backward": (pointwise.TANH_BACKWARD, [(3, 4), (3, 4)], False,
                      lambda g, r: pointwise.tanh_backward(g, r)),
}


def _grads(fn, arrays, requires, create_graph):
    xs = [ndgrad.tensor(a, requires_grad=r) for a, r in zip(arrays, requires)]
    out = fn(*xs)
    n = int(np.prod(out.shape))
    w = ndgrad.tensor(np.linspace(-1.5, 2.0, n).reshape(tuple(out.shape)).astype(arrays[0].dtype))
    wanted = [x for x in xs if x.requires_grad]
    gs = ndgrad.autograd.grad(out, wanted, w, create_graph=create_graph)
    return [g.detach().numpy() for g in gs]


@pytest.fixture
def count_raw(monkeypatch):
    calls = {}

    def spy(op):
        inner = op.raw

        def raw(ctx, g, saved):
            calls[op] = calls.get(op, 0) + 1
            return inner(ctx, g, saved)
        monkeypatch.setattr(op, "raw", raw)
    return spy, calls


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", CASES)
def test_raw_rule_matches_tensor_rule_bitwise(name, dtype, count_raw):
    op, shapes, positive, fn = CASES[name]
    spy, calls = count_raw
    spy(op)
    arrays = [_arr(s, dtype, positive) for s in shapes]
    patterns = [(True,) * len(shapes)]
    if len(shapes) == 2:
        patterns += [(True, False), (False, True)]     # needs_input_grad of each operand
    for requires in patterns:
        calls.clear()
        plain = _grads(fn, arrays, requires, create_graph=False)
        assert calls.get(op) == 1, "the plain backward runs the raw rule"
        calls.clear()
        recorded = _grads(fn, arrays, requires, create_graph=True)
        assert not calls, "a create_graph backward runs the Tensor rule"
        for a, b in zip(plain, recorded):
            assert a.dtype == b.dtype == dtype and a.shape == b.shape
            assert a.tobytes() == b.tobytes()


def test_raw_rule_falls_back(count_raw):
    spy, calls = count_raw
    spy(pointwise.MUL)
    spy(pointwise.SIN)
    # mixed dtypes: a float64 0-d tensor times a float32 tensor keeps float32 (PyTorch's
    # promotion), which NumPy would not: the Tensor rule runs
    x = ndgrad.tensor(_arr((3,), np.float32), requires_grad=True)
    s = ndgrad.tensor(np.float64(1.5), requires_grad=True)
    (x * s).sum().backward()
    assert not calls.get(pointwise.MUL)
    assert x.grad.dtype == ndgrad.float32 and s.grad.dtype == ndgrad.float64
    # float16 and complex gradients: the Tensor rule
    for dt in (ndgrad.float16, ndgrad.complex64):
        z = ndgrad.ones(3, dtype=dt, requires_grad=True)
        z.sin().sum().abs().backward() if dt.is_complex else z.sin().sum().backward()
    assert not calls.get(pointwise.SIN)
    # values packed by saved tensor hooks: the Tensor rule unpacks them (once each)
    unpacked = []
    with saved_tensors_hooks(lambda t: t, lambda t: unpacked.append(1) or t):
        y = ndgrad.ones(3, requires_grad=True)
        out = y.sin().sum()
    out.backward()
    assert unpacked == [1] and not calls.get(pointwise.SIN)


def test_raw_rule_checks_saved_values():
    x = ndgrad.ones(3, requires_grad=True)
    h = x * 1.0
    y = h.sin()
    h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    z = (x * 1.0).sin().sum()
    z.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        z.backward()


def test_raw_add_alpha_falls_back(count_raw):
    spy, calls = count_raw
    spy(pointwise.ADD)
    spy(pointwise.SUB)
    x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    y = ndgrad.tensor([3.0], requires_grad=True)
    (ndgrad.add(x, y, alpha=2.0) * 3).sum().backward()
    (ndgrad.sub(x, y, alpha=0.5) * 3).sum().backward()
    assert calls[pointwise.ADD] == 1 and calls[pointwise.SUB] == 1     # declined: Tensor rule
    assert x.grad.tolist() == [6.0, 6.0] and y.grad.tolist() == [9.0]   # 12 - 3


def test_raw_pass_through_keeps_gradients_apart():
    # add's raw rule hands the incoming gradient on to both operands, as the Tensor rule does:
    # the first leaf gets a copy (the gradient is still held for the second), the second may
    # steal it; the two .grad never share memory, so accumulating into one leaves the other
    a = ndgrad.tensor(_arr((4,), np.float32), requires_grad=True)
    b = ndgrad.tensor(_arr((4,), np.float32), requires_grad=True)
    w = ndgrad.tensor(_arr((4,), np.float32))
    ((a + b) * w).sum().backward()
    ga, gb = a.grad.numpy(), b.grad.numpy()
    assert not np.shares_memory(ga, gb)
    np.testing.assert_array_equal(ga, w.numpy())
    np.testing.assert_array_equal(gb, w.numpy())
    before = gb.copy()
    (a * 2.0).sum().backward()
    np.testing.assert_array_equal(b.grad.numpy(), before)
    np.testing.assert_array_equal(a.grad.numpy(), w.numpy() + 2)
    # a hook that keeps the passed-through gradient sees it unchanged by later accumulation
    seen = []
    c = ndgrad.tensor(_arr((4,), np.float32), requires_grad=True)
    c.register_hook(lambda g: seen.append(g))
    ((c + 1.0) * w).sum().backward()
    ((c + 1.0) * w).sum().backward()
    np.testing.assert_array_equal(seen[0].numpy(), w.numpy())
    np.testing.assert_array_equal(c.grad.numpy(), 2 * w.numpy())


def test_mm_gradient_of_transposed_operand_is_row_major():
    # Note [Gradient layout of mm]: W.t()'s gradient comes out column-major, so W's is
    # row-major, as in PyTorch (and then sums with W's other gradient in order)
    for dt in (np.float64, np.float32):
        w = ndgrad.tensor(_arr((4, 5), dt), requires_grad=True)
        x = ndgrad.tensor(_arr((3, 4), dt), requires_grad=True)
        y = ndgrad.tensor(_arr((3, 5), dt), requires_grad=True)
        seen = []
        wt = w.t()
        wt.register_hook(lambda g, seen=seen: seen.append(g.is_contiguous()))
        out = (y @ wt).sum() + (x @ w).sum()
        out.backward()
        assert seen == [False] and w.grad.is_contiguous()
        tw = torch.tensor(w.detach().numpy(), requires_grad=True)
        tx, ty = torch.tensor(x.detach().numpy()), torch.tensor(y.detach().numpy())
        twt = tw.t()
        twt.register_hook(lambda g, seen=seen: seen.append(g.is_contiguous()))
        ((ty @ twt).sum() + (tx @ tw).sum()).backward()
        assert seen == [False, False]
        np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-5)


def _into_spy(monkeypatch, op):
    calls = []
    inner = op.raw_into

    def spy(ctx, g, saved):
        calls.append(1)
        return inner(ctx, g, saved)
    monkeypatch.setattr(op, "raw_into", spy)
    return calls


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["relu", "tanh"])
def test_raw_into_writes_only_gradients_nobody_holds(name, dtype, monkeypatch):
    op = {"relu": pointwise.RELU, "tanh": pointwise.TANH}[name]
    calls = _into_spy(monkeypatch, op)
    x = ndgrad.tensor(_arr((3, 4), dtype), requires_grad=True)
    getattr(x * 1.0, name)().mul(2.0).sum().backward()
    assert not calls                  # small arrays: out= would cost more than it saves
    monkeypatch.setattr(_dispatch, "_INTO_MIN_SIZE", 0)
    a = _arr((3, 4), dtype)
    a[0, :2] = 0.0                    # relu's kink and a NaN gradient under the mask
    w = _arr((3, 4), dtype)
    w[0, 0] = np.nan
    wt = ndgrad.tensor(w)

    def run(create_graph=False, hook=None):
        x = ndgrad.tensor(a, requires_grad=True)
        y = x * 1.0
        r = getattr(y, name)()
        if hook is not None:
            hook(r)
        (ndgrad.autograd.backward if not create_graph else
         lambda o: o.backward(create_graph=True))((r * wt).sum())
        return x.grad.detach().numpy(), r

    want, _ = run(create_graph=True)              # the Tensor rule
    assert not calls
    got, _ = run()                                # written into the mul's fresh gradient
    assert calls == [1] and got.tobytes() == want.tobytes()
    # a hook that keeps the incoming gradient: it is not written into
    kept = []
    calls.clear()
    got, _ = run(hook=lambda r: r.register_hook(lambda g: kept.append(g)))
    assert not calls and got.tobytes() == want.tobytes()
    np.testing.assert_array_equal(kept[0].numpy(), w)
    # a retained gradient is a copy (as PyTorch's): the write does not reach it
    got, r = run(hook=lambda r: r.retain_grad())
    assert got.tobytes() == want.tobytes()
    np.testing.assert_array_equal(r.grad.numpy(), w)
    # a gradient given by the caller (the root's seed) is never written
    x = ndgrad.tensor(a, requires_grad=True)
    seed = ndgrad.tensor(w.copy())
    calls.clear()
    getattr(x * 1.0, name)().backward(seed)
    assert not calls
    np.testing.assert_array_equal(seed.numpy(), w)
    assert x.grad.numpy().tobytes() == want.tobytes()
    # captured by autograd.grad as the gradient of an intermediate: not written either
    x = ndgrad.tensor(a, requires_grad=True)
    y = x * 1.0
    r = getattr(y, name)()
    calls.clear()
    gr, gx = ndgrad.autograd.grad((r * wt).sum(), [r, x])
    np.testing.assert_array_equal(gr.numpy(), w)
    assert gx.numpy().tobytes() == want.tobytes()


@pytest.mark.parametrize("name", ["relu", "tanh", "square"])
def test_raw_rules_on_0d_gradients_owned_by_the_engine(name):
    # 0-d arrays: NumPy returns scalars from ufuncs, so the in-place forms fall back
    for dt in (np.float32, np.float64):
        got = []
        for create_graph in (False, True):
            x = ndgrad.tensor(np.asarray(0.7, dt), requires_grad=True)
            y = x * 1.0
            r = y * y if name == "square" else getattr(y, name)()
            (gx,) = ndgrad.autograd.grad(r * 2.0, [x], create_graph=create_graph)
            got.append(gx.detach().numpy())
        assert got[0].dtype == dt and got[0].tobytes() == got[1].tobytes()


@pytest.mark.parametrize("name", ["square", "add_bias", "sub_broadcast"])
def test_node_post_hooks_see_the_tensor_rules_gradients(name):
    # raw rules that merge (x * x) or reduce (a broadcast operand of add/sub) what they return
    # give a node's post hook the Tensor rule's gradients instead
    op, shapes, positive, fn = CASES[name]
    arrays = [_arr(s, np.float64, positive) for s in shapes]
    seen = {}
    for create_graph in (False, True):
        xs = [ndgrad.tensor(a, requires_grad=True) for a in arrays]
        out = fn(*xs)

        def hook(gi, go, k=create_graph):
            seen[k] = [g.detach().numpy().copy() for g in gi if g is not None]
        out.grad_fn.register_hook(hook)
        ndgrad.autograd.grad((out * 1.5).sum(), xs, create_graph=create_graph)
    assert len(seen[False]) == len(seen[True]) == 2
    for a, b in zip(seen[False], seen[True]):
        assert a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "bool",
                                   "complex64", "bfloat16"])
def test_broadcast_view_is_numpys_broadcast_to(dtype):
    """sum's raw rule and expand's forward build np.broadcast_to's view directly
    (ops/shape.py ``broadcast_view``): same values, shape, strides (0 on size-1 dimensions,
    which the gradient layout contract reads), read-only, a view of the input; NumPy's own
    call (and its errors) for anything else."""
    from ndgrad.ops.shape import broadcast_view
    dt = ndgrad.bfloat16.np if dtype == "bfloat16" else np.dtype(dtype)
    cases = [((), (3, 4)), ((), ()), ((1,), (5,)), ((3, 1), (2, 3, 4)), ((1, 4), (3, 4)),
             ((2, 3), (2, 3)), ((1, 1), (1, 1)), ((2, 1, 3), (2, 5, 3)), ((1,), (0,)),
             ((3,), (0, 3))]
    for src, shape in cases:
        a = np.asarray(RNG.uniform(-2, 2, src) * 3).astype(dt)
        got, want = broadcast_view(a, shape), np.broadcast_to(a, shape)
        assert (got.shape, got.strides, got.dtype) == (want.shape, want.strides, want.dtype)
        assert np.array_equal(got, want) and not got.flags.writeable
        assert got.size == 0 or np.shares_memory(got, a)
    strided = np.arange(12.0).astype(dt).reshape(3, 4)[:, ::2]
    np.testing.assert_array_equal(broadcast_view(strided, (2, 3, 2)),
                                  np.broadcast_to(strided, (2, 3, 2)))
    for src, shape in [((3,), (4,)), ((2, 3), (3,))]:
        with pytest.raises(ValueError) as got_err:
            broadcast_view(np.ones(src, dt), shape)
        with pytest.raises(ValueError) as want_err:
            np.broadcast_to(np.ones(src, dt), shape)
        assert str(got_err.value) == str(want_err.value)


def test_sum_backward_view_and_layout_contract():
    """A full sum's gradient reaches a (1, n) leaf as a 0-strided view: the leaf's .grad is a
    dense copy (not the view), as with np.broadcast_to, and expand's result is torch's."""
    def run(L):
        x = L.ones(1, 4, requires_grad=True)
        (x * 1).sum().backward()
        y = L.ones(1, 4, requires_grad=True)
        y.sum().backward()
        e = L.arange(3.0).reshape(3, 1).expand(2, 3, 4)
        return (x.grad.stride(), x.grad.tolist(), y.grad.stride(), e.stride(), e.tolist(),
                e.is_contiguous())
    assert run(torch) == run(ndgrad)


def test_small_nt_product_layout_and_values():
    # Note [Small NT products]: x's gradient g @ W.T in the window runs with g copied to
    # column-major; the gradient is row-major as PyTorch's, hooks see the same values
    for dt in (np.float32, np.float64):
        xa, wa = _arr((32, 128), dt), _arr((128, 128), dt)
        assert linalg._nt_lhs(xa, wa.T) is not xa and linalg._nt_lhs(xa, wa) is xa
        few = xa[:8]
        assert linalg._nt_lhs(few, wa.T) is few             # outside the window: unchanged
        x = ndgrad.tensor(xa, requires_grad=True)
        w = ndgrad.tensor(wa, requires_grad=True)
        h = x * 1.0
        seen = []
        h.register_hook(lambda g, seen=seen: seen.append(g))
        h.retain_grad()
        (h @ w).tanh().sum().backward()
        tx = torch.tensor(xa, requires_grad=True)
        tw = torch.tensor(wa, requires_grad=True)
        (tx @ tw).tanh().sum().backward()
        assert seen[0].is_contiguous() and h.grad.is_contiguous() and x.grad.is_contiguous()
        tol = 1e-4 if dt == np.float32 else 1e-12
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=tol, atol=tol)
        np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=tol, atol=tol)


def test_needs_input_grads_prunes_like_needs_input_grad(monkeypatch):
    # OpNode.needs_input_grads (one call for a binary raw rule) answers as needs_input_grad,
    # also in a backward restricted to some inputs (Note [Pruned backward]): one GEMM of two
    calls = []
    inner = linalg._mm_arrays
    monkeypatch.setattr(linalg, "_mm_arrays", lambda a, b: calls.append(1) or inner(a, b))
    xa, wa = _arr((3, 4), np.float64), _arr((4, 5), np.float64)
    x = ndgrad.tensor(xa, requires_grad=True)
    w = ndgrad.tensor(wa, requires_grad=True)
    y = x @ w
    node = y.grad_fn
    assert node.needs_input_grads() == (node.needs_input_grad(0), node.needs_input_grad(1))
    (gx,) = ndgrad.autograd.grad(y.sum(), [x])
    assert len(calls) == 1
    tx, tw = torch.tensor(xa, requires_grad=True), torch.tensor(wa, requires_grad=True)
    (tgx,) = torch.autograd.grad((tx @ tw).sum(), [tx])
    np.testing.assert_allclose(gx.numpy(), tgx.numpy(), rtol=1e-12)
    calls.clear()
    ((x * 1.0) @ w.detach()).sum().backward()
    assert len(calls) == 1 and w.grad is None
