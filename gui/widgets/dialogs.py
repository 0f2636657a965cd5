"""Small widgets of the main window: the message banner, the welcome page, and the dialogs of
the Python snippet and of a model's predictions on a new CSV.

They show what they are given; they must not fit or predict.
"""

from __future__ import annotations

import html
import os

import numpy as np

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QFileDialog, QFrame, QHBoxLayout,
                               QLabel, QMessageBox, QPlainTextEdit, QPushButton, QTableWidget,
                               QTableWidgetItem, QVBoxLayout, QWidget)

from rwtool.report import available_samples, prediction_columns, write_predictions

from ..logic.formats import format_metric

__all__ = ["Banner", "Welcome", "SnippetDialog", "PredictionsDialog"]


class Banner(QFrame):
    """A message strip above the panels: errors stay until closed, notes fade after a while."""

    STYLES = {"error": ("#fdecea", "#b3261e"), "info": ("#e8f1fb", "#0b4f8a"),
              "warning": ("#fff4e0", "#8a5a00")}

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("banner")
        self.label = QLabel()
        self.label.setWordWrap(True)
        # always rich text: an escaped "File &gt; Apply" must not be shown as plain text
        self.label.setTextFormat(Qt.RichText)
        self.label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.details_button = QPushButton("Details")
        self.details_button.setFlat(True)
        self.close_button = QPushButton("✕")
        self.close_button.setFlat(True)
        self.close_button.setFixedWidth(28)
        self.close_button.setToolTip("Dismiss")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(10, 4, 4, 4)
        lay.addWidget(self.label, 1)
        lay.addWidget(self.details_button)
        lay.addWidget(self.close_button)
        self.kind = ""
        self.details = ""
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.hide)
        self.close_button.clicked.connect(self.hide)
        self.details_button.clicked.connect(self._show_details)
        self.hide()

    def show_message(self, kind: str, text: str, details: str = "") -> None:
        bg, fg = self.STYLES.get(kind, self.STYLES["info"])
        self.setStyleSheet(f"QFrame#banner {{ background: {bg}; border: 1px solid {fg}; "
                           f"border-radius: 4px; }} QLabel {{ color: {fg}; }}")
        prefix = {"error": "<b>Error:</b> ", "warning": "<b>Warning:</b> "}.get(kind, "")
        self.label.setText(prefix + html.escape(text))
        self.kind, self.text, self.details = kind, text, details
        self.details_button.setVisible(bool(details))
        self.show()
        if kind == "info":
            self._timer.start(8000)
        else:
            self._timer.stop()

    def _show_details(self) -> None:
        box = QMessageBox(self)
        box.setWindowTitle("Error details")
        box.setText(self.text)
        box.setDetailedText(self.details)
        box.setIcon(QMessageBox.Warning)
        box.open()


class Welcome(QWidget):
    """What the preview area shows before any file is open: how to start, and the samples."""

    def __init__(self, win: "MainWindow"):
        super().__init__()
        title = QLabel("<h2>rwtool</h2><p>Random-feature learning: RKHS weightings, random "
                       "kitchen sinks, averaged SGD on random features, greedy multi-kernel "
                       "features and BKerNN.</p><p>Open a CSV file (Ctrl+O) or drop one on the "
                       "window; or start from a sample:</p>")
        title.setWordWrap(True)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(40, 30, 40, 30)
        lay.addWidget(title)
        open_button = QPushButton("Open a CSV file…")
        open_button.clicked.connect(win.open_csv_dialog)
        lay.addWidget(open_button, 0, Qt.AlignLeft)
        for s in available_samples()[0]:
            b = QPushButton(s["name"])
            b.setToolTip(s["description"])
            b.setMinimumWidth(140)
            b.clicked.connect(lambda checked=False, s=s: win.open_sample(s))
            row = QHBoxLayout()
            row.addWidget(b)
            text = QLabel(s["description"])
            text.setWordWrap(True)
            row.addWidget(text, 1)
            lay.addLayout(row)
        lay.addStretch(1)


class SnippetDialog(QDialog):
    def __init__(self, parent, text: str):
        super().__init__(parent)
        self.setWindowTitle("Python snippet")
        self.resize(720, 520)
        self.edit = QPlainTextEdit(text)
        self.edit.setReadOnly(True)
        font = self.edit.font()
        font.setFamily("monospace")
        self.edit.setFont(font)
        buttons = QDialogButtonBox(QDialogButtonBox.Close)
        copy = buttons.addButton("Copy", QDialogButtonBox.ActionRole)
        save = buttons.addButton("Save…", QDialogButtonBox.ActionRole)
        copy.clicked.connect(lambda: QGuiApplication.clipboard().setText(text))
        save.clicked.connect(self._save)
        buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addWidget(self.edit)
        lay.addWidget(buttons)

    def _save(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save snippet", "run.py", "Python (*.py)")
        if path:
            from rwtool.persist import atomic_writer
            with atomic_writer(path, "w", encoding="utf-8") as fh:
                fh.write(self.edit.toPlainText())


def _cell(v) -> str:
    """A prediction as shown (the saved file keeps every digit)."""
    return f"{v:.6g}" if isinstance(v, (float, np.floating)) else str(v)


class PredictionsDialog(QDialog):
    """Predictions of a model on a new CSV (first rows) with metrics when the target is there."""

    SHOW = 500

    def __init__(self, parent, out: dict):
        super().__init__(parent)
        self.out = out
        self.setWindowTitle(f"Predictions for {os.path.basename(out['path'])}")
        self.resize(640, 520)
        has_y = out.get("y") is not None
        table = QTableWidget(min(len(out["pred"]), self.SHOW), 3 if has_y else 2)
        table.setHorizontalHeaderLabels(["row", "prediction"] + (["actual"] if has_y else []))
        table.verticalHeader().setVisible(False)
        for i in range(table.rowCount()):
            table.setItem(i, 0, QTableWidgetItem(str(out["rows"][i])))
            table.setItem(i, 1, QTableWidgetItem(_cell(out["pred"][i])))
            if has_y:
                table.setItem(i, 2, QTableWidgetItem(_cell(out["y"][i])))
        text = f"{len(out['pred'])} rows predicted"
        if len(out["pred"]) > self.SHOW:
            text += f" (first {self.SHOW} shown; save to get all)"
        if out.get("metrics"):
            text += "<br>" + html.escape(", ".join(
                f"{k}: {format_metric(v)}" for k, v in out["metrics"].items()
                if not k.startswith("fit")))
        if out.get("notes"):
            text += "<br><i>" + html.escape("; ".join(out["notes"])) + "</i>"
        label = QLabel(text)
        label.setTextFormat(Qt.RichText)            # line breaks; the notes escaped
        label.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.Close)
        save = buttons.addButton("Save predictions…", QDialogButtonBox.ActionRole)
        save.clicked.connect(self._save)
        buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addWidget(label)
        lay.addWidget(table, 1)
        lay.addWidget(buttons)

    def columns(self) -> dict:
        """The columns of `rwtool predict` (row: the line in the file, prediction), and the
        actual value when the file has the target."""
        cols = prediction_columns(self.out.get("estimator"), None, self.out["rows"],
                                  self.out["pred"])
        if self.out.get("y") is not None:
            cols["actual"] = np.asarray(self.out["y"])
        return cols

    def _save(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save predictions", "predictions.csv",
                                              "CSV files (*.csv)")
        if path:
            try:
                write_predictions(path, self.columns())
            except (ValueError, OSError) as exc:
                QMessageBox.warning(self, "Cannot save", str(exc))
