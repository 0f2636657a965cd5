"""What a hyper-parameter search costs: rwtool.model_selection._search against refitting every candidate.

On the first ``--rows`` rows of adults (108 one-hot and numeric columns), for RWRelu with T
random features and 5-fold CV:

* one fit on all the rows (the unit of cost);
* ``select_reg`` over 12 values of reg (what ``reg="auto"`` runs, but with 5 folds);
* a 50-draw search over reg alone, by rwtool.model_selection._search.RandomizedSearchCV and by scikit-learn's
  RandomizedSearchCV on the same estimator, distribution and draws (which refits every
  candidate on every fold);
* the full 50-draw Table 14 search (sigma, theta, reg), by both.

The two libraries draw their candidates and folds with different generators, so their best
cross-validation scores are listed side by side rather than expected equal. Repeats are
interleaved and the minimum kept. Writes a markdown table.

    python -m benchmarks.speed.bench_tuning --rows 5000 --T 500 --repeats 2 --out docs/bench/tuning.md
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks._common.output import machine, write_results
from benchmarks._common.datasets import datasets_root, load_adults


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--rows", type=int, default=5000)
    ap.add_argument("--T", type=int, default=500)
    ap.add_argument("--draws", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)

    import rwtool as rw
    from rwtool.model_selection._search import (LogUniform, RandomizedSearchCV, default_space,
                                                select_reg)
    from sklearn.model_selection import RandomizedSearchCV as SkSearch
    from sklearn.model_selection import StratifiedKFold

    Xtr, _, ytr, _ = load_adults(datasets_root(args.datasets))
    X, y = Xtr[: args.rows], ytr[: args.rows]
    est = rw.RWClassifier(instantiation="rwrelu", n_features=args.T, random_state=0)
    est.fit(X[:300], y[:300])  # compiled kernels loaded before any clock starts
    reg_space = {"reg": LogUniform(1e-12, 1e-4)}
    full_space = default_space(est)
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    tasks = {
        "one fit (all rows)": lambda: est.fit(X, y),
        "select_reg, 12 values x 5 folds": lambda: select_reg(est, X, y, np.logspace(-12, -1, 12),
                                                               cv=5),
        f"reg only, {args.draws} draws x 5 folds: rwtool": lambda: RandomizedSearchCV(
            est, reg_space, n_iter=args.draws, cv=5, random_state=0, refit=False).fit(X, y),
        f"reg only, {args.draws} draws x 5 folds: scikit-learn": lambda: SkSearch(
            est, reg_space, n_iter=args.draws, cv=cv, random_state=0, refit=False).fit(X, y),
        f"Table 14 space, {args.draws} draws x 5 folds: rwtool": lambda: RandomizedSearchCV(
            est, full_space, n_iter=args.draws, cv=5, random_state=0, refit=False).fit(X, y),
        f"Table 14 space, {args.draws} draws x 5 folds: scikit-learn": lambda: SkSearch(
            est, full_space, n_iter=args.draws, cv=cv, random_state=0, refit=False).fit(X, y),
    }
    best = {k: float("inf") for k in tasks}
    scores = {}
    for _ in range(args.repeats):
        for name, fn in tasks.items():
            t, out = _timed(fn)
            best[name] = min(best[name], t)
            if hasattr(out, "best_score_"):
                scores[name] = out.best_score_
    unit = best["one fit (all rows)"]
    lines = ["# Hyper-parameter search cost", "",
             f"Command: `python -m benchmarks.speed.bench_tuning --rows {args.rows} --T {args.T} "
             f"--draws {args.draws} --repeats {args.repeats}`  ",
             f"Machine: {machine()}; adults, first {args.rows} rows, RWRelu T = {args.T}, "
             f"minimum of {args.repeats} interleaved repeats.", "",
             "| task | time (s) | in fits | best CV accuracy |", "|---|---:|---:|---:|"]
    for name in tasks:
        sc = f"{scores[name]:.4f}" if name in scores else "-"
        lines.append(f"| {name} | {best[name]:.2f} | {best[name] / unit:.1f} | {sc} |")
    text = "\n".join(lines) + "\n"
    write_results(text, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
