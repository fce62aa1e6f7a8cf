"""The lean paths of a compiled call (ndgrad/jit/api.py, executor.py, blas_threads.py): the kept
last specialization's guard (Note [The last specialization's fast check]), the compiled node
accumulating its leaves' gradients itself (Note [A compiled node accumulates its leaves]) and
the TT form of small ``g @ t(W)`` products (Note [Small products with a transposed second
operand]). Each behaves as the general path and as eager does: same values, the same
``.grad`` objects, versions and memory sharing, hooks, errors; checked against eager ndgrad
and, for memory sharing, torch."""

import threading

import numpy as np
import pytest
import torch

import ndgrad
from ndgrad.jit import blas_threads, codegen, executor


def leaves(*shapes, seed=0, requires_grad=True):
    rng = np.random.default_rng(seed)
    return [ndgrad.tensor(rng.standard_normal(s), requires_grad=requires_grad) for s in shapes]


def mlp(x, w1, b1, w2, b2):
    return ((x @ w1 + b1).tanh() @ w2 + b2).pow(2).mean()


def _copy(ts):
    return [t.detach().clone().requires_grad_(t.requires_grad) for t in ts]


def _spy_leaf_path(monkeypatch):
    """Count the compiled node's direct accumulations (True) and refusals (False)."""
    seen = []
    real = executor.DifferentiableGraphBackward._to_leaves

    def spy(self, outs, task):
        r = real(self, outs, task)
        seen.append(r)
        return r
    monkeypatch.setattr(executor.DifferentiableGraphBackward, "_to_leaves", spy)
    return seen


# ---------------------------------------------------------------- the node accumulates its leaves
def test_leaf_gradients_objects_and_versions_match_eager(monkeypatch):
    seen = _spy_leaf_path(monkeypatch)
    x, w1, b1, w2, b2 = leaves((4, 3), (3, 5), (5,), (5, 2), (2,))
    e = [x, *_copy([w1, b1, w2, b2])]
    cf = ndgrad.compile(mlp)
    cf(x, w1, b1, w2, b2)                # traces
    for step in range(3):
        if step == 2:
            for t in (w1, b1, w2, b2, *e[1:]):
                t.grad = None
        before_c = [t.grad for t in (w1, b1, w2, b2)]
        before_e = [t.grad for t in e[1:]]
        vers_c = [None if g is None else g._version for g in before_c]
        vers_e = [None if g is None else g._version for g in before_e]
        cf(x, w1, b1, w2, b2).backward()
        mlp(*e).backward()
        for c, ce, bc, be, vc, ve, leaf in zip((w1, b1, w2, b2), e[1:], before_c, before_e,
                                               vers_c, vers_e, (w1, b1, w2, b2)):
            np.testing.assert_allclose(c.grad.numpy(), ce.grad.numpy(), rtol=1e-12)
            # first gradient stolen (a new tensor), later ones added in place (same object,
            # version bumped), exactly as eager
            assert (c.grad is bc) == (ce.grad is be)
            if bc is not None:
                assert c.grad._version - vc == ce.grad._version - ve
            assert c.grad.stride() == ce.grad.stride() == leaf.stride()
    assert seen and all(seen)


def test_leaf_hooks_and_post_accumulate_hooks_run_as_eager(monkeypatch):
    seen = _spy_leaf_path(monkeypatch)
    for compile_it in (False, True):
        x, w1, b1, w2, b2 = leaves((4, 3), (3, 5), (5,), (5, 2), (2,))
        f = ndgrad.compile(mlp) if compile_it else mlp
        f(x, w1, b1, w2, b2)
        log = []
        w1.register_hook(lambda g, log=log: log.append("w1") or g * 2)
        b2.register_post_accumulate_grad_hook(
            lambda t, log=log: log.append(("b2", t.grad.sum().item())))
        f(x, w1, b1, w2, b2).backward()
        if compile_it:
            c_log, c_w1 = log, w1.grad.numpy()
        else:
            e_log, e_w1 = log, w1.grad.numpy()
    # the same hooks with the same values (their order is the one node's edge order, inputs
    # first, where eager's per-layer nodes reach the last layer's leaves first)
    assert sorted(map(str, c_log)) == sorted(map(str, e_log)) and len(c_log) == 2
    np.testing.assert_allclose(c_w1, e_w1, rtol=1e-12)
    assert not any(seen)      # a hook on a leaf: the engine's general path


