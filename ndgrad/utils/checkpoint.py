"""Activation checkpointing: trade compute for memory by recomputing a function's forward
during backward instead of keeping its intermediate values.

Two variants, as in PyTorch:

* ``use_reentrant=True``: the function runs under ``no_grad``; its outputs get one node
  (``CheckpointFunctionBackward``) whose backward reruns the function with grad enabled and
  calls ``backward`` on it (a nested, "reentrant" backward). Restrictions (PyTorch's): only
  works with ``backward()`` without ``inputs`` (not with ``autograd.grad``), and at least one
  input tensor must require grad for the outputs to require grad.
* ``use_reentrant=False``: the function runs normally under saved-tensor hooks that drop every
  saved tensor, keeping only its position; the first time backward needs one, the forward is
  rerun (with grad enabled, under hooks that capture the recomputed saved tensors) and the
  recomputed values are used. Works with ``autograd.grad`` and nested structures.

The random generator state is restored for the recomputation (``preserve_rng_state``), so
functions using ``ndgrad.rand*`` recompute the same values.

Example:
    >>> import ndgrad
    >>> from ndgrad.utils.checkpoint import checkpoint
    >>> x = ndgrad.ones(3, requires_grad=True)
    >>> y = checkpoint(lambda a: (a.sin() * 2).exp(), x, use_reentrant=False)
    >>> y.sum().backward()
    >>> x.grad.shape
    ndgrad.Size([3])
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any, Callable, Optional, Sequence

from .. import _creation
from ..amp.autocast_mode import (autocast, get_autocast_dtype, is_autocast_cache_enabled,
                                 is_autocast_enabled)
from ..autograd import engine
from ..autograd.api import backward as autograd_backward
from ..autograd.grad_mode import _state as _grad_state
from ..autograd.grad_mode import enable_grad, no_grad
from ..autograd.node import Node, next_sequence_nr
from ..autograd.saved import SECOND_BACKWARD_MSG, SavedTensor, saved_tensors_hooks
from ..ops._dispatch import gradient_edge
from ..tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError"]


class CheckpointError(RuntimeError):
    """The recomputation did not reproduce what the original forward saved (PyTorch's
    ``torch.utils.checkpoint.CheckpointError``, also a RuntimeError)."""

REENTRANT_GRAD_MSG = (
    "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or passing an "
    "`inputs` parameter to .backward(). To resolve this error, you can either set "
    "use_reentrant=False, or call .backward() without passing the `inputs` argument.")
_USE_REENTRANT_TAIL = (
    "use_reentrant=False is recommended, but if you need to preserve the current default "
    "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
    "differences between the two variants.")
USE_REENTRANT_WARNING = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting "
    "in PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
    + _USE_REENTRANT_TAIL)
SEQUENTIAL_USE_REENTRANT_WARNING = (
    "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
    "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
    + _USE_REENTRANT_TAIL)


def _rng_state() -> Any:
    return _creation._RNG.gen.bit_generator.state


def _set_rng_state(state: Any) -> None:
    _creation._RNG.gen.bit_generator.state = state


def _autocast_state() -> dict:
    """The CPU autocast state of the forward, which the recomputation runs under again (as
    torch's: a region entered around the forward but not around backward still casts)."""
    return {"enabled": is_autocast_enabled("cpu"), "dtype": get_autocast_dtype("cpu"),
            "cache_enabled": is_autocast_cache_enabled()}


def _detached_like(args: tuple) -> list:
    out = []
    for a in args:
        if isinstance(a, Tensor):
            d = a.detach()
            d._requires_grad = a.requires_grad
            out.append(d)
        else:
            out.append(a)
    return out


def _as_tuple(x: Any) -> tuple:
    return x if isinstance(x, tuple) else (x,)


class CheckpointFunctionBackward(Node):
    """The node of a reentrant checkpoint: its backward reruns the function."""

    def __init__(self, fn: Callable, args: tuple, kwargs: dict, rng: Any,
                 n_outputs: int, amp: dict) -> None:
        self._sequence_nr = next_sequence_nr()
        self._fn, self._kwargs, self._rng, self._amp = fn, kwargs, rng, amp
        self._tensor_pos = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        self.next_functions = tuple(gradient_edge(args[i]) for i in self._tensor_pos)
        self._input_meta = tuple((args[i]._data.shape, args[i]._data.dtype)
                                 for i in self._tensor_pos)
        # Tensor inputs are saved for backward: version-checked (and packed by active hooks).
        self._args = tuple(SavedTensor(a) if isinstance(a, Tensor) else a for a in args)
        self._num_inputs = n_outputs
        self._released = False

    def apply(self, grads: list) -> tuple:
        if not engine.is_checkpoint_valid():
            raise RuntimeError(REENTRANT_GRAD_MSG)
        if self._released:
            raise RuntimeError(SECOND_BACKWARD_MSG)
        inputs = _detached_like(_unpack_inputs(self._args, self))
        current = _rng_state()
        if self._rng is not None:
            _set_rng_state(self._rng)
        try:
            with enable_grad(), autocast("cpu", **self._amp):
                outputs = _as_tuple(self._fn(*inputs, **self._kwargs))
        finally:
            _set_rng_state(current)
        pairs = [(o, g) for o, g in zip(outputs, grads)
                 if isinstance(o, Tensor) and o.requires_grad and g is not None]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not "
                               "necessary")
        with enable_grad() if engine.grad_mode._state.enabled else no_grad():
            autograd_backward([o for o, _ in pairs], [g for _, g in pairs])
        return tuple(inputs[i].grad if isinstance(inputs[i], Tensor) else None
                     for i in self._tensor_pos)

    def release_variables(self) -> None:
        self._released = True

    @property
    def _saved(self) -> tuple:  # type: ignore[override]  # computed here, stored on Node
        return () if self._released else (self._args,)


