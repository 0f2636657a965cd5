"""The predictions CSV: one row per input row, with the line it came from, written atomically.

``rwtool predict`` and the app's *Apply Model to CSV* write the same columns (``row``, the line
of the row in the input file, and ``prediction``; the decision values on request); the app adds
``actual`` when the file holds the target. Floats keep every digit (``repr``). This module
writes; it must not predict or read files.
"""

from __future__ import annotations

import csv

import numpy as np

from ..persist import atomic_writer

__all__ = ["prediction_columns", "write_csv", "write_predictions"]


def prediction_columns(est, X, rows, pred, decision: bool = False) -> dict:
    """``{"row": rows, "prediction": pred}``, with the decision function of a classifier when
    ``decision`` (``decision`` for two classes, ``decision_<class>`` per class otherwise)."""
    columns = {"row": np.asarray(rows), "prediction": np.asarray(pred)}
    if decision and callable(getattr(est, "decision_function", None)):
        D = np.asarray(est.decision_function(X))
        if D.ndim == 1:
            columns["decision"] = D
        else:
            for j, c in enumerate(est.classes_):
                columns[f"decision_{c}"] = D[:, j]
    return columns


def write_csv(fh, columns: dict) -> None:
    """Write ``{header: sequence}`` (equal lengths) to the text stream ``fh`` as CSV."""
    cols = [np.asarray(v) for v in columns.values()]
    if len({len(c) for c in cols}) > 1:
        raise ValueError("prediction columns of different lengths")
    w = csv.writer(fh, lineterminator="\n")
    w.writerow(list(columns))
    as_text = [[repr(float(v)) for v in c] if c.dtype.kind == "f" else c.tolist()
               for c in cols]
    w.writerows(zip(*as_text))


def write_predictions(path, columns: dict) -> str:
    """Write ``columns`` as a CSV file at ``path``, atomically (a reader never sees half a
    file; an old file stays whole if the write fails); returns ``path``."""
    with atomic_writer(path, "w", encoding="utf-8", newline="") as fh:
        write_csv(fh, columns)
    return str(path)
