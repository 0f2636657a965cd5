"""The in-place Cholesky on numpy's own dpotrf (solvers._numpy_blas) against np.linalg.cholesky.

The oracle is numpy's factorisation of the same matrix in the same process. Both run LAPACK's
dpotrf on the same OpenBLAS, but numpy factors a Fortran copy with uplo "L" and this module the
C buffer with uplo "U", so the blocked updates may sum in another order: the factors agree to
the backward error of Cholesky, |L L^T - M| <= c T eps |L| |L|^T, checked here with c = 4 on
matrices of condition at most about 1e6, where the entries of L differ by far less than 1e-8
relative to the largest.
"""

import numpy as np
import pytest
from numpy.linalg import LinAlgError

from rwtool.solvers._numpy_blas import DIRECT_POTRF, cholesky_lower


def _spd(T, seed, cond=1e6):
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((T, T)))
    return (Q * np.geomspace(1.0, 1.0 / cond, T)) @ Q.T + 0.0


@pytest.mark.parametrize("T", [1, 2, 7, 130, 700])
def test_factor_matches_numpy(T):
    M = _spd(T, T)
    M = (M + M.T) / 2
    L = cholesky_lower(M)
    ref = np.linalg.cholesky(M)
    assert np.array_equal(np.triu(L, 1), np.zeros((T, T)))
    bound = 4 * T * np.finfo(float).eps * (np.abs(L) @ np.abs(L).T)
    assert np.all(np.abs(L @ L.T - M) <= bound)
    assert np.max(np.abs(L - ref)) <= 1e-8 * np.max(np.abs(ref))


def test_reads_the_lower_triangle_only_and_keeps_the_input():
    M = _spd(50, 1)
    M = (M + M.T) / 2
    garbage = M.copy()
    garbage[np.triu_indices(50, 1)] = np.nan
    kept = garbage.copy()
    L = cholesky_lower(garbage)
    assert np.array_equal(garbage, kept, equal_nan=True)      # not overwritten
    np.testing.assert_allclose(L, np.linalg.cholesky(M), rtol=0, atol=1e-12)


def test_overwrite_factors_in_place_and_unclean_keeps_the_upper_triangle():
    M = _spd(40, 2)
    M = (M + M.T) / 2
    work = M.copy()
    L = cholesky_lower(work, overwrite=True, clean=False)
    assert L is work or not DIRECT_POTRF
    if DIRECT_POTRF:
        iu = np.triu_indices(40, 1)
        assert np.array_equal(L[iu], M[iu])         # M's values, what cho_solve never reads
    np.testing.assert_allclose(np.tril(L), np.linalg.cholesky(M), rtol=0, atol=1e-12)


def test_fortran_and_strided_inputs_are_copied():
    M = _spd(30, 3)
    M = (M + M.T) / 2
    for view in (np.asfortranarray(M), np.kron(M, np.ones((1, 2)))[:, ::2]):
        before = view.copy()
        L = cholesky_lower(view, overwrite=True)
        assert np.array_equal(view, before)
        np.testing.assert_allclose(L, np.linalg.cholesky(M), rtol=0, atol=1e-12)


def test_not_positive_definite_raises():
    M = _spd(20, 4)
    M = (M + M.T) / 2
    M[5, 5] = -1.0
    with pytest.raises(LinAlgError):
        cholesky_lower(M)
    with pytest.raises(LinAlgError):
        np.linalg.cholesky(M)


def test_nan_gives_a_nan_factor_as_numpy():
    """dpotrf does not stop at a NaN pivot (neither does numpy's cholesky): the factor is not
    finite, which the solvers' finiteness checks report."""
    M = 2.0 * np.eye(20)
    M[3, 3] = np.nan
    L, ref = cholesky_lower(M), np.linalg.cholesky(M)
    assert np.array_equal(np.isnan(L), np.isnan(ref))
    assert not np.isfinite(L).all()
