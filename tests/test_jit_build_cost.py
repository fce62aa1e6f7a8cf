"""The shortcuts that keep the first call cheap (tracer.py Note [First-call cost]) give the
graphs and values of the long ways: the tracer's lookup of a known tensor without mapping it
again (views whose base is later written, views of a base that requires grad, a detached
tensor sharing its array), the array map's plain weak references (a dead array's id reused),
CSE's shortcut for flat argument tuples (typed: 2, 2.0 and True stay apart) and the node and
value construction of ``Graph.append_op`` and ``Graph.copy``."""

import gc

import numpy as np
import pytest
import torch

import ndgrad
from ndgrad.jit import ir, trace_graph
from ndgrad.jit.passes import (_args_key, _hashable, copy_eliminating_common_subexpressions,
                               eliminate_common_subexpression)
from ndgrad.jit.tracer import Tracer


@pytest.fixture(autouse=True)
def _seed():
    ndgrad.manual_seed(0)


def _kinds(g):
    return [n.kind() for n in g.nodes()]


# ---------------------------------------------------------------------------- known tensors
def test_a_view_read_again_after_its_base_was_written_is_replayed():
    # v is mapped on its first use; the write to its base must send the second use to the
    # replay, not to the value mapped before the write
    def f(x):
        b = x.clone()
        v = b[1:3]
        first = v * 2
        b.add_(1.0)
        return first, v * 3

    x = ndgrad.randn(4)
    cf = ndgrad.compile(f)
    cf(x)
    x2 = ndgrad.randn(4)
    got = cf(x2)
    want = f(x2)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a._data, b._data)
    np.testing.assert_allclose(got[1]._data, (x2._data[1:3] + 1) * 3, rtol=1e-6)


def test_a_view_of_a_base_that_requires_grad_requires_grad_in_the_graph():
    def f(x):
        v = x[0:2]               # the view's own flag is off; its base's is on
        return (v * v).sum() + (v * 3).sum()

    x = ndgrad.randn(5, requires_grad=True)
    r = trace_graph(f, (x,), check=False)
    assert r.graph.outputs()[0].requires_grad
    assert all(o.requires_grad for n in r.graph.nodes() for o in n.outputs()
               if o.dtype.kind == "f")
    cf = ndgrad.compile(f)
    cf(x)
    x2 = ndgrad.randn(5, requires_grad=True)
    cf(x2).backward()
    t = torch.tensor(x2._data, requires_grad=True)
    v = t[0:2]
    ((v * v).sum() + (v * 3).sum()).backward()
    np.testing.assert_allclose(x2.grad._data, t.grad.numpy(), rtol=1e-6)


def test_a_detached_tensor_sharing_the_array_gets_a_detach_node_each_time():
    def f(x):
        d = x.detach()           # same array as x, requires_grad off
        return (x * d).sum() + (d * 2).sum()

    x = ndgrad.randn(3, requires_grad=True)
    r = trace_graph(f, (x,), check=False)
    assert _kinds(r.graph).count("Detach") == 1
    cf = ndgrad.compile(f)
    cf(x)
    x2 = ndgrad.randn(3, requires_grad=True)
    cf(x2).backward()
    np.testing.assert_allclose(x2.grad._data, x2._data, rtol=1e-6)   # d/dx x*stop(x) = x


def test_an_array_id_reused_after_its_array_died_is_not_the_old_value():
    g = ir.Graph()
    tr = Tracer(g)
    x = ndgrad.ones(3)
    tr.bind(x, g.add_input((3,), np.float32))
    op = ndgrad.ops._dispatch.REGISTRY["neg"][0]
    out = tr.record(op, (x,), (x._data,), (), np.negative(x._data))
    assert tr.lookup_a(out) is g.nodes()[0].output()
    old_id = id(out)
    del out
    gc.collect()
    reused = None
    keep = []
    for _ in range(2000):          # CPython hands a freed id out again soon
        a = np.empty(3, np.float32)
        if id(a) == old_id:
            reused = a
            break
        keep.append(a)
    for a in keep + ([reused] if reused is not None else []):
        assert tr.lookup_a(a) is None
    assert old_id in tr.amap       # the dead entry stays (no callback) and is recognized as dead


