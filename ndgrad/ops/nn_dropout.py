"""nn op family: dropout, dropout1d/2d/3d (channel-wise), alpha_dropout, feature_alpha_dropout.

Each is a product with a noise tensor drawn from ndgrad's generator (``ndgrad.manual_seed``),
recorded as PyTorch records it: ``input * noise`` (``MulBackward0``), and for the alpha forms
``input * a + b`` (``AddBackward0`` of ``MulBackward0``). The noise keeps an element (or, for
the feature forms, a whole channel ``input[n, c]``) with probability ``1 - p``. Dropout scales
kept elements by ``1 / (1 - p)``; alpha dropout sets dropped elements to SELU's negative
saturation value and applies the affine map that keeps zero mean and unit variance. With
``training=False``, ``p == 0`` or an empty input the input itself is returned.

Example:
    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> x = ndgrad.ones(1000)
    >>> y = F.dropout(x, 0.25)
    >>> sorted({round(v, 4) for v in y.tolist()})
    [0.0, 1.3333]
    >>> F.dropout(x, 0.25, training=False) is x
    True
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from .._generator import bernoulli_array, draw, memory_order
from ..tensor import Tensor, _wrap
from ._batching import call as _bcall
from .views_inplace import apply_inplace

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
           "feature_alpha_dropout"]

# Warnings point at the caller of the public function: one frame more than PyTorch's
# stacklevels for the argument-checking wrapper of ndgrad.nn.functional.
SIGNATURES = """
dropout(Tensor input, float p=0.5, bool training=True, bool inplace=False)
dropout1d(Tensor input, float p=0.5, bool training=True, bool inplace=False)
dropout2d(Tensor input, float p=0.5, bool training=True, bool inplace=False)
dropout3d(Tensor input, float p=0.5, bool training=True, bool inplace=False)
alpha_dropout(Tensor input, float p=0.5, bool training=False, bool inplace=False)
feature_alpha_dropout(Tensor input, float p=0.5, bool training=False, bool inplace=False)
"""

# SELU's negative saturation value, scale * alpha (see nn_activation.selu).
_ALPHA = 1.0507009873554804934193349852946 * 1.6732632423543772848170429916717


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(shape: tuple, p: float, like: Any = None, perm: Any = None) -> np.ndarray:
    """True with probability ``1 - p``: torch's ``bernoulli_(1 - p)`` draws (Note [Random
    streams] in ndgrad/_generator.py), in the memory order of ``like`` (the input, whose
    ``empty_like`` torch fills) when given, or in the order ``perm`` (``memory_order``)."""
    return bernoulli_array(shape, 1.0 - p, None, like=like, perm=perm)


def _dropout_noise(shape: tuple, p: float, dt: np.dtype, perm: Any) -> np.ndarray:
    """Dropout's noise: kept elements ``1 / (1 - p)``, dropped ones 0, in ``dt``."""
    keep = _keep_mask(shape, p, perm=perm)
    scale = np.asarray(1, dt) / np.asarray(1 - p, dt)
    return (keep * scale).astype(dt)


def _alpha_dropout_noise(shape: tuple, p: float, dt: np.dtype, perm: Any) -> tuple:
    """Alpha dropout's noise ``(a * mask, b)``: the result is ``input * a * mask + b``."""
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    mask = _keep_mask(shape, p, perm=perm).astype(dt)
    return (mask * a).astype(dt), ((mask - 1) * (_ALPHA * a) + _ALPHA * a * p).astype(dt)


def _noise_shape(x: np.ndarray, feature: Any) -> tuple:
    """The noise's shape: the input's, or for channel-wise dropout one value per
    ``input[n, c]`` (``feature == "unbatched"``: per ``input[c]``, no batch dim)."""
    if not feature:
        return x.shape
    if feature == "unbatched":
        return x.shape[:1] + (1,) * (x.ndim - 1)
    if x.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return x.shape[:2] + (1,) * (x.ndim - 2)


