"""Randomized-search cross-validation: folds, the shared-feature fast path, refit."""

import numpy as np
import pytest

import rwtool as rw
from rwtool.model_selection._search import (Choice, LogUniform, RandomizedSearchCV, Uniform,
                                            default_space, kfold_indices, select_reg)


def test_kfold_partitions_and_stratifies(rng):
    y = np.array([0] * 30 + [1] * 10)
    folds = kfold_indices(y, 5, stratified=True, random_state=0)
    seen = np.concatenate([va for _, va in folds])
    assert sorted(seen) == list(range(40))
    for tr, va in folds:
        assert set(tr).isdisjoint(va) and len(tr) + len(va) == 40
        assert (y[va] == 1).sum() == 2  # every fold keeps the 3:1 class ratio
    with pytest.raises(ValueError, match="fewer than cv=5"):
        kfold_indices(np.array([0] * 10 + [1] * 3), 5, stratified=True)
    with pytest.raises(ValueError, match="at least 6 rows"):
        kfold_indices(np.arange(4), 6, stratified=False)


def test_distributions_stay_in_range():
    rng = np.random.default_rng(0)
    lu = [LogUniform(1e-3, 10).rvs(rng) for _ in range(2000)]
    assert min(lu) >= 1e-3 and max(lu) <= 10
    assert abs(np.mean(np.log10(lu)) - 1.0 * (-3 + 1) / 2) < 0.1  # uniform in log10 on [-3, 1]
    assert all(0.2 <= Uniform(0.2, 0.3).rvs(rng) <= 0.3 for _ in range(100))
    assert {Choice(["a", "b"]).rvs(rng) for _ in range(50)} == {"a", "b"}


def test_default_spaces_follow_the_paper():
    assert set(default_space(rw.RWClassifier(instantiation="rwrelu"))) == {"sigma", "reg", "theta"}
    assert set(default_space(rw.RWRegressor(instantiation="rwexprelu"))) == {"sigma", "reg", "kappa"}
    assert default_space(rw.RWRegressor(instantiation="rwexprelu"))["kappa"].high == 100
    assert set(default_space(rw.RWClassifier(instantiation="rwstumps"))) == {"sigma", "reg", "gamma"}
    assert set(default_space(rw.RKSClassifier())) == {"sigma", "reg"}
    lam2 = default_space(rw.RKSRegressor())["reg"]
    assert (lam2.low, lam2.high) == (1e-5, 1e-3)  # Table 14's lam2 is rwtool's reg for RKS


def test_rks_reg_is_the_papers_lam2(regression_data):
    """Oracle for the Table 14 mapping: seed 003 eq. (24) solved densely on the raw phi."""
    X, y = regression_data
    lam2, T = 3e-4, 60
    est = rw.RKSRegressor(base="relu", n_features=T, reg=lam2, random_state=0).fit(X, y)
    ys = (y - y.mean()) / y.std()
    Phi = est.feature_matrix(X) * np.sqrt(T)  # phi(w_t, x_i), without rwtool's 1/sqrt(T)
    m = len(X)
    # argmin_a (1/m) ||ys - Phi a / T||^2 + (lam2 / T) ||a||^2
    a = np.linalg.solve(Phi.T @ Phi / T + m * lam2 * np.eye(T), Phi.T @ ys)
    np.testing.assert_allclose(est.predict(X), (Phi @ a / T) * y.std() + y.mean(), rtol=1e-6,
                               atol=1e-8)


@pytest.mark.slow
@pytest.mark.parametrize("cls,kind", [(rw.RWClassifier, "clf"), (rw.RWRegressor, "reg"),
                                      (rw.RKSRegressor, "reg")])
def test_fast_path_equals_fitting_every_fold(cls, kind, binary_data, regression_data):
    X, y = binary_data if kind == "clf" else regression_data
    # without standardisation the fast path (shared normal equations) and plain refits per fold
    # compute exactly the same models
    est = cls(n_features=40, standardize=False, random_state=3)
    space = {"reg": LogUniform(1e-8, 1e-1), "sigma": [0.5, 1.0]}
    # 24 draws over two sigmas: groups of at least 10 reg values take the eigen-route (RegPath)
    fast = RandomizedSearchCV(est, space, n_iter=24, cv=3, random_state=0, refit=False).fit(X, y)
    slow = RandomizedSearchCV(est, space, n_iter=24, cv=3, random_state=0, refit=False,
                              scoring=lambda e, Xv, yv: e.score(Xv, yv)).fit(X, y)
    np.testing.assert_allclose(fast.cv_results_["mean_test_score"],
                               slow.cv_results_["mean_test_score"], rtol=1e-7, atol=1e-9)
    assert fast.best_params_ == slow.best_params_


