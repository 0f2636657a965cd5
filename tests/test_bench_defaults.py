"""The target checks of benchmarks/defaults.py (issue 12, point 10) on hand-made results."""

from benchmarks.defaults import checks, report


def _ok(test, **kw):
    return dict(status="ok", test=test, train=test, fit=0.1, **kw)


def _results():
    cls = {"task": "classification", "n_train": 100, "n_test": 50, "d": 3,
           "rows": {"RW/rwsign/lstsq": _ok(0.100), "RW/rwsign/sfgd": _ok(0.131),
                    "RW/rwsign/osd": _ok(0.129), "RW/rwrelu/lstsq": _ok(0.2),
                    "RW/rwrelu/sfgd": dict(status="NumericalError", message="diverged"),
                    "RKS/relu/ridge": _ok(0.104), "RFSGD": _ok(0.0811),
                    "GreedyMK/mfga": _ok(0.09), "BKerNN": _ok(0.5, constant=True),
                    "RW/rwsign/lasso": _ok(0.5, constant=True,
                                           warnings=["NumericalWarning: predicts one class"])},
           "alternatives": {"rbf_sgd": {"test": 0.07, "fit": 1.0},
                            "nystroem": {"test": 0.08, "fit": 1.0}},
           "tuned": {"RW/rwsign/lstsq": {"test": 0.096, "params": {"reg": 1e-6}},
                     "RKS/relu/ridge": {"test": 0.098, "params": {}},
                     "RW/rwrelu/lstsq": {"test": 0.1, "params": {}}}}
    reg = {"task": "regression", "rows": {"RW/rwsign/sfgd": _ok(0.9),
                                          "RW/rwsign/lstsq": _ok(0.4)},
           "alternatives": {}, "tuned": {}}
    return {"T": 500, "max_train": 100, "bkernn_rows": 10, "tune_draws": 4, "tune_folds": 3,
            "tune_rows": 100, "machine": "test", "datasets": {"make_classification": cls,
                                                               "abalone": reg}}


def test_checks_flag_exactly_the_misses():
    c = checks(_results())
    miss = {k: sorted(row for _, row, _ in v[1]) for k, v in c.items()}
    # 0.100 <= 0.096 + max(0.0048, 0.005); 0.104 > 0.098 + 0.005 by 0.001; 0.2 vs 0.1
    assert miss["tuned"] == ["RKS/relu/ridge", "RW/rwrelu/lstsq"]
    # 0.131 is 0.031 above lstsq, 0.129 is within; a NumericalError is a miss; regression exempt
    assert miss["iterative"] == ["RW/rwrelu/sfgd", "RW/rwsign/sfgd"]
    assert c["iterative"][0] == 3
    assert miss["rfsgd"] == ["RFSGD"]                  # 0.0811 > 0.07 + 0.01
    assert miss["greedy"] == ["GreedyMK/mfga"]         # 0.09 > 0.08
    assert miss["constant"] == ["BKerNN"] and miss["finite"] == []
    assert miss["warned"] == ["RW/rwsign/lasso"]      # constant, but the fit said so
    assert miss["loud"] == ["RW/rwrelu/sfgd"]


def test_report_lists_every_miss():
    text = report(_results(), "python -m benchmarks.defaults")
    assert "| lstsq/ridge default within max(5% rel, 0.005 abs) of tuned | 3 | 2 |" in text
    assert "make_classification, RW/rwsign/sfgd: 0.1310 vs lstsq 0.1000 (+0.0310)" in text
    assert "**constant model**" in text


def test_report_keeps_the_text_around_the_markers(tmp_path):
    from benchmarks.defaults import BEGIN, END, write_report
    out = tmp_path / "defaults.md"
    write_report("first\n", out)
    assert out.read_text().startswith("# Defaults benchmark") and "first" in out.read_text()
    out.write_text(out.read_text().replace(END, END + "\nanalysis\n"))
    write_report("second\n", out)
    text = out.read_text()
    assert "second" in text and "first" not in text and "analysis" in text.split(END)[1]
    assert text.count(BEGIN) == 1


def test_solvers_filter_keeps_only_those_rw_and_rks_rows():
    import argparse

    from benchmarks.defaults import rows
    args = argparse.Namespace(T=50, methods=["RW", "RKS", "RFSGD"], solvers=["lstsq", "ridge"])
    keys = [key for key, *_ in rows("cancer", args)]
    assert len(keys) == 9 and all(k.endswith(("/lstsq", "/ridge")) for k in keys)
    args.solvers = None
    assert "RFSGD" in [key for key, *_ in rows("cancer", args)]
