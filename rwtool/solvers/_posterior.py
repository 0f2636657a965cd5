"""The Bayesian linear model on the features: what ``predict(X, return_std=True)`` needs.

With y = phi(x)^T a + noise, noise ~ N(0, s2) per row (a row of weight w counting as w rows),
and the prior a ~ N(0, s2 P^-1), P = m reg R + m eps I (R = G for the RKHS weightings, I for
the kitchen sinks; m the rows, or the weight sum), the posterior of a is N(a_hat, s2 M^-1) with
M = Phi^T W Phi + P -- the matrix the exact solvers factor, a_hat their solution. A new row's
predictive variance is

    s2 (1 + phi(x)^T M^-1 phi(x)) = s2 (1 + ||L^-1 phi(x)||^2),   M = L L^T,

O(T^2) per row by a triangular solve with the factor the fit already computed. s2 is
estimated from the training residuals with the effective degrees of freedom of the ridge
smoother: s2 = RSS / (m - df), df = tr(M^-1 Phi^T W Phi), RSS = yy - 2 a^T B + a^T A a, all
from the sums (so ``partial_fit`` and Dask get it too). Empirical Bayes would fit s2 and reg
jointly; reg here is the one the solver used (given or cross-validated).

This module knows neither estimators nor feature maps beyond their feature blocks.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import LinAlgError, lapack, solve_triangular

from ..threads import single_blas_thread

__all__ = ["noise_variance", "inverse_from_factor", "predictive_variance"]


def noise_variance(A: np.ndarray, B: np.ndarray, yy: np.ndarray, m: float, coef: np.ndarray,
                   chol: np.ndarray) -> np.ndarray:
    """s2 per output (k,): RSS / (m - df) from the sums A = Phi^T W Phi, B = Phi^T W Y,
    yy = sum w y^2 (per output), the weight sum m, the solution ``coef`` (T, k) and the
    lower Cholesky factor ``chol`` of M. df = tr(M^-1 A) from M^-1 (:func:`inverse_from_factor`,
    2 T^3 / 3 multiply-adds) against A (whole and symmetric), where a solve of M X = A took 2 T^3
    (0.45 against 0.19 s at T = 2000, one thread). On one BLAS thread, as the factor is:
    OpenBLAS's threaded A @ coef and triangular products split their sums by the thread count
    (with its Haswell kernels s2 moved in its last bits between one and two threads), and s2 is
    a fitted attribute (``noise_var_``)."""
    with single_blas_thread():
        rss = yy - 2.0 * np.einsum("ij,ij->j", coef, B) + np.einsum("ij,ij->j", coef, A @ coef)
        inv = inverse_from_factor(chol)
        # tr(M^-1 A) = sum_ij (M^-1)_ij A_ij, both symmetric: twice the strict lower triangles'
        # products plus the diagonals' (inv's strict upper triangle is zero)
        df = float(2.0 * np.vdot(inv, A) - np.dot(np.diagonal(inv), np.diagonal(A)))
    # a model with as many effective parameters as rows has no residual to estimate s2 from:
    # keep one degree of freedom (s2 is then the RSS itself, an underestimate it says nothing of)
    return np.maximum(rss, 0.0) / max(float(m) - df, 1.0)


def inverse_from_factor(chol: np.ndarray) -> np.ndarray:
    """M^-1's lower triangle (the strict upper one zero) from the lower Cholesky factor ``chol``
    of M (its upper triangle is not read): LAPACK's dpotri, L^-1 then L^-T L^-1, a new T x T
    array."""
    inv, info = lapack.dpotri(chol, lower=1)
    if info != 0:
        raise LinAlgError(f"the Cholesky factor is singular (dpotri info {info})")
    inv[~np.tri(len(inv), dtype=bool)] = 0.0
    return inv


def predictive_variance(Phi: np.ndarray, chol: np.ndarray) -> np.ndarray:
    """phi(x)^T M^-1 phi(x) for each row of ``Phi`` (b, T): ||L^-1 phi||^2, one triangular
    solve of the block (O(b T^2))."""
    V = solve_triangular(chol, Phi.T, lower=True, check_finite=False)
    return np.einsum("ij,ij->j", V, V)
