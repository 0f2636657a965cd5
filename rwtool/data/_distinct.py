"""The distinct numbers of many columns and how often each occurs, counted by hashing, for the
streaming reader's summaries (the classes of a numeric target, most-frequent fills, the
categories of a numeric column declared categorical).

One open-addressing table over (column, number) pairs for all the columns: a dense list of
entries (column, the number's bits, count) in the order first seen, and a table of slots
holding an entry's position, so a file of 500,000 columns of few values pays for its entries,
not for a table per column. A cell costs one probe (a run of equal cells one comparison),
except in a block's column of whole numbers in a short range (most numeric columns of real
files: ages, counts, codes, ids), which is tallied in an array in file order, noting each
number's first cell (a few nanoseconds a cell, where a probe costs ten to twenty), and then
probes once per distinct number, in the order first met, so a column passing its cap in the
block stops at the same cell as cell by cell; nothing is sorted until a column's numbers are
asked for, and then once. -0.0 is counted as
0.0, as ``np.unique`` counts it; NaN marks a cell that holds no number (text or missing), so
it is never counted. A column past ``cap`` distinct numbers is marked overflowed and counted
no further (the numbers seen first keep their counts as they were then). This module must not
type cells or decide what a column is.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["DistinctNumbers"]

_MULT = np.uint64(0x9E3779B97F4A7C15)     # Fibonacci hashing: the top bits of bits * _MULT
_COLMIX = np.uint64(0xBF58476D1CE4E5B9)   # a column's offset, so equal numbers differ by column
_TALLY_MAX = 1 << 21       # the widest range of whole numbers tallied (8 MB of counts)


@njit(cache=True, nogil=True, inline="always")
def _slot(col, b, lg):
    h = (b ^ (np.uint64(col) * _COLMIX)) * _MULT
    return np.int64(h >> np.uint64(64 - lg))


@njit(cache=True, nogil=True)
def _rehash(slots, lg, ecol, ebits, n):
    mask = (1 << lg) - 1
    slots[:] = -1
    for e in range(n):
        j = _slot(ecol[e], ebits[e], lg)
        while slots[j] >= 0:
            j = (j + 1) & mask
        slots[j] = e


@njit(cache=True, nogil=True)
def _insert(col, b, j, slots, lg, ecol, ebits, ecnt, n, cnt):
    """A new entry (column ``col``, bits ``b``, count ``cnt``) in the empty slot ``j``;
    returns (slots, lg, ecol, ebits, ecnt, n), grown when full."""
    if n == ecol.shape[0]:            # the entries are full: twice the room
        m = 2 * n
        c2, b2, k2 = np.empty(m, np.int32), np.empty(m, np.uint64), np.empty(m, np.int64)
        c2[:n], b2[:n], k2[:n] = ecol[:n], ebits[:n], ecnt[:n]
        ecol, ebits, ecnt = c2, b2, k2
    ecol[n], ebits[n], ecnt[n] = col, b, cnt
    slots[j] = n
    n += 1
    if 2 * n > slots.shape[0]:        # at most half the slots used
        lg += 1
        slots = np.empty(1 << lg, np.int64)
        _rehash(slots, lg, ecol, ebits, n)
    return slots, lg, ecol, ebits, ecnt, n


@njit(cache=True, nogil=True, inline="always")
def _find(col, b, slots, lg, ecol, ebits):
    """The slot of (column ``col``, bits ``b``): its entry's, or the empty one to put it in."""
    mask = (1 << lg) - 1
    j = _slot(col, b, lg)
    while slots[j] >= 0 and not (ecol[slots[j]] == col and ebits[slots[j]] == b):
        j = (j + 1) & mask
    return j


@njit(cache=True, nogil=True)
def _whole_range(x, all_rows, rows):
    """(cells holding a number, smallest, largest) of the row ``x`` (the cells where
    ``rows`` unless ``all_rows``), or cells -1 when one is not a whole number of magnitude
    under 2**52 (exact as an offset from the smallest): found at the first such cell."""
    lo, hi, m = np.inf, -np.inf, 0
    for i in range(x.shape[0]):
        v = x[i]
        if v != v or not (all_rows or rows[i]):
            continue
        if not (v == np.floor(v) and abs(v) < 2.0**52):     # also false for an infinity
            return -1, lo, hi
        lo, hi, m = min(lo, v), max(hi, v), m + 1
    return m, lo, hi


