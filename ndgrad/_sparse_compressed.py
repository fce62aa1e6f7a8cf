"""Sparse compressed tensors: ``CompressedTensor``, the CSR (``layout=torch.sparse_csr``) and
CSC (``torch.sparse_csc``) matrices of ``sparse_csr_tensor``, ``to_sparse_csr()`` and
``to_sparse_csc()``.

Note [Sparse compressed tensors]
A ``CompressedTensor`` stores, for its ``layout``, the compressed indices (``crow_indices`` of
a CSR tensor, ``ccol_indices`` of a CSC one: ``batch dims x (n + 1)``, the offsets of each row
(column) in the entry list), the plain indices (``col_indices``/``row_indices``: ``batch dims x
nnz``, sorted and distinct within each row (column)), the values (``batch dims x nnz x dense
dims``) and its size ``batch dims + (rows, cols) + dense dims``; the two index arrays are int32
or int64, of one dtype. The invariants are always checked when one is built from user data
(torch checks them only with ``check_invariants=True``; ndgrad does as for COO tensors).
torch marks the layout beta: the first construction in the process warns so, once.

Only the operations torch implements for these layouts run (registered in ``_HANDLERS`` by
``ndgrad/ops/sparse_compressed.py``, Note [Compressed sparse autograd]): the class defines
``__torch_function__``, so every public function or method that receives one is routed through
``_dispatch``, which runs the registered handler, or raises the error torch raises for that
operation on these layouts (never densifying silently, never an internal error). The dense
value (``_data``) exists for the operations that read the matrix as torch's dense kernels do
(``mm``, ``dense + csr``); their gradients for the compressed input are dense, as torch's are.

Example:
    >>> import ndgrad
    >>> s = ndgrad.tensor([[1.0, 0.0], [0.0, 2.0]]).to_sparse_csr()
    >>> s.crow_indices(), s.col_indices(), s.values()
    (tensor([0, 1, 2]), tensor([0, 1]), tensor([1., 2.]))
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Sequence

import numpy as np

from . import _dtype, _format, _layout
from ._warn import warn_user_once
from . import _torch_function as _tf
from ._torch_function import DisableTorchFunctionSubclass, _disabled_torch_function_impl
from .tensor import Size, Tensor, _wrap

__all__ = ["CompressedTensor", "make_compressed", "compressed_from_arrays", "dense_to_compressed",
           "BETA_WARNING", "layout_name"]

BETA_WARNING = ("Sparse CSR tensor support is in beta state. If you miss a functionality in the "
                "sparse tensor support, please submit a feature request to "
                "https://github.com/pytorch/pytorch/issues.")

# name -> handler(*args, **kwargs), filled by ndgrad/ops/sparse_compressed.py
_HANDLERS: Dict[str, Callable] = {}


def layout_name(layout: Any) -> str:
    """torch's C++ name of a layout, as its error messages write it."""
    return {_layout.sparse_csr: "SparseCsr", _layout.sparse_csc: "SparseCsc",
            _layout.sparse_coo: "Sparse", _layout.strided: "Strided"}.get(layout, str(layout))


