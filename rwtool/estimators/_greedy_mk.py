"""GreedyMKClassifier / GreedyMKRegressor: MFGA over explicit multi-kernel features (seed 004).

The default selector is MFGA on a dictionary of Gaussian Taylor features and linear features;
the random-feature baselines of the paper's Table 2 (RKS, LKRF, EERF) are available through
``selector`` with the same preprocessing, bandwidth and learner, so that ``reg`` means the same
model for all four. The dictionary and the selectors live in rwtool.features._taylor and
rwtool.solvers._greedy; this module owns preprocessing, label coding and the fitted state.
"""

from __future__ import annotations

import dataclasses
import time
import types
import warnings

import numpy as np

from .._callbacks import CallbackSupport, reports_to_sklearn
from .._base import (BaseEstimator, ClassifierMixin, RegressorMixin, Standardizer, check_array,
                     check_feature_names, check_is_fitted, check_not_constant,
                     check_random_state, check_X_y, encode_classes, unfitted_on_failure)
from .._params import Param, params_table, validate_params
from ..features._fourier import RandomFourierFeatures
from ..exceptions import FitCancelled, NumericalError, check_finite_result
from ..features._bandwidth import knn_sigma, scale_sigma
from ..features._taylor import (GAUSS_ORDER, INCLUDE_LINEAR, INCLUDE_SQUARES, NU,
                                TaylorMultiKernelFeatures, auto_gauss_order, dictionary_size)
from ..progress import Progress, make_progress
from ..resources import FitEstimate, check_fit_memory, seconds_of
from ..solvers._greedy import (DenseDictionary, DictionaryView, eerf_scores, feature_alignment,
                               glm_fit, glm_objective, lkrf_select, lkrf_weights, mfga,
                               row_mean, train_error)
from ..solvers._greedy_reg import (AUTO_REG, DENSE_BUDGET, HOLDOUT_ROWS, N_FOLDS, choose_reg,
                                   fold_splits)
from ..solvers._sufficient import class_of
from ._weights import weighted_rows

__all__ = ["GreedyMKClassifier", "GreedyMKRegressor", "SELECTORS"]

#: "mfga" (this paper) and the random-feature baselines of its Table 2
SELECTORS = ("mfga", "rks", "lkrf", "eerf")
#: the data-scaled bandwidth rules: the paper's k-NN rule, scikit-learn's "scale", the larger
SIGMA_RULES = ("auto", "knn", "scale")


#: entries read by MFGA only, the dictionary's among them (the app greys them out for the
#: random-feature baselines)
_MFGA_ONLY = {"only": ("selector", ("mfga",)), "advanced": True}


