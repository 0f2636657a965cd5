"""A += Phi^T Phi, the rank-k update of the blocked normal equations, in place.

numpy's ``Phi.T @ Phi`` computes one triangle with BLAS dsyrk and copies it to the other, and
the block loop then adds that T x T product to its running sum: two passes over T^2 words a
block besides the product, and a T x T scratch matrix (at T = 4000, 1024 / 2048 rows a block:
0.336 / 0.651 CPU s against 0.308 / 0.615 for the update alone, one thread, 8% / 5.5%). Here a
float64 block goes to dsyrk with beta = 1, which adds its product to the lower triangle of the
sum directly; ``mirror_lower`` copies that triangle to the upper one once, after the last
block. The call goes to the BLAS numpy itself uses (its OpenBLAS's ``cblas_dsyrk``, found by
rwtool.threads.numpy_blas however the build spells it), through ctypes,
which releases the GIL like numpy does; the same library, so the same threads and the same
per-entry arithmetic (each entry summed over the block's rows by one thread, whatever their
number). Where it is not found (numpy built against another BLAS), a float32 block, or an
array that is not laid out for it, the update is numpy's product and an add, as before.

This module holds the updates only; it knows nothing of feature maps or of the solve.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..threads import numpy_blas

__all__ = ["rank_update", "mirror_lower", "DIRECT"]

_ROW_MAJOR, _LOWER, _TRANS = 101, 122, 112      # CBLAS enums
_MIRROR_PANEL = 512                               # rows of A mirrored a step (cache-sized)


_DSYRK = numpy_blas("cblas_dsyrk", lambda n: [
    ctypes.c_int, ctypes.c_int, ctypes.c_int, n, n, ctypes.c_double, ctypes.c_void_p, n,
    ctypes.c_double, ctypes.c_void_p, n])
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
