"""Hostile inputs against every estimator configuration (issue 27, "Estimators"): a grid.

Each configuration meets each case and must answer with a result that is right or with
rwtool's own error naming the problem -- never numpy's TypeError, a bare MemoryError, an
AttributeError or NaN with only a RuntimeWarning:

- labels of mixed kinds (``[1, "a", 2.0]`` in an object array): MixedLabelsError naming the
  kinds (numpy's "'<' not supported between 'int' and 'str'" escaped from 29 configurations);
- a missing (None) label: ValueError saying so;
- 2,000 classes on a machine with room for 2 but not for 2,000: InsufficientMemoryError
  before the fit allocates what grows with the classes (RW lstsq raised a bare MemoryError
  after 18 s with 10,000);
- rows of size 1e300 at predict: finite answers or NumericalError (GreedyMK's regressor
  returned NaN);
- a partial_fit chunk of values near 1e200: NumericalError, and the stream is exactly as before
  it (it used to keep the overflowed sums, so every later chunk failed); classes= given to a
  regressor and a None label in a chunk: errors naming the fix.
"""

import warnings

import numpy as np
import pytest

import rwtool as rw
import rwtool.resources as resources
from rwtool.resources import estimate_fit

SMALL = dict(random_state=0)

CLASSIFIERS = {
    "rw-lstsq-auto": lambda: rw.RWClassifier(n_features=12, **SMALL),
    "rw-lstsq": lambda: rw.RWClassifier(n_features=12, reg=1e-3, **SMALL),
    "rw-relu": lambda: rw.RWClassifier(instantiation="rwrelu", n_features=12, **SMALL),
    "rw-stumps": lambda: rw.RWClassifier(instantiation="rwstumps", n_features=12, **SMALL),
    "rw-lasso": lambda: rw.RWClassifier(n_features=12, solver="lasso", reg=1e-2, **SMALL),
    "rw-lasso-auto": lambda: rw.RWClassifier(n_features=12, solver="lasso", **SMALL),
    "rw-sfgd": lambda: rw.RWClassifier(n_features=12, solver="sfgd", **SMALL),
    "rw-osd": lambda: rw.RWClassifier(n_features=12, solver="osd", **SMALL),
    "rks-ridge": lambda: rw.RKSClassifier(n_features=12, **SMALL),
    "rks-fourier": lambda: rw.RKSClassifier(base="fourier", n_features=12, reg=1e-3, **SMALL),
    "rks-lasso": lambda: rw.RKSClassifier(n_features=12, solver="lasso", reg=1e-2, **SMALL),
    "rks-sgd": lambda: rw.RKSClassifier(n_features=12, solver="sgd", **SMALL),
    "rfsgd": lambda: rw.RFSGDClassifier(n_features=12, **SMALL),
    "greedy": lambda: rw.GreedyMKClassifier(n_features=4, **SMALL),
    "greedy-lkrf": lambda: rw.GreedyMKClassifier(n_features=4, selector="lkrf", **SMALL),
    "bkernn": lambda: rw.BKerNNClassifier(n_particles=3, max_iter=3, **SMALL),
}
REGRESSORS = {
    "rw-lstsq-auto": lambda: rw.RWRegressor(n_features=12, **SMALL),
    "rw-lstsq": lambda: rw.RWRegressor(n_features=12, reg=1e-3, **SMALL),
    "rw-relu": lambda: rw.RWRegressor(instantiation="rwexprelu", n_features=12, **SMALL),
    "rw-lasso": lambda: rw.RWRegressor(n_features=12, solver="lasso", reg=1e-2, **SMALL),
    "rw-sfgd": lambda: rw.RWRegressor(n_features=12, solver="sfgd", **SMALL),
    "rks-ridge": lambda: rw.RKSRegressor(n_features=12, **SMALL),
    "rks-relu": lambda: rw.RKSRegressor(base="relu", n_features=12, reg=1e-3, **SMALL),
    "rks-lasso": lambda: rw.RKSRegressor(n_features=12, solver="lasso", reg=1e-2, **SMALL),
    "rks-sgd": lambda: rw.RKSRegressor(n_features=12, solver="sgd", **SMALL),
    "greedy": lambda: rw.GreedyMKRegressor(n_features=4, **SMALL),
    "greedy-lkrf": lambda: rw.GreedyMKRegressor(n_features=4, selector="lkrf", **SMALL),
    "bkernn": lambda: rw.BKerNNRegressor(n_particles=3, max_iter=3, **SMALL),
}
#: configurations that learn from sums of rows (partial_fit)
STREAMING = {"rw-lstsq", "rw-lasso", "rks-ridge", "rks-relu", "rks-lasso", "rw-lstsq-auto"}


