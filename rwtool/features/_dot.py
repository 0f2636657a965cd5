"""X W^T: for few input columns each entry a sum in one fixed order; else BLAS, also from numba.

BLAS rounds an entry of X W^T differently depending on the rows it is given with when the
inner dimension is small (OpenBLAS's small-matrix and edge kernels: at 5 input columns 595 of
150,000 entries of a 500-row product changed when it was computed 7 rows at a time), so a
row's features, and a model fitted from features computed in slices (SFGD's ticks), depended
on how the rows were cut. Here entry (i, t) is x_i0 w_t0 followed by fused multiply-adds over
the columns in order: the same bits in any block, slice or thread. With few columns the
product is bound by writing its output (16281 x 2000, CPU s: 0.041 against BLAS's 0.045 at 5
columns, 0.049 / 0.033 at 9, 0.076 / 0.042 at 16, 0.13 / 0.068 at 32); beyond
``FIXED_ORDER_COLUMNS`` BLAS's blocking for the caches wins and dot_into (``_base``) uses it.

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

from ..threads import numpy_blas, run_row_shares
from ._vecmath import VEC_FLAGS, fma

__all__ = ["FIXED_ORDER_COLUMNS", "fixed_order_dot", "numpy_gemm", "rows_dot"]

#: input columns (with the bias column) up to which X W^T is computed here, not by BLAS
FIXED_ORDER_COLUMNS = 16

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
def rows_dot(gemm, X, W, Wt, out, pair):
    """out <- X W^T for a chunk of rows on the calling thread, as dot_into computes it: with
    ``Wt`` (W^T, contiguous) given, in the fixed order (few columns; X float64); else by
    ``gemm`` (numpy_gemm of out's dtype; X and W in out's dtype), a single row as the first
    row of a two-row product (``pair``: 2 x len(X[0]) of scratch, and out 2 rows long), as
    BLAS's GEMV path would sum in another order."""
    m, d = X.shape
    T = out.shape[1]
    if Wt.shape[0] > 0:
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
