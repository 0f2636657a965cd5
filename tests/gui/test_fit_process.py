"""The app's fits run in a process of their own (gui.worker's fit process), so that the
window's interpreter is never held by a fit's Python (issue 24: gaps of 544-893 ms with
GreedyMK and BKerNN fits on the window's worker thread).

Oracles: the same estimator fitted in this process with the same parameters (the model that
comes back through the pipe equals it bit for bit: both are computed on this machine, from the
same arrays, by the same kernels); the window's data and runs, compared by identity before and
after a failure. Cancel is counted in progress events, never in seconds: a Cancel set while the
window handles event k ends the run before event k + 1 (the process waits before each event
until the window has handled the one before).
"""

from __future__ import annotations

import multiprocessing
import os
import time

import numpy as np
import pytest

pytest.importorskip("pytestqt")
pytest.importorskip("pyqtgraph")

# every test here starts the fit process (a forkserver and a warmed-up child): slow
pytestmark = pytest.mark.slow

from PySide6.QtCore import QSettings  # noqa: E402

from rwtool import BKerNNClassifier, RWClassifier  # noqa: E402
from rwtool.progress import ProgressEvent  # noqa: E402

from gui.app import create_app  # noqa: E402
from gui.main_window import MainWindow  # noqa: E402
from tests.gui.test_main_window import TIMEOUT, choose, load, moons_csv, train  # noqa: E402
from tests.gui.test_steering import CancelAt, call_cancelled_at  # noqa: E402


def _in_fit_process() -> None:
    # these estimators end their process: never let one run in the test's own
    if multiprocessing.parent_process() is None:
        raise AssertionError("meant to run in the app's fit process only")


class Crashing(RWClassifier):
    """Stands for a fit that kills its process (a segfault in compiled code, the OOM killer)."""

    def fit(self, X, y, callback=None):
        _in_fit_process()
        os._exit(3)


class Stalled(RWClassifier):
    """Stands for a fit that holds a long computation without a progress report (one LAPACK
    call on a huge matrix): it reports once, then never again."""

    def fit(self, X, y, callback=None):
        _in_fit_process()
        if callback is not None:
            callback(ProgressEvent("stalled", 0, 1))
        time.sleep(600)
        return self


@pytest.fixture
def pwindow(qtbot, tmp_path):
    """The window as the app runs it: fits in the fit process."""
    create_app()
    win = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat),
                     warm_up=False)
    qtbot.addWidget(win)
    win.resize(1280, 800)
    win.show()
    assert win.worker.processes
    yield win
    win.worker.shutdown()


def _fit_as_the_fit_process(est, X, y):
    """``est.fit(X, y)`` here with the fit process's thread counts: its numba threads
    (gui.logic.jobs.fit_threads) and the BLAS threads of the environment it started with
    (gui.app sets OPENBLAS_NUM_THREADS to one less than the cores); the BLAS thread count
    changes the last bits of RW's least-squares fit (BKerNN's fit runs on one BLAS thread:
    rwtool.threads)."""
    import numba

    from gui.logic.jobs import fit_threads
    threadpoolctl = pytest.importorskip("threadpoolctl")
    blas = int(os.environ.get("OPENBLAS_NUM_THREADS", "0")) or None
    before = numba.get_num_threads()
    numba.set_num_threads(fit_threads())
    try:
        with threadpoolctl.threadpool_limits(limits=blas, user_api="blas"):
            return est.fit(X, y)
    finally:
        numba.set_num_threads(before)


