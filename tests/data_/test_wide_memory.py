"""Memory of the readers on a wide file (issue 27, "Wide files"), and the streaming summaries
that count distinct numbers only where they can be asked.

- The 500,000 x 2 file (5.9 MB) is read in a fresh child: its peak resident set (VmHWM, reset
  after the warm-up through /proc/self/clear_refs, so the warm-up's own peak does not hide
  it) above the warm process must stay under a bound. Measured on a 2-core machine shared
  with other jobs: before the names were one array and the distinct numbers of a plain
  numeric column were left uncounted, read_csv 137-140 MB and scan_csv + iter_csv 172-185 MB
  (24x and 31x the file); after, about 95 and 125-135 MB. The bounds (20x and 27x the
  file: 118 and 159 MB) sit between the two with room for the 10-20 MB an allocator moves
  from one child to the next.
- A column whose first text comes after numbers already summarised (text in a later block)
  must get the categories and fills read_csv gives it: pass one is then read again, counting
  every column's numbers (the oracle is read_csv on the whole file).
"""

import os
import subprocess
import sys

import numpy as np
import pytest

import rwtool.data as D

CHILD = """
import os, sys, tempfile
import rwtool.data as D
def status(key):
    return int(open("/proc/self/status").read().split(key + ":")[1].split()[0]) * 1024
q = os.path.join(tempfile.mkdtemp(), "t.csv")
open(q, "w").write("a,b,c\\n" + "1,2,3\\n" * 100)
D.read_csv(q, -1, task="regression")
s = D.scan_csv(q, -1, task="regression")
list(D.iter_csv(q, s.preprocessing, dialect=s.dialect))
open("/proc/self/clear_refs", "w").write("5")        # the peak from here on
base = status("VmRSS")
p, mode = sys.argv[1], sys.argv[2]
if mode == "read_csv":
    X = D.read_csv(p, -1, task="regression").X
else:
    s = D.scan_csv(p, -1, task="regression")
    X = [c.X for c in D.iter_csv(p, s.preprocessing, dialect=s.dialect)][0]
assert X.shape == (2, 499_999), X.shape
print(status("VmHWM") - base)
"""


@pytest.fixture(scope="module")
def wide_file(tmp_path_factory):
    X = np.random.default_rng(0).integers(0, 10, (2, 500_000))
    p = tmp_path_factory.mktemp("wide") / "w.csv"
    with open(p, "w") as fh:
        fh.write(",".join(f"c{j}" for j in range(X.shape[1])) + "\n")
        np.savetxt(fh, X, delimiter=",", fmt="%d")
    return p


@pytest.mark.slow
@pytest.mark.parametrize("mode,times", [("read_csv", 20), ("stream", 27)])
def test_peak_memory_is_a_small_multiple_of_the_file(wide_file, mode, times):
    if not os.path.exists("/proc/self/clear_refs"):
        pytest.skip("needs Linux's /proc/self/clear_refs to reset the peak")
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    r = subprocess.run([sys.executable, "-c", CHILD, str(wide_file), mode], capture_output=True,
                       text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    peak = int(r.stdout.strip().splitlines()[-1])
    size = os.path.getsize(wide_file)
    assert peak < times * size, f"{mode}: {peak / 2**20:.0f} MB, {peak / size:.1f}x the file"


def _late_text_file(tmp_path):
    # "c": numbers in the first rows, then mostly words (categorical); "m": a numeric column
    # written with a currency after its first block (a number format, its fill asked)
    rng = np.random.default_rng(2)
    rows = []
    for i in range(400):
        c = str(i % 3) if i < 40 else str(rng.choice(["red", "blue", "1"]))
        m = f"{i % 7}" if i < 200 else f"{i % 7} €"
        rows.append(f"{i % 5},{c},{m},{'' if i % 50 == 3 else i % 4},{i % 2}")
    p = tmp_path / "late.csv"
    p.write_text("a,c,m,h,y\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return p


@pytest.mark.parametrize("missing", ["impute-mean", "drop-rows", "impute-most-frequent"])
def test_text_met_late_gets_the_whole_file_categories(tmp_path, missing):
    p = _late_text_file(tmp_path)
    ds = D.read_csv(p, "y", missing=missing)
    scan = D.scan_csv(p, "y", missing=missing, block_bytes=256)
    assert scan.preprocessing == ds.preprocessing
    X = np.vstack([c.X for c in D.iter_csv(p, scan.preprocessing, dialect=scan.dialect,
                                           block_bytes=256)])
    np.testing.assert_array_equal(X, ds.X)
    cats = [c for c in ds.preprocessing.columns if c["name"] == "c"][0]["categories"]
    assert {"0", "1", "2", "red", "blue"} <= set(cats)
