"""Operations on sparse CSR/CSC tensors and their autograd: construction, conversions, parts,
products, arithmetic and sums, registered as the handlers of ``CompressedTensor`` (Note [Sparse
compressed tensors] in ``ndgrad/_sparse_compressed.py``).

Note [Compressed sparse autograd]
Gradients have torch's layouts. The ops torch writes for compressed layouts give a compressed
input a gradient *masked* to its pattern, on the same indices: ``to_dense()``
(``ToDenseBackward0``), ``values()``, ``sparse.mm``/``sparse.addmm`` (``SparseAddmmBackward0``),
``csr * scalar``, ``csr + csr``. The dense kernels that read the matrix give it a dense
gradient: ``csr @ dense``, ``mm``, ``matmul``, ``addmm``, ``mv`` (computed with SciPy's sparse
product), ``sum()``, ``dense + csr``. Backward formulas use recorded ops, so ``create_graph``
works through them. A leaf's compressed gradient accumulates in AccumulateGrad like a COO one
(``_accumulate_compressed`` there). Where torch's backward fails for these layouts (a CSC leaf's
masked gradient, a CSR gradient followed by a dense one, ``sum(dim, keepdim=True)``, the
zero-preserving pointwise ops), ndgrad's runs: a CSC gradient is torch's CSR one as CSC, sums
are dense.

Example:
    >>> import ndgrad
    >>> s = ndgrad.sparse_csr_tensor([0, 1, 2], [1, 0], [3.0, 4.0], (2, 2), requires_grad=True)
    >>> ndgrad.sparse.mm(s, ndgrad.ones(2, 1)).sum().backward()
    >>> s.grad.layout, s.grad.values()
    (ndgrad.sparse_csr, tensor([1., 1.]))
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from .. import _dtype, _layout
from .. import _sparse_compressed as _cs
from .._sparse import SparseTensor, _make as _make_coo
from .._sparse_compressed import CompressedTensor, make_compressed
from ..autograd.grad_mode import _state
from ..autograd.node import next_sequence_nr
from ..tensor import Tensor, _wrap
from ._dispatch import gradient_edge
from .sparse_coo import _node_class

__all__ = ["sparse_compressed_tensor", "sparse_csr_tensor", "sparse_csc_tensor", "to_dense",
           "to_compressed", "to_coo", "values", "add", "mul", "neg", "transpose", "total_sum"]

_CSR, _CSC = _layout.sparse_csr, _layout.sparse_csc
_NO_EDGE = (None, 0)


def _meta(t: Any) -> Optional[tuple]:
    if t is None:
        return None
    if t.__class__ is CompressedTensor:
        return (t._cs_shape, t._cs_values.dtype)
    if t.__class__ is SparseTensor:
        return (t._sp_shape, t._sp_values.dtype)
    return (t._data.shape, t._data.dtype)


def _record(name: str, vjp: Callable, inputs: tuple, result: Any, args: tuple = ()) -> Any:
    """Give ``result`` a ``name`` node over ``inputs`` when grad mode is on and an input
    requires grad (``None`` inputs: edges without a gradient)."""
    if not _state.enabled or not any(t is not None and t._requires_grad for t in inputs):
        return result
    kind = (result._cs_values.dtype.kind if result.__class__ is CompressedTensor
            else result._data.dtype.kind)
    if kind not in "fc":
        return result
    node = _node_class(name, vjp)()
    node._sequence_nr = next_sequence_nr()
    node.next_functions = tuple(_NO_EDGE if t is None else gradient_edge(t) for t in inputs)
    node._input_meta = tuple(_meta(t) for t in inputs)
    node._args = args
    result._grad_fn = node
    result._requires_grad = True
    return result


def _is_cs(t: Any) -> bool:
    return t.__class__ is CompressedTensor


def _like(s: CompressedTensor, vals: np.ndarray, copy_indices: bool = True
          ) -> CompressedTensor:
    c, p = (s._cs_compressed.copy(), s._cs_plain.copy()) if copy_indices else \
        (s._cs_compressed, s._cs_plain)
    return make_compressed(c, p, vals, s._cs_shape, s._cs_layout)


def _coords(s: CompressedTensor) -> tuple:
    """Index tensors (batch..., row, col) of the stored entries, in storage order."""
    nb = s._batch_dim()
    comp = s._cs_compressed.reshape(-1, s._cs_compressed.shape[-1])
    plain = s._cs_plain.reshape(comp.shape[0], s._cs_plain.shape[-1])
    nnz = plain.shape[1]
    major = np.concatenate([np.repeat(np.arange(comp.shape[1] - 1), np.diff(c)) for c in comp]) \
        if comp.shape[0] else np.zeros(0, np.int64)
    minor = plain.reshape(-1)
    rows, cols = (major, minor) if s._cs_layout is _CSR else (minor, major)
    batch = np.unravel_index(np.repeat(np.arange(comp.shape[0]), nnz), s._cs_shape[:nb]) \
        if nb else ()
    return tuple(_wrap(np.asarray(a, np.int64)) for a in (*batch, rows, cols))


def _dense(g: Any) -> Tensor:
    if g.__class__ is CompressedTensor:
        return to_dense(g)
    if g.__class__ is SparseTensor:
        return g.to_dense()
    return g


def _gather(g: Any, s: CompressedTensor) -> Tensor:
    """``g`` (dense or compressed, ``s``'s shape) at ``s``'s stored entries, shaped as
    ``s``'s values (recorded)."""
    vals = _dense(g)[_coords(s)]
    return vals.reshape(s._cs_values.shape)


# ---------------------------------------------------------------------------- construction
def _from_values_vjp(node: Any, g: Tensor) -> Tensor:
    (pattern,) = node._args
    return _gather(g, pattern)


def _from_values(pattern: CompressedTensor, vals: Tensor) -> CompressedTensor:
    """A compressed tensor on ``pattern``'s indices whose values are the (possibly recorded)
    tensor ``vals`` (``SparseCompressedTensorBackward0``)."""
    out = _like(pattern, vals._data if vals.__class__ is Tensor else vals.detach().numpy())
    return _record("SparseCompressedTensorBackward0", _from_values_vjp, (vals,), out, (out,))


def sparse_compressed_tensor(compressed_indices: Any, plain_indices: Any, values: Any,
                             size: Any = None, *, dtype: Any = None, layout: Any = None,
                             device: Any = None, pin_memory: Any = False,
                             requires_grad: bool = False,
                             check_invariants: Optional[bool] = None) -> CompressedTensor:
    """A sparse CSR or CSC tensor (``layout``) from its compressed indices, plain indices and
    values; ``size`` defaults to the smallest that holds the indices. Values that require grad
    make it a function of them (``SparseCompressedTensorBackward0``).

    Example:
        >>> import ndgrad
        >>> ndgrad.sparse_compressed_tensor([0, 1, 1], [2], [5.0], layout=ndgrad.sparse_csc)
        tensor(ccol_indices=tensor([0, 1, 1]),
               row_indices=tensor([2]),
               values=tensor([5.]), size=(3, 2), nnz=1, layout=ndgrad.sparse_csc)
    """
    out = _cs.compressed_from_arrays(compressed_indices, plain_indices, values, size, layout,
                                     dtype)
    _cs.beta_warning()
    if isinstance(values, Tensor) and values._requires_grad and _state.enabled:
        src = values if dtype is None else values.to(_dtype.to_dtype(dtype))
        return _record("SparseCompressedTensorBackward0", _from_values_vjp, (src,), out, (out,))
    if requires_grad:
        if out._cs_values.dtype.kind not in "fc":
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        out._requires_grad = True
    return out


def sparse_csr_tensor(crow_indices: Any, col_indices: Any, values: Any, size: Any = None, *,
                      dtype: Any = None, device: Any = None, pin_memory: Any = False,
                      requires_grad: bool = False,
                      check_invariants: Optional[bool] = None) -> CompressedTensor:
    """A sparse CSR tensor: row ``i``'s entries are ``values[crow_indices[i]:crow_indices[i +
    1]]`` in the columns ``col_indices[...]`` of the same slice.

    Example:
        >>> import ndgrad
        >>> ndgrad.sparse_csr_tensor([0, 2, 3], [0, 2, 1], [1.0, 2.0, 3.0]).to_dense()
        tensor([[1., 0., 2.],
                [0., 3., 0.]])
    """
    return sparse_compressed_tensor(crow_indices, col_indices, values, size, dtype=dtype,
                                    layout=_CSR, requires_grad=requires_grad)


def sparse_csc_tensor(ccol_indices: Any, row_indices: Any, values: Any, size: Any = None, *,
                      dtype: Any = None, device: Any = None, pin_memory: Any = False,
                      requires_grad: bool = False,
                      check_invariants: Optional[bool] = None) -> CompressedTensor:
    """A sparse CSC tensor: column ``j``'s entries are ``values[ccol_indices[j]:ccol_indices[j
    + 1]]`` in the rows ``row_indices[...]`` of the same slice.

    Example:
        >>> import ndgrad
        >>> ndgrad.sparse_csc_tensor([0, 1, 2], [1, 0], [1.0, 2.0]).to_dense()
        tensor([[0., 2.],
                [1., 0.]])
    """
    return sparse_compressed_tensor(ccol_indices, row_indices, values, size, dtype=dtype,
                                    layout=_CSC, requires_grad=requires_grad)


# ---------------------------------------------------------------------------- conversions
def _to_dense_vjp(node: Any, g: Tensor) -> CompressedTensor:
    (src,) = node._args
    return _from_values(src, _gather(g, src))


def to_dense(s: CompressedTensor, dtype: Any = None, *, masked_grad: Any = None) -> Tensor:
    """The dense form; its gradient is masked to ``s``'s pattern (``ToDenseBackward0``)."""
    if dtype is not None:
        raise RuntimeError("dtype argument is not supported by sparse_csr_to_dense")
    return _record("ToDenseBackward0", _to_dense_vjp, (s,), _wrap(s._dense()), (s,))


def _layout_vjp(node: Any, g: Any) -> Any:
    """A layout conversion's backward: the gradient in the input's layout (torch's rule: a
    dense gradient converted keeps every nonzero, a sparse one its pattern)."""
    (layout,) = node._args
    if layout is _layout.strided:
        return _dense(g)
    if layout is _layout.sparse_coo:
        if g.__class__ is SparseTensor:
            return g
        return to_coo(g) if _is_cs(g) else g.to_sparse()
    if _is_cs(g) and g._cs_layout is layout:
        return g
    return to_compressed(g, layout)


def to_compressed(t: Any, layout: Any, dense_dim: Optional[int] = None) -> CompressedTensor:
    """``t`` (dense, COO or compressed) in the CSR or CSC ``layout``; the gradient of a
    dense input is dense."""
    name = "ToSparseCsrBackward0" if layout is _CSR else "ToSparseCscBackward0"
    fn = "dense_to_sparse_csr" if layout is _CSR else "dense_to_sparse_csc"
    if _is_cs(t):
        if dense_dim is not None:
            raise RuntimeError(f"{fn}: dense_dim argument is not supported for a sparse input")
        if t._cs_layout is layout:
            return t
        return _record(name, _layout_vjp, (t,), _relayout(t, layout), (t._cs_layout,))
    if t.__class__ is SparseTensor:
        if t.sparse_dim() != 2:
            raise RuntimeError(f"coo_to_sparse_{'csr' if layout is _CSR else 'csc'}: conversion "
                               f"from Sparse to {_cs.layout_name(layout)} for input tensors "
                               "with sparse_dim()!=2 is not supported")
        c = t.coalesce() if not t._sp_coalesced else t
        out = _coo_to_compressed(c, layout)
        _cs.beta_warning()
        return _record(name, _layout_vjp, (t,), out, (_layout.sparse_coo,))
    a = t._data
    if a.ndim < 2:
        raise RuntimeError(f"{fn}: expected a tensor with at least 2 dimensions, but got "
                           f"{a.ndim}")
    out = _cs.dense_to_compressed(a, layout, dense_dim, fn)
    _cs.beta_warning()
    return _record(name, _layout_vjp, (t,), out, (_layout.strided,))


def _coo_to_compressed(c: SparseTensor, layout: Any) -> CompressedTensor:
    idx, vals = c._sp_indices, c._sp_values
    rows, cols = c._sp_shape[0], c._sp_shape[1]
    if layout is _CSR:
        major, minor, n = idx[0], idx[1], rows
        order = np.arange(idx.shape[1])
    else:
        major, minor, n = idx[1], idx[0], cols
        order = np.lexsort((idx[0], idx[1]))
    comp = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(major, minlength=n), out=comp[1:])
    return make_compressed(comp, minor[order].astype(np.int64), vals[order].copy(),
                           c._sp_shape, layout)


