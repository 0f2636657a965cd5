"""MFGA / OMP, the shared GLM learner, LKRF and EERF (seed 004), against independent oracles."""

import numpy as np
import pytest
from scipy.optimize import minimize

from rwtool.estimators.greedy_mk import GreedyMKClassifier, GreedyMKRegressor
from rwtool.features.taylor import TaylorMultiKernelFeatures
from rwtool.progress import FitCancelled, Progress
from rwtool.solvers.greedy import (DenseDictionary, DictionaryView, eerf_scores, glm_fit,
                                   lkrf_select, lkrf_weights, loss_derivative, mfga,
                                   project_simplex)


def _problem(rng, N=200, M0=30, loss="logistic"):
    Psi = rng.standard_normal((N, M0))
    f = Psi[:, 3] - 0.7 * Psi[:, 11] + 0.4 * Psi[:, 5]
    if loss == "logistic":
        y = np.where(f + 0.5 * rng.standard_normal(N) > 0, 1.0, -1.0)
    else:
        y = f + 0.1 * rng.standard_normal(N)
    return Psi, y[:, None]


@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_first_pick_is_largest_label_correlation(rng, loss):
    Psi, Y = _problem(rng, loss=loss)
    support, *_ = mfga(DenseDictionary(Psi), Y, loss, 1e-3, 1)
    assert support[0] == np.argmax(np.abs(Psi.T @ Y[:, 0]))


def test_omp_equals_scikit_learn(rng):
    from sklearn.linear_model import OrthogonalMatchingPursuit
    Psi, Y = _problem(rng, N=120, M0=40, loss="squared")
    Psi /= np.linalg.norm(Psi, axis=0)
    support, coef, intercept, _ = mfga(DenseDictionary(Psi), Y, "squared", 0.0, 8)
    omp = OrthogonalMatchingPursuit(n_nonzero_coefs=8, fit_intercept=False).fit(Psi, Y[:, 0])
    dense = np.zeros(40)
    dense[support] = coef[:, 0]
    assert set(support) == set(np.flatnonzero(omp.coef_))
    np.testing.assert_allclose(dense, omp.coef_, rtol=1e-9, atol=1e-12)
    assert np.all(intercept == 0)


@pytest.mark.parametrize("loss, fit_intercept", [("logistic", False), ("logistic", True),
                                                 ("squared", False), ("squared", True)])
def test_path_monotone_and_kkt(rng, loss, fit_intercept):
    Psi, Y = _problem(rng, loss=loss)
    lam = 1e-2
    support, coef, b, path = mfga(DenseDictionary(Psi), Y, loss, lam, 12,
                                  fit_intercept=fit_intercept)
    assert len(set(support)) == 12
    assert np.all(np.diff(path["objective"]) <= 1e-12)
    F = Psi[:, support] @ coef + b
    g = Psi.T @ loss_derivative(F, Y, loss) / len(Y)
    # stationarity of the regularised refit on the active set (so no active column is re-picked)
    np.testing.assert_allclose(g[support] + lam * coef, 0.0, atol=1e-9)
    if fit_intercept:
        assert abs(loss_derivative(F, Y, loss).mean()) < 1e-9


def test_batch_selection_of_everything_equals_full_fit(rng):
    Psi, Y = _problem(rng, M0=15)
    support, coef, _, _ = mfga(DenseDictionary(Psi), Y, "logistic", 1e-2, 15, per_step=15)
    full, _, _ = glm_fit(Psi, Y, "logistic", 1e-2)
    np.testing.assert_allclose(coef[np.argsort(support)], full, rtol=1e-8, atol=1e-10)


