"""``rwtool.Instantiation``: an RKHS-weighting instantiation (p, K, phi) built from pieces.

An Instantiation names a distribution p, a kernel K and a base predictor phi (built-in names or
user functions, which it registers under their names) and is accepted wherever an instantiation
name is: ``RWClassifier(instantiation=...)``, ``RWRegressor``, tuning, model files, and by name
in the CLI and the app. Its features are Monte Carlo estimates (rwtool.features._montecarlo).
Names resolve as

- "rwsign", "rwexpsign", "rwrelu", "rwexprelu", "rwstumps": the closed forms (rkhs.py);
- "mc:<distribution>:<kernel>:<base>[:<n_draws>][:<sampling>]": built-in pieces, e.g.
  "mc:cauchy:gaussian:relu" or "mc:normal:polynomial:tanh:4000:mc";
- the ``name`` of an Instantiation built in this session.

This module resolves and builds; it computes no features.
"""

from __future__ import annotations

from .._base import BaseEstimator, check_choice
from ._montecarlo import (BASES, DISTRIBUTIONS, DOT_BASES, KERNELS, SAMPLINGS, check_mc_params,
                          register_base, register_distribution, register_kernel, registered)
from ._rkhs_mc import MonteCarloRKHS
from ._rkhs import INSTANTIATIONS, check_theta, make_instantiation

__all__ = ["Instantiation", "register_distribution", "register_kernel", "register_base",
           "registered", "resolve", "make_feature_map", "resolved_theta", "uses_bias",
           "instantiation_names", "DISTRIBUTIONS", "KERNELS", "BASES"]

_NAMED: dict[str, "Instantiation"] = {}
_REGISTER = {"distribution": register_distribution, "kernel": register_kernel,
             "base": register_base}


def _piece(kind, value):
    """A name for ``value``: built-in names pass through, functions are registered."""
    if isinstance(value, str):
        return value
    if callable(value):
        py = getattr(value, "py_func", value)
        return _REGISTER[kind](getattr(py, "__name__", ""), value)
    raise TypeError(f"{kind} must be a name or a function, got {type(value).__name__}")


class Instantiation(BaseEstimator):
    """An RKHS-weighting instantiation (p, K, phi) with Monte Carlo features (seed 003 Sec. 4.5).

    psi_u(x) = E_{w~p}[K(u, w) phi(w, x)] is estimated with ``n_draws`` draws shared by every
    centre (rwtool.features.MonteCarloRKHS); G_ij = K(u_i, u_j) is exact; theta and kappa are
    Monte Carlo estimates. The estimator that uses it supplies sigma (the scale of the built-in
    distributions), gamma (the kernel width) and theta/kappa (the rules that set gamma).

    Parameters
    ----------
    distribution : str or function, default "normal"
        "normal", "cauchy", "laplace", "uniform", "stumps" (U{0..n-1} x N(0, s^2)), or
        ``sample(rng, size, n_in) -> (size, d) array`` drawing with the Generator it is given.
    kernel : str or function, default "gaussian"
        "gaussian", "exponential", "indicator-gaussian" (stumps), "polynomial", or a function
        K(u, w) -> float on 1-D float arrays (compiled with numba).
    base : str or function, default "sign"
        "sign", "relu", "tanh", "sigmoid" (of <w, x>), "stump", or phi(w, x) -> float (numba).
    name : str or None
        The name the app, the CLI and ``RWClassifier(instantiation=name)`` know it by in this
        session (None: the "mc:..." spelling of built-in pieces, or the functions' names).
    n_draws : int or None, default None
        S, the number of shared draws (None: 4 n_features; docs/INSTANTIATIONS.md).
    sampling : {"auto", "mc", "qmc"}, default "auto"
        Scrambled Sobol points through the inverse CDF where p is built in ("auto", "qmc"), or
        plain Monte Carlo ("mc").
    degree : int, default 2
        Degree of the "polynomial" kernel (1 + <u, w> / gamma^2)^degree.
    bias : bool or None, default None
        Whether the estimator appends a constant column for this base (None: for the <w, x>
        bases sign/relu/tanh/sigmoid, not for stumps and user bases).

    Functions are registered under their ``__name__`` (see :func:`register_base`); a model file
    stores the names, so loading a model of a user function needs it registered again (build
    the same Instantiation, or call the register function) before ``rwtool.load``.
    """

    def __init__(self, distribution="normal", kernel="gaussian", base="sign", name=None,
                 n_draws=None, sampling="auto", degree=2, bias=None):
        self.distribution = _piece("distribution", distribution)
        self.kernel = _piece("kernel", kernel)
        self.base = _piece("base", base)
        self.name = name
        self.n_draws = n_draws
        self.sampling = sampling
        self.degree = degree
        self.bias = bias
        if name is not None:
            if not isinstance(name, str) or not name or name.lower() in INSTANTIATIONS \
                    or name.lower().startswith("mc:"):
                raise ValueError(f"name must be a new non-empty string (not a closed-form name "
                                 f"or an 'mc:' spelling), got {name!r}")
            _NAMED[name] = self

    @property
    def label(self) -> str:
        """The name the CLI and the app show."""
        if self.name:
            return self.name
        out = f"mc:{self.distribution}:{self.kernel}:{self.base}"
        if self.n_draws is not None:
            out += f":{int(self.n_draws)}"
        if self.sampling != "auto":
            out += f":{self.sampling}"
        return out

    def validate(self):
        check_mc_params(self.n_draws, self.sampling)
        if self.bias is not None and not isinstance(self.bias, bool):
            raise ValueError(f"bias must be True, False or None, got {self.bias!r}")
        return self

    def make_map(self, n_features, sigma=1.0, gamma=None, theta=None, kappa=10.0,
                 random_state=None, dtype="float64") -> MonteCarloRKHS:
        """The (unfitted) Monte Carlo feature map with T = ``n_features`` centres (theta=None:
        ``MC_DEFAULT_THETA`` for a Gaussian kernel)."""
        self.validate()
        return MonteCarloRKHS(distribution=self.distribution, kernel=self.kernel,
                              base=self.base, n_features=n_features, n_draws=self.n_draws,
                              sigma=sigma, gamma=gamma, theta=theta, kappa=kappa,
                              degree=self.degree, sampling=self.sampling,
                              random_state=random_state, dtype=dtype)

    @property
    def uses_bias(self) -> bool:
        if self.bias is not None:
            return bool(self.bias)
        return self.base.lower() in DOT_BASES