class _GreedyMK(CallbackSupport, BaseEstimator):
    _loss = "squared"
    #: the paper's dictionary for the task (seed 004 Section 5): Taylor order, linear kernel
    _paper_order, _paper_linear = 2, False

    def __init__(self, selector="mfga", n_features=100, reg=1e-4, sigma="auto", knn_k=50,
                 knn_queries=2000, gauss_order=None, include_squares=True, include_linear=None,
                 nu=None, features_per_step=1, tol=0.0, normalize=False, n_candidates=2000,
                 lkrf_rho=None, lkrf_mode="top", fit_intercept=False, standardize=True,
                 random_state=None):
        self.selector = selector
        self.n_features = n_features
        self.reg = reg
        self.sigma = sigma
        self.knn_k = knn_k
        self.knn_queries = knn_queries
        self.gauss_order = gauss_order
        self.include_squares = include_squares
        self.include_linear = include_linear
        self.nu = nu
        self.features_per_step = features_per_step
        self.tol = tol
        self.normalize = normalize
        self.n_candidates = n_candidates
        self.lkrf_rho = lkrf_rho
        self.lkrf_mode = lkrf_mode
        self.fit_intercept = fit_intercept
        self.standardize = standardize
        self.random_state = random_state

    # -- validation ------------------------------------------------------------------------
    _parameters = params_table(
        Param("selector", "choice", "mfga", "mfga: greedy selection over the explicit "
              "multi-kernel dictionary; rks, lkrf, eerf: the random-feature baselines",
              choices=SELECTORS, ref="seed 004 Algorithm 1 and Table 2"),
        Param("n_features", "int", 100, "M, the number of features kept", interval="[1, inf)"),
        Param("reg", "float", 1e-4, "lam in (1/N) sum L + (lam/2) ||theta||^2; 'auto': 4-fold "
              "cross-validation over 1e-6..1", interval="[0, inf)", keywords=("auto",)),
        Param("sigma", "float", "auto", "the Gaussian bandwidth, or a rule on the standardised "
              "inputs: knn (the paper's), scale (scikit-learn's), auto (the larger)",
              interval="(0, inf)", keywords=SIGMA_RULES, ref="seed 004 Section 5"),
        Param("knn_k", "int", 50, "neighbour rank of the knn rule (capped at N - 1)",
              interval="[1, inf)", advanced=True),
        Param("knn_queries", "int", 2000, "rows averaged by the knn rule", interval="[1, inf)",
              none="all rows", advanced=True),
        dataclasses.replace(GAUSS_ORDER, default=None, none="the paper's order for the task, "
                            "raised until the dictionary holds 2 n_features candidates",
                            **_MFGA_ONLY),
        dataclasses.replace(INCLUDE_SQUARES, **_MFGA_ONLY),
        dataclasses.replace(INCLUDE_LINEAR, default=None, none="the paper's choice: True for "
                            "classification, False for regression", ref="seed 004 Section 5",
                            **_MFGA_ONLY),
        dataclasses.replace(NU, **_MFGA_ONLY),
        Param("features_per_step", "int", 1, "s, candidates added per MFGA iteration (1: the "
              "exact algorithm)", interval="[1, inf)", **_MFGA_ONLY),
        Param("tol", "float", 0.0, "MFGA stops when no inactive candidate has |gradient| > tol",
              interval="[0, inf)", **_MFGA_ONLY),
        Param("normalize", "bool", False, "rank candidates by |g_j| / ||psi_j|| (not the "
              "paper's rule)", **_MFGA_ONLY),
        Param("n_candidates", "int", 2000, "M0, random features drawn by lkrf and eerf",
              interval="[1, inf)", only=("selector", ("lkrf", "eerf")), advanced=True),
        Param("lkrf_rho", "float", None, "radius of LKRF's chi-square ball",
              interval="[0, inf)", none="0.005 M0", only=("selector", ("lkrf",)),
              advanced=True),
        Param("lkrf_mode", "choice", "top", "how LKRF keeps M of its M0 weighted draws",
              choices=("top", "sample", "weighted"), only=("selector", ("lkrf",)),
              advanced=True),
        Param("fit_intercept", "bool", False, "add an unpenalised intercept (the paper's model "
              "has none)", advanced=True),
        Param("standardize", "bool", True, "standardise X with training statistics",
              ref="seed 004 Section 5", advanced=True),
        Param("random_state", "seed", None, "seed of the draws and of the folds of reg='auto'",
              none="a fresh draw"))

    def _validate(self):
        p = validate_params(self)
        if p["selector"] in ("lkrf", "eerf") and p["n_candidates"] < p["n_features"]:
            raise ValueError(f"n_candidates (M0 = {self.n_candidates}) must be at least "
                             f"n_features (M = {self.n_features}) for selector="
                             f"{self.selector!r}")

    def _prepare_X(self, X):
        return self.x_scaler_.transform(X) if self.x_scaler_ is not None else X

    def _resolve_sigma(self, Xp, rng, progress=None, weights=None):
        """The bandwidth: the number given, or the data-scaled rule (``solver_info_`` says which).

        With row weights the "scale" rule takes the weighted variance (a row of weight c as c
        copies); the k-NN rule searches the rows themselves, unweighted: a row's copies would
        be its own nearest neighbours at distance 0, which says nothing of the spacing of the
        data (rows of weight 0 are gone before this)."""
        if Xp.shape[0] < 2:
            raise ValueError(f"GreedyMK needs at least 2 training rows, got n_samples = "
                             f"{Xp.shape[0]}")
        check_not_constant(Xp)
        if not isinstance(self.sigma, str):
            return float(self.sigma), {}
        rule = self.sigma.lower()
        info = {"sigma_rule": rule}
        knn = scale = 0.0
        if rule in ("knn", "auto"):
            # At most N - 1 other rows exist: a small training set uses its farthest neighbour.
            k = min(int(self.knn_k), Xp.shape[0] - 1)
            progress = make_progress(progress)
            q = Xp.shape[0] if self.knn_queries is None else min(Xp.shape[0],
                                                                 int(self.knn_queries))
            # O(queries x N d): a minute at 150,000 rows on a loaded core, so it reports
            progress.start("bandwidth", q)
            knn = knn_sigma(Xp, k=k, n_queries=self.knn_queries,
                            random_state=int(rng.integers(0, 2**63 - 1)),
                            tick=progress.update if progress.active else None)
            progress.end()
            info.update(knn_k=k, knn_sigma=knn)
        if rule in ("scale", "auto") or knn == 0.0:
            scale = scale_sigma(Xp, weights)
            info["scale_sigma"] = scale
        if rule == "knn" and knn == 0.0:
            # More than knn_k duplicates of most rows (binary or heavily rounded inputs).
            warnings.warn(f"the distance to the {info['knn_k']}-th nearest neighbour is 0 for "
                          f"the rows averaged (duplicated rows); using sigma='scale' = "
                          f"{scale:.4g} instead. Pass sigma as a number to choose it",
                          UserWarning, stacklevel=3)
        return max(knn, scale), info

    def _estimate_fit(self, n_samples, n_features_in, n_outputs=1) -> FitEstimate:
        """Peak bytes and rough seconds of ``fit`` on N rows of d inputs (n_outputs classes).

        MFGA: the standardised copy of X, the N x M matrix of selected columns and its Newton
        copy, the dictionary's index arrays and gradient (M0 x k), and the gradient's working
        set: N x d for the Gram trick (order <= 2) or a 16 MB row block of the dictionary
        (order > 2). Time: M gradients (N d^2 k by the Gram trick, N M0 by blocks) and M refits
        (warm-started Newton steps for the logistic loss, counted with the gradients; the normal
        equations for the squared). The
        k-NN bandwidth adds blocks of distances to all N rows. Random-feature
        selectors: M0 candidate draws scored over row blocks and one N x M solve. reg="auto"
        adds a path (or a solve) per candidate and fold on 3/4 of the rows, and the N x M0
        dictionary with one fold's copy when it is materialised.
        """
        self._validate()
        N, d = int(n_samples), int(n_features_in)
        k = 1 if (n_outputs <= 2 or self._loss == "squared") else int(n_outputs)
        M = int(self.n_features)
        peak = 8 * N * (d + 2 * k)
        work = dict.fromkeys(("knn", "mfga_gradient", "newton", "rff_features", "blas"), 0.0)
        # reg="auto": fits on 3/4 of the rows per candidate and fold (one fold for large N)
        searches = (len(AUTO_REG) * (1 if N >= HOLDOUT_ROWS else N_FOLDS) * 0.75
                    if isinstance(self.reg, str) else 0.0)
        if isinstance(self.sigma, str) and self.sigma.lower() in ("knn", "auto"):
            q = N if self.knn_queries is None else min(N, int(self.knn_queries))
            # rwtool.features.knn_sigma: three blocks of queries x N distances of <= 8 MB;
            # the partition costs about 30 element operations a pair (skin, 150,000 rows)
            peak += 3 * 8 * min(min(512, q) * N, 2**20)
            work["knn"] += q * N            # (query, row) distances and their partition
        selector = self.selector.lower()
        if selector == "mfga":
            order, linear = self._dictionary(d)
            M0 = dictionary_size(d, order, bool(self.include_squares), linear)
            M = min(M, M0)
            peak += 8 * M0 * (max(order, 1) + 4 + 2 * k) + 8 * 2 * N * M + 8 * M * M
            # a step's gradient: the Gram trick's N d^2 k (order <= 2) or every dictionary
            # column over the rows, its Taylor terms and the k residuals (N M0 (order + k)).
            # The warm-started refits on the t <= M selected columns are folded into the
            # gradient's rate: the CPU of a logistic path measured at 30 and 90 features (20,000
            # rows) is 1.4e-9 and 1.1e-9 s per gradient unit, no M^2 or M^3 term; the squared
            # loss's normal equations are N M^2 multiply-adds
            if order <= 2:
                peak += 8 * (N * d + d * d)
                grad = N * d * d * k if order == 2 else N * d * k
            else:
                peak += 16 * 2**20
                grad = N * M0 * (order + k)
            refit = 0.0 if self._loss == "logistic" else N * M * M
            work["mfga_gradient"] += M * grad
            work["blas"] += refit
            if searches:
                # a path per search, over the dictionary materialised once (plus one fold's
                # copy) when it is small enough
                if 8 * N * M0 <= DENSE_BUDGET / 2:
                    peak += int(8 * N * M0 * 1.75)
                    grad = N * M0 * k
                work["mfga_gradient"] += searches * M * grad
                work["blas"] += searches * refit
            detail = (f"MFGA over {M0} candidates (Taylor order {order}), {M} selected from "
                      f"{N} rows")
        else:
            M0 = M if selector == "rks" else int(self.n_candidates)
            peak += 8 * (M0 * (d + 1) + 2 * N * M + min(N, 4096) * M0 + M0 * k + M * M)
            # the candidates' features over the rows (their d-term products in BLAS), then
            # the Newton fit on the M kept ones (its A^T W A: N M^2 per iteration)
            work["rff_features"] += N * M0
            work["blas"] += N * M0 * d
            work["newton"] += (1 + searches) * N * M * M * k
            detail = f"{selector} over {M0} random features, {M} kept, {N} rows"
        work = {key: v for key, v in work.items() if v}
        return FitEstimate(peak_bytes=int(peak), seconds=seconds_of(work), detail=detail,
                           work=work)

    def _estimate_predict(self, n_rows, n_features_in, n_outputs=1) -> dict:
        """The work of ``decision_function`` on n rows: the M selected features of every row
        (a Taylor column costs about as much as a dictionary column of the gradient) and their
        product with the coefficients."""
        n, d, M = int(n_rows), int(n_features_in), int(self.n_features)
        k = 1 if (n_outputs <= 2 or self._loss == "squared") else int(n_outputs)
        if self.selector.lower() == "mfga":
            order, _ = self._dictionary(d)
            return {"mfga_gradient": n * M * (max(order, 1) + k)}
        return {"greedy_columns": n * M, "blas": n * M * (d + k)}

    # -- fit ---------------------------------------------------------------------------------
    @reports_to_sklearn
    def fit(self, X, y, sample_weight=None, callback=None, eval_set=None):
        """Select ``n_features`` features with the chosen selector and fit the model on them.

        ``sample_weight`` (one weight >= 0 per row, None: 1 each) gives the weighted objective
        (1 / sum w) sum_n w_n L(f(x_n), y_n) + (lam/2) ||theta||^2 in every step: MFGA's
        gradient over the candidates, its refits, the LKRF/EERF alignments, the reg="auto"
        fits and held-out errors, the standardisation and the "scale" bandwidth rule. Only the
        ratios of the weights matter, a row of weight 0 is absent, and with a fixed reg and
        sigma a row of integer weight c fits as c copies of it (docs/GREEDY_MK.md, "Row
        weights").

        ``callback`` receives "greedy path" events for MFGA (metrics n_features, train_error,
        objective, and val_error on ``eval_set=(X_val, y_val)``), "features"/"solve" for the
        random-feature selectors. A cancelled MFGA keeps the model of the last completed refit
        (``solver_info_["cancelled"]``) and re-raises FitCancelled.
        """
        self._validate()
        check_feature_names(self, X, reset=True)
        X, y, weights = weighted_rows(X, y, sample_weight)
        X, Y = self._fit_targets(X, y)
        if hasattr(self, "coef_"):
            del self.coef_
        t0 = time.perf_counter()
        progress = make_progress(callback)
        rng = check_random_state(self.random_state)
        self.n_features_in_ = X.shape[1]
        self.x_scaler_ = Standardizer.fit(X, weights) if self.standardize else None
        Xp = np.ascontiguousarray(self._prepare_X(X))
        self.sigma_, sigma_info = self._resolve_sigma(Xp, rng, progress, weights)
        selector = self.selector.lower()
        with unfitted_on_failure(self):   # a failed fit leaves the estimator unfitted
            if selector == "mfga":
                self._fit_mfga(Xp, Y, weights, progress, eval_set, rng, t0)
            else:
                self._fit_random(selector, Xp, Y, weights, progress, rng, t0)
            check_finite_result((self.coef_, self.intercept_), solver=selector,
                                iteration=len(self.support_),
                                fix="standardise the inputs (standardize=True) or raise reg")
            if len(self.support_) == 0 and np.ptp(Y, axis=0).max() > 0:
                # Every candidate has zero gradient on targets that vary: the model would be
                # the constant it started from.
                raise NumericalError(
                    "no candidate feature correlates with the targets (every gradient is 0): the "
                    "dictionary is numerically zero on the training rows, e.g. the Gaussian "
                    f"envelope exp(-||x||^2 / (2 sigma^2)) underflows for sigma = {self.sigma_:.4g}",
                    solver=selector, iteration=0,
                    fix="standardise the inputs (standardize=True) or use a larger sigma")
        self.solver_info_.update(sigma_info)
        return self

    def _dictionary(self, d):
        """(gauss_order, include_linear) of the MFGA dictionary for d inputs."""
        linear = self._paper_linear if self.include_linear is None else bool(self.include_linear)
        order = self.gauss_order
        if order is None:
            order = auto_gauss_order(d, int(self.n_features), self._paper_order,
                                     bool(self.include_squares), linear)
        return int(order), linear

    def _holdout_loss(self, F, Y, weights=None):
        """The reg="auto" criterion on held-out rows: the mean squared error of the coded
        targets, or the 0-1 error (one-vs-rest codes: the largest decision value wins), each
        row weighted by ``weights`` when given."""
        if self._loss == "squared":
            return row_mean((F - Y) ** 2, weights)
        return row_mean(class_of(F) != class_of(Y), weights)

    def _choose_reg(self, n_rows, rng, fit_on, progress):
        """``(reg, table)``: the number given (table None), or the reg="auto" choice by CV
        (rwtool.solvers._greedy_reg). ``fit_on(fit_rows, val_rows)`` returns the function
        ``loss(lam, progress)`` that fits on the first rows and gives the loss on the others;
        its progress forwards to stage "search" (done = candidates finished), so that a
        cancel is seen within a path, not only between candidates."""
        if not isinstance(self.reg, str):
            return float(self.reg), None
        t0 = time.perf_counter()
        seed = int(rng.integers(0, 2**63 - 1))
        folds = fold_splits(n_rows, seed)
        fold_losses = [fit_on(fit_rows, val_rows) for fit_rows, val_rows in folds]
        progress = make_progress(progress)
        finished, failures = [], []
        inner = (Progress(lambda event: progress.update(len(finished)))
                 if progress.active else None)

        def loss_of(lam):
            try:
                return float(np.mean([loss(lam, inner) for loss in fold_losses]))
            except NumericalError as exc:   # a candidate that fails is never chosen
                failures.append(exc)
                return float("nan")
            finally:
                finished.append(lam)

        try:
            reg, table = choose_reg(loss_of, AUTO_REG, progress)
        except NumericalError:
            if failures:   # every candidate failed: the learner's own error says why
                raise failures[0] from None
            raise
        return reg, dict(table, folds=len(folds), seed=seed, seconds=time.perf_counter() - t0)

    def _mfga_cv(self, fmap, Xp, Y, weights=None):
        """The reg="auto" loss function of MFGA on one fold: the greedy path on the fit rows for
        each lam, both sides weighted by the rows' ``weights`` when given. The dictionary of all
        rows is evaluated once when it fits in half of DENSE_BUDGET (one fold's copy of the fit
        rows at a time takes the other half)."""
        dense = 8 * Xp.shape[0] * fmap.n_output_ <= DENSE_BUDGET / 2
        Psi = fmap.transform(Xp) if dense else None

        def fit_on(fit_rows, val_rows):
            Xv = np.ascontiguousarray(Xp[val_rows])
            Yf, Yv = Y[fit_rows], Y[val_rows]
            wf, wv = (None, None) if weights is None else (weights[fit_rows], weights[val_rows])

            def loss(lam, progress=None):
                if dense:
                    dictionary = DenseDictionary(Psi[fit_rows])
                else:
                    dictionary = DictionaryView(fmap, np.ascontiguousarray(Xp[fit_rows]))
                support, coef, intercept, _ = mfga(
                    dictionary, Yf, self._loss, lam, int(self.n_features),
                    per_step=int(self.features_per_step), tol=float(self.tol),
                    normalize=bool(self.normalize), fit_intercept=bool(self.fit_intercept),
                    progress=progress, weights=wf)
                A = Psi[np.ix_(val_rows, support)] if dense else fmap.columns(Xv, support)
                return self._holdout_loss(A @ coef + intercept, Yv, wv)
            return loss
        return fit_on

    def _fit_mfga(self, Xp, Y, weights, progress, eval_set, rng, t0):
        order, linear = self._dictionary(Xp.shape[1])
        n_cand = dictionary_size(Xp.shape[1], order, bool(self.include_squares), linear)
        if int(self.n_features) > n_cand:
            warnings.warn(f"n_features = {self.n_features} exceeds the {n_cand} candidates of the "
                          f"dictionary (gauss_order = {order}, d = {Xp.shape[1]}): MFGA selects "
                          f"all {n_cand}. Raise gauss_order for a larger dictionary or lower "
                          f"n_features", UserWarning, stacklevel=3)
        fmap = TaylorMultiKernelFeatures(sigma=self.sigma_, gauss_order=order,
                                         include_squares=self.include_squares,
                                         include_linear=linear, nu=self.nu).fit(Xp)
        evaluate = None
        if eval_set is not None:
            Xv, yv = check_X_y(*eval_set, y_numeric=self._loss == "squared")
            Xv = np.ascontiguousarray(self._prepare_X(check_array(
                Xv, "X_val", n_features=self.n_features_in_, estimator=type(self).__name__)))

            def evaluate(support, coef, intercept):
                D = fmap.columns(Xv, support) @ coef + intercept
                return {"val_error": self._error(D, yv)}
        t_pp = time.perf_counter() - t0
        reg, reg_info = self._choose_reg(Xp.shape[0], rng,
                                         self._mfga_cv(fmap, Xp, Y, weights), progress)
        try:
            support, coef, intercept, path = mfga(
                DictionaryView(fmap, Xp), Y, self._loss, reg, int(self.n_features),
                per_step=int(self.features_per_step), tol=float(self.tol),
                normalize=bool(self.normalize), fit_intercept=bool(self.fit_intercept),
                progress=progress, evaluate=evaluate, weights=weights)
        except FitCancelled as exc:
            if exc.partial is not None:
                support, coef, intercept, path = exc.partial
                self._set_fitted(fmap, support, coef, intercept, np.ones(len(support)), path,
                                 t0, t_pp, reg, reg_info, cancelled=True)
            raise
        self._set_fitted(fmap, support, coef, intercept, np.ones(len(support)), path, t0, t_pp,
                         reg, reg_info, stopped=path.get("stopped"),
                         n_candidates=fmap.n_output_, gauss_order=order, include_linear=linear)

    def _fit_random(self, selector, Xp, Y, weights, progress, rng, t0):
        M = int(self.n_features)
        M0 = M if selector == "rks" else int(self.n_candidates)
        cand = RandomFourierFeatures(n_features=M0, sigma=self.sigma_, variant="phase",
                                     random_state=int(rng.integers(0, 2**63 - 1))).fit(Xp)
        scale = np.ones(M)
        info = {"n_candidates": M0}
        if selector == "rks":
            idx = np.arange(M)
        else:
            Yw = Y if weights is None else Y * weights[:, None]
            align = feature_alignment(cand, Xp, Yw, progress=progress)
            if selector == "eerf":
                N = Xp.shape[0] if weights is None else float(weights.sum())
                idx = np.argsort(-eerf_scores(align, N), kind="stable")[:M]
            else:
                v = np.einsum("ij,ij->i", align, align)      # (sum_n y_n phi_m(x_n))^2
                rho = 0.005 * M0 if self.lkrf_rho is None else float(self.lkrf_rho)
                q, lam = lkrf_weights(v, rho)
                idx, scale = lkrf_select(q, M, self.lkrf_mode.lower(), rng)
                info.update(lkrf_rho=rho, lkrf_multiplier=float(lam),
                            lkrf_support=int(np.count_nonzero(q)))
        # The M kept features, rescaled to the sqrt(2/M) of an M-feature map.
        fmap = RandomFourierFeatures(n_features=M, sigma=self.sigma_, variant="phase")
        fmap = RandomFourierFeatures.from_fitted_state(
            fmap.get_params(), {"W_": np.ascontiguousarray(cand.W_[idx]),
                                "b_": np.ascontiguousarray(cand.b_[idx]),
                                "n_features_in_": Xp.shape[1], "fitted_": True})
        t_pp = time.perf_counter() - t0
        A = fmap.transform(Xp) * scale

        def fit_on(fit_rows, val_rows):
            wf, wv = (None, None) if weights is None else (weights[fit_rows], weights[val_rows])

            def loss(lam, progress=None):
                c, b, _ = glm_fit(A[fit_rows], Y[fit_rows], self._loss, lam,
                                  bool(self.fit_intercept), weights=wf)
                return self._holdout_loss(A[val_rows] @ c + b, Y[val_rows], wv)
            return loss
        # The features are chosen before lam (LKRF/EERF score them on every training row).
        reg, reg_info = self._choose_reg(Xp.shape[0], rng, fit_on, progress)
        progress.start("solve", 1)
        coef, intercept, sinfo = glm_fit(A, Y, self._loss, reg, bool(self.fit_intercept),
                                         weights=weights)
        progress.end()
        F = A @ coef + intercept
        path = {"n_features": [M],
                "objective": [glm_objective(F, Y, coef, self._loss, reg, weights)],
                "train_error": [train_error(F, Y, self._loss, weights)]}
        self._set_fitted(fmap, np.asarray(idx, dtype=np.int64), coef, intercept, scale, path,
                         t0, t_pp, reg, reg_info, **info, **sinfo)

    def _set_fitted(self, fmap, support, coef, intercept, scale, path, t0, t_pp, reg, search,
                    **info):
        self.feature_map_ = fmap
        self.reg_ = float(reg)
        self.reg_search_ = search
        self.support_ = np.asarray(support, dtype=np.int64)
        self.coef_ = np.ascontiguousarray(coef)
        self.intercept_ = np.asarray(intercept, dtype=float)
        self.column_scale_ = np.asarray(scale, dtype=float)
        self.path_ = {k: v for k, v in path.items() if isinstance(v, list)}
        self.solver_info_ = dict(info, selector=self.selector.lower(), loss=self._loss)
        self.preprocess_time_ = t_pp
        # the fit at the chosen reg, as for the other estimators' reg="auto" (the search's
        # seconds are in reg_search_)
        self.fit_time_ = time.perf_counter() - t0 - (search["seconds"] if search else 0.0)

    @property
    def n_features_out_(self) -> int:
        """Selected features with a non-zero coefficient."""
        check_is_fitted(self)
        c = self.coef_
        return int(np.count_nonzero(np.any(c.reshape(len(c), -1) != 0, axis=1)))

    # -- predict -----------------------------------------------------------------------------
    def feature_matrix(self, X) -> np.ndarray:
        """The selected feature columns (scaled as in the fit) of ``X``, shape (n, M).

        (Not named ``transform``: scikit-learn would then treat the model as a transformer.)
        """
        check_is_fitted(self)
        X = check_array(X, n_features=self.n_features_in_, estimator=type(self).__name__)
        Xp = np.ascontiguousarray(self._prepare_X(X))
        if isinstance(self.feature_map_, TaylorMultiKernelFeatures):
            A = self.feature_map_.columns(Xp, self.support_)
        else:
            A = self.feature_map_.transform(Xp)
        return A * self.column_scale_

    def _raw_decision(self, X) -> np.ndarray:
        return self.feature_matrix(X) @ self.coef_ + self.intercept_

    def _onnx_decision(self, g, x):
        """``_raw_decision`` as ONNX nodes on ``g`` (rwtool.persist's Graph) of the input x."""
        xp = g.standardize(self.x_scaler_, x)
        if isinstance(self.feature_map_, TaylorMultiKernelFeatures):
            A = self.feature_map_._onnx(g, xp, self.support_)
        else:
            A = self.feature_map_._onnx(g, xp)
        A = g.mul(A, g.const(self.column_scale_, "column_scale"))
        return g.add(g.matmul(A, g.const(self.coef_, "coef")),
                     g.const(self.intercept_, "intercept"))

    def selected_features(self, names=None) -> list[str]:
        """Readable names of the MFGA-selected columns in selection order ("gauss:age*income"),
        the inputs named by ``names``, else by the DataFrame columns the model was fitted on,
        else x0, x1, ..."""
        check_is_fitted(self)
        if not isinstance(self.feature_map_, TaylorMultiKernelFeatures):
            return [f"rff:{j}" for j in self.support_]
        if names is None and hasattr(self, "feature_names_in_"):
            names = [str(n) for n in self.feature_names_in_]
        return [self.feature_map_.describe(int(j), names) for j in self.support_]


