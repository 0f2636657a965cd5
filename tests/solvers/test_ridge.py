"""Blocked least squares against dense numpy solves of the same normal equations."""

import numpy as np
import pytest

from rwtool.exceptions import NumericalError
from rwtool.features import KitchenSign, RWRelu, RWStumps
from rwtool.exceptions import NumericalWarning
from rwtool.solvers._ridge import normal_equations, ridge_fit, solve_normal_equations


@pytest.fixture
def problem(rng):
    X = rng.standard_normal((203, 5))
    Y = np.column_stack([np.sin(X[:, 0]), X[:, 1] * X[:, 2], rng.standard_normal(203)])
    return X, Y


@pytest.mark.parametrize("block_size", [1, 7, 64, None, 10_000])
def test_blocked_normal_equations_equal_dense(problem, block_size):
    X, Y = problem
    fmap = RWRelu(n_features=40, sigma=0.8, random_state=0).fit(X)
    Phi = fmap.transform(X)
    A, B = normal_equations(fmap, X, Y, block_size=block_size)
    np.testing.assert_allclose(A, Phi.T @ Phi, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(B, Phi.T @ Y, rtol=1e-11, atol=1e-11)
    assert np.array_equal(A, A.T)


@pytest.mark.parametrize("block_size", [1, 16, 64, None])
def test_grouped_normal_equations_equal_dense_sums_of_each_group(problem, rng, block_size):
    # rows in groups (the per-fold sums of reg="auto"): blocks straddle the bounds, one group
    # is empty, the weights scale each row; oracle: the dense products of each group's rows
    X, Y = problem
    w = rng.uniform(0.5, 2.0, len(X))
    fmap = RWRelu(n_features=40, sigma=0.8, random_state=0).fit(X)
    Phi = fmap.transform(X)
    bounds = [0, 37, 37, 150, len(X)]
    out = [(np.zeros((40, 40)), np.zeros((40, 3))) for _ in range(4)]
    assert normal_equations(fmap, X, Y, block_size, out=out, weights=w, bounds=bounds) is out
    for (A, B), lo, hi in zip(out, bounds[:-1], bounds[1:]):
        P, W = Phi[lo:hi], w[lo:hi, None]
        # sums of at most 203 products of O(1) features: rounding far below 1e-11
        np.testing.assert_allclose(A, P.T @ (W * P), rtol=1e-11, atol=1e-11)
        np.testing.assert_allclose(B, P.T @ (W * Y[lo:hi]), rtol=1e-11, atol=1e-11)
        assert np.array_equal(A, A.T)
    with pytest.raises(ValueError, match="bounds must run from 0"):
        normal_equations(fmap, X, Y, out=out, bounds=[0, 10, len(X)])


@pytest.mark.parametrize("fmap", [RWRelu(n_features=60, sigma=0.8, random_state=0),
                                  RWStumps(n_features=60, random_state=0)])
def test_rw_least_squares_equals_dense_solve(problem, fmap):
    X, Y = problem
    fmap.fit(X)
    reg, eps, m = 1e-3, 1e-10, X.shape[0]
    coef, info = ridge_fit(fmap, X, Y, reg=reg, eps=eps, block_size=50)
    Phi, G = fmap.transform(X), fmap.gram()
    M = Phi.T @ Phi + m * reg * G + m * eps * np.eye(60)
    dense = np.linalg.solve(M, Phi.T @ Y)
    # Coefficients of a stumps model are ill-conditioned; the residual and the fit are not.
    assert np.linalg.norm(M @ coef - Phi.T @ Y) <= 1e-10 * np.linalg.norm(Phi.T @ Y)
    np.testing.assert_allclose(Phi @ coef, Phi @ dense, rtol=1e-7, atol=1e-9)
    assert info["jitter"] == 0.0
    # several right-hand sides share one factorisation: each column equals its own solve
    single, _ = ridge_fit(fmap, X, Y[:, 1:2], reg=reg, eps=eps)
    np.testing.assert_allclose(Phi @ single[:, 0], Phi @ coef[:, 1], rtol=1e-9, atol=1e-10)


def test_rks_ridge_equals_scikit_learn_ridge(problem):
    from sklearn.linear_model import Ridge
    X, Y = problem
    fmap = KitchenSign(n_features=50, random_state=0).fit(X)
    coef, _ = ridge_fit(fmap, X, Y, reg=1e-2)
    Psi = fmap.transform(X)
    # (Psi^T Psi + m lam I) a = Psi^T y  <=>  Ridge(alpha = m lam) without intercept
    sk = Ridge(alpha=X.shape[0] * 1e-2, fit_intercept=False, solver="cholesky").fit(Psi, Y)
    np.testing.assert_allclose(coef, sk.coef_.T, rtol=1e-8, atol=1e-12)


def test_singular_system_gets_jitter_and_warns(rng):
    """Rank 5 of 30, with a feature that is zero on every row first: Cholesky's first pivot is
    exactly 0, so it fails whatever the rounding (the 25 rounding-level pivots of a rank-5
    matrix alone may come out positive on some BLAS)."""
    T = 30
    A = rng.standard_normal((5, T))
    A[:, 0] = 0.0
    A = A.T @ A  # rank 5
    B = rng.standard_normal((T, 2))
    with pytest.warns(NumericalWarning, match="jitter"):
        coef, info = solve_normal_equations(A, B, m=10, reg=0.0, eps=0.0)
    assert info["jitter"] > 0 and np.isfinite(coef).all()


def test_overflowing_features_give_a_clear_error(rng):
    X = 1e160 * rng.standard_normal((20, 3))
    fmap = RWRelu(n_features=5, sigma=1.0, gamma=1.0, random_state=0).fit(X)
    with pytest.raises(NumericalError, match="lower sigma or standardise"):
        normal_equations(fmap, X, np.ones((20, 1)))


def test_regularised_adds_the_diagonal_whatever_the_penalty_layout():
    """A + m reg R + m eps I against the dense sum, with R in C and in Fortran order: the
    result keeps R's layout, and the diagonal added through a reshape of a Fortran-ordered
    matrix went to a copy (the eps term lost without an error)."""
    from rwtool.solvers._ridge import regularised
    rng = np.random.default_rng(0)
    A = rng.standard_normal((5, 5))
    for R in (rng.standard_normal((5, 5)), np.asfortranarray(rng.standard_normal((5, 5))),
              None):
        M = regularised(A, 7, 0.3, R, eps=0.2)
        ref = A + 7 * 0.3 * (np.eye(5) if R is None else R) + 7 * 0.2 * np.eye(5)
        np.testing.assert_allclose(M, ref, rtol=1e-15, atol=1e-15)   # a few roundings


def test_regularised_into_out_is_the_new_matrix():
    """regularised(..., out=) writes the same system into the caller's matrix (the search's
    reused buffer): bit for bit the new matrix of the same call in this process (the same
    operations in the same order), A untouched, a buffer that held another system overwritten
    whole; and solve_normal_equations with ``work`` solves as without it (oracle: numpy's
    dense solve; the system is well conditioned, cond below 1e3, so 1e-12)."""
    from rwtool.solvers._ridge import regularised, solve_normal_equations
    rng = np.random.default_rng(1)
    P = rng.standard_normal((40, 6))
    A, B = P.T @ P, rng.standard_normal((6, 2))
    G = np.cov(rng.standard_normal((6, 30))) + np.eye(6)
    for R in (G, None):
        A0 = A.copy()
        out = np.full((6, 6), 7.0)
        M = regularised(A, 5, 0.3, R, eps=0.1, out=out)
        assert M is out
        np.testing.assert_array_equal(M, regularised(A, 5, 0.3, R, eps=0.1))
        np.testing.assert_array_equal(A, A0)
        work = np.full((6, 6), np.nan)
        a, _ = solve_normal_equations(A, B, 5, 0.3, R, 0.1, factor=False, work=work)
        b, _ = solve_normal_equations(A, B, 5, 0.3, R, 0.1, factor=False)
        np.testing.assert_array_equal(a, b)
        ref = np.linalg.solve(A + 5 * 0.3 * (np.eye(6) if R is None else R)
                              + 5 * 0.1 * np.eye(6), B)
        np.testing.assert_allclose(a, ref, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(A, A0)


def test_the_system_formed_in_the_sums_memory_solves_as_a_copy_does(rng):
    """overwrite_a: the same solution bits as the system formed in a new matrix (the same
    sums, factored by the same dpotrf), A's upper triangle untouched; and against numpy's
    dense solve of A + m reg R (condition below 1e4 here: 1e-10 relative)."""
    T, m, reg = 60, 200, 1e-3
    Phi = rng.standard_normal((m, T))
    A = Phi.T @ Phi
    R = RWRelu(n_features=T, random_state=0).fit(rng.standard_normal((5, 3))).gram()
    B = Phi.T @ rng.standard_normal((m, 2))
    copy, _ = solve_normal_equations(A, B, m, reg, R, factor=False)
    work = A.copy()
    inplace, info = solve_normal_equations(work, B, m, reg, R, factor=False, overwrite_a=True)
    np.testing.assert_array_equal(inplace, copy)
    assert info["chol"] is None
    upper = np.triu_indices(T, 1)
    np.testing.assert_array_equal(work[upper], A[upper])
    oracle = np.linalg.solve(A + m * reg * R, B)
    np.testing.assert_allclose(inplace, oracle, rtol=1e-10, atol=1e-10 * np.abs(oracle).max())


def test_a_failed_factorisation_in_the_sums_memory_restores_them(rng):
    """An indefinite system (negative directions, reg 0): the in-place attempt fails, A is
    restored from its upper triangle and the jitter path then solves what it solves from a
    copy, bit for bit, with its warning."""
    T = 30
    Q, _ = np.linalg.qr(rng.standard_normal((T, T)))
    A = (Q * np.r_[np.linspace(1.0, 2.0, T - 2), -1e-9, -2e-9]) @ Q.T
    A = (A + A.T) / 2
    B = rng.standard_normal((T, 1))
    with pytest.warns(NumericalWarning):
        copy, info_copy = solve_normal_equations(A, B, 10, 0.0, factor=False)
    work = A.copy()
    with pytest.warns(NumericalWarning):
        inplace, info = solve_normal_equations(work, B, 10, 0.0, factor=False, overwrite_a=True)
    np.testing.assert_array_equal(work, A)
    np.testing.assert_array_equal(inplace, copy)
    assert info["jitter"] == info_copy["jitter"] > 0


def test_ridge_fit_without_the_sums_solves_the_same_system(problem):
    """keep_sums=False forms A + m reg G from panels of G's rows (GramRows), whose products
    round apart from gram()'s one symmetric product (entries within 1e-12: G <= 1, its
    exponent's cancellation a few eps of ||w||^2 / (2 g^2) here); the solution within 1e-9
    of its size (the system's condition below 1e3 at reg = 1e-3)."""
    X, Y = problem
    fmap = RWRelu(n_features=150, random_state=0).fit(X)
    G = fmap.gram()
    for b in range(0, 150, 64):
        e = min(150, b + 64)
        np.testing.assert_allclose(fmap.gram_rows(b, e), G[b:e, :e], rtol=0, atol=1e-12)
    kept, info = ridge_fit(fmap, X, Y, reg=1e-3)
    dropped, info2 = ridge_fit(fmap, X, Y, reg=1e-3, keep_sums=False)
    np.testing.assert_allclose(dropped, kept, rtol=0, atol=1e-9 * np.abs(kept).max())
    assert info["A"] is not None and info["gram"] is not None
    assert info2["A"] is None and info2["chol"] is None and info2["gram"] is None
    oracle = np.linalg.solve(info["A"] + len(X) * 1e-3 * G, info["B"])
    np.testing.assert_allclose(dropped, oracle, rtol=0, atol=1e-9 * np.abs(oracle).max())


def test_the_jitter_path_of_gram_panels_uses_the_whole_gram(rng):
    """A failed in-place attempt with G in panels: A restored, then the jitter path on the
    whole G (GramRows.full), bit for bit what the same path gives from gram() itself."""
    from rwtool.solvers._ridge import GramRows
    T = 40
    fmap = RWRelu(n_features=T, random_state=0).fit(rng.standard_normal((5, 3)))
    Q, _ = np.linalg.qr(rng.standard_normal((T, T)))
    A = (Q * np.r_[np.linspace(1.0, 2.0, T - 1), -1e-6]) @ Q.T
    A = (A + A.T) / 2
    B = rng.standard_normal((T, 1))
    with pytest.warns(NumericalWarning):
        whole, info_whole = solve_normal_equations(A, B, 10, 1e-12, fmap.gram(), factor=False)
    work = A.copy()
    with pytest.warns(NumericalWarning):
        panels, info = solve_normal_equations(work, B, 10, 1e-12, GramRows(fmap),
                                              factor=False, overwrite_a=True)
    np.testing.assert_array_equal(work, A)
    np.testing.assert_array_equal(panels, whole)
    assert info["jitter"] == info_whole["jitter"] > 0
