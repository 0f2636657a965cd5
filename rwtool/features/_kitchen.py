"""Random kitchen sinks: the base predictors themselves as features (seed 003 Section 3.1).

psi_t(x) = phi(w_t, x) / sqrt(T) with w_t ~ p, for the three base predictors of the RKHS
weightings: sign(<w, x>) and max(0, <w, x>) with w ~ N(0, sigma^2 I), and the decision stump
sign(x_{w1} - w2) with w1 ~ U{1..n}, w2 ~ N(0, sigma^2). With the 1/sqrt(T) scaling, the ridge
objective (1/m) sum loss + (lam/2) ||a||^2 is the paper's eq. 24 (see the spec, section 1).
This module does not solve anything; the RKHS weightings reuse its base-predictor kernels.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .._params import params_table
from ..threads import run_row_shares
from ._base import (DTYPE, N_FEATURES, RANDOM_STATE, SIGMA, FeatureMap, check_centres,
                    read_only)

__all__ = ["KitchenSign", "KitchenRelu", "KitchenStumps", "sign_inplace", "relu_inplace",
           "stump_sign_into", "sample_gaussian", "sample_stumps"]


@njit(cache=True, nogil=True)
def _sign_rows(Z, scale, a, b):
    for i in range(a, b):
        for t in range(Z.shape[1]):
            z = Z[i, t]
            Z[i, t] = scale if z > 0.0 else (-scale if z < 0.0 else 0.0)


@njit(cache=True, nogil=True)
def _relu_rows(Z, scale, a, b):
    for i in range(a, b):
        for t in range(Z.shape[1]):
            z = Z[i, t]
            Z[i, t] = scale * z if z > 0.0 else 0.0


@njit(cache=True, nogil=True)
def _stump_sign_rows(X, idx, thr, scale, out, a, b):
    for i in range(a, b):
        for t in range(idx.shape[0]):
            d = X[i, idx[t]] - thr[t]
            out[i, t] = scale if d > 0.0 else (-scale if d < 0.0 else 0.0)


# the kernels above are sequential; these share the rows among threads (rwtool.threads)

def sign_inplace(Z, scale):
    """Z <- scale * sign(Z), element-wise (sign(0) = 0)."""
    run_row_shares(lambda a, b: _sign_rows(Z, scale, a, b), *Z.shape)


def relu_inplace(Z, scale):
    """Z <- scale * max(0, Z), element-wise."""
    run_row_shares(lambda a, b: _relu_rows(Z, scale, a, b), *Z.shape)


def stump_sign_into(X, idx, thr, scale, out):
    """out[i, t] <- scale * sign(X[i, idx[t]] - thr[t])."""
    X, idx, thr = (read_only(v) for v in (X, idx, thr))
    run_row_shares(lambda a, b: _stump_sign_rows(X, idx, thr, scale, out, a, b),
                   X.shape[0], idx.shape[0])


def sample_gaussian(rng: np.random.Generator, T: int, n: int, sigma: float) -> np.ndarray:
    """w_1..w_T ~ N(0, sigma^2 I_n) as a C-contiguous T x n array."""
    return np.ascontiguousarray(rng.standard_normal((T, n)) * sigma)


def sample_stumps(rng: np.random.Generator, T: int, n: int, sigma: float):
    """Stump parameters: variable index w1 ~ U{0..n-1} and threshold w2 ~ N(0, sigma^2)."""
    idx = rng.integers(0, n, size=T).astype(np.int64)
    thr = rng.standard_normal(T) * sigma
    return idx, thr


#: the table of every kitchen sink: T, sigma of p = N(0, sigma^2 I) (or of the stumps' threshold)
_KITCHEN_PARAMETERS = params_table(N_FEATURES, SIGMA, RANDOM_STATE, DTYPE)


class _Kitchen(FeatureMap):
    """What every kitchen sink shares: its parameters (T, sigma, random_state) and fitted check."""

    _parameters = _KITCHEN_PARAMETERS
    _check_fitted_state = check_centres

    def __init__(self, n_features: int = 1000, sigma: float = 1.0, random_state=None,
                 dtype: str = "float64"):
        self.n_features = n_features
        self.sigma = sigma
        self.random_state = random_state
        self.dtype = dtype


class _KitchenDot(_Kitchen):
    _projects = True

    def _sample(self, rng, n_in, X):
        self.W_ = sample_gaussian(rng, int(self.n_features), n_in, float(self.sigma))

    def base_predictor(self, X: np.ndarray) -> np.ndarray:
        """phi(w_t, x_i) without the 1/sqrt(T) scaling."""
        out = np.empty((X.shape[0], self.n_output_))
        self._project(X, out)
        self._kernel(out, 1.0)
        return out

    def _features_into(self, X, out):
        self._project(X, out)
        self._kernel(out, 1.0 / math.sqrt(self.n_output_))

    def _onnx(self, g, x):
        """The features as ONNX nodes on ``g`` (rwtool.persist's Graph) of the input ``x``."""
        z = g.matmul(x, g.const(self.W_.T, "W"))
        return g.scaled(g.op(self._onnx_op, z), 1.0 / math.sqrt(self.n_output_))


class KitchenSign(_KitchenDot):
    """Random kitchen sinks with sign features: psi_t(x) = sign(<w_t, x>) / sqrt(T), w_t ~ N(0, s^2 I).

    Parameters
    ----------
    n_features : int
        T, the number of random features.
    sigma : float
        s, the standard deviation of p (irrelevant for sign up to ties, kept for symmetry).
    random_state : int, Generator or None
        Seed of the draw of w_1..w_T.
    """

    _kernel = staticmethod(sign_inplace)
    _onnx_op = "Sign"


class KitchenRelu(_KitchenDot):
    """Random kitchen sinks with ReLU features: psi_t(x) = max(0, <w_t, x>) / sqrt(T), w_t ~ N(0, s^2 I)."""

    _kernel = staticmethod(relu_inplace)
    _onnx_op = "Relu"


class KitchenStumps(_Kitchen):
    """Random kitchen sinks with decision stumps: psi_t(x) = sign(x_{w1} - w2) / sqrt(T).

    w1 ~ U{1..n} picks the variable, w2 ~ N(0, sigma^2) the threshold (seed 003 Table 2's p).
    """

    def _sample(self, rng, n_in, X):
        self.idx_, self.thr_ = sample_stumps(rng, int(self.n_features), n_in, float(self.sigma))

    def base_predictor(self, X):
        out = np.empty((X.shape[0], self.n_output_))
        stump_sign_into(X, self.idx_, self.thr_, 1.0, out)
        return out

    def _features_into(self, X, out):
        stump_sign_into(X, self.idx_, self.thr_, 1.0 / math.sqrt(self.n_output_), out)

    def _onnx(self, g, x):
        d = g.sub(g.gather_columns(x, self.idx_), g.const(self.thr_, "thr"))
        return g.scaled(g.op("Sign", d), 1.0 / math.sqrt(self.n_output_))
