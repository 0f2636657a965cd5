"""The eight bugs a new user hit in the app (issue 15), each driven through the real widgets.

Every test here failed on the app before the fix: a crash or a wrong number, label or plot.
Oracles: the estimator's own attributes, numpy on the same rows, Qt's own geometry.
"""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QTextDocument  # noqa: E402

from tests.gui.test_main_window import (  # noqa: E402,F401
    TIMEOUT, choose, load, moons_csv, regression_csv, train, window, write_csv)


def _open_model(qtbot, win, path):
    n = len(win.run_list.runs)
    win.open_model(path)
    qtbot.waitUntil(lambda: len(win.run_list.runs) == n + 1, timeout=TIMEOUT)
    qtbot.waitUntil(lambda: not win.results_panel.drawing, timeout=TIMEOUT)
    return win.run_list.runs[max(win.run_list.runs)]


# 1 ----------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_saved_regression_model_opens_and_banner_is_rendered(qtbot, window, tmp_path):
    load(qtbot, window, regression_csv(tmp_path / "reg.csv"))
    choose(window, "rw", n_features=40)
    run = train(qtbot, window)
    path = str(tmp_path / "reg.rwm")
    assert window.save_model(path, run)
    loaded = _open_model(qtbot, window, path)      # raised TypeError in _draw_regression
    assert loaded.status == "loaded"
    rp = window.results_panel
    assert rp.result is loaded.result and not rp.shows(rp.pva_plot)   # no rows to draw
    # the banner is rich text: "File &gt; Apply" renders as "File > Apply"
    assert window.banner.label.textFormat() == Qt.RichText
    doc = QTextDocument()
    doc.setHtml(window.banner.label.text())
    assert "File > Apply Model" in doc.toPlainText()


# 2 ----------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_non_finite_model_is_a_failed_run_without_metrics(qtbot, window, tmp_path, monkeypatch):
    from rwtool import RWClassifier

    class Diverged(RWClassifier):
        """Stands for a solver that diverged without raising (the SFGD defaults did)."""

        def fit(self, X, y, callback=None):
            super().fit(X, y, callback=callback)
            self.coef_[:] = np.nan
            return self

    load(qtbot, window, moons_csv(tmp_path / "m.csv"))
    monkeypatch.setattr(window.method_panel, "make_estimator",
                        lambda: Diverged(n_features=20, random_state=0))
    run = train(qtbot, window)
    assert run.status == "failed" and run.result is None
    assert window.banner.kind == "error" and "non-finite" in window.banner.text
    assert window.results_panel.result is None


def test_no_metric_from_non_finite_scores():
    from rwtool import NumericalError, RWClassifier, RWRegressor

    from gui.logic.evaluate import evaluate
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 3))
    yc = (X[:, 0] > 0).astype(int)
    est = RWClassifier(n_features=10, random_state=0).fit(X, yc)
    est.coef_[0] = np.inf
    with pytest.raises(NumericalError, match="non-finite"):
        evaluate(est, X, yc, X, yc, task="binary")
    reg = RWRegressor(n_features=10, random_state=0).fit(X, X[:, 0])
    reg.y_scaler_.scale = np.array([np.nan])     # finite coefficients, NaN predictions
    with pytest.raises(NumericalError, match="predictions"):
        evaluate(reg, X, X[:, 0], task="regression")


# 3 ----------------------------------------------------------------------------------------------

