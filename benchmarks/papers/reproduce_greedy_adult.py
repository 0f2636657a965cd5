"""Table 2 (adult) of Shahrampour & Tarokh (seed 004): MFGA vs RKS, LKRF, EERF, GK, GLK at M = 100.

    python -m benchmarks.papers.reproduce_greedy_adult [--datasets PATH] [--seeds 5]

Protocol (spec methods/greedy-mkl.md sections 2.2, 4): inputs standardised with training
statistics; one bandwidth sigma for every method, the mean distance to the 50th nearest
neighbour on the standardised training inputs; logistic loss + (lam/2) ||theta||^2, no
intercept, lam on the grid {1e-5, ..., 1e5}. The paper reports the best lam per method, i.e.
tuned on the test set; this script reports that and, as the honest figure, the test error at the
lam chosen on a validation split (the last --val-fraction of a shuffled training set, models
fitted on the rest). MFGA: first-order Taylor features of the Gaussian kernel plus the linear
kernel, nu = (1/2, 1/2). RKS/LKRF/EERF: random Fourier features cos(omega^T x + b), M0 = 2000
candidates. GK/GLK: kernel ridge regression on +/-1 labels (the paper does not name its kernel
solver) on a random subsample of N0 training rows, all lam from one eigendecomposition.
The adult copy in ../shared/datasets one-hot encodes to d = 108 columns (the paper's LIBSVM
a9a has 122), so MFGA has M0 = 2d + 1 = 217 candidates instead of 245.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from scipy.linalg import eigh

from benchmarks._common.output import write_results
from benchmarks._common.datasets import load_adults
from rwtool._base import Standardizer
from rwtool.estimators._greedy_mk import GreedyMKClassifier
from rwtool.features._fourier import shift_invariant_kernel
from rwtool.features._taylor import knn_sigma
from rwtool.solvers._greedy import glm_fit

PAPER = {  # Table 2 (b), adult: M, M0, N0/N, t_pp, t_train, error %
    "MFGA": ("100", "245", "–", "0.19", "0.69", "15.10"),
    "RKS": ("100", "–", "–", "–", "0.87", "17.7 (6e-2)"),
    "LKRF": ("100", "2000", "–", "1.4", "0.91", "16.46 (3e-2)"),
    "EERF": ("100", "2000", "–", "2", "1.38", "16.15 (2e-2)"),
    "GK": ("–", "–", "0.25", "–", "24.07", "15.70"),
    "GLK": ("–", "–", "0.25", "–", "77.09", "15.22"),
}
LAMBDAS = [10.0**k for k in range(-5, 6)]


def _pm(y):
    return np.where(y == 1, 1.0, -1.0)[:, None]


def fit_grid(selector, Xtr, ytr, evals, sigma, lambdas, M, M0, seed, per_step,
             intercept=False):
    """Test errors over the lam grid for one selector; times at every lam.

    evals: dict name -> (X, y). MFGA is refitted per lam (its path depends on lam); the
    random-feature selectors draw and select once per seed (independent of lam) and refit the
    same GLM for each lam.
    """
    out = {}
    base = dict(selector=selector, n_features=M, n_candidates=M0, sigma=sigma, gauss_order=1,
                features_per_step=per_step, fit_intercept=intercept, random_state=seed)
    if selector == "mfga":
        for lam in lambdas:
            est = GreedyMKClassifier(reg=lam, **base).fit(Xtr, ytr)
            out[lam] = ({k: float(np.mean(est.predict(X) != y)) for k, (X, y) in evals.items()},
                        est.preprocess_time_, est.fit_time_ - est.preprocess_time_)
        return out
    est = GreedyMKClassifier(reg=lambdas[0], **base).fit(Xtr, ytr)
    t_pp = est.preprocess_time_
    A = est.feature_matrix(Xtr)
    feats = {k: est.feature_matrix(X) for k, (X, _) in evals.items()}
    for lam in lambdas:
        t0 = time.perf_counter()
        coef, b, _ = glm_fit(A, _pm(ytr), "logistic", lam, fit_intercept=intercept)
        t_train = time.perf_counter() - t0
        errs = {k: float(np.mean(((feats[k] @ coef + b)[:, 0] > 0).astype(int) != y))
                for k, (_, y) in evals.items()}
        out[lam] = (errs, t_pp, t_train)
    return out


def kernel_ridge_grid(Ztr, ytr, evals, sigma, lambdas, n0, seed, linear_weight):
    """KRR on +/-1 labels on n0 training rows: (K + n0 lam I) a = y for every lam (one eigh)."""
    rng = np.random.default_rng(seed)
    sub = np.sort(rng.choice(len(Ztr), n0, replace=False))
    Zs = Ztr[sub]

    def kern(A, B):
        K = shift_invariant_kernel(A, B, sigma=sigma)
        return (1 - linear_weight) * K + linear_weight * (A @ B.T) if linear_weight else K

    t0 = time.perf_counter()
    w, V = eigh(kern(Zs, Zs))
    Vy = V.T @ _pm(ytr[sub])[:, 0]
    t_train = time.perf_counter() - t0
    Ks = {k: kern(Z, Zs) for k, (Z, _) in evals.items()}
    out = {}
    for lam in lambdas:
        coef = V @ (Vy / (np.maximum(w, 0.0) + n0 * lam))
        errs = {k: float(np.mean((Ks[k] @ coef > 0).astype(int) != y))
                for k, (_, y) in evals.items()}
        out[lam] = (errs, 0.0, t_train)
    return out


def path_curve(Xtr, ytr, Xte, yte, sigma, lam, M, seed, intercept=False):
    """MFGA test error along its path (one fit) for the figure."""
    est = GreedyMKClassifier(n_features=M, reg=lam, sigma=sigma, gauss_order=1,
                             fit_intercept=intercept, random_state=seed)
    est.fit(Xtr, ytr, eval_set=(Xte, yte))
    return np.array(est.path_["n_features"]), np.array(est.path_["val_error"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--M", type=int, default=100)
    ap.add_argument("--M0", type=int, default=2000)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--per-step", type=int, default=1, help="MFGA features per iteration (s)")
    ap.add_argument("--knn-queries", type=int, default=5000)
    ap.add_argument("--gk-fraction", type=float, default=0.125)
    ap.add_argument("--val-fraction", type=float, default=0.2)
    ap.add_argument("--curve-M", type=int, nargs="+", default=[10, 20, 50, 100])
    ap.add_argument("--intercept", action="store_true",
                    help="unpenalised intercept for MFGA/RKS/LKRF/EERF (the paper has none)")
    ap.add_argument("--figures", default="docs/figures")
    ap.add_argument("--results", default=None)
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    Xtr, Xte, ytr, yte = load_adults(args.datasets)
    N, d = Xtr.shape
    scaler = Standardizer.fit(Xtr)
    Ztr, Zte = scaler.transform(Xtr), scaler.transform(Xte)
    t0 = time.perf_counter()
    sigma = knn_sigma(Ztr, k=50, n_queries=args.knn_queries, random_state=0)
    t_sigma = time.perf_counter() - t0
    print(f"adult: N = {N}, d = {d}, test {len(Xte)}; sigma (50-NN, {args.knn_queries} queries) "
          f"= {sigma:.4f} in {t_sigma:.1f} s", flush=True)
    perm = np.random.default_rng(0).permutation(N)
    n_val = int(args.val_fraction * N)
    fit_idx, val_idx = perm[n_val:], perm[:n_val]

    rows = {}
    for k, (name, selector) in enumerate((("MFGA", "mfga"), ("RKS", "rks"), ("LKRF", "lkrf"),
                                          ("EERF", "eerf"))):
        # independent draws per method: with the same draws LKRF (top) and EERF keep the
        # same features (their rankings coincide, spec 4.2), which tests/solvers/test_greedy.py
        # checks
        seeds = [0] if selector == "mfga" else [1000 * k + s for s in range(args.seeds)]
        per_seed = []
        for seed in seeds:
            full = fit_grid(selector, Xtr, ytr, {"test": (Xte, yte)}, sigma, LAMBDAS, args.M,
                            args.M0, seed, args.per_step, args.intercept)
            val = fit_grid(selector, Xtr[fit_idx], ytr[fit_idx],
                           {"val": (Xtr[val_idx], ytr[val_idx])}, sigma, LAMBDAS, args.M,
                           args.M0, seed, args.per_step, args.intercept)
            lam_best = min(LAMBDAS, key=lambda lam: full[lam][0]["test"])
            lam_val = min(LAMBDAS, key=lambda lam: val[lam][0]["val"])
            per_seed.append((full[lam_best][0]["test"], full[lam_val][0]["test"], lam_best,
                             lam_val, full[lam_best][1], full[lam_best][2]))
            print(f"{name} seed {seed}: best-on-test {100 * per_seed[-1][0]:.2f}% "
                  f"(lam {lam_best:g}), val-tuned {100 * per_seed[-1][1]:.2f}% "
                  f"(lam {lam_val:g}), t_pp {per_seed[-1][4]:.2f} s, "
                  f"t_train {per_seed[-1][5]:.2f} s", flush=True)
        rows[name] = per_seed

    n0 = int(args.gk_fraction * N)
    for name, lw in (("GK", 0.0), ("GLK", 0.5)):
        full = kernel_ridge_grid(Ztr, ytr, {"test": (Zte, yte)}, sigma, LAMBDAS, n0, 0, lw)
        val = kernel_ridge_grid(Ztr[fit_idx], ytr[fit_idx],
                                {"val": (Ztr[val_idx], ytr[val_idx])}, sigma, LAMBDAS, n0, 0, lw)
        lam_best = min(LAMBDAS, key=lambda lam: full[lam][0]["test"])
        lam_val = min(LAMBDAS, key=lambda lam: val[lam][0]["val"])
        rows[name] = [(full[lam_best][0]["test"], full[lam_val][0]["test"], lam_best, lam_val,
                       0.0, full[lam_best][2])]
        print(f"{name}: best-on-test {100 * rows[name][0][0]:.2f}%, val-tuned "
              f"{100 * rows[name][0][1]:.2f}%", flush=True)

    # error versus M (the paper's Figure 1, adult panel) at each method's validation-tuned lam
    curves = {}
    lam_mfga = rows["MFGA"][0][3]
    ms, errs = path_curve(Xtr, ytr, Xte, yte, sigma, lam_mfga, max(args.curve_M), 0,
                          args.intercept)
    curves["MFGA"] = (ms, errs)
    for k, (name, selector) in enumerate((("RKS", "rks"), ("LKRF", "lkrf"), ("EERF", "eerf")), 1):
        lam = float(np.median([r[3] for r in rows[name]]))
        e = []
        for M in args.curve_M:
            errs_m = []
            for s in range(min(args.seeds, 3)):
                est = GreedyMKClassifier(selector=selector, n_features=M, n_candidates=args.M0,
                                         reg=lam, sigma=sigma, gauss_order=1,
                                         fit_intercept=args.intercept,
                                         random_state=1000 * k + s).fit(Xtr, ytr)
                errs_m.append(np.mean(est.predict(Xte) != yte))
            e.append(np.mean(errs_m))
        curves[name] = (np.array(args.curve_M), np.array(e))
    _plot(curves, Path(args.figures), "_intercept" if args.intercept else "")

    M0_mfga = 2 * d + 1
    icpt = ("an unpenalised intercept for MFGA/RKS/LKRF/EERF" if args.intercept
            else "no intercept")
    lines = [f"adult (d = {d}, N = {N}, N_test = {len(Xte)}), M = {args.M}, sigma = {sigma:.4f} "
             f"(50-NN rule, {args.knn_queries} query rows, {t_sigma:.1f} s, shared by all "
             f"methods), {icpt}, MFGA features per step s = {args.per_step}, "
             f"{args.seeds} seeds for the random-feature methods (mean ± standard error), "
             f"validation split {args.val_fraction:.0%} of train; total wall time "
             f"{time.perf_counter() - t_start:.0f} s on a shared 2-core machine.", "",
             "| Method | M | M0 | N0/N | t_pp (s) | t_train (s) | error %, lam best on test "
             "(paper's protocol) | error %, lam tuned on validation | paper: t_pp / t_train | "
             "paper error % |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name, per in rows.items():
        best = 100 * np.array([r[0] for r in per])
        valt = 100 * np.array([r[1] for r in per])
        se = (lambda a: f" ± {a.std(ddof=1) / np.sqrt(len(a)):.2f}" if len(a) > 1 else "")
        M = "–" if name in ("GK", "GLK") else str(args.M)
        M0 = {"MFGA": str(M0_mfga), "LKRF": str(args.M0), "EERF": str(args.M0)}.get(name, "–")
        n0f = f"{args.gk_fraction:g}" if name in ("GK", "GLK") else "–"
        t_pp = np.mean([r[4] for r in per])
        t_tr = np.mean([r[5] for r in per])
        lam_b = ", ".join(sorted({f"{r[2]:g}" for r in per}))
        lam_v = ", ".join(sorted({f"{r[3]:g}" for r in per}))
        p = PAPER[name]
        lines.append(f"| {name} | {M} | {M0} | {n0f} | {t_pp:.2f} | {t_tr:.2f} | "
                     f"{best.mean():.2f}{se(best)} (lam {lam_b}) | {valt.mean():.2f}{se(valt)} "
                     f"(lam {lam_v}) | {p[3]} / {p[4]} | {p[5]} |")
    lines += ["", "Test error (%) versus M (validation-tuned lam; random methods: mean of "
              f"{min(args.seeds, 3)} seeds):", "",
              "| M | " + " | ".join(curves) + " |", "|---|" + "---|" * len(curves)]
    for M in args.curve_M:
        cells = []
        for name, (ms, e) in curves.items():
            hit = np.flatnonzero(ms == M)
            cells.append(f"{100 * e[hit[0]]:.2f}" if len(hit) else "–")
        lines.append(f"| {M} | " + " | ".join(cells) + " |")
    write_results("\n".join(lines), args.results)


def _plot(curves, outdir, suffix=""):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(5, 3.6))
    for name, (ms, e) in curves.items():
        ax.plot(ms, 100 * e, marker="" if name == "MFGA" else "o", label=name)
    ax.set_xlabel("number of features M")
    ax.set_ylabel("test error (%)")
    ax.set_title("adult: test error versus M (seed 004, Figure 1)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(outdir / f"greedy_adult_error_vs_M{suffix}.png", dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
