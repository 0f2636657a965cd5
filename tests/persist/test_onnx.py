"""rwtool.to_onnx: the graphs run in onnxruntime and predict what rwtool predicts.

Every graph is run on rows the model never saw (drawn wider than the training rows). Oracles:
the estimator's own predict / decision_function / predict_proba in the same process, and for
the Monte Carlo maps a dense float64 numpy product of the base predictions and the kernel
sections (rwtool itself sums that product in float32). Tolerances, relative to the largest
|value| of each output: 1e-9 in float64 -- the graph sums the same terms in another order
(BLAS against onnxruntime's MLAS), and erf is Cody's rational approximation (a few ulps), so
the differences are rounding amplified by the conditioning of f = sum_t a_t psi_t (measured
1e-16 to 4e-13 here); labels identical. Skipped without onnx and onnxruntime (the test extra
installs both).
"""

import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import rwtool as rw  # noqa: E402
from rwtool.features._montecarlo import base_into  # noqa: E402

RTOL = 1e-9


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((240, 4))
    f = np.sin(X[:, 0]) + X[:, 1] * X[:, 2]
    y2 = np.where(f > 0.2, "yes", "no")
    y3 = np.digitize(f, [-0.5, 0.5])
    Xnew = 1.5 * rng.standard_normal((150, 4))         # unseen, and partly outside the range
    return X, y2, y3, f, Xnew


def run(est, X, tmp_path, **kw):
    path = rw.to_onnx(est, tmp_path / "m.onnx", **kw)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    dtype = np.float32 if kw.get("dtype") == "float32" else np.float64
    outs = sess.run(None, {name: X.astype(dtype)})
    return {o.name: v for o, v in zip(sess.get_outputs(), outs)}


def close(got, want, rtol=RTOL):
    want = np.asarray(want, dtype=float)
    assert got.shape == want.shape
    err = np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-300)
    assert err <= rtol, err


def check_classifier(est, X, tmp_path):
    out = run(est, X, tmp_path)
    close(out["decision"], est.decision_function(X))
    np.testing.assert_array_equal(out["label"], est.predict(X))
    if hasattr(est, "predict_proba"):
        close(out["probabilities"], est.predict_proba(X))


def check_regressor(est, X, tmp_path):
    close(run(est, X, tmp_path)["prediction"], est.predict(X))


CLOSED_FORMS = ["rwsign", "rwexpsign", "rwrelu", "rwexprelu", "rwstumps"]


@pytest.mark.parametrize("inst", CLOSED_FORMS)
def test_closed_forms(inst, data, tmp_path):
    X, y2, y3, f, Xnew = data
    kw = dict(instantiation=inst, n_features=80, random_state=1)
    check_classifier(rw.RWClassifier(**kw).fit(X, y2), Xnew, tmp_path)
    check_classifier(rw.RWClassifier(**kw).fit(X, y3), Xnew, tmp_path)
    check_regressor(rw.RWRegressor(**kw).fit(X, f), Xnew, tmp_path)


def test_solvers_and_options(data, tmp_path):
    """Lasso (a subset of the centres), SFGD, no standardisation, no bias, two outputs."""
    X, y2, y3, f, Xnew = data
    check_classifier(rw.RWClassifier("rwrelu", n_features=60, solver="lasso", reg=1e-3,
                                     random_state=0).fit(X, y3), Xnew, tmp_path)
    check_classifier(rw.RWClassifier("rwsign", n_features=60, solver="sfgd",
                                     random_state=0).fit(X, y2), Xnew, tmp_path)
    est = rw.RWRegressor("rwexpsign", n_features=60, standardize=False, bias=False,
                         random_state=0).fit(X, np.column_stack([f, -2 * f]))
    out = run(est, Xnew, tmp_path)["prediction"]
    close(out, est.predict(Xnew))
    assert out.shape == (len(Xnew), 2)


@pytest.mark.parametrize("base", ["sign", "relu", "stumps", "fourier"])
def test_kitchen_sinks(base, data, tmp_path):
    X, y2, y3, f, Xnew = data
    check_classifier(rw.RKSClassifier(base=base, n_features=80, random_state=2).fit(X, y3),
                     Xnew, tmp_path)
    check_regressor(rw.RKSRegressor(base=base, n_features=80, random_state=2).fit(X, f),
                    Xnew, tmp_path)


@pytest.mark.parametrize("inst", ["mc:normal:gaussian:relu", "mc:cauchy:gaussian:sigmoid",
                                  "mc:normal:exponential:tanh", "mc:laplace:polynomial:sign",
                                  "mc:stumps:indicator-gaussian:stump"])
