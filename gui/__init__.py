"""rwtool's desktop app (PySide6 + pyqtgraph): load a CSV, choose a method, train live, export.

Run it with ``rwtool-gui`` or ``python -m gui.app``. The package imports rwtool's public faces
and drives the same calls a script makes; rwtool never imports it. It is in layers, each
importing only those below: ``logic/`` (no Qt: methods and their forms' rules, evaluation plans,
scores, checks before a fit, runs, exports), ``widgets/`` (Qt widgets and pyqtgraph plots, drawn
on the GUI thread only), ``worker.py`` (the single worker thread, and the process the fits run in), ``panels/`` (data,
method, evaluation, training, results, run list), then ``main_window.py`` and ``app.py``
(tests/gui/test_layers.py checks it).
"""

__all__ = ["main"]


def main(argv=None) -> int:
    """Start the app (see :func:`gui.app.main`)."""
    from .app import main as _main
    return _main(argv)
