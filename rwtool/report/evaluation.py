"""A fitted model scored on labelled rows, the same way for a file and for a split.

Labels come first: a row whose label the model never saw in training is always predicted
wrong, so metrics over a file coded differently measure the file, not the model (UCI adults'
test file writes '<=50K.' where training wrote '<=50K'). When such rows are most of the rows
the evaluation is refused (:class:`UnseenLabelsError`, whose fix each caller phrases in its own
words); when they are fewer, it goes on with a note counting them. Then one prediction pass, a
check that the model and its predictions are finite, and the scores of rwtool.report.metrics.
:func:`fit_summary` says what a fit chose (its size, reg, theta) for every caller.

This module may read CSV files through a model's preprocessing record; it must not print,
write files or import the command line or the app.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from ..data import DataError, Dataset
from ..progress import make_progress
from .metrics import check_finite_model, class_index, confusion_matrix, scores
from .terms import API_TERMS, Terms

__all__ = ["UnseenLabelsError", "check_labels", "Evaluation", "evaluate", "FileResult",
           "apply_to_file", "fit_summary", "RowProgress", "SLICE_ROWS"]

#: labels quoted in a message (the rest are counted)
_SHOWN = 10

#: rows of one uninterrupted prediction call between two progress reports, for a model without
#: a feature map (a feature map's own blocks otherwise: FeatureMap.predict_block_rows)
SLICE_ROWS = 4096


class RowProgress:
    """Predictions over many rows in slices, with progress and cancellation between slices.

    One stage (``stage``, ``total`` rows) counts the rows of every :meth:`predict` call made
    through it. A slice is the block of rows the model's feature map computes at a time in
    ``linear_predict`` (:data:`SLICE_ROWS` for a model without one), so the predictions are
    the same bits as in one call (a closed-form map's features of a row may depend on the rows
    computed with it, through the BLAS product <w, x>); a slice takes 0.01-0.4 s on one core.
    With ``callback=None`` each call predicts all its rows at once.
    """

    def __init__(self, callback, stage: str, total: int):
        self.progress = None if callback is None else make_progress(callback)
        self.done = 0
        if self.progress is not None:
            self.progress.start(stage, int(total))

    def predict(self, method, X) -> np.ndarray:
        """``method(X)`` (a predict or decision_function), a slice of rows at a time."""
        n = len(X)
        fmap = getattr(getattr(method, "__self__", None), "feature_map_", None)
        rows = fmap.predict_block_rows() if hasattr(fmap, "predict_block_rows") else SLICE_ROWS
        if self.progress is None or n <= rows:
            out = np.asarray(method(X))
            self._advance(n)
            return out
        parts = []
        for a in range(0, n, rows):
            parts.append(np.asarray(method(X[a:a + rows])))
            self._advance(min(n, a + rows) - a)
        return np.concatenate(parts)

    def extend(self, rows: int) -> None:
        """Count ``rows`` more rows in the stage's total: a pass the caller learns it needs
        after the stage started (the next event carries the new total)."""
        if self.progress is not None:
            self.progress.total += int(rows)

    def _advance(self, rows: int) -> None:
        self.done += rows
        if self.progress is not None:
            self.progress.update(self.done)

    def end(self) -> None:
        if self.progress is not None:
            self.progress.end()


class UnseenLabelsError(DataError):
    """Most evaluated rows carry labels the model never saw in training, so no metric would
    measure the model. Attributes: ``unseen`` (label -> rows), ``n_rows``, ``classes`` (the
    training labels); :meth:`phrase` gives the message with a caller's words for the fix."""

    def __init__(self, unseen: dict, n_rows: int, classes, source: str):
        self.unseen, self.n_rows, self.classes = dict(unseen), int(n_rows), list(classes)
        self.source = source
        n_bad = sum(self.unseen.values())
        shown = ", ".join(repr(str(lab)) for lab in list(self.unseen)[:_SHOWN])
        known = ", ".join(repr(str(c)) for c in self.classes[:_SHOWN])
        super().__init__(f"{n_bad} of {n_rows} rows have labels the model never saw in training "
                         f"({shown}; training labels: {known}), so no metric would mean "
                         f"anything", file=source, hint=self._fix(API_TERMS))

    def _fix(self, terms: Terms) -> str:
        known = {str(c) for c in self.classes}
        if all(str(lab).strip().strip(".;,").strip() in known for lab in self.unseen):
            return "the labels differ only by punctuation or spaces: make them equal in both files"
        fix = "check that both files code the target column the same way"
        numeric = all(isinstance(v, (int, float, np.integer, np.floating))
                      and not isinstance(v, bool) for v in [*self.classes, *self.unseen])
        if numeric:
            fix += (f"; if the target is a quantity rather than classes, train a regressor "
                    f"({terms.setting('task', 'regression')})")
        return fix

    def phrase(self, terms: Terms) -> str:
        """The one-line message with the fix in the words of ``terms``."""
        return str(self)[:-len(self.hint)] + self._fix(terms)


