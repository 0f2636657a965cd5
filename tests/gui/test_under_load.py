"""What keeps the window's GUI thread's share of the CPU small (issue 24, "Responsiveness under
load"): the fit process runs niced in a session of its own (Linux's scheduler shares the CPU
between sessions first), and progress events only store their figures, drawn on timers in a
bounded number of paints, by live curves drawn cheaply. Checked on what Linux reports of the
process (os.getsid, os.getpriority) and by counting redraws and widget updates, never by
time: benchmarks/speed/bench_gui_load.py measures the gaps.
"""

from __future__ import annotations

import os
import sys

import pytest

pytest.importorskip("pytestqt")

from gui.app import create_app  # noqa: E402
from gui.worker import FIT_NICE, WarmUpJob, WorkerController  # noqa: E402
from tests.gui.test_main_window import window  # noqa: E402,F401

TIMEOUT = 60_000


def _record_events(kinds, *widgets):
    """``(seen, spy)``: each ``(object, event type)`` of ``kinds`` that reaches ``widgets`` is
    appended to ``seen`` while ``spy``, the event filter, is alive."""
    from PySide6.QtCore import QObject
    seen = []

    class Spy(QObject):
        def eventFilter(self, obj, ev):
            if ev.type() in kinds:
                seen.append((obj, ev.type()))
            return False
    spy = Spy()
    for w in widgets:
        w.installEventFilter(spy)
    return seen, spy


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sessions: os.setsid")
def test_the_fit_process_runs_niced_in_a_session_of_its_own(qtbot):
    create_app()
    ctl = WorkerController(processes=True)
    try:
        with qtbot.waitSignal(ctl.called, timeout=TIMEOUT):
            ctl.submit(WarmUpJob(()))          # starts the fit process, fits nothing
        pid = ctl.worker.fits.proc.pid
        assert os.getsid(pid) == pid != os.getsid(0)
        assert os.getpriority(os.PRIO_PROCESS, pid) == min(
            19, os.getpriority(os.PRIO_PROCESS, os.getpid()) + FIT_NICE)
    finally:
        ctl.shutdown()


def test_progress_events_only_store_and_the_redraws_are_batched(qtbot, monkeypatch):
    from gui.panels.training_panel import SHOW_MS, TrainingPanel
    from gui.widgets.plots import LIVE_CURVE, LivePlot
    create_app()
    panel = TrainingPanel()
    qtbot.addWidget(panel)
    panel.show()
    panel.board.show()
    redraws: list[str] = []
    real = LivePlot.redraw

    def counted(self):
        if self.dirty:
            redraws.append(self.metric)
        real(self)
    monkeypatch.setattr(LivePlot, "redraw", counted)
    phase_lines: list[str] = []
    real_text = panel.stage_label.setText
    panel.stage_label.setText = lambda t: (phase_lines.append(t), real_text(t))
    bar_values: list[int] = []
    panel.progress.valueChanged.connect(bar_values.append)
    panel.started("a run")
    qtbot.waitUntil(lambda: not panel.board._redraws.isActive(), timeout=TIMEOUT)
    redraws.clear(), phase_lines.clear(), bar_values.clear()
    n = 500
    for i in range(n):              # back to back, as queued signals arrive after a stall
        panel.on_progress({"stage": "sfgd", "done": i + 1, "total": n, "elapsed": 0.0,
                           "metrics": {"train_loss": 1.0 / (i + 1), "val_error": 0.5 - i / 2e3}})
    # the events stored their figures and drew nothing
    assert redraws == [] and phase_lines == [] and bar_values == []
    assert panel.bar_text == f"sfgd: {n} / {n}  (%p%)"
    qtbot.waitUntil(lambda: not panel.board._redraws.isActive() and bool(bar_values),
                    timeout=TIMEOUT)
    qtbot.wait(2 * SHOW_MS)             # more ticks of the clock change nothing
    # then two redraws per plot (the new run's title and axes, then its points: a costly
    # change a turn), one update of the bar and of the phase line, for 500 events
    assert sorted(redraws) == ["train_loss"] * 2 + ["val_error"] * 2
    assert bar_values == [1000] and len(phase_lines) == 1
    assert panel.progress.format() == panel.bar_text
    assert panel.stage_label.text() == panel.phase_text != ""
    plot = panel.board.plots()["val_error"]
    x, y = plot.curve_data("val_error")
    assert len(x) == n and y[-1] == pytest.approx(0.5 - (n - 1) / 2e3)
    (curve,) = plot._curves.values()
    assert {k: curve.opts[k] for k in LIVE_CURVE} == LIVE_CURVE
    panel.stopped("done")


