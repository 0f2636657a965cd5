"""Which estimators take ``sample_weight``, and the error of the fits that do not.

RW*/RKS* (every solver) and RFSGDClassifier take row weights in ``fit`` (and ``partial_fit``).
BKerNN and GreedyMK do not: their ``fit`` takes no ``sample_weight`` parameter, so scikit-learn's
utilities see that they do not (``has_fit_parameter``, metadata routing), and a call that passes
weights anyway gets :func:`refuse_fit_params`'s error instead of a bare TypeError. This module
holds no numerics.
"""

from __future__ import annotations

__all__ = ["WEIGHTED_ESTIMATORS", "refuse_fit_params"]

#: the estimators whose fit takes sample_weight (docs/SOLVERS.md, "Row weights")
WEIGHTED_ESTIMATORS = ("RWClassifier", "RWRegressor", "RKSClassifier", "RKSRegressor",
                       "RFSGDClassifier")


def refuse_fit_params(est, fit_params: dict, why: str) -> None:
    """Raise for keyword arguments ``fit`` does not take: ValueError naming ``why`` and the
    estimators that take them for ``sample_weight``, TypeError for any other name."""
    if "sample_weight" in fit_params:
        raise ValueError(f"{type(est).__name__}.fit does not take sample_weight: {why}. Fit "
                         f"without weights, or use an estimator whose fit takes them: "
                         f"{', '.join(WEIGHTED_ESTIMATORS)} (every solver)")
    if fit_params:
        raise TypeError(f"{type(est).__name__}.fit got unexpected keyword argument(s) "
                        f"{', '.join(sorted(fit_params))}")
