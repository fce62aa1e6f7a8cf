"""In-place operations against PyTorch: every in-place method and ``x[idx] = v`` form is
differentiable (values, gradients, ``_version``, ``grad_fn``), PyTorch's refusals are raised
with its words and leave the tensors untouched, and in-place ops on views rewrite the base's
history (``CopySlices``) so that gradients through the base and every view are PyTorch's.
Each test runs the same program with ``torch`` and ``ndgrad`` and compares."""

import warnings

import numpy as np
import pytest
import torch

import ndgrad

LIBS = (torch, ndgrad)


def vals(t):
    return None if t is None else np.asarray(t.detach().tolist())


def close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return np.allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12)


def error_of(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - compared between libraries
        return type(e), str(e)
    return None


def leaf(L, *shape, scale=0.3):
    n = int(np.prod(shape)) if shape else 1
    data = (np.arange(n, dtype=np.float64).reshape(shape) * scale + 0.5)
    return L.tensor(data, dtype=L.float64, requires_grad=True)


def name(fn):
    return None if fn is None else fn.name()


# ---------------------------------------------------------------------------- in-place methods
# f(L, y, w) applies an in-place op to y = x * 1 (x, w leaves of shape (4,))
INPLACE = {
    "add_scalar": lambda L, y, w: y.add_(2),
    "add_tensor": lambda L, y, w: y.add_(w),
    "add_alpha": lambda L, y, w: y.add_(w, alpha=3),
    "add_broadcast_0d": lambda L, y, w: y.add_(w[2]),
    "sub_tensor": lambda L, y, w: y.sub_(w),
    "sub_alpha": lambda L, y, w: y.sub_(w, alpha=2),
    "sub_scalar": lambda L, y, w: y.sub_(0.5),
    "mul_scalar": lambda L, y, w: y.mul_(2),
    "mul_tensor": lambda L, y, w: y.mul_(w),
    "mul_self": lambda L, y, w: y.mul_(w).mul_(w),
    "div_scalar": lambda L, y, w: y.div_(2),
    "div_tensor": lambda L, y, w: y.div_(w),
    "pow_scalar": lambda L, y, w: y.pow_(2),
    "pow_fractional": lambda L, y, w: y.pow_(1.5),
    "pow_tensor": lambda L, y, w: y.pow_(w),
    "neg_": lambda L, y, w: y.neg_(),
    "exp_": lambda L, y, w: y.exp_(),
    "log_": lambda L, y, w: y.log_(),
    "sqrt_": lambda L, y, w: y.sqrt_(),
    "abs_": lambda L, y, w: y.sub_(1.5).abs_(),
    "clamp_both": lambda L, y, w: y.clamp_(1.0, 1.2),
    "clamp_min": lambda L, y, w: y.clamp_(min=1.0),
    "clamp_max": lambda L, y, w: y.clamp_(max=1.0),
    "clamp_tensor_bounds": lambda L, y, w: y.clamp_(w, w + 0.5),
    "relu_": lambda L, y, w: y.sub_(1).relu_(),
    "sigmoid_": lambda L, y, w: y.sigmoid_(),
    "tanh_": lambda L, y, w: y.tanh_(),
    "zero_": lambda L, y, w: y.zero_(),
    "fill_scalar": lambda L, y, w: y.fill_(3.0),
    "fill_tensor": lambda L, y, w: y.fill_(w[1]),
    "copy_": lambda L, y, w: y.copy_(w),
    "copy_broadcast": lambda L, y, w: y.copy_(w[2]),
    "copy_from_int": lambda L, y, w: y.copy_(L.tensor([1, 2, 3, 4])),
    "masked_fill_scalar": lambda L, y, w: y.masked_fill_(w > 0.9, 7.0),
    "masked_fill_tensor": lambda L, y, w: y.masked_fill_(w > 0.9, w[0]),
    "iadd": lambda L, y, w: y.__iadd__(w),
    "iadd_scalar": lambda L, y, w: y.__iadd__(1),
    "isub": lambda L, y, w: y.__isub__(w),
    "imul": lambda L, y, w: y.__imul__(w),
    "itruediv": lambda L, y, w: y.__itruediv__(w),
    "chain": lambda L, y, w: y.mul_(w).add_(1).neg_().abs_().sqrt_(),
}


def _run_inplace(L, op):
    x, w = leaf(L, 4), leaf(L, 4, scale=0.2)
    y = x * 1
    r = INPLACE[op](L, y, w)
    out = {"same_object": r is y, "version": y._version, "grad_fn": name(y.grad_fn),
           "next": [name(f) for f, _ in y.grad_fn.next_functions], "is_leaf": y.is_leaf,
           "value": vals(y)}
    (y * L.tensor([1.0, 2.0, 3.0, 4.0], dtype=L.float64)).sum().backward()
    out["x.grad"], out["w.grad"] = vals(x.grad), vals(w.grad)
    return out


@pytest.mark.parametrize("op", INPLACE)
def test_inplace_method_matches_torch(op):
    t, n = _run_inplace(torch, op), _run_inplace(ndgrad, op)
    for key in ("same_object", "version", "grad_fn", "next", "is_leaf"):
        assert t[key] == n[key], key
    for key in ("value", "x.grad", "w.grad"):
        assert close(t[key], n[key]), key


@pytest.mark.parametrize("op", ["mul_", "add_", "exp_", "zero_", "copy_"])
def test_inplace_on_tensor_not_requiring_grad_is_not_recorded(op):
    def run(L):
        y = L.arange(4.0, dtype=L.float64)
        {"mul_": lambda: y.mul_(2), "add_": lambda: y.add_(y), "exp_": y.exp_,
         "zero_": y.zero_, "copy_": lambda: y.copy_(L.ones(4))}[op]()
        return y.requires_grad, y.grad_fn, y._version, vals(y).tolist()
    assert run(torch) == run(ndgrad)


def test_inplace_with_an_operand_requiring_grad_makes_a_plain_tensor_require_grad():
    def run(L):
        w = leaf(L, 3)
        y = L.zeros(3, dtype=L.float64)
        y.add_(w * 2)
        r = [y.requires_grad, y.is_leaf, name(y.grad_fn), y._version]
        (y * y).sum().backward()
        return r + [vals(w.grad).tolist()]
    assert run(torch) == run(ndgrad)


def test_inplace_in_no_grad_on_leaf_is_allowed_and_not_recorded():
    def run(L):
        x = leaf(L, 3)
        with L.no_grad():
            x.mul_(2)
            x[0] = -1.0
        r = [x.is_leaf, x.requires_grad, x._version, vals(x).tolist()]
        (x * x).sum().backward()
        return r + [vals(x.grad).tolist()]
    assert run(torch) == run(ndgrad)


# ---------------------------------------------------------------------------- setitem
# f(L, y, v): y = x * 1 with x a (3, 4) leaf, v a (4,) leaf
SETITEM = {
    "int_scalar": lambda L, y, v: y.__setitem__(1, 5.0),
    "negative_int": lambda L, y, v: y.__setitem__(-1, v),
    "int_int": lambda L, y, v: y.__setitem__((2, 3), v[0]),
    "slice_scalar": lambda L, y, v: y.__setitem__(slice(1, None), -2.0),
    "slice_step_tensor": lambda L, y, v: y.__setitem__((slice(None), slice(None, None, 2)),
                                                        v[:2]),
    "column_broadcast": lambda L, y, v: y.__setitem__((slice(None), 1), v[3]),
    "row_broadcast": lambda L, y, v: y.__setitem__(slice(0, 2), v),
    "ellipsis": lambda L, y, v: y.__setitem__((Ellipsis, 0), v[:3]),
    "full_slice_tensor": lambda L, y, v: y.__setitem__(slice(None), v),
    "full_slice_scalar": lambda L, y, v: y.__setitem__(Ellipsis, 1.5),
    "full_slice_0d_tensor": lambda L, y, v: y.__setitem__(slice(None), v[1]),
    "mask_scalar": lambda L, y, v: y.__setitem__(y > 2.0, 0.0),
    "mask_tensor": lambda L, y, v: y.__setitem__(y > 3.0, v[0] * 2),
    "row_mask": lambda L, y, v: y.__setitem__(L.tensor([True, False, True]), v),
    "mask_values": lambda L, y, v: y.__setitem__(y < 1.0, v[:2]),
    "list_index": lambda L, y, v: y.__setitem__([0, 2], v),
    "tensor_index": lambda L, y, v: y.__setitem__(L.tensor([2, 0]), 3.0),
    "index_pairs": lambda L, y, v: y.__setitem__(([0, 2], [1, 3]), v[1:3]),
    "mixed_slice_list": lambda L, y, v: y.__setitem__((slice(1, None), [0, 3]), v[0]),
    "0d_tensor_index": lambda L, y, v: y.__setitem__(L.tensor(1), v),
    "numpy_scalar_value": lambda L, y, v: y.__setitem__(0, np.float64(2.5)),
    "bool_value": lambda L, y, v: y.__setitem__((slice(None), 0), True),
    "int_tensor_value": lambda L, y, v: y.__setitem__(1, L.tensor([1, 2, 3, 4])),
    "sequence": lambda L, y, v: (y.__setitem__(0, v), y.__setitem__((slice(None), 2), -1.0),
                                 y.__setitem__(y > 2.5, v[3])),
}


def _run_setitem(L, case):
    x, v = leaf(L, 3, 4), leaf(L, 4, scale=0.7)
    y = x * 1
    SETITEM[case](L, y, v)
    out = {"version": y._version, "grad_fn": name(y.grad_fn), "value": vals(y)}
    (y * L.arange(12.0, dtype=L.float64).reshape(3, 4)).sum().backward()
    out["x.grad"], out["v.grad"] = vals(x.grad), vals(v.grad)
    return out


@pytest.mark.parametrize("case", SETITEM)
def test_setitem_matches_torch(case):
    t, n = _run_setitem(torch, case), _run_setitem(ndgrad, case)
    assert t["version"] == n["version"]
    assert t["grad_fn"] == n["grad_fn"]
    for key in ("value", "x.grad", "v.grad"):
        assert close(t[key], n[key]), key


def test_setitem_on_plain_tensor_with_value_requiring_grad():
    def run(L):
        v = leaf(L, 2)
        y = L.zeros(2, 3, dtype=L.float64)
        y[:, 1] = v
        y[0] = v[1] * 3
        r = [y.requires_grad, name(y.grad_fn), y._version, vals(y).tolist()]
        (y * L.arange(6.0, dtype=L.float64).reshape(2, 3)).sum().backward()
        return r + [vals(v.grad).tolist()]
    assert run(torch) == run(ndgrad)


# ---------------------------------------------------------------------------- refusals
def _nograd_view_of_leaf(L):
    x = leaf(L, 4)
    with L.no_grad():
        v = x[1:]
    return v, x


def _nograd_view_of_nonleaf(L):
    y = leaf(L, 4) * 1
    with L.no_grad():
        v = y[1:]
    return v, y


def _inference_view(L):
    y = leaf(L, 4) * 1
    with L.inference_mode():
        v = y[1:]
    return v, y


# name -> (make(L) -> (target, other tensor to check untouched), op(L, target))
REFUSALS = {
    "leaf": (lambda L: (leaf(L, 4), None), lambda L, t: t.mul_(2)),
    "leaf_zero_": (lambda L: (leaf(L, 4), None), lambda L, t: t.zero_()),
    "leaf_copy_": (lambda L: (leaf(L, 4), None), lambda L, t: t.copy_(L.ones(4))),
    "leaf_iadd": (lambda L: (leaf(L, 4), None), lambda L, t: t.__iadd__(1)),
    "leaf_setitem_int": (lambda L: (leaf(L, 4), None), lambda L, t: t.__setitem__(0, 1.0)),
    "leaf_setitem_all": (lambda L: (leaf(L, 4), None),
                         lambda L, t: t.__setitem__(slice(None), 1.0)),
    "leaf_setitem_mask": (lambda L: (leaf(L, 4), None),
                          lambda L, t: t.__setitem__(t > 1, 1.0)),
    "leaf_setitem_list": (lambda L: (leaf(L, 4), None),
                          lambda L, t: t.__setitem__([0, 2], 1.0)),
    "view_of_leaf": (lambda L: (lambda x: (x[1:], x))(leaf(L, 4)), lambda L, t: t.mul_(2)),
    "view_of_view_of_leaf": (lambda L: (lambda x: (x.view(2, 2)[0], x))(leaf(L, 4)),
                             lambda L, t: t.add_(1)),
    "nograd_view_of_leaf": (_nograd_view_of_leaf, lambda L, t: t.mul_(2)),
    "nograd_view_of_nonleaf": (_nograd_view_of_nonleaf, lambda L, t: t.mul_(2)),
    "view_of_nograd_view": (lambda L: (lambda v, y: (v[1:], y))(*_nograd_view_of_nonleaf(L)),
                            lambda L, t: t.mul_(2)),
    "nograd_view_of_plain_with_grad_operand": (
        lambda L: (lambda y: (lambda v: (v, y))(_no_grad_view(L, y)))(L.ones(4)),
        lambda L, t: t.mul_(leaf(L, 3))),
    "inference_view": (_inference_view, lambda L, t: t.mul_(2)),
    "view_of_inference_view": (lambda L: (lambda v, y: (v[1:], y))(*_inference_view(L)),
                               lambda L, t: t.mul_(2)),
    "unbind_output": (lambda L: (lambda y: (y.unbind(0)[1], y))(leaf(L, 4) * 1),
                      lambda L, t: t.mul_(2)),
    "split_output": (lambda L: (lambda y: (y.split(2)[1], y))(leaf(L, 4) * 1),
                     lambda L, t: t.mul_(2)),
    "split_sizes_output": (lambda L: (lambda y: (y.split([1, 3])[1], y))(leaf(L, 4) * 1),
                           lambda L, t: t.mul_(2)),
    "chunk_output": (lambda L: (lambda y: (y.chunk(2)[0], y))(leaf(L, 4) * 1),
                     lambda L, t: t.zero_()),
    "view_of_split_output": (lambda L: (lambda y: (y.split(2)[1].view(2), y))(
        leaf(L, 4) * 1), lambda L, t: t.mul_(2)),
    "chunk_of_plain_with_grad_operand": (lambda L: (lambda y: (y.chunk(2)[0], y))(L.ones(4)),
                                         lambda L, t: t.mul_(leaf(L, 2))),
    "cast_float_to_long": (lambda L: (L.tensor([1, 2]), None), lambda L, t: t.add_(1.5)),
    "cast_float_tensor_to_long": (lambda L: (L.tensor([1, 2]), None),
                                  lambda L, t: t.mul_(L.tensor([1.5, 2.0]))),
    "cast_long_to_bool": (lambda L: (L.tensor([True, False]), None),
                          lambda L, t: t.add_(L.tensor([1, 2]))),
    "cast_complex_to_float": (lambda L: (L.ones(2), None),
                              lambda L, t: t.add_(L.tensor([1j, 2]))),
    "cast_div_long": (lambda L: (L.tensor([4, 6]), None), lambda L, t: t.div_(2)),
    "broadcast_bigger_operand": (lambda L: (L.ones(3), None),
                                 lambda L, t: t.add_(L.ones(2, 3))),
    "broadcast_mismatch": (lambda L: (L.ones(3), None), lambda L, t: t.mul_(L.ones(4))),
    "copy_bigger_source": (lambda L: (L.ones(3), None), lambda L, t: t.copy_(L.ones(2, 3))),
    "copy_mismatch": (lambda L: (L.ones(3), None), lambda L, t: t.copy_(L.ones(4))),
    "expanded": (lambda L: (lambda b: (b.expand(3, 4), b))(L.ones(3, 1)),
                 lambda L, t: t.mul_(2)),
    "expanded_setitem": (lambda L: (lambda b: (b.expand(3, 4), b))(L.ones(3, 1)),
                         lambda L, t: t.__setitem__(0, 2.0)),
    "expanded_nonleaf": (lambda L: (lambda y: (y[:, None].expand(4, 3), y))(leaf(L, 4) * 1),
                         lambda L, t: t.add_(1)),
    "setitem_shape": (lambda L: (L.ones(3, 4), None),
                      lambda L, t: t.__setitem__(0, L.ones(3))),
    "setitem_list_shape": (lambda L: (L.ones(3, 4), None),
                           lambda L, t: t.__setitem__([0, 1], L.ones(3))),
    "setitem_mask_shape": (lambda L: (L.ones(3, 4), None),
                           lambda L, t: t.__setitem__(t > 0, L.ones(3))),
    "fill_with_1d_tensor": (lambda L: (L.ones(3), None), lambda L, t: t.fill_(L.ones(2))),
    "setitem_list_value": (lambda L: (L.ones(3, 4), None),
                           lambda L, t: t.__setitem__(0, [1.0, 2.0, 3.0, 4.0])),
    "setitem_ndarray_value": (lambda L: (L.ones(3, 4), None),
                              lambda L, t: t.__setitem__(0, np.ones(4))),
    "setitem_none_value": (lambda L: (L.ones(3, 4), None),
                           lambda L, t: t.__setitem__([0, 1], None)),
    "setitem_complex_into_real": (lambda L: (L.ones(3, 4), None),
                                  lambda L, t: t.__setitem__(0, 1 + 2j)),
    "setitem_mixed_index_of_leaf": (lambda L: (leaf(L, 3, 4), None),
                                    lambda L, t: t.__setitem__((0, [1, 2]), 5.0)),
    "inference_tensor_outside_mode": (lambda L: (_inference_tensor(L), None),
                                      lambda L, t: t.add_(1)),
}


def _no_grad_view(L, y):
    with L.no_grad():
        return y[1:]


def _inference_tensor(L):
    with L.inference_mode():
        return L.ones(3)


def _state(t):
    if t is None:
        return None
    version = None if t.is_inference() else t._version
    return vals(t).tolist(), version


@pytest.mark.parametrize("case", REFUSALS)
def test_refused_inplace_raises_torch_error_and_writes_nothing(case):
    make, op = REFUSALS[case]
    errors = []
    for L in LIBS:
        target, other = make(L)
        before = (_state(target), _state(other))
        errors.append(error_of(lambda L=L, target=target: op(L, target)))
        # PyTorch writes an inference tensor before refusing to bump its version; ndgrad
        # never writes when it refuses.
        if L is ndgrad or case != "inference_tensor_outside_mode":
            assert (_state(target), _state(other)) == before, L.__name__
    assert errors[0] is not None
    assert errors[0] == errors[1]


def test_refusal_words():
    words = {
        "leaf": "a leaf Variable that requires grad is being used in an in-place operation.",
        "view_of_leaf": "a view of a leaf Variable that requires grad is being used in an "
                        "in-place operation.",
        "nograd_view_of_leaf": "A view was created in no_grad mode and is being modified "
                               "inplace with grad mode enabled.",
        "view_of_nograd_view": "Output 0 of Slice is a view of a view which was created in "
                               "no_grad mode",
        "inference_view": "A view was created in inference mode and is being modified inplace "
                          "in normal mode.",
        "unbind_output": "Output 1 of Unbind is a view and is being modified inplace. This view "
                         "is the output of a function that returns multiple views.",
        "view_of_split_output": "Output 0 of View is a view and is being modified inplace.",
        "chunk_of_plain_with_grad_operand": "A view was created in no_grad mode and is being "
                                            "modified inplace with grad mode enabled. This view "
                                            "is the output of a function that returns multiple",
        "cast_float_to_long": "result type Float can't be cast to the desired output type Long",
        "broadcast_bigger_operand": "output with shape [3] doesn't match the broadcast shape "
                                    "[2, 3]",
        "expanded": "unsupported operation: more than one element of the written-to tensor "
                    "refers to a single memory location.",
    }
    for case, text in words.items():
        make, op = REFUSALS[case]
        target, _ = make(ndgrad)
        err = error_of(lambda op=op, target=target: op(ndgrad, target))
        assert err is not None and text in err[1], case


def test_leaf_errors_come_before_overlap_errors():
    def run(L):
        x = leaf(L, 3, 1)
        return error_of(lambda: x.expand(3, 4).mul_(2))
    assert run(torch) == run(ndgrad)
    assert "a view of a leaf Variable" in run(ndgrad)[1]


# ---------------------------------------------------------------------------- views made in
# no_grad mode or by multi-output ops: modifying the base afterwards
def _after_base_modified(kind):
    def prog(L):
        x = leaf(L, 4)
        if kind == "plain_base":
            y = L.ones(4, dtype=L.float64)
        else:
            y = x * 1
        if kind == "split":
            v = y.split(2)[1]
        elif kind == "unbind":
            v = y.unbind()[1]
        else:
            with L.no_grad():
                v = y[1:]
        if kind == "modified_under_no_grad":
            with L.no_grad():
                v.mul_(2)
        else:
            y.mul_(x)
        r = [v.requires_grad]
        r.append(name(v.grad_fn))
        return r
    return prog


@pytest.mark.parametrize("kind", ["split", "unbind", "no_grad", "plain_base",
                                  "modified_under_no_grad"])
def test_view_that_cannot_be_regenerated_raises_on_use(kind):
    prog = _after_base_modified(kind)
    t, n = error_of(lambda: prog(torch)), error_of(lambda: prog(ndgrad))
    assert t is not None and t == n
    assert "its base or another view of its base has been modified inplace" in n[1]


def test_no_grad_view_of_plain_tensor_can_be_modified_without_grad_operands():
    def run(L):
        y = L.ones(4)
        with L.no_grad():
            v = y[1:]
        v.mul_(2)
        y.add_(1)
        return vals(y).tolist(), vals(v).tolist(), v.requires_grad, y._version
    assert run(torch) == run(ndgrad)


def test_multi_output_view_modified_in_no_grad_mode():
    def run(L):
        y = leaf(L, 4) * 1
        v = y.split(2)[1]
        with L.no_grad():
            v.mul_(2)
            v.mul_(2)
        return vals(y).tolist(), y._version, name(y.grad_fn)
    assert run(torch) == run(ndgrad)


def test_no_grad_view_of_leaf_requires_grad_but_gets_no_gradient():
    def run(L):
        x = leaf(L, 4)
        with L.no_grad():
            v = x[1:]
        r = [v.requires_grad, v.is_leaf, v.grad_fn]
        w = v[1:]                         # a view of it made with grad mode on
        r += [w.requires_grad, w.is_leaf, name(w.grad_fn)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ((v * 2).sum() + w.sum()).backward()
            r += [x.grad, v.grad]
        return r
    assert run(torch) == run(ndgrad) == [True, True, None, True, False, "SliceBackward0",
                                         None, None]


# ---------------------------------------------------------------------------- in-place on views
# rewrites history: every case compares values, versions, grad_fn names and gradients
def _case_slice_of_mul(L):
    x = leaf(L, 4)
    y = x * 1
    v = y[1:3].mul_(2)
    r = [name(y.grad_fn), name(v.grad_fn), y._version, v._version, v._base is y, vals(y)]
    (y * L.arange(4.0, dtype=L.float64)).sum().backward()
    return r + [vals(x.grad)]


def _case_base_then_view(L):
    x = leaf(L, 4)
    y = x * 1
    v = y[1:3]
    y.mul_(3)
    r = [name(v.grad_fn), vals(v), v._version]
    (v * L.tensor([1.0, 5.0], dtype=L.float64)).sum().backward()
    return r + [vals(x.grad)]


def _case_base_exp_then_view(L):
    x = leaf(L, 4)
    y = x * 1
    v = y[1:3]
    y.exp_()
    (v * L.tensor([1.0, 5.0], dtype=L.float64)).sum().backward()
    return [vals(v), vals(x.grad)]


def _case_view_of_view(L):
    x = leaf(L, 3, 4)
    y = x * 1
    v = y[1:]
    w = v[:, ::2]
    w.mul_(L.tensor([2.0, 3.0], dtype=L.float64))
    r = [w._base is y, name(y.grad_fn), name(v.grad_fn), name(w.grad_fn), y._version,
         v._version]
    ((y ** 2).sum() + (v * 3).sum() + w.sum()).backward()
    return r + [vals(x.grad)]


def _case_overlapping_views(L):
    x = leaf(L, 6)
    y = x * 2
    a, b = y[0:4], y[2:6]
    a.mul_(2)
    b.add_(a[1:].sum())
    r = [vals(y), vals(a), vals(b)]
    (y.sum() + (a * b).sum()).backward()
    return r + [vals(x.grad)]


def _case_mask_in_model(L):
    x, w = leaf(L, 2, 3), leaf(L, 3, 3, scale=0.1)
    h = x @ w
    h[h > 1.5] = 0.0
    h[:, 0] = h[:, 1] * 2
    (h.tanh() ** 2).sum().backward()
    return [name(h.grad_fn), h._version, vals(x.grad), vals(w.grad)]


def _case_copy_into_slice(L):
    x, s = leaf(L, 5), leaf(L, 2, scale=1.0)
    y = x * 2
    y[1:3].copy_(s * s)
    (y * L.arange(5.0, dtype=L.float64)).sum().backward()
    return [name(y.grad_fn), vals(y), vals(x.grad), vals(s.grad)]


def _case_transposed(L):
    x = leaf(L, 3, 4)
    y = x.sin()
    yt = y.t()
    yt[1].mul_(L.tensor([1.0, 2.0, 3.0], dtype=L.float64))
    yt.add_(1)
    y.cos().sum().backward()
    return [name(y.grad_fn), name(yt.grad_fn), y._version, vals(x.grad)]


def _case_diagonal(L):
    x = leaf(L, 3, 3)
    y = x * x
    d = y.diagonal()
    d.mul_(10)
    d.add_(leaf(L, 3, scale=2.0))
    (y * L.arange(9.0, dtype=L.float64).reshape(3, 3)).sum().backward()
    return [name(y.grad_fn), vals(y), vals(x.grad)]


def _case_modified_in_no_grad(L):
    x = leaf(L, 4)
    y = x * 2
    v = y[::2]
    with L.no_grad():
        y.mul_(2)
    r = [name(v.grad_fn), name(y.grad_fn)]
    v.sum().backward()
    return r + [vals(x.grad)]


def _case_expand_then_base(L):
    x = leaf(L, 3)
    y = x * 1
    e = y.unsqueeze(0).expand(2, 3)
    y.mul_(2)
    (e * L.arange(6.0, dtype=L.float64).reshape(2, 3)).sum().backward()
    return [vals(e), vals(x.grad)]


def _case_reshape_views(L):
    x = leaf(L, 2, 3)
    y = x + 0
    r_ = y.reshape(3, 2)
    r_[0].zero_()
    r_.view(6)[5].fill_(7.0)
    (y * L.arange(6.0, dtype=L.float64).reshape(2, 3)).sum().backward()
    return [vals(y), vals(x.grad), name(y.grad_fn), name(r_.grad_fn)]


def _case_narrow_select(L):
    x = leaf(L, 4, 3)
    y = x * 1
    y.narrow(0, 1, 2).select(1, 2).sub_(L.tensor([1.0, 2.0], dtype=L.float64), alpha=3)
    (y ** 2).sum().backward()
    return [vals(y), vals(x.grad)]


def _case_squeeze(L):
    x = leaf(L, 3, 1)
    y = x * 1
    s = y.squeeze(1)
    s.pow_(2)
    y.sum().backward()
    return [vals(x.grad), name(s.grad_fn), name(y.grad_fn)]


def _case_as_strided_unfold(L):
    x = leaf(L, 6)
    y = x * 1
    a = y.as_strided((2, 2), (3, 1), 1)
    a.mul_(5)
    u = y.unfold(0, 3, 2)
    (u * L.arange(6.0, dtype=L.float64).reshape(2, 3)).sum().backward()
    return [vals(y), vals(u), vals(x.grad)]


def _case_complex_parts(L):
    z = L.tensor([1 + 2j, 3 - 1j], dtype=L.complex128, requires_grad=True)
    w = z * 1
    w.real.mul_(2)
    w.imag.add_(1)
    (w.abs() ** 2).sum().backward()
    return [vals(w.real), vals(w.imag), vals(z.grad.real), vals(z.grad.imag), name(w.grad_fn)]


def _case_view_after_setitem_on_base(L):
    x = leaf(L, 4)
    y = x * 1
    v = y[1:]
    y[0] = 5.0
    w = v[1:]
    w.mul_(2)
    (y * y).sum().backward()
    return [vals(x.grad), name(w.grad_fn), name(v.grad_fn)]


def _case_other_operand_is_a_view(L):
    x = leaf(L, 2, 3)
    y = x * 3
    y[0].add_(y[1])
    y[1].mul_(y[0] * 1)
    (y * y).sum().backward()
    return [vals(y), vals(x.grad)]


HISTORY = {k[len("_case_"):]: v for k, v in dict(globals()).items() if k.startswith("_case_")}


@pytest.mark.parametrize("case", HISTORY)
def test_inplace_on_views_rewrites_history(case):
    t, n = HISTORY[case](torch), HISTORY[case](ndgrad)
    assert len(t) == len(n)
    for a, b in zip(t, n):
        if isinstance(a, np.ndarray):
            assert close(a, b)
        else:
            assert a == b


def test_saved_view_regenerated_after_base_modified_names_its_new_history():
    def run(L):
        x = leaf(L, 2, 3)
        y = x.sigmoid()
        r0, c1 = y[0], y[:, 1]
        r0.mul_(c1[1])
        err = error_of(lambda: (c1 * 3).sum().backward())
        return err[0], err[1].split(" is at version")[0]
    t, n = run(torch), run(ndgrad)
    assert t == n
    assert "which is output 0 of AsStrided" in n[1]


@pytest.mark.parametrize("create_graph_case", ["mul_by_self", "setitem", "exp_on_view"])
def test_double_backward_through_copyslices(create_graph_case):
    def run(L):
        x = leaf(L, 4)
        y = x * x
        if create_graph_case == "mul_by_self":
            y[1:3].mul_(x[1:3])
        elif create_graph_case == "setitem":
            y[::2] = x[1::2] ** 3
        else:
            y[1:].exp_()
        g, = L.autograd.grad((y * y).sum(), x, create_graph=True)
        gg, = L.autograd.grad((g * g.detach()).sum() + g[2], x)
        return vals(g), vals(gg), name(y.grad_fn)
    (gt, ggt, nt), (gn, ggn, nn) = run(torch), run(ndgrad)
    assert nt == nn
    assert close(gt, gn) and close(ggt, ggn)


def test_inplace_op_on_view_returns_the_view_with_regenerated_history():
    def run(L):
        x = leaf(L, 3, 3)
        y = x * 1
        v = y[1]
        r = v.add_(1)
        return (r is v, name(v.grad_fn), [name(f) for f, _ in v.grad_fn.next_functions],
                v.is_leaf, v._version, y._version)
    assert run(torch) == run(ndgrad)


# ---------------------------------------------------------------------------- memory overlap
# f(y) on y = arange(6.): PyTorch refuses partial overlap between the written-to tensor and an
# input when it can tell (both dense); index_put_ refuses any overlap.
OVERLAP = {
    "add_self": lambda y: y.add_(y),
    "add_full_view": lambda y: y.add_(y.view(6)),
    "add_shifted": lambda y: y[1:].add_(y[:-1]),
    "iadd_shifted": lambda y: y[1:].__iadd__(y[:-1]),
    "sub_shifted": lambda y: y[1:].sub_(y[:-1]),
    "pow_shifted": lambda y: y[1:].pow_(y[:-1]),
    "add_0d_element": lambda y: y.add_(y[0]),
    "mul_0d_element": lambda y: y.mul_(y[0]),
    "add_disjoint": lambda y: y[:3].add_(y[3:]),
    "add_interleaved": lambda y: y[::2].add_(y[1::2]),
    "div_by_a_copy": lambda y: y[1:].div_(y[:-1] + 1),
    "copy_shifted": lambda y: y[1:4].copy_(y[0:3]),
    "copy_self": lambda y: y.copy_(y),
    "setitem_shifted": lambda y: y.__setitem__(slice(1, 4), y[0:3]),
    "setitem_list_overlapping": lambda y: y.__setitem__([1, 2], y[0:2]),
    "setitem_mask_overlapping": lambda y: y.__setitem__(y > 2, y[0:3]),
    "setitem_interleaved": lambda y: y.__setitem__(slice(None, None, 2), y[1::2]),
    "fill_0d_element": lambda y: y.fill_(y[2]),
    "masked_fill_0d_element": lambda y: y.masked_fill_(y > 2, y[0]),
    "clamp_by_elements": lambda y: y.clamp_(y[0], y[3]),
    "clamp_by_self": lambda y: y.clamp_(y, y),
}


@pytest.mark.parametrize("case", OVERLAP)
def test_memory_overlap_between_output_and_input(case):
    def run(L):
        y = L.arange(6.0, dtype=L.float64)
        err = error_of(lambda: OVERLAP[case](y))
        return err, vals(y).tolist(), y._version
    t, n = run(torch), run(ndgrad)
    assert t == n


def test_masked_fill_mask_that_does_not_broadcast():
    def run(L):
        x = L.ones(2, 3)
        return error_of(lambda: x.masked_fill_(L.tensor([True, False]), 0.0)), \
            error_of(lambda: x.masked_fill_(L.ones(2, 2, 3) > 0, 0.0)), x._version
    assert run(torch) == run(ndgrad)


# ---------------------------------------------------------------------------- hooks, retain_grad
def test_retain_grad_follows_the_tensor_through_an_inplace_op():
    def run(L):
        x = leaf(L, 4)
        y = x * 2
        y.retain_grad()
        y.mul_(3)
        y.sum().backward()
        return vals(y.grad), vals(x.grad)
    t, n = run(torch), run(ndgrad)
    assert close(t[0], n[0]) and close(t[1], n[1])


def test_retain_grad_on_a_view_follows_its_regenerated_history():
    def run(L):
        x = leaf(L, 4)
        y = x * 2
        v = y[1:]
        v.retain_grad()
        y.mul_(3)
        (v * 2).sum().backward()
        return vals(v.grad), vals(x.grad)
    t, n = run(torch), run(ndgrad)
    assert close(t[0], n[0]) and close(t[1], n[1])


def test_tensor_hook_registered_before_an_inplace_op():
    def run(L):
        x = leaf(L, 4)
        y = x * 2
        seen = []
        y.register_hook(lambda g: seen.append(vals(g)))
        y.mul_(3)
        y.sum().backward()
        return seen, vals(x.grad)
    t, n = run(torch), run(ndgrad)
    assert len(t[0]) == len(n[0]) == 1
    assert close(t[0][0], n[0][0]) and close(t[1], n[1])


@pytest.mark.parametrize("which", ["view_of_nonleaf", "view_of_leaf", "nonleaf"])
def test_detach_in_place(which):
    def run(L):
        x = leaf(L, 4)
        t = {"view_of_nonleaf": lambda: (x * 1)[1:], "view_of_leaf": lambda: x[1:],
             "nonleaf": lambda: x * 1}[which]()
        err = error_of(t.detach_)
        return err, t.requires_grad, t.is_leaf
    assert run(torch) == run(ndgrad)


def test_view_of_plain_tensor_requires_grad_once_its_base_does():
    def run(L):
        w = leaf(L, 3)
        y = L.zeros(4, dtype=L.float64)
        v = y[1:]
        r = [v.requires_grad]
        y[:3].add_(w)                   # y now requires grad: so does its view
        r += [y.requires_grad, v.requires_grad, v.grad_fn.name(), v.is_leaf]
        (v * v).sum().backward()
        return r + [vals(w.grad).tolist()]
    assert run(torch) == run(ndgrad)
