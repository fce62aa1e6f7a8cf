"""Warnings attributed to the user's line, as PyTorch's warnings from C++ are.

Note [Warnings name the user's line]
A warning raised inside ndgrad passes through a varying number of frames (a public function's
signature wrapper, the op, its helpers) before it reaches user code, so a fixed ``stacklevel``
names an ndgrad file or a ``<signature ...>`` wrapper for some callers. ``warn_user`` counts
the frames that belong to the package and points the warning at the first one that does not.
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = ["warn_user"]

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn_user(message: str, category: type = UserWarning) -> None:
    """``warnings.warn(message, category)`` reported at the first frame outside ndgrad.

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     warn_user("careful")
    >>> w[0].filename.endswith("_warn.py")
    False
    """
    level = 2                      # 1 is this function, 2 its caller
    f = sys._getframe(1)
    while f.f_back is not None and f.f_code.co_filename.startswith(_PACKAGE):
        f = f.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
