"""Products whose row i is a fixed function of row i alone: the same bits in any block of rows.

BLAS picks its kernels and blocking by the shapes it is given (a one-row product is a
matrix-vector call, a small m may take a "small matrix" kernel, the threads split the work), so
row i of X @ W computed alone can differ in its last bits from the same row inside a large
block. The Monte Carlo features sum S terms per centre in float32 and showed it as 4e-8 to
3.6e-7 relative differences, enough to move ``partial_fit`` with one-row chunks off ``fit``.
Here the order in which each output element is summed depends only on its position in the row
(the length of the inner dimension), never on the block, the row's place in it or the thread:

* ``_tile_dots`` computes 4 rows x 4 columns of inner products over the whole inner dimension,
  vectorised with reassociated partial sums (lane-wise, then a fixed tree; the registers hold
  the 16 sums, which BLAS-like speed needs). A block is padded with zero rows to a multiple of
  4, so every row takes this one path;
* ``_axpy_tiles`` forms z = sum_k x_k d_k over the inputs in the order k = 0..n-1, IEEE-strict
  (the same bits on any machine, so the signs of <w, x> never depend on the CPU);
* ``stump_prefix_rows`` reads sums of sorted draws from prefix tables (no product at all).

This module multiplies and looks up; it knows the base predictors only by the codes of ``PHI``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..threads import run_row_shares
from ._base import read_only

__all__ = ["PHI", "phi_inplace", "dot_base_rows", "rows_times", "stump_prefix_rows",
           "pad_rows"]

#: the element-wise base predictors phi(<w, x>) of the fused kernel, by code (their index)
PHI = ("sign", "relu", "tanh", "sigmoid")
#: rows of one tile, columns of one tile (the 16 sums of ``_tile_dots``)
_R = 4
_C = 4
#: rows per task (the unit the threads share): its block of phi values (32 x S float32) stays
#: in the L2 cache
_ROWS_PER_TASK = 32
#: columns (centres) per cache tile: 64 rows of the S-long right factor, 512 KB at S = 2000
_COLS_PER_TILE = 64


def pad_rows(A: np.ndarray, dtype) -> np.ndarray:
    """A as a C-contiguous ``dtype`` array with zero rows appended up to a multiple of 4."""
    out = np.zeros((-(-A.shape[0] // _R) * _R, A.shape[1]), dtype=dtype)
    out[:A.shape[0]] = A
    return out


@njit(cache=True, nogil=True)
def _phi(code, z):
    if code == 0:
        return 1.0 if z > 0.0 else (-1.0 if z < 0.0 else 0.0)
    if code == 1:
        return z if z > 0.0 else 0.0
    if code == 2:
        return math.tanh(z)
    if z >= 0.0:  # sigmoid, written to stay finite for large |z|
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


@njit(cache=True, nogil=True)
def _phi_rows(Z, code, a, b):
    """Z[i] <- phi(Z[i]) for rows a <= i < b (the base predictor ``PHI[code]``)."""
    for i in range(a, b):
        for s in range(Z.shape[1]):
            Z[i, s] = _phi(code, Z[i, s])


def phi_inplace(Z, code):
    """Z <- phi(Z) element-wise for the base predictor ``PHI[code]``."""
    run_row_shares(lambda a, b: _phi_rows(Z, code, a, b), *Z.shape)


@njit(fastmath={"reassoc", "contract"}, cache=True, nogil=True)
def _tile_dots(b0, b1, b2, b3, m0, m1, m2, m3):
    """The 16 inner products <b_i, m_j>; the summation order depends on len(b0) only (and on
    the machine's vector width: another CPU may round otherwise, one CPU always alike)."""
    zero = b0.dtype.type(0)
    a00 = a01 = a02 = a03 = a10 = a11 = a12 = a13 = zero
    a20 = a21 = a22 = a23 = a30 = a31 = a32 = a33 = zero
    for s in range(b0.shape[0]):
        x0, x1, x2, x3 = b0[s], b1[s], b2[s], b3[s]
        y0, y1, y2, y3 = m0[s], m1[s], m2[s], m3[s]
        a00 += x0 * y0
        a01 += x0 * y1
        a02 += x0 * y2
        a03 += x0 * y3
        a10 += x1 * y0
        a11 += x1 * y1
        a12 += x1 * y2
        a13 += x1 * y3
        a20 += x2 * y0
        a21 += x2 * y1
        a22 += x2 * y2
        a23 += x2 * y3
        a30 += x3 * y0
        a31 += x3 * y1
        a32 += x3 * y2
        a33 += x3 * y3
    return (a00, a01, a02, a03, a10, a11, a12, a13, a20, a21, a22, a23, a30, a31, a32, a33)


@njit(cache=True, nogil=True)
def _times_rows(Z, MT, out, r0, nrows):
    """out[r0 + r, t] <- <Z[r], MT[t]> for r < nrows, t < out.shape[1].

    Z and MT have a multiple of 4 rows (zero rows pad them)."""
    T = out.shape[1]
    for c0 in range(0, MT.shape[0], _COLS_PER_TILE):
        c1 = min(MT.shape[0], c0 + _COLS_PER_TILE)
        for q in range(0, Z.shape[0], _R):
            for c in range(c0, c1, _C):
                a = _tile_dots(Z[q], Z[q + 1], Z[q + 2], Z[q + 3],
                               MT[c], MT[c + 1], MT[c + 2], MT[c + 3])
                for i in range(_R):
                    if q + i < nrows:
                        for j in range(_C):
                            if c + j < T:
                                out[r0 + q + i, c + j] = a[i * _C + j]


@njit(cache=True, nogil=True)
def _padded_rows(X, r0, nrows, dtype):
    """Rows r0..r0+nrows of X in ``dtype``, zero rows appended up to a multiple of 4."""
    Xb = np.zeros((-(-nrows // _R) * _R, X.shape[1]), dtype=dtype)
    for r in range(nrows):
        for k in range(X.shape[1]):
            Xb[r, k] = X[r0 + r, k]
    return Xb


@njit(cache=True, nogil=True)
def _axpy_tiles(Xb, DT, Z):
    """Z[r] += sum_k Xb[r, k] DT[k] over k in order 0..n-1, IEEE-strict: 4 rows share each load
    of DT, and two terms are added per pass over a row (the same sum, half the stores)."""
    n, S = DT.shape
    for q in range(0, Z.shape[0], _R):
        z0, z1, z2, z3 = Z[q], Z[q + 1], Z[q + 2], Z[q + 3]
        for k in range(0, n - 1, 2):
            a0, a1, a2, a3 = Xb[q, k], Xb[q + 1, k], Xb[q + 2, k], Xb[q + 3, k]
            b0, b1, b2, b3 = Xb[q, k + 1], Xb[q + 1, k + 1], Xb[q + 2, k + 1], Xb[q + 3, k + 1]
            d, e = DT[k], DT[k + 1]
            for s in range(S):
                z0[s] = (z0[s] + a0 * d[s]) + b0 * e[s]
                z1[s] = (z1[s] + a1 * d[s]) + b1 * e[s]
                z2[s] = (z2[s] + a2 * d[s]) + b2 * e[s]
                z3[s] = (z3[s] + a3 * d[s]) + b3 * e[s]
        if n % 2:
            a0, a1, a2, a3 = Xb[q, n - 1], Xb[q + 1, n - 1], Xb[q + 2, n - 1], Xb[q + 3, n - 1]
            d = DT[n - 1]
            for s in range(S):
                z0[s] = z0[s] + a0 * d[s]
                z1[s] = z1[s] + a1 * d[s]
                z2[s] = z2[s] + a2 * d[s]
                z3[s] = z3[s] + a3 * d[s]


@njit(cache=True, nogil=True)
def _dot_base_tasks(X, DT, code, MT, linT, const, out, t0, t1):
    """dot_base_rows for the tasks t0 <= b < t1 (rows 32 b to 32 b + 31)."""
    m = X.shape[0]
    S = DT.shape[1]
    T = out.shape[1]
    for b in range(t0, t1):
        r0 = b * _ROWS_PER_TASK
        nrows = min(m, r0 + _ROWS_PER_TASK) - r0
        Xb = _padded_rows(X, r0, nrows, DT.dtype)
        Z = np.zeros((Xb.shape[0], S), dtype=DT.dtype)
        _axpy_tiles(Xb, DT, Z)
        for r in range(nrows):
            for s in range(S):
                Z[r, s] = _phi(code, Z[r, s])
        _times_rows(Z, MT, out, r0, nrows)
        if linT.shape[0]:
            L = np.empty((nrows, T))
            _times_rows(Xb, linT, L, 0, nrows)
            for r in range(nrows):
                for t in range(T):
                    out[r0 + r, t] = out[r0 + r, t] + L[r, t]
        if const.shape[0]:
            for r in range(r0, r0 + nrows):
                for t in range(T):
                    out[r, t] = out[r, t] + const[t]


def _tasks(m: int) -> int:
    return (m + _ROWS_PER_TASK - 1) // _ROWS_PER_TASK


def dot_base_rows(X, DT, code, MT, linT, const, out):
    """out[i] <- phi(x_i D^T) M (+ x_i lin) (+ const), each row in a fixed order.

    X (m x n, any float), DT = D^T (n x S, the dtype of the phi block), MT = M^T and linT =
    lin^T (T' x n, or 0 x n for none) in that dtype, padded to a multiple of 4 rows, const
    (T, or empty). The tasks of 32 rows are shared among threads (a row's sums do not depend
    on the task it is in).
    """
    n, S = DT.shape
    X = read_only(X)
    run_row_shares(lambda a, b: _dot_base_tasks(X, DT, code, MT, linT, const, out, a, b),
                   _tasks(X.shape[0]), _ROWS_PER_TASK * S * (n + MT.shape[0] + 1))


@njit(cache=True, nogil=True)
def _times_tasks(B, MT, out, t0, t1):
    """rows_times for the tasks t0 <= b < t1."""
    m = B.shape[0]
    for b in range(t0, t1):
        r0 = b * _ROWS_PER_TASK
        nrows = min(m, r0 + _ROWS_PER_TASK) - r0
        _times_rows(_padded_rows(B, r0, nrows, MT.dtype), MT, out, r0, nrows)


def rows_times(B, MT, out):
    """out <- B M row by row in a fixed order; MT = M^T padded to a multiple of 4 rows."""
    run_row_shares(lambda a, b: _times_tasks(B, MT, out, a, b), _tasks(B.shape[0]),
                   _ROWS_PER_TASK * B.shape[1] * MT.shape[0])


@njit(cache=True, nogil=True)
def _stump_prefix_rows(X, column, thr, start, centres, cstart, pref, pstart, out, a, b):
    """stump_prefix_rows for rows a <= i < b."""
    groups = column.shape[0]
    for i in range(a, b):
        for t in range(out.shape[1]):
            out[i, t] = 0.0
        for g in range(groups):
            lo_s, hi_s = start[g], start[g + 1]
            x = X[i, column[g]]
            lo = np.searchsorted(thr[lo_s:hi_s], x, side="left")
            hi = np.searchsorted(thr[lo_s:hi_s], x, side="right")
            c0, c1 = cstart[g], cstart[g + 1]
            width = c1 - c0
            p_lo = pstart[g] + lo * width
            p_hi = pstart[g] + hi * width
            p_end = pstart[g] + (hi_s - lo_s) * width
            for q in range(width):
                t = centres[c0 + q]
                out[i, t] = out[i, t] + ((pref[p_lo + q] + pref[p_hi + q]) - pref[p_end + q])


def stump_prefix_rows(X, column, thr, start, centres, cstart, pref, pstart, out):
    """Stump features sum_s sign(x_j - thr_s) K[s, t] from prefix sums of sorted draws.

    Group g holds the draws of input column ``column[g]``: thresholds ``thr[start[g]:start[g+1]]``
    sorted ascending, and reaches centres ``centres[cstart[g]:cstart[g+1]]``; its table P (n_g + 1
    rows, one column per centre, flat at ``pref[pstart[g]:]``) holds P[k] = sum of the first k
    draws' sections. With lo = #{thr < x} and hi = #{thr <= x} the sum is P[lo] + P[hi] - P[n_g].
    Each output element adds its groups in group order, so a row's features depend on the row
    only (and the rows are shared among threads).
    """
    X = read_only(X)
    run_row_shares(lambda a, b: _stump_prefix_rows(X, column, thr, start, centres, cstart,
                                                   pref, pstart, out, a, b),
                   X.shape[0], out.shape[1] + 2 * column.shape[0])
