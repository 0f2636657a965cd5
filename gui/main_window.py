"""The main window: menus, toolbar, drag and drop, and the wiring between the panels.

Left: the data panel and the method panel; right: the training controls above the tabs of the
data preview, the live curves, the results and the run list. Every action that can fail shows
its error in the banner at the top of the window, and a failure never replaces the data, runs or
results already there. Numerical work goes to the single worker thread (gui.worker), the fits
in a process of their own (``fit_process=False`` keeps them on that thread).
"""

from __future__ import annotations

import gc
import html
import inspect
import os
import traceback
from pathlib import Path

import numpy as np
from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (QFileDialog, QMainWindow, QMessageBox, QSplitter, QStackedWidget,
                               QStyle, QTabWidget, QToolBar, QVBoxLayout, QWidget)

import rwtool
from rwtool.report import METHODS, available_samples, bound_meanings, method_of

from .logic.evaluate import COUNT_METRICS, merge_bounds
from .logic.plans import supports
from .logic.predict_file import apply_file
from .logic.preflight import many_classes, preflight
from .logic.runs_table import Run
from .panels.data_panel import DataPanel, PreviewTable
from .panels.evaluation_panel import EvaluationPanel
from .panels.export_actions import ExportActions
from .panels.importance_actions import IMPORTANCE_JOB, ImportanceActions
from .panels.method_panel import MethodPanel
from .panels.results_panel import ResultsPanel
from .panels.run_list import RunList
from .panels.training_panel import TrainingPanel, curve_x, split_metrics
from .widgets.dialogs import Banner, PredictionsDialog, Welcome
from .widgets.prepaint import settle_layouts
from .widgets.steps import Steps
from .worker import (CANCELLED, BoundsJob, CallJob, LoadProbe, PruneJob, TrainJob,
                     WorkerController)

__all__ = ["MainWindow"]

MAX_RECENT = 8
#: milliseconds after the window is built when its start's objects leave the collector's passes
#: (gc.freeze): the warm-up's first steps and the board's plots are built by then
FREEZE_MS = 2000
CSV_SUFFIXES = (".csv", ".tsv", ".txt", ".data")
MODEL_SUFFIX = ".rwm"
#: the job id of "Apply Model to CSV" in progress events (run ids start at 1, the
#: importance job is 0, prune jobs count down from -2)
APPLY_ID = -1


