"""AccumulateGrad (seeds 000 and 003) against PyTorch: every test runs the same program with
``torch`` and with ``ndgrad`` and compares what is observable: gradient values, object identity,
``data_ptr()`` sharing, strides, node names, hook order, errors, and exact sums under threads."""

import threading
import warnings

import numpy as np
import pytest
import torch

import ndgrad

LIBS = (torch, ndgrad)


def both(fn):
    """Run ``fn(lib)`` for torch and ndgrad; return the two results."""
    return fn(torch), fn(ndgrad)


# ---------------------------------------------------------------------------- steal or clone
def test_user_held_gradient_is_not_stolen():
    def run(L):
        x = L.ones(3, requires_grad=True)
        g = L.full((3,), 2.0)
        x.backward(g)                     # the root is the leaf: the engine gets g itself
        return x.grad is g, x.grad.data_ptr() == g.data_ptr(), x.grad.tolist()
    t, n = both(run)
    assert t == n == (False, False, [2.0, 2.0, 2.0])


def test_user_held_gradient_through_mul_is_a_new_tensor():
    def run(L):
        x = L.ones(2, 3, requires_grad=True)
        g = L.ones(2, 3)
        (x * 2).backward(g)
        return x.grad is g, x.grad.data_ptr() == g.data_ptr(), x.grad.tolist()
    t, n = both(run)
    assert t == n
    assert t[:2] == (False, False)


@pytest.mark.parametrize("how", ["view", "reshape", "flatten", "unsqueeze"])
def test_view_backward_gradient_is_stolen(how):
    # The backward of a view is a view of the incoming gradient; nothing else references that
    # new tensor, so AccumulateGrad steals it: x.grad shares memory with the user's gradient.
    def run(L):
        x = L.ones(2, 3, requires_grad=True)
        if how == "view":
            y = x.view(6)
        elif how == "reshape":
            y = x.reshape(3, 2)
        elif how == "flatten":
            y = x.flatten()
        else:
            y = x.unsqueeze(0)
        g = L.arange(6.0).reshape(y.shape)
        y.backward(g)
        return x.grad.data_ptr() == g.data_ptr(), x.grad is g, x.grad.tolist()
    t, n = both(run)
    assert t == n
    assert t[0] is True


def test_gradient_kept_by_a_tensor_hook_is_cloned():
    def run(L):
        x = L.ones(2, 3, requires_grad=True)
        kept = []
        x.register_hook(lambda gr: kept.append(gr))
        y = x.view(6)
        g = L.ones(6)
        y.backward(g)
        return (x.grad.data_ptr() == g.data_ptr(), kept[0].data_ptr() == g.data_ptr(),
                x.grad.data_ptr() == kept[0].data_ptr())
    t, n = both(run)
    assert t == n == (False, True, False)


def test_hook_returning_none_does_not_prevent_stealing():
    def run(L):
        x = L.ones(2, 3, requires_grad=True)
        x.register_hook(lambda gr: None)
        x.register_post_accumulate_grad_hook(lambda t: None)
        y = x.view(6)
        g = L.ones(6)
        y.backward(g)
        return x.grad.data_ptr() == g.data_ptr()
    t, n = both(run)
    assert t == n is True


def test_post_hook_on_accumulate_node_allows_stealing():
    # A post hook on the AccumulateGrad node keeps the incoming gradients alive for the hook:
    # one more expected reference, so the gradient is still stolen.
    def run(L):
        x = L.ones(2, 3, requires_grad=True)
        y = x.view(6)
        acc = y.grad_fn.next_functions[0][0]
        seen = []
        acc.register_hook(lambda gi, go: seen.append(go[0].data_ptr()))
        g = L.ones(6)
        y.backward(g)
        return x.grad.data_ptr() == g.data_ptr(), seen[0] == g.data_ptr(), acc.name()
    t, n = both(run)
    assert t == n
    assert t[:2] == (True, True)


def test_shared_gradient_of_two_leaves_is_cloned():
    def run(L):
        a = L.ones(3, requires_grad=True)
        b = L.ones(3, requires_grad=True)
        (a + b).sum().backward()
        c = L.ones(3, requires_grad=True)
        d = L.ones(3, requires_grad=True)
        g = L.ones(3)
        (c + d).backward(g)
        return (a.grad.data_ptr() == b.grad.data_ptr(), c.grad.data_ptr() == g.data_ptr(),
                d.grad.data_ptr() == g.data_ptr(), c.grad.data_ptr() == d.grad.data_ptr())
    t, n = both(run)
    assert t == n == (False, False, False, False)


