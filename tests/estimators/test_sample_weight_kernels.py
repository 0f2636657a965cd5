"""fit(X, y, sample_weight=...) on BKerNN and GreedyMK: the weighted objectives against dense
numpy re-implementations, repeated rows, removed rows, scikit-learn's equivalence check and
metadata routing.

Oracles: the weighted BKerNN objective minimised over (alpha, c) by a dense numpy solve of its
stationarity equations with the min-form Brownian kernel, central finite differences of G for
the particle gradient, the dense weighted kernel for the conjugate-gradient products and the
preconditioner; for MFGA the unweighted algorithm on rows scaled by sqrt(w) (the same
least-squares problem) and the gradient of the weighted logistic objective at the refit.
"""

import warnings

import numpy as np
import pytest
from sklearn.utils.estimator_checks import check_sample_weight_equivalence_on_dense_data

import rwtool as rw
from rwtool.exceptions import NumericalWarning
from rwtool.solvers._bkernn import centred_kernel, particle_gradient, ridge_step
from rwtool.solvers._bkernn_cg import (BlockPreconditioner, SortedProjections, cg_ridge,
                                       kernel_product)
from rwtool.solvers._greedy import DenseDictionary, glm_fit, mfga
from tests.estimators.test_sample_weight import data  # noqa: F401  (the fixture)
from tests.solvers.test_bkernn import brownian_gram, central_differences


def weighted_optimum(K, Y, w, lam):
    """argmin_{a, c} (1/(2S)) sum_i w_i ||y_i - (K a)_i - c||^2 + (lam/2) a^T K a by its
    stationarity equations (a dense least-norm solve: K may be singular, f = K a + c is
    unique): the fitted values f and the minimum."""
    n, S = len(K), w.sum()
    D = np.diag(w)
    one = np.ones((n, 1))
    top = np.hstack([K @ D @ K / S + lam * K, K @ D @ one / S])
    bottom = np.hstack([one.T @ D @ K, one.T @ D @ one])
    rhs = np.vstack([K @ D @ Y / S, one.T @ D @ Y])
    sol = np.linalg.lstsq(np.vstack([top, bottom]), rhs, rcond=None)[0]
    a, c = sol[:n], sol[n]
    f = K @ a + c
    value = (np.sum(w[:, None] * (Y - f) ** 2) / (2 * S)
             + 0.5 * lam * float(np.sum(a * (K @ a)))) / Y.shape[1]
    return f, value


# ----------------------------------------------------------------------------- BKerNN numerics

def _tiny(seed=0, n=30, d=3, m=5, q=2):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    W = rng.standard_normal((d, m))
    Y = rng.standard_normal((n, q))
    w = rng.uniform(0.2, 3.0, n)
    w[[3, 17]] = 0.0
    return X, W, Y, w


def test_weighted_ridge_step_minimises_the_weighted_objective():
    X, W, Y, w = _tiny()
    lam = 0.03
    K = brownian_gram(X, W)
    f_ref, G_ref = weighted_optimum(K, Y, w, lam)
    Yc = Y - np.average(Y, axis=0, weights=w)
    v = np.sqrt(w)
    alpha, G = ridge_step(np.ascontiguousarray((X @ W).T), Yc, lam, v=v)
    # K is well conditioned here (cond about 1e4 with the ridge): 1e-9 relative
    assert G == pytest.approx(G_ref, rel=1e-9)
    assert np.abs(alpha.sum(axis=0)).max() < 1e-12          # 1^T alpha = 0, as unweighted
    assert np.all(alpha[[3, 17]] == 0.0)                     # weight 0: absent
    c = np.average(Y - K @ alpha, axis=0, weights=w)
    f = K @ alpha + c
    keep = w > 0
    np.testing.assert_allclose(f[keep], f_ref[keep], rtol=1e-9, atol=1e-9)
    # the dense kernel is P_v V K V P_v + S lam I
    S = w.sum()
    P = np.eye(len(w)) - np.outer(v, v) / S
    np.testing.assert_allclose(centred_kernel(np.ascontiguousarray((X @ W).T), S * lam, v=v),
                               P @ np.diag(v) @ K @ np.diag(v) @ P + S * lam * np.eye(len(w)),
                               atol=1e-12)