@njit(cache=True, nogil=True)
def _count(x, a, cols, rows, slots, lg, ecol, ebits, ecnt, n, n_distinct, cap, tally,
           ranges, first, entry):
    """Count the numbers of ``x`` (rows: the columns a, a+1, ...; NaN: no number) into the
    table, of the columns where ``cols`` (or every column if empty) and the cells where
    ``rows`` (or every cell if empty); returns (slots, lg, ecol, ebits, ecnt, n, tally,
    first, entry), grown when full. A column's cells that are whole numbers in a range of at
    most 16 per cell (and ``_TALLY_MAX``) are tallied in ``tally`` (all zeros, and left so)
    noting each number's offset and first cell (``first``, ``entry``: scratch), then each
    distinct number finds or adds its entry once, in the order first met; at the cap the
    cells from that number's first one on are taken back, so the column stops at the same
    cell as counted cell by cell. The others are counted cell by cell. The entries and
    counts are the same either way (only their order in the list, which
    :meth:`DistinctNumbers.of` sorts, differs). ``ranges`` (empty: found here): each row's
    (count, smallest, largest) of its whole numbers, count -1 when one is not whole, as
    :func:`_whole_range` gives them (rwtool.data._colstats finds them in its pass)."""
    bits = x.view(np.uint64)
    all_cols, all_rows = cols.shape[0] == 0, rows.shape[0] == 0
    for r in range(x.shape[0]):
        col = a + r
        if n_distinct[col] > cap or not (all_cols or cols[r]):
            continue
        if ranges.shape[0]:
            m, lo, hi = np.int64(ranges[r, 0]), ranges[r, 1], ranges[r, 2]
        else:
            m, lo, hi = _whole_range(x[r], all_rows, rows)
        if m == 0:
            continue
        width = hi - lo + 1.0
        if m > 0 and width <= min(16.0 * m, _TALLY_MAX) and m < 2**31:
            w = np.int64(width)
            if tally.shape[0] < w:
                tally = np.zeros(max(w, 2 * tally.shape[0]), np.int32)
            k = min(m, w)
            if first.shape[0] < k:
                first = np.empty(max(k, 2 * first.shape[0]), np.int64)
                entry = np.empty(first.shape[0], np.int64)
            # first[q], entry[q]: the offset of the q-th distinct number met in the block and
            # the cell where it was first met (then its entry in the table)
            d = 0
            for i in range(x.shape[1]):
                v = x[r, i]
                if v != v or not (all_rows or rows[i]):
                    continue
                t = np.int64(v - lo)
                c = tally[t]
                if c == 0:
                    first[d], entry[d] = t, i
                    d += 1
                tally[t] = c + 1
            stop = -1
            for q in range(d):            # in the order first met: the cap where cells meet it
                b = np.float64(lo + first[q] + 0.0).view(np.uint64)    # + 0.0: -0.0 is 0.0
                j = _find(col, b, slots, lg, ecol, ebits)
                cnt = tally[first[q]]
                if slots[j] >= 0:
                    entry[q] = slots[j]
                    ecnt[slots[j]] += cnt
                    continue
                if n_distinct[col] == cap:    # one more would pass the cap: stop at its cell
                    n_distinct[col] = cap + 1
                    stop = q
                    break
                n_distinct[col] += 1
                entry[q] = n
                if n < ecol.shape[0] and 2 * (n + 1) <= slots.shape[0]:    # room: no call
                    ecol[n], ebits[n], ecnt[n] = col, b, cnt
                    slots[j] = n
                    n += 1
                else:
                    slots, lg, ecol, ebits, ecnt, n = _insert(col, b, j, slots, lg, ecol,
                                                              ebits, ecnt, n, cnt)
            if stop >= 0:
                # the cells from the stopping one on are not counted: take back those of the
                # numbers met before it (tally marks them -1 - q), then clear
                at = entry[stop]
                for q in range(d):
                    tally[first[q]] = -1 - q if q < stop else 0
                for i in range(at, x.shape[1]):
                    v = x[r, i]
                    if v != v or not (all_rows or rows[i]):
                        continue
                    c = tally[np.int64(v - lo)]
                    if c < 0:
                        ecnt[entry[-1 - c]] -= 1
                for q in range(stop):
                    tally[first[q]] = 0
            else:
                for q in range(d):
                    tally[first[q]] = 0
            continue
        last = np.nan
        at = -1
        for i in range(x.shape[1]):
            v = x[r, i]
            if v != v or not (all_rows or rows[i]):
                continue
            if v == last:                 # a run of equal cells: one comparison each
                ecnt[at] += 1
                continue
            b = bits[r, i] if v != 0.0 else np.uint64(0)      # -0.0 is 0.0
            j = _find(col, b, slots, lg, ecol, ebits)
            if slots[j] >= 0:
                at = slots[j]
                ecnt[at] += 1
                last = v
                continue
            if n_distinct[col] == cap:    # one more would pass the cap: stop this column
                n_distinct[col] = cap + 1
                break
            n_distinct[col] += 1
            at = n
            if n < ecol.shape[0] and 2 * (n + 1) <= slots.shape[0]:
                ecol[n], ebits[n], ecnt[n] = col, b, 1
                slots[j] = n
                n += 1
            else:
                slots, lg, ecol, ebits, ecnt, n = _insert(col, b, j, slots, lg, ecol, ebits,
                                                          ecnt, n, 1)
            last = v
    return slots, lg, ecol, ebits, ecnt, n, tally, first, entry


