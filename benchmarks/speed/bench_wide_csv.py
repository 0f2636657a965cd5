"""Peak memory and CPU time of both CSV readers on wide files (issue 27, "Wide files").

Files of digits, ``rows`` x ``columns`` with a header ``c0,c1,...`` (the 500,000 x 2 file is
the issue's 5.9 MB one), written in a temporary folder. Each reader runs in a fresh child
process: ``read_csv`` and the streaming reader (``scan_csv`` + ``iter_csv``, what ``rwtool
train`` uses on big files), after a warm-up on a small file (thread pools, compiled kernels).
``stream`` gives ``iter_csv`` the scan (pass two then encodes the blocks pass one kept, as
``rwtool train`` does); ``stream, record`` gives it the record alone, so the file is read
again while the scan is held. The child reports its peak resident set (``ru_maxrss``), the address space it mapped above
the warm-up (``VmPeak`` minus ``VmSize`` after it: what an address-space limit counts) and
its CPU seconds; an empty child (imports and warm-up only) gives the fixed baseline. Each
figure is the median of ``--repeat`` children (default 3).

    python -m benchmarks.speed.bench_wide_csv
    python -m benchmarks.speed.bench_wide_csv --shapes 500000x2 100000x5 20000x5
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

CHILD = """
import json, os, resource, sys, tempfile, time
import rwtool.data as D
def status(key):
    return int(open("/proc/self/status").read().split(key + ":")[1].split()[0]) * 1024
q = os.path.join(tempfile.mkdtemp(), "t.csv")
open(q, "w").write("a,b,c\\n" + "1,2,3\\n" * 100)
D.read_csv(q, -1, task="regression")
s = D.scan_csv(q, -1, task="regression")
list(D.iter_csv(q, s.preprocessing, dialect=s.dialect))
warm = status("VmSize")
p, mode = sys.argv[1], sys.argv[2]
t = time.process_time()
if mode == "read_csv":
    D.read_csv(p, -1, task="regression").X
elif mode == "stream":
    s = D.scan_csv(p, -1, task="regression")
    for c in D.iter_csv(p, s):
        c.X
elif mode == "stream, record":
    s = D.scan_csv(p, -1, task="regression")
    for c in D.iter_csv(p, s.preprocessing, dialect=s.dialect):
        c.X
print(json.dumps({"cpu": time.process_time() - t, "rss": resource.getrusage(
    resource.RUSAGE_SELF).ru_maxrss * 1024, "mapped": status("VmPeak") - warm}))
"""


def write_file(path, rows: int, cols: int) -> None:
    X = np.random.default_rng(0).integers(0, 10, (rows, cols))
    with open(path, "w") as fh:
        fh.write(",".join(f"c{j}" for j in range(cols)) + "\n")
        np.savetxt(fh, X, delimiter=",", fmt="%d")


def run(path, mode, repeat: int = 1) -> dict:
    """The child's figures, each the median of ``repeat`` fresh children (RSS moves by 10-20 MB
    from one child to the next on a busy machine)."""
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    runs = []
    for _ in range(repeat):
        r = subprocess.run([sys.executable, "-c", CHILD, str(path), mode], capture_output=True,
                           text=True, env=env, check=True)
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    return {k: float(np.median([r[k] for r in runs])) for k in runs[0]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", nargs="+", default=["500000x2", "100000x5"],
                    help="columns x rows of each file")
    ap.add_argument("--repeat", type=int, default=3, help="children per figure (median)")
    args = ap.parse_args(argv)
    mb = 1 << 20
    with tempfile.TemporaryDirectory() as tmp:
        base = run(os.devnull, "none", args.repeat)
        print(f"baseline (imports, warm-up): peak RSS {base['rss'] / mb:.0f} MB")
        print("| file | size | reader | peak RSS | above baseline | x file | mapped above "
              "warm-up | CPU s |")
        print("|---|---|---|---|---|---|---|---|")
        for shape in args.shapes:
            cols, rows = (int(v) for v in shape.split("x"))
            p = os.path.join(tmp, f"w{shape}.csv")
            write_file(p, rows, cols)
            size = os.path.getsize(p)
            for mode in ("read_csv", "stream", "stream, record"):
                r = run(p, mode, args.repeat)
                extra = r["rss"] - base["rss"]
                print(f"| {cols:,} x {rows} | {size / mb:.1f} MB | {mode} | "
                      f"{r['rss'] / mb:.0f} MB | {extra / mb:.0f} MB | {extra / size:.0f} | "
                      f"{r['mapped'] / mb:.0f} MB | {r['cpu']:.1f} |")


if __name__ == "__main__":
    main()
