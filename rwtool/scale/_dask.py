"""Exact least squares on Dask: the RW/RKS estimators fitted on dask.array / dask.dataframe data.

A least-squares fit on random features is a sum over rows (solvers/_sufficient.py), so a Dask
collection is fitted in two passes over its partitions, each one task per partition:

1. moments (count, mean, sum of squared deviations) of X and of y, or the labels of y: merged
   by Chan's formulas, they give the standardisation ``fit`` would compute on the whole data;
   (with ``sample_weight``, a Dask array or sequence of one weight per row, the weighted
   moments: a row of weight c counts c times);
2. each partition's sums A_f = Phi^T W Phi, B_f = Phi^T W Y (W = I without weights; per fold
   for reg="auto") by the same
   numba feature kernels and BLAS calls as an in-memory fit, and the maxima over its rows of
   what the feature map's data constants are made of (sup ||x||, ...: RowMaxima), summed and
   maximised by a tree reduction (``split_every`` partitions per node, so no worker receives
   more than that many T x T matrices at once).

Then one T x T solve on the client (rwtool.scale._streaming.solve_stream), so the model, its data
constants included, equals the in-memory ``fit`` to rounding. A row's fold is a hash of its
position (rows are numbered across partitions in order), so reg="auto" picks its value from the
fold sums (and a classifier's position-hashed validation sample) without a third pass, as
``fit`` in memory does.
``predict``/``decision_function`` return lazy Dask arrays (map_blocks) and
``RandomizedSearchCV`` over reg on Dask data shares one pass of per-fold sums between the
candidates (:func:`fold_scores`).

The estimator and its feature map travel to the workers by pickling (in memory only; model files
stay pickle-free). A worker that dies mid-fit has its tasks recomputed by Dask (each task is a
pure function of its partition), or Dask raises once its retries are spent; the estimator is
then left unfitted. Dask is imported here only: rwtool imports without it.
"""

from __future__ import annotations

import operator
import time
import warnings

import numpy as np

from .._base import check_array, check_feature_names, check_is_fitted, class_labels
from ..features import RowMaxima
from ..progress import make_progress
from ..solvers._sufficient import SufficientStats
from ._streaming import Moments, coded_chunk, solve_stream, start_model
from ..model_selection._selection import clone, fold_ids

__all__ = ["fit", "lazy", "score", "fold_scores", "as_dask_arrays"]

#: partitions merged per node of the reduction tree
SPLIT_EVERY = 8


def _dask():
    try:        # optional (rwtool[dask]): rwtool imports and fits without Dask
        import dask
        import dask.array as da
    except ImportError as exc:   # pragma: no cover - the extra is installed in the tests
        raise ImportError("Dask inputs need the optional extra: pip install 'rwtool[dask]' "
                          "(dask[array,dataframe] and distributed)") from exc
    return dask, da


def _to_array(obj, da):
    """A Dask array of a Dask dataframe/series (known partition lengths), array or numpy."""
    if hasattr(obj, "to_dask_array"):
        return obj.to_dask_array(lengths=True)
    if isinstance(obj, da.Array):
        return obj
    return None


def as_dask_arrays(X, y=None):
    """(X, y) as Dask arrays with the same row chunks, X in one column chunk, known sizes."""
    _, da = _dask()
    Xd, yd = _to_array(X, da), (None if y is None else _to_array(y, da))
    if Xd is None:
        Xd = da.from_array(np.asarray(X), chunks=(yd.chunks[0], -1) if yd is not None
                           else "auto")
    if Xd.ndim != 2:
        raise ValueError(f"expected a 2-D array for X, got {Xd.ndim} dimension(s); pass a Dask "
                         f"array of shape (n_samples, n_features) or a dataframe")
    if any(np.isnan(c) for c in Xd.chunks[0]):
        Xd = Xd.compute_chunk_sizes()
    Xd = Xd.rechunk({1: -1})
    if y is None:
        return Xd, None
    if yd is None:
        y = np.asarray(y)
        if len(y) != Xd.shape[0]:
            raise ValueError(f"X has {Xd.shape[0]} rows but y has {len(y)}; pass one target "
                             f"per row")
        yd = da.from_array(y, chunks=(Xd.chunks[0],) + ((-1,) if y.ndim == 2 else ()))
    elif any(np.isnan(c) for c in yd.chunks[0]):
        yd = yd.compute_chunk_sizes()
    if yd.shape[0] != Xd.shape[0]:
        raise ValueError(f"X has {Xd.shape[0]} rows but y has {yd.shape[0]}; pass one target "
                         f"per row")
    if yd.chunks[0] != Xd.chunks[0]:
        yd = yd.rechunk({0: Xd.chunks[0]})
    if yd.ndim == 2:
        yd = yd.rechunk({1: -1})
    return Xd, yd


