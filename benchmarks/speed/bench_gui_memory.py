"""The app's memory over a session: the window's process and its fit process, run by run.

    python -m benchmarks.speed.bench_gui_memory --csv /tmp/skin200k.csv --target label
    python -m benchmarks.speed.bench_gui_memory --csv /tmp/skin200k.csv --target label \
        --only rw rks --out /tmp/memory.md

The real main window (offscreen, its fit process as in the app) opens the CSV (skin resampled to
200,000 rows: ``benchmarks.speed.bench_gui_load.skin_200k``) and trains the configurations one
after the other, as a user who keeps every run in the Runs table. After the file and after each
run the table gives the resident memory (Linux's VmRSS) of both processes and their peaks so far
(VmHWM), the sum of the two peaks, and the peak of the two processes' sum at one moment (what
the machine sees; issue 24's bound: a session of five runs under 1 GB counting both processes):
a thread samples both processes together every 50 ms (:class:`SumSampler`), their Rss and
their Pss (a library page both map counts once in the sum of Pss, twice in the sum of Rss), so
a peak shorter than that can be missed, which the sum of the two peaks (an upper bound)
brackets. Then where the window's share goes: the bytes of the numpy arrays each run keeps (its
result dict and its model, walked through dicts, lists and attributes; arrays shared with the
Data tab counted once, in "data"). Nothing is asserted: the figures go to a markdown table.
"""

from __future__ import annotations

import argparse
import threading

from .._common.argcheck import app_run_args
from .._common.output import write_results
from .._common.procmem import proc_mb
from .bench_estimate import _wait, app_window
from .bench_gui_load import rss_mb

#: name -> (method key, parameters beyond the method's defaults): the methods at their defaults
#: as issue 24's session had them, BKerNN with 2 iterations (its model holds what 40 would: the
#: tables grow with the particles and the rows, not the iterations)
CONFIGS = {
    "rw": ("rw", {}),
    "rks": ("rks", {}),
    "rw-sfgd": ("rw", {"solver": "sfgd"}),
    "greedy": ("greedy", {}),
    "bkernn": ("bkernn", {"max_iter": 2}),
}


def rss_pss_mb(pid: int | str = "self") -> tuple[float, float]:
    """(resident set, proportional set) of a process in MB (Linux's smaps_rollup: Rss, and Pss,
    which counts a page shared by k processes as 1/k: the libraries both processes map are
    counted once in the sum of their Pss, twice in the sum of their Rss)."""
    return proc_mb(pid, "smaps_rollup", "Rss", "Pss")


class SumSampler(threading.Thread):
    """Samples the window (this process) and the fit process together every ``period`` s: the
    largest sum of their Rss, and of their Pss, seen since the last :meth:`take` and since the
    start (a peak shorter than the period can be missed: the sum of the two processes' own
    peaks, VmHWM, bounds it from above)."""

    def __init__(self, fits_pid, period: float = 0.05):
        super().__init__(daemon=True, name="rss-sum")
        self.fits_pid, self.period = fits_pid, period
        self.stop = threading.Event()
        self.step_max = [0.0, 0.0]
        self.session_max = [0.0, 0.0]

    def run(self) -> None:
        while not self.stop.wait(self.period):
            pid = self.fits_pid()
            w = rss_pss_mb()
            f = rss_pss_mb(pid) if pid else (0.0, 0.0)
            for i in (0, 1):
                total = w[i] + f[i]
                if total == total:            # not NaN (a fit process being replaced)
                    self.step_max[i] = max(self.step_max[i], total)
                    self.session_max[i] = max(self.session_max[i], total)

    def take(self) -> tuple[float, float]:
        """The largest sums (Rss, Pss) since the previous call."""
        out, self.step_max = tuple(self.step_max), [0.0, 0.0]
        return out


def _mb(arrs) -> float:
    return sum(a.nbytes for a in arrs) / 2 ** 20


