"""The training panel: Train and Cancel, progress with elapsed and remaining time, live curves.

Progress events (plain dicts from gui.worker) move the bar and feed the live curves
(gui.widgets.curve_board: one plot per quantity) against iterations, the number of features of a
greedy path, lambda along a regularisation path or the candidates of a search. An event only
stores its figures: a clock shows the latest on the bar and the phase line, with the elapsed
and remaining time, every ``SHOW_MS``, and the curves are redrawn on the board's timer, so a
fit reporting fast costs the GUI thread no more than one that reports a few times a second.
The panel never touches an estimator. """

from __future__ import annotations

import math
import time

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import (QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout,
                               QWidget)

from ..widgets.curve_board import CurveBoard
from ..widgets.phase_line import PhaseLine

__all__ = ["TrainingPanel", "format_seconds", "split_metrics", "curve_x", "SHOW_MS"]

#: the bar, the phase line and the time show the latest progress event every SHOW_MS (a clock):
#: a new text costs the window a paint, and a fit may report dozens of times a second
SHOW_MS = 250

#: metric keys used as the x axis of a path rather than plotted
_X_KEYS = {"n_features": "number of features", "lam": "lambda"}
#: x-axis label of a stage whose events count something other than iterations
_STAGE_X = {"search": "candidates evaluated", "greedy path": "number of features",
            "lasso": "lambda values solved", "sfgd": "centres added (iterations)",
            "osd": "centres added (iterations)", "prune": "pruning step"}
_SKIP = {"it", "iteration", "done"}
#: the stage of the k-fold loop's own events (gui.logic.plans.KFold): done = folds scored
FOLD_STAGE = "cross-validation"


def format_seconds(s: float, coarse: bool = False) -> str:
    """``s`` seconds for a person; ``coarse``: whole seconds from 10 s on (a running clock's
    text then changes once a second, not at each of the panel's ticks: each change repaints
    it)."""
    if not math.isfinite(s) or s < 0:
        return "–"
    if s < 60:
        return f"{s:.0f} s" if coarse and s >= 10 else f"{s:.1f} s"
    m, sec = divmod(int(round(s)), 60)
    if m < 60:
        return f"{m} min {sec:02d} s"
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min"


def curve_x(ev: dict) -> tuple[str, float, bool]:
    """(x-axis label, x value, log scale) of a progress event's point on the live curves."""
    metrics = ev.get("metrics", {})
    xkey = next((k for k in _X_KEYS if k in metrics), None)
    if xkey:
        return _X_KEYS[xkey], float(metrics[xkey]), xkey == "lam"
    stage = ev.get("stage") or "iteration"
    return _STAGE_X.get(stage, stage), float(ev.get("done", 0)), False


def split_metrics(metrics: dict) -> tuple[dict, dict]:
    """(loss-like, error-like) metrics of a progress event."""
    loss, err = {}, {}
    for k, v in metrics.items():
        if k in _X_KEYS or k in _SKIP:
            continue
        low = k.lower()
        (err if ("error" in low or "acc" in low or "score" in low or "auc" in low)
         else loss)[k] = v
    return loss, err


