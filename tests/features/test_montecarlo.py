"""Monte Carlo features of any instantiation (rwtool.Instantiation, closed_form=False).

Oracles: the five closed forms (themselves checked against 10^6-draw Monte Carlo in
tests/features/test_rkhs.py). The Monte Carlo error must shrink like S^(-1/2) (slope of a
log-log fit), faster with scrambled Sobol points; fitted models must agree with the closed-form
models; user numba pieces must train, save, load and predict; errors must name the function.
"""

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from numba import njit

import rwtool as rw
from rwtool.features import INSTANTIATIONS
from rwtool.features._rkhs_mc import MonteCarloRKHS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIZES = (256, 1024, 4096, 16384)


def _rel_error(name, X, S, sampling, seeds=(0, 1, 2)):
    """Root-mean-square error of the Monte Carlo features relative to the closed form's RMS."""
    cls = INSTANTIATIONS[name]
    num = den = 0.0
    for seed in seeds:
        exact = cls(n_features=40, random_state=seed).fit(X).transform(X)
        mc = cls(n_features=40, random_state=seed, closed_form=False, n_draws=S,
                 sampling=sampling).fit(X)
        num += np.mean((mc.transform(X) - exact) ** 2)
        den += np.mean(exact ** 2)
    return np.sqrt(num / den)


def _slope(errors):
    return np.polyfit(np.log(SIZES), np.log(errors), 1)[0]


@pytest.fixture(scope="module")
def inputs():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((120, 6))
    X[0] = 0.0            # x = 0 (r(u, 0) := 0)
    X[1] *= 20.0          # a large ||x||
    return X


@pytest.mark.parametrize("name", list(INSTANTIATIONS))
def test_monte_carlo_converges_like_inverse_sqrt_S(name, inputs):
    errors = [_rel_error(name, inputs, S, "mc") for S in SIZES]
    assert -0.62 < _slope(errors) < -0.38, errors
    assert errors[-1] < 0.1


@pytest.mark.parametrize("name", list(INSTANTIATIONS))
def test_qmc_converges_faster(name, inputs):
    mc = [_rel_error(name, inputs, S, "mc") for S in SIZES]
    qmc = [_rel_error(name, inputs, S, "qmc") for S in SIZES]
    assert _slope(qmc) < -0.55, qmc          # faster than S^(-1/2)
    assert qmc[-1] < 0.6 * mc[-1], (qmc, mc)


@pytest.mark.parametrize("name", list(INSTANTIATIONS))
def test_same_centres_as_closed_form(name, inputs):
    cls = INSTANTIATIONS[name]
    a = cls(n_features=30, random_state=4).fit(inputs)
    b = cls(n_features=30, random_state=4, closed_form=False, n_draws=512).fit(inputs)
    for key, value in a.fitted_state().items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(value, getattr(b, key))
    np.testing.assert_array_equal(a.gram(), b.gram())     # G is exact, not estimated
    assert (a.theta_, a.kappa_) == (b.theta_, b.kappa_)


