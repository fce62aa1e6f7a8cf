"""Small API that real PyTorch programs use, against PyTorch: ``norm``, ``equal``/``allclose``/
``isclose``, ``triu``/``tril`` (and in place), ``Tensor.type``, the module-level in-place
functions (``ndgrad.relu_`` ...), memory formats (strides, errors), devices, ``ndgrad.cuda`` /
``ndgrad.backends`` and the default device and dtype. The ops' gradients, JVPs and batching are
also covered by ``op_db`` (tests/test_ops.py and friends); here are the cases it cannot express
(errors, zeros, dtypes, layouts)."""

import pickle

import numpy as np
import pytest
import torch

import ndgrad
from _compare import outcome, same_outcome

INF = float("inf")
NAN = float("nan")


def val(t):
    """A tensor as comparable plain data: dtype name, shape, values (NaN as the string 'nan')."""
    if isinstance(t, (tuple, list)):
        return [val(x) for x in t]
    if not isinstance(t, (torch.Tensor, ndgrad.Tensor)):
        return t
    vals = t.detach().reshape(-1).tolist()
    vals = ["nan" if isinstance(v, float) and v != v else
            round(v, 4) if isinstance(v, float) else
            (round(v.real, 4), round(v.imag, 4)) if isinstance(v, complex) else v for v in vals]
    return str(t.dtype).split(".")[-1], tuple(t.shape), vals


def same(fn):
    """``same_outcome`` with results turned into plain data."""
    return same_outcome(lambda m: val(fn(m)))


def node_name(t):
    return None if t.grad_fn is None else type(t.grad_fn).__name__


# ---------------------------------------------------------------------------- norm
NORM_CALLS = [
    lambda m, x: m.norm(x),
    lambda m, x: x.norm(),
    lambda m, x: m.norm(x, 1),
    lambda m, x: m.norm(x, 3, 1),
    lambda m, x: m.norm(x, 0.5, -1, True),
    lambda m, x: m.norm(x, -1.5, dim=0),
    lambda m, x: m.norm(x, INF),
    lambda m, x: m.norm(x, -INF, 1),
    lambda m, x: m.norm(x, 0),
    lambda m, x: m.norm(x, 0, (0, 1), keepdim=True),
    lambda m, x: m.norm(x, "fro"),
    lambda m, x: m.norm(x, "fro", 1),
    lambda m, x: m.norm(x, "fro", (0, 1), True),
    lambda m, x: m.norm(x, None),
    lambda m, x: m.norm(x, True),
    lambda m, x: m.norm(x, 2, []),
    lambda m, x: x.norm(p=2, dim=(1, 0)),
    lambda m, x: x.norm(2, None, True),
    lambda m, x: x.norm(dtype=m.float64),
    lambda m, x: m.norm(x, 2.5, 1, False, dtype=m.float64),
    lambda m, x: m.norm(x, 2.5, 1, False, m.float64),
]
NORM_INPUTS = [
    lambda m: m.tensor([[1.0, -2.0, 0.0], [0.5, 3.0, -4.0]]),
    lambda m: m.tensor([[1.0, -2.0, 0.0], [0.5, 3.0, -4.0]], dtype=m.float64),
    lambda m: m.tensor([[1.0, -2.0, 0.0], [0.5, 3.0, -4.0]], dtype=m.float16),
    lambda m: m.tensor([[1.0, -2.0, 0.0], [0.5, 3.0, -4.0]], dtype=m.bfloat16),
    lambda m: m.tensor([[1 + 2j, 0j, -3j], [0.5, 1 - 1j, 2]]),
    lambda m: m.zeros(2, 3),
    lambda m: m.tensor([[1.0, NAN, 2.0], [INF, 1.0, 0.0]]),
]


@pytest.mark.parametrize("call", range(len(NORM_CALLS)))
@pytest.mark.parametrize("inp", range(len(NORM_INPUTS)))
def test_norm_values_and_dtypes(call, inp):
    same(lambda m: NORM_CALLS[call](m, NORM_INPUTS[inp](m)))


@pytest.mark.parametrize("src", [
    "m.norm(m.tensor([1, 2]))",
    "m.norm(m.tensor([True]))",
    "m.norm(m.tensor([1, 2]), dtype=m.float32)",
    "m.norm(m.tensor([1., 2]), dtype=m.int64)",
    "m.norm(m.tensor([1., 2]), dtype=m.float16)",
    "m.norm(m.tensor([1., 2], dtype=m.float16), dtype=m.bfloat16)",
    "m.norm(m.tensor([1., 2], dtype=m.float64), dtype=m.float32)",
    "m.norm(m.tensor([1., 2]), dtype=m.complex64)",
    "m.norm(m.tensor([1j, 2]), dtype=m.float64)",
    "m.norm(m.tensor([1j, 2]), dtype=m.complex128)",
    "m.norm(m.ones(2, 3, 4), 'fro', dim=(0, 1, 2))",
    "m.norm(m.ones(2, 3, 4), 'nuc')",
    "m.norm(m.ones(2, 3), 'nuc', dim=(0,))",
    "m.norm(m.ones(3), 'nuc')",
    "m.norm(m.ones(2, 3, 4), 'abc')",
    "m.norm(m.ones(2, 3, 4), 'abc', dim=1)",
    "m.norm(m.ones(2, 3), 2, dim=2)",
    "m.norm(m.ones(2, 3), 2, dim=(0, 0))",
    "m.norm(m.ones(2, 3), 2, dim=(0, -2))",
    "m.norm(m.ones(2, 3), m.tensor(2.0))",
    "m.norm(m.ones(2, 3), m.tensor([2.0]))",
    "m.norm(m.ones(2, 3), 1 + 1j)",
    "m.norm(m.zeros(0, 3), INF)",
    "m.norm(m.zeros(0, 3), -INF, 0)",
    "m.norm(m.zeros(0, 3), -1, 0)",
    "m.norm(m.zeros(0, 3), INF, 1)",
    "m.norm(m.zeros(0, 3), 2)",
    "m.norm(m.zeros(0, 3), 0, 0)",
    "m.norm(m.tensor(3.), 2, 0)",
    "m.norm(m.tensor(-3.), 1, -1, True)",
    "m.norm(m.tensor(-3.), 1, 1)",
    "m.norm(m.tensor(-3.), 'fro')",
    "m.norm(m.tensor([[1e30, 1e30]]))",
    "m.norm(m.tensor([[1e20, 1e20]]), 3)",
])
def test_norm_edge_cases_and_errors(src):
    same(lambda m: eval(src, {"m": m, "INF": INF}))


