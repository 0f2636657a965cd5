"""BKerNNRegressor and BKerNNClassifier: the Brownian-kernel neural network (seed 001).

A one-hidden-layer network f(x) = c + (1/m) sum_j g_j(w_j^T x) whose first layer (the particles
w_j) is learned by proximal gradient descent and whose non-linearities g_j live in the RKHS of
the Brownian kernel, obtained by an exact kernel ridge solve (Follain & Bach 2024, Algorithm 1;
spec methods/bkernn.md). The numerics are in :mod:`rwtool.solvers._bkernn`; this module owns input
checks, preprocessing, target coding, the fitted state and the introspection the GUI draws
(learned directions, variable importance, feature subspace, ridge functions). It must not hold
numerical kernels of its own.
"""

from __future__ import annotations

import math
import numbers
import time
import warnings

import numpy as np

from .._callbacks import CallbackSupport, reports_to_sklearn
from .._base import (BaseEstimator, ClassifierMixin, RegressorMixin, Standardizer, check_array,
                     check_feature_names, check_is_fitted, check_random_state, check_scalar,
                     check_X_y, encode_classes)
from .._params import Param, params_table, validate_params
from ..solvers._bkernn_cg import block_count
from ..solvers._bkernn import (CG_TOL, KERNEL_SOLVERS, PENALTIES, choose_kernel_solver,
                               feature_learning_score, fit_particles, ridge_decision, ridge_tables)
from ..exceptions import FitCancelled, NumericalError, NumericalWarning, check_finite_result
from ..progress import make_progress
from ..resources import FitEstimate, check_fit_memory, seconds_of
from ..threads import single_blas_thread
from ._weights import weighted_rows

__all__ = ["BKerNNRegressor", "BKerNNClassifier", "PENALTIES", "feature_learning_score"]

