"""Shared test configuration: Qt offscreen, fixed seeds, small generated data."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture
def binary_data(rng):
    X = rng.standard_normal((300, 4))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 - 0.5 > 0, 1, 0)
    return X, y


@pytest.fixture
def regression_data(rng):
    X = rng.uniform(-2, 2, size=(300, 3))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] * X[:, 2] + 0.05 * rng.standard_normal(300)
    return X, y
