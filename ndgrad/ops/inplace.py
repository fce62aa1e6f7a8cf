"""In-place ops (``add_``, ``mul_``, ``zero_``, ``x += y`` ...): basic support.

Every in-place op bumps the version counter shared by the tensor and its views. Outside
recording (grad mode off, or nothing requires grad) the result is written into the tensor's
memory. When recording, the op is applied out of place to a snapshot of the tensor (which keeps
the old value and history) and the result is written back; the tensor takes the new node as its
``grad_fn``. In-place ops on views of tensors that require grad (``CopySlices``) are not
supported yet and raise.

Example:
    >>> import ndgrad
    >>> w = ndgrad.ones(2, requires_grad=True)
    >>> with ndgrad.no_grad():
    ...     w -= 0.5
    >>> w, w._version
    (tensor([0.5000, 0.5000], requires_grad=True), 1)
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import _dtype
from ..autograd.grad_mode import _state, no_grad
from ..tensor import Tensor, _new

LEAF_INPLACE_MSG = "a leaf Variable that requires grad is being used in an in-place operation."


def _check_writable(self: Tensor) -> None:
    if not self._data.flags.writeable:
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation.")


def apply_inplace(self: Tensor, fn: Callable[..., Tensor], *args: Any) -> Tensor:
    """Compute ``fn(self, *args)`` and store it into ``self``, keeping autograd consistent."""
    recording = _state.enabled and (self._requires_grad or any(
        isinstance(a, Tensor) and a._requires_grad for a in args))
    if recording and self._grad_fn is None and self._requires_grad:
        raise RuntimeError(LEAF_INPLACE_MSG)
    _check_writable(self)
    if not recording:
        with no_grad():
            res = fn(self, *args)
        _store(self, res)
        self._bump_version()
        return self
    base = self._base
    if base is not None and (base._requires_grad or self._requires_grad):
        raise RuntimeError(
            "ndgrad does not support in-place operations on views of tensors that require grad "
            "yet (PyTorch's CopySlices). Apply the operation out of place, e.g. "
            "`y = y * 2` instead of `y.mul_(2)`.")
    snapshot = _new(Tensor)
    snapshot._data = self._data.copy()
    snapshot._grad_fn = self._grad_fn
    snapshot._output_nr = self._output_nr
    snapshot._requires_grad = self._requires_grad
    res = fn(snapshot, *args)
    _store(self, res)
    self._grad_fn = res._grad_fn
    self._output_nr = res._output_nr
    self._requires_grad = res._requires_grad
    self._bump_version()
    return self


def _store(self: Tensor, res: Tensor) -> None:
    src = res._data
    dst = self._data
    if src.dtype != dst.dtype and not np.can_cast(src.dtype, dst.dtype, "same_kind"):
        raise RuntimeError(
            f"result type {_dtype._FROM_NP[src.dtype]._torch_name} can't be cast to the desired "
            f"output type {_dtype._FROM_NP[dst.dtype]._torch_name}")
    if src.shape != dst.shape:
        try:
            np.broadcast_to(src, dst.shape)
        except ValueError:
            raise RuntimeError(
                f"output with shape {list(dst.shape)} doesn't match the broadcast shape "
                f"{list(np.broadcast_shapes(src.shape, dst.shape))}") from None
    np.copyto(dst, src, casting="unsafe")


def fill_(self: Tensor, value: Any) -> Tensor:
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.ndim} dimensions.")
        return apply_inplace(self, lambda s, v: v.expand(s.shape) + s * 0, value)
    return apply_inplace(self, lambda s: s * 0 + value)


def zero_(self: Tensor) -> Tensor:
    return apply_inplace(self, lambda s: s * 0)


def copy_(self: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'other' (position 1) must be Tensor, not "
                        f"{type(src).__name__}")
    return apply_inplace(self, lambda s, o: s * 0 + o.to(s.dtype), src)
