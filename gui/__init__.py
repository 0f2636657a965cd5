"""rwtool's desktop app (PySide6 + pyqtgraph): load a CSV, choose a method, train live, export.

Run it with ``rwtool-gui`` or ``python -m gui.app``. The package imports rwtool and drives the
same public calls a script makes; rwtool never imports it. Widgets are small and separate
(data_panel, method_panel, training_panel, results_panel, run_list), the fits run on the single
thread of worker.py, plots are drawn by plots.py on the GUI thread only.
"""

__all__ = ["main"]


def main(argv=None) -> int:
    """Start the app (see :func:`gui.app.main`)."""
    from .app import main as _main
    return _main(argv)