def test_reg_search_featurises_the_data_twice(monkeypatch, regression_data):
    X, y = regression_data
    rows = []
    from rwtool.features._rkhs import _RWDot
    # the closed form's passes: for the features alone, and fused with Phi a (linear_predict)
    for method in ("_closed_form_into", "_closed_form_predict"):
        def counting(self, Xb, *args, original=getattr(_RWDot, method)):
            rows.append(len(Xb))
            return original(self, Xb, *args)

        monkeypatch.setattr(_RWDot, method, counting)
    search = RandomizedSearchCV(rw.RWRegressor(n_features=30, random_state=0),
                                {"reg": LogUniform(1e-10, 1e-2)}, n_iter=12, cv=5,
                                random_state=0, refit=False).fit(X, y)
    assert sum(rows) == 2 * len(X)  # 12 reg values x 5 folds: still two feature passes
    assert len(search.cv_results_["params"]) == 12


def test_search_refits_the_best_and_ranks(binary_data):
    X, y = binary_data
    search = RandomizedSearchCV(rw.RWClassifier(instantiation="rwrelu", n_features=60),
                                n_iter=8, cv=3, random_state=1).fit(X, y)
    table = search.results_table()
    assert table[0]["mean_test_score"] == search.best_score_
    assert [r["rank"] for r in table] == list(range(1, 9))
    assert search.best_estimator_.get_params()["reg"] == search.best_params_["reg"]
    assert search.score(X, y) >= search.best_score_ - 0.1
    same = RandomizedSearchCV(rw.RWClassifier(instantiation="rwrelu", n_features=60),
                              n_iter=8, cv=3, random_state=1).fit(X, y)
    np.testing.assert_array_equal(same.cv_results_["mean_test_score"],
                                  search.cv_results_["mean_test_score"])


@pytest.mark.parametrize("cls,kind", [(rw.RWClassifier, "clf"), (rw.RKSRegressor, "reg")])
def test_weighted_search_scores_each_fold_by_its_weighted_fit(cls, kind, binary_data,
                                                             regression_data):
    from rwtool.model_selection._search import _draw
    X, y = binary_data if kind == "clf" else regression_data
    w = np.random.default_rng(5).integers(0, 4, len(y)).astype(float)
    est = cls(n_features=30, random_state=3)
    space = {"reg": LogUniform(1e-6, 1e-1), "sigma": [0.5, 1.0]}
    search = RandomizedSearchCV(est, space, n_iter=4, cv=3, random_state=7).fit(
        X, y, sample_weight=w)
    # the oracle: the same draws and folds, each fold fitted on its rows' weights and scored
    # weighting its validation rows (same process, same operations: equal to rounding)
    rng = np.random.default_rng(7)
    candidates = [_draw(space, rng) for _ in range(4)]
    folds = kfold_indices(y, 3, kind == "clf", rng)
    assert search.cv_results_["params"] == candidates
    for i, c in enumerate(candidates):
        for k, (tr, va) in enumerate(folds):
            m = cls(n_features=30, random_state=3, **c).fit(X[tr], y[tr], sample_weight=w[tr])
            assert search.cv_results_[f"split{k}_test_score"][i] == pytest.approx(
                m.score(X[va], y[va], w[va]), rel=1e-12, abs=1e-12)
    ref = cls(n_features=30, random_state=3, **search.best_params_).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(search.best_estimator_.coef_, ref.coef_, rtol=1e-12, atol=1e-14)
    # unit weights: the refitting route scores as the shared-sums route does (different
    # arithmetic, same models: the fast-path test's tolerance; unstandardised, since the shared
    # route standardises once with all rows' statistics)
    est = cls(n_features=30, standardize=False, random_state=3)
    ones = RandomizedSearchCV(est, space, n_iter=4, cv=3, random_state=7, refit=False).fit(
        X, y, sample_weight=np.ones(len(y)))
    plain = RandomizedSearchCV(est, space, n_iter=4, cv=3, random_state=7, refit=False).fit(X, y)
    np.testing.assert_allclose(ones.cv_results_["mean_test_score"],
                               plain.cv_results_["mean_test_score"], rtol=1e-7, atol=1e-9)
    with pytest.raises(ValueError, match="one weight per row"):
        RandomizedSearchCV(est, space, n_iter=2, cv=3).fit(X, y, sample_weight=w[:-1])


def test_bad_space_is_named(binary_data):
    X, y = binary_data
    with pytest.raises(ValueError, match="does not take"):
        RandomizedSearchCV(rw.RWClassifier(), {"lam": [1.0]}, n_iter=1).fit(X, y)


