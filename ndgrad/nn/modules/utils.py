"""``ndgrad.nn.modules.utils``: the argument helpers custom layers import from PyTorch
(``_pair(3) == (3, 3)``) and ``consume_prefix_in_state_dict_if_present``.

Example:
    >>> from ndgrad.nn.modules.utils import _pair, _triple
    >>> _pair(3), _pair((1, 2)), _triple(0)
    ((3, 3), (1, 2), (0, 0, 0))
"""

from __future__ import annotations

import collections.abc
from typing import Any, Callable, Dict, List

__all__ = ["consume_prefix_in_state_dict_if_present"]


class _Repeat:
    """``n`` copies of a scalar as a tuple; an iterable becomes a tuple of its items."""

    def __init__(self, n: int, name: str) -> None:
        self.n = n
        self.__name__ = name

    def __call__(self, x: Any) -> tuple:
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(x for _ in range(self.n))


def _ntuple(n: int, name: str = "parse") -> Callable[[Any], tuple]:
    """The parser of :class:`_Repeat` for ``n`` (``_ntuple(2)`` is ``_pair``)."""
    return _Repeat(n, name)


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t: tuple, n: int) -> tuple:
    """Each element of ``t`` repeated ``n`` times, in reverse order (conv padding for F.pad)."""
    out: list = []
    for x in t[::-1]:
        out.extend([x] * n)
    return tuple(out)


def _list_with_default(out_size: Any, defaults: List[int]) -> Any:
    """An adaptive pooling size with its ``None`` entries filled from the input's trailing
    sizes ``defaults`` (a number passes through)."""
    if isinstance(out_size, (int, float)):
        return out_size
    k = len(out_size)
    if len(defaults) <= k:
        raise ValueError(f"Input dimension should be at least {k + 1}")
    tail = list(defaults)[len(defaults) - k:]
    return [tail[i] if out_size[i] is None else out_size[i] for i in range(k)]


def consume_prefix_in_state_dict_if_present(state_dict: Dict[str, Any], prefix: str) -> None:
    """Strip ``prefix`` from the keys that have it (a DataParallel/DDP checkpoint's
    ``module.``), in place; the ``_metadata`` entries are renamed the same way, the one named
    by the prefix itself becoming the root entry ``""``."""
    for key in sorted(k for k in state_dict if k.startswith(prefix)):
        state_dict[key[len(prefix):]] = state_dict.pop(key)
    meta = getattr(state_dict, "_metadata", None)
    if meta is None:
        return
    root = prefix[:-1] if prefix.endswith(".") else prefix
    for key in list(meta):
        if key == root:
            meta[""] = meta.pop(key)
        elif key.startswith(prefix):
            meta[key[len(prefix):]] = meta.pop(key)
