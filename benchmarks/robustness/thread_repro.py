"""Does a fit depend on the thread counts? Every estimator and solver, fitted in child processes
started with OPENBLAS_NUM_THREADS and NUMBA_NUM_THREADS in {1, 2}, compared bit for bit.

The project's rule: the same random_state gives the same model, whatever the thread count. Each
child fits every configuration on the same data (diabetes for regressors, breast cancer for
classifiers, standardised by the estimators) and prints a SHA-256 of every fitted array and of
the decision values; the parent reports the configurations whose hashes differ between the
thread settings. Bit for bit is the right test here: all the children run on this machine, with
the same libraries, so only the thread counts differ.

    python -m benchmarks.robustness.thread_repro            # every configuration
    python -m benchmarks.robustness.thread_repro -k bkernn  # those whose name contains bkernn
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys

#: name -> (estimator class name, parameters, "reg" for diabetes or "clf" for breast cancer)
CONFIGS = {
    "rw-lstsq": ("RWRegressor", {"n_features": 300, "reg": 1e-4}, "reg"),
    "rw-lstsq-auto": ("RWRegressor", {"n_features": 300, "reg": "auto"}, "reg"),
    "rw-lstsq-clf": ("RWClassifier", {"n_features": 300}, "clf"),
    "rw-lasso": ("RWRegressor", {"n_features": 300, "solver": "lasso"}, "reg"),
    "rw-lasso-fixed": ("RWRegressor", {"n_features": 300, "solver": "lasso", "reg": 1e-4}, "reg"),
    "rw-sfgd": ("RWRegressor", {"n_features": 300, "solver": "sfgd"}, "reg"),
    "rw-osd": ("RWRegressor", {"n_features": 300, "solver": "osd"}, "reg"),
    "rw-mc": ("RWRegressor", {"n_features": 200, "instantiation": "mc:laplace:gaussian:tanh",
                              "reg": 1e-4}, "reg"),
    "rks-ridge": ("RKSRegressor", {"n_features": 300}, "reg"),
    "rks-lasso": ("RKSRegressor", {"n_features": 300, "solver": "lasso"}, "reg"),
    "rks-sgd": ("RKSRegressor", {"n_features": 300, "solver": "sgd"}, "reg"),
    "rfsgd": ("RFSGDClassifier", {"n_features": 300}, "clf"),
    "greedy-mfga": ("GreedyMKRegressor", {"n_features": 60}, "reg"),
    "greedy-lkrf": ("GreedyMKRegressor", {"n_features": 60, "selector": "lkrf"}, "reg"),
    "greedy-eerf": ("GreedyMKClassifier", {"n_features": 60, "selector": "eerf"}, "clf"),
    "greedy-rks": ("GreedyMKRegressor", {"n_features": 60, "selector": "rks"}, "reg"),
    "bkernn-dense": ("BKerNNRegressor", {"max_iter": 10, "kernel_solver": "dense"}, "reg"),
    "bkernn-cg": ("BKerNNRegressor", {"max_iter": 10, "kernel_solver": "cg"}, "reg"),
    "bkernn-clf": ("BKerNNClassifier", {"max_iter": 10}, "clf"),
}

#: the thread settings compared: (OPENBLAS_NUM_THREADS, NUMBA_NUM_THREADS)
SETTINGS = ((1, 1), (2, 1), (1, 2), (2, 2))


def fingerprints(names):
    """{name: {array name: sha256}} for the configurations ``names``, fitted here."""
    import warnings

    import numpy as np
    from sklearn.datasets import load_breast_cancer, load_diabetes

    import rwtool

    data = {"reg": load_diabetes(return_X_y=True), "clf": load_breast_cancer(return_X_y=True)}
    out = {}
    for name in names:
        cls, params, kind = CONFIGS[name]
        X, y = data[kind]
        est = getattr(rwtool, cls)(random_state=0, **params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y)
        arrays = {k: v for k, v in vars(est).items()
                  if k.endswith("_") and isinstance(v, np.ndarray) and v.dtype != object}
        arrays["decision"] = np.asarray(est.decision_function(X) if hasattr(est, "decision_function")
                                        else est.predict(X))
        out[name] = {k: hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()[:16]
                     for k, v in sorted(arrays.items())}
    return out


def run_child(names, blas, numba):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(blas), NUMBA_NUM_THREADS=str(numba))
    cmd = [sys.executable, "-m", "benchmarks.robustness.thread_repro", "--child", *names]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-k", default="", help="only the configurations whose name contains this")
    ap.add_argument("--child", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        print(json.dumps(fingerprints(args.child)))
        return 0
    names = [n for n in CONFIGS if args.k in n]
    results = {s: run_child(names, *s) for s in SETTINGS}
    differ = 0
    for name in names:
        ref = results[SETTINGS[0]][name]
        bad = {f"blas={b} numba={n}": sorted(k for k in ref if results[(b, n)][name][k] != ref[k])
               for b, n in SETTINGS[1:] if results[(b, n)][name] != ref}
        differ += bool(bad)
        print(f"{name:16s} {'same' if not bad else 'DIFFERS ' + json.dumps(bad)}")
    print(f"{differ} of {len(names)} configurations depend on the thread counts")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
