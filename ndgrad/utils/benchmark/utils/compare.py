"""``Compare``: torch.utils.benchmark's table of measurements (rows: sub-labels or statements,
grouped by thread count; columns: descriptions; one table per label).

Example:
    >>> from ndgrad.utils.benchmark import Compare, Measurement, TaskSpec
    >>> ms = [Measurement(1, [t * 1e-6] * 4, TaskSpec("f(x)", "pass", label="f",
    ...                                               description=d))
    ...       for t, d in ((5.0, "n=1"), (7.5, "n=2"))]
    >>> print(Compare(ms))
    [---------- f -----------]
                |  n=1  |  n=2
    1 threads: ---------------
          f(x)  |  5.0  |  7.5
    <BLANKLINE>
    Times are in microseconds (us).
    <BLANKLINE>
"""

from __future__ import annotations

import collections
import enum
import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import common

__all__ = ["Colorize", "Compare"]

# ANSI sequences of the colored table (as torch's).
_BEST = "\033[92m"
_GOOD = "\033[34m"
_BAD = "\033[2m\033[91m"
_VERY_BAD = "\033[31m"
_BOLD = "\033[1m"
_END = "\033[0m"


class Colorize(enum.Enum):
    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def _leading_digits(value: float) -> int:
    return math.ceil(common._log10_f32(value))


class _Column:
    """One description's numbers: a common width and number of decimals."""

    def __init__(self, groups: List[Tuple[Optional[common.Measurement], ...]], scale: float,
                 trim: bool, highlight: bool) -> None:
        self.groups = groups
        present = [m for g in groups for m in g if m is not None]
        self.scale, self.trim = scale, trim
        self.highlight = highlight and any(m.has_warnings for m in present)
        digits = [_leading_digits(m.median / scale) for m in present]
        whole = max(digits)
        decimals = min(max(m.significant_figures - d, 0)
                       for m, d in zip(present, digits)) if trim else 1
        self.width = whole + decimals + (1 if decimals else 0)
        self.decimals = decimals

    def cell(self, value: Optional[float], sigfigs: int, spread: Optional[float]) -> str:
        if value is None:
            return " " * len(self.cell(1, sigfigs, None))
        if self.trim:
            value = common.trim_sigfig(value, sigfigs)
        note = f" (! {spread * 100:.0f}%)" if self.highlight and spread is not None else ""
        return f"{value:>{self.width}.{self.decimals}f}" + f"{note:>{7 if self.highlight else 0}}"


class _Row:
    """One row name (within a thread-count group): its cells and colors."""

    def __init__(self, results: List[Optional[common.Measurement]], group: int,
                 show_env: bool, env_width: int, scale: float, colorize: Colorize,
                 threads_header: Optional[int]) -> None:
        self.results, self.group = results, group
        self.show_env, self.env_width = show_env, env_width
        self.scale, self.colorize = scale, colorize
        self.threads_header = threads_header
        self.columns: Tuple[_Column, ...] = ()

    def strings(self) -> List[str]:
        first = next(m for m in self.results if m is not None)
        env = (f"({first.env})" if self.show_env else "").ljust(self.env_width + 4)
        out = ["  " + env + first.as_row_name]
        for m, col in zip(self.results, self.columns):
            if m is None:
                out.append(col.cell(None, 1, None))
            else:
                out.append(col.cell(m.median / self.scale, m.significant_figures,
                                    m.iqr / m.median if m.has_warnings else None))
        return out

    def separator(self, width: int) -> List[str]:
        if self.threads_header is None:
            return []
        return [f"{self.threads_header} threads: ".ljust(width, "-")]

    def finish(self, strings: List[str], widths: List[int]) -> List[str]:
        best: Sequence[Optional[float]] = [-1.0] * len(strings)
        if self.colorize == Colorize.ROWWISE:
            best = [min(m.median for m in self.results if m is not None)] * len(strings)
        elif self.colorize == Colorize.COLUMNWISE:
            best = [min((m.median for m in c.groups[self.group] if m is not None), default=None)
                    for c in self.columns]
        out = [strings[0].ljust(widths[0])]
        for s, w, m, b in zip(strings[1:], widths[1:], self.results, best):
            s = s.center(w)
            if self.colorize != Colorize.NONE and m is not None and b is not None:
                s = _paint(s, m.median, b)
            out.append(s)
        return out


def _paint(text: str, value: float, best: float) -> str:
    if value <= best * 1.01 or value <= best + 100e-9:
        return _BEST + _BOLD + text + _END * 2
    if value <= best * 1.1:
        return _GOOD + _BOLD + text + _END * 2
    if value >= best * 5:
        return _VERY_BAD + _BOLD + text + _END * 2
    if value >= best * 2:
        return _BAD + text + _END * 2
    return text


