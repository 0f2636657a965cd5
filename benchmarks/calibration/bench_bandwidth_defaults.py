"""The default sigma of the Fourier kitchen sinks and of RWStumps, measured (issue 12).

    python -m benchmarks.calibration.bench_bandwidth_defaults [--datasets PATH] [--only cancer,digits]
        [--groups RKS/fourier/ridge,RKS/fourier/lasso,RKS/fourier/sgd,RW/rwstumps/lstsq,
                  RKS/stumps/ridge]
        [--fourier 0.5,1,1.41,2,2.83,median,scale2] [--stumps 0.5/1,1/1,2/1,...]
        [--rks-stumps 0.25,0.5,1,2,4] [--seeds 0,1,2] [--T 500] [--max-train 20000]
        [--json FILE] [--title TEXT] [--out docs/bench/bandwidth_defaults.md]
    python -m benchmarks.calibration.bench_bandwidth_defaults --report-only --json A.json,B.json --out ...

Each group is a row of the defaults benchmark (benchmarks/calibration/defaults.py: estimator, base
or instantiation, solver) fitted with every other parameter at its default (reg=None, i.e. "auto"
for ridge, lstsq and lasso), n_features = T, random_state in ``--seeds`` (the error is their mean),
on the defaults benchmark's nine data sets, splits and training subsample, for each candidate value
of the parameter under study:

* RKS base="fourier": sigma = c sqrt(d / 2) for each multiplier c (c = 1 is scikit-learn's
  gamma="scale" on d standardised columns, today's default), "scale2" = 2 sqrt(d' / 2) with d'
  the non-constant columns (2 x rwtool.features.scale_sigma of the standardised inputs), and
  "median" = the median pairwise distance of 1000 standardised training rows drawn with seed 0
  (rwtool.features.median_sigma);
* RW instantiation="rwstumps": "s/r" is sigma = s and gamma = r s (the default is 1/1);
* RKS base="stumps": sigma (the threshold's standard deviation, default 1).

Per group and value: the test error on every set, the mean rank across sets (ties share), the
mean relative excess over the best value of the set, the number of sets where it is within
max(5% rel, 0.005 abs) of that best value (the issue's tolerance), and the misses against the
tuned figure of the group (benchmarks/calibration/defaults_tuned.json, same tolerance; the
ridge/lstsq groups only). The report goes between the markers of ``--out`` (the analysis around them
survives); ``--report-only`` rebuilds it from one or more ``--json`` runs, a section each.
Run single-threaded (OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks._common.argcheck import check_choices, csv_list
from benchmarks._common.output import machine
from benchmarks.calibration.bench_instantiation_defaults import summary
from benchmarks.calibration.defaults import (ABS_TOL, DATASETS, REGRESSION, REL_TOL, error, load,
                                             write_report)

GROUPS = ("RKS/fourier/ridge", "RKS/fourier/lasso", "RKS/fourier/sgd", "RW/rwstumps/lstsq",
          "RW/rwstumps/lasso", "RW/rwstumps/sfgd", "RW/rwstumps/osd", "RKS/stumps/ridge",
          "RKS/stumps/lasso", "RKS/stumps/sgd")
#: groups with a tuned figure in defaults_tuned.json (the least-squares rows)
TUNED = ("ridge", "lstsq")
BEGIN, END = "<!-- bandwidth:begin -->", "<!-- bandwidth:end -->"
TITLE = "# Default sigma of the Fourier kitchen sinks and of RWStumps (issue 12)"


def fourier_sigma(value: str, Xtr) -> float:
    """The Fourier bandwidth named by ``value`` on the training inputs ``Xtr``."""
    from rwtool._base import Standardizer
    from rwtool.features import median_sigma, scale_sigma
    if value in ("median", "scale2"):
        Z = Standardizer.fit(Xtr).transform(Xtr)
        return (median_sigma(Z, n_rows=1000, random_state=0) if value == "median"
                else 2.0 * scale_sigma(Z))
    return float(value) * math.sqrt(Xtr.shape[1] / 2.0)


def params(group: str, value: str, Xtr) -> dict:
    """Estimator parameters of candidate ``value`` in ``group``."""
    if group.startswith("RKS/fourier"):
        return {"sigma": fourier_sigma(value, Xtr)}
    if group.startswith("RW/rwstumps"):
        s, r = (float(t) for t in value.split("/"))
        return {"sigma": s, "gamma": r * s}
    return {"sigma": float(value)}


def values_of(group: str, args) -> list[str]:
    if group.startswith("RKS/fourier"):
        return args.fourier
    return args.stumps if group.startswith("RW/rwstumps") else args.rks_stumps


def sweep(args):
    import rwtool as rw
    tuned = json.loads(Path(args.tuned).read_text())["runs"] if Path(args.tuned).exists() else {}
    out = {"T": args.T, "max_train": args.max_train, "machine": machine(), "cells": {},
           "tuned": {}, "seeds": list(args.seeds)}
    for name in args.only:
        reg = name in REGRESSION
        Xtr, Xte, ytr, yte = load(name, args.datasets, args.max_train)
        for group in args.groups:
            family, kind, solver = group.split("/")
            tkey = f"{name}|{family}|{kind}|T{args.T}|n{len(Xtr)}|d40"
            if solver in TUNED and tkey in tuned:
                out["tuned"][f"{group}|{name}"] = tuned[tkey]["test"]
            if family == "RW":
                Est = rw.RWRegressor if reg else rw.RWClassifier
                base = {"instantiation": kind}
            else:
                Est = rw.RKSRegressor if reg else rw.RKSClassifier
                base = {"base": kind}
            for v in values_of(group, args):
                p = params(group, v, Xtr)
                tests, regs = [], []
                t = time.perf_counter()
                for seed in args.seeds:
                    est = Est(solver=solver, n_features=args.T, random_state=seed, **base, **p)
                    try:
                        est.fit(Xtr, ytr)
                        tests.append(error(est.predict(Xte), yte, reg))
                        regs.append(float(getattr(est, "reg_", float("nan"))))
                    except (ArithmeticError, ValueError) as exc:   # a loud failure: the worst
                        print(f"{group} {name} {v}: {type(exc).__name__}: {exc}",
                              file=sys.stderr)
                        tests.append(float("inf") if reg else 1.0)
                test = float(np.mean(tests))
                cell = {"test": test, "tests": tests, "reg_": regs, "sigma": p["sigma"],
                        "fit": (time.perf_counter() - t) / len(args.seeds)}
                out["cells"][f"{group}|{name}|{v}"] = cell
                print(f"{group} {name} {v} (sigma {p['sigma']:.3g}): {test:.4f} "
                      f"({cell['fit']:.1f} s)", file=sys.stderr, flush=True)
    return out


NOTE = ("Each group is a row of the defaults benchmark with every other parameter at its default "
        "(reg=\"auto\" for ridge, lstsq and lasso), the defaults benchmark's splits and training "
        "subsample. Error: test error (classification), MSE on standardised y (regression). "
        "Rank: of the value among the values tried, per set (1 = best; ties share), averaged "
        "over the sets. Excess: (error - best error of the set) / best error, averaged. Near "
        "best: sets where the error is within max(5%, 0.005) of the best value of the set (the "
        "issue's tolerance). Misses: sets where the error is above the tuned figure "
        "(benchmarks/calibration/defaults_tuned.json) by more than max(5%, 0.005); "
        "least-squares groups "
        "only. Fourier values: c = sigma / sqrt(d / 2) (1 = scikit-learn's gamma=\"scale\" on "
        "d standardised columns, the default), scale2 = 2 sqrt(d' / 2) over the d' non-constant "
        "columns, median = median pairwise distance of 1000 standardised training rows (seed 0). "
        "RWStumps values: sigma / (gamma / sigma), the default is 1/1. Times are whole-fit wall "
        "clock on a shared machine.")


def _ordered(keys, field):
    """The distinct values of one field of the "group|set|value" cell keys, in run order."""
    return list(dict.fromkeys(k.split("|")[field] for k in keys))


def report(res, title=None):
    """Markdown tables of one sweep (groups, sets and values as the run recorded them)."""
    seeds = ", ".join(map(str, res.get("seeds", [0])))
    lines = [f"### {title or 'Run'}: T = {res['T']}, mean of random_state {seeds}", "",
             f"Machine: {res['machine']}. Command: `{res.get('cmd', '')}`.", ""]
    cells = list(res["cells"])
    sets = [s for s in DATASETS if s in _ordered(cells, 1)]
    for group in _ordered(cells, 0):
        values = _ordered([k for k in cells if k.startswith(group + "|")], 2)
        err, rank, excess, misses = summary(res, group, values, sets)
        best = err.min(axis=0)
        near = (err <= best + np.maximum(REL_TOL * best, ABS_TOL)).sum(axis=1)
        has_tuned = any(f"{group}|{s}" in res["tuned"] for s in sets)
        fit = sum(res["cells"][k]["fit"] for k in cells if k.startswith(group + "|"))
        lines += [f"#### {group} ({fit:.0f} s of fits per seed)", "",
                  "| value | " + " | ".join(sets) + " | mean rank | mean excess | near best | "
                  "misses vs tuned |", "|---" * (len(sets) + 5) + "|"]
        for i, v in enumerate(values):
            lines.append(f"| {v} | " + " | ".join(f"{e:.4f}" for e in err[i])
                         + f" | {rank[i]:.2f} | {100 * excess[i]:.1f}% | {near[i]} | "
                           f"{misses[i] if has_tuned else '–'} |")
        if has_tuned:
            tuned = [res["tuned"].get(f"{group}|{s}") for s in sets]
            lines.append("| tuned | " + " | ".join("–" if t is None else f"{t:.4f}"
                                                   for t in tuned) + " | | | | |")
        if group.startswith("RKS/fourier"):
            sig = [[res["cells"][f"{group}|{s}|{v}"]["sigma"] for s in sets] for v in values]
            lines += ["", "sigma used (per set, in the order of the table): " + "; ".join(
                f"{v}: " + ", ".join(f"{x:.3g}" for x in row) for v, row in zip(values, sig))]
        lines.append("")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--only", default=",".join(DATASETS))
    ap.add_argument("--groups", default="RKS/fourier/ridge,RKS/fourier/lasso,RKS/fourier/sgd,"
                                        "RW/rwstumps/lstsq,RKS/stumps/ridge")
    ap.add_argument("--fourier", default="0.5,1,1.41,2,2.83,median,scale2")
    ap.add_argument("--stumps", default="0.5/1,1/1,2/1,4/1,1/0.25,1/4,2/0.25,2/4,0.5/4")
    ap.add_argument("--rks-stumps", default="0.25,0.5,1,2,4")
    ap.add_argument("--seeds", default="0", help="random_state values; the error is their mean")
    ap.add_argument("--T", type=int, default=500)
    ap.add_argument("--max-train", type=int, default=20000)
    ap.add_argument("--tuned", default=str(Path(__file__).with_name("defaults_tuned.json")))
    ap.add_argument("--json", default=None,
                    help="write the sweep here; with --report-only, read these (comma-separated)")
    ap.add_argument("--title", default=None, help="the heading of this run in the report")
    ap.add_argument("--report-only", action="store_true", help="rewrite --out from --json")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    args.only, args.groups = csv_list(args.only), csv_list(args.groups)
    args.fourier, args.stumps = csv_list(args.fourier), csv_list(args.stumps)
    args.rks_stumps = csv_list(args.rks_stumps)
    args.seeds = [int(t) for t in csv_list(args.seeds)]
    check_choices(ap, args.only, DATASETS, "data set")
    check_choices(ap, args.groups, GROUPS, "group")
    if args.report_only:
        if not args.json:
            ap.error("--report-only needs --json FILE[,FILE...]")
        runs = [json.loads(Path(f).read_text()) for f in csv_list(args.json)]
    else:
        res = sweep(args)
        res["title"] = args.title
        res["cmd"] = "python -m benchmarks.calibration.bench_bandwidth_defaults " + " ".join(
            argv if argv is not None else sys.argv[1:])
        if args.json:
            Path(args.json).write_text(json.dumps(res, indent=1))
        runs = [res]
    text = NOTE + "\n\n" + "".join(report(r, r.get("title")) for r in runs)
    if args.out:     # the tables between the markers; the analysis around them survives
        write_report(text, args.out, BEGIN, END, TITLE)
    print(text)


if __name__ == "__main__":
    main()
