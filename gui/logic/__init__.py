"""The app's logic without Qt: what the app computes, decides and writes, testable without
a display.

The methods and their parameter forms (methods, custom_instantiation, method_rules), evaluation
plans and their scores (plans, evaluate), the worker's jobs and the fit process's loop (jobs),
the checks before a fit (preflight), the runs as rows (runs_table) and numbers as text
(formats), exports without plotting (export), the reading options (read_options), what the Data tab
reads and where (reading), the columns
left unticked by default (column_roles) and the words of the fixes (terms). It imports rwtool
only through its public faces (``rwtool``, ``rwtool.report``, ``rwtool.data``, ...), never a private
``rwtool.<package>._module``.

Must not import: PySide6, pyqtgraph, gui.widgets, gui.panels, gui.main_window, gui.app,
    gui.worker
"""
