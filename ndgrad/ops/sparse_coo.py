"""Autograd through sparse COO tensors: the recorded forms of the sparse constructors,
conversions, parts, arithmetic and ``ndgrad.sparse`` products and sums.

Note [Sparse autograd]
A ``SparseTensor`` (Note [Sparse COO tensors] in ``ndgrad/_sparse.py``) takes part in a graph
like a dense tensor: a leaf made with ``requires_grad=True`` accumulates its gradient through
AccumulateGrad (sparse or dense, seed 000), and an op on a sparse input that requires grad
records one node named as torch's (``ToDenseBackward0``, ``CoalesceBackward0``,
``ValuesBackward0``, ``SparseAddmmBackward0`` ...) with torch's edges. The gradients have
torch's layouts: the backward of ``to_dense()``, ``values()``, ``sparse.sum`` and
``sparse.mm``/``addmm`` is *masked*, a sparse tensor on the input's coalesced pattern (so it
never fills entries the input does not store); ``coalesce()`` passes the gradient through;
a dense op that reads a sparse input (``torch.mm(s, d)``, ``d + s``) gives it a dense gradient,
as torch's do. The backward formulas are written with recorded ops, sparse ones included, so
``create_graph=True`` works through them. The nodes hold the tensors they need as arguments,
without version checks (sparse tensors have no in-place ops that autograd records).

Example:
    >>> import ndgrad
    >>> s = ndgrad.sparse_coo_tensor([[0, 1], [2, 0]], [3.0, 4.0], (2, 3), requires_grad=True)
    >>> y = ndgrad.sparse.mm(s, ndgrad.ones(3, 2))
    >>> y.grad_fn.name()
    'SparseAddmmBackward0'
    >>> y.sum().backward()
    >>> s.grad.to_dense()
    tensor([[0., 0., 2.],
            [2., 0., 0.]])
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, TypeVar

import numpy as np

from .. import _dtype
from .. import _sparse
from .._sparse import SparseTensor, _make
from ..autograd.grad_mode import _state
from ..autograd.node import Node, next_sequence_nr
from ..tensor import Tensor, _wrap
from . import pointwise as _pointwise
from ._dispatch import gradient_edge

__all__ = ["sparse_coo_tensor", "to_sparse", "to_dense", "coalesce", "values", "sparse_sum",
           "sparse_addmm", "sparse_mm", "add", "mul", "div", "neg", "sparse_mask"]

_NO_EDGE = (None, 0)


class _SparseNode(Node):
    """The backward of a sparse op: ``_vjp(node, grad)`` returns one gradient per edge."""

    _vjp: Callable = None          # set by each node class
    _args: tuple = ()

    def apply(self, grads: list) -> tuple:
        g = grads[0]
        if g is None:
            return (None,) * len(self.next_functions)
        out = type(self)._vjp(self, g)
        return out if type(out) is tuple else (out,)

    def release_variables(self) -> None:
        return None


_NODE_CLASSES: Dict[tuple, type] = {}


def _node_class(name: str, vjp: Callable) -> type:
    """One class per (name, rule): two rules may carry torch's same node name."""
    cls = _NODE_CLASSES.get((name, vjp))
    if cls is None:
        cls = _NODE_CLASSES[name, vjp] = type(name, (_SparseNode,), {
            "_vjp": staticmethod(vjp), "__module__": "ndgrad.autograd"})
    return cls


def _meta(t: Any) -> Optional[tuple]:
    if t is None:
        return None
    if t.__class__ is SparseTensor:
        return (t._sp_shape, t._sp_values.dtype)
    return (t._data.shape, t._data.dtype)


_T = TypeVar("_T", bound=Tensor)

def _record(name: str, vjp: Callable, inputs: tuple, result: _T, args: tuple = ()
            ) -> _T:
    """Give ``result`` a ``name`` node over ``inputs`` (``None`` entries: edges without a
    gradient, torch's padding) when grad mode is on and an input requires grad."""
    if not _state.enabled or not any(t is not None and t._requires_grad for t in inputs):
        return result
    if result.__class__ is not SparseTensor and result._data.dtype.kind not in "fc":
        return result
    node = _node_class(name, vjp)()
    node._sequence_nr = next_sequence_nr()
    node.next_functions = tuple(_NO_EDGE if t is None else gradient_edge(t) for t in inputs)
    node._input_meta = tuple(_meta(t) for t in inputs)
    node._args = args
    result._grad_fn = node
    result._requires_grad = True
    return result


