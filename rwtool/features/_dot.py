"""X W^T: a sum in one fixed order for few input columns or mostly-constant ones; else BLAS.

BLAS rounds an entry of X W^T differently depending on the rows it is given with when the
inner dimension is small (OpenBLAS's small-matrix and edge kernels: at 5 input columns 595 of
150,000 entries of a 500-row product changed when it was computed 7 rows at a time), so a
row's features, and a model fitted from features computed in slices (SFGD's ticks), depended
on how the rows were cut. Here entry (i, t) is x_i0 w_t0 followed by fused multiply-adds over
the columns in order: the same bits in any block, slice or thread. With few columns the
product is bound by writing its output (16281 x 2000, CPU s: 0.041 against BLAS's 0.045 at 5
columns, 0.049 / 0.033 at 9, 0.076 / 0.042 at 16, 0.13 / 0.068 at 32); beyond
``FIXED_ORDER_COLUMNS`` BLAS's blocking for the caches wins and dot_into (``_base``) uses it.

Inputs that are mostly one value per column (pixels mostly 0, one-hot columns: before
standardisation mostly 0, after it mostly the column's image of 0) take a product that skips
them (:func:`sparse_dot`): with m_j the value column j takes most often in the training rows
(``modes``, chosen once per fitted map: :func:`input_modes`) and c_t = sum_j m_j w_tj,
x . w_t = c_t + sum_{j: x_j != m_j} (x_j - m_j) w_tj, entry (i, t) being c_t followed by fused
multiply-adds over the differing columns in order (the same bits in any block, slice or
thread; a column constant in the training rows is never read). The terms are the dense
ones rearranged around the modes: a row near them rounds as the dense sum does, a row far
from large modes on the modes' scale ((d + 2) eps sum_j (|x_j| + 2 |m_j|) |w_tj|: c_t's
m_j w_tj cancels against (x_j - m_j) w_tj). Where at most ``SPARSE_FRACTION`` of the
entries differ it costs less than BLAS's product (mnist 1-vs-7 standardised, 13.7%
differing, a block of 2048 x 785 against W of 8000 rows: 0.21 s against 0.47 s of DGEMM,
CPU s, one thread).

Predict's kernels run X W^T on their own threads, a chunk of rows per call (``rows_dot``), so
that one thread pool does the whole pass: :func:`numpy_gemm` gives numba the GEMM of numpy's
own OpenBLAS (the library of ``np.matmul``, so a row's bits are those of dot_into), called
with the same arguments as numpy's matmul calls it.

This module holds that product only; it knows nothing of feature maps.
"""

from __future__ import annotations

import ctypes

import numpy as np
from numba import njit

from ..threads import numpy_blas, read_only, run_row_shares
from ._vecmath import VEC_FLAGS, fma

__all__ = ["FIXED_ORDER_COLUMNS", "SPARSE_FRACTION", "fixed_order_dot", "input_modes",
           "numpy_gemm", "rows_dot", "sparse_dot"]

#: input columns (with the bias column) up to which X W^T is computed here, not by BLAS
FIXED_ORDER_COLUMNS = 16
#: the largest fraction of input entries differing from their column's mode for which
#: sparse_dot runs X W^T: its time grows with the differing entries, BLAS's does not. Time
#: against DGEMM on 2048 rows (one thread), at 10 / 20 / 25 / 30% differing: 0.34 / 0.70 /
#: 0.90 / 1.12 at d = 785, T = 8000; 0.36 / 0.68 / 0.76 / 0.96 at T = 2000; 0.44 / 0.70 /
#: 0.75 / 1.01 at d = 109, T = 8000; 0.63 / 0.92 / 1.07 / 1.00 at d = 40, T = 1000
SPARSE_FRACTION = 0.2
#: training rows (evenly spaced) whose columns' modes and differing fraction choose the path
MODE_SAMPLE_ROWS = 1024
#: columns of W^T one pass of sparse_dot over a block's rows covers: the d x 512 slice stays
#: in cache while every row of the block reads it (0.21 s a 2048-row mnist block at 512, 0.23
#: at 256, 0.27 at the whole 8000, 0.36 at 64)
SPARSE_TILE = 512

