"""rwtool.report, the layer the command line and the app share, against independent oracles.

Oracles: scikit-learn's metrics (confusion_matrix, accuracy, R^2, MSE, MAE, per-class report);
brute-force counts of the coefficients a model uses; the fitted models' own attributes for the
rules read before fitting; the csv module for the predictions file; and for labels a model
never saw, hand-made CSV files sent through both the command line (``rwtool.cli.main``) and the
app (its error text, and the main window's banner), which must refuse them the same way.
"""

from __future__ import annotations

import csv
import json
import os
import warnings

import numpy as np
import pytest

import rwtool as rw
from rwtool import cli
from rwtool.persist import read_model
from rwtool.report import (BOUND_MEANINGS, METHODS, UnseenLabelsError, apply_to_file,
                           bound_meanings, bounds_table, check_labels, class_report,
                           confusion_matrix, evaluate, fit_summary, method_of, metric_meaning,
                           r2_score, scores, write_predictions)

sk_metrics = pytest.importorskip("sklearn.metrics")


def write_csv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return str(path)


def labelled_csv(path, labels, seed=0):
    """Two features and a label column holding ``labels`` (strings or numbers), one per row;
    the features separate the first label from the others."""
    rng = np.random.default_rng(seed)
    rows = []
    for i, lab in enumerate(labels):
        shift = 2.0 if lab == labels[0] else -2.0
        rows.append([f"{shift + rng.standard_normal():.5f}", f"{rng.standard_normal():.5f}",
                     lab])
    return write_csv(path, ["x1", "x2", "label"], rows)


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


# ----------------------------------------------------------------------------- the registry

def test_the_registry_names_real_classes_once():
    """Every class of the registry is one rwtool exports, of the task its slot says; no other
    estimator class is left out; the CLI offers exactly these methods."""
    exported = {getattr(rw, n) for n in rw.__all__ if isinstance(getattr(rw, n), type)
                and callable(getattr(getattr(rw, n), "fit", None))
                and callable(getattr(getattr(rw, n), "predict", None))}
    listed = [c for m in METHODS.values() for c in m.classes]
    assert sorted(c.__name__ for c in listed) == sorted(c.__name__ for c in exported)
    for m in METHODS.values():
        assert m.classifier is None or m.classifier._estimator_type == "classifier"
        assert m.regressor is None or m.regressor._estimator_type == "regressor"
        for c in m.classes:
            assert method_of(c) is m and method_of(c()) is m
    assert METHODS["rfsgd"].estimator_class("regression") is None
    choices = next(a for a in cli.build_parser()._subparsers._group_actions[0]
                   .choices["train"]._actions if a.dest == "method").choices
    assert list(choices) == list(METHODS)


def test_registry_solvers_are_those_the_estimators_accept():
    """A solver listed for a method passes the estimator's own check; every other solver name
    of the registry is refused by it (the estimator is the oracle, not the table)."""
    everything = {s for m in METHODS.values() for s in m.solvers}
    for m in METHODS.values():
        for cls in m.classes:
            if "solver" not in cls._param_names():
                assert m.solvers == ()
                continue
            for s in everything:
                est = cls(solver=s, reg=1e-3)
                if s in m.solvers:
                    est._validate()
                else:
                    with pytest.raises(ValueError):
                        est._validate()


# ----------------------------------------------------------------------------- metrics

def test_confusion_matrix_and_scores_match_scikit_learn(rng):
    labels = np.array(["b", "<=50K", "a"])
    y = rng.choice(["a", "b", "<=50K"], 400)
    pred = rng.choice(["a", "b", "<=50K"], 400)
    np.testing.assert_array_equal(confusion_matrix(y, pred, labels),
                                  sk_metrics.confusion_matrix(y, pred, labels=labels))
    sc, notes = scores(y, pred, "multiclass", labels)
    assert sc["accuracy"] == sk_metrics.accuracy_score(y, pred) and not notes
    assert sc["error"] == np.mean(pred != y)
    # rows whose label is not among the classes are left out of the matrix, as scikit-learn
    # does, and always count wrong in the error
    yt = rng.choice(["a", "b", "<=50K", "<=50K.", "zz"], 500)
    np.testing.assert_array_equal(confusion_matrix(yt, pred[:1].repeat(500), labels),
                                  sk_metrics.confusion_matrix(yt, pred[:1].repeat(500),
                                                              labels=labels))
    ints_t, ints_p = rng.integers(0, 5, 300), rng.integers(0, 5, 300)
    np.testing.assert_array_equal(confusion_matrix(ints_t, ints_p, [3, 0, 1]),
                                  sk_metrics.confusion_matrix(ints_t, ints_p, labels=[3, 0, 1]))


