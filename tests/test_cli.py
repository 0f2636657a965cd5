"""The ``rwtool`` command end to end on the bundled samples: outputs, exit codes, files.

Oracles: labels and values read from the sample files with the csv module, and metrics
recomputed with numpy from the predictions the command wrote.
"""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rwtool import cli

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def read_column(path, name, delimiter=","):
    with open(path, encoding="utf-8-sig", newline="") as fh:
        return [r[name] for r in csv.DictReader(fh, delimiter=delimiter)]


def test_samples_listed_and_copied(capsys, tmp_path):
    code, out, _ = run(capsys, "samples")
    assert code == 0
    for name in ("moons", "spirals", "sine", "friedman", "customers"):
        assert name in out
    code, out, _ = run(capsys, "samples", "--json", "--copy", tmp_path / "copy")
    doc = json.loads(out)
    assert code == 0 and len(doc["samples"]) == 5
    for s in doc["samples"]:
        assert Path(s["path"]).is_file() and Path(s["path"]).parent == tmp_path / "copy"
        assert (SAMPLES / s["file"]).stat().st_size < 100_000


def test_train_predict_evaluate_info_binary(capsys, tmp_path):
    model = tmp_path / "moons.rwm"
    code, out, err = run(capsys, "train", SAMPLES / "moons.csv", "--target", "label",
                         "--instantiation", "rwrelu", "-T", 150, "--out", model, "--json")
    assert code == 0 and model.is_file()
    doc = json.loads(out)
    m = doc["metrics"]
    assert doc["estimator"] == "RWClassifier" and doc["task"] == "binary"
    assert (m["n_train"], m["n_test"], m["n_features"]) == (300, 100, 150)
    assert m["test_error"] < 0.2 and m["fit_time_s"] >= 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["moons.rwm"]

    pred_path = tmp_path / "pred.csv"
    code, out, _ = run(capsys, "predict", model, SAMPLES / "moons.csv", "--out", pred_path,
                       "--decision")
    assert code == 0
    rows = list(csv.DictReader(open(pred_path)))
    truth = read_column(SAMPLES / "moons.csv", "label")
    assert len(rows) == len(truth) == 400
    assert [int(r["row"]) for r in rows] == list(range(2, 402))
    pred = np.array([r["prediction"] for r in rows])
    dec = np.array([float(r["decision"]) for r in rows])
    np.testing.assert_array_equal(pred == "1", dec > 0)
    acc = float(np.mean(pred == np.array(truth)))

    code, out, _ = run(capsys, "evaluate", model, SAMPLES / "moons.csv", "--json")
    ev = json.loads(out)
    assert code == 0 and ev["metrics"]["test_accuracy"] == pytest.approx(acc)
    assert np.sum(ev["confusion"]["matrix"]) == 400

    code, out, _ = run(capsys, "info", model, "--json")
    info = json.loads(out)
    assert code == 0 and info["params"]["n_features"] == 150 and info["classes"] == [0, 1]
    assert info["metrics"]["test_error"] == pytest.approx(m["test_error"])
    code, out, _ = run(capsys, "info", model)
    assert code == 0 and "checksums verified" in out and "label" in out


def test_train_messy_sample_with_roles_and_imputation(capsys, tmp_path):
    model = tmp_path / "c.rwm"
    code, out, _ = run(capsys, "train", SAMPLES / "customers.csv", "--target", "churned",
                       "--ignore", "customer_id", "comment", "--missing", "impute-mean",
                       "-T", 100, "--test-size", 0.3, "--out", model, "--no-progress")
    assert code == 0 and "test_error" in out and "model saved" in out
    code, out, _ = run(capsys, "evaluate", model, SAMPLES / "customers.csv")
    assert code == 0 and "confusion" in out
    # without the roles the free-text column is refused with a clear message
    code, _, err = run(capsys, "train", SAMPLES / "customers.csv", "--target", "churned")
    assert code == 1 and err.count("\n") == 1
    assert "customer_id" in err and "ignore" in err


def test_regression_r2_matches_predictions(capsys, tmp_path):
    model = tmp_path / "f.rwm"
    code, out, _ = run(capsys, "train", SAMPLES / "friedman.csv", "--target", "y",
                       "--method", "rks", "--base", "fourier", "--sigma", 2, "-T", 200,
                       "--reg", "1e-4", "--test-size", 0, "--out", model, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["task"] == "regression" and doc["metrics"]["n_test"] == 0
    code, out, _ = run(capsys, "predict", model, SAMPLES / "friedman.csv", "--json")
    pred = np.array(json.loads(out)["columns"]["prediction"])
    y = np.array(read_column(SAMPLES / "friedman.csv", "y"), float)
    r2 = 1 - np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2)
    assert doc["metrics"]["train_r2"] == pytest.approx(r2, rel=1e-9)
    assert doc["metrics"]["train_mse"] == pytest.approx(np.mean((y - pred) ** 2), rel=1e-9)


