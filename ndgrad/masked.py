"""Masked reductions and normalizations (``torch.masked``) on strided tensors.

Each op replaces the masked-out elements of its input (where ``mask`` is False; the mask
broadcasts to the input's shape) by the identity of the operation (0 for sums, 1 for products,
-inf for maxima and log-sum-exp, +inf for minima, NaN for the median) and then runs the ordinary
op, as PyTorch composes them; ``mean``, ``var`` and ``std`` divide by the number of masked-in
elements. ``mask=None`` means every element is masked in.

Example:
    >>> import ndgrad
    >>> x = ndgrad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    >>> mask = ndgrad.tensor([[True, False, True], [False, False, True]])
    >>> ndgrad.masked.sum(x, 1, mask=mask)
    tensor([4., 6.])
    >>> ndgrad.masked.amax(x, 1, mask=mask)
    tensor([3., 6.])
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from . import _dtype
from ._signature import wrap
from .ops._dispatch import apply
from .ops.binary import logaddexp as _logaddexp
from .ops.shape import expand
from .ops import pointwise as _pw
from .ops import reduction as _red
from .ops.linalg import vector_norm as _vector_norm
from .ops.scan import cumprod as _cumprod
from .ops.scan import cumsum as _cumsum
from .ops.softmax import log_softmax as _log_softmax
from .ops.softmax import logsumexp as _logsumexp
from .ops.softmax import softmax as _softmax
from .ops.sort import nanmedian as _nanmedian
from .ops._util import wrap_dim
from .tensor import Tensor, _wrap

__all__ = ["sum", "prod", "cumsum", "cumprod", "amax", "amin", "argmax", "argmin", "mean",
           "median", "norm", "var", "std", "softmax", "log_softmax", "softmin", "normalize",
           "logaddexp", "logsumexp"]

# ---------------------------------------------------------------------------- helpers
def _dims(dim: Any, ndim: int) -> tuple:
    """The reduced dims, sorted; None or () mean all of them."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    n = max(ndim, 1)
    seq = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    out: list = []
    for d in seq:
        d = int(d)
        if d in out or (d % n) in out:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        out.append(wrap_dim(d, ndim))
    return tuple(sorted(out))


def _one_dim(dim: Any, ndim: int) -> int:
    return _dims(dim, ndim)[0] if ndim else wrap_dim(int(dim), 1)


def _input_mask(input: Tensor, mask: Tensor) -> Tensor:
    """``mask`` broadcast to the input's shape, as bool."""
    m = mask._data
    if m.shape != input._data.shape:
        if m.ndim > input._data.ndim:
            raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality "
                             "higher than of the input)")
        m = expand(mask, input._data.shape)._data      # PyTorch's error if not expandable
    return _wrap(np.array(m, dtype=bool))


def _identity(name: str, input: Tensor, ord: Any = None) -> Optional[Tensor]:
    x = input._data
    kind = x.dtype.kind
    floating = kind == "f" or x.dtype == _dtype.bfloat16.np
    if name in ("sum", "cumsum"):
        v: Any = 0
    elif name in ("prod", "cumprod"):
        v = 1
    elif name in ("amax", "argmax", "logaddexp", "logsumexp"):
        if floating or kind == "c":
            v = -math.inf
        elif kind in "iu":
            v = np.iinfo(x.dtype).min
        else:
            raise NotImplementedError(f"identity of {name} on "
                                      f"{_dtype._FROM_NP[x.dtype]} input")
    elif name in ("amin", "argmin"):
        if floating:
            v = math.inf
        elif kind in "iu":
            v = np.iinfo(x.dtype).max
        else:
            raise NotImplementedError(f"identity of {name} on "
                                      f"{_dtype._FROM_NP[x.dtype]} input")
    elif name == "norm":
        v = math.inf if ord == -math.inf else 0
    elif name == "median":
        return _wrap(np.array(np.nan, dtype=x.dtype if floating else np.float32))
    else:
        return None
    return _wrap(np.array(v, dtype=x.dtype))


def _combine(name: str, input: Tensor, mask: Optional[Tensor], ord: Any = None) -> Tensor:
    """The input with its masked-out elements replaced by the identity of ``name``."""
    if mask is None:
        return input
    return _pw.where(_input_mask(input, mask), input, _identity(name, input, ord))


def _cast(t: Tensor, dtype: Any) -> Tensor:
    return t if dtype is None else t.to(dtype)