def test_results_tab_bar_survives_switching_task(qtbot):
    from rwtool import RWClassifier, RWRegressor

    from gui.logic.evaluate import evaluate
    from gui.panels.results_panel import ResultsPanel
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 2))
    yc, yr = (X[:, 0] > 0).astype(int), X[:, 0]
    c = RWClassifier(n_features=20, random_state=0).fit(X, yc)
    r = RWRegressor(n_features=20, random_state=0).fit(X, yr)
    rc = dict(evaluate(c, X, yc, X, yc, task="binary"), estimator=c)
    rr = dict(evaluate(r, X, yr, X, yr, task="regression"), estimator=r)
    rp = ResultsPanel()
    qtbot.addWidget(rp)
    rp.resize(420, 400)      # narrower than the tabs: the bar scrolls
    rp.show()
    bar = rp.tabBar()
    for res in (rc, rr, rc, rr, rc):
        rp.setCurrentIndex(rp.count() - 1)          # the last tab, scrolled into view
        rp.show_result(res)
        qtbot.waitUntil(lambda: not rp.drawing, timeout=TIMEOUT)
        qtbot.wait(20)
        rect = bar.tabRect(rp.currentIndex())
        assert 0 <= rect.left() and rect.right() <= bar.width(), (rect, bar.width())
        # the tabs are contiguous and none hides behind a blank gap
        rects = [bar.tabRect(i) for i in range(rp.count())]
        assert all(a.right() + 1 == b.left() for a, b in zip(rects, rects[1:]))
        assert rects[-1].right() >= min(bar.width(), sum(x.width() for x in rects)) - 60


def test_a_cancelled_run_says_so_once(qtbot):
    """The metrics' notes of a cancelled run's partial model (logic.jobs._partial) say that it
    is the last completed iterate once: the panel added a line of its own beside the job's."""
    from types import SimpleNamespace

    from rwtool import RWClassifier

    from gui.logic.jobs import _partial
    from gui.panels.results_panel import ResultsPanel
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 2))
    est = RWClassifier(n_features=20, random_state=0).fit(X, (X[:, 0] > 0).astype(int))
    _, _, res = _partial(SimpleNamespace(task="binary", run_id=1), est, 1.5, [])
    assert res["cancelled"]
    rp = ResultsPanel()
    qtbot.addWidget(rp)
    rp.show_result(res)
    qtbot.waitUntil(lambda: not rp.drawing, timeout=TIMEOUT)
    doc = QTextDocument()
    doc.setHtml(rp.metrics_view.notes.text())
    text = doc.toPlainText()
    assert text.count("last completed iterate") == 1, text
    assert text.startswith("Cancelled:") and "fit's" in text, text
    # the note has no tag: the label must not guess plain text and show "fit&#x27;s"
    assert rp.metrics_view.notes.textFormat() == Qt.RichText


# 4 ----------------------------------------------------------------------------------------------

def _many_classes_csv(path, n=400, k=200):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 3))
    y = np.arange(n) % k
    return write_csv(path, ["a", "b", "c", "code"],
                     [[f"{a:.4f}", f"{b:.4f}", f"{c:.4f}", str(v)] for (a, b, c), v in zip(X, y)])


def test_many_classes_warn_refuse_and_estimate(qtbot, window, tmp_path, monkeypatch):
    path = _many_classes_csv(tmp_path / "codes.csv")
    window.data_panel.test_spin.setValue(0.0)
    load(qtbot, window, path, "code")
    window.data_panel.task_combo.setCurrentIndex(window.data_panel.task_combo.findData(
        "classification"))
    qtbot.waitUntil(lambda: window.data_info is not None
                    and window.data_info["train"].is_classification, timeout=TIMEOUT)
    assert window.banner.kind == "warning" and "regression" in window.banner.text
    asked = []
    window.ask = lambda title, text: asked.append(text) or False
    n = len(window.run_list.runs)
    choose(window, "rw", solver="sfgd", n_features=20, reg="auto")
    window.train()
    # an iterative solver's reg=auto refits on 3 stratified folds, which need 3 rows per class:
    # said in the form's words, not "lower cv"
    assert window.banner.kind == "error" and "reg" in window.banner.text
    assert "cv" not in window.banner.text.replace("cross-validation", "")
    assert len(window.run_list.runs) == n
    # least squares chooses reg from sums over hashed folds: no per-class floor, but the many
    # classes are still asked about first (and refused here)
    choose(window, "rw", solver="lstsq", reg="auto")
    window.train()
    assert asked and "3 rows" not in asked[-1] and "regression" in asked[-1]
    assert len(window.run_list.runs) == n
    asked.clear()
    choose(window, "rw", reg="1e-3")
    window.train()                  # many classes: asked first, with the estimate; refused
    assert asked and "regression" in asked[-1] and "memory" in asked[-1]
    assert len(window.run_list.runs) == n
    import gui.logic.preflight
    # 64 KiB: below the ~0.6 MB this fit allocates (RW's own cost model, not the generic one)
    monkeypatch.setattr(gui.logic.preflight, "available_memory", lambda: 1 << 16)
    window.train()                  # more memory than there is: refused before it starts
    assert window.banner.kind == "error" and "memory" in window.banner.text
    assert len(window.run_list.runs) == n


