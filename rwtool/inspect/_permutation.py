"""Permutation importance of any fitted estimator, and the exact input shares some models hold.

The importance of a column is the drop of a score when that column's values are shuffled
among the rows (Breiman 2001, "Random Forests", Sec. 10), repeated ``n_repeats`` times. The
shuffles are scikit-learn's (``sklearn.inspection.permutation_importance``, 1.0 to 1.9): one
seed is drawn from ``random_state`` with ``randint(2**31)``, each column starts a fresh
``numpy.random.RandomState(seed)`` and, at each repeat, shuffles one index array in place and
re-indexes the already shuffled column with it; so for the same seed, scoring and rows both
compute the same scores (``max_samples`` and ``n_jobs`` are not offered: sub-sampling draws
rows with scikit-learn's own Cython sampler, and rwtool's predictions use every core already).
A group of columns (the one-hot columns of one CSV column) is shuffled together with the
group's first column's permutations; single columns are groups of one.

This module predicts with the estimator it is given; it must not fit, read files or print.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .._base import check_array
from ..exceptions import FitCancelled, InvalidParameterError
from ..progress import make_progress

__all__ = ["permutation_importance", "PermutationImportance", "input_share", "SCORINGS"]


def _accuracy(y, pred):
    return float(np.mean(np.asarray(pred) == np.asarray(y)))


def _balanced_accuracy(y, pred):
    y, pred = np.asarray(y), np.asarray(pred)
    classes = np.unique(y)
    return float(np.mean([np.mean(pred[y == c] == c) for c in classes]))


def _r2(y, pred):
    y, pred = np.asarray(y, float), np.asarray(pred, float)
    ss_tot = np.sum((y - y.mean(axis=0)) ** 2, axis=0)
    ss_res = np.sum((y - pred) ** 2, axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = np.where(ss_tot > 0, 1.0 - ss_res / np.where(ss_tot > 0, ss_tot, 1.0),
                      np.where(ss_res > 0, 0.0, 1.0))
    return float(np.mean(r2))


def _neg_mse(y, pred):
    return -float(np.mean((np.asarray(y, float) - np.asarray(pred, float)) ** 2))


def _neg_rmse(y, pred):
    err = (np.asarray(y, float) - np.asarray(pred, float)) ** 2
    return -float(np.mean(np.sqrt(np.mean(err, axis=0))))


def _neg_mae(y, pred):
    return -float(np.mean(np.abs(np.asarray(y, float) - np.asarray(pred, float))))


#: the scorings by name (scikit-learn's names; higher is better), each on ``predict(X)``
SCORINGS: dict[str, Callable] = {
    "accuracy": _accuracy, "balanced_accuracy": _balanced_accuracy, "r2": _r2,
    "neg_mean_squared_error": _neg_mse, "neg_root_mean_squared_error": _neg_rmse,
    "neg_mean_absolute_error": _neg_mae}


@dataclass
class PermutationImportance:
    """The result of :func:`permutation_importance` (the fields of scikit-learn's Bunch, also
    readable as ``result["importances_mean"]``).

    Attributes
    ----------
    importances_mean, importances_std : ndarray (n_groups,)
        Mean and standard deviation (ddof=0) of the score drops over the repeats.
    importances : ndarray (n_groups, n_repeats)
        baseline_score - the score with the group shuffled, per repeat.
    baseline_score : float
        The score on the rows as given.
    scoring : str
        What was scored ("score" for the estimator's own ``score``: accuracy or R^2).
    groups : list of lists of int
        The columns of X shuffled together, one list per row of the arrays.
    share, share_meaning : ndarray (n_features_in_,) or None, str
        The model's exact share per input column when it has one (:func:`input_share`).
    """

    importances_mean: np.ndarray
    importances_std: np.ndarray
    importances: np.ndarray
    baseline_score: float
    scoring: str
    groups: list = field(default_factory=list)
    share: np.ndarray | None = None
    share_meaning: str = ""

    def __getitem__(self, key):
        return getattr(self, key)


def input_share(model) -> tuple[np.ndarray, str] | None:
    """``(share, meaning)``: the exact importance a fitted model holds per input column, each
    share >= 0 and summing to 1 (all zero when every coefficient is), or None.

    BKerNN: the row norms ||W^(a)|| of its particles (seed 001 Sec. 2.5). Stump features
    (RWStumps, the kitchen sinks' stump base): each stump reads one input column x_{w1}, so the
    column's share is the sum of ||a_t|| over the stumps that read it.
    """
    n_in = getattr(model, "n_features_in_", None)
    if hasattr(model, "variable_importance") and hasattr(model, "particles_"):
        v = np.asarray(model.variable_importance(), float)
        return (v if n_in is None else v[:n_in]), "row norms of the particles (seed 001, Sec. 2.5)"
    idx = getattr(getattr(model, "feature_map_", None), "idx_", None)
    coef = getattr(model, "coef_", None)
    if idx is None or not isinstance(coef, np.ndarray) or len(idx) != coef.shape[0]:
        return None
    c = coef if coef.ndim == 2 else coef[:, None]
    idx = np.asarray(idx, np.int64)
    n = int(n_in) if n_in is not None else int(idx.max()) + 1
    # a stump reading the bias column (index n_in) weighs no input column
    v = np.bincount(idx, weights=np.linalg.norm(c, axis=1), minlength=max(n, int(idx.max()) + 1))
    v = v[:n]
    total = v.sum()
    return (v / total if total > 0 else v), "sum of |a_t| over the stumps reading the column"


def _scorer(model, scoring):
    """``(name, score(X, y))`` for ``scoring`` (None, a name of :data:`SCORINGS`, or a
    callable ``scoring(model, X, y) -> float``)."""
    if scoring is None:
        if not callable(getattr(model, "score", None)):
            raise TypeError(f"{type(model).__name__} has no score method: pass scoring= (one of "
                            f"{', '.join(SCORINGS)}, or a callable(model, X, y))")
        return "score", model.score
    if isinstance(scoring, str):
        if scoring not in SCORINGS:
            raise InvalidParameterError(f"scoring={scoring!r} is not one of "
                                        f"{', '.join(map(repr, SCORINGS))}; pass one of them, "
                                        f"None (the model's own score) or a "
                                        f"callable(model, X, y)")
        kind = getattr(model, "_estimator_type", None)
        for_classes = scoring in ("accuracy", "balanced_accuracy")
        if kind in ("classifier", "regressor") and for_classes != (kind == "classifier"):
            fits = [k for k in SCORINGS if (k in ("accuracy", "balanced_accuracy"))
                    == (kind == "classifier")]
            raise InvalidParameterError(f"scoring={scoring!r} scores "
                                        f"{'classes' if for_classes else 'numbers'}, but "
                                        f"{type(model).__name__} is a {kind}: use one of "
                                        f"{', '.join(fits)}, or None (its own score)")
        metric = SCORINGS[scoring]
        return scoring, lambda X, y: metric(y, model.predict(X))
    if callable(scoring):
        return getattr(scoring, "__name__", "custom"), lambda X, y: float(scoring(model, X, y))
    raise InvalidParameterError(f"scoring must be None, a name ({', '.join(SCORINGS)}) or a "
                                f"callable(model, X, y), got {type(scoring).__name__}; several "
                                f"scorings at once are not supported: call once per scoring")


def _seed(random_state) -> int:
    """The one seed scikit-learn draws from ``random_state`` (check_random_state, then
    ``randint(np.iinfo(np.int32).max + 1)``)."""
    top = np.iinfo(np.int32).max + 1
    if random_state is None:
        return int(np.random.randint(top))      # numpy's global RandomState, as sklearn's
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return int(np.random.RandomState(int(random_state)).randint(top))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(top))
    raise InvalidParameterError(f"random_state must be None, an int or a "
                                f"numpy.random.RandomState, got {type(random_state).__name__} "
                                f"(a numpy Generator draws other permutations than "
                                f"scikit-learn's: pass an int seed)")


def _groups(groups, n_features: int) -> list[list[int]]:
    if groups is None:
        return [[j] for j in range(n_features)]
    out = []
    for g in groups:
        g = [g] if isinstance(g, numbers.Integral) else list(g)
        if not g or any(not isinstance(j, numbers.Integral) or not 0 <= j < n_features
                        for j in g):
            raise InvalidParameterError(f"groups: each group must be a non-empty list of "
                                        f"column indices in [0, {n_features}), got {g!r}")
        out.append([int(j) for j in g])
    return out


def permutation_importance(model, X, y, *, scoring=None, n_repeats: int = 5,
                           random_state=None, groups=None,
                           callback=None) -> PermutationImportance:
    """The drop of ``model``'s score on (X, y) when each column of X is shuffled.

    Parameters
    ----------
    model : a fitted estimator (any of rwtool's, or anything with ``predict`` / ``score``)
    X : array (n_samples, n_features); y : array (n_samples,) or (n_samples, n_outputs)
        Rows the importance is measured on (held-out rows measure what the model generalises
        with; training rows what it fitted).
    scoring : None, str or callable
        None: ``model.score`` (accuracy for classifiers, R^2 for regressors); a name of
        :data:`SCORINGS`; or ``scoring(model, X, y) -> float`` (higher is better).
    n_repeats : int >= 1
        Shuffles per column.
    random_state : None, int or numpy.random.RandomState
        The seed of the shuffles; the same value as scikit-learn's gives the same shuffles.
    groups : list of lists of column indices, optional
        Columns shuffled together (the one-hot columns of one CSV column, so that no row gets
        two categories); default: each column alone (scikit-learn's behaviour).
    callback : callable, optional
        rwtool.progress: events of stage "importance", ``done`` counting the scores computed of
        ``len(groups) * n_repeats``; returning True stops with :class:`rwtool.FitCancelled`
        (between two scores).

    Returns
    -------
    PermutationImportance, one row per group, with the model's exact ``share`` when it has one.
    """
    if not isinstance(n_repeats, numbers.Integral) or isinstance(n_repeats, bool) \
            or n_repeats < 1:
        raise InvalidParameterError(f"n_repeats must be an integer >= 1, got {n_repeats!r}")
    Xa = np.asarray(X)
    X = check_array(X, "X", dtype=np.float32 if Xa.dtype == np.float32 else np.float64)
    y = np.asarray(y)
    if len(y) != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {len(y)} values; pass one target "
                         f"value per row")
    name, score = _scorer(model, scoring)
    groups = _groups(groups, X.shape[1])
    seed = _seed(random_state)
    progress = make_progress(callback)
    total = len(groups) * int(n_repeats)
    try:
        progress.start("importance", total)
        baseline = float(score(X, y))
        work = X.copy()
        drops = np.empty((len(groups), int(n_repeats)))
        done = 0
        for gi, g in enumerate(groups):
            rng = np.random.RandomState(seed)
            order = np.arange(X.shape[0])
            for r in range(int(n_repeats)):
                rng.shuffle(order)
                # scikit-learn re-indexes the column already shuffled at the previous repeat
                if len(g) == 1:
                    work[:, g[0]] = work[order, g[0]]
                else:
                    work[:, g] = work[np.ix_(order, g)]
                drops[gi, r] = baseline - float(score(work, y))
                done += 1
                progress.update(done)
            work[:, g] = X[:, g]
        progress.end()
    except FitCancelled:
        raise FitCancelled("permutation importance cancelled by the progress callback") from None
    share = input_share(model)
    return PermutationImportance(drops.mean(axis=1), drops.std(axis=1), drops, baseline, name,
                                 groups, *(share if share is not None else (None, "")))
