"""A fitted model applied to a CSV file (File > Apply Model to CSV): its predictions, and its
scores when the file holds the target.

:func:`apply_file` runs as a job in the app's fit process (gui.logic.jobs), with the callback
of the job: "predicting" progress over the rows, and Cancel between two slices of rows. The
reading, the label check and the scores are rwtool.report.apply_to_file's, as
`rwtool evaluate` computes them.

This module computes; it must not import Qt or draw.
"""

from __future__ import annotations

from rwtool.persist import ModelFile
from rwtool.report import apply_to_file

from .evaluate import SCORE_NAMES

__all__ = ["apply_file"]


def apply_file(est, preprocessing, path: str, callback=None) -> dict:
    """``{"path", "rows", "y", "notes", "pred"}`` (and ``"metrics"``, named as the app names
    them: "file error", "file MSE"..., when the file holds the target) of ``est`` on the CSV
    ``path``, encoded with ``preprocessing`` (the record of the training CSV). Labels the
    model never saw are refused or counted, as `rwtool evaluate` does."""
    model = ModelFile(path="", estimator=est, preprocessing=preprocessing, metrics={})
    res = apply_to_file(model, path, callback=callback)
    out = {"path": path, "rows": res.data.rows, "y": res.data.y, "notes": res.notes,
           "pred": res.pred}
    if res.evaluation is not None:
        out["metrics"] = {f"file {SCORE_NAMES.get(k, k)}": v
                          for k, v in res.evaluation.scores.items()}
    return out