def _relayout(s: CompressedTensor, layout: Any) -> CompressedTensor:
    """CSR <-> CSC of the same matrix (batched: each matrix)."""
    nb = s._batch_dim()
    rows, cols = s._cs_shape[nb], s._cs_shape[nb + 1]
    coords = _coords(s)
    r, c = coords[-2]._data, coords[-1]._data
    bflat = np.repeat(np.arange(int(np.prod(s._cs_shape[:nb], dtype=np.int64))), s._nnz())
    n = cols if layout is _CSC else rows
    major, minor = (c, r) if layout is _CSC else (r, c)
    order = np.lexsort((minor, major, bflat))
    nbatch = max(1, int(np.prod(s._cs_shape[:nb], dtype=np.int64)))
    counts = np.bincount(bflat * n + major, minlength=nbatch * n).reshape(nbatch, n)
    comp = np.zeros((nbatch, n + 1), s._cs_compressed.dtype)
    np.cumsum(counts, axis=1, out=comp[:, 1:])
    dense = s._cs_values.shape[nb + 1:]
    vals = s._cs_values.reshape((-1,) + dense)[order]
    batch = s._cs_shape[:nb]
    return make_compressed(comp.reshape(batch + (n + 1,)),
                           minor[order].astype(s._cs_plain.dtype).reshape(batch + (s._nnz(),)),
                           vals.reshape(batch + (s._nnz(),) + dense), s._cs_shape, layout)


