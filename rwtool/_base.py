"""Estimator plumbing shared by every rwtool model: parameters, input checks, targets, scaling.

scikit-learn conventions without a runtime dependency on scikit-learn: the constructor stores
parameters only, ``get_params``/``set_params`` read the constructor signature, fitted attributes
end in ``_``, and ``__sklearn_tags__`` (called only by scikit-learn itself) describes the
estimator to scikit-learn's utilities. This module must not know any particular method.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import numbers
import sys
import warnings
from typing import Any

import numpy as np

from ._params import Interval, Param
from .exceptions import FitCancelled, MixedLabelsError, NotFittedError, check_finite_result

__all__ = [
    "BaseEstimator", "ClassifierMixin", "RegressorMixin", "NotFittedError",
    "check_array", "check_X_y", "check_random_state", "check_is_fitted",
    "check_scalar", "check_choice", "check_range", "Standardizer", "encode_classes", "is_dask",
    "check_not_constant", "check_labels", "class_labels", "label_index", "fit_classes",
    "checked_output", "feature_names_of", "check_feature_names", "check_sample_weight",
]


def _not_fitted(message: str) -> NotFittedError:
    """A NotFittedError that is also scikit-learn's when scikit-learn is already loaded.

    rwtool does not import scikit-learn, but code that mixes the two (pipelines, search
    utilities, estimator checks) catches ``sklearn.exceptions.NotFittedError``.
    """
    sk = sys.modules.get("sklearn.exceptions")
    if sk is None:
        return NotFittedError(message)
    both = type("NotFittedError", (NotFittedError, sk.NotFittedError), {})
    return both(message)


def _data_conversion_warning():
    """UserWarning, or scikit-learn's DataConversionWarning when scikit-learn is loaded."""
    sk = sys.modules.get("sklearn.exceptions")
    return UserWarning if sk is None else sk.DataConversionWarning


# ----------------------------------------------------------------------------- parameters

class _Requests(dict):
    """An estimator's metadata requests, {method: {param: request}}: scikit-learn's clone
    copies ``_metadata_request`` with ``clone``, which deep-copies what says how."""

    def __sklearn_clone__(self) -> "_Requests":
        return _Requests({k: dict(v) for k, v in self.items()})


