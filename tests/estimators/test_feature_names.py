"""Feature names in and out, by scikit-learn's conventions (issue 25 item 3).

Oracles: scikit-learn's own check of the conventions (check_dataframe_column_names_consistency:
``feature_names_in_`` after a DataFrame fit, its warnings and its errors on predict), and
scikit-learn's Pipeline driving ``set_output``.
"""

import warnings

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
from sklearn.linear_model import Ridge  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.utils.estimator_checks import check_dataframe_column_names_consistency  # noqa: E402

import rwtool as rw  # noqa: E402
from rwtool import features as F  # noqa: E402

ESTIMATORS = [
    rw.RWClassifier(n_features=30, random_state=0),
    rw.RWRegressor("rwstumps", n_features=30, random_state=0),
    rw.RKSClassifier("fourier", n_features=30, random_state=0),
    rw.RKSRegressor(n_features=30, random_state=0),
    rw.RFSGDClassifier(n_features=30, n_epochs=1, random_state=0),
    rw.GreedyMKClassifier(n_features=10, random_state=0),
    rw.GreedyMKRegressor(n_features=10, random_state=0),
    rw.BKerNNRegressor(n_particles=5, max_iter=2, random_state=0),
    rw.BKerNNClassifier(n_particles=5, max_iter=2, random_state=0),
]
MAPS = [F.RWSign(n_features=12, random_state=0), F.RWStumps(n_features=12, random_state=0),
        F.KitchenRelu(n_features=12, random_state=0),
        F.RandomFourierFeatures(n_features=6, random_state=0),
        F.MonteCarloRKHS(n_features=12, n_draws=64, random_state=0),
        F.TaylorMultiKernelFeatures(gauss_order=2)]


@pytest.mark.parametrize("est", ESTIMATORS + MAPS, ids=lambda e: type(e).__name__)
def test_scikit_learn_column_name_conventions(est):
    check_dataframe_column_names_consistency(type(est).__name__, est)


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.standard_normal((80, 3)), columns=["age", "income", "height"],
                     index=np.arange(100, 180))
    return X, X["age"] - X["income"] ** 2


def test_predict_checks_names_and_persist_keeps_them(frame, tmp_path):
    X, y = frame
    est = rw.RWRegressor(n_features=20, random_state=0).fit(X, y)
    assert list(est.feature_names_in_) == ["age", "income", "height"]
    with pytest.raises(ValueError, match=r"(?s)unseen at fit time:\n- weight.*now missing:\n"
                                         r"- height"):
        est.predict(X.rename(columns={"height": "weight"}))
    with pytest.raises(ValueError, match="same order"):
        est.predict(X[["income", "age", "height"]])
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        est.predict(X.to_numpy())
    rw.save(est, tmp_path / "m.rwm")
    mf = rw.read_model(tmp_path / "m.rwm")
    loaded = mf.estimator
    assert list(loaded.feature_names_in_) == ["age", "income", "height"]
    assert mf.info["feature_names"] == ["age", "income", "height"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    with pytest.raises(ValueError, match="should match"):
        loaded.predict(X.rename(columns={"age": "AGE"}))
    refit = rw.RWRegressor(n_features=20, random_state=0).fit(X.to_numpy(), y)
    assert not hasattr(refit, "feature_names_in_")


def test_partial_fit_keeps_the_first_chunks_names(frame):
    X, y = frame
    est = rw.RKSRegressor(n_features=20, reg=1e-3, random_state=0)
    est.partial_fit(X[:40], y[:40])
    with pytest.raises(ValueError, match="should match"):
        est.partial_fit(X[40:].rename(columns={"age": "a"}), y[40:])
    est.partial_fit(X[40:], y[40:])
    assert list(est.feature_names_in_) == ["age", "income", "height"]


def test_mixed_column_name_types_are_refused(frame):
    X, y = frame
    with pytest.raises(TypeError, match="all input features have string names"):
        rw.RWRegressor(n_features=10).fit(X.set_axis(["age", 1, "height"], axis=1), y)


@pytest.mark.parametrize("fmap", MAPS, ids=lambda m: type(m).__name__)
def test_feature_names_out_and_pandas_output(fmap, frame):
    X, _ = frame
    fmap = fmap.fit(X)
    names = fmap.get_feature_names_out()
    assert names.dtype == object and len(names) == fmap.n_output_ == len(set(names))
    assert list(fmap.get_feature_names_out(["age", "income", "height"])) == list(names)
    with pytest.raises(ValueError, match="input_features"):
        fmap.get_feature_names_out(["a", "b", "c"])
    out = fmap.set_output(transform="pandas").transform(X)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == list(names) and list(out.index) == list(X.index)
    np.testing.assert_array_equal(out.to_numpy(), fmap.set_output(transform="default")
                                  .transform(X))
    with pytest.raises(ValueError, match="transform"):
        fmap.set_output(transform="polars-ish")


def test_taylor_names_read_the_inputs(frame):
    X, _ = frame
    names = F.TaylorMultiKernelFeatures(gauss_order=2).fit(X).get_feature_names_out()
    assert names[0] == "gauss:1" and "gauss:age*income" in names and "linear:height" in names


def test_pipeline_set_output_reaches_the_map(frame):
    """scikit-learn's Pipeline.set_output(transform="pandas") sets the map's output too."""
    X, y = frame
    pipe = make_pipeline(F.RWRelu(n_features=15, random_state=0), Ridge())
    pipe.set_output(transform="pandas").fit(X, y)
    Z = pipe[:-1].transform(X)
    assert isinstance(Z, pd.DataFrame) and list(Z.columns)[:2] == ["rwrelu0", "rwrelu1"]
    assert list(pipe[-1].feature_names_in_) == list(Z.columns)


def test_cli_info_shows_the_input_names(frame, tmp_path, capsys):
    """A model fitted on a DataFrame keeps its column names in the model file; rwtool info
    lists them (a CSV-trained model's are its encoded columns, also in the file)."""
    from rwtool.cli import main
    X, y = frame
    rw.save(rw.RKSRegressor(n_features=10, random_state=0).fit(X, y), tmp_path / "m.rwm")
    assert main(["info", str(tmp_path / "m.rwm")]) == 0
    assert "inputs: age, income, height" in capsys.readouterr().out
    assert main(["info", str(tmp_path / "m.rwm"), "--json"]) == 0
    assert __import__("json").loads(capsys.readouterr().out)["feature_names"] == \
        ["age", "income", "height"]


def test_greedy_selection_reads_the_column_names(frame):
    X, y = frame
    est = rw.GreedyMKRegressor(n_features=4, gauss_order=2, reg=1e-3, random_state=0).fit(X, y)
    chosen = est.selected_features()
    assert chosen == est.selected_features(["age", "income", "height"])
    assert any("income" in c for c in chosen) and not any("x1" in c for c in chosen)
