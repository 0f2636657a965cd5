"""Metrics of predictions against labels or values, written once: class positions, the confusion
matrix and per-class report, R^2, and the scores the command line and the app print.

Labels are compared as values, as scikit-learn does (``1 == 1.0``, ``"1" != 1``): after
rwtool.data has read a file, its labels have the type of the training labels. No metric comes
from non-finite numbers: :func:`check_finite_model` raises NumericalError first, and a score
that is undefined on the rows (R^2 of a constant target) is left out with a note saying why,
never returned as NaN. This module computes with numpy only; it must not read files or print.
"""

from __future__ import annotations

import re

import numpy as np

from ..exceptions import NumericalError

__all__ = ["class_index", "confusion_matrix", "class_report", "r2_score", "scores",
           "defined_scores", "check_finite_model", "metric_meaning"]


def class_index(labels, classes) -> np.ndarray:
    """Position of each label in ``classes`` (-1 for a label that is not one of them)."""
    classes = classes.tolist() if isinstance(classes, np.ndarray) else list(classes)
    index = {c: i for i, c in enumerate(classes)}
    labels = np.asarray(labels).ravel()
    try:
        # one dictionary look-up per distinct label
        values, inverse = np.unique(labels, return_inverse=True)
    except TypeError:  # labels numpy cannot sort (mixed types): one look-up per label
        return np.array([index.get(v, -1) for v in labels.tolist()], np.int64)
    return np.array([index.get(v, -1) for v in values.tolist()], np.int64)[inverse.ravel()]


def confusion_matrix(y_true, y_pred, classes) -> np.ndarray:
    """counts[i, j] = number of rows of class ``classes[i]`` predicted as ``classes[j]``; rows
    whose label or prediction is not one of ``classes`` are left out, as scikit-learn does."""
    k = len(classes)
    t, p = class_index(y_true, classes), class_index(y_pred, classes)
    ok = (t >= 0) & (p >= 0)
    return np.bincount(t[ok] * k + p[ok], minlength=k * k).astype(np.int64).reshape(k, k)


def class_report(y_true, y_pred, classes, cm=None) -> dict:
    """Per-class precision, recall, F1 and support, balanced accuracy and Cohen's kappa.

    From the confusion matrix C (rows actual, columns predicted): precision_c = C_cc / sum_i
    C_ic, recall_c = C_cc / sum_j C_cj, F1 their harmonic mean (0 when both are 0), balanced
    accuracy the mean recall over the classes present, kappa = (p_o - p_e) / (1 - p_e) with
    p_o the accuracy and p_e = sum_c (row_c / n)(col_c / n) the agreement of chance. ``cm``:
    their confusion matrix, when the caller has it already.
    """
    cm = (confusion_matrix(y_true, y_pred, classes) if cm is None else cm).astype(float)
    n = cm.sum()
    tp = np.diag(cm)
    col, row = cm.sum(axis=0), cm.sum(axis=1)
    prec = np.divide(tp, col, out=np.zeros_like(tp), where=col > 0)
    rec = np.divide(tp, row, out=np.zeros_like(tp), where=row > 0)
    f1 = np.divide(2 * prec * rec, prec + rec, out=np.zeros_like(tp), where=prec + rec > 0)
    present = row > 0
    bal = float(rec[present].mean()) if present.any() else float("nan")
    po = float(tp.sum() / n) if n else float("nan")
    pe = float(np.sum(row * col) / (n * n)) if n else float("nan")
    kappa = (po - pe) / (1 - pe) if n and pe < 1 else (1.0 if po == 1 else 0.0)
    return {"classes": [str(c) for c in classes], "precision": prec, "recall": rec, "f1": f1,
            "support": row.astype(np.int64), "balanced_accuracy": bal, "kappa": float(kappa)}


def r2_score(y, pred) -> float:
    """1 - SS_res / SS_tot; NaN when the values do not vary (callers leave it out then)."""
    y = np.asarray(y, float).ravel()
    pred = np.asarray(pred, float).ravel()
    ss = float(np.sum((y - y.mean()) ** 2)) if len(y) else 0.0
    return float("nan") if ss == 0 else 1.0 - float(np.sum((y - pred) ** 2)) / ss


def scores(y, pred, task: str, classes=None, rows: str = "the rows") -> tuple[dict, list[str]]:
    """``(scores, notes)`` of the predictions ``pred`` of labels or values ``y``.

    Classification: ``error`` and ``accuracy``, a row counting as right when its prediction is
    its label (a label outside ``classes`` is always wrong). Regression: ``r2``, ``mse`` and
    ``mae``; R^2 is undefined when the values do not vary (one row, a constant target): it is
    then absent and a note, naming ``rows``, says why.
    """
    notes: list[str] = []
    if len(y) == 0:
        raise ValueError(f"no rows to score on {rows}")
    if task != "regression":
        if classes is None:
            raise ValueError("classification scores need the model's classes")
        t = class_index(y, classes)
        right = (t >= 0) & (t == class_index(pred, classes))
        # each a mean of its own 0/1 indicator: the error is exactly np.mean(pred != y)
        return {"error": float(np.mean(~right)), "accuracy": float(np.mean(right))}, notes
    y = np.asarray(y, float).ravel()
    pred = np.asarray(pred, float).ravel()
    err = pred - y
    out = {"r2": r2_score(y, pred), "mse": float(np.mean(err ** 2)),
           "mae": float(np.mean(np.abs(err)))}
    return defined_scores(out, {"r2": rows}, len(y))