class BaseEstimator:
    """Parameter handling in the scikit-learn style (``get_params``/``set_params``/``repr``)."""

    _estimator_type: str | None = None

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return sorted(p.name for p in sig.parameters.values()
                      if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL))

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        out = {}
        for name in self._param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{name}__{k}", v) for k, v in value.get_params().items())
            out[name] = value
        return out

    def set_params(self, **params: Any) -> "BaseEstimator":
        valid = set(self._param_names())
        for key, value in params.items():
            name, _, sub = key.partition("__")
            if name not in valid:
                raise ValueError(f"invalid parameter {name!r} for {type(self).__name__}; "
                                 f"valid parameters are: {', '.join(sorted(valid))}")
            if sub:
                getattr(self, name).set_params(**{sub: value})
            else:
                setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        defaults = {p.name: p.default for p in
                    inspect.signature(type(self).__init__).parameters.values()}
        changed = []
        for k in self._param_names():
            v = getattr(self, k, None)
            d = defaults.get(k, inspect.Parameter.empty)
            try:
                same = (v is d) or (type(v) is type(d) and bool(v == d))
            except (TypeError, ValueError):
                same = False
            if not same:
                changed.append(f"{k}={v!r}")
        return f"{type(self).__name__}({', '.join(changed)})"

    # -- scikit-learn's metadata routing (GridSearchCV, Pipeline, cross_validate pass
    # sample_weight on to the methods that request it). Requests are kept per method as
    # {param: True/False/None/alias} in ``_metadata_request``, the attribute scikit-learn's
    # clone copies; get_metadata_routing builds scikit-learn's own object from it.
    @classmethod
    def _metadata_params(cls) -> dict:
        """method -> the metadata it takes: ``sample_weight`` where its signature has it."""
        out = {}
        for method in ("fit", "partial_fit", "score"):
            fn = getattr(cls, method, None)
            fn = getattr(fn, "__wrapped__", fn)     # a descriptor that wraps the method
            if fn is not None and "sample_weight" in inspect.signature(fn).parameters:
                out[method] = ("sample_weight",)
        return out

    def _set_request(self, method: str, **requests) -> "BaseEstimator":
        known = self._metadata_params().get(method, ())
        for name, value in requests.items():
            if name not in known:
                raise TypeError(f"{type(self).__name__}.{method} takes no metadata {name!r}; "
                                f"it takes {', '.join(known) or 'none'}")
            if not (value is None or isinstance(value, (bool, str))):
                raise ValueError(f"the request for {name!r} must be True, False, None or an "
                                 f"alias (a string), got {value!r}")
        own = _Requests(getattr(self, "_metadata_request", None) or {})
        own[method] = dict(own.get(method, {}), **requests)
        self._metadata_request = own
        return self

    def set_fit_request(self, *, sample_weight=None) -> "BaseEstimator":
        """Whether ``fit`` asks a meta-estimator for ``sample_weight`` under scikit-learn's
        metadata routing (``sklearn.set_config(enable_metadata_routing=True)``): True, False,
        None (error if it is passed) or an alias. Only the estimators whose ``fit`` takes
        ``sample_weight`` declare it."""
        return self._set_request("fit", sample_weight=sample_weight)

    def set_partial_fit_request(self, *, sample_weight=None) -> "BaseEstimator":
        """As :meth:`set_fit_request`, for ``partial_fit``."""
        return self._set_request("partial_fit", sample_weight=sample_weight)

    def set_score_request(self, *, sample_weight=None) -> "BaseEstimator":
        """As :meth:`set_fit_request`, for ``score``."""
        return self._set_request("score", sample_weight=sample_weight)

    def get_metadata_routing(self):  # pragma: no cover - called by scikit-learn only
        # scikit-learn calls this, so it is loaded; rwtool itself never imports it
        from sklearn.utils.metadata_routing import MetadataRequest
        request = MetadataRequest(owner=self)
        own = getattr(self, "_metadata_request", None) or {}
        for method, params in self._metadata_params().items():
            for name in params:
                getattr(request, method).add_request(param=name,
                                                     alias=own.get(method, {}).get(name))
        return request

    def __sklearn_tags__(self):  # pragma: no cover - exercised through scikit-learn's checks
        # scikit-learn calls this, so it is loaded; rwtool itself never imports it
        from sklearn.utils import (ClassifierTags, InputTags, RegressorTags, Tags, TargetTags,
                                   TransformerTags)
        kind = self._estimator_type
        tags = Tags(estimator_type=kind,
                    target_tags=TargetTags(required=kind in ("classifier", "regressor"),
                                           multi_output=kind == "regressor"),
                    transformer_tags=TransformerTags() if kind is None else None,
                    classifier_tags=ClassifierTags() if kind == "classifier" else None,
                    regressor_tags=RegressorTags() if kind == "regressor" else None,
                    input_tags=InputTags())
        return tags


class ClassifierMixin:
    """Accuracy score and the one-vs-rest decision rule on ``_raw_decision(X)`` (n x k).

    k = 1 for two classes (f > 0 means classes_[1]); otherwise the class with the largest f.
    """

    _estimator_type = "classifier"

    def decision_function(self, X) -> np.ndarray:
        """f(x) per class: shape (n,) for two classes (positive: classes_[1]), else (n, k)."""
        D = self._finite_decision(X)
        return D[:, 0] if D.shape[1] == 1 else D

    def predict(self, X) -> np.ndarray:
        """The class of each row: sign of f for two classes, argmax of f otherwise."""
        return self._labels(self._finite_decision(X))

    def _finite_decision(self, X, *args) -> np.ndarray:
        # NaN > 0 is False: a non-finite f would silently predict one class for every row
        return checked_output(self, self._raw_decision, X, *args, what="the decision values")

    def _labels(self, D: np.ndarray) -> np.ndarray:
        if D.shape[1] == 1:
            return self.classes_[(D[:, 0] > 0).astype(int)]
        return self.classes_[np.argmax(D, axis=1)]

    def score(self, X, y, sample_weight=None) -> float:
        """Mean accuracy of ``predict(X)`` against ``y``."""
        y = np.asarray(y)
        pred = self.predict(X)
        ok = (pred == y).astype(float)
        if sample_weight is None:
            return float(ok.mean())
        return float(np.average(ok, weights=np.asarray(sample_weight, dtype=float)))


