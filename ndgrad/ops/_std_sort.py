"""The order in which libstdc++'s ``std::sort`` leaves a row's (value, index) pairs compared by
value only: torch's CPU ``mode`` reports the index of the last pair of the winning run in that
order.

Note [mode's index]
torch.mode on CPU pairs each element with its position, sorts the pairs with ``std::sort``
comparing values only (an introsort: median-of-three quicksort down to runs of 16, heapsort past
a depth of 2 log2 n, then insertion sort), scans the sorted runs and keeps the first run of the
greatest length, reporting the position stored in its last pair. ``std::sort`` is not stable,
so for rows longer than 16 that position is not the value's last occurrence but whichever equal
element the partitions left last. ``mode_positions`` replays, vectorized over rows, only the
partitions on the way to the winning run's last pair (see its docstring); rows holding NaN (which
compares false, so the partitions' invariants fail) take ``std_sort_order``, the step-by-step
replay in Python, so ``mode`` returns torch's index and, for those rows, torch's value.

Example:
    >>> from ndgrad.ops._std_sort import std_sort_order
    >>> std_sort_order([3, 1, 2])
    [1, 2, 0]
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional, Sequence

import numpy as np

__all__ = ["std_sort_order", "sort_range", "sort_rows", "partial_sort", "nth_element",
           "nth_rows", "mode_position", "mode_positions"]


# libstdc++'s algorithms replayed on a list ``p`` of positions into ``v``, comparing
# ``v[p[i]] < v[p[j]]`` only (values; equal values keep whatever order the algorithm leaves).
def _adjust_heap(v: Sequence, p: list, first: int, hole: int, length: int, val: int) -> None:
    """``std::__adjust_heap``: sift the hole at ``hole`` down to a leaf, then push ``val`` up."""
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if v[p[first + child]] < v[p[first + child - 1]]:
            child -= 1
        p[first + hole] = p[first + child]
        hole = child
    if (length & 1) == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        p[first + hole] = p[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and v[p[first + parent]] < v[val]:
        p[first + hole] = p[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    p[first + hole] = val


def _make_heap(v: Sequence, p: list, first: int, last: int) -> None:
    length = last - first
    if length < 2:
        return
    parent = (length - 2) // 2
    while True:
        _adjust_heap(v, p, first, parent, length, p[first + parent])
        if parent == 0:
            return
        parent -= 1


def _pop_heap(v: Sequence, p: list, first: int, last: int, result: int) -> None:
    val = p[result]
    p[result] = p[first]
    _adjust_heap(v, p, first, 0, last - first, val)


def _sort_heap(v: Sequence, p: list, first: int, last: int) -> None:
    while last - first > 1:
        last -= 1
        _pop_heap(v, p, first, last, last)


def _heap_select(v: Sequence, p: list, first: int, middle: int, last: int,
                 entrants: Optional[Callable[[Any], Iterable[int]]] = None) -> None:
    _make_heap(v, p, first, middle)
    # ``entrants(top)``: the positions in [middle, last) whose value goes before ``top``, in
    # order; only they can enter the heap (its top only moves forward), so the others, which
    # the loop would merely compare, are skipped
    for i in range(middle, last) if entrants is None else entrants(v[p[first]]):
        if v[p[i]] < v[p[first]]:
            _pop_heap(v, p, first, middle, i)


def partial_sort(v: Sequence, p: list, first: int, middle: int, last: int,
                 entrants: Optional[Callable[[Any], Iterable[int]]] = None) -> None:
    """``std::partial_sort(first, middle, last)``: the smallest ``middle - first`` in order
    (``entrants``: see ``_heap_select``)."""
    _heap_select(v, p, first, middle, last, entrants)
    _sort_heap(v, p, first, middle)


def _heapsort(v: Sequence, p: list, first: int, last: int) -> None:
    """``std::sort``'s fallback past its depth limit (``partial_sort(first, last, last)``)."""
    partial_sort(v, p, first, last, last)


