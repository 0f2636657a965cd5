"""The Lasso's default (reg="auto": a cross-validated path from per-fold sums) against the old
fixed default reg = 1e-5 and scikit-learn's LassoCV on the same feature matrix.

For each data set and feature map (T = 500 features, the defaults benchmark's setting): the
rwtool fit with its defaults (features, per-fold sums, 3 paths and the final solve), the same
estimator with reg = 1e-5 (the default before), and scikit-learn's LassoCV(fit_intercept=False)
on the same features and targets (standardised y, or the +/-1 codes) with the same three folds
(PredefinedSplit on rwtool's position-hashed fold ids), its default grid (100 alphas down to
lam_max / 1000) and its default tol and max_iter; LassoCV's time excludes computing the features.
Reported: whole-fit seconds (median of ``--repeats``, runs interleaved), test error (classification
error or MSE on standardised y), the chosen lam, non-zero features, and whether the final solve
converged. Binary classification and regression sets only (LassoCV fits one target).

    python -m benchmarks.calibration.bench_lasso_cv --datasets ../shared/datasets [--repeats 3]
        [--only cancer,diabetes] [--out docs/bench/lasso.md]
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np

from benchmarks._common.output import machine
from benchmarks._common.output import write_section
from benchmarks.calibration.defaults import REGRESSION, error, load

SETS = ("cancer", "diabetes", "make_classification", "abalone", "mnist17", "adults")
MAPS = (("RW", "rwsign"), ("RW", "rwstumps"), ("RW", "rwrelu"), ("RKS", "fourier"),
        ("RKS", "relu"))


def _estimator(fam, kind, regression, **kw):
    import rwtool as rw
    if fam == "RW":
        E = rw.RWRegressor if regression else rw.RWClassifier
        # theta=0.5: the default when docs/bench/lasso.md was measured (now 0.1)
        return E(instantiation=kind, n_features=500, random_state=0, **{"theta": 0.5, **kw})
    E = rw.RKSRegressor if regression else rw.RKSClassifier
    return E(base=kind, n_features=500, random_state=0, **kw)


def _rwtool(fam, kind, data, regression, reg):
    Xtr, Xte, ytr, yte = data
    est = _estimator(fam, kind, regression, solver="lasso", reg=reg)
    t = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(Xtr, ytr)
    sec = time.perf_counter() - t
    info = est.solver_info_
    return {"sec": sec, "test": error(est.predict(Xte), yte, regression), "lam": float(est.reg_),
            "nnz": int(est.coef_.shape[0]), "converged": bool(all(info["converged"])),
            "warned": any("did not converge" in str(w.message) for w in caught)}


def _sklearn(fam, kind, data, regression):
    from sklearn.linear_model import LassoCV
    from sklearn.model_selection import PredefinedSplit
    from rwtool.solvers._from_sums import AUTO_FOLDS
    from rwtool.solvers._sufficient import fold_of, row_keys
    Xtr, Xte, ytr, yte = data
    # the same features (the same seed draws the same map) through a least-squares estimator
    full = _estimator(fam, kind, regression, reg=1e-3,
                      solver="lstsq" if fam == "RW" else "ridge").fit(Xtr, ytr)
    Phi, Phi_te = full.feature_matrix(Xtr), full.feature_matrix(Xte)
    if regression:
        y = full.y_scaler_.transform(ytr[:, None])[:, 0]
    else:
        y = np.where(ytr == full.classes_[1], 1.0, -1.0)
    cv = PredefinedSplit(fold_of(row_keys(Xtr), AUTO_FOLDS))
    t = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sk = LassoCV(fit_intercept=False, cv=cv).fit(Phi, y)
    sec = time.perf_counter() - t
    d = Phi_te @ sk.coef_
    pred = (full.y_scaler_.inverse_transform(d[:, None])[:, 0] if regression
            else full.classes_[(d > 0).astype(int)])
    return {"sec": sec, "test": error(pred, yte, regression), "lam": float(sk.alpha_),
            "nnz": int(np.count_nonzero(sk.coef_)),
            "warned": any("onverge" in str(w.message) for w in caught)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--only", default=",".join(SETS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    rows = []
    for name in args.only.split(","):
        data = load(name, args.datasets, 20000)
        regression = name in REGRESSION
        for fam, kind in MAPS:
            runs = {"auto": [], "1e-5": [], "sklearn": []}
            for _ in range(args.repeats):          # interleaved repeats
                runs["auto"].append(_rwtool(fam, kind, data, regression, None))
                runs["1e-5"].append(_rwtool(fam, kind, data, regression, 1e-5))
                runs["sklearn"].append(_sklearn(fam, kind, data, regression))
            row = {"set": name, "map": f"{fam}/{kind}", "rows": len(data[0])}
            for key, rs in runs.items():
                row[key] = dict(rs[0], sec=float(np.median([r["sec"] for r in rs])))
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    if args.out:
        write_section(args.out, "lasso-cv", table(rows, args))


def table(rows, args):
    head = ("| data (rows) | features | default (auto): s, error, lam, nnz | reg = 1e-5: s, error, "
            "nnz, converged | LassoCV: s, error, lam, nnz |\n|---|---|---|---|---|")
    lines = [f"Machine: {machine()}, shared with other jobs; whole-fit seconds, median of "
             f"{args.repeats} interleaved runs, single-threaded.", "", head]
    for r in rows:
        a, f, s = r["auto"], r["1e-5"], r["sklearn"]
        lines.append(
            f"| {r['set']} ({r['rows']}) | {r['map']} | {a['sec']:.2f}, {a['test']:.4f}, "
            f"{a['lam']:.2g}, {a['nnz']}{'' if a['converged'] else ' (capped)'} | "
            f"{f['sec']:.2f}, {f['test']:.4f}, {f['nnz']}, {'yes' if f['converged'] else 'no'} | "
            f"{s['sec']:.2f}, {s['test']:.4f}, {s['lam']:.2g}, {s['nnz']}"
            f"{' (warned)' if s['warned'] else ''} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
