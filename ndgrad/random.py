"""``ndgrad.random``: the default generator's seed and state, as ``torch.random``.

Example:
    >>> import ndgrad
    >>> _ = ndgrad.random.manual_seed(3)
    >>> ndgrad.random.initial_seed()
    3
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from ._creation import get_rng_state, initial_seed, manual_seed, seed, set_rng_state
from ._generator import default_generator

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng",
           "default_generator"]


@contextlib.contextmanager
def fork_rng(devices: Any = None, enabled: bool = True, _caller: str = "fork_rng",
             _devices_kw: str = "devices", device_type: str = "cpu") -> Iterator[None]:
    """Run the block with the default generator's state saved and restored afterwards."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
