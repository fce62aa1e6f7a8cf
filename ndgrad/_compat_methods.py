"""The Tensor methods PyTorch has under a second spelling (``x.arccos()``, ``x.divide(y)``,
``x.greater(y)``, ``x.fix()`` ...) and its small predicates and layout queries (``x.is_cpu``,
``x.is_signed()``, ``x.dim_order()`` ...).

An alias is the same implementation as its canonical name, bound before
``_signatures.install`` so that its declared signature (the compat block of
``_signatures.py``) checks its arguments under the alias's own name, as torch's errors do.

Example:
    >>> import ndgrad
    >>> x = ndgrad.tensor([-1.5, 0.5])
    >>> x.absolute().tolist(), x.fix().tolist(), x.greater(0).tolist()
    ([1.5, 0.5], [-1.0, 0.0], [False, True])
    >>> x.is_cpu, x.is_signed()
    (True, True)
"""

from __future__ import annotations

import warnings
from typing import Any, Optional

import numpy as np

from . import _creation, ops
from ._legacy_storage import storage_type
from .autograd import grad_mode as _grad_mode
from .ops import nn_activation as _act
from .ops import views_inplace as _inplace
from .ops._util import check_tensor
from .tensor import Tensor

# alias -> canonical name; the in-place forms (``alias_``) follow the canonical ``name_``
ALIASES = {
    "absolute": "abs", "arccos": "acos", "arccosh": "acosh", "arcsin": "asin",
    "arcsinh": "asinh", "arctan": "atan", "arctanh": "atanh", "divide": "div",
    "multiply": "mul", "subtract": "sub", "negative": "neg", "fix": "trunc",
    "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le",
    "not_equal": "ne",
}


def _bind_aliases() -> None:
    for alias, name in ALIASES.items():
        setattr(Tensor, alias, getattr(Tensor, name))
        setattr(Tensor, alias + "_", getattr(Tensor, name + "_"))
    for name, fn in (("bitwise_not", ops.bitwise_not),):
        setattr(Tensor, name, fn)


_bind_aliases()


def _false(self: Tensor) -> bool:
    return False


def _true(self: Tensor) -> bool:
    return True


def _no_name(self: Tensor) -> Optional[str]:
    return None


# Device and layout flags: ndgrad tensors are dense CPU tensors.
for _flag in ("is_meta", "is_mkldnn", "is_quantized", "is_nested", "is_xla", "is_xpu", "is_mps",
              "is_vulkan", "is_ipu", "is_maia", "is_mtia", "is_sparse_csr"):
    if not hasattr(Tensor, _flag):
        setattr(Tensor, _flag, property(_false))


def _volatile(self: Tensor) -> bool:
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning,
                  stacklevel=2)
    return False


# every tensor is on the CPU; none is named; ``volatile`` is gone (torch warns)
for _name, _prop in (("name", property(_no_name)),
                     ("volatile", property(_volatile))):
    setattr(Tensor, _name, _prop)


def is_same_size(self: Tensor, other: Tensor) -> bool:
    """Whether ``self`` and ``other`` have the same shape.

    Example:
        >>> import ndgrad
        >>> ndgrad.ones(2, 3).is_same_size(ndgrad.zeros(2, 3))
        True
    """
    check_tensor(other, "is_same_size", "other", 1)
    return self._data.shape == other._data.shape


def is_signed(self: Tensor) -> bool:
    """Whether the dtype is signed (every dtype but ``uint8`` and ``bool``).

    Example:
        >>> import ndgrad
        >>> ndgrad.tensor([1], dtype=ndgrad.uint8).is_signed()
        False
    """
    return self._data.dtype.kind not in "ub"


def is_nonzero(self: Tensor) -> bool:
    """The truth of a one-element tensor (torch's errors for more or fewer elements).

    Example:
        >>> import ndgrad
        >>> ndgrad.tensor([0.5]).is_nonzero()
        True
    """
    n = self._data.size
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(self._data.reshape(-1)[0])


