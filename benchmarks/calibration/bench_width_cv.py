"""Would choosing the kernel width by cross-validation close the defaults' last gaps? (issue 12)

    python -m benchmarks.calibration.bench_width_cv [--datasets PATH] [--only cancer,digits] [--T 500]
        [--max-train 20000] [--json FILE]

The lstsq/ridge defaults that still miss the tuned figure (docs/bench/defaults.md) miss it by a
width parameter whose best value differs from set to set (docs/bench/bandwidth_defaults.md,
docs/bench/instantiation_defaults.md). The obvious remedy is to let the default choose the width
the way it already chooses reg: fit each of a few widths with reg="auto" and keep the one whose
best 3-fold score (``reg_search_["mean_score"]``, the criterion of rwtool's reg search) is
highest. This script measures that remedy without building it: for every RW instantiation and
the Fourier kitchen sinks, on the defaults benchmark's nine sets, splits and training subsample,
the test error of the default width, of the width the criterion picks among three, and the
verdict of both against the tuned figure (benchmarks/calibration/defaults_tuned.json, max(5% rel,
0.005)). Widths: theta in {0.1 (default), 0.03, 0.3} (RWSign, RWRelu), kappa in {5 (the default when
docs/bench/bandwidth_defaults.md was measured; 10 since), 20, 50} (RWExpSign, RWExpRelu), gamma in {1 (default), 0.5, 2} (RWStumps), Fourier sigma = c sqrt(d/2)
with c in {1 (default), 0.5, 2}. Prints one line per set and group, and a count at the end.
Run single-threaded (OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1).
"""

from __future__ import annotations

import argparse
import json
import math
import warnings
from pathlib import Path

from benchmarks._common.argcheck import check_choices, csv_list
from benchmarks._common.output import machine
from benchmarks.calibration.defaults import ABS_TOL, DATASETS, REGRESSION, REL_TOL, error, load

#: group -> (parameter, values; the first is the default)
GRID = {"rwsign": ("theta", (0.1, 0.03, 0.3)), "rwrelu": ("theta", (0.1, 0.03, 0.3)),
        "rwexpsign": ("kappa", (5.0, 20.0, 50.0)), "rwexprelu": ("kappa", (5.0, 20.0, 50.0)),
        "rwstumps": ("gamma", (1.0, 0.5, 2.0)), "fourier": ("sigma", (1.0, 0.5, 2.0))}


def _estimator(group, value, d, regression, T):
    import rwtool as rw
    if group == "fourier":
        Est = rw.RKSRegressor if regression else rw.RKSClassifier
        return Est(base="fourier", n_features=T, random_state=0, sigma=value * math.sqrt(d / 2))
    Est = rw.RWRegressor if regression else rw.RWClassifier
    return Est(instantiation=group, n_features=T, random_state=0, **{GRID[group][0]: value})


def sweep(args) -> dict:
    tuned = json.loads(Path(args.tuned).read_text())["runs"]
    out = {"machine": machine(), "T": args.T, "cells": {}}
    for name in args.only:
        regression = name in REGRESSION
        Xtr, Xte, ytr, yte = load(name, args.datasets, args.max_train)
        for group, (param, values) in GRID.items():
            cells = []
            for v in values:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est = _estimator(group, v, Xtr.shape[1], regression, args.T).fit(Xtr, ytr)
                cv = max(s for s in est.reg_search_["mean_score"] if s == s)
                cells.append([v, cv, error(est.predict(Xte), yte, regression)])
            family = "RKS" if group == "fourier" else "RW"
            t = tuned.get(f"{name}|{family}|{group}|T{args.T}|n{len(Xtr)}|d40", {}).get("test")
            out["cells"][f"{name}|{group}"] = {"param": param, "cells": cells, "tuned": t}
            pick = max(cells, key=lambda c: c[1])
            print(f"{name:20s} {group:9s} default {cells[0][2]:.4f} {_verdict(cells[0][2], t):4s}"
                  f" | cv picks {param}={pick[0]:g}: {pick[2]:.4f} {_verdict(pick[2], t):4s}"
                  f" | tuned {'-' if t is None else f'{t:.4f}'}", flush=True)
    return out


def _verdict(err, tuned) -> str:
    if tuned is None:
        return ""
    return "ok" if err <= tuned + max(REL_TOL * tuned, ABS_TOL) else "MISS"


def count(res) -> dict:
    """Misses against the tuned figure of the default width and of the criterion's pick."""
    n = {"rows": 0, "default": 0, "pick": 0}
    for cell in res["cells"].values():
        if cell["tuned"] is None:
            continue
        pick = max(cell["cells"], key=lambda c: c[1])
        n["rows"] += 1
        n["default"] += _verdict(cell["cells"][0][2], cell["tuned"]) == "MISS"
        n["pick"] += _verdict(pick[2], cell["tuned"]) == "MISS"
    return n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--only", default=",".join(DATASETS))
    ap.add_argument("--T", type=int, default=500)
    ap.add_argument("--max-train", type=int, default=20000)
    ap.add_argument("--tuned", default=str(Path(__file__).with_name("defaults_tuned.json")))
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    args.only = csv_list(args.only)
    check_choices(ap, args.only, DATASETS, "data set")
    res = sweep(args)
    n = count(res)
    print(f"misses against the tuned figure, of {n['rows']} rows: default width {n['default']}, "
          f"width chosen by the 3-fold criterion {n['pick']}")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
