"""Saved tensors against PyTorch: the version check at unpack (PyTorch's message, the node's
name, plus ndgrad's "It was last modified in place at <file>:<line>"), which in-place ops after
which saves raise (ops that save their output: exp_, sigmoid_, tanh_ ...), detached aliases
and ``.data``; saved-tensor hooks (pack once per saved tensor, unpack in backward, nesting,
``disable_saved_tensors_hooks``, errors); ``grad_fn._saved_*`` / ``_raw_saved_*``; freed saved
tensors. Each test runs the same program with ``torch`` and ``ndgrad`` and compares."""

import inspect
import os
import re
import warnings

import numpy as np
import pytest
import torch

import ndgrad

LIBS = (torch, ndgrad)
THIS_FILE = os.path.abspath(__file__)


def vals(t):
    return None if t is None else np.round(np.asarray(t.detach().tolist()), 8).tolist()


def error_of(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - compared between libraries
        return type(e), str(e)
    return None


def torch_part(msg):
    """The part of a version-check message that PyTorch also prints."""
    return re.split(r" (It was last modified in place at|Hint:)", msg)[0]


def leaf(L, *shape, offset=0.5):
    n = int(np.prod(shape)) if shape else 1
    return L.tensor(np.arange(n, dtype=np.float64).reshape(shape) * 0.5 + offset,
                    dtype=L.float64, requires_grad=True)


def hooks(L):
    return L.autograd.graph


# ---------------------------------------------------------------------------- version check
def test_modified_saved_input_raises_torch_message_with_the_inplace_site():
    lines = {}

    def run(L):
        x = leaf(L, 3)
        a = x * 2
        b = a * a
        a.add_(1)
        lines[L] = inspect.currentframe().f_lineno - 1
        return error_of(lambda: b.sum().backward())
    t, n = run(torch), run(ndgrad)
    assert t[0] is n[0] is RuntimeError
    assert torch_part(t[1]) == torch_part(n[1]) == (
        "one of the variables needed for gradient computation has been modified by an inplace "
        "operation: [torch.DoubleTensor [3]], which is output 0 of Add, is at version 1; "
        "expected version 0 instead.")
    assert f"It was last modified in place at {THIS_FILE}:{lines[ndgrad]}." in n[1]


def test_version_message_counts_every_inplace_op():
    def run(L):
        x = leaf(L, 2, 2)
        a = x + 0
        b = a.sin()
        a.mul_(2)
        a[0] = 1.0
        a.t().add_(1)
        return error_of(lambda: b.sum().backward())
    t, n = run(torch), run(ndgrad)
    assert torch_part(t[1]) == torch_part(n[1])
    assert "[torch.DoubleTensor [2, 2]], which is output 0 of torch::autograd::CopySlices, is " \
           "at version 3; expected version 0 instead." in n[1]


def test_version_message_of_a_saved_leaf():
    def run(L):
        x = leaf(L, 3)
        w = L.ones(3, dtype=L.float64)
        y = (x * w).sum()
        w.add_(1)
        return error_of(y.backward)
    t, n = run(torch), run(ndgrad)
    assert torch_part(t[1]) == torch_part(n[1])
    assert "[torch.DoubleTensor [3]] is at version 1; expected version 0 instead." in n[1]


def test_version_error_under_anomaly_mode_names_the_forward_site():
    x = leaf(ndgrad, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # anomaly mode's own warnings
        with ndgrad.autograd.detect_anomaly():
            a = x * 2
            line = inspect.currentframe().f_lineno + 1
            b = a.exp() * a
            a.zero_()
            err = error_of(lambda: b.sum().backward())
    assert err[0] is RuntimeError
    assert f"It was saved for backward by MulBackward0 at {THIS_FILE}:{line}" in err[1]


# forward ops applied to y = x * 1; which later in-place changes break backward
FORWARD = {
    "exp": lambda L, y: y.exp(),
    "exp_": lambda L, y: y.exp_(),
    "sigmoid": lambda L, y: y.sigmoid(),
    "sigmoid_": lambda L, y: y.sigmoid_(),
    "tanh": lambda L, y: y.tanh(),
    "tanh_": lambda L, y: y.tanh_(),
    "sqrt": lambda L, y: y.sqrt(),
    "sqrt_": lambda L, y: y.sqrt_(),
    "log": lambda L, y: y.log(),
    "log_": lambda L, y: y.log_(),
    "pow": lambda L, y: y.pow(2),
    "pow_": lambda L, y: y.pow_(2),
    "relu": lambda L, y: y.relu(),
    "relu_": lambda L, y: y.relu_(),
    "abs": lambda L, y: y.abs(),
    "clamp": lambda L, y: y.clamp(0.6, 1.8),
    "clamp_": lambda L, y: y.clamp_(0.6, 1.8),
    "mul_self": lambda L, y: y * y,
    "mul_scalar": lambda L, y: y * 2,
    "add": lambda L, y: y + 1,
    "neg_": lambda L, y: y.neg_(),
    "reciprocal_": lambda L, y: y.reciprocal_(),
    "sin": lambda L, y: y.sin(),
    "view_exp": lambda L, y: y[1:].exp(),
    "mul_by_leaf_": lambda L, y: y.mul_(leaf(L, 3)),
    "div_by_leaf_": lambda L, y: y.div_(leaf(L, 3)),
}
MODIFY = {
    "add_": lambda t: t.add_(1),
    "zero_": lambda t: t.zero_(),
    "setitem": lambda t: t.__setitem__(0, 2.0),
    "view_mul_": lambda t: t[1:].mul_(2),
    "detached_alias": lambda t: t.detach().mul_(2),
    "data": lambda t: t.data.mul_(2),
}


def _run_saved(L, forward, modify, target):
    x = leaf(L, 3)
    y = x * 1
    z = FORWARD[forward](L, y)
    MODIFY[modify]({"input": y, "output": z}[target])
    versions = (y._version, z._version)
    err = error_of(lambda: (z * L.tensor([1.0, 2.0, 3.0], dtype=L.float64)).sum().backward())
    if err is not None:
        return err[0], torch_part(err[1])
    return versions, vals(x.grad)


@pytest.mark.parametrize("forward", FORWARD)
def test_which_inplace_changes_after_which_saves_raise(forward):
    for modify in MODIFY:
        for target in ("input", "output"):
            t = _run_saved(torch, forward, modify, target)
            n = _run_saved(ndgrad, forward, modify, target)
            assert t == n, (modify, target)


def test_saved_output_of_inplace_op_is_the_modified_tensor():
    def run(L):
        x = leaf(L, 3)
        y = x * 1
        y.exp_()
        saved = y.grad_fn._saved_result
        return (saved is y, saved._version, vals(saved), saved.grad_fn.name(),
                saved.requires_grad)
    assert run(torch) == run(ndgrad)


def test_inplace_after_sigmoid_on_a_view_of_the_output():
    def run(L):
        x = leaf(L, 4)
        s = (x * 1).sigmoid_()
        s[::2].mul_(2)
        return error_of(lambda: s.sum().backward())
    t, n = run(torch), run(ndgrad)
    assert t[0] is n[0] and torch_part(t[1]) == torch_part(n[1])
    assert "which is output 0 of Sigmoid, is at version 2; expected version 1" in n[1]


# ---------------------------------------------------------------------------- _saved_ attributes
SAVED_NAMES = ("_saved_self", "_saved_other", "_saved_result", "_saved_exponent",
               "_saved_min", "_saved_max", "_raw_saved_self", "_raw_saved_other",
               "_raw_saved_result", "_raw_saved_exponent")


def _describe(v):
    if hasattr(v, "shape") and hasattr(v, "requires_grad"):
        return ("tensor", vals(v), tuple(v.shape), v.requires_grad,
                None if v.grad_fn is None else v.grad_fn.name(), v._version)
    if type(v).__name__ == "SavedTensor":
        return "SavedTensor"
    return v


SAVING = {
    "mul": lambda L, x, w: x * w,
    "div": lambda L, x, w: x / w,
    "exp": lambda L, x, w: x.exp(),
    "exp_": lambda L, x, w: (x * 1).exp_(),
    "sigmoid": lambda L, x, w: x.sigmoid(),
    "tanh": lambda L, x, w: x.tanh(),
    "pow_scalar": lambda L, x, w: x ** 3,
    "pow_tensor": lambda L, x, w: x ** w,
    "clamp": lambda L, x, w: x.clamp(0.6, 1.8),
    "sqrt": lambda L, x, w: x.sqrt(),
    "log": lambda L, x, w: x.log(),
    "mul_of_views": lambda L, x, w: x[1:] * w[:2],
}


@pytest.mark.parametrize("op", SAVING)
def test_saved_attributes_match_torch(op):
    def run(L):
        x, w = leaf(L, 3), leaf(L, 3, offset=1.0)
        y = SAVING[op](L, x, w)
        fn = y.grad_fn
        out = {}
        for attr in SAVED_NAMES:
            try:
                out[attr] = _describe(getattr(fn, attr))
            except AttributeError:
                out[attr] = "missing"
        out["self_is_x"] = getattr(fn, "_saved_self", None) is x
        out["result_is_y"] = getattr(fn, "_saved_result", None) is y
        y.sum().backward()
        out["after"] = [error_of(lambda a=a: getattr(fn, a)) for a in SAVED_NAMES
                        if isinstance(out[a], tuple) and out[a][0] == "tensor"]
        return out
    assert run(torch) == run(ndgrad)


def test_freed_saved_tensors_raise_the_second_backward_error():
    def run(L):
        x = leaf(L, 3)
        y = (x.exp() * x).sum()
        fn = y.grad_fn.next_functions[0][0]
        y.backward()
        return error_of(y.backward), error_of(lambda: fn._saved_self)
    t, n = run(torch), run(ndgrad)
    assert t == n
    assert "Trying to backward through the graph a second time" in n[0][1]


def test_retain_graph_keeps_saved_tensors():
    def run(L):
        x = leaf(L, 3)
        y = x.exp()
        fn = y.grad_fn
        y.sum().backward(retain_graph=True)
        y.sum().backward()
        return vals(x.grad), error_of(lambda: fn._saved_result)
    t, n = run(torch), run(ndgrad)
    assert t[0] == n[0] and t[1] == n[1]


# ---------------------------------------------------------------------------- hooks
HOOKED = {
    "mul": lambda L, x, w: (x * w).sum(),
    "mul_self": lambda L, x, w: (x * x).sum(),
    "exp": lambda L, x, w: x.exp().sum(),
    "chain": lambda L, x, w: (x.exp() * w).tanh().sum(),
    "pow": lambda L, x, w: (x ** 2).sum(),
    "mm": lambda L, x, w: (x[None] @ w[:, None]).sum(),
    "sigmoid_": lambda L, x, w: (x * 2).sigmoid_().sum(),
    "exp_then_mul_": lambda L, x, w: (x * 1).exp_().mul_(w).sum(),
    "setitem": lambda L, x, w: _hooked_setitem(L, x, w),
}


def _hooked_setitem(L, x, w):
    y = x * 1
    y[1:] = y[1:] * w[1:]
    return (y * y).sum()


def _run_hooked(L, prog):
    packs, unpacks = [], []

    def pack(t):
        packs.append((tuple(t.shape), vals(t), t.requires_grad,
                      None if t.grad_fn is None else t.grad_fn.name()))
        return t.clone()                 # a copy: later in-place changes cannot reach it

    def unpack(t):
        unpacks.append(tuple(t.shape))
        return t

    x, w = leaf(L, 3), leaf(L, 3, offset=-0.5)
    with hooks(L).saved_tensors_hooks(pack, unpack):
        out = HOOKED[prog](L, x, w)
    n_packs = len(packs)
    out.backward()
    return sorted(packs, key=repr), n_packs, sorted(unpacks), vals(x.grad), vals(w.grad)


@pytest.mark.parametrize("prog", HOOKED)
def test_pack_once_per_saved_tensor_and_unpack_in_backward(prog):
    t, n = _run_hooked(torch, prog), _run_hooked(ndgrad, prog)
    if prog in ("exp_then_mul_", "setitem"):
        # PyTorch saves the original value of an in-place op's input as a clone
        # (CloneBackward0); ndgrad saves it with the history it had before the op.
        strip = [[p[:3] for p in t[0]], [p[:3] for p in n[0]]]
        assert strip[0] == strip[1]
        t, n = t[1:], n[1:]
    assert t == n


def test_pack_gets_saved_outputs_with_their_history():
    def run(L):
        seen = []
        x = leaf(L, 3)
        with hooks(L).saved_tensors_hooks(lambda t: seen.append(t) or t, lambda t: t):
            y = x.exp()
        return [(s is y, s.grad_fn.name(), s.requires_grad) for s in seen]
    assert run(torch) == run(ndgrad) == [(True, "ExpBackward0", True)]


def test_innermost_hooks_win():
    def run(L):
        log = []
        x = leaf(L, 2)

        def mk(tag):
            return (lambda t: log.append("pack " + tag) or t,
                    lambda t: log.append("unpack " + tag) or t)
        with hooks(L).saved_tensors_hooks(*mk("outer")):
            with hooks(L).saved_tensors_hooks(*mk("inner")):
                y = x.exp()
            z = y.sin()
        z.sum().backward()
        return log
    assert run(torch) == run(ndgrad) == ["pack inner", "pack outer", "unpack outer",
                                         "unpack inner"]


def test_pack_runs_in_no_grad_mode_and_unpack_in_backward_mode():
    def run(L):
        log = []
        x = leaf(L, 2)

        def pack(t):
            log.append(("pack", L.is_grad_enabled()))
            return t

        def unpack(t):
            log.append(("unpack", L.is_grad_enabled()))
            return t
        with hooks(L).saved_tensors_hooks(pack, unpack):
            y = (x * x).sum()
        y.backward(retain_graph=True)
        L.autograd.grad(y, x, create_graph=True)
        return log
    assert run(torch) == run(ndgrad)


def test_hooks_replace_the_version_check():
    def run(L, pack):
        x = leaf(L, 2)
        with hooks(L).saved_tensors_hooks(pack, lambda t: t):
            a = x * 1
            y = (a * a).sum()
        a.mul_(3)
        y.backward()
        return vals(x.grad)
    for pack in (lambda t: t.clone(), lambda t: t):
        assert run(torch, pack) == run(ndgrad, pack)


def test_hooks_change_the_values_used_by_backward():
    def run(L):
        x = leaf(L, 2)
        with hooks(L).saved_tensors_hooks(lambda t: t * 2, lambda t: t):
            y = (x * x).sum()
        y.backward()
        return vals(x.grad)
    assert run(torch) == run(ndgrad)


def test_double_backward_through_hook_packed_tensors():
    def run(L):
        x, w = leaf(L, 2), leaf(L, 2, offset=-0.5)
        with hooks(L).saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t):
            y = (x * w).exp() * x
            z = (y[1:] * w[:1]).sum() + y.sum()
        unpacked = y.grad_fn._saved_self
        g = L.autograd.grad(z, [x, w], create_graph=True)
        g2 = L.autograd.grad((g[0] * g[1]).sum(), [x, w])
        return ([vals(a) for a in g + g2], unpacked.requires_grad,
                unpacked.grad_fn.name(), unpacked is y)
    assert run(torch) == run(ndgrad)


@pytest.mark.parametrize("bad", [3, None, "packed"])
def test_unpack_hook_must_return_a_tensor(bad):
    def run(L):
        x = leaf(L, 2)
        with hooks(L).saved_tensors_hooks(lambda t: t, lambda t: bad):
            y = (x * x).sum()
        return error_of(y.backward)
    t, n = run(torch), run(ndgrad)
    assert t == n and t[0] is TypeError
    assert "Output of saved tensor unpack_hook expected to be a Tensor" in n[1]


def test_pack_hook_modifying_its_input_in_place_raises():
    def run(L):
        x = leaf(L, 2)

        def pack(t):
            t.mul_(2)
            return t
        with hooks(L).saved_tensors_hooks(pack, lambda t: t):
            return error_of(lambda: (x * 1).exp())
    t, n = run(torch), run(ndgrad)
    assert t == n
    assert "A saved tensor pack hook is modifying its input in place." in n[1]


@pytest.mark.parametrize("order", ["disable_outside", "disable_inside", "nested_disable",
                                   "after_exit"])
def test_disable_saved_tensors_hooks(order):
    def run(L):
        g = hooks(L)

        def prog():
            if order == "disable_outside":
                with g.disable_saved_tensors_hooks("hooks are off here"):
                    with g.saved_tensors_hooks(lambda t: t, lambda t: t):
                        pass
            elif order == "disable_inside":
                with g.saved_tensors_hooks(lambda t: t, lambda t: t):
                    with g.disable_saved_tensors_hooks("hooks are off here"):
                        pass
            elif order == "nested_disable":
                with g.disable_saved_tensors_hooks("outer message"):
                    with g.disable_saved_tensors_hooks("inner message"):
                        pass
                    with g.saved_tensors_hooks(lambda t: t, lambda t: t):
                        pass
            else:
                with g.disable_saved_tensors_hooks("hooks are off here"):
                    pass
                with g.saved_tensors_hooks(lambda t: t, lambda t: t):
                    x = leaf(L, 2)
                    return vals(x.exp())
        return error_of(prog) if order != "after_exit" else prog()
    assert run(torch) == run(ndgrad)


def test_register_hooks_on_a_raw_saved_tensor():
    def run(L):
        log = []
        x = leaf(L, 2)
        y = x.exp()
        raw = y.grad_fn._raw_saved_result
        raw.register_hooks(lambda t: log.append("pack") or t * 0 + 5,
                           lambda t: log.append("unpack") or t)
        twice = error_of(lambda: raw.register_hooks(lambda t: t, lambda t: t))
        y.sum().backward()
        return log, vals(x.grad), twice
    assert run(torch) == run(ndgrad)
