"""Per-column statistics of a typed block of numbers in one pass, for the streaming reader's
summaries: how many numbers, how many finite, the file line of the first infinite one, the
largest finite magnitude and (compensated) sum, over every cell or the cells of a row mask;
and, in the same pass, what the other summaries would each read the block again for: the
range of a column's whole numbers (the distinct-number store tallies a short one), whether
int32 holds every cell exactly (the spill writes such a column in half the bytes) and
whether a number shows a decimal point.

A block is ``(columns, rows)`` float64 with NaN where a cell holds no number (text or missing,
as :func:`rwtool.data._read.type_block` writes it). One pass in numba replaces a dozen numpy
passes and their temporaries of the block's size. This module must not type cells or decide
what a column is.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._read import _shows

__all__ = ["block_stats"]

_NEG_ZERO = np.uint64(0x8000000000000000)
_I32_LO, _I32_HI = float(np.iinfo(np.int32).min), float(np.iinfo(np.int32).max)


@njit(cache=True, nogil=True)
def _block_stats(V, bits, lines, rows, first_inf, max_abs, n_num, n_fin, total, with_sums,
                 skip, ranges, narrow, shows):
    all_rows = rows.shape[0] == 0
    with_fin = n_fin.shape[0] > 0
    with_ranges, with_narrow = ranges.shape[0] > 0, narrow.shape[0] > 0
    for r in range(V.shape[0]):
        if skip.shape[0] and skip[r]:
            continue
        cnt = 0
        fin = 0
        top = max_abs[r]
        s = 0.0
        c = 0.0                      # Neumaier's compensation: the low bits s has lost
        # every finite number whole so far (their range in lo, hi), and no -0.0 among them
        whole, neg_zero = with_ranges or with_narrow, False
        lo, hi = np.inf, -np.inf
        look = shows.shape[0] > 0 and not shows[r]
        for i in range(V.shape[1]):
            v = V[r, i]
            if v != v or not (all_rows or rows[i]):
                continue
            cnt += 1
            a = abs(v)
            if a == np.inf:
                if first_inf[r] < 0:
                    first_inf[r] = lines[i]
                whole = False
                continue
            fin += 1
            if a > top:
                top = a
            if with_sums:
                t = s + v
                c += (s - t) + v if abs(s) >= a else (v - t) + s
                s = t
            if whole or look:
                if v == np.floor(v):
                    lo, hi = min(lo, v), max(hi, v)
                    neg_zero |= v == 0.0 and bits[r, i] == _NEG_ZERO
                else:
                    whole = False
                    if look and _shows(a):
                        look = False
                        shows[r] = True
        n_num[r] += cnt
        if with_fin:
            n_fin[r] += fin
        max_abs[r] = top
        if with_sums:
            total[r] += s + c
        if with_ranges:      # exact as an offset from the smallest under 2**52
            short = whole and -2.0**52 < lo and hi < 2.0**52
            ranges[r, 0], ranges[r, 1], ranges[r, 2] = cnt if short else -1, lo, hi
        if with_narrow:      # no NaN, no -0.0 (it would come back as 0.0)
            narrow[r] = (whole and cnt == V.shape[1] and not neg_zero
                         and _I32_LO <= lo and hi <= _I32_HI)


def block_stats(V, lines, first_inf, max_abs, n_num, total=None, rows=None, n_fin=None,
                skip=None, ranges=None, narrow=None, shows=None):
    """Count the block ``V``'s numbers (of the cells where ``rows``, a bool mask; None: all)
    into per-column arrays, all updated in place (a wide file's summaries take no temporary
    per column): ``first_inf`` (file line of a column's first infinite number, -1 while
    none; ``lines``: each cell's file line), ``max_abs`` (largest finite magnitude), and
    added to: ``n_num`` the numbers, ``total`` (None: not summed) the sum of the finite ones
    (the block's compensated sum), ``n_fin`` (None: not counted) the finite ones. ``skip``
    (a bool per column, None: none): columns left out, as if they held no number (their
    rows of ``V`` are not read: they may be unwritten, and the outputs below are not
    written for them).

    Asked for (None: not): ``ranges`` (columns x 3, set) the block's numbers of each column
    (of the cells where ``rows``) as (count, smallest, largest) when each is a whole number
    of magnitude under 2**52 (exact as an offset from the smallest), count -1 otherwise;
    ``narrow`` (bool per column, set; ``rows`` must be None) whether int32 holds every cell
    of the column exactly (no NaN, no -0.0: the same bits back); ``shows`` (bool per
    column, set to True, never back) whether a number shows that its dot is a decimal point
    (:func:`~rwtool.data._read.shows_decimal_point`; ``rows`` None)."""
    if rows is not None and (narrow is not None or shows is not None):
        raise ValueError("narrow and shows are of every cell: rows must be None")
    nothing = np.empty(0)
    V = np.ascontiguousarray(V, np.float64)
    _block_stats(V, V.view(np.uint64), np.asarray(lines, np.int64),
                 np.empty(0, np.bool_) if rows is None else rows, first_inf, max_abs, n_num,
                 np.empty(0, np.int64) if n_fin is None else n_fin,
                 nothing if total is None else total, total is not None,
                 np.empty(0, np.bool_) if skip is None else skip,
                 np.empty((0, 3)) if ranges is None else ranges,
                 np.empty(0, np.bool_) if narrow is None else narrow,
                 np.empty(0, np.bool_) if shows is None else shows)
