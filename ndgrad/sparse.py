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

from . import _dtype
from ._compat_sparse import log_softmax, softmax  # noqa: F401  (compat, session 22)
from ._sparse import SparseTensor
from ._sparse_compressed import CompressedTensor, layout_name
from .ops import sparse_compressed_products as _cs_ops
from .ops import sparse_coo as _ops
from .ops.sparse_coo import sparse_coo_tensor
from .tensor import Tensor

__all__ = ["sum", "mm", "addmm", "sparse_coo_tensor", "check_sparse_tensor_invariants",
           "softmax", "log_softmax"]


def _check(t: Any, fn: str) -> SparseTensor:
    if not isinstance(t, SparseTensor):
        raise RuntimeError(f"{fn}: expected a sparse COO tensor, got layout "
                           f"{getattr(t, 'layout', type(t).__name__)}")
    return t


def sum(input: SparseTensor, dim: Any = None, dtype: Optional[_dtype.dtype] = None) -> Any:
    """The sum of all entries (a dense 0-d tensor), or over ``dim`` (sparse while sparse
    dimensions remain, else dense); the gradient is masked to ``input``'s pattern."""
    if isinstance(input, CompressedTensor):     # torch's errors: COO only
        if dim is None:
            raise RuntimeError("coalesce expected sparse coordinate tensor layout but got "
                               f"{layout_name(input.layout)}")
        raise NotImplementedError("Could not run 'aten::_indices' with arguments from the "
                                  "'SparseCsrCPU' backend.")
    return _ops.sparse_sum(_check(input, "sparse.sum"), dim, dtype)


def mm(mat1: Any, mat2: Tensor) -> Tensor:
    """``mat1 @ mat2`` for a sparse 2-d ``mat1`` and a dense ``mat2``: ``mat1``'s gradient is
    sparse, masked to its pattern, ``mat2``'s dense (Note [Sparse autograd]); a CSR/CSC
    ``mat1`` likewise (Note [Compressed sparse autograd])."""
    if isinstance(mat1, CompressedTensor):
        return _cs_ops.sparse_addmm(None, mat1, mat2)
    return _ops.sparse_mm(_check(mat1, "sparse.mm"), mat2)


def addmm(mat: Tensor, mat1: Any, mat2: Tensor, *, beta: float = 1.0,
          alpha: float = 1.0) -> Tensor:
    """``beta * mat + alpha * (mat1 @ mat2)`` with a sparse (COO, CSR or CSC) ``mat1``."""
    if isinstance(mat1, CompressedTensor):
        return _cs_ops.sparse_addmm(mat, mat1, mat2, beta, alpha)
    return _ops.sparse_addmm(mat, _check(mat1, "sparse.addmm"), mat2, beta, alpha)


class check_sparse_tensor_invariants:
    """Accepted for compatibility: ndgrad always checks the invariants when it builds a sparse
    tensor from user data."""

    def __init__(self, enable: bool = True) -> None:
        self.enable = enable

    def __enter__(self) -> "check_sparse_tensor_invariants":
        return self

    def __exit__(self, *exc: Any) -> None:
        return None
