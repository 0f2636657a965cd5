"""The divergence guards every iterative solver shares (SFGD, OSD, RKS SGD, RFSGD).

Two checks, both against the zero model f = 0, where every one of these solvers starts and
towards which its regulariser pulls (for regressors, whose targets are standardised, it is also
the best constant; for +/-1 class codes the best constant would be a stricter reference than a
well-regularised classifier, whose scores shrink towards 0, can meet):

* during the run, a batch loss above ``DIVERGED`` times the zero model's largest loss on one
  training row, or a non-finite norm, stops the run (:func:`loss_limit`, :func:`diverged`). The
  largest row, not the mean: a batch of the zero model itself can reach it (one row with
  y = 30 standard deviations has 900 times the mean squared loss), so no multiple above 1
  stops a run that has not moved away from zero;
* after the run, the training loss of the model the solver returns (averaged iterate included)
  on at most ``FINAL_ROWS`` rows drawn with a fixed seed, r = loss / zero model's loss
  (:func:`final_loss_ratio`): above ``FINAL_RAISE`` the fit raises
  :class:`rwtool.NumericalError`, above ``FINAL_WARN`` it warns (:func:`check_final_model`).
  A step too large for the data can end finite but far worse than predicting zero without any
  batch reaching the early-stop limit (OSD with 5-row batches on abalone: r = 18, test MSE 18 on
  standardised y; RKS SGD on wine with 10 times its step under the old early stop: r = 418,
  test MSE 535; both returned silently before).

The thresholds were measured on the defaults benchmark and on deliberately bad steps
(benchmarks/calibration/bench_divergence.py, docs/bench/divergence.md). This module computes losses
and raises; it must not import a solver module or run an iteration.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..exceptions import NumericalError, NumericalWarning

__all__ = ["DIVERGED", "FINAL_RAISE", "FINAL_WARN", "FINAL_ROWS", "loss_limit", "diverged",
           "final_rows", "final_loss_ratio", "check_final_model"]

#: a batch loss this many times the zero model's largest row loss means the run has diverged
#: (no default fit of the benchmark trips it even at 10; bad steps stop up to 8x sooner than
#: with the old 1e6 times the mean, and 7 bad runs the old limit let finish are stopped)
DIVERGED = 1e2
#: the returned model's training loss above this many times the zero model's: NumericalError
#: (the bad models measured above it had test errors of 0.57-0.58 or an MSE of 18)
FINAL_RAISE = 1.25
#: ... above this many times (and at most FINAL_RAISE): NumericalWarning (default fits: r at
#: most 0.981, near-constant OSD models that warn already; every other at most 0.840)
FINAL_WARN = 1.05
#: rows (a fixed-seed sample of the training rows) the returned model is scored on
FINAL_ROWS = 2000
#: floor of the zero model's loss (targets all zero would make every ratio infinite)
_FLOOR = 1e-3


def _zero_loss(loss, Y) -> float:
    return max(float(np.mean(loss.value(np.zeros_like(Y), Y))), _FLOOR)


def loss_limit(loss, Y) -> float:
    """The batch loss above which an iterative solver has diverged: DIVERGED x the zero model's
    largest loss on one row (floored at 1e-3)."""
    worst = float(np.max(loss.value(np.zeros_like(Y), Y))) if np.size(Y) else 0.0
    return DIVERGED * max(worst, _FLOOR)


def diverged(name, iteration, batch_loss, limit, fix) -> NumericalError:
    """The error of a run stopped at ``iteration`` (its batch loss, or a non-finite norm)."""
    what = (f"a batch loss of {batch_loss:.3g}, more than {DIVERGED:g} times the zero "
            f"model's largest row loss {limit / DIVERGED:.3g}"
            if math.isfinite(batch_loss) and batch_loss > limit else "non-finite iterates")
    return NumericalError(f"{name} diverged: {what}; the estimator is left unfitted",
                          solver=name.lower(), iteration=int(iteration), fix=fix)


def final_rows(m, n_rows=FINAL_ROWS) -> np.ndarray:
    """Indices of at most ``n_rows`` of m rows, drawn with a fixed seed (not the solver's
    generator: the batches must not depend on the check), sorted."""
    if m <= n_rows:
        return np.arange(m)
    return np.sort(np.random.default_rng(0).choice(m, n_rows, replace=False))


def final_loss_ratio(F, Y, loss):
    """(r, model loss, zero model's loss): mean loss(F, Y) over (the mean of) loss(0, Y),
    the latter floored at 1e-3. r is inf when F is not finite."""
    F = np.asarray(F, dtype=float)
    Y = np.asarray(Y, dtype=float).reshape(F.shape)
    zero = _zero_loss(loss, Y)
    with np.errstate(over="ignore", invalid="ignore"):
        value = float(np.mean(loss.value(F, Y)))
    if not math.isfinite(value):
        return math.inf, value, zero
    return value / zero, value, zero


def check_final_model(name, feature_map, X, Y, coef, loss, *, iteration, fix) -> float:
    """Score the returned model ``coef`` on a fixed-seed sample of (X, Y) against the zero model.

    ``feature_map`` None means X already holds the features. Raises
    :class:`rwtool.NumericalError` when r = loss / zero model's loss exceeds ``FINAL_RAISE``
    (or is not finite), warns (:class:`rwtool.NumericalWarning`) above ``FINAL_WARN``;
    returns r.
    """
    idx = final_rows(X.shape[0])
    Xs = np.ascontiguousarray(X[idx])
    with np.errstate(over="ignore", invalid="ignore"):
        F = Xs @ coef if feature_map is None else feature_map.linear_predict(Xs, coef)
    r, value, zero = final_loss_ratio(F, np.asarray(Y)[idx], loss)
    what = (f"the model {name} returned has a training loss of {value:.3g} on {len(idx)} rows, "
            f"{r:.3g} times the zero model's {zero:.3g}")
    if not r <= FINAL_RAISE:
        raise NumericalError(f"{name} diverged: {what} (above {FINAL_RAISE:g} times); the "
                             f"estimator is left unfitted", solver=name.lower(),
                             iteration=int(iteration), fix=fix)
    if r > FINAL_WARN:
        warnings.warn(f"{what}: it predicts worse than zero (above {FINAL_WARN:g} times); the "
                      f"step was too large for the data, or the solver could not fit these "
                      f"features. Fix: {fix}", NumericalWarning, stacklevel=4)
    return r
