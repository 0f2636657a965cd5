"""The Importance tab: the model's own importance and the permutation importance of any model.

Two bar plots, one above the other: the exact share a stump model or BKerNN holds per input (when the
model has one), and the permutation importance measured on the run's held-out rows (mean drop
of the score over the shuffles, with a bar of one standard deviation), which any model gets on
*Compute*. The controls above them start the measurement, show its progress, cancel it and save
the numbers as CSV; the measuring itself is the main window's (on the worker thread).

This widget draws and emits requests; it must not predict or write files.
"""

from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout,
                               QWidget)

from .plots import PALETTE, ResultPlot

__all__ = ["ImportanceView", "MAX_BARS"]

#: bars drawn per plot (the most important columns; the CSV has them all)
MAX_BARS = 40


def _short(s: str, n: int = 14) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def _bars(plot: ResultPlot, names, values, err=None) -> None:
    """Bars of ``values`` (in the given order, at most MAX_BARS), labelled by ``names``."""
    v = np.asarray(values, float)[:MAX_BARS]
    x = np.arange(len(v))
    plot.addItem(pg.BarGraphItem(x=x, height=v, width=0.7, brush=pg.mkBrush(PALETTE[0])))
    if err is not None:
        e = np.asarray(err, float)[:MAX_BARS]
        plot.addItem(pg.ErrorBarItem(x=x, y=v, height=2 * e, beam=0.2, pen=pg.mkPen("#333")))
    plot.getAxis("bottom").setTicks([[(i, _short(str(names[i]))) for i in range(len(v))]])
    plot.setXRange(-0.6, max(len(v), 1) - 0.4)
    top = float(np.max(v + (0 if err is None else np.asarray(err, float)[:MAX_BARS]),
                       initial=0.0))
    low = float(np.min(v, initial=0.0))
    plot.setYRange(min(low * 1.08, 0.0), max(top * 1.08, 1e-12))


class ImportanceView(QWidget):
    """Model's own share (``share_plot``) and permutation importance (``perm_plot``)."""

    compute_requested = Signal()
    cancel_requested = Signal()
    save_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.share_plot = ResultPlot("Variable importance", "", "share")
        self.perm_plot = ResultPlot("Permutation importance", "", "")
        self.compute_button = QPushButton("Compute permutation importance")
        self.compute_button.setToolTip(
            "Shuffle each input column of the held-out rows in turn (5 times, seed 0) and "
            "measure how much the model's score drops: what its predictions depend on")
        self.cancel_button = QPushButton("Cancel")
        self.save_button = QPushButton("Save as CSV…")
        self.bar = QProgressBar()
        self.bar.setRange(0, 1)
        self.bar.setTextVisible(True)
        self.info = QLabel("")
        self.info.setWordWrap(True)
        self.info.setTextFormat(Qt.RichText)        # measures and errors escaped
        row = QHBoxLayout()
        row.addWidget(self.compute_button)
        row.addWidget(self.bar, 1)
        row.addWidget(self.cancel_button)
        row.addWidget(self.save_button)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addLayout(row)
        lay.addWidget(self.info)
        # one above the other, each as wide as the tab: side by side, the bars of ten columns
        # and their names did not fit a 1280-pixel window
        lay.addWidget(self.perm_plot, 1)
        lay.addWidget(self.share_plot, 1)
        self.compute_button.clicked.connect(self.compute_requested)
        self.cancel_button.clicked.connect(self.cancel_requested)
        self.save_button.clicked.connect(self.save_requested)
        self.running = False
        self._idle(False, False)

    # -- state -----------------------------------------------------------------------------------
    def _idle(self, can_compute: bool, has_result: bool) -> None:
        self.running = False
        self.compute_button.setEnabled(can_compute)
        self.cancel_button.setVisible(False)
        self.bar.setVisible(False)
        self.save_button.setEnabled(has_result)

    def started(self, what: str) -> None:
        self.running = True
        self.compute_button.setEnabled(False)
        self.save_button.setEnabled(False)
        self.cancel_button.setVisible(True)
        self.cancel_button.setEnabled(True)
        self.bar.setVisible(True)
        self.bar.setRange(0, 0)         # busy until the first event gives the total
        self.info.setText(f"Measuring the permutation importance on {html.escape(what)}…")

    def on_progress(self, ev: dict) -> None:
        total, done = int(ev.get("total", 0)), int(ev.get("done", 0))
        if total > 0:
            self.bar.setRange(0, total)
            self.bar.setValue(min(done, total))
            self.bar.setFormat(f"{done} of {total} shuffled scores")

    def cancelling(self) -> None:
        self.cancel_button.setEnabled(False)
        self.info.setText("Cancelling the permutation importance…")

    def stopped(self, message: str, can_compute: bool, has_result: bool) -> None:
        self._idle(can_compute, has_result)
        self.info.setText(html.escape(message))

    # -- drawing ---------------------------------------------------------------------------------
    def show_run(self, res: dict, can_compute: bool, why_not: str = "") -> None:
        """Draw what the run ``res`` holds: its share and its permutation importance, or say
        how to get the latter."""
        self.show_share(res)
        self.show_permutation(res, can_compute, why_not)

    def show_share(self, res: dict) -> None:
        """Draw the model's own share of the run ``res`` (hidden when it has none)."""
        share = res.get("importance")
        self.share_plot.setVisible(share is not None)
        if share is not None:
            v = np.asarray(share, float)
            names = res.get("feature_names", [])
            order = np.argsort(-v, kind="stable")
            self.share_plot.reset("Model's own importance", "", "share")
            self.share_plot.setToolTip(res.get("importance_label", ""))
            _bars(self.share_plot, [names[j] if j < len(names) else str(j) for j in order],
                  v[order])

    def show_permutation(self, res: dict, can_compute: bool, why_not: str = "") -> None:
        """Draw the permutation importance of the run ``res``, or say how to get it."""
        share = res.get("importance")
        imp = res.get("permutation")
        if not self.running:
            self._idle(can_compute, imp is not None)
        if imp is None:
            self.perm_plot.message("Compute the permutation importance to see which columns "
                                   "the predictions depend on" if can_compute else why_not)
            if not self.running:
                self.info.setText("" if can_compute else html.escape(why_not))
            return
        self.perm_plot.reset(f"Permutation importance ({imp['n_rows']:,} {imp['on']} rows)",
                             "", imp["measures"])
        _bars(self.perm_plot, imp["columns"], imp["mean"], imp["std"])
        if not self.running:
            own = (f" Below, the model's own importance: "
                   f"{html.escape(res.get('importance_label', ''))}." if share is not None
                   else "")
            self.info.setText(
                f"Each column shuffled {imp['n_repeats']} times (seed {imp['seed']}); bars: "
                f"the mean {html.escape(imp['measures'])} over the shuffles, ± one standard "
                f"deviation; the score on the rows as given is {imp['baseline']:.4g}.{own}")

    def current_plot(self) -> ResultPlot:
        """The plot an export takes: the permutation importance once measured, else the share."""
        return self.share_plot if self.share_plot.isVisible() and not self.save_button.isEnabled() \
            else self.perm_plot