class CompressedTensor(Tensor):
    """A sparse CSR or CSC tensor (Note [Sparse compressed tensors])."""

    _cs_layout: Any
    _cs_compressed: np.ndarray
    _cs_plain: np.ndarray
    _cs_values: np.ndarray
    _cs_shape: tuple

    # Until the first one is made (the Tensor class is complete then), the protocol skips the
    # class; ``_activate`` installs ``_route`` and the dispatching methods.
    __torch_function__ = _disabled_torch_function_impl

    # ------------------------------------------------------------------ dense view
    @property
    def _data(self) -> np.ndarray:
        return self._dense()

    @_data.setter
    def _data(self, value: Any) -> None:
        raise RuntimeError(f"in-place dense operations are not supported on sparse tensors "
                           f"(layout {self._cs_layout}); convert with .to_dense() first")

    def _dense(self) -> np.ndarray:
        """The dense ndarray of this tensor."""
        shape = self._cs_shape
        nb = self._cs_compressed.ndim - 1
        out = np.zeros(shape, dtype=self._cs_values.dtype)
        comp = self._cs_compressed.reshape(-1, self._cs_compressed.shape[-1])
        plain = self._cs_plain.reshape(comp.shape[0], self._cs_plain.shape[-1])
        vals = self._cs_values.reshape((comp.shape[0],) + self._cs_values.shape[nb:])
        flat = out.reshape((comp.shape[0],) + shape[nb:])
        csr = self._cs_layout is _layout.sparse_csr
        for b in range(comp.shape[0]):
            major = np.repeat(np.arange(comp.shape[1] - 1), np.diff(comp[b]))
            rows, cols = (major, plain[b]) if csr else (plain[b], major)
            flat[b][rows, cols] = vals[b]
        return out

    # ------------------------------------------------------------------ metadata
    @property
    def shape(self) -> Size:
        return Size(self._cs_shape)

    def size(self, dim: Optional[int] = None) -> Any:
        if dim is None:
            return Size(self._cs_shape)
        return self._cs_shape[dim]

    def dim(self) -> int:
        return len(self._cs_shape)

    ndimension = dim

    @property
    def ndim(self) -> int:
        return len(self._cs_shape)

    def numel(self) -> int:
        return int(np.prod(self._cs_shape, dtype=np.int64))

    def __len__(self) -> int:
        return self._cs_shape[0]

    @property
    def dtype(self) -> _dtype.dtype:
        return _dtype._FROM_NP[self._cs_values.dtype]

    @property
    def is_sparse(self) -> bool:
        return False

    @property
    def is_sparse_csr(self) -> bool:
        return self._cs_layout is _layout.sparse_csr

    @property
    def layout(self) -> Any:
        return self._cs_layout

    def sparse_dim(self) -> int:
        return 2

    def dense_dim(self) -> int:
        return self._cs_values.ndim - self._cs_compressed.ndim

    def _batch_dim(self) -> int:
        return self._cs_compressed.ndim - 1

    def _nnz(self) -> int:
        return self._cs_plain.shape[-1]

    def _part(self, name: str, want: Any) -> Tensor:
        if self._cs_layout is not want:
            kind = "row" if want is _layout.sparse_csr else "column"
            raise RuntimeError(f"{name} expected sparse {kind} compressed tensor layout but got "
                               f"{layout_name(self._cs_layout)}")
        return _wrap(self._cs_compressed if name in ("crow_indices", "ccol_indices")
                     else self._cs_plain)

    def crow_indices(self) -> Tensor:
        return self._part("crow_indices", _layout.sparse_csr)

    def col_indices(self) -> Tensor:
        return self._part("col_indices", _layout.sparse_csr)

    def ccol_indices(self) -> Tensor:
        return self._part("ccol_indices", _layout.sparse_csc)

    def row_indices(self) -> Tensor:
        return self._part("row_indices", _layout.sparse_csc)

    def _values(self) -> Tensor:
        raise _unsupported("_values", self._cs_layout)

    def _indices(self) -> Tensor:
        raise _unsupported("_indices", self._cs_layout)

    def item(self) -> Any:
        n = self.numel()
        if n != 1:
            raise RuntimeError(f"a Tensor with {n} elements cannot be converted to Scalar")
        raise _unsupported("_local_scalar_dense", self._cs_layout)

    def __bool__(self) -> bool:
        n = self.numel()
        if n != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        raise _unsupported("_local_scalar_dense", self._cs_layout)

    __float__ = __int__ = __index__ = __complex__ = item

    def __iter__(self) -> Any:
        raise _unsupported("unbind", self._cs_layout)

    def __repr__(self) -> str:
        csr = self._cs_layout is _layout.sparse_csr
        parts = ((("crow_indices", self._cs_compressed), ("col_indices", self._cs_plain)) if csr
                 else (("ccol_indices", self._cs_compressed), ("row_indices", self._cs_plain)))
        return _format.format_compressed(self, parts, self._cs_values, self._cs_layout)

    def __reduce_ex__(self, proto: Any) -> Any:
        return (make_compressed, (self._cs_compressed, self._cs_plain, self._cs_values,
                                  self._cs_shape, self._cs_layout))

    def __deepcopy__(self, memo: Any) -> Any:
        return make_compressed(self._cs_compressed.copy(), self._cs_plain.copy(),
                               self._cs_values.copy(), self._cs_shape, self._cs_layout)


def _route(cls: type, func: Callable, types: Any, args: Any = (), kwargs: Any = None) -> Any:
    return _dispatch(func, args, kwargs or {})


