"""float32 features (``dtype="float32"``) against float64, and the rows of a feature block.

    python -m benchmarks.speed.bench_float32 blocks [--T 2000 4000 8000] [--rows 256 ... 4096]
    python -m benchmarks.speed.bench_float32 speed  [--T 2000 4000] [--repeats 2]
    python -m benchmarks.speed.bench_float32 error  [--T 1000] [--seeds 5] [--reg R] [--sets ...]
    python -m benchmarks.speed.bench_float32 conditioning [--T 500]

``blocks``: the rate of the accumulation loop of the normal equations (Phi^T Phi of a block, then
added to the float64 sum) against the rows of a block, float64 and float32, on random blocks:
what ``rwtool.features.auto_block_size`` is chosen from.
``speed``: fit (reg fixed) CPU time of RWClassifier float64 vs float32 on adults and mnist 1-vs-7
(interleaved repeats, minimum kept), and the peak memory of a fit in a fresh process
(tracemalloc) on skin.
``error``: test error (classifiers) or test RMSE over the targets' standard deviation (regressors)
of RW with its defaults (reg="auto", or ``--reg``) on adults, skin, mnist 1-vs-7, abalone and
diabetes (or ``--sets``), float64
and float32, over several feature draws: the paired difference float32 - float64 (mean and
its spread over the draws) against the spread of the float64 error over the draws; and the
relative difference of the decision values.
``conditioning``: decision values of float32 vs float64 on ill-conditioned systems (tiny reg,
duplicated features) on adults rows, and reg="auto" on a small smooth regression (6 inputs,
RWRelu, T = 300) whose best reg lies near the float32 rounding floor.
CPU seconds (time.process_time: both BLAS threads counted), as the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np

from benchmarks._common.datasets import LOADERS, datasets_root
from benchmarks._common.output import machine, write_results

CLASSIFICATION = ("adults", "skin", "mnist17")
REGRESSION = ("abalone", "diabetes")


def _cpu(fn):
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def blocks(Ts, rows_list, flops=1e10) -> list:
    """GFLOP per CPU second of the loop ``C = Phi^T Phi; A += C`` for each T, dtype and block
    rows (m T^2 flops per block)."""
    rng = np.random.default_rng(0)
    out = []
    for T in Ts:
        for dtype in (np.float64, np.float32):
            A = np.zeros((T, T))
            C = np.empty((T, T), dtype=dtype)
            for rows in rows_list:
                Phi = rng.standard_normal((rows, T)).astype(dtype)
                n = max(1, int(flops // (rows * T * T)))
                best = min(_cpu(lambda: [(np.matmul(Phi.T, Phi, out=C), A.__iadd__(C))
                                         for _ in range(n)])[0] for _ in range(2))
                out.append({"T": T, "dtype": np.dtype(dtype).name, "rows": rows,
                            "gflops_per_cpu_s": n * rows * T * T / best / 1e9})
                print(out[-1], flush=True)
    return out


def _load(name, root):
    Xtr, Xte, ytr, yte = LOADERS[name](root)
    return Xtr, Xte, ytr, yte


def speed(root, Ts, repeats) -> list:
    import rwtool as rw
    rows = []
    for name in ("adults", "mnist17"):
        Xtr, Xte, ytr, yte = _load(name, root)
        rw.RWClassifier(n_features=50, dtype="float32").fit(Xtr[:500], ytr[:500])  # compile
        for T in Ts:
            times = {"float64": [], "float32": []}
            errors = {}
            for _ in range(repeats):
                for dtype in times:
                    est = rw.RWClassifier(n_features=T, reg=1e-6, random_state=0, dtype=dtype)
                    times[dtype].append(_cpu(lambda: est.fit(Xtr, ytr))[0])
                    errors[dtype] = float(np.mean(est.predict(Xte) != yte))
            rows.append({"set": name, "T": T, **{f"fit_cpu_{k}": min(v) for k, v in times.items()},
                         **{f"test_error_{k}": v for k, v in errors.items()}})
            print(rows[-1], flush=True)
    return rows


_MEMORY_SCRIPT = textwrap.dedent("""
    import json, tracemalloc
    import numpy as np
    import rwtool as rw
    X = np.load({x!r}); y = np.load({y!r})
    rw.RWClassifier(n_features=50, dtype={dtype!r}).fit(X[:500], y[:500])
    est = rw.RWClassifier(n_features={T}, reg=1e-6, random_state=0, dtype={dtype!r})
    estimate = est._estimate_fit(len(X), X.shape[1]).peak_bytes
    tracemalloc.start()
    est.fit(X, y)
    peak = tracemalloc.get_traced_memory()[1]
    print(json.dumps({{"peak_mb": peak / 2**20, "estimate_mb": estimate / 2**20}}))
