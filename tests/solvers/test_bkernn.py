"""BKerNN (seed 001): kernel, closed form, gradient, proximal operators, Algorithm 1, estimators.

Oracles: dense numpy Brownian kernels and solves, the naive O(n^2) double sum of Lemma 8,
central finite differences, brute-force minimisation of the proximal problems (scipy and 1-D
grids), and scikit-learn's estimator checks.
"""

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from rwtool.estimators._bkernn import BKerNNClassifier, BKerNNRegressor
from rwtool.solvers._bkernn import (PENALTIES, centred_kernel, concave_shrink,
                                    feature_learning_score, fit_particles, particle_gradient,
                                    penalty_value, prox, ridge_step)
from rwtool.progress import FitCancelled, Progress

# ----------------------------------------------------------------------------- numpy oracles


def brownian_gram(X, W, X2=None):
    """K = (1/m) sum_j k_B(w_j^T x, w_j^T x'), k_B(a, b) = min(|a|,|b|) 1{ab > 0} (spec 1.1)."""
    X2 = X if X2 is None else X2
    P, Q = X @ W, X2 @ W
    K = np.zeros((len(X), len(X2)))
    for j in range(W.shape[1]):
        a, b = P[:, j][:, None], Q[:, j][None, :]
        K += np.minimum(np.abs(a), np.abs(b)) * (a * b > 0)
    return K / W.shape[1]


def closed_form(X, Y, W, lam):
    """Lemma 7 with the full Brownian kernel: alpha, c, G (dense solve)."""
    n = len(X)
    K = brownian_gram(X, W)
    Pi = np.eye(n) - 1.0 / n
    Yc = Y - Y.mean(axis=0)
    alpha = np.linalg.solve(Pi @ K @ Pi + n * lam * np.eye(n), Yc)
    c = Y.mean(axis=0) - (K @ alpha).mean(axis=0)
    G = 0.5 * lam * np.sum(Yc * alpha) / Y.shape[1]
    return K, alpha, c, G


def central_differences(G, W, h=1e-6):
    """dG/dW by central differences of step h, entry by entry."""
    fd = np.zeros_like(W)
    for a in range(W.shape[0]):
        for j in range(W.shape[1]):
            E = np.zeros_like(W)
            E[a, j] = h
            fd[a, j] = (G(W + E) - G(W - E)) / (2 * h)
    return fd


def naive_gradient(X, W, alpha, lam):
    """Lemma 8 as the double sum over pairs (averaged over columns of alpha)."""
    d, m = W.shape
    P = X @ W
    diff = X[:, None, :] - X[None, :, :]
    g = np.zeros((d, m))
    for k in range(alpha.shape[1]):
        z = alpha[:, k]
        for j in range(m):
            s = np.sign(P[:, j][:, None] - P[:, j][None, :])
            g[:, j] += lam / (4 * m) * np.einsum("i,l,il,ila->a", z, z, s, diff)
    return g / alpha.shape[1]


def omega(W, penalty, s=1.0):
    """Section 2.5 penalties written from the definitions (1/m sums, covariance square root)."""
    d, m = W.shape
    if penalty == "basic":
        return sum(np.linalg.norm(W[:, j]) for j in range(m)) / (2 * m)
    if penalty == "variable":
        return 0.5 * sum(math.sqrt(np.sum(W[a] ** 2) / m) for a in range(d))
    if penalty == "feature":
        ev = np.clip(np.linalg.eigvalsh(W @ W.T / m), 0, None)
        return 0.5 * np.sum(np.sqrt(ev))
    if penalty == "concave_variable":
        return sum(math.log1p(s / math.sqrt(m) * np.linalg.norm(W[a])) for a in range(d)) / (2 * s)
    S = np.linalg.svd(W, compute_uv=False)
    return np.sum(np.log1p(s / math.sqrt(m) * S)) / (2 * s)


