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

import time

import numpy as np
import pytest

pytest.importorskip("pytestqt")
pytest.importorskip("pyqtgraph")

from gui.widgets.steps import Steps, scheduler  # noqa: E402
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


def _iterations(qtbot, queues, make_step):
    """Run ``make_step(q, i)`` as three steps of each queue; return (queue, step, the
    event-loop iteration it ran in), in the order they ran."""
    from PySide6.QtCore import QAbstractEventDispatcher
    turn = [0]
    dispatcher = QAbstractEventDispatcher.instance()
    count = lambda: turn.__setitem__(0, turn[0] + 1)      # noqa: E731
    dispatcher.aboutToBlock.connect(count)
    ran = []
    try:
        for q, steps in enumerate(queues):
            for i in range(3):
                steps.add(make_step(q, i, lambda q=q, i=i: ran.append((q, i, turn[0]))))
        qtbot.waitUntil(lambda: not any(s.busy for s in queues), timeout=TIMEOUT)
    finally:
        dispatcher.aboutToBlock.disconnect(count)
    return ran


def test_the_next_step_is_timed_from_the_end_of_what_the_last_caused(qtbot):
    """What a step causes in the iterations after it (a paint, a layout: here an event that
    keeps the thread busy for three step intervals) starts the next step's delay again when
    it ends: counted from the step's end alone, the next step was due before the thread slept
    and ran in the same turn under load."""
    from PySide6.QtCore import QCoreApplication, QEvent, QObject

    from gui.app import create_app
    from gui.widgets.steps import scheduler
    create_app()
    seen = []

    class Slow(QObject):
        def event(self, ev):
            if ev.type() == QEvent.User:
                t = time.thread_time()
                while time.thread_time() - t < 0.006:     # busy, as a paint is
                    pass
                seen.append("caused")
                return True
            return super().event(ev)
    slow = Slow()

    def step(i):
        seen.append(f"step {i}")
        QCoreApplication.postEvent(slow, QEvent(QEvent.User))
    timer = scheduler()._timer
    real = timer.start
    timer.start = lambda *a: (seen.append("timer"), real(*a))
    steps = Steps(interval=2)
    try:
        for i in range(3):
            steps.add(step, i)
        qtbot.waitUntil(lambda: not steps.busy, timeout=TIMEOUT)
        qtbot.wait(20)
    finally:
        del timer.start
    # between what a step caused and the next step, the timer started again
    for i in (1, 2):
        between = seen[seen.index(f"step {i - 1}"):seen.index(f"step {i}")]
        assert "caused" in between, seen
        assert "timer" in between[between.index("caused"):], seen


def test_two_queues_never_run_two_steps_in_one_turn(qtbot):
    """Steps of different queues (the window's, the results panel's, its preparation's) each
    run in an event-loop iteration of their own, the thread asleep between two, the queues in
    turn: with a timer per queue, every queue's timer was due when the thread woke up and 3-6
    steps of different queues ran in one turn of 17-25 ms of CPU at the end of each run
    (bench_gui_load --record-turns)."""
    from gui.app import create_app
    create_app()
    ran = _iterations(qtbot, [Steps(interval=2) for _ in range(3)],
                      lambda q, i, record: record)
    assert sorted((q, i) for q, i, _ in ran) == [(q, i) for q in range(3) for i in range(3)]
    iterations = [t for _, _, t in ran]
    assert len(set(iterations)) == len(iterations), ran
    # the queues in turn, each in its own order
    assert [q for q, _, _ in ran] == [0, 1, 2] * 3
    assert all([i for q2, i, _ in ran if q2 == q] == [0, 1, 2] for q in range(3))


def test_a_deleted_queue_leaves_the_scheduler(qtbot):
    """A queue deleted with its owner (a window closed with steps waiting) is not run."""
    import shiboken6
    from PySide6.QtCore import QObject

    from gui.app import create_app
    from gui.widgets.steps import scheduler
    create_app()
    owner = QObject()
    steps = Steps(owner, interval=1)
    seen = []
    steps.add(seen.append, 1)
    other = Steps(interval=1)
    other.add(seen.append, 2)
    # deleted at once, not by deleteLater: whether a deferred delete came before the 1 ms
    # timer of the scheduler was the event loop's choice, and the test must not depend on it
    shiboken6.delete(owner)
    qtbot.waitUntil(lambda: not other.busy, timeout=TIMEOUT)
    qtbot.wait(10)
    assert seen == [2] and all(s is not steps for s in scheduler()._waiting)