def test_auto_reg_is_the_default_and_refits_at_its_choice(regression_data, binary_data):
    """reg=None is reg="auto" for the exact least-squares solver, and the model is the fixed-reg
    fit at the chosen value (the brute-force oracle of the choice:
    tests/solvers/test_sufficient.py)."""
    X, y = regression_data
    est = rw.RWRegressor(n_features=60, reg="auto", random_state=2).fit(X, y)
    # coarse to fine: the choice and its neighbours on the decade grid are scored
    scored = np.log10(est.reg_search_["reg"])
    assert est.reg_ in est.reg_search_["reg"]
    assert np.isclose(scored, np.log10(est.reg_) - 1).any() or est.reg_ <= 1e-12
    assert np.isclose(scored, np.log10(est.reg_) + 1).any()
    dflt = rw.RWRegressor(n_features=60, random_state=2).fit(X, y)
    assert dflt.reg is None and dflt.reg_ == est.reg_
    np.testing.assert_array_equal(dflt.coef_, est.coef_)
    ref = rw.RWRegressor(n_features=60, reg=est.reg_, random_state=2).fit(X, y)
    np.testing.assert_allclose(est.predict(X), ref.predict(X), rtol=1e-7, atol=1e-9)
    # an iterative solver goes through plain refits per fold
    Xb, yb = binary_data
    clf = rw.RKSClassifier(n_features=30, solver="sgd", reg="auto", random_state=0).fit(Xb, yb)
    assert clf.reg_ in clf.reg_search_["reg"]
    with pytest.raises(ValueError, match="'auto'"):
        rw.RWRegressor(reg="best").fit(X, y)


def test_auto_reg_grid_grows_toward_the_side_it_ends_on(regression_data):
    """A best value at the large end (strong noise: the model wants a large reg) extends the
    grid upwards by a decade; a best value inside the grid, or a plateau, adds nothing."""
    from rwtool.solvers._sufficient import extension
    regs = [1e-3, 1e-2, 1e-1]
    assert extension(regs, [0.1, 0.2, 0.3]) == pytest.approx(1.0)
    assert extension(regs, [0.1, 0.2, 0.3], upper=0.5) is None      # OSD needs reg < 1
    assert extension(regs, [0.3, 0.2, 0.1]) == pytest.approx(1e-4)
    assert extension(regs, [0.1, 0.3, 0.2]) is None
    assert extension(regs, [0.3 + 1e-9, 0.3, 0.2]) is None         # a plateau at the small end
    assert extension(regs, [-0.1, -0.1 - 1e-9, -0.2], ceiling=0.0) is None   # ... of an MSE
    X, y = regression_data
    # pure noise: large regs win (on average: this draw, on the content-hashed folds, clearly;
    # draw 2 ties 1e-2 with 1e-1 to 4 digits there)
    noisy = np.random.default_rng(3).standard_normal(len(y))
    est = rw.RWRegressor(n_features=60, reg="auto", random_state=0).fit(X, noisy)
    assert max(est.reg_search_["reg"]) > 0.1 and est.reg_ > 0.1


@pytest.mark.parametrize("with_gram", [True, False])
def test_reg_path_matches_one_solve_per_reg(with_gram, rng):
    """RegPath's eigen-route equals a dense solve of (A + m reg R + m eps I) a = B per reg."""
    from rwtool.solvers._ridge import RegPath
    m, T, q = 300, 40, 2
    Phi = rng.standard_normal((m, T))
    B = Phi.T @ rng.standard_normal((m, q))
    A = Phi.T @ Phi
    W = rng.standard_normal((T, 3))
    G = np.exp(-0.5 * ((W[:, None, :] - W[None, :, :]) ** 2).sum(-1)) if with_gram else None
    eps = 1e-6
    Linv = RegPath.for_gram(G) if with_gram else None
    assert (Linv is not None) == with_gram
    path = RegPath(A, B, m, eps, Linv)
    R = G if with_gram else np.eye(T)
    for reg in (1e-8, 1e-4, 1e-1):
        dense = np.linalg.solve(A + m * reg * R + m * eps * np.eye(T), B)
        np.testing.assert_allclose(path.solve(reg), dense, rtol=1e-7, atol=1e-10)


def test_reg_path_refuses_an_ill_conditioned_gram():
    from rwtool.solvers._ridge import RegPath
    v = np.ones((5, 1))
    assert RegPath.for_gram(v @ v.T + 1e-12 * np.eye(5)) is None  # rank one plus a hair


def test_reg_search_survives_an_indefinite_path(regression_data):
    """eps = 0, more features than rows and reg down to 1e-14: rounding can make the reduced
    system indefinite; the search falls back to the jittered Cholesky route instead of failing."""
    X, y = regression_data
    X, y = X[:60], y[:60]
    est = rw.RWRegressor(instantiation="rwrelu", n_features=150, eps=0.0, random_state=0)
    values = np.logspace(-14, -2, 13)
    best, table = select_reg(est, X, y, values, cv=3)
    assert best in values and np.all(np.isfinite(table["mean_score"]))


def test_reg_path_check_pairs_each_reg_with_its_own_solution(monkeypatch, regression_data):
    """The residual check gets the solution of the reg it is told, whatever the draw order."""
    from rwtool.solvers import _ridge as ridge
    checked = []
    original = ridge.RegPath.accurate

    def spy(self, A, B, R, reg, coef):
        checked.append(np.allclose(coef, self.solve(reg)))
        return original(self, A, B, R, reg, coef)
    monkeypatch.setattr(ridge.RegPath, "accurate", spy)
    X, y = regression_data
    values = np.logspace(-2, -12, 11)          # decreasing: the smallest comes last
    select_reg(rw.RWRegressor(instantiation="rwrelu", n_features=40, random_state=0), X, y,
               values, cv=3)
    assert checked and all(checked)
