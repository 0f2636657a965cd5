"""Optimal Stepsize Descent (000 Algorithm 2): eta is the minimiser, dense reference, descent."""

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

import rwtool as rw
from rwtool.features import RWSign, RWStumps
from rwtool.losses import get_loss
from rwtool.progress import FitCancelled, Progress
from rwtool.solvers._prune import subset_map
from rwtool.solvers._osd import ETA_CAP, optimal_stepsize, osd_fit


def _batch_objective(eta, f, p, y, lam, alpha_u, kuu, norm2, loss):
    """J on the batch at alpha' = (1 - lam) alpha + eta K(u, .)  (000 eq. 45), written out."""
    z = (1 - lam) * f + eta * p
    n2 = (1 - lam) ** 2 * norm2 + 2 * eta * (1 - lam) * alpha_u + eta ** 2 * kuu
    return np.mean(get_loss(loss).value(z, y)) + 0.5 * lam * n2


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("seed", range(4))
def test_eta_is_the_minimiser_by_scan(loss, seed):
    rng = np.random.default_rng(seed)
    b = 30
    f = rng.standard_normal(b) * 2
    p = rng.standard_normal(b) * 0.3
    y = rng.choice([-1.0, 1.0], b)
    lam, alpha_u, kuu, norm2 = 10.0 ** rng.uniform(-4, -1), rng.standard_normal(), 1.0, 4.0
    eta = optimal_stepsize(f, p, y, lam, alpha_u, kuu, loss)
    J = lambda e: _batch_objective(e, f, p, y, lam, alpha_u, kuu, norm2, loss)  # noqa: E731
    grid = eta + np.linspace(-5, 5, 20001) * max(1.0, abs(eta))
    vals = np.array([J(e) for e in grid])
    assert J(eta) <= vals.min() + 1e-12
    # and scipy's bounded scalar minimiser agrees
    res = minimize_scalar(J, bounds=(eta - 10 * max(1, abs(eta)), eta + 10 * max(1, abs(eta))),
                          method="bounded", options={"xatol": 1e-12})
    assert eta == pytest.approx(res.x, abs=1e-5 * max(1, abs(eta)))


def test_separable_logistic_batch_without_regularisation_stays_finite():
    # no minimiser exists: the root finder stops where the loss underflows, or at the cap
    p = np.array([1.0, 2.0, -1.0])
    y = np.array([1.0, 1.0, -1.0])
    eta = optimal_stepsize(np.zeros(3), p, y, 0.0, 0.0, 1.0, "logistic")
    assert 100.0 <= eta <= ETA_CAP
    assert _batch_objective(eta, np.zeros(3), p, y, 0.0, 0.0, 1.0, 0.0, "logistic") < 1e-40


def _reference(fmap, X, y, lam, loss, b, seed, block):
    """Algorithm 2 with the dense Phi and G; eta by scipy's scalar minimiser."""
    Phi, G = fmap.transform(X), fmap.gram()
    T = Phi.shape[1]
    rng = np.random.default_rng(seed)
    batches = []
    for t0 in range(0, T, block):
        K = min(T, t0 + block) - t0
        batches.extend(rng.integers(0, len(X), size=K * b).reshape(K, b))
    a = np.zeros(T)
    for t, rows in enumerate(batches):
        f = Phi[rows] @ a
        alpha_u = G[t] @ a
        norm2 = a @ G @ a
        res = minimize_scalar(lambda e: _batch_objective(e, f, Phi[rows, t], y[rows], lam,
                                                         alpha_u, G[t, t], norm2, loss),
                              bracket=(-1.0, 1.0), method="brent", options={"xtol": 1e-12})
        a = (1 - lam) * a
        a[t] = res.x
    return a


