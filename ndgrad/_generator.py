"""``Generator``: a seedable random-number generator with torch's CPU engine.

Note [Random streams]
torch's CPU generator is a 32-bit Mersenne Twister (MT19937) seeded with the low 32 bits of the
seed by the reference initialisation; NumPy's ``MT19937`` reproduces that engine exactly
(``_legacy_seeding``). ndgrad's ``Generator`` owns one such engine, so whatever torch derives
directly from the raw 32/64-bit stream comes out identical for the same seed: ``randperm``
(Fisher-Yates with ``random() % (n - i)``), ``randint`` (``random() % range + low``),
``random_()`` over the full int64 range and,
through them, the shuffling order of ``RandomSampler``/``DataLoader``/``random_split``.
Continuous distributions (``rand``, ``randn``, ``normal`` ...) are drawn by NumPy's algorithms
from the same engine (``Generator._np``): reproducible for a seed within ndgrad, but not torch's
numbers.

Example:
    >>> import ndgrad
    >>> g = ndgrad.Generator().manual_seed(42)
    >>> ndgrad.randperm(6, generator=g)
    tensor([0, 3, 2, 4, 1, 5])
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

__all__ = ["Generator", "default_generator"]

_DEFAULT_SEED = 67280421310721


class Generator:
    """A random generator (``ndgrad.Generator().manual_seed(0)``): pass it as ``generator=``
    to random functions, samplers and ``random_split``."""

    def __init__(self, device: Any = "cpu") -> None:
        self._device = str(device)
        self.manual_seed(_DEFAULT_SEED)

    @property
    def device(self) -> Any:
        from .tensor import device as _device  # local import: tensor.py is a sibling module
        return _device("cpu")

    def manual_seed(self, seed: int) -> "Generator":
        """Seed the engine (returns the generator, so ``Generator().manual_seed(1)`` chains)."""
        seed = int(seed)
        if seed < 0:
            if seed < -(2 ** 63):
                raise RuntimeError("Overflow when unpacking long")
            seed += 2 ** 64
        elif seed >= 2 ** 64:
            raise RuntimeError("Overflow when unpacking long")
        self._seed = seed
        fresh = np.random.MT19937(0)
        fresh._legacy_seeding(seed & 0xFFFFFFFF)
        if hasattr(self, "_mt"):
            self._mt.state = fresh.state     # keep the objects: ``_np`` may be held elsewhere
        else:
            self._mt = fresh
            self._np = np.random.Generator(self._mt)
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy; returns the seed."""
        s = int(np.random.SeedSequence().entropy % (2 ** 63))
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed last set."""
        return self._seed

    def get_state(self) -> Any:
        """The engine's state as a uint8 tensor (for ``set_state``)."""
        from ._creation import tensor  # local import: _creation imports this module
        st = self._mt.state["state"]
        words = np.concatenate([st["key"].astype(np.uint32),
                                np.array([st["pos"], self._seed & 0xFFFFFFFF,
                                          self._seed >> 32], dtype=np.uint32)])
        return tensor(words.view(np.uint8).copy())

    def set_state(self, new_state: Any) -> "Generator":
        """Restore a state from ``get_state``."""
        arr = np.asarray(new_state.numpy() if hasattr(new_state, "numpy") else new_state)
        if arr.dtype != np.uint8 or arr.size != 627 * 4:
            raise RuntimeError("Expected either a torch.ByteTensor of the generator's state "
                               f"size ({627 * 4} bytes), but got {arr.size} elements")
        words = arr.view(np.uint32)
        st = self._mt.state
        st["state"] = {"key": words[:624].copy(), "pos": int(words[624])}
        self._mt.state = st
        self._seed = int(words[625]) | (int(words[626]) << 32)
        return self

    def random32(self, n: int) -> np.ndarray:
        """``n`` raw 32-bit outputs of the engine (torch's ``random()``)."""
        return self._mt.random_raw(n).astype(np.uint64)

    def random64(self) -> int:
        """One 64-bit value from two 32-bit outputs, high word first (torch's
        ``random64()``)."""
        hi, lo = (int(v) for v in self._mt.random_raw(2))
        return (hi << 32) | lo

    def __repr__(self) -> str:
        return f"<ndgrad.Generator object at {hex(id(self))}>"


default_generator = Generator()
default_generator.seed()


def numpy_generator(generator: Optional[Generator]) -> np.random.Generator:
    """The NumPy generator to draw from: ``generator``'s, or the default one's."""
    return (generator if generator is not None else default_generator)._np


def randint_array(low: int, high: int, shape: tuple, generator: Optional[Generator]
                  ) -> np.ndarray:
    """Integers in ``[low, high)`` drawn as torch draws them (Note [Random streams]):
    ``random() % range`` for ranges below 2**32, else ``random64() % range``."""
    g = generator if generator is not None else default_generator
    n = int(np.prod(shape, dtype=np.int64))
    span = int(high) - int(low)
    if span < 2 ** 32:
        vals = (g.random32(n) % np.uint64(span)).astype(np.int64) + int(low)
    else:
        raw = g._mt.random_raw(2 * n).astype(np.uint64).reshape(n, 2)
        v64 = (raw[:, 0] << np.uint64(32)) | raw[:, 1]
        vals = np.array([int(v) % span + int(low) for v in v64.tolist()], dtype=np.int64)
    return vals.reshape(shape)


def randperm_array(n: int, generator: Optional[Generator]) -> np.ndarray:
    """A random permutation of ``range(n)`` drawn as torch draws it (Note [Random
    streams])."""
    g = generator if generator is not None else default_generator
    r = np.arange(n, dtype=np.int64)
    if n > 1:
        raw = g.random32(n - 1)
        # Fisher-Yates with z_i = raw_i mod (n - i), vectorised: the z_i are all known up
        # front, the swaps must still run in order.
        z = (raw % np.arange(n, 1, -1, dtype=np.uint64)).astype(np.int64) + np.arange(n - 1)
        for i, j in enumerate(z.tolist()):
            r[i], r[j] = r[j], r[i]
    return r
