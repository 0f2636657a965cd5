"""Bounds: closed formulas by hand, L2(p) norm and tau against independent Monte Carlo."""

import math

import numpy as np
import pytest

import rwtool as rw
from rwtool.bounds import (estimate_tau, gap_theorem62, gap_theorem65, l2p_norm, pruning_bound,
                           rademacher_bound)
from rwtool.features import RWExpSign, RWRelu, RWSign


def test_formulas_by_hand():
    # squared loss (f - y)^2 / 2 on |f| <= B theta = 1: rho = 2, M = 2
    v = rademacher_bound(0.1, 2.0, 0.5, 100, 0.05)
    assert v == pytest.approx(0.1 + 2 * 2 * 2 * 0.5 / 10 + 2 * math.sqrt(math.log(20) / 200))
    g = gap_theorem62(2.0, 0.5, 100, 0.05)
    assert g == pytest.approx(2 * 2 * 0.5 * 2 / 10 * (1 + math.sqrt(math.log(20) / 2)))
    g = gap_theorem65(3.0, 1.0, 400, 0.1, loss="logistic")
    assert g == pytest.approx(2 * 1 * 1 * 3 / 20 * (1 + math.sqrt(math.log(10) / 2)))
    p = pruning_bound(0.3, 0.2, 0.5, 0.4, 100, 3.0, 0.05)
    assert p == pytest.approx(0.1 + 3 * 0.4 * 0.5 / 10 * (2 + math.sqrt(2 * math.log(20))))
    with pytest.raises(ValueError, match="delta"):
        gap_theorem62(1.0, 1.0, 10, 1.5)


def _mc_l2p(W, a, sigma, kernel, draws=40000, seed=99):
    """||alpha||_{L2(p)} by plain Monte Carlo, alpha(u) = sum_s a_s K(w_s, u) written out."""
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((draws, W.shape[1])) * sigma
    K = kernel(W, U)
    vals = a @ K
    return np.sqrt(np.mean(vals ** 2)), np.std(vals ** 2) / np.sqrt(draws)


def test_l2p_norm_gaussian_kernel_matches_monte_carlo():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 3))
    fmap = RWSign(n_features=30, sigma=1.0, gamma=1.3, random_state=0).fit(X)
    a = rng.standard_normal(30)
    g2 = fmap.gamma_ ** 2
    kern = lambda W, U: np.exp(-((W[:, None, :] - U[None]) ** 2).sum(-1) / (2 * g2))  # noqa
    ref, se = _mc_l2p(fmap.W_, a, 1.0, kern)
    est = l2p_norm(fmap, a, n_draws=40000, random_state=1)
    # both are Monte Carlo estimates of the same integral: compare the squares within 5 s.e.
    assert abs(est ** 2 - ref ** 2) < 5 * math.sqrt(2) * se


def test_l2p_norm_exponential_kernel_in_normalised_basis():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((20, 2))
    fmap = RWExpSign(n_features=20, sigma=0.5, gamma=1.0, random_state=0).fit(X)
    assert fmap.normalized_
    a_norm = rng.standard_normal(20)               # coefficients on normalised features
    g2 = fmap.gamma_ ** 2
    d = np.exp(-(fmap.W_ ** 2).sum(1) / (4 * g2))
    a = a_norm * d                                 # coefficients on K(w_s, .)
    kern = lambda W, U: np.exp(W @ U.T / (2 * g2))  # noqa: E731
    ref, se = _mc_l2p(fmap.W_, a, 0.5, kern)
    est = l2p_norm(fmap, a_norm, n_draws=40000, random_state=2)
    assert abs(est ** 2 - ref ** 2) < 5 * math.sqrt(2) * se


def test_tau_sign_and_relu():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((50, 4))
    sign = RWSign(n_features=10, random_state=0).fit(X)
    assert estimate_tau(sign, X, n_draws=500) == pytest.approx(1.0)
    relu = RWRelu(n_features=10, sigma=0.7, random_state=0).fit(X)
    # E[relu(<w, x>)^2] = sigma^2 ||x||^2 / 2 for w ~ N(0, sigma^2 I)
    exact = 0.7 * np.linalg.norm(X, axis=1).max() / math.sqrt(2)
    assert estimate_tau(relu, X, n_draws=20000) == pytest.approx(exact, rel=0.05)


def test_estimator_bounds(binary_data):
    X, y = binary_data
    clf = rw.RWClassifier(n_features=80, reg=1e-4, random_state=0).fit(X, y)
    b = clf.bounds(X, y, delta=0.1, n_draws=2000)
    a = clf.coef_[:, 0]
    G = clf.feature_map_.gram()
    assert b["rkhs_norm"] == pytest.approx(math.sqrt(a @ G @ a))
    f = clf.decision_function(X)
    Y = np.where(y == clf.classes_[1], 1.0, -1.0)
    assert b["train_loss"] == pytest.approx(np.mean((f - Y) ** 2) / 2)
    assert b["train_error"] == pytest.approx(np.mean(clf.predict(X) != y))
    assert b["theta"] == clf.feature_map_.theta_ and b["kappa"] == 1.0 and b["tau"] == 1.0
    assert b["rademacher_bound"] == pytest.approx(
        rademacher_bound(b["train_loss"], b["rkhs_norm"], b["theta"], len(X), 0.1))
    assert b["gap_theorem65"] == pytest.approx(gap_theorem65(b["l2p_norm"], 1.0, len(X), 0.1))
    # ||alpha||_L2(p)^2 = E <alpha, K(w, .)>^2 <= kappa^2 ||alpha||_H^2 (Cauchy-Schwarz)
    assert b["l2p_norm"] <= b["kappa"] * b["rkhs_norm"] * 1.05
    with pytest.raises(ValueError, match="delta"):
        clf.bounds(X, y, delta=0.0)


