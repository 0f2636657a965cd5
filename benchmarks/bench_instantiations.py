"""Monte Carlo features (rwtool.Instantiation) against the closed forms: fit time, S = 4 T.

    python -m benchmarks.bench_instantiations [--datasets PATH] [--T 500 1000] [--repeats 5]
        [--names rwsign rwrelu rwstumps] [--rows N] [--out FILE]

On adults (32561 x 108 + bias), for each closed-form instantiation and T, fits the closed-form
RWClassifier and its Monte Carlo version (the same centres, S = 4 T shared draws, the default
sampling) in turn, ``repeats`` times interleaved, and reports the median wall-clock and CPU fit
times and the median of the per-pair ratios MC / closed form (target: <= 3), with the test
accuracy of both. The machine may be shared: the pairs keep the ratio meaningful when its
speed drifts.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from .bench_core import machine
from .datasets import load_adults

PIECES = {"rwsign": ("normal", "gaussian", "sign"), "rwrelu": ("normal", "gaussian", "relu"),
          "rwexpsign": ("normal", "exponential", "sign"),
          "rwexprelu": ("normal", "exponential", "relu"),
          "rwstumps": ("stumps", "indicator-gaussian", "stump")}


def _fit(inst, T, X, y):
    import rwtool as rw
    clf = rw.RWClassifier(instantiation=inst, n_features=T, random_state=0)
    w, c = time.perf_counter(), time.process_time()
    clf.fit(X, y)
    return time.perf_counter() - w, time.process_time() - c, clf


def run(root, sizes, repeats, names, rows):
    import rwtool as rw
    Xtr, Xte, ytr, yte = load_adults(root)
    if rows:
        Xtr, ytr = Xtr[:rows], ytr[:rows]
    out = []
    _fit("rwsign", 50, Xtr[:500], ytr[:500])         # compile outside the timings
    _fit(rw.Instantiation(*PIECES["rwsign"]), 50, Xtr[:500], ytr[:500])
    for T in sizes:
        for name in names:
            mc = rw.Instantiation(*PIECES[name], n_draws=4 * T)
            cf_t, mc_t, ratio_w, ratio_c = [], [], [], []
            for _ in range(repeats):
                a = _fit(name, T, Xtr, ytr)
                b = _fit(mc, T, Xtr, ytr)
                cf_t.append(a[:2])
                mc_t.append(b[:2])
                ratio_w.append(b[0] / a[0])
                ratio_c.append(b[1] / a[1])
            row = {"T": T, "S": 4 * T, "name": name,
                   "cf_wall": float(np.median([t[0] for t in cf_t])),
                   "mc_wall": float(np.median([t[0] for t in mc_t])),
                   "cf_cpu": float(np.median([t[1] for t in cf_t])),
                   "mc_cpu": float(np.median([t[1] for t in mc_t])),
                   "ratio_wall": float(np.median(ratio_w)), "ratio_cpu": float(np.median(ratio_c)),
                   "cf_acc": float(a[2].score(Xte, yte)), "mc_acc": float(b[2].score(Xte, yte))}
            out.append(row)
            print(json.dumps(row), flush=True)
    return out


def table(rows) -> str:
    lines = ["| instantiation | T | S | closed form fit (s) | Monte Carlo fit (s) | MC / CF wall "
             "(median of pairs) | MC / CF CPU | test accuracy CF / MC |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['name']} | {r['T']} | {r['S']} | {r['cf_wall']:.2f} | "
                     f"{r['mc_wall']:.2f} | **{r['ratio_wall']:.2f}** | {r['ratio_cpu']:.2f} | "
                     f"{r['cf_acc']:.4f} / {r['mc_acc']:.4f} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--T", type=int, nargs="+", default=[500, 1000])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--names", nargs="+", default=list(PIECES), choices=list(PIECES))
    ap.add_argument("--rows", type=int, default=0, help="use the first N training rows (0: all)")
    ap.add_argument("--out", default=None, help="write the markdown table here")
    args = ap.parse_args(argv)
    rows = run(args.datasets, args.T, args.repeats, args.names, args.rows)
    text = f"{machine()}\n\n{table(rows)}\n"
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