def _check_float(x: np.ndarray) -> None:
    if x.dtype.kind in "iub":
        name = {"b": "Bool"}.get(x.dtype.kind, "Long" if x.dtype == np.int64 else
                                 str(x.dtype).capitalize())
        raise RuntimeError(f"result type Float can't be cast to the desired output type {name}")


def _run(input: Tensor, fn, inplace: bool) -> Tensor:
    if inplace:
        return apply_inplace(input, fn)
    return fn(input)


def _dropout_impl(input: Tensor, p: float, training: bool, inplace: bool, feature: Any,
                  alpha: bool) -> Tensor:
    if input._blevel:  # Note [Batched backward]
        r = _bcall(_dropout_impl, input, p, training, inplace, feature, alpha)
        if r is not NotImplemented:
            return r
    _check_p(p)
    x = input._data
    if not training or p == 0 or x.size == 0:
        return input
    _check_float(x)
    shape = _noise_shape(x, feature)
    dt = x.dtype
    if p == 1:
        zeros = _wrap(np.zeros(shape, dt))
        return _run(input, lambda s: s * zeros, inplace)
    # the draws follow the input's memory order, fixed when traced (Note [Draws in traced
    # functions] in ndgrad/_generator.py: a compiled call draws what this call draws)
    order = None if feature else memory_order(x)
    perm = tuple(order) if order is not None else None
    if not alpha:
        noise = _wrap(draw(_dropout_noise, shape, float(p), dt, perm))
        return _run(input, lambda s: s * noise, inplace)
    a_mask, b_arr = draw(_alpha_dropout_noise, shape, float(p), dt, perm)
    noise, b = _wrap(a_mask), _wrap(b_arr)
    return _run(input, lambda s: s * noise + b, inplace)


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the others by ``1 / (1 - p)``."""
    return _dropout_impl(input, p, training, inplace, False, False)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of ``(N, C, L)`` or ``(C, L)`` with probability ``p`` (kept ones
    scaled by ``1 / (1 - p)``)."""
    _check_p(p)
    nd = input.dim()          # logical: one entry's inside vmap
    if nd not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {nd}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs).")
    # an unbatched (C, L) input: one noise value per channel input[c]
    return _dropout_impl(input, p, training, inplace, True if nd == 3 else "unbatched", False)


def _deprecated_rank(name: str, nd: int, ok: tuple, spatial: int) -> None:
    if nd not in ok:
        warnings.warn(
            f"{name}: Received a {nd}-D input to {name}, which is deprecated and will result in "
            f"an error in a future release. To retain the behavior and silence this warning, "
            f"please use dropout instead. Note that {name} exists to provide channel-wise "
            f"dropout on inputs with {spatial} spatial dimensions, a channel dimension, and an "
            f"optional batch dimension (i.e. {ok[0]}D or {ok[1]}D inputs).", stacklevel=4)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of ``(N, C, H, W)`` with probability ``p`` (a 3-D input is taken
    as ``(N, C, L)``, with PyTorch's warning)."""
    _check_p(p)
    nd = input.dim()          # logical: one entry's inside vmap
    _deprecated_rank("dropout2d", nd, (3, 4), 2)
    if nd == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=3)
    return _dropout_impl(input, p, training, inplace, True, False)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` with probability
    ``p``."""
    _check_p(p)
    nd = input.dim()          # logical: one entry's inside vmap
    _deprecated_rank("dropout3d", nd, (4, 5), 3)
    return _dropout_impl(input, p, training, inplace, True if nd == 5 else "unbatched", False)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """Dropout for SELU networks: dropped elements take SELU's negative saturation value and
    an affine map keeps the mean and variance of the input."""
    return _dropout_impl(input, p, training, inplace, False, True)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """``alpha_dropout`` on whole channels (``input[n, c]``)."""
    return _dropout_impl(input, p, training, inplace, True, True)

