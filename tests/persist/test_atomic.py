"""Issue 16 point 5 and issue 27: a save killed mid-write leaves .NAME.rwtool-HOST-PID-*.tmp; the
next save into the folder removes it -- at once when its process is gone on this machine (92 of
100 kills left one, kept for 20 minutes before), else once it is old -- but only dead
temporaries of rwtool's own pattern, never a live concurrent save's; the save, the command line
and the app say what they removed.

Oracle: real processes killed with SIGKILL in the middle of P.save (a patched array writer
blocks after the first array), finished processes whose pids are dead, file names and contents
on disk.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import rwtool.persist as P
from rwtool.estimators import RWClassifier
from rwtool.persist import _atomic

ROOT = Path(__file__).absolute().parents[2]
HOUR = 3600

CHILD = r"""
import sys, numpy as np
import rwtool.persist as P
from rwtool.estimators import RWClassifier
rng = np.random.default_rng(0)
X = rng.standard_normal((40, 3))
est = RWClassifier(n_features=8, random_state=0).fit(X, X[:, 0] > 0)
real = P._Writer.array
def array(self, arr, where):
    out = real(self, arr, where)
    if len(self.arrays) == 2:
        print("writing", flush=True)
        sys.stdin.readline()          # block mid-write until told to go on (or killed)
    return out
P._Writer.array = array
P.save(est, sys.argv[1])
print("saved", flush=True)
"""


def start_save(path):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OPENBLAS_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout.readline().strip() == "writing"
    return proc


def temporaries(folder):
    return sorted(p.name for p in Path(folder).iterdir() if p.name.endswith(".tmp"))


def age(folder, seconds):
    for name in temporaries(folder):
        t = time.time() - seconds
        os.utime(Path(folder) / name, (t, t))


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((30, 3))
    return RWClassifier(n_features=5, random_state=0).fit(X, X[:, 1] > 0)


@pytest.mark.slow
def test_killed_save_leaves_a_temporary_the_next_save_removes(tmp_path, model):
    target = tmp_path / "m.rwm"
    proc = start_save(target)
    pid = proc.pid
    proc.kill()
    proc.wait()
    left = temporaries(tmp_path)
    assert len(left) == 1 and not target.exists()
    assert left[0].startswith(f".m.rwm.rwtool-{_atomic._host_tag()}-{pid}-")
    saved = P.save(model, tmp_path / "other.rwm")     # its writer is gone: removed at once
    assert temporaries(tmp_path) == [] and saved.removed == tuple(left)
    assert saved == str(tmp_path / "other.rwm") and "removed 1 temporary file(s)" in saved.note
    assert P.load(saved).n_features_in_ == 3
    again = P.save(model, tmp_path / "other.rwm")
    assert again.removed == () and again.note is None


def _dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(proc.stdout)


def test_temporaries_of_gone_processes_go_whatever_their_age(tmp_path, model):
    """A fresh temporary named by a dead pid of this machine goes at the next save; one of a
    live process, of another machine or without a pid stays until it is STALE_SECONDS old."""
    host, dead = _atomic._host_tag(), _dead_pid()
    other_host = "0" * 8 if host != "0" * 8 else "1" * 8
    gone = f".m.rwm.rwtool-{host}-{dead}-a1b2c3d4.tmp"
    kept = [f".m.rwm.rwtool-{host}-{os.getppid()}-a1b2c3d4.tmp",      # alive: the test runner
            f".m.rwm.rwtool-{other_host}-{dead}-a1b2c3d4.tmp",         # another machine's
            ".m.rwm.rwtool-a1b2c3d4.tmp"]                              # no pid (older rwtool)
    for name in [gone] + kept:
        (tmp_path / name).write_bytes(b"PK dead")
    saved = P.save(model, tmp_path / "x.rwm")
    assert saved.removed == (gone,) and temporaries(tmp_path) == sorted(kept)
    age(tmp_path, HOUR)
    assert sorted(P.save(model, tmp_path / "x.rwm").removed) == sorted(kept)
    assert temporaries(tmp_path) == []


def test_cli_and_app_say_what_the_save_removed(tmp_path, model, capsys):
    from rwtool import cli
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 2))
    csv = tmp_path / "d.csv"
    csv.write_text("a,b,y\n" + "".join(f"{a},{b},{int(a + b > 0)}\n" for a, b in X))
    dead = f".m.rwm.rwtool-{_atomic._host_tag()}-{_dead_pid()}-a1b2c3d4.tmp"
    (tmp_path / dead).write_bytes(b"PK dead")
    assert cli.main(["train", str(csv), "--target", "y", "-T", "10", "--no-progress",
                     "--out", str(tmp_path / "m.rwm")]) == 0
    out = capsys.readouterr().out
    assert f"note: removed 1 temporary file(s) in {tmp_path}" in out and dead in out
    assert temporaries(tmp_path) == []
    from types import SimpleNamespace
    pytest.importorskip("PySide6")
    from gui.panels.export_actions import ExportActions
    (tmp_path / dead).write_bytes(b"PK dead")
    shown = []
    app = ExportActions()
    app.show_info, app.show_error = shown.append, shown.append
    run = SimpleNamespace(name="run 1", result={"estimator": model, "metrics": {}}, data={})
    assert app.save_model(str(tmp_path / "app.rwm"), run)
    assert shown == [f"Saved run 1 to {tmp_path / 'app.rwm'}; removed 1 temporary file(s) in "
                     f"{tmp_path} left by earlier saves that were killed ({dead})"]


@pytest.mark.slow
def test_a_live_concurrent_save_is_never_touched(tmp_path, model):
    target = tmp_path / "m.rwm"
    proc = start_save(target)
    try:
        age(tmp_path, HOUR)                           # even an old-looking live temporary
        live = temporaries(tmp_path)
        P.save(model, tmp_path / "m2.rwm")
        P.save(model, target)
        assert temporaries(tmp_path) == live
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "saved"
    finally:
        proc.kill()
        proc.wait()
    assert temporaries(tmp_path) == []
    assert P.load(target).coef_.shape[0] == 8         # the concurrent save completed intact


def test_only_rwtool_temporaries_are_removed(tmp_path, model):
    keep = [".notes.txt.tmp", ".m.rwm.tmp", ".x.rwm.abc.tmp", ".other.rwm.abcdefgh.tmp",
            ".m.rwm.rwtool-abc.tmp", "m.rwm.rwtool-abcdefgh.tmp"]
    for name in keep:
        (tmp_path / name).write_bytes(b"not ours")
    (tmp_path / ".d.rwm.rwtool-abcdefgh.tmp").mkdir()            # a directory of that name
    (tmp_path / ".s.rwm.rwtool-abcdefgh.tmp").symlink_to(tmp_path / ".notes.txt.tmp")
    dead = [".m.rwm.rwtool-a1b2c3d4.tmp",                         # this version's pattern
            ".q.csv.rwtool-zz_9zz_9.tmp",                          # any target in the folder
            ".m.rwm.k3j4h5g6.tmp"]                                 # before the tag, same NAME
    for name in dead:
        (tmp_path / name).write_bytes(b"PK dead")
    age(tmp_path, HOUR)
    P.save(model, tmp_path / "m.rwm")
    left = {p.name for p in tmp_path.iterdir()}
    assert left == set(keep) | {".d.rwm.rwtool-abcdefgh.tmp", ".s.rwm.rwtool-abcdefgh.tmp",
                                "m.rwm"}
