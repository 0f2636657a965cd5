"""Taylor / linear explicit features of the greedy dictionary (seed 004), against closed forms."""

import math

import numpy as np
import pytest

from rwtool.features._taylor import TaylorMultiKernelFeatures, knn_sigma, taylor_gaussian_kernel


def _data(rng, n=40, d=4, scale=0.7):
    return rng.standard_normal((n, d)) * scale


@pytest.mark.parametrize("order", [0, 1, 2, 3])
def test_taylor_features_reproduce_truncated_kernel(rng, order):
    X, Y = _data(rng), _data(rng, n=25)
    sigma = 1.3
    fm = TaylorMultiKernelFeatures(sigma=sigma, gauss_order=order, include_linear=False).fit(X)
    K = fm.transform(X) @ fm.transform(Y).T
    # independent oracle: e(x) e(y) sum_k s^k / k! written out directly
    s = X @ Y.T / sigma**2
    ex = np.exp(-(X**2).sum(1) / (2 * sigma**2))
    ey = np.exp(-(Y**2).sum(1) / (2 * sigma**2))
    ref = ex[:, None] * ey[None, :] * sum(s**k / math.factorial(k) for k in range(order + 1))
    np.testing.assert_allclose(K, ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(taylor_gaussian_kernel(X, Y, sigma, order), ref, rtol=1e-12)


def test_truncated_kernel_increases_to_gaussian(rng):
    X = np.abs(_data(rng, n=10, d=3))  # <x, x'> >= 0 makes every Taylor term non-negative
    sigma = 0.9
    exact = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / (2 * sigma**2))
    gaps = []
    for order in range(6):
        fm = TaylorMultiKernelFeatures(sigma=sigma, gauss_order=order, include_linear=False)
        Phi = fm.fit_transform(X)
        gaps.append(np.abs(exact - Phi @ Phi.T).max())
        assert np.all(Phi @ Phi.T <= exact + 1e-12)
    assert all(b < a for a, b in zip(gaps, gaps[1:]))


@pytest.mark.parametrize("d, order, squares, linear, expected", [
    (122, 1, True, True, 245), (178, 1, True, True, 357),
    (90, 2, True, False, 4186), (58, 2, True, False, 1770),
    (58, 1, True, True, 117), (5, 2, False, True, 1 + 5 + 10 + 5),
])
def test_candidate_counts(d, order, squares, linear, expected):
    fm = TaylorMultiKernelFeatures(gauss_order=order, include_squares=squares,
                                   include_linear=linear).fit(np.zeros((2, d)))
    assert fm.n_output_ == expected


def test_linear_block_and_nu_scaling(rng):
    X = _data(rng)
    fm = TaylorMultiKernelFeatures(sigma=1.0, gauss_order=1, nu=(0.3, 0.7)).fit(X)
    Phi = fm.transform(X)
    d = X.shape[1]
    np.testing.assert_allclose(Phi[:, -d:], math.sqrt(0.7) * X, rtol=1e-15)
    e = np.exp(-(X**2).sum(1) / 2)
    np.testing.assert_allclose(Phi[:, 0], math.sqrt(0.3) * e, rtol=1e-15)
    np.testing.assert_allclose(Phi[:, 1:1 + d], math.sqrt(0.3) * e[:, None] * X, rtol=1e-14)
    # multi-kernel identity: Psi Psi^T = nu_G K_G^(1) + nu_L X X^T
    ref = 0.3 * taylor_gaussian_kernel(X, X, 1.0, 1) + 0.7 * X @ X.T
    np.testing.assert_allclose(Phi @ Phi.T, ref, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("order, squares", [(0, True), (1, True), (2, True), (2, False),
                                            (3, True)])
def test_lazy_columns_and_gram_trick_gradient(rng, order, squares):
    X = _data(rng, n=60, d=5)
    fm = TaylorMultiKernelFeatures(sigma=1.1, gauss_order=order, include_squares=squares).fit(X)
    Psi = fm.transform(X)
    R = rng.standard_normal((60, 2))
    np.testing.assert_allclose(fm.correlate(X, R), Psi.T @ R, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fm.correlate(X, R[:, 0]), Psi.T @ R[:, 0], rtol=1e-12,
                               atol=1e-12)
    cols = np.array([fm.n_output_ - 1, 0, fm.n_output_ // 2])
    np.testing.assert_array_equal(fm.columns(X, cols), Psi[:, cols])
    np.testing.assert_allclose(fm.column_sq_norms(X), (Psi**2).sum(0), rtol=1e-12)


def test_column_names_and_validation(rng):
    X = _data(rng, d=3)
    fm = TaylorMultiKernelFeatures(gauss_order=2).fit(X)
    names = [fm.describe(j) for j in range(fm.n_output_)]
    assert names[:5] == ["gauss:1", "gauss:x0", "gauss:x1", "gauss:x2", "gauss:x0*x0"]
    assert names[-1] == "linear:x2"
    with pytest.raises(ValueError, match="nu must hold 2"):
        TaylorMultiKernelFeatures(nu=(1.0,)).fit(X)
    with pytest.raises(ValueError, match="column indices"):
        fm.columns(X, [fm.n_output_])


def test_knn_sigma_on_grid_against_brute_force():
    h = 0.25
    x = np.arange(200, dtype=float) * h
    X = x[:, None]
    D = np.abs(x[:, None] - x[None, :])
    D[np.arange(200), np.arange(200)] = np.inf
    brute = np.sort(D, axis=1)[:, 49].mean()
    assert knn_sigma(X, k=50) == pytest.approx(brute, rel=1e-12)
    # interior points: neighbours alternate sides, so the 50th is 25 h away
    interior = np.sort(D, axis=1)[25:175, 49]
    np.testing.assert_allclose(interior, 25 * h)
    sub = knn_sigma(X, k=50, n_queries=50, random_state=0)
    assert 25 * h <= sub <= 50 * h


def test_knn_sigma_holds_a_bounded_block_of_distances(traced_peak):
    """The distances of a block of queries to every row are held at once: 512 queries of
    150,000 rows took 614 MB per temporary, 2.9 GB at the peak of a GreedyMK fit in the app
    (issue 24). Oracle: tracemalloc's peak against one such block, and the same sigma from
    blocks of any size (each query's k-th distance is its own row's)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((100_000, 2))
    old_block = 200 * X.shape[0] * 8                         # the 200 queries in one block
    peak = traced_peak(lambda: knn_sigma(X, k=50, n_queries=200, random_state=0))
    assert peak < old_block / 2, f"peak {peak / 2**20:.0f} MB"
    a = knn_sigma(X[:3000], k=50, n_queries=500, random_state=1)
    b = knn_sigma(X[:3000], k=50, n_queries=500, random_state=1, block_size=7)
    assert a == pytest.approx(b, rel=1e-12)
