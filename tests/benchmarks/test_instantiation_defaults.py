"""benchmarks/calibration/bench_instantiation_defaults: the tuned figure it compares with (no
fitting)."""

import pytest

pytest.importorskip("benchmarks",
                    reason="the benchmark scripts are in a checkout, not in an installed rwtool")
from benchmarks.calibration.bench_instantiation_defaults import _tuned_figure  # noqa: E402

P = {"reg": 1e-6, "theta": 0.3}
CACHE = {"runs": {"k": {"test": 0.03, "params": P}, "partial": {"test": 0.05, "params": P},
                  "stale": {"test": 0.05, "params": P}},
         "refits": {"k": {"params": P, "tests": {"0": 0.03, "1": 0.02, "2": 0.04}},
                    "partial": {"params": P, "tests": {"0": 0.05}},
                    "stale": {"params": dict(P, theta=0.5), "tests": {"0": 0.05, "1": 0.05}}}}


def test_one_draw_compares_with_the_searchs_own_refit():
    assert _tuned_figure(CACHE, "k", [0]) == 0.03
    assert _tuned_figure(CACHE, "absent", [0]) is None


def test_several_draws_compare_with_the_mean_of_the_refits_at_the_same_seeds():
    assert _tuned_figure(CACHE, "k", [0, 1, 2]) == pytest.approx(0.03)
    assert _tuned_figure(CACHE, "k", [1, 2]) == pytest.approx(0.03)
    assert _tuned_figure(CACHE, "k", [0, 1]) == pytest.approx(0.025)
    # a seed whose refit was never computed: no figure rather than a mean of fewer draws
    assert _tuned_figure(CACHE, "partial", [0, 1, 2]) is None
    # refits of other parameters than the search chose: no figure
    assert _tuned_figure(CACHE, "stale", [0, 1]) is None
    assert _tuned_figure(CACHE, "absent", [0, 1]) is None
