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
    # spans 99 and 990: exactly LENGTH_RATIO apart, the largest ratio kept on one x
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
    # spans 59 and 5,500,000 (more than 10x apart), or 59 and 59 in another unit
    first = (np.arange(1, 61.0), "iteration")
    xs, label, fractions = overlay_x([first, second])
    assert fractions and "fraction" in label
    assert ("units differ" in label) == (second[1] == "epoch")
    for (x, _), f in zip([first, second], xs):
        np.testing.assert_allclose(f, (x - x.min()) / (x.max() - x.min()), rtol=0, atol=1e-15)
        assert f[0] == 0.0 and f[-1] == 1.0


def test_a_run_of_one_point_is_at_the_end_of_its_progress():
    xs, _, fractions = overlay_x([(np.array([7.0]), "iteration"), (np.arange(3.0), "epoch")])
    assert fractions and xs[0].tolist() == [1.0]
    assert run_range(np.linspace(0, 5_500_000, 11), "iteration") == "iteration 0–5,500,000"


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
        assert cx.min() == 0.0 and cx.max() == 1.0
    (x0, x1), _ = plot.getViewBox().viewRange()
    assert (x0, x1) == (0.0, 1.0)
    names = [c.name() for c in curves]
    assert any("epoch 1–60" in n for n in names) and any("iteration 0–5,500,000" in n
                                                          for n in names)
