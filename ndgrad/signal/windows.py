"""Window functions of ``torch.signal.windows``, computed with NumPy from their definitions.

Each takes the window length ``M`` and ``sym``: True gives the symmetric window (for filter
design), False the periodic one (for spectral analysis: the symmetric window of ``M + 1`` points
without its last point). ``dtype`` must be float32 or float64 (default: the default dtype); the
result is a leaf (``requires_grad`` as asked), as PyTorch's factories give.

Example:
    >>> import ndgrad
    >>> ndgrad.signal.windows.bartlett(5).tolist()
    [0.0, 0.5, 1.0, 0.5, 0.0]
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional, Sequence

import numpy as np

from .. import _dtype
from .._signatures import SIGNAL_WINDOWS_FUNCTIONS, install_namespace
from ..tensor import Tensor, _wrap

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _checked(name: str, M: int, dtype: Any, layout: Any) -> Any:
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and not str(layout).endswith("strided"):
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    dt = _dtype.get_default_dtype() if dtype is None else _dtype.to_dtype(dtype)
    if dt.np not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: torch.{dt.name}")
    return dt


def _window(name: str, M: int, sym: bool, dtype: Any, layout: Any, requires_grad: bool,
            values: Callable[[np.ndarray, int], np.ndarray], single_one: bool = True) -> Tensor:
    """``values(n, N)``: the symmetric window of ``N`` points at ``n = 0 .. N-1`` (float64).
    A window of one point is ``[1]`` (unless ``single_one`` is False)."""
    dt = _checked(name, M, dtype, layout)
    if M == 0:
        w = np.zeros(0)
    elif M == 1 and single_one:
        w = np.ones(1)
    else:
        N = M if sym else M + 1
        w = values(np.arange(N, dtype=np.float64), N)[:M]
    out = _wrap(np.ascontiguousarray(w, dtype=dt.np))
    if requires_grad:
        out._set_requires_grad(True)
    return out


def _cosine_sum(a: Sequence[float]) -> Callable[[np.ndarray, int], np.ndarray]:
    def values(n: np.ndarray, N: int) -> np.ndarray:
        x = 2 * math.pi * n / (N - 1)
        return sum((-1) ** k * c * np.cos(k * x) for k, c in enumerate(a))
    return values


def general_cosine(M: int, *, a: Any, sym: bool = True, dtype: Any = None, layout: Any = None,
                   device: Any = None, requires_grad: bool = False) -> Tensor:
    """``sum_k (-1)^k a_k cos(2 pi k n / (M - 1))``.

    >>> import ndgrad
    >>> ndgrad.signal.windows.general_cosine(3, a=[0.5, 0.5]).tolist()
    [0.0, 1.0, 0.0]
    """
    if not isinstance(a, (list, tuple)):
        raise TypeError(f"Coefficients must be a list/tuple, got {type(a).__name__}")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    return _window("general_cosine", M, sym, dtype, layout, requires_grad, _cosine_sum(a))


def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True, dtype: Any = None,
                    layout: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """``alpha - (1 - alpha) cos(2 pi n / (M - 1))``.

    >>> import ndgrad
    >>> ndgrad.signal.windows.general_hamming(3, alpha=0.5).tolist()
    [0.0, 1.0, 0.0]
    """
    return _window("general_hamming", M, sym, dtype, layout, requires_grad,
                   _cosine_sum([alpha, 1.0 - alpha]))


def _fixed_cosine(name: str, a: Sequence[float], doc: str) -> Callable:
    def fn(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
        return _window(name, M, sym, dtype, layout, requires_grad, _cosine_sum(a))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


hann = _fixed_cosine("hann", [0.5, 0.5], """The Hann window, ``sin^2(pi n / (M - 1))``.

    >>> import ndgrad
    >>> ndgrad.signal.windows.hann(4, sym=False).tolist()
    [0.0, 0.5, 1.0, 0.5]
    """)
hamming = _fixed_cosine("hamming", [0.54, 0.46], """The Hamming window (``general_hamming`` with
    alpha = 0.54).

    >>> import ndgrad
    >>> [round(v, 2) for v in ndgrad.signal.windows.hamming(3).tolist()]
    [0.08, 1.0, 0.08]
    """)
blackman = _fixed_cosine("blackman", [0.42, 0.5, 0.08], """The Blackman window.

    >>> import ndgrad
    >>> [round(v, 2) for v in ndgrad.signal.windows.blackman(3).tolist()]
    [-0.0, 1.0, -0.0]
    """)
nuttall = _fixed_cosine("nuttall", [0.3635819, 0.4891775, 0.1365995, 0.0106411],
                        """The minimum 4-term Blackman-Harris window of Nuttall.

    >>> import ndgrad
    >>> [round(v, 4) for v in ndgrad.signal.windows.nuttall(3).tolist()]
    [0.0004, 1.0, 0.0004]
    """)


def bartlett(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = None,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """The triangular window ``1 - |2n / (M - 1) - 1|``.

    >>> import ndgrad
    >>> ndgrad.signal.windows.bartlett(3).tolist()
    [0.0, 1.0, 0.0]
    """
    return _window("bartlett", M, sym, dtype, layout, requires_grad,
                   lambda n, N: 1 - np.abs(2 * n / (N - 1) - 1))


def cosine(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = None,
           device: Any = None, requires_grad: bool = False) -> Tensor:
    """The sine window ``sin(pi (n + 1/2) / M)``.

    >>> import ndgrad
    >>> [round(v, 4) for v in ndgrad.signal.windows.cosine(2).tolist()]
    [0.7071, 0.7071]
    """
    return _window("cosine", M, sym, dtype, layout, requires_grad,
                   lambda n, N: np.sin(math.pi * (n + 0.5) / N))


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype: Any = None,
             layout: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """``exp(-(n - (M - 1) / 2)^2 / (2 std^2))``.

    >>> import ndgrad
    >>> ndgrad.signal.windows.gaussian(3, std=1e9).tolist()
    [1.0, 1.0, 1.0]
    """
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    return _window("gaussian", M, sym, dtype, layout, requires_grad,
                   lambda n, N: np.exp(-((n - (N - 1) / 2) ** 2) / (2 * std * std)))


def exponential(M: int, *, center: Optional[float] = None, tau: float = 1.0, sym: bool = True,
                dtype: Any = None, layout: Any = None, device: Any = None,
                requires_grad: bool = False) -> Tensor:
    """``exp(-|n - center| / tau)`` (``center`` defaults to the middle; only for ``sym=False``).

    >>> import ndgrad
    >>> [round(v, 4) for v in ndgrad.signal.windows.exponential(3).tolist()]
    [0.3679, 1.0, 0.3679]
    """
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")

    def values(n: np.ndarray, N: int) -> np.ndarray:
        c = (N - 1) / 2 if center is None else center
        return np.exp(-np.abs(n - c) / tau)
    # A given center applies even to a one-point window (as in PyTorch).
    return _window("exponential", M, sym, dtype, layout, requires_grad, values, center is None)


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype: Any = None,
           layout: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """``I0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / I0(beta)``.

    >>> import ndgrad
    >>> ndgrad.signal.windows.kaiser(3, beta=0.0).tolist()
    [1.0, 1.0, 1.0]
    """
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    return _window("kaiser", M, sym, dtype, layout, requires_grad,
                   lambda n, N: np.i0(beta * np.sqrt(np.clip(1 - (2 * n / (N - 1) - 1) ** 2, 0,
                                                              None))) / np.i0(beta))


install_namespace(globals(), SIGNAL_WINDOWS_FUNCTIONS, "signal_windows_")
