"""Monte Carlo features of any RKHS-weighting instantiation (p, K, phi), closed form or not.

Seed 003 needs psi_u(x) = E_{w~p}[K(u, w) phi(w, x)] in closed form and names Monte Carlo as the
way out (Sections 4.5 and 8). With S draws w_1..w_S ~ p shared by every centre (common random
numbers), the estimate for the T centres u_1..u_T is one matrix product

    Psi(X) = (1/S) phi(X; w_1..w_S) K(w_1..w_S; u_1..u_T)          (m x S) (S x T)

computed row by row in a fixed order (rwtool.features._rowwise), so that a row's features are
the same bits whatever block of rows it comes in; the S x T matrix of kernel sections is built
once. G_ij = K(u_i, u_j) is exact. theta and kappa (003 Table 2) have no closed form in general:
the map estimates them by Monte Carlo over the training rows (``constants_are_estimates``).

Pieces are named: built-in distributions, kernels and bases, or user functions registered with
:func:`register_distribution`, :func:`register_kernel`, :func:`register_base` (numba-compiled,
looked up by name only, so a model file stores names and never code). Draws are serial and come
from the seeded Generator, and no product's order depends on the threads, so features do not
depend on the thread count. ``sampling="qmc"`` pushes scrambled Sobol points through the
distribution's inverse CDF.

This module is the Monte Carlo core: the registries, the draws, the kernel sections and the
integrator, which the closed forms' ``closed_form=False`` option (_rkhs) and MonteCarloRKHS
(_rkhs_mc) share. It computes features; it does not learn, holds no closed form and must not
import the feature maps built on it.
"""

from __future__ import annotations

import functools
import inspect
import math
import re
import warnings

import numpy as np
from numba import njit
from numba.core.registry import CPUDispatcher

from .._base import BaseEstimator
from .._params import Param
from ..resources import FitEstimate, check_memory
from ..threads import run_row_shares
from ._base import dot_into
from ._kernels import _gaussian_gram, _stump_gram
from ._kitchen import sample_gaussian, sample_stumps, stump_sign_into
from ._rowwise import (PHI, dot_base_rows, pad_rows, phi_inplace, rows_times,
                       stump_prefix_rows)

__all__ = ["MonteCarloDraws", "MC_DEFAULT_THETA", "DISTRIBUTIONS", "KERNELS",
           "BASES", "DOT_BASES", "SAMPLINGS", "register_distribution", "register_kernel",
           "register_base", "registered", "sample_draws", "kernel_sections", "base_into",
           "Integrator"]

DISTRIBUTIONS = ("normal", "cauchy", "laplace", "uniform", "stumps")
KERNELS = ("gaussian", "exponential", "indicator-gaussian", "polynomial")
BASES = ("sign", "relu", "stump", "tanh", "sigmoid")
#: bases that read <w, x>: w has one entry per input column, and the estimators add a bias column
DOT_BASES = ("sign", "relu", "tanh", "sigmoid")
#: theta of a Gaussian kernel when theta=None. Not the closed forms' 0.1 (rkhs.DEFAULT_THETA):
#: a small theta makes the kernel narrow against the parameter space, so the sections rest on
#: few draws (RWClassifier("mc:cauchy:gaussian:relu", n_features=300) on breast cancer: test
#: error 0.049 at 0.5, 0.126 at 0.1; docs/bench/instantiation_defaults.md)
MC_DEFAULT_THETA = 0.5
#: rows of phi(X; draws) held at once by the feature loop (about 32 MB of float64)
_BLOCK_ELEMENTS = 4_000_000
#: bound on the features (given ||x||_inf <= 1) below which the product runs in float32 (max 3.4e38)
_FLOAT32_REACH = 1e30
#: draws used for the estimates of kappa and theta (theta's is quadratic in them)
_KAPPA_DRAWS, _THETA_DRAWS = 512, 256
#: median effective number of draws per centre below which the features are called mostly zero
_MIN_EFFECTIVE_DRAWS = 5.0
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")

#: Monte Carlo features: the closed forms' closed_form=False, and every MonteCarloRKHS
SAMPLINGS = ("auto", "mc", "qmc")
N_DRAWS = Param("n_draws", "int", None, "S, the number of Monte Carlo draws shared by every "
                "centre", interval="[1, inf)", none="4 n_features")
SAMPLING = Param("sampling", "choice", "auto", "qmc: scrambled Sobol points through p's inverse "
                 "CDF; mc: plain draws; auto: qmc where p has one", choices=SAMPLINGS)


# ============================================================================ numba kernels

