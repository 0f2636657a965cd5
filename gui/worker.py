"""The worker: one thread that runs the jobs in order, the fits in a process of their own.

Every job (a fit and its evaluation, pruning, the bounds, loading or applying a model, the
numba warm-up) goes to the one QThread owned by :class:`WorkerController`, so jobs run in the
order given and parallel numba code is only ever entered from one thread (DESIGN.md section 5).
The fits, their evaluation, pruning, the bounds, the permutation importance, the predictions of
a CSV file and the warm-up run in a *fit process*
(multiprocessing, forkserver where the platform has it; in a session of its own, so that the
scheduler does not charge its CPU to the window): GreedyMK's and BKerNN's fits run much
of their loop in Python, and on the window's interpreter they held its lock for hundreds of
milliseconds at a time. The thread sends the job and its arrays through a pipe (the Data tab's
arrays once per process), turns the process's progress events into a Qt signal carrying a
plain dict and receives the outcome, the fitted model included; the process keeps that model
too (:data:`MODEL_BYTES` of them at most), so that the bounds, a prune, the importance or the
predictions of a file on it send a token instead of the model. Cancel sets a flag the process
reads at its next progress report, so a fit stops at the end of the current chunk of work,
keeping its last iterate when it has one; a job still running :data:`CANCEL_GRACE` seconds
after the click is stopped with its process, which is started again (the run is reported
cancelled, the previous runs and the data are the window's and stay as they were). A process
that dies is reported as the job's error the same way. Reading a file (a CSV's preview, its
encoded rows, a model file: :meth:`WorkerController.read`) runs in the fit process too when it
is idle, and in a process started for that read when it is busy, so that a read never waits
for a fit; nothing of rwtool's reader runs in the window's process. Other calls run on the
thread itself, and small pure-Python work on Qt's thread pool through :func:`run_in_background`.

This module moves work between threads and processes; it must not build widgets.
"""

from __future__ import annotations

import atexit
import collections
import itertools
import multiprocessing
import sys
import threading
import time
import weakref
from multiprocessing.connection import wait as wait_for

import numba
import numpy as np
from PySide6.QtCore import QObject, QRunnable, QThread, QThreadPool, Signal, Slot

from rwtool.resources import current_load

from .logic import jobs
from .logic.jobs import (CANCELLED, BoundsJob, CallJob, PruneJob, ReadJob, TrainJob, WarmUpJob,
                         cancelled_outcome, describe_error, event_dict, run_job, warm_up_jobs)

__all__ = ["TrainJob", "PruneJob", "BoundsJob", "CallJob", "ReadJob", "WarmUpJob", "TrainWorker",
           "WorkerController", "FitProcess", "run_in_background", "run_in_new_process",
           "LoadProbe", "describe_error",
           "warm_up_jobs", "CANCELLED", "CANCEL_GRACE"]

#: seconds a job has to stop by itself after Cancel before its fit process is stopped
CANCEL_GRACE = 0.5
#: the jobs that run in the fit process (the others on the worker thread, but a CallJob made
#: with ``in_process``)
PROCESS_JOBS = (TrainJob, BoundsJob, WarmUpJob)       # PruneJob is a TrainJob
#: bytes of the fitted models the fit process keeps for later jobs (the latest used first; a
#: larger model goes with each job that needs it). Sending a model costs about 6 ms a 2 MB,
#: 76 ms a 24 MB and 1.5 s a 240 MB (pickled, through the pipe, unpickled; load 12-15 on 2
#: cores), and keeping it costs its size in the fit process between jobs: an RKHS weighting
#: at its defaults holds about 0.1 MB and is kept, a BKerNN model at its defaults on 150,000
#: rows 58 MB (its training rows' projections; its prediction tables, 172 MB more, are not
#: pickled and are rebuilt by the job that predicts, gui.logic.jobs.serve); a model of 240 MB
#: kept would put a session of five runs on the 200,000-row file over the 1 GB the two
#: processes may hold (issue 24)
MODEL_BYTES = 64 << 20
#: the fit process's niceness (os.nice): on a busy machine the window gets a core first (a
#: window that has just painted is otherwise behind the fit's threads in the scheduler's
#: queue; bench_gui_load, 2 cores under load 12: longest gap 835 -> 437 ms, gaps over 50 ms
#: 201 -> 123, the fits' wall times within the machine's noise)
FIT_NICE = 10
#: the fit process in a session of its own (gui.logic.jobs.serve): with Linux's autogroups the
#: scheduler divides the CPU between sessions first, then among a session's threads, and a fit
#: in the window's session spent that session's share, so the GUI thread waited behind the
#: machine's other sessions whenever it woke up, niceness or not (bench_gui_load --load 4,
#: RW and GreedyMK: longest gap in training 427-1444 ms -> 202-339 ms)
FIT_SESSION = True