def test_norm_nuclear_matches_torch():
    # the sum of the singular values: SumBackward1 <- LinalgSvdBackward0 <- PermuteBackward0
    a = np.random.default_rng(0).standard_normal((2, 3, 4))

    def run(m):
        x = m.tensor(a, requires_grad=True)
        y = m.norm(x, "nuc", dim=(2, 0), keepdim=True)
        svd_node = m.norm(x, "nuc", dim=(0, 2)).grad_fn.next_functions[0][0]
        (g,) = m.autograd.grad(y.sum(), x)
        return y, g, type(svd_node).__name__, type(svd_node.next_functions[0][0]).__name__
    same(run)


@pytest.mark.parametrize("p", [2, 1, 3, 0.5, 1.5, -1, -2, 0, INF, -INF, "fro"])
@pytest.mark.parametrize("values", [[0.0, 0.0, 0.0], [0.0, 1.0, -2.0], [1.0, -3.0, 3.0],
                                    [2.0, -1.0, 1.0]])
def test_norm_gradients_at_zeros_and_ties(p, values):
    def run(m):
        x = m.tensor(values, dtype=m.float64, requires_grad=True)
        y = m.norm(x, p)
        y.backward()
        return val(y), node_name(y), val(x.grad)
    same_outcome(run)


@pytest.mark.parametrize("p", [2, 1, 3, INF])
def test_norm_complex_gradients(p):
    def run(m):
        x = m.tensor([1 + 2j, 3j, -0.5], requires_grad=True)
        m.norm(x, p).backward()
        return val(x.grad)
    same_outcome(run)


def test_norm_dtype_argument_records_one_node_and_casts_the_gradient_back():
    def run(m):
        x = m.tensor([[3.0, 4.0]], requires_grad=True)
        y = m.norm(x, dtype=m.float64)
        y.backward()
        edges = [type(e[0]).__name__ for e in y.grad_fn.next_functions]
        return val(y), node_name(y), edges, val(x.grad)
    same_outcome(run)


def test_norm_saves_like_pytorch():
    def run(m):
        x = m.tensor([3.0, 4.0], requires_grad=True)
        y = m.norm(x, 3, 0, True)
        fn = y.grad_fn
        return fn._saved_ord, fn._saved_keepdim, val(fn._saved_result), val(fn._saved_self)
    same_outcome(run)


@pytest.mark.parametrize("p,dim", [(2, None), (1, 1), (3, (0, 1)), (0.5, 0), (-2, 1), (INF, 1),
                                   (-INF, None), ("fro", 1)])
def test_norm_gradcheck_and_gradgradcheck(p, dim):
    rng = np.random.default_rng(0)
    x = ndgrad.tensor(rng.uniform(0.5, 2, (3, 4)) * rng.choice([-1, 1], (3, 4)),
                      dtype=ndgrad.float64, requires_grad=True)
    f = lambda t: ndgrad.norm(t, p, dim)  # noqa: E731
    assert ndgrad.autograd.gradcheck(f, (x,), check_forward_ad=True)
    assert ndgrad.autograd.gradgradcheck(f, (x,))