_DOC = """
    Parameters
    ----------
    selector : {"mfga", "rks", "lkrf", "eerf"}, default "mfga"
        "mfga": greedy selection over the explicit multi-kernel dictionary (this paper).
        Baselines of Table 2 on random Fourier features cos(omega^T x + b), omega ~ N(0, sigma^-2 I):
        "rks" the first M draws; "lkrf" Sinha & Duchi's chi-square-constrained alignment
        weights over M0 draws; "eerf" the top M of M0 draws by |(1/N) sum y phi|.
    n_features : int, default 100
        M, the number of features kept.
@REG@    sigma : float or "auto", "knn", "scale", default "auto"
        Gaussian bandwidth, shared by every selector. "knn" is the paper's rule, the mean
        distance to the knn_k-th nearest neighbour on the (standardised) training inputs;
        "scale" is sqrt(d Var(X) / 2), scikit-learn's gamma="scale"; "auto" (default) takes the
        larger of the two: the k-NN rule shrinks with N in low dimension (0.22 on 5000 rows of
        skin, d = 3), where a Taylor dictionary of so narrow a Gaussian is nearly zero away from
        the origin. A constant X is refused with a ValueError.
    knn_k : int, default 50
        Neighbour rank of the "knn" rule, capped at N - 1 for small training sets.
    knn_queries : int or None, default 2000
        Rows averaged by the "knn" rule (None: all; neighbours are always searched among all).
    gauss_order : int or None, default None
        Largest Taylor degree of the Gaussian features. None starts from the paper's choice for
        the task (seed 004 Section 5: 1 for classification, 2 for regression) and raises it
        until the dictionary holds at least 2 n_features candidates (at most 8): the paper's
        2d + 1 classification candidates leave no choice to the greedy selection when d is
        small (d = 20: order 2, 251 candidates). A warning says when n_features exceeds the
        candidates (every one is then selected).
    include_squares : bool, default True
    include_linear : bool or None, default None
        Add the linear kernel's d features (P = 2 kernels, nu = (1/2, 1/2) by default); None is
        the paper's choice: True for classification, False for regression.
    nu : sequence or None, default None
        Fixed kernel weights; None is uniform.
    features_per_step : int, default 1
        s, candidates added per MFGA iteration (1 is the exact algorithm; more is the paper's
        practical "multiple features per iteration" variant).
    tol : float, default 0.0
        MFGA stops early when no inactive candidate has |gradient| > tol.
    normalize : bool, default False
        Rank candidates by |g_j| / ||psi_j|| instead of |g_j| (not the paper's rule).
    n_candidates : int, default 2000
        M0, random features drawn by "lkrf" and "eerf" (2000 on adult in the paper).
    lkrf_rho : float or None, default None
        Radius of the chi-square ball; None is 0.005 M0 (the LKRF authors' example).
    lkrf_mode : {"top", "sample", "weighted"}, default "top"
@INTERCEPT@    standardize : bool, default True
        Standardise X with training statistics (seed 004 Section 5).
    random_state : int, Generator or None, default None

    Attributes
    ----------
    support_ : ndarray (M,) of int
        Selected columns: dictionary indices in selection order (mfga), or indices of the
        kept random draws among the M0 candidates.
    coef_ : ndarray (M, k); intercept_ : ndarray (k,); column_scale_ : ndarray (M,)
    feature_map_ : TaylorMultiKernelFeatures (mfga) or RandomFourierFeatures (the M kept draws)
    sigma_ : float, the bandwidth used (``solver_info_`` holds the rule and the k-NN and
        "scale" values it compared, and ``gauss_order`` / ``n_candidates`` of the dictionary).
    path_ : dict of lists: n_features, objective, train_error (and val_error) along the path.
    reg_ : float, the lam used; reg_search_ : dict or None, for reg="auto" the candidates
        ``reg`` (increasing), their mean held-out errors ``val_loss``, ``folds``, the
        ``seed`` of the fold permutation and the search's ``seconds``.
    n_features_in_, x_scaler_, solver_info_, preprocess_time_, fit_time_ (seconds; with
        reg="auto", of the fit at the chosen lam, without the search).
"""


