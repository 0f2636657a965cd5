"""reg="auto", the default of the exact least-squares estimators: one criterion in every mode.

Oracle: a brute-force cross-validation with dense numpy solves on the same folds (a row's fold
is a hash of its content, rwtool.solvers._sufficient.fold_of of row_keys), over every decade from 1e-18
to 1e3. The Dask and streaming modes are compared with ``fit`` in tests/scale/test_dask.py.
"""

import numpy as np
import pytest

import rwtool as rw
from rwtool.solvers._sufficient import REG_LIMITS, fold_of, row_keys

DECADES = 10.0 ** np.arange(np.log10(REG_LIMITS[0]), np.log10(REG_LIMITS[1]) + 0.5)


def brute_force_scores(est, X, y, regs, n_keep=None):
    """Mean validation score of every reg: each fold solved densely on the other folds'
    features, R^2 averaged over outputs (regressors) or accuracy (classifiers) on the fold,
    averaged over folds. With ``n_keep``, of the model on the first ``n_keep`` features: the
    same centres, the kitchen sinks' columns scaled by 1/sqrt(n_keep) instead of 1/sqrt(T)."""
    Phi = est.feature_matrix(X)
    Y = est._targets_for(y, len(X))
    fmap = est.feature_map_
    R = fmap.gram() if fmap.has_gram else np.eye(Phi.shape[1])
    if n_keep is not None:
        c = 1.0 if fmap.has_gram else np.sqrt(n_keep / Phi.shape[1])
        Phi, R = Phi[:, :n_keep] / c, R[:n_keep, :n_keep]
    T = Phi.shape[1]
    eps = est.eps if isinstance(est, (rw.RWClassifier, rw.RWRegressor)) else 0.0
    folds = fold_of(row_keys(X), 3)
    out = []
    for reg in regs:
        scores = []
        for f in range(3):
            tr, va = folds != f, folds == f
            m = int(tr.sum())
            M = Phi[tr].T @ Phi[tr] + m * reg * R + m * eps * np.eye(T)
            C = np.linalg.solve(M, Phi[tr].T @ Y[tr])
            D = Phi[va] @ C
            res = ((Y[va] - D) ** 2).sum(axis=0)
            if est._estimator_type == "classifier":
                guess = est.classes_[np.argmax(D, axis=1) if D.shape[1] > 1
                                     else (D[:, 0] > 0).astype(int)]
                scores.append(np.mean(guess == np.asarray(y)[va]))
            else:
                tot = ((Y[va] - Y[va].mean(axis=0)) ** 2).sum(axis=0)
                scores.append(np.mean(1.0 - res / tot))
        out.append(np.mean(scores))
    return np.array(out)


def _problem(kind):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(240, 3))
    noise = rng.normal(size=240)
    if kind == "regression":
        return X, np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.3 * noise
    if kind == "binary":
        return X, np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.5 * noise > 0.3, "p", "n")
    flip = (rng.random(240) < 0.2).astype(int)
    return X, np.array(list("abc"))[((X[:, 0] > 0).astype(int) + (X[:, 1] > 0.3) + flip) % 3]


# seed 1 for RWRegressor: seed 0's feature draw has a plateau of equal scores below 1e-12 on
# these folds, which leaves the oracle's argmax to rounding
@pytest.mark.slow
@pytest.mark.parametrize("cls, kind, T, seed", [(rw.RWRegressor, "regression", 20, 1),
                                                (rw.RKSClassifier, "binary", 20, 0),
                                                (rw.RWClassifier, "multiclass", 120, 0),
                                                (rw.RKSRegressor, "regression", 20, 0)])
def test_default_reg_is_the_brute_force_cross_validated_choice(cls, kind, T, seed):
    X, y = _problem(kind)
    est = cls(n_features=T, random_state=seed).fit(X, y)    # reg=None: "auto"
    table = est.reg_search_
    np.testing.assert_allclose(brute_force_scores(est, X, y, table["reg"]), table["mean_score"],
                               rtol=1e-7, atol=1e-9)
    scores = brute_force_scores(est, X, y, DECADES)
    if cls._estimator_type == "classifier":
        best = int(np.flatnonzero(scores == scores.max())[-1])   # accuracy ties: largest reg
    else:
        best = int(np.argmax(scores))
        assert scores[best] - np.delete(scores, best).max() > 1e-6   # an unambiguous oracle
    assert est.reg_ == pytest.approx(DECADES[best], rel=1e-12)
    assert table["score"] == ("accuracy" if cls._estimator_type == "classifier" else "r2")


@pytest.mark.parametrize("cls, kind, seed", [(rw.RWClassifier, "binary", 0),
                                             (rw.RKSClassifier, "multiclass", 0),
                                             (rw.RWRegressor, "regression", 1),
                                             (rw.RKSRegressor, "regression", 0)])
