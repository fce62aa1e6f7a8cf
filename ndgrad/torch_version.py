"""``ndgrad.__version__``'s type: a ``str`` that compares as a version (``torch.torch_version``).

Scripts written for PyTorch gate features on ``torch.__version__ >= "2.0"`` or
``torch.__version__ < (2, 1)``. :class:`TorchVersion` is a ``str`` (printing, hashing,
slicing, ``split`` and ``!=`` are a string's) whose ``<``, ``<=``, ``==``, ``>=`` and ``>``
read both sides as PEP 440 versions: the other side may be a string, an iterable of parts
(``(2, 1)`` reads as ``"2.1"``) or a ``packaging.version.Version``. When either side is not a
valid version (``"parrot"``) the comparison falls back to the string's.

The PEP 440 reading is implemented here (the runtime depends on no ``packaging``).

>>> from ndgrad.torch_version import TorchVersion
>>> v = TorchVersion("2.13.0+cpu")
>>> v >= "2.0", v < (2, 1), v > "2.13.0", v == "2.13.0+cpu"
(True, False, True, True)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Optional, Tuple

__all__ = ["TorchVersion", "InvalidVersion"]


class InvalidVersion(ValueError):
    """A string that is not a PEP 440 version."""


# PEP 440, normalizing spellings as PEP 440 allows: a leading "v", "-"/"_"/"." separators,
# "alpha"/"beta"/"c"/"pre"/"preview" pre-releases, "rev"/"r"/"-N" post-releases, any case.
_PATTERN = re.compile(r"""
    \s*v?
    (?:(?P<epoch>[0-9]+)!)?
    (?P<release>[0-9]+(?:\.[0-9]+)*)
    (?:[-_.]?(?P<pre_l>alpha|a|beta|b|preview|pre|c|rc)[-_.]?(?P<pre_n>[0-9]+)?)?
    (?:(?:-(?P<post_n1>[0-9]+))
       |(?:[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>[0-9]+)?))?
    (?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>[0-9]+)?)?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?
    \s*
""", re.VERBOSE | re.IGNORECASE)

_PRE_RANK = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}


def _sort_key(text: str) -> Tuple[Any, ...]:
    """A tuple ordering versions as PEP 440 does; raises :class:`InvalidVersion`."""
    m = _PATTERN.fullmatch(text)
    if m is None:
        raise InvalidVersion(f"Invalid version: {text!r}")
    release = [int(p) for p in m["release"].split(".")]
    while len(release) > 1 and release[-1] == 0:   # 1.0 == 1.0.0
        release.pop()
    has_post = m["post_n1"] is not None or m["post_l"] is not None
    # Each part is a tuple whose first item ranks "absent" against "present".
    if m["pre_l"] is not None:
        pre: Tuple[int, ...] = (1, _PRE_RANK[m["pre_l"].lower()], int(m["pre_n"] or 0))
    elif m["dev_l"] is not None and not has_post:
        pre = (0,)          # 1.0.dev0 sorts before 1.0a0
    else:
        pre = (2,)
    post = (1, int(m["post_n1"] or m["post_n2"] or 0)) if has_post else (0,)
    dev = (0, int(m["dev_n"] or 0)) if m["dev_l"] is not None else (1,)
    local: Tuple[Any, ...] = (0,)
    if m["local"] is not None:     # numeric segments sort after alphanumeric ones
        local = (1,) + tuple((1, int(s), "") if s.isdigit() else (0, 0, s.lower())
                             for s in re.split(r"[-_.]", m["local"]))
    return (int(m["epoch"] or 0), tuple(release), pre, post, dev, local)


def _other_key(other: Any) -> Optional[Tuple[Any, ...]]:
    """The other side's key, or None when it is no version-like value."""
    if isinstance(other, str):
        return _sort_key(other)
    if type(other).__name__ == "Version" and hasattr(other, "release"):  # packaging's
        return _sort_key(str(other))
    if isinstance(other, Iterable):
        return _sort_key(".".join(str(part) for part in other))
    return None


class TorchVersion(str):
    """A version string comparing as a PEP 440 version with strings, tuples and ``Version``.

    >>> TorchVersion("1.10.0a0") > (1, 2)
    True
    >>> TorchVersion("1.10.0") > "1.9"
    True
    """

    __slots__ = ()

    def _compare(self, other: Any, name: str) -> Any:
        try:
            key = _other_key(other)
            if key is not None:
                return getattr(_sort_key(str(self)), name)(key)
        except InvalidVersion:
            pass
        return getattr(str, name)(self, other)

    def __lt__(self, other: Any) -> Any:
        return self._compare(other, "__lt__")

    def __le__(self, other: Any) -> Any:
        return self._compare(other, "__le__")

    def __eq__(self, other: Any) -> Any:
        return self._compare(other, "__eq__")

    def __ge__(self, other: Any) -> Any:
        return self._compare(other, "__ge__")

    def __gt__(self, other: Any) -> Any:
        return self._compare(other, "__gt__")

    __hash__ = str.__hash__   # hashes as the string: usable as a dict key like before