def measure(csv: str, target: str | None, names, timeout: float = 7200.0) -> list[dict]:
    app, win = app_window()
    from gui.logic.jobs import reachable_arrays
    rows: list[dict] = []

    def fits_pid():
        proc = getattr(getattr(win.worker.worker, "fits", None), "proc", None)
        return proc.pid if proc is not None else None

    sampler = SumSampler(fits_pid)
    sampler.start()

    def record(step: str, status: str = "") -> None:
        pid = fits_pid()
        w, wp = rss_mb()
        peaks = sampler.take()
        f, fp = rss_mb(pid) if pid else (float("nan"), float("nan"))
        data = win.data_info or {}
        held = {id(a) for part in ("train", "test") if data.get(part) is not None
                for a in (data[part].X, data[part].y)}
        per_run = []
        for run in win.run_list.runs.values():
            res = dict(run.result or {})
            est = res.pop("estimator", None)
            seen = set(held)
            per_run.append((_mb(reachable_arrays((res, run.curves), seen)),
                            _mb(reachable_arrays(est, seen))))
        row = {"step": step, "status": status, "window": w, "window_peak": wp, "fits": f,
               "fits_peak": fp, "sum_peak": max(peaks[0], w + (f if f == f else 0.0)),
               "pss_peak": peaks[1],
               "results_mb": sum(r for r, _ in per_run),
               "models_mb": sum(m for _, m in per_run)}
        rows.append(row)
        print(line(row), flush=True)

    record("window shown")
    win.open_path(csv, target)
    _wait(app, lambda: win.data_info is not None and not win.data_panel.is_loading, timeout)
    win.worker.warm_up(win.method_panel.families)
    _wait(app, lambda: not win.worker.busy, timeout)
    record("file open, kernels warm")
    done: list[int] = []
    win.run_finished.connect(done.append)
    for name in names:
        key, params = CONFIGS[name]
        win.method_panel.set_method(key, params)
        n = len(done)
        win.train()
        _wait(app, lambda: len(done) > n and not win.results_panel.drawing, timeout)
        run = win.run_list.runs[done[-1]]
        record(f"after {name}", run.status)
    sampler.stop.set()
    rows.append({"session_sum_peak": sampler.session_max[0],
                 "session_pss_peak": sampler.session_max[1]})
    win.worker.shutdown()
    return rows


def line(r) -> str:
    return (f"{r['step']:24s} window {r['window']:6.0f} MB (peak {r['window_peak']:6.0f}), "
            f"fit process {r['fits']:6.0f} MB (peak {r['fits_peak']:6.0f}), peaks summed "
            f"{r['window_peak'] + r['fits_peak']:6.0f} MB, sum's peak in this step "
            f"{r['sum_peak']:6.0f} MB (Pss {r['pss_peak']:6.0f} MB); runs keep "
            f"{r['results_mb']:.1f} MB "
            f"of results and {r['models_mb']:.1f} MB of models {r['status']}")


def table(rows) -> str:
    lines = ["| after | window RSS / peak (MB) | fit process RSS / peak (MB) | both now (MB) "
             "| peak of the sum in this step: RSS / PSS (MB) | peaks summed (MB) "
             "| results kept (MB) | models kept in the window (MB) |",
             "|---|---|---|---|---|---|---|---|"]
    session = None
    for r in rows:
        if "session_sum_peak" in r:
            session = r
            continue
        lines.append(f"| {r['step']} | {r['window']:.0f} / {r['window_peak']:.0f} | "
                     f"{r['fits']:.0f} / {r['fits_peak']:.0f} | {r['window'] + r['fits']:.0f} | "
                     f"{r['sum_peak']:.0f} / {r['pss_peak']:.0f} | "
                     f"{r['window_peak'] + r['fits_peak']:.0f} | "
                     f"{r['results_mb']:.1f} | {r['models_mb']:.1f} |")
    if session is not None:
        lines.append(f"\nThe peak of both processes' sum over the session (sampled every "
                     f"50 ms): RSS {session['session_sum_peak']:.0f} MB, PSS "
                     f"{session['session_pss_peak']:.0f} MB.")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    app_run_args(ap, CONFIGS)
    args = ap.parse_args(argv)
    write_results(table(measure(args.csv, args.target, args.only)), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
