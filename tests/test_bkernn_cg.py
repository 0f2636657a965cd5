"""BKerNN at scale (issue 13): sorted prefix-sum kernel products, the CG ridge step, the CG fit.

Oracles: the dense Brownian Gram matrix min(|a|, |b|) 1{ab > 0} built by numpy, centred with an
explicit Pi; numpy's dense solve; the dense (Cholesky) path of Algorithm 1; tracemalloc for the
memory of prediction.
"""

import math
import tracemalloc

import numpy as np
import pytest

import rwtool.bkernn_cg as cgmod
import rwtool.bkernn_core as core
from rwtool.bkernn import BKerNNClassifier, BKerNNRegressor
from rwtool.bkernn_cg import BlockPreconditioner, SortedProjections, cg_ridge, kernel_product
from rwtool.bkernn_core import PENALTIES, fit_particles
from rwtool.progress import FitCancelled, Progress


def centred_brownian(X, W, X2=None):
    """Pi K Pi (or K(X2, X) Pi-centred as the predictor uses it) from the min-form kernel."""
    P = X @ W
    K = np.zeros((len(X), len(X)))
    for j in range(W.shape[1]):
        a = P[:, j]
        K += np.minimum(np.abs(a[:, None]), np.abs(a[None, :])) * (a[:, None] * a[None, :] > 0)
    K /= W.shape[1]
    Pi = np.eye(len(X)) - 1.0 / len(X)
    return Pi @ K @ Pi


def awkward_inputs(rng, n=240, d=4, m=9):
    """Ties (repeated rows), zero rows (projections exactly 0), mixed signs, a dead particle, and
    a particle whose projections sit far from 0."""
    X = rng.standard_normal((n, d))
    X[::6] = X[1::6][: len(X[::6])]
    X[::11] = 0.0
    X[5::13, 0] = np.round(X[5::13, 0], 1)
    W = rng.standard_normal((d, m))
    W[:, 3] = 0.0
    W[:, 4] = [0.0, 0.0, 0.0, 1.0]
    X[:, 3] = np.round(X[:, 3])                     # many exact ties along particle 4
    X[:, 2] += 40.0                                 # offsets: projections far from 0
    return X, W


@pytest.mark.parametrize("q", [1, 3])
def test_fast_product_equals_dense_centred_kernel(q):
    rng = np.random.default_rng(7)
    X, W = awkward_inputs(rng)
    PT = np.ascontiguousarray((X @ W).T)
    Kt = centred_brownian(X, W)
    U = rng.standard_normal((len(X), q))
    for shift in (0.0, 2.5):
        want = Kt @ U + shift * U
        got = kernel_product(SortedProjections(PT), U, shift)
        assert np.max(np.abs(got - want)) <= 1e-12 * np.max(np.abs(want))


def test_fast_product_single_particle_and_constant_projections():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 2))
    for W in (np.array([[1.0], [-2.0]]), np.zeros((2, 1))):
        PT = np.ascontiguousarray((X @ W).T)
        U = rng.standard_normal((50, 2))
        want = centred_brownian(X, W) @ U
        got = kernel_product(SortedProjections(PT), U)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * max(1.0, np.abs(want).max()))


def test_thread_count_does_not_change_the_product(monkeypatch):
    rng = np.random.default_rng(2)
    X, W = awkward_inputs(rng)
    sp = SortedProjections(np.ascontiguousarray((X @ W).T))
    U = rng.standard_normal((len(X), 2))
    serial = kernel_product(sp, U, 1.0)
    monkeypatch.setattr(cgmod, "PARALLEL_MIN_WORK", 0)
    np.testing.assert_array_equal(kernel_product(sp, U, 1.0), serial)


@pytest.mark.parametrize("blocks", [0, 6])
def test_cg_ridge_solves_the_dense_system(blocks):
    rng = np.random.default_rng(3)
    X, W = awkward_inputs(rng)
    n = len(X)
    PT = np.ascontiguousarray((X @ W).T)
    Y = rng.standard_normal((n, 3))
    Yc = Y - Y.mean(axis=0)
    shift = 0.05 * n * 0.01
    want = np.linalg.solve(centred_brownian(X, W) + shift * np.eye(n), Yc)
    sp = SortedProjections(PT)
    pre = BlockPreconditioner(sp, shift, blocks) if blocks else None
    A, R, its = cg_ridge(sp, Yc, shift, tol=1e-12, precond=pre)
    assert its > 0
    np.testing.assert_allclose(A, want, rtol=0, atol=1e-9 * np.abs(want).max())
    np.testing.assert_allclose(A.sum(axis=0), 0.0, atol=1e-9 * np.abs(want).max())
    # the returned residual is the true one
    np.testing.assert_allclose(R, Yc - kernel_product(sp, A, shift), atol=1e-12 * n)
    # warm start from the solution: nothing left to do
    _, _, its0 = cg_ridge(sp, Yc, shift, x0=A, tol=1e-8, precond=pre)
    assert its0 == 0


