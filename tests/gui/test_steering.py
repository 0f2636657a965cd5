"""Every run can be steered (issue 24): Cancel reaches every phase, every phase reports
progress, live curves cost a bounded share of the fit, plots and messages belong to the run
they describe, runs are named by what differs, the Data tab unticks columns that carry nothing.

Cancel latency is counted in progress events and in slices of work after the cancel, never in
seconds (the machine is shared): a cancel set at an event ends the run before the next one,
and a cancel that arrives inside a slice of work ends it after that slice.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")
pytest.importorskip("pyqtgraph")

from PySide6.QtCore import Qt  # noqa: E402

from tests.gui.test_main_window import (  # noqa: E402,F401
    TIMEOUT, choose, load, moons_csv, regression_csv, train, window, write_csv)


class CancelAt:
    """Sets the worker's cancel flag, on the worker thread, at the first event of ``stage``
    (as a click landing while that phase runs), and counts the events that still follow.
    ``started=True``: at its first event with ``done > 0`` (the phase has run its kernels
    once, so the next report is one chunk away, whatever loading them cost)."""

    def __init__(self, window, stage, started: bool = False):
        self.worker = window.worker.worker
        self.stage, self.started, self.seen, self.after = stage, started, [], None
        self.worker.progress.connect(self, Qt.DirectConnection)

    def __call__(self, run_id, ev):
        self.seen.append(ev.get("stage"))
        if self.after is not None:
            self.after += 1
        elif ev.get("stage") == self.stage and not (self.started and not ev.get("done")):
            self.after = 0
            self.worker.cancel_flag.set()

    def close(self):
        self.worker.progress.disconnect(self)


def call_cancelled_at(qtbot, window, stage, call):
    """Run ``call()`` (a job the window sends to its worker: importance, Apply Model to CSV)
    with Cancel set at the first event of ``stage``; returns the failure signal's blocker and
    the hook (its ``after``: events that still came)."""
    hook = CancelAt(window, stage)
    try:
        with qtbot.waitSignal(window.worker.call_failed, timeout=TIMEOUT) as blocker:
            call()
    finally:
        hook.close()
    return blocker, hook


def _train_cancelled_at(qtbot, window, stage):
    hook = CancelAt(window, stage)
    try:
        run = train(qtbot, window)
    finally:
        hook.close()
    return run, hook


# ----------------------------------------------------------------------------- 1. cancel

@pytest.mark.slow
@pytest.mark.parametrize("family,params", [
    ("rw", {"n_features": 40}),
    ("rks", {"n_features": 40}),
    ("greedy", {"n_features": 8}),
])
def test_cancel_reaches_the_evaluation_after_any_fit(qtbot, window, tmp_path, family, params):
    """The predictions after the fit run in slices with "evaluating" events (only BKerNN's
    predict reported progress before); a cancel there ends the run at once, and the previous
    run and its results stay."""
    load(qtbot, window, moons_csv(tmp_path / "m.csv", n=400))
    choose(window, "rw", n_features=30, random_state=0)
    first = train(qtbot, window)
    shown = window.results_panel.result
    choose(window, family, random_state=0, **params)
    run, hook = _train_cancelled_at(qtbot, window, "evaluating")
    assert "evaluating" in hook.seen
    assert hook.after == 0, hook.seen                   # no event after the cancelled one
    assert run.status == "cancelled" and "evaluating" in run.note, (run.status, run.note)
    assert window.results_panel.result is shown and first.status == "done"
    assert first.result["estimator"] is not None


@pytest.mark.slow
def test_cancelled_iterate_is_kept_without_a_pass_over_the_rows(qtbot, window, tmp_path):
    """A cancel during SFGD keeps the last completed block's iterate and ends the run without
    evaluating it: no "evaluating" event follows the cancel."""
    load(qtbot, window, moons_csv(tmp_path / "m.csv", n=400))
    choose(window, "rw", solver="sfgd", n_features=400, batch_size=10, random_state=0)
    hook = CancelAt(window, "sfgd")
    hook.stage = None            # cancel at the second sfgd update (a block has completed)

    def at_update(run_id, ev):
        if ev.get("stage") == "sfgd" and ev.get("done", 0) >= 128 and hook.after is None:
            hook.after = 0
            hook.worker.cancel_flag.set()
    hook.worker.progress.connect(at_update, Qt.DirectConnection)
    try:
        run = train(qtbot, window)
    finally:
        hook.worker.progress.disconnect(at_update)
        hook.close()
    assert run.status.startswith("cancelled"), (run.status, run.note)
    assert "evaluating" not in hook.seen
    est = run.result["estimator"]
    assert est.solver_info_.get("cancelled") and 0 < est.solver_info_["n_iter"] < 400
    assert "test error" not in run.result["metrics"]


def test_block_features_are_sliced_with_ticks(monkeypatch):
    """A cancel that arrives while SFGD computes the features of a late block (seconds on a
    large file: 64 batches x t centres) ends the fit after one slice of at most TICK_FEATURES
    features, not at the end of the block; the iterate of the last completed block is kept."""
    import rwtool.solvers._sfgd as sfgd
    from rwtool import RWClassifier, FitCancelled
    from rwtool.progress import Progress
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 3))
    y = (X[:, 0] > 0).astype(int)
    monkeypatch.setattr(sfgd, "TICK_FEATURES", 2000)
    est = RWClassifier(solver="sfgd", n_features=256, batch_size=50, random_state=0)
    est.fit(X, y)                       # the map's class, then count its feature calls
    cls = type(est.feature_map_)
    counted = {"features": 0, "cancel_at": None}
    orig = cls._features_into

    def features_into(self, Xb, out):
        orig(self, Xb, out)
        counted["features"] += out.size
        # the cancel "arrives" in the middle of the block that ends at centre 192
        if out.shape[1] == 192 and counted["cancel_at"] is None:
            counted["cancel_at"] = counted["features"]
    monkeypatch.setattr(cls, "_features_into", features_into)

    def cb(ev):
        return counted["cancel_at"] is not None
    est = RWClassifier(solver="sfgd", n_features=256, batch_size=50, random_state=0)
    with pytest.raises(FitCancelled):
        # every tick reports (no rate limit), as a tick 0.1 s after the last report does
        est.fit(X, y, callback=Progress(cb, min_interval=0.0))
    after = counted["features"] - counted["cancel_at"]
    assert after == 0, after       # the tick right after the slice saw the cancel
    assert est.solver_info_["n_iter"] == 128 and est.solver_info_.get("cancelled")
    assert est.coef_.shape[0] == 256
    # one block of 64 batches of 50 rows x 192 centres is 614,400 features: whole, the cancel
    # would have waited for all of them
    assert 64 * 50 * 192 > 100 * 2000


@pytest.mark.slow
def test_sliced_block_features_are_the_same_bits():
    """Computing a block's features a slice of rows at a time changes nothing: the model fitted
    with ticks (a callback) equals the one fitted without, bit for bit (same process)."""
    from rwtool import RWClassifier
    rng = np.random.default_rng(1)
    X = rng.standard_normal((500, 4))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    for solver in ("sfgd", "osd"):
        a = RWClassifier(solver=solver, n_features=300, random_state=2).fit(X, y)
        b = RWClassifier(solver=solver, n_features=300, random_state=2).fit(
            X, y, callback=lambda ev: False)
        np.testing.assert_array_equal(a.coef_, b.coef_)


@pytest.mark.slow
def test_sliced_predictions_are_the_same_bits():
    """rwtool.report.RowProgress predicts in slices of the feature maps' own row blocks, so the
    slices change no bit (compared in the same process; BLAS's X W^T may round a row
    differently with other rows around it, which slices of other sizes would change), and a
    cancel raises between two slices."""
    from rwtool import FitCancelled, RKSRegressor, RWRegressor, RWClassifier
    from rwtool.report import RowProgress
    rng = np.random.default_rng(2)
    X = rng.standard_normal((9001, 3))
    y = (X[:, 0] > 0).astype(int)
    for est in (RWClassifier(n_features=200, random_state=0).fit(X, y),
                RWRegressor(n_features=100, solver="osd", random_state=0).fit(X, X[:, 1]),
                RKSRegressor(n_features=200, random_state=0).fit(X, X[:, 1])):
        whole = est.predict(X)
        rows = RowProgress(lambda ev: False, "evaluating", len(X))
        np.testing.assert_array_equal(rows.predict(est.predict, X), whole)
        assert rows.done == len(X)
    events = []

    def cancel_second(ev):
        events.append(ev.done)
        return len(events) >= 2
    # T = 2000: blocks of 4096 rows (64 MB of features holds more rows at a smaller T)
    est = RKSRegressor(n_features=2000, random_state=0).fit(X[:500], X[:500, 1])
    rows = RowProgress(cancel_second, "evaluating", len(X))
    rows.progress.min_interval = 0.0
    with pytest.raises(FitCancelled):
        rows.predict(est.predict, X)
    assert 0 < rows.done < len(X)


@pytest.mark.slow
def test_bounds_on_demand_with_progress_and_cancel(qtbot, window, tmp_path):
    """The bounds (two passes over the training rows, often longer than the fit) are not
    computed after the fit; the Results tab's button computes them with "bounds" progress,
    a cancel there leaves the run as it was, and the values are est.bounds()'s."""
    load(qtbot, window, moons_csv(tmp_path / "m.csv", n=400))
    choose(window, "rw", n_features=50, random_state=0)
    run = train(qtbot, window)
    assert not any(k.startswith("bound: ") for k in run.result["metrics"])
    button = window.results_panel.metrics_view.bounds_button
    assert button.isVisibleTo(window.results_panel.metrics_view)
    # cancelled at its first "bounds" event: the run's metrics are unchanged
    before = dict(run.result["metrics"])
    hook = CancelAt(window, "bounds")
    try:
        with qtbot.waitSignal(window.worker.failed, timeout=TIMEOUT):
            qtbot.mouseClick(button, Qt.LeftButton)
    finally:
        hook.close()
    assert hook.after == 0 and run.result["metrics"] == before
    assert not window.training_panel.running
    # computed
    stages = []
    window.worker.progress.connect(lambda rid, ev: stages.append(ev.get("stage")))
    with qtbot.waitSignal(window.run_finished, timeout=TIMEOUT):
        qtbot.mouseClick(button, Qt.LeftButton)
    assert "bounds" in stages
    tr = window.data_info["train"]
    ref = run.result["estimator"].bounds(tr.X, tr.y)
    m = run.result["metrics"]
    for key in ("theta", "tau", "rkhs_norm", "train_loss", "rademacher_bound", "train_error"):
        assert m[f"bound: {key}"] == pytest.approx(ref[key], rel=1e-9, abs=1e-12), key
    assert not button.isVisibleTo(window.results_panel.metrics_view)


