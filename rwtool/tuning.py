"""Hyper-parameter search: randomized-search cross-validation with the papers' search spaces.

``RandomizedSearchCV`` draws candidates from a search space (by default the distributions of
seed 003 Table 14, EXPERIMENTS.md), scores each by k-fold cross-validation, and refits the best
on all the data. For the exact least-squares solvers ("lstsq" for RKHS weightings, "ridge" for
random kitchen sinks) candidates that differ only in ``reg`` share their features: one pass over
the data accumulates the normal equations of every fold (the training-fold system is the total
minus the fold's own block), each (fold, reg) pair costs one T x T factorisation, and a second
pass scores all reg values of all folds at once. A search over ``reg`` alone therefore costs
about two fits plus the factorisations, whatever the number of reg values and folds.

Every fit runs in the calling thread, one after the other, so numba's parallel kernels are never
entered from two threads at once. This module chooses parameters; it does not define models.
"""

from __future__ import annotations

import math
import numbers
import time
from collections import OrderedDict

import numpy as np

from ._base import (BaseEstimator, Standardizer, check_is_fitted, check_random_state, check_scalar,
                    is_dask)
from .errors import NumericalError
from .progress import make_progress

__all__ = ["LogUniform", "Uniform", "Choice", "default_space", "kfold_indices",
           "RandomizedSearchCV", "select_reg"]


# ----------------------------------------------------------------------------- distributions

class LogUniform:
    """log-uniform on [low, high]: exp(U(log low, log high))."""

    def __init__(self, low: float, high: float):
        if not 0 < low < high:
            raise ValueError(f"LogUniform needs 0 < low < high, got ({low}, {high})")
        self.low, self.high = float(low), float(high)

    def rvs(self, random_state=None):
        rng = check_random_state(random_state)
        return float(math.exp(rng.uniform(math.log(self.low), math.log(self.high))))

    def __repr__(self):
        return f"LogUniform({self.low:g}, {self.high:g})"


class Uniform:
    """Uniform on [low, high]."""

    def __init__(self, low: float, high: float):
        if not low < high:
            raise ValueError(f"Uniform needs low < high, got ({low}, {high})")
        self.low, self.high = float(low), float(high)

    def rvs(self, random_state=None):
        return float(check_random_state(random_state).uniform(self.low, self.high))

    def __repr__(self):
        return f"Uniform({self.low:g}, {self.high:g})"


class Choice:
    """A uniform choice among values."""

    def __init__(self, values):
        self.values = list(values)
        if not self.values:
            raise ValueError("Choice needs at least one value")

    def rvs(self, random_state=None):
        return self.values[int(check_random_state(random_state).integers(len(self.values)))]

    def __repr__(self):
        return f"Choice({self.values!r})"


def default_space(estimator) -> dict:
    """The search space of seed 003 Table 14 / EXPERIMENTS.md for an rwtool estimator.

    RKHS weightings: sigma ~ logU(0.01, 10), reg ~ logU(1e-12, 1e-4), and theta ~ U(0.01, 0.9)
    (RWSign, RWRelu), kappa ~ U(1.5, 50) (RWExpSign) or U(1.5, 100) (RWExpRelu), gamma ~
    logU(0.01, 10) (RWStumps); an rwtool.Instantiation gets the same by kernel
    (rwtool.instantiation.search_space). Random kitchen sinks: reg ~ logU(1e-5, 1e-3), Table 14's lam2,
    which is rwtool's reg: the paper's RKS objective (its eq. 24) (1/m) sum (f - y)^2 +
    (lam2/T) ||a||^2 with f = (1/T) sum a_t phi_t is rwtool's on phi / sqrt(T) with
    b = a / sqrt(T). Table 14 gives no width for the kitchen sinks' feature distribution; rwtool
    also searches sigma ~ logU(0.01, 10), the range of the weightings' same distribution, so
    that neither family is held at an arbitrary width. Other estimators: a space must be given.
    """
    name = type(estimator).__name__
    if name.startswith("RW"):
        space = {"sigma": LogUniform(0.01, 10), "reg": LogUniform(1e-12, 1e-4)}
        from .instantiation import resolve, search_space
        inst = resolve(estimator.instantiation)
        if not isinstance(inst, str):
            space.update(search_space(inst))
        elif inst in ("rwsign", "rwrelu"):
            space["theta"] = Uniform(0.01, 0.9)
        elif inst == "rwexpsign":
            space["kappa"] = Uniform(1.5, 50)
        elif inst == "rwexprelu":
            space["kappa"] = Uniform(1.5, 100)
        else:
            space["gamma"] = LogUniform(0.01, 10)
        return space
    if name.startswith("RKS"):
        return {"sigma": LogUniform(0.01, 10), "reg": LogUniform(1e-5, 1e-3)}
    raise ValueError(f"no default search space for {name}; pass space={{'param': "
                     f"distribution, ...}} (LogUniform, Uniform, Choice or any object with rvs)")


