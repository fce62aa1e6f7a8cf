"""``gradcheck``/``gradgradcheck``: every op of ``op_db`` passes them in float64 (slow and fast
mode), and their own behaviour matches ``torch.autograd.gradcheck``: the GradcheckError message
and its output/input indices for a wrong backward, ``raise_exception=False``, complex inputs and
outputs, the non-double warning, argument errors, the zero-grad_output, reentrancy and
batched-grad checks."""

from __future__ import annotations

import warnings
import zlib

import numpy as np
import pytest
import torch

import ndgrad
from ndgrad.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from ndgrad.ops import _batching
from ndgrad.ops._dispatch import Op, apply
from op_db import OPS, make_inputs

CASES = [pytest.param(op, i, id=f"{op.name}-{i}") for op in OPS for i in range(len(op.samples))
         if op.differentiable]
GRADGRAD_CASES = [c for c in CASES if c.values[0].double_backward]


def _inputs(op, i):
    rng = np.random.default_rng(zlib.crc32(f"{op.name}/{i}/gc".encode()))
    arrays = make_inputs(op, op.samples[i], rng)
    assert all(a.size <= 12 for a in arrays), "keep samples tiny"
    return tuple(ndgrad.tensor(a, dtype=ndgrad.float64, requires_grad=True) for a in arrays)


def _fn(op):
    return lambda *xs: op.fn(ndgrad, *xs)


# ---------------------------------------------------------------------------- every op
@pytest.mark.parametrize("fast_mode", [False, True])
@pytest.mark.parametrize("op,i", CASES)
def test_gradcheck_every_op(op, i, fast_mode):
    assert gradcheck(_fn(op), _inputs(op, i), eps=op.fd_eps, atol=max(op.fd_atol, 1e-5),
                     fast_mode=fast_mode)


@pytest.mark.parametrize("op,i", GRADGRAD_CASES)
def test_gradgradcheck_every_op(op, i):
    with warnings.catch_warnings():
        # Casts to float32/float16 give grad_outputs of that dtype: gradcheck warns about them.
        warnings.filterwarnings("ignore", message="Input #")
        assert gradgradcheck(_fn(op), _inputs(op, i), eps=op.fd_eps,
                             atol=max(op.fd_atol, 1e-5))


