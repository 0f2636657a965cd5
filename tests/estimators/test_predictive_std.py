"""predict(X, return_std=True): the posterior predictive standard deviation of the Bayesian
linear model on the features, against a dense numpy computation, repeated rows, the coverage
of a well-specified model, partial_fit and save/load."""

import os
import warnings

import numpy as np
import pytest

import rwtool as rw
from rwtool.exceptions import NumericalWarning


@pytest.fixture
def data():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 3))
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 / 2 + 0.3 * rng.standard_normal(300)
    return X, y, rng.standard_normal((500, 3))


def _dense_std(est, X, Y, Xt, w=None):
    """The oracle, from the definitions with dense numpy solves: M = Phi^T W Phi + m reg R +
    m eps I, s2 = RSS / (m - tr(M^-1 Phi^T W Phi)), std = sqrt(s2 (1 + phi^T M^-1 phi))."""
    Phi = est.feature_matrix(X)
    w = np.ones(len(X)) if w is None else np.asarray(w, float)
    m, T = w.sum(), Phi.shape[1]
    R = est.feature_map_.gram() if est._family == "rw" else np.eye(T)
    eps = est.eps if est._family == "rw" else 0.0
    A = Phi.T @ (w[:, None] * Phi)
    M = A + m * est.reg_ * R + m * eps * np.eye(T)
    Ys = est.y_scaler_.transform(Y.reshape(len(X), -1))
    a = np.linalg.solve(M, Phi.T @ (w[:, None] * Ys))
    s2 = (w @ (Ys - Phi @ a) ** 2) / (m - np.trace(np.linalg.solve(M, A)))
    Pt = est.feature_matrix(Xt)
    q = np.einsum("ij,ji->i", Pt, np.linalg.solve(M, Pt.T))
    return np.sqrt(np.outer(1 + q, s2)) * est.y_scaler_.scale


@pytest.mark.parametrize("est", [rw.RWRegressor(n_features=120, reg=1e-4, random_state=0),
                                 rw.RWRegressor(n_features=120, random_state=0),
                                 rw.RKSRegressor(n_features=120, random_state=0),
                                 rw.RKSRegressor(base="fourier", n_features=120, reg=1e-3,
                                                 random_state=0)],
                         ids=["rw-fixed", "rw-auto", "rks-auto", "rks-fourier"])
def test_std_equals_the_dense_computation(est, data):
    X, y, Xt = data
    mean, std = est.fit(X, y).predict(Xt, return_std=True)
    np.testing.assert_array_equal(mean, est.predict(Xt))
    assert std.shape == mean.shape
    # the dense solves lose up to cond(M) ~ 1e8 (reg_ as small as 1e-9) times 1e-16
    np.testing.assert_allclose(std, _dense_std(est, X, y, Xt)[:, 0], rtol=1e-7)


def test_std_of_several_outputs_and_of_weights(data):
    X, y, Xt = data
    Y = np.column_stack([y, 3 * X[:, 2] + 0.1 * y])
    w = np.random.default_rng(0).integers(0, 4, len(y))
    est = rw.RKSRegressor(n_features=80, reg=1e-3, random_state=0).fit(X, Y, sample_weight=w)
    mean, std = est.predict(Xt, return_std=True)
    assert std.shape == mean.shape == (len(Xt), 2)
    np.testing.assert_allclose(std, _dense_std(est, X, Y, Xt, w), rtol=1e-8)
    # integer weights are repeated rows for the posterior too (the noise is per copy)
    rep = rw.RKSRegressor(n_features=80, reg=1e-3, random_state=0).fit(X.repeat(w, axis=0),
                                                                     Y.repeat(w, axis=0))
    np.testing.assert_allclose(std, rep.predict(Xt, return_std=True)[1], rtol=1e-8)


def test_the_90_percent_interval_covers_90_percent_of_a_well_specified_model():
    # y drawn from the model itself: features of fixed centres, coefficients from the prior
    # N(0, s2 / (m reg) I), noise N(0, s2). 4000 test rows: the binomial standard deviation of
    # the coverage is 0.005, the estimate of s2 moves it by about 1/sqrt(m) relative
    rng = np.random.default_rng(7)
    m, n_test, T, reg, s2 = 1500, 4000, 100, 1e-3, 0.25
    X = rng.standard_normal((m + n_test, 4))
    probe = rw.RKSRegressor(n_features=T, reg=reg, standardize=False, random_state=3).fit(
        X[:m], np.zeros(m))
    a = rng.standard_normal(T) * np.sqrt(s2 / (m * reg))
    y = probe.feature_matrix(X) @ a + np.sqrt(s2) * rng.standard_normal(len(X))
    est = rw.RKSRegressor(n_features=T, reg=reg, standardize=False, random_state=3).fit(
        X[:m], y[:m])
    assert est.noise_var_[0] == pytest.approx(s2, rel=0.1)
    mean, std = est.predict(X[m:], return_std=True)
    inside = np.mean(np.abs(y[m:] - mean) <= 1.6448536269514722 * std)
    assert 0.87 <= inside <= 0.93