class RegressorMixin:
    """``predict`` checked for non-finite values around the estimator's ``_raw_prediction``."""

    _estimator_type = "regressor"

    def predict(self, X) -> np.ndarray:
        """The predicted target of each row (one column per output when y had several)."""
        return self._finite_prediction(X)

    def _finite_prediction(self, X, *args) -> np.ndarray:
        return checked_output(self, self._raw_prediction, X, *args, what="the predictions")

    def score(self, X, y, sample_weight=None) -> float:
        """Coefficient of determination R^2 of ``predict(X)`` against ``y``."""
        y = np.asarray(y, dtype=float)
        pred = np.asarray(self.predict(X), dtype=float)
        peak = np.array([max(np.max(np.abs(y), initial=0.0), np.max(np.abs(pred), initial=0.0))])
        if not _in_safe_range(peak):  # R^2 is scale-free: measure it where squares are finite
            y, pred = y / peak[0], pred / peak[0]
        w = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, float)
        if y.ndim == 2:
            w = w[:, None]
        ybar = np.average(y, axis=0, weights=w.ravel() if y.ndim == 1 else w[:, 0])
        ss_res = np.sum(w * (y - pred) ** 2, axis=0)
        ss_tot = np.sum(w * (y - ybar) ** 2, axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            r2 = np.where(ss_tot > 0, 1.0 - ss_res / np.where(ss_tot > 0, ss_tot, 1.0),
                          np.where(ss_res > 0, 0.0, 1.0))
        return float(np.mean(r2))


# ----------------------------------------------------------------------------- feature names

def feature_names_of(X):
    """The column names of a DataFrame ``X`` (pandas, Dask, or anything with ``columns``) as
    an object array when every name is a string, None otherwise (an array, integer column
    names): scikit-learn's rule for ``feature_names_in_``. Names of mixed kinds raise
    TypeError naming the fix."""
    cols = getattr(X, "columns", None)
    if cols is None or isinstance(X, np.ndarray):
        return None
    names = np.asarray(list(cols), dtype=object)
    kinds = sorted({type(n).__name__ for n in names})
    strings = [isinstance(n, str) for n in names]
    if len(names) and all(strings):
        return names
    if any(strings):
        raise TypeError(f"Feature names are only supported if all input features have string "
                        f"names, but your input has {kinds} as feature name / column name "
                        f"types; convert them all to strings (X.columns = X.columns.astype(str))"
                        f" or none of them")
    return None


def _listed(names) -> str:
    shown = [f"- {n}\n" for n in list(names)[:5]]
    return "".join(shown) + ("- ...\n" if len(names) > 5 else "")


def check_feature_names(est, X, *, reset: bool) -> None:
    """Record (``reset``, at fit) or check (at predict) ``est.feature_names_in_`` against the
    column names of ``X``, by scikit-learn's conventions: the same names in the same order, or
    ValueError naming the unseen and the missing ones; a DataFrame for a model fitted on an
    array, or the reverse, warns (UserWarning) with scikit-learn's words."""
    names = feature_names_of(X)
    if reset:
        if names is not None:
            est.feature_names_in_ = names
        else:
            est.__dict__.pop("feature_names_in_", None)
        return
    fitted = getattr(est, "feature_names_in_", None)
    cls = type(est).__name__
    if fitted is None and names is None:
        return
    if fitted is None:
        warnings.warn(f"X has feature names, but {cls} was fitted without feature names",
                      UserWarning, stacklevel=3)
        return
    if names is None:
        warnings.warn(f"X does not have valid feature names, but {cls} was fitted with "
                      f"feature names", UserWarning, stacklevel=3)
        return
    fitted, names = [str(n) for n in fitted], [str(n) for n in names]
    if fitted == names:
        return
    message = "The feature names should match those that were passed during fit.\n"
    unseen, missing = sorted(set(names) - set(fitted)), sorted(set(fitted) - set(names))
    if unseen:
        message += "Feature names unseen at fit time:\n" + _listed(unseen)
    if missing:
        message += "Feature names seen at fit time, yet now missing:\n" + _listed(missing)
    if not unseen and not missing:
        message += "Feature names must be in the same order as they were in fit.\n"
    raise ValueError(message + "Pass the training data's columns, in its order.")


def checked_output(est, compute, X, *args, what: str) -> np.ndarray:
    """``compute(X, *args)`` -- the decision values or predictions of a fitted ``est`` -- or
    :class:`rwtool.NumericalError` when any of them is not finite: the one check behind every
    estimator's ``predict`` and ``decision_function`` (which also checks X's column names
    against the fitted ones, :func:`check_feature_names`). Inputs far outside the training range
    overflow inside the model; numpy's RuntimeWarnings about it are silenced, since the error
    says it."""
    check_feature_names(est, X, reset=False)
    with np.errstate(all="ignore"):
        out = compute(X, *args)
    check_finite_result(out, solver=type(est).__name__, what=what,
                        fix="these inputs are far outside the training data's range (the model "
                            "overflows float64 on them): check their scale against the "
                            "training data's; refit if the model itself is not finite")
    return out


# ----------------------------------------------------------------------------- input checks

def is_dask(obj) -> bool:
    """Whether ``obj`` is a Dask collection (array, dataframe, series), without importing Dask."""
    return type(obj).__module__.partition(".")[0] in ("dask", "dask_expr")


@contextlib.contextmanager
def unfitted_on_failure(est):
    """Run a fit body so that any failure but a cancel leaves ``est`` unfitted (no ``coef_``).

    A cancel passes through untouched: the estimator keeps what the cancel handler stored.
    """
    try:
        yield
    except FitCancelled:
        raise
    except Exception:
        if hasattr(est, "coef_"):
            del est.coef_
        raise


def check_sample_weight(sample_weight, n_samples: int) -> np.ndarray | None:
    """``sample_weight`` as a new float64 array of one finite weight >= 0 per row, not all zero
    (None stays None: every row counts once). ValueError names what is wrong."""
    if sample_weight is None:
        return None
    try:
        w = np.array(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"sample_weight must be numbers, one per row; got "
                         f"{type(sample_weight).__name__}") from None
    if w.ndim != 1 or len(w) != n_samples:
        raise ValueError(f"sample_weight must be 1-D with one weight per row of X "
                         f"({n_samples}), got shape {w.shape}")
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError("sample_weight must be finite and >= 0 (a row of weight 0 is left "
                         "out)")
    if not w.sum() > 0:
        raise ValueError("sample_weight has no non-zero weight: at least one row must have a "
                         "weight above zero")
    return w


def check_array(X, name: str = "X", ensure_2d: bool = True, min_samples: int = 1,
                n_features: int | None = None, dtype=np.float64,
                estimator: str | None = None) -> np.ndarray:
    """Return ``X`` as a finite, C-contiguous float array, or raise a ValueError that names the fix."""
    if hasattr(X, "toarray") or type(X).__module__.startswith("scipy.sparse"):
        raise TypeError(f"{name} is a sparse matrix; rwtool needs dense input: pass {name}.toarray()")
    try:
        arr = np.asarray(X)
    except Exception as exc:  # ragged lists and the like
        raise ValueError(f"{name} could not be read as an array ({exc}); pass a rectangular "
                         f"numeric array") from None
    if arr.dtype == object or arr.dtype.kind in "USV":
        if arr.dtype == object and any(v is None for v in arr.ravel().tolist()):
            raise ValueError(f"{name} contains missing values (None); remove or impute them "
                             f"first")
        try:
            arr = arr.astype(dtype)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{name} holds non-numeric values ({exc}); encode text columns "
                            f"first (rwtool.read_csv one-hot encodes them)") from None
    if arr.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {name} is complex; rwtool needs real "
                         f"numbers (pass {name}.real if the imaginary part is zero)")
    if ensure_2d:
        if arr.ndim == 0:
            raise ValueError(f"expected a 2-D array for {name}, got a scalar; pass an array "
                             f"of shape (n_samples, n_features)")
        if arr.ndim == 1:
            raise ValueError(f"expected a 2-D array for {name}, got a 1-D array of length "
                             f"{arr.shape[0]}. Reshape your data: {name}.reshape(-1, 1) for a "
                             f"single feature or {name}.reshape(1, -1) for a single sample")
        if arr.ndim > 2:
            raise ValueError(f"expected a 2-D array for {name}, got {arr.ndim} dimensions "
                             f"{arr.shape}; flatten each sample to one row")
        if arr.shape[1] == 0:
            raise ValueError(f"{name} has 0 feature(s) (shape={arr.shape}) while a minimum of 1 "
                             f"is required; pass at least one column")
    if arr.shape[0] < min_samples:
        raise ValueError(f"{name} has {arr.shape[0]} sample(s) (shape={arr.shape}), but a "
                         f"minimum of {min_samples} is required")
    arr = np.ascontiguousarray(arr, dtype=dtype)
    if not np.isfinite(arr).all():
        bad = np.argwhere(~np.isfinite(arr))[0]
        what = "NaN" if np.isnan(arr[tuple(bad)]) else "infinity"
        where = f"row {bad[0]}, column {bad[1]}" if arr.ndim == 2 else f"position {bad[0]}"
        raise ValueError(f"{name} contains {what} (first at {where}); remove or impute missing "
                         f"and infinite values before fitting")
    if n_features is not None and ensure_2d and arr.shape[1] != n_features:
        raise ValueError(f"{name} has {arr.shape[1]} features, but {estimator or 'the model'} "
                         f"is expecting {n_features} features as input; pass the same columns "
                         f"as at fit time")
    return arr


