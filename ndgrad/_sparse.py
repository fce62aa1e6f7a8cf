"""Sparse COO tensors: ``SparseTensor`` (``layout=torch.sparse_coo``), the gradients
``embedding(sparse=True)`` produces and AccumulateGrad keeps sparse (seed 000).

Note [Sparse COO tensors]
A ``SparseTensor`` stores ``indices`` (int64, ``sparse_dim x nnz``), ``values`` (``nnz x
dense shape``) and its ``size``; it is *uncoalesced* when indices may repeat (their values then
add up) or be unordered. Sparse + sparse walks both entry lists once, as torch's CPU kernel
does (equal neighbouring indices summed, nothing sorted: the sum of uncoalesced tensors stays
uncoalesced until it is needed), ``coalesce()`` sorts the entries and sums duplicates. A dense op
that meets a sparse tensor sees its dense value (``_data`` densifies on each access), so
dense + sparse is dense, like torch's; the engine and AccumulateGrad check the layout first
and keep sparse gradients sparse (Note [AccumulateGrad: steal, clone or add]). The methods
that record autograd history (``to_dense``, ``coalesce``, ``values``, arithmetic) are bound by
``ndgrad/ops/sparse_coo.py`` (Note [Sparse autograd]); the ones here are their unrecorded
forms.

Example:
    >>> import ndgrad
    >>> s = ndgrad.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0], (2, 3))
    >>> s.to_dense()
    tensor([[0., 0., 3.],
            [4., 0., 5.]])
    >>> (s + s).coalesce().values()
    tensor([ 6.,  8., 10.])
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from . import _dtype, _format, _layout
from .tensor import Size, Tensor, _wrap
from ._torch_function import _disabled_torch_function_impl

__all__ = ["SparseTensor", "sparse_coo_tensor", "make_sparse"]


class SparseTensor(Tensor):
    """A sparse COO tensor (Note [Sparse COO tensors])."""

    __torch_function__ = _disabled_torch_function_impl   # ops return plain tensors

    _sp_indices: np.ndarray
    _sp_values: np.ndarray
    _sp_shape: tuple
    _sp_coalesced = False

    # ------------------------------------------------------------------ dense view
    @property
    def _data(self) -> np.ndarray:
        return self._dense()

    @_data.setter
    def _data(self, value: Any) -> None:
        raise RuntimeError("in-place dense operations are not supported on sparse tensors "
                           "(layout torch.sparse_coo); convert with .to_dense() first")

    def _dense(self) -> np.ndarray:
        out = np.zeros(self._sp_shape, dtype=self._sp_values.dtype)
        if self._sp_indices.shape[1]:
            np.add.at(out, tuple(self._sp_indices), self._sp_values)
        return out

    # ------------------------------------------------------------------ metadata
    @property
    def shape(self) -> Size:
        return Size(self._sp_shape)

    def size(self, dim: Optional[int] = None) -> Any:
        if dim is None:
            return Size(self._sp_shape)
        return self._sp_shape[dim]

    def dim(self) -> int:
        return len(self._sp_shape)

    ndimension = dim

    @property
    def ndim(self) -> int:
        return len(self._sp_shape)

    def numel(self) -> int:
        return int(np.prod(self._sp_shape, dtype=np.int64))

    @property
    def dtype(self) -> _dtype.dtype:
        return _dtype._FROM_NP[self._sp_values.dtype]

    @property
    def is_sparse(self) -> bool:
        return True

    @property
    def layout(self) -> Any:
        return _layout.sparse_coo

    def is_contiguous(self, memory_format: Any = None) -> bool:
        raise RuntimeError("sparse tensors do not have is_contiguous")

    def sparse_dim(self) -> int:
        return self._sp_indices.shape[0]

    def dense_dim(self) -> int:
        return self._sp_values.ndim - 1

    def _nnz(self) -> int:
        return self._sp_indices.shape[1]

    def is_coalesced(self) -> bool:
        return self._sp_coalesced

    # ------------------------------------------------------------------ parts
    def _indices(self) -> Tensor:
        return _wrap(self._sp_indices)

    def _values(self) -> Tensor:
        return _wrap(self._sp_values)

    def indices(self) -> Tensor:
        if not self._sp_coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return _wrap(self._sp_indices)

    def values(self) -> Tensor:
        if not self._sp_coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return _wrap(self._sp_values)

    def coalesce(self) -> "SparseTensor":
        """Indices sorted and unique, duplicates summed (itself when already coalesced)."""
        if self._sp_coalesced:
            return self
        idx, vals = self._sp_indices, self._sp_values
        if idx.shape[1]:
            flat = np.ravel_multi_index(tuple(idx), self._sp_shape[:idx.shape[0]])
            uniq, inverse = np.unique(flat, return_inverse=True)
            summed = np.zeros((len(uniq),) + vals.shape[1:], dtype=vals.dtype)
            np.add.at(summed, inverse, vals)
            idx = np.stack(np.unravel_index(uniq, self._sp_shape[:idx.shape[0]])).astype(
                np.int64).reshape(idx.shape[0], -1)
            vals = summed
        return _make(idx, vals, self._sp_shape, coalesced=True)

    _coalesce_unrecorded = coalesce

    def to_dense(self, dtype: Any = None, *, masked_grad: bool = True) -> Tensor:
        out = _wrap(self._dense())
        return out if dtype is None else out.to(dtype)

    def to_sparse(self, *args: Any, **kwargs: Any) -> "SparseTensor":
        return self

    # ------------------------------------------------------------------ arithmetic
    def __add__(self, other: Any) -> Any:
        if isinstance(other, SparseTensor):
            return _sparse_add(self, other)
        return _wrap(self._dense()) + other

    def __radd__(self, other: Any) -> Any:
        return other + _wrap(self._dense())

    def add(self, other: Any, *, alpha: Any = 1) -> Any:
        if isinstance(other, SparseTensor):
            return _sparse_add(self, other, alpha)
        return _wrap(self._dense()) + other * alpha

    def add_(self, other: Any, *, alpha: Any = 1) -> "SparseTensor":
        """In place: sparse + sparse (no coalescing)."""
        if not isinstance(other, SparseTensor):
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                               "instead.")
        r = _sparse_add(self, other, alpha)
        self._sp_indices, self._sp_values = r._sp_indices, r._sp_values
        self._sp_coalesced = r._sp_coalesced
        self._bump_version()
        return self

    def mul(self, other: Any) -> "SparseTensor":
        if isinstance(other, Tensor) and other.dim() != 0:
            raise NotImplementedError("sparse * tensor: only scalar factors are supported")
        f = other.item() if isinstance(other, Tensor) else other
        return _make(self._sp_indices, self._sp_values * f, self._sp_shape,
                     coalesced=self._sp_coalesced)

    __mul__ = __rmul__ = mul

    def __neg__(self) -> "SparseTensor":
        return self.mul(-1)

    def __sub__(self, other: Any) -> Any:
        return self + (-other)

    def mul_(self, other: Any) -> "SparseTensor":
        self._sp_values = self.mul(other)._sp_values
        self._bump_version()
        return self

    def zero_(self) -> "SparseTensor":
        self._sp_indices = np.zeros((self._sp_indices.shape[0], 0), np.int64)
        self._sp_values = np.zeros((0,) + self._sp_values.shape[1:], self._sp_values.dtype)
        self._sp_coalesced = True
        self._bump_version()
        return self

    def clone(self, *, memory_format: Any = None) -> "SparseTensor":
        return _make(self._sp_indices.copy(), self._sp_values.copy(), self._sp_shape,
                     coalesced=self._sp_coalesced)

    def detach(self) -> "SparseTensor":
        return _make(self._sp_indices, self._sp_values, self._sp_shape,
                     coalesced=self._sp_coalesced)

    def to(self, *args: Any, **kwargs: Any) -> "SparseTensor":
        dt = kwargs.get("dtype") or next((a for a in args if isinstance(a, _dtype.dtype)),
                                         None)
        if dt is None:
            return self
        return _make(self._sp_indices, self._sp_values.astype(dt.np), self._sp_shape,
                     coalesced=self._sp_coalesced)

    def sparse_mask(self, mask: "SparseTensor") -> "SparseTensor":
        """The values of this tensor at ``mask``'s (coalesced) indices."""
        m = mask.coalesce()
        dense = self._dense()
        vals = dense[tuple(m._sp_indices)]
        return _make(m._sp_indices, vals, self._sp_shape, coalesced=True)

    def __repr__(self) -> str:
        return _format.format_sparse(self, self._sp_indices, self._sp_values, _layout.sparse_coo)

    def __reduce__(self) -> Any:
        return (_make, (self._sp_indices, self._sp_values, self._sp_shape,
                        self._sp_coalesced))


