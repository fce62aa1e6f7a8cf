"""``ndgrad.compiler``: the ``torch.compiler`` functions programs call around ``compile``.

ndgrad's compiler traces a whole function into one graph (``ndgrad.compile``, seed 004's graph
path); there are no graph breaks. ``disable``, ``allow_in_graph`` and
``assume_constant_result`` therefore return the function as it is (inside a trace it is traced
like any other code), and ``is_compiling()`` tells whether a trace is being recorded.

Example:
    >>> import ndgrad
    >>> @ndgrad.compiler.disable
    ... def log_stats(x):
    ...     return x
    >>> ndgrad.compiler.is_compiling(), ndgrad.compiler.list_backends()
    (False, ['numba', 'numpy'])
"""

from __future__ import annotations

import sys
from typing import Any, Callable, List, Optional

from .ops import _dispatch

__all__ = ["compile", "disable", "is_compiling", "is_dynamo_compiling", "reset",
           "allow_in_graph", "assume_constant_result", "list_backends"]


def compile(*args: Any, **kwargs: Any) -> Any:
    """``ndgrad.compile`` (``torch.compiler.compile`` is ``torch.compile``)."""
    from .jit.api import compile as _compile  # local import: the jit loads on first use
    return _compile(*args, **kwargs)


def disable(fn: Optional[Callable] = None, recursive: bool = True, *,
            reason: Optional[str] = None) -> Any:
    """``fn`` unchanged (or, without ``fn``, a decorator that returns its function unchanged):
    ndgrad compiles whole graphs, so there is no region to exclude."""
    if fn is None:
        return lambda f: f
    return fn


def allow_in_graph(fn: Callable) -> Callable:
    """``fn`` unchanged: every function ndgrad traces is in the graph."""
    return fn


def assume_constant_result(fn: Callable) -> Callable:
    """``fn`` unchanged: the tracer records what the function's ops compute."""
    return fn


def is_compiling() -> bool:
    """True while ``ndgrad.compile``/``ndgrad.jit.trace`` records a trace."""
    return bool(_dispatch._TRACING)


def is_dynamo_compiling() -> bool:
    """The same as :func:`is_compiling` (ndgrad has one tracer)."""
    return is_compiling()


def reset() -> None:
    """Forget every compiled function's specializations: each traces again at its next call
    (``torch.compiler.reset``, ``torch._dynamo.reset``)."""
    # nothing was compiled if the jit never loaded
    config = sys.modules.get("ndgrad.jit.config")  # local import: only if already loaded
    if config is not None:
        config.reset()


def list_backends(exclude_tags: Any = None) -> List[str]:
    """The backends ``ndgrad.compile`` accepts."""
    return ["numba", "numpy"]
