"""The backward engine against PyTorch: graph depth, dependency counting, execution order,
``None`` as the zero gradient, freed graphs, higher derivatives, and every kind of hook with its
ordering. Each test runs the same program with ``torch`` and ``ndgrad`` and compares."""

import warnings

import numpy as np
import pytest
import torch

import ndgrad
from _compare import both

LIBS = (torch, ndgrad)


def rounded(t, nd=5):
    return None if t is None else [round(v, nd) for v in t.reshape(-1).tolist()]


def error_of(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - compared between libraries
        return type(e).__name__, str(e)
    return None


def record_order(root):
    """Register a pre hook on every node reachable from ``root``; return the call log."""
    log = []
    seen = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        node.register_prehook(lambda go, node=node: log.append(node.name()))
        stack.extend(fn for fn, _ in node.next_functions)
    return log


# ---------------------------------------------------------------------------- depth
def test_very_deep_chain_backward_without_recursion_error():
    x = ndgrad.ones(2, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y + 0
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    del y                          # freeing the deep graph must not recurse either


def test_deep_chain_of_mul_matches_torch():
    def run(L):
        x = L.tensor([1.5], dtype=L.float64, requires_grad=True)
        y = x
        for _ in range(5000):
            y = y * 1.0001
        y.sum().backward()
        return rounded(x.grad, 8)
    t, n = both(run)
    assert t == n


# ---------------------------------------------------------------------------- dependencies
def test_diamond_node_runs_once_with_summed_gradient():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        a = x * 3
        calls = []
        a.grad_fn.register_prehook(lambda go: calls.append(go[0].tolist()))
        b = a.exp()
        c = a.sin()
        d = a * a
        (b + c + d).sum().backward()
        return calls, rounded(x.grad)
    t, n = both(run)
    assert len(t[0]) == len(n[0]) == 1
    np.testing.assert_allclose(n[0], t[0], rtol=1e-5)
    np.testing.assert_allclose(n[1], t[1], rtol=1e-5)


def test_leaf_used_many_times_accumulates_once():
    def run(L):
        x = L.tensor([2.0], requires_grad=True)
        calls = []
        x.register_hook(lambda g: calls.append(g.tolist()))
        (x * x * x + x.exp() + x).sum().backward()
        return calls, rounded(x.grad)
    t, n = both(run)
    assert len(t[0]) == len(n[0]) == 1
    assert t[1] == n[1]


# ---------------------------------------------------------------------------- order
GRAPHS = {
    "mixed": lambda L, x: (x * 2 * (x * 2 + x.exp()).sin() + x.exp()).sum(),
    "two-branches": lambda L, x: (x * 2).sum() + (x * 3).sum(),
    "late-branch-first": lambda L, x: (lambda a, b: b.sum() * a.sum())(x.exp(), x.sin()),
    "chain-of-views": lambda L, x: x.reshape(2, 2).t().unsqueeze(0).select(2, 1).exp().sum(),
    "split": lambda L, x: (lambda p: p[0].sum() * 2 + p[1].exp().sum())(x.split(2)),
    "unbind": lambda L, x: (lambda p: p[3] * p[0] + p[1])(x.unbind(0)),
    "two-leaves": lambda L, x: (x * L.tensor([1.0, 2, 3, 4], requires_grad=True)).sum(),
}


@pytest.mark.parametrize("name", list(GRAPHS))
def test_execution_order_latest_created_first(name):
    def run(L):
        x = L.tensor([0.5, 1.0, 1.5, 2.0], requires_grad=True)
        out = GRAPHS[name](L, x)
        log = record_order(out.grad_fn)
        out.backward()
        return log, rounded(x.grad, 4)
    t, n = both(run)
    assert t == n


def test_execution_order_post_hooks_match():
    def run(L):
        x = L.tensor([0.5, 1.0], requires_grad=True)
        w = L.tensor([2.0, 3.0], requires_grad=True)
        a = x * w
        b = a.exp()
        c = (a + b).sum() + (w * 2).sum()
        log = []
        for node in (a.grad_fn, b.grad_fn, c.grad_fn):
            node.register_hook(lambda gi, go, node=node: log.append(node.name()))
        c.backward()
        return log
    t, n = both(run)
    assert t == n


# ---------------------------------------------------------------------------- None as zero
def test_max_dim_only_values_used():
    def run(L):
        x = L.tensor([[1.0, 5.0], [3.0, 2.0]], requires_grad=True)
        v, i = x.max(dim=1)
        received = []
        v.grad_fn.register_prehook(lambda go: received.append(go[0].tolist()))
        (v * 2).sum().backward()
        return x.grad.tolist(), i.requires_grad, i.grad_fn, received
    t, n = both(run)
    assert t == n


def test_unused_outputs_of_split_receive_none():
    def run(L):
        x = L.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], requires_grad=True)
        a, b, c = x.split(2)
        received = []
        a.grad_fn.register_prehook(lambda go: received.append([g is None for g in go]))
        (b * 2).sum().backward()
        return received, x.grad.tolist()
    t, n = both(run)
    assert t == n == ([[True, False, True]], [0.0, 0.0, 2.0, 2.0, 0.0, 0.0])


