"""The desktop app driven through its real widgets (pytest-qt, QT_QPA_PLATFORM=offscreen).

Load a CSV, choose target and features, train, cancel, compare, export, reload and apply a
saved model; every bad input of the data layer and bad parameters end as a message in the
window with the previous data and runs intact. Oracles: the same estimator fitted directly with
the API on the same split, the written files read back, rwtool's own formulas.
"""

from __future__ import annotations

import csv
import os

import numpy as np
import pytest

pytest.importorskip("pytestqt")
pytest.importorskip("pyqtgraph")

from PySide6.QtCore import QMimeData, QPointF, QSettings, Qt, QUrl  # noqa: E402
from PySide6.QtGui import QDropEvent  # noqa: E402

from gui.app import create_app  # noqa: E402
from gui.main_window import MainWindow  # noqa: E402

TIMEOUT = 60_000


def write_csv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        if header is not None:
            w.writerow(header)
        w.writerows(rows)
    return str(path)


def moons_csv(path, n=240, seed=0):
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, np.pi, n)
    lab = rng.integers(0, 2, n)
    x1 = np.where(lab == 0, np.cos(t), 1 - np.cos(t)) + 0.15 * rng.standard_normal(n)
    x2 = np.where(lab == 0, np.sin(t), 0.5 - np.sin(t)) + 0.15 * rng.standard_normal(n)
    rows = [[f"{a:.5f}", f"{b:.5f}", "yes" if c else "no"] for a, b, c in zip(x1, x2, lab)]
    return write_csv(path, ["x1", "x2", "label"], rows)


def regression_csv(path, n=200, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 3))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.05 * rng.standard_normal(n)
    rows = [[f"{a:.5f}", f"{b:.5f}", f"{c:.5f}", f"{v:.5f}"] for (a, b, c), v in zip(X, y)]
    return write_csv(path, ["a", "b", "c", "y"], rows)


@pytest.fixture
def window(qtbot, tmp_path):
    create_app()
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat)
    # the fits on the worker thread: tests replace functions of the fit path in this process
    # (tests/gui/test_fit_process.py drives the app's fit process)
    win = MainWindow(settings=settings, warm_up=False, fit_process=False)
    qtbot.addWidget(win)
    win.resize(1280, 800)
    win.show()
    yield win
    win.worker.shutdown()
    import gc
    gc.collect()


def load(qtbot, win, path, target=None):
    win.open_path(path, target)
    qtbot.waitUntil(lambda: win.data_info is not None and win.data_info["path"] == path
                    and not win.data_panel.is_loading, timeout=TIMEOUT)


def choose(win, family, **params):
    win.method_panel.set_method(family)
    for k, v in params.items():
        w = win.method_panel.field_widget(k)
        if hasattr(w, "setText"):
            w.setText(str(v))
        elif hasattr(w, "setChecked"):
            w.setChecked(bool(v))
        else:
            w.setCurrentIndex(w.findData(v))


def run_snippet(code, folder):
    """Execute a run's Python snippet in ``folder`` (it saves model.rwm there)."""
    ns = {}
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        exec(compile(code, "snippet.py", "exec"), ns)
    finally:
        os.chdir(cwd)
    return ns


def train(qtbot, win):
    with qtbot.waitSignal(win.run_finished, timeout=TIMEOUT) as blocker:
        qtbot.mouseClick(win.training_panel.train_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: not win.results_panel.drawing, timeout=TIMEOUT)
    return win.run_list.runs[blocker.args[0]]


# ----------------------------------------------------------------------------- load and train