def _make(indices: np.ndarray, values: np.ndarray, shape: Sequence[int],
          coalesced: bool = False) -> SparseTensor:
    t = object.__new__(SparseTensor)
    t._sp_indices = indices
    t._sp_values = values
    t._sp_shape = tuple(int(s) for s in shape)
    t._sp_coalesced = bool(coalesced)
    return t


def _sparse_add(a: SparseTensor, b: SparseTensor, alpha: Any = 1) -> SparseTensor:
    """``a + alpha * b`` as torch's CPU kernel forms it: one pass over both entry lists, like a
    merge of sorted lists (the smaller index first, equal indices summed into one entry);
    coalesced only when both are."""
    if a._sp_shape != b._sp_shape:
        raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has "
                           f"size {list(a._sp_shape)} while other has size "
                           f"{list(b._sp_shape)} (FYI: op2-sparse addition does not currently "
                           "support broadcasting)")
    if a.sparse_dim() != b.sparse_dim():
        raise RuntimeError("add: expected sparse_dim of self and other to match")
    vb = b._sp_values * alpha if alpha != 1 else b._sp_values
    dtype = np.result_type(a._sp_values, vb)
    va, vb = a._sp_values.astype(dtype, copy=False), vb.astype(dtype, copy=False)
    k = a.sparse_dim()
    dims = a._sp_shape[:k]
    ka = np.ravel_multi_index(tuple(a._sp_indices), dims).tolist() if k else [0] * a._nnz()
    kb = np.ravel_multi_index(tuple(b._sp_indices), dims).tolist() if k else [0] * b._nnz()
    src, take_a, take_b = [], [], []     # per output entry: 0 a, 1 b, 2 both
    i = j = 0
    na, nb = len(ka), len(kb)
    while i < na or j < nb:
        if j >= nb or (i < na and ka[i] < kb[j]):
            src.append(0)
            take_a.append(i)
            take_b.append(0)
            i += 1
        elif i >= na or kb[j] < ka[i]:
            src.append(1)
            take_a.append(0)
            take_b.append(j)
            j += 1
        else:
            src.append(2)
            take_a.append(i)
            take_b.append(j)
            i += 1
            j += 1
    src_a = np.asarray(src, dtype=np.int64)
    ia, ib = np.asarray(take_a, dtype=np.int64), np.asarray(take_b, dtype=np.int64)
    from_a, from_b = src_a != 1, src_a != 0
    vals = np.zeros((len(src),) + va.shape[1:], dtype=dtype)
    vals[from_a] += va[ia[from_a]]
    vals[from_b] += vb[ib[from_b]]
    idx = np.where(from_a, a._sp_indices[:, ia] if na else 0,
                   b._sp_indices[:, ib] if nb else 0).astype(np.int64) if len(src) else \
        np.zeros((k, 0), np.int64)
    return _make(idx.reshape(k, -1), vals, a._sp_shape,
                 coalesced=a._sp_coalesced and b._sp_coalesced)


