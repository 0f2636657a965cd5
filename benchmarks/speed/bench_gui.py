"""Responsiveness of rwtool-gui: startup time to a usable window, event-loop stalls in training.

    python -m benchmarks.speed.bench_gui --datasets /work/shared/datasets   # writes docs/bench/gui.md
    python -m benchmarks.speed.bench_gui --skip startup draw --only greedy --trace /tmp/stacks.txt \
        --out /tmp/gui.md                                # one method, with the stacks of long gaps

Startup: wall time from launching a fresh Python process to the first event-loop turn after
the main window is shown (the warm-up of the numba kernels then runs in the background; the
numba cache is warm when the suite or a previous run compiled it). Stalls: a 10 ms QTimer
heartbeat on the GUI thread records the gap between its ticks while the results panel draws a
250,000-point regression run, the app loads the 245,057-row skin file (``--datasets``), loads a
generated CSV and trains each available method with live plots; the longest gap is the longest
time the window could not react. Each gap is split into the GUI thread's CPU time, its time
without a core and its time blocked (mostly waiting for the interpreter lock), so that a shared
machine's load can be told apart from the window's own work. ``--trace`` writes the stacks of all
Python threads whenever a tick is 80 ms late (faulthandler's watchdog is a C thread, so it also
reports while the worker holds the interpreter lock). Nothing here is asserted: the numbers go
into a markdown table.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
#: the heading of the hand-written part of the report, which a new run keeps
NOTES = "## Notes"

_STARTUP_CHILD = r"""
import sys, time
sys.path.insert(0, {root!r})
from gui.app import create_app
app = create_app()
from gui.main_window import MainWindow
from PySide6.QtCore import QSettings, QTimer
s = QSettings({ini!r}, QSettings.IniFormat)
w = MainWindow(settings=s, warm_up=True)
w.resize(1280, 800)
w.show()
def ready():
    print("READY", flush=True)
    w.worker.shutdown()
    app.quit()
