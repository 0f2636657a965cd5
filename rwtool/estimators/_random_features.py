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

import copy
import dataclasses
import math
import time
import warnings

import numpy as np

from .._callbacks import CallbackSupport, reports_to_sklearn
from .._base import (BaseEstimator, ClassifierMixin, RegressorMixin, Standardizer, check_array,
                     check_choice, check_is_fitted, check_random_state, check_range,
                     check_feature_names, check_sample_weight, check_scalar, check_X_y,
                     encode_classes, is_dask, label_index)
from .._params import Param, params_table, validate_params
from ..features import KITCHEN_BASES, RandomFourierFeatures
from ..features._fourier import KERNEL
from ..features._instantiation import instantiation_names, make_feature_map, resolve, uses_bias
from ..features._base import (DTYPE, N_FEATURES, RANDOM_STATE, SIGMA, auto_block_size,
                              feature_dtype)
from ..features._rkhs import GAMMA, KAPPA, THETA
from ..exceptions import FitCancelled, NumericalWarning, check_finite_result, human_bytes
from ..bounds import estimate_tau, gap_theorem62, gap_theorem65, l2p_norm, rademacher_bound
from ..losses import LOSSES, get_loss
from ..progress import make_progress
from ..resources import FitEstimate, check_fit_memory, cholesky_work, seconds_of
from ..model_selection._selection import clone, fold_ids, select_reg
from ..solvers._lasso import fit_mode as lasso_fit_mode, lasso_fit
from ..solvers._lasso_cv import N_LAMS
from ..solvers._osd import osd_fit
from ..solvers._posterior import noise_variance, predictive_variance
from ..solvers._prune import ACCEPT_CRITERIA, make_accept, prune_weights, subset_map, subset_scale
from ..solvers._ridge import ridge_fit
from ..solvers._sfgd import sfgd_fit
from ..solvers._sgd_rks import sgd_fit
from ..solvers._sufficient import (REG_LIMITS, SufficientStats, best_index, grow_grid,
                                   search_features, search_work)
from ..solvers._from_sums import (AUTO_FOLDS, FROM_SUMS_SOLVERS, SMALL_DATA_REG, VALIDATION_ROWS,
                                  empty_stats, solve_from_stats)
from ._scale_hooks import ScaleClassifierHooks, ScaleHooks
from ..scale._dask import fold_scores
from ._weights import present_rows

__all__ = ["RWClassifier", "RWRegressor", "RKSClassifier", "RKSRegressor", "SOLVERS",
           "RKS_BASES"]

#: the posterior's inverse of M from its factor (solvers._posterior.inverse_from_factor, LAPACK's
#: dpotri: 2 T^3 / 3 multiply-adds) in the cost model's "blas" units per T^3: 0.030 / 0.19 s at
#: T = 1000 / 2000 (one thread, 28 Nov), 1.33 / 1.04 units of the rate 4.4e10 (the solve with T
#: right-hand sides it replaced, dpotrs: 2.5)
POSTERIOR_SOLVE = 1.2

#: base predictors of the random kitchen sinks (plus random Fourier features)
RKS_BASES = tuple(KITCHEN_BASES) + ("fourier",)
#: instantiations/bases whose base predictor reads <w, x>: they get the constant bias column
_DOT_PRODUCT = {"rwsign", "rwexpsign", "rwrelu", "rwexprelu", "sign", "relu"}


def _fit_lstsq(est, fmap, X, Y, progress, weights=None):
    """Least squares (003 Algorithm 4) / ridge (003 Algorithm 1), blocked (solvers/_ridge.py).
    Weighted fits go through the sums (``_fit_from_sums``), not here."""
    eps = est.eps if est._family == "rw" else 0.0
    regressor = est._estimator_type == "regressor"
    # a classifier keeps no posterior: its system is formed and factored in the sums' memory
    coef, info = ridge_fit(fmap, X, Y, reg=float(est._fit_reg), eps=float(eps),
                           block_size=est.block_size, progress=progress, keep_sums=regressor)
    out = {"jitter": info["jitter"], "method": info["method"]}
    if regressor and info["chol"] is not None:
        out["posterior"] = (info["chol"], noise_variance(
            info["A"], info["B"], np.einsum("ij,ij->j", Y, Y), info["m"], coef, info["chol"]))
    return coef, out


def _fit_lasso(est, fmap, X, Y, progress, weights=None):
    """Lasso fit (003 Algorithm 5 for RW, Algorithm 2 for RKS) at a given reg; zero rows are
    dropped later. reg="auto" goes through the per-fold sums (solvers._from_sums)."""
    max_iter = 1000 if est.max_iter is None else int(est.max_iter)
    return lasso_fit(fmap, X, Y, lam=float(est._fit_reg), path_length=int(est.path_length),
                     tol=float(est.tol), max_iter=max_iter, block_size=est.block_size,
                     progress=progress)


def _batch_rng(est):
    """The Generator of the batch draws: the draw after the one that seeded the feature map."""
    rng = check_random_state(est.random_state)
    if not isinstance(est.random_state, np.random.Generator):
        rng.integers(0, 2**63 - 1)
    return np.random.default_rng(int(rng.integers(0, 2**63 - 1)))


#: batch_size=None: rows per iteration of each iterative solver (SFGD and OSD capped at the rows
#: given). Both fit one coefficient per centre on its batch, once: OSD's line search and SFGD's
#: gradient step both overfit a small batch (000's remark after Algorithm 2; the papers used 50);
#: measured in docs/bench/iterative_defaults.md
DEFAULT_BATCH = {"sfgd": 500, "osd": 500, "sgd": 50}
#: the RW solvers whose default batch is capped at the number of training rows
_CAPPED_BATCH = ("sfgd", "osd")


def _batch_size(est, m):
    if est.batch_size is not None:
        return int(est.batch_size)
    solver = est.solver.lower()
    b = DEFAULT_BATCH[solver]
    return max(1, min(b, m)) if solver in _CAPPED_BATCH else b


def _fit_sfgd(est, fmap, X, Y, progress, weights=None):
    """SFGD (003 Algorithm 3), one iteration per centre, capped step (docs/SOLVERS.md)."""
    b = _batch_size(est, len(X))
    coef, info = sfgd_fit(fmap, X, Y, reg=float(est._fit_reg), loss=est.loss, batch_size=b,
                          radius=est.radius, average=bool(est.average),
                          random_state=_batch_rng(est), progress=progress, step_cap=est.step_cap,
                          weights=weights)
    return coef, dict(info, batch_size=b)


def _fit_osd(est, fmap, X, Y, progress, weights=None):
    """Optimal Stepsize Descent (000 Algorithm 2), one iteration per centre."""
    b = _batch_size(est, len(X))
    coef, info = osd_fit(fmap, X, Y, reg=float(est._fit_reg), loss=est.loss, batch_size=b,
                         random_state=_batch_rng(est), progress=progress, weights=weights)
    return coef, dict(info, batch_size=b)


def _fit_sgd(est, fmap, X, Y, progress, weights=None):
    """Averaged mini-batch SGD on the kitchen-sink features (solvers/_sgd_rks.py)."""
    max_iter = 5 if est.max_iter is None else int(est.max_iter)
    return sgd_fit(fmap, X, Y, reg=float(est._fit_reg), loss=est.loss,
                   batch_size=_batch_size(est, len(X)),
                   max_iter=max_iter, tol=float(est.tol), average=bool(est.average),
                   random_state=_batch_rng(est), progress=progress, weights=weights)


#: solver name -> (families it serves, function(est, feature_map, X, Y, progress, weights) ->
#: (coef, info)); weights (one per row, or None) give the weighted loss
SOLVERS = {
    "lstsq": (("rw",), _fit_lstsq),
    "ridge": (("rks",), _fit_lstsq),
    "lasso": (("rw", "rks"), _fit_lasso),
    "sfgd": (("rw",), _fit_sfgd),
    "osd": (("rw",), _fit_osd),
    "sgd": (("rks",), _fit_sgd),
}
#: what to change when a solver's result is not finite
_FIX = {"lstsq": "raise reg or eps, or standardize the inputs (standardize=True)",
        "ridge": "raise reg, or standardize the inputs (standardize=True)",
        "lasso": "raise reg, or standardize the inputs (standardize=True)",
        "sfgd": "raise reg, keep the step cap (step_cap=0.25), or standardize the inputs",
        "osd": "use larger batches, raise reg, or standardize the inputs",
        "sgd": "raise reg, lower sigma, or standardize the inputs"}
#: iterative solvers whose live events include the iterate's error on a sample of rows
_MONITORED = ("sfgd", "osd", "lasso")
MONITOR_ROWS = 1000
#: solvers that minimise the squared loss only
_SQUARED_ONLY = ("lstsq", "ridge", "lasso")
#: FROM_SUMS_SOLVERS (from_sums.py): reg="auto" comes from per-fold sums over position-hashed
#: folds (no class needs rows in every fold); the others refit each candidate on stratified
#: folds (rwtool.model_selection._selection)


#: reg="auto" candidates per solver (increasing): the least-squares path is nearly free; the
#: Lasso has its own, the path from lam_max (solvers/_lasso_cv.py)
AUTO_REG = {"lstsq": np.logspace(-12, -1, 12), "ridge": np.logspace(-12, -1, 12),
            "sfgd": np.logspace(-6, -2, 5), "osd": np.logspace(-6, -2, 5),
            "sgd": np.logspace(-7, -3, 5)}
#: reg=None (the default): cross-validation where it costs one pass (the exact least-squares
#: solvers and the Lasso, from per-fold sums: solvers._from_sums), a value measured across data
#: sets for the other iterative ones (docs/SOLVERS.md)
DEFAULT_REG = {"lstsq": "auto", "ridge": "auto", "lasso": "auto", "sfgd": 1e-6, "osd": 1e-6,
               "sgd": 1e-6}
#: prune(schedule="paper"): the authors' code of seed 000 starts lamL at 1e-10 and stops after
#: 10 Lasso solves
PAPER_LAM_START, PAPER_MAX_SOLVES = 1e-10, 10


# ----------------------------------------------------------------------------- parameter tables
# One entry per constructor parameter (rwtool._params): fit validates with them, the CLI and the
# app parse and show them. The entries the two families share are written once here.

