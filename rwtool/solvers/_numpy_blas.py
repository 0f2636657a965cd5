"""numpy's own BLAS and LAPACK routines, called in place through ctypes.

numpy's wheels bundle scipy-openblas64 (ILP64: symbols with a ``64_`` suffix beside scipy's
LP64 library in the same process); rwtool.threads.numpy_blas finds a routine of numpy's
library however its build spells the name, with its integer width. Two of its routines are
worth calling directly, because numpy's wrappers around them cost more than the routine:

* ``cblas_dsyrk`` (solvers._rank_update): numpy's ``Phi.T @ Phi`` fills both triangles into a
  scratch matrix that the block loop then adds to its sum;
* ``dpotrf`` (:func:`cholesky_lower`): ``np.linalg.cholesky`` copies the matrix to Fortran
  order, factors it, clears a triangle and copies the factor back; measured at one thread on
  this project's 2-core machine, T = 2400: 0.19-0.25 s against 0.12 s for dpotrf on the
  matrix in place (24 against 38-41 GFLOP/s), the factorisations of reg="auto"'s search and of
  every final solve.

ctypes releases the GIL around the call, as numpy does; the library is numpy's, so its thread
count is the one rwtool.threads sets. Where a routine is not found (numpy built against another
BLAS) the callers fall back on numpy. This module knows nothing of feature maps or solvers.
"""

from __future__ import annotations

import ctypes

import numpy as np
from numpy.linalg import LinAlgError

from ..threads import numpy_blas

__all__ = ["cholesky_lower", "DIRECT_POTRF"]

_CLEAR_PANEL = 512                  # rows of a factor cleared a step (cache-sized)


_DPOTRF = numpy_blas("dpotrf_", lambda n: [ctypes.c_char_p, ctypes.POINTER(n), ctypes.c_void_p,
                                           ctypes.POINTER(n), ctypes.POINTER(n)])
#: whether float64 Cholesky factorisations run on numpy's dpotrf in place
DIRECT_POTRF = _DPOTRF is not None


def _clear_upper(L: np.ndarray) -> None:
    """Zero the strict upper triangle of square ``L`` in place, in panels of rows (an index of
    the whole triangle would take T^2 words)."""
    T = L.shape[0]
    for b in range(0, T, _CLEAR_PANEL):
        e = min(T, b + _CLEAR_PANEL)
        L[b:e, e:] = 0.0
        D = L[b:e, b:e]
        D[np.triu_indices(e - b, 1)] = 0.0


def cholesky_lower(M: np.ndarray, overwrite: bool = False, clean: bool = True) -> np.ndarray:
    """L, lower triangular, with M = L L^T for symmetric positive definite M (only M's lower
    triangle is read); LinAlgError otherwise, as ``np.linalg.cholesky``.

    ``overwrite``: factor M itself (a C-contiguous float64 matrix the caller no longer needs;
    after a LinAlgError its lower triangle is lost). ``clean``: zero L's upper triangle (False
    leaves M's values there: for a caller that reads the lower triangle only, e.g. scipy's
    cho_solve given ``(L.T, False)``)."""
    M = np.asarray(M)
    if (not DIRECT_POTRF or M.dtype != np.float64 or M.ndim != 2
            or M.shape[0] != M.shape[1]):
        return np.linalg.cholesky(M)
    L = M if overwrite and M.flags.c_contiguous and M.flags.writeable else np.array(
        M, order="C", copy=True)
    n, info = _DPOTRF.blas_int(L.shape[0]), _DPOTRF.blas_int(0)
    if n.value:
        # Fortran reads the C-order buffer as L^T; its upper factor U (M^T = M = U^T U) lands
        # in our lower triangle as L = U^T
        _DPOTRF(b"U", ctypes.byref(n), L.ctypes.data, ctypes.byref(n), ctypes.byref(info))
    if info.value != 0:
        raise LinAlgError("Matrix is not positive definite")
    if clean:
        _clear_upper(L)
    return L
