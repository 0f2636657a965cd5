"""fit(X, y, sample_weight=...): the weighted objective, against a dense numpy solve, repeated
rows, scikit-learn's equivalence check and metadata routing; the stochastic solvers' weighted
draws; partial_fit and Dask (BKerNN and GreedyMK: test_sample_weight_kernels.py)."""

import warnings

import numpy as np
import pytest
from sklearn.utils.estimator_checks import check_sample_weight_equivalence_on_dense_data

import rwtool as rw
from rwtool.exceptions import ConvergenceWarning, NumericalWarning
from rwtool.solvers._draws import draw_rows, visit_order


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((90, 4))
    y = X[:, 0] - np.sin(2 * X[:, 1]) + 0.1 * rng.standard_normal(90)
    w = rng.integers(0, 4, size=90)            # zeros included: rows left out
    return X, y, w


def _weighted_stats(v, w):
    mean = np.average(v, axis=0, weights=w)
    return mean, np.sqrt(np.average((v - mean) ** 2, axis=0, weights=w))


def test_lstsq_solves_the_weighted_normal_equations(data):
    # oracle: the dense weighted ridge system on the model's own features, with the
    # standardisation statistics weighted (Phi^T W Phi + sum(w) (reg G + eps I)) a = Phi^T W y
    X, y, w = data
    w = w + 0.5                                 # non-integer weights too
    est = rw.RWRegressor(n_features=60, reg=1e-3, random_state=0).fit(X, y, sample_weight=w)
    mean, std = _weighted_stats(X, w)
    np.testing.assert_allclose(est.x_scaler_.mean, mean, rtol=1e-12)
    np.testing.assert_allclose(est.x_scaler_.scale, std, rtol=1e-12)
    ym, ys = _weighted_stats(y, w)
    Phi = est.feature_matrix(X)
    W = np.diag(w)
    M = Phi.T @ W @ Phi + w.sum() * (1e-3 * est.feature_map_.gram() + est.eps * np.eye(60))
    a = np.linalg.solve(M, Phi.T @ W @ ((y - ym) / ys))
    # cond(M) is about 1e6 here: predictions agree to 1e-9 relative
    np.testing.assert_allclose(est.predict(X), Phi @ a * ys + ym, rtol=1e-9, atol=1e-9)


def test_weights_are_relative(data):
    X, y, w = data
    a = rw.RKSRegressor(n_features=50, reg=1e-3, random_state=0).fit(X, y, sample_weight=w)
    b = rw.RKSRegressor(n_features=50, reg=1e-3, random_state=0).fit(X, y, sample_weight=7 * w)
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("make", [
    lambda: rw.RWRegressor(n_features=60, reg=1e-3, random_state=0),
    lambda: rw.RWRegressor(n_features=60, random_state=0),                    # reg="auto"
    lambda: rw.RKSRegressor(n_features=60, random_state=0),                   # reg="auto"
    lambda: rw.RKSRegressor(n_features=60, solver="lasso", reg=1e-3, tol=1e-10,
                            max_iter=100000, random_state=0),
    lambda: rw.RWRegressor(n_features=60, solver="lasso", random_state=0),   # the Lasso path
], ids=["rw-lstsq", "rw-auto", "rks-auto", "rks-lasso", "rw-lasso-auto"])
def test_integer_weights_fit_the_repeated_rows(make, data):
    X, y, w = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        weighted = make().fit(X, y, sample_weight=w)
        repeated = make().fit(X.repeat(w, axis=0), y.repeat(w))
    assert weighted.reg_ == repeated.reg_        # reg="auto" chose the same value
    if getattr(weighted, "reg_search_", None) is not None:
        # the fold systems at reg = 1e-12 have condition numbers near 1e12: the sums' rounding
        # (1e-16, added in another order) reaches the scores of the smallest regs at 1e-5
        np.testing.assert_allclose(weighted.reg_search_["mean_score"],
                                   repeated.reg_search_["mean_score"], rtol=1e-4, atol=1e-12)
    # the same sums added in another order: agreement to rounding, amplified by cond(M)
    np.testing.assert_allclose(weighted.predict(X), repeated.predict(X), rtol=1e-8, atol=1e-8)


def test_classifier_auto_reg_weighs_its_validation_sample(data):
    X, y, w = data
    labels = np.where(y > 0, "a", "b")
    weighted = rw.RWClassifier(n_features=50, random_state=0).fit(X, labels, sample_weight=w)
    repeated = rw.RWClassifier(n_features=50, random_state=0).fit(X.repeat(w, axis=0),
                                                                labels.repeat(w))
    assert weighted.reg_search_["score"] == "accuracy"
    np.testing.assert_allclose(weighted.reg_search_["mean_score"],
                               repeated.reg_search_["mean_score"], rtol=1e-12)
    np.testing.assert_allclose(weighted.decision_function(X), repeated.decision_function(X),
                               rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("est", [rw.RWRegressor(n_features=40, random_state=0),
                                 rw.RWClassifier(n_features=40, random_state=0),
                                 rw.RKSClassifier(n_features=40, solver="lasso", random_state=0),
                                 rw.RWRegressor(n_features=40, solver="lasso", reg=1e-2,
                                                random_state=0)],
                         ids=["rw-reg", "rw-clf", "rks-lasso-clf", "rw-lasso"])
def test_scikit_learn_sample_weight_equivalence(est):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumericalWarning)
        check_sample_weight_equivalence_on_dense_data(type(est).__name__, est)