def _tree(parts, combine, dask):
    """Reduce Delayed ``parts`` with ``combine`` (a function of a list), SPLIT_EVERY per node."""
    node = dask.delayed(combine, pure=True)
    while len(parts) > 1:
        parts = [node(parts[i:i + SPLIT_EVERY]) for i in range(0, len(parts), SPLIT_EVERY)]
    return parts[0]


def _sum(items):
    out = items[0]
    for item in items[1:]:
        out = out + item
    return out


def _part_weights(wb, n):
    """A partition's weights, checked as an in-memory fit checks them (all zero is allowed
    here: only the total must not be)."""
    if wb is None:
        return None
    w = np.asarray(wb, dtype=np.float64)
    if w.shape != (n,) or not np.isfinite(w).all() or (w < 0).any():
        raise ValueError(f"sample_weight must be finite and >= 0 with one weight per row; a "
                         f"partition of {n} rows has weights of shape {w.shape} or bad values")
    return w


def _scan_part(Xb, yb, classifier, wb=None):
    """Pass 1 on one partition: moments of X (and y), weighted by ``wb`` when given, labels of
    y; rejects bad values there."""
    if len(Xb) == 0:
        return (Moments(Xb.shape[1]), None if classifier else Moments(
            1 if yb.ndim == 1 else yb.shape[1]), np.array([]) if classifier else None)
    Xb = check_array(Xb)
    w = _part_weights(wb, len(Xb))
    if classifier:
        return Moments.of(Xb, w), None, class_labels(yb)[0]
    yb = check_array(yb, "y", ensure_2d=False)
    return Moments.of(Xb, w), Moments.of(yb, w), None


def _merge_scans(items):
    mx = _sum([i[0] for i in items])
    my = None if items[0][1] is None else _sum([i[1] for i in items])
    labels = None
    if items[0][2] is not None:   # empty partitions give float arrays: leave them out
        labels = class_labels(np.concatenate([i[2] for i in items if len(i[2])]))[0]
    return mx, my, labels


def _part_stats(est, fmap, shape, Xb, yb, start, folds=None, wb=None):
    """Pass 2 on one partition: its sufficient statistics (rows numbered from ``start``,
    weighted by ``wb`` when given) and the maxima of its rows (of weight above zero);
    ``shape`` = (outputs, folds, validation sample rows) of the client's empty statistics."""
    n_outputs, n_folds, sample_rows = shape
    stats = SufficientStats(fmap.n_output_, n_outputs, n_folds, sample_rows=sample_rows)
    maxima = RowMaxima()
    if len(Xb):
        Xp, Y = coded_chunk(est, Xb, yb)
        w = _part_weights(wb, len(Xb))
        stats.add(fmap, Xp, Y, rows=Xb, start=start, folds=folds, block_size=est.block_size,
                  weights=w)
        maxima = fmap.row_maxima(Xp if w is None else Xp[w > 0])
    return stats, maxima


def _merge_parts(items):
    """(sums, maxima) of several partitions as those of their rows together."""
    return _sum([i[0] for i in items]), _sum([i[1] for i in items])


def _offsets(chunks):
    return np.concatenate([[0], np.cumsum(chunks)[:-1]]).astype(np.int64)


def _weight_parts(sample_weight, X):
    """The Delayed weights of each row partition of X (None each without weights)."""
    if sample_weight is None:
        return [None] * len(X.chunks[0])
    _, da = _dask()
    w = _to_array(sample_weight, da)
    if w is None:
        w = da.from_array(np.asarray(sample_weight, dtype=np.float64), chunks=(X.chunks[0],))
    if w.ndim != 1 or w.shape[0] != X.shape[0]:
        raise ValueError(f"sample_weight must be 1-D with one weight per row of X "
                         f"({X.shape[0]}), got shape {w.shape}")
    return list(w.rechunk({0: X.chunks[0]}).to_delayed().ravel())


