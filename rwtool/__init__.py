"""rwtool: fast, exact random-feature learning.

RKHS weightings of functions (Dube & Marchand) with closed-form features, random kitchen sinks,
and the closest methods around them, behind scikit-learn-style estimators::

    import rwtool as rw
    clf = rw.RWClassifier(instantiation="rwrelu", n_features=1000, random_state=0).fit(X, y)
"""

import os as _os

# OpenBLAS worker threads busy-wait for about 0.1 s after every BLAS call; on a machine with few
# cores they then halve the speed of the numba feature kernels that run between BLAS calls
# (measured in docs/BENCHMARKS.md). A short timeout costs BLAS nothing measurable. It only takes
# effect when rwtool is imported before numpy (the CLI and the app do); an explicit setting wins.
_os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

from . import bounds, data, features, inspect, losses, persist  # noqa: E402
from ._version import __version__
from .exceptions import (ConvergenceWarning, FitCancelled, InsufficientMemoryError,
                         InvalidParameterError, MixedLabelsError, NotFittedError, NumericalError,
                         NumericalWarning)
from .resources import FitEstimate, estimate_fit
from .data import DataError, Dataset, Preprocessing, preview_csv, read_csv, train_test_csv
from .estimators import (BKerNNClassifier, BKerNNRegressor, GreedyMKClassifier, GreedyMKRegressor,
                         RFSGDClassifier, RKSClassifier, RKSRegressor, RWClassifier, RWRegressor)
from .features import Instantiation, register_base, register_distribution, register_kernel
from .persist import ModelFileError, load, read_model, save, to_onnx
from .progress import Progress, ProgressEvent

__all__ = [
    # estimators
    "RWClassifier", "RWRegressor", "RKSClassifier", "RKSRegressor", "RFSGDClassifier",
    "GreedyMKClassifier", "GreedyMKRegressor", "BKerNNRegressor", "BKerNNClassifier",
    # instantiations with Monte Carlo features
    "Instantiation", "register_distribution", "register_kernel", "register_base",
    # data in, models out
    "read_csv", "preview_csv", "train_test_csv", "Dataset", "Preprocessing", "DataError",
    "save", "load", "read_model", "to_onnx", "ModelFileError",
    # progress, errors, warnings
    "Progress", "ProgressEvent", "FitCancelled", "NotFittedError", "NumericalWarning",
    "ConvergenceWarning", "NumericalError", "InsufficientMemoryError", "InvalidParameterError",
    "MixedLabelsError", "estimate_fit", "FitEstimate",
    # submodules
    "features", "data", "persist", "bounds", "losses",
    "__version__",
]