def test_multiclass_with_separate_test_file(capsys, tmp_path):
    rows = list(csv.reader(open(SAMPLES / "spirals.csv")))
    head, body = rows[0], rows[1:]
    for name, part in (("tr.csv", body[:450]), ("te.csv", body[450:])):
        with open(tmp_path / name, "w", newline="") as fh:
            csv.writer(fh).writerows([head] + part)
    code, out, _ = run(capsys, "train", tmp_path / "tr.csv", "--target", "color",
                       "--test", tmp_path / "te.csv", "--instantiation", "rwstumps",
                       "-T", 200, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["task"] == "multiclass"
    assert doc["classes"] == ["blue", "green", "red"] and doc["metrics"]["n_test"] == 150


@pytest.mark.parametrize("argv,needle", [
    (["train", "nope.csv", "--target", "y"], "file not found"),
    (["train", "SAMPLES/moons.csv", "--target", "nolabel"], "no column named 'nolabel'"),
    (["train", "SAMPLES/moons.csv", "--target", "label", "--method", "rks",
      "--instantiation", "rwsign"], "does not apply to method 'rks'"),
    (["train", "SAMPLES/moons.csv", "--target", "label", "--param", "bogus=1"],
     "no parameter 'bogus'"),
    (["train", "SAMPLES/moons.csv", "--target", "label", "--reg", "-1"], "reg must be"),
    (["info", "SAMPLES/moons.csv"], "not an rwtool model file"),
    (["inspect", "RAGGED"], "row 3"),
])
def test_errors_are_one_line_and_exit_1(capsys, tmp_path, argv, needle):
    ragged = tmp_path / "r.csv"
    ragged.write_text("a,b\n1,2\n3\n")
    argv = [a.replace("SAMPLES", str(SAMPLES)).replace("RAGGED", str(ragged)) for a in argv]
    code, out, err = run(capsys, *argv, "--no-progress") if argv[0] == "train" else \
        run(capsys, *argv)
    assert code == 1
    assert err.startswith("rwtool: error: ") and err.count("\n") == 1 and needle in err


def test_json_error_payload_and_usage_error(capsys):
    code, out, err = run(capsys, "inspect", "missing.csv", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["ok"] is False and doc["detail"]["file"].endswith("missing.csv")
    code, out, err = run(capsys, "train")                 # argparse: no data, no --target
    assert code == 2 and "usage" in err
    code, out, _ = run(capsys, "train", "--help")
    assert code == 0 and "examples" in out and "--instantiation" in out


def test_predict_missing_column_and_unseen_category(capsys, tmp_path):
    model = tmp_path / "m.rwm"
    assert run(capsys, "train", SAMPLES / "customers.csv", "--target", "churned", "--ignore",
               "customer_id", "comment", "--missing", "drop-rows", "-T", 50, "--out", model,
               "-q")[0] == 0
    new = tmp_path / "new.csv"
    new.write_text("age;income;plan;region;tenure_months;support_calls\n"
                   "30;1000,5;gold;Québec;3;1\n", encoding="utf-8")
    code, _, err = run(capsys, "predict", model, new)
    assert code == 1 and "'gold'" in err and "row 2" in err and "'plan'" in err
    new.write_text("age;income\n30;1000,5\n", encoding="utf-8")
    code, _, err = run(capsys, "predict", model, new)
    assert code == 1 and "needs column(s)" in err


def test_cancel_from_progress_callback(capsys, tmp_path, monkeypatch):
    def cancel_now(self):
        self.cancel_requested = True
    monkeypatch.setattr(cli.ProgressBar, "install_sigint", cancel_now)
    code, out, err = run(capsys, "train", SAMPLES / "moons.csv", "--target", "label",
                         "-T", 50, "--out", tmp_path / "m.rwm")
    assert code == 130 and "cancelled" in err and not (tmp_path / "m.rwm").exists()


def test_progress_bar_draws_events(capsys):
    from rwtool.progress import ProgressEvent
    import io
    buf = io.StringIO()
    bar = cli.ProgressBar(stream=buf)
    assert bar(ProgressEvent("solve", 0, 4, kind="start")) is False
    bar(ProgressEvent("solve", 4, 4, {"loss": 0.5}, 1.0, kind="end"))
    assert "solve: done at 1.0s loss=0.5000" in buf.getvalue()
    bar.cancel_requested = True
    assert bar(ProgressEvent("solve", 1, 4)) is True


@pytest.mark.parametrize("method", ["rfsgd", "greedy", "bkernn"])
def test_other_methods(capsys, method):
    small = {"rfsgd": ["-T", 50], "greedy": ["-T", 10], "bkernn": ["-T", 4]}[method]
    code, out, err = run(capsys, "train", SAMPLES / "moons.csv", "--target", "label",
                         "--method", method, *small, "--json", "--no-progress")
    assert code == 0, err
    assert json.loads(out)["metrics"]["test_accuracy"] > 0.5


@pytest.mark.slow
def test_module_entry_point_subprocess(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "rwtool", "train", str(SAMPLES / "sine.csv"),
                        "--target", "y", "--method", "rks", "--base", "relu", "-T", "100",
                        "--out", str(tmp_path / "s.rwm")], capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "test_r2" in r.stdout and "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "rwtool", "evaluate", str(tmp_path / "s.rwm"),
                        str(tmp_path / "absent.csv")], capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=300)
    assert r.returncode == 1 and r.stderr.startswith("rwtool: error:")
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1