# ---------------------------------------------------------------------------- CSE keys
@pytest.mark.parametrize("args", [(1, 2, (3, 4)), (None, "x", True), ((),), (1, (1, 2.0)),
                                  (1.5,), (float("nan"),), (0, False), ((0,), (False,))])
def test_cse_argument_keys_keep_types_apart(args):
    key = _args_key(args)
    hash(key)
    if all(type(a) in (int, bool, str, type(None)) for a in args):
        assert key == _hashable(args)
    others = [(1, 2, (3, 4.0)), (True, 2, (3, 4)), (1.0,), (0.0, False), ((0,), (0,))]
    for o in others:
        if o != args or any(type(p) is not type(q) for p, q in zip(o, args)):
            assert _args_key(o) != key


def test_cse_argument_keys_look_inside_nested_tuples():
    assert _args_key(((0,), (False,))) != _args_key(((0,), (0,)))
    assert _args_key(((1, 2),)) == _args_key(((1, 2),))
    assert _args_key(((1, 2),)) != _args_key(((1, 2.0),))


def test_cse_merges_equal_integer_arguments_and_keeps_other_types_apart():
    def f(x):
        return (x.sum(dim=(0,)), x.sum(dim=(0,)), x.pow(2), x.pow(2.0), x.pow(2))

    g = trace_graph(f, (ndgrad.randn(3, 2),), check=False).graph
    assert _kinds(g).count("sum") == 2 and _kinds(g).count("pow") == 3
    eliminate_common_subexpression(g)
    g.lint()
    assert _kinds(g).count("sum") == 1
    assert _kinds(g).count("pow") == 2          # pow(2) twice is one node; pow(2.0) stays


def test_cse_keeps_a_negative_zero_argument_apart_from_zero():
    for args in [(0.0,), (-0.0,), (np.float64(-0.0),)]:
        assert (_args_key(args) == _args_key((0.0,))) == (np.signbit(args[0]) == 0)
    f = ndgrad.compile(lambda x: (x * 0.0, x * -0.0, x * 0.0))
    x, xt = ndgrad.tensor([1.0, -2.0]), torch.tensor([1.0, -2.0])
    for _ in range(2):                   # the traced call, then the generated code
        for got, ref in zip(f(x), (xt * 0.0, xt * -0.0, xt * 0.0)):
            np.testing.assert_array_equal(np.signbit(got.numpy()), np.signbit(ref.numpy()))
    assert f.code.count("_np_multiply") == 2       # the two x * 0.0 are still one


# ---------------------------------------------------------------------------- construction
def test_append_op_and_copy_build_what_the_constructors_build():
    x = ndgrad.randn(2, 3, requires_grad=True)
    r = trace_graph(lambda x: (x.exp() * 2).sum(dim=1), (x,), check=False)
    g = r.graph
    g.lint()
    c = g.copy()
    c.lint()
    assert str(c) == str(g)
    for n, m in zip(g.nodes(), c.nodes()):
        assert m is not n and m.op is n.op and m.args == n.args
        for o, p in zip(n.outputs(), m.outputs()):
            assert (p.shape, p.dtype, p.requires_grad) == (o.shape, o.dtype, o.requires_grad)
            assert type(p.shape) is tuple and isinstance(p.dtype, np.dtype)
            assert p.node() is m and p is not o
    # a copy is independent: editing it leaves the original as it was
    before = str(g)
    eliminate_common_subexpression(c)
    c.nodes()[-1].output().replace_all_uses_with(c.nodes()[0].output())
    assert str(g) == before


def _hessian_rows(x, A):
    return ndgrad.autograd.functional.hessian(lambda x: (A @ x).tanh().sum(), x)


