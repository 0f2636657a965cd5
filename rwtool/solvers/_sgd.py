"""Averaged SGD for the l2-regularised logistic loss (Yashima, Nitanda & Suzuki; seed 002).

Minimises  E[log(1 + exp(-Y beta^T phi(X)))] + (lam/2) ||beta||^2  with one stochastic step per
example (seed 002 Algorithm 1):

    eta_t   = 2 / (lam (gamma + t))                                   (15)
    beta_{t+1} = (1 - eta_t lam) beta_t - eta_t l'(beta_t^T phi(x_t), y_t) phi(x_t)
    theta_t = 2 (gamma + t) / ((t + 1)(2 gamma + t))                   (17)
    betabar_{t+1} = (1 - theta_t) betabar_t + theta_t beta_{t+1}

so betabar_{T+1} = sum_{t=1}^{T+1} alpha_t beta_t with alpha_t = 2 (gamma + t - 1) / ((2 gamma + T)(T + 1))
at every T, in O(M) per step and without storing the history. Features are computed a chunk of
rows at a time (BLAS), the steps run in a numba loop over the chunk, and progress/cancellation is
checked between chunks. The full-kernel baseline of the paper's Figure 4 (the same schedule in
the RKHS of the Gaussian kernel, O(t) per step) is experiment code: it lives with the
experiment (benchmarks/papers/sgd_rf_experiment.py).

This module knows feature maps only through ``_features_into``/``n_output_``; it does not
preprocess data or encode labels.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
from numba import njit

from ..exceptions import FitCancelled, NumericalError, NumericalWarning
from ..losses import LOGISTIC, LogisticLoss, loss_deriv, loss_value
from ..progress import make_progress

__all__ = ["step_size", "averaging_theta", "averaging_weights", "default_gamma",
           "check_step_size", "logistic_loss", "SGDState", "averaged_sgd", "LOGISTIC_SMOOTHNESS",
           "step_size_condition"]

_LOGISTIC = LogisticLoss()
#: the largest share of a fit's time its live validation metric (``evaluate``) may take
LIVE_SHARE = 0.1
#: L, the smoothness constant of the logistic loss (phi'' <= 1/4)
LOGISTIC_SMOOTHNESS = _LOGISTIC.smoothness


def step_size(lam: float, gamma: float, t) -> np.ndarray | float:
    """eta_t = 2 / (lam (gamma + t)), t = 1, 2, ... (seed 002 eq. 15)."""
    return 2.0 / (lam * (gamma + np.asarray(t, dtype=float)))


def averaging_theta(gamma: float, t) -> np.ndarray | float:
    """theta_t = 2 (gamma + t) / ((t + 1)(2 gamma + t)) of the averaging recursion (seed 002 eq. 17)."""
    t = np.asarray(t, dtype=float)
    return 2.0 * (gamma + t) / ((t + 1.0) * (2.0 * gamma + t))


def averaging_weights(gamma: float, T: int) -> np.ndarray:
    """alpha_t = 2 (gamma + t - 1) / ((2 gamma + T)(T + 1)), t = 1..T+1 (seed 002 eq. 15)."""
    t = np.arange(1, T + 2, dtype=float)
    return 2.0 * (gamma + t - 1.0) / ((2.0 * gamma + T) * (T + 1.0))


def default_gamma(lam: float, R2: float = 1.0) -> float:
    """Smallest gamma meeting eta_1 <= min(1/(L R^2), 1/(2 lam)) (seed 002 Theorem 3).

    2/(lam (gamma + 1)) <= 1/(L R^2)  <=>  gamma >= 2 L R^2 / lam - 1, and <= 1/(2 lam) <=>
    gamma >= 3. For lam = 1e-3 and R = 1 this is 499 (the paper uses 500).
    """
    return max(2.0 * LOGISTIC_SMOOTHNESS * R2 / lam, 4.0) - 1.0


def step_size_condition(lam: float, gamma: float, R2: float = 1.0) -> tuple[float, float, bool]:
    """``(eta_1, bound, met)``: eta_1 = 2/(lam (gamma + 1)), the bound min(1/(L R^2), 1/(2 lam))
    of seed 002 Theorem 3, and whether eta_1 meets it (up to rounding)."""
    eta1 = 2.0 / (lam * (gamma + 1.0))
    bound = min(1.0 / (LOGISTIC_SMOOTHNESS * R2), 1.0 / (2.0 * lam))
    return eta1, bound, eta1 <= bound * (1.0 + 1e-12)


def check_step_size(lam: float, gamma: float, R2: float = 1.0) -> float:
    """eta_1, with a warning when it breaks the theorem's condition (the fit still runs)."""
    eta1, bound, met = step_size_condition(lam, gamma, R2)
    if not met:
        warnings.warn(f"eta_1 = 2/(lam (gamma + 1)) = {eta1:.4g} exceeds min(1/(L R^2), "
                      f"1/(2 lam)) = {bound:.4g}, the step-size condition of seed 002 Theorem 3; "
                      f"SGD may oscillate or diverge. Use gamma >= {default_gamma(lam, R2):.6g}",
                      NumericalWarning, stacklevel=3)
    return eta1