def test_regression_bounds_use_the_largest_target(regression_data):
    """Regressors fit standardised y, whose |y| exceeds 1 (here 4.7 after one outlier): rho and M
    of 000 Theorem 10 / 003 Theorem 6.2 are theta B + max|y| and (theta B + max|y|)^2 / 2, not
    theta B + 1 (a bound that assumed |y| <= 1 is not valid). Oracle: the formulas written out
    here, and the sample itself (|l'| = |f - y| and l never exceed rho and M on it)."""
    X, y = regression_data
    y = y.copy()
    y[5] = 12.0                                        # a heavy tail, as abalone's rings
    est = rw.RWRegressor(n_features=80, reg=1e-6, random_state=0).fit(X, y)
    b = est.bounds(X, y, n_draws=300)
    Y = est.y_scaler_.transform(y[:, None])[:, 0]
    Yb = np.max(np.abs(Y))
    assert Yb > 4 and b["y_bound"] == pytest.approx(Yb)
    F = theta_B = b["theta"] * b["rkhs_norm"]
    rho, M = F + Yb, 0.5 * (F + Yb) ** 2
    assert b["rho"] == pytest.approx(rho) and b["loss_max"] == pytest.approx(M)
    f = est.feature_matrix(X) @ est.coef_[:, 0]
    assert np.max(np.abs(f - Y)) <= rho and np.max(0.5 * (f - Y) ** 2) <= M
    m, d = len(X), 0.05
    L = np.mean(0.5 * (f - Y) ** 2)
    assert b["rademacher_bound"] == pytest.approx(
        L + 2 * b["rkhs_norm"] * rho * b["theta"] / math.sqrt(m)
        + M * math.sqrt(math.log(1 / d) / (2 * m)), rel=1e-9)
    assert b["gap_theorem62"] == pytest.approx(
        2 * rho * theta_B / math.sqrt(m) * (1 + math.sqrt(math.log(1 / d) / 2)), rel=1e-9)
    # a classifier's targets are +/-1: y_bound 1, rho = theta B + 1 as in the papers
    Xc = X
    yc = (X[:, 0] > 0).astype(int)
    bc = rw.RWClassifier(n_features=40, reg=1e-6, random_state=0).fit(Xc, yc).bounds(
        Xc, yc, n_draws=200)
    assert bc["y_bound"] == 1.0 and bc["rho"] == pytest.approx(bc["theta"] * bc["rkhs_norm"] + 1)


def test_pruning_a_regressor_uses_the_largest_target(regression_data):
    X, y = regression_data
    y = y.copy()
    y[5] = 12.0
    est = rw.RWRegressor(n_features=60, reg=1e-6, random_state=0).fit(X, y)
    Y = est.y_scaler_.transform(y[:, None])
    from rwtool.solvers._prune import make_accept
    G, theta = est._prune_geometry(None)
    acc = make_accept("probabilistic", 0.1, est.coef_, G, theta, est.feature_matrix(X), Y,
                      classify=False)
    acc1 = make_accept("probabilistic", 0.1, est.coef_, G, theta, est.feature_matrix(X), Y,
                       classify=False, y_bound=1.0)
    half = est.coef_ * 0.5
    # the criterion's penalty rho theta C / sqrt(m) (...) grows with max|y| > 1
    assert acc(half)[1]["criterion"] > acc1(half)[1]["criterion"]
    with pytest.raises(ValueError, match="max\\|y\\|"):
        est.prune(accept="bound")


def test_estimator_bounds_never_hold_the_whole_feature_matrix(traced_peak):
    """The bounds of a fit on many rows read its features a block of rows at a time, as
    predict does: the app computes them after every fit of the RKHS weightings, and Phi whole
    (m x T floats: 1.2 GB at 150,000 rows and T = 1000) was the peak of a session on a
    200,000-row file (issue 24). Oracle: tracemalloc's peak against Phi's own size."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20000, 3))
    y = np.where(X[:, 0] > 0, 1, 0)
    # a block of predict holds 64 MB of features (4,096 rows at T = 2000): Phi must span
    # several blocks for the peak to tell a block from the whole
    clf = rw.RWClassifier(n_features=2000, reg=1e-4, random_state=0).fit(X, y)
    assert clf.feature_map_.predict_block_rows() * 4 < X.shape[0]
    phi_bytes = X.shape[0] * 2000 * 8                      # 320 MB
    peak = traced_peak(lambda: clf.bounds(X, y, n_draws=100))
    assert peak < phi_bytes / 3, f"peak {peak / 2**20:.0f} MB, Phi {phi_bytes / 2**20:.0f} MB"
