"""The public estimator classes (DESIGN.md section 2), one module per model family.

random_features: RKHS weightings and random kitchen sinks (RW*, RKS*); rfsgd: averaged SGD on
random Fourier features (seed 002); greedy_mk: greedy multi-kernel explicit features (seed 004).
BKerNN learns its own features and lives in rwtool.bkernn.
"""

from .greedy_mk import SELECTORS, GreedyMKClassifier, GreedyMKRegressor
from .random_features import (RKS_BASES, SOLVERS, RKSClassifier, RKSRegressor, RWClassifier,
                              RWRegressor)
from .rfsgd import RFSGDClassifier

__all__ = ["RWClassifier", "RWRegressor", "RKSClassifier", "RKSRegressor", "RFSGDClassifier",
           "GreedyMKClassifier", "GreedyMKRegressor", "SOLVERS", "RKS_BASES", "SELECTORS"]
