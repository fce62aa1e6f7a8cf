"""Backward from several threads at once: ``set_multithreading_enabled`` against PyTorch, exact
gradient sums when many threads accumulate into shared leaves, and per-thread grad modes."""

import sys
import threading

import numpy as np
import pytest
import torch

import ndgrad
from _compare import both

LIBS = (torch, ndgrad)
N_THREADS = 8
N_PASSES = 200


def in_thread(fn):
    out = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


def run_threads(target, n=N_THREADS):
    """Run ``target(i)`` in ``n`` threads started together, switching threads very often so
    that their backward passes interleave at fine grain."""
    errors = []
    barrier = threading.Barrier(n)

    def wrapped(i):
        try:
            barrier.wait(30)
            target(i)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)
    threads = [threading.Thread(target=wrapped, args=(i,)) for i in range(n)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    if errors:
        raise errors[0]


# ---------------------------------------------------------------------------- the switch
def test_set_multithreading_enabled_like_torch():
    def run(L):
        A = L.autograd
        out = [A.is_multithreading_enabled()]
        with A.set_multithreading_enabled(False):
            out.append(A.is_multithreading_enabled())
            out.append(in_thread(A.is_multithreading_enabled))    # thread-local
        out.append(A.is_multithreading_enabled())
        A.set_multithreading_enabled(False)                        # immediate, as a function
        out.append(A.is_multithreading_enabled())
        A.set_multithreading_enabled(True)

        @A.set_multithreading_enabled(False)
        def f():
            return A.is_multithreading_enabled()
        out += [f(), A.is_multithreading_enabled()]
        A.set_multithreading_enabled(True)
        try:
            A.set_multithreading_enabled(1)
        except TypeError as e:
            out.append(str(e))
        out.append(A.is_multithreading_enabled())
        return out
    t, n = both(run)
    assert n == t


def test_backward_works_with_multithreading_disabled():
    x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    with ndgrad.autograd.set_multithreading_enabled(False):
        (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]


# ---------------------------------------------------------------------------- stress
def test_concurrent_backward_into_shared_leaves_gives_exact_sums():
    rng = np.random.default_rng(0)
    w0 = rng.integers(-3, 4, size=(4, 3)).astype(np.float64)
    b0 = rng.integers(-3, 4, size=3).astype(np.float64)
    inputs = [rng.integers(-2, 3, size=(5, 4)).astype(np.float64) for _ in range(N_THREADS)]
    w = ndgrad.tensor(w0, requires_grad=True)
    b = ndgrad.tensor(b0, requires_grad=True)
    captured = [[] for _ in range(N_THREADS)]

    def work(i):
        xi = ndgrad.tensor(inputs[i])
        for k in range(N_PASSES):
            h = xi @ w + b                       # a graph sharing the leaves w and b
            loss = (h * h).sum() + (w * b).sum()
            if k % 10 == 0:
                gw, gb = ndgrad.autograd.grad(loss, (w, b))   # captured, not accumulated
                captured[i].append((gw.tolist(), gb.tolist()))
            else:
                loss.backward()

    run_threads(work)
    # Expected with torch, single-threaded, in float64: every value is an integer, so sums are
    # exact whatever the order of accumulation.
    tw = torch.tensor(w0, requires_grad=True)
    tb = torch.tensor(b0, requires_grad=True)
    passes = N_PASSES - len(range(0, N_PASSES, 10))
    for i in range(N_THREADS):
        h = torch.tensor(inputs[i]) @ tw + tb
        loss = (h * h).sum() + (tw * tb).sum()
        gw, gb = torch.autograd.grad(loss, (tw, tb), retain_graph=True)
        for got in captured[i]:
            assert got == (gw.tolist(), gb.tolist())
        (loss * passes).backward()
    assert w.grad.tolist() == tw.grad.tolist()
    assert b.grad.tolist() == tb.grad.tolist()


def test_concurrent_custom_functions_and_retained_graph():
    class Square(ndgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g
    x = ndgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    shared = Square.apply(x).sum()               # one graph, backwarded from every thread

    def work(i):
        for _ in range(50):
            shared.backward(retain_graph=True)
            Square.apply(x * (i + 1)).sum().backward()

    run_threads(work)
    per_pass = sum(2 * (i + 1) ** 2 for i in range(N_THREADS))
    expected = [(2 * N_THREADS + per_pass) * 50 * v for v in (1.0, 2.0, 3.0)]
    assert x.grad.tolist() == expected


def test_threads_with_different_grad_modes_at_the_same_time():
    x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    modes = ["no_grad", "enable_grad", "set_false", "inference"]
    results = {}

    def work(i):
        mode = modes[i % len(modes)]
        seen = set()
        for _ in range(300):
            if mode == "no_grad":
                with ndgrad.no_grad():
                    seen.add((ndgrad.is_grad_enabled(), (x * 2).requires_grad))
            elif mode == "enable_grad":
                with ndgrad.no_grad():
                    with ndgrad.enable_grad():
                        y = x * 2
                seen.add((ndgrad.is_grad_enabled(), y.requires_grad))
                (y.sum() * 0).backward()
            elif mode == "set_false":
                with ndgrad.set_grad_enabled(False):
                    seen.add((ndgrad.is_grad_enabled(), (x * 2).requires_grad))
            else:
                with ndgrad.inference_mode():
                    y = x * 2
                    seen.add((ndgrad.is_grad_enabled(), y.requires_grad, y.is_inference()))
        results[i] = (mode, seen, ndgrad.is_grad_enabled())

    run_threads(work)
    for mode, seen, after in results.values():
        expected = {"no_grad": {(False, False)}, "enable_grad": {(True, True)},
                    "set_false": {(False, False)}, "inference": {(False, False, True)}}[mode]
        assert seen == expected and after is True
    assert ndgrad.is_grad_enabled() is True
    assert x.grad.tolist() == [0.0, 0.0]


@pytest.mark.parametrize("create_graph", [False, True])
def test_concurrent_autograd_grad_double_backward(create_graph):
    x = ndgrad.tensor([0.5, -1.0, 2.0], dtype=ndgrad.float64, requires_grad=True)
    tx = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    (tg,) = torch.autograd.grad((tx.sin() * tx).sum(), tx, create_graph=True)
    (tgg,) = torch.autograd.grad(tg.sum(), tx)
    out = {}

    def work(i):
        got = []
        for _ in range(40):
            (g,) = ndgrad.autograd.grad((x.sin() * x).sum(), x, create_graph=create_graph)
            if create_graph:
                (gg,) = ndgrad.autograd.grad(g.sum(), x)
                got.append(tuple(gg.tolist()))
            else:
                got.append(tuple(g.tolist()))
        out[i] = set(got)

    run_threads(work)
    ref = tuple((tgg if create_graph else tg).tolist())
    for s in out.values():
        assert len(s) == 1
        np.testing.assert_allclose(next(iter(s)), ref, rtol=1e-13)