# CBLAS's enumerations: row-major storage, no transposition, transposition
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112


@njit(inline="always", **VEC_FLAGS)
def _fixed_order_row(x, Wt, z):
    """z[t] <- sum_j x[j] Wt[j, t], summed j = 0, 1, ... with fused multiply-adds."""
    d = x.shape[0]
    T = Wt.shape[1]
    x0 = x[0]
    for t in range(T):
        z[t] = x0 * Wt[0, t]
    j = 1
    while j + 3 < d:            # four columns a pass over z: a quarter of its loads/stores
        x1, x2, x3, x4 = x[j], x[j + 1], x[j + 2], x[j + 3]
        w1, w2, w3, w4 = Wt[j], Wt[j + 1], Wt[j + 2], Wt[j + 3]
        for t in range(T):
            z[t] = fma(x4, w4[t], fma(x3, w3[t], fma(x2, w2[t], fma(x1, w1[t], z[t]))))
        j += 4
    while j < d:
        xj, wj = x[j], Wt[j]
        for t in range(T):
            z[t] = fma(xj, wj[t], z[t])
        j += 1


@njit(cache=True, nogil=True, **VEC_FLAGS)
def _fixed_order_rows(X, Wt, out, r0, r1):
    """out[i, t] <- sum_j X[i, j] Wt[j, t] for rows r0 <= i < r1 of X and t < Wt.shape[1] (out
    may have more columns: they are left alone), summed j = 0, 1, ... with fused multiply-adds
    (in float64, stored in out's dtype). Sequential and without the GIL: fixed_order_dot's
    threads call it (predict's chunks, rows_dot, inline the same row sum). Compiled for X
    float64 and C-contiguous arrays only, once per output dtype (a float32 X, widened exactly
    in the sum, or a column slice for out compiled it twice more)."""
    for i in range(r0, r1):
        _fixed_order_row(X[i], Wt, out[i])


def fixed_order_dot(X, Wt, out):
    """out[:, :Wt.shape[1]] <- X Wt in the fixed order (_fixed_order_rows), the rows shared
    among threads (rwtool.threads.run_row_shares; a row's sum does not depend on its share).
    A float32 X is widened to float64 (what the sum does to each term anyway: the same bits)
    and a read-only one copied (numba types it apart, and predict's chunks pass a writable
    X: one signature for both; the copy is of at most FIXED_ORDER_COLUMNS columns); an
    ``out`` that is not C-contiguous (a column slice of a larger block) is computed into a
    C-contiguous block and copied in."""
    X = np.require(X, np.float64, ["C", "W"])
    target = out if out.flags.c_contiguous else np.empty((out.shape[0], Wt.shape[1]), out.dtype)
    run_row_shares(lambda a, b: _fixed_order_rows(X, Wt, target, a, b), X.shape[0],
                   X.shape[1] * Wt.shape[1])
    if target is not out:
        out[:, :Wt.shape[1]] = target