def test_search_on_leading_features_is_the_brute_force_choice(monkeypatch, cls, kind, seed):
    """reg="auto" scores its candidates on the models of the map's first T_0 and T_s features
    (here 10 and 40 of 120; by default max(200, T_s / 4) and T_s = search_features(m, T)):
    their scores equal a dense cross-validation of those models (the leading columns,
    rescaled for the kitchen sinks), the choice is the best of that brute force over every
    decade, and the model is the full 120-feature solve at the chosen reg.

    Tolerance 1e-7 on the scores: both sides solve the same systems (Cholesky here,
    numpy's LU there) whose condition numbers stay below about 1e8 at the regs compared, so
    the decision values agree to about 1e-8 relative and no validation row's class flips
    but at ties the brute force shares."""
    from rwtool.solvers import _sufficient
    monkeypatch.setattr(_sufficient, "COARSE_FEATURES", 8)
    monkeypatch.setattr(_sufficient, "search_features", lambda m, T: 40)
    X, y = _problem(kind)
    est = cls(n_features=120, random_state=seed).fit(X, y)
    table = est.reg_search_
    assert table["features"] == 40 and table["coarse"]["features"] == 10
    for n, part in ((40, table), (10, table["coarse"])):
        ok = np.asarray(part["reg"]) >= 1e-10
        np.testing.assert_allclose(brute_force_scores(est, X, y, part["reg"], n)[ok],
                                   np.asarray(part["mean_score"])[ok], rtol=1e-7, atol=1e-9)
    scores = brute_force_scores(est, X, y, DECADES, 40)
    chosen = brute_force_scores(est, X, y, [est.reg_], 40)[0]
    assert chosen >= scores.max() - 1e-9
    # the fixed-reg fit adds the same sums in another order (one fold, not three): rounding
    # of 1e-16 relative, amplified by the system's condition number (below about 1e9 here)
    fixed = cls(n_features=120, reg=est.reg_, random_state=seed).fit(X, y)
    np.testing.assert_allclose(est.coef_, fixed.coef_, rtol=0,
                               atol=1e-6 * np.abs(fixed.coef_).max())


