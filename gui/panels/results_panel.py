"""The results panel: metrics, diagnostic plots and the pruning control of the selected run.

It draws what gui.logic.evaluate computed on the worker thread: the metrics table, the confusion
matrix and ROC curve (classification), predicted-versus-actual and residuals (regression), the
decision regions when the model reads two features, the coefficient magnitudes, the importance
tab (the share stump models and BKerNN hold, and the permutation importance of any model,
measured on request: gui.widgets.importance) and the pruning control (models with ``prune``): an epsilon
slider whose preview shows the pruned model's size and error before it is kept.

This widget draws; it must not fit or predict (pruning is asked of the main window).
"""

from __future__ import annotations

import html
import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QFormLayout, QGroupBox, QHBoxLayout,
                               QHeaderView, QLabel, QPushButton, QSlider, QTableWidget,
                               QTableWidgetItem, QTabWidget, QVBoxLayout, QWidget)

from rwtool.report import metric_meaning

from ..logic.evaluate import Z90
from ..logic.formats import format_metric
from ..logic.terms import app_words
from ..widgets.importance import ImportanceView
from ..widgets.plots import PALETTE, CellTexts, ResultPlot, pen, scatter, thin_points
from ..widgets.prepaint import prepare_page, settle_layouts
from ..widgets.steps import Steps

__all__ = ["ResultsPanel"]


class _MetricsView(QWidget):
    def __init__(self):
        super().__init__()
        self.title = QLabel("Train a model to see its metrics.")
        self.title.setWordWrap(True)
        self.title.setTextFormat(Qt.RichText)       # the run's name escaped, in bold
        # the third column says what a number means (rwtool.report's metric and bound
        # meanings, the lines `rwtool train` prints beside the same numbers)
        self.table = QTableWidget(0, 3)
        self.table.setHorizontalHeaderLabels(["Metric", "Value", "Meaning"])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.setWordWrap(False)
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeToContents)
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeToContents)
        self.table.horizontalHeader().setSectionResizeMode(2, QHeaderView.Stretch)
        self.notes = QLabel("")
        # always rich text (escaped notes): left to guess, a note without a tag is shown as
        # plain text, its escapes as written ("fit&#x27;s")
        self.notes.setTextFormat(Qt.RichText)
        self.notes.setWordWrap(True)
        self.notes.setTextInteractionFlags(Qt.TextSelectableByMouse)
        # the bounds take two passes over the training rows, often longer than the fit: they
        # are computed when asked for, with progress and Cancel
        self.bounds_button = QPushButton("Compute the bounds")
        self.bounds_button.setToolTip("θ, κ, τ, the norms and the generalisation bounds of the "
                                      "model on its training rows (two passes over the rows, "
                                      "with progress; Esc cancels)")
        self.bounds_button.setVisible(False)
        self.class_label = QLabel("")
        self.class_table = QTableWidget(0, 5)
        self.class_table.setHorizontalHeaderLabels(["Class", "Precision", "Recall", "F1",
                                                    "Support"])
        self.class_table.verticalHeader().setVisible(False)
        self.class_table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.class_table.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)
        lay = QVBoxLayout(self)
        lay.addWidget(self.title)
        lay.addWidget(self.table, 3)
        lay.addWidget(self.class_label)
        lay.addWidget(self.class_table, 2)
        lay.addWidget(self.notes)
        lay.addWidget(self.bounds_button, 0, Qt.AlignLeft)

    def show_classes(self, rep: dict | None) -> None:
        """Per-class precision, recall, F1 and support (classification), or nothing."""
        on = bool(rep)
        self.class_label.setVisible(on)
        self.class_table.setVisible(on)
        if not on:
            return
        self.class_label.setText(f"Per class, on the {rep.get('on', 'test')} rows:")
        n = len(rep["classes"])
        self.class_table.setRowCount(n)
        # as tall as its rows (up to 8), so that the metrics above keep the room
        h = self.class_table.horizontalHeader().height() + 4 + \
            min(n, 8) * self.class_table.verticalHeader().defaultSectionSize()
        self.class_table.setMaximumHeight(h)
        for i in range(n):
            cells = (rep["classes"][i], format_metric(float(rep["precision"][i])),
                     format_metric(float(rep["recall"][i])), format_metric(float(rep["f1"][i])),
                     str(int(rep["support"][i])))
            for j, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if j:
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                self.class_table.setItem(i, j, item)

    def show(self, title: str, metrics: dict, notes: list[str],
             meanings: dict | None = None) -> None:
        self.title.setText(title)
        self.table.setRowCount(len(metrics))
        for i, (k, v) in enumerate(metrics.items()):
            self.table.setItem(i, 0, QTableWidgetItem(k))
            item = QTableWidgetItem(format_metric(v))
            item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
            self.table.setItem(i, 1, item)
            meaning = (meanings or {}).get(k) or metric_meaning(k)
            about = QTableWidgetItem(meaning)
            about.setToolTip(meaning)
            self.table.setItem(i, 2, about)
        self.notes.setText("<br>".join(notes))


