"""The GUI thread's drawing goes a step at a time (gui.widgets.steps): the end of a run, the
Train click, a run's plots and the comparison of runs are queued, each step in an event-loop
turn of its own with the thread asleep between two, and they end in the state the window
reached when it drew everything in one turn (issue 24, "Responsiveness under load": 10-30 ms
of drawing in one turn was a pause of 80-190 ms under load).

Oracles: the same result drawn at once (Steps.flush) in the same process; the order of the
calls a Steps queue makes; the window's state seen from the handler of the run's outcome.
Nothing here measures time.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")
pytest.importorskip("pyqtgraph")

from gui.widgets.steps import Steps  # noqa: E402
from tests.gui.test_main_window import (  # noqa: E402,F401
    TIMEOUT, choose, load, moons_csv, regression_csv, train, window)


def test_steps_run_in_order_one_per_tick_and_flush(qtbot):
    from gui.app import create_app
    create_app()
    steps = Steps(interval=1)
    seen = []
    for i in range(4):
        steps.add(seen.append, i)
    assert seen == [] and steps.busy             # nothing runs inside the caller's turn
    qtbot.waitUntil(lambda: len(seen) >= 2, timeout=TIMEOUT)
    steps.flush()
    assert seen == [0, 1, 2, 3] and not steps.busy
    steps.add(seen.append, 4)
    steps.clear()
    qtbot.wait(20)
    assert seen == [0, 1, 2, 3] and not steps.busy


def test_the_next_step_is_timed_from_the_end_of_the_last(qtbot):
    """The step timer starts again when a step ends with steps still queued, so that the
    thread sleeps STEP_MS between two steps even when a step waited for a core (a repeating
    timer found the next step due already, and the steps ran back to back in one turn)."""
    from gui.app import create_app
    create_app()
    steps = Steps(interval=1)
    seen, starts = [], []
    real = steps._timer.start
    steps._timer.start = lambda *a: (starts.append(len(seen)), real(*a))
    for i in range(3):
        steps.add(seen.append, i)
    qtbot.waitUntil(lambda: not steps.busy, timeout=TIMEOUT)
    # the first add starts the timer, then each step that leaves steps queued starts it again
    assert seen == [0, 1, 2] and starts == [0, 1, 2]


def test_a_generator_step_runs_to_each_yield_in_a_tick_of_its_own(qtbot):
    """A step that is a generator function (a plot drawn one costly change at a time) runs
    up to its next yield in each tick, before the steps queued after it; flush and clear
    work on it as on any step."""
    from gui.app import create_app
    create_app()
    steps = Steps(interval=1)
    steps._timer.stop()
    seen = []

    def draw(name):
        seen.append(f"{name} title")
        yield
        seen.append(f"{name} curve")
        yield
        seen.append(f"{name} legend")

    steps.add(draw, "a")
    steps.add(seen.append, "after")
    steps._timer.stop()            # the ticks are driven by hand
    steps._next()
    assert seen == ["a title"]
    steps._next()
    assert seen == ["a title", "a curve"]
    steps._next()
    assert seen == ["a title", "a curve", "a legend"] and steps.busy
    steps._next()
    assert seen[-1] == "after" and not steps.busy
    seen.clear()
    steps.add(draw, "b")
    steps.add(draw, "c")
    steps._timer.stop()
    steps._next()
    steps.flush()
    assert seen == ["b title", "b curve", "b legend", "c title", "c curve", "c legend"]
    seen.clear()
    steps.add(draw, "d")
    steps._timer.stop()
    steps._next()
    steps.clear()
    steps.flush()
    assert seen == ["d title"] and not steps.busy


def _snapshot(panel):
    """What the results panel shows: its tabs, its metrics and every plot's title and data."""
    tabs = [panel.tabText(i) for i in range(panel.count())]
    t = panel.metrics_view.table
    metrics = [(t.item(r, 0).text(), t.item(r, 1).text()) for r in range(t.rowCount())]
    plots = {}
    for name, p in panel.plots().items():
        items = []
        for item in p.getPlotItem().items:
            data = item.getData() if hasattr(item, "getData") else None
            if data is not None and data[0] is not None:
                items.append((type(item).__name__, np.asarray(data[0]).tolist(),
                              np.asarray(data[1]).tolist()))
            else:
                items.append((type(item).__name__,))
        plots[name] = (getattr(p, "plot_title", None), items)
    return tabs, metrics, plots