def to_coo(s: CompressedTensor, sparse_dim: Optional[int] = None) -> SparseTensor:
    """The COO form (``to_sparse()``): every batch and sparse dim becomes an index."""
    nb = s._batch_dim()
    if sparse_dim is not None and int(sparse_dim) != nb + 2:
        raise RuntimeError(f"sparse_compressed_to_sparse: conversion from "
                           f"{_cs.layout_name(s._cs_layout)} to Sparse with sparse_dim argument "
                           f"!={nb + 2} is not supported")
    # the entries in storage order: sorted (coalesced) for CSR, column-major for CSC
    coords = np.stack([c._data for c in _coords(s)]).reshape(nb + 2, -1)
    vals = s._cs_values.reshape((coords.shape[1],) + s._cs_values.shape[nb + 1:])
    out = _make_coo(coords, vals.copy(), s._cs_shape, coalesced=s._cs_layout is _CSR)
    return _record("ToSparseBackward1", _layout_vjp, (s,), out, (s._cs_layout,))


# ---------------------------------------------------------------------------- parts
def _values_vjp(node: Any, g: Tensor) -> CompressedTensor:
    (src,) = node._args
    return _from_values(src, g)


def values(s: CompressedTensor) -> Tensor:
    """The stored values (``ValuesBackward0``: a gradient on ``s``'s pattern)."""
    return _record("ValuesBackward0", _values_vjp, (s,), _wrap(s._cs_values), (s,))


