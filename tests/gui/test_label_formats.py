"""Every label that shows a name or a message the user's data brings (a CSV column, a file name,
an error message) states its text format, and shows the name once, as written.

A label left at Qt's AutoText guesses: an escaped text with no tag is shown as plain text
("fit&#x27;s", "R&amp;D"), and a raw name that looks like a tag ("<x>") is taken for rich
text and vanishes. Oracle: the label's text rendered the way its own format says
(QTextDocument.setHtml for rich text, the text itself for plain text), never the escaping
code under test.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QTextDocument  # noqa: E402
from PySide6 import QtGui  # noqa: E402

from tests.gui.test_main_window import (TIMEOUT, choose, load, train,  # noqa: E402,F401
                                        window, write_csv)

#: a column's name with every character html escapes
COLUMN = "R&D <x> 'q'"
#: a file's name likewise (another name, so that each is counted on its own)
FILE = "F&G <y> 'f'.csv"


def shown(label) -> str:
    """What ``label`` shows, by the format it states (AutoText would be a guess)."""
    fmt = label.textFormat()
    assert fmt in (Qt.RichText, Qt.PlainText), (label.objectName(), fmt)
    if fmt == Qt.PlainText:
        return label.text()
    return rich(label.text())


def rich(text: str) -> str:
    doc = QTextDocument()
    doc.setHtml(text)
    return doc.toPlainText()


def _csv(folder):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 2))
    rows = [[f"{a:.4f}", f"{b:.4f}", "yes" if a + b > 0 else "no"] for a, b in X]
    return write_csv(folder / FILE, ["x1", "x2", COLUMN], rows)


def test_a_file_and_a_column_named_with_html_characters(qtbot, window, tmp_path):
    path = _csv(tmp_path)
    window.open_path(path, COLUMN)
    # the read runs aside: until its outcome is handled on this thread, the status reads
    status = window.data_panel.status_label
    assert shown(status).count(FILE) == 1, shown(status)
    load(qtbot, window, path, COLUMN)
    assert window.data_panel.target() == COLUMN
    file_label = window.data_panel.file_label
    assert shown(file_label).count(FILE) == 1, shown(file_label)
    choose(window, "rw", n_features=20, random_state=0)
    run = train(qtbot, window)
    assert run.status == "done", run.note
    table = window.run_list.table
    tips = [table.item(0, c).toolTip() for c in range(table.columnCount())
            if table.item(0, c) is not None and table.item(0, c).toolTip()]
    assert tips
    for tip in tips:
        # a tooltip has no format of its own: Qt takes it for rich text when it looks like it
        assert QtGui.Qt.mightBeRichText(tip)
        text = rich(tip)
        assert text.count(FILE) == 1 and text.count(COLUMN) == 1, text
    title = window.results_panel.metrics_view.title
    assert shown(title).startswith(run.name), shown(title)


def test_an_error_message_with_html_characters(qtbot, window, tmp_path, monkeypatch):
    path = _csv(tmp_path)
    load(qtbot, window, path, COLUMN)
    message = f"column {COLUMN} cannot be read"

    def fails(*args, **kwargs):
        raise ValueError(message)
    import gui.panels.data_panel as data_panel
    monkeypatch.setattr(data_panel, "encode", fails)
    status = window.data_panel.status_label
    window.data_panel._encode()
    qtbot.waitUntil(lambda: "Cannot encode" in shown(status), timeout=TIMEOUT)
    assert shown(status).count(COLUMN) == 1, shown(status)
    # the other places an error message goes: the banner, the prune view, the Importance tab
    window.show_error(message)
    assert shown(window.banner.label).count(COLUMN) == 1, shown(window.banner.label)
    rp = window.results_panel
    rp.show_prune_error(message)
    assert shown(rp.prune_view.result).count(COLUMN) == 1, shown(rp.prune_view.result)
    view = rp.importance_view
    view.stopped(message, False, False)
    assert shown(view.info).count(COLUMN) == 1, shown(view.info)


def test_the_evaluation_notes_show_a_reason_once(qtbot, monkeypatch):
    """The Evaluation tab's notes (rich text: <small>) escape a reason that names a column."""
    from rwtool import RWClassifier

    import gui.panels.evaluation_panel as evaluation_panel
    from gui.app import create_app
    create_app()
    reason = f"no search space for the column {COLUMN}"

    def no_space(est):
        raise ValueError(reason)
    monkeypatch.setattr(evaluation_panel, "search_space", no_space)
    monkeypatch.setattr(evaluation_panel, "weights_supported", lambda est: reason)
    ep = evaluation_panel.EvaluationPanel()
    qtbot.addWidget(ep)
    ep.update_for(RWClassifier(), "binary")
    assert not ep.tune.isEnabled()
    for label in (ep.tune_note, ep.weight_note):
        assert shown(label).count(COLUMN) == 1, shown(label)
