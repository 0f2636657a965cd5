"""No silent failure for the RW / RKS estimators (issue 12, point 1).

A fit that diverges or produces non-finite numbers raises rwtool.NumericalError and leaves the
estimator unfitted; reg="auto" never picks a diverged candidate; inputs near the ends of float64
give the model of the same data at ordinary scale (the oracle) or a clear error; predictions of
a finite model are finite or raise; the CLI writes no model file and computes no metric from
non-finite numbers.
"""

import warnings

import numpy as np
import pytest

import rwtool as rw
from rwtool import cli
from rwtool.estimators import _random_features as rf
from rwtool.model_selection._search import select_reg


def _classification(m=600, seed=0):
    from sklearn.datasets import make_classification
    return make_classification(m, 10, n_informative=5, random_state=seed)


# ----------------------------------------------------------------------------- divergence

@pytest.mark.slow
def test_sfgd_with_a_small_reg_learns_instead_of_returning_nan():
    """Seed 003's schedule 1/(reg t) with reg = 1e-6 made the iterates NaN by iteration 50 and
    fit returned quietly; the capped step learns (within 0.1 of least squares)."""
    X, y = _classification()
    Xtr, ytr, Xte, yte = X[:400], y[:400], X[400:], y[400:]
    for inst in ("rwsign", "rwrelu"):
        sf = rw.RWClassifier(instantiation=inst, n_features=200, solver="sfgd", reg=1e-6,
                             random_state=0).fit(Xtr, ytr)
        assert np.isfinite(sf.coef_).all() and np.isfinite(sf.decision_function(Xte)).all()
        ls = rw.RWClassifier(instantiation=inst, n_features=200, reg=1e-6,
                             random_state=0).fit(Xtr, ytr)
        assert sf.score(Xte, yte) > ls.score(Xte, yte) - 0.1
        reg = rw.RWRegressor(instantiation=inst, n_features=200, solver="sfgd", reg=1e-6,
                             random_state=0).fit(Xtr, Xtr[:, 0] + ytr)
        assert np.isfinite(reg.predict(Xte)).all()


def test_uncapped_sfgd_diverges_loudly_and_leaves_the_estimator_unfitted():
    X, y = _classification()
    est = rw.RWClassifier(n_features=100, solver="sfgd", reg=1e-6, step_cap=None,
                          random_state=0)
    with pytest.raises(rw.NumericalError) as exc:
        est.fit(X, y)
    err = exc.value
    assert err.solver == "sfgd" and 1 <= err.iteration <= 10 and "step_cap" in err.fix
    assert isinstance(err, ArithmeticError)
    assert not hasattr(est, "coef_")
    with pytest.raises(rw.NotFittedError):
        est.predict(X)
    # a refit of a fitted estimator that diverges drops the old model too
    est.set_params(step_cap=0.25).fit(X, y)
    with pytest.raises(rw.NumericalError):
        est.set_params(step_cap=None).fit(X, y)
    assert not hasattr(est, "coef_")


