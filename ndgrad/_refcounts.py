"""Whether ``sys.getrefcount`` can tell that an object has no holder besides the engine.

Note [Sole-reference tests]
AccumulateGrad steals an incoming gradient instead of copying it, and raw backward rules
write into it in place (``raw_into``), when nobody but the engine holds it: the test compares
``sys.getrefcount`` with the references the engine's own code makes (a list slot, a local
name, the call's argument). Those counts are CPython facts that changed before: Python 3.14's
borrowed loads of local variables report one reference fewer, and a free-threaded build
counts differently. A count one lower than expected would make a gradient a user holds look
unshared, and the engine would write into it.

So the counts are checked once, at import, on an object whose holders are known (one local
name, plus the argument of ``getrefcount``): ``SOLE_REFERENCE_TESTS`` is true only when the
interpreter reports the count the engine's thresholds were written for and the GIL is on.
Otherwise stealing and in-place writing are off (every gradient is copied, as if someone else
held it): slower, never wrong.

Example:
    >>> from ndgrad import _refcounts
    >>> isinstance(_refcounts.SOLE_REFERENCE_TESTS, bool)
    True
"""

from __future__ import annotations

import sys

__all__ = ["SOLE_REFERENCE_TESTS"]


def _local_and_argument() -> int:
    """The count ``getrefcount`` reports for an object held by one local name only."""
    x = object()
    return sys.getrefcount(x)


def _gil_enabled() -> bool:
    check = getattr(sys, "_is_gil_enabled", None)
    return True if check is None else bool(check())


SOLE_REFERENCE_TESTS: bool = (sys.implementation.name == "cpython"
                              and _local_and_argument() == 2 and _gil_enabled())