_ACTIVE = False


def _activate() -> None:
    """Make ``CompressedTensor`` take part in the ``__torch_function__`` protocol (Note [Torch
    function protocol]): done on first use, when every Tensor method exists."""
    global _ACTIVE
    tf = _tf
    CompressedTensor.__torch_function__ = classmethod(_route)  # type: ignore[assignment]
    tf._OVERRIDES.pop(CompressedTensor, None)
    tf.PLAIN.discard(CompressedTensor)
    tf.PLAIN_TENSORS.discard(CompressedTensor)
    tf.build_dispatchers()
    for name, v in Tensor.__dict__.items():
        _METHOD_NAMES.setdefault(id(v), name)
        if isinstance(v, property) and v.fget is not None:
            _METHOD_NAMES.setdefault(id(v.fget), name)
    for name, fn in tf._DISPATCHERS.items():
        if name not in CompressedTensor.__dict__:
            setattr(CompressedTensor, name, fn)
    _ACTIVE = True


def make_compressed(compressed: np.ndarray, plain: np.ndarray, values: np.ndarray,
                    shape: Sequence[int], layout: Any) -> CompressedTensor:
    """A compressed tensor over these arrays (no checks, no warning: for ops)."""
    if not _ACTIVE:
        _activate()
    t = object.__new__(CompressedTensor)
    t._cs_compressed, t._cs_plain, t._cs_values = compressed, plain, values
    t._cs_shape = tuple(int(s) for s in shape)
    t._cs_layout = layout
    return t


# ---------------------------------------------------------------------------- errors
def _unsupported(name: str, layout: Any) -> Exception:
    return NotImplementedError(
        f"Could not run 'aten::{name}' with arguments from the 'SparseCsrCPU' backend. This "
        "could be because the operator doesn't exist for this backend, or was omitted during "
        "the selective/custom build process (if using custom build).")


# torch's pointwise kernels that do not keep zeros zero refuse these layouts so
_LAYOUT_REFUSED = frozenset({
    "exp", "exp_", "log", "log_", "sigmoid", "sigmoid_", "pow", "pow_", "__pow__", "__rpow__",
    "square", "eq", "ne", "lt", "le", "gt", "ge", "__eq__", "__ne__", "__lt__", "__le__",
    "__gt__", "__ge__", "where", "allclose", "isclose", "div", "div_", "__truediv__",
    "__rtruediv__", "sub", "sub_", "__sub__", "__rsub__", "cos", "cosh", "exp2", "expm1_",
    "log_softmax", "reciprocal", "rsqrt", "clamp", "clip", "maximum", "minimum", "equal",
    "log1p_", "cumsum", "__and__", "__or__", "logical_not", "softplus", "gelu", "silu"})
_NO_CONTIGUOUS = frozenset({"reshape", "contiguous", "cat", "stack", "flatten", "concat",
                            "concatenate", "view_as", "reshape_as", "is_contiguous"})
_NO_STRIDES = frozenset({"unsqueeze", "stride", "squeeze", "expand", "expand_as", "permute",
                         "narrow", "select", "movedim", "unfold", "flip", "roll", "repeat"})
_NO_STORAGE = frozenset({"tolist", "data_ptr", "untyped_storage", "storage"})


# the kernel torch names in its error, where it is not the function's own name
_KERNEL_NAMES = {"mean": "mean.out", "norm": "norm.out", "softmax": "_softmax.out",
                 "bmm": "bmm.out", "getitem": "index.Tensor", "__getitem__": "index.Tensor"}


def _refusal(name: str, layout: Any) -> Exception:
    """The error torch raises for operation ``name`` on a tensor of a compressed layout."""
    kind = "CSR" if layout is _layout.sparse_csr else "CSC"
    if name in _LAYOUT_REFUSED:
        return RuntimeError(f"unsupported tensor layout: {layout_name(layout)}")
    if name in _NO_CONTIGUOUS:
        return RuntimeError(f"Sparse {kind} tensors do not have is_contiguous")
    if name in _NO_STRIDES:
        return RuntimeError(f"Sparse {kind} tensors do not have strides")
    if name in _NO_STORAGE:
        return RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")
    if name == "type":
        return RuntimeError("Unimplemented backend SparseCsrCPU")
    if name in ("numpy", "__array__"):
        return TypeError(f"can't convert {layout_name(layout)} layout tensor to numpy. Use "
                         "Tensor.to_dense() first.")
    if name in ("T", "H"):
        return _unsupported("as_strided", layout)
    if name in ("item", "__bool__", "__float__", "__int__"):
        return _unsupported("_local_scalar_dense", layout)
    if name in ("is_coalesced", "indices", "coalesce"):
        return RuntimeError(f"{name} expected sparse coordinate tensor layout but got "
                            f"{layout_name(layout)}")
    return _unsupported(_KERNEL_NAMES.get(name, name.strip("_")), layout)


