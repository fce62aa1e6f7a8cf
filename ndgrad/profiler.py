"""``ndgrad.profiler``: PyTorch's ``torch.profiler`` API on ndgrad's CPU profiler.

The events are those of ``ndgrad.autograd.profiler`` (Note [Profiler]): one per forward op
(``ndgrad::mul``), backward node and ``record_function`` range. This module adds what programs
written for ``torch.profiler`` use around them: activities, a step ``schedule`` with its
``ProfilerAction`` cycle (wait, warmup, active, repeated), ``on_trace_ready`` called at the end of
each active cycle, ``ProfilerStep#N`` ranges around the steps, ``tensorboard_trace_handler``.

Note [Profiler steps]
A ``profile`` holds one recording session (an ``ndgrad.autograd.profiler.profile``) per active
cycle. The transition from the previous step's action to the next one decides what happens, as
in torch: entering WARMUP prepares a fresh session; entering RECORD or RECORD_AND_SAVE starts
recording; leaving RECORD_AND_SAVE stops it and calls ``on_trace_ready``; WARMUP records nothing
here (torch warms its tracer up; ndgrad's costs nothing to start). With a schedule, each step is
wrapped in a ``ProfilerStep#<n>`` range; ``events()`` and ``key_averages()`` call them all
``ProfilerStep*`` while the Chrome trace keeps the numbers, as torch does. Without
``acc_events=True`` only the last cycle's events are kept.

Example:
    >>> import ndgrad
    >>> from ndgrad.profiler import profile, ProfilerActivity, record_function
    >>> with profile(activities=[ProfilerActivity.CPU]) as prof:
    ...     with record_function("model"):
    ...         y = ndgrad.ones(2, 3) * 2
    >>> [e.key for e in prof.key_averages()]
    ['model', 'ndgrad::mul']
"""

from __future__ import annotations

import enum
import gzip
import os
import socket
import tempfile
import time
import warnings
from typing import Any, Callable, Iterable, Optional, Set

from .autograd import profiler as _aprof
from .autograd.profiler import EventList, record_function

__all__ = ["profile", "schedule", "supported_activities", "tensorboard_trace_handler",
           "ProfilerAction", "ProfilerActivity", "kineto_available", "record_function"]

_STEP_PREFIX = "ProfilerStep#"
_STEP_KEY = "ProfilerStep*"
_warned_clears = False       # torch warns once per process that cycles replace the events


class ProfilerActivity(enum.Enum):
    """The device groups a profiler can record; ndgrad records ``CPU`` only.

    >>> from ndgrad.profiler import ProfilerActivity, supported_activities
    >>> ProfilerActivity.CPU in supported_activities()
    True
    """

    CPU = 0
    XPU = 1
    CUDA = 2
    HPU = 3
    MTIA = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    """What the profiler does at a step (returned by a ``schedule``).

    >>> from ndgrad.profiler import ProfilerAction
    >>> ProfilerAction.RECORD_AND_SAVE.value
    3
    """

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4


def supported_activities() -> Set[ProfilerActivity]:
    """The activities this build can record: ``{ProfilerActivity.CPU}``.

    >>> from ndgrad.profiler import supported_activities
    >>> supported_activities()
    {<ProfilerActivity.CPU: 0>}
    """
    return {ProfilerActivity.CPU}


def kineto_available() -> bool:
    """Whether the full (Kineto) profiler is there: ndgrad's is, in its CPU form.

    >>> from ndgrad.profiler import kineto_available
    >>> kineto_available()
    True
    """
    return True


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """A step schedule: skip ``skip_first`` steps, then cycles of ``wait`` idle steps,
    ``warmup`` steps and ``active`` recorded steps (the last one ``RECORD_AND_SAVE``),
    ``repeat`` times (0: until profiling ends). ``skip_first_wait`` drops the first cycle's wait.

    >>> from ndgrad.profiler import schedule
    >>> s = schedule(wait=1, warmup=1, active=2, repeat=1)
    >>> [s(i).name for i in range(5)]
    ['NONE', 'WARMUP', 'RECORD', 'RECORD_AND_SAVE', 'NONE']
    """
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), "
            f"warmup={warmup} (need >= 0), active={active} (need > 0), repeat={repeat} "
            f"(need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)
    cycle = wait + warmup + active

    def action(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        k = step - skip_first + (wait if skip_first_wait else 0)
        if repeat > 0 and k >= repeat * cycle:
            return ProfilerAction.NONE
        k %= cycle
        if k < wait:
            return ProfilerAction.NONE
        if k < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if k < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: Optional[str] = None,
                              use_gzip: bool = False,
                              use_python_export: bool = False) -> Callable[[Any], None]:
    """An ``on_trace_ready`` callback writing each cycle's Chrome trace into ``dir_name`` as
    ``<worker_name>.<time_ns>.pt.trace.json`` (``.gz`` with ``use_gzip``); the worker name
    defaults to ``<hostname>_<pid>``.

    >>> import os, tempfile, ndgrad
    >>> from ndgrad.profiler import profile, tensorboard_trace_handler
    >>> d = tempfile.mkdtemp()
    >>> with profile(on_trace_ready=tensorboard_trace_handler(d, "w0")):
    ...     _ = ndgrad.ones(2) + 1
    >>> [f.split(".")[0] for f in os.listdir(d)]
    ['w0']
    """
    def handler(prof: Any) -> None:
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker_name}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, name))

    return handler


