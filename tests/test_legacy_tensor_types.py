"""Legacy tensor types and constructors (ndgrad/legacy_tensor_types.py) against torch:
FloatTensor & co, Tensor(...), isinstance, Tensor.type, set_default_tensor_type, apply_/map_/
map2_."""

import pickle
import warnings

import numpy as np
import pytest
import torch

import ndgrad

from _compare import outcome

TYPES = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor",
         "CharTensor", "ShortTensor", "IntTensor", "LongTensor", "BoolTensor"]


def _value(r):
    if isinstance(r, (torch.Tensor, ndgrad.Tensor)):
        return (str(r.dtype).split(".")[1], tuple(r.shape),
                r.detach().to(_c64(r)).numpy().tolist())
    if isinstance(r, (torch.Size, ndgrad.Size)):
        return tuple(r)
    if isinstance(r, (torch.dtype, ndgrad.dtype)):
        return str(r).split(".")[1]
    if isinstance(r, tuple):
        return tuple(_value(x) for x in r)
    return r


def _c64(r):
    m = torch if isinstance(r, torch.Tensor) else ndgrad
    return m.complex128 if r.is_complex() else m.float64


def _same(fn, first_line=False):
    t = outcome(lambda: _value(fn(torch)))
    n = outcome(lambda: _value(fn(ndgrad)))
    if first_line and t[0] != "ok":
        t, n = (t[0], t[1].split("\n")[0]), (n[0], n[1].split("\n")[0])
    assert t == n


def _uninit(m, name, *args, **kw):
    r = getattr(m, name)(*args, **kw)        # uninitialized: compare dtype and shape only
    return str(r.dtype).split(".")[1], tuple(r.shape)


CONSTRUCTIONS = [
    lambda m, T: _uninit(m, T, 2, 3),
    lambda m, T: _uninit(m, T, 0),
    lambda m, T: _uninit(m, T, m.Size([2, 1])),
    lambda m, T: _uninit(m, T, np.int64(2)),
    lambda m, T: _uninit(m, T, 2, device="cpu"),
    lambda m, T: _uninit(m, T),
    lambda m, T: getattr(m, T)([1, 2]),
    lambda m, T: getattr(m, T)([[1.5, -2.0], [3.0, 0.0]]),
    lambda m, T: getattr(m, T)((2, 3)),
    lambda m, T: getattr(m, T)([-1, 300]) if T in ("ByteTensor",) else getattr(m, T)([1]),
    lambda m, T: getattr(m, T)(np.array([1.5, 2.0])),
    lambda m, T: getattr(m, T)([m.tensor(1.0), m.tensor(0.0)]),
    lambda m, T: getattr(m, T)(m.ones(2, dtype=getattr(m, T).dtype)),
    lambda m, T: getattr(m, T)(m.ones(2, dtype=m.float64 if T != "DoubleTensor" else m.int64)),
    lambda m, T: getattr(m, T)(2.5),
    lambda m, T: getattr(m, T)(True),
    lambda m, T: getattr(m, T)(None),
    lambda m, T: getattr(m, T)("a"),
    lambda m, T: getattr(m, T)(-1),
    lambda m, T: getattr(m, T)(2, -3),
    lambda m, T: getattr(m, T)(2, 3.0),
    lambda m, T: getattr(m, T)([[1], [2, 3]]),
    lambda m, T: getattr(m, T)(2, device="meta"),
]


@pytest.mark.parametrize("T", TYPES)
@pytest.mark.parametrize("k", range(len(CONSTRUCTIONS)))
def test_legacy_constructors(T, k):
    _same(lambda m: CONSTRUCTIONS[k](m, T))


@pytest.mark.parametrize("call", [
    lambda m: m.FloatTensor(2, dtype=m.float64),
    lambda m: m.FloatTensor([1], [2]),
    lambda m: m.FloatTensor(x=3),
    lambda m: m.FloatTensor([1.0], requires_grad=True),
])
def test_invalid_combinations(call):
    _same(call, first_line=True)


@pytest.mark.parametrize("call", [
    lambda m: _uninit(m, "Tensor", 2, 3),
    lambda m: m.Tensor([1, 2]),
    lambda m: m.Tensor(),
    lambda m: m.Tensor(np.array([1, 2])),
    lambda m: m.Tensor(m.tensor([1, 2])),               # any dtype: an alias
    lambda m: m.Tensor(m.Size([2, 3])).shape,
    lambda m: m.Tensor(2.5),
    lambda m: m.Tensor(m.ones(2), device="cpu"),
])
def test_tensor_constructor(call):
    _same(call)


def test_tensor_constructor_aliases_and_follows_the_default_dtype():
    for m in (torch, ndgrad):
        a = m.tensor([1, 2])
        b = m.Tensor(a)
        b.add_(1)
        assert a.tolist() == [2, 3] and a._version == 1
        x = m.ones(2, requires_grad=True)
        assert m.Tensor(x).requires_grad and not m.Tensor(x).is_leaf
        m.set_default_dtype(m.float64)
        try:
            assert str(m.Tensor([1]).dtype).endswith("float64")
            assert str(m.FloatTensor([1]).dtype).endswith("float32")
        finally:
            m.set_default_dtype(m.float32)


