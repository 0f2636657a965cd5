"""Time rwtool's Lasso against scikit-learn's on the same adults feature matrix.

The matrix is RWStumps features (T columns) of the first m standardised rows of adults (the
instantiation seed 000 Table 3 fits with the Lasso). Both solvers minimise
(1/(2m)) ||Phi a - y||^2 + lam ||a||_1 on +/-1 targets with the same tolerance (duality gap
<= tol ||y||^2 / m) and the same cap on coordinate-descent sweeps; scikit-learn runs with and
without its precomputed Gram matrix. Repeats are interleaved and the minimum time is kept.
We report time, non-zeros, the objective reached and the relative duality gap, because on
these near-collinear features neither solver may meet the tolerance within the cap.

    python -m benchmarks.speed.bench_lasso --datasets ../shared/datasets --rows 13000 --T 2000 --lam 5e-7
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from benchmarks._common.datasets import load_adults
from benchmarks._common.output import machine, write_section
from rwtool._base import Standardizer
from rwtool.features import RWStumps
from rwtool.solvers._lasso import duality_gap, lasso_objective, lasso_path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--rows", type=int, default=13000)
    ap.add_argument("--T", type=int, default=2000)
    ap.add_argument("--lam", type=float, default=5e-7)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--max-iter", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--no-sklearn-gram", action="store_true",
                    help="skip scikit-learn with precompute=True")
    ap.add_argument("--plain-repeats", type=int, default=1,
                    help="repeats of scikit-learn without precompute (minutes per run)")
    ap.add_argument("--out", default="docs/bench/solvers.md")
    args = ap.parse_args(argv)
    from sklearn.linear_model import Lasso

    Xtr, _, ytr, _ = load_adults(args.datasets)
    X = Standardizer.fit(Xtr[: args.rows]).transform(Xtr[: args.rows])
    y = np.where(ytr[: args.rows] == 1, 1.0, -1.0)
    Phi = np.ascontiguousarray(RWStumps(n_features=args.T, random_state=0).fit(X).transform(X))
    m = len(y)
    yy = float(y @ y) / m

    def ours():
        return lasso_path(Phi, y, args.lam, tol=args.tol, max_iter=args.max_iter, warn=False)[0]

    def sk(pre):
        def run():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return Lasso(alpha=args.lam, fit_intercept=False, tol=args.tol,
                             max_iter=args.max_iter, precompute=pre).fit(Phi, y).coef_
        return run

    runs = {"rwtool": ours, "sklearn": sk(False)}
    if not args.no_sklearn_gram:
        runs["sklearn precompute=True"] = sk(True)
    ours()  # compile the numba kernels outside the timings
    times = {k: [] for k in runs}
    coefs = {}
    for rep in range(args.repeats):
        for name, fn in runs.items():
            if name == "sklearn" and rep >= args.plain_repeats:
                continue
            t0 = time.perf_counter()
            coefs[name] = fn()
            times[name].append(time.perf_counter() - t0)
            print(f"{name}: {times[name][-1]:.2f} s", flush=True)
    base = min(times["sklearn"])
    best_sk = min(min(v) for k, v in times.items() if k != "rwtool")
    best_name = min((k for k in times if k != "rwtool"), key=lambda k: min(times[k]))
    rows = []
    for name in runs:
        a = coefs[name]
        rows.append((name, min(times[name]), int(np.count_nonzero(a)),
                     lasso_objective(Phi, y, a, args.lam),
                     duality_gap(Phi, y, a, args.lam) / yy))
    cmd = ("python -m benchmarks.speed.bench_lasso " + " ".join(
        f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items()
        if k in ("rows", "T", "lam", "tol", "max_iter", "repeats", "plain_repeats")))
    lines = [f"## Lasso: rwtool vs scikit-learn on adults RWStumps features "
             f"({m} x {args.T}, lam = {args.lam:g})", "",
             f"Command: `{cmd}`  ", f"Machine: {machine()}, shared with other jobs; "
             f"min of {args.repeats} interleaved repeats, tol = {args.tol:g}, at most "
             f"{args.max_iter} sweeps each (scikit-learn without precompute: "
             f"{args.plain_repeats} run(s), it takes minutes). rwtool forms Phi^T Phi / m "
             f"(precompute='auto' picks it for T <= 3000) and runs Anderson-accelerated "
             f"coordinate descent.", "",
             "| solver | time (s) | ratio to sklearn | non-zeros | J1 reached "
             "| gap / (‖y‖²/m) |",
             "|---|---|---|---|---|---|"]
    for name, t, nnz, obj, gap in rows:
        lines.append(f"| {name} | {t:.2f} | {t / base:.3f} | {nnz} | {obj:.6f} | {gap:.2e} |")
    obj = {name: o for name, _, _, o, _ in rows}
    lines += ["", f"Time ratio rwtool / fastest scikit-learn variant ({best_name}): "
              f"**{min(times['rwtool']) / best_sk:.3f}** (target <= 1.0); J1 reached: rwtool "
              f"{obj['rwtool']:.6f}, {best_name} {obj[best_name]:.6f} (lower is better).", ""]
    text = "\n".join(lines)
    print(text)
    write_section(args.out, "lasso", text)


if __name__ == "__main__":
    main()
