"""NumPy interop as torch's (Note [NumPy protocol] in ndgrad/_numpy_protocol.py), the
``return_types`` named tuples, NumPy-style ``axis=``/``keepdims=`` keywords and ``format()``."""

import operator
import warnings

import numpy as np
import pytest
import torch

import ndgrad

from _compare import outcome


def _value(r):
    """A comparable description of a result: its kind, dtype and values."""
    if isinstance(r, (torch.Tensor, ndgrad.Tensor)):
        return ("Tensor", str(r.dtype).split(".")[-1], r.detach().numpy().tolist())
    if isinstance(r, np.ndarray):
        return ("ndarray", str(r.dtype), r.tolist())
    if isinstance(r, tuple):
        return tuple(_value(x) for x in r)
    return (type(r).__name__, r)


def _both(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)     # torch's __array_wrap__
        t = outcome(lambda: _value(fn(torch)))
        n = outcome(lambda: _value(fn(ndgrad)))
    return t, n


def _t(m):
    return m.tensor([[1.0, -2.0], [3.0, 4.5]])


UFUNCS = {
    "exp": lambda m: np.exp(_t(m)),
    "add_scalar": lambda m: np.add(_t(m), 1),
    "sqrt_int": lambda m: np.sqrt(m.tensor([1, 4])),
    "maximum": lambda m: np.maximum(_t(m), 2.5),
    "isnan_bool_as_uint8": lambda m: np.isnan(_t(m)),
    "argmax": lambda m: np.argmax(_t(m)),
    "argmax_axis": lambda m: np.argmax(_t(m), axis=0),
    "cumsum": lambda m: np.cumsum(_t(m)),
    "matmul": lambda m: np.matmul(_t(m), _t(m)),
    "transpose": lambda m: np.transpose(_t(m)),
    "clip": lambda m: np.clip(_t(m), 0, 3),
    "modf": lambda m: np.modf(_t(m)),
    "zero_dim": lambda m: np.exp(m.tensor(1.0)),
    "add_reduce": lambda m: np.add.reduce(_t(m)),
    "asarray": lambda m: np.asarray(_t(m)),
    "array_dtype": lambda m: np.array(_t(m), dtype=np.float64),
    "concatenate": lambda m: np.concatenate([_t(m), _t(m)]),
    "float": lambda m: np.float64(m.tensor(2.5)),
    "mean_of_list": lambda m: np.mean([m.tensor(1.0), m.tensor(2.0)]),
    "requires_grad": lambda m: np.exp(m.ones(2, requires_grad=True)),
    "asarray_requires_grad": lambda m: np.asarray(m.ones(2, requires_grad=True)),
}


@pytest.mark.parametrize("case", sorted(UFUNCS))
def test_numpy_functions_on_tensors(case):
    t, n = _both(UFUNCS[case])
    assert t == n


def test_asarray_shares_memory_and_no_grad_allows_it():
    x = ndgrad.arange(4.0)
    a = np.asarray(x)
    a[0] = 7.0
    assert x[0].item() == 7.0
    y = ndgrad.ones(2, requires_grad=True)
    with ndgrad.no_grad():
        assert np.asarray(y).tolist() == [1.0, 1.0]


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "std", "var", "all",
                                  "any"])
@pytest.mark.parametrize("axis", [None, 0])
def test_numpy_reductions_refuse_as_torch(name, axis):
    # NumPy calls t.<name>(axis=..., out=...): torch's declared signatures refuse ``out``/
    # ``dtype`` there with a TypeError (the words differ: torch names another keyword)
    t, n = _both(lambda m: getattr(np, name)(_t(m), axis=axis))
    assert t[0] == n[0] == "TypeError"
    assert name in n[1]


def _ops():
    for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and_",
               "lt", "ge", "eq"):
        for other in ("f64", "int"):
            yield op, other, "tensor_first"
            yield op, other, "array_first"


@pytest.mark.parametrize("op,other,order", list(_ops()))
def test_operators_with_ndarrays(op, other, order):
    def run(m):
        t = m.tensor([3.0, 5.0]) if other == "f64" else m.tensor([3, 5])
        a = np.array([2.0, 4.0]) if other == "f64" else np.array([2, 3])
        f = getattr(operator, op)
        return f(t, a) if order == "tensor_first" else f(a, t)
    t, n = _both(run)
    assert t == n


def test_operators_with_ndarrays_special_cases():
    # f32 tensor @ f64 array: NumPy's matmul promotes (was a dtype error)
    t, n = _both(lambda m: m.ones(2, 2) @ np.ones((2, 2)))
    assert t == n and t[1][1] == "float64"
    # a tensor that requires grad cannot go through NumPy
    t, n = _both(lambda m: m.ones(2, requires_grad=True) * np.ones(2))
    assert t == n and t[0] == "RuntimeError"
    # == works either way round, also with requires_grad
    t, n = _both(lambda m: np.ones(2) == m.ones(2, requires_grad=True))
    assert t == n and t[0] == "ok"
    # in-place operators fall back to NumPy's out-of-place result, as in torch
    for m in (torch, ndgrad):
        x = m.ones(2)
        y = x
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)     # torch's __array_wrap__
            y += np.ones(2)
        assert y is not x and x.tolist() == [1.0, 1.0] and str(y.dtype).endswith("float64")
    # a number-like NumPy scalar is a number
    t, n = _both(lambda m: m.ones(2) * np.float32(2) + np.int64(1))
    assert t == n and t[1][1] == "float32"