def test_a_generator_step_runs_to_each_yield_in_a_tick_of_its_own(qtbot):
    """A step that is a generator function (a plot drawn one costly change at a time) runs
    up to its next yield in each tick, before the steps queued after it; flush and clear
    work on it as on any step."""
    from gui.app import create_app
    create_app()
    steps = Steps(interval=1)
    seen = []

    def draw(name):
        seen.append(f"{name} title")
        yield
        seen.append(f"{name} curve")
        yield
        seen.append(f"{name} legend")

    steps.add(draw, "a")
    steps.add(seen.append, "after")
    scheduler()._timer.stop()      # the ticks are driven by hand
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
    scheduler()._timer.stop()
    steps._next()
    steps.flush()
    assert seen == ["b title", "b curve", "b legend", "c title", "c curve", "c legend"]
    seen.clear()
    steps.add(draw, "d")
    scheduler()._timer.stop()
    steps._next()
    steps.clear()
    steps.flush()
    assert seen == ["d title"] and not steps.busy

    def replaced():
        # a generator whose own step clears its queue (a new drawing replacing it)
        seen.append("e title")
        steps.clear()
        steps.add(seen.append, "new")
        yield
        seen.append("e rest")
    seen.clear()
    steps.add(replaced)
    scheduler()._timer.stop()
    steps.flush()
    assert seen == ["e title", "new"] and not steps.busy


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
    """A new selection gives the curves drawn the new runs' data, one run a step, the plot
    painted once when the last is in; the curves and their legend entries are kept and given
    the new data, styles and names (removed and made again they cost the selection's turn
    3-4 ms and each step 2-3 ms more), and end as the selection drawn afresh would."""
    from gui.logic.runs_table import run_labels
    from gui.widgets.plots import PALETTE
    load(qtbot, window, moons_csv(tmp_path / "m.csv"))
    runs = []
    for reg in (0.01, 0.1, 1.0):
        choose(window, "rfsgd", n_features=20, n_epochs=2, chunk_size=40, random_state=0,
               reg=reg)
        runs.append(train(qtbot, window))
    rl = window.run_list
    rl.select([r.run_id for r in runs])
    assert rl.drawing
    qtbot.waitUntil(lambda: not rl.drawing, timeout=TIMEOUT)
    name = rl.metric_combo.currentText()

    def check(chosen):
        items = rl.compare_plot.listDataItems()
        labels = run_labels(chosen)
        assert len(items) == len(chosen) == len(rl.compare_plot.legend.items)
        for k, (item, run) in enumerate(zip(items, chosen)):
            np.testing.assert_array_equal(item.getData()[1], run.curves[name][1])
            assert item.name() == f"#{run.run_id} {labels[run.run_id]}"
            assert rl.compare_plot.legend.getLabel(item).text == item.name()
            assert item.opts["pen"].color().name().lower() == PALETTE[k].lower()
        return items
    check(runs)
    # fewer runs: the first curves kept, the rest removed with their legend entries
    kept = rl.compare_plot.listDataItems()
    rl.select([r.run_id for r in runs[1:]])
    rl.flush()
    items = check(runs[1:])
    assert items == kept[:2]
    # on screen too, a curve a step, and no paint of the plot until the last is in
    window.right_tabs.setCurrentWidget(rl)
    qtbot.waitUntil(rl.compare_plot.isVisible, timeout=TIMEOUT)
    counts = []

    def done():
        # how many curves, in order, hold the new selection's data
        n = 0
        for item, run in zip(rl.compare_plot.listDataItems(), runs):
            if not np.array_equal(item.getData()[1], run.curves[name][1]):
                break
            n += 1
        return n

    def tick(steps):
        if steps is rl._steps:
            counts.append((done(), rl.compare_plot.updatesEnabled()))
    scheduler().stepped.connect(tick)
    rl.select([r.run_id for r in runs])
    assert rl.drawing and done() == 0
    assert not rl.compare_plot.updatesEnabled()
    qtbot.waitUntil(lambda: not rl.drawing, timeout=TIMEOUT)
    scheduler().stepped.disconnect(tick)
    # each tick gives one curve its data; the plot is painted again only with all of them
    seen = [n for n, _ in counts]
    assert seen[:4] == [1, 2, 3, 3], counts
    assert [on for _, on in counts[:3]] == [False, False, False]
    assert rl.compare_plot.updatesEnabled()
    assert check(runs)[:2] == items


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
    old_names = [i.name() for i in stepped.compare_plot.listDataItems()]
    with pytest.raises(StopIteration):
        next(gen)                                      # the comparison, queued a curve a step
    # the curves kept, given their new names in the queued steps
    assert stepped.drawing and [i.name() for i in stepped.compare_plot.listDataItems()] == \
        old_names != [i.name() for i in at_once.compare_plot.listDataItems()]
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


