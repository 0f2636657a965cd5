"""Speed of the core least-squares fit (issue: core) measured side by side in one run.

    python -m benchmarks.speed.bench_core [--datasets PATH] [--T 2000] [--repeats 3] [--out FILE]

On adults (32561 x 108, + bias column after standardisation), with T random features:
  * RW least-squares fit (RWRelu) vs scikit-learn StandardScaler + RBFSampler(T) + RidgeClassifier
  * RW fit vs RKS fit (relu base predictor, same T)
  * RW fit vs the GEMM bound: numpy's X W^T plus Phi^T Phi for the same shapes
  * prediction on the test set vs the GEMM bound of predict's own shapes: X W^T and Phi a
    (predict never forms Phi^T Phi; benchmarks/speed/bench_predict.py says where its time goes)
Peak memory of an RW fit on skin (183792 x 3, T = 2000) and the first-call (compile) and cached
start-up times of `import rwtool` + a small fit are measured in fresh subprocesses.
Repeats are interleaved and the minimum is kept, because the machine may be shared.
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

from benchmarks._common.datasets import datasets_root, load_adults
from benchmarks._common.output import machine, write_results


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def speed(root, T: int, repeats: int) -> dict:
    import rwtool as rw
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.linear_model import RidgeClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    Xtr, Xte, ytr, yte = load_adults(root)
    m, n = Xtr.shape
    W = np.random.default_rng(0).standard_normal((T, n + 1))
    Xb = np.hstack([Xtr, np.ones((m, 1))])
    Xtb = np.hstack([Xte, np.ones((len(Xte), 1))])

    def gemm_bound(A):
        Z = A @ W.T
        return Z.T @ Z

    coef = np.random.default_rng(1).standard_normal((T, 1))

    def predict_bound(A):
        return (A @ W.T) @ coef

    rw_est = rw.RWClassifier(instantiation="rwrelu", n_features=T, reg=1e-6, sigma=0.1,
                             theta=0.5, random_state=0)
    rks_est = rw.RKSClassifier(base="relu", n_features=T, reg=1e-6, sigma=0.1, random_state=0)
    sk_est = make_pipeline(StandardScaler(), RBFSampler(n_components=T, gamma=1.0 / n,
                                                        random_state=0),
                           RidgeClassifier(alpha=1e-3))
    # Warm-up: compile the numba kernels and fault in BLAS before anything is timed.
    rw.RWClassifier(instantiation="rwrelu", n_features=50).fit(Xtr[:500], ytr[:500])
    rw.RKSClassifier(base="relu", n_features=50).fit(Xtr[:500], ytr[:500])

    times = {k: [] for k in ("rw_fit", "rks_fit", "sklearn_fit", "gemm_fit", "rw_predict",
                             "gemm_predict", "sklearn_predict")}
    for _ in range(repeats):
        times["gemm_fit"].append(_timed(lambda: gemm_bound(Xb))[0])
        times["rw_fit"].append(_timed(lambda: rw_est.fit(Xtr, ytr))[0])
        times["rks_fit"].append(_timed(lambda: rks_est.fit(Xtr, ytr))[0])
        times["sklearn_fit"].append(_timed(lambda: sk_est.fit(Xtr, ytr))[0])
        times["gemm_predict"].append(_timed(lambda: predict_bound(Xtb))[0])
        times["rw_predict"].append(_timed(lambda: rw_est.predict(Xte))[0])
        times["sklearn_predict"].append(_timed(lambda: sk_est.predict(Xte))[0])
    best = {k: min(v) for k, v in times.items()}
    best["rw_test_error"] = 1 - rw_est.score(Xte, yte)
    best["rks_test_error"] = 1 - rks_est.score(Xte, yte)
    best["sklearn_test_error"] = 1 - sk_est.score(Xte, yte)
    best["shape"] = [m, n]
    return best


_MEMORY_SCRIPT = textwrap.dedent("""
    import json, tracemalloc
    import numpy as np
    import rwtool as rw

    def hwm_mb():
        # VmHWM starts afresh at exec; ru_maxrss would carry the parent's peak over.
        with open("/proc/self/status") as fh:
            return next(int(l.split()[1]) for l in fh if l.startswith("VmHWM")) / 1024

    X = np.load({x!r}); y = np.load({y!r})
    rw.RWClassifier(instantiation="rwrelu", n_features=50).fit(X[:500], y[:500])
    base = hwm_mb()
    tracemalloc.start()
    est = rw.RWClassifier(instantiation="rwrelu", n_features={T}, random_state=0).fit(X, y)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    rss = hwm_mb()
    print(json.dumps({{"fit_peak_mb": peak, "process_peak_rss_mb": rss,
                      "rss_before_fit_mb": base, "train_rows": len(X)}}))