def logistic_loss(margin: np.ndarray) -> np.ndarray:
    """log(1 + exp(-m)) of the margins m = y f, without overflow (rwtool.losses)."""
    return _LOGISTIC.value(margin, 1.0)


@njit(cache=True, nogil=True)
def _asgd_chunk(Phi, Y, rows, t0, lam, gamma, average, beta, betabar, stats):
    """Steps t0+1 .. t0+len(rows) on the examples (Phi[rows[r]], Y[rows[r]]), r = 0, 1, ...

    beta, betabar: (K, D), one binary problem per row (one-vs-rest); Y in {-1, +1}.
    stats accumulates the progressive (before-update) loss, 0-1 errors and count.
    """
    D = Phi.shape[1]
    K = Y.shape[1]
    for r in range(rows.shape[0]):
        t = t0 + r + 1.0
        eta = 2.0 / (lam * (gamma + t))
        theta = 2.0 * (gamma + t) / ((t + 1.0) * (2.0 * gamma + t))
        shrink = 1.0 - eta * lam
        i = rows[r]
        phi = Phi[i]
        for k in range(K):
            bk = beta[k]
            z = np.dot(bk, phi)                # BLAS ddot: a vectorised reduction
            y = Y[i, k]
            stats[0] += loss_value(LOGISTIC, z, y)
            # sgn(0) = -1 (seed 002 Section 2)
            if (z > 0.0) != (y > 0.0):
                stats[1] += 1.0
            g = eta * loss_deriv(LOGISTIC, z, y)   # eta_t l'(z, y)
            if average:
                bbk = betabar[k]
                for j in range(D):
                    b = shrink * bk[j] - g * phi[j]
                    bk[j] = b
                    bbk[j] += theta * (b - bbk[j])
            else:
                for j in range(D):
                    bk[j] = shrink * bk[j] - g * phi[j]
        stats[2] += 1.0


def _check_chunk(state, stats, lam, feature_sq_norm, solver):
    """Raise NumericalError when the chunk just run left non-finite or impossible iterates."""
    fix = ("standardise the inputs (standardize=True) or rescale X: features of huge inputs "
           "overflow; or raise gamma (smaller first steps) or reg")
    if not (np.isfinite(stats[0]) and np.isfinite(state.beta).all()
            and np.isfinite(state.betabar).all()):
        raise NumericalError(f"SGD met non-finite features, losses or coefficients by step "
                             f"{state.t}", solver=solver, iteration=state.t, fix=fix)
    if feature_sq_norm is not None:
        bound = 2.0 * math.sqrt(feature_sq_norm) / lam
        norm = float(np.sqrt(np.einsum("kj,kj->k", state.beta, state.beta)).max())
        if norm > bound * (1.0 + 1e-9):
            raise NumericalError(f"SGD diverged by step {state.t}: ||beta|| = {norm:.4g} exceeds "
                                 f"the bound 2 R / lam = {bound:.4g} of a stable recursion",
                                 solver=solver, iteration=state.t, fix=fix)


class SGDState:
    """Iterate of the averaged SGD: beta_t, betabar_t and the number of steps taken."""

    def __init__(self, beta: np.ndarray, betabar: np.ndarray, t: int = 0):
        self.beta = np.ascontiguousarray(beta, dtype=np.float64)
        self.betabar = np.ascontiguousarray(betabar, dtype=np.float64)
        self.t = int(t)

    @classmethod
    def zeros(cls, n_outputs: int, n_coef: int) -> "SGDState":
        """beta_1 = 0 (which meets the theorem's ||g_1|| condition)."""
        return cls(np.zeros((n_outputs, n_coef)), np.zeros((n_outputs, n_coef)), 0)

    def copy(self) -> "SGDState":
        return SGDState(self.beta.copy(), self.betabar.copy(), self.t)


