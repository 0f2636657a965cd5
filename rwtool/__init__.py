"""rwtool: fast, exact random-feature learning.

RKHS weightings of functions (Dube & Marchand) with closed-form features, random kitchen sinks,
and the closest methods around them, behind scikit-learn-style estimators::

    import rwtool as rw
    clf = rw.RWClassifier(instantiation="rwrelu", n_features=1000, random_state=0).fit(X, y)
"""

from . import bounds, data, features, losses, persist
from ._base import NotFittedError
from .bkernn import BKerNNClassifier, BKerNNRegressor
from .data import DataError, Dataset, Preprocessing, preview_csv, read_csv, train_test_csv
from .estimators import RKSClassifier, RKSRegressor, RWClassifier, RWRegressor
from .persist import ModelFileError, load, read_model, save
from .progress import FitCancelled, Progress, ProgressEvent
from .solvers.ridge import NumericalWarning

__version__ = "0.1.0"

__all__ = ["features", "data", "persist", "bounds", "losses", "Progress", "RWClassifier", "RWRegressor", "RKSClassifier",
           "RKSRegressor", "BKerNNRegressor", "BKerNNClassifier", "read_csv", "preview_csv", "train_test_csv", "Dataset", "Preprocessing",
           "DataError", "save", "load", "read_model", "ModelFileError", "FitCancelled",
           "ProgressEvent", "NotFittedError", "NumericalWarning", "__version__"]