@pytest.mark.parametrize("family,params,cls", [
    ("rw", {"n_features": 40, "random_state": 3}, RWClassifier),
    ("bkernn", {"n_particles": 4, "max_iter": 3, "random_state": 1}, BKerNNClassifier),
])
def test_the_model_from_the_fit_process_is_the_in_process_fit(qtbot, pwindow, tmp_path,
                                                              family, params, cls):
    load(qtbot, pwindow, moons_csv(tmp_path / "m.csv", n=300))
    choose(pwindow, family, **params)
    run = train(qtbot, pwindow)
    assert run.status == "done", run.note
    tr, te = pwindow.data_info["train"], pwindow.data_info["test"]
    ref = _fit_as_the_fit_process(cls(**run.params), tr.X, tr.y)
    est = run.result["estimator"]
    assert type(est) is cls
    fitted = [k for k in vars(ref) if k.endswith("_") and isinstance(vars(ref)[k], np.ndarray)]
    assert fitted
    for k in fitted:
        assert np.array_equal(vars(est)[k], vars(ref)[k]), k
    assert np.array_equal(run.result["pred_test"], ref.predict(te.X))
    assert np.array_equal(est.decision_function(te.X), ref.decision_function(te.X))


@pytest.mark.parametrize("stage,family,params,kfold", [
    ("iterations", "rfsgd", {"n_features": 40, "n_epochs": 2000}, None),
    ("search", "rw", {"n_features": 60, "reg": "auto"}, None),   # the choice of reg
    ("evaluating", "rks", {"n_features": 40}, None),
    ("cross-validation", "rw", {"n_features": 30}, 3),
])
def test_cancel_in_the_fit_process_ends_before_the_next_event(qtbot, pwindow, tmp_path, stage,
                                                              family, params, kfold):
    load(qtbot, pwindow, moons_csv(tmp_path / "m.csv", n=400))
    choose(pwindow, "rw", n_features=30, random_state=0, reg=1e-3)
    first = train(qtbot, pwindow)
    shown = pwindow.results_panel.result
    choose(pwindow, family, random_state=0, **params)
    if kfold:
        pwindow.eval_panel.set_kfold(kfold)
    # SGD: after its first chunk. At the phase's first event (done = 0) the chunk still has to
    # load or compile its kernels (this window has no warm-up), which took more than the grace
    # after a change to the sources or under load: the process was then stopped, by design,
    # and the run had no partial model (test_a_fit_deaf_to_cancel_is_stopped_with_its_process)
    hook = CancelAt(pwindow, stage, started=stage == "iterations")
    try:
        run = train(qtbot, pwindow)
    finally:
        hook.close()
    assert stage in hook.seen
    assert hook.after == 0, hook.seen                # no event after the cancelled one
    if stage == "iterations":       # SGD keeps its last iterate, shown as a partial model
        assert run.status == "cancelled (partial model)", (run.status, run.note)
        assert 0 < run.result["estimator"].n_iter_
    else:                           # no model: the previous results stay
        assert run.status == "cancelled", (run.status, run.note)
        assert pwindow.results_panel.result is shown
    assert first.status == "done" and first.result["estimator"] is not None


def test_cancel_of_the_bounds_in_the_fit_process(qtbot, pwindow, tmp_path):
    load(qtbot, pwindow, moons_csv(tmp_path / "m.csv", n=400))
    choose(pwindow, "rw", n_features=50, random_state=0)
    run = train(qtbot, pwindow)
    before = dict(run.result["metrics"])
    hook = CancelAt(pwindow, "bounds")
    try:
        with qtbot.waitSignal(pwindow.worker.failed, timeout=TIMEOUT):
            pwindow.compute_bounds()
    finally:
        hook.close()
    assert "bounds" in hook.seen and hook.after == 0, hook.seen
    assert run.result["metrics"] == before
    with qtbot.waitSignal(pwindow.run_finished, timeout=TIMEOUT):
        pwindow.compute_bounds()
    tr = pwindow.data_info["train"]
    ref = run.result["estimator"].bounds(tr.X, tr.y)    # here, on the model that came back
    for key in ("theta", "rkhs_norm", "train_loss"):
        # the same sums, possibly with another BLAS thread count (another order): rounding
        assert run.result["metrics"][f"bound: {key}"] == pytest.approx(
            ref[key], rel=1e-9, abs=1e-12), key


