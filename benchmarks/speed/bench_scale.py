"""Past one machine's memory: out-of-core CSV training, Dask on 2 workers, a cluster estimate.

    python -m benchmarks.speed.bench_scale out-of-core [--rows 20000000] [--T 1000] [--mem-rows 2000000]
    python -m benchmarks.speed.bench_scale dask [--rows 2000000] [--T 500] [--partitions 4 16 64]
    python -m benchmarks.speed.bench_scale estimate [--T 1000 5000 20000] [--bandwidth-gbs 1.25]

out-of-core: a CSV of ``--rows`` rows resampled (with replacement, fixed seed) from skin
(B, G, R, label; ../shared/datasets/skin) is written to a temporary directory (never committed,
deleted afterwards), and ``rwtool.scale._train_csv.train_csv`` trains an RWClassifier (rwrelu,
T = 1000, lstsq, fixed reg) on it in a fresh subprocess whose peak resident memory
(ru_maxrss) is reported with the time of each pass; the in-memory ``fit`` of ``--mem-rows``
rows of the same resampling (numpy arrays, and read_csv + fit of its CSV) gives the reference
rows per second.

dask: the same resampling, ``--rows`` rows, generated on the workers of a LocalCluster with 2
worker processes of 1 thread each (partitions persisted before timing), against one in-process
fit of the same rows with 1 thread (OPENBLAS/NUMBA threads = 1): the speed-up, and the fit time
against the number of partitions (its slope is the overhead per partition). Median of
``--repeats`` interleaved runs.

estimate: the paper-style model of a real cluster: bytes each partition sends (its T x T sums),
the reduction's depth, and the rows per worker below which the reduction, not the features,
bounds the fit time, from this machine's measured Phi^T Phi rate and an assumed network
bandwidth.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np

from benchmarks._common.datasets import datasets_root

# theta=0.5: the value (then the default) of the figures in the docs
PARAMS = dict(instantiation="rwrelu", solver="lstsq", reg=1e-6, theta=0.5, random_state=0)


def _skin(root=None):
    data = np.loadtxt(datasets_root(root) / "skin" / "Skin_NonSkin.txt")
    return data[:, :3], data[:, 3].astype(np.int64)


def _resample(X, y, n, seed):
    idx = np.random.default_rng(seed).integers(0, len(X), n)
    return X[idx], y[idx]


def write_csv(path, X, y, n, chunk=1_000_000, seed=0):
    """``n`` rows resampled with replacement from (X, y), written block by block (memory
    O(chunk)): each source row's text is formatted once and the draws index it."""
    lines = np.array([f"{int(a)},{int(b)},{int(c)},{int(t)}\n" for (a, b, c), t in zip(X, y)],
                     dtype=object)
    with open(path, "w") as fh:
        fh.write("B,G,R,label\n")
        for k, start in enumerate(range(0, n, chunk)):
            idx = np.random.default_rng(seed + k).integers(0, len(X), min(chunk, n - start))
            fh.write("".join(lines[idx]))
    return os.path.getsize(path)


_WORKER = textwrap.dedent("""
    import json, resource, sys, time
    import rwtool as rw
    from rwtool.scale._train_csv import train_csv
    path, T, evaluate = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
    params = json.loads(sys.argv[4])
    t0 = time.perf_counter()
    run = train_csv(path, "label", rw.RWClassifier(n_features=T, **params), test_size=0.0,
                    evaluate=evaluate)
    print(json.dumps({"seconds": run.seconds, "wall": time.perf_counter() - t0,
                      "n_train": run.n_train, "metrics": run.metrics,
                      "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
""")


def out_of_core(args):
    X, y = _skin(args.datasets)
    out = {"rows": args.rows, "T": args.T}
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        big = os.path.join(tmp, "skin_big.csv")
        t0 = time.perf_counter()
        out["file_mb"] = write_csv(big, X, y, args.rows) / 1e6
        out["write_s"] = time.perf_counter() - t0
        print(f"wrote {out['file_mb']:.0f} MB in {out['write_s']:.0f} s", flush=True)
        proc = subprocess.run([sys.executable, "-c", _WORKER, big, str(args.T),
                               "1" if args.evaluate else "0", json.dumps(PARAMS)],
                              capture_output=True, text=True, check=True)
        out["stream"] = json.loads(proc.stdout.strip().splitlines()[-1])
        s = out["stream"]["seconds"]
        fit_s = s.get("statistics", 0.0) + s["fit"]
        out["stream_fit_rows_per_s"] = args.rows / fit_s
        out["stream_total_rows_per_s"] = args.rows / out["stream"]["wall"]
        print(json.dumps(out["stream"], indent=1), flush=True)
        # the in-memory reference on a size that fits
        import rwtool as rw
        from rwtool.data import read_csv
        small = os.path.join(tmp, "skin_small.csv")
        write_csv(small, X, y, args.mem_rows, seed=10**6)
        t0 = time.perf_counter()
        data = read_csv(small, "label", max_bytes=None)
        read_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        rw.RWClassifier(n_features=args.T, **PARAMS).fit(data.X, data.y)
        fit_s = time.perf_counter() - t0
        out["memory"] = {"rows": args.mem_rows, "read_csv_s": read_s, "fit_s": fit_s,
                         "fit_rows_per_s": args.mem_rows / fit_s,
                         "read_and_fit_rows_per_s": args.mem_rows / (read_s + fit_s)}
    return out


# ----------------------------------------------------------------------------- Dask