""")

_START_SCRIPT = textwrap.dedent("""
    import time
    t = time.perf_counter()
    import numpy as np
    import rwtool as rw
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 5)); y = (X[:, 0] > 0).astype(int)
    for inst in ("rwsign", "rwrelu", "rwstumps"):
        rw.RWClassifier(instantiation=inst, n_features=100).fit(X, y).predict(X)
    print(time.perf_counter() - t)
""")


def memory(root, T: int) -> dict:
    """Peak memory of an RW fit on skin, in a fresh process that holds only the training arrays."""
    from benchmarks._common.datasets import load_skin
    Xtr, _, ytr, _ = load_skin(root)
    with tempfile.TemporaryDirectory() as tmp:
        xf, yf = os.path.join(tmp, "X.npy"), os.path.join(tmp, "y.npy")
        np.save(xf, Xtr)
        np.save(yf, ytr)
        out = subprocess.run([sys.executable, "-c", _MEMORY_SCRIPT.format(x=xf, y=yf, T=T)],
                             capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def startup() -> dict:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        run = lambda: float(subprocess.run([sys.executable, "-c", _START_SCRIPT], env=env,
                                           capture_output=True, text=True,
                                           check=True).stdout.strip())
        cold = run()
        warm = min(run() for _ in range(3))
    return {"first_call_s": cold, "cached_s": warm}


def report(res: dict, T: int, command: str) -> str:
    s, mem, st = res["speed"], res["memory"], res["startup"]
    rows = [
        ("RW fit / scikit-learn RBFSampler+RidgeClassifier fit", s["rw_fit"] / s["sklearn_fit"], "<= 1.0"),
        ("RW fit / RKS fit (same T)", s["rw_fit"] / s["rks_fit"], "<= 1.25"),
        ("RW fit / GEMM bound (X W^T + Phi^T Phi)", s["rw_fit"] / s["gemm_fit"], "<= 1.5"),
        ("RW predict (test) / GEMM bound of its shapes (X W^T + Phi a)",
         s["rw_predict"] / s["gemm_predict"], "<= 1.3"),
    ]
    lines = [f"Command: `{command}`", f"Machine: {machine()}", "",
             f"adults {s['shape'][0]} x {s['shape'][1]} (+ bias), T = {T}; minimum over the "
             f"interleaved repeats.", "",
             "| measurement | seconds |", "|---|---|"]
    for k in ("rw_fit", "rks_fit", "sklearn_fit", "gemm_fit", "rw_predict", "gemm_predict",
              "sklearn_predict"):
        lines.append(f"| {k} | {s[k]:.3f} |")
    lines += ["", "| ratio | value | target |", "|---|---|---|"]
    lines += [f"| {name} | {v:.2f} | {t} |" for name, v, t in rows]
    lines += ["", f"Test error at these (untuned) settings: RW {s['rw_test_error']:.4f}, "
                  f"RKS {s['rks_test_error']:.4f}, scikit-learn {s['sklearn_test_error']:.4f}.",
              "", f"Peak memory of an RW fit on skin ({mem['train_rows']} x 3, T = {T}): "
                  f"{mem['fit_peak_mb']:.0f} MB allocated by the fit (tracemalloc), process peak "
                  f"RSS {mem['process_peak_rss_mb']:.0f} MB of which {mem['rss_before_fit_mb']:.0f} "
                  f"MB before the fit (interpreter, numpy, numba, the data); target < 400 MB.",
              "", f"`import rwtool` + three small fits: first call (empty numba cache, compiles) "
                  f"{st['first_call_s']:.1f} s; with the cache warm {st['cached_s']:.2f} s."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", default=None, help="datasets folder (default: $RWTOOL_DATASETS "
                                                     "or ../shared/datasets)")
    ap.add_argument("--T", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None, help="write the markdown report here")
    args = ap.parse_args(argv)
    root = datasets_root(args.datasets)
    res = {"speed": speed(root, args.T, args.repeats), "memory": memory(root, args.T),
           "startup": startup()}
    env = "".join(f"{k}={os.environ[k]} " for k in ("OPENBLAS_THREAD_TIMEOUT",
                                                    "OPENBLAS_NUM_THREADS") if k in os.environ)
    text = report(res, args.T, env + "python -m benchmarks.speed.bench_core " +
                  " ".join(argv or sys.argv[1:]))
    write_results(text, args.out)


if __name__ == "__main__":
    main()
