"""The app's non-widget logic against independent oracles: the parameter specs the form reads
from the estimators' tables (the constructors' own signatures), the metrics and curves of gui.logic.evaluate
(scikit-learn, brute force), the derived quantities (rwtool's formulas of seed 003 Table 4 and
the models' fitted attributes), the predictions writer (csv module) and the warm-up. The scores
and confusion matrix the app shares with the command line are tested in
tests/report/test_report.py."""

from __future__ import annotations

import csv
import inspect
import threading

import numpy as np
import pytest

from gui.logic.evaluate import evaluate, roc_curve
from gui.logic.method_rules import derived_quantities, relevance_rules
from gui.logic.methods import ParamSpec, param_specs, parse_value
from rwtool._params import Param
from rwtool.report import METHODS, r2_score


@pytest.mark.parametrize("fam", list(METHODS.values()), ids=lambda f: f.key)
def test_specs_follow_the_signatures(fam):
    for task in ("binary", "regression"):
        cls = fam.estimator_class(task)
        if cls is None:
            continue
        sig = inspect.signature(cls.__init__).parameters
        specs = param_specs(cls)
        assert [s.name for s in specs] == [n for n in sig if n != "self"]
        for s in specs:
            assert s.default == sig[s.name].default
            if s.kind == "choice":
                assert s.default in s.choices
            if s.kind == "bool":
                assert isinstance(s.default, bool)
        # every default, typed back through the form's parser, rebuilds the same estimator
        params = {}
        for s in specs:
            if s.kind in ("int", "float", "floats", "text"):
                from gui.logic.methods import format_value
                params[s.name] = parse_value(s, format_value(s.default))
            else:
                params[s.name] = s.default
        assert cls(**params).get_params() == cls().get_params()


def test_solver_choices_come_from_the_registry():
    from rwtool.estimators._random_features import SOLVERS, RKSRegressor, RWClassifier
    for cls, fam in ((RWClassifier, "rw"), (RKSRegressor, "rks")):
        spec = next(s for s in param_specs(cls) if s.name == "solver")
        assert set(spec.choices) == {k for k, (fams, _) in SOLVERS.items() if fam in fams}


def test_parse_value():
    f = ParamSpec(Param("reg", "float", 1.0, "", interval="[0, inf)", keywords=("auto",)))
    assert parse_value(f, " 1e-3 ") == 1e-3 and parse_value(f, "AUTO") == "auto"
    with pytest.raises(ValueError, match=r"reg must be a number in \[0, inf\) or 'auto', got 'x'"):
        parse_value(f, "x")
    with pytest.raises(ValueError, match=r"reg must be .*, got -1\.0"):
        parse_value(f, "-1")                          # the range is checked as it is typed
    i = ParamSpec(Param("n", "int", 5, "", interval="[1, inf)", none="all"))
    assert parse_value(i, "1e3") == 1000 and parse_value(i, "") is None
    with pytest.raises(ValueError, match=r"n must be None \(all\) or an integer in \[1, inf\)"):
        parse_value(i, "2.5")
    with pytest.raises(ValueError, match="needs a value"):
        parse_value(ParamSpec(Param("m", "int", 1, "")), "")


def test_relevance_of_solver_parameters():
    from rwtool import RKSClassifier, RWClassifier
    rules = relevance_rules(param_specs(RWClassifier))
    assert "reg" not in rules and "n_features" not in rules
    assert rules["batch_size"] == ("solver", {"sfgd", "osd"})
    assert rules["path_length"] == ("solver", {"lasso"})
    assert rules["theta"] == ("instantiation", {"rwsign", "rwrelu"})
    assert relevance_rules(param_specs(RKSClassifier))["kernel"] == ("base", {"fourier"})


def test_roc_and_auc_match_sklearn(rng):
    metrics = pytest.importorskip("sklearn.metrics")
    y = rng.integers(0, 2, 300)
    s = np.round(y + rng.standard_normal(300), 1)          # ties on purpose
    fpr, tpr, auc = roc_curve(y, s)
    assert auc == pytest.approx(metrics.roc_auc_score(y, s))
    f2, t2, _ = metrics.roc_curve(y, s, drop_intermediate=False)
    np.testing.assert_allclose(fpr, f2)
    np.testing.assert_allclose(tpr, t2)


