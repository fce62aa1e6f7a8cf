"""A CPU profiler for ndgrad programs: ``profile``, ``record_function`` and the event lists.

Note [Profiler]
A ``profile`` records, for the thread that entered it, one event per
  * forward op run by the dispatcher, named ``ndgrad::<op>`` (``ndgrad::mul``);
  * custom ``Function.apply`` call, named after the Function class;
  * backward node run by the engine: ``autograd::engine::evaluate_function: MulBackward0`` (the
    node with its hooks) around ``MulBackward0`` (the node's backward itself), and inside them
    the ops the backward runs;
  * ``record_function(name)`` range.
Events nest by time on their thread; an event's *self* time excludes its children's time.
The dispatcher (``ops/_dispatch.py apply``) checks ONE module flag, ``_dispatch._PROFILING``,
true while any profiler is recording (kept in sync through ``attach``); with no profiler the
per-op cost is that check. The engine checks ``_ACTIVE`` once per backward call and only then
takes its instrumented path.

Example:
    >>> import ndgrad
    >>> from ndgrad.autograd import profiler
    >>> x = ndgrad.ones(3, requires_grad=True)
    >>> with profiler.profile() as prof:
    ...     with profiler.record_function("step"):
    ...         (x * 2).sum().backward()
    >>> [k for k in sorted({e.key for e in prof.key_averages()}) if "Mul" in k]
    ['MulBackward0', 'autograd::engine::evaluate_function: MulBackward0']
    >>> [(e.key, e.count) for e in prof.key_averages() if e.key.startswith("ndgrad::m")]
    [('ndgrad::mul', 2)]
"""

from __future__ import annotations

import functools
import json
import os
import sys
import threading
from time import perf_counter_ns
from typing import Any, Callable, Iterable, Optional, TypeVar

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg"]

F = TypeVar("F", bound=Callable[..., Any])

_ACTIVE = 0                      # profilers recording, in any thread
_LOCK = threading.Lock()
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_SKIP = object()                 # returned by _prof_apply: "not recorded, run the op plainly"
# The dispatcher (ops/_dispatch.py, a layer above) registers itself at import through
# ``attach`` (Note [Instrumentation flags]): its plain ``apply`` and a function told whether
# any profiler is recording.
_dispatch_apply: Any = None
_set_profiling: Any = None


class _Local(threading.local):
    prof: Optional["profile"] = None
    skip: Optional[tuple] = None  # (op, tensors) of the call whose own body runs next

    def __init__(self) -> None:
        self.stack: list = []    # open events, innermost last


_tls = _Local()


class FunctionEvent:
    """One recorded range: an op, a backward node or a ``record_function`` block.

    Times are in microseconds; ``cpu_time_total`` includes the children, ``self_cpu_time_total``
    does not.
    """

    __slots__ = ("id", "name", "thread", "start_ns", "end_ns", "input_shapes", "stack",
                 "cpu_parent", "cpu_children", "_children_ns", "category")

    def __init__(self, id: int, name: str, thread: int, start_ns: int,  # noqa: A002
                 input_shapes: Optional[list], stack: Optional[list], category: str) -> None:
        self.id = id
        self.name = name
        self.thread = thread
        self.start_ns = start_ns
        self.end_ns = start_ns
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack if stack is not None else []
        self.cpu_parent: Optional[FunctionEvent] = None
        self.cpu_children: list = []
        self._children_ns = 0
        self.category = category

    @property
    def key(self) -> str:
        """The grouping key used by ``key_averages`` (the event's name)."""
        return self.name

    @property
    def count(self) -> int:
        """Number of calls this event stands for: always 1."""
        return 1

    @property
    def is_user_annotation(self) -> bool:
        """True for ranges opened with ``record_function``."""
        return self.category == "user_annotation"

    @property
    def time_range(self) -> tuple:
        """``(start, end)`` in µs since the profiler started."""
        return (self.start_ns / 1e3, self.end_ns / 1e3)

    @property
    def cpu_time_total(self) -> float:
        """Time from start to end of the event, µs."""
        return (self.end_ns - self.start_ns) / 1e3

    @property
    def self_cpu_time_total(self) -> float:
        """Total time less the time spent in child events, µs."""
        return (self.end_ns - self.start_ns - self._children_ns) / 1e3

    @property
    def cpu_time(self) -> float:
        """Time of this single call, µs (equals ``cpu_time_total``)."""
        return self.cpu_time_total

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} thread={self.thread} "
                f"cpu_time={_fmt_time(self.cpu_time_total)} "
                f"self_cpu_time={_fmt_time(self.self_cpu_time_total)} "
                f"input_shapes={self.input_shapes}>")


