"""Which of several equal elements torch's CPU ``topk`` and ``kthvalue`` report.

Note [Selection among equal elements]
Among equal values the index torch reports is whatever position its selection algorithm leaves
the element at, not the first occurrence:
* ``topk`` pairs each element with its position and runs libstdc++'s ``std::partial_sort``
  over the first k when ``k * 64 <= n``, else ``std::nth_element`` at k - 1 followed, when
  ``sorted``, by ``std::sort`` of the first k - 1; the comparator puts NaN first (largest) or
  last (smallest) and otherwise compares values only.
* ``sort`` (not ``stable=True``) runs ``std::sort`` with the same kind of comparator (its
  radix sort, stable, for 1-D integer tensors of 32768 or more elements sorted ascending).
* ``kthvalue`` runs torch's own quickselect (median-of-three, Sedgewick's partition) at k - 1
  with NaN as the largest value.
``median``/``nanmedian`` along a dim break ties by position (a stable order), which NumPy's
stable argsort gives directly. Rows whose answer does not depend on the algorithm (no ties
that matter) take NumPy's vectorized answer; the others replay the algorithm
(ndgrad/ops/_std_sort.py holds the libstdc++ replays: ``topk``'s ``nth_element`` path and large
``sort`` rows vectorized over rows, the rest in Python on the row's values). ``topk`` with
``sorted=False`` on the ``nth_element`` path leaves an order that depends on the algorithm even
without ties, so those rows are always replayed.

Example:
    >>> import numpy as np
    >>> topk_positions(np.array([[0.0, 1.0, 0.0, 0.0]]), 3, True, True).tolist()
    [[1, 3, 0]]
    >>> kth_positions(np.array([[2, 1, 2, 1, 2]]), 4).tolist()
    [0]
"""

from __future__ import annotations

from typing import Any, List

import numpy as np

from ._std_sort import nth_rows, partial_sort, sort_rows, std_sort_order

__all__ = ["sort_positions", "topk_positions", "kth_positions"]

_BLOCK = 2048


def _has_nan(row: np.ndarray) -> bool:
    return row.dtype.kind == "f" and bool(np.isnan(row).any())


def _keys(row: np.ndarray, largest: bool, nan: bool) -> List[Any]:
    """Keys whose ``<`` is the comparator's "goes first": NaN first for ``largest``, last
    otherwise; equal values (NaNs among themselves, -0.0 and 0.0) compare equal. ``nan``: the
    whole row holds NaN (then every key is a pair, so keys of parts of a row compare)."""
    vals = row.tolist()
    if nan:
        if largest:
            return [(0, 0.0) if x != x else (1, -x) for x in vals]
        return [(1, 0.0) if x != x else (0, x) for x in vals]
    return [-x for x in vals] if largest else vals


def topk_order(row: np.ndarray, k: int, largest: bool) -> List[int]:
    """The positions torch's CPU ``topk`` reports for one row on its ``partial_sort`` path
    (``0 < k``, ``k * 64 <= n``; the ``nth_element`` path is ``nth_rows``, vectorized; Note
    [Selection among equal elements])."""
    n = len(row)
    p = list(range(n))
    # The heap holds the best k so far; an element is compared with its top only, and
    # enters when it goes before it. The top only improves, so each block of later
    # elements is first filtered, vectorized, against the top at the block's start: the
    # ones left are a superset of the block's entrants, and the replay (and the keys it
    # reads) sees only them.
    nan = _has_nan(row)
    v = dict(zip(range(k), _keys(row[:k], largest, nan)))
    floats = row.dtype.kind == "f"

    def entrants(_top: Any) -> Any:
        for b in range(k, n, _BLOCK):
            t = row[p[0]]
            block = row[b:b + _BLOCK]
            if floats:
                bn, t_nan = np.isnan(block), bool(np.isnan(t))
                better = ((bn & ~t_nan) | (block > t) if largest
                          else (~bn & t_nan) | (block < t))
            else:
                better = block > t if largest else block < t
            idx = (np.flatnonzero(better) + b).tolist()
            if idx:
                v.update(zip(idx, _keys(row[idx], largest, nan)))
                yield from idx
    partial_sort(v, p, 0, k, n, entrants)   # type: ignore[arg-type]
    return p[:k]