@pytest.mark.parametrize("check", [
    lambda m: isinstance(m.ones(2), m.FloatTensor),
    lambda m: isinstance(m.ones(2), m.DoubleTensor),
    lambda m: isinstance(m.tensor([1]), m.LongTensor),
    lambda m: isinstance(m.tensor([True]), m.BoolTensor),
    lambda m: isinstance(m.ones(2, requires_grad=True), m.FloatTensor),
    lambda m: isinstance(m.nn.Parameter(m.ones(1)), m.FloatTensor),
    lambda m: isinstance(m.FloatTensor(2), m.Tensor),
    lambda m: isinstance(1.0, m.FloatTensor),
    lambda m: isinstance(m.ones(2), m.cuda.FloatTensor),
    lambda m: issubclass(m.FloatTensor, m.Tensor),
    lambda m: type(m.FloatTensor(2)) is m.Tensor,
    lambda m: (m.FloatTensor.dtype, m.FloatTensor.is_cuda, m.FloatTensor.is_sparse),
    lambda m: (m.cuda.LongTensor.dtype, m.cuda.LongTensor.is_cuda),
    lambda m: (m.FloatTensor.__name__, repr(m.FloatTensor).replace("torch", "M")
               .replace("ndgrad", "M")),
    lambda m: pickle.loads(pickle.dumps(m.LongTensor)) is m.LongTensor,
    lambda m: m.cuda.FloatTensor(2),
])
def test_legacy_types(check):
    _same(check)


DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
          "uint8", "bool", "complex64", "complex128"]


@pytest.mark.parametrize("dt", DTYPES)
def test_type_names(dt):
    _same(lambda m: m.ones(1, dtype=getattr(m, dt)).type())


@pytest.mark.parametrize("call", [
    lambda m: m.ones(2).type(m.DoubleTensor),
    lambda m: m.tensor([1.7, -2.5]).type(m.LongTensor),
    lambda m: m.tensor([1.0, 0.0]).type(m.BoolTensor),
    lambda m: m.tensor([1.0, 0.0]).type("torch.IntTensor"),
    lambda m: m.tensor([1, 2]).type(m.Tensor),
    lambda m: m.tensor([1, 2]).type("torch.Tensor"),
    lambda m: m.ones(2).type(dtype=m.HalfTensor),
    lambda m: m.ones(2).type(m.DoubleTensor, non_blocking=True),
    lambda m: m.ones(2).type(m.float64),
    lambda m: m.ones(2).type("torch.float64"),
    lambda m: m.ones(2).type("DoubleTensor"),
    lambda m: m.ones(2).type(int),
    lambda m: m.ones(2).type(None),
])
def test_type_conversions(call):
    _same(call)


def test_type_keeps_identity_and_history():
    for m in (torch, ndgrad):
        t = m.ones(2)
        assert t.type(m.FloatTensor) is t
        r = m.ones(2, requires_grad=True).type(m.DoubleTensor)
        assert r.grad_fn.name() == "ToCopyBackward0"


def test_set_default_tensor_type():
    res = {}
    for m in (torch, ndgrad):
        out = []
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m.set_default_tensor_type(m.DoubleTensor)
            out.append(str(m.tensor([1.0]).dtype).split(".")[1])
            m.set_default_tensor_type("torch.FloatTensor")
            out.append(str(m.get_default_dtype()).split(".")[1])
            out.append(any("deprecated" in str(x.message) for x in w))
            for bad in (m.LongTensor, "torch.LongTensor", m.float64, "torch.cuda.FloatTensor",
                        3, "foo.Bar"):
                out.append(outcome(lambda m=m, bad=bad: m.set_default_tensor_type(bad)))
        m.set_default_dtype(m.float32)
        res[m.__name__] = out
    assert res["torch"] == res["ndgrad"]


# ---------------------------------------------------------------------------- apply_ / map_
def _nograd(m, f):
    with m.no_grad():
        return f()


