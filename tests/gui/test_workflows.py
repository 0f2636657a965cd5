"""What a Weka, Orange or scikit-learn user expects of the app (issue 15): honest evaluation,
k-fold, class weights, tuning, the runs table, reproducibility and the estimate before a fit.

Oracles: scikit-learn's metrics, rwtool's API called directly with the same folds, seeds and
weights, weighted least squares against the same fit on repeated rows, the CSV read back.
"""

from __future__ import annotations

import csv

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from tests.gui.test_main_window import (  # noqa: E402,F401
    TIMEOUT, choose, load, moons_csv, regression_csv, run_snippet, train, window, write_csv)


def _imbalanced_csv(path, n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 1.0, "rare", "common")
    return write_csv(path, ["a", "b", "c", "label"],
                     [[f"{a:.5f}", f"{b:.5f}", f"{c:.5f}", v] for (a, b, c), v in zip(X, y)])


# ------------------------------------------------------------------ honest evaluation

@pytest.mark.slow
def test_baseline_and_per_class_shown(qtbot, window, tmp_path):
    load(qtbot, window, _imbalanced_csv(tmp_path / "imb.csv"))
    choose(window, "rw", n_features=40)
    run = train(qtbot, window)
    m = run.result["metrics"]
    tr, te = window.data_info["train"], window.data_info["test"]
    values, counts = np.unique(tr.y, return_counts=True)
    majority = values[np.argmax(counts)]
    assert m["baseline test error (majority class)"] == pytest.approx(np.mean(te.y != majority))
    assert "test balanced accuracy" in m and "test Cohen's kappa" in m
    view = window.results_panel.metrics_view
    assert view.class_table.isVisibleTo(view) and view.class_table.rowCount() == 2
    assert {view.class_table.item(i, 0).text() for i in range(2)} == {"common", "rare"}


# ------------------------------------------------------------------ k-fold

@pytest.mark.slow
def test_kfold_metrics_match_the_api_and_the_snippet(qtbot, window, tmp_path):
    load(qtbot, window, moons_csv(tmp_path / "m.csv"))
    window.eval_panel.set_kfold(4)
    choose(window, "rks", n_features=50)
    run = train(qtbot, window)
    assert run.status == "done", run.note
    m = run.result["metrics"]
    from rwtool import RKSClassifier
    from rwtool.model_selection._search import kfold_indices
    tr = window.data_info["train"]
    folds = kfold_indices(tr.y, 4, True, window.data_panel.options()["random_state"])
    errs = [np.mean(RKSClassifier(**run.params).fit(tr.X[a], tr.y[a]).predict(tr.X[b])
                    != tr.y[b]) for a, b in folds]
    assert m["cv error"] == pytest.approx(np.mean(errs), abs=0, rel=1e-15)
    assert m["cv error (std over 4 folds)"] == pytest.approx(np.std(errs, ddof=1))
    assert run.result["cv"]["k"] == 4
    # the snippet prints the same numbers, exactly
    ns = run_snippet(window.snippet(run), tmp_path)
    for key, value in ns["metrics"].items():
        assert m[key] == value, key


# ------------------------------------------------------------------ reproducible by default

@pytest.mark.slow
def test_default_seed_reproduces_and_snippet_gives_the_same_numbers(qtbot, window, tmp_path):
    load(qtbot, window, regression_csv(tmp_path / "r.csv"))
    choose(window, "rw", n_features=60)          # random_state untouched: 0 in the form
    a = train(qtbot, window)
    b = train(qtbot, window)
    assert a.params["random_state"] == 0
    assert a.result["metrics"]["test MSE"] == b.result["metrics"]["test MSE"]
    ns = run_snippet(window.snippet(a), tmp_path)
    assert set(ns["metrics"]) >= {"train MSE", "test MSE", "train R^2", "test R^2"}
    for key, value in ns["metrics"].items():
        assert a.result["metrics"][key] == value, key
    # clearing the field asks for a fresh draw
    window.method_panel.field_widget("random_state").setText("")
    c = train(qtbot, window)
    assert c.params["random_state"] is None