def quick_select_position(row: np.ndarray, k: int) -> int:
    """The position torch's CPU quickselect leaves at index ``k`` (0-based) of one row: the
    element ``kthvalue(k + 1)`` reports."""
    v = _keys(row, False, _has_nan(row))     # "greater" is ``>`` on the keys (NaN largest)
    p = list(range(len(v)))

    def swap(a: int, b: int) -> None:
        p[a], p[b] = p[b], p[a]

    lo, hi = 0, len(v) - 1
    while True:
        if hi <= lo:
            return p[k]
        if hi == lo + 1:
            if v[p[lo]] > v[p[hi]]:
                swap(lo, hi)
            return p[k]
        swap((lo + hi) >> 1, lo + 1)
        if v[p[lo + 1]] > v[p[hi]]:
            swap(lo + 1, hi)
        if v[p[lo]] > v[p[hi]]:
            swap(lo, hi)
        if v[p[lo + 1]] > v[p[lo]]:
            swap(lo + 1, lo)
        i, j = lo + 1, hi
        piv = v[p[lo]]
        while True:
            i += 1
            while piv > v[p[i]]:
                i += 1
            j -= 1
            while v[p[j]] > piv:
                j -= 1
            if j < i:
                break
            swap(i, j)
        swap(lo, j)
        if j <= k:
            lo = i
        if j >= k:
            hi = j - 1


def _equal_neighbours(s: np.ndarray) -> np.ndarray:
    """Per row of sorted values, per adjacent pair: the two compare equal (NaNs too)."""
    eq = s[:, 1:] == s[:, :-1]
    if s.dtype.kind == "f":
        nan = np.isnan(s)
        eq |= nan[:, 1:] & nan[:, :-1]
    return eq


def _candidates(rows: np.ndarray, m: int, largest: bool) -> np.ndarray:
    """Positions of the ``m`` elements of each row that go first (NaN first when
    ``largest``, last otherwise), in order; ties in any order."""
    n = rows.shape[1]
    nan = rows.dtype.kind == "f" and np.isnan(rows).any()
    if nan or m * 8 > n:                 # NumPy puts NaN last: a stable sort of the row
        if not largest:
            return np.argsort(rows, axis=1, kind="stable")[:, :m]
        return (n - 1 - np.argsort(rows[:, ::-1], axis=1, kind="stable")[:, ::-1])[:, :m]
    if largest:
        part = np.argpartition(rows, n - m, axis=1)[:, n - m:]
    else:
        part = np.argpartition(rows, m - 1, axis=1)[:, :m]
    vals = np.take_along_axis(rows, part, axis=1)
    order = np.argsort(vals, axis=1, kind="stable")
    if largest:
        order = order[:, ::-1]
    return np.take_along_axis(part, order, axis=1)


def _order_keys(rows: np.ndarray, largest: bool) -> np.ndarray:
    """int64 keys of the 2-D ``rows`` ordered as the comparator's "goes first" (NaN first for
    ``largest``, last otherwise; equal values, NaNs among themselves and -0.0 with 0.0, equal
    keys)."""
    if rows.dtype.kind == "f":
        x = rows + 0.0                          # -0.0 becomes 0.0
        x[np.isnan(x)] = np.nan                 # one NaN, above +inf as an integer
        bits = x.view(np.int64 if x.itemsize == 8 else np.int32)
        keys = np.where(bits < 0, bits ^ np.iinfo(bits.dtype).max, bits).astype(np.int64)
    elif rows.dtype.kind == "b" or rows.dtype.itemsize < 8 or rows.dtype.kind == "i":
        keys = rows.astype(np.int64)
    else:                                       # uint64: dense ranks
        keys = np.unique(rows, return_inverse=True)[1].reshape(rows.shape).astype(np.int64)
    return ~keys if largest else keys


