"""ndgrad.fx against torch.fx: the same programs traced by both, compared through the graph
text, generated code, node ops/targets and outputs; graph editing, Interpreter/Transformer,
ShapeProp, replace_pattern, wrap, concrete_args and the tracing errors."""

from __future__ import annotations

import copy
import math
import operator
import pickle
from math import sqrt

import pytest
import torch
import torch.fx

import ndgrad
import ndgrad.fx


def _wrapped_helper(x, y):
    return x * y if y is not None else x


torch.fx.wrap("_wrapped_helper")
ndgrad.fx.wrap("_wrapped_helper")

LIBS = {"torch": torch, "ndgrad": ndgrad}


def same(fn):
    """``fn(lib)`` returns text (or something printable) under each library; they agree."""
    t = str(fn(torch))
    n = str(fn(ndgrad)).replace("ndgrad.", "torch.")
    assert n == t, f"\n--- torch:\n{t}\n--- ndgrad:\n{n}"
    return t


def _model(lib):
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(2, 3, 3, padding=1)
            self.bn = nn.BatchNorm2d(3)

        def forward(self, x):
            return F.relu(self.bn(self.conv(x)))

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()
            self.seq = nn.Sequential(nn.Flatten(), nn.Linear(48, 4), nn.Tanh())
            self.scale = nn.Parameter(lib.ones(4))
            self.register_buffer("shift", lib.zeros(4))

        def forward(self, x, y=None, *, k: int = 2):
            h = self.seq(self.block(x)) * self.scale + self.shift
            h = lib.cat([h, -h], dim=1).view(x.size(0), 2, -1).sum(1)
            out = h.softmax(dim=-1) @ self.scale.unsqueeze(1)
            return out.squeeze(1), h[:, :2], h.shape[0] + k

    lib.manual_seed(0)
    return M()


def test_trace_text_code_and_values_like_torch():
    same(lambda lib: lib.fx.symbolic_trace(_model(lib)).graph)
    same(lambda lib: lib.fx.symbolic_trace(_model(lib)).code)
    same(lambda lib: [(n.op, n.name, n.target if isinstance(n.target, str) else "fn",
                       len(n.users), [str(a) for a in n.all_input_nodes])
                      for n in lib.fx.symbolic_trace(_model(lib)).graph.nodes])
    same(lambda lib: lib.fx.symbolic_trace(_model(lib)).print_readable(print_output=False))
    same(lambda lib: str(lib.fx.symbolic_trace(_model(lib))))
    same(lambda lib: sorted(lib.fx.symbolic_trace(_model(lib)).state_dict()))
    x = torch.randn(2, 2, 4, 4)
    for training in (True, False):
        outs = {}
        for name, lib in LIBS.items():
            m = _model(lib).train(training)
            gm = lib.fx.symbolic_trace(m)
            xi = lib.tensor(x.numpy(), requires_grad=True)
            a, b, c = gm(xi)
            (a.sum() + b.sum()).backward()
            ref = m(lib.tensor(x.numpy()))
            assert ndgrad.allclose(ndgrad.tensor(a.detach().numpy()),
                                   ndgrad.tensor(ref[0].detach().numpy()), atol=1e-6)
            outs[name] = (a.detach().numpy(), xi.grad.numpy(),
                          gm.block.conv.weight.grad.numpy(), c)
            assert gm.block.conv.weight is m.block.conv.weight   # shared parameters
        for u, v in zip(outs["torch"], outs["ndgrad"]):
            assert ndgrad.allclose(ndgrad.tensor(u), ndgrad.tensor(v), atol=1e-5) \
                if not isinstance(u, int) else u == v


