"""``ndgrad.autograd.functional`` against ``torch.autograd.functional``: values, result
structures (Tensor vs tuple, tuple of tuples), shapes, ``create_graph`` (results that can be
differentiated again), ``strict`` errors and argument errors, for vjp, jvp, jacobian (both
strategies, looped and vectorized), hessian (both outer strategies), hvp and vhp."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ndgrad
from ndgrad.autograd import api as nd_api
from ndgrad.autograd import functional as F

# PyTorch's forward-mode jacobian goes through torch.jit internals that warn.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

RNG = np.random.default_rng(7)
X = RNG.uniform(-1.0, 1.0, (3,))
Y = RNG.uniform(-1.0, 1.0, (2, 3))
W = RNG.uniform(-1.0, 1.0, (4, 3))
V_OUT = RNG.uniform(-1.0, 1.0, (4,))
XR, YR = X[::-1].copy(), Y[::-1].copy()


def fn_module(m):
    return ndgrad.autograd.functional if m is ndgrad else torch.autograd.functional


def T(m, a, requires_grad=False):
    return m.tensor(a, dtype=m.float64, requires_grad=requires_grad)


# Functions of one input / of two inputs, returning one tensor / a tuple.
def f_single(m, x):
    return (m.tensor(W, dtype=m.float64) @ x.sin()) * x.sum()


def f_pair(m, x, y):
    return (y * x).exp().sum(0), (x * x).prod()


def f_tuple_in_single_out(m, x, y):
    return (y @ x).tanh()


def s_single(m, x):
    return (x.exp() * x.sin()).sum() + (x[0] * x[1]) ** 2


def s_pair(m, x, y):
    return ((y * x).sum() ** 2) + (x ** 3).sum() * y[0, 1]


def convert(r):
    """Nested tuples of (shape, values, requires_grad) for comparison; lists (PyTorch's
    forward-mode jacobian returns some) are marked as such."""
    if isinstance(r, tuple):
        return tuple(convert(e) for e in r)
    if isinstance(r, list):
        return ("list",) + tuple(convert(e) for e in r)
    a = r.detach().numpy() if isinstance(r, ndgrad.Tensor) else r.detach().numpy(force=True)
    return ("T", tuple(r.shape), np.asarray(a, dtype=np.float64), bool(r.requires_grad))


def assert_same(got, want):
    if isinstance(want, tuple) and want and want[0] == "T":
        assert isinstance(got, tuple) and got[0] == "T"
        assert got[1] == want[1], (got[1], want[1])
        np.testing.assert_allclose(got[2], want[2], rtol=1e-10, atol=1e-12)
        assert got[3] == want[3]
        return
    assert isinstance(got, tuple) and len(got) == len(want)
    if want and want[0] == "list":
        assert got[0] == "list"
        got, want = got[1:], want[1:]
    for g, w in zip(got, want):
        assert_same(g, w)


def outcome(fn):
    try:
        return ("ok", convert(fn()))
    except Exception as e:  # noqa: BLE001
        return (type(e).__name__, str(e).replace("torch.Size", "ndgrad.Size"))


def same_outcome(run):
    got, want = outcome(lambda: run(ndgrad)), outcome(lambda: run(torch))
    assert got[0] == want[0], (got, want)
    if got[0] == "ok":
        assert_same(got[1], want[1])
    else:
        assert got[1] == want[1]
    return got


# ---------------------------------------------------------------------------- values, structure
PRODUCT_CASES = {
    "vjp_single": lambda m, F, kw: F.vjp(lambda x: f_single(m, x), T(m, X), T(m, V_OUT), **kw),
    "vjp_pair": lambda m, F, kw: F.vjp(
        lambda x, y: f_pair(m, x, y), (T(m, X), T(m, Y)), (T(m, X[:3]), T(m, 1.5)), **kw),
    "vjp_scalar_v_none": lambda m, F, kw: F.vjp(lambda x: s_single(m, x), T(m, X), **kw),
    "vjp_tuple_in": lambda m, F, kw: F.vjp(
        lambda x, y: f_tuple_in_single_out(m, x, y), (T(m, X), T(m, Y)), T(m, [0.5, -1.0]),
        **kw),
    "jvp_single": lambda m, F, kw: F.jvp(lambda x: f_single(m, x), T(m, X), T(m, XR),
                                         **kw),
    "jvp_pair": lambda m, F, kw: F.jvp(
        lambda x, y: f_pair(m, x, y), (T(m, X), T(m, Y)), (T(m, X), T(m, YR)), **kw),
    "jvp_scalar_input": lambda m, F, kw: F.jvp(lambda x: x.exp() * 2, T(m, 0.3), **kw),
    "hvp_single": lambda m, F, kw: F.hvp(lambda x: s_single(m, x), T(m, X), T(m, XR),
                                         **kw),
    "hvp_pair": lambda m, F, kw: F.hvp(
        lambda x, y: s_pair(m, x, y), (T(m, X), T(m, Y)), (T(m, X), T(m, Y)), **kw),
    "vhp_single": lambda m, F, kw: F.vhp(lambda x: s_single(m, x), T(m, X), T(m, XR),
                                         **kw),
    "vhp_pair": lambda m, F, kw: F.vhp(
        lambda x, y: s_pair(m, x, y), (T(m, X), T(m, Y)), (T(m, X), T(m, Y)), **kw),
    "vjp_unused_input": lambda m, F, kw: F.vjp(
        lambda x, y: x * 2, (T(m, X), T(m, Y)), T(m, X), **kw),
    "jvp_output_without_grad": lambda m, F, kw: F.jvp(
        lambda x: (x * 2, m.ones(2)), T(m, X), T(m, X), **kw),
}


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("case", sorted(PRODUCT_CASES))
def test_products_match_torch(case, create_graph):
    same_outcome(lambda m: PRODUCT_CASES[case](m, fn_module(m),
                                               {"create_graph": create_graph}))


JACOBIAN_FUNCS = {
    "single": (lambda m, x: f_single(m, x), lambda m: T(m, X)),
    "pair": (lambda m, x, y: f_pair(m, x, y), lambda m: (T(m, X), T(m, Y))),
    "tuple_in_single_out": (lambda m, x, y: f_tuple_in_single_out(m, x, y),
                            lambda m: (T(m, X), T(m, Y))),
    "single_in_tuple_out": (lambda m, x: (x.sin(), x.sum()), lambda m: T(m, X)),
    "one_tuple_in": (lambda m, x: x.cos() * 3, lambda m: (T(m, X),)),
    "scalar_in": (lambda m, x: x * m.tensor([1.0, 2.0], dtype=m.float64), lambda m: T(m, 0.7)),
    "unused_and_constant": (lambda m, x, y: (x * 2, m.ones(2, dtype=m.float64)),
                            lambda m: (T(m, X), T(m, Y))),
}
JAC_MODES = [(False, "reverse-mode"), (True, "reverse-mode"), (True, "forward-mode")]


@pytest.mark.parametrize("vectorize,strategy", JAC_MODES)
@pytest.mark.parametrize("name", sorted(JACOBIAN_FUNCS))
def test_jacobian_matches_torch(name, vectorize, strategy):
    f, inputs = JACOBIAN_FUNCS[name]
    same_outcome(lambda m: fn_module(m).jacobian(lambda *a: f(m, *a), inputs(m),
                                                 vectorize=vectorize, strategy=strategy))


HESSIAN_FUNCS = {
    "single": (s_single, lambda m: T(m, X)),
    "pair": (s_pair, lambda m: (T(m, X), T(m, Y))),
    "one_tuple_in": (s_single, lambda m: (T(m, X),)),
    "scalar_in": (lambda m, x: x.sin() * x ** 3, lambda m: T(m, 0.4)),
    "keepdim_scalar": (lambda m, x: (x * x).sum().reshape(1, 1), lambda m: T(m, X)),
    "linear_part": (lambda m, x, y: (x * 2).sum() + (y ** 2).sum(),
                    lambda m: (T(m, X), T(m, Y))),
}
HESS_MODES = [(False, "reverse-mode"), (True, "reverse-mode"), (True, "forward-mode")]


def _without_requires_grad(r):
    if isinstance(r, (tuple, list)):
        return type(r)(_without_requires_grad(e) for e in r)
    return r.detach()


@pytest.mark.parametrize("vectorize,strategy", HESS_MODES)
@pytest.mark.parametrize("name", sorted(HESSIAN_FUNCS))
def test_hessian_matches_torch(name, vectorize, strategy):
    f, inputs = HESSIAN_FUNCS[name]

    def run(m):
        h = fn_module(m).hessian(lambda *a: f(m, *a), inputs(m), vectorize=vectorize,
                                 outer_jacobian_strategy=strategy)
        # Known deviation: PyTorch's forward-over-reverse Hessian keeps a graph to internal
        # copies of the inputs (results require grad); ndgrad's results are detached.
        return _without_requires_grad(h) if strategy == "forward-mode" else h
    same_outcome(run)


# ---------------------------------------------------------------------------- create_graph
def _second_derivative(m, which, vectorize):
    """A first-order result computed with create_graph=True, differentiated once more with
    respect to inputs that require grad."""
    x = T(m, X, requires_grad=True)
    y = T(m, Y, requires_grad=True)
    fm = fn_module(m)
    if which == "jacobian":
        r = fm.jacobian(lambda a, b: f_pair(m, a, b), (x, y), create_graph=True,
                        vectorize=vectorize)
        flat = [e for row in r for e in row]
    elif which == "hessian":
        r = fm.hessian(lambda a, b: s_pair(m, a, b), (x, y), create_graph=True,
                       vectorize=vectorize)
        flat = [e for row in r for e in row]
    else:
        fn = getattr(fm, which)
        scalar = which in ("hvp", "vhp")
        func = (lambda a, b: s_pair(m, a, b)) if scalar else (lambda a, b: f_pair(m, a, b))
        v = (T(m, X), T(m, Y)) if which != "vjp" else (T(m, X), T(m, 1.5))
        _, r = fn(func, (x, y), v, create_graph=True)
        flat = list(r)
    assert any(t.requires_grad for t in flat)
    total = sum((t * t).sum() for t in flat if t.requires_grad)
    return m.autograd.grad(total, (x, y), allow_unused=True)


@pytest.mark.parametrize("which,vectorize", [
    ("vjp", False), ("jvp", False), ("hvp", False), ("vhp", False), ("jacobian", False),
    ("jacobian", True), ("hessian", False), ("hessian", True)])
def test_create_graph_results_are_differentiable(which, vectorize):
    same_outcome(lambda m: _second_derivative(m, which, vectorize))


def test_results_are_detached_without_create_graph():
    x = ndgrad.tensor(X, requires_grad=True)
    out, g = F.vjp(lambda a: a.exp(), x, ndgrad.ones(3))
    assert not out.requires_grad and not g.requires_grad
    j = F.jacobian(lambda a: a.exp(), x, vectorize=True)
    assert not j.requires_grad and x.grad is None


# ---------------------------------------------------------------------------- errors
def _linear(m, x, y):
    return (x * 2).sum() + y.sum()


ERROR_CASES = {
    # strict mode
    "vjp_strict_independent": lambda m, F: F.vjp(lambda x, y: x * 2, (T(m, X), T(m, Y)),
                                                  T(m, X), strict=True),
    "vjp_strict_no_grad_output": lambda m, F: F.vjp(lambda x: x.detach() * 2, T(m, X),
                                                     T(m, X), strict=True),
    "vjp_strict_create_graph_constant_grad": lambda m, F: F.vjp(
        lambda x: x * 2, T(m, X), T(m, X), strict=True, create_graph=True),
    "jvp_strict_independent": lambda m, F: F.jvp(lambda x, y: x * 2, (T(m, X), T(m, Y)),
                                                  (T(m, X), T(m, Y)), strict=True),
    "jvp_strict_linear_ok": lambda m, F: F.jvp(lambda x: x * 2, T(m, X), T(m, X), strict=True),
    "jvp_strict_no_grad_output": lambda m, F: F.jvp(lambda x: m.ones(2), T(m, X), T(m, X),
                                                    strict=True),
    "jacobian_strict_independent": lambda m, F: F.jacobian(
        lambda x, y: x * 2, (T(m, X), T(m, Y)), strict=True),
    "jacobian_strict_create_graph": lambda m, F: F.jacobian(
        lambda x: x * 2, T(m, X), strict=True, create_graph=True),
    "jacobian_strict_vectorize": lambda m, F: F.jacobian(lambda x: x * 2, T(m, X), strict=True,
                                                        vectorize=True),
    "jacobian_forward_strict": lambda m, F: F.jacobian(
        lambda x: x * 2, T(m, X), strict=True, vectorize=True, strategy="forward-mode"),
    "jacobian_forward_no_vectorize": lambda m, F: F.jacobian(lambda x: x * 2, T(m, X),
                                                             strategy="forward-mode"),
    "jacobian_forward_create_graph": lambda m, F: F.jacobian(
        lambda x: x * 2, T(m, X), create_graph=True, vectorize=True, strategy="forward-mode"),
    "jacobian_bad_strategy": lambda m, F: F.jacobian(lambda x: x * 2, T(m, X),
                                                     strategy="sideways"),
    "hessian_strict_linear": lambda m, F: F.hessian(lambda x, y: _linear(m, x, y),
                                                    (T(m, X), T(m, Y)), strict=True),
    "hessian_strict_independent": lambda m, F: F.hessian(
        lambda x, y: (x ** 3).sum(), (T(m, X), T(m, Y)), strict=True),
    "hessian_non_scalar": lambda m, F: F.hessian(lambda x: x * 2, T(m, X)),
    "hessian_tuple_output": lambda m, F: F.hessian(lambda x: (x.sum(), x.sum()), T(m, X)),
    "hessian_bad_strategy": lambda m, F: F.hessian(lambda x: x.sum(), T(m, X),
                                                   outer_jacobian_strategy="sideways"),
    "hessian_forward_no_vectorize": lambda m, F: F.hessian(
        lambda x: (x ** 3).sum(), T(m, X), outer_jacobian_strategy="forward-mode"),
    "hvp_strict_linear": lambda m, F: F.hvp(lambda x, y: _linear(m, x, y),
                                            (T(m, X), T(m, Y)), (T(m, X), T(m, Y)), strict=True),
    "hvp_strict_quadratic_ok": lambda m, F: F.hvp(lambda x: (x * x).sum(), T(m, X), T(m, X),
                                                  strict=True),
    "hvp_strict_create_graph": lambda m, F: F.hvp(lambda x: (x * x).sum(), T(m, X), T(m, X),
                                                  strict=True, create_graph=True),
    "vhp_strict_linear": lambda m, F: F.vhp(lambda x, y: _linear(m, x, y),
                                            (T(m, X), T(m, Y)), (T(m, X), T(m, Y)), strict=True),
    "vhp_strict_create_graph": lambda m, F: F.vhp(lambda x: (x * x).sum(), T(m, X), T(m, X),
                                                  strict=True, create_graph=True),
    "hvp_non_scalar": lambda m, F: F.hvp(lambda x: x * 2, T(m, X), T(m, X)),
    "vhp_tuple_output": lambda m, F: F.vhp(lambda x: (x.sum(),), T(m, X), T(m, X)),
    # arguments
    "vjp_v_none_non_scalar": lambda m, F: F.vjp(lambda x: x * 2, T(m, X)),
    "jvp_v_none_non_scalar": lambda m, F: F.jvp(lambda x: x * 2, T(m, X)),
    "hvp_v_none_non_scalar": lambda m, F: F.hvp(lambda x: x.sum(), T(m, X)),
    "vhp_v_none_scalar_ok": lambda m, F: F.vhp(lambda x: x ** 3, T(m, 0.5)),
    "vjp_v_wrong_size": lambda m, F: F.vjp(lambda x: x * 2, T(m, X), T(m, X[:2])),
    "vjp_v_wrong_length": lambda m, F: F.vjp(lambda x: (x, x), T(m, X), (T(m, X),)),
    "vjp_v_single_for_tuple": lambda m, F: F.vjp(lambda x: x * 2, T(m, X), (T(m, X), T(m, X))),
    "jvp_v_entry_wrong_size": lambda m, F: F.jvp(lambda x, y: x * y.sum(), (T(m, X), T(m, Y)),
                                                 (T(m, X), T(m, X))),
    "inputs_list": lambda m, F: F.vjp(lambda x: x, [T(m, X)], T(m, X)),
    "inputs_not_tensor": lambda m, F: F.jacobian(lambda x: x, (T(m, X), 3.0)),
    "outputs_not_tensor": lambda m, F: F.jacobian(lambda x: [x], T(m, X)),
    "forward_outputs_not_tensor": lambda m, F: F.jacobian(
        lambda x: 3.0, T(m, X), vectorize=True, strategy="forward-mode"),
    "v_not_tensor": lambda m, F: F.jvp(lambda x: x, T(m, X), [1.0, 2.0, 3.0]),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_errors_match_torch(case):
    same_outcome(lambda m: ERROR_CASES[case](m, fn_module(m)))


def test_inputs_are_not_modified():
    x = ndgrad.tensor(X, requires_grad=True)
    y = x * 1
    for vec in (False, True):
        F.hessian(lambda a: (a ** 3).sum(), y, vectorize=vec)
        F.jacobian(lambda a, b: a.exp() * b, (x, y), vectorize=vec)
    assert x.grad is None and y.grad_fn.name() == "MulBackward0"


def test_vectorized_jacobian_and_hessian_use_one_batched_pass(monkeypatch):
    calls = []
    monkeypatch.setattr(nd_api, "_row_loop", lambda *a: calls.append(a))
    x = ndgrad.tensor(X)
    w = ndgrad.tensor(W)
    j = F.jacobian(lambda a: (w @ a).tanh(), x, vectorize=True)
    jf = F.jacobian(lambda a: (w @ a).tanh(), x, vectorize=True, strategy="forward-mode")
    h = F.hessian(lambda a: (w @ a).tanh().sum(), x, vectorize=True)
    hf = F.hessian(lambda a: (w @ a).tanh().sum(), x, vectorize=True,
                   outer_jacobian_strategy="forward-mode")
    assert calls == []
    np.testing.assert_allclose(j.numpy(), jf.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h.numpy(), hf.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h.numpy(), F.hessian(
        lambda a: (w @ a).tanh().sum(), x).numpy(), rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------- forward mode
FORWARD_FUNCS = {
    "elementwise": (lambda m, x: x.sin() * x.exp() / (1 + x * x), lambda m: T(m, X)),
    "matmul_two_inputs": (lambda m, x, y: y @ x.reshape(3, 1), lambda m: (T(m, X), T(m, Y))),
    "reductions": (lambda m, x, y: (y.sum(0) * x.prod(), y.max(1)[0], (y * x).mean()),
                   lambda m: (T(m, X), T(m, Y))),
    "views_and_inplace": (lambda m, x: _views_and_inplace(m, x), lambda m: T(m, X)),
}


def _views_and_inplace(m, x):
    y = x.clone()
    y[0] = x[1] * 2
    y.mul_(x)
    z = m.zeros(3, dtype=m.float64)
    z[1:] = x[:2].exp()
    s = x.sign()
    s.mul_(x)
    return y + z + s + x.reshape(3, 1).expand(3, 2).sum(1)


@pytest.mark.parametrize("name", sorted(FORWARD_FUNCS))
def test_forward_mode_jacobian_matches_torch_and_reverse_mode(name):
    f, inputs = FORWARD_FUNCS[name]
    got = same_outcome(lambda m: fn_module(m).jacobian(
        lambda *a: f(m, *a), inputs(m), vectorize=True, strategy="forward-mode"))
    rev = F.jacobian(lambda *a: f(ndgrad, *a), inputs(ndgrad), vectorize=True)
    # PyTorch's forward mode returns lists where reverse mode returns tuples.
    assert_same(convert(_as_tuples(rev)), _as_tuples(got[1]))


def _as_tuples(r):
    if isinstance(r, tuple) and r and r[0] == "list":
        return tuple(_as_tuples(e) for e in r[1:])
    if isinstance(r, (tuple, list)) and not (r and r[0] == "T"):
        return tuple(_as_tuples(e) for e in r)
    return r


def test_forward_mode_hessian_is_forward_over_reverse():
    w = ndgrad.tensor(W)

    def f(a, y):
        return (w @ a).tanh().sum() * (y * a).exp().sum()
    xs = (ndgrad.tensor(X), ndgrad.tensor(Y))
    hf = F.hessian(f, xs, vectorize=True, outer_jacobian_strategy="forward-mode")
    hr = F.hessian(f, xs)
    for rf, rr in zip(hf, hr):
        for a, b in zip(rf, rr):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)


class _CubeNoBackward(ndgrad.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_forward(x)
        return x ** 3

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return 3 * x ** 2 * t

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("backward called")


def test_forward_mode_jacobian_uses_forward_ad_in_one_pass():
    calls = []

    def f(a):
        calls.append(a.shape)
        return _CubeNoBackward.apply(a).sin() * 2
    x = ndgrad.tensor(X)
    j = F.jacobian(f, x, vectorize=True, strategy="forward-mode")
    assert calls == [ndgrad.Size([3])]      # one forward pass, logical shape
    want = np.diag(2 * np.cos(X ** 3) * 3 * X ** 2)
    np.testing.assert_allclose(j.numpy(), want, rtol=1e-12, atol=1e-12)
    with pytest.raises(RuntimeError, match="backward called"):
        F.jacobian(f, x, vectorize=True)
    with pytest.raises(RuntimeError, match="backward called"):
        F.jacobian(f, x, vectorize=True, strategy="reverse-mode")
