"""The app's pre-flight time estimate against the real time of the run, per method and mode.

    python -m benchmarks.speed.bench_estimate --csv /tmp/skin200k.csv --target label \
        --out docs/bench/estimate.md
    python -m benchmarks.speed.bench_estimate --csv /tmp/skin200k.csv --target label \
        --only rw-sfgd greedy-mfga --modes holdout kfold tune
    python -m benchmarks.speed.bench_estimate --csv samples/customers.csv --target churned \
        --only rfsgd --set n_epochs=150000

The real main window (offscreen) loads the CSV and trains each configuration at the method's
defaults, in each evaluation mode (holdout; ``kfold``: 5-fold cross-validation then the final
fit; ``tune``: the randomized search, then the final fit). For every run the table gives the
estimate the app computed before it (the one its long-fit question quotes: the window's own
call of ``gui.logic.preflight.preflight`` is recorded, fit and post-fit parts), the real wall
time from Train to the run's end (fit, and the evaluation after it: predictions on the
training and test rows), and the ratio real / estimate; issue 24's target is a ratio within
[0.5, 2] for every row. The estimate is CPU work (rwtool.resources.KERNEL_RATES) divided by the
share of a core the machine leaves the run (rwtool.resources.cpu_share), so the table also
gives the CPU seconds of the app's two processes (the window's apart) against the CPU part of
the estimate, and the share of a core the estimate planned against the one the fit process got
(its CPU over the wall time). ``--set NAME=VALUE`` sets a parameter on top of each
configuration's. ``--calibrate ROWS [ROWS ...]`` measures
the kernels' rates instead (the figures KERNEL_RATES records) on each of those numbers of rows,
``--kernels`` only the ones named (the others' time taken off at KERNEL_RATES)::

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 flock /tmp/bench.lock \
        python -m benchmarks.speed.bench_estimate --csv /tmp/skin200k.csv --target label \
        --calibrate 20000 80000 --kernels bkernn_iteration

The CSV (skin resampled to 200,000 rows: ``benchmarks.speed.bench_gui_load.skin_200k``) is the
caller's; nothing is written beside ``--out``. Nothing is asserted: the numbers go into a markdown table with the load average,
because on a shared machine the wall time of a slice of work grows with the load.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from .._common.argcheck import app_run_args
from .._common.output import write_results
from .bench_cancel import ROOT


def _wait(app, cond, timeout):
    """Run the event loop until ``cond()`` (checked every 50 ms) or ``timeout`` s: a loop
    that sleeps between events as the app's own does; a driver polling every few ms used
    about a fifth of a core of the window process on the loaded machine, and the fit process
    (niced below the window, gui.worker.FIT_NICE) waited behind it."""
    from PySide6.QtCore import QEventLoop, QTimer
    t0 = time.perf_counter()
    loop = QEventLoop()
    check = QTimer()
    check.setInterval(50)
    check.timeout.connect(lambda: (cond() or time.perf_counter() - t0 > timeout) and loop.quit())
    check.start()
    if not cond():
        loop.exec()
    check.stop()
    if not cond():
        raise TimeoutError("the run did not end")

#: name -> (method key, parameters beyond the method's defaults): every solver of the random
#: feature methods and every selector of the greedy path
CONFIGS = {
    "rw-lstsq": ("rw", {"solver": "lstsq"}),
    "rw-lasso": ("rw", {"solver": "lasso"}),
    "rw-sfgd": ("rw", {"solver": "sfgd"}),
    "rw-osd": ("rw", {"solver": "osd"}),
    "rks-ridge": ("rks", {"solver": "ridge"}),
    "rks-lasso": ("rks", {"solver": "lasso"}),
    "rks-sgd": ("rks", {"solver": "sgd"}),
    "rfsgd": ("rfsgd", {}),
    "greedy-mfga": ("greedy", {"selector": "mfga"}),
    "greedy-rks": ("greedy", {"selector": "rks"}),
    "bkernn": ("bkernn", {}),
}
MODES = ("holdout", "kfold", "tune")


def _fit_cpu(win) -> tuple[float, float]:
    """CPU seconds so far of this process (the window) and of the app's fit process
    (gui.worker), where the fits run."""
    total = 0.0
    fits = getattr(win.worker.worker, "fits", None)
    proc = getattr(fits, "proc", None)
    if proc is not None and proc.pid:
        try:
            with open(f"/proc/{proc.pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            total = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            pass
    return time.process_time(), total


def app_window():
    """``(app, window)``: the real main window, offscreen, its fits in its fit process, without
    the warm-up it starts by itself, and the long-fit question answered yes."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    sys.path.insert(0, str(ROOT))
    import tempfile

    from PySide6.QtCore import QSettings

    import gui.main_window as mw
    from gui.app import create_app
    app = create_app()
    win = mw.MainWindow(settings=QSettings(os.path.join(tempfile.mkdtemp(), "s.ini"),
                                           QSettings.IniFormat), warm_up=False)
    win.resize(1280, 800)
    win.show()
    win.ask = lambda *a: True
    return app, win