@pytest.fixture
def problem():
    rng = np.random.default_rng(3)
    n, d, m = 30, 4, 5
    X = rng.uniform(-1, 1, (n, d))
    Y = (np.abs(np.sin(X[:, 0] + X[:, 1])) + 0.1 * rng.standard_normal(n))[:, None]
    W = rng.standard_normal((d, m)) / math.sqrt(d)
    return X, Y, W, 0.01


def _pt(X, W):
    return np.ascontiguousarray(W.T @ X.T)


# ----------------------------------------------------------------------------- kernel, closed form

def test_centred_kernel_equals_centred_brownian_gram(problem):
    X, Y, W, lam = problem
    n = len(X)
    K = brownian_gram(X, W)
    assert np.allclose(K, K.T)
    assert np.linalg.eigvalsh(K).min() > -1e-10
    assert np.allclose(brownian_gram(X, 2.5 * W), 2.5 * K)        # 1-homogeneity
    assert np.allclose(brownian_gram(X, -W), K)                    # K(-w) = K(w)
    Pi = np.eye(n) - 1.0 / n
    Kt = centred_kernel(_pt(X, W), shift=0.7)
    np.testing.assert_allclose(Kt, Pi @ K @ Pi + 0.7 * np.eye(n), atol=1e-13)


def test_ridge_step_matches_lemma7_and_primal(problem):
    X, Y, W, lam = problem
    n = len(X)
    K, alpha_ref, c, G_ref = closed_form(X, Y, W, lam)
    Yc = Y - Y.mean()
    alpha, G = ridge_step(_pt(X, W), Yc, lam)
    np.testing.assert_allclose(alpha, alpha_ref, atol=1e-12)
    assert abs(G - G_ref) < 1e-13
    assert abs(alpha.sum()) < 1e-12                                 # 1^T alpha = 0
    a = alpha[:, 0]
    r = Y[:, 0] - K @ a - c[0]
    primal = r @ r / (2 * n) + 0.5 * lam * a @ K @ a
    assert abs(primal - G) < 1e-12
    # (alpha, c) is a stationary point of the primal objective
    grad_a = -K @ r / n + lam * K @ a
    assert np.abs(grad_a).max() < 1e-12 and abs(r.sum()) < 1e-11


# ----------------------------------------------------------------------------- gradient (Lemma 8)

def test_fast_gradient_equals_naive_sum_and_finite_differences(problem):
    X, Y, W, lam = problem
    Yc = Y - Y.mean()
    alpha, _ = ridge_step(_pt(X, W), Yc, lam)
    g = particle_gradient(X, _pt(X, W), alpha, lam)
    np.testing.assert_allclose(g, naive_gradient(X, W, alpha, lam), atol=1e-15, rtol=1e-10)
    fd = central_differences(lambda W_: ridge_step(_pt(X, W_), Yc, lam)[1], W)
    np.testing.assert_allclose(g, fd, atol=1e-9 * np.abs(g).max() + 1e-12)


def test_gradient_with_ties_and_several_outputs():
    rng = np.random.default_rng(5)
    # integer inputs, duplicated rows and particles with zero entries make many tied projections
    X = rng.integers(-2, 3, size=(25, 3)).astype(float)
    X[10:15] = X[:5]
    W = rng.integers(-1, 2, size=(3, 6)).astype(float)
    W[:, 0] = 0.0
    Y = rng.standard_normal((25, 3))
    alpha, _ = ridge_step(_pt(X, W), Y - Y.mean(axis=0), 0.05)
    g = particle_gradient(X, _pt(X, W), alpha, 0.05)
    np.testing.assert_allclose(g, naive_gradient(X, W, alpha, 0.05), atol=1e-14)
    assert np.all(g[:, 0] == 0.0)                                   # a dead particle stays dead


# ----------------------------------------------------------------------------- proximal operators

def _prox_objective(U, W, tau, penalty, s=1.0):
    return 0.5 * np.sum((W - U) ** 2) + tau * omega(U, penalty, s)