def _draw(space, rng):
    out = {}
    for key in sorted(space):
        dist = space[key]
        if hasattr(dist, "rvs"):
            try:
                out[key] = dist.rvs(random_state=rng)
            except TypeError:  # scipy.stats wants a RandomState-like or int seed
                out[key] = dist.rvs(random_state=int(rng.integers(2**31 - 1)))
            if isinstance(out[key], np.generic):
                out[key] = out[key].item()
        elif isinstance(dist, (list, tuple)):
            out[key] = dist[int(rng.integers(len(dist)))]
        else:
            raise TypeError(f"search space entry {key!r} must be a distribution with rvs() or a "
                            f"list of values, got {type(dist).__name__}")
    return out


# ----------------------------------------------------------------------------- folds

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
        classes, idx, counts = np.unique(y, return_inverse=True, return_counts=True)
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


# ----------------------------------------------------------------------------- the search

def _is_fast(est) -> bool:
    """Exact least squares on random features: candidates can share their normal equations."""
    from .estimators.random_features import _RandomFeatureModel
    return isinstance(est, _RandomFeatureModel) and str(est.solver).lower() in ("lstsq", "ridge")


class RandomizedSearchCV(BaseEstimator):
    """Randomized-search cross-validation (seed 003 Appendix C protocol).

    Parameters
    ----------
    estimator : rwtool estimator
        Template; its parameters not in the space are kept.
    space : dict or None
        Parameter -> distribution (``rvs``) or list of values. None: :func:`default_space`.
    n_iter : int, default 50
        Number of candidates drawn.
    cv : int, default 5
        Number of folds (stratified for classifiers).
    scoring : callable or None
        ``scoring(estimator, X, y) -> float`` (higher is better); None uses ``estimator.score``
        (accuracy for classifiers, R^2 for regressors).
    refit : bool, default True
        Refit the best candidate on all the data (``best_estimator_``).
    random_state : int, Generator or None
        Seeds the candidate draws and the folds.

    Attributes
    ----------
    best_params_, best_score_, best_estimator_, best_index_, n_splits_
    cv_results_ : dict with ``params`` (list of dicts), ``mean_test_score``, ``std_test_score``,
        ``rank_test_score``, ``split{k}_test_score`` and ``mean_fit_time`` arrays.

    Notes
    -----
    On the fast path (solvers "lstsq"/"ridge", default scoring) the inputs are standardised once
    with the statistics of all rows given to ``fit``, as the papers' protocol standardises the
    training set before its cross-validation, and every candidate uses the feature draw of its
    ``random_state``, which is the draw the refit uses. A candidate whose fit raises
    :class:`rwtool.NumericalError` (a diverged iterative solver) scores NaN and ranks last; when
    every candidate does, ``fit`` raises it.
    """

    def __init__(self, estimator, space=None, n_iter=50, cv=5, scoring=None, refit=True,
                 random_state=None):
        self.estimator = estimator
        self.space = space
        self.n_iter = n_iter
        self.cv = cv
        self.scoring = scoring
        self.refit = refit
        self.random_state = random_state

    def get_params(self, deep=False):
        return {k: getattr(self, k) for k in self._param_names()}

    def fit(self, X, y, callback=None):
        """Draw, cross-validate and (optionally) refit; returns self."""
        check_scalar(self.n_iter, "n_iter", numbers.Integral, low=1)
        progress = make_progress(callback)
        space = default_space(self.estimator) if self.space is None else dict(self.space)
        valid = set(self.estimator.get_params())
        unknown = sorted(set(space) - valid)
        if unknown:
            raise ValueError(f"search space names {unknown} that {type(self.estimator).__name__} "
                             f"does not take; valid parameters: {', '.join(sorted(valid))}")
        rng = check_random_state(self.random_state)
        template = self.estimator
        if "random_state" in valid and template.get_params().get("random_state") is None:
            # One feature seed for every candidate and the refit: candidates then differ only
            # by their parameters, and the refit is the model that was validated.
            template = _clone(template).set_params(random_state=int(rng.integers(2**31 - 1)))
        candidates = [_draw(space, rng) for _ in range(int(self.n_iter))]
        y_arr = np.asarray(y)
        is_clf = getattr(self.estimator, "_estimator_type", None) == "classifier"
        folds = kfold_indices(y_arr, int(self.cv), is_clf, rng)
        scores, times = _cross_validate(template, candidates, X, y_arr, folds, self.scoring,
                                        progress)
        mean = scores.mean(axis=1)
        if not np.isfinite(mean).any():
            raise NumericalError(f"all {len(mean)} candidates diverged or gave non-finite "
                                 f"scores", fix="standardize the inputs, narrow the search "
                                 "space, or choose another solver")
        order = np.argsort(-mean, kind="stable")   # NaN (diverged) candidates rank last
        rank = np.empty(len(mean), dtype=np.int64)
        rank[order] = np.arange(1, len(mean) + 1)
        self.cv_results_ = {"params": candidates, "mean_test_score": mean,
                            "std_test_score": scores.std(axis=1), "rank_test_score": rank,
                            "mean_fit_time": times}
        for k in range(len(folds)):
            self.cv_results_[f"split{k}_test_score"] = scores[:, k]
        self.best_index_ = int(order[0])
        self.best_params_ = dict(candidates[self.best_index_])
        self.best_score_ = float(mean[self.best_index_])
        self.n_splits_ = len(folds)
        if self.refit:
            self.best_estimator_ = _clone(template).set_params(**self.best_params_)
            self.best_estimator_.fit(X, y)
        return self

    def predict(self, X):
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X)

    def score(self, X, y):
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.score(X, y)

    def results_table(self) -> list[dict]:
        """The cross-validation results as rows (one dict per candidate), best first."""
        check_is_fitted(self, "cv_results_")
        r = self.cv_results_
        order = np.argsort(r["rank_test_score"])
        return [dict(r["params"][i], mean_test_score=float(r["mean_test_score"][i]),
                     std_test_score=float(r["std_test_score"][i]),
                     rank=int(r["rank_test_score"][i])) for i in order]


