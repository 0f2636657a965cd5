"""MonteCarloRKHS: the RKHS weighting of any instantiation (p, K, phi), by Monte Carlo.

psi_t(x) = E_{w~p}[K(u_t, w) phi(w, x)] is estimated from S draws shared by every centre
(rwtool.features._montecarlo: the registries of distributions, kernels and bases, the draws,
the kernel sections and the integrator); the Gram matrix G_ij = K(u_i, u_j) is exact. The map
follows the closed forms' conventions (rwtool.features._rkhs.RKHSWeighting), so the estimators,
the solvers and model files treat it like them.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .._params import Param, params_table
from ._base import DTYPE, N_FEATURES, RANDOM_STATE, SIGMA, RowMaxima, row_norms
from ._montecarlo import (BASES, DISTRIBUTIONS, Integrator, KERNELS, MC_DEFAULT_THETA,
                          MonteCarloDraws, N_DRAWS, SAMPLING, base_into, check_state,
                          kernel_sections, resolve_n_draws, resolve_sampling, sample_draws,
                          use_antithetic, warn_if_sparse, _BLOCK_ELEMENTS, _KAPPA_DRAWS,
                          _THETA_DRAWS, _check_layout, _check_sampler, _compile_check,
                          _function_name, _gram, _lookup, _nan_max, _piece, _raw_diag, _raw_kernel,
                          _user_kernel_diag, _user_kernel_into)
from ._rkhs import GAMMA, KAPPA, NORMALIZE, RKHSWeighting, THETA, gamma_from_kappa, gamma_from_theta


__all__ = ["MonteCarloRKHS"]


class MonteCarloRKHS(RKHSWeighting):
    """RKHS weighting of any instantiation (p, K, phi) with Monte Carlo features.

    psi_t(x) ~ (1/S) sum_s K(u_t, w_s) phi(w_s, x) with draws w_s ~ p shared by every centre
    u_t ~ p (module docstring); G_ij = K(u_i, u_j) exactly. theta_ and kappa_ are Monte Carlo
    estimates over the rows given to ``fit``: kappa^2 = sup_x E_w[K(w, w) phi(w, x)^2] and
    theta^2 = sup_x E_{w, w'}[K(w, w') phi(w, x) phi(w', x)] = sup_x ||psi_x||_H^2 (003 Table 2's
    quantities; the table gives bounds on them for the five closed forms).

    Parameters
    ----------
    distribution : str, default "normal"
        p: "normal" N(0, s^2 I), "cauchy" (scale s per coordinate), "laplace" (scale s),
        "uniform" U(-s, s)^n, "stumps" U{0..n-1} x N(0, s^2), or a registered sampler.
    kernel : str, default "gaussian"
        K(u, w): "gaussian" exp(-||u - w||^2 / 2g^2), "exponential" exp(<u, w> / 2g^2),
        "indicator-gaussian" 1[u1 = w1] exp(-(u2 - w2)^2 / 2g^2), "polynomial"
        (1 + <u, w> / g^2)^degree, or a registered numba function.
    base : str, default "sign"
        phi(w, x): "sign", "relu", "tanh", "sigmoid" of <w, x>, "stump" sign(x_{w1} - w2), or a
        registered numba function.
    n_features : int, default 1000
        T, the number of centres.
    n_draws : int or None, default None
        S, the number of shared draws (None: 4 T).
    sigma : float, default 1.0
        Scale of the built-in distributions.
    gamma : float or None, default None
        Kernel width. None: the theta rule (gaussian kernel), the kappa rule (exponential), sigma
        (indicator-gaussian) or sigma sqrt(d) (polynomial), as for the closed forms with d the
        dimension of w (003 Table 4; a heuristic for the non-normal distributions).
    theta : float in (0, 1) or None, default None
        Target of the theta rule of the Gaussian kernel; None: ``MC_DEFAULT_THETA`` = 0.5 (not
        the closed forms' 0.1, which makes the kernel too narrow for Monte Carlo sections).
    kappa : float > 1, default 10.0
        Target of the kappa rule of the exponential kernel (as RWExpSign; the same default,
        measured for both, docs/bench/instantiation_defaults.md).
    degree : int, default 2
        Degree of the polynomial kernel.
    sampling : {"auto", "mc", "qmc"}, default "auto"
        "qmc": scrambled Sobol points through the inverse CDF (built-in distributions; S rounded
        up to a power of two); "mc": plain draws; "auto": qmc where possible (user samplers have
        no inverse CDF), since it converges faster (docs/INSTANTIATIONS.md).
    normalize : bool, default True
        Exponential kernel: use the normalised sections (same model, no overflow; rkhs.py).
    random_state : int, Generator or None
        Seed of the centres, then of the draws.
    """

    def _draws_layout(self):
        return _lookup("base", self.base), _lookup("kernel", self.kernel)

    name = "mc"
    constants_are_estimates = True

    _parameters = params_table(
        _piece("distribution", DISTRIBUTIONS, "p, the distribution of w (scale sigma)"),
        _piece("kernel", KERNELS, "K(u, w), the kernel of the weight function"),
        _piece("base", BASES, "phi(w, x), the base predictor"),
        dataclasses.replace(N_FEATURES, help="T, the number of centres"), N_DRAWS,
        dataclasses.replace(SIGMA, help="the scale of the built-in distributions"),
        dataclasses.replace(GAMMA, none="the theta rule (gaussian), the kappa rule "
                            "(exponential), sigma (indicator-gaussian) or sigma sqrt(d) "
                            "(polynomial)"),
        THETA, KAPPA,
        Param("degree", "int", 2, "the degree of the polynomial kernel", interval="[1, inf)"),
        SAMPLING, NORMALIZE, RANDOM_STATE, DTYPE)

    def __init__(self, distribution="normal", kernel="gaussian", base="sign", n_features=1000,
                 n_draws=None, sigma=1.0, gamma=None, theta=None, kappa=10.0, degree=2,
                 sampling="auto", normalize=True, random_state=None, dtype="float64"):
        self.distribution = distribution
        self.kernel = kernel
        self.base = base
        self.n_features = n_features
        self.n_draws = n_draws
        self.sigma = sigma
        self.gamma = gamma
        self.theta = theta
        self.kappa = kappa
        self.degree = degree
        self.sampling = sampling
        self.normalize = normalize
        self.random_state = random_state
        self.dtype = dtype

    @property
    def label(self) -> str:
        return f"Monte Carlo instantiation ({self.distribution}, {self.kernel}, {self.base})"

    def theta_rule(self) -> float | None:
        if self.gamma is not None or _lookup("kernel", self.kernel) != "gaussian":
            return None
        return MC_DEFAULT_THETA if self.theta is None else float(self.theta)

    def gamma_rule(self, n_in: int) -> tuple[float, str]:
        """As for the closed forms, with ``n_in`` the dimension d of w: "sigma sqrt(d)" for the
        polynomial kernel, "sigma" for the indicator-gaussian one (user kernels ignore it)."""
        kernel = _lookup("kernel", self.kernel)
        s = float(self.sigma)
        if self.gamma is not None:
            return float(self.gamma), "given"
        if kernel == "gaussian":
            return gamma_from_theta(n_in, s, self.theta_rule()), "theta"
        if kernel == "exponential":
            return gamma_from_kappa(n_in, s, float(self.kappa)), "kappa"
        if kernel == "polynomial":
            return s * math.sqrt(n_in), "sigma sqrt(d)"
        return s, "sigma"

    def table2_constants(self, n_in: int, gamma: float, x_norm_max: float = 1.0):
        """None: a Monte Carlo instantiation has no closed form (theta_ and kappa_ are estimated
        from the fitted draws)."""
        return None

    def _sample(self, rng, n_in, X):
        dist = _lookup("distribution", self.distribution)
        if not isinstance(dist, str):
            _check_sampler(dist, self.distribution, n_in)
        sigma = float(self.sigma)
        self.W_ = sample_draws(rng, self.distribution, int(self.n_features), n_in, sigma)
        sampling = resolve_sampling(self.distribution, self.sampling, n_in)
        S = resolve_n_draws(self.n_draws, self.n_features, sampling)
        self.mc_ = MonteCarloDraws.draw(rng, self.distribution, S, n_in, sigma, sampling,
                                        use_antithetic(self.distribution, self.base))
        _check_layout(_lookup("base", self.base), _lookup("kernel", self.kernel), self.W_, n_in,
                      self.label)
        if self.mc_.draws_.shape[1] != self.W_.shape[1]:
            raise ValueError(f"{self.label}: the sampler drew centres of dimension "
                             f"{self.W_.shape[1]} but draws of dimension "
                             f"{self.mc_.draws_.shape[1]}; it must return (size, d) with d "
                             f"fixed for a given n_in")
        self.theta_target_ = self.theta_rule()
        self.gamma_, _ = self.gamma_rule(self.W_.shape[1])
        self._check_user_functions(X)

    def _check_user_functions(self, X):
        kernel, base = _lookup("kernel", self.kernel), _lookup("base", self.base)
        x0 = np.ascontiguousarray(X[0]) if X is not None and len(X) else \
            np.zeros(self.n_features_in_)
        if not isinstance(base, str):
            _compile_check(base, f"base {self.base!r} ({_function_name(base)})",
                           (self.W_[0], x0), "phi(w, x)")
        if not isinstance(kernel, str):
            _compile_check(kernel, f"kernel {self.kernel!r} ({_function_name(kernel)})",
                           (self.W_[0], self.W_[0]), "K(u, w)")

    def row_maxima(self, X):
        """The maxima over the rows of ``X`` of ||x||, of the estimate of E_w K(w,w) phi(w,x)^2
        (kappa^2) and of the U-statistic of E_{w,w'} K phi phi (theta^2), each a function of
        the row alone: kappa_ and theta_ are their suprema over the training rows."""
        if not len(X):
            return RowMaxima(0)
        D = self.mc_.draws_
        Dk, Dt = D[:_KAPPA_DRAWS], D[:_THETA_DRAWS]
        kernel = _lookup("kernel", self.kernel)
        if isinstance(kernel, str):
            diag = _raw_diag(kernel, Dk, self.gamma_, int(self.degree))
            Ktt = _raw_kernel(kernel, Dt, Dt, self.gamma_, int(self.degree))
        else:
            diag = np.empty(len(Dk))
            _user_kernel_diag(kernel, Dk, diag)
            Ktt = np.empty((len(Dt), len(Dt)))
            _user_kernel_into(kernel, Dt, Dt, Ktt)
        ktt_diag = np.diag(Ktt).copy()
        S2 = len(Dt)
        kap = the = -math.inf
        step = max(1, _BLOCK_ELEMENTS // len(Dk))
        with np.errstate(all="ignore"):
            for start in range(0, len(X), step):
                Xb = np.ascontiguousarray(X[start:start + step])
                B = base_into(_lookup("base", self.base), Xb, Dk, np.empty((len(Xb), len(Dk))))
                kap = max(kap, _nan_max((B * B) @ diag) / len(Dk))
                Bt = np.ascontiguousarray(B[:, :S2])
                q = np.einsum("is,is->i", Bt @ Ktt, Bt) - (Bt * Bt) @ ktt_diag
                if S2 > 1:
                    the = max(the, _nan_max(q) / (S2 * (S2 - 1)))
        values = {"x_norm": float(row_norms(X).max()), "kappa2": kap}
        if S2 > 1:
            values["theta2"] = the
        return RowMaxima(len(X), values)

    def set_constants(self, maxima):
        """``x_norm_max_``, ``kappa_`` and ``theta_`` from the maxima over the training rows
        (:meth:`row_maxima`; inf where an estimate overflowed); None while no row is seen."""
        if not maxima.n:
            self.x_norm_max_ = self.kappa_ = self.theta_ = None
            return
        v = maxima.values
        self.x_norm_max_ = v["x_norm"]
        kap, the = v["kappa2"], v.get("theta2", 0.0)
        self.kappa_ = math.sqrt(max(kap, 0.0)) if math.isfinite(kap) else math.inf
        self.theta_ = math.sqrt(max(the, 0.0)) if math.isfinite(the) else math.inf

    def _prepare(self):
        kernel = _lookup("kernel", self.kernel)
        check_state(self.W_, self.mc_, int(self.n_features), self.label)
        _check_layout(_lookup("base", self.base), kernel, self.W_, self.n_features_in_,
                      self.label)
        self.normalized_ = bool(kernel == "exponential" and self.normalize)
        W, g, deg, norm = self.W_, self.gamma_, int(self.degree), self.normalized_
        self._mc = Integrator(self.mc_.draws_,
                              lambda: kernel_sections(self.kernel, self.mc_.draws_, W, g, deg,
                                                      norm),
                              self.base, self.label, self.mc_.antithetic,
                              W[:, 0] if kernel == "indicator-gaussian" else None, len(W))

    def fit(self, X, y=None):
        """Sample the centres and the shared draws; build the sections (and check them)."""
        super().fit(X)
        warn_if_sparse(self._mc, self.label, self.gamma_, self.W_.shape[1], stacklevel=3)
        return self

    def _features_into(self, X, out):
        self._mc.features_into(X, out)

    def _onnx(self, g, x):
        """The features as ONNX nodes on ``g`` (rwtool.persist's Graph): the integrator's."""
        return self._mc._onnx(g, x)

    def base_predictor(self, X):
        """phi(u_t, x_i) for the centres (what tau in bounds() averages)."""
        out = np.empty((X.shape[0], self.W_.shape[0]))
        return base_into(_lookup("base", self.base), np.ascontiguousarray(X), self.W_, out)

    def kernel_matrix(self, rows=None, cols=None):
        A = self.W_ if rows is None else self.W_[rows]
        B = self.W_ if cols is None else self.W_[cols]
        return _gram(self.kernel, np.ascontiguousarray(A), np.ascontiguousarray(B),
                     self.gamma_, int(self.degree), self.normalized_)