def in_fit_process(job) -> bool:
    """Whether ``job`` runs in the fit process (when the app has one)."""
    return isinstance(job, PROCESS_JOBS) or (isinstance(job, CallJob) and job.in_process)


def _context():
    """forkserver where the platform has it: a new process is a fork of a server that has
    imported rwtool already (a second or two less after a stopped job); spawn elsewhere."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload([jobs.__name__])
        return ctx
    return multiprocessing.get_context("spawn")


class FitProcess:
    """The process the fits run in, seen from the worker thread: start it, send it arrays and
    jobs, stop it. The arrays of a job go once per process (:func:`gui.logic.jobs.share_arrays`)
    and are forgotten there when the window drops them; the model a fit or a prune returns
    stays there too (:meth:`adopt`), up to :data:`MODEL_BYTES`, the least recently used
    forgotten first."""

    def __init__(self, ctx, cancel, warm_stop):
        self.ctx, self.cancel, self.warm_stop = ctx, cancel, warm_stop
        self.proc = self.conn = None
        self.ready = False
        self.warm_families: tuple = ()     # warmed up again by a process started after a stop
        self._tokens = itertools.count(1)
        self._held: dict[int, tuple] = {}    # id(array) -> (weak reference, token)
        self._dropped: list[tuple[int, int]] = []
        self._models: collections.OrderedDict[int, int] = collections.OrderedDict()  # bytes

    def start(self, warm: bool = False) -> None:
        parent, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(
            target=jobs.serve, name="rwtool-fits", daemon=True,
            args=(child, self.cancel, self.warm_stop, self.warm_families if warm else (),
                  FIT_NICE, FIT_SESSION))
        self.proc.start()
        child.close()
        self.conn, self.ready = parent, False
        self._held.clear()
        self._dropped.clear()
        self._models.clear()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.is_alive()

    def _known(self, a) -> tuple[int, bool] | None:
        held = self._held.get(id(a))
        if held is not None and held[0]() is a:
            if held[1] in self._models:
                self._models.move_to_end(held[1])
            return held[1], True
        if not isinstance(a, np.ndarray):
            return None                    # a model the process does not keep: sent as is
        token = next(self._tokens)
        self._hold(a, token)
        return token, False

    def _hold(self, obj, token: int) -> None:
        key = id(obj)
        self._held[key] = (weakref.ref(obj, lambda r, k=key, t=token:
                                       self._dropped.append((k, t))), token)

    def _forget(self, token: int) -> None:
        self._models.pop(token, None)
        self.conn.send(("forget", token))

    def adopt(self, model, token: int) -> None:
        """``model`` (the window's copy of the outcome of a job sent with ``token`` to keep)
        is the one the process keeps under ``token``: later jobs send the token instead."""
        size = sum(a.nbytes for a in jobs.reachable_arrays(model))
        if size > MODEL_BYTES:
            self._forget(token)
            return
        self._hold(model, token)
        self._models[token] = size
        while sum(self._models.values()) > MODEL_BYTES:
            old = next(iter(self._models))
            for key, (_, t) in list(self._held.items()):
                if t == old:
                    del self._held[key]
            self._forget(old)

    def send_job(self, job) -> tuple[dict, int | None]:
        """Send ``job`` (its new large arrays first); the arrays it sent as Stored, by token
        (:func:`gui.logic.jobs.from_token` puts them back into its outcome), and the token the
        process keeps the model of a fit or prune under (None for other jobs)."""
        while self._dropped:
            key, token = self._dropped.pop()
            held = self._held.get(key)
            if held is not None and held[1] == token:
                del self._held[key]
            self._forget(token)
        shared, new, swapped = jobs.share_arrays(job, self._known)
        for token, a in new:
            self.conn.send(("array", token, a))
        keep = next(self._tokens) if isinstance(job, TrainJob) else None
        self.conn.send(("job", shared, keep))
        return swapped, keep

    def stop(self, timeout: float = 2.0) -> None:
        """End the process: ask, then terminate, then kill."""
        if self.proc is None:
            return
        proc, conn = self.proc, self.conn
        self.proc = self.conn = None
        if proc.is_alive() and timeout > 0:
            try:
                conn.send(("stop",))
            except OSError:
                pass
            proc.join(timeout)
        if proc.is_alive():
            proc.terminate()
            proc.join(0.5)
        if proc.is_alive():
            proc.kill()
            proc.join(1.0)
        conn.close()


class TrainWorker(QObject):
    """Lives on the worker thread; executes jobs one at a time (the fits in the fit process
    when ``processes`` is true, on this thread otherwise)."""

    progress = Signal(int, object)        # run id, event dict
    finished = Signal(int, object)        # run id, result dict (with "estimator")
    failed = Signal(int, object)          # run id, error dict
    called = Signal(str, object)          # tag, return value of a CallJob
    call_failed = Signal(str, object)

    def __init__(self, processes: bool = True):
        super().__init__()
        self.ctx = _context() if processes else None
        self.cancel_flag = jobs.SharedFlag(self.ctx) if processes else threading.Event()
        self.warm_stop = jobs.SharedFlag(self.ctx) if processes else threading.Event()
        self.fits = FitProcess(self.ctx, self.cancel_flag, self.warm_stop) if processes \
            else None
        # a Cancel wakes the thread waiting on the fit process (no polling while a fit runs)
        self._woken, self._wake = self.ctx.Pipe(duplex=False) if processes else (None, None)
        #: seconds a job may take to stop after Cancel before its process is stopped
        self.grace = CANCEL_GRACE
        self.closing = False               # no fresh process after a stop: the window closes
        self._stopped = False              # the fit process was stopped during the last job

    # The callback runs on this thread inside the solver; it only emits and reads a flag.
    def _callback(self, run_id: int):
        def cb(event) -> bool:
            self.progress.emit(run_id, event_dict(event))
            return self.cancel_flag.is_set()
        return cb

    def _emit(self, out: tuple) -> None:
        kind, key, payload = out
        getattr(self, kind).emit(key, payload)

    @Slot(object)
    def execute(self, job) -> None:
        try:
            out = None
            if self.fits is not None and in_fit_process(job):
                out = self._in_process(job)
            if out is None:
                out = self._here(job)
        except Exception as exc:       # a failure of the worker itself ends the job, not the app
            out = jobs.failure(job, exc)
        self._emit(out)
        if self._stopped:
            # a fresh fit process after the window has heard of the stopped one's end
            self._stopped = False
            if not self.closing:
                self.fits.start(warm=True)

    def _here(self, job) -> tuple:
        # numba's thread count is per thread: leave one core to the GUI thread (and Qt's
        # painting threads), which otherwise waits behind the numerics and stalls for 100+ ms;
        # the same count as the fit process's
        numba.set_num_threads(jobs.fit_threads())
        pid = jobs.progress_id(job)
        return run_job(job, self._callback(pid) if pid is not None else None, self.warm_stop)

    def _in_process(self, job) -> tuple:
        """Run ``job`` in the fit process; its outcome, or the cancelled / failed outcome when
        the process had to be stopped or died."""
        fits = self.fits
        if isinstance(job, WarmUpJob):
            fits.warm_families = tuple(job.families)
        if not fits.alive():
            fits.stop(0)
            try:
                fits.start()
            except Exception as exc:
                return self._no_process(exc)
        cancelled_at = None
        sent = False
        arrays: dict = {}
        keep = None
        while True:
            timeout = None
            if self.cancel_flag.is_set() and not isinstance(job, (WarmUpJob, ReadJob)):
                now = time.monotonic()
                cancelled_at = cancelled_at or now
                if not sent or now - cancelled_at > self.grace:
                    if sent:
                        # the job did not stop by itself: stop its process, start a fresh one
                        self._restart()
                        return cancelled_outcome(job, stopped=self.grace)
                    return cancelled_outcome(job)
                timeout = cancelled_at + self.grace - now + 0.001
            if fits.ready and not sent:
                arrays, keep = fits.send_job(job)
                sent = True
            ready = wait_for([fits.conn, fits.proc.sentinel, self._woken], timeout)
            if self._woken in ready:
                while self._woken.poll():
                    self._woken.recv_bytes()
            if fits.conn in ready or (fits.proc.sentinel in ready and fits.conn.poll()):
                try:
                    msg = fits.conn.recv()
                    if msg[0] == "pickled":          # an outcome with its arrays out of band
                        msg = jobs.recv_pickled(fits.conn, msg[1])
                except (EOFError, OSError):
                    return self._died(job) if fits.ready else self._no_process(None)
                if msg[0] == "ready":
                    fits.ready = True
                elif msg[0] == "progress":
                    self.progress.emit(msg[2], msg[3])
                    fits.conn.send(("ack", msg[1]))
                elif msg[0] == "outcome":
                    out = msg[1:3] + (jobs.from_token(msg[3], arrays),)
                    model = jobs.kept_model(out) if keep is not None else None
                    if model is not None:
                        fits.adopt(model, keep)
                    return out
            elif fits.proc.sentinel in ready:
                return self._died(job) if fits.ready else self._no_process(None)

    def wake(self) -> None:
        """Wake the thread if it waits on the fit process (called by Cancel, any thread)."""
        if self._wake is not None:
            self._wake.send_bytes(b"c")

    def _no_process(self, exc) -> None:
        """The fit process could not start (a script that starts the app without an
        ``if __name__ == "__main__":`` guard, which a new process imports again): the fits run
        on this thread from now on, as before the fit process existed."""
        code = None if self.fits.proc is None else self.fits.proc.exitcode
        self.fits.stop(0)
        self.fits = None
        print(f"rwtool-gui: the fit process could not start ({exc or f'exit code {code}'}); "
              f"the fits run on the worker thread", file=sys.stderr)
        return None

    def _died(self, job) -> tuple:
        proc = self.fits.proc
        # its pipe closed as it exited; the exit code comes from the fork server, which reaps
        # it when it next runs: on a machine busy compiling that took more than a second once
        # (the error then said "exit code None")
        if proc is not None and proc.exitcode is None:
            proc.join(5.0)
        code = None if proc is None else proc.exitcode
        self._restart()
        err = {"message": f"the fit process stopped unexpectedly (exit code {code}) before "
                          f"the job ended; the data and the previous runs are unchanged",
               "kind": "ProcessError", "details": ""}
        return jobs.failure(job, err)

    def _restart(self) -> None:
        """Stop the fit process now; a fresh one starts once the job's outcome is out."""
        self.fits.stop(0)
        self._stopped = True

    def shutdown(self) -> None:
        if self.fits is not None:
            self.fits.stop()


_controllers: "weakref.WeakSet[WorkerController]" = weakref.WeakSet()


@atexit.register
def _shutdown_all() -> None:
    # A QThread destroyed while it runs aborts the process: stop any left running at exit.
    for c in list(_controllers):
        c.shutdown(2000)


class WorkerController(QObject):
    """GUI-side owner of the worker thread: submit jobs, cancel, shut down.

    ``processes=False`` runs the fits on the worker thread itself (tests that replace a
    function of the fit path in their own process use it)."""

    _submit = Signal(object)
    progress = Signal(int, object)
    finished = Signal(int, object)
    failed = Signal(int, object)
    called = Signal(str, object)
    call_failed = Signal(str, object)
    busy_changed = Signal(bool)

    def __init__(self, parent=None, processes: bool = True):
        super().__init__(parent)
        self._thread = QThread()
        self._thread.setObjectName("rwtool-worker")
        self.worker = TrainWorker(processes)
        self.worker.moveToThread(self._thread)
        self._submit.connect(self.worker.execute)
        self.worker.progress.connect(self.progress)
        self.worker.finished.connect(self._done_train)
        self.worker.failed.connect(self._done_fail)
        self.worker.called.connect(self._done_call)
        self.worker.call_failed.connect(self._done_call_fail)
        self._pending = 0
        self._reads: dict[str, tuple] = {}          # tag of a ReadJob -> (on_done, on_error)
        self._read_ids = itertools.count(1)
        self._thread.start()
        _controllers.add(self)

    @property
    def busy(self) -> bool:
        return self._pending > 0

    @property
    def processes(self) -> bool:
        """Whether the fits run in a process of their own."""
        return self.worker.fits is not None

    def submit(self, job) -> None:
        """Queue ``job``; a Cancel pressed from now on (even before it starts) stops it."""
        if not isinstance(job, CallJob) or job.progress_id is not None:
            self.worker.cancel_flag.clear()
        self._pending += 1
        if self._pending == 1:
            self.busy_changed.emit(True)
        self._submit.emit(job)

    def read(self, fn, *args, on_done=None, on_error=None, **kwargs) -> None:
        """Run the reader ``fn(*args, **kwargs)`` (a module-level function: gui.logic.reading,
        rwtool.persist.read_model) away from the window's interpreter, then call
        ``on_done(value)`` or ``on_error(error dict)`` on the GUI thread: in the fit process
        when no job is queued (its reader's kernels are warm: gui.logic.jobs.warm_up_jobs),
        else in a process started for this read (0.7 s of CPU more to load the kernels, but a
        read does not wait for a fit), and on Qt's thread pool when the app has no fit
        process."""
        if not self.processes:
            run_in_background(fn, *args, on_done=on_done, on_error=on_error, **kwargs)
            return
        job = ReadJob(f"read-{next(self._read_ids)}", fn, args, kwargs)
        if self.busy:
            def outcome(out):
                (on_done if out[0] == "called" else on_error)(out[2])
            run_in_background(run_in_new_process, self.worker.ctx, job, on_done=outcome,
                              on_error=on_error)
            return
        self._reads[job.tag] = (on_done, on_error)
        self.submit(job)

    def cancel(self) -> None:
        """Ask the running job to stop at its next progress report (and skip the warm-up);
        a fit that has not stopped :data:`CANCEL_GRACE` seconds later is stopped with its
        process."""
        self.worker.warm_stop.set()
        self.worker.cancel_flag.set()
        self.worker.wake()

    def warm_up(self, families) -> None:
        self.worker.warm_stop.clear()
        self.submit(WarmUpJob(tuple(f.key for f in families)))

    def stop_warm_up(self) -> None:
        self.worker.warm_stop.set()

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
        reader = self._reads.pop(tag, None)
        if reader is None:
            self.called.emit(tag, out)
        elif reader[0] is not None:
            reader[0](out)

    def _done_call_fail(self, tag, err):
        self._finish_one()
        reader = self._reads.pop(tag, None)
        if reader is None:
            self.call_failed.emit(tag, err)
        elif reader[1] is not None:
            reader[1](err)

    def shutdown(self, timeout_ms: int = 5000) -> None:
        """Cancel what runs, stop the thread and wait for it, then the fit process (on
        window close)."""
        if not self._thread.isRunning():
            return
        self.worker.closing = True
        self.cancel()
        self._thread.quit()
        self._thread.wait(timeout_ms)
        self.worker.shutdown()


def run_in_new_process(ctx, job) -> tuple:
    """The outcome of ``job`` run in a process started for it (gui.logic.jobs.serve_once, in a
    session of its own as the fit process), waited for here (a thread of Qt's pool)."""
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=jobs.serve_once, name="rwtool-read", daemon=True,
                       args=(child, job, FIT_SESSION))
    proc.start()
    child.close()
    try:
        msg = parent.recv()
        if msg[0] == "pickled":            # an outcome with its arrays out of band
            msg = jobs.recv_pickled(parent, msg[1])
    except (EOFError, OSError):
        proc.join(1.0)
        return jobs.failure(job, {"message": f"the process reading the file stopped "
                                             f"unexpectedly (exit code {proc.exitcode})",
                                  "kind": "ProcessError", "details": ""})
    finally:
        parent.close()
    proc.join(5.0)
    return tuple(msg)


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