def _solvers_of(family: str) -> tuple:
    return tuple(k for k, (fams, _) in SOLVERS.items() if family in fams)


def _reg_param(ref: str) -> Param:
    return Param("reg", "float", None, "lam of J = (1/m) sum loss(f, y) + (lam/2) ||alpha||^2 "
                 "(lam1 of the Lasso); 'auto' chooses it by 3-fold cross-validation",
                 interval="[0, inf)", keywords=("auto",),
                 none="the solver's default", ref=ref)


_LOSS = Param("loss", "choice", "squared", "(f - y)^2 / 2 or log(1 + exp(-y f)); logistic for "
              "classifiers with an iterative solver", choices=tuple(LOSSES))
_TOL = Param("tol", "float", 1e-4, "lasso: stop when the duality gap is <= tol ||y||^2 / m",
             interval="(0, inf)", advanced=True, only=("solver", ("lasso",)))
_PATH_LENGTH = Param("path_length", "int", 1, "lasso: lam values on a warm-started geometric "
                     "path from lam_max down to reg (1: reg directly)", interval="[1, inf)",
                     only=("solver", ("lasso",)))
_STANDARDIZE = Param("standardize", "bool", True, "standardise X (and y for a regressor) with "
                     "training statistics", ref="seed 003 Appendix C", advanced=True)
_BIAS = Param("bias", "bool", True, "append a constant column for the base predictors that read "
              "<w, x>", advanced=True)
_BLOCK_SIZE = Param("block_size", "int", None, "rows per block of the features accumulated "
                    "into Phi^T Phi", interval="[1, inf)",
                    none="32 MB of features and at least 2048 rows", advanced=True)
_RANDOM_STATE = dataclasses.replace(RANDOM_STATE, help="seed of the feature draw (the same "
                                    "seed gives the same model whatever the thread count)")

_RW_PARAMETERS = params_table(
    Param("instantiation", "choice", "rwsign", "the instantiation (W, phi, K, p): a closed form "
          "of seed 003 Table 2, or Monte Carlo features of any (p, K, phi)",
          choices=instantiation_names, check=resolve,
          also=("an 'mc:<distribution>:<kernel>:<base>' name", "an rwtool.Instantiation"),
          ref="seed 003 Table 2; docs/INSTANTIATIONS.md"),
    dataclasses.replace(N_FEATURES, help="T, the number of random features (centres w_t ~ p)"),
    Param("solver", "choice", "lstsq", "exact least squares, Lasso coordinate descent, SFGD or "
          "Optimal Stepsize Descent (docs/SOLVERS.md)", choices=_solvers_of("rw"),
          ref="seed 003 Algorithms 3-5; seed 000 Algorithm 2"),
    _reg_param("spec section 3"),
    dataclasses.replace(SIGMA, ref="seed 003 Table 2"), GAMMA,
    dataclasses.replace(THETA, only=("instantiation", ("rwsign", "rwrelu"))),
    dataclasses.replace(KAPPA, only=("instantiation", ("rwexpsign", "rwexprelu"))),
    Param("eps", "float", 1e-10, "ridge term m eps I added to the normal equations for "
          "conditioning", interval="[0, inf)", ref="seed 003 eq. 82", advanced=True),
    dataclasses.replace(_LOSS, only=("solver", ("sfgd", "osd"))),
    Param("max_iter", "int", None, "lasso: cap on coordinate-descent sweeps per lam",
          interval="[1, inf)", none="1000", only=("solver", ("lasso",))),
    _TOL,
    Param("batch_size", "int", None, "b, rows per iteration of sfgd/osd (drawn with "
          "replacement)", interval="[1, inf)", none="min(500, rows)",
          only=("solver", ("sfgd", "osd")), ref="seed 003 Algorithm 3"),
    Param("radius", "float", None, "B, the radius of sfgd's projection step",
          interval="(0, inf)", none="no projection", only=("solver", ("sfgd",)),
          ref="seed 003 Algorithm 3"),
    Param("step_cap", "float", 0.25, "c of the sfgd step min(1 / (reg t), c / L), L the "
          "smoothness measured on the data", interval="(0, inf)",
          none="the paper's 1 / (reg t)", only=("solver", ("sfgd",))),
    Param("average", "bool", False, "sfgd outputs the average of its iterates (the paper's "
          "output) instead of the last one", only=("solver", ("sfgd",)),
          ref="seed 003 Algorithm 3", advanced=True),
    _PATH_LENGTH, _STANDARDIZE, _BIAS, _BLOCK_SIZE, _RANDOM_STATE,
    dataclasses.replace(DTYPE, only=("solver", ("lstsq",))))

_RKS_PARAMETERS = params_table(
    Param("base", "choice", "relu", "the base predictor phi(w, x): sign, ReLU or stump of the "
          "RKHS weightings' distributions, or random Fourier features of the kernel",
          choices=RKS_BASES, ref="seed 003 Section 3.1"),
    N_FEATURES,
    Param("solver", "choice", "ridge", "ridge on the fixed features, Lasso coordinate descent, "
          "or averaged mini-batch SGD (docs/SOLVERS.md)", choices=_solvers_of("rks"),
          ref="seed 003 Algorithms 1-2"),
    _reg_param("spec section 3"),
    dataclasses.replace(SIGMA, default=None, help="the standard deviation of p (sign/relu/"
                        "stumps) or the kernel bandwidth (fourier)",
                        none="1 for sign/relu/stumps, sqrt(d / 2) for fourier"),
    dataclasses.replace(KERNEL, help="kernel of the random Fourier features",
                        only=("base", ("fourier",))),
    dataclasses.replace(_LOSS, only=("solver", ("sgd",))),
    Param("max_iter", "int", None, "lasso: sweeps per lam; sgd: epochs", interval="[1, inf)",
          none="1000 for lasso, 5 for sgd", only=("solver", ("lasso", "sgd"))),
    dataclasses.replace(_TOL, help="lasso: duality-gap tolerance; sgd: stop when an epoch "
                        "improves the mean training loss by less than this fraction",
                        only=("solver", ("lasso", "sgd"))),
    Param("batch_size", "int", 50, "sgd mini-batch size", interval="[1, inf)", none="50",
          only=("solver", ("sgd",))),
    Param("average", "bool", True, "sgd outputs the average of its iterates from the second "
          "epoch on", only=("solver", ("sgd",)), advanced=True),
    _PATH_LENGTH, _STANDARDIZE, _BIAS, _BLOCK_SIZE, _RANDOM_STATE,
    dataclasses.replace(DTYPE, only=("solver", ("ridge",))))


def _merge_tables(a, b):
    """Two selection.select_reg tables as one, sorted by reg."""
    keys = [k for k in a if k in b]
    rows = sorted(zip(*(a[k] + b[k] for k in keys)))
    return {k: [r[i] for r in rows] for i, k in enumerate(keys)}


def _keep_nonzero(fmap, coef):
    """The map and coefficients restricted to the centres some output uses (at least one)."""
    keep = np.flatnonzero(np.any(coef != 0, axis=1))
    if len(keep) == len(coef):
        return fmap, coef
    if len(keep) == 0:
        keep = np.array([0])  # an all-zero model still needs a map to predict 0 with
    scale = subset_scale(fmap, len(keep))
    return subset_map(fmap, keep), np.ascontiguousarray(coef[keep] * scale)