# ---------------------------------------------------------------------------- equal / isclose
CLOSE_CASES = [
    "m.equal(m.tensor([1, 2]), m.tensor([1, 2]))",
    "m.equal(m.tensor([1, 2]), m.tensor([1., 2]))",
    "m.equal(m.tensor([1, 2]), m.tensor([1, 2, 3]))",
    "m.equal(m.tensor([1, 2]), m.tensor([[1, 2]]))",
    "m.equal(m.tensor(1.), m.tensor([1.]))",
    "m.equal(m.tensor([NAN]), m.tensor([NAN]))",
    "m.equal(m.tensor([True]), m.tensor([1]))",
    "m.equal(m.tensor([1.5]), m.tensor([1], dtype=m.int32))",
    "m.equal(m.tensor([1], dtype=m.float16), m.tensor([1.0001]))",
    "m.equal(m.tensor([16777217]), m.tensor([16777216.]))",
    "m.equal(m.tensor([1 + 0j]), m.tensor([1.]))",
    "m.equal(m.tensor([0.]), m.tensor([-0.]))",
    "m.equal(m.tensor([]), m.tensor([]))",
    "m.equal(m.tensor([1.], requires_grad=True), m.tensor([1.]))",
    "m.equal(m.tensor([[1., 2], [3, 4]]).t(), m.tensor([[1., 3], [2, 4]]))",
    "m.tensor([1., 2]).equal(m.tensor([1., 2]))",
    "m.equal(m.tensor([1.]), 1)",
    "m.equal(1, m.tensor([1.]))",
    "m.allclose(m.tensor([1., 2]), m.tensor([1., 2.0000001]))",
    "m.allclose(m.tensor([1., 2]), m.tensor([1., 2.1]))",
    "m.allclose(m.tensor([1., 2]), m.tensor([1., 2.1]), atol=0.2)",
    "m.allclose(m.tensor([1., 2]), m.tensor([1., 2.1]), 0.1, 0.0)",
    "m.allclose(m.tensor([1., 2]), m.tensor([[1., 2], [1, 2]]))",
    "m.allclose(m.tensor([1., NAN]), m.tensor([1., NAN]))",
    "m.allclose(m.tensor([1., NAN]), m.tensor([1., NAN]), equal_nan=True)",
    "m.allclose(m.tensor([INF]), m.tensor([INF]))",
    "m.allclose(m.tensor([INF]), m.tensor([-INF]))",
    "m.allclose(m.tensor([1, 2]), m.tensor([1, 2]))",
    "m.allclose(m.tensor([True]), m.tensor([True]))",
    "m.allclose(m.tensor([1 + 1j]), m.tensor([1 + 1j]))",
    "m.allclose(m.zeros(0), m.zeros(0))",
    "m.tensor([1.]).allclose(m.tensor([1.]), 1e-5, 1e-8, True)",
    "m.allclose(m.tensor([1., 2]), m.tensor([1, 2]))",
    "m.allclose(m.tensor([1., 2]), m.tensor([1., 2], dtype=m.float64))",
    "m.allclose(m.tensor([1., 2]), m.tensor([1., 2, 3]))",
    "m.allclose(m.tensor([1.]), 1.)",
    "m.allclose(m.tensor([1.]), m.tensor([1.1]), rtol=-1)",
    "m.allclose(m.tensor([1.]), m.tensor([1.1]), atol=-0.5)",
    "m.isclose(m.tensor([1., 2]), m.tensor([1., 2.1]))",
    "m.isclose(m.tensor([1., 2]), m.tensor([[1.], [2.]]))",
    "m.isclose(m.tensor([1, 2]), m.tensor([1, 3]))",
    "m.isclose(m.tensor([1, 2]), m.tensor([1, 3]), atol=1)",
    "m.isclose(m.tensor([1, 2]), m.tensor([1, 3]), atol=1.5, rtol=0.3)",
    "m.isclose(m.tensor([True, False]), m.tensor([True, True]))",
    "m.isclose(m.tensor([True, False]), m.tensor([True, True]), atol=1)",
    "m.isclose(m.tensor([1, 2], dtype=m.uint8), m.tensor([2, 1], dtype=m.uint8), atol=1)",
    "m.isclose(m.tensor([0], dtype=m.uint8), m.tensor([255], dtype=m.uint8), atol=1)",
    "m.isclose(m.tensor([-128], dtype=m.int8), m.tensor([127], dtype=m.int8), atol=1)",
    "m.isclose(m.tensor([2**62]), m.tensor([2**62 + 1]), atol=0, rtol=1e-30)",
    "m.isclose(m.tensor([16777217]), m.tensor([16777216]), rtol=0, atol=0.5)",
    "m.isclose(m.tensor([1.]), m.tensor([1.00000006]), rtol=0, atol=1e-8)",
    "m.isclose(m.tensor([INF]), m.tensor([INF]), atol=0, rtol=0)",
    "m.isclose(m.tensor([NAN]), m.tensor([NAN]), equal_nan=True)",
    "m.isclose(m.tensor([NAN]), m.tensor([NAN]), equal_nan=True, atol=0, rtol=0)",
    "m.isclose(m.tensor([1.]), m.tensor([2.]), atol=INF)",
    "m.isclose(m.tensor([1.]), m.tensor([INF]), atol=INF)",
    "m.isclose(m.tensor([1.]), m.tensor([1.5]), rtol=m.tensor(0.5))",
    "m.isclose(m.tensor([1.]), m.tensor([1.5]), rtol=True)",
    "m.isclose(m.tensor([complex('nan')]), m.tensor([complex('nan')]), equal_nan=True)",
    "m.isclose(m.tensor([1 + 1j]), m.tensor([1 + 1.00001j]))",
    "m.isclose(m.tensor([1.], dtype=m.float16), m.tensor([1.001], dtype=m.float16))",
    "m.isclose(m.tensor([1.], dtype=m.bfloat16), m.tensor([1.001], dtype=m.bfloat16))",
    "m.isclose(m.tensor([1., 2], requires_grad=True), m.tensor([1., 2]))",
    "m.tensor([1., 2]).isclose(m.tensor([1., 3]), 0.1, 0.0, False)",
    "m.isclose(m.tensor([1.], dtype=m.float16), m.tensor([1.]))",
    "m.isclose(m.tensor([1]), m.tensor([True]))",
    "m.isclose(m.tensor([1., 2]), m.tensor([1., 2, 3]))",
    "m.isclose(m.tensor([1., 2]), 2.)",
    "m.isclose(2., m.tensor([1., 2]))",
    "m.isclose(m.tensor([1.]), m.tensor([1.]), atol=NAN)",
    "m.isclose(m.tensor([1.]), m.tensor([1.5]), rtol='a')",
]


@pytest.mark.parametrize("src", CLOSE_CASES)
def test_equal_allclose_isclose(src):
    t = same(lambda m: eval(src, {"m": m, "INF": INF, "NAN": NAN}))
    if src.startswith(("m.equal", "m.allclose")) and t[0] == "ok":
        assert type(t[1]) is bool


