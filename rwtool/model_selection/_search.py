"""Hyper-parameter search: randomized-search cross-validation with the papers' search spaces.

``RandomizedSearchCV`` draws candidates from a search space (by default the distributions of
seed 003 Table 14, EXPERIMENTS.md), scores each by k-fold cross-validation, and refits the best
on all the data. For the exact least-squares solvers ("lstsq" for RKHS weightings, "ridge" for
random kitchen sinks) candidates that differ only in ``reg`` share their features: one pass over
the data accumulates the normal equations of every fold (the training-fold system is the total
minus the fold's own block), each (fold, reg) pair costs one T x T factorisation, and a second
pass scores all reg values of all folds at once. A search over ``reg`` alone therefore costs
about two fits plus the factorisations, whatever the number of reg values and folds. The folds
and the scoring are rwtool.model_selection._selection's (shared with the iterative solvers'
``reg="auto"``; the least-squares ``reg="auto"`` chooses from per-fold sums alone,
rwtool.solvers._from_sums); the shared pass is the estimators' own ``_reg_path_scores``.

Every fit runs in the calling thread, one after the other, so numba's parallel kernels are never
entered from two threads at once. This module chooses parameters; it does not define models and
imports no estimator module.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._base import (BaseEstimator, check_is_fitted, check_random_state, check_sample_weight,
                     check_scalar)
from ..exceptions import NumericalError
from ..features._instantiation import KERNELS, resolve
from ..progress import make_progress
from ._distributions import Choice, LogUniform, Uniform
from ._selection import clone as _clone
from ._selection import cross_validate as _cross_validate
from ._selection import kfold_indices, select_reg

__all__ = ["LogUniform", "Uniform", "Choice", "default_space", "kfold_indices",
           "RandomizedSearchCV", "select_reg"]


def default_space(estimator) -> dict:
    """The search space of seed 003 Table 14 / EXPERIMENTS.md for an rwtool estimator.

    RKHS weightings: sigma ~ logU(0.01, 10), reg ~ logU(1e-12, 1e-4), and theta ~ U(0.01, 0.9)
    (RWSign, RWRelu), kappa ~ U(1.5, 50) (RWExpSign) or U(1.5, 100) (RWExpRelu), gamma ~
    logU(0.01, 10) (RWStumps); an rwtool.Instantiation gets the same by kernel
    (_instantiation_space). Random kitchen sinks: reg ~ logU(1e-5, 1e-3), Table 14's lam2,
    which is rwtool's reg: the paper's RKS objective (its eq. 24) (1/m) sum (f - y)^2 +
    (lam2/T) ||a||^2 with f = (1/T) sum a_t phi_t is rwtool's on phi / sqrt(T) with
    b = a / sqrt(T). Table 14 gives no width for the kitchen sinks' feature distribution; rwtool
    also searches sigma ~ logU(0.01, 10), the range of the weightings' same distribution, so
    that neither family is held at an arbitrary width. Other estimators: a space must be given.
    """
    name = type(estimator).__name__
    if name.startswith("RW"):
        space = {"sigma": LogUniform(0.01, 10), "reg": LogUniform(1e-12, 1e-4)}
        inst = resolve(estimator.instantiation)
        if not isinstance(inst, str):
            space.update(_instantiation_space(inst))
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

# ----------------------------------------------------------------------------- the search

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

    def fit(self, X, y, sample_weight=None, callback=None):
        """Draw, cross-validate and (optionally) refit; returns self.

        ``sample_weight`` (one weight >= 0 per row) weighs each fold's fit and its validation
        score, and the refit; it takes the route that refits every candidate on every fold
        (the shared per-fold sums are unweighted)."""
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
        weights = check_sample_weight(sample_weight, len(y_arr))
        is_clf = getattr(self.estimator, "_estimator_type", None) == "classifier"
        folds = kfold_indices(y_arr, int(self.cv), is_clf, rng)
        scores, times = _cross_validate(template, candidates, X, y_arr, folds, self.scoring,
                                        progress, weights)
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
            if weights is None:
                self.best_estimator_.fit(X, y)
            else:
                self.best_estimator_.fit(X, y, sample_weight=weights)
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


def _instantiation_space(instantiation) -> dict:
    """The width parameter 003 Table 14 searches for an Instantiation (closed forms:
    :func:`default_space`).

    Gaussian kernel: theta ~ U(0.01, 0.9); exponential: kappa ~ U(1.5, 50); indicator-gaussian
    and polynomial: gamma ~ logU(0.01, 10); user kernels take no width.
    """
    inst = resolve(instantiation)
    kernel = inst.kernel.lower()
    if kernel == "gaussian":
        return {"theta": Uniform(0.01, 0.9)}
    if kernel == "exponential":
        return {"kappa": Uniform(1.5, 50)}
    if kernel in KERNELS:
        return {"gamma": LogUniform(0.01, 10)}
    return {}