_METHOD_NAMES: Dict[int, str] = {}      # id(Tensor attribute) -> its name, set on activation


def _func_name(func: Callable) -> str:
    name = _METHOD_NAMES.get(id(func))
    owner = getattr(func, "__self__", None)
    if name is None and type(owner) is property:
        name = _METHOD_NAMES.get(id(owner))             # a property's ``__get__``
    if name is not None:
        return name
    return getattr(func, "__name__", "")


def _dispatch(func: Callable, args: tuple, kwargs: dict) -> Any:
    """Run ``func`` on arguments that include a compressed tensor: its registered handler, or
    torch's error (Note [Sparse compressed tensors])."""
    name = _func_name(func)
    handler = _HANDLERS.get(name)
    if handler is not None:
        with DisableTorchFunctionSubclass():
            out = handler(*args, **kwargs)
            if out is not NotImplemented:
                return out
            return func(*args, **kwargs)    # a dense kernel reading the matrix (``_data``)
    layout = next((a._cs_layout for a in list(args) + list(kwargs.values())
                   if isinstance(a, CompressedTensor)), _layout.sparse_csr)
    raise _refusal(name, layout)


# ---------------------------------------------------------------------------- construction
def _torch_name(arr: np.ndarray) -> str:
    d = _dtype._FROM_NP.get(arr.dtype)
    return d._torch_name if d is not None else str(arr.dtype)


def _as_array(x: Any, integral: bool) -> np.ndarray:
    if isinstance(x, Tensor):
        return x.detach().numpy()
    a = np.asarray(x)
    if a.dtype == np.float64 and not isinstance(x, np.ndarray):
        a = a.astype(_dtype.get_default_dtype().np)
    if integral and a.size == 0 and a.dtype.kind == "f" and not isinstance(x, np.ndarray):
        a = a.astype(np.int64)
    return a


