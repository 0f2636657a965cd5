"""benchmarks/papers/sgd_rf_experiment.py: the four-squares data of seed 002 Section 5 and its
Bayes rule (oracle: the generator's own definition, P(Y = 1 | x) = 0.8 or 0.2, by counting)."""

import numpy as np
import pytest

pytest.importorskip("benchmarks",
                    reason="the benchmark scripts are in a checkout, not in an installed rwtool")
from benchmarks.papers.sgd_rf_experiment import bayes_predict, four_squares  # noqa: E402

def test_four_squares_generator():
    rng = np.random.default_rng(0)
    X, y = four_squares(100_000, rng)
    assert np.all(np.abs(X) >= 0.1) and np.all(np.abs(X) <= 1.0)
    xor = X[:, 0] * X[:, 1] > 0
    assert np.mean(y[xor] == 1) == pytest.approx(0.8, abs=0.006)
    assert np.mean(y[~xor] == 1) == pytest.approx(0.2, abs=0.006)
    assert np.mean(bayes_predict(X) != y) == pytest.approx(0.2, abs=0.0025 * 2)
