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

from . import _dtype, _layout
from ._compat_sparse import log_softmax, softmax  # noqa: F401  (compat, session 22)
from ._sparse import SparseTensor
from ._sparse_compressed import CompressedTensor, layout_name
from .ops import sparse_compressed_products as _cs_ops
from .ops import sparse_coo as _ops
from .ops.sparse_coo import sparse_coo_tensor
from .autograd.function import Function
from .tensor import Tensor, _wrap

__all__ = ["sum", "mm", "addmm", "sparse_coo_tensor", "check_sparse_tensor_invariants",
           "softmax", "log_softmax", "spdiags"]


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


def spdiags(diagonals: Tensor, offsets: Tensor, shape: Any, layout: Any = None) -> Any:
    """A sparse 2-d tensor with row ``k`` of ``diagonals`` on diagonal ``offsets[k]``: entry
    ``(i, j)`` with ``j - i == offsets[k]`` is ``diagonals[k, j]`` (torch's order of entries,
    diagonal by diagonal, not coalesced; like torch's, without a derivative); ``layout``
    ``torch.sparse_csr``/``sparse_csc`` converts it.

    >>> import ndgrad
    >>> d = ndgrad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    >>> ndgrad.sparse.spdiags(d, ndgrad.tensor([0, 1]), (3, 3)).to_dense()
    tensor([[1., 5., 0.],
            [0., 2., 6.],
            [0., 0., 3.]])
    """
    import numpy as np  # local import: only this constructor needs NumPy here
    if layout is not None and layout is not _layout.sparse_coo:
        if layout is _layout.sparse_csr:
            return spdiags(diagonals, offsets, shape).to_sparse_csr()
        if layout is _layout.sparse_csc:
            return spdiags(diagonals, offsets, shape).to_sparse_csc()
        raise RuntimeError(f"Only output layouts (Sparse, SparseCsc, SparseCsr) are supported, "
                           f"got {_layout_name(layout)}")
    if len(tuple(shape)) != 2:
        raise RuntimeError("Output shape must be 2d")
    if offsets.dim() > 1:
        raise RuntimeError("Offsets must be scalar or vector")
    if diagonals.dim() > 2:
        raise RuntimeError("Diagonals must be vector or matrix")
    if offsets.dtype is not _dtype.int64:
        raise RuntimeError(f"Offset Tensor must have dtype Long but got "
                           f"{offsets.dtype._torch_name}")
    offs = np.atleast_1d(offsets._data).tolist()
    diag = diagonals if diagonals.dim() == 2 else diagonals.unsqueeze(0)
    if diag.shape[0] != len(offs):
        raise RuntimeError(f"Number of diagonals ({diag.shape[0]}) does not match the number "
                           f"of offsets ({len(offs)})")
    if len(set(offs)) != len(offs):
        raise RuntimeError("Offset tensor contains duplicate values")
    rows, cols = (int(v) for v in shape)
    width = diag.shape[1]
    r_all, c_all, k_all = [], [], []
    for k, o in enumerate(offs):
        r = np.arange(max(0, -o), max(max(0, -o), min(rows, cols - o, width - o)))
        r_all.append(r)
        c_all.append(r + o)
        k_all.append(np.full(r.shape, k))
    r_idx, c_idx, k_idx = (np.concatenate(v).astype(np.int64) for v in (r_all, c_all, k_all))
    values = _SpdiagsValues.apply(diag, _wrap(k_idx), _wrap(c_idx))
    return sparse_coo_tensor(_wrap(np.stack([r_idx, c_idx])), values, (rows, cols))


class _SpdiagsValues(Function):
    """The entries spdiags places; like torch's, it has no derivative (its backward raises)."""

    @staticmethod
    def forward(ctx, diag, k_idx, c_idx):
        return _wrap(diag._data[k_idx._data, c_idx._data])

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("derivative for aten::_spdiags is not implemented")


def _layout_name(layout: Any) -> str:
    return {"strided": "Strided", "sparse_bsr": "SparseBsr", "sparse_bsc": "SparseBsc"}.get(
        getattr(layout, "_name", str(layout)), str(layout))


class check_sparse_tensor_invariants:
    """Accepted for compatibility: ndgrad always checks the invariants when it builds a sparse
    tensor from user data."""

    def __init__(self, enable: bool = True) -> None:
        self.enable = enable

    def __enter__(self) -> "check_sparse_tensor_invariants":
        return self

    def __exit__(self, *exc: Any) -> None:
        return None