def _dense(g: Tensor) -> Tensor:
    return to_dense(g) if g.__class__ is SparseTensor else g


def _index_tensors(idx: np.ndarray) -> tuple:
    return tuple(_wrap(row) for row in idx)


# ---------------------------------------------------------------------------- construction
def _coo_vjp(node: Any, g: Tensor) -> Tensor:
    (indices,) = node._args
    return _dense(g)[_index_tensors(indices)]


def sparse_coo_tensor(indices: Any, values: Any, size: Any = None, *, dtype: Any = None,
                      device: Any = None, requires_grad: bool = False,
                      check_invariants: Optional[bool] = None,
                      is_coalesced: Optional[bool] = None) -> SparseTensor:
    """A sparse COO tensor from ``indices`` (``sparse_dim x nnz``) and ``values`` (``nnz x
    dense dims``); ``size`` defaults to the smallest that holds the indices. With
    ``requires_grad=True`` it is a leaf that gets a gradient; values that require grad make
    it a function of them (``SparseCooTensorWithDimsAndTensorsBackward0``).

    Example:
        >>> import ndgrad
        >>> v = ndgrad.tensor([1.0, 2.0], requires_grad=True)
        >>> s = ndgrad.sparse_coo_tensor([[0, 2]], v, (3,))
        >>> s.grad_fn.name()
        'SparseCooTensorWithDimsAndTensorsBackward0'
    """
    out = _sparse.sparse_coo_tensor(indices, values, size, dtype=dtype, device=device,
                                    check_invariants=check_invariants,
                                    is_coalesced=is_coalesced)
    if isinstance(values, Tensor) and values._requires_grad and _state.enabled:
        src = values if dtype is None else values.to(_dtype.to_dtype(dtype))
        return _record("SparseCooTensorWithDimsAndTensorsBackward0", _coo_vjp, (src,), out,
                       (out._sp_indices,))
    if requires_grad:
        if out._sp_values.dtype.kind not in "fc":
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        out._requires_grad = True
    return out


def _from_parts(indices: np.ndarray, values: Tensor, shape: tuple, coalesced: bool
                ) -> SparseTensor:
    """A sparse tensor whose values are the (possibly recorded) tensor ``values``."""
    out = _make(indices, values._data, shape, coalesced=coalesced)
    return _record("SparseCooTensorWithDimsAndTensorsBackward0", _coo_vjp, (values,), out,
                   (indices,))


# ---------------------------------------------------------------------------- conversions
def _to_dense_vjp(node: Any, g: Tensor) -> Tensor:
    src, masked = node._args
    gd = _dense(g)
    if masked:
        return sparse_mask(gd, src)
    idx = np.stack(np.nonzero(gd._data)).astype(np.int64).reshape(gd.dim(), -1)
    return _from_parts(idx, gd[_index_tensors(idx)], tuple(gd.shape), True)


def to_dense(s: SparseTensor, dtype: Any = None, *, masked_grad: bool = True) -> Tensor:
    """The dense form; its gradient is masked to ``s``'s pattern (``masked_grad=True``)."""
    out = _wrap(s._dense())
    out = _record("ToDenseBackward0", _to_dense_vjp, (s,), out, (s, bool(masked_grad)))
    return out if dtype is None else out.to(dtype)


def _to_sparse_vjp(node: Any, g: Tensor) -> Tensor:
    return _dense(g)


def to_sparse(t: Tensor, sparse_dim: Optional[int] = None) -> SparseTensor:
    """The nonzero entries of a dense tensor (coalesced); the gradient is dense."""
    out = _sparse.to_sparse(t, sparse_dim)
    name = "ToSparseBackward1" if sparse_dim is None else "ToSparseBackward0"
    return _record(name, _to_sparse_vjp, (t,), out)


