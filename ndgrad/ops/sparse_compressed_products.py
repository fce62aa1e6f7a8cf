"""Products of sparse CSR/CSC matrices with dense ones (SciPy's sparse kernels): ``@``,
``mm``, ``matmul``, ``mv``, ``addmm`` (dense gradients, as torch's dense kernels give) and
``torch.sparse.mm``/``sparse.addmm`` (``SparseAddmmBackward0``: the matrix's gradient masked to
its pattern), registered as ``CompressedTensor`` handlers (Note [Compressed sparse autograd] in
``ndgrad/ops/sparse_compressed.py``).

Example:
    >>> import ndgrad
    >>> s = ndgrad.tensor([[0.0, 2.0], [1.0, 0.0]]).to_sparse_csr()
    >>> (s @ ndgrad.ones(2, 1)).tolist()
    [[2.0], [1.0]]
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from .. import _sparse_compressed as _cs
from .._sparse import SparseTensor
from .._sparse_compressed import CompressedTensor, make_compressed
from ..tensor import Tensor, _wrap
from .sparse_compressed import _CSR, _coords, _from_values, _is_cs, _record, transpose

__all__ = ["mm", "mv", "matmul", "addmm", "sparse_addmm"]


def _scipy_matrix(s: CompressedTensor) -> Any:
    import scipy.sparse as sp   # local import: SciPy loads lazily (a runtime dependency)
    cls = sp.csr_matrix if s._cs_layout is _CSR else sp.csc_matrix
    return cls((s._cs_values, s._cs_plain, s._cs_compressed), shape=s._cs_shape)


def _product(s: CompressedTensor, b: np.ndarray) -> np.ndarray:
    if s._nnz() == 0:
        return np.zeros((s._cs_shape[0],) + b.shape[1:], np.result_type(s._cs_values, b))
    return np.asarray(_scipy_matrix(s) @ b)


def _sparse_product(a: CompressedTensor, b: CompressedTensor) -> CompressedTensor:
    """``a @ b`` of two 2-d compressed matrices: a CSR matrix (not recorded)."""
    if a._cs_shape[1] != b._cs_shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a._cs_shape[0]}x"
                           f"{a._cs_shape[1]} and {b._cs_shape[0]}x{b._cs_shape[1]})")
    if a._requires_grad or b._requires_grad:
        raise NotImplementedError("sparse compressed @ sparse compressed: autograd is not "
                                  "supported")
    p = (_scipy_matrix(a) @ _scipy_matrix(b)).tocsr()
    p.sort_indices()
    idx = a._cs_plain.dtype
    return make_compressed(p.indptr.astype(idx), p.indices.astype(idx),
                           p.data.astype(a._cs_values.dtype), p.shape, _CSR)


def _check_matrix(s: CompressedTensor, other: Any, what: str) -> None:
    if s._batch_dim() or s.dense_dim():
        raise RuntimeError(f"{what}: expected a 2-d sparse compressed matrix, got size "
                           f"{list(s._cs_shape)}")
    if not isinstance(other, Tensor) or _is_cs(other) or other.__class__ is SparseTensor:
        layout = getattr(other, "layout", None)
        raise RuntimeError(f"addmm: computation on CPU is not implemented for "
                           f"{_cs.layout_name(s._cs_layout)} + {_cs.layout_name(s._cs_layout)} "
                           f"@ {_cs.layout_name(layout)}")
    if other._data.dtype != s._cs_values.dtype:
        raise RuntimeError(f"expected scalar type {s.dtype._torch_name} but found "
                           f"{other.dtype._torch_name}")


def _mm_vjp(node: Any, g: Tensor) -> tuple:
    """The gradients of ``[mat], s, b`` (``mat`` when the node has its edge first)."""
    mat1, mat2, beta, alpha, has_mat = node._args
    edges = [e[0] is not None for e in node.next_functions]
    out: list = []
    if has_mat:
        out.append((g if beta == 1 else g * beta) if edges.pop(0) else None)
    ga = g if alpha == 1 else g * alpha
    g1 = g2 = None
    if edges[0]:
        g1 = ga.matmul(mat2.t()) if mat2.dim() == 2 else ga.unsqueeze(1) * mat2.unsqueeze(0)
    if edges[1]:
        g2 = mm(transpose(mat1, 0, 1), ga) if ga.dim() == 2 else mv(transpose(mat1, 0, 1), ga)
    return tuple(out + [g1, g2])


def _product_node(name: str, mat: Optional[Tensor], s: CompressedTensor, b: Tensor,
                  beta: Any, alpha: Any) -> Tensor:
    prod = _product(s, b._data)
    if mat is not None:
        base = mat._data
        out = base * beta + prod * alpha if (beta != 1 or alpha != 1) else base + prod
        prod = np.array(np.broadcast_to(out, prod.shape), dtype=prod.dtype)
    result = _wrap(np.ascontiguousarray(prod))
    inputs = (s, b) if mat is None else (mat, s, b)
    return _record(name, _mm_vjp, inputs, result, (s, b, beta, alpha, mat is not None))


def mm(s: CompressedTensor, b: Tensor) -> Tensor:
    """``s @ b`` for a 2-d compressed ``s`` and a dense matrix ``b`` (``MmBackward0``: both
    gradients dense)."""
    _check_matrix(s, b, "mm")
    if b.dim() != 2:
        raise RuntimeError(f"mat2 must be a matrix, got {b.dim()}-D tensor")
    if s._cs_shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({s._cs_shape[0]}x"
                           f"{s._cs_shape[1]} and {b.shape[0]}x{b.shape[1]})")
    return _product_node("MmBackward0", None, s, b, 0, 1)


def mv(s: CompressedTensor, v: Tensor) -> Tensor:
    """``s @ v`` for a vector ``v`` (``MvBackward0``)."""
    _check_matrix(s, v, "mv")
    if v.dim() != 1 or s._cs_shape[1] != v.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({s._cs_shape[0]}), mat ({s._cs_shape[0]}"
                           f"x{s._cs_shape[1]}), vec ({v.shape[0] if v.dim() else 1})")
    return _product_node("MvBackward0", None, s, v, 0, 1)


def matmul(s: Any, b: Any) -> Tensor:
    if not _is_cs(s):
        return s.matmul(b)      # a dense kernel reading the matrix
    if isinstance(b, Tensor) and not _is_cs(b) and b.dim() == 1:
        return mv(s, b)
    if s._batch_dim():
        raise RuntimeError(f"expand is unsupported for {_cs.layout_name(s._cs_layout)} tensors")
    if _is_cs(b) and not (s._batch_dim() or s.dense_dim() or b._batch_dim() or b.dense_dim()):
        return _sparse_product(s, b)
    return mm(s, b)


def addmm(mat: Tensor, s: Any, b: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * mat + alpha * (s @ b)`` (``AddmmBackward0``, dense gradients)."""
    if not _is_cs(s):
        return mat.addmm(s, b, beta=beta, alpha=alpha)
    _check_matrix(s, b, "addmm")
    if b.dim() != 2 or s._cs_shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({s._cs_shape[0]}x"
                           f"{s._cs_shape[1]} and {b.shape[0]}x{b.shape[1]})")
    return _product_node("AddmmBackward0", mat, s, b, beta, alpha)


