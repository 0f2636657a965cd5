"""reg="auto" of the greedy multi-kernel learners (rwtool.solvers._greedy_reg) and the
regressor's defaults (issue 12: every method learns well with its defaults)."""

import numpy as np
import pytest

from rwtool.estimators._greedy_mk import GreedyMKClassifier, GreedyMKRegressor
from rwtool.features._taylor import TaylorMultiKernelFeatures
from rwtool.solvers._greedy import DictionaryView, mfga
from rwtool.solvers._greedy_reg import AUTO_REG, choose_reg, fold_splits


def _noisy(rng, n, d=10, noise=1.0):
    X = rng.standard_normal((n, d))
    return X, X[:, 0] + 0.5 * np.sin(2 * X[:, 1]) + noise * rng.standard_normal(n)


def test_fold_splits_partition_the_rows():
    folds = fold_splits(10, seed=3)
    held = np.concatenate([v for _, v in folds])
    assert sorted(held.tolist()) == list(range(10))
    for fit_rows, val_rows in folds:
        assert not set(fit_rows) & set(val_rows) and len(fit_rows) + len(val_rows) == 10
    assert len(fold_splits(2, seed=0)) == 2
    (fit_rows, val_rows), = fold_splits(8000, seed=3)   # large N: one 1/4 holdout
    assert len(val_rows) == 2000 and len(np.union1d(fit_rows, val_rows)) == 8000
    with pytest.raises(ValueError, match="pass a number for reg"):
        fold_splits(1, seed=0)


def test_choose_reg_extends_past_the_end_and_breaks_ties_upwards():
    # the loss keeps falling below the grid: the grid grows until it turns
    reg, table = choose_reg(lambda lam: (np.log10(lam) + 8.0) ** 2, AUTO_REG)
    assert reg == 1e-8 and min(table["reg"]) == 1e-9
    reg, _ = choose_reg(lambda lam: 1.0 if lam > 1e-2 else 2.0, AUTO_REG)
    assert reg == 1e3                            # tied: the largest, grown up to REG_LIMITS
    reg, _ = choose_reg(lambda lam: np.nan if lam < 1e-3 else lam, AUTO_REG)
    assert reg == 1e-3                           # a failed candidate is never chosen


def test_auto_equals_brute_force_cross_validation(rng):
    X, y = _noisy(rng, 120)
    est = GreedyMKRegressor(n_features=15, random_state=0).fit(X, y)
    search = est.reg_search_
    Xp = est.x_scaler_.transform(X)
    # Independently: every candidate fitted by the public estimator on each fold's fit rows
    # (explicit reg, the same bandwidth and dictionary, inputs standardised once), scored by the
    # mean squared error on the held-out rows in the units of y.
    brute = []
    for lam in search["reg"]:
        errs = []
        for fit_rows, val_rows in fold_splits(len(X), search["seed"]):
            m = GreedyMKRegressor(n_features=15, reg=lam, sigma=est.sigma_, standardize=False,
                                  gauss_order=est.solver_info_["gauss_order"]).fit(
                Xp[fit_rows], y[fit_rows])
            errs.append(np.mean((m.predict(Xp[val_rows]) - y[val_rows]) ** 2))
        brute.append(np.mean(errs))
    half = est.y_scaler_.scale[0]                # the search scores the [-1, 1]-coded targets
    np.testing.assert_allclose(np.array(search["val_loss"]) * half ** 2, brute, rtol=1e-6)
    assert est.reg_ == search["reg"][int(np.argmin(brute))]
    assert search["folds"] == 4 and search["reg"][0] <= 1e-6 and search["reg"][-1] >= 1.0
    assert "seconds" in search                   # fit_time_ is the fit at the chosen reg


def test_auto_then_refit_equals_the_explicit_fit_at_the_chosen_reg(rng):
    X, y = _noisy(rng, 100)
    auto = GreedyMKRegressor(n_features=12, random_state=1).fit(X, y)
    fixed = GreedyMKRegressor(n_features=12, reg=auto.reg_, random_state=1).fit(X, y)
    np.testing.assert_array_equal(auto.support_, fixed.support_)
    np.testing.assert_allclose(auto.coef_, fixed.coef_, rtol=1e-12, atol=1e-14)