def check_labels(classes, y, source: str) -> str | None:
    """A note on labels of ``y`` outside ``classes`` (the training labels), None when there are
    none; :class:`UnseenLabelsError` when they are most of the rows. ``source`` names the rows
    in the messages (a file name, "the test rows")."""
    y = np.asarray(y)
    idx = class_index(y, classes)
    bad = idx < 0
    if not bad.any():
        return None
    labels, counts = np.unique(y[bad].astype(object).astype(str), return_counts=True)
    # the labels as the file has them, in their own type (1 and not '1' for numbers)
    first = {str(v): v for v in y[bad].tolist()}
    unseen = {first[lab]: int(c) for lab, c in zip(labels.tolist(), counts.tolist())}
    n_bad = int(bad.sum())
    if 2 * n_bad > len(y):
        raise UnseenLabelsError(unseen, len(y), list(np.asarray(classes).tolist()), source)
    shown = ", ".join(repr(str(lab)) for lab in list(unseen)[:_SHOWN])
    return (f"{n_bad} of {len(y)} rows of {source} have labels absent from training "
            f"(always counted wrong): {shown}")


@dataclass
class Evaluation:
    """A model scored on labelled rows: the predictions, the scores (rwtool.report.scores: an
    undefined score is absent), the classes and confusion matrix of a classifier, and the
    notes to read with them."""

    pred: np.ndarray
    scores: dict
    classes: list | None = None
    confusion: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)


def evaluate(est, X, y, *, task: str, source: str, pred=None, classes=None,
             labels_checked: bool = False) -> Evaluation:
    """Score the fitted ``est`` on (X, y) (see the module docstring).

    ``pred``: ``est.predict(X)`` when the caller has it (it is not predicted again).
    ``classes``: the labels the model knows, for a model without ``classes_``.
    ``labels_checked``: the caller ran :func:`check_labels` on ``y`` already (before a fit,
    so that a file coded differently is refused in a second) and keeps its note.
    Raises UnseenLabelsError (see :func:`check_labels`) and rwtool.NumericalError.
    """
    notes: list[str] = []
    classification = task != "regression"
    if classification:
        classes = list(np.asarray(getattr(est, "classes_", classes)).tolist())
        if not labels_checked:
            note = check_labels(classes, y, source)
            notes += [note] if note else []
    check_finite_model(est)
    pred = np.asarray(est.predict(X) if pred is None else pred)
    check_finite_model(est, ("predictions", pred))
    sc, more = scores(y, pred, task, classes, rows=source)
    return Evaluation(pred, sc, classes if classification else None,
                      confusion_matrix(y, pred, classes) if classification else None,
                      notes + more)


@dataclass
class FileResult:
    """A model applied to a CSV file: the file encoded as the training data was (``data``:
    rwtool.data.Dataset, with ``rows`` the file line of each row), the predictions, and their
    evaluation when the file holds the target and scoring was asked for."""

    data: Dataset
    pred: np.ndarray
    evaluation: Evaluation | None = None

    @property
    def notes(self) -> list[str]:
        return list(self.data.notes) + (self.evaluation.notes if self.evaluation else [])


def apply_to_file(model, path, *, score: bool = True, require_target: bool = False,
                  callback=None, **read_options) -> FileResult:
    """Encode the CSV ``path`` as ``model`` (an rwtool.persist.ModelFile: an estimator and its
    preprocessing record) was trained, predict every row once and, when the file holds the
    target and ``score``, evaluate the predictions (:func:`evaluate`, so labels the model never
    saw are refused or counted). ``read_options``: the dialect options of read_csv.
    ``callback`` (rwtool.progress) receives "predicting" events over the rows, and its cancel
    raises rwtool.FitCancelled between two slices of rows (:class:`RowProgress`)."""
    ds = model.apply_csv(path, require_target=require_target, **read_options)
    est = model.estimator
    rows = RowProgress(callback, "predicting", len(ds.X))
    if score and ds.y is not None and len(ds.y):
        classes = getattr(est, "classes_", None)
        if ds.task != "regression" and classes is not None:
            # refused before the prediction pass when most labels are unknown
            check_labels(list(np.asarray(classes).tolist()), ds.y,
                         os.path.basename(str(path)))
        pred = rows.predict(est.predict, ds.X) if callback is not None else None
        ev = evaluate(est, ds.X, ds.y, task=ds.task, source=os.path.basename(str(path)),
                      pred=pred)
        rows.end()
        return FileResult(ds, ev.pred, ev)
    pred = rows.predict(est.predict, ds.X)
    rows.end()
    check_finite_model(est, ("predictions", pred))
    return FileResult(ds, pred)


def fit_summary(est) -> dict:
    """What a fit chose, as both callers report it: ``n_features_out`` (features or particles
    with a non-zero coefficient, ``estimator.n_features_out_``), ``reg`` (the value used, when
    the estimator records one) and ``reg_auto`` (chosen by cross-validation), ``theta`` (the
    theta the gamma rule used) and ``theta_default`` (theta=None resolved it per kind)."""
    out: dict = {}
    n_out = getattr(est, "n_features_out_", None)
    if n_out is not None:
        out["n_features_out"] = int(n_out)
    reg = getattr(est, "reg_", None)
    if isinstance(reg, (int, float)) and not isinstance(reg, bool):
        out["reg"] = float(reg)
        out["reg_auto"] = getattr(est, "reg_search_", None) is not None
    theta = getattr(getattr(est, "feature_map_", None), "theta_target_", None)
    if isinstance(theta, float):
        out["theta"] = theta
        out["theta_default"] = getattr(est, "theta", 0.0) is None
    return out