def _data(n=90, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    return X, np.sin(X[:, 0]) + 0.5 * X[:, 1]


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
def test_mixed_labels_are_named(name):
    X, _ = _data()
    y = np.array([1, "a", 2.0] * 30, dtype=object)
    with pytest.raises(rw.MixedLabelsError, match=r"number label.*int.*text label.*str") as err:
        CLASSIFIERS[name]().fit(X, y)
    assert "astype(str)" in str(err.value)
    assert isinstance(err.value, TypeError) and isinstance(err.value, ValueError)


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
def test_a_missing_label_is_named(name):
    X, _ = _data()
    y = np.array(["a", "b", None] * 30, dtype=object)
    with pytest.raises(ValueError, match=r"missing labels \(None or NaN, first at position 2\)"):
        CLASSIFIERS[name]().fit(X, y)


@pytest.mark.parametrize("name", sorted(REGRESSORS))
def test_a_regressor_refuses_text_and_none_targets_by_name(name):
    X, y = _data()
    with pytest.raises(ValueError, match="missing values"):
        REGRESSORS[name]().fit(X, np.where(np.arange(90) == 4, None, y).astype(object))
    with pytest.raises(ValueError, match="non-numeric"):
        REGRESSORS[name]().fit(X, np.where(np.arange(90) == 4, "a", y.astype(object)))


def _fitted(table, name, y):
    X, _ = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # a tiny fit may warn that it learned little
        return table[name]().fit(X, y)


@pytest.mark.parametrize("kind,name", [("c", n) for n in sorted(CLASSIFIERS)]
                         + [("r", n) for n in sorted(REGRESSORS)])
def test_predictions_on_huge_rows_are_finite_or_refused(kind, name):
    """Rows of size 1e300 (and -1e300, 1e308) overflow inside most models: predict and
    decision_function answer with finite values or raise NumericalError, without numpy's
    RuntimeWarnings (the error says what happened)."""
    X, y = _data()
    est = (_fitted(CLASSIFIERS, name, (y > 0).astype(int)) if kind == "c"
           else _fitted(REGRESSORS, name, y))
    huge = np.array([[1e300, -1e300, 1e300], [1e308, 1e308, -1e308], [0.0, 0.0, 1e300]])
    calls = [est.predict] + ([est.decision_function] if kind == "c" else [])
    for call in calls:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            try:
                out = np.asarray(call(huge))
            except rw.NumericalError as exc:
                assert "far outside the training data's range" in str(exc)
                continue
        if out.dtype.kind == "f":
            assert np.isfinite(out).all(), (name, out)


def test_greedy_regressor_refuses_non_finite_predictions():
    """It returned NaN for rows of size 1e300, with only numpy's RuntimeWarning."""
    X, y = _data()
    reg = _fitted(REGRESSORS, "greedy", y)
    with pytest.raises(rw.NumericalError, match="the predictions contain 2 non-finite"):
        reg.predict(np.full((2, 3), 1e300))


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
def test_many_classes_are_refused_before_the_fit_allocates(name, monkeypatch):
    """The estimate counts the classes: with room for the fit on 2 classes but not on 2,000,
    the fit raises InsufficientMemoryError (naming the classes) before allocating what grows
    with them -- tracemalloc's peak stays far below the difference of the two estimates."""
    import tracemalloc
    n, k = 4000, 2000
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((n, 3)), rng.permutation(np.arange(n) % k)
    est = CLASSIFIERS[name]()
    two, many = (estimate_fit(est, n, 3, c).peak_bytes for c in (2, k))
    assert many > 2 * two, (two, many)
    room = (two + many) / 2 / resources.MEMORY_FRACTION
    monkeypatch.setattr(resources, "available_memory", lambda: int(room))
    tracemalloc.start()
    try:
        with pytest.raises(rw.InsufficientMemoryError, match=f"and {k} classes"):
            est.fit(X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < (many - two) / 4
    assert not hasattr(est, "coef_")


@pytest.mark.filterwarnings("ignore::rwtool.NumericalWarning")   # random labels: nothing to learn
@pytest.mark.parametrize("cls,params", [(rw.RWClassifier, {}),
                                        (rw.RKSClassifier, dict(reg=1e-3)),
                                        pytest.param(rw.RWClassifier, dict(solver="lasso"),
                                                     marks=pytest.mark.slow)])
def test_estimate_with_many_classes_is_near_the_measured_peak(cls, params, traced_peak):
    """The class terms of _estimate_fit against tracemalloc's peak (factor 2, as the other
    estimates in tests/estimators/test_numerical_errors.py), 300 classes on 3,000 rows."""
    rng = np.random.default_rng(0)
    n, k = 3000, 300
    X, y = rng.standard_normal((n, 4)), rng.permutation(np.arange(n) % k)
    est = cls(n_features=60, random_state=0, **params)
    est.fit(X[:600], y[:600])                      # compile and warm everything first
    e = estimate_fit(est, n, 4, k)
    peak = traced_peak(lambda: est.fit(X, y))
    assert 0.5 < e.peak_bytes / peak < 2.0, (e.peak_bytes, peak)


def test_the_lasso_reports_progress_class_by_class():
    """reg='auto' of the Lasso solves the classes one by one: its "search" stage counts
    (lam, class) pairs and a cancel is heard between two classes of one lam."""
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((300, 3)), np.arange(300) % 6
    events = []
    rw.RWClassifier(n_features=15, solver="lasso", random_state=0).fit(
        X, y, callback=rw.Progress(lambda ev: events.append(ev), min_interval=0.0))
    search = [e for e in events if e.stage == "search"]
    assert search[0].kind == "start" and search[0].total % 6 == 0
    assert any(e.kind == "update" and e.done % 6 for e in search)
    starts = [e.stage for e in events if e.kind == "start"]
    assert starts[starts.index("search") + 1] == "lasso"          # the final path
    final = [e for e in events if e.stage == "lasso" and e.kind == "update"]
    assert final and final[-1].done == final[-1].total

    def cancel(ev):
        return ev.stage == "search" and ev.kind == "update" and ev.done == 3
    est = rw.RWClassifier(n_features=15, solver="lasso", random_state=0)
    with pytest.raises(rw.FitCancelled, match=r"search.*\(3/"):
        est.fit(X, y, callback=rw.Progress(cancel, min_interval=0.0))
    assert not hasattr(est, "coef_")


# ----------------------------------------------------------------------------- streams

def _chunks(seed=1):
    X, y = _data(240, seed)
    return [(X[i:i + 60], y[i:i + 60]) for i in range(0, 240, 60)]


@pytest.mark.parametrize("name", sorted(STREAMING & set(REGRESSORS)))
def test_a_poisoned_chunk_leaves_the_stream_as_it_was(name):
    """A chunk near 1e200 overflows the sums (features of unbounded bases, squared targets):
    NumericalError, and the stream is exactly the stream without that chunk -- the later
    chunks add and the model equals, bit for bit in this process, the one never offered it."""
    chunks = _chunks()
    poison = (np.full((5, 3), 1e200) * np.array([1, -1, 1]), np.full(5, 1e200))
    est, ref = REGRESSORS[name](), REGRESSORS[name]()
    for i, (X, y) in enumerate(chunks):
        if i == 2:
            _ = est.coef_                              # solved once before the poison
            before = {k: v.copy() for k, v in vars(est._stream.stats).items()
                      if isinstance(v, np.ndarray)}
            with pytest.raises(rw.NumericalError, match="not added"):
                est.partial_fit(*poison)
            for k, v in before.items():
                np.testing.assert_array_equal(getattr(est._stream.stats, k), v)
        est.partial_fit(X, y)
        ref.partial_fit(X, y)
    np.testing.assert_array_equal(est.coef_, ref.coef_)
    assert est.reg_ == ref.reg_


@pytest.mark.parametrize("name", sorted(STREAMING & set(REGRESSORS)))
def test_a_refused_first_chunk_starts_nothing(name):
    """A refused first chunk (here one target short) fixes no scaling or feature map: the
    next chunk starts the stream as if it were the first."""
    X, y = _data(120)
    est, ref = REGRESSORS[name](), REGRESSORS[name]()
    with pytest.raises(ValueError, match="rows but y has"):
        est.partial_fit(X, y[:-1])
    assert not any(k.endswith("_") for k in vars(est)) and "_stream" not in vars(est)
    est.partial_fit(X, y)
    ref.partial_fit(X, y)
    np.testing.assert_array_equal(est.coef_, ref.coef_)


@pytest.mark.parametrize("name", sorted(STREAMING & set(REGRESSORS)))
def test_classes_given_to_a_regressor_name_the_fix(name):
    X, y = _data()
    est = REGRESSORS[name]()
    with pytest.raises(ValueError, match="classes= is for classifiers.*drop classes="):
        est.partial_fit(X, y, classes=[0, 1])
    est.partial_fit(X, y)
    with pytest.raises(ValueError, match="classes= is for classifiers"):
        est.partial_fit(X, y, classes=[0, 1])


@pytest.mark.parametrize("name", sorted(STREAMING & set(CLASSIFIERS)) + ["rfsgd"])
def test_partial_fit_with_a_none_label_names_it(name):
    X, y = _data()
    labels = np.where(y > 0, "p", "n").astype(object)
    est = CLASSIFIERS[name]()
    est.partial_fit(X[:60], labels[:60], classes=["n", "p"])
    labels[70] = None
    with pytest.raises(ValueError, match="missing labels"):
        est.partial_fit(X[60:], labels[60:])
    with pytest.raises(rw.MixedLabelsError):
        est.partial_fit(X[60:], np.array([1, "p"] * 15, dtype=object))
    with pytest.raises(ValueError, match="number labels such as 1 but the model's classes are "
                                         "text"):
        est.partial_fit(X[60:], np.ones(30, dtype=int))
    est.partial_fit(X[60:], np.where(y[60:] > 0, "p", "n"))    # the stream goes on
    assert set(est.predict(X)) <= {"n", "p"}
