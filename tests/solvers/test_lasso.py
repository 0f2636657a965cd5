"""Lasso by coordinate descent against scikit-learn's Lasso (same objective, tight tolerance)."""

import warnings

import numpy as np
import pytest
from sklearn.linear_model import Lasso

import rwtool as rw
from rwtool.progress import FitCancelled, Progress
from rwtool.solvers._lasso import duality_gap, lam_max, lasso_gram, lasso_objective, lasso_path
from rwtool.exceptions import NumericalWarning


def _problem(m=200, T=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, T))
    X[:, 7] = X[:, 3] * 2.0           # collinear pair
    X[:, 11] = 0.0                    # empty column
    beta = np.zeros(T)
    beta[:6] = rng.standard_normal(6) * 2
    y = X @ beta + 0.3 * rng.standard_normal(m)
    return X, y


def _sk(X, y, lam):
    return Lasso(alpha=lam, fit_intercept=False, tol=1e-13, max_iter=200000).fit(X, y).coef_


@pytest.mark.parametrize("lam", [0.3, 0.03, 0.003])
def test_design_and_gram_modes_match_sklearn(lam):
    X, y = _problem()
    ref = _sk(X, y, lam)
    m = len(y)
    a, info = lasso_path(X, y, lam, tol=1e-12, max_iter=100000, precompute=False)
    assert info["converged"] == [True]
    g, ginfo = lasso_gram(X.T @ X / m, X.T @ y / m, y @ y / m, lam, tol=1e-12, max_iter=100000)
    p, _ = lasso_path(X, y, lam, path_length=6, tol=1e-12, max_iter=100000, precompute=False)
    c, cinfo = lasso_path(X, y, lam, tol=1e-12, max_iter=100000, precompute=True)
    assert cinfo["precompute"] and cinfo["converged"] == [True]
    for sol in (a, g, p, c):
        # same objective value; the collinear pair makes the minimiser not unique, so compare J1
        assert lasso_objective(X, y, sol, lam) == pytest.approx(lasso_objective(X, y, ref, lam),
                                                              rel=1e-9, abs=1e-12)
        assert duality_gap(X, y, sol, lam) <= 1e-9 * (y @ y) / m
    keep = np.ones(X.shape[1], bool)
    keep[7] = False
    np.testing.assert_allclose(a[keep], ref[keep], atol=1e-6)
    assert np.count_nonzero(a[[3, 7]]) >= 1 and a[11] == 0.0


def test_multi_output_and_lam_max():
    X, y = _problem(seed=1)
    Y = np.column_stack([y, -0.5 * y + X[:, 20]])
    top = lam_max(X, Y)
    a, _ = lasso_path(X, Y, top * 1.0001, tol=1e-10)
    assert np.all(a == 0)
    for pre in (False, True):
        a, info = lasso_path(X, Y, 0.02, tol=1e-12, max_iter=100000, precompute=pre)
        assert a.shape == (X.shape[1], 2)
        for j in range(2):
            ref = _sk(X, Y[:, j], 0.02)
            assert lasso_objective(X, Y[:, j], a[:, j], 0.02) == pytest.approx(
                lasso_objective(X, Y[:, j], ref, 0.02), rel=1e-9)


def test_warm_start_and_explicit_path():
    X, y = _problem(seed=2)
    a1, info1 = lasso_path(X, y, 0.01, tol=1e-12, max_iter=100000)
    a2, info2 = lasso_path(X, y, 0.01, coef_init=a1, tol=1e-12, max_iter=100000)
    assert info2["sweeps"][0] <= 2
    np.testing.assert_allclose(a1, a2, atol=1e-10)
    a3, info3 = lasso_path(X, y, None, lams=[0.5, 0.1, 0.01], tol=1e-12, max_iter=100000)
    assert info3["lams"] == [0.5, 0.1, 0.01]
    assert lasso_objective(X, y, a3, 0.01) == pytest.approx(lasso_objective(X, y, a1, 0.01),
                                                            rel=1e-9)


