"""Loaders for the benchmark datasets of ../shared/datasets (see its MANIFEST.md).

The data folder is never copied into the project: every loader takes ``root`` (or reads the
environment variable RWTOOL_DATASETS, or falls back to ../shared/datasets beside the checkout).
Each loader returns raw (unstandardised) float arrays with the papers' split; classification
labels are 0/1. This module is for benchmark and reproduction scripts only, not for the package.
"""

from __future__ import annotations

import csv
import gzip
import os
from pathlib import Path

import numpy as np

__all__ = ["datasets_root", "load_adults", "load_skin", "load_abalone", "load_mnist17",
           "load_cancer", "load_diabetes", "load_wine", "split_75_25", "LOADERS"]


def datasets_root(root=None) -> Path:
    """The datasets folder: ``root``, else $RWTOOL_DATASETS, else ../shared/datasets."""
    if root is None:
        root = os.environ.get("RWTOOL_DATASETS")
    if root is None:
        root = Path(__file__).resolve().parents[3] / "shared" / "datasets"
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"datasets folder {root} not found: pass --datasets PATH or set "
                                f"RWTOOL_DATASETS to the folder that holds adults/, skin/, ...")
    return root


def split_75_25(X, y, seed=0):
    """75/25 split with a fixed seed (the papers' protocol when there is no official split)."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(X))
    cut = int(0.75 * len(X))  # test gets ceil(n/4), as train_test_split(test_size=0.25)
    tr, te = perm[:cut], perm[cut:]
    return X[tr], X[te], y[tr], y[te]


def _read_adults(path):
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    return [[v.strip() for v in r[1:]] for r in rows[1:] if r]


def load_adults(root=None):
    """adults: official split, every text column one-hot ('?' its own category) -> 108 columns.

    Categories come from the training file (a test category never seen in training maps to all
    zeros). Label 1 is '>50K'.
    """
    base = datasets_root(root) / "adults"
    train, test = _read_adults(base / "adults_train.csv"), _read_adults(base / "adults_test.csv")
    n_cols = len(train[0]) - 1
    text_cols = [j for j in range(n_cols) if not _is_number(train[0][j])]
    cats = {j: sorted({r[j] for r in train}) for j in text_cols}

    def encode(rows):
        out = []
        for r in rows:
            vals = []
            for j in range(n_cols):
                if j in cats:
                    vals.extend(1.0 if r[j] == c else 0.0 for c in cats[j])
                else:
                    vals.append(float(r[j]))
            out.append(vals)
        y = np.array([1 if r[-1].rstrip(".") == ">50K" else 0 for r in rows])
        return np.array(out), y

    Xtr, ytr = encode(train)
    Xte, yte = encode(test)
    return Xtr, Xte, ytr, yte


def _is_number(s):
    try:
        float(s)
        return True
    except ValueError:
        return False


def load_skin(root=None, seed=0):
    """skin: B, G, R -> label (1 = skin); 75/25 split with a fixed seed (183792 / 61265)."""
    data = np.loadtxt(datasets_root(root) / "skin" / "Skin_NonSkin.txt")
    X, y = data[:, :3], (data[:, 3] == 1).astype(int)
    return split_75_25(X, y, seed)


def load_abalone(root=None, seed=0):
    """abalone: regression on rings; 75/25 split with a fixed seed (3132 / 1045)."""
    base = datasets_root(root) / "abalone"
    X = np.loadtxt(base / "abalone_X.csv")
    y = np.loadtxt(base / "abalone_y.csv").ravel()
    return split_75_25(X, y, seed)


def _idx(path):
    with gzip.open(path, "rb") as fh:
        data = fh.read()
    ndim = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def load_mnist17(root=None):
    """mnist17: digits 1 (label 0) and 7 (label 1), official split, 784 pixel columns in [0, 255]."""
    base = datasets_root(root) / "mnist"
    out = []
    for prefix in ("train", "t10k"):
        images = _idx(base / f"{prefix}-images-idx3-ubyte.gz").reshape(-1, 784).astype(float)
        labels = _idx(base / f"{prefix}-labels-idx1-ubyte.gz")
        keep = (labels == 1) | (labels == 7)
        out.append((images[keep], (labels[keep] == 7).astype(int)))
    (Xtr, ytr), (Xte, yte) = out
    return Xtr, Xte, ytr, yte


def load_cancer(root=None, seed=0):
    """Breast cancer (scikit-learn's copy), 75/25 split with a fixed seed (426 / 143)."""
    from sklearn.datasets import load_breast_cancer
    X, y = load_breast_cancer(return_X_y=True)
    return split_75_25(X, y, seed)


def load_diabetes(root=None, seed=0):
    """Diabetes (scikit-learn's copy), regression, 75/25 split (331 / 111)."""
    from sklearn.datasets import load_diabetes as _ld
    X, y = _ld(return_X_y=True)
    return split_75_25(X, y.astype(float), seed)


def load_wine(root=None, seed=0):
    """Wine (scikit-learn's copy) as regression on the class label 1/2/3, as the papers use it."""
    from sklearn.datasets import load_wine as _lw
    X, y = _lw(return_X_y=True)
    return split_75_25(X, y.astype(float) + 1.0, seed)


LOADERS = {"adults": load_adults, "skin": load_skin, "abalone": load_abalone,
           "mnist17": load_mnist17, "cancer": load_cancer, "diabetes": load_diabetes,
           "wine": load_wine}
