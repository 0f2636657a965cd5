"""Training from a CSV file larger than memory: `rwtool train big.csv --target y` when it streams.

The file is read in blocks of bytes, never whole (rwtool.data._stream), and the model learns from
the sums of rwtool.scale._streaming, so memory is bounded by the block size and T (O(T^2) for the
sums), not by the number of rows (plus at most 64 MiB of the first pass's typed blocks, kept
when the whole file's fit there: the later passes then encode them instead of reading the file):

1. pass one learns the encoding record (column kinds, categories, imputation, classes);
2. with ``standardize=True``, a pass computes the mean and standard deviation of the training
   rows' encoded columns (and of the target, for regression): the statistics ``fit`` would use
   on those rows, so the model equals the in-memory ``fit`` on the same rows to rounding;
3. a pass adds every training chunk to the least-squares sums (``partial_fit``), and the model
   is solved once (reg="auto" picks reg from per-fold sums, the folds being a hash of the
   row's position);
4. a pass evaluates on the training rows and the held-out rows (or a separate test file),
   accumulating the metrics' sums.

The holdout is a deterministic function of each row's position (a hash with ``split_seed``), so
it needs no index array and every pass agrees on it; its size is ``test_size`` of the rows up to
sampling noise. :func:`train_csv` is what the command line and the app call; it prints nothing.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numpy as np

from .._base import BaseEstimator
from ..data import iter_csv, scan_csv
from ..exceptions import check_finite_result
from ..progress import make_progress
from ..solvers._sufficient import position_uniform
from ._streaming import STREAM_SOLVERS, Moments

__all__ = ["StreamTraining", "train_csv", "can_stream", "BLOCK_BYTES"]

#: bytes of CSV read at a time: the reader's memory is about 25 times this while a block is
#: typed and encoded (one Python string per cell), so 4 MiB keeps it near 100 MB; larger blocks
#: are no faster (docs/bench/scale.md)
BLOCK_BYTES = 1 << 22
#: seed offset of the holdout hash, so it is independent of the reg="auto" folds
_HOLDOUT_SEED = 0x5EED


def can_stream(estimator) -> bool:
    """Whether ``estimator`` learns from sums of rows (RW lstsq, RKS ridge, Lasso)."""
    return (hasattr(estimator, "partial_fit")
            and str(getattr(estimator, "solver", "")).lower() in STREAM_SOLVERS)


@dataclass
class StreamTraining:
    """The outcome of :func:`train_csv`: the fitted estimator, the encoding record and dialect,
    the task, the row counts, the metrics and what was noted on the way."""

    estimator: BaseEstimator
    preprocessing: object
    dialect: object
    task: str
    target: str
    classes: list | None
    n_train: int
    n_test: int
    metrics: dict
    notes: list = field(default_factory=list)
    seconds: dict = field(default_factory=dict)


class _Score:
    """Sums of one metric set over chunks: accuracy, or R^2 / MSE / MAE (R^2 from merged
    moments of y, so no cancellation on targets with a large mean)."""

    def __init__(self, task):
        self.task = task
        self.n = 0
        self.hits = 0
        self.sse = self.sae = 0.0
        self.y = Moments(1)

    def add(self, est, X, y):
        if not len(X):
            return
        pred = est.predict(X)
        self.n += len(X)
        if self.task != "regression":
            self.hits += int(np.sum(np.asarray(pred).astype(str) == np.asarray(y).astype(str)))
            return
        pred = np.asarray(pred, dtype=float)
        check_finite_result(pred, solver=type(est).__name__, what="the predictions",
                            fix="refit with other parameters; no metric is computed from "
                                "non-finite predictions")
        err = pred - np.asarray(y, dtype=float)
        self.sse += float(err @ err)
        self.sae += float(np.abs(err).sum())
        self.y.add(np.asarray(y, dtype=float))

    def metrics(self, prefix):
        if not self.n:
            return {}
        if self.task != "regression":
            acc = self.hits / self.n
            return {f"{prefix}_error": 1.0 - acc, f"{prefix}_accuracy": acc}
        var = float(self.y.std[0] ** 2)
        r2 = 1.0 - self.sse / (self.n * var) if var > 0 else float("nan")
        return {f"{prefix}_r2": r2, f"{prefix}_mse": self.sse / self.n,
                f"{prefix}_mae": self.sae / self.n}


def train_csv(path, target, estimator, *, test=None, test_size: float = 0.25, split_seed=0,
              block_bytes: int = BLOCK_BYTES, evaluate: bool = True, callback=None,
              **read_options) -> StreamTraining:
    """Train ``estimator`` on the CSV file ``path`` in bounded memory (see the module doc).

    Parameters
    ----------
    path, target : the training file and its target column (name or position).
    estimator : an unfitted RW/RKS estimator with solver lstsq/ridge/lasso, or a function
        ``task -> estimator`` (the task, "binary", "multiclass" or "regression", is known after
        pass one).
    test : a separate test CSV (evaluated with the training file's encoding) instead of a holdout.
    test_size : fraction of rows held out (0: none) when ``test`` is None.
    split_seed : seed of the holdout hash.
    block_bytes : bytes read at a time.
    evaluate : run the evaluation pass (metrics); False stops after the fit.
    callback : progress callback (rwtool.progress); returning True cancels (FitCancelled).
    read_options : options of rwtool.data.scan_csv (features, ignore, categorical, numeric,
        task, missing, max_categories, handle_unknown, encoding, delimiter, decimal, header,
        na_values).
    """

    progress = make_progress(callback)
    seconds = {}
    t0 = time.perf_counter()
    if test is None and not (isinstance(test_size, (int, float)) and 0.0 <= test_size < 1.0):
        raise ValueError(f"test_size must be a fraction in [0, 1), got {test_size!r}")
    progress.start("reading (encoding)", 1)
    scan = scan_csv(path, target, moments=False, block_bytes=block_bytes, **read_options)
    progress.end()
    try:
        pre, task = scan.preprocessing, scan.task
        if task is None:
            raise ValueError("no target column: pass the target column's name")
        est = estimator if isinstance(estimator, BaseEstimator) else estimator(task)
        if not can_stream(est):
            raise ValueError(f"{type(est).__name__}(solver={getattr(est, 'solver', None)!r}) "
                             f"cannot learn from a stream; the RW (solver 'lstsq') and RKS "
                             f"(solver 'ridge') estimators, or solver 'lasso', can")
        holdout = test is None and test_size > 0
        seconds["scan"] = time.perf_counter() - t0

        def chunks(stage):
            """(X, y, is_test) per block of the training file, with progress in rows."""
            progress.start(stage, scan.n_rows)
            pos = 0
            # the scan: its record, its dialect, and the file's typed blocks when it kept them
            for ds in iter_csv(path, scan, block_bytes=block_bytes):
                n = ds.n_samples
                is_test = (position_uniform(np.arange(pos, pos + n), _HOLDOUT_SEED + split_seed)
                           < test_size) if holdout else np.zeros(n, bool)
                pos += n
                yield ds.X, ds.y, is_test
                progress.update(pos)
            progress.end()

        classifier = task != "regression"
        first = {"classes": scan.classes} if classifier else {}
        if est.standardize:
            t1 = time.perf_counter()
            mx, my = Moments(pre.n_features_out), Moments(1)
            for X, y, is_test in chunks("reading (statistics)"):
                mx.add(X[~is_test])
                if not classifier:
                    my.add(np.asarray(y[~is_test], dtype=float))
            if mx.n == 0:
                raise ValueError("no training row is left after the holdout; lower test_size")
            first["x_scaler"] = mx
            if not classifier:
                first["y_scaler"] = my
            seconds["statistics"] = time.perf_counter() - t1
        t1 = time.perf_counter()
        n_train = n_test = 0
        for X, y, is_test in chunks("normal equations (streamed)"):
            train = ~is_test
            n_test += int(is_test.sum())
            if train.any():
                est.partial_fit(X[train], y[train], **first)
                first = {}
                n_train += int(train.sum())
        if n_train == 0:
            raise ValueError("no training row is left after the holdout; lower test_size")
        progress.start("solve", 1)
        est.coef_                       # the lazy solve, timed here  # noqa: B018
        progress.end()
        seconds["fit"] = time.perf_counter() - t1
        metrics = {"n_train": n_train, "n_test": n_test, "n_inputs": pre.n_features_out}
        if evaluate:
            t1 = time.perf_counter()
            tr, te = _Score(task), _Score(task)
            for X, y, is_test in chunks("evaluating"):
                tr.add(est, X[~is_test], y[~is_test])
                te.add(est, X[is_test], y[is_test])
            if test is not None:
                te = _Score(task)
                progress.start("evaluating (test file)", 0)
                for ds in iter_csv(test, pre, require_target=True, block_bytes=block_bytes):
                    te.add(est, ds.X, ds.y)
                progress.end()
                metrics["n_test"] = n_test = te.n
            metrics.update(tr.metrics("train"))
            metrics.update(te.metrics("test"))
            seconds["evaluate"] = time.perf_counter() - t1
        metrics["fit_time_s"] = float(seconds.get("statistics", 0.0) + seconds["fit"])
        notes = list(scan.notes)
        notes.append(f"streamed from {os.path.basename(str(path))} in blocks of "
                     f"{block_bytes / 2**20:g} MiB"
                     + (f"; {test_size:.0%} of the rows held out by a hash of their position"
                        if holdout else ""))
        return StreamTraining(est, pre, scan.dialect, task, pre.target["name"], scan.classes,
                              n_train, n_test, metrics, notes, seconds)
    finally:
        scan.close()       # its spill file, if pass one wrote one, goes now
