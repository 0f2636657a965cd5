"""What every random feature map shares: parameters, sampling on ``fit``, dense ``transform``.

A feature map turns a row x into (psi_1(x), ..., psi_T(x)). Subclasses sample their parameters
w_1..w_T from p in ``_sample`` (serially, from a seeded Generator, so the draw does not depend on
the thread count) and fill a block of the feature matrix in ``_features_into``. The heavy
product X W^T goes to BLAS; the element-wise closed forms are numba kernels in each family's
module. This module holds no formula of its own.

The features never depend on the rows ``fit`` sees (only on their number of columns), but some
fitted constants do: sup ||x|| and what is built on it (theta, kappa of the RKHS weightings).
Each is a maximum over rows, so a map reports the maxima of a block of rows
(:meth:`FeatureMap.row_maxima`, a :class:`RowMaxima`), maxima merge like sums, and
:meth:`FeatureMap.set_constants` sets the constants from the maxima over all rows: a stream or
a cluster, which sees the rows a chunk at a time, ends with the constants of ``fit``.
"""

from __future__ import annotations

import math
from abc import abstractmethod

import numpy as np

from .._base import (BaseEstimator, check_array, check_choice, check_feature_names,
                     check_is_fitted, check_random_state)
from .._params import Param, params_table, validate_params
from ..threads import read_only  # noqa: F401  (the feature maps' kernels import it from here)
from ._dot import FIXED_ORDER_COLUMNS, fixed_order_dot, input_modes, sparse_dot, sparse_offsets

__all__ = ["FeatureMap", "RowMaxima", "row_norms", "dot_into", "auto_block_size",
           "check_centres", "DTYPES", "DTYPE", "feature_dtype", "BLOCK_BYTES", "BLOCK_ROWS",
           "PREDICT_BLOCK_ROWS", "predict_block_size", "predict_chunk_size", "PER_INPUT"]

#: the precisions a map computes its features in (``dtype``): float32 halves the bytes of a
#: block and runs the per-block products Phi^T Phi on SSYRK, about twice DSYRK's rate
DTYPES = ("float64", "float32")
#: the bytes of features a block holds at least ...
BLOCK_BYTES = 32e6
#: ... and the rows: below about 2000 rows the rank-k update Phi^T Phi loses its BLAS rate
#: (T = 8000: 500 rows ran at 38 GFLOP/s against 50; docs/bench/float32.md), while a block of
#: 2048 rows stays small beside the T x T sums (2048 T against 2 T^2 words at T >= 2048)
BLOCK_ROWS = 2048


#: a block of ``linear_predict`` (predict, decision_function) holds at least this many rows ...
PREDICT_BLOCK_ROWS = 4096
#: ... or this many bytes of features: each block switches from BLAS's threads (X W^T) to
#: numba's (the maps' element-wise pass), and every switch costs CPU time (a pool's threads
#: spin before they sleep): 4 blocks of adults' 16281 test rows at T = 200 cost 1.9x one block
#: (docs/bench/predict.md)
PREDICT_BLOCK_BYTES = 64e6
#: the closed forms' predict runs a chunk of rows at a time on each thread (X W^T, the closed
#: form, Phi a) with at most this many rows ...
PREDICT_CHUNK_ROWS = 512
#: ... and this many bytes of features (8 MiB), so that the chunk is still in cache when the
#: closed form reads it, while each one-thread X W^T, which packs all of W anew, has rows
#: enough (adults, T = 2000, predict / X W^T: 1.34, 1.29, 1.28, 1.27, 1.43 at 128 to 2048
#: rows for rwsign, 1.43, 1.34, 1.33, 1.34, 1.38 for rwrelu; docs/bench/predict.md)
PREDICT_CHUNK_BYTES = 2 ** 23


def feature_dtype(dtype) -> np.dtype:
    """The numpy dtype of a map's ``dtype`` parameter ("float64" or "float32")."""
    return np.dtype(DTYPE.validate(dtype))


