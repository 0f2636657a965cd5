"""The method form's passes over the training rows go a block of rows a step (issue 24,
"Responsiveness under load": at once they were the longest turn of opening a 200,000-row file,
17 ms of the GUI thread under load).

Oracle: numpy's own mean, std and row norms over the whole array. Nothing here measures time.
"""

from __future__ import annotations

import numpy as np
import pytest

from gui.logic.method_rules import STEP_ROWS, DataStats, derived_quantities


def _dense(X):
    sd = X.std(axis=0)
    Z = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    return np.einsum("ij,ij->i", X, X).max(), np.einsum("ij,ij->i", Z, Z).max()


@pytest.mark.parametrize("n", [1, STEP_ROWS - 1, 3 * STEP_ROWS + 17])
def test_the_blocks_give_the_whole_arrays_numbers(n):
    """Blocks merged one by one give numpy's numbers on the whole array. Tolerance: the
    columns sit at 1000 with a spread of 5 (a mean 200 spreads away), so the standardised
    norms carry about 200^2 eps of relative rounding in either computation; 1e-10 is far
    above it and far below a wrong block merge (a 1e-4 error in a column's mean)."""
    rng = np.random.default_rng(n)
    X = rng.normal(1000.0, 5.0, (n, 3))
    X[:, 2] = 7.0 if n == 1 else X[:, 2]             # one row: every deviation is zero
    stats = DataStats(X, later=True)
    assert not stats.ready
    passes = sum(1 for _ in stats.steps())
    assert stats.ready and passes == 2 * -(-n // STEP_ROWS)
    raw, std = _dense(X)
    assert stats.sq_max[False] == pytest.approx(raw, rel=1e-12)
    assert stats.sq_max[True] == pytest.approx(std, rel=1e-10, abs=1e-12)
    assert DataStats(X).sq_max == stats.sq_max          # at once: the same blocks


def test_the_method_form_computes_in_steps_not_in_the_loading_turn(qtbot):
    pytest.importorskip("pytestqt")
    from gui.app import create_app
    from gui.panels.method_panel import MethodPanel
    create_app()
    panel = MethodPanel()
    qtbot.addWidget(panel)
    panel.set_method("rw", {"instantiation": "rwsign"})
    X = np.random.default_rng(0).normal(size=(4 * STEP_ROWS, 3))
    panel.set_data(X)
    assert panel.computing and panel._stats is None
    # meanwhile the form says so (it said "Load data to see the derived quantities.")
    assert panel._derived_rows == [("", "Computing from the training rows…")]
    qtbot.waitUntil(lambda: not panel.computing, timeout=60_000)
    assert panel._stats.ready and panel._stats.n_rows == len(X)
    # what the form shows is what the rows give at once (whose passes the test above checks
    # against numpy), the sup of the rows' norms included
    shown = dict(panel._derived_rows)
    assert shown == dict(derived_quantities("rw", panel.params(partial=True), X))
    assert any("sup" in k for k in shown)