def test_monte_carlo(inst, data, tmp_path):
    """The graph is the float64 Monte Carlo estimate (the dense oracle to 1e-9); rwtool's
    feature pass sums it in float32 (features/_montecarlo.py), which moves its predictions
    by up to 1e-4 of their range here (measured 5e-5 at worst): the tolerance against
    rwtool's own output is that rounding."""
    X, y2, y3, f, Xnew = data
    est = rw.RWRegressor(instantiation=inst, n_features=80, random_state=4).fit(X, f)
    got = run(est, Xnew, tmp_path)["prediction"]
    mc = est.feature_map_._mc
    Xp = est._prepare_X(Xnew)
    B = base_into(mc.base, Xp, mc.draws, np.empty((len(Xp), len(mc.draws))))
    oracle = est.y_scaler_.inverse_transform((B @ mc.sections()) @ est.coef_)[:, 0]
    close(got, oracle)
    close(got, est.predict(Xnew), rtol=1e-4)
    clf = rw.RWClassifier(instantiation=inst, n_features=80, random_state=4).fit(X, y2)
    out = run(clf, Xnew, tmp_path)
    close(out["decision"], clf.decision_function(Xnew), rtol=1e-4)
    # a label may flip only where rwtool's float32 rounding moves f across 0
    flips = out["label"] != clf.predict(Xnew)
    assert np.all(np.abs(clf.decision_function(Xnew)[flips]) < 1e-4)


def test_closed_form_false(data, tmp_path):
    X, y2, y3, f, Xnew = data
    est = rw.RWRegressor(instantiation="rwstumps", n_features=60, random_state=0)
    est.fit(X, f)
    check_regressor(est, Xnew, tmp_path)


@pytest.mark.slow
def test_user_base_is_refused_by_name_user_kernel_exports(data, tmp_path):
    X, y2, y3, f, Xnew = data

    def my_softsign(w, x):
        z = 0.0
        for j in range(x.shape[0]):
            z += w[j] * x[j]
        return z / (1.0 + abs(z))

    def my_laplace_kernel(u, w):
        s = 0.0
        for j in range(u.shape[0]):
            s += abs(u[j] - w[j])
        return np.exp(-s)

    inst = rw.Instantiation("normal", "gaussian", my_softsign, n_draws=200)
    est = rw.RWRegressor(instantiation=inst, n_features=40, random_state=0).fit(X, f)
    target = tmp_path / "m.onnx"
    target.write_bytes(b"old")
    with pytest.raises(ValueError, match=r"my_softsign\(\).*built-in base"):
        rw.to_onnx(est, target)
    assert target.read_bytes() == b"old"          # nothing half-written replaced it
    assert [p.name for p in tmp_path.iterdir()] == ["m.onnx"]
    inst = rw.Instantiation("normal", my_laplace_kernel, "relu", n_draws=200)
    est = rw.RWRegressor(instantiation=inst, n_features=40, random_state=0).fit(X, f)
    close(run(est, Xnew, tmp_path)["prediction"], est.predict(Xnew), rtol=1e-4)


@pytest.mark.parametrize("variant", ["pair", "phase"])
def test_rfsgd(variant, data, tmp_path):
    X, y2, y3, f, Xnew = data
    for y in (y2, y3):
        est = rw.RFSGDClassifier(n_features=60, variant=variant, random_state=0).fit(X, y)
        check_classifier(est, Xnew, tmp_path)


@pytest.mark.parametrize("selector", ["mfga", "eerf"])
def test_greedy_mk(selector, data, tmp_path):
    X, y2, y3, f, Xnew = data
    kw = dict(selector=selector, n_features=20, random_state=0)
    check_classifier(rw.GreedyMKClassifier(**kw).fit(X, y2), Xnew, tmp_path)
    check_classifier(rw.GreedyMKClassifier(**kw).fit(X, y3), Xnew, tmp_path)
    check_regressor(rw.GreedyMKRegressor(gauss_order=3, reg=1e-3, **kw).fit(X, f), Xnew,
                    tmp_path)


def test_bkernn(data, tmp_path):
    """The graph sums alpha_i |t - p_i| directly where rwtool reads prefix sums: the same
    sum, rounded otherwise (1e-9 of the range covers it)."""
    X, y2, y3, f, Xnew = data
    check_regressor(rw.BKerNNRegressor(n_particles=12, max_iter=3, random_state=0).fit(X, f),
                    Xnew, tmp_path)
    check_classifier(rw.BKerNNClassifier(n_particles=12, max_iter=3, random_state=0)
                     .fit(X, y3), Xnew, tmp_path)


