"""Issue 16 point 5: a save killed mid-write leaves .NAME.*.tmp; the next save into the folder
removes it -- but only dead temporaries of rwtool's own pattern, never a live concurrent save's.

Oracle: real processes killed with SIGKILL in the middle of P.save (a patched array writer
blocks after the first array), file names and contents on disk.
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


def test_killed_save_leaves_a_temporary_the_next_save_removes(tmp_path, model):
    target = tmp_path / "m.rwm"
    proc = start_save(target)
    proc.kill()
    proc.wait()
    left = temporaries(tmp_path)
    assert len(left) == 1 and left[0].startswith(".m.rwm.") and not target.exists()
    P.save(model, tmp_path / "other.rwm")             # a fresh leftover is kept (grace period)
    assert temporaries(tmp_path) == left
    age(tmp_path, HOUR)
    P.save(model, tmp_path / "other.rwm")             # any later save into the folder cleans
    assert temporaries(tmp_path) == []
    assert P.load(tmp_path / "other.rwm").n_features_in_ == 3


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
