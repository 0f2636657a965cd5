"""MFGA / OMP, the shared GLM learner, LKRF and EERF (seed 004), against independent oracles."""

import numpy as np
import pytest
from scipy.optimize import minimize

from rwtool.estimators._greedy_mk import GreedyMKClassifier, GreedyMKRegressor
from rwtool.features._taylor import TaylorMultiKernelFeatures
from rwtool.progress import FitCancelled, Progress
from rwtool.solvers._greedy import (DenseDictionary, DictionaryView, eerf_scores, glm_fit,
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


@pytest.mark.slow
@pytest.mark.parametrize("Est", [GreedyMKClassifier, GreedyMKRegressor])
def test_sklearn_estimator_checks(Est):
    from sklearn.utils.estimator_checks import check_estimator
    # the regressor's reg="auto" splits rows, not copies, into its folds: weights equal the
    # repeated rows for a fixed reg (tests/estimators/test_sample_weight_kernels.py)
    expected = ({"check_sample_weight_equivalence_on_dense_data": "reg='auto' folds split rows, "
                 "so a row's copies are never split apart"}
                if Est is GreedyMKRegressor else None)
    check_estimator(Est(n_features=10, sigma=1.0, include_linear=True, fit_intercept=True,
                        random_state=0), expected_failed_checks=expected)


# -- defaults (issue 12): dictionary size, small and constant inputs, loud failures -------------

def test_default_beats_nystroem_logistic_regression():
    # The paper's 2d + 1 classification candidates made the default nearly logistic
    # regression (0.715 accuracy here, Nystroem + LogisticRegression 0.82).
    from sklearn.datasets import make_classification
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    X, y = make_classification(3000, 20, n_informative=10, random_state=0)
    Xtr, Xte, ytr, yte = X[:2000], X[2000:], y[:2000], y[2000:]
    nys = max(make_pipeline(StandardScaler(), Nystroem(n_components=100, random_state=s),
                            LogisticRegression(max_iter=1000)).fit(Xtr, ytr).score(Xte, yte)
              for s in range(3))
    clf = GreedyMKClassifier(random_state=0).fit(Xtr, ytr)
    assert clf.score(Xte, yte) > nys
    assert clf.solver_info_["gauss_order"] == 2 and clf.solver_info_["n_candidates"] == 251


def test_auto_order_and_dictionary_size():
    from rwtool.features._taylor import auto_gauss_order, dictionary_size
    X = np.random.default_rng(0).standard_normal((5, 4))
    for order in range(4):
        for sq in (True, False):
            for lin in (True, False):
                fm = TaylorMultiKernelFeatures(gauss_order=order, include_squares=sq,
                                               include_linear=lin).fit(X)
                assert dictionary_size(4, order, sq, lin) == fm.n_output_
    assert auto_gauss_order(20, 100, 1) == 2           # 41 < 200 <= 251
    assert auto_gauss_order(784, 100, 1) == 1          # the paper's dictionary is big enough
    assert auto_gauss_order(3, 100, 1) == 8            # capped
    assert auto_gauss_order(10, 100, 2, include_linear=False) == 3


def test_small_training_set_caps_knn_k(rng):
    # knn_k = 50 made every training set of <= 50 rows fail.
    X = rng.standard_normal((40, 4))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    clf = GreedyMKClassifier(n_features=10, random_state=0).fit(X, y)
    assert clf.solver_info_["knn_k"] == 39
    Z = (X - X.mean(0)) / X.std(0)
    D = np.sqrt(((Z[:, None] - Z[None]) ** 2).sum(-1))
    assert clf.solver_info_["knn_sigma"] == pytest.approx(D.max(1).mean(), rel=1e-9)
    assert clf.score(X, y) > 0.8


def test_sigma_auto_is_the_larger_rule(rng):
    # Dense low-dimensional data: the 50-NN distance is tiny, the "scale" rule is not.
    X = rng.standard_normal((3000, 2))
    y = (X[:, 0] ** 2 + X[:, 1] ** 2 < 1.0).astype(int)
    auto = GreedyMKClassifier(n_features=30, random_state=0).fit(X, y)
    info = auto.solver_info_
    assert info["knn_sigma"] < 0.5 and info["scale_sigma"] == pytest.approx(1.0)
    assert auto.sigma_ == max(info["knn_sigma"], info["scale_sigma"])
    knn = GreedyMKClassifier(n_features=30, sigma="knn", random_state=0).fit(X, y)
    assert knn.sigma_ == pytest.approx(info["knn_sigma"])
    assert auto.score(X, y) > knn.score(X, y) + 0.1


def test_constant_inputs_give_a_clear_error():
    X = np.ones((100, 3))
    y = np.arange(100) % 2
    for est in (GreedyMKClassifier(), GreedyMKRegressor(), GreedyMKClassifier(sigma=1.0)):
        with pytest.raises(ValueError, match="constant") as info:
            est.fit(X, y)
        assert "sigma" not in str(info.value)


def test_warning_when_n_features_exceeds_the_candidates(rng):
    X = rng.standard_normal((200, 3))
    y = (X[:, 0] > 0).astype(int)
    with pytest.warns(UserWarning, match="exceeds the 7 candidates"):
        clf = GreedyMKClassifier(n_features=20, gauss_order=1, random_state=0).fit(X, y)
    assert len(clf.support_) == 7


def test_overflow_raises_numerical_error_and_leaves_unfitted(rng):
    from rwtool import NumericalError
    from sklearn.exceptions import NotFittedError
    X = rng.standard_normal((200, 3)) * 1e200
    y = X[:, 0] * 1e-200
    est = GreedyMKRegressor(n_features=5, gauss_order=2, sigma=1.0, standardize=False)
    with pytest.raises(NumericalError) as info:
        est.fit(X, y)
    assert info.value.solver == "mfga" and "standardi" in info.value.fix
    with pytest.raises(NotFittedError):
        est.predict(X)


@pytest.mark.slow
@pytest.mark.parametrize("kw", [dict(), dict(gauss_order=3), dict(selector="eerf"),
                                dict(loss="squared"), dict(loss="squared", reg=1e-4)])
def test_estimate_fit_brackets_the_measured_peak(rng, kw, traced_peak):
    from rwtool.resources import estimate_fit
    X = rng.standard_normal((2000, 12))
    Est = GreedyMKRegressor if kw.pop("loss", None) else GreedyMKClassifier
    y = X[:, 0] - X[:, 1] ** 2 if Est is GreedyMKRegressor else (X[:, 0] > 0).astype(int)
    est = Est(n_features=40, random_state=0, **kw)
    cost = estimate_fit(est, 2000, 12, 1)
    est.fit(X[:300], y[:300])                 # numba loads its kernels outside the trace
    peak = traced_peak(lambda: est.fit(X, y))
    assert 0.5 * peak <= cost.peak_bytes <= 3.0 * peak, (cost.peak_bytes, peak)
    assert cost.seconds > 0
