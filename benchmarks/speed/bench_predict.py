"""Where predict's time goes, against the GEMM bound of its own shapes, and its rows per second.

    python -m benchmarks.speed.bench_predict [--datasets PATH] [--data adults,mnist17]
        [--T 2000] [--repeats 5]

On the test rows of adults (16281 x 108, + bias column) and mnist 1-vs-7 (2163 x 784),
RWClassifier with T features (reg fixed, trained on the first 5000 training rows: the
training does not change the cost):
  * predict (decision_function, from the raw rows) and its parts: the preprocessing
    (standardise, bias column), X W^T (one GEMM), the closed form's element-wise special
    functions (erf for rwsign, erfc and exp for rwrelu), Phi a (GEMV);
  * the block path of every feature map (FeatureMap.linear_predict: X W^T on BLAS's threads,
    then the closed form on numba's, a block at a time), which the closed forms took before
    their one-pool pass, for the comparison in the same run;
  * the GEMM bound of predict's own shapes: X W^T (m x (d+1) x T) plus Phi a (m x T x k) --
    predict never forms the Gram Phi^T Phi, so it is not in the bound;
  * rows per second of predict;
  * the element-wise pass with libm's scalar erf / erfc / exp (numba's math.*, as before the
    branch-free rwtool.features._vecmath versions), for the speed-up of the vectorised pass.
Each is the minimum over interleaved repeats, in CPU seconds (time.process_time: every thread
counted) and wall seconds, as the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import math

import numpy as np
from numba import njit, prange

from benchmarks._common.datasets import datasets_root, load_adults, load_mnist17
from benchmarks._common.output import machine, write_results


@njit(parallel=True, nogil=True)
def _erf_libm(Z, xsafe, c, k):
    for i in prange(Z.shape[0]):
        s = k / xsafe[i]
        for t in range(Z.shape[1]):
            Z[i, t] = c[t] * math.erf(Z[i, t] * s)


@njit(parallel=True, nogil=True)
def _relu_libm(Z, xnorm, xsafe, c, k, sd):
    inv = 1.0 / (sd * math.sqrt(2.0))
    for i in prange(Z.shape[0]):
        s = k / xsafe[i]
        for t in range(Z.shape[1]):
            a = Z[i, t] * s
            q = a * inv
            Z[i, t] = c[t] * xnorm[i] * (0.5 * a * math.erfc(-q)
                                         + sd / math.sqrt(2.0 * math.pi) * math.exp(-q * q))


def _both(fn):
    c, w = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - c, time.perf_counter() - w


def profile(root, T: int, repeats: int, data=("adults",)) -> list:
    rows = []
    for name in data:
        rows += _profile(name, {"adults": load_adults, "mnist17": load_mnist17}[name](root),
                         T, repeats)
    return rows


def _profile(name, data, T: int, repeats: int) -> list:
    import rwtool as rw
    from rwtool.features._base import FeatureMap, row_norms
    from rwtool.features._rkhs import _erf_features, _relu_features

    Xtr, Xte, ytr, _ = data
    rows = []
    for inst in ("rwsign", "rwrelu"):
        for dtype in ("float64", "float32"):
            est = rw.RWClassifier(instantiation=inst, n_features=T, reg=1e-6, random_state=0,
                                  dtype=dtype).fit(Xtr[:5000], ytr[:5000])
            fmap, coef = est.feature_map_, est.coef_
            Xp = est._prepare_X(Xte)
            dt = fmap.feature_dtype_
            Xd, Wd, Cd = Xp.astype(dt), fmap.W_.astype(dt), coef.astype(dt)
            Z = np.empty((len(Xte), T), dtype=dt)
            Z0 = Xd @ Wd.T
            xn = row_norms(Xp)
            xs = np.where(xn > 0, xn, 1.0)

            def pass_of(erf_kernel, relu_kernel, *coef):
                """The element-wise pass of the map with the given kernels (vectorised or libm;
                the vectorised ones given ``coef``: no coefficients, the features alone)."""
                def run():
                    np.copyto(Z, Z0)
                    if inst == "rwsign":
                        erf_kernel(Z, xs, fmap._c, fmap._k, *coef)
                    else:
                        relu_kernel(Z, xn, xs, fmap._c, fmap._k, fmap._sd, *coef)
                return run

            elementwise = pass_of(_erf_features, _relu_features, np.empty((0, T)),
                                  np.empty((len(Z), 0)))
            elementwise_libm = pass_of(_erf_libm, _relu_libm)

            parts = {"predict": lambda: est.decision_function(Xte),
                     "blocks": lambda: FeatureMap.linear_predict(fmap, Xp, coef),
                     "preprocess": lambda: est._prepare_X(Xte),
                     "gemm_XWt": lambda: np.matmul(Xd, Wd.T, out=Z),
                     "copy_block": lambda: np.copyto(Z, Z0),
                     "elementwise_with_copy": elementwise,
                     "elementwise_libm_with_copy": elementwise_libm,
                     "gemv_Phi_a": lambda: Z0 @ Cd}
            for fn in (parts["predict"], parts["blocks"], elementwise, elementwise_libm):
                fn()                    # compile this dtype's kernels
            best = {k: [np.inf, np.inf] for k in parts}
            for _ in range(repeats):
                for k, fn in parts.items():
                    c, w = _both(fn)
                    best[k] = [min(best[k][0], c), min(best[k][1], w)]
            cpu = {k: v[0] for k, v in best.items()}
            wall = {k: v[1] for k, v in best.items()}
            bound = cpu["gemm_XWt"] + cpu["gemv_Phi_a"]
            row = {"data": name, "instantiation": inst, "dtype": dtype, "T": T,
                   "rows": len(Xte),
                   "cpu": cpu, "wall": wall,
                   "elementwise": cpu["elementwise_with_copy"] - cpu["copy_block"],
                   "elementwise_libm": cpu["elementwise_libm_with_copy"] - cpu["copy_block"],
                   "bound_cpu": bound, "predict_over_bound": cpu["predict"] / bound,
                   "blocks_over_bound": (cpu["blocks"] + cpu["preprocess"]) / bound,
                   "rows_per_cpu_s": len(Xte) / cpu["predict"],
                   "rows_per_wall_s": len(Xte) / wall["predict"]}
            rows.append(row)
            print(json.dumps(row, default=float), flush=True)
    return rows


def report(rows, command) -> str:
    lines = [f"Command: `{command}`", f"Machine: {machine()} (shared)", "",
             "| data | instantiation | dtype | predict CPU s | GEMM X W^T | element-wise | "
             "element-wise with libm | GEMV Phi a | preprocess | predict / (GEMM + GEMV) | "
             "block path + preprocess / (GEMM + GEMV) | rows per CPU s | rows per wall s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        c = r["cpu"]
        lines.append(f"| {r['data']} | {r['instantiation']} | {r['dtype']} | {c['predict']:.3f} | "
                     f"{c['gemm_XWt']:.3f} | {r['elementwise']:.3f} | "
                     f"{r['elementwise_libm']:.3f} | {c['gemv_Phi_a']:.3f} | "
                     f"{c['preprocess']:.3f} | {r['predict_over_bound']:.2f} | "
                     f"{r['blocks_over_bound']:.2f} | "
                     f"{r['rows_per_cpu_s']:,.0f} | {r['rows_per_wall_s']:,.0f} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--data", default="adults,mnist17", help="comma-separated: adults, mnist17")
    ap.add_argument("--T", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=None, help="write the markdown table here")
    args = ap.parse_args(argv)
    rows = profile(datasets_root(args.datasets), args.T, args.repeats, args.data.split(","))
    write_results(report(rows, "python -m benchmarks.speed.bench_predict "
                         + " ".join(argv or sys.argv[1:])), args.out)


if __name__ == "__main__":
    main()
