"""torch's window factories: ``hann_window``, ``hamming_window``, ``blackman_window``,
``bartlett_window``, ``kaiser_window``. ``periodic=True`` (the default) is the window of length
``window_length + 1`` without its last point (for spectral analysis); ``periodic=False`` the
symmetric window. Values are computed in float64 and rounded to ``dtype`` (a floating dtype,
the default dtype if not given).

Example:
    >>> import ndgrad
    >>> ndgrad.hann_window(4).tolist()
    [0.0, 0.5, 1.0, 0.5]
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import _creation, _dtype
from .tensor import Tensor


def _window(name: str, length: int, periodic: bool, dtype: Any, requires_grad: bool,
            values: Callable[[np.ndarray, int], np.ndarray]) -> Tensor:
    if length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={length}")
    d = dtype if dtype is not None else _dtype.get_default_dtype()
    if d.np.kind != "f" and d.np.name != "bfloat16":
        raise RuntimeError(f"{name} expects floating point dtypes, got: {d._torch_name}")
    if length == 0:
        out = np.zeros(0)
    elif length == 1:
        out = np.ones(1)
    else:
        n = length + 1 if periodic else length
        out = values(np.arange(n, dtype=np.float64), n)[:length]
    return _creation.tensor(out.astype(d.np), requires_grad=requires_grad)


def _cosine(coefficients: tuple) -> Callable[[np.ndarray, int], np.ndarray]:
    def values(k: np.ndarray, n: int) -> np.ndarray:
        phase = 2 * np.pi * k / (n - 1)
        return sum(((-1) ** i) * c * np.cos(i * phase) for i, c in enumerate(coefficients))
    return values


def hann_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                layout: Any = None, device: Any = None, requires_grad: bool = False,
                pin_memory: Any = None) -> Tensor:
    """``0.5 - 0.5 cos(2 pi k / (N - 1))``."""
    return _window("hann_window", window_length, periodic, dtype, requires_grad,
                   _cosine((0.5, 0.5)))


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype: Any = None, layout: Any = None,
                   device: Any = None, requires_grad: bool = False,
                   pin_memory: Any = None) -> Tensor:
    """``alpha - beta cos(2 pi k / (N - 1))``.

    Example:
        >>> import ndgrad
        >>> ndgrad.hamming_window(3, periodic=False, dtype=ndgrad.float64).tolist()
        [0.08000000000000002, 1.0, 0.08000000000000002]
    """
    return _window("hamming_window", window_length, periodic, dtype, requires_grad,
                   _cosine((alpha, beta)))


def blackman_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                    layout: Any = None, device: Any = None, requires_grad: bool = False,
                    pin_memory: Any = None) -> Tensor:
    """``0.42 - 0.5 cos(2 pi k / (N - 1)) + 0.08 cos(4 pi k / (N - 1))``."""
    return _window("blackman_window", window_length, periodic, dtype, requires_grad,
                   _cosine((0.42, 0.5, 0.08)))


def _bartlett(k: np.ndarray, n: int) -> np.ndarray:
    return 1 - np.abs(2 * k / (n - 1) - 1)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                    layout: Any = None, device: Any = None, requires_grad: bool = False,
                    pin_memory: Any = None) -> Tensor:
    """The triangle ``1 - |2k / (N - 1) - 1|``."""
    return _window("bartlett_window", window_length, periodic, dtype, requires_grad, _bartlett)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *,
                  dtype: Any = None, layout: Any = None, device: Any = None,
                  requires_grad: bool = False, pin_memory: Any = None) -> Tensor:
    """``I0(beta sqrt(1 - (2k / (N - 1) - 1)^2)) / I0(beta)``."""
    def values(k: np.ndarray, n: int) -> np.ndarray:
        x = 2 * k / (n - 1) - 1
        return np.i0(beta * np.sqrt(np.clip(1 - x * x, 0, None))) / np.i0(beta)
    return _window("kaiser_window", window_length, periodic, dtype, requires_grad, values)