# 5 ----------------------------------------------------------------------------------------------

def test_large_regression_results_draw_a_subset(qtbot):
    from gui.widgets.plots import MAX_SCATTER, Dots
    from gui.panels.results_panel import ResultsPanel
    n = 250_000
    rng = np.random.default_rng(0)
    y = rng.standard_normal(n)
    res = {"task": "regression", "metrics": {}, "y_train": y[:200_000],
           "pred_train": y[:200_000] + 0.1, "y_test": y[200_000:], "pred_test": y[200_000:]}
    rp = ResultsPanel()
    qtbot.addWidget(rp)
    rp.show()
    rp.show_result(res)
    qtbot.waitUntil(lambda: not rp.drawing, timeout=TIMEOUT)
    for plot in (rp.pva_plot, rp.residual_plot):
        pts = [len(it) for it in plot.getPlotItem().items if isinstance(it, Dots)]
        assert len(pts) == 2 and max(pts) <= MAX_SCATTER
        assert "drawn at random" in plot.plot_title


# 6 ----------------------------------------------------------------------------------------------

def test_cancel_label_restored_after_cancel(qtbot, window, tmp_path):
    import threading

    from gui.worker import CallJob
    load(qtbot, window, moons_csv(tmp_path / "m.csv"))
    choose(window, "rw", n_features=30)
    gate = threading.Event()
    window.worker.submit(CallJob("hold", gate.wait, (30,)))
    with qtbot.waitSignal(window.run_finished, timeout=TIMEOUT):
        window.train()
        window.cancel()
        assert window.training_panel.cancel_button.text().startswith("Cancelling")
        gate.set()
    assert window.training_panel.cancel_button.text() == "Cancel"


# 7 ----------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_live_curves_one_plot_per_quantity_reset_per_run(qtbot, window, tmp_path):
    load(qtbot, window, moons_csv(tmp_path / "m.csv", n=300))
    choose(window, "rw", solver="osd", n_features=60, batch_size=20, reg="0.01")
    run = train(qtbot, window)
    assert run.status == "done", run.note
    board = window.training_panel.board
    drawn = lambda: all(not p.dirty for p in board.plots().values())     # noqa: E731
    # a plot's title and axes change at its next redraw (one plot a tick, each at most once
    # every REDRAW_MS): wait for the board to draw what it holds before reading them
    qtbot.waitUntil(drawn, timeout=TIMEOUT)
    plots = board.plots()
    assert {"norm", "loss"} <= set(plots)                  # not on one axis
    for name, p in plots.items():
        assert p.curve_names() == [name]
    assert plots["norm"].getAxis("bottom").labelText.startswith("centres added")
    # sfgd, osd and lasso draw the error of their iterate (a sample of the training rows)
    assert "train_error_sample" in plots
    for solver, extra in (("sfgd", {"radius": "10"}), ("lasso", {"reg": "0.001"})):
        choose(window, "rw", solver=solver, n_features=60, **extra)
        run = train(qtbot, window)
        assert run.status == "done", run.note
        assert "train_error_sample" in board.plots() and "train_error_sample" in run.curves
    # reg=auto: the search's score gets its own plot, which says higher is better
    choose(window, "rw", solver="lstsq", reg="auto", n_features=40)
    train(qtbot, window)
    qtbot.waitUntil(drawn, timeout=TIMEOUT)
    plots = board.plots()
    assert "norm" not in plots                             # the previous run's plots are gone
    assert "higher is better" in plots["best_score"].plot_title
    assert plots["best_score"].getAxis("bottom").labelText == "candidates evaluated"


