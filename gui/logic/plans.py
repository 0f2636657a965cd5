"""How a run uses its rows: the plans the worker thread executes for a Train.

A plan fits the configured estimator and returns what it learned besides the model:

- :class:`Holdout` fits on the training rows; the held-out rows (the Data tab's test
  fraction) are evaluated afterwards, as always.
- :class:`KFold` first scores k clones of the estimator on a (stratified) k-fold split of the
  training rows and reports each metric's mean and spread over the folds, then fits the model
  that is shown and saved on every training row (a holdout fraction, if any, is still
  evaluated on top).
- :class:`Search` runs rwtool.model_selection.RandomizedSearchCV with the papers' search space over
  the training rows, then hands the best parameters to its inner plan (Holdout or KFold). The
  k-fold figures of a searched model reuse the rows the search chose on, so they are optimistic;
  the held-out rows, which the search never sees, give the honest figure.

This is also where other sources of rows plug in (a file streamed in chunks through
``partial_fit``, BKerNN at scale): a new plan implements ``fit`` and ``n_fits``; the worker,
the progress events and the result panels stay as they are.

Plans run on the worker thread; they must not touch widgets.
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field

import numpy as np

from rwtool.progress import FitCancelled, ProgressEvent
from rwtool.model_selection import clone as _clone

from .evaluate import drawn_rows

__all__ = ["Holdout", "KFold", "Search", "search_space", "validation_sample", "supports",
           "VALIDATION_SAMPLE"]

#: held-out rows of the live validation curve: enough for its shape (the error of a sample of
#: 2000 rows is within about 0.01 of the whole set's), few enough that a point costs
#: milliseconds; rwtool's SGD also spends at most a tenth of the fit on it
VALIDATION_SAMPLE = 2000


def validation_sample(X, y, n: int = VALIDATION_SAMPLE, seed: int = 0):
    """(X, y) of at most ``n`` rows drawn without replacement (fixed seed, in row order: the
    rows :func:`gui.logic.evaluate.drawn_rows` picks)."""
    idx = drawn_rows(len(X), n, seed)
    return (X, y) if idx is None else (X[idx], np.asarray(y)[idx])


#: a reg a candidate of the search could draw, for its cost (the work of a fit does not depend
#: on reg's value, only on whether it is chosen by cross-validation)
SEARCH_REG = 1e-6


def _cv_sizes(n: int, k: int, count: int) -> list:
    """``count`` fits of a k-fold split of n rows: (n - n/k training rows, n/k scored)."""
    held = int(n) // int(k)
    return [(int(n) - held, held)] * int(count)


def _report(callback, event) -> None:
    """Send ``event`` to ``callback`` (if any); its True (cancel) raises FitCancelled."""
    if callback is not None and callback(event):
        raise FitCancelled(f"cancelled during {event.stage}")


def supports(fn, name: str) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def search_space(est):
    """The papers' search space for ``est`` (rwtool.model_selection.default_space), or raise
    ValueError saying which methods have one."""
    from rwtool.model_selection import default_space
    try:
        return default_space(est)
    except ValueError:
        raise ValueError(f"rwtool has the papers' search spaces for the RKHS weightings and "
                         f"the random kitchen sinks (seed 003 Table 14), not for "
                         f"{type(est).__name__}") from None


@dataclass
class Holdout:
    """Fit on the training rows (the held-out rows are evaluated by the worker)."""

    name = "holdout"
    #: the form controls that set ``folds()`` (named by the preflight's class-count check)
    folds_what = "k-fold evaluation"

    def folds(self) -> int | None:
        return None

    def cv_k(self) -> int | None:
        """Folds of the cross-validated figures the run reports (None: no k-fold figures)."""
        return None

    def n_fits(self) -> int:
        return 1

    def fit_sizes(self, n_train: int, n_test: int = 0, est=None, weighted: bool = False) -> list:
        """The run's fits as (training rows, rows predicted after it[, parameters of that fit
        when they differ from ``est``'s]): the fit on the training rows, then the evaluation's
        predictions on them and on the held-out rows."""
        return [(int(n_train), int(n_train) + int(n_test))]

    def describe(self) -> str:
        return "holdout"

    def fit(self, est, job, callback, weights=None) -> dict:
        kwargs = {"callback": callback}
        if job.X_test is not None and len(job.X_test) and supports(est.fit, "eval_set"):
            kwargs["eval_set"] = validation_sample(job.X_test, job.y_test)
        if weights is None:
            est.fit(job.X_train, job.y_train, **kwargs)
        else:
            est.fit(job.X_train, job.y_train, sample_weight=weights, callback=callback)
        return {}


@dataclass
class KFold:
    """k-fold cross-validated metrics (mean and spread), then the fit on every training row."""

    k: int = 5
    random_state: int | None = 0
    name = "k-fold"
    folds_what = "k-fold evaluation"

    def folds(self) -> int | None:
        return self.k

    def cv_k(self) -> int | None:
        return self.k

    def n_fits(self) -> int:
        return self.k + 1

    def fit_sizes(self, n_train: int, n_test: int = 0, est=None, weighted: bool = False) -> list:
        """k fits on (k-1)/k of the training rows, each scoring its held-out fold, then the
        holdout fit (Holdout.fit_sizes)."""
        return (_cv_sizes(n_train, self.k, self.k)
                + Holdout().fit_sizes(n_train, n_test, est, weighted))

    def describe(self) -> str:
        return f"{self.k}-fold cross-validation"

    def fit(self, est, job, callback, weights=None) -> dict:
        from rwtool.model_selection import kfold_indices

        from .evaluate import evaluate
        X, y = job.X_train, np.asarray(job.y_train)
        folds = kfold_indices(y, int(self.k), job.task != "regression", self.random_state)
        per_fold: list[dict] = []
        t0 = time.perf_counter()
        for i, (tr, va) in enumerate(folds):
            # the fold about to run, before its fit's own events: the bar says "fold i of k"
            # beside the fit's stage (gui.panels.training_panel reads "cross-validation")
            _report(callback, ProgressEvent("cross-validation", i, len(folds), {},
                                            time.perf_counter() - t0,
                                            "start" if i == 0 else "update"))
            fold = _clone(est)
            if weights is None:
                fold.fit(X[tr], y[tr], callback=callback)
            else:
                fold.fit(X[tr], y[tr], sample_weight=weights[tr], callback=callback)
            m = evaluate(fold, X[tr], y[tr], X[va], y[va], task=job.task, plots=False,
                         set_names=("fold-train", "fold"), score_train=False,
                         callback=callback)["metrics"]
            per_fold.append({k[len("fold "):]: v for k, v in m.items()
                             if k.startswith("fold ") and isinstance(v, (int, float))})
            score = per_fold[-1].get("error", per_fold[-1].get("R^2", np.nan))
            name = "fold_error" if "error" in per_fold[-1] else "fold_r2"
            _report(callback, ProgressEvent("cross-validation", i + 1, len(folds),
                                            {name: float(score)}, time.perf_counter() - t0,
                                            "end" if i + 1 == len(folds) else "update"))
        metrics = {}
        keys = [k for k in per_fold[0] if all(k in f for f in per_fold)]
        for k in keys:
            vals = np.array([f[k] for f in per_fold], float)
            metrics[f"cv {k}"] = float(vals.mean())
            metrics[f"cv {k} (std over {len(folds)} folds)"] = float(vals.std(ddof=1))
        Holdout().fit(est, job, callback, weights)
        return {"metrics": metrics, "cv": {"k": len(folds), "folds": per_fold}}


@dataclass
class Search:
    """Randomized search (papers' space) on the training rows, then ``then`` at the best."""

    n_iter: int = 20
    cv: int = 3
    random_state: int | None = 0
    then: object = field(default_factory=Holdout)
    name = "search"
    folds_what = "search or k-fold evaluation"

    def folds(self) -> int | None:
        inner = self.then.folds()
        return max(self.cv, inner) if inner else self.cv

    def cv_k(self) -> int | None:
        return self.then.cv_k()

    def n_fits(self) -> int:
        return self.n_iter * self.cv + self.then.n_fits()

    def fit_sizes(self, n_train: int, n_test: int = 0, est=None, weighted: bool = False) -> list:
        """n_iter candidates, then the inner plan's fits. Every candidate draws its reg (a
        number: no reg="auto" choice inside it); the exact least-squares solvers ("lstsq",
        "ridge") score a candidate's folds from the per-fold sums of one pass over the rows
        (rwtool.model_selection.RandomizedSearchCV), the others fit it on each fold and score
        the fold's held-out rows, and so does every solver when the rows are ``weighted``
        (the shared sums are unweighted). The candidates' other parameters (sigma...) change
        what a fit costs little at a given size: the configured estimator's are used."""
        drawn = {"reg": SEARCH_REG}
        solver = (est.get_params().get("solver") if est is not None else None)
        if str(solver).lower() in ("lstsq", "ridge") and not weighted:
            fits = [(int(n_train), 0, drawn)] * int(self.n_iter)
        else:
            fits = [size + (drawn,) for size in _cv_sizes(n_train, self.cv,
                                                          self.n_iter * self.cv)]
        return fits + self.then.fit_sizes(n_train, n_test, est, weighted)

    def describe(self) -> str:
        return (f"randomized search ({self.n_iter} candidates, {self.cv}-fold), then "
                f"{self.then.describe()}")

    def fit(self, est, job, callback, weights=None) -> dict:
        from rwtool.model_selection import RandomizedSearchCV
        search = RandomizedSearchCV(_clone(est), space=search_space(est), n_iter=int(self.n_iter),
                                    cv=int(self.cv), refit=False,
                                    random_state=self.random_state)
        search.fit(job.X_train, job.y_train, sample_weight=weights, callback=callback)
        best = dict(search.best_params_)
        est.set_params(**best)
        out = self.then.fit(est, job, callback, weights)
        out.setdefault("metrics", {})
        out["metrics"]["search: best cv score"] = float(search.best_score_)
        out["search"] = {"best_params": best, "best_score": float(search.best_score_),
                         "table": search.results_table(), "n_iter": int(self.n_iter),
                         "cv": int(self.cv)}
        return out