def test_instantiation_equals_closed_form_map_with_mc(inputs):
    """Instantiation("normal", "gaussian", "sign") is RWSign's Monte Carlo version (at the same
    theta: their defaults differ, 0.1 and 0.5)."""
    a = rw.features.RWSign(n_features=30, closed_form=False, n_draws=500, theta=0.5,
                           random_state=2).fit(inputs)
    b = MonteCarloRKHS("normal", "gaussian", "sign", n_features=30, n_draws=500, theta=0.5,
                       random_state=2).fit(inputs)
    np.testing.assert_allclose(a.transform(inputs), b.transform(inputs), rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("name,parts", [
    ("rwsign", ("normal", "gaussian", "sign")),
    ("rwrelu", ("normal", "gaussian", "relu")),
    ("rwstumps", ("stumps", "indicator-gaussian", "stump")),
])
def test_fitted_models_agree(name, parts, binary_data, regression_data):
    X, y = binary_data
    # one theta for both: the closed forms default to 0.1, Monte Carlo Gaussian kernels to 0.5
    kw = dict(n_features=100, reg=1e-4, theta=0.5, random_state=0)
    exact = rw.RWClassifier(instantiation=name, **kw).fit(X, y)
    mc = rw.RWClassifier(instantiation=rw.Instantiation(*parts, n_draws=16384), **kw).fit(X, y)
    assert np.mean(exact.predict(X) == mc.predict(X)) > 0.95
    assert abs(exact.score(X, y) - mc.score(X, y)) < 0.03
    Xr, yr = regression_data
    exact = rw.RWRegressor(instantiation=name, **kw).fit(Xr, yr)
    mc = rw.RWRegressor(instantiation=rw.Instantiation(*parts, n_draws=16384), **kw).fit(Xr, yr)
    assert abs(exact.score(Xr, yr) - mc.score(Xr, yr)) < 0.03
    np.testing.assert_allclose(mc.predict(Xr), exact.predict(Xr), atol=0.15 * np.std(yr))


def test_names_and_tuning_space():
    from rwtool.features._instantiation import resolve
    from rwtool.model_selection._search import default_space
    inst = resolve("mc:cauchy:gaussian:relu:2000:mc")
    assert (inst.distribution, inst.kernel, inst.base, inst.n_draws, inst.sampling) == \
        ("cauchy", "gaussian", "relu", 2000, "mc")
    assert set(default_space(rw.RWClassifier(instantiation=inst))) == {"sigma", "reg", "theta"}
    est = rw.RWClassifier(instantiation="mc:normal:polynomial:tanh")
    assert set(default_space(est)) == {"sigma", "reg", "gamma"}
    named = rw.Instantiation("laplace", "exponential", "sigmoid", name="lap-exp")
    assert resolve("lap-exp") is named
    assert set(default_space(rw.RWRegressor(instantiation="lap-exp"))) == {"sigma", "reg", "kappa"}
    with pytest.raises(ValueError, match="mc:<distribution>"):
        resolve("nonsense")


def test_bounds_mark_estimates(binary_data):
    X, y = binary_data
    clf = rw.RWClassifier(instantiation="mc:normal:gaussian:sign", n_features=60, theta=0.5,
                          random_state=0).fit(X, y)
    b = clf.bounds(X, y, n_draws=100)
    assert b["theta_kappa"] == "Monte Carlo estimates"
    assert b["kappa"] == pytest.approx(1.0)            # K(w, w) = 1, |sign| = 1
    # the closed form's theta is an upper bound (003 Table 2) of the quantity estimated
    exact = rw.RWClassifier(instantiation="rwsign", n_features=60, theta=0.5,
                            random_state=0).fit(X, y)
    assert 0.0 < b["theta"] <= exact.feature_map_.theta_ * 1.05
    assert exact.bounds(X, y, n_draws=100)["theta_kappa"] == "003 Table 2"


# ----------------------------------------------------------------------------- user functions

@njit
def soft_sign(w, x):
    s = 0.0
    for j in range(w.shape[0]):
        s += w[j] * x[j]
    return s / (1.0 + abs(s))


def student_sampler(rng, size, n_in):
    return rng.standard_t(3.0, size=(size, n_in))


def _user_inst():
    return rw.Instantiation(distribution=student_sampler, kernel="gaussian", base=soft_sign,
                            n_draws=600, bias=True)


@pytest.mark.slow
def test_custom_base_and_sampler_train_save_load_predict(tmp_path, binary_data):
    X, y = binary_data
    clf = rw.RWClassifier(instantiation=_user_inst(), n_features=80, random_state=1).fit(X, y)
    assert clf.score(X, y) > 0.8
    assert clf.feature_map_.base == "soft_sign"
    path = tmp_path / "m.rwm"
    rw.save(clf, path)
    back = rw.load(path)
    np.testing.assert_array_equal(back.decision_function(X), clf.decision_function(X))
    # a fresh process without the functions is refused with the fix; with them it loads
    code = textwrap.dedent(f"""
        import rwtool as rw, sys
        try:
            rw.load({str(path)!r})
        except rw.ModelFileError as exc:
            print("REFUSED", exc)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=_env(1), cwd=ROOT, timeout=300)
    assert "REFUSED" in out.stdout and "register" in out.stdout, out.stdout + out.stderr
    code = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {os.path.dirname(__file__)!r})
        import numpy as np, rwtool as rw
        from test_montecarlo import _user_inst
        _user_inst()
        m = rw.load({str(path)!r})
        print(float(m.decision_function(np.ones((1, 4)))[0]))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=_env(1), cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout.split()[-1]) == float(clf.decision_function(np.ones((1, 4)))[0])


@pytest.mark.slow
def test_builtin_pieces_load_without_registration(tmp_path, regression_data):
    X, y = regression_data
    reg = rw.RWRegressor(instantiation="mc:laplace:polynomial:tanh:800", n_features=50,
                         random_state=0).fit(X, y)
    path = tmp_path / "r.rwm"
    rw.save(reg, path)
    code = textwrap.dedent(f"""
        import numpy as np, rwtool as rw
        m = rw.load({str(path)!r})
        print(repr(float(m.predict(np.full((1, 3), 0.5))[0])))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=_env(1), cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout.split()[-1]) == float(reg.predict(np.full((1, 3), 0.5))[0])


def _env(threads):
    env = dict(os.environ, PYTHONPATH=ROOT, NUMBA_NUM_THREADS=str(threads),
               OPENBLAS_NUM_THREADS="1")
    return env


@pytest.mark.slow
def test_same_model_whatever_the_thread_count(tmp_path):
    """numba's thread count changes no bit of a Monte Carlo model: one process started with 2
    threads fits on 2, then on 1 (numba.set_num_threads), and the decision values are equal."""
    path = tmp_path / "d.npy"
    code = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {os.path.dirname(__file__)!r})
        import numba, numpy as np, rwtool as rw
        from test_montecarlo import _user_inst
        rng = np.random.default_rng(0)
        X = rng.standard_normal((300, 4)); y = (X[:, 0] * X[:, 1] > 0).astype(int)
        def fits():
            out = []
            for inst in (_user_inst(), "mc:stumps:indicator-gaussian:stump",
                         "mc:cauchy:polynomial:relu:700:mc"):
                clf = rw.RWClassifier(instantiation=inst, n_features=70, random_state=3)
                out.append(clf.fit(X, y).decision_function(X))
            return np.concatenate(out)
        two = fits()
        numba.set_num_threads(1)
        np.save({str(path)!r}, np.stack([two, fits()]))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=_env(2), cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr
    two, one = np.load(path)
    np.testing.assert_array_equal(two, one)