def test_evaluate_classifier(binary_data):
    from rwtool import RWClassifier
    X, y = binary_data
    Xtr, Xte, ytr, yte = X[:200, :2], X[200:, :2], y[:200], y[200:]
    est = RWClassifier(n_features=60, random_state=0).fit(Xtr, ytr)
    res = evaluate(est, Xtr, ytr, Xte, yte, task="binary", feature_names=["u", "v"])
    m = res["metrics"]
    assert m["test error"] == pytest.approx(np.mean(est.predict(Xte) != yte))
    assert m["features used"] == np.count_nonzero(np.any(est.coef_ != 0, axis=1))
    g = res["grid"]
    i, j = 17, 93
    pt = np.array([[g["x"][i], g["y"][j]]])
    assert g["z"][i, j] == list(est.classes_).index(est.predict(pt)[0])
    np.testing.assert_allclose(res["coef_magnitudes"],
                               np.sort(np.abs(est.coef_[:, 0]))[::-1])



def test_evaluate_classes_and_majority_baseline_without_classes_attribute(rng):
    """A model without classes_ is scored over the training rows' sorted labels; the baseline
    predicts their majority class (scikit-learn's DummyClassifier as the oracle)."""
    from sklearn.dummy import DummyClassifier
    ytr = np.array(["b", "c", "a", "c", "c", "a"] * 10, object)
    yte = np.array(["a", "c", "b", "b", "a"] * 4, object)
    Xtr, Xte = rng.standard_normal((len(ytr), 2)), rng.standard_normal((len(yte), 2))

    class Constant:                     # predicts "a" for every row; no classes_
        def predict(self, X):
            return np.full(len(X), "a", object)

    res = evaluate(Constant(), Xtr, ytr, Xte, yte, task="multiclass", plots=False)
    assert res["classes"] == ["a", "b", "c"]
    dummy = DummyClassifier(strategy="most_frequent").fit(Xtr, ytr)
    assert res["metrics"]["baseline test error (majority class)"] == \
        pytest.approx(1 - dummy.score(Xte, yte))
    np.testing.assert_array_equal(res["confusion"], [[8, 0, 0], [8, 0, 0], [4, 0, 0]])

@pytest.mark.parametrize("task", ["binary", "regression"])
def test_kfold_predicts_each_training_row_once(task, binary_data, regression_data):
    """k-fold scores each fold on its held-out rows only: n rows predicted in all, not k * n
    (each fold's training rows were predicted and the figure thrown away); the per-fold
    figures equal the fold models' own predictions on their held-out rows."""
    from types import SimpleNamespace

    from gui.logic.plans import KFold
    from rwtool import RWClassifier, RWRegressor
    from rwtool.model_selection._search import kfold_indices
    X, y = binary_data if task == "binary" else regression_data
    base = RWClassifier if task == "binary" else RWRegressor
    predicted = []

    class Counting(base):
        def predict(self, X):
            predicted.append(len(X))
            return super().predict(X)

    if hasattr(base, "decision_function"):         # binary: the held-out labels come from it
        def decision_function(self, X):
            predicted.append(len(X))
            return base.decision_function(self, X)
        Counting.decision_function = decision_function
    job = SimpleNamespace(X_train=X, y_train=y, task=task, X_test=None, y_test=None)
    out = KFold(k=4, random_state=0).fit(Counting(n_features=40, random_state=0), job, None)
    assert sum(predicted) == len(y)
    for f, (tr, va) in zip(out["cv"]["folds"],
                           kfold_indices(y, 4, task != "regression", 0)):
        pred = base(n_features=40, random_state=0).fit(X[tr], y[tr]).predict(X[va])
        if task == "binary":
            assert f["error"] == np.mean(pred != y[va])
        else:
            assert f["MSE"] == pytest.approx(np.mean((pred - y[va]) ** 2), rel=1e-12)
            assert f["R^2"] == pytest.approx(r2_score(y[va], pred), rel=1e-12)


def test_binary_evaluation_passes_over_the_evaluated_rows_once(binary_data):
    """A binary rwtool classifier's labels on the evaluated rows come from the decision scores
    the ROC curve needs (classes_[f > 0], as its predict), not from a second pass over them."""
    from rwtool import RWClassifier
    X, y = binary_data
    Xtr, ytr, Xte, yte = X[:150], y[:150], X[150:], y[150:]
    passes = []

    class Counting(RWClassifier):
        def predict(self, X):
            passes.append(("predict", len(X)))
            return super().predict(X)

        def decision_function(self, X):
            passes.append(("decision", len(X)))
            return super().decision_function(X)

    est = Counting(n_features=40, random_state=0).fit(Xtr, ytr)
    ref_tr, ref_te = RWClassifier.predict(est, Xtr), RWClassifier.predict(est, Xte)
    res = evaluate(est, Xtr, ytr, Xte, yte, task="binary", plots=False)
    assert sorted(passes) == [("decision", len(Xte)), ("predict", len(Xtr))]
    np.testing.assert_array_equal(res["pred_test"], ref_te)
    np.testing.assert_array_equal(res["pred_train"], ref_tr)
    assert res["metrics"]["test error"] == np.mean(ref_te != yte)
    passes.clear()
    res = evaluate(est, Xtr, ytr, task="binary", plots=False)       # no test rows
    assert passes == [("decision", len(Xtr))]
    np.testing.assert_array_equal(res["pred_train"], ref_tr)


