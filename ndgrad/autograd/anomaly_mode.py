"""Anomaly detection for the autograd engine: ``detect_anomaly`` and ``set_detect_anomaly``.

Note [Anomaly mode]
While anomaly detection is on (a process-wide switch, as in PyTorch):
  * every node created records the Python stack of the forward call that created it, and the
    node the engine was running in this thread when it was created (its *parent*: nodes built
    by a backward pass under ``create_graph=True``). Built-in ops do it in
    ``ops/_dispatch.py _new_node`` behind ONE check of the module flag ``_dispatch._ANOMALY``
    (kept in sync through ``watch`` below, Note [Instrumentation flags]); custom Functions in
    ``autograd/function.py``;
  * the engine (``autograd/engine.py``) takes its instrumented path, chosen once per backward
    call: a node output containing NaN raises "Function 'XBackward0' returned nan values in its
    0th output." (if ``check_nan``), and any error raised while running a node is preceded by a
    warning showing the node's forward traceback, then one warning per parent.
With anomaly detection off nothing is recorded and the engine's fast path is unchanged.

Example:
    >>> import ndgrad, warnings
    >>> x = ndgrad.tensor([0.0], requires_grad=True)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     with ndgrad.autograd.detect_anomaly():
    ...         y = x / x
    ...         try:
    ...             y.backward()
    ...         except RuntimeError as e:
    ...             print(e)
    Function 'DivBackward0' returned nan values in its 1th output.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import traceback
import warnings
from typing import Any, Callable, Optional, TypeVar

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]

F = TypeVar("F", bound=Callable[..., Any])

_enabled = False
_check_nan = True
_watchers: list = []    # called with the new mode on every change (see ``watch``)


class _Local(threading.local):
    node: Any = None        # the node the engine is running in this thread (parent tracking)


_tls = _Local()
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def is_anomaly_enabled() -> bool:
    """True while anomaly detection is on.

    >>> import ndgrad
    >>> ndgrad.autograd.is_anomaly_enabled()
    False
    """
    return _enabled


def is_anomaly_check_nan_enabled() -> bool:
    """True if anomaly detection (when on) checks node outputs for NaN (the default)."""
    return _check_nan


def _set(mode: bool, check_nan: bool) -> None:
    global _enabled, _check_nan
    if not isinstance(mode, bool):
        raise TypeError("set_anomaly_enabled(): argument 'enabled' (position 1) must be bool, "
                        f"not {type(mode).__name__}")
    _enabled = mode
    _check_nan = bool(check_nan)
    for fn in _watchers:
        fn(mode)


def watch(fn: Callable[[bool], None]) -> None:
    """Call ``fn(enabled)`` now and whenever anomaly mode is switched: how the dispatcher
    (ops/_dispatch.py, a layer above) keeps its own flag in sync (Note [Instrumentation flags])."""
    _watchers.append(fn)
    fn(_enabled)


class detect_anomaly:
    """Context manager (and, as an ndgrad extension, decorator) that turns anomaly detection on.

    Nodes created inside remember their forward traceback; errors in backward are preceded by a
    warning showing it, and (with ``check_nan=True``) a backward function returning NaN raises.
    Warns on construction that the mode is slow, as PyTorch does.

    >>> import ndgrad, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     with ndgrad.autograd.detect_anomaly(check_nan=False):
    ...         ndgrad.autograd.is_anomaly_enabled(), \
ndgrad.autograd.is_anomaly_check_nan_enabled()
    (True, False)
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.prev = _enabled
        self.check_nan = check_nan
        self.prev_check_nan = _check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self) -> None:
        self.prev = _enabled
        self.prev_check_nan = _check_nan
        _set(True, self.check_nan)

    def __exit__(self, *exc: object) -> None:
        _set(self.prev, self.prev_check_nan)

    def __call__(self, fn: F) -> F:
        check_nan = self.check_nan

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            prev, prev_nan = _enabled, _check_nan
            _set(True, check_nan)
            try:
                return fn(*args, **kwargs)
            finally:
                _set(prev, prev_nan)
        return wrapper  # type: ignore[return-value]


class set_detect_anomaly:
    """Turn anomaly detection on or off. Takes effect immediately; as a ``with`` block it
    restores the previous setting on exit.

    >>> import ndgrad
    >>> with ndgrad.autograd.set_detect_anomaly(True, check_nan=False):
    ...     ndgrad.autograd.is_anomaly_enabled()
    True
    >>> ndgrad.autograd.is_anomaly_enabled()
    False
    """

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = _enabled
        self.prev_check_nan = _check_nan
        _set(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        _set(self.prev, self.prev_check_nan)


# ---------------------------------------------------------------------------- recording
class _ForwardTrace:
    """What a node remembers under anomaly mode: its forward stack and its parent node."""

    __slots__ = ("stack", "parent")

    def __init__(self, stack: traceback.StackSummary, parent: Any) -> None:
        self.stack = stack
        self.parent = parent


def record(node: Any) -> None:
    """Store the current Python stack (without ndgrad's innermost frames) and the running
    node on ``node`` (called for every node created while anomaly mode is on)."""
    frames = traceback.StackSummary.extract(traceback.walk_stack(sys._getframe(1)),
                                            lookup_lines=False)
    frames.reverse()                          # outermost first, like a traceback
    n = len(frames)
    while n and frames[n - 1].filename.startswith(_PKG_DIR):
        n -= 1
    stack = traceback.StackSummary.from_list(frames[:n] if n else frames)
    node._anomaly_trace = _ForwardTrace(stack, _tls.node)


def report(node: Any) -> None:
    """Warn with the forward traceback of ``node`` and of its parents (before an error)."""
    trace: Optional[_ForwardTrace] = node._anomaly_trace
    if trace is None:
        warnings.warn(f"Error detected in {node.name()}. No forward pass information available. "
                      "Enable detect anomaly during forward pass for more information.",
                      UserWarning, stacklevel=2)
        return
    warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused the "
                  f"error:\n{''.join(trace.stack.format())}", UserWarning, stacklevel=2)
    parent = trace.parent
    while parent is not None:
        ptrace = parent._anomaly_trace
        if ptrace is None:
            break
        warnings.warn(f"\n\nPrevious calculation was induced by {parent.name()}. Traceback of "
                      "forward call that induced the previous calculation:\n"
                      f"{''.join(ptrace.stack.format())}", UserWarning, stacklevel=2)
        parent = ptrace.parent


def check_outputs_for_nan(node: Any, outputs: Any) -> None:
    """Raise if a gradient computed by ``node`` contains NaN."""
    import numpy as np
    for i, g in enumerate(outputs):
        if g is None:
            continue
        data = g._data
        if data.dtype.kind not in "biu" and np.isnan(data).any():
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th "
                               "output.")