def test_post_accumulate_hook_without_tensor_hooks_runs_once(monkeypatch):
    seen = _spy_leaf_path(monkeypatch)
    x, w1, b1, w2, b2 = leaves((4, 3), (3, 5), (5,), (5, 2), (2,))
    cf = ndgrad.compile(mlp)
    cf(x, w1, b1, w2, b2)
    calls = []
    w2.register_post_accumulate_grad_hook(lambda t: calls.append(t.grad.clone()))
    cf(x, w1, b1, w2, b2).backward()
    assert seen == [True] and len(calls) == 1
    np.testing.assert_array_equal(calls[0].numpy(), w2.grad.numpy())


def test_hooks_on_the_node_and_on_an_accumulator_see_the_gradients(monkeypatch):
    seen = _spy_leaf_path(monkeypatch)
    x, w1, b1, w2, b2 = leaves((4, 3), (3, 5), (5,), (5, 2), (2,))
    cf = ndgrad.compile(mlp)
    cf(x, w1, b1, w2, b2)
    loss = cf(x, w1, b1, w2, b2)
    got = []
    loss.grad_fn.register_hook(lambda gi, go: got.append([g is not None for g in gi]))
    loss.backward()
    assert got == [[True] * 5] and w1.grad is not None       # x requires grad too
    assert seen == []           # a hook on the node: it hands its gradients to the engine
    loss = cf(x, w1, b1, w2, b2)
    acc = loss.grad_fn.next_functions[1][0]
    assert acc.name() == "torch::autograd::AccumulateGrad" and acc.variable is w1
    pre = []
    acc.register_prehook(lambda go: pre.append(go[0].shape))
    loss.backward()
    assert pre == [ndgrad.Size([3, 5])]
    assert seen == [False]      # a hook on an accumulator: the engine's general path


def test_grad_and_backward_inputs_do_not_accumulate_elsewhere():
    x, w1, b1, w2, b2 = leaves((4, 3), (3, 5), (5,), (5, 2), (2,))
    cf = ndgrad.compile(mlp)
    cf(x, w1, b1, w2, b2)
    (g,) = ndgrad.autograd.grad(cf(x, w1, b1, w2, b2), [w2])
    assert all(t.grad is None for t in (w1, b1, w2, b2))
    cf(x, w1, b1, w2, b2).backward(inputs=[b1])
    assert b1.grad is not None and all(t.grad is None for t in (w1, w2, b2))
    e = _copy([w1, b1, w2, b2])
    (ge,) = ndgrad.autograd.grad(mlp(x, *e), [e[2]])
    np.testing.assert_allclose(g.numpy(), ge.numpy(), rtol=1e-12)


def test_a_leaf_also_used_outside_the_compiled_function(monkeypatch):
    seen = _spy_leaf_path(monkeypatch)
    x, w1, b1, w2, b2 = leaves((4, 3), (3, 5), (5,), (5, 2), (2,))
    cf = ndgrad.compile(mlp)
    cf(x, w1, b1, w2, b2)
    (cf(x, w1, b1, w2, b2) + (w2 * 3).sum()).backward()
    e = _copy([w1, b1, w2, b2])
    (mlp(x, *e) + (e[2] * 3).sum()).backward()
    for c, ce in zip((w1, b1, w2, b2), e):
        np.testing.assert_allclose(c.grad.numpy(), ce.grad.numpy(), rtol=1e-12)
    assert not any(seen)      # the node is not alone with its leaves


