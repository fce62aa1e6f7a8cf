"""The order in which libstdc++'s ``std::sort`` leaves a row's (value, index) pairs compared by
value only: torch's CPU ``mode`` reports the index of the last pair of the winning run in that
order.

Note [mode's index]
torch.mode on CPU pairs each element with its position, sorts the pairs with ``std::sort``
comparing values only (an introsort: median-of-three quicksort down to runs of 16, heapsort past
a depth of 2 log2 n, then insertion sort), scans the sorted runs and keeps the first run of the
greatest length, reporting the position stored in its last pair. ``std::sort`` is not stable,
so for rows longer than 16 that position is not the value's last occurrence but whichever equal
element the partitions left last; ``std_sort_order`` replays the same steps on the same values
(NaN compares false in both), so ``mode`` returns torch's index and, for rows with NaN, torch's
value. It runs in Python, O(n log n) comparisons per row.

Example:
    >>> from ndgrad.ops._std_sort import std_sort_order
    >>> std_sort_order([3, 1, 2])
    [1, 2, 0]
"""

from __future__ import annotations

from typing import Sequence

__all__ = ["std_sort_order", "mode_position"]


def std_sort_order(v: Sequence) -> list:
    """Positions of ``v`` in the order ``std::sort`` leaves its (value, position) pairs when it
    compares values only (Note [mode's index])."""
    n = len(v)
    p = list(range(n))

    def lt(i, j):
        return v[p[i]] < v[p[j]]

    def heapsort(first, last):
        length = last - first

        def adjust(hole, ln, val):
            top = hole
            child = hole
            while child < (ln - 1) // 2:
                child = 2 * (child + 1)
                if v[p[first + child]] < v[p[first + child - 1]]:
                    child -= 1
                p[first + hole] = p[first + child]
                hole = child
            if (ln & 1) == 0 and child == (ln - 2) // 2:
                child = 2 * (child + 1)
                p[first + hole] = p[first + child - 1]
                hole = child - 1
            parent = (hole - 1) // 2
            while hole > top and v[p[first + parent]] < v[val]:
                p[first + hole] = p[first + parent]
                hole = parent
                parent = (hole - 1) // 2
            p[first + hole] = val

        if length >= 2:
            parent = (length - 2) // 2
            while True:
                adjust(parent, length, p[first + parent])
                if parent == 0:
                    break
                parent -= 1
        while last - first > 1:
            last -= 1
            val = p[last]
            p[last] = p[first]
            adjust(0, last - first, val)

    def introsort(first, last, depth):
        while last - first > 16:
            if depth == 0:
                heapsort(first, last)
                return
            depth -= 1
            mid = first + (last - first) // 2
            a, b, c = first + 1, mid, last - 1
            if lt(a, b):
                if lt(b, c):
                    m = b
                elif lt(a, c):
                    m = c
                else:
                    m = a
            elif lt(a, c):
                m = a
            elif lt(b, c):
                m = c
            else:
                m = b
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
                    break
                p[lo], p[hi] = p[hi], p[lo]
                lo += 1
            introsort(lo, last, depth)
            last = lo

    def linear_insert(i):
        val = p[i]
        x = v[val]
        j = i - 1
        while x < v[p[j]]:
            p[j + 1] = p[j]
            j -= 1
        p[j + 1] = val

    def insertion(first, last):
        for i in range(first + 1, last):
            if v[p[i]] < v[p[first]]:
                val = p[i]
                p[first + 1:i + 1] = p[first:i]
                p[first] = val
            else:
                linear_insert(i)

    if n > 1:
        introsort(0, n, 2 * (n.bit_length() - 1))
        if n > 16:
            insertion(0, 16)
            for i in range(16, n):
                linear_insert(i)
        else:
            insertion(0, n)
    return p



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
