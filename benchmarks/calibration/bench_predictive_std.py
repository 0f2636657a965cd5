"""predict(X, return_std=True) of RWRegressor and RKSRegressor: coverage and cost.

Coverage: on held-out rows (75/25 splits, ``--seeds`` splits and feature draws per set) of three
real regression sets (abalone, diabetes, wine as in the papers), the share of test targets inside
mean +/- 1.645 std, the 90% predictive interval of the Bayesian linear model on the features
(target: 85-95%), beside the interval's mean width in units of the test targets' standard
deviation and the test R^2. Estimators at their defaults (T = 1000, reg="auto").

Cost: seconds per row of ``predict(X)`` and of ``predict(X, return_std=True)`` (which adds one
triangular solve with the T x T Cholesky factor per block of rows, O(T^2) per row) on 20,000
synthetic rows of 10 inputs, for T in ``--T``; runs interleaved, minimum of ``--repeats``.

    python -m benchmarks.calibration.bench_predictive_std --datasets ../shared/datasets
        [--seeds 5] [--T 500 1000 2000] [--repeats 3] [--out docs/bench/predictive_std.md]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks._common.datasets import load_abalone, load_diabetes, load_wine
from benchmarks._common.output import machine, write_section

SETS = {"abalone": load_abalone, "diabetes": load_diabetes, "wine": load_wine}
Z90 = 1.6448536269514722      # the 95% quantile of N(0, 1): a two-sided 90% interval


def _estimators(seed):
    import rwtool as rw
    return {"RWRegressor()": rw.RWRegressor(random_state=seed),
            "RKSRegressor()": rw.RKSRegressor(random_state=seed)}


def coverage(root, seeds):
    rows = ["| data set | estimator | coverage of the 90% interval | mean width / std(y_test) "
            "| test R^2 |", "|---|---|---|---|---|"]
    for name, load in SETS.items():
        res = {}
        for seed in range(seeds):
            Xtr, Xte, ytr, yte = load(root, seed=seed)
            for label, est in _estimators(seed).items():
                mean, std = est.fit(Xtr, ytr).predict(Xte, return_std=True)
                inside = np.mean(np.abs(yte - mean) <= Z90 * std)
                width = np.mean(2 * Z90 * std) / np.std(yte)
                r2 = 1 - np.sum((yte - mean) ** 2) / np.sum((yte - yte.mean()) ** 2)
                res.setdefault(label, []).append((inside, width, r2))
        for label, vals in res.items():
            v = np.array(vals)
            rows.append(f"| {name} | {label} | **{v[:, 0].mean():.3f}** (splits "
                        f"{v[:, 0].min():.3f}-{v[:, 0].max():.3f}) | {v[:, 1].mean():.2f} | "
                        f"{v[:, 2].mean():.3f} |")
    return "\n".join(rows)


def cost(Ts, repeats, n=20000, d=10):
    import rwtool as rw
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.standard_normal(n)
    rows = ["| T | predict, us per row | predict(return_std=True), us per row | ratio |",
            "|---|---|---|---|"]
    for T in Ts:
        est = rw.RWRegressor(n_features=T, reg=1e-6, random_state=0).fit(X, y)
        best = {"predict": np.inf, "std": np.inf}
        for _ in range(repeats):
            t0 = time.perf_counter()
            est.predict(X)
            best["predict"] = min(best["predict"], time.perf_counter() - t0)
            t0 = time.perf_counter()
            est.predict(X, return_std=True)
            best["std"] = min(best["std"], time.perf_counter() - t0)
        p, s = (1e6 * best[k] / n for k in ("predict", "std"))
        rows.append(f"| {T} | {p:.2f} | {s:.2f} | {s / p:.1f} |")
    return "\n".join(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--T", type=int, nargs="+", default=[500, 1000, 2000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    cov = coverage(args.datasets, args.seeds)
    print(cov)
    cst = cost(args.T, args.repeats)
    print(cst)
    if args.out:
        cmd = ("python -m benchmarks.calibration.bench_predictive_std "
               f"--seeds {args.seeds} --T {' '.join(map(str, args.T))} --repeats {args.repeats}")
        write_section(args.out, "predictive_std",
                      f"Machine: {machine()} (shared). Command: `{cmd}`\n\n"
                      f"### Coverage on held-out rows\n\n{cov}\n\n"
                      f"### Cost per row (20,000 rows x 10 inputs, RWRegressor, reg = 1e-6)\n\n"
                      f"{cst}")


if __name__ == "__main__":
    main()