def check_not_constant(X) -> None:
    """Refuse an X whose rows are all the same: any model fitted on it predicts one value."""
    if X.shape[0] and not np.any(np.ptp(X, axis=0) > 0):
        raise ValueError(f"X has {X.shape[0]} row(s) and every column is constant: there is "
                         f"nothing to learn from (a model would predict one value everywhere). "
                         f"Check that the feature columns were read correctly")


def check_X_y(X, y, y_numeric: bool = False, min_samples: int = 1):
    """Validate a design matrix and its targets together (same number of rows)."""
    X = check_array(X, "X", min_samples=min_samples)
    if y is None:
        raise ValueError("this estimator requires y to be passed, but the target y is None: "
                         "pass the target values (one per row of X)")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1 and not y_numeric:
        warnings.warn("A column-vector y was passed when a 1d array was expected (shape "
                      "(n, 1)); it was flattened. Pass y.ravel() to silence this warning",
                      _data_conversion_warning(), stacklevel=3)
        y = y.ravel()
    if y.ndim not in (1, 2) or (not y_numeric and y.ndim != 1):
        raise ValueError(f"y must be 1-D (one target per row), got shape {y.shape}")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]}; pass one target per row")
    if y_numeric:
        y = check_array(y, "y", ensure_2d=False)
    else:
        y = check_labels(y)
    return X, y


