"""The default theta (RWSign, RWRelu) and kappa (RWExpSign, RWExpRelu), measured (issue 12).

    python -m benchmarks.calibration.bench_instantiation_defaults [--datasets PATH] [--only cancer,digits]
        [--insts rwsign,rwrelu,rwexpsign,rwexprelu] [--thetas 0.03,0.05,0.1,0.25,0.5,0.75,0.9]
        [--kappas 2,5,10,20,50] [--seeds 0] [--T 500] [--max-train 20000] [--json FILE]
        [--out docs/bench/instantiation_defaults.md]

RWClassifier/RWRegressor with the default solver (lstsq, reg="auto") and every other parameter
at its default, except n_features = T and the instantiation's theta or kappa, on the defaults
benchmark's nine data sets with its splits and training subsample
(benchmarks/calibration/defaults.py: ``load``). For every instantiation and value: the test error
per set, the mean rank of the value across sets (ties share the mean rank), the mean relative excess
over the best value of that set, and how many sets miss the defaults benchmark's target against the
tuned figure (benchmarks/calibration/defaults_tuned.json, max(5% rel, 0.005 abs)). With ``--seeds
0,1,2`` every value is fitted at each random_state and its error is the mean, and the tuned figure
is the mean of the tuned parameters refitted at the same random_states (the ``refits`` of the cache,
filled by ``benchmarks.calibration.defaults --seeds``), as the defaults benchmark checks its target.
It also records theta_ and kappa_ of the fitted map (seed 003 Table 2, the constants every bound of
est.bounds() scales with) and, on cancer and abalone, est.bounds()'s rademacher_bound (of the
first random_state). Run single-threaded
(OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks._common.argcheck import check_choices, csv_list
from benchmarks._common.output import machine
from benchmarks.calibration.defaults import ABS_TOL, DATASETS, REGRESSION, REL_TOL, error, load

PARAM = {"rwsign": "theta", "rwrelu": "theta", "rwexpsign": "kappa", "rwexprelu": "kappa"}
BOUND_SETS = ("cancer", "abalone")


def _tuned_figure(cache, key, seeds):
    """The tuned figure of ``key``: the search's own refit (seed 0 alone), or the mean of its
    parameters refitted at every seed (``refits``, filled by benchmarks.calibration.defaults
    --seeds; refits of other parameters than the search's do not count)."""
    run = cache.get("runs", {}).get(key)
    if run is None:
        return None
    if seeds == [0]:
        return run["test"]
    refit = cache.get("refits", {}).get(key, {})
    tests = refit.get("tests", {})
    if refit.get("params") != run.get("params") or not all(str(s) in tests for s in seeds):
        return None
    return float(np.mean([tests[str(s)] for s in seeds]))


def sweep(args):
    import rwtool as rw
    cache = json.loads(Path(args.tuned).read_text()) if Path(args.tuned).exists() else {}
    out = {"T": args.T, "max_train": args.max_train, "machine": machine(), "cells": {},
           "tuned": {}, "seeds": args.seeds}
    for name in args.only:
        reg = name in REGRESSION
        Xtr, Xte, ytr, yte = load(name, args.datasets, args.max_train)
        Est = rw.RWRegressor if reg else rw.RWClassifier
        for inst in args.insts:
            p = PARAM[inst]
            t = _tuned_figure(cache, f"{name}|RW|{inst}|T{args.T}|n{len(Xtr)}|d40", args.seeds)
            if t is not None:
                out["tuned"][f"{inst}|{name}"] = t
            for v in (args.thetas if p == "theta" else args.kappas):
                tests, fits = [], []
                for seed in args.seeds:
                    est = Est(instantiation=inst, n_features=args.T, random_state=seed,
                              **{p: v})
                    t = time.perf_counter()
                    est.fit(Xtr, ytr)
                    fits.append(time.perf_counter() - t)
                    tests.append(error(est.predict(Xte), yte, reg))
                    if seed == args.seeds[0]:      # the constants and bounds of the first draw
                        first = est
                cell = {"test": float(np.mean(tests)), "tests": tests,
                        "fit": float(np.median(fits)), "reg_": float(first.reg_),
                        "theta_": float(first.feature_map_.theta_),
                        "kappa_": float(first.feature_map_.kappa_)}
                if name in BOUND_SETS:
                    cell["rademacher_bound"] = float(
                        first.bounds(Xtr, ytr)["rademacher_bound"])
                out["cells"][f"{inst}|{name}|{v:g}"] = cell
                print(f"{inst} {name} {p}={v:g}: {cell['test']:.4f} ({cell['fit']:.1f} s)",
                      file=sys.stderr, flush=True)
    return out


def label(v) -> str:
    """The cell key of a swept value: a number in %g, a named rule (e.g. "median") as is."""
    return v if isinstance(v, str) else f"{v:g}"


def summary(res, inst, values, sets):
    """Per value: mean rank, mean relative excess over the best value, misses against tuned."""
    err = np.array([[res["cells"][f"{inst}|{s}|{label(v)}"]["test"] for s in sets]
                    for v in values])
    best = err.min(axis=0)
    ranks = np.zeros_like(err)
    for j in range(err.shape[1]):               # ties share the mean rank
        col = err[:, j]
        for i in range(len(values)):
            ranks[i, j] = 1 + np.sum(col < col[i]) + 0.5 * (np.sum(col == col[i]) - 1)
    excess = (err - best) / np.maximum(best, 1e-12)
    misses = []
    for i in range(len(values)):
        n = 0
        for j, s in enumerate(sets):
            t = res["tuned"].get(f"{inst}|{s}")
            n += t is not None and err[i, j] > t + max(REL_TOL * t, ABS_TOL)
        misses.append(n)
    return err, ranks.mean(axis=1), excess.mean(axis=1), misses


def report(res, args, cmd):
    seeds = res.get("seeds", [0])
    drawn = ", ".join(map(str, seeds)) + (
        " (the error is the mean of the draws; tuned: the mean of the tuned parameters "
        "refitted at the same random_states)" if len(seeds) > 1 else "")
    lines = [f"Machine: {res['machine']}; shared with other jobs (times are whole-fit wall "
             f"clock, one fit each). Command: `{cmd}`.", "",
             f"RWClassifier / RWRegressor, lstsq with reg=\"auto\", T = {res['T']}, every other "
             f"parameter at its default, random_state {drawn}; the defaults benchmark's splits and "
             f"training subsample (at most {res['max_train']} rows). Error: test error "
             f"(classification), MSE on standardised y (regression). Rank: of the value among "
             f"the values tried, per set (1 = best; ties share), averaged over the sets. Excess: "
             f"(error - best error of the set) / best error, averaged. Misses: sets where the "
             f"error is above the tuned figure (benchmarks/calibration/defaults_tuned.json) "
             f"by more than "
             f"max(5%, 0.005). theta_ / kappa_: the fitted map's constants (seed 003 Table 2) on "
             f"each set, min-max over the sets; every bound of est.bounds() grows with theta_ "
             f"(rho = theta B + max|y|).", ""]
    sets = [s for s in DATASETS if s in args.only]
    for inst in args.insts:
        p = PARAM[inst]
        values = args.thetas if p == "theta" else args.kappas
        err, rank, excess, misses = summary(res, inst, values, sets)
        lines += [f"## {inst} ({p})", "",
                  f"| {p} | " + " | ".join(sets) + " | mean rank | mean excess | misses "
                  f"vs tuned | theta_ | " + " | ".join(f"bound {s}" for s in BOUND_SETS
                                                       if s in sets) + " |",
                  "|---" * (len(sets) + 5 + sum(s in sets for s in BOUND_SETS)) + "|"]
        for i, v in enumerate(values):
            th = [res["cells"][f"{inst}|{s}|{v:g}"]["theta_"] for s in sets]
            bnd = [f"{res['cells'][f'{inst}|{s}|{v:g}']['rademacher_bound']:.3g}"
                   for s in BOUND_SETS if s in sets]
            lines.append(f"| {v:g} | " + " | ".join(f"{e:.4f}" for e in err[i])
                         + f" | {rank[i]:.2f} | {100 * excess[i]:.1f}% | {misses[i]} | "
                           f"{min(th):.3g}-{max(th):.3g} | " + " | ".join(bnd) + " |")
        tuned = [res["tuned"].get(f"{inst}|{s}") for s in sets]
        lines += ["| tuned | " + " | ".join("–" if t is None else f"{t:.4f}" for t in tuned)
                  + " |" + " |" * (4 + len([s for s in BOUND_SETS if s in sets])), ""]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--only", default=",".join(DATASETS))
    ap.add_argument("--insts", default="rwsign,rwrelu,rwexpsign,rwexprelu")
    ap.add_argument("--thetas", default="0.03,0.05,0.1,0.25,0.5,0.75,0.9")
    ap.add_argument("--kappas", default="2,5,10,20,50")
    ap.add_argument("--seeds", default="0",
                    help="random_state values; the error is their mean, the tuned figure the "
                         "mean of the tuned parameters refitted at the same values")
    ap.add_argument("--T", type=int, default=500)
    ap.add_argument("--max-train", type=int, default=20000)
    ap.add_argument("--tuned", default=str(Path(__file__).with_name("defaults_tuned.json")))
    ap.add_argument("--json", default=None)
    ap.add_argument("--report-only", action="store_true", help="rewrite --out from --json")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    args.only = csv_list(args.only)
    args.insts = csv_list(args.insts)
    args.thetas = [float(s) for s in args.thetas.split(",")]
    args.kappas = [float(s) for s in args.kappas.split(",")]
    args.seeds = [int(s) for s in csv_list(args.seeds)]
    check_choices(ap, args.only, DATASETS, "data set")
    check_choices(ap, args.insts, PARAM, "instantiation")
    if args.report_only:
        if not args.json:
            ap.error("--report-only needs --json FILE")
        res = json.loads(Path(args.json).read_text())
    else:
        res = sweep(args)
        if args.json:
            Path(args.json).write_text(json.dumps(res, indent=1))
    cmd = "python -m benchmarks.calibration.bench_instantiation_defaults " + " ".join(
        argv if argv is not None else sys.argv[1:])
    text = report(res, args, cmd)
    if args.out:
        tmp = f"{args.out}.tmp"
        Path(tmp).write_text("# Default theta and kappa of the RW instantiations (issue 12)\n\n"
                             + text)
        Path(tmp).replace(args.out)
    print(text)


if __name__ == "__main__":
    main()