def _identity_vjp(node: Any, g: Any) -> Any:
    return g


def clone(s: CompressedTensor, *, memory_format: Any = None) -> CompressedTensor:
    return _record("CloneBackward0", _identity_vjp, (s,), _like(s, s._cs_values.copy()))


def detach(s: CompressedTensor) -> CompressedTensor:
    return _like(s, s._cs_values, copy_indices=False)


def _to_vjp(node: Any, g: Any) -> Any:
    (dt,) = node._args
    return convert(g, dt) if _is_cs(g) else _dense(g).to(dt)


def convert(s: CompressedTensor, dt: _dtype.dtype) -> CompressedTensor:
    """``s`` with values of dtype ``dt`` (itself when already so)."""
    if s._cs_values.dtype == dt.np:
        return s
    out = _like(s, s._cs_values.astype(dt.np))
    return _record("ToCopyBackward0", _to_vjp, (s,), out, (s.dtype,))


def to(s: CompressedTensor, *args: Any, **kwargs: Any) -> CompressedTensor:
    dt = kwargs.get("dtype")
    for a in args:
        if isinstance(a, _dtype.dtype):
            dt = a
        elif isinstance(a, Tensor):
            dt = a.dtype
    if kwargs.get("layout") is not None:
        raise TypeError("to() received an invalid combination of arguments - got "
                        "(layout=ndgrad.layout, )")
    return s if dt is None else convert(s, _dtype.to_dtype(dt))