def check_random_state(random_state) -> np.random.Generator:
    """A numpy Generator from None, an int, a Generator or a legacy RandomState."""
    if random_state is None or isinstance(random_state, (numbers.Integral, np.integer)):
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    raise ValueError(f"random_state must be None, an int or a numpy Generator, got "
                     f"{random_state!r}")


def check_is_fitted(est, attribute: str = "coef_") -> None:
    if not hasattr(est, attribute):
        raise _not_fitted(f"this {type(est).__name__} instance is not fitted yet; call "
                             f"fit(X, y) before using it")


def check_scalar(value, name: str, kind=numbers.Real, low=None, high=None,
                 low_inclusive: bool = True, high_inclusive: bool = True, allow_none=False):
    """Validate a numeric argument and return it; the error names it and its range (a
    one-off :class:`rwtool._params.Param`, so arguments and parameters read the same)."""
    interval = None if low is None and high is None else Interval(
        -math.inf if low is None else low, math.inf if high is None else high,
        low is None or not low_inclusive, high is None or not high_inclusive)
    return Param(name, "int" if kind is numbers.Integral else "float", None, "",
                 interval=interval, none="" if allow_none else None).validate(value)


def check_choice(value, name: str, choices) -> str:
    """``value`` if it is one of ``choices`` (case-insensitive), in their spelling."""
    return Param(name, "choice", None, "", choices=tuple(choices)).validate(value)


# ----------------------------------------------------------------------------- scaling, targets

#: magnitudes beyond which squares and sums of float64 values overflow or underflow
SAFE_RANGE = (1e-150, 1e150)


def _in_safe_range(peak: np.ndarray) -> bool:
    return bool(np.all((peak == 0) | ((peak >= SAFE_RANGE[0]) & (peak <= SAFE_RANGE[1]))))


