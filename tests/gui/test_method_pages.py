"""The method form is built once per estimator class and kept (issue 24, "Responsiveness under
load": rebuilding it on each choice of a method was a 7-25 ms turn of the GUI thread).

Switching to a method whose page exists creates no widget and shows the values it had; a method
chosen first shows its defaults. Oracles: the estimator class's own defaults (``cls()``'s
``get_params``, random_state 0 as the app starts it) and the values read before the switch.
Nothing here measures time.
"""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtWidgets import QWidget  # noqa: E402

from gui.app import create_app  # noqa: E402
from gui.panels.method_panel import MethodPanel  # noqa: E402
from rwtool.report import METHODS  # noqa: E402


@pytest.fixture
def panel(qtbot):
    create_app()
    p = MethodPanel()
    qtbot.addWidget(p)
    p.show()
    return p


def _widgets(panel) -> int:
    return len(panel.findChildren(QWidget))


def _wait_built(qtbot, panel):
    qtbot.waitUntil(lambda: not panel._page_steps.busy, timeout=30_000)


@pytest.mark.parametrize("task", ["binary", "regression"])
def test_a_method_chosen_first_shows_its_classs_defaults(qtbot, panel, task):
    """Chosen before its page was built in the background and after: the defaults."""
    panel.set_task(task)
    for fam in METHODS.values():
        cls = fam.estimator_class(task)
        if cls is None:
            continue
        panel.set_method(fam.key)
        assert panel.estimator_class() is cls
        expected = cls(random_state=0).get_params()
        assert panel.make_estimator().get_params() == expected, fam.key
        assert panel.error_label.text() == ""


def test_switching_back_creates_no_widget_and_keeps_the_typed_values(qtbot, panel):
    _wait_built(qtbot, panel)
    panel.set_method("rw")
    panel.field_widget("n_features").setText("123")
    panel.field_widget("reg").setText("0.25")
    rw_params = panel.params()
    rw_editor = panel.field_widget("n_features")
    builds = {cls: page.builds for cls, page in panel._pages.items()}
    n = _widgets(panel)
    for key in ("rks", "bkernn", "rw", "greedy", "rw"):
        panel.set_method(key)
        assert _widgets(panel) == n, key
    assert {cls: page.builds for cls, page in panel._pages.items()} == builds
    assert panel.field_widget("n_features") is rw_editor
    assert panel.field_widget("n_features").text() == "123"
    assert panel.params() == rw_params
    assert panel.params()["n_features"] == 123 and panel.params()["reg"] == 0.25
    # the other method's page untouched by rw's values, its own defaults
    panel.set_method("rks")
    cls = panel.estimator_class()
    assert panel.make_estimator().get_params() == cls(random_state=0).get_params()


def test_every_page_is_built_once_in_the_background(qtbot, panel):
    _wait_built(qtbot, panel)
    classes = {f.estimator_class("binary") for f in METHODS.values()} - {None}
    assert set(panel._pages) == classes
    for page in panel._pages.values():
        assert page.complete and page.builds == len(page.specs)
    n = _widgets(panel)
    for fam in METHODS.values():
        panel.set_method(fam.key)
    assert _widgets(panel) == n


def test_text_that_does_not_parse_is_kept_and_still_refused(qtbot, panel):
    panel.set_method("rw")
    panel.field_widget("n_features").setText("abc")
    assert "n_features" in panel.error_label.text()
    panel.set_method("rks")
    assert "n_features" not in panel.error_label.text()
    panel.set_method("rw")
    assert panel.field_widget("n_features").text() == "abc"
    assert "n_features must be an integer" in panel.error_label.text()
    with pytest.raises(ValueError, match="n_features"):
        panel.make_estimator()


def test_a_method_keeps_its_values_across_the_task(qtbot, panel):
    """The same family's page of the other task starts from the values typed (as before the
    pages were kept), and a cleared random_state stays cleared."""
    panel.set_method("rw")
    panel.field_widget("n_features").setText("77")
    panel.field_widget("random_state").setText("")
    panel.set_task("regression")
    assert panel.estimator_class() is METHODS["rw"].estimator_class("regression")
    assert panel.params()["n_features"] == 77 and panel.params()["random_state"] is None
    panel.field_widget("n_features").setText("88")
    panel.set_task("binary")
    assert panel.params()["n_features"] == 88 and panel.params()["random_state"] is None


def test_only_the_chosen_page_is_shown(qtbot, panel):
    _wait_built(qtbot, panel)
    for fam in METHODS.values():
        panel.set_method(fam.key)
        shown = [p for p in panel._pages.values() if p.main.isVisible()]
        assert [p.cls for p in shown] == [panel.estimator_class()]
        panel.advanced_toggle.setChecked(True)
        assert [p.cls for p in panel._pages.values() if p.advanced.isVisible()] == \
            [panel.estimator_class()]
        panel.advanced_toggle.setChecked(False)
