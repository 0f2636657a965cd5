"""How a CSV file is read: the detected header, delimiter, decimal mark and encoding, the user's
overrides, column names for a header-less file, and the memory of these choices per file.

The values map one to one onto the reading parameters of rwtool.data.preview_csv and read_csv
(``header``, ``delimiter``, ``decimal``, ``encoding``, ``names``); "detected" is None, which
lets rwtool sniff the file. Choices are kept in the app's settings under the file's absolute
path and come back when the same file is opened again.

The keys and the choices are gui.logic.read_options. This widget collects options; it
must not read files.
"""

from __future__ import annotations

import json
import os

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QComboBox, QFormLayout, QGroupBox, QHBoxLayout, QLabel,
                               QLineEdit, QPushButton, QToolButton, QVBoxLayout, QWidget)

from ..logic.read_options import DECIMALS, DELIMITERS, ENCODINGS, HEADER, KEYS

__all__ = ["ReadOptions"]


def _combo(items, tip: str) -> QComboBox:
    c = QComboBox()
    for text, value in items:
        c.addItem(text, value)
    c.setToolTip(tip)
    return c


class ReadOptions(QWidget):
    """Reading options of the current file (folded under a toggle); ``apply_requested`` asks
    for a re-read."""

    apply_requested = Signal(dict)

    def __init__(self, settings=None, parent=None):
        super().__init__(parent)
        self.settings = settings
        self.path: str | None = None
        self.header = _combo(HEADER, "Whether the first line holds the column names")
        self.delimiter = _combo(DELIMITERS, "The character between fields")
        self.decimal = _combo(DECIMALS, "The decimal mark of the numbers")
        self.encoding = _combo(ENCODINGS, "The text encoding of the file")
        self.names = QLineEdit()
        self.names.setPlaceholderText("names, separated by commas (optional)")
        self.names.setToolTip("Column names: they name a header-less file's columns instead of "
                              "col1, col2, ... or replace the header line's names")
        self.detected = QLabel("")
        self.detected.setWordWrap(True)
        self.apply_button = QPushButton("Re-read with these options")
        self.apply_button.setToolTip("Read the file again; these choices are remembered for "
                                     "this file")
        self.toggle = QToolButton()
        self.toggle.setText("Reading options")
        self.toggle.setCheckable(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonTextBesideIcon)
        self.toggle.setArrowType(Qt.RightArrow)
        self.toggle.setStyleSheet("QToolButton { border: none; font-weight: bold; }")
        self.toggle.toggled.connect(self._fold)
        self.body = QGroupBox()
        form = QFormLayout(self.body)
        form.addRow("Header", self.header)
        form.addRow("Delimiter", self.delimiter)
        form.addRow("Decimal mark", self.decimal)
        form.addRow("Encoding", self.encoding)
        form.addRow("Column names", self.names)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.apply_button)
        form.addRow(row)
        self.body.setVisible(False)
        top = QHBoxLayout()
        top.addWidget(self.toggle)
        top.addWidget(self.detected, 1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addLayout(top)
        lay.addWidget(self.body)
        self.apply_button.clicked.connect(lambda: self.apply_requested.emit(self.values()))
        self.setEnabled(False)

    def _fold(self, on: bool) -> None:
        self.body.setVisible(on)
        self.toggle.setArrowType(Qt.DownArrow if on else Qt.RightArrow)

    # -- values ---------------------------------------------------------------------------
    def values(self) -> dict:
        """The overrides as read_csv parameters (only those the user set)."""
        out = {}
        for key, combo in self._combos():
            if combo.currentData() is not None:
                out[key] = combo.currentData()
        names = [n.strip() for n in self.names.text().split(",") if n.strip()]
        if names:
            out["names"] = names
        return out

    def _combos(self):
        return (("header", self.header), ("delimiter", self.delimiter),
                ("decimal", self.decimal), ("encoding", self.encoding))

    def set_values(self, values: dict) -> None:
        for key, combo in self._combos():
            i = combo.findData(values.get(key))
            if i < 0 and values.get(key) is not None and key == "encoding":
                combo.addItem(str(values[key]), values[key])
                i = combo.count() - 1
            combo.setCurrentIndex(max(i, 0))
        self.names.setText(", ".join(values.get("names") or ()))

    def show_file(self, path: str, dialect, names) -> None:
        """The file now shown and what was detected (or forced) for it."""
        self.path = os.path.abspath(path)
        self.setEnabled(True)
        parts = []
        if dialect is not None:
            delim = {"\t": "tab", " ": "space"}.get(dialect.delimiter, dialect.delimiter)
            enc = {v: t for t, v in ENCODINGS}.get(dialect.encoding, dialect.encoding)
            parts = [f"delimiter {delim!r}", f"decimal {dialect.decimal!r}", enc,
                     "header line" if dialect.header else "no header line"]
        self.detected.setText("<small>" + ", ".join(parts) + f"; {len(names)} columns"
                              "</small>")

    # -- memory per file --------------------------------------------------------------------
    def _key(self, path: str) -> str:
        return "read_options/" + os.path.abspath(path).replace("/", "|")

    def remembered(self, path: str) -> dict:
        if self.settings is None:
            return {}
        raw = self.settings.value(self._key(path), "")
        try:
            v = json.loads(raw) if isinstance(raw, str) and raw else {}
        except ValueError:
            return {}
        return {k: v[k] for k in KEYS if k in v} if isinstance(v, dict) else {}

    def remember(self, path: str, values: dict) -> None:
        if self.settings is None:
            return
        if values:
            self.settings.setValue(self._key(path), json.dumps(values))
        else:
            self.settings.remove(self._key(path))
