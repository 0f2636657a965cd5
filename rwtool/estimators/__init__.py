"""The public estimator classes (DESIGN.md section 2), one private module per model family.

_random_features: RKHS weightings and random kitchen sinks (RW*, RKS*); _rfsgd: averaged SGD on
random Fourier features (seed 002); _greedy_mk: greedy multi-kernel explicit features (seed 004);
_bkernn: the Brownian-kernel neural network, which learns its own features (seed 001);
_scale_hooks: how RW/RKS reach rwtool.scale (partial_fit, Dask inputs); _weights: which
estimators take sample_weight and the error of those that do not. An estimator checks its
input, draws its feature map (rwtool.features), calls a solver (rwtool.solvers) and keeps the
fitted state; it holds no numerical kernel of its own and never reads files.

Must not import: rwtool.persist, rwtool.report, rwtool.cli
"""

from ._bkernn import PENALTIES, BKerNNClassifier, BKerNNRegressor, feature_learning_score
from ._greedy_mk import SELECTORS, GreedyMKClassifier, GreedyMKRegressor
from ._random_features import (RKS_BASES, SOLVERS, RKSClassifier, RKSRegressor, RWClassifier,
                               RWRegressor)
from ._rfsgd import RFSGDClassifier

__all__ = ["RWClassifier", "RWRegressor", "RKSClassifier", "RKSRegressor", "RFSGDClassifier",
           "GreedyMKClassifier", "GreedyMKRegressor", "BKerNNRegressor", "BKerNNClassifier",
           "SOLVERS", "RKS_BASES", "SELECTORS", "PENALTIES", "feature_learning_score"]
