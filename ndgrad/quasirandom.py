"""``ndgrad.quasirandom.SobolEngine``: Sobol' low-discrepancy sequences, torch's points.

Note [Sobol' sequences]
torch's engine keeps, per dimension, 30 direction numbers (``sobolstate``, 30-bit integers
from Joe and Kuo's primitive polynomials and initial numbers, "new-joe-kuo-6.21201", the table
SciPy ships as ``scipy/stats/_sobol_direction_numbers.npz``, read here) and the current point
``quasi``; point ``i + 1`` is point ``i`` XOR the direction number at the position of the
lowest zero bit of ``i`` (Gray-code order), scaled by 2**-30 in the output dtype. Scrambling
(Owen's linear matrix scrambling with a digital shift) draws, from a ``Generator`` seeded with
``seed``, a 30-bit shift per dimension and a random lower unit-triangular 0/1 matrix per
dimension, in that order (ndgrad's ``randint`` draws torch's numbers), and multiplies every
direction number by its matrix over GF(2). The first point is the shift, divided by 2**30 in
the default dtype of the time the engine was built, as torch computes it.

Example:
    >>> import ndgrad
    >>> ndgrad.quasirandom.SobolEngine(2).draw(4, dtype=ndgrad.float64)
    tensor([[0.0000, 0.0000],
            [0.5000, 0.5000],
            [0.7500, 0.2500],
            [0.2500, 0.7500]], dtype=ndgrad.float64)
"""

from __future__ import annotations

import os
from typing import Any, Optional

import numpy as np

from . import _creation, _dtype
from ._generator import Generator
from .tensor import Tensor, _wrap

__all__ = ["SobolEngine"]

_TABLE: dict = {}


def _directions() -> tuple:
    """(poly, vinit) of Joe and Kuo's table, loaded once from SciPy's copy."""
    if not _TABLE:
        import scipy  # local import: SciPy is loaded only when an engine is built
        # the data file only: importing scipy.stats would take a second
        path = os.path.join(os.path.dirname(scipy.__file__), "stats",
                            "_sobol_direction_numbers.npz")
        with np.load(path) as z:
            _TABLE["poly"], _TABLE["vinit"] = z["poly"], z["vinit"]
    return _TABLE["poly"], _TABLE["vinit"]


def _initial_state(dimension: int, maxbit: int) -> np.ndarray:
    poly, vinit = _directions()
    ss = np.ones((dimension, maxbit), np.int64)
    for d in range(1, dimension):
        p = int(poly[d])
        m = p.bit_length() - 1
        v = [int(x) for x in vinit[d, :m]]
        for j in range(m, maxbit):
            new = v[j - m]
            for k in range(m):
                if (p >> (m - 1 - k)) & 1:
                    new ^= v[j - k - 1] << (k + 1)
            v.append(new)
        ss[d] = v
    return ss << np.arange(maxbit - 1, -1, -1, dtype=np.int64)


def _parity(x: np.ndarray) -> np.ndarray:
    x = x ^ (x >> 32)
    x = x ^ (x >> 16)
    x = x ^ (x >> 8)
    x = x ^ (x >> 4)
    x = x ^ (x >> 2)
    x = x ^ (x >> 1)
    return x & 1


def _lowest_zero_bits(start: int, n: int) -> np.ndarray:
    c = np.arange(start, start + n, dtype=np.int64)
    inv = ~c
    low = inv & -inv                                   # the lowest set bit of ~c
    return np.log2(low.astype(np.float64)).astype(np.int64)


