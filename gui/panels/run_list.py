"""The run list: every training run with its parameters and metrics; selected runs overlaid.

A :class:`gui.logic.runs_table.Run` keeps what is needed to show, compare, export and reproduce a
run (method, parameters, data options, result dict with the fitted estimator, recorded curves).
Selecting one run shows it in the results panel; selecting several overlays their curves for the
chosen quantity in the comparison plot. """

from __future__ import annotations

import html
import os

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QHBoxLayout, QHeaderView, QLabel,
                               QPushButton, QSplitter, QTableWidget, QTableWidgetItem, QVBoxLayout,
                               QWidget)

from ..logic.formats import format_metric, format_param
from ..logic.overlay import overlay_x, run_range
from ..logic.runs_table import Run, run_labels, run_row, write_runs_csv
from ..widgets.plots import ResultPlot, pen
from ..widgets.prepaint import prepare_page, prepare_view
from ..widgets.steps import Steps

__all__ = ["RunList"]


class _Item(QTableWidgetItem):
    """A cell that sorts numbers as numbers (and empty cells last)."""

    def __init__(self, value, text: str | None = None):
        if text is None:
            text = "" if value is None else (format_metric(value) if isinstance(
                value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
                else str(value))
        super().__init__(text)
        self.value = value

    def __lt__(self, other):
        a, b = self.value, getattr(other, "value", None)
        num = (int, float, np.integer, np.floating)
        if isinstance(a, num) and isinstance(b, num):
            return float(a) < float(b)
        if a is None or b is None:
            return b is None and a is not None
        return str(a) < str(b)


class RunList(QWidget):
    selection_changed = Signal(list)      # run ids, in table order

    COLUMNS = ("Run", "Method", "Dataset", "Task", "Error / MSE", "AUC / R²", "Baseline",
               "Features used", "Fit time (s)", "Status", "Parameters")
    #: the runs_table field behind each column (None: text made here)
    _FIELDS = ("run", "method", "dataset", "task", "error / MSE", "AUC / R^2", "baseline",
               "features used", "fit time (s)", "status", None)
    export_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.runs: dict[int, Run] = {}
        self._steps = Steps(self)            # the comparison's curves, one per step
        # the tab's first paint prepared while it is not on screen (never run at once)
        self._prepare = Steps(self)
        self.table = QTableWidget(0, len(self.COLUMNS))
        self.table.setHorizontalHeaderLabels(self.COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.ExtendedSelection)
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(22)
        hh = self.table.horizontalHeader()
        for i in range(len(self.COLUMNS)):
            hh.setSectionResizeMode(i, QHeaderView.ResizeToContents)
        hh.setSectionResizeMode(self.COLUMNS.index("Parameters"), QHeaderView.Stretch)
        self.table.setToolTip("Select one run to inspect it, several (Ctrl/Shift) to compare; "
                              "click a header to sort")
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(0, Qt.AscendingOrder)      # run order until a header is clicked
        self.export_button = QPushButton("Export table as CSV…")
        self.export_button.setToolTip("Every run with its data set, task, every parameter and "
                                      "its numbers, one row per run")
        self.export_button.clicked.connect(self.export_requested)

        self.metric_combo = QComboBox()
        self.metric_combo.setMinimumWidth(160)
        self.compare_plot = ResultPlot("Compare runs", "iteration", "")
        top = QHBoxLayout()
        top.addWidget(QLabel("Overlay"))
        top.addWidget(self.metric_combo)
        top.addStretch(1)
        top.addWidget(self.export_button)
        lower = QWidget()
        lv = QVBoxLayout(lower)
        lv.setContentsMargins(0, 0, 0, 0)
        lv.addLayout(top)
        lv.addWidget(self.compare_plot, 1)
        split = QSplitter(Qt.Vertical)
        split.addWidget(self.table)
        split.addWidget(lower)
        split.setSizes([200, 300])
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(split)
        self.table.itemSelectionChanged.connect(self._selection)
        self.metric_combo.currentIndexChanged.connect(self._overlay)

    # -- content ------------------------------------------------------------------------------
    def add(self, run: Run) -> None:
        self.runs[run.run_id] = run
        self.table.setSortingEnabled(False)     # rows move while sorted: fill, then sort
        r = self.table.rowCount()
        self.table.insertRow(r)
        self._fill(r, run)
        self._relabel()
        self.table.setSortingEnabled(True)

    def update_run(self, run: Run) -> None:
        """Show the run's new state in its row, its label and the comparison, now."""
        for _ in self.update_steps(run):
            pass

    def update_steps(self, run: Run):
        """:meth:`update_run` as a generator, a step up to each ``yield`` (gui.widgets.steps):
        the row's cells, the labels of every row, the comparison (6-12 ms of the GUI thread
        in one turn at the end of a run)."""
        r = self._row_of(run.run_id)
        if r is not None:
            self.table.setSortingEnabled(False)
            self._fill(r, run)
            self.table.setSortingEnabled(True)
            yield
            self.table.setSortingEnabled(False)
            self._relabel()
            self.table.setSortingEnabled(True)
        if run.run_id in self.selected_ids():
            yield
            self._overlay()
            # after the comparison's own steps, which prepare its plot: the tab's preparation
            # then finds the plot's axes built (run beside them, it built them twice)
            self._steps.add(self._prepare_tab)
            return
        self._prepare_tab()

    def _prepare_tab(self) -> None:
        """Prepare the tab's first paint while it is not on screen (gui.widgets.prepaint): shown
        after a run, its comparison plot laid out and painted with its axes built in the
        same turn as the table was 18 ms of the GUI thread under Xvfb."""
        stack = self.parentWidget()
        if stack is None or self.isVisible() or not stack.isVisible():
            return
        self._prepare.clear()
        self._prepare.add(prepare_page, self, stack.rect())

    @property
    def preparing(self) -> bool:
        """True while the tab's first paint is being prepared."""
        return self._prepare.busy

    def _row_of(self, run_id: int):
        for r in range(self.table.rowCount()):
            if self.table.item(r, 0).data(Qt.UserRole) == run_id:
                return r
        return None

    def labels(self) -> dict[int, str]:
        """Each run's label among all the runs of the table (what tells it apart)."""
        return run_labels(self.runs.values())

    def _relabel(self) -> None:
        """The Method cells name what differs between the runs: a new run can change them."""
        col = self._FIELDS.index("method")
        rows = {self.table.item(r, 0).data(Qt.UserRole): r for r in range(self.table.rowCount())}
        for rid, label in self.labels().items():
            r = rows.get(rid)
            if r is not None:
                item = self.table.item(r, col)
                item.setText(label)
                item.value = label

    def _fill(self, r: int, run: Run) -> None:
        row = run_row(run)
        tip = self._tooltip(run)
        for j, field in enumerate(self._FIELDS):
            v = run.key_params() if field is None else row.get(field)
            item = _Item(v, f"#{run.run_id}" if field == "run" else None)
            if j == 0:
                item.setData(Qt.UserRole, run.run_id)
            item.setToolTip(tip)
            self.table.setItem(r, j, item)

    def rows(self) -> list[Run]:
        """The runs in the table's current (sorted) order."""
        return [self.runs[self.table.item(r, 0).data(Qt.UserRole)]
                for r in range(self.table.rowCount())]

    def export_csv(self, path: str) -> str:
        return write_runs_csv(path, self.rows())

    @staticmethod
    def _tooltip(run: Run) -> str:
        # a tooltip is rich text when it looks like it (the <b> ensures it): every name, the
        # file's, the target's and the note, escaped
        esc = html.escape
        lines = [f"<b>{esc(run.name)}</b> ({esc(run.class_name)})"]
        if run.data.get("path"):
            lines.append(esc(f"data: {os.path.basename(run.data['path'])}, target "
                             f"{run.data.get('target')!r}"))
        lines += [esc(f"{k} = {format_param(v)}") for k, v in run.params.items()]
        if run.note:
            lines.append(f"<i>{esc(run.note)}</i>")
        return "<br>".join(lines)

    def selected_ids(self) -> list[int]:
        rows = sorted({i.row() for i in self.table.selectedIndexes()})
        return [self.table.item(r, 0).data(Qt.UserRole) for r in rows]

    def select(self, run_ids) -> None:
        # one selection change for the lot: each row selected alone redrew the comparison and
        # showed the first run's results, one after the other in the same turn
        self.table.blockSignals(True)
        try:
            self.table.clearSelection()
            mode = self.table.selectionMode()
            self.table.setSelectionMode(QAbstractItemView.MultiSelection)
            for rid in run_ids:
                r = self._row_of(rid)
                if r is not None:
                    self.table.selectRow(r)
            self.table.setSelectionMode(mode)
        finally:
            self.table.blockSignals(False)
        self._selection()

    # -- comparison ---------------------------------------------------------------------------
    def _selection(self) -> None:
        ids = self.selected_ids()
        names = []
        for rid in ids:
            for n in self.runs[rid].curves:
                if n not in names:
                    names.append(n)
        cur = self.metric_combo.currentText()
        self.metric_combo.blockSignals(True)
        self.metric_combo.clear()
        self.metric_combo.addItems(names)
        if cur in names:
            self.metric_combo.setCurrentText(cur)
        self.metric_combo.blockSignals(False)
        self._overlay()
        self.selection_changed.emit(ids)

    def _overlay(self) -> None:
        """Redraw the comparison: the axes now, then one run's curve per step
        (gui.widgets.steps), on screen or not. The plot takes no paint until every curve is
        in: painted after each step it cost its whole paint each time (17-19 ms); drawn in the
        selection's turn, six curves, their legend and the paint were one turn of 27-39 ms
        of CPU, a gap of 150-213 ms of the window under load (bench_gui_load --load 4)."""
        metric = self.metric_combo.currentText()
        ids = self.selected_ids()
        # the legend names each run by what differs among the runs overlaid
        labels = run_labels([self.runs[r] for r in ids])
        self._steps.clear()
        curves = [(i, rid) for i, rid in enumerate(ids) if metric in self.runs[rid].curves]
        # runs of different lengths or units share the axis as fractions of their progress
        # (gui.logic.overlay), each legend entry then giving the run's own range
        own = [(np.asarray(self.runs[rid].curves[metric][0], float), self.runs[rid].x_label)
               for _, rid in curves]
        xs, xlabel, fractions = overlay_x(own)
        # no paint of the emptied plot while its curves are queued: one paint, at the end
        self.compare_plot.setUpdatesEnabled(not curves)
        # the curves drawn stay, each given the next selection's data in its step (removed and
        # made again, with their legend entries, they were 3-4 ms of the selection's turn)
        kept = self.compare_plot.reset(f"Compare runs: {metric}" if metric else "Compare runs",
                                       xlabel, metric, keep_curves=bool(curves))
        if not curves:
            self.compare_plot.message("Select runs with recorded curves to compare them"
                                      if ids else "Select two or more runs to compare them")
            return
        for n, ((i, rid), x, (x_own, unit)) in enumerate(zip(curves, xs, own)):
            y = np.asarray(self.runs[rid].curves[metric][1], float)
            name = f"#{rid} {labels[rid]}" + (f" ({run_range(x_own, unit)})" if fractions else "")
            self._steps.add(self._draw_curve, n, x, y, i, name)
        if len(kept) > len(curves):
            self._steps.add(self.compare_plot.remove_curves, len(curves))
        if fractions:       # the whole of every run, a run's last point inside the frame
            self._steps.add(self.compare_plot.setXRange, 0.0, 1.0, 0.02)
        else:
            self._steps.add(self.compare_plot.fit_x, xs)
        # its axes and layout built a step at a time too (gui.widgets.prepaint): the one paint
        # with every curve was 10-22 ms of the GUI thread, most of it the axes built twice
        self._steps.add(prepare_view, self.compare_plot)
        self._steps.add(self.compare_plot.setUpdatesEnabled, True)

    def _draw_curve(self, n: int, x, y, i: int, name: str) -> None:
        self.compare_plot.put_curve(n, x, y, name, pen=pen(i),
                                    symbol="o" if len(x) < 30 else None, symbolSize=4)

    def flush(self) -> None:
        """Draw the queued curves of the comparison now."""
        self._steps.flush()

    @property
    def drawing(self) -> bool:
        """True while curves of the comparison are still queued."""
        return self._steps.busy