def test_retain_graph_twice_then_the_second_backward_error():
    x, w1, b1, w2, b2 = leaves((4, 3), (3, 5), (5,), (5, 2), (2,))
    cf = ndgrad.compile(mlp)
    cf(x, w1, b1, w2, b2)
    loss = cf(x, w1, b1, w2, b2)
    loss.backward(retain_graph=True)
    first = w1.grad.clone()
    loss.backward()
    np.testing.assert_allclose(w1.grad.numpy(), 2 * first.numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


def test_a_column_major_leaf_gets_a_gradient_of_its_layout():
    rng = np.random.default_rng(1)
    x = ndgrad.tensor(rng.standard_normal((4, 3)))
    for compile_it in (False, True):
        w = ndgrad.tensor(np.asfortranarray(rng.standard_normal((3, 5))), requires_grad=True)
        f = (lambda x, w: (x @ w).tanh().sum())
        f = ndgrad.compile(f) if compile_it else f
        f(x, w)
        w.grad = None
        f(x, w).backward()
        assert w.grad.stride() == w.stride() == (1, 3)


def test_a_gradient_handed_on_does_not_share_the_callers_memory():
    # df returns its incoming gradient for w: eager hands the same Tensor on and
    # AccumulateGrad copies it (the caller holds it); torch agrees
    cf = ndgrad.compile(lambda w, x: w + x)
    w, x = ndgrad.ones(3, requires_grad=True), ndgrad.ones(3)
    cf(w, x)
    for _ in range(2):
        w.grad = None
        g = ndgrad.tensor([1.0, 2.0, 3.0])
        cf(w, x).backward(g)
        assert not np.shares_memory(w.grad.numpy(), g.numpy())
        assert w.grad.tolist() == [1.0, 2.0, 3.0]
    wt = torch.ones(3, requires_grad=True)
    gt = torch.tensor([1.0, 2.0, 3.0])
    (wt + 1).backward(gt)
    assert wt.grad.data_ptr() != gt.data_ptr()


def test_one_array_returned_for_two_leaves_gives_two_gradients():
    # both gradients of (a + b) * c are the same g * c: two leaves must not share one array
    cf = ndgrad.compile(lambda a, b, c: ((a + b) * c).sum())
    a, b = ndgrad.ones(3, requires_grad=True), ndgrad.ones(3, requires_grad=True)
    c = ndgrad.tensor([1.0, 2.0, 3.0])
    cf(a, b, c)
    for _ in range(2):
        a.grad = b.grad = None
        cf(a, b, c).backward()
        assert a.grad.tolist() == b.grad.tolist() == [1.0, 2.0, 3.0]
        assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())
        a.grad.add_(1)
        assert b.grad.tolist() == [1.0, 2.0, 3.0]
    at, bt = torch.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    ((at + bt) * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert at.grad.data_ptr() != bt.grad.data_ptr()


def test_the_same_leaf_passed_twice_sums_its_gradients():
    cf = ndgrad.compile(lambda a, b: (a * b.exp()).sum())
    (w,) = leaves((3,))
    cf(w, w)
    w.grad = None
    cf(w, w).backward()
    we = w.detach().requires_grad_(True)
    (we * we.exp()).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), we.grad.numpy(), rtol=1e-12)


# ---------------------------------------------------------------- the kept specialization's guard
def test_the_fast_guard_misses_on_every_change_of_the_key():
    cf = ndgrad.compile(lambda a, b: a * b + 1)
    a, b = ndgrad.ones(2, requires_grad=True), ndgrad.ones(2)
    cf(a, b)
    assert cf._fast is not None and len(cf.specializations()) == 1
    assert cf(a, b).grad_fn.name() == "DifferentiableGraphBackward"
    assert cf(ndgrad.ones(3), ndgrad.ones(3)).shape == (3,)       # shape: retraced
    assert cf(a, ndgrad.ones(2, dtype=ndgrad.float64)).dtype == ndgrad.float64   # dtype
    assert cf(a.detach(), b).grad_fn is None                      # requires_grad
    with ndgrad.no_grad():
        assert cf(a, b).grad_fn is None                           # grad mode
    with ndgrad.inference_mode():
        assert cf(a, b).is_inference()                            # inference mode
    assert len(cf.specializations()) == 6
    b.requires_grad_(True)                                        # the same object changed
    y = cf(a, b)
    y.sum().backward()
    assert b.grad.tolist() == [1.0, 1.0] and len(cf.specializations()) == 7
    a.data = ndgrad.ones(3)                                       # and its shape
    assert cf(a, ndgrad.ones(3)).shape == (3,)


def test_the_fast_guard_respects_aliasing_and_non_tensor_arguments():
    calls = []

    def f(a, b):
        calls.append(1)
        return a.add_(1) + b        # an in-place write: aliasing changes the result

    cf = ndgrad.compile(f)
    a, b = ndgrad.zeros(2), ndgrad.zeros(2)
    assert cf(a, b).tolist() == [1.0, 1.0]
    assert cf(a, b).tolist() == [2.0, 2.0]
    c = ndgrad.zeros(2)
    assert cf(c, c).tolist() == [2.0, 2.0]           # the same tensor twice: traced anew
    assert len(cf.specializations()) == 2
    g = ndgrad.compile(lambda x, s: x * s)
    x = ndgrad.ones(2)
    assert g(x, 2.0).tolist() == [2.0, 2.0] and g._fast is None
    assert g(x, 3.0).tolist() == [3.0, 3.0]