@pytest.mark.parametrize("batch", [2, 5])
def test_osd_on_separable_tiny_batches_raises_instead_of_nan(batch):
    """Logistic OSD with reg = 0 has no minimiser on a separable batch: eta runs away."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 2))
    y = (X[:, 0] > 0).astype(int)
    est = rw.RWClassifier(n_features=100, solver="osd", reg=0.0, loss="logistic",
                          batch_size=batch, random_state=0)
    with pytest.raises(rw.NumericalError) as exc:
        est.fit(X, y)
    assert exc.value.solver == "osd" and exc.value.iteration >= 1 and "batch" in exc.value.fix
    assert not hasattr(est, "coef_")


def test_every_solver_checks_its_result(monkeypatch):
    """A solver returning non-finite coefficients (whatever the cause) never yields a model."""
    X, y = _classification(200)
    for solver, family in (("lstsq", rw.RWClassifier), ("ridge", rw.RKSClassifier),
                           ("lasso", rw.RWClassifier), ("sgd", rw.RKSClassifier)):
        fams, fit = rf.SOLVERS[solver]

        def broken(est, fmap, Xp, Y, progress, weights=None, fit=fit):
            coef, info = fit(est, fmap, Xp, Y, progress, weights)
            coef = coef.copy()
            coef[0, 0] = np.nan
            return coef, info
        monkeypatch.setitem(rf.SOLVERS, solver, (fams, broken))
        est = family(n_features=30, solver=solver, reg=1e-3, random_state=0)
        with pytest.raises(rw.NumericalError, match="non-finite") as exc:
            est.fit(X, y)
        assert exc.value.solver == solver and exc.value.fix
        assert not hasattr(est, "coef_")


def test_auto_reg_never_selects_a_diverged_candidate():
    X, y = _classification(300)
    # theta=0.5: the values below were chosen to straddle divergence for that kernel width
    template = rw.RWClassifier(n_features=60, solver="sfgd", step_cap=None, theta=0.5,
                               random_state=0)
    values = [1e-6, 1e-4, 1.0]
    best, table = select_reg(template, X, y, values, cv=3)
    assert table["diverged"][:2] == [True, True] and not table["diverged"][2]
    assert best == 1.0
    # all candidates diverge: an error, not a model
    with pytest.raises(rw.NumericalError, match="every reg candidate"):
        select_reg(template, X, y, [1e-7, 1e-6], cv=3)


# ----------------------------------------------------------------------------- extremes

@pytest.mark.parametrize("solver", ["lstsq", "sfgd", "osd"])
@pytest.mark.parametrize("x_scale,y_scale", [(1e200, 1.0), (1e-200, 1.0), (1.0, 1e307),
                                             (1.0, 1e-300)])
def test_extreme_magnitudes_give_the_ordinary_model(regression_data, solver, x_scale, y_scale):
    """Oracle: the same model fitted on the data at ordinary scale (standardisation makes the
    fit scale-free); before, X near 1e200 overflowed the variance to a constant model."""
    X, y = regression_data
    y = y / np.abs(y).max()
    kw = dict(n_features=80, solver=solver, reg=1e-4, random_state=0)
    ref = rw.RWRegressor(**kw).fit(X, y)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)   # no overflow behind the result
        est = rw.RWRegressor(**kw).fit(X * x_scale, y * y_scale)
        pred = est.predict(X * x_scale) / y_scale
        score = est.score(X * x_scale, y * y_scale)
    np.testing.assert_allclose(pred, ref.predict(X), rtol=1e-6, atol=1e-9)
    assert score == pytest.approx(ref.score(X, y), abs=1e-9)


@pytest.mark.parametrize("scale", [1e200, 1e-200])
def test_extreme_inputs_without_standardisation_are_refused(regression_data, scale):
    X, y = regression_data
    with pytest.raises(ValueError, match="standardize=True"):
        rw.RWRegressor(n_features=20, standardize=False).fit(X * scale, y)


def test_standardizer_keeps_tiny_but_varying_columns():
    """A column varying at 1e-200 is data, not a constant (the old threshold was absolute)."""
    X = np.column_stack([np.linspace(-1, 1, 50) * 1e-200, np.full(50, 3.0)])
    sc = rw._base.Standardizer.fit(X)
    Z = sc.transform(X)
    assert Z[:, 0].std() == pytest.approx(1.0) and np.all(Z[:, 1] == 0)


# ----------------------------------------------------------------------------- predictions

def test_predictions_of_a_non_finite_model_raise(binary_data, regression_data):
    X, y = binary_data
    clf = rw.RWClassifier(n_features=30, random_state=0).fit(X, y)
    clf.coef_[3, 0] = np.nan
    for call in (clf.predict, clf.decision_function, lambda Z: clf.score(Z, y)):
        with pytest.raises(rw.NumericalError, match="decision values"):
            call(X)
    Xr, yr = regression_data
    reg = rw.RWRegressor(n_features=30, random_state=0).fit(Xr, yr)
    reg.coef_[:] = np.nan
    with pytest.raises(rw.NumericalError):
        reg.predict(Xr)


# ----------------------------------------------------------------------------- CLI

def _csv(tmp_path, X, y):
    path = tmp_path / "d.csv"
    with open(path, "w") as fh:
        fh.write(",".join(f"x{j}" for j in range(X.shape[1])) + ",y\n")
        for row, t in zip(X, y):
            fh.write(",".join(repr(float(v)) for v in row) + f",{t}\n")
    return path


def test_cli_train_exits_nonzero_and_writes_no_model_on_a_non_finite_fit(tmp_path, capsys,
                                                                         monkeypatch):
    X, y = _classification(200)
    data = _csv(tmp_path, X, y)
    fams, fit = rf.SOLVERS["lstsq"]

    def nan_solver(est, fmap, Xp, Y, progress, weights=None):
        coef, info = fit(est, fmap, Xp, Y, progress, weights)
        return np.full_like(coef, np.nan), info
    monkeypatch.setitem(rf.SOLVERS, "lstsq", (fams, nan_solver))
    out = tmp_path / "m.rwm"
    code = cli.main(["train", str(data), "--target", "y", "--method", "rw", "--reg", "1e-6",
                     "-T", "40", "--out", str(out)])
    _, err = capsys.readouterr()
    assert code == 1 and not out.exists()
    assert "non-finite" in err and "internal error" not in err


def _train_diverging(tmp_path, capsys, X, y, args):
    """``rwtool train`` of a fit that diverges: exit status 1, no model file, the error named."""
    data = _csv(tmp_path, X, y)
    out = tmp_path / "m.rwm"
    code = cli.main(["train", str(data), "--target", "y", *args, "--out", str(out), "--json"])
    doc, err = capsys.readouterr()
    assert code == 1 and not out.exists()
    assert '"NumericalError"' in doc and "diverged" in err


def test_cli_train_of_a_diverging_sfgd(tmp_path, capsys):
    X, y = _classification(200)
    _train_diverging(tmp_path, capsys, X, y, ["--method", "rw", "--solver", "sfgd", "--reg",
                                              "1e-6", "-T", "60", "--param", "step_cap=None"])


def test_report_metrics_refuse_non_finite_output(binary_data, regression_data):
    """The scores the CLI and the app print (rwtool.report.evaluate) never come from NaN."""
    from rwtool.report import evaluate
    X, y = binary_data
    clf = rw.RWClassifier(n_features=30, random_state=0).fit(X, y)
    clf.coef_[:] = np.nan
    with pytest.raises(rw.NumericalError):
        evaluate(clf, X, y, task="binary", source="the test rows")
    Xr, yr = regression_data
    reg = rw.RWRegressor(n_features=30, random_state=0).fit(Xr, yr)
    reg.y_scaler_ = None
    reg.coef_[:] = np.nan
    reg.solver_info_ = {}
    with pytest.raises(rw.NumericalError):
        evaluate(reg, Xr, yr, task="regression", source="the test rows")


# ----------------------------------------------------------------------------- cost model

def estimate_and_peak(cls, n, T, **params):
    """(estimate_fit's figures, tracemalloc's peak) of a fit of ``cls`` on n rows of 20
    inputs (numpy reports its buffers to tracemalloc), after a small fit that compiles and
    warms everything."""
    import tracemalloc

    from rwtool.resources import estimate_fit
    rng = np.random.default_rng(0)
    d = 20
    X = rng.standard_normal((n, d))
    y = X[:, 0] + 0.1 * rng.standard_normal(n)
    if cls._estimator_type == "classifier":
        y = (y > 0).astype(int)
    est = cls(n_features=T, random_state=0, **params)
    est.fit(X[:100], y[:100])
    e = estimate_fit(est, n, d, 1)
    tracemalloc.start()
    try:
        est.fit(X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return e, peak


@pytest.mark.slow
@pytest.mark.parametrize("cls,params", [
    (rw.RWClassifier, dict(reg=1e-6)), (rw.RWClassifier, dict()), (rw.RKSRegressor, dict()),
    (rw.RWClassifier, dict(solver="lasso", reg=1e-3)), (rw.RWClassifier, dict(solver="sfgd")),
    (rw.RWClassifier, dict(solver="osd")), (rw.RKSClassifier, dict(solver="sgd"))])
def test_estimate_fit_is_near_the_measured_peak(cls, params):
    """_estimate_fit against tracemalloc's peak of the same fit: within a factor 2 either
    way."""
    e, peak = estimate_and_peak(cls, 8000, 400, **params)
    assert e.peak_bytes > 0 and e.seconds > 0 and e.detail
    assert 0.5 < e.peak_bytes / peak < 2.0, (e.peak_bytes, peak)


@pytest.mark.slow
@pytest.mark.parametrize("cls", [rw.RWClassifier, rw.RKSClassifier, rw.RWRegressor])
def test_estimate_fit_of_a_fixed_reg_fit_where_the_system_dominates(cls):
    """As above at T = 2000 on 3000 rows, where the T x T matrices are most of the peak: a
    classifier forms and factors its system in the sums' memory (G in panels), a regressor
    keeps the sums, G and the factor for its posterior. Within a factor 2."""
    e, peak = estimate_and_peak(cls, 3000, 2000, reg=1e-6)
    assert 0.5 < e.peak_bytes / peak < 2.0, (e.peak_bytes, peak)


def test_a_model_that_predicts_one_class_is_not_silent():
    """Finite coefficients can still be the majority rate (SFGD on RWRelu features dominated by
    one common direction): fit says so. Oracle: the predictions themselves."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 5))
    y = (X[:, 0] > 0.8).astype(int)              # about 20% positives
    with pytest.warns(rw.NumericalWarning, match="one class on every training row"):
        est = rw.RWClassifier(instantiation="rwrelu", n_features=50, reg=1e3,
                              random_state=0).fit(X, y)
    assert len(np.unique(est.predict(X))) == 1   # the warning told the truth
    with warnings.catch_warnings():
        warnings.simplefilter("error", rw.NumericalWarning)
        good = rw.RWClassifier(instantiation="rwsign", n_features=50, reg=1e-6,
                               random_state=0).fit(X, y)
    assert len(np.unique(good.predict(X))) == 2
    with pytest.warns(rw.NumericalWarning, match="same value for every training row"):
        rw.RWRegressor(n_features=50, reg=1e12, random_state=0).fit(X, X[:, 0])