# ---------------------------------------------------------------------------- triu / tril
TRI_CASES = [
    "m.triu(m.arange(12.).reshape(3, 4))",
    "m.triu(m.arange(12.).reshape(3, 4), 1)",
    "m.triu(m.arange(12.).reshape(3, 4), diagonal=-1)",
    "m.tril(m.arange(12.).reshape(3, 4), 10)",
    "m.tril(m.arange(12.).reshape(3, 4), -10)",
    "m.tril(m.arange(12.).reshape(4, 3), 1)",
    "m.triu(m.arange(24.).reshape(2, 3, 4), 1)",
    "m.tril(m.arange(24.).reshape(2, 1, 3, 4))",
    "m.triu(m.ones(2, 3), m.tensor(1))",
    "m.triu(m.tensor([[True, True], [True, True]]))",
    "m.tril(m.tensor([[1, 2], [3, 4]]))",
    "m.tril(m.ones(3, 2, dtype=m.complex64), -1)",
    "m.triu(m.zeros(0, 3))",
    "m.triu(m.arange(12.).reshape(3, 4).t()).stride()",
    "m.triu(m.arange(24.).reshape(2, 3, 4).permute(1, 0, 2)).stride()",
    "m.arange(12.).reshape(4, 3).t().triu_(1)",
    "m.arange(12.).reshape(4, 3).tril_(-1)",
    "m.triu(m.tensor([1., 2]))",
    "m.tril(m.tensor(1.))",
    "m.ones(3).triu_()",
    "m.triu(m.ones(2, 3), 1.5)",
    "m.triu(m.ones(2, 3), True)",
    "m.triu([[1.]])",
]


@pytest.mark.parametrize("src", TRI_CASES)
def test_triu_tril(src):
    same(lambda m: eval(src, {"m": m}))


@pytest.mark.parametrize("name", ["triu", "tril"])
def test_triu_tril_autograd(name):
    def run(m):
        x = m.arange(6.0, dtype=m.float64).reshape(2, 3).requires_grad_()
        y = getattr(m, name)(x, 1)
        z = (x * 1)
        getattr(z, name + "_")(-1)
        (y * 2 + z).sum().backward()
        return node_name(y), node_name(z), y.grad_fn._saved_diagonal, val(x.grad)
    same_outcome(run)


def test_in_place_triangle_errors_leave_the_input_unchanged():
    def run(m):
        x = m.tensor([1.0, 2.0])
        r = outcome(lambda: x.triu_())
        leaf = m.ones(2, 2, requires_grad=True)
        r2 = outcome(lambda: leaf.tril_())
        return r, val(x), r2[0], val(leaf)
    same_outcome(run)


@pytest.mark.parametrize("name,k", [("triu", 0), ("triu", -1), ("tril", 1), ("tril", 0)])
def test_triu_tril_gradcheck(name, k):
    x = ndgrad.randn(2, 3, 4, dtype=ndgrad.float64, requires_grad=True)
    f = lambda t: getattr(ndgrad, name)(t, k)  # noqa: E731
    assert ndgrad.autograd.gradcheck(f, (x,), check_forward_ad=True)
    assert ndgrad.autograd.gradgradcheck(f, (x,))


# ---------------------------------------------------------------------------- Tensor.type
DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8",
          "bool", "complex64", "complex128"]


@pytest.mark.parametrize("dt", DTYPES)
def test_type_names_and_casts_by_name(dt):
    name = same_outcome(lambda m: m.zeros(1, dtype=getattr(m, dt)).type())[1]
    assert name.startswith("torch.") and name.endswith("Tensor")
    # Both PyTorch's string and ndgrad's spelling of it cast to that dtype.
    same(lambda m: m.tensor([1.5, 2.0], requires_grad=True).type(name))
    x = ndgrad.tensor([1.5, 2.0])
    assert x.type(name.replace("torch.", "ndgrad.")).dtype == getattr(ndgrad, dt)


@pytest.mark.parametrize("src", [
    "x.type(m.float64)",
    "x.type(dtype=m.int64)",
    "x.type(m.int64, non_blocking=True)",
    "x.type(m.float64, True)",
    "x.type(m.float32) is x",
    "x.type('torch.FloatTensor') is x",
    "x.type('torch.Tensor') is x",
    "x.type(None)",
    "x.type('DoubleTensor')",
    "x.type('torch.float64')",
    "x.type(float)",
    "x.type(5)",
    "x.type(m.float64, blah=3)",
    "x.type(m.float64).grad_fn.name()",
])
def test_type_casts_and_errors(src):
    same(lambda m: eval(src, {"m": m, "x": m.tensor([1.5, 2.0], requires_grad=True)}))


def test_type_with_a_cuda_string_raises():
    for m in (torch, ndgrad):
        with pytest.raises(RuntimeError, match="CUDA"):
            m.tensor([1.0]).type("torch.cuda.FloatTensor")


# ---------------------------------------------------------------------------- in-place functions
def test_module_level_in_place_functions_are_torchs():
    methods = [n for n in dir(ndgrad.Tensor) if n.endswith("_") and not n.startswith("_")]
    assert [n for n in methods if hasattr(torch, n)] == [n for n in methods if hasattr(ndgrad, n)]
    assert not hasattr(ndgrad, "triu_") and not hasattr(ndgrad, "add_")


@pytest.mark.parametrize("src", [
    "m.relu_(x)", "m.sigmoid_(x)", "m.exp_(x)", "m.tanh_(x)", "m.sin_(x)", "m.cos_(x)",
    "m.neg_(x)", "m.abs_(x)", "m.sqrt_(x.abs())", "m.log_(x.abs())", "m.reciprocal_(x)",
    "m.clamp_(x, max=0.5)", "m.clamp_(x, -0.5, 0.5)", "m.clip_(x, -0.5, 0.5)",
    "m.clamp_min_(x, 0.2)", "m.clamp_max_(x, 0.2)", "m.fill_(x, 2)", "m.fill_(x, value=3)",
    "m.zero_(x)", "m.detach_(x)",
])
def test_module_level_in_place_functions(src):
    def run(m):
        x = m.tensor([-1.0, 0.25, 2.0])
        r = eval(src, {"m": m, "x": x})
        return val(r), r is x or r._base is not None, val(x)
    same_outcome(run)


