"""partial_fit and Dask fit give the model of ``fit``: every fitted attribute, the data constants
of the feature map included (sup ||x||, theta, kappa), its bounds() and its pruning.

The oracle is ``fit`` on the same rows with the same standardisation (the statistics of all
rows: a first pass for the stream, the Dask backend's own moments pass), and for the
coefficients the normal equations built here with numpy from fit's feature matrix.
"""

import copy
import math

import numpy as np
import pytest

import rwtool as rw
from rwtool._base import BaseEstimator, Standardizer
from rwtool.features import (KITCHEN_BASES, INSTANTIATIONS, MonteCarloRKHS,
                             RandomFourierFeatures, RowMaxima, make_instantiation)
from rwtool.scale import scan_moments
from tests.helpers.normal_equations import backward_error

da = pytest.importorskip("dask.array")
pytest.importorskip("distributed")   # the cluster of the conftest fixture `client`

#: uneven chunks of the 80 rows, one of a single row (partial_fit refuses an empty chunk;
#: the Dask partitions add one)
CHUNKS = (1, 23, 7, 49)
DASK_CHUNKS = (1, 23, 0, 7, 49)
MONTE_CARLO = ("mc:normal:gaussian:relu", "mc:laplace:exponential:tanh",
               "mc:stumps:indicator-gaussian:stump", "mc:uniform:polynomial:sigmoid",
               "mc:cauchy:gaussian:sign")
CASES = ([(rw.RWRegressor, {"instantiation": name}) for name in INSTANTIATIONS]
         + [(rw.RWRegressor, {"instantiation": name}) for name in MONTE_CARLO]
         + [(rw.RKSRegressor, {"base": base}) for base in ("sign", "relu", "stumps", "fourier")]
         # the default reg="auto" (reg_, reg_search_) and a classifier's attributes
         + [(rw.RWClassifier, {"instantiation": "rwrelu", "reg": None}),
            (rw.RWClassifier, {"instantiation": "mc:normal:gaussian:relu", "reg": None}),
            (rw.RKSClassifier, {"base": "relu", "reg": None})])
IDS = [f"{cls.__name__}-{next(iter(kw.values()))}" + ("-auto" if "reg" in kw else "")
       for cls, kw in CASES]

#: attributes that describe the run, not the model: the time it took, and how the Dask input
#: was partitioned
NOT_MODEL = ("fit_time_", "n_partitions_")
#: relative tolerance of every fitted number but the coefficients. Streams and partitions
#: standardise with merged moments (Chan et al.) and sum in another order, so the statistics,
#: the standardised rows and what is computed from them (sup ||x||, theta, kappa, the reg
#: path's scores) differ from fit's by a few ulps (1e-16 to 1e-13 measured).
RTOL = 1e-9
#: backward error allowed to the coefficients in fit's normal equations. Their sums differ from
#: fit's only in order, a row's features being the same in any block, the Monte Carlo ones
#: included (1e-16 measured)
BACKWARD = 1e-12


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3)) * [1.0, 3.0, 10.0] + [0.0, 5.0, 2.0]
    y = np.sin(X[:, 0]) + 0.1 * X[:, 1] + 0.1 * rng.normal(size=80)
    labels = np.array(["a", "b", "c"])[(X[:, 0] > 0).astype(int) + (X[:, 2] > 2)]
    return X, y, labels


def _target(cls, data):
    X, y, labels = data
    return X, (labels if cls._estimator_type == "classifier" else y)


def _params(kw):
    return dict({"n_features": 20, "reg": 1e-3, "random_state": 3}, **kw)


def _streamed(cls, kw, X, y):
    """partial_fit over CHUNKS, with the standardisation of all rows from a first pass."""
    cuts = np.cumsum((0,) + CHUNKS)
    chunks = [(X[a:b], y[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
    classifier = cls._estimator_type == "classifier"
    x_scaler, y_scaler = scan_moments(chunks, regression=not classifier)
    first = ({"x_scaler": x_scaler, "classes": np.unique(y)} if classifier
             else {"x_scaler": x_scaler, "y_scaler": y_scaler})
    est = cls(**_params(kw))
    for k, (Xc, yc) in enumerate(chunks):
        est.partial_fit(Xc, yc, **(first if k == 0 else {}))
    return est


def _on_dask(cls, kw, X, y):
    return cls(**_params(kw)).fit(da.from_array(X, chunks=(DASK_CHUNKS, 3)),
                                  da.from_array(y, chunks=(DASK_CHUNKS,)))


def _fitted(est) -> dict:
    est.coef_  # a stream solves its sums on the first read
    return {k: v for k, v in vars(est).items()
            if k.endswith("_") and not k.startswith("_") and k not in NOT_MODEL}


def assert_same(got, want, where):
    """``got`` equals ``want`` (fit's): numbers to RTOL, everything else exactly."""
    if isinstance(want, BaseEstimator):                    # the feature map, its draws
        assert type(got) is type(want), where
        assert got.get_params(deep=False) == want.get_params(deep=False), where
        assert_same(got.fitted_state() if hasattr(got, "fitted_state") else vars(got),
                    want.fitted_state() if hasattr(want, "fitted_state") else vars(want),
                    where)
    elif isinstance(want, Standardizer):
        assert isinstance(got, Standardizer), where
        assert_same(got.mean, want.mean, where + ".mean")
        assert_same(got.scale, want.scale, where + ".scale")
    elif isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), \
            f"{where}: {sorted(got)} != {sorted(want)}"
        for k in want:
            assert_same(got[k], want[k], f"{where}[{k!r}]")
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want), where
        for i, (a, b) in enumerate(zip(got, want)):
            assert_same(a, b, f"{where}[{i}]")
    elif isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray) and got.shape == want.shape, where
        assert got.dtype == want.dtype, where
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=0, err_msg=where)
        else:
            np.testing.assert_array_equal(got, want, err_msg=where)
    elif isinstance(want, float) and not isinstance(want, bool):
        assert isinstance(got, float) and not isinstance(got, bool), \
            f"{where}: {got!r} (fit: {want!r})"
        assert (got == want or math.isclose(got, want, rel_tol=RTOL)
                or (math.isnan(got) and math.isnan(want))), \
            f"{where}: {got!r} (fit: {want!r})"
    else:
        assert type(got) is type(want) and got == want, f"{where}: {got!r} (fit: {want!r})"


