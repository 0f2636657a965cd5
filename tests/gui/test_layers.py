"""The app's imports read one way (docs/ARCHITECTURE.md, "The app"):

    gui.logic (no Qt) < gui.widgets < gui.worker < gui.panels < gui.main_window < gui.app

Built from the source with ``ast``, imports inside functions included and relative imports
resolved (the graph of tests/test_architecture.py, every import kept); imports under ``if
TYPE_CHECKING:`` are annotations and do not count. Checked: gui.logic imports no Qt and no
pyqtgraph; no module of the app imports a private rwtool module (``rwtool._params``,
``rwtool.features._montecarlo``) or a private name from rwtool: the app uses rwtool's public
faces like any other program; a layer imports no higher layer (widgets no panel, panels not the
main window); and each subpackage's ``Must not import:`` line (in its ``__init__`` docstring,
the phrase tests/test_architecture.py reads for rwtool) holds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import test_architecture as arch
from tests.test_architecture import _modules, _must_not, _within

#: the checkout's gui/ (found upwards, so that the test may sit in a folder of tests/)
ROOT = next(p / "gui" for p in Path(__file__).resolve().parents if (p / "gui" / "app.py").is_file())

#: the app's layers, lowest first; a key is a module or a package (its submodules included)
LAYERS = [("gui.logic",), ("gui.widgets",), ("gui.worker",), ("gui.panels",),
          ("gui.main_window",), ("gui.app", "gui")]
QT = ("PySide6", "shiboken6", "pyqtgraph")


def _imports(mods):
    """Every import of the app's modules (tests/test_architecture.py's graph, not only rwtool's)."""
    return arch._imports(mods, roots=None)


def _layer(mod: str) -> int:
    best = None
    for i, keys in enumerate(LAYERS):
        for k in keys:
            if _within(mod, k) and (best is None or len(k) > len(best[1])):
                best = (i, k)
    if best is None:
        raise AssertionError(f"{mod} belongs to no layer of the app: add it to LAYERS in this "
                             f"test and to docs/ARCHITECTURE.md")
    return best[0]


def check_logic_without_qt(root: Path = ROOT) -> list[str]:
    return [f"{s} (line {line}) imports {t}: gui.logic must not import Qt or pyqtgraph"
            for s, t, _, line in _imports(_modules(root))
            if _within(s, "gui.logic") and any(_within(t, q) for q in QT)]


def check_rwtool_public(root: Path = ROOT) -> list[str]:
    bad = []
    for s, t, name, line in _imports(_modules(root)):
        if not _within(t, "rwtool"):
            continue
        private = [p for p in t.split(".") if p.startswith("_") and not p.startswith("__")]
        if private:
            bad.append(f"{s} (line {line}) imports the private module {t}: use its package's "
                       f"public face")
        elif name is not None and name.startswith("_") and not name.startswith("__"):
            bad.append(f"{s} (line {line}) imports the private name {name} of {t}")
    return bad


def check_layers(root: Path = ROOT) -> list[str]:
    mods = _modules(root)
    return [f"{s} (line {line}) imports {t}, a higher layer of the app"
            for s, t, _, line in _imports(mods)
            if _within(t, "gui") and _layer(t) > _layer(s)]


def check_rules(root: Path = ROOT) -> list[str]:
    mods = _modules(root)
    rules = _must_not(mods)
    return [f"{s} (line {line}) imports {t}; {pkg} must not import {b}"
            for s, t, _, line in _imports(mods)
            for pkg, banned in rules.items() if _within(s, pkg)
            for b in banned if _within(t, b)]


def _fail(problems):
    if problems:
        pytest.fail("\n".join(problems))


def test_every_module_of_the_app_has_a_layer():
    for mod in _modules(ROOT):
        _layer(mod)


def test_logic_imports_no_qt():
    _fail(check_logic_without_qt())


def test_the_app_uses_rwtools_public_faces():
    _fail(check_rwtool_public())


def test_app_imports_go_down_the_layers():
    _fail(check_layers())


def test_subpackages_keep_their_must_not_import_rules():
    assert {"gui.logic", "gui.widgets", "gui.panels"} <= set(_must_not(_modules(ROOT)))
    _fail(check_rules())


def test_the_checks_see_each_kind_of_violation(tmp_path):
    """The oracle of the checks: a small app that breaks every rule once, in function bodies
    and through relative imports, as the app's own code would."""
    app = tmp_path / "gui"
    for pkg in ("logic", "widgets", "panels"):
        (app / pkg).mkdir(parents=True)
    (app / "__init__.py").write_text("")
    (app / "logic" / "__init__.py").write_text('"""L.\n\nMust not import: PySide6, '
                                               'gui.widgets\n"""\n')
    (app / "logic" / "rules.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from rwtool._params import P\n"
        "def f():\n    from PySide6.QtCore import Qt\n    from rwtool.features._rkhs import x\n"
        "    from rwtool.report import _private\n")
    (app / "widgets" / "__init__.py").write_text("")
    (app / "widgets" / "plot.py").write_text("from ..panels.data import Panel\n")
    (app / "panels" / "__init__.py").write_text("")
    (app / "panels" / "data.py").write_text("from ..logic import rules\nfrom .. import "
                                            "main_window\n")
    (app / "main_window.py").write_text("from .panels.data import Panel\n")
    assert check_logic_without_qt(app) == [
        "gui.logic.rules (line 5) imports PySide6.QtCore: gui.logic must not import Qt or "
        "pyqtgraph"]
    assert [p.split(" imports ")[0] + " " + p.split(" ")[-1]
            for p in check_rwtool_public(app)] == ["gui.logic.rules (line 6) face",
                                                   "gui.logic.rules (line 7) rwtool.report"]
    # importing gui.panels.data runs gui/panels/__init__.py first: both count
    assert sorted(check_layers(app)) == [
        "gui.panels.data (line 2) imports gui.main_window, a higher layer of the app",
        "gui.widgets.plot (line 1) imports gui.panels, a higher layer of the app",
        "gui.widgets.plot (line 1) imports gui.panels.data, a higher layer of the app"]
    assert check_rules(app) == ["gui.logic.rules (line 5) imports PySide6.QtCore; gui.logic "
                                "must not import PySide6"]
