"""What reg="auto" costs and gives GreedyMK: the default against the old default and scikit-learn.

    python -m benchmarks.calibration.bench_greedy_reg [--datasets PATH] [--rounds 5] [--classifier | --large]

Regression (abalone, diabetes, wine as in benchmarks/calibration/defaults.py: 75/25 splits, MSE on
standardised y): GreedyMKRegressor() (reg="auto", intercept), the old default
GreedyMKRegressor(reg=1e-4, fit_intercept=False) and StandardScaler + Nystroem(100) + Ridge.
``--classifier``: GreedyMKClassifier() (reg=1e-4) against GreedyMKClassifier(reg="auto") on the
small classification sets (make_classification, cancer, digits), the measurement behind keeping
the classifier's fixed default. ``--large``: the regressors on 20000 synthetic rows (d = 20,
y = sin x1 + x2 x3 + noise 0.5, 5000 test rows), where the search holds out one fold. Fits run in turn, one of each per round (so drifts in the
machine's speed hit all alike); the table gives median fit seconds, their ratio to the
fixed-lam fit (the second row of each set) and the test error (deterministic: random_state=0).
Run single-threaded
(OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from benchmarks._common.output import machine
from benchmarks.calibration.defaults import error, load


def _candidates(task):
    import rwtool as rw
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    if task == "regression":
        return {"default (reg='auto')": lambda: rw.GreedyMKRegressor(random_state=0),
                "old default (1e-4, no intercept)":
                    lambda: rw.GreedyMKRegressor(reg=1e-4, fit_intercept=False, random_state=0),
                "Nystroem(100) + Ridge": lambda: make_pipeline(
                    StandardScaler(), Nystroem(n_components=100, random_state=0), Ridge())}
    return {"reg='auto'": lambda: rw.GreedyMKClassifier(reg="auto", random_state=0),
            "default (1e-4, no intercept)": lambda: rw.GreedyMKClassifier(random_state=0)}


def _synthetic(n=20000, n_test=5000, d=20):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n + n_test, d))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * rng.standard_normal(n + n_test)
    return X[:n], X[n:], y[:n], y[n:]


def measure(name, task, root, rounds):
    Xtr, Xte, ytr, yte = _synthetic() if name == "synthetic" else load(name, root, 5000)
    cands = _candidates(task)
    times = {k: [] for k in cands}
    errs, regs = {}, {}
    for k, make in cands.items():                 # warm-up: numba caches, first imports
        make().fit(Xtr[:50], ytr[:50])
    for _ in range(rounds):
        for k, make in cands.items():
            est = make()
            t = time.perf_counter()
            est.fit(Xtr, ytr)
            times[k].append(time.perf_counter() - t)
            errs[k] = error(est.predict(Xte), yte, task == "regression")
            regs[k] = getattr(est, "reg_", None)
    base = list(cands)[1]                         # the fixed-lam fit the ratios refer to
    rows = []
    for k in cands:
        med = float(np.median(times[k]))
        ratio = float(np.median(np.array(times[k]) / np.array(times[base])))
        rows.append((name, k, errs[k], regs[k], med, ratio))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--classifier", action="store_true")
    ap.add_argument("--large", action="store_true")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    sets = (("make_classification", "cancer", "digits") if args.classifier
            else ("synthetic",) if args.large else ("abalone", "diabetes", "wine"))
    task = "classification" if args.classifier else "regression"
    print(f"Machine: {machine()}; {args.rounds} rounds, median fit seconds\n")
    print("| data | fit | test error | reg_ | fit s (median) | / fixed-lam fit |")
    print("|---|---|---|---|---|---|")
    for name in sets:
        for name_, k, err, reg, med, ratio in measure(name, task, args.datasets, args.rounds):
            reg_s = "–" if reg is None else f"{reg:g}"
            print(f"| {name_} | {k} | {err:.4f} | {reg_s} | {med:.3f} | {ratio:.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
