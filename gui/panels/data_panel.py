"""The data panel: the loaded CSV, its preview, and the choice of target, features and policies.

Opening a file runs rwtool.data.preview_csv (types and missing counts of every column);
choosing the target, the features, the missing-value policy, the task and the test fraction
re-encodes the data with rwtool.data.train_test_csv (gui.logic.reading.encode), debounced. Both
run through ``reader``: the window's gui.worker.WorkerController.read, which runs them in
another process (the main window passes it), or Qt's thread pool. A file or a choice that fails
leaves what was loaded before in place and reports the error through ``error`` (the main window
shows it).

This widget reads data; it must not fit models.
"""

from __future__ import annotations

import html
import os

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QDoubleSpinBox, QFormLayout,
                               QHBoxLayout, QHeaderView, QLabel, QPushButton, QSpinBox,
                               QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from rwtool import data as rwdata

from ..logic.column_roles import MAX_CATEGORIES, default_exclusions, exclusion_note
from ..logic.reading import encode
from ..logic.terms import app_words
from ..widgets.read_options import ReadOptions
from ..worker import run_in_background

__all__ = ["DataPanel", "PreviewTable", "MISSING_LABELS"]

MISSING_LABELS = {
    "error": "Refuse missing values",
    "drop-rows": "Drop rows with missing values",
    "impute-mean": "Impute the mean (most frequent for text)",
    "impute-most-frequent": "Impute the most frequent value",
}
TASK_CHOICES = ("auto", "classification", "regression")