def _t_vjp(node: Any, g: Any) -> Any:
    return transpose(g, 0, 1) if _is_cs(g) else g.t()


def transpose(s: Any, dim0: int = 0, dim1: int = 1, *, _name: str = "TransposeBackward0"
              ) -> Any:
    """The transpose of the two sparse dims: CSR becomes CSC on the same arrays (and back)."""
    if not _is_cs(s):
        return s.transpose(dim0, dim1)
    n = s.dim()
    d0, d1 = dim0 % n, dim1 % n
    nb = s._batch_dim()
    if d0 == d1:
        return s
    if {d0, d1} != {nb, nb + 1}:
        kind = ["Batch"] * nb + ["Sparse", "Sparse"] + ["Dense"] * s.dense_dim()
        raise RuntimeError(f"transpose(): can only transpose dimensions of the same type "
                           f"(Batch, Sparse, Dense), got {d0}({kind[d0]}) and {d1}({kind[d1]})")
    shape = list(s._cs_shape)
    shape[nb], shape[nb + 1] = shape[nb + 1], shape[nb]
    out = make_compressed(s._cs_compressed, s._cs_plain, s._cs_values, shape,
                          _CSC if s._cs_layout is _CSR else _CSR)
    return _record(_name, _t_vjp, (s,), out)


def t(s: CompressedTensor) -> CompressedTensor:
    if s.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {s.dim()}D")
    return transpose(s, 0, 1, _name="TBackward0")


# ---------------------------------------------------------------------------- arithmetic
def _mul_vjp(node: Any, g: Any) -> tuple:
    (f,) = node._args
    return mul(g, f), None


def mul(s: Any, other: Any) -> Any:
    """``s * other``: a scalar (or 0-d tensor) scales the values; a dense tensor of ``s``'s
    shape is read at ``s``'s pattern."""
    if not _is_cs(s):
        return other * s if _is_cs(other) else s * other
    if isinstance(other, Tensor) and other.dim() != 0:
        if tuple(other.shape) != s._cs_shape:
            raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size "
                               f"{list(other.shape)} but mask has size {list(s._cs_shape)}")
        return _from_values(s, values(s) * _gather(other, s))
    f = other.item() if isinstance(other, Tensor) else other
    vals = (s._cs_values * f).astype(_dtype.result_type(s, f).np, copy=False)
    return _record("MulBackward0", _mul_vjp, (s, None), _like(s, vals), (f,))