def topk_positions(rows: np.ndarray, k: int, largest: bool, sorted_: bool) -> np.ndarray:
    """``topk``'s positions for each row of the 2-D array ``rows`` (int64, shape (rows, k))."""
    nr, n = rows.shape
    if rows.dtype.kind == "f" and rows.dtype.itemsize < 4 or rows.dtype.name == "bfloat16":
        rows = rows.astype(np.float32)
    if k == 0 or nr == 0:
        return np.zeros((nr, k), np.int64)
    if not sorted_ and k * 64 > n and k > 1:
        out = np.empty((nr, k), np.int64)    # every row replayed
        tied = np.arange(nr)
    else:
        cand = _candidates(rows, min(k + 1, n), largest)
        out = np.ascontiguousarray(cand[:, :k], dtype=np.int64)
        tied = np.flatnonzero(_equal_neighbours(np.take_along_axis(rows, cand, axis=1))
                              .any(axis=1))
    if k * 64 > n and len(tied):
        # the nth_element path, vectorized over the rows (on dense ranks: the comparator's
        # order and ties, NaN first when ``largest``, else last)
        ranks = _order_keys(rows[tied], largest)
        pos = nth_rows(ranks, k - 1)[:, :k]
        if sorted_ and k > 2:
            head = pos[:, :k - 1]
            order = sort_rows(np.take_along_axis(ranks, head, axis=1))
            pos[:, :k - 1] = np.take_along_axis(head, order, axis=1)
        out[tied] = pos
        return out
    for r in tied:
        out[r] = topk_order(rows[r], k, largest)
    return out


def kth_positions(rows: np.ndarray, k: int) -> np.ndarray:
    """``kthvalue``'s position for each row of the 2-D array ``rows`` (``k`` 1-based)."""
    nr, n = rows.shape
    if rows.dtype.kind == "f" and rows.dtype.itemsize < 4 or rows.dtype.name == "bfloat16":
        rows = rows.astype(np.float32)
    if rows.dtype.kind == "f" and np.isnan(rows).any():
        pos = np.argsort(rows, axis=1, kind="stable")[:, k - 1]     # NaN last, as largest
    else:
        pos = np.argpartition(rows, k - 1, axis=1)[:, k - 1]
    out = np.ascontiguousarray(pos, dtype=np.int64)
    if nr == 0 or n < 2:
        return out
    v = np.take_along_axis(rows, pos[:, None], axis=1)
    same = rows == v
    if rows.dtype.kind == "f":
        same |= np.isnan(rows) & np.isnan(v)
    for r in np.flatnonzero(same.sum(axis=1) > 1):
        out[r] = quick_select_position(rows[r], k - 1)
    return out


def sort_positions(rows: np.ndarray, descending: bool, radix: bool = False) -> np.ndarray:
    """``sort``'s (not stable) positions for each row of the 2-D array ``rows``: libstdc++'s
    ``std::sort`` comparing values (NaN last, or first when ``descending``). Rows of at most 16
    elements are insertion-sorted (stable), and so are the rows ``radix`` says torch hands to
    its radix sort (the caller's test: a 1-D integer tensor of 32768 or more, ascending)."""
    nr, n = rows.shape
    if rows.dtype.kind == "f" and rows.dtype.itemsize < 4 or rows.dtype.name == "bfloat16":
        rows = rows.astype(np.float32)
    if not descending:
        out = np.argsort(rows, axis=1, kind="stable")
    else:
        out = n - 1 - np.argsort(rows[:, ::-1], axis=1, kind="stable")[:, ::-1]
    out = out.astype(np.int64, copy=False)
    if n <= 16 or radix or nr == 0:
        return out
    tied = np.flatnonzero(_equal_neighbours(np.take_along_axis(rows, out, axis=1)).any(axis=1))
    if len(tied):
        out = np.array(out)                 # writable (the descending one is a view)
        ranks = _order_keys(rows[tied], descending)
        if ranks.size <= 4096:              # small: the replay in Python costs less
            for i, r in enumerate(tied):
                out[r] = std_sort_order(ranks[i].tolist())
        else:
            out[tied] = sort_rows(ranks)
    return out
