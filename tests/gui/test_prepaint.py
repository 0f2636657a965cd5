"""A plot's first paint prepared ahead of it (gui.widgets.prepaint), a step at a time: the result
tabs not on screen and the comparison of runs (issue 24, "Responsiveness under load": a
result tab's first paint was 15-40 ms of the GUI thread in one turn, its axes laid out and
built two or three times in it).

Oracles: pyqtgraph's own caches and calls (an axis that builds its picture calls
generateDrawSpecs; a prepared one only replays it), and the same result drawn in the same
process without the preparation, pixel for pixel. Nothing here measures time.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")
pg = pytest.importorskip("pyqtgraph")

from tests.gui.test_main_window import TIMEOUT, window  # noqa: E402,F401


def _result(task="binary"):
    from rwtool import RWClassifier, RWRegressor

    from gui.logic.evaluate import evaluate
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 3))
    if task == "regression":
        y = X[:, 0] + 0.1 * rng.standard_normal(200)
        est = RWRegressor(n_features=30, random_state=0).fit(X[:150], y[:150])
    else:
        y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
        est = RWClassifier(n_features=30, random_state=0).fit(X[:150], y[:150])
    return dict(evaluate(est, X[:150], y[:150], X[150:], y[150:], task=task), estimator=est)


def _shown(qtbot, make, width=900, height=620):
    """The widget ``make()`` builds, on screen at the given size."""
    from gui.app import create_app
    create_app()
    w = make()
    qtbot.addWidget(w)
    w.resize(width, height)
    w.show()
    qtbot.waitExposed(w)
    return w


def _panel(qtbot):
    from gui.panels.results_panel import ResultsPanel
    return _shown(qtbot, ResultsPanel)


def _plot_pages(rp):
    from gui.widgets.plots import ResultPlot
    return [i for i in range(rp.count()) if isinstance(rp.widget(i), ResultPlot)]


class _Count:
    """Calls of generateDrawSpecs (an axis building its picture) from now on."""

    def __init__(self, monkeypatch):
        self.n = 0
        orig = pg.AxisItem.generateDrawSpecs

        def counted(axis, p):
            self.n += 1
            return orig(axis, p)
        monkeypatch.setattr(pg.AxisItem, "generateDrawSpecs", counted)


def _show(qtbot, rp, i):
    """Make tab ``i`` current and paint it now."""
    rp.setCurrentIndex(i)
    page = rp.widget(i)
    qtbot.waitExposed(page)
    page.viewport().repaint()


@pytest.mark.parametrize("task", ["binary", "regression"])
def test_a_result_tab_shown_after_the_steps_replays_its_axes(qtbot, monkeypatch, task):
    """Once the steps have run, showing each result tab for the first time builds no axis:
    the paint replays what the steps built, at the size the tab is shown with."""
    from gui.widgets.prepaint import unprepared_axes
    rp = _panel(qtbot)
    rp.show_result(_result(task))
    qtbot.waitUntil(lambda: not rp.drawing and not rp.preparing, timeout=TIMEOUT)
    pages = _plot_pages(rp)
    assert len(pages) >= 3
    for i in pages:
        assert not unprepared_axes(rp.widget(i)), rp.tabText(i)
    count = _Count(monkeypatch)
    for i in pages:
        _show(qtbot, rp, i)
        assert count.n == 0, rp.tabText(i)
        assert not unprepared_axes(rp.widget(i))


def test_without_the_preparation_the_first_paint_builds_the_axes(qtbot, monkeypatch):
    """The counter above can fail: a tab shown before its preparation builds its axes in its
    paint (what every result tab did before)."""
    rp = _panel(qtbot)
    rp.show_result(_result())
    qtbot.waitUntil(lambda: not rp.drawing, timeout=TIMEOUT)
    rp._prepare.clear()
    count = _Count(monkeypatch)
    _show(qtbot, rp, _plot_pages(rp)[1])
    assert count.n >= 2


def test_a_prepared_tab_paints_what_an_unprepared_one_does(qtbot):
    """The preparation changes no pixel: each tab of a panel whose steps ran, and of one
    whose preparation was dropped, grabbed at the same size in the same process."""
    res = _result()
    a, b = _panel(qtbot), _panel(qtbot)
    a.show_result(res)
    b.show_result(res)
    qtbot.waitUntil(lambda: not (a.drawing or b.drawing or a.preparing), timeout=TIMEOUT)
    b._prepare.clear()
    for i in _plot_pages(a):
        for rp in (a, b):
            _show(qtbot, rp, i)
        ga, gb = a.widget(i).grab().toImage(), b.widget(i).grab().toImage()
        assert ga.size() == gb.size()
        assert ga == gb, a.tabText(i)


def test_flush_draws_the_plots_and_leaves_the_preparation_to_later_steps(qtbot):
    """A user's action runs the queued drawing at once (flush), never the preparation: that
    would be every tab's first paint in one turn."""
    from gui.widgets.prepaint import unprepared_axes
    rp = _panel(qtbot)
    rp.show_result(_result())
    rp.flush()
    assert not rp.drawing and rp.preparing
    assert any(unprepared_axes(rp.widget(i)) for i in _plot_pages(rp))
    qtbot.waitUntil(lambda: not rp.preparing, timeout=TIMEOUT)
    assert not any(unprepared_axes(rp.widget(i)) for i in _plot_pages(rp))