def _neg_vjp(node: Any, g: Any) -> Any:
    return neg(g) if _is_cs(g) else -g


def neg(s: CompressedTensor) -> CompressedTensor:
    return _record("NegBackward0", _neg_vjp, (s,), _like(s, -s._cs_values))


def _add_vjp(node: Any, g: Any) -> tuple:
    (alpha,) = node._args
    return g, (g if alpha == 1 else mul(g, alpha))


def _keys(s: CompressedTensor) -> np.ndarray:
    coords = [c._data for c in _coords(s)]
    return np.ravel_multi_index(tuple(coords), s._cs_shape[:len(coords)]) if coords[0].size \
        else np.zeros(0, np.int64)


def add(a: Any, b: Any, alpha: Any = 1) -> Any:
    """``a + alpha * b``: compressed + compressed of one layout is compressed (on the union of
    the patterns); with a dense operand the result is dense."""
    if not (_is_cs(a) and _is_cs(b)):
        if isinstance(a, Tensor) and isinstance(b, Tensor) and \
                SparseTensor not in (a.__class__, b.__class__):
            # a dense kernel reads the matrix: the compressed operand's gradient is dense
            return a + (b * alpha if alpha != 1 else b)
        if SparseTensor in (a.__class__, b.__class__):
            raise RuntimeError("at::sparse_csr::is_sparse_compressed(other) INTERNAL ASSERT "
                               "FAILED: adding a sparse COO tensor to a sparse compressed one is "
                               "not supported")
        raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has "
                           f"size [] while other has size {list(a.shape)} (FYI: op2-sparse "
                           "addition does not currently support broadcasting)")
    if a._cs_layout is not b._cs_layout or (a._cs_layout is _CSC and a is not b):
        # torch adds compressed tensors as CSR only (a CSC one only to itself)
        raise RuntimeError("crow_indices expected sparse row compressed tensor layout but got "
                           "SparseCsc")
    if a._cs_shape != b._cs_shape:
        raise RuntimeError(f"torch.add: Expected input tensors to have the same shape, but got "
                           f"tensor `self` with shape {list(a._cs_shape)} and tensor `other` "
                           f"with shape {list(b._cs_shape)}")
    if a._cs_values.dtype != b._cs_values.dtype:
        wide = _dtype.promote_types(a.dtype, b.dtype)
        narrow = b.dtype if wide is a.dtype else a.dtype
        raise RuntimeError(f"expected scalar type {wide._torch_name} but found "
                           f"{narrow._torch_name}")
    ka, kb = _keys(a), _keys(b)
    nb = a._batch_dim()
    if nb == 0 and ka.size == kb.size and np.array_equal(ka, kb):
        vals = a._cs_values + b._cs_values * alpha if alpha != 1 else \
            a._cs_values + b._cs_values
        out = _like(a, vals.astype(a._cs_values.dtype, copy=False))
    else:
        union = np.union1d(ka, kb)
        dense = a._cs_values.shape[nb + 1:]
        vals = np.zeros((union.size,) + dense, a._cs_values.dtype)
        vals[np.searchsorted(union, ka)] += a._cs_values.reshape((-1,) + dense)
        vals[np.searchsorted(union, kb)] += b._cs_values.reshape((-1,) + dense) * alpha
        coords = np.unravel_index(union, a._cs_shape[:nb + 2])
        probe = _make_coo(np.stack(coords).astype(np.int64).reshape(nb + 2, -1), vals,
                          a._cs_shape, coalesced=True)
        if nb:
            dense_form = np.zeros(a._cs_shape, vals.dtype)
            dense_form[coords] = vals
            out = _cs.dense_to_compressed(dense_form, a._cs_layout, a.dense_dim())
        else:
            out = _coo_to_compressed(probe, a._cs_layout)
    return _record("AddBackward0", _add_vjp, (a, b), out, (alpha,))


