"""The live curves of a fit: one plot per quantity, each with its own axes.

A solver's progress events carry several numbers of different kinds and scales (a loss near
0.7, a norm near 1000, a training error near 0 and a validation error near 1e10, a
cross-validated score that is better when higher). Drawn on one axis, all but the largest look
flat, and a score looks like an error. Here each quantity gets its own small plot, titled with
what it is, against the x of the stage that produced it (iterations, features added, lambda,
candidates); every run starts from empty plots whose ranges follow its own data.

Redraws go one plot per event-loop turn: Qt paints every widget of a window that changed since
its last paint together, so plots redrawn in the same turn (their points arriving together at the
end of a run, or their timers falling due together after a late turn) cost the sum of their paints
in one turn, 60-110 ms for four plots (docs/bench/gui.md). One timer of the board redraws the next
plot with pending points at each tick, in turn. A plot comes on screen at its own tick too, and
into a cell of the grid kept for it during the run: a plot shown or hidden otherwise changes the
grid's layout, and every plot on screen is resized and painted again in that turn (the first
progress report of a run showed four plots in one turn, 29 ms of the GUI thread and a 213 ms
pause under load, bench_gui_load --load 4). The cells of the plots a run did not use go when
it ends, once the board is off screen.

This module draws; it must not compute models or metrics.
"""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QGridLayout, QLabel, QWidget

from .plots import REDRAW_MS, LivePlot
from .prepaint import prepare_view
from .steps import Steps

__all__ = ["CurveBoard", "describe_metric", "LOG_Y"]

#: what each metric a solver reports is, for a plot title
_TITLES = {
    "loss": "training loss (current batch)",
    "train_loss": "training loss",
    "objective": "objective",
    "norm": "‖α‖ of the iterate (largest output)",
    "train_error": "training error",
    "val_error": "validation error (sample of ≤ 2000 held-out rows)",
    "error": "training error (current batch)",
    "train_error_sample": "training error of the iterate (sample of ≤ 1000 rows)",
    "train_r2_sample": "training R² of the iterate (sample of ≤ 1000 rows)",
    "best_score": "best cross-validated score so far (higher is better)",
    "score": "cross-validated score (higher is better)",
    "nnz": "non-zero coefficients",
    "gap": "duality gap",
    "criterion": "pruning criterion",
}
#: quantities spanning orders of magnitude
LOG_Y = frozenset({"gap"})
COLUMNS = 2


def describe_metric(name: str) -> str:
    return _TITLES.get(name, name.replace("_", " "))


