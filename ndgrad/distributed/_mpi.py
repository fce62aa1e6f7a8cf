"""The MPI engine under ``ndgrad.distributed``: mpi4py loaded on first use, NumPy buffers of
tensors, the reduction table, work handles and the timeout watchdog.

Note [MPI engine]
ndgrad writes no transport of its own: every byte moves through an MPI library (the ``mpich``
wheel by default, any MPI that mpi4py was built against otherwise). Every collective is started
as a non-blocking MPI call and completed through a :class:`Work` handle, so ``async_op=True`` is
the same code path as a blocking call minus the final ``wait()``. A wait registers a deadline
with one watchdog thread per process; past it the watchdog prints which operation timed out and
aborts the whole MPI job (an MPI collective cannot be cancelled, so a rank waiting for a peer
that died or never called the collective must not stay blocked). mpi4py releases the GIL while
it waits, so the watchdog runs meanwhile.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, Callable, List, Optional

import numpy as np

_MPI = None


def mpi() -> Any:
    """The ``mpi4py.MPI`` module, imported (and MPI initialized) on first use."""
    global _MPI
    if _MPI is None:
        try:
            from mpi4py import MPI
        except ImportError as e:
            raise RuntimeError(
                "ndgrad.distributed runs on MPI through mpi4py, which is not installed: "
                "pip install 'ndgrad[distributed]' (mpi4py and the mpich wheel)") from e
        _MPI = MPI
    return _MPI


def available() -> bool:
    """Whether mpi4py can be imported (without initializing MPI)."""
    if _MPI is not None:
        return True
    import importlib.util
    return importlib.util.find_spec("mpi4py") is not None


# ----------------------------------------------------------------------------- buffers
def contiguous(arr: np.ndarray) -> np.ndarray:
    """``arr`` itself when MPI can use it as a buffer, else a C-contiguous copy."""
    return arr if arr.flags.c_contiguous else np.ascontiguousarray(arr)


def as_bytes(arr: np.ndarray) -> np.ndarray:
    """A C-contiguous array seen as flat bytes (data movement needs no MPI datatype)."""
    return arr.reshape(-1).view(np.uint8)


# Reductions on float16/bfloat16 (no MPI datatype) run in float32; bool reduces as uint8.
_UPCAST = {"float16", "bfloat16"}


def reduce_dtype(dt: np.dtype) -> np.dtype:
    if dt.name in _UPCAST:
        return np.dtype(np.float32)
    if dt == np.bool_:
        return np.dtype(np.uint8)
    return dt


# ----------------------------------------------------------------------------- watchdog
class _Watchdog:
    """One daemon thread per process: aborts the MPI job when a wait outlives its deadline."""

    def __init__(self) -> None:
        self._waits: dict = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._next = 0
        self._thread = threading.Thread(target=self._run, name="ndgrad-dist-watchdog",
                                        daemon=True)
        self._thread.start()

    def register(self, deadline: float, describe: Callable[[float], str]) -> int:
        with self._lock:
            self._next += 1
            self._waits[self._next] = (deadline, describe, time.monotonic())
            return self._next

    def unregister(self, key: int) -> None:
        with self._lock:
            self._waits.pop(key, None)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            now = time.monotonic()
            with self._lock:
                late = [(d, f, t0) for d, f, t0 in self._waits.values() if now > d]
            if late:
                _, describe, t0 = late[0]
                abort_job(describe((now - t0) * 1000.0))


_watchdog: Optional[_Watchdog] = None


def start_watchdog() -> None:
    global _watchdog
    if _watchdog is None:
        _watchdog = _Watchdog()


def stop_watchdog() -> None:
    global _watchdog
    if _watchdog is not None:
        _watchdog.close()
        _watchdog = None


def abort_job(message: str, code: int = 1) -> None:
    """Print ``message`` and end every rank of the job (``MPI_Abort``)."""
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 - a closed stdout must not stop the abort
        pass
    try:
        sys.stderr.write(message.rstrip("\n") + "\n")
        sys.stderr.flush()
    except Exception:  # noqa: BLE001
        pass
    if _MPI is not None and _MPI.Is_initialized() and not _MPI.Is_finalized():
        # mpiexec forwards a rank's output through its proxy, which MPI_Abort kills: without
        # a moment for the forwarding, the message (the reason the job ended) was sometimes
        # lost (seen once in ~10 full test runs)
        time.sleep(0.2)
        _MPI.COMM_WORLD.Abort(code)
    os._exit(code)


class watched:
    """Context manager: a blocking MPI call that the watchdog ends after ``timeout`` seconds."""

    __slots__ = ("timeout", "describe", "key")

    def __init__(self, timeout: Optional[float], describe: Callable[[float], str]) -> None:
        self.timeout = timeout
        self.describe = describe
        self.key: Optional[int] = None

    def __enter__(self) -> "watched":
        if self.timeout is not None and _watchdog is not None:
            self.key = _watchdog.register(time.monotonic() + self.timeout, self.describe)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.key is not None and _watchdog is not None:
            _watchdog.unregister(self.key)


def mpi_error(e: Exception, what: str) -> RuntimeError:
    """An MPI error as the RuntimeError a user sees."""
    text = e.Get_error_string() if hasattr(e, "Get_error_string") else str(e)
    return RuntimeError(f"{what}: MPI error: {text.strip()}")


# ----------------------------------------------------------------------------- work handles
class Work:
    """The handle of an operation started with ``async_op=True`` (torch's ``Work``):
    ``wait()`` blocks until it completed, ``is_completed()`` asks without blocking.

    >>> import ndgrad.distributed as dist
    >>> dist.Work.__name__
    'Work'
    """

    _pg: Any = None          # the process group of a point-to-point operation

    def __init__(self, requests: List[Any], finish: Optional[Callable[[], Any]] = None, *,
                 op_type: str = "", seq: int = 0, rank: int = 0, numel: int = 0,
                 timeout: Optional[float] = None, result: Optional[list] = None,
                 status: Any = None) -> None:
        self._requests = requests
        self._finish = finish
        self._done = False
        self._exception: Optional[BaseException] = None
        self._op_type = op_type
        self._seq = seq
        self._rank = rank
        self._numel = numel
        self._timeout = timeout
        self._result = result if result is not None else []
        self._status = status

    def _describe(self, ran_ms: float) -> str:
        t = "inf" if self._timeout is None else int(self._timeout * 1000)
        return (f"[Rank {self._rank}] Watchdog caught collective operation timeout: "
                f"WorkMPI(SeqNum={self._seq}, OpType={self._op_type}, NumelIn={self._numel}, "
                f"NumelOut={self._numel}, Timeout(ms)={t}) ran for {int(ran_ms)} milliseconds "
                "before timing out. Another rank probably failed, exited or did not call this "
                "operation; aborting the job.")

    def _statuses(self) -> Optional[list]:
        return None if self._status is None else [self._status]

    def _complete(self) -> None:
        if self._done:
            return
        self._done = True
        if self._finish is not None:
            try:
                self._finish()
            except BaseException as e:  # noqa: BLE001 - kept for wait()/exception()
                self._exception = e
        self._requests = []

    def is_completed(self) -> bool:
        """Whether the operation has finished (drives MPI's progress; never blocks)."""
        if self._done:
            return True
        MPI = mpi()
        try:
            if MPI.Request.Testall(self._requests, self._statuses()):
                self._complete()
        except MPI.Exception as e:
            self._done = True
            self._exception = mpi_error(e, self._op_type.lower())
        return self._done

    def wait(self, timeout: Any = None) -> bool:
        """Block until the operation finished (the process group's timeout, or ``timeout``
        as a ``timedelta``, ends the job if it does not); re-raises its error."""
        if not self._done:
            MPI = mpi()
            limit = self._timeout
            if timeout is not None:
                limit = timeout.total_seconds() if hasattr(timeout, "total_seconds") \
                    else float(timeout)
            try:
                with watched(limit, self._describe):
                    MPI.Request.Waitall(self._requests, self._statuses())
                self._complete()
            except MPI.Exception as e:
                self._done = True
                self._exception = mpi_error(e, self._op_type.lower())
        if self._exception is not None:
            raise self._exception
        return True

    def is_success(self) -> bool:
        """Whether the operation completed without an error."""
        return self.is_completed() and self._exception is None

    def exception(self) -> Optional[BaseException]:
        """The error the operation ended with, if any."""
        return self._exception

    def result(self) -> list:
        """The output tensors (after ``wait()``)."""
        self.wait()
        return list(self._result)

    def synchronize(self) -> None:
        """Same as ``wait()`` on the CPU."""
        self.wait()

    def source_rank(self) -> int:
        """The sender of a completed ``irecv`` from any source."""
        if self._status is None:
            raise RuntimeError("source_rank() may only be called on a recv work")
        self.wait()
        return self._status.Get_source()

    def get_future(self) -> "Future":
        """A future whose value is the output tensors of this operation."""
        return Future(self.wait, self.is_completed, lambda: list(self._result))

    def __repr__(self) -> str:
        return f"<Work {self._op_type} seq={self._seq} completed={self._done}>"


class Future:
    """The future of a work handle (torch's ``Future``): ``wait()``/``value()`` give the
    result, ``done()`` asks without blocking, ``then(fn)`` chains ``fn(future)``, run when the
    chained future is waited for (MPI completes operations inside calls, not in the
    background)."""

    def __init__(self, wait: Callable[[], Any], done: Callable[[], bool],
                 value: Callable[[], Any]) -> None:
        self._wait_fn, self._done_fn, self._value_fn = wait, done, value
        self._callbacks: List[Callable[["Future"], Any]] = []
        self._ran = False

    def wait(self) -> Any:
        self._wait_fn()
        self._run_callbacks()
        return self._value_fn()

    def value(self) -> Any:
        return self.wait()

    def done(self) -> bool:
        if self._done_fn():
            self._run_callbacks()
            return True
        return False

    def _run_callbacks(self) -> None:
        if not self._ran:
            self._ran = True
            for cb in self._callbacks:
                cb(self)

    def add_done_callback(self, callback: Callable[["Future"], Any]) -> None:
        self._callbacks.append(callback)

    def then(self, callback: Callable[["Future"], Any]) -> "Future":
        cache: list = []

        def value() -> Any:
            if not cache:
                cache.append(callback(self))
            return cache[0]

        return Future(self.wait, self.done, value)
