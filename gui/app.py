"""Entry point of the desktop app: ``rwtool-gui [file.csv | model.rwm]`` (gui.app:main).

Creates the QApplication, configures pyqtgraph, shows the main window at a size that fits the
screen and opens a file given on the command line. The numba warm-up starts in the background
from the window, so the window is usable at once.
"""

from __future__ import annotations

import argparse
import os
import sys

# Leave a core to the window, as the training thread does for numba (worker.py): OpenBLAS's
# threads, set before numpy loads, otherwise take every core during a fit and Qt's painting
# waits behind them. An explicit OPENBLAS_NUM_THREADS wins.
_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 2)
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(max(1, _CORES - 1)))

__all__ = ["main", "create_app", "guard_singleton_refcounts", "SWITCH_INTERVAL"]

#: seconds a thread holding the interpreter lock keeps it while another waits (see create_app)
SWITCH_INTERVAL = 0.001


_GUARDED: bool | None = None


def guard_singleton_refcounts() -> bool:
    """Work around a reference-count bug of PySide6 6.12.0 on CPython < 3.12; True if needed.

    That PySide6 returns a borrowed ``True`` from every Python-side ``Signal.emit()`` and drops a
    reference to ``None`` on every C++ signal delivered to a Python slot. On CPython 3.12+ these
    singletons are immortal and nothing happens; on 3.11 their counts fall by one per signal and
    the interpreter aborts ("deallocating None") after a few ten thousand signals, in the middle
    of a session or at exit. The bug is probed, and only when it shows, the counts of None, True
    and False get a margin of 2^40 (never reached), so they can no longer drop to zero.
    """
    import ctypes
    import platform

    from PySide6.QtCore import QObject, Signal

    global _GUARDED
    if _GUARDED is not None:
        return _GUARDED
    if sys.version_info >= (3, 12) or platform.python_implementation() != "CPython":
        _GUARDED = False
        return False

    class _Probe(QObject):
        ping = Signal()

    probe = _Probe()
    probe.objectNameChanged.connect(lambda name: None)
    t0, n0 = sys.getrefcount(True), sys.getrefcount(None)
    for i in range(16):
        probe.ping.emit()
        probe.setObjectName(f"probe{i}")
    leaks = sys.getrefcount(True) < t0 - 8 or sys.getrefcount(None) < n0 - 8
    if leaks:
        for obj in (None, True, False):
            ctypes.c_ssize_t.from_address(id(obj)).value += 1 << 40
    _GUARDED = leaks
    return leaks


def create_app(argv=None):
    """The QApplication (created once) with the app's names and style."""
    from PySide6.QtWidgets import QApplication

    from .widgets.plots import configure
    guard_singleton_refcounts()
    # While the training thread runs Python between its compiled calls, every call from Qt's
    # painting back into Python (each item's paint and bounding box) waits for the interpreter
    # lock for up to the switch interval: 5 ms by default, several per repaint (docs/bench/gui.md)
    sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL))
    app = QApplication.instance()
    if app is None:
        app = QApplication(list(argv) if argv is not None else [sys.argv[0]])
    app.setApplicationName("rwtool-gui")
    app.setOrganizationName("rwtool")
    app.setApplicationDisplayName("rwtool")
    app.setStyle("Fusion")     # the same look on every platform (and in the screenshots)
    configure()
    return app


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="rwtool-gui",
                                     description="rwtool's desktop app: train random-feature "
                                                 "models on a CSV file with live plots.")
    parser.add_argument("file", nargs="?", help="a CSV file or a saved model (.rwm) to open")
    parser.add_argument("--target", help="target column of the CSV file")
    parser.add_argument("--no-warm-up", action="store_true",
                        help="do not prepare the numba kernels in the background at start")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    app = create_app()
    from .main_window import MainWindow
    win = MainWindow(warm_up=not args.no_warm_up)
    screen = app.primaryScreen().availableGeometry() if app.primaryScreen() else None
    if screen is not None:
        win.resize(min(1400, int(screen.width() * 0.92)), min(900, int(screen.height() * 0.92)))
    else:
        win.resize(1280, 800)
    sys.excepthook = win.report_unexpected
    app.aboutToQuit.connect(win.worker.shutdown)
    win.show()
    if args.file:
        win.open_path(os.path.abspath(args.file), args.target)
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
