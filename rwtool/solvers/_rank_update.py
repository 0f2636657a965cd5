"""A += Phi^T Phi, the rank-k update of the blocked normal equations, in place.

numpy's ``Phi.T @ Phi`` computes one triangle with BLAS dsyrk and copies it to the other, and
the block loop then adds that T x T product to its running sum: two passes over T^2 words a
block besides the product, and a T x T scratch matrix (at T = 4000, 1024 / 2048 rows a block:
0.336 / 0.651 CPU s against 0.308 / 0.615 for the update alone, one thread, 8% / 5.5%). Here a
float64 block goes to dsyrk with beta = 1, which adds its product to the lower triangle of the
sum directly; ``mirror_lower`` copies that triangle to the upper one once, after the last
block. The call goes to the BLAS numpy itself uses (scipy-openblas64's ``cblas_dsyrk``, found
by solvers._numpy_blas among the process's OpenBLAS libraries), through ctypes,
which releases the GIL like numpy does; the same library, so the same threads and the same
per-entry arithmetic (each entry summed over the block's rows by one thread, whatever their
number). Where it is not found (numpy built against another BLAS), a float32 block, or an
array that is not laid out for it, the update is numpy's product and an add, as before.

Either update may write into a sub-block of a larger sum (a view whose rows are a stride
apart), and :func:`cross_update` adds a rectangular product P^T Q with dgemm (beta = 1): the
per-fold sums of reg="auto" keep only the leading columns apart per fold, and the rest of each
block goes, unsplit, to the one total (solvers._ridge.normal_equations ``joint``).

This module holds the updates only; it knows nothing of feature maps or of the solve.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ._numpy_blas import numpy_blas_function

__all__ = ["rank_update", "cross_update", "mirror_lower", "DIRECT"]

_ROW_MAJOR, _LOWER, _NO_TRANS, _TRANS = 101, 122, 111, 112      # CBLAS enums
_MIRROR_PANEL = 512                               # rows of A mirrored a step (cache-sized)


_DSYRK = numpy_blas_function(
    "scipy_cblas_dsyrk64_", [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int64,
                             ctypes.c_int64, ctypes.c_double, ctypes.c_void_p, ctypes.c_int64,
                             ctypes.c_double, ctypes.c_void_p, ctypes.c_int64])
_DGEMM = numpy_blas_function(
    "scipy_cblas_dgemm64_", [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int64,
                             ctypes.c_int64, ctypes.c_int64, ctypes.c_double, ctypes.c_void_p,
                             ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_double,
                             ctypes.c_void_p, ctypes.c_int64])
#: whether float64 updates go to dsyrk directly (numpy's BLAS found)
DIRECT = _DSYRK is not None


def _rows_ok(M: np.ndarray) -> bool:
    """Whether float64 ``M`` is a row-major matrix BLAS reads in place: unit column stride,
    rows a whole number of words apart, at least a row long."""
    return (M.ndim == 2 and M.dtype == np.float64 and M.strides[1] == 8
            and M.strides[0] % 8 == 0 and M.strides[0] >= 8 * M.shape[1] and M.shape[0] > 0)


def _direct_ok(A: np.ndarray, Phi: np.ndarray) -> bool:
    return (_DSYRK is not None and A.shape == (Phi.shape[1], Phi.shape[1])
            and _rows_ok(Phi) and _rows_ok(A) and A.flags.writeable)


def rank_update(A: np.ndarray, Phi: np.ndarray, scratch: np.ndarray | None = None) -> bool:
    """A += Phi^T Phi. Returns True when only the lower triangle of A was updated (dsyrk:
    call :func:`mirror_lower` on A after the last update), False when all of A was (numpy's
    product, in ``scratch`` of Phi's dtype when given, then added: a float32 block's product
    in float32, its sum in A's float64)."""
    if _direct_ok(A, Phi):
        T, k = Phi.shape[1], Phi.shape[0]
        _DSYRK(_ROW_MAJOR, _LOWER, _TRANS, T, k, 1.0, Phi.ctypes.data,
               Phi.strides[0] // 8, 1.0, A.ctypes.data, A.strides[0] // 8)
        return True
    if scratch is None:
        scratch = np.empty((Phi.shape[1], Phi.shape[1]), dtype=Phi.dtype)
    np.matmul(Phi.T, Phi, out=scratch)          # numpy spots the transposed self-product: syrk
    A += scratch
    return False


def cross_update(C: np.ndarray, P: np.ndarray, Q: np.ndarray) -> None:
    """C += P^T Q (C of shape (P columns, Q columns), P and Q with the same rows), with dgemm
    adding to C in place where all three are float64 row-major (views of a larger array
    included); else numpy's product in P's dtype (float32 blocks: float32), then added."""
    if (_DGEMM is not None and P.shape[0] == Q.shape[0] > 0
            and C.shape == (P.shape[1], Q.shape[1]) and C.shape[0] > 0 and C.shape[1] > 0
            and _rows_ok(C) and _rows_ok(P) and _rows_ok(Q) and C.flags.writeable):
        _DGEMM(_ROW_MAJOR, _TRANS, _NO_TRANS, C.shape[0], C.shape[1], P.shape[0], 1.0,
               P.ctypes.data, P.strides[0] // 8, Q.ctypes.data, Q.strides[0] // 8, 1.0,
               C.ctypes.data, C.strides[0] // 8)
        return
    C += P.T @ Q


def mirror_lower(A: np.ndarray) -> np.ndarray:
    """Copy A's lower triangle onto its upper one, in place (panels of rows, so that the
    transposed reads stay in cache)."""
    T = A.shape[0]
    for b in range(0, T, _MIRROR_PANEL):
        e = min(T, b + _MIRROR_PANEL)
        A[b:e, e:] = A[e:, b:e].T
        D = A[b:e, b:e]
        iu = np.triu_indices(e - b, 1)
        D[iu] = D.T[iu]
    return A