def test_iteration_cap_reports_and_warns():
    # lam = 0.1 (7 of 60 coefficients left): two sweeps leave a gap of 0.18 against the
    # tolerance's 3e-13. At lam = 1e-4 the solution is near least squares and two sweeps from
    # it reach the rounding floor (4e-14) on some CPUs' BLAS kernels: converged there.
    X, y = _problem(seed=3)
    for pre in (False, True):
        with pytest.warns(NumericalWarning, match="did not converge"):
            _, info = lasso_path(X, y, 0.1, tol=1e-14, max_iter=2, precompute=pre)
        assert info["converged"] == [False] and info["sweeps"][0] <= 2


def test_bad_lam():
    X, y = _problem()
    with pytest.raises(ValueError, match="lam > 0"):
        lasso_path(X, y, 0.0)


@pytest.mark.parametrize("cls,kw", [(rw.RWRegressor, {"instantiation": "rwstumps"}),
                                    (rw.RKSRegressor, {"base": "relu"})])
def test_estimator_lasso_is_sklearn_on_the_feature_matrix(cls, kw, regression_data):
    X, y = regression_data
    lam = 1e-3
    full = cls(n_features=80, solver="ridge" if cls is rw.RKSRegressor else "lstsq",
               random_state=3, **kw).fit(X, y)
    Phi = full.feature_matrix(X)
    ys = full.y_scaler_.transform(y[:, None])[:, 0]
    est = cls(n_features=80, solver="lasso", reg=lam, tol=1e-12, max_iter=100000,
              random_state=3, **kw).fit(X, y)
    ref = _sk(Phi, ys, lam)
    # only non-zero features are kept (same count as scikit-learn's support)
    assert est.coef_.shape[0] == est.feature_map_.n_features == np.count_nonzero(est.coef_)
    assert est.coef_.shape[0] == np.count_nonzero(ref)
    # the Lasso fit X a is unique even where a is not: compare predictions
    pred = est.y_scaler_.inverse_transform((Phi @ ref)[:, None])[:, 0]
    np.testing.assert_allclose(est.predict(X), pred, atol=1e-6 * np.std(y))


def test_multiclass_keeps_union_of_supports():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((240, 3))
    y = np.argmax(X, axis=1)
    clf = rw.RWClassifier(n_features=60, solver="lasso", reg=3e-3, random_state=0).fit(X, y)
    used = np.any(clf.coef_ != 0, axis=1)
    assert clf.coef_.shape[1] == 3 and used.all()
    assert clf.n_features_out_ == clf.coef_.shape[0] < 60
    assert clf.score(X, y) > 0.8


@pytest.mark.parametrize("tol", [1e-12, 1e-4])
def test_gram_mode_fit_equals_design_mode(binary_data, monkeypatch, tol):
    """Working sets on Phi (fit's mode above GRAM_MAX_T features) and the Gram form (below it,
    and partial_fit's) return the same Lasso: both finish on the optimality conditions of the
    support, so even at the default tol they agree to rounding amplified by the conditioning
    of the support's Gram matrix (1e-9 leaves it 1e6)."""
    from rwtool.solvers import _lasso as L
    X, y = binary_data
    kw = dict(n_features=50, solver="lasso", reg=1e-3, tol=tol, max_iter=100000,
              random_state=1)
    b = rw.RWClassifier(**kw).fit(X, y)
    monkeypatch.setattr(L, "GRAM_MAX_T", 0)
    a = rw.RWClassifier(**kw).fit(X, y)
    assert a.solver_info_["mode"] == "design" and b.solver_info_["mode"] == "gram"
    D = b.decision_function(X)
    assert np.abs(a.decision_function(X) - D).max() < 1e-9 * np.abs(D).max()


def test_cancel_keeps_last_completed_lam():
    X, y = _problem(seed=4)
    calls = []

    def cb(ev):
        calls.append(ev)
        return ev.kind == "update" and ev.done == 2

    with pytest.raises(FitCancelled) as exc:
        lasso_path(X, y, 1e-3, path_length=5, tol=1e-10, progress=Progress(cb, 0.0),
                   precompute=False)
    assert exc.value.partial_model
    coef, info = exc.value.partial
    assert info["lam"] == pytest.approx(info["lams"][1])
    ref, _ = lasso_path(X, y, None, lams=info["lams"][:2], tol=1e-10)
    np.testing.assert_allclose(coef, ref, atol=1e-12)
    assert calls[-1].done == 2          # nothing ran after the cancel


def test_sklearn_warning_free_tolerance_check():
    X, y = _problem(seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lasso_path(X, y, 0.05)
