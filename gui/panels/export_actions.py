"""The export actions of the main window: save the model, its ONNX graph, the predictions, the
runs table, a plot or the Python snippet of the selected run.

A mixin of gui.main_window.MainWindow (it uses the window's run list, banner and dialogs), kept
apart so that the window's own module stays about wiring. The file formats live in gui.logic.export
and gui.logic.runs_table; nothing here fits or predicts. """

from __future__ import annotations

from ..logic import export
from ..logic.runs_table import Run
from ..widgets.dialogs import SnippetDialog
from ..widgets.plots import export_plot

__all__ = ["ExportActions"]

MODEL_SUFFIX = ".rwm"


class ExportActions:
    def _need_run(self) -> Run | None:
        run = self._selected_model_run()
        if run is None:
            self.show_error("Select a trained run first (Runs tab).")
        return run

    def _model_file_dialog(self, title: str, filters: str, suffix: str, write) -> None:
        """Ask where to write the selected run's model as a ``suffix`` file, then ``write``."""
        run = self._need_run()
        if run is None:
            return
        path = self._ask_save(title, filters, f"run{run.run_id}{suffix}")
        if path:
            if not path.lower().endswith(suffix):
                path += suffix
            write(path, run)

    def _write_model_file(self, path, run, write, failed: str, done: str) -> bool:
        """``write(run, path, preprocessing)`` with its errors shown; the info line says
        ``done`` (its ``{name}``: the run's) and the temporaries of killed writes it removed
        first."""
        run = run or self._need_run()
        if run is None:
            return False
        try:
            saved = write(run, path, run.data.get("preprocessing"))
        except ImportError as exc:          # an optional package (onnx) is missing
            self.show_error(str(exc))
            return False
        except (ValueError, TypeError, OSError) as exc:
            self.show_error(f"{failed}: {exc}")
            return False
        note = getattr(saved, "note", None)
        self.show_info(f"{done.format(name=run.name)} to {path}" + (f"; {note}" if note else ""))
        return True

    def save_model_dialog(self) -> None:
        self._model_file_dialog("Save model", "rwtool models (*.rwm)", MODEL_SUFFIX,
                                self.save_model)

    def save_model(self, path: str, run: Run | None = None) -> bool:
        return self._write_model_file(path, run, export.save_model, "Cannot save the model",
                                      "Saved {name}")

    def export_onnx_dialog(self) -> None:
        self._model_file_dialog("Export ONNX graph", "ONNX graphs (*.onnx)", ".onnx",
                                self.export_onnx)

    def export_onnx(self, path: str, run: Run | None = None) -> bool:
        return self._write_model_file(path, run, export.export_onnx,
                                      "Cannot export the ONNX graph",
                                      "Exported {name} as an ONNX graph")

    def export_predictions_dialog(self) -> None:
        run = self._need_run()
        if run is None:
            return
        path = self._ask_save("Export predictions", "CSV files (*.csv)",
                              f"run{run.run_id}-predictions.csv")
        if path:
            self.export_predictions(path, run)

    def export_predictions(self, path: str, run: Run | None = None) -> bool:
        run = run or self._need_run()
        if run is None:
            return False
        cols = export.run_predictions(run, run.data.get("train_rows"),
                                      run.data.get("test_rows"))
        if not cols["set"]:
            self.show_error(f"{run.name} has no predictions to export (a loaded model: use "
                            f"File > Apply Model to CSV).")
            return False
        try:
            export.write_predictions(path, cols)
        except (ValueError, OSError) as exc:
            self.show_error(f"Cannot write {path}: {exc}")
            return False
        self.show_info(f"Wrote {len(cols['set'])} predictions to {path}")
        return True

    def export_runs_dialog(self) -> None:
        if not self.run_list.runs:
            self.show_error("No runs to export yet.")
            return
        path = self._ask_save("Export the runs table", "CSV files (*.csv)", "runs.csv")
        if path:
            self.export_runs(path if path.lower().endswith(".csv") else path + ".csv")

    def export_runs(self, path: str) -> bool:
        try:
            self.run_list.export_csv(path)
        except (ValueError, OSError) as exc:
            self.show_error(f"Cannot write {path}: {exc}")
            return False
        self.show_info(f"Wrote {len(self.run_list.runs)} runs to {path}")
        return True

    def visible_plot(self):
        self.settle()           # the plots drawn a step at a time, complete
        w = self.right_tabs.currentWidget()
        if w is self.results_panel:
            return self.results_panel.current_plot()
        if w is self.training_panel.curves:
            return self.training_panel.board.first_plot()
        if w is self.run_list:
            return self.run_list.compare_plot
        return None

    def export_plot_dialog(self) -> None:
        plot = self.visible_plot()
        if plot is None:
            self.show_error("Show a plot first (Training, Results or Runs tab).")
            return
        name = (plot.plot_title or "plot").split("(")[0].strip().lower().replace(" ", "-")
        path = self._ask_save("Export plot", "PNG image (*.png);;SVG vector image (*.svg)",
                              f"{name}.png")
        if path:
            self.export_plot(path, plot)

    def export_plot(self, path: str, plot=None) -> bool:
        plot = plot or self.visible_plot()
        if plot is None:
            self.show_error("Show a plot first (Training, Results or Runs tab).")
            return False
        if not path.lower().endswith((".png", ".svg")):
            path += ".png"
        if callable(getattr(plot, "flush", None)):
            plot.flush()    # a live plot's last points may still wait for its timer
        try:
            export_plot(plot, path)
        except (ValueError, OSError, RuntimeError) as exc:
            self.show_error(f"Cannot export the plot: {exc}")
            return False
        self.show_info(f"Saved the plot to {path}")
        return True

    def snippet(self, run: Run | None = None) -> str | None:
        run = run or self._need_run()
        if run is None:
            return None
        # every estimator class is exported by rwtool's public face
        return export.python_snippet(run, "rwtool")

    def show_snippet(self) -> None:
        text = self.snippet()
        if text is None:
            return
        dlg = SnippetDialog(self, text)
        dlg.open()

