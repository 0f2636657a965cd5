"""Random Fourier features (Rahimi & Recht; seed 002) for three shift-invariant kernels.

By Bochner's theorem k(x - y) = E_w[cos(<w, x - y>)] with w drawn from the kernel's spectral
density. With bandwidth sigma:

    gaussian   exp(-||x - y||^2 / (2 sigma^2))          w ~ N(0, sigma^-2 I)
    laplacian  exp(-||x - y||_1 / sigma)                w_j ~ Cauchy(0, 1/sigma) i.i.d.
    cauchy     prod_j 1 / (1 + (x_j - y_j)^2 / sigma^2)  w_j ~ Laplace(0, 1/sigma) i.i.d.

Two variants (spec methods/sgd-rf.md section 1): "pair", M^(-1/2) [cos(Wx), sin(Wx)] with 2M
columns and z(x).z(x) = 1 exactly; "phase", sqrt(2/M) cos(Wx + b) with b ~ U[0, 2 pi) and M
columns. This module only maps inputs to features.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from numba import njit

from .._base import check_choice
from .._params import Param, params_table
from ..threads import run_row_shares
from ._base import DTYPE, N_FEATURES, RANDOM_STATE, SIGMA, FeatureMap, check_centres

__all__ = ["RandomFourierFeatures", "FOURIER_KERNELS", "shift_invariant_kernel"]

FOURIER_KERNELS = ("gaussian", "laplacian", "cauchy")


@njit(cache=True, nogil=True)
def _cos_phase_rows(Z, b, scale, r0, r1):
    for i in range(r0, r1):
        for t in range(Z.shape[1]):
            Z[i, t] = scale * math.cos(Z[i, t] + b[t])


@njit(cache=True, nogil=True)
def _cos_sin_pair_rows(Z, M, scale, r0, r1):
    """Z[i, :M] holds <w, x_i>; writes cos into Z[i, :M] and sin into Z[i, M:2M]."""
    for i in range(r0, r1):
        for t in range(M):
            z = Z[i, t]
            Z[i, t] = scale * math.cos(z)
            Z[i, M + t] = scale * math.sin(z)


def _cos_phase_inplace(Z, b, scale):
    run_row_shares(lambda r0, r1: _cos_phase_rows(Z, b, scale, r0, r1), *Z.shape)


def _cos_sin_pair_inplace(Z, M, scale):
    """The rows of the sequential kernel above, shared among threads (rwtool.threads)."""
    run_row_shares(lambda r0, r1: _cos_sin_pair_rows(Z, M, scale, r0, r1), *Z.shape)


#: the entries the estimators on Fourier features share with the map (rwtool._params)
KERNEL = Param("kernel", "choice", "gaussian", "the shift-invariant kernel k(x - y) (the SGD "
               "paper's theory covers the Gaussian)", choices=FOURIER_KERNELS)
VARIANT = Param("variant", "choice", "pair", "pair: M^-1/2 [cos, sin] (2M coefficients); phase: "
                "sqrt(2/M) cos(omega^T x + b) (M coefficients)", choices=("pair", "phase"))


class RandomFourierFeatures(FeatureMap):
    """Random Fourier features z(x) with E[z(x).z(y)] = k(x - y).

    Parameters
    ----------
    n_features : int, default 1000
        M, the number of frequencies (the "pair" variant outputs 2M columns).
    kernel : {"gaussian", "laplacian", "cauchy"}, default "gaussian"
    sigma : float, default 1.0
        Kernel bandwidth (gaussian: exp(-||x-y||^2 / (2 sigma^2)), i.e. scikit-learn's
        RBFSampler gamma = 1 / (2 sigma^2)).
    variant : {"pair", "phase"}, default "pair"
    random_state : int, Generator or None

    Attributes
    ----------
    W_ : ndarray (M, n)
        Frequencies.
    b_ : ndarray (M,)
        Phases ("phase" variant; zeros for "pair").
    """

    _parameters = params_table(
        dataclasses.replace(N_FEATURES, help="M, the number of frequencies (the pair variant "
                            "outputs 2M columns)"),
        KERNEL,
        dataclasses.replace(SIGMA, help="the kernel bandwidth (gaussian: exp(-||x - y||^2 / "
                            "(2 sigma^2)))"),
        VARIANT, RANDOM_STATE, DTYPE)

    _check_fitted_state = check_centres
    _projects = True

    def __init__(self, n_features: int = 1000, kernel: str = "gaussian", sigma: float = 1.0,
                 variant: str = "pair", random_state=None,
                 dtype: str = "float64"):
        self.n_features = n_features
        self.kernel = kernel
        self.sigma = sigma
        self.variant = variant
        self.random_state = random_state
        self.dtype = dtype

    @property
    def n_output_(self):
        return 2 * int(self.n_features) if self.variant.lower() == "pair" else int(self.n_features)

    def frequencies_used(self, coef) -> np.ndarray:
        """Whether each of the M frequencies has a non-zero coefficient in ``coef`` (one row per
        output column of the map): the cos and sin rows of a "pair" frequency count as one."""
        c = np.asarray(coef)
        used = np.any(c.reshape(len(c), -1) != 0, axis=1)
        if self.variant.lower() == "pair":
            M = int(self.n_features)
            used = used[:M] | used[M:]
        return used

    def _sample(self, rng, n_in, X):
        M, kernel = int(self.n_features), self.kernel.lower()
        scale = 1.0 / float(self.sigma)
        if kernel == "gaussian":
            W = rng.standard_normal((M, n_in))
        elif kernel == "laplacian":
            W = rng.standard_cauchy((M, n_in))
        else:
            W = rng.laplace(0.0, 1.0, (M, n_in))
        self.W_ = np.ascontiguousarray(W * scale)
        if self.variant.lower() == "phase":
            self.b_ = rng.uniform(0.0, 2.0 * math.pi, M)
        else:
            self.b_ = np.zeros(M)

    def _features_into(self, X, out):
        M = self.W_.shape[0]
        if self.variant.lower() == "pair":
            self._project(X, out)       # its first M columns; no copy of a column slice
            _cos_sin_pair_inplace(out, M, 1.0 / math.sqrt(M))
        else:
            self._project(X, out)
            _cos_phase_inplace(out, self.b_, math.sqrt(2.0 / M))

    def _onnx(self, g, x):
        """The features as ONNX nodes on ``g`` (rwtool.persist's Graph) of the input ``x``."""
        M = self.W_.shape[0]
        z = g.matmul(x, g.const(self.W_.T, "W"))
        if self.variant.lower() == "pair":
            return g.scaled(g.concat([g.op("Cos", z), g.op("Sin", z)]), 1.0 / math.sqrt(M))
        return g.scaled(g.op("Cos", g.add(z, g.const(self.b_, "b"))), math.sqrt(2.0 / M))


def shift_invariant_kernel(X: np.ndarray, Y: np.ndarray, kernel: str = "gaussian",
                           sigma: float = 1.0) -> np.ndarray:
    """The exact kernel matrix k(x_i - y_j) that :class:`RandomFourierFeatures` approximates."""
    kernel = check_choice(kernel, "kernel", FOURIER_KERNELS)
    X = np.asarray(X, dtype=float)
    Y = np.asarray(Y, dtype=float)
    if kernel == "gaussian":
        d2 = (np.einsum("ij,ij->i", X, X)[:, None] + np.einsum("ij,ij->i", Y, Y)[None, :]
              - 2.0 * X @ Y.T)
        return np.exp(-np.maximum(d2, 0.0) / (2.0 * sigma * sigma))
    diff = np.abs(X[:, None, :] - Y[None, :, :]) / sigma
    if kernel == "laplacian":
        return np.exp(-diff.sum(axis=2))
    return np.prod(1.0 / (1.0 + diff * diff), axis=2)