def _unpack_inputs(saved: tuple, node: Any = None) -> tuple:
    return tuple(a.unpack(node) if isinstance(a, SavedTensor) else a for a in saved)


class _StopRecomputation(Exception):
    """Raised by the recomputation's pack hook once every needed tensor is recomputed."""


def _metadata(t: Tensor) -> dict:
    return {"shape": t.shape, "dtype": t.dtype, "device": t.device}


def _checkpoint_reentrant(fn: Callable, args: tuple, kwargs: dict, preserve_rng: bool) -> Any:
    if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      UserWarning, stacklevel=3)
    rng = _rng_state() if preserve_rng else None
    amp = _autocast_state()
    with no_grad():
        outputs = fn(*args, **kwargs)
    outs = _as_tuple(outputs)
    if _grad_state.enabled and any(isinstance(a, Tensor) and a.requires_grad for a in args):
        # An output that is an input (identity, empty segment) gets an alias: the input must
        # keep its own history (a leaf would otherwise point at this node, in a cycle).
        ids = {id(a) for a in args if isinstance(a, Tensor)}
        outs = tuple(o.detach() if isinstance(o, Tensor) and id(o) in ids else o for o in outs)
        outputs = outs if isinstance(outputs, tuple) else outs[0]
        node = CheckpointFunctionBackward(fn, args, kwargs, rng, len(outs), amp)
        for i, o in enumerate(outs):
            if isinstance(o, Tensor) and (o.is_floating_point() or o.is_complex()):
                o._grad_fn = node
                o._requires_grad = True
                o._output_nr = i
    return outputs