def _pattern(s: SparseTensor) -> np.ndarray:
    """The coalesced indices of ``s``, in a new array (a masked gradient owns its indices, as
    torch's do: AccumulateGrad may then steal it, Note [Sparse autograd])."""
    if s._sp_coalesced:
        return s._sp_indices.copy()
    return SparseTensor._coalesce_unrecorded(s)._sp_indices


def sparse_mask(t: Tensor, mask: SparseTensor) -> SparseTensor:
    """``t`` (dense) at ``mask``'s coalesced indices, a coalesced sparse tensor (torch's
    ``sparse_mask``)."""
    idx = _pattern(mask)
    return _from_parts(idx, _dense(t)[_index_tensors(idx)], mask._sp_shape, True)


# ---------------------------------------------------------------------------- parts
def _identity_vjp(node: Any, g: Tensor) -> Tensor:
    return g


def coalesce(s: SparseTensor) -> SparseTensor:
    """Sorted unique indices, duplicates summed; the gradient passes through."""
    if s._sp_coalesced:
        return s
    out = SparseTensor._coalesce_unrecorded(s)
    return _record("CoalesceBackward0", _identity_vjp, (s,), out)


def _values_vjp(node: Any, g: Tensor) -> SparseTensor:
    (src,) = node._args
    return _from_parts(src._sp_indices, g, src._sp_shape, True)


def values(s: SparseTensor) -> Tensor:
    """The values of a coalesced tensor (``ValuesBackward0``: a sparse gradient on its
    indices)."""
    if not s._sp_coalesced:
        raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                           ".coalesce() first")
    return _record("ValuesBackward0", _values_vjp, (s,), _wrap(s._sp_values), (s,))


# ---------------------------------------------------------------------------- arithmetic
def _add_vjp(node: Any, g: Tensor) -> tuple:
    (alpha,) = node._args
    return g, (g if alpha == 1 else mul(g, alpha))


def _sub_vjp(node: Any, g: Tensor) -> tuple:
    (alpha,) = node._args
    return g, mul(g, -alpha)


def add(a: SparseTensor, b: SparseTensor, alpha: Any = 1, *, subtract: bool = False
        ) -> SparseTensor:
    """``a + alpha * b`` (``a - alpha * b`` with ``subtract``) of two sparse tensors."""
    f = -alpha if subtract else alpha
    out = _sparse._sparse_add(a, b, f)
    if subtract:
        return _record("SubBackward0", _sub_vjp, (a, b), out, (alpha,))
    return _record("AddBackward0", _add_vjp, (a, b), out, (alpha,))


def _mul_vjp(node: Any, g: Tensor) -> tuple:
    (f,) = node._args
    return mul(g, f), None


def _div_vjp(node: Any, g: Tensor) -> tuple:
    (f,) = node._args
    return div(g, f), None


def _neg_vjp(node: Any, g: Tensor) -> Tensor:
    return neg(g)


def _scalar(other: Any, what: str) -> Any:
    if isinstance(other, Tensor):
        if other.dim() != 0:
            if what == "/":
                raise RuntimeError("Sparse division requires a scalar or zero-dim dense tensor "
                                   f"divisor (got shape {list(other.shape)} for divisor)")
            raise NotImplementedError(f"sparse {what} sparse: only a scalar or a dense factor "
                                      "is supported")
        return other.item()
    return other


def _mul_dense_vjp(node: Any, g: Tensor) -> tuple:
    s, d = node._args
    shape = s._sp_shape
    gd = _dense(g)
    c = coalesce(s)         # the gradient of the tensor s stands for: on its coalesced pattern
    cix = _index_tensors(c._sp_indices)
    # flagged as torch flags its gradients when that pattern is the stored one
    flag = s._sp_coalesced or c._sp_indices.shape != s._sp_indices.shape
    grad_s = grad_d = None
    if s._requires_grad:
        grad_s = _from_parts(c._sp_indices.copy(), gd[cix] * d.expand(shape)[cix], shape, True)
    if d._requires_grad:
        # on s's coalesced pattern: torch's is on the stored one (the same tensor), from the
        # stored values, whose own gradient would then count a duplicated entry twice under
        # create_graph
        masked = _from_parts(c._sp_indices.copy(), gd[cix] * values(c), shape, flag)
        if tuple(d.shape) == tuple(shape):
            grad_d = masked                      # sparse, as torch's
        else:
            grad_d = to_dense(masked).sum_to_size(tuple(d.shape))
    return grad_s, grad_d