def test_preconditioner_with_one_block_per_point_is_the_exact_inverse():
    """With B = n every gap keeps its own step: F F^T is K~ itself (the step-function identity),
    so Woodbury gives (K~ + s I)^{-1} exactly and preconditioned CG stops after one step."""
    rng = np.random.default_rng(8)
    X, W = awkward_inputs(rng, n=90)
    n = len(X)
    sp = SortedProjections(np.ascontiguousarray((X @ W).T))
    shift = 0.7
    pre = BlockPreconditioner(sp, shift, blocks=n)
    R = rng.standard_normal((n, 2))
    R -= R.mean(axis=0)
    want = np.linalg.solve(centred_brownian(X, W) + shift * np.eye(n), R)
    np.testing.assert_allclose(pre.apply(R), want, rtol=0, atol=1e-9 * np.abs(want).max())
    _, _, its = cg_ridge(sp, R, shift, tol=1e-9, precond=pre)
    assert its <= 2


def test_preconditioner_cuts_iterations():
    rng = np.random.default_rng(4)
    n, d, m = 3000, 10, 20
    X = rng.standard_normal((n, d))
    W = 3 * rng.standard_normal((d, m)) / math.sqrt(d)
    sp = SortedProjections(np.ascontiguousarray((X @ W).T))
    Yc = rng.standard_normal((n, 1))
    Yc -= Yc.mean()
    shift = np.max(np.linalg.norm(X, axis=1))
    A0, _, plain = cg_ridge(sp, Yc, shift, tol=1e-8)
    A1, _, fast = cg_ridge(sp, Yc, shift, tol=1e-8, precond=BlockPreconditioner(sp, shift, 16))
    assert fast < 0.4 * plain
    np.testing.assert_allclose(A1, A0, atol=1e-6 * np.abs(A0).max())


def _problem(n=160, d=5, m=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d))
    y = np.abs(np.sin(2 * X[:, 0] + X[:, 1])) + 0.1 * rng.standard_normal(n)
    Yc = (y - y.mean())[:, None]
    W0 = rng.standard_normal((d, m)) / math.sqrt(d)
    return X, Yc, W0, 2 * np.max(np.linalg.norm(X, axis=1)) / n


@pytest.mark.parametrize("penalty", PENALTIES)
@pytest.mark.parametrize("blocks", [0, "auto"])
def test_cg_fit_follows_the_dense_fit(penalty, blocks):
    X, Yc, W0, lam = _problem()
    kw = dict(step_size=500.0, max_iter=12)
    dense = fit_particles(X, Yc, W0, lam, penalty, kernel_solver="dense", **kw)
    cg = fit_particles(X, Yc, W0, lam, penalty, kernel_solver="cg", cg_tol=1e-11,
                       precond_blocks=blocks, **kw)
    assert cg["kernel_solver"] == "cg" and cg["cg_iterations"] > 0
    hd, hc = dense["history"], cg["history"]
    np.testing.assert_array_equal(hd["accepted"], hc["accepted"])
    np.testing.assert_array_equal(hd["n_backtracks"], hc["n_backtracks"])
    np.testing.assert_allclose(hc["objective"], hd["objective"], rtol=1e-6)
    np.testing.assert_allclose(cg["W"], dense["W"], atol=1e-6 * np.abs(dense["W"]).max())
    np.testing.assert_allclose(cg["alpha"], dense["alpha"], atol=1e-6 * np.abs(dense["alpha"]).max())


