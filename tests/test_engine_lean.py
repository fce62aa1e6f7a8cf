"""The lean ``loss.backward()`` entry and its node-and-leaves run (Note [Lean backward entry] in
autograd/engine.py) against PyTorch: the same gradients, hook order, errors and graph-task
state as the general path. The graphs are the ones it serves: a 0-d loss whose node feeds only
leaves (a custom Function here, a compiled function's node in test_jit_executor.py), and the
cases that must leave it (hooks, a leaf reached twice, views, non-leaf successors)."""

import numpy as np
import pytest
import torch

import ndgrad
from _compare import both, same_outcome
from ndgrad.autograd import engine


def _weighted(L, log=None):
    """A Function of three inputs returning a 0-d loss: one node feeding the leaves."""

    class Weighted(L.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, c):
            ctx.save_for_backward(a, b, c)
            return (a * b).sum() + 2 * c.sum()

        @staticmethod
        def backward(ctx, g):
            a, b, c = ctx.saved_tensors
            if log is not None:
                log.append(("backward", round(float(g), 6)))
            return g * b, g * a, 2 * g * L.ones_like(c)

    return Weighted


def _leaves(L, dtype=None):
    dtype = dtype or L.float64
    a = L.tensor([1.0, -2.0, 3.0], dtype=dtype, requires_grad=True)
    b = L.tensor([0.5, 4.0, -1.0], dtype=dtype, requires_grad=True)
    c = L.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=dtype, requires_grad=True)
    return a, b, c


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_node_feeding_leaves_gradients_and_stealing(dtype):
    def run(L):
        a, b, c = _leaves(L, getattr(L, dtype))
        loss = _weighted(L).apply(a, b, c)
        loss.backward()
        first = [t.grad for t in (a, b, c)]
        loss2 = _weighted(L).apply(a, b, c)
        loss2.backward()                       # accumulated in place: same tensors
        same = [t.grad is g for t, g in zip((a, b, c), first)]
        return [t.grad.tolist() for t in (a, b, c)], same, loss.grad_fn is not None
    assert run(torch) == run(ndgrad)


def test_post_accumulate_hooks_run_in_edge_order_once_each():
    def run(L):
        log = []
        a, b, c = _leaves(L)
        for name, t in (("a", a), ("b", b), ("c", c)):
            t.register_post_accumulate_grad_hook(lambda p, name=name: log.append(name))
        _weighted(L, log).apply(a, b, c).backward()
        return log
    t, n = both(run)
    assert t == n == [("backward", 1.0), "a", "b", "c"]


def test_tensor_hooks_on_a_leaf_and_on_the_loss_take_the_general_path():
    def run(L):
        log = []
        a, b, c = _leaves(L)
        b.register_hook(lambda g: log.append(("b", g.tolist())) or g * 10)
        loss = _weighted(L, log).apply(a, b, c)
        loss.register_hook(lambda g: log.append(("loss", g.item())) or g * 3)
        loss.backward()
        return log, [t.grad.tolist() for t in (a, b, c)]
    t, n = both(run)
    assert t == n


def test_node_hooks_of_the_loss_node():
    def run(L):
        log = []
        a, b, c = _leaves(L)
        loss = _weighted(L, log).apply(a, b, c)
        loss.grad_fn.register_prehook(lambda go: log.append("pre"))
        loss.grad_fn.register_hook(lambda gi, go: log.append(("post", len(gi))))
        loss.backward()
        return log, a.grad.tolist()
    t, n = both(run)
    assert t == n


def test_a_leaf_reached_twice_gets_the_sum_once():
    def run(L):
        log = []
        a, _, c = _leaves(L)
        a.register_post_accumulate_grad_hook(lambda p: log.append(p.grad.tolist()))
        _weighted(L).apply(a, a, c).backward()
        return log, a.grad.tolist()
    t, n = both(run)
    assert t == n
    assert len(n[0]) == 1


def test_second_backward_and_retain_graph():
    def run(L):
        a, b, c = _leaves(L)
        loss = (a * b).sum()
        loss.backward(retain_graph=True)
        loss.backward()
        out = [a.grad.tolist()]
        try:
            loss.backward()
        except RuntimeError as e:
            out.append(str(e)[:60])
        return out
    assert same_outcome(run)[1][1].startswith("Trying to backward through the graph a second")