class _PruneView(QWidget):
    """epsilon slider (log scale), ACCEPT rule, preview and keep."""

    preview_requested = Signal(object)
    keep_requested = Signal()

    EPS_LO, EPS_HI, STEPS = -4.0, 0.0, 80

    def __init__(self):
        super().__init__()
        self.info = QLabel("")
        self.info.setWordWrap(True)
        self.slider = QSlider(Qt.Horizontal)
        self.slider.setRange(0, self.STEPS)
        self.slider.setValue(self.STEPS // 2)
        self.eps_label = QLabel()
        self.accept_combo = QComboBox()
        for key, text in (("error", "error: 0-1 training error rises by < ε (000 eq. 66)"),
                          ("loss", "loss: training loss rises by < ε (000 eq. 65)"),
                          ("bound", "bound: ρθ‖α − β‖_H < ε (000 eq. 63)"),
                          ("probabilistic", "probabilistic: Theorem 8 (000 eq. 64)")):
            self.accept_combo.addItem(text, key)
        self.preview_button = QPushButton("Preview pruned model")
        self.keep_button = QPushButton("Keep pruned model as a new run")
        self.keep_button.setEnabled(False)
        self.result = QLabel("")
        self.result.setWordWrap(True)
        self.result.setTextFormat(Qt.RichText)      # figures in bold, an error escaped
        form = QFormLayout()
        row = QHBoxLayout()
        row.addWidget(self.slider, 1)
        row.addWidget(self.eps_label)
        form.addRow("ε", row)
        form.addRow("Accept rule", self.accept_combo)
        buttons = QHBoxLayout()
        buttons.addWidget(self.preview_button)
        buttons.addWidget(self.keep_button)
        buttons.addStretch(1)
        box = QGroupBox("Pruning with the Lasso (seed 000, Section 6, Algorithm 5)")
        v = QVBoxLayout(box)
        v.addLayout(form)
        v.addLayout(buttons)
        v.addWidget(self.result)
        lay = QVBoxLayout(self)
        lay.addWidget(self.info)
        lay.addWidget(box)
        lay.addStretch(1)
        self.slider.valueChanged.connect(self._eps_changed)
        self.accept_combo.currentIndexChanged.connect(self._eps_changed)
        self.preview_button.clicked.connect(
            lambda: self.preview_requested.emit({"eps": self.eps(),
                                                 "accept": self.accept_combo.currentData()}))
        self.keep_button.clicked.connect(self.keep_requested)
        self._eps_changed()

    def eps(self) -> float:
        t = self.slider.value() / self.STEPS
        return float(10 ** (self.EPS_LO + t * (self.EPS_HI - self.EPS_LO)))

    def _eps_changed(self, *args) -> None:
        self.eps_label.setText(f"{self.eps():.2e}")
        self.keep_button.setEnabled(False)

    def set_available(self, ok: bool, why: str, classification: bool = True) -> None:
        for w in (self.slider, self.accept_combo, self.preview_button):
            w.setEnabled(ok)
        # The 0-1 error criterion needs classes; regression models start on the loss rule.
        item = self.accept_combo.model().item(self.accept_combo.findData("error"))
        item.setEnabled(classification)
        if not classification and self.accept_combo.currentData() == "error":
            self.accept_combo.setCurrentIndex(self.accept_combo.findData("loss"))
        self.keep_button.setEnabled(False)
        self.info.setText(why)
        self.result.setText("")


class ResultsPanel(QTabWidget):
    prune_requested = Signal(object)
    keep_pruned_requested = Signal()
    importance_requested = Signal()
    importance_cancel_requested = Signal()
    importance_save_requested = Signal()
    bounds_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.metrics_view = _MetricsView()
        self.confusion_plot = ResultPlot("Confusion matrix", "predicted", "actual")
        self.roc_plot = ResultPlot("ROC curve", "false positive rate", "true positive rate")
        # the points lie along y = x: the top-left corner is where the legend hides none
        self.pva_plot = ResultPlot("Predicted vs actual", "actual", "predicted",
                                   legend_offset=(10, 10))
        self.residual_plot = ResultPlot("Residuals", "predicted", "actual − predicted")
        self.curve_plot = ResultPlot("Fitted curve", "", "")
        self.region_plot = ResultPlot("Decision regions", "", "")
        self.coef_plot = ResultPlot("Coefficient magnitudes", "feature (sorted)", "")
        self.importance_view = ImportanceView()
        self.importance_plot = self.importance_view.share_plot
        self.prune_view = _PruneView()
        self.addTab(self.metrics_view, "Metrics")
        self.addTab(self.confusion_plot, "Confusion matrix")
        self.addTab(self.roc_plot, "ROC")
        self.addTab(self.pva_plot, "Predicted vs actual")
        self.addTab(self.residual_plot, "Residuals")
        self.addTab(self.curve_plot, "Fitted curve")
        self.addTab(self.region_plot, "Decision regions")
        self.addTab(self.coef_plot, "Coefficients")
        self.addTab(self.importance_view, "Importance")
        self.addTab(self.prune_view, "Pruning")
        self.result: dict | None = None
        self._steps = Steps(self)           # the plots of the shown run, one per step
        # then the first paint of the tabs not on screen, prepared a step at a time; never
        # run at once (flush): a tab shown before its turn paints as it would have
        self._prepare = Steps(self)
        self._unprepared = False            # drawn tabs wait for their preparation
        # a resize prepares the tabs again once the resizing has stopped (each event of a
        # dragged splitter or window restarted the preparation, thrown away at the next)
        self._resized = QTimer(self)
        self._resized.setSingleShot(True)
        self._resized.setInterval(200)
        self._resized.timeout.connect(self._prepare_after_resize)
        self.prune_view.preview_requested.connect(self.prune_requested)
        self.prune_view.keep_requested.connect(self.keep_pruned_requested)
        self.importance_view.compute_requested.connect(self.importance_requested)
        self.importance_view.cancel_requested.connect(self.importance_cancel_requested)
        self.importance_view.save_requested.connect(self.importance_save_requested)
        #: whether the shown run's permutation importance can be measured, or why not
        self.importance_available: tuple[bool, str] = (False, "")
        self.metrics_view.bounds_button.clicked.connect(self.bounds_requested)
        # a tab shown is laid out before its first paint (gui.widgets.prepaint)
        self.currentChanged.connect(lambda _: settle_layouts())
        # Every tab the panel can show, in order; only the current run's are in the tab bar.
        self._all_tabs = [(self.widget(i), self.tabText(i)) for i in range(self.count())]
        self._set_tabs({self.metrics_view})

    # -- helpers ---------------------------------------------------------------------------------
    def current_plot(self) -> ResultPlot | None:
        w = self.currentWidget()
        if isinstance(w, ImportanceView):
            return w.current_plot()
        return w if isinstance(w, ResultPlot) else None

    def plots(self) -> dict[str, ResultPlot]:
        return {self.tabText(i): (w.current_plot() if isinstance(w, ImportanceView) else w)
                for i in range(self.count())
                if isinstance(w := self.widget(i), (ResultPlot, ImportanceView))}

    def shows(self, widget) -> bool:
        """True when ``widget``'s tab is in the tab bar for the current run."""
        return self.indexOf(widget) >= 0

    def _set_tabs(self, visible) -> None:
        """Put exactly the ``visible`` widgets in the tab bar, keeping the current one.

        Tabs are removed and re-added rather than hidden: QTabBar keeps the scroll offset of
        hidden tabs, which left a blank gap and unreachable tabs when a classification run and
        a regression run (different tab sets) were shown one after the other.
        """
        current = self.currentWidget()
        self.blockSignals(True)
        try:
            while self.count():
                self.removeTab(0)
            for w, text in self._all_tabs:
                if w in visible:
                    self.addTab(w, text)
            self.setCurrentIndex(max(0, self.indexOf(current)))
        finally:
            self.blockSignals(False)

    # -- drawing ---------------------------------------------------------------------------------
    def show_result(self, res: dict, title: str = "") -> None:
        """Show a run: metrics at once, then one plot per step (gui.widgets.steps).

        Drawing every plot of a run in one handler took over 100 ms; one by one, each in its
        own turn with the GUI thread asleep between two (a plot costs 4-13 ms of CPU), the
        window keeps answering between them (docs/bench/gui.md, docs/bench/gui_load.md). The
        draws are generators: a plot's title, each curve with its legend entry and each
        scatter are a step each (rich text laid out, 3-7 ms each under X), so that no step
        costs more than one of them.
        """
        self.result = res
        self._steps.clear()
        notes = []          # a cancelled run's own note says so (logic.jobs._partial)
        for w in res.get("warnings", []):
            notes.append(f"<span style='color:#8a5a00'>warning: {html.escape(w)}</span>")
        notes += [html.escape(app_words(n)) for n in res.get("notes", [])]
        self.metrics_view.show(title, res.get("metrics", {}), notes, res.get("meanings"))
        self.metrics_view.show_classes(res.get("per_class"))
        self.metrics_view.bounds_button.setVisible(bool(res.get("has_bounds"))
                                                   and not res.get("bounds_computed"))
        cls_task = res.get("task") != "regression"
        # what to draw, in tab order; a model opened from a file has no rows to draw from
        has_rows = res.get("y_train") is not None and res.get("pred_train") is not None
        plan = [(self.confusion_plot, cls_task and "confusion" in res, self._draw_confusion),
                (self.roc_plot, "roc" in res, lambda r: self._draw_roc(r["roc"])),
                (self.pva_plot, not cls_task and has_rows, self._draw_regression),
                (self.residual_plot, not cls_task and has_rows,
                 lambda r: self._draw_regression(r, residuals=True)),
                (self.curve_plot, "curve" in res, self._draw_curve),
                (self.region_plot, "grid" in res, self._draw_regions),
                (self.coef_plot, "coef_magnitudes" in res, self._draw_coefs),
                (self.importance_view, "importance" in res or "permutation" in res
                 or self.importance_available[0], self._draw_importance)]
        est = res.get("estimator")
        can_prune = est is not None and callable(getattr(est, "prune", None))
        self._set_tabs({self.metrics_view, *(w for w, on, _ in plan if on)}
                       | ({self.prune_view} if can_prune else set()))
        self.prune_view.set_available(
            can_prune,
            "Remove features whose coefficients the model can do without: preview the pruned "
            "model, then keep it as a new run." if can_prune else
            f"{type(est).__name__ if est is not None else 'This model'} has no prune() in "
            f"this rwtool: pruning applies to the RKHS weightings and kitchen sinks.",
            cls_task)
        self._prepare.clear()
        for _, on, draw in plan:
            if on and draw is not None:
                self._steps.add(draw, res)
        self._steps.add(self._prepare_tabs)

    def draw_permutation(self, res: dict, can_compute: bool, why_not: str = "") -> None:
        """Draw the shown run's permutation importance (just measured) in a step of the
        panel's drawing (gui.widgets.steps); :attr:`drawing` until it is drawn."""
        self._steps.add(self.importance_view.show_permutation, res, can_compute, why_not)

    def show_result_later(self, res: dict, title: str = "") -> None:
        """:meth:`show_result` in a step of its own (gui.widgets.steps), the plots' steps
        after it; :attr:`drawing` from now on, :meth:`flush` shows it at once."""
        self._steps.clear()
        self._steps.add(self.show_result, res, title)

    @property
    def drawing(self) -> bool:
        """True while the shown run or its plots are still queued."""
        return self._steps.busy

    def flush(self) -> None:
        """Draw the queued plots now (their tabs' first paint is prepared later, a step at a
        time, not now)."""
        self._steps.flush()

    @property
    def preparing(self) -> bool:
        """True while the first paint of tabs not on screen is being prepared (or waits for
        a resize to end)."""
        return self._prepare.busy or self._resized.isActive()

    def _prepare_tabs(self) -> None:
        """Queue the preparation of every drawn tab not on screen (gui.widgets.prepaint), at
        the geometry of the tab on screen; once the panel is on screen if it is not yet."""
        self._unprepared = True
        if not self.isVisible():
            return
        self._prepare.clear()
        rect = self.currentWidget().geometry()
        for i in range(self.count()):
            page = self.widget(i)
            if page is not self.currentWidget() and isinstance(page, (ResultPlot,
                                                                      ImportanceView)):
                self._prepare.add(prepare_page, page, rect)
        self._prepare.add(setattr, self, "_unprepared", False)

    def showEvent(self, ev) -> None:
        super().showEvent(ev)
        if self._unprepared and not self._steps.busy and not self._prepare.busy:
            self._prepare.add(self._prepare_tabs)

    def resizeEvent(self, ev) -> None:
        super().resizeEvent(ev)
        # the pages prepared at the old size are laid out again when shown: prepare again
        if self.result is not None and not self._steps.busy:
            self._prepare.clear()
            self._resized.start()

    def _prepare_after_resize(self) -> None:
        if self.result is not None and not self._steps.busy:
            self._prepare.add(self._prepare_tabs)

    def show_prune_preview(self, base: dict, pruned: dict) -> None:
        bm, pm = base.get("metrics", {}), pruned.get("metrics", {})
        key = next((k for k in ("test error", "test MSE", "train error", "train MSE")
                    if k in pm), None)
        size_b, size_p = bm.get("features used"), pm.get("features used")
        text = f"Pruned model: <b>{size_p}</b> features (was {size_b})"
        if key:
            text += (f"; {html.escape(key)} <b>{format_metric(pm[key])}</b> "
                     f"(was {format_metric(bm.get(key))})")
        rep = getattr(pruned.get("estimator"), "prune_report_", None)
        if isinstance(rep, dict):
            bits = [f"{k} {format_metric(rep[k])}" for k in ("lam", "norm_diff", "steps")
                    if isinstance(rep.get(k), (int, float))]
            if bits:
                text += " · " + html.escape(", ".join(bits).replace("norm_diff", "‖α − β‖_H"))
        self.prune_view.result.setText(text + ".")
        self.prune_view.keep_button.setEnabled(True)

    def show_prune_error(self, message: str) -> None:
        self.prune_view.result.setText(f"<span style='color:#b3261e'>{html.escape(message)}</span>")
        self.prune_view.keep_button.setEnabled(False)

    def _draw_confusion(self, res):
        p = self.confusion_plot
        cm = np.asarray(res["confusion"], float)
        k = cm.shape[0]
        p.reset(f"Confusion matrix ({res.get('confusion_on', 'test')} rows)")
        yield
        rows = cm.sum(axis=1, keepdims=True)
        frac = np.divide(cm, rows, out=np.zeros_like(cm), where=rows > 0)
        img = pg.ImageItem(frac.T[:, ::-1])     # x = predicted, y = actual (top row first)
        lut = np.array([[255 - int(200 * t), 255 - int(120 * t), 255 - int(40 * t), 255]
                        for t in np.linspace(0, 1, 256)], dtype=np.ubyte)
        img.setLookupTable(lut)
        img.setLevels([0, 1])
        img.setRect(QRectF(0, 0, k, k))
        p.addItem(img)
        yield
        # the counts, one item for every cell (a TextItem each was 2-3 ms a row of cells)
        p.addItem(CellTexts([(j + 0.5, k - i - 0.5, f"{int(cm[i, j])}\n{100 * frac[i, j]:.0f}%",
                              "#ffffff" if frac[i, j] > 0.6 else "#111111")
                             for i in range(k) for j in range(k)], QRectF(0, 0, k, k)))
        labels = [str(c) for c in res["classes"]]
        p.getAxis("bottom").setTicks([[(j + 0.5, labels[j]) for j in range(k)]])
        p.getAxis("left").setTicks([[(k - i - 0.5, labels[i]) for i in range(k)]])
        p.setXRange(0, k, padding=0.02)
        p.setYRange(0, k, padding=0.02)
        p.showGrid(x=False, y=False)

    def _draw_roc(self, roc):
        p = self.roc_plot
        p.reset(f"ROC curve (positive class {roc['positive']}, AUC {roc['auc']:.3f})")
        p.getAxis("bottom").setTicks(None)
        p.getAxis("left").setTicks(None)
        yield
        p.plot([0, 1], [0, 1], pen=pg.mkPen("#999", style=Qt.DashLine), name="chance")
        yield
        p.plot(roc["fpr"], roc["tpr"], pen=pen(0, 2.5), name=f"AUC = {roc['auc']:.3f}")
        p.setXRange(0, 1)
        p.setYRange(0, 1)

    def _draw_regression(self, res, residuals: bool = False):
        """Predicted vs actual (or the residuals); large sets are drawn from a random subset.

        A scatter of 20k symbols took 0.8-0.9 s to draw; at most MAX_SCATTER points per set,
        and each of the two plots in its own event-loop turn, keep every draw under 100 ms
        whatever the rows (the metrics use every row).
        """
        p = self.residual_plot if residuals else self.pva_plot
        sets = [("train", res.get("y_train"), res.get("pred_train"), 0)]
        if res.get("y_test") is not None:
            sets.append(("test", res["y_test"], res["pred_test"], 1))
        shown = [(name, *thin_points(np.asarray(y, float), np.asarray(f, float))[:3], i)
                 for name, y, f, i in sets]
        note = ", ".join(f"{len(y):,} of {n:,} {name} rows" for name, y, f, n, i in shown
                         if len(y) < n)
        suffix = f" ({note}, drawn at random)" if note else ""
        p.reset(("Residuals" if residuals else "Predicted vs actual") + suffix)
        lo, hi = math.inf, -math.inf
        for name, y, f, n, i in shown:
            yield
            brush = pg.mkBrush(QColor(PALETTE[i]).lighter(110))
            p.add_dots(scatter(f, y - f, brush, name=name) if residuals else
                       scatter(y, f, brush, name=name))
            if len(y):
                lo, hi = min(lo, y.min(), f.min()), max(hi, y.max(), f.max())
        if not math.isfinite(lo):
            return
        yield
        if residuals:
            p.addLine(y=0, pen=pg.mkPen("#555", style=Qt.DashLine))
        else:
            p.plot([lo, hi], [lo, hi], pen=pg.mkPen("#555", style=Qt.DashLine), name="y = x")
            if res.get("intervals") is not None:
                yield
                self._draw_intervals(p, res)

    @staticmethod
    def _draw_intervals(p, res) -> None:
        """The 90% predictive interval of each drawn row of the evaluated set, as a vertical
        bar predicted +/- 1.645 std at its actual value: a bar that crosses the y = x line is an
        interval that holds the actual value. The title gives the share that do."""
        iv = res["intervals"]
        test = res.get("y_test") is not None
        y = np.asarray(res["y_test" if test else "y_train"], float)
        f = np.asarray(res["pred_test" if test else "pred_train"], float)
        if iv["rows"] is not None:
            y, f = y[iv["rows"]], f[iv["rows"]]
        color = QColor(PALETTE[1 if test else 0])
        color.setAlpha(100)
        bars = pg.ErrorBarItem(x=y, y=f, top=iv["half_width"], bottom=iv["half_width"],
                               beam=0, pen=pg.mkPen(color, width=1))
        p.addItem(bars)
        # the legend's sample: a line of the bars' colour, opaque (a 1-pixel translucent
        # sample does not show), never added to the plot
        p.legend.addItem(pg.PlotDataItem(pen=pg.mkPen(PALETTE[1 if test else 0], width=2)),
                         "90% predictive interval")
        p.set_title(p.plot_title + f"; 90% intervals hold {100 * iv['coverage']:.1f}% of "
                                   f"the {iv['n']:,} {iv['set']} rows drawn")

    def _draw_curve(self, res):
        """One input: the rows and the model's prediction along that input."""
        c = res["curve"]
        p = self.curve_plot
        name = (res.get("feature_names") or ["x"])[0]
        p.reset("Fitted curve" if res.get("task") == "regression" else
                f"Predicted class along {name}", name, "target")
        for label, X, y, i in (("train", res.get("X_train1"), res.get("y_train"), 0),
                               ("test", res.get("X_test1"), res.get("y_test"), 1)):
            if X is None or y is None:
                continue
            yield
            x, yv, n, _ = thin_points(np.asarray(X, float), np.asarray(y, float))
            p.add_dots(scatter(x, yv, pg.mkBrush(QColor(PALETTE[i]).lighter(110)), name=label))
        if "std" in c:      # the 90% predictive interval, mean +/- 1.645 std (Gaussian)
            yield
            lo, hi = (p.plot(c["x"], c["y"] + s * Z90 * c["std"], pen=pen(2, 0.8, True))
                      for s in (-1, 1))
            band = QColor(PALETTE[2])
            band.setAlpha(50)
            p.addItem(pg.FillBetweenItem(lo, hi, brush=pg.mkBrush(band)))
            p.legend.addItem(lo, "90% predictive interval")
        yield
        p.plot(c["x"], c["y"], pen=pen(2, 2.5), name="model")
    def _draw_regions(self, res):
        p = self.region_plot
        g = res["grid"]
        names = res.get("feature_names", ["x0", "x1"])
        p.reset("Decision regions" if res.get("task") != "regression" else "Prediction surface",
                names[0], names[1])
        Z = np.asarray(g["z"], float)
        x, y = g["x"], g["y"]
        img = pg.ImageItem(Z)
        if res.get("task") != "regression":
            k = len(res.get("classes", [])) or 1
            lut = []
            for i in range(256):
                c = QColor(PALETTE[min(int(i * k / 256), k - 1) % len(PALETTE)])
                # a pale tint of the class colour, so the points on top stay readable
                lut.append([int(255 - 0.28 * (255 - v)) for v in (c.red(), c.green(), c.blue())]
                           + [255])
            img.setLookupTable(np.array(lut, dtype=np.ubyte))
            img.setLevels([-0.5, k - 0.5])
        else:
            img.setLookupTable(pg.colormap.get("viridis").getLookupTable(nPts=256))
            img.setLevels([float(np.nanmin(Z)), float(np.nanmax(Z))])
        img.setRect(QRectF(x[0], y[0], x[-1] - x[0], y[-1] - y[0]))
        p.addItem(img)
        p.showGrid(x=False, y=False)
        classes = res.get("classes")
        for label, X, yv, hollow in (("train", res.get("X_train2"), res.get("y_train"), False),
                                     ("test", res.get("X_test2"), res.get("y_test"), True)):
            if X is None:
                continue
            # at most MAX_SCATTER symbols per set, as the regression plots (pyqtgraph styles
            # and paints each symbol in Python, at every repaint)
            _, _, n, idx = thin_points(X[:, 0], X[:, 1])
            if idx is not None:
                X, yv = X[idx], np.asarray(yv)[idx]
                label = f"{label} ({len(idx):,} of {n:,}, at random)"
            if classes is not None:
                for i, c in enumerate(classes):
                    yield
                    m = np.asarray(yv) == c
                    col = QColor(PALETTE[i % len(PALETTE)])
                    p.plot(X[m, 0], X[m, 1], pen=None, symbol="o", symbolSize=6,
                           symbolBrush=None if hollow else pg.mkBrush(col),
                           symbolPen=pg.mkPen(col if hollow else "w", width=1.2),
                           name=f"{c} ({label})")
            else:
                yield
                p.plot(X[:, 0], X[:, 1], pen=None, symbol="o", symbolSize=5,
                       symbolBrush=None if hollow else pg.mkBrush("#222"),
                       symbolPen=pg.mkPen("#222"), name=label)
        p.setXRange(x[0], x[-1], padding=0)     # whatever the points did to the ranges
        p.setYRange(y[0], y[-1], padding=0)

    def _draw_coefs(self, res):
        p = self.coef_plot
        v = np.asarray(res["coef_magnitudes"], float)
        p.reset(f"Coefficient magnitudes ({res.get('coef_label', '')})", "feature (sorted)", "")
        p.getAxis("bottom").setTicks(None)
        yield
        pos = v[v > 0]
        if len(pos) == 0:
            p.message("every coefficient is zero")
            return
        p.setLogMode(False, True)
        p.plot(np.arange(1, len(pos) + 1), pos, pen=pen(0, 2), name=f"{len(pos)} non-zero")

    def _draw_importance(self, res):
        # two steps: the share's bars and labels, then the permutation plot (BKerNN's end of
        # run drew both in one turn)
        self.importance_view.show_share(res)
        yield
        self.importance_view.show_permutation(res, *self.importance_available)