# ---------------------------------------------------------------------------- reductions
def sum(input: Tensor, dim: Any = None, *, keepdim: bool = False,  # noqa: A001
        dtype: Any = None, mask: Optional[Tensor] = None) -> Tensor:
    """Sum of the masked-in elements over ``dim`` (all dims by default).

    >>> import ndgrad
    >>> ndgrad.masked.sum(ndgrad.tensor([1.0, 2.0]), mask=ndgrad.tensor([True, False]))
    tensor(1.)
    """
    if dtype is None:
        dtype = input.dtype
        if input._data.dtype.kind in "biu":
            dtype = _dtype.int64
    dims = _dims(dim, input.ndim)
    m = _combine("sum", input, mask)
    if not dims:             # sum over an empty list of dims (a 0-d input): SumBackward1
        dt = _dtype.to_dtype(dtype).np
        _red._check_autograd_dtype(m, dt)
        return apply(_red.SUM_DIM, (m,), (m._data,), ((), bool(keepdim), dt))
    return _red.sum(m, dims, bool(keepdim), dtype=dtype)


def prod(input: Tensor, dim: Any = None, *, keepdim: bool = False,
         dtype: Any = None, mask: Optional[Tensor] = None) -> Tensor:
    """Product of the masked-in elements over ``dim`` (one dim at a time, last first)."""
    if dtype is None:
        dtype = input.dtype
        if input._data.dtype.kind in "biu":
            dtype = _dtype.int64
    dims = _dims(dim, input.ndim)
    r = _combine("prod", input, mask).to(dtype)
    for d in reversed(dims):
        r = _red.prod(r, d, bool(keepdim))
    return r


def cumsum(input: Tensor, dim: int, *, dtype: Any = None,
           mask: Optional[Tensor] = None) -> Tensor:
    """Cumulative sum along ``dim``, masked-out elements counting as 0."""
    dtype = input.dtype if dtype is None else dtype
    d = _one_dim(dim, input.ndim)
    return _cumsum(_combine("sum", input, mask), d, dtype=dtype).to(dtype)


def cumprod(input: Tensor, dim: int, *, dtype: Any = None,
            mask: Optional[Tensor] = None) -> Tensor:
    """Cumulative product along ``dim``, masked-out elements counting as 1."""
    dtype = input.dtype if dtype is None else dtype
    d = _one_dim(dim, input.ndim)
    return _cumprod(_combine("prod", input, mask), d, dtype=dtype).to(dtype)


def amax(input: Tensor, dim: Any = None, *, keepdim: bool = False,
         dtype: Any = None, mask: Optional[Tensor] = None) -> Tensor:
    """Maximum of the masked-in elements (-inf where none is)."""
    dtype = input.dtype if dtype is None else dtype
    m = _combine("amax", input, mask)
    return _red.amax(m, _dims(dim, m.ndim), bool(keepdim)).to(dtype)


def amin(input: Tensor, dim: Any = None, *, keepdim: bool = False,
         dtype: Any = None, mask: Optional[Tensor] = None) -> Tensor:
    """Minimum of the masked-in elements (+inf where none is)."""
    dtype = input.dtype if dtype is None else dtype
    m = _combine("amin", input, mask)
    return _red.amin(m, _dims(dim, m.ndim), bool(keepdim)).to(dtype)


def argmax(input: Tensor, dim: Optional[int] = None, *, keepdim: bool = False,
           dtype: Any = None, mask: Optional[Tensor] = None) -> Tensor:
    """Index of the maximum of the masked-in elements."""
    dtype = input.dtype if dtype is None else dtype
    return _red.argmax(_combine("argmax", input, mask), dim, bool(keepdim)).to(dtype)


def argmin(input: Tensor, dim: Optional[int] = None, *, keepdim: bool = False,
           dtype: Any = None, mask: Optional[Tensor] = None) -> Tensor:
    """Index of the minimum of the masked-in elements."""
    dtype = input.dtype if dtype is None else dtype
    return _red.argmin(_combine("argmin", input, mask), dim, bool(keepdim)).to(dtype)


def _count(input: Tensor, dim: Any, keepdim: bool, mask: Optional[Tensor]) -> Tensor:
    if mask is None:
        return sum(_wrap(np.ones(input._data.shape, dtype=np.int64)), dim, keepdim=keepdim)
    return _red.sum(_input_mask(input, mask), _dims(dim, input.ndim), bool(keepdim))


