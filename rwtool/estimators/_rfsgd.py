"""RFSGDClassifier: averaged SGD of the logistic loss on random Fourier features (seed 002).

The model is g(x) = betabar^T phi_M(x) with phi_M the random Fourier features of a Gaussian
kernel scaled by 1/sqrt(M) (paired cos/sin by default, random phase as an option), trained by
one pass of averaged SGD over a stream (``partial_fit``) or by epochs over a finite set (``fit``).
The schedule, averaging and feature maps live in rwtool.solvers._sgd and rwtool.features._fourier;
this module owns the preprocessing, the label coding and the fitted state.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np

from .._callbacks import CallbackSupport, reports_to_sklearn
from .._base import (BaseEstimator, ClassifierMixin, Standardizer, check_array,
                     check_feature_names, check_is_fitted, check_not_constant,
                     check_random_state, check_sample_weight, check_X_y, class_labels,
                     fit_classes, label_index, unfitted_on_failure)
from .._params import Param, params_table, validate_params
from ..exceptions import FitCancelled, NumericalError
from ..features._bandwidth import median_sigma, scale_sigma
from ..features._fourier import KERNEL, VARIANT, RandomFourierFeatures
from ..losses import get_loss
from ..progress import make_progress
from ..resources import FitEstimate, check_fit_memory, seconds_of
from ..solvers._divergence import check_final_model
from ..solvers._draws import visit_order
from ..solvers._sgd import (SGDState, averaged_sgd, check_step_size, default_gamma, logistic_loss,
                            step_size_condition)
from ._weights import present_rows

__all__ = ["RFSGDClassifier", "SIGMA_RULES"]

#: the data-scaled bandwidth rules (``sigma="scale"`` is the default)
SIGMA_RULES = ("scale", "median")


class RFSGDClassifier(CallbackSupport, ClassifierMixin, BaseEstimator):
    """Averaged SGD with random Fourier features (Yashima, Nitanda & Suzuki, AISTATS 2021; seed 002).

    Minimises E[log(1 + exp(-y beta^T phi_M(x)))] + (reg/2) ||beta||^2 by Algorithm 1 of the
    paper: eta_t = 2 / (reg (gamma + t)), beta_{t+1} = (1 - eta_t reg) beta_t - eta_t l'(.) phi_M(x_t),
    and the weighted average betabar_{t+1} = (1 - theta_t) betabar_t + theta_t beta_{t+1},
    theta_t = 2 (gamma + t) / ((t + 1)(2 gamma + t)) (eqs. 15-17), which equals
    sum_t alpha_t beta_t with alpha_t proportional to gamma + t - 1. Predictions use betabar.
    Under the strong low-noise condition the classification error of betabar converges
    exponentially fast while the loss converges sublinearly (Theorem 3).

    Several classes are handled one-vs-rest on shared features (K SGD runs in the same loop).

    Parameters
    ----------
    n_features : int, default 1000
        M, the number of random frequencies omega_i ~ N(0, sigma^-2 I).
    sigma : float or "scale", "median", default "scale"
        Kernel bandwidth, k(x, y) = exp(-||x - y||^2 / (2 sigma^2)) (not given in the paper),
        or a rule computed on the training inputs after standardisation (in ``partial_fit``, on
        the first batch). "scale" makes the kernel of two typical rows about e^-2, as
        scikit-learn's gamma="scale" does: sqrt(d Var(X) / 2) for the Gaussian kernel (so
        sqrt(d/2) on standardised inputs), d sqrt(Var(X) / pi) for the Laplacian,
        sqrt(d Var(X)) for the Cauchy. "median" is the median distance between two training
        rows (over at most 1000 random rows). A fixed sigma = 1 is at chance level on
        standardised data once d exceeds a few (wine, d = 13: 0.22 test error); the two rules
        were measured on eight data sets (docs/SGD_RF.md) and "scale" was as good and costs
        O(N d).
    variant : {"pair", "phase"}, default "pair"
        "pair": M^-1/2 [cos(omega^T x), sin(omega^T x)] (2M coefficients, ||phi|| = 1, R = 1);
        "phase": sqrt(2/M) cos(omega^T x + b) (M coefficients, R^2 = 2).
    kernel : {"gaussian", "laplacian", "cauchy"}, default "gaussian"
        Only the Gaussian kernel is covered by the paper's theory.
    reg : float, default 1e-5
        lambda. The paper's experiments use 1e-3, which is 0.005-0.02 worse than 1e-5 on
        digits, mnist17, skin and make_classification with data-scaled sigma (docs/SGD_RF.md).
    gamma : float or None, default None
        Step-size offset. None: the smallest value meeting the theorem's condition
        eta_1 <= min(1/(L R^2), 1/(2 lambda)) (499 for lambda = 1e-3, pair variant).
    n_epochs : int, default 5
        Passes over the training set in ``fit``. The paper takes one fresh sample per step;
        on a finite set one pass over a shuffled copy is the closest equivalent (n_epochs=1)
        and more than one pass reuses samples (recorded in ``solver_info_["finite_sample"]``).
        Five passes reach scikit-learn's SGDClassifier (which runs to convergence, 13-31
        passes on the benchmark sets) within 0.01 everywhere measured; one pass does not on
        digits and mnist17.
    shuffle : bool, default True
        Visit the rows of each epoch in a fresh random order.
    average : bool, default True
        False runs plain SGD and predicts with the last iterate.
    standardize : bool, default True
        Standardise X with training statistics (in ``partial_fit``: of the first batch).
    chunk_size : int or None, default None
        Steps per numba call; progress and cancellation are checked between chunks.
    feature_cache_mb : float, default 512
        With n_epochs > 1, the n x D feature matrix is computed once and reused when it takes at
        most this many megabytes; otherwise (and always for one pass) features are computed a
        chunk at a time, so memory stays O(chunk x D). 0 disables the cache.
    random_state : int, Generator or None, default None
        Seeds the frequencies and the visiting order through separate streams.

    Attributes
    ----------
    coef_ : ndarray (D, k)
        betabar, the averaged coefficients (D = 2M for "pair", M for "phase").
    last_iterate_ : ndarray (D, k)
        beta_{t+1}, the last SGD iterate.
    n_iter_ : int
        t, the number of SGD steps taken so far.
    gamma_ : float, the step-size offset used; eta1_ : float, the first step size.
    sigma_ : float, the bandwidth used (``sigma`` itself when a number was given).
    feature_map_ : RandomFourierFeatures
    classes_ : ndarray; n_features_in_ : int; x_scaler_ : Standardizer or None
    solver_info_ : dict, with the progressive train loss/error of the last pass and flags.
    fit_time_ : float, seconds.

    A fit cancelled through the progress callback keeps the averaged iterate of the last
    completed chunk (``solver_info_["cancelled"]`` is True) and re-raises FitCancelled. A fit
    that meets non-finite features or coefficients, or whose averaged model ends with a training
    logistic loss far above the zero model's log 2 (``solver_info_["final_loss_ratio"]``;
    rwtool.solvers._divergence, measured in docs/bench/divergence.md; ``fit`` only: one
    ``partial_fit`` batch is no sample of the stream), raises
    rwtool.NumericalError (naming the step and the fix) and leaves the estimator unfitted; a
    constant X is refused with a ValueError.
    """

    def __init__(self, n_features=1000, sigma="scale", variant="pair", kernel="gaussian",
                 reg=1e-5, gamma=None, n_epochs=5, shuffle=True, average=True, standardize=True,
                 chunk_size=None, feature_cache_mb=512, random_state=None):
        self.n_features = n_features
        self.sigma = sigma
        self.variant = variant
        self.kernel = kernel
        self.reg = reg
        self.gamma = gamma
        self.n_epochs = n_epochs
        self.shuffle = shuffle
        self.average = average
        self.standardize = standardize
        self.chunk_size = chunk_size
        self.feature_cache_mb = feature_cache_mb
        self.random_state = random_state

    # -- validation ------------------------------------------------------------------------
    _parameters = params_table(
        Param("n_features", "int", 1000, "M, the number of random frequencies "
              "omega_i ~ N(0, sigma^-2 I)", interval="[1, inf)"),
        Param("sigma", "float", "scale", "the kernel bandwidth, or a rule on the standardised "
              "training inputs: 'scale' (scikit-learn's gamma='scale') or 'median' (median "
              "distance between rows)", interval="(0, inf)", keywords=SIGMA_RULES),
        VARIANT, KERNEL,
        Param("reg", "float", 1e-5, "lambda of the l2-regularised logistic loss",
              interval="(0, inf)", ref="seed 002 Algorithm 1"),
        Param("gamma", "float", None, "the step-size offset of eta_t = 2 / (reg (gamma + t))",
              interval="[0, inf)", none="the smallest meeting eta_1 <= min(1/(L R^2), "
              "1/(2 reg))", ref="seed 002 Algorithm 1"),
        Param("n_epochs", "int", 5, "passes over the training set in fit (1: each row once, "
              "as the paper's stream)", interval="[1, inf)"),
        Param("shuffle", "bool", True, "visit the rows of each epoch in a fresh random order",
              advanced=True),
        Param("average", "bool", True, "predict with the weighted average of the iterates "
              "(False: the last iterate, plain SGD)", ref="seed 002 eqs. 15-17",
              advanced=True),
        Param("standardize", "bool", True, "standardise X with training statistics (in "
              "partial_fit: of the first batch)", advanced=True),
        Param("chunk_size", "int", None, "SGD steps per numba call (progress and cancellation "
              "are checked between chunks)", interval="[1, inf)", none="automatic",
              advanced=True),
        Param("feature_cache_mb", "float", 512, "with n_epochs > 1, keep the n x D feature "
              "matrix when it takes at most this many megabytes (0: never)",
              interval="[0, inf)"),
        Param("random_state", "seed", None, "seeds the frequencies and the visiting order "
              "through separate streams", none="a fresh draw"))

    def _validate(self):
        validate_params(self)

    def _R2(self):
        return 1.0 if self.variant.lower() == "pair" else 2.0

    def step_rule(self) -> dict:
        """The step sizes of a fit, known before fitting (seed 002 Theorem 3): ``gamma`` (the
        offset: ``gamma`` itself, or with ``gamma_given`` False the smallest meeting the
        condition), ``eta1`` = 2 / (reg (gamma + 1)), ``bound`` = min(1/(L R^2), 1/(2 reg)) and
        ``meets_theorem`` (eta1 <= bound; a fit that breaks it warns and still runs)."""
        p = validate_params(self)
        R2 = 1.0 if p["variant"] == "pair" else 2.0
        given = p["gamma"] is not None
        gamma = float(p["gamma"]) if given else default_gamma(float(p["reg"]), R2)
        eta1, bound, met = step_size_condition(float(p["reg"]), gamma, R2)
        return {"gamma": gamma, "gamma_given": given, "eta1": eta1, "bound": bound,
                "meets_theorem": met}

    @property
    def n_features_out_(self) -> int:
        """Random frequencies with a non-zero coefficient (a "pair" frequency's cos and sin
        coefficients count once, as ``n_features`` counts them)."""
        check_is_fitted(self)
        return int(np.count_nonzero(self.feature_map_.frequencies_used(self.coef_)))

    def _start(self, X, classes, rng, weights=None):
        """Draw the features and set the schedule for a fresh model (the standardisation
        statistics weighted by ``weights`` when given)."""
        self.classes_ = classes
        self.n_features_in_ = X.shape[1]
        self.x_scaler_ = Standardizer.fit(X, weights) if self.standardize else None
        Xp = self._prepare_X(X)
        seed = int(rng.integers(0, 2**63 - 1))
        self.sigma_ = self._resolve_sigma(Xp, rng)
        fmap = RandomFourierFeatures(n_features=self.n_features, kernel=self.kernel,
                                     sigma=self.sigma_, variant=self.variant, random_state=seed)
        fmap.fit(Xp)
        self.feature_map_ = fmap
        R2 = self._R2()
        self.gamma_ = self.step_rule()["gamma"]
        self.eta1_ = check_step_size(float(self.reg), self.gamma_, R2)
        k = 1 if len(classes) == 2 else len(classes)
        self.coef_ = np.zeros((fmap.n_output_, k))
        self.last_iterate_ = np.zeros((fmap.n_output_, k))
        self.n_iter_ = 0

    def _prepare_X(self, X):
        return self.x_scaler_.transform(X) if self.x_scaler_ is not None else X

    def _resolve_sigma(self, Xp, rng):
        """The bandwidth: ``sigma`` itself, or the data-scaled rule on the prepared inputs."""
        if not isinstance(self.sigma, str):
            return float(self.sigma)
        rule = self.sigma.lower()
        if rule == "median":
            sigma = median_sigma(Xp, random_state=int(rng.integers(0, 2**63 - 1))) \
                if Xp.shape[0] >= 2 else 0.0
        else:
            sigma = scale_sigma(Xp)
            kernel = self.kernel.lower()
            if kernel == "laplacian":
                sigma *= math.sqrt(2.0 * Xp.shape[1] / math.pi)
            elif kernel == "cauchy":
                sigma *= math.sqrt(2.0)
        if not (sigma > 0.0 and math.isfinite(sigma)):
            raise ValueError(f"sigma={self.sigma!r} is computed from the training inputs, but "
                             f"the {Xp.shape[0]} row(s) given do not vary (every column is "
                             f"constant): check the feature columns, give partial_fit a first "
                             f"batch of several distinct rows, or pass sigma as a number")
        return float(sigma)

    def _targets(self, y):
        idx = label_index(self.classes_, y)
        if len(self.classes_) == 2:
            return np.where(idx == 1, 1.0, -1.0)[:, None]
        Y = -np.ones((len(y), len(self.classes_)))
        Y[np.arange(len(y)), idx] = 1.0
        return Y

    def _run(self, Xp, Y, order, progress, eval_set, t0, info_extra, precomputed=False):
        state = SGDState(self.last_iterate_.T, self.coef_.T, self.n_iter_)
        evaluate = None
        if eval_set is not None:
            Xv, yv = check_X_y(*eval_set)
            Xv = check_array(Xv, "X_val", n_features=self.n_features_in_,
                             estimator=type(self).__name__)

            def evaluate(st):
                self.coef_ = st.betabar.T.copy()
                return {"val_error": float(np.mean(self.predict(Xv) != yv))}
        try:
            fmap = None if precomputed else self.feature_map_
            state, _, hist = averaged_sgd(fmap, Xp, Y, order, float(self.reg),
                                          self.gamma_, state, bool(self.average),
                                          self.chunk_size, progress, evaluate=evaluate,
                                          feature_sq_norm=self._R2(), solver="rfsgd")
        except FitCancelled as exc:
            if exc.partial is not None:
                st, hist = exc.partial
                self._store(st, hist, t0, dict(info_extra, cancelled=True))
            raise
        except NumericalError:
            # The iterates were updated in place: nothing finite is left to keep.
            del self.coef_
            raise
        self._store(state, hist, t0, info_extra)

    def _store(self, state, hist, t0, info):
        self.coef_ = np.ascontiguousarray(state.betabar.T)
        self.last_iterate_ = np.ascontiguousarray(state.beta.T)
        self.n_iter_ = int(state.t)
        last = slice(-1, None)
        self.solver_info_ = dict(info, n_iter=int(state.t), gamma=self.gamma_, eta1=self.eta1_,
                                 variant=self.variant.lower(),
                                 progressive_loss=float(np.mean(hist["train_loss"][last]))
                                 if hist["train_loss"] else float("nan"),
                                 progressive_error=float(np.mean(hist["train_error"][last]))
                                 if hist["train_error"] else float("nan"))
        self.fit_time_ = time.perf_counter() - t0

    def _estimate_fit(self, n_samples, n_features_in, n_outputs=1) -> FitEstimate:
        """Peak bytes and rough seconds of ``fit`` on n rows of d inputs (n_outputs classes).

        Memory: the standardised copy of X, the frequencies (M x d), four (D, k) coefficient
        arrays, one chunk of features, the visiting order, and with n_epochs > 1 the cached
        n x D feature matrix when it fits ``feature_cache_mb``. Time: n_epochs n steps of
        O(D k) each plus the features (O(M d) per row and pass), counted per kernel in ``work``
        and timed at rwtool.resources.KERNEL_RATES.
        """
        self._validate()
        n, d = int(n_samples), int(n_features_in)
        k = 1 if n_outputs <= 2 else int(n_outputs)
        M = int(self.n_features)
        D = 2 * M if self.variant.lower() == "pair" else M
        epochs = int(self.n_epochs)
        cs = int(self.chunk_size) if self.chunk_size else max(256, min(8192, int(4e6 // D)))
        cache = epochs > 1 and n * D * 8 <= self.feature_cache_mb * 2**20
        peak = 8 * (n * d + M * (d + 1) + 4 * D * k + n * (epochs + k + 1))
        # the cached n x D features, or one chunk of them (W x is formed in the same buffer)
        peak += 8 * D * (n if cache else min(cs, n))
        if isinstance(self.sigma, str) and self.sigma.lower() == "median":
            peak += 8 * min(n, 1000) ** 2 * 2
        passes = 1 if cache else epochs
        # the D features of every row in each pass that computes them (their M d products in
        # BLAS), then one averaged-SGD step per row and epoch over its D k coefficients
        work = {self._feature_kernel(): passes * n * D, "blas": passes * n * M * d,
                "asgd_step": epochs * n * D * k}
        detail = (f"{epochs} pass(es) over {n} rows with {D} random-feature coefficients per "
                  f"class" + (f"; the {n} x {D} feature matrix is cached" if cache else ""))
        return FitEstimate(peak_bytes=int(peak), seconds=seconds_of(work), detail=detail,
                           work=work)

    def _estimate_predict(self, n_rows, n_features_in, n_outputs=1) -> dict:
        """The work of ``decision_function`` on n rows: their D features and the product."""
        n, d = int(n_rows), int(n_features_in)
        k = 1 if n_outputs <= 2 else int(n_outputs)
        M = int(self.n_features)
        D = 2 * M if self.variant.lower() == "pair" else M
        return {self._feature_kernel(): n * D, "blas": n * (M * d + D * k)}

    def _feature_kernel(self) -> str:
        """The KERNEL_RATES entry of the features: "pair" computes a cos and a sin per
        frequency (two outputs), measured apart from the one-phase map's cos."""
        return "rff_pair_features" if self.variant.lower() == "pair" else "rff_features"

    # -- public API ------------------------------------------------------------------------
    @reports_to_sklearn
    def fit(self, X, y, sample_weight=None, callback=None, eval_set=None):
        """Draw the features and run ``n_epochs`` passes of averaged SGD over (X, y).

        ``sample_weight`` (one weight >= 0 per row): each epoch visits n rows drawn with
        probability proportional to the weights instead of a permutation, so every step is an
        unbiased step on the weighted loss (1 / sum w) sum_i w_i loss_i + reg; integer weights
        are the repeated rows in distribution, not bit for bit. The standardisation
        statistics are weighted too.

        ``callback`` receives "iterations" events with the progressive train loss/error of each
        chunk (and ``val_error`` on ``eval_set=(X_val, y_val)`` when given).
        """
        self._validate()
        check_feature_names(self, X, reset=True)
        X, y = check_X_y(X, y)
        weights = check_sample_weight(sample_weight, len(y))
        classes, _ = fit_classes(
            y, on_classes=lambda k: check_fit_memory(self, X.shape[0], X.shape[1], k))
        for name in ("coef_", "classes_"):
            if hasattr(self, name):
                delattr(self, name)
        check_not_constant(X)
        t0 = time.perf_counter()
        rng = check_random_state(self.random_state)
        self._start(X, classes, rng, weights)
        # a row of weight 0 is absent: never visited, nor judged by the divergence guard
        X, y, weights = present_rows(weights, X, y)
        Y = self._targets(y)
        order_rng = np.random.default_rng(int(rng.integers(0, 2**63 - 1)))
        n = X.shape[0]
        epochs = int(self.n_epochs)
        order = np.concatenate([visit_order(order_rng, n, weights)
                                if self.shuffle or weights is not None else np.arange(n)
                                for _ in range(epochs)])
        Xp = self._prepare_X(X)
        progress = make_progress(callback)
        # Several passes over a set whose features fit the budget: compute them once.
        cache = epochs > 1 and n * self.feature_map_.n_output_ * 8 <= self.feature_cache_mb * 2**20
        if cache:
            # a block of rows at a time (seconds for the whole set): progress and cancellation
            # between blocks, the blocks predict() uses
            progress.start("features", n)
            Phi = np.empty((n, self.feature_map_.n_output_))
            for start in range(0, n, 4096):
                stop = min(n, start + 4096)
                self.feature_map_._features_into(np.ascontiguousarray(Xp[start:stop], float),
                                                 Phi[start:stop])
                progress.update(stop)
            Xp = Phi
            progress.end()
        with unfitted_on_failure(self):   # a failed fit leaves the estimator unfitted
            self._run(Xp, Y, order, progress, eval_set, t0,
                      {"finite_sample": epochs > 1, "n_epochs": epochs, "features_cached": cache},
                      precomputed=cache)
            self.solver_info_["final_loss_ratio"] = check_final_model(
                "RFSGD", None if cache else self.feature_map_, Xp, Y, self.coef_,
                get_loss("logistic"), iteration=self.n_iter_,
                fix=f"raise gamma (now {self.gamma_:.4g}; None gives the theorem's "
                    f"{default_gamma(float(self.reg), self._R2()):.4g}: smaller first steps), or "
                    f"raise reg")
        return self

    def partial_fit(self, X, y, classes=None, sample_weight=None, callback=None):
        """One step per row of (X, y), in the given order, continuing the schedule (t goes on).

        With ``sample_weight`` the chunk's len(X) steps visit its rows drawn with probability
        proportional to the weights (the weighted loss in expectation, as ``fit``).

        The first call draws the features and needs ``classes`` (all labels the stream may
        hold) unless y already holds them all; with ``standardize=True`` the first batch fixes
        the scaling, so make it representative or pass ``standardize=False``.
        """
        self._validate()
        check_feature_names(self, X, reset=not hasattr(self, "coef_"))
        X, y = check_X_y(X, y)
        weights = check_sample_weight(sample_weight, len(y))
        t0 = time.perf_counter()
        if not hasattr(self, "coef_"):
            labels = class_labels(y if classes is None else classes,
                                  "y" if classes is None else "classes")[0]
            if len(labels) < 2:
                raise ValueError("the first partial_fit call needs every class: pass "
                                 "classes=[...] with at least two labels")
            self._start(X, labels, check_random_state(self.random_state), weights)
        else:
            X = check_array(X, n_features=self.n_features_in_, estimator=type(self).__name__)
            if classes is not None and not np.array_equal(class_labels(classes, "classes")[0],
                                                          self.classes_):
                raise ValueError(f"classes={classes!r} differs from the classes of the first "
                                 f"partial_fit call {self.classes_!r}")
        Y = self._targets(y)
        order = (np.arange(X.shape[0]) if weights is None else
                 visit_order(np.random.default_rng(self.n_iter_), X.shape[0], weights))
        self._run(self._prepare_X(X), Y, order, make_progress(callback), None,
                  t0, {"finite_sample": False, "streaming": True})
        return self

    def _raw_decision(self, X):
        check_is_fitted(self)
        X = check_array(X, n_features=self.n_features_in_, estimator=type(self).__name__)
        return self.feature_map_.linear_predict(self._prepare_X(X), self.coef_)

    def _onnx_decision(self, g, x):
        """``_raw_decision`` as ONNX nodes on ``g`` (rwtool.persist's Graph) of the input x."""
        phi = self.feature_map_._onnx(g, g.standardize(self.x_scaler_, x))
        return g.matmul(phi, g.const(self.coef_, "coef"))

    def predict_proba(self, X) -> np.ndarray:
        """sigmoid(gbar(x)), the logistic model's estimate of P(y = classes_[1] | x).

        With several classes the one-vs-rest sigmoids are normalised to sum to one.
        """
        D = self._finite_decision(X)
        P = np.exp(-logistic_loss(D))            # sigmoid(D), overflow-free
        if D.shape[1] == 1:
            return np.hstack([1.0 - P, P])
        return P / P.sum(axis=1, keepdims=True)

    def predict_log_proba(self, X) -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.log(self.predict_proba(X))