# ----------------------------------------------------------------------------- errors

def test_function_that_does_not_compile_is_refused_at_fit(binary_data):
    X, y = binary_data

    def bad_base(w, x):
        return {"a": w}["a"][0] + object().__hash__()

    inst = rw.Instantiation(base=bad_base, n_draws=100, bias=True)
    with pytest.raises(ValueError, match=r"bad_base.*phi\(w, x\)"):
        rw.RWClassifier(instantiation=inst, n_features=20).fit(X, y)


def test_wrong_signature_is_refused():
    def one_arg(w):
        return 1.0

    with pytest.raises(TypeError, match=r"one_arg.*takes 1 argument.*\(w, x\)"):
        rw.Instantiation(base=one_arg)
    def two_args(rng, n):
        return None

    with pytest.raises(TypeError, match=r"two_args.*must be .*\(rng, size, n_in\)"):
        rw.Instantiation(distribution=two_args)
    with pytest.raises(ValueError, match="lambdas have none"):
        rw.Instantiation(base=lambda w, x: 0.0)


def test_non_finite_output_is_refused_at_fit(binary_data):
    X, y = binary_data

    @njit
    def log_base(w, x):
        return np.log(w[0] * x[0])      # NaN for negative products

    inst = rw.Instantiation(base=log_base, n_draws=200, bias=True)
    with pytest.raises(ValueError, match=r"log_base.*finite"):
        rw.RWClassifier(instantiation=inst, n_features=20).fit(X, y)