def test_bounds_slices_give_the_unsliced_values():
    """bounds() with a callback runs in blocks of rows; its values equal a dense computation
    (the decision values, the training loss and error, tau from the full matrix)."""
    from rwtool import RWClassifier
    from rwtool.bounds import fresh_map
    rng = np.random.default_rng(3)
    X = rng.standard_normal((700, 3))
    y = np.where(X[:, 0] + 0.3 * X[:, 1] > 0, "a", "b")
    est = RWClassifier(n_features=120, random_state=0).fit(X, y)
    events = []
    b = est.bounds(X, y, callback=lambda ev: events.append(ev) and False)
    assert {ev.stage for ev in events} == {"bounds"}
    Xp = est._prepare_X(X)
    F = est.feature_map_.transform(Xp) @ est.coef_
    Y = np.where(y == est.classes_[1], 1.0, -1.0)[:, None]
    assert b["train_loss"] == pytest.approx(float(np.mean((F - Y) ** 2) / 2), rel=1e-10)
    assert b["train_error"] == pytest.approx(float(np.mean(est.predict(X) != y)), abs=0)
    P = fresh_map(est.feature_map_, 1000, 0).base_predictor(Xp)
    assert b["tau"] == pytest.approx(float(np.sqrt(np.max(np.mean(P * P, axis=1)))),
                                     rel=1e-12)


