"""What pip installs: every package of rwtool and of the app, the app as rwtool_gui.

pyproject.toml lists the packages by hand (gui/ is mapped to rwtool_gui, which packages.find
cannot do), so a new subpackage missing from the list would be left out of every wheel without
an error; this test compares the list with the folders that hold an ``__init__.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")


def _config():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _on_disk(folder: str, name: str) -> set[str]:
    return {".".join((name,) + p.parent.relative_to(ROOT / folder).parts)
            for p in (ROOT / folder).rglob("__init__.py") if "__pycache__" not in p.parts}


def test_every_package_is_listed_for_the_wheel():
    st = _config()["tool"]["setuptools"]
    assert st["package-dir"] == {"rwtool_gui": "gui"}
    assert set(st["packages"]) == _on_disk("rwtool", "rwtool") | _on_disk("gui", "rwtool_gui")


def test_the_app_installs_under_a_name_of_its_own():
    """No top-level "gui" package: the entry point and every listed package use rwtool_gui."""
    cfg = _config()
    assert cfg["project"]["gui-scripts"] == {"rwtool-gui": "rwtool_gui.app:main"}
    assert not [p for p in cfg["tool"]["setuptools"]["packages"]
                if p == "gui" or p.startswith("gui.")]
    module, _, func = cfg["project"]["gui-scripts"]["rwtool-gui"].partition(":")
    assert (ROOT / "gui" / (module.split(".", 1)[1] + ".py")).is_file()
    assert f"def {func}(" in (ROOT / "gui" / "app.py").read_text()
