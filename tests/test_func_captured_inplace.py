"""torch.func's refusal of in-place ops on captured tensors (Note [Captured tensors] in
ndgrad/ops/views_inplace.py), case by case against torch."""

import re

import numpy as np
import pytest
import torch

import ndgrad

from _compare import outcome


def _captured_add(m, buf, x):
    buf.add_(x)
    return x.sum()


def _captured_add_constant(m, buf, x):
    buf.add_(1.0)                      # a value that does not depend on x: refused too
    return (x * buf).sum()


def _captured_copy(m, buf, x):
    buf.copy_(x)
    return x.sum()


def _captured_setitem(m, buf, x):
    buf[0] = x[0]
    return x.sum()


def _captured_under_no_grad(m, buf, x):
    with m.no_grad():
        buf.mul_(2.0)
    return x.sum()


def _captured_view(m, buf, x):
    buf[:2].add_(1.0)
    return x.sum()


def _captured_data(m, buf, x):
    buf.data.add_(1.0)
    return x.sum()


def _captured_fill(m, buf, x):
    buf.fill_(2.0)
    return x.sum()


def _captured_zero(m, buf, x):
    buf.zero_()
    return x.sum()


def _captured_detach_(m, buf, x):
    buf.detach_()
    return x.sum()


def _captured_resize_(m, buf, x):
    buf.resize_(3)
    return x.sum()


def _captured_unsqueeze_(m, buf, x):
    buf.unsqueeze_(0)
    return x.sum()


def _local_detach_resize(m, buf, x):
    y = (x * 2).detach_()
    z = m.zeros(2, dtype=m.float64).resize_(3)
    return (x * y).sum() + z.sum() * 0


def _local_tensor(m, buf, x):
    b = m.zeros(3, dtype=m.float64)    # created inside: may be modified
    b.add_(x)
    b[0] = 5.0
    b[1:].mul_(2.0)
    return (b * x).sum()


def _input_detached(m, buf, x):
    x.detach().add_(0.0)               # the transform's input (a detached alias of it)
    return (x * x).sum()


def _out_argument(m, buf, x):
    m.add(m.ones(3, dtype=m.float64), 1.0, out=buf)   # out= is not checked by torch
    return x.sum()


CASES = [_captured_add, _captured_add_constant, _captured_copy, _captured_setitem,
         _captured_under_no_grad, _captured_view, _captured_data, _captured_fill,
         _captured_zero, _captured_detach_, _captured_resize_, _captured_unsqueeze_,
         _local_detach_resize, _local_tensor, _input_detached, _out_argument]


def _run(m, transform, case):
    buf = m.zeros(3, dtype=m.float64)
    x = m.tensor([1.0, 2.0, 3.0], dtype=m.float64)

    def f(x):
        return case(m, buf, x)
    if transform == "grad":
        res = m.func.grad(f)(x)
    elif transform == "vjp":
        res = m.func.vjp(f, x)[1](m.tensor(1.0, dtype=m.float64))[0]
    elif transform == "jvp":
        res = m.func.jvp(f, (x,), (m.ones(3, dtype=m.float64),))[1]
    elif transform == "jacrev":
        res = m.func.jacrev(f)(x)
    else:
        res = m.func.jacfwd(f)(x)
    return res.detach().numpy().copy(), buf.numpy().copy()


def _normalized(o):
    if o[0] == "ok":
        return o
    # torch names the overload (aten::add_.Tensor); ndgrad names the method (aten::add_)
    return o[0], re.sub(r"\(aten::[a-z_]+(\.[A-Za-z_]+)?\)", "(aten::op)", o[1])