@pytest.mark.slow
def test_apply_to_file_reports_progress_and_cancels(qtbot, window, tmp_path, monkeypatch):
    """Predicting a file goes through the bar ("predicting" events) and Cancel stops it; the
    status line does not keep saying "Predicting" afterwards."""
    path = regression_csv(tmp_path / "r.csv", n=600)
    load(qtbot, window, path)
    choose(window, "rw", n_features=40, random_state=0)
    train(qtbot, window)
    import rwtool.report.evaluation as ev_mod
    monkeypatch.setattr(ev_mod, "SLICE_ROWS", 16)   # slices of 16 rows: many events
    blocker, hook = call_cancelled_at(qtbot, window, "predicting",
                                      lambda: window.apply_model(path))
    assert blocker.args[1]["kind"] == "cancelled" and hook.after == 0
    assert not window.training_panel.running
    assert "Predicting" not in window.statusBar().currentMessage()
    with qtbot.waitSignal(window.worker.called, timeout=TIMEOUT):
        window.apply_model(path)
    assert len(window.last_applied["pred"]) == 600
    assert "Predicting" not in window.statusBar().currentMessage()
    assert window.training_panel.progress.format().startswith("done")


@pytest.mark.slow
def test_kfold_folds_cancel_within_an_event(qtbot, window, tmp_path):
    """k-fold: a cancel during the evaluation of a fold's held-out rows ends the run."""
    load(qtbot, window, moons_csv(tmp_path / "m.csv", n=300))
    choose(window, "rw", n_features=30, random_state=0)
    window.eval_panel.set_kfold(3)
    run, hook = _train_cancelled_at(qtbot, window, "evaluating")
    assert run.status == "cancelled" and hook.after == 0