# Not cached: a kernel taking a user's function is compiled for that function in every
# process. Sequential, their rows shared among threads (rwtool.threads).

@njit(nogil=True)
def _user_base_rows(phi, D, X, out, a, b):
    """out[i, s] <- phi(D[s], X[i]) for a user's numba function, rows a <= i < b."""
    for i in range(a, b):
        for s in range(D.shape[0]):
            out[i, s] = phi(D[s], X[i])


@njit(nogil=True)
def _user_kernel_rows(K, A, B, out, a, b):
    """out[i, j] <- K(A[i], B[j]) for a user's numba kernel, rows a <= i < b."""
    for i in range(a, b):
        for j in range(B.shape[0]):
            out[i, j] = K(A[i], B[j])


@njit(nogil=True)
def _user_kernel_diag_rows(K, A, out, a, b):
    for i in range(a, b):
        out[i] = K(A[i], A[i])


def _user_base_into(phi, D, X, out):
    run_row_shares(lambda a, b: _user_base_rows(phi, D, X, out, a, b), X.shape[0],
                   D.shape[0] * D.shape[1])


def _user_kernel_into(K, A, B, out):
    run_row_shares(lambda a, b: _user_kernel_rows(K, A, B, out, a, b), A.shape[0],
                   B.shape[0] * A.shape[1])


def _user_kernel_diag(K, A, out):
    run_row_shares(lambda a, b: _user_kernel_diag_rows(K, A, out, a, b), A.shape[0],
                   A.shape[1])


# ============================================================================ registry

_USER: dict[str, dict[str, object]] = {"distribution": {}, "kernel": {}, "base": {}}
_BUILTIN = {"distribution": DISTRIBUTIONS, "kernel": KERNELS, "base": BASES}
_ARITY = {"distribution": ("rng", "size", "n_in"), "kernel": ("u", "w"), "base": ("w", "x")}
_REGISTER_FN = {"distribution": "register_distribution", "kernel": "register_kernel",
                "base": "register_base"}


def _function_name(func) -> str:
    py = getattr(func, "py_func", func)
    return getattr(py, "__name__", type(func).__name__)


