"""The rows a weighted fit keeps: a row of weight 0 is absent from it.

:func:`weighted_rows` drops such rows before the estimator computes anything from the rows
(standardisation, bandwidth rules, the targets' range and classes), and scales the other
weights to mean 1: for the estimators that take ``sample_weight`` as whole rows (BKerNN and
GreedyMK). :func:`present_rows` drops them later, for the estimators that compute those
statistics with the weights themselves (the random-feature models, RFSGD) and hand only the
rows of weight above zero to their solvers. This module holds no numerics of the solvers.
"""

from __future__ import annotations

import numpy as np

from .._base import check_sample_weight

__all__ = ["weighted_rows", "present_rows"]


def _rows(a) -> int:
    """Rows of any array-like: a list, a DataFrame or Series, or an object with only
    ``__array__``."""
    return len(a) if hasattr(a, "__len__") else len(np.asarray(a))


def weighted_rows(X, y, sample_weight):
    """``(X, y, w)``: the rows of weight above zero and their weights scaled to mean 1 (only
    the ratios of the weights matter to the weighted objectives; mean 1 keeps weighted sums on
    the scale of the unweighted ones). ``sample_weight=None`` gives ``(X, y, None)``. The
    weights are checked by :func:`rwtool._base.check_sample_weight`; X and y keep their types
    (a DataFrame stays one), so the estimator validates them as without weights.
    """
    if sample_weight is None:
        return X, y, None
    n = _rows(y)
    w = check_sample_weight(sample_weight, n)
    keep = w > 0
    if not keep.all():
        if _rows(X) != n:
            raise ValueError(f"X has {_rows(X)} rows but y has {n}; pass one target per row")
        X = X.iloc[keep] if hasattr(X, "iloc") else np.asarray(X)[keep]
        y = y.iloc[keep] if hasattr(y, "iloc") else np.asarray(y)[keep]
        w = w[keep]
    return X, y, w * (len(w) / w.sum())


def present_rows(weights, *arrays):
    """``(*arrays, weights)`` restricted to the rows of weight above zero (numpy arrays, one
    row per weight): a row of weight 0 is absent from what is computed next. Unchanged (the
    same objects) when ``weights`` is None or has no zero."""
    if weights is None or weights.all():
        return (*arrays, weights)
    keep = weights > 0
    return (*(a[keep] for a in arrays), weights[keep])
