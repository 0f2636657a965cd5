"""The Gram matrices of the closed-form kernels, shared by the closed forms and Monte Carlo.

The Gaussian kernel exp(-||u - w||^2 / two_h2) between two sets of centres, and the stumps'
indicator-Gaussian kernel 1[u1 = w1] exp(-(u2 - w2)^2 / (2 g^2)). Both the closed-form maps
(_rkhs) and the Monte Carlo sections (_montecarlo) evaluate them; this module must not import
either.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..threads import read_only, run_row_shares


def _gaussian_gram(A: np.ndarray, B: np.ndarray, two_h2: float, sq_a=None,
                   sq_b=None) -> np.ndarray:
    """exp(-||a_i - b_j||^2 / two_h2) with the cross product on BLAS; ``sq_a``, ``sq_b``: the
    rows' squared norms (einsum of each row with itself) when the caller has them."""
    D = A @ B.T
    D *= -2.0
    D += (np.einsum("ij,ij->i", A, A) if sq_a is None else sq_a)[:, None]
    D += (np.einsum("ij,ij->i", B, B) if sq_b is None else sq_b)[None, :]
    np.maximum(D, 0.0, out=D)  # rounding can make ||a - b||^2 slightly negative
    D *= -1.0 / two_h2
    return np.exp(D, out=D)


@njit(cache=True, nogil=True)
def _stump_gram_rows(idx_a, thr_a, idx_b, thr_b, inv_two_g2, G, a, b):
    for i in range(a, b):
        for j in range(idx_b.shape[0]):
            if idx_a[i] == idx_b[j]:
                d = thr_a[i] - thr_b[j]
                G[i, j] = math.exp(-d * d * inv_two_g2)


def _stump_gram(idx_a, thr_a, idx_b, thr_b, inv_two_g2):
    """K(u, w) = 1[u1 = w1] exp(-(u2 - w2)^2 / (2 g^2)) between two sets of stumps (the rows
    shared among threads, rwtool.threads)."""
    G = np.zeros((idx_a.shape[0], idx_b.shape[0]))
    # read-only views: a loaded model's centres are read-only, a fitted one's not (one
    # signature either way)
    idx_a, thr_a, idx_b, thr_b = map(read_only, (idx_a, thr_a, idx_b, thr_b))
    run_row_shares(lambda a, b: _stump_gram_rows(idx_a, thr_a, idx_b, thr_b, inv_two_g2, G,
                                                 a, b), *G.shape)
    return G
