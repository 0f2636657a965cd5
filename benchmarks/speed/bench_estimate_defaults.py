"""The pre-flight estimate of the default fits against their CPU seconds and peak memory.

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 flock /tmp/bench.lock \\
        python -m benchmarks.speed.bench_estimate_defaults [--datasets PATH] [--cases a,b]
        [--T 500,1000,2000] [--max-train 20000]

For each case (an estimator at its defaults, reg "auto" where it applies, on one data set) and
each T: ``est._estimate_fit(n, d, k)`` with the arguments rwtool.resources.estimate_fit gets from
the app (gui/logic/preflight.py: k = 1 for two classes and for a regressor, else the classes),
against one fit's CPU seconds (time.process_time, after a small warm-up fit of the same
configuration in this process: numba's compilation is not in it; two fits, the ratio on the
second: the first pays more system time for fresh pages, up to 2.5 ms a MB on the shared
virtual machine, benchmarks/speed/bench_fresh_memory.py) and a second fit's peak under
tracemalloc (benchmarks.speed.bench_reg_auto.peak_mb: what the fit allocates, input copies
included, beyond the caller's X and y; the estimate counts those copies too). Printed as a
markdown table, estimate / real for each. Data: benchmarks.calibration.defaults.load (at most
``--max-train`` training rows); "mnist10" is mnist's ten digits, the first ``--max-train``
training images (a multiclass case; not a loader of benchmarks/_common/datasets.py).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks._common.argcheck import csv_list
from benchmarks.speed.bench_reg_auto import peak_mb

#: name -> (estimator class name, parameters beyond n_features, data set)
CASES = {
    "rw-adults": ("RWClassifier", {}, "adults"),
    "rw-mnist17": ("RWClassifier", {}, "mnist17"),
    "rks-adults": ("RKSClassifier", {}, "adults"),
    "rks-mnist17": ("RKSClassifier", {}, "mnist17"),
    "rwreg-abalone": ("RWRegressor", {}, "abalone"),
    "rksreg-abalone": ("RKSRegressor", {}, "abalone"),
    "rw-lasso-adults": ("RWClassifier", {"solver": "lasso"}, "adults"),
    "rks-lasso-adults": ("RKSClassifier", {"solver": "lasso"}, "adults"),
    "rw-mnist10": ("RWClassifier", {}, "mnist10"),
    "rw32-adults": ("RWClassifier", {"dtype": "float32"}, "adults"),
    "rw32-mnist17": ("RWClassifier", {"dtype": "float32"}, "mnist17"),
}


def load_data(name, root, max_train):
    """(X, y) training rows of ``name``."""
    from benchmarks.calibration.defaults import load
    if name != "mnist10":
        Xtr, _, ytr, _ = load(name, root, max_train)
        return Xtr, ytr
    from benchmarks._common.datasets import _idx, datasets_root
    base = datasets_root(root) / "mnist"
    X = _idx(base / "train-images-idx3-ubyte.gz").reshape(-1, 784)[:max_train].astype(float)
    y = _idx(base / "train-labels-idx1-ubyte.gz")[:max_train].astype(int)
    return np.ascontiguousarray(X), y


def measure(cls, params, X, y, T):
    """(estimate, CPU seconds of two fits, tracemalloc peak MB, reg chosen) of ``cls(n_features=T, **params).fit(X, y)``."""
    classes = len(np.unique(y)) if cls._estimator_type == "classifier" else 1
    k = 1 if classes <= 2 else classes          # as gui/logic/preflight.py passes it
    est = cls(n_features=T, random_state=0, **params)
    e = est._estimate_fit(len(X), X.shape[1], k)
    cpus = []
    for _ in range(2):
        c = time.process_time()
        est = cls(n_features=T, random_state=0, **params).fit(X, y)
        cpus.append(time.process_time() - c)
    mb = peak_mb(lambda: cls(n_features=T, random_state=0, **params).fit(X, y))
    return e, cpus, mb, getattr(est, "reg_", None)


def main(argv=None):
    import os
    import rwtool as rw
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--T", default="500,1000,2000")
    ap.add_argument("--max-train", type=int, default=20000)
    args = ap.parse_args(argv)
    print(f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')} "
          f"NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS')}; load {os.getloadavg()}")
    print("| case | n x d, k | T | reg chosen | est. / real CPU s (first fit) | ratio | est. / real MB | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for case in csv_list(args.cases):
        name, params, data = CASES[case]
        cls = getattr(rw, name)
        X, y = load_data(data, args.datasets, args.max_train)
        cls(n_features=50, random_state=0, **params).fit(X[:600], y[:600])   # compile, warm
        for T in (int(t) for t in csv_list(args.T)):
            e, (first, cpu), mb, reg = measure(cls, params, X, y, T)
            k = len(np.unique(y)) if cls._estimator_type == "classifier" else 1
            est_mb = e.peak_bytes / 1e6
            regs = "-" if reg is None else f"{reg:.0e}"
            print(f"| {case} | {len(X)} x {X.shape[1]}, {k} | {T} | {regs} | "
                  f"{e.seconds:.2f} / {cpu:.2f} ({first:.2f}) | **{e.seconds / cpu:.2f}** | "
                  f"{est_mb:.0f} / {mb:.0f} | **{est_mb / mb:.2f}** |", flush=True)
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