def test_the_confusion_counts_are_one_item_painted_at_their_cells(qtbot):
    """The confusion matrix's counts and row shares are one item (a TextItem a cell was a
    rich-text document laid out and placed at each change of the view: 2-3 ms of the GUI
    thread a row of cells), each text at its cell's centre in the plot's pixels: dark text
    is painted around every light cell's centre and nowhere far from the centres."""
    from PySide6.QtCore import QPointF
    from PySide6.QtGui import QColor, QImage, QPainter

    from gui.app import create_app
    from gui.panels.results_panel import ResultsPanel
    from gui.widgets.plots import CellTexts
    create_app()
    rp = ResultsPanel()
    qtbot.addWidget(rp)
    rp.resize(800, 600)
    rp.show()
    qtbot.waitExposed(rp)
    cm = np.array([[50, 3, 0], [7, 40, 3], [0, 0, 12]])
    rp.show_result({"task": "multiclass", "confusion": cm, "classes": ["a", "b", "c"],
                    "metrics": {}})
    rp.flush()
    p = rp.confusion_plot
    texts = [it for it in p.getPlotItem().items if isinstance(it, CellTexts)]
    assert len(texts) == 1
    rows = cm.sum(axis=1)
    assert texts[0].texts() == [f"{cm[i, j]}\n{100 * cm[i, j] / rows[i]:.0f}%"
                                for i in range(3) for j in range(3)]
    rp.setCurrentWidget(p)
    qtbot.waitUntil(p.isVisible, timeout=TIMEOUT)
    img = QImage(p.viewport().size(), QImage.Format_RGB32)
    img.fill(QColor("white"))
    painter = QPainter(img)
    p.render(painter, source=p.viewport().rect())
    painter.end()
    view = p.getPlotItem().getViewBox()

    def dark_near(x, y, r):
        c = p.mapFromScene(view.mapViewToScene(QPointF(x, y)))
        return sum(QColor(img.pixel(c.x() + dx, c.y() + dy)).lightness() < 80
                   for dx in range(-r, r + 1) for dy in range(-r, r + 1))
    for i in range(3):
        for j in range(3):
            if cm[i, j] / rows[i] <= 0.6:           # dark text on a light cell
                assert dark_near(j + 0.5, 3 - i - 0.5, 12) > 5, (i, j)
    # between the cells' texts (a cell's corner) nothing is written
    assert dark_near(1.0, 1.0, 3) == 0


def test_selecting_a_run_shows_it_a_step_later(qtbot, window, tmp_path):
    """Selecting one run in the Runs table shows its metrics, tabs and plots in steps after
    the selection's turn (the metrics table and the tab bar filled in that turn were 4-6 ms
    more of it); the results panel says it is drawing from the selection on, and ends as the
    run shown at once."""
    load(qtbot, window, moons_csv(tmp_path / "m.csv"))
    runs = []
    for n in (20, 30):
        choose(window, "rw", n_features=n, random_state=0)
        runs.append(train(qtbot, window))
    panel = window.results_panel
    qtbot.waitUntil(lambda: not panel.drawing, timeout=TIMEOUT)
    assert panel.result is runs[1].result
    window.run_list.select([runs[0].run_id])
    assert panel.drawing and panel.result is runs[1].result      # not in the selection's turn
    qtbot.waitUntil(lambda: not panel.drawing, timeout=TIMEOUT)
    assert panel.result is runs[0].result
    stepped = _snapshot(panel)
    panel.show_result(runs[0].result, panel.metrics_view.title.text())
    panel.flush()
    assert _snapshot(panel) == stepped


def test_a_step_that_raises_leaves_the_others_running(qtbot, monkeypatch):
    """A step that raises (reported by Qt's handler of exceptions in slots) does not stop the
    scheduler: the steps queued after it, in its queue and in others, still run (without
    the postponing of the next step after busy iterations, which would start the timer
    again by another way)."""
    from gui.app import create_app
    from gui.widgets import steps as steps_module
    create_app()
    monkeypatch.setattr(steps_module, "POSTPONE", 0)
    seen = []

    def boom():
        raise RuntimeError("a step failed")
    a, b = Steps(interval=1), Steps(interval=1)
    with qtbot.capture_exceptions() as raised:
        a.add(boom)
        a.add(seen.append, "a after")
        b.add(seen.append, "b")
        qtbot.waitUntil(lambda: not a.busy and not b.busy, timeout=TIMEOUT)
    assert sorted(seen) == ["a after", "b"]
    assert [str(e[1]) for e in raised] == ["a step failed"]
