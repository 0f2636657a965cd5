"""RWClassifier, RWRegressor, RKSClassifier, RKSRegressor: linear models on random feature maps.

An RKHS weighting (Dube & Marchand, seed 003) learns coefficients a on the closed-form features
psi_t(x) = E_{w~p}[K(w_t, w) phi(w, x)] with the RKHS-norm regulariser a^T G a; random kitchen
sinks (Rahimi & Recht) learn them on phi(w_t, x) / sqrt(T) with ||a||^2. Both minimise

    J(a) = (1/m) sum_i loss(f(x_i), y_i) + (lam/2) ||alpha||^2          (spec section 3)

so ``reg`` (lam) means the same model for every solver. Classification is one-vs-rest on +/-1
targets sharing one feature matrix and one factorisation. The estimators own the preprocessing
(standardisation, bias column) and dispatch to a solver registered in ``SOLVERS``; the feature
maps and solvers live in rwtool.features and rwtool.solvers.
"""

from __future__ import annotations

import numbers
import time

import numpy as np

from .._base import (BaseEstimator, ClassifierMixin, RegressorMixin, Standardizer, check_array,
                     check_choice, check_is_fitted, check_random_state, check_scalar, check_X_y,
                     encode_classes)
from ..features import INSTANTIATIONS, KITCHEN_BASES, RandomFourierFeatures, make_instantiation
from ..features.fourier import FOURIER_KERNELS
from ..progress import FitCancelled, make_progress
from ..solvers.ridge import ridge_fit

__all__ = ["RWClassifier", "RWRegressor", "RKSClassifier", "RKSRegressor", "SOLVERS",
           "RKS_BASES"]

#: base predictors of the random kitchen sinks (plus random Fourier features)
RKS_BASES = tuple(KITCHEN_BASES) + ("fourier",)
#: instantiations/bases whose base predictor reads <w, x>: they get the constant bias column
_DOT_PRODUCT = {"rwsign", "rwexpsign", "rwrelu", "rwexprelu", "sign", "relu"}


def _fit_lstsq(est, fmap, X, Y, progress):
    """Least squares (003 Algorithm 4) / ridge (003 Algorithm 1), blocked (solvers/ridge.py)."""
    eps = est.eps if est._family == "rw" else 0.0
    coef, info = ridge_fit(fmap, X, Y, reg=float(est.reg), eps=float(eps),
                           block_size=est.block_size, progress=progress)
    return coef, {"jitter": info["jitter"], "method": info["method"]}


#: solver name -> (families it serves, function(est, feature_map, X, Y, progress) -> (coef, info))
SOLVERS = {
    "lstsq": (("rw",), _fit_lstsq),
    "ridge": (("rks",), _fit_lstsq),
}