_PARAMS_DOC = """
    Minimises (seed 001, eq. 10, square loss; q target columns share the particles)

        (1/q) sum_k [ (1/(2n)) ||Y_k - K alpha_k - c_k 1||^2 + (reg/2) alpha_k^T K alpha_k ]
            + reg * Omega(W),      K = (1/m) sum_j K^{(w_j)}  (Brownian kernel on w_j^T x)

    by Algorithm 1: (alpha, c) in closed form (Lemma 7), one proximal gradient step on W per
    iteration (Lemmas 8-9) with Beck's backtracking, and (alpha, c) always consistent with the
    final particles.

    Parameters
    ----------
    penalty : {"basic", "variable", "feature", "concave_variable", "concave_feature"}
        Omega of Section 2.5: group lasso on particles (basic), on input variables (variable),
        nuclear norm (feature), or their concave log versions with parameter ``s``.
    reg : float > 0 or "auto"
        lambda. "auto" is the paper's rule of thumb max_i ||x_i||_2 / n on the preprocessed
        training inputs (Section 5.3, Exp. 6; Exp. 3 and 5 use twice that).
    n_particles : int
        m, the number of particles (hidden width).
    s : float > 0
        Concavity of the concave penalties (s -> 0 recovers the convex ones); the paper's code
        uses 1.
    step_size : float > 0
        Initial proximal-gradient step gamma_0 (500 in the paper's experiments).
    max_iter : int >= 0
        Iterations of Algorithm 1. 0 gives kernel ridge regression with the random initial
        kernel.
    backtracking : bool
        Beck's line search (x1.5 at each iteration, /2 until sufficient decrease). When False the
        step is constant and the objective may increase.
    max_backtrack : int >= 0
        Halvings tried per iteration; if none satisfies the condition the step is rejected.
    standardize : bool
        Standardise the inputs (and regression targets) with training statistics. The paper
        standardises real data beforehand; pass False to work on raw inputs (its synthetic
        experiments).
    kernel_solver : {"auto", "dense", "cg"}
        How each trial's kernel ridge step is solved. "dense": the n x n kernel and a Cholesky
        factorisation (O(n^2 m + n^3) time, O(n^2) memory). "cg": conjugate gradients on kernel
        products by sorted prefix sums (O(m n) per product after an O(m n log n) sort, O(n m)
        memory), warm-started from the last alpha and preconditioned by a coarse (block)
        version of the kernel. "auto": "cg" from 800 rows (measured switch point,
        docs/bench/bkernn.md).
    cg_tol : float in (0, 0.1]
        Relative residual ||Y~ - (K~ + n reg I) alpha|| / ||Y~|| at which CG stops. G is read
        by the variational form, so its error is below cg_tol^2 ||Y~||^2 / (2n). Line-search
        trials that the Beck test rejects stop earlier, once a lower bound of G proves it.
        The default 1e-5 fits as well as the dense path but not along its trajectory (alpha
        feeds the next step); 1e-10 makes the dense path's line-search decisions, at 1.3-1.5x
        the time (docs/BKERNN.md).
    random_state : None, int or Generator
        Seeds the initial particles, i.i.d. N(0, 1/d).

    Attributes
    ----------
    particles_ : (d, m) array
        W, the learned first layer (columns w_j), acting on the preprocessed inputs.
    dual_coef_ : (n, q) array
        alpha for the final particles (sum over rows is 0, Lemma 7).
    intercept_ : (q,) array
        c' of the distance form f(x) = c' - (1/(2m)) sum_{i,j} alpha_i |w_j^T (x - x_i)|.
    train_projections_ : (n, m) array
        X W on the training inputs: the knots of the ridge functions.
    reg_ : float
        The lambda used.
    n_iter_ : int
        Completed iterations.
    kernel_solver_ : str
        "dense" or "cg", the path taken.
    cg_iterations_ : int
        Conjugate-gradient iterations summed over all solves (0 on the dense path).
    history_ : dict of arrays
        Per iteration (entry 0 is the initial point): objective (G + reg Omega), G, penalty
        (reg Omega), train_loss ((1/2) mean squared residual on the fitted targets), step_size,
        n_backtracks, accepted.
    x_scaler_ : Standardizer or None
    n_features_in_ : int

    Cancellation: a progress callback (stage "iterations"; metrics objective, train_loss,
    step_size; polled between slices of every long computation too, events at most 0.1 s
    apart) that returns True stops
    the fit; the estimator keeps the last completed iterate (particles with their own alpha and
    c) and ``fit`` raises :class:`rwtool.FitCancelled` with ``partial_model=True``. ``predict``
    and ``decision_function`` take a callback too (stage "predicting", ``done`` rows of
    ``total``, polled between slices of rows): True stops them with ``FitCancelled``.
"""