def test_the_fast_guard_with_autocast_and_lifted_tensors():
    w = ndgrad.ones(2, 2, dtype=ndgrad.float32)
    cf = ndgrad.compile(lambda x: x @ w)
    x = ndgrad.ones(2, 2, dtype=ndgrad.float32)
    cf(x)
    assert cf._fast is None                  # a lifted tensor: the full path checks it
    h = ndgrad.compile(lambda x, y: x @ y)
    h(x, x.clone())
    with ndgrad.autocast("cpu", dtype=ndgrad.bfloat16):
        assert h(x, x.clone()).dtype == ndgrad.bfloat16
    assert h(x, x.clone()).dtype == ndgrad.float32


def test_threads_with_different_kinds_of_input_share_one_function():
    cf = ndgrad.compile(lambda x, w: (x @ w).tanh().sum())
    errors = []

    def work(k):
        try:
            x, w = leaves((3 + k, 4), (4, 2), seed=k)
            for _ in range(30):
                w.grad = None
                cf(x, w).backward()
            we = w.detach().requires_grad_(True)
            (x @ we).tanh().sum().backward()
            np.testing.assert_allclose(w.grad.numpy(), we.grad.numpy(), rtol=1e-12)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors and len(cf.specializations()) == 3


# ---------------------------------------------------------------- TT products and BLAS threads
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tt_form_products_equal_the_plain_ones(monkeypatch, dtype):
    monkeypatch.setattr(codegen, "column_major_first_is_faster", lambda m, k, n, d: True)
    rng = np.random.default_rng(2)
    x = ndgrad.tensor(rng.standard_normal((6, 5)).astype(dtype))
    w1 = ndgrad.tensor(rng.standard_normal((5, 7)).astype(dtype), requires_grad=True)
    w2 = ndgrad.tensor(rng.standard_normal((7, 3)).astype(dtype), requires_grad=True)
    f = (lambda x, w1, w2: ((x @ w1).tanh() @ w2).pow(2).sum())
    cf = ndgrad.compile(f)
    cf(x, w1, w2)
    cf(x, w1, w2).backward()
    assert "asfortranarray" in cf.code      # df's h.grad = g @ t(w2)
    e1, e2 = w1.detach().requires_grad_(True), w2.detach().requires_grad_(True)
    f(x, e1, e2).backward()
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(w1.grad.numpy(), e1.grad.numpy(), rtol=tol)
    np.testing.assert_allclose(w2.grad.numpy(), e2.grad.numpy(), rtol=tol)


def test_tt_choice_is_measured_once_per_shape():
    key = (64, 32, 48, np.dtype(np.float64))
    blas_threads._tt_choice.pop(key, None)
    r = blas_threads.column_major_first_is_faster(64, 32, 48, np.float64)
    assert isinstance(r, bool) and blas_threads._tt_choice[key] is r
    assert blas_threads.column_major_first_is_faster(64, 32, 48, np.float64) is r
    # tiny products are not measured
    assert blas_threads.column_major_first_is_faster(3, 4, 5, np.float64) is False
    assert (3, 4, 5, np.dtype(np.float64)) not in blas_threads._tt_choice


def test_single_threaded_run_restores_the_count_when_it_raises():
    found = blas_threads._find()
    get = found[0] if found is not None else (lambda: None)
    before = get()

    def boom():
        if found is not None:
            assert get() == 1
        raise ValueError("boom")
    with pytest.raises(ValueError, match="boom"):
        blas_threads.run_single_threaded(boom, ())
    assert get() == before and blas_threads._depth[0] == 0


def test_a_gradient_off_the_fast_layout_goes_through_the_engines_checks(monkeypatch):
    seen = _spy_leaf_path(monkeypatch)
    checked = []
    real = executor._check_gradient
    monkeypatch.setattr(executor, "_check_gradient",
                        lambda node, i, g, meta: checked.append(i) or real(node, i, g, meta))
    x, w1, b1, w2, b2 = leaves((4, 3), (3, 5), (5,), (5, 2), (2,))
    cf = ndgrad.compile(mlp)
    cf(x, w1, b1, w2, b2)
    plan = cf.specializations()[0]._plan
    # pretend w2's gradient had another dtype than the one the fast path expects
    lays = list(plan.grad_layouts)
    lays[3] = (lays[3][0], np.dtype(np.float32), lays[3][2])
    monkeypatch.setattr(plan, "grad_layouts", tuple(lays))
    cf(x, w1, b1, w2, b2).backward()
    e = _copy([w1, b1, w2, b2])
    mlp(x, *e).backward()
    assert seen == [True] and checked == [3]
    for c, ce in zip((w1, b1, w2, b2), e):
        np.testing.assert_allclose(c.grad.numpy(), ce.grad.numpy(), rtol=1e-12)
