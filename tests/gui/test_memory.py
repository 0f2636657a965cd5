"""What a session holds per run, measured from the objects (issue 24 "Memory").

A session on a 200,000 x 3 file that trains five runs peaked at 2.9-3.1 GB: the RKHS weightings'
bounds, computed after every fit, built the whole feature matrix Phi (m x T floats: 1.2 GB at
150,000 training rows and T = 1000). Oracles: tracemalloc's peak over a whole Train (numpy
reports its buffers to it, from every thread) against Phi's own size; every array a run keeps,
found by walking its result and model, against the data tab's X.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from gui.logic.jobs import reachable_arrays  # noqa: E402
from tests.gui.test_main_window import (  # noqa: E402,F401
    choose, load, train, window, write_csv)


@pytest.mark.slow
def test_a_run_keeps_no_copy_of_x_and_never_holds_phi_whole(qtbot, window, tmp_path):
    rng = np.random.default_rng(0)
    n = 60_000
    X = rng.integers(0, 256, (n, 3))
    y = np.where(X[:, 2] > X[:, 0] + 10, 1, 2)
    path = write_csv(tmp_path / "skinlike.csv", ["B", "G", "R", "label"],
                     np.column_stack([X, y]).tolist())
    load(qtbot, window, path)
    T = 300
    choose(window, "rw", n_features=T, random_state=0)
    # compiling kernels allocates through Python, which tracemalloc counts: the run's kernels
    # are compiled (or loaded from the cache) before the peak is traced, whatever ran before
    from rwtool import RWClassifier
    warm = RWClassifier(n_features=T, random_state=0).fit(X[:500], y[:500])
    warm.predict(X[:10])
    tracemalloc.start()
    try:
        run = train(qtbot, window)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert run.status == "done", run.note
    tr = window.data_info["train"]
    phi = tr.n_samples * T * 8                                   # 108 MB
    # beside a block of features, a classifier's reg="auto" keeps its validation sample's
    # leading features (captured in the pass: 10,000 rows x T_s columns, 23 MB here), which
    # the search would otherwise compute again; neither is Phi whole
    from rwtool.solvers._from_sums import VALIDATION_ROWS
    from rwtool.solvers._sufficient import search_features
    sample = min(tr.n_samples, VALIDATION_ROWS) * search_features(tr.n_samples, T) * 8
    assert peak < phi / 2 + sample, (f"peak {peak / 2**20:.0f} MB, Phi {phi / 2**20:.0f} MB, "
                                     f"sample {sample / 2**20:.0f} MB")
    # the run reads the data tab's X itself, and keeps no other array as large as X
    assert run.rows["train"].X is tr.X
    kept = [a for a in reachable_arrays((run.result, run.curves)) if a.nbytes >= tr.X.nbytes]
    assert not [a.shape for a in kept if not np.shares_memory(a, tr.X)]
    # per-row arrays kept: labels and predictions of the training and test rows, 1-D
    per_row = [a for a in reachable_arrays(run.result) if a.ndim and a.shape[0] >= 1000]
    assert all(a.ndim == 1 for a in per_row)
    assert sum(a.nbytes for a in per_row) <= 4 * n * 8
