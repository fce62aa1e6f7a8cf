"""The profiler against PyTorch's ``torch.autograd.profiler``: per-op and per-node events with
counts and times, ``record_function`` ranges that nest, ``key_averages().table()``, shapes,
stacks and the Chrome trace; and that it records nothing (and costs one flag) when off."""

import json
import threading

import numpy as np
import pytest
import torch

import ndgrad
from ndgrad.autograd import profiler
from ndgrad.ops import _dispatch
from _compare import both

LIBS = (torch, ndgrad)
OP_PREFIX = {torch: "aten::", ndgrad: "ndgrad::"}


def profile_step(L, **kw):
    P = L.autograd.profiler
    x = L.ones(4, 3, requires_grad=True)
    with P.profile(**kw) as prof:
        with P.record_function("outer"):
            y = (x * 2).sin()
            with P.record_function("inner"):
                z = y.sum()
        z.backward()
    return prof


def counts(prof):
    return {e.key: e.count for e in prof.key_averages()}


# ---------------------------------------------------------------------------- events
def test_backward_node_events_and_forward_op_counts_match_torch():
    def run(L):
        c = counts(profile_step(L))
        p = OP_PREFIX[L]
        nodes = {k: v for k, v in c.items() if k.startswith("autograd::engine::")}
        inner = {k: c[k] for k in ("SumBackward0", "SinBackward0", "MulBackward0",
                                   "torch::autograd::AccumulateGrad")}
        return nodes, inner, c[p + "sin"], c[p + "cos"], c["outer"], c["inner"]
    t, n = both(run)
    assert n == t
    assert t[0]["autograd::engine::evaluate_function: MulBackward0"] == 1


def test_forward_op_names_and_counts():
    x = ndgrad.ones(5, requires_grad=True)
    with profiler.profile() as prof:
        y = x
        for _ in range(7):
            y = y * 1.5 + 1
    c = counts(prof)
    assert c == {"ndgrad::mul": 7, "ndgrad::add": 7}


def test_record_function_ranges_nest_and_times_are_consistent():
    def run(L):
        evs = profile_step(L).function_events
        by = {e.name: e for e in evs}
        outer, inner = by["outer"], by["inner"]
        p = OP_PREFIX[L]
        return [inner.cpu_parent.name, outer.cpu_parent is None,
                by[p + "sin"].cpu_parent.name,
                [c.name for c in outer.cpu_children if not c.name.startswith("aten::to")],
                by["SinBackward0"].cpu_parent.name]
    t, n = both(run)
    assert n[:3] == t[:3] and n[4] == t[4]
    assert n[3] == ["ndgrad::mul", "ndgrad::sin", "inner"]
    prof = profile_step(ndgrad)
    for e in prof.function_events:
        assert 0 <= e.self_cpu_time_total <= e.cpu_time_total
        for c in e.cpu_children:
            assert e.time_range[0] <= c.time_range[0] <= c.time_range[1] <= e.time_range[1]
            assert c.thread == e.thread
    top = [e for e in prof.function_events if e.cpu_parent is None]
    total = sum(e.cpu_time_total for e in top)
    assert prof.self_cpu_time_total == pytest.approx(total, rel=1e-9)


def test_record_function_as_decorator_and_without_profiler():
    def run(L):
        P = L.autograd.profiler
        calls = []

        @P.record_function("deco")
        def f(x):
            calls.append(1)
            return x * 2
        with P.record_function("nothing recording"):
            f(L.ones(2))
        with P.profile() as prof:
            with P.record_function("outer"):
                f(L.ones(2))
            f(L.ones(2))
        evs = [e for e in prof.function_events if e.name in ("outer", "deco")]
        return (calls, [e.name for e in evs], [e.cpu_parent and e.cpu_parent.name for e in evs],
                f.__name__)
    t, n = both(run)
    assert n == t


def test_recursive_record_function_ranges_nest():
    @profiler.record_function("rec")
    def f(n):
        return f(n - 1) if n else 0
    with profiler.profile() as prof:
        f(2)
    evs = prof.function_events
    assert [e.name for e in evs] == ["rec"] * 3
    assert [e.cpu_parent and e.cpu_parent.id for e in evs] == [None, evs[0].id, evs[1].id]


def test_record_shapes():
    def run(L):
        prof = profile_step(L, record_shapes=True)
        p = OP_PREFIX[L]
        by = {}
        for e in prof.function_events:
            by.setdefault(e.name, e.input_shapes)
        avgs = prof.key_averages(group_by_input_shape=True)
        muls = sorted(str(e.input_shapes) for e in avgs if e.key == p + "mul")
        return by[p + "mul"], by[p + "sin"], by["SinBackward0"], by["outer"], muls
    t, n = both(run)
    assert n == t