def input_modes(X: np.ndarray) -> np.ndarray | None:
    """The value each column of X takes most often in up to ``MODE_SAMPLE_ROWS`` evenly spaced
    rows (the smallest of equally frequent ones), or 0 for a column whose most frequent value
    holds under a tenth of those rows, when at most ``SPARSE_FRACTION`` of the rows' entries
    differ from these values and X has more than ``FIXED_ORDER_COLUMNS`` columns; else None
    (the dense product). Deterministic: the sample's rows are fixed by len(X)."""
    m, d = X.shape
    if m == 0 or d <= FIXED_ORDER_COLUMNS:
        return None
    S = np.sort(X[np.linspace(0, m - 1, min(m, MODE_SAMPLE_ROWS)).astype(np.int64)], axis=0)
    n = len(S)
    pos = np.arange(n)[:, None]
    new = np.ones(S.shape, dtype=bool)
    new[1:] = S[1:] != S[:-1]
    # a run's length at each of its positions, from the position where it started
    run = pos - np.maximum.accumulate(np.where(new, pos, 0), axis=0) + 1
    top = np.argmax(run, axis=0)
    modes = np.ascontiguousarray(S[top, np.arange(d)], dtype=np.float64)
    # a column whose most frequent value is rare is summed whole, as the dense product sums
    # it: around that value (an all-distinct column's minimum) it would gain little and round
    # on the value's scale (docs/SOLVERS.md, "Sparse inputs")
    modes[10 * run[top, np.arange(d)] < n] = 0.0
    if np.count_nonzero(S != modes) > SPARSE_FRACTION * S.size:
        return None
    return modes


@njit(inline="always", **VEC_FLAGS)
def _sparse_block(X, modes, Wt, c, out, r0, r1):
    """out[i, t] <- c[t] + sum_{j: X[i, j] != modes[j]} (X[i, j] - modes[j]) Wt[j, t] for rows
    r0 <= i < r1 and t < Wt.shape[1], the differences summed j = 0, 1, ... with fused
    multiply-adds after c[t]. The rows' differing entries are gathered once, then each tile
    of SPARSE_TILE columns of Wt is read by every row while it is in cache."""
    d = X.shape[1]
    T = Wt.shape[1]
    n = 0
    for i in range(r0, r1):
        for j in range(d):
            if X[i, j] != modes[j]:
                n += 1
    ptr = np.empty(r1 - r0 + 1, np.int64)
    idx = np.empty(max(n, 1), np.int64)
    val = np.empty(max(n, 1))
    n = 0
    for i in range(r0, r1):
        ptr[i - r0] = n
        for j in range(d):
            if X[i, j] != modes[j]:
                idx[n] = j
                val[n] = X[i, j] - modes[j]
                n += 1
    ptr[r1 - r0] = n
    for t0 in range(0, T, SPARSE_TILE):
        t1 = min(T, t0 + SPARSE_TILE)
        ct = c[t0:t1]
        for i in range(r0, r1):
            z = out[i, t0:t1]
            for t in range(t1 - t0):
                z[t] = ct[t]
            k, e = ptr[i - r0], ptr[i - r0 + 1]
            while k + 3 < e:    # four columns a pass over z, nested in order: one rounding each
                v1, v2, v3, v4 = val[k], val[k + 1], val[k + 2], val[k + 3]
                w1, w2 = Wt[idx[k], t0:t1], Wt[idx[k + 1], t0:t1]
                w3, w4 = Wt[idx[k + 2], t0:t1], Wt[idx[k + 3], t0:t1]
                for t in range(t1 - t0):
                    z[t] = fma(v4, w4[t], fma(v3, w3[t], fma(v2, w2[t], fma(v1, w1[t], z[t]))))
                k += 4
            while k < e:
                v1, w1 = val[k], Wt[idx[k], t0:t1]
                for t in range(t1 - t0):
                    z[t] = fma(v1, w1[t], z[t])
                k += 1


@njit(cache=True, nogil=True, **VEC_FLAGS)
def _sparse_rows(X, modes, Wt, c, out, r0, r1):
    """_sparse_block for rows r0 <= i < r1 (sequential, without the GIL: sparse_dot's threads
    call it; predict's chunks, rows_dot, inline the block). Compiled for read-only inputs and
    a C-contiguous float64 ``out`` (one signature)."""
    _sparse_block(X, modes, Wt, c, out, r0, r1)


