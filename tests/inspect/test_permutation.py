"""rwtool.inspect.permutation_importance and input_share (issue 25 item 5).

Oracles: scikit-learn's ``sklearn.inspection.permutation_importance`` on the same fitted model,
rows and seed (bit for bit: both run in this process on the same model and the same shuffles);
the shuffles rebuilt by hand with numpy's RandomState for a group of columns; the stump shares
recomputed stump by stump from the coefficients.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import rwtool as rw
from rwtool.exceptions import FitCancelled, InvalidParameterError
from rwtool.inspect import SCORINGS, input_share, permutation_importance

sk_inspection = pytest.importorskip("sklearn.inspection")

SMALL = {"random_state": 0}
CLASSIFIERS = {
    "rw lstsq": lambda: rw.RWClassifier(n_features=60, **SMALL),
    "rw stumps": lambda: rw.RWClassifier(instantiation="rwstumps", n_features=60, **SMALL),
    "rks stumps": lambda: rw.RKSClassifier(base="stumps", n_features=60, **SMALL),
    "rfsgd": lambda: rw.RFSGDClassifier(n_features=40, n_epochs=1, **SMALL),
    "greedy": lambda: rw.GreedyMKClassifier(n_features=10, **SMALL),
    "bkernn": lambda: rw.BKerNNClassifier(n_particles=8, max_iter=3, **SMALL),
}
REGRESSORS = {
    "rw lstsq": lambda: rw.RWRegressor(n_features=60, **SMALL),
    "rks fourier": lambda: rw.RKSRegressor(base="fourier", n_features=60, **SMALL),
    "greedy": lambda: rw.GreedyMKRegressor(n_features=10, **SMALL),
    "bkernn": lambda: rw.BKerNNRegressor(n_particles=8, max_iter=3, **SMALL),
}


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_classifiers_equal_scikit_learn(name, binary_data):
    X, y = binary_data
    model = CLASSIFIERS[name]().fit(X[:200], y[:200])
    for seed in (0, 11, np.random.RandomState(5)):
        seed2 = seed if not isinstance(seed, np.random.RandomState) else np.random.RandomState(5)
        ours = permutation_importance(model, X[200:], y[200:], n_repeats=3, random_state=seed)
        ref = sk_inspection.permutation_importance(model, X[200:], y[200:], n_repeats=3,
                                                   random_state=seed2)
        # the same shuffles of the same rows through the same model in this process
        np.testing.assert_array_equal(ours.importances, ref.importances)
        np.testing.assert_array_equal(ours.importances_mean, ref.importances_mean)
        np.testing.assert_array_equal(ours.importances_std, ref.importances_std)
    assert ours.scoring == "score" and ours.baseline_score == model.score(X[200:], y[200:])


@pytest.mark.parametrize("name", REGRESSORS)
def test_regressors_equal_scikit_learn_for_every_scoring(name, regression_data):
    X, y = regression_data
    model = REGRESSORS[name]().fit(X[:200], y[:200])
    for scoring in (None, "r2", "neg_mean_squared_error", "neg_root_mean_squared_error",
                    "neg_mean_absolute_error"):
        ours = permutation_importance(model, X[200:], y[200:], scoring=scoring, n_repeats=2,
                                      random_state=3)
        ref = sk_inspection.permutation_importance(model, X[200:], y[200:], scoring=scoring,
                                                   n_repeats=2, random_state=3)
        # same predictions; the metrics are sums over 100 rows in a possibly different order:
        # a few ulps of values of order 1
        np.testing.assert_allclose(ours.importances, ref.importances, rtol=0, atol=1e-12)


def test_balanced_accuracy_and_multiclass_equal_scikit_learn(rng):
    X = rng.standard_normal((240, 3))
    y = np.digitize(X[:, 0] + 0.3 * X[:, 1], [-0.5, 0.5])       # 3 classes
    model = rw.RWClassifier(n_features=80, random_state=0).fit(X[:160], y[:160])
    for scoring in ("accuracy", "balanced_accuracy"):
        ours = permutation_importance(model, X[160:], y[160:], scoring=scoring,
                                      random_state=1)
        ref = sk_inspection.permutation_importance(model, X[160:], y[160:], scoring=scoring,
                                                   random_state=1)
        np.testing.assert_allclose(ours.importances, ref.importances, rtol=0, atol=1e-12)


def test_global_random_state_draws_as_scikit_learn(binary_data):
    X, y = binary_data
    model = rw.RWClassifier(n_features=40, random_state=0).fit(X, y)
    np.random.seed(123)
    ours = permutation_importance(model, X, y, n_repeats=2)
    np.random.seed(123)
    ref = sk_inspection.permutation_importance(model, X, y, n_repeats=2)
    np.testing.assert_array_equal(ours.importances, ref.importances)


def test_a_group_is_shuffled_together_with_scikit_learns_permutations(rng):
    # one-hot columns 1..3 of one categorical input: every shuffled row keeps one category
    n = 150
    cat = rng.integers(0, 3, n)
    X = np.column_stack([rng.standard_normal(n), np.eye(3)[cat], rng.standard_normal(n)])
    y = X[:, 0] + np.array([0.0, 1.0, -1.0])[cat]
    model = rw.RWRegressor(n_features=60, random_state=0).fit(X, y)
    seen = []

    def scoring(m, Xs, ys):
        seen.append(Xs.copy())
        return m.score(Xs, ys)
    res = permutation_importance(model, X, y, scoring=scoring, n_repeats=3, random_state=4,
                                 groups=[[0], [1, 2, 3], [4]])
    assert res.importances.shape == (3, 3) and res.groups == [[0], [1, 2, 3], [4]]
    # the oracle: scikit-learn's seed, a fresh RandomState per group, cumulative shuffles
    seed = np.random.RandomState(4).randint(np.iinfo(np.int32).max + 1)
    r = np.random.RandomState(seed)
    order, col = np.arange(n), X[:, 1:4].copy()
    base = model.score(X, y)
    for k in range(3):
        r.shuffle(order)
        col = col[order]
        Xs = X.copy()
        Xs[:, 1:4] = col
        np.testing.assert_array_equal(seen[1 + 3 + k], Xs)       # baseline, group 0, group 1
        assert res.importances[1, k] == base - model.score(Xs, y)
        assert np.all(seen[1 + 3 + k][:, 1:4].sum(axis=1) == 1)


def test_stump_share_is_the_coefficient_mass_per_input(binary_data):
    X, y = binary_data
    for model in (rw.RWClassifier(instantiation="rwstumps", n_features=50, random_state=0),
                  rw.RKSClassifier(base="stumps", n_features=50, random_state=0)):
        model.fit(X, y)
        share, meaning = input_share(model)
        idx, c = model.feature_map_.idx_, np.atleast_2d(model.coef_.T).T
        mass = np.zeros(X.shape[1])
        for t in range(len(idx)):                       # stump by stump
            if idx[t] < X.shape[1]:
                mass[idx[t]] += np.sqrt(np.sum(c[t] ** 2))
        np.testing.assert_allclose(share, mass / mass.sum(), rtol=1e-12)
        assert "stumps" in meaning
        res = permutation_importance(model, X, y, n_repeats=1, random_state=0)
        np.testing.assert_array_equal(res.share, share)
        assert res.share_meaning == meaning


def test_bkernn_share_is_its_variable_importance_and_others_have_none(regression_data):
    X, y = regression_data
    model = rw.BKerNNRegressor(n_particles=8, max_iter=3, random_state=0).fit(X, y)
    share, _ = input_share(model)
    np.testing.assert_array_equal(share, model.variable_importance())
    assert input_share(rw.RWRegressor(n_features=30, random_state=0).fit(X, y)) is None
    res = permutation_importance(rw.RWRegressor(n_features=30, random_state=0).fit(X, y), X, y,
                                 n_repeats=1)
    assert res.share is None


def test_progress_counts_every_score_and_cancel_stops_at_the_next(binary_data):
    X, y = binary_data
    model = rw.RWClassifier(n_features=40, random_state=0).fit(X, y)
    events = []
    permutation_importance(model, X, y, n_repeats=2, callback=lambda e: events.append(e))
    assert events[0].kind == "start" and events[0].stage == "importance"
    assert events[0].total == X.shape[1] * 2
    assert events[-1].kind == "end" and events[-1].done == X.shape[1] * 2
    calls = []

    def scoring(m, Xs, ys):
        calls.append(1)
        return m.score(Xs, ys)
    with pytest.raises(FitCancelled, match="importance"):
        permutation_importance(model, X, y, n_repeats=5, scoring=scoring,
                               callback=lambda e: e.kind == "update")
    # the baseline and the first shuffled score, then the first update cancels
    assert len(calls) == 2


def test_bad_arguments_say_what_to_pass(binary_data):
    X, y = binary_data
    model = rw.RWClassifier(n_features=20, random_state=0).fit(X, y)
    with pytest.raises(InvalidParameterError, match="n_repeats"):
        permutation_importance(model, X, y, n_repeats=0)
    with pytest.raises(InvalidParameterError, match="'f1' is not one of"):
        permutation_importance(model, X, y, scoring="f1")
    with pytest.raises(InvalidParameterError, match="is a classifier: use one of accuracy"):
        permutation_importance(model, X, y, scoring="r2")
    with pytest.raises(InvalidParameterError, match="pass an int seed"):
        permutation_importance(model, X, y, random_state=np.random.default_rng(0))
    with pytest.raises(ValueError, match="one target value per row"):
        permutation_importance(model, X, y[:-1])
    with pytest.raises(InvalidParameterError, match="groups"):
        permutation_importance(model, X, y, groups=[[0], [9]])
    assert set(SCORINGS) >= {"accuracy", "r2", "neg_mean_squared_error"}


@pytest.mark.slow
def test_runs_without_scikit_learn():
    code = ("import sys; sys.modules['sklearn'] = None\n"
            "import numpy as np, rwtool as rw\n"
            "from rwtool.inspect import permutation_importance\n"
            "X = np.random.default_rng(0).standard_normal((80, 3)); y = X[:, 0] > 0\n"
            "m = rw.RWClassifier(n_features=20, random_state=0).fit(X, y)\n"
            "r = permutation_importance(m, X, y, n_repeats=2, random_state=0)\n"
            "print(r.importances.shape)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(3, 2)"