def test_with_stack_records_the_calling_line():
    x = ndgrad.ones(2)
    with profiler.profile(with_stack=True) as prof:
        x * 2  # the mul
    (ev,) = prof.function_events
    assert ev.stack and "test_profiler.py(" in ev.stack[0]
    assert ev.stack[0].endswith("test_with_stack_records_the_calling_line")
    assert all("/ndgrad/" not in s for s in ev.stack)
    with profiler.profile() as prof:
        x * 2
    assert prof.function_events[0].stack == []


def test_custom_function_event():
    class Twice(ndgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2
    x = ndgrad.ones(2, requires_grad=True)
    with profiler.profile() as prof:
        Twice.apply(x).sum().backward()
    first_mul = next(e for e in prof.function_events if e.name == "ndgrad::mul")
    assert first_mul.cpu_parent.name == "Twice"
    names = {e.name for e in prof.function_events}
    assert {"autograd::engine::evaluate_function: TwiceBackward", "TwiceBackward"} <= names
    assert x.grad.tolist() == [2.0, 2.0]


# ---------------------------------------------------------------------------- summaries
def test_table_layout_sorting_and_row_limit():
    def run(L):
        prof = profile_step(L)
        table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=4)
        lines = table.splitlines()
        header = lines[1].split("  ")
        header = [h.strip() for h in header if h.strip()]
        return header, len(lines), lines[-1].split(":")[0] if lines[-1] else lines[-2][:20]
    t, n = both(run)
    assert n == t
    prof = profile_step(ndgrad)
    avgs = prof.key_averages()
    for key in ("cpu_time_total", "self_cpu_time_total", "count", "cpu_time"):
        table = avgs.table(sort_by=key, row_limit=100)
        rows = table.splitlines()[3:3 + len(avgs)]
        names = [r[:55].strip() for r in rows]
        expect = sorted(avgs, key=lambda e: getattr(e, key), reverse=True)
        assert names == [e.key if len(e.key) <= 55 else e.key[:52] + "..." for e in expect]
    assert "Self CPU time total:" in str(prof)
    with pytest.raises(AttributeError):
        avgs.table(sort_by="no_such_column")
    for e in avgs:
        assert e.cpu_time == pytest.approx(e.cpu_time_total / e.count)


def test_chrome_trace(tmp_path):
    prof = profile_step(ndgrad, record_shapes=True)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    data = json.loads(path.read_text())
    xs = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert len(xs) == len(prof.function_events)
    for e in xs:
        assert {"name", "ts", "dur", "pid", "tid", "cat"} <= set(e)
        assert e["dur"] >= 0 and isinstance(e["ts"], float)
    by = {e["name"]: e for e in xs}
    outer, inner = by["outer"], by["inner"]
    assert outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"]
    assert by["ndgrad::sin"]["args"]["Input Dims"] == [[4, 3]]
    assert outer["cat"] == "user_annotation" and by["ndgrad::sin"]["cat"] == "cpu_op"
    assert any(e["ph"] == "M" and e["name"] == "process_name" for e in data["traceEvents"])


# ---------------------------------------------------------------------------- on / off
def test_disabled_and_unfinished_profilers():
    x = ndgrad.ones(2, requires_grad=True)
    with profiler.profile(enabled=False) as prof:
        x * 2
    assert len(prof.key_averages()) == 0 and _dispatch._PROFILING is False
    p = profiler.profile()
    with pytest.raises(RuntimeError, match="didn't finish"):
        p.key_averages()
    with p:
        assert _dispatch._PROFILING is True
        with pytest.raises(RuntimeError, match="already enabled"):
            with profiler.profile():
                pass
    assert _dispatch._PROFILING is False
    with pytest.raises(RuntimeError, match="cpu"):
        profiler.profile(use_cuda=True)


def test_profiler_is_thread_local():
    x = ndgrad.ones(3, requires_grad=True)
    started, done = threading.Event(), threading.Event()
    seen = {}

    def other():
        with profiler.profile() as prof:
            started.set()
            done.wait(10)
            (x * 3).sum()
        seen["names"] = sorted({e.name for e in prof.function_events})
    t = threading.Thread(target=other)
    t.start()
    started.wait(10)
    y = x.exp()                          # main thread: not recorded
    y.sum().backward()
    done.set()
    t.join()
    assert seen["names"] == ["ndgrad::mul", "ndgrad::sum"]
    np.testing.assert_allclose(x.grad.tolist(), np.exp(np.ones(3)))


def test_results_identical_under_the_profiler():
    def grads():
        x = ndgrad.tensor(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)
        (g,) = ndgrad.autograd.grad((x.sin() * x).sum(), x, create_graph=True)
        g.sum().backward()
        return x.grad.tolist(), g.tolist()
    plain = grads()
    with profiler.profile(record_shapes=True, with_stack=True):
        assert grads() == plain