@pytest.mark.parametrize("Map", [RWSign, RWStumps])
@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_matches_dense_reference(Map, loss):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 3))
    y = np.where(X[:, 0] - X[:, 1] ** 2 + 0.5 > 0, 1.0, -1.0)
    fmap = Map(n_features=40, random_state=2).fit(X)
    coef, info = osd_fit(fmap, X, y[:, None], 1e-3, loss=loss, batch_size=25, random_state=5,
                         block=16)
    ref = _reference(fmap, X, y, 1e-3, loss, 25, 5, 16)
    np.testing.assert_allclose(coef[:, 0], ref, rtol=1e-5, atol=1e-7)
    G = fmap.gram()
    assert info["norm"][0] == pytest.approx(np.sqrt(coef[:, 0] @ G @ coef[:, 0]), rel=1e-9)


def test_objective_decreases_in_expectation_over_iterations():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 3))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] - 0.3 * X[:, 2] ** 3 > 0, 1.0, -1.0)[:, None]
    lam = 1e-3
    sq = get_loss("squared")
    J = {t: [] for t in (16, 48, 128)}
    for seed in range(5):
        fmap = RWSign(n_features=128, random_state=seed).fit(X)
        for t in J:
            # alpha_t: the same batches (drawn per block of 16) on the first t centres
            sub = subset_map(fmap, np.arange(t))
            a = osd_fit(sub, X, y, lam, batch_size=100, random_state=seed, block=16)[0][:, 0]
            J[t].append(sq.mean(sub.transform(X) @ a, y[:, 0]) + 0.5 * lam * a @ sub.gram() @ a)
    means = [np.mean(v) for v in J.values()]
    assert means[0] > means[1] > means[2]


def test_estimator_regressor_and_cancel(regression_data):
    X, y = regression_data
    reg = rw.RWRegressor(instantiation="rwstumps", n_features=150, solver="osd", reg=1e-4,
                         batch_size=100, random_state=0).fit(X, y)
    assert reg.score(X, y) > 0.5
    with pytest.raises(ValueError, match="< 1"):
        rw.RWRegressor(solver="osd", reg=1.0).fit(X, y)

    def cb(ev):
        return ev.kind == "update" and ev.stage == "osd" and ev.done >= 64

    est = rw.RWRegressor(instantiation="rwstumps", n_features=150, solver="osd", reg=1e-4,
                         batch_size=100, random_state=0)
    with pytest.raises(FitCancelled) as exc:
        est.fit(X, y, callback=Progress(cb, 0.0))
    assert exc.value.partial_model
    assert est.solver_info_["cancelled"] and est.solver_info_["n_iter"] == 64
    # the partial model is the first 64 iterations of the full run (same batches)
    np.testing.assert_allclose(est.coef_[:64], reg.coef_[:64] / (1 - 1e-4) ** (150 - 64),
                               rtol=1e-9)
    assert np.all(est.coef_[64:] == 0)
    assert np.isfinite(est.predict(X)).all()


def test_common_mode_share_is_the_top_singular_values_share():
    """Against numpy's SVD of the transformed rows (an independent computation)."""
    from rwtool.features import RWRelu
    from rwtool.solvers._osd import common_mode_share
    X = np.random.default_rng(0).standard_normal((300, 40))
    fmap = RWRelu(n_features=200, random_state=0).fit(X)
    sv = np.linalg.svd(fmap.transform(X)[:, :128], compute_uv=False)
    assert common_mode_share(fmap, X, n_rows=1000) == pytest.approx(sv[0] ** 2 / np.sum(sv ** 2),
                                                                    rel=1e-10)


def test_collinear_features_make_osd_warn():
    """RWRelu on digits (65 inputs with the bias): the top singular value carries 99.9% of the
    features' energy and OSD's model is near chance (0.78 test error at T = 500); the fit says
    so. RWSign on the same data (15%) fits without that warning."""
    from sklearn.datasets import load_digits
    X, y = load_digits(return_X_y=True)
    X, y = X[:600], y[:600]
    with pytest.warns(rw.NumericalWarning, match="nearly collinear"):
        rw.RWClassifier(instantiation="rwrelu", solver="osd", n_features=64,
                        random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", rw.NumericalWarning)
        rw.RWClassifier(instantiation="rwsign", solver="osd", n_features=64,
                        random_state=0).fit(X, y)