def compressed_from_arrays(compressed: Any, plain: Any, values: Any, size: Any, layout: Any,
                           dtype: Any = None) -> CompressedTensor:
    """A checked compressed tensor of ``layout`` from user data (torch's invariant errors)."""
    if layout not in (_layout.sparse_csr, _layout.sparse_csc):
        got = "none" if layout is None else layout_name(layout)
        raise RuntimeError(f"sparse_compressed_tensor expected sparse compressed tensor layout "
                           f"but got {got}")
    csr = layout is _layout.sparse_csr
    cname, pname = ("crow_indices", "col_indices") if csr else ("ccol_indices", "row_indices")
    comp, plain = _as_array(compressed, True), _as_array(plain, True)
    vals = _as_array(values, False)
    if dtype is not None:
        vals = vals.astype(_dtype.to_dtype(dtype).np)
    else:
        vals = vals.copy() if isinstance(values, Tensor) else vals
    if comp.ndim < 1:
        raise RuntimeError(f"{cname} must have dimensionality >= 1 but got {comp.ndim}")
    if comp.ndim != plain.ndim:
        raise RuntimeError(f"{cname} and {pname} dimensionalities must be equal but got "
                           f"{comp.ndim} and {plain.ndim}, respectively")
    if comp.dtype != plain.dtype:
        raise RuntimeError(f"{cname} and {pname} must have the same dtype, bot got "
                           f"{_torch_name(comp)} and {_torch_name(plain)}, respectively")
    if comp.dtype not in (np.int32, np.int64):
        raise RuntimeError(f"{cname} and {pname} dtype must be Int or Long, but got "
                           f"{_torch_name(comp)}")
    nb = comp.ndim - 1
    if vals.ndim <= nb:
        raise RuntimeError(f"values must have dimensionality > sum of batch and block "
                           f"dimensionalities (={nb} + 0) but got {vals.ndim}")
    dense = vals.shape[nb + 1:]
    if size is None:
        n_major = comp.shape[-1] - 1
        n_minor = int(plain.max()) + 1 if plain.size else 0
        base = (n_major, n_minor) if csr else (n_minor, n_major)
        size = comp.shape[:-1] + base + dense
    size = tuple(int(s) for s in size)
    if len(size) != nb + 2 + len(dense):
        raise RuntimeError(f"tensor dimensionality must be sum of batch, base, and dense "
                           f"dimensionalities (={nb} + 2 + {len(dense)}) but got {len(size)}")
    if size[nb + 2:] != dense:
        raise RuntimeError(f"values has incorrect dense dimensions: expected "
                           f"{list(size[nb + 2:])}, got {list(dense)}")
    rows, cols = size[nb], size[nb + 1]
    n_major, n_minor = (rows, cols) if csr else (cols, rows)
    major_word = "rows" if csr else "columns"
    if comp.shape[-1] != n_major + 1:
        raise RuntimeError(f"{cname}.shape[-1] must be equal to the number of {major_word} + 1 "
                           f"(={n_major + 1}), but got {comp.shape[-1]}")
    nnz = vals.shape[nb]
    if plain.shape[-1] != nnz:
        raise RuntimeError(f"{pname}.shape[-1] must be equal to nnz (={nnz}) as defined by "
                           f"values.shape[{nb}], but got {plain.shape[-1]}")
    batch = size[:nb]
    if comp.shape[:-1] != batch or plain.shape[:-1] != batch or vals.shape[:nb] != batch:
        raise RuntimeError(f"all batch dimensions of {cname}, {pname} and values must be "
                           f"equal to the batch dimensions of the size, {list(batch)}")
    _check_invariants(comp, plain, cname, pname, n_minor, nnz)
    return make_compressed(comp, plain, vals, size, layout)


def _check_invariants(comp: np.ndarray, plain: np.ndarray, cname: str, pname: str,
                      n_minor: int, nnz: int) -> None:
    """torch's ``check_invariants=True`` errors, in its order (rows are checked in turn: a
    row's offset step, then its indices' order)."""
    minor = "ncols" if cname == "crow_indices" else "nrows"
    major = "nrows" if minor == "ncols" else "ncols"
    if (comp[..., 0] != 0).any():
        raise RuntimeError(f"`{cname}[..., 0] == 0` is not satisfied.")
    if (comp[..., -1] != nnz).any():
        raise RuntimeError(f"`{cname}[..., -1] == nnz` is not satisfied.")
    if ((plain < 0) | (plain >= n_minor)).any():
        raise RuntimeError(f"`0 <= {pname} < {minor}` is not satisfied.")
    step_error = RuntimeError(f"`0 <= {cname}[..., 1:] - {cname}[..., :-1] <= {minor}` is not "
                              "satisfied.")
    order_error = RuntimeError(f"`{pname}[..., {cname}[..., i - 1]:{cname}[..., i]] for all "
                               f"i = 1, ..., {major} are sorted and distinct along the last "
                               "dimension values` is not satisfied.")
    c2 = comp.reshape(-1, comp.shape[-1])
    p2 = plain.reshape(c2.shape[0], plain.shape[-1])
    for b in range(c2.shape[0]):
        c, p = c2[b], p2[b]
        step = np.diff(c)
        bad = np.flatnonzero((step < 0) | (step > n_minor))
        first_bad = int(bad[0]) if bad.size else None
        end = int(c[first_bad]) if first_bad is not None else nnz   # rows before are sound
        ok = c[: (first_bad if first_bad is not None else len(c) - 1) + 1]
        starts = np.zeros(max(end, 1), dtype=bool)
        inner = ok[(ok > 0) & (ok < end)]
        starts[inner] = True
        if end > 1 and not ((np.diff(p[:end]) > 0) | starts[1:end]).all():
            raise order_error
        if first_bad is not None:
            raise step_error


