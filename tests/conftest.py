"""Shared test configuration: Qt offscreen, fixed seeds, small generated data."""

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# The tests import the checkout's app as gui (it installs as rwtool_gui) and the checkout's
# rwtool: the repository's root goes first on sys.path, as `python -m pytest` run from it does,
# so that a bare `pytest` finds them too.
_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

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


#: fixtures that start a cluster of worker processes (seconds to start and to stop): a test
#: that uses one is marked slow whatever its own work (docs/TESTING.md, the quick subset)
CLUSTER_FIXTURES = {"client", "own_client"}


def pytest_collection_modifyitems(items):
    for item in items:
        if CLUSTER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="module")
def client():
    """A Dask client on a LocalCluster of 2 worker processes, one per test module that asks:
    the Dask backend pickles the model to other processes, as on a real cluster."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


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


#: how far beyond the perturbation spread another machine may land; issue 22 measured the
#: difference between two OpenBLAS builds at 0.2x to 1.7x the spread of the four stored models
ROUNDING_FACTOR = 100.0


@pytest.fixture(scope="session")
def rounding_tolerance():
    """``tolerance(outputs, *arrays)``: the absolute tolerance for comparing ``outputs(*arrays)``
    computed here with values stored on another machine.

    Another BLAS, CPU or thread count sums in another order, which moves every intermediate
    result by a relative error of about one machine epsilon; how far that moves the outputs is
    the conditioning of the computation (for a least-squares fit, of its regularised Gram
    system). Measured by a perturbation check rather than a worst-case bound (cond(M) * eps
    over-estimates it 1e4-fold here): ``outputs`` recomputed with every array perturbed by a
    random relative error of one epsilon, ``draws`` times; the tolerance is ``ROUNDING_FACTOR``
    times the largest change (at least that times one epsilon of the outputs). It is asserted to
    stay below 1e-6 of the outputs, so that the comparison can still fail. Nothing discrete may
    hang on the arrays' bits: reg="auto" folds are a hash of the rows' values, so a perturbed X
    is other folds (fix reg to the choice being compared).
    """
    eps = np.finfo(float).eps

    def tolerance(outputs, *arrays, draws=8):
        base = np.asarray(outputs(*arrays), dtype=float)
        rng = np.random.default_rng(0)
        spread = eps * float(np.max(np.abs(base)))
        for _ in range(draws):
            moved = [a * (1.0 + eps * rng.standard_normal(np.shape(a))) for a in arrays]
            spread = max(spread, float(np.max(np.abs(np.asarray(outputs(*moved)) - base))))
        tol = ROUNDING_FACTOR * spread
        assert tol < 1e-6 * float(np.max(np.abs(base))), \
            f"outputs too ill-conditioned to compare with stored values ({tol:.3g})"
        return tol
    return tolerance


@pytest.fixture(scope="session")
def reproduces(rounding_tolerance):
    """``reproduces(fit, X, method, stored)``: ``fit(X)`` (a function returning a fitted model)
    whose ``method`` on X equals the values ``stored`` on another machine within the rounding
    tolerance of the fit (refits on perturbed X); returns the model for further checks."""
    def check(fit, X, method, stored):
        model = fit(X)
        tol = rounding_tolerance(lambda Xk: getattr(fit(Xk), method)(Xk), X)
        np.testing.assert_allclose(getattr(model, method)(X), stored, rtol=0, atol=tol)
        return model
    return check


@pytest.fixture(scope="session")
def outputs_with_coef():
    """``outputs_with_coef(model, method)``: ``f(X, coef)``, ``model.method(X)`` with ``coef_``
    replaced by ``coef`` (the model itself unchanged), for :func:`rounding_tolerance` to perturb
    a loaded model's coefficients as well as its inputs."""
    import copy

    def outputs(model, method):
        def f(X, coef):
            other = copy.copy(model)
            other.coef_ = coef
            return getattr(other, method)(X)
        return f
    return outputs