def test_the_train_click_does_not_scan_proc_on_the_gui_thread(qtbot, window, tmp_path,
                                                              monkeypatch):
    """The pre-flight estimate's count of runnable groups (a scan of every task in /proc,
    rwtool.resources.runnable_groups) is taken on Qt's thread pool before the click."""
    import threading

    import rwtool.resources as resources
    from tests.gui.test_main_window import choose, load, moons_csv, train
    real, scans = resources.runnable_groups, []

    def counted(*a, **k):
        scans.append(threading.current_thread() is threading.main_thread())
        return real(*a, **k)
    monkeypatch.setattr(resources, "runnable_groups", counted)
    load(qtbot, window, moons_csv(tmp_path / "m.csv"))
    choose(window, "rw", n_features=20, random_state=0)
    qtbot.waitUntil(lambda: window.load_probe.value() is not None, timeout=TIMEOUT)
    assert scans and not any(scans)          # counted, off the GUI thread
    n = len(scans)
    run = train(qtbot, window)
    assert run.status == "done"
    assert not any(scans[n:])                # the click used the count taken before


def test_live_curves_draw_dots_only_once_the_run_has_ended(qtbot):
    """A short curve's points are marked when the run ends, not while it is fed (pyqtgraph's
    symbols are most of a live redraw's cost)."""
    from gui.panels.training_panel import TrainingPanel
    from gui.widgets.plots import MARKED
    create_app()
    panel = TrainingPanel()
    qtbot.addWidget(panel)
    panel.show()
    panel.board.show()
    panel.started("a run")
    for i in range(5):
        panel.on_progress({"stage": "greedy path", "done": i + 1, "total": 30, "elapsed": 0.0,
                           "metrics": {"n_features": i + 1, "val_error": 0.5 / (i + 1)}})
    panel.board.flush()
    (curve,) = panel.board.plots()["val_error"]._curves.values()
    assert 5 < MARKED and curve.opts["symbol"] is None
    panel.stopped("done")
    panel.board.flush()
    assert curve.opts["symbol"] == "o"
    panel.started("next run")           # a new run draws without them again
    panel.on_progress({"stage": "greedy path", "done": 1, "total": 30, "elapsed": 0.0,
                       "metrics": {"n_features": 1, "val_error": 0.4}})
    panel.board.flush()
    (curve,) = panel.board.plots()["val_error"]._curves.values()
    assert curve.opts["symbol"] == "o"     # a lone point is shown as a dot


def test_the_bar_is_not_repainted_inside_the_clock_tick(qtbot):
    """QProgressBar.setValue repaints at once; the clock's tick holds that repaint, so that
    the bar is painted with the labels in the window's next paint (no Paint event inside the
    tick, one after it)."""
    from PySide6.QtCore import QEvent

    from gui.panels.training_panel import TrainingPanel
    create_app()
    panel = TrainingPanel()
    qtbot.addWidget(panel)
    panel.show()
    qtbot.waitExposed(panel)
    painted, spy = _record_events((QEvent.Paint,), panel.progress)
    panel.started("a run")
    qtbot.wait(50)
    painted.clear()
    panel.on_progress({"stage": "sfgd", "done": 5, "total": 10, "elapsed": 0.0, "metrics": {}})
    panel._tick()
    assert painted == [] and panel.progress.value() == 500
    qtbot.waitUntil(lambda: bool(painted), timeout=TIMEOUT)
    panel.stopped("done")