def dense_to_compressed(a: np.ndarray, layout: Any, dense_dim: Optional[int] = None,
                        fn: str = "dense_to_sparse_csr") -> CompressedTensor:
    """The CSR/CSC form of a dense array (``dense_dim`` trailing dims kept dense, the dims
    before the last two sparse ones are batch dims); int64 indices, as torch's."""
    dd = 0 if dense_dim is None else int(dense_dim)
    if a.ndim < 2:
        raise RuntimeError(f"{fn}: expected a tensor with at least 2 dimensions, but got "
                           f"{a.ndim}")
    if not 0 <= dd <= a.ndim - 2:
        raise RuntimeError(f"{fn}: dense_dim argument must be in [0,{a.ndim - 2}] range, but "
                           f"{dd} is given")
    nb = a.ndim - 2 - dd
    batch, (rows, cols), dense = a.shape[:nb], a.shape[nb:nb + 2], a.shape[nb + 2:]
    flat = a.reshape((-1, rows, cols) + dense)
    csr = layout is _layout.sparse_csr
    comps, plains, valss = [], [], []
    for b in range(int(np.prod(batch, dtype=np.int64))):
        m = flat[b]
        nz = m != 0
        if dd:
            nz = nz.reshape(rows, cols, -1).any(axis=-1)
        if csr:
            r, c = np.nonzero(nz)
            major, minor, n_major = r, c, rows
        else:
            c, r = np.nonzero(nz.T)
            major, minor, n_major = c, r, cols
        comp = np.zeros(n_major + 1, np.int64)
        np.cumsum(np.bincount(major, minlength=n_major), out=comp[1:])
        comps.append(comp)
        plains.append(minor.astype(np.int64))
        valss.append(m[r, c])
    if len({p.size for p in plains}) > 1:
        raise RuntimeError("Expect the same number of specified elements per batch.")
    nnz = plains[0].size if plains else 0
    comp = np.stack(comps).reshape(batch + (comps[0].size if comps else
                                           (rows if csr else cols) + 1,))
    plain = np.stack(plains).reshape(batch + (nnz,)) if plains else \
        np.zeros(batch + (0,), np.int64)
    vals = np.stack(valss).reshape(batch + (nnz,) + dense) if valss else \
        np.zeros(batch + (0,) + dense, a.dtype)
    return make_compressed(comp, plain, vals, a.shape, layout)


def beta_warning() -> None:
    """torch's warning that the compressed layouts are beta (once per process)."""
    warn_user_once(BETA_WARNING)


def stored_positions(s: CompressedTensor) -> np.ndarray:
    """The flat index, over the batch and sparse dims, of each stored entry (storage order)."""
    nb = s._batch_dim()
    comp = s._cs_compressed.reshape(-1, s._cs_compressed.shape[-1])
    plain = s._cs_plain.reshape(comp.shape[0], s._cs_plain.shape[-1])
    rows, cols = s._cs_shape[nb], s._cs_shape[nb + 1]
    out = []
    for b in range(comp.shape[0]):
        major = np.repeat(np.arange(comp.shape[1] - 1), np.diff(comp[b]))
        r, c = (major, plain[b]) if s._cs_layout is _layout.sparse_csr else (plain[b], major)
        out.append(b * rows * cols + r * cols + c)
    return np.concatenate(out).astype(np.int64) if out else np.zeros(0, np.int64)


def full_pattern(s: CompressedTensor) -> CompressedTensor:
    """A copy of ``s`` that stores every element (zeros where ``s`` stores none), in its
    layout, requiring grad as ``s`` does (gradcheck's unmasked perturbation)."""
    nb = s._batch_dim()
    batch, (rows, cols) = s._cs_shape[:nb], s._cs_shape[nb:nb + 2]
    csr = s._cs_layout is _layout.sparse_csr
    n_major, n_minor = (rows, cols) if csr else (cols, rows)
    idx = s._cs_compressed.dtype
    comp = np.broadcast_to(np.arange(n_major + 1, dtype=idx) * n_minor, batch + (n_major + 1,))
    plain = np.broadcast_to(np.tile(np.arange(n_minor, dtype=idx), n_major),
                            batch + (n_major * n_minor,))
    dense = s._dense()
    if not csr:
        dense = np.swapaxes(dense, nb, nb + 1)
    vals = dense.reshape(batch + (n_major * n_minor,) + s._cs_shape[nb + 2:]).copy()
    out = make_compressed(comp.copy(), plain.copy(), vals, s._cs_shape, s._cs_layout)
    out._requires_grad = s._requires_grad
    return out