def auto_block_size(n_rows: int, n_cols: int, itemsize: int = 8) -> int:
    """Rows per block of features: enough for ``BLOCK_BYTES`` of ``itemsize``-byte values and
    at least ``BLOCK_ROWS`` rows (never more than ``n_rows``, never fewer than 64)."""
    rows = max(int(BLOCK_BYTES // (itemsize * max(1, n_cols))), BLOCK_ROWS)
    return max(64, min(n_rows, rows))


def predict_chunk_size(n_cols: int, itemsize: int = 8) -> int:
    """Rows per chunk of the closed forms' predict: the largest power of two up to
    ``PREDICT_CHUNK_ROWS`` whose features fit in ``PREDICT_CHUNK_BYTES`` (at least 16)."""
    rows = min(PREDICT_CHUNK_ROWS, int(PREDICT_CHUNK_BYTES // (itemsize * max(1, n_cols))))
    return max(16, 1 << (max(1, rows).bit_length() - 1))


def predict_block_size(n_cols: int, itemsize: int = 8) -> int:
    """Rows per block of ``linear_predict``: ``PREDICT_BLOCK_BYTES`` of features or
    ``PREDICT_BLOCK_ROWS`` rows, whichever is more, rounded down to whole chunks
    (:func:`predict_chunk_size`). It does not depend on the number of rows, so predicting a
    slice of these many rows computes what one call computes for them (BLAS's X W^T may round
    a row differently with other rows around it)."""
    rows = max(PREDICT_BLOCK_ROWS, int(PREDICT_BLOCK_BYTES // (itemsize * max(1, n_cols))))
    chunk = predict_chunk_size(n_cols, itemsize)
    return rows - rows % chunk


def row_norms(X: np.ndarray) -> np.ndarray:
    """Euclidean norm of each row (einsum avoids the m x n temporary of X**2)."""
    return np.sqrt(np.einsum("ij,ij->i", X, X))


def dot_into(X: np.ndarray, W: np.ndarray, out: np.ndarray, sparse=None) -> np.ndarray:
    """out <- X W^T, written in place, in the precision of ``out``; returns the product's
    columns of ``out``. ``out`` may be a column slice of a larger block, or have more than
    len(W) columns: its first len(W) then get the product (a C-contiguous block is written
    without the copy a column slice takes on the fixed-order path). Up to
    ``FIXED_ORDER_COLUMNS`` input columns each entry is summed in one fixed order (``_dot``):
    a row's entries do not depend on the rows computed with it. Above, BLAS (a float32 block:
    one SGEMM of X and W rounded to float32), whose rounding of a row may depend on the rows
    around it when the product is small (OpenBLAS's small-matrix kernels: T = 203 here) and
    not otherwise (T = 2000, blocks of 2 rows or more); a single row is computed as a row of a
    two-row product, as BLAS's GEMV path would sum in another order. ``sparse``: a map's
    (modes, W^T, c) (:meth:`FeatureMap._prepare_projection`; float64 ``out``): the product
    around the inputs' modes (``_dot.sparse_dot``), each entry in one fixed order too."""
    product = out if out.shape[1] == len(W) else out[:, :len(W)]
    if sparse is not None:
        sparse_dot(X, *sparse, out)
        return product
    if X.shape[1] <= FIXED_ORDER_COLUMNS and X.shape[1] > 0:
        fixed_order_dot(X, np.ascontiguousarray(W.T), out)
        return product
    if out.dtype != X.dtype:
        X, W = X.astype(out.dtype), W.astype(out.dtype)
    if X.shape[0] == 1:
        product[...] = np.matmul(np.vstack([X, X]), W.T)[:1]
    else:
        np.matmul(X, W.T, out=product)
    return product


#: fitted arrays of a map with one entry per input column, not per centre (subsets and joins
#: of centres leave them whole: :meth:`FeatureMap.per_centre`)
PER_INPUT = ("input_modes_",)


class RowMaxima:
    """Maxima over a set of rows of the per-row quantities a map's data constants are made of.

    ``n`` is the number of rows and ``values`` maps a quantity's name to its maximum over them
    (empty when n = 0: the constants are unknown). ``a + b`` is the maxima of both sets of
    rows: a maximum of maxima is the maximum, exactly, in any order or grouping, so chunks of a
    stream and partitions of a cluster merge to the maxima of the whole data, as their sums
    do. A quantity that is not finite on some row (an overflowing estimate) counts as +inf.
    """

    def __init__(self, n: int = 0, values: dict | None = None):
        self.n = int(n)
        self.values = {k: (math.inf if math.isnan(v) else float(v))
                       for k, v in (values or {}).items()}

    def __add__(self, other: "RowMaxima") -> "RowMaxima":
        keys = self.values.keys() | other.values.keys()
        return RowMaxima(self.n + other.n,
                         {k: max(self.values.get(k, -math.inf), other.values.get(k, -math.inf))
                          for k in keys})

    def __repr__(self) -> str:
        return f"RowMaxima(n={self.n}, values={self.values})"


#: the entries every map's table draws on (rwtool._params)
N_FEATURES = Param("n_features", "int", 1000, "T, the number of random features",
                   interval="[1, inf)")
SIGMA = Param("sigma", "float", 1.0, "s, the standard deviation of p (the scale of the draw)",
              interval="(0, inf)")
RANDOM_STATE = Param("random_state", "seed", None, "seed of the draw", none="a fresh draw")
DTYPE = Param("dtype", "choice", "float64", "precision of the features and of each block's "
              "products Phi^T Phi, Phi^T y (float32: half the memory of a block, about twice "
              "the BLAS rate); the sums across blocks and the solve stay float64",
              choices=DTYPES, advanced=True, ref="docs/SOLVERS.md#float32")


class FeatureMap(BaseEstimator):
    """Base class: ``fit`` samples w_1..w_T ~ p, ``transform`` returns the m x T feature matrix."""

    _estimator_type = None
    #: True for the RKHS weightings: the map also supplies the Gram matrix G (the regulariser).
    has_gram = False
    #: True for a map whose features start with X W_^T (:meth:`_project`): its fit records
    #: ``input_modes_``, and X W_^T skips the inputs at them when the inputs are mostly so
    _projects = False

    def __init__(self, n_features: int = 1000, random_state=None, dtype: str = "float64"):
        self.n_features = n_features
        self.random_state = random_state
        self.dtype = dtype

    # -- subclass hooks --------------------------------------------------------------------
    _parameters = params_table(N_FEATURES, RANDOM_STATE, DTYPE)

    def _validate_params(self, n_in: int) -> None:
        """The parameters checked against the class's table (rwtool._params); maps with rules
        between parameters add them after calling this."""
        validate_params(self)

    @abstractmethod
    def _sample(self, rng: np.random.Generator, n_in: int, X: np.ndarray) -> None:
        """Draw w_1..w_T ~ p and store them as fitted attributes."""

    @abstractmethod
    def _features_into(self, X: np.ndarray, out: np.ndarray) -> None:
        """Fill ``out`` (len(X) x n_output_) with the features of the rows of ``X``."""

    @property
    def n_output_(self) -> int:
        """Number of columns of the feature matrix."""
        return int(self.n_features)

    @property
    def feature_dtype_(self) -> np.dtype:
        """The dtype of the feature blocks (``dtype``; float64 for a map built without one)."""
        return feature_dtype(getattr(self, "dtype", "float64"))

    # -- public API ------------------------------------------------------------------------
    def fit(self, X, y=None) -> "FeatureMap":
        """Sample the random parameters w_1..w_T from p for inputs shaped like ``X``, and set
        the data constants from the rows of ``X``.

        ``X`` may have no rows: the parameters are drawn for its columns and the data
        constants stay unknown (None) until :meth:`set_constants` is given the maxima of rows
        (partial_fit and Dask fit the map so, then accumulate :meth:`row_maxima`).
        """
        check_feature_names(self, X, reset=True)
        X = check_array(X, min_samples=0)
        self._validate_params(X.shape[1])
        self.n_features_in_ = X.shape[1]
        self._sample(check_random_state(self.random_state), X.shape[1], X)
        if self._projects:
            # chosen once, from the training rows (none: the dense product), so that a row's
            # features are the same bits in fit, in partial_fit's blocks and in predict
            self.input_modes_ = (input_modes(X) if self.feature_dtype_ == np.float64
                                 else None)
        self.set_constants(self.row_maxima(X))
        self._prepare()
        self._prepare_projection()
        self.fitted_ = True
        return self

    def row_maxima(self, X: np.ndarray) -> RowMaxima:
        """The maxima over the rows of ``X`` (checked and preprocessed, as for :meth:`blocks`)
        of the quantities the data constants are made of; a map without such constants
        reports the number of rows only."""
        return RowMaxima(X.shape[0])

    def set_constants(self, maxima: RowMaxima) -> None:
        """Set the data constants from the maxima over all the training rows (no rows: the
        constants are unknown). A map without data constants has nothing to set."""

    def _prepare(self) -> None:
        """Derive the private constants of the closed form from the fitted attributes."""

    def _prepare_projection(self) -> None:
        """``_sparse``: (modes, W^T, c) of ``_dot.sparse_offsets`` when the fit recorded
        ``input_modes_`` (a float64 map), else None: X W_^T by BLAS. A map loaded from a file
        written before input_modes_ existed has none: the dense product, as it was fitted."""
        modes = getattr(self, "input_modes_", None) if self._projects else None
        self._sparse = None if modes is None else sparse_offsets(self.W_, modes)

    def _project(self, X: np.ndarray, out: np.ndarray) -> np.ndarray:
        """out <- X W_^T (:func:`dot_into`, around the inputs' modes when the fit chose so)."""
        return dot_into(X, self.W_, out, getattr(self, "_sparse", None))

    def per_centre(self, name: str, value) -> bool:
        """Whether the fitted attribute ``name`` (of value ``value``) holds one row per centre:
        an array whose first axis is n_features, not one of ``PER_INPUT`` (one entry per input
        column, which may be as many). What subsets and joins of centres index."""
        return (name not in PER_INPUT and isinstance(value, np.ndarray) and value.ndim >= 1
                and value.shape[0] == int(self.n_features))

    def fitted_state(self) -> dict:
        """The fitted attributes (trailing underscore) that, with the parameters, define the map."""
        return {k: v for k, v in vars(self).items() if k.endswith("_") and not k.startswith("_")}

    @classmethod
    def from_fitted_state(cls, params: dict, state: dict) -> "FeatureMap":
        """Rebuild a fitted map from ``get_params()`` and :meth:`fitted_state` (used by persist)."""
        obj = cls(**params)
        for key, value in state.items():
            setattr(obj, key, value)
        obj._prepare()
        obj._prepare_projection()
        return obj

    def transform(self, X):
        """Feature matrix Psi with Psi[i, t] = psi_t(x_i), shape (n_samples, n_output_), in the
        map's ``dtype``: an array, or a pandas DataFrame after
        ``set_output(transform="pandas")``."""
        check_is_fitted(self, "fitted_")
        check_feature_names(self, X, reset=False)
        Xa = check_array(X, n_features=self.n_features_in_)
        out = np.empty((Xa.shape[0], self.n_output_), dtype=self.feature_dtype_)
        self._features_into(Xa, out)
        return self._wrap_output(out, X)

    # -- scikit-learn's feature-name conventions -----------------------------------------------
    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """Names of the output columns: the class name and the column's index ("rwsign0",
        "rwsign1", ...), scikit-learn's names for features that each read every input.
        ``input_features``, when given, must be the fitted inputs' names (checked)."""
        check_is_fitted(self, "fitted_")
        self._input_names(input_features)
        prefix = type(self).__name__.lower()
        return np.asarray([f"{prefix}{t}" for t in range(self.n_output_)], dtype=object)

    def _input_names(self, input_features=None) -> list[str]:
        """The inputs' names: ``input_features`` (checked against the fit), the fitted
        ``feature_names_in_``, or x0, x1, ... (scikit-learn's rules)."""
        fitted = getattr(self, "feature_names_in_", None)
        if input_features is None:
            return ([str(n) for n in fitted] if fitted is not None
                    else [f"x{i}" for i in range(self.n_features_in_)])
        names = [str(n) for n in np.asarray(input_features, dtype=object).ravel()]
        if fitted is not None and names != [str(n) for n in fitted]:
            raise ValueError(f"input_features is not equal to feature_names_in_ "
                             f"({list(fitted)[:5]}...): pass the names the map was fitted "
                             f"with, or none")
        if len(names) != self.n_features_in_:
            raise ValueError(f"input_features should have length equal to number of features "
                             f"({self.n_features_in_}), got {len(names)}")
        return names

    def set_output(self, *, transform=None) -> "FeatureMap":
        """scikit-learn's output switch: ``transform="pandas"`` makes ``transform`` and
        ``fit_transform`` return a DataFrame (columns: :meth:`get_feature_names_out`, the
        input's index when it had one); "default" (or None: unchanged) returns arrays."""
        if transform is not None:
            self._sklearn_output_config = {
                "transform": check_choice(transform, "transform", ("default", "pandas"))}
        return self

    def _wrap_output(self, out: np.ndarray, X):
        if getattr(self, "_sklearn_output_config", {}).get("transform") != "pandas":
            return out
        import pandas as pd  # optional: only set_output(transform="pandas") needs it
        index = X.index if isinstance(X, pd.DataFrame) else None
        return pd.DataFrame(out, columns=self.get_feature_names_out(), index=index)

    def blocks(self, X: np.ndarray, block_size: int | None = None, order=None):
        """Yield ``(start, stop, Phi)`` over blocks of rows of ``X``, Phi = features of the block.

        One buffer of the map's ``dtype`` serves every block (when ``block_size`` is None,
        :func:`auto_block_size`: 32 MB of features and at least 2048 rows), so the m x T feature
        matrix is never held whole; Phi is overwritten by the next block. ``X`` must already be
        checked and preprocessed (the rows the map was fitted on). ``order``: the rows of X in
        this order (positions; start and stop count them), each block's gathered into one
        buffer of its own, where a copy of X sorted whole was a fresh m x n array faulted in
        (mnist 1-vs-7: 82 MB, 0.15 s of CPU of a 1.3 s default fit at T = 1000).
        """
        dtype = self.feature_dtype_
        m = X.shape[0] if order is None else len(order)
        bs = block_size if block_size is not None else auto_block_size(
            m, self.n_output_, dtype.itemsize)
        rows = None
        if order is not None:
            order = np.asarray(order)
            rows = np.empty((min(max(1, int(bs)), m), X.shape[1]), dtype=X.dtype)
            n = X.shape[0]
            if m and not (-n <= order.min() and order.max() < n):
                raise IndexError(f"order holds positions outside X's {n} rows")
        for start, stop, Phi in self._block_buffers(m, bs):
            # mode="wrap" (positions checked above): take's default mode copies ``out`` into a
            # temporary and back at each call, twice the gather's time
            self._features_into(X[start:stop] if order is None else np.take(
                X, order[start:stop], axis=0, out=rows[:stop - start], mode="wrap"), Phi)
            yield start, stop, Phi

    def _block_buffers(self, m: int, block_size: int):
        """``(start, stop, Phi)`` over blocks of ``block_size`` of m rows, Phi a view of one
        buffer of the map's ``dtype``, to be filled with the block's features."""
        bs = max(1, int(block_size))
        buf = np.empty((min(bs, m), self.n_output_), dtype=self.feature_dtype_)
        for start in range(0, m, bs):
            stop = min(m, start + bs)
            yield start, stop, buf[: stop - start]

    def linear_predict(self, X: np.ndarray, coef: np.ndarray,
                       block_size: int | None = None) -> np.ndarray:
        """Phi(X) @ coef, a block of rows at a time (``block_size`` rows; None:
        :meth:`predict_block_rows`), as float64. The closed forms compute a row's value from
        its X W^T in a fixed order of their own (:meth:`_decision_into`, or their one-pool
        pass in chunks of :func:`predict_chunk_size` rows); BLAS's X W^T may round a row
        differently with other rows around it (OpenBLAS does for a few input columns, or a
        single row), so a caller slicing rows slices them in blocks of
        :meth:`predict_block_rows` (whole chunks) to get the bits of one call."""
        out = np.empty((X.shape[0], coef.shape[1]))
        coef_t = np.ascontiguousarray(np.asarray(coef, dtype=np.float64).T)
        bs = self.predict_block_rows() if block_size is None else block_size
        for start, stop, Phi in self._block_buffers(X.shape[0], bs):
            self._decision_into(X[start:stop], coef_t, Phi, out[start:stop])
        return out

    def predict_block_rows(self) -> int:
        """The rows of a block of :meth:`linear_predict` (:func:`predict_block_size`)."""
        return predict_block_size(self.n_output_, self.feature_dtype_.itemsize)

    def _decision_into(self, X: np.ndarray, coef_t: np.ndarray, Phi: np.ndarray,
                       out: np.ndarray) -> None:
        """out <- Phi(X) coef_t^T for one block of rows, with ``Phi`` a buffer for the block's
        features (len(X) x T, the map's dtype). Here: the features, then one BLAS product (a
        float32 map's features times the coefficients rounded to float32, SGEMM: an error of
        the order of the features' own rounding). The closed forms fuse the product into
        their element-wise pass."""
        self._features_into(X, Phi)
        C = coef_t.T if coef_t.dtype == Phi.dtype else coef_t.T.astype(Phi.dtype)
        if Phi.dtype == out.dtype:
            np.matmul(Phi, C, out=out)
        else:
            out[...] = Phi @ C

    def fit_transform(self, X, y=None) -> np.ndarray:
        return self.fit(X).transform(X)


def check_centres(fmap) -> None:
    """A loaded map whose fitted arrays are its centres: one row per feature, each as wide as
    the input, indices in range, finite (rwtool.persist runs it through ``_check_fitted_state``)."""
    n_in = getattr(fmap, "n_features_in_", None)
    if not isinstance(n_in, int) or n_in < 1:
        raise ValueError("feature map without a valid n_features_in_")
    T = fmap.n_features
    if not isinstance(T, int) or T < 1:
        raise ValueError("feature map without a valid n_features")
    modes = getattr(fmap, "input_modes_", None)
    if modes is not None and not (
            isinstance(modes, np.ndarray) and modes.shape == (n_in,) and modes.dtype.kind == "f"
            and np.isfinite(modes).all() and fmap.feature_dtype_ == np.float64):
        raise ValueError(f"{type(fmap).__name__}.input_modes_ must be None or {n_in} finite "
                         f"floats of a float64 map")
    for name, v in fmap.fitted_state().items():
        if not isinstance(v, np.ndarray) or name in PER_INPUT:
            continue
        if v.ndim not in (1, 2) or v.shape[0] != T or (v.ndim == 2 and v.shape[1] != n_in):
            raise ValueError(f"{type(fmap).__name__}.{name} has shape {v.shape}, inconsistent "
                             f"with n_features={T}, n_features_in_={n_in}")
        if v.dtype.kind in "iu" and v.size and (v.min() < 0 or v.max() >= n_in):
            raise ValueError(f"{type(fmap).__name__}.{name} holds indices out of range")
        if v.dtype.kind == "f" and not np.isfinite(v).all():
            raise ValueError(f"{type(fmap).__name__}.{name} holds non-finite values")
        if v.dtype.kind not in "iuf":
            raise ValueError(f"{type(fmap).__name__}.{name} has dtype {v.dtype}")