def test_the_constant_model_check_sees_a_class_its_first_rows_miss():
    """The check predicts every 10th of its 2000 rows first and the rest only when those show
    one class: a model whose other class is on a single row outside those 200 is not called
    constant, and one whose every row is one class is. Oracle: the model's own predictions of
    the rows the check is given."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((400, 5))
    est = rw.RWClassifier(n_features=50, reg=1e-6, random_state=0).fit(X, X[:, 0] > 0)
    Xp = est._prepare_X(X)
    # the rows farthest from the boundary: their class does not hang on a rounding of the
    # check's own prediction path
    score = est.decision_function(X)
    yes, no = int(np.argmax(score)), int(np.argmin(score))
    rows = np.full(2000, yes)
    rows[1] = no                      # in the check's rows, not in its first 200 (every 10th)
    Y = np.where(np.arange(2000) % 2, 1.0, -1.0)[:, None]     # both classes in the truth
    assert len(np.unique(est.predict(X[rows]))) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", rw.NumericalWarning)
        est._warn_if_constant(Xp[rows], Y, "lstsq")
    with pytest.warns(rw.NumericalWarning, match="one class on every training row"):
        est._warn_if_constant(Xp[np.full(2000, yes)], Y, "lstsq")


# ----------------------------------------------------------------------------- final model

def _wine():
    """scikit-learn's wine as a regression on the class label (the defaults benchmark's set):
    the benchmark's 75/25 split, targets standardised with the training statistics."""
    from sklearn.datasets import load_wine
    X, y = load_wine(return_X_y=True)
    perm = np.random.default_rng(0).permutation(len(X))
    tr, te = perm[:int(0.75 * len(X))], perm[int(0.75 * len(X)):]
    y = y.astype(float) + 1.0
    mu, sd = y[tr].mean(), y[tr].std()
    return X[tr], X[te], (y[tr] - mu) / sd, (y[te] - mu) / sd


