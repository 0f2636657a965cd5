"""Per-column statistics of a typed block of numbers in one pass, for the streaming reader's
summaries: how many numbers, how many finite, the file line of the first infinite one, the
largest finite magnitude and (compensated) sum, over every cell or the cells of a row mask.

A block is ``(columns, rows)`` float64 with NaN where a cell holds no number (text or missing,
as :func:`rwtool.data._read.type_block` writes it). One pass in numba replaces a dozen numpy
passes and their temporaries of the block's size. This module must not type cells or decide
what a column is.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["block_stats"]


@njit(cache=True, nogil=True)
def _block_stats(V, lines, rows, first_inf, max_abs, n_num, n_fin, total, with_sums, skip):
    all_rows = rows.shape[0] == 0
    with_fin = n_fin.shape[0] > 0
    for r in range(V.shape[0]):
        if skip.shape[0] and skip[r]:
            continue
        cnt = 0
        fin = 0
        top = max_abs[r]
        s = 0.0
        c = 0.0                      # Neumaier's compensation: the low bits s has lost
        for i in range(V.shape[1]):
            v = V[r, i]
            if v != v or not (all_rows or rows[i]):
                continue
            cnt += 1
            a = abs(v)
            if a == np.inf:
                if first_inf[r] < 0:
                    first_inf[r] = lines[i]
                continue
            fin += 1
            if a > top:
                top = a
            if with_sums:
                t = s + v
                c += (s - t) + v if abs(s) >= a else (v - t) + s
                s = t
        n_num[r] += cnt
        if with_fin:
            n_fin[r] += fin
        max_abs[r] = top
        if with_sums:
            total[r] += s + c


def block_stats(V, lines, first_inf, max_abs, n_num, total=None, rows=None, n_fin=None,
                skip=None):
    """Count the block ``V``'s numbers (of the cells where ``rows``, a bool mask; None: all)
    into per-column arrays, all updated in place (a wide file's summaries take no temporary
    per column): ``first_inf`` (file line of a column's first infinite number, -1 while
    none; ``lines``: each cell's file line), ``max_abs`` (largest finite magnitude), and
    added to: ``n_num`` the numbers, ``total`` (None: not summed) the sum of the finite ones
    (the block's compensated sum), ``n_fin`` (None: not counted) the finite ones. ``skip``
    (a bool per column, None: none): columns left out, as if they held no number (their
    rows of ``V`` are not read: they may be unwritten)."""
    nothing = np.empty(0)
    _block_stats(np.ascontiguousarray(V, np.float64), np.asarray(lines, np.int64),
                 np.empty(0, np.bool_) if rows is None else rows, first_inf, max_abs, n_num,
                 np.empty(0, np.int64) if n_fin is None else n_fin,
                 nothing if total is None else total, total is not None,
                 np.empty(0, np.bool_) if skip is None else skip)
