"""``ndgrad.sparse``: operations on sparse COO tensors (Note [Sparse COO tensors] in
``ndgrad/_sparse.py``), as ``torch.sparse``.

Example:
    >>> import ndgrad
    >>> s = ndgrad.eye(3).to_sparse()
    >>> ndgrad.sparse.mm(s, ndgrad.ones(3, 2))
    tensor([[1., 1.],
            [1., 1.],
            [1., 1.]])
    >>> ndgrad.sparse.sum(s)
    tensor(3.)
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from . import _dtype
from ._sparse import SparseTensor, _make, sparse_coo_tensor
from .ops import matmul
from .tensor import Tensor, _wrap

__all__ = ["sum", "mm", "addmm", "sparse_coo_tensor", "check_sparse_tensor_invariants"]


def _check(t: Any, fn: str) -> SparseTensor:
    if not isinstance(t, SparseTensor):
        raise RuntimeError(f"{fn}: expected a sparse COO tensor, got layout "
                           f"{getattr(t, 'layout', type(t).__name__)}")
    return t


def sum(input: SparseTensor, dim: Any = None, dtype: Optional[_dtype.dtype] = None) -> Any:
    """The sum of all entries (a dense 0-d tensor), or over ``dim`` (sparse while sparse
    dimensions remain, else dense)."""
    s = _check(input, "sparse.sum").coalesce()
    vals = s._sp_values if dtype is None else s._sp_values.astype(dtype.np)
    if dim is None:
        return _wrap(np.asarray(vals.sum(), dtype=vals.dtype))
    dims = sorted({d % s.dim() for d in ((dim,) if isinstance(dim, int) else dim)})
    k = s.sparse_dim()
    dense_dims = [d - k + 1 for d in dims if d >= k]
    if dense_dims:
        vals = vals.sum(axis=tuple(dense_dims))
    sparse_keep = [d for d in range(k) if d not in dims]
    shape = tuple(n for d, n in enumerate(s._sp_shape) if d not in dims)
    if not sparse_keep:
        return _wrap(np.asarray(vals.sum(axis=0), dtype=vals.dtype))
    out = _make(s._sp_indices[sparse_keep], vals, shape)
    return out.coalesce()


def mm(mat1: Any, mat2: Any) -> Tensor:
    """``mat1 @ mat2`` for a sparse 2-d ``mat1`` and a dense ``mat2`` (differentiable with
    respect to ``mat2``)."""
    s = _check(mat1, "sparse.mm")
    if s.dim() != 2 or s.dense_dim() != 0:
        raise RuntimeError("sparse.mm: expected a 2-d sparse matrix with no dense dimensions")
    return matmul(s.to_dense(), mat2)


def addmm(mat: Tensor, mat1: Any, mat2: Tensor, *, beta: float = 1.0,
          alpha: float = 1.0) -> Tensor:
    """``beta * mat + alpha * (mat1 @ mat2)`` with a sparse ``mat1``."""
    return mat * beta + mm(mat1, mat2) * alpha


class check_sparse_tensor_invariants:
    """Accepted for compatibility: ndgrad always checks the invariants when it builds a sparse
    tensor from user data."""

    def __init__(self, enable: bool = True) -> None:
        self.enable = enable

    def __enter__(self) -> "check_sparse_tensor_invariants":
        return self

    def __exit__(self, *exc: Any) -> None:
        return None