def test_float32_graph(data, tmp_path):
    """A float32 graph (half the size) agrees with the float64 model to float32 rounding
    amplified by the coefficients: measured 5e-6 (rwrelu) and 6e-7 (Fourier) of the range;
    asserted at 1e-4 (docs/DEPLOY.md lists every map's)."""
    X, y2, y3, f, Xnew = data
    for est in (rw.RWRegressor("rwrelu", n_features=80, random_state=0).fit(X, f),
                rw.RKSRegressor("fourier", n_features=80, random_state=0).fit(X, f)):
        out = run(est, Xnew, tmp_path, dtype="float32")["prediction"]
        assert out.dtype == np.float32
        close(out.astype(float), est.predict(Xnew), rtol=1e-4)
    small = os.path.getsize(tmp_path / "m.onnx")
    assert small < 0.7 * os.path.getsize(rw.to_onnx(est, tmp_path / "m64.onnx"))


def test_unfitted_and_foreign_models_are_refused(tmp_path):
    with pytest.raises(ValueError, match="not fitted"):
        rw.to_onnx(rw.RWClassifier(), tmp_path / "m.onnx")
    with pytest.raises(TypeError, match="no ONNX form"):
        rw.to_onnx(object(), tmp_path / "m.onnx")
    assert not any(tmp_path.iterdir())


def test_without_onnx_the_error_says_how_to_install(monkeypatch, data, tmp_path):
    X, y2, y3, f, Xnew = data
    est = rw.RKSRegressor(n_features=10, random_state=0).fit(X, f)
    monkeypatch.setitem(__import__("sys").modules, "onnx", None)
    with pytest.raises(ImportError, match=r'pip install "rwtool\[onnx\]"'):
        rw.to_onnx(est, tmp_path / "m.onnx")


# ----------------------------------------------------------------------------- CSV columns

TRAIN = """age,income,colour,city,label
34,52000,red,Paris,yes
51,,blue,Lyon,no
29,31000,green,Paris,yes
45,61000,red,,no
38,47000,blue,Lyon,yes
60,39000,green,Nice,no
23,28000,red,Nice,yes
41,,blue,Paris,no
36,45000,green,Lyon,yes
57,71000,red,Nice,no
33,36000,blue,Paris,yes
48,58000,green,Lyon,no
"""
NEW = """age,income,colour,city
30,40000,red,Paris
52,,green,NA
44,66000,purple,Lyon
39,43000,blue,
"""


def csv_feeds(path):
    """The raw columns of a CSV as a caller feeds them: numbers (NaN for a missing cell) and
    the cells' text."""
    import csv
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))

    def number(s):
        return float(s) if s not in ("", "NA") else np.nan
    return {"age": np.array([[number(r["age"])] for r in rows]),
            "income": np.array([[number(r["income"])] for r in rows]),
            "colour": np.array([[r["colour"]] for r in rows], dtype=object),
            "city": np.array([[r["city"]] for r in rows], dtype=object)}


@pytest.mark.parametrize("handle_unknown", ["ignore", "error"])
def test_csv_columns_in(handle_unknown, tmp_path):
    """The graph replays the recorded encoding: imputed numbers and categories, one-hot
    columns, an unseen category as zeros ("ignore") or NaN ("error": rwtool refuses the
    row)."""
    train, new = tmp_path / "train.csv", tmp_path / "new.csv"
    train.write_text(TRAIN)
    new.write_text(NEW)
    ds = rw.read_csv(train, target="label", missing="impute-mean",
                     handle_unknown=handle_unknown)
    est = rw.RWClassifier("rwrelu", n_features=40, random_state=0).fit(ds.X, ds.y)
    rw.save(est, tmp_path / "m.rwm", preprocessing=ds)
    mf = rw.read_model(tmp_path / "m.rwm")
    path = rw.to_onnx(mf, tmp_path / "m.onnx")
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [i.name for i in sess.get_inputs()] == ["age", "income", "colour", "city"]
    out = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, csv_feeds(new))))
    if handle_unknown == "ignore":
        Xnew = mf.apply_csv(new).X
        close(out["decision"], est.decision_function(Xnew))
        np.testing.assert_array_equal(out["label"], est.predict(Xnew))
    else:
        with pytest.raises(rw.DataError, match="purple"):
            mf.apply_csv(new)
        ok = np.array([True, True, False, True])
        assert np.isnan(out["decision"][~ok]).all()
        Xok = mf.preprocessing.transform_rows(
            [dict(zip(["age", "income", "colour", "city"], r)) for r in
             [(30, 40000, "red", "Paris"), (52, None, "green", None), (39, 43000, "blue", None)]])
        close(out["decision"][ok], est.decision_function(Xok))