def _sparse_addmm_vjp(node: Any, g: Tensor) -> tuple:
    mat1, mat2, beta, alpha = node._args
    gm = g1 = g2 = None
    if node.next_functions[0][0] is not None:
        gm = g if beta == 1 else g * beta
    ga = g if alpha == 1 else g * alpha
    if node.next_functions[1][0] is not None:
        if mat1._cs_layout is not _CSR:
            raise RuntimeError("sparse_addmm_sparse_backward: unsupported combination of "
                               "layouts, grad: Strided, mat1: SparseCsc, mat2: Strided")
        rows, cols = _coords(mat1)
        g1 = _from_values(mat1, (ga[rows] * mat2[cols]).sum(1))
    if node.next_functions[2][0] is not None:
        g2 = mm(transpose(mat1, 0, 1), ga)
    return gm, g1, g2


def sparse_addmm(mat: Optional[Tensor], s: CompressedTensor, b: Tensor, beta: Any = 1.0,
                 alpha: Any = 1.0) -> Tensor:
    """``torch.sparse.mm``/``sparse.addmm`` of a compressed ``s`` (``SparseAddmmBackward0``:
    ``s``'s gradient masked to its pattern)."""
    _check_matrix(s, b, "sparse.mm")
    if b.dim() != 2 or s._cs_shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({s._cs_shape[0]}x"
                           f"{s._cs_shape[1]} and {b.shape[0]}x{b.shape[1]})")
    prod = _product(s, b._data)
    if mat is not None:
        out = mat._data * beta + prod * alpha if (beta != 1 or alpha != 1) else mat._data + prod
        prod = np.array(np.broadcast_to(out, prod.shape), dtype=prod.dtype)
    result = _wrap(np.ascontiguousarray(prod))
    return _record("SparseAddmmBackward0", _sparse_addmm_vjp, (mat, s, b), result,
                   (s, b, beta, alpha))


def _first_compressed(fn: Callable) -> Callable:
    """``fn`` when the first operand is compressed, else the dense kernel (NotImplemented)."""
    def handler(a: Any, *args: Any, **kwargs: Any) -> Any:
        return fn(a, *args, **kwargs) if _is_cs(a) else NotImplemented
    return handler


def _addmm(mat: Any, mat1: Any, mat2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
    return addmm(mat, mat1, mat2, beta=beta, alpha=alpha) if _is_cs(mat1) else NotImplemented


def _install() -> None:
    """Register the products as ``CompressedTensor`` handlers."""
    _cs._HANDLERS.update({
        "mm": _first_compressed(mm), "matmul": _first_compressed(matmul),
        "__matmul__": _first_compressed(matmul), "mv": _first_compressed(mv),
        "addmm": _addmm})