@pytest.fixture
def tenfold_sgd_step(monkeypatch):
    """RKS SGD's step 1 / (L + reg t) with L measured and divided by 10 (no parameter sets it)."""
    from rwtool.solvers import _sgd_rks as sgd_rks
    base = sgd_rks.step_constant
    monkeypatch.setattr(sgd_rks, "step_constant", lambda *a, **k: base(*a, **k) / 10.0)


def test_wine_sgd_with_ten_times_the_step_raises_and_leaves_the_estimator_unfitted(
        tenfold_sgd_step, monkeypatch):
    """RKS SGD on wine with 10 times its step: fit used to return a finite model with test MSE
    535 on standardised y (the zero model's is about 1). Now one of the two guards stops it;
    with the early stop off, the final-model check does. Oracle: the same fit with both
    guards off, scored with numpy."""
    Xtr, Xte, ytr, yte = _wine()
    est = rw.RKSRegressor(solver="sgd", n_features=500, random_state=0)
    with pytest.raises(rw.NumericalError, match="diverged") as exc:
        est.fit(Xtr, ytr)
    err = exc.value
    assert err.solver == "sgd" and err.iteration >= 1 and "batch_size" in err.fix
    assert not hasattr(est, "coef_")
    with pytest.raises(rw.NotFittedError):
        est.predict(Xte)
    from rwtool.solvers import _divergence as divergence
    monkeypatch.setattr(divergence, "DIVERGED", np.inf)
    with pytest.raises(rw.NumericalError, match="times the zero model") as exc:
        est.fit(Xtr, ytr)
    assert exc.value.solver == "sgd" and not hasattr(est, "coef_")
    limit = divergence.FINAL_RAISE
    monkeypatch.setattr(divergence, "FINAL_RAISE", np.inf)
    monkeypatch.setattr(divergence, "FINAL_WARN", np.inf)
    bad = rw.RKSRegressor(solver="sgd", n_features=500, random_state=0).fit(Xtr, ytr)
    train_mse = np.mean((bad.predict(Xtr) - ytr) ** 2)
    assert train_mse > 10 * limit * np.mean(ytr ** 2)
    assert np.mean((bad.predict(Xte) - yte) ** 2) > 100 * np.mean(yte ** 2)


