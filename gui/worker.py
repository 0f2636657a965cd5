"""The single training thread, and background reads that never block the window.

Every call into rwtool's numerical code (fits, predictions, pruning, loading a model, the numba
warm-up) runs on the one QThread owned by :class:`WorkerController`, so parallel numba code is
only ever entered from one thread (DESIGN.md section 5) and the jobs run in the order given.
Progress events of rwtool.progress become a Qt signal carrying a plain dict; Cancel sets a flag
that the progress callback returns, so a fit stops at the end of the current chunk of work.
CSV reads (pure Python and numpy) go to Qt's thread pool through :func:`run_in_background`.

This module moves work between threads; it must not build widgets.
"""

from __future__ import annotations

import atexit
import threading
import time
import traceback
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

import numba
import numpy as np
from PySide6.QtCore import QObject, QRunnable, QThread, QThreadPool, Signal, Slot

from rwtool.exceptions import InsufficientMemoryError, NumericalError
from rwtool.progress import FitCancelled

from .logic.evaluate import chose_reg, evaluate, model_bounds, model_curves
from .logic.plans import Holdout, supports
from .logic.terms import app_words

__all__ = ["TrainJob", "PruneJob", "BoundsJob", "CallJob", "TrainWorker", "WorkerController",
           "run_in_background", "describe_error", "warm_up_jobs", "CANCELLED"]

#: the "kind" of the error dict of a job that a Cancel stopped
CANCELLED = "cancelled"


def describe_error(exc: BaseException) -> dict:
    """A message for people (no traceback) and the details for the log."""
    name = type(exc).__name__
    # rwtool's data and report errors name their fix in the app's words (the control to change)
    text = app_words(exc).strip() or name
    if name == "LinAlgError":
        text = (f"numerical failure in a linear solve ({text}); try a larger reg, fewer "
                f"features, or standardised inputs")
    elif isinstance(exc, (NumericalError, InsufficientMemoryError)):
        pass        # rwtool's own errors already name the solver, the sizes and the fix
    elif isinstance(exc, MemoryError):
        text = "not enough memory for this fit; use fewer features or a smaller block size"
    elif not isinstance(exc, (ValueError, TypeError, OSError)):
        text = f"{name}: {text}"
    details = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return {"message": text, "kind": name, "details": details}


@dataclass
class TrainJob:
    """Fit ``estimator`` on the training rows and evaluate it (on the worker thread)."""

    run_id: int
    estimator: Any
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray | None
    y_test: np.ndarray | None
    task: str
    feature_names: list = field(default_factory=list)
    plan: Any = None                    # gui.logic.plans: Holdout (default), KFold, Search
    weights: Any = None                 # per-row sample weights (class weights), or None


@dataclass
class PruneJob(TrainJob):
    """``estimator.prune(**kwargs)`` then evaluate the pruned model on the same rows."""

    kwargs: dict = field(default_factory=dict)


@dataclass
class BoundsJob:
    """The bounds of a fitted model on its training rows, asked for after the fit (two passes
    over the rows, often longer than the fit itself): "bounds" progress, stopped by Cancel."""

    run_id: int
    estimator: Any
    X_train: np.ndarray
    y_train: np.ndarray


@dataclass
class CallJob:
    """Any other call into rwtool's numerics (load a model, apply it to a CSV, warm-up).

    With ``progress_id``, ``fn`` also gets ``callback=`` (rwtool.progress): its events go out
    as progress of that id and Cancel stops it (rwtool.FitCancelled, reported as a failed call
    of kind "cancelled")."""

    tag: str
    fn: Callable
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    progress_id: int | None = None


