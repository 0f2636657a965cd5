"""Responsiveness of rwtool-gui on a 200,000-row file, against a bare Qt process beside it.

    python -m benchmarks.speed.bench_gui_load                     # Xvfb, skin resampled
    python -m benchmarks.speed.bench_gui_load --only rw rks --out /tmp/load.md

Runs the real window on an X server (Xvfb, started here when no ``DISPLAY`` is set) and a
*control* process beside it: a bare QApplication showing one widget, with nothing else to do.
Both run a 10 ms QTimer heartbeat on their GUI thread and record the CLOCK_MONOTONIC time of
every tick (the same clock in both processes), so that each phase of the app (open and encode
the file, train each method, draw its results, flip through the result tabs, overlay runs, the
permutation importance) is compared with what the control saw in the same wall-clock window:
a gap the control shares is the machine's (other processes had the cores), a gap only the app
has is the app's. Reported per phase and overall, for both: the longest gap and the number of
gaps over 50 ms, the resident memory after each phase and its peak so far of the app and of its
fit process (``--fits-on-thread``: the fits on the app's worker thread instead), and the GUI
thread's own CPU time in the app's longest gap (what the window itself did) and its wait for a
core there while runnable (Linux's schedstat: the machine's load); the rest of the gap is
time blocked, on the interpreter lock or the X server. Targets of
issue 24: the app's longest gap under 150 ms, and its count of gaps
over 50 ms within 2x the control's. Nothing here is asserted: the figures go to a markdown file.

The data: ``--data FILE --target COL``, or by default 200,000 rows drawn without replacement
(seed 0) from the UCI skin segmentation file of ``--datasets`` (docs/SCALE.md), written to a
temporary CSV.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .._common.procmem import ThreadWait, proc_mb
from .bench_gui import write_report

ROOT = Path(__file__).resolve().parent.parent.parent
OVER_MS = 50.0
#: a tick this late (s) writes every thread's stack to the --trace file
TRACE_S = 0.1
#: --record-turns reports every turn of the app's GUI thread with more CPU than this (ms)
TURN_MS = 8.0

#: (family key, parameters, label): the methods trained, bounded so that a round of all of
#: them takes minutes on 150,000 training rows (defaults of RFSGD and BKerNN take far longer)
CONFIGS = [("rw", {"n_features": 500, "random_state": 0}, "RW lstsq T=500, reg auto"),
           ("rw", {"n_features": 300, "solver": "sfgd", "random_state": 0}, "RW SFGD T=300"),
           ("rks", {"n_features": 500, "random_state": 0}, "RKS ridge T=500"),
           ("rfsgd", {"n_features": 200, "n_epochs": 1, "random_state": 0},
            "RFSGD M=200, 1 epoch"),
           ("greedy", {"n_features": 30, "n_candidates": 500, "random_state": 0},
            "GreedyMK M=30"),
           ("bkernn", {"n_particles": 10, "max_iter": 3, "random_state": 0},
            "BKerNN m=10, 3 it.")]

_CONTROL = r"""
import sys, time, json
sys.path.insert(0, {root!r})
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QLabel
from benchmarks.speed.bench_gui_load import Heartbeat
app = QApplication([])
w = QLabel("control")
w.resize(200, 100)
w.show()
beat = Heartbeat()
t = QTimer()
t.setInterval(10)
t.timeout.connect(beat.tick)
t.start()
def check():
    try:
        open({stop!r}).close()
    except OSError:
        return
    with open({out!r}, "w") as fh:
        json.dump([beat.ticks, beat.cpu], fh)
    app.quit()
