"""``torch._dynamo``: the names programs use around ``compile`` (``config``, ``reset``,
``disable``, ``optimize``, the shape marks), for ``ndgrad.compile``.

ndgrad traces whole functions with static shapes (seed 004's graph path), so there is no
bytecode analysis and no graph break: ``config`` (ndgrad/jit/config.py) carries torch's
switches, two of which act (``recompile_limit``/``cache_size_limit``, ``suppress_errors``);
``reset()`` makes every compiled function trace again; ``mark_dynamic``/``maybe_mark_dynamic``/
``mark_static`` check their arguments' types as torch does and leave shapes static (each input shape
gets its own specialization).

Example:
    >>> import ndgrad
    >>> import ndgrad._dynamo
    >>> ndgrad._dynamo.config.cache_size_limit
    8
    >>> f = ndgrad._dynamo.optimize("inductor")(lambda x: x * 2)
    >>> f(ndgrad.ones(2))
    tensor([2., 2.])
    >>> ndgrad._dynamo.reset()
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Union

from ..compiler import (allow_in_graph, assume_constant_result, disable, is_compiling,
                        list_backends, reset)
from ..jit.config import config
from ..tensor import Tensor

__all__ = ["config", "reset", "disable", "allow_in_graph", "assume_constant_result",
           "is_compiling", "list_backends", "optimize", "mark_dynamic", "maybe_mark_dynamic",
           "mark_static"]


def optimize(backend: Any = "inductor", *, nopython: bool = False, **kwargs: Any
             ) -> Callable[[Callable], Any]:
    """The older spelling of ``compile``: a decorator compiling with ``backend``
    (``nopython=True`` is ``fullgraph=True``)."""
    from ..jit.api import compile as _compile  # local import: the jit loads on first use
    name = backend if isinstance(backend, str) else None
    return lambda fn: _compile(fn, backend=name, fullgraph=nopython)


def _check_mark(t: Any, index: Any, name: str) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{name}: expected a Tensor, got {type(t).__name__}")
    if not isinstance(index, (int, list, tuple)):
        raise AssertionError(f"Expected index to be int, list, or tuple, got {type(index)}")


def mark_dynamic(t: Any, index: Union[int, list, tuple], *, min: Optional[int] = None,
                 max: Optional[int] = None, **kwargs: Any) -> None:
    """A hint that dimension ``index`` of ``t`` varies between calls; ndgrad compiles each shape
    on its own (static shapes), so the hint is checked and recorded only."""
    _check_mark(t, index, "mark_dynamic")


def maybe_mark_dynamic(t: Any, index: Union[int, list, tuple]) -> None:
    """As ``mark_dynamic``."""
    _check_mark(t, index, "maybe_mark_dynamic")


def mark_static(t: Any, index: Union[int, list, tuple, None] = None) -> None:
    """A hint that ``t``'s shape does not vary: ndgrad's shapes are always static."""
    if index is not None:
        _check_mark(t, index, "mark_static")