def test_cli_train_of_a_finite_but_diverged_fit(tenfold_sgd_step, tmp_path, capsys):
    Xtr, _, ytr, _ = _wine()
    _train_diverging(tmp_path, capsys, Xtr, ytr, ["--method", "rks", "--solver", "sgd", "--task",
                                                  "regression", "-T", "500", "--test-size", "0.1"])


@pytest.mark.parametrize("make", [
    lambda: rw.RKSRegressor(solver="sgd", n_features=300, random_state=0),
    lambda: rw.RWRegressor(solver="sfgd", n_features=200, random_state=0),
    lambda: rw.RWRegressor(solver="osd", n_features=200, random_state=0)])
def test_a_default_iterative_fit_passes_the_final_check_quietly(make):
    Xtr, _, ytr, _ = _wine()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = make().fit(Xtr, ytr)
    assert est.solver_info_["final_loss_ratio"] < 0.5


def test_default_classifier_fits_pass_the_final_check_quietly():
    X, y = _classification(600)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for est in (rw.RKSClassifier(solver="sgd", n_features=200, random_state=0),
                    rw.RWClassifier(solver="sfgd", n_features=200, random_state=0),
                    rw.RFSGDClassifier(n_features=200, random_state=0)):
            est.fit(X, y)
            assert est.solver_info_["final_loss_ratio"] < 1.0