def _partition_pivot(v: Sequence, p: list, first: int, last: int) -> int:
    """``std::__unguarded_partition_pivot``: the median of positions first + 1, the middle and
    last - 1 moved to ``first`` as the pivot, then Hoare's partition of the rest; the cut."""
    lt = _lt(v, p)
    a, b, c = first + 1, first + (last - first) // 2, last - 1
    if lt(a, b):
        m = b if lt(b, c) else c if lt(a, c) else a
    else:
        m = a if lt(a, c) else c if lt(b, c) else b
    p[first], p[m] = p[m], p[first]
    pv = v[p[first]]
    lo, hi = first + 1, last
    while True:
        while v[p[lo]] < pv:
            lo += 1
        hi -= 1
        while pv < v[p[hi]]:
            hi -= 1
        if not lo < hi:
            return lo
        p[lo], p[hi] = p[hi], p[lo]
        lo += 1


def _lt(v: Sequence, p: list):
    return lambda i, j: v[p[i]] < v[p[j]]


def _linear_insert(v: Sequence, p: list, i: int) -> None:
    val = p[i]
    x = v[val]
    j = i - 1
    while x < v[p[j]]:
        p[j + 1] = p[j]
        j -= 1
    p[j + 1] = val


def _insertion_sort(v: Sequence, p: list, first: int, last: int) -> None:
    for i in range(first + 1, last):
        if v[p[i]] < v[p[first]]:
            val = p[i]
            p[first + 1:i + 1] = p[first:i]
            p[first] = val
        else:
            _linear_insert(v, p, i)


def _introsort(v: Sequence, p: list, first: int, last: int, depth: int) -> None:
    while last - first > 16:
        if depth == 0:
            partial_sort(v, p, first, last, last)
            return
        depth -= 1
        cut = _partition_pivot(v, p, first, last)
        _introsort(v, p, cut, last, depth)
        last = cut


def sort_range(v: Sequence, p: list, first: int, last: int) -> None:
    """``std::sort(first, last)``: introsort down to runs of 16, then insertion sort."""
    n = last - first
    if n < 2:
        return
    _introsort(v, p, first, last, 2 * (n.bit_length() - 1))
    if n > 16:
        _insertion_sort(v, p, first, first + 16)
        for i in range(first + 16, last):
            _linear_insert(v, p, i)
    else:
        _insertion_sort(v, p, first, last)


def nth_element(v: Sequence, p: list, first: int, nth: int, last: int) -> None:
    """``std::nth_element(first, nth, last)`` (introselect)."""
    if first == last or nth == last:
        return
    depth = 2 * ((last - first).bit_length() - 1)
    while last - first > 3:
        if depth == 0:
            _heap_select(v, p, first, nth + 1, last)
            p[first], p[nth] = p[nth], p[first]
            return
        depth -= 1
        cut = _partition_pivot(v, p, first, last)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(v, p, first, last)


def std_sort_order(v: Sequence) -> list:
    """Positions of ``v`` in the order ``std::sort`` leaves its (value, position) pairs when it
    compares values only (Note [mode's index])."""
    p = list(range(len(v)))
    sort_range(v, p, 0, len(v))
    return p