@pytest.mark.slow
@pytest.mark.parametrize("penalty", ["basic", "variable", "feature"])
def test_convex_prox_against_numerical_minimisation(penalty):
    rng = np.random.default_rng(11)
    d, m = 3, 4
    for trial in range(3):
        W = rng.standard_normal((d, m))
        W[0] *= 0.1                                                 # some rows/columns get killed
        tau = rng.uniform(0.5, 3.0)
        U = prox(W, tau, penalty)
        f_prox = _prox_objective(U, W, tau, penalty)
        for start in (W, rng.standard_normal((d, m))):
            res = minimize(lambda u: _prox_objective(u.reshape(d, m), W, tau, penalty),
                           start.ravel(), method="Powell",
                           options={"xtol": 1e-10, "ftol": 1e-14, "maxfev": 200000})
            assert f_prox <= res.fun + 1e-10
            # 1-strong convexity around the minimiser U: ||V - U||^2 <= 2 (f(V) - f(U))
            assert np.sum((U - res.x.reshape(d, m)) ** 2) <= 2 * (res.fun - f_prox) + 1e-6


@pytest.mark.parametrize("penalty", ["concave_variable", "concave_feature"])
def test_concave_prox_against_grid_search(penalty):
    rng = np.random.default_rng(12)
    d, m, s = 4, 3, 1.7
    for trial in range(6):
        W = rng.standard_normal((d, m)) * rng.uniform(0.1, 3.0)
        tau = rng.uniform(0.1, 6.0)
        U = prox(W, tau, penalty, s)
        # exact 1-D reduction: row norms / singular values, minimised on a fine grid
        v = np.linalg.norm(W, axis=1) if penalty == "concave_variable" else \
            np.linalg.svd(W, compute_uv=False)
        b = s / math.sqrt(m)
        best = 0.0
        for r in v:
            t = np.linspace(0.0, r, 200001)
            best += np.min(0.5 * (t - r) ** 2 + tau / (2 * s) * np.log1p(b * t))
        f_prox = _prox_objective(U, W, tau, penalty, s)
        assert f_prox <= best + 1e-9
        assert f_prox >= best - 1e-6
        for _ in range(200):                                        # no better point nearby
            V = U + 1e-3 * rng.standard_normal(U.shape)
            assert f_prox <= _prox_objective(V, W, tau, penalty, s) + 1e-12


def test_concave_shrink_edge_cases():
    r = np.array([0.0, 1e-300, 0.3, 2.0, 50.0])
    out = concave_shrink(r, tau=1.0, s=1.0, m=4)
    assert np.all(np.isfinite(out)) and out[0] == 0.0 and np.all(out <= r)
    # s -> 0: the convex soft threshold r - tau/(2 sqrt m)
    np.testing.assert_allclose(concave_shrink(r, 1.0, 1e-9, 4), np.maximum(r - 0.25, 0), atol=1e-7)
    rng = np.random.default_rng(0)
    W = rng.standard_normal((5, 4))
    W[2] = 0.0
    for pen, cvx in (("concave_variable", "variable"), ("concave_feature", "feature")):
        assert np.all(np.isfinite(prox(W, 2.0, pen, 1.0)))
        np.testing.assert_allclose(prox(W, 2.0, pen, 1e-9), prox(W, 2.0, cvx), atol=1e-7)
    for pen in PENALTIES:
        np.testing.assert_array_equal(prox(W, 0.0, pen), W)
        assert np.all(np.abs(prox(W, 1e4, pen)) < 1e-12)
        assert abs(penalty_value(W, pen, 0.8) - omega(W, pen, 0.8)) < 1e-12


# ----------------------------------------------------------------------------- Algorithm 1

@pytest.mark.parametrize("penalty", PENALTIES)
def test_objective_never_increases(penalty, problem):
    X, Y, W, lam = problem
    res = fit_particles(X, Y - Y.mean(), W, lam, penalty, s=1.0, step_size=500.0, max_iter=15)
    h = res["history"]
    assert h["accepted"][1:].sum() >= 5
    assert np.all(np.diff(h["objective"]) <= 1e-12 * abs(h["objective"][0]))
    assert h["objective"][-1] < h["objective"][0]
    # the returned coefficients belong to the returned particles (no stale alpha)
    _, alpha, _, G = closed_form(X, Y, res["W"], lam)
    np.testing.assert_allclose(res["alpha"], alpha, atol=1e-11)
    # the reported objective is that of the returned particles (to the solve's rounding)
    assert abs(h["objective"][-1] - G - lam * omega(res["W"], penalty)) < 1e-8 * abs(G)