class _RandomFeatureModel(BaseEstimator):
    """Shared fit/predict machinery; subclasses define the feature map and the target coding."""

    _family = "rw"

    # -- validation and construction -------------------------------------------------------
    def _validate(self):
        check_scalar(self.n_features, "n_features", numbers.Integral, low=1)
        check_scalar(self.reg, "reg", low=0.0)
        check_scalar(self.sigma, "sigma", low=0.0, low_inclusive=False)
        check_scalar(self.block_size, "block_size", numbers.Integral, low=1, allow_none=True)
        solver = check_choice(self.solver, "solver",
                              [k for k, (fam, _) in SOLVERS.items() if self._family in fam])
        return solver

    def _uses_bias(self) -> bool:
        return bool(self.bias) and self._kind() in _DOT_PRODUCT

    def _prepare_X(self, X: np.ndarray) -> np.ndarray:
        if self.standardize:
            X = self.x_scaler_.transform(X)
        if self.bias_:
            X = np.hstack([X, np.ones((X.shape[0], 1))])
        return np.ascontiguousarray(X)

    # -- fit / predict ---------------------------------------------------------------------
    def fit(self, X, y, callback=None):
        """Sample the features, solve for the coefficients and return self.

        ``callback(event)`` receives progress events (rwtool.progress); returning True cancels
        the fit, which then raises :class:`rwtool.FitCancelled` and leaves the estimator
        unfitted.
        """
        solver = self._validate()
        X, Y = self._fit_targets(X, y)
        if hasattr(self, "coef_"):  # a failed or cancelled refit must not leave the old model
            del self.coef_
        t0 = time.perf_counter()
        progress = make_progress(callback)
        self.n_features_in_ = X.shape[1]
        self.x_scaler_ = Standardizer.fit(X) if self.standardize else None
        self.bias_ = self._uses_bias()
        Xp = self._prepare_X(X)
        rng = check_random_state(self.random_state)
        fmap = self._make_map(int(rng.integers(0, 2**63 - 1)))
        fmap.fit(Xp)
        try:
            coef, info = SOLVERS[solver][1](self, fmap, Xp, Y, progress)
        except FitCancelled as exc:
            # Iterative solvers hand back their last completed iterate: keep it and say so.
            if exc.partial_model and exc.partial is not None:
                coef, info = exc.partial
                self._set_fitted(fmap, coef, dict(info, cancelled=True), t0)
            raise
        self._set_fitted(fmap, coef, info, t0)
        return self

    def _set_fitted(self, fmap, coef, info, t0):
        self.feature_map_ = fmap
        self.coef_ = np.ascontiguousarray(coef)
        self.solver_info_ = info
        self.fit_time_ = time.perf_counter() - t0

    def feature_matrix(self, X) -> np.ndarray:
        """The feature matrix Phi of ``X`` (after the recorded preprocessing), m x T."""
        check_is_fitted(self)
        X = check_array(X, n_features=self.n_features_in_, estimator=type(self).__name__)
        return self.feature_map_.transform(self._prepare_X(X))

    def _raw_decision(self, X) -> np.ndarray:
        check_is_fitted(self)
        X = check_array(X, n_features=self.n_features_in_, estimator=type(self).__name__)
        Xp = self._prepare_X(X)
        fmap = self.feature_map_
        out = np.empty((Xp.shape[0], self.coef_.shape[1]))
        # Blocked like the fit: predictions never hold the whole feature matrix either.
        bs = 4096
        buf = np.empty((min(bs, len(Xp)), fmap.n_output_))
        for start in range(0, len(Xp), bs):
            stop = min(len(Xp), start + bs)
            Phi = buf[: stop - start]
            fmap._features_into(Xp[start:stop], Phi)
            np.matmul(Phi, self.coef_, out=out[start:stop])
        return out

    @property
    def n_features_out_(self) -> int:
        """Number of random features with a non-zero coefficient."""
        check_is_fitted(self)
        return int(np.count_nonzero(np.any(self.coef_ != 0, axis=1)))


class _ClassifierTargets(ClassifierMixin):
    def _fit_targets(self, X, y):
        X, y = check_X_y(X, y)
        self.classes_, Y = encode_classes(y)
        return X, Y

    def decision_function(self, X) -> np.ndarray:
        """f(x) per class: shape (n,) for two classes (positive: classes_[1]), else (n, k)."""
        D = self._raw_decision(X)
        return D[:, 0] if D.shape[1] == 1 else D

    def predict(self, X) -> np.ndarray:
        D = self._raw_decision(X)
        if D.shape[1] == 1:
            return self.classes_[(D[:, 0] > 0).astype(int)]
        return self.classes_[np.argmax(D, axis=1)]


class _RegressorTargets(RegressorMixin):
    def _fit_targets(self, X, y):
        X, y = check_X_y(X, y, y_numeric=True)
        Y = y[:, None] if y.ndim == 1 else y
        self.y_scaler_ = Standardizer.fit(Y) if self.standardize else None
        self.y_1d_ = y.ndim == 1
        Y = self.y_scaler_.transform(Y) if self.standardize else Y
        return X, np.ascontiguousarray(Y)

    def predict(self, X) -> np.ndarray:
        D = self._raw_decision(X)
        if self.y_scaler_ is not None:
            D = self.y_scaler_.inverse_transform(D)
        return D[:, 0] if self.y_1d_ else D


# ----------------------------------------------------------------------------- RKHS weightings