def _activity_set(activities: Optional[Iterable[Any]]) -> Set[ProfilerActivity]:
    if activities is None:
        return supported_activities()
    out: Set[ProfilerActivity] = set()
    for item in activities:
        if isinstance(item, ProfilerActivity):
            out.add(item)
        elif isinstance(item, dict):
            out.update(k for k in item if isinstance(k, ProfilerActivity))
    return out


class profile:
    """Profile the ops, backward nodes and ``record_function`` ranges run in this thread, as
    ``torch.profiler.profile`` (CPU only; see Note [Profiler steps] for ``schedule``).

    Args:
        activities: ``ProfilerActivity`` groups; only ``CPU`` records (asking for CUDA warns,
            as torch's CPU build does, and CUDA alone is an error when profiling starts).
        schedule: step -> ``ProfilerAction`` (see ``schedule``); default: record every step.
        on_trace_ready: called with the profiler at the end of each active cycle.
        record_shapes: record the ops' input shapes.
        with_stack: record the Python stack of each event.
        profile_memory, with_flops, with_modules, experimental_config,
        execution_trace_observer: accepted, no extra columns.
        acc_events: keep the events of all cycles instead of the last one.

    >>> import ndgrad
    >>> from ndgrad.profiler import profile, schedule
    >>> seen = []
    >>> with profile(schedule=schedule(wait=1, warmup=1, active=1, repeat=1),
    ...              on_trace_ready=lambda p: seen.append(p.step_num)) as prof:
    ...     for _ in range(4):
    ...         _ = ndgrad.ones(2) * 2
    ...         prof.step()
    >>> seen, [(e.key, e.count) for e in prof.key_averages()]
    ([3], [('ProfilerStep*', 1), ('ndgrad::mul', 1)])
    """

    def __init__(self, *, activities: Optional[Iterable[Any]] = None,
                 schedule: Optional[Callable[[int], ProfilerAction]] = None,
                 on_trace_ready: Optional[Callable[..., Any]] = None,
                 record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config: Any = None,
                 execution_trace_observer: Any = None, acc_events: bool = False,
                 use_cuda: Optional[bool] = None,
                 custom_trace_id_callback: Optional[Callable[[], str]] = None,
                 post_processing_timeout_s: Optional[float] = None) -> None:
        acts = _activity_set(activities)
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead",
                          FutureWarning, stacklevel=2)
            if use_cuda:
                acts.add(ProfilerActivity.CUDA)
            else:
                acts.discard(ProfilerActivity.CUDA)
        if not acts:
            raise AssertionError("No valid profiler activities found")
        self.activities = acts
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.acc_events = acc_events
        self.custom_trace_id_callback = custom_trace_id_callback
        self.record_steps = schedule is not None
        self.schedule = schedule if schedule is not None else _always_record
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.profiler: Optional[_aprof.profile] = None   # the session of the current cycle
        self._events: Optional[EventList] = None         # events of the finished cycle(s)
        self._step_names: dict = {}                      # step event -> "ProfilerStep#n"
        self._step_range: Optional[record_function] = None
        action = self.schedule(0)
        self._check_action(action)
        self.current_action = action

    # ---------------------------------------------------------------- cycle
    @staticmethod
    def _check_action(action: ProfilerAction) -> None:
        if action == ProfilerAction.DEVICE_STOPPED:
            raise ValueError("ProfilerAction.DEVICE_STOPPED is set internally by the profiler "
                             "and must not be returned by a user-provided schedule")

    def _prepare(self) -> None:
        if ProfilerActivity.CUDA in self.activities:
            warnings.warn("CUDA is not available, disabling CUDA profiling", stacklevel=3)
        if ProfilerActivity.CPU not in self.activities:
            raise AssertionError("No activities specified for the profiler")
        global _warned_clears
        if self.profiler is not None and not self.acc_events and not _warned_clears:
            _warned_clears = True
            warnings.warn("Warning: Profiler clears events at the end of each cycle. Only "
                          "events from the current cycle will be reported. To keep events "
                          "across cycles, set acc_events=True.", stacklevel=3)
        self.profiler = _aprof.profile(record_shapes=self.record_shapes,
                                       with_stack=self.with_stack)

    def _start(self) -> None:
        if self.profiler is None or self.profiler._entered:
            self._prepare()
        self.profiler.__enter__()  # type: ignore[union-attr]

    def _stop(self) -> None:
        session = self.profiler
        if session is None or not session._entered or session._finished:
            return
        session.__exit__(None, None, None)
        evs = session.function_events or EventList()
        if not self.acc_events:
            self._step_names = {}
        for e in evs:
            if e.name.startswith(_STEP_PREFIX):
                self._step_names[e] = e.name
                e.name = _STEP_KEY
        if self.acc_events and self._events is not None:
            self._events = EventList(list(self._events) + list(evs))
        else:
            self._events = evs

    def _trace_ready(self) -> None:
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _transit(self, prev: Optional[ProfilerAction], cur: Optional[ProfilerAction]) -> None:
        A = ProfilerAction
        recording = (A.RECORD, A.RECORD_AND_SAVE)
        if prev in (A.NONE, A.WARMUP) and cur in recording:
            self._start()
        elif prev == A.NONE and cur == A.WARMUP:
            self._prepare()
        elif prev == A.WARMUP and cur == A.NONE:
            warnings.warn("Incorrect schedule: WARMUP followed by NONE", stacklevel=3)
        elif prev == A.RECORD and cur in (A.NONE, A.WARMUP):
            warnings.warn(f"Incorrect schedule: RECORD followed by {cur.name}", stacklevel=3)
            self._stop()
        elif prev == A.RECORD_AND_SAVE and cur is not None:
            self._stop()
            self._trace_ready()
            if cur != A.NONE:
                self._prepare()
            if cur in recording:
                self._start()
        elif prev in recording and cur is None:
            self._stop()
            self._trace_ready()
        elif prev == A.WARMUP and cur is None and not self.acc_events:
            self._events = EventList()     # torch starts and stops an empty session

    def _open_step(self) -> None:
        if self.record_steps:
            self._step_range = record_function(_STEP_PREFIX + str(self.step_num))
            self._step_range.__enter__()

    def _close_step(self) -> None:
        if self._step_range is not None:
            self._step_range.__exit__(None, None, None)
            self._step_range = None

    def start(self) -> None:
        """Begin profiling at the current step's action (``__enter__`` calls it)."""
        self._transit(ProfilerAction.NONE, self.current_action)
        self._open_step()

    def stop(self) -> None:
        """End profiling; a cycle still recording is finished and handed to
        ``on_trace_ready``."""
        self._close_step()
        self._transit(self.current_action, None)

    def step(self) -> None:
        """Mark the start of the next step: moves through the schedule's actions."""
        self._close_step()
        prev = self.current_action
        action = self.schedule(self.step_num + 1)
        self._check_action(action)
        self.step_num += 1
        self.current_action = action
        self._transit(prev, action)
        self._open_step()

    def __enter__(self) -> "profile":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---------------------------------------------------------------- results
    def _finished_events(self, what: str) -> EventList:
        if self.profiler is None and self._events is None:
            raise AssertionError(f"Profiler must be initialized before {what}")
        return self._events if self._events is not None else EventList()

    def events(self) -> EventList:
        """The events of the last finished cycle (all cycles with ``acc_events``); empty
        while the first cycle is still recording."""
        return self._finished_events("accessing events")

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """Events averaged per name (and input shapes / stack frames when asked); the
        result's ``table(sort_by=..., row_limit=...)`` prints torch's summary table."""
        return self._finished_events("getting key averages").key_averages(
            group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str, use_python_export: bool = False) -> None:
        """Write the events as Chrome trace JSON (gzip-compressed when ``path`` ends in
        ``.gz``); step ranges keep their ``ProfilerStep#<n>`` names."""
        evs = self._finished_events("exporting chrome trace")
        renamed = [(e, e.name) for e in evs if e in self._step_names]
        for e, _ in renamed:
            e.name = self._step_names[e]
        try:
            if path.endswith(".gz"):
                fd, tmp = tempfile.mkstemp(suffix=".json")
                os.close(fd)
                try:
                    evs.export_chrome_trace(tmp)
                    with open(tmp, "rb") as src, gzip.open(path, "wb") as dst:
                        dst.write(src.read())
                finally:
                    os.remove(tmp)
            else:
                evs.export_chrome_trace(path)
        finally:
            for e, name in renamed:
                e.name = name