class _RandomFeatureModel(CallbackSupport, BaseEstimator):
    """Shared fit/predict machinery; subclasses define the feature map and the target coding."""

    _family = "rw"

    # -- validation and construction -------------------------------------------------------
    def _check_fitted_state(self):
        """Coefficients, scalers and map agree on their dimensions (checked on a loaded model)."""
        n_in = self.n_features_in_
        fmap = self.feature_map_
        coef = self.coef_
        if not isinstance(n_in, int) or n_in < 1:
            raise ValueError("invalid n_features_in_")
        if not isinstance(coef, np.ndarray) or coef.ndim != 2 or coef.dtype.kind != "f":
            raise ValueError("coef_ must be a 2-D float array")
        if coef.shape[0] != fmap.n_output_:
            raise ValueError(f"coef_ has {coef.shape[0]} rows for {fmap.n_output_} features")
        if fmap.n_features_in_ != n_in + int(bool(self.bias_)):
            raise ValueError("the feature map's input width disagrees with n_features_in_")
        for name in ("x_scaler_", "y_scaler_"):
            sc = getattr(self, name, None)
            if sc is not None:
                width = n_in if name == "x_scaler_" else coef.shape[1]
                if sc.mean.shape != (width,) or sc.scale.shape != (width,):
                    raise ValueError(f"{name} has the wrong width")
        if hasattr(self, "classes_"):
            k = len(self.classes_)
            if k < 2 or coef.shape[1] != (1 if k == 2 else k):
                raise ValueError("classes_ and coef_ disagree on the number of classes")

    def _validate(self):
        """The parameters checked against the class's table, then the rules between them."""
        p = validate_params(self)
        solver, loss = p["solver"], p["loss"]
        if loss != "squared" and solver in _SQUARED_ONLY:
            raise ValueError(f"solver={solver!r} minimises the squared loss only; use "
                             f"loss='squared' or an iterative solver for loss={loss!r}")
        if loss == "logistic" and self._estimator_type != "classifier":
            raise ValueError("loss='logistic' needs +/-1 targets: use a classifier, or "
                             "loss='squared' for regression")
        if p["dtype"] == "float32" and solver not in ("lstsq", "ridge"):
            raise ValueError(f"dtype='float32' is taken by the least-squares solver (whose "
                             f"per-block products Phi^T Phi it speeds up); solver={solver!r} "
                             f"computes in float64: leave dtype='float64' or use solver="
                             f"{'lstsq' if self._family == 'rw' else 'ridge'!r}")
        reg = self._resolve_reg(solver)
        if reg == "auto":
            return solver
        if solver in ("lasso", "sfgd") and not reg > 0:
            raise ValueError(f"solver={solver!r} needs reg > 0, got reg={reg!r}")
        if solver == "osd" and not reg < 1:
            raise ValueError(f"solver='osd' shrinks alpha by (1 - reg) each step: reg must be "
                             f"< 1, got {reg!r}")
        return solver

    def _resolve_reg(self, solver=None):
        """The reg of this fit: a number or "auto"; None means DEFAULT_REG[solver]."""
        reg = self._parameters["reg"].validate(self.reg)
        if reg is None:
            return DEFAULT_REG[str(self.solver).lower() if solver is None else solver]
        return reg

    def _auto_reg(self) -> bool:
        return self._resolve_reg() == "auto"

    def _auto_grid(self, solver) -> np.ndarray:
        """The reg="auto" candidates of ``solver`` (AUTO_REG; the grid may grow past its ends)."""
        return AUTO_REG[solver]

    def _fit_auto_reg(self, X, y, solver, callback, weights=None):
        """reg="auto": 3-fold cross-validation over AUTO_REG[solver], then the fit at the best.

        "lstsq"/"ridge": one pass accumulates the per-fold sums of the normal equations (a row's
        fold is a hash of its position), and reg is chosen and the model solved from them
        (solvers._from_sums), the criterion of partial_fit and Dask. The iterative solvers
        refit each candidate on stratified folds (rwtool.model_selection._selection) and grow the
        grid by the same rule (solvers._sufficient.grow_grid). ``reg_`` is the value used and
        ``reg_search_`` the validation scores of every candidate (None when reg=None fell back to
        ``SMALL_DATA_REG`` on data too small for three folds).
        """
        if solver in FROM_SUMS_SOLVERS and not is_dask(X):
            return self._fit_from_sums(X, y, callback, weights)
        params = self.get_params(deep=False)
        if params["random_state"] is None:  # every candidate and the final fit: one draw
            params["random_state"] = int(np.random.default_rng().integers(2**31 - 1))
        params["reg"] = float(self._auto_grid(solver)[0])
        template = type(self)(**params)
        table = None

        def score(regs):
            nonlocal table
            _, extra = select_reg(template, X, y, regs, cv=AUTO_FOLDS, random_state=0,
                                  callback=callback, sample_weight=weights)
            table = extra if table is None else _merge_tables(table, extra)

        grow_grid(self._auto_grid(solver), score, lambda grid: table["mean_score"],
                  upper=0.5 if solver == "osd" else REG_LIMITS[1])
        best = table["reg"][best_index(table["mean_score"])]
        fitted = template.set_params(reg=best).fit(X, y, sample_weight=weights,
                                                   callback=callback)
        return self._adopt(fitted, best, table)

    def _fit_from_sums(self, X, y, callback, weights=None):
        """reg="auto" for "lstsq"/"ridge"/"lasso" in memory, and every weighted fit of these
        solvers: the (per-fold, when reg is chosen) sums of one pass, then
        from_sums.solve_from_stats, as partial_fit and the Dask backend do. Weights enter the
        sums (Phi^T W Phi, Phi^T W Y, the weight sum as m), so the Lasso is solved in its Gram
        mode."""
        solver = self._validate()
        X, Y = self._fit_targets(X, y, weights)
        t0 = time.perf_counter()
        Xp, fmap = self._start_fit(X, Y, weights)
        stats = empty_stats(self, fmap, Y.shape[1], weight_sum=len(X) if weights is None
                            else float(np.sum(weights)))
        stats.add(fmap, Xp, Y, rows=X, start=0, block_size=self.block_size, progress=callback,
                  weights=weights)
        solve_from_stats(self, fmap, stats, callback)
        self.fit_time_ = time.perf_counter() - t0
        self._warn_if_constant(Xp, Y, solver)
        return self

    def _adopt(self, fitted, reg, table):
        for key, value in vars(fitted).items():
            if key.endswith("_") and not key.startswith("_"):
                setattr(self, key, value)
        self.reg_ = reg
        self.reg_search_ = table
        return self

    # -- cost model (rwtool.resources) ------------------------------------------------------
    def _estimate_fit(self, n_samples, n_features_in, n_outputs=1) -> FitEstimate:
        """Peak bytes and rough seconds of ``fit`` on n rows of d inputs (n_outputs classes).

        Memory, in float64 words: the standardised copy of X and a checked copy (2 n (d + 1)),
        the targets (n k) and the centres (T (d + 1)), then per solver: lstsq/ridge one block of
        features (``auto_block_size``: 32 MB and at least 2048 rows, unless ``block_size`` says
        otherwise), Phi^T Phi, its block product, the regularised copy and its Cholesky factor
        (4 T^2; the Gram matrix G of an RKHS weighting one more; dtype="float32" halves the
        block and the block product, and the time of the products), a classifier's Phi^T Phi
        and its block product alone (its system is formed and factored in the sums' memory,
        G a panel of rows at a time: solvers._ridge.ridge_fit's keep_sums); reg="auto" holds the
        sums of three folds on the T_s columns the search scores with (``search_features``)
        and the total of all T, then during the search the leading model's copies of the
        folds, their total, a training fold's and the regularised matrix
        (max((2 x 3 + 3) T_s^2 + T^2, 3 T_s^2 + 2 T^2), plus G -- a classifier's search its
        leading T_s x T_s block alone; (3 + 4) T^2 when T_s = T),
        with the features and a copy of one fold's rows at a time (one pass; the choice and the final
        solve come from the sums), and a classifier's validation sample keeps its rows' leading
        features (S x T_s, ``search_features``); the Lasso holds Phi
        (n x T) in design mode (``lasso.fit_mode``: T > 3000 and n T <= 32e6), else a block
        and the normal equations (3 T^2);
        SFGD/OSD the features of a block of 64 batches twice (2 x 64 b T: the features and
        their product temporary), the block's base predictions (64 b x 64) and Gram columns;
        SGD a chunk of 2048 rows of features. Each class (one-vs-rest column) adds, beyond its
        n targets: for reg="auto" by sums, the fold sums and totals of B ((3 + 4) T), the
        coefficients of every candidate reg (2 T R, R = the grid and one extension) and their
        validation -- a classifier's R decision values on a fold of the validation sample
        (S / 3 R, S = min(n, VALIDATION_ROWS)) and the sample's targets (2 S), a regressor's
        products with the fold sums (2 T R); for the Lasso by sums the fold forms and paths
        (3 x 3 T, and up to N_LAMS T for the final path). Measured against tracemalloc's peak
        in tests/estimators/test_numerical_errors.py (within a factor 2). Time: the features of
        the n T (row, centre) pairs (their d-term products in BLAS) plus the solver's operations (n T^2 and T^3 / 3 for the normal equations, and for reg="auto"
        the search's factorisations and scores, solvers._sufficient.search_work; b T^2 / 2
        (row, centre) pairs for SFGD/OSD, a coordinate-descent path per class for the Lasso, ...),
        a regressor's posterior (a Cholesky solve of the T x T sums, POSTERIOR_SOLVE T^3, and
        its T x T result), and every fit's checks and standardisation of X's n d elements
        ("input"), counted per kernel in ``work`` and timed at rwtool.resources.KERNEL_RATES.
        """
        solver = self._validate()
        n, d, T = int(n_samples), int(n_features_in) + 1, int(self.n_features)
        k = 1 if n_outputs <= 2 else int(n_outputs)
        rw_gram = self._family == "rw"
        auto = self._auto_reg()
        # dtype="float32": the blocks and each block's product Phi^T Phi take half the bytes,
        # and SSYRK runs at about twice DSYRK's rate (the sums and the solve stay float64)
        half = feature_dtype(self.dtype).itemsize / 8.0
        block = (auto_block_size(n, T, feature_dtype(self.dtype).itemsize)
                 if self.block_size is None else min(n, int(self.block_size)))
        classifier = self._estimator_type == "classifier"
        words = 2 * n * d + n * k + T * d
        elem = self._feature_kernel()
        ops = 0.0                       # the SGD-like solvers' own steps (a *_step kernel)
        pairs = float(n * T)            # (row, centre) pairs of features: one pass
        blas = n * T * (k + d)          # dense products and factorisations, on BLAS/LAPACK
        per_class = 0                   # the words each class (output column) adds, beyond y
        R = len(AUTO_REG.get(solver, ())) + 1      # candidates: the grid and an extension
        S = min(n, VALIDATION_ROWS)                # the classifier's validation sample
        if solver in ("lstsq", "ridge") and auto:
            fold = -(-n // AUTO_FOLDS)         # the rows of a fold, gathered and mapped alone
            t = search_features(n, T)          # the columns the folds keep apart
            sums = ((AUTO_FOLDS + 4) * T * T if t >= T else
                    max((2 * AUTO_FOLDS + 3) * t * t + T * T, AUTO_FOLDS * t * t + 2 * T * T))
            # G: a classifier's search takes its leading t x t block and its final system
            # reads G a panel of rows at a time; a regressor keeps G whole (its posterior)
            gram = rw_gram * (t * t if classifier else T * T)
            words += min(block, fold) * T * half + sums + gram + fold * (d + k)
            if classifier:
                # the validation sample's captured leading features (solvers._from_sums
                # .sample_columns), kept for the search after the pass
                words += S * t
            # the pass and the final solve as a fixed reg's, and the search: a t x t Cholesky
            # per fold and candidate of each step, and the candidates' decision values on the
            # sample (solvers._sufficient.search_work; was 10 T^3 per fold, the eigendecompositions
            # of the search before it went coarse to fine: 5x the fit at T = 4000)
            # its factorisations at the small orders' slower rate (rwtool.resources
            # .cholesky_work: the search's 250 x 250 factors cost 11x their t^3 / 3 at the unit)
            factor, score = search_work(n, T, AUTO_FOLDS, S if classifier else 0,
                                        cost=cholesky_work)
            blas += n * T * T * half + cholesky_work(T) + factor + score * k
            per_class = (AUTO_FOLDS + 4) * T + 2 * T * R + (
                2 * S + -(-S // AUTO_FOLDS) * R if classifier else 2 * T * R)
            # each candidate's triangular solves on the folds (2 t^2 a column), and a
            # regressor's scores from the fold sums (t^2 a column)
            blas += AUTO_FOLDS * R * t * t * k * (2 if classifier else 3)
        if solver in ("lstsq", "ridge"):
            if not auto:
                words += block * T * half + ((1 + half) if classifier else
                                             (3 + half + rw_gram)) * T * T
                blas += n * T * T * half + cholesky_work(T) + T * T * k
                per_class = 3 * T
            if not classifier:
                # the posterior's degrees of freedom, tr(M^-1 A) (solvers._posterior
                # .noise_variance): M^-1 from the factor (POSTERIOR_SOLVE units per T^3), and
                # its T x T result. Was uncounted: 0.46 of the 1.12 s of RWRegressor's default
                # fit on abalone at T = 2000 when it was a solve with T right-hand sides
                blas += POSTERIOR_SOLVE * T ** 3
                words += T * T
            detail = (f"the {T} x {T} normal equations" + (" of three folds and the reg path"
                                                           if auto else "")
                      + f", features in blocks of {block} rows")
        elif solver == "lasso" and auto:
            # per-fold sums and the folds' Gram forms; K + 1 warm-started paths, each lam
            # taking tens of sweeps of O(T) per moving coefficient (docs/bench/lasso.md)
            words += block * T + (2 * AUTO_FOLDS + 2) * T * T + rw_gram * T * T
            per_class = (3 * AUTO_FOLDS + 4 + N_LAMS) * T + (2 * S if classifier else 0)
            words += S * T if classifier else 0        # the sample's features, per fold
            blas += n * T * T
            # 200 sweeps a lam measured on skin (30,000 rows: 10.0 s of CPU, 2.5 s estimated
            # with 50)
            cd = (AUTO_FOLDS + 1) * N_LAMS * 200 * T * T / 4.0 * k
            detail = (f"the {T} x {T} normal equations of {AUTO_FOLDS} folds and the Lasso "
                      f"path of each, features in blocks of {block} rows")
        elif solver == "lasso":
            design = lasso_fit_mode(n, T) == "design"
            words += (n * T if design else block * T + 3 * T * T) + rw_gram * T * T
            per_class = 4 * T
            sweeps = 1000 if self.max_iter is None else int(self.max_iter)
            cd = (n if design else T) * T * min(sweeps, 50) * k
            blas += 0.0 if design else n * T * T      # the normal equations
            detail = (f"the {n} x {T} feature matrix" if design
                      else f"the {T} x {T} normal equations") + " of the Lasso"
        elif solver in ("sfgd", "osd"):
            b = _batch_size(self, n)
            words += 64 * b * (2 * T + 64 + d) + 64 * T
            per_class = 3 * T
            # iteration t computes the features of its b batch rows on the t centres so far
            # and their predictions: b T^2 / 2 (row, centre) pairs over the run, each a feature
            # (its d-term product in BLAS) and k multiply-adds in the block kernel
            sfgd = b * T * T / 2.0
            pairs, blas = sfgd, sfgd * d            # no pass over all the rows
            ops += sfgd * k
            detail = f"blocks of 64 iterations x {b} rows of features on up to {T} centres"
        else:                                          # sgd on kitchen sinks
            epochs = 5 if self.max_iter is None else int(self.max_iter)
            words += 2048 * T
            per_class = 3 * T
            # the features are recomputed every pass (chunks of 2048 rows), then each row's
            # step reads and updates its T coefficients per class
            pairs *= epochs
            blas += (epochs - 1) * n * T * d
            ops += epochs * n * T * k
            detail = f"{epochs} passes over chunks of 2048 rows of {T} features"
        refits = 1
        if auto and solver not in FROM_SUMS_SOLVERS:
            n_reg = len(AUTO_REG[solver])
            refits = 3 * n_reg + 1                     # a fit per (fold, reg) and the refit
            detail += f"; reg='auto' refits {refits} times"
        words += per_class * k
        fix = ""
        if k > 1 and (n + per_class) * k > words / 2:
            what = "classes" if classifier else "outputs"
            detail += (f"; mostly the {k} {what}: {human_bytes(8 * (n + per_class) * k)} for their "
                       f"targets, coefficients" + (" and the validation of each reg candidate"
                                                   if auto else ""))
            fix = (f"fewer {what} (merge the rare ones), fewer features (n_features)"
                   + (", or a number for reg (no candidates to validate)" if auto else ""))
        # every fit's checks, standardisation and copies of X: a few passes over its n d
        # elements and their fresh pages (the "input" rate); uncounted, they were 0.19-0.30 s of
        # the 0.6-1.8 s default fits on mnist's 784 columns
        work = {elem: pairs * refits, "blas": blas * refits, "input": n * (d - 1) * refits,
                {"sfgd": "sfgd_step", "osd": "sfgd_step"}.get(solver, "rks_sgd_step"):
                ops * refits}
        if solver == "lasso":
            work["lasso_cd"] = cd * refits
        work = {key: v for key, v in work.items() if v}
        return FitEstimate(peak_bytes=int(8 * words), seconds=seconds_of(work), detail=detail,
                           fix=fix, work=work)

    def _feature_kernel(self) -> str:
        """The KERNEL_RATES entry of this map's element-wise features."""
        return "rw_features" if self._family == "rw" else "rff_features"

    def _estimate_predict(self, n_rows, n_features_in, n_outputs=1) -> dict:
        """The work of ``decision_function`` on n rows: the features of every row on the T
        centres (their d-term products in BLAS) and their product with the coefficients."""
        n, d, T = int(n_rows), int(n_features_in) + 1, int(self.n_features)
        k = 1 if n_outputs <= 2 else int(n_outputs)
        return {self._feature_kernel(): n * T, "blas": n * T * (d + k)}

    # -- reg selection (rwtool.model_selection._selection) -----------------------------------------
    def _shares_reg_path(self) -> bool:
        """Exact least squares: candidates differing only in reg share one pass over the data."""
        return str(self.solver).lower() in ("lstsq", "ridge")

    def _reg_path_scores(self, base_params, regs, X, y, folds) -> np.ndarray:
        """Validation scores (len(regs) x n_folds) of this model with ``base_params`` at each
        reg, from one feature draw and the per-fold normal equations (one pass over X)."""
        if is_dask(X) or is_dask(y):
            return fold_scores(self, base_params, regs, X, y, folds)
    
        est = clone(self).set_params(**base_params)
        est._validate()
        Xc, Y = est._fit_targets(X, y)
        # The same preprocessing and seed derivation as fit(), so the refit reuses the
        # validated feature draw.
        Xp, fmap = est._draw_map(Xc)
        G = fmap.gram() if fmap.has_gram else None
        eps = float(getattr(est, "eps", 0.0)) if fmap.has_gram else 0.0
        stats = SufficientStats(fmap.n_output_, Y.shape[1], len(folds))
        stats.add(fmap, Xp, Y, folds=fold_ids(folds), block_size=est.block_size)
        out = np.empty((len(regs), len(folds)))
        for k, ((tr, va), coefs) in enumerate(zip(folds, stats.each_fold_coefs(regs, G, eps))):
            # every reg value of the fold in one blocked pass: no fold-sized feature matrix
            D = fmap.linear_predict(np.ascontiguousarray(Xp[va]), coefs)
            q = Y.shape[1]
            for j in range(len(regs)):
                Dj = D[:, j * q:(j + 1) * q]
                if not np.isfinite(Dj).all():
                    out[j, k] = np.nan      # no score from non-finite decision values
                    continue
                if est._estimator_type == "classifier":
                    pred = (est.classes_[(Dj[:, 0] > 0).astype(int)] if q == 1
                            else est.classes_[np.argmax(Dj, axis=1)])
                    out[j, k] = float(np.mean(pred == y[va]))
                else:
                    Yv = Y[va]
                    ss_res = ((Yv - Dj) ** 2).sum(axis=0)
                    ss_tot = ((Yv - Yv.mean(axis=0)) ** 2).sum(axis=0)
                    out[j, k] = float(np.mean(1.0 - ss_res / np.where(ss_tot > 0, ss_tot, 1.0)))
        return out

    def _uses_bias(self) -> bool:
        return bool(self.bias) and self._kind() in _DOT_PRODUCT

    def _prepare_X(self, X: np.ndarray) -> np.ndarray:
        if not self.bias_:
            return np.ascontiguousarray(self.x_scaler_.transform(X) if self.standardize else X)
        # standardised straight into the array with the bias column: one array of X's size
        out = np.empty((X.shape[0], X.shape[1] + 1))
        out[:, -1] = 1.0
        if self.standardize:
            self.x_scaler_.transform(X, out=out[:, :-1])
        else:
            out[:, :-1] = X
        return out

    # -- fit / predict ---------------------------------------------------------------------
    @reports_to_sklearn
    def fit(self, X, y, sample_weight=None, callback=None):
        """Sample the features, solve for the coefficients and return self.

        ``sample_weight`` (one weight >= 0 per row, None: 1 each) gives the weighted objective
        J(a) = (1 / sum w) sum_i w_i loss(f(x_i), y_i) + (lam/2) ||alpha||^2 with the
        standardisation statistics weighted too. Only the weights' ratios matter: a row of
        integer weight c counts as c copies of it and a row of weight 0 as absent. The exact
        solvers (lstsq, ridge, and the Lasso, solved in its Gram mode) solve it exactly from
        the weighted sums Phi^T W Phi, Phi^T W Y -- the same model as the repeated rows to
        rounding, reg="auto" included (a row's fold is a hash of its content, so its copies
        share a fold and each fold's score weighs its rows). SFGD, OSD and SGD draw their
        batches with probability proportional to w: an unbiased estimate of the weighted loss
        at every step, equal in distribution (not bit for bit) to the repeated rows.

        ``callback(event)`` receives progress events (rwtool.progress); returning True cancels
        the fit, which then raises :class:`rwtool.FitCancelled` and leaves the estimator
        unfitted.
        """
        return self._fit(X, y, callback, sample_weight)

    @reports_to_sklearn
    def fit_weighted(self, X, y, sample_weight, callback=None):
        """``fit(X, y, sample_weight=sample_weight, callback=callback)``, kept as an alias
        (docs/CHANGELOG.md)."""
        return self.fit(X, y, sample_weight=sample_weight, callback=callback)

    def _fit(self, X, y, callback, sample_weight):
        solver = self._validate()
        check_feature_names(self, X, reset=True)
        weights = (None if sample_weight is None else
                   check_sample_weight(sample_weight, len(np.asarray(y))))
        if hasattr(self, "coef_"):  # a failed or cancelled refit must not leave the old model
            del self.coef_
        if weights is not None and solver in FROM_SUMS_SOLVERS:
            return self._fit_from_sums(X, y, callback, weights)
        if self._auto_reg():
            return self._fit_auto_reg(X, y, solver, callback, weights)
        self._fit_reg = float(self._resolve_reg(solver))
        X, Y = self._fit_targets(X, y, weights)
        t0 = time.perf_counter()
        progress = make_progress(callback)
        Xp, fmap = self._start_fit(X, Y, weights)
        # a row of weight 0 is absent: the divergence guards and the warnings must not judge
        # the model on it
        Xp, Y, weights = present_rows(weights, Xp, Y)
        watched = progress.active and solver in _MONITORED and progress.monitor is None
        if watched:
            progress.monitor = self._sample_monitor(fmap, Xp, Y)
        try:
            coef, info = SOLVERS[solver][1](self, fmap, Xp, Y, progress, weights)
        except FitCancelled as exc:
            # Iterative solvers hand back their last completed iterate: keep it and say so.
            if exc.partial_model and exc.partial is not None:
                coef, info = exc.partial
                if np.all(np.isfinite(coef)):
                    self._set_fitted(fmap, coef, dict(info, cancelled=True), t0)
            raise
        finally:
            if watched:
                progress.monitor = None
        check_finite_result(coef, solver=solver, fix=_FIX[solver])
        self._set_fitted(fmap, coef, info, t0)
        self._warn_if_constant(Xp, Y, solver)
        return self

    def _start_fit(self, X, Y, weights=None):
        """Fix the preprocessing of a fit on (X, Y) and draw the feature map: (Xp, fmap)."""
        if not self.standardize:
            check_range(X, "X", "pass standardize=True, or rescale X")
            check_range(Y, "y", "pass standardize=True, or rescale y")
        return self._draw_map(X, weights)

    def _draw_map(self, X, weights=None):
        """Record the preprocessing of X (``n_features_in_``, ``x_scaler_``, ``bias_``) and draw
        the feature map from random_state as every fit does: (Xp, fmap). With row weights the
        statistics are weighted and the map's data constants (maxima over rows) come from the
        rows of weight above zero, as if the others were absent."""
        self.n_features_in_ = X.shape[1]
        self.x_scaler_ = Standardizer.fit(X, weights) if self.standardize else None
        self.bias_ = self._uses_bias()
        Xp = self._prepare_X(X)
        rng = check_random_state(self.random_state)
        fmap = self._make_map(int(rng.integers(0, 2**63 - 1)))
        fmap.fit(Xp if weights is None or weights.all() else Xp[weights > 0])
        return Xp, fmap

    def _warn_if_constant(self, Xp, Y, solver, n_rows=2000, first_rows=200):
        """Say so when the model predicts one class (or one value) on every training row.

        Measured on at most ``n_rows`` evenly spaced rows. A first-order solver on features
        dominated by one common direction (RWRelu on wide inputs: docs/SOLVERS.md) can end at
        the majority rate with finite coefficients; that model must not pass for a fit.
        A model that varies on some of these rows varies on all of them: about ``first_rows``
        of them (every k-th) are predicted first, and the rest only when those are constant
        (predicting 2000 rows cost 6% of a fixed-reg fit on 784 inputs at T = 2000).
        """
        m = Xp.shape[0]
        idx = np.unique(np.linspace(0, m - 1, min(m, n_rows)).astype(np.int64))
        Ys = Y.reshape(m, -1)[idx]
        classifier = self._estimator_type == "classifier"
        if classifier:
            truth = (Ys[:, 0] > 0) if Ys.shape[1] == 1 else np.argmax(Ys, axis=1)
            varied = len(np.unique(truth)) > 1
            what = "one class on every training row (the majority rate at best)"
        else:
            spread = np.ptp(Ys, axis=0)
            varied = bool(np.any(spread > 0))
            what = "the same value for every training row"
        if not varied:
            return

        def is_constant(rows):
            D = self.feature_map_.linear_predict(np.ascontiguousarray(Xp[rows]), self.coef_)
            D = D.reshape(len(rows), -1)
            if classifier:
                labels = (D[:, 0] > 0) if D.shape[1] == 1 else np.argmax(D, axis=1)
                return len(np.unique(labels)) == 1
            return bool(np.all(np.ptp(D, axis=0) <= 1e-6 * np.where(spread > 0, spread, 1)))

        step = max(1, len(idx) // first_rows)
        if is_constant(idx[::step]) and (step == 1 or is_constant(idx)):
            hint = ("solver='lstsq' (or 'lasso'), or instantiation='rwsign'"
                    if solver in ("sfgd", "osd", "sgd") else
                    "a smaller reg, or another sigma/instantiation")
            warnings.warn(f"{type(self).__name__} (solver={solver!r}) predicts {what}: the model "
                          f"has learned nothing usable; try {hint}", NumericalWarning,
                          stacklevel=3)

    def _sample_monitor(self, fmap, Xp, Y):
        """coef -> the training error (classifiers) or R^2 (regressors) of the iterate on a
        fixed sample of at most MONITOR_ROWS training rows, for the live curves of the
        iterative solvers. Its own generator: the model does not depend on whether a callback
        watched the fit."""
        m = Xp.shape[0]
        rows = np.sort(np.random.default_rng(0).choice(m, MONITOR_ROWS, replace=False)) \
            if m > MONITOR_ROWS else np.arange(m)
        Phi, Ys = fmap.transform(Xp[rows]), Y[rows]
        if self._estimator_type == "classifier":
            truth = Ys[:, 0] > 0 if Ys.shape[1] == 1 else np.argmax(Ys, axis=1)

            def monitor(coef):
                F = Phi @ np.asarray(coef).reshape(Phi.shape[1], -1)
                guess = F[:, 0] > 0 if F.shape[1] == 1 else np.argmax(F, axis=1)
                return {"train_error_sample": float(np.mean(guess != truth))}
            return monitor
        ss = float(np.sum((Ys - Ys.mean(axis=0)) ** 2))

        def monitor(coef):
            F = Phi @ np.asarray(coef).reshape(Phi.shape[1], -1)
            return {"train_r2_sample": 1.0 - float(np.sum((F - Ys) ** 2)) / ss if ss > 0
                    else float("nan")}
        return monitor

    def _set_fitted(self, fmap, coef, info, t0):
        # the Bayesian posterior of an exact least-squares regressor (predict's return_std):
        # the Cholesky factor of the solved system (T x T, kept) and the noise variance
        posterior = info.pop("posterior", None)
        if posterior is None:
            for name in ("posterior_chol_", "noise_var_"):
                self.__dict__.pop(name, None)
        else:
            self.posterior_chol_, self.noise_var_ = posterior
        if self.solver.lower() == "lasso":
            # 003 Algorithm 5: the model keeps only the features with a non-zero coefficient
            fmap, coef = _keep_nonzero(fmap, np.asarray(coef))
        self.feature_map_ = fmap
        self.coef_ = np.ascontiguousarray(coef)
        self.solver_info_ = info
        self.reg_ = self._fit_reg
        # iterations the solver ran: sweeps (lasso), centres (sfgd/osd), epochs (sgd), 1 (direct)
        n_iter = info.get("n_iter", max(info.get("sweeps", [1]) or [1]))
        self.n_iter_ = max(1, int(n_iter))
        self.fit_time_ = time.perf_counter() - t0

    def feature_matrix(self, X) -> np.ndarray:
        """The feature matrix Phi of ``X`` (after the recorded preprocessing), m x T."""
        check_is_fitted(self)
        X = check_array(X, n_features=self.n_features_in_, estimator=type(self).__name__)
        return self.feature_map_.transform(self._prepare_X(X))

    def _raw_decision(self, X) -> np.ndarray:
        check_is_fitted(self)
        X = check_array(X, n_features=self.n_features_in_, estimator=type(self).__name__)
        return self.feature_map_.linear_predict(self._prepare_X(X), self.coef_)

    def _onnx_decision(self, g, x):
        """``_raw_decision`` as ONNX nodes on ``g`` (rwtool.persist's Graph) of the input x."""
        x = g.standardize(self.x_scaler_ if self.standardize else None, x)
        if self.bias_:
            x = g.append_ones(x)
        return g.matmul(self.feature_map_._onnx(g, x), g.const(self.coef_, "coef"))

    def _targets_for(self, y, m):
        """Targets of ``y`` in the coding the model was fitted on (+/-1, or standardised)."""
        if self._estimator_type == "classifier":
            y = np.asarray(y)
            if y.shape[0] != m:
                raise ValueError(f"X has {m} rows but y has {y.shape[0]}")
            idx = label_index(self.classes_, y)
            if len(self.classes_) == 2:
                return np.where(idx == 1, 1.0, -1.0)[:, None]
            Y = -np.ones((m, len(self.classes_)))
            Y[np.arange(m), idx] = 1.0
            return Y
        y = check_array(y, "y", ensure_2d=False)
        Y = y[:, None] if y.ndim == 1 else y
        if Y.shape[0] != m:
            raise ValueError(f"X has {m} rows but y has {Y.shape[0]}")
        return self.y_scaler_.transform(Y) if self.y_scaler_ is not None else Y

    def prune(self, eps=0.01, accept="error", X=None, y=None, lam=None, delta=0.05,
              loss="squared", max_steps=40, tol=1e-4, max_iter=1000, schedule="eq62",
              callback=None):
        """A new estimator with fewer centres: 000 Algorithm 5 (pruning with the Lasso).

        Solves min_b (1/(2T)) ||U a - U b||^2 + lamL ||b||_1 (G = U^T U; for kitchen sinks
        G = I) for lamL, 10 lamL, ... while ``accept`` holds, and keeps the last accepted b.

        Parameters
        ----------
        eps : float > 0
            The largest acceptable degradation.
        accept : {"bound", "probabilistic", "loss", "error"}
            000 eq. 63-66: rho theta ||alpha - beta||_H < eps; Theorem 8; train-loss increase
            < eps; train 0-1 error increase < eps (classifiers).
        X, y : the sample the criteria are measured on (needed except for "bound").
        lam : starting lamL; None uses 000 eq. 62.
        delta : confidence of the "probabilistic" criterion.
        loss : "squared" or "logistic", the loss L_S of the criteria.
        max_steps, tol, max_iter : caps of the outer loop and of each Lasso solve.
        schedule : {"eq62", "paper"}
            Where lamL starts: "eq62" at 000 eq. 62 (or ``lam``); "paper" as the authors' code
            of seed 000 ran its experiments: lamL = 1e-10 (or ``lam``), x10 per step, at most
            10 Lasso solves (``max_steps`` is capped at 10). Where the accepted lamL lands on
            the x10 grid decides the pruned fraction: on mnist17 "paper" prunes about 60% where
            "eq62" prunes 35% (docs/MNIST17.md).

        Returns
        -------
        A fitted copy with ``feature_map_`` and ``coef_`` restricted to the kept centres and
        ``prune_report_`` (dict: accept, eps, lam, n_before, n_after, kept_fraction,
        pruned_percent, norm_alpha, norm_beta, norm_diff, loss_before/after,
        error_before/after, steps).
        """
        check_is_fitted(self)
        check_scalar(eps, "eps", low=0.0, low_inclusive=False)
        kind = check_choice(accept, "accept", ACCEPT_CRITERIA)
        if check_choice(schedule, "schedule", ("eq62", "paper")) == "paper":
            lam = PAPER_LAM_START if lam is None else lam
            max_steps = min(int(max_steps), PAPER_MAX_SOLVES)
        Phi = Y = None
        if X is not None:
            X = check_array(X, n_features=self.n_features_in_)
            if y is None:
                raise ValueError("pass y together with X")
            # the pruning geometry is float64 whatever the features' dtype
            Phi = self.feature_map_.transform(self._prepare_X(X)).astype(float, copy=False)
            Y = self._targets_for(y, len(X))
        G, theta = self._prune_geometry(Phi)
        coef = np.asarray(self.coef_, dtype=float)
        classify = self._estimator_type == "classifier"
        if Y is None and not classify:
            raise ValueError("pruning a regressor needs its sample: pass X and y (rho = theta B "
                             "+ max|y| is measured on the standardised targets, which often "
                             "exceed 1)")
        y_bound = 1.0 if Y is None else float(np.max(np.abs(Y)))
        acc = make_accept(kind, float(eps), coef, G, theta, Phi, Y, loss, delta,
                          classify=classify, y_bound=y_bound)
        norm_a = acc.before["norm_alpha"]
        rho = get_loss(loss).lipschitz(theta * max(norm_a), y_bound)
        beta, rep = prune_weights(coef, G, acc, lam=lam, eps=float(eps), rho=rho, theta=theta,
                                  max_steps=int(max_steps), tol=float(tol),
                                  max_iter=int(max_iter), progress=callback)
        _, after = acc(beta)
        new = copy.deepcopy(self)
        for name in ("posterior_chol_", "noise_var_"):   # the posterior of other coefficients
            new.__dict__.pop(name, None)
        fmap, coef_b = _keep_nonzero(self.feature_map_, beta)
        new.feature_map_, new.coef_ = fmap, coef_b
        T = coef.shape[0]
        n_after = int(np.count_nonzero(np.any(beta != 0, axis=1)))
        new.prune_report_ = {
            "accept": kind, "eps": float(eps), "lam": rep["lam"], "n_before": int(T),
            "n_after": n_after, "kept_fraction": n_after / T,
            "pruned_percent": 100.0 * (1.0 - n_after / T),
            "norm_alpha": _one(norm_a), "norm_beta": _one(after["norm_beta"]),
            "norm_diff": after["norm_diff"], "loss_before": acc.before["loss"],
            "loss_after": after["loss"], "error_before": acc.before["error"],
            "error_after": after["error"], "steps": rep["steps"], "schedule": schedule}
        return new

    @property
    def n_features_out_(self) -> int:
        """Number of random features with a non-zero coefficient."""
        check_is_fitted(self)
        return int(np.count_nonzero(np.any(self.coef_ != 0, axis=1)))


def _one(values):
    return values[0] if len(values) == 1 else list(values)


class _ClassifierTargets(ClassifierMixin):
    def _fit_targets(self, X, y, weights=None):
        X, y = check_X_y(X, y)
        self.classes_, Y = encode_classes(
            y, on_classes=lambda k: check_fit_memory(self, X.shape[0], X.shape[1], k))
        return X, Y


class _RegressorTargets(RegressorMixin):
    def _fit_targets(self, X, y, weights=None):
        X, y = check_X_y(X, y, y_numeric=True)
        Y = y[:, None] if y.ndim == 1 else y
        check_fit_memory(self, X.shape[0], X.shape[1], Y.shape[1])
        self.y_scaler_ = Standardizer.fit(Y, weights) if self.standardize else None
        self.y_1d_ = y.ndim == 1
        Y = self.y_scaler_.transform(Y) if self.standardize else Y
        return X, np.ascontiguousarray(Y)

    def predict(self, X, return_std: bool = False):
        """The predicted target of each row (one column per output when y had several).

        ``return_std=True`` (solvers "lstsq" and "ridge") also returns the standard deviation
        of the posterior predictive distribution of the Bayesian linear model on the features
        (prior precision from reg, noise variance s2 from the training residuals with the
        ridge's effective degrees of freedom: rwtool.solvers._posterior): sqrt(s2 (1 +
        phi(x)^T M^-1 phi(x))) in y's units, the noise included, so mean +/- 1.645 std is a 90%
        predictive interval when the model holds. O(T^2) per row by a triangular solve with the
        fit's Cholesky factor ``posterior_chol_`` (kept by the fit: T^2 floats), blocked over
        rows like the features. Returns ``(mean, std)``, std shaped as the mean.
        """
        mean = super().predict(X)
        if not return_std:
            return mean
        return mean, self._predictive_std(X).reshape(mean.shape)

    def _predictive_std(self, X) -> np.ndarray:
        L = self.__dict__.get("posterior_chol_")
        if L is None and self.__dict__.get("noise_var_") is not None:
            # fitted with a posterior, then saved without its factor
            raise ValueError(
                f"this {type(self).__name__} was saved without its posterior factor "
                f"(rwtool.save(..., keep_posterior=False), or 'rwtool train --no-posterior'), "
                f"which return_std needs; predict without return_std, or save the fitted model "
                f"again with keep_posterior=True (the default)")
        if L is None:
            raise ValueError(
                f"{type(self).__name__} has no posterior to take return_std from: it is kept "
                f"by the exact least-squares fits (solver='lstsq' for RWRegressor, 'ridge' for "
                f"RKSRegressor), not by solver={self.solver!r} or a pruned model; refit with "
                f"one of them, or predict without return_std")
        X = check_array(X, n_features=self.n_features_in_, estimator=type(self).__name__)
        q = np.empty(len(X))
        for start, stop, Phi in self.feature_map_.blocks(self._prepare_X(X), self.block_size):
            q[start:stop] = predictive_variance(Phi, L)
        std = np.sqrt(np.outer(1.0 + q, self.noise_var_))
        return std * self.y_scaler_.scale if self.y_scaler_ is not None else std

    def _raw_prediction(self, X) -> np.ndarray:
        D = self._raw_decision(X)
        if self.y_scaler_ is not None:
            D = self.y_scaler_.inverse_transform(D)
        return D[:, 0] if self.y_1d_ else D


# ----------------------------------------------------------------------------- RKHS weightings

class _RW(_RandomFeatureModel):
    _family = "rw"
    _parameters = _RW_PARAMETERS

    def __init__(self, instantiation="rwsign", n_features=1000, solver="lstsq", reg=None,
                 sigma=1.0, gamma=None, theta=None, kappa=10.0, eps=1e-10, loss="squared",
                 max_iter=None, tol=1e-4, batch_size=None, radius=None, step_cap=0.25,
                 average=False, path_length=1, standardize=True, bias=True, block_size=None,
                 random_state=None, dtype="float64"):
        self.instantiation = instantiation
        self.n_features = n_features
        self.solver = solver
        self.reg = reg
        self.sigma = sigma
        self.gamma = gamma
        self.theta = theta
        self.kappa = kappa
        self.eps = eps
        self.loss = loss
        self.max_iter = max_iter
        self.tol = tol
        self.batch_size = batch_size
        self.radius = radius
        self.step_cap = step_cap
        self.average = average
        self.path_length = path_length
        self.standardize = standardize
        self.bias = bias
        self.block_size = block_size
        self.random_state = random_state
        self.dtype = dtype

    def _kind(self):
        """The closed-form name, or "mc" for an rwtool.Instantiation (Monte Carlo features)."""
        inst = resolve(self.instantiation)
        return inst if isinstance(inst, str) else "mc"

    def _uses_bias(self) -> bool:
        return bool(self.bias) and uses_bias(self.instantiation)

    def _prune_geometry(self, Phi):
        return self.feature_map_.gram(), self.feature_map_.constants()[0]

    def bounds(self, X, y, delta=0.05, n_draws=1000, random_state=0, callback=None) -> dict:
        """Constants and generalisation bounds of the fitted model on the sample (X, y).

        With (X, y) the training sample (m rows) and B = ||alpha||_H a posteriori (spec 4.6):
        ``theta``, ``kappa`` (003 Table 2, from the map; Monte Carlo estimates for an
        rwtool.Instantiation, which ``theta_kappa`` says), ``tau`` (003 eq. 56, estimated on X
        with ``n_draws`` fresh centres, 003 Sec. 7.3), ``rkhs_norm``, ``l2p_norm`` (estimated),
        ``train_loss`` (mean (f - y)^2 / 2 on +/-1 or standardised targets), ``y_bound``
        (max |y| in those units), ``rho`` = theta B + y_bound and ``loss_max`` =
        (theta B + y_bound)^2 / 2 (the squared loss's Lipschitz constant and largest value on
        |f| <= theta B, |y| <= y_bound, which every bound uses), ``train_error``
        (classifiers), ``rademacher_bound`` (000 Theorem 10, a bound on the test loss),
        ``gap_theorem62`` and ``gap_theorem65`` (003 eq. 89 and 95, bounds on test minus train
        loss), ``m`` and ``delta``. With several outputs each entry is a list (one per output).

        The two passes over the rows (the model's values f(x_i) and the tau estimate) run in
        slices of rows; ``callback`` (rwtool.progress) receives "bounds" events between them
        and cancels with rwtool.FitCancelled.
        """
        check_is_fitted(self)
        if not 0.0 < float(delta) < 1.0:
            raise ValueError(f"delta must be in (0, 1), got {delta!r}")
        X = check_array(X, n_features=self.n_features_in_)
        Y = self._targets_for(y, len(X))
        Xp = self._prepare_X(X)
        m = len(X)
        fmap = self.feature_map_
        progress = make_progress(callback)
        progress.start("bounds", 2 * m)
        # f(x_i) as predict computes it, a block of its rows at a time (never the m x T
        # feature matrix: 1.2 GB at 150,000 rows and T = 1000): a cancel is seen between blocks
        F = np.empty((m, self.coef_.shape[1]))
        step = fmap.predict_block_rows()
        for start in range(0, m, step):
            stop = min(m, start + step)
            F[start:stop] = fmap.linear_predict(Xp[start:stop], self.coef_)
            progress.update(stop)
        theta, kappa = fmap.constants()
        tau = estimate_tau(fmap, Xp, n_draws, random_state,
                           tick=lambda done: progress.update(m + done))
        norms = np.atleast_1d(fmap.rkhs_norm(self.coef_))
        l2 = np.atleast_1d(l2p_norm(fmap, self.coef_, n_draws, random_state))
        sq = get_loss("squared")
        losses = np.mean(sq.value(F, Y), axis=0)
        out = {"theta": theta, "kappa": kappa, "tau": tau, "m": m, "delta": float(delta),
               "theta_kappa": ("Monte Carlo estimates" if getattr(
                   fmap, "constants_are_estimates", False) else "003 Table 2")}
        # |y| in the units the model is fit in: +/-1 for classes, standardised regression targets
        ybs = np.max(np.abs(Y), axis=0)
        per = {"rkhs_norm": norms.tolist(), "l2p_norm": l2.tolist(),
               "train_loss": losses.tolist(), "y_bound": ybs.tolist(),
               "rho": [sq.lipschitz(theta * B, Yb) for B, Yb in zip(norms, ybs)],
               "loss_max": [sq.max_value(theta * B, Yb) for B, Yb in zip(norms, ybs)],
               "rademacher_bound": [rademacher_bound(L, B, theta, m, delta, y_bound=Yb)
                                    for L, B, Yb in zip(losses, norms, ybs)],
               "gap_theorem62": [gap_theorem62(B, theta, m, delta, y_bound=Yb)
                                 for B, Yb in zip(norms, ybs)],
               "gap_theorem65": [gap_theorem65(B2, tau, m, delta, y_bound=Yb)
                                 for B2, Yb in zip(l2, ybs)]}
        for key, val in per.items():
            out[key] = val[0] if len(val) == 1 else val
        if self._estimator_type == "classifier":
            # F is the decision function: its labels are predict(X)'s, without a second pass
            check_finite_result(F, solver=type(self).__name__, what="the decision values")
            out["train_error"] = float(np.mean(self._labels(F) != np.asarray(y)))
        progress.end()
        return out

    def _make_map(self, seed):
        return make_feature_map(self.instantiation, n_features=self.n_features, sigma=self.sigma,
                                gamma=self.gamma, theta=self.theta, kappa=self.kappa,
                                random_state=seed, dtype=self.dtype)

    def width_rule(self, n_features_in: int, x_norm_max: float | None = None) -> dict:
        """The kernel width and the constants a fit on rows of ``n_features_in`` inputs gets,
        known before fitting (from the map's own rules: what the app shows is what the fit uses).

        ``n``: the columns the map sees (inputs plus the bias column); ``gamma`` and
        ``gamma_rule`` ("given", "theta" or "kappa" by 003 Table 4, "sigma");
        ``theta_target`` / ``kappa_target``: the value the rule used (theta's default resolved),
        else None. With ``x_norm_max``, sup ||x|| of the rows as the estimator prepares them
        (standardised when standardize=True) before the bias column: ``x_norm_max`` over the
        map's columns and ``theta``, ``kappa`` of 003 Table 2. A Monte Carlo instantiation has
        no closed form (``closed_form`` False): gamma and the constants come with its fit.
        """
        validate_params(self)
        fmap = self._make_map(None)
        bias = self._uses_bias()
        n = int(n_features_in) + int(bias)
        out = {"n": n, "closed_form": self._kind() != "mc", "theta_target": fmap.theta_rule(),
               "kappa_target": None, "gamma": None, "gamma_rule": None, "x_norm_max": None,
               "theta": None, "kappa": None}
        if not out["closed_form"]:
            return out
        gamma, rule = fmap.gamma_rule(n)
        out.update(gamma=gamma, gamma_rule=rule,
                   kappa_target=float(self.kappa) if rule == "kappa" else None)
        if x_norm_max is not None:
            xmax = math.sqrt(float(x_norm_max) ** 2 + (1.0 if bias else 0.0))
            out.update(x_norm_max=xmax, **fmap.table2_constants(n, gamma, xmax))
        return out

    def rkhs_norm(self) -> np.ndarray | float:
        """||alpha||_H = sqrt(a^T G a) of the learned weight function (per output)."""
        check_is_fitted(self)
        norms = self.feature_map_.rkhs_norm(self.coef_)
        return float(norms[0]) if len(norms) == 1 else norms


_RW_DOC = """
    Parameters
    ----------
    instantiation : str or rwtool.Instantiation, default "rwsign"
        The instantiation (W, phi, K, p): "rwsign", "rwexpsign", "rwrelu", "rwexprelu",
        "rwstumps" (seed 003 Table 2, closed-form features), or any (p, K, phi) with Monte Carlo
        features: an rwtool.Instantiation, its name, or "mc:<distribution>:<kernel>:<base>"
        (docs/INSTANTIATIONS.md).
    n_features : int, default 1000
        T, the number of random features (centres w_t ~ p).
    solver : {"lstsq", "lasso", "sfgd", "osd"}, default "lstsq"
        "lstsq": exact least squares (003 Algorithm 4), accumulated over row blocks.
        "lasso": J1 = (1/m) sum (f - y)^2 / 2 + reg ||a||_1 by coordinate descent (003
        Algorithm 5); only the features with a non-zero coefficient are kept.
        "sfgd": stochastic functional gradient descent (003 Algorithm 3), one centre per
        iteration, capped step. "osd": Optimal Stepsize Descent (000 Algorithm 2).
        See docs/SOLVERS.md.
    reg : float, "auto" or None, default None
        lam in J = (1/m) sum loss(f, y) + (lam/2) ||alpha||_H^2 (lstsq, sfgd, osd) or lam1 in
        J1 (lasso): the same lam means the same model whatever the solver (spec section 3).
        "auto" chooses it by 3-fold cross-validation over ``AUTO_REG[solver]``, growing the grid
        past an end the best value sits at (``reg_``, ``reg_search_``); for "lstsq" it is one
        pass over the data, the per-fold sums scoring every value (R^2 from the sums, or
        accuracy on a position-hashed validation sample for classifiers) and giving the model,
        the same choice as partial_fit and Dask make (docs/TUNING.md). For "lasso", "auto" is the warm-started path
        from lam_max = max |Phi^T y| / m down to lam_max / 1000 (30 values, further while the
        smallest is best), chosen by 3-fold cross-validation from per-fold sums (one pass, as
        partial_fit and Dask do; solvers/_lasso_cv.py). None (the default) is the solver's
        default, ``DEFAULT_REG[solver]``: "auto" for "lstsq" and "lasso", and values measured
        across data sets for sfgd and osd (1e-6; docs/SOLVERS.md).
    sigma : float, default 1.0
        s, standard deviation of the sampling distribution p.
    gamma : float or None, default None
        g, kernel width. None: from theta (RWSign, RWRelu) or kappa (RWExpSign, RWExpRelu) by
        003 Table 4, and gamma = sigma for RWStumps (sigma = gamma = 1 was measured against
        a grid of sigma and gamma / sigma: docs/bench/bandwidth_defaults.md). An explicit
        value overrides the rule.
    theta : float in (0, 1) or None, default None
        Target theta of the gamma rule of the Gaussian-kernel instantiations (RWSign, RWRelu,
        Monte Carlo Gaussian kernels) when gamma is None; ``feature_map_.theta_target_`` is the
        value used. None: 0.1 for RWSign and RWRelu, 0.5 for a Monte Carlo Gaussian kernel
        (rwtool.features._instantiation.resolved_theta), both measured across the nine data sets of
        the defaults benchmark (docs/bench/instantiation_defaults.md; 0.1 makes the Monte Carlo
        sections rest on too few draws). A smaller theta tightens RWSign's bounds (its
        ``theta_`` is theta).
    kappa : float > 1, default 10.0
        Target kappa for RWExpSign/RWExpRelu and Monte Carlo exponential kernels when gamma is
        None (measured across data sets and feature draws, docs/bench/instantiation_defaults.md;
        a larger kappa loosens the bounds of ``bounds()``).
    eps : float, default 1e-10
        Ridge term m eps I added to the normal equations (003 eq. 82) for conditioning.
    loss : {"squared", "logistic"}, default "squared"
        (f - y)^2 / 2 or log(1 + exp(-y f)); logistic for classifiers with sfgd/osd only.
    max_iter : int or None, default None
        lasso: cap on coordinate-descent sweeps per lam (None: 1000). sfgd/osd run one
        iteration per feature (n_features) and ignore it.
    tol : float, default 1e-4
        lasso: stop when the duality gap is <= tol ||y||^2 / m (scikit-learn's rule).
    batch_size : int or None, default None
        b, rows per iteration of sfgd/osd (drawn with replacement). None: min(500, rows) for
        both (the papers used 50): each fits one coefficient per centre on its batch, once,
        and small batches cost 0.02-0.08 test error (000's remark after Algorithm 2; measured
        in docs/bench/iterative_defaults.md).
    radius : float or None, default None
        B, radius of the projection step of sfgd (None: no projection); 000 used B = 1000.
    step_cap : float or None, default 0.25
        c of the sfgd step eta_t = min(1 / (reg t), c / L), L the smoothness of one step's
        objective estimated on the data (docs/SOLVERS.md). None: the paper's 1 / (reg t),
        whose first steps are huge for a small reg (the run then stops with NumericalError).
    average : bool, default False
        sfgd outputs the average of its iterates (True: 003 Algorithm 3's output) or the last
        one (the default: each iterate adds a centre, so the average damps the late centres'
        coefficients; at batch 500 the last iterate was better on 11 of 14 cases measured in
        docs/bench/iterative_defaults.md, worse on 2 by at most 0.011).
    path_length : int, default 1
        lasso: number of lam values on a geometric path from lam_max down to reg, solved with
        warm starts (1: solve at reg directly); reg="auto" walks its own path and ignores it.
    standardize : bool, default True
        Standardise X (and y for the regressor) with training statistics (003 Appendix C).
    bias : bool, default True
        Append a constant column for the dot-product instantiations (not RWStumps).
    block_size : int or None, default None
        Rows per block in the accumulation of Phi^T Phi (None: 32 MB of features and at least
        2048 rows, fewer when the data has fewer).
    random_state : int, Generator or None, default None
        Seed of the feature draw; the same seed gives the same model whatever the thread count.
    dtype : {"float64", "float32"}, default "float64"
        lstsq: precision of the features and of each block's products Phi^T Phi, Phi^T y
        (float32: SSYRK, about twice DSYRK's rate, and half the memory of a block); the sums
        across blocks and the solve stay float64. The decision values of a float32 model are
        within the tolerance stated in docs/SOLVERS.md of the float64 model's.

    Attributes
    ----------
    coef_ : ndarray (T, k)
        Coefficients a on the features (one column per class or output).
    feature_map_ : RKHSWeighting
        The fitted instantiation (centres, gamma_, theta_, kappa_, theta_target_).
    x_scaler_, bias_ : the recorded preprocessing.
    reg_ : float, the reg the model was fitted with; reg_search_ (reg "auto"): the validation
        scores of every candidate (``diverged`` marks the candidates whose fit diverged).
    n_features_in_ : int
    fit_time_ : float, seconds.
    solver_info_ : dict, what the solver reports (jitter, iterations, convergence).
    n_iter_ : int, iterations run (Lasso sweeps, SFGD/OSD centres, 1 for lstsq).
"""


_POSTERIOR_DOC = """    posterior_chol_ : ndarray (T, T), exact least-squares fits only
        Lower Cholesky factor of the solved system Phi^T W Phi + m reg R + m eps I, kept for
        ``predict(X, return_std=True)`` (8 T^2 bytes; saved with the model unless
        ``rwtool.save(..., keep_posterior=False)``).
    noise_var_ : ndarray (k,), exact least-squares fits only
        The noise variance s2 = RSS / (m - df) in standardised units (docs/SOLVERS.md).
"""


class RWClassifier(ScaleClassifierHooks, _ClassifierTargets, _RW):
    __doc__ = ("RKHS-weighting classifier (Dube & Marchand, seed 003): binary, or multiclass "
               "one-vs-rest on shared features; targets coded +/-1.\n" + _RW_DOC +
               "    classes_ : ndarray, the class labels.\n")


class RWRegressor(ScaleHooks, _RegressorTargets, _RW):
    __doc__ = ("RKHS-weighting regressor (Dube & Marchand, seed 003); y may have several "
               "columns.\n" + _RW_DOC + "    y_scaler_ : the recorded target standardisation.\n"
               + _POSTERIOR_DOC)


# ----------------------------------------------------------------------------- kitchen sinks

class _RKS(_RandomFeatureModel):
    _family = "rks"
    _parameters = _RKS_PARAMETERS

    def __init__(self, base="relu", n_features=1000, solver="ridge", reg=None, sigma=None,
                 kernel="gaussian", loss="squared", max_iter=None, tol=1e-4, batch_size=50,
                 average=True, path_length=1, standardize=True, bias=True, block_size=None,
                 random_state=None, dtype="float64"):
        self.base = base
        self.n_features = n_features
        self.solver = solver
        self.reg = reg
        self.sigma = sigma
        self.kernel = kernel
        self.loss = loss
        self.max_iter = max_iter
        self.tol = tol
        self.batch_size = batch_size
        self.average = average
        self.path_length = path_length
        self.standardize = standardize
        self.bias = bias
        self.block_size = block_size
        self.random_state = random_state
        self.dtype = dtype

    def _kind(self):
        return check_choice(self.base, "base", RKS_BASES)

    def _prune_geometry(self, Phi):
        """G = I (RKS regularises ||a||_2) and theta = sup_x ||psi(x)||_2."""
        kind = self._kind()
        T = self.coef_.shape[0]
        if kind in ("sign", "stumps"):
            theta = 1.0                       # |psi_t| <= 1 / sqrt(T)
        elif kind == "fourier":
            theta = math.sqrt(2.0)            # |psi_t| <= sqrt(2 / T)
        elif Phi is not None:
            theta = float(np.sqrt(np.max(np.einsum("ij,ij->i", Phi, Phi))))
        else:
            raise ValueError("pruning ReLU kitchen sinks needs X (theta = max ||psi(x)|| is "
                             "measured on it)")
        return np.eye(T), theta

    def _map_sigma(self) -> float:
        """sigma, or its default: 1 for the base predictors (p = N(0, I) on standardised inputs,
        003 Table 2) and sqrt(d / 2) for Fourier features, scikit-learn's gamma="scale" on d
        standardised columns (sigma = 1 left every pair of rows nearly orthogonal as soon as d
        was more than a few: docs/bench/defaults.md; wider multiples and the median heuristic
        lose on skin, wine and with sgd: docs/bench/bandwidth_defaults.md)."""
        if self.sigma is not None:
            return float(self.sigma)
        if self._kind() != "fourier":
            return 1.0
        return math.sqrt(max(int(self.n_features_in_), 1) / 2.0)

    def _make_map(self, seed):
        kind = self._kind()
        if kind == "fourier":
            return RandomFourierFeatures(n_features=self.n_features, kernel=self.kernel,
                                         sigma=self._map_sigma(), variant="phase",
                                         random_state=seed, dtype=self.dtype)
        return KITCHEN_BASES[kind](n_features=self.n_features, sigma=self._map_sigma(),
                                   random_state=seed, dtype=self.dtype)


_RKS_DOC = """
    Parameters
    ----------
    base : {"sign", "relu", "stumps", "fourier"}, default "relu"
        Base predictor phi(w, x): sign(<w, x>), max(0, <w, x>), sign(x_{w1} - w2) with the
        distributions of the RKHS weightings (seed 003 Table 2), or random Fourier features
        sqrt(2/T) cos(<w, x> + b) of ``kernel``.
    n_features : int, default 1000
        T, the number of random features.
    solver : {"ridge", "lasso", "sgd"}, default "ridge"
        "ridge": (Psi^T Psi + m lam I) a = Psi^T y, accumulated over row blocks (003 Algorithm 1).
        "lasso": (1/m) sum (f - y)^2 / 2 + reg ||a||_1 (003 Algorithm 2), zero features dropped.
        "sgd": averaged mini-batch SGD on the fixed features (docs/SOLVERS.md).
    reg : float, "auto" or None, default None
        lam in J = (1/m) sum loss(f, y) + (lam/2) ||a||^2, features scaled by 1/sqrt(T)
        (lam1 of the Lasso for solver="lasso"). "auto": 3-fold cross-validation over
        ``AUTO_REG[solver]``, as for the RKHS weightings (the Lasso: over its path from
        lam_max, as RWClassifier says). None (the default): ``DEFAULT_REG[solver]``, "auto"
        for "ridge" and "lasso" and a measured value for "sgd".
    sigma : float or None, default None
        Standard deviation of p (sign/relu/stumps) or the kernel bandwidth (fourier). None:
        1.0 for sign/relu/stumps, and sqrt(d / 2) for fourier (d = n_features_in_), the
        bandwidth of scikit-learn's gamma="scale" on standardised inputs; with
        standardize=False give a number. The value used is ``feature_map_.sigma``. Both were
        measured against other values (0.5-2.83 sqrt(d / 2) and the median heuristic for
        fourier) on nine data sets: docs/bench/bandwidth_defaults.md.
    kernel : {"gaussian", "laplacian", "cauchy"}, default "gaussian"
        Kernel of the Fourier features (base="fourier" only).
    loss : {"squared", "logistic"}, default "squared"
        logistic for classifiers with solver="sgd" only.
    max_iter : int or None, default None
        lasso: sweeps per lam (None: 1000); sgd: epochs (None: 5).
    tol : float, default 1e-4
        lasso: duality-gap tolerance; sgd: stop when an epoch improves the mean training loss
        by less than this fraction.
    batch_size : int or None, default 50
        sgd mini-batch size (None: 50 too).
    average : bool, default True
        sgd outputs the average of its iterates from the second epoch on.
    path_length : int, default 1
        lasso: number of lam values on the warm-started path down to reg.
    standardize, bias, block_size, random_state, dtype
        As for the RKHS weightings (bias only for sign and relu; dtype="float32" with the
        ridge solver).

    Attributes
    ----------
    coef_ : ndarray (T, k); feature_map_ : the fitted map; x_scaler_, bias_; reg_, reg_search_
    (as for the RKHS weightings); n_features_in_;
    fit_time_; solver_info_; n_iter_ (Lasso sweeps, SGD epochs, 1 for ridge).
"""


class RKSClassifier(ScaleClassifierHooks, _ClassifierTargets, _RKS):
    __doc__ = "Random kitchen sinks classifier (Rahimi & Recht; seed 003 Section 3.1).\n" + _RKS_DOC


class RKSRegressor(ScaleHooks, _RegressorTargets, _RKS):
    __doc__ = ("Random kitchen sinks regressor (Rahimi & Recht; seed 003 Section 3.1).\n"
               + _RKS_DOC + _POSTERIOR_DOC)
