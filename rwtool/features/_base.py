"""What every random feature map shares: parameters, sampling on ``fit``, dense ``transform``.

A feature map turns a row x into (psi_1(x), ..., psi_T(x)). Subclasses sample their parameters
w_1..w_T from p in ``_sample`` (serially, from a seeded Generator, so the draw does not depend on
the thread count) and fill a block of the feature matrix in ``_features_into``. The heavy
product X W^T goes to BLAS; the element-wise closed forms are numba kernels in each family's
module. This module holds no formula of its own.
"""

from __future__ import annotations

import numbers
from abc import abstractmethod

import numpy as np

from .._base import BaseEstimator, check_array, check_is_fitted, check_random_state, check_scalar

__all__ = ["FeatureMap", "row_norms", "dot_into", "auto_block_size"]


def auto_block_size(n_rows: int, n_cols: int, budget_bytes: float = 32e6) -> int:
    """Rows per block so that one float64 block of features stays near ``budget_bytes``."""
    rows = int(budget_bytes // (8 * max(1, n_cols)))
    return max(64, min(n_rows, rows))


def row_norms(X: np.ndarray) -> np.ndarray:
    """Euclidean norm of each row (einsum avoids the m x n temporary of X**2)."""
    return np.sqrt(np.einsum("ij,ij->i", X, X))


def dot_into(X: np.ndarray, W: np.ndarray, out: np.ndarray) -> np.ndarray:
    """out <- X W^T on BLAS, written in place (``out`` may be a column slice of a larger block)."""
    np.matmul(X, W.T, out=out)
    return out


class FeatureMap(BaseEstimator):
    """Base class: ``fit`` samples w_1..w_T ~ p, ``transform`` returns the m x T feature matrix."""

    _estimator_type = None
    #: True for the RKHS weightings: the map also supplies the Gram matrix G (the regulariser).
    has_gram = False

    def __init__(self, n_features: int = 1000, random_state=None):
        self.n_features = n_features
        self.random_state = random_state

    # -- subclass hooks --------------------------------------------------------------------
    def _validate_params(self, n_in: int) -> None:
        check_scalar(self.n_features, "n_features", numbers.Integral, low=1)

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

    # -- public API ------------------------------------------------------------------------
    def fit(self, X, y=None) -> "FeatureMap":
        """Sample the random parameters w_1..w_T from p for inputs shaped like ``X``."""
        X = check_array(X)
        self._validate_params(X.shape[1])
        self.n_features_in_ = X.shape[1]
        self._sample(check_random_state(self.random_state), X.shape[1], X)
        self._prepare()
        self.fitted_ = True
        return self

    def _prepare(self) -> None:
        """Derive the private constants of the closed form from the fitted attributes."""

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
        return obj

    def transform(self, X) -> np.ndarray:
        """Feature matrix Psi with Psi[i, t] = psi_t(x_i), shape (n_samples, n_output_)."""
        check_is_fitted(self, "fitted_")
        X = check_array(X, n_features=self.n_features_in_)
        out = np.empty((X.shape[0], self.n_output_))
        self._features_into(X, out)
        return out

    def blocks(self, X: np.ndarray, block_size: int | None = None):
        """Yield ``(start, stop, Phi)`` over blocks of rows of ``X``, Phi = features of the block.

        One buffer serves every block (about 32 MB of features when ``block_size`` is None), so
        the m x T feature matrix is never held whole; Phi is overwritten by the next block.
        ``X`` must already be checked and preprocessed (the rows the map was fitted on).
        """
        m, T = X.shape[0], self.n_output_
        bs = auto_block_size(m, T) if block_size is None else max(1, int(block_size))
        buf = np.empty((min(bs, m), T))
        for start in range(0, m, bs):
            stop = min(m, start + bs)
            Phi = buf[: stop - start]
            self._features_into(X[start:stop], Phi)
            yield start, stop, Phi

    def linear_predict(self, X: np.ndarray, coef: np.ndarray, block_size: int = 4096) -> np.ndarray:
        """Phi(X) @ coef, a block of rows at a time (see :meth:`blocks`)."""
        out = np.empty((X.shape[0], coef.shape[1]))
        for start, stop, Phi in self.blocks(X, block_size):
            np.matmul(Phi, coef, out=out[start:stop])
        return out

    def fit_transform(self, X, y=None) -> np.ndarray:
        return self.fit(X).transform(X)
