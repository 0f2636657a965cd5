"""The verdicts and report of benchmarks/calibration/bench_divergence.py on hand-made results."""

import pytest

pytest.importorskip("benchmarks",
                    reason="the benchmark scripts are in a checkout, not in an installed rwtool")
from benchmarks.calibration.bench_divergence import report, verdict  # noqa: E402
from rwtool.solvers._divergence import FINAL_RAISE, FINAL_WARN


def _ran(r, warnings=()):
    return dict(status="ran", r=r, test=0.1, seconds=0.1, warnings=list(warnings))


def test_verdicts_follow_the_shipped_thresholds():
    assert verdict(dict(status="stopped", iteration=3, warnings=[])) == "raise (early stop)"
    assert verdict(_ran(1.01 * FINAL_RAISE)) == "raise (final check)"
    assert verdict(_ran(float("inf"))) == "raise (final check)"
    assert verdict(_ran((FINAL_WARN + FINAL_RAISE) / 2)) == "warn (final check)"
    assert verdict(_ran(0.99 * FINAL_WARN)) == "ok"
    assert verdict(_ran(0.5, ["NumericalWarning: collinear"])) == "ok + other warning"


def test_report_counts_verdicts_and_shows_the_old_stop():
    results = {"machine": "test", "T": 50, "diverged": 100.0,
               "defaults": {"wine": {"RW/rwsign/sfgd": _ran(0.2), "RW/rwsign/osd": _ran(0.4)}},
               "bad": {"wine": {
                   "RW/rwsign/sfgd|step_cap x10": dict(status="stopped", iteration=12,
                                                       warnings=[],
                                                       old={"status": "stopped",
                                                            "iteration": 96}),
                   "RKS/relu/sgd|step x10": dict(status="stopped", iteration=6, warnings=[],
                                                 old={"status": "ran", "r": 418.0}),
                   "RKS/sign/sgd|step x10": _ran(1.14)}}}
    text = report(results)
    assert "| wine | 2 | 0.4 (RW/rwsign/osd) | 0.3 | ok: 2 |" in text
    assert "| 12 / 96 |" in text and "ran to the end, r = 418" in text
    assert "| RKS/sign/sgd | step x10 | 1.14 |" in text and "warn (final check)" in text