def add_into_dense(dense: np.ndarray, sparse: SparseTensor) -> None:
    """``dense += sparse`` in place (scatter-add of the entries)."""
    if sparse._nnz():
        np.add.at(dense, tuple(sparse._sp_indices), sparse._sp_values.astype(dense.dtype,
                                                                             copy=False))


def make_sparse(indices: np.ndarray, values: np.ndarray, shape: Sequence[int]) -> SparseTensor:
    """An uncoalesced sparse tensor from ndarrays (no checks: for ops that build gradients)."""
    return _make(np.asarray(indices, dtype=np.int64), values, shape)


def sparse_coo_tensor(indices: Any, values: Any, size: Any = None, *, dtype: Any = None,
                      device: Any = None, requires_grad: bool = False,
                      check_invariants: Optional[bool] = None,
                      is_coalesced: Optional[bool] = None) -> SparseTensor:
    """A sparse COO tensor from ``indices`` (``sparse_dim x nnz``) and ``values`` (``nnz x
    dense dims``); ``size`` defaults to the smallest that holds the indices."""
    idx = np.asarray(indices.numpy() if isinstance(indices, Tensor) else indices)
    if idx.dtype.kind not in "iu":
        raise RuntimeError("indices must be an int64 tensor")
    idx = idx.astype(np.int64)
    if isinstance(values, Tensor):
        vals = values.detach().numpy().copy()
    else:
        vals = np.asarray(values)
        if vals.dtype == np.float64 and not isinstance(values, np.ndarray):
            vals = vals.astype(_dtype.get_default_dtype().np)
    if dtype is not None:
        vals = vals.astype(_dtype.to_dtype(dtype).np)
    if idx.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    if vals.ndim == 0 or vals.shape[0] != idx.shape[1]:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{idx.shape[1]}, nnz from values: "
                           f"{vals.shape[0] if vals.ndim else 0}")
    sparse_dim = idx.shape[0]
    if size is None:
        size = tuple(int(m) + 1 for m in (idx.max(axis=1) if idx.shape[1] else
                                          np.zeros(sparse_dim, np.int64))) + vals.shape[1:]
    size = tuple(int(s) for s in size)
    if any(s < 0 for s in size):
        raise RuntimeError("numel: integer multiplication overflow")
    if len(size) != sparse_dim + vals.ndim - 1:
        raise RuntimeError(f"number of dimensions must be sparse_dim ({sparse_dim}) + dense_dim "
                           f"({vals.ndim - 1}), but got {len(size)}")
    if idx.shape[1]:
        if (idx < 0).any():
            raise RuntimeError(f"found negative index {int(idx.min())} for dim "
                               f"{int(np.argmin(idx.min(axis=1)))}")
        for d in range(sparse_dim):
            if idx[d].max() >= size[d]:
                raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is "
                                   f"{size[d]} but found index {int(idx[d].max())}")
    if tuple(vals.shape[1:]) != size[sparse_dim:]:
        raise RuntimeError("values has incorrect size, expected "
                           f"{[idx.shape[1], *size[sparse_dim:]]}, got {list(vals.shape)}")
    out = _make(idx, vals, size, coalesced=bool(is_coalesced) if is_coalesced is not None
                else idx.shape[1] <= 1)
    if requires_grad:               # a leaf; recorded forms: Note [Sparse autograd]
        if vals.dtype.kind not in "fc":
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        out._requires_grad = True
    return out


def to_sparse(t: Tensor, sparse_dim: Optional[int] = None) -> SparseTensor:
    """The nonzero entries of a dense tensor (coalesced)."""
    a = t.detach().numpy()
    k = a.ndim if sparse_dim is None else int(sparse_dim)
    if not 0 <= k <= a.ndim:
        raise RuntimeError(f"sparse_dim must be in [0, {a.ndim}], got {k}")
    lead = a.reshape(a.shape[:k] + (-1,)) if k < a.ndim else a[..., None]
    nz = np.nonzero((lead != 0).any(axis=-1))
    idx = np.stack(nz).astype(np.int64).reshape(k, -1)
    vals = a[nz].copy()
    return _make(idx, vals, a.shape, coalesced=True)