class _BKerNN(CallbackSupport, BaseEstimator):
    """Fit, predict and introspection shared by the regressor and the classifier."""

    def __init__(self, penalty="concave_feature", reg="auto", n_particles=50, s=1.0,
                 step_size=500.0, max_iter=40, backtracking=True, max_backtrack=8,
                 standardize=True, kernel_solver="auto", cg_tol=CG_TOL, random_state=None):
        self.penalty = penalty
        self.reg = reg
        self.n_particles = n_particles
        self.s = s
        self.step_size = step_size
        self.max_iter = max_iter
        self.backtracking = backtracking
        self.max_backtrack = max_backtrack
        self.standardize = standardize
        self.kernel_solver = kernel_solver
        self.cg_tol = cg_tol
        self.random_state = random_state

    # -- validation -------------------------------------------------------------------------
    _parameters = params_table(
        Param("penalty", "choice", "concave_feature", "Omega: group lasso on particles "
              "(basic) or input variables (variable), nuclear norm (feature), or their concave "
              "log versions", choices=PENALTIES, ref="seed 001 Section 2.5"),
        Param("reg", "float", "auto", "lambda of the objective; 'auto': the paper's rule of "
              "thumb max_i ||x_i|| / n on the preprocessed inputs", interval="(0, inf)",
              keywords=("auto",), ref="seed 001 eq. 10; Section 5.3"),
        Param("n_particles", "int", 50, "m, the number of particles (hidden width)",
              interval="[1, inf)"),
        Param("s", "float", 1.0, "concavity of the concave penalties (s -> 0: the convex ones)",
              interval="(0, inf)", only=("penalty", ("concave_variable", "concave_feature")),
              ref="seed 001 Section 2.5", advanced=True),
        Param("step_size", "float", 500.0, "gamma_0, the initial proximal-gradient step",
              interval="(0, inf)", ref="seed 001 Algorithm 1", advanced=True),
        Param("max_iter", "int", 40, "iterations of Algorithm 1 (0: kernel ridge regression "
              "with the random initial kernel)", interval="[0, inf)",
              ref="seed 001 Algorithm 1"),
        Param("backtracking", "bool", True, "Beck's line search (False: a constant step, the "
              "objective may increase)", advanced=True),
        Param("max_backtrack", "int", 8, "halvings of the step tried per iteration",
              interval="[0, inf)", advanced=True),
        Param("standardize", "bool", True, "standardise the inputs (and regression targets) "
              "with training statistics", advanced=True),
        Param("kernel_solver", "choice", "auto", "the kernel ridge step: dense Cholesky, "
              "preconditioned conjugate gradients, or auto (cg from 800 rows)",
              choices=KERNEL_SOLVERS),
        Param("cg_tol", "float", CG_TOL, "relative residual at which conjugate gradients stop",
              interval="(0, 0.1]"),
        Param("random_state", "seed", None, "seeds the initial particles, i.i.d. N(0, 1/d)",
              none="a fresh draw"))

    def _validate(self):
        return validate_params(self)["penalty"]

    def _prepare_X(self, X):
        return self.x_scaler_.transform(X) if self.x_scaler_ is not None else X

    def resolved_reg(self, n_samples: int, x_norm_max: float | None = None) -> float:
        """lambda of a fit on ``n_samples`` rows: ``reg`` itself, or for reg="auto" the paper's
        rule of thumb max_i ||x_i|| / n (001 Sec. 5.3) with ``x_norm_max`` = max_i ||x_i|| over
        the rows as the fit prepares them (standardised when standardize=True)."""
        if not isinstance(self.reg, str):
            return float(self.reg)
        if x_norm_max is None:
            raise ValueError("reg='auto' is computed from the rows: pass x_norm_max, the "
                             "largest row norm of the prepared inputs")
        return float(x_norm_max) / int(n_samples)

    @property
    def n_features_out_(self) -> int:
        """Particles w_j with a non-zero norm (a penalty may zero some: spec 6.5)."""
        check_is_fitted(self, "particles_")
        return int(np.count_nonzero(np.any(self.particles_ != 0, axis=0)))

    # -- fit ----------------------------------------------------------------------------------
    @reports_to_sklearn
    def fit(self, X, y, sample_weight=None, callback=None):
        """Learn the particles and the ridge coefficients; return self.

        ``sample_weight`` (one weight >= 0 per row, None: 1 each) gives the weighted objective:
        the data term becomes (1 / (2 sum w)) sum_i w_i ||y_i - f(x_i)||^2 in the ridge step
        (dense and conjugate-gradient paths), the particle gradient and the line search, and
        the standardisation statistics, the targets' mean and the intercept are weighted. Only
        the ratios of the weights matter, except in reg="auto", whose rule max_i ||x_i|| / n
        reads the weights as counts (n = sum w); a row of weight 0 is absent, and a row of
        integer weight c fits as c copies of it (docs/BKERNN.md, "Row weights").

        ``callback(event)`` receives rwtool.progress events; see the class docstring for
        cancellation.
        """
        penalty = self._validate()
        check_feature_names(self, X, reset=True)
        X, y, weights = weighted_rows(X, y, sample_weight)
        X, Y = self._fit_targets(X, y, weights)
        for attr in ("particles_", "dual_coef_"):
            if hasattr(self, attr):  # a failed refit must not leave the old model half-replaced
                delattr(self, attr)
        t0 = time.perf_counter()
        n, d = X.shape
        self.n_features_in_ = d
        self.x_scaler_ = Standardizer.fit(X, weights) if self.standardize else None
        Xp = np.ascontiguousarray(self._prepare_X(X))
        # the rule's n counts a row of weight c as c rows: the repeated rows' lambda
        count = n if weights is None else float(
            np.sum(np.asarray(sample_weight, dtype=np.float64)))
        if isinstance(self.reg, str):
            # max_i ||x_i|| computed on X / max|X|: squares of entries near 1e200 overflow and
            # those near 1e-200 underflow
            peak = float(np.max(np.abs(Xp)))
            if peak == 0.0:
                raise ValueError("reg='auto' needs inputs that are not all zero; pass reg > 0")
            lam = self.resolved_reg(count,
                                    peak * float(np.max(np.linalg.norm(Xp / peak, axis=1))))
        else:
            lam = self.resolved_reg(count)
        m = int(self.n_particles)
        rng = check_random_state(self.random_state)
        W0 = rng.standard_normal((d, m)) / math.sqrt(d)
        y_mean = np.average(Y, axis=0, weights=weights)
        Yc = np.ascontiguousarray(Y - y_mean)
        try:
            res = fit_particles(Xp, Yc, W0, lam, penalty, s=float(self.s), sample_weight=weights,
                                step_size=float(self.step_size), max_iter=int(self.max_iter),
                                backtracking=bool(self.backtracking),
                                max_backtrack=int(self.max_backtrack), callback=callback,
                                kernel_solver=self.kernel_solver.lower(),
                                cg_tol=float(self.cg_tol))
        except FitCancelled as exc:
            if exc.partial_model and exc.partial is not None:
                self._set_fitted(exc.partial, lam, y_mean, weights, t0, cancelled=True)
            raise
        fix = "standardise the inputs and targets (standardize=True), or raise reg"
        check_finite_result((res["W"], res["alpha"]), solver="bkernn", iteration=res["n_iter"],
                            fix=fix)
        self._set_fitted(res, lam, y_mean, weights, t0)
        try:
            check_finite_result(self.intercept_, solver="bkernn", fix=fix,
                                what="the fitted intercept")
        except NumericalError:
            for attr in ("particles_", "dual_coef_", "intercept_", "_tables"):
                self.__dict__.pop(attr, None)
            raise
        if not np.any(self.particles_):
            warnings.warn(
                "every particle is zero after the fit, so the model predicts a constant (the "
                "training mean). The penalty reg * Omega removed all of them: with "
                "standardize=False the inputs' scale enters reg='auto' and the steps; standardise "
                "the inputs, or lower reg or step_size", NumericalWarning, stacklevel=2)
        return self

    def _estimate_fit(self, n_samples, n_features_in, n_outputs):
        """Peak memory and CPU time of ``fit`` (rwtool.resources contract; time: :meth:`_work`).

        The larger of two moments, in float64 arrays (docs/BKERNN.md has the measurements):

        * a line-search trial (CG path): the standardised X and its transpose (2 n d); two
          iterates, the current one's projections and sort order and the trial's projections,
          sort order and sorted values (5 m n); the trial's block indices (m n bytes); the
          preconditioner's Gram matrix and Cholesky factor (2 (m (B - 1))^2); targets,
          coefficients and CG vectors (20 n q; the product's 4 groups of rows, each with a
          copy of the vector and its sums, are 8 n q of it). The dense path holds the
          iterates' projections, the gradient's sort order and signed sums instead (4 m n)
          and adds the n x n kernel and its Cholesky factor (2 n^2: LAPACK reads the
          factor's transpose in place, no Fortran copy);
        * the fitted model being built: X (n d), the last projections, their stored transpose,
          the sorted knots (3 m n), the prediction tables (2 m (n + 1) q) and targets,
          coefficients and training decisions (5 n q).

        Then 15% for what the arrays do not show (the allocator's free lists, numba's
        per-thread buffers), measured at 8-16% of the counted arrays at 10,000-100,000 rows.
        """
        n, d, q = int(n_samples), int(n_features_in), max(1, int(n_outputs))
        if self._estimator_type == "classifier" and q == 2:
            q = 1                     # two classes: one +/-1 column
        m = int(self.n_particles)
        model = 8 * (n * d + 3 * m * n + 2 * m * (n + 1) * q + 5 * n * q)
        dense = choose_kernel_solver(str(self.kernel_solver).lower(), n) == "dense"
        if dense:
            trial = 8 * (2 * n * d + 4 * m * n + 16 * n * q + 2 * n * n)
        else:
            M = m * (block_count(n) - 1)
            trial = 8 * (2 * n * d + 5 * m * n + 20 * n * q + 2 * M * M) + m * n
        total = max(trial, model) * 23 // 20
        work = self._work(n, d, q, dense)
        if dense:
            return FitEstimate(
                peak_bytes=total, seconds=seconds_of(work), work=work,
                detail=(f"the n x n kernel and its Cholesky factor "
                        f"({2 * 8 * n * n / 2**30:.1f} GiB at n = {n}) dominate; use "
                        f"kernel_solver='cg' (or 'auto'), whose memory grows linearly in n"))
        return FitEstimate(
            peak_bytes=total, seconds=seconds_of(work), work=work,
            detail=(f"O(n (d + m q)) arrays ({total / 2**20:.0f} MiB at "
                    f"n = {n}): the projections, their sort orders and the prediction tables "
                    f"(m = {m} particles, q = {q} outputs); fit on fewer rows or particles"))

    def _work(self, n, d, q, dense) -> dict:
        """The work of ``max_iter`` iterations on n rows (rwtool.resources.KERNEL_RATES).

        CG path: each iteration sorts the m projections of the n rows and runs warm-started
        CG on sorted prefix sums for each line-search trial, O(m n log n) in all (docs/BKERNN.md
        "Scale": 3.9-4.7x per 4x rows from 8,000 to 128,000 rows on a quiet machine, 4.3-5.0x
        from 32,000 to 128,000 over seven runs at load up to 3.9; m n log2 n grows 4.3-4.6x
        there); the kernel ``bkernn_iteration`` counts m n log2 n per iteration and
        output column, its rate folds in the trials and CG steps an iteration takes. Dense
        path: per trial the n x n kernel (n^2 m) and its Cholesky factor (n^3 / 3), about two
        trials an iteration."""
        m, it = int(self.n_particles), int(self.max_iter)
        if dense:
            return {"blas": it * 2.0 * (n * n * (m + d) + n ** 3 / 3.0)}
        return {"bkernn_iteration": it * m * n * math.log2(max(n, 2)) * q,
                "blas": it * n * m * d}

    def _estimate_predict(self, n_rows, n_features_in, n_outputs=1) -> dict:
        """The work of ``decision_function`` on n rows: their m projections (BLAS) and a binary
        search of each in the particle's sorted training projections (O(m log n) a row; the
        training rows' count is taken as n's, which they are within a factor 5 in the app)."""
        n, d, m = int(n_rows), int(n_features_in), int(self.n_particles)
        q = max(1, int(n_outputs)) if n_outputs > 2 else 1
        return {"bkernn_predict": n * m * math.log2(max(n, 2)) * q, "blas": n * m * d}

    def _set_fitted(self, res, lam, y_mean, weights, t0, cancelled=False):
        self.reg_ = lam
        self.particles_ = np.ascontiguousarray(res["W"])
        self.dual_coef_ = np.ascontiguousarray(res["alpha"])
        # the tables from the (m, n) projections as the fit left them, before their stored
        # transpose, and those projections dropped from ``res`` after it: the transpose read
        # back into rows for the tables was one more m n floats at the fit's peak
        PT = np.ascontiguousarray(res.pop("PT"))
        self._tables = ridge_tables(PT, self.dual_coef_)
        self.train_projections_ = np.ascontiguousarray(PT.T)
        del PT
        self.n_iter_ = int(res["n_iter"])
        self.kernel_solver_ = res["kernel_solver"]
        self.cg_iterations_ = int(res["cg_iterations"])
        self.history_ = res["history"]
        self.cancelled_ = cancelled
        # c' = mean(Y) - mean(K_dist alpha), with the same distance form used by predict (1.7),
        # both means weighted by the rows' weights
        base = ridge_decision(self.train_projections_, *self._tables)
        self.intercept_ = y_mean - np.average(base, axis=0, weights=weights)
        self.fit_time_ = time.perf_counter() - t0

    def _prepare(self):
        """Rebuild the private prediction tables from the public fitted attributes.

        Call after restoring ``particles_``, ``train_projections_`` and ``dual_coef_`` (for
        example when loading a model file).
        """
        self._tables = ridge_tables(self.train_projections_.T, self.dual_coef_)

    def __getstate__(self):
        """The state a pickle (and a copy) keeps: every attribute but the prediction tables.
        They are derived from ``train_projections_`` and ``dual_coef_`` (the same bits each
        time: one stable sort and sequential prefix sums per particle), and hold about three
        times their size: (m n + 2 m (n + 1) q) floats against m n + n q, 172 of a model's
        230 MB at 150,000 rows and 50 particles. The first prediction of the unpickled model
        rebuilds them (:meth:`_prepare`, about a second of CPU at that size)."""
        state = self.__dict__.copy()
        state.pop("_tables", None)
        return state

    def _raw_decision(self, X, callback=None):
        check_is_fitted(self, "dual_coef_")
        X = check_array(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input; pass the "
                             f"same columns as at fit time")
        if not hasattr(self, "_tables"):
            self._prepare()
        with single_blas_thread():     # a row's projections whatever the thread count
            T = self._prepare_X(X) @ self.particles_
        if callback is None:
            return ridge_decision(T, *self._tables) + self.intercept_
        progress = make_progress(callback)
        try:
            progress.start("predicting", len(T))
            D = ridge_decision(T, *self._tables, tick=progress.update)
            progress.end()
        except FitCancelled:
            raise FitCancelled("prediction cancelled by the progress callback") from None
        return D + self.intercept_

    def _onnx_decision(self, g, x):
        """``_raw_decision`` as ONNX nodes on ``g`` (rwtool.persist's Graph) of the input x:
        c' - (1/(2m)) sum_j sum_i alpha_i |t_j - p_ij| summed directly over the training
        projections p_ij, O(m n) per row (ONNX has no sorted lookup for the O(m log n) of
        ``ridge_decision``), one particle at a time so a batch of N rows holds N x n values."""
        check_is_fitted(self, "dual_coef_")
        t = g.matmul(g.standardize(self.x_scaler_, x), g.const(self.particles_, "particles"))
        alpha = g.const(self.dual_coef_, "alpha")
        P = self.train_projections_
        total = None
        for j in range(P.shape[1]):
            tj = g.op("Gather", t, g.ints([j], "j"), axis=1)
            part = g.matmul(g.op("Abs", g.sub(tj, g.const(P[:, j][None, :], "knots"))), alpha)
            total = part if total is None else g.add(total, part)
        return g.add(g.scaled(total, -0.5 / P.shape[1]), g.const(self.intercept_, "intercept"))

    # -- introspection ------------------------------------------------------------------------
    def directions(self):
        """Unit directions w_j / ||w_j|| (d x m) and particle norms ||w_j|| (the output weights).

        A particle zeroed by the basic penalty has norm 0 and a zero direction (spec 6.5).
        """
        check_is_fitted(self, "particles_")
        norms = np.linalg.norm(self.particles_, axis=0)
        safe = np.where(norms > 0, norms, 1.0)
        return self.particles_ / safe, norms

    def variable_importance(self, normalize=True):
        """Row norms ||W^{(a)}||_2 of the particles, one per input variable (Section 2.5).

        With ``normalize`` they sum to 1 (all zero if every particle died).
        """
        check_is_fitted(self, "particles_")
        v = np.linalg.norm(self.particles_, axis=1)
        if normalize and v.sum() > 0:
            v = v / v.sum()
        return v

    def feature_subspace(self):
        """Singular values S (descending) and left singular vectors U (d x min(d, m)) of W.

        The leading columns of U span the learned feature subspace; a fast decay of S means a
        low-dimensional subspace (feature penalty, Section 2.5).
        """
        check_is_fitted(self, "particles_")
        U, S, _ = np.linalg.svd(self.particles_, full_matrices=False)
        return S, U

    def estimated_subspace(self, k):
        """A d x k basis of the learned subspace, as in the paper's score (16).

        Variable penalties: the canonical vectors of the k rows with the largest norms; the
        others: the top-k left singular vectors.
        """
        check_is_fitted(self, "particles_")
        d = self.particles_.shape[0]
        k = check_scalar(k, "k", numbers.Integral, low=1, high=d)
        if self.penalty.lower() in ("variable", "concave_variable"):
            rows = np.argsort(-np.linalg.norm(self.particles_, axis=1), kind="stable")[:k]
            return np.eye(d)[:, np.sort(rows)]
        S, U = self.feature_subspace()
        if U.shape[1] < k:
            raise ValueError(f"k={k} exceeds the rank bound min(d, m)={U.shape[1]}")
        return U[:, :k]

    def feature_learning_score(self, P):
        """Score (16) of the learned subspace against a true d x k basis ``P`` (1 is perfect)."""
        P = check_array(P, "P")
        return feature_learning_score(P, self.estimated_subspace(P.shape[1]))

    def ridge_functions(self, t, output=0):
        """g_j(t) for each particle j on a grid t (len(t) x m), such that f(x) = c' +
        (1/m) sum_j g_j(w_j^T x) with g_j(t) = -(1/2) sum_i alpha_i |t - w_j^T x_i|.

        Each g_j is piecewise linear with knots at the projected training points and constant
        outside their range (spec 1.7): the activation the network learned for particle j.
        """
        check_is_fitted(self, "dual_coef_")
        t = np.asarray(t, dtype=float).ravel()
        if not hasattr(self, "_tables"):
            self._prepare()
        knots, A, B = self._tables
        n = knots.shape[1]
        out = np.empty((t.size, knots.shape[0]))
        for j in range(knots.shape[0]):
            c = np.searchsorted(knots[j], t)
            a, b = A[j, :, output], B[j, :, output]
            out[:, j] = -0.5 * (t * (2.0 * a[c] - a[n]) - (2.0 * b[c] - b[n]))
        return out


