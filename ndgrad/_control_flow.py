"""Eager forms of torch's control-flow operators and of TorchScript's futures: ``cond``,
``while_loop`` (the argument checks torch makes, then plain Python control flow, so autograd
records whichever branch or iterations ran) and ``fork``/``wait`` (the call runs at ``fork``;
its ``Future`` is complete at once, as torch's are outside TorchScript).

Example:
    >>> import ndgrad
    >>> ndgrad.cond(ndgrad.tensor(True), lambda x: x + 1, lambda x: x - 1,
    ...             (ndgrad.ones(2),)).tolist()
    [2.0, 2.0]
    >>> ndgrad.while_loop(lambda i: i < 3, lambda i: (i + 1,), (ndgrad.tensor(0),))
    (tensor(3),)
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional

from . import _dtype
from ._torch_function import handle_torch_function, has_torch_function
from .tensor import Tensor


def _leaves(tree: Any) -> List[Any]:
    if isinstance(tree, (tuple, list)):
        return [leaf for item in tree for leaf in _leaves(item)]
    if isinstance(tree, dict):
        return [leaf for item in tree.values() for leaf in _leaves(item)]
    return [tree]


def cond(pred: Any, true_fn: Callable, false_fn: Callable, operands: Any = ()) -> Any:
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``; ``pred`` is a bool or a
    one-element tensor, ``operands`` a tuple or list of tensors (possibly nested)."""
    if not isinstance(pred, (bool, int, float, Tensor)):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    if isinstance(pred, Tensor) and pred.numel() != 1:
        raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got "
                           f"{pred}.")
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("Expect both branches to be callable.")
    if not isinstance(operands, (tuple, list)) or not all(
            isinstance(t, Tensor) for t in _leaves(operands)):
        raise RuntimeError("Expect operands to be a tuple of possibly nested dict/list/tuple "
                           f"that only consists of tensor leaves, but got {operands}.")
    take = bool(pred.item()) if isinstance(pred, Tensor) else bool(pred)
    return true_fn(*operands) if take else false_fn(*operands)


def _check_pred(pred: Any) -> bool:
    if isinstance(pred, bool):
        return pred
    if isinstance(pred, Tensor) and pred.shape == () and pred.dtype == _dtype.bool:
        return bool(pred.item())
    raise RuntimeError(f"cond_fn must return a boolean scalar tensor or a boolean but got "
                       f"{pred}")


def while_loop(cond_fn: Callable, body_fn: Callable, carried_inputs: Any) -> Any:
    """``carried = body_fn(*carried)`` while ``cond_fn(*carried)``; ``body_fn`` returns a tuple
    of as many values as ``carried_inputs`` (tensors or ints). Returns the final values."""
    if not callable(cond_fn) or not callable(body_fn):
        raise RuntimeError("Expect cond_fn and body_fn to be callable.")
    if not isinstance(carried_inputs, (tuple, list)):
        raise RuntimeError(f"carried_inputs must be a tuple or list but got "
                           f"{type(carried_inputs)}")
    if not all(isinstance(t, (Tensor, int)) for t in _leaves(carried_inputs)):
        raise RuntimeError("Expect carried_inputs to be a tuple of possibly nested "
                           "dict/list/tuple that only consists of tensor or int leaves, but "
                           f"got {carried_inputs}.")
    carried = tuple(carried_inputs)
    if not _check_pred(cond_fn(*carried)):
        return tuple(v.clone() if isinstance(v, Tensor) else v for v in carried)
    while True:
        out = body_fn(*carried)
        if not isinstance(out, tuple):
            raise AssertionError(f"body_fn should return a tuple but got {type(out)}")
        if len(out) != len(carried_inputs):
            raise AssertionError(f"body_fn should return the same number of elements as "
                                 f"carried_inputs, got {len(out)} vs {len(carried_inputs)}")
        carried = out
        if not _check_pred(cond_fn(*carried)):
            return carried


class Future:
    """A completed (or failed) asynchronous result, as ``torch.jit.Future``."""

    def __init__(self) -> None:
        self._done = False
        self._value: Any = None
        self._error: Optional[BaseException] = None
        self._callbacks: List[Callable] = []

    def done(self) -> bool:
        return self._done

    def set_result(self, result: Any) -> None:
        if self._done:
            raise RuntimeError("Future can only be marked completed once.")
        self._value, self._done = result, True
        self._run_callbacks()

    def set_exception(self, result: BaseException) -> None:
        if self._done:
            raise RuntimeError("Future can only be marked completed once.")
        self._error, self._done = result, True
        self._run_callbacks()

    def wait(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._value

    value = wait

    def then(self, callback: Callable[["Future"], Any]) -> "Future":
        out = Future()

        def chained(fut: "Future") -> None:
            try:
                out.set_result(callback(fut))
            except Exception as e:  # noqa: BLE001 - carried to the chained future
                out.set_exception(e)
        self.add_done_callback(chained)
        return out

    def add_done_callback(self, callback: Callable[["Future"], None]) -> None:
        if self._done:
            callback(self)
        else:
            self._callbacks.append(callback)

    def _run_callbacks(self) -> None:
        callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(self)


def fork(func: Callable, *args: Any, **kwargs: Any) -> Future:
    """Run ``func(*args, **kwargs)`` now and return its completed ``Future`` (an exception
    propagates at once, as torch's eager ``fork``).

    Example:
        >>> import ndgrad
        >>> ndgrad.wait(ndgrad.fork(lambda x: x + 1, ndgrad.ones(1))).tolist()
        [2.0]
    """
    fut = Future()
    fut.set_result(func(*args, **kwargs))
    return fut


def wait(future: Future) -> Any:
    """The value of a ``Future`` from ``fork``."""
    if not isinstance(future, Future):
        raise TypeError(f"wait(): incompatible function arguments. The following argument "
                        f"types are supported:\n    1. (arg0: Future) -> object\n\nInvoked "
                        f"with: {future!r}")
    return future.wait()


def _assert(condition: Any, message: str) -> None:
    """``assert condition, message`` that symbolic tracing records (``torch._assert``).

    >>> import ndgrad
    >>> ndgrad._assert(True, "never raised")
    """
    if type(condition) is not bool and has_torch_function((condition,)):
        return handle_torch_function(_assert, (condition,), condition, message)
    assert condition, message
