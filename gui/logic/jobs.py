"""The jobs the app hands to its worker, and how one is run to its single outcome.

A job (a fit and its evaluation, a prune, the bounds, the warm-up of the kernels, the
permutation importance, a model applied to a CSV, any other call) runs through
:func:`run_job`, which returns one outcome: ``("finished", run_id, result)``, ``("failed",
run_id, error)``, ``("called", tag, value)`` or ``("call_failed", tag, error)``.
The same function runs a job on the app's worker thread or in its fit process
(:func:`serve`, the loop of that process): the result is the same either way, only where the
interpreter lock is held differs. The fit process talks to the app through one pipe: it sends
progress events and outcomes, and it waits before each event until the app has handled the
previous one, so that a Cancel set while the app handles event k stops the job before event
k + 1 is sent (as on the thread, where the callback returns the flag). The process keeps the
model a fit or a prune returned under a token the app gave with the job (:func:`serve`), so
that the bounds, a prune, the importance or a file's predictions on that model later send the
token instead of the model (:func:`share_arrays`, :class:`Stored`).

This module runs jobs; it must not import Qt or build widgets.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import threading
import time
import traceback
import warnings
from dataclasses import dataclass, field, fields, replace
from typing import Any, Callable

import numba
import numpy as np

from rwtool.exceptions import InsufficientMemoryError, NumericalError
from rwtool.progress import FitCancelled

from .evaluate import chose_reg, evaluate, model_bounds, model_curves
from .plans import Holdout, supports
from .reading import warm_up_reading
from .terms import app_words

__all__ = ["TrainJob", "PruneJob", "BoundsJob", "CallJob", "ReadJob", "WarmUpJob", "CANCELLED",
           "describe_error", "event_dict", "run_job", "cancelled_outcome", "warm_up_jobs",
           "serve", "Stored", "share_arrays", "failure", "SharedFlag", "fit_threads",
           "progress_id", "by_token", "from_token", "reachable_arrays", "kept_model",
           "send_pickled", "recv_pickled", "as_pickled", "serve_once"]

try:                          # the C library, for release_memory (glibc's malloc_trim)
    _LIBC = ctypes.CDLL(None)
except OSError:
    _LIBC = None
#: the "kind" of the error dict of a job that a Cancel stopped
CANCELLED = "cancelled"
#: arrays smaller than this go with each job; larger ones once to the fit process (Stored)
SHARE_BYTES = 1 << 20


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
    """Fit ``estimator`` on the training rows and evaluate it."""

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
    """Any other call into rwtool's numerics (load a model, apply it to a CSV, measure the
    permutation importance).

    With ``progress_id``, ``fn`` also gets ``callback=`` (rwtool.progress): its events go out
    as progress of that id and Cancel stops it (rwtool.FitCancelled, reported as a failed call
    of kind "cancelled"). ``in_process``: the call runs in the fit process, as the fits do
    (``fn`` a module-level function, its arguments picklable; the large arrays and a model the
    process keeps among ``args`` and ``kwargs`` go as tokens)."""

    tag: str
    fn: Callable
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    progress_id: int | None = None
    in_process: bool = False


@dataclass
class ReadJob(CallJob):
    """Reading a file (a CSV's preview or its encoded rows, a model file: gui.logic.reading,
    rwtool.persist.read_model), in the fit process like the fits (``in_process``): rwtool's
    reader holds the interpreter lock of the process it runs in. It ends in seconds and has no
    progress, so a Cancel, meant for a fit, does not stop it; the window drops the outcome of a
    read it no longer wants."""

    in_process: bool = True


@dataclass
class WarmUpJob:
    """Fit every method of ``families`` (rwtool.report method keys) once on tiny data
    (:func:`warm_up_jobs`), where the fits run, so that numba loads its kernels there before
    the user's first fit; the outcome is ``("called", "warm-up", number of fits)``."""

    families: tuple = ()
    tag: str = "warm-up"


