"""Pruning (000 Algorithm 5): the Lasso on G equals scikit-learn's on (U, U a); ACCEPT holds."""

import numpy as np
import pytest
from scipy.linalg import cholesky
from sklearn.linear_model import Lasso

import rwtool as rw
from rwtool.features import KitchenRelu, RWSign, RWStumps
from rwtool.solvers._prune import make_accept, prune_weights, subset_map, subset_scale


@pytest.mark.parametrize("Map", [RWSign, RWStumps, KitchenRelu])
def test_subset_map_selects_columns(Map):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 4))
    fmap = Map(n_features=25, random_state=0).fit(X)
    keep = np.array([3, 0, 17, 24])
    sub = subset_map(fmap, keep)
    assert type(sub) is type(fmap) and sub.n_features == 4
    np.testing.assert_allclose(sub.transform(X) * subset_scale(fmap, 4),
                               fmap.transform(X)[:, keep], rtol=1e-12, atol=1e-15)
    if fmap.has_gram:
        np.testing.assert_allclose(sub.gram(), fmap.gram()[np.ix_(keep, keep)], atol=1e-15)
    with pytest.raises(ValueError):
        subset_map(fmap, [])


def test_pruning_lasso_is_sklearn_on_the_cholesky_factor():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 3))
    fmap = RWSign(n_features=40, random_state=0).fit(X)
    G = fmap.gram() + 1e-8 * np.eye(40)
    a = rng.standard_normal((40, 1))
    U = cholesky(G, lower=False)                      # G = U^T U
    lam = 1e-3
    seen = {}

    def accept(beta):
        seen["beta"] = beta.copy()
        return False, {"criterion": 0.0}

    prune_weights(a, G, accept, lam=lam, tol=1e-13, max_iter=100000)
    ref = Lasso(alpha=lam, fit_intercept=False, tol=1e-14, max_iter=500000).fit(U, U @ a[:, 0])
    obj = lambda b: np.sum((U @ (a[:, 0] - b)) ** 2) / (2 * 40) + lam * np.abs(b).sum()  # noqa
    assert obj(seen["beta"][:, 0]) == pytest.approx(obj(ref.coef_), rel=1e-9)
    np.testing.assert_allclose(seen["beta"][:, 0], ref.coef_, atol=1e-5)


def _criterion(kind, a, b, G, theta, Phi, Y, m, delta=0.05):
    """000 eq. 63-66 recomputed directly (squared loss (f - y)^2 / 2)."""
    na, nb = np.sqrt(a[:, 0] @ G @ a[:, 0]), np.sqrt(b[:, 0] @ G @ b[:, 0])
    C = np.sqrt((a - b)[:, 0] @ G @ (a - b)[:, 0])
    rho = theta * max(na, nb) + 1.0
    La = np.mean((Phi @ a - Y) ** 2) / 2
    Lb = np.mean((Phi @ b - Y) ** 2) / 2
    ea = np.mean(np.sign(Phi @ a) != Y)
    eb = np.mean(np.sign(Phi @ b) != Y)
    return {"bound": rho * theta * C,
            "probabilistic": Lb - La + rho * theta * C / np.sqrt(m) * (
                2 + np.sqrt(2 * np.log(1 / delta))),
            "loss": Lb - La, "error": eb - ea}[kind]


@pytest.mark.parametrize("kind,eps", [("bound", 5.0), ("probabilistic", 2.0), ("loss", 0.01),
                                      ("error", 0.01)])
def test_estimator_prune_never_breaks_accept(kind, eps, binary_data):
    X, y = binary_data
    clf = rw.RWClassifier(n_features=150, reg=1e-4, random_state=0).fit(X, y)
    pruned = clf.prune(eps=eps, accept=kind, X=X, y=y, lam=1e-7)
    rep = pruned.prune_report_
    Phi = clf.feature_matrix(X)
    Y = np.where(y == clf.classes_[1], 1.0, -1.0)[:, None]
    G = clf.feature_map_.gram()
    theta = clf.feature_map_.theta_
    # rebuild beta on the original centres from the kept ones
    beta = np.zeros_like(clf.coef_)
    W, Wk = clf.feature_map_.W_, pruned.feature_map_.W_
    idx = [int(np.flatnonzero(np.all(W == w, axis=1))[0]) for w in Wk]
    beta[idx] = pruned.coef_
    if rep["lam"] is not None:
        assert _criterion(kind, clf.coef_, beta, G, theta, Phi, Y, len(X)) < eps
    # every step the algorithm accepted satisfied the rule, and it stopped at the first refusal
    flags = [s["accepted"] for s in rep["steps"]]
    assert all(flags[:-1]) and (not flags[-1] or rep["steps"][-1]["nnz"] == 0)
    assert rep["n_after"] == pruned.coef_.shape[0] <= 150
    assert rep["pruned_percent"] == pytest.approx(100 * (1 - rep["n_after"] / 150))
    np.testing.assert_allclose(pruned.decision_function(X), Phi @ beta[:, 0], atol=1e-10)
    if kind == "error":
        assert rep["error_after"] - rep["error_before"] < eps
        assert rep["n_after"] < 150


def test_prune_kitchen_sinks_and_regressor(regression_data):
    X, y = regression_data
    est = rw.RKSRegressor(base="sign", n_features=100, reg=1e-4, random_state=0).fit(X, y)
    pruned = est.prune(eps=0.02, accept="loss", X=X, y=y)
    assert pruned.prune_report_["n_after"] < 100
    assert pruned.prune_report_["loss_after"] - pruned.prune_report_["loss_before"] < 0.02
    ys = est.y_scaler_.transform(y[:, None])
    loss_after = np.mean((est.y_scaler_.transform(pruned.predict(X)[:, None]) - ys) ** 2) / 2
    assert loss_after == pytest.approx(pruned.prune_report_["loss_after"], rel=1e-9)
    with pytest.raises(ValueError, match="classifier"):
        est.prune(accept="error", X=X, y=y)
    with pytest.raises(ValueError, match="pass X and y"):
        est.prune(accept="loss")


def test_make_accept_validates():
    with pytest.raises(ValueError, match="accept must be"):
        make_accept("nope", 0.1, np.zeros((2, 1)), np.eye(2), 1.0)


def test_paper_schedule_starts_at_1e_minus_10_with_at_most_10_solves(binary_data):
    """The authors' code of seed 000: lamL = 1e-10, 1e-9, ..., at most 10 Lasso solves."""
    X, y = binary_data
    est = rw.RWClassifier(n_features=60, reg=1e-6, random_state=0).fit(X, y)
    pr = est.prune(eps=0.05, accept="error", X=X, y=y, schedule="paper")
    steps = pr.prune_report_["steps"]
    assert 1 <= len(steps) <= 10 and pr.prune_report_["schedule"] == "paper"
    np.testing.assert_allclose([s["lam"] for s in steps],
                               1e-10 * 10.0 ** np.arange(len(steps)), rtol=1e-12)
    eq62 = est.prune(eps=0.05, accept="error", X=X, y=y)
    assert eq62.prune_report_["steps"][0]["lam"] != 1e-10
    loose = est.prune(eps=10.0, accept="error", X=X, y=y, schedule="paper", max_steps=40)
    assert len(loose.prune_report_["steps"]) <= 10
    with pytest.raises(ValueError, match="schedule"):
        est.prune(X=X, y=y, schedule="fast")