# ------------------------------------------------------------------ class weights

def test_weighted_least_squares_equals_repeated_rows():
    from rwtool import RKSClassifier, RWRegressor
    rng = np.random.default_rng(0)
    X = rng.standard_normal((150, 3))
    y = X[:, 0] + X[:, 1] ** 2
    w = rng.integers(0, 4, 150)
    rep = np.repeat(np.arange(150), w)
    for cls, yy, kw in ((RWRegressor, y, {"eps": 0.0}), (RKSClassifier, (y > 1).astype(int), {})):
        a = cls(n_features=40, reg=1e-3, standardize=False, random_state=0, **kw)
        b = cls(n_features=40, reg=1e-3, standardize=False, random_state=0, **kw)
        a.fit(X, yy, sample_weight=w)
        b.fit(X[rep], yy[rep])
        np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-9, atol=1e-12)
    from gui.panels.evaluation_panel import weights_supported
    assert weights_supported(RWRegressor(solver="osd", reg=1e-3)) == ""
    from rwtool import BKerNNRegressor, GreedyMKClassifier
    assert weights_supported(BKerNNRegressor()) == ""
    assert weights_supported(GreedyMKClassifier()) == ""

    class NoWeights:
        def fit(self, X, y):
            return self
    assert "does not take class weights" in weights_supported(NoWeights())


@pytest.mark.slow
def test_balanced_class_weights_in_the_app(qtbot, window, tmp_path):
    load(qtbot, window, _imbalanced_csv(tmp_path / "imb.csv"))
    choose(window, "rw", n_features=40, reg="1e-4")
    ep = window.eval_panel
    assert ep.balance.isEnabled()
    ep.balance.setChecked(True)
    run = train(qtbot, window)
    tr = window.data_info["train"]
    from rwtool import RWClassifier

    from gui.panels.evaluation_panel import balanced_weights
    w = balanced_weights(tr.y)
    assert w[tr.y == "rare"][0] > w[tr.y == "common"][0]
    ref = RWClassifier(**run.params).fit(tr.X, tr.y, sample_weight=w)
    np.testing.assert_allclose(run.result["estimator"].coef_, ref.coef_)
    ns = run_snippet(window.snippet(run), tmp_path)
    np.testing.assert_allclose(ns["model"].coef_, ref.coef_)
    # every RW solver takes weights, and so do GreedyMK and BKerNN (their weighted objectives)
    choose(window, "rw", solver="osd")
    assert ep.balance.isEnabled()
    choose(window, "greedy")
    assert ep.balance.isEnabled()
    choose(window, "bkernn", n_particles=5, max_iter=2)
    assert ep.balance.isEnabled() and ep.balance.isChecked()
    run = train(qtbot, window)
    from rwtool import BKerNNClassifier
    ref = BKerNNClassifier(**run.params).fit(tr.X, tr.y, sample_weight=w)
    np.testing.assert_allclose(run.result["estimator"].dual_coef_, ref.dual_coef_)


# ------------------------------------------------------------------ tuning

@pytest.mark.slow
def test_randomized_search_from_the_form(qtbot, window, tmp_path):
    load(qtbot, window, moons_csv(tmp_path / "m.csv"))
    choose(window, "rw", n_features=40)
    ep = window.eval_panel
    assert ep.tune.isEnabled()
    ep.set_tuning(True, n_iter=5, cv=3)
    events = []
    window.worker.progress.connect(lambda rid, ev: events.append(ev))
    run = train(qtbot, window)
    assert run.status == "done", run.note
    s = run.result["search"]
    from rwtool import RWClassifier
    from rwtool.model_selection._search import RandomizedSearchCV, default_space
    tr = window.data_info["train"]
    tmpl = RWClassifier(**dict(run.params, **{k: v for k, v in
                                              window.method_panel.params().items()
                                              if k not in s["best_params"]}))
    ref = RandomizedSearchCV(tmpl, default_space(tmpl), n_iter=5, cv=3, refit=False,
                             random_state=window.data_panel.options()["random_state"])
    ref.fit(tr.X, tr.y)
    assert s["best_params"] == ref.best_params_
    assert s["best_score"] == pytest.approx(ref.best_score_)
    # live progress per candidate, and the best parameters are now in the form
    assert any(ev["stage"] == "search" and "best_score" in ev["metrics"] for ev in events)
    params = window.method_panel.params()
    for k, v in s["best_params"].items():
        assert params[k] == pytest.approx(v, rel=1e-5)
    assert run.params["sigma"] == s["best_params"]["sigma"]
    # methods without the papers' space: the form says so
    choose(window, "greedy")
    assert not ep.tune.isEnabled() and "search spaces" in ep.tune_note.text()