def assert_same_model(got, ref, X, y):
    a, b = _fitted(got), _fitted(ref)
    assert a.keys() == b.keys()
    assert backward_error(a.pop("coef_"), ref, X, y) < BACKWARD
    assert b.pop("coef_").shape == got.coef_.shape
    if "posterior_chol_" in b:
        # The Cholesky factor L of the same matrix M = L L^T: its entries inherit cond(M) (8e8
        # for RWStumps: 2e-8 relative measured), the matrix it factors does not.
        La, Lb = a.pop("posterior_chol_"), b.pop("posterior_chol_")
        Ma, Mb = La @ La.T, Lb @ Lb.T
        assert np.linalg.norm(Ma - Mb) <= BACKWARD * np.linalg.norm(Mb)
        # the noise variance divides by m - trace(M^-1 Phi^T Phi): a solve with M, whose error
        # grows with cond(M) (1e-7 relative measured at cond 8e8; 1e-15 x cond allowed)
        cond = np.linalg.cond(Mb)
        np.testing.assert_allclose(a.pop("noise_var_"), b.pop("noise_var_"),
                                   rtol=max(RTOL, 1e-15 * cond), err_msg="noise_var_")
    for key in b:
        assert_same(a[key], b[key], key)
    # fit's constants are known (the oracle of the comparison above is not itself all None)
    for key in ("x_norm_max_", "theta_", "kappa_"):
        if hasattr(ref.feature_map_, key):
            assert getattr(ref.feature_map_, key) > 0


def assert_same_report(got, ref, X, y):
    """bounds() and prune(accept="bound") as fit's model gives them.

    What reads the map and the data only (theta, kappa, tau, y_bound, ...) equals fit's. What
    reads the coefficients too equals what fit's model gives with ``got``'s coefficients (its
    twin): the coefficients themselves differ from fit's by the conditioning of the normal
    equations (backward_error), which every function of them inherits; 1e-14 measured
    against the twin.
    """
    twin = copy.deepcopy(ref)
    twin.coef_ = got.coef_.copy()
    if hasattr(ref, "bounds"):
        # tau and ||alpha||_L2(p) from 100 fresh centres: the same draw for all three
        bg, bf = got.bounds(X, y, n_draws=100), ref.bounds(X, y, n_draws=100)
        assert bf["theta"] > 0 and bf["kappa"] > 0
        for key in ("theta", "kappa", "tau", "y_bound", "m", "delta", "theta_kappa"):
            assert_same(bg[key], bf[key], f"bounds[{key!r}]")
        assert_same(bg, twin.bounds(X, y, n_draws=100), "bounds")
    # the default eps keeps every centre here; eps=1 prunes some for most instantiations
    n = ref.prune(accept="bound", X=X, y=y).n_features_out_
    assert n > 0
    assert got.prune(accept="bound", X=X, y=y).n_features_out_ == n
    assert_same(got.prune(eps=1.0, accept="bound", X=X, y=y).prune_report_,
                twin.prune(eps=1.0, accept="bound", X=X, y=y).prune_report_, "prune_report_")


@pytest.mark.parametrize("cls, kw", CASES, ids=IDS)
def test_partial_fit_is_fit(data, cls, kw):
    X, y = _target(cls, data)
    ref = cls(**_params(kw)).fit(X, y)
    got = _streamed(cls, kw, X, y)
    assert_same_model(got, ref, X, y)
    assert_same_report(got, ref, X, y)


@pytest.mark.parametrize("cls, kw", CASES, ids=IDS)
def test_dask_fit_is_fit(client, data, cls, kw):
    X, y = _target(cls, data)
    ref = cls(**_params(kw)).fit(X, y)
    got = _on_dask(cls, kw, X, y)
    assert got.n_partitions_ == len(DASK_CHUNKS)
    assert_same_model(got, ref, X, y)
    assert_same_report(got, ref, X, y)


