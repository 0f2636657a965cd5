"""Permutation importance of any run in the Results tab (issue 24 "Importance for every model").

Oracles: rwtool.inspect.permutation_importance called directly on the run's test rows with the
same seed, repeats and column groups; the saved CSV read back; the progress events counted.
"""

from __future__ import annotations

import csv

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from gui.logic.importance import N_REPEATS, SEED  # noqa: E402
from gui.panels.importance_actions import IMPORTANCE_JOB  # noqa: E402
from tests.gui.test_main_window import (  # noqa: E402,F401
    TIMEOUT, choose, load, train, window, write_csv)


def _mixed_csv(path, n=300, seed=0, extra=0):
    """Two numbers, a text column and ``extra`` noise columns; y depends on a and the text."""
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal(n), rng.standard_normal(n)
    color = rng.choice(["red", "green", "blue"], n)
    noise = rng.standard_normal((n, extra))
    y = 2 * a + np.where(color == "red", 1.5, 0.0) + 0.1 * rng.standard_normal(n)
    header = ["a", "b", "color"] + [f"n{j}" for j in range(extra)] + ["y"]
    rows = [[f"{a[i]:.5f}", f"{b[i]:.5f}", color[i], *(f"{v:.5f}" for v in noise[i]),
             f"{y[i]:.5f}"] for i in range(n)]
    return write_csv(path, header, rows)


def _compute(qtbot, win):
    view = win.results_panel.importance_view
    win.results_panel.setCurrentWidget(view)
    qtbot.mouseClick(view.compute_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: not view.running, timeout=TIMEOUT)
    # the plot is drawn a step after the outcome (gui.widgets.steps)
    qtbot.waitUntil(lambda: not win.results_panel.drawing, timeout=TIMEOUT)
    return view


def test_any_model_gets_the_apis_importance_per_csv_column(qtbot, window, tmp_path):
    load(qtbot, window, _mixed_csv(tmp_path / "mixed.csv"))
    choose(window, "rks", n_features=80, random_state=0)
    run = train(qtbot, window)
    assert run.status == "done", run.note
    panel = window.results_panel
    assert panel.shows(panel.importance_view)            # a model without a share of its own
    view = _compute(qtbot, window)
    imp = run.result["permutation"]
    from rwtool.inspect import permutation_importance
    from rwtool.report import column_groups
    te = window.data_info["test"]
    names, groups = column_groups(te.preprocessing, te.X.shape[1])
    assert names == ["a", "b", "color"] and groups[2] == [2, 3, 4]
    ref = permutation_importance(run.result["estimator"], te.X, te.y, n_repeats=N_REPEATS,
                                 random_state=SEED, groups=groups)
    by_name = dict(zip(imp["columns"], imp["mean"]))
    for n, m in zip(names, ref.importances_mean):
        assert by_name[n] == m                         # same process, same shuffles
    assert imp["columns"][0] == "a" and imp["on"] == "test" and imp["n_rows"] == len(te.y)
    assert "R^2" in imp["measures"] and imp["share"] is None
    assert "Permutation importance" in panel.current_plot().plot_title
    # the export: one row per CSV column, the numbers at full precision
    path = tmp_path / "imp.csv"
    assert view.save_button.isEnabled() and window.save_importance(str(path), run)
    with open(path, newline="") as fh:
        got = list(csv.DictReader(fh))
    assert [r["column"] for r in got] == imp["columns"]
    assert [float(r["importance_mean"]) for r in got] == list(imp["mean"])
    # another run, then back: the measured importance is the run's and is shown again
    choose(window, "rks", n_features=40, random_state=1)
    other = train(qtbot, window)
    assert "permutation" not in other.result and not view.save_button.isEnabled()
    window.run_list.select([run.run_id])
    qtbot.waitUntil(lambda: not panel.drawing, timeout=TIMEOUT)
    assert view.save_button.isEnabled()


def test_a_stump_model_shows_both_importances(qtbot, window, tmp_path):
    load(qtbot, window, _mixed_csv(tmp_path / "mixed.csv"))
    choose(window, "rw", instantiation="rwstumps", n_features=120, random_state=0, reg=1e-6)
    run = train(qtbot, window)
    view = _compute(qtbot, window)
    imp = run.result["permutation"]
    assert imp["share"] is not None and imp["share"].sum() == pytest.approx(1.0)
    assert view.share_plot.isVisible() and view.perm_plot.isVisible()
    # the CSV column's share sums its one-hot columns' shares
    share = dict(zip(imp["columns"], imp["share"]))
    assert share["color"] == pytest.approx(float(run.result["importance"][2:5].sum()))


@pytest.mark.slow
def test_cancel_stops_at_the_next_progress_event_and_keeps_the_run(qtbot, window, tmp_path):
    load(qtbot, window, _mixed_csv(tmp_path / "wide.csv", n=2400, extra=30))
    choose(window, "rw", n_features=1500, random_state=0, reg=1e-6)
    run = train(qtbot, window)
    view = window.results_panel.importance_view
    worker = window.worker.worker
    seen = []      # on the worker thread, as each event is emitted: was Cancel pressed by then?
    worker.progress.connect(
        lambda pid, ev: seen.append((ev["kind"], worker.cancel_flag.is_set()))
        if pid == IMPORTANCE_JOB else None, Qt.DirectConnection)

    def on_progress(pid, ev):       # on the GUI thread: Cancel at the first update shown
        if pid == IMPORTANCE_JOB and ev["kind"] == "update" and view.cancel_button.isEnabled():
            qtbot.mouseClick(view.cancel_button, Qt.LeftButton)
    window.worker.progress.connect(on_progress)
    window.results_panel.setCurrentWidget(view)
    qtbot.mouseClick(view.compute_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: not view.running, timeout=TIMEOUT)
    # the next progress report after the click reads the flag and stops: no event after it
    assert any(flag for _, flag in seen)
    assert sum(flag for _, flag in seen) == 1 and seen[-1] == ("update", True)
    assert "permutation" not in run.result and "Cancelled" in view.info.text()
    assert view.compute_button.isEnabled() and not view.save_button.isEnabled()