def test_particle_permutation_and_sign_flip_invariance(problem):
    X, Y, W, lam = problem
    Yc = Y - Y.mean()
    base = fit_particles(X, Yc, W, lam, "feature", max_iter=8)
    perm = np.array([3, 0, 4, 1, 2])
    res = fit_particles(X, Yc, W[:, perm], lam, "feature", max_iter=8)
    np.testing.assert_allclose(res["W"], base["W"][:, perm], atol=1e-10)
    np.testing.assert_allclose(res["alpha"], base["alpha"], atol=1e-10)
    flip = np.array([1.0, -1.0, 1.0, -1.0, -1.0])
    for pen in ("basic", "concave_variable"):
        a = fit_particles(X, Yc, W, lam, pen, max_iter=8)
        b = fit_particles(X, Yc, W * flip, lam, pen, max_iter=8)
        np.testing.assert_allclose(b["W"], a["W"] * flip, atol=1e-10)
        np.testing.assert_allclose(b["alpha"], a["alpha"], atol=1e-10)


def test_one_dimensional_fit_is_piecewise_linear_with_knots_at_data():
    rng = np.random.default_rng(4)
    x = np.sort(rng.uniform(-1, 1, 20))
    y = np.sin(3 * x) + 0.1 * rng.standard_normal(20)
    # n_iter = 0, m = 1: Brownian KRR with kernel |w| k_B(x, x') (spec section 7)
    est = BKerNNRegressor(penalty="basic", reg=0.002, n_particles=1, max_iter=0,
                          standardize=False, random_state=0).fit(x[:, None], y)
    w = est.particles_[0, 0]
    K, alpha, c, _ = closed_form(x[:, None], y[:, None], np.array([[w]]), 0.002)
    grid = np.linspace(-1.5, 1.5, 301)
    Kg = brownian_gram(grid[:, None], np.array([[w]]), x[:, None])
    np.testing.assert_allclose(est.predict(grid[:, None]), Kg @ alpha[:, 0] + c[0], atol=1e-10)
    for est in (est, BKerNNRegressor(penalty="basic", reg=0.002, n_particles=3, max_iter=10,
                                     standardize=False, random_state=1).fit(x[:, None], y)):
        f = lambda t: est.predict(np.asarray(t, float).reshape(-1, 1))
        for lo, hi in zip(x[:-1], x[1:]):
            t = np.linspace(lo, hi, 7)
            lin = f([lo])[0] + (t - lo) / (hi - lo) * (f([hi])[0] - f([lo])[0])
            np.testing.assert_allclose(f(t), lin, atol=1e-10)
        # constant outside the data range, and bends at data points
        np.testing.assert_allclose(f([-3.0, -2.0, x[0]]), f([x[0]])[0], atol=1e-10)
        np.testing.assert_allclose(f([x[-1], 2.0, 3.0]), f([x[-1]])[0], atol=1e-10)
        slopes = np.diff(f(x)) / np.diff(x)
        assert np.sum(np.abs(np.diff(slopes)) > 1e-6) >= 5


# ----------------------------------------------------------------------------- estimators