def test_partial_fit_and_save_load_keep_the_posterior(data, tmp_path):
    from rwtool.scale._streaming import Moments
    X, y, Xt = data
    ref = rw.RWRegressor(n_features=60, random_state=0).fit(X, y)
    est = rw.RWRegressor(n_features=60, random_state=0)
    for k, part in enumerate(np.array_split(np.arange(len(y)), 3)):
        est.partial_fit(X[part], y[part], x_scaler=Moments.of(X) if k == 0 else None,
                        y_scaler=Moments.of(y) if k == 0 else None)
    np.testing.assert_allclose(est.predict(Xt, return_std=True)[1],
                               ref.predict(Xt, return_std=True)[1], rtol=1e-7)
    rw.save(ref, tmp_path / "m.rwm")
    back = rw.load(tmp_path / "m.rwm")
    np.testing.assert_array_equal(back.posterior_chol_, ref.posterior_chol_)
    np.testing.assert_array_equal(back.predict(Xt, return_std=True)[1],
                                  ref.predict(Xt, return_std=True)[1])


def test_save_can_leave_the_posterior_factor_out(data, tmp_path):
    # the file without the factor is smaller by the T x T float64 array itself (plus its
    # .npy header), the means are those of the saved model bit for bit, and return_std says
    # how to get the factor back; the in-memory model keeps it
    X, y, Xt = data
    T = 80
    ref = rw.RWRegressor(n_features=T, random_state=0).fit(X, y)
    full = rw.save(ref, tmp_path / "full.rwm")
    slim = rw.save(ref, tmp_path / "slim.rwm", keep_posterior=False)
    saved_bytes = os.path.getsize(full) - os.path.getsize(slim)
    assert 8 * T * T <= saved_bytes <= 8 * T * T + 1024
    assert hasattr(ref, "posterior_chol_")
    back = rw.load(slim)
    assert not hasattr(back, "posterior_chol_")
    np.testing.assert_array_equal(back.noise_var_, ref.noise_var_)
    np.testing.assert_array_equal(back.predict(Xt), ref.predict(Xt))
    with pytest.raises(ValueError, match="saved without its posterior factor.*"
                                         "keep_posterior=True"):
        back.predict(Xt, return_std=True)
    # saved again from the loaded model: still no factor, the same error
    rw.save(back, tmp_path / "again.rwm")
    with pytest.raises(ValueError, match="keep_posterior"):
        rw.load(tmp_path / "again.rwm").predict(Xt, return_std=True)


def test_cli_train_no_posterior(tmp_path, data):
    from rwtool.cli import main
    X, y, _ = data
    csv = tmp_path / "d.csv"
    np.savetxt(csv, np.column_stack([X, y]), delimiter=",", comments="",
               header=",".join([f"x{j}" for j in range(X.shape[1])] + ["y"]))
    for flag, name in (([], "full.rwm"), (["--no-posterior"], "slim.rwm")):
        assert main(["train", str(csv), "--target", "y", "--method", "rw", "-T", "50",
                     "--reg", "1e-3", "--no-bounds", "--no-progress", "--out",
                     str(tmp_path / name)] + flag) == 0
    assert hasattr(rw.load(tmp_path / "full.rwm"), "posterior_chol_")
    assert not hasattr(rw.load(tmp_path / "slim.rwm"), "posterior_chol_")


def test_models_without_a_posterior_say_which_have_one(data):
    X, y, Xt = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumericalWarning)
        for est in (rw.RWRegressor(n_features=30, solver="lasso", reg=1e-3, random_state=0),
                    rw.RKSRegressor(n_features=30, solver="sgd", random_state=0),
                    rw.RWRegressor(n_features=30, reg=1e-3, random_state=0).fit(X, y).prune(
                        eps=0.5, accept="loss", X=X, y=y)):
            if not hasattr(est, "coef_"):
                est.fit(X, y)
            assert not hasattr(est, "posterior_chol_")
            with pytest.raises(ValueError, match="solver='lstsq'.*'ridge'"):
                est.predict(Xt, return_std=True)
    clf = rw.RWClassifier(n_features=30, random_state=0).fit(X, y > 0)
    assert not hasattr(clf, "posterior_chol_")      # T^2 kept by regressors only
    with pytest.raises(TypeError):
        clf.predict(Xt, return_std=True)
