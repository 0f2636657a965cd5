"""Every module of rwtool and gui imports: the quick subset (``-m "not slow"``, docs/TESTING.md)
runs this file, so it touches every module even where only slow tests exercise one."""

import importlib
import os
import pkgutil
import sys

import pytest

import gui
import rwtool


def _modules():
    names = set()
    for pkg in (rwtool, gui):
        names.add(pkg.__name__)
        names.update(info.name for info in pkgutil.walk_packages(pkg.__path__,
                                                                 pkg.__name__ + "."))
    return sorted(names)


MODULES = _modules()


def test_the_walk_finds_the_packages_modules():
    assert {"rwtool.cli", "rwtool.persist", "gui.app"} <= set(MODULES) and len(MODULES) > 50


@pytest.mark.parametrize("name", [m for m in MODULES if not m.endswith(".__main__")])
def test_module_imports(name):
    assert importlib.import_module(name).__name__ == name


@pytest.mark.parametrize("name", [m for m in MODULES if m.endswith(".__main__")])
def test_main_module_runs_the_command_line(name, monkeypatch, capsys):
    """``python -m`` modules run their command on import: ``--help`` exits 0 and prints usage.

    The command ends its process with ``os._exit`` after running the atexit handlers
    (rwtool.cli.exit_process): here it raises SystemExit instead, or it would end pytest."""
    import rwtool.cli

    def exit_here(code):
        raise SystemExit(int(code))
    monkeypatch.setattr(rwtool.cli, "exit_process", exit_here)
    monkeypatch.setattr(os, "_exit", exit_here)
    monkeypatch.setattr(sys, "argv", [name.rsplit(".", 1)[0], "--help"])
    monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.raises(SystemExit) as exit_:
        importlib.import_module(name)
    assert exit_.value.code == 0 and "usage" in capsys.readouterr().out.lower()


@pytest.mark.slow
def test_import_and_help_leave_pyarrow_and_pandas_unloaded():
    # pyarrow is imported on the first read (about 0.2-0.4 s), and pandas, which pa.array
    # imports, never by rwtool itself: importing rwtool and `rwtool --help` load neither
    import subprocess
    code = ("import contextlib, io, sys, rwtool, rwtool.cli\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        rwtool.cli.main(['--help'])\n"
            "    except SystemExit:\n        pass\n"
            "print(sorted(m for m in ('pyarrow', 'pandas') if m in sys.modules))\n"
            "import rwtool.data._read as R\n"
            "R.type_cells(['1', 'x'], '.', frozenset(), True, lambda t: R.np.arange(len(t)))\n"
            "print('pyarrow' in sys.modules)\n")
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["[]", "True"], r.stdout