def _mul_dense(s: SparseTensor, d: Tensor) -> SparseTensor:
    """``s * d`` for a dense ``d`` that broadcasts to ``s``'s shape: ``s``'s entries times
    ``d`` at their indices (torch's sparse result; ``d``'s gradient is sparse on ``s``'s
    pattern when the shapes agree)."""
    shape = s._sp_shape
    for i in range(1, min(len(shape), d.dim()) + 1):
        a, b = shape[-i], d.shape[-i]
        if a != b and b != 1:
            raise RuntimeError(f"The size of tensor a ({b}) must match the size of tensor b "
                               f"({a}) at non-singleton dimension {d.dim() - i}")
    if d.dim() > len(shape):
        raise NotImplementedError("sparse * dense: a dense factor with more dimensions than "
                                  "the sparse tensor is not supported")
    rt = _dtype.result_type(s, d).np
    picked = np.broadcast_to(d._data, shape)[tuple(s._sp_indices)]
    vals = (s._sp_values.astype(rt, copy=False) * picked.astype(rt, copy=False)).astype(
        rt, copy=False)
    out = _make(s._sp_indices.copy(), vals, shape, coalesced=s._sp_coalesced)
    return _record("MulBackward0", _mul_dense_vjp, (s, d), out, (s, d))


def mul(s: Any, other: Any) -> Any:
    """``s * other`` for a scalar or a dense ``other`` (sparse stays sparse; the result owns a
    copy of the indices, as torch's does)."""
    if s.__class__ is not SparseTensor:
        return s * other
    if isinstance(other, Tensor) and other.__class__ is not SparseTensor and other.dim():
        return _mul_dense(s, other)
    f = _scalar(other, "*")
    out = _make(s._sp_indices.copy(), s._sp_values * f, s._sp_shape, coalesced=s._sp_coalesced)
    return _record("MulBackward0", _mul_vjp, (s, None), out, (f,))


def div(s: Any, other: Any, rounding_mode: Optional[str] = None) -> Any:
    """``s / other`` for a scalar ``other`` (``rounding_mode``: ``'floor'`` or ``'trunc'``,
    whose gradient is zero, as torch's ``DivBackward2``)."""
    if s.__class__ is not SparseTensor:
        return s / other
    f = _scalar(other, "/")
    if rounding_mode is not None:
        # rounded after summing duplicates, as torch's
        c = s if s._sp_coalesced else SparseTensor._coalesce_unrecorded(s)
        q = _pointwise.div(_wrap(c._sp_values), f, rounding_mode=rounding_mode)._data
        out = _make(c._sp_indices.copy(), q, s._sp_shape, coalesced=True)
        return _record("DivBackward2", _zero_vjp, (s, None), out, ())
    vals = s._sp_values / f
    if vals.dtype != s._sp_values.dtype and s._sp_values.dtype.kind in "fc":
        vals = vals.astype(s._sp_values.dtype)
    out = _make(s._sp_indices.copy(), vals, s._sp_shape, coalesced=s._sp_coalesced)
    return _record("DivBackward0", _div_vjp, (s, None), out, (f,))


def _zero_vjp(node: Any, g: Tensor) -> tuple:
    return mul(g, 0), None


def _mul_sparse_vjp(node: Any, g: Tensor) -> tuple:
    a, b = node._args
    ga = binary("mul", b, g) if a._requires_grad else None
    gb = binary("mul", a, g) if b._requires_grad else None
    return ga, gb


