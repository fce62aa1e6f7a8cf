"""``ndgrad.multiprocessing`` (torch.multiprocessing): the standard ``multiprocessing`` API, with
tensors in shared memory sent between processes by handle, and ``spawn``.

Everything of the standard module is here under the same name (``Process``, ``Queue``, ``Pool``,
``get_context``, ``set_start_method`` ...). Importing this package (or calling
``Tensor.share_memory_``) registers the reducers that send a tensor whose storage is in shared
memory as a handle to that memory, so the receiving process works on the same numbers (Note
[Shared memory] in ndgrad/_shared_memory.py): a Hogwild-style program shares a model's
parameters with ``model.share_memory()`` and trains it from several processes.

Example:
    >>> import ndgrad
    >>> import ndgrad.multiprocessing as mp
    >>> w = ndgrad.zeros(2).share_memory_()
    >>> ctx = mp.get_context("fork")
    >>> p = ctx.Process(target=w.add_, args=(1.0,))
    >>> p.start(); p.join()
    >>> w
    tensor([1., 1.])
"""

from __future__ import annotations

import multiprocessing
from multiprocessing import *  # noqa: F401,F403
from typing import Set

from .._shared_memory import register_reducers
from .spawn import (ProcessContext, ProcessException, ProcessExitedException,
                    ProcessRaisedException, spawn, start_processes)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies",
           "spawn", "start_processes", "ProcessContext", "ProcessException",
           "ProcessExitedException", "ProcessRaisedException"]
__all__ += multiprocessing.__all__

register_reducers()

# ndgrad passes shared memory as file descriptors (torch's default on Linux); torch's
# "file_system" strategy (named segments) is not offered.
_sharing_strategy = "file_descriptor"
_all_sharing_strategies = {"file_descriptor"}


def set_sharing_strategy(new_strategy: str) -> None:
    """Choose how shared tensors are passed; only ``"file_descriptor"`` exists in ndgrad.

    >>> import ndgrad.multiprocessing as mp
    >>> mp.set_sharing_strategy("file_descriptor")
    """
    global _sharing_strategy
    if new_strategy not in _all_sharing_strategies:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}, expected one of "
                             f"{_all_sharing_strategies}")
    _sharing_strategy = new_strategy


def get_sharing_strategy() -> str:
    """The strategy used to pass shared tensors between processes.

    >>> import ndgrad.multiprocessing as mp
    >>> mp.get_sharing_strategy()
    'file_descriptor'
    """
    return _sharing_strategy


def get_all_sharing_strategies() -> Set[str]:
    """The sharing strategies this platform supports.

    >>> import ndgrad.multiprocessing as mp
    >>> mp.get_all_sharing_strategies()
    {'file_descriptor'}
    """
    return set(_all_sharing_strategies)
