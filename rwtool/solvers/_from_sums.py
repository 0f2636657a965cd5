"""An RW/RKS model solved from its sufficient statistics, and reg="auto" decided from them.

The exact least-squares estimators (RW "lstsq", RKS "ridge") and the Lasso in Gram mode learn
from per-fold sums A_f, B_f (rwtool.solvers._sufficient). Whatever produced the sums -- ``fit``
on an in-memory array, ``partial_fit`` chunks (rwtool.scale._streaming), the partitions of a Dask
collection (rwtool.scale._dask) -- the model is solved here, by one function, so reg="auto"
is one criterion in every mode: a row's fold is a hash of its position in the data
(sufficient.fold_of, ``AUTO_FOLDS`` folds), each candidate is solved on the other folds and
scored on its own fold -- R^2 from the sums for regressors, accuracy on a position-hashed
validation sample kept beside the sums for classifiers (sufficient.ValidationSample) -- and the
grid grows past an end the choice sits at (sufficient.select_reg). The same data in any
chunking chooses the same reg.

This module orchestrates; it holds no formula and must not import the estimator classes,
rwtool.scale._streaming or Dask (they import it).
"""

from __future__ import annotations

import time

from ..exceptions import check_finite_result
from ..progress import make_progress
from ._lasso import lasso_gram
from ._lasso_cv import lasso_cv
from ._posterior import noise_variance
from ._ridge import GramRows
from ._sufficient import SufficientStats, search_columns, select_reg

__all__ = ["FROM_SUMS_SOLVERS", "AUTO_FOLDS", "SMALL_DATA_REG", "MIN_FOLD_ROWS", "VALIDATION_ROWS", "empty_stats",
           "sample_columns", "can_cross_validate", "solve_from_stats"]

#: solvers that learn from the sums alone: fit's reg="auto" from per-fold sums over
#: position-hashed folds, partial_fit and Dask inputs
FROM_SUMS_SOLVERS = ("lstsq", "ridge", "lasso")
#: folds kept apart when reg is chosen from the sums
AUTO_FOLDS = 3
#: reg=None on data too small to cross-validate (the value the estimators defaulted to before)
SMALL_DATA_REG = 1e-6
#: reg=None cross-validates when every fold holds at least this many rows
MIN_FOLD_ROWS = 2
#: rows of the validation sample a classifier keeps to score reg by accuracy
#: (sufficient.ValidationSample: all rows up to this many, a position-hashed sample beyond)
VALIDATION_ROWS = 10000


def empty_stats(est, fmap, n_outputs: int, n_folds: int | None = None,
                weight_sum: float | None = None) -> SufficientStats:
    """The empty sums a fit of ``est`` accumulates: ``AUTO_FOLDS`` folds when reg is chosen
    from them (``n_folds`` None and reg "auto"), and then, for a classifier, a validation
    sample of ``VALIDATION_ROWS`` rows; one fold for a fixed reg. ``weight_sum``: the total
    weight of all the rows the sums will hold (an in-memory fit), so the sample keeps the
    features the search scores with (:func:`sample_columns`) instead of the rows, and the
    folds keep their sums of those columns alone (``fold_features``), the total of all of
    them beside."""
    auto = n_folds is None and est._auto_reg()
    F = (AUTO_FOLDS if auto else 1) if n_folds is None else int(n_folds)
    sample = VALIDATION_ROWS if auto and est._estimator_type == "classifier" else 0
    columns = (None if not auto or weight_sum is None
               else sample_columns(est, fmap, weight_sum))
    return SufficientStats(fmap.n_output_, n_outputs, F, sample_rows=sample,
                           sample_features=columns if sample and columns else 0,
                           fold_features=columns)


def sample_columns(est, fmap, weight_sum: float) -> int:
    """The leading feature columns a validation sample captures, and the per-fold sums keep,
    for the search on rows of total weight ``weight_sum``: at least those :func:`select_reg`
    scores with
    (``search_columns`` is non-decreasing in the weight, and one more unit covers the rounding
    of weight sums added in another order), every column for the Lasso's path."""
    if est._validate() == "lasso":
        return fmap.n_output_
    return search_columns(fmap, float(weight_sum) + 1.0)


