"""Permutation importance of a run's model on its held-out rows, and its CSV.

:func:`measure` runs in the app's fit process: rwtool.inspect.permutation_importance on the run's
test rows (its training rows when it has none, which the result says), one group per CSV column
(rwtool.report.column_groups: a text column's one-hot columns are shuffled together), with the
job's progress callback, so that the bar moves and Cancel stops it between two scores. It
returns plain numbers the results panel draws and :func:`importance_columns` exports.

This module computes and formats; it must not import Qt or draw.
"""

from __future__ import annotations

import numpy as np

from rwtool.inspect import permutation_importance
from rwtool.report import column_groups, importance_rows, scoring_words

__all__ = ["measure", "importance_columns", "N_REPEATS", "SEED"]

#: shuffles per column and their seed (fixed, so that a run's importance can be reproduced with
#: rwtool.inspect.permutation_importance(..., n_repeats=5, random_state=0))
N_REPEATS, SEED = 5, 0


def measure(est, X, y, preprocessing=None, *, on: str = "test", callback=None,
            n_repeats: int = N_REPEATS, random_state: int = SEED) -> dict:
    """The permutation importance of ``est`` on (X, y), one row per CSV column, most important
    first: ``{"columns", "mean", "std", "share", "share_meaning", "measures", "baseline",
    "on", "n_rows", "n_repeats", "seed"}`` (``share`` None when the model holds no exact
    share). Raises rwtool.FitCancelled when ``callback`` cancels."""
    names, groups = column_groups(preprocessing, X.shape[1])
    res = permutation_importance(est, X, y, n_repeats=n_repeats, random_state=random_state,
                                 groups=groups, callback=callback)
    rows = importance_rows(res, names)
    return {"columns": [r.column for r in rows],
            "mean": np.array([r.mean for r in rows]), "std": np.array([r.std for r in rows]),
            "share": None if res.share is None else np.array([r.share for r in rows]),
            "share_meaning": res.share_meaning, "measures": scoring_words(res.scoring, est),
            "baseline": res.baseline_score, "on": on, "n_rows": int(X.shape[0]),
            "n_repeats": int(n_repeats), "seed": random_state}


def importance_columns(imp: dict) -> dict:
    """The CSV columns of a measured importance: column, mean, std (and share when the model
    has one), most important first."""
    cols = {"column": list(imp["columns"]), "importance_mean": np.asarray(imp["mean"], float),
            "importance_std": np.asarray(imp["std"], float)}
    if imp.get("share") is not None:
        cols["share"] = np.asarray(imp["share"], float)
    return cols
