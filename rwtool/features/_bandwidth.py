"""Data-scaled bandwidths of Gaussian kernels: what sigma to use when the user gives none.

Three rules, each a number computed from the (preprocessed) training inputs:

* ``scale_sigma``: sqrt(d Var(X) / 2), the bandwidth of scikit-learn's gamma="scale"
  (k(x, y) = exp(-gamma ||x - y||^2) with gamma = 1 / (d Var X), and gamma = 1 / (2 sigma^2));
* ``median_sigma``: the median distance between two training rows (the median heuristic);
* ``knn_sigma``: the mean distance from a row to its k-th nearest neighbour (seed 004 Sec. 5,
  after Yu et al.; k = 50 in the paper).

This module computes numbers only; estimators decide which rule is their default.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .._base import check_array, check_random_state, check_scalar

__all__ = ["scale_sigma", "median_sigma", "knn_sigma"]

#: floats in one block of query-to-row distances of knn_sigma (8 MB)
_BLOCK_FLOATS = 2**20


def scale_sigma(X, weights=None) -> float:
    """sqrt(d Var(X) / 2): the bandwidth of scikit-learn's gamma="scale" (gamma = 1 / (d Var X)).

    Var is the variance of all entries of X together (each row's entries weighted by
    ``weights`` when given: a row of weight 2 counts as two copies of it); on standardised
    inputs this is sqrt(d' / 2) with d' the number of non-constant columns, the typical
    distance between two rows divided by 2. Returns 0.0 for a constant X.
    """
    X = np.asarray(X, dtype=float)
    if X.size == 0:
        return 0.0
    if weights is None:
        var = float(X.var())
    else:
        mean = float(weights @ X.mean(axis=1)) / float(weights.sum())
        var = float(weights @ ((X - mean) ** 2).mean(axis=1)) / float(weights.sum())
    return float(math.sqrt(X.shape[1] * var / 2.0))


def median_sigma(X, n_rows: int = 1000, random_state=None) -> float:
    """The median of ||x_i - x_j|| over the pairs i < j of (a random subset of) the rows of X.

    ``n_rows`` rows are drawn without replacement when X has more (an estimate of the same
    median at O(n_rows^2 d) cost). Returns 0.0 when more than half the pairs coincide.
    """
    X = check_array(X, min_samples=2)
    check_scalar(n_rows, "n_rows", numbers.Integral, low=2)
    if X.shape[0] > n_rows:
        X = X[np.sort(check_random_state(random_state).choice(X.shape[0], int(n_rows),
                                                              replace=False))]
    sq = np.einsum("ij,ij->i", X, X)
    d2 = sq[:, None] + sq[None, :] - 2.0 * (X @ X.T)
    iu = np.triu_indices(X.shape[0], 1)
    return float(math.sqrt(max(float(np.median(d2[iu])), 0.0)))


def knn_sigma(X, k: int = 50, n_queries: int | None = None, random_state=None,
              block_size: int = 512, tick=None) -> float:
    """Mean distance from a point to its k-th nearest other training point (seed 004 Sec. 5).

    The paper takes sigma = (1/N) sum_n ||x_n - x_(n,k)|| with k = 50 (after Yu et al.). The
    neighbours are searched among all rows; ``n_queries`` averages over a random subset of query
    rows instead of all N (an unbiased estimate of the same mean at O(n_queries N d) cost).
    ``tick(queries_done)`` is called after each block of queries when given (progress and
    cancellation).
    """
    X = check_array(X, min_samples=2)
    N = X.shape[0]
    check_scalar(k, "k", numbers.Integral, low=1, high=N - 1)
    check_scalar(n_queries, "n_queries", numbers.Integral, low=1, allow_none=True)
    if n_queries is None or n_queries >= N:
        queries = np.arange(N)
    else:
        queries = np.sort(check_random_state(random_state).choice(N, int(n_queries),
                                                                  replace=False))
    sq = np.einsum("ij,ij->i", X, X)
    total = 0.0
    # a block is queries x N distances, about 8 MB at most: 512 queries of 150,000 rows took
    # 614 MB per temporary, 2.9 GB at the peak of a fit (issue 24)
    step = max(1, min(int(block_size), _BLOCK_FLOATS // N))
    for start in range(0, len(queries), step):
        q = queries[start:start + step]
        d2 = sq[q, None] + sq[None, :]
        G = X[q] @ X.T
        G *= 2.0
        d2 -= G                 # sq_q + sq - 2 <x_q, x>, as one expression gave it
        del G
        # The query itself sits at distance ~0: the k-th other point is order statistic k.
        d2[np.arange(len(q)), q] = -1.0
        kth = np.partition(d2, k, axis=1)[:, k]
        if tick is not None:
            tick(start + len(q))
        total += np.sqrt(np.maximum(kth, 0.0)).sum()
    return float(total / len(queries))