@pytest.mark.slow
def test_default_beats_the_old_default_where_a_large_reg_is_needed():
    # Few rows, many candidates, a noisy target: reg = 1e-4 without intercept (the old
    # default) interpolates noise with 100 features.
    old, new, models = [], [], []
    for seed in range(3):
        r = np.random.default_rng(seed)
        X, y = _noisy(r, 80, noise=1.5)
        Xt, yt = _noisy(r, 2000, noise=1.5)
        m_new = GreedyMKRegressor(random_state=seed).fit(X, y)
        m_old = GreedyMKRegressor(reg=1e-4, fit_intercept=False, random_state=seed).fit(X, y)
        new.append(np.mean((m_new.predict(Xt) - yt) ** 2))
        old.append(np.mean((m_old.predict(Xt) - yt) ** 2))
        models.append(m_new)
    assert np.mean(new) < 0.8 * np.mean(old)
    assert min(m.reg_ for m in models) >= 1e-3


def test_explicit_reg_is_the_papers_model_unchanged(rng):
    X, y = _noisy(rng, 90)
    est = GreedyMKRegressor(n_features=10, reg=1e-3, fit_intercept=False, random_state=0)
    est.fit(X, y)
    assert est.reg_ == 1e-3 and est.reg_search_ is None
    # the same path computed by hand: standardised X, [-1, 1]-scaled y, MFGA at lam = 1e-3
    Xp = (X - X.mean(0)) / X.std(0)
    Y = ((y - (y.max() + y.min()) / 2) / ((y.max() - y.min()) / 2))[:, None]
    fmap = TaylorMultiKernelFeatures(sigma=est.sigma_, gauss_order=est.solver_info_["gauss_order"],
                                     include_linear=False).fit(Xp)
    support, coef, intercept, _ = mfga(DictionaryView(fmap, Xp), Y, "squared", 1e-3, 10)
    np.testing.assert_array_equal(est.support_, support)
    np.testing.assert_allclose(est.coef_, coef, rtol=1e-10)
    assert np.all(est.intercept_ == 0)
    # the classifier keeps the paper's fixed lam and no intercept by default
    params = GreedyMKClassifier().get_params()
    assert params["reg"] == 1e-4 and params["fit_intercept"] is False
    assert GreedyMKRegressor().get_params()["reg"] == "auto"


@pytest.mark.parametrize("selector", ["rks", "eerf"])
def test_auto_for_random_selectors_and_the_classifier(rng, selector):
    X, y = _noisy(rng, 150)
    reg = GreedyMKRegressor(selector=selector, n_features=30, n_candidates=60,
                            random_state=0).fit(X, y)
    assert reg.reg_ in reg.reg_search_["reg"]
    clf = GreedyMKClassifier(selector=selector, n_features=30, n_candidates=60, reg="auto",
                             random_state=0).fit(X, y > 0)
    losses = clf.reg_search_["val_loss"]
    assert 0.0 <= min(losses) <= 0.5
    assert clf.score(X, y > 0) > 0.7


def test_auto_classifier_mfga_scores_held_out_accuracy(rng):
    X, y = _noisy(rng, 160)
    labels = np.digitize(y, [-0.5, 0.5])         # three classes
    clf = GreedyMKClassifier(n_features=10, reg="auto", random_state=0).fit(X, labels)
    search = clf.reg_search_
    assert clf.reg_ in search["reg"] and all(0.0 <= v <= 1.0 for v in search["val_loss"])
    with pytest.raises(ValueError, match=r"reg must be a number in \[0, inf\) or 'auto', got 'best'"):
        GreedyMKRegressor(reg="best").fit(X, y)


def test_search_reports_progress_and_can_be_cancelled(rng):
    from rwtool.progress import FitCancelled
    from sklearn.exceptions import NotFittedError
    X, y = _noisy(rng, 120)
    events = []
    GreedyMKRegressor(n_features=10, random_state=0).fit(X, y, callback=events.append)
    search = [e for e in events if e.stage == "search"]
    assert search[0].kind == "start" and search[-1].kind == "end"
    assert "best_loss" in search[-1].metrics or any("best_loss" in e.metrics for e in search)
    # sigma="auto" reports its bandwidth search first (a long phase on large files)
    assert [e.stage for e in events if e.kind == "start"] == ["bandwidth", "search",
                                                               "greedy path"]

    calls = []

    def cancel_in_the_first_path(event):
        calls.append(event)
        return event.stage == "search" and event.kind == "update"

    # a fixed sigma: no bandwidth stage, whose updates would hold back (rate limit) the
    # search's first one
    est = GreedyMKRegressor(n_features=10, sigma=1.0, random_state=0)
    with pytest.raises(FitCancelled):
        est.fit(X, y, callback=cancel_in_the_first_path)
    assert calls[-1].done == 0                   # within the first candidate's paths
    with pytest.raises(NotFittedError):
        est.predict(X)
