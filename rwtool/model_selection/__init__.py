"""Choosing parameters: k-fold cross-validation, the choice of ``reg``, randomized search.

_selection: k-fold splits, ``cross_validate`` of candidate parameter dicts, ``select_reg`` (the
core of the iterative solvers' ``reg="auto"``), ``clone``; _search: ``RandomizedSearchCV`` with
the papers' search spaces; _distributions: what a search draws from (LogUniform, Uniform, Choice),
a leaf.
It fits estimators only through their public ``fit``/``score``, so it knows no estimator module.

Must not import: rwtool.solvers, rwtool.scale, rwtool.estimators, rwtool.persist,
    rwtool.report, rwtool.cli
"""

from ._distributions import Choice, LogUniform, Uniform
from ._search import RandomizedSearchCV, default_space
from ._selection import clone, cross_validate, fold_ids, kfold_indices, select_reg

__all__ = ["RandomizedSearchCV", "LogUniform", "Uniform", "Choice", "default_space",
           "kfold_indices", "fold_ids", "cross_validate", "select_reg", "clone"]
