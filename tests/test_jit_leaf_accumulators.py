"""A compiled call's leaves without an AccumulateGrad get one only when it is needed (Note [Leaf
accumulators made on demand] in ndgrad/jit/executor.py). Everything that can see an accumulator
sees what PyTorch shows: one accumulator per leaf shared by every live graph over it, hooks on
it kept while a graph holds it and gone with it, tensor hooks and ``autograd.grad`` on leaves
of a live compiled graph, leaves swapped between calls, threads. Each script runs with torch
(eager), ndgrad eager and ndgrad compiled, and the three must agree."""

import gc
import threading
import weakref

import numpy as np
import torch

import ndgrad


def mlp(x, w, b):
    return ((x @ w + b).tanh() * 2).sum()


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((3, 4)), rng.standard_normal((4, 2)), rng.standard_normal(2)


def _leaves(lib, seed=0):
    x, w, b = _data(seed)
    return lib.tensor(x), lib.tensor(w, requires_grad=True), lib.tensor(b, requires_grad=True)


def _variants():
    """(name, library, step function): torch eager, ndgrad eager, ndgrad compiled (already
    traced, so every call below is a plain compiled call)."""
    cf = ndgrad.compile(mlp)
    cf(*_leaves(ndgrad, seed=9))
    return [("torch", torch, mlp), ("eager", ndgrad, mlp), ("compiled", ndgrad, cf)]


def _acc(loss, k):
    """The accumulator of the k-th leaf (w: 0, b: 1) of a loss of ``mlp``, found by walking
    back from the loss (the graphs of eager and compiled differ in depth)."""
    seen, stack, accs = set(), [loss.grad_fn], []
    while stack:
        n = stack.pop()
        for nxt, _ in n.next_functions:
            if nxt is not None and id(nxt) not in seen:
                seen.add(id(nxt))
                if hasattr(nxt, "variable"):
                    accs.append(nxt)
                else:
                    stack.append(nxt)
    return accs


def _acc_of(loss, leaf):
    (acc,) = [a for a in _acc(loss, 0) if a.variable is leaf]
    return acc


def test_one_accumulator_per_leaf_shared_by_live_graphs():
    for name, lib, f in _variants():
        x, w, b = _leaves(lib)
        loss1 = f(x, w, b)
        other = (w * 3).sum()               # an eager graph over w made after the call
        assert _acc_of(loss1, w) is other.grad_fn.next_functions[0][0].next_functions[0][0], name
        loss2 = f(x, w, b)                  # a second call while the first graph lives
        assert _acc_of(loss2, w) is _acc_of(loss1, w), name
        assert _acc_of(loss2, b) is _acc_of(loss1, b), name
        assert _acc_of(loss2, w).variable is w and _acc_of(loss2, b).variable is b, name
        # eager graph first, then the call
        x, w, b = _leaves(lib)
        other = (w * 3).sum()
        loss = f(x, w, b)
        assert _acc_of(loss, w) is other.grad_fn.next_functions[0][0].next_functions[0][0], name


def test_a_hook_on_an_accumulator_lives_as_long_as_a_graph_holds_it():
    for name, lib, f in _variants():
        x, w, b = _leaves(lib)
        fired = []
        loss = f(x, w, b)
        # made by another graph after the call, hooked, that graph dropped: the compiled graph
        # holds the same accumulator, so the hook fires in its backward (as in torch)
        other = (w * 3).sum()
        other.grad_fn.next_functions[0][0].next_functions[0][0].register_prehook(
            lambda go, fired=fired: fired.append("kept"))
        del other
        gc.collect()
        loss.backward()
        assert fired == ["kept"], name
        del loss
        # the same with two calls' graphs alive, the later one dropped before the backward
        loss1 = f(x, w, b)
        loss2 = f(x, w, b)
        other = (w * 3).sum()
        other.grad_fn.next_functions[0][0].next_functions[0][0].register_prehook(
            lambda go, fired=fired: fired.append("kept by the first"))
        del other, loss2
        gc.collect()
        loss1.backward()
        assert fired == ["kept", "kept by the first"], name
        del loss1
        # a hook on the accumulator of a graph that died is gone with it
        loss = f(x, w, b)
        _acc_of(loss, b).register_prehook(lambda go, fired=fired: fired.append("gone"))
        del loss
        gc.collect()
        f(x, w, b).backward()
        assert fired == ["kept", "kept by the first"], name