def test_weighted_particle_gradient_is_the_derivative_of_G():
    X, W, Y, w = _tiny(seed=1, q=1)
    lam = 0.05
    v = np.sqrt(w)
    Yc = Y - np.average(Y, axis=0, weights=w)

    def G(W_):
        return ridge_step(np.ascontiguousarray((X @ W_).T), Yc, lam, v=v)[1]

    alpha, _ = ridge_step(np.ascontiguousarray((X @ W).T), Yc, lam, v=v)
    g = particle_gradient(X, np.ascontiguousarray((X @ W).T), alpha, lam)
    fd = central_differences(G, W)
    # central differences: O(h^2) truncation, rounding 1e-16 / h
    np.testing.assert_allclose(g, fd, atol=1e-8 * np.abs(g).max())


def test_weighted_cg_products_preconditioner_and_solve_against_the_dense_system():
    X, W, Y, w = _tiny(seed=2, n=60)
    v = np.sqrt(w)
    S = w.sum()
    PT = np.ascontiguousarray((X @ W).T)
    shift = 0.4 * S / len(w)
    M = centred_kernel(PT, shift, v=v)
    sp = SortedProjections(PT)
    U = np.random.default_rng(0).standard_normal((60, 2))
    np.testing.assert_allclose(kernel_product(sp, U, shift, v=v),
                               M @ (U - np.outer(v, v @ U) / S) + shift * (np.outer(v, v @ U) / S),
                               atol=1e-11)
    Yt = Y - np.outer(v, v @ Y) / S                          # a right side in the range of P_v
    want = np.linalg.solve(M, Yt)
    # one block per point: the preconditioner is the exact inverse on the range of P_v
    pre = BlockPreconditioner(sp, shift, blocks=60, v=v)
    np.testing.assert_allclose(pre.apply(Yt), want, atol=1e-9 * np.abs(want).max())
    for precond in (None, BlockPreconditioner(sp, shift, blocks=8, v=v)):
        beta, R, _ = cg_ridge(sp, Yt, shift, tol=1e-12, precond=precond, v=v)
        np.testing.assert_allclose(beta, want, atol=1e-9 * np.abs(want).max())


# ----------------------------------------------------------------------------- BKerNN estimators

@pytest.mark.parametrize("solver", ["dense", "cg"])
@pytest.mark.parametrize("task", ["regression", "classification"])
def test_bkernn_integer_weights_fit_the_repeated_rows(data, solver, task):
    X, y, w = data
    Est = rw.BKerNNRegressor if task == "regression" else rw.BKerNNClassifier
    target = y if task == "regression" else np.digitize(y, [-1.0, 0.5])
    kw = dict(n_particles=8, max_iter=6, kernel_solver=solver, cg_tol=1e-10, random_state=0)
    weighted = Est(**kw).fit(X, target, sample_weight=w)
    repeated = Est(**kw).fit(X.repeat(w, axis=0), target.repeat(w))
    assert weighted.reg_ == pytest.approx(repeated.reg_, rel=1e-15)   # reg="auto": n = sum w
    np.testing.assert_array_equal(weighted.history_["accepted"], repeated.history_["accepted"])
    f = weighted.predict if task == "regression" else weighted.decision_function
    g = repeated.predict if task == "regression" else repeated.decision_function
    # dense: the same system up to the order of additions (measured 3e-14); cg: solves to a
    # relative residual of 1e-10 from Krylov spaces of different sizes (measured 8e-11)
    tol = 1e-11 if solver == "dense" else 1e-8
    np.testing.assert_allclose(f(X), g(X), rtol=tol, atol=tol)