def test_cancel_keeps_partial_model_of_iterative_solver(capsys, tmp_path, monkeypatch):
    """Ctrl-C after an iteration of BKerNN: exit 130 and the last completed iterate is saved."""
    draw = cli.ProgressBar.__call__

    def cancel_after_an_iteration(self, event):
        draw(self, event)
        return event.stage == "iterations" and event.done >= 1
    monkeypatch.setattr(cli.ProgressBar, "__call__", cancel_after_an_iteration)
    model = tmp_path / "b.rwm"
    code, out, err = run(capsys, "train", SAMPLES / "moons.csv", "--target", "label",
                         "--method", "bkernn", "-T", 4, "--out", model, "--json")
    doc = json.loads(out)
    assert code == 130 and doc["metrics"]["cancelled"]
    assert model.is_file() and "last completed iterate" in " ".join(doc["notes"])
    assert run(capsys, "evaluate", model, SAMPLES / "moons.csv")[0] == 0


def _relabel(src, dst, rows, suffix):
    """A copy of ``src`` whose first ``rows`` data rows have ``suffix`` after their label."""
    lines = Path(src).read_text().splitlines()
    head, body = lines[0], lines[1:]
    out = [head] + [ln + suffix if i < rows else ln for i, ln in enumerate(body)]
    Path(dst).write_text("\n".join(out) + "\n")


def test_test_labels_the_model_never_saw(capsys, tmp_path):
    """adults' test file writes '<=50K.' where training wrote '<=50K': no accuracy of 0 then."""
    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    _relabel(SAMPLES / "spirals.csv", train, 0, "")
    _relabel(SAMPLES / "spirals.csv", test, 600, ".")        # every label now ends with '.'
    code, out, err = run(capsys, "train", train, "--target", "color", "-T", 50, "--test", test,
                         "--out", tmp_path / "m.rwm", "--no-bounds")
    assert code != 0 and "never saw in training" in err and "punctuation" in err
    assert "np.str_" not in err and "'blue.'" in err        # labels quoted as the file has them
    assert not (tmp_path / "m.rwm").exists()
    # a minority of such rows: metrics, with a note counting them
    _relabel(SAMPLES / "spirals.csv", test, 10, "x")
    code, out, err = run(capsys, "train", train, "--target", "color", "-T", 50, "--test", test,
                         "--out", tmp_path / "m.rwm", "--no-bounds", "--json")
    doc = json.loads(out)
    assert code == 0 and any("10 of 600 rows" in n for n in doc["notes"])
    code, out, err = run(capsys, "evaluate", tmp_path / "m.rwm", test, "--json")
    assert code == 0 and any("10 of 600 rows" in n for n in json.loads(out)["notes"])


def test_test_labels_are_checked_before_the_fit(capsys, tmp_path, monkeypatch):
    """A test file coded differently is refused before training, not after a long fit."""
    import rwtool as rw
    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    _relabel(SAMPLES / "spirals.csv", train, 0, "")
    _relabel(SAMPLES / "spirals.csv", test, 600, ".")

    def no_fit(self, *a, **k):
        raise AssertionError("fit ran before the label check")
    monkeypatch.setattr(rw.RWClassifier, "fit", no_fit)
    code, out, err = run(capsys, "train", train, "--target", "color", "-T", 50, "--test", test,
                         "--no-bounds")
    assert code != 0 and "never saw in training" in err and "fit ran" not in err


def test_train_reports_the_theta_used(capsys, tmp_path):
    """--theta unset is theta=None: the report gives the resolved value per instantiation."""
    for inst, want in (("rwsign", 0.1), ("mc:normal:gaussian:relu:256", 0.5)):
        code, out, _ = run(capsys, "train", SAMPLES / "moons.csv", "--target", "label",
                           "--instantiation", inst, "-T", 30, "--json", "--no-bounds")
        doc = json.loads(out)
        assert code == 0 and doc["params"]["theta"] is None and doc["metrics"]["theta"] == want
    code, out, _ = run(capsys, "train", SAMPLES / "moons.csv", "--target", "label", "-T", 30,
                       "--theta", "0.3", "--json", "--no-bounds")
    assert code == 0 and json.loads(out)["metrics"]["theta"] == 0.3
    code, out, _ = run(capsys, "train", SAMPLES / "moons.csv", "--target", "label", "-T", 30,
                       "--instantiation", "rwexpsign", "--json", "--no-bounds")
    assert code == 0 and "theta" not in json.loads(out)["metrics"]
    code, out, err = run(capsys, "train", SAMPLES / "moons.csv", "--target", "label",
                         "--theta", "1.5")
    assert code != 0 and "theta must be None" in out + err and "(0, 1)" in out + err
    help_text = cli.build_parser().format_help() + "".join(
        a.format_help() for a in cli.build_parser()._subparsers._group_actions[0].choices.values())
    assert "0.1 for rwsign" in " ".join(help_text.split())