@pytest.mark.parametrize("make_csv,family", [(moons_csv, "rw"), (regression_csv, "rks")])
def test_a_run_drawn_in_steps_ends_as_drawn_at_once(qtbot, window, tmp_path, make_csv,
                                                    family):
    load(qtbot, window, make_csv(tmp_path / "d.csv"))
    choose(window, family, n_features=30, random_state=0)
    seen = {}

    def at_outcome(run_id, res):
        # the window's own handler ran first: the results wait for their steps
        seen["shown"] = window.results_panel.result is res
        seen["queued"] = window._steps.busy
    window.worker.finished.connect(at_outcome)
    run = train(qtbot, window)
    window.worker.finished.disconnect(at_outcome)
    assert seen == {"shown": False, "queued": True}
    assert window.results_panel.result is run.result
    assert window.right_tabs.currentWidget() is window.results_panel
    stepped = _snapshot(window.results_panel)
    assert len(stepped[2]) >= 2
    window.results_panel.show_result(run.result, window.results_panel.metrics_view.title.text())
    assert window.results_panel.drawing               # queued, not drawn in the call
    window.results_panel.flush()
    assert _snapshot(window.results_panel) == stepped


def test_the_comparison_draws_a_run_a_step(qtbot, window, tmp_path):
    load(qtbot, window, moons_csv(tmp_path / "m.csv"))
    runs = []
    for reg in (0.01, 0.1, 1.0):
        choose(window, "rfsgd", n_features=20, n_epochs=2, chunk_size=40, random_state=0,
               reg=reg)
        runs.append(train(qtbot, window))
    rl = window.run_list
    rl.select([r.run_id for r in runs])
    assert rl.drawing and not rl.compare_plot.listDataItems()
    qtbot.waitUntil(lambda: not rl.drawing, timeout=TIMEOUT)
    items = rl.compare_plot.listDataItems()
    name = rl.metric_combo.currentText()
    assert len(items) == 3
    for item, run in zip(items, runs):
        np.testing.assert_array_equal(item.getData()[1], run.curves[name][1])
    # on screen too, a curve a step, and no paint of the plot until the last is in
    window.right_tabs.setCurrentWidget(rl)
    qtbot.waitUntil(rl.compare_plot.isVisible, timeout=TIMEOUT)
    counts = []
    rl._steps._timer.timeout.connect(
        lambda: counts.append((len(rl.compare_plot.listDataItems()),
                               rl.compare_plot.updatesEnabled())))
    rl.select([r.run_id for r in runs])
    assert rl.drawing and not rl.compare_plot.listDataItems()
    assert not rl.compare_plot.updatesEnabled()
    qtbot.waitUntil(lambda: not rl.drawing, timeout=TIMEOUT)
    # each tick adds at most one curve; the plot is painted again only with all of them
    seen = [n for n, _ in counts]
    assert seen[:4] == [1, 2, 3, 3], counts
    assert [on for _, on in counts[:3]] == [False, False, False]
    assert rl.compare_plot.updatesEnabled() and len(rl.compare_plot.listDataItems()) == 3
    rl.select([r.run_id for r in runs[:2]])
    rl.flush()
    assert not rl.drawing and len(rl.compare_plot.listDataItems()) == 2


def test_a_live_plot_makes_one_costly_change_a_redraw(qtbot, monkeypatch):
    """A new run's title and axes, then each new curve with its legend entry, each at its own
    redraw (rich text laid out again each time); flush draws everything; a title or a label
    set again unchanged is not laid out again."""
    from gui.app import create_app
    from gui.widgets.plots import LivePlot
    create_app()
    p = LivePlot("old", "x", "")
    qtbot.addWidget(p)
    p.show()
    p.restart("new title", "iteration")
    for name, x, y in (("a", 1, 1.0), ("b", 1, 2.0), ("a", 2, 0.5)):
        p.append(name, x, y)
    p.redraw()
    assert p.plot_title == "new title" and not p._curves and p.dirty
    p.redraw()
    assert list(p._curves) == ["a"] and p.dirty
    p.redraw()
    assert list(p._curves) == ["a", "b"] and not p.dirty
    assert list(p._curves["a"].getData()[1]) == [1.0, 0.5]
    laid = []
    title = p.getPlotItem().titleLabel
    monkeypatch.setattr(title, "setText", lambda *a, **k: laid.append(a))
    p.reset("new title", "iteration")
    assert laid == []
    p.reset("another", "iteration")
    assert laid and laid[-1][0] == "another"
    q = LivePlot("q", "x", "")
    qtbot.addWidget(q)
    q.restart("t", "x")
    q.append("a", 1, 1.0)
    q.append("b", 1, 2.0)
    q.flush()
    assert list(q._curves) == ["a", "b"] and not q.dirty


