"""Dense solves and matrix-vector products of order n on OpenBLAS's threads against one thread.

For each n, a batch of calls (np.linalg.solve of an n x n SPD system, np.linalg.cholesky, and
Q @ a) runs alternately with the process's BLAS threads and inside
rwtool.threads.single_blas_thread; it prints the median CPU seconds (every thread of the
process: spinning BLAS threads count) and wall seconds per call of each, and their ratios. The
order below which one thread is no slower in wall time and cheaper in CPU is
rwtool.threads.SMALL_SOLVE_MAX (docs/BENCHMARKS.md).

    python -m benchmarks.speed.bench_small_solves [--sizes 50,100,200,400,800,1600] [--repeats 7]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from rwtool.threads import blas_thread_counts, single_blas_thread


def per_call(fn, calls):
    c0, w0 = time.process_time(), time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.process_time() - c0) / calls, (time.perf_counter() - w0) / calls


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="50,100,200,400,800,1600")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"BLAS threads {blas_thread_counts()}")
    print(f"{'n':>5} {'call':>9} {'cpu 1':>9} {'cpu N':>9} {'N/1':>5} {'wall 1':>9} {'wall N':>9} "
          f"{'N/1':>5}")
    for n in (int(s) for s in args.sizes.split(",")):
        A = rng.standard_normal((n + 10, n))
        M = A.T @ A / n + np.eye(n)
        b = rng.standard_normal(n)
        calls = max(3, int(2e8 / n ** 3))
        for name, fn in (("solve", lambda: np.linalg.solve(M, b)),
                         ("cholesky", lambda: np.linalg.cholesky(M)),
                         ("Q @ a", lambda: M @ b)):
            k = calls * (50 if name == "Q @ a" else 1)
            one, many = [], []
            for _ in range(args.repeats):
                with single_blas_thread():
                    one.append(per_call(fn, k))
                many.append(per_call(fn, k))
            c1, w1 = np.median(one, axis=0)
            cn, wn = np.median(many, axis=0)
            print(f"{n:5d} {name:>9} {c1:9.2e} {cn:9.2e} {cn / c1:5.2f} {w1:9.2e} {wn:9.2e} "
                  f"{wn / w1:5.2f}")


if __name__ == "__main__":
    main()