def _mul_sparse(a: SparseTensor, b: SparseTensor) -> SparseTensor:
    """``a * b`` of two sparse tensors, as torch's intersection kernel: two coalesced operands
    give the entries at the indices both have (coalesced); otherwise the result has every entry
    of one operand (its indices and order, uncoalesced) times the other's (coalesced) value at
    that index, 0 where it has none; the looked-up operand is the coalesced one, else the one
    with more entries."""
    k = a.sparse_dim()
    if a.dim() != b.dim() or k != b.sparse_dim() or a._sp_shape[:k] != b._sp_shape[:k]:
        raise RuntimeError("sparse_binary_op_intersection_cpu(): expects sparse inputs with "
                           "equal dimensionality, number of sparse dimensions, and shape of "
                           "sparse dimensions")
    dims = a._sp_shape[:k]
    rt = np.result_type(a._sp_values, b._sp_values)
    shape = tuple(np.broadcast_shapes(a._sp_shape, b._sp_shape))

    def flat(t: SparseTensor) -> np.ndarray:
        if not k:
            return np.zeros(t._nnz(), np.int64)
        return np.ravel_multi_index(tuple(t._sp_indices), dims).astype(np.int64)

    if a._sp_coalesced and b._sp_coalesced:
        _, ia, ib = np.intersect1d(flat(a), flat(b), assume_unique=True, return_indices=True)
        idx = a._sp_indices[:, ia].copy()
        va, vb = a._sp_values[ia], b._sp_values[ib]
        coalesced = True
    else:
        if a._sp_coalesced != b._sp_coalesced:
            src, oth = (a, b) if a._sp_coalesced else (b, a)
        else:
            src, oth = (a, b) if a._nnz() >= b._nnz() else (b, a)
        c = src if src._sp_coalesced else SparseTensor._coalesce_unrecorded(src)
        fs, fo = flat(c), flat(oth)
        pos = np.minimum(np.searchsorted(fs, fo), max(len(fs) - 1, 0))
        found = (fs[pos] == fo) if len(fs) else np.zeros(len(fo), bool)
        picked = c._sp_values[pos] if len(fs) else np.zeros_like(oth._sp_values)
        found = found.reshape((-1,) + (1,) * (picked.ndim - 1))
        va, vb = np.where(found, picked, 0), oth._sp_values
        idx = oth._sp_indices.copy()
        coalesced = False
    vals = va.astype(rt, copy=False) * vb.astype(rt, copy=False)
    out = _make(idx, vals.astype(rt, copy=False), shape, coalesced=coalesced)
    return _record("MulBackward0", _mul_sparse_vjp, (a, b), out, (a, b))


def _div_refused(divisor: Any) -> RuntimeError:
    return RuntimeError("Sparse division requires a scalar or zero-dim dense tensor divisor "
                        f"(got shape {list(divisor.shape)} for divisor)")


def _not_for_sparse(name: str) -> NotImplementedError:
    return NotImplementedError(
        f"Could not run 'aten::{name}' with arguments from the 'SparseCPU' backend. This "
        "could be because the operator doesn't exist for this backend, or was omitted during "
        "the selective/custom build process (if using custom build).")


_ADD_REFUSED = "add(sparse, dense) is not supported. Use add(dense, sparse) instead."


def binary(name: str, a: Any, b: Any, alpha: Any = 1, rounding_mode: Optional[str] = None
           ) -> Any:
    """``add``/``sub``/``mul``/``div``/``rsub`` (function and method forms) where an operand
    is sparse, as torch's (Note [Sparse arithmetic forms]); NotImplemented: the dense op
    applies (dense (+|-) sparse is dense)."""
    a_sp, b_sp = a.__class__ is SparseTensor, b.__class__ is SparseTensor
    if name in ("add", "sub"):
        if a_sp:
            if not b_sp:
                raise RuntimeError(_ADD_REFUSED)
            return add(a, b, alpha, subtract=name == "sub")
        return NotImplemented
    if name == "rsub":        # rsub(a, b) = b - alpha * a
        if isinstance(b, Tensor):
            raise _not_for_sparse("rsub.Tensor")
        raise RuntimeError("add: expected 'self' and 'other' to have same size, but self has "
                           f"size [] while other has size {list(a.shape)} (FYI: dense-sparse "
                           "addition does not currently support broadcasting)")
    if name == "mul":
        if a_sp and b_sp:
            return _mul_sparse(a, b)
        return mul(a, b) if a_sp else mul(b, a)
    # div
    if b_sp:
        raise _div_refused(b) if isinstance(a, Tensor) else _not_for_sparse("reciprocal")
    if isinstance(b, Tensor) and b.dim():
        raise _div_refused(b)
    return div(a, b, rounding_mode)