@pytest.mark.parametrize("src", ["m.relu_(3)", "m.zero_(3)", "m.detach_(3)",
                                 "m.relu_(m.tensor([-1.], requires_grad=True))"])
def test_module_level_in_place_function_errors(src):
    same(lambda m: eval(src, {"m": m}))


def test_module_level_in_place_functions_record_history():
    def run(m):
        x = m.tensor([-1.0, 2.0], requires_grad=True)
        y = x * 1
        m.sigmoid_(y)
        y.sum().backward()
        return node_name(y), val(x.grad)
    same_outcome(run)


# ---------------------------------------------------------------------------- memory formats
def test_memory_format_objects():
    for m in (torch, ndgrad):
        names = ["contiguous_format", "preserve_format", "channels_last", "channels_last_3d"]
        assert [repr(getattr(m, n)) for n in names] == [f"{m.__name__}.{n}" for n in names]
        assert type(m.channels_last) is m.memory_format
        assert type(m.channels_last).__name__ == "memory_format"
        assert m.channels_last == m.channels_last != m.contiguous_format
        assert pickle.loads(pickle.dumps(m.channels_last)) is m.channels_last
    assert same_outcome(lambda m: m.memory_format())[0] == "TypeError"


LAYOUT_CASES = [
    "m.ones(2, 3, 4, 5).contiguous(memory_format=cl).stride()",
    "m.ones(2, 3, 4, 5).contiguous(memory_format=cl).is_contiguous()",
    "m.ones(2, 3, 4, 5).contiguous(memory_format=cl).is_contiguous(memory_format=cl)",
    "m.ones(2, 3, 4, 5, 6).contiguous(memory_format=m.channels_last_3d).stride()",
    "m.ones(2, 3, 4, 5).contiguous(memory_format=m.preserve_format).stride()",
    "m.ones(2, 3, 4, 5).contiguous(memory_format=m.contiguous_format).stride()",
    "m.ones(2, 3, 4, 5).clone(memory_format=cl).stride()",
    "m.ones(2, 3, 4, 5).to(memory_format=cl).stride()",
    "m.ones(2, 3, 4, 5).to(m.float64, memory_format=cl).stride()",
    "m.ones(2, 3, 4, 5).to('cpu', memory_format=cl).stride()",
    "m.ones(2, 3, 4, 5).cpu(memory_format=cl).stride()",
    "m.ones(2, 3, 4, 5).float(memory_format=cl).stride()",
    "m.ones(2, 3, 4, 5).double(memory_format=cl).stride()",
    "m.ones(2, 3, 4, 5).half(memory_format=cl).stride()",
    "m.ones(2, 3, 4, 5).bfloat16(memory_format=cl).stride()",
    "m.ones(2, 3, 4, 5).long(memory_format=cl).stride()",
    "m.ones(2, 3, 4, 5).int(memory_format=cl).stride()",
    "m.ones(2, 3, 4, 5).bool(memory_format=cl).stride()",
    "m.ones(2, 3, 4, 5).to(memory_format=m.contiguous_format).stride()",
    "m.ones(2, 3, 4, 5).contiguous(memory_format=cl).double().stride()",
    "m.ones(2, 3, 4, 5).contiguous(memory_format=cl).clone().stride()",
    "(m.ones(2, 3, 4, 5).contiguous(memory_format=cl) + 1).stride()",
    "m.ones(2, 3, 4, 5).contiguous(memory_format=cl).contiguous().stride()",
    "m.ones(2, 3, 4, 5).contiguous(memory_format=cl).contiguous(memory_format=cl).stride()",
    "m.ones(2, 3, 4, 5).contiguous(memory_format=cl)[:, :, ::2].clone().stride()",
    "m.ones(2, 3, 4, 5).contiguous(memory_format=cl)[:, :, ::2].contiguous().stride()",
    "m.ones(2, 3, 4, 5)[:, :, ::2].contiguous(memory_format=cl).stride()",
    "m.ones(1, 3, 1, 1).contiguous(memory_format=cl).stride()",
    "m.ones(2, 1, 4, 5).contiguous(memory_format=cl).stride()",
    "m.ones(2, 3, 1, 1).contiguous(memory_format=cl).clone().stride()",
    "m.ones(2, 3, 1, 1).contiguous(memory_format=cl).double().stride()",
    "m.ones(2, 3, 1, 1).is_contiguous(memory_format=cl)",
    "m.ones(2, 3, 4, 1).is_contiguous(memory_format=cl)",
    "m.ones(2, 3, 4, 5).permute(0, 3, 1, 2).is_contiguous(memory_format=cl)",
    "m.ones(2, 3, 4, 5).permute(0, 2, 3, 1).is_contiguous(memory_format=cl)",
    "m.ones(2, 3, 4).is_contiguous(memory_format=cl)",
    "m.ones(2, 3, 4, 5).is_contiguous(memory_format=m.preserve_format)",
    "m.ones(2, 3, 4, 5).contiguous(memory_format=cl)"
    ".is_contiguous(memory_format=m.preserve_format)",
    "m.ones(4, 3).t().contiguous().stride()",
    "m.ones(4, 3).t().contiguous().is_contiguous()",
    "m.ones(4, 3).t().clone().stride()",
    "m.ones(4, 6).t()[:, ::2].clone().stride()",
    "m.empty(2, 3, 4, 5, memory_format=cl).stride()",
    "m.empty(2, 3, 4, 5, 6, memory_format=m.channels_last_3d).stride()",
    "m.empty(2, 3, memory_format=m.contiguous_format).stride()",
    # *_like: preserve the source's layout by default
    "m.zeros_like(m.ones(2, 3, 4, 5), memory_format=cl).stride()",
    "m.zeros_like(m.ones(2, 3, 4, 5).contiguous(memory_format=cl)).stride()",
    "m.zeros_like(m.ones(2, 3, 4, 5).contiguous(memory_format=cl), "
    "memory_format=m.contiguous_format).stride()",
    "m.zeros_like(m.ones(2, 3, 4, 5).contiguous(memory_format=cl)[:, :, ::2]).stride()",
    "m.zeros_like(m.ones(2, 3, 1, 1).contiguous(memory_format=cl)).stride()",
    "m.zeros_like(m.ones(4, 3).t()).stride()",
    "m.zeros_like(m.ones(4, 3).t(), memory_format=m.contiguous_format).stride()",
    "m.zeros_like(m.ones(4, 3).t()[::2]).stride()",
    "m.ones_like(m.ones(2, 3, 4, 5), memory_format=cl).stride()",
    "m.full_like(m.ones(2, 3, 4, 5), 2.0, memory_format=cl).stride()",
    "m.empty_like(m.ones(2, 3, 4, 5), memory_format=cl).stride()",
    "m.rand_like(m.ones(2, 3, 4, 5), memory_format=cl).stride()",
    "m.randn_like(m.ones(2, 3, 4, 5), memory_format=cl).stride()",
    "m.randint_like(m.ones(2, 3, 4, 5), 3, memory_format=cl).stride()",
    "val(m.ones_like(m.ones(2, 3, 4, 5), memory_format=cl))",
    "val(m.full_like(m.arange(6.).reshape(1, 2, 3, 1).contiguous(memory_format=cl), 2))",
    "val(m.arange(120.).reshape(2, 3, 4, 5).contiguous(memory_format=cl))",
    # errors
    "m.ones(2, 3, 4).contiguous(memory_format=cl)",
    "m.ones(2, 3, 4).to(memory_format=cl)",
    "m.ones(2, 3, 4).clone(memory_format=cl)",
    "m.ones(2, 3, 4).float(memory_format=cl)",
    "m.ones(2, 3, 4, 5, 6).contiguous(memory_format=cl)",
    "m.ones(2, 3, 4, 5).contiguous(memory_format=m.channels_last_3d)",
    "m.ones(2, 3, 4, 5).to(m.float16, memory_format=m.channels_last_3d)",
    "m.ones(2, 3, 4, 5).contiguous(memory_format=cl).contiguous(memory_format=m.preserve_format)",
    "m.empty(2, 3, 4, memory_format=cl)",
    "m.empty(2, 3, 4, memory_format=m.preserve_format)",
    "m.zeros_like(m.ones(2, 3, 4), memory_format=cl)",
    "m.ones(2, 3, 4, 5).contiguous(memory_format='channels_last')",
    "m.empty_like(m.ones(2), memory_format='x')",
]