def test_final_check_thresholds_against_a_hand_computation():
    """r = mean loss(F, Y) / mean loss(0, Y); <= FINAL_WARN quiet, up to FINAL_RAISE a warning,
    above it (or non-finite) NumericalError. Hand values: Y = (1, -1, 2, 0), squared loss
    (f - y)^2 / 2: the zero model's mean is (1 + 1 + 4 + 0) / 8 = 0.75."""
    from rwtool.losses import get_loss
    from rwtool.solvers._divergence import (FINAL_RAISE, FINAL_WARN, check_final_model,
                                            final_loss_ratio, loss_limit)
    sq, lg = get_loss("squared"), get_loss("logistic")
    Y = np.array([[1.0], [-1.0], [2.0], [0.0]])
    F = np.array([[0.0], [1.0], [2.0], [1.0]])        # losses 0.5, 2, 0, 0.5 -> mean 0.75
    r, value, zero = final_loss_ratio(F, Y, sq)
    assert (r, value, zero) == pytest.approx((1.0, 0.75, 0.75))
    # logistic: log(1 + e^{-yf}); the zero model's is log 2 on every row
    Yc = np.array([[1.0], [-1.0]])
    Fc = np.array([[3.0], [3.0]])
    expect = (np.log1p(np.exp(-3.0)) + np.log1p(np.exp(3.0))) / 2 / np.log(2.0)
    assert final_loss_ratio(Fc, Yc, lg)[0] == pytest.approx(expect)
    assert final_loss_ratio(np.array([[np.inf], [0.0]]), Yc, sq)[0] == np.inf
    # the early-stop limit: DIVERGED times the zero model's largest row loss, 2^2 / 2 = 2
    from rwtool.solvers import _divergence as divergence
    assert loss_limit(sq, Y) == pytest.approx(divergence.DIVERGED * 2.0)
    # check_final_model on features X (feature_map None) and coefficients c: F = X c, with
    # c scaled so that r sits just below/above each threshold (r = mean((s x - y)^2)/2 / zero)
    x = np.array([[1.0], [1.0], [1.0], [1.0]])
    y = np.zeros((4, 1)) + 1.0                          # zero model: 0.5; r(s) = (s - 1)^2
    kw = dict(iteration=7, fix="lower the step")
    for r_target, outcome in ((0.9 * FINAL_WARN, "quiet"),
                              ((FINAL_WARN + FINAL_RAISE) / 2, "warn"),
                              (0.99 * FINAL_RAISE, "warn"), (1.01 * FINAL_RAISE, "raise")):
        s = 1.0 + np.sqrt(r_target)
        coef = np.array([[s]])
        if outcome == "raise":
            with pytest.raises(rw.NumericalError, match="lower the step") as exc:
                check_final_model("SGD", None, x, y, coef, sq, **kw)
            assert exc.value.solver == "sgd" and exc.value.iteration == 7
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            r = check_final_model("SGD", None, x, y, coef, sq, **kw)
        assert r == pytest.approx(r_target)
        assert [w.category for w in caught] == ([] if outcome == "quiet"
                                                else [rw.NumericalWarning])


def test_final_check_scores_a_fixed_sample_of_large_sets():
    from rwtool.solvers._divergence import FINAL_ROWS, final_rows
    idx = final_rows(10 * FINAL_ROWS)
    assert len(idx) == FINAL_ROWS and np.all(np.diff(idx) > 0)
    np.testing.assert_array_equal(idx, final_rows(10 * FINAL_ROWS))
    np.testing.assert_array_equal(final_rows(5), np.arange(5))
