"""BKerNN's memory estimate against the measured peak of default fits.

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python -m benchmarks.speed.bench_bkernn_memory

Each size runs in a fresh process: a small fit first loads the numba kernels, then the data is
made, the kernel's peak-resident counter is reset (Linux: /proc/self/clear_refs), and a default
``BKerNNRegressor(random_state=0)`` is fitted. The measured figure is the peak resident set
during the fit minus the resident set just before it (the data and the interpreter excluded, as
``rwtool.estimate_fit`` counts only what the fit adds). Data: X ~ N(0, 1)^d, y = sin(x_1) +
x_2 x_3 + N(0, 0.1^2). Prints a markdown table (docs/BKERNN.md holds the results).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np


def _status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    raise OSError(f"{key} not in /proc/self/status")


def one(n, d, max_iter):
    """Fit once in this process; return the estimate and the measured added peak (bytes)."""
    from rwtool import BKerNNRegressor, estimate_fit
    rng = np.random.default_rng(0)
    warm = BKerNNRegressor(max_iter=1, random_state=0)
    warm.fit(rng.standard_normal((1000, d)), rng.standard_normal(1000))   # CG path from 800 rows
    warm.predict(rng.standard_normal((10, d)))
    X = rng.standard_normal((n, d))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.standard_normal(n)
    kw = {} if max_iter is None else {"max_iter": max_iter}
    est = BKerNNRegressor(random_state=0, **kw)
    estimate = estimate_fit(est, n, d, 1).peak_bytes
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")                        # reset VmHWM to the current resident set
    before = _status("VmRSS:")
    t0 = time.perf_counter()
    est.fit(X, y)
    seconds = time.perf_counter() - t0
    return {"n": n, "d": d, "iterations": est.n_iter_, "estimate": estimate,
            "measured": _status("VmHWM:") - before, "before": before, "seconds": seconds}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,30000,100000")
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--max-iter", type=int, default=None,
                    help="default: the estimator's (40)")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(one(int(args.sizes), args.d, args.max_iter)))
        return
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        cmd = [sys.executable, "-m", "benchmarks.speed.bench_bkernn_memory", "--one",
               "--sizes", str(n), "--d", str(args.d)]
        if args.max_iter is not None:
            cmd += ["--max-iter", str(args.max_iter)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True,
                             env=dict(os.environ))
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        r = rows[-1]
        print(f"  n = {n}: estimate {r['estimate'] / 2**20:.1f} MiB, measured "
              f"{r['measured'] / 2**20:.1f} MiB", file=sys.stderr, flush=True)
    from benchmarks._common.output import machine
    print(f"#### Default BKerNNRegressor fits, d = {rows[0]['d']}, m = 50, one thread "
          f"({machine()})\n")
    print("| n | iterations | estimate (MiB) | measured peak added by the fit (MiB) | "
          "estimate / measured | fit time (s) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['n']:,} | {r['iterations']} | {r['estimate'] / 2**20:.1f} | "
              f"{r['measured'] / 2**20:.1f} | {r['estimate'] / r['measured']:.2f} | "
              f"{r['seconds']:.1f} |")


if __name__ == "__main__":
    main()
