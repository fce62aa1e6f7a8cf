"""Tensor.as_subclass and Tensor.set_ against torch: data sharing, shapes/strides/offsets,
versions, autograd history and errors (ndgrad/ops/storage_set.py)."""

import numpy as np
import pytest
import torch

import ndgrad

from _compare import outcome


def _sub(m):
    return type("Tagged", (m.Tensor,), {})


def test_as_subclass_shares_data_and_history():
    for m in (torch, ndgrad):
        sub = _sub(m)
        x = m.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        s = y.as_subclass(sub)
        assert type(s) is sub and s is not y
        assert s.grad_fn.name() == "AliasBackward0" and not s.is_leaf
        assert s.data_ptr() == y.data_ptr() and s._base is not None
        (s * 3).sum().backward()
        assert x.grad.tolist() == [6.0, 6.0]
        xs = x.as_subclass(sub)
        assert xs.grad_fn.name() == "AliasBackward0" and not xs.is_leaf
        plain = m.tensor([1.0, 2.0])
        p = plain.as_subclass(sub)
        assert p.grad_fn is None and not p.requires_grad and p._base is not None
        p.add_(1)                            # shared memory and version counter
        assert plain.tolist() == [2.0, 3.0] and plain._version == p._version == 1
        with m.no_grad():
            n = x.as_subclass(sub)
        assert (n.grad_fn, n.requires_grad, n.is_leaf) == (None, True, True)
        assert type(s.as_subclass(m.Tensor)) is m.Tensor


@pytest.mark.parametrize("cls", [int, object, "str"])
def test_as_subclass_refuses_non_tensor_classes(cls):
    t = outcome(lambda: torch.ones(2).as_subclass(cls))
    n = outcome(lambda: ndgrad.ones(2).as_subclass(cls))
    assert t[0] == n[0] == "TypeError" and t[1] == n[1]


def test_as_subclass_refuses_inplace_on_alias_of_leaf():
    for m in (torch, ndgrad):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        with pytest.raises(RuntimeError, match="a view of a leaf Variable"):
            x.as_subclass(_sub(m)).add_(1)


def _layout(t):
    # (an empty tensor's strides differ from torch's everywhere in ndgrad: zeros(0) too)
    stride = t.stride() if t.numel() else None
    return (list(t.shape), stride, t.storage_offset(), t.tolist(), t._version)


SET_CASES = {
    "tensor": lambda m, a, b: a.set_(b),
    "transposed": lambda m, a, b: a.set_(b.t()),
    "row": lambda m, a, b: a.set_(b[1]),
    "empty": lambda m, a, b: a.set_(),
    "window": lambda m, a, b: a.set_(b, 1, (2,), (2,)),
    "window_default_stride": lambda m, a, b: a.set_(b, 1, (2, 2)),
    "window_of_view": lambda m, a, b: a.set_(b[1], 1, (2,), (1,)),
    "keywords": lambda m, a, b: a.set_(b, storage_offset=1, size=(2,), stride=(2,)),
    "source_keyword": lambda m, a, b: a.set_(source=b),
}


@pytest.mark.parametrize("case", sorted(SET_CASES))
def test_set_layouts_as_torch(case):
    res = []
    for m in (torch, ndgrad):
        a = m.zeros(3)
        b = m.arange(6.0).reshape(2, 3)
        r = SET_CASES[case](m, a, b)
        assert r is a
        before = b._version
        res.append(_layout(a) + (b._version - before,))
        if a.numel() and a.is_contiguous():
            a.view(-1)[0] = 100.0
            assert 100.0 in b.flatten().tolist()  # the memory is shared
    assert res[0] == res[1]


SET_ERRORS = {
    "leaf_requires_grad": lambda m: m.zeros(3, requires_grad=True).set_(m.ones(2)),
    "dtype": lambda m: m.zeros(3).set_(m.ones(2, dtype=m.float64)),
    "dtype_long": lambda m: m.zeros(3).set_(m.ones(2, dtype=m.int64)),
    "int": lambda m: m.zeros(3).set_(5),
    "int_keyword": lambda m: m.zeros(3).set_(source=5),
    "tensor_str": lambda m: m.zeros(3).set_(m.ones(2), "a"),
    "tensor_int_int": lambda m: m.zeros(3).set_(m.ones(2), 1, 2),
    "out_of_bounds": lambda m: m.zeros(2).set_(m.arange(6.0)[2:], 3, (2,), (1,)),
    "negative_offset": lambda m: m.zeros(2).set_(m.arange(6.0), -1, (2,), (1,)),
    "backward": lambda m: m.zeros(3).set_(m.ones(2, requires_grad=True)).sum().backward(),
}


@pytest.mark.parametrize("case", sorted(SET_ERRORS))
def test_set_errors_as_torch(case):
    t = outcome(lambda: SET_ERRORS[case](torch))
    n = outcome(lambda: SET_ERRORS[case](ndgrad))
    assert t[0] == n[0] != "ok"
    # the first line (torch's overload list follows it, without the "didn't match" details)
    assert n[1].split("\n")[0] == t[1].split("\n")[0]


def test_set_autograd_state_as_torch():
    for m in (torch, ndgrad):
        a = m.zeros(3).set_(m.ones(2, requires_grad=True))
        assert a.requires_grad and a.grad_fn.name() == "torch::autograd::NotImplemented"
        c = (m.zeros(3, requires_grad=True) * 2).set_(m.ones(2))
        assert c.grad_fn.name() == "torch::autograd::NotImplemented"
        with m.no_grad():
            d = m.zeros(3, requires_grad=True).set_(m.ones(2))
        assert d.requires_grad and d.is_leaf
        e = m.zeros(3).set_(m.ones(2))
        assert not e.requires_grad and e.grad_fn is None


def test_set_values_follow_source_writes():
    a, b = ndgrad.zeros(1), ndgrad.arange(4.0)
    a.set_(b)
    b.mul_(2)
    np.testing.assert_array_equal(a.numpy(), [0.0, 2.0, 4.0, 6.0])


def test_set_with_dual_source_refused_as_torch():
    def run(m):
        fw = m.autograd.forward_ad
        with fw.dual_level():
            d = fw.make_dual(m.ones(2), m.ones(2))
            return outcome(lambda: m.zeros(3).set_(d))
    t, n = run(torch), run(ndgrad)
    assert t[0] == n[0] == "NotImplementedError"
    assert t[1].startswith(n[1].rstrip("."))


def test_set_to_a_storage_as_torch():
    import warnings
    res = []
    for L in (torch, ndgrad):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # TypedStorage is deprecated in torch
            b = L.arange(6.0)
            a1 = L.zeros(1).set_(b.untyped_storage())
            a2 = L.zeros(1).set_(b.untyped_storage(), 1, (2,), (2,))
            a3 = L.zeros(1).set_(b.storage())
            a4 = L.zeros(1).set_(b[2:].untyped_storage())
            a5 = L.zeros(1, dtype=L.float64).set_(b.untyped_storage())
            a5[0] = 100.0
            with pytest.raises(RuntimeError) as e:
                L.zeros(1, dtype=L.float64).set_(b.storage())
        res.append(([a.tolist() for a in (a1, a2, a3, a4)], tuple(a5.shape), b[:2].tolist(),
                    str(e.value)))
    assert res[0] == res[1]