@pytest.mark.slow
def test_load_train_matches_the_api(qtbot, window, tmp_path):
    path = moons_csv(tmp_path / "moons.csv")
    load(qtbot, window, path)
    dp = window.data_panel
    assert dp.target() == "label"                        # the last column is suggested
    assert dp.features() == ["x1", "x2"]
    assert "numeric" in window.preview_table.horizontalHeaderItem(0).text()
    assert window.preview_table.rowCount() == 20
    assert window.method_panel.task == "binary"

    choose(window, "rw", n_features=150, random_state=3, instantiation="rwrelu")
    run = train(qtbot, window)
    assert run.status == "done", run.note
    info = window.data_info
    tr, te = info["train"], info["test"]
    from rwtool import RWClassifier
    ref = RWClassifier(**run.params).fit(tr.X, tr.y)
    m = run.result["metrics"]
    assert m["test error"] == pytest.approx(np.mean(ref.predict(te.X) != te.y))
    assert m["train error"] == pytest.approx(np.mean(ref.predict(tr.X) != tr.y))
    cm = run.result["confusion"]
    assert cm.sum() == len(te.y) and np.trace(cm) == np.sum(ref.predict(te.X) == te.y)
    tabs = window.results_panel.plots()
    assert {"Confusion matrix", "ROC", "Decision regions", "Coefficients"} <= set(tabs)
    assert run.result["grid"]["z"].shape == (120, 120)


def test_regression_tabs_and_importance(qtbot, window, tmp_path):
    path = regression_csv(tmp_path / "reg.csv")
    load(qtbot, window, path)
    assert window.method_panel.task == "regression"
    choose(window, "rw", instantiation="rwstumps", n_features=120, random_state=0, reg=1e-6)
    run = train(qtbot, window)
    assert run.status == "done", run.note
    tabs = set(window.results_panel.plots())
    assert {"Predicted vs actual", "Residuals", "Importance"} <= tabs
    assert "Confusion matrix" not in tabs
    te = window.data_info["test"]
    pred = run.result["pred_test"]
    mse = np.mean((pred - te.y) ** 2)
    assert run.result["metrics"]["test MSE"] == pytest.approx(mse)
    r2 = 1 - np.sum((te.y - pred) ** 2) / np.sum((te.y - te.y.mean()) ** 2)
    assert run.result["metrics"]["test R^2"] == pytest.approx(r2)
    imp = run.result["importance"]
    assert imp.shape == (3,) and imp.sum() == pytest.approx(1.0)
    # y = sin(a) + b/2: the irrelevant column c gets the smallest share
    assert np.argmin(imp) == 2


# ----------------------------------------------------------------------------- cancel

@pytest.mark.slow
def test_cancel_iterative_keeps_last_iterate(qtbot, window, tmp_path):
    path = moons_csv(tmp_path / "moons.csv", n=400)
    load(qtbot, window, path)
    # Long enough (about 6e6 SGD steps) that the queued Cancel always lands before the end.
    choose(window, "rfsgd", n_epochs=20000, chunk_size=50, n_features=50, random_state=0)
    events = []

    def first_event(run_id, ev):
        # cancel once an iteration chunk has completed, so there is an iterate to keep
        if ev.get("stage") == "iterations" and ev.get("done", 0) > 0 and not events:
            events.append(ev)
            window.cancel()
    window.worker.progress.connect(first_event)
    run = train(qtbot, window)
    assert run.status.startswith("cancelled"), run.status
    est = run.result["estimator"]
    total = 20000 * window.data_info["train"].n_samples
    assert 0 < est.n_iter_ < total
    # the cancel asked to stop now: the iterate is kept without a pass over every row
    assert run.result["cancelled"] and "test error" not in run.result["metrics"]
    assert any("not evaluating" in n or "without evaluating" in n for n in run.result["notes"])
    test = window.data_info["test"]
    assert est.predict(test.X).shape == test.y.shape      # a usable model
    assert window.training_panel.train_button.isEnabled()
    # the status line says the run was cancelled, not that it finished with no figure
    assert window.statusBar().currentMessage().startswith(
        f"{run.name} cancelled, the last completed iterate kept")


