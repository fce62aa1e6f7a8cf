"""``Tensor.untyped_storage()`` / ``Tensor.storage()`` against torch: sizes, data pointers shared
by views, element access and assignment (writes reach the tensor), errors, printing."""

import warnings

import numpy as np
import pytest
import torch

import ndgrad

LIBS = (torch, ndgrad)


def _norm(s):
    return s.replace("torch.", "").replace("ndgrad.", "")


def _typed(t):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return t.storage()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int16", "bool", "complex64",
                                   "float16", "uint8"])
def test_sizes_values_and_repr_match_torch(dtype):
    got = []
    for L in LIBS:
        base = L.tensor([[1, 0, 3], [4, 5, 0]]).to(getattr(L, dtype))
        view = base.t()[1:]
        u, s = view.untyped_storage(), _typed(view)
        got.append((len(u), u.nbytes(), u.size(), u.element_size(), u.tolist(), list(u),
                    u.data_ptr() == base.data_ptr(), len(s), s.size(), s.nbytes(),
                    s.element_size(), s.tolist(), [s[i] for i in range(-len(s), len(s))],
                    [type(v).__name__ for v in s], _norm(repr(u)), _norm(repr(s)),
                    _norm(str(s.dtype)), _norm(s.type()), str(u.device), u.is_shared()))
    assert got[1] == got[0]


def test_empty_and_bfloat16_storages_print_like_torch():
    for make in (lambda L: L.tensor([]), lambda L: L.tensor([1.5], dtype=L.bfloat16)):
        reprs = [(_norm(repr(make(L).untyped_storage())), _norm(repr(_typed(make(L)))))
                 for L in LIBS]
        assert reprs[1] == reprs[0]


def test_writes_through_storages_reach_the_tensor():
    got = []
    for L in LIBS:
        t = L.arange(3.0)
        u = t[1:].untyped_storage()
        u[0] = 1
        u[11] = 300            # wraps modulo 256, as torch
        u[10] = -1
        s = _typed(t[2:])
        s[-1] = 5.0
        got.append((t.tolist(), u[0], u[-1], u[-2]))
        sub = u[4:8]
        assert sub.nbytes() == 4 and sub.data_ptr() == u.data_ptr() + 4
    assert got[1][1:] == got[0][1:]
    np.testing.assert_array_equal(got[1][0], got[0][0])


def test_errors_match_torch():
    for L in LIBS:
        t = L.arange(3.0)
        u, s = t.untyped_storage(), _typed(t)
        for obj, idx, exc, msg in (
                (u, 12, IndexError, "index 12 out of range for storage of size 12"),
                (u, -13, IndexError, "index -1 out of range for storage of size 12"),
                (s, 3, IndexError, "index 3 out of range for storage of size 3"),
                (s, slice(0, 2), RuntimeError,
                 "slices are only supported in UntypedStorage.__getitem__")):
            with pytest.raises(exc, match=msg):
                obj[idx]
        with pytest.raises(TypeError, match="can't index a (torch|ndgrad).UntypedStorage with "
                                            "str"):
            u["a"]
        with pytest.raises(RuntimeError, match="can only set storage content with a int types, "
                                               "but got float instead"):
            u[0] = 1.5
        for i in (-1, 12):
            with pytest.raises(RuntimeError, match="out of bounds"):
                u[i] = 1
        with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with "
                                             "size 3"):
            s[3] = 1.0


def test_storage_warns_deprecation_once_and_shares_with_views():
    import ndgrad.storage as S
    S._warned_typed = False
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        ndgrad.ones(1).storage()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ndgrad.ones(1).storage()
    x = ndgrad.arange(6.0)
    assert x[3:].untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert ndgrad.arange(6.0).untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    assert x.share_memory_().untyped_storage().is_shared()
    assert isinstance(x.untyped_storage(), ndgrad.UntypedStorage)
    assert isinstance(_typed(x), ndgrad.TypedStorage) and _typed(x).untyped().nbytes() == 24
