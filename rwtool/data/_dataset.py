"""Numeric data ready for an estimator (:class:`Dataset`) and row splits (:func:`split_indices`).

This module holds arrays and says where they came from; it must not read files or encode data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._dialect import Dialect

if TYPE_CHECKING:
    from ._encoding import Preprocessing

__all__ = ["Dataset", "split_indices"]


class Dataset:
    """Numeric data ready for an estimator, with where it came from.

    ``X`` (float64, n x d), ``y`` (class labels, int or str, or float values; None when the
    file has no target), ``feature_names`` (the d encoded names: a list, or for a file of
    more than 1,024 columns a read-only sequence of str held in one array, equal to the
    list of them; ``list(ds.feature_names)`` gives a list), ``task``, ``preprocessing``
    (the replayable :class:`Preprocessing`), ``rows`` (the file line of each row of X),
    ``source`` and ``dialect`` of the file, ``notes`` (rows dropped and the like).

    ``X`` may be given as an array or as the encoded columns (numbers, and the integer code
    of each categorical cell) that :meth:`Preprocessing._encode` produces: the dense one-hot
    ``X`` is then written on its first access, once, and kept (the encoded columns are let
    go). A Dataset nobody asks ``X`` of (the rows counted, ``y`` read, a split taken) never
    pays for the n x d float64 matrix.
    """

    def __init__(self, X, y, feature_names, target, task, preprocessing, rows, source=None,
                 dialect: Dialect | None = None, notes=None):
        self._X, self._parts = (None, X) if hasattr(X, "dense") else (X, None)
        self.y = y
        self.feature_names = feature_names
        self.target = target
        self.task = task
        self.preprocessing = preprocessing
        self.rows = rows
        self.source = source
        self.dialect = dialect
        self.notes = [] if notes is None else notes

    @property
    def X(self) -> np.ndarray:
        if self._X is None:
            self._X, self._parts = self._parts.dense(), None
        return self._X

    @X.setter
    def X(self, value) -> None:
        self._X, self._parts = value, None

    def __repr__(self) -> str:
        return (f"Dataset({self.n_samples} rows x {self.n_features} features, "
                f"target={self.target!r}, task={self.task!r}, source={self.source!r})")

    @property
    def n_samples(self) -> int:
        return self._X.shape[0] if self._X is not None else self._parts.n_rows

    @property
    def n_features(self) -> int:
        return self._X.shape[1] if self._X is not None else self._parts.width

    def __len__(self) -> int:
        return self.n_samples

    @property
    def is_classification(self) -> bool:
        return self.task in ("binary", "multiclass")

    @property
    def classes(self):
        """The class labels recorded at training time (None for regression)."""
        t = self.preprocessing.target
        return None if t is None or t["classes"] is None else list(t["classes"])

    def subset(self, idx) -> "Dataset":
        idx = np.asarray(idx)
        X = self._X[idx] if self._X is not None else self._parts.take(idx)
        return Dataset(X, None if self.y is None else self.y[idx],
                       self._names_copy(), self.target, self.task, self.preprocessing,
                       self.rows[idx], self.source, self.dialect, list(self.notes))

    def _names_copy(self):
        # a list is copied (the caller may change it); a wide file's Names are immutable
        return list(self.feature_names) if isinstance(self.feature_names, list) else \
            self.feature_names

    def split(self, test_size: float = 0.25, random_state=0, stratify: bool | None = None):
        """(train, test) by rows; stratified by class for classification unless told otherwise.

        The encoding was fitted on every row of the file: for imputation statistics learned on
        the training rows only, use :func:`train_test_csv`.
        """
        strat = self.y if (stratify or (stratify is None and self.is_classification)) else None
        tr, te = split_indices(self.n_samples, test_size, random_state, strat)
        return self.subset(tr), self.subset(te)

    def summary(self) -> dict:
        out = {"source": self.source, "n_samples": self.n_samples,
               "n_features": self.n_features, "target": self.target, "task": self.task,
               "notes": list(self.notes)}
        if self.dialect is not None:
            out["dialect"] = self.dialect.to_dict()
        if self.y is not None and self.is_classification:
            u, c = np.unique(self.y, return_counts=True)
            out["class_counts"] = {str(k): int(v) for k, v in zip(u, c)}
        return out


def split_indices(n: int, test_size: float = 0.25, random_state=0, stratify=None):
    """Train and test row indices: a random fraction ``test_size`` held out (per class when
    ``stratify`` holds labels, so each class keeps its proportion and stays in training)."""
    if not (isinstance(test_size, (int, float)) and not isinstance(test_size, bool)
            and 0.0 < test_size < 1.0):
        raise ValueError(f"test_size must be a fraction in (0, 1), got {test_size!r}")
    if n < 2:
        raise ValueError(f"cannot split {n} row(s) into a training and a test part")
    rng = np.random.default_rng(random_state)
    if stratify is None:
        perm = rng.permutation(n)
        n_test = min(n - 1, max(1, int(round(test_size * n))))
        test = perm[:n_test]
    else:
        labels = np.asarray(stratify)
        classes, inv = np.unique(labels, return_inverse=True)
        sizes = np.bincount(inv)
        # Each class gets floor(test_size * size) test rows, then the rows still owed to the
        # overall round(test_size * n) go to the classes with the largest remainders (random
        # among ties), never taking a class's last training row: 120 rows in 60 classes of 2
        # give 30 test rows, not none.
        ideal = test_size * sizes
        n_test = np.minimum(np.floor(ideal).astype(np.int64), sizes - 1)
        owed = min(int(round(test_size * n)), int(np.sum(sizes - 1))) - int(n_test.sum())
        if owed > 0:
            order = np.lexsort((rng.permutation(len(sizes)), -(ideal - n_test)))
            order = order[n_test[order] < sizes[order] - 1][:owed]
            n_test[order] += 1
        test_parts = []
        for k in range(len(classes)):
            members = rng.permutation(np.flatnonzero(inv == k))
            test_parts.append(members[:n_test[k]])
        test = np.concatenate(test_parts) if test_parts else np.empty(0, dtype=np.int64)
        if len(test) == 0:
            raise ValueError(f"test_size={test_size} leaves no row for testing; raise it")
    mask = np.zeros(n, dtype=bool)
    mask[test] = True
    return np.flatnonzero(~mask), np.flatnonzero(mask)