# ---------------------------------------------------------------------------- in-place accumulation
def test_accumulation_in_place_keeps_identity_and_data_ptr():
    def run(L):
        x = L.ones(4, requires_grad=True)
        (x * 2).sum().backward()
        g1 = x.grad
        p1 = g1.data_ptr()
        out = []
        for k in range(3):
            (x * float(k + 3)).sum().backward()
            out.append((x.grad is g1, x.grad.data_ptr() == p1, x.grad.tolist()))
        return out
    t, n = both(run)
    assert t == n
    assert all(same and ptr for same, ptr, _ in t)
    assert t[-1][2] == [14.0] * 4


def test_accumulation_into_user_assigned_grad_is_in_place():
    def run(L):
        x = L.ones(3, requires_grad=True)
        mine = L.full((3,), 10.0)
        x.grad = mine
        (x * 2).sum().backward()
        return x.grad is mine, mine.tolist()
    t, n = both(run)
    assert t == n == (True, [12.0, 12.0, 12.0])


def test_accumulation_under_no_grad_outside_backward_unaffected():
    def run(L):
        x = L.ones(2, requires_grad=True)
        with L.no_grad():
            y = x * 2
        (x * 3).sum().backward()
        return y.requires_grad, x.grad.tolist()
    t, n = both(run)
    assert t == n == (False, [3.0, 3.0])


# ---------------------------------------------------------------------------- create_graph
def test_create_graph_first_grad_is_recorded_copy_then_out_of_place():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (x * x).sum().backward(create_graph=True)
            g1 = x.grad
            name1 = g1.grad_fn.name().rsplit("::", 1)[-1]
            label1 = repr(g1).split("grad_fn=<")[1]
            (x * x * x).sum().backward(create_graph=True)
        g2 = x.grad
        return (name1, label1, g2.grad_fn.name(), g2 is g1, g1.tolist(), g2.tolist(),
                g2.requires_grad)
    t, n = both(run)
    assert t == n
    assert t[0] == "CopyBackwards" and t[2] == "AddBackward0" and t[3] is False


def test_create_graph_grad_is_differentiable():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (x ** 3).sum().backward(create_graph=True)
        (h,) = L.autograd.grad(x.grad.sum(), x)
        return x.grad.tolist(), h.tolist()
    t, n = both(run)
    assert t == n == ([3.0, 12.0], [6.0, 12.0])


def test_create_graph_warns_once_like_torch():
    for L in LIBS:
        x = L.ones(2, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(3):
                (x * x).sum().backward(create_graph=True)
        # Once per process: an earlier test may already have triggered it.
        assert len(caught) <= 1
        assert all("create a reference cycle between the parameter and its gradient"
                   in str(w.message) and w.category is UserWarning for w in caught)
        x.grad = None


# ---------------------------------------------------------------------------- layout contract
def _layout(L, make_leaf, op):
    x = make_leaf(L).detach().requires_grad_()
    op(L, x).sum().backward()
    return x.stride(), x.grad.stride(), x.grad.is_contiguous(), x.grad.tolist()


@pytest.mark.parametrize("make_leaf", [
    lambda L: L.arange(12.0).reshape(3, 4).t(),                 # transposed: dense
    lambda L: L.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1),  # permuted: dense
    lambda L: L.arange(24.0).reshape(3, 8)[:, ::2],             # strided: not dense
    lambda L: L.arange(24.0).reshape(4, 6)[1:3, 2:5],           # sliced: not dense
    lambda L: L.arange(12.0).reshape(3, 4),                     # contiguous
], ids=["transposed", "permuted", "step-slice", "sub-block", "contiguous"])
@pytest.mark.parametrize("op", [
    lambda L, x: x * 2.0,
    lambda L, x: x.exp(),
    lambda L, x: x + x,
], ids=["mul", "exp", "add-self"])
def test_layout_contract_first_gradient(make_leaf, op):
    t, n = both(lambda L: _layout(L, make_leaf, op))
    assert t[:3] == n[:3]
    np.testing.assert_allclose(np.array(n[3]), np.array(t[3]), rtol=1e-6)