_REG_AUTO = """\
        "auto": 4-fold cross-validation (folds from a permutation drawn from random_state;
        from 4000 training rows on, only the first fold is held out) over lam in
        {1e-6, 1e-5, ..., 1}, extended a decade past an end while the best sits there; each
        candidate runs the whole learner (for MFGA the greedy path) on 3 folds and is scored
        on the fourth (mean squared error of the scaled targets, or the 0-1 error); the least
        mean error wins (the largest lam among ties) and the model is refitted on all rows. ``reg_`` is the lam used, ``reg_search_`` the errors (None for a number).
"""
_INTERCEPT_DOC = """\
        The paper's model has no intercept; True adds an unpenalised one to every selector.
        The regressor has one by default: the [-1, 1] scaling of y does not centre it
        (abalone 0.524 -> 0.487 test MSE at the chosen reg, wine 0.065 -> 0.052).
"""


def _doc(reg, intercept, reg_note):
    return (_DOC.replace("@REG@", f"    reg : float or \"auto\", default {reg}\n"
                         "        lam in (1/N) sum L + (lam/2) ||theta||^2 (the paper tunes it on "
                         "{1e-5, ..., 1e5}).\n" + reg_note + _REG_AUTO)
            .replace("@INTERCEPT@", f"    fit_intercept : bool, default {intercept}\n" +
                     _INTERCEPT_DOC))


