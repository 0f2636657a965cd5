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
from scipy.linalg import cho_solve, solve_triangular

from ..threads import single_blas_thread

__all__ = ["noise_variance", "predictive_variance"]


def noise_variance(A: np.ndarray, B: np.ndarray, yy: np.ndarray, m: float, coef: np.ndarray,
                   chol: np.ndarray) -> np.ndarray:
    """s2 per output (k,): RSS / (m - df) from the sums A = Phi^T W Phi, B = Phi^T W Y,
    yy = sum w y^2 (per output), the weight sum m, the solution ``coef`` (T, k) and the
    lower Cholesky factor ``chol`` of M. df = tr(M^-1 A) costs one O(T^3) solve. On one BLAS
    thread, as the factor is: OpenBLAS's threaded A @ coef and triangular solves split their
    sums by the thread count (with its Haswell kernels s2 moved in its last bits between one
    and two threads), and s2 is a fitted attribute (``noise_var_``)."""
    with single_blas_thread():
        rss = yy - 2.0 * np.einsum("ij,ij->j", coef, B) + np.einsum("ij,ij->j", coef, A @ coef)
        df = float(np.trace(cho_solve((chol, True), A, check_finite=False)))
    # a model with as many effective parameters as rows has no residual to estimate s2 from:
    # keep one degree of freedom (s2 is then the RSS itself, an underestimate it says nothing of)
    return np.maximum(rss, 0.0) / max(float(m) - df, 1.0)


def predictive_variance(Phi: np.ndarray, chol: np.ndarray) -> np.ndarray:
    """phi(x)^T M^-1 phi(x) for each row of ``Phi`` (b, T): ||L^-1 phi||^2, one triangular
    solve of the block (O(b T^2))."""
    V = solve_triangular(chol, Phi.T, lower=True, check_finite=False)
    return np.einsum("ij,ij->j", V, V)
