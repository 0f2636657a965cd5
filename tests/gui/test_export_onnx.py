"""File > Export ONNX Graph: the selected run's model as a graph that takes the CSV's columns.

Oracle: the run's own estimator, on the rows of the CSV it was trained on, through onnxruntime.
"""

from __future__ import annotations

import csv

import numpy as np
import pytest

pytest.importorskip("pytestqt")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from tests.gui.test_main_window import (  # noqa: E402,F401
    TIMEOUT, choose, load, moons_csv, train, window)


@pytest.mark.slow
def test_export_onnx_of_a_trained_run(qtbot, window, tmp_path):
    path = moons_csv(tmp_path / "moons.csv")
    load(qtbot, window, path)
    choose(window, "rw", n_features=30)
    run = train(qtbot, window)
    assert window.act_export_onnx.isEnabled()
    out = str(tmp_path / "run.onnx")
    assert window.export_onnx(out, run)
    sess = ort.InferenceSession(out, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    feeds = {n: np.array([[float(r[n])] for r in rows]) for n in names}
    label = sess.run(["label"], feeds)[0]
    X = np.column_stack([feeds[n][:, 0] for n in names])
    np.testing.assert_array_equal(label, run.result["estimator"].predict(X))
    assert not window.export_onnx(str(tmp_path / "no" / "dir" / "run.onnx"), run)