@pytest.mark.slow
def test_cancel_before_start_leaves_previous_run(qtbot, window, tmp_path):
    path = moons_csv(tmp_path / "moons.csv")
    load(qtbot, window, path)
    choose(window, "rw", n_features=60, random_state=0)
    first = train(qtbot, window)
    shown = window.results_panel.result
    # Hold the worker on a job of its own so that the fit is still queued when Cancel comes.
    import threading
    from gui.worker import CallJob
    gate = threading.Event()
    window.worker.submit(CallJob("hold", gate.wait, (30,)))
    with qtbot.waitSignal(window.run_finished, timeout=TIMEOUT) as blocker:
        window.train()
        window.cancel()
        gate.set()
    second = window.run_list.runs[blocker.args[0]]
    assert second.status == "cancelled"
    assert window.banner.kind == "info"
    assert window.results_panel.result is shown          # the previous results stay shown
    assert first.result["estimator"] is not None


@pytest.mark.slow
def test_cancel_reaches_the_prediction_after_a_bkernn_fit(qtbot, window, tmp_path, monkeypatch):
    """BKerNN's predict on 100,000 rows takes seconds: the evaluation after the fit reports
    "evaluating" progress (slices of rows) and a Cancel there stops the run (the previous
    results stay)."""
    import rwtool.report.evaluation as evaluation
    load(qtbot, window, regression_csv(tmp_path / "r.csv"))
    choose(window, "rw", n_features=30, random_state=0)
    first = train(qtbot, window)
    shown = window.results_panel.result
    monkeypatch.setattr(evaluation, "SLICE_ROWS", 8)     # a slice of a few rows: many events
    choose(window, "bkernn", n_particles=5, max_iter=2, random_state=0)
    stages = []
    worker = window.worker.worker

    def on_event(run_id, ev):
        # on the worker thread (direct connection), as Cancel would land during a long predict
        stages.append(ev.get("stage"))
        if ev.get("stage") == "evaluating" and ev.get("kind") == "update":
            worker.cancel_flag.set()
    worker.progress.connect(on_event, Qt.DirectConnection)
    run = train(qtbot, window)
    worker.progress.disconnect(on_event)
    assert "iterations" in stages and "evaluating" in stages
    assert run.status == "cancelled" and "evaluating" in run.note, (run.status, run.note)
    assert window.results_panel.result is shown and first.status == "done"
    assert window.training_panel.train_button.isEnabled()


# ----------------------------------------------------------------------------- compare

@pytest.mark.slow
def test_two_runs_overlay(qtbot, window, tmp_path):
    load(qtbot, window, moons_csv(tmp_path / "moons.csv"))
    choose(window, "rfsgd", n_features=40, n_epochs=3, chunk_size=40, random_state=0)
    a = train(qtbot, window)
    choose(window, "rfsgd", reg=0.01)
    b = train(qtbot, window)
    assert a.curves and b.curves
    window.run_list.select([a.run_id, b.run_id])
    assert window.run_list.selected_ids() == [a.run_id, b.run_id]
    qtbot.waitUntil(lambda: not window.run_list.drawing, timeout=TIMEOUT)   # one run a step
    items = [i for i in window.run_list.compare_plot.listDataItems()]
    assert len(items) == 2
    name = window.run_list.metric_combo.currentText()
    x, y = items[0].getData()
    np.testing.assert_allclose(y, a.curves[name][1])


# ----------------------------------------------------------------------------- exports