def _partition_rows(P: np.ndarray, V: np.ndarray, ln: np.ndarray) -> tuple:
    """One ``std::__unguarded_partition_pivot`` on each row segment ``[0, ln)`` of the 2-D
    values ``V`` (and their positions ``P``), vectorized over rows, in place: the median of
    three moved to the front, then Hoare's scans paired up (the k-th element from the left not
    below the pivot swaps with the k-th from the right not above it while the first lies left
    of the second). Returns the cut per row and the pivots (a column)."""
    k, W = V.shape
    cols = np.arange(W)
    rk = np.arange(k)
    # median of three (positions 1, ln // 2, ln - 1) moved to the front as the pivot
    mid, c = ln // 2, ln - 1
    va, vb, vc = V[:, 1], V[rk, mid], V[rk, c]
    ab, bc, ac = va < vb, vb < vc, va < vc
    piv = np.where(ab, np.where(bc, mid, np.where(ac, c, 1)),
                   np.where(ac, 1, np.where(bc, c, mid)))
    for A in (P, V):
        a0 = A[:, 0].copy()
        A[:, 0] = A[rk, piv]
        A[rk, piv] = a0
    pv = V[:, :1].copy()
    valid = cols < ln[:, None]
    left_stop = valid & ~(V < pv)              # where the scan from the left stops
    left_stop[:, 0] = False
    right_stop = valid & ~(pv < V)             # where the scan from the right stops
    # the k-th left stop swaps with the k-th right stop while it lies left of it: for
    # ks swaps, ks = max over j of min(#left stops <= j, #right stops > j)
    cl = np.cumsum(left_stop, axis=1, dtype=np.int32)
    cr = np.cumsum(right_stop[:, ::-1], axis=1, dtype=np.int32)[:, ::-1]
    ks = np.minimum(cl[:, :-1], cr[:, 1:]).max(axis=1, initial=0)[:, None]
    li = np.flatnonzero(left_stop & (cl <= ks))
    ri = np.flatnonzero((right_stop & (cr <= ks))[:, ::-1])
    ri += W - 1 - 2 * (ri % W)                 # back from the reversed columns
    for A in (P.reshape(-1), V.reshape(-1)):   # both row by row: k-th from each side
        t = A[li]
        A[li] = A[ri]
        A[ri] = t
    cut = (cl <= ks).sum(axis=1)               # the left scan's (ks+1)-th stop
    ks = ks[:, 0]
    crossed = np.flatnonzero(ks)
    if len(crossed):                           # or the right scan's ks-th, now >= pv
        back = ri[np.cumsum(ks)[crossed] - 1] - crossed * W
        cut[crossed] = np.minimum(cut[crossed], back)
    return cut, pv


def _repeated(K: np.ndarray) -> np.ndarray:
    """Per element of the 2-D ``K``: its value occurs more than once in its row."""
    order = np.argsort(K, axis=1, kind="stable")
    s = np.take_along_axis(K, order, axis=1)
    eq = s[:, 1:] == s[:, :-1]
    rep = np.zeros(K.shape, bool)
    rep[:, 1:] |= eq
    rep[:, :-1] |= eq
    out = np.empty_like(rep)
    np.put_along_axis(out, order, rep, axis=1)
    return out


def _write_stably(out: np.ndarray, dst: np.ndarray, V: np.ndarray, P: np.ndarray,
                  seg: np.ndarray, ln: np.ndarray, which: np.ndarray) -> None:
    """Write the segments ``which`` (a mask over segments) of the flat values ``V`` and their
    positions ``P`` (segment ids ``seg``, lengths ``ln``) into ``out`` at their starts
    ``dst``, each ordered stably by value: how an insertion sort leaves a segment."""
    m = which[seg]
    order = np.lexsort((V[m], seg[m]))
    lens = ln[which]
    within = np.arange(m.sum()) - np.repeat(np.concatenate([[0], np.cumsum(lens)[:-1]]), lens)
    out[np.repeat(dst[which], lens) + within] = P[m][order]


