"""``spawn`` / ``start_processes``: run ``fn(i, *args)`` in ``nprocs`` processes and report the
first failure as torch does (``ProcessRaisedException`` carrying the child's traceback,
``ProcessExitedException`` for an exit code or a signal; the other processes are then stopped).
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import pathlib
import signal
import sys
import tempfile
import time
import traceback
import warnings
from typing import Any, Callable, List, Optional

__all__ = ["ProcessException", "ProcessRaisedException", "ProcessExitedException",
           "ProcessContext", "spawn", "start_processes"]


class ProcessException(Exception):
    """A process started by ``spawn`` failed: ``error_index`` (its rank) and ``error_pid``."""

    def __init__(self, msg: str, error_index: int, error_pid: int) -> None:
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    def __reduce__(self) -> Any:
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """The process's function raised; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """The process exited with a non-zero code or was killed by a signal."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: Optional[str] = None) -> None:
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self) -> Any:
        return type(self), (self.msg, self.error_index, self.error_pid, self.exit_code,
                            self.signal_name)


def _entry(fn: Callable, i: int, args: tuple, error_file: str) -> None:
    """The child's body: run ``fn(i, *args)``. An exception's formatted traceback goes to
    ``error_file`` (UTF-8 text, which the parent's ``join`` puts in its message) and the
    process exits with status 1; an interrupt (the parent stopping its children) ends it
    quietly."""
    status = 0
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        return
    except Exception:
        report = traceback.format_exc()
        pathlib.Path(error_file).write_text(report, encoding="utf-8")
        status = 1
    if status:
        sys.exit(status)


class ProcessContext:
    """The processes started by ``start_processes(..., join=False)``; ``join()`` waits for
    them and raises on the first failure."""

    def __init__(self, processes: List[Any], error_files: List[str]) -> None:
        self.error_files = error_files
        self.processes = processes
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> List[int]:
        """The process ids, by index."""
        return [int(p.pid) for p in self.processes]

    def _join_all(self, timeout: float) -> None:
        end = time.monotonic() + timeout
        for p in self.processes:
            p.join(max(0.0, end - time.monotonic()))

    def join(self, timeout: Optional[float] = None,
             grace_period: Optional[float] = None) -> bool:
        """Wait up to ``timeout`` for processes to end. Returns True when all have ended
        successfully, False while some still run; when one fails, stops the others (SIGTERM,
        then SIGKILL) and raises ``ProcessRaisedException`` / ``ProcessExitedException``."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        failed = None
        for s in ready:
            i = self.sentinels.pop(s)
            p = self.processes[i]
            p.join()
            if p.exitcode != 0:
                failed = i
                break
        if failed is None:
            return not self.sentinels
        if grace_period is not None:
            self._join_all(grace_period)
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        self._join_all(30 if grace_period is None else grace_period)
        for p in self.processes:
            if p.is_alive():
                p.kill()
            p.join()
        proc = self.processes[failed]
        path = self.error_files[failed]
        if not os.access(path, os.R_OK):
            code = proc.exitcode
            if code < 0:
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"<Unknown signal {-code}>"
                raise ProcessExitedException(f"process {failed:d} terminated with signal {name}",
                                             error_index=failed, error_pid=proc.pid,
                                             exit_code=code, signal_name=name)
            raise ProcessExitedException(f"process {failed:d} terminated with exit code "
                                         f"{code:d}", error_index=failed, error_pid=proc.pid,
                                         exit_code=code)
        trace = pathlib.Path(path).read_text(encoding="utf-8")
        os.unlink(path)
        raise ProcessRaisedException(
            f"\n\n-- Process {failed:d} terminated with the following error:\n" + trace,
            failed, proc.pid)


def start_processes(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True,
                    daemon: bool = False,
                    start_method: str = "spawn") -> Optional[ProcessContext]:
    """Start ``nprocs`` processes of ``start_method`` running ``fn(i, *args)``; wait for them
    (``join=True``) or return their ``ProcessContext``.

    >>> import operator
    >>> import ndgrad.multiprocessing as mp
    >>> mp.start_processes(operator.add, args=(1,), nprocs=2, start_method="fork")
    """
    ctx: Any = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    for i in range(nprocs):
        # a fresh path, created by the child only if fn raises
        fd, path = tempfile.mkstemp(prefix="ndgrad-errorfile-", suffix=".txt")
        os.close(fd)
        os.unlink(path)
        p = ctx.Process(target=_entry, args=(fn, i, args, path), daemon=daemon)
        p.start()
        processes.append(p)
        error_files.append(path)
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True,
          daemon: bool = False, start_method: str = "spawn") -> Optional[ProcessContext]:
    """Run ``fn(i, *args)`` for ``i`` in ``range(nprocs)``, each in a new process started with
    the ``spawn`` method (``fn`` must be importable: defined at a module's top level). With
    ``join`` waits and re-raises a child's exception as ``ProcessRaisedException``; else
    returns the ``ProcessContext``.

    >>> import operator
    >>> import ndgrad.multiprocessing as mp
    >>> ctx = mp.spawn(operator.add, args=(1,), nprocs=1, join=False)
    >>> ctx.join(timeout=120)
    True
    """
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\n"
                      "To use a different start_method use:\n\t\t"
                      " torch.multiprocessing.start_processes(...)", FutureWarning, stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
