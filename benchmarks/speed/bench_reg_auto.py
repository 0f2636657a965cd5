"""Seconds of the default (reg="auto") in-memory fit of the exact least-squares estimators.

    python -m benchmarks.speed.bench_reg_auto [--datasets PATH] [--data adults] [--T 500]
        [--repeats 3] [--estimators RWClassifier,RKSClassifier]

Fits each estimator with its defaults (reg=None, which is reg="auto" for "lstsq" and "ridge";
only n_features fixed) on the training rows of ``--data`` (benchmarks/_common/datasets.py, at most
20000 rows as in benchmarks/calibration/defaults.py) and prints the median wall and CPU seconds of
``--repeats`` fits (CPU seconds are the steadier figure on a shared machine), the chosen reg and the
test error. Used to time reg="auto" before and after it was made one pass
(docs/bench/defaults.md): run it against two checkouts, interleaved, and compare the medians.
Run single-threaded (OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1).
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv=None):
    import rwtool as rw
    from benchmarks.calibration.defaults import load
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--data", default="adults")
    ap.add_argument("--T", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--estimators", default="RWClassifier,RKSClassifier")
    args = ap.parse_args(argv)
    Xtr, Xte, ytr, yte = load(args.data, args.datasets, 20000)
    for name in args.estimators.split(","):
        times, cpu = [], []
        for _ in range(args.repeats):
            est = getattr(rw, name)(n_features=args.T, random_state=0)
            t, c = time.perf_counter(), time.process_time()
            est.fit(Xtr, ytr)
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        pred = est.predict(Xte)
        err = (np.mean(pred != yte) if est._estimator_type == "classifier"
               else float(np.mean((pred - yte) ** 2) / np.var(yte)))
        print(f"{name} {args.data} n={len(Xtr)} T={args.T}: fit {np.median(times):.3f} s, "
              f"cpu {np.median(cpu):.3f} s (medians of {args.repeats}), reg_ {est.reg_:.0e}, "
              f"test error {err:.4f}", flush=True)


if __name__ == "__main__":
    main()