def test_csv_missing_without_imputation_is_nan(tmp_path):
    train = tmp_path / "train.csv"
    train.write_text(TRAIN.replace("red,,no", "red,Lyon,no").replace(",,", ",0,"))
    ds = rw.read_csv(train, target="label")
    est = rw.RKSRegressor(n_features=20, random_state=0).fit(ds.X, (ds.y == "yes") * 1.0)
    path = rw.to_onnx(est, tmp_path / "m.onnx", preprocessing=ds)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    new = tmp_path / "new.csv"
    new.write_text(NEW.replace("purple", "red"))
    pred = sess.run(None, csv_feeds(new))[0]
    assert np.isnan(pred[[1, 3]]).all()          # a missing income, a missing city
    close(pred[[0, 2]], est.predict(ds.preprocessing.transform_rows(
        [{"age": 30, "income": 40000, "colour": "red", "city": "Paris"},
         {"age": 44, "income": 66000, "colour": "red", "city": "Lyon"}])))


def test_cli_export_onnx(tmp_path, capsys):
    """rwtool export-onnx writes the graph of a model file trained by rwtool train."""
    from rwtool.cli import main
    train = tmp_path / "train.csv"
    train.write_text(TRAIN)
    assert main(["train", str(train), "--target", "label", "--missing", "impute-mean",
                 "--handle-unknown", "ignore", "-T", "30", "--test-size", "0", "--no-bounds",
                 "--out", str(tmp_path / "m.rwm"), "-q"]) == 0
    assert main(["export-onnx", str(tmp_path / "m.rwm"), str(tmp_path / "m.onnx"),
                 "--json"]) == 0
    doc = __import__("json").loads(capsys.readouterr().out)
    assert doc["inputs"] == ["age", "income", "colour", "city"]
    assert doc["size_bytes"] == os.path.getsize(tmp_path / "m.onnx")
    new = tmp_path / "new.csv"
    new.write_text(NEW)
    mf = rw.read_model(tmp_path / "m.rwm")
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    label = sess.run(["label"], csv_feeds(new))[0]
    np.testing.assert_array_equal(label, mf.estimator.predict(mf.apply_csv(new).X))
    assert main(["export-onnx", str(tmp_path / "m.rwm"), str(tmp_path / "nodir" / "m.onnx")]) == 1
    assert "cannot write the ONNX file" in capsys.readouterr().err


def test_app_exports_the_selected_run(tmp_path):
    """The app's File > Export ONNX Graph (gui.logic.export.export_onnx): the run's model
    with its CSV record, so the graph takes the CSV's columns."""
    from gui.logic.export import export_onnx
    train = tmp_path / "train.csv"
    train.write_text(TRAIN)
    ds = rw.read_csv(train, target="label", missing="impute-mean")
    est = rw.RKSClassifier(n_features=20, random_state=0).fit(ds.X, ds.y)
    run = type("Run", (), {"name": "1", "result": {"estimator": est}})()
    saved = export_onnx(run, str(tmp_path / "run1.onnx"), ds.preprocessing)
    sess = ort.InferenceSession(saved, providers=["CPUExecutionProvider"])
    assert [i.name for i in sess.get_inputs()] == ["age", "income", "colour", "city"]
    with pytest.raises(ValueError, match="no fitted model"):
        export_onnx(type("Run", (), {"name": "2", "result": {}})(), str(tmp_path / "x.onnx"))


def test_a_float32_model_exports_as_float32(data, tmp_path):
    """A model fitted with dtype="float32" writes a float32 graph unless told otherwise; it
    agrees with the model to float32 rounding (the model itself is within 1e-3 of its float64
    twin, docs/SOLVERS.md): asserted at 1e-3 of the range."""
    X, y2, y3, f, Xnew = data
    est = rw.RWRegressor("rwrelu", n_features=80, dtype="float32", random_state=0).fit(X, f)
    path = rw.to_onnx(est, tmp_path / "m.onnx")
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert sess.get_inputs()[0].type == "tensor(float)"
    out = sess.run(None, {"X": Xnew.astype(np.float32)})[0]
    close(out.astype(float), est.predict(Xnew), rtol=1e-3)
    close(run(est, Xnew, tmp_path, dtype="float64")["prediction"], est.predict(Xnew), rtol=1e-3)


@pytest.mark.parametrize("inst", ["rwsign", "rwrelu"])
def test_maps_on_sparse_inputs_export_the_dense_product(inst, tmp_path):
    """A map whose X W^T skips the inputs at their columns' modes (features._dot.sparse_dot):
    the graph computes the dense product, which agrees to rounding (same tolerance)."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((300, 30)) * (rng.random((300, 30)) < 0.1)
    y = np.where(X[:, 0] + X[:, 1] + 0.3 * rng.standard_normal(300) > 0, "a", "b")
    est = rw.RWClassifier(instantiation=inst, n_features=80, random_state=1).fit(X, y)
    assert est.feature_map_.input_modes_ is not None
    Xnew = rng.standard_normal((120, 30)) * (rng.random((120, 30)) < 0.1)
    check_classifier(est, Xnew, tmp_path)
