"""Helpers shared by the distributions: broadcasting parameters, converting between
probabilities and logits, packing lower-triangular matrices, and a cached property.

Example:
    >>> import ndgrad
    >>> from ndgrad.distributions.utils import broadcast_all, logits_to_probs
    >>> a, b = broadcast_all(ndgrad.zeros(2), 1.0)
    >>> tuple(b.shape), b.tolist()
    ((2,), [1.0, 1.0])
    >>> logits_to_probs(ndgrad.tensor([0.0]), is_binary=True).tolist()
    [0.5]
"""

from __future__ import annotations

import math
from numbers import Number
from typing import Any, Callable, Generic, TypeVar

import ndgrad
from ndgrad.tensor import Tensor

__all__ = ["broadcast_all", "clamp_probs", "euler_constant", "lazy_property", "logits_to_probs",
           "probs_to_logits", "tril_matrix_to_vec", "vec_to_tril_matrix"]

euler_constant = 0.57721566490153286060  # the Euler-Mascheroni constant


def broadcast_all(*values: Any) -> tuple:
    """Tensors and numbers broadcast to one shape; numbers take the dtype of the first tensor
    among the values (else the default dtype)."""
    template = None
    for v in values:
        if isinstance(v, Tensor):
            if template is None:
                template = v
        elif not isinstance(v, Number):
            raise ValueError("Input arguments must all be instances of Number, ndgrad.Tensor or "
                             "objects implementing __torch_function__.")
    if template is None:
        dtype = ndgrad.get_default_dtype()
        tensors = [ndgrad.tensor(float(v), dtype=dtype) for v in values]
    else:
        tensors = [v if isinstance(v, Tensor) else ndgrad.tensor(v, dtype=template.dtype)
                   for v in values]
    return tuple(ndgrad.broadcast_tensors(*tensors))


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities kept one machine epsilon away from 0 and 1."""
    tiny_step = ndgrad.finfo(probs.dtype).eps
    return probs.clamp(min=tiny_step, max=1 - tiny_step)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Sigmoid of binary logits, else a softmax over the last dimension."""
    if is_binary:
        return ndgrad.sigmoid(logits)
    return ndgrad.softmax(logits, dim=-1)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """The inverse of :func:`logits_to_probs` on clamped probabilities (normalized log
    probabilities in the categorical case)."""
    safe = clamp_probs(probs)
    if is_binary:
        return ndgrad.log(safe) - ndgrad.log1p(-safe)
    return ndgrad.log(safe)


def _tril_size(n: int, diag: int) -> int:
    """The side of the square matrix whose triangle below offset ``diag`` has ``n`` entries."""
    side = 0
    while True:
        count = sum(max(0, min(side, r + diag + 1)) for r in range(side))
        if count == n:
            return side
        if count > n or side > n + abs(diag) + 2:
            raise ValueError(f"The size of last dimension is {n} which cannot be expressed as "
                             "the lower triangular part of a square D x D matrix.")
        side += 1


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """Rows of the lower triangle (below offset ``diag``) filled from the last dimension."""
    side = _tril_size(vec.shape[-1], diag)
    rows, cols = ndgrad.tril_indices(side, side, offset=diag)
    flat = vec.new_zeros(tuple(vec.shape[:-1]) + (side * side,))
    where = (rows * side + cols).expand(vec.shape).contiguous()
    return flat.scatter(-1, where, vec).reshape(tuple(vec.shape[:-1]) + (side, side))


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The entries of the lower triangle (below offset ``diag``), row by row."""
    side = mat.shape[-1]
    if not -side <= diag < side:
        raise ValueError(f"diag ({diag}) provided is outside [{-side}, {side - 1}].")
    rows, cols = ndgrad.tril_indices(side, side, offset=diag)
    return mat[..., rows, cols]


T = TypeVar("T")


class lazy_property(Generic[T]):
    """A property computed on first access and then stored on the instance (a later access
    reads the attribute). Accessed on the class it returns itself."""

    def __init__(self, compute: Callable[[Any], T]) -> None:
        self.compute = compute
        self.__doc__ = compute.__doc__
        self.__name__ = compute.__name__

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        if instance is None:
            return self
        with ndgrad.enable_grad():
            result = self.compute(instance)
        setattr(instance, self.compute.__name__, result)
        return result


def _sum_last(x: Tensor, ndims: int) -> Tensor:
    """``x`` summed over its ``ndims`` last dimensions."""
    if ndims == 0:
        return x
    return x.reshape(tuple(x.shape[:x.dim() - ndims]) + (-1,)).sum(-1)


LOG_TWO_PI = math.log(2 * math.pi)