def test_bad_samplers_are_refused(binary_data):
    X, y = binary_data

    def global_state(rng, size, n_in):
        return np.random.standard_normal((size, n_in))

    def flat(rng, size, n_in):
        return rng.standard_normal(size)

    for func, match in ((global_state, "same seed"), (flat, r"\(size, d\)")):
        inst = rw.Instantiation(distribution=func, n_draws=100)
        with pytest.raises(ValueError, match=match):
            rw.RWClassifier(instantiation=inst, n_features=20).fit(X, y)
    with pytest.raises(ValueError, match="sampling='qmc'"):
        rw.RWClassifier(instantiation=rw.Instantiation(distribution=student_sampler,
                                                         sampling="qmc"),
                        n_features=20).fit(X, y)


def test_unregistered_name_says_how_to_register(binary_data):
    X, y = binary_data
    fmap = MonteCarloRKHS(base="no_such_base", n_features=10)
    with pytest.raises(ValueError, match=r"rwtool.register_base\('no_such_base'"):
        fmap.fit(X)


def test_mostly_zero_features_warn_with_the_fix(binary_data):
    X, y = binary_data
    with pytest.warns(RuntimeWarning, match="mostly zero.*raise gamma"):
        rw.RWClassifier(instantiation="mc:normal:gaussian:sign:500", gamma=0.05,
                        n_features=20).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        rw.RWClassifier(instantiation="mc:normal:gaussian:sign:500", n_features=20).fit(X, y)