def _previous_state(window):
    return (window.data_info, dict(window.run_list.runs), window.results_panel.result)


def test_a_crash_of_the_fit_process_is_an_error_and_the_next_fit_works(qtbot, pwindow,
                                                                       tmp_path, monkeypatch):
    load(qtbot, pwindow, moons_csv(tmp_path / "m.csv"))
    choose(pwindow, "rw", n_features=30, random_state=0)
    first = train(qtbot, pwindow)
    before = _previous_state(pwindow)
    coef = first.result["estimator"].coef_.copy()
    with monkeypatch.context() as m:
        m.setattr(pwindow.method_panel, "make_estimator",
                  lambda: Crashing(n_features=20, random_state=0))
        run = train(qtbot, pwindow)
    assert run.status == "failed" and "exit code 3" in run.note, (run.status, run.note)
    assert pwindow.banner.kind == "error" and "fit process stopped" in pwindow.banner.text
    data, runs, shown = before
    assert pwindow.data_info is data and pwindow.results_panel.result is shown
    assert all(pwindow.run_list.runs[k] is r for k, r in runs.items())
    assert np.array_equal(first.result["estimator"].coef_, coef)
    again = train(qtbot, pwindow)                # a fresh process takes the next fit
    assert again.status == "done", again.note
    assert np.array_equal(again.result["estimator"].coef_, coef)


def test_a_fit_deaf_to_cancel_is_stopped_with_its_process(qtbot, pwindow, tmp_path,
                                                         monkeypatch):
    """Cancel is a request first; a job that does not stop within the grace period (it makes
    no progress report) is ended by stopping its process; the run is cancelled, the previous
    ones stay, and the next fit runs in a fresh process."""
    load(qtbot, pwindow, moons_csv(tmp_path / "m.csv"))
    choose(pwindow, "rw", n_features=30, random_state=0)
    first = train(qtbot, pwindow)
    before = _previous_state(pwindow)
    pid = pwindow.worker.worker.fits.proc.pid
    seen = []

    def cancel(run_id, ev):
        seen.append(ev["stage"])
        pwindow.cancel()
    pwindow.worker.progress.connect(cancel)
    with monkeypatch.context() as m:
        m.setattr(pwindow.method_panel, "make_estimator",
                  lambda: Stalled(n_features=20, random_state=0))
        run = train(qtbot, pwindow)
    pwindow.worker.progress.disconnect(cancel)
    assert seen == ["stalled"]
    assert run.status == "cancelled", (run.status, run.note)
    # the note says why there is no model, the grace it waited, and that the process stopped
    assert "0.5 s" in run.note and "process was stopped" in run.note, run.note
    assert "no partial model" in run.note, run.note
    data, runs, shown = before
    assert pwindow.data_info is data and pwindow.results_panel.result is shown
    assert all(pwindow.run_list.runs[k] is r for k, r in runs.items())
    again = train(qtbot, pwindow)
    assert again.status == "done", again.note
    assert pwindow.worker.worker.fits.proc.pid != pid
    assert np.array_equal(again.result["estimator"].coef_, first.result["estimator"].coef_)