@pytest.mark.slow
def test_export_reload_apply(qtbot, window, tmp_path):
    path = moons_csv(tmp_path / "moons.csv")
    load(qtbot, window, path)
    choose(window, "rw", n_features=80, random_state=1)
    run = train(qtbot, window)
    est = run.result["estimator"]

    model = str(tmp_path / "m.rwm")
    assert window.save_model(model, run)
    assert os.path.getsize(model) > 0

    pred_csv = str(tmp_path / "pred.csv")
    assert window.export_predictions(pred_csv, run)
    with open(pred_csv, newline="") as fh:
        rows = list(csv.DictReader(fh))
    te = window.data_info["test"]
    test_rows = [r for r in rows if r["set"] == "test"]
    assert [r["predicted"] for r in test_rows] == [str(v) for v in est.predict(te.X)]
    assert [int(r["line"]) for r in test_rows] == list(te.rows)

    window.right_tabs.setCurrentWidget(window.results_panel)
    for tab in ("ROC", "Decision regions"):
        window.results_panel.setCurrentIndex(
            [window.results_panel.tabText(i) for i in range(window.results_panel.count())]
            .index(tab))
        for ext in ("png", "svg"):
            out = str(tmp_path / f"{tab}.{ext}")
            assert window.export_plot(out)
            head = open(out, "rb").read(64)
            assert head.startswith(b"\x89PNG") if ext == "png" else b"<svg" in \
                open(out, "rb").read() or b"<?xml" in head

    # the snippet reproduces the run with the public API
    ns = run_snippet(window.snippet(run), tmp_path)
    np.testing.assert_array_equal(ns["model"].predict(te.X), est.predict(te.X))

    # reopen the saved model and apply it to a new CSV
    n_before = len(window.run_list.runs)
    window.open_model(model)
    qtbot.waitUntil(lambda: len(window.run_list.runs) == n_before + 1, timeout=TIMEOUT)
    loaded = window.run_list.runs[max(window.run_list.runs)]
    assert loaded.status == "loaded"
    new = moons_csv(tmp_path / "new.csv", n=50, seed=7)
    window.last_applied = None
    window.apply_model(new)
    qtbot.waitUntil(lambda: window.last_applied is not None, timeout=TIMEOUT)
    from rwtool.data import read_csv
    ds = read_csv(new, "label")
    np.testing.assert_array_equal(window.last_applied["pred"], est.predict(ds.X))
    assert window.last_applied["metrics"]["file error"] == pytest.approx(
        np.mean(est.predict(ds.X) != ds.y))


