"""``ndgrad.mps.profiler``: the MPS signpost profiler and Metal capture, refused without MPS
as in torch's builds without Metal.

Example:
    >>> import ndgrad
    >>> with ndgrad.mps.profiler.profile():
    ...     pass
    Traceback (most recent call last):
    ...
    RuntimeError: Cannot execute profilerStopTrace() without MPS backend.
"""

from __future__ import annotations

import contextlib
from typing import Iterator, Literal, NoReturn

from .event import _no_mps

__all__ = ["start", "stop", "profile", "metal_capture", "is_metal_capture_enabled",
           "is_capturing_metal"]

ProfilerMode = Literal["interval", "event", "interval,event"]


def start(mode: ProfilerMode = "interval", wait_until_completed: bool = False) -> NoReturn:
    """Refused: signpost tracing needs MPS."""
    _no_mps("profilerStartTrace")


def stop() -> NoReturn:
    """Refused: signpost tracing needs MPS."""
    _no_mps("profilerStopTrace")


@contextlib.contextmanager
def profile(mode: ProfilerMode = "interval", wait_until_completed: bool = False
            ) -> Iterator[None]:
    """``start`` ... ``stop`` around the block (both refused; torch's error is the one of
    ``stop``, raised last)."""
    try:
        start(mode, wait_until_completed)
        yield
    finally:
        stop()


def is_metal_capture_enabled() -> NoReturn:
    """Refused: Metal capture needs MPS."""
    _no_mps("isCaptureEnabled")


def is_capturing_metal() -> NoReturn:
    """Refused: Metal capture needs MPS."""
    _no_mps("isCapturing")


@contextlib.contextmanager
def metal_capture(fname: str) -> Iterator[None]:
    """Refused: Metal capture needs MPS."""
    _no_mps("startCapture")
    yield  # pragma: no cover  (never reached)
