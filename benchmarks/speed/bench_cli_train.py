"""CPU seconds of `rwtool train` on adults, end to end, against the equivalent scikit-learn scripts.

    python -m benchmarks.speed.bench_cli_train [--datasets PATH] [--repeats 3]

Each run is a fresh process (imports, numba's cache, CSV read, fit, report), its CPU seconds
(user + system, from the children's resource usage) measured; the three commands run
interleaved, ``--repeats`` rounds, and the medians are compared:

  * ``rwtool train adults_train.csv --target 14 --missing impute-most-frequent --ignore col1 -q``
    (the defaults otherwise: RWClassifier, T = 1000, reg="auto", a 25% test split, the report
    with its bounds; the two options are those the command asks for on this file: '?' cells are
    missing values, and the first column numbers the rows);
  * the scikit-learn script doing the same (pandas.read_csv, most-frequent imputation,
    standardised numeric and one-hot text columns, a 25% split, RBFSampler(1000) and
    RidgeClassifierCV, train and test error): target rwtool <= 1.0x;
  * the same script with RidgeClassifier(alpha=1): target rwtool <= 1.2x.

Run single-threaded (OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1), as the figures in
docs/BENCHMARKS.md were; the load average before and after is printed.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys

import numpy as np


def sklearn_train(path: str, which: str) -> None:
    """The scikit-learn script (``which`` "cv": RidgeClassifierCV, "fixed": alpha = 1)."""
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.linear_model import RidgeClassifier, RidgeClassifierCV
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    df = pd.read_csv(path, index_col=0, skipinitialspace=True, na_values="?")
    y = df.pop("14")
    text = [c for c in df.columns if not pd.api.types.is_numeric_dtype(df[c])]
    numeric = [c for c in df.columns if c not in text]
    impute = SimpleImputer(strategy="most_frequent")
    pre = ColumnTransformer([
        ("numeric", make_pipeline(impute, StandardScaler()), numeric),
        ("text", make_pipeline(impute, OneHotEncoder(handle_unknown="ignore",
                                                     sparse_output=False)), text)])
    last = RidgeClassifierCV() if which == "cv" else RidgeClassifier(alpha=1.0)
    clf = make_pipeline(pre, RBFSampler(n_components=1000, gamma=1.0 / 108, random_state=0),
                        last)
    Xtr, Xte, ytr, yte = train_test_split(df, y, test_size=0.25, random_state=0)
    clf.fit(Xtr, ytr)
    print(f"train_error {1 - clf.score(Xtr, ytr):.4f} test_error {1 - clf.score(Xte, yte):.4f}")


def _child_cpu(cmd) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv=None):
    from benchmarks._common.datasets import datasets_root
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sklearn", choices=["cv", "fixed"], help=argparse.SUPPRESS)
    ap.add_argument("--path", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.sklearn:
        return sklearn_train(args.path, args.sklearn)
    path = str(datasets_root(args.datasets) / "adults" / "adults_train.csv")
    me = [sys.executable, "-m", "benchmarks.speed.bench_cli_train", "--path", path, "--sklearn"]
    commands = {
        "rwtool train": [sys.executable, "-m", "rwtool", "train", path, "--target", "14",
                         "--missing", "impute-most-frequent", "--ignore", "col1", "-q"],
        "scikit-learn RidgeClassifierCV": me + ["cv"],
        "scikit-learn RidgeClassifier": me + ["fixed"]}
    load0 = os.getloadavg()[0]
    cpu = {k: [] for k in commands}
    for _ in range(args.repeats):
        for k, cmd in commands.items():
            cpu[k].append(_child_cpu(cmd))
    med = {k: float(np.median(v)) for k, v in cpu.items()}
    print(f"adults_train.csv end to end (CPU s of the whole process, medians of {args.repeats} "
          f"interleaved; load {load0:.1f} -> {os.getloadavg()[0]:.1f}):")
    for k, v in med.items():
        print(f"  {k}: {v:.2f} s  (all: {', '.join(f'{t:.2f}' for t in cpu[k])})")
    rw = med["rwtool train"]
    print(f"  rwtool / RidgeClassifierCV script {rw / med['scikit-learn RidgeClassifierCV']:.2f} "
          f"(target <= 1.0); rwtool / RidgeClassifier script "
          f"{rw / med['scikit-learn RidgeClassifier']:.2f} (target <= 1.2)")


if __name__ == "__main__":
    main()