def test_graph_task_state_inside_a_backward_started_by_the_lean_entry():
    seen = []

    class Probe(ndgrad.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a.sum()

        @staticmethod
        def backward(ctx, g):
            seen.append((engine.is_checkpoint_valid(), engine.current_graph_task_keeps_graph(),
                         engine.current_graph_task_id() > 0))
            return g.expand(3)

    a = ndgrad.ones(3, requires_grad=True)
    Probe.apply(a).backward()
    Probe.apply(a).backward(retain_graph=True)
    assert seen == [(True, False, True), (True, True, True)]
    assert engine.current_graph_task_id() == -1        # popped after the backward
    assert ndgrad.is_grad_enabled()


def test_will_engine_execute_node_from_a_post_accumulate_hook():
    def run(L):
        a, b, c = _leaves(L)
        loss = _weighted(L).apply(a, b, c)
        acc = loss.grad_fn.next_functions[0][0]
        other = (a * 2).sum().grad_fn
        will = (torch._C._will_engine_execute_node if L is torch
                else engine.will_engine_execute_node)
        seen = []
        b.register_post_accumulate_grad_hook(
            lambda p: seen.append((will(acc), will(other))))
        loss.backward()
        return seen
    t, n = both(run)
    assert t == n == [(True, False)]


def test_gradient_checks_of_the_node_outputs():
    """Broadcast gradients are summed, dtypes cast, bad shapes and non-tensors rejected, as
    the general path does."""
    def make(L, kind):
        class Bad(L.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return (a * b).sum()

            @staticmethod
            def backward(ctx, g):
                if kind == "broadcast":
                    return g * L.ones(4, 3, dtype=L.float64), g * L.ones(3, dtype=L.float32)
                if kind == "shape":
                    return g * L.ones(4, dtype=L.float64), None
                return "nope", None
        return Bad

    for kind in ("broadcast", "shape", "type"):
        def run(L, kind=kind):
            a = L.ones(3, dtype=L.float64, requires_grad=True)
            b = L.ones(3, dtype=L.float64, requires_grad=True)
            make(L, kind).apply(a, b).backward()
            return a.grad.tolist(), b.grad.dtype is L.float64, b.grad.tolist()
        same_outcome(run)


def test_views_non_scalar_and_inference_leave_the_lean_entry_correctly():
    def run(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (x * x).sum().view(()).backward()                  # a view: the general path
        g1 = x.grad.tolist()
        x.grad = None
        (x * 3).sum().reshape(1).backward()                 # one element, 1-d
        g2 = x.grad.tolist()
        x.grad = None
        (x.double() * 2).sum().backward()                  # another dtype
        return g1, g2, x.grad.tolist(), x.grad.dtype is L.float32
    assert same_outcome(run)[0] == "ok"

    def inside_inference_mode(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        loss = (x * x).sum()
        with L.inference_mode():
            loss.backward()            # the seed is made in inference mode: general path
        return x.grad.tolist()
    assert same_outcome(inside_inference_mode)[0] == "ok"


def test_the_seed_is_a_new_tensor_each_time():
    """The seed is stolen when a rule passes it through to a leaf: it must be fresh."""
    x = ndgrad.tensor(2.0, requires_grad=True)
    (x + 1).backward()
    first = x.grad
    first.mul_(5)
    y = ndgrad.tensor(2.0, requires_grad=True)
    (y + 1).backward()
    assert y.grad.item() == 1.0 and first.item() == 5.0


def test_threads_run_lean_backwards_concurrently():
    import threading
    errors = []

    def work(seed):
        try:
            rng = np.random.default_rng(seed)
            for _ in range(50):
                a = ndgrad.tensor(rng.normal(size=3), requires_grad=True)
                b = ndgrad.tensor(rng.normal(size=3), requires_grad=True)
                (a * b).sum().backward()
                np.testing.assert_array_equal(a.grad.numpy(), b.detach().numpy())
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_saved_attributes_as_descriptors():
    # Note [Saved attributes as descriptors] (autograd/node.py): grad_fn._saved_* are
    # properties of the node classes, the same values and errors as PyTorch's
    from ndgrad.autograd.node import OpNode
    assert "__getattr__" not in vars(OpNode)
    for L in (torch, ndgrad):
        x = L.tensor([1.0, -2.0, 3.0], requires_grad=True)
        y = L.tensor([0.5, 4.0, -1.0], requires_grad=True)
        fn = (x * y).grad_fn
        assert fn._saved_self.tolist() == x.tolist() and fn._saved_other.tolist() == y.tolist()
        assert fn._raw_saved_self is not None
        assert not hasattr(fn, "_saved_nothing") and not hasattr(fn, "_raw_saved_alpha")
        names = dir(fn)
        assert "_saved_self" in names and "_raw_saved_other" in names
        mn, mx = L.aminmax(x)           # saved names set after the op was declared
        amm = mn.grad_fn
        assert amm._saved_max.item() == 3.0 and amm._saved_min.item() == -2.0
        out = (x * y).sum()
        fn = out.grad_fn.next_functions[0][0]
        out.backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            fn._saved_self
    # an argument not given is not an attribute (nor listed), as before
    z = ndgrad.tensor([1.0], requires_grad=True)
    node = ndgrad.add(z, 1.0).grad_fn
    assert hasattr(type(node), "_saved_alpha") and node._saved_other == 1.0
    assert not hasattr(node, "_saved_alpha") and "_saved_alpha" not in dir(node)
