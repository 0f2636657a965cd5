"""benchmarks/calibration/bench_width_cv: the verdicts it counts (no fitting)."""

import pytest

pytest.importorskip("benchmarks",
                    reason="the benchmark scripts are in a checkout, not in an installed rwtool")
from benchmarks.calibration.bench_width_cv import GRID, count  # noqa: E402


def test_count_compares_the_default_and_the_criterions_pick_with_the_tuned_figure():
    res = {"cells": {
        # default 0.040 misses 0.030 (+0.010 > 0.005); the pick (best cv) is 0.032: within
        "a|rwsign": {"param": "theta", "tuned": 0.030,
                     "cells": [[0.1, 0.90, 0.040], [0.03, 0.95, 0.032], [0.3, 0.80, 0.020]]},
        # default within; the pick (cv 0.99) is 0.5 vs tuned 0.4: +25% > 5%: a miss
        "b|fourier": {"param": "sigma", "tuned": 0.4,
                      "cells": [[1.0, 0.90, 0.41], [0.5, 0.99, 0.50], [2.0, 0.80, 0.30]]},
        # no tuned figure: not counted
        "c|rwstumps": {"param": "gamma", "tuned": None,
                       "cells": [[1.0, 0.5, 0.9], [0.5, 0.6, 0.9], [2.0, 0.7, 0.9]]},
    }}
    assert count(res) == {"rows": 2, "default": 1, "pick": 1}


def test_the_first_value_of_every_grid_is_the_estimators_default():
    import inspect
    import rwtool as rw
    from rwtool.features._rkhs import DEFAULT_THETA
    params = inspect.signature(rw.RWClassifier).parameters
    assert GRID["rwsign"][1][0] == GRID["rwrelu"][1][0] == DEFAULT_THETA
    # kappa: 5, the default when docs/bench/bandwidth_defaults.md was measured (10 since); pinned
    # so the script reproduces those figures
    assert GRID["rwexpsign"][1][0] == GRID["rwexprelu"][1][0] == 5.0 != params["kappa"].default
    assert GRID["rwstumps"][1][0] == params["sigma"].default   # gamma = sigma by default
    assert GRID["fourier"][1][0] == 1.0                        # c = 1: sigma = sqrt(d / 2)
