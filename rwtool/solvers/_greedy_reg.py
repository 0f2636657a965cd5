"""reg="auto" for the greedy multi-kernel learners: the ridge weight chosen by cross-validation.

Seed 004 tunes lam on {1e-5, ..., 1e5} (Section 5) and reports the best; no single fixed value
serves every data set (diabetes wants 1e-2, abalone 1e-5, wine 1e-3; docs/GREEDY_MK.md). The
choice here: the training rows are cut, by a permutation drawn from the estimator's
random_state, into N_FOLDS folds; for each candidate lam the whole learner (for MFGA the greedy
path, since the refits and therefore the later selections depend on lam) is fitted on all folds
but one and scored on that one (mean squared error of the coded targets, or the 0-1 error),
averaged over the folds; the choice is the best by the rule every reg="auto" shares
(sufficient.best_index: the largest lam tied with the best), and while it sits at an end of the
grid the grid grows by a decade that way (sufficient.grow_grid). The estimator then refits on
all rows at the chosen lam. A single 1/4 holdout was tried first: on diabetes (331 rows) it
chose 1e-3 (test MSE 0.535) where 4 folds choose 1e-2 (0.485). From HOLDOUT_ROWS training rows
on, only the first fold is held out (N / 4 >= 1000 held-out rows), a quarter of the search: on
20000 synthetic rows (d = 20) the 4 folds cost 11.6 times the fixed-lam fit, one holdout 3.3
times, and both choose among candidates whose held-out errors agree to 3 digits.

The work shared across candidates: the estimator evaluates the dictionary of all rows once
(materialised within ``DENSE_BUDGET`` bytes), so a candidate's greedy path costs products with
a stored matrix instead of dictionary evaluations.

This module knows learners only through a ``loss_of(lam)`` function; it must not import
estimators.
"""

from __future__ import annotations

import numpy as np

from ..progress import make_progress
from ._sufficient import best_index, grow_grid

__all__ = ["AUTO_REG", "N_FOLDS", "HOLDOUT_ROWS", "DENSE_BUDGET", "fold_splits", "choose_reg"]

#: the reg="auto" candidates (increasing; the grid grows past an end when the choice sits there)
AUTO_REG = tuple(10.0 ** e for e in range(-6, 1))
#: folds of the cross-validation (each row is held out once)
N_FOLDS = 4
#: from this many training rows on, only the first fold is held out (a 1/4 holdout): its
#: N / 4 >= 1000 held-out rows score a candidate well enough, at a quarter of the cost
HOLDOUT_ROWS = 4000
#: bytes the search may hold in materialised dictionary columns: those of all rows (at most
#: half of it) and one fold's copy of its fit rows
DENSE_BUDGET = 256 * 2**20


def fold_splits(n_samples: int, seed: int, n_folds: int = N_FOLDS):
    """``[(fit_rows, held_out_rows), ...]``, sorted, one pair per fold: a permutation of
    range(n) drawn with ``seed`` cut into min(n_folds, n) nearly equal held-out parts (n >= 2);
    only the first pair from ``HOLDOUT_ROWS`` rows on."""
    n = int(n_samples)
    if n < 2:
        raise ValueError(f"reg='auto' needs at least 2 training rows to hold one out, got "
                         f"n_samples = {n}; add rows or pass a number for reg")
    perm = np.random.default_rng(int(seed)).permutation(n)
    parts = np.array_split(perm, min(int(n_folds), n))
    used = 1 if n >= HOLDOUT_ROWS else len(parts)
    return [(np.sort(np.concatenate(parts[:f] + parts[f + 1:])), np.sort(parts[f]))
            for f in range(used)]


def choose_reg(loss_of, grid=AUTO_REG, progress=None):
    """``(best, table)``: the candidate with the least held-out loss ``loss_of(lam)`` (>= 0,
    NaN for a failed candidate) by :func:`sufficient.best_index`, the grid extended a decade
    past an end while the choice sits there (:func:`sufficient.extension`).

    ``progress`` gets stage "search" (done = candidates scored, metric ``best_loss``). The
    table lists ``reg`` (increasing) and ``val_loss``.
    """
    progress = make_progress(progress)
    grid = sorted(float(v) for v in grid)
    scored: dict[float, float] = {}

    def score(regs):
        for r in regs:
            if r not in scored:
                scored[r] = float(loss_of(r))
                finite = [v for v in scored.values() if np.isfinite(v)]
                progress.update(len(scored), force=True,
                                best_loss=min(finite) if finite else float("nan"))

    progress.start("search", len(grid))
    grid = grow_grid(grid, score, lambda g: [-scored[r] for r in g], ceiling=0.0,
                     max_extend=None)
    progress.end()
    losses = [scored[r] for r in grid]
    best = grid[best_index([-v for v in losses], ceiling=0.0)]
    return best, {"reg": grid, "val_loss": losses}