@pytest.mark.parametrize("seed", range(40))
def test_coarse_to_fine_search_chooses_what_the_whole_grid_does(seed):
    """grow_grid with a stride (coarse to fine) or a start (climbing) chooses what scoring
    every value does, on scores that rise strictly to a plateau of best values (ties) and then
    fall strictly, the best possibly beyond either end of the grid, and never scores a value
    twice. Oracle: best_index of the whole grid."""
    from rwtool.solvers._sufficient import best_index, grow_grid
    rng = np.random.default_rng(seed)
    grid = list(10.0 ** np.arange(-12, 0))
    peak = rng.integers(-20, 10)        # the optimum may lie beyond either end
    # a plateau of best values (ties), then a strict fall each way
    rises = np.concatenate([np.zeros(rng.integers(1, 4)),
                            np.cumsum(rng.choice([1.0, 2.0], size=40))])

    def truth(regs):       # minus a loss that falls then rises along the decades
        return [-float(rises[abs(int(round(np.log10(r))) - peak)]) for r in regs]

    def run(**kw):
        calls = []

        def score(regs):
            assert not set(regs) & set(calls)
            calls.extend(regs)
        regs = grow_grid(grid, score, truth, ceiling=0.0, **kw)
        return round(np.log10(regs[best_index(truth(regs), 0.0)])), regs
    whole, regs = run()
    assert regs[0] >= 1e-18 * 0.99 and regs[-1] <= 1e3 * 1.01
    assert run(stride=3)[0] == whole
    assert run(stride=3, start=float(rng.choice(grid)))[0] == whole


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # jitter at the tiniest regs
def test_grid_grows_to_an_optimum_below_it():
    """60 features of smooth Fourier features on 60 training rows per fold, targets in their
    span: the validation error falls down to reg = 1e-16, four decades below the grid."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(90, 3))
    kw = dict(n_features=60, base="fourier", sigma=3.0, standardize=False, random_state=0)
    y = rw.RKSRegressor(reg=1.0, **kw).fit(X, X[:, 0]).feature_matrix(X) @ rng.normal(size=60)
    est = rw.RKSRegressor(**kw).fit(X, y)
    grid = rw.estimators._random_features.AUTO_REG["ridge"]
    scores = brute_force_scores(est, X, y, DECADES)
    assert DECADES[np.argmax(scores)] < grid.min()
    assert est.reg_ == pytest.approx(DECADES[np.argmax(scores)], rel=1e-12)
    assert min(est.reg_search_["reg"]) < est.reg_ < grid.min()   # an interior choice


def test_too_few_rows_for_three_folds():
    """reg=None falls back to SMALL_DATA_REG when a fold would hold fewer than 2 rows;
    an explicit reg='auto' says what is missing."""
    from rwtool.solvers._from_sums import SMALL_DATA_REG
    X, y = _problem("regression")
    est = rw.RWRegressor(n_features=10, random_state=0).fit(X[:4], y[:4])
    assert est.reg_ == SMALL_DATA_REG and est.reg_search_ is None
    ref = rw.RWRegressor(n_features=10, reg=SMALL_DATA_REG, random_state=0).fit(X[:4], y[:4])
    np.testing.assert_allclose(est.coef_, ref.coef_, rtol=1e-9)
    with pytest.raises(ValueError, match="at least two"):
        rw.RWRegressor(n_features=10, reg="auto").fit(X[:1], y[:1])


def test_validation_sample_is_the_same_rows_in_any_chunking():
    """The classifier's validation sample keeps the rows with the smallest content hash: a
    stream in uneven chunks, merged partitions and one array keep the same rows, and a fold's
    accuracy on them equals numpy's on those rows."""
    from rwtool.features import RandomFourierFeatures
    from rwtool.solvers._sufficient import SAMPLE_SEED, SufficientStats, position_uniform
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(500, 3)), np.where(rng.random((500, 1)) < 0.5, 1.0, -1.0)
    fmap = RandomFourierFeatures(n_features=10, variant="phase", random_state=0).fit(X)
    whole = SufficientStats(10, 1, 3, sample_rows=60).add(fmap, X, Y)
    stream = SufficientStats(10, 1, 3, sample_rows=60)
    for i, j in [(0, 7), (7, 8), (8, 333), (333, 500)]:
        stream.add(fmap, X[i:j], Y[i:j])
    parts = (SufficientStats(10, 1, 3, sample_rows=60).add(fmap, X[300:], Y[300:], start=300)
             + SufficientStats(10, 1, 3, sample_rows=60).add(fmap, X[:300], Y[:300], start=0))
    expected = np.sort(np.argsort(position_uniform(row_keys(X), SAMPLE_SEED))[:60])
    for s in (whole, stream, parts):
        order = np.argsort(s.sample.pos)
        np.testing.assert_array_equal(s.sample.pos[order], expected)
        np.testing.assert_array_equal(s.sample.X[order], X[expected])
    coef = rng.normal(size=(10, 2))
    rows = whole.sample.pos[whole.sample.fold == 1]
    D = fmap.transform(X[rows]) @ coef
    np.testing.assert_allclose(whole.sample.accuracy(1, fmap, coef, 1),
                               np.mean((D > 0) == (Y[rows] > 0), axis=0))


@pytest.mark.parametrize("fold_features", [None, 5, 12])
@pytest.mark.parametrize("block_size", [16, 64, None])
def test_fold_sums_are_each_folds_dense_products_in_any_chunking(block_size, fold_features):
    """add() sorts a chunk's rows by fold and passes them as one sequence of blocks split at
    the folds' bounds: every fold's sums equal the dense products of its rows (oracle: numpy on
    the rows of fold_of(row_keys(X))), weighted or not, in one array or in uneven chunks. With
    ``fold_features`` t < T, A_f is the fold's product on the first t columns and the total of
    all columns (``A_total``, unsplit blocks) is the product of all rows; t = T keeps all."""
    from rwtool.features import RWRelu
    from rwtool.solvers._sufficient import SufficientStats
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(230, 4)), rng.normal(size=(230, 2))
    w = rng.uniform(0.0, 3.0, 230)
    fmap = RWRelu(n_features=12, sigma=0.8, random_state=0).fit(X)
    Phi, folds = fmap.transform(X), fold_of(row_keys(X), 3)
    for weights in (None, w):
        W = np.ones(230) if weights is None else weights
        whole = SufficientStats(12, 2, 3, fold_features=fold_features).add(
            fmap, X, Y, block_size=block_size, weights=weights)
        stream = SufficientStats(12, 2, 3, fold_features=fold_features)
        for i, j in [(0, 5), (5, 6), (6, 101), (101, 230)]:
            stream.add(fmap, X[i:j], Y[i:j], block_size=block_size,
                       weights=None if weights is None else weights[i:j])
        t = 12 if fold_features is None else fold_features
        for s in (whole, stream):
            assert s.fold_features == t and (s.A_total is None) == (t == 12)
            # sums of at most 230 products of O(1) values: rounding far below 1e-11
            np.testing.assert_allclose(s.total()[0], Phi.T @ (W[:, None] * Phi), rtol=1e-11,
                                       atol=1e-11)
            for f in range(3):
                P, Wf, Yf = Phi[folds == f], W[folds == f, None], Y[folds == f]
                np.testing.assert_allclose(s.A[f], (P.T @ (Wf * P))[:t, :t], rtol=1e-11,
                                           atol=1e-11)
                np.testing.assert_allclose(s.B[f], P.T @ (Wf * Yf), rtol=1e-11, atol=1e-11)
                np.testing.assert_allclose(s.w[f], Wf.sum(), rtol=1e-13)
                np.testing.assert_allclose(s.ysum[f], (Wf * Yf).sum(axis=0), rtol=1e-12)
                np.testing.assert_allclose(s.yy[f], (Wf * Yf * Yf).sum(axis=0), rtol=1e-12)
                assert s.n[f] == np.sum(folds == f)