def test_unused_branch_is_not_run():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        a = x * 2
        b = x * 3
        ran = []
        a.grad_fn.register_prehook(lambda go: ran.append("a"))
        b.sum().backward()
        return ran, x.grad.tolist()
    t, n = both(run)
    assert t == n == ([], [3.0, 3.0])


def test_gradient_of_non_differentiable_output_is_none_in_post_hook():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        seen = []
        y.grad_fn.register_hook(lambda gi, go: seen.append([g is None for g in gi]))
        y.sum().backward()
        return seen
    t, n = both(run)
    assert t == n == [[False, True]]


# ---------------------------------------------------------------------------- freed graphs
def test_second_backward_raises_torch_message():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x).sum()
        y.backward()
        return error_of(y.backward)
    t, n = both(run)
    assert t == n
    assert t[0] == "RuntimeError"
    assert t[1].startswith("Trying to backward through the graph a second time")


@pytest.mark.parametrize("op", ["exp", "mul-self", "sin", "grad"])
def test_second_backward_raises_for_ops_that_save(op):
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        if op == "exp":
            y = x.exp().sum()
        elif op == "sin":
            y = x.sin().sum()
        else:
            y = (x * x).sum()
        if op == "grad":
            L.autograd.grad(y, x)
            return error_of(lambda: L.autograd.grad(y, x))
        y.backward()
        return error_of(y.backward)
    t, n = both(run)
    assert t == n and t is not None


def test_saved_tensor_access_after_free_raises():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp()
        y.sum().backward()
        return error_of(lambda: y.grad_fn._saved_result)
    t, n = both(run)
    assert t == n and t[1].startswith("Trying to backward through the graph a second time")


def test_retain_graph_allows_second_backward():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x.exp()).sum()
        y.backward(retain_graph=True)
        y.backward(retain_graph=True)
        y.backward()
        return rounded(x.grad)
    t, n = both(run)
    assert t == n


@pytest.mark.parametrize("make", [
    lambda x: (x + x).sum(),
    lambda x: (x + 1).sum(),
    lambda x: x.sum(),
    lambda x: x.reshape(2, 1).sum(),
])
def test_ops_that_save_nothing_allow_second_backward(make):
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = make(x)
        y.backward()
        y.backward()
        return x.grad.tolist()
    t, n = both(run)
    assert t == n


# ---------------------------------------------------------------------------- higher order
@pytest.mark.parametrize("f", [
    lambda x: (x.sin() * x * x).sum(),
    lambda x: (x.exp() / (x + 2)).sum(),
    lambda x: (x.tanh() ** 3).sum(),
    lambda x: ((x * x).sqrt() * x.sigmoid()).prod(),
    lambda x: (x.reshape(2, 1) @ x.reshape(1, 2)).exp().sum(),
])
def test_second_and_third_derivatives(f):
    def run(L):
        x = L.tensor([0.5, 1.5], dtype=L.float64, requires_grad=True)
        (g,) = L.autograd.grad(f(x), x, create_graph=True)
        (h,) = L.autograd.grad(g.sum(), x, create_graph=True)
        (k,) = L.autograd.grad(h.sum(), x)
        return rounded(g, 8), rounded(h, 8), rounded(k, 8), g.requires_grad, h.requires_grad
    t, n = both(run)
    assert t == n