def is_set_to(self: Tensor, tensor: Tensor) -> bool:
    """Whether both tensors view the same memory with the same offset, shape and strides.

    Example:
        >>> import ndgrad
        >>> x = ndgrad.ones(3)
        >>> x.is_set_to(x), x.is_set_to(x.clone())
        (True, False)
    """
    check_tensor(tensor, "is_set_to", "tensor", 1)
    a, b = self._data, tensor._data
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.shape == b.shape and a.strides == b.strides)


def dim_order(self: Tensor, *, ambiguity_check: Any = False) -> tuple:
    """The dimensions from the outermost to the innermost in memory.

    Example:
        >>> import ndgrad
        >>> ndgrad.ones(2, 3, 4, 5).to(memory_format=ndgrad.channels_last).dim_order()
        (0, 2, 3, 1)
    """
    if not isinstance(ambiguity_check, (bool, list)):
        raise TypeError("The ambiguity_check argument must be a bool or a list of memory "
                        "formats.")
    strides = self.stride()
    order = tuple(sorted(range(len(strides)), key=lambda d: -strides[d]))
    if ambiguity_check is not False and len(set(strides)) != len(strides):
        raise RuntimeError("The tensor does not have unique dim order, or cannot map to "
                           "exact one of the given memory formats.")
    return order


def const_data_ptr(self: Tensor) -> int:
    """The address of the first element (as ``data_ptr``).

    Example:
        >>> import ndgrad
        >>> x = ndgrad.ones(2)
        >>> x.const_data_ptr() == x.data_ptr()
        True
    """
    return self.data_ptr()


def chalf(self: Tensor, memory_format: Any = None) -> Tensor:
    """torch's ``complex32`` cast: ndgrad has no 32-bit complex dtype, so it raises."""
    raise TypeError("chalf(): ndgrad has no complex32 (ComplexHalf) dtype; use cfloat()")


def record_stream(self: Tensor, stream: Any) -> None:
    """torch's CPU behaviour: a stream argument it cannot take."""
    raise RuntimeError("unknown parameter type")


def _dense_only(name: str, layout: str = "sparse coordinate tensor layout"):
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        got = "Sparse" if self.is_sparse else "Strided"
        raise RuntimeError(f"{name} expected {layout} but got {got}")
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Sparse COO only: a dense tensor raises torch's error for ``{name}``."
    return method


def sparse_dim(self: Tensor) -> int:
    """A dense tensor has no sparse dimensions (0), as torch's.

    Example:
        >>> import ndgrad
        >>> ndgrad.ones(2, 3).sparse_dim(), ndgrad.ones(2, 3).dense_dim()
        (0, 2)
    """
    return 0


def dense_dim(self: Tensor) -> int:
    """A dense tensor's dimensions are all dense (``ndim``)."""
    return self._data.ndim


