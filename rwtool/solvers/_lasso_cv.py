"""The Lasso's reg="auto": a warm-started path from lam_max, chosen by cross-validation from sums.

The squared-loss Lasso J1(a) = (1/(2m)) ||Phi a - y||^2 + lam ||a||_1 (lasso.py) depends on the
data only through Q = Phi^T Phi / m, q = Phi^T y / m and ||y||^2 / m, and so does the squared
error of a fold: with the per-fold sums of sufficient.SufficientStats, the Lasso of the rows
outside fold f is a Gram-form path (lasso.gram_path: O(T) per coordinate that moves, whatever
the number of rows) and its validation error ||Y_f - Phi_f a||^2 = yy_f - 2 a^T B_f + a^T A_f a
comes from the sums too. So the whole choice costs one pass over the data (the sums), like the
reg="auto" of the least-squares solvers, then K + 1 paths on T x T matrices.

The candidates are the geometric grid lam_max, ..., lam_max * ``LAM_RATIO`` (``N_LAMS`` values),
lam_max = max |Phi^T y| / m over the outputs (every coefficient is 0 there), which is
scikit-learn's LassoCV / glmnet's grid; the score is the one every solver's reg="auto" shares
(R^2 from the sums for regression, SufficientStats.validation_scores; accuracy on the
position-hashed validation sample for classification, SufficientStats.sample, when a feature
map is given), averaged over the folds; the choice is the largest lam tied with the best
(sufficient.best_index, the rule every reg="auto" shares). The folds walk down the whole grid
together (accuracy along the path has plateaus and bumps: stopping a few lams after the best
so far chose lam_max / 2.6 on skin RWSign, error 0.067 against 0.019), on below it at the same
ratio while its smallest lam is the best (at most ``MAX_EXTEND`` decades), and stop early
only at a lam where every fold's solve stopped at the sweep cap (the solver no longer follows
the path there). A fold solve stopped at the cap still scores the model the capped final solve
would give. The chosen lam is then solved on all rows along the same path. Used by the
estimators' fit, partial_fit and the Dask backend alike (the sums are the same, so the choice
is too); it must not import estimators or Dask.
"""

from __future__ import annotations

import math

import numpy as np

from ..progress import make_progress
from ..threads import blas_threads_for
from ._lasso import _warn_unconverged, finish_on_support, gram_path
from ._sufficient import FoldAccuracy, best_index, scored_folds

__all__ = ["lasso_cv", "lam_grid", "N_LAMS", "LAM_RATIO", "MAX_EXTEND"]

#: grid of the path: N_LAMS values from lam_max down to lam_max * LAM_RATIO (docs/bench/lasso.md)
N_LAMS, LAM_RATIO = 30, 1e-3
#: decades the path may go on below lam_max * LAM_RATIO while the smallest lam scores best
MAX_EXTEND = 3


def lam_grid(q, n_lams: int = N_LAMS, ratio: float = LAM_RATIO) -> np.ndarray:
    """The decreasing geometric grid from lam_max = max |q| (q = Phi^T Y / m) to lam_max * ratio.

    Empty when q is 0 (every target is 0 or orthogonal to every feature: the Lasso is 0)."""
    top = float(np.max(np.abs(q))) if np.size(q) else 0.0
    if not (top > 0.0 and math.isfinite(top)):
        return np.empty(0)
    return np.geomspace(top, top * ratio, int(n_lams))


