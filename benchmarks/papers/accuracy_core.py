"""Accuracy of the RW least-squares fit against seed 003 Table 12/18 (issue: core, item 7).

    python -m benchmarks.papers.accuracy_core [--datasets PATH] [--seeds 10] [--T 2000] [--out FILE]

Protocol (EXPERIMENTS.md): standardised inputs (the estimators do it with training statistics),
official split for adults, 75/25 with a fixed seed for breast cancer, T = 2000. Hyper-parameters
are chosen by rwtool.model_selection._search.RandomizedSearchCV over the paper's distributions (Table 14), but
with a cheaper search than the paper's 50 draws x 5 folds at T = 2000: ``--draws`` draws x 3
folds at T = ``--search-T`` on (a subsample of) the training set. The chosen values are then
fitted at T with ``--seeds`` feature seeds and the test error reported as mean +/- std.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from benchmarks._common.output import machine, write_results
from benchmarks._common.datasets import datasets_root, load_adults, load_cancer

PAPER = {("cancer", "rwsign"): 0.048, ("adults", "rwrelu"): 0.147, ("adults", "rwstumps"): 0.145}


def run(dataset, instantiation, root, T, search_T, draws, seeds, search_rows):
    import rwtool as rw
    from rwtool.model_selection._search import RandomizedSearchCV

    Xtr, Xte, ytr, yte = (load_adults(root) if dataset == "adults" else load_cancer(root))
    rng = np.random.default_rng(0)
    sub = rng.permutation(len(Xtr))[:search_rows]
    t0 = time.perf_counter()
    # rwtool's search: the paper's Table 14 space, candidates sharing features share the work
    search = RandomizedSearchCV(
        rw.RWClassifier(instantiation=instantiation, n_features=search_T, random_state=0),
        n_iter=draws, cv=3, random_state=0, refit=False).fit(Xtr[sub], ytr[sub])
    search_time = time.perf_counter() - t0
    best = search.best_params_
    errs, train_errs, fit_times = [], [], []
    for s in range(seeds):
        est = rw.RWClassifier(instantiation=instantiation, n_features=T, random_state=s, **best)
        est.fit(Xtr, ytr)
        fit_times.append(est.fit_time_)
        errs.append(1 - est.score(Xte, yte))
        train_errs.append(1 - est.score(Xtr, ytr))
    return {"dataset": dataset, "instantiation": instantiation, "params": best,
            "test": (float(np.mean(errs)), float(np.std(errs))),
            "train": float(np.mean(train_errs)), "fit_time": float(np.mean(fit_times)),
            "search_time": search_time, "paper": PAPER[(dataset, instantiation)]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--T", type=int, default=2000)
    ap.add_argument("--search-T", type=int, default=500)
    ap.add_argument("--draws", type=int, default=30)
    ap.add_argument("--search-rows", type=int, default=12000)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    root = datasets_root(args.datasets)
    rows = [run(d, i, root, args.T, args.search_T, args.draws, args.seeds, args.search_rows)
            for d, i in PAPER]
    cmd = "python -m benchmarks.papers.accuracy_core " + " ".join(argv or sys.argv[1:])
    lines = [f"Command: `{cmd}`", f"Machine: {machine()}", "",
             "| dataset | instantiation | train error | test error (mean +/- std) | paper test error | "
             "fit time (s) | hyper-parameters |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        p = ", ".join(f"{k}={v:.3g}" for k, v in sorted(r["params"].items()))
        verdict = "within" if r["test"][0] <= r["paper"] + max(r["test"][1], 1e-3) else "worse"
        lines.append(f"| {r['dataset']} | {r['instantiation']} | {r['train']:.3f} | "
                     f"{r['test'][0]:.3f} +/- {r['test'][1]:.3f} | {r['paper']:.3f} ({verdict}) | "
                     f"{r['fit_time']:.2f} | {p} |")
    text = "\n".join(lines) + "\n"
    write_results(text, args.out)


if __name__ == "__main__":
    main()