def sparse_dot(X, modes, Wt, c, out):
    """out[:, :Wt.shape[1]] <- X Wt computed around the columns' ``modes`` (``c`` = modes Wt,
    computed once per map: :func:`sparse_offsets`), the rows shared among threads (a row's
    sum does not depend on its share). ``out`` float64; one that is not C-contiguous is
    computed into a C-contiguous block and copied in."""
    X = read_only(np.ascontiguousarray(X, dtype=np.float64))
    modes, Wt, c = read_only(modes), read_only(Wt), read_only(c)
    target = out if out.flags.c_contiguous else np.empty((out.shape[0], Wt.shape[1]))
    run_row_shares(lambda a, b: _sparse_rows(X, modes, Wt, c, target, a, b), X.shape[0],
                   X.shape[1] * Wt.shape[1])
    if target is not out:
        out[:, :Wt.shape[1]] = target


def sparse_offsets(W: np.ndarray, modes: np.ndarray):
    """(modes, W^T, c) for :func:`sparse_dot` and rows_dot: the modes and W^T contiguous,
    c_t = sum_j modes_j W[t, j] in the fixed order (the same bits for a map and any subset
    of its rows of W, on every thread count)."""
    modes = np.array(modes, dtype=np.float64)
    Wt = np.array(W.T, dtype=np.float64, order="C")   # a copy: writable, one signature
    c = np.empty((1, Wt.shape[1]))
    _fixed_order_rows(modes[None, :], Wt, c, 0, 1)
    return modes, Wt, c[0]


_GEMMS: dict = {}


def numpy_gemm(dtype) -> object | None:
    """CBLAS's dgemm (float64) or sgemm (float32) of numpy's OpenBLAS as a ctypes function
    numba can call (rwtool.threads.numpy_blas), or None when numpy's BLAS is not an OpenBLAS
    found in this process (the callers then take BLAS through numpy)."""
    kind = "d" if np.dtype(dtype) == np.float64 else "s"
    if kind not in _GEMMS:
        real = ctypes.c_double if kind == "d" else ctypes.c_float
        _GEMMS[kind] = numpy_blas(f"cblas_{kind}gemm", lambda n: [
            ctypes.c_int, ctypes.c_int, ctypes.c_int, n, n, n, real, ctypes.c_void_p, n,
            ctypes.c_void_p, n, real, ctypes.c_void_p, n])
    return _GEMMS[kind]


@njit(inline="always", **VEC_FLAGS)
def rows_dot(gemm, X, W, Wt, modes, c, out, pair):
    """out <- X W^T for a chunk of rows on the calling thread, as dot_into computes it: with
    ``modes`` given (not empty), around them (_sparse_block; ``Wt`` and ``c`` of
    sparse_offsets, X and out float64); with ``Wt`` (W^T, contiguous) alone, in the fixed
    order (few columns; X float64); else by
    ``gemm`` (numpy_gemm of out's dtype; X and W in out's dtype), a single row as the first
    row of a two-row product (``pair``: 2 x len(X[0]) of scratch, and out 2 rows long), as
    BLAS's GEMV path would sum in another order."""
    m, d = X.shape
    T = out.shape[1]
    if modes.shape[0] > 0:
        _sparse_block(X, modes, Wt, c, out, 0, m)
    elif Wt.shape[0] > 0:
        # the row's sum inlined, not _fixed_order_rows: called from here its row bounds type
        # as literals and a float32 model's X as float32, two more compiled signatures of it
        for i in range(m):
            _fixed_order_row(X[i], Wt, out[i])
    elif m == 1:
        for j in range(d):       # a loop: an array assignment compiles numba's shape-error
            pair[0, j] = X[0, j]     # message (string formatting: 6 s on a cold cache)
            pair[1, j] = X[0, j]
        gemm(_ROW_MAJOR, _NO_TRANS, _TRANS, 2, T, d, 1.0, pair.ctypes.data, d,
             W.ctypes.data, d, 0.0, out.ctypes.data, T)
    else:
        gemm(_ROW_MAJOR, _NO_TRANS, _TRANS, m, T, d, 1.0, X.ctypes.data, d,
             W.ctypes.data, d, 0.0, out.ctypes.data, T)