@pytest.mark.slow
def test_randomized_search_with_class_weights(qtbot, window, tmp_path):
    load(qtbot, window, _imbalanced_csv(tmp_path / "imb.csv"))
    choose(window, "rw", n_features=30)
    ep = window.eval_panel
    ep.set_tuning(True, n_iter=3, cv=3)
    ep.balance.setChecked(True)
    run = train(qtbot, window)
    assert run.status == "done", run.note
    s = run.result["search"]
    from rwtool import RWClassifier
    from rwtool.model_selection._search import RandomizedSearchCV, default_space

    from gui.panels.evaluation_panel import balanced_weights
    tr = window.data_info["train"]
    w = balanced_weights(tr.y)
    tmpl = RWClassifier(**dict(run.params, **{k: v for k, v in
                                              window.method_panel.params().items()
                                              if k not in s["best_params"]}))
    ref = RandomizedSearchCV(tmpl, default_space(tmpl), n_iter=3, cv=3, refit=False,
                             random_state=window.data_panel.options()["random_state"])
    ref.fit(tr.X, tr.y, sample_weight=w)
    assert s["best_params"] == ref.best_params_
    assert s["best_score"] == pytest.approx(ref.best_score_)
    final = RWClassifier(**run.params).fit(tr.X, tr.y, sample_weight=w)
    np.testing.assert_allclose(run.result["estimator"].coef_, final.coef_)


# ------------------------------------------------------------------ runs table

@pytest.mark.slow
def test_runs_table_sort_and_export(qtbot, window, tmp_path):
    load(qtbot, window, moons_csv(tmp_path / "moons.csv"))
    choose(window, "rw", n_features=20)
    a = train(qtbot, window)
    choose(window, "rw", n_features=120)
    b = train(qtbot, window)
    rl = window.run_list
    col = rl.COLUMNS.index("Features used")
    from PySide6.QtCore import Qt
    rl.table.sortByColumn(col, Qt.DescendingOrder)
    used = [r.result["metrics"]["features used"] for r in rl.rows()]
    assert used == sorted(used, reverse=True)
    out = str(tmp_path / "runs.csv")
    assert window.export_runs(out)
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2
    by_id = {int(r["run"]): r for r in rows}
    for run in (a, b):
        r = by_id[run.run_id]
        assert r["dataset"] == "moons.csv" and r["task"] == "binary"
        assert float(r["error / MSE"]) == run.result["metrics"]["test error"]
        assert float(r["AUC / R^2"]) == run.result["metrics"]["test AUC"]
        assert int(r["param n_features"]) == run.params["n_features"]
        assert float(r["fit time (s)"]) == run.result["metrics"]["fit time (s)"]
        assert all(f"param {k}" in r for k in run.params)


def test_runs_table_headline_prefers_test_then_cv_then_train():
    """A k-fold run without held-out rows is summarised by its cross-validated mean (the
    "cv <metric>" keys of gui.logic.plans.KFold), not by its optimistic training figure."""
    from gui.logic.runs_table import pick_metric
    m = {"train error": 0.01, "cv error": 0.12, "cv error (std over 5 folds)": 0.03}
    assert pick_metric(m, "error") == ("cv error", 0.12)
    assert pick_metric({**m, "test error": 0.2}, "error") == ("test error", 0.2)
    assert pick_metric({"train R^2": 0.9}, "R^2") == ("train R^2", 0.9)


# ------------------------------------------------------------------ estimate before a long fit