def test_graph_built_by_hand_and_edited_like_torch():
    def build(lib):
        g = lib.fx.Graph()
        x = g.placeholder("x")
        w = g.placeholder("w", default_value=2.0)
        a = g.call_function(operator.mul, (x, w))
        b = g.call_method("clamp", (a,), {"min": 0.0})
        c = g.call_function(lib.relu, (b,))
        dead = g.call_function(operator.neg, (c,))
        out = g.output((c, [b, {"k": a}]))
        lines = [str(g)]
        with g.inserting_after(b):
            s = g.call_function(lib.sigmoid, (b,))
        lines.append(str(b.replace_all_uses_with(s, delete_user_cb=lambda u: u is not s)))
        with g.inserting_before(out):
            g.call_method("add", (s, 1))
        lines.append(str([n.name for n in x.next.next.users]))
        lines.append(str(g.eliminate_dead_code()))
        lines.append(str(g))
        lines.append(str((dead.graph is g, len(g.nodes), [n.op for n in reversed(g.nodes)])))
        c.args = (a,)
        lines.append(str((list(a.users), list(b.users), c.all_input_nodes)))
        g.lint()
        gm = lib.fx.GraphModule(lib.nn.Module(), g)
        lines.append(gm.code)
        lines.append(str(gm(lib.tensor([-1.0, 3.0]))))
        g2 = lib.fx.Graph()
        env = {}
        rv = g2.graph_copy(g, env)
        g2.output(rv)
        lines.append(str(g2))
        return "\n".join(lines)
    same(build)


def test_graph_errors_like_torch():
    def errors(lib):
        out = []
        g = lib.fx.Graph()
        x = g.placeholder("x")
        y = g.call_function(operator.neg, (x,))
        g.output(y)
        for f in (lambda: g.erase_node(x),
                  lambda: y.prepend(y.next),
                  lambda: g.create_node("call_function", "neg", (x,))):
            try:
                f()
            except Exception as e:
                out.append(type(e).__name__ + ": " + str(e).split("\n")[0])
        g2 = lib.fx.Graph()
        a = g2.placeholder("a")
        b = g2.call_function(operator.neg, (a,))
        c = g2.call_function(operator.neg, (b,))
        c.append(b)         # b now after its user c
        try:
            g2.lint()
        except RuntimeError as e:
            out.append(str(e).split("\n")[0])
        return out
    same(errors)


def test_tracing_errors_like_torch():
    def control(x):
        if x.sum() > 0:
            return x
        return -x

    def loop(x):
        return [r for r in x]

    def length(x):
        return len(x)

    def to_int(x):
        return int(x)

    def errs(lib):
        out = []
        for f in (control, loop, length, to_int):
            with pytest.raises(Exception) as info:
                lib.fx.symbolic_trace(f)
            out.append(f"{type(info.value).__name__}: {info.value}")
        return out
    text = same(errs)
    assert "TraceError: symbolically traced variables cannot be used as inputs to control " \
           "flow" in text
    assert issubclass(ndgrad.fx.TraceError, ValueError)


def test_unpacking_getattr_methods_and_constants_like_torch():
    def f(lib):
        def fn(x, *rest):
            a, b = x
            n = x.shape[1] + x.size(0) + x.dim()
            c = lib.ones(3) + a                       # a tensor constant
            d = lib.max(x, dim=0).values + lib.max(x, 1)[0].sum()
            return a * b + n, c.float(), d.to(lib.float64), x[0, 1:, None], rest
        gm = lib.fx.symbolic_trace(fn)
        r = gm(lib.arange(6.0).reshape(2, 3))
        return "\n".join([str(gm.graph), gm.code, str(r),
                          str(sorted(dict(gm.named_buffers())))])
    same(f)