def test_regressor_state_is_consistent_and_predictions_match_oracle(problem):
    X, Y, _, lam = problem
    y = Y[:, 0]
    est = BKerNNRegressor(penalty="concave_feature", reg=lam, n_particles=6, max_iter=10,
                          standardize=False, random_state=0).fit(X, y)
    W = est.particles_
    K, alpha, c, _ = closed_form(X, Y, W, lam)
    np.testing.assert_allclose(est.dual_coef_, alpha, atol=1e-11)
    Xt = np.random.default_rng(9).uniform(-1.5, 1.5, (40, X.shape[1]))
    ref = brownian_gram(Xt, W, X) @ alpha[:, 0] + c[0]             # full Brownian form (1.7)
    np.testing.assert_allclose(est.predict(Xt), ref, atol=1e-11)
    # the training residual is -n lam alpha (Lemma 7)
    np.testing.assert_allclose(est.predict(X) - y, -len(X) * lam * alpha[:, 0], atol=1e-11)
    # ridge functions: f(x) = c' + (1/m) sum_j g_j(w_j^T x)
    T = Xt @ W
    G = np.stack([est.ridge_functions(T[:, j])[:, j] for j in range(W.shape[1])], axis=1)
    np.testing.assert_allclose(est.intercept_[0] + G.mean(axis=1), est.predict(Xt), atol=1e-11)
    assert est.n_iter_ == 10 and len(est.history_["objective"]) == 11


def test_translation_and_target_shift_and_row_permutation(problem):
    X, Y, _, lam = problem
    y = Y[:, 0]
    Xt = np.random.default_rng(2).uniform(-1, 1, (15, X.shape[1]))
    kw = dict(penalty="variable", reg=lam, n_particles=5, max_iter=6, standardize=False,
              random_state=0)
    base = BKerNNRegressor(**kw).fit(X, y).predict(Xt)
    shift = np.array([3.0, -1.0, 0.5, 2.0])
    np.testing.assert_allclose(BKerNNRegressor(**kw).fit(X + shift, y).predict(Xt + shift),
                               base, atol=1e-9)
    np.testing.assert_allclose(BKerNNRegressor(**kw).fit(X, y + 7.0).predict(Xt), base + 7.0,
                               atol=1e-9)
    p = np.random.default_rng(0).permutation(len(X))
    np.testing.assert_allclose(BKerNNRegressor(**kw).fit(X[p], y[p]).predict(Xt), base,
                               atol=1e-9)
    again = BKerNNRegressor(**kw).fit(X, y).predict(Xt)
    np.testing.assert_array_equal(again, base)


def test_classifier_binary_and_multiclass():
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, (90, 3))
    lab = np.where(X[:, 0] + X[:, 1] > 0.3, "hi", np.where(X[:, 0] - X[:, 1] > 0, "mid", "lo"))
    clf = BKerNNClassifier(reg=0.005, n_particles=8, max_iter=10, random_state=0).fit(X, lab)
    assert list(clf.classes_) == ["hi", "lo", "mid"]
    D = clf.decision_function(X)
    assert D.shape == (90, 3)
    assert np.array_equal(clf.predict(X), clf.classes_[np.argmax(D, axis=1)])
    assert clf.score(X, lab) > 0.9
    # shared particles: G is the mean of the per-class closed forms on +/-1 targets
    Xs = clf.x_scaler_.transform(X)
    Y = np.where(lab[:, None] == clf.classes_[None, :], 1.0, -1.0)
    G = np.mean([closed_form(Xs, Y[:, [k]], clf.particles_, 0.005)[3] for k in range(3)])
    assert abs(clf.history_["G"][-1] - G) < 1e-12
    yb = (lab == "hi").astype(int)
    clfb = BKerNNClassifier(reg=0.005, n_particles=8, max_iter=10, random_state=0).fit(X, yb)
    assert clfb.decision_function(X).shape == (90,)
    assert clfb.score(X, yb) > 0.9


def test_cancellation_keeps_last_completed_iterate(problem):
    X, Y, _, lam = problem
    events = []

    def cb(ev):
        events.append(ev)
        return ev.kind == "update" and ev.done >= 3

    est = BKerNNRegressor(reg=lam, n_particles=5, max_iter=20, random_state=0)
    est.fit(X, Y[:, 0])                                             # a previous model is replaced
    with pytest.raises(FitCancelled) as info:
        est.fit(X, Y[:, 0], callback=Progress(cb, min_interval=0.0))
    assert info.value.partial_model
    assert events[0].stage == "iterations" and events[0].kind == "start"
    assert {"objective", "train_loss", "step_size"} <= set(events[-1].metrics)
    assert est.cancelled_ and 3 <= est.n_iter_ < 20
    Xs = est.x_scaler_.transform(X)
    Ys = est.y_scaler_.transform(Y)
    _, alpha, _, _ = closed_form(Xs, Ys, est.particles_, lam)
    np.testing.assert_allclose(est.dual_coef_, alpha, atol=1e-11)
    assert np.all(np.isfinite(est.predict(X)))