def test_glm_fit_against_independent_solvers(rng):
    from sklearn.linear_model import LogisticRegression
    Psi, Y = _problem(rng, N=300, M0=12)
    N, lam = 300, 1e-2
    # squared: the normal equations solved densely
    Ys = Psi @ rng.standard_normal(12)[:, None] + 0.3
    coef, b, _ = glm_fit(Psi, Ys, "squared", lam, fit_intercept=True)
    Z = np.hstack([Psi, np.ones((N, 1))])
    P = np.diag(np.r_[np.full(12, N * lam), 0.0])
    ref = np.linalg.solve(Z.T @ Z + P, Z.T @ Ys)
    np.testing.assert_allclose(np.r_[coef[:, 0], b], ref[:, 0], rtol=1e-10)
    # logistic: scikit-learn minimises C sum loss + ||w||^2 / 2, i.e. C = 1 / (N lam)
    coef, b, info = glm_fit(Psi, Y, "logistic", lam, fit_intercept=True)
    sk = LogisticRegression(C=1 / (N * lam), tol=1e-12, max_iter=10_000).fit(Psi, Y[:, 0])
    assert info["converged"]
    np.testing.assert_allclose(coef[:, 0], sk.coef_[0], rtol=1e-5, atol=1e-7)
    assert b[0] == pytest.approx(sk.intercept_[0], rel=1e-5, abs=1e-7)


def test_taylor_dictionary_view_matches_dense(rng):
    X = rng.standard_normal((150, 4))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1.0, -1.0)[:, None]
    fm = TaylorMultiKernelFeatures(sigma=1.5, gauss_order=2).fit(X)
    lazy = mfga(DictionaryView(fm, X), y, "logistic", 1e-3, 6)
    dense = mfga(DenseDictionary(fm.transform(X)), y, "logistic", 1e-3, 6)
    np.testing.assert_array_equal(lazy[0], dense[0])
    np.testing.assert_allclose(lazy[1], dense[1], rtol=1e-9)


def test_cross_feature_found_early():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((1500, 5))
    y = np.sign(X[:, 0] * X[:, 1] + 0.3 * X[:, 2])
    clf = GreedyMKClassifier(n_features=6, gauss_order=2, reg=1e-4, random_state=0).fit(X, y)
    assert "gauss:x0*x1" in clf.selected_features()[:3]
    assert clf.path_["n_features"] == list(range(1, 7))


# ----------------------------------------------------------------------------- LKRF / EERF

def test_project_simplex_against_slsqp(rng):
    v = rng.standard_normal(12)
    p = project_simplex(v)
    res = minimize(lambda q: np.sum((q - v) ** 2), np.full(12, 1 / 12), method="SLSQP",
                   bounds=[(0, None)] * 12,
                   constraints=[{"type": "eq", "fun": lambda q: q.sum() - 1}],
                   options={"ftol": 1e-14, "maxiter": 500})
    np.testing.assert_allclose(p, res.x, atol=1e-6)
    assert p.min() >= 0 and p.sum() == pytest.approx(1.0)


def test_lkrf_weights_kkt_and_oracle(rng):
    M0 = 40
    v = rng.exponential(size=M0)
    rho = 0.5
    q, lam = lkrf_weights(v, rho)
    u = 1.0 / M0
    assert q.min() >= 0 and q.sum() == pytest.approx(1.0, abs=1e-12)
    assert M0 * np.sum((q - u) ** 2) == pytest.approx(rho, rel=1e-8)   # binding constraint
    # KKT: v_m - lam (q_m - u) = tau on the support, <= tau off it
    pos = q > 0
    tau = v[pos] - lam * (q[pos] - u)
    np.testing.assert_allclose(tau, tau.mean(), atol=1e-8 * v.max())
    assert np.all(v[~pos] + lam * u <= tau.mean() + 1e-8 * v.max())
    # monotone in v
    order = np.argsort(v)
    assert np.all(np.diff(q[order]) >= -1e-12)
    # independent solver on the same concave program
    res = minimize(lambda x: -(x @ v), np.full(M0, u), method="SLSQP", bounds=[(0, 1)] * M0,
                   constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1},
                                {"type": "ineq", "fun": lambda x: rho - M0 * np.sum((x - u) ** 2)}],
                   options={"ftol": 1e-14, "maxiter": 1000})
    assert q @ v == pytest.approx(-res.fun, rel=1e-6)