def test_bkernn_zero_weight_is_a_removed_row_and_weights_are_relative(data):
    X, y, w = data
    kw = dict(n_particles=8, max_iter=5, reg=0.02, random_state=0)
    w01 = (w > 0).astype(float)
    a = rw.BKerNNRegressor(**kw).fit(X, y, sample_weight=w01)
    b = rw.BKerNNRegressor(**kw).fit(X[w > 0], y[w > 0])
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-12, atol=1e-12)
    c = rw.BKerNNRegressor(**kw).fit(X, y, sample_weight=w + 0.5)
    d = rw.BKerNNRegressor(**kw).fit(X, y, sample_weight=7 * (w + 0.5))
    np.testing.assert_allclose(c.predict(X), d.predict(X), rtol=1e-10, atol=1e-10)
    # non-uniform weights change the model
    assert np.abs(c.predict(X) - rw.BKerNNRegressor(**kw).fit(X, y).predict(X)).max() > 1e-3
    # history's train_loss is the weighted half mean squared residual of the fitted targets
    Z = c.y_scaler_.transform(y[:, None])[:, 0]
    F = c.y_scaler_.transform(c.predict(X)[:, None])[:, 0]
    assert c.history_["train_loss"][-1] == pytest.approx(
        0.5 * np.average((Z - F) ** 2, weights=w + 0.5), rel=1e-9)


@pytest.mark.parametrize("Est", [rw.BKerNNRegressor, rw.BKerNNClassifier])
def test_bkernn_scikit_learn_sample_weight_equivalence(Est):
    check_sample_weight_equivalence_on_dense_data(
        Est.__name__, Est(n_particles=6, max_iter=4, random_state=0))


# ----------------------------------------------------------------------------- GreedyMK

@pytest.mark.parametrize("selector", ["mfga", "rks", "lkrf", "eerf"])
@pytest.mark.parametrize("task", ["regression", "classification"])
def test_greedy_integer_weights_fit_the_repeated_rows(data, selector, task):
    # fixed reg and the "scale" bandwidth rule (its variance is weighted); the k-NN rule and
    # reg="auto"'s folds see rows, not copies (docs/GREEDY_MK.md, "Row weights")
    X, y, w = data
    Est = rw.GreedyMKRegressor if task == "regression" else rw.GreedyMKClassifier
    target = y if task == "regression" else np.where(y > 0, "a", "b")
    kw = dict(selector=selector, n_features=15, reg=1e-3, sigma="scale", n_candidates=60,
              random_state=0)
    weighted = Est(**kw).fit(X, target, sample_weight=w)
    repeated = Est(**kw).fit(X.repeat(w, axis=0), target.repeat(w))
    assert weighted.sigma_ == pytest.approx(repeated.sigma_, rel=1e-13)
    np.testing.assert_array_equal(weighted.support_, repeated.support_)
    f = weighted.predict if task == "regression" else weighted.decision_function
    g = repeated.predict if task == "regression" else repeated.decision_function
    # the same sums added in another order (measured 5e-14)
    np.testing.assert_allclose(f(X), g(X), rtol=1e-10, atol=1e-10)


def test_greedy_zero_weight_is_a_removed_row_with_reg_auto(data):
    X, y, w = data
    w01 = (w > 0).astype(float)
    kw = dict(n_features=10, random_state=0)              # reg="auto", sigma="auto"
    a = rw.GreedyMKRegressor(**kw).fit(X, y, sample_weight=w01)
    b = rw.GreedyMKRegressor(**kw).fit(X[w > 0], y[w > 0])
    assert a.reg_ == b.reg_ and a.sigma_ == b.sigma_
    np.testing.assert_array_equal(a.support_, b.support_)
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-12, atol=1e-12)
    # reg="auto" with weights: each fold's fit and held-out error weigh the rows
    c = rw.GreedyMKRegressor(**kw).fit(X, y, sample_weight=w + 0.5)
    d = rw.GreedyMKRegressor(**kw).fit(X, y, sample_weight=3 * (w + 0.5))
    np.testing.assert_allclose(c.reg_search_["val_loss"], d.reg_search_["val_loss"], rtol=1e-9)


