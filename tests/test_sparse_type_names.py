"""A sparse tensor's legacy type name (``'torch.sparse.FloatTensor'``) and its casts by name,
dtype or method (they keep the sparse layout), against torch."""

import warnings

import pytest
import torch

import ndgrad


def _sparse(m, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return m.sparse_coo_tensor(m.tensor([[0, 1], [1, 0]]),
                                   m.tensor([1.0, 2.0]).to(getattr(m, dtype)), (2, 2))


def _norm(v):
    return str(v).replace("ndgrad", "torch")


DTYPES = ["float32", "float64", "float16", "bfloat16", "bool", "complex64", "int8", "uint8",
          "int16", "int32", "int64"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_sparse_type_name_as_torch(dtype):
    assert _sparse(ndgrad, dtype).type() == _sparse(torch, dtype).type()


TARGETS = {"sparse_name": lambda m: "torch.sparse.DoubleTensor",
           "dense_name": lambda m: "torch.DoubleTensor",
           "same_name": lambda m: "torch.sparse.FloatTensor",
           "legacy_class": lambda m: m.DoubleTensor,
           "dtype": lambda m: m.float64,
           "same_dtype": lambda m: m.float32}


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_sparse_type_cast_as_torch(target):
    def run(m):
        s = _sparse(m, "float32")
        r = s.type(TARGETS[target](m))
        return _norm(r.layout), _norm(r.dtype), r is s, r.to_dense().tolist(), r.type()
    assert run(ndgrad) == run(torch)


@pytest.mark.parametrize("method", ["double", "half", "bfloat16", "float", "long", "int",
                                    "short", "char", "byte", "bool"])
def test_sparse_cast_methods_keep_layout(method):
    def run(m):
        r = getattr(_sparse(m, "float32"), method)()
        return _norm(r.layout), r.type(), r.to_dense().tolist()
    assert run(ndgrad) == run(torch)


def test_dense_type_with_sparse_name_stays_dense():
    def run(m):
        r = m.ones(2, 2).type("torch.sparse.DoubleTensor")
        return _norm(r.layout), r.type()
    assert run(ndgrad) == run(torch)
    assert not isinstance(_sparse(ndgrad, "float32"), ndgrad.FloatTensor)