def test_lkrf_extreme_radii(rng):
    v = rng.exponential(size=20)
    q0, _ = lkrf_weights(v, 0.0)
    np.testing.assert_allclose(q0, 1 / 20)
    qbig, lam = lkrf_weights(v, 100.0)
    assert lam == 0.0 and qbig[np.argmax(v)] == 1.0
    idx, scale = lkrf_select(qbig, 3, "top")
    assert idx[0] == np.argmax(v) and np.all(scale == 1)
    q, _ = lkrf_weights(v, 1.0)
    idx, scale = lkrf_select(q, 5, "weighted")
    assert np.sum(scale**2) == pytest.approx(5.0)
    idx, _ = lkrf_select(q, 50, "sample", np.random.default_rng(0))
    assert set(idx) <= set(np.flatnonzero(q))


def test_lkrf_and_eerf_rank_the_same_draws_alike(rng):
    X = rng.standard_normal((400, 3))
    y = np.where(X[:, 0] ** 2 + X[:, 1] > 1, 1, 0)
    kw = dict(n_features=15, n_candidates=300, sigma=1.0, random_state=5)
    lk = GreedyMKClassifier(selector="lkrf", **kw).fit(X, y)
    ee = GreedyMKClassifier(selector="eerf", **kw).fit(X, y)
    assert set(lk.support_) == set(ee.support_)
    assert lk.solver_info_["lkrf_support"] >= 15
    align = rng.standard_normal((10, 1))
    np.testing.assert_allclose(eerf_scores(align, 4), np.abs(align[:, 0]) / 4)


# ----------------------------------------------------------------------------- estimators

def test_estimators_selectors_and_regressor(rng):
    X = rng.standard_normal((600, 4))
    y = X[:, 0] * X[:, 1] + 0.5 * X[:, 2] + 10.0
    reg = GreedyMKRegressor(n_features=12, reg=1e-6, sigma=3.0).fit(X[:400], y[:400])
    assert reg.score(X[400:], y[400:]) > 0.9
    np.testing.assert_allclose(reg.y_scaler_.transform(np.array([[y[:400].min()],
                                                                 [y[:400].max()]])).ravel(),
                               [-1, 1])
    for sel in ("rks", "lkrf", "eerf"):
        m = GreedyMKRegressor(selector=sel, n_features=40, n_candidates=200, reg=1e-6,
                              random_state=0).fit(X[:400], y[:400])
        assert m.coef_.shape == (40, 1) and m.score(X[400:], y[400:]) > 0.5
    yc = np.digitize(X[:, 0] + X[:, 1] * X[:, 2], [-0.5, 0.5])
    clf = GreedyMKClassifier(n_features=10, gauss_order=2, random_state=0).fit(X, yc)
    assert clf.coef_.shape == (10, 3) and clf.score(X, yc) > 0.6
    np.testing.assert_allclose(clf.predict_proba(X).sum(1), 1.0)


def test_cancel_keeps_last_refit(rng):
    X = rng.standard_normal((300, 3))
    y = (X[:, 0] > 0).astype(int)
    clf = GreedyMKClassifier(n_features=5, sigma=1.0)
    with pytest.raises(FitCancelled) as info:
        clf.fit(X, y, callback=Progress(lambda ev: ev.kind == "update" and ev.done >= 2,
                                        min_interval=0.0), eval_set=(X, y))
    assert info.value.partial_model and len(clf.support_) == 2
    assert clf.solver_info_["cancelled"] and "val_error" in clf.path_
    assert clf.predict(X).shape == (300,)


@pytest.mark.parametrize("Est", [GreedyMKClassifier, GreedyMKRegressor])
def test_sklearn_estimator_checks(Est):
    from sklearn.utils.estimator_checks import check_estimator
    check_estimator(Est(n_features=10, sigma=1.0, include_linear=True, fit_intercept=True,
                        random_state=0))