def test_create_graph_through_backward_accumulates_graph_for_grad():
    def run(L):
        x = L.tensor([0.3, 0.7], dtype=L.float64, requires_grad=True)
        (g,) = L.autograd.grad((x ** 4).sum(), x, create_graph=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (g * g).sum().backward()
        return rounded(x.grad, 8)
    t, n = both(run)
    assert t == n


def test_grad_without_create_graph_has_no_history():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        (g,) = L.autograd.grad((x ** 2).sum(), x)
        return g.requires_grad, g.grad_fn, g.tolist()
    t, n = both(run)
    assert t == n


# ---------------------------------------------------------------------------- node hooks
def test_node_prehook_and_hook_replace_values_and_remove():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp()
        z = (y * 2).sum()
        h1 = y.grad_fn.register_prehook(lambda go: (go[0] * 100,))
        h2 = y.grad_fn.register_hook(lambda gi, go: (gi[0] + 1,))
        out = []
        z.backward(retain_graph=True)
        out.append(rounded(x.grad, 2))
        x.grad = None
        h1.remove()
        z.backward(retain_graph=True)
        out.append(rounded(x.grad, 3))
        x.grad = None
        h2.remove()
        h2.remove()                      # removing twice is harmless
        z.backward()
        out.append(rounded(x.grad, 3))
        return out
    t, n = both(run)
    assert t == n


def test_node_hooks_returning_none_keep_values():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        log = []
        y.grad_fn.register_prehook(lambda go: log.append("pre"))
        y.grad_fn.register_hook(lambda gi, go: log.append("post"))
        y.sum().backward()
        return log, x.grad.tolist()
    t, n = both(run)
    assert t == n == (["pre", "post"], [3.0, 3.0])


def test_node_prehook_with_wrong_count_raises():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        y.grad_fn.register_prehook(lambda g: (g[0], g[0]))
        return error_of(lambda: y.sum().backward())
    t, n = both(run)
    assert t == n


def test_several_node_hooks_run_in_registration_order():
    def run(L):
        x = L.tensor([1.0], requires_grad=True)
        y = x * 3
        log = []
        for k in range(3):
            y.grad_fn.register_prehook(lambda go, k=k: (log.append(("pre", k, go[0].item())),
                                                         (go[0] + 1,))[1])
            y.grad_fn.register_hook(lambda gi, go, k=k: (log.append(("post", k, gi[0].item())),
                                                         (gi[0] * 2, None))[1])
        y.sum().backward()
        return log, x.grad.tolist()
    t, n = both(run)
    assert t == n


# ---------------------------------------------------------------------------- tensor hooks
def test_tensor_hooks_on_leaf_and_non_leaf_with_replacement_and_remove():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        hx = x.register_hook(lambda g: g * 2)
        y = x * 3
        hy = y.register_hook(lambda g: g + 1)
        out = []
        y.sum().backward(retain_graph=True)
        out.append(x.grad.tolist())
        x.grad = None
        hy.remove()
        y.sum().backward(retain_graph=True)
        out.append(x.grad.tolist())
        x.grad = None
        hx.remove()
        y.sum().backward()
        out.append(x.grad.tolist())
        return out
    t, n = both(run)
    assert t == n == [[12.0, 12.0], [6.0, 6.0], [3.0, 3.0]]


def test_tensor_hook_changing_size_raises():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        y.register_hook(lambda g: L.ones(3))
        return error_of(lambda: y.sum().backward())
    t, n = both(run)
    assert t == n


def test_tensor_hook_on_tensor_without_grad_raises():
    def run(L):
        return error_of(lambda: L.ones(2).register_hook(lambda g: g))
    t, n = both(run)
    assert t == n and t[0] == "RuntimeError"


def test_tensor_hook_handle_as_context_manager():
    def run(L):
        x = L.tensor([1.0], requires_grad=True)
        with x.register_hook(lambda g: g * 5):
            (x * 1).sum().backward()
        (x * 1).sum().backward()
        return x.grad.tolist()
    t, n = both(run)
    assert t == n == [6.0]


# ---------------------------------------------------------------------------- retain_grad
def test_retain_grad_and_retains_grad():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        x.retain_grad()                   # no-op on a leaf
        y = x * 2
        before = y.retains_grad
        y.retain_grad()
        y.retain_grad()                   # idempotent
        (y * y).sum().backward()
        return (x.retains_grad, before, y.retains_grad, y.grad.tolist(), x.grad.tolist(),
                (x * 1).retains_grad)
    t, n = both(run)
    assert t == n == (False, False, True, [4.0, 8.0], [8.0, 16.0], False)


def test_retain_grad_accumulates_out_of_place():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.retain_grad()
        z = (y * y).sum()
        z.backward(retain_graph=True)
        g1 = y.grad
        z.backward()
        return y.grad.tolist(), y.grad is g1, g1.tolist()
    t, n = both(run)
    assert t == n


def test_retain_grad_on_tensor_without_grad_raises():
    def run(L):
        return error_of(lambda: L.ones(2).retain_grad())
    t, n = both(run)
    assert t == n and t[0] == "RuntimeError"


def test_retained_grad_is_not_the_engine_buffer():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * 1
        y.retain_grad()
        g = L.tensor([5.0, 6.0])
        y.backward(g)
        return y.grad.data_ptr() == g.data_ptr(), y.grad.tolist(), y.grad.requires_grad
    t, n = both(run)
    assert t == n


# ---------------------------------------------------------------------------- full ordering
def test_non_leaf_hook_ordering_matches_torch_exactly():
    # Tensor hooks in registration order, then retain_grad (sees the final value), then the
    # node's pre hooks, then its post hooks with (grad_inputs, grad_outputs); the scalar operand
    # of ``x * 2`` has no edge and gets None.
    def run(L):
        log = []
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: (log.append(("t1", g.tolist())), g * 3)[1])
        y.retain_grad()
        y.register_hook(lambda g: (log.append(("t2", g.tolist())), g + 1)[1])
        fn = y.grad_fn
        fn.register_prehook(lambda go: log.append(("pre", [t.tolist() for t in go])))
        fn.register_hook(lambda gi, go: log.append(
            ("post", [None if t is None else t.tolist() for t in gi], [t.tolist() for t in go])))
        (y * y).sum().backward()
        log.append(("grads", y.grad.tolist(), x.grad.tolist()))
        return log
    t, n = both(run)
    assert t == n
    assert t == [("t1", [4.0, 8.0]), ("t2", [12.0, 24.0]), ("pre", [[13.0, 25.0]]),
                 ("post", [[26.0, 50.0], None], [[13.0, 25.0]]),
                 ("grads", [13.0, 25.0], [26.0, 50.0])]