def averaged_sgd(feature_map, X, Y, order, lam: float, gamma: float, state: SGDState | None = None,
                 average: bool = True, chunk_size: int | None = None, progress=None,
                 checkpoints=None, evaluate=None, feature_sq_norm: float | None = None,
                 solver: str = "averaged_sgd"):
    """Run len(order) steps of averaged SGD on the examples X[order[0]], X[order[1]], ...

    Parameters
    ----------
    feature_map : fitted FeatureMap (phi_M), features computed a chunk at a time; or None,
        and X is the feature matrix itself (rows read in place, nothing copied).
    X : (n, d) preprocessed inputs (or (n, D) features); Y : (n, K) targets in {-1, +1}.
    order : int array, the example visited at each step (a stream: arange; epochs: permutations).
    lam, gamma : regularisation and step-size offset.
    state : SGDState to continue from (partial_fit), or None for beta_1 = 0.
    average : False gives plain SGD (betabar is then the last iterate).
    progress : Progress/callback; stage "iterations", done = steps, metrics train_loss and
        train_error (progressive: each example scored before its step), plus whatever
        ``evaluate(state)`` returns (e.g. val_error). ``evaluate`` runs only while the time it
        took so far is at most :data:`LIVE_SHARE` of the time of the steps (and at the last
        step): a live curve never costs more than a tenth of the fit, whatever it evaluates.
    checkpoints : sorted step counts t at which to copy betabar (after t steps), or None.
    feature_sq_norm : R^2 >= ||phi(x)||^2 when known (1 for paired Fourier features, 2 for the
        random-phase ones), or None.
    solver : the name :class:`rwtool.NumericalError` reports.

    Divergence is detected after every chunk: non-finite features, losses or coefficients, and,
    with ``feature_sq_norm``, ||beta_k|| above 2 R / lam, a bound the recursion cannot exceed
    in exact arithmetic (|l'| <= 1 and |1 - eta_t lam| <= 1 for gamma >= 0, so
    ||beta_{t+1}|| <= max(||beta_t||, R / lam) after the first step, which is at most 2 R / lam).
    Either raises :class:`rwtool.NumericalError` naming the step and the fix; the iterates in
    ``state`` are then not usable.

    Returns ``(state, snapshots, history)``; on cancellation raises FitCancelled with
    ``partial=(state, history)`` holding the last completed chunk.
    """
    progress = make_progress(progress)
    order = np.asarray(order, dtype=np.int64)
    if feature_map is None:
        X = np.ascontiguousarray(X, dtype=np.float64)   # rows are read in place by the kernel
    T = len(order)
    K = Y.shape[1]
    D = X.shape[1] if feature_map is None else feature_map.n_output_
    state = SGDState.zeros(K, D) if state is None else state
    if state.beta.shape != (K, D):
        raise ValueError(f"the SGD state has shape {state.beta.shape}, expected {(K, D)}")
    cs = int(chunk_size) if chunk_size else max(256, min(8192, int(4e6 // max(D, 1))))
    checkpoints = np.asarray([] if checkpoints is None else checkpoints, dtype=np.int64)
    snaps = np.empty((len(checkpoints), K, D))
    next_ck = 0
    history = {"t": [], "train_loss": [], "train_error": []}
    buf = None if feature_map is None else np.empty((min(cs, max(T, 1)), D))
    Yf = np.ascontiguousarray(Y, dtype=np.float64)
    progress.start("iterations", T)
    done = 0
    t_start = time.perf_counter()
    spent = 0.0             # seconds in evaluate()
    while done < T:
        stop = min(T, done + cs)
        # chunks end on checkpoints so that the snapshot is exactly betabar_{t+1}
        if next_ck < len(checkpoints) and state.t + (stop - done) > checkpoints[next_ck]:
            stop = done + max(1, int(checkpoints[next_ck] - state.t))
        rows = order[done:stop]
        stats = np.zeros(3)
        if feature_map is None:
            _asgd_chunk(X, Yf, rows, float(state.t), float(lam), float(gamma), bool(average),
                        state.beta, state.betabar, stats)
        else:
            Phi = buf[: stop - done]
            feature_map._features_into(X[rows], Phi)
            _asgd_chunk(Phi, Yf[rows], np.arange(stop - done), float(state.t), float(lam),
                        float(gamma), bool(average), state.beta, state.betabar, stats)
        state.t += stop - done
        done = stop
        if not average:
            state.betabar[...] = state.beta
        _check_chunk(state, stats, lam, feature_sq_norm, solver)
        while next_ck < len(checkpoints) and checkpoints[next_ck] <= state.t:
            if checkpoints[next_ck] == state.t:
                snaps[next_ck] = state.betabar
            next_ck += 1
        n = max(stats[2], 1.0) * K
        metrics = {"train_loss": stats[0] / n, "train_error": stats[1] / n}
        history["t"].append(state.t)
        history["train_loss"].append(metrics["train_loss"])
        history["train_error"].append(metrics["train_error"])
        try:
            # the validation metric costs a prediction pass: computed only on the turns whose
            # event goes out, and that event is then sent whatever the pass cost (computed on a
            # turn the rate limit then suppressed, it was dropped and the live curve stalled)
            if progress.active and (progress.due() or done == T):
                steps_time = time.perf_counter() - t_start - spent
                if evaluate is not None and (done == T or spent <= LIVE_SHARE * steps_time):
                    t_eval = time.perf_counter()
                    metrics.update(evaluate(state))
                    spent += time.perf_counter() - t_eval
                progress.update(done, force=True, **metrics)
        except FitCancelled as exc:
            raise FitCancelled(str(exc), partial_model=True, partial=(state, history)) from None
    try:
        progress.end()
    except FitCancelled as exc:
        raise FitCancelled(str(exc), partial_model=True, partial=(state, history)) from None
    return state, snaps, history