def test_recent_files_and_drop(qtbot, window, tmp_path):
    a = moons_csv(tmp_path / "a.csv")
    load(qtbot, window, a)
    recent = window.settings.value("recent_files")
    assert os.path.abspath(a) in recent
    assert [x.text() for x in window.recent_menu.actions()][0] == "a.csv"
    b = regression_csv(tmp_path / "b.csv")
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(b)])
    ev = QDropEvent(QPointF(10, 10), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    window.dropEvent(ev)
    qtbot.waitUntil(lambda: window.data_info is not None and window.data_info["path"] == b,
                    timeout=TIMEOUT)
    assert window.data_panel.target() == "y"


# ----------------------------------------------------------------------------- errors

BAD_FILES = {
    "empty": ("", "empty"),
    "header only": ("a,b,y\n", "no data"),
    "ragged": ("a,b,y\n1,2,0\n3,4\n5,6,1\n", "field"),
    "binary": (b"\x00\x01\x02\xff\xfe" * 50, ""),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_file_keeps_current_data(qtbot, window, tmp_path, case):
    good = moons_csv(tmp_path / "good.csv")
    load(qtbot, window, good)
    before = window.data_info
    content, word = BAD_FILES[case]
    bad = tmp_path / "bad.csv"
    bad.write_bytes(content if isinstance(content, bytes) else content.encode())
    window.open_path(str(bad))
    qtbot.waitUntil(lambda: window.banner.isVisible() and window.banner.kind == "error",
                    timeout=TIMEOUT)
    assert "bad.csv" in window.banner.text
    assert word in window.banner.text.lower()
    assert "Traceback" not in window.banner.text
    assert window.data_info is before and window.data_panel.path == good


ENCODE_ERRORS = {
    # (csv text, options to choose, expected words)
    "missing values refused": ("a,b,y\n1,,0\n2,3,1\n4,5,0\n6,7,1\n", {"missing": "error"},
                               "missing"),
    "single class": ("a,b,y\n1,2,0\n2,3,0\n4,5,0\n", {}, "single class"),
    "infinite value": ("a,b,y\n1,inf,0\n2,3,1\n4,5,0\n6,7,1\n", {}, "infinite"),
    "text in numeric column": ("a,b,y\n1,2,0\n2,3,1\n4,5,0\n6,7,1\n8,x,0\n9,9,1\n10,1,0\n"
                               "11,2,1\n12,3,0\n13,4,1\n", {}, "text"),
}


@pytest.mark.parametrize("case", sorted(ENCODE_ERRORS))
def test_encoding_errors_are_shown(qtbot, window, tmp_path, case):
    text, opts, word = ENCODE_ERRORS[case]
    p = tmp_path / "d.csv"
    p.write_text(text)
    window.data_panel.test_spin.setValue(0.0)
    window.open_path(str(p), "y", opts)
    qtbot.waitUntil(lambda: window.banner.isVisible() and window.banner.kind == "error",
                    timeout=TIMEOUT)
    assert word in window.banner.text.lower(), window.banner.text
    assert window.data_info is None
    assert not window.training_panel.train_button.isEnabled()


def test_invalid_parameters(qtbot, window, tmp_path):
    load(qtbot, window, moons_csv(tmp_path / "m.csv"))
    mp = window.method_panel
    choose(window, "rw")
    mp.field_widget("n_features").setText("abc")
    assert "n_features must be an integer in [1, inf), got 'abc'" in mp.error_label.text()
    assert not window.training_panel.train_button.isEnabled()
    mp.field_widget("n_features").setText("50")
    assert window.training_panel.train_button.isEnabled()
    mp.field_widget("reg").setText("-1")          # outside the table's range: refused as typed
    assert "reg must be" in mp.error_label.text() and "[0, inf)" in mp.error_label.text()
    assert not window.training_panel.train_button.isEnabled()
    choose(window, "rw", solver="osd", reg=1.5)   # in range, but OSD needs reg < 1: fit says so
    assert window.training_panel.train_button.isEnabled()
    n = len(window.run_list.runs)
    window.train()
    assert window.banner.kind == "error" and "reg must be < 1" in window.banner.text
    assert len(window.run_list.runs) == n


def test_numerical_failure_is_reported(qtbot, window, tmp_path):
    load(qtbot, window, moons_csv(tmp_path / "m.csv"))
    choose(window, "rw", instantiation="rwexpsign", n_features=30, sigma=2.0, gamma=1.0)
    run = train(qtbot, window)
    assert run.status == "failed"
    assert window.banner.kind == "error" and "sigma" in window.banner.text
    assert "Traceback" not in window.banner.text and "Traceback" in window.banner.details


# ----------------------------------------------------------------------------- pruning

@pytest.mark.slow
def test_pruning_preview_and_keep(qtbot, window, tmp_path):
    load(qtbot, window, moons_csv(tmp_path / "m.csv"))
    choose(window, "rw", n_features=120, random_state=2)
    run = train(qtbot, window)
    est = run.result["estimator"]
    if not callable(getattr(est, "prune", None)):
        pytest.skip("this rwtool has no prune()")
    pv = window.results_panel.prune_view
    assert window.results_panel.shows(pv)
    pv.slider.setValue(60)
    pv.accept_combo.setCurrentIndex(pv.accept_combo.findData("error"))
    pv.preview_button.click()
    qtbot.waitUntil(lambda: pv.keep_button.isEnabled(), timeout=TIMEOUT)
    n = len(window.run_list.runs)
    pv.keep_button.click()
    assert len(window.run_list.runs) == n + 1
    kept = window.run_list.runs[max(window.run_list.runs)]
    tr = window.data_info["train"]
    ref = est.prune(eps=pv.eps(), accept="error", X=tr.X, y=tr.y)      # the API, directly
    pruned = kept.result["estimator"]
    np.testing.assert_allclose(pruned.coef_, ref.coef_)
    assert kept.result["metrics"]["features used"] == np.count_nonzero(
        np.any(ref.coef_ != 0, axis=1)) <= run.result["metrics"]["features used"]
    ns = {}
    exec(compile(window.snippet(kept).replace('"model.rwm"', repr(str(tmp_path / "p.rwm"))),
                 "snippet.py", "exec"), ns)
    np.testing.assert_allclose(ns["model"].coef_, ref.coef_)
    # the ACCEPT rule of 000 eq. 66 holds on the training rows
    err = np.mean(pruned.predict(tr.X) != tr.y) - np.mean(est.predict(tr.X) != tr.y)
    assert err < pv.eps()


@pytest.mark.slow
def test_more_bad_inputs(qtbot, window, tmp_path):
    """Duplicate header, a ticked all-missing or identifier column, a model applied to a file
    without its columns: each ends in the banner, and what was loaded stays."""
    dup = tmp_path / "dup.csv"
    dup.write_text("a,a,y\n1,2,0\n3,4,1\n")
    window.open_path(str(dup))
    qtbot.waitUntil(lambda: window.banner.isVisible() and window.banner.kind == "error",
                    timeout=TIMEOUT)
    assert "a" in window.banner.text and "dup.csv" in window.banner.text

    rows = [[f"id{i}", "", f"{i % 7}", str(i % 2)] for i in range(80)]
    path = write_csv(tmp_path / "ids.csv", ["ident", "empty", "x", "y"], rows)
    load(qtbot, window, path, "y")
    assert window.data_panel.features() == ["x"]          # identifier and empty column unticked
    for column, word in (("empty", "missing"), ("ident", "distinct")):
        window.banner.hide()
        window.data_panel.set_features(["x", column])
        qtbot.waitUntil(lambda: window.banner.isVisible(), timeout=TIMEOUT)
        assert window.banner.kind == "error" and word in window.banner.text, window.banner.text
    window.data_panel.set_features(["x"])
    qtbot.waitUntil(lambda: window.data_info is not None, timeout=TIMEOUT)
    choose(window, "rw", n_features=20, random_state=0)
    run = train(qtbot, window)
    assert run.status == "done"
    other = write_csv(tmp_path / "other.csv", ["z", "y"], [["1", "0"], ["2", "1"]])
    window.banner.hide()
    window.apply_model(other)
    qtbot.waitUntil(lambda: window.banner.isVisible(), timeout=TIMEOUT)
    assert window.banner.kind == "error" and "'x'" in window.banner.text
    assert window.run_list.runs[run.run_id].result is run.result


@pytest.mark.slow
def test_train_during_warm_up(qtbot, tmp_path):
    """A fit asked for while the background warm-up runs goes first and completes."""
    create_app()
    win = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat),
                     warm_up=True)
    qtbot.addWidget(win)
    try:
        assert win.worker.busy
        load(qtbot, win, moons_csv(tmp_path / "m.csv"))
        choose(win, "rks", n_features=40, random_state=0)
        run = train(qtbot, win)
        assert run.status == "done"
        qtbot.waitUntil(lambda: not win.worker.busy, timeout=TIMEOUT)
        assert not win._warming_up
    finally:
        win.worker.shutdown()


