"""The hooks through which RW/RKS estimators reach past memory: partial_fit and Dask inputs.

Mixed in front of the estimator classes, they route ``partial_fit`` to rwtool.scale._streaming,
solve a stream's pending sums on the first read of a fitted attribute, and send Dask collections
given to ``fit``, ``predict``, ``decision_function`` and ``score`` to rwtool.scale._dask (which
imports Dask only when a Dask collection arrives: rwtool imports without Dask). This module
holds no solver and no formula; everything else goes to the estimator classes unchanged.
"""

from __future__ import annotations

from .._callbacks import reports_to_sklearn
from .._base import check_feature_names, is_dask
from ..scale._dask import fit as _dask_fit
from ..scale._dask import lazy as _dask_lazy
from ..scale._dask import score as _dask_score
from ..scale._streaming import finish as _stream_finish
from ..scale._streaming import partial_fit as _stream_partial_fit
from ..solvers._from_sums import FROM_SUMS_SOLVERS

__all__ = ["ScaleHooks", "ScaleClassifierHooks"]


class _ForSumSolvers:
    """``partial_fit`` exists only while ``solver`` learns from sums of rows.

    Duck-typing callers (scikit-learn's estimator checks, incremental-learning wrappers) test
    ``hasattr(est, "partial_fit")`` before streaming chunks; an SFGD or OSD model must not claim
    a method that can only refuse. Like scikit-learn's ``available_if``.
    """

    def __init__(self, fn):
        self.fn = fn
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn       # its signature, for scikit-learn's metadata requests

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        if str(getattr(obj, "solver", "")).lower() not in FROM_SUMS_SOLVERS:
            raise _no_partial_fit(obj)
        return self.fn.__get__(obj, owner)


def _no_partial_fit(obj) -> AttributeError:
    return AttributeError(f"{type(obj).__name__} with solver={obj.solver!r} has no partial_fit: "
                          f"streaming needs solver in {sorted(FROM_SUMS_SOLVERS)}")


class ScaleHooks:
    @_ForSumSolvers
    def partial_fit(self, X, y, classes=None, *, sample_weight=None, x_scaler=None,
                    y_scaler=None, callback=None):
        """Add a chunk of rows to the least-squares sums; the model is solved when first used.

        ``sample_weight`` weighs the chunk's rows as ``fit`` does (the sums Phi^T W Phi,
        Phi^T W Y); chunks with weights and chunks without may be mixed.

        Solvers "lstsq"/"ridge" (and "lasso"). The first call fixes the feature map, the
        ``classes`` (required for classifiers) and the standardisation: the first chunk's
        statistics unless ``x_scaler``/``y_scaler`` (a Standardizer, a
        rwtool.scale._streaming.Moments or a (mean, std) pair, e.g. from a first pass with
        rwtool.scale._streaming.scan_moments) are given. With the statistics of all rows (or
        ``standardize=False``) the model equals ``fit`` on the concatenated chunks. reg="auto"
        chooses reg from per-fold sums (a row's fold is a hash of its position). See
        docs/SCALE.md.
        """
        check_feature_names(self, X, reset="_stream" not in self.__dict__)
        return _stream_partial_fit(self, X, y, classes, sample_weight=sample_weight,
                                   x_scaler=x_scaler, y_scaler=y_scaler, callback=callback)

    def __getattr__(self, name):
        # Only reached when normal lookup fails: a fitted attribute of a pending stream.
        d = self.__dict__
        if (name.endswith("_") and not name.startswith("__") and "_stream" in d
                and "coef_" not in d and not d.get("_solving")):
            d["_solving"] = True
            try:
                _stream_finish(self)
            finally:
                d.pop("_solving", None)
            if name in d:
                return d[name]
        if name == "partial_fit":   # _ForSumSolvers refused it; Python retries here
            raise _no_partial_fit(self)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @reports_to_sklearn
    def fit(self, X, y, sample_weight=None, callback=None):
        """Sample the features, solve for the coefficients and return self.

        ``sample_weight``: one weight >= 0 per row (see the estimator's ``fit`` below for what
        each solver makes of it). ``callback(event)`` receives progress events
        (rwtool.progress); returning True cancels the fit, which then raises
        :class:`rwtool.FitCancelled` and leaves the estimator unfitted. Dask arrays and
        dataframes (and a Dask ``sample_weight``) are fitted on their cluster
        (rwtool.scale._dask, docs/SCALE.md).
        """
        self.__dict__.pop("_stream", None)   # a fit replaces any partial_fit stream
        if is_dask(X) or is_dask(y):
            check_feature_names(self, X, reset=True)     # a Dask DataFrame's columns
            return _dask_fit(self, X, y, callback=callback, sample_weight=sample_weight)
        return super().fit(X, y, sample_weight=sample_weight, callback=callback)

    def predict(self, X, **kwargs):
        if is_dask(X):
            if kwargs.get("return_std"):
                raise ValueError("return_std is not computed lazily on Dask data: call "
                                 "predict(X.compute(), return_std=True) on chunks of rows")
            return _dask_lazy(self, "predict", X)
        return super().predict(X, **kwargs)

    def score(self, X, y, sample_weight=None):
        if is_dask(X) or is_dask(y):
            return _dask_score(self, X, y, sample_weight)
        return super().score(X, y, sample_weight)


class ScaleClassifierHooks(ScaleHooks):
    def decision_function(self, X):
        if is_dask(X):
            return _dask_lazy(self, "decision_function", X)
        return super().decision_function(X)