@pytest.mark.parametrize("fn, shapes", [
    (lambda x, y: (x.exp() + x.exp(), x * 2, x * 2.0, (x * 2).sum(), y.sum() + y.sum()),
     [(3,), (2, 2)]),
    (lambda x, y: (x + ndgrad.ones(3), x + ndgrad.ones(3), x * ndgrad.tensor(2.0)),
     [(3,), (1,)]),
    (_hessian_rows, [(6,), (6, 6)]),
])
def test_copy_with_cse_is_copy_then_cse(fn, shapes):
    ins = tuple(ndgrad.randn(*s, dtype=ndgrad.float64) for s in shapes)
    g = trace_graph(fn, ins, check=False).graph
    before = str(g)
    want = g.copy()
    eliminate_common_subexpression(want)
    got = copy_eliminating_common_subexpressions(g)
    got.lint()
    assert str(got) == str(want)
    assert str(g) == before                     # the source graph is untouched
    assert len(got.nodes()) < len(g.nodes())    # something was merged


def test_copy_with_cse_keeps_a_twin_of_another_type():
    # same op, inputs and arguments, but one output requires grad and the other not: two nodes
    def f(x):
        a = x * 2
        with ndgrad.no_grad():
            b = x * 2
        return a, b

    g = trace_graph(f, (ndgrad.randn(3, requires_grad=True),), check=False).graph
    got = copy_eliminating_common_subexpressions(g)
    want = g.copy()
    eliminate_common_subexpression(want)
    assert str(got) == str(want) and _kinds(got).count("mul") == 2


# ---------------------------------------------------------------------------- source lines
_HOOK_LINE = "register_hook(lambda g: g * 2)"
_GRAD_LINE = "autograd.grad(z, [x], create_graph=True)"


def _hooked(x):
    y = x.sin()
    y.register_hook(lambda g: g * 2)
    z = (y * y).sum()
    return ndgrad.autograd.grad(z, [x], create_graph=True)[0]


def _hessian(x):
    return ndgrad.autograd.functional.hessian(lambda v: (v.tanh() * v).sum(), x)


def _line_of(text):
    import inspect
    src, first = inspect.getsourcelines(_hooked)
    return f"test_jit_build_cost.py:{first + next(i for i, s in enumerate(src) if text in s)}"


def _sources(g):
    return [(n.kind(), n.source) for n in g.nodes()]


@pytest.mark.parametrize("fn", [_hooked, _hessian])
def test_backward_ops_get_the_long_walks_source_lines(fn, monkeypatch):
    # Note [One source line per backward pass]: the walk that stops at the engine's
    # OpNode.apply gives every node the line the full walk gives
    from ndgrad.jit import tracer
    x = ndgrad.randn(3, dtype=ndgrad.float64, requires_grad=True)
    short = _sources(trace_graph(fn, (x,), check=False).graph)
    monkeypatch.setattr(tracer, "_OPNODE_APPLY", None)          # never stop: the long walk
    assert short == _sources(trace_graph(fn, (x,), check=False).graph)


def test_ops_of_a_hook_name_the_hook_and_rule_ops_the_backward_call():
    import ndgrad.autograd.api as ag_api
    orig = ag_api.run_backward
    g = trace_graph(_hooked, (ndgrad.randn(3, requires_grad=True),), check=False).graph
    by_kind = {}
    for n in g.nodes():
        by_kind.setdefault(n.kind(), n.source)
    assert by_kind["mul"] == _line_of(_GRAD_LINE)       # the rule of y * y
    assert by_kind["cos"] == _line_of(_GRAD_LINE)       # sin's rule
    hooked = [n for n in g.nodes() if n.kind() == "mul" and n.args == (2,)]
    assert [n.source for n in hooked] == [_line_of(_HOOK_LINE)]
    assert ag_api.run_backward is orig                  # the wrapper is gone after the trace