def test_the_window_keeps_its_start_objects_out_of_the_collectors_passes(qtbot, tmp_path):
    """Once built, the window moves the objects of the start out of the cyclic collector's
    passes (a full pass over them was a 79 ms turn of the GUI thread at a moment of its own),
    and gives them back when it closes, so that a closed window's cycles can be collected."""
    import gc

    from PySide6.QtCore import QSettings

    from gui.app import create_app
    from gui.main_window import FREEZE_MS, MainWindow
    create_app()
    gc.unfreeze()
    win = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat),
                     warm_up=False, fit_process=False)
    qtbot.addWidget(win)
    assert gc.get_freeze_count() == 0
    qtbot.waitUntil(lambda: gc.get_freeze_count() > 0, timeout=FREEZE_MS + 5000)
    # the window's own widgets are among the frozen objects: a full pass no longer visits them
    frozen = gc.get_freeze_count()
    assert frozen > 10_000
    win.close()
    assert gc.get_freeze_count() == 0


def test_result_plots_draw_two_levels_of_ticks(qtbot):
    """A plot's axes draw major and minor ticks and grid lines, not pyqtgraph's third level
    at a tenth of the major spacing (unlabelled, most of the grid's lines and of the paint)."""
    import pyqtgraph as pg

    from gui.widgets.plots import TICK_LEVELS, LivePlot, ResultPlot
    create_app()
    default = pg.AxisItem("bottom")
    assert len(default.tickValues(0.0, 1.0, 400)) == 3         # what was drawn before
    for plot in (ResultPlot("t", "x", "y"), LivePlot("t", "x", "y")):
        qtbot.addWidget(plot)
        for side in ("left", "bottom"):
            levels = plot.getAxis(side).tickValues(0.0, 1.0, 400)
            assert len(levels) == TICK_LEVELS == 2


def test_a_new_phase_text_lays_nothing_out_and_paints_the_panel_alone(qtbot):
    """The phase line changes at every tick of the panel's clock during a run: a longer text
    repaints it and posts no layout request to the panel (whose layout, laid out again, asked
    its parents up to the window's splitter to lay out theirs), and the panel's background is
    its own (the texts' repaints did not repaint the window's containers under them)."""
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QVBoxLayout, QWidget

    from gui.panels.training_panel import TrainingPanel
    create_app()
    host = QWidget()
    qtbot.addWidget(host)
    panel = TrainingPanel()
    QVBoxLayout(host).addWidget(panel)
    host.resize(600, 120)
    host.show()
    qtbot.waitExposed(host)
    panel.started("a run")
    qtbot.wait(50)
    seen, spy = _record_events((QEvent.LayoutRequest, QEvent.Paint), host, panel,
                               panel.stage_label)
    for i in range(1, 6):
        # a longer phase line at each event
        panel.on_progress({"stage": "sgd" + " and more" * i, "done": i, "total": 10,
                           "metrics": {"loss": 0.5 / i}})
        panel._tick()
        qtbot.wait(20)
    assert panel.stage_label.text() == panel.phase_text
    assert panel.phase_text.startswith("sgd" + " and more" * 5)
    requests = [o for o, kind in seen if kind == QEvent.LayoutRequest]
    painted = [o for o, kind in seen if kind == QEvent.Paint]
    assert panel.stage_label in painted and requests == [] and host not in painted
    panel.stopped("done")


def test_a_growing_quantity_moves_its_live_axis_a_few_times(qtbot):
    """A quantity that keeps growing (a norm, the features added) leaves the y axis at each
    of its new highs: the axis then gets headroom on that side, so that it moves a few times
    in a run (each move lays out both axes' ticks and paints the plot twice), always showing
    every point."""
    from gui.widgets.plots import LivePlot
    create_app()
    plot = LivePlot("norm", "iteration", "")
    qtbot.addWidget(plot)
    plot.restart("norm", "iteration")
    plot.redraw()
    views, ys = [], []
    for i in range(300):
        y = 2.0 * i + 0.01 * (i % 7)
        ys.append(y)
        plot.append("norm", i, y)
        plot.flush()
        (_, _), (y0, y1) = plot.viewRange()
        assert y0 <= min(ys) and y1 >= max(ys)
        views.append((y0, y1))
    moves = sum(a != b for a, b in zip(views, views[1:]))
    # with a margin of a tenth of the span the axis moved every tenth of the points so far
    # (41 times in 300 points); with half the span ahead, about log(300) / log(1.5) = 14
    assert moves <= 16, moves