def test_evaluating_progress_counts_the_extra_pass_in_its_total(rng):
    """A binary classifier whose labels are not its scores' rule (scikit-learn's) costs one
    more pass over the evaluated rows after the scores: the stage's total grows by those rows
    (RowProgress.extend), so no event counts more rows than its total and the stage ends
    having counted every row predicted (the rows each pass got, counted here)."""
    from sklearn.linear_model import LogisticRegression

    from rwtool.progress import Progress
    X = rng.standard_normal((9000, 3))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    seen = []

    class Counting(LogisticRegression):
        # the rows of each call from outside (scikit-learn's predict calls decision_function)
        inside = False

        def predict(self, X):
            return self._count(super().predict, X)

        def decision_function(self, X):
            return self._count(super().decision_function, X)

        def _count(self, fn, X):
            if not self.inside:
                seen.append(len(X))
            self.inside, was = True, self.inside
            try:
                return fn(X)
            finally:
                self.inside = was

    est = Counting().fit(X[:6000], y[:6000])
    events = []
    progress = Progress(lambda ev: events.append(ev) and False, min_interval=0.0)
    evaluate(est, X[:6000], y[:6000], X[6000:], y[6000:], task="binary", plots=False,
             callback=progress)
    ev = [e for e in events if e.stage == "evaluating"]
    assert all(e.done <= e.total for e in ev)
    assert ev[-1].done == ev[-1].total == sum(seen) == 6000 + 2 * 3000


def test_derived_quantities_use_table_4(rng):
    from rwtool import RWClassifier
    from rwtool.features import gamma_from_kappa, gamma_from_theta
    X = rng.standard_normal((40, 5))
    y = (X[:, 0] > 0).astype(int)
    rows = dict(derived_quantities("rw", {"instantiation": "rwsign", "sigma": 0.7,
                                          "theta": 0.4, "bias": True}, X))
    g = gamma_from_theta(6, 0.7, 0.4)                      # 5 inputs + the bias column
    assert rows["γ (kernel width)"].startswith(f"{g:.4g}")
    est = RWClassifier(instantiation="rwsign", sigma=0.7, theta=0.4, n_features=10,
                       random_state=0).fit(X, y)
    assert est.feature_map_.gamma_ == pytest.approx(g)
    assert rows["θ (sup |ψ|, 003 Table 2)"] == f"{est.feature_map_.theta_:.4g}"
    rows = dict(derived_quantities("rw", {"instantiation": "rwexprelu", "sigma": 1.0,
                                          "kappa": 3.0, "bias": False}, X))
    assert rows["γ (kernel width)"].startswith(f"{gamma_from_kappa(5, 1.0, 3.0):.4g}")


def test_derived_quantities_show_the_resolved_theta(rng):
    """theta=None: gamma from the per-kind default, as the fitted map has it."""
    from rwtool import RWClassifier
    from rwtool.features import gamma_from_theta
    X = rng.standard_normal((40, 5))
    y = (X[:, 0] > 0).astype(int)
    for inst in ("rwsign", "rwrelu"):
        rows = dict(derived_quantities("rw", {"instantiation": inst, "theta": None,
                                              "bias": True}, X))
        est = RWClassifier(instantiation=inst, n_features=10, random_state=0).fit(X, y)
        assert est.feature_map_.gamma_ == gamma_from_theta(6, 1.0, 0.1)
        assert rows["γ (kernel width)"] == (f"{est.feature_map_.gamma_:.4g}  from θ = 0.1, the "
                                            f"default for {inst} (003 Table 4)")
    rows = dict(derived_quantities("rw", {"instantiation": "mc:normal:gaussian:sign",
                                          "theta": None}, X))
    assert rows["θ (sets γ)"] == "0.5, the default for Monte Carlo Gaussian kernels"
    rows = dict(derived_quantities("rw", {"instantiation": "mc:normal:gaussian:sign",
                                          "theta": 0.2}, X))
    assert rows["θ (sets γ)"] == "0.2"


def test_evaluate_reports_the_default_theta(rng):
    from rwtool import RWClassifier
    X = rng.standard_normal((60, 3))
    y = (X[:, 0] > 0).astype(int)
    for inst, theta, want in (("rwrelu", None, 0.1), ("mc:normal:gaussian:sign:256", None, 0.5),
                              ("rwsign", 0.3, None), ("rwexpsign", None, None)):
        est = RWClassifier(instantiation=inst, theta=theta, n_features=10,
                           random_state=0).fit(X, y)
        m = evaluate(est, X, y, task="binary", plots=False)["metrics"]
        assert m.get("theta (the instantiation's default)") == want


