"""The window's panels: data (data_panel), method form (method_panel), evaluation plan
(evaluation_panel), training (training_panel), results (results_panel), the run list
(run_list) and the export actions (export_actions).

They import gui.widgets, gui.logic and gui.worker; the main window wires them together, so
they do not import it.

Must not import: gui.main_window, gui.app
"""