""")


def memory(root, T) -> dict:
    Xtr, _, ytr, _ = LOADERS["skin"](root)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        xf, yf = os.path.join(tmp, "X.npy"), os.path.join(tmp, "y.npy")
        np.save(xf, Xtr)
        np.save(yf, ytr)
        for dtype in ("float64", "float32"):
            run = subprocess.run([sys.executable, "-c", _MEMORY_SCRIPT.format(
                x=xf, y=yf, T=T, dtype=dtype)], capture_output=True, text=True, check=True)
            out[dtype] = json.loads(run.stdout.strip().splitlines()[-1])
    print(out, flush=True)
    return out


def _rel(a, b) -> float:
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def error(root, T, seeds, reg=None, sets=CLASSIFICATION + REGRESSION) -> list:
    """Per data set: the float64 and float32 test errors over ``seeds`` feature draws."""
    import rwtool as rw
    rows = []
    for name in sets:
        Xtr, Xte, ytr, yte = _load(name, root)
        classify = name in CLASSIFICATION
        cls = rw.RWClassifier if classify else rw.RWRegressor
        res = {"float64": [], "float32": [], "rel_decision": [], "reg": [], "cpu64": 0.0,
               "cpu32": 0.0}
        for seed in range(seeds):
            fitted = {}
            for dtype in ("float64", "float32"):
                est = cls(n_features=T, reg=reg, random_state=seed, dtype=dtype)
                cpu, _ = _cpu(lambda: est.fit(Xtr, ytr))
                res["cpu" + dtype[-2:]] += cpu
                fitted[dtype] = est
                if classify:
                    res[dtype].append(float(np.mean(est.predict(Xte) != yte)))
                else:   # RMSE in units of the training targets' standard deviation
                    res[dtype].append(float(np.sqrt(np.mean((est.predict(Xte) - yte) ** 2))
                                            / np.std(ytr)))
            a, b = fitted["float32"], fitted["float64"]
            da = a.decision_function(Xte) if classify else a.predict(Xte)
            db = b.decision_function(Xte) if classify else b.predict(Xte)
            res["rel_decision"].append(_rel(da, db))
            res["reg"].append((float(b.reg_), float(a.reg_)))
        e64, e32 = np.array(res["float64"]), np.array(res["float32"])
        d = e32 - e64
        row = {"set": name, "T": T, "reg": "auto" if reg is None else reg, "seeds": seeds,
               "metric": "error" if classify else "rmse/sd",
               "mean64": e64.mean(), "sd64": e64.std(ddof=1) if seeds > 1 else 0.0,
               "mean32": e32.mean(), "diff_mean": d.mean(),
               "diff_sd": d.std(ddof=1) if seeds > 1 else 0.0,
               "max_rel_decision": max(res["rel_decision"]),
               "same_reg": sum(r[0] == r[1] for r in res["reg"]),
               "cpu64": res["cpu64"], "cpu32": res["cpu32"]}
        row["equal_within_spread"] = bool(abs(row["diff_mean"]) <= row["sd64"])
        rows.append(row)
        print(row, flush=True)
    return rows


def conditioning(root, T) -> list:
    """Relative difference of the decision values, float32 vs float64, on adults, as the
    system gets ill-conditioned: smaller reg (eps = 0 below 1e-10), and T/2 duplicated
    features (identical columns of Phi, and of G: only m eps I regularises them)."""
    import rwtool as rw
    from rwtool.solvers import ridge_fit
    from rwtool.solvers._prune import subset_map
    Xtr, Xte, ytr, _ = _load("adults", root)
    rows = []
    for dup in (False, True):
        for reg in (1e-3, 1e-6, 1e-9, 1e-12):
            dec = {}
            for dtype in ("float64", "float32"):
                est = rw.RWClassifier(n_features=T, reg=reg, random_state=0, dtype=dtype)
                est.fit(Xtr[:8000], ytr[:8000])
                if dup:
                    fmap = subset_map(est.feature_map_, np.r_[0:T, 0:T // 2])
                    Y = np.where(ytr[:8000] == 1, 1.0, -1.0)[:, None]
                    Xp = est._prepare_X(Xtr[:8000])
                    import warnings
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        coef, _ = ridge_fit(fmap, Xp, Y, reg=reg, eps=1e-10)
                    dec[dtype] = fmap.linear_predict(est._prepare_X(Xte), coef)[:, 0]
                else:
                    dec[dtype] = est.decision_function(Xte)
            rows.append({"duplicated": dup, "reg": reg,
                         "rel_decision": _rel(dec["float32"], dec["float64"]),
                         "label_disagreement": float(np.mean((dec["float32"] > 0)
                                                             != (dec["float64"] > 0)))})
            print(rows[-1], flush=True)
    rows.append(_auto_near_the_floor())
    print(rows[-1], flush=True)
    return rows


def _auto_near_the_floor() -> dict:
    """reg="auto" where float64 chooses a tiny reg: the float32 scores of the tiny regs are
    rounding, so it may choose another, and its jittered solve is a larger reg's model."""
    import warnings

    import rwtool as rw
    rng = np.random.default_rng(0)
    X, Xt = rng.standard_normal((1500, 6)), rng.standard_normal((1500, 6))
    f = lambda Z: np.sin(Z[:, 0]) + 0.5 * Z[:, 1] * Z[:, 2]
    y = f(X) + 0.1 * rng.standard_normal(len(X))
    out = {"case": "auto, 1500 x 6 smooth regression, rwrelu, T = 300"}
    for dtype in ("float64", "float32"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = rw.RWRegressor(instantiation="rwrelu", n_features=300, random_state=5,
                                 dtype=dtype).fit(X, y)
        out[f"reg_{dtype}"] = float(est.reg_)
        out[f"test_mse_{dtype}"] = float(np.mean((est.predict(Xt) - f(Xt)) ** 2))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=("blocks", "speed", "error", "conditioning"))
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--T", type=int, nargs="+", default=None)
    ap.add_argument("--rows", type=int, nargs="+", default=[256, 512, 1024, 2048, 4096])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--reg", type=float, default=None, help="error: a fixed reg (default: auto)")
    ap.add_argument("--sets", nargs="+", default=list(CLASSIFICATION + REGRESSION),
                    choices=CLASSIFICATION + REGRESSION)
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    args = ap.parse_args(argv)
    command = "python -m benchmarks.speed.bench_float32 " + " ".join(argv or sys.argv[1:])
    if args.what == "blocks":
        res = blocks(args.T or [2000, 4000, 8000], args.rows)
    else:
        root = datasets_root(args.datasets)
        if args.what == "speed":
            T = args.T or [2000, 4000]
            res = {"fit": speed(root, T, args.repeats), "memory": memory(root, T[0])}
        elif args.what == "error":
            res = error(root, (args.T or [1000])[0], args.seeds, args.reg, tuple(args.sets))
        else:
            res = conditioning(root, (args.T or [500])[0])
    doc = {"command": command, "machine": machine(), "results": res}
    write_results(json.dumps(doc, indent=1, default=float), args.out)


if __name__ == "__main__":
    main()