QTimer.singleShot(0, ready)
app.exec()
"""


def startup_times(repeats: int) -> list[float]:
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        code = _STARTUP_CHILD.format(root=str(ROOT), ini=os.path.join(tmp, "s.ini"))
        env = dict(os.environ, QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"))
        for _ in range(repeats):
            t0 = time.perf_counter()
            p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, env=env, text=True)
            for line in p.stdout:
                if line.startswith("READY"):
                    out.append(time.perf_counter() - t0)
                    break
            p.wait()
    return out


def _write_csv(path: str, rows: int, seed: int = 0) -> None:
    import numpy as np
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, 8))
    y = (X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) + 0.3 * rng.standard_normal(rows) > 0)
    with open(path, "w") as fh:
        fh.write(",".join(f"x{j}" for j in range(8)) + ",label\n")
        for r, v in zip(X, y):
            fh.write(",".join(f"{a:.5f}" for a in r) + f",{int(v)}\n")


def _sched() -> tuple[float, float]:
    """(CPU seconds, seconds runnable but waiting for a core) of the calling thread; the wait is
    NaN where the kernel does not report it (Linux's schedstat)."""
    try:
        with open("/proc/thread-self/schedstat") as fh:
            run, wait = fh.read().split()[:2]
        return int(run) / 1e9, int(wait) / 1e9
    except (OSError, ValueError):
        return time.thread_time(), float("nan")


class Heartbeat:
    """A 10 ms QTimer on the GUI thread; ``gaps`` are the times between its ticks, and for each
    gap ``cpu`` the GUI thread's CPU time in it (what the window itself did) and ``runq`` the
    time it was ready but had no core (other processes). The rest of a gap is time the GUI
    thread was blocked: waiting for the interpreter lock, or in the 2 ms sleeps of the loop below.

    With ``trace`` (an open text file), a watchdog thread writes every Python thread's stack when
    a tick is ``trace_ms`` late, so that the file shows what ran during each long gap.
    """

    def __init__(self, trace=None, trace_ms: float = 80.0):
        from PySide6.QtCore import QTimer
        self.gaps: list[float] = []
        self.cpu: list[float] = []
        self.runq: list[float] = []
        self.last = [time.perf_counter()]
        self._last_sched = _sched()
        self.trace, self.trace_s = trace, trace_ms / 1000.0
        self.timer = QTimer()
        self.timer.setInterval(10)
        self.timer.timeout.connect(self._beat)
        self.timer.start()

    def restart(self) -> None:
        """Forget the gaps so far (a new phase starts)."""
        for lst in (self.gaps, self.cpu, self.runq):
            lst.clear()
        self.last[0] = time.perf_counter()
        self._last_sched = _sched()

    def _beat(self):
        now = time.perf_counter()
        sched = _sched()
        gap = now - self.last[0]
        self.gaps.append(gap)
        self.cpu.append(sched[0] - self._last_sched[0])
        self.runq.append(sched[1] - self._last_sched[1])
        self.last[0], self._last_sched = now, sched
        if self.trace is not None:
            import faulthandler
            faulthandler.cancel_dump_traceback_later()
            if gap > self.trace_s:
                self.trace.write(f"### the tick above came {1000 * gap:.0f} ms after the "
                                 f"previous one\n")
                self.trace.flush()
            faulthandler.dump_traceback_later(self.trace_s, file=self.trace)

    def longest(self) -> dict:
        """The longest gap (ms) with its parts, and the longest GUI-thread CPU in one gap."""
        if not self.gaps:
            return {k: float("nan") for k in ("max_ms", "max_cpu_ms", "max_runq_ms",
                                              "max_blocked_ms", "cpu_ms")}
        i = max(range(len(self.gaps)), key=self.gaps.__getitem__)
        return {"max_ms": 1000 * self.gaps[i], "max_cpu_ms": 1000 * self.cpu[i],
                "max_runq_ms": 1000 * self.runq[i],
                "max_blocked_ms": 1000 * (self.gaps[i] - self.cpu[i] - self.runq[i]),
                "cpu_ms": 1000 * max(self.cpu)}

    def stop(self):
        self.timer.stop()
        if self.trace is not None:
            import faulthandler
            faulthandler.cancel_dump_traceback_later()


def _skin_path(datasets: str | None) -> str | None:
    root = datasets or os.environ.get("RWTOOL_DATASETS") or "/work/shared/datasets"
    p = Path(root) / "skin" / "Skin_NonSkin.txt"
    return str(p) if p.is_file() else None


def _median_rows(runs: list[dict]) -> dict:
    """One row from repeats of a phase: the median of each number, the last status."""
    out = dict(runs[-1])
    for k, v in runs[-1].items():
        if isinstance(v, (int, float)) and k != "repeats":
            vals = sorted(r[k] for r in runs)
            out[k] = vals[len(vals) // 2]
    out["repeats"] = len(runs)
    return out


def draw_stalls(rows: int = 250_000, repeats: int = 3, trace=None) -> list[dict]:
    """The longest event-loop gap while the results panel draws a regression run of ``rows``
    points (predicted vs actual, residuals), each plot shown, with the GUI thread's own CPU time
    in it (which the load of other processes does not inflate); medians of ``repeats``."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    sys.path.insert(0, str(ROOT))
    import numpy as np
    from PySide6.QtCore import QEventLoop

    from gui.app import create_app
    from gui.panels.results_panel import ResultsPanel
    app = create_app()
    rp = ResultsPanel()
    rp.resize(1000, 700)
    rp.show()
    rng = np.random.default_rng(0)
    y = rng.standard_normal(rows)
    cut = int(0.75 * rows)
    res = {"task": "regression", "metrics": {"test MSE": 1.0}, "y_train": y[:cut],
           "pred_train": y[:cut] + 0.1 * rng.standard_normal(cut), "y_test": y[cut:],
           "pred_test": y[cut:] + 0.1 * rng.standard_normal(rows - cut)}
    out = []
    for tab in ("Predicted vs actual", "Residuals"):
        runs = []
        for _ in range(repeats):
            hb = Heartbeat(trace)
            rp.show_result(res)
            rp.setCurrentIndex([rp.tabText(i) for i in range(rp.count())].index(tab))
            t = time.perf_counter()
            while time.perf_counter() - t < 1.0:
                app.processEvents(QEventLoop.AllEvents)
                time.sleep(0.002)
            hb.stop()
            runs.append({"phase": f"draw {rows:,}-point regression results: {tab}",
                         **hb.longest()})
        out.append(_median_rows(runs))
    rp.close()
    return out


#: (family key, parameters, label) of the training phases
TRAIN_CONFIGS = [("rw", {"n_features": 2000, "random_state": 0}, "RW lstsq T=2000"),
                 ("rw", {"n_features": 1000, "solver": "lasso", "random_state": 0},
                  "RW lasso T=1000"),
                 ("rks", {"n_features": 2000, "random_state": 0}, "RKS ridge T=2000"),
                 ("rfsgd", {"n_features": 500, "n_epochs": 3, "random_state": 0},
                  "SGD-RF M=500, 3 epochs"),
                 ("greedy", {"n_features": 60, "random_state": 0}, "greedy MFGA M=60"),
                 ("bkernn", {"max_iter": 5, "n_particles": 20, "random_state": 0},
                  "BKerNN m=20, 5 it.")]


def stalls(rows: int, only=None, skin: str | None = None, repeats: int = 1,
           trace=None) -> list[dict]:
    """Heartbeat gaps of the main window loading files and training each method, ``repeats``
    rounds (each round loads and trains everything once, so that the repeats of a phase are
    spread over the run); each row holds the medians over the rounds."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    sys.path.insert(0, str(ROOT))
    from PySide6.QtCore import QEventLoop, QSettings

    from gui.app import create_app
    app = create_app()
    from gui.main_window import MainWindow

    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "bench.csv")
    _write_csv(path, rows)
    win = MainWindow(settings=QSettings(os.path.join(tmp, "s.ini"), QSettings.IniFormat),
                     warm_up=True)
    win.resize(1280, 800)
    win.show()
    hb = Heartbeat(trace)

    def run_until(cond, timeout=600.0):
        t = time.perf_counter()
        while not cond() and time.perf_counter() - t < timeout:
            app.processEvents(QEventLoop.AllEvents, 5)
            time.sleep(0.002)

    def phase(name, start, cond, timeout=600.0):
        if trace is not None:
            trace.write(f"\n======== {name}\n")
        hb.restart()
        t = time.perf_counter()
        start()
        run_until(cond, timeout)
        run_until(lambda: False, timeout=0.3)     # the redraws that follow
        wall = time.perf_counter() - t
        g = sorted(hb.gaps)
        return {"phase": name, "wall_s": wall, "ticks": len(g),
                "p99_ms": 1000 * g[int(0.99 * (len(g) - 1))] if g else float("nan"),
                "over_100ms": sum(x > 0.1 for x in g), **hb.longest()}

    def train(key, params, label):
        win.method_panel.set_method(key, params)
        done: list[int] = []
        conn = win.run_finished.connect(lambda rid: done.append(rid))
        row = phase(f"train {label}", win.train,
                    lambda: bool(done) and not win.results_panel.drawing, timeout=300)
        win.run_finished.disconnect(conn)
        if not done:
            row["status"] = f"not run: {win.banner.text}"
        else:
            run = win.run_list.runs[done[0]]
            row["status"] = run.status + (f" ({run.note})" if run.note else "")
        return row

    rounds: dict[str, list[dict]] = {}
    first = phase("warm-up (background)", lambda: None, lambda: not win.worker.busy)
    rounds[first["phase"]] = [first]
    for _ in range(max(1, repeats)):
        rows_ = []
        if skin:
            rows_.append(phase("open + encode skin (245,057 rows, tab, no header)",
                               lambda: win.open_path(skin),
                               lambda: win.data_info is not None
                               and win.data_info["path"] == skin, timeout=600))
        rows_.append(phase(f"open + encode CSV ({rows} rows)", lambda: win.open_path(path),
                           lambda: win.data_info is not None and win.data_info["path"] == path))
        for key, params, label in TRAIN_CONFIGS:
            if any(f.key == key for f in win.families) and not (only and key not in only):
                rows_.append(train(key, params, label))
        for r in rows_:
            rounds.setdefault(r["phase"], []).append(r)
    hb.stop()
    win.close()
    win.worker.shutdown()
    return [_median_rows(runs) for runs in rounds.values()]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5, help="start-ups to time")
    p.add_argument("--stall-repeats", type=int, default=3,
                   help="rounds of loading and training (each row is the median of the rounds)")
    p.add_argument("--rows", type=int, default=5000,
                   help="rows of the generated CSV (BKerNN's exact kernel solve is O(n^2))")
    p.add_argument("--only", nargs="*", help="method keys to train (rw rks rfsgd greedy bkernn)")
    p.add_argument("--skip", nargs="*", default=[], choices=["startup", "draw"],
                   help="sections not to measure (their tables are left out)")
    p.add_argument("--datasets", help="the benchmark data folder (skin/ is read from it; "
                                      "default $RWTOOL_DATASETS or /work/shared/datasets)")
    p.add_argument("--draw-rows", type=int, default=250_000)
    p.add_argument("--trace", help="write every thread's Python stack at each gap over 80 ms "
                                   "to this file (what ran while the window waited)")
    p.add_argument("--json", help="also write the rows as JSON to this file")
    p.add_argument("--out", default=str(ROOT / "docs" / "bench" / "gui.md"))
    args = p.parse_args(argv)
    trace = open(args.trace, "w") if args.trace else None
    try:
        st = startup_times(args.repeats) if "startup" not in args.skip else []
        ds = draw_stalls(args.draw_rows, trace=trace) if "draw" not in args.skip else []
        rs = stalls(args.rows, args.only, _skin_path(args.datasets), args.stall_repeats, trace)
    finally:
        if trace is not None:
            trace.close()
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next(line.split(":", 1)[1].strip() for line in fh
                       if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    if args.json:
        import json
        Path(args.json).write_text(json.dumps({"startup_s": st, "draw": ds, "stalls": rs,
                                               "load": load}, indent=1))
    cmd = "python -m benchmarks.speed.bench_gui " + " ".join(argv if argv is not None
                                                       else sys.argv[1:])
    lines = ["# rwtool-gui responsiveness", "",
             f"Command: `{cmd.strip()}` (QT_QPA_PLATFORM="
             f"{os.environ.get('QT_QPA_PLATFORM', 'offscreen')}), machine: {cpu}, "
             f"{os.cpu_count()} cores, Python {platform.python_version()}; load average "
             f"{load:.1f} at the end.", ""]
    if st:
        lines += ["## Startup to a usable window (warm numba cache)", "",
                  "| runs | min (s) | median (s) | max (s) |", "|---:|---:|---:|---:|",
                  f"| {len(st)} | {min(st):.2f} | {sorted(st)[len(st) // 2]:.2f} | "
                  f"{max(st):.2f} |", ""]
    parts = ("| longest gap (ms) | its GUI-thread CPU / no core / blocked (ms) "
             "| most GUI-thread CPU between two ticks (ms) |")
    if ds:
        lines += [f"## Drawing large results (10 ms heartbeat; median of {ds[0]['repeats']})",
                  "", "| phase " + parts, "|---|---:|---|---:|"]
        for r in ds:
            lines.append(f"| {r['phase']} | {r['max_ms']:.0f} | {r['max_cpu_ms']:.0f} / "
                         f"{r['max_runq_ms']:.0f} / {r['max_blocked_ms']:.0f} | "
                         f"{r['cpu_ms']:.0f} |")
        lines.append("")
    lines += [f"## Event-loop stalls (10 ms heartbeat on the GUI thread; median of "
              f"{rs[-1]['repeats']} rounds)", "",
              "| phase | wall (s) | heartbeats " + parts + " 99th pct (ms) | gaps > 100 ms "
              "| status |", "|---|---:|---:|---:|---|---:|---:|---:|---|"]
    for r in rs:
        lines.append(f"| {r['phase']} | {r['wall_s']:.2f} | {r['ticks']} | {r['max_ms']:.0f} | "
                     f"{r['max_cpu_ms']:.0f} / {r['max_runq_ms']:.0f} / "
                     f"{r['max_blocked_ms']:.0f} | {r['cpu_ms']:.0f} | {r['p99_ms']:.0f} | "
                     f"{r['over_100ms']} | {r.get('status', '')} |")
    lines += ["", "How to read it: a gap is the time between two ticks of a 10 ms timer on the "
              "GUI thread, the longest time the window could not react. It is split into the "
              "GUI thread's own CPU time (handlers and painting: what the window did), the time "
              "it was ready but had no core (the fit's threads and other processes; Linux's "
              "schedstat), and the rest, when it was blocked: waiting for the interpreter lock "
              "held by the worker thread, or in the benchmark loop's 2 ms sleeps. On a shared "
              "machine only the CPU column is free of the other processes' load. Startup is "
              "measured from process launch, so it includes the Python, Qt, pyqtgraph and "
              "rwtool imports."]
    text = "\n".join(lines) + "\n"
    print(text)
    write_report(Path(args.out), text)
    return 0


def write_report(out: Path, text: str) -> None:
    """Write ``text`` to ``out`` atomically, keeping the hand-written part of the old report
    (from its ``## Notes`` heading on) below the new tables."""
    if out.is_file():
        old = out.read_text()
        at = old.find("\n" + NOTES + "\n")
        if at >= 0:
            text += old[at:]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, out)


if __name__ == "__main__":
    sys.exit(main())
