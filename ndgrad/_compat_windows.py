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

import functools
from typing import Any, Callable

import numpy as np

from . import _creation, _dtype
from ._layout import layout as _layout_type
from .tensor import Tensor, device as _device_type


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


# ---------------------------------------------------------------------------- overloads
# torch declares each window as overloads whose positional parameters have no defaults:
# ``(window_length)``, ``(window_length, periodic)``, then ``alpha`` and ``beta`` (hamming) or
# ``beta`` (kaiser) only after ``periodic``. A call matches the overload whose parameters it
# gives, all of them (positionally or by name); ``hamming_window(5, alpha=0.5)`` matches none.
_OPTIONS = ("dtype", "layout", "device", "pin_memory", "requires_grad")
_OPTIONS_TEXT = ("*, torch.dtype dtype = None, torch.layout layout = None, torch.device device "
                 "= None, bool pin_memory = False, bool requires_grad = False")
_POSITIONAL = {"hann_window": (), "blackman_window": (), "bartlett_window": (),
               "hamming_window": (("alpha", "float"), ("beta", "float")),
               "kaiser_window": (("beta", "float"),)}


def _word(v: Any) -> str:
    """An argument's type as torch's argument parser names it."""
    if isinstance(v, Tensor):
        return "Tensor"
    for kind, name in ((_dtype.dtype, "torch.dtype"), (_layout_type, "torch.layout"),
                       (_device_type, "torch.device")):
        if isinstance(v, kind):
            return name
    return type(v).__name__


def _overloads(name: str) -> list:
    """The parameter lists of ``name``'s overloads (window_length first)."""
    params = [("window_length", "int"), ("periodic", "bool")] + list(_POSITIONAL[name])
    return [params[:k] for k in range(1, len(params) + 1)]


def _no_overload(name: str, args: tuple, kwargs: dict) -> TypeError:
    got = [_word(a) for a in args] + [f"{k}={_word(v)}" for k, v in reversed(kwargs.items())]
    lines = "".join(f" * ({', '.join(f'{t} {p}' for p, t in params)}, {_OPTIONS_TEXT})\n"
                    for params in _overloads(name))
    return TypeError(f"{name}() received an invalid combination of arguments - got "
                     f"({', '.join(got)}), but expected one of:\n{lines}")


def overloaded(fn: Callable) -> Callable:
    """``fn`` (a window's checking wrapper, whose schema gives every positional parameter a
    default) taking torch's overloads: a call giving parameters of no single overload raises
    torch's TypeError, as does a wrong argument when more than one overload takes that many
    arguments (otherwise the wrapper's own error names the argument).

    >>> import ndgrad
    >>> try:
    ...     ndgrad.hamming_window(3, alpha=0.5)
    ... except TypeError as e:
    ...     print(str(e).split(" - ")[0])
    hamming_window() received an invalid combination of arguments
    """
    name = fn.__name__
    overloads = _overloads(name)

    @functools.wraps(fn)
    def window(*args: Any, **kwargs: Any) -> Any:
        if not kwargs and (len(args) < 2 or (len(args) == 2 and type(args[1]) is bool)):
            return fn(*args)                    # the usual calls: (n) or (n, periodic)
        n = len(args) + len(kwargs)
        plausible = [p for p in overloads if len(p) <= n <= len(p) + len(_OPTIONS)]
        given = [p for p, _ in overloads[-1][:len(args)]] + [
            k for k in kwargs if k not in _OPTIONS]
        match = [p for p in overloads if sorted(given) == sorted(q for q, _ in p)]
        if not match or len(args) > len(match[0]):
            if len(plausible) == 1:
                return fn(*args, **kwargs)      # its own error, naming the argument
            raise _no_overload(name, args, kwargs)
        try:
            return fn(*args, **kwargs)
        except TypeError:
            if len(plausible) == 1:
                raise
            raise _no_overload(name, args, kwargs) from None
    return window
