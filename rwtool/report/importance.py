"""Permutation importance as people read it, written once for the command line and the app.

A model trained on a CSV file reads encoded columns (a text column becomes one 0/1 column per
category); a person asks about the file's columns. :func:`column_groups` maps each CSV column to
its encoded columns, which rwtool.inspect.permutation_importance shuffles together (a row never
gets two categories), and :func:`importance_rows` gives one row per CSV column: the mean drop
of the score, its spread over the repeats and, for models that hold one, the exact share of
the column (summed over its encoded columns). :func:`importance_on_file` does the whole
measurement on a labelled CSV file through a model file.

This module computes and formats numbers; it must not print or write files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ..inspect import PermutationImportance, permutation_importance
from .evaluation import check_labels

__all__ = ["ImportanceRow", "column_groups", "importance_rows", "importance_on_file",
           "SCORING_WORDS", "scoring_words"]

#: what an importance measures, per scoring of rwtool.inspect (a drop of a score, or the rise
#: of an error: the negated errors' drops)
SCORING_WORDS = {"score": "drop of the model's score", "accuracy": "drop of the accuracy",
                 "balanced_accuracy": "drop of the balanced accuracy", "r2": "drop of R^2",
                 "neg_mean_squared_error": "rise of the MSE",
                 "neg_root_mean_squared_error": "rise of the RMSE",
                 "neg_mean_absolute_error": "rise of the MAE"}


def scoring_words(scoring: str, model) -> str:
    """What the importances of ``scoring`` measure, in words ("drop of the accuracy"); the
    model's own score is its accuracy (classifiers) or R^2 (regressors)."""
    if scoring == "score":
        kind = getattr(model, "_estimator_type", None)
        scoring = {"classifier": "accuracy", "regressor": "r2"}.get(kind, scoring)
    return SCORING_WORDS.get(scoring, f"drop of {scoring}")


@dataclass(frozen=True)
class ImportanceRow:
    """One input column: its name, the mean and standard deviation of the score's drop when
    it is shuffled, and the model's exact share of it (None when the model has none)."""

    column: str
    mean: float
    std: float
    share: float | None = None


def column_groups(preprocessing, n_features: int) -> tuple[list[str], list[list[int]]]:
    """``(names, groups)``: the CSV columns a model's preprocessing record reads and, for each,
    the columns of X it encodes to (one for a numeric column, one per category for a text
    column). Without a record (a model trained on arrays), each column of X is its own group
    named x0, x1, ..."""
    if preprocessing is None:
        return [f"x{j}" for j in range(n_features)], [[j] for j in range(n_features)]
    names, groups, at = [], [], 0
    for c in preprocessing.columns:
        width = 1 if c["kind"] == "numeric" else len(c["categories"])
        names.append(c["name"])
        groups.append(list(range(at, at + width)))
        at += width
    if at != n_features:
        raise ValueError(f"the preprocessing record encodes {at} columns but the model reads "
                         f"{n_features}: the record is not this model's")
    return names, groups


def importance_rows(result: PermutationImportance, names) -> list[ImportanceRow]:
    """One row per group of ``result`` named by ``names``, most important first (ties keep the
    file's order)."""
    names = list(names)
    if len(names) != len(result.groups):
        raise ValueError(f"{len(names)} names for {len(result.groups)} shuffled groups")
    share = None if result.share is None else np.asarray(result.share, float)
    rows = [ImportanceRow(n, float(m), float(s),
                          None if share is None else float(share[g].sum()))
            for n, m, s, g in zip(names, result.importances_mean, result.importances_std,
                                  result.groups)]
    order = np.argsort([-r.mean for r in rows], kind="stable")
    return [rows[i] for i in order]


def importance_on_file(model, path, *, n_repeats: int = 5, random_state=0, scoring=None,
                       callback=None, **read_options):
    """Permutation importance of ``model`` (an rwtool.persist.ModelFile) on the labelled CSV
    ``path``, encoded as the model's training file was, one group per CSV column.

    Returns ``(result, rows, dataset)``: the rwtool.inspect result, :func:`importance_rows`
    and the encoded file. Labels the model never saw are refused or counted as in
    rwtool.report.evaluate (a shuffled column cannot make them right)."""
    ds = model.apply_csv(path, require_target=True, **read_options)
    est = model.estimator
    if ds.task != "regression":
        check_labels(np.asarray(getattr(est, "classes_", [])), ds.y,
                     os.path.basename(str(path)))
    names, groups = column_groups(model.preprocessing, ds.X.shape[1])
    res = permutation_importance(est, ds.X, ds.y, scoring=scoring, n_repeats=n_repeats,
                                 random_state=random_state, groups=groups, callback=callback)
    return res, importance_rows(res, names), ds