def test_labels_are_compared_as_values_as_scikit_learn_does():
    """Integer classes and the same labels read as floats agree (1 == 1.0): the command line
    once compared them as strings ('1' != '1.0') and counted every row wrong."""
    classes = np.array([1, 2])
    y = np.array([1.0, 2.0, 2.0, 1.0])
    pred = np.array([1, 2, 1, 1])
    np.testing.assert_array_equal(confusion_matrix(y, pred, classes),
                                  sk_metrics.confusion_matrix(y, pred, labels=classes))
    sc, _ = scores(y, pred, "binary", classes)
    assert sc["accuracy"] == sk_metrics.accuracy_score(y, pred) == 0.75
    assert check_labels(classes, y, "f.csv") is None
    # labels numpy cannot sort (mixed types) are still counted
    mixed = np.array(["x", 1, 2.0, "x", 1], object)
    np.testing.assert_array_equal(confusion_matrix(mixed, mixed[::-1], ["x", 1, 2.0]),
                                  [[0, 2, 0], [2, 0, 0], [0, 0, 1]])


def test_regression_scores_match_scikit_learn_and_never_give_nan(rng):
    y, f = rng.standard_normal(50), rng.standard_normal(50)
    sc, notes = scores(y, f, "regression")
    assert sc["r2"] == pytest.approx(sk_metrics.r2_score(y, f), rel=1e-12)
    assert sc["mse"] == pytest.approx(sk_metrics.mean_squared_error(y, f), rel=1e-12)
    assert sc["mae"] == pytest.approx(sk_metrics.mean_absolute_error(y, f), rel=1e-12)
    assert r2_score(y, f) == sc["r2"] and not notes
    # one test row, or a constant target: R^2 is undefined, left out with a note saying why
    sc, notes = scores(np.array([3.0]), np.array([2.5]), "regression", rows="the test rows")
    assert "r2" not in sc and sc["mse"] == 0.25
    assert len(notes) == 1 and "R^2 is undefined on the test rows" in notes[0]


def test_class_report_matches_scikit_learn():
    rng = np.random.default_rng(3)
    classes = ["a", "b", "c", "d"]
    y = rng.choice(classes, 200, p=[0.5, 0.3, 0.15, 0.05])
    pred = np.where(rng.random(200) < 0.7, y, rng.choice(classes[:3], 200))
    rep = class_report(y, pred, classes)
    p, r, f, s = sk_metrics.precision_recall_fscore_support(y, pred, labels=classes,
                                                            zero_division=0)
    np.testing.assert_allclose(rep["precision"], p)
    np.testing.assert_allclose(rep["recall"], r)
    np.testing.assert_allclose(rep["f1"], f)
    np.testing.assert_array_equal(rep["support"], s)
    assert rep["balanced_accuracy"] == pytest.approx(sk_metrics.balanced_accuracy_score(y, pred))
    assert rep["kappa"] == pytest.approx(sk_metrics.cohen_kappa_score(y, pred))


def test_cli_never_prints_a_nan_metric(capsys, tmp_path):
    """A holdout of one row (issue 27: three rows, --task regression) gave 'test_r2 nan'."""
    data = write_csv(tmp_path / "d.csv", ["x", "y"], [[1, 1], [2, 2], [3, 3], [4, 5]])
    code, out, err = run(capsys, "train", data, "--target", "y", "--task", "regression",
                         "--method", "rks", "-T", 5, "--reg", "1e-3", "--no-progress",
                         "--test-size", 0.25)
    assert code == 0 and "nan" not in out.lower()
    assert "test_mse" in out and "test_r2" not in out and "R^2 is undefined" in out


# ----------------------------------------------------------------------------- unseen labels

@pytest.fixture(scope="module")
def text_model(tmp_path_factory):
    """A model trained by the command line on labels 'yes' / 'no'."""
    d = tmp_path_factory.mktemp("text")
    train = labelled_csv(d / "train.csv", ["yes", "no"] * 60)
    assert cli.main(["train", train, "--target", "label", "-T", "20", "--no-progress",
                     "--no-bounds", "-q", "--out", str(d / "m.rwm")]) == 0
    return d / "m.rwm"