def parse(spec: str) -> Instantiation:
    """Instantiation of an "mc:<distribution>:<kernel>:<base>[:<n_draws>][:<sampling>]" name."""
    parts = spec.split(":")
    if len(parts) < 4 or len(parts) > 6 or parts[0].lower() != "mc":
        raise ValueError(f"{spec!r}: write mc:<distribution>:<kernel>:<base>[:<n_draws>]"
                         f"[:<sampling>], e.g. mc:cauchy:gaussian:relu or "
                         f"mc:normal:polynomial:tanh:4000:mc")
    n_draws, sampling = None, "auto"
    for extra in parts[4:]:
        if extra.isdigit():
            n_draws = int(extra)
        else:
            sampling = check_choice(extra, "sampling", SAMPLINGS)
    dist = check_choice(parts[1], "distribution", DISTRIBUTIONS + tuple(registered("distribution")))
    kern = check_choice(parts[2], "kernel", KERNELS + tuple(registered("kernel")))
    base = check_choice(parts[3], "base", BASES + tuple(registered("base")))
    return Instantiation(dist, kern, base, n_draws=n_draws, sampling=sampling)


def resolve(instantiation):
    """A closed-form name (lower case) or an :class:`Instantiation` for what a user passed."""
    if isinstance(instantiation, Instantiation):
        return instantiation.validate()
    if not isinstance(instantiation, str):
        raise TypeError(f"instantiation must be a name or an rwtool.Instantiation, got "
                        f"{type(instantiation).__name__}")
    key = instantiation.lower()
    if key in INSTANTIATIONS:
        return key
    if key.startswith("mc:"):
        return parse(instantiation).validate()
    if instantiation in _NAMED:
        return _NAMED[instantiation].validate()
    raise ValueError(f"unknown instantiation {instantiation!r}; choose one of "
                     f"{', '.join(instantiation_names())}, an 'mc:<distribution>:<kernel>:"
                     f"<base>' name, or pass an rwtool.Instantiation")


def instantiation_names() -> tuple:
    """Closed-form names, then the names of the Instantiations built in this session."""
    return tuple(INSTANTIATIONS) + tuple(_NAMED)


def make_feature_map(instantiation, n_features, sigma=1.0, gamma=None, theta=None, kappa=10.0,
                     random_state=None, dtype="float64"):
    """The unfitted feature map of a closed-form name or an Instantiation (see :func:`resolve`).

    theta=None is the instantiation's own default (:func:`resolved_theta`).
    """
    inst = resolve(instantiation)
    if isinstance(inst, str):
        return make_instantiation(inst, n_features=n_features, sigma=sigma, gamma=gamma,
                                  theta=theta, kappa=kappa, random_state=random_state,
                                  dtype=dtype)
    return inst.make_map(n_features, sigma, gamma, theta, kappa, random_state, dtype)


def resolved_theta(instantiation, theta=None, gamma=None):
    """The theta the gamma rule of ``instantiation`` uses, or None when it uses none.

    theta=None resolves per kind: ``DEFAULT_THETA`` (0.1) for the closed-form RWSign and RWRelu,
    ``MC_DEFAULT_THETA`` (0.5) for a Monte Carlo Gaussian kernel (both measured,
    docs/bench/instantiation_defaults.md). Exponential, stump and polynomial kernels, user
    kernels and an explicit gamma use no theta.
    """
    check_theta(theta)
    # the map's own rule, read before fitting: one source for the fit and for what is shown
    return make_feature_map(instantiation, n_features=1, gamma=gamma,
                            theta=theta).theta_rule()


def uses_bias(instantiation) -> bool:
    """Whether the estimators append the constant column for this instantiation."""
    inst = resolve(instantiation)
    if isinstance(inst, str):
        return inst != "rwstumps"
    return inst.uses_bias