def _register(kind: str, name, func) -> str:
    if not callable(func):
        raise TypeError(f"{_REGISTER_FN[kind]}({name!r}, ...) needs a function, got "
                        f"{type(func).__name__}")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"a {kind} needs a name made of letters, digits, '_', '.', '-' (it is "
                         f"stored in model files), got {name!r}; lambdas have none: define the "
                         f"function with def or call rwtool.{_REGISTER_FN[kind]}('name', func)")
    if name.lower() in _BUILTIN[kind]:
        raise ValueError(f"{name!r} is a built-in {kind}; register yours under another name")
    py = getattr(func, "py_func", func)
    try:
        params = [p for p in inspect.signature(py).parameters.values()
                  if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY,
                                                         p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = None
    want = _ARITY[kind]
    if params is not None and len(params) != len(want):
        raise TypeError(f"{kind} {name!r} ({_function_name(func)}) takes {len(params)} "
                        f"argument(s); it must be {_function_name(func)}({', '.join(want)})")
    old = _USER[kind].get(name)
    old_code = getattr(getattr(old, "py_func", old), "__code__", None)
    if old is not None and getattr(old_code, "co_code", None) != getattr(
            getattr(py, "__code__", None), "co_code", None):
        warnings.warn(f"{kind} {name!r} was registered with another function; models fitted "
                      f"from now on use the new one (a model file names the {kind}, so load "
                      f"each with the function it was trained with)", UserWarning, stacklevel=3)
    if kind != "distribution" and not isinstance(func, CPUDispatcher):
        func = njit(cache=False)(func)  # compiled (or refused) on the first fit that uses it
    _USER[kind][name] = func
    return name


def register_distribution(name: str, sampler) -> str:
    """Make ``sampler(rng, size, n_in) -> (size, d) array`` usable as distribution ``name``.

    The sampler must draw with the ``numpy.random.Generator`` it is given (never numpy's global
    state), so that the same ``random_state`` gives the same draws; ``fit`` checks this.
    """
    return _register("distribution", name, sampler)


def register_kernel(name: str, func) -> str:
    """Make ``func(u, w) -> float`` (u, w: 1-D float arrays) usable as kernel ``name``.

    A plain Python function is compiled with ``numba.njit``; a function numba cannot compile is
    refused at ``fit`` with numba's reason. K must be positive definite (G = K(u_i, u_j) is the
    regulariser); ``fit`` does not prove it.
    """
    return _register("kernel", name, func)


def register_base(name: str, func) -> str:
    """Make ``func(w, x) -> float`` (w, x: 1-D float arrays) usable as base predictor ``name``."""
    return _register("base", name, func)


def registered(kind: str) -> dict:
    """Name -> function of the user pieces of ``kind`` ("distribution", "kernel", "base")."""
    return dict(_USER[kind])


def _lookup(kind: str, name: str):
    """The built-in name (lower case) or the registered user function of ``name``."""
    if not isinstance(name, str):
        raise TypeError(f"{kind} must be a name, got {type(name).__name__}; pass functions "
                        f"through rwtool.Instantiation or rwtool.{_REGISTER_FN[kind]}")
    if name.lower() in _BUILTIN[kind]:
        return name.lower()
    if name in _USER[kind]:
        return _USER[kind][name]
    raise ValueError(
        f"{kind} {name!r} is neither built in ({', '.join(_BUILTIN[kind])}) nor registered in "
        f"this session: call rwtool.{_REGISTER_FN[kind]}({name!r}, func) (or build the "
        f"rwtool.Instantiation that uses it) before fitting or loading")


# ============================================================================ distributions

def _inverse_cdf(distribution, U, n_in, sigma):
    """Points of (0, 1)^d through the inverse CDF of a built-in distribution."""
    from scipy.special import ndtri      # quasi-Monte Carlo only: keeps scipy.special off import
    U = np.clip(U, 1e-16, 1.0 - 1e-16)
    if distribution == "normal":
        return ndtri(U) * sigma
    if distribution == "cauchy":
        return sigma * np.tan(math.pi * (U - 0.5))
    if distribution == "laplace":
        c = U - 0.5
        return -sigma * np.sign(c) * np.log1p(-2.0 * np.abs(c))
    if distribution == "uniform":
        return sigma * (2.0 * U - 1.0)
    idx = np.minimum(np.floor(U[:, 0] * n_in), n_in - 1)  # stumps
    return np.column_stack([idx, ndtri(U[:, 1]) * sigma])


def _sample_builtin(rng, distribution, size, n_in, sigma):
    if distribution == "normal":
        return sample_gaussian(rng, size, n_in, sigma)
    if distribution == "cauchy":
        return rng.standard_cauchy((size, n_in)) * sigma
    if distribution == "laplace":
        return rng.laplace(0.0, sigma, (size, n_in))
    if distribution == "uniform":
        return rng.uniform(-sigma, sigma, (size, n_in))
    idx, thr = sample_stumps(rng, size, n_in, sigma)
    return np.column_stack([idx.astype(float), thr])


def _check_sampler(sampler, name, n_in):
    """Refuse a user sampler that fails, returns the wrong shape or ignores its Generator."""
    label = f"distribution {name!r} ({_function_name(sampler)})"
    try:
        a = sampler(np.random.default_rng(7), 3, n_in)
        b = sampler(np.random.default_rng(7), 3, n_in)
    except Exception as exc:
        raise ValueError(f"{label} failed when called as sample(rng, 3, {n_in}): "
                         f"{type(exc).__name__}: {exc}") from exc
    a = np.asarray(a, dtype=float) if not isinstance(a, np.ndarray) else a
    if a.ndim != 2 or a.shape[0] != 3 or a.dtype.kind not in "fiub":
        raise ValueError(f"{label} must return a (size, d) array of numbers; sample(rng, 3, "
                         f"{n_in}) returned shape {np.shape(a)}, dtype {a.dtype}")
    if not np.array_equal(a, np.asarray(b, dtype=a.dtype)):
        raise ValueError(f"{label} returned different draws for two Generators with the same "
                         f"seed: draw with the rng argument (e.g. rng.standard_normal), not "
                         f"numpy's global random state, so that random_state fixes the model")


#: distributions symmetric about 0 (w and -w equally likely): antithetic pairs are exact draws
SYMMETRIC = ("normal", "cauchy", "laplace", "uniform")


def use_antithetic(distribution, base) -> bool:
    """Antithetic pairs (w, -w) pay off for a symmetric p and a <w, x> base (see Integrator)."""
    return (isinstance(distribution, str) and distribution.lower() in SYMMETRIC
            and isinstance(base, str) and base.lower() in DOT_BASES)


def sample_draws(rng, distribution, size, n_in, sigma, sampling="mc", antithetic=False):
    """``size`` draws of w ~ p as a C-contiguous (size, d) float array.

    ``sampling="qmc"``: scrambled Sobol points (seeded from ``rng``) through the inverse CDF of a
    built-in distribution; user samplers have no inverse CDF and are refused. ``antithetic``
    (symmetric p, even size): the second half is the first half negated.
    """
    if antithetic:
        half = sample_draws(rng, distribution, size // 2, n_in, sigma, sampling)
        return np.ascontiguousarray(np.vstack([half, -half]))
    dist = _lookup("distribution", distribution)
    if isinstance(dist, str):
        if sampling == "qmc":
            from scipy.stats import qmc      # scipy.stats is slow to import; only qmc needs it
            d = 2 if dist == "stumps" else n_in
            if d > 21201:
                raise ValueError(f"sampling='qmc' supports up to 21201 dimensions (scipy's "
                                 f"Sobol), the parameter space has {d}; use sampling='mc'")
            sobol = qmc.Sobol(d, scramble=True, seed=int(rng.integers(2**63 - 1)))
            with warnings.catch_warnings():  # balance needs 2^k points: callers round S up
                warnings.simplefilter("ignore", UserWarning)
                D = _inverse_cdf(dist, sobol.random(size), n_in, sigma)
        else:
            D = _sample_builtin(rng, dist, size, n_in, sigma)
    else:
        if sampling == "qmc":
            raise ValueError(f"sampling='qmc' needs the inverse CDF of a built-in distribution; "
                             f"distribution {distribution!r} is a user sampler: use "
                             f"sampling='mc'")
        try:
            D = dist(rng, size, n_in)
        except Exception as exc:
            raise ValueError(f"distribution {distribution!r} ({_function_name(dist)}) failed: "
                             f"{type(exc).__name__}: {exc}") from exc
        D = np.asarray(D, dtype=float)
        if D.ndim != 2 or D.shape[0] != size:
            raise ValueError(f"distribution {distribution!r} ({_function_name(dist)}) returned "
                             f"shape {D.shape} for sample(rng, {size}, {n_in}); it must return "
                             f"({size}, d)")
        if not np.isfinite(D).all():
            raise ValueError(f"distribution {distribution!r} ({_function_name(dist)}) returned "
                             f"non-finite draws; it must return finite numbers")
    return np.ascontiguousarray(D, dtype=float)


# ============================================================================ kernels and bases

def _compile_check(func, label, args, signature):
    """Call a user numba function once on real arguments: refuse it with numba's reason."""
    try:
        value = func(*args)
    except Exception as exc:
        first = str(exc).strip().splitlines()
        reason = next((ln.strip() for ln in first if ln.strip()), type(exc).__name__)
        raise ValueError(f"{label} cannot be used as {signature} with 1-D float64 arrays: "
                         f"{type(exc).__name__}: {reason}") from exc
    if not isinstance(value, (float, int, bool, np.floating, np.integer, np.bool_)):
        raise ValueError(f"{label} must return one number for {signature}, returned "
                         f"{type(value).__name__}")


def _raw_kernel(kernel, A, B, gamma, degree):
    """K(A_i, B_j) of a built-in kernel (raw, not normalised)."""
    g2 = gamma * gamma
    if kernel == "gaussian":
        return _gaussian_gram(A, B, 2.0 * g2)
    if kernel == "exponential":
        with np.errstate(over="ignore"):
            return np.exp((A @ B.T) / (2.0 * g2))
    if kernel == "indicator-gaussian":
        return _stump_gram(np.ascontiguousarray(A[:, 0]).astype(np.int64),
                           np.ascontiguousarray(A[:, 1]),
                           np.ascontiguousarray(B[:, 0]).astype(np.int64),
                           np.ascontiguousarray(B[:, 1]), 1.0 / (2.0 * g2))
    return (1.0 + (A @ B.T) / g2) ** degree  # polynomial


def _raw_diag(kernel, A, gamma, degree):
    """K(a, a) for each row of A."""
    sq = np.einsum("ij,ij->i", A, A)
    if kernel in ("gaussian", "indicator-gaussian"):
        return np.ones(len(A))
    if kernel == "exponential":
        with np.errstate(over="ignore"):
            return np.exp(sq / (2.0 * gamma * gamma))
    return (1.0 + sq / (gamma * gamma)) ** degree


def kernel_sections(kernel, D, U, gamma=None, degree=2, normalized=False, label="kernel"):
    """K(w_s, u_t) for draws D (S x d) and centres U (T x d), in the map's basis.

    ``normalized`` (exponential kernel): the sections K(u_t, .) / sqrt(K(u_t, u_t)), i.e.
    exp(<w, u>/(2 g^2) - ||u||^2/(4 g^2)), which stays finite where the raw kernel overflows.
    """
    func = _lookup("kernel", kernel) if isinstance(kernel, str) else kernel
    if not isinstance(func, str):
        out = np.empty((D.shape[0], U.shape[0]))
        _user_kernel_into(func, D, U, out)
        return out
    if func == "exponential" and normalized:
        g2 = gamma * gamma
        E = (D @ U.T) / (2.0 * g2)
        E -= (np.einsum("ij,ij->i", U, U) / (4.0 * g2))[None, :]
        with np.errstate(over="ignore"):
            return np.exp(E, out=E)
    return _raw_kernel(func, D, U, gamma, degree)


def _gram(kernel, A, B, gamma, degree, normalized):
    """K(a_i, b_j) between centres, in the map's basis (normalised exponential: Gaussian 4g^2)."""
    func = _lookup("kernel", kernel)
    if not isinstance(func, str):
        out = np.empty((A.shape[0], B.shape[0]))
        _user_kernel_into(func, A, B, out)
        return out
    if func == "exponential" and normalized:
        return _gaussian_gram(A, B, 4.0 * gamma * gamma)
    return _raw_kernel(func, A, B, gamma, degree)


def base_into(base, X, D, out):
    """out[i, s] <- phi(w_s, x_i) for draws (or centres) D."""
    func = _lookup("base", base) if isinstance(base, str) else base
    if not isinstance(func, str):
        _user_base_into(func, D, X, out)
    elif func == "stump":
        stump_sign_into(X, D[:, 0].astype(np.int64), np.ascontiguousarray(D[:, 1]), 1.0, out)
    else:
        dot_into(X, D, out)
        phi_inplace(out, PHI.index(func))
    return out


def _check_layout(base, kernel, D, n_in, label):
    """The draws must fit the base predictor: <w, x> needs d = n_in, a stump (index, threshold)."""
    d = D.shape[1]
    if isinstance(base, str) and base in DOT_BASES and d != n_in:
        raise ValueError(f"{label}: base {base!r} reads <w, x>, so w needs one entry per input "
                         f"column ({n_in}, bias column included), but the distribution draws "
                         f"w with {d}; use a distribution of that dimension")
    if (base == "stump" or kernel == "indicator-gaussian") and (
            d != 2 or np.any(D[:, 0] != np.floor(D[:, 0]))
            or np.any(D[:, 0] < 0) or np.any(D[:, 0] >= n_in)):
        raise ValueError(f"{label}: base 'stump' and kernel 'indicator-gaussian' need w = "
                         f"(column index in 0..{n_in - 1}, threshold), d = 2; use "
                         f"distribution='stumps'")


# ============================================================================ the integrator

def _concat(parts, dtype):
    return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)


class Integrator:
    """psi_t(x) ~ (1/S) sum_s K(u_t, w_s) phi(w_s, x) with draws shared by all centres.

    Holds the draws, the S x T matrix of sections divided by S (built on first use) and the base
    predictor; ``features_into`` fills a block of rows. The features of a row are a fixed
    function of the row, bit for bit, whatever block it comes in and at any thread count: the
    products run in the fixed-order kernels of ``_rowwise``, not on BLAS, whose rounding depends
    on the shape of the call. Measured savings (docs/INSTANTIATIONS.md):

    * antithetic draws (w, -w) of a symmetric p: phi(-w, x) is -phi (sign, tanh),
      phi - <w, x> (relu) or 1 - phi (sigmoid), so the second half of the draws folds into the
      first half's matrix: phi(X; w_1..w_{S/2}) (K_1 -/+ K_2) plus an exact linear or constant
      term, half the products;
    * the product phi(X; w) K of the <w, x> bases runs in float32 (unless its range could
      overflow): its rounding (~1e-6 relative) is far below the Monte Carlo error (~S^(-1/2));
    * the stump base: with each column's draws sorted by threshold, sign(x_j - w2) is +1 on a
      prefix of them, so their sum is read from a float64 table of prefix sums (two lookups per
      column and row instead of an S x T product); with the indicator kernel a column's table
      holds only the centres on that column.
    """

    def __init__(self, draws, sections, base, label, antithetic=False, columns=None,
                 n_centres=None):
        self.draws = draws
        self._n_centres = 1 if n_centres is None else int(n_centres)
        #: indicator kernel: the column of each centre (K(w, u) = 0 unless w1 = u1), so a
        #: column's draws reach only its centres
        self.columns = None if columns is None else np.asarray(columns, dtype=np.int64)
        self._sections_fn = sections   # () -> S x T matrix of K(w_s, u_t)
        self.base = _lookup("base", base) if isinstance(base, str) else base
        self.base_name = base
        self.label = label
        self.antithetic = bool(antithetic) and self.base in DOT_BASES
        self._KS = None
        self._plan = None

    def sections(self):
        if self._KS is None:
            S = self.draws.shape[0]
            T = self._n_centres
            check_memory(FitEstimate(peak_bytes=16 * S * T + 8 * _BLOCK_ELEMENTS),
                         f"the {S} x {T} kernel sections of {self.label}",
                         fix="lower n_draws (S) or n_features (T): the sections and their "
                             "product plan take about 16 S T bytes")
            K = self._sections_fn()
            if not np.isfinite(K).all():
                raise ValueError(f"{self.label}: the kernel sections K(w_s, u_t) are not all "
                                 f"finite; the kernel overflows or returns NaN for these draws "
                                 f"(raise gamma, lower sigma, or fix the kernel function)")
            K /= self.draws.shape[0]
            self._KS = K
        return self._KS

    def effective_draws(self) -> np.ndarray:
        """(sum_s |K_st|)^2 / sum_s K_st^2 per centre: how many draws carry each section."""
        K = self.sections()
        s1 = np.abs(K).sum(axis=0)
        s2 = np.einsum("st,st->t", K, K)
        with np.errstate(invalid="ignore", divide="ignore"):
            ess = np.where(s2 > 0, s1 * s1 / np.where(s2 > 0, s2, 1.0), 0.0)
        return ess

    def base_block(self, X, out, draws):
        """phi(w_s, x_i) of a user base predictor, refused where it is not finite."""
        base_into(self.base, X, draws, out)
        if not np.isfinite(out).all():
            i, s = np.argwhere(~np.isfinite(out))[0]
            raise ValueError(f"{self.label}: base {self.base_name!r} "
                             f"({_function_name(self.base)}) returned {out[i, s]} for draw "
                             f"{s} and row {i}; it must return finite numbers for every input")
        return out

    def _build_plan(self):
        """What ``features_into`` needs: ("dot", D^T, phi code, M^T, lin^T, constant),
        ("stump", the prefix tables of ``stump_prefix_rows``) or ("user", draws, M^T, groups)."""
        KS = self.sections()
        if self.base == "stump":
            return ("stump",) + self._prefix_tables(KS)
        if not isinstance(self.base, str):
            return self._user_plan(KS)
        D, M, lin, const = self._dot_terms(KS)
        # float32 unless its range could overflow: a feature is at most sum_s |M_st| times
        # max |phi| <= max(1, ||w||_1 ||x||_inf), so float32 holds ||x||_inf up to 3e8 here
        # (an exponential kernel of heavy-tailed draws reaches 1e300: float64)
        reach = np.abs(M).sum(axis=0).max() * max(1.0, np.abs(D).sum(axis=1).max())
        dtype = np.float32 if reach < _FLOAT32_REACH else np.float64
        # the indicator kernel's zeros stay in M: with a <w, x> base it needs n = 2 inputs
        linT = np.zeros((0, D.shape[1]), dtype) if lin is None else pad_rows(lin.T, dtype)
        return ("dot", np.ascontiguousarray(D.T, dtype=dtype), PHI.index(self.base),
                pad_rows(M.T, dtype), linT, const)

    def _dot_terms(self, KS):
        """(D, M, lin, const) of a <w, x> base in float64: the features are
        phi(x D^T) M + x lin + const, the antithetic half of the draws folded into M, lin
        (None for none) and const (empty for none)."""
        D, lin, const = self.draws, None, np.zeros(0)
        M = KS
        if self.antithetic:
            h = D.shape[0] // 2
            K1, K2 = KS[:h], KS[h:]
            D = D[:h]
            if self.base == "relu":
                M, lin = K1 + K2, -(D.T @ K2)
            else:
                M = K1 - K2
                if self.base == "sigmoid":
                    const = K2.sum(axis=0)
        return D, M, lin, const

    #: the ONNX operator of each element-wise base predictor (``_rowwise.PHI``)
    _ONNX_PHI = {"sign": "Sign", "relu": "Relu", "tanh": "Tanh", "sigmoid": "Sigmoid"}

    def _onnx(self, g, x):
        """The features of :meth:`features_into` as ONNX nodes on ``g`` (rwtool.persist's
        Graph): phi(x D^T) M (+ x lin) (+ const) in the graph's dtype -- in a float64 graph
        the exact Monte Carlo estimate, where ``features_into`` may sum in float32 (its
        rounding, about 1e-6 of a feature, is the difference); the stump base as
        sign(x_j - w2) times the sections (the prefix tables' sums, in another order). A
        user's base predictor is Python compiled by numba, which a graph cannot call:
        ValueError naming it (user kernels and samplers export: their sections and draws are
        numbers)."""
        if not isinstance(self.base, str):
            raise ValueError(
                f"{self.label}: base {self.base_name!r} is the user function "
                f"{_function_name(self.base)}() compiled by numba, which an ONNX graph cannot "
                f"call; export needs a built-in base ({', '.join(BASES)}) -- the kernel and "
                f"the distribution may be your own")
        KS = self.sections()
        if self.base == "stump":
            D = self.draws
            B = g.op("Sign", g.sub(g.gather_columns(x, D[:, 0].astype(np.int64)),
                                   g.const(D[:, 1], "thr")))
            return g.matmul(B, g.const(KS, "sections"))
        D, M, lin, const = self._dot_terms(KS)
        z = g.op(self._ONNX_PHI[self.base], g.matmul(x, g.const(D.T, "draws")))
        out = g.matmul(z, g.const(M, "sections"))
        if lin is not None:
            out = g.add(out, g.matmul(x, g.const(lin, "lin")))
        return g.add(out, g.const(const, "const")) if const.shape[0] else out

    def _prefix_tables(self, KS):
        """The arguments of ``stump_prefix_rows``: per column, its draws' thresholds sorted and
        the prefix sums of their sections (only the centres on that column, with the indicator
        kernel)."""
        col, thr = self.draws[:, 0].astype(np.int64), self.draws[:, 1]
        order = np.lexsort((thr, col))
        col, thr = col[order], thr[order]
        cuts = np.flatnonzero(np.diff(col)) + 1
        columns, thresholds, centres, tables = [], [], [], []
        starts, cstarts, pstarts = [0], [0], [0]
        for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(col)]):
            j = col[lo]
            targets = (np.arange(KS.shape[1]) if self.columns is None
                       else np.flatnonzero(self.columns == j))
            if not len(targets):
                continue
            P = np.zeros((hi - lo + 1, len(targets)))
            np.cumsum(KS[np.ix_(order[lo:hi], targets)], axis=0, out=P[1:])
            columns.append(j)
            thresholds.append(thr[lo:hi])
            starts.append(starts[-1] + hi - lo)
            centres.append(targets)
            cstarts.append(cstarts[-1] + len(targets))
            tables.append(P.ravel())
            pstarts.append(pstarts[-1] + P.size)
        return (np.asarray(columns, dtype=np.int64), _concat(thresholds, np.float64),
                np.asarray(starts, dtype=np.int64), _concat(centres, np.int64),
                np.asarray(cstarts, dtype=np.int64), _concat(tables, np.float64),
                np.asarray(pstarts, dtype=np.int64))

    def _user_plan(self, KS):
        """A user base predictor (float64): its draws, M^T, or per column of the indicator
        kernel the draws' range, the centres and their part of M^T."""
        D = self.draws
        if self.columns is None:
            return ("user", D, pad_rows(KS.T, np.float64), None)
        order = np.argsort(D[:, 0], kind="stable")
        D = np.ascontiguousarray(D[order])
        cols = D[:, 0].astype(np.int64)
        groups = []
        for j in np.unique(self.columns):
            lo, hi = np.searchsorted(cols, [j, j + 1])
            centres = np.flatnonzero(self.columns == j)
            if hi > lo:
                groups.append((lo, hi, centres,
                               pad_rows(KS[np.ix_(order[lo:hi], centres)].T, np.float64)))
        return ("user", D, None, groups)

    def _user_features_into(self, X, out, D, MT, groups):
        S = D.shape[0]
        step = max(1, min(X.shape[0], _BLOCK_ELEMENTS // max(1, S)))
        buf = np.empty((step, S))
        for start in range(0, X.shape[0], step):
            stop = min(X.shape[0], start + step)
            B = self.base_block(np.ascontiguousarray(X[start:stop]), buf[: stop - start], D)
            if groups is None:
                rows_times(B, MT, out[start:stop])
                continue
            out[start:stop] = 0.0
            for lo, hi, centres, MTg in groups:
                part = np.empty((stop - start, len(centres)))
                rows_times(B[:, lo:hi], MTg, part)
                out[start:stop, centres] = part

    def features_into(self, X, out):
        if self._plan is None:
            self._plan = self._build_plan()
        kind, *plan = self._plan
        if kind == "dot":
            dot_base_rows(X, *plan, out)
        elif kind == "stump":
            stump_prefix_rows(X, *plan, out)
        else:
            self._user_features_into(X, out, *plan)


# ============================================================================ the maps

class MonteCarloDraws(BaseEstimator):
    """The S shared draws w_1..w_S ~ p of a Monte Carlo feature map (common random numbers).

    A separate object so that the centre arrays of a map (one row per centre) never mix with
    the draws (one row per draw) when a map is restricted or saved. ``draws_`` (S x d) is the
    fitted attribute; ``sampling`` says how they were drawn ("mc" or "qmc").
    """

    def __init__(self, sampling="mc", antithetic=False):
        self.sampling = sampling
        self.antithetic = antithetic

    @classmethod
    def draw(cls, rng, distribution, n_draws, n_in, sigma, sampling, antithetic=False):
        """Draw with ``sampling`` resolved ("auto" -> "qmc" or "mc"); n_draws as given."""
        sampling = resolve_sampling(distribution, sampling, n_in)
        antithetic = bool(antithetic) and int(n_draws) % 2 == 0
        obj = cls(sampling=sampling, antithetic=antithetic)
        obj.draws_ = sample_draws(rng, distribution, int(n_draws), n_in, float(sigma), sampling,
                                  antithetic)
        return obj

    def fitted_state(self) -> dict:
        return {"draws_": self.draws_}


def check_state(centres, draws, n_features, label):
    """A map's centres (T x d) and draws (S x d) agree and are finite (e.g. read from a file)."""
    D = getattr(draws, "draws_", None)
    if not isinstance(draws, MonteCarloDraws) or not isinstance(D, np.ndarray):
        raise ValueError(f"{label}: the Monte Carlo draws are missing")
    if (centres.ndim != 2 or centres.shape[0] != n_features or D.ndim != 2
            or D.shape[0] < 1 or D.shape[1] != centres.shape[1]):
        raise ValueError(f"{label}: centres of shape {centres.shape} and draws of shape "
                         f"{D.shape} do not fit n_features={n_features}")
    if D.dtype.kind != "f" or not (np.isfinite(D).all() and np.isfinite(centres).all()):
        raise ValueError(f"{label}: the centres or the draws are not finite floats")


def resolve_sampling(distribution, sampling, n_in) -> str:
    """"auto": QMC where the distribution has an inverse CDF (built-ins, d <= 21201), else MC."""
    if sampling != "auto":
        return sampling
    builtin = isinstance(_lookup("distribution", distribution), str)
    d = 2 if distribution == "stumps" else n_in
    return "qmc" if builtin and d <= 21201 else "mc"


def resolve_n_draws(n_draws, n_features, sampling) -> int:
    """S: ``n_draws`` or the default 4 T; QMC rounds up to a power of two (Sobol's balance)."""
    S = 4 * int(n_features) if n_draws is None else int(n_draws)
    if sampling == "qmc":
        S = 1 << max(1, math.ceil(math.log2(S)))
    return S + S % 2  # antithetic pairs


def check_mc_params(n_draws, sampling):
    """n_draws and sampling checked by their table entries; the sampling in its spelling."""
    N_DRAWS.validate(n_draws)
    return SAMPLING.validate(sampling)


def _piece(kind: str, pieces: tuple, help: str) -> Param:
    """The entry of a piece of an instantiation: a built-in or registered name."""
    return Param(kind, "choice", pieces[0], help,
                 choices=lambda: pieces + tuple(registered(kind)),
                 check=functools.partial(_lookup, kind), also=(f"a registered {kind}",))


def _nan_max(values) -> float:
    """The largest entry, +inf when one is NaN (an estimate that overflowed is unbounded)."""
    top = float(np.max(values))
    return math.inf if math.isnan(top) else top


def warn_if_sparse(integrator, label, gamma, d, stacklevel=2):
    """Warn when most sections rest on a handful of draws (003 Sec. 4.6's curse of dimension)."""
    ess = integrator.effective_draws()
    med = float(np.median(ess))
    if med < _MIN_EFFECTIVE_DRAWS:
        S = integrator.draws.shape[0]
        g = "" if gamma is None else f"gamma={gamma:.3g} "
        warnings.warn(
            f"{label}: the Monte Carlo features are mostly zero: half the centres rest on "
            f"fewer than {med:.1f} effective draws out of S={S} (the kernel {g}is narrow for "
            f"the {d}-dimensional parameter space, seed 003 Sec. 4.6); raise gamma (or leave "
            f"gamma=None so theta/kappa set it), or raise n_draws", RuntimeWarning,
            stacklevel=stacklevel + 1)