RETURN_TYPES = {
    "max": lambda m, x: x.max(1), "min": lambda m, x: m.min(x, 0),
    "sort": lambda m, x: x.sort(), "topk": lambda m, x: x.topk(1),
    "kthvalue": lambda m, x: x.kthvalue(1), "mode": lambda m, x: x.mode(),
    "median": lambda m, x: x.median(0), "nanmedian": lambda m, x: x.nanmedian(0),
    "cummax": lambda m, x: x.cummax(0), "cummin": lambda m, x: x.cummin(1),
    "aminmax": lambda m, x: x.aminmax(), "frexp": lambda m, x: m.frexp(x),
    "slogdet": lambda m, x: m.slogdet(x), "linalg_slogdet": lambda m, x: m.linalg.slogdet(x),
    "linalg_qr": lambda m, x: m.linalg.qr(x),
    "linalg_eigh": lambda m, x: m.linalg.eigh(x @ x.T),
    "linalg_svd": lambda m, x: m.linalg.svd(x), "svd": lambda m, x: m.svd(x),
    "linalg_lu_factor": lambda m, x: m.linalg.lu_factor(x),
    "linalg_lu": lambda m, x: m.linalg.lu(x),
    "linalg_inv_ex": lambda m, x: m.linalg.inv_ex(x),
    "linalg_cholesky_ex": lambda m, x: m.linalg.cholesky_ex(x @ x.T + 1),
    "histogram": lambda m, x: m.histogram(x, 2),
    "triangular_solve": lambda m, x: m.triangular_solve(x, x.triu()),
}


@pytest.mark.filterwarnings("ignore::UserWarning")      # torch: triangular_solve deprecated
@pytest.mark.parametrize("name", sorted(RETURN_TYPES))
def test_return_types_are_torchs(name):
    rt = RETURN_TYPES[name](torch, torch.tensor([[1.0, 2.0], [4.0, 3.0]], dtype=torch.float64))
    rn = RETURN_TYPES[name](ndgrad, ndgrad.tensor([[1.0, 2.0], [4.0, 3.0]], dtype=ndgrad.float64))
    assert type(rn).__name__ == type(rt).__name__ == name
    assert type(rn).__module__ == "ndgrad.return_types"
    assert type(rn) is getattr(ndgrad.return_types, name)
    assert repr(rn).replace("ndgrad.", "torch.") == repr(rt)
    assert isinstance(rn, tuple) and len(rn) == len(rt)
    first = rt._fields[0] if hasattr(rt, "_fields") else None
    if first is None:   # torch's structseq: the field names through its repr
        first = repr(rt).split("(\n", 1)[1].split("=", 1)[0]
    assert getattr(rn, first) is rn[0]
    a, *rest = rn       # unpacks
    assert a is rn[0]


@pytest.mark.parametrize("call", [
    lambda m, x: x.sum(axis=0), lambda m, x: x.sum(axis=1, keepdims=True),
    lambda m, x: m.mean(x, axis=0), lambda m, x: x.max(axis=1),
    lambda m, x: x.std(axis=0), lambda m, x: x.argmax(axis=1),
    lambda m, x: m.cat([x, x], axis=1), lambda m, x: m.softmax(x, axis=0),
    lambda m, x: x.unsqueeze(axis=0), lambda m, x: x.cumsum(axis=1),
    lambda m, x: x.sum(0, axis=1), lambda m, x: x.sum(axis=0, keepdims=True, keepdim=False),
    lambda m, x: x.flip(axis=0),
])
def test_numpy_keyword_aliases(call):
    t, n = _both(lambda m: call(m, _t(m)))
    assert t[0] == n[0]
    if t[0] == "ok":
        assert t == n


def test_keyword_aliases_are_not_in_signatures():
    import inspect
    assert "axis" not in inspect.signature(ndgrad.sum).parameters
    assert "keepdims" not in inspect.signature(ndgrad.Tensor.sum).parameters
    assert inspect.signature(ndgrad.cumsum).parameters["dim"].default is inspect.Parameter.empty


def test_format_of_tensors():
    for m in (torch, ndgrad):
        x = m.tensor(0.25, requires_grad=True)
        assert f"{x:.3f}|{x}|{m.tensor(3):4d}|{m.tensor(True)}" == "0.250|0.25|   3|True"
        assert f"{m.tensor([1.0, 2.0])}" == "tensor([1., 2.])"
        with pytest.raises(TypeError, match="unsupported format string"):
            f"{m.tensor([1.0, 2.0]):.2f}"
