"""Grad modes: whether operations are recorded for backward, per thread.

Example:
    >>> import ndgrad
    >>> x = ndgrad.ones(2, requires_grad=True)
    >>> with ndgrad.no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
"""

from __future__ import annotations

import functools
import inspect
import threading
import warnings
from typing import Any, Callable, TypeVar

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
           "is_inference_mode_enabled"]

F = TypeVar("F", bound=Callable[..., Any])


class _GradState(threading.local):
    # A new thread starts with grad enabled and outside inference mode, as in PyTorch.
    enabled = True
    inference = False
    inference_grad = False
    # Note [Pruned backward]: while a backward pass with ``inputs`` runs in this thread, the
    # nodes that receive gradients (engine.py); a node's rule skips the others' gradients.
    receivers = None


# Note [Grad mode inside inference mode]
# ``_state.enabled`` is what the dispatcher reads: whether ops are recorded. Inference mode
# records nothing, so it keeps ``enabled`` False; the grad mode the user sets inside it
# (``enable_grad`` ...) only changes what ``is_grad_enabled()`` reports, kept in
# ``inference_grad`` (PyTorch: grad mode on, still no recording and inference tensors).


# Note [Grad mode is thread-local]
# The dispatcher reads ``_state.enabled`` on every op (ops/_dispatch.py); the engine sets it to
# ``create_graph`` for the duration of a backward pass in the calling thread only.
_state = _GradState()


def is_grad_enabled() -> bool:
    """True if grad mode is on in this thread (outside inference mode: operations on tensors
    that require grad are recorded)."""
    return _state.inference_grad if _state.inference else _state.enabled


def _set(mode: bool) -> None:
    if _state.inference:
        _state.inference_grad = bool(mode)
    else:
        _state.enabled = bool(mode)


class _GradModeContext:
    """Shared machinery: usable as ``with`` block and as a function decorator."""

    _mode: bool

    def __enter__(self) -> None:
        self._prev = is_grad_enabled()
        _set(self._mode)

    def __exit__(self, *exc: object) -> None:
        _set(self._prev)

    def clone(self) -> "_GradModeContext":
        return self.__class__()

    def __call__(self, fn: F) -> F:
        if inspect.isclass(fn):
            warnings.warn("Decorating classes is deprecated and will be disabled in future "
                          "versions. You should only decorate functions or methods. To preserve "
                          "the current behavior of class decoration, you can directly decorate "
                          "the `__init__` method and nothing else.", FutureWarning, stacklevel=2)
            cls = fn
            fn = lambda *args, **kwargs: cls(*args, **kwargs)  # type: ignore[assignment]  # noqa: E501  (instances made in the mode; the decorated class is returned)
        if inspect.isgeneratorfunction(fn):
            return self._wrap_generator(fn)  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper  # type: ignore[return-value]

    def _wrap_generator(self, fn: Callable) -> Callable:
        """A generator function whose body runs in this mode: every resume of the generator
        (``next``, ``send``, ``throw``, ``close``) enters the mode and leaves it again at the
        next ``yield``, so that the caller keeps its own mode in between."""
        @functools.wraps(fn)
        def gen_wrapper(*args, **kwargs):
            gen = fn(*args, **kwargs)
            resume, value = gen.send, None
            while True:
                with self.clone():
                    try:
                        out = resume(value)
                    except StopIteration as stop:
                        return stop.value
                try:
                    value = yield out
                    resume = gen.send
                except GeneratorExit:
                    with self.clone():
                        gen.close()
                    raise
                except BaseException as exc:      # gen_wrapper.throw(...): forward it
                    resume, value = gen.throw, exc
        return gen_wrapper


class no_grad(_GradModeContext):
    """Disable recording of operations, as a context manager or decorator.

    >>> import ndgrad
    >>> @ndgrad.no_grad()
    ... def f(x):
    ...     return x * 2
    >>> f(ndgrad.ones(1, requires_grad=True)).requires_grad
    False
    """

    _mode = False

    def __init__(self, orig_func: Callable | None = None) -> None:
        self._orig = orig_func

    def __new__(cls, orig_func: Callable | None = None):
        # ``@no_grad`` without parentheses, as PyTorch allows.
        if orig_func is not None and callable(orig_func):
            return cls()(orig_func)
        return super().__new__(cls)


