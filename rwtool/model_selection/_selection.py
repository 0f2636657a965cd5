"""Cross-validation of candidate parameters, and the choice of ``reg``: the core that both the
iterative solvers' ``reg="auto"`` and the hyper-parameter search (rwtool.model_selection._search)
use (the least-squares ``reg="auto"`` decides from per-fold sums: rwtool.solvers._from_sums).

``cross_validate`` scores candidates (parameter dicts) on k folds. An estimator may share work
between candidates that differ only in ``reg`` by defining ``_shares_reg_path()`` (True when it
can) and ``_reg_path_scores(base_params, regs, X, y, folds)`` (the exact least-squares solvers
accumulate the normal equations once and solve each reg from them). A candidate whose fit raises
:class:`rwtool.NumericalError` scores NaN and is never chosen.

This module knows estimators only through those methods and ``fit``/``score``/``get_params``: it
must not import any estimator module (they import it).
"""

from __future__ import annotations

import math
import numbers
import time
from collections import OrderedDict

import numpy as np

from .._base import check_random_state, check_scalar, class_labels, is_dask
from ..exceptions import NumericalError
from ..progress import Progress, make_progress

__all__ = ["kfold_indices", "fold_ids", "cross_validate", "select_reg", "clone"]


def kfold_indices(y, n_splits: int, stratified: bool, random_state=None):
    """Shuffled (stratified) k-fold splits as a list of (train_idx, val_idx)."""
    check_scalar(n_splits, "cv", numbers.Integral, low=2)
    m = len(y)
    if n_splits > m:
        raise ValueError(f"cv={n_splits} folds need at least {n_splits} rows, but the data has "
                         f"{m}; lower cv or add rows")
    rng = check_random_state(random_state)
    fold_of = np.empty(m, dtype=np.int64)
    if stratified:
        classes, idx = class_labels(y)
        counts = np.bincount(idx)
        if counts.min() < n_splits:
            c = classes[np.argmin(counts)]
            raise ValueError(f"class {c!r} has {counts.min()} row(s), fewer than cv={n_splits} "
                             f"folds; lower cv to at most {counts.min()} or add rows of that class")
        offset = 0
        for k in range(len(classes)):
            members = rng.permutation(np.flatnonzero(idx == k))
            fold_of[members] = (np.arange(len(members)) + offset) % n_splits
            offset += len(members)
    else:
        fold_of[rng.permutation(m)] = np.arange(m) % n_splits
    return [(np.flatnonzero(fold_of != k), np.flatnonzero(fold_of == k)) for k in range(n_splits)]


def fold_ids(folds) -> np.ndarray:
    """Each row's fold number, from (train_idx, val_idx) pairs whose val_idx cover the rows."""
    ids = np.empty(sum(len(va) for _, va in folds), dtype=np.int64)
    for k, (_, va) in enumerate(folds):
        ids[va] = k
    return ids


def _shares_reg_path(template, candidates) -> bool:
    """The candidates differ only in numeric reg values the template can solve from one pass."""
    shares = getattr(template, "_shares_reg_path", None)
    if shares is None or not shares():
        return False
    return all(isinstance(c.get("reg", template.get_params().get("reg")), numbers.Real)
               and not isinstance(c.get("reg", template.get_params().get("reg")), bool)
               for c in candidates)