@pytest.mark.parametrize("src", LAYOUT_CASES)
def test_memory_format_layouts(src):
    same(lambda m: eval(src, {"m": m, "cl": m.channels_last, "val": val}))


@pytest.mark.parametrize("src", [
    "x.to(memory_format=cl)", "x.contiguous(memory_format=cl)", "x.clone(memory_format=cl)",
    "x.double(memory_format=cl)", "x.to(memory_format=m.contiguous_format)",
    "x.contiguous(memory_format=cl).contiguous()",
])
def test_memory_format_copies_record_pytorchs_nodes_and_gradient_layouts(src):
    def run(m):
        x = m.arange(120.0).reshape(2, 3, 4, 5).requires_grad_()
        y = eval(src, {"m": m, "x": x, "cl": m.channels_last})
        (y * m.arange(120.0).reshape(2, 3, 4, 5)).sum().backward()
        return node_name(y), y is x, y.stride(), val(x.grad), x.grad.stride()
    same_outcome(run)


def test_channels_last_leaf_gradient_keeps_its_layout():
    def run(m):
        x = m.ones(2, 3, 4, 5).contiguous(memory_format=m.channels_last).requires_grad_()
        (x.contiguous() * 2).sum().backward()
        return x.grad.stride(), x.grad.is_contiguous(memory_format=m.channels_last)
    same_outcome(run)


# ---------------------------------------------------------------------------- devices
DEVICE_CASES = [
    "m.device('cpu')", "m.device('cpu', 0)", "m.device('cpu:0')", "m.device('cuda')",
    "m.device('cuda:1')", "m.device(type='cpu', index=0)", "m.device(m.device('cpu:0'))",
    "str(m.device('cpu:0'))", "str(m.device('cpu'))", "m.device('cpu:0').index",
    "m.device('cpu').index", "m.device('cuda:1').type",
    "m.device('cpu:0') == m.device('cpu')", "m.device('cpu') == m.device('cpu')",
    "m.device('cpu') == 'cpu'", "m.device('cpu') != 'cuda'", "m.device('cpu') == 3",
    "m.zeros(1).device == m.device('cpu')", "m.zeros(1).device != m.device('cpu')",
    "m.zeros(1).device.type", "m.zeros(1).get_device()", "m.zeros(1).is_cuda",
    "hash(m.device('cpu')) == hash(m.device('cpu'))",
    "{m.device('cpu'): 1}[m.device('cpu')]",
    "m.device('cpu', -1)", "m.device('cpu:-1')", "m.device('cpu:x')", "m.device('cpu:0', 0)",
    "m.device('gpu')", "m.device('CPU')", "m.device(' cpu')", "m.device(0)",
]


@pytest.mark.parametrize("src", DEVICE_CASES)
def test_device_objects(src):
    same(lambda m: (lambda r: repr(r) if isinstance(r, m.device) else r)(eval(src, {"m": m})))


