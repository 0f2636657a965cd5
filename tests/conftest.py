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


@pytest.fixture
def traced_peak():
    """A function running ``fn()`` and returning the peak bytes tracemalloc saw it allocate
    (numpy reports its buffers to tracemalloc), the oracle of the ``_estimate_fit`` tests."""
    import tracemalloc

    def run(fn):
        tracemalloc.start()
        try:
            fn()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    return run


@pytest.fixture(scope="session")
def scale_data():
    """Rows on unequal scales and offsets (standardisation matters), a smooth regression target
    and three classes: the streaming and Dask tests compare models fitted on it."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4)) * [1.0, 3.0, 0.5, 10.0] + [0.0, 5.0, -1.0, 2.0]
    y = np.sin(X[:, 0]) + 0.1 * X[:, 1] + 0.1 * rng.normal(size=600)
    labels = np.array(["a", "b", "c"])[(X[:, 0] > 0).astype(int) + (X[:, 2] > -0.5)]
    return X, y, labels


@pytest.fixture(scope="session")
def stored_model_data():
    """The rows the model files of tests/data (written before a default changed) were fitted
    and evaluated on: np.random.default_rng(7), 90 x 3, a binary and a real target."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((90, 3))
    y = np.where(X[:, 0] + X[:, 1] ** 2 > 0.5, 1, 0)
    yr = np.sin(X[:, 0]) + X[:, 2]
    return X, y, yr


@pytest.fixture(scope="session")
def from_hex():
    """Exact floats back from the float.hex strings stored beside those model files."""
    return lambda values: np.array([float.fromhex(v) for v in values])