class PreviewTable(QTableWidget):
    """The first rows of the file, each header naming the column's type and missing count."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.setAlternatingRowColors(True)
        self.verticalHeader().setDefaultSectionSize(22)
        self.horizontalHeader().setDefaultSectionSize(110)

    def show_preview(self, preview) -> None:
        self.clear()
        self.setRowCount(len(preview.head))
        self.setColumnCount(len(preview.names))
        labels = []
        for c in preview.columns:
            miss = f", {c.n_missing} missing" if c.n_missing else ""
            labels.append(f"{c.name}\n{c.kind}{miss}")
        self.setHorizontalHeaderLabels(labels)
        for i, row in enumerate(preview.head):
            for j, cell in enumerate(row[: len(preview.names)]):
                item = QTableWidgetItem(cell)
                if cell.strip() in rwdata.NA_VALUES:
                    item.setBackground(QBrush(QColor("#fde2e1")))
                    item.setToolTip("missing value")
                self.setItem(i, j, item)
        self.setVerticalHeaderLabels([str(i + (2 if preview.dialect.header else 1))
                                      for i in range(len(preview.head))])
        self.resizeColumnsToContents()
        for j in range(self.columnCount()):
            self.setColumnWidth(j, min(max(self.columnWidth(j), 70), 240))

    @classmethod
    def warm_up_painting(cls, parent=None) -> None:
        """Paint a table like a file's preview once, off screen, and drop it.

        The first table of cells Qt paints fills its style and glyph caches: ~100 ms on the GUI
        thread, which would otherwise fall on the user's first file open. Done during the
        numba warm-up, like it.
        """
        from types import SimpleNamespace
        names = [f"column {j}" for j in range(8)] + ["label"]
        cols = [SimpleNamespace(name=n, kind="numeric", n_missing=j % 2)
                for j, n in enumerate(names)]
        head = [[f"{(i * 7 + j) % 13 - 6.25:.5f}" for j in range(8)] + [("yes", "no")[i % 2]]
                for i in range(40)]
        table = cls(parent)
        table.setAttribute(Qt.WA_DontShowOnScreen)
        table.show_preview(SimpleNamespace(head=head, names=names, columns=cols,
                                           dialect=SimpleNamespace(header=True)))
        table.resize(900, 700)
        table.grab()      # paints now, into a pixmap; nothing reaches the screen
        table.deleteLater()


class DataPanel(QWidget):
    """Left-hand panel: file, target, task, missing policy, split and the feature columns."""

    file_loaded = Signal(str)           # path of a newly previewed file
    dataset_ready = Signal(object)      # dict: train, test, path, options
    dataset_invalid = Signal(str)       # why there is no usable encoding right now
    error = Signal(str, object)         # context ("open" / "encode"), error dict
    busy = Signal(bool)

    DEBOUNCE_MS = 250

    def __init__(self, parent=None, settings=None, reader=None):
        super().__init__(parent)
        #: runs a reader away from the GUI thread: reader(fn, *args, on_done=, on_error=,
        #: **kwargs), as gui.worker.run_in_background (the default) and WorkerController.read
        self.reader = reader if reader is not None else run_in_background
        self.preview = None
        self.path: str | None = None
        self.read: dict = {}                # reading options of the file shown (overrides)
        self.read_box = ReadOptions(settings)
        self.train = self.test = None
        self._generation = 0
        self._loading = False
        self._filling = False
        self._prev_target: str | None = None

        self.file_label = QLabel("No file loaded. Open a CSV (Ctrl+O), drop one on the window, "
                                 "or pick a sample in File > Samples.")
        self.file_label.setWordWrap(True)
        self.file_label.setTextFormat(Qt.RichText)     # the file's name escaped ("R&amp;D")
        self.file_label.setObjectName("fileLabel")
        self.open_button = QPushButton("Open CSV…")

        self.target_combo = QComboBox()
        self.target_combo.setToolTip("The column to predict")
        self.task_combo = QComboBox()
        self.task_combo.setToolTip("auto: text targets and numeric targets with few integer "
                                   "values are classes, anything else is regression")
        self.missing_combo = QComboBox()
        for key in rwdata.MISSING_POLICIES:
            self.missing_combo.addItem(MISSING_LABELS.get(key, key), key)
        self.missing_combo.setToolTip("What to do with missing feature values; rows with a "
                                      "missing target are dropped unless missing values are "
                                      "refused")
        self.test_spin = QDoubleSpinBox()
        self.test_spin.setRange(0.0, 0.9)
        self.test_spin.setSingleStep(0.05)
        self.test_spin.setValue(0.25)
        self.test_spin.setToolTip("Fraction of rows held out for testing (stratified by class "
                                  "for classification); 0 trains on every row")
        self.seed_spin = QSpinBox()
        self.seed_spin.setRange(0, 2**31 - 1)
        self.seed_spin.setToolTip("Seed of the train/test split")

        form = QFormLayout()
        form.addRow("Target", self.target_combo)
        form.addRow("Task", self.task_combo)
        form.addRow("Missing values", self.missing_combo)
        split = QHBoxLayout()
        split.addWidget(self.test_spin)
        split.addWidget(QLabel("seed"))
        split.addWidget(self.seed_spin)
        form.addRow("Test fraction", split)

        self.columns_table = QTableWidget(0, 5)
        self.columns_table.setHorizontalHeaderLabels(["Column", "Type", "Missing", "Distinct",
                                                      "Values"])
        self.columns_table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.columns_table.setSelectionMode(QAbstractItemView.NoSelection)
        self.columns_table.verticalHeader().setVisible(False)
        self.columns_table.verticalHeader().setDefaultSectionSize(22)
        hh = self.columns_table.horizontalHeader()
        hh.setSectionResizeMode(QHeaderView.ResizeToContents)
        hh.setSectionResizeMode(4, QHeaderView.Stretch)
        self.columns_table.setToolTip("Tick the feature columns; the target is never a feature")

        self.all_button = QPushButton("All")
        self.none_button = QPushButton("None")
        sel = QHBoxLayout()
        sel.addWidget(QLabel("<b>Feature columns</b>"))
        sel.addStretch(1)
        sel.addWidget(self.all_button)
        sel.addWidget(self.none_button)

        self.status_label = QLabel("")
        # always rich text: a message with a tag beside one without, names and errors escaped
        self.status_label.setTextFormat(Qt.RichText)
        self.status_label.setWordWrap(True)
        self.status_label.setObjectName("dataStatus")
        self.exclusion_label = QLabel("")
        self.exclusion_label.setTextFormat(Qt.RichText)     # escaped names ("R&amp;D")
        self.exclusion_label.setWordWrap(True)
        self.exclusion_label.setObjectName("dataExclusions")
        self.exclusion_label.setVisible(False)
        self.excluded: dict[str, str] = {}

        top = QHBoxLayout()
        top.addWidget(self.file_label, 1)
        top.addWidget(self.open_button, 0, Qt.AlignTop)
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addLayout(form)
        lay.addWidget(self.read_box)
        lay.addLayout(sel)
        lay.addWidget(self.columns_table, 1)
        lay.addWidget(self.exclusion_label)
        lay.addWidget(self.status_label)

        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(self.DEBOUNCE_MS)
        self._debounce.timeout.connect(self._encode)
        self.target_combo.currentIndexChanged.connect(self._target_changed)
        self.task_combo.currentIndexChanged.connect(self._options_changed)
        self.missing_combo.currentIndexChanged.connect(self._options_changed)
        self.test_spin.valueChanged.connect(self._options_changed)
        self.seed_spin.valueChanged.connect(self._options_changed)
        self.columns_table.itemChanged.connect(self._options_changed)
        self.all_button.clicked.connect(lambda: self._check_all(True))
        self.none_button.clicked.connect(lambda: self._check_all(False))
        self.read_box.apply_requested.connect(self._reread)
        self._set_enabled(False)

    # -- opening -------------------------------------------------------------------------
    def _set_enabled(self, on: bool) -> None:
        for w in (self.target_combo, self.task_combo, self.missing_combo, self.test_spin,
                  self.seed_spin, self.columns_table, self.all_button, self.none_button):
            w.setEnabled(on)

    def open_path(self, path: str, target: str | None = None, options: dict | None = None,
                  read: dict | None = None):
        """Preview ``path`` in the background; on success it replaces the current file.

        ``read``: reading options (header, delimiter, decimal, encoding, names) for
        rwtool.data.preview_csv/read_csv; None uses the ones remembered for this file."""
        path = os.fspath(path)
        read = self.read_box.remembered(path) if read is None else dict(read)
        self._loading = True
        self.busy.emit(True)
        self.status_label.setText(f"Reading {html.escape(os.path.basename(path))}…")

        def done(preview):
            self._loading = False
            self.busy.emit(False)
            if preview.n_rows == 0:
                # A file with nothing to learn from must not replace the data already loaded.
                err = rwdata.HeaderOnlyError("the file has a header line and no data rows",
                                             file=path, hint="check that it is the right file")
                self._restore_status()
                self.error.emit("open", {"message": str(err), "kind": "HeaderOnlyError",
                                         "details": "", "file": path})
                return
            self.read = read
            self.read_box.set_values(read)
            self.read_box.show_file(path, preview.dialect, preview.names)
            self._install(preview, target, options or {})

        def failed(err):
            self._loading = False
            self.busy.emit(False)
            self._restore_status()
            self.error.emit("open", dict(err, file=path))
        self.reader(rwdata.preview_csv, path, on_done=done, on_error=failed, **read)

    def _reread(self, values: dict) -> None:
        """Read the file again with the user's reading options, and remember them for it."""
        if self.path is None:
            return
        self.read_box.remember(self.path, values)
        self.open_path(self.path, self.target(), None, values)

    def _restore_status(self) -> None:
        if self.train is not None:
            self._show_ready_status()
        elif self.path is None:
            self.status_label.setText("")

    def _install(self, preview, target, options) -> None:
        self.preview = preview
        self.path = preview.path
        self.train = self.test = None
        self._filling = True
        try:
            d = preview.dialect
            self.file_label.setText(
                f"<b>{html.escape(os.path.basename(preview.path))}</b><br>{preview.n_rows} "
                f"rows × {len(preview.names)} columns · "
                f"{html.escape(d.describe()) if hasattr(d, 'describe') else ''}")
            self.file_label.setToolTip(preview.path)
            self.target_combo.clear()
            self.target_combo.addItems(preview.names)
            tgt = target if target in preview.names else preview.suggested_target()
            self.target_combo.setCurrentText(tgt)
            self._fill_columns(tgt, options.get("features"), options.get("ignore", ()))
            if "missing" in options:
                i = self.missing_combo.findData(options["missing"])
                if i >= 0:
                    self.missing_combo.setCurrentIndex(i)
            elif any(c.n_missing for c in preview.columns if c.name != tgt):
                self.missing_combo.setCurrentIndex(
                    self.missing_combo.findData("impute-mean"))
            else:
                self.missing_combo.setCurrentIndex(self.missing_combo.findData("error"))
            self._fill_tasks(tgt)
        finally:
            self._filling = False
        self._set_enabled(True)
        self.file_loaded.emit(preview.path)
        self._encode()

    def _fill_tasks(self, target: str) -> None:
        old = self.task_combo.currentData()
        self.task_combo.blockSignals(True)
        self.task_combo.clear()
        try:
            inferred = self.preview.infer_task(target)
        except Exception:  # a column the preview could not classify: let the read decide
            inferred = "?"
        for t in TASK_CHOICES:
            self.task_combo.addItem(f"auto ({inferred})" if t == "auto" else t, t)
        i = self.task_combo.findData(old) if old else 0
        self.task_combo.setCurrentIndex(max(i, 0))
        self.task_combo.blockSignals(False)

    def _fill_columns(self, target, features=None, ignore=()) -> None:
        cols = self.preview.columns
        # a row index, a constant, an identifier: unticked, with the note saying why
        self.excluded = {} if features is not None else \
            default_exclusions(self.preview, target)
        self.exclusion_label.setText(html.escape(exclusion_note(self.excluded)))
        self.exclusion_label.setVisible(bool(self.excluded))
        t = self.columns_table
        t.blockSignals(True)
        t.setRowCount(len(cols))
        for i, c in enumerate(cols):
            name = QTableWidgetItem(c.name)
            name.setFlags(Qt.ItemIsEnabled | Qt.ItemIsUserCheckable)
            use = (c.name in features) if features is not None else \
                (c.name not in self.excluded and c.name not in ignore)
            if c.name in self.excluded:
                name.setToolTip(f"unticked: {self.excluded[c.name]}")
            name.setCheckState(Qt.Checked if use else Qt.Unchecked)
            kind = QTableWidgetItem(c.kind)
            miss = QTableWidgetItem(str(c.n_missing))
            if c.n_missing:
                miss.setForeground(QBrush(QColor("#b3261e")))
            dist = QTableWidgetItem(str(c.n_distinct))
            if c.kind == "numeric" and c.min is not None:
                vals = f"{c.min:.4g} … {c.max:.4g}"
            else:
                vals = ", ".join(map(str, c.examples[:4]))
            if c.kind == "categorical" and c.n_distinct > MAX_CATEGORIES:
                vals = f"{c.n_distinct} distinct: an identifier or free text? " + vals
            values = QTableWidgetItem(vals)
            values.setToolTip(", ".join(map(str, c.examples)))
            for j, item in enumerate((name, kind, miss, dist, values)):
                t.setItem(i, j, item)
        t.blockSignals(False)
        self._mark_target(target)

    def _mark_target(self, target: str) -> None:
        self._prev_target = target
        t = self.columns_table
        t.blockSignals(True)
        for i in range(t.rowCount()):
            item = t.item(i, 0)
            is_t = item.text() == target
            # The target row stays visible but cannot be ticked as a feature.
            item.setFlags(Qt.ItemIsUserCheckable if is_t
                          else Qt.ItemIsEnabled | Qt.ItemIsUserCheckable)
            why = self.excluded.get(item.text())
            item.setToolTip("the target" if is_t else (f"unticked: {why}" if why else ""))
            if is_t:
                item.setCheckState(Qt.Unchecked)
            font = item.font()
            font.setBold(is_t)
            item.setFont(font)
        t.blockSignals(False)

    def _check_all(self, on: bool) -> None:
        t = self.columns_table
        t.blockSignals(True)
        target = self.target()
        for i in range(t.rowCount()):
            item = t.item(i, 0)
            if item.text() != target:
                item.setCheckState(Qt.Checked if on else Qt.Unchecked)
        t.blockSignals(False)
        self._options_changed()

    # -- options -------------------------------------------------------------------------
    def target(self) -> str | None:
        return self.target_combo.currentText() or None

    def features(self) -> list[str]:
        t = self.columns_table
        target = self.target()
        return [t.item(i, 0).text() for i in range(t.rowCount())
                if t.item(i, 0).checkState() == Qt.Checked and t.item(i, 0).text() != target]

    def set_features(self, names) -> None:
        t = self.columns_table
        t.blockSignals(True)
        for i in range(t.rowCount()):
            item = t.item(i, 0)
            if item.text() != self.target():
                item.setCheckState(Qt.Checked if item.text() in names else Qt.Unchecked)
        t.blockSignals(False)
        self._options_changed()

    def options(self) -> dict:
        return {"target": self.target(), "features": self.features(),
                "missing": self.missing_combo.currentData(),
                "task": self.task_combo.currentData() or "auto",
                "test_size": float(self.test_spin.value()),
                "random_state": int(self.seed_spin.value()), **self.read}

    def _target_changed(self) -> None:
        if self._filling or self.preview is None:
            return
        prev = self._prev_target
        if prev and prev != self.target():
            # The former target becomes an ordinary column again, ticked if it would be by default.
            for i in range(self.columns_table.rowCount()):
                item = self.columns_table.item(i, 0)
                if item.text() == prev:
                    self.columns_table.blockSignals(True)
                    use = self._default_feature(self.preview.column(prev))
                    item.setCheckState(Qt.Checked if use else Qt.Unchecked)
                    self.columns_table.blockSignals(False)
        self._mark_target(self.target())
        self._fill_tasks(self.target())
        self._options_changed()

    def _options_changed(self, *args) -> None:
        if self._filling or self.preview is None:
            return
        self._debounce.start()

    # -- encoding --------------------------------------------------------------------------
    def _encode(self) -> None:
        if self.preview is None:
            return
        opts = self.options()
        self._generation += 1
        gen = self._generation
        if not opts["features"]:
            self.train = self.test = None
            msg = "Tick at least one feature column."
            self.status_label.setText(msg)
            self.dataset_invalid.emit(msg)
            return
        path = self.path
        self.status_label.setText("Encoding…")
        self.busy.emit(True)

        def done(pair):
            self.busy.emit(False)
            if gen != self._generation:
                return
            self.train, self.test = pair
            self._show_ready_status()
            self.dataset_ready.emit({"train": self.train, "test": self.test, "path": path,
                                     "options": opts})

        def failed(err):
            self.busy.emit(False)
            if gen != self._generation:
                return
            self.train = self.test = None
            self.status_label.setText(f"<span style='color:#b3261e'>Cannot encode: "
                                      f"{html.escape(err['message'])}</span>")
            self.dataset_invalid.emit(err["message"])
            self.error.emit("encode", err)
        self.reader(encode, path, opts, on_done=done, on_error=failed)

    def _show_ready_status(self) -> None:
        tr, te = self.train, self.test
        parts = [f"{tr.n_samples} training rows"]
        if te is not None:
            parts.append(f"{te.n_samples} test rows")
        parts.append(f"{tr.n_features} encoded features")
        task = tr.task
        if tr.is_classification and tr.classes is not None:
            task += f" ({len(tr.classes)} classes)"
        text = "Ready: " + ", ".join(parts) + f"; task {task}."
        if tr.notes:
            text += "<br><i>" + html.escape("; ".join(map(app_words, tr.notes))) + "</i>"
        self.status_label.setText(text)

    @property
    def is_loading(self) -> bool:
        return self._loading
