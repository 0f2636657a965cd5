"""RWClassifier, RWRegressor, RKSClassifier, RKSRegressor: oracles, conventions, errors."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

import rwtool as rw
from rwtool import FitCancelled, NotFittedError
from rwtool.features import INSTANTIATIONS

ESTIMATORS = [rw.RWClassifier, rw.RWRegressor, rw.RKSClassifier, rw.RKSRegressor]


@parametrize_with_checks([cls(n_features=50, random_state=0) for cls in ESTIMATORS] +
                         [rw.RWClassifier(instantiation="rwstumps", n_features=50, random_state=0),
                          rw.RKSRegressor(base="fourier", n_features=50, sigma=3.0,
                                                       random_state=0)])
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


def _dense_rw_solution(est, X, Y):
    Phi = est.feature_matrix(X)
    G = est.feature_map_.gram()
    m, T = Phi.shape
    return np.linalg.solve(Phi.T @ Phi + m * est.reg * G + m * est.eps * np.eye(T), Phi.T @ Y)


@pytest.mark.parametrize("instantiation", list(INSTANTIATIONS))
def test_rw_regressor_solves_the_regularised_least_squares(instantiation, regression_data):
    X, y = regression_data
    est = rw.RWRegressor(instantiation=instantiation, n_features=80, reg=1e-4, random_state=0)
    est.fit(X, y)
    ys = (y - y.mean()) / y.std()
    dense = _dense_rw_solution(est, X, ys[:, None])
    Phi = est.feature_matrix(X)
    np.testing.assert_allclose(Phi @ est.coef_, Phi @ dense, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(est.predict(X), (Phi @ dense)[:, 0] * y.std() + y.mean(),
                               rtol=1e-7, atol=1e-8)
    assert est.score(X, y) > 0.5  # usable with 80 features (stumps are additive: no x1 x2)


def test_rks_classifier_matches_scikit_learn_ridge_on_its_features(binary_data):
    from sklearn.linear_model import Ridge
    X, y = binary_data
    est = rw.RKSClassifier(base="sign", n_features=100, reg=1e-3, random_state=1).fit(X, y)
    Psi = est.feature_matrix(X)
    sk = Ridge(alpha=len(X) * 1e-3, fit_intercept=False).fit(Psi, np.where(y == 1, 1.0, -1.0))
    np.testing.assert_allclose(est.coef_[:, 0], sk.coef_, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(est.decision_function(X), Psi @ sk.coef_, rtol=1e-7, atol=1e-10)


def test_multiclass_one_vs_rest_shares_features(rng):
    X = rng.standard_normal((240, 3))
    y = np.array(["a", "b", "c"])[np.argmax(X @ rng.standard_normal((3, 3)), axis=1)]
    est = rw.RWClassifier(instantiation="rwrelu", n_features=60, random_state=3, reg=1e-6).fit(X, y)
    assert list(est.classes_) == ["a", "b", "c"] and est.coef_.shape == (60, 3)
    D = est.decision_function(X)
    assert D.shape == (240, 3)
    np.testing.assert_array_equal(est.predict(X), est.classes_[D.argmax(1)])
    # each column is the binary one-vs-rest solution on the same features
    for k, c in enumerate(est.classes_):
        binary = rw.RWClassifier(instantiation="rwrelu", n_features=60, random_state=3, reg=1e-6)
        binary.fit(X, np.where(y == c, "yes", "no"))  # "yes" sorts last: positive class
        np.testing.assert_allclose(binary.decision_function(X), D[:, k], rtol=1e-8, atol=1e-10)
    assert est.score(X, y) > 0.9


def test_binary_labels_and_decision_sign(binary_data):
    X, y = binary_data
    labels = np.where(y == 1, "pos", "neg")
    est = rw.RWClassifier(n_features=100, random_state=0).fit(X, labels)
    d = est.decision_function(X)
    np.testing.assert_array_equal(est.predict(X), np.where(d > 0, "pos", "neg"))
    assert est.score(X, labels) > 0.9


def test_multi_output_regression(regression_data):
    X, y = regression_data
    Y = np.column_stack([y, -2 * y + 1])
    est = rw.RKSRegressor(n_features=100, random_state=0).fit(X, Y)
    P = est.predict(X)
    assert P.shape == (300, 2)
    np.testing.assert_allclose(P[:, 1], -2 * P[:, 0] + 1, rtol=1e-8, atol=1e-8)


def test_preprocessing_is_recorded(binary_data):
    X, y = binary_data
    X = X * [1, 10, 100, 1000] + 5
    est = rw.RWClassifier(n_features=20, random_state=0).fit(X, y)
    np.testing.assert_allclose(est.x_scaler_.mean, X.mean(0))
    np.testing.assert_allclose(est.x_scaler_.scale, X.std(0))
    assert est.bias_ and est.feature_map_.n_features_in_ == 5
    st = rw.RWClassifier(instantiation="rwstumps", n_features=20, random_state=0).fit(X, y)
    assert not st.bias_ and st.feature_map_.n_features_in_ == 4
    raw = rw.RWClassifier(n_features=20, standardize=False, bias=False, random_state=0).fit(X, y)
    assert raw.x_scaler_ is None and not raw.bias_


def test_same_seed_same_model_and_different_seed_differs(binary_data):
    X, y = binary_data
    a = rw.RWClassifier(n_features=50, random_state=11).fit(X, y).decision_function(X)
    b = rw.RWClassifier(n_features=50, random_state=11).fit(X, y).decision_function(X)
    c = rw.RWClassifier(n_features=50, random_state=12).fit(X, y).decision_function(X)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


@pytest.mark.slow
def test_same_seed_same_model_whatever_the_thread_count(tmp_path):
    """Draws are serial and the numba kernels element-wise: numba's thread count changes no bit.

    OpenBLAS may round its products differently for another BLAS thread count, so across BLAS
    thread counts the model agrees to rounding and the predictions are the same wherever the
    decision value is farther from 0 than that rounding. One process started with 2 threads of
    each fits three times, lowering numba's threads, then BLAS's, in between (a process start
    costs more than the fits).
    """
    script = textwrap.dedent("""
        import numba, numpy as np, rwtool as rw
        from threadpoolctl import threadpool_limits
        rng = np.random.default_rng(0)
        X = rng.standard_normal((5000, 6)); y = (X[:, 0] * X[:, 1] > 0).astype(int)
        def fit():
            return rw.RWClassifier(instantiation="rwrelu", n_features=300,
                                   random_state=4).fit(X, y).decision_function(X)
        base = fit()
        numba.set_num_threads(1)
        one_numba = fit()
        numba.set_num_threads(2)
        with threadpool_limits(1, user_api="blas"):
            one_blas = fit()
        np.save(r"{out}", np.stack([base, one_numba, one_blas]))
    """)
    env = dict(os.environ, NUMBA_NUM_THREADS="2", OMP_NUM_THREADS="2", OPENBLAS_NUM_THREADS="2")
    out = tmp_path / "d.npy"
    subprocess.run([sys.executable, "-c", script.format(out=out)], env=env, check=True)
    base, one_numba, other_blas = np.load(out)
    assert np.array_equal(one_numba, base)
    atol = 1e-6 * np.abs(base).max()
    np.testing.assert_allclose(other_blas, base, rtol=0, atol=atol)
    clear = np.abs(base) > atol
    assert clear.mean() > 0.99
    assert np.array_equal(np.sign(other_blas[clear]), np.sign(base[clear]))


def test_exponential_instantiation_normalised_equals_raw_model(regression_data):
    """Normalising the kernel sections changes the basis, not the model (module docstring)."""
    X, y = regression_data
    # eps = 0: the conditioning term eps ||a||^2 is the one part that depends on the basis
    kw = dict(instantiation="rwexprelu", n_features=60, reg=1e-3, sigma=0.5, gamma=1.0, eps=0.0,
              random_state=0)
    raw = rw.RWRegressor(**kw)
    raw._make_map = _raw_map_factory(raw)
    raw.fit(X, y)
    nrm = rw.RWRegressor(**kw).fit(X, y)
    np.testing.assert_allclose(raw.predict(X), nrm.predict(X), rtol=1e-6, atol=1e-8)
    assert raw.rkhs_norm() == pytest.approx(nrm.rkhs_norm(), rel=1e-6)


def _raw_map_factory(est):
    from rwtool.features import RWExpRelu

    def make(seed):
        return RWExpRelu(n_features=est.n_features, sigma=est.sigma, gamma=est.gamma,
                         normalize=False, random_state=seed)
    return make


def test_progress_events_and_cancellation(binary_data):
    X, y = binary_data
    events = []
    rw.RWClassifier(n_features=30, block_size=50, random_state=0, reg=1e-6).fit(
        X, y, callback=lambda e: events.append(e))
    stages = [e.stage for e in events if e.kind == "start"]
    # a classifier's solve forms G a panel at a time (solvers._ridge.GramRows); a regressor,
    # which keeps G's sums for its posterior, computes it first
    assert stages == ["normal equations", "solve"]
    assert events[-1].kind == "end" and events[-1].stage == "solve"
    events.clear()
    rw.RWRegressor(n_features=30, block_size=50, random_state=0, reg=1e-6).fit(
        X, y.astype(float), callback=lambda e: events.append(e))
    assert [e.stage for e in events if e.kind == "start"] == ["features", "normal equations",
                                                              "solve"]
    est = rw.RWClassifier(n_features=30, block_size=50, random_state=0, reg=1e-6).fit(X, y)
    with pytest.raises(FitCancelled) as info:
        est.fit(X, y, callback=lambda e: e.stage == "normal equations")
    assert not info.value.partial_model
    with pytest.raises(NotFittedError):
        est.predict(X)  # a cancelled refit does not leave the previous model behind


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_bad_arrays_get_clear_errors(cls, binary_data):
    X, y = binary_data
    est = cls(n_features=10)
    Xn = X.copy()
    Xn[4, 2] = np.nan
    with pytest.raises(ValueError, match=r"NaN \(first at row 4, column 2\)"):
        est.fit(Xn, y)
    Xi = X.copy()
    Xi[1, 0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        est.fit(Xi, y)
    with pytest.raises(ValueError, match="rows but y has"):
        est.fit(X, y[:-1])
    with pytest.raises(ValueError, match="Reshape your data"):
        est.fit(X[:, 0], y)
    with pytest.raises(NotFittedError, match="not fitted"):
        est.predict(X)
    est.fit(X, y)
    with pytest.raises(ValueError, match="expecting 4 features"):
        est.predict(X[:, :3])


def test_one_class_refused(binary_data):
    X, _ = binary_data
    with pytest.raises(ValueError, match="1 class only"):
        rw.RWClassifier(n_features=10).fit(X, np.zeros(len(X)))


@pytest.mark.parametrize("params,match", [
    ({"instantiation": "rwfoo"}, "instantiation"), ({"solver": "ridge"}, "solver"),
    ({"reg": -1.0}, "reg"), ({"sigma": 0.0}, "sigma"), ({"theta": 1.5}, "theta"),
    ({"instantiation": "rwexpsign", "sigma": 2.0, "gamma": 1.0}, "sigma < gamma"),
    ({"instantiation": "rwexprelu", "kappa": 0.5}, "kappa"), ({"eps": -1.0}, "eps"),
])
def test_bad_parameters_named(params, match, binary_data):
    X, y = binary_data
    with pytest.raises(ValueError, match=match):
        rw.RWClassifier(n_features=10, **params).fit(X, y)


def test_rks_bad_parameters(binary_data):
    X, y = binary_data
    with pytest.raises(ValueError, match="base"):
        rw.RKSClassifier(base="tanh").fit(X, y)
    with pytest.raises(ValueError, match="solver"):
        rw.RKSClassifier(solver="lstsq").fit(X, y)
    with pytest.raises(ValueError, match="kernel"):
        rw.RKSClassifier(base="fourier", kernel="rbf").fit(X, y)


@pytest.mark.slow
def test_breast_cancer_accuracy_matches_the_paper():
    """003 Table 12: RWSign least squares, T = 2000, test error 0.048 on breast cancer."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0)
    errs = [1 - rw.RWClassifier(instantiation="rwsign", n_features=2000, reg=1e-4, sigma=0.5,
                                theta=0.5, random_state=s).fit(Xtr, ytr).score(Xte, yte)
            for s in range(3)]
    assert np.mean(errs) <= 0.048 + 0.01