# 8 ----------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_numbers_and_labels(qtbot, window, tmp_path, monkeypatch):
    path = moons_csv(tmp_path / "bank.csv")
    load(qtbot, window, path)
    assert window.windowTitle() == "bank.csv"          # Qt appends " — rwtool" once
    # averaged SGD with 30 frequencies uses 30 features (60 coefficients: cos and sin)
    choose(window, "rfsgd", n_features=30, n_epochs=1)
    run = train(qtbot, window)
    assert run.result["metrics"]["features used"] == 30
    assert len(run.result["coef_magnitudes"]) == 30        # one magnitude per frequency
    model = str(tmp_path / "sgd.rwm")
    assert window.save_model(model, run)
    loaded = _open_model(qtbot, window, model)
    v = loaded.result["metrics"]["features used"]
    assert isinstance(v, int) and v == 30
    # reg=auto: the wall time says how much of it chose reg
    choose(window, "rw", n_features=40, reg="auto")
    run = train(qtbot, window)
    m = run.result["metrics"]
    assert 0 < m["of which choosing reg (s)"] < m["fit time (s)"]
    # a typed reg was not chosen: neither label appears
    choose(window, "rw", n_features=40, reg="1e-3")
    m = train(qtbot, window).result["metrics"]
    assert "reg chosen (auto)" not in m and "of which choosing reg (s)" not in m
    # Apply Model: metrics on the file's rows are not "train" metrics
    window.last_applied = None
    window.apply_model(moons_csv(tmp_path / "new.csv", n=40, seed=3))
    qtbot.waitUntil(lambda: window.last_applied is not None, timeout=TIMEOUT)
    keys = set(window.last_applied["metrics"])
    assert "file error" in keys and not any(k.startswith("train") for k in keys)
    # max_iter is greyed out where the solver ignores it
    choose(window, "rw", solver="sfgd")
    assert not window.method_panel.field_widget("max_iter").isEnabled() or \
        not window.method_panel._fields["max_iter"].row.isEnabled()
    choose(window, "rw", solver="lasso")
    assert window.method_panel._fields["max_iter"].row.isEnabled()
    # Save dialogs do not start in a read-only data folder
    ro = tmp_path / "readonly"
    ro.mkdir()
    os.chmod(ro, stat.S_IRUSR | stat.S_IXUSR)
    try:
        window.settings.setValue("last_dir", str(ro))
        window.settings.remove("last_save_dir")
        if not os.access(ro, os.W_OK):        # (root can write anywhere)
            assert window.save_dir() != str(ro)
    finally:
        os.chmod(ro, stat.S_IRWXU)


@pytest.mark.slow
def test_greedy_says_why_it_stopped_early(qtbot, window, tmp_path):
    load(qtbot, window, moons_csv(tmp_path / "m.csv"))
    choose(window, "greedy", n_features=100)
    run = train(qtbot, window)
    used = run.result["metrics"]["features used"]
    if used >= 100:
        pytest.skip("this dictionary has 100 candidates for two inputs")
    notes = " ".join(run.result["notes"])
    assert f"stopped at {used} of the 100" in notes
    assert "stopped at" in window.results_panel.metrics_view.notes.text()