class CurveBoard(QWidget):
    """A grid of :class:`LivePlot`, one per quantity, assigned when the quantity first appears.

    The plots are kept and reused from run to run (creating a pyqtgraph plot and laying out the
    grid again cost the window 50-150 ms in one turn); a new run only clears them, re-titles the
    ones it uses, and hides the unused ones when it ends. Pending points are drawn by
    :meth:`_redraw_next`, one plot per tick of a timer that runs while points wait.
    """

    def __init__(self, parent=None):
        super().__init__(parent)
        self._grid = QGridLayout(self)
        self._grid.setContentsMargins(2, 2, 2, 2)
        self._pool: list[LivePlot] = []
        self._plots: dict[str, LivePlot] = {}
        self._hint = QLabel("The curves of the next fit appear here: one plot per quantity "
                            "the solver reports.")
        self._hint.setWordWrap(True)
        self._grid.addWidget(self._hint, 0, 0)
        self._turn = 0
        self._release = False       # the unused plots' cells go when the board is hidden
        # each plot with pending points is redrawn at most every REDRAW_MS while four wait
        self._redraws = QTimer(self)
        self._redraws.setInterval(max(1, REDRAW_MS // 4))
        self._redraws.timeout.connect(self._redraw_due)
        # the redraw itself a step of the window's steps (gui.widgets.steps): run at its
        # timer's tick, it shared a turn with the end of a run's steps (8-17 ms of CPU)
        self._redraw_step = Steps(self)
        # a plot coming on screen: its first paint prepared off screen a step at a time, then
        # shown (its first paint, with its axes built, was one turn of 5-13 ms under load)
        self._arrivals = Steps(self)
        self._ahead = Steps(self)           # plots created ahead of the first run
        self._arriving: set[int] = set()
        # opaque: a plot shown or repainted repaints the board's background under it, not the
        # tab widget's and its tab bar's
        self.setAutoFillBackground(True)

    def prepare(self, n: int = 4) -> None:
        """Create ``n`` plots ahead (hidden), one a step (gui.widgets.steps), before the first
        fit: chained by singleShot(0), the four were one turn of 99-145 ms of the GUI thread
        at the window's start (bench_gui_load --record-turns), the thread never asleep
        between two."""
        for _ in range(n - len(self._pool)):
            self._ahead.add(self._new_hidden, n)

    def _new_hidden(self, n: int) -> None:
        if len(self._pool) < n:             # (a run may have made some already)
            self._new_plot().setVisible(False)

    def _new_plot(self) -> LivePlot:
        i = len(self._pool)
        p = LivePlot("", "", "")
        p.metric = None
        self._keep_cell(p, True)
        self._pool.append(p)
        self._grid.addWidget(p, i // COLUMNS, i % COLUMNS)
        return p

    # -- content ----------------------------------------------------------------------------
    def plots(self) -> dict[str, LivePlot]:
        return dict(self._plots)

    def plot_for(self, name: str, xlabel: str, log_x: bool = False) -> LivePlot:
        p = self._plots.get(name)
        if p is None:
            p = next((q for q in self._pool if q.metric is None), None) or self._new_plot()
            p.metric = name
            # the new title and axes, and the plot coming on screen, wait for its own redraw
            # tick (_redraw_next)
            p.restart(describe_metric(name), xlabel, log_x, name in LOG_Y)
            self._plots[name] = p
        elif p.x_label != xlabel:
            p.relabel_x(xlabel)
        self._schedule()
        return p

    def append(self, name: str, xlabel: str, x: float, y: float, log_x: bool = False) -> None:
        self.plot_for(name, xlabel, log_x).append(name, x, y)

    def set_curve(self, name: str, xlabel: str, x, y, log_x: bool = False) -> None:
        self.plot_for(name, xlabel, log_x).set_curve(name, x, y)

    def clear(self) -> None:
        """Forget the curves: the next run starts with fresh axes and ranges (the drawings are
        cleared one plot per tick). The previous run's plots leave the screen now, each keeping
        its cell: a plot appears again, at its redraw tick, when the new run first reports its
        quantity."""
        self._release = False
        for p in self._pool:
            p.restart()
            p.metric = None
            self._keep_cell(p, True)
            if not p.isHidden():
                p.setVisible(False)
        self._plots.clear()
        self._stop_arrivals()
        self._hint.setText("Waiting for the first progress report of this run…")
        self._hint.show()
        self._schedule()

    def finish(self) -> None:
        """The run has ended: the short curves of its plots get their dots, and the cells of
        the plots it did not use go (now when the board is off screen, else when it leaves the
        screen: the plots left are laid out and painted again, all in one turn)."""
        for p in self._pool:
            if p.metric is not None:
                p.settle()
        self._release = True
        if not self.isVisible():
            self._release_cells()
        self._schedule()
        if not self._plots:
            self._hint.setText("This run reported no curves.")
            self._hint.setVisible(True)

    def _release_cells(self) -> None:
        self._release = False
        for p in self._pool:
            if p.metric is None:
                self._keep_cell(p, False)

    def hideEvent(self, event) -> None:
        if self._release:
            self._release_cells()
        super().hideEvent(event)

    @staticmethod
    def _keep_cell(plot: LivePlot, keep: bool) -> None:
        """Whether the grid keeps ``plot``'s cell while the plot is hidden."""
        policy = plot.sizePolicy()
        if policy.retainSizeWhenHidden() != keep:
            policy.setRetainSizeWhenHidden(keep)
            plot.setSizePolicy(policy)

    def request_redraw(self) -> None:
        """Draw every plot again, one per tick (not now: the caller's turn stays short)."""
        for p in self._plots.values():
            p.request_redraw()
        self._schedule()

    def flush(self) -> None:
        """Draw every pending change now, the plots in use on screen (exports and tests)."""
        self._stop_arrivals()
        for p in self._pool:
            p.flush()
            if p.metric is not None and p.isHidden():
                self._show_plot(p)

    def _stop_arrivals(self) -> None:
        self._arrivals.clear()
        self._arriving.clear()
        for p in self._pool:
            if not p.updatesEnabled():
                p.setUpdatesEnabled(True)

    def _show_plot(self, p: LivePlot) -> None:
        # in its kept cell: no other plot moves
        p.setVisible(True)
        self._hint.hide()

    def _arrive(self, p: LivePlot):
        """Bring ``p`` on screen with its first paint prepared, a step up to each ``yield``:
        shown without painting (it takes its cell's geometry), its layout and axes built off
        screen (gui.widgets.prepaint), then painted."""
        p.setUpdatesEnabled(False)
        self._show_plot(p)
        yield                       # the grid gives it its cell
        yield from prepare_view(p)
        self._arriving.discard(id(p))
        p.setUpdatesEnabled(True)

    def _schedule(self) -> None:
        if not self._redraws.isActive():
            self._redraws.start()

    def _redraw_due(self) -> None:
        if not self._redraw_step.busy:
            self._redraw_step.add(self._redraw_next)

    def _redraw_next(self) -> None:
        """Redraw the next plot with pending changes after the last one redrawn; stop the timer
        when none waits."""
        plots = self._pool
        for k in range(len(plots)):
            i = (self._turn + k) % len(plots)
            p = plots[i]
            if p.dirty:
                p.redraw()
                if p.metric is not None and p.isHidden() and id(p) not in self._arriving \
                        and not p.dirty:
                    # its title, axes and curve are in (a new run's first redraw of a plot
                    # applies the title and axes alone): it comes on screen, its first paint
                    # prepared
                    self._arriving.add(id(p))
                    self._arrivals.add(self._arrive, p)
                self._turn = i + 1
                return
        self._redraws.stop()

    def first_plot(self) -> LivePlot | None:
        return next(iter(self._plots.values()), None)
