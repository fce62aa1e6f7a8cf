"""``ndgrad.mps.Event``: refused without MPS, as in torch's builds without Metal.

Example:
    >>> import ndgrad
    >>> ndgrad.mps.Event()
    Traceback (most recent call last):
    ...
    RuntimeError: Cannot execute acquireEvent() without MPS backend.
"""

from __future__ import annotations

from typing import NoReturn

__all__ = ["Event"]


def _no_mps(what: str) -> NoReturn:
    raise RuntimeError(f"Cannot execute {what}() without MPS backend.")


class Event:
    """An MPS event (a synchronization and timing marker): cannot be created without MPS."""

    def __init__(self, enable_timing: bool = False) -> None:
        _no_mps("acquireEvent")

    def record(self) -> None:
        _no_mps("recordEvent")

    def wait(self) -> None:
        _no_mps("waitForEvent")

    def query(self) -> bool:
        _no_mps("queryEvent")

    def synchronize(self) -> None:
        _no_mps("synchronizeEvent")

    def elapsed_time(self, end_event: "Event") -> float:
        _no_mps("elapsedTimeOfEvents")
