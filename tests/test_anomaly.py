"""Anomaly detection against PyTorch: the switches, NaN checks, the forward-traceback warning
before errors in backward (with parents for double backward), and that nothing is recorded
and the engine's fast path is kept when the mode is off."""

import warnings

import numpy as np
import pytest
import torch

import ndgrad
from ndgrad.autograd import engine
from ndgrad.ops import _dispatch
from _compare import both

LIBS = (torch, ndgrad)


def run_recorded(fn):
    """Call ``fn`` and return (its result or its exception as (type, message), UserWarnings)."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            res = fn()
        except Exception as e:  # noqa: BLE001 - compared between libraries
            res = (type(e).__name__, str(e))
    return res, [str(c.message) for c in w if c.category is UserWarning]


def trace_lines(msg):
    """The ``File ..., line N, in f`` + source lines of a forward-traceback warning, without
    PyTorch's own frames and its "(Triggered internally ...)" suffix."""
    body = msg.split(":\n", 1)[1].split(" (Triggered internally")[0]
    frames = [f for f in body.split("  File ")[1:] if "site-packages/torch" not in f]
    return [f.strip() for f in frames]


@pytest.fixture(autouse=True)
def _anomaly_off():
    yield
    ndgrad.autograd.set_detect_anomaly(False)
    torch.autograd.set_detect_anomaly(False)


# ---------------------------------------------------------------------------- switches
def test_switches_and_their_warning():
    def run(L):
        A = L.autograd

        def state():            # the queries are top-level functions in PyTorch
            return L.is_anomaly_enabled(), L.is_anomaly_check_nan_enabled()
        out = [state()]
        res, warns = run_recorded(lambda: A.detect_anomaly())
        out.append(warns)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with A.detect_anomaly():
                out.append(state())
                with A.detect_anomaly(check_nan=False):
                    out.append(state())
                out.append(state())
        out.append(state())
        res, warns = run_recorded(lambda: A.set_detect_anomaly(True))
        out.append((state(), warns))
        A.set_detect_anomaly(False)
        with A.set_detect_anomaly(True, check_nan=False):
            out.append(state())
        out.append(state())
        res, _ = run_recorded(lambda: A.set_detect_anomaly(1))
        out.append(res)
        return out
    t, n = both(run)
    assert n == t
    assert t[1] == ["Anomaly Detection has been enabled. This mode will increase the runtime "
                    "and should only be enabled for debugging."]


def test_top_level_queries():
    assert ndgrad.is_anomaly_enabled() is False
    with ndgrad.autograd.set_detect_anomaly(True):
        assert ndgrad.is_anomaly_enabled() is True
        assert ndgrad.is_anomaly_check_nan_enabled() is True


def test_detect_anomaly_as_decorator():
    # An ndgrad extension: PyTorch's detect_anomaly is a context manager only.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")

        @ndgrad.autograd.detect_anomaly(check_nan=False)
        def f():
            return (ndgrad.autograd.is_anomaly_enabled(),
                    ndgrad.autograd.is_anomaly_check_nan_enabled())
    assert ndgrad.autograd.is_anomaly_enabled() is False
    assert f() == (True, False)
    assert ndgrad.autograd.is_anomaly_enabled() is False
    assert ndgrad.autograd.is_anomaly_check_nan_enabled() is True


# ---------------------------------------------------------------------------- NaN checks
def nan_div(L, check_nan=True):
    x = L.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with L.autograd.detect_anomaly(check_nan=check_nan):
            y = x / x
            res, warns = run_recorded(lambda: y.sum().backward())
    return res, warns, x.grad


def test_nan_in_backward_raises_with_forward_traceback():
    (tres, twarn, tgrad), (nres, nwarn, ngrad) = both(nan_div)
    assert nres == tres == ("RuntimeError",
                            "Function 'DivBackward0' returned nan values in its 1th output.")
    assert ngrad is None and tgrad is None
    assert len(nwarn) == len(twarn) == 1
    head = "Error detected in DivBackward0. Traceback of forward call that caused the error:"
    assert twarn[0].startswith(head) and nwarn[0].startswith(head)
    # Same user frame (file, line, function and source), and no ndgrad internals.
    assert trace_lines(nwarn[0])[-1] == trace_lines(twarn[0])[-1]
    assert "y = x / x" in trace_lines(nwarn[0])[-1]
    assert "ndgrad/" not in nwarn[0]


def test_check_nan_false_lets_nan_through():
    (tres, twarn, tgrad), (nres, nwarn, ngrad) = both(lambda L: nan_div(L, check_nan=False))
    assert nres is None and tres is None and nwarn == twarn == []
    np.testing.assert_array_equal(ngrad.tolist(), tgrad.tolist())