# ---------------------------------------------------------------------------- reductions
def _sum_vjp(node: Any, g: Tensor) -> Tensor:
    (shape, dt) = node._args
    return g.expand(shape).contiguous()


def total_sum(s: CompressedTensor, dtype: Any = None) -> Tensor:
    """The sum of all entries (``SumBackward0``: a dense gradient, as torch's)."""
    vals = s._cs_values
    if dtype is not None:
        vals = vals.astype(_dtype.to_dtype(dtype).np)
    elif vals.dtype.kind in "biu":
        vals = vals.astype(np.int64)
    out = _wrap(np.asarray(vals.sum(), dtype=vals.dtype))
    return _record("SumBackward0", _sum_vjp, (s,), out, (s._cs_shape, vals.dtype))


def sum_(s: CompressedTensor, dim: Any = None, keepdim: bool = False, *,
         dtype: Any = None) -> Any:
    if dim is None:
        return total_sum(s, dtype)
    if s._cs_layout is not _CSR:
        raise RuntimeError(f"Currently the only compressed sparse format supported for "
                           f"sum.dim_IntList is CSR, but got layout "
                           f"{_cs.layout_name(s._cs_layout)}")
    if not keepdim:
        raise RuntimeError("reduction operations on CSR tensors with keepdim=False is "
                           "unsupported")
    # a dense kernel reads ``s`` (its ``_data``: subclass dispatch is off in a handler), so
    # ``s``'s gradient is dense, as torch's
    r = s.sum(dim, keepdim=True, dtype=dtype)
    return to_compressed(r, _CSR)


# ---------------------------------------------------------------------------- in place
def _check_inplace(s: CompressedTensor) -> None:
    """In-place ops are not recorded: refused where autograd would need them, as torch's."""
    if _state.enabled and s._requires_grad:
        if s._grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
        raise RuntimeError("in-place operations on a sparse compressed tensor that requires "
                           "grad are not supported by ndgrad")


def mul_(s: CompressedTensor, other: Any) -> CompressedTensor:
    _check_inplace(s)
    s._cs_values = mul(detach(s), other)._cs_values
    s._bump_version()
    return s


def _assign(s: CompressedTensor, r: CompressedTensor) -> CompressedTensor:
    _check_inplace(s)
    if r._cs_values.dtype != s._cs_values.dtype:
        r = convert(detach(r), s.dtype)
    s._cs_compressed, s._cs_plain, s._cs_values = r._cs_compressed, r._cs_plain, r._cs_values
    s._bump_version()
    return s


def add_(s: CompressedTensor, other: Any, *, alpha: Any = 1) -> CompressedTensor:
    """In place: compressed + compressed (the union of the patterns)."""
    if not _is_cs(other):
        raise _cs._refusal("add_", s._cs_layout)
    return _assign(s, add(detach(s), detach(other), alpha))


def copy_(s: CompressedTensor, src: Any, non_blocking: bool = False) -> CompressedTensor:
    """In place: ``src``'s pattern and values (a compressed tensor of the same size and
    layout)."""
    if not _is_cs(src) or src._cs_layout is not s._cs_layout or src._cs_shape != s._cs_shape:
        raise _cs._refusal("copy", s._cs_layout)
    return _assign(s, _like(src, src._cs_values.copy()))


def fill_(s: CompressedTensor, value: Any) -> CompressedTensor:
    """In place: every stored value set to ``value``."""
    _check_inplace(s)
    v = value.item() if isinstance(value, Tensor) else value
    s._cs_values = np.full_like(s._cs_values, v)
    s._bump_version()
    return s


def zero_(s: CompressedTensor) -> CompressedTensor:
    _check_inplace(s)
    nb = s._batch_dim()
    s._cs_compressed = np.zeros_like(s._cs_compressed)
    s._cs_plain = np.zeros(s._cs_shape[:nb] + (0,), s._cs_plain.dtype)
    s._cs_values = np.zeros(s._cs_shape[:nb] + (0,) + s._cs_values.shape[nb + 1:],
                            s._cs_values.dtype)
    s._bump_version()
    return s