class _Table:
    """The table of one label."""

    def __init__(self, results: List[common.Measurement], colorize: Colorize, trim: bool,
                 highlight: bool) -> None:
        self.results, self.highlight = results, highlight
        self.label = results[0].label
        self.unit, self.scale = common.select_unit(min(m.median for m in results))

        def row_key(m: common.Measurement) -> Tuple[int, Any, str]:
            return m.num_threads, m.env, m.as_row_name

        keys = common.ordered_unique(row_key(m) for m in results)
        keys.sort(key=lambda k: k[:2])       # stable: statements keep their order
        self.column_keys = common.ordered_unique(m.description for m in results)
        cells: List[List[Optional[common.Measurement]]] = [
            [None] * len(self.column_keys) for _ in keys]
        where_row = {k: i for i, k in enumerate(keys)}
        where_col = {k: j for j, k in enumerate(self.column_keys)}
        for m in results:
            cells[where_row[row_key(m)]][where_col[m.description]] = m

        envs = {m.env for m in results}
        show_env = len(envs) > 1
        env_width = max(len(e) for e in envs if e is not None) if show_env else 0
        self.rows: List[_Row] = []
        groups: List[List[List[Optional[common.Measurement]]]] = []
        last_threads, last_env = -1, ""
        for (threads, env, _), row in zip(keys, cells):
            new_group = threads != last_threads
            if new_group:
                last_threads, last_env = threads, ""
                groups.append([])
            self.rows.append(_Row(row, len(groups) - 1, show_env and env != last_env, env_width,
                                  self.scale, colorize, threads if new_group else None))
            groups[-1].append(row)
            last_env = env
        columns = tuple(_Column([tuple(r[j] for r in g) for g in groups], self.scale, trim,
                                highlight) for j in range(len(self.column_keys)))
        for r in self.rows:
            r.columns = columns

    def render(self) -> str:
        header: List[Any] = [""] + self.column_keys
        table = [header] + [r.strings() for r in self.rows]
        n = max(len(r) for r in table)
        for r in table:
            r.extend([""] * (n - len(r)))
        widths = [max(len(s) for s in col) for col in zip(*table)]
        lines = ["  |  ".join(s.center(w) for s, w in zip(table[0], widths))]
        width = len(lines[0])
        for strings, row in zip(table[1:], self.rows):
            lines.extend(row.separator(width))
            lines.append("  |  ".join(row.finish(strings, widths)))
        noisy = self.highlight and any(m.has_warnings for m in self.results)
        title = f" {self.label or ''} ".center(width - 2, "-")
        tail = ("(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n"
                if noisy else "")
        return (f"[{title}]\n" + "\n".join(lines) + "\n\n"
                f"Times are in {common.unit_to_english(self.unit)}s ({self.unit}).\n" + tail)


class Compare:
    """A printable table of many ``Measurement`` objects: one block per ``label``, a row per
    ``sub_label`` (or statement) under its thread count, a column per ``description``;
    replicates of the same task are pooled. ``print(compare)`` or ``compare.print()``.

    ``trim_significant_figures()`` rounds each cell to its measured precision,
    ``colorize(rowwise=False)`` paints cells relative to the best of their column (or row),
    ``highlight_warnings()`` marks noisy cells with ``(! XX%)``.
    """

    def __init__(self, results: List[common.Measurement]) -> None:
        self._results: List[common.Measurement] = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def __str__(self) -> str:
        return "\n".join(self._render())

    def extend_results(self, results: List[common.Measurement]) -> None:
        """Add more measurements (each must be a ``Measurement``)."""
        for r in results:
            if not isinstance(r, common.Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        """Round each number to the significant figures its spread supports."""
        self._trim_significant_figures = True

    def colorize(self, rowwise: bool = False) -> None:
        """Color cells against the best of their column (or of their row with
        ``rowwise=True``)."""
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self) -> None:
        """Mark cells whose IQR is a large share of the median."""
        self._highlight_warnings = True

    def print(self) -> None:
        """Print the table."""
        print(str(self))

    def _render(self) -> List[str]:
        by_label: Dict[Any, List[common.Measurement]] = collections.defaultdict(list)
        for m in common.Measurement.merge(self._results):
            by_label[m.label].append(m)
        return [_Table(ms, self._colorize, self._trim_significant_figures,
                       self._highlight_warnings).render() for ms in by_label.values()]


