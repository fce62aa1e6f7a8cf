"""Custom ``autograd.Function`` against PyTorch: both styles of forward, non-tensor arguments
and outputs, saved tensors, mark_dirty / mark_non_differentiable / set_materialize_grads,
gradient count and shape validation, hooks, double backward, ``once_differentiable`` and the
forward-AD ``jvp`` slot. Each test runs the same program with ``torch`` and ``ndgrad``."""

import sys
import types
import warnings

import numpy as np
import pytest
import torch

import ndgrad
from ndgrad.autograd.function import once_differentiable as nd_once
from ndgrad.autograd.node import Node
from _compare import both

LIBS = (torch, ndgrad)


def vals(t):
    return None if t is None else np.asarray(t.detach().tolist())


def error_of(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - compared between libraries
        return type(e).__name__, str(e)
    return None


def once(L):
    return torch.autograd.function.once_differentiable if L is torch else nd_once


def edge_names(node):
    return [None if fn is None else fn.name() for fn, _ in node.next_functions]


# ---------------------------------------------------------------------------- basics
def make_exp(L):
    class MyExp(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            result = x.exp()
            ctx.save_for_backward(result)
            ctx.grad_enabled_in_forward = L.is_grad_enabled()
            MyExp.ctx = ctx
            return result

        @staticmethod
        def backward(ctx, g):
            (result,) = ctx.saved_tensors
            return g * result
    return MyExp


def test_forward_backward_values_name_and_ctx_is_the_node():
    def run(L):
        MyExp = make_exp(L)
        x = L.tensor([0.5, -1.0, 2.0], dtype=L.float64, requires_grad=True)
        y = MyExp.apply(x)
        (y * y).sum().backward()
        ctx = MyExp.ctx
        return (vals(y), vals(x.grad), y.grad_fn.name(), type(y.grad_fn).__name__,
                y.grad_fn is ctx, ctx.grad_enabled_in_forward, edge_names(y.grad_fn),
                y.requires_grad, y.is_leaf, repr(y).split("grad_fn=")[1])
    t, n = both(run)
    np.testing.assert_allclose(n[0], t[0])
    np.testing.assert_allclose(n[1], t[1])
    assert n[2:] == t[2:]
    assert n[2] == "MyExpBackward" and n[4] is True and n[5] is False


def test_node_is_an_ndgrad_node_and_ctx_a_function_ctx():
    MyExp = make_exp(ndgrad)
    y = MyExp.apply(ndgrad.ones(2, requires_grad=True))
    assert isinstance(y.grad_fn, Node)
    assert isinstance(y.grad_fn, ndgrad.autograd.FunctionCtx)
    assert isinstance(y.grad_fn, torch.autograd.function.FunctionCtx) is False
    assert y.grad_fn._sequence_nr > 0
    assert ndgrad.autograd.function.once_differentiable is ndgrad.autograd.once_differentiable


def test_apply_under_no_grad_and_without_grad_inputs():
    def run(L):
        MyExp = make_exp(L)
        x = L.ones(2, requires_grad=True)
        with L.no_grad():
            y = MyExp.apply(x)
        nig = MyExp.ctx.needs_input_grad
        z = MyExp.apply(L.ones(2))
        return (y.requires_grad, y.grad_fn is None, nig, z.requires_grad,
                MyExp.ctx.needs_input_grad)
    t, n = both(run)
    assert n == t


def test_function_in_a_larger_graph_with_broadcasting_and_multiple_uses():
    def run(L):
        class Mul(L.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a * b

            @staticmethod
            def backward(ctx, g):
                a, b = ctx.saved_tensors
                return g * b, g * a
        rng = np.random.default_rng(0)
        a = L.tensor(rng.standard_normal((3, 4)), requires_grad=True)
        b = L.tensor(rng.standard_normal(4), requires_grad=True)
        y = Mul.apply(a.tanh(), b) + Mul.apply(a, a)
        y.sum().backward()
        return vals(a.grad), vals(b.grad), edge_names(y.grad_fn.next_functions[0][0])
    t, n = both(run)
    np.testing.assert_allclose(n[0], t[0], rtol=1e-12)
    np.testing.assert_allclose(n[1], t[1], rtol=1e-12)
    assert n[2] == t[2] == ["TanhBackward0", "torch::autograd::AccumulateGrad"]


# ---------------------------------------------------------------------------- arguments
def test_non_tensor_arguments_edges_and_needs_input_grad():
    def run(L):
        class Scale(L.autograd.Function):
            @staticmethod
            def forward(ctx, x, k, other, name):
                ctx.k = k
                Scale.nig = ctx.needs_input_grad
                return x * k + other

            @staticmethod
            def backward(ctx, g):
                return g * ctx.k, None, g, None
        x = L.ones(2, requires_grad=True)
        y = Scale.apply(x, 3.0, L.ones(2), "s")
        res = [len(y.grad_fn.next_functions), edge_names(y.grad_fn), Scale.nig]
        y2 = Scale.apply(x * 2, 3.0, L.ones(2, requires_grad=True), None)
        res += [edge_names(y2.grad_fn), y2.grad_fn.next_functions[0][1]]
        y.sum().backward()
        res.append(x.grad.tolist())
        return res
    t, n = both(run)
    assert n == t
    assert t[1] == ["torch::autograd::AccumulateGrad", None]


def test_keyword_arguments_bind_to_positions():
    def run(L):
        class K(L.autograd.Function):
            @staticmethod
            def forward(ctx, x, a, b=5):
                K.seen = (a, b, ctx.needs_input_grad)
                return x * a * b

            @staticmethod
            def backward(ctx, g):
                return g, None, None
        x = L.ones(2, requires_grad=True)
        out = []
        K.apply(x, b=1, a=2)
        out.append(K.seen)
        K.apply(x, 2)
        out.append(K.seen)
        y = K.apply(x, a=L.ones(2, requires_grad=True))
        out.append((K.seen[2], len(y.grad_fn.next_functions)))
        out.append(error_of(lambda: K.apply(x, 2, c=3)))
        return out
    t, n = both(run)
    assert n == t


def test_setup_context_style():
    def run(L):
        class S(L.autograd.Function):
            @staticmethod
            def forward(x, k=2.0):
                S.grad_in_fwd = L.is_grad_enabled()
                return x * k

            @staticmethod
            def setup_context(ctx, inputs, output):
                S.setup = (len(inputs), inputs[1], L.is_grad_enabled(), output.requires_grad)
                ctx.k = inputs[1]
                ctx.save_for_backward(output)

            @staticmethod
            def backward(ctx, g):
                (o,) = ctx.saved_tensors
                S.saved_fn = o.grad_fn.name()
                return g * ctx.k, None
        x = L.ones(2, requires_grad=True)
        S.apply(x).sum().backward()
        r = [S.grad_in_fwd, S.setup, S.saved_fn, x.grad.tolist()]
        y = S.apply(x, k=4.0)
        r += [S.setup, y.tolist()]
        return r
    t, n = both(run)
    assert n == t


# ---------------------------------------------------------------------------- outputs
def test_non_tensor_and_integer_outputs_and_materialized_grads():
    def run(L):
        class M(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, 7, x * 3, (x > 0)

            @staticmethod
            def backward(ctx, g1, g2, g3, g4):
                M.got = (g1.tolist(), g2, g3.tolist(), g4.tolist(), str(g4.dtype).split(".")[1])
                return g1 + g3
        x = L.ones(2, requires_grad=True)
        out = M.apply(x)
        types_ = [type(o).__name__ for o in out]
        meta = (out[2].output_nr, out[3].requires_grad, out[3].grad_fn is None)
        out[0].sum().backward()
        return types_[1], meta, M.got, x.grad.tolist()
    t, n = both(run)
    assert n == t


def test_set_materialize_grads_false_passes_none():
    def run(L):
        class M2(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(False)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                M2.got = (g1 is None, g2 is None)
                return g1
        x = L.ones(2, requires_grad=True)
        M2.apply(x)[0].sum().backward()
        return M2.got, x.grad.tolist()
    t, n = both(run)
    assert n == t == ((False, True), [1.0, 1.0])


def test_list_output_is_a_plain_object_and_tuple_outputs_unpack():
    def run(L):
        class Lst(L.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return [a * 2, a * 3]

            @staticmethod
            def backward(ctx, g):
                return None

        class NoT(L.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return 5

            @staticmethod
            def backward(ctx, g):
                return None
        x = L.ones(2, requires_grad=True)
        r = Lst.apply(x)
        return type(r).__name__, r[0].requires_grad, NoT.apply(x)
    t, n = both(run)
    assert n == t


def test_mark_non_differentiable():
    def run(L):
        class ND(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                a, b = x * 2, x * 3
                ctx.mark_non_differentiable(b)
                return a, b

            @staticmethod
            def backward(ctx, g1, g2):
                ND.got = g2.tolist()
                return g1
        x = L.ones(2, requires_grad=True)
        a, b = ND.apply(x)
        info = (b.requires_grad, b.grad_fn is None, a.grad_fn.name())
        a.sum().backward()
        return info, ND.got, error_of(lambda: b.sum().backward())
    t, n = both(run)
    assert n == t


def test_returning_an_input_gives_a_new_view_with_history():
    def run(L):
        class Id(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2

        class Two(L.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a, b * 2

            @staticmethod
            def backward(ctx, ga, gb):
                return ga, gb * 2
        x = L.ones(2, requires_grad=True)
        y = Id.apply(x)
        r = [y is x, y._base is x, y.grad_fn.name(), x._version, y._version]
        y.sum().backward()
        r.append(x.grad.tolist())
        xn = L.ones(2)
        yn = Id.apply(xn)
        r += [yn is xn, yn._base is xn, yn.requires_grad]
        c = L.ones(2)
        p, q = Two.apply(c, x)
        r += [p is c, p.requires_grad, p.grad_fn.name(), p._base is c, edge_names(q.grad_fn)]
        return r
    t, n = both(run)
    assert n == t


# ---------------------------------------------------------------------------- mark_dirty
def make_dirty(L, modify=True, returns_input=True):
    class Dbl(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            if modify:
                x.mul_(2)
            ctx.mark_dirty(x)
            return x if returns_input else x * 1

        @staticmethod
        def backward(ctx, g):
            return g * 2
    return Dbl


def test_mark_dirty_rebases_history_and_bumps_version():
    def run(L):
        Dbl = make_dirty(L)
        leaf = L.tensor([1.0, 2.0], requires_grad=True)
        z = leaf * 1
        v0 = z._version
        r = Dbl.apply(z)
        out = [r is z, z.grad_fn.name(), edge_names(z.grad_fn), v0, z._version, z.tolist()]
        (z * z).sum().backward()
        out.append(leaf.grad.tolist())
        z2 = leaf * 1
        make_dirty(L, modify=False).apply(z2)
        out.append(z2._version)
        return out
    t, n = both(run)
    assert n == t


def test_mark_dirty_errors_and_no_grad():
    def run(L):
        leaf = L.ones(2, requires_grad=True)
        out = [error_of(lambda: make_dirty(L).apply(leaf)),
               error_of(lambda: make_dirty(L, returns_input=False).apply(leaf * 1))]
        z = leaf.clone()
        with L.no_grad():
            r = make_dirty(L, modify=False).apply(z)
        out += [r is z, z._version, z.grad_fn.name(), r.requires_grad]
        plain = L.ones(2)
        r2 = make_dirty(L).apply(plain)
        out += [r2 is plain, plain._version, plain.tolist()]
        return out
    t, n = both(run)
    assert n == t


def test_mark_dirty_on_a_view_rebases_the_base():
    def run(L):
        class AddW(L.autograd.Function):
            @staticmethod
            def forward(ctx, x, w):
                x.add_(w)
                ctx.mark_dirty(x)
                ctx.save_for_backward(w)
                return x

            @staticmethod
            def backward(ctx, g):
                (w,) = ctx.saved_tensors
                return g * 2, g * w * 3
        leaf = L.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        w = L.tensor([0.5, 0.25, 1.0], requires_grad=True)
        base = leaf * 1
        v = base[1]
        r = AddW.apply(v, w)
        out = [r is v, base.grad_fn.name(), v.grad_fn.name(), base._version, v._version,
               base.tolist()]
        (base * base).sum().backward()
        out += [leaf.grad.tolist(), w.grad.tolist()]
        out.append(error_of(lambda: AddW.apply(leaf[0], w)))
        return out
    t, n = both(run)
    assert n == t


# ---------------------------------------------------------------------------- saved tensors
def test_saved_tensors_freed_after_backward_and_retain_graph():
    def run(L):
        class SV(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, None)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                a, b = ctx.saved_tensors
                SV.got = (a is SV.x, b)
                return g * a
        x = L.ones(2, requires_grad=True)
        SV.x = x
        y = SV.apply(x)
        y.sum().backward(retain_graph=True)
        y.sum().backward()
        out = [SV.got, x.grad.tolist(), error_of(lambda: y.grad_fn.saved_tensors),
               error_of(lambda: y.sum().backward())]
        return out
    t, n = both(run)
    assert n == t
    assert "backward through the graph a second time" in t[2][1]


def test_second_backward_without_saved_tensors():
    def run(L):
        class Reads(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                ctx.saved_tensors
                return g

        class NoReads(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g
        x = L.ones(2, requires_grad=True)
        y = Reads.apply(x)
        y.sum().backward()
        e = error_of(lambda: y.sum().backward())
        y2 = NoReads.apply(x)
        y2.sum().backward()
        y2.sum().backward()
        return e is not None and e[0], x.grad.tolist()
    t, n = both(run)
    assert n == t == ("RuntimeError", [3.0, 3.0])


def test_save_for_backward_rejects_non_tensors():
    def run(L):
        class Bad(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, 3)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g

        class BadFwd(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_forward(x, 1)
                return x * 2
        x = L.ones(2, requires_grad=True)
        return error_of(lambda: Bad.apply(x)), error_of(lambda: BadFwd.apply(x))
    t, n = both(run)
    assert n == t


def test_saved_tensors_are_version_checked():
    def run(L):
        class VC(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * x

        class VO(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                r = x.exp()
                ctx.save_for_backward(r)
                return r

            @staticmethod
            def backward(ctx, g):
                (r,) = ctx.saved_tensors
                return g * r
        leaf = L.ones(2, requires_grad=True)
        z = leaf * 1
        y = VC.apply(z)
        with L.no_grad():
            z.add_(1)
        e1 = error_of(lambda: y.sum().backward())
        y2 = VO.apply(leaf)
        with L.no_grad():
            y2.add_(1)
        e2 = error_of(lambda: y2.sum().backward())
        return e1, e2
    t, n = both(run)
    for (tt, tm), (nt, nm) in zip(t, n):
        assert nt == tt == "RuntimeError"
        # Identical up to the hints that follow (where to look for the modification).
        assert nm.split(" instead.")[0] == tm.split(" instead.")[0]
    assert "output 0 of VO," in n[1][1]


# ---------------------------------------------------------------------------- backward results
def run_backward_of(L, bwd, x=None, nargs=1):
    class W(L.autograd.Function):
        @staticmethod
        def forward(ctx, x, *rest):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return bwd(L, g)
    x = x if x is not None else L.ones(2, 3, requires_grad=True)
    extra = (2,) * (nargs - 1)
    err = error_of(lambda: W.apply(x, *extra).sum().backward())
    return err, None if x.grad is None else (list(x.grad.shape), str(x.grad.dtype).split(".")[1],
                                            x.grad.tolist())


@pytest.mark.parametrize("case", [
    ("too few", lambda L, g: g, 2),
    ("too many", lambda L, g: (g, g), 1),
    ("extra Nones", lambda L, g: (g, None, None), 1),
    ("grad for non-tensor", lambda L, g: (g, g), 2),
    ("not a tensor", lambda L, g: 3, 1),
    ("wrong shape", lambda L, g: L.ones(3), 1),
    ("broadcast shape is summed", lambda L, g: g.expand(2, 3).reshape(1, 2, 3), 1),
    ("None", lambda L, g: None, 1),
], ids=lambda c: c[0])
def test_backward_results_validated_like_torch(case):
    _, bwd, nargs = case
    t, n = both(lambda L: run_backward_of(L, bwd, nargs=nargs))
    assert n == t


def test_gradient_dtype_is_cast_to_the_input_dtype():
    def run(L):
        x = L.ones(2, dtype=L.float64, requires_grad=True)
        return run_backward_of(L, lambda L, g: g.float(), x=x)
    t, n = both(run)
    assert n == t and t[1][1] == "float64"


def test_missing_methods_and_legacy_use():
    def run(L):
        class NoBackward(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

        class NoForward(L.autograd.Function):
            pass

        class Both(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 1

            @staticmethod
            def vjp(ctx, g):
                return g * 5

            @staticmethod
            def backward(ctx, g):
                return g * 5

        class OnlyVjp(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 1

            @staticmethod
            def vjp(ctx, g):
                return g * 5
        x = L.ones(2, requires_grad=True)
        out = [error_of(lambda: NoBackward.apply(x).sum().backward()),
               error_of(lambda: NoForward.apply(x)),
               error_of(lambda: Both.apply(x).sum().backward()),
               error_of(lambda: L.autograd.Function.jvp(None, 1)),
               error_of(lambda: L.autograd.Function.setup_context(None, (), None))]
        OnlyVjp.apply(x).sum().backward()
        out.append(x.grad.tolist())
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            inst = OnlyVjp()
        out.append([(c.category.__name__, str(c.message).split("> ")[1]) for c in w])
        out.append(error_of(lambda: inst(x)))
        return out
    t, n = both(run)
    assert n == t


# ---------------------------------------------------------------------------- hooks
def test_hooks_retain_grad_and_retain_graph_on_function_nodes():
    def run(L):
        class Bo(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 1

            @staticmethod
            def backward(ctx, g):
                return g * 3
        x = L.ones(2, requires_grad=True)
        y = Bo.apply(x)
        calls = []
        y.grad_fn.register_prehook(lambda go: calls.append(("pre", go[0].tolist())))
        y.grad_fn.register_hook(
            lambda gi, go: calls.append(("post", gi[0].tolist(), go[0].tolist())))
        y.register_hook(lambda g: g * 2)
        y.retain_grad()
        (y * 3).sum().backward(retain_graph=True)
        (y * 3).sum().backward()
        h = y.grad_fn.register_hook(lambda gi, go: (gi[0] * 0,))
        z = Bo.apply(x)
        z.grad_fn.register_hook(lambda gi, go: (gi[0] * 10,))
        z.sum().backward()
        h.remove()
        return calls, y.grad.tolist(), x.grad.tolist()
    t, n = both(run)
    assert n == t


def test_engine_order_and_prehook_replacement_through_functions():
    def run(L):
        class Sq(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                Sq.log.append("Sq")
                return 2 * x * g
        Sq.log = []
        x = L.tensor([1.0, 2.0], requires_grad=True)
        a = Sq.apply(x)
        b = Sq.apply(a.sin())
        c = a + b
        c.grad_fn.register_prehook(lambda go: (go[0] * 2,))
        c.sum().backward()
        return Sq.log, [round(v, 10) for v in x.grad.tolist()]
    t, n = both(run)
    assert n == t


# ---------------------------------------------------------------------------- higher order
def test_double_backward_through_function_with_ndgrad_ops():
    def run(L):
        class Cube(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 3 * x ** 2 * g

        class ExpOut(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                r = x.exp()
                ctx.save_for_backward(r)
                return r

            @staticmethod
            def backward(ctx, g):
                (r,) = ctx.saved_tensors
                return g * r
        x = L.tensor([0.5, -1.5, 2.0], dtype=L.float64, requires_grad=True)
        (g1,) = L.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
        (g2,) = L.autograd.grad(g1.sum(), x, create_graph=True)
        (g3,) = L.autograd.grad(g2.sum(), x)
        (e1,) = L.autograd.grad(ExpOut.apply(x).sum(), x, create_graph=True)
        (e2,) = L.autograd.grad((e1 * x).sum(), x)
        return [vals(v) for v in (g1, g2, g3, e1, e2)] + [g1.grad_fn.name()]
    t, n = both(run)
    for a, b in zip(n[:-1], t[:-1]):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert n[-1] == t[-1]


def test_once_differentiable():
    def run(L):
        od = once(L)

        class Once(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 2

            @staticmethod
            @od
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                Once.grad_mode = L.is_grad_enabled()
                return 2 * x * g
        x = L.tensor([3.0], requires_grad=True)
        y = Once.apply(x)
        (gx,) = L.autograd.grad(y * y, x, create_graph=True)
        out = [gx.tolist(), gx.grad_fn.name(), repr(gx).split("grad_fn=")[1], Once.grad_mode,
               edge_names(gx.grad_fn), error_of(lambda: gx.backward())]
        (gx2,) = L.autograd.grad(Once.apply(x), x, create_graph=True)
        out += [gx2.tolist(), gx2.requires_grad, Once.backward.__name__]
        Once.apply(x).backward()
        out.append(x.grad.tolist())
        return out
    t, n = both(run)
    assert n == t
    assert "@once_differentiable" in t[5][1]


def test_gradcheck_of_a_custom_function():
    class Sinh(ndgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (x.exp() - (-x).exp()) / 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * (x.exp() + (-x).exp()) / 2
    from ndgrad.autograd.gradcheck import gradcheck, gradgradcheck
    x = ndgrad.tensor(np.linspace(-1, 1, 5), requires_grad=True)
    assert gradcheck(Sinh.apply, (x,))
    assert gradgradcheck(Sinh.apply, (x,))


# ---------------------------------------------------------------------------- forward AD slot
def test_jvp_slot_called_only_under_an_active_dual_level(monkeypatch):
    calls = []
    fake = types.ModuleType("ndgrad.autograd.forward_ad")
    fake._current_level = -1
    fake._function_jvp = lambda cls, ctx, inputs, outputs: calls.append(
        (cls.__name__, ctx.name(), len(inputs), [o.tolist() for o in outputs]))

    class FwOff:                     # forward runs with tangent propagation off
        def __init__(self, mode):
            calls.append(("fw grad", mode))

        def __exit__(self, *exc):
            calls.append("fw grad restored")
    fake._set_fwd_grad_enabled = FwOff
    monkeypatch.setitem(sys.modules, "ndgrad.autograd.forward_ad", fake)

    class Twice(ndgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_forward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2, None

        @staticmethod
        def jvp(ctx, tx, tk):
            return tx * 2
    x = ndgrad.ones(2, requires_grad=True)
    Twice.apply(x, 1)
    assert calls == []
    fake._current_level = 0
    y = Twice.apply(x, 1)
    assert calls == [("fw grad", False), "fw grad restored",
                     ("Twice", "TwiceBackward", 2, [[2.0, 2.0]])]
    # Released once jvp has run: keeping them would make an output -> node -> output cycle.
    assert y.grad_fn._saved_for_forward == ()
    assert Twice.jvp(None, ndgrad.ones(1), None).tolist() == [2.0]


def test_jvp_with_forward_ad_against_torch():
    import ndgrad.autograd.forward_ad as fa

    def run(L, fwAD):
        class Dbl(L.autograd.Function):
            @staticmethod
            def forward(ctx, x, k):
                x.mul_(2)
                ctx.mark_dirty(x)
                ctx.save_for_forward(x)
                return x, x * k

            @staticmethod
            def backward(ctx, g1, g2):
                return g1 * 2, None

            @staticmethod
            def jvp(ctx, tx, tk):
                tx.mul_(2)
                return tx, tx * 3
        with fwAD.dual_level():
            x = fwAD.make_dual(L.ones(2), L.tensor([1.0, 3.0]))
            y, z = Dbl.apply(x, 3.0)
            return (y is x, fwAD.unpack_dual(y).tangent.tolist(),
                    fwAD.unpack_dual(z).tangent.tolist())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)   # torch.jit, inside torch's fwAD
        import torch.autograd.forward_ad as tfw
        expected = run(torch, tfw)
    assert run(ndgrad, fa) == expected == (True, [2.0, 6.0], [6.0, 18.0])


def test_custom_function_node_repr_names_its_module():
    # torch's FooBackward is a Python class: its repr is the default, module-qualified one
    def make(m):
        class Twice(m.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2
        r = repr(Twice.apply(m.ones(1, requires_grad=True)).grad_fn)
        return r.split(" at 0x")[0].replace("ndgrad.", "torch.")
    assert make(ndgrad) == make(torch)
