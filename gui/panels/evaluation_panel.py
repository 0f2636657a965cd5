"""The evaluation panel: how a run is judged (holdout or k-fold), whether it is tuned first by
the randomized search, and class weights for imbalanced targets.

It turns the user's choices into a gui.logic.plans plan and, for class weights, per-row weights;
it says when a choice does not apply to the chosen method (no search space, a solver without
sample weights) instead of failing later.

This widget describes a plan; it must not fit.
"""

from __future__ import annotations

import html

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QButtonGroup, QCheckBox, QFormLayout, QGroupBox, QHBoxLayout,
                               QLabel, QRadioButton, QSpinBox, QVBoxLayout, QWidget)

from ..logic.plans import Holdout, KFold, Search, search_space, supports

__all__ = ["EvaluationPanel", "balanced_weights"]



def balanced_weights(y) -> np.ndarray:
    """w_i = n / (k n_c(i)): every class weighs the same in the loss (scikit-learn's
    "balanced")."""
    values, inverse, counts = np.unique(np.asarray(y), return_inverse=True, return_counts=True)
    return (len(inverse) / (len(values) * counts))[inverse]


def weights_supported(est) -> str:
    """"" when ``est.fit`` takes row weights (``sample_weight``), else why not."""
    if supports(est.fit, "sample_weight"):
        return ""
    return (f"{type(est).__name__} does not take class weights: its fit has no "
            f"sample_weight (every rwtool method has one)")


class EvaluationPanel(QWidget):
    changed = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.holdout = QRadioButton("Holdout")
        self.kfold = QRadioButton("k-fold cross-validation")
        self.holdout.setChecked(True)
        group = QButtonGroup(self)
        group.addButton(self.holdout)
        group.addButton(self.kfold)
        self.k_spin = QSpinBox()
        self.k_spin.setRange(2, 20)
        self.k_spin.setValue(5)
        self.k_spin.setToolTip("Number of folds (stratified by class for classification)")
        k_row = QHBoxLayout()
        k_row.addWidget(self.kfold)
        k_row.addWidget(QLabel("k"))
        k_row.addWidget(self.k_spin)
        k_row.addStretch(1)
        eval_box = QGroupBox("Evaluation")
        ev = QVBoxLayout(eval_box)
        ev.addWidget(self.holdout)
        ev.addLayout(k_row)
        note = QLabel("<small>Holdout judges the model on the test fraction of the Data tab. "
                      "k-fold reports each metric's mean and spread over k folds of the "
                      "training rows, then trains the model shown on every training row "
                      "(held-out rows, if any, are judged as well).</small>")
        note.setWordWrap(True)
        ev.addWidget(note)

        self.tune = QCheckBox("Tune first (randomized search)")
        self.tune.setToolTip("rwtool.model_selection.RandomizedSearchCV with the papers' search "
                             "space (seed 003 Table 14) on the training rows")
        self.n_iter_spin = QSpinBox()
        self.n_iter_spin.setRange(1, 500)
        self.n_iter_spin.setValue(20)
        self.n_iter_spin.setToolTip("Candidates drawn from the search space")
        self.cv_spin = QSpinBox()
        self.cv_spin.setRange(2, 20)
        self.cv_spin.setValue(3)
        self.cv_spin.setToolTip("Folds scoring each candidate")
        self.tune_note = QLabel("")
        self.tune_note.setWordWrap(True)
        self.tune_note.setTextFormat(Qt.RichText)   # <small>; the ranges and reasons escaped
        tune_box = QGroupBox("Tuning")
        tf = QFormLayout(tune_box)
        tf.addRow(self.tune)
        tf.addRow("candidates (n_iter)", self.n_iter_spin)
        tf.addRow("folds (cv)", self.cv_spin)
        tf.addRow(self.tune_note)

        self.balance = QCheckBox("Balance the classes")
        self.balance.setToolTip("Row weights n / (k n_c): a weighted squared loss in which "
                                "every class counts the same, whatever its number of rows")
        self.weight_note = QLabel("")
        self.weight_note.setWordWrap(True)
        self.weight_note.setTextFormat(Qt.RichText)
        weight_box = QGroupBox("Class weights")
        wv = QVBoxLayout(weight_box)
        wv.addWidget(self.balance)
        wv.addWidget(self.weight_note)

        lay = QVBoxLayout(self)
        lay.addWidget(eval_box)
        lay.addWidget(tune_box)
        lay.addWidget(weight_box)
        lay.addStretch(1)
        for w in (self.holdout, self.kfold, self.tune, self.balance):
            w.toggled.connect(self._changed)
        for w in (self.k_spin, self.n_iter_spin, self.cv_spin):
            w.valueChanged.connect(self._changed)
        self.update_for(None, "binary")

    def _changed(self, *args) -> None:
        self.k_spin.setEnabled(self.kfold.isChecked())
        on = self.tune.isChecked() and self.tune.isEnabled()
        self.n_iter_spin.setEnabled(on)
        self.cv_spin.setEnabled(on)
        self.changed.emit()

    def update_for(self, est, task: str) -> None:
        """Say which choices apply to ``est`` (a configured estimator, or None) and ``task``."""
        why_tune = "Choose a method first." if est is None else ""
        if est is not None:
            try:
                space = search_space(est)
                why_tune = ""
                self.tune_note.setText("<small>searches " + html.escape(", ".join(
                    f"{k} ~ {v!r}" for k, v in sorted(space.items()))) + "; the best "
                    "parameters are put in the Method form.</small>")
            except ValueError as exc:
                why_tune = str(exc)
        if why_tune:
            self.tune_note.setText(f"<small>{html.escape(why_tune)}</small>")
        self.tune.setEnabled(not why_tune)
        classification = task != "regression"
        why_w = "Class weights apply to classification." if not classification else (
            "Choose a method first." if est is None else weights_supported(est))
        self.balance.setEnabled(not why_w)
        self.weight_note.setText(f"<small>{html.escape(why_w)}</small>" if why_w else
                                 "<small>Weighted least squares: the loss of each row is "
                                 "multiplied by its class weight (exact; see docs/GUI.md)."
                                 "</small>")
        self._changed()

    # -- what the window reads --------------------------------------------------------------
    def plan(self, random_state: int | None = 0):
        inner = KFold(int(self.k_spin.value()), random_state) if self.kfold.isChecked() \
            else Holdout()
        if self.tune.isChecked() and self.tune.isEnabled():
            return Search(int(self.n_iter_spin.value()), int(self.cv_spin.value()),
                          random_state, inner)
        return inner

    def weights(self, y) -> np.ndarray | None:
        if self.balance.isChecked() and self.balance.isEnabled():
            return balanced_weights(y)
        return None

    def set_kfold(self, k: int | None) -> None:
        (self.kfold if k else self.holdout).setChecked(True)
        if k:
            self.k_spin.setValue(int(k))

    def set_tuning(self, on: bool, n_iter: int = 20, cv: int = 3) -> None:
        self.tune.setChecked(bool(on))
        self.n_iter_spin.setValue(int(n_iter))
        self.cv_spin.setValue(int(cv))
