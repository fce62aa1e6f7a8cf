"""How NumPy sees a Tensor: ``np.asarray(t)``, ufuncs on tensors and mixed ndarray operators.

Note [NumPy protocol]
PyTorch's behaviour, followed here:

- ``np.asarray(t)`` / ``np.array(t)`` is ``t.numpy()`` (zero copy; a tensor that requires grad
  refuses with ``numpy()``'s RuntimeError while grad mode is on).
- A ufunc or NumPy function that computes on ``t`` (``np.exp(t)``, ``np.maximum(t, 2)``,
  ``np.argmax(t)``) returns a Tensor: NumPy hands its result to ``Tensor.__array_wrap__``, which
  wraps it without copying; a bool result becomes uint8, as in PyTorch.
- ``np.sum(t)``, ``np.mean(t)``, ``np.max(t)`` call ``t.sum(axis=..., dtype=..., out=...)``,
  which the declared signature refuses with a TypeError, as torch's does.
- A Tensor operator whose other operand is an ndarray (``t + a``, ``t @ a``, ``t < a``) returns
  NotImplemented, as PyTorch's do, so Python asks the ndarray: the arithmetic ones then run as
  NumPy ufuncs on ``np.asarray(t)`` with NumPy's type promotion (``float32 @ float64`` is
  float64) and come back as Tensors; rich comparisons and every ``ndarray <op> tensor`` end in
  Python's TypeError, since NumPy defers to the Tensor's higher ``__array_priority__``.
  ``==`` is the exception: it compares element-wise to a bool Tensor either way round.
  ``a / t`` is ``t.reciprocal() * a`` (PyTorch's ``__rtruediv__``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._dtype import from_numpy_dtype

_ndarray = np.ndarray


def defers_to_numpy(other: Any) -> bool:
    """True when a Tensor operator leaves ``other`` to NumPy (Note [NumPy protocol])."""
    return isinstance(other, _ndarray)


def result_array(arr: Any) -> np.ndarray:
    """The array ``Tensor.__array_wrap__`` wraps (without copying) for a NumPy computation's
    result: bool becomes uint8 as in PyTorch; a dtype tensors cannot hold is PyTorch's
    TypeError."""
    arr = np.asarray(arr)
    if arr.dtype == np.bool_:
        arr = arr.astype(np.uint8)
    from_numpy_dtype(arr.dtype)
    return arr