def test_a_later_chunk_moves_the_constants_and_leaves_the_old_map_alone(data):
    """The constants follow the rows seen: a chunk with a larger row raises sup ||x|| (and
    RWRelu's theta and kappa with it) at the next solve; the map handed out before keeps its
    own."""
    X, y, _ = data
    x_scaler, y_scaler = scan_moments([(X, y)])
    big = np.argmax(np.linalg.norm(x_scaler.transform(X), axis=1))   # the largest ||x||
    rest = np.delete(np.arange(len(X)), big)
    est = rw.RWRegressor(**_params({"instantiation": "rwrelu"}))
    est.partial_fit(X[rest], y[rest], x_scaler=x_scaler, y_scaler=y_scaler)
    before = est.feature_map_
    theta_before = before.theta_
    est.partial_fit(X[big:big + 1], y[big:big + 1])
    ref = rw.RWRegressor(**_params({"instantiation": "rwrelu"})).fit(X, y)
    assert est.feature_map_.theta_ > theta_before
    assert est.feature_map_.x_norm_max_ == pytest.approx(ref.feature_map_.x_norm_max_,
                                                         rel=RTOL)
    assert before.theta_ == theta_before


MAPS = ([make_instantiation(name, n_features=12, closed_form=closed)
         for name in INSTANTIATIONS for closed in (True, False)]
        + [MonteCarloRKHS(distribution=d, kernel=k, base=b, n_features=12)
           for d, k, b in (("normal", "gaussian", "relu"), ("laplace", "exponential", "tanh"),
                           ("stumps", "indicator-gaussian", "stump"),
                           ("uniform", "polynomial", "sigmoid"))]
        + [cls(n_features=12) for cls in KITCHEN_BASES.values()]
        + [RandomFourierFeatures(n_features=12)])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("fmap", MAPS, ids=lambda m: f"{type(m).__name__}"
                         + ("" if getattr(m, "closed_form", True) else "-mc"))
def test_map_constants_are_maxima_over_chunks(data, fmap):
    """Every feature map: fitted on no rows, its parameters are those of fit and its data
    constants unknown (None); set from the merged maxima of uneven chunks, they are fit's."""
    X = (data[0] - data[0].mean(axis=0)) / data[0].std(axis=0)
    params = dict(fmap.get_params(), random_state=5)
    ref = type(fmap)(**params).fit(X)
    empty = type(fmap)(**params).fit(np.empty((0, X.shape[1])))
    data_constants = [k for k in ("x_norm_max_", "theta_", "kappa_") if hasattr(ref, k)]
    if data_constants:
        assert empty.x_norm_max_ is None
    cuts = np.cumsum((0,) + CHUNKS)
    maxima = RowMaxima()
    for a, b in zip(cuts[:-1], cuts[1:]):
        maxima = maxima + empty.row_maxima(X[a:b])
    assert maxima.n == len(X)
    empty.set_constants(maxima)
    assert_same(empty.fitted_state(), ref.fitted_state(), type(fmap).__name__)
    for key in data_constants:
        assert getattr(ref, key) > 0


@pytest.mark.parametrize("name", ["rwrelu", "rwexprelu", "mc:normal:gaussian:sign"])
def test_unknown_constants_raise_instead_of_zero(data, name):
    """Before any row is seen the constants that depend on the rows are None, and the methods
    that need them say so rather than compute with 0."""
    X, y, _ = data
    est = rw.RWRegressor(**_params({"instantiation": name})).fit(X, y)
    est.feature_map_.set_constants(RowMaxima())
    assert est.feature_map_.theta_ is None and est.feature_map_.kappa_ is None
    for call in (lambda: est.bounds(X, y), lambda: est.prune(accept="bound", X=X, y=y),
                 est.feature_map_.constants):
        with pytest.raises(ValueError, match="has seen none"):
            call()


def test_constants_known_from_the_parameters_stay_known():
    """RWSign's theta and kappa do not read the rows (003 Table 2): known before any row."""
    fmap = make_instantiation("rwsign", n_features=5, random_state=0).fit(np.empty((0, 3)))
    assert fmap.x_norm_max_ is None
    assert fmap.constants() == (pytest.approx(0.1), 1.0)   # theta = the theta rule's target


def test_the_example_of_the_issue():
    """RWRelu on diabetes: the streamed model's theta was 0 and pruning by the bound deleted
    every centre."""
    from sklearn.datasets import load_diabetes
    X, y = load_diabetes(return_X_y=True)
    kw = dict(instantiation="rwrelu", n_features=50, reg=1e-4, random_state=0)
    f = rw.RWRegressor(**kw).fit(X, y)
    s = rw.RWRegressor(**kw).partial_fit(X, y)      # one chunk: the same statistics as fit
    theta = f.bounds(X, y, n_draws=100)["theta"]
    assert theta > 0.3
    assert s.bounds(X, y, n_draws=100)["theta"] == pytest.approx(theta, rel=1e-12)
    assert (s.prune(accept="bound", X=X, y=y).n_features_out_
            == f.prune(accept="bound", X=X, y=y).n_features_out_ == 50)