def dask_bench(args):
    import dask
    import dask.array as da
    from distributed import Client, LocalCluster

    import rwtool as rw
    X, y = _skin(args.datasets)
    results = {"rows": args.rows, "T": args.T, "partitions": {}, "in_process": []}
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=None,
                           env={"OPENBLAS_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1",
                                "PYTHONPATH": os.getcwd()})
    client = Client(cluster)
    try:
        client.run(lambda: __import__("rwtool"))
        arrays = {}
        for P in args.partitions:
            sizes = [len(c) for c in np.array_split(np.arange(args.rows), P)]
            parts = [dask.delayed(_resample)(X, y, n, 1000 + i) for i, n in enumerate(sizes)]
            Xd = da.concatenate([da.from_delayed(p[0], (n, 3), float)
                                 for p, n in zip(parts, sizes)])
            yd = da.concatenate([da.from_delayed(p[1], (n,), np.int64)
                                 for p, n in zip(parts, sizes)])
            Xd, yd = client.persist([Xd, yd])
            arrays[P] = (Xd, yd)
            results["partitions"][P] = []
        # the same rows in this process
        Xd, yd = arrays[args.partitions[0]]
        Xm, ym = Xd.compute(), yd.compute()
        rw.RWClassifier(n_features=args.T, **PARAMS).fit(Xm[:1000], ym[:1000])  # warm-up
        for P in args.partitions:
            rw.RWClassifier(n_features=args.T, **PARAMS).fit(*arrays[P])
        for _ in range(args.repeats):   # interleaved
            t0 = time.perf_counter()
            ref = rw.RWClassifier(n_features=args.T, **PARAMS).fit(Xm, ym)
            results["in_process"].append(time.perf_counter() - t0)
            for P in args.partitions:
                t0 = time.perf_counter()
                est = rw.RWClassifier(n_features=args.T, **PARAMS).fit(*arrays[P])
                results["partitions"][P].append(time.perf_counter() - t0)
                if P == args.partitions[0]:   # the same function (decision values)
                    d, d_ref = est.decision_function(Xm[:20000]), ref.decision_function(Xm[:20000])
                    results["max_rel_decision_diff"] = float(
                        np.abs(d - d_ref).max() / np.abs(d_ref).max())
    finally:
        client.close()
        cluster.close()
    med = {P: statistics.median(v) for P, v in results["partitions"].items()}
    base = statistics.median(results["in_process"])
    Ps = np.array(sorted(med), dtype=float)
    slope, icpt = np.polyfit(Ps, [med[int(p)] for p in Ps], 1)
    results.update(median_in_process_s=base, median_dask_s=med,
                   speedup={P: base / t for P, t in med.items()},
                   overhead_per_partition_s=float(slope), intercept_s=float(icpt))
    return results


# ----------------------------------------------------------------------------- estimate

def estimate(args):
    """Phi^T Phi rate on this machine (1 thread) and the cluster model."""
    rng = np.random.default_rng(0)
    out = {"bandwidth_gbs": args.bandwidth_gbs, "split_every": 8, "rows": []}
    for T in args.T:
        r = 4096 if T <= 5000 else 1024
        Phi = rng.normal(size=(r, T))
        A = np.empty((T, T))
        np.matmul(Phi.T, Phi, out=A)
        t0 = time.perf_counter()
        reps = 3
        for _ in range(reps):
            np.matmul(Phi.T, Phi, out=A)
        per_row = (time.perf_counter() - t0) / (reps * r)      # seconds per row for A
        B = np.empty_like(A)
        adds = []
        for _ in range(5):                                      # one merge of two T x T sums
            t0 = time.perf_counter()
            np.add(A, A, out=B)
            adds.append(time.perf_counter() - t0)
        add = statistics.median(adds)
        del B
        msg = 8.0 * T * T                                       # bytes of one partition's A
        s = 8
        link = msg / (args.bandwidth_gbs * 1e9)
        per_level = s * (link + add)                            # a node receives s results
        # the reduction's critical path ~ depth * per_level; features ~ rows_per_worker * per_row
        for P in (64, 1024, 16384):
            depth = int(np.ceil(np.log(P) / np.log(s)))
            crit = depth * per_level
            rows_break = crit / per_row
            out["rows"].append({"T": T, "partitions": P, "bytes_per_partition_mb": msg / 1e6,
                                "depth": depth, "reduction_s": crit,
                                "a_rate_rows_per_s": 1.0 / per_row,
                                "merge_s": add, "link_s": link,
                                "rows_per_worker_where_reduction_equals_features": rows_break,
                                "solve_gflop": T ** 3 / 3e9})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["out-of-core", "dask", "estimate"])
    ap.add_argument("--datasets")
    ap.add_argument("--rows", type=int)
    ap.add_argument("--mem-rows", type=int, default=2_000_000)
    ap.add_argument("--T", type=int, nargs="+")
    ap.add_argument("--partitions", type=int, nargs="+", default=[4, 16, 64])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--bandwidth-gbs", type=float, default=1.25)
    ap.add_argument("--no-evaluate", dest="evaluate", action="store_false")
    ap.add_argument("--tmp", default=None, help="folder for the generated CSV (default /tmp)")
    ap.add_argument("--out", help="append the JSON result to this file")
    args = ap.parse_args(argv)
    if args.mode == "out-of-core":
        args.rows = args.rows or 20_000_000
        args.T = (args.T or [1000])[0]
        res = out_of_core(args)
    elif args.mode == "dask":
        args.rows = args.rows or 2_000_000
        args.T = (args.T or [500])[0]
        res = dask_bench(args)
    else:
        args.T = args.T or [1000, 5000, 20000]
        res = estimate(args)
    res.update(mode=args.mode, machine=platform.processor() or platform.machine(),
               cpus=os.cpu_count(), python=platform.python_version(),
               threads={k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS",
                                                       "NUMBA_NUM_THREADS")},
               command=" ".join(sys.argv))
    text = json.dumps(res, indent=1, default=str)
    print(text)
    if args.out:
        with open(args.out, "a") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