def can_cross_validate(stats: SufficientStats) -> bool:
    """Whether reg=None chooses reg by cross-validation on these sums (every fold holds at least
    ``MIN_FOLD_ROWS`` rows), rather than falling back to ``SMALL_DATA_REG``."""
    # weight sums, so that a row of weight 3 counts as its three copies would
    return stats.n_folds >= 2 and float(stats.w.min()) >= MIN_FOLD_ROWS


def solve_from_stats(est, fmap, stats: SufficientStats, callback=None):
    """Set the fitted attributes of ``est`` from the sums: choose reg if "auto", then solve.

    Least squares: (A + m reg R + m eps I) a = B (R = G for the RKHS weightings); Lasso: the
    Gram form (A / m, B / m, ||y||^2 / m). reg="auto" (or reg=None on a least-squares solver
    or the Lasso) chooses among ``est._auto_grid(solver)`` by
    :func:`rwtool.solvers._sufficient.select_reg`, the Lasso along its path from lam_max by
    :func:`rwtool.solvers._lasso_cv.lasso_cv` (same folds, same score);
    reg=None on sums too small to cross-validate (:func:`can_cross_validate`) uses
    ``SMALL_DATA_REG`` and sets ``reg_search_`` to None. Non-finite coefficients raise
    NumericalError.
    """
    solver = est._validate()
    progress = make_progress(callback)
    lasso = solver == "lasso"
    eps = float(est.eps) if est._family == "rw" and not lasso else 0.0
    classifier = est._estimator_type == "classifier"
    R = None
    if fmap.has_gram and not lasso:
        # a classifier keeps no posterior: G's leading block for the search and G's rows a
        # panel at a time into the final system, as the fixed-reg fit (never G whole: a fresh
        # T x T, 512 MB at T = 8000, and exp of its upper triangle)
        R = (GramRows(fmap) if classifier and hasattr(fmap, "gram_rows") else fmap.gram())
    t0 = time.perf_counter()
    auto = est._auto_reg()
    table, coef = None, None
    max_iter = 1000 if est.max_iter is None else int(est.max_iter)
    if auto and stats.n_folds < 2:
        raise ValueError("reg='auto' needs the per-fold sums, but this stream started with a "
                         "fixed reg (one fold); start it with reg='auto' or pass a number")
    if auto and est.reg is None and not can_cross_validate(stats):
        reg = SMALL_DATA_REG
    elif auto and lasso:
        # the Lasso's own candidates: its warm-started path from lam_max, same folds and score
        coef, info, reg, table = lasso_cv(stats, classifier, tol=float(est.tol),
                                          max_iter=max_iter, progress=progress,
                                          feature_map=fmap)
        info["mode"] = "gram"
    elif auto:
        reg, table = select_reg(stats, est._auto_grid(solver), classifier, R, eps,
                                progress=progress, feature_map=fmap)
    else:
        reg = float(est._resolve_reg(solver))
    progress.start("solve", 1)
    if coef is not None:
        pass            # the Lasso, solved with its path above
    elif lasso:
        coef, info = lasso_gram(*stats.gram_form(), reg, path_length=int(est.path_length),
                                tol=float(est.tol), max_iter=max_iter)
        info["mode"] = "gram"
    else:
        # a classifier keeps no posterior: its system formed and factored in the sums' memory
        coef, solved = stats.solve(reg, R, eps, spend=classifier)
        info = {"jitter": solved["jitter"], "method": solved["method"]}
        if not classifier and solved["chol"] is not None:
            info["posterior"] = (solved["chol"], noise_variance(   # predict's return_std
                solved["A"], solved["B"], stats.yy.sum(axis=0), solved["m"], coef,
                solved["chol"]))
    check_finite_result(coef, solver=solver, fix="raise reg, lower sigma or standardise X")
    progress.end()
    est._fit_reg = float(reg)
    est._set_fitted(fmap, coef, info, t0)
    if auto:
        est.reg_, est.reg_search_ = float(reg), table
    return est