class FunctionEventAvg:
    """Events sharing a key (their name, plus their input shapes when grouped by them)."""

    def __init__(self, key: str, input_shapes: Optional[list] = None,
                 stack: Optional[list] = None) -> None:
        self.key = key
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack if stack is not None else []
        self.is_user_annotation = False

    def add(self, other: Any) -> "FunctionEventAvg":
        """Fold ``other``'s call count and times into this average; returns ``self``."""
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.is_user_annotation = other.is_user_annotation
        return self

    @property
    def cpu_time(self) -> float:
        """Average total time per call, µs."""
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} "
                f"self_cpu_time={_fmt_time(self.self_cpu_time_total)} "
                f"cpu_time={_fmt_time(self.cpu_time)} input_shapes={self.input_shapes}>")


class EventList(list):
    """A list of events with PyTorch's summaries: ``key_averages``, ``table``,
    ``export_chrome_trace``."""

    def key_averages(self, group_by_input_shape: bool = False,
                     group_by_stack_n: int = 0) -> "EventList":
        """One ``FunctionEventAvg`` per event name (and input shapes / top stack frames when
        asked), in order of first occurrence."""
        groups: dict = {}
        for ev in self:
            key = ev.key
            gk: tuple = (key,)
            if group_by_input_shape:
                gk += (str(ev.input_shapes),)
            if group_by_stack_n > 0:
                gk += tuple(ev.stack[:group_by_stack_n])
            avg = groups.get(gk)
            if avg is None:
                avg = groups[gk] = FunctionEventAvg(
                    key, ev.input_shapes if group_by_input_shape else None,
                    ev.stack[:group_by_stack_n] if group_by_stack_n > 0 else None)
            avg.add(ev)
        return EventList(groups.values())

    def total_average(self) -> FunctionEventAvg:
        """A single ``FunctionEventAvg`` named ``Total`` summing all events."""
        total = FunctionEventAvg("Total")
        for ev in self:
            total.add(ev)
        return total

    @property
    def self_cpu_time_total(self) -> float:
        """Sum of the self times of all events, µs."""
        return sum(ev.self_cpu_time_total for ev in self)

    def table(self, sort_by: Optional[str] = None, row_limit: int = 100,
              max_name_column_width: int = 55, header: Optional[str] = None,
              top_level_events_only: bool = False) -> str:
        """A text table, one row per entry, sorted descending by ``sort_by`` (an attribute:
        ``"cpu_time_total"``, ``"self_cpu_time_total"``, ``"cpu_time"``, ``"count"``)."""
        return _table(self, sort_by, row_limit, max_name_column_width, header,
                      top_level_events_only)

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as Chrome trace JSON (open in chrome://tracing or Perfetto)."""
        _write_trace(self, path)

    def __str__(self) -> str:
        return self.table()


class profile:
    """Record the ops, backward nodes and ``record_function`` ranges run in this thread.

    Args:
        enabled: False makes the context manager a no-op.
        record_shapes: record the input shapes of each op (``[]`` for non-tensor arguments).
        with_stack: record the Python call stack of each event (``file(line): function``).

    Other keyword arguments of PyTorch's profiler (``use_cuda``, ``profile_memory`` ...) are
    accepted and ignored, except that CUDA cannot be requested.

    >>> import ndgrad
    >>> from ndgrad.autograd.profiler import profile
    >>> with profile(record_shapes=True) as prof:
    ...     y = ndgrad.ones(2, 3) * 2
    >>> [(e.name, e.input_shapes) for e in prof.function_events]
    [('ndgrad::mul', [[2, 3], []])]
    """

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False,
                 record_shapes: bool = False, with_stack: bool = False,
                 **kwargs: Any) -> None:
        if use_cuda or kwargs.get("use_device") not in (None, "cpu"):
            raise RuntimeError("ndgrad only supports the cpu device")
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.with_stack = with_stack
        self._events: list = []
        self._entered = False
        self._finished = False
        self._t0 = 0
        self._ids = 0
        self.function_events: Optional[EventList] = None

    def __enter__(self) -> "profile":
        global _ACTIVE
        if not self.enabled:
            return self
        if self._entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        if _tls.prof is not None:
            raise RuntimeError("Profiler is already enabled on this thread")
        self._entered = True
        self._t0 = perf_counter_ns()
        _tls.prof = self
        with _LOCK:
            _ACTIVE += 1
            if _set_profiling is not None:
                _set_profiling(True)
        return self

    def __exit__(self, *exc: object) -> None:
        global _ACTIVE
        if not self.enabled:
            return
        with _LOCK:
            _ACTIVE -= 1
            if _set_profiling is not None:
                _set_profiling(_ACTIVE > 0)
        _tls.prof = None
        _tls.stack = []
        self._finished = True
        evs = sorted(self._events, key=lambda e: (e.start_ns, -e.end_ns))
        for e in evs:
            e.start_ns -= self._t0
            e.end_ns -= self._t0
        self.function_events = EventList(evs)

    # -------------------------------------------------------------- recording
    def _open(self, name: str, shapes: Optional[list], category: str) -> FunctionEvent:
        self._ids += 1
        stack = _python_stack() if self.with_stack else None
        ev = FunctionEvent(self._ids, name, threading.get_ident(), 0, shapes, stack, category)
        open_events = _tls.stack
        if open_events:
            ev.cpu_parent = open_events[-1]
        open_events.append(ev)
        ev.start_ns = perf_counter_ns()
        return ev

    def _close(self, ev: FunctionEvent) -> None:
        ev.end_ns = end = perf_counter_ns()
        open_events = _tls.stack
        if open_events and open_events[-1] is ev:
            open_events.pop()
        elif ev in open_events:
            open_events.remove(ev)
        parent = ev.cpu_parent
        if parent is not None:
            parent._children_ns += end - ev.start_ns
            parent.cpu_children.append(ev)
        self._events.append(ev)

    # -------------------------------------------------------------- results
    def _check_finish(self) -> EventList:
        if not self.enabled:
            return EventList()
        if not self._finished:
            raise RuntimeError("Profiler didn't finish running")
        return self.function_events  # type: ignore[return-value]

    def events(self) -> EventList:
        """All recorded events, ordered by start time."""
        return self._check_finish()

    def key_averages(self, group_by_input_shape: bool = False,
                     group_by_stack_n: int = 0) -> EventList:
        """Events averaged per name (see ``EventList.key_averages``)."""
        return self._check_finish().key_averages(group_by_input_shape, group_by_stack_n)

    def total_average(self) -> FunctionEventAvg:
        """``EventList.total_average`` over the finished profile's events."""
        return self._check_finish().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        """Sum of the self times of all events, µs."""
        return self._check_finish().self_cpu_time_total

    def table(self, sort_by: Optional[str] = None, row_limit: int = 100,
              max_name_column_width: int = 55, header: Optional[str] = None,
              top_level_events_only: bool = False) -> str:
        """The text summary of the finished profile (see ``EventList.table``)."""
        return self._check_finish().table(sort_by, row_limit, max_name_column_width, header,
                                          top_level_events_only)

    def export_chrome_trace(self, path: str) -> None:
        """Write a Chrome trace JSON file: ``{"traceEvents": [...]}`` with one complete event
        (``"ph": "X"``, ``ts``/``dur`` in µs) per recorded event."""
        _write_trace(self._check_finish(), path)

    def __str__(self) -> str:
        return self.table()