def test_layout_contract_leaf_gradient_given_noncontiguous():
    def run(L):
        x = L.ones(4, 3, requires_grad=True)
        g = L.arange(12.0).reshape(3, 4).t()
        x.backward(g)
        y = L.ones(3, 4).t().detach().requires_grad_()
        y.backward(L.arange(12.0).reshape(4, 3))
        return x.grad.stride(), x.grad.tolist(), y.stride(), y.grad.stride()
    t, n = both(run)
    assert t == n


def test_layout_contract_kept_by_in_place_accumulation():
    def run(L):
        x = L.arange(12.0).reshape(3, 4).t().detach().requires_grad_()
        (x * 2).sum().backward()
        (x * 3).sum().backward()
        return x.grad.stride(), x.grad.tolist()
    t, n = both(run)
    assert t == n


def test_layout_contract_expanded_gradient_is_not_stolen():
    # sum's backward expands the gradient (0 strides): it does not obey the contract -> copy.
    def run(L):
        x = L.ones(2, 3, requires_grad=True)
        x.sum().backward()
        return x.grad.stride(), x.grad.is_contiguous(), x.grad.tolist()
    t, n = both(run)
    assert t == n


# ---------------------------------------------------------------------------- hooks
def test_leaf_hooks_run_before_and_post_accumulate_hooks_after():
    def run(L):
        log = []
        x = L.zeros(2, requires_grad=True)

        def pre(g):
            log.append(("pre", None if x.grad is None else x.grad.tolist(), g.tolist()))
            return g * 10

        x.register_hook(pre)
        x.register_hook(lambda g: (log.append(("pre2", g.tolist())), None)[1])
        x.register_post_accumulate_grad_hook(lambda t: log.append(("post", t.grad.tolist())))
        (x * 2).sum().backward()
        (x * 3).sum().backward()
        return log
    t, n = both(run)
    assert t == n
    assert t[0] == ("pre", None, [2.0, 2.0]) and t[2] == ("post", [20.0, 20.0])


def test_post_accumulate_hook_receives_the_tensor_and_can_be_removed():
    def run(L):
        x = L.ones(2, requires_grad=True)
        seen = []
        h = x.register_post_accumulate_grad_hook(lambda t: seen.append(t is x))
        (x * 2).sum().backward()
        h.remove()
        (x * 2).sum().backward()
        return seen, x.grad.tolist()
    t, n = both(run)
    assert t == n == ([True], [4.0, 4.0])


def test_post_accumulate_hook_rejected_on_non_leaf():
    for L in LIBS:
        x = L.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered "
                                               "on non-leaf tensors"):
            (x * 2).register_post_accumulate_grad_hook(lambda t: None)


# ---------------------------------------------------------------------------- apply's checks
def test_leaf_moved_into_graph_interior():
    for L in LIBS:
        x = L.zeros(2, requires_grad=True)
        y = x * 2                            # records an edge to x's AccumulateGrad
        x.requires_grad_(False)
        x.add_(L.ones(2, requires_grad=True))  # x now has a grad_fn
        assert x.grad_fn is not None and not x.is_leaf
        with pytest.raises(RuntimeError, match="^leaf variable has been moved into the graph "
                                               "interior$"):
            y.sum().backward()


def test_leaf_that_stopped_requiring_grad_gets_nothing():
    def run(L):
        x = L.zeros(2, requires_grad=True)
        w = L.ones(2, requires_grad=True)
        y = x * w
        x.requires_grad_(False)
        y.sum().backward()
        return x.grad, w.grad.tolist()
    t, n = both(run)
    assert t == n == (None, [0.0, 0.0])


def test_accumulate_grad_node_name_and_edges():
    def run(L):
        x = L.ones(2, requires_grad=True)
        y = x * 2
        acc = y.grad_fn.next_functions[0][0]
        return acc.name(), acc.next_functions, acc.variable is x, y.grad_fn.next_functions[1]
    t, n = both(run)
    assert t == n


def test_accumulate_grad_node_is_shared_by_uses_of_a_leaf():
    def run(L):
        x = L.ones(2, requires_grad=True)
        a = x * 2
        b = x.exp()
        return a.grad_fn.next_functions[0][0] is b.grad_fn.next_functions[0][0]
    t, n = both(run)
    assert t == n is True