def test_concurrent_traces_keep_their_own_backward_lines():
    import threading
    results, errors = {}, []

    # the inputs are drawn before the threads start: a draw from the default generator in one
    # thread while another traces is refused by that trace (Tracer.check_rng cannot tell
    # threads apart)
    xs = {nm: ndgrad.randn(3, dtype=ndgrad.float64, requires_grad=True) for nm in "abc"}

    def work(name, fn):
        try:
            x = xs[name]
            for _ in range(3):
                results.setdefault(name, []).append(
                    _sources(trace_graph(fn, (x,), check=False).graph))
        except Exception as e:   # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(nm, fn))
               for nm, fn in (("a", _hooked), ("b", _hessian), ("c", _hooked))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    x = ndgrad.randn(3, dtype=ndgrad.float64, requires_grad=True)
    want = {"a": _sources(trace_graph(_hooked, (x,), check=False).graph),
            "b": _sources(trace_graph(_hessian, (x,), check=False).graph)}
    want["c"] = want["a"]
    for name, runs in results.items():
        assert all(r == want[name] for r in runs), name


# ---------------------------------------------------------------------------- dead nodes
def test_removed_nodes_die_by_reference_counting():
    # Note [Dead nodes die by reference counting] (ir.py): CSE's and DCE's removed nodes are
    # freed without the cyclic collector; the graph that remains is unchanged and lints
    import weakref

    from ndgrad.jit.passes import eliminate_dead_code

    def f(x):
        unused = x.exp() * 3             # dead: removed by DCE
        del unused
        return (x.sin() + x.sin()).cos()

    was = gc.isenabled()
    gc.disable()
    try:
        g = trace_graph(f, (ndgrad.randn(3),), check=False).graph
        g2 = g.copy()
        sins = [weakref.ref(n) for n in g2.nodes() if n.kind() == "sin"]
        eliminate_common_subexpression(g2)
        assert [w() is None for w in sins] == [False, True]
        g3 = ir.Graph()
        x = g3.add_input((3,), np.dtype(np.float32), False)
        dead = g3.insert_op(ndgrad.ops.pointwise.EXP, [x], (), [((3,), np.dtype(np.float32),
                                                                False)])
        live = g3.insert_op(ndgrad.ops.pointwise.SIN, [x], (), [((3,), np.dtype(np.float32),
                                                                False)])
        g3.register_output(live.output())
        w = weakref.ref(dead)
        del dead
        eliminate_dead_code(g3.block())
        assert w() is None
        assert [n.kind() for n in g3.nodes()] == ["sin"]
        g2.lint()
        g3.lint()
    finally:
        if was:
            gc.enable()
    xs = ndgrad.randn(3)
    np.testing.assert_allclose(ndgrad.compile(f)(xs)._data, f(xs)._data, rtol=1e-6)


def _views_written(x):
    b = x.clone()
    v = b[1:3]
    first = v * 2                        # v unmapped: its base not written yet
    b.add_(1.0)
    w = b[0]
    return first, v * 3, w.t() * 2, b.t() @ b


def _views_of_inputs(x, y):
    return (x.t() @ y).sum(), x.t().t() * 2, x[0].unsqueeze(0) + x.view(-1)[:3].sum()


def _views_in_backward(x):
    h = x.tanh()
    g = ndgrad.autograd.grad(h.sum(), [x], create_graph=True)[0]
    return ndgrad.autograd.grad((g.t() * g).sum(), [x])[0]


@pytest.mark.parametrize("fn, shapes, rg", [
    (_views_written, [(4, 3)], False), (_views_of_inputs, [(3, 3), (3, 2)], False),
    (_views_in_backward, [(3, 3)], True), (_hessian, [(4,)], True)])
def test_fast_lookup_gives_the_long_ways_graph(fn, shapes, rg, monkeypatch):
    # _fast_value (views of an op's array whose base was never written included) against
    # value_of for every tensor
    args = tuple(ndgrad.randn(*s, dtype=ndgrad.float64, requires_grad=rg) for s in shapes)
    short = str(trace_graph(fn, args, check=False).graph)
    monkeypatch.setattr(Tracer, "_fast_value", lambda self, t: None)
    assert short == str(trace_graph(fn, args, check=False).graph)
    got, want = ndgrad.compile(fn)(*args), fn(*args)
    for a, b in zip(*(w if isinstance(w, tuple) else (w,) for w in (got, want))):
        np.testing.assert_allclose(a._data, b._data, rtol=1e-12, atol=1e-12)