class _RW(_RandomFeatureModel):
    _family = "rw"

    def _kind(self):
        return check_choice(self.instantiation, "instantiation", tuple(INSTANTIATIONS))

    def _validate(self):
        self._kind()
        check_scalar(self.eps, "eps", low=0.0)
        return super()._validate()

    def _make_map(self, seed):
        return make_instantiation(self._kind(), n_features=self.n_features, sigma=self.sigma,
                                  gamma=self.gamma, theta=self.theta, kappa=self.kappa,
                                  random_state=seed)

    def rkhs_norm(self) -> np.ndarray | float:
        """||alpha||_H = sqrt(a^T G a) of the learned weight function (per output)."""
        check_is_fitted(self)
        norms = self.feature_map_.rkhs_norm(self.coef_)
        return float(norms[0]) if len(norms) == 1 else norms


_RW_DOC = """
    Parameters
    ----------
    instantiation : {"rwsign", "rwexpsign", "rwrelu", "rwexprelu", "rwstumps"}, default "rwsign"
        The instantiation (W, phi, K, p) of seed 003 Table 2.
    n_features : int, default 1000
        T, the number of random features (centres w_t ~ p).
    solver : str, default "lstsq"
        "lstsq": exact least squares (003 Algorithm 4), accumulated over row blocks.
    reg : float, default 1e-6
        lam in J = (1/m) sum (f - y)^2 / 2 + (lam/2) ||alpha||_H^2.
    sigma : float, default 1.0
        s, standard deviation of the sampling distribution p.
    gamma : float or None, default None
        g, kernel width. None: from theta (RWSign, RWRelu) or kappa (RWExpSign, RWExpRelu) by
        003 Table 4, and gamma = sigma for RWStumps. An explicit value overrides the rule.
    theta : float in (0, 1), default 0.5
        Target theta for RWSign/RWRelu when gamma is None.
    kappa : float > 1, default 2.0
        Target kappa for RWExpSign/RWExpRelu when gamma is None.
    eps : float, default 1e-10
        Ridge term m eps I added to the normal equations (003 eq. 82) for conditioning.
    standardize : bool, default True
        Standardise X (and y for the regressor) with training statistics (003 Appendix C).
    bias : bool, default True
        Append a constant column for the dot-product instantiations (not RWStumps).
    block_size : int or None, default None
        Rows per block in the accumulation of Phi^T Phi (None: about 32 MB of features).
    random_state : int, Generator or None, default None
        Seed of the feature draw; the same seed gives the same model whatever the thread count.

    Attributes
    ----------
    coef_ : ndarray (T, k)
        Coefficients a on the features (one column per class or output).
    feature_map_ : RKHSWeighting
        The fitted instantiation (centres, gamma_, theta_, kappa_).
    x_scaler_, bias_ : the recorded preprocessing.
    n_features_in_ : int
    fit_time_ : float, seconds.
    solver_info_ : dict, what the solver reports (jitter, iterations, convergence).
"""


class RWClassifier(_ClassifierTargets, _RW):
    __doc__ = ("RKHS-weighting classifier (Dube & Marchand, seed 003): binary, or multiclass "
               "one-vs-rest on shared features; targets coded +/-1.\n" + _RW_DOC +
               "    classes_ : ndarray, the class labels.\n")

    def __init__(self, instantiation="rwsign", n_features=1000, solver="lstsq", reg=1e-6,
                 sigma=1.0, gamma=None, theta=0.5, kappa=2.0, eps=1e-10, standardize=True,
                 bias=True, block_size=None, random_state=None):
        self.instantiation = instantiation
        self.n_features = n_features
        self.solver = solver
        self.reg = reg
        self.sigma = sigma
        self.gamma = gamma
        self.theta = theta
        self.kappa = kappa
        self.eps = eps
        self.standardize = standardize
        self.bias = bias
        self.block_size = block_size
        self.random_state = random_state