#: the regressor's own defaults: no fixed reg serves every data set, and the [-1, 1] scaling of y
#: does not centre it (docs/GREEDY_MK.md)
_REGRESSOR_DEFAULTS = {"reg": "auto", "fit_intercept": True}


def _with_defaults(init, **defaults):
    """A copy of ``init`` whose keyword defaults are changed (the regressor's own defaults,
    read by get_params and the app from its signature)."""
    names = init.__code__.co_varnames[1:init.__code__.co_argcount]
    values = dict(zip(names, init.__defaults__), **defaults)
    return types.FunctionType(init.__code__, init.__globals__, "__init__",
                              tuple(values[n] for n in names), init.__closure__)


class GreedyMKClassifier(ClassifierMixin, _GreedyMK):
    __doc__ = ("Greedy multi-kernel explicit-feature classifier (Shahrampour & Tarokh, NeurIPS "
               "2018; seed 004), l2-regularised logistic loss on +/-1 targets. Several classes: "
               "one-vs-rest models sharing one support, selected by the l2 norm of the "
               "per-class gradients.\n" +
               _doc("1e-4", "False", "        The default meets the classification targets "
                    "(docs/GREEDY_MK.md, Defaults).\n") +
               "    classes_ : ndarray, the class labels.\n")
    _loss = "logistic"
    _paper_order, _paper_linear = 1, True

    def _fit_targets(self, X, y):
        X, y = check_X_y(X, y)
        self.classes_, Y = encode_classes(
            y, on_classes=lambda k: check_fit_memory(self, X.shape[0], X.shape[1], k))
        return X, Y

    def _error(self, D, y):
        return float(np.mean(self._labels(D) != y))

    def predict_proba(self, X) -> np.ndarray:
        """sigmoid(f(x)) of the logistic model (one-vs-rest sigmoids normalised to sum to 1)."""
        D = self._finite_decision(X)
        P = 0.5 * (1.0 + np.tanh(0.5 * D))
        if D.shape[1] == 1:
            return np.hstack([1.0 - P, P])
        return P / P.sum(axis=1, keepdims=True)