# ---------------------------------------------------------------------------- behaviour vs torch
def _wrong_torch(kind):
    class Wrong(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x if kind != "sin" else x.sin()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            if kind == "sin":
                return g * x.cos() * 1.1                  # off by 10%
            if kind == "square_no_conj":
                return g * 2 * x                          # the conjugate is missing
            if kind == "unscaled":
                return g * 2 * x + (g == 0).all().double()   # not multiplied by grad_output
            if kind == "noisy":
                return g * 2 * x + torch.rand(()).double() * 1e-3
            if kind == "detached":
                return g * 2 * x.detach()                 # right once, wrong twice
            raise AssertionError(kind)
    return Wrong.apply


def _wrong_ndgrad(kind):
    rng = np.random.default_rng(0)

    def vjp(ctx, g):
        (x,) = ctx.saved
        if kind == "sin":
            return g * x.cos() * 1.1
        if kind == "square_no_conj":
            return g * 2 * x
        if kind == "unscaled":
            return g * 2 * x + float(np.all(g.numpy() == 0))
        if kind == "noisy":
            return g * 2 * x + float(rng.random()) * 1e-3
        if kind == "detached":
            return g * 2 * x.detach()
        raise AssertionError(kind)
    op = Op(f"wrong_{kind}", "WrongBackward0", np.sin if kind == "sin" else np.square, vjp,
            saves=("self",))
    return lambda x: apply(op, (x,), (x._data,))


def _outcome(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = ("ok", fn())
        except Exception as e:  # noqa: BLE001
            res = (type(e).__name__, str(e))
    return res, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def _head(msg):
    """The message up to the printed Jacobians (tensors print differently)."""
    return msg.split("numerical:")[0].split("\n\n")[0]


def _compare(run, exact=False):
    (got, got_w), (want, want_w) = _outcome(lambda: run(ndgrad)), _outcome(lambda: run(torch))
    assert got[0] == want[0], (got, want)
    if got[0] == "ok":
        assert got[1] == want[1]
    elif exact:
        assert got[1] == want[1]
    else:
        assert _head(got[1]) == _head(want[1]), (got[1], want[1])
    assert got_w == want_w
    return got


def T(m, a, dtype=None, requires_grad=True):
    return m.tensor(a, dtype=dtype or m.float64, requires_grad=requires_grad)


X3 = [0.3, -1.2, 0.8]
Z2 = [0.3 + 0.5j, -1.2 + 0.1j]


def wrong(m, kind):
    return _wrong_ndgrad(kind) if m is ndgrad else _wrong_torch(kind)


def check_fn(m):
    return gradcheck if m is ndgrad else torch.autograd.gradcheck


def gradgrad_fn(m):
    return gradgradcheck if m is ndgrad else torch.autograd.gradgradcheck


BEHAVIOUR = {
    "wrong_backward": lambda m: check_fn(m)(wrong(m, "sin"), (T(m, X3),)),
    "wrong_backward_fast": lambda m: check_fn(m)(wrong(m, "sin"), (T(m, X3),), fast_mode=True),
    "wrong_backward_no_raise": lambda m: check_fn(m)(wrong(m, "sin"), (T(m, X3),),
                                                     raise_exception=False),
    "wrong_backward_no_raise_fast": lambda m: check_fn(m)(
        wrong(m, "sin"), (T(m, X3),), raise_exception=False, fast_mode=True),
    "index_counts_inputs_requiring_grad": lambda m: check_fn(m)(
        lambda a, b: wrong(m, "sin")(b) * a, (T(m, X3, requires_grad=False), T(m, X3))),
    "index_counts_outputs_requiring_grad": lambda m: check_fn(m)(
        lambda a: (a.detach(), a * 2, wrong(m, "sin")(a)), (T(m, X3),)),
    "second_input_wrong": lambda m: check_fn(m)(
        lambda a, b: a.exp() + wrong(m, "sin")(b), (T(m, X3), T(m, X3))),
    "correct": lambda m: check_fn(m)(lambda a, b: (a * b).exp().sum(), (T(m, X3), T(m, X3))),
    "correct_fast": lambda m: check_fn(m)(lambda a: a.sin() * a, (T(m, X3),), fast_mode=True),
    "float32_warning": lambda m: check_fn(m)(lambda a: a * 2, (T(m, X3, m.float32),),
                                             atol=1e-2, eps=1e-3),
    "float32_and_int_input": lambda m: check_fn(m)(
        lambda a, b: a * 2 + b, (T(m, X3, m.float32), m.tensor([1, 2, 3])), atol=1e-2,
        eps=1e-3),
    "no_input_requires_grad": lambda m: check_fn(m)(lambda a: a * 2, (T(m, X3, None, False),)),
    "stride_zero_input": lambda m: check_fn(m)(
        lambda a: a * 2, (T(m, [1.0]).expand(3),)),
    "no_differentiable_output_nonzero": lambda m: check_fn(m)(
        lambda a: (a * 2).detach(), (T(m, X3),)),
    "no_differentiable_output_zero": lambda m: check_fn(m)(
        lambda a: (a > 0).double(), (T(m, X3),)),
    "not_multiplied_by_grad_output": lambda m: check_fn(m)(wrong(m, "unscaled"), (T(m, X3),)),
    "not_reentrant": lambda m: check_fn(m)(wrong(m, "noisy"), (T(m, X3),)),
    "not_reentrant_tolerated": lambda m: check_fn(m)(wrong(m, "noisy"), (T(m, X3),),
                                                     nondet_tol=1e-2),
    # complex numbers
    "complex_in_out_correct": lambda m: check_fn(m)(lambda z: z * z.exp(), (T(m, Z2, m.cdouble),)),
    "complex_in_out_correct_fast": lambda m: check_fn(m)(
        lambda z: z * z.exp(), (T(m, Z2, m.cdouble),), fast_mode=True),
    "complex_in_real_out_correct": lambda m: check_fn(m)(
        lambda z: (z * z.conj()).real * z.abs(), (T(m, Z2, m.cdouble),)),
    "real_in_complex_out_correct": lambda m: check_fn(m)(
        lambda x: x * m.tensor([1 + 2j, -0.5j], dtype=m.cdouble), (T(m, X3[:2]),)),
    "complex_wrong_conj": lambda m: check_fn(m)(wrong(m, "square_no_conj"),
                                                (T(m, Z2, m.cdouble),)),
    "complex_wrong_conj_fast": lambda m: check_fn(m)(
        wrong(m, "square_no_conj"), (T(m, Z2, m.cdouble),), fast_mode=True),
    "complex_in_real_out_wrong": lambda m: check_fn(m)(
        lambda z: wrong(m, "square_no_conj")(z).real, (T(m, Z2, m.cdouble),)),
    # batched gradients
    "batched_grad_ok": lambda m: check_fn(m)(
        lambda a, b: (a.unsqueeze(0) * b.unsqueeze(1)).sum(0).tanh(), (T(m, X3), T(m, X3)),
        check_batched_grad=True),
    # gradgradcheck
    "gradgrad_correct": lambda m: gradgrad_fn(m)(lambda a: (a * a).sin(), (T(m, X3),)),
    "gradgrad_correct_fast": lambda m: gradgrad_fn(m)(lambda a: (a * a).sin(), (T(m, X3),),
                                                      fast_mode=True),
    "gradgrad_wrong": lambda m: gradgrad_fn(m)(wrong(m, "detached"), (T(m, X3),)),
    "gradgrad_wrong_no_raise": lambda m: gradgrad_fn(m)(wrong(m, "detached"), (T(m, X3),),
                                                        raise_exception=False),
    "gradgrad_given_grad_outputs": lambda m: gradgrad_fn(m)(
        lambda a: a.exp() * a, (T(m, X3),), (T(m, [1.0, -2.0, 0.5]),)),
    "gradgrad_batched": lambda m: gradgrad_fn(m)(lambda a: (a * a).sin().sum(), (T(m, X3),),
                                                 check_batched_grad=True),
    "gradgrad_bad_flags": lambda m: gradgrad_fn(m)(lambda a: a, (T(m, X3),),
                                                   check_rev_over_rev=False),
}
EXACT = {"no_input_requires_grad", "stride_zero_input", "no_differentiable_output_nonzero",
         "not_multiplied_by_grad_output", "gradgrad_bad_flags"}


@pytest.mark.parametrize("case", sorted(BEHAVIOUR))
def test_gradcheck_behaviour_matches_torch(case):
    outcome = _compare(BEHAVIOUR[case], exact=case in EXACT)
    if case.startswith(("wrong_backward", "index_counts", "second_input")) and \
            outcome[0] != "ok":
        assert outcome[1].startswith("Jacobian mismatch for output ")


def test_mismatch_message_names_output_and_input():
    x = ndgrad.tensor(X3, dtype=ndgrad.float64, requires_grad=True)
    y = ndgrad.tensor(X3, dtype=ndgrad.float64, requires_grad=True)
    with pytest.raises(GradcheckError) as info:
        gradcheck(lambda a, b: (a * 2, a.exp() + _wrong_ndgrad("sin")(b)), (x, y))
    assert str(info.value).startswith("Jacobian mismatch for output 1 with respect to input 1,\n"
                                      "numerical:tensor(")
    assert "analytical:tensor(" in str(info.value)


def _break_expand_batching(monkeypatch, how):
    expand_op = ndgrad.ops.shape.EXPAND
    good = _batching.RULES[expand_op]

    def bad(c, args):
        if how == "raise":
            raise RuntimeError("no rule today")
        return good(c, args) * 2
    monkeypatch.setitem(_batching.RULES, expand_op, bad)


@pytest.mark.parametrize("how,head", [("wrong", "For output 0 and input 0:\n\n"),
                                      ("raise", "While computing batched gradients, got: no "
                                                "rule today\n\n")])
def test_batched_grad_check_failures(monkeypatch, how, head):
    # sum's backward expands the (batched) gradient: break the batching rule of expand.
    x = ndgrad.tensor(X3, dtype=ndgrad.float64, requires_grad=True)
    assert gradcheck(lambda a: a.sum() * a, (x,), check_batched_grad=True)
    _break_expand_batching(monkeypatch, how)
    assert gradcheck(lambda a: a.sin() * 2, (x,), check_batched_grad=True)   # no expand
    with pytest.raises(GradcheckError) as info:
        gradcheck(lambda a: a.sum() * a, (x,), check_batched_grad=True)
    assert str(info.value).startswith(head)
    assert gradcheck(lambda a: a.sum() * a, (x,), check_batched_grad=True,
                     raise_exception=False) is False


@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16", "complex64"])
def test_mismatch_message_shows_jacobians_in_the_input_dtype(dt):
    # torch's Jacobians have the input's dtype: a float32 check prints no "dtype=float64"
    msgs = []
    for m in (torch, ndgrad):
        m.manual_seed(0)
        x = m.randn(2, dtype=getattr(m, dt), requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(Exception) as e:
                m.autograd.gradcheck(lambda a: a.exp().detach().requires_grad_() * a, (x,))
        msgs.append(str(e.value).replace("ndgrad.", "torch."))
    assert msgs[1] == msgs[0]