@pytest.fixture(scope="module")
def number_model(tmp_path_factory):
    """A model trained by the command line on integer labels 1 / 2."""
    d = tmp_path_factory.mktemp("number")
    train = labelled_csv(d / "train.csv", [1, 2] * 60)
    assert cli.main(["train", train, "--target", "label", "-T", "20", "--no-progress",
                     "--no-bounds", "-q", "--out", str(d / "m.rwm")]) == 0
    return d / "m.rwm"


def app_message(exc) -> str:
    """The text the app shows for an error raised on its worker thread."""
    pytest.importorskip("PySide6")
    from gui.worker import describe_error
    return describe_error(exc)["message"]


def test_unseen_labels_refused_alike_by_the_cli_and_the_app(capsys, tmp_path, text_model):
    """Every label of the file is new ('Y' / 'N' where training had 'yes' / 'no'): the command
    line exits 1 and the app's apply refuses, with the same message (the app once showed
    'file error 1.0000')."""
    bad = labelled_csv(tmp_path / "bad.csv", ["Y", "N"] * 20)
    code, out, err = run(capsys, "evaluate", text_model, bad)
    assert code == 1 and out == ""
    cli_text = err.removeprefix("rwtool: error: ").strip()
    assert "bad.csv: 40 of 40 rows have labels the model never saw in training" in cli_text
    assert "'N', 'Y'" in cli_text and "'no', 'yes'" in cli_text
    with pytest.raises(UnseenLabelsError) as info:
        apply_to_file(read_model(text_model), bad)
    assert app_message(info.value) == cli_text          # no option or control in this fix
    assert info.value.unseen == {"N": 20, "Y": 20} and info.value.n_rows == 40


def test_the_fix_names_the_callers_own_setting(capsys, tmp_path, number_model):
    """Numeric labels the model never saw may be a quantity: the fix says to train a regressor,
    as `--task regression` on the command line and as the Task control in the app."""
    bad = labelled_csv(tmp_path / "bad.csv", [3, 4] * 20)
    code, out, err = run(capsys, "evaluate", number_model, bad, "--json")
    assert code == 1 and json.loads(out)["type"] == "UnseenLabelsError"
    cli_text = err.removeprefix("rwtool: error: ").strip()
    assert cli_text.endswith("train a regressor (--task regression)")
    with pytest.raises(UnseenLabelsError) as info:
        apply_to_file(read_model(number_model), bad)
    app_text = app_message(info.value)
    assert app_text.endswith("train a regressor (Task = regression in the Data tab)")
    assert str(info.value).endswith("train a regressor (task='regression')")
    head = cli_text.split("(--task")[0]
    assert app_text.startswith(head) and "'3', '4'" in head


def test_a_few_unseen_labels_are_flagged_alike(capsys, tmp_path, text_model):
    """Fewer than half the rows: scores, and the same note on both sides."""
    some = labelled_csv(tmp_path / "some.csv", ["yes", "no"] * 18 + ["maybe"] * 4)
    code, out, _ = run(capsys, "evaluate", text_model, some, "--json")
    doc = json.loads(out)
    note = "4 of 40 rows of some.csv have labels absent from training (always counted wrong)"
    assert code == 0 and any(note in n for n in doc["notes"])
    res = apply_to_file(read_model(text_model), some)
    assert any(note in n for n in res.notes)
    assert res.evaluation.scores["error"] == doc["metrics"]["test_error"]
    # the four 'maybe' rows are wrong whatever the model predicts
    y = np.array(["yes", "no"] * 18 + ["maybe"] * 4)
    assert doc["metrics"]["test_error"] == np.mean(res.pred != y)


def test_check_labels_refuses_a_majority_and_names_punctuation():
    with pytest.raises(UnseenLabelsError, match="differ only by punctuation"):
        check_labels(["<=50K", ">50K"], ["<=50K.", ">50K.", "<=50K"], "adult.test")
    assert check_labels(["a", "b"], ["a", "b", "c"], "f") == \
        "1 of 3 rows of f have labels absent from training (always counted wrong): 'c'"