def test_the_comparison_paints_once_with_its_axes_built(qtbot, monkeypatch):
    """The comparison of runs builds its axes in its steps; its one paint replays them."""
    from gui.logic.runs_table import Run
    from gui.panels.run_list import RunList
    rl = _shown(qtbot, RunList, 900, 700)
    for rid, n in ((1, 60), (2, 80)):
        run = Run(rid, "rw", "RW", "RWClassifier", {"n_features": 10 * rid}, {})
        run.curves = {"loss": (list(range(n)), list(np.linspace(1, 0.1, n)))}
        rl.add(run)
    count = _Count(monkeypatch)
    rl.select([1, 2])
    assert not rl.compare_plot.updatesEnabled()
    qtbot.waitUntil(lambda: not rl.drawing, timeout=TIMEOUT)
    built = count.n
    rl.compare_plot.viewport().repaint()
    assert built >= 2 and count.n == built


def test_the_runs_tab_is_prepared_while_another_tab_is_shown(qtbot, monkeypatch):
    """A run's update prepares the Runs tab when it is not on screen: shown later, its
    comparison plot has the size it is shown with and builds no axis in its paint."""
    from PySide6.QtWidgets import QLabel, QTabWidget

    from gui.logic.runs_table import Run
    from gui.panels.run_list import RunList
    from gui.widgets.prepaint import unprepared_axes
    rl = None

    def make():
        nonlocal rl
        tabs, rl = QTabWidget(), RunList()
        tabs.addTab(QLabel("results"), "Results")
        tabs.addTab(rl, "Runs")
        return tabs
    tabs = _shown(qtbot, make, 900, 700)
    run = Run(1, "rw", "RW", "RWClassifier", {"n_features": 10}, {})
    run.curves = {"loss": ([1, 2, 3], [3.0, 2.0, 1.0])}
    rl.add(run)
    rl.update_run(run)
    qtbot.waitUntil(lambda: not rl.preparing, timeout=TIMEOUT)
    plot = rl.compare_plot
    size = plot.size()
    assert not unprepared_axes(plot)
    count = _Count(monkeypatch)
    tabs.setCurrentWidget(rl)
    qtbot.waitExposed(plot)
    plot.viewport().repaint()
    assert plot.size() == size and count.n == 0


def test_a_tab_shown_is_laid_out_before_its_first_paint(qtbot, window):
    """Switching the right-hand tabs (and the result tabs) runs the layout requests the page's
    show posts, and those their layouts post, in the switch: left to the event loop, each came
    in an iteration of its own with a paint of the window after it (the Results tab was
    painted three times in one turn at the end of every run). Oracle: the LayoutRequest
    events Qt delivers from its queue, once the switch has returned, before the first paint
    (those a paint causes come after it)."""
    from PySide6.QtCore import QCoreApplication, QEvent, QObject
    from PySide6.QtWidgets import QApplication

    class Count(QObject):
        """The layout requests delivered before the first paint."""
        n, painted = 0, False

        def eventFilter(self, obj, ev):
            if ev.type() in (QEvent.Paint, QEvent.UpdateRequest):
                Count.painted = True
            elif ev.type() == QEvent.LayoutRequest and not Count.painted:
                Count.n += 1
            return False
    qtbot.waitExposed(window)
    window.results_panel.show_result(_result(), "a run")
    window.results_panel.flush()
    seen = {}
    rp = window.results_panel
    for tabs, pages, away in ((window.right_tabs, [rp, window.run_list,
                                                   window.training_panel.curves],
                               window.preview_stack),
                              (rp, [rp.widget(i) for i in range(1, rp.count())], rp.widget(0))):
        window.right_tabs.setCurrentWidget(rp if tabs is rp else away)
        for page in pages:
            tabs.setCurrentWidget(away)
            qtbot.wait(30)
            window.settle()
            QCoreApplication.sendPostedEvents()
            count = Count()
            Count.n, Count.painted = 0, False
            tabs.setCurrentWidget(page)
            QApplication.instance().installEventFilter(count)
            QCoreApplication.sendPostedEvents()
            QApplication.instance().removeEventFilter(count)
            seen[(type(tabs).__name__, type(page).__name__)] = Count.n
    assert len(seen) >= 4 and not any(seen.values()), seen