def test_a_runs_row_update_is_a_step_each_and_ends_as_at_once(qtbot):
    """A run's update in the Runs table: its cells, then the labels of every row, then the
    comparison, each a step; the table ends as update_run leaves it in one call."""
    from gui.app import create_app
    from gui.logic.runs_table import Run
    from gui.panels.run_list import RunList
    create_app()

    def table(rl):
        return [[rl.table.item(r, c).text() for c in range(rl.table.columnCount())]
                for r in range(rl.table.rowCount())]

    def runs():
        return [Run(i, "rw", "RKHS weighting", "RW", {"n_features": 10 * i, "reg": 0.1},
                    curves={"loss": ([0, 1, 2], [3.0, 2.0, 1.0 + i])}) for i in (1, 2)]

    lists = []
    for _ in range(2):
        rl = RunList()
        qtbot.addWidget(rl)
        for run in runs():
            rl.add(run)
        rl.select([1, 2])
        rl.flush()
        lists.append(rl)
    at_once, stepped = lists
    for rl in lists:
        rl.runs[2].status = "done"
        rl.runs[2].params["reg"] = 1.0
    at_once.update_run(at_once.runs[2])
    at_once.flush()
    before = table(stepped)
    gen = stepped.update_steps(stepped.runs[2])
    next(gen)                                          # the row's cells only
    after_cells = table(stepped)
    assert after_cells != before and after_cells[0] == before[0]
    assert after_cells != table(at_once)               # the labels (reg now differs) not yet
    assert stepped.compare_plot.listDataItems()        # the comparison not redrawn yet
    next(gen)                                          # the labels of every row
    assert table(stepped) == table(at_once)
    assert len(stepped.compare_plot.listDataItems()) == 2
    with pytest.raises(StopIteration):
        next(gen)                                      # the comparison, queued a curve a step
    assert stepped.drawing and not stepped.compare_plot.listDataItems()
    stepped.flush()
    assert [i.name() for i in stepped.compare_plot.listDataItems()] == \
        [i.name() for i in at_once.compare_plot.listDataItems()]


def test_the_importance_tab_draws_the_share_then_the_permutation(qtbot):
    """The Importance tab of a run holding both importances: the model's share in one step,
    the permutation plot in the next; the end state is show_run's in one call."""
    from gui.app import create_app
    from gui.panels.results_panel import ResultsPanel
    create_app()
    res = {"importance": [0.2, 0.5, 0.3], "feature_names": ["a", "b", "c"],
           "importance_label": "share",
           "permutation": {"n_rows": 100, "on": "test", "measures": "error increase",
                           "columns": ["b", "a", "c"], "mean": [0.3, 0.1, 0.0],
                           "std": [0.01, 0.02, 0.0], "n_repeats": 5, "seed": 0,
                           "baseline": 0.1}}
    panels = [ResultsPanel(), ResultsPanel()]
    for p in panels:
        qtbot.addWidget(p)
        p.importance_available = (True, "")
    at_once, stepped = (p.importance_view for p in panels)
    at_once.show_run(res, True)
    gen = panels[1]._draw_importance(res)
    next(gen)
    assert len(stepped.share_plot.listDataItems()) + len(stepped.share_plot.items()) > 0
    assert stepped.info.text() == "" and at_once.info.text() != ""
    with pytest.raises(StopIteration):
        next(gen)
    assert stepped.info.text() == at_once.info.text()
    assert len(stepped.perm_plot.items()) == len(at_once.perm_plot.items())
    assert len(stepped.share_plot.items()) == len(at_once.share_plot.items())
