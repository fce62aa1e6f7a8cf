"""Tensor attributes, autograd state setters, conversions, ``repr``, creation functions and
dtype promotion, each compared with PyTorch on the same inputs."""

import itertools
import re
import warnings

import numpy as np
import pytest
import torch

import ndgrad
from _compare import both, outcome

LIBS = (torch, ndgrad)
DTYPES = ["float16", "bfloat16", "float32", "float64", "complex64", "complex128",
          "uint8", "int8", "int16", "int32", "int64", "bool"]




def dname(d):
    return str(d).split(".")[-1]


# ---------------------------------------------------------------------------- attributes
VIEWS = {
    "base": lambda b: b,
    "index": lambda b: b[1],
    "slice": lambda b: b[:, 1:],
    "step": lambda b: b[..., ::2],
    "transpose": lambda b: b.transpose(0, 2),
    "permute": lambda b: b.permute(2, 0, 1),
    "mixed-index": lambda b: b[0, 1:, 2],
    "unsqueeze": lambda b: b.unsqueeze(1),
    "view": lambda b: b.view(6, 4),
    "expand": lambda b: b.expand(2, 2, 3, 4),
    "select": lambda b: b.select(1, 2),
    "narrow": lambda b: b.narrow(2, 1, 2),
    "t-of-index": lambda b: b[1].t(),
    "empty-slice": lambda b: b[0:0],
    "negative-step-free": lambda b: b[:, -2:, -3:-1],
    "slice-of-slice": lambda b: b[1:, 1:][:, :, 2:],
}


@pytest.mark.parametrize("name", list(VIEWS))
def test_view_attributes(name):
    def run(L):
        v = VIEWS[name](L.arange(24.0).reshape(2, 3, 4))
        return (tuple(v.shape), tuple(v.size()), [v.size(d) for d in range(-v.dim(), v.dim())],
                v.stride(), [v.stride(d) for d in range(v.dim())], v.storage_offset(),
                v.is_contiguous(), v.numel(), v.ndim, v.dim(), dname(v.dtype), str(v.device),
                v.element_size(), v.is_leaf, v.requires_grad)
    t, n = both(run)
    assert t == n


def test_size_repr_and_dim_errors():
    def run(L):
        x = L.ones(2, 3)
        return repr(x.shape).replace("torch", "ndgrad"), outcome(lambda: x.size(2)), \
            outcome(lambda: x.stride(-3)), x.shape == (2, 3), x.shape.numel()
    t, n = both(run)
    assert t == n


def test_device_and_dtype_properties():
    def run(L):
        x = L.ones(2, dtype=L.float64)
        return (str(x.device), x.device.type, x.is_cuda, x.is_floating_point(), x.is_complex(),
                L.ones(1, dtype=L.complex64).is_complex(), x.dtype.is_floating_point,
                L.int64.is_floating_point, L.complex64.is_complex, x.dtype == L.float64,
                x.dtype == L.double, L.float is L.float32, L.long is L.int64)
    t, n = both(run)
    assert t == n


def test_data_ptr_of_from_numpy_shares_memory():
    def run(L):
        a = np.arange(6.0).reshape(2, 3)
        t = L.from_numpy(a)
        same = t.data_ptr() == a.ctypes.data
        a[0, 0] = 100.0
        t[1, 2] = -1.0
        return same, t[0, 0].item(), float(a[1, 2]), dname(t.dtype), t.stride()
    t, n = both(run)
    assert t == n == (True, 100.0, -1.0, "float64", (3, 1))