def sort_rows(K: np.ndarray) -> np.ndarray:
    """``std::sort``'s order of each row of the 2-D integer keys ``K`` (positions, int64),
    vectorized: the introsort's partitions are replayed level by level on all segments at
    once, the segments laid end to end in one flat array (``_partition_flat``); a segment of
    at most 16 elements ends there, and as every element of a segment is no greater than those
    of the segments after it, the final insertion sort only orders each such segment stably;
    a segment reaching the depth limit takes the replayed heapsort.

    >>> sort_rows(np.array([[1, 0, 1, 0] * 5])).tolist()
    [[1, 19, 17, 15, 13, 11, 9, 7, 5, 3, 8, 6, 10, 12, 4, 14, 16, 2, 18, 0]]
    """
    nr, n = K.shape
    out = np.empty(nr * n, np.int64)
    if nr == 0 or n == 0:
        return out.reshape(nr, n)
    # active segments, end to end: values V, their positions in the row P, and per segment
    # its length, depth and start in out (row * n + offset)
    V = np.array(K, dtype=np.int64).reshape(-1)
    P = np.tile(np.arange(n, dtype=np.int64), nr)
    # D: the element's value occurs more than once in its row. A segment holding no such
    # element has one order whatever the algorithm does: it ends like a small one.
    D = _repeated(V.reshape(nr, n)).reshape(-1)
    ln = np.full(nr, n, np.int64)
    depth = np.full(nr, 2 * (n.bit_length() - 1))
    dst = np.arange(nr, dtype=np.int64) * n
    while len(ln):
        seg_start = np.concatenate([[0], np.cumsum(ln)[:-1]])
        small = ln <= 16
        if len(D):
            small |= ~np.logical_or.reduceat(D, seg_start)
        heap = ~small & (depth == 0)
        done = small | heap
        if done.any():
            seg = np.repeat(np.arange(len(ln)), ln)
            fin = done[seg]
            if small.any():
                _write_stably(out, dst, V, P, seg, ln, small)
            for i in np.flatnonzero(heap):
                a, b = seg_start[i], seg_start[i] + ln[i]
                v = V[a:b].tolist()
                p = list(range(ln[i]))
                _heapsort(v, p, 0, len(p))
                out[dst[i]:dst[i] + ln[i]] = P[a:b][p]
            keep = ~fin
            V, P, D = V[keep], P[keep], D[keep]
            go = ~done
            ln, depth, dst = ln[go], depth[go], dst[go]
            if not len(ln):
                break
            seg_start = np.concatenate([[0], np.cumsum(ln)[:-1]])
        cut = _partition_flat(V, (P, D), seg_start, ln)
        # the children: [0, cut) and [cut, ln) of each segment, one level deeper, in place
        ln2 = np.empty(2 * len(ln), np.int64)
        ln2[0::2], ln2[1::2] = cut, ln - cut
        dst2 = np.empty_like(ln2)
        dst2[0::2], dst2[1::2] = dst, dst + cut
        depth = np.repeat(depth - 1, 2)
        nz = ln2 > 0
        ln, dst, depth = ln2[nz], dst2[nz], depth[nz]
    return out.reshape(nr, n)


def nth_rows(K: np.ndarray, nth: int) -> np.ndarray:
    """``std::nth_element(first, first + nth, last)``'s order of each row of the 2-D integer
    keys ``K`` (positions, int64), vectorized over rows: each introselect step partitions the
    current segment of every row at once (``_partition_flat``, the segments laid end to end),
    writes out the side it leaves (final) and keeps the side holding ``nth``; segments of at
    most 3 elements end with the (stable) insertion sort; a row reaching the depth limit takes
    the replayed heap select.

    >>> nth_rows(np.array([[1, 0, 1, 0] * 5]), 9).tolist()[0][:10]
    [1, 19, 17, 15, 13, 11, 9, 5, 3, 7]
    """
    nr, n = K.shape
    out = np.empty(nr * n, np.int64)
    if nr == 0 or n == 0:
        return out.reshape(nr, n)
    # the current segment of each active row, end to end: keys V, positions P; per segment
    # its length, depth and start in out (row * n + offset in the row, f)
    V = np.array(K, dtype=np.int64).reshape(-1)
    P = np.tile(np.arange(n, dtype=np.int64), nr)
    f = np.zeros(nr, np.int64)
    ln = np.full(nr, n, np.int64)
    depth = np.full(nr, 2 * (n.bit_length() - 1))
    base = np.arange(nr, dtype=np.int64) * n
    while len(ln):
        seg_start = np.concatenate([[0], np.cumsum(ln)[:-1]])
        small = ln <= 3
        heap = ~small & (depth == 0)
        done = small | heap
        if done.any():
            seg = np.repeat(np.arange(len(ln)), ln)
            if small.any():                    # the insertion sort (stable) ends them
                _write_stably(out, base + f, V, P, seg, ln, small)
            for i in np.flatnonzero(heap):
                a, b = seg_start[i], seg_start[i] + ln[i]
                v, p = V[a:b].tolist(), list(range(ln[i]))
                r = nth - int(f[i])
                _heap_select(v, p, 0, r + 1, len(p))
                p[0], p[r] = p[r], p[0]
                out[base[i] + f[i]:base[i] + f[i] + ln[i]] = P[a:b][p]
            keep = ~done[seg]
            V, P = V[keep], P[keep]
            go = ~done
            f, ln, depth, base = f[go], ln[go], depth[go], base[go]
            if not len(ln):
                break
            seg_start = np.concatenate([[0], np.cumsum(ln)[:-1]])
        cut = _partition_flat(V, (P,), seg_start, ln)
        right = f + cut <= nth
        # the side left behind is final; the other is the next segment
        within = np.arange(len(V)) - np.repeat(seg_start, ln)
        kept = (within < np.repeat(cut, ln)) != np.repeat(right, ln)
        out[(np.repeat(base + f, ln) + within)[~kept]] = P[~kept]
        V, P = V[kept], P[kept]
        f = np.where(right, f + cut, f)
        ln = np.where(right, ln - cut, cut)
        depth = depth - 1
    return out.reshape(nr, n)


