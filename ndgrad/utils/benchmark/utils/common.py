"""Shared pieces of ``ndgrad.utils.benchmark``: what was timed (``TaskSpec``), the result
(``Measurement``) and the unit and rounding helpers, as torch.utils.benchmark's.

Statistics follow torch's recipe: quantiles and the mean in float64, the significant-figure
estimate and the unit choice in float32 (torch computes those on default-dtype tensors), so a
``Measurement`` built from the same times prints the same digits as torch's
(Note [Benchmark numerics]).

Example:
    >>> from ndgrad.utils.benchmark import Measurement, TaskSpec
    >>> m = Measurement(10, [1e-4, 2e-4, 3e-4, 4e-4], TaskSpec("f(x)", "pass"))
    >>> round(m.median * 1e6, 6), m.number_per_run, m.significant_figures
    (25.0, 10, 1)
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import math
import textwrap
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

import numpy as np

from ndgrad._threads import get_num_threads, set_num_threads

__all__ = ["TaskSpec", "Measurement", "select_unit", "unit_to_english", "trim_sigfig",
           "ordered_unique", "set_torch_threads"]

# Note [Benchmark numerics]: torch evaluates log10/std/round on float32 tensors (a Python float
# becomes a default-dtype tensor), so boundaries such as "is this 999.99 us or 1.00 ms" fall
# where float32 puts them; the helpers below do the same arithmetic in np.float32.
_F32 = np.float32


def _log10_f32(x: float) -> float:
    """log10 of ``x`` as float32, correctly rounded (NumPy's float32 log10 may be an ulp off
    torch's, which moves unit boundaries such as 1e-6 s)."""
    with np.errstate(all="ignore"):
        return float(_F32(np.log10(np.float64(_F32(x)))))

_SIGFIG_CAP = 4            # never report more than this many significant figures
_CI_FLOOR = 25e-9          # a confidence interval below 25 ns is not believed
_IQR_NOTE = 0.1            # IQR / median above this earns a warning ...
_IQR_LOUD = 0.25           # ... and above this a stronger one


@dataclasses.dataclass(init=True, repr=False, eq=True, frozen=True)
class TaskSpec:
    """What a ``Timer`` runs and how it is labelled (everything but its globals)."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: Optional[str] = None
    sub_label: Optional[str] = None
    description: Optional[str] = None
    env: Optional[str] = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """The label (or the one-line statement), with the sub-label after a colon."""
        tail = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + tail
        if "\n" not in self.stmt:
            return self.stmt + tail
        paren = f" ({self.sub_label})" if self.sub_label else ""
        return f"stmt:{paren}\n" + textwrap.indent(self.stmt, "  ")

    def setup_str(self) -> str:
        """``setup: ...`` (indented on its own lines when multi-line), empty for ``pass``."""
        if not self.setup or self.setup == "pass":
            return ""
        if "\n" in self.setup:
            return "setup:\n" + textwrap.indent(self.setup, "  ")
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        """Title, description and setup, one per line (a multi-line part gets a blank line
        after it)."""
        parts = [p for p in (self.title, self.description or "", self.setup_str()) if p]
        return "\n".join(p + "\n" if "\n" in p else p for p in parts)


_SPEC_FIELDS = frozenset(f.name for f in dataclasses.fields(TaskSpec))


@dataclasses.dataclass(init=True, repr=False)
class Measurement:
    """The times a ``Timer`` took: ``raw_times`` are per block of ``number_per_run`` runs;
    ``times``, ``median``, ``mean`` and ``iqr`` are per run. The ``TaskSpec`` fields
    (``label``, ``stmt``, ``num_threads`` ...) read through."""

    number_per_run: int
    raw_times: List[float]
    task_spec: TaskSpec
    metadata: Optional[Dict[Any, Any]] = None

    def __post_init__(self) -> None:
        self._stats: Optional[Tuple[Tuple[float, ...], float, float, float, float]] = None
        self._warnings: Tuple[str, ...] = ()

    def __getattr__(self, name: str) -> Any:
        if name in _SPEC_FIELDS:
            return getattr(self.task_spec, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __getstate__(self) -> Dict[str, Any]:
        return {"number_per_run": self.number_per_run, "raw_times": self.raw_times,
                "task_spec": self.task_spec, "metadata": self.metadata}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__post_init__()

    @property
    def times(self) -> List[float]:
        """Seconds per run of each block."""
        return [t / self.number_per_run for t in self.raw_times]

    def _computed(self) -> Tuple[Tuple[float, ...], float, float, float, float]:
        if self._stats is None:
            srt = tuple(sorted(self.times))
            if not srt:
                return (), -1.0, -1.0, -1.0, -1.0
            arr = np.asarray(srt, dtype=np.float64)
            q25, q50, q75 = (float(v) for v in np.quantile(arr, (0.25, 0.5, 0.75)))
            self._stats = (srt, q50, float(arr.mean()), q25, q75)
            spread = (q75 - q25) / q50
            if not spread < _IQR_LOUD:
                self._warn("This suggests significant environmental influence.", spread)
            elif not spread < _IQR_NOTE:
                self._warn("This could indicate system fluctuation.", spread)
        return self._stats

    def _warn(self, why: str, spread: float) -> None:
        self._warnings += (f"  WARNING: Interquartile range is {spread * 100:.1f}% of the "
                           f"median measurement.\n           {why}",)

    @property
    def median(self) -> float:
        return self._computed()[1]

    @property
    def mean(self) -> float:
        return self._computed()[2]

    @property
    def iqr(self) -> float:
        _, _, _, q25, q75 = self._computed()
        return q75 - q25

    @property
    def significant_figures(self) -> int:
        """A rough count of trustworthy digits of the median (1 to 4), from the spread of
        the middle half of the times (z = 1.645)."""
        srt, median = self._computed()[:2]
        n = len(srt)
        middle = np.asarray(srt[n // 4:math.ceil(_F32(3 * n / 4))], dtype=_F32)
        spread = float(middle.std()) if middle.size else math.nan
        root_n = float(np.sqrt(_F32(middle.size)))
        ci = max(1.645 * spread / root_n, _CI_FLOOR) if middle.size else math.nan
        digits = math.floor(_log10_f32(median / ci)) if ci > 0 else math.inf
        if not math.isfinite(digits):
            raise ValueError("cannot convert float NaN to integer")
        return min(max(int(digits), 1), _SIGFIG_CAP)

    @property
    def has_warnings(self) -> bool:
        self._computed()
        return bool(self._warnings)

    def meets_confidence(self, threshold: float = _IQR_NOTE) -> bool:
        """Whether IQR / median is below ``threshold``."""
        return self.iqr / self.median < threshold

    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def env(self) -> Optional[str]:
        return self.task_spec.env

    @property
    def as_row_name(self) -> str:
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self) -> str:
        srt, median, _, q25, q75 = self._computed()
        n = len(srt)
        unit, scale = select_unit(median)
        lines = [object.__repr__(self), self.task_spec.summarize()]
        lines.append("  " + ("Median: " if n > 1 else "") + f"{median / scale:.2f} {unit}")
        if n >= 4:
            lines.append(f"  IQR:    {(q75 - q25) / scale:.2f} {unit} "
                         f"({q25 / scale:.2f} to {q75 / scale:.2f})")
        threads = self.num_threads
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} "
                     f"{threads} thread{'s' if threads > 1 else ''}")
        lines.append("\n".join(self._warnings))
        return "\n".join(lines).strip()

    @staticmethod
    def merge(measurements: Iterable["Measurement"]) -> List["Measurement"]:
        """One ``Measurement`` per distinct ``TaskSpec``, pooling the per-run times of its
        replicates (``number_per_run=1``; metadata is dropped)."""
        pooled: Dict[TaskSpec, List[float]] = collections.defaultdict(list)
        for m in measurements:
            pooled[m.task_spec].extend(m.times)
        return [Measurement(number_per_run=1, raw_times=t, task_spec=s, metadata=None)
                for s, t in pooled.items()]


def select_unit(t: float) -> Tuple[str, float]:
    """The unit (``ns``, ``us``, ``ms`` or ``s``) that gives ``t`` seconds one to three
    leading digits, and its scale.

    Example:
        >>> from ndgrad.utils.benchmark import select_unit
        >>> select_unit(0.00042)
        ('us', 1e-06)
    """
    power = _log10_f32(t)
    group = math.floor(power / 3) if math.isfinite(power) else None
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(group, "s")  # type: ignore[arg-type]
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[unit]


def unit_to_english(u: str) -> str:
    """``"us"`` -> ``"microsecond"`` (and ns, ms, s)."""
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[u]


def trim_sigfig(x: float, n: int) -> float:
    """``x`` rounded to ``n`` significant figures (in float32, as torch).

    Example:
        >>> from ndgrad.utils.benchmark import trim_sigfig
        >>> round(trim_sigfig(3.14159, 2), 5)
        3.1
    """
    if n != int(n):
        raise AssertionError("Number of significant figures must be an integer")
    magnitude = math.ceil(_log10_f32(abs(x)))
    scale = 10 ** (magnitude - n)
    return float(_F32(np.round(_F32(x / scale))) * _F32(scale))


def ordered_unique(elements: Iterable[Any]) -> List[Any]:
    """The distinct elements in order of first appearance."""
    return list(dict.fromkeys(elements))


@contextlib.contextmanager
def set_torch_threads(n: int) -> Iterator[None]:
    """Run the block with ``ndgrad.set_num_threads(n)``, restoring the count afterwards."""
    before = get_num_threads()
    try:
        set_num_threads(n)
        yield
    finally:
        set_num_threads(before)