def fill_diagonal_(self: Tensor, fill_value: Any, wrap: bool = False) -> Tensor:
    """Fill the main diagonal in place; ``wrap``: a tall matrix's diagonal restarts every
    ``ncols + 1`` rows, as torch's.

    Example:
        >>> import ndgrad
        >>> ndgrad.zeros(2, 2).fill_diagonal_(5.0).tolist()
        [[5.0, 0.0], [0.0, 5.0]]
    """
    d = self._data
    if d.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if d.ndim > 2 and len(set(d.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")

    if self.requires_grad and self.grad_fn is None and _grad_mode.is_grad_enabled():
        # torch fills through a diagonal view of ``self``
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    mask = _creation.tensor(_diag_mask(d.shape, wrap))
    return _inplace.apply_inplace(self, lambda s: ops.pointwise.masked_fill(s, mask, fill_value))


def _diag_mask(shape: tuple, wrap: Any) -> np.ndarray:
    mask = np.zeros(shape, dtype=bool)
    np.fill_diagonal(mask, True, wrap=bool(wrap) and len(shape) == 2)
    return mask


def _removed(name: str, message: str):
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(message)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Removed in torch 1.9: raises torch's RuntimeError for ``{name}``."
    return method


_REMOVED_HEAD = "This function was deprecated since version 1.9 and is now removed."
REMOVED = {
    "solve": f"{_REMOVED_HEAD} `torch.solve` is deprecated in favor of `torch.linalg.solve`. "
             "`torch.linalg.solve` has its arguments reversed and does not return the LU "
             "factorization.\n\nTo get the LU factorization see `torch.lu`, which can be used "
             "with `torch.lu_solve` or `torch.lu_unpack`.\nX = torch.solve(B, A).solution "
             "should be replaced with:\nX = torch.linalg.solve(A, B)",
    "lstsq": f"{_REMOVED_HEAD} `torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n"
             "`torch.linalg.lstsq` has reversed arguments and does not return the QR "
             "decomposition in the returned tuple (although it returns other information "
             "about the problem).\n\nTo get the QR decomposition consider using "
             "`torch.linalg.qr`.\n\nThe returned solution in `torch.lstsq` stored the residuals "
             "of the solution in the last m - n columns of the returned value whenever m > n. "
             "In torch.linalg.lstsq, the residuals are in the field 'residuals' of the "
             "returned named tuple.\n\nThe unpacking of the solution, as in\nX, _ = "
             "torch.lstsq(B, A).solution[:A.size(1)]\nshould be replaced with:\nX = "
             "torch.linalg.lstsq(A, B).solution",
    "eig": f"{_REMOVED_HEAD} `torch.linalg.eig` returns complex tensors of dtype `cfloat` or "
           "`cdouble` rather than real tensors mimicking complex tensors.\n\nL, _ = "
           "torch.eig(A) should be replaced with:\nL_complex = torch.linalg.eigvals(A)\n\nand"
           "\n\nL, V = torch.eig(A, eigenvectors=True) should be replaced with:\nL_complex, "
           "V_complex = torch.linalg.eig(A)",
    "symeig": f"{_REMOVED_HEAD} The default behavior has changed from using the upper "
              "triangular portion of the matrix by default to using the lower triangular "
              "portion.\n\nL, _ = torch.symeig(A, upper=upper) should be replaced with:\nL = "
              "torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\nL, V = "
              "torch.symeig(A, eigenvectors=True) should be replaced with:\nL, V = "
              "torch.linalg.eigh(A, UPLO='U' if upper else 'L')",
    "matrix_rank": f"{_REMOVED_HEAD}\nPlease use the `torch.linalg.matrix_rank` function "
                   "instead. The parameter 'symmetric' was renamed in "
                   "`torch.linalg.matrix_rank()` to 'hermitian'.",
}
REMOVED_FUNCTIONS = {name: _removed(name, msg) for name, msg in REMOVED.items()}

for _name, _fn in {
        "is_same_size": is_same_size, "is_signed": is_signed, "is_nonzero": is_nonzero,
        "is_set_to": is_set_to, "dim_order": dim_order, "const_data_ptr": const_data_ptr,
        "chalf": chalf, "record_stream": record_stream, "storage_type": storage_type,
        "sparse_dim": sparse_dim,
        "dense_dim": dense_dim, "fill_diagonal_": fill_diagonal_,
        "indices": _dense_only("indices"),
        "values": _dense_only("values", "sparse tensor layout"),
        "coalesce": _dense_only("coalesce"),
        "crow_indices": _dense_only("crow_indices", "sparse row compressed tensor layout"),
        "col_indices": _dense_only("col_indices", "sparse row compressed tensor layout"),
        "ccol_indices": _dense_only("ccol_indices", "sparse column compressed tensor layout"),
        "row_indices": _dense_only("row_indices", "sparse column compressed tensor layout"),
        "hardshrink": _act.hardshrink, "prelu": _act.prelu,
        "orgqr": ops.linalg_decomp.householder_product,
        "solve": REMOVED_FUNCTIONS["solve"], "lstsq": REMOVED_FUNCTIONS["lstsq"],
        "eig": REMOVED_FUNCTIONS["eig"], "symeig": REMOVED_FUNCTIONS["symeig"]}.items():
    if _name not in Tensor.__dict__:
        setattr(Tensor, _name, _fn)