def test_hooks_run_when_grad_captures_a_non_leaf():
    def run(L):
        log = []
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: (log.append(("t", g.tolist())), g * 10)[1])
        (gy,) = L.autograd.grad((y * y).sum(), y)
        return log, gy.tolist()
    t, n = both(run)
    assert t == n


def test_leaf_hooks_with_grad_and_restricted_backward():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        log = []
        x.register_hook(lambda g: (log.append(g.tolist()), g * 10)[1])
        x.register_post_accumulate_grad_hook(lambda t: log.append("post"))
        (g,) = L.autograd.grad((x * x).sum(), x)   # hooks apply, nothing is accumulated
        first = (g.tolist(), list(log), x.grad)
        w = L.tensor([1.0, 2.0], requires_grad=True)
        w.register_hook(lambda g: (log.append(("w", g.tolist())), g)[1])
        (x * w).sum().backward(inputs=[x])          # w is not an input: its hook never runs
        return first, log, x.grad.tolist(), w.grad
    t, n = both(run)
    assert t == n


def test_node_hooks_do_not_run_when_grad_captures_at_the_node():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp()
        ran = []
        y.grad_fn.register_prehook(lambda go: ran.append("pre"))
        y.grad_fn.register_hook(lambda gi, go: ran.append("post"))
        (gy,) = L.autograd.grad((y * 2).sum(), y)
        return ran, gy.tolist()
    t, n = both(run)
    assert t == n == ([], [2.0, 2.0])


def test_node_reprs_name_the_class_without_namespace():
    # print(y.grad_fn.next_functions): <AccumulateGrad object at ...>, as torch's
    def reprs(m):
        x = m.ones(2, requires_grad=True)
        y = x.clone()
        y[0] = 5
        nodes = [x.exp().grad_fn, x.exp().grad_fn.next_functions[0][0], y.grad_fn]
        return [repr(n).split(" at 0x")[0] for n in nodes] + [n.name() for n in nodes]

    assert reprs(ndgrad) == reprs(torch)
