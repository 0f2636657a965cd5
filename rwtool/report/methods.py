"""The methods rwtool offers, named once for the command line and the app.

A method is a key (the CLI's ``--method``, the app's run records), a title (the app's method
list), its classifier and regressor classes (None where the family has none), the paper it
follows, the parameter a form shows first, and the solvers the family's estimators take.
This module names classes; it must not build forms, parse parameter values or fit.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..estimators import (BKerNNClassifier, BKerNNRegressor, GreedyMKClassifier,
                          GreedyMKRegressor, RFSGDClassifier, RKSClassifier, RKSRegressor,
                          RWClassifier, RWRegressor)

__all__ = ["Method", "METHODS", "method_of"]


@dataclass(frozen=True)
class Method:
    """One model family: its names, its estimator classes and the paper it follows."""

    key: str
    title: str
    classifier: type | None
    regressor: type | None
    paper: str
    primary: str | None = None       # the parameter a form shows first (instantiation, base...)

    def estimator_class(self, task: str):
        """The class for ``task`` ("binary", "multiclass", "classification", "regression"), or
        None when the family has no estimator for it."""
        return self.regressor if task == "regression" else self.classifier

    @property
    def classes(self) -> tuple:
        return tuple(c for c in (self.classifier, self.regressor) if c is not None)

    @property
    def solvers(self) -> tuple[str, ...]:
        """The ``solver`` choices of the family (its estimators' parameter table; empty for a
        family whose estimators take no solver parameter)."""
        entry = self.classes[0]._parameters.get("solver")
        return () if entry is None else tuple(entry.options())


#: key -> Method, in the order the app lists them (the first is the CLI's default)
METHODS = {m.key: m for m in (
    Method("rw", "RKHS weighting", RWClassifier, RWRegressor, "Dubé & Marchand (seed 003)",
           "instantiation"),
    Method("rks", "Random kitchen sinks", RKSClassifier, RKSRegressor,
           "Rahimi & Recht (seed 003, Section 3.1)", "base"),
    Method("rfsgd", "Averaged SGD on random features", RFSGDClassifier, None,
           "Yashima, Nitanda & Suzuki (seed 002)", "variant"),
    Method("greedy", "Greedy multi-kernel", GreedyMKClassifier, GreedyMKRegressor,
           "Shahrampour & Tarokh (seed 004)", "selector"),
    Method("bkernn", "BKerNN", BKerNNClassifier, BKerNNRegressor, "Follain & Bach (seed 001)",
           "penalty"),
)}


def method_of(estimator) -> Method | None:
    """The method whose classifier or regressor ``estimator`` (an instance or a class) is."""
    cls = estimator if isinstance(estimator, type) else type(estimator)
    return next((m for m in METHODS.values() if any(issubclass(cls, c) for c in m.classes)),
                None)