def event_dict(event) -> dict:
    """An rwtool.progress event as the plain dict the app's signals carry."""
    metrics = {}
    for k, v in dict(event.metrics).items():
        try:
            metrics[str(k)] = float(v)
        except (TypeError, ValueError):
            continue
    return {"stage": event.stage, "done": int(event.done), "total": int(event.total),
            "metrics": metrics, "elapsed": float(event.elapsed), "kind": event.kind}


def _is_fitted(est) -> bool:
    return any(k.endswith("_") and not k.startswith("_") for k in vars(est)) and (
        hasattr(est, "coef_") or hasattr(est, "particles_") or hasattr(est, "dual_coef_"))


def cancelled_outcome(job, message: str | None = None, stopped: float | None = None) -> tuple:
    """The outcome of ``job`` stopped by a Cancel before it produced a model; ``stopped``: the
    grace in seconds after which its process was stopped (the job had not reached a progress
    report, where an iterative fit hands back its last iterate: the note says none was kept)."""
    default = ("cancelled" if isinstance(job, (CallJob, WarmUpJob)) else
               "pruning cancelled" if isinstance(job, PruneJob) else
               "computing the bounds cancelled" if isinstance(job, BoundsJob) else
               "training cancelled")
    message = message or default
    if stopped is not None:
        message += (f": it did not reach its next progress report within {stopped:g} s of "
                     f"the Cancel, so its process was stopped and no partial model was kept")
    return failure(job, {"message": message, "kind": CANCELLED, "details": ""})


def run_job(job, callback: Callable | None, stop=None) -> tuple:
    """Run ``job`` to its outcome (see the module docstring). ``callback`` receives the
    rwtool.progress events of the job and cancels it by returning True; ``stop`` (with
    ``is_set()``) ends the warm-up early."""
    if isinstance(job, PruneJob):
        return _prune(job, callback)
    if isinstance(job, TrainJob):
        return _train(job, callback)
    if isinstance(job, BoundsJob):
        out = _reported(job, "computing the bounds cancelled", lambda: model_bounds(
            job.estimator, job.X_train, job.y_train, callback))
        if out[0] == "failed":
            return out
        out[2]["kind"] = "bounds"
        return ("finished", job.run_id, out[2])
    if isinstance(job, WarmUpJob):
        from rwtool.report import METHODS
        fams = [METHODS[k] for k in job.families if k in METHODS]
        return _called(job.tag, lambda: warm_up_jobs(fams)(stop or threading.Event()))
    if isinstance(job, CallJob):
        kwargs = dict(job.kwargs)
        if job.progress_id is not None:
            kwargs["callback"] = callback
        return _called(job.tag, lambda: job.fn(*job.args, **kwargs))
    raise TypeError(f"not a job of the app: {type(job).__name__}")


def progress_id(job) -> int | None:
    """The id the progress events of ``job`` carry (None: the job reports none)."""
    if isinstance(job, CallJob):
        return job.progress_id
    return getattr(job, "run_id", None)


def _called(tag: str, fn) -> tuple:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ("called", tag, fn())
    except FitCancelled:
        return ("call_failed", tag, {"message": "cancelled", "kind": CANCELLED, "details": ""})
    except Exception as exc:
        return ("call_failed", tag, describe_error(exc))


