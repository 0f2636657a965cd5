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
def _block_stats(V, lines, rows, first_inf, max_abs, n_num, n_fin, total, with_sums):
    all_rows = rows.shape[0] == 0
    for r in range(V.shape[0]):
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
        n_num[r] = cnt
        n_fin[r] = fin
        max_abs[r] = top
        total[r] = s + c


def block_stats(V, lines, first_inf, max_abs, rows=None, with_sums=True):
    """Count the block ``V``'s numbers (of the cells where ``rows``, a bool mask; None: all)
    into ``first_inf`` (file line of a column's first infinite number, -1 while none;
    ``lines``: each cell's file line) and ``max_abs`` (largest finite magnitude), both
    updated in place; returns the block's (numbers, finite numbers, sum of the finite ones
    when ``with_sums``) per column."""
    k = V.shape[0]
    n_num, n_fin, total = np.empty(k, np.int64), np.empty(k, np.int64), np.zeros(k)
    _block_stats(np.ascontiguousarray(V, np.float64), np.asarray(lines, np.int64),
                 np.empty(0, np.bool_) if rows is None else rows, first_inf, max_abs, n_num,
                 n_fin, total, with_sums)
    return n_num, n_fin, total