# ---------------------------------------------------------------------------- registration
# torch's pointwise kernels for compressed layouts: the ops that keep zero at zero
_ZERO_PRESERVING = ("abs", "sin", "tanh", "sqrt", "relu", "sgn", "sign", "asin", "atan",
                    "sinh", "asinh", "atanh", "tan", "trunc", "floor", "ceil", "round", "expm1",
                    "log1p", "erf", "erfinv", "deg2rad", "rad2deg", "signbit", "isnan", "isinf",
                    "angle", "conj_physical")


def _unary(name: str) -> Callable:
    def op(s: Any, *args: Any, **kwargs: Any) -> Any:
        return _from_values(s, getattr(values(s), name)(*args, **kwargs))
    return op


def _to_sparse(s: CompressedTensor, sparse_dim: Any = None, *, layout: Any = None,
               blocksize: Any = None, dense_dim: Any = None) -> Any:
    if layout in (_CSR, _CSC):
        return to_compressed(s, layout, dense_dim)
    if layout is not None and layout is not _layout.sparse_coo:
        raise NotImplementedError(f"to_sparse: layout {layout} is not supported")
    return to_coo(s, sparse_dim)


def _radd(s: Any, other: Any) -> Any:
    return add(other, s)


def _install() -> None:
    """Register the handlers of ``CompressedTensor`` (Note [Sparse compressed tensors]) and
    the compressed-layout methods of dense and COO tensors."""
    h = _cs._HANDLERS
    passthrough = ("requires_grad_", "register_hook", "retain_grad", "backward",
                   "is_floating_point", "is_complex", "element_size", "get_device",
                   "__format__", "register_post_accumulate_grad_hook", "linear", "dim_order",
                   "is_signed", "__rmatmul__", "__rsub__")
    for name in passthrough:
        h[name] = lambda *a, **k: NotImplemented
    h.update({
        "to_dense": to_dense, "values": values, "to_sparse": _to_sparse,
        "to_sparse_csr": lambda s, dense_dim=None: to_compressed(s, _CSR, dense_dim),
        "to_sparse_csc": lambda s, dense_dim=None: to_compressed(s, _CSC, dense_dim),
        "to_sparse_coo": lambda s: to_coo(s), "clone": clone, "detach": detach, "to": to,
        "cpu": lambda s, *a, **k: s, "t": t, "transpose": transpose,
        "mT": lambda s: transpose(s, -2, -1), "data": detach,
        "mul": mul, "__mul__": mul, "__rmul__": mul, "multiply": mul,
        "neg": neg, "__neg__": neg, "negative": neg,
        "add": lambda a, b, *, alpha=1: add(a, b, alpha), "__add__": add, "__radd__": _radd,
        "sum": sum_, "mul_": mul_, "zero_": zero_, "add_": add_,
        "copy_": copy_, "fill_": fill_,
    })
    for name, dt in (("double", _dtype.float64), ("float", _dtype.float32),
                     ("half", _dtype.float16), ("bfloat16", _dtype.bfloat16),
                     ("int", _dtype.int32), ("long", _dtype.int64), ("short", _dtype.int16),
                     ("bool", _dtype.bool), ("byte", _dtype.uint8), ("char", _dtype.int8)):
        h[name] = (lambda d: lambda s, *a, **k: convert(s, d))(dt)
    for name in _ZERO_PRESERVING:
        h[name] = _unary(name)

    def coo_to_sparse(self: SparseTensor, sparse_dim: Any = None, *, layout: Any = None,
                      blocksize: Any = None, dense_dim: Any = None) -> Any:
        if layout in (_CSR, _CSC):
            return to_compressed(self, layout, dense_dim)
        return self
    SparseTensor.to_sparse = coo_to_sparse  # type: ignore[method-assign]