@pytest.mark.slow
def test_auto_reg_button_trains_with_cross_validated_reg(qtbot, window, tmp_path):
    path = moons_csv(tmp_path / "moons.csv")
    load(qtbot, window, path)
    choose(window, "rw", n_features=60, random_state=0)
    field = window.method_panel._fields["reg"]
    qtbot.mouseClick(field.auto_button, Qt.LeftButton)
    assert field.widget.text() == "auto"
    run = train(qtbot, window)
    est = run.result["estimator"]
    assert est.reg == "auto" and est.reg_ in list(est.reg_search_["reg"])
    assert run.result["metrics"]["reg chosen (auto)"] == est.reg_


@pytest.mark.slow
def test_live_curves_drawn_by_their_timers_after_the_run(qtbot, window, tmp_path):
    """A finished run's last points reach the curves through the board's redraw timer."""
    path = moons_csv(tmp_path / "moons.csv")
    load(qtbot, window, path)
    choose(window, "rfsgd", n_epochs=3, n_features=40, random_state=0)
    run = train(qtbot, window)
    assert run.status == "done"
    tp = window.training_panel
    for plot in tp.board.plots().values():
        qtbot.waitUntil(lambda p=plot: not p.dirty and bool(p._curves), timeout=TIMEOUT)
        for name in plot.curve_names():
            x, y = plot.curve_data(name)
            drawn = plot._curves[name]
            np.testing.assert_array_equal(drawn.xData, x)
            np.testing.assert_array_equal(drawn.yData, y)


