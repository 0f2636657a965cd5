"""benchmarks/calibration/bench_bandwidth_defaults.py: its candidates are the estimators' defaults
it claims to be, and its report counts what docs/bench/bandwidth_defaults.md says it counts."""

import json

import numpy as np
import pytest
from scipy.spatial.distance import pdist

import rwtool as rw

pytest.importorskip("benchmarks",
                    reason="the benchmark scripts are in a checkout, not in an installed rwtool")
from benchmarks.calibration import bench_bandwidth_defaults as bb  # noqa: E402


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 7)) * np.array([1, 2, 3, 4, 5, 6, 7]) + 3.0
    X[:, 6] = 2.5                                   # a constant column
    return X, (X[:, 0] + X[:, 1] > 9).astype(int)


def test_fourier_candidates_match_the_default_and_the_median(data):
    X, y = data
    est = rw.RKSClassifier(base="fourier", n_features=30, random_state=0).fit(X, y)
    # c = 1 is the estimator's default: sqrt(d / 2) with d the number of input columns
    assert bb.fourier_sigma("1", X) == pytest.approx(est.feature_map_.sigma, rel=1e-12)
    assert est.feature_map_.sigma == pytest.approx(np.sqrt(7 / 2), rel=1e-12)
    Z = (X - X.mean(axis=0)) / np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
    # (sqrt of the median squared distance: the two middle pairs are averaged in squares)
    assert bb.fourier_sigma("median", X) == pytest.approx(np.median(pdist(Z)), rel=1e-6)
    assert bb.fourier_sigma("scale2", X) == pytest.approx(2 * np.sqrt(6 / 2), rel=1e-9)


def test_stumps_candidate_1_1_is_the_rwstumps_default(data):
    X, y = data
    default = rw.RWClassifier(instantiation="rwstumps", n_features=20, random_state=0).fit(X, y)
    p = bb.params("RW/rwstumps/lstsq", "1/1", X)
    assert (default.feature_map_.sigma, default.feature_map_.gamma_) == (p["sigma"], p["gamma"])
    assert bb.params("RW/rwstumps/lstsq", "2/0.25", X) == {"sigma": 2.0, "gamma": 0.5}


def test_report_counts_rank_excess_near_best_and_misses(tmp_path):
    cells = {"G/x/ridge|cancer|a": 0.040, "G/x/ridge|cancer|b": 0.050,
             "G/x/ridge|wine|a": 0.200, "G/x/ridge|wine|b": 0.100}
    res = {"T": 10, "machine": "m", "seeds": [0], "tuned": {"G/x/ridge|wine": 0.1},
           "cells": {k: {"test": v, "fit": 0.0, "sigma": 1.0} for k, v in cells.items()}}
    text = bb.report(res, "t")
    # a: best on cancer, 100% behind on wine; b: 25% behind on cancer (0.01 > 0.005), best on wine
    assert "| a | 0.0400 | 0.2000 | 1.50 | 50.0% | 1 | 1 |" in text
    assert "| b | 0.0500 | 0.1000 | 1.50 | 12.5% | 1 | 0 |" in text
    f = tmp_path / "run.json"
    f.write_text(json.dumps(res))
    out = tmp_path / "page.md"
    out.write_text(f"# title\n\n{bb.BEGIN}\nold\n{bb.END}\n\nanalysis\n")
    bb.main(["--report-only", "--json", str(f), "--out", str(out)])
    page = out.read_text()
    assert "old" not in page and page.endswith(f"{bb.END}\n\nanalysis\n") and "| a |" in page
