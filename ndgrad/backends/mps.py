"""``ndgrad.backends.mps``: no Metal (MPS) backend, as torch's builds without Metal report it.

Example:
    >>> import ndgrad
    >>> ndgrad.backends.mps.is_available(), ndgrad.backends.mps.is_built()
    (False, False)
"""

from typing import NoReturn

__all__ = ["get_core_count", "get_name", "is_built", "is_available", "is_macos13_or_newer",
           "is_macos_or_newer"]


def _no_mps(what: str) -> NoReturn:
    raise RuntimeError(f"Cannot execute {what}() without MPS backend.")


def is_available() -> bool:
    """False: ndgrad has no MPS backend."""
    return False


def is_built() -> bool:
    """False: ndgrad is not built with MPS."""
    return False


def is_macos_or_newer(major: int, minor: int) -> NoReturn:
    """Refused: the macOS version is asked of the MPS backend."""
    _no_mps("isOnMacOSorNewer")


def is_macos13_or_newer(minor: int = 0) -> NoReturn:
    """Refused: the macOS version is asked of the MPS backend."""
    _no_mps("isOnMacOSorNewer")


def get_core_count() -> NoReturn:
    """Refused: there is no MPS device (torch's CPU build fails with an AttributeError on its
    internals here; ndgrad gives the backend's RuntimeError)."""
    _no_mps("getCoreCount")


def get_name() -> NoReturn:
    """Refused: there is no MPS device (see ``get_core_count``)."""
    _no_mps("getName")