def defined_scores(metrics: dict, rows: dict, n_rows=None) -> tuple[dict, list[str]]:
    """``(metrics, notes)``: the metrics without those that are not finite, each left out
    with a note. ``rows``: metric key -> the rows it was computed on, as the note names them
    (an undefined R^2 comes from a target taking a single value there)."""
    out, notes = {}, []
    for k, v in metrics.items():
        if not isinstance(v, (float, np.floating)) or np.isfinite(v):
            out[k] = v
        elif k.endswith("r2"):
            count = "" if n_rows is None else f" ({n_rows} row(s))"
            notes.append(f"R^2 is undefined on {rows.get(k, 'the rows')}: the target takes a "
                         f"single value there{count}; judge the model by its MSE, or evaluate "
                         f"on more rows")
        else:
            notes.append(f"{k} is not a number on {rows.get(k, 'the rows')}: left out")
    return out, notes


def check_finite_model(est, *arrays) -> None:
    """Raise rwtool.NumericalError when the model or its scores hold NaN or infinity: no
    metric is ever computed from non-finite numbers. ``arrays``: ``(what, values)`` pairs."""
    solver = str(est.get_params().get("solver", type(est).__name__)) if hasattr(
        est, "get_params") else type(est).__name__
    fix = ("use a larger reg, fewer features, reg=\"auto\", or the lstsq solver; check that "
           "the inputs are standardised")
    for name in ("coef_", "particles_", "dual_coef_", "intercept_"):
        v = getattr(est, name, None)
        if isinstance(v, np.ndarray) and v.dtype.kind == "f" and not np.all(np.isfinite(v)):
            raise NumericalError(f"the fitted {name.rstrip('_')} contains non-finite values",
                                 solver=solver, fix=fix)
    for what, a in arrays:
        a = np.asarray(a)
        if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
            bad = int(a.size - np.count_nonzero(np.isfinite(a)))
            raise NumericalError(f"the model's {what} contain {bad} non-finite value(s) of "
                                 f"{a.size}", solver=solver, fix=fix)


# ---------------------------------------------------------------------------- what a metric means

#: the rows a metric's first word names (the command line writes ``test_error``, the app
#: ``test error``; both name their row sets the same way)
_ROWS = {"train": "the training rows", "test": "the test rows", "file": "the file's rows",
         "validation": "the validation rows", "fold": "each fold's held-out rows",
         "cv": "each fold's held-out rows"}

#: (pattern on the normalised name, meaning); ``{rows}`` is the row set the name starts with
_MEANINGS = (
    (r"baseline (\w+) error \(majority class\)",
     "error of always predicting the training rows' most frequent class, on {rows}: the "
     "error a model must beat"),
    (r"baseline (\w+) mse \(training mean\)",
     "MSE of always predicting the training rows' mean, on {rows}: the MSE a model must beat"),
    (r"(\w+) error", "share of {rows} whose class is predicted wrong (0 is perfect)"),
    (r"(\w+) accuracy", "share of {rows} whose class is predicted right (1 - error)"),
    (r"(\w+) balanced accuracy",
     "mean over the classes of the share of each class's rows predicted right, on {rows}: "
     "1 / (number of classes) is chance, whatever the class sizes"),
    (r"(\w+) cohen's kappa",
     "agreement of predicted and true classes beyond chance, on {rows}: 0 is chance, "
     "1 perfect"),
    (r"(\w+) auc",
     "area under the ROC curve on {rows}: the chance that a row of the positive class scores "
     "above a row of the other (0.5 is chance, 1 perfect)"),
    (r"(\w+) mse", "mean squared difference of prediction and target on {rows}, in the "
                   "target's units squared"),
    (r"(\w+) (?:r\^?2)", "1 - MSE / variance of the target on {rows}: 1 is perfect, 0 no "
                          "better than predicting the mean"),
    (r"(\w+) mae", "mean absolute difference of prediction and target on {rows}, in the "
                   "target's units"),
    (r"features used|n features", "features the model holds (after a prune, those it kept)"),
    (r"fit time(?: \(s\)| s)", "seconds the fit took (wall clock)"),
    (r"of which choosing reg \(s\)",
     "seconds of the fit spent choosing the regularisation by cross-validation"),
    (r"reg chosen \(auto\)|reg chosen by cv",
     "regularisation chosen by cross-validation on the training rows (reg auto)"),
    (r"reg", "regularisation the fit used"),
    (r"theta(?: \(the instantiation's default\))?",
     "target theta of the Gaussian kernel width's rule (003 Table 4): a smaller theta, a "
     "narrower kernel and tighter bounds"),
    (r"search: best cv score", "best mean cross-validated score among the tuning "
                               "search's candidates"),
    (r"n rows", "rows the model was scored on"),
    (r"cancelled", "the fit was cancelled: the model is its last completed iterate"),
)


def metric_meaning(name: str) -> str:
    """What the metric called ``name`` means, in a line, or "" for a name this layer does not
    know. Both callers' spellings are read (``test_error`` of the command line, ``test error``
    of the app); a cross-validated spread ``... (std over k folds)`` says so."""
    key = str(name).strip().lower().replace("_", " ")
    spread = re.fullmatch(r"(.*) \(std over (\d+) folds\)", key)
    if spread:
        key = spread.group(1)
    for pattern, meaning in _MEANINGS:
        m = re.fullmatch(pattern, key)
        if m is None:
            continue
        rows = m.group(1) if m.groups() else None
        if rows is not None and rows not in _ROWS:
            continue
        text = meaning.format(rows=_ROWS.get(rows, "the rows"))
        if spread:
            return f"standard deviation over the {spread.group(2)} folds of the {text}"
        return f"mean over the folds of the {text}" if rows == "cv" else text
    return ""