def test_the_app_refuses_the_file_the_cli_refuses(qtbot, tmp_path, number_model, capsys):
    """Through the main window: Apply Model to CSV on a file of unseen labels shows the
    command line's message in the banner, with the app's control in the fix, and no metric."""
    pytest.importorskip("pytestqt")
    from PySide6.QtCore import QSettings

    from gui.app import create_app
    from gui.main_window import MainWindow
    bad = labelled_csv(tmp_path / "bad.csv", [3, 4] * 20)
    _, _, err = run(capsys, "evaluate", number_model, bad)
    create_app()
    win = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat),
                     warm_up=False)
    qtbot.addWidget(win)
    try:
        win.open_model(str(number_model))
        qtbot.waitUntil(lambda: win.loaded_model is not None, timeout=60_000)
        win.last_applied = None
        win.apply_model(bad)
        qtbot.waitUntil(lambda: win.banner.kind == "error", timeout=60_000)
        want = err.removeprefix("rwtool: error: ").strip().replace(
            "--task regression", "Task = regression in the Data tab")
        assert win.banner.text == f"Cannot apply the model: {want}"
        assert win.last_applied is None
    finally:
        win.worker.shutdown()


# ----------------------------------------------------------------------------- bounds table

def test_bounds_table_gives_every_number_its_meaning(binary_data, capsys, tmp_path):
    X, y = binary_data
    est = rw.RWClassifier(n_features=30, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        direct = est.bounds(X, y)
    rows, note = bounds_table(est, X, y)
    scalar = {k: v for k, v in direct.items()
              if isinstance(v, (int, float)) and not isinstance(v, bool)}
    assert [b.key for b in rows] == list(scalar) and note is None
    for b in rows:
        assert b.value == scalar[b.key] and b.meaning == BOUND_MEANINGS[b.key]
    assert set(scalar) <= set(BOUND_MEANINGS)       # a new bound needs its line here
    # the command line prints each bound beside its meaning; the app shows the same rows
    code, out, _ = run(capsys, "train", os.path.join(os.path.dirname(__file__), "..", "..",
                                                     "samples", "moons.csv"),
                       "--target", "label", "-T", 30, "--no-progress")
    lines = [ln for ln in out.splitlines() if ln.strip().startswith("bound_")]
    assert code == 0 and len(lines) == len(BOUND_MEANINGS)
    for ln in lines:
        key = ln.split()[0].removeprefix("bound_")
        assert ln.rstrip().endswith(BOUND_MEANINGS[key])
    assert bound_meanings({"bound_tau": 1.0, "bound: rho": 2.0, "test_error": 0.1}) == {
        "bound_tau": BOUND_MEANINGS["tau"], "bound: rho": BOUND_MEANINGS["rho"]}
    pytest.importorskip("PySide6")
    from gui.logic.evaluate import evaluate as app_evaluate
    res = app_evaluate(est, X, y, task="binary")
    for b in rows:
        assert res["metrics"][f"bound: {b.key}"] == b.value
        assert res["meanings"][f"bound: {b.key}"] == b.meaning


def test_a_bound_that_fails_is_a_note():
    class Failing:
        def bounds(self, X, y):
            raise ValueError("needs the training sample\nmore")
    assert bounds_table(Failing(), None, None) == ([], "bounds not computed (needs the "
                                                        "training sample)")
    assert bounds_table(object(), None, None) == ([], None)


# ----------------------------------------------------------------------------- predictions CSV

def test_predictions_csv_round_trips_and_is_written_atomically(tmp_path):
    path = tmp_path / "p.csv"
    write_predictions(path, {"row": [2, 3], "prediction": ["a", "b"], "score": [0.1, -1e-300]})
    with open(path, newline="") as fh:
        assert list(csv.reader(fh)) == [["row", "prediction", "score"], ["2", "a", "0.1"],
                                         ["3", "b", "-1e-300"]]
    before = path.read_bytes()
    with pytest.raises(ValueError, match="different lengths"):
        write_predictions(path, {"row": [2, 3], "prediction": ["a"]})
    assert path.read_bytes() == before                 # the old file is whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.csv"]   # nothing left behind


def test_cli_predict_and_app_dialog_write_the_same_columns(capsys, tmp_path, text_model):
    data = labelled_csv(tmp_path / "d.csv", ["yes", "no"] * 10)
    out = tmp_path / "cli.csv"
    assert run(capsys, "predict", text_model, data, "--out", out, "-q")[0] == 0
    res = apply_to_file(read_model(text_model), data)
    pytest.importorskip("pytestqt")
    from gui.widgets.dialogs import PredictionsDialog
    cols = PredictionsDialog.columns(type("D", (), {"out": {
        "rows": res.data.rows, "pred": res.pred, "y": None}})())
    write_predictions(tmp_path / "app.csv", cols)
    assert (tmp_path / "app.csv").read_bytes() == out.read_bytes()


# ----------------------------------------------------------------------------- model size

def _fitted(cls, X, y):
    small = {"n_features": 12, "n_particles": 5, "max_iter": 3, "n_epochs": 1,
             "random_state": 0}
    params = {k: v for k, v in small.items() if k in cls._param_names()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(**params).fit(X, y)


@pytest.mark.parametrize("cls", [c for m in METHODS.values() for c in m.classes],
                         ids=lambda c: c.__name__)
def test_every_estimator_reports_its_size(cls, binary_data):
    """n_features_out_ counts the features (frequencies, particles) with a non-zero
    coefficient: checked by zeroing some and counting by hand."""
    X, y = binary_data
    X = X[:120, :4]
    y = y[:120] if cls._estimator_type == "classifier" else X[:, 0] - X[:, 1] ** 2
    est = _fitted(cls, X, y)
    assert fit_summary(est)["n_features_out"] == est.n_features_out_
    if hasattr(est, "particles_"):
        est.particles_[:, [0, 2]] = 0.0
        want = sum(1 for j in range(est.particles_.shape[1]) if np.any(est.particles_[:, j]))
        assert est.n_features_out_ == want == est.particles_.shape[1] - 2
        return
    C = est.coef_.reshape(len(est.coef_), -1)
    pair = getattr(est.feature_map_, "variant", "").lower() == "pair"
    M = len(C) // 2 if pair else len(C)
    C[0] = 0.0                                  # a whole feature, or a frequency's cos row
    if pair:
        C[M + 0] = 1.0                          # its sin row still used: the frequency counts
        C[1] = C[M + 1] = 0.0                   # this frequency is gone
    want = 0
    for t in range(M):
        rows = [t, M + t] if pair else [t]
        want += any(np.any(C[r] != 0) for r in rows)
    assert est.n_features_out_ == want


# ----------------------------------------------------------------------------- rules read before fitting

@pytest.mark.parametrize("inst", ["rwsign", "rwrelu", "rwexpsign", "rwexprelu", "rwstumps"])
@pytest.mark.parametrize("bias,standardize", [(True, True), (False, False)])
def test_width_rule_is_what_the_fit_uses(inst, bias, standardize, rng):
    X = rng.standard_normal((50, 4)) * 2 + 1
    y = (X[:, 0] > 1).astype(int)
    est = rw.RWClassifier(instantiation=inst, sigma=0.8, n_features=8, bias=bias,
                          standardize=standardize, random_state=0)
    Z = (X - X.mean(0)) / X.std(0) if standardize else X
    w = est.width_rule(X.shape[1], float(np.max(np.linalg.norm(Z, axis=1))))
    est.fit(X, y)
    fmap = est.feature_map_
    assert w["n"] == fmap.n_features_in_
    assert w["gamma"] == pytest.approx(fmap.gamma_, rel=1e-12)
    assert w["x_norm_max"] == pytest.approx(fmap.x_norm_max_, rel=1e-9)
    assert w["theta"] == pytest.approx(fmap.theta_, rel=1e-9)
    assert w["kappa"] == pytest.approx(fmap.kappa_, rel=1e-9)
    assert w["theta_target"] == fmap.theta_target_


def test_step_rule_and_resolved_reg_are_what_the_fit_uses(rng):
    X = rng.standard_normal((60, 3))
    for params in ({"reg": 0.01}, {"reg": 1e-4, "variant": "phase"}):
        s = rw.RFSGDClassifier(n_features=5, random_state=0, **params)
        r = s.step_rule()
        s.fit(X, X[:, 0] > 0)
        assert (r["gamma"], r["eta1"]) == (s.gamma_, s.eta1_) and r["meets_theorem"]
    r = rw.RFSGDClassifier(reg=0.01, gamma=1.0).step_rule()
    assert r["eta1"] == 2 / (0.01 * 2.0) and not r["meets_theorem"] and r["gamma_given"]
    b = rw.BKerNNRegressor(n_particles=4, max_iter=1, random_state=0).fit(X, X[:, 0])
    Z = (X - X.mean(0)) / X.std(0)
    lam = b.resolved_reg(len(X), float(np.max(np.linalg.norm(Z, axis=1))))
    assert lam == pytest.approx(b.reg_, rel=1e-12)
    assert rw.BKerNNRegressor(reg=0.3).resolved_reg(10) == 0.3


def test_evaluate_scores_a_split_as_a_file(binary_data):
    """The app's split and the command line's file go through one function: same numbers."""
    X, y = binary_data
    est = rw.RWClassifier(n_features=30, random_state=0).fit(X[:200], y[:200])
    ev = evaluate(est, X[200:], y[200:], task="binary", source="the test rows")
    assert ev.scores["error"] == np.mean(est.predict(X[200:]) != y[200:])
    np.testing.assert_array_equal(ev.confusion, sk_metrics.confusion_matrix(
        y[200:], ev.pred, labels=est.classes_))


# ----------------------------------------------------------------------------- samples

def test_the_app_lists_the_samples_rwtool_data_finds(qtbot, tmp_path, monkeypatch):
    """The Samples menu is rwtool.data's discovery ($RWTOOL_SAMPLES here, <prefix>/share after
    a pip install), not a copy of it that looked only beside the package."""
    pytest.importorskip("pytestqt")
    import shutil

    from PySide6.QtCore import QSettings

    from gui.app import create_app
    from gui.main_window import MainWindow
    from rwtool.data import samples_dir
    src = samples_dir()
    manifest = json.loads((src / "samples.json").read_text(encoding="utf-8"))
    manifest["samples"] = manifest["samples"][:2]
    for s in manifest["samples"]:
        shutil.copyfile(src / s["file"], tmp_path / s["file"])
    (tmp_path / "samples.json").write_text(json.dumps(manifest), encoding="utf-8")
    monkeypatch.setenv("RWTOOL_SAMPLES", str(tmp_path))
    create_app()
    win = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat),
                     warm_up=False)
    qtbot.addWidget(win)
    try:
        names = [a.text() for a in win.samples_menu.actions()]
        assert names == [s["name"] for s in manifest["samples"]]
    finally:
        win.worker.shutdown()