poll = QTimer()
poll.setInterval(200)
poll.timeout.connect(check)
poll.start()
print("READY", flush=True)
app.exec()
"""


#: what one unit of ``--load`` runs: a pure-Python loop that wants a core all the time
_SPIN = "while True:\n    pass\n"


def start_load(n: int) -> list[subprocess.Popen]:
    """``n`` processes that spin on a core each, every one in a session (and so a scheduler
    autogroup) of its own, as another user's or agent's programs are: a load both the app and
    the control face, the same from one run to the next."""
    return [subprocess.Popen([sys.executable, "-c", _SPIN], start_new_session=True,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
            for _ in range(n)]


def stop_load(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        proc.kill()
    for proc in procs:
        proc.wait(10)


def rss_mb(pid: int | str = "self") -> tuple[float, float]:
    """(resident set now, its peak so far) of a process in MB (Linux's VmRSS, VmHWM)."""
    return proc_mb(pid, "status", "VmRSS", "VmHWM")


def fits_rss_mb(win) -> tuple[float, float]:
    """(RSS now, its peak) of the app's fit process in MB (NaN when the fits run in the app)."""
    fits = win.worker.worker.fits
    proc = getattr(fits, "proc", None)
    return rss_mb(proc.pid) if proc is not None else (float("nan"), float("nan"))


def skin_200k(datasets: str | None, path: str, rows: int = 200_000) -> str:
    """``rows`` rows of the skin file drawn without replacement (seed 0), as a CSV with a
    header (B, G, R, label)."""
    import numpy as np
    root = datasets or os.environ.get("RWTOOL_DATASETS") or "/work/shared/datasets"
    src = Path(root) / "skin" / "Skin_NonSkin.txt"
    d = np.loadtxt(src, dtype=np.int64)
    pick = np.random.default_rng(0).choice(len(d), rows, replace=False)
    with open(path, "w") as fh:
        fh.write("B,G,R,label\n")
        np.savetxt(fh, d[pick], fmt="%d", delimiter=",")
    return path


class Heartbeat:
    """What the app's and the control's 10 ms heartbeats record at each tick, the same work
    in both: the time (CLOCK_MONOTONIC), and the thread's CPU time and its wait for a core
    while runnable (Linux's schedstat, read from a file kept open; NaN elsewhere), which
    separate a window starved of CPU from one blocked on a lock or the X server."""

    def __init__(self):
        self.ticks: list[float] = []
        self.cpu: list[tuple[float, float]] = []
        self._wait = ThreadWait()

    def queued_s(self) -> float:
        return self._wait.seconds()

    def tick(self) -> None:
        self.ticks.append(time.monotonic())
        self.cpu.append((time.thread_time(), self.queued_s()))


def gaps_in(ticks, t0: float, t1: float, cpu=None) -> list[tuple[float, float, float]]:
    """(gap, GUI-thread CPU in it, its wait for a core in it) (s) between consecutive ticks
    whose later tick falls in [t0, t1] (NaN without ``cpu``, pairs (CPU, wait) per tick)."""
    c = cpu if cpu is not None else [(float("nan"), float("nan"))] * len(ticks)
    return [(ticks[i] - ticks[i - 1], c[i][0] - c[i - 1][0], c[i][1] - c[i - 1][1])
            for i in range(1, len(ticks)) if t0 <= ticks[i] <= t1]


def summary(gaps) -> dict:
    """The longest gap (ms), the GUI thread's CPU and wait for a core in it, the gaps over
    OVER_MS, and the GUI thread's CPU over the whole span as a share of one core (%): on a
    loaded machine the scheduler makes a thread that wants more than its share wait."""
    if not gaps:
        return {"ticks": 0, "max_ms": float("nan"), "max_cpu_ms": float("nan"),
                "max_wait_ms": float("nan"), "over": 0, "cpu_pct": float("nan")}
    g, c, w = max(gaps)
    span = sum(x[0] for x in gaps)
    return {"ticks": len(gaps), "max_ms": 1000 * g, "max_cpu_ms": 1000 * c,
            "max_wait_ms": 1000 * w, "over": sum(x[0] > OVER_MS / 1000 for x in gaps),
            "cpu_pct": 100 * sum(x[1] for x in gaps) / span if span > 0 else float("nan")}


def run_app(data: str, target: str, configs, ticks: list, cpu: list, phases: list,
            timeout: float, trace=None, fit_process: bool = True, turns: list | None = None,
            turn_ms: float = TURN_MS):
    """Drive the main window through the phases, recording (name, t0, t1, status); ``ticks``
    and ``cpu`` get the time of each heartbeat and the GUI thread's (CPU time, wait for a core)
    then; ``trace``
    (an open file) the stacks of every thread whenever a tick is late by TRACE_S; ``turns``
    (a list) the GUI thread's turns of more than ``turn_ms`` of CPU, with what ran in them
    (benchmarks._common.turns)."""
    from PySide6.QtCore import QEventLoop, QSettings, QTimer

    from gui.app import create_app
    app = create_app()
    from gui.main_window import MainWindow

    tmp = tempfile.mkdtemp()
    win = MainWindow(settings=QSettings(os.path.join(tmp, "s.ini"), QSettings.IniFormat),
                     warm_up=True, fit_process=fit_process)
    win.ask = lambda *a: True           # no modal question stops the drive
    win.resize(1280, 800)
    win.show()
    beat = QTimer()
    beat.setInterval(10)
    heart = Heartbeat()
    heart.ticks, heart.cpu = ticks, cpu

    def tick():
        heart.tick()
        if trace is not None:
            faulthandler.cancel_dump_traceback_later()
            if len(ticks) > 1 and ticks[-1] - ticks[-2] > TRACE_S:
                trace.write(f"### the tick above came {1000 * (ticks[-1] - ticks[-2]):.0f} ms "
                            f"after the previous one ({phases_now[0]})\n")
                trace.flush()
            faulthandler.dump_traceback_later(TRACE_S, file=trace)
    beat.timeout.connect(tick)
    beat.start()
    phases_now = ["start"]
    recorder = None
    if turns is not None:
        from .._common.turns import TurnRecorder
        recorder = TurnRecorder(app, turn_ms, label=lambda: phases_now[0])

    def pump(cond, limit=timeout):
        # an event loop that sleeps until its next event, as the app's app.exec() does (a loop
        # polling every few ms waits for a core at each wake-up on a loaded machine, which the
        # app on its own does not), checking ``cond`` every 100 ms (the control's own check
        # runs every 200 ms)
        t = time.monotonic()
        loop = QEventLoop()
        check = QTimer()
        check.setInterval(100)
        check.timeout.connect(lambda: (cond() or time.monotonic() - t >= limit) and loop.quit())
        check.start()
        if not cond():
            loop.exec()
        check.stop()
        return cond()

    def phase(name, start, cond, limit=timeout):
        phases_now[0] = name
        t0 = time.monotonic()
        start()
        ok = pump(cond, limit)
        pump(lambda: False, 0.3)        # the redraws that follow
        phases.append((name, t0, time.monotonic(), "ok" if ok else "timed out",
                       rss_mb() + fits_rss_mb(win)))
        print(f"{name}: {phases[-1][2] - t0:.1f} s, RSS {phases[-1][4][0]:.0f} MB (peak "
              f"{phases[-1][4][1]:.0f} MB), fit process {phases[-1][4][2]:.0f} MB",
              file=sys.stderr, flush=True)

    phase("warm-up of the kernels (background)", lambda: None, lambda: not win.worker.busy)
    phase("open + encode the file", lambda: win.open_path(data, target),
          lambda: win.data_info is not None and not win.data_panel.is_loading)
    done_ids: list[int] = []
    win.run_finished.connect(done_ids.append)
    for key, params, label in configs:
        if not any(f.key == key for f in win.families):
            continue
        win.method_panel.set_method(key, params)
        # the user's click on Train comes in a turn of its own after the form is filled (set
        # in the turn of the Train click, the two were one 10-24 ms turn of the GUI thread)
        pump(lambda: False, 0.3)
        n = len(done_ids)
        # the run's end includes the preparation of its result tabs' first paint
        phase(f"train + results: {label}", win.train,
              lambda: len(done_ids) > n and not win.results_panel.drawing
              and not win.results_panel.preparing)
        if len(done_ids) > n:
            run = win.run_list.runs[done_ids[-1]]
            name, t0, t1, _, mem = phases[-1]
            phases[-1] = (name, t0, t1, run.status + (f" ({run.note})" if run.note else ""),
                          mem)
    panel = win.results_panel

    def flip():
        for i in range(panel.count()):
            panel.setCurrentIndex(i)
            pump(lambda: False, 0.25)
    phase("flip through the result tabs", flip, lambda: True)
    ids = list(win.run_list.runs)

    def clicks(*actions):
        # a user's clicks are events of their own, with the window's response to each in
        # between: the driver's actions run back to back in one turn were a turn of 15-30 ms
        # that no user makes (two or three clicks' work at once)
        for i, act in enumerate(actions):
            if i:
                pump(lambda: False, 0.25)
            act()

    if len(ids) >= 2:
        phase("overlay the runs", lambda: clicks(
            lambda: win.right_tabs.setCurrentWidget(win.run_list),
            lambda: win.run_list.select(ids)), lambda: not win.run_list.drawing)
    if ids:
        clicks(lambda: win.right_tabs.setCurrentWidget(panel),
               lambda: win.run_list.select([ids[0]]))
        pump(lambda: not panel.drawing, 30)
        panel.setCurrentWidget(panel.importance_view)
        pump(lambda: False, 0.25)
        phase("permutation importance on the test rows", win.compute_importance,
              lambda: not panel.importance_view.running)
    beat.stop()
    if trace is not None:
        faulthandler.cancel_dump_traceback_later()
    if recorder is not None:
        recorder.stop()
        turns.extend(recorder.turns)
    win.close()
    win.worker.shutdown()


def write_turns(path: Path, turns: list[dict], phases: list, turn_ms: float = TURN_MS) -> None:
    """The long turns recorded (benchmarks._common.turns): per phase their count and the
    longest, then each turn with its events and sampled stacks."""
    from .._common.turns import format_turns
    t0 = phases[0][1] if phases else 0.0
    lines = [f"# Turns of the app's GUI thread over {turn_ms:g} ms of CPU", "",
             "| phase | turns over the threshold | the longest (ms of CPU) | each (ms of CPU, "
             "longest first) |", "|---|---:|---:|---|"]
    for name, *_ in phases:
        mine = sorted((t["cpu"] for t in turns if t["label"] == name), reverse=True)
        each = ", ".join(f"{1000 * c:.1f}" for c in mine)
        lines.append(f"| {name} | {len(mine)} | {1000 * max(mine, default=0.0):.1f} | {each} |")
    lines += ["", "Times from the start of the first phase; an event's CPU runs from its start "
              "to the next event's (nested events apart); `py` lines are the GUI thread's "
              "sampled Python stacks, outermost first, weighted by its CPU.", "",
              format_turns(turns, t0)]
    path.write_text("\n".join(lines) + "\n")
    print(f"turns: {path}", file=sys.stderr)


def start_x() -> subprocess.Popen | None:
    """An Xvfb server on a free display when none is set (the app needs a real X server)."""
    if os.environ.get("DISPLAY"):
        return None
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        raise SystemExit("no DISPLAY and no Xvfb: apt-get install -y xvfb (docs/GUI.md)")
    for n in range(91, 120):
        if not os.path.exists(f"/tmp/.X11-unix/X{n}") and not os.path.exists(f"/tmp/.X{n}-lock"):
            # in a session of its own, as a desktop's X server is: not in the app's share of
            # the CPU (the scheduler's autogroups)
            proc = subprocess.Popen([xvfb, f":{n}", "-screen", "0", "1920x1080x24", "-nolisten",
                                     "tcp"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    start_new_session=True)
            os.environ["DISPLAY"] = f":{n}"
            t = time.monotonic()
            while not os.path.exists(f"/tmp/.X11-unix/X{n}") and time.monotonic() - t < 10:
                time.sleep(0.05)
            return proc
    raise SystemExit("no free X display in :91-:119")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", help="CSV file (default: skin resampled to 200,000 rows)")
    p.add_argument("--target", default="label")
    p.add_argument("--datasets", help="the benchmark data folder (skin/ is read from it)")
    p.add_argument("--only", nargs="*", help="method keys to train (rw rks rfsgd greedy bkernn)")
    p.add_argument("--defaults", action="store_true",
                   help="train each method at its defaults (random_state 0) instead of the "
                        "bounded configurations (RFSGD and BKerNN then take many minutes)")
    p.add_argument("--timeout", type=float, default=1800, help="seconds allowed per phase")
    p.add_argument("--fits-on-thread", action="store_true",
                   help="run the fits on the app's worker thread, not in its fit process")
    p.add_argument("--fit-nice", type=int, default=None,
                   help="the fit process's niceness (default: the app's, gui.worker.FIT_NICE)")
    p.add_argument("--same-session", action="store_true",
                   help="keep the fit process in the window's session (as before it had one "
                        "of its own, gui.worker.FIT_SESSION)")
    p.add_argument("--load", type=int, default=0,
                   help="start this many processes spinning on a core each (each in a session "
                        "of its own) for the whole session: a load of its own, the same for the "
                        "app and the control, on top of whatever else runs on the machine")
    p.add_argument("--json", help="also write the ticks and phases as JSON to this file")
    p.add_argument("--trace", help="write every thread's Python stack at each gap over "
                                   "100 ms to this file (what ran while the window waited)")
    p.add_argument("--record-turns", metavar="FILE",
                   help=f"write every turn of the app's GUI thread over {TURN_MS:g} ms of CPU "
                        f"to FILE, with the events and sampled Python stacks that ran in it "
                        f"(benchmarks/_common/turns.py; a diagnostic that costs the GUI thread "
                        f"an event filter call per event)")
    p.add_argument("--turn-ms", type=float, default=TURN_MS,
                   help="the threshold of --record-turns (ms of the GUI thread's CPU)")
    p.add_argument("--out", default=str(ROOT / "docs" / "bench" / "gui_load.md"))
    args = p.parse_args(argv)
    if hasattr(os, "setsid") and os.getsid(0) != os.getpid():
        # the app in a session of its own, as the control is: the scheduler shares the cores
        # between sessions first (autogroups), and in the session of the shell that started
        # the bench the app's share went to whatever else that shell ran meanwhile
        child = subprocess.Popen([sys.executable, "-m", "benchmarks.speed.bench_gui_load",
                                  *(argv if argv is not None else sys.argv[1:])],
                                 cwd=str(ROOT), start_new_session=True)
        # a signal that stops this process stops the bench too (it is not in our group)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, lambda n, f: child.send_signal(n))
        return child.wait()
    sys.path.insert(0, str(ROOT))
    import gui.worker
    if args.fit_nice is not None:
        gui.worker.FIT_NICE = args.fit_nice
    if args.same_session:
        gui.worker.FIT_SESSION = False
    xvfb = start_x()
    os.environ["QT_QPA_PLATFORM"] = "xcb"
    tmp = tempfile.mkdtemp()
    data = args.data or skin_200k(args.datasets, os.path.join(tmp, "skin200k.csv"))
    stop, out = os.path.join(tmp, "stop"), os.path.join(tmp, "control.json")
    load_procs = start_load(args.load)
    # the control in a session of its own: the scheduler's share of the app's session (the
    # window and this driver) is not divided with it
    control = subprocess.Popen([sys.executable, "-c",
                                _CONTROL.format(stop=stop, out=out, root=str(ROOT))],
                               stdout=subprocess.PIPE, text=True, start_new_session=True)
    control.stdout.readline()           # READY: its heartbeat runs
    configs = ([(k, {"random_state": 0}, f"{k} at its defaults")
                for k in ("rw", "rks", "rfsgd", "greedy", "bkernn")] if args.defaults
               else CONFIGS)
    configs = [c for c in configs if not args.only or c[0] in args.only]
    ticks: list[float] = []
    cpu: list[float] = []
    phases: list[tuple] = []
    trace = open(args.trace, "w") if args.trace else None
    turns: list | None = [] if args.record_turns else None
    try:
        run_app(data, args.target, configs, ticks, cpu, phases, args.timeout, trace,
                not args.fits_on_thread, turns, args.turn_ms)
    finally:
        if trace is not None:
            trace.close()
        open(stop, "w").close()
        control.wait(60)
        stop_load(load_procs)
        if xvfb is not None:
            xvfb.send_signal(signal.SIGTERM)
    with open(out) as fh:
        cticks, ccpu = json.load(fh)
    try:
        load = os.getloadavg()
    except OSError:
        load = (float("nan"),) * 3
    rows = []
    for name, t0, t1, status, mem in phases:
        a, c = summary(gaps_in(ticks, t0, t1, cpu)), summary(gaps_in(cticks, t0, t1, ccpu))
        rows.append((name, t1 - t0, a, c, status, mem))
    t0, t1 = phases[1][1], phases[-1][2]       # after the warm-up: the user's session
    total = (summary(gaps_in(ticks, t0, t1, cpu)), summary(gaps_in(cticks, t0, t1, ccpu)))
    if turns is not None:
        write_turns(Path(args.record_turns), turns, phases, args.turn_ms)
    if args.json:
        Path(args.json).write_text(json.dumps({"app": ticks, "app_cpu": cpu,
                                               "control": cticks,
                                               "control_cpu": ccpu, "phases": phases}))
    cmd = "python -m benchmarks.speed.bench_gui_load " + " ".join(
        argv if argv is not None else sys.argv[1:])
    lines = ["# rwtool-gui on a 200,000-row file beside a bare Qt process", "",
             f"Command: `{cmd.strip()}` under Xvfb (QT_QPA_PLATFORM=xcb), {os.cpu_count()} "
             f"cores, Python {platform.python_version()}; {args.load} spinning processes of "
             f"its own (`--load`); load average at the end "
             f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min: the machine is "
             f"shared). A 10 ms heartbeat on the GUI thread of the app and of the control; a "
             f"gap is the time between two ticks.", "",
             "| phase | wall (s) | app: longest gap (ms) | its GUI-thread CPU (ms) "
             "| its wait for a core (ms) "
             "| app: gaps > 50 ms | app GUI thread's CPU (% of a core) "
             "| control: longest gap (ms) | control: gaps > 50 ms "
             "| control's CPU (% of a core) "
             "| app RSS after / peak so far (MB) | fit process RSS after / peak (MB) "
             "| status |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for name, wall, a, c, status, mem in rows:
        lines.append(f"| {name} | {wall:.1f} | {a['max_ms']:.0f} | {a['max_cpu_ms']:.0f} | "
                     f"{a['max_wait_ms']:.0f} | "
                     f"{a['over']} | {a['cpu_pct']:.1f} | {c['max_ms']:.0f} | {c['over']} | "
                     f"{c['cpu_pct']:.1f} | "
                     f"{mem[0]:.0f} / "
                     f"{mem[1]:.0f} | {mem[2]:.0f} / {mem[3]:.0f} | {status} |")
    a, c = total
    lines.append(f"| **session (after the warm-up)** | {t1 - t0:.1f} | **{a['max_ms']:.0f}** | "
                 f"{a['max_cpu_ms']:.0f} | {a['max_wait_ms']:.0f} | **{a['over']}** | "
                 f"{a['cpu_pct']:.1f} | "
                 f"{c['max_ms']:.0f} | {c['over']} | {c['cpu_pct']:.1f} "
                 f"| {rows[-1][5][0]:.0f} / **{rows[-1][5][1]:.0f}** "
                 f"| {rows[-1][5][2]:.0f} / {rows[-1][5][3]:.0f} | |")
    ratio = a["over"] / max(c["over"], 1)
    lines += ["", f"Targets (issue 24): the app's longest gap under 150 ms: "
              f"{'met' if a['max_ms'] < 150 else 'not met'} ({a['max_ms']:.0f} ms); its gaps "
              f"over 50 ms within 2x the control's: {'met' if ratio <= 2 else 'not met'} "
              f"({a['over']} against {c['over']}).", ""]
    text = "\n".join(lines)
    print(text)
    write_report(Path(args.out), text)      # the Notes written by hand below stay
    return 0


if __name__ == "__main__":
    sys.exit(main())