class Standardizer:
    """Column standardisation with training statistics (the papers' protocol, 003 App. C).

    A column whose standard deviation is at most 1e-12 of its largest |value| (constant up to
    rounding) keeps scale 1 and maps to 0 instead of being blown up. The statistics are computed
    in units of each column's largest |value|, and beyond ``SAFE_RANGE`` (|x| near 1e200 or
    1e-200, targets near 1e308) the transforms too, so nothing overflows or underflows.
    """

    def __init__(self, mean: np.ndarray, scale: np.ndarray):
        self.mean = np.asarray(mean, dtype=np.float64)
        self.scale = np.asarray(scale, dtype=np.float64)
        size = np.maximum(np.abs(self.mean), np.abs(self.scale))
        self._unit = None if _in_safe_range(size) else np.where(size > 0, size, 1.0)

    @classmethod
    def fit(cls, X: np.ndarray, weights: np.ndarray | None = None) -> "Standardizer":
        """The statistics of X's rows, weighted by ``weights`` when given (a row of weight 2
        counts as two copies of it, one of weight 0 not at all)."""
        # Statistics of X / max|X| scaled back: squares of entries near 1e200 (or sums of
        # entries near 1e308) would overflow, those of 1e-200 underflow to 0.
        if weights is not None:
            X = X[weights > 0]
            weights = weights[weights > 0]
        # max |x| as max(max x, -min x), and the squares in place: no temporary of X's size
        # beside Z and Z - mean (each a fresh allocation: 80 MB on mnist's 784 columns)
        peak = (np.maximum(X.max(axis=0), -X.min(axis=0)) if X.shape[0]
                else np.ones(X.shape[1:]))
        peak = np.where(np.isfinite(peak) & (peak > 0), peak, 1.0)
        Z = X / peak
        mean = np.average(Z, axis=0, weights=weights)
        Z -= mean
        np.multiply(Z, Z, out=Z)
        std = np.sqrt(np.average(Z, axis=0, weights=weights))
        return cls.from_moments(mean * peak, std * peak, peak)

    @classmethod
    def from_moments(cls, mean: np.ndarray, scale: np.ndarray,
                     magnitude: np.ndarray | None = None) -> "Standardizer":
        """From column means and (population) standard deviations, however they were computed
        (one array, or merged over the chunks of a stream or the partitions of a cluster).
        ``magnitude`` (max |x| per column), when known, sets the constant-column threshold."""
        mean = np.asarray(mean, dtype=np.float64)
        scale = np.asarray(scale, dtype=np.float64)
        # Relative threshold: a column constant up to rounding must not be blown up to O(1);
        # relative to the column's own magnitude when known, so data on a 1e-200 scale still
        # standardise.
        ref = np.maximum(1.0, np.abs(mean)) if magnitude is None else magnitude
        tiny = scale <= 1e-12 * ref
        scale = np.where(tiny, 1.0, scale)
        return cls(mean, scale)

    def transform(self, X: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """(X - mean) / scale, into ``out`` when given (X's shape: a view of a wider array,
        say, whose other columns the caller fills), else a new array."""
        if self._unit is None:
            out = np.subtract(X, self.mean, out=out)
            return np.divide(out, self.scale, out=out)
        u = self._unit
        out = np.divide(X, u, out=out)
        out -= self.mean / u
        out /= self.scale / u
        return out

    def inverse_transform(self, Z: np.ndarray) -> np.ndarray:
        if self._unit is None:
            return Z * self.scale + self.mean
        u = self._unit
        return (Z * (self.scale / u) + self.mean / u) * u


def check_range(arr: np.ndarray, name: str, fix: str) -> None:
    """Raise ValueError when ``arr`` holds magnitudes beyond ``SAFE_RANGE`` (fitting it unscaled
    would overflow to inf or underflow to a constant model)."""
    if arr.size == 0:
        return
    peak = float(np.max(np.abs(arr)))
    if not _in_safe_range(np.array([peak])):
        side = "large" if peak > 1.0 else "small"
        raise ValueError(f"{name} holds values as {side} as {peak:.3g}, outside "
                         f"[{SAFE_RANGE[0]:g}, {SAFE_RANGE[1]:g}] where float64 features "
                         f"overflow or vanish; {fix}")


def _label_kind(t: type) -> str:
    if issubclass(t, (numbers.Real, np.bool_)):
        return "number"
    if issubclass(t, str):
        return "text"
    return t.__name__


def check_labels(y, name: str = "y") -> np.ndarray:
    """``y`` as a 1-D array of class labels numpy can sort: every label a number, or every
    label text. Missing labels (None, NaN) raise ValueError; labels of mixed kinds
    (``[1, "a", 2.0]`` in an object array) :class:`MixedLabelsError`, naming the kinds and the
    fix. Every classifier's labels -- fit, partial_fit, classes=, folds -- pass through here
    (numpy's own ``'<' not supported between 'int' and 'str'`` says neither)."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one label per row), got shape {y.shape}")
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        raise ValueError(f"{name} contains NaN or infinity; remove those rows before fitting")
    if y.dtype != object:
        return y
    values = y.tolist()
    by_kind: dict[str, tuple] = {}
    for v in values:
        if v is None or (isinstance(v, float) and v != v):
            raise ValueError(f"{name} contains missing labels (None or NaN, first at position "
                             f"{_first_missing(values)}); remove those rows, or give them a "
                             f"label of their own")
        types, count, first = by_kind.get(_label_kind(type(v)), (set(), 0, v))
        types.add(type(v).__name__)
        by_kind[_label_kind(type(v))] = (types, count + 1, first)
    if len(by_kind) > 1 or not set(by_kind) <= {"number", "text"}:
        shown = "; ".join(f"{count} {kind} label(s) of type {'/'.join(sorted(types))}, e.g. "
                          f"{first!r}" for kind, (types, count, first) in by_kind.items())
        raise MixedLabelsError(
            f"{name} mixes labels of different kinds ({shown}), which cannot be ordered or "
            f"compared as classes. Fix: give every label one type, e.g. "
            f"{name}=np.asarray({name}).astype(str) (1 and 1.0 then become different labels "
            f"'1' and '1.0'), or map the text labels to numbers")
    return y


def _first_missing(values) -> int:
    return next(i for i, v in enumerate(values) if v is None or (isinstance(v, float) and v != v))


def class_labels(y, name: str = "y"):
    """``(classes, index)``: the sorted distinct labels of ``y`` (checked by
    :func:`check_labels`) and each row's position in them."""
    return np.unique(check_labels(y, name), return_inverse=True)


def label_index(classes: np.ndarray, y, name: str = "y") -> np.ndarray:
    """Each label's position in the sorted ``classes``; ValueError naming the labels that are
    not among them (labels of another kind than the classes' included)."""
    y = check_labels(y, name)
    if len(y) and _kind_of(y) != _kind_of(classes):
        raise ValueError(f"{name} holds {_kind_of(y)} labels such as {y[:1].tolist()[0]!r} but "
                         f"the model's classes are {_kind_of(classes)}: "
                         f"{classes[:10].tolist()}; pass labels of the classes' kind")
    idx = np.minimum(np.searchsorted(classes, y), len(classes) - 1)
    unknown = classes[idx] != y
    if np.any(unknown):
        raise ValueError(f"{name} has label(s) {list(dict.fromkeys(y[unknown].tolist()))[:5]} "
                         f"not in the classes {classes[:10].tolist()}; pass every class when "
                         f"the model starts (classes= on the first partial_fit call)")
    return idx


def _kind_of(labels: np.ndarray) -> str:
    """"text" or "number" for labels checked by :func:`check_labels` (one kind throughout)."""
    if labels.dtype == object:
        return _label_kind(type(labels.flat[0])) if labels.size else "number"
    return "text" if labels.dtype.kind in "US" else "number"


def fit_classes(y: np.ndarray, name: str = "y", on_classes=None):
    """``(classes, index)`` of a classifier's training labels: checked (:func:`check_labels`),
    at least two, not a continuous target. ``on_classes(n_classes)`` runs once the classes
    are known, before anything of their size is built (a fit's memory check: with 10,000
    classes the one-vs-rest targets alone take gigabytes)."""
    y = check_labels(y, name)
    if y.dtype.kind == "f" and np.any(y != np.round(y)) and len(np.unique(y)) > 0.5 * len(y):
        raise ValueError(f"{name} looks continuous ({len(np.unique(y))} distinct non-integer "
                         f"values); use a regressor for regression targets")
    classes, idx = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        raise ValueError(f"{name} has 1 class only ({classes[0]!r}); a classifier needs at "
                         f"least two classes in the training data")
    if on_classes is not None:
        on_classes(len(classes))
    return classes, idx


def encode_classes(y: np.ndarray, name: str = "y", on_classes=None):
    """Class labels (:func:`fit_classes`) and a one-vs-rest +/-1 target matrix (one column for
    binary problems)."""
    classes, idx = fit_classes(y, name, on_classes)
    if len(classes) == 2:
        Y = np.where(idx == 1, 1.0, -1.0)[:, None]
    else:
        Y = -np.ones((len(y), len(classes)))
        Y[np.arange(len(y)), idx] = 1.0
    return classes, np.ascontiguousarray(Y)