def test_nan_gradient_fed_in_and_nan_passing_to_leaf():
    def run(L):
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with L.autograd.detect_anomaly():
                x = L.tensor([1.0], requires_grad=True)
                res, warns = run_recorded(
                    lambda: (x * 1).backward(L.tensor([float("nan")])))
                out += [res, [w.split(".")[0] for w in warns]]
                xn = L.tensor([float("nan")], requires_grad=True)
                res, warns = run_recorded(lambda: (xn * 1).sum().backward())
                out += [res, warns, xn.grad.tolist()]
        return out
    t, n = both(run)
    assert n == t
    assert t[0] == ("RuntimeError", "Function 'MulBackward0' returned nan values in its 0th "
                                    "output.")


# ---------------------------------------------------------------------------- errors in backward
def test_error_in_custom_backward_is_preceded_by_the_forward_traceback():
    def run(L):
        class Boom(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                raise ValueError("boom")
        x = L.ones(2, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with L.autograd.detect_anomaly():
                y = Boom.apply(x)
                z = y * 3
                return run_recorded(lambda: z.sum().backward())
    (tres, twarn), (nres, nwarn) = both(run)
    assert nres == tres == ("ValueError", "boom")
    assert len(nwarn) == len(twarn) == 1
    assert nwarn[0].split(":\n")[0] == twarn[0].split(":\n")[0] == (
        "Error detected in BoomBackward. Traceback of forward call that caused the error")
    assert trace_lines(nwarn[0]) == trace_lines(twarn[0])
    assert "y = Boom.apply(x)" in trace_lines(nwarn[0])[-1]


def test_engine_validation_error_is_blamed_on_the_node():
    def run(L):
        class W(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return L.ones(3)
        x = L.ones(2, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with L.autograd.detect_anomaly():
                y = W.apply(x)
                res, warns = run_recorded(lambda: y.sum().backward())
        return res, [w.split(".")[0] for w in warns]
    t, n = both(run)
    assert n == t
    assert t[1] == ["Error detected in WBackward"]


def test_double_backward_error_shows_the_parent_traceback():
    def run(L):
        class Bad(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 1

            @staticmethod
            def backward(ctx, g):
                raise ValueError("bad")

        class Fn(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return Bad.apply(g) * 2
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with L.autograd.detect_anomaly():
                a = L.tensor([1.0], requires_grad=True)
                b = Fn.apply(a)
                c = b * b
                (g,) = L.autograd.grad(c.sum(), a, create_graph=True)
                return run_recorded(lambda: g.sum().backward())
    (tres, twarn), (nres, nwarn) = both(run)
    assert nres == tres == ("ValueError", "bad")
    assert len(nwarn) == len(twarn) == 2
    assert nwarn[0].startswith("Error detected in BadBackward. Traceback of forward call")
    assert trace_lines(nwarn[0])[-1] == trace_lines(twarn[0])[-1]   # inside Fn.backward
    assert nwarn[1].split(":\n")[0] == twarn[1].split(":\n")[0] == (
        "\n\nPrevious calculation was induced by FnBackward. Traceback of forward call that "
        "induced the previous calculation")
    assert trace_lines(nwarn[1]) == trace_lines(twarn[1])
    assert "b = Fn.apply(a)" in trace_lines(nwarn[1])[-1]


def test_node_created_before_anomaly_mode_has_no_traceback():
    def run(L):
        x = L.tensor([0.0], requires_grad=True)
        y = x / x
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with L.autograd.detect_anomaly():
                res, warns = run_recorded(lambda: y.backward())
        return res, [w.split(" (Triggered")[0] for w in warns]
    t, n = both(run)
    assert n == t
    assert t[1] == ["Error detected in DivBackward0. No forward pass information available. "
                    "Enable detect anomaly during forward pass for more information."]


# ---------------------------------------------------------------------------- cost when off
def test_nothing_recorded_and_fast_path_kept_when_off(monkeypatch):
    calls = []
    real = engine._execute_instrumented

    def spy(*args):
        calls.append(1)
        return real(*args)
    monkeypatch.setattr(engine, "_execute_instrumented", spy)
    x = ndgrad.ones(2, requires_grad=True)
    y = x * 2
    assert y.grad_fn._anomaly_trace is None and _dispatch._ANOMALY is False
    y.sum().backward()
    assert calls == []
    with ndgrad.autograd.set_detect_anomaly(True):
        assert _dispatch._ANOMALY is True
        z = x * 2
        assert z.grad_fn._anomaly_trace is not None
        z.sum().backward()
    assert calls == [1] and _dispatch._ANOMALY is False
    assert x.grad.tolist() == [4.0, 4.0]


def test_results_identical_with_and_without_anomaly_mode():
    rng = np.random.default_rng(3)
    data = rng.standard_normal((4, 5))

    def grads():
        x = ndgrad.tensor(data, requires_grad=True)
        h = x.retain_grad() or x
        y = (h.tanh() * h).sum(1).exp()
        (g,) = ndgrad.autograd.grad(y.sum(), x, create_graph=True)
        g.sum().backward()
        return x.grad.tolist(), g.tolist()
    plain = grads()
    with ndgrad.autograd.set_detect_anomaly(True):
        assert grads() == plain
