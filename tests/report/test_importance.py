"""Permutation importance per CSV column, for the command line and the app (issue 25 item 5).

Oracles: rwtool.inspect.permutation_importance called directly on the encoded file with the
one-hot columns of each CSV column grouped by hand, and the file's own column list.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rwtool import cli, read_model
from rwtool.inspect import permutation_importance
from rwtool.report import column_groups, importance_on_file, importance_rows, scoring_words

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


@pytest.fixture
def customers_model(tmp_path, capsys):
    model = tmp_path / "c.rwm"
    code = cli.main([str(a) for a in (
        "train", SAMPLES / "customers.csv", "--target", "churned", "--ignore", "customer_id",
        "comment", "--missing", "impute-mean", "--instantiation", "rwstumps", "-T", 80,
        "--out", model, "--no-progress", "-q")])
    capsys.readouterr()
    assert code == 0
    return model


def test_groups_follow_the_csv_columns(customers_model):
    mf = read_model(customers_model)
    names, groups = column_groups(mf.preprocessing, mf.estimator.n_features_in_)
    assert names == mf.preprocessing.input_columns
    enc = mf.preprocessing.feature_names_out
    # each encoded column belongs to exactly one CSV column, in order, named after it
    assert sum(groups, []) == list(range(len(enc)))
    for n, g in zip(names, groups):
        assert all(enc[j] == n or enc[j].startswith(n + "=") for j in g)
    assert column_groups(None, 3) == (["x0", "x1", "x2"], [[0], [1], [2]])
    with pytest.raises(ValueError, match="not this model's"):
        column_groups(mf.preprocessing, len(enc) + 1)


def test_on_a_file_equals_the_api_with_the_groups(customers_model):
    mf = read_model(customers_model)
    res, rows, ds = importance_on_file(mf, SAMPLES / "customers.csv", n_repeats=3,
                                       random_state=2)
    names, groups = column_groups(mf.preprocessing, ds.X.shape[1])
    ref = permutation_importance(mf.estimator, ds.X, ds.y, n_repeats=3, random_state=2,
                                 groups=groups)
    np.testing.assert_array_equal(res.importances, ref.importances)
    by_name = {r.column: r for r in rows}
    assert set(by_name) == set(names)
    for n, m, s, g in zip(names, ref.importances_mean, ref.importances_std, groups):
        assert by_name[n].mean == m and by_name[n].std == s
        assert by_name[n].share == pytest.approx(float(ref.share[g].sum()), rel=1e-12)
    assert [r.mean for r in rows] == sorted((r.mean for r in rows), reverse=True)
    assert sum(r.share for r in rows) == pytest.approx(1.0)
    assert scoring_words(res.scoring, mf.estimator) == "drop of the accuracy"


def test_rows_without_a_share(regression_data):
    from rwtool import RWRegressor
    X, y = regression_data
    res = permutation_importance(RWRegressor(n_features=30, random_state=0).fit(X, y), X, y,
                                 n_repeats=2, random_state=0)
    rows = importance_rows(res, ["a", "b", "c"])
    assert all(r.share is None for r in rows)
    with pytest.raises(ValueError, match="2 names for 3"):
        importance_rows(res, ["a", "b"])


def test_the_command_prints_the_api_numbers(customers_model, capsys):
    argv = ["inspect", str(SAMPLES / "customers.csv"), "--importance", str(customers_model),
            "--n-repeats", "3", "--seed", "2"]
    assert cli.main(argv + ["--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    mf = read_model(customers_model)
    _, rows, _ = importance_on_file(mf, SAMPLES / "customers.csv", n_repeats=3, random_state=2)
    assert doc["importance"] == [vars(r) for r in rows]
    assert doc["scoring"] == "score" and doc["n_rows"] == 300
    assert cli.main(argv + ["--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "drop of the accuracy when the column is shuffled" in out
    lines = out.splitlines()
    for r in rows:
        assert any(line.split()[:1] == [r.column] and f"{r.mean:.4g}" in line for line in lines)
    assert "share: the model's own importance" in out


def test_the_command_refuses_bad_options_in_one_line(customers_model, capsys):
    code = cli.main(["inspect", str(SAMPLES / "customers.csv"), "--importance",
                     str(customers_model), "--scoring", "r2", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "classifier" in err


def test_the_command_cancels_with_status_130(customers_model, capsys, monkeypatch):
    def cancel_now(self):
        self.cancel_requested = True
    monkeypatch.setattr(cli.ProgressBar, "install_sigint", cancel_now)
    code = cli.main(["inspect", str(SAMPLES / "customers.csv"), "--importance",
                     str(customers_model)])
    assert code == 130 and "cancelled" in capsys.readouterr().err