def _partition_flat(V: np.ndarray, carried: tuple, seg_start: np.ndarray, ln: np.ndarray
                    ) -> np.ndarray:
    """``std::__unguarded_partition_pivot`` on every segment (each longer than 3) of the flat
    integer array ``V`` at once, in place, the arrays ``carried`` (positions ...) moved alike
    (as ``_partition_rows``, for segments laid end to end). Returns each segment's cut
    (relative to its start)."""
    seg_end = seg_start + ln - 1
    a, b = seg_start + 1, seg_start + ln // 2
    va, vb, vc = V[a], V[b], V[seg_end]
    ab, bc, ac = va < vb, vb < vc, va < vc
    piv = np.where(ab, np.where(bc, b, np.where(ac, seg_end, a)),
                   np.where(ac, a, np.where(bc, seg_end, b)))
    for A in (V,) + carried:
        a0 = A[seg_start].copy()
        A[seg_start] = A[piv]
        A[piv] = a0
    pv = np.repeat(V[seg_start], ln)
    left_stop = V >= pv                  # where the scan from the left stops
    left_stop[seg_start] = False
    right_stop = V <= pv                 # where the scan from the right stops
    # per segment: left stops counted from its start, right stops from its end
    cl = np.cumsum(left_stop, dtype=np.int64)
    cl -= np.repeat(cl[seg_start], ln)
    cr = np.cumsum(right_stop[::-1], dtype=np.int64)[::-1]
    cr -= np.repeat(cr[seg_end] - right_stop[seg_end], ln)
    # swaps per segment: the max over its j (not its last) of min(cl[j], cr[j + 1])
    m = np.empty_like(cl)
    np.minimum(cl[:-1], cr[1:], out=m[:-1])
    m[seg_end] = 0
    ks = np.maximum.reduceat(m, seg_start)
    ksx = np.repeat(ks, ln)
    left = cl <= ksx
    li = np.flatnonzero(left_stop & left)               # by segment, k = cl ascending
    rr = np.flatnonzero(right_stop & (cr <= ksx))
    # the right stops by segment with k = cr ascending: each to its slot
    ri = np.empty_like(rr)
    slot_base = np.cumsum(ks) - ks - 1
    ri[np.repeat(slot_base, ln)[rr] + cr[rr]] = rr
    for A in (V,) + carried:
        t = A[li]
        A[li] = A[ri]
        A[ri] = t
    cut = np.add.reduceat(left, seg_start).astype(np.int64)
    crossed = np.flatnonzero(ks)
    if len(crossed):                                   # or the right scan's ks-th
        back = ri[np.cumsum(ks)[crossed] - 1] - seg_start[crossed]
        cut[crossed] = np.minimum(cut[crossed], back)
    return cut


def mode_position(v: Sequence) -> int:
    """The position torch's CPU ``mode`` reports for the row ``v`` (Note [mode's index])."""
    p = std_sort_order(v)
    n = len(v)
    best_i, best_f, f = 0, 0, 0
    for i in range(n):
        f += 1
        if i == n - 1 or v[p[i]] != v[p[i + 1]]:
            if f > best_f:
                best_i, best_f = p[i], f
            f = 0
    return best_i