@pytest.mark.parametrize("cls, kind, seed", [(rw.RWClassifier, "binary", 0),
                                             (rw.RKSClassifier, "multiclass", 0),
                                             (rw.RWRegressor, "regression", 1),
                                             (rw.RKSRegressor, "regression", 0)])
def test_fold_sums_of_the_searched_columns_choose_and_fit_as_all_columns(monkeypatch, cls,
                                                                         kind, seed):
    """fit keeps per-fold sums of the columns the search scores with (T_s = 40 of 120 here)
    and the total of all T beside; the path before kept all T per fold (as partial_fit and
    Dask still do). Both, in one process on the same draw: the same reg, the same candidates
    and scores, and the same model. Tolerances: the per-fold sums are the same products, and
    the total differs by the grouping of its sums (1e-16 relative); amplified by the final
    system's condition number (below about 1e9 at the regs chosen here) that leaves the
    coefficients within 1e-6 of their largest and the scores within 1e-9."""
    from rwtool.solvers import _sufficient
    from rwtool.solvers._from_sums import empty_stats
    from rwtool.solvers._sufficient import SufficientStats, select_reg
    monkeypatch.setattr(_sufficient, "COARSE_FEATURES", 8)
    monkeypatch.setattr(_sufficient, "search_features", lambda m, T: 40)
    X, y = _problem(kind)
    est = cls(n_features=120, random_state=seed)
    Xc, Y = est._fit_targets(X, y, None)
    Xp, fmap = est._start_fit(Xc, Y, None)
    new = empty_stats(est, fmap, Y.shape[1], weight_sum=len(Xc))
    old = SufficientStats(120, Y.shape[1], 3, sample_rows=0 if new.sample is None else 10000,
                          sample_features=0 if new.sample is None else new.sample.features)
    for s in (new, old):
        s.add(fmap, Xp, Y, rows=Xc, start=0)
    assert new.fold_features == 40 < old.fold_features == 120
    R = fmap.gram() if fmap.has_gram else None
    eps = float(est.eps) if est._family == "rw" else 0.0
    grid = est._auto_grid(est._validate())
    (a, ta), (b, tb) = (select_reg(s, grid, cls._estimator_type == "classifier", R, eps,
                                   feature_map=fmap) for s in (new, old))
    assert a == b and ta["reg"] == tb["reg"] and ta["coarse"]["reg"] == tb["coarse"]["reg"]
    np.testing.assert_allclose(ta["fold_scores"], tb["fold_scores"], rtol=0, atol=1e-9)
    coef, _ = new.solve(a, R, eps)
    ref, _ = old.solve(a, R, eps)
    np.testing.assert_allclose(coef, ref, rtol=0, atol=1e-6 * np.abs(ref).max())
    fitted = cls(n_features=120, random_state=seed).fit(X, y)
    assert fitted.reg_ == a
    np.testing.assert_allclose(fitted.coef_, ref, rtol=0, atol=1e-6 * np.abs(ref).max())
    # what needs every column per fold says so, naming the fix
    for call in (lambda: new.fold_coefs(0, [1e-3]), lambda: new.gram_form(0),
                 lambda: new.validation_scores(0, np.zeros((120, Y.shape[1])), False),
                 lambda: _sufficient.leading_model(new, R, fmap, 41)):
        with pytest.raises(ValueError, match="per fold|per-fold"):
            call()
    with pytest.raises(ValueError, match="columns per fold"):
        new + old


def _captured_and_recomputed(cls, kw, X, y, weights=None, block_size=None):
    """The sums of one fit's pass for ``cls(**kw)`` on (X, y) twice: with a validation sample
    of features captured as the blocks pass (what fit does) and with a sample of rows (what
    partial_fit and Dask do: the search featurises them), with the estimator and its map."""
    from rwtool.solvers._from_sums import empty_stats
    est = cls(**kw)
    Xc, Y = est._fit_targets(X, y, weights)
    Xp, fmap = est._start_fit(Xc, Y, weights)
    total = len(Xc) if weights is None else float(np.sum(weights))
    out = [empty_stats(est, fmap, Y.shape[1], weight_sum=w).add(
        fmap, Xp, Y, rows=Xc, start=0, weights=weights, block_size=block_size)
        for w in (total, None)]
    return est, fmap, Xp, out