class BKerNNRegressor(RegressorMixin, _BKerNN):
    __doc__ = ("Brownian-kernel neural network regressor (Follain & Bach 2024, seed 001); y "
               "may have several columns (they share the particles).\n" + _PARAMS_DOC +
               "    y_scaler_ : the recorded target standardisation (None without it).\n")

    def _fit_targets(self, X, y, weights=None):
        X, y = check_X_y(X, y, y_numeric=True, min_samples=2)
        Y = y[:, None] if y.ndim == 1 else y
        check_fit_memory(self, X.shape[0], X.shape[1], Y.shape[1])
        self.y_1d_ = y.ndim == 1
        self.y_scaler_ = Standardizer.fit(Y, weights) if self.standardize else None
        if self.y_scaler_ is not None:
            Y = self.y_scaler_.transform(Y)
        return X, np.ascontiguousarray(Y)

    def predict(self, X, callback=None):
        """f(x) = c' - (1/(2m)) sum_j sum_i alpha_i |w_j^T x - w_j^T x_i|  (spec 1.7).

        ``callback``: progress events while predicting; True stops with ``FitCancelled``.
        """
        return self._finite_prediction(X, callback)

    def _raw_prediction(self, X, callback=None):
        D = self._raw_decision(X, callback)
        if self.y_scaler_ is not None:
            D = self.y_scaler_.inverse_transform(D)
        return D[:, 0] if self.y_1d_ else D


class BKerNNClassifier(ClassifierMixin, _BKerNN):
    __doc__ = ("Brownian-kernel neural network classifier: square loss on +/-1 targets, "
               "multiclass one-vs-rest with particles shared by the classes (the objective is "
               "the mean of the per-class ones).\n" + _PARAMS_DOC.replace(
                   "    standardize : bool\n        Standardise the inputs (and regression targets)",
                   "    standardize : bool\n        Standardise the inputs") +
               "    classes_ : ndarray, the class labels.\n")

    def _fit_targets(self, X, y, weights=None):
        X, y = check_X_y(X, y, min_samples=2)
        self.classes_, Y = encode_classes(
            y, on_classes=lambda k: check_fit_memory(self, X.shape[0], X.shape[1], k))
        return X, Y

    def decision_function(self, X, callback=None):
        """f(x) per class (see ClassifierMixin); ``callback`` as for :meth:`predict`."""
        D = self._finite_decision(X, callback)
        return D[:, 0] if D.shape[1] == 1 else D

    def predict(self, X, callback=None):
        """The class of each row; ``callback``: progress events while predicting (True stops
        with ``FitCancelled``)."""
        return self._labels(self._finite_decision(X, callback))