def test_curve_board_redraws_one_plot_per_tick(qtbot):
    """Points arriving for four plots at once are drawn one plot per timer tick, in turn, and
    all of them in the end; the timer stops when nothing waits."""
    from gui.widgets.curve_board import CurveBoard
    board = CurveBoard()
    qtbot.addWidget(board)
    names = ["loss", "norm", "train_error", "val_error"]
    for k, name in enumerate(names):
        for i in range(5):
            board.append(name, "iteration", i, (k + 1) * 0.5 ** i)
    plots = board.plots()
    assert all(p.dirty and not p._curves for p in plots.values())
    board._redraws.stop()          # the ticks are driven by hand below
    for tick in range(len(names)):  # a tick each: a plot's title and axes (one costly change)
        board._redraw_next()
        assert plots[names[tick]].plot_title != "" and not plots[names[tick]]._curves
    for tick in range(len(names)):  # then a tick each: its curve
        board._redraw_next()
        assert sum(not p.dirty for p in plots.values()) == tick + 1
    board._redraw_next()
    assert not board._redraws.isActive()
    for k, name in enumerate(names):
        drawn = plots[name]._curves[name]
        np.testing.assert_array_equal(drawn.xData, np.arange(5.0))
        np.testing.assert_allclose(drawn.yData, (k + 1) * 0.5 ** np.arange(5.0))
    board.append("loss", "iteration", 5, 0.01)
    assert board._redraws.isActive()
    qtbot.waitUntil(lambda: not board._redraws.isActive(), timeout=2000)
    assert plots["loss"]._curves["loss"].yData[-1] == 0.01


def test_curve_board_restarts_a_shown_plot_in_its_own_tick(qtbot):
    """A new run's titles and empty axes reach a shown plot at its redraw tick (not in the
    progress handler, with every other plot), and its first curve at the tick after (one costly
    change a tick); a hidden plot changes at once."""
    from gui.widgets.curve_board import CurveBoard
    board = CurveBoard()
    qtbot.addWidget(board)
    board.show()
    board.append("loss", "iteration", 0, 1.0)
    board.flush()
    plot = board.plots()["loss"]
    assert plot.curve_names() == ["loss"] and "loss" in plot._curves
    board.clear()
    board._redraws.stop()
    assert plot.curve_names() == [] and "loss" in plot._curves     # still drawn
    board.append("gap", "lambda", 0.5, 1e-3, log_x=True)
    assert board.plots()["gap"] is plot and plot.plot_title != "duality gap"
    board._redraw_next()
    assert plot.plot_title == "duality gap" and not plot._curves and plot.dirty
    board._redraw_next()
    assert list(plot._curves) == ["gap"] and not plot.dirty
    assert plot.getAxis("bottom").labelText == "lambda"
    assert plot.getPlotItem().ctrl.logXCheck.isChecked()
    assert plot.getPlotItem().ctrl.logYCheck.isChecked()       # LOG_Y
    board.hide()
    board.clear()
    board.append("norm", "iteration", 0, 3.0)
    assert board.plots()["norm"] is plot and plot.isHidden()
    board._redraw_next()           # a hidden board too: the title is laid out in the tick
    assert plot.plot_title.startswith("‖α‖") and not plot._curves
    board._redraw_next()           # the curve; then the first paint prepared, and shown
    qtbot.waitUntil(lambda: not plot.isHidden(), timeout=2000)


def prepared_board(qtbot, n: int, width: int, height: int):
    """A CurveBoard on screen with ``n`` plots created ahead and cleared for a run."""
    from gui.widgets.curve_board import CurveBoard
    board = CurveBoard()
    qtbot.addWidget(board)
    board.resize(width, height)
    board.show()
    board.prepare(n)
    qtbot.waitUntil(lambda: len(board._pool) == n, timeout=2000)
    board.clear()
    return board