def lasso_cv(stats, classifier: bool, n_lams: int = N_LAMS, ratio: float = LAM_RATIO,
             tol: float = 1e-4, max_iter: int = 1000, max_extend: int = MAX_EXTEND,
             warn: bool = True, progress=None, feature_map=None):
    """Cross-validated Lasso from per-fold sums: ``(coef (T, k), info, lam, table)``.

    ``stats``: a SufficientStats with at least two non-empty folds. The folds walk the path
    together, one lam at a time, over the grid and below it while its end is the best; the walk
    stops early only where every fold solve of a lam stopped at ``max_iter`` (module doc).
    ``info`` is the report of the final solve on all rows (as lasso_gram's, ``sweeps`` summed
    along the path, plus the path's ``lams``); ``table`` lists every lam
    scored (increasing) with its mean and standard deviation of the fold scores, the sweeps the
    folds took and how many of them stopped at the cap. A final solve that stops at the
    ``max_iter`` cap raises a :class:`lasso.ConvergenceWarning` (with ``warn``). The classes
    (outputs) are solved one by one, and ``progress`` hears of each: stage "search" counts
    (lam, class) pairs scored -- lams scored, as sufficient.select_reg reports it, when there
    is one output -- with ``best_score`` at the end of each lam, then stage "lasso" the
    (lam, class) pairs of the final path, as lasso.lasso_gram reports them; a cancel raises
    FitCancelled between two classes.
    """
    accuracy, used = scored_folds(stats, classifier, feature_map)
    Q, q, yy = stats.gram_form()
    grid = lam_grid(q, n_lams, ratio)
    T, k = q.shape
    if len(grid) == 0:
        info = {"gap": [0.0] * k, "sweeps": [0] * k, "converged": [True] * k, "lams": [],
                "tol": tol, "nnz": 0}
        return np.zeros((T, k)), info, 0.0, None
    progress = make_progress(progress)
    progress.start("search", len(grid) * k)
    ceiling = 0.0 if classifier and not accuracy else 1.0
    forms = [stats.gram_form(f) for f in used]
    accuracies = FoldAccuracy(stats.sample, feature_map, used, k) if accuracy else None
    score = ((lambda j, c: accuracies(j, c)[0]) if accuracy else
             lambda j, c: stats.validation_scores(used[j], c, classifier)[0])
    coefs = [np.zeros((T, k)) for _ in used]
    step = grid[1] / grid[0] if len(grid) > 1 else 0.1
    floor = grid[-1] * 10.0 ** -max_extend
    lams, scores, sweeps, capped = [], [], [], []
    best, lam = 0, float(grid[0])
    i = 0
    while True:
        row, swp, cap = np.empty(len(used)), 0, 0
        for c in range(k):          # class by class across the folds: progress per class
            for j in range(len(used)):
                Qf, qf, yyf = forms[j]
                a, pinfo = gram_path(Qf, qf[:, c:c + 1], yyf[c:c + 1], [lam], tol, max_iter,
                                     coefs[j][:, c:c + 1])
                coefs[j][:, c] = a[0, :, 0]
                swp += int(pinfo["sweeps"].sum())
                cap += int((~pinfo["converged"]).sum())
            progress.update(i * k + c + 1)
        with blas_threads_for(T):       # A_f @ a per fold: a T x T product per lam
            for j in range(len(used)):
                row[j] = score(j, coefs[j])
        lams.append(lam)
        scores.append(row)
        sweeps.append(swp)
        capped.append(cap)
        if row.mean() > scores[best].mean():
            best = len(lams) - 1
        progress.update(len(lams) * k, force=True, best_score=float(scores[best].mean()))
        i += 1
        if cap == len(used) * k or len(grid) < 2:
            break
        if i < len(grid):
            lam = float(grid[i])
        elif best == len(lams) - 1 and lam * step >= floor * (1 - 1e-9):
            lam *= step     # below the grid while its smallest lam is the best
        else:
            break
    progress.end()
    # the choice: the shared rule of every reg="auto" (the largest lam tied with the best)
    order = np.argsort(lams)
    scores = np.asarray(scores)[order]
    lams_up = np.asarray(lams)[order]
    lam = float(lams_up[best_index(scores.mean(axis=1), ceiling)])
    best = lams.index(lam)
    steps = best + 1
    progress.start("lasso", steps * k)        # lasso_gram's stage: one unit per (lam, class)
    path, pinfo = gram_path(Q, q, yy, lams[:steps], tol, max_iter,
                            on_output=lambda c: progress.update((c + 1) * steps))
    progress.end()
    coef = path[-1]
    gaps = pinfo["gap"][-1].copy()
    for j in range(k):
        # a converged solve ends on the exact solution, whatever summed the rows; a capped one
        # stays capped and warns: its lam was chosen from fold solves capped as well
        if 0.0 < yy[j] and gaps[j] <= tol * yy[j]:
            a = np.ascontiguousarray(coef[:, j])
            gaps[j] = finish_on_support(Q, np.ascontiguousarray(q[:, j]), float(yy[j]), lam, a,
                                        Q @ a, gaps[j])
            coef[:, j] = a
    info = {"gap": gaps.tolist(), "sweeps": pinfo["sweeps"].sum(axis=0).tolist(),
            "converged": (gaps <= tol * yy).tolist(), "lams": lams[:best + 1],
            "tol": tol, "nnz": int(np.count_nonzero(np.any(coef != 0, axis=1)))}
    _warn_unconverged(dict(info, sweeps=pinfo["sweeps"][-1].tolist()), warn, stacklevel=3)
    table = {"reg": lams_up.tolist(), "mean_score": scores.mean(axis=1).tolist(),
             "std_score": scores.std(axis=1).tolist(), "fold_scores": scores.tolist(),
             "sweeps": np.asarray(sweeps)[order].tolist(),
             "capped": np.asarray(capped)[order].tolist(),
             "score": "accuracy" if accuracy else "neg_mse" if classifier else "r2",
             "folds": len(used)}
    return coef, info, lam, table