def test_device_pickles():
    for d in (ndgrad.device("cpu"), ndgrad.device("cpu", 0), ndgrad.device("cuda:1")):
        assert pickle.loads(pickle.dumps(d)) == d
        assert repr(pickle.loads(pickle.dumps(d))) == repr(d)


CPU_DEVICES = ["'cpu'", "'cpu:0'", "'cpu:1'", "m.device('cpu')", "m.device('cpu', 0)"]
FACTORIES = [
    "m.zeros(2, device=d)", "m.ones(2, device=d)", "m.empty(2, device=d).shape",
    "m.full((2,), 1.5, device=d)", "m.arange(3, device=d)", "m.linspace(0, 1, 3, device=d)",
    "m.eye(2, device=d)", "m.rand(2, device=d).shape", "m.randn(2, device=d).shape",
    "m.randint(3, (2,), device=d).shape", "m.tensor([1.0], device=d)",
    "m.as_tensor([1.0], device=d)", "m.zeros_like(m.ones(2), device=d)",
    "m.ones_like(m.ones(2), device=d)", "m.full_like(m.ones(2), 3, device=d)",
    "m.empty_like(m.ones(2), device=d).shape", "m.rand_like(m.ones(2), device=d).shape",
    "m.randn_like(m.ones(2), device=d).shape", "m.randint_like(m.ones(2), 3, device=d).shape",
    "m.ones(2).new_zeros(3, device=d)", "m.ones(2).new_ones(3, device=d)",
    "m.ones(2).new_full((3,), 2.0, device=d)", "m.ones(2).new_tensor([1.0], device=d)",
    "m.ones(2).to(d)", "m.ones(2).to(d, m.float64)", "m.ones(2).to(device=d)",
]


@pytest.mark.parametrize("factory", FACTORIES)
@pytest.mark.parametrize("dev", CPU_DEVICES)
def test_cpu_devices_are_accepted_everywhere(factory, dev):
    def run(m):
        d = eval(dev, {"m": m})
        r = eval(factory, {"m": m, "d": d})
        return val(r) if not isinstance(r, (torch.Size, ndgrad.Size)) else tuple(r)
    same_outcome(run)


@pytest.mark.parametrize("factory", FACTORIES + ["m.ones(2).cuda()"])
def test_cuda_device_raises_pytorchs_error(factory):
    t = outcome(lambda: eval(factory, {"m": torch, "d": "cuda"}))
    n = outcome(lambda: eval(factory, {"m": ndgrad, "d": "cuda"}))
    assert t[0] == n[0] == "AssertionError"
    assert t[1].endswith("not compiled with CUDA enabled") and \
        n[1].endswith("not compiled with CUDA enabled")


@pytest.mark.parametrize("dev", ["'xyz'", "'cuda:x'", "0", "m.device('cuda:0')"])
def test_bad_devices_raise_pytorchs_error_type(dev):
    t = outcome(lambda: torch.zeros(2, device=eval(dev, {"m": torch})))
    n = outcome(lambda: ndgrad.zeros(2, device=eval(dev, {"m": ndgrad})))
    assert t[0] == n[0]
    if t[0] == "RuntimeError":
        assert t == n


def test_other_backends_are_not_implemented():
    for m in (torch, ndgrad):
        with pytest.raises(NotImplementedError):
            m.zeros(2, device="mps")


def test_cuda_and_backend_queries():
    for m in (torch, ndgrad):
        assert m.cuda.is_available() is False
        assert m.cuda.device_count() == 0
        assert m.cuda.is_initialized() is False
        m.cuda.manual_seed(0)
        m.cuda.manual_seed_all(0)
        assert m.backends.mps.is_available() is False
        assert m.backends.mps.is_built() is False
        assert m.backends.cudnn.is_available() is False
        with pytest.raises(AssertionError, match="not compiled with CUDA enabled"):
            m.cuda.current_device()
    dev = ndgrad.device("cuda" if ndgrad.cuda.is_available() else "cpu")
    assert ndgrad.zeros(2, device=dev).device == dev
    # ndgrad has neither oneDNN nor OpenMP kernels (torch's build has both); the CPU capability
    # is the machine's, so both name the same vector set
    assert ndgrad.backends.mkldnn.is_available() is False
    assert ndgrad.backends.openmp.is_available() is False
    assert ndgrad.backends.cpu.get_cpu_capability() == torch.backends.cpu.get_cpu_capability()


def test_backends_cuda_matmul_flags_as_torch():
    """``backends.cuda.matmul`` (nanoGPT sets allow_tf32): allow_tf32 mirrors the float32
    matmul precision, the reduction flags are recorded, bad values and names fail as torch's."""
    def attempt(m, name, value):
        try:
            setattr(m.backends.cuda.matmul, name, value)
            return ("ok", getattr(m.backends.cuda.matmul, name))
        except (TypeError, RuntimeError, AttributeError) as e:
            return (type(e).__name__, str(e))
    cases = [("allow_tf32", True), ("allow_tf32", False), ("allow_tf32", 1),
             ("allow_fp16_reduced_precision_reduction", (False, False)),
             ("allow_fp16_reduced_precision_reduction", (True,)),
             ("allow_bf16_reduced_precision_reduction", (True, False)),
             ("allow_bf16_reduced_precision_reduction", ()),
             ("allow_bf16_reduced_precision_reduction", (True, True, True)),
             ("allow_bf16_reduced_precision_reduction", (1,)),
             ("allow_bf16_reduced_precision_reduction", "x"),
             ("allow_fp16_accumulation", 0), ("no_such_flag", True)]
    saved = {m: m.get_float32_matmul_precision() for m in (torch, ndgrad)}
    for m in (torch, ndgrad):
        try:
            assert m.backends.cuda.is_built() is False
            assert m.backends.cudnn.allow_tf32 is True
            m.backends.cuda.matmul.allow_tf32 = True
            assert m.get_float32_matmul_precision() == "high"
            m.set_float32_matmul_precision("highest")
            assert m.backends.cuda.matmul.allow_tf32 is False
            m.set_float32_matmul_precision("medium")
            assert m.backends.cuda.matmul.allow_tf32 is True
            with pytest.raises(AttributeError, match="Unknown attribute bogus"):
                m.backends.cuda.matmul.bogus
        finally:
            m.set_float32_matmul_precision(saved[m])
    for name, value in cases:
        try:
            assert attempt(ndgrad, name, value) == attempt(torch, name, value), (name, value)
        finally:
            for m in (torch, ndgrad):
                m.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = True
                m.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True
                m.set_float32_matmul_precision(saved[m])
    assert ndgrad.backends.cuda.matmul.allow_bf16_reduced_precision_reduction_split_k is True


