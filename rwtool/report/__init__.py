"""The layer between a fitted model and a person, written once for the command line and the app.

What ``rwtool`` (the command) and the app both show about a model is computed here: which
methods exist and their estimator classes (``METHODS``), a model scored on a file or on rows of
a split (labels it never saw refused or flagged the same way everywhere), the metrics and the
confusion matrix, the metrics and bounds tables with one line saying what each number means,
what the fit chose (model size, reg, theta), the permutation importance per CSV column, the predictions CSV,
and the bundled samples. An error of this layer names its fix in the caller's words
(:class:`Terms`): the command line says its options, the app names its controls.

This package may import the estimators, rwtool.inspect, rwtool.persist and rwtool.data. It must
not import rwtool.cli, the gui package or Qt, and it prints nothing: each caller draws its own
output.

Must not import: rwtool.cli, gui, PySide6
"""

from .bounds_table import BOUND_MEANINGS, Bound, bound_meanings, bounds_table
from .evaluation import (SLICE_ROWS, Evaluation, FileResult, RowProgress, UnseenLabelsError,
                         apply_to_file, check_labels, evaluate, fit_summary)
from .importance import (SCORING_WORDS, ImportanceRow, column_groups, importance_on_file,
                         importance_rows, scoring_words)
from .methods import METHODS, Method, method_of
from .metrics import (check_finite_model, class_index, class_report, confusion_matrix,
                      defined_scores, metric_meaning, r2_score, scores)
from .predictions import prediction_columns, write_csv, write_predictions
from .samples import available_samples
from .terms import API_TERMS, Terms, phrase

__all__ = [
    "METHODS", "Method", "method_of",
    "Terms", "API_TERMS", "phrase",
    "class_index", "confusion_matrix", "class_report", "r2_score", "scores", "defined_scores",
    "check_finite_model", "metric_meaning",
    "Evaluation", "FileResult", "UnseenLabelsError", "check_labels", "evaluate",
    "apply_to_file", "fit_summary", "RowProgress", "SLICE_ROWS",
    "Bound", "BOUND_MEANINGS", "bounds_table", "bound_meanings",
    "ImportanceRow", "SCORING_WORDS", "column_groups", "importance_rows", "importance_on_file",
    "scoring_words",
    "prediction_columns", "write_csv", "write_predictions",
    "available_samples",
]
