"""SFGD and OSD scaling in T: doubling T should multiply the time by about 4 (O(b n T^2)).

With the running norm of 000 eq. 42, a run of T iterations costs O(b n T^2) (batch features on
the t centres so far) instead of O(T^3) for recomputing ||alpha||_H; the target is a time ratio
of at most 4.5 per doubling of T. Fits run on a fitted RWSign map of the standardised mnist17
training rows (784 columns + bias), batch size b, repeats interleaved, minimum kept.

    python -m benchmarks.speed.bench_sfgd --datasets ../shared/datasets --sizes 250,500,1000,2000
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks._common.output import machine, write_section
from benchmarks._common.datasets import load_mnist17
from rwtool._base import Standardizer
from rwtool.features import RWSign
from rwtool.solvers._osd import osd_fit
from rwtool.solvers._sfgd import sfgd_fit


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--sizes", default="250,500,1000,2000")
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default="docs/bench/solvers.md")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]

    Xtr, _, ytr, _ = load_mnist17(args.datasets)
    X = Standardizer.fit(Xtr).transform(Xtr)
    X = np.ascontiguousarray(np.hstack([X, np.ones((len(X), 1))]))
    Y = np.where(ytr == 1, 1.0, -1.0)[:, None]
    maps = {T: RWSign(n_features=T, random_state=0).fit(X) for T in sizes}
    solvers = {
        "sfgd": lambda fm: sfgd_fit(fm, X, Y, 1e-6, batch_size=args.batch, radius=1000.0,
                                    random_state=0),
        "osd": lambda fm: osd_fit(fm, X, Y, 1e-6, batch_size=args.batch, random_state=0),
    }
    small = RWSign(n_features=16, random_state=0).fit(X)
    for fn in solvers.values():
        fn(small)  # compile outside the timings
    times = {(s, T): [] for s in solvers for T in sizes}
    for _ in range(args.repeats):
        for T in sizes:
            for s, fn in solvers.items():
                t0 = time.perf_counter()
                fn(maps[T])
                times[s, T].append(time.perf_counter() - t0)
                print(f"{s} T={T}: {times[s, T][-1]:.2f} s", flush=True)
    cmd = (f"python -m benchmarks.speed.bench_sfgd --sizes {args.sizes} --batch {args.batch} "
           f"--repeats {args.repeats}")
    lines = [f"## SFGD / OSD: time against T (mnist17, {len(X)} x {X.shape[1]}, RWSign, "
             f"b = {args.batch})", "", f"Command: `{cmd}`  ",
             f"Machine: {machine()}, shared with other jobs; min of {args.repeats} "
             f"interleaved repeats.", "",
             "| T | SFGD time (s) | SFGD ratio to T/2 | OSD time (s) | OSD ratio to T/2 |",
             "|---|---|---|---|---|"]
    worst = 0.0
    for i, T in enumerate(sizes):
        cells = []
        for s in solvers:
            t = min(times[s, T])
            if i and T == 2 * sizes[i - 1]:
                r = t / min(times[s, sizes[i - 1]])
                worst = max(worst, r)
                cells += [f"{t:.2f}", f"{r:.2f}"]
            else:
                cells += [f"{t:.2f}", "-"]
        lines.append(f"| {T} | " + " | ".join(cells) + " |")
    lines += ["", f"Largest time ratio per doubling of T: **{worst:.2f}** (target <= 4.5; "
              f"O(T^3) would give 8).", ""]
    text = "\n".join(lines)
    print(text)
    write_section(args.out, "sfgd", text)


if __name__ == "__main__":
    main()