def test_small_queries_programs_make():
    for m in (torch, ndgrad):
        t = m.ones(2, 3, dtype=m.float64)[:, :2]
        assert (t.nbytes, t.itemsize, t.is_pinned()) == (32, 8, False)
        with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
            t.pin_memory()
        old = m.get_num_interop_threads()
        m.set_num_interop_threads(old)
        assert m.get_num_interop_threads() == old
        for bad, words in ((0, "expects a positive integer"), (1.5, "expects an int")):
            with pytest.raises(RuntimeError, match=words):
                m.set_num_interop_threads(bad)
        assert m.vmap is m.func.vmap
        assert m.compiler.is_compiling() is False
        assert m.compiler.disable(len)([1, 2]) == 2
        assert m.compiler.disable()(len)([1]) == 1
        from importlib import import_module
        u = import_module(m.__name__ + ".nn.modules.utils")
        assert (u._single(2), u._pair(3), u._pair([1, 2]), u._triple(0), u._quadruple(1)) == (
            (2,), (3, 3), (1, 2), (0, 0, 0), (1, 1, 1, 1))
        assert u._reverse_repeat_tuple((1, 2, 3), 2) == (3, 3, 2, 2, 1, 1)
        assert u._list_with_default([None, 3], [1, 2, 5, 7]) == [5, 3]
        sd = {"module.a": 1, "module.b.c": 2, "x": 3}
        u.consume_prefix_in_state_dict_if_present(sd, "module.")
        assert sd == {"a": 1, "b.c": 2, "x": 3}
    seen = []
    f = ndgrad.compile(lambda x: seen.append(ndgrad.compiler.is_compiling()) or x * 2)
    f(ndgrad.ones(2))
    assert seen == [True]


def test_default_device():
    try:
        for m in (torch, ndgrad):
            assert m.get_default_device() == m.device("cpu")
            m.set_default_device("cpu")
            assert m.get_default_device() == m.device("cpu")
            assert m.zeros(1).device == m.device("cpu")
            m.set_default_device(m.device("cpu"))
            m.set_default_device(None)
            assert m.get_default_device() == m.device("cpu")
            with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
                m.set_default_device("xyz")
        # PyTorch's CPU build accepts "cuda" here and fails at the next factory call; ndgrad
        # fails at once, with the same error.
        with pytest.raises(AssertionError, match="not compiled with CUDA enabled"):
            ndgrad.set_default_device("cuda")
        assert ndgrad.get_default_device() == ndgrad.device("cpu")
    finally:
        torch.set_default_device(None)
        ndgrad.set_default_device(None)


# ---------------------------------------------------------------------------- default dtype
@pytest.mark.parametrize("src", [
    "m.set_default_dtype(m.int64)", "m.set_default_dtype(m.complex64)",
    "m.set_default_dtype(m.bool)", "m.set_default_dtype(float)",
    "m.set_default_dtype('float64')", "m.set_default_dtype(None)",
])
def test_set_default_dtype_errors(src):
    same(lambda m: eval(src, {"m": m}))
    assert ndgrad.get_default_dtype() is ndgrad.float32


@pytest.mark.parametrize("dt", ["float64", "float16", "bfloat16", "float32"])
def test_default_dtype_reaches_factories_and_promotion(dt):
    def run(m):
        old = m.get_default_dtype()
        m.set_default_dtype(getattr(m, dt))
        try:
            made = (m.tensor([1.0]), m.tensor(1.0), m.zeros(1), m.ones(1), m.empty(1),
                    m.full((1,), 1.5), m.arange(1.0), m.linspace(0, 1, 2), m.eye(1), m.randn(1),
                    m.rand(1), m.tensor([1]) / 2, m.tensor([1]) * 1.5, m.exp(m.tensor([1])),
                    m.Tensor([1]), m.as_tensor([1.0]), m.tensor([1]),
                    m.zeros_like(m.tensor([1])), m.tensor([1.0]).float())
            return [str(d).split(".")[-1] for d in [m.get_default_dtype()] +
                    [t.dtype for t in made]]
        finally:
            m.set_default_dtype(old)
    same_outcome(run)


@pytest.mark.parametrize("expr", ["s[1:]", "s[::-1]", "s[:0]", "s + (4,)", "(4,) + s", "s + s",
                                  "s * 2", "2 * s", "s[0]", "s[-1]", "s + [5]", "s * 1.5"])
def test_size_slices_and_sums_stay_sizes(expr):
    # print(x.shape[1:]) shows torch.Size([...]) in PyTorch, not a tuple
    def run(m):
        try:
            r = eval(expr, {"s": m.Size([2, 3, 5])})
        except TypeError as e:
            return "TypeError", str(e)
        return type(r).__name__, repr(r).replace("ndgrad.", "torch.")
    assert run(ndgrad) == run(torch)
