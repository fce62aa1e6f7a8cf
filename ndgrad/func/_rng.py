"""The ``randomness`` policies of ``vmap`` and ``jacfwd`` for functions run once per batch
entry: ``"error"`` refuses any draw from the default generator, ``"same"`` replays the same
draws for every entry, ``"different"`` lets every entry draw afresh.

Example:
    >>> from ndgrad.func._rng import check_randomness
    >>> check_randomness("same")
"""

from __future__ import annotations

import ctypes
from contextlib import contextmanager
from typing import Any, Iterator

from .._generator import default_generator

__all__ = ["check_randomness", "policy"]

_ERROR = ("vmap: called random operation while in randomness error mode. Please either use "
          "the 'same' or 'different' randomness flags on vmap or perform the randomness "
          "operation out of vmap")


_INT, _U32 = ctypes.c_int, ctypes.c_uint32


def check_randomness(randomness: Any) -> None:
    if randomness not in ("error", "different", "same"):
        raise RuntimeError("Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")


def _fingerprint() -> tuple:
    """Changes whenever the default generator draws: its position in the MT19937 key, the
    key's first and last words (the whole key is regenerated every 624 draws), the cached
    normal sample, the seed. Read in place through the engine's state struct (copying the
    state through ``MT19937.state`` costs tens of microseconds)."""
    g = default_generator
    addr = g._mt.ctypes.state_address
    return (_INT.from_address(addr + 624 * 4).value, _U32.from_address(addr).value,
            _U32.from_address(addr + 623 * 4).value, g._next_normal, g._seed)


class _Policy:
    def __init__(self, randomness: str) -> None:
        self.mode = randomness
        self.saved = default_generator.get_state() if randomness != "different" else None
        self.mark: Any = None

    def before(self, k: int) -> None:
        if self.mode == "error":
            self.mark = _fingerprint()
        elif self.mode == "same" and k:
            default_generator.set_state(self.saved)

    def restore(self) -> None:
        if self.saved is not None:
            default_generator.set_state(self.saved)

    def after(self, k: int) -> None:
        if self.mode == "error" and _fingerprint() != self.mark:
            default_generator.set_state(self.saved)
            raise RuntimeError(_ERROR)


@contextmanager
def policy(randomness: str) -> Iterator[_Policy]:
    """A policy object whose ``before(k)``/``after(k)`` surround the ``k``-th run."""
    yield _Policy(randomness)
