"""Streaming least squares: ``partial_fit`` over chunks of rows, solved lazily from the sums.

RWClassifier/RWRegressor (solver "lstsq") and RKSClassifier/RKSRegressor (solver "ridge", and
"lasso" for both) learn from the sums A = Phi^T Phi and B = Phi^T Y (solvers/_sufficient.py), so
the data can arrive in chunks. The first call fixes everything that the whole data would fix in
``fit``:

- the feature map (the same seed derivation as ``fit``: the same ``random_state`` draws the
  same features);
- the classes (``classes=`` is required on the first call of a classifier, as in scikit-learn);
- the standardisation. ``fit`` standardises with the statistics of all rows, which a stream
  does not know on its first chunk. Three choices, in decreasing order of fidelity: pass
  ``x_scaler=`` (and ``y_scaler=`` for regressors) computed by a first pass over the data
  (:class:`Moments`, :func:`scan_moments`: one cheap pass of O(n) memory); or use
  ``standardize=False`` on data already on a sensible scale; or let the first chunk's
  statistics stand (the default). With the first two the model equals ``fit`` on the
  concatenated chunks to rounding (the sums only change order); with the third it is the
  model of data standardised by the first chunk's mean and standard deviation, which is as
  good as the first chunk is representative (a file sorted by a column is not: pass
  statistics, or shuffle).

The feature map's data constants (``x_norm_max_`` = sup ||x||, and theta_, kappa_ where they
read it or are Monte Carlo estimates over the rows) are maxima over the rows: each call merges
its chunk's maxima (rwtool.features.RowMaxima) as it adds its sums, and the solved model
carries the constants of ``fit`` on all the rows seen. Nothing that shapes the features depends
on the rows' values (gamma comes from theta or kappa and the number of columns; the Fourier
bandwidth's default from the number of columns), so the first chunk's features need none of
them; only the standardisation does, hence ``x_scaler``.

Each call adds its chunk's sums; the first read of a fitted attribute (``coef_``, ``predict``,
``score``, saving) solves the T x T system, and a later ``partial_fit`` adds to the same sums
and solves again when needed. ``reg="auto"`` (the default of "lstsq"/"ridge") keeps the sums of
three folds, a row's fold being a hash of its position in the stream (and, for a classifier,
a validation sample of at most 10000 rows chosen by another hash of the positions), and picks
reg from them without a second pass, by the criterion of an in-memory ``fit`` and of Dask
(rwtool.solvers._from_sums): the same rows in any chunking choose the same reg.

This module orchestrates; it holds no formula and must not import Dask.
"""

from __future__ import annotations

import copy
import time
import warnings

import numpy as np

from .._base import (Standardizer, check_array, check_random_state, check_sample_weight,
                     class_labels)
from ..features import RowMaxima
from ..solvers._from_sums import AUTO_FOLDS, FROM_SUMS_SOLVERS, empty_stats, solve_from_stats
from ..solvers._sufficient import SufficientStats

__all__ = ["Moments", "scan_moments", "partial_fit", "solve_from_stats", "solve_stream",
           "STREAM_SOLVERS", "AUTO_FOLDS"]

#: solvers that learn from the sums alone (the public name of from_sums.FROM_SUMS_SOLVERS)
STREAM_SOLVERS = FROM_SUMS_SOLVERS


class Moments:
    """Column count, mean and sum of squared deviations, mergeable across chunks (Chan, Golub &
    LeVeque 1979), so the standardisation of a stream or a cluster equals that of one array.

    As in Standardizer.fit, squares are taken in units of each column's largest |value|
    (``peak``), so inputs near 1e200 or 1e-200 neither overflow nor underflow: ``m2`` is the sum
    of squared deviations divided by peak^2."""

    def __init__(self, n_columns: int):
        self.n = 0
        self.mean = np.zeros(int(n_columns))
        self.m2 = np.zeros(int(n_columns))
        self.peak = np.ones(int(n_columns))

    @classmethod
    def of(cls, X: np.ndarray, weights: np.ndarray | None = None) -> "Moments":
        """The moments of X's rows; with ``weights`` a row counts ``w`` times (``n`` is then
        the weight sum, and the merge formulas hold unchanged)."""
        X = np.asarray(X, dtype=float)
        X = X[:, None] if X.ndim == 1 else X
        if weights is not None:
            X, weights = X[weights > 0], weights[weights > 0]
        out = cls(X.shape[1])
        if len(X):
            peak = np.max(np.abs(X), axis=0)
            out.peak = np.where(np.isfinite(peak) & (peak > 0), peak, 1.0)
            Z = X / out.peak
            zmean = np.average(Z, axis=0, weights=weights)
            out.n = len(X) if weights is None else float(weights.sum())
            out.mean = zmean * out.peak
            sq = (Z - zmean) ** 2
            out.m2 = sq.sum(axis=0) if weights is None else weights @ sq
        return out

    def add(self, X: np.ndarray, weights: np.ndarray | None = None) -> "Moments":
        merged = self + Moments.of(X, weights)
        self.n, self.mean, self.m2, self.peak = merged.n, merged.mean, merged.m2, merged.peak
        return self

    def __add__(self, other: "Moments") -> "Moments":
        if self.mean.shape != other.mean.shape:
            raise ValueError(f"cannot merge moments of {self.mean.size} and {other.mean.size} "
                             f"columns")
        if other.n == 0 or self.n == 0:
            return other if self.n == 0 else self
        out = Moments(self.mean.size)
        out.n = self.n + other.n
        out.peak = np.maximum(self.peak, other.peak)
        a, b = self.peak / out.peak, other.peak / out.peak
        delta = other.mean / out.peak - self.mean / out.peak
        out.mean = self.mean + (delta * (other.n / out.n)) * out.peak
        out.m2 = (self.m2 * a ** 2 + other.m2 * b ** 2
                  + delta ** 2 * (self.n * other.n / out.n))
        return out

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(self.m2 / self.n) * self.peak

    def standardizer(self) -> Standardizer:
        if self.n == 0:
            raise ValueError("no rows were seen: the standardisation statistics are empty")
        return Standardizer.from_moments(self.mean, self.std, self.peak)