def neg(s: Any) -> Any:
    if s.__class__ is not SparseTensor:
        return -s
    out = _make(s._sp_indices.copy(), -s._sp_values, s._sp_shape, coalesced=s._sp_coalesced)
    return _record("NegBackward0", _neg_vjp, (s,), out)


# ---------------------------------------------------------------------------- reductions
def _sparse_sum_vjp(node: Any, g: Tensor) -> SparseTensor:
    src, dims = node._args
    idx = _pattern(src)
    k, nnz, full = src.sparse_dim(), idx.shape[1], src._sp_shape
    kept = [d for d in range(k) if d not in dims]
    gd = _dense(g)
    picked = gd[_index_tensors(idx[kept])] if kept else \
        gd.unsqueeze(0).expand((nnz,) + tuple(gd.shape))
    # picked: (nnz, dense dims that were kept); put the summed dense dims back, broadcast
    shape = [nnz] + [1 if d in dims else n for d, n in enumerate(full) if d >= k]
    vals = picked.reshape(tuple(shape)).expand((nnz,) + tuple(full[k:]))
    return _from_parts(idx, vals.contiguous(), full, True)


def sparse_sum(s: SparseTensor, dim: Any = None, dtype: Any = None) -> Any:
    """``torch.sparse.sum``: all entries (a dense 0-d tensor), or over ``dim`` (sparse while
    sparse dimensions remain, else dense); gradients masked to ``s``'s pattern."""
    if dim is None:
        v = values(coalesce(s))
        if dtype is not None:
            v = v.to(dtype)
        return v.sum()
    dims = sorted({d % s.dim() for d in ((dim,) if isinstance(dim, int) else dim)})
    c = SparseTensor._coalesce_unrecorded(s) if not s._sp_coalesced else s
    vals = c._sp_values if dtype is None else c._sp_values.astype(dtype.np)
    k = c.sparse_dim()
    dense_dims = [d - k + 1 for d in dims if d >= k]
    if dense_dims:
        vals = vals.sum(axis=tuple(dense_dims))
    sparse_keep = [d for d in range(k) if d not in dims]
    shape = tuple(n for d, n in enumerate(c._sp_shape) if d not in dims)
    if not sparse_keep:
        out: Any = _wrap(np.asarray(vals.sum(axis=0), dtype=vals.dtype))
    else:
        out = SparseTensor._coalesce_unrecorded(_make(c._sp_indices[sparse_keep], vals, shape))
    return _record("SparseSumBackward0", _sparse_sum_vjp, (s,), out, (s, tuple(dims)))


# ---------------------------------------------------------------------------- products
def _addmm_vjp(node: Any, g: Tensor) -> tuple:
    mat1, mat2, beta, alpha = node._args
    gm = None if node.next_functions[0][0] is None else (g if beta == 1 else g * beta)
    g1 = g2 = None
    if node.next_functions[1][0] is not None:
        idx = _pattern(mat1)
        rows, cols = _index_tensors(idx)
        vals = (g[rows] * mat2[cols]).sum(1)
        if alpha != 1:
            vals = vals * alpha
        g1 = _from_parts(idx, vals, mat1._sp_shape, True)
    if node.next_functions[2][0] is not None:
        g2 = to_dense(mat1).t().matmul(g)
        if alpha != 1:
            g2 = g2 * alpha
    return gm, g1, g2


def _check_mm(mat1: Any, mat2: Any, fn: str) -> SparseTensor:
    if mat1.__class__ is not SparseTensor:
        raise RuntimeError(f"{fn}: expected a sparse COO tensor, got layout "
                           f"{getattr(mat1, 'layout', type(mat1).__name__)}")
    if mat1.dim() != 2 or mat1.dense_dim() != 0:
        raise RuntimeError(f"{fn}: expected a 2-d sparse matrix with no dense dimensions")
    if not isinstance(mat2, Tensor) or mat2.__class__ is SparseTensor or mat2.dim() != 2:
        raise RuntimeError(f"{fn}: expected mat2 to be a dense 2-d tensor")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x"
                           f"{mat1.shape[1]} and {mat2.shape[0]}x{mat2.shape[1]})")
    return mat1