def test_live_plots_draw_no_legend(qtbot):
    """A live plot shows one quantity, named by its title: no legend entry is laid out when
    its curve is created, nor moved when the plot's layout changes."""
    import pyqtgraph as pg

    from gui.widgets.curve_board import CurveBoard
    create_app()
    board = CurveBoard()
    qtbot.addWidget(board)
    board.show()
    for i in range(5):
        for name, v in (("loss", 1.0 / (i + 1)), ("norm", 2.0 * i)):
            board.append(name, "iteration", i, v)
    board.flush()
    plots = board.plots()
    assert set(plots) == {"loss", "norm"}
    for name, plot in plots.items():
        assert plot.curve_names() == [name] and plot.legend is None
        assert not [it for it in plot.scene().items() if isinstance(it, pg.LegendItem)]


def test_choosing_a_method_with_its_parameters_recomputes_the_form_once(qtbot):
    """Choosing a method with several parameters (a script, a search's best parameters)
    rebuilds the form and sets every value before the checks, the derived quantities and the
    listeners run, once (one run per value was one turn of 15-28 ms of the GUI thread)."""
    from gui.panels.method_panel import MethodPanel
    create_app()
    panel = MethodPanel()
    qtbot.addWidget(panel)
    key = next(f.key for f in panel.families if f.key != panel.family().key)
    seen = []
    panel.changed.connect(lambda: seen.append(panel.params(partial=True)))
    panel.set_method(key, {"random_state": 3, "n_features": 40})
    assert panel.family().key == key and len(seen) == 1
    assert seen[0]["random_state"] == 3 and seen[0]["n_features"] == 40
    # a value the user types still recomputes at once
    panel.set_param("random_state", 4)
    assert len(seen) == 2 and seen[1]["random_state"] == 4


def test_cancelling_lays_nothing_out(qtbot):
    """Cancel changes the button's text to "Cancelling…" and back: the button keeps its size
    and no layout request reaches the panel."""
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QVBoxLayout, QWidget

    from gui.panels.training_panel import TrainingPanel
    create_app()
    host = QWidget()
    qtbot.addWidget(host)
    panel = TrainingPanel()
    QVBoxLayout(host).addWidget(panel)
    host.show()
    qtbot.waitExposed(host)
    panel.started("a run")
    qtbot.wait(50)
    size = panel.cancel_button.size()
    requests, spy = _record_events((QEvent.LayoutRequest,), host, panel)
    panel.mark_cancelling()
    qtbot.wait(30)
    assert panel.cancel_button.text() == "Cancelling…"
    panel.stopped("cancelled")
    qtbot.wait(30)
    assert panel.cancel_button.size() == size and requests == []


def test_a_live_plot_comes_on_screen_with_its_first_paint_prepared(qtbot):
    """A run's plot comes on screen with its axes' ticks and labels built off screen, a step
    at a time (gui.widgets.prepaint): its first paint replays them (built in the paint, with
    the title and the plot's layout, it was one turn of 5-13 ms under load)."""
    from PySide6.QtCore import QEvent, QObject

    from gui.widgets.prepaint import unprepared_axes
    from tests.gui.test_main_window import prepared_board
    create_app()
    board = prepared_board(qtbot, 2, 600, 500)
    qtbot.waitUntil(lambda: not board._redraws.isActive(), timeout=5000)
    first_paint = {}

    class Spy(QObject):
        def eventFilter(self, obj, ev):
            if ev.type() == QEvent.Paint and obj.parent().metric not in first_paint:
                first_paint[obj.parent().metric] = len(unprepared_axes(obj.parent()))
            return False
    spy = Spy()
    for p in board._pool:
        p.viewport().installEventFilter(spy)
    for i in range(3):
        board.append("loss", "iteration", i, 1.0 / (i + 1))
        board.append("norm", "iteration", i, 2.0 * i)
    qtbot.waitUntil(lambda: len(first_paint) == 2, timeout=10_000)
    assert first_paint == {"loss": 0, "norm": 0}