def measure(csv: str, target: str | None, names, modes, timeout: float = 7200.0,
            overrides: dict | None = None) -> list[dict]:
    app, win = app_window()
    import gui.main_window as mw
    win.open_path(csv, target)
    _wait(app, lambda: win.data_info is not None and not win.data_panel.is_loading, timeout)
    # the kernels compiled or loaded from numba's cache first, by the app's own warm-up (in
    # its fit process) before a user's first fit: the estimate does not count compilation
    win.worker.warm_up(win.method_panel.families)
    _wait(app, lambda: not win.worker.busy, timeout)
    seen = {}
    real_preflight = mw.preflight

    def recording(*a, **kw):                        # the estimate the window computed
        seen["check"] = out = real_preflight(*a, **kw)
        return out
    mw.preflight = recording
    state = {"ended": None, "result": None, "stages": {}}

    def on_progress(run_id, ev):
        state["stages"].setdefault(ev.get("stage", ""), (time.perf_counter(),
                                                         time.process_time()))
    win.worker.progress.connect(on_progress)
    win.worker.finished.connect(lambda rid, res: state.update(ended=time.perf_counter(),
                                                              result=res))
    win.worker.failed.connect(lambda rid, err: state.update(ended=time.perf_counter(),
                                                            result=err))
    n_train = len(win.data_info["train"].y)
    out = []
    for name in names:
        key, params = CONFIGS[name]
        params = {**params, **(overrides or {})}
        for mode in modes:
            win.method_panel.set_method(key, params)
            win.eval_panel.set_kfold(5 if mode == "kfold" else None)
            win.eval_panel.set_tuning(mode == "tune")
            if mode == "tune" and not win.eval_panel.tune.isEnabled():
                continue                            # no search space for this method
            seen.clear()
            state.update(ended=None, result=None, stages={})
            t0, c0 = time.perf_counter(), _fit_cpu(win)
            load = os.getloadavg()[0]
            win.train()
            _wait(app, lambda: state["ended"] is not None, timeout)
            wall = state["ended"] - t0
            c1 = _fit_cpu(win)
            ev0 = state["stages"].get("evaluating", (float("nan"),) * 2)
            cpu, window_cpu = c1[0] - c0[0] + c1[1] - c0[1], c1[0] - c0[0]
            res = state["result"] or {}
            check = seen["check"]
            fit_s = (res.get("metrics") or {}).get("fit time (s)", float("nan"))
            row = {"config": name, "mode": mode, "rows": n_train, "wall_s": wall,
                   "fit_s": fit_s, "after_fit_s": wall - fit_s,
                   "est_s": _num(check.seconds), "est_fit_s": _num(check.fit_seconds),
                   "est_after_s": _num(check.after_seconds), "share": check.share,
                   "est_cpu_s": _num(check.seconds) * check.share, "cpu_s": cpu,
                   "window_cpu_s": window_cpu, "window_fit_cpu_s": ev0[1] - c0[0],
                   "load": load, "load_after": os.getloadavg()[0],
                   "error": res.get("message", "")}
            out.append(row)
            print(line(row), flush=True)
    win.worker.shutdown()
    mw.preflight = real_preflight
    return out


def _cpu(fn):
    """Thread CPU seconds of ``fn()`` (every kernel runs on this thread: see calibrate)."""
    t = time.thread_time()
    fn()
    return time.thread_time() - t


