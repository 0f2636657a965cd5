"""rwtool: fast, exact random-feature learning.

RKHS weightings of functions (Dube & Marchand) with closed-form features, random kitchen sinks,
and the closest methods around them, behind scikit-learn-style estimators::

    import rwtool as rw
    clf = rw.RWClassifier(instantiation="rwrelu", n_features=1000, random_state=0).fit(X, y)
"""

from . import features
from ._base import NotFittedError
from .estimators import RKSClassifier, RKSRegressor, RWClassifier, RWRegressor
from .progress import FitCancelled, ProgressEvent
from .solvers.ridge import NumericalWarning

__version__ = "0.1.0"

__all__ = ["features", "RWClassifier", "RWRegressor", "RKSClassifier", "RKSRegressor",
           "FitCancelled", "ProgressEvent", "NotFittedError", "NumericalWarning", "__version__"]