@pytest.mark.parametrize("cls, kw", [
    (rw.RWClassifier, {}), (rw.RKSClassifier, {}),
    (rw.RWClassifier, {"instantiation": "rwrelu", "dtype": "float32"}),
    (rw.RWClassifier, {"solver": "lasso"}), (rw.RKSClassifier, {"base": "fourier"})])
@pytest.mark.parametrize("weighted", [False, True])
def test_captured_sample_features_are_the_recomputed_ones(cls, kw, weighted):
    """fit's validation sample keeps the leading features of its rows, copied as the blocks of
    the sums pass (blocks of 97 rows here, so every fold's rows straddle blocks), instead of
    the rows, which the search would featurise again. Oracle, in one process: the map's own
    transform of the sample's rows, bit for bit (up to 16 inputs, 4 here, X W^T is summed in
    one fixed order, so a row's features do not depend on the block it is computed in; above,
    BLAS may round a row differently with other rows around it); the same rows (positions,
    folds, weights, Y) as the sample of rows; at
    least the columns the search scores with (search_columns: T_s of search_features, all T for
    the Lasso's path). Weighted: rows of weight 0 never enter the sample, and the captured
    features are the unweighted ones."""
    from rwtool.solvers._sufficient import search_columns
    rng = np.random.default_rng(3)
    X = rng.normal(size=(1300, 4))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=1300) > 0, "p", "n")
    weights = rng.choice([0.0, 0.5, 1.0, 3.0], size=1300) if weighted else None
    est, fmap, Xp, (cap, rec) = _captured_and_recomputed(
        cls, {"n_features": 600, "random_state": 0, **kw}, X, y, weights, block_size=97)
    n = cap.sample.features
    lasso = kw.get("solver") == "lasso"
    assert n == (600 if lasso else 500) and n >= search_columns(fmap, cap.w.sum())
    assert rec.sample.features == 0 and rec.sample.Phi is None and cap.sample.X is None
    assert cap.sample.Phi.shape == (len(cap.sample.pos), n)
    assert cap.sample.Phi.dtype == fmap.feature_dtype_
    # the captured sample holds its rows grouped by fold (each fold's features one slice for
    # the search), the sample of rows in (hash, position) order: the same rows
    assert np.all(np.diff(cap.sample.fold) >= 0)
    a, b = np.argsort(cap.sample.pos), np.argsort(rec.sample.pos)
    for name in ("pos", "fold", "weight", "Y"):
        np.testing.assert_array_equal(getattr(cap.sample, name)[a], getattr(rec.sample, name)[b])
    np.testing.assert_array_equal(rec.sample.X, Xp[rec.sample.pos])
    if weighted:
        assert np.all(cap.sample.weight > 0)
    np.testing.assert_array_equal(cap.sample.Phi, fmap.transform(Xp[cap.sample.pos])[:, :n])
    for name in ("B", "n", "w", "ysum", "yy"):     # capturing leaves the sums alone
        np.testing.assert_array_equal(getattr(cap, name), getattr(rec, name))
    # fit's sums keep the folds apart on the captured columns alone, the total of all beside
    # (partial_fit's and Dask's keep all): the same products, grouped otherwise by BLAS (the
    # total's trailing columns summed over all rows at once, not fold by fold), so equal to
    # rounding: sums of 1300 products of features of at most about 1 (float32 blocks: each
    # block's product rounded to float32, 1e-7 relative)
    assert cap.fold_features == n and rec.fold_features == 600
    tol = 1e-6 if kw.get("dtype") == "float32" else 1e-12
    scale = np.abs(rec.A).max()
    np.testing.assert_allclose(cap.A, rec.A[:, :n, :n], rtol=0, atol=tol * scale)
    np.testing.assert_allclose(cap.total()[0], rec.total()[0], rtol=0, atol=tol * scale)


@pytest.mark.slow
@pytest.mark.parametrize("cls, T, kind", [(rw.RWClassifier, 600, "binary"),
                                          (rw.RKSClassifier, 600, "multiclass"),
                                          (rw.RWClassifier, 2000, "multiclass")])