def test_curve_board_shows_a_plot_in_its_tick_without_moving_the_others(qtbot):
    """A run's plots come on screen one at a time, each in a cell kept for it: no
    plot on screen is moved or resized when another appears (the grid laid out again resized
    and repainted every plot in one turn); the cells of the plots the run did not use go when
    it has ended and the board is off screen."""
    board = prepared_board(qtbot, 4, 600, 600)
    board._redraws.stop()          # the ticks are driven by hand below
    while any(p.dirty for p in board._pool):
        board._redraw_next()
    board.append("loss", "iteration", 0, 1.0)
    board.append("norm", "iteration", 0, 5.0)
    loss, norm = board.plots()["loss"], board.plots()["norm"]
    assert loss.isHidden() and norm.isHidden()          # not in the progress handler
    board._redraw_next()           # loss's title and axes
    board._redraw_next()           # norm's
    board._redraw_next()           # loss's curve: its first paint prepared, then shown
    qtbot.waitUntil(lambda: not loss.isHidden(), timeout=2000)
    qtbot.wait(50)                 # the layout settles
    assert norm.isHidden()
    geometry = loss.geometry()
    assert geometry.width() < 400 and geometry.height() < 400     # one cell of the 2 x 2 grid
    board._redraw_next()
    qtbot.waitUntil(lambda: not norm.isHidden(), timeout=2000)
    qtbot.wait(50)
    assert loss.geometry() == geometry
    board.finish()
    qtbot.wait(50)
    assert loss.geometry() == geometry                   # on screen: the cells stay
    board.hide()
    board.show()
    qtbot.waitUntil(lambda: loss.geometry().width() > geometry.width()
                    or loss.geometry().height() > geometry.height(), timeout=2000)


def test_app_keeps_interpreter_lock_handoffs_short():
    import sys

    from gui.app import SWITCH_INTERVAL
    create_app()
    assert sys.getswitchinterval() <= SWITCH_INTERVAL


def test_preview_painting_warm_up_leaves_nothing_behind(qtbot):
    from PySide6.QtWidgets import QApplication

    from gui.panels.data_panel import PreviewTable
    before = {id(w) for w in QApplication.topLevelWidgets()}
    painted = []
    original = PreviewTable.grab
    PreviewTable.grab = lambda self, *a: painted.append(original(self, *a)) or painted[-1]
    try:
        PreviewTable.warm_up_painting()
    finally:
        PreviewTable.grab = original
    assert len(painted) == 1 and painted[0].width() == 900   # painted, at its full size
    qtbot.waitUntil(lambda: not any(isinstance(w, PreviewTable) and id(w) not in before
                                    for w in QApplication.topLevelWidgets()), timeout=3000)


def test_live_axes_move_only_when_the_points_leave_them(qtbot):
    """During a run a live plot's axes stay while the new points fall inside them (a redraw
    then repaints the curve alone, not both axes' ticks and labels) and move when a point
    leaves them, always showing every point; once the run has ended they fit the points, the
    x axis exactly from the first to the last."""
    from gui.widgets.plots import LivePlot
    plot = LivePlot("loss", "iteration", "")
    qtbot.addWidget(plot)
    plot.restart("loss", "iteration")
    plot.redraw()                               # the restart: title and axes
    xs, ys = [], []

    def feed(x, y):
        xs.append(x)
        ys.append(y)
        plot.append("loss", x, y)
        plot.flush()
        (x0, x1), (y0, y1) = plot.viewRange()
        assert x0 == pytest.approx(min(xs)) and x1 >= max(xs)
        assert y0 <= min(ys) and y1 >= max(ys)
        return x0, x1, y0, y1

    first = feed(0, 1.0)
    second = feed(1, 0.95)
    assert second[:2] == first[:2]              # x = 1 is inside [0, 1.5]
    moves = 0
    view = second
    for i in range(2, 200):
        new = feed(i, 0.5 + 0.5 / (1 + i) + 0.01 * (i % 3))
        moves += new != view
        view = new
    # the x axis grows by half its span each time the points reach its end, the y axis moves
    # when the falling curve leaves it: a few dozen moves, not one per point
    assert moves < 40
    plot.settle()
    plot.flush()
    (x0, x1), (y0, y1) = plot.viewRange()
    assert (x0, x1) == pytest.approx((0, 199))
    span = max(ys) - min(ys)
    assert y0 == pytest.approx(min(ys) - 0.05 * span) and y1 == pytest.approx(max(ys) + 0.05 * span)