def test_the_data_goes_once_to_the_fit_process_and_is_forgotten_with_the_window():
    """The Data tab's arrays (shared by every run) go to the fit process once; small ones go
    with each job; an array the window drops is forgotten there too."""
    import gc

    from gui.logic.jobs import SHARE_BYTES, Stored, TrainJob
    from gui.worker import FitProcess

    class Pipe:
        def __init__(self):
            self.sent = []

        def send(self, msg):
            self.sent.append(msg)

    fits = FitProcess(None, None, None)
    fits.conn = Pipe()
    X = np.zeros((SHARE_BYTES // 8 + 1, 1))
    y = np.zeros(10)                                   # small: sent with the job itself
    for run in (1, 2):
        fits.send_job(TrainJob(run, None, X, y, None, None, "binary"))
    kinds = [m[0] for m in fits.conn.sent]
    assert kinds == ["array", "job", "job"], kinds
    token = fits.conn.sent[0][1]
    for m in fits.conn.sent[1:]:
        job = m[1]
        assert job.X_train == Stored(token) and job.y_train is y
    fits.conn.sent.clear()
    del X
    gc.collect()
    X2 = np.ones((SHARE_BYTES // 8 + 1, 1))
    fits.send_job(TrainJob(3, None, X2, y, None, None, "binary"))
    kinds = [m[0] for m in fits.conn.sent]
    assert kinds == ["forget", "array", "job"], kinds
    assert fits.conn.sent[0][1] == token and fits.conn.sent[1][1] != token
    assert fits.conn.sent[1][2] is X2


def test_the_data_does_not_come_back_with_the_outcome():
    """A result's values that are the job's Stored arrays (y_train, X_train2...) go back as
    their tokens and are the window's own arrays again on its side, not copies."""
    import pickle

    from gui.logic.jobs import SHARE_BYTES, Stored, by_token, from_token

    X = np.arange(SHARE_BYTES // 8 + 1, dtype=float)[:, None]
    pred = X[:10, 0] * 2.0
    res = {"X_train2": X, "pred_train": pred, "metrics": {"a": 1.0}}
    sent = by_token(res, {id(X): Stored(7)})
    assert sent["X_train2"] == Stored(7) and sent["pred_train"] is pred
    assert len(pickle.dumps(sent)) < X.nbytes    # the array itself is not in the message
    back = from_token(pickle.loads(pickle.dumps(sent)), {7: X})
    assert back["X_train2"] is X
    assert np.array_equal(back["pred_train"], pred) and back["metrics"] == {"a": 1.0}


class _Pipe:
    """The window's end of the pipe, recording what is sent."""

    def __init__(self):
        self.sent = []

    def send(self, msg):
        self.sent.append(msg)


def test_models_stay_in_the_fit_process_up_to_a_budget(monkeypatch):
    """The model a fit returns is kept in the fit process under the token its job carried: a
    later job on that model (the bounds, a prune, the importance, a file's predictions) sends
    the token, not the model; the least recently used models are forgotten there beyond
    MODEL_BYTES, a model larger than that is sent with each job, and a model the window drops
    is forgotten there too."""
    import gc

    import gui.worker as worker
    from gui.logic.jobs import BoundsJob, CallJob, Stored, TrainJob, kept_model, reachable_arrays
    from gui.logic.importance import measure
    from gui.worker import FitProcess

    X, y = np.zeros((20, 2)), np.zeros(20)
    fits = FitProcess(None, None, None)
    fits.conn = _Pipe()

    def fit(n_features, seed=0):
        return RWClassifier(n_features=n_features, random_state=seed).fit(
            np.random.default_rng(seed).standard_normal((30, 2)), np.arange(30) % 2)

    def kept(model):
        """A fit sent and its outcome adopted, as the worker does: the model's token."""
        _, keep = fits.send_job(TrainJob(1, RWClassifier(), X, y, None, None, "binary"))
        assert kept_model(("finished", 1, {"estimator": model})) is model
        fits.adopt(model, keep)
        return keep

    def size(model):
        return sum(a.nbytes for a in reachable_arrays(model))
    a, b, c, big = fit(100), fit(400, 1), fit(400, 2), fit(3000)
    # room for b, c and half of a: the third model fitted pushes the first out
    monkeypatch.setattr(worker, "MODEL_BYTES", size(b) + size(c) + size(a) // 2)
    ta = kept(a)
    fits.conn.sent.clear()
    _, tok = fits.send_job(BoundsJob(1, a, X, y))
    assert tok is None                              # only a fit or a prune keeps its model
    assert fits.conn.sent[-1][1].estimator == Stored(ta)
    # in a call's arguments too, and the array arguments stay as they are when small
    fits.send_job(CallJob("importance", measure, (a, X, y, None), {"on": "test"},
                          progress_id=0, in_process=True))
    job = fits.conn.sent[-1][1]
    assert job.args[0] == Stored(ta) and job.args[1] is X and job.kwargs == {"on": "test"}
    # a model the process does not keep goes whole
    other = fit(5)
    fits.send_job(BoundsJob(2, other, X, y))
    assert fits.conn.sent[-1][1].estimator is other
    tb = kept(b)
    fits.conn.sent.clear()
    tc = kept(c)
    assert ("forget", ta) in fits.conn.sent and ("forget", tb) not in fits.conn.sent
    fits.send_job(BoundsJob(1, a, X, y))
    assert fits.conn.sent[-1][1].estimator is a     # forgotten there: sent whole again
    fits.send_job(BoundsJob(1, c, X, y))
    assert fits.conn.sent[-1][1].estimator == Stored(tc)
    # larger than the budget: never kept
    fits.conn.sent.clear()
    tbig = kept(big)
    assert ("forget", tbig) in fits.conn.sent
    fits.send_job(BoundsJob(1, big, X, y))
    assert fits.conn.sent[-1][1].estimator is big
    # dropped by the window: forgotten in the process with the next job
    fits.conn.sent.clear()
    del c
    gc.collect()
    fits.send_job(BoundsJob(1, b, X, y))
    assert ("forget", tc) in fits.conn.sent
    assert fits.conn.sent[-1][1].estimator == Stored(tb)


def _spy_jobs(monkeypatch, win):
    """The jobs the worker sends to the fit process (as sent: tokens for what the process
    holds) and those it runs on its own thread, recorded as they go."""
    import gui.logic.jobs as jobs_mod
    sent, here = [], []
    real_share, worker = jobs_mod.share_arrays, win.worker.worker
    real_here = worker._here

    def share(job, known):
        out = real_share(job, known)
        sent.append(out[0])
        return out
    monkeypatch.setattr(jobs_mod, "share_arrays", share)
    monkeypatch.setattr(worker, "_here", lambda job: (here.append(job), real_here(job))[1])
    return sent, here


def test_importance_and_a_file_run_in_the_fit_process_on_the_model_kept_there(
        qtbot, pwindow, tmp_path, monkeypatch):
    """The permutation importance and Apply Model to CSV run in the fit process, on the model
    the fit left there (the job carries its token, not the model), with progress, and Cancel
    stops them at the event it was set in, the run and its results as they were; their
    results are those computed here on the model that came back (rwtool.inspect and predict:
    the same kernels on this machine; a tolerance for another BLAS thread count's rounding)."""
    from gui.logic.jobs import CallJob, Stored
    from gui.panels.importance_actions import IMPORTANCE_JOB
    from rwtool.inspect import permutation_importance
    path = moons_csv(tmp_path / "m.csv", n=10_000)     # predicted in several slices of rows
    load(qtbot, pwindow, path)
    choose(pwindow, "rw", n_features=40, random_state=0)
    run = train(qtbot, pwindow)
    est = run.result["estimator"]
    sent, here = _spy_jobs(monkeypatch, pwindow)
    before = dict(run.result)
    # importance: cancelled at its first event, then measured
    blocker, hook = call_cancelled_at(qtbot, pwindow, "importance", pwindow.compute_importance)
    assert blocker.args[1]["kind"] == "cancelled"
    assert "importance" in hook.seen and hook.after == 0, hook.seen
    assert run.result == before and "permutation" not in run.result
    events = []
    pwindow.worker.progress.connect(lambda pid, ev: events.append((pid, ev["stage"])))
    with qtbot.waitSignal(pwindow.worker.called, timeout=TIMEOUT):
        pwindow.compute_importance()
    assert (IMPORTANCE_JOB, "importance") in events
    imp = run.result["permutation"]
    te = pwindow.data_info["test"]
    ref = permutation_importance(est, te.X, te.y, n_repeats=imp["n_repeats"],
                                 random_state=imp["seed"])
    got = dict(zip(imp["columns"], imp["mean"]))
    for j, name in enumerate(te.feature_names):
        assert got[name] == pytest.approx(ref.importances_mean[j], rel=1e-9, abs=1e-12)
    # a file: cancelled at its first event, then predicted
    blocker, hook = call_cancelled_at(qtbot, pwindow, "predicting",
                                      lambda: pwindow.apply_model(path))
    assert blocker.args[1]["kind"] == "cancelled" and hook.after == 0, hook.seen
    assert pwindow.last_applied is None and run.result["estimator"] is est
    with qtbot.waitSignal(pwindow.worker.called, timeout=TIMEOUT):
        pwindow.apply_model(path)
    from rwtool.data import read_csv
    ds = read_csv(path, "label")
    assert np.array_equal(pwindow.last_applied["pred"], est.predict(ds.X))
    calls = [j for j in sent if isinstance(j, CallJob)]
    assert [j.tag for j in calls] == ["importance"] * 2 + ["apply"] * 2
    assert all(j.args[0] == Stored(j.args[0].token) for j in calls)  # the model's token
    assert not [j for j in here if isinstance(j, CallJob)]


def has_prediction_tables(model) -> bool:
    """Whether ``model`` holds BKerNN's prediction tables (a call run in the fit process)."""
    return hasattr(model, "_tables")


def decision_rows(model, X) -> int:
    """Rows ``model`` scored (a call run in the fit process: a prediction builds its tables)."""
    return len(model.decision_function(X))


def test_a_bkernn_model_is_held_without_its_prediction_tables(qtbot, pwindow, tmp_path,
                                                              monkeypatch):
    """issue 24 "Memory": a BKerNN model at its defaults on 150,000 rows held 230 MB in the
    window, 180 MB of it its prediction tables, which the window never predicts with (its
    predictions run in the fit process). The window's copy holds at most the arrays the tables
    are rebuilt from (the model's own formula: particles_, train_projections_, dual_coef_,
    intercept_, the scaler and the per-iteration history); the copy the fit process keeps for
    later jobs too: a job that predicted on it built its tables, and the next job finds them
    gone. Oracle for the predictions: the window's copy, its tables rebuilt in this process
    (tests/estimators/test_bkernn.py checks the rebuilt tables bit for bit)."""
    from gui.logic.jobs import CallJob, Stored, reachable_arrays
    load(qtbot, pwindow, moons_csv(tmp_path / "m.csv", n=3000))
    m, iters = 6, 2
    choose(pwindow, "bkernn", n_particles=m, max_iter=iters, random_state=0)
    run = train(qtbot, pwindow)
    assert run.status == "done", run.note
    est = run.result["estimator"]
    tr, te = pwindow.data_info["train"], pwindow.data_info["test"]
    n, d, q = tr.n_samples, tr.n_features, 1
    assert est.train_projections_.shape == (n, m) and not hasattr(est, "_tables")
    held = sum(a.nbytes for a in reachable_arrays(est))
    formula = 8 * (n * m + n * q + d * m + q + 7 * (iters + 1) + 2 * d) + est.classes_.nbytes
    assert held <= formula, (held, formula)
    tables = 8 * (m * n + 2 * m * (n + 1) * q)
    assert held < tables / 2
    sent, _ = _spy_jobs(monkeypatch, pwindow)
    got = []
    pwindow.worker.called.connect(lambda tag, value: got.append((tag, value)))
    for fn, args in ((decision_rows, (est, te.X)), (has_prediction_tables, (est,))):
        with qtbot.waitSignal(pwindow.worker.called, timeout=TIMEOUT):
            pwindow.worker.submit(CallJob("probe", fn, args, in_process=True))
    assert [type(j.args[0]) for j in sent] == [Stored, Stored]   # the model kept there
    assert got == [("probe", len(te.X)), ("probe", False)]
    assert np.array_equal(run.result["pred_test"], est.predict(te.X))
