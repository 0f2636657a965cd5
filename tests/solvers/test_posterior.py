"""solvers._posterior.noise_variance against dense numpy: s2 = RSS / (m - tr(M^-1 A))."""

from __future__ import annotations

import numpy as np
import pytest

from rwtool.solvers._posterior import inverse_from_factor, noise_variance


@pytest.mark.parametrize("T, lam", [(1, 0.3), (7, 1e-3), (120, 1e-6), (300, 10.0)])
def test_noise_variance_is_the_dense_formula(T, lam):
    """Oracle: numpy's inverse of M and the residuals of the rows themselves. The factor's
    upper triangle holds garbage (a system factored in the sums' memory keeps A there) and is
    not read; M^-1 from the factor is symmetric's lower triangle, its strict upper one zero."""
    rng = np.random.default_rng(T)
    m = 400
    Phi = rng.normal(size=(m, T)) * rng.uniform(0.1, 3.0, size=T)
    Y = Phi[:, :1] @ rng.normal(size=(1, 2)) + rng.normal(size=(m, 2))
    A, B = Phi.T @ Phi, Phi.T @ Y
    M = A + m * lam * np.eye(T)
    coef = np.linalg.solve(M, B)
    chol = np.linalg.cholesky(M)
    chol[np.triu_indices(T, 1)] = rng.normal(size=T * (T - 1) // 2)
    s2 = noise_variance(A, B, (Y ** 2).sum(axis=0), m, coef, chol)
    df = np.trace(np.linalg.solve(M, A))
    rss = ((Y - Phi @ coef) ** 2).sum(axis=0)
    np.testing.assert_allclose(s2, rss / max(m - df, 1.0), rtol=1e-9)
    inv = inverse_from_factor(chol)
    np.testing.assert_allclose(np.tril(inv), np.tril(np.linalg.inv(M)), rtol=1e-9,
                               atol=1e-12 * np.abs(np.linalg.inv(M)).max())
    assert not np.triu(inv, 1).any()