# ----------------------------------------------------------------------------- metric meanings

def test_every_metric_either_caller_shows_has_its_meaning(capsys, rng):
    """Each metric `rwtool train` prints and each one the app's evaluation (holdout, k-fold,
    a loaded model's file metrics) puts in its Metrics table has a line saying what it means,
    the same line for the same metric in either caller's spelling. The oracle for the words
    that carry numbers: the rows named are the rows scored."""
    code, out, _ = run(capsys, "train", os.path.join(os.path.dirname(__file__), "..", "..",
                                                     "samples", "moons.csv"),
                       "--target", "label", "-T", 30, "--no-progress", "--no-bounds")
    assert code == 0
    rows = [ln.split(None, 2) for ln in out.splitlines()[1:] if ln.startswith("  ")
            and not ln.startswith("  note")]
    assert rows and all(len(r) == 3 and r[2] == metric_meaning(r[0]) for r in rows), rows
    # both spellings, the rows named after the first word
    assert metric_meaning("test_error") == metric_meaning("test error") != ""
    assert "the test rows" in metric_meaning("test_error")
    assert "the training rows" in metric_meaning("train R^2")
    assert metric_meaning("test_r2") == metric_meaning("test R^2")
    assert metric_meaning("cv error").startswith("mean over the folds of the share of each "
                                                 "fold's held-out rows")
    assert metric_meaning("cv R^2 (std over 5 folds)").startswith(
        "standard deviation over the 5 folds")
    assert metric_meaning("bound: theta") == "" and metric_meaning("nonsense error") == ""
    pytest.importorskip("PySide6")
    from gui.logic.evaluate import evaluate as app_evaluate
    X = rng.standard_normal((120, 2))
    yc, yr = (X[:, 0] > 0).astype(int), X[:, 0] + 0.1 * X[:, 1]
    for task, y, est in (("binary", yc, rw.RWClassifier(n_features=20)),
                         ("regression", yr, rw.RWRegressor(n_features=20))):
        est.fit(X[:80], y[:80])
        res = app_evaluate(est, X[:80], y[:80], X[80:], y[80:], task=task, fit_time=0.5)
        # the Metrics table's third column: the bounds' meanings, else the metric's
        missing = [k for k in res["metrics"] if not (res["meanings"].get(k)
                                                     or metric_meaning(k))]
        assert not missing
