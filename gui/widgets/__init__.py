"""Qt widgets and plots the panels are built of: pyqtgraph plots (plots, curve_board), the
reading options form (read_options), the banner, welcome page and dialogs (dialogs), the
training panel's phase line (phase_line), and the queue that spreads the window's drawing
over short steps (steps).

They import Qt, pyqtgraph and gui.logic; they know no panel and no window.

Must not import: gui.panels, gui.main_window, gui.app, gui.worker
"""
