"""Gradient clipping, as ``torch.nn.utils.clip_grad``: ``clip_grad_norm_`` (any ``norm_type``,
``inf`` included), ``clip_grad_value_``, ``get_total_norm`` and ``clip_grads_with_norm_``. They
run under ``no_grad``; ``foreach`` is accepted (there is one CPU path).

    >>> import ndgrad
    >>> from ndgrad.nn.utils import clip_grad_norm_
    >>> p = ndgrad.nn.Parameter(ndgrad.ones(2))
    >>> p.grad = ndgrad.tensor([3.0, 4.0])
    >>> clip_grad_norm_([p], max_norm=1.0)
    tensor(5.)
    >>> p.grad
    tensor([0.6000, 0.8000])
"""

from __future__ import annotations

import functools
import types
import warnings
from typing import Any, Callable, Iterable, Optional, Union

from ... import _creation
from ... import stack
from ...autograd import grad_mode
from ...ops import linalg as _linalg
from ...tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]

_tensor_or_tensors = Union[Tensor, Iterable[Tensor]]


def _no_grad(func: Callable) -> Callable:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with grad_mode.no_grad():
            return func(*args, **kwargs)
    return wrapper


def _as_list(tensors: Any) -> list:
    if isinstance(tensors, Tensor):
        return [tensors]
    return list(tensors)


@_no_grad
def get_total_norm(tensors: _tensor_or_tensors, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: Optional[bool] = None) -> Tensor:
    """The ``norm_type`` norm of the norms of ``tensors`` (the norm of their concatenation)."""
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return _creation.tensor(0.0)
    norms = [_linalg.vector_norm(t, norm_type) for t in tensors]
    total_norm = _linalg.vector_norm(_creation_stack(norms), norm_type)
    if error_if_nonfinite and bool(total_norm.isnan() | total_norm.isinf()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return total_norm


def _creation_stack(norms: list) -> Tensor:
    return stack(norms)


@_no_grad
def clip_grads_with_norm_(parameters: _tensor_or_tensors, max_norm: float,
                          total_norm: Tensor, foreach: Optional[bool] = None) -> None:
    """Scale the gradients by ``min(1, max_norm / (total_norm + 1e-6))``."""
    parameters = _as_list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    max_norm = float(max_norm)
    if len(grads) == 0:
        return
    clip_coef = max_norm / (total_norm + 1e-6)
    clip_coef_clamped = clip_coef.clamp(max=1.0)
    for g in grads:
        g.mul_(clip_coef_clamped.to(g.dtype))


@_no_grad
def clip_grad_norm_(parameters: _tensor_or_tensors, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False,
                    foreach: Optional[bool] = None) -> Tensor:
    """Clip the gradients of ``parameters`` in place so that their total ``norm_type`` norm is
    at most ``max_norm``; returns the total norm before clipping."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and len(parameters) == 0:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.",
                          stacklevel=3)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters: _tensor_or_tensors, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: Optional[bool] = None) -> Tensor:
    """Deprecated alias of ``clip_grad_norm_``."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@_no_grad
def clip_grad_value_(parameters: _tensor_or_tensors, clip_value: float,
                     foreach: Optional[bool] = None) -> None:
    """Clamp every gradient to ``[-clip_value, clip_value]`` in place."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    clip_value = float(clip_value)
    for p in parameters:
        if p.grad is not None:
            p.grad.clamp_(min=-clip_value, max=clip_value)