# ----------------------------------------------------------------------------- 3. live curves

def test_live_validation_costs_at_most_a_tenth(monkeypatch):
    """averaged_sgd evaluates its live metric only while the time spent in it is at most
    LIVE_SHARE of the steps' time. A fake clock makes each evaluation cost 1 s and each chunk
    of steps 0.05 s: the evaluations then take at most a tenth of the run (plus the last)."""
    import rwtool.solvers._sgd as sgd
    from rwtool.features import RandomFourierFeatures
    from rwtool.progress import Progress
    clock = {"t": 0.0}
    monkeypatch.setattr(sgd.time, "perf_counter", lambda: clock["t"])
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 3))
    Y = np.where(X[:, :1] > 0, 1.0, -1.0)
    fmap = RandomFourierFeatures(n_features=20, random_state=0).fit(X)
    calls = []

    def evaluate(state):
        calls.append(state.t)
        clock["t"] += 1.0
        return {"val_error": 0.0}

    class Every(Progress):      # an event at every chunk; each chunk costs 0.05 s
        def due(self):
            clock["t"] += 0.05
            return True
    order = np.tile(np.arange(2000), 20)
    sgd.averaged_sgd(fmap, X, Y, order, 1e-4, 1.0, chunk_size=100,
                     progress=Every(lambda ev: False, min_interval=0.0),
                     evaluate=evaluate)
    chunks = len(order) // 100
    assert len(calls) >= 2 and calls[-1] == len(order)
    assert len(calls) - 1 <= sgd.LIVE_SHARE * chunks * 0.05 + 1
    assert len(calls) < chunks / 10


@pytest.mark.slow
def test_rfsgd_live_curve_uses_a_sample_of_held_out_rows(qtbot, window, tmp_path, monkeypatch):
    """The validation curve of a holdout run is computed on at most VALIDATION_SAMPLE held-out
    rows (a fixed sample), not on every held-out row at every point."""
    from gui.logic import plans
    monkeypatch.setattr(plans, "VALIDATION_SAMPLE", 50)
    monkeypatch.setattr(plans.validation_sample, "__defaults__", (50, 0))
    seen = {}
    from rwtool import RFSGDClassifier
    orig = RFSGDClassifier.fit

    def fit(self, X, y, callback=None, eval_set=None):
        seen["n"] = None if eval_set is None else len(eval_set[0])
        return orig(self, X, y, callback=callback, eval_set=eval_set)
    monkeypatch.setattr(RFSGDClassifier, "fit", fit)
    load(qtbot, window, moons_csv(tmp_path / "m.csv", n=800))
    choose(window, "rfsgd", n_features=20, random_state=0)
    run = train(qtbot, window)
    assert run.status == "done", run.note
    assert seen["n"] == 50 < len(window.data_info["test"].y)


