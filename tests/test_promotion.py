"""Type promotion of mixed operands against PyTorch: result dtypes (and values) of binary ops
for tensors of different dtypes, 0-d tensors and Python scalars, and the dtypes of the
gradients (each input's own dtype)."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import ndgrad


def _dtype_name(t):
    return str(t.dtype).split(".")[-1]


def _make(m, spec):
    """``("float32", (2,))`` is a tensor of that dtype and shape; anything else is a scalar."""
    if not isinstance(spec, tuple):
        return spec
    dtype, shape = spec
    return m.tensor([1.0, 2.0, 3.0][:shape[0]] if shape else 2.0).to(getattr(m, dtype))


OPS = {
    "add": lambda m, a, b: a + b,
    "sub": lambda m, a, b: a - b,
    "mul": lambda m, a, b: a * b,
    "truediv": lambda m, a, b: a / b,
    "floordiv": lambda m, a, b: a // b,
    "pow": lambda m, a, b: a ** b,
    "add_function": lambda m, a, b: m.add(a, b),
    "mul_function": lambda m, a, b: m.mul(a, b),
    "div_function": lambda m, a, b: m.div(a, b),
    "eq": lambda m, a, b: a == b,
    "lt": lambda m, a, b: a < b,
}
TENSOR_OPS = {
    "maximum": lambda m, a, b: m.maximum(a, b),
    "minimum": lambda m, a, b: m.minimum(a, b),
    "where": lambda m, a, b: m.where(a > 1, a, b),
    "cat": lambda m, a, b: m.cat([a.reshape(-1), b.reshape(-1)]),
    "clamp_tensor": lambda m, a, b: m.clamp(a, min=b),
}

# (name, left, right): the cases named in the spec, then a wider net.
PAIRS = [
    ("int64+float32", ("int64", (2,)), ("float32", (2,))),
    ("int32*2.5", ("int32", (2,)), 2.5),
    ("bool+int", ("bool", (2,)), ("int64", (2,))),
    ("bool+int_scalar", ("bool", (2,)), 3),
    ("bool+True", ("bool", (2,)), True),
    ("float32+float64", ("float32", (2,)), ("float64", (2,))),
    ("float32+float64_0d", ("float32", (2,)), ("float64", ())),
    ("float64_0d+float32", ("float64", ()), ("float32", (2,))),
    ("float16+bfloat16", ("float16", (2,)), ("bfloat16", (2,))),
    ("int/int", ("int64", (2,)), ("int64", (2,))),
    ("int32/int16", ("int32", (2,)), ("int16", (2,))),
    ("float32*complex", ("float32", (2,)), 1 + 2j),
    ("float64*complex", ("float64", (2,)), 2j),
    ("int*complex", ("int64", (2,)), 1j),
    ("int64+2", ("int64", (2,)), 2),
    ("int32+int64_0d", ("int32", (2,)), ("int64", ())),
    ("int32_0d+int64_0d", ("int32", ()), ("int64", ())),
    ("uint8+int8", ("uint8", (2,)), ("int8", (2,))),
    ("int8+float16_0d", ("int8", (2,)), ("float16", ())),
    ("float16+2.5", ("float16", (2,)), 2.5),
    ("bfloat16+2.5", ("bfloat16", (2,)), 2.5),
    ("float16+float32_0d", ("float16", (2,)), ("float32", ())),
    ("bfloat16+float64_0d", ("bfloat16", (2,)), ("float64", ())),
    ("float32+complex64_0d", ("float32", (2,)), ("complex64", ())),
    ("int64_0d+2.5", ("int64", ()), 2.5),
    ("float32_0d+float64_0d", ("float32", ()), ("float64", ())),
]
REFLECTED = [(name, b, a) for name, a, b in PAIRS if not isinstance(b, tuple)]


def _compare(fn, a_spec, b_spec):
    results = []
    for m in (ndgrad, torch):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                results.append(fn(m, _make(m, a_spec), _make(m, b_spec)))
        except (RuntimeError, TypeError, NotImplementedError) as e:
            results.append(type(e))
    got, want = results
    if isinstance(want, type):
        assert isinstance(got, type) and issubclass(got, want)
        return
    assert not isinstance(got, type), f"ndgrad raised {got.__name__}, torch gave {want.dtype}"
    assert _dtype_name(got) == _dtype_name(want)
    np.testing.assert_allclose(np.asarray(got.tolist()), np.asarray(want.tolist()), rtol=1e-2)


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("name,a,b", PAIRS + REFLECTED,
                         ids=[p[0] for p in PAIRS] + ["r:" + p[0] for p in REFLECTED])
def test_binary_result_dtype(op, name, a, b):
    _compare(OPS[op], a, b)


@pytest.mark.parametrize("op", sorted(TENSOR_OPS))
@pytest.mark.parametrize("name,a,b", [p for p in PAIRS if isinstance(p[2], tuple)],
                         ids=[p[0] for p in PAIRS if isinstance(p[2], tuple)])
def test_tensor_op_result_dtype(op, name, a, b):
    _compare(TENSOR_OPS[op], a, b)


# Result dtypes of unary ops, reductions and ops with mixed operands beyond binary arithmetic.
MIXED = {
    "sum_int32": lambda m: m.tensor([1, 2], dtype=m.int32).sum(),
    "sum_bool": lambda m: m.tensor([True, False]).sum(),
    "sum_dim_uint8": lambda m: m.tensor([[1, 2]], dtype=m.uint8).sum(1),
    "sum_dtype": lambda m: m.tensor([1, 2]).sum(dtype=m.float32),
    "sum_float16": lambda m: m.tensor([1.0, 2.0], dtype=m.float16).sum(),
    "sum_dim_bfloat16": lambda m: m.tensor([[1.0, 2.0]], dtype=m.bfloat16).sum(1),
    "prod_int32": lambda m: m.tensor([1, 2], dtype=m.int32).prod(),
    "prod_dim_bool": lambda m: m.tensor([[True, False]]).prod(1),
    "prod_dtype": lambda m: m.tensor([1.0, 2.0], dtype=m.float16).prod(dtype=m.float32),
    "mean_dtype": lambda m: m.tensor([1, 2]).mean(dtype=m.float64),
    "mean_float16": lambda m: m.tensor([1.0, 2.0], dtype=m.float16).mean(),
    "max_int32": lambda m: m.tensor([1, 2], dtype=m.int32).max(),
    "max_dim_bool": lambda m: m.tensor([[True, False]]).max(1).values,
    "clamp_int_float_bounds": lambda m: m.tensor([1, 5]).clamp(0.5, 2.5),
    "clamp_int_tensor_bound": lambda m: m.clamp(m.tensor([1, 5]), m.tensor(0.5)),
    "where_int_float_scalar": lambda m: m.where(m.tensor([True, False]), m.tensor([1, 2]), 2.5),
    "where_scalars": lambda m: m.where(m.tensor([True, False]), 1, 2.5),
    "where_float16_scalar": lambda m: m.where(m.tensor([True, False]),
                                              m.tensor([1.0, 2.0], dtype=m.float16), 2.5),
    "maximum_int_float": lambda m: m.maximum(m.tensor([1, 5]), m.tensor([2.5])),
    "masked_fill_int_float": lambda m: m.tensor([1, 5]).masked_fill(m.tensor([True, False]), 2.7),
    "abs_int": lambda m: m.abs(m.tensor([-1, 2])),
    "neg_uint8": lambda m: -m.tensor([1, 2], dtype=m.uint8),
    "exp_int": lambda m: m.exp(m.tensor([1, 2])),
    "sqrt_bool": lambda m: m.sqrt(m.tensor([True])),
    "relu_int": lambda m: m.relu(m.tensor([-1, 2])),
    "reciprocal_int": lambda m: m.reciprocal(m.tensor([1, 2])),
    "sign_bool": lambda m: m.sign(m.tensor([True, False])),
    "sgn_bool": lambda m: m.tensor([True, False]).sgn(),
    "mm_int": lambda m: m.mm(m.tensor([[1, 2]]), m.tensor([[3], [4]])),
    "matmul_bfloat16": lambda m: m.matmul(m.ones(2, 3, dtype=m.bfloat16),
                                          m.ones(3, dtype=m.bfloat16)),
    "cat_int_bool": lambda m: m.cat([m.tensor([1]), m.tensor([True])]),
    "stack_float16_float32": lambda m: m.stack([m.tensor([1.0], dtype=m.float16),
                                                m.tensor([1.0])]),
    "div_trunc_int": lambda m: m.div(m.tensor([-7, 7]), 2, rounding_mode="trunc"),
    "div_floor_int": lambda m: m.div(m.tensor([-7, 7]), 2, rounding_mode="floor"),
    "floordiv_int_tensors": lambda m: m.tensor([-7, 7]) // m.tensor([2, -2]),
    "floordiv_int32_0d_scalar": lambda m: m.tensor(7, dtype=m.int32) // 2,
    "rfloordiv_int": lambda m: 7 // m.tensor([2, -2]),
    "gather_float16": lambda m: m.tensor([[1.0, 2.0]], dtype=m.float16).gather(1, m.tensor([[1]])),
    "to_bool": lambda m: m.tensor([0.5, 0.0]).to(m.bool),
    "float_to_int": lambda m: m.tensor([-1.7, 2.7]).to(m.int64),
    "logical_and_int": lambda m: m.logical_and(m.tensor([1, 0]), m.tensor([2, 2])),
}


@pytest.mark.parametrize("name", sorted(MIXED))
def test_result_dtype(name):
    got, want = MIXED[name](ndgrad), MIXED[name](torch)
    assert _dtype_name(got) == _dtype_name(want)
    np.testing.assert_allclose(np.asarray(got.tolist()), np.asarray(want.tolist()), rtol=1e-6)


def test_int_tensor_true_division_is_float32():
    r = ndgrad.tensor([3, 4]) / ndgrad.tensor([2, 2])
    assert r.dtype == ndgrad.float32
    assert r.tolist() == [1.5, 2.0]


def test_int_division_follows_default_dtype():
    ndgrad.set_default_dtype(ndgrad.float64)
    try:
        assert (ndgrad.tensor([3]) / 2).dtype == ndgrad.float64
        assert (ndgrad.tensor([3]) * 2.5).dtype == ndgrad.float64
    finally:
        ndgrad.set_default_dtype(ndgrad.float32)


# ---------------------------------------------------------------------------- gradient dtypes
FLOAT_PAIRS = [
    (("float32", (2,)), ("float64", (2,))),
    (("float32", (2,)), ("float64", ())),
    (("float64", ()), ("float32", (2,))),
    (("float16", (2,)), ("bfloat16", (2,))),
    (("float16", (2,)), ("float32", ())),
    (("bfloat16", (2,)), ("float64", (2,))),
    (("float32", ()), ("float16", ())),
]
GRAD_OPS = {
    "add": lambda m, a, b: a + b,
    "sub": lambda m, a, b: a - b,
    "mul": lambda m, a, b: a * b,
    "div": lambda m, a, b: a / b,
    "pow": lambda m, a, b: a ** b,
    "maximum": lambda m, a, b: m.maximum(a, b * 1.5),
    "where": lambda m, a, b: m.where(a > 1.5, a, b),
    "cat": lambda m, a, b: m.cat([a.reshape(-1), b.reshape(-1)]),
}


def _grads(m, op, a_spec, b_spec):
    a = _make(m, a_spec).requires_grad_()
    b = _make(m, b_spec).requires_grad_()
    out = GRAD_OPS[op](m, a, b)
    out.backward(m.ones_like(out))
    return out, a, b


@pytest.mark.parametrize("op", sorted(GRAD_OPS))
@pytest.mark.parametrize("a,b", FLOAT_PAIRS, ids=[f"{a[0]}{list(a[1])}-{b[0]}{list(b[1])}"
                                                  for a, b in FLOAT_PAIRS])
def test_gradient_dtype_is_input_dtype(op, a, b):
    out, ga, gb = _grads(ndgrad, op, a, b)
    tout, ta, tb = _grads(torch, op, a, b)
    assert _dtype_name(out) == _dtype_name(tout)
    for x, tx in ((ga, ta), (gb, tb)):
        assert _dtype_name(x.grad) == _dtype_name(x) == _dtype_name(tx.grad)
        assert tuple(x.grad.shape) == tuple(x.shape)
        np.testing.assert_allclose(np.asarray(x.grad.tolist()),
                                   np.asarray(tx.grad.float().tolist()), rtol=2e-2)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradient_of_complex_result_is_real_for_real_input(dtype):
    results = []
    for m in (ndgrad, torch):
        x = m.tensor([1.0, -2.0], dtype=getattr(m, dtype), requires_grad=True)
        out = x * (1 + 2j)
        out.backward(m.tensor([1 - 1j, 2 + 0.5j], dtype=out.dtype))
        results.append((out, x.grad))
    (out, g), (tout, tg) = results
    assert _dtype_name(out) == _dtype_name(tout)
    assert _dtype_name(g) == _dtype_name(tg) == dtype
    np.testing.assert_allclose(np.asarray(g.tolist()), np.asarray(tg.tolist()))


def test_gradient_through_cast_has_source_dtype():
    results = []
    for m in (ndgrad, torch):
        x = m.tensor([1.0, 2.0], dtype=m.float16, requires_grad=True)
        y = m.tensor([3.0], dtype=m.float64, requires_grad=True)
        (x.to(m.float32) * y).sum().backward()
        results.append((x.grad, y.grad))
    for g, tg in zip(*results):
        assert _dtype_name(g) == _dtype_name(tg)
        assert g.tolist() == tg.tolist()


def test_complex_to_real_cast_warns_like_torch():
    with pytest.warns(UserWarning, match="Casting complex values to real discards"):
        r = ndgrad.tensor([1 + 2j, -3j]).to(ndgrad.float32)
    assert r.tolist() == [1.0, 0.0]
    # torch warns once per process (other tests may have had it already): a fresh process.
    code = ("import warnings, torch\nwith warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    r = torch.tensor([1 + 2j, -3j]).to(torch.float32)\n"
            "print(r.tolist(), [str(x.message)[:50] for x in w])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "[1.0, -0.0]" in out and "Casting complex values to real discards" in out


def test_complex_gradient_reaches_real_input_without_warning():
    # PyTorch's engine takes the real part of a complex gradient flowing into a real input
    # without the cast warning (x * 1j backward).
    for m in (torch, ndgrad):
        x = m.tensor([1.0, -2.0], requires_grad=True)
        out = x * (1 + 2j)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out.backward(m.tensor([1 - 1j, 2 + 0.5j]))
        assert x.grad.tolist() == [-1.0, 3.0]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_double_to_half_rounds_through_float_as_torch(dtype):
    # torch converts double to half/bfloat16 through float (rounded twice): values near a
    # rounding boundary come out as torch's, not as NumPy's direct cast
    x = np.random.default_rng(0).standard_normal(200000)
    want = torch.tensor(x).to(getattr(torch, dtype)).float().numpy()
    got = ndgrad.tensor(x).to(getattr(ndgrad, dtype)).float().numpy()
    np.testing.assert_array_equal(got, want)