def test_integer_dtype_of_gradient_is_cast_to_leaf_dtype():
    def run(L):
        x = L.ones(3, dtype=L.float64, requires_grad=True)
        (x * 2).backward(L.ones(3, dtype=L.float32))
        return str(x.grad.dtype).split(".")[1], x.grad.tolist()
    t, n = both(run)
    assert t == n == ("float64", [2.0, 2.0, 2.0])


# ---------------------------------------------------------------------------- threads
@pytest.mark.parametrize("size", [5, 4096])
def test_concurrent_backward_on_shared_leaves_sums_exactly(size):
    n_threads, iters = 8, 200

    def run(L):
        w = L.ones(size, dtype=L.float64, requires_grad=True)
        b = L.ones(size, dtype=L.float64, requires_grad=True)
        barrier = threading.Barrier(n_threads)
        errors = []

        def work(k):
            try:
                barrier.wait()
                for _ in range(iters):
                    y = (w * float(k + 1) + b * 2.0).sum()
                    y.backward()
            except Exception as e:  # pragma: no cover - reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(n_threads)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        return errors, set(w.grad.tolist()), set(b.grad.tolist())

    expected_w = float(iters * sum(range(1, n_threads + 1)))
    expected_b = float(2 * iters * n_threads)
    t, n = both(run)
    assert t == n == ([], {expected_w}, {expected_b})


def test_create_graph_warning_emitted_once_in_a_fresh_process():
    import subprocess
    import sys
    code = (
        "import warnings, torch, ndgrad\n"
        "warnings.simplefilter('always')\n"
        "for L in (torch, ndgrad):\n"
        "    x = L.ones(2, requires_grad=True)\n"
        "    with warnings.catch_warnings(record=True) as w:\n"
        "        warnings.simplefilter('always')\n"
        "        for _ in range(2):\n"
        "            (x * x).sum().backward(create_graph=True)\n"
        "    print(len(w), w[0].category.__name__, str(w[0].message)[:60])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert len(out) == 2 and out[0] == out[1]
    assert out[0].startswith("1 UserWarning Using backward() with create_graph=True")


def test_create_graph_interplay_with_retain_grad_and_later_plain_backward():
    def run(L):
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x = L.tensor([1.0, 2.0], requires_grad=True)
            y = x * x
            y.retain_grad()
            (y * y).sum().backward(create_graph=True)
            out.append((y.grad.requires_grad, y.grad.grad_fn.name(),
                        x.grad.grad_fn.name().rsplit("::", 1)[-1]))
            (y * y).sum().backward(create_graph=True)
            out.append((y.grad.tolist(), y.grad.grad_fn.name(), x.grad.grad_fn.name()))
            x = L.tensor([1.0, 2.0], requires_grad=True)
            (x * x).sum().backward(create_graph=True)
            g = x.grad
            (x * x).sum().backward()          # grad mode off: in place into the graph's grad
            out.append((x.grad is g, x.grad.requires_grad, x.grad.tolist()))
        return out
    t, n = both(run)
    assert t == n


def test_zeroed_grad_keeps_accumulating_in_place():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        (x * 2).sum().backward()
        g = x.grad
        x.grad.zero_()
        (x * 3).sum().backward()
        return x.grad is g, x.grad.tolist()
    t, n = both(run)
    assert t == n == (True, [3.0, 3.0])


def test_existing_grad_with_history_accumulates_out_of_place():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        x.grad = L.ones(2, requires_grad=True) * 1
        (x * 3).sum().backward()
        return x.grad.tolist(), x.grad.requires_grad, x.grad.grad_fn is not None
    t, n = both(run)
    assert t == n == ([4.0, 4.0], True, True)


@pytest.mark.parametrize("ret", ["tensor", "int"])
def test_post_accumulate_hook_must_return_none(ret):
    # torch: a Tensor returned is a RuntimeError, anything else a TypeError; .grad stays set
    def run(lib):
        t = lib.ones(2, requires_grad=True)
        t.register_post_accumulate_grad_hook(
            (lambda p: p * 3) if ret == "tensor" else (lambda p: 1))
        try:
            (t * 2).sum().backward()
        except Exception as e:  # noqa: BLE001 - compared below
            return type(e), str(e), t.grad.tolist()
        return None
    got, want = run(ndgrad), run(torch)
    assert got == want