def calibrate(csv: str, target: str | None, rows: int = 20_000, kernels=None) -> dict:
    """The CPU rate of every kernel of rwtool.resources.KERNEL_RATES (``kernels``: of those
    named), measured on the first ``rows`` rows of the CSV with one numba and one BLAS thread
    (the app's worker runs one numba thread): each measurement has one kernel whose rate is not
    known yet, the others' time is taken off with the rates measured before it (KERNEL_RATES'
    for a kernel not measured). A timed fit follows an untimed one on the same rows: a fit's
    kernels can depend on its size (BKerNN's CG path from 800 rows, compiled or loaded from
    numba's cache on its first use), and none of that belongs in a rate. Returns {kernel: units
    per CPU second}."""
    import warnings

    import numba
    import numpy as np
    from threadpoolctl import threadpool_limits

    import rwtool as rw
    from rwtool.data import read_csv
    from rwtool.features._bandwidth import knn_sigma
    from rwtool.resources import KERNEL_RATES
    warnings.simplefilter("ignore")
    numba.set_num_threads(1)
    data = read_csv(csv, target)
    X, y = np.ascontiguousarray(data.X[:rows], float), np.asarray(data.y)[:rows]
    n, d = X.shape
    rates: dict = {}

    def solve(kernel, work, cpu):
        """rate of ``kernel`` from a run of ``work`` that took ``cpu`` s."""
        known = sum(u / rates.get(k, KERNEL_RATES[k].value)
                    for k, u in work.items() if k != kernel and u)
        rates[kernel] = work[kernel] / max(cpu - known, 0.05 * cpu)
        print(f"{kernel:18s} {rates[kernel]:10.3g} {KERNEL_RATES[kernel].unit} / s  "
              f"({cpu:.2f} s of CPU, {known:.2f} s of it other kernels')", flush=True)

    def fitted(est):
        est.fit(X[:2000], y[:2000])                 # compiled, and a model to predict with
        return est

    def fit_work(est, m=None):
        m = n if m is None else m
        est.fit(X[:m], y[:m])                       # every kernel of this size's path ready
        cpu = _cpu(lambda: est.fit(X[:m], y[:m]))
        return rw.estimate_fit(est, m, d, 1).work, cpu

    def wanted(kernel):
        return kernels is None or kernel in kernels

    with threadpool_limits(1):
        if wanted("blas"):
            P = np.random.default_rng(0).standard_normal((n, 500))
            P.T @ P
            solve("blas", {"blas": n * 500.0 * 500.0},
                  min(_cpu(lambda: P.T @ P) for _ in range(3)))
        for kernel, est in (("rw_features", rw.RWClassifier(n_features=1000, random_state=0)),
                            ("rff_features", rw.RKSClassifier(n_features=1000, random_state=0)),
                            ("rff_pair_features", rw.RFSGDClassifier(random_state=0))):
            if wanted(kernel):
                est = fitted(est)
                est.decision_function(X[:100])
                solve(kernel, est._estimate_predict(n, d, 1),
                      _cpu(lambda: est.decision_function(X)))
        for kernel, est in (
                ("sfgd_step", rw.RWClassifier(solver="sfgd", random_state=0)),
                ("rks_sgd_step", rw.RKSClassifier(solver="sgd", random_state=0)),
                ("asgd_step", rw.RFSGDClassifier(random_state=0)),
                ("lasso_cd", rw.RWClassifier(solver="lasso", random_state=0))):
            if wanted(kernel):
                solve(kernel, *fit_work(est))
        if wanted("knn"):
            Xs = (X - X.mean(0)) / X.std(0)
            knn_sigma(Xs[:500], k=50, n_queries=100, random_state=0)
            solve("knn", {"knn": 2000.0 * n},
                  _cpu(lambda: knn_sigma(Xs, k=50, n_queries=2000, random_state=0)))
        if wanted("mfga_gradient"):
            solve("mfga_gradient",
                  *fit_work(rw.GreedyMKClassifier(n_features=90, random_state=0)))
        est = rw.GreedyMKClassifier(selector="rks", random_state=0)
        if wanted("newton") or wanted("greedy_columns"):
            work, cpu = fit_work(est)
            if wanted("newton"):
                solve("newton", work, cpu)
            if wanted("greedy_columns"):
                solve("greedy_columns", est._estimate_predict(n, d, 1),
                      _cpu(lambda: est.decision_function(X)))
        # at its default 40 iterations, as the app fits it: the first few cost about twice a
        # later one (no warm start for CG, more line-search trials), so a rate from
        # max_iter=5 put the default fit's estimate 1.5x (20,000 rows) to 1.8x (60,000) high
        est = rw.BKerNNClassifier(random_state=0)
        if wanted("bkernn_iteration") or wanted("bkernn_predict"):
            work, cpu = fit_work(est)
            if wanted("bkernn_iteration"):
                solve("bkernn_iteration", work, cpu)
            if wanted("bkernn_predict"):
                est.decision_function(X[:100])
                solve("bkernn_predict", est._estimate_predict(n, d, 1),
                      _cpu(lambda: est.decision_function(X)))
    return rates


