"""DLPack and NumPy exchange: zero copy in both directions with PyTorch and NumPy (same memory,
same values, writes visible both ways), capsule versions, and PyTorch's refusals."""

import numpy as np
import pytest
import torch

import ndgrad
from ndgrad.utils import dlpack as nd_dlpack

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64", "complex64", "complex128"]


def _values(dtype):
    base = np.array([[0, 1, 2], [3, 4, 5]])
    if dtype == "bool":
        return base % 2 == 1
    if dtype.startswith("complex"):
        return base + 1j * base[::-1]
    return base


def _ptr(t):
    return t.data_ptr()


def _write(t, dtype):
    """Write one element through ``t`` in place (bumping its version) and return the value."""
    v = True if dtype == "bool" else (7 + 2j if dtype.startswith("complex") else 7)
    t[1, 2] = v
    return v


@pytest.mark.parametrize("dtype", DTYPES)
def test_ndgrad_to_torch_shares_memory_and_writes_show_both_ways(dtype):
    t = ndgrad.tensor(_values(dtype), dtype=getattr(ndgrad, dtype))
    x = torch.from_dlpack(t)
    assert x.dtype == getattr(torch, dtype) and x.shape == (2, 3)
    assert _ptr(x) == _ptr(t)
    assert x.to(torch.float64 if dtype != "bool" and not dtype.startswith("complex")
                else x.dtype).tolist() == t.tolist()
    # a write through torch is seen by ndgrad; torch's version counter shows it
    v = _write(x, dtype)
    assert x._version == 1 and t[1, 2].item() == v
    # and a write through ndgrad is seen by torch; ndgrad's counter shows it
    t[0, 0] = v
    assert t._version == 1 and x[0, 0].item() == v


@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_to_ndgrad_shares_memory_and_writes_show_both_ways(dtype):
    x = torch.tensor(_values(dtype), dtype=getattr(torch, dtype))
    t = ndgrad.from_dlpack(x)
    assert t.dtype == getattr(ndgrad, dtype) and _ptr(t) == _ptr(x)
    assert not t.requires_grad and t.is_leaf
    v = _write(t, dtype)
    assert t._version == 1 and x[1, 2].item() == v
    x[0, 1] = v
    assert x._version == 1 and t[0, 1].item() == v


@pytest.mark.parametrize("dtype", DTYPES)
def test_legacy_capsules_both_ways(dtype):
    x = torch.tensor(_values(dtype), dtype=getattr(torch, dtype))
    t = nd_dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(x))
    assert t.dtype == getattr(ndgrad, dtype) and _ptr(t) == _ptr(x)
    v = _write(t, dtype)       # memory from a legacy capsule is writable, as in torch
    assert x[1, 2].item() == v
    y = torch.utils.dlpack.from_dlpack(nd_dlpack.to_dlpack(t))
    assert y.dtype == x.dtype and _ptr(y) == _ptr(t)


def test_numpy_round_trips_and_asarray_are_zero_copy():
    t = ndgrad.arange(6.0).reshape(2, 3)
    a = np.from_dlpack(t)
    assert np.shares_memory(a, t.numpy()) and a.flags.writeable
    a[0, 0] = -1.0
    assert t[0, 0].item() == -1.0
    t.add_(1)
    assert a[0, 0] == 0.0 and t._version == 1
    assert np.shares_memory(np.asarray(t), t.numpy()) and np.shares_memory(np.asarray(t.T), a)
    b = np.arange(4.0)
    u = ndgrad.from_dlpack(b)
    assert np.shares_memory(u.numpy(), b)
    u.mul_(2)
    np.testing.assert_array_equal(b, [0.0, 2.0, 4.0, 6.0])
    b[0] = 5
    assert u[0].item() == 5.0
    # bfloat16 (ml_dtypes) to NumPy keeps the dtype and the memory
    h = ndgrad.ones(3, dtype=ndgrad.bfloat16)
    c = ndgrad.from_dlpack(h)
    assert c.dtype == ndgrad.bfloat16 and _ptr(c) == _ptr(h)
    assert np.asarray(h).dtype.name == "bfloat16" and np.shares_memory(np.asarray(h), h.numpy())
    with pytest.raises(RuntimeError, match="Unsupported dtype"):    # NumPy has no bfloat16
        np.from_dlpack(h)


def test_strided_zero_dim_and_empty_tensors():
    t = ndgrad.arange(12.0).reshape(3, 4)
    for v in (t[:, ::2], t.T, t[1], t[0, 0], ndgrad.zeros(0, 3)):
        x = torch.from_dlpack(v)
        assert x.shape == v.shape and x.stride() == v.stride()
        assert x.tolist() == v.tolist()
        if v.numel():
            assert _ptr(x) == _ptr(v)
    x = torch.arange(12.0).reshape(3, 4)[:, 1::2]
    u = ndgrad.from_dlpack(x)
    assert u.stride() == x.stride() and _ptr(u) == _ptr(x) and u.tolist() == x.tolist()


def test_expanded_views_export_like_torch():
    t = ndgrad.arange(3.0)
    e = t.expand(2, 3)
    for x in (torch.from_dlpack(e), torch.utils.dlpack.from_dlpack(nd_dlpack.to_dlpack(e))):
        assert x.stride() == e.stride() == (0, 1) and _ptr(x) == _ptr(t)
        assert x.tolist() == [[0.0, 1.0, 2.0]] * 2
    h = ndgrad.ones(3, dtype=ndgrad.bfloat16).expand(2, 3)
    y = torch.utils.dlpack.from_dlpack(nd_dlpack.to_dlpack(h))
    assert y.dtype == torch.bfloat16 and y.stride() == (0, 1) and y.tolist() == [[1.0] * 3] * 2