class record_function:
    """Label a block of code (context manager) or every call of a function (decorator); the
    range appears as an event while a profiler is recording and costs almost nothing otherwise.

    >>> import ndgrad
    >>> from ndgrad.autograd.profiler import profile, record_function
    >>> with profile() as prof:
    ...     with record_function("outer"):
    ...         with record_function("inner"):
    ...             pass
    >>> [(e.name, e.cpu_parent and e.cpu_parent.name) for e in prof.function_events]
    [('outer', None), ('inner', 'outer')]
    """

    def __init__(self, name: str, args: Optional[str] = None) -> None:
        self.name = name
        self.args = args
        self._event: Optional[FunctionEvent] = None
        self._prof: Optional[profile] = None

    def __enter__(self) -> "record_function":
        prof = _tls.prof
        if prof is not None:
            self._prof = prof
            self._event = prof._open(self.name, None, "user_annotation")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._event is not None:
            self._prof._close(self._event)  # type: ignore[union-attr]
            self._event = self._prof = None

    def __call__(self, fn: F) -> F:
        name, args = self.name, self.args

        @functools.wraps(fn)
        def wrapper(*a: Any, **kw: Any) -> Any:
            with record_function(name, args):
                return fn(*a, **kw)
        return wrapper  # type: ignore[return-value]


# ---------------------------------------------------------------------------- hooks for the runtime
def attach(apply: Callable, set_profiling: Callable[[bool], None]) -> None:
    """Register the dispatcher: ``apply`` runs an op unrecorded (``_prof_apply`` wraps it),
    ``set_profiling(flag)`` is called whenever profilers start or stop recording."""
    global _dispatch_apply, _set_profiling
    with _LOCK:
        _dispatch_apply = apply
        _set_profiling = set_profiling
        set_profiling(_ACTIVE > 0)


