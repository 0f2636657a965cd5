"""Drive the real rwtool-gui window under Xvfb with real X input events, like a new user.

    python tools/drive_app.py                        # screenshots into /tmp/rwtool-drive
    python tools/drive_app.py --out DIR --size 1400x900

The script starts an X server (xvfb-run), launches the app as its own process and works it with
xdotool only: mouse clicks on tabs, buttons and fields, typing into the form and into Qt's file
dialogs, keyboard shortcuts and menus. The path is the one of issue 15: open a CSV from the
samples, set the target, train three methods, open the Results tabs, cancel a long run, save
and reopen a regression model, apply it to a CSV. Every step is screenshotted (ImageMagick's
``import``). It fails (exit 1) on an error banner nobody expected, a message box, an uncaught
exception in the app, or a step that does not finish.

Where to click and when a step is done come from a probe inside the app process: a timer that
writes the screen geometry of the named widgets and the app's state (runs, banner, busy) to a
JSON file; the probe reads, it never acts. Needs: apt-get install -y xvfb xdotool x11-utils
imagemagick (and the Qt xcb libraries listed in docs/GUI.md).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEP_TIMEOUT = 180.0


# ----------------------------------------------------------------------------- the probe (app side)

def _child(args) -> int:
    """The app itself, with the read-only probe and an exception log."""
    sys.path.insert(0, str(ROOT))
    from PySide6.QtCore import QRect, QTimer
    from PySide6.QtWidgets import QApplication, QMessageBox, QPushButton, QToolBar

    from gui.app import create_app, main

    app = create_app()
    probe_path, exc_path = Path(args.probe), Path(args.exc_log)

    def rect(w):
        if w is None or not w.isVisible():
            return None
        p = w.mapToGlobal(w.rect().topLeft())
        return [p.x(), p.y(), w.width(), w.height()]

    def tabs(tw):
        bar = tw.tabBar()
        out = {}
        for i in range(tw.count()):
            r: QRect = bar.tabRect(i)
            p = bar.mapToGlobal(r.topLeft())
            out[tw.tabText(i)] = [p.x(), p.y(), r.width(), r.height()]
        return out

    def write():
        win = next((w for w in QApplication.topLevelWidgets()
                    if type(w).__name__ == "MainWindow"), None)
        if win is None:
            return
        if not getattr(write, "hooked", False):
            original = sys.excepthook

            def hook(t, e, tb):
                import traceback
                with open(exc_path, "a") as fh:
                    fh.write("".join(traceback.format_exception(t, e, tb)))
                original(t, e, tb)
            sys.excepthook = hook
            write.hooked = True
        mp = win.method_panel
        fields = {n: rect(mp.field_widget(n)) for n in mp._fields}
        toolbar = {}
        for bar in win.findChildren(QToolBar):
            for a in bar.actions():
                toolbar[a.text().replace("&", "")] = rect(bar.widgetForAction(a))
        modal = QApplication.activeModalWidget()
        runs = [{"id": r.run_id, "status": r.status, "task": (r.result or {}).get("task"),
                 "note": r.note} for r in win.run_list.runs.values()]
        state = {
            "t": time.time(),
            "window": rect(win), "title": win.windowTitle(),
            "left_tabs": tabs(win.left_tabs), "right_tabs": tabs(win.right_tabs),
            "results_tabs": tabs(win.results_panel),
            "results_current": win.results_panel.tabText(win.results_panel.currentIndex()),
            "train": rect(win.training_panel.train_button),
            "train_enabled": win.training_panel.train_button.isEnabled(),
            "cancel": rect(win.training_panel.cancel_button),
            "cancel_text": win.training_panel.cancel_button.text(),
            "running": win.training_panel.running, "busy": win.worker.busy,
            "drawing": win.results_panel.drawing,
            "target": rect(win.data_panel.target_combo),
            "target_value": win.data_panel.target(),
            "method": rect(mp.method_combo), "method_value": mp.method_combo.currentText(),
            "fields": fields, "toolbar": toolbar,
            "data_path": (win.data_info or {}).get("path"),
            "loaded_rows": None if win.data_info is None else
            int(win.data_info["train"].n_samples),
            "runs": runs,
            "banner": {"visible": win.banner.isVisible(), "kind": win.banner.kind,
                       "text": getattr(win.banner, "text", "")},
            "modal": None if modal is None else [type(modal).__name__, modal.windowTitle(),
                                                 isinstance(modal, QMessageBox)],
            "dialogs": [[type(w).__name__, w.windowTitle()] for w in
                        QApplication.topLevelWidgets() if w.isVisible() and w is not win],
            "applied": None if win.last_applied is None else len(win.last_applied["pred"]),
            "dialog_buttons": {b.text().replace("&", ""): rect(b)
                               for w in QApplication.topLevelWidgets()
                               if w.isVisible() and w is not win
                               for b in w.findChildren(QPushButton) if b.isVisible()},
        }
        tmp = probe_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state))
        os.replace(tmp, probe_path)

    timer = QTimer()
    timer.setInterval(150)
    timer.timeout.connect(write)
    timer.start()
    return main([])


# ----------------------------------------------------------------------------- the driver (X side)

class Failure(Exception):
    pass


class Driver:
    def __init__(self, out: Path, probe: Path, exc_log: Path, proc):
        self.out, self.probe, self.exc_log, self.proc = out, probe, exc_log, proc
        self.n = 0
        self.expect_error = False
        self.log: list[str] = []

    # -- X input -------------------------------------------------------------------------
    def xdo(self, *args) -> str:
        return subprocess.run(["xdotool", *map(str, args)], check=True, capture_output=True,
                              text=True).stdout

    def click(self, r, dx=None, dy=None) -> None:
        if r is None:
            raise Failure("clicked a widget that is not on screen")
        x = r[0] + (r[2] // 2 if dx is None else dx)
        y = r[1] + (r[3] // 2 if dy is None else dy)
        self.xdo("mousemove", "--sync", x, y)
        time.sleep(0.05)
        self.xdo("click", 1)
        time.sleep(0.25)

    def key(self, *keys) -> None:
        for k in keys:
            self.xdo("key", "--clearmodifiers", k)
            time.sleep(0.12)

    def type(self, text: str) -> None:
        self.xdo("type", "--delay", 15, text)
        time.sleep(0.2)

    # -- state ---------------------------------------------------------------------------
    def state(self) -> dict:
        for _ in range(50):
            try:
                return json.loads(self.probe.read_text())
            except (OSError, ValueError):
                time.sleep(0.1)
        raise Failure("the app's probe stopped answering")

    def check(self) -> dict:
        if self.proc.poll() is not None:
            raise Failure(f"the app exited (code {self.proc.returncode})")
        if self.exc_log.exists() and self.exc_log.read_text().strip():
            raise Failure("uncaught exception in the app:\n" + self.exc_log.read_text())
        s = self.state()
        if s["banner"]["visible"] and s["banner"]["kind"] == "error" and not self.expect_error:
            raise Failure(f"unexpected error banner: {s['banner']['text']}")
        if s["modal"] and s["modal"][2]:
            raise Failure(f"unexpected message box: {s['modal']}")
        return s

    def wait(self, cond, what: str, timeout: float = STEP_TIMEOUT) -> dict:
        t = time.time()
        while True:
            s = self.check()
            if cond(s):
                return s
            if time.time() - t > timeout:
                raise Failure(f"timed out waiting for {what}")
            time.sleep(0.2)

    def shot(self, name: str) -> None:
        time.sleep(0.6)
        self.check()
        self.n += 1
        path = self.out / f"{self.n:02d}-{name}.png"
        subprocess.run(["import", "-window", "root", str(path)], check=True)
        self.log.append(f"{path.name}")
        print("screenshot", path, flush=True)

    # -- user actions ----------------------------------------------------------------------
    def file_dialog(self, path: str, title_part: str) -> None:
        """Type ``path`` into the Qt file dialog that is open, then Enter."""
        self.wait(lambda s: any(title_part.lower() in d[1].lower() for d in s["dialogs"]),
                  f"the '{title_part}' dialog", 20)
        time.sleep(0.4)
        self.key("ctrl+a")
        self.type(path)
        self.key("Return")
        self.wait(lambda s: not any(title_part.lower() in d[1].lower() for d in s["dialogs"]),
                  f"the '{title_part}' dialog to close", 20)

    def tab(self, group: str, text: str) -> None:
        """Click the tab titled ``text``; a hidden tab bar lays out its tabs when shown, so
        the geometry is read fresh and the result checked (results tabs)."""
        for attempt in range(3):
            time.sleep(0.4)          # a probe written after the last click
            s = self.check()
            r = s[group].get(text)
            if r is None:
                raise Failure(f"no tab {text!r} in {group}: {list(s[group])}")
            self.click(r)
            if group != "results_tabs":
                return
            time.sleep(0.4)
            if self.check()["results_current"] == text:
                return
        raise Failure(f"clicking the tab {text!r} did not show it")

    def choose(self, combo: str, text: str) -> None:
        """Pick ``text`` in a combo box with the mouse: open it, then type to find the item."""
        s = self.check()
        self.click(s[combo])
        time.sleep(0.3)
        self.type(text)
        self.key("Return")
        time.sleep(0.3)

    def set_field(self, name: str, value) -> None:
        s = self.check()
        self.click(s["fields"][name])
        self.key("ctrl+a")
        self.type(str(value))

    def train(self, what: str) -> dict:
        n = len(self.check()["runs"])
        self.wait(lambda s: s["train_enabled"], "the Train button")
        self.click(self.check()["train"])
        s = self.wait(lambda s: len(s["runs"]) > n and s["runs"][-1]["status"] != "running"
                      and not s["drawing"], f"{what} to finish")
        run = s["runs"][-1]
        if run["status"] != "done":
            raise Failure(f"{what}: run {run['id']} ended {run['status']} ({run['note']})")
        return run


def _drive(args) -> int:
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.png"):
        old.unlink()
    tmp = Path(tempfile.mkdtemp(prefix="rwtool-drive-"))
    probe, exc_log = tmp / "probe.json", tmp / "exceptions.log"
    env = dict(os.environ, QT_QPA_PLATFORM="xcb", PYTHONPATH=str(ROOT), HOME=str(tmp),
               XDG_CONFIG_HOME=str(tmp / "config"))
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--child",
                             "--probe", str(probe), "--exc-log", str(exc_log)], env=env,
                            cwd=str(tmp))
    d = Driver(out, probe, exc_log, proc)
    samples = ROOT / "samples"
    try:
        t0 = time.time()
        while not probe.exists():
            if time.time() - t0 > 60 or proc.poll() is not None:
                raise Failure("the window did not appear")
            time.sleep(0.2)
        wid = d.xdo("search", "--sync", "--class", "rwtool-gui").split()[0]
        try:
            d.xdo("windowactivate", "--sync", wid)
        except subprocess.CalledProcessError:      # no window manager: focus it directly
            d.xdo("windowfocus", "--sync", wid)
        d.xdo("windowmove", wid, 0, 0)
        w, h = (int(v) for v in args.size.split("x"))
        d.xdo("windowsize", wid, w, h)
        d.wait(lambda s: not s["busy"], "the warm-up", 300)
        d.shot("start")

        # 1. open a CSV from the samples (Ctrl+O, type the path) and set the target
        d.key("ctrl+o")
        d.file_dialog(str(samples / "customers.csv"), "Open CSV")
        d.wait(lambda s: s["data_path"] and s["data_path"].endswith("customers.csv"),
               "customers.csv to load")
        d.tab("left_tabs", "1  Data")
        d.choose("target", "churned")
        d.wait(lambda s: s["target_value"] == "churned" and s["loaded_rows"], "the target")
        d.shot("data-customers")

        # 2. three methods, and the Results tabs of each
        d.tab("left_tabs", "2  Method")
        for title, name in (("RKHS weighting", "rw"), ("Random kitchen sinks", "rks"),
                            ("Averaged SGD on random features", "rfsgd")):
            d.choose("method", title)
            d.wait(lambda s, t=title: s["method_value"] == t, f"method {title}")
            d.train(title)
            d.tab("right_tabs", "Results")
            for t in d.check()["results_tabs"]:
                if t in ("Pruning",):
                    continue
                d.tab("results_tabs", t)
                d.shot(f"{name}-results-{t.lower().replace(' ', '-')}")
        d.tab("right_tabs", "Runs")
        d.shot("runs-table")

        # 3. cancel a long run (Esc)
        d.tab("left_tabs", "2  Method")
        d.set_field("n_epochs", 60000)    # long enough to cancel (20,000 now ends in about 4 s)
        n = len(d.check()["runs"])
        d.click(d.check()["train"])
        d.wait(lambda s: s["running"], "the long run to start")
        time.sleep(2.5)
        d.tab("right_tabs", "Training")
        d.shot("training-live")
        d.key("Escape")
        s = d.wait(lambda s: len(s["runs"]) > n and not s["running"], "the cancel")
        if s["cancel_text"] != "Cancel":
            raise Failure(f"the Cancel button reads {s['cancel_text']!r} after the cancel")
        if not s["runs"][-1]["status"].startswith("cancelled"):
            raise Failure(f"the cancelled run is {s['runs'][-1]['status']}")
        d.shot("training-cancelled")

        # 4. a regression model: train, save (Ctrl+S), reopen (toolbar), apply to a CSV (menu)
        d.key("ctrl+o")
        d.file_dialog(str(samples / "sine.csv"), "Open CSV")
        d.wait(lambda s: s["data_path"] and s["data_path"].endswith("sine.csv")
               and s["loaded_rows"], "sine.csv")
        d.tab("left_tabs", "2  Method")
        d.choose("method", "RKHS weighting")
        d.train("the regression")
        d.tab("right_tabs", "Results")
        for t in ("Fitted curve", "Predicted vs actual", "Residuals"):
            d.tab("results_tabs", t)
            d.shot(f"regression-{t.lower().replace(' ', '-')}")
        model = tmp / "sine-model.rwm"
        d.key("ctrl+s")
        d.file_dialog(str(model), "Save model")
        d.wait(lambda s: model.exists(), "the model file")
        n = len(d.check()["runs"])
        d.click(d.check()["toolbar"]["Open Model…"])
        d.file_dialog(str(model), "Open model")
        s = d.wait(lambda s: len(s["runs"]) > n and not s["drawing"], "the model to open")
        if s["runs"][-1]["status"] != "loaded":
            raise Failure(f"the reopened model is {s['runs'][-1]['status']}")
        d.tab("right_tabs", "Results")
        d.shot("regression-model-reopened")
        d.key("alt+f")
        d.key("a")          # &Apply Model to CSV…
        d.file_dialog(str(samples / "sine.csv"), "Apply the model")
        d.wait(lambda s: s["applied"], "the predictions")
        d.shot("regression-model-applied")
        d.click(d.check()["dialog_buttons"]["Close"])
        d.wait(lambda s: not any("Predictions" in x[1] for x in s["dialogs"]),
               "the predictions dialog to close", 20)
        d.shot("end")
        print("OK: every step finished, no error dialog, no uncaught exception")
        return 0
    except (Failure, subprocess.CalledProcessError) as exc:
        try:
            d.shot("failure")
        except Exception:   # the screenshot of a failure must not hide the failure
            pass
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="/tmp/rwtool-drive")
    p.add_argument("--size", default="1400x900")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--under-x", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--probe", help=argparse.SUPPRESS)
    p.add_argument("--exc-log", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return _child(args)
    if args.under_x:
        return _drive(args)
    for tool in ("xvfb-run", "xdotool", "import"):
        if shutil.which(tool) is None:
            print(f"{tool} not found: apt-get install -y xvfb xdotool x11-utils imagemagick",
                  file=sys.stderr)
            return 2
    w, h = args.size.split("x")
    cmd = ["xvfb-run", "-a", "-s", f"-screen 0 {w}x{h}x24 -dpi 96", sys.executable,
           str(Path(__file__).resolve()), "--under-x", "--out", args.out, "--size", args.size]
    return subprocess.call(cmd)


if __name__ == "__main__":
    sys.exit(main())