def scan_moments(chunks, regression: bool = True):
    """First pass over an iterable of (X, y) chunks: ``(x_scaler, y_scaler)`` for partial_fit.

    ``y_scaler`` is None for classification targets (``regression=False``).
    """
    mx = my = None
    for X, y in chunks:
        X = check_array(X)
        mx = Moments.of(X) if mx is None else mx + Moments.of(X)
        if regression:
            y = check_array(y, "y", ensure_2d=False)
            my = Moments.of(y) if my is None else my + Moments.of(y)
    if mx is None:
        raise ValueError("the chunks are empty: nothing to compute statistics from")
    return mx.standardizer(), (my.standardizer() if my is not None else None)


# ----------------------------------------------------------------------------- the model state

class _Stream:
    """What partial_fit keeps between calls: the full feature map (its data constants unknown),
    the sums, the maxima of the rows, the solved coef."""

    def __init__(self, fmap, stats: SufficientStats):
        self.fmap = fmap
        self.stats = stats
        self.maxima = RowMaxima()
        self.seconds = 0.0
        self.coef = None        # the coef_ array this stream last produced


def _as_scaler(value, name):
    if value is None or isinstance(value, Standardizer):
        return value
    if isinstance(value, Moments):
        return value.standardizer()
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return Standardizer.from_moments(*value)
    raise TypeError(f"{name} must be a Standardizer, a Moments or a (mean, std) pair, got "
                    f"{type(value).__name__}")


def start_model(est, n_features_in: int, *, x_scaler, classes=None, y_scaler=None,
                n_targets: int | None = None, n_folds: int | None = None):
    """Fix the preprocessing, the classes or target scaling and the feature map of ``est`` as
    ``fit`` would, and return an empty stream for it. Shared by partial_fit and Dask.

    ``n_targets``: the number of columns of a 2-D regression target (None: y is 1-D)."""
    solver = est._validate()
    if solver not in STREAM_SOLVERS:
        raise ValueError(f"solver={solver!r} does not learn from sums of rows; partial_fit and "
                         f"Dask inputs need solver 'lstsq' (RKHS weightings), 'ridge' (kitchen "
                         f"sinks) or 'lasso'")
    est.n_features_in_ = int(n_features_in)
    est.x_scaler_ = _as_scaler(x_scaler, "x_scaler") if est.standardize else None
    if est.x_scaler_ is not None and est.x_scaler_.mean.shape != (est.n_features_in_,):
        raise ValueError(f"x_scaler has {est.x_scaler_.mean.size} columns but X has "
                         f"{est.n_features_in_}")
    est.bias_ = est._uses_bias()
    if est._estimator_type == "classifier":
        classes = class_labels(classes, "classes")[0]
        if len(classes) < 2:
            raise ValueError(f"classes must list at least two classes, got {list(classes)}")
        est.classes_ = classes
        n_outputs = 1 if len(classes) == 2 else len(classes)
    else:
        est.y_scaler_ = _as_scaler(y_scaler, "y_scaler") if est.standardize else None
        est.y_1d_ = n_targets is None
        n_outputs = 1 if n_targets is None else int(n_targets)
    # the same seed derivation as fit(): the same random_state draws the same features
    seed = int(check_random_state(est.random_state).integers(0, 2**63 - 1))
    fmap = est._make_map(seed)
    n_in = est.n_features_in_ + (1 if est.bias_ else 0)
    # drawn for the columns alone; the data constants come from the maxima of the rows added
    fmap.fit(np.empty((0, n_in)))
    return _Stream(fmap, empty_stats(est, fmap, n_outputs, n_folds))


def solve_stream(est, fmap, maxima: RowMaxima, stats: SufficientStats, callback=None):
    """Solve the sums with the map's data constants set from the maxima of the same rows
    (:func:`solve_from_stats`). Shared by partial_fit and Dask."""
    fmap = copy.copy(fmap)   # the map a previous solve handed out keeps its constants
    fmap.set_constants(maxima)
    return solve_from_stats(est, fmap, stats, callback)