class GreedyMKRegressor(RegressorMixin, _GreedyMK):
    __doc__ = ("Greedy multi-kernel explicit-feature regressor (Shahrampour & Tarokh, NeurIPS "
               "2018; seed 004): OMP with a ridge refit on the squared loss; y is scaled into "
               "[-1, 1] with training min/max (the paper's protocol).\n" +
               _doc('"auto"', "True",
                    "        No fixed value serves every data set (diabetes wants 1e-2, abalone\n"
                    "        1e-5, wine 1e-3; docs/GREEDY_MK.md), so the default chooses it.\n") +
               "    y_scaler_ : Standardizer, the recorded [-1, 1] target scaling.\n")
    _loss = "squared"
    __init__ = _with_defaults(_GreedyMK.__init__, **_REGRESSOR_DEFAULTS)
    _parameters = params_table(*_GreedyMK._parameters.values(), **_REGRESSOR_DEFAULTS)

    def _fit_targets(self, X, y):
        X, y = check_X_y(X, y, y_numeric=True)
        Y = y[:, None] if y.ndim == 1 else y
        check_fit_memory(self, X.shape[0], X.shape[1], Y.shape[1])
        lo, hi = Y.min(axis=0), Y.max(axis=0)
        half = np.where(hi > lo, (hi - lo) / 2.0, 1.0)
        self.y_scaler_ = Standardizer((hi + lo) / 2.0, half)
        self.y_1d_ = y.ndim == 1
        return X, np.ascontiguousarray(self.y_scaler_.transform(Y))

    def _error(self, D, y):
        Y = y[:, None] if y.ndim == 1 else y
        return float(np.mean((self.y_scaler_.inverse_transform(D) - Y) ** 2))

    def _raw_prediction(self, X) -> np.ndarray:
        check_is_fitted(self)
        D = self.y_scaler_.inverse_transform(self._raw_decision(X))
        return D[:, 0] if self.y_1d_ else D