def test_introspection_finds_relevant_variables_and_subspace():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (100, 6))
    y = np.abs(np.sin(X[:, 0] + X[:, 1]))
    est = BKerNNRegressor(penalty="concave_variable", reg=0.006, n_particles=20, max_iter=25,
                          standardize=False, random_state=0).fit(X, y)
    imp = est.variable_importance()
    assert abs(imp.sum() - 1) < 1e-12 and set(np.argsort(-imp)[:2]) == {0, 1}
    assert np.array_equal(est.estimated_subspace(2), np.eye(6)[:, :2])
    P = np.zeros((6, 1))
    P[:2, 0] = 1 / math.sqrt(2)
    est = BKerNNRegressor(penalty="feature", reg=0.006, n_particles=20, max_iter=25,
                          standardize=False, random_state=0).fit(X, y)
    S, U = est.feature_subspace()
    assert np.all(np.diff(S) <= 0) and U.shape == (6, 6)
    assert est.feature_learning_score(P) > 0.9
    dirs, norms = est.directions()
    np.testing.assert_allclose(dirs * norms, est.particles_, atol=1e-14)


def test_feature_learning_score_known_values():
    d = 6
    E = np.eye(d)
    assert abs(feature_learning_score(E[:, :2], E[:, [1, 0]] @ np.array([[2, 1], [0, 3]])) - 1) < 1e-12
    assert abs(feature_learning_score(E[:, :2], E[:, 2:4])) < 1e-12
    assert abs(feature_learning_score(E[:, :4], E[:, 2:6]) - (1 - 4 / 4)) < 1e-12
    assert feature_learning_score(E, E[:, ::-1]) == 1.0


def test_parameter_validation():
    X = np.random.default_rng(0).uniform(size=(10, 2))
    y = X[:, 0]
    for kw, msg in ((dict(penalty="lasso"), "penalty"), (dict(reg=0.0), "reg"),
                    (dict(reg="big"), "reg"), (dict(s=0.0), "s"), (dict(n_particles=0), "n_particles"),
                    (dict(step_size=-1.0), "step_size"), (dict(max_iter=-1), "max_iter")):
        with pytest.raises((ValueError, TypeError), match=msg):
            BKerNNRegressor(**kw).fit(X, y)
    est = BKerNNRegressor(max_iter=1).fit(X, y)
    with pytest.raises(ValueError, match="expecting 2 features"):
        est.predict(X[:, :1])


@pytest.mark.parametrize("Est", [BKerNNRegressor, BKerNNClassifier])
def test_sklearn_estimator_checks(Est):
    pytest.importorskip("sklearn")
    from sklearn.utils.estimator_checks import check_estimator
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(Est(max_iter=2, n_particles=5), on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results
              if r["status"] == "failed"]
    assert not failed