class SobolEngine:
    """A Sobol' sequence engine of ``dimension`` dimensions (Note [Sobol' sequences]),
    optionally scrambled with ``seed``; ``draw(n)`` returns the next ``n`` points."""

    MAXBIT = 30
    MAXDIM = 21201

    def __init__(self, dimension: int, scramble: bool = False,
                 seed: Optional[int] = None) -> None:
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError("Supported range of dimensionality for SobolEngine is "
                             f"[1, {self.MAXDIM}]")
        self.seed = seed
        self.scramble = scramble
        self.dimension = dimension
        state = _initial_state(dimension, self.MAXBIT)
        shift = np.zeros(dimension, np.int64)
        if scramble:
            state, shift = self._scrambled(state)
        self.sobolstate = _wrap(state)
        self.shift = _wrap(shift)
        self.quasi = _wrap(shift.copy())
        fdt = _dtype.get_default_dtype().np
        self._first_point = _wrap((shift.astype(fdt) / fdt.type(2 ** self.MAXBIT))
                                  .reshape(1, -1))
        self.num_generated = 0

    def _scrambled(self, state: np.ndarray) -> tuple:
        g = Generator()
        if self.seed is not None:
            g.manual_seed(self.seed)
        else:
            g.seed()
        bits = self.MAXBIT
        shift_bits = _creation.randint(2, (self.dimension, bits), generator=g)._data
        shift = shift_bits @ (np.int64(1) << np.arange(bits, dtype=np.int64))
        ltm = np.tril(_creation.randint(2, (self.dimension, bits, bits), generator=g)._data)
        idx = np.arange(bits)
        ltm[:, idx, idx] = 1
        rows = ltm @ (np.int64(1) << np.arange(bits - 1, -1, -1, dtype=np.int64))  # (dim, p)
        # bit (bits - 1 - p) of a scrambled number: the parity of row p AND the number
        par = _parity(rows[:, None, :] & state[:, :, None])                     # (dim, j, p)
        new = par @ (np.int64(1) << np.arange(bits - 1, -1, -1, dtype=np.int64))
        return new.astype(np.int64), shift.astype(np.int64)

    def _advance(self, n: int, start: int) -> np.ndarray:
        """The next ``n`` integer points (n, dimension) after ``quasi``."""
        ls = _lowest_zero_bits(start, n)
        steps = self.sobolstate._data.T[ls]                          # (n, dimension)
        return np.bitwise_xor.accumulate(steps, axis=0) ^ self.quasi._data

    def draw(self, n: int = 1, out: Optional[Tensor] = None, dtype: Any = None) -> Tensor:
        """The next ``n`` points as an ``(n, dimension)`` tensor of ``dtype`` (default: the
        default dtype)."""
        d = _dtype.get_default_dtype() if dtype is None else _dtype.to_dtype(dtype)
        if not d.is_floating_point or d.itemsize < 4:
            name = {"bfloat16": "BFloat16", "float16": "Half"}.get(d.name, d._torch_name)
            raise NotImplementedError(f'"_sobol_engine_draw" not implemented for \'{name}\'')
        first = self.num_generated == 0
        count = n - 1 if first else n
        if count < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {count}: "
                               f"[{count}, {self.dimension}]")
        pts = self._advance(count, 0 if first else self.num_generated - 1)
        self.quasi = _wrap(pts[-1].copy() if count else self.quasi._data.copy())  # a new one
        vals = pts.astype(d.np) * d.np.type(1.0 / (1 << self.MAXBIT))
        if first:
            vals = np.concatenate([self._first_point._data.astype(d.np), vals], axis=0)
        self.num_generated += n
        result = _wrap(vals)
        if out is not None:
            out.resize_as_(result).copy_(result)
            return out
        return result

    def draw_base2(self, m: int, out: Optional[Tensor] = None, dtype: Any = None) -> Tensor:
        """The next ``2**m`` points; the total drawn must stay a power of 2."""
        n = 2 ** m
        total_n = self.num_generated + n
        if not (total_n & (total_n - 1) == 0):
            raise ValueError("The balance properties of Sobol' points require n to be a power "
                             f"of 2. {self.num_generated} points have been previously "
                             f"generated, then: n={self.num_generated}+2**{m}={total_n}. If "
                             "you still want to do this, please use 'SobolEngine.draw()' "
                             "instead.")
        return self.draw(n=n, out=out, dtype=dtype)

    def reset(self) -> "SobolEngine":
        """Back to the first point."""
        self.quasi.copy_(self.shift)          # in place, as torch's
        self.num_generated = 0
        return self

    def fast_forward(self, n: int) -> "SobolEngine":
        """Skip ``n`` points (as drawing them)."""
        first = self.num_generated == 0
        count = n - 1 if first else n
        if count > 0:                         # in place, as torch's
            self.quasi.copy_(_wrap(self._advance(count, 0 if first else
                                                 self.num_generated - 1)[-1].copy()))
        self.num_generated += n
        return self

    def __repr__(self) -> str:
        parts = [f"dimension={self.dimension}"]
        if self.scramble:
            parts.append("scramble=True")
        if self.seed is not None:
            parts.append(f"seed={self.seed}")
        return f"{type(self).__name__}({', '.join(parts)})"