@pytest.mark.slow
def test_rks_fourier_default_bandwidth_is_data_scaled():
    """sigma=None gives Fourier features the bandwidth of scikit-learn's gamma="scale" on the
    standardised inputs; sigma=1 (the old default) sat at chance level once d was 20."""
    from sklearn.datasets import make_classification
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.linear_model import RidgeClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    X, y = make_classification(1500, 20, n_informative=8, random_state=0)
    Xtr, Xte, ytr, yte = X[:1000], X[1000:], y[:1000], y[1000:]
    est = rw.RKSClassifier(base="fourier", n_features=400, random_state=0).fit(Xtr, ytr)
    assert est.feature_map_.sigma == pytest.approx(np.sqrt(20 / 2))
    sk = make_pipeline(StandardScaler(), RBFSampler(gamma="scale", n_components=400,
                                                     random_state=0),
                       RidgeClassifier(alpha=1e-3)).fit(Xtr, ytr)
    assert 1 - est.score(Xte, yte) <= (1 - sk.score(Xte, yte)) + 0.03
    old = rw.RKSClassifier(base="fourier", n_features=400, sigma=1.0, random_state=0)
    assert 1 - old.fit(Xtr, ytr).score(Xte, yte) > 0.3          # what the default used to do
    assert rw.RKSClassifier(base="relu").fit(Xtr, ytr).feature_map_.sigma == 1.0