def test_tensor_hooks_and_grad_on_leaves_of_a_live_compiled_graph():
    results = {}
    for name, lib, f in _variants():
        x, w, b = _leaves(lib)
        f(x, w, b).backward()               # a step (b.grad exists, w.grad is reset)
        w.grad = None
        loss = f(x, w, b)
        w.register_hook(lambda g: g * 10)   # registered between the call and backward
        b.register_post_accumulate_grad_hook(lambda t: [t.grad.mul_(0.5)] and None)
        loss.backward()
        (gw,) = (lib.autograd.grad(f(x, w, b), [w]))    # w.grad and b.grad untouched
        results[name] = [w.grad.detach().numpy().copy(), b.grad.detach().numpy().copy(),
                         gw.detach().numpy().copy()]
    for name in ("eager", "compiled"):
        for got, want in zip(results[name], results["torch"]):
            np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=name)


def test_gradients_retained_graphs_and_existing_grads_as_eager():
    results = {}
    for name, lib, f in _variants():
        x, w, b = _leaves(lib)
        loss = f(x, w, b)
        loss.backward(retain_graph=True)
        first = w.grad
        version = first._version
        loss.backward()                     # adds in place into the same .grad
        assert w.grad is first and w.grad._version == version + 1, name
        b.grad = lib.ones(2, dtype=b.dtype)     # a gradient set by hand before the backward
        f(x, w, b).backward()
        results[name] = [w.grad.detach().numpy().copy(), b.grad.detach().numpy().copy()]
    for name in ("eager", "compiled"):
        for got, want in zip(results[name], results["torch"]):
            np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=name)


def test_leaves_swapped_between_calls_keep_their_own_accumulators():
    for name, lib, f in _variants():
        x, w, b = _leaves(lib)
        _, w2, b2 = _leaves(lib, seed=1)
        loss1 = f(x, w, b)
        loss2 = f(x, w2, b2)                # other leaves at the same positions, loss1 alive
        a1, a2 = _acc_of(loss1, w), _acc_of(loss2, w2)
        assert a1 is not a2 and a1.variable is w and a2.variable is w2, name
        assert (w * 1).grad_fn.next_functions[0][0] is a1, name
        loss3 = f(x, w, b)                  # back to the first leaves
        assert _acc_of(loss3, w) is a1, name
        loss2.backward()
        assert w.grad is None and w2.grad is not None, name
        loss1.backward()
        loss3.backward()
        _, we, be = _leaves(lib)
        mlp(x, we, be).backward()
        np.testing.assert_allclose(w.grad.detach().numpy(), 2 * we.grad.detach().numpy(),
                                   rtol=1e-12, err_msg=name)


def test_leaves_and_nodes_die_with_their_last_reference():
    _, lib, f = _variants()[2]
    x, w, b = _leaves(lib)
    loss = f(x, w, b)
    node = weakref.ref(loss.grad_fn)
    loss.backward()
    del loss
    assert node() is None                   # no cycle: freed by reference counting
    refs = [weakref.ref(w), weakref.ref(b)]
    del w, b
    assert all(r() is None for r in refs)


def test_threads_sharing_leaves_accumulate_every_gradient():
    steps = 20
    x, w, b = _leaves(ndgrad)
    cf = ndgrad.compile(mlp)
    cf(x, w, b)
    errors = []

    def run():
        try:
            for _ in range(steps):
                loss = cf(x, w, b)
                if _ % 3 == 0:
                    (w * 0).sum().backward()    # another graph over w, made meanwhile
                loss.backward()
        except Exception as e:   # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    tx, tw, tb = _leaves(torch)
    mlp(tx, tw, tb).backward()
    np.testing.assert_allclose(w.grad.numpy(), 3 * steps * tw.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(b.grad.numpy(), 3 * steps * tb.grad.numpy(), rtol=1e-10)


def test_each_of_several_outputs_seeds_the_lean_backward():
    def two(x, w, b):
        h = (x @ w + b).tanh()
        return (h * 2).sum(), (h * h).mean()

    results = {}
    cf = ndgrad.compile(two)
    cf(*_leaves(ndgrad, seed=9))
    for name, lib, f in [("torch", torch, two), ("compiled", ndgrad, cf)]:
        x, w, b = _leaves(lib)
        f(x, w, b)[1].backward()            # the second output alone, then the first
        second = w.grad.detach().numpy().copy()
        f(x, w, b)[0].backward()
        results[name] = [second, w.grad.detach().numpy().copy(),
                         b.grad.detach().numpy().copy()]
    for got, want in zip(results["compiled"], results["torch"]):
        np.testing.assert_allclose(got, want, rtol=1e-12)