class MainWindow(ExportActions, ImportanceActions, QMainWindow):
    """The rwtool desktop app."""

    run_finished = Signal(int)      # run id, after its results are shown (tests, scripts)

    def __init__(self, settings: QSettings | None = None, warm_up: bool = True,
                 fit_process: bool = True):
        super().__init__()
        # Qt appends the application's display name ("rwtool") to the title itself
        self.setWindowTitle("")
        self.setAcceptDrops(True)
        self.settings = settings if settings is not None else QSettings("rwtool", "rwtool-gui")
        self.worker = WorkerController(self, processes=fit_process)
        self._steps = Steps(self)           # the window's drawing, a step at a time
        # the machine's load for the estimates, counted aside (in the fit process)
        self.load_probe = LoadProbe(runner=self.worker.read)
        self.families = list(METHODS.values())
        self._next_id = 1
        self.current_run: Run | None = None
        self.training_run: Run | None = None
        self._prune_jobs: dict[int, int] = {}       # prune job id -> base run id
        self._prune_seq = 0
        self._pruned: dict | None = None
        self._bar_job: int | None = None            # a job other than a fit the bar follows
        self._bounds_jobs: dict[int, Run] = {}      # run id -> run whose bounds are computed
        self.loaded_model = None                    # rwtool.persist.ModelFile
        self.last_applied: dict | None = None
        self.data_info: dict | None = None

        self.banner = Banner()
        # the file's reads in another process: rwtool's reader held the GUI thread's
        # interpreter lock for 200-370 ms at a time
        self.data_panel = DataPanel(settings=self.settings, reader=self.worker.read)
        self.method_panel = MethodPanel()
        self.eval_panel = EvaluationPanel()
        self.training_panel = TrainingPanel()
        self.results_panel = ResultsPanel()
        self.run_list = RunList()
        self.preview_table = PreviewTable()

        self.left_tabs = QTabWidget()
        self.left_tabs.addTab(self.data_panel, "1  Data")
        self.left_tabs.addTab(self.method_panel, "2  Method")
        self.left_tabs.addTab(self.eval_panel, "3  Evaluate")
        self.welcome = Welcome(self)
        self.preview_stack = QStackedWidget()
        self.preview_stack.addWidget(self.welcome)
        self.preview_stack.addWidget(self.preview_table)
        self.right_tabs = QTabWidget()
        self.right_tabs.addTab(self.preview_stack, "Data preview")
        self.right_tabs.addTab(self.training_panel.curves, "Training")
        self.right_tabs.addTab(self.results_panel, "Results")
        self.right_tabs.addTab(self.run_list, "Runs")
        # a page shown is laid out before its first paint (gui.widgets.prepaint)
        self.right_tabs.currentChanged.connect(lambda _: settle_layouts())
        right = QWidget()
        rv = QVBoxLayout(right)
        rv.setContentsMargins(0, 0, 0, 0)
        rv.addWidget(self.training_panel)
        rv.addWidget(self.right_tabs, 1)
        self.splitter = QSplitter(Qt.Horizontal)
        self.splitter.addWidget(self.left_tabs)
        self.splitter.addWidget(right)
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 1)
        central = QWidget()
        cv = QVBoxLayout(central)
        cv.setContentsMargins(6, 6, 6, 6)
        cv.addWidget(self.banner)
        cv.addWidget(self.splitter, 1)
        self.setCentralWidget(central)
        self._build_actions()
        self.statusBar().showMessage("Open a CSV file to start.")

        self.data_panel.open_button.clicked.connect(self.open_csv_dialog)
        self.data_panel.file_loaded.connect(self._file_loaded)
        self.data_panel.dataset_ready.connect(self._dataset_ready)
        self.data_panel.dataset_invalid.connect(self._dataset_invalid)
        self.data_panel.error.connect(self._data_error)
        self.method_panel.changed.connect(self._update_ready)
        self.method_panel.changed.connect(self._method_changed)
        self.training_panel.train_requested.connect(self.train)
        self.training_panel.cancel_requested.connect(self.cancel)
        self.results_panel.prune_requested.connect(self.preview_prune)
        self.results_panel.keep_pruned_requested.connect(self.keep_pruned)
        self.results_panel.importance_requested.connect(self.compute_importance)
        self.results_panel.importance_cancel_requested.connect(self.cancel_importance)
        self.results_panel.importance_save_requested.connect(self.save_importance_dialog)
        self.results_panel.bounds_requested.connect(self.compute_bounds)
        self.run_list.selection_changed.connect(self._runs_selected)
        self.run_list.export_requested.connect(self.export_runs_dialog)
        self.worker.progress.connect(self._progress)
        self.worker.finished.connect(self._finished)
        self.worker.failed.connect(self._failed)
        self.worker.called.connect(self._called)
        self.worker.call_failed.connect(self._call_failed)
        self._update_ready()
        self._resize_splitter()
        self._warming_up = bool(warm_up and self.families)
        if self._warming_up:
            self.statusBar().showMessage("Preparing the numerical kernels in the background…")
            self.worker.warm_up(self.families)
            # a step of its own (about 100 ms: Qt's caches for the first table of cells), not
            # in the turn of the window's first paint (singleShot(0) ran it in that turn)
            self._steps.add(PreviewTable.warm_up_painting)
            QTimer.singleShot(50, self.training_panel.board.prepare)
        # the objects of the start (modules, classes, widgets: 120,000) out of the collector's
        # full passes, once the window and its plots are built: a full pass over them took
        # 79 ms of the GUI thread, at a moment of its own choosing (inside a redraw, a Train
        # click), and was a 400 ms pause of the window under load (bench_gui_load --load 4)
        self._freeze = QTimer(self)
        self._freeze.setSingleShot(True)
        self._freeze.timeout.connect(gc.freeze)
        self._freeze.start(FREEZE_MS)

    # -- construction --------------------------------------------------------------------------
    def _action(self, text, slot, shortcut=None, icon=None, tip=None) -> QAction:
        a = QAction(text, self)
        if shortcut:
            a.setShortcut(QKeySequence(shortcut))
        if icon is not None:
            a.setIcon(self.style().standardIcon(icon))
        if tip:
            a.setStatusTip(tip)
            a.setToolTip(tip)
        a.triggered.connect(lambda checked=False: slot())
        return a

    def _build_actions(self) -> None:
        S = QStyle.StandardPixmap
        self.act_open = self._action("&Open CSV…", self.open_csv_dialog, QKeySequence.Open,
                                     S.SP_DialogOpenButton, "Open a CSV file")
        self.act_open_model = self._action("Open &Model…", self.open_model_dialog, None,
                                           S.SP_FileDialogContentsView,
                                           "Open a saved rwtool model (.rwm)")
        self.act_apply = self._action("&Apply Model to CSV…", self.apply_model_dialog, None,
                                      None, "Predict a new CSV file with the selected model")
        self.act_save_model = self._action("&Save Model…", self.save_model_dialog,
                                           QKeySequence.Save, S.SP_DialogSaveButton,
                                           "Save the selected run's model (.rwm)")
        self.act_export_onnx = self._action("Export &ONNX Graph…", self.export_onnx_dialog,
                                            None, None, "Save the selected run's model as an "
                                                        "ONNX graph, to serve without Python")
        self.act_export_pred = self._action("Export &Predictions…",
                                            self.export_predictions_dialog,
                                            None, None, "Save the selected run's predictions "
                                                        "as CSV")
        self.act_export_plot = self._action("Export P&lot…", self.export_plot_dialog, None,
                                            S.SP_DriveFDIcon, "Save the visible plot as PNG "
                                                              "or SVG")
        self.act_snippet = self._action("Python &Snippet…", self.show_snippet, None, None,
                                        "The selected run as Python code")
        self.act_quit = self._action("&Quit", self.close, QKeySequence.Quit)
        self.act_train = self._action("&Train", self.train, "Ctrl+R", S.SP_MediaPlay,
                                      "Train the chosen method")
        self.act_cancel = self._action("&Cancel", self.cancel, "Esc", S.SP_MediaStop,
                                       "Stop the running fit")
        self.act_about = self._action("&About rwtool", self.about)

        mb = self.menuBar()
        fm = mb.addMenu("&File")
        fm.addAction(self.act_open)
        self.recent_menu = fm.addMenu("Open &Recent")
        self.samples_menu = fm.addMenu("Sa&mples")
        fm.addSeparator()
        fm.addAction(self.act_open_model)
        fm.addAction(self.act_apply)
        fm.addSeparator()
        fm.addAction(self.act_save_model)
        fm.addAction(self.act_export_onnx)
        fm.addAction(self.act_export_pred)
        fm.addAction(self.act_export_plot)
        fm.addAction(self.act_snippet)
        fm.addSeparator()
        fm.addAction(self.act_quit)
        rm = mb.addMenu("&Run")
        rm.addAction(self.act_train)
        rm.addAction(self.act_cancel)
        hm = mb.addMenu("&Help")
        hm.addAction(self.act_about)

        tb = QToolBar("Main")
        tb.setObjectName("mainToolbar")
        tb.setToolButtonStyle(Qt.ToolButtonTextBesideIcon)
        tb.setMovable(False)
        for a in (self.act_open, self.act_open_model, self.act_train, self.act_cancel,
                  self.act_save_model, self.act_export_plot):
            tb.addAction(a)
        self.addToolBar(tb)
        self._fill_samples_menu()
        self._fill_recent_menu()

    def _fill_samples_menu(self) -> None:
        self.samples_menu.clear()
        samples, why = available_samples()      # rwtool.data's discovery, as `rwtool samples`
        self.samples_menu.setToolTip(why or "")
        for s in samples:
            a = self.samples_menu.addAction(s["name"])
            a.setToolTip(s["description"])
            a.setStatusTip(s["description"])
            a.triggered.connect(lambda checked=False, s=s: self.open_sample(s))
        self.samples_menu.setToolTipsVisible(True)
        self.samples_menu.setEnabled(bool(samples))

    def _recent(self) -> list[str]:
        v = self.settings.value("recent_files", [])
        if isinstance(v, str):
            v = [v]
        return [p for p in (v or []) if isinstance(p, str)]

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        recent = self._recent()
        for p in recent:
            a = self.recent_menu.addAction(os.path.basename(p))
            a.setToolTip(p)
            a.setStatusTip(p)
            a.triggered.connect(lambda checked=False, p=p: self.open_path(p))
        if recent:
            self.recent_menu.addSeparator()
            self.recent_menu.addAction("Clear list", self._clear_recent)
        self.recent_menu.setEnabled(bool(recent))

    def _clear_recent(self) -> None:
        self.settings.setValue("recent_files", [])
        self._fill_recent_menu()

    def _add_recent(self, path: str) -> None:
        path = os.path.abspath(path)
        recent = [p for p in self._recent() if p != path]
        self.settings.setValue("recent_files", ([path] + recent)[:MAX_RECENT])
        self._fill_recent_menu()

    def _resize_splitter(self) -> None:
        w = max(self.width(), 1000)
        left = min(520, max(380, int(w * 0.33)))
        self.splitter.setSizes([left, w - left])

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if not getattr(self, "_sized", False) and self.isVisible():
            self._sized = True
            self._resize_splitter()

    # -- messages ------------------------------------------------------------------------------
    def show_error(self, message: str, details: str = "") -> None:
        self.banner.show_message("error", message, details)
        self.statusBar().showMessage(message, 10000)

    def show_info(self, message: str) -> None:
        self.banner.show_message("info", message)
        self.statusBar().showMessage(message, 8000)

    def ask(self, title: str, text: str) -> bool:
        """A yes/no question (tests and scripts replace this attribute)."""
        return QMessageBox.question(self, title, text) == QMessageBox.Yes

    def _ask_open(self, title: str, filters: str) -> str | None:
        start = self.settings.value("last_dir", str(Path.home()))
        path, _ = QFileDialog.getOpenFileName(self, title, start, filters)
        if path:
            self.settings.setValue("last_dir", os.path.dirname(path))
        return path or None

    def save_dir(self) -> str:
        """Where a save dialog starts: the last folder saved into, else the last folder opened
        when it is writable (a samples or data folder often is not), else the home folder."""
        for key in ("last_save_dir", "last_dir"):
            d = self.settings.value(key, "")
            if isinstance(d, str) and d and os.path.isdir(d) and os.access(d, os.W_OK):
                return d
        return str(Path.home())

    def _ask_save(self, title: str, filters: str, default: str) -> str | None:
        start = os.path.join(self.save_dir(), default)
        path, _ = QFileDialog.getSaveFileName(self, title, start, filters)
        if path:
            self.settings.setValue("last_save_dir", os.path.dirname(path))
        return path or None

    # -- data -----------------------------------------------------------------------------------
    def open_csv_dialog(self) -> None:
        path = self._ask_open("Open CSV", "CSV files (*.csv *.tsv *.txt *.data);;All files (*)")
        if path:
            self.open_path(path)

    def open_path(self, path: str, target: str | None = None, options: dict | None = None):
        if path.lower().endswith(MODEL_SUFFIX):
            self.open_model(path)
            return
        if not os.path.isfile(path):
            self.show_error(f"{path}: no such file")
            if path in self._recent():
                self.settings.setValue("recent_files", [p for p in self._recent() if p != path])
                self._fill_recent_menu()
            return
        self.statusBar().showMessage(f"Reading {os.path.basename(path)}…")
        self.data_panel.open_path(path, target, options)

    def open_sample(self, sample: dict) -> None:
        self.open_path(sample["path"], sample.get("target"))

    def _file_loaded(self, path: str) -> None:
        self.banner.hide()
        self._add_recent(path)
        self.preview_table.show_preview(self.data_panel.preview)
        self.preview_stack.setCurrentWidget(self.preview_table)
        self.right_tabs.setCurrentWidget(self.preview_stack)
        self.setWindowTitle(os.path.basename(path))
        self.statusBar().showMessage(f"Loaded {path}", 5000)

    def _dataset_ready(self, info: dict) -> None:
        self.data_info = info
        train = info["train"]
        self.method_panel.set_task("regression" if train.task == "regression" else "binary")
        self.method_panel.set_data(train.X)
        if self.banner.kind in ("error", "warning") and self.banner.isVisible():
            self.banner.hide()
        if train.is_classification and train.classes is not None:
            warn = many_classes(train.n_samples, len(train.classes))
            if warn:
                self.banner.show_message("warning", f"Many classes: {warn}")
        self._update_ready()

    def _dataset_invalid(self, why: str) -> None:
        self.data_info = None
        self._update_ready()

    def _data_error(self, context: str, err: dict) -> None:
        if context == "open":
            keep = (" The data already loaded is unchanged." if self.data_panel.preview
                    is not None else "")
            name = os.path.basename(err.get("file", ""))
            msg = err["message"].rstrip(".")
            head = "Cannot open the file" if msg.startswith(name) else f"Cannot open {name}"
            self.show_error(f"{head}: {msg}.{keep}", err.get("details", ""))
        else:
            self.show_error(f"The data cannot be encoded with these choices: {err['message']}",
                            err.get("details", ""))

    def _method_changed(self) -> None:
        try:
            est = self.method_panel.make_estimator()
        except (ValueError, TypeError):
            est = None
        self.eval_panel.update_for(est, self.method_panel.task)

    def _update_ready(self) -> None:
        why = ""
        if self.data_info is None:
            why = "Load a CSV and choose a target and features first"
        elif self.method_panel.error_label.text():
            why = "Fix the highlighted parameters first"
        ready = not why
        if ready and not self.training_panel.running:
            self.load_probe.refresh()        # for the estimate of the next Train click
        self.training_panel.set_ready(ready, why)
        self.act_train.setEnabled(ready and not self.training_panel.running)
        has_model = self._selected_model_run() is not None
        for a in (self.act_save_model, self.act_export_onnx, self.act_export_pred,
                  self.act_snippet):
            a.setEnabled(has_model)
        self.act_apply.setEnabled(has_model or self.loaded_model is not None)
        self.act_cancel.setEnabled(self.training_panel.running)

    # -- drag and drop ----------------------------------------------------------------------------
    def dragEnterEvent(self, event) -> None:
        urls = event.mimeData().urls() if event.mimeData().hasUrls() else []
        if any(u.toLocalFile().lower().endswith(CSV_SUFFIXES + (MODEL_SUFFIX,)) for u in urls):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event) -> None:
        for u in event.mimeData().urls():
            path = u.toLocalFile()
            if path.lower().endswith(CSV_SUFFIXES + (MODEL_SUFFIX,)):
                self.open_path(path)
                event.acceptProposedAction()
                return

    # -- training -------------------------------------------------------------------------------
    def _new_id(self) -> int:
        rid = self._next_id
        self._next_id += 1
        return rid

    def train(self) -> None:
        self.settle()
        if self.training_panel.running:
            return
        if self.data_info is None:
            self.show_error("Load a CSV file and choose the target and features before training.")
            return
        try:
            est = self.method_panel.make_estimator()
        except (ValueError, TypeError) as exc:
            self.show_error(f"Invalid parameters: {exc}")
            self.left_tabs.setCurrentWidget(self.method_panel)
            return
        fam = self.method_panel.family()
        info = self.data_info
        train, test = info["train"], info["test"]
        plan = self.eval_panel.plan(info["options"].get("random_state", 0))
        weights = self.eval_panel.weights(train.y) if train.is_classification else None
        n_test = 0 if test is None else test.n_samples
        check = preflight(est, train.X, train.y, train.task, folds=plan.folds(),
                          folds_what=plan.folds_what,
                          fits=plan.fit_sizes(train.n_samples, n_test, est,
                                              weighted=weights is not None),
                          live_curve=n_test > 0 and supports(est.fit, "eval_set"),
                          load=self.load_probe.value())
        if check.refuse:
            self.show_error(f"Not started: {check.refuse}")
            return
        question = " ".join(check.warnings + ([check.confirm] if check.confirm else []))
        if question and not self.ask("Start this fit?", question + (
                "" if check.confirm else f" ({check.summary()}.) Train anyway?")):
            self.statusBar().showMessage("Training not started.", 5000)
            return
        data = dict(info["options"], path=info["path"], preprocessing=train.preprocessing,
                    train_rows=train.rows, test_rows=None if test is None else test.rows,
                    task_encoded=train.task, evaluation=plan.describe(),
                    balanced=weights is not None, cv_k=plan.cv_k())
        run = Run(self._new_id(), fam.key, fam.title, type(est).__name__, est.get_params(),
                  data, rows={"train": train, "test": test})
        self.training_run = run
        self.banner.hide()
        self.training_panel.started(f"{run.name}: {run.class_name} on {train.n_samples} rows × "
                                    f"{train.n_features} features",
                                    warming_up=self._warming_up)
        # the run's row, the Training tab and the row's selection, a step each
        # (gui.widgets.steps); the selection last, as its handler runs what is still queued
        self._steps.add(self.run_list.add, run)
        self._steps.add(self.right_tabs.setCurrentWidget, self.training_panel.curves)
        self._steps.add(self.run_list.select, [run.run_id])
        self.worker.submit(TrainJob(run.run_id, est, train.X, train.y,
                                    None if test is None else test.X,
                                    None if test is None else test.y, train.task,
                                    list(train.feature_names), plan, weights))
        if self._warming_up:
            # The user's fit goes first: the warm-up stops after its current tiny fit.
            self.worker.stop_warm_up()
        self.statusBar().showMessage(f"Training {run.name}…")
        self._update_ready()

    def cancel(self) -> None:
        if self._importance_run is not None:
            self.cancel_importance()
        if self.training_panel.running or self.worker.busy:
            self.worker.cancel()
            if self.training_panel.running:
                self.training_panel.mark_cancelling()

    def _progress(self, run_id: int, ev: dict) -> None:
        if run_id == IMPORTANCE_JOB:
            self._importance_progress(ev)
            return
        if self._bar_job is not None and run_id == self._bar_job:
            self.training_panel.on_progress(ev)
            return
        run = self.training_run
        if run is None or run.run_id != run_id:
            return
        self.training_panel.on_progress(ev)
        xlabel, x, _ = curve_x(ev)
        loss, err = split_metrics(ev.get("metrics", {}))
        if loss or err:
            run.x_label = xlabel
        for k, v in {**loss, **err}.items():
            run.append(k, x, v)

    def _finished(self, run_id: int, res: dict) -> None:
        self._steps.flush()
        if run_id in self._prune_jobs:
            self._prune_finished(run_id, res)
            return
        if res.get("kind") == "bounds" and run_id in self._bounds_jobs:
            self._bounds_finished(self._bounds_jobs.pop(run_id), res)
            return
        run = self.run_list.runs.get(run_id)
        if run is None:
            return
        run.result = res
        run.status = "cancelled (partial model)" if res.get("cancelled") else "done"
        if res.get("search"):
            # the model is the best candidate's: the run, the snippet and the form say so
            run.params = res["estimator"].get_params()
            self.method_panel.set_method(run.family, res["search"]["best_params"])
            self.show_info("Best parameters of the search put in the Method form: " + ", ".join(
                f"{k} = {v:.4g}" if isinstance(v, float) else f"{k} = {v}"
                for k, v in sorted(res["search"]["best_params"].items())))
        mc = res.get("model_curves") or {}
        if mc.get("curves"):
            run.curves.update({k: (list(x), list(y)) for k, (x, y) in mc["curves"].items()})
            run.x_label = mc.get("x_label", run.x_label)
        self.training_run = None
        self.training_panel.stopped("done" if not res.get("cancelled")
                                    else "cancelled: kept the last completed iterate")
        if res.get("warnings"):
            self.banner.show_message("warning", " · ".join(res["warnings"][:3]))
        headline = run.headline()
        ended = "cancelled, the last completed iterate kept" if res.get("cancelled") else "finished"
        self.statusBar().showMessage(f"{run.name} {ended}" + (f": {headline}" if headline else ""),
                                     8000)
        self._update_ready()
        # what the run's end shows, a step each (4-15 ms of the GUI thread each: in one turn
        # they were one pause of the window of 80-190 ms under load; gui.widgets.steps)
        if mc.get("curves"):
            self._steps.add(self.training_panel.show_model_curves, mc)
        self._steps.add(self.run_list.update_steps, run)
        self._steps.add(self._show_run, run)
        self._steps.add(self.right_tabs.setCurrentWidget, self.results_panel)
        self._steps.add(self.run_finished.emit, run_id)

    def settle(self) -> None:
        """Run the queued steps of the window's drawing now (the end of a run, the Train
        click, the comparison, the results' plots): a new action of the user starts from the
        state they lead to."""
        self._steps.flush()
        self.run_list.flush()
        self.results_panel.flush()

    def _failed(self, run_id: int, err: dict) -> None:
        self._steps.flush()
        if run_id in self._prune_jobs:
            self._prune_jobs.pop(run_id)
            self.results_panel.show_prune_error(err["message"])
            return
        self.statusBar().clearMessage()          # "Training #n…" ends with the run
        if run_id in self._bounds_jobs:
            self._bounds_jobs.pop(run_id)
            self._bar_job = None
            cancelled = err.get("kind") == CANCELLED
            self.training_panel.stopped("cancelled" if cancelled else "failed")
            if cancelled:
                self.show_info("Computing the bounds cancelled; the run is unchanged.")
            else:
                self.show_error(f"The bounds could not be computed: {err['message']}",
                                err.get("details", ""))
            self._update_ready()
            return
        run = self.run_list.runs.get(run_id)
        cancelled = err.get("kind") == CANCELLED
        if run is not None:
            run.status = "cancelled" if cancelled else "failed"
            run.note = err["message"]
            self.run_list.update_run(run)
        self.training_run = None
        self.training_panel.stopped("cancelled" if cancelled else "failed")
        if cancelled:
            self.show_info("Training cancelled; the previous runs and results are unchanged.")
        else:
            self.show_error(f"Training failed: {err['message']}", err.get("details", ""))
        self._update_ready()
        self.run_finished.emit(run_id)

    # -- bounds, computed when asked for (two passes over the training rows) ---------------------
    def compute_bounds(self) -> None:
        self._steps.flush()         # the state the queued drawing steps lead to
        run = self.current_run
        if run is None or run.result is None or self.training_panel.running:
            return
        rows = (run.rows or {}).get("train")
        if rows is None:
            self.show_error(f"{run.name} has no training rows in this session (a model opened "
                            f"from a file): train it here to compute its bounds.")
            return
        self._bounds_jobs[run.run_id] = run
        self._bar_job = run.run_id
        self.training_panel.started(f"Computing the bounds of {run.name} on {rows.n_samples} "
                                    f"training rows", clear_curves=False)
        self.worker.submit(BoundsJob(run.run_id, run.result["estimator"], rows.X, rows.y))
        self._update_ready()

    def _bounds_finished(self, run: Run, out: dict) -> None:
        self._bar_job = None
        self.training_panel.stopped("done: bounds computed")
        merge_bounds(run.result, out)
        self.run_list.update_run(run)
        if self.current_run is run:
            self._show_run(run)
        self._update_ready()
        self.run_finished.emit(run.run_id)

    def _show_run(self, run: Run, later: bool = False) -> None:
        """Show ``run`` in the results panel (``later``: its metrics and tabs too in a step
        of their own, after the caller's turn)."""
        self.current_run = run
        if run.result is not None:
            self.results_panel.importance_available = self.importance_available(run)
            show = self.results_panel.show_result_later if later else \
                self.results_panel.show_result
            show(run.result, f"<b>{html.escape(run.name)}</b> · "
                             f"{html.escape(f'{run.class_name} · {run.key_params()}')}")
        self._update_ready()

    def _runs_selected(self, ids: list) -> None:
        self._steps.flush()
        if len(ids) == 1:
            run = self.run_list.runs.get(ids[0])
            if run is not None and run.result is not None:
                # the selection's turn has the table's and the comparison's changes: the
                # metrics table and the tab bar filled in it too were 4-6 ms more
                # (bench_gui_load --record-turns)
                self._show_run(run, later=True)
        self._update_ready()

    def _selected_model_run(self) -> Run | None:
        ids = self.run_list.selected_ids()
        runs = [self.run_list.runs[i] for i in ids] if ids else \
            ([self.current_run] if self.current_run else [])
        for run in runs:
            if run is not None and run.result is not None and run.result.get("estimator") is \
                    not None:
                return run
        return None

    # -- pruning ---------------------------------------------------------------------------------
    def preview_prune(self, opts: dict) -> None:
        self._steps.flush()         # the state the queued drawing steps lead to
        run = self._selected_model_run()
        if run is None or self.data_info is None:
            self.results_panel.show_prune_error("Select a trained run and keep its data loaded "
                                                "to prune it.")
            return
        est = run.result["estimator"]
        train, test = self.data_info["train"], self.data_info["test"]
        if train.n_features != getattr(est, "n_features_in_", train.n_features):
            self.results_panel.show_prune_error("The loaded data does not match this model.")
            return
        sig = inspect.signature(est.prune).parameters
        kwargs = {k: v for k, v in dict(opts, X=train.X, y=train.y).items() if k in sig}
        # Prune jobs get negative ids so that run numbers stay consecutive (below APPLY_ID:
        # the first was -1, and its progress went to the bar of a file being predicted).
        self._prune_seq += 1
        jid = APPLY_ID - self._prune_seq
        self._prune_jobs[jid] = run.run_id
        self.results_panel.prune_view.result.setText("Pruning…")
        self.worker.submit(PruneJob(jid, est, train.X, train.y,
                                    None if test is None else test.X,
                                    None if test is None else test.y, train.task,
                                    list(train.feature_names), kwargs=kwargs))

    def _prune_finished(self, jid: int, res: dict) -> None:
        base_id = self._prune_jobs.pop(jid)
        base = self.run_list.runs.get(base_id)
        if base is None or base.result is None:
            return
        opts = {k: v for k, v in (("eps", self.results_panel.prune_view.eps()),
                                  ("accept",
                                   self.results_panel.prune_view.accept_combo.currentData()))}
        self._pruned = {"base": base_id, "result": res, "opts": opts}
        self.results_panel.show_prune_preview(base.result, res)

    def keep_pruned(self) -> None:
        self._steps.flush()         # the state the queued drawing steps lead to
        if not self._pruned:
            return
        base = self.run_list.runs[self._pruned["base"]]
        o = self._pruned["opts"]
        run = Run(self._new_id(), base.family, base.title + " (pruned)", base.class_name,
                  dict(base.params), dict(base.data, prune=dict(o)), "pruned",
                  self._pruned["result"],
                  dict(base.curves), base.x_label,
                  note=f"pruned from {base.name} with eps={o['eps']:.3g}, accept={o['accept']}",
                  rows=base.rows)
        self._pruned = None
        self.run_list.add(run)
        self.run_list.select([run.run_id])
        self._show_run(run)

    # -- models ----------------------------------------------------------------------------------
    def open_model_dialog(self) -> None:
        path = self._ask_open("Open model", "rwtool models (*.rwm);;All files (*)")
        if path:
            self.open_model(path)

    def open_model(self, path: str) -> None:
        from rwtool.persist import read_model
        self.statusBar().showMessage(f"Loading {os.path.basename(path)}…")
        self.worker.read(read_model, path, on_done=self._model_opened,
                         on_error=lambda err: self.show_error(
                             f"Cannot open the model: {err['message']}", err.get("details", "")))

    def _called(self, tag: str, out) -> None:
        if tag == "warm-up":
            self._warming_up = False
            self.training_panel.warm_up_done()
            if not self.training_panel.running:
                self.statusBar().showMessage(f"Ready ({out} warm-up fits).", 5000)
        elif tag == "apply":
            self._applied(out)
        elif tag == "importance":
            self._importance_done(out)

    def _call_failed(self, tag: str, err: dict) -> None:
        if tag == "warm-up":
            self._warming_up = False
            self.training_panel.warm_up_done()
            return
        if tag == "importance":
            self._importance_failed(err)
            return
        if tag == "apply":
            self._bar_job = None
            self.statusBar().clearMessage()
            cancelled = err.get("kind") == CANCELLED
            self.training_panel.stopped("cancelled" if cancelled else "failed")
            self._update_ready()
            if cancelled:
                self.show_info("Cancelled: the file was not predicted.")
                return
        what = {"apply": "Cannot apply the model"}
        self.show_error(f"{what.get(tag, tag)}: {err['message']}", err.get("details", ""))

    def _model_opened(self, mf) -> None:
        self._steps.flush()         # the state the queued drawing steps lead to
        self.loaded_model = mf
        est = mf.estimator
        name = type(est).__name__
        fam = method_of(est)
        task = "regression" if getattr(est, "_estimator_type", "") == "regressor" else \
            ("binary" if len(getattr(est, "classes_", [])) <= 2 else "multiclass")
        metrics = {k: int(v) if k in COUNT_METRICS and float(v).is_integer() else v
                   for k, v in dict(mf.metrics or {}).items()}
        res = {"estimator": est, "metrics": metrics, "task": task, "warnings": [],
               "model_curves": {"curves": {}}, "meanings": bound_meanings(metrics)}
        if hasattr(est, "classes_"):
            res["classes"] = list(np.asarray(est.classes_).tolist())
        if mf.info.get("feature_names"):      # the file's input names, for per-input plots
            res["feature_names"] = list(mf.info["feature_names"])
        data = {"path": mf.path, "preprocessing": mf.preprocessing}
        if mf.preprocessing is not None and mf.preprocessing.target is not None:
            data["target"] = mf.preprocessing.target["name"]
            data["features"] = mf.preprocessing.input_columns
        run = Run(self._new_id(), fam.key if fam else "", (fam.title if fam else name)
                  + " (loaded)", name, est.get_params(), data, "loaded", res,
                  note=f"loaded from {mf.path}")
        self.run_list.add(run)
        self.run_list.select([run.run_id])
        self._show_run(run)
        self.right_tabs.setCurrentWidget(self.results_panel)
        self.show_info(f"Loaded {os.path.basename(mf.path)}: {name}. Use File > Apply Model "
                       f"to CSV to predict a new file.")
        self._update_ready()

    def apply_model_dialog(self) -> None:
        path = self._ask_open("Apply the model to a CSV", "CSV files (*.csv *.tsv *.txt);;"
                                                          "All files (*)")
        if path:
            self.apply_model(path)

    def apply_model(self, path: str) -> None:
        self._steps.flush()         # the state the queued drawing steps lead to
        run = self._selected_model_run()
        if run is not None:
            est, pre = run.result["estimator"], run.data.get("preprocessing")
        elif self.loaded_model is not None:
            est, pre = self.loaded_model.estimator, self.loaded_model.preprocessing
        else:
            self.show_error("Train a model or open a saved one first.")
            return
        if pre is None:
            self.show_error("This model was saved without the record of how its CSV was "
                            "encoded, so it cannot read CSV files.")
            return
        if self.training_panel.running:
            self.show_error("Wait for the running job to end (or cancel it) before applying "
                            "the model to a file.")
            return
        self.statusBar().showMessage(f"Predicting {os.path.basename(path)}…")
        self._bar_job = APPLY_ID
        self.training_panel.started(f"Predicting {os.path.basename(path)}", clear_curves=False)
        # in the fit process, which reads the file and keeps the model of a run trained here
        self.worker.submit(CallJob("apply", apply_file, (est, pre, path), progress_id=APPLY_ID,
                                   in_process=True))
        self._update_ready()

    def _applied(self, out: dict) -> None:
        self._bar_job = None
        self.training_panel.stopped("done: file predicted")
        self._update_ready()
        self.last_applied = out
        dlg = PredictionsDialog(self, out)
        dlg.setModal(False)
        dlg.show()
        self.statusBar().showMessage(f"Predicted {len(out['pred'])} rows of "
                                     f"{os.path.basename(out['path'])}", 8000)

    def about(self) -> None:
        QMessageBox.about(self, "About rwtool",
                          f"<b>rwtool {rwtool.__version__}</b><p>Random-feature learning: RKHS "
                          f"weightings (Dubé &amp; Marchand), random kitchen sinks, averaged "
                          f"SGD on random Fourier features, greedy multi-kernel features and "
                          f"BKerNN.</p><p>Methods available here: "
                          f"{', '.join(f.title for f in self.families)}.</p>")

    # -- closing -----------------------------------------------------------------------------------
    def report_unexpected(self, exc_type, exc, tb) -> None:
        """sys.excepthook of the app: an error nobody expected is shown, not a crash."""
        details = "".join(traceback.format_exception(exc_type, exc, tb))
        self.show_error(f"Unexpected error ({exc_type.__name__}: {exc}). Your data and runs "
                        f"are unchanged; see Details.", details)

    def closeEvent(self, event) -> None:
        self.worker.shutdown()
        # the start's objects collectable again (a closed window's cycles, in a process that
        # goes on: tests, scripts)
        self._freeze.stop()
        gc.unfreeze()
        super().closeEvent(event)