APPLY = [
    lambda m: m.tensor([1.0, 2.0, 3.0]).apply_(lambda v: v * 2),
    lambda m: m.tensor([1, 2]).apply_(lambda v: v * 1.7),
    lambda m: m.tensor([True, False]).apply_(lambda v: not v),
    lambda m: m.tensor([True]).apply_(lambda v: 0.0),
    lambda m: m.tensor([1j, 2]).apply_(lambda v: v * 1j),
    lambda m: m.tensor(2.0).apply_(lambda v: v + 1),
    lambda m: m.tensor([1.0]).apply_(lambda v: m.tensor(5.0)),
    lambda m: m.tensor([1.0]).apply_(lambda v: np.float64(5.0)),
    lambda m: m.tensor([1.0, 2.0]).apply_(lambda v: "a"),
    lambda m: m.tensor([1.0, 2.0]).apply_(lambda v: None),
    lambda m: m.tensor([1.0]).apply_(lambda v: 1j),
    lambda m: m.tensor([1], dtype=m.uint8).apply_(lambda v: 300),
    lambda m: m.tensor([1], dtype=m.int32).apply_(lambda v: 1e20),
    lambda m: m.tensor([1.0, 2.0]).apply_(3),
    lambda m: m.tensor([1.0]).apply_(callable=lambda v: v),
    lambda m: m.tensor([1.0]).apply_(),
    lambda m: m.tensor([1.0, 2.0]).apply_(lambda v: 1 / 0),
    lambda m: m.tensor([1.0, 2.0], requires_grad=True).apply_(lambda v: v),
    lambda m: (m.tensor([1.0, 2.0], requires_grad=True) * 2).apply_(lambda v: v),
    lambda m: _nograd(m, lambda: m.tensor([1.0], requires_grad=True).apply_(lambda v: v)),
    lambda m: m.tensor([1.0, 2.0]).map_(m.tensor([10.0, 20.0]), lambda a, b: a + b),
    lambda m: m.tensor([[1.0, 2.0], [3.0, 4.0]]).map_(m.tensor([10.0, 20.0]),
                                                      lambda a, b: a * b),
    lambda m: m.tensor([1.0, 2.0]).map_(m.tensor(3.0), lambda a, b: a - b),
    lambda m: m.tensor([1.0, 2.0]).map_(m.tensor([[10.0, 20.0]]), lambda a, b: a + b),
    lambda m: m.tensor([1.0, 2.0]).map_(m.tensor([1, 2]), lambda a, b: a + b),
    lambda m: m.tensor([1.0, 2.0]).map_([1, 2], lambda a, b: a + b),
    lambda m: m.tensor([1.0, 2.0], requires_grad=True).map_(m.ones(2), lambda a, b: a),
    lambda m: m.tensor([1.0, 2.0]).map_(m.ones(2, requires_grad=True), lambda a, b: a),
    lambda m: m.tensor([1.0, 2.0]).map_(m.ones(2), lambda a, b: "x"),
    lambda m: m.tensor([1.0, 2.0]).map2_(m.tensor([1.0, 2.0]), m.tensor([3.0, 4.0]),
                                         lambda a, b, c: a * b + c),
]


@pytest.mark.parametrize("k", range(len(APPLY)))
def test_apply_and_map(k):
    _same(APPLY[k])


def test_apply_order_views_and_version():
    for m in (torch, ndgrad):
        seen = []
        b = m.arange(4.0).reshape(2, 2)
        b.t().apply_(lambda v, seen=seen: seen.append(v) or v * 10)   # the view's order
        assert seen == [0.0, 2.0, 1.0, 3.0]
        assert b.tolist() == [[0.0, 10.0], [20.0, 30.0]]
        assert b._version == 0                              # not an autograd modification
        c = m.tensor([1.0, 2.0, 3.0])
        c[1:].map_(m.tensor([1.0, 1.0]), lambda x, y: x + y)
        assert c.tolist() == [1.0, 3.0, 4.0]


def test_apply_raising_callback_writes_nothing():
    t = ndgrad.tensor([1.0, 0.0, 2.0])
    with pytest.raises(ZeroDivisionError):
        t.apply_(lambda v: 1 / v)
    assert t.tolist() == [1.0, 0.0, 2.0]


_NEW_CASES = {
    "sizes": lambda lib, x: x.new(2, 3).shape,
    "size_object": lambda lib, x: x.new(lib.Size([2])).shape,
    "data": lambda lib, x: x.new([1, 2]).tolist(),
    "nothing": lambda lib, x: x.new().shape,
    "dtype_kept": lambda lib, x: str(x.new([1, 2]).dtype).split(".")[-1],
    "same_dtype_tensor_aliases": lambda lib, x: (lambda y: (y.add_(1), x.tolist())[1])(x.new(x)),
    "other_dtype_tensor": lambda lib, x: x.new(lib.ones(2, dtype=lib.float32)),
    "dtype_keyword": lambda lib, x: x.new(2, dtype=lib.int64),
    "float": lambda lib, x: x.new(1.5),
    "no_grad_inherited": lambda lib, x: x.requires_grad_().new(2).requires_grad,
}


@pytest.mark.parametrize("case", sorted(_NEW_CASES))
def test_tensor_new_as_torch(case):
    got = []
    for lib in (ndgrad, torch):
        x = lib.zeros(2, dtype=lib.float64)
        try:
            got.append(("ok", _NEW_CASES[case](lib, x)))
        except Exception as e:  # noqa: BLE001 - compared between libraries
            got.append((type(e).__name__, str(e).split(" - ")[0].split(" (got")[0]))
    if case in ("sizes", "size_object", "nothing"):      # ndgrad.Size against torch.Size
        got = [(k, tuple(v)) for k, v in got]
    assert got[0] == got[1]