@pytest.mark.slow
def test_one_input_regression_draws_the_fitted_curve(qtbot, window, tmp_path):
    rng = np.random.default_rng(0)
    x = rng.uniform(-3, 3, 150)
    y = np.sin(2 * x) + x / 4
    path = write_csv(tmp_path / "sine.csv", ["x", "y"],
                     [[f"{a:.5f}", f"{b:.5f}"] for a, b in zip(x, y)])
    load(qtbot, window, path)
    choose(window, "rw", n_features=100)
    run = train(qtbot, window)
    rp = window.results_panel
    assert rp.shows(rp.curve_plot)
    c = run.result["curve"]
    np.testing.assert_allclose(c["y"], run.result["estimator"].predict(c["x"][:, None]))
    # the least-squares regressor's 90% predictive interval is drawn around the curve
    np.testing.assert_allclose(c["std"], run.result["estimator"].predict(
        c["x"][:, None], return_std=True)[1])
    assert len(rp.curve_plot.listDataItems()) >= 3
    assert "90% predictive interval" in [label.text for _, label in rp.curve_plot.legend.items]


@pytest.mark.slow
def test_predicted_vs_actual_draws_the_90_percent_intervals(qtbot, window, tmp_path):
    # three inputs (no fitted curve): the predicted-vs-actual plot carries the intervals, one
    # bar per drawn test row, half-width 1.645 std of predict(X, return_std=True); a model
    # without a posterior (SFGD) draws none
    import pyqtgraph as pg
    load(qtbot, window, regression_csv(tmp_path / "reg.csv", n=400))
    choose(window, "rw", n_features=60)
    run = train(qtbot, window)
    rp = window.results_panel
    est = run.result["estimator"]
    X, y = run.rows["test"].X, np.asarray(run.rows["test"].y, float)
    mean, std = est.predict(X, return_std=True)
    iv = run.result["intervals"]
    assert iv["set"] == "test" and iv["rows"] is None and iv["n"] == len(y)
    np.testing.assert_allclose(iv["std"], std, rtol=1e-12)
    bars = [item for item in rp.pva_plot.getPlotItem().items
            if isinstance(item, pg.ErrorBarItem)]
    assert len(bars) == 1
    opts = bars[0].opts
    np.testing.assert_allclose(opts["x"], y)
    np.testing.assert_allclose(opts["y"], mean, rtol=1e-12)
    np.testing.assert_allclose(opts["top"], 1.6448536269514722 * std, rtol=1e-12)
    np.testing.assert_allclose(opts["bottom"], opts["top"])
    covered = float(np.mean(np.abs(y - mean) <= 1.6448536269514722 * std))
    assert iv["coverage"] == covered
    assert f"hold {100 * covered:.1f}% of the {len(y):,} test rows" in rp.pva_plot.plot_title
    assert "90% predictive interval" in [label.text for _, label in rp.pva_plot.legend.items]
    choose(window, "rw", n_features=60, solver="sfgd")
    run = train(qtbot, window)
    assert "intervals" not in run.result
    assert not [item for item in rp.pva_plot.getPlotItem().items
                if isinstance(item, pg.ErrorBarItem)]


# the Metrics table says what each number means; the header says what reg the fit used -------