def _checkpoint_non_reentrant(fn: Callable, args: tuple, kwargs: dict, preserve_rng: bool,
                              context_fn: Optional[Callable], check_metadata: bool) -> Any:
    rng = _rng_state() if preserve_rng else None
    amp = _autocast_state()
    forward_ctx, recompute_ctx = context_fn() if context_fn is not None else (
        contextlib.nullcontext(), contextlib.nullcontext())
    state: dict = {"count": 0, "values": None}
    meta: list = []
    # The inputs are saved for backward (version-checked, packed by the user's active hooks),
    # as PyTorch does; the recomputation runs on them.
    saved_args = tuple(SavedTensor(a) if isinstance(a, Tensor) else a for a in args)

    def pack(t: Tensor) -> int:
        meta.append(_metadata(t))
        state["count"] += 1
        return state["count"] - 1          # keep only the position: the tensor is dropped

    def unpack(i: int) -> Tensor:
        if state["values"] is None:
            state["values"] = _recompute()
        return state["values"][i]

    def _recompute() -> list:
        captured: list = []
        inputs = _detached_like(_unpack_inputs(saved_args))
        count = state["count"]

        def capture(t: Tensor) -> int:
            # Detached: a recomputed tensor keeping its recompute graph (whose saved tensors
            # point back into ``captured``) would be a reference cycle holding the memory.
            captured.append(t.detach())
            if len(captured) == count:       # everything backward needs: stop early
                raise _StopRecomputation
            return len(captured) - 1

        current = _rng_state()
        if rng is not None:
            _set_rng_state(rng)
        try:
            with saved_tensors_hooks(capture, lambda j: captured[j]):
                with enable_grad(), autocast("cpu", **amp), recompute_ctx:
                    fn(*inputs, **kwargs)
        except _StopRecomputation:
            pass
        finally:
            _set_rng_state(current)
        if len(captured) != count:
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                f"original forward and recomputation.\nNumber of tensors saved during forward: "
                f"{count}\nNumber of tensors saved during recomputation: {len(captured)}.")
        bad = [i for i, t in enumerate(captured)
               if check_metadata and _metadata(t) != meta[i]]
        if bad:
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values for the following tensors have "
                "different metadata than during the forward pass.\n" + "".join(
                    f"tensor at position {i}:\nsaved metadata: {meta[i]}\nrecomputed metadata: "
                    f"{_metadata(captured[i])}\n" for i in bad) + ".")
        return captured

    with saved_tensors_hooks(pack, unpack), forward_ctx:
        return fn(*args, **kwargs)


def checkpoint(function: Callable, *args: Any, use_reentrant: Optional[bool] = None,
               context_fn: Optional[Callable] = None, determinism_check: str = "default",
               debug: bool = False, preserve_rng_state: bool = True, **kwargs: Any) -> Any:
    """Run ``function(*args, **kwargs)`` without keeping its intermediate values; they are
    recomputed during backward, under the forward's autocast state. ``use_reentrant`` selects
    the variant (see the module doc); not passing it warns, as in PyTorch, and uses the
    reentrant variant. ``context_fn`` (non-reentrant only) returns two context managers, one
    entered around the forward, one around the recomputation; ``determinism_check="none"``
    skips the comparison of the recomputed tensors' shapes and dtypes; ``debug`` is accepted
    (torch's operator traces are not kept)."""
    if use_reentrant is None:
        warnings.warn(USE_REENTRANT_WARNING, UserWarning, stacklevel=2)
        use_reentrant = True
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if context_fn is not None or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        return _checkpoint_reentrant(function, args, {}, preserve_rng_state)
    if debug and context_fn is not None:
        raise ValueError("debug=True is incompatible with non-default context_fn")
    if determinism_check not in ("default", "none"):
        raise ValueError("determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    return _checkpoint_non_reentrant(function, args, kwargs, preserve_rng_state, context_fn,
                                     determinism_check == "default")


def checkpoint_sequential(functions: Sequence[Callable], segments: int, input: Any,
                          use_reentrant: Optional[bool] = None, **kwargs: Any) -> Any:
    """Run ``functions`` in order on ``input``, split into ``segments`` chunks; every chunk but
    the last is checkpointed (the last one's values are needed right away by backward)."""
    if use_reentrant is None:
        warnings.warn(SEQUENTIAL_USE_REENTRANT_WARNING, UserWarning, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    functions = list(functions)
    size = len(functions) // segments       # torch's split (and its errors: segments=0 ...)

    def run(start: int, end: int) -> Callable:
        def forward(x: Any) -> Any:
            for f in functions[start:end + 1]:
                x = f(x)
            return x
        return forward

    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)
