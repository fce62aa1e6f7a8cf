"""Grad modes against PyTorch: ``no_grad``, ``enable_grad`` and ``set_grad_enabled`` as context
managers and decorators, nesting, exceptions, generators, the immediate effect of calling
``set_grad_enabled(False)``, and thread-locality."""

import threading

import pytest
import torch

import ndgrad
from _compare import both

LIBS = (torch, ndgrad)


@pytest.fixture(autouse=True)
def _restore_grad_mode():
    yield
    torch.set_grad_enabled(True)
    ndgrad.set_grad_enabled(True)


def test_is_grad_enabled_default_and_autograd_alias():
    def run(L):
        return L.is_grad_enabled(), L.autograd.no_grad is L.no_grad, \
            L.autograd.enable_grad is L.enable_grad, \
            L.autograd.set_grad_enabled is L.set_grad_enabled
    t, n = both(run)
    assert t == n == (True, True, True, True)


def test_no_grad_context_and_recording():
    def run(L):
        x = L.ones(2, requires_grad=True)
        with L.no_grad():
            inside = L.is_grad_enabled()
            y = x * 2
        z = x * 2
        return inside, y.requires_grad, y.grad_fn, z.requires_grad, L.is_grad_enabled()
    t, n = both(run)
    assert t == n == (False, False, None, True, True)


def test_nesting():
    def run(L):
        x = L.ones(2, requires_grad=True)
        out = []
        with L.no_grad():
            out.append(L.is_grad_enabled())
            with L.enable_grad():
                out.append((x * 2).requires_grad)
                with L.no_grad():
                    out.append((x * 2).requires_grad)
                out.append(L.is_grad_enabled())
            out.append((x * 2).requires_grad)
            with L.set_grad_enabled(True):
                out.append(L.is_grad_enabled())
            out.append(L.is_grad_enabled())
        out.append(L.is_grad_enabled())
        return out
    t, n = both(run)
    assert t == n == [False, True, False, True, False, True, False, True]


def test_context_restores_mode_after_exception():
    def run(L):
        with pytest.raises(ValueError):
            with L.no_grad():
                raise ValueError
        a = L.is_grad_enabled()
        with L.no_grad():
            with pytest.raises(KeyError):
                with L.enable_grad():
                    raise KeyError
            b = L.is_grad_enabled()
        return a, b
    t, n = both(run)
    assert t == n == (True, False)


def test_decorators_with_and_without_parentheses():
    def run(L):
        @L.no_grad
        def f1():
            return L.is_grad_enabled()

        @L.no_grad()
        def f2():
            return L.is_grad_enabled()

        @L.enable_grad()
        def g1():
            return L.is_grad_enabled()

        @L.set_grad_enabled(False)
        def h():
            return L.is_grad_enabled()

        out = [f1(), f2(), L.is_grad_enabled(), L.is_grad_enabled()]
        with L.no_grad():
            out += [g1(), L.is_grad_enabled()]
        out += [h(), L.is_grad_enabled(), f1.__name__, h.__name__]
        return out
    t, n = both(run)
    assert t == n == [False, False, True, True, True, False, False, True, "f1", "h"]


def test_decorated_function_keeps_mode_across_calls_and_arguments():
    def run(L):
        @L.no_grad()
        def double(x, *, k=2):
            return x * k

        x = L.ones(2, requires_grad=True)
        a = double(x)
        b = double(x, k=3)
        return a.requires_grad, b.tolist(), (x * 1).requires_grad
    t, n = both(run)
    assert t == n == (False, [3.0, 3.0], True)


def test_decorated_generator_applies_mode_inside_only():
    def run(L):
        @L.no_grad()
        def gen():
            yield L.is_grad_enabled()
            yield L.is_grad_enabled()

        g = gen()
        first = next(g)
        between = L.is_grad_enabled()
        second = next(g)
        return first, between, second, L.is_grad_enabled()
    t, n = both(run)
    assert t == n == (False, True, False, True)


def test_set_grad_enabled_as_function_takes_effect_immediately():
    def run(L):
        x = L.ones(2, requires_grad=True)
        L.set_grad_enabled(False)
        a = (L.is_grad_enabled(), (x * 2).requires_grad)
        L.set_grad_enabled(True)
        b = (L.is_grad_enabled(), (x * 2).requires_grad)
        return a, b
    t, n = both(run)
    assert t == n == ((False, False), (True, True))


def test_set_grad_enabled_context_restores_previous_mode():
    def run(L):
        out = []
        with L.set_grad_enabled(False):
            out.append(L.is_grad_enabled())
        out.append(L.is_grad_enabled())
        with L.no_grad():
            with L.set_grad_enabled(True):
                out.append(L.is_grad_enabled())
            out.append(L.is_grad_enabled())
        return out
    t, n = both(run)
    assert t == n == [False, True, True, False]


def test_set_grad_enabled_requires_bool():
    for L in LIBS:
        for bad in ("x", 1, None):
            with pytest.raises(TypeError, match="must be bool"):
                L.set_grad_enabled(bad)
        assert L.is_grad_enabled()


def test_no_grad_instance_reusable():
    def run(L):
        ctx = L.no_grad()
        out = []
        for _ in range(2):
            with ctx:
                out.append(L.is_grad_enabled())
            out.append(L.is_grad_enabled())
        return out
    t, n = both(run)
    assert t == n == [False, True, False, True]


def test_backward_inside_no_grad_still_computes_gradients():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x).sum()
        with L.no_grad():
            y.backward()
        return x.grad.tolist(), L.is_grad_enabled()
    t, n = both(run)
    assert t == n == ([2.0, 4.0], True)


def test_hooks_run_with_grad_mode_of_backward():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        seen = []
        x.register_hook(lambda g: seen.append(L.is_grad_enabled()))
        (x * 2).sum().backward()
        (g,) = L.autograd.grad((x * x).sum(), x, create_graph=True)
        return seen
    t, n = both(run)
    assert t == n == [False, True]


def test_grad_mode_is_thread_local():
    def run(L):
        results = {}

        def worker(name):
            results[name] = L.is_grad_enabled()
            with L.no_grad():
                results[name + "-inner"] = L.is_grad_enabled()

        with L.no_grad():
            th = threading.Thread(target=worker, args=("new",))
            th.start()
            th.join()
            results["main"] = L.is_grad_enabled()
        results["main-after"] = L.is_grad_enabled()
        return results
    t, n = both(run)
    assert t == n == {"new": True, "new-inner": False, "main": False, "main-after": True}


def test_thread_mode_change_does_not_leak_to_main_thread():
    def run(L):
        done = threading.Event()
        go = threading.Event()

        def worker():
            L.set_grad_enabled(False)
            go.set()
            done.wait()

        th = threading.Thread(target=worker)
        th.start()
        go.wait()
        main = L.is_grad_enabled()
        done.set()
        th.join()
        return main
    t, n = both(run)
    assert t == n is True
