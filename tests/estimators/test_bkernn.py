"""BKerNN out of the box (issue 12 point 7): memory refused up front, progress before the first
solve, a warning for a constant model, and loud failures for non-finite results.

Oracles: the arithmetic of the memory model (n x n float64 matrices), counts of kernel solves,
and the dense numpy closed form for the extreme-scale inputs.
"""

import warnings

import numpy as np
import pytest

import rwtool
import rwtool.solvers._bkernn as core
import rwtool.resources as resources
from rwtool import (BKerNNClassifier, BKerNNRegressor, InsufficientMemoryError, NumericalError,
                    NumericalWarning, estimate_fit)
from rwtool.progress import FitCancelled, Progress


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (60, 3))
    return X, np.sin(2 * X[:, 0]) + X[:, 1]


def test_memory_estimate_counts_the_dense_kernel_and_refuses_before_allocating(data, monkeypatch):
    est = BKerNNRegressor(kernel_solver="dense")
    big = estimate_fit(est, 200_000, 20, 1)
    assert big.peak_bytes >= 2 * 8 * 200_000 ** 2 and "n x n" in big.detail
    X, y = data
    need = estimate_fit(est, len(X), X.shape[1], 1).peak_bytes
    assert need >= 2 * 8 * len(X) ** 2
    calls = []
    monkeypatch.setattr(core, "ridge_step", lambda *a, **k: calls.append(1))
    monkeypatch.setattr(resources, "available_memory", lambda: need // 2)
    with pytest.raises(InsufficientMemoryError, match="Fix:") as info:
        est.fit(X, y)
    assert info.value.required == need and not calls
    assert not hasattr(est, "dual_coef_")


def test_start_event_comes_before_the_first_kernel_solve(data, monkeypatch):
    X, y = data
    solves = []
    real = core.ridge_step

    def counting(*a, **k):
        solves.append(1)
        return real(*a, **k)

    monkeypatch.setattr(core, "ridge_step", counting)
    events = []

    def cancel_at_start(ev):
        events.append((ev.kind, len(solves)))
        return True

    est = BKerNNRegressor(max_iter=3, random_state=0, kernel_solver="dense")
    with pytest.raises(FitCancelled) as info:
        est.fit(X, y, callback=Progress(cancel_at_start, min_interval=0.0))
    assert events == [("start", 0)] and not solves
    assert not info.value.partial_model and not hasattr(est, "dual_coef_")


def test_warns_when_every_particle_is_zero(data):
    X, y = data
    with pytest.warns(NumericalWarning, match="every particle is zero"):
        est = BKerNNRegressor(standardize=False, max_iter=10, random_state=0).fit(X * 1e4, y)
    assert not np.any(est.particles_)
    np.testing.assert_allclose(est.predict(X * 1e4), y.mean(), atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumericalWarning)
        BKerNNRegressor(max_iter=10, random_state=0).fit(X * 1e4, y)


def test_non_finite_kernel_raises_numerical_error_and_leaves_estimator_unfitted(data):
    X, y = data
    est = BKerNNRegressor(max_iter=2, random_state=0).fit(X, y)
    Xbad = X.copy()
    Xbad[0, 0] = 1e308                                   # projections overflow
    with pytest.raises(NumericalError, match="Fix:") as info:
        est.set_params(standardize=False, reg=0.01).fit(Xbad, y)
    assert info.value.solver == "bkernn" and info.value.iteration == 0
    assert isinstance(info.value, ArithmeticError) and rwtool.NumericalError is NumericalError
    assert not hasattr(est, "dual_coef_") and not hasattr(est, "particles_")
    with pytest.raises(rwtool.NotFittedError):
        est.predict(X)


@pytest.mark.parametrize("scale", [1e200, 1e-200])
def test_extreme_input_scales_standardised_give_the_same_model(data, scale):
    X, y = data
    ref = BKerNNRegressor(max_iter=5, random_state=0).fit(X, y)
    est = BKerNNRegressor(max_iter=5, random_state=0).fit(X * scale, y)
    np.testing.assert_allclose(est.predict(X * scale), ref.predict(X), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("scale", [1e300, 1e-300])
def test_extreme_target_scales(data, scale):
    X, y = data
    ref = BKerNNRegressor(max_iter=5, random_state=0).fit(X, y)
    est = BKerNNRegressor(max_iter=5, random_state=0).fit(X, y * scale)
    np.testing.assert_allclose(est.predict(X) / scale, ref.predict(X), rtol=1e-9, atol=1e-9)


def test_tiny_unstandardised_inputs_fit_through_the_scaled_gradient(data):
    X, y = data
    ref = BKerNNRegressor(max_iter=5, random_state=0, standardize=False).fit(X, y)
    est = BKerNNRegressor(max_iter=5, random_state=0, standardize=False).fit(X * 1e-200, y)
    assert np.all(np.isfinite(est.predict(X * 1e-200)))
    assert est.score(X * 1e-200, y) > 0.5 and ref.score(X, y) > 0.5


@pytest.mark.parametrize("solver", ["dense", "cg"])
def test_classifier_memory_estimate_grows_with_classes(solver):
    est = BKerNNClassifier(kernel_solver=solver)
    assert estimate_fit(est, 1000, 5, 10).peak_bytes > estimate_fit(est, 1000, 5, 1).peak_bytes


def test_memory_estimate_of_the_cg_path_is_linear_in_n():
    est = BKerNNRegressor()                             # auto: CG at this size
    # from 72,000 rows the preconditioner has its largest block count: the rest is linear
    small, big, bigger = (estimate_fit(est, n, 20, 1).peak_bytes
                          for n in (100_000, 200_000, 300_000))
    assert bigger - big == big - small and estimate_fit(est, 100_000, 20, 1).peak_bytes < 2**30
    assert small < 2 * 2**30 and "n x n" not in estimate_fit(
        est, 200_000, 20, 1).detail
    assert estimate_fit(BKerNNRegressor(kernel_solver="dense"), 200_000, 20, 1).peak_bytes > 2**38


@pytest.mark.slow
@pytest.mark.parametrize("Est, q, solver", [(BKerNNRegressor, 1, "cg"),
                                            (BKerNNClassifier, 4, "cg"),
                                            (BKerNNRegressor, 1, "dense")])
def test_memory_estimate_counts_the_arrays_the_fit_holds(Est, q, solver, traced_peak):
    """The arrays ``_estimate_fit`` counts (its figure without the 15% allowance for the
    allocator and numba's buffers) bound the peak of the numpy buffers a fit holds, which
    tracemalloc sees, by at most 10% above: the model is neither short (an iterate kept
    alive too long, a factor copied per CG iteration) nor padded. Ten iterations include
    rejected line-search trials."""
    rng = np.random.default_rng(1)
    n, d = 3000 if solver == "cg" else 1200, 6
    X = rng.standard_normal((n, d))
    y = (np.sin(X[:, 0]) + X[:, 1] * X[:, 2] if q == 1 else
         np.digitize(X[:, 0] + X[:, 1], [-1.0, 0.0, 1.0]))
    est = Est(max_iter=10, random_state=0, kernel_solver=solver)
    est.fit(X[:900], y[:900])                 # numba loads its kernels outside the trace
    arrays = estimate_fit(est, n, d, q).peak_bytes * 20 / 23
    peak = traced_peak(lambda: est.fit(X, y))
    assert est.kernel_solver_ == solver and np.sum(~est.history_["accepted"]) + np.sum(
        est.history_["n_backtracks"]) > 0
    assert peak <= arrays <= 1.10 * peak, (arrays, peak)


@pytest.mark.parametrize("Est, n_classes", [(BKerNNRegressor, 0), (BKerNNClassifier, 2),
                                            (BKerNNClassifier, 3)])
def test_predict_reports_progress_by_slices_of_rows_and_stops_on_cancel(Est, n_classes,
                                                                        monkeypatch):
    """predict/decision_function with a callback give the same values as without, report
    "predicting" events up to every row, and a callback returning True stops them."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((300, 4))
    y = (X[:, 0] + X[:, 1] ** 2 if not n_classes else
         np.digitize(X[:, 0], np.linspace(-0.5, 0.5, n_classes - 1)))
    est = Est(max_iter=3, n_particles=10, random_state=0).fit(X, y)
    Xt = rng.standard_normal((5000, 4))
    monkeypatch.setattr(core, "PREDICT_WORK", 10 * 10 * (np.log2(301) + 3))  # ~10 rows a slice
    methods = ["predict"] + (["decision_function"] if n_classes else [])
    for name in methods:
        events = []
        out = getattr(est, name)(Xt, callback=Progress(events.append, min_interval=0.0))
        np.testing.assert_array_equal(out, getattr(est, name)(Xt))
        assert [e.kind for e in events[:2]] == ["start", "update"] and events[-1].kind == "end"
        assert {e.stage for e in events} == {"predicting"} and events[-1].done == len(Xt)
        done = [e.done for e in events if e.kind == "update"]
        assert len(done) > 100 and done == sorted(done) and done[-1] == len(Xt)
        seen = []
        with pytest.raises(FitCancelled, match="prediction cancelled"):
            getattr(est, name)(Xt, callback=lambda e: seen.append(e) or e.kind == "update")
        assert seen[-1].done < len(Xt)


@pytest.mark.parametrize("Est, n_classes", [(BKerNNRegressor, 0), (BKerNNClassifier, 2),
                                            (BKerNNClassifier, 3)])
def test_a_pickled_model_keeps_what_its_prediction_tables_are_rebuilt_from(Est, n_classes):
    """A pickle (the app's fit process sends its models so; a copy too) leaves out the
    prediction tables, (m n + 2 m (n + 1) q) floats, and keeps the arrays they are built from:
    its arrays are at most those of particles_, train_projections_, dual_coef_, intercept_ and
    the per-iteration history (the model's own formula below). Oracle: the model before
    pickling, in this process: the rebuilt tables and every prediction are the same bits."""
    import copy
    import pickle
    rng = np.random.default_rng(3)
    n, d, m = 2000, 3, 12
    X = rng.standard_normal((n, d))
    y = (X[:, 0] + X[:, 1] ** 2 if not n_classes else
         np.digitize(X[:, 0], np.linspace(-0.5, 0.5, n_classes - 1)))
    est = Est(max_iter=3, n_particles=m, random_state=0).fit(X, y)
    q = est.dual_coef_.shape[1]
    Xt = rng.standard_normal((500, d))
    tables = [t.copy() for t in est._tables]
    outs = {name: getattr(est, name)(Xt) for name in ("predict", "decision_function")
            if hasattr(est, name)}
    for back in (pickle.loads(pickle.dumps(est, protocol=5)), copy.deepcopy(est)):
        assert not hasattr(back, "_tables") and hasattr(est, "_tables")
        arrays = [v for v in vars(back).values() if isinstance(v, np.ndarray)]
        arrays += [v for v in back.history_.values() if isinstance(v, np.ndarray)]
        held = sum(a.nbytes for a in arrays)
        iters = len(back.history_["objective"])
        formula = 8 * (n * m + n * q + d * m + q + 7 * iters)
        assert held <= formula, (held, formula)
        assert held < sum(t.nbytes for t in tables) / 2      # what the tables would add
        for name, out in outs.items():
            np.testing.assert_array_equal(getattr(back, name)(Xt), out)
        for a, b in zip(back._tables, tables):
            np.testing.assert_array_equal(a, b)