# ----------------------------------------------------------------------------- 4. plots, status

@pytest.mark.slow
def test_each_run_starts_from_its_own_plots(qtbot, window, tmp_path):
    """The previous run's plots leave the Training tab when the next run starts (they stayed,
    empty, under their old titles), and the live x axes start at the data's first x."""
    load(qtbot, window, moons_csv(tmp_path / "m.csv", n=300))
    choose(window, "rfsgd", n_features=20, random_state=0)
    train(qtbot, window)
    board = window.training_panel.board
    assert board.plots()
    old = list(board.plots().values())
    window.training_panel.started("next run")
    assert board.plots() == {}
    assert all(p.isHidden() for p in old)
    window.training_panel.stopped("cancelled")
    # axes: a curve that starts at x = 3 is drawn from x = 3, not from a padded negative x
    # (during the run the axis reaches past the last point; once ended, to it exactly)
    board.append("fold_error", "fold", 3.0, 0.2)
    board.append("fold_error", "fold", 4.0, 0.1)
    board.flush()
    plot = board.plots()["fold_error"]
    (x0, x1), _ = plot.viewRange()
    assert x0 == pytest.approx(3.0) and x1 >= 4.0
    plot.settle()
    board.flush()
    (x0, x1), _ = plot.viewRange()
    assert x0 == pytest.approx(3.0) and x1 == pytest.approx(4.0)


def test_warm_up_message_only_while_warming_up(qtbot):
    from gui.app import create_app
    from gui.panels.training_panel import TrainingPanel
    create_app()
    panel = TrainingPanel()
    qtbot.addWidget(panel)
    panel.started("a run")                      # no warm-up running: the clock runs now
    assert "warm-up" not in panel.time_label.text()
    panel.stopped("done")
    panel.started("a run", warming_up=True)
    assert "warm-up" in panel.time_label.text()
    panel.warm_up_done()
    assert "warm-up" not in panel.time_label.text()
    panel.mark_cancelling()
    assert "cancelling" in panel.progress.format() and "cancelling" in panel.time_label.text()
    panel.on_progress({"stage": "iterations", "done": 5, "total": 10, "metrics": {}})
    assert "cancelling" in panel.progress.format()      # a late event does not hide it
    panel.stopped("cancelled")


# ----------------------------------------------------------------------------- 5. run names

def test_runs_are_named_by_what_differs():
    from gui.logic.runs_table import Run, run_labels, runs_rows
    a = Run(7, "rw", "RKHS weighting", "RWClassifier",
            {"instantiation": "rwsign", "solver": "lstsq", "reg": 0.01, "n_features": 500,
             "sigma": 1.0}, {"path": "/d/f.csv"})
    b = Run(8, "rw", "RKHS weighting", "RWClassifier",
            {"instantiation": "rwsign", "solver": "osd", "reg": 0.1, "n_features": 500,
             "sigma": 1.0}, {"path": "/d/f.csv"})
    labels = run_labels([a, b])
    assert labels[7] != labels[8]
    assert "lstsq" in labels[7] and "osd" in labels[8]
    assert "reg=0.01" in labels[7] and "reg=0.1" in labels[8]
    assert "n_features" not in labels[7] and "sigma" not in labels[7]   # the same in both
    cols, rows = runs_rows([a, b])
    assert "name" in cols and rows[0]["name"] == labels[7]


def test_an_empty_field_is_labelled_by_what_it_means():
    """A parameter left empty (None) differs from a run that set it: the label says what the
    empty field means (the parameter table's words, or "default"), never "None"."""
    from gui.logic.runs_table import Run, run_labels
    from rwtool import RWClassifier
    runs = [Run(i, "rw", "RKHS weighting", "RWClassifier",
                {"solver": "sfgd", "batch_size": b, "random_state": s, "max_iter": m})
            for i, (b, s, m) in enumerate([(None, None, None), (64, 0, 7)])]
    labels = run_labels(runs)
    assert "None" not in labels[0], labels
    params = RWClassifier._parameters
    assert f"batch_size={params['batch_size'].none}" in labels[0]     # min(500, rows)
    assert f"random_state={params['random_state'].none}" in labels[0]
    assert f"max_iter={params['max_iter'].none}" in labels[0] and "max_iter=7" in labels[1]
    runs[0].class_name = "NoSuchEstimator"        # a run of a class the table does not know
    assert "batch_size=default" in run_labels(runs)[0]