class TrainWorker(QObject):
    """Lives on the worker thread; executes jobs one at a time."""

    progress = Signal(int, object)        # run id, event dict
    finished = Signal(int, object)        # run id, result dict (with "estimator")
    failed = Signal(int, object)          # run id, error dict
    called = Signal(str, object)          # tag, return value of a CallJob
    call_failed = Signal(str, object)

    def __init__(self):
        super().__init__()
        self.cancel_flag = threading.Event()

    # The callback runs on this thread inside the solver; it only emits and reads a flag.
    def _callback(self, run_id: int):
        def cb(event) -> bool:
            metrics = {}
            for k, v in dict(event.metrics).items():
                try:
                    metrics[str(k)] = float(v)
                except (TypeError, ValueError):
                    continue
            self.progress.emit(run_id, {"stage": event.stage, "done": int(event.done),
                                        "total": int(event.total), "metrics": metrics,
                                        "elapsed": float(event.elapsed), "kind": event.kind})
            return self.cancel_flag.is_set()
        return cb

    @Slot(object)
    def execute(self, job) -> None:
        # numba's thread count is per thread: leave one core to the GUI thread (and Qt's
        # painting threads), which otherwise waits behind the fit and stalls for 100+ ms.
        numba.set_num_threads(max(1, numba.config.NUMBA_NUM_THREADS - 1))
        if isinstance(job, PruneJob):
            self._prune(job)
        elif isinstance(job, TrainJob):
            self._train(job)
        elif isinstance(job, BoundsJob):
            self._bounds(job)
        elif isinstance(job, CallJob):
            self._call(job)

    def _train(self, job: TrainJob) -> None:
        est = job.estimator
        plan = job.plan if job.plan is not None else Holdout()
        t0 = time.perf_counter()
        cancelled = False
        extra: dict = {}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                extra = plan.fit(est, job, self._callback(job.run_id), job.weights) or {}
            except FitCancelled as exc:
                cancelled = True
                if not (exc.partial_model and self._is_fitted(est)):
                    self.failed.emit(job.run_id, {"message": "training cancelled",
                                                  "kind": CANCELLED, "details": ""})
                    return
            except Exception as exc:  # shown in the app; the previous model stays
                self.failed.emit(job.run_id, describe_error(exc))
                return
        if cancelled:
            # the cancel asked to stop now: the last iterate is kept, not evaluated (its
            # predictions on every row would take as long as the evaluation of a whole fit)
            self._emit_partial(job, est, time.perf_counter() - t0, caught)
            return
        self._evaluate_and_emit(job, est, time.perf_counter() - t0, cancelled, caught, extra)

    def _emit_partial(self, job, est, wall_time, caught) -> None:
        size = getattr(est, "n_features_out_", None)
        metrics = {"fit time (s)": float(wall_time)}
        if size is not None:
            metrics = {"features used": int(size), **metrics}
        res = {"task": job.task, "metrics": metrics, "estimator": est, "cancelled": True,
               "warnings": list(dict.fromkeys(str(w.message) for w in caught)),
               "notes": ["Cancelled: the model is the last completed iterate, kept without "
                         "evaluating it (its metrics would take as long as a finished fit's). "
                         "Save it, apply it to a file or prune it as any model."],
               "model_curves": model_curves(est), "meanings": {},
               "has_bounds": callable(getattr(est, "bounds", None))}
        if hasattr(est, "classes_"):
            res["classes"] = list(np.asarray(est.classes_).tolist())
        self.finished.emit(job.run_id, res)

    def _bounds(self, job: BoundsJob) -> None:
        out = self._reported(job.run_id, "computing the bounds cancelled", lambda: model_bounds(
            job.estimator, job.X_train, job.y_train, self._callback(job.run_id)))
        if out is not None:
            out["kind"] = "bounds"
            self.finished.emit(job.run_id, out)

    def _reported(self, run_id: int, cancelled: str, fn):
        """``fn()`` (warnings silenced), or None after ``failed`` says why: ``cancelled`` for a
        Cancel, the error's message otherwise."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return fn()
        except FitCancelled:
            self.failed.emit(run_id, {"message": cancelled, "kind": CANCELLED, "details": ""})
        except Exception as exc:
            self.failed.emit(run_id, describe_error(exc))
        return None

    @staticmethod
    def _is_fitted(est) -> bool:
        return any(k.endswith("_") and not k.startswith("_") for k in vars(est)) and (
            hasattr(est, "coef_") or hasattr(est, "particles_") or hasattr(est, "dual_coef_"))

    def _evaluate_and_emit(self, job, est, wall_time, cancelled, caught, extra=None) -> None:
        # the predictions on every row take seconds on a large file: they run in slices with
        # "evaluating" progress, and Cancel stops them; the bounds are computed when asked for
        res = self._reported(job.run_id, "cancelled while evaluating the model", lambda: evaluate(
            est, job.X_train, job.y_train, job.X_test, job.y_test, task=job.task,
            feature_names=job.feature_names, fit_time=wall_time, bounds=False,
            callback=self._callback(job.run_id)))
        if res is None:
            return
        # reg="auto" spends most of the wall time choosing reg before the final fit
        final = getattr(est, "fit_time_", None)
        if not extra and chose_reg(est) and isinstance(final, float) and final < wall_time:
            res["metrics"]["of which choosing reg (s)"] = wall_time - final
        extra = dict(extra or {})
        # the k-fold and search figures go beside the holdout ones, before the model's size,
        # time and bounds
        m, more = res["metrics"], extra.pop("metrics", {})
        keys = list(m)
        at = keys.index("features used") if "features used" in keys else len(keys)
        res["metrics"] = {**{k: m[k] for k in keys[:at]}, **more,
                          **{k: m[k] for k in keys[at:]}}
        res.update(extra)
        res["estimator"] = est
        res["cancelled"] = cancelled
        res["warnings"] = list(dict.fromkeys(str(w.message) for w in caught))
        self.finished.emit(job.run_id, res)

    def _prune(self, job: PruneJob) -> None:
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                fn = job.estimator.prune
                kw = dict(job.kwargs)
                if supports(fn, "callback"):
                    kw["callback"] = self._callback(job.run_id)
                pruned = fn(**kw)
            except FitCancelled:
                self.failed.emit(job.run_id, {"message": "pruning cancelled",
                                              "kind": CANCELLED, "details": ""})
                return
            except Exception as exc:
                self.failed.emit(job.run_id, describe_error(exc))
                return
        if pruned is None:   # an in-place prune() returns nothing
            pruned = job.estimator
        self._evaluate_and_emit(job, pruned, time.perf_counter() - t0, False, caught)

    def _call(self, job: CallJob) -> None:
        kwargs = dict(job.kwargs)
        if job.progress_id is not None:
            kwargs["callback"] = self._callback(job.progress_id)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = job.fn(*job.args, **kwargs)
        except FitCancelled:
            self.call_failed.emit(job.tag, {"message": "cancelled", "kind": CANCELLED,
                                            "details": ""})
            return
        except Exception as exc:
            self.call_failed.emit(job.tag, describe_error(exc))
            return
        self.called.emit(job.tag, out)


def warm_up_jobs(families) -> Callable[[threading.Event], int]:
    """A function that fits and evaluates every estimator of ``families`` (rwtool.report
    methods) once on tiny data (one fit
    per choice of its instantiation/base/solver/...), so numba loads or compiles its kernels
    before the user's first fit. It stops early when the given event is set and returns the
    number of fits run."""
    from .logic.methods import param_specs

    small = {"n_features": 8, "n_particles": 4, "max_iter": 1, "n_candidates": 8,
             "knn_k": 5, "n_epochs": 1, "random_state": 0}
    axes = ("instantiation", "base", "solver", "selector", "penalty", "variant")

    def run(stop: threading.Event) -> int:
        rng = np.random.default_rng(0)
        X = rng.standard_normal((40, 3))
        yc = np.where(X[:, 0] + 0.3 * rng.standard_normal(40) > 0, 1, 0)
        yr = X[:, 0] - X[:, 1] ** 2
        count = 0
        for fam in families:
            for task, y in (("binary", yc), ("regression", yr)):
                cls = fam.estimator_class(task)
                if cls is None:
                    continue
                specs = {s.name: s for s in param_specs(cls)}
                variants = [{}]
                for ax in axes:
                    if ax in specs and specs[ax].choices:
                        variants += [{ax: c} for c in specs[ax].choices
                                     if c != specs[ax].default]
                for v in variants:
                    if stop.is_set():
                        return count
                    params = {k: val for k, val in small.items() if k in specs}
                    params.update(v)
                    try:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            est = cls(**params).fit(X, y)
                            # what the results panel computes, bounds included
                            evaluate(est, X[:30], y[:30], X[30:], y[30:], task=task)
                        count += 1
                    except Exception:  # a combination the estimator refuses: nothing to warm
                        continue
        return count
    return run


_controllers: "weakref.WeakSet[WorkerController]" = weakref.WeakSet()


@atexit.register
def _shutdown_all() -> None:
    # A QThread destroyed while it runs aborts the process: stop any left running at exit.
    for c in list(_controllers):
        c.shutdown(2000)


class WorkerController(QObject):
    """GUI-side owner of the worker thread: submit jobs, cancel, shut down."""

    _submit = Signal(object)
    progress = Signal(int, object)
    finished = Signal(int, object)
    failed = Signal(int, object)
    called = Signal(str, object)
    call_failed = Signal(str, object)
    busy_changed = Signal(bool)

    def __init__(self, parent=None):
        super().__init__(parent)
        self._thread = QThread()
        self._thread.setObjectName("rwtool-worker")
        self.worker = TrainWorker()
        self.worker.moveToThread(self._thread)
        self._submit.connect(self.worker.execute)
        self.worker.progress.connect(self.progress)
        self.worker.finished.connect(self._done_train)
        self.worker.failed.connect(self._done_fail)
        self.worker.called.connect(self._done_call)
        self.worker.call_failed.connect(self._done_call_fail)
        self._pending = 0
        self._warm_stop = threading.Event()
        self._thread.start()
        _controllers.add(self)

    @property
    def busy(self) -> bool:
        return self._pending > 0

    def submit(self, job) -> None:
        """Queue ``job``; a Cancel pressed from now on (even before it starts) stops it."""
        if not isinstance(job, CallJob) or job.progress_id is not None:
            self.worker.cancel_flag.clear()
        self._pending += 1
        if self._pending == 1:
            self.busy_changed.emit(True)
        self._submit.emit(job)

    def cancel(self) -> None:
        """Ask the running fit to stop at its next progress report (and skip the warm-up)."""
        self._warm_stop.set()
        self.worker.cancel_flag.set()

    def warm_up(self, families) -> None:
        fn = warm_up_jobs(families)
        self._warm_stop.clear()
        self.submit(CallJob("warm-up", fn, (self._warm_stop,)))

    def stop_warm_up(self) -> None:
        self._warm_stop.set()

    def _finish_one(self) -> None:
        self._pending = max(0, self._pending - 1)
        if self._pending == 0:
            self.busy_changed.emit(False)

    def _done_train(self, run_id, res):
        self._finish_one()
        self.finished.emit(run_id, res)

    def _done_fail(self, run_id, err):
        self._finish_one()
        self.failed.emit(run_id, err)

    def _done_call(self, tag, out):
        self._finish_one()
        self.called.emit(tag, out)

    def _done_call_fail(self, tag, err):
        self._finish_one()
        self.call_failed.emit(tag, err)

    def shutdown(self, timeout_ms: int = 5000) -> None:
        """Cancel what runs, stop the thread and wait for it (on window close)."""
        if not self._thread.isRunning():
            return
        self.cancel()
        self._thread.quit()
        self._thread.wait(timeout_ms)


class _Bridge(QObject):
    """Lives on the GUI thread: the pool thread emits, the slots run here (queued)."""

    done = Signal(object)
    error = Signal(object)

    def __init__(self, on_done, on_error):
        super().__init__()
        self.on_done, self.on_error = on_done, on_error
        self.done.connect(self._done)
        self.error.connect(self._error)

    @Slot(object)
    def _done(self, out):
        _live_bridges.discard(self)
        if self.on_done is not None:
            self.on_done(out)

    @Slot(object)
    def _error(self, err):
        _live_bridges.discard(self)
        if self.on_error is not None:
            self.on_error(err)


class _Task(QRunnable):
    def __init__(self, fn, args, kwargs, bridge):
        super().__init__()
        self.fn, self.args, self.kwargs, self.bridge = fn, args, kwargs, bridge
        self.setAutoDelete(True)

    def run(self):
        try:
            out = self.fn(*self.args, **self.kwargs)
        except Exception as exc:
            self.bridge.error.emit(describe_error(exc))
            return
        self.bridge.done.emit(out)


_live_bridges: set = set()


def run_in_background(fn, *args, on_done=None, on_error=None, **kwargs) -> None:
    """Run ``fn(*args, **kwargs)`` on Qt's thread pool; call ``on_done(result)`` or
    ``on_error(error dict)`` on the GUI thread. For pure-Python work such as reading a CSV."""
    bridge = _Bridge(on_done, on_error)
    _live_bridges.add(bridge)
    QThreadPool.globalInstance().start(_Task(fn, args, kwargs, bridge))