def mean(input: Tensor, dim: Any = None, *, keepdim: bool = False,
         dtype: Any = None, mask: Optional[Tensor] = None) -> Tensor:
    """Mean of the masked-in elements (NaN where none is).

    >>> import ndgrad
    >>> ndgrad.masked.mean(ndgrad.tensor([1.0, 2.0, 6.0]), mask=ndgrad.tensor([True, False, True]))
    tensor(3.5000)
    """
    source = "Optional"
    if dtype is None:
        dtype, source = input.dtype, "Input"
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"mean(): Could not infer output dtype. {source} dtype must be either "
                         f"a floating point or complex dtype. Got: {dtype}")
    count = _count(input, dim, keepdim, mask)
    inmask = None if mask is None else _input_mask(input, mask)
    total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=inmask)
    return total / count


def median(input: Tensor, dim: int = -1, *, keepdim: bool = False, dtype: Any = None,
           mask: Optional[Tensor] = None) -> Tensor:
    """Median of the masked-in elements along ``dim`` (values only)."""
    dtype = input.dtype if dtype is None else dtype
    d = _one_dim(dim, input.ndim)
    is_float = input.dtype.is_floating_point
    if not is_float:
        input = input.to(_dtype.float32)
    out = _nanmedian(_combine("median", input, mask), d, bool(keepdim)).values
    if is_float:
        return out
    if np.isnan(out._data).any():
        raise ValueError("masked median expects no fully masked out rows if dtype is not "
                         "floating point")
    return out.to(dtype)


def logsumexp(input: Tensor, dim: Any = None, *, keepdim: bool = False, dtype: Any = None,
              mask: Optional[Tensor] = None) -> Tensor:
    """``log(sum(exp(x)))`` of the masked-in elements."""
    dtype = input.dtype if dtype is None else dtype
    dims = _dims(dim, input.ndim)
    return _logsumexp(_combine("logsumexp", input, mask), dims, bool(keepdim)).to(dtype)


def logaddexp(input: Tensor, other: Tensor, *, dtype: Any = None,
              input_mask: Optional[Tensor] = None,
              other_mask: Optional[Tensor] = None) -> Tensor:
    """``log(exp(input) + exp(other))`` with masked-out elements as -inf."""
    dtype = input.dtype if dtype is None else dtype
    a = _combine("logaddexp", input, input_mask)
    b = _combine("logaddexp", other, other_mask)
    return _logaddexp(a, b).to(dtype)


def norm(input: Tensor, ord: Any = 2.0, dim: Any = None, *, keepdim: bool = False,
         dtype: Any = None, mask: Optional[Tensor] = None) -> Tensor:
    """Vector ``ord``-norm of the masked-in elements."""
    dtype = input.dtype if dtype is None else dtype
    m = _combine("norm", input, mask, ord)
    return _vector_norm(m, ord, _dims(dim, input.ndim), bool(keepdim), dtype=dtype)


def _std_var(input: Tensor, dim: Any, unbiased: Any, correction: Any, keepdim: bool,
             dtype: Any, mask: Optional[Tensor], take_sqrt: bool) -> Tensor:
    if unbiased is not None and correction is not None:
        raise AssertionError("Only one of unbiased and correction may be given")
    corr = 1.0
    if unbiased is not None:
        corr = 1.0 if unbiased else 0.0
    if correction is not None:
        corr = float(correction)
    if dtype is None:
        dtype = input.dtype
        if not (dtype.is_floating_point or dtype.is_complex):
            dtype = _dtype.float32
    compute = dtype if (dtype.is_floating_point or dtype.is_complex) else _dtype.float32
    if mask is None:
        count = sum(_wrap(np.ones(input._data.shape, dtype=np.int64)), dim, keepdim=True)
        total = sum(input, dim, keepdim=True, dtype=dtype)
        inmask = None
    else:
        inmask = _input_mask(input, mask)
        count = _red.sum(inmask, _dims(dim, input.ndim), True)
        total = sum(input, dim, keepdim=True, dtype=dtype, mask=inmask)
    x = input - total / count
    sq = sum(x * x.conj(), dim, keepdim=keepdim, dtype=compute, mask=inmask)
    if not keepdim:
        count = count.reshape(sq.shape)
    if corr != 0:
        real = _dtype.float32 if compute == _dtype.complex64 else (
            _dtype.float64 if compute == _dtype.complex128 else compute)
        count = count.to(real) - corr
        count = _pw.maximum(count, _wrap(np.zeros((), dtype=count._data.dtype)))
    out = (sq / count).to(dtype)
    return out.sqrt() if take_sqrt else out


