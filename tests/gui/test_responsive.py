"""What the window draws stays bounded by what a plot can show, and one user action is one
redraw (issue 24 "Responsiveness under load"). Measured from the objects and signals, never by
time: benchmarks/speed/bench_gui_load.py measures the gaps of the window's event loop.

Oracles: the full ROC curve of gui.logic.evaluate.roc_curve (the thinned one is a subset of its
points with the same ends and the AUC of the full one), the rows of the data set, the signals
counted.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from gui.logic.evaluate import ROC_POINTS, evaluate, roc_curve, thin_curve  # noqa: E402
from gui.widgets.plots import MAX_SCATTER  # noqa: E402
from tests.gui.test_main_window import (  # noqa: E402,F401
    choose, load, train, window, write_csv)


def test_a_roc_curve_keeps_what_a_plot_shows(rng):
    n = 40_000
    y = rng.integers(0, 2, n)
    s = y + rng.standard_normal(n)
    fpr, tpr, auc = roc_curve(y == 1, s)
    assert len(fpr) > 10 * ROC_POINTS
    f2, t2 = thin_curve(fpr, tpr)
    assert len(f2) <= ROC_POINTS + 2
    assert (f2[0], t2[0], f2[-1], t2[-1]) == (0.0, 0.0, 1.0, 1.0)
    full = set(zip(fpr.tolist(), tpr.tolist()))
    assert all(p in full for p in zip(f2.tolist(), t2.tolist()))
    # no step of fpr + tpr between kept points is larger than the spacing asked for (plus the
    # one jump of the curve it falls in)
    step = np.diff(f2 + t2)
    jumps = np.max(np.diff(fpr + tpr))
    assert np.max(step) <= 2.0 / (ROC_POINTS - 1) + jumps + 1e-12

    class Model:                     # scores s, classes 0/1: the app's evaluation of it
        classes_ = np.array([0, 1])

        def decision_function(self, X):
            return X[:, 0]

        def predict(self, X):
            return (X[:, 0] > 0.5).astype(int)

        def get_params(self):
            return {}
    res = evaluate(Model(), s[:, None], y, s[:, None], y, task="binary", plots=False)
    assert len(res["roc"]["fpr"]) <= ROC_POINTS + 2 and res["roc"]["auc"] == auc


def test_selecting_runs_redraws_once(qtbot, window, tmp_path):
    from tests.gui.test_main_window import moons_csv
    load(qtbot, window, moons_csv(tmp_path / "m.csv"))
    choose(window, "rks", n_features=20, random_state=0)
    ids = [train(qtbot, window).run_id for _ in range(3)]
    seen = []
    window.run_list.selection_changed.connect(seen.append)
    window.run_list.select(ids)
    assert seen == [ids]


def test_decision_regions_draw_a_bounded_subset_of_many_rows(qtbot, window, tmp_path):
    rng = np.random.default_rng(0)
    n = 4 * MAX_SCATTER
    X = rng.standard_normal((n, 2))
    y = np.where(X[:, 0] * X[:, 1] > 0, "a", "b")
    path = write_csv(tmp_path / "two.csv", ["x1", "x2", "label"],
                     [[f"{a:.4f}", f"{b:.4f}", c] for (a, b), c in zip(X, y)])
    load(qtbot, window, path)
    choose(window, "rks", n_features=30, random_state=0)
    train(qtbot, window)
    plot = window.results_panel.region_plot
    window.results_panel.setCurrentWidget(plot)
    drawn = sum(len(item.xData) for item in plot.getPlotItem().listDataItems()
                if item.xData is not None)
    assert 0 < drawn <= 2 * MAX_SCATTER           # train and test sets, each thinned


def test_the_data_tab_writes_x_off_the_windows_thread(qtbot, window, tmp_path, monkeypatch):
    """The encoded rows become X (a numba kernel; the first call of a session loads it, 200+
    ms of CPU) in the Data tab's background read, never on the window's thread."""
    import threading

    from rwtool.data import _encoding

    from tests.gui.test_main_window import moons_csv
    dense = _encoding.EncodedRows.dense
    on_main = []

    def recorded(self):
        on_main.append(threading.current_thread() is threading.main_thread())
        return dense(self)
    monkeypatch.setattr(_encoding.EncodedRows, "dense", recorded)
    load(qtbot, window, moons_csv(tmp_path / "m.csv"))
    info = window.data_info
    assert info["train"].X.shape[1] == 2 and info["test"].X.shape[1] == 2
    assert on_main and not any(on_main), on_main