def _num(x):
    return float("nan") if x is None else float(x)


def _got(r) -> float:
    """The share of a core the fit process got over the run: its CPU over the wall time."""
    return (r["cpu_s"] - r["window_cpu_s"]) / r["wall_s"] if r["wall_s"] else float("nan")


def _ratio(real, est):
    return real / est if est else float("nan")


def line(r) -> str:
    return (f"{r['config']:12s} {r['mode']:8s} est {r['est_s']:8.1f} s  real {r['wall_s']:8.1f} s"
            f"  ratio {_ratio(r['wall_s'], r['est_s']):5.2f}  (fit {r['fit_s']:.1f} / "
            f"{r['est_fit_s']:.1f}, after {r['after_fit_s']:.1f} / {r['est_after_s']:.1f}; "
            f"CPU {r['cpu_s']:.1f} / {r['est_cpu_s']:.1f} s, window {r['window_cpu_s']:.1f} s "
            f"({r['window_fit_cpu_s']:.1f} s in the fit); "
            f"share {r['share']:.2f}, got {_got(r):.2f}; "
            f"load {r['load']:.1f} -> {r['load_after']:.1f}) {r['error']}")


def table(rows) -> str:
    lines = ["| method | mode | training rows | estimate (s) | real (s) | real / estimate | "
             "fit: real / est. (s) | after the fit: real / est. (s) | CPU: real / est. (s) | "
             "of which the window's (s) | share of a core: planned / got | "
             "load at the start, end |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['config']} | {r['mode']} | {r['rows']:,} | {r['est_s']:.1f} | "
            f"{r['wall_s']:.1f} | {_ratio(r['wall_s'], r['est_s']):.2f} | {r['fit_s']:.1f} / "
            f"{r['est_fit_s']:.1f} | {r['after_fit_s']:.1f} / {r['est_after_s']:.1f} | "
            f"{r['cpu_s']:.1f} / {r['est_cpu_s']:.1f} | {r['window_cpu_s']:.1f} | "
            f"{r['share']:.2f} / {_got(r):.2f} | {r['load']:.1f}, {r['load_after']:.1f} |")
    return "\n".join(lines) + "\n"


def _setting(ap, text: str) -> tuple:
    """``NAME=VALUE`` as (name, value): the value as a Python literal, else as the string."""
    import ast
    name, sep, value = text.partition("=")
    if not sep or not name:
        ap.error(f"--set takes NAME=VALUE, got {text!r}")
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return name, value


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    app_run_args(ap, CONFIGS)
    ap.add_argument("--modes", nargs="*", default=["holdout"], choices=MODES)
    ap.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE",
                    help="parameters set on top of each configuration's (a Python literal, "
                         "else a string): --set n_epochs=150000")
    ap.add_argument("--calibrate", type=int, nargs="+", metavar="ROWS", default=None,
                    help="measure the kernels' CPU rates on the first ROWS rows instead (each "
                         "number of rows in turn)")
    ap.add_argument("--kernels", nargs="+", default=None, metavar="KERNEL",
                    help="with --calibrate: only these kernels (e.g. bkernn_iteration)")
    args = ap.parse_args(argv)
    if args.calibrate:
        from rwtool.resources import KERNEL_RATES
        unknown = set(args.kernels or ()) - set(KERNEL_RATES)
        if unknown:
            ap.error(f"--kernels: no such kernel {sorted(unknown)}; the kernels are "
                     f"{sorted(KERNEL_RATES)}")
        for rows in args.calibrate:
            print(f"-- {rows} rows; load {os.getloadavg()[0]:.2f}", flush=True)
            rates = calibrate(args.csv, args.target, rows, args.kernels)
            print("\n".join(f"{k}: {v:.3g}" for k, v in rates.items()), flush=True)
            print(f"-- load {os.getloadavg()[0]:.2f}", flush=True)
        return 0
    rows = measure(args.csv, args.target, args.only, args.modes,
                   overrides=dict(_setting(ap, s) for s in args.set))
    text = table(rows)
    write_results(text, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