@pytest.mark.parametrize("transform", ["grad", "vjp", "jvp", "jacrev", "jacfwd"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_inplace_on_captured_tensor_as_torch(transform, case):
    t = _normalized(outcome(lambda: _run(torch, transform, case)))
    n = _normalized(outcome(lambda: _run(ndgrad, transform, case)))
    assert t[0] == n[0], (t, n)
    if t[0] == "ok":
        np.testing.assert_allclose(n[1][0], t[1][0])
        np.testing.assert_allclose(n[1][1], t[1][1])
    else:
        assert n[1] == t[1]
        assert "would mutate a captured Tensor" in n[1]


def test_message_names_the_method_and_nothing_is_written():
    buf = ndgrad.zeros(3)
    with pytest.raises(RuntimeError, match=r"in-place operation \(aten::mul_\) that would"):
        ndgrad.func.grad(lambda x: (buf.mul_(x), x.sum())[1])(ndgrad.ones(3))
    assert buf._version == 0 and buf.tolist() == [0.0, 0.0, 0.0]


def _nested_outer_tensor(m):
    def outer(x):
        b = m.zeros(3)                 # the outer call's own tensor, captured by the inner one

        def inner(y):
            b.add_(y)
            return y.sum()
        return m.func.grad(inner)(x).sum()
    return m.func.grad(outer)(m.ones(3))


def _nested_inner_tensor(m):
    def outer(x):
        def inner(y):
            b = m.zeros(3)
            b.add_(y)
            return (b * y).sum()
        return m.func.grad(inner)(x).sum()
    return m.func.grad(outer)(m.ones(3)).tolist()


def _vmap_inside_grad(m):
    buf = m.zeros(3)

    def f(x):
        def g(r):
            buf.mul_(2.0)
            return r.sum()
        return m.func.vmap(g)(x.reshape(1, 3)).sum()
    return m.func.grad(f)(m.ones(3))


def _grad_inside_vmap(m):
    def per(xs):
        b = m.zeros(3)                 # made in vmap but outside grad: captured by grad

        def f(r):
            b.add_(1.0)
            return r.sum()
        return m.func.grad(f)(xs)
    return m.func.vmap(per)(m.ones(2, 3))


def _created_in_vmap_inside_grad(m):
    def f(x):
        def g(r):
            b = m.zeros(3)
            b.add_(1.0)
            return (r * b).sum()
        return m.func.vmap(g)(x.reshape(1, 3)).sum()
    return m.func.grad(f)(m.ones(3)).tolist()


@pytest.mark.parametrize("case", [_nested_outer_tensor, _nested_inner_tensor, _vmap_inside_grad,
                                  _grad_inside_vmap, _created_in_vmap_inside_grad],
                         ids=lambda c: c.__name__)
def test_nested_transforms_as_torch(case):
    t = _normalized(outcome(lambda: case(torch)))
    n = _normalized(outcome(lambda: case(ndgrad)))
    assert t == n


def test_outside_transforms_nothing_changes():
    buf = ndgrad.zeros(3)
    ndgrad.func.grad(lambda x: (x * 2).sum())(ndgrad.ones(3))
    buf.add_(1.0)                      # no transform live: allowed
    with ndgrad.no_grad():
        buf.mul_(2.0)
    assert buf.tolist() == [2.0, 2.0, 2.0]


def test_outputs_of_a_compiled_function_are_the_transforms_own():
    # ndgrad.compile's results are created inside the call: modifying them is allowed (as
    # torch.compile's under torch.func.grad), a compiled result made outside is captured
    h = ndgrad.compile(lambda x: x * 2 + 1)

    def f(m, fn):
        def inner(x):
            y = fn(x)
            y.add_(1)
            return (y * x).sum()
        return inner
    got = ndgrad.func.grad(f(ndgrad, h))(ndgrad.ones(3))
    want = torch.func.grad(f(torch, lambda x: x * 2 + 1))(torch.ones(3))
    assert got.tolist() == want.tolist()
    outside = h(ndgrad.ones(3))
    with pytest.raises(RuntimeError, match="would mutate a captured Tensor"):
        ndgrad.func.grad(lambda x: (outside.add_(1), x.sum())[1])(ndgrad.ones(3))


# every way of making a tensor inside the function makes one the function may modify (torch
# refuses copy/deepcopy/save-load/from_dlpack inside a transform for reasons of its own)
MADE_INSIDE = {
    "parameter": lambda m, x: m.nn.Parameter(m.zeros(3), requires_grad=False),
    "module_weight": lambda m, x: m.nn.Linear(2, 2).weight.detach(),
    "new_zeros": lambda m, x: x.new_zeros(3),
    "new_tensor": lambda m, x: x.new_tensor([1.0, 2.0]),
    "new_full": lambda m, x: x.new_full((3,), 2.0),
    "from_numpy": lambda m, x: m.from_numpy(np.zeros(3)),
    "as_tensor": lambda m, x: m.as_tensor(np.zeros(3)),
    "zeros_like": lambda m, x: m.zeros_like(x),
    "empty_strided": lambda m, x: m.empty_strided((2, 2), (1, 2)),
    "arange": lambda m, x: m.arange(3.0),
    "randn": lambda m, x: m.randn(3),
    "randperm": lambda m, x: m.randperm(3),
    "cat": lambda m, x: m.cat([m.zeros(2), m.ones(2)]),
    "mask_index": lambda m, x: m.zeros(4)[m.tensor([True, False, True, True])],
    "unbind": lambda m, x: m.zeros(2, 3).unbind(0)[0],
    "to_dtype": lambda m, x: m.zeros(3).to(m.float64),
    "legacy": lambda m, x: m.FloatTensor(3).zero_(),
    "linalg": lambda m, x: m.linalg.inv(m.eye(2)),
    "fft": lambda m, x: m.fft.rfft(x).real,
    "sparse_to_dense": lambda m, x: m.zeros(2, 2).to_sparse().to_dense(),
    "autograd_grad": lambda m, x: m.autograd.grad((x * x).sum(), x, create_graph=True)[0],
    "detach_of_input": lambda m, x: x.detach(),
    "data_of_input": lambda m, x: x.data,
}


@pytest.mark.parametrize("make", sorted(MADE_INSIDE))
def test_tensors_made_inside_may_be_modified(make):
    def run(m):
        def f(x):
            b = MADE_INSIDE[make](m, x)
            b.add_(1) if not b.is_floating_point() else b.add_(1.0)
            return x.sum()
        return m.func.grad(f)(m.ones(3)).tolist()
    assert outcome(lambda: run(torch)) == outcome(lambda: run(ndgrad))


_INNER_RESULTS = {
    "jvp_primal": lambda lib, F, x: F.jvp(lambda y: y.sin(), (x,), (lib.ones_like(x),))[0],
    "jvp_tangent": lambda lib, F, x: F.jvp(lambda y: y.sin(), (x,), (lib.ones_like(x),))[1],
    "vjp_out": lambda lib, F, x: F.vjp(lambda y: y.sin(), x)[0],
    "vjp_fn": lambda lib, F, x: F.vjp(lambda y: y.sin(), x)[1](lib.ones_like(x))[0],
    "jacfwd": lambda lib, F, x: F.jacfwd(lambda y: y.sin())(x).sum(0),
    "jacrev": lambda lib, F, x: F.jacrev(lambda y: y.sin())(x).sum(0),
    "grad_and_value": lambda lib, F, x: F.grad_and_value(lambda y: y.sin().sum())(x)[0],
}


@pytest.mark.parametrize("case", sorted(_INNER_RESULTS))
def test_an_inner_transforms_results_belong_to_the_enclosing_call(case):
    # torch: what an inner vjp/jvp returns is the outer level's own tensor, writable in place
    def run(lib):
        F = lib.func

        def f(x):
            y = _INNER_RESULTS[case](lib, F, x)
            y.mul_(2)
            return (y * x).sum()
        return F.grad(f)(lib.tensor([0.5, 1.0, 2.0], dtype=lib.float64))
    np.testing.assert_allclose(run(ndgrad).numpy(), run(torch).numpy(), rtol=1e-12)


def test_overlapping_transforms_in_two_threads_leave_no_transform_behind():
    # each thread has its own innermost call; leaving them out of order must not leave a
    # transform live for the main thread (an optimizer's param.add_ would then be refused)
    import threading
    F = ndgrad.func
    w = ndgrad.ones(3)
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    errors = []

    def fa(x):
        a_in.set()
        b_in.wait(10)
        return (x * x).sum()

    def fb(x):
        b_in.set()
        a_out.wait(10)
        try:
            w.add_(1)              # captured, in this thread's transform: refused
        except RuntimeError as e:
            errors.append(str(e))
        return (x * x).sum()

    def tb():
        a_in.wait(10)
        F.grad(fb)(ndgrad.ones(2))
    b = threading.Thread(target=tb)
    b.start()
    F.grad(fa)(ndgrad.ones(2))
    a_out.set()
    b.join()
    w.add_(1)                      # no transform live any more
    assert w.tolist() == [2.0, 2.0, 2.0]
    assert len(errors) == 1 and "captured Tensor" in errors[0]
    from ndgrad.ops import _dispatch
    assert _dispatch._TRANSFORM == 0


_REQUIRES_GRAD_CASES = {
    "grad_captured": lambda lib, w: lib.func.grad(
        lambda x: (w.requires_grad_(), (x * w).sum())[1])(lib.ones(3)),
    "grad_own": lambda lib, w: lib.func.grad(
        lambda x: (x * 2).requires_grad_().sum())(lib.ones(3)),
    "grad_fresh_false": lambda lib, w: lib.func.grad(
        lambda x: (x * lib.ones(3).requires_grad_(False)).sum())(lib.ones(3)),
    "jvp": lambda lib, w: lib.func.jvp(
        lambda x: (w.requires_grad_(), x * w)[1], (lib.ones(3),), (lib.ones(3),)),
    "vmap": lambda lib, w: lib.func.vmap(lambda x: x.requires_grad_())(lib.ones(2, 3)),
    "vmap_captured": lambda lib, w: lib.func.vmap(
        lambda x: (w.requires_grad_(), x * 2)[1])(lib.ones(2, 3)),
}


@pytest.mark.parametrize("case", sorted(_REQUIRES_GRAD_CASES))
def test_requires_grad_inside_a_transform_is_refused_as_torch(case):
    results = [outcome(lambda lib=lib: _REQUIRES_GRAD_CASES[case](lib, lib.ones(3)))
               for lib in (ndgrad, torch)]
    assert results[0][0] == results[1][0] == "RuntimeError", results
    assert "inside of a function being transformed by a functorch transform" in results[0][1]


def test_requires_grad_outside_transforms_and_the_setter_inside_still_work():
    w = ndgrad.ones(3)

    def f(x):
        v = ndgrad.ones(3)
        v.requires_grad = True        # the attribute's setter is allowed, as in torch
        return (x * v).sum()
    np.testing.assert_allclose(ndgrad.func.grad(f)(ndgrad.ones(3)).detach().numpy(), np.ones(3))
    assert w.requires_grad_().requires_grad      # no transform live any more