def test_metrics_table_meanings_and_the_reg_the_fit_used(qtbot, tmp_path):
    """Every row of the Metrics table has its meaning (it was empty for all but the bounds),
    the same line `rwtool train` prints; a run's header shows reg as the fit used it, not
    "reg=None" (the form's empty field, which read as no regularisation)."""
    from rwtool import RWClassifier
    from rwtool.report import metric_meaning

    from gui.logic.evaluate import evaluate
    from gui.logic.runs_table import Run
    from gui.panels.results_panel import ResultsPanel
    rng = np.random.default_rng(0)
    X = rng.standard_normal((90, 2))
    y = (X[:, 0] > 0).astype(int)
    est = RWClassifier(n_features=20, random_state=0).fit(X[:60], y[:60])
    res = dict(evaluate(est, X[:60], y[:60], X[60:], y[60:], task="binary", bounds=False,
                        fit_time=0.1), estimator=est)
    rp = ResultsPanel()
    qtbot.addWidget(rp)
    rp.show_result(res, "t")
    qtbot.waitUntil(lambda: not rp.drawing, timeout=TIMEOUT)
    t = rp.metrics_view.table
    assert t.rowCount() == len(res["metrics"]) > 5
    for i in range(t.rowCount()):
        name = t.item(i, 0).text()
        assert t.item(i, 2).text() == metric_meaning(name) != "", name
    assert est.get_params()["reg"] is None and est.reg_search_ is not None
    run = Run(1, "rw", "RKHS weighting", "RWClassifier", est.get_params(), result=res)
    assert f"reg=auto ({est.reg_:g})" in run.key_params()
    assert "reg=default" in Run(2, "rw", "t", "RWClassifier", est.get_params()).key_params()
    fixed = RWClassifier(n_features=20, reg=0.01, random_state=0).fit(X, y)
    run = Run(3, "rw", "t", "RWClassifier", fixed.get_params(), result={"estimator": fixed})
    assert "reg=0.01" in run.key_params() and "auto" not in run.key_params()
    # the labels that tell runs apart say it the same way
    from gui.logic.runs_table import run_labels
    auto = Run(4, "rw", "RKHS weighting", "RWClassifier", est.get_params(), result=res)
    labels = run_labels([auto, run])
    assert f"reg=auto ({est.reg_:g})" in labels[4] and "reg=0.01" in labels[3]


def test_a_long_title_is_elided_and_the_plot_keeps_its_width(qtbot):
    """pyqtgraph's title takes its text's width as its minimum: the live plot "validation
    error (sample of ≤ 2000 held-out rows)" in a 355-pixel cell of a 1400 x 900 window was
    laid out wider than its widget, its right axis end and last tick label cut off. The title
    is elided to the plot's width (the whole of it in the tooltip) and the plot fits."""
    from gui.widgets.plots import LivePlot, ResultPlot
    long = "validation error (sample of ≤ 2000 held-out rows), a title longer than its plot"
    for cls in (ResultPlot, LivePlot):
        p = cls(long, "iterations", "")
        qtbot.addWidget(p)
        p.resize(300, 240)
        p.show()
        qtbot.waitExposed(p)
        qtbot.wait(20)
        item = p.getPlotItem()
        assert item.geometry().width() <= p.viewport().width() + 1
        shown = item.titleLabel.text
        assert shown.endswith("…") and long.startswith(shown[:-1]) and p.toolTip() == long
        assert p.plot_title == long
        p.resize(1200, 240)
        qtbot.wait(20)
        assert item.titleLabel.text == long and p.toolTip() == ""



@pytest.mark.parametrize("stock", [False, True])
def test_a_legend_outlives_its_view_box_quietly(qtbot, stock):
    """A plot deleted with its tab or window deletes its ViewBox before the legend in it; the
    legend's anchor then asked the deleted ViewBox for its rectangle and raised in the event
    loop (RuntimeError: Internal C++ object (ViewBox) already deleted: a CI run's cancel
    test). The plots' legend stays quiet; pyqtgraph's LegendItem, the oracle, raises."""
    import pyqtgraph as pg
    import shiboken6

    from gui.widgets.plots import ResultPlot, _Legend
    assert type(ResultPlot("t", "x", "y").legend) is _Legend
    view = pg.ViewBox()
    legend = (pg.LegendItem if stock else _Legend)(offset=(-10, 10))
    legend.setParentItem(view)                  # anchored to the view, as addLegend does
    legend.addItem(pg.PlotDataItem([0, 1], [0, 1]), "a run")
    # the state the deletion passes through: the legend alive, its anchor's view gone
    holder = pg.GraphicsWidget()
    pg.GraphicsWidget.setParentItem(legend, holder)
    shiboken6.delete(view)
    with qtbot.capture_exceptions() as raised:
        legend.resize(120, 40)                  # a change of its geometry calls the anchor
        qtbot.wait(10)
    if stock:
        assert raised and "already deleted" in str(raised[0][1])
    else:
        assert not raised
