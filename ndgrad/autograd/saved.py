"""Saved tensors: values a node keeps for its backward, checked against in-place changes.

Note [Saved tensors and version counters]
A ``SavedTensor`` remembers the version of the tensor when it was saved. Every in-place op bumps
the version counter shared by a tensor, its views and its detached aliases; unpacking a saved
tensor whose counter moved raises PyTorch's "modified by an inplace operation" error. An op that
saves its own output keeps a detached alias (no ``grad_fn``, so no reference cycle between the
node and its output) and rebuilds the output's history on unpack when a graph is being recorded
(double backward). ``release()`` drops the value: unpacking afterwards raises the "backward
through the graph a second time" error.

Example:
    >>> import ndgrad
    >>> x = ndgrad.ones(2, requires_grad=True)
    >>> y = x.exp()
    >>> y.grad_fn._saved_result.shape
    ndgrad.Size([2])
"""

from __future__ import annotations

from typing import Any

from .grad_mode import _state as _grad_state

_new = object.__new__

__all__ = ["SavedTensor", "SavedValue", "SECOND_BACKWARD_MSG"]

SECOND_BACKWARD_MSG = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed when "
    "you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward.")


class SavedValue:
    """A saved non-tensor value (the scalar of ``x * 2``); freed with the node's tensors."""

    __slots__ = ("_value",)

    def __init__(self, value: Any) -> None:
        self._value = value

    def unpack(self, node: Any = None) -> Any:
        return self._value

    def release(self) -> None:
        self._value = None


class SavedTensor:
    __slots__ = ("_tensor", "_version", "_is_output", "_freed", "_output_nr")

    def __init__(self, tensor: Any, is_output: bool = False, output_nr: int = 0) -> None:
        vc = tensor._version_counter
        if is_output:
            # Detached alias sharing data and version counter: breaks the node<->output cycle.
            if vc is None:
                vc = tensor._version_counter = [0]
            alias = _new(type(tensor))
            alias._data = tensor._data
            alias._version_counter = vc
            tensor = alias
        self._tensor = tensor
        self._version = vc[0] if vc is not None else 0
        self._is_output = is_output
        self._output_nr = output_nr
        self._freed = False

    def unpack(self, node: Any = None) -> Any:
        if self._freed:
            raise RuntimeError(SECOND_BACKWARD_MSG)
        t = self._tensor
        vc = t._version_counter
        if vc is not None and vc[0] != self._version:
            raise RuntimeError(_modified_message(t, node, self, vc[0]))
        if self._is_output and node is not None:
            if _grad_state.enabled:
                # Double backward: the saved output must carry its history.
                out = t._alias()
                out._version_counter = vc
                out._grad_fn = node
                out._requires_grad = True
                out._output_nr = self._output_nr
                return out
        return t

    def release(self) -> None:
        self._freed = True
        self._tensor = None


def _modified_message(t: Any, node: Any, saved: SavedTensor, current: int) -> str:
    from .._dtype import from_numpy_dtype
    dt = from_numpy_dtype(t._data.dtype)._torch_name
    shape = list(t._data.shape)
    where = ""
    # Name the forward op that produced the tensor as PyTorch does: "ExpBackward0" -> "Exp",
    # "MaxBackward1" -> "Max1".
    if saved._is_output and node is not None:
        fn, nr = node, saved._output_nr
    else:
        fn, nr = t._grad_fn, t._output_nr
    if fn is not None:
        label = fn.name().replace("Backward0", "").replace("Backward", "")
        where = f", which is output {nr} of {label},"
    return (
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [torch.{dt}Tensor {shape}]{where} is at version {current}; expected "
        f"version {saved._version} instead. Hint: the backtrace further above can point to the "
        "operation that failed to compute its gradient. The variable in question was changed in "
        "there or anywhere later. Good luck!")
