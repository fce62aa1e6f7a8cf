"""Warnings attributed to the user's line, as PyTorch's warnings from C++ are.

Note [Warnings name the user's line]
A warning raised inside ndgrad passes through a varying number of frames (a public function's
signature wrapper, the op, its helpers) before it reaches user code, so a fixed ``stacklevel``
names an ndgrad file or a ``<signature ...>`` wrapper for some callers. ``warn_user`` counts
the frames that belong to the package and points the warning at the first one that does not.
``warn_user_once`` is PyTorch's warn-once kind (stft without a window, cross without dim):
the first occurrence in the process only, every occurrence after ``set_warn_always(True)``.
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = ["warn_user", "warn_user_once", "WARN_ALWAYS"]

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
# ``set_warn_always``'s flag: once-only warnings warn every time when set.
WARN_ALWAYS = [False]
_warned_once: set = set()


def _user_stacklevel() -> int:
    """The ``stacklevel`` that names the first frame outside the package, for a
    ``warnings.warn`` made by the caller of this function's caller."""
    level = 2                      # 1: warnings.warn's caller (ours), 2: its caller, ...
    f = sys._getframe(2)
    while f.f_back is not None and f.f_code.co_filename.startswith(_PACKAGE):
        f = f.f_back
        level += 1
    return level


def warn_user(message: str, category: type = UserWarning) -> None:
    """``warnings.warn(message, category)`` reported at the first frame outside ndgrad.

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     warn_user("careful")
    >>> w[0].filename.endswith("_warn.py")
    False
    """
    warnings.warn(message, category, stacklevel=_user_stacklevel())


def warn_user_once(message: str, category: type = UserWarning) -> None:
    """``warn_user``, the first time this message is raised in the process only (PyTorch's
    warn-once warnings), unless ``set_warn_always(True)``."""
    if WARN_ALWAYS[0] or message not in _warned_once:
        _warned_once.add(message)
        warnings.warn(message, category, stacklevel=_user_stacklevel())
