"""X W^T for few input columns, each entry a sum in one fixed order (the rows' own product).

BLAS rounds an entry of X W^T differently depending on the rows it is given with when the
inner dimension is small (OpenBLAS's small-matrix and edge kernels: at 5 input columns 595 of
150,000 entries of a 500-row product changed when it was computed 7 rows at a time), so a
row's features, and a model fitted from features computed in slices (SFGD's ticks), depended
on how the rows were cut. Here entry (i, t) is x_i0 w_t0 followed by fused multiply-adds over
the columns in order: the same bits in any block, slice or thread. With few columns the
product is bound by writing its output (16281 x 2000, CPU s: 0.041 against BLAS's 0.045 at 5
columns, 0.049 / 0.033 at 9, 0.076 / 0.042 at 16, 0.13 / 0.068 at 32); beyond
``FIXED_ORDER_COLUMNS`` BLAS's blocking for the caches wins and dot_into (``_base``) uses it.

This module holds that product only; it knows nothing of feature maps.
"""

from __future__ import annotations

from numba import njit, prange

from ._vecmath import VEC_FLAGS, fma

__all__ = ["FIXED_ORDER_COLUMNS", "fixed_order_dot"]

#: input columns (with the bias column) up to which X W^T is computed here, not by BLAS
FIXED_ORDER_COLUMNS = 16


@njit(parallel=True, cache=True, nogil=True, **VEC_FLAGS)
def fixed_order_dot(X, Wt, out):
    """out[i, t] <- sum_j X[i, j] Wt[j, t], summed j = 0, 1, ... with fused multiply-adds (in
    float64, stored in out's dtype)."""
    m, d = X.shape
    T = Wt.shape[1]
    for i in prange(m):
        z = out[i]
        x0 = X[i, 0]
        for t in range(T):
            z[t] = x0 * Wt[0, t]
        j = 1
        while j + 3 < d:            # four columns a pass over z: a quarter of its loads/stores
            x1, x2, x3, x4 = X[i, j], X[i, j + 1], X[i, j + 2], X[i, j + 3]
            w1, w2, w3, w4 = Wt[j], Wt[j + 1], Wt[j + 2], Wt[j + 3]
            for t in range(T):
                z[t] = fma(x4, w4[t], fma(x3, w3[t], fma(x2, w2[t], fma(x1, w1[t], z[t]))))
            j += 4
        while j < d:
            xj, wj = X[i, j], Wt[j]
            for t in range(T):
                z[t] = fma(xj, wj[t], z[t])
            j += 1