def test_weighted_draws_follow_the_weights():
    # Monte Carlo oracle: frequencies of 200000 draws against w / sum(w), 5 sigma
    w = np.array([0.0, 1.0, 3.0, 0.5, 2.5])
    p = w / w.sum()
    n = 200000
    for rows in (draw_rows(np.random.default_rng(0), 5, n, w),
                 visit_order(np.random.default_rng(1), n, np.tile(w, n // 5)) % 5):
        freq = np.bincount(rows, minlength=5) / len(rows)
        assert freq[0] == 0.0
        np.testing.assert_allclose(freq, p, atol=5 * np.sqrt(p * (1 - p) / len(rows)).max())
    # without weights the draws are the historical ones, bit for bit
    np.testing.assert_array_equal(draw_rows(np.random.default_rng(0), 9, 50),
                                  np.random.default_rng(0).integers(0, 9, size=50))
    np.testing.assert_array_equal(visit_order(np.random.default_rng(0), 9),
                                  np.random.default_rng(0).permutation(9))


@pytest.mark.parametrize("make", [
    lambda: rw.RWClassifier(n_features=60, solver="sfgd", reg=1e-4, random_state=0),
    lambda: rw.RWClassifier(n_features=60, solver="osd", reg=1e-4, random_state=0),
    lambda: rw.RKSClassifier(n_features=60, solver="sgd", reg=1e-4, random_state=0),
    lambda: rw.RFSGDClassifier(n_features=60, random_state=0),
], ids=["sfgd", "osd", "sgd", "rfsgd"])
def test_stochastic_solvers_fit_the_weighted_rows(make):
    # half the rows carry the opposite labels with weight 0 (absent), the other half a
    # learnable rule: the weighted fit learns the rule, the unweighted one cannot
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 2))
    truth = np.where(X[:, 0] + X[:, 1] > 0, 1, 0)
    noise = np.arange(400) % 2 == 0
    y = np.where(noise, 1 - truth, truth)
    w = np.where(noise, 0.0, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumericalWarning)
        weighted = make().fit(X, y, sample_weight=w)
    assert np.mean(weighted.predict(X) == truth) > 0.85


def test_partial_fit_with_weights_equals_fit(data):
    # the first chunk gets the weighted statistics of all the rows: then the stream is fit
    from rwtool.scale._streaming import Moments
    X, y, w = data
    est = rw.RWRegressor(n_features=50, random_state=0)
    xs, ys = Moments.of(X, w.astype(float)), Moments.of(y, w.astype(float))
    for part in np.array_split(np.arange(len(y)), 3):
        est.partial_fit(X[part], y[part], sample_weight=w[part], x_scaler=xs if part[0] == 0
                        else None, y_scaler=ys if part[0] == 0 else None)
    ref = rw.RWRegressor(n_features=50, random_state=0).fit(X, y, sample_weight=w)
    assert est.reg_ == ref.reg_
    np.testing.assert_allclose(est.predict(X), ref.predict(X), rtol=1e-8, atol=1e-8)


def test_dask_fit_with_weights_equals_fit(data):
    da = pytest.importorskip("dask.array")
    X, y, w = data
    with __import__("dask").config.set(scheduler="synchronous"):
        est = rw.RKSRegressor(n_features=50, random_state=0).fit(
            da.from_array(X, chunks=(25, 4)), da.from_array(y, chunks=25),
            sample_weight=da.from_array(w.astype(float), chunks=25))
    ref = rw.RKSRegressor(n_features=50, random_state=0).fit(X, y, sample_weight=w)
    assert est.reg_ == ref.reg_
    np.testing.assert_allclose(est.predict(X), ref.predict(X), rtol=1e-8, atol=1e-8)


def test_bad_weights_are_named(data):
    X, y, w = data
    est = rw.RWRegressor(n_features=20, reg=1e-3, random_state=0)
    with pytest.raises(ValueError, match="one weight per row"):
        est.fit(X, y, sample_weight=w[:-1])
    with pytest.raises(ValueError, match=">= 0"):
        est.fit(X, y, sample_weight=-np.ones(len(y)))
    with pytest.raises(ValueError, match="non-zero weight"):
        est.fit(X, y, sample_weight=np.zeros(len(y)))


def test_grid_search_routes_the_weights(data):
    sklearn = pytest.importorskip("sklearn")
    from sklearn.model_selection import GridSearchCV, KFold
    X, y, w = data
    with sklearn.config_context(enable_metadata_routing=True):
        est = rw.RWRegressor(n_features=40, random_state=0)
        search = GridSearchCV(est.set_fit_request(sample_weight=True).set_score_request(
            sample_weight=True), {"reg": [1e-4, 1e-2]}, cv=KFold(3))
        search.fit(X, y, sample_weight=w)
        ref = rw.RWRegressor(n_features=40, reg=search.best_params_["reg"],
                             random_state=0).fit(X, y, sample_weight=w)
        np.testing.assert_allclose(search.predict(X), ref.predict(X), rtol=1e-12)
        # the weighted fold scores are those of fits on the folds' weighted rows
        tr, va = next(KFold(3).split(X))
        fold = rw.RWRegressor(n_features=40, reg=1e-4, random_state=0).fit(
            X[tr], y[tr], sample_weight=w[tr])
        assert search.cv_results_["split0_test_score"][0] == pytest.approx(
            fold.score(X[va], y[va], w[va]), rel=1e-12)
        # not requested: scikit-learn refuses to drop the weights silently
        with pytest.raises(Exception, match="sample_weight"):
            GridSearchCV(rw.RWRegressor(n_features=40, random_state=0),
                         {"reg": [1e-4]}, cv=KFold(3)).fit(X, y, sample_weight=w)