def _mode_values(rows: np.ndarray) -> np.ndarray:
    """Per row, the smallest of the most frequent values (the first longest run of the sorted
    row; equal-comparing values such as -0.0 and 0.0 share a run)."""
    nr, n = rows.shape
    s = np.sort(rows, axis=1)
    end = np.ones((nr, n), bool)
    end[:, :-1] = s[:, 1:] != s[:, :-1]
    r, j = np.nonzero(end)                         # run ends, row by row, left to right
    prev = np.empty_like(j)
    prev[1:] = j[:-1]
    first_run = np.ones(len(r), bool)
    first_run[1:] = r[1:] != r[:-1]
    prev[first_run] = -1
    length = j - prev
    starts = np.flatnonzero(first_run)
    best = np.maximum.reduceat(length, starts)
    win = np.flatnonzero(length == best[r])
    _, first_win = np.unique(r[win], return_index=True)
    k = win[first_win]
    return s[r[k], j[k]]


def mode_positions(rows: np.ndarray) -> np.ndarray:
    """The position torch's CPU ``mode`` reports for each row of the 2-D array ``rows``
    (Note [mode's index]), vectorized over rows.

    Only the partitions that decide the index are replayed: after a partition every element
    left of the cut is <= the pivot and every one right of it >= the pivot, and the closing
    insertion sort is stable, so the reported pair is the mode's last one in the rightmost
    partition holding the mode. Each step therefore partitions one segment per row (Hoare's
    scans paired up: the k-th element from the left not below the pivot swaps with the k-th
    from the right not above it while the first lies left of the second) and keeps the right
    part if it holds the mode, else the left part, until 16 elements or fewer remain (or the
    depth limit hands the segment to the replayed heapsort). Rows with NaN, whose comparisons
    break that reasoning, take the element-by-element replay.

    >>> import numpy as np
    >>> mode_positions(np.array([[3, 1, 3, 2], [0, 0, 1, 1]])).tolist()
    [2, 1]
    """
    nr, n = rows.shape
    out = np.zeros(nr, np.int64)
    if nr == 0 or n == 0:
        return out
    if rows.dtype == np.bool_:
        rows = rows.view(np.uint8)
    nan = np.isnan(rows).any(axis=1) if rows.dtype.kind == "f" else np.zeros(nr, bool)
    for r in np.flatnonzero(nan):
        out[r] = mode_position(rows[r].tolist())
    act = np.flatnonzero(~nan)
    if not len(act):
        return out
    V = rows[act]                                  # values in the current segment's order
    m = _mode_values(V)[:, None]
    P = np.broadcast_to(np.arange(n), V.shape).copy()   # their positions in the row
    ln = np.full(len(act), n)
    depth = np.full(len(act), 2 * (n.bit_length() - 1))
    while len(act):
        W = P.shape[1]
        cols = np.arange(W)
        small = ln <= 16
        heap = ~small & (depth == 0)
        if small.any():
            hit = (V[small] == m[small]) & (cols < ln[small, None])
            last = W - 1 - np.argmax(hit[:, ::-1], axis=1)
            out[act[small]] = P[small][np.arange(len(last)), last]
        for i in np.flatnonzero(heap):
            v = rows[act[i]].tolist()
            p = P[i, :ln[i]].tolist()
            _heapsort(v, p, 0, len(p))
            out[act[i]] = next(q for q in reversed(p) if v[q] == m[i, 0])
        go = ~(small | heap)
        if not go.all():
            act, P, V, m, ln, depth = act[go], P[go], V[go], m[go], ln[go], depth[go]
            if not len(act):
                break
        cut, pv = _partition_rows(P, V, ln)
        # the mode lies right of the cut if above the pivot, left if below, else look
        right = m[:, 0] > pv[:, 0]
        tie = np.flatnonzero(m[:, 0] == pv[:, 0])
        if len(tie):
            Vt = V[tie]
            right[tie] = ((Vt == m[tie]) & (cols < ln[tie, None])
                          & (cols >= cut[tie, None])).any(axis=1)
        start = np.where(right, cut, 0)
        ln = np.where(right, ln - cut, cut)
        idx = start[:, None] + np.arange(ln.max(), dtype=start.dtype)
        np.minimum(idx, W - 1, out=idx)
        P = np.take_along_axis(P, idx, axis=1)
        V = np.take_along_axis(V, idx, axis=1)
        depth = depth - 1
    return out