def coded_chunk(est, X, y):
    """(X preprocessed, Y coded) of a chunk, checked against what the first call fixed."""
    X = check_array(X, n_features=est.n_features_in_, estimator=type(est).__name__)
    if est._estimator_type == "classifier":
        y = np.asarray(y)
        if y.ndim != 1 or len(y) != len(X):
            raise ValueError(f"y must be 1-D with one label per row of X ({len(X)}), got shape "
                             f"{y.shape}")
    else:
        y = check_array(y, "y", ensure_2d=False)
        if (y.ndim == 1) != est.y_1d_:
            raise ValueError(f"y has {y.ndim} dimension(s) but the first chunk's y had "
                             f"{1 if est.y_1d_ else 2}; keep the target's shape across chunks")
    return est._prepare_X(X), np.ascontiguousarray(est._targets_for(y, len(X)))


def partial_fit(est, X, y, classes=None, *, sample_weight=None, x_scaler=None, y_scaler=None,
                callback=None):
    """Add a chunk (X, y) to the sums of ``est``, its rows weighted by ``sample_weight``
    (None: 1 each; the first chunk's statistics are weighted too); see the module docstring.
    Returns ``est``.

    A refused chunk (bad values, labels outside ``classes``, sums that overflow float64)
    leaves ``est`` exactly as it was before the call: the stream goes on with the next chunk.
    """
    saved = dict(est.__dict__)
    try:
        return _add_chunk(est, X, y, classes, x_scaler, y_scaler, callback, sample_weight)
    except BaseException:
        est.__dict__.clear()
        est.__dict__.update(saved)
        raise


def _add_chunk(est, X, y, classes, x_scaler, y_scaler, callback, sample_weight=None):
    t0 = time.perf_counter()
    weights = (None if sample_weight is None else
               check_sample_weight(sample_weight, len(np.asarray(y))))
    if classes is not None and est._estimator_type != "classifier":
        raise ValueError(f"classes= is for classifiers; {type(est).__name__} learns numeric "
                         f"targets: drop classes= (or use the classifier of this method)")
    stream = est.__dict__.get("_stream")
    fitted = est.__dict__.get("coef_")
    if fitted is not None and (stream is None or fitted is not stream.coef):
        # fit() keeps no sums to add to: start a stream of its own, as on a fresh estimator
        warnings.warn(f"this {type(est).__name__} was fitted by fit(), which keeps no sums; "
                      f"partial_fit starts a new model from this chunk", UserWarning,
                      stacklevel=3)
        if classes is None and est._estimator_type == "classifier":
            classes = est.classes_
        _unsolve(est)
        est.__dict__.pop("_stream", None)
        stream = None
    if stream is None:
        X0 = check_array(X, estimator=type(est).__name__)
        if est._estimator_type == "classifier":
            if classes is None:
                raise ValueError("classes must be given on the first partial_fit call (every "
                                 "label the stream will contain), as in scikit-learn")
            stream = start_model(est, X0.shape[1], x_scaler=x_scaler or Moments.of(X0, weights),
                                 classes=classes)
        else:
            y0 = check_array(y, "y", ensure_2d=False)
            if y_scaler is None and est.standardize:
                y_scaler = Moments.of(y0, weights)
            stream = start_model(est, X0.shape[1], x_scaler=x_scaler or Moments.of(X0, weights),
                                 y_scaler=y_scaler,
                                 n_targets=None if y0.ndim == 1 else y0.shape[1])
        est._stream = stream
    else:
        if x_scaler is not None or y_scaler is not None:
            raise ValueError("x_scaler and y_scaler are fixed by the first partial_fit call; "
                             "pass them there only")
        if classes is not None and not np.array_equal(class_labels(classes, "classes")[0],
                                                      est.classes_):
            raise ValueError(f"classes {list(classes)} differ from those of the first "
                             f"partial_fit call {list(est.classes_)}")
    Xp, Y = coded_chunk(est, X, y)
    maxima = stream.fmap.row_maxima(Xp if weights is None else Xp[weights > 0])
    stream.stats.add(stream.fmap, Xp, Y, rows=X, block_size=est.block_size, progress=callback,
                     weights=weights)
    stream.maxima = stream.maxima + maxima
    _unsolve(est)
    stream.seconds += time.perf_counter() - t0
    return est


def _unsolve(est):
    """Drop the solved attributes: the next read solves the grown sums (``__getattr__``)."""
    for key in ("coef_", "feature_map_", "solver_info_", "n_iter_", "fit_time_", "reg_",
                "reg_search_", "posterior_chol_", "noise_var_"):
        est.__dict__.pop(key, None)


def finish(est):
    """Solve the pending sums of a partial_fit stream (called on the first read of coef_)."""
    stream = est.__dict__["_stream"]
    t0 = time.perf_counter()
    solve_stream(est, stream.fmap, stream.maxima, stream.stats)
    stream.seconds += time.perf_counter() - t0
    est.fit_time_ = stream.seconds
    stream.coef = est.coef_