@pytest.mark.slow
def test_long_fit_is_confirmed_with_its_estimate(qtbot, window, tmp_path, monkeypatch):
    import gui.logic.preflight
    from rwtool.resources import FitEstimate
    load(qtbot, window, moons_csv(tmp_path / "m.csv"))
    choose(window, "rw", n_features=30)
    monkeypatch.setattr(gui.logic.preflight, "estimate_fit",
                        lambda est, n, d, k=1: FitEstimate(50 << 20, 900.0, "test"))
    monkeypatch.setattr(gui.logic.preflight, "cpu_share", lambda load=None: 1.0)  # quiet
    asked = []
    window.ask = lambda title, text: asked.append(text) or False
    n = len(window.run_list.runs)
    window.train()
    assert asked and "15 min" in asked[-1] and "50.0 MiB" in asked[-1]
    assert len(window.run_list.runs) == n                  # refused: nothing started
    window.ask = lambda title, text: True
    run = train(qtbot, window)
    assert run.status == "done"


# ------------------------------------------------------------------ loading control

@pytest.mark.slow
def test_reading_options_override_rename_and_remember(qtbot, window, tmp_path):
    # a header-less ';' file with decimal commas: detection guesses, the user decides
    rng = np.random.default_rng(0)
    rows = [[f"{a:.3f}".replace(".", ","), f"{b:.3f}".replace(".", ","), str(int(a + b > 0))]
            for a, b in rng.standard_normal((120, 2))]
    path = tmp_path / "raw.data"
    path.write_text("\n".join(";".join(r) for r in rows) + "\n", encoding="latin-1")
    load(qtbot, window, str(path))
    box = window.data_panel.read_box
    box.toggle.setChecked(True)
    box.set_values({"header": False, "delimiter": ";", "decimal": ",", "encoding": "latin-1",
                    "names": ["width", "height", "label"]})
    box.apply_button.click()
    qtbot.waitUntil(lambda: window.data_info is not None
                    and window.data_panel.preview.names == ["width", "height", "label"],
                    timeout=TIMEOUT)
    qtbot.waitUntil(lambda: window.data_info is not None
                    and window.data_info["options"].get("names") is not None, timeout=TIMEOUT)
    tr = window.data_info["train"]
    assert tr.n_samples + window.data_info["test"].n_samples == 120     # no row lost as header
    from rwtool.data import read_csv
    ref = read_csv(str(path), "label", header=False, delimiter=";", decimal=",",
                   encoding="latin-1", names=["width", "height", "label"])
    assert sorted(ref.X[:, 0].tolist()) == sorted(
        np.concatenate([tr.X[:, 0], window.data_info["test"].X[:, 0]]).tolist())
    # the run records the options, and its snippet reads the file the same way
    choose(window, "rw", n_features=20)
    run = train(qtbot, window)
    ns = run_snippet(window.snippet(run), tmp_path)
    assert ns["metrics"]["test error"] == run.result["metrics"]["test error"]
    # remembered for this file: opening it again reads it the same way
    window.open_path(str(moons_csv(tmp_path / "other.csv")))
    qtbot.waitUntil(lambda: window.data_info is not None
                    and window.data_info["path"].endswith("other.csv"), timeout=TIMEOUT)
    assert box.values() == {}
    load(qtbot, window, str(path))
    qtbot.waitUntil(lambda: window.data_panel.preview.names == ["width", "height", "label"],
                    timeout=TIMEOUT)
    assert box.values()["delimiter"] == ";"


def test_a_routine_fit_is_not_asked_about():
    """The default RW and RKS fits of 20,000 rows at T = 2000 take seconds: no confirmation
    (the time model once put them at 7 minutes, and the app asked before every one)."""
    import rwtool as rw
    from gui.logic.preflight import preflight
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((20000, 10)), rng.integers(0, 2, 20000)
    for est in (rw.RWClassifier(n_features=2000), rw.RKSClassifier(n_features=2000)):
        check = preflight(est, X, y, "binary", available=16 << 30, load=0.0)
        assert not check.refuse and not check.confirm and not check.warnings
        assert check.seconds < 60
