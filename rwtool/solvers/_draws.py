"""The rows a stochastic solver visits: uniform draws, or draws in proportion to row weights.

A weighted loss (1 / sum w) sum_i w_i loss_i is realised by drawing row i with probability
w_i / sum w: every step's batch loss is then an unbiased estimate of the weighted loss, the
step sizes keep the bounds they have without weights (a gradient scaled by w_i would not), and
the draws are distributed exactly as uniform draws from the data with each row repeated w_i
times. Without weights the draws are the solvers' historical ones, bit for bit.

This module knows nothing of features or losses; it must not import other solvers.
"""

from __future__ import annotations

import numpy as np

__all__ = ["draw_rows", "visit_order"]


def _probabilities(weights: np.ndarray) -> np.ndarray:
    p = np.asarray(weights, dtype=np.float64)
    return p / p.sum()


def draw_rows(rng: np.random.Generator, m: int, size: int, weights=None) -> np.ndarray:
    """``size`` row indices in [0, m) drawn with replacement: uniformly, or with probability
    proportional to ``weights`` (length m, >= 0, not all zero)."""
    if weights is None:
        return rng.integers(0, m, size=size)
    return rng.choice(m, size=size, p=_probabilities(weights))


def visit_order(rng: np.random.Generator, m: int, weights=None) -> np.ndarray:
    """One epoch's visiting order of m rows: a permutation, or with weights m draws with
    replacement in proportion to them (an epoch is then m steps of the weighted loss)."""
    if weights is None:
        return rng.permutation(m)
    return rng.choice(m, size=m, p=_probabilities(weights))
