"""How long rwtool-gui takes to end a run after Cancel, per method and phase, on a large file.

    python -m benchmarks.speed.bench_cancel --csv /tmp/skin200k.csv --target label \
        --out /tmp/cancel.md                       # every method, Cancel 5 s into the fit
    python -m benchmarks.speed.bench_cancel --csv /tmp/skin200k.csv --target label \
        --only rw-lstsq --phases fit evaluating bounds predicting

The real main window (offscreen) loads the CSV, trains each method at its defaults (in the app's
fit process) and calls ``cancel()`` as the Cancel button does: in the fit
(``--after`` seconds after the first progress event), at the first event of the post-fit
evaluation, of the bounds (the Results tab's button), of the predictions on a file (Apply
Model to CSV, the same file) or of a stage of the fit (``stage:search``: the choice of reg). The latency is the wall time from that call to the end of the
run (its ``failed``/``finished`` signal on the GUI thread); the phase is the stage of the last
event before the cancel; "fit process stopped" says that the job had not stopped by itself
within the grace period (gui.worker.CANCEL_GRACE) and its process was stopped. The CSV (a resampled skin file of 200,000 rows, say) is the caller's:
nothing here writes data. Nothing is asserted; the numbers go into a markdown table, with the
load average, because on a shared machine the wall time of a slice of work grows with the load.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from .._common.argcheck import app_run_args

ROOT = Path(__file__).resolve().parent.parent.parent

#: name -> (method key, parameters) of the configurations measured
CONFIGS = {
    "rw-lstsq": ("rw", {}),
    "rw-lasso": ("rw", {"solver": "lasso"}),
    "rw-sfgd": ("rw", {"solver": "sfgd"}),
    "rw-osd": ("rw", {"solver": "osd"}),
    "rks": ("rks", {}),
    "rfsgd": ("rfsgd", {}),
    "greedy": ("greedy", {}),
    "bkernn": ("bkernn", {}),
}


def _wait(app, cond, timeout):
    t0 = time.perf_counter()
    while not cond():
        app.processEvents()
        time.sleep(0.002)
        if time.perf_counter() - t0 > timeout:
            raise TimeoutError("the run did not end")


def measure(csv: str, target: str, names, phases, after: float, kfold: int | None,
            timeout: float = 3600.0) -> list[dict]:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    sys.path.insert(0, str(ROOT))
    import tempfile

    from PySide6.QtCore import QSettings

    from gui.app import create_app
    from gui.main_window import MainWindow
    app = create_app()
    tmp = tempfile.mkdtemp()
    win = MainWindow(settings=QSettings(os.path.join(tmp, "s.ini"), QSettings.IniFormat),
                     warm_up=False)
    win.resize(1280, 800)
    win.show()
    win.open_path(csv, target)
    _wait(app, lambda: win.data_info is not None and not win.data_panel.is_loading, timeout)
    if kfold:
        win.eval_panel.set_kfold(kfold)
    win.ask = lambda *a: True                       # the long-fit question: yes
    state = {"stage": "", "first": None, "ended": None, "cancel_at": None, "events_after": 0}

    def on_progress(run_id, ev):
        state["stage"] = ev.get("stage", "")
        if state["first"] is None:
            state["first"] = time.perf_counter()
        if state["cancel_at"] is not None:
            state["events_after"] += 1
    win.worker.progress.connect(on_progress)
    for sig in (win.worker.finished, win.worker.failed):
        sig.connect(lambda *a: state.update(ended=time.perf_counter()))
    win.worker.called.connect(lambda *a: state.update(ended=time.perf_counter()))
    win.worker.call_failed.connect(lambda *a: state.update(ended=time.perf_counter()))

    def cancel_when(due, start):
        state.update(stage="", first=None, ended=None, cancel_at=None, events_after=0)
        start()
        _wait(app, lambda: state["ended"] is not None or due(), timeout)
        if state["ended"] is not None:
            return None
        stage = state["stage"]
        pid = fit_pid()
        state["cancel_at"] = time.perf_counter()
        win.cancel()
        _wait(app, lambda: state["ended"] is not None, timeout)
        return {"phase": stage, "latency_s": state["ended"] - state["cancel_at"],
                "events_after": state["events_after"],
                # the job did not stop within the grace period: its fit process was stopped
                "stopped": pid is not None and fit_pid() != pid,
                "load": os.getloadavg()[0]}

    def fit_pid():
        proc = getattr(win.worker.worker.fits, "proc", None)
        return None if proc is None else proc.pid

    out = []
    for name in names:
        key, params = CONFIGS[name]
        win.method_panel.set_method(key, params)
        for phase in phases:
            if phase == "fit":
                row = cancel_when(lambda: state["first"] is not None
                                  and time.perf_counter() - state["first"] > after, win.train)
            elif phase == "evaluating" or phase.startswith("stage:"):
                # at the first event of that stage of the run (stage:search: the choice of reg)
                stage = phase.split(":", 1)[-1]
                row = cancel_when(lambda: state["stage"] == stage, win.train)
            elif phase in ("bounds", "predicting"):
                run = win.current_run
                if run is None or run.status != "done":
                    win.train()
                    _wait(app, lambda: not win.training_panel.running, timeout)
                    run = win.current_run
                if phase == "bounds" and not run.result.get("has_bounds"):
                    continue
                start = win.compute_bounds if phase == "bounds" else \
                    (lambda: win.apply_model(csv))
                row = cancel_when(lambda: state["stage"] == phase
                                  and time.perf_counter() - state["first"] > 0.5, start)
            else:
                raise ValueError(f"unknown phase {phase!r}")
            if row is None:
                row = {"phase": f"{phase} (ended before the cancel)", "latency_s": float("nan"),
                       "events_after": 0, "stopped": False, "load": os.getloadavg()[0]}
            row["config"] = name
            out.append(row)
            print(f"{name:10s} {row['phase']:28s} {row['latency_s']:7.2f} s  "
                  f"(load {row['load']:.1f})", flush=True)
    win.worker.shutdown()
    return out


def table(rows) -> str:
    lines = ["| method | phase at the cancel | run ended after (s) | events after "
             "| fit process stopped | load |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['config']} | {r['phase']} | {r['latency_s']:.2f} | "
                     f"{r['events_after']} | {'yes' if r['stopped'] else 'no'} | "
                     f"{r['load']:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    app_run_args(ap, CONFIGS)
    ap.add_argument("--phases", nargs="*", default=["fit"],
                    help="fit, evaluating, bounds, predicting, or stage:NAME (at the first "
                         "event of the solver's stage NAME, e.g. stage:search)")
    ap.add_argument("--after", type=float, default=5.0,
                    help="seconds into the fit at which Cancel is pressed")
    ap.add_argument("--kfold", type=int, default=None, help="k-fold evaluation with k folds")
    args = ap.parse_args(argv)
    rows = measure(args.csv, args.target, args.only, args.phases, args.after, args.kfold)
    text = table(rows)
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