@pytest.mark.parametrize("penalty", ["basic", "concave_feature"])
def test_estimators_through_cg_predict_like_dense(penalty):
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, (180, 4))
    y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2
    Xt = rng.uniform(-1.2, 1.2, (300, 4))
    kw = dict(penalty=penalty, n_particles=8, max_iter=8, random_state=0)
    d = BKerNNRegressor(kernel_solver="dense", **kw).fit(X, y)
    c = BKerNNRegressor(kernel_solver="cg", cg_tol=1e-11, **kw).fit(X, y)
    assert (d.kernel_solver_, c.kernel_solver_) == ("dense", "cg") and c.cg_iterations_ > 0
    np.testing.assert_allclose(c.predict(Xt), d.predict(Xt), atol=1e-6 * np.abs(y).max())
    labels = np.digitize(X[:, 0] + X[:, 1] ** 2, [-0.3, 0.4])          # three classes
    d = BKerNNClassifier(kernel_solver="dense", **kw).fit(X, labels)
    c = BKerNNClassifier(kernel_solver="cg", cg_tol=1e-11, **kw).fit(X, labels)
    np.testing.assert_allclose(c.decision_function(Xt), d.decision_function(Xt), atol=1e-6)
    np.testing.assert_array_equal(c.predict(Xt), d.predict(Xt))


def test_auto_switches_to_cg_from_the_threshold(monkeypatch):
    X, Yc, W0, lam = _problem(n=60)
    y = Yc[:, 0]
    assert BKerNNRegressor(max_iter=1).fit(X, y).kernel_solver_ == "dense"
    monkeypatch.setattr(core, "CG_MIN_N", 60)
    assert BKerNNRegressor(max_iter=1).fit(X, y).kernel_solver_ == "cg"
    assert BKerNNRegressor(max_iter=1, kernel_solver="dense").fit(X, y).kernel_solver_ == "dense"
    for kw, msg in ((dict(kernel_solver="lu"), "kernel_solver"), (dict(cg_tol=0.0), "cg_tol"),
                    (dict(cg_tol=0.5), "cg_tol")):
        with pytest.raises(ValueError, match=msg):
            BKerNNRegressor(**kw).fit(X, y)


def test_prediction_matches_dense_oracle_without_n_new_by_n_matrices():
    rng = np.random.default_rng(6)
    X = rng.uniform(-1, 1, (400, 3))
    y = np.sin(3 * X[:, 0]) * X[:, 1]
    est = BKerNNRegressor(n_particles=6, max_iter=4, kernel_solver="cg", cg_tol=1e-10,
                          random_state=0).fit(X, y)
    Xt = rng.uniform(-1.5, 1.5, (50, 3))
    Xs, Xts = est.x_scaler_.transform(X), est.x_scaler_.transform(Xt)
    P, Pt = Xs @ est.particles_, Xts @ est.particles_
    D = np.mean(np.abs(Pt[:, None, :] - P[None, :, :]), axis=2)          # (1/m) sum_j |.|
    f = -0.5 * D @ est.dual_coef_[:, 0] + est.intercept_[0]
    np.testing.assert_allclose(est.predict(Xt), est.y_scaler_.inverse_transform(f[:, None])[:, 0],
                               rtol=1e-10, atol=1e-10)
    big = rng.uniform(-1, 1, (20000, 3))
    est.predict(big[:10])
    tracemalloc.start()
    est.predict(big)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 0.1 * 8 * len(big) * len(X)       # an n_new x n matrix would be 64 MB


def test_cancel_stops_inside_a_cg_solve(monkeypatch):
    X, Yc, W0, lam = _problem(n=200)
    y = Yc[:, 0]
    products = []
    real = cgmod.kernel_product

    def counting(*a, **k):
        products.append(1)
        return real(*a, **k)

    monkeypatch.setattr(cgmod, "kernel_product", counting)
    at_cancel = []

    def cb(ev):
        # iteration 3 is running once iterations 1 and 2 are reported: cancel at its first
        # CG tick
        if ev.kind == "update" and ev.done == 2 and at_cancel == [] and seen[0]:
            at_cancel.append(len(products))
            return True
        if ev.kind == "update" and ev.done == 2:
            seen[0] = True
        return False

    seen = [False]
    est = BKerNNRegressor(n_particles=6, max_iter=10, kernel_solver="cg", cg_tol=1e-12,
                          random_state=0)
    with pytest.raises(FitCancelled) as info:
        est.fit(X, y, callback=Progress(cb, min_interval=0.0))
    assert info.value.partial_model and est.cancelled_ and est.n_iter_ == 2
    assert len(products) == at_cancel[0]          # no product after the cancelling tick
    assert len(est.history_["objective"]) == 3
    assert np.all(np.isfinite(est.predict(X)))