class LoadProbe:
    """How many scheduling groups want a core (rwtool.resources.current_load, the load the
    pre-flight estimate divides the cores by), counted aside: the count scans every task of
    /proc, 40+ ms of CPU on the shared machine; on the GUI thread at each Train click it was
    one pause of the window (300-370 ms under load), and on a thread of the window's process
    it took the CPU the window's session gets just when a run's results are drawn.
    ``runner`` runs it (:func:`run_in_background` by default; the window passes its
    WorkerController.read, which counts in the fit process: its session is the one the next
    fit runs in, and the caller counts its own).

    :meth:`refresh` starts a count unless one runs or the last is younger than ``min_age``
    seconds; :meth:`value` is the last count while younger than ``max_age`` (None: none, the
    caller counts now)."""

    def __init__(self, min_age: float = 2.0, max_age: float = 60.0, runner=None):
        self.runner = runner if runner is not None else run_in_background
        self.min_age, self.max_age = float(min_age), float(max_age)
        self._at: float | None = None
        self._value: float | None = None
        self._running = False

    def refresh(self) -> None:
        if self._running or (self._at is not None and time.monotonic() - self._at < self.min_age):
            return
        self._running = True
        self.runner(current_load, on_done=self._done, on_error=self._failed)

    def value(self) -> float | None:
        if self._at is None or time.monotonic() - self._at > self.max_age:
            return None
        return self._value

    def _done(self, n: float) -> None:
        self._running = False
        self._at, self._value = time.monotonic(), float(n)

    def _failed(self, err) -> None:
        self._running = False