def var(input: Tensor, dim: Any = None, unbiased: Any = None, *, correction: Any = None,
        keepdim: bool = False, dtype: Any = None, mask: Optional[Tensor] = None) -> Tensor:
    """Variance of the masked-in elements (``correction`` default 1)."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, False)


def std(input: Tensor, dim: Any = None, unbiased: Any = None, *, correction: Any = None,
        keepdim: bool = False, dtype: Any = None, mask: Optional[Tensor] = None) -> Tensor:
    """Standard deviation of the masked-in elements (``correction`` default 1)."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, True)


# ---------------------------------------------------------------------------- normalizations
def softmax(input: Tensor, dim: int, *, dtype: Any = None,
            mask: Optional[Tensor] = None) -> Tensor:
    """Softmax along ``dim`` over the masked-in elements (masked-out ones get 0)."""
    dtype = input.dtype if dtype is None else dtype
    d = _one_dim(dim, input.ndim)
    return _softmax(_combine("amax", input, mask), d, dtype)


def log_softmax(input: Tensor, dim: int, *, dtype: Any = None,
                mask: Optional[Tensor] = None) -> Tensor:
    """Log-softmax along ``dim`` over the masked-in elements (masked-out ones get -inf)."""
    dtype = input.dtype if dtype is None else dtype
    d = _one_dim(dim, input.ndim)
    return _log_softmax(_combine("amax", input, mask), d, dtype)


def softmin(input: Tensor, dim: int, *, dtype: Any = None,
            mask: Optional[Tensor] = None) -> Tensor:
    """``softmax(-input)`` along ``dim`` over the masked-in elements."""
    dtype = input.dtype if dtype is None else dtype
    d = _one_dim(dim, input.ndim)
    return _softmax(-_combine("amin", input, mask), d, dtype)


def normalize(input: Tensor, ord: Any, dim: Any, *, eps: float = 1e-12, dtype: Any = None,
              mask: Optional[Tensor] = None) -> Tensor:
    """``input`` divided by its masked ``ord``-norm over ``dim`` (at least ``eps``)."""
    dtype = input.dtype if dtype is None else dtype
    m = _combine("sum", input, mask)
    nrm = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    denom = _pw.maximum(nrm, _wrap(np.array(eps, dtype=nrm._data.dtype)))
    return m / denom



# ---------------------------------------------------------------------------- signatures
# Note [Declared signatures] (ndgrad/_signature.py): each public function checks its arguments.
_RED = "*, bool? keepdim=False, ScalarType? dtype=None, Tensor? mask=None"
_NORMALIZE = "*, ScalarType? dtype=None, Tensor? mask=None"
_MASKS = "Tensor? input_mask=None, Tensor? other_mask=None"
_SCHEMAS = f"""
sum(Tensor input, int[1]? dim=None, {_RED})
prod(Tensor input, int[1]? dim=None, {_RED})
amax(Tensor input, int[1]? dim=None, {_RED})
amin(Tensor input, int[1]? dim=None, {_RED})
argmax(Tensor input, int? dim=None, {_RED})
argmin(Tensor input, int? dim=None, {_RED})
mean(Tensor input, int[1]? dim=None, {_RED})
median(Tensor input, int dim=-1, {_RED})
logsumexp(Tensor input, int[1]? dim=None, {_RED})
norm(Tensor input, float? ord=2.0, int[1]? dim=None, {_RED})
cumsum(Tensor input, int dim, {_NORMALIZE})
cumprod(Tensor input, int dim, {_NORMALIZE})
softmax(Tensor input, int dim, {_NORMALIZE})
log_softmax(Tensor input, int dim, {_NORMALIZE})
softmin(Tensor input, int dim, {_NORMALIZE})
normalize(Tensor input, float ord, int dim, *, float eps=1e-12, {_NORMALIZE[3:]})
logaddexp(Tensor input, Tensor other, *, ScalarType? dtype=None, {_MASKS})
"""
_VAR = ("(Tensor input, int[1]? dim=None, bool? unbiased=None, *, Scalar? correction=None, "
        "bool? keepdim=False, ScalarType? dtype=None, Tensor? mask=None)")


def _install() -> None:
    g = globals()
    for schema in [s.strip() for s in _SCHEMAS.strip().splitlines()] + ["var" + _VAR,
                                                                      "std" + _VAR]:
        name = schema.split("(", 1)[0]
        g[name] = wrap(schema, g[name])


_install()