def _prepare(est, X, y, n_folds, callback, sample_weight=None):
    """Passes 1 and 2 for ``est`` on (X, y): ``(X, y, stream, weight parts)`` with the
    model's preprocessing fixed as an in-memory fit fixes it."""
    dask, da = _dask()
    progress = make_progress(callback)
    X, y = as_dask_arrays(X, y)
    ws = _weight_parts(sample_weight, X)
    classifier = est._estimator_type == "classifier"
    Xs, ys = X.to_delayed().ravel(), y.to_delayed().ravel()
    scan = dask.delayed(_scan_part, pure=True)
    progress.start("dask moments", 1)
    mx, my, labels = dask.compute(_tree([scan(a, b, classifier, w) for a, b, w in
                                         zip(Xs, ys, ws)], _merge_scans, dask))[0]
    progress.end()
    if mx.n == 0:
        raise ValueError("X has 0 rows; pass at least one row" if sample_weight is None else
                         "sample_weight has no non-zero weight: at least one row must have a "
                         "weight above zero")
    if classifier:
        stream = start_model(est, X.shape[1], x_scaler=mx, classes=labels, n_folds=n_folds)
    else:
        stream = start_model(est, X.shape[1], x_scaler=mx, y_scaler=my, n_folds=n_folds,
                             n_targets=None if y.ndim == 1 else y.shape[1])
    return X, y, stream, ws


def fit(est, X, y, callback=None, sample_weight=None):
    """Fit ``est`` (RW lstsq, RKS ridge, or Lasso) on Dask data, its rows weighted by
    ``sample_weight`` when given; see the module docstring."""
    dask, _ = _dask()
    t0 = time.perf_counter()
    for key in ("coef_", "feature_map_"):
        est.__dict__.pop(key, None)   # a failed refit must not leave the old model
    # folds (and sample) as reg needs
    X, y, stream, ws = _prepare(est, X, y, None, callback, sample_weight)
    stats, maxima = _distributed_stats(est, stream, X, y, None, callback, ws)
    solve_stream(est, stream.fmap, maxima, stats, callback)
    est.fit_time_ = time.perf_counter() - t0
    est.n_partitions_ = len(X.chunks[0])
    return est


def _distributed_stats(est, stream, X, y, folds, callback, ws=None):
    dask, _ = _dask()
    progress = make_progress(callback)
    # the model and its map travel once per worker, not once per task
    est_d = dask.delayed(est, pure=True)
    fmap_d = dask.delayed(stream.fmap, pure=True)
    part = dask.delayed(_part_stats, pure=True)
    empty = stream.stats
    shape = (empty.n_outputs, empty.n_folds, 0 if empty.sample is None else empty.sample.size)
    starts = _offsets(X.chunks[0])
    ws = [None] * len(starts) if ws is None else ws
    tasks = []
    for a, b, s, n, w in zip(X.to_delayed().ravel(), y.to_delayed().ravel(), starts,
                             X.chunks[0], ws):
        f = None if folds is None else folds[s:s + n]
        tasks.append(part(est_d, fmap_d, shape, a, b, int(s), f, w))
    progress.start("dask normal equations", 1)
    stats, maxima = dask.compute(_tree(tasks, _merge_parts, dask))[0]
    progress.end()
    weighted = any(w is not None for w in ws)   # then the maxima skip the rows of weight 0
    if stats.n_samples != X.shape[0] or (maxima.n != X.shape[0] and not weighted):
        raise RuntimeError(f"the reduction saw {stats.n_samples} of {X.shape[0]} rows")
    return stats, maxima


# ----------------------------------------------------------------------------- prediction

def _apply(block, est, method, width):
    if len(block) == 0:
        return np.empty((0,) if width is None else (0, width),
                        dtype=est.classes_.dtype if method == "predict" and hasattr(
                            est, "classes_") else float)
    with warnings.catch_warnings():
        # a block is an array: the collection's column names were checked by lazy()
        warnings.filterwarnings("ignore", "X does not have valid feature names", UserWarning)
        return getattr(est, method)(block)


def lazy(est, method, X):
    """``est.<method>(X)`` as a lazy Dask array, one task per partition of X."""
    dask, da = _dask()
    check_is_fitted(est)
    check_feature_names(est, X, reset=False)
    Xd = _to_array(X, da)
    if Xd.ndim != 2:
        raise ValueError(f"expected a 2-D array for X, got {Xd.ndim} dimension(s)")
    Xd = Xd.rechunk({1: -1})
    if Xd.shape[1] != est.n_features_in_:
        raise ValueError(f"X has {Xd.shape[1]} features, but {type(est).__name__} is "
                         f"expecting {est.n_features_in_} features as input")
    classifier = est._estimator_type == "classifier"
    k = est.coef_.shape[1]
    if method == "predict" and classifier:
        width, dtype = None, est.classes_.dtype
    elif method == "predict":
        width, dtype = (None if est.y_1d_ else k), float
    else:
        width, dtype = (None if k == 1 else k), float
    est_d = dask.delayed(est, pure=True)
    if width is None:
        return Xd.map_blocks(_apply, est_d, method, None, dtype=dtype, drop_axis=1,
                             meta=np.empty((0,), dtype))
    return Xd.map_blocks(_apply, est_d, method, width, dtype=dtype,
                         chunks=(Xd.chunks[0], (width,)), meta=np.empty((0, 0), dtype))


