"""The size and the latency of a model's ONNX graph beside rwtool's own file and predict.

    python -m benchmarks.speed.bench_onnx [--datasets PATH] [--dataset adults] [--T 1000]
        [--rows 1000] [--repeats 5] [--results docs/bench/onnx.md]

For each model (fitted on the training rows of ``--dataset``): the size of its .rwm file and of
its float64 and float32 ONNX graphs (rwtool.to_onnx); the time to get a model ready
(rwtool.load of the file, first predict included: numba's cache warm) against an onnxruntime
InferenceSession of the graph (its first run included); and the latency of one row (median of
200 calls) and of a batch of ``--rows`` test rows (minimum of ``--repeats``), rwtool's predict
against the session's run, interleaved. Both sides use every core (numba's and onnxruntime's
default threads). The agreement column is the largest difference of the float64 graph's
decision values from rwtool's, relative to their range.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

from benchmarks._common.datasets import LOADERS
from benchmarks._common.output import machine, write_results
import rwtool as rw


def models(T):
    """(name, unfitted estimator) of the families the export covers."""
    return [
        ("RW rwsign", rw.RWClassifier("rwsign", n_features=T, reg=1e-6, random_state=0)),
        ("RW rwrelu", rw.RWClassifier("rwrelu", n_features=T, reg=1e-6, random_state=0)),
        ("RW rwstumps", rw.RWClassifier("rwstumps", n_features=T, reg=1e-6, random_state=0)),
        ("RW mc:normal:gaussian:relu", rw.RWClassifier("mc:normal:gaussian:relu",
                                                       n_features=T // 2, reg=1e-6,
                                                       random_state=0)),
        ("RKS relu", rw.RKSClassifier("relu", n_features=T, reg=1e-6, random_state=0)),
        ("RKS fourier", rw.RKSClassifier("fourier", n_features=T, reg=1e-6, random_state=0)),
        ("BKerNN (m = 50)", rw.BKerNNClassifier(max_iter=5, random_state=0)),
    ]


def _min_time(fn, repeats):
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _median_time(fn, calls=200):
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(name, est, Xtr, ytr, Xte, rows, repeats, folder):
    import onnxruntime as ort
    if name.startswith("BKerNN"):       # its graph grows with the training rows: 2000 of them
        Xtr, ytr = Xtr[:2000], ytr[:2000]
    est.fit(Xtr, ytr)
    rwm = os.path.join(folder, "m.rwm")
    rw.save(est, rwm)
    f64, f32 = os.path.join(folder, "m.onnx"), os.path.join(folder, "m32.onnx")
    rw.to_onnx(est, f64)
    rw.to_onnx(est, f32, dtype="float32")
    batch = np.ascontiguousarray(Xte[:rows])
    one = batch[:1]

    def rw_ready():
        rw.load(rwm).predict(one)

    def ort_ready():
        s = ort.InferenceSession(f64, providers=["CPUExecutionProvider"])
        s.run(["label"], {"X": one})

    rw_ready()                                                      # warm caches, both sides
    ort_ready()
    t_load = _min_time(rw_ready, repeats)
    t_sess = _min_time(ort_ready, repeats)
    loaded = rw.load(rwm)
    sess = ort.InferenceSession(f64, providers=["CPUExecutionProvider"])
    sess32 = ort.InferenceSession(f32, providers=["CPUExecutionProvider"])
    b32, one32 = batch.astype(np.float32), one.astype(np.float32)
    lat = {"rw1": [], "ort1": [], "rwb": [], "ortb": [], "ort32b": []}
    for rep in range(repeats):                                      # interleaved
        lat["rw1"].append(_median_time(lambda: loaded.predict(one)))
        lat["ort1"].append(_median_time(lambda: sess.run(["label"], {"X": one})))
        lat["rwb"].append(_min_time(lambda: loaded.predict(batch), 1))
        lat["ortb"].append(_min_time(lambda: sess.run(["label"], {"X": batch}), 1))
        lat["ort32b"].append(_min_time(lambda: sess32.run(["label"], {"X": b32}), 1))
    dec = sess.run(["decision"], {"X": batch})[0]
    want = loaded.decision_function(batch)
    agree = float(np.max(np.abs(dec - want)) / np.max(np.abs(want)))
    return {"model": name, "rwm": os.path.getsize(rwm), "onnx": os.path.getsize(f64),
            "onnx32": os.path.getsize(f32), "load": t_load, "session": t_sess,
            **{k: min(v) for k, v in lat.items()}, "agree": agree}


def _kb(n):
    return f"{n / 1024:.0f} KB" if n < 10 * 2**20 else f"{n / 2**20:.1f} MB"


def _ms(t):
    return f"{1e3 * t:.2f}" if t < 0.1 else f"{1e3 * t:.0f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", help="datasets folder (default: $RWTOOL_DATASETS)")
    ap.add_argument("--dataset", default="adults", choices=sorted(LOADERS))
    ap.add_argument("--T", type=int, default=1000, help="random features (Monte Carlo: T / 2)")
    ap.add_argument("--rows", type=int, default=1000, help="rows of the batch")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--results", help="write the table there")
    args = ap.parse_args(argv)
    Xtr, Xte, ytr, yte = LOADERS[args.dataset](args.datasets)
    out = []
    with tempfile.TemporaryDirectory() as folder:
        for name, est in models(args.T):
            out.append(measure(name, est, Xtr, ytr, Xte, args.rows, args.repeats, folder))
            print(out[-1], flush=True)
    lines = [f"# ONNX graphs beside rwtool's model files ({args.dataset}, d = {Xtr.shape[1]}, "
             f"T = {args.T})", "",
             f"Machine: {machine()}; onnxruntime's and numba's default threads. Command: "
             f"`python -m benchmarks.speed.bench_onnx --dataset {args.dataset} --T {args.T} "
             f"--rows {args.rows} --repeats {args.repeats}`.", "",
             "| model | .rwm | .onnx float64 | float32 | rwtool.load + first predict (ms) | "
             "InferenceSession + first run (ms) | 1 row: rwtool / onnxruntime (ms) | "
             f"{args.rows} rows: rwtool / onnxruntime / float32 (ms) | agreement |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in out:
        lines.append(f"| {r['model']} | {_kb(r['rwm'])} | {_kb(r['onnx'])} | {_kb(r['onnx32'])} "
                     f"| {_ms(r['load'])} | {_ms(r['session'])} | {_ms(r['rw1'])} / "
                     f"{_ms(r['ort1'])} | {_ms(r['rwb'])} / {_ms(r['ortb'])} / "
                     f"{_ms(r['ort32b'])} | {r['agree']:.1e} |")
    write_results("\n".join(lines) + "\n", args.results)


if __name__ == "__main__":
    main()