def sparse_addmm(mat: Optional[Tensor], mat1: Any, mat2: Tensor, beta: Any = 1.0,
                 alpha: Any = 1.0) -> Tensor:
    """``beta * mat + alpha * (mat1 @ mat2)`` for a sparse ``mat1`` (``SparseAddmmBackward0``:
    ``mat1``'s gradient masked to its pattern, ``mat2``'s dense)."""
    _check_mm(mat1, mat2, "sparse.addmm" if mat is not None else "sparse.mm")
    c = mat1 if mat1._sp_coalesced else SparseTensor._coalesce_unrecorded(mat1)
    b = mat2._data
    dtype = np.result_type(c._sp_values.dtype, b.dtype)
    prod = np.zeros((c._sp_shape[0], b.shape[1]), dtype)
    if c._nnz():
        np.add.at(prod, c._sp_indices[0], c._sp_values[:, None] * b[c._sp_indices[1]])
    if mat is not None:
        base = mat._data
        out = base * beta + prod * alpha if (beta != 1 or alpha != 1) else base + prod
    else:
        out = prod
    result = _wrap(np.array(np.broadcast_to(out, prod.shape), dtype=dtype))
    return _record("SparseAddmmBackward0", _addmm_vjp, (mat, mat1, mat2), result,
                   (mat1, mat2, beta, alpha))


def sparse_mm(mat1: Any, mat2: Tensor) -> Tensor:
    """``mat1 @ mat2`` for a sparse ``mat1`` (recorded as torch's ``SparseAddmmBackward0``
    with no gradient edge for the absent ``mat``)."""
    return sparse_addmm(None, mat1, mat2, 0.0, 1.0)


# ---------------------------------------------------------------------------- methods
def _install() -> None:
    """Bind the recorded forms as ``SparseTensor`` methods (and ``Tensor.to_sparse``)."""
    S = SparseTensor

    # sparse (+|-) dense or a number is refused, as torch's (``dense + sparse`` is a dense op
    # that reads the sparse operand, whose gradient is then dense)
    def _add(self: Any, other: Any, *, alpha: Any = 1) -> Any:
        if other.__class__ is SparseTensor:
            return add(self, other, alpha)
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                           "instead.")

    def _sub(self: Any, other: Any, *, alpha: Any = 1) -> Any:
        if other.__class__ is SparseTensor:
            return add(self, other, alpha, subtract=True)
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                           "instead.")

    def _radd(self: Any, other: Any) -> Any:
        # ``dense + sparse`` (Python asks the subclass first): a dense op on both operands;
        # ``number + sparse`` is torch's ``add(sparse, number)``, refused
        if isinstance(other, Tensor):
            return _pointwise.add(other, self)
        raise RuntimeError(_ADD_REFUSED)

    def _sub_(self: Any, other: Any, *, alpha: Any = 1) -> Any:
        return self.add_(other, alpha=-alpha)

    def _div_(self: Any, other: Any, *, rounding_mode: Optional[str] = None) -> Any:
        r = binary("div", self, other, 1, rounding_mode)
        self._sp_indices, self._sp_values = r._sp_indices, r._sp_values
        self._bump_version()
        return self

    S.__add__ = lambda self, other: _add(self, other)
    S.__radd__ = _radd
    S.add = _add
    S.__sub__ = lambda self, other: _sub(self, other)
    S.sub = _sub
    S.__mul__ = S.__rmul__ = S.mul = lambda self, other: binary("mul", self, other)
    _pointwise._SPARSE, _pointwise._sparse_binary = SparseTensor, binary
    S.__truediv__ = lambda self, other: binary("div", self, other)
    S.div = lambda self, other, *, rounding_mode=None: binary("div", self, other, 1,
                                                              rounding_mode)
    S.__rtruediv__ = lambda self, other: binary("div", other, self)
    S.sub_, S.div_ = _sub_, _div_
    # ``dense - sparse`` is dense; ``number - sparse`` is torch's refused rsub
    S.__rsub__ = lambda self, other: (_pointwise.sub(other, self) if isinstance(other, Tensor)
                                      else binary("rsub", self, other))
    S.__neg__ = S.neg = neg
    S.to_dense = to_dense
    S.coalesce = coalesce
    S.values = values