def _prof_apply(op: Any, tensors: tuple, arrays: tuple, args: tuple) -> Any:
    """The dispatcher's profiled path: record ``op`` as one event around the plain ``apply``."""
    tls = _tls
    prof = tls.prof
    if prof is None:
        return _SKIP
    skip = tls.skip
    if skip and skip[0] is op and skip[1] is tensors:
        # The recorded call's own body: run it plainly. Matching the op and its very
        # arguments, so an op run by a batching rule in between is still recorded.
        tls.skip = None
        return _SKIP
    shapes = None
    if prof.record_shapes:
        shapes = [list(t._data.shape) for t in tensors] + [[] for _ in args]
    ev = prof._open("ndgrad::" + op.name, shapes, "cpu_op")
    tls.skip = (op, tensors)
    try:
        return _dispatch_apply(op, tensors, arrays, args)
    finally:
        tls.skip = None
        prof._close(ev)


def current() -> Optional[profile]:
    """The profiler recording in this thread, if any."""
    return _tls.prof


class _Range:
    """A named event on ``prof`` (used by the engine and by ``Function.apply``)."""

    __slots__ = ("prof", "name", "shapes", "event")

    def __init__(self, prof: profile, name: str, shapes: Optional[list] = None) -> None:
        self.prof = prof
        self.name = name
        self.shapes = shapes

    def __enter__(self) -> None:
        self.event = self.prof._open(self.name, self.shapes, "cpu_op")

    def __exit__(self, *exc: object) -> None:
        self.prof._close(self.event)


# ---------------------------------------------------------------------------- output
def _python_stack() -> list:
    """``file(line): function`` of the current Python frames outside ndgrad, innermost
    first."""
    out = []
    f: Any = sys._getframe(2)
    while f is not None:
        fn = f.f_code.co_filename
        if not fn.startswith(_PKG_DIR):
            out.append(f"{fn}({f.f_lineno}): {f.f_code.co_name}")
        f = f.f_back
    return out


def _fmt_time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _table(events: Iterable[Any], sort_by: Optional[str], row_limit: int, name_width: int,
           header: Optional[str], top_level_only: bool) -> str:
    evs = list(events)
    if top_level_only:
        evs = [e for e in evs if getattr(e, "cpu_parent", None) is None]
    if not evs:
        return ""
    if sort_by is not None:
        evs.sort(key=lambda e: getattr(e, sort_by), reverse=True)
    total_self = sum(e.self_cpu_time_total for e in evs)
    shown = evs[:row_limit] if row_limit is not None and row_limit >= 0 else evs
    width = min(max(len(e.key) for e in evs) + 4, name_width)
    with_shapes = any(e.input_shapes for e in evs)
    heads = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
             "# of Calls"]
    widths = [width] + [12] * 6
    if with_shapes:
        heads.append("Input Shapes")
        widths.append(max(12, max(len(str(e.input_shapes)) for e in evs) + 2))
    rule = "  ".join("-" * w for w in widths)

    def row(cells: list) -> str:
        return "  ".join(str(c).rjust(w) for c, w in zip(cells, widths))

    def pct(x: float) -> str:
        return f"{100.0 * x / total_self:.2f}%" if total_self > 0 else "0.00%"

    lines = []
    if header:
        lines += ["=" * len(rule), header]
    lines += [rule, row(heads), rule]
    for e in shown:
        name = e.key if len(e.key) <= width else e.key[:width - 3] + "..."
        cells = [name, pct(e.self_cpu_time_total), _fmt_time(e.self_cpu_time_total),
                 pct(e.cpu_time_total), _fmt_time(e.cpu_time_total), _fmt_time(e.cpu_time),
                 e.count]
        if with_shapes:
            cells.append(str(e.input_shapes))
        lines.append(row(cells))
    lines += [rule, f"Self CPU time total: {_fmt_time(total_self)}", ""]
    return "\n".join(lines)


def _write_trace(events: Iterable[FunctionEvent], path: str) -> None:
    pid = os.getpid()
    out: list = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                  "args": {"name": "python"}}]
    for tid in sorted({e.thread for e in events}):
        out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                    "args": {"name": f"thread {tid}"}})
    for e in events:
        ev: dict = {"ph": "X", "cat": e.category, "name": e.name, "pid": pid, "tid": e.thread,
              "ts": e.start_ns / 1e3, "dur": (e.end_ns - e.start_ns) / 1e3,
              "args": {"External id": e.id}}
        if e.input_shapes:
            ev["args"]["Input Dims"] = e.input_shapes
        if e.stack:
            ev["args"]["Call stack"] = ";".join(e.stack)
        out.append(ev)
    with open(path, "w") as f:
        json.dump({"traceEvents": out, "displayTimeUnit": "ms"}, f)
