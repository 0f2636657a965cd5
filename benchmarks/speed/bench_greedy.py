"""MFGA per-step cost versus the number of candidates M0 (seed 004, spec greedy-mkl.md 2.3-2.4).

    python -m benchmarks.speed.bench_greedy [--N 20000] [--d 10 20 40 80] [--steps 10]

For each input dimension d the dictionary is the order-2 Gaussian Taylor features plus the
linear features (M0 = 1 + 2d + d(d+1)/2). Reported per size (minimum over repeats):
the gradient Psi^T r by the Gram trick (never forming Psi), the same product on a materialised
Psi (reference, O(N M0), plus the time to build Psi), and the average MFGA step (gradient +
new column + refit) for the squared and the logistic loss; gradients and steps are both
averaged over --steps calls. The claim checked: a step costs one
gradient evaluation plus a refit that depends on the active-set size, not on M0.
"""

from __future__ import annotations

import argparse
import time
import numpy as np

from benchmarks._common.output import machine, write_results
from rwtool.features._taylor import TaylorMultiKernelFeatures
from rwtool.solvers._greedy import DictionaryView, mfga


def _best(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def run(N, dims, steps, repeats, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    # warm-up: load the cached numba kernels and BLAS before anything is timed
    Xw = rng.standard_normal((200, 3))
    fw = TaylorMultiKernelFeatures(gauss_order=2).fit(Xw)
    fw.transform(Xw)
    for loss in ("squared", "logistic"):
        mfga(DictionaryView(fw, Xw), np.sign(Xw[:, :1]), loss, 1e-4, 2)
    for d in dims:
        X = rng.standard_normal((N, d))
        y = np.sign(X[:, 0] * X[:, 1] + 0.3 * X[:, 2] + 0.3 * rng.standard_normal(N))
        fm = TaylorMultiKernelFeatures(sigma=np.sqrt(d), gauss_order=2).fit(X)
        M0 = fm.n_output_
        r = rng.standard_normal(N)
        view = DictionaryView(fm, X)
        # per call, averaged over as many calls as the MFGA run has steps
        t_grad = _best(lambda: [view.correlate(r) for _ in range(steps)], repeats) / steps
        dense_ok = N * M0 * 8 <= 1.5e9
        if dense_ok:
            t_build = _best(lambda: fm.transform(X), 1)
            Psi = fm.transform(X)
            t_dense = _best(lambda: [Psi.T @ r for _ in range(steps)], repeats) / steps
            del Psi
        else:
            t_build = t_dense = float("nan")
        per = {}
        for loss, Y in (("squared", y[:, None] * 1.0), ("logistic", y[:, None] * 1.0)):
            per[loss] = _best(lambda: mfga(view, Y, loss, 1e-4, steps), repeats) / steps
        rows.append((d, M0, t_grad, t_dense, t_build, per["squared"], per["logistic"]))
        print(f"d={d} M0={M0}: gradient {1e3 * t_grad:.2f} ms (dense {1e3 * t_dense:.2f} ms, "
              f"build Psi {1e3 * t_build:.0f} ms); step squared {1e3 * per['squared']:.2f} ms, "
              f"logistic {1e3 * per['logistic']:.2f} ms", flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--N", type=int, default=20_000)
    ap.add_argument("--d", type=int, nargs="+", default=[10, 20, 40, 80])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--results", default=None)
    args = ap.parse_args(argv)
    rows = run(args.N, args.d, args.steps, args.repeats)
    lines = [f"N = {args.N} rows, order-2 Taylor + linear dictionary, {args.steps} MFGA steps "
             f"from an empty set (reported: mean time per step), minimum over {args.repeats} "
             f"repeats; machine: {machine()}.", "",
             "| d | M0 | gradient, Gram trick (ms) | gradient on materialised Psi (ms) | "
             "building Psi (ms) | MFGA step, squared (ms) | MFGA step, logistic (ms) | "
             "squared step / gradient |", "|---|---|---|---|---|---|---|---|"]
    for d, M0, tg, td, tb, ps, pl in rows:
        lines.append(f"| {d} | {M0} | {1e3 * tg:.2f} | {1e3 * td:.2f} | {1e3 * tb:.0f} | "
                     f"{1e3 * ps:.2f} | {1e3 * pl:.2f} | {ps / tg:.2f} |")
    write_results("\n".join(lines), args.results)


if __name__ == "__main__":
    main()