def _reported(job, cancelled: str, fn) -> tuple:
    """``("finished", id, fn())`` (warnings silenced), or the failed outcome saying why:
    ``cancelled`` for a Cancel, the error's message otherwise."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ("finished", job.run_id, fn())
    except FitCancelled:
        return cancelled_outcome(job, cancelled)
    except Exception as exc:
        return ("failed", job.run_id, describe_error(exc))


def _train(job: TrainJob, callback) -> tuple:
    est = job.estimator
    plan = job.plan if job.plan is not None else Holdout()
    t0 = time.perf_counter()
    extra: dict = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            extra = plan.fit(est, job, callback, job.weights) or {}
        except FitCancelled as exc:
            if not (exc.partial_model and _is_fitted(est)):
                return cancelled_outcome(job)
            # the cancel asked to stop now: the last iterate is kept, not evaluated (its
            # predictions on every row would take as long as the evaluation of a whole fit)
            return _partial(job, est, time.perf_counter() - t0, caught)
        except Exception as exc:  # shown in the app; the previous model stays
            return ("failed", job.run_id, describe_error(exc))
    return _evaluated(job, est, time.perf_counter() - t0, caught, callback, extra)


def _partial(job, est, wall_time, caught) -> tuple:
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
    return ("finished", job.run_id, res)


def _evaluated(job, est, wall_time, caught, callback, extra=None) -> tuple:
    # the predictions on every row take seconds on a large file: they run in slices with
    # "evaluating" progress, and Cancel stops them; the bounds are computed when asked for
    out = _reported(job, "cancelled while evaluating the model", lambda: evaluate(
        est, job.X_train, job.y_train, job.X_test, job.y_test, task=job.task,
        feature_names=job.feature_names, fit_time=wall_time, bounds=False,
        callback=callback))
    if out[0] == "failed":
        return out
    res = out[2]
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
    res["metrics"] = {**{k: m[k] for k in keys[:at]}, **more, **{k: m[k] for k in keys[at:]}}
    res.update(extra)
    res["estimator"] = est
    res["cancelled"] = False
    res["warnings"] = list(dict.fromkeys(str(w.message) for w in caught))
    return ("finished", job.run_id, res)


def _prune(job: PruneJob, callback) -> tuple:
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fn = job.estimator.prune
            kw = dict(job.kwargs)
            if supports(fn, "callback"):
                kw["callback"] = callback
            pruned = fn(**kw)
        except FitCancelled:
            return cancelled_outcome(job)
        except Exception as exc:
            return ("failed", job.run_id, describe_error(exc))
    if pruned is None:   # an in-place prune() returns nothing
        pruned = job.estimator
    return _evaluated(job, pruned, time.perf_counter() - t0, caught, callback)


def warm_up_jobs(families) -> Callable[[threading.Event], int]:
    """A function that reads a tiny CSV (gui.logic.reading.warm_up_reading), then fits and
    evaluates every estimator of ``families`` (rwtool.report methods) once on tiny data (one fit
    per choice of its instantiation/base/solver/...), so numba loads or compiles its kernels
    before the user's first fit. It stops early when the given event is set and returns the
    number of fits run."""
    from .methods import param_specs

    small = {"n_features": 8, "n_particles": 4, "max_iter": 1, "n_candidates": 8,
             "knn_k": 5, "n_epochs": 1, "random_state": 0}
    axes = ("instantiation", "base", "solver", "selector", "penalty", "variant")

    def run(stop) -> int:
        # the reader first: a file is what a user opens before any fit (ReadJob)
        try:
            warm_up_reading()
        except Exception:     # nothing warmed: the first read loads its kernels itself
            pass
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


# ------------------------------------------------------------------- the fit process's side

class SharedFlag:
    """A flag the app sets and its fit process reads: threading.Event's ``set``, ``clear`` and
    ``is_set`` on one byte of shared memory (multiprocessing's Event holds semaphores, which
    the interpreter reports as leaked at exit). Handed to the process when it starts."""

    def __init__(self, ctx):
        self._byte = ctx.RawValue("b", 0)

    def set(self) -> None:
        self._byte.value = 1

    def clear(self) -> None:
        self._byte.value = 0

    def is_set(self) -> bool:
        return bool(self._byte.value)


@dataclass(frozen=True)
class Stored:
    """An array or a model the fit process already holds (sent once, or kept there from the
    job that fitted it, under this token)."""

    token: int


def _each(value, fn):
    """``value`` with ``fn`` applied to it, or to its items when it is a tuple or a dict (a
    CallJob's args and kwargs)."""
    if isinstance(value, tuple):
        return tuple(fn(v) for v in value)
    if isinstance(value, dict):
        return {k: fn(v) for k, v in value.items()}
    return fn(value)


def _items(value):
    """The values :func:`_each` applies its function to."""
    return value.values() if isinstance(value, dict) else \
        value if isinstance(value, tuple) else (value,)


def _swapped(job, fn):
    """``job`` with ``fn`` applied to its fields (:func:`_each`); ``job`` itself when ``fn``
    changed nothing."""
    changes = {}
    for f in fields(job):
        v = getattr(job, f.name)
        w = _each(v, fn)
        if any(a is not b for a, b in zip(_items(v), _items(w))):
            changes[f.name] = w
    return replace(job, **changes) if changes else job


def share_arrays(job, known: Callable[[Any], tuple[int, bool] | None]):
    """``(job with its large arrays and kept models replaced by Stored tokens, [(token, array)
    to send first], {token: the value it replaced})``: ``known(value)`` gives the token of an
    array of at least SHARE_BYTES or of a model the process keeps, and whether the process
    has it (None: the value goes with the job). The Data tab's arrays are shared by every run, so the process receives
    them once; a model stays where it was fitted."""
    new, swapped = [], {}

    def swap(v):
        if isinstance(v, np.ndarray) and v.nbytes < SHARE_BYTES:
            return v
        got = known(v) if isinstance(v, np.ndarray) or hasattr(v, "get_params") else None
        if got is None:
            return v
        token, has = got
        if not has:
            new.append((token, v))
        swapped[token] = v
        return Stored(token)
    return _swapped(job, swap), new, swapped


def _resolved(job, held: dict):
    """``job`` with its Stored values replaced by what the fit process holds (``held``:
    token -> array or model)."""
    return _swapped(job, lambda x: held[x.token] if isinstance(x, Stored) else x)


def reachable_arrays(obj, seen: set | None = None):
    """Every numpy array reachable from ``obj`` through dicts, lists, tuples and attributes,
    once each (``seen``: ids already walked)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from reachable_arrays(v, seen)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from reachable_arrays(v, seen)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        yield from reachable_arrays(vars(obj), seen)


def kept_model(out: tuple):
    """The model the fit process keeps from the outcome ``out`` of a job sent with a token to
    keep it under: the estimator of a finished fit or prune (None for any other outcome)."""
    if out[0] == "finished" and isinstance(out[2], dict):
        return out[2].get("estimator")
    return None


def by_token(payload, held: dict):
    """A job's result dict with the values that are arrays the job received as Stored
    (``held``: id(array) -> Stored) replaced by their Stored: the app holds them already
    (the evaluation keeps y_train, y_test, X_train2... as given), so they do not go back
    through the pipe, nor become a copy per run in the window."""
    if not held or not isinstance(payload, dict):
        return payload
    return {k: held.get(id(v), v) if isinstance(v, np.ndarray) else v
            for k, v in payload.items()}


def from_token(payload, arrays: dict):
    """The inverse of :func:`by_token` on the app's side (``arrays``: token -> array)."""
    if not arrays or not isinstance(payload, dict):
        return payload
    return {k: arrays[v.token] if isinstance(v, Stored) else v for k, v in payload.items()}


class _Channel:
    """The fit process's end of the pipe: events out (each after the app has handled the one
    before), acknowledgements and the Cancel flag in."""

    def __init__(self, conn, cancel):
        self.conn, self.cancel = conn, cancel
        self.sent = self.acked = 0

    def take(self, msg) -> bool:
        """Note an acknowledgement; False for any other message."""
        if msg[0] != "ack":
            return False
        self.acked = max(self.acked, int(msg[1]))
        return True

    def callback(self, progress_id: int):
        def cb(event) -> bool:
            while self.acked < self.sent:
                if not self.take(self.conn.recv()):
                    raise RuntimeError("the app sent a job while one was running")
            if self.cancel.is_set():
                return True
            self.sent += 1
            self.conn.send(("progress", self.sent, progress_id, event_dict(event)))
            return False
        return cb


class _JobWaiting:
    """The stop of the warm-up a fresh process runs by itself: a job waiting in the pipe (the
    app's warm-up flag was set by the Cancel that stopped the previous process)."""

    def __init__(self, conn):
        self.conn = conn

    def is_set(self) -> bool:
        return self.conn.poll()


def fit_threads() -> int:
    """numba's thread count in the fit process (see :func:`serve`)."""
    return max(1, numba.config.NUMBA_NUM_THREADS - 1)


def _settle_process(session: bool, nice: int = 0) -> None:
    """A process of the app's jobs as :func:`serve` describes it: in a session of its own
    (``session``), at niceness ``nice``, with :func:`fit_threads` numba threads."""
    if session and hasattr(os, "setsid"):
        try:
            os.setsid()
        except OSError:         # already a session leader
            pass
    if nice and hasattr(os, "nice"):
        os.nice(int(nice))
    # one numba thread fewer than the cores, as the fits had on the worker thread: numba's
    # OpenMP threads spin after every parallel call, and the short slices of work between two
    # progress reports (SFGD's 32,768 features) kept the other core spinning (RW SFGD on skin
    # with the app's callback: 34 s of CPU and 131 s of wall time with two threads, 5.2 s and
    # 27 s with one), leaving none to the window
    numba.set_num_threads(fit_threads())


def serve(conn, cancel, warm_stop, warm_families=(), nice: int = 0,
          session: bool = False) -> None:
    """The loop of the app's fit process: receive arrays and jobs, run each job
    (:func:`run_job`) and send its outcome, until the pipe closes or says "stop".

    ``cancel`` and ``warm_stop`` are the app's flags (:class:`SharedFlag`); ``warm_families``
    (method keys) are warmed up first, until a job arrives; ``nice`` lowers the process's
    priority (os.nice) so that the window gets a core first when both want one; ``session``
    puts the process in a session of its own (os.setsid): Linux's scheduler shares the CPU
    between sessions first (autogroups), so the fit's CPU is then not charged to the window's
    session, whose GUI thread gets a core as soon as it wakes up."""
    _settle_process(session, nice)
    chan = _Channel(conn, cancel)
    arrays: dict[int, np.ndarray] = {}
    conn.send(("ready", os.getpid()))
    if warm_families:
        # a fresh process after a Cancel that had to stop the previous one: load the kernels
        # again while the app is idle; a job arriving stops this after the current tiny fit
        run_job(WarmUpJob(tuple(warm_families)), None, _JobWaiting(conn))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if chan.take(msg):
            continue
        kind = msg[0]
        if kind == "stop":
            return
        if kind == "array":
            arrays[msg[1]] = msg[2]
        elif kind == "forget":
            arrays.pop(msg[1], None)
        elif kind == "job":
            job, keep = msg[1], msg[2]
            held = {id(arrays[t]): Stored(t) for t in _tokens(job)
                    if isinstance(arrays[t], np.ndarray)}
            job = _resolved(job, arrays)
            pid = progress_id(job)
            stop = warm_stop if isinstance(job, WarmUpJob) else None
            out = run_job(job, chan.callback(pid) if pid is not None else None, stop)
            model = kept_model(out) if keep is not None else None
            out = out[:2] + (by_token(out[2], held),)
            try:
                send_pickled(conn, ("outcome",) + out)
                if model is not None:
                    # the app adopts the model that comes back under this token: a later job
                    # on it sends the token, not the model
                    arrays[keep] = model
            except Exception as exc:   # a result that cannot be pickled: say so, stay alive
                conn.send(("outcome",) + failure(job, exc))
            # the models kept here as the app holds them: what a job derived on one (BKerNN's
            # prediction tables, three times the model's arrays) goes with the job
            arrays.update({token: as_pickled(value) for token, value in arrays.items()
                           if not isinstance(value, np.ndarray)})
            del msg, job, out, model
            release_memory()


def serve_once(conn, job: CallJob, session: bool = False) -> None:
    """The loop of a process started for one job (a read while the fit process is busy with
    another job): run ``job`` (:func:`run_job`, no progress), send its outcome with
    :func:`send_pickled`, and end. ``session`` as in :func:`serve`: its CPU is then not
    charged to the window's share of the machine."""
    _settle_process(session)
    out = run_job(job, None)
    try:
        send_pickled(conn, out)
    except Exception as exc:
        conn.send(failure(job, exc))
    conn.close()


def release_memory() -> None:
    """Give the memory freed by a job back to the system (glibc's ``malloc_trim``; nothing
    elsewhere). glibc raises its threshold for allocating a block on its own pages to the
    size of the largest block freed, so the next fit's arrays of a few MB come from the heap,
    which it keeps when they are freed: the fit process held 287 MB more after a BKerNN run
    than before it, its model gone."""
    trim = getattr(_LIBC, "malloc_trim", None)
    if trim is not None:
        trim(0)


def as_pickled(obj):
    """``obj`` as pickling leaves it (what :func:`send_pickled` sends): its arrays shared, not
    copied (pickle protocol 5, out of band), and what its class's ``__getstate__`` leaves out
    dropped."""
    buffers: list = []
    head = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    return pickle.loads(head, buffers=buffers)


def send_pickled(conn, msg) -> None:
    """Send ``msg`` with the memory of its arrays out of band (pickle protocol 5): first
    ``("pickled", sizes)``, then each array's memory as it is, then the pickle of the rest;
    :func:`recv_pickled` reads them on the other side. Pickled in band, a model of 240 MB (a
    BKerNN model at its defaults on 150,000 rows) was copied whole into the message here and
    received whole before its arrays were copied out of it there: twice its size at once in
    both processes. Raises before sending anything when ``msg`` cannot be pickled."""
    buffers: list = []
    head = pickle.dumps(msg, protocol=5, buffer_callback=buffers.append)
    views = [b.raw() for b in buffers]
    conn.send(("pickled", [v.nbytes for v in views]))
    for v in views:
        conn.send_bytes(v)
    conn.send_bytes(head)


def _read_exactly(fd: int, view: memoryview) -> None:
    """Fill ``view`` from ``fd`` (os.readv writes into it: nothing allocated per read)."""
    pos = 0
    while pos < len(view):
        n = os.readv(fd, [view[pos:]])
        if n == 0:
            raise EOFError("the fit process closed the pipe in the middle of a message")
        pos += n


def _recv_bytes_into(conn, buf: bytearray) -> None:
    """``conn.recv_bytes_into(buf)`` without its temporary copy. multiprocessing's connection
    reads a message into an io.BytesIO (and each os.read allocates the bytes still wanted)
    before copying it into ``buf``: up to three times the array at once. On a POSIX pipe this
    reads the connection's frame (a 4-byte big-endian length, -1 then 8 bytes for 2 GiB and
    more) and then the bytes straight into ``buf``; elsewhere it is the connection's own."""
    if not hasattr(os, "readv") or not hasattr(conn, "fileno"):
        conn.recv_bytes_into(buf)
        return
    fd = conn.fileno()
    head = bytearray(4)
    _read_exactly(fd, memoryview(head))
    size = int.from_bytes(head, "big", signed=True)
    if size == -1:
        head = bytearray(8)
        _read_exactly(fd, memoryview(head))
        size = int.from_bytes(head, "big")
    if size != len(buf):
        raise OSError(f"the fit process sent {size} bytes where {len(buf)} were announced")
    _read_exactly(fd, memoryview(buf))


def recv_pickled(conn, sizes):
    """The message :func:`send_pickled` sent, after its ``("pickled", sizes)``: each array's
    memory is read into a buffer of its own, which the array then uses (writable, no copy)."""
    buffers = []
    for n in sizes:
        buf = bytearray(n)
        _recv_bytes_into(conn, buf)
        buffers.append(buf)
    return pickle.loads(conn.recv_bytes(), buffers=buffers)


def _tokens(job) -> list[int]:
    """The tokens of the Stored values of ``job`` (fields, and items of args and kwargs)."""
    return [x.token for f in fields(job) for x in _items(getattr(job, f.name))
            if isinstance(x, Stored)]


def failure(job, exc) -> tuple:
    """The failed outcome of ``job`` for an exception (or an error dict)."""
    err = exc if isinstance(exc, dict) else describe_error(exc)
    if isinstance(job, (CallJob, WarmUpJob)):
        return ("call_failed", job.tag, err)
    return ("failed", job.run_id, err)