def score(est, X, y, sample_weight=None) -> float:
    """Accuracy (classifiers) or R^2 averaged over outputs (regressors) on Dask data, with the
    same conventions as the in-memory ``score``; one compute."""
    dask, da = _dask()
    pred = lazy(est, "predict", X)
    yd = _to_array(y, da)
    yd = da.from_array(np.asarray(y)) if yd is None else yd
    yd = yd.rechunk({0: pred.chunks[0]}) if not any(np.isnan(pred.chunks[0])) else yd
    w = (da.ones(yd.shape[0], chunks=yd.chunks[0]) if sample_weight is None else
         da.asarray(sample_weight).rechunk({0: yd.chunks[0]}))
    if est._estimator_type == "classifier":
        ok, wsum = dask.compute(((pred == yd) * w).sum(), w.sum())
        return float(ok / wsum)
    yd = yd.astype(float)
    wc = w[:, None] if yd.ndim == 2 else w
    sw, swy, swyy, res = dask.compute(w.sum(), (wc * yd).sum(axis=0), (wc * yd ** 2).sum(axis=0),
                                      (wc * (yd - pred) ** 2).sum(axis=0))
    ss_tot = swyy - swy ** 2 / sw
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = np.where(ss_tot > 0, 1.0 - res / np.where(ss_tot > 0, ss_tot, 1.0),
                      np.where(res > 0, 0.0, 1.0))
    return float(np.mean(r2))


# ----------------------------------------------------------------------------- search over reg

def _part_fold_hits(est, fmap, coefs, regs_k, Xb, yb, folds):
    """Pass 3 of a search on one partition: per (reg, fold) the validation score's sums."""
    n_regs, n_folds = regs_k
    out = np.zeros((n_regs, n_folds))
    if len(Xb) == 0:
        return out
    Xp, Y = coded_chunk(est, Xb, yb)
    D = fmap.linear_predict(Xp, coefs)          # (rows, folds * regs * k)
    q = Y.shape[1]
    for f in range(n_folds):
        rows = folds == f
        if not rows.any():
            continue
        for j in range(n_regs):
            lo = (f * n_regs + j) * q
            Dj = D[rows, lo:lo + q]
            if q == 1:
                pred = Dj[:, 0] > 0
                truth = Y[rows, 0] > 0
            else:
                pred, truth = np.argmax(Dj, axis=1), np.argmax(Y[rows], axis=1)
            out[j, f] = float(np.sum(pred == truth))
    return out


def fold_scores(template, base_params, regs, X, y, folds):
    """Scores (len(regs) x n_folds) of least-squares candidates sharing one feature draw, on Dask
    data: RandomizedSearchCV's fast path (rwtool.model_selection._search) with the folds given as
    index pairs.

    Two passes share the per-fold sums of every reg; regressors are scored by R^2 from the sums
    alone, classifiers by accuracy in a third pass that predicts every (fold, reg) at once.
    """
    dask, _ = _dask()
    est = clone(template).set_params(**base_params)
    ids = fold_ids(folds)
    F = len(folds)
    X, y, stream, _ = _prepare(est, X, y, F, None)
    stats, _ = _distributed_stats(est, stream, X, y, ids, None)
    fmap = stream.fmap
    G = fmap.gram() if fmap.has_gram else None
    eps = float(getattr(est, "eps", 0.0)) if fmap.has_gram else 0.0
    coefs = stats.each_fold_coefs(regs, G, eps)
    if est._estimator_type != "classifier":
        return np.column_stack([stats.validation_scores(f, coefs[f], False) for f in range(F)])
    coefs = np.ascontiguousarray(np.hstack(coefs))
    est_d, fmap_d = dask.delayed(est, pure=True), dask.delayed(fmap, pure=True)
    coefs_d = dask.delayed(coefs, pure=True)
    part = dask.delayed(_part_fold_hits, pure=True)
    starts = _offsets(X.chunks[0])
    tasks = [part(est_d, fmap_d, coefs_d, (len(regs), F), a, b, ids[s:s + n])
             for a, b, s, n in zip(X.to_delayed().ravel(), y.to_delayed().ravel(), starts,
                                   X.chunks[0])]
    hits = dask.compute(_tree(tasks, _sum, dask))[0]
    return hits / np.maximum(stats.n, 1)[None, :]