def test_weighted_mfga_is_least_squares_on_scaled_rows_and_logistic_is_stationary():
    rng = np.random.default_rng(4)
    Psi = rng.standard_normal((50, 30))
    Y = rng.standard_normal((50, 1))
    w = rng.uniform(0.1, 3.0, 50)
    w *= 50 / w.sum()                                      # mean 1: the same N in both
    s = np.sqrt(w)[:, None]
    sup, coef, _, path = mfga(DenseDictionary(Psi), Y, "squared", 1e-2, 8, weights=w)
    sup_ref, coef_ref, _, _ = mfga(DenseDictionary(Psi * s), Y * s, "squared", 1e-2, 8)
    np.testing.assert_array_equal(sup, sup_ref)
    np.testing.assert_allclose(coef, coef_ref, rtol=1e-10, atol=1e-12)
    F = Psi[:, sup] @ coef
    assert path["train_error"][-1] == pytest.approx(np.average((F - Y)[:, 0] ** 2, weights=w))
    # logistic refit with an intercept: the gradient of the weighted objective vanishes
    yb = np.where(Y > 0, 1.0, -1.0)
    A = Psi[:, :6]
    lam = 1e-2
    coef, b, _ = glm_fit(A, yb, "logistic", lam, True, weights=w)
    f = A @ coef[:, 0] + b[0]
    r = -yb[:, 0] / (1.0 + np.exp(yb[:, 0] * f)) * w / w.sum()
    assert np.abs(A.T @ r + lam * coef[:, 0]).max() < 1e-10
    assert abs(r.sum()) < 1e-10


@pytest.mark.parametrize("est", [
    rw.GreedyMKRegressor(n_features=10, reg=1e-3, sigma="scale", random_state=0),
    rw.GreedyMKClassifier(n_features=10, sigma="scale", random_state=0),
    rw.GreedyMKClassifier(selector="eerf", n_features=10, n_candidates=40, sigma=1.0,
                          random_state=0)], ids=["mfga-reg", "mfga-clf", "eerf-clf"])
def test_greedy_scikit_learn_sample_weight_equivalence(est):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check_sample_weight_equivalence_on_dense_data(type(est).__name__, est)


# ----------------------------------------------------------------------------- both

@pytest.mark.parametrize("make", [
    lambda: rw.BKerNNRegressor(n_particles=6, max_iter=3, reg=0.02, random_state=0),
    lambda: rw.GreedyMKRegressor(n_features=8, reg=1e-3, sigma="scale", random_state=0)],
    ids=["bkernn", "greedy"])
def test_grid_search_routes_the_weights_and_bad_weights_are_refused(data, make):
    sklearn = pytest.importorskip("sklearn")
    from sklearn.model_selection import GridSearchCV, KFold
    X, y, w = data
    with sklearn.config_context(enable_metadata_routing=True):
        grid = {"random_state": [0, 1]}
        search = GridSearchCV(make().set_fit_request(sample_weight=True).set_score_request(
            sample_weight=True), grid, cv=KFold(3)).fit(X, y, sample_weight=w)
        tr, va = next(KFold(3).split(X))
        fold = make().set_params(random_state=0).fit(X[tr], y[tr], sample_weight=w[tr])
        assert search.cv_results_["split0_test_score"][0] == pytest.approx(
            fold.score(X[va], y[va], w[va]), rel=1e-12)
    with pytest.raises(ValueError, match="one weight per row"):
        make().fit(X, y, sample_weight=w[:-1])
    with pytest.raises(ValueError, match=">= 0"):
        make().fit(X, y, sample_weight=-np.ones(len(y)))
    with pytest.raises(ValueError, match="non-zero weight"):
        make().fit(X, y, sample_weight=np.zeros(len(y)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumericalWarning)
        from pandas import DataFrame, Series
        frame = make().fit(DataFrame(X, columns=list("abcd")), Series(y), sample_weight=w)
    assert list(frame.feature_names_in_) == list("abcd")