def _cross_validate(template, candidates, X, y, folds, scoring, progress):
    """Scores (candidates x folds) and mean fit times; shares features where it can."""
    scores = np.full((len(candidates), len(folds)), np.nan)
    times = np.zeros(len(candidates))
    progress.start("search", len(candidates))
    done = 0
    if scoring is None and _is_fast(template):
        groups = OrderedDict()
        for i, c in enumerate(candidates):
            key = tuple(sorted((k, repr(v)) for k, v in c.items() if k != "reg"))
            groups.setdefault(key, []).append(i)
        for members in groups.values():
            t0 = time.perf_counter()
            base = {k: v for k, v in candidates[members[0]].items() if k != "reg"}
            regs = [candidates[i].get("reg", template.reg) for i in members]
            scores[members] = _fast_scores(template, base, regs, X, y, folds)
            times[members] = (time.perf_counter() - t0) / len(members)
            done += len(members)
            progress.update(done, force=True, best_score=_best_so_far(scores))
    else:
        if is_dask(X):
            raise ValueError("on Dask data RandomizedSearchCV shares per-fold sums between the "
                             "candidates, which needs solver 'lstsq' or 'ridge' and the default "
                             "scoring; compute the data into memory for other searches")
        X_arr = np.asarray(X)
        for i, c in enumerate(candidates):
            t0 = time.perf_counter()
            for k, (tr, va) in enumerate(folds):
                est = _clone(template).set_params(**c)
                try:
                    est.fit(X_arr[tr], y[tr])
                    scores[i, k] = (est.score(X_arr[va], y[va]) if scoring is None
                                    else scoring(est, X_arr[va], y[va]))
                except NumericalError:
                    # a diverged candidate is invalid: it scores NaN, never the best
                    scores[i, :] = np.nan
                    break
            times[i] = time.perf_counter() - t0
            done += 1
            progress.update(done, best_score=_best_so_far(scores))
    progress.end()
    return scores, times