def test_leaf_modules_custom_tracer_and_module_paths():
    def f(lib):
        nn = lib.nn

        class Inner(nn.Module):
            def forward(self, x):
                return x.relu() + 1

        class Outer(nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = Inner()
                self.layers = nn.ModuleList([nn.Linear(2, 2), nn.ReLU()])

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return self.inner(x)

        class KeepInner(lib.fx.Tracer):
            def is_leaf_module(self, m, qualname):
                return isinstance(m, Inner) or super().is_leaf_module(m, qualname)

        m = Outer()
        g1 = lib.fx.Tracer().trace(m)
        g2 = KeepInner().trace(m)
        return f"{g1}\n{g2}\n{lib.fx.GraphModule(m, g2).code}"
    same(f)


def test_concrete_args_and_wrap_like_torch():
    def f(lib):
        def fn(x, flag, scale=None):
            if scale is None:
                scale = 3
            return _wrapped_helper(x, x) * scale if flag else x

        gm = lib.fx.symbolic_trace(fn, concrete_args={"flag": True, "scale": None})
        out = [str(gm.graph), gm.code, str(gm(lib.tensor([2.0]), True))]
        try:
            gm(lib.tensor([2.0]), False)
        except AssertionError as e:
            out.append(f"AssertionError: {e}")
        return "\n".join(out)
    same(f)


def test_interpreter_and_transformer_like_torch():
    def f(lib):
        def fn(x):
            return lib.sigmoid(x).neg() + lib.add(x, 2)

        gm = lib.fx.symbolic_trace(fn)

        class Swap(lib.fx.Interpreter):
            def call_function(self, target, args, kwargs):
                if target is lib.sigmoid:
                    return lib.tanh(*args)
                return super().call_function(target, args, kwargs)

            def call_method(self, target, args, kwargs):
                if target == "neg":
                    return args[0] * 10
                return super().call_method(target, args, kwargs)

        class SwapX(lib.fx.Transformer):
            def call_function(self, target, args, kwargs):
                if target is lib.add:
                    return lib.sub(*args, **kwargs)
                return super().call_function(target, args, kwargs)

        x = lib.tensor([0.5, -1.0])
        interp = Swap(gm)
        out = [str(interp.run(x)), str(len(interp.env)),
               str(lib.fx.Interpreter(gm, garbage_collect_values=False).run(x)),
               str(len(gm.graph.nodes))]
        t = SwapX(gm).transform()
        out += [t.code, str(t(x)), type(t).__name__]
        try:
            lib.fx.Interpreter(gm).run()
        except RuntimeError as e:
            out.append(str(e).split("\n")[0])
        g = lib.fx.Graph()
        g.output(g.get_attr("missing"))
        try:
            lib.fx.Interpreter(lib.fx.GraphModule({"missing": lib.ones(1)}, g)).fetch_attr(
                "nope.x")
        except RuntimeError as e:
            out.append(str(e))
        return "\n".join(out)
    same(f)


def test_shape_prop_like_torch():
    from torch.fx.passes.shape_prop import ShapeProp as TSP

    from ndgrad.fx.passes.shape_prop import ShapeProp as NSP

    def f(lib, sp):
        m = lib.nn.Sequential(lib.nn.Conv2d(2, 2, 3), lib.nn.ReLU(), lib.nn.Flatten())
        gm = lib.fx.symbolic_trace(m)
        sp(gm).propagate(lib.ones(2, 2, 5, 5))
        rows = []
        for n in gm.graph.nodes:
            tm = n.meta["tensor_meta"]
            rows.append((n.name, tuple(tm.shape), str(tm.dtype), tm.stride, tm.requires_grad,
                         str(tm.memory_format), tm.is_quantized, n.meta["type"].__name__))
        return "\n".join(map(str, rows)) + "\n" + gm.print_readable(print_output=False)
    t = f(torch, TSP)
    n = f(ndgrad, NSP).replace("ndgrad.", "torch.")
    assert n == t


def test_replace_pattern_like_torch():
    def f(lib):
        def fn(x, w1, w2):
            m1 = lib.cat([w1, w2]).sum()
            m2 = lib.cat([w1, w2]).sum()
            return x + lib.max(m1) + lib.max(m2) + lib.cat([w2, w1]).sum()

        def pattern(a, b):
            return lib.cat([a, b]).sum()

        def replacement(a, b):
            return lib.stack([a, b]).sum() * 2

        gm = lib.fx.symbolic_trace(fn)
        ms = lib.fx.replace_pattern(gm, pattern, replacement)
        return "\n".join([str(len(ms)), str([m.anchor.name for m in ms]),
                          str(sorted(str(k) for k in ms[0].nodes_map)), gm.code,
                          str(gm(lib.zeros(2), lib.ones(2), lib.ones(2) * 2))])
    same(f)


def test_graph_module_copy_pickle_and_submodule_edits():
    m = _model(ndgrad)
    gm = ndgrad.fx.symbolic_trace(m)
    x = ndgrad.randn(2, 2, 4, 4)
    ref = gm(x)[0]
    for other in (copy.deepcopy(gm), pickle.loads(pickle.dumps(gm))):
        assert type(other).__name__ == "M" and other.code == gm.code
        assert ndgrad.allclose(other(x)[0], ref)
        assert other.block.conv.weight is not gm.block.conv.weight
    tgm = torch.fx.symbolic_trace(_model(torch))
    for g in (gm, tgm):
        assert g.delete_submodule("seq.1") and not g.delete_submodule("seq.9")
        assert g.add_submodule("extra.lin", type(g.seq)())
        assert [n for n, _ in g.named_modules()][-2:] == ["extra", "extra.lin"]
    with pytest.raises(RuntimeError, match="target seq.1 references nonexistent attribute 1"):
        gm.graph.lint()
    gm.delete_all_unused_submodules()
    assert not hasattr(gm, "extra")


def test_proxy_api():
    g = ndgrad.fx.Graph()
    p = ndgrad.fx.Proxy(g.placeholder("x"))
    q = (p + 1).relu()
    assert repr(q) == "Proxy(relu)" and q.node.op == "call_method"
    assert [n.op for n in g.nodes] == ["placeholder", "call_function", "call_method"]
    assert ndgrad.fx.map_arg((p.node, [1]), lambda n: n.name) == ("x", [1])


def test_math_functions_are_autowrapped_like_torch():
    def f(lib):
        def fn(x):
            return x * math.sqrt(x.size(0)) + math.floor(x.shape[1]) / sqrt(4)
        gm = lib.fx.symbolic_trace(fn)
        return f"{gm.graph}\n{gm.code}\n{gm(lib.ones(4, 3))}"
    same(f)
    assert math.sqrt(4.0) == 2.0 and sqrt is math.sqrt     # restored after tracing


def test_sizes_factories_and_layers_like_torch():
    def f(lib):
        nn, F = lib.nn, lib.nn.functional

        class Q(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(lib.ones(4, 4))
                self.emb = nn.Embedding(10, 4)
                self.attn = nn.MultiheadAttention(4, 2, batch_first=True)

            def forward(self, x, idx):
                z = lib.zeros(x.shape) + x.new_zeros(x.size()) + lib.ones(x.size())
                r = lib.arange(x.size(0))
                y = lib.where(x > 0, x, lib.zeros_like(x)).masked_fill(x < -1, 0.5)
                v, i = x.max(1)
                y = y @ self.w.T + F.dropout(x, 0.2, training=self.training)
                e = self.emb(idx)
                a, _ = self.attn(e, e, e)
                y = y.type_as(x).expand_as(x) + z
                y += 1
                return y, a.sum(), v, i, r, x.size()[1:]

        lib.manual_seed(0)
        gm = lib.fx.symbolic_trace(Q().eval())
        out = gm(lib.linspace(-2, 2, 12).reshape(3, 4), lib.tensor([[1, 2], [3, 4], [5, 6]]))
        return f"{gm.graph}\n{gm.code}\n{[tuple(o.shape) for o in out[:5]]}\n{out[5]}\n" \
               f"{out[0]}"
    same(f)

    def two_sizes(lib):          # a Proxy among several sizes: torch's parser refuses
        with pytest.raises(TypeError):
            lib.fx.symbolic_trace(lambda x: lib.ones(x.size(0), 4))
    two_sizes(torch)
    two_sizes(ndgrad)


def test_inplace_operator_and_constants_in_code_like_torch():
    def f(lib):
        g = lib.fx.Graph()
        x = g.placeholder("x")
        a = g.call_function(operator.iadd, (x, 1))
        b = g.call_method("to", (a, lib.float64))
        c = g.call_function(operator.getitem, (b, (slice(None), None, ...)))
        g.output([c, float("inf"), lib.float64])
        gm = lib.fx.GraphModule(lib.nn.Module(), g)
        return f"{g}\n{gm.code}\n{gm(lib.ones(2))}"
    same(f)
