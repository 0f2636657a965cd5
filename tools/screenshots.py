"""Screenshots of the real rwtool-gui window at each step of a session, for docs/GUI.md.

    python tools/screenshots.py                      # 1280x800 and 1920x1080 under Xvfb
    python tools/screenshots.py --sizes 1280x800 --out /tmp/shots

For each size the script runs itself under ``xvfb-run`` (Debian package xvfb) with a screen of
that size and the xcb platform, drives the window like a user (bundled samples, method choices,
training, cancel, comparison, pruning, an error) and writes ``<size>-<nn>-<step>.png`` into
docs/screenshots/. It never edits anything else.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEPS_TIMEOUT = 120.0


def _parent(args) -> int:
    if shutil.which("xvfb-run") is None:
        print("xvfb-run not found: apt-get install -y xvfb (see docs/GUI.md)", file=sys.stderr)
        return 2
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, QT_QPA_PLATFORM="xcb", PYTHONPATH=str(ROOT))
    env.pop("DISPLAY", None)
    for size in args.sizes:
        w, h = (int(v) for v in size.lower().split("x"))
        cmd = ["xvfb-run", "-a", "-s", f"-screen 0 {w}x{h}x24 -dpi 96", sys.executable,
               str(Path(__file__).resolve()), "--child", "--size", size, "--out", str(out)]
        print("running", " ".join(cmd), flush=True)
        rc = subprocess.call(cmd, env=env, cwd=str(ROOT))
        if rc != 0:
            print(f"screenshots at {size} failed (exit {rc})", file=sys.stderr)
            return rc
    return 0


def _child(args) -> int:
    sys.path.insert(0, str(ROOT))
    from PySide6.QtCore import QEventLoop, QSettings
    from PySide6.QtWidgets import QApplication

    from gui.app import create_app
    from gui.main_window import MainWindow
    from rwtool.data import list_samples

    app = create_app()
    w, h = (int(v) for v in args.size.lower().split("x"))
    out = Path(args.out)
    settings_path = out / f".screenshots-{args.size}.ini"
    settings = QSettings(str(settings_path), QSettings.IniFormat)
    settings.clear()
    win = MainWindow(settings=settings, warm_up=True)
    win.move(0, 0)
    win.resize(w, h)
    win.show()
    n = [0]

    def pump(seconds=0.3):
        t = time.perf_counter()
        while time.perf_counter() - t < seconds:
            app.processEvents(QEventLoop.AllEvents, 30)
            time.sleep(0.01)

    def wait(cond, what):
        t = time.perf_counter()
        while not cond():
            if time.perf_counter() - t > STEPS_TIMEOUT:
                raise SystemExit(f"timed out waiting for {what}")
            app.processEvents(QEventLoop.AllEvents, 30)
            time.sleep(0.01)
        pump(0.4)

    def shot(name, widget=None):
        n[0] += 1
        # the drawing the window queues a step at a time (gui.widgets.steps) ends first: the
        # comparison of runs takes no paint until its last step
        wait(lambda: not (win.results_panel.drawing or win.run_list.drawing), "the drawing")
        pump(0.3)
        target = widget or win
        path = out / f"{args.size}-{n[0]:02d}-{name}.png"
        target.grab().save(str(path))
        print("wrote", path, flush=True)

    def run_and_wait():
        done = []
        win.run_finished.connect(lambda rid: done.append(rid))
        win.train()
        wait(lambda: done and not win.results_panel.drawing, "a training run")
        return win.run_list.runs[done[0]]

    samples = {s["name"]: s for s in list_samples()}
    wait(lambda: not win.worker.busy, "the warm-up")
    shot("start")

    # 1. data: the messy sample shows types and missing counts
    win.open_sample(samples["customers"])
    wait(lambda: win.data_info is not None, "customers.csv")
    shot("data-messy-csv")

    # 2. method form on the moons sample
    win.open_sample(samples["moons"])
    wait(lambda: win.data_info is not None and win.data_info["path"].endswith("moons.csv"),
         "moons.csv")
    shot("data-preview")
    win.left_tabs.setCurrentWidget(win.method_panel)
    win.method_panel.set_method("rw", {"instantiation": "rwrelu", "n_features": 300,
                                       "random_state": 0, "sigma": 1.0, "theta": 0.3})
    shot("method-form")

    # 3. a first run, its results
    run1 = run_and_wait()
    win.results_panel.setCurrentWidget(win.results_panel.metrics_view)
    shot("results-metrics")
    win.results_panel.setCurrentWidget(win.results_panel.region_plot)
    shot("results-decision-regions")
    win.results_panel.setCurrentWidget(win.results_panel.confusion_plot)
    shot("results-confusion")
    win.results_panel.setCurrentWidget(win.results_panel.roc_plot)
    shot("results-roc")

    # 4. pruning preview (when the model can prune)
    win.results_panel.setCurrentWidget(win.results_panel.prune_view)
    if win.results_panel.prune_view.preview_button.isEnabled():
        win.results_panel.prune_view.slider.setValue(50)
        win.results_panel.prune_view.preview_button.click()
        wait(lambda: win.results_panel.prune_view.keep_button.isEnabled()
             or "rror" in win.results_panel.prune_view.result.text()
             or "annot" in win.results_panel.prune_view.result.text(), "pruning")
    shot("results-pruning")

    # 5. live training of an iterative method, captured mid-run, then cancelled
    win.left_tabs.setCurrentWidget(win.method_panel)
    win.method_panel.set_method("rfsgd", {"n_features": 300, "n_epochs": 40000,
                                          "chunk_size": 200, "random_state": 0})
    done = []
    win.run_finished.connect(lambda rid: done.append(rid))
    win.train()
    t = time.perf_counter()
    while time.perf_counter() - t < 4.0:
        app.processEvents(QEventLoop.AllEvents, 30)
        time.sleep(0.01)
    shot("training-live")
    win.cancel()
    wait(lambda: done, "the cancelled run")
    shot("training-cancelled")

    # 6. a second SGD run and the comparison of the two
    win.method_panel.set_method("rfsgd", {"n_epochs": 60, "reg": 0.01})
    run3 = run_and_wait()
    win.right_tabs.setCurrentWidget(win.run_list)
    win.run_list.select([done[0], run3.run_id])
    shot("runs-compare")

    # 7. regression with BKerNN: importance and residuals
    win.open_sample(samples["friedman"])
    wait(lambda: win.data_info is not None and win.data_info["path"].endswith("friedman.csv"),
         "friedman.csv")
    win.left_tabs.setCurrentWidget(win.method_panel)
    if any(f.key == "bkernn" for f in win.families):
        win.method_panel.set_method("bkernn", {"penalty": "concave_variable", "max_iter": 30,
                                               "random_state": 0})
    else:
        win.method_panel.set_method("rw", {"instantiation": "rwstumps", "n_features": 500})
    run_and_wait()
    win.right_tabs.setCurrentWidget(win.results_panel)
    win.results_panel.setCurrentWidget(win.results_panel.importance_view)
    win.compute_importance()            # the permutation importance beside the model's own
    wait(lambda: not win.results_panel.importance_view.running, "the permutation importance")
    for name, widget in (("regression-importance", win.results_panel.importance_view),
                         ("regression-predicted-vs-actual", win.results_panel.pva_plot),
                         ("regression-residuals", win.results_panel.residual_plot)):
        win.results_panel.setCurrentWidget(widget)
        shot(name)

    # 8. an error: a broken file leaves everything in place
    bad = out / ".broken.csv"
    bad.write_text("a,b,y\n1,2,0\n3,4\n")
    win.open_path(str(bad))
    wait(lambda: win.banner.isVisible() and win.banner.kind == "error", "the error banner")
    shot("error-banner")
    bad.unlink()

    # 9. the Python snippet of the first run
    from gui.widgets.dialogs import SnippetDialog
    dlg = SnippetDialog(win, win.snippet(run1))
    dlg.show()
    pump(0.5)
    shot("snippet", dlg)
    dlg.close()

    # 10. what issue 15 added: the Evaluate tab, the runs table, the fitted curve of a
    # one-input regression and the reading options (appended, so earlier names stay)
    win.open_sample(samples["moons"])
    wait(lambda: win.data_info is not None and win.data_info["path"].endswith("moons.csv"),
         "moons.csv")
    win.left_tabs.setCurrentWidget(win.method_panel)
    win.method_panel.set_method("rw", {"n_features": 200, "instantiation": "rwrelu"})
    win.left_tabs.setCurrentWidget(win.eval_panel)
    win.eval_panel.set_kfold(5)
    win.eval_panel.set_tuning(True, n_iter=10, cv=3)
    run_and_wait()
    win.left_tabs.setCurrentWidget(win.eval_panel)
    win.results_panel.setCurrentWidget(win.results_panel.metrics_view)
    win.right_tabs.setCurrentWidget(win.results_panel)
    shot("evaluate-kfold-search")
    win.eval_panel.set_kfold(None)
    win.eval_panel.set_tuning(False)
    win.right_tabs.setCurrentWidget(win.run_list)
    win.run_list.table.clearSelection()
    shot("runs-table")
    win.open_sample(samples["sine"])
    wait(lambda: win.data_info is not None and win.data_info["path"].endswith("sine.csv"),
         "sine.csv")
    win.left_tabs.setCurrentWidget(win.method_panel)
    win.method_panel.set_method("rw", {"n_features": 300, "instantiation": "rwrelu"})
    run_and_wait()
    win.right_tabs.setCurrentWidget(win.results_panel)
    win.results_panel.setCurrentWidget(win.results_panel.curve_plot)
    shot("regression-fitted-curve")
    win.open_sample(samples["customers"])
    wait(lambda: win.data_info is not None and win.data_info["path"].endswith("customers.csv"),
         "customers.csv")
    win.left_tabs.setCurrentWidget(win.data_panel)
    win.data_panel.read_box.toggle.setChecked(True)
    shot("data-reading-options")

    # 11. the 90% predictive intervals of a least-squares regressor on predicted vs actual
    win.open_sample(samples["friedman"])
    wait(lambda: win.data_info is not None and win.data_info["path"].endswith("friedman.csv"),
         "friedman.csv")
    win.left_tabs.setCurrentWidget(win.method_panel)
    win.method_panel.set_method("rw", {"n_features": 300, "random_state": 0})
    run_and_wait()
    win.right_tabs.setCurrentWidget(win.results_panel)
    win.results_panel.setCurrentWidget(win.results_panel.pva_plot)
    shot("regression-predicted-vs-actual-intervals")
    win.close()
    settings_path.unlink(missing_ok=True)
    QApplication.processEvents()
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", nargs="+", default=["1280x800", "1920x1080"])
    p.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--size", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    return _child(args) if args.child else _parent(args)


if __name__ == "__main__":
    sys.exit(main())