def select_reg(estimator, X, y, values, cv: int = 3, random_state=0, callback=None):
    """Cross-validate ``reg`` over ``values`` (everything else fixed); ``(best, table)``.

    The table lists each value with its mean and standard deviation of the validation score
    (accuracy or R^2). On the exact least-squares solvers every value shares one feature draw
    and one pass over the data per fold set, so the whole selection costs about two fits.
    """
    y_arr = np.asarray(y)
    is_clf = getattr(estimator, "_estimator_type", None) == "classifier"
    folds = kfold_indices(y_arr, int(cv), is_clf, random_state)
    candidates = [{"reg": float(v)} for v in values]
    scores, _ = _cross_validate(estimator, candidates, X, y_arr, folds, None,
                                make_progress(callback))
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


def _clone(est):
    return type(est)(**est.get_params(deep=False))


def _fast_scores(template, base_params, regs, X, y, folds):
    """Scores (len(regs) x n_folds) of least-squares candidates sharing one feature draw."""
    if is_dask(X) or is_dask(y):
        from .dask_backend import fold_scores
        return fold_scores(template, base_params, regs, X, y, folds)
    from .solvers.ridge import RegPath
    from .solvers.sufficient import SufficientStats

    est = _clone(template).set_params(**base_params)
    est._validate()
    Xc, Y = est._fit_targets(X, y)
    est.x_scaler_ = Standardizer.fit(Xc) if est.standardize else None
    est.bias_ = est._uses_bias()
    Xp = est._prepare_X(Xc)
    # The same seed derivation as fit(), so the refit reuses the validated feature draw.
    seed = int(check_random_state(est.random_state).integers(0, 2**63 - 1))
    fmap = est._make_map(seed)
    fmap.fit(Xp)
    G = fmap.gram() if fmap.has_gram else None
    eps = float(getattr(est, "eps", 0.0)) if fmap.has_gram else 0.0
    fold_ids = np.empty(len(Xp), dtype=np.int64)
    for k, (_, va) in enumerate(folds):
        fold_ids[va] = k
    stats = SufficientStats(fmap.n_output_, Y.shape[1], len(folds))
    stats.add(fmap, Xp, Y, folds=fold_ids, block_size=est.block_size)
    Linv = RegPath.for_gram(G) if len(regs) >= 10 and G is not None else None
    out = np.empty((len(regs), len(folds)))
    for k, (tr, va) in enumerate(folds):
        coefs = stats.fold_coefs(k, regs, G, eps, Linv)
        # every reg value of the fold in one blocked pass: no fold-sized feature matrix
        D = fmap.linear_predict(np.ascontiguousarray(Xp[va]), coefs)
        q = Y.shape[1]
        for j in range(len(regs)):
            Dj = D[:, j * q:(j + 1) * q]
            if not np.isfinite(Dj).all():
                out[j, k] = np.nan      # no score from non-finite decision values
                continue
            if est._estimator_type == "classifier":
                pred = (est.classes_[(Dj[:, 0] > 0).astype(int)] if q == 1
                        else est.classes_[np.argmax(Dj, axis=1)])
                out[j, k] = float(np.mean(pred == y[va]))
            else:
                Yv = Y[va]
                ss_res = ((Yv - Dj) ** 2).sum(axis=0)
                ss_tot = ((Yv - Yv.mean(axis=0)) ** 2).sum(axis=0)
                out[j, k] = float(np.mean(1.0 - ss_res / np.where(ss_tot > 0, ss_tot, 1.0)))
    return out