def test_cli_trains_and_predicts_by_name(capsys, tmp_path):
    import json
    from rwtool import cli
    samples = os.path.join(ROOT, "samples", "moons.csv")
    model = tmp_path / "m.rwm"
    code = cli.main(["train", samples, "--target", "label", "--instantiation",
                     "mc:laplace:gaussian:tanh:600", "-T", "80", "--out", str(model), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["metrics"]["test_error"] < 0.25
    assert any("Monte Carlo estimates" in n for n in doc.get("notes", [])), doc.get("notes")
    code = cli.main(["predict", str(model), samples, "--json"])
    assert code == 0 and len(json.loads(capsys.readouterr().out)["columns"]["prediction"]) == 400


def test_inconsistent_draws_in_a_model_file_are_refused(tmp_path, binary_data):
    """A file whose draws disagree with the centres is refused when loaded."""
    X, y = binary_data
    clf = rw.RWClassifier(instantiation="mc:normal:gaussian:relu:300", n_features=30,
                          random_state=0).fit(X, y)
    clf.feature_map_.mc_.draws_ = clf.feature_map_.mc_.draws_[:, :3]
    path = tmp_path / "bad.rwm"
    rw.save(clf, path)
    with pytest.raises(rw.ModelFileError, match="shape"):
        rw.load(path)


@njit
def laplacian_kernel(u, w):
    d = 0.0
    for j in range(u.shape[0]):
        d += abs(u[j] - w[j])
    return np.exp(-0.5 * d)


@pytest.mark.slow
def test_custom_numba_kernel_trains_saves_and_loads(tmp_path, regression_data):
    X, y = regression_data
    inst = rw.Instantiation("normal", laplacian_kernel, "relu", n_draws=800)
    reg = rw.RWRegressor(instantiation=inst, n_features=60, random_state=2).fit(X, y)
    fmap = reg.feature_map_
    U = fmap.W_
    G = np.exp(-0.5 * np.abs(U[:, None, :] - U[None, :, :]).sum(-1))   # numpy oracle
    np.testing.assert_allclose(fmap.gram(), G, rtol=1e-12)
    # the features are the shared-draw average of K(u_t, w_s) phi(w_s, x) (numpy oracle)
    Xp = reg._prepare_X(X[:5])
    D = fmap.mc_.draws_
    K = np.exp(-0.5 * np.abs(D[:, None, :] - U[None, :, :]).sum(-1))
    np.testing.assert_allclose(fmap.transform(Xp), np.maximum(Xp @ D.T, 0) @ K / len(D),
                               rtol=1e-4, atol=1e-6)
    assert reg.score(X, y) > 0.8
    path = tmp_path / "k.rwm"
    rw.save(reg, path)
    np.testing.assert_array_equal(rw.load(path).predict(X), reg.predict(X))


@pytest.mark.parametrize("base,phi", [
    ("sign", np.sign), ("relu", lambda z: np.maximum(z, 0.0)), ("tanh", np.tanh),
    ("sigmoid", lambda z: 1.0 / (1.0 + np.exp(-z)))])
@pytest.mark.parametrize("distribution", ["normal", "uniform"])
def test_antithetic_folding_is_exact(base, phi, distribution, inputs):
    """The folded product equals the plain average over all (w, -w) draws (numpy oracle)."""
    fmap = MonteCarloRKHS(distribution, "gaussian", base, n_features=25, n_draws=300,
                          sampling="mc", random_state=0).fit(inputs)
    D, U = fmap.mc_.draws_, fmap.W_
    assert fmap.mc_.antithetic and np.array_equal(D[150:], -D[:150])
    K = np.exp(-((D[:, None, :] - U[None, :, :]) ** 2).sum(-1) / (2 * fmap.gamma_ ** 2))
    expected = phi(inputs @ D.T) @ K / len(D)
    np.testing.assert_allclose(fmap.transform(inputs), expected, rtol=1e-4,
                               atol=1e-5 * np.abs(expected).max())


@pytest.mark.parametrize("sampling", ["mc", "qmc"])
def test_stump_features_by_column_equal_the_dense_product(sampling, inputs):
    """The per-column products of the indicator kernel equal (1/S) phi(X; w) K (numpy oracle)."""
    fmap = rw.features.RWStumps(n_features=40, closed_form=False, n_draws=700,
                                sampling=sampling, random_state=1).fit(inputs)
    D = fmap.mc_.draws_
    same = fmap.idx_[None, :] == D[:, :1].astype(int)
    K = same * np.exp(-(D[:, 1:2] - fmap.thr_[None, :]) ** 2 / (2 * fmap.gamma_ ** 2))
    B = np.sign(inputs[:, D[:, 0].astype(int)] - D[:, 1][None, :])
    expected = B @ K / len(D)
    np.testing.assert_allclose(fmap.transform(inputs), expected, rtol=1e-4,
                               atol=1e-6 * np.abs(expected).max())


def test_registering_another_function_under_a_name_warns():
    def twice_relu(w, x):
        return 2.0 * max(0.0, np.dot(w, x))

    rw.register_base("twice_relu", twice_relu)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rw.register_base("twice_relu", twice_relu)      # the same code again: silent

    def other(w, x):
        return 3.0

    with pytest.warns(UserWarning, match="registered with another function"):
        rw.register_base("twice_relu", other)


def test_sections_too_large_for_memory_are_refused_before_allocation(monkeypatch, binary_data):
    import rwtool.resources as resources
    X, y = binary_data
    monkeypatch.setattr(resources, "available_memory", lambda: 50_000_000)
    with pytest.raises(rw.InsufficientMemoryError, match="lower n_draws"):
        rw.RWClassifier(instantiation="mc:normal:gaussian:relu:100000", n_features=200,
                        random_state=0).fit(X, y)
