"""``poisson`` and ``binomial`` samples, drawn from the generator's stream as torch's CPU kernels
draw them (Note [Random streams] in ``_generator.py``): elements in order, each sample from
53-bit uniforms; small means by counting uniforms (Poisson: multiply until the product drops
below ``exp(-rate)``; binomial: add geometric gaps until they pass the count), large means by
Hörmann's transformed rejection with squeeze (PTRS for Poisson, BTRS for binomial; W. Hörmann,
"The transformed rejection method for generating Poisson random variables", 1993, and "The
generation of binomial random variates", 1993).

Example:
    >>> import ndgrad
    >>> g = ndgrad.Generator().manual_seed(0)
    >>> ndgrad.poisson(ndgrad.tensor([0.0, 4.0]), generator=g).tolist()[0]
    0.0
"""

from __future__ import annotations

import math
from typing import Callable, Optional

import numpy as np

from . import _creation, _dtype
from ._generator import Generator, default_generator, uniform_bits
from .tensor import Tensor

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _uniform(g: Generator) -> Callable[[], float]:
    def draw() -> float:
        return float(uniform_bits(g, 1, np.float64)[0])
    return draw


def _poisson_one(lam: float, u: Callable[[], float]) -> float:
    if lam >= 10:
        slam, loglam = math.sqrt(lam), math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            uu = u() - 0.5
            v = u()
            us = 0.5 - abs(uu)
            k = math.floor((2 * a / us + b) * uu + lam + 0.43)
            if us >= 0.07 and v <= vr:
                return float(k)
            if k < 0 or (us < 0.013 and v > us):
                continue
            if (math.log(v) + math.log(inv_alpha) - math.log(a / (us * us) + b)
                    <= -lam + k * loglam - math.lgamma(k + 1)):
                return float(k)
    if lam == 0:
        return 0.0
    limit, count, prod = math.exp(-lam), 0, 1.0
    while True:
        prod *= u()
        if prod > limit:
            count += 1
        else:
            return float(count)


def _stirling_tail(k: float) -> float:
    """``log(k!)`` minus its Stirling approximation."""
    if k <= 9:
        return math.lgamma(k + 1) - ((k + 0.5) * math.log(k + 1) - (k + 1) + _LOG_SQRT_2PI)
    sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / sq) / sq) / (k + 1)


def _btrs(n: float, p: float, u: Callable[[], float]) -> float:
    sd = math.sqrt(n * p * (1 - p))
    b = 1.15 + 2.53 * sd
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = n * p + 0.5
    v_r = 0.92 - 4.2 / b
    r = p / (1 - p)
    alpha = (2.83 + 5.1 / b) * sd
    m = math.floor((n + 1) * p)
    while True:
        uu = u() - 0.5
        v = u()
        us = 0.5 - abs(uu)
        k = math.floor((2 * a / us + b) * uu + c)
        if k < 0 or k > n:
            continue
        if us >= 0.07 and v <= v_r:
            return float(k)
        v = math.log(v * alpha / (a / (us * us) + b))
        bound = ((m + 0.5) * math.log((m + 1) / (r * (n - m + 1)))
                 + (n + 1) * math.log((n - m + 1) / (n - k + 1))
                 + (k + 0.5) * math.log(r * (n - k + 1) / (k + 1))
                 + _stirling_tail(m) + _stirling_tail(n - m) - _stirling_tail(k)
                 - _stirling_tail(n - k))
        if v <= bound:
            return float(k)


def _inversion(n: float, p: float, u: Callable[[], float]) -> float:
    total, hits = 0.0, 0
    logq = math.log1p(-p)
    while True:
        total += math.ceil(math.log(u()) / logq)
        if total > n:
            return float(hits)
        hits += 1


def _binomial_one(n: float, p: float, u: Callable[[], float]) -> float:
    if n <= 0.0 or p <= 0.0:
        return 0.0
    if p >= 1.0:
        return n
    if p <= 0.5:
        return _btrs(n, p, u) if n * p >= 10.0 else _inversion(n, p, u)
    if p > 0.5:
        q = 1.0 - p
        return n - (_btrs(n, q, u) if n * q >= 10.0 else _inversion(n, q, u))
    return math.nan


def _result(values: np.ndarray, like: Tensor, grad_from: Tensor) -> Tensor:
    out = _creation.tensor(values.astype(like._data.dtype).reshape(like._data.shape))
    if grad_from.requires_grad:      # torch records a node whose gradient is zero
        out = grad_from * 0 + out
    return out


def _float_name(t: Tensor, kernel: str) -> None:
    if t._data.dtype.kind != "f":
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{_dtype._FROM_NP[t._data.dtype]._torch_name}'")


def poisson(input: Tensor, generator: Optional[Generator] = None) -> Tensor:
    """Poisson samples with the rates ``input``, one per element (torch's stream for the seed).

    Example:
        >>> import ndgrad
        >>> ndgrad.poisson(ndgrad.zeros(2)).tolist()
        [0.0, 0.0]
    """
    _float_name(input, "poisson_cpu")
    rates = input._data.astype(np.float64).reshape(-1)
    if (rates < 0).any() or np.isnan(rates).any():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    u = _uniform(generator if generator is not None else default_generator)
    return _result(np.array([_poisson_one(float(r), u) for r in rates]), input, input)


def binomial(count: Tensor, prob: Tensor, generator: Optional[Generator] = None) -> Tensor:
    """Binomial samples of ``count`` trials with success probability ``prob`` (broadcast;
    torch's stream for the seed).

    Example:
        >>> import ndgrad
        >>> ndgrad.binomial(ndgrad.tensor([5.0, 3.0]), ndgrad.tensor([0.0, 1.0])).tolist()
        [0.0, 3.0]
    """
    if count._data.dtype.kind != "f":
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: "
                         f"{_dtype._FROM_NP[count._data.dtype]._torch_name}")
    if prob._data.dtype.kind != "f":
        raise ValueError(f"binomial only supports floating-point dtypes for prob, got: "
                         f"{_dtype._FROM_NP[prob._data.dtype]._torch_name}")
    if count._data.shape != prob._data.shape:
        c, p = np.broadcast_arrays(count._data, prob._data)
        shape_like = _creation.tensor(c.astype(count._data.dtype))
    else:
        c, p, shape_like = count._data, prob._data, count
    # the values as the kernel sees them: in count's dtype, then widened to double
    cs = c.astype(count._data.dtype).astype(np.float64).reshape(-1)
    ps = p.astype(count._data.dtype).astype(np.float64).reshape(-1)
    u = _uniform(generator if generator is not None else default_generator)
    vals = np.array([_binomial_one(float(a), float(b), u) for a, b in zip(cs, ps)])
    return _result(vals, shape_like, count)