# _count's tally (all zeros between calls) and scratch, kept for the next count: every scan
# would otherwise fault in a fresh tally of up to 8 MB (adults' fnlwgt: 1,400 pages). Taken
# out while a count uses it, so counts in other threads never share one. One set is kept for
# the process, at most the tally's 8 MB and 2 x 2 MB of scratch (larger scratch is let go)
_SCRATCH: list = []
_SCRATCH_MAX = 1 << 18      # scratch entries kept (a block's distinct numbers of a column)


def _take() -> list:
    try:
        return _SCRATCH.pop()
    except IndexError:
        return [np.zeros(0, np.int32), np.empty(0, np.int64), np.empty(0, np.int64)]


def _give(scratch: list) -> None:
    if len(scratch[1]) <= _SCRATCH_MAX and not _SCRATCH:
        _SCRATCH.append(scratch)


class DistinctNumbers:
    """The distinct numbers of ``k`` columns with their counts (see the module docstring)."""

    def __init__(self, k: int, cap: int):
        if not 0 <= cap < np.iinfo(np.int32).max:
            raise ValueError(f"max_distinct must be between 0 and 2**31 - 2, got {cap}")
        self.k, self.cap = k, cap
        self.n_distinct = np.zeros(k, np.int32)     # > cap: overflowed
        self._lg = 10
        self._slots = np.full(1 << self._lg, -1, np.int64)
        self._col = np.empty(1 << (self._lg - 1), np.int32)
        self._bits = np.empty(len(self._col), np.uint64)
        self._cnt = np.empty(len(self._col), np.int64)
        self._n = 0
        self._sorted = None          # (columns, numbers, counts, first entry of each column)

    def overflowed(self, kk: int) -> bool:
        """Whether column ``kk`` has more than ``cap`` distinct numbers."""
        return bool(self.n_distinct[kk] > self.cap)

    def add(self, x: np.ndarray, a: int = 0, cols=None, rows=None, ranges=None) -> None:
        """Count the numbers of ``x`` (one row per column, from column ``a`` on; NaN: a cell
        holding no number), of the columns where ``cols`` and the cells where ``rows`` (bool
        arrays; None: all). ``ranges``: each row's (count, smallest, largest) of its whole
        numbers in those cells, count -1 when one is not whole (rwtool.data._colstats'
        ``ranges``, found in its pass over the block; None: found here)."""
        if not x.size:
            return
        none = np.empty(0, np.bool_)
        scratch = _take()
        (self._slots, self._lg, self._col, self._bits, self._cnt, self._n,
         *scratch) = _count(
            np.ascontiguousarray(x, np.float64), a, none if cols is None else cols,
            none if rows is None else rows, self._slots, self._lg, self._col, self._bits,
            self._cnt, self._n, self.n_distinct, self.cap, scratch[0],
            np.empty((0, 3)) if ranges is None else ranges, *scratch[1:])
        _give(scratch)          # returned all zeros (a failed call's is not reused)
        self._sorted = None

    def copy(self) -> "DistinctNumbers":
        d = DistinctNumbers.__new__(DistinctNumbers)
        d.k, d.cap, d.n_distinct, d._lg = self.k, self.cap, self.n_distinct.copy(), self._lg
        d._slots, d._col, d._bits, d._cnt = (a.copy() for a in (self._slots, self._col,
                                                                 self._bits, self._cnt))
        d._n, d._sorted = self._n, None
        return d

    def of(self, kk: int) -> tuple[np.ndarray, np.ndarray]:
        """(sorted distinct numbers, their counts) of column ``kk``."""
        if self._sorted is None:
            n = self._n
            col, val, cnt = self._col[:n], self._bits[:n].view(np.float64), self._cnt[:n]
            order = np.lexsort((val, col))
            col = col[order]
            self._sorted = (val[order], cnt[order],
                            np.searchsorted(col, np.arange(self.k + 1)))
        val, cnt, first = self._sorted
        a, b = first[kk], first[kk + 1]
        return val[a:b], cnt[a:b]
