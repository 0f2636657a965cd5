"""The public estimator classes (DESIGN.md section 2), one module per model family."""

from .random_features import (RKS_BASES, SOLVERS, RKSClassifier, RKSRegressor, RWClassifier,
                              RWRegressor)

__all__ = ["RWClassifier", "RWRegressor", "RKSClassifier", "RKSRegressor", "SOLVERS",
           "RKS_BASES"]
