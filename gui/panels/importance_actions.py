"""The permutation importance of the shown run: start it on the worker, follow it, save it.

A mixin of gui.main_window.MainWindow (it uses the window's worker, run list, results panel and
dialogs), as gui.panels.export_actions is. The measurement is gui.logic.importance.measure on
the run's own held-out rows (the arrays the run was trained and scored with, shared with the
data tab, never copied), its training rows when it held none out; a model opened from a file
has no rows and shows only the share it holds. The measurement runs in the fit process, as the
fits do (the model of a run trained in this session is already there). Progress goes to the
Importance tab's bar and its Cancel stops the measurement between two scores, leaving the run
as it was.
"""

from __future__ import annotations

from ..logic import export
from ..logic.importance import importance_columns, measure
from ..logic.runs_table import Run
from ..worker import CallJob

__all__ = ["ImportanceActions", "IMPORTANCE_JOB"]

#: the progress id of the importance job (runs have positive ids, prune jobs negative ones)
IMPORTANCE_JOB = 0


class ImportanceActions:
    _importance_run: int | None = None

    def importance_rows(self, run: Run | None):
        """``(X, y, on)``: the rows the run's importance is measured on, or None with why."""
        if run is None or run.result is None or run.result.get("estimator") is None:
            return None, "Select a trained run first."
        rows = run.rows or {}
        test, train = rows.get("test"), rows.get("train")
        if test is not None and len(test.y):
            return (test.X, test.y, "test"), ""
        if train is not None and len(train.y):
            return (train.X, train.y, "training"), ""
        return None, ("A model opened from a file has no rows to measure on: apply it to a "
                      "labelled CSV, or train it in this session.")

    def importance_available(self, run: Run | None) -> tuple[bool, str]:
        rows, why = self.importance_rows(run)
        return rows is not None, why

    def compute_importance(self) -> None:
        self.settle()               # the run the queued drawing steps show
        run = self.current_run
        rows, why = self.importance_rows(run)
        view = self.results_panel.importance_view
        if rows is None:
            view.stopped(why, False, False)
            return
        if self._importance_run is not None:
            return
        X, y, on = rows
        self._importance_run = run.run_id
        view.started(f"{len(y):,} {on} rows of {run.name}")
        self.worker.submit(CallJob("importance", measure,
                                   (run.result["estimator"], X, y,
                                    run.data.get("preprocessing")), {"on": on},
                                   progress_id=IMPORTANCE_JOB, in_process=True))

    def cancel_importance(self) -> None:
        if self._importance_run is not None:
            self.worker.cancel()
            self.results_panel.importance_view.cancelling()

    def _importance_progress(self, ev: dict) -> None:
        run = self.run_list.runs.get(self._importance_run)
        if run is not None and run is self.current_run:
            self.results_panel.importance_view.on_progress(ev)

    def _importance_done(self, imp) -> None:
        run = self.run_list.runs.get(self._importance_run)
        self._importance_run = None
        if run is None or run.result is None:
            return
        run.result["permutation"] = imp
        self._importance_idle("")
        if run is self.current_run:
            # the permutation plot alone (the model's share has not changed), a step after
            # this turn: both drawn and painted in the outcome's turn were 12-27 ms of the
            # GUI thread (bench_gui_load --record-turns)
            self.results_panel.draw_permutation(run.result, *self.importance_available(run))
        self.statusBar().showMessage(f"Permutation importance of {run.name} measured.", 5000)

    def _importance_failed(self, err: dict) -> None:
        self._importance_run = None
        if err.get("kind") == "cancelled":
            self._importance_idle("Cancelled: the run is unchanged.")
        else:
            self._importance_idle(f"The permutation importance failed: {err['message']}")

    def _importance_idle(self, message: str) -> None:
        """The Importance tab's controls back at rest, for the run shown now."""
        run = self.current_run
        ok, _ = self.importance_available(run)
        has = run is not None and run.result is not None and "permutation" in run.result
        self.results_panel.importance_view.stopped(message, ok, has)

    def save_importance_dialog(self) -> None:
        run = self.current_run
        if run is None or run.result is None or "permutation" not in run.result:
            self.show_error("Compute the permutation importance of the run first (Results > "
                            "Importance).")
            return
        path = self._ask_save("Save the importance", "CSV files (*.csv)",
                              f"run{run.run_id}-importance.csv")
        if path:
            self.save_importance(path if path.lower().endswith(".csv") else path + ".csv", run)

    def save_importance(self, path: str, run: Run | None = None) -> bool:
        run = run or self.current_run
        imp = (run.result or {}).get("permutation") if run is not None else None
        if imp is None:
            self.show_error("Compute the permutation importance of the run first.")
            return False
        try:
            export.write_predictions(path, importance_columns(imp))
        except (ValueError, OSError) as exc:
            self.show_error(f"Cannot write {path}: {exc}")
            return False
        self.show_info(f"Wrote the importance of {len(imp['columns'])} columns to {path}")
        return True