def test_data_ptr_of_views_and_offsets():
    def run(L):
        x = L.arange(12.0).reshape(3, 4)
        item = x.element_size()
        return ((x[1].data_ptr() - x.data_ptr()) // item, (x[:, 2].data_ptr() - x.data_ptr())
                // item, x.t().data_ptr() == x.data_ptr(), x.clone().data_ptr() == x.data_ptr())
    t, n = both(run)
    assert t == n == (4, 2, True, False)


# ---------------------------------------------------------------------------- requires_grad
def test_requires_grad_setter_errors_and_messages():
    def run(L):
        x = L.ones(2, requires_grad=True)
        y = x * 2
        return [
            outcome(lambda: setattr(y, "requires_grad", False)),
            outcome(lambda: setattr(y, "requires_grad", True)),
            outcome(lambda: y.requires_grad_(True).requires_grad),
            outcome(lambda: y.requires_grad_(False)),
            outcome(lambda: L.tensor([1, 2], requires_grad=True)),
            outcome(lambda: L.zeros(2, dtype=L.int32, requires_grad=True)),
            outcome(lambda: L.ones(2, dtype=L.int64).requires_grad_()),
            outcome(lambda: setattr(L.ones(2, dtype=L.int64), "requires_grad", True)),
            outcome(lambda: L.ones(2, dtype=L.bool).requires_grad_()),
            outcome(lambda: L.ones(2, dtype=L.int64).requires_grad_(False).requires_grad),
            outcome(lambda: L.ones(2, dtype=L.complex64).requires_grad_().requires_grad),
            outcome(lambda: L.ones(2, dtype=L.float16).requires_grad_().requires_grad),
        ]
    t, n = both(run)
    assert t == n
    # PyTorch words the two integer errors differently: the factory vs requires_grad_().
    assert t[4][1] == "Only Tensors of floating point and complex dtype can require gradients"
    assert t[6][1] == "only Tensors of floating point dtype can require gradients"


def test_requires_grad_on_leaf_toggles():
    def run(L):
        x = L.ones(2)
        a = x.requires_grad
        x.requires_grad = True
        b = (x * 2).requires_grad
        x.requires_grad_(False)
        return a, b, x.requires_grad, x.is_leaf
    t, n = both(run)
    assert t == n == (False, True, False, True)


# ---------------------------------------------------------------------------- .grad
def test_grad_setter_checks():
    def run(L):
        x = L.ones(2, 3, requires_grad=True)
        out = []
        for value in [1, x, L.ones(2, 3, dtype=L.float64), L.ones(3, 2), L.ones(2, 3),
                      L.ones(2, 3, dtype=L.int64), L.ones(2, 3, dtype=L.int8),
                      L.ones(2, 3, dtype=L.uint8), L.ones(2, 3, dtype=L.float16), None]:
            def assign(value=value):
                x.grad = value
                return None if x.grad is None else tuple(x.grad.shape)
            out.append(outcome(assign))
        return out
    t, n = both(run)
    assert t == n
    assert t[0] == ("TypeError", "assigned grad expected to be a Tensor or None but got grad of "
                                 "type int")
    assert t[1] == ("RuntimeError", "can't assign Variable as its own grad")
    assert "attempting to assign a gradient with dtype 'double'" in t[2][1]
    assert "of size '[3, 2]' to a tensor of size '[2, 3]'" in t[3][1]


def test_grad_deleter_and_identity():
    def run(L):
        x = L.ones(2, requires_grad=True)
        g = L.full((2,), 3.0)
        x.grad = g
        same = x.grad is g
        del x.grad
        return same, x.grad
    t, n = both(run)
    assert t == n == (True, None)


def test_non_leaf_grad_access_warns():
    def run(L):
        x = L.ones(2, requires_grad=True)
        y = x * 2
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            a = y.grad
            y.retain_grad()
            b = y.grad
            c = x.grad
            d = L.ones(2).grad
        return a, b, c, d, [(c.category.__name__, str(c.message)) for c in w]
    t, n = both(run)
    assert t[:4] == n[:4] == (None, None, None, None)
    assert len(t[4]) == len(n[4]) == 1 and t[4][0][0] == n[4][0][0] == "UserWarning"
    # PyTorch appends "(Triggered internally at <C++ file>)".
    assert t[4][0][1].startswith(n[4][0][1])
    assert n[4][0][1].startswith("The .grad attribute of a Tensor that is not a leaf Tensor is "
                                 "being accessed.")


# ---------------------------------------------------------------------------- detach
def test_detach_shares_data_and_version():
    def run(L):
        x = L.ones(3, requires_grad=True)
        y = x * 2
        d = y.detach()
        out = [d.requires_grad, d.grad_fn, d.is_leaf, d.data_ptr() == y.data_ptr(),
               d._version, y._version]
        d.add_(1)
        out += [d._version, y._version, y.tolist()]
        return out
    t, n = both(run)
    assert t == n == [False, None, True, True, 0, 0, 1, 1, [3.0, 3.0, 3.0]]


def test_detach_in_place():
    def run(L):
        x = L.ones(3, requires_grad=True)
        y = x * 2
        r = y.detach_()
        out = [r is y, y.requires_grad, y.grad_fn, y.is_leaf]
        v = (x * 1)[1:]
        out.append(outcome(lambda: v.detach_()))
        return out
    t, n = both(run)
    assert t[:4] == n[:4] == [True, False, None, True]
    assert t[4] == n[4] and t[4][1].startswith("Can't detach views in-place. Use detach() instead.")


@pytest.mark.parametrize("make", ["view", "reshape"])
def test_grad_made_by_a_view_backward_is_no_view(make):
    """A ``.grad`` a backward stored is no view (old ``zero_grad`` code calls
    ``p.grad.detach_()``), and later gradients still accumulate into it, as torch's."""
    def run(L):
        x = L.ones(3, 2, requires_grad=True)
        f = {"view": lambda: x.view(6), "reshape": lambda: x.reshape(6)}[make]
        (f() * L.arange(6.0)).sum().backward()
        out = [x.grad._base is None, outcome(lambda: x.grad.detach_() is not None)]
        (f() * L.arange(6.0)).sum().backward()
        return out + [x.grad.tolist(), x.grad._version]
    t, n = both(run)
    assert t == n


@pytest.mark.parametrize("case", ["saved-output", "saved-non-leaf-input", "saved-leaf",
                                  "max1"])
def test_modifying_detached_alias_invalidates_saved_tensor(case):
    def run(L):
        x = L.ones(3, requires_grad=True)
        if case == "saved-output":
            y = x.exp()
            y.detach().zero_()
        elif case == "saved-non-leaf-input":
            a = x * 1
            y = a.pow(2)
            a.detach().zero_()
        elif case == "saved-leaf":
            y = x * L.ones(3, requires_grad=True)
            x.detach().add_(1)
        else:
            y = (x * 1).max()
            y.detach().zero_()
        return outcome(lambda: y.sum().backward())
    t, n = both(run)
    assert t[0] == n[0] == "RuntimeError"
    # Identical up to "instead."; ndgrad then names where the tensor was modified in place.
    assert t[1].split(" instead.")[0] == n[1].split(" instead.")[0]
    assert "modified by an inplace operation" in n[1]
    assert "It was last modified in place at " in n[1] and "test_tensor.py:" in n[1]


# ---------------------------------------------------------------------------- conversions
def test_item_tolist_numpy():
    def run(L):
        x = L.tensor([[1.5, 2.0]], requires_grad=True)
        return [
            x.tolist(), outcome(lambda: x.item()), x[0, 1].item(), type(x.sum().item()).__name__,
            L.tensor(3).item(), type(L.tensor(3).item()).__name__, L.tensor(True).item(),
            L.tensor([7]).item(), outcome(lambda: x.numpy()), x.detach().numpy().tolist(),
            L.tensor([1, 2], dtype=L.int32).tolist(), L.tensor(2.5).tolist(),
            L.tensor([True]).tolist(), L.zeros(0, 2).tolist(), float(L.tensor([2.5])),
            int(L.tensor(3.7)), bool(L.tensor([1])), outcome(lambda: bool(L.ones(2))),
            len(L.ones(4, 2)), outcome(lambda: len(L.tensor(1.0))),
        ]
    t, n = both(run)
    assert t == n


def test_numpy_shares_memory():
    for L in LIBS:
        x = L.zeros(3)
        a = x.numpy()
        a[1] = 5.0
        assert x.tolist() == [0.0, 5.0, 0.0]


# ---------------------------------------------------------------------------- repr
def _repr_cases(L):
    return [
        L.tensor([1.0, 2.5, 3.14159]), L.tensor([1.0, 2.0, 3.0]), L.tensor([1e10, 1.0]),
        L.tensor([1e-5, 1.0]), L.tensor([1, 2, 300]), L.tensor([True, False]),
        L.tensor([True, True]), L.tensor([1.5], dtype=L.float64),
        L.tensor([1.5, 2], dtype=L.float16), L.tensor([1.0, 2.0], requires_grad=True),
        L.tensor([1.0, 2.0], requires_grad=True) * 2, L.tensor([]), L.zeros(0, 3),
        L.tensor([[1.0, -2.0], [3.25, 4.0]]), L.tensor(3.5), L.tensor(2),
        L.tensor([1, 2], dtype=L.int32), L.tensor([1.0, 2.0], dtype=L.bfloat16),
        L.tensor([float("nan"), float("inf"), 1.0]), L.tensor([-1.0, 0.5]),
        L.tensor([1.0 + 2.0j, -0.5j]), L.tensor([123456.0, 0.1]), L.tensor([0.0, -0.0]),
        L.tensor([1e8, 1.0]), L.arange(2000.0), L.arange(2000),
        L.tensor([[1, 2], [3, 4]], dtype=L.uint8), L.tensor(-0.0), L.tensor([100.0, 0.5]),
        L.ones(2, 12), L.tensor([1.0, 2.0], dtype=L.float64, requires_grad=True),
        L.tensor([1e-10, 0.0]), L.zeros(0, dtype=L.int64), L.zeros(2, 0, dtype=L.int32),
        L.arange(60.0).reshape(3, 4, 5) / 7, L.arange(40.0) * 1.5, L.ones(3, 1, 2),
        L.tensor([-float("inf"), 2.0, 4.0]), L.arange(1200.0).reshape(40, 30),
        L.tensor([[1.5, 2.0]], requires_grad=True).sum(1),
    ]


def _suffix_unwrapped(text):
    # "ndgrad." is one character longer than "torch.": a suffix may move to its own line.
    return re.sub(r",\n +(dtype=|grad_fn=|requires_grad=|size=)", r", \1", text)


@pytest.mark.parametrize("i", range(len(_repr_cases(ndgrad))))
def test_repr_matches_torch(i):
    t = repr(_repr_cases(torch)[i]).replace("torch.", "ndgrad.")
    n = repr(_repr_cases(ndgrad)[i])
    assert _suffix_unwrapped(n) == _suffix_unwrapped(t)


def test_repr_of_random_tensors_matches_torch():
    rng = np.random.default_rng(0)
    for shape in [(5,), (13,), (3, 4), (2, 3, 4), (7, 9), (1001,)]:
        for scale in (1.0, 1e-5, 1e9, 1000.0):
            data = rng.standard_normal(shape) * scale
            for dt in ("float32", "float64", "complex64"):
                arr = data + 1j * data[::-1] if dt == "complex64" else data
                t = torch.tensor(arr).to(getattr(torch, dt))
                n = ndgrad.tensor(t.numpy(), dtype=getattr(ndgrad, dt))
                assert _suffix_unwrapped(repr(n)) == _suffix_unwrapped(
                    repr(t).replace("torch.", "ndgrad.")), (shape, scale, dt)


# ---------------------------------------------------------------------------- creation
def _desc(t):
    return tuple(t.shape), dname(t.dtype), t.requires_grad, t.tolist()


CREATION = {
    "float-list": lambda L: _desc(L.tensor([1.0, 2])),
    "int-list": lambda L: _desc(L.tensor([1, 2])),
    "bool-list": lambda L: _desc(L.tensor([True, False])),
    "bool-and-int": lambda L: _desc(L.tensor([True, 2])),
    "complex": lambda L: _desc(L.tensor([1j, 2])),
    "scalar": lambda L: _desc(L.tensor(3.0)),
    "empty": lambda L: _desc(L.tensor([])),
    "nested": lambda L: _desc(L.tensor([[1, 2], [3, 4]])),
    "tuple": lambda L: _desc(L.tensor((1.0, 2.0))),
    "ragged": lambda L: _desc(L.tensor([[[1, 2], [3]], [[1, 2], [3, 4]]])),
    "numpy-f64": lambda L: _desc(L.tensor(np.array([1.0]))),
    "numpy-i32": lambda L: _desc(L.tensor(np.array([1], dtype=np.int32))),
    "numpy-scalar": lambda L: _desc(L.tensor(np.float64(1.5))),
    "explicit-dtype": lambda L: _desc(L.tensor([1, 2], dtype=L.float64)),
    "explicit-f64-precision": lambda L: _desc(L.tensor([0.1, 0.3], dtype=L.float64)),
    "float-to-int": lambda L: _desc(L.tensor([1.7, -1.7], dtype=L.int64)),
    "list-of-tensors": lambda L: _desc(L.tensor([L.tensor(1.0), L.tensor(2.0)])),
    "requires-grad": lambda L: _desc(L.tensor([1.0], requires_grad=True)),
    "zeros": lambda L: _desc(L.zeros(2, 3)),
    "zeros-tuple": lambda L: _desc(L.zeros((2, 3), dtype=L.int32)),
    "zeros-list": lambda L: _desc(L.zeros([2])),
    "zeros-0d": lambda L: _desc(L.zeros(())),
    "ones-bool": lambda L: _desc(L.ones(3, dtype=L.bool)),
    "ones-negative": lambda L: _desc(L.ones(2, -1)),
    "full-float": lambda L: _desc(L.full((2,), 1.5)),
    "full-int": lambda L: _desc(L.full((2,), 7)),
    "full-bool": lambda L: _desc(L.full((2,), True)),
    "full-complex": lambda L: _desc(L.full((2,), 1j)),
    "full-dtype": lambda L: _desc(L.full([2, 2], 3, dtype=L.float64)),
    "empty-shape": lambda L: (tuple(L.empty(2, 3).shape), dname(L.empty(2, 3).dtype)),
    "empty-int8": lambda L: (tuple(L.empty(4, dtype=L.int8).shape),
                             dname(L.empty(4, dtype=L.int8).dtype)),
    "arange": lambda L: _desc(L.arange(5)),
    "arange-float-step": lambda L: _desc(L.arange(0, 1, 0.25)),
    "arange-float-start": lambda L: _desc(L.arange(1.0, 4)),
    "arange-negative": lambda L: _desc(L.arange(5, 0, -2)),
    "arange-dtype": lambda L: _desc(L.arange(5, dtype=L.float64)),
    "arange-empty": lambda L: _desc(L.arange(0, 0, -1)),
    "arange-zero-step": lambda L: _desc(L.arange(0, 5, 0)),
    "arange-wrong-sign": lambda L: _desc(L.arange(0, 5, -1)),
    "linspace": lambda L: _desc(L.linspace(0, 1, 5)),
    "linspace-1": lambda L: _desc(L.linspace(2, 3, 1)),
    "linspace-0": lambda L: _desc(L.linspace(2, 3, 0)),
    "linspace-int": lambda L: _desc(L.linspace(0, 10, 4, dtype=L.int64)),
    "eye": lambda L: _desc(L.eye(3)),
    "eye-nm": lambda L: _desc(L.eye(2, 3, dtype=L.int64)),
    "zeros-like": lambda L: _desc(L.zeros_like(L.ones(2, dtype=L.int32))),
    "ones-like-dtype": lambda L: _desc(L.ones_like(L.ones(2, dtype=L.int32), dtype=L.float64)),
    "full-like": lambda L: _desc(L.full_like(L.ones(2, dtype=L.int32), 2.7)),
    "empty-like": lambda L: (tuple(L.empty_like(L.ones(2, 5)).shape),
                             dname(L.empty_like(L.ones(2, 5)).dtype)),
    "like-does-not-copy-requires-grad": lambda L: _desc(L.zeros_like(L.ones(2,
                                                                            requires_grad=True))),
    "like-requires-grad": lambda L: _desc(L.ones_like(L.ones(2), requires_grad=True)),
    "rand-like": lambda L: (tuple(L.rand_like(L.ones(2, 3, dtype=L.float64)).shape),
                            dname(L.rand_like(L.ones(2, 3, dtype=L.float64)).dtype)),
    "randn-shape": lambda L: (tuple(L.randn(2, 3).shape), dname(L.randn(2, 3).dtype)),
    "randint": lambda L: (tuple(L.randint(0, 10, (3, 2)).shape),
                          dname(L.randint(0, 10, (3,)).dtype)),
    "randint-high-only": lambda L: tuple(L.randint(10, (3,)).shape),
    "int-factory-requires-grad": lambda L: _desc(L.zeros(2, dtype=L.int64, requires_grad=True)),
    "as-tensor-list": lambda L: _desc(L.as_tensor([1, 2])),
    "as-tensor-same-object": lambda L: (lambda t: L.as_tensor(t) is t)(L.ones(2)),
    "as-tensor-dtype": lambda L: _desc(L.as_tensor(L.ones(2), dtype=L.int64)),
    "from-numpy-bad-dtype": lambda L: L.from_numpy(np.array(["a"])),
}


@pytest.mark.parametrize("name", list(CREATION))
def test_creation_matches_torch(name):
    t = outcome(lambda: CREATION[name](torch))
    n = outcome(lambda: CREATION[name](ndgrad))
    if name == "from-numpy-bad-dtype":
        # The supported-type list differs (ndgrad has bfloat16, no uint16/32/64).
        assert t[0] == n[0] == "TypeError"
        assert t[1].split(".")[:2] == n[1].split(".")[:2]
    else:
        assert t == n


def test_as_tensor_and_from_numpy_share_memory():
    def run(L):
        a = np.arange(6.0).reshape(2, 3)
        views = [L.from_numpy(a), L.as_tensor(a), L.tensor(a), L.as_tensor(a, dtype=L.float32)]
        a[0, 0] = 100.0
        return [v.data_ptr() == a.ctypes.data for v in views], [v[0, 0].item() for v in views]
    t, n = both(run)
    assert t == n == ([True, True, False, False], [100.0, 100.0, 0.0, 0.0])


def test_random_functions_dtype_errors():
    t = outcome(lambda: torch.randn(2, dtype=torch.int64))
    n = outcome(lambda: ndgrad.randn(2, dtype=ndgrad.int64))
    assert t == n and t[0] == "NotImplementedError"
    t = outcome(lambda: torch.rand(2, dtype=torch.int64))
    n = outcome(lambda: ndgrad.rand(2, dtype=ndgrad.int64))
    assert t == n


def test_manual_seed_reproducibility():
    ndgrad.manual_seed(123)
    a = [ndgrad.rand(5).tolist(), ndgrad.randn(2, 3).tolist(), ndgrad.randint(0, 100, (4,))
         .tolist(), ndgrad.randn_like(ndgrad.ones(3)).tolist()]
    ndgrad.manual_seed(123)
    b = [ndgrad.rand(5).tolist(), ndgrad.randn(2, 3).tolist(), ndgrad.randint(0, 100, (4,))
         .tolist(), ndgrad.randn_like(ndgrad.ones(3)).tolist()]
    ndgrad.manual_seed(124)
    c = ndgrad.rand(5).tolist()
    assert a == b and c != a[0]
    r = ndgrad.rand(1000)
    assert 0.0 <= r.min().item() and r.max().item() < 1.0
    k = ndgrad.randint(3, 7, (1000,))
    assert set(k.tolist()) == {3, 4, 5, 6}


# ---------------------------------------------------------------------------- dtype promotion
@pytest.mark.parametrize("a,b", list(itertools.product(DTYPES, DTYPES)))
def test_promote_types_all_pairs(a, b):
    t = torch.promote_types(getattr(torch, a), getattr(torch, b))
    n = ndgrad.promote_types(getattr(ndgrad, a), getattr(ndgrad, b))
    assert dname(t) == n.name


def _outside_supported(t_dtype):
    # PyTorch can answer complex32 (float16 with complex), which ndgrad does not have.
    return dname(t_dtype) not in DTYPES


@pytest.mark.parametrize("a,b", list(itertools.product(DTYPES, DTYPES)))
def test_result_type_dimensioned_and_zero_dim(a, b):
    for sa, sb in [((2,), ()), ((), (2,)), ((), ()), ((2,), (2,))]:
        t = torch.result_type(torch.ones(sa, dtype=getattr(torch, a)),
                              torch.ones(sb, dtype=getattr(torch, b)))
        if _outside_supported(t):
            assert "float16" in (a, b)
            continue
        n = ndgrad.result_type(ndgrad.ones(sa, dtype=getattr(ndgrad, a)),
                               ndgrad.ones(sb, dtype=getattr(ndgrad, b)))
        assert dname(t) == n.name, (sa, sb)


@pytest.mark.parametrize("a", DTYPES)
def test_result_type_with_python_scalars(a):
    for scalar in (True, 2, 2.5, 1j):
        for shape in [(2,), ()]:
            ta = torch.ones(shape, dtype=getattr(torch, a))
            na = ndgrad.ones(shape, dtype=getattr(ndgrad, a))
            for t, n in [(torch.result_type(ta, scalar), ndgrad.result_type(na, scalar)),
                         (torch.result_type(scalar, ta), ndgrad.result_type(scalar, na))]:
                if _outside_supported(t):
                    assert a == "float16"
                    continue
                assert dname(t) == n.name, (scalar, shape)


def test_result_type_of_binary_ops_matches_promotion():
    def run(L):
        out = []
        for a, b in [("int32", "float16"), ("uint8", "int8"), ("bool", "int16"),
                     ("bfloat16", "float16"), ("int64", "complex64"), ("float64", "complex64")]:
            x = L.ones(2, dtype=getattr(L, a))
            y = L.ones(2, dtype=getattr(L, b))
            out.append(dname((x + y).dtype))
        out.append(dname((L.ones(2, dtype=L.int32) * 2.5).dtype))
        out.append(dname((L.ones(2, dtype=L.float16) + L.tensor(1.0, dtype=L.float64)).dtype))
        return out
    t, n = both(run)
    assert t == n


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16", "int64", "int8"])
def test_linspace_is_bit_identical_to_torch(dtype):
    # Note [linspace's fma]: one rounding per value in float32/float64 (and the integer
    # dtypes' double arithmetic), one per operation in float16/bfloat16
    for n in (2, 5, 7, 11, 16, 33, 258, 1001, 5000):
        for lo, hi in ((-1, 1), (0, 6.283185307179586), (-3.5, 2.25), (5, -5), (1e-3, 7.5)):
            if dtype.startswith("int") and not float(lo).is_integer():
                continue
            t = torch.linspace(lo, hi, n, dtype=getattr(torch, dtype))
            g = ndgrad.linspace(lo, hi, n, dtype=getattr(ndgrad, dtype))
            if dtype == "bfloat16":
                t, g = t.float(), g.float()
            np.testing.assert_array_equal(g.numpy(), t.numpy(), err_msg=f"{n} {lo} {hi}")


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_linspace_is_bit_identical_to_torch(dtype):
    # a complex linspace is the real dtype's linspace of each part (with its fma rounding)
    rng = np.random.default_rng(0)
    bounds = [(complex(*rng.standard_normal(2) * 10), complex(*rng.standard_normal(2) * 0.1))
              for _ in range(12)] + [(complex(-0.0, -0.0), 1j), (complex(np.inf, 1), 2.0),
                                     (1 + 2j, 3), (-2, 1j)]
    for n in (0, 1, 2, 5, 16, 33, 100, 258):
        for lo, hi in bounds:
            t = torch.linspace(lo, hi, n, dtype=getattr(torch, dtype)).numpy()
            g = ndgrad.linspace(lo, hi, n, dtype=getattr(ndgrad, dtype)).numpy()
            real = t.real.dtype
            np.testing.assert_array_equal(g.view(real), t.view(real), err_msg=f"{n} {lo} {hi}")
            assert np.array_equal(np.signbit(g.view(real)), np.signbit(t.view(real)))
    t = torch.linspace(1j, 2 + 1j, 7)                            # the default complex dtype
    g = ndgrad.linspace(1j, 2 + 1j, 7)
    assert g.dtype == ndgrad.complex64 and np.array_equal(g.numpy(), t.numpy())


def test_numpy_arrays_are_new_views_as_torch():
    # Note [NumPy views of a tensor]: a new array on each call, not owning its data, sharing
    # the tensor's memory; changing the array object itself leaves the tensor alone
    for lib in (torch, ndgrad):
        t = lib.arange(6.0).reshape(2, 3)
        tt = t.t()
        for src in (t, tt, lib.tensor(2.0), lib.from_numpy(np.ones(3))):
            a, b = src.numpy(), np.asarray(src)
            assert a is not b and not a.flags.owndata and a.flags.writeable
            assert np.shares_memory(a, b)
        a = t.numpy()
        a.shape = (6,)
        a[0] = 7.0
        assert tuple(t.shape) == (2, 3) and t[0, 0].item() == 7.0
        a = t.numpy()
        a.flags.writeable = False
        assert t.numpy().flags.writeable
        t.add_(1)
        assert a[0, 0] == 8.0
        r = lib.ones(2, requires_grad=True)
        f = r.numpy(force=True)
        assert not f.flags.owndata and np.shares_memory(f, r.detach().numpy())
