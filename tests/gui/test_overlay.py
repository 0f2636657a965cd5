"""The comparison of runs of different lengths or units (issue 24's review: a 60-epoch run
overlaid on a 5,500,000-iteration run on one linear axis was a dot at the origin).

Oracles: the fraction of progress computed by hand from each run's own x; the curves the plot
holds; the axis label it shows.
"""

from __future__ import annotations

import numpy as np
import pytest

from gui.logic.overlay import LENGTH_RATIO, overlay_x, run_range


def test_runs_of_one_unit_and_similar_lengths_keep_their_own_x():
    # lengths (last x) 99 and 990: exactly LENGTH_RATIO apart, the largest ratio on one x
    a, b = np.arange(0, 100.0), np.arange(0, 99 * LENGTH_RATIO + 1)
    xs, label, fractions = overlay_x([(a, "iteration"), (b, "iteration")])
    assert not fractions and label == "iteration"
    assert np.array_equal(xs[0], a) and np.array_equal(xs[1], b)
    _, _, fractions = overlay_x([(a, "iteration"), (np.arange(0, 99 * LENGTH_RATIO + 2),
                                                    "iteration")])
    assert fractions


@pytest.mark.parametrize("second", [(np.linspace(0, 5_500_000, 1000), "iteration"),
                                    (np.arange(1, 61.0), "epoch")])
def test_runs_of_different_lengths_or_units_are_fractions_of_their_progress(second):
    # lengths 60 and 5,500,000 (more than 10x apart), or 60 and 60 in another unit
    first = (np.arange(1, 61.0), "iteration")
    xs, label, fractions = overlay_x([first, second])
    assert fractions and "fraction" in label
    assert ("units differ" in label) == (second[1] == "epoch")
    for (x, _), f in zip([first, second], xs):
        np.testing.assert_allclose(f, x / x.max(), rtol=1e-15, atol=0)
        assert f[-1] == 1.0


def test_a_run_of_one_point_counts_by_how_far_it_ran():
    """A run whose curve has one point (at x = 18,000) beside one of 1,100,000 iterations: the
    first is a dot at its end, 1, not a dot at the origin; below zero, the place between the
    run's first and last x."""
    xs, _, fractions = overlay_x([(np.array([18_000.0]), "iteration"),
                                  (np.linspace(40_000, 1_100_000, 25), "iteration")])
    assert fractions and xs[0].tolist() == [1.0]
    xs, _, _ = overlay_x([(np.array([-2.0, 0.0, 2.0]), "lambda"), (np.arange(3.0), "epoch")])
    assert xs[0].tolist() == [0.0, 0.5, 1.0]
    assert run_range(np.linspace(0, 5_500_000, 11), "iteration") == "iteration 0–5,500,000"
    assert run_range([18_000.0], "iteration") == "iteration 18,000"


def test_the_comparison_of_a_short_and_a_long_run_spans_both(qtbot):
    pytest.importorskip("pytestqt")
    pg = pytest.importorskip("pyqtgraph")
    from gui.app import create_app
    from gui.logic.runs_table import Run
    from gui.panels.run_list import RunList
    from tests.gui.test_main_window import TIMEOUT
    create_app()
    rl = RunList()
    qtbot.addWidget(rl)
    rl.resize(900, 700)
    rl.show()
    short = Run(1, "rfsgd", "RFSGD", "RFSGDClassifier", {"n_epochs": 60}, {}, x_label="epoch")
    short.curves = {"loss": (list(np.arange(1, 61.0)), list(np.linspace(1, 0.2, 60)))}
    long = Run(2, "rw", "RW", "RWClassifier", {"solver": "sfgd"}, {}, x_label="iteration")
    x = np.linspace(0, 5_500_000, 500)
    long.curves = {"loss": (list(x), list(np.linspace(1, 0.1, 500)))}
    for run in (short, long):
        rl.add(run)
    rl.select([1, 2])
    qtbot.waitUntil(lambda: not rl.drawing, timeout=TIMEOUT)
    plot = rl.compare_plot
    assert "fraction" in plot.getAxis("bottom").labelText
    curves = [it for it in plot.getPlotItem().items if isinstance(it, pg.PlotDataItem)]
    assert len(curves) == 2
    for c in curves:
        cx, _ = c.getData()
        assert cx.max() == 1.0 and cx.min() <= 1 / 60
    (x0, x1), _ = plot.getViewBox().viewRange()
    assert x0 < 0.0 < 1.0 < x1 < 1.05          # every run whole, its last point inside
    names = [c.name() for c in curves]
    assert any("epoch 1–60" in n for n in names) and any("iteration 0–5,500,000" in n
                                                          for n in names)