def test_search_on_captured_features_chooses_as_recomputing(cls, T, kind):
    """select_reg scoring with the captured features (the full map's leading columns, each
    model's coefficients rescaled to them: c = subset_scale, sqrt(T_s / T) for the kitchen
    sinks) gives the table of the search that featurises the sample of rows with the leading
    model's map (the path before, and partial_fit's and Dask's): the same candidates, the same
    fold accuracies and the same reg (accuracy counts rows; decision values differing by
    rounding would move a count only for a row within about 1e-16 of the boundary). And fit,
    which captures, equals that search's choice."""
    from rwtool.solvers._sufficient import select_reg
    rng = np.random.default_rng(1)
    X = rng.normal(size=(2400, 3))
    flip = (rng.random(2400) < 0.15).astype(int)
    y = (np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 > 0.3, 1, 0) + flip) % 2 if kind == "binary" \
        else np.array(list("abc"))[((X[:, 0] > 0).astype(int) + (X[:, 1] > 0.3) + flip) % 3]
    est, fmap, _, (cap, rec) = _captured_and_recomputed(
        cls, {"n_features": T, "random_state": 0}, X, y)
    R = fmap.gram() if fmap.has_gram else None
    eps = float(est.eps) if est._family == "rw" else 0.0
    grid = est._auto_grid(est._validate())
    (a, ta), (b, tb) = (select_reg(s, grid, True, R, eps, feature_map=fmap) for s in (cap, rec))
    assert ta["features"] == tb["features"] == (543 if T == 2000 else 500) < T
    assert a == b and ta["reg"] == tb["reg"] and ta["coarse"] == tb["coarse"]
    np.testing.assert_array_equal(ta["fold_scores"], tb["fold_scores"])
    fitted = cls(n_features=T, random_state=0).fit(X, y)
    assert fitted.reg_ == a and fitted.reg_search_["fold_scores"] == ta["fold_scores"]


def test_captured_features_follow_the_sample_through_merges():
    """A sample of features keeps those of exactly its rows whatever the chunking: chunks
    added in turn and partitions merged in any order keep the transform's features of the
    rows a sample of rows keeps; it refuses features it cannot hold (none, or another width)
    and merging with a sample of rows, naming the fix, and the search refuses one narrower
    than the model it scores."""
    from rwtool.features import RWSign
    from rwtool.solvers._sufficient import FoldAccuracy, SufficientStats
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(500, 3)), np.where(rng.random((500, 1)) < 0.5, 1.0, -1.0)
    fmap = RWSign(n_features=12, random_state=0).fit(X)

    def stats(i, j, n=5):
        return SufficientStats(12, 1, 3, sample_rows=60, sample_features=n).add(
            fmap, X[i:j], Y[i:j], start=i)
    stream = SufficientStats(12, 1, 3, sample_rows=60, sample_features=5)
    for i, j in [(0, 7), (7, 8), (8, 333), (333, 500)]:
        stream.add(fmap, X[i:j], Y[i:j])
    rows = stats(0, 500, n=0).sample
    b = np.argsort(rows.pos)
    for s in (stream, stats(0, 500), stats(300, 500) + stats(0, 300),
              stats(0, 300) + stats(300, 500)):
        a = np.argsort(s.sample.pos)    # a fresh sample of features: rows grouped by fold
        np.testing.assert_array_equal(s.sample.pos[a], rows.pos[b])
        np.testing.assert_array_equal(s.sample.Y[a], rows.Y[b])
        np.testing.assert_array_equal(s.sample.Phi[a], fmap.transform(rows.X[b])[:, :5])
    for other in (stats(300, 500, n=0), stats(300, 500, n=4)):
        with pytest.raises(ValueError, match="validation samples"):
            stats(0, 300) + other
    with pytest.raises(ValueError, match="offer their features"):
        stream.sample.offer(row_keys(X[:5]), np.arange(5), np.zeros(5, int), X[:5], Y[:5])
    narrow = FoldAccuracy(stream.sample, fmap, [0, 1, 2], 1)
    with pytest.raises(ValueError, match="fewer than the 6 scored"):
        narrow(0, np.ones((6, 1)))