def test_capsule_versions_match_torch():
    t, x = ndgrad.arange(3.0), torch.arange(3.0)
    for kwargs in ({}, {"max_version": (1, 0)}, {"max_version": (0, 8)}):
        nd_cap, t_cap = t.__dlpack__(**kwargs), x.__dlpack__(**kwargs)
        assert repr(nd_cap).split()[2] == repr(t_cap).split()[2]
    assert repr(t.__dlpack__(max_version=(1, 0))).split()[2] == '"dltensor_versioned"'
    # either capsule kind is accepted by torch and by ndgrad
    assert torch.from_dlpack(t.__dlpack__(max_version=(1, 0))).tolist() == [0.0, 1.0, 2.0]
    assert ndgrad.from_dlpack(x.__dlpack__(max_version=(1, 0))).tolist() == [0.0, 1.0, 2.0]
    assert t.__dlpack_device__() == x.__dlpack_device__() == (1, 0)
    assert type(t.__dlpack_device__()[0]).__name__ == "DLDeviceType"
    assert int(nd_dlpack.DLDeviceType.kDLCUDA) == int(torch.utils.dlpack.DLDeviceType.kDLCUDA)


def _error(fn, *args, **kwargs):
    with pytest.raises(Exception) as info:
        fn(*args, **kwargs)
    return type(info.value), str(info.value)


def test_tensors_that_require_grad_are_refused_like_torch():
    for lib in (ndgrad, torch):
        leaf = lib.ones(3, requires_grad=True)
        expect = (BufferError, "Can't export tensors that require gradient, use tensor.detach()")
        assert _error(leaf.__dlpack__) == expect
        assert _error((leaf * 2).__dlpack__) == expect
        assert _error(np.from_dlpack, leaf) == expect
        with lib.no_grad():
            assert _error(leaf.__dlpack__) == expect
        assert lib.from_dlpack(leaf.detach()).tolist() == [1.0, 1.0, 1.0]
        # the legacy to_dlpack does not check (the capsule carries no history)
        assert "dltensor" in repr(lib.utils.dlpack.to_dlpack(leaf))
    assert _error(lambda: torch.from_dlpack(ndgrad.ones(2, requires_grad=True)))[0] is BufferError


def test_errors_match_torch():
    for lib in (ndgrad, torch):
        t = lib.arange(3.0)
        assert _error(t.__dlpack__, stream=1) == (AssertionError, "stream should be None on cpu.")
        assert lib.from_dlpack(t, device="cpu").tolist() == [0.0, 1.0, 2.0]
    for bad in (5, "a", [1, 2]):
        assert _error(ndgrad.from_dlpack, bad) == _error(torch.from_dlpack, bad)
    for lib in (ndgrad, torch):
        cap = lib.utils.dlpack.to_dlpack(lib.arange(3.0))
        lib.utils.dlpack.from_dlpack(cap)
        assert _error(ndgrad.from_dlpack, cap) == _error(torch.from_dlpack, cap)
    assert _error(lambda: ndgrad.from_dlpack(np.zeros(2), device="cuda"))[0] is AssertionError
    with pytest.raises(TypeError, match="must be Tensor"):
        nd_dlpack.to_dlpack(np.zeros(2))


def test_copy_arguments():
    t = ndgrad.arange(3.0)
    a = np.from_dlpack(t, copy=True)
    a[0] = 9.0
    assert t[0].item() == 0.0
    x = torch.from_dlpack(t.__dlpack__(copy=True))
    assert _ptr(x) != _ptr(t)
    b = np.arange(3.0)
    u = ndgrad.from_dlpack(b, copy=True)
    u[0] = 9.0
    assert b[0] == 0.0


def test_conjugate_and_negative_views():
    # torch refuses to export a lazily conjugated tensor; ndgrad's conj() is materialized, so
    # its result exports the conjugated values
    z = torch.tensor([1 + 2j, 3 - 1j])
    assert _error(lambda: ndgrad.from_dlpack(z.conj())) == (
        BufferError, "Can't export tensors with the conjugate bit set")
    assert ndgrad.from_dlpack(z.conj().resolve_conj()).tolist() == [1 - 2j, 3 + 1j]
    w = ndgrad.tensor([1 + 2j, 3 - 1j]).conj()
    assert not w.is_conj() and torch.from_dlpack(w).tolist() == [1 - 2j, 3 + 1j]
    # torch exports a negative view's raw memory (the consumer sees the values negated);
    # ndgrad refuses it instead of importing wrong values
    n = z.conj().imag
    assert n.is_neg() and np.from_dlpack(n).tolist() == (-n).tolist()
    assert _error(lambda: ndgrad.from_dlpack(n))[0] is BufferError
    assert ndgrad.from_dlpack(n.resolve_neg()).tolist() == n.tolist()


def test_imported_memory_takes_part_in_autograd():
    b = np.array([1.0, 2.0, 3.0])
    w = ndgrad.from_dlpack(b).requires_grad_()
    (w * w).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), 2 * b)
    with pytest.raises(BufferError):
        w.__dlpack__()
    with ndgrad.no_grad():
        w.sub_(w.grad)
    np.testing.assert_array_equal(b, [-1.0, -2.0, -3.0])