@pytest.mark.slow
def test_runs_table_and_legend_tell_runs_apart(qtbot, window, tmp_path):
    load(qtbot, window, moons_csv(tmp_path / "m.csv", n=300))
    choose(window, "rfsgd", n_features=20, random_state=0, reg=0.001)
    a = train(qtbot, window)
    choose(window, "rfsgd", n_features=20, random_state=0, reg=0.01)
    b = train(qtbot, window)
    rl = window.run_list
    col = rl._FIELDS.index("method")
    texts = {rl.table.item(r, col).text() for r in range(rl.table.rowCount())}
    assert len(texts) == 2 and any("reg=0.001" in t for t in texts)
    rl.select([a.run_id, b.run_id])
    qtbot.waitUntil(lambda: not rl.drawing, timeout=TIMEOUT)     # one run a step
    legend = [label.text for _, label in rl.compare_plot.legend.items]
    assert len(set(legend)) == 2 and all("reg=" in t for t in legend), legend


# ----------------------------------------------------------------------------- 6. data tab

def test_row_index_constant_and_identifier_are_unticked(qtbot, tmp_path):
    """adults' first column numbers the rows: unticked by default with the note why, in the
    app's words (no ignore=[...] or --ignore)."""
    from gui.app import create_app
    from gui.panels.data_panel import DataPanel
    create_app()
    rng = np.random.default_rng(0)
    rows = [[str(i), f"{rng.standard_normal():.4f}", "7", f"id{i:04d}",
             rng.choice(["x", "y"]), "yes" if rng.random() > 0.5 else "no"]
            for i in range(1, 81)]
    path = write_csv(tmp_path / "d.csv", ["col1", "a", "const", "ident", "cat", "label"], rows)
    panel = DataPanel()
    qtbot.addWidget(panel)
    panel.open_path(path)
    qtbot.waitUntil(lambda: panel.train is not None, timeout=TIMEOUT)
    assert panel.features() == ["a", "cat"]
    note = panel.exclusion_label.text()
    for name in ("col1", "const", "ident"):
        assert f"{name} is unticked" in note
    assert "numbers the rows" in note and "ignore=" not in note and "--ignore" not in note
    assert panel.exclusion_label.isVisibleTo(panel)


def test_app_terms_name_the_controls():
    from gui.logic.terms import APP_TERMS
    assert APP_TERMS.setting("ignore", "col1") == "untick col1 in the Data tab"
    for key in ("header", "delimiter", "decimal", "encoding", "missing"):
        text = APP_TERMS.setting(key, "x")
        assert "--" not in text and f"{key}=" not in text, text


def test_search_cancel_reaches_inside_a_candidate_fit():
    """Tuning: the randomized search's candidate fits report to its callback (before, a cancel
    waited for a candidate's k fits to end: minutes on a large file)."""
    from rwtool import FitCancelled, RWClassifier
    from rwtool.model_selection import RandomizedSearchCV, default_space
    from rwtool.progress import Progress
    rng = np.random.default_rng(4)
    X = rng.standard_normal((300, 3))
    y = (X[:, 0] > 0).astype(int)
    est = RWClassifier(solver="sfgd", n_features=128, random_state=0)
    seen = []

    def cb(ev):
        seen.append((ev.stage, ev.done, ev.kind))
        # an update while no candidate has finished: from inside the first one's fits
        return ev.stage == "search" and ev.kind == "update" and ev.done == 0
    search = RandomizedSearchCV(est, space=default_space(est), n_iter=3, cv=3, refit=False,
                                random_state=0)
    with pytest.raises(FitCancelled):
        search.fit(X, y, callback=Progress(cb, min_interval=0.0))
    assert seen[-1] == ("search", 0, "update")