class enable_grad(no_grad):
    """Enable recording inside a ``no_grad`` region, as a context manager or decorator.

    >>> import ndgrad
    >>> x = ndgrad.ones(1, requires_grad=True)
    >>> with ndgrad.no_grad():
    ...     with ndgrad.enable_grad():
    ...         y = x * 2
    >>> y.requires_grad
    True
    """

    _mode = True


class set_grad_enabled(_GradModeContext):
    """Set grad mode on or off. Takes effect immediately; as a ``with`` block it restores the
    previous mode on exit.

    >>> import ndgrad
    >>> with ndgrad.set_grad_enabled(False):
    ...     ndgrad.is_grad_enabled()
    False
    """

    def __init__(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise TypeError("set_grad_enabled(): argument 'enabled' (position 1) must be bool, "
                            f"not {type(mode).__name__}")
        self._prev = is_grad_enabled()
        self._mode = bool(mode)
        _set(self._mode)

    def __enter__(self) -> None:
        _set(self._mode)

    def __exit__(self, *exc: object) -> None:
        _set(self._prev)

    def clone(self) -> "set_grad_enabled":
        return set_grad_enabled(self._mode)

    def __call__(self, fn: F) -> F:
        # Used as a decorator: construction must not leave the mode changed.
        _set(self._prev)
        return super().__call__(fn)


def is_inference_mode_enabled() -> bool:
    """True inside ``inference_mode()`` in this thread."""
    return _state.inference


class inference_mode(_GradModeContext):
    """Like ``no_grad``, and more: tensors created inside are *inference tensors* that have no
    version counter and can never be recorded by autograd (PyTorch's InferenceMode).

    >>> import ndgrad
    >>> with ndgrad.inference_mode():
    ...     y = ndgrad.ones(2) * 2
    >>> y.is_inference(), y.requires_grad
    (True, False)
    """

    def __init__(self, mode: bool = True) -> None:
        self._mode = bool(mode)

    def __new__(cls, mode: Any = True):
        if callable(mode) and not isinstance(mode, bool):   # @inference_mode without ()
            return cls()(mode)
        return super().__new__(cls)

    def __enter__(self) -> None:
        self._prev_state = (_state.enabled, _state.inference, _state.inference_grad)
        # As PyTorch's InferenceMode(mode): grad mode is set to ``not mode``.
        if self._mode:
            _state.enabled = False
            _state.inference = True
            _state.inference_grad = False
        else:
            _state.inference = False
            _state.enabled = True

    def __exit__(self, *exc: object) -> None:
        _state.enabled, _state.inference, _state.inference_grad = self._prev_state

    def clone(self) -> "inference_mode":
        return inference_mode(self._mode)


# ---------------------------------------------------------------------------- multithreading
class _MultithreadingState(threading.local):
    enabled = True          # a new thread starts enabled, as in PyTorch


_mt_state = _MultithreadingState()


def is_multithreading_enabled() -> bool:
    """True unless ``set_multithreading_enabled(False)`` is in effect in this thread."""
    return _mt_state.enabled


class set_multithreading_enabled(_GradModeContext):
    """Enable or disable multithreaded backward, for this thread. Takes effect immediately; as
    a ``with`` block it restores the previous setting on exit.

    PyTorch uses the flag to run backward on per-device worker threads. ndgrad's engine always
    runs a backward pass in the calling thread (concurrent backward passes from several
    threads are supported either way), so the flag is recorded and reported only.

    >>> import ndgrad
    >>> with ndgrad.autograd.set_multithreading_enabled(False):
    ...     ndgrad.autograd.is_multithreading_enabled()
    False
    >>> ndgrad.autograd.is_multithreading_enabled()
    True
    """

    def __init__(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise TypeError("set_multithreading_enabled(): argument 'enabled' (position 1) must "
                            f"be bool, not {type(mode).__name__}")
        self._prev = _mt_state.enabled
        self._mode = mode
        _mt_state.enabled = mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        _mt_state.enabled = self._prev

    def clone(self) -> "set_multithreading_enabled":
        return set_multithreading_enabled(self._mode)


__all__ += ["set_multithreading_enabled", "is_multithreading_enabled"]
