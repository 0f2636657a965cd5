"""Explicit (deterministic) features from several kernels: the candidate dictionary of MFGA (seed 004).

Gaussian kernel, Taylor features (Cotter, Keshet & Srebro 2011; seed 004 Section 5, spec
methods/greedy-mkl.md section 1.2). With e(x) = exp(-||x||^2 / (2 sigma^2)),

    k(x, y) = exp(-||x - y||^2 / (2 sigma^2)) = e(x) e(y) exp(<x, y> / sigma^2)
            = sum_alpha phi_alpha(x) phi_alpha(y),   phi_alpha(x) = e(x) x^alpha / (sigma^|alpha| sqrt(alpha!))

over multi-indices alpha in N^d; keeping |alpha| <= K gives the order-K truncated kernel
e(x) e(y) sum_{k<=K} (<x, y>/sigma^2)^k / k!. Linear kernel: the d coordinates x_i. Each block
p is multiplied by sqrt(nu_p) (seed 004 eq. 2), nu fixed (uniform 1/P by default).

The dictionary is lazy: ``columns`` evaluates only the requested columns, and ``correlate``
computes Psi^T R (the MFGA gradient) without the N x M0 matrix, by the Gram trick for order <= 2
(one BLAS-3 product X^T diag(w) X) and by row blocks otherwise. The paper's bandwidth rule
(mean distance to the 50th nearest neighbour) is ``rwtool.features._bandwidth.knn_sigma``,
re-exported here. This module selects nothing.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
from numba import njit

from .._base import check_array, check_feature_names, check_is_fitted
from .._params import Param, params_table, validate_params
from ..threads import run_row_shares
from ._bandwidth import knn_sigma
from ._base import SIGMA, FeatureMap, read_only, row_norms

__all__ = ["TaylorMultiKernelFeatures", "taylor_gaussian_kernel", "knn_sigma",
           "dictionary_size", "auto_gauss_order"]

_GAUSSIAN, _LINEAR = 0, 1


@njit(cache=True, nogil=True)
def _monomial_rows(X, env, vars_, kern, scale, cols, out, a, b):
    """out[i, c] <- scale[j] x_i^alpha_j (times e(x_i) for Gaussian columns), j = cols[c],
    for rows a <= i < b.

    vars_[j] lists the variables of the monomial with repetition (x_1^2 x_3 -> 0, 0, 2),
    padded with -1.
    """
    K = vars_.shape[1]
    for i in range(a, b):
        for c in range(cols.shape[0]):
            j = cols[c]
            v = scale[j]
            for q in range(K):
                p = vars_[j, q]
                if p < 0:
                    break
                v *= X[i, p]
            if kern[j] == 0:
                v *= env[i]
            out[i, c] = v


def _monomial_columns(X, env, vars_, kern, scale, cols, out):
    """_monomial_rows over every row of X, the rows shared among threads (rwtool.threads)."""
    X = read_only(X)
    run_row_shares(lambda a, b: _monomial_rows(X, env, vars_, kern, scale, cols, out, a, b),
                   X.shape[0], cols.shape[0] * max(1, vars_.shape[1]))


def taylor_gaussian_kernel(X, Y, sigma: float, order: int) -> np.ndarray:
    """The order-K truncated Gaussian kernel e(x) e(y) sum_{k<=K} s^k / k!, s = <x, y>/sigma^2."""
    X = np.asarray(X, dtype=float)
    Y = np.asarray(Y, dtype=float)
    s = (X @ Y.T) / sigma**2
    ex = np.exp(-np.einsum("ij,ij->i", X, X) / (2 * sigma**2))
    ey = np.exp(-np.einsum("ij,ij->i", Y, Y) / (2 * sigma**2))
    total = np.zeros_like(s)
    term = np.ones_like(s)
    for k in range(order + 1):
        if k > 0:
            term = term * s / k
        total += term
    return ex[:, None] * ey[None, :] * total


def dictionary_size(d: int, gauss_order: int, include_squares: bool = True,
                    include_linear: bool = True) -> int:
    """M0, the number of columns of the Taylor (+ linear) dictionary for d inputs."""
    n = sum(math.comb(d + k - 1, k) if include_squares or k < 2 else math.comb(d, k)
            for k in range(int(gauss_order) + 1))
    return n + (d if include_linear else 0)


def auto_gauss_order(d: int, n_select: int, base_order: int, include_squares: bool = True,
                     include_linear: bool = True, max_order: int = 8) -> int:
    """The smallest Taylor order >= ``base_order`` whose dictionary has at least 2 n_select columns.

    Greedy selection needs room to choose: with the paper's order-1 classification dictionary
    (2d + 1 columns) and d = 20, 100 selected features are nearly the whole dictionary and the
    model is close to logistic regression. Raising the order until there are twice as many
    candidates as selections keeps the paper's dictionary when d is large (order 1 for d >= 50)
    and adds the interaction terms when it is small; ``max_order`` (8, the largest order the
    dictionary supports) bounds it for d <= 3.
    """
    order = int(base_order)
    while order < max_order and dictionary_size(d, order, include_squares,
                                                include_linear) < 2 * int(n_select):
        order += 1
    return order


#: the dictionary's entries, shared with the greedy multi-kernel estimators (rwtool._params)
GAUSS_ORDER = Param("gauss_order", "int", 1, "K, the largest Taylor degree of the Gaussian "
                    "features", interval="[0, 8]", ref="seed 004 Section 5")
INCLUDE_SQUARES = Param("include_squares", "bool", True, "keep the monomials with a repeated "
                        "variable (x_i^2 ...)")
INCLUDE_LINEAR = Param("include_linear", "bool", True, "add the linear kernel's d features")
NU = Param("nu", "floats", None, "kernel weights (Gaussian[, linear]) on the simplex",
           none="uniform", ref="seed 004 eq. 2")


class TaylorMultiKernelFeatures(FeatureMap):
    """Candidate dictionary of explicit features: Gaussian Taylor terms and linear features.

    Column j is psi_j(x) = sqrt(nu_p) phi_j(x) (seed 004 eq. 2, Algorithm 1): the Gaussian block
    lists the monomials by degree 0..``gauss_order``, each degree in lexicographic order of the
    variables (degree 2 follows ``numpy.triu_indices``), then the linear block x_1..x_d.

    Parameters
    ----------
    sigma : float, default 1.0
        Gaussian bandwidth, k(x, y) = exp(-||x - y||^2 / (2 sigma^2)).
    gauss_order : int, default 1
        K, the largest Taylor degree kept (seed 004: 1 for classification, 2 for regression).
    include_squares : bool, default True
        Keep the monomials with a repeated variable (x_i^2 ...); False keeps only square-free
        ones (the "R2" reading of the regression dictionary, spec 1.3).
    include_linear : bool, default True
        Add the d features of the linear kernel.
    nu : sequence of float or None, default None
        Kernel weights (nu_G[, nu_L]) on the simplex; None is uniform 1/P.

    Attributes
    ----------
    vars_ : ndarray (M0, max(K, 1)) of int
        Variables of each monomial with repetition, padded with -1.
    kernel_index_ : ndarray (M0,) of int
        0 for a Gaussian Taylor column, 1 for a linear one.
    degree_ : ndarray (M0,) of int
    scale_ : ndarray (M0,)
        sqrt(nu_p) / (sigma^|alpha| sqrt(alpha!)) (Gaussian) or sqrt(nu_L) (linear).
    nu_ : ndarray (P,)
    """

    _parameters = params_table(
        dataclasses.replace(SIGMA, help="the Gaussian bandwidth, k(x, y) = "
                            "exp(-||x - y||^2 / (2 sigma^2))"),
        GAUSS_ORDER, INCLUDE_SQUARES, INCLUDE_LINEAR, NU)

    def __init__(self, sigma: float = 1.0, gauss_order: int = 1, include_squares: bool = True,
                 include_linear: bool = True, nu=None):
        self.sigma = sigma
        self.gauss_order = gauss_order
        self.include_squares = include_squares
        self.include_linear = include_linear
        self.nu = nu

    def _check_fitted_state(self):
        """The Taylor dictionary is a function of its parameters and input width (its variable
        indices drive an unchecked kernel): re-derive it and compare (checked on a loaded map)."""
        fresh = type(self)(**self.get_params(deep=False))
        fresh._sample(None, self.n_features_in_, None)
        for name in ("vars_", "kernel_index_", "degree_", "scale_", "nu_"):
            a, b = getattr(self, name), getattr(fresh, name)
            same = (np.array_equal(a, b) if a.dtype.kind in "iu"
                    else a.shape == b.shape and np.allclose(a, b, rtol=1e-12, atol=0.0))
            if not same:
                raise ValueError(f"TaylorMultiKernelFeatures.{name} is not the dictionary its "
                                 f"parameters define")

    # -- construction ----------------------------------------------------------------------
    def fit(self, X, y=None) -> "TaylorMultiKernelFeatures":
        """Enumerate the candidate columns for inputs shaped like ``X`` (nothing is random)."""
        check_feature_names(self, X, reset=True)
        X = check_array(X)
        self._validate_params(X.shape[1])
        self.n_features_in_ = X.shape[1]
        self._sample(None, X.shape[1], X)
        self.fitted_ = True
        return self

    def _validate_params(self, n_in):
        validate_params(self)
        P = 2 if self.include_linear else 1
        if self.nu is not None:
            nu = np.asarray(self.nu, dtype=float).ravel()
            if nu.shape != (P,) or np.any(nu < 0) or not np.isclose(nu.sum(), 1.0):
                raise ValueError(f"nu must hold {P} non-negative weights summing to 1 (one per "
                                 f"kernel: Gaussian{', linear' if P == 2 else ''}), got "
                                 f"{self.nu!r}")
        n_cols = self._count(n_in)
        if n_cols > 5_000_000:
            raise ValueError(f"the dictionary would have {n_cols} columns for d = {n_in}; lower "
                             f"gauss_order or set include_squares=False")

    def _count(self, d):
        return dictionary_size(d, self.gauss_order, self.include_squares, self.include_linear)

    def _sample(self, rng, n_in, X):
        d, K = n_in, int(self.gauss_order)
        P = 2 if self.include_linear else 1
        nu = np.full(P, 1.0 / P) if self.nu is None else np.asarray(self.nu, float).ravel()
        width = max(K, 1)
        rows, kern, deg, scale = [], [], [], []
        sigma = float(self.sigma)
        for k in range(K + 1):
            combos = (itertools.combinations_with_replacement(range(d), k)
                      if self.include_squares or k < 2 else itertools.combinations(range(d), k))
            for alpha in combos:
                fact = 1.0
                for _, grp in itertools.groupby(alpha):
                    fact *= math.factorial(len(list(grp)))
                rows.append(list(alpha) + [-1] * (width - k))
                kern.append(_GAUSSIAN)
                deg.append(k)
                scale.append(math.sqrt(nu[0]) / (sigma**k * math.sqrt(fact)))
        if self.include_linear:
            for i in range(d):
                rows.append([i] + [-1] * (width - 1))
                kern.append(_LINEAR)
                deg.append(1)
                scale.append(math.sqrt(nu[1]))
        self.vars_ = np.ascontiguousarray(np.array(rows, dtype=np.int64).reshape(-1, width))
        self.kernel_index_ = np.array(kern, dtype=np.int64)
        self.degree_ = np.array(deg, dtype=np.int64)
        self.scale_ = np.array(scale, dtype=np.float64)
        self.nu_ = nu

    @property
    def n_output_(self):
        return int(self.scale_.shape[0])

    # -- evaluation ------------------------------------------------------------------------
    def envelope(self, X: np.ndarray) -> np.ndarray:
        """e(x) = exp(-||x||^2 / (2 sigma^2)) for each row."""
        return np.exp(-row_norms(X) ** 2 / (2.0 * float(self.sigma) ** 2))

    def _features_into(self, X, out):
        self._columns_into(X, np.arange(self.n_output_, dtype=np.int64), out)

    def _columns_into(self, X, cols, out, env=None):
        env = self.envelope(X) if env is None else env
        # Many columns (a block of the dictionary) or many values: the parallel kernel, which
        # multiplies in the same order as the loop below, so both give the same bits.
        if X.shape[0] * len(cols) >= 200_000 or len(cols) > 64:
            _monomial_columns(X, env, self.vars_, self.kernel_index_, self.scale_,
                              np.ascontiguousarray(cols, dtype=np.int64), out)
            return out
        # A few columns (an MFGA step): vectorised NumPy beats waking the parallel kernel.
        for c, j in enumerate(cols):
            v = np.full(X.shape[0], self.scale_[j])
            for a in self.vars_[j]:
                if a < 0:
                    break
                v *= X[:, a]
            if self.kernel_index_[j] == _GAUSSIAN:
                v *= env
            out[:, c] = v
        return out

    def _onnx(self, g, x, cols=None):
        """The columns ``cols`` (all when None) as ONNX nodes on ``g`` (rwtool.persist's
        Graph): the product of each monomial's variables (a padding -1 reads a column of
        ones), times its scale, times e(x) for the Gaussian columns."""
        cols = np.arange(self.n_output_) if cols is None else np.asarray(cols, dtype=np.int64)
        d = self.n_features_in_
        index = np.where(self.vars_[cols] < 0, d, self.vars_[cols])
        v = g.op("ReduceProd", g.gather_columns(g.append_ones(x), index), axes=[2], keepdims=0)
        v = g.mul(v, g.const(self.scale_[cols], "scale"))
        norm = g.row_norms(x)
        env = g.op("Exp", g.scaled(g.mul(norm, norm), -1.0 / (2.0 * float(self.sigma) ** 2)))
        gaussian = g.const(self.kernel_index_[cols] == _GAUSSIAN, "gaussian", np.bool_)
        return g.where(gaussian, g.mul(v, env), v)

    def columns(self, X, cols) -> np.ndarray:
        """The columns ``cols`` of Psi(X) only, shape (len(X), len(cols))."""
        check_is_fitted(self, "fitted_")
        X = check_array(X, n_features=self.n_features_in_)
        cols = np.asarray(cols, dtype=np.int64).ravel()
        if cols.size and (cols.min() < 0 or cols.max() >= self.n_output_):
            raise ValueError(f"column indices must be in [0, {self.n_output_}), got "
                             f"[{cols.min()}, {cols.max()}]")
        return self._columns_into(X, cols, np.empty((X.shape[0], cols.size)))

    def correlate(self, X, R, block_size: int | None = None) -> np.ndarray:
        """Psi(X)^T R without forming Psi: shape (M0,) for R (N,), (M0, k) for R (N, k).

        For gauss_order <= 2 this is the Gram trick of spec methods/greedy-mkl.md 2.4:
        with w = r * e(x), degree 0 is sum w, degree 1 is X^T w, degree 2 the upper triangle of
        X^T diag(w) X; the linear block is X^T r. Higher orders go by row blocks.
        """
        R = np.asarray(R, dtype=float)
        one = R.ndim == 1
        R2 = R[:, None] if one else R
        if int(self.gauss_order) > 2:
            out = self._correlate_blocked(X, R2, block_size)
        else:
            out = self._correlate_gram(X, R2)
        return out[:, 0] if one else out

    def _correlate_gram(self, X, R):
        d, k = X.shape[1], R.shape[1]
        K = int(self.gauss_order)
        W = R * self.envelope(X)[:, None]
        blocks = [W.sum(axis=0)[None, :]]
        if K >= 1:
            blocks.append(X.T @ W)
        if K >= 2:
            iu = np.triu_indices(d) if self.include_squares else np.triu_indices(d, 1)
            G2 = np.empty((len(iu[0]), k))
            for c in range(k):
                G = X.T @ (X * W[:, c:c + 1])
                G2[:, c] = G[iu]
            blocks.append(G2)
        if self.include_linear:
            blocks.append(X.T @ R)
        out = np.concatenate(blocks, axis=0)
        out *= self.scale_[:, None]
        return out

    def _correlate_blocked(self, X, R, block_size=None):
        M0 = self.n_output_
        bs = block_size or max(64, min(X.shape[0], int(16e6 // (8 * M0))))
        cols = np.arange(M0, dtype=np.int64)
        out = np.zeros((M0, R.shape[1]))
        buf = np.empty((min(bs, X.shape[0]), M0))
        for start in range(0, X.shape[0], bs):
            stop = min(X.shape[0], start + bs)
            Psi = self._columns_into(X[start:stop], cols, buf[: stop - start])
            out += Psi.T @ R[start:stop]
        return out

    def column_sq_norms(self, X, block_size: int | None = None) -> np.ndarray:
        """||psi_j||^2 = sum_n psi_j(x_n)^2 for every column (for normalised selection)."""
        M0 = self.n_output_
        bs = block_size or max(64, min(X.shape[0], int(16e6 // (8 * M0))))
        cols = np.arange(M0, dtype=np.int64)
        out = np.zeros(M0)
        buf = np.empty((min(bs, X.shape[0]), M0))
        for start in range(0, X.shape[0], bs):
            stop = min(X.shape[0], start + bs)
            Psi = self._columns_into(X[start:stop], cols, buf[: stop - start])
            out += np.einsum("ij,ij->j", Psi, Psi)
        return out

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """Every column's :meth:`describe` name ("gauss:1", "gauss:age*income",
        "linear:age"), from ``input_features``, the fitted ``feature_names_in_`` or x0, x1..."""
        check_is_fitted(self, "fitted_")
        names = self._input_names(input_features)
        return np.asarray([self.describe(j, names) for j in range(self.n_output_)],
                          dtype=object)

    def describe(self, j: int, names=None) -> str:
        """Readable name of column j, e.g. "gauss:x0*x3" or "linear:x2"."""
        check_is_fitted(self, "fitted_")
        names = names or [f"x{i}" for i in range(self.n_features_in_)]
        v = [names[a] for a in self.vars_[j] if a >= 0]
        if self.kernel_index_[j] == _LINEAR:
            return f"linear:{v[0]}"
        return "gauss:" + ("*".join(v) if v else "1")