class RWRegressor(_RegressorTargets, _RW):
    __doc__ = ("RKHS-weighting regressor (Dube & Marchand, seed 003); y may have several "
               "columns.\n" + _RW_DOC + "    y_scaler_ : the recorded target standardisation.\n")

    def __init__(self, instantiation="rwsign", n_features=1000, solver="lstsq", reg=1e-6,
                 sigma=1.0, gamma=None, theta=0.5, kappa=2.0, eps=1e-10, standardize=True,
                 bias=True, block_size=None, random_state=None):
        self.instantiation = instantiation
        self.n_features = n_features
        self.solver = solver
        self.reg = reg
        self.sigma = sigma
        self.gamma = gamma
        self.theta = theta
        self.kappa = kappa
        self.eps = eps
        self.standardize = standardize
        self.bias = bias
        self.block_size = block_size
        self.random_state = random_state


# ----------------------------------------------------------------------------- kitchen sinks

class _RKS(_RandomFeatureModel):
    _family = "rks"

    def _kind(self):
        return check_choice(self.base, "base", RKS_BASES)

    def _validate(self):
        if self._kind() == "fourier":
            check_choice(self.kernel, "kernel", FOURIER_KERNELS)
        return super()._validate()

    def _make_map(self, seed):
        kind = self._kind()
        if kind == "fourier":
            return RandomFourierFeatures(n_features=self.n_features, kernel=self.kernel,
                                         sigma=self.sigma, variant="phase", random_state=seed)
        return KITCHEN_BASES[kind](n_features=self.n_features, sigma=self.sigma,
                                   random_state=seed)


_RKS_DOC = """
    Parameters
    ----------
    base : {"sign", "relu", "stumps", "fourier"}, default "relu"
        Base predictor phi(w, x): sign(<w, x>), max(0, <w, x>), sign(x_{w1} - w2) with the
        distributions of the RKHS weightings (seed 003 Table 2), or random Fourier features
        sqrt(2/T) cos(<w, x> + b) of ``kernel``.
    n_features : int, default 1000
        T, the number of random features.
    solver : str, default "ridge"
        "ridge": (Psi^T Psi + m lam I) a = Psi^T y, accumulated over row blocks (003 Algorithm 1).
    reg : float, default 1e-6
        lam in J = (1/m) sum (f - y)^2 / 2 + (lam/2) ||a||^2, features scaled by 1/sqrt(T).
    sigma : float, default 1.0
        Standard deviation of p (sign/relu/stumps) or the kernel bandwidth (fourier).
    kernel : {"gaussian", "laplacian", "cauchy"}, default "gaussian"
        Kernel of the Fourier features (base="fourier" only).
    standardize, bias, block_size, random_state
        As for the RKHS weightings (bias only for sign and relu).

    Attributes
    ----------
    coef_ : ndarray (T, k); feature_map_ : the fitted map; x_scaler_, bias_; n_features_in_;
    fit_time_; solver_info_.
"""


class RKSClassifier(_ClassifierTargets, _RKS):
    __doc__ = "Random kitchen sinks classifier (Rahimi & Recht; seed 003 Section 3.1).\n" + _RKS_DOC

    def __init__(self, base="relu", n_features=1000, solver="ridge", reg=1e-6, sigma=1.0,
                 kernel="gaussian", standardize=True, bias=True, block_size=None,
                 random_state=None):
        self.base = base
        self.n_features = n_features
        self.solver = solver
        self.reg = reg
        self.sigma = sigma
        self.kernel = kernel
        self.standardize = standardize
        self.bias = bias
        self.block_size = block_size
        self.random_state = random_state


class RKSRegressor(_RegressorTargets, _RKS):
    __doc__ = "Random kitchen sinks regressor (Rahimi & Recht; seed 003 Section 3.1).\n" + _RKS_DOC

    def __init__(self, base="relu", n_features=1000, solver="ridge", reg=1e-6, sigma=1.0,
                 kernel="gaussian", standardize=True, bias=True, block_size=None,
                 random_state=None):
        self.base = base
        self.n_features = n_features
        self.solver = solver
        self.reg = reg
        self.sigma = sigma
        self.kernel = kernel
        self.standardize = standardize
        self.bias = bias
        self.block_size = block_size
        self.random_state = random_state
