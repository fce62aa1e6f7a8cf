"""torch's older sparse-times-dense spellings (``spmm``, ``dsmm``, ``smm``, ``hspmm``,
``sspaddmm``, ``saddmm``) and ``sparse.softmax``/``sparse.log_softmax`` on ndgrad's sparse COO
tensors, built from ``sparse_mm`` and differentiable ops on the values.

Example:
    >>> import ndgrad
    >>> s = ndgrad.tensor([[0.0, 2.0], [1.0, 0.0]]).to_sparse()
    >>> ndgrad.spmm(s, ndgrad.ones(2, 1)).tolist()
    [[2.0], [1.0]]
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from . import _creation, _dtype, ops
from ._sparse import SparseTensor
from .ops import sparse_coo as _coo
from .tensor import Tensor


def _sparse_only(t: Any, fn: str) -> SparseTensor:
    if not isinstance(t, SparseTensor):
        raise RuntimeError(f"tensor.{fn}(...) can only be called on sparse tensors")
    return t


def spmm(input: Tensor, mat2: Tensor) -> Tensor:
    """``input @ mat2`` as a dense tensor (``input`` sparse COO or dense): ``mm``, whose
    gradient for a sparse ``input`` is not masked to its pattern (``sparse.mm``'s is)."""
    return ops.mm(input, mat2)


def dsmm(input: Tensor, mat2: Tensor) -> Tensor:
    """``spmm``: the dense product of a sparse ``input`` and a dense ``mat2``."""
    return spmm(input, mat2)


def _rows(mat1: SparseTensor) -> np.ndarray:
    return np.unique(mat1.coalesce()._indices()._data[0])


def smm(input: Tensor, mat2: Tensor) -> SparseTensor:
    """``input @ mat2`` as a sparse COO tensor whose entries are the rows ``input`` has
    entries in (every column of them)."""
    mat1 = _sparse_only(input, "sspaddmm")
    product = _coo.sparse_mm(mat1, mat2)
    rows = _rows(mat1)
    cols = product.shape[1]
    idx = np.stack([np.repeat(rows, cols), np.tile(np.arange(cols), rows.size)])
    vals = product[_creation.tensor(rows)].reshape(-1)
    return _coo.sparse_coo_tensor(_creation.tensor(idx.astype(np.int64)), vals,
                                  tuple(product.shape))


def hspmm(mat1: Tensor, mat2: Tensor) -> SparseTensor:
    """``mat1 @ mat2`` as a hybrid COO tensor: one sparse dim (the rows ``mat1`` has entries
    in), the columns dense."""
    if not isinstance(mat1, SparseTensor):
        raise NotImplementedError("Could not run 'aten::hspmm' with arguments from the 'CPU' "
                                  "backend: mat1 must be a sparse COO tensor")
    product = _coo.sparse_mm(mat1, mat2)
    rows = _rows(mat1)
    return _coo.sparse_coo_tensor(_creation.tensor(rows.astype(np.int64)[None]),
                                  product[_creation.tensor(rows)], tuple(product.shape))


def sspaddmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1,
             alpha: Any = 1) -> SparseTensor:
    """``beta * input + alpha * (mat1 @ mat2)`` with sparse ``input`` and ``mat1``, as a
    sparse tensor."""
    inp = _sparse_only(input, "sspaddmm")
    prod = smm(_sparse_only(mat1, "sspaddmm"), mat2)
    return (inp * beta + prod * alpha).coalesce()


def saddmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1,
           alpha: Any = 1) -> SparseTensor:
    """``sspaddmm``."""
    return sspaddmm(input, mat1, mat2, beta=beta, alpha=alpha)


def _softmax(input: Any, dim: int, dtype: Optional[_dtype.dtype], log: bool) -> SparseTensor:
    name = "log_softmax" if log else "softmax"
    if not isinstance(input, SparseTensor):
        raise RuntimeError(f"sparse.{name}: expected a sparse COO tensor, got layout "
                           f"{getattr(input, 'layout', type(input).__name__)}")
    x = input.coalesce()
    if dtype is not None:
        x = x.to(dtype)
    ndim = len(x.shape)
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                         f"{ndim - 1}], but got {dim})")
    d = dim % ndim
    idx = x._indices()._data
    vals = x.values()
    nsd = idx.shape[0]
    if d >= nsd:               # a dense dim: a dense softmax of each entry's values
        axis = d - nsd + 1
        out = ops.log_softmax(vals, axis) if log else ops.softmax(vals, axis)
    else:                       # a sparse dim: over the entries sharing the other indices
        others = np.delete(idx, d, axis=0)
        _, group = np.unique(others.T, axis=0, return_inverse=True)
        group = group.reshape(-1)
        ngroups = int(group.max()) + 1 if group.size else 0
        g = _creation.tensor(group.astype(np.int64))
        v = vals._data
        peak = np.full((ngroups,) + v.shape[1:], -np.inf, dtype=v.dtype)
        np.maximum.at(peak, group, v)
        shifted = vals - _creation.tensor(peak)[g]
        e = ops.exp(shifted)
        total = _creation.zeros((ngroups,) + v.shape[1:], dtype=x.dtype).index_add(0, g, e)
        out = shifted - ops.log(total[g]) if log else e / total[g]
    return _coo.sparse_coo_tensor(x._indices(), out, tuple(x.shape)).coalesce()


def softmax(input: Any, dim: int, *, dtype: Optional[_dtype.dtype] = None) -> SparseTensor:
    """The softmax over ``dim`` of a sparse COO tensor's specified entries (unspecified ones
    count as -inf, so they stay unspecified).

    Example:
        >>> import ndgrad
        >>> s = ndgrad.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse()
        >>> ndgrad.sparse.softmax(s, 1).to_dense().tolist()
        [[0.0, 1.0], [1.0, 0.0]]
    """
    return _softmax(input, dim, dtype, False)


def log_softmax(input: Any, dim: int, *, dtype: Optional[_dtype.dtype] = None
                ) -> SparseTensor:
    """The log of ``softmax`` over ``dim`` on the specified entries."""
    return _softmax(input, dim, dtype, True)