class TrainingPanel(QWidget):
    """The control bar (this widget) and the live curves (``curves``, shown elsewhere)."""

    train_requested = Signal()
    cancel_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.train_button = QPushButton("Train")
        self.train_button.setObjectName("trainButton")
        self.train_button.setToolTip("Train the chosen method on the training rows (Ctrl+R)")
        self.train_button.setMinimumWidth(110)
        self.train_button.setStyleSheet(
            "QPushButton#trainButton { font-weight: bold; padding: 5px 14px; }")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop the fit at its next progress report (Esc); "
                                      "iterative solvers keep their last iterate")
        self.cancel_button.setEnabled(False)
        # wide enough for "Cancelling…": the new text then lays nothing out again (a button
        # whose size is not fixed asks the window's layouts to run when its text changes)
        self.cancel_button.setFixedSize(
            max(self.cancel_button.sizeHint().width(),
                self.cancel_button.fontMetrics().horizontalAdvance("Cancelling…") + 24),
            self.cancel_button.sizeHint().height())
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setValue(0)
        self.progress.setTextVisible(True)
        self.progress.setFormat("idle")
        # the phase line's width follows the window, never its text: a new text repaints the
        # line and lays nothing out again (gui.widgets.phase_line)
        self.stage_label = PhaseLine("")
        self.time_label = QLabel("")
        # a fixed size: the clock's new text every SHOW_MS repaints the label without laying
        # out the bar's row again
        self.time_label.setFixedSize(
            self.time_label.fontMetrics().horizontalAdvance(
                "elapsed 59 min 59 s · about 59 min 59 s left in this stage") + 8,
            self.time_label.fontMetrics().height() + 4)

        bar = QHBoxLayout()
        bar.addWidget(self.train_button)
        bar.addWidget(self.cancel_button)
        bar.addWidget(self.progress, 1)
        bar.addWidget(self.time_label)

        #: the live curves, placed by the main window in its own tab
        self.board = CurveBoard()
        self.curves = self.board

        # opaque: a label or the bar repainted repaints the panel's background under it, not
        # the window's, the splitter's and their containers' (five paints more at each tick)
        self.setAutoFillBackground(True)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 0)
        lay.addLayout(bar)
        lay.addWidget(self.stage_label)

        self._t0 = None
        self._waiting = False
        self._cancel_t0 = None
        self._stage_t0 = None
        self._fraction = 0.0
        self._stage = ""
        self._part = ""
        self._clock = QTimer(self)
        self._clock.setInterval(SHOW_MS)
        self._clock.timeout.connect(self._tick)
        # the latest event's bar value, bar text and phase line, shown by the clock's _show
        self._bar_value, self._bar_text, self._phase_text = 0, "idle", ""
        self.train_button.clicked.connect(self.train_requested)
        self.cancel_button.clicked.connect(self.cancel_requested)

    # -- state ---------------------------------------------------------------------------------
    def set_ready(self, ready: bool, why: str = "") -> None:
        self.train_button.setEnabled(ready and self._t0 is None)
        self.train_button.setToolTip("Train the chosen method on the training rows (Ctrl+R)"
                                     if ready else why)

    def started(self, title: str, warming_up: bool = False, clear_curves: bool = True) -> None:
        """A job was submitted (a fit, or with ``clear_curves=False`` the bounds of a run or the
        predictions on a file). While the background warm-up of the kernels still runs
        (``warming_up``) the clock waits for the job's first progress event, and
        :meth:`warm_up_done` ends the wait."""
        self._t0 = time.perf_counter()
        self._waiting = bool(warming_up)
        self._cancel_t0 = None
        self._stage_t0 = self._t0
        self._fraction = 0.0
        self._stage = ""
        self._part = ""
        if clear_curves:
            self.board.clear()
        self.train_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.cancel_button.setText("Cancel")
        self._set_texts(0, "starting…", title)
        self._clock.start()
        self._tick()

    def warm_up_done(self) -> None:
        """The background warm-up ended: a job waiting behind it starts its clock now."""
        if self._t0 is not None and self._waiting:
            self._waiting = False
            self._t0 = self._stage_t0 = time.perf_counter()
            self._tick()

    def stopped(self, text: str) -> None:
        self._clock.stop()
        elapsed = time.perf_counter() - self._t0 if self._t0 is not None else float("nan")
        self._t0 = None
        self._cancel_t0 = None
        self.cancel_button.setEnabled(False)
        self.cancel_button.setText("Cancel")
        self.train_button.setEnabled(True)
        # the phase line names what is running: nothing is once the run has stopped
        self._set_texts(1000 if text.startswith("done") else self._bar_value, text, "")
        self.time_label.setText(f"took {format_seconds(elapsed)}")
        # the timers draw the last points: a finished run then costs no synchronous redraw
        self.board.request_redraw()
        self.board.finish()

    def mark_cancelling(self) -> None:
        """Show that a cancel was asked for (by the button, Esc or the menu): the bar and the
        time label say so until the job ends (within a slice of work, under a second)."""
        self.cancel_button.setEnabled(False)
        self.cancel_button.setText("Cancelling…")
        self._cancel_t0 = time.perf_counter()
        what = f" {self._stage}" if self._stage else ""
        where = f" ({self._part})" if self._part else ""
        self._set_texts(self._bar_value, f"cancelling: stopping{what}{where} at its next slice "
                        f"of work…", self._phase_text)
        self._tick()

    @property
    def cancelling(self) -> bool:
        return self._t0 is not None and self._cancel_t0 is not None

    @property
    def running(self) -> bool:
        return self._t0 is not None

    @property
    def bar_text(self) -> str:
        """The bar's text as of the latest event (shown within SHOW_MS)."""
        return self._bar_text

    @property
    def phase_text(self) -> str:
        """The phase line as of the latest event (shown within SHOW_MS)."""
        return self._phase_text

    def _set_texts(self, value: int, bar: str, phase: str) -> None:
        """Show the bar and the phase line now (a change of state: started, stopped, Cancel)."""
        self._bar_value, self._bar_text, self._phase_text = value, bar, phase
        self._show()

    def _show(self) -> None:
        if self.progress.value() != self._bar_value:
            # QProgressBar.setValue repaints the bar at once (QWidget.repaint); held, its paint
            # joins the window's next one with the labels changed in the same tick
            self.progress.setUpdatesEnabled(False)
            self.progress.setValue(self._bar_value)
            self.progress.setUpdatesEnabled(True)
        if self.progress.format() != self._bar_text:
            self.progress.setFormat(self._bar_text)
        if self.stage_label.text() != self._phase_text:
            self.stage_label.setText(self._phase_text)

    # -- events ----------------------------------------------------------------------------------
    def on_progress(self, ev: dict) -> None:
        if self._t0 is None or self._cancel_t0 is not None:
            return
        if self._waiting:
            self._waiting = False
            self._t0 = time.perf_counter() - float(ev.get("elapsed", 0.0))
        stage = ev.get("stage", "")
        if stage != self._stage or ev.get("kind") == "start":
            self._stage = stage
            self._stage_t0 = time.perf_counter()
        total, done = ev.get("total", 0), ev.get("done", 0)
        if stage == FOLD_STAGE and total > 0:
            # k-fold evaluation (gui.logic.plans.KFold): the fold now running, or the final
            # fit after the last one, prefixes every stage of the fits inside it
            self._part = (f"fold {done + 1} of {total}" if done < total
                          else "final fit on every training row")
        prefix = f"{self._part} · " if self._part and stage != FOLD_STAGE else ""
        if stage == FOLD_STAGE and total > 0:
            self._fraction = min(1.0, done / total)
            self._bar_text = f"{self._part}: {done} of {total} folds scored  (%p%)"
        elif total > 0:
            self._fraction = min(1.0, done / total)
            self._bar_text = f"{prefix}{stage}: {done} / {total}  (%p%)"
        else:
            self._fraction = 0.0
            self._bar_text = f"{prefix}{stage}…"
        if total > 0:
            self._bar_value = int(1000 * self._fraction)
        metrics = ev.get("metrics", {})
        xlabel, x, log_x = curve_x(ev)
        for k, v in metrics.items():
            if k not in _X_KEYS and k not in _SKIP:
                self.board.append(k, xlabel, x, v, log_x)
        if metrics:
            shown = ", ".join(f"{k} {v:.4g}" for k, v in list(metrics.items())[:4])
            self._phase_text = f"{prefix}{stage}: {shown}"
        else:
            self._phase_text = f"{prefix}{stage}"
        # shown at the clock's next tick

    def show_model_curves(self, mc: dict) -> None:
        """Replace the live curves of the quantities the fitted model recorded by its complete
        ones (the others stay as they were drawn live)."""
        curves = mc.get("curves") or {}
        if not curves:
            return
        for k, (x, y) in curves.items():
            self.board.set_curve(k, mc.get("x_label", "iteration"), x, y, bool(mc.get("log_x")))
        # the timers draw the last points: a finished run then costs no synchronous redraw
        self.board.request_redraw()
        self.board.finish()

    def _tick(self) -> None:
        if self._t0 is None:
            return
        self._show()
        if self._waiting:
            self.time_label.setText("waiting for the kernel warm-up…")
            return
        now = time.perf_counter()
        elapsed = now - self._t0
        text = f"elapsed {format_seconds(elapsed, coarse=True)}"
        if self._cancel_t0 is not None:
            text += f" · cancelling for {format_seconds(now - self._cancel_t0)}"
        else:
            f = self._fraction
            if 0.02 < f < 1.0 and self._stage_t0 is not None:
                left = (now - self._stage_t0) * (1.0 - f) / f
                text += f" · about {format_seconds(left, coarse=True)} left in this stage"
        if text != self.time_label.text():
            self.time_label.setText(text)
