"""``Timer``: torch.utils.benchmark's timer (a ``timeit.Timer`` that warms up, pins the thread
count and returns ``Measurement`` objects).

Example:
    >>> import ndgrad
    >>> from ndgrad.utils.benchmark import Timer
    >>> t = Timer("x + y", globals={"x": ndgrad.ones(3), "y": ndgrad.ones(3)}, label="add")
    >>> m = t.timeit(10)
    >>> m.number_per_run, len(m.times), m.title
    (10, 1, 'add')
"""

from __future__ import annotations

import enum
import textwrap
import timeit
from typing import Any, Callable, Dict, List, Optional, Union

import numpy as np

from . import common

__all__ = ["Timer", "timer", "Language"]


def timer() -> float:
    """The clock ``Timer`` reads: ``timeit.default_timer`` (ndgrad has no asynchronous device
    to synchronize first)."""
    return timeit.default_timer()


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


class Timer:
    """Time a Python statement the way ``torch.utils.benchmark.Timer`` does.

    ``stmt`` and ``setup`` are source strings (dedented; a leading newline is dropped) run
    with ``globals``, to which ``torch`` and ``ndgrad`` are added (both name ndgrad, so
    statements written for torch run unchanged). ``label``, ``sub_label``, ``description`` and
    ``env`` name the measurement for printing and for ``Compare``; ``num_threads`` is the
    thread count (``ndgrad.set_num_threads``) while timing, 1 by default.

    ``timeit(number)`` runs the statement ``number`` times once (after a warm-up);
    ``blocked_autorange`` picks a block size whose timer overhead is negligible and repeats
    blocks for ``min_run_time`` seconds; ``adaptive_autorange`` repeats until the spread of
    the blocks is below ``threshold``. C++ statements (``language="c++"``) and Callgrind
    counts need torch's compiled toolchain and are refused.

    Example:
        >>> from ndgrad.utils.benchmark import Timer
        >>> m = Timer("sum(range(10))").blocked_autorange(min_run_time=0.001)
        >>> m.median > 0
        True
    """

    _timer_cls: type = timeit.Timer

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer: Callable[[], float] = timer, globals: Optional[Dict[str, Any]] = None,
                 label: Optional[str] = None, sub_label: Optional[str] = None,
                 description: Optional[str] = None, env: Optional[str] = None,
                 num_threads: int = 1, language: Union[Language, str] = Language.PYTHON) -> None:
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        self._globals = dict(globals or {})
        if language in (Language.PYTHON, "py", "python"):
            import ndgrad  # local import: the package is loaded before its utils, no cycle
            self._globals.setdefault("torch", ndgrad)
            self._globals.setdefault("ndgrad", ndgrad)
            self._language = Language.PYTHON
            if global_setup:
                raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most likely "
                                 "this code can simply be moved to `setup`.")
        elif language in (Language.CPP, "cpp", "c++"):
            raise NotImplementedError(
                "ndgrad has no C++ toolchain: Timer(language='c++') is not supported; time the "
                "Python statement instead.")
        else:
            raise ValueError(f"Invalid language `{language}`.")

        stmt, setup = _clean(stmt), _clean(setup)
        self._timer = self._timer_cls(stmt=stmt, setup=setup, timer=timer,
                                      globals=self._globals)
        self._task_spec = common.TaskSpec(
            stmt=stmt, setup=setup, global_setup=global_setup, label=label,
            sub_label=sub_label, description=description, env=env, num_threads=num_threads)

    def _timeit(self, number: int) -> float:
        # A zero reading (a coarse clock) would break the ratios below.
        return max(self._timer.timeit(number), 1e-9)

    def _measurement(self, number: int, times: List[float]) -> common.Measurement:
        return common.Measurement(number_per_run=number, raw_times=times,
                                  task_spec=self._task_spec)

    def timeit(self, number: int = 1000000) -> common.Measurement:
        """Run ``stmt`` ``number`` times (after a warm-up of ``number // 100``, at least 2) and
        return the one block's time (as ``timeit.Timer.timeit``)."""
        with common.set_torch_threads(self._task_spec.num_threads):
            self._timeit(number=max(int(number // 100), 2))
            return self._measurement(number, [self._timeit(number=number)])

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback: Optional[Callable[[int, float], Any]] = None) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _loop(self, number: int, enough: Callable[[List[float]], bool], min_run_time: float,
              max_run_time: Optional[float],
              callback: Optional[Callable[[int, float], Any]]) -> List[float]:
        # Time blocks of ``number`` runs until ``min_run_time`` is spent and ``enough`` agrees,
        # or ``max_run_time`` is exceeded.
        times: List[float] = []
        total, done = 0.0, False
        with common.set_torch_threads(self._task_spec.num_threads):
            while total < min_run_time or not done:
                t = self._timeit(number)
                times.append(t)
                total += t
                if callback:
                    callback(number, t)
                done = enough(times)
                if max_run_time and total > max_run_time:
                    break
        return times

    def _estimate_block_size(self, min_run_time: float) -> int:
        # Grow the block tenfold until the empty-loop overhead is under 0.01% of a block and a
        # block takes a thousandth of the budget (or the whole budget, or 2**31 runs).
        with common.set_torch_threads(self._task_spec.num_threads):
            overhead = float(np.median(np.asarray([self._timeit(0) for _ in range(5)],
                                                  dtype=np.float32)))
            number = 1
            while True:
                took = self._timeit(number)
                if overhead / took <= 1e-4 and took >= min_run_time / 1000:
                    break
                if took > min_run_time or number * 10 > 2147483647:
                    break
                number *= 10
        return number

    def blocked_autorange(self, callback: Optional[Callable[[int, float], Any]] = None,
                          min_run_time: float = 0.2) -> common.Measurement:
        """Repeat blocks of a calibrated size until ``min_run_time`` seconds are spent; each
        block is one entry of the result's ``raw_times``."""
        number = self._estimate_block_size(min_run_time)
        times = self._loop(number, lambda ts: True, min_run_time, None, callback)
        return self._measurement(number, times)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0,
                           callback: Optional[Callable[[int, float], Any]] = None
                           ) -> common.Measurement:
        """Like ``blocked_autorange``, but keep going (past ``min_run_time``, up to
        ``max_run_time``) until more than three blocks have IQR / median below
        ``threshold``."""
        number = self._estimate_block_size(min_run_time=0.05)

        def enough(times: List[float]) -> bool:
            return len(times) > 3 and self._measurement(number, times).meets_confidence(
                threshold=threshold)

        times = self._loop(number, enough, min_run_time, max_run_time, callback)
        return self._measurement(number, times)

    def collect_callgrind(self, number: int = 100, *, repeats: Optional[int] = None,
                          collect_baseline: bool = True, retain_out_file: bool = False) -> Any:
        """Instruction counts need torch's Valgrind bindings: refused."""
        if repeats is not None and repeats < 1:
            raise ValueError("If specified, `repeats` must be >= 1")
        raise NotImplementedError(
            "ndgrad has no Callgrind bindings: collect_callgrind is not supported; use "
            "blocked_autorange for wall times.")


def _clean(src: str) -> str:
    src = textwrap.dedent(src)
    return (src[1:] if src[:1] == "\n" else src).rstrip()