def cross_validate(template, candidates, X, y, folds, scoring, progress, sample_weight=None):
    """Scores (candidates x folds) and mean fit times; shares features where it can. With
    ``sample_weight`` each fold is fitted on its rows' weights and scored weighting its
    validation rows (the refitting route only)."""
    scores = np.full((len(candidates), len(folds)), np.nan)
    times = np.zeros(len(candidates))
    progress.start("search", len(candidates))
    done = 0
    if scoring is None and sample_weight is None and _shares_reg_path(template, candidates):
        groups = OrderedDict()
        for i, c in enumerate(candidates):
            key = tuple(sorted((k, repr(v)) for k, v in c.items() if k != "reg"))
            groups.setdefault(key, []).append(i)
        for members in groups.values():
            t0 = time.perf_counter()
            base = {k: v for k, v in candidates[members[0]].items() if k != "reg"}
            regs = [candidates[i].get("reg", template.reg) for i in members]
            scores[members] = template._reg_path_scores(base, regs, X, y, folds)
            times[members] = (time.perf_counter() - t0) / len(members)
            done += len(members)
            progress.update(done, force=True, best_score=_best_so_far(scores))
    else:
        if is_dask(X):
            raise ValueError("on Dask data RandomizedSearchCV shares per-fold sums between the "
                             "candidates, which needs solver 'lstsq' or 'ridge' and the default "
                             "scoring; compute the data into memory for other searches")
        X_arr = np.asarray(X)
        # each candidate's fits report to the search (done: candidates finished), so that a
        # cancel is seen within a fit, not only between candidates
        inner = Progress(lambda event: progress.update(done)) if progress.active else None
        for i, c in enumerate(candidates):
            t0 = time.perf_counter()
            for k, (tr, va) in enumerate(folds):
                est = clone(template).set_params(**c)
                try:
                    fit_kw = {} if inner is None else {"callback": inner}
                    if sample_weight is None:
                        est.fit(X_arr[tr], y[tr], **fit_kw)
                        scores[i, k] = (est.score(X_arr[va], y[va]) if scoring is None
                                        else scoring(est, X_arr[va], y[va]))
                    else:
                        est.fit(X_arr[tr], y[tr], sample_weight=sample_weight[tr], **fit_kw)
                        scores[i, k] = (est.score(X_arr[va], y[va], sample_weight[va])
                                        if scoring is None else
                                        scoring(est, X_arr[va], y[va],
                                                sample_weight=sample_weight[va]))
                except NumericalError:
                    # a diverged candidate is invalid: it scores NaN, never the best
                    scores[i, :] = np.nan
                    break
            times[i] = time.perf_counter() - t0
            done += 1
            progress.update(done, best_score=_best_so_far(scores))
    progress.end()
    return scores, times


def select_reg(estimator, X, y, values, cv: int = 3, random_state=0, callback=None,
               sample_weight=None):
    """Cross-validate ``reg`` over ``values`` (everything else fixed); ``(best, table)``.
    ``sample_weight`` weighs the rows in each fold's fit and in its validation score.

    The table lists each value with its mean and standard deviation of the validation score
    (accuracy or R^2). On the exact least-squares solvers every value shares one feature draw
    and one pass over the data per fold set, so the whole selection costs about two fits.
    """
    y_arr = np.asarray(y)
    is_clf = getattr(estimator, "_estimator_type", None) == "classifier"
    if is_clf and y_arr.ndim == 2 and y_arr.shape[1] == 1:
        y_arr = y_arr.ravel()   # labels as a column: compared row by row with the predictions
    folds = kfold_indices(y_arr, int(cv), is_clf, random_state)
    candidates = [{"reg": float(v)} for v in values]
    scores, _ = cross_validate(estimator, candidates, X, y_arr, folds, None,
                                make_progress(callback), sample_weight)
    mean = scores.mean(axis=1)
    valid = np.isfinite(mean)
    if not valid.any():
        raise NumericalError(f"every reg candidate ({values[0]:g} to {values[-1]:g}) diverged or "
                             f"gave non-finite scores",
                             solver=str(getattr(estimator, "solver", "")) or None,
                             fix="standardize the inputs, or choose another solver")
    best = int(np.argmax(np.where(valid, mean, -np.inf)))  # ties: the smallest reg
    table = {"reg": [float(v) for v in values], "mean_score": mean.tolist(),
             "std_score": scores.std(axis=1).tolist(), "diverged": (~valid).tolist()}
    return float(values[best]), table


def _best_so_far(scores: np.ndarray) -> float:
    scored = ~np.isnan(scores).any(axis=1)
    return float(scores[scored].mean(axis=1).max()) if scored.any() else math.nan


def clone(est):
    return type(est)(**est.get_params(deep=False))