def _repeated(seed=0, copies=5):
    """40 distinct rows, each repeated ``copies`` times in a shuffled order (resampled or
    upsampled data), their regression and binary targets, and fresh test rows."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(3)

    def target(X):
        return np.sin(X @ w) + 0.3 * X[:, 0]
    Xd = rng.standard_normal((40, 3))
    yd = target(Xd) + 0.3 * rng.standard_normal(40)
    order = rng.permutation(40 * copies)
    X, y = np.repeat(Xd, copies, axis=0)[order], np.repeat(yd, copies)[order]
    Xt = rng.standard_normal((2000, 3))
    yt = target(Xt) + 0.3 * rng.standard_normal(2000)
    cut = np.median(yd)
    return (Xd, yd, (yd > cut).astype(int)), (X, y, (y > cut).astype(int)), \
        (Xt, yt, (yt > cut).astype(int))


@pytest.mark.parametrize("cls", [rw.RKSRegressor, rw.RWClassifier])
def test_copies_of_a_row_share_a_fold(cls):
    """Issue 27: with folds hashed from row positions, the 5 copies of a row sat in training and
    validation folds at once, and reg="auto" rewarded memorising them (RKSRegressor: reg 1e-10,
    test R^2 0.47 where the 40 distinct rows give 0.75). A row's fold is now a hash of its
    content: a grouped k-fold whose groups are the identical rows.

    Oracles: (1) every group of identical rows lies in one fold; (2) each candidate's mean
    validation score equals a brute-force cross-validation over those grouped folds (dense
    numpy solves); (3) repeating every row 5 times multiplies each fold's sums, and its row
    count, by 5, which leaves every candidate's solution and validation score unchanged: the
    choice and the model are those of the 40 distinct rows (to rounding: the sums are added in
    another order)."""
    distinct, repeated, test = _repeated()
    Xd, X, Xt = distinct[0], repeated[0], test[0]
    col = 1 if cls is rw.RKSRegressor else 2
    yd, y, yt = distinct[col], repeated[col], test[col]
    est = cls(n_features=300, random_state=0).fit(X, y)
    folds = fold_of(row_keys(X), 3)
    groups = np.unique(X, axis=0, return_inverse=True)[1].ravel()
    assert all(len(np.unique(folds[groups == g])) == 1 for g in range(40))
    assert len(np.unique(folds)) == 3
    table = est.reg_search_
    # compared where the systems are well enough conditioned for two solvers to agree to 1e-7:
    # about 27 distinct training rows for 300 features leave them near-singular at 1e-10 and below
    ok = np.asarray(table["reg"]) > 1e-10
    np.testing.assert_allclose(brute_force_scores(est, X, y, table["reg"])[ok],
                               np.asarray(table["mean_score"])[ok], rtol=1e-7, atol=1e-9)
    ref = cls(n_features=300, random_state=0).fit(Xd, yd)
    assert est.reg_ == ref.reg_ and table["reg"] == ref.reg_search_["reg"]
    np.testing.assert_allclose(np.asarray(table["mean_score"])[ok],
                               np.asarray(ref.reg_search_["mean_score"])[ok], rtol=1e-7,
                               atol=1e-9)
    if cls is rw.RKSRegressor:
        assert est.score(Xt, yt) == pytest.approx(ref.score(Xt, yt), abs=1e-6)
        assert est.score(Xt, yt) > 0.7
    else:
        assert np.mean(est.predict(Xt) == ref.predict(Xt)) > 0.999
        assert est.score(Xt, yt) > 0.8 > max(np.mean(yt), 1 - np.mean(yt))


@pytest.mark.parametrize("with_gram", [True, False])
def test_fold_coefs_in_reused_work_buffers_are_the_new_matrices(with_gram):
    """The search solves every candidate and fold in two buffers of its own (fold_coefs
    ``work``) instead of new matrices: in one process, bit for bit the solutions without them,
    whatever the buffers held before (a previous fold's system, NaN); the folds' sums are left
    as they were; and against numpy's dense solve of (A - A_f + m_tr reg R + m_tr eps I) a =
    B - B_f (relative 1e-8: these systems' condition numbers are below about 1e6 at the regs
    used). A system made indefinite (a negative reg) goes to the jittered route with its
    A - A_f intact: the same warning and solution with the buffers as without."""
    from rwtool.exceptions import NumericalWarning
    from rwtool.features import RWRelu
    from rwtool.solvers._sufficient import SufficientStats
    rng = np.random.default_rng(5)
    X, Y = rng.normal(size=(300, 4)), rng.normal(size=(300, 1))
    fmap = RWRelu(n_features=15, sigma=0.8, random_state=0).fit(X)
    stats = SufficientStats(15, 1, 3).add(fmap, X, Y, block_size=64)
    R = fmap.gram() if with_gram else None
    A0 = stats.A.copy()
    work = np.full((2, 15, 15), np.nan)
    A, B, m = stats.total()
    for f in (0, 1, 2, 0):
        regs = [1e-4, 1e-2]
        got = stats.fold_coefs(f, regs, R, 1e-3, work=work)
        np.testing.assert_array_equal(got, stats.fold_coefs(f, regs, R, 1e-3))
        m_tr = m - stats.w[f]
        for j, reg in enumerate(regs):
            M = (A - stats.A[f] + m_tr * reg * (np.eye(15) if R is None else R)
                 + m_tr * 1e-3 * np.eye(15))
            ref = np.linalg.solve(M, B - stats.B[f])
            np.testing.assert_allclose(got[:, j:j + 1], ref, rtol=1e-8,
                                       atol=1e-8 * np.abs(ref).max())
    np.testing.assert_array_equal(stats.A, A0)
    # a negative reg larger than the smallest eigenvalues of A - A_f: not positive definite
    bad = -1e-6 if R is None else -1e-6 / np.linalg.eigvalsh(R).max()
    with pytest.warns(NumericalWarning) as caught:
        got = stats.fold_coefs(1, [bad], R, 0.0, work=work)
    with pytest.warns(NumericalWarning) as again:
        ref = stats.fold_coefs(1, [bad], R, 0.0)
    assert [str(w.message) for w in caught] == [str(w.message) for w in again]
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("cls, kind", [(rw.RWClassifier, "binary"), (rw.RKSClassifier, "multiclass"),
                                       (rw.RWClassifier, "multiclass")])
def test_classifier_final_solve_in_the_sums_memory_is_the_fresh_matrix_solve(monkeypatch, cls,
                                                                             kind):
    """A classifier's default fit never holds G whole: the search takes G's leading block
    (GramRows.rows(0, T_s)) and the final system is formed and factored in the total's memory
    with G's rows a panel at a time (SufficientStats.solve ``spend``, the fixed-reg fit's
    route), instead of G and the system in two fresh T x T matrices. In one process: the
    search's table (candidates, fold scores) and reg are those with G whole, bit for bit; the
    coefficients are bit for bit the panels' solve of the same sums (the fixed fit's
    arithmetic), those of the fresh-matrix solve to the bit without G (kitchen sinks) and to
    1e-12 relative with it (G's panels are products of other shapes than G's symmetric one:
    3e-14 measured on mnist 1-vs-7 at T = 8000), and numpy's dense solve of
    (A + m reg R + m eps I) a = B to 1e-8 (the systems' condition numbers stay below about 1e6
    here). The spent statistics refuse a second use; a total summed over the folds (every
    column per fold, as a stream's) is a new matrix, left whole."""
    from rwtool.solvers import _sufficient
    from rwtool.solvers._from_sums import empty_stats
    from rwtool.solvers._ridge import GramRows
    from rwtool.solvers._sufficient import SufficientStats, select_reg
    monkeypatch.setattr(_sufficient, "COARSE_FEATURES", 8)
    monkeypatch.setattr(_sufficient, "search_features", lambda m, T: 40)
    X, y = _problem(kind)
    est = cls(n_features=120, random_state=0)
    Xc, Y = est._fit_targets(X, y, None)
    Xp, fmap = est._start_fit(Xc, Y, None)
    G = fmap.gram() if fmap.has_gram else None
    rows = GramRows(fmap) if fmap.has_gram else None
    eps = float(est.eps) if est._family == "rw" else 0.0
    stats = [empty_stats(est, fmap, Y.shape[1], weight_sum=len(Xc)).add(
        fmap, Xp, Y, rows=Xc, start=0) for _ in range(2)]
    assert stats[0].A_total is not None
    grid = est._auto_grid(est._validate())
    reg, table = select_reg(stats[0], grid, True, G, eps, feature_map=fmap)
    assert select_reg(stats[1], grid, True, rows, eps, feature_map=fmap) == (reg, table)
    A, B, m = (a.copy() if isinstance(a, np.ndarray) else a for a in stats[0].total())
    ref, info = stats[0].solve(reg, G, eps)               # a fresh matrix, factored
    assert info["chol"] is not None
    np.testing.assert_array_equal(stats[0].A_total, A)    # left whole
    got, info = stats[1].solve(reg, rows, eps, spend=True)
    assert info["chol"] is None and info["A"] is None
    if G is None:
        np.testing.assert_array_equal(got, ref)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    fitted = cls(n_features=120, random_state=0).fit(X, y)
    assert fitted.reg_ == reg and fitted.reg_search_ == table
    np.testing.assert_array_equal(fitted.coef_, got)
    M = A + m * reg * (np.eye(120) if G is None else G) + m * eps * np.eye(120)
    dense = np.linalg.solve(M, B)
    np.testing.assert_allclose(got, dense, rtol=1e-8, atol=1e-8 * np.abs(dense).max())
    with pytest.raises(ValueError, match="spent"):
        stats[1].total()
    # every column per fold (a stream's sums): the total is a sum, solved in its own memory
    whole = SufficientStats(120, Y.shape[1], 3).add(fmap, Xp, Y, rows=Xc, start=0)
    A0 = whole.A.copy()
    got, _ = whole.solve(reg, rows, eps, spend=True)
    ref = whole.solve(reg, G, eps)[0]
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    np.testing.assert_array_equal(whole.A, A0)
