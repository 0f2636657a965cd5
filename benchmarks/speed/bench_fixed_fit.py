"""CPU seconds of the reg-fixed RW fit against scikit-learn's RBFSampler + RidgeClassifier.

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python -m benchmarks.speed.bench_fixed_fit
        [--datasets PATH] [--data mnist17,adults] [--T 1000,2000,4000] [--repeats 3]
        [--dtype float64] [--min-available-gb G]

Issue 26 target 1's last clause (at most 0.8x). On the training rows of each ``--data`` set (at
most 20000 rows, as benchmarks/speed/bench_reg_auto.py, which measures the same pair beside the
default fit), for each T: RWClassifier(n_features=T, reg=1e-6) (the fit's cost does not
depend on reg) and StandardScaler + RBFSampler(T, gamma = 1/d) + RidgeClassifier(alpha=1),
fitted in turn ``--repeats`` rounds; the medians of their CPU seconds (time.process_time) and
their ratio are printed with the load average before and after. ``--dtype float32`` fits RW
with float32 feature blocks (issue 26 target 3; scikit-learn stays float64), ``--dtype
float64,float32`` both, interleaved. ``--min-available-gb`` waits before each scikit-learn fit
until that much memory is available (bench_reg_auto.wait_for_memory: near 8 GB at T = 8000).
Run single-threaded, as the figures in docs/BENCHMARKS.md were.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main(argv=None):
    import rwtool as rw
    from benchmarks.calibration.defaults import load
    from benchmarks.speed.bench_reg_auto import wait_for_memory
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.linear_model import RidgeClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--data", default="mnist17,adults")
    ap.add_argument("--T", default="1000,2000,4000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dtype", default="float64")
    ap.add_argument("--min-available-gb", type=float, default=0.0)
    args = ap.parse_args(argv)
    dtypes = args.dtype.split(",")
    for data in args.data.split(","):
        Xtr, _, ytr, _ = load(data, args.datasets, 20000)
        d = Xtr.shape[1]
        for dtype in dtypes:
            rw.RWClassifier(n_features=50, random_state=0, reg=1e-6, dtype=dtype).fit(
                Xtr[:500], ytr[:500])
        for T in (int(v) for v in args.T.split(",")):
            load0 = os.getloadavg()[0]
            cpu = {**{f"rw {dtype}": [] for dtype in dtypes}, "sklearn": []}
            for _ in range(args.repeats):
                for dtype in dtypes:
                    c = time.process_time()
                    rw.RWClassifier(n_features=T, random_state=0, reg=1e-6, dtype=dtype).fit(
                        Xtr, ytr)
                    cpu[f"rw {dtype}"].append(time.process_time() - c)
                pipe = make_pipeline(StandardScaler(), RBFSampler(
                    n_components=T, gamma=1.0 / d, random_state=0), RidgeClassifier(alpha=1.0))
                wait_for_memory(args.min_available_gb)
                c = time.process_time()
                pipe.fit(Xtr, ytr)
                cpu["sklearn"].append(time.process_time() - c)
            med = {k: float(np.median(v)) for k, v in cpu.items()}
            for dtype in dtypes:
                rw_s = med[f"rw {dtype}"]
                print(f"{data} n={len(Xtr)} d={d} T={T}: RWClassifier reg fixed ({dtype}) "
                      f"{rw_s:.2f} s, RBFSampler + RidgeClassifier {med['sklearn']:.2f} s, ratio "
                      f"{rw_s / med['sklearn']:.2f} (target <= 0.8; CPU s, medians of "
                      f"{args.repeats} interleaved; load {load0:.1f} -> "
                      f"{os.getloadavg()[0]:.1f})", flush=True)


if __name__ == "__main__":
    main()