def test_derived_quantities_match_fitted_models(rng):
    from rwtool.estimators._bkernn import BKerNNRegressor
    from rwtool.estimators._rfsgd import RFSGDClassifier
    X = rng.standard_normal((60, 3))
    b = BKerNNRegressor(n_particles=4, max_iter=1, random_state=0).fit(X, X[:, 0])
    rows = dict(derived_quantities("bkernn", {"reg": "auto", "standardize": True}, X))
    assert rows["λ (auto)"].startswith(f"{b.reg_:.4g}")
    s = RFSGDClassifier(n_features=5, reg=0.01, random_state=0).fit(X, X[:, 0] > 0)
    rows = dict(derived_quantities("rfsgd", {"reg": 0.01, "variant": "pair"}, X))
    assert rows["γ (step offset)"].startswith(f"{s.gamma_:.6g}")
    assert rows["η₁ = 2/(λ(γ+1))"] == f"{s.eta1_:.4g}"


def test_snippet_and_predictions_writer(tmp_path):
    from gui.logic.export import python_snippet, write_predictions
    from gui.logic.runs_table import Run
    path = write_predictions(str(tmp_path / "p.csv"), {"line": [2, 3], "predicted": ["a", "b"],
                                                       "score": [0.5, -1e-300]})
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows == [["line", "predicted", "score"], ["2", "a", "0.5"], ["3", "b", "-1e-300"]]
    run = Run(1, "rw", "RKHS weighting", "RWClassifier", {"n_features": 10, "reg": 1e-6},
              {"path": "d.csv", "target": "y", "features": ["a"], "missing": "error",
               "task": "auto", "test_size": 0.25, "random_state": 0})
    code = python_snippet(run, "rwtool.estimators._random_features")
    compile(code, "snippet.py", "exec")
    assert "params = dict(\n    n_features=10,\n    reg=1e-06,\n)" in code and "RWClassifier(**params)" in code


@pytest.mark.slow
def test_warm_up_stops_on_request():
    from gui.worker import warm_up_jobs
    stop = threading.Event()
    stop.set()
    assert warm_up_jobs(list(METHODS.values()))(stop) == 0
    fam = [METHODS["rks"]]
    bases = next(s for s in param_specs(fam[0].classifier) if s.name == "base").choices
    # one tiny fit per base predictor, for the classifier and for the regressor
    assert warm_up_jobs(fam)(threading.Event()) >= 2 * len(bases)


def test_an_outcome_crosses_the_pipe_with_its_arrays_out_of_band(traced_peak):
    """The fit process sends an outcome's arrays out of band (gui.logic.jobs.send_pickled):
    the receiving side holds each array once (its own writable buffer), not the whole message
    and then the arrays copied out of it (tracemalloc's peak of the receive against the
    arrays' bytes; pickled in band it is twice them), and the values are the sent ones."""
    import multiprocessing

    from gui.logic.jobs import recv_pickled, send_pickled
    from rwtool import RWClassifier
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 2))
    est = RWClassifier(n_features=30, random_state=0).fit(X, (X[:, 0] > 0).astype(int))
    tables = rng.standard_normal(1_000_000)                       # 8 MB
    msg = ("outcome", "finished", 3, {"estimator": est, "tables": tables, "empty": np.zeros(0),
                                      "strided": tables[::2], "metrics": {"a": 1.0}})
    a, b = multiprocessing.Pipe()
    sender = threading.Thread(target=send_pickled, args=(a, msg))
    sender.start()
    head = b.recv()
    assert head[0] == "pickled" and len(head[1]) >= 2
    got = {}
    peak = traced_peak(lambda: got.update(out=recv_pickled(b, head[1])))
    sender.join()
    out = got["out"]
    assert out[:3] == msg[:3] and out[3]["metrics"] == {"a": 1.0}
    np.testing.assert_array_equal(out[3]["tables"], tables)
    np.testing.assert_array_equal(out[3]["strided"], tables[::2])     # in band: not contiguous
    assert out[3]["empty"].shape == (0,)
    assert out[3]["tables"].flags.writeable
    np.testing.assert_array_equal(out[3]["estimator"].coef_, est.coef_)
    np.testing.assert_array_equal(out[3]["estimator"].predict(X), est.predict(X))
    # out of band once, the strided array in band twice (in the message, then its copy);
    # all in band would be twice both: 24 MB
    once = tables.nbytes + 2 * tables[::2].nbytes
    assert peak < 1.1 * once, peak / once