def test_kernel_and_gradient_in_any_share_count(problem, monkeypatch):
    """The dense path's kernel and the gradient share rows (particles) among threads: the same
    bits with 1, 2 and 3 shares (numba's thread count read as that, a share as small as one
    unit of work), with and without row weights; the oracles check the values."""
    import numba

    import rwtool.threads
    X, Y, W, lam = problem
    Yc = Y - Y.mean()
    PT = _pt(X, W)
    alpha, _ = ridge_step(PT, Yc, lam)
    v = np.sqrt(np.random.default_rng(3).uniform(0.2, 2.0, len(X)))
    monkeypatch.setattr(rwtool.threads, "PAIRS_PER_THREAD", 1)
    got = []
    for shares in (1, 2, 3):
        monkeypatch.setattr(numba, "get_num_threads", lambda: shares)
        got.append((centred_kernel(PT, 0.3), centred_kernel(PT, 0.3, v=v),
                    particle_gradient(X, PT, alpha, lam)))
    for other in got[1:]:
        for a, b in zip(got[0], other):
            np.testing.assert_array_equal(a, b)
    K = brownian_gram(X, W)
    Pi = np.eye(len(X)) - 1.0 / len(X)
    want = Pi @ K @ Pi + 0.3 * np.eye(len(X))
    np.testing.assert_allclose(got[0][0], want, rtol=0, atol=1e-12 * np.abs(want).max())
    Pv = np.eye(len(X)) - np.outer(v, v) / (v @ v)
    want = Pv @ (v[:, None] * K * v[None, :]) @ Pv + 0.3 * np.eye(len(X))
    np.testing.assert_allclose(got[0][1], want, rtol=0, atol=1e-12 * np.abs(want).max())
    want = naive_gradient(X, W, alpha, lam)
    np.testing.assert_allclose(got[0][2], want, rtol=0, atol=1e-10 * np.abs(want).max())


def test_prediction_tables_and_sums_in_any_share_count(monkeypatch):
    """ridge_tables and ridge_decision share particles and rows among threads: the same bits
    with 1, 2 and 3 shares (numba's thread count read as that, a share as small as one unit
    of work). Oracles: the tables are numpy's stable order of each particle's projections
    (ties, here many, keep their row order) and its sequential cumulative sums, exactly; the
    decision is the dense sum -(1/(2m)) sum_j sum_i alpha_i |t_j - p_ij| within the rounding
    of the prefix-sum form, t (2 A_c - A_n) - (2 B_c - B_n): 4 (n + 2) eps (|t| sum |alpha| +
    sum |alpha p|) a particle."""
    import numba

    import rwtool.threads
    import rwtool.solvers._bkernn as core
    rng = np.random.default_rng(8)
    n, m, q, nt = 53, 7, 2, 41
    PT = np.round(rng.standard_normal((m, n)), 1)                 # ties
    alpha = rng.standard_normal((n, q))
    alpha -= alpha.mean(axis=0)
    T = np.vstack([np.round(rng.standard_normal((nt - 3, m)), 1),  # on knots, and beyond them
                   PT[:, :2].T, np.full((1, m), 9.0)])
    monkeypatch.setattr(rwtool.threads, "PAIRS_PER_THREAD", 1)
    got = []
    for shares in (1, 2, 3):
        monkeypatch.setattr(numba, "get_num_threads", lambda: shares)
        tables = core.ridge_tables(PT, alpha)
        got.append((*tables, core.ridge_decision(T, *tables),
                    core.ridge_decision(T, *tables, tick=lambda _: None)))
    for other in got[1:]:
        for a, b in zip(got[0], other):
            np.testing.assert_array_equal(a, b)
    knots, A, B, D, _ = got[0]
    for j in range(m):
        order = np.argsort(PT[j], kind="stable")
        np.testing.assert_array_equal(knots[j], PT[j, order])
        np.testing.assert_array_equal(A[j, 1:], np.cumsum(alpha[order], axis=0))
        np.testing.assert_array_equal(B[j, 1:], np.cumsum(alpha[order] * PT[j, order, None],
                                                          axis=0))
        assert np.all(A[j, 0] == 0) and np.all(B[j, 0] == 0)
    dense = np.zeros((nt, q))
    bound = np.zeros((nt, q))
    eps = np.finfo(float).eps
    for j in range(m):
        dist = np.abs(T[:, j][:, None] - PT[j][None, :])
        dense += dist @ alpha
        bound += 4 * (n + 2) * eps * (np.abs(T[:, j])[:, None] * np.abs(alpha).sum(0)
                                      + np.abs(PT[j]) @ np.abs(alpha))
    dense *= -0.5 / m
    assert np.all(np.abs(D - dense) <= bound * 0.5 / m + m * eps * np.abs(dense))
