"""Optimal Stepsize Descent (000 Section 5.2, Algorithm 2; spec section 4.4).

    alpha_0 = 0; for t = 1..T:
        batch B_t of b rows (with replacement), centre u = w_t
        alpha'(eta) = (1 - lam) alpha_{t-1} + eta K(u, .)                           (000 eq. 44)
        eta_t = argmin_eta  (1/b) sum_{B_t} l(f'(x), y) + (lam/2) ||alpha'(eta)||_H^2  (eq. 45)
        alpha_t = alpha'(eta_t)
    output alpha_T

with f'(x) = (1 - lam) f_{t-1}(x) + eta psi_u(x). The objective in eta is convex with derivative
(000 eq. 49)

    g(eta) = (1/b) sum l'(f'(x_i), y_i) psi_u(x_i) + lam (1 - lam) alpha(u) + lam eta K(u, u).

Squared loss: g is affine and

    eta_t = [ (1/b) sum (y_i - (1 - lam) f_i) p_i - lam (1 - lam) alpha(u) ]
            / [ (1/b) sum p_i^2 + lam K(u, u) ],     p_i = psi_u(x_i).

Logistic loss: g is increasing; its root is found by Newton steps safeguarded by a bracket
(bisection whenever Newton leaves it). When g has no root (separable batch with lam = 0), eta is
capped at +/- ``ETA_CAP`` and the iteration is counted in ``info["capped"]``.
The norm ||alpha_t||_H is carried like SFGD's (000 eq. 48). The batches, features and Gram
columns come from :class:`rwtool.solvers._sfgd.BlockStream`; nothing m x T is built. Batches
must not be tiny (000 Remark after Algorithm 2): a batch of b rows fits one scalar per centre
and overfits the batch when b is small. Progress stage "osd"; a cancel keeps alpha_t of the
last completed block. This module draws no centres (they come, in order, from the fitted map).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from numba import njit

from ..losses import SQUARED, get_loss, loss_deriv, loss_deriv2, loss_value
from ..progress import make_progress
from ._divergence import check_final_model, diverged, loss_limit
from ..exceptions import NumericalWarning
from ._sfgd import BlockStream, block_tick, check_rkhs_map, report_block, sample_features

__all__ = ["osd_fit", "optimal_stepsize", "common_mode_share", "ETA_CAP", "COLLINEAR_SHARE"]

#: largest |eta| the logistic root finder returns when g(eta) has no root
ETA_CAP = 1e12
#: a top singular value carrying this share of the sampled features' energy makes OSD warn:
#: measured on the defaults benchmark's sets, RWRelu/RWExpRelu at >= 0.994 (mnist17, adults,
#: digits, cancer, make_classification) gave constant or near-chance OSD models, while every
#: instantiation at <= 0.99 gave a usable one (docs/bench/iterative_defaults.md)
COLLINEAR_SHARE = 0.99
#: what to change when OSD diverges: its step is the exact line search of one batch
_FIX = ("use larger batches (batch_size, default min(500, rows)), raise reg, or standardize "
        "the inputs (standardize=True)")


def common_mode_share(feature_map, X, n_rows=512, n_centres=128) -> float:
    """s_1^2 / sum s_i^2 of the features of at most ``n_rows`` rows on the first ``n_centres``
    centres: near 1 when every feature is nearly the same function of x (RWRelu on wide inputs,
    where each psi_t(x) is about ||x|| / sqrt(2 pi); docs/SOLVERS.md)."""
    _, _, _, Psi = sample_features(feature_map, X, n_rows, n_centres)
    sv = np.linalg.svd(Psi, compute_uv=False)
    energy = float(np.sum(sv ** 2))
    return float(sv[0] ** 2 / energy) if energy > 0 and math.isfinite(energy) else 0.0


@njit(cache=True, nogil=True)
def _g(code, f, p, y, shrink, alpha_u, kuu, lam, eta):
    """g(eta) of 000 eq. 49 and its derivative, on one batch (f: predictions of alpha_{t-1})."""
    b = f.shape[0]
    g = 0.0
    dg = 0.0
    for i in range(b):
        z = shrink * f[i] + eta * p[i]
        g += loss_deriv(code, z, y[i]) * p[i]
        dg += loss_deriv2(code, z, y[i]) * p[i] * p[i]
    return g / b + lam * shrink * alpha_u + lam * eta * kuu, dg / b + lam * kuu


@njit(cache=True, nogil=True)
def _optimal_eta(code, f, p, y, lam, alpha_u, kuu):
    """argmin over eta of the batch objective (000 eq. 45); returns (eta, capped)."""
    b = f.shape[0]
    shrink = 1.0 - lam
    if code == SQUARED:
        num = 0.0
        den = 0.0
        for i in range(b):
            num += (y[i] - shrink * f[i]) * p[i]
            den += p[i] * p[i]
        num = num / b - lam * shrink * alpha_u
        den = den / b + lam * kuu
        if den <= 0.0:
            return 0.0, False
        return num / den, False
    g0, d0 = _g(code, f, p, y, shrink, alpha_u, kuu, lam, 0.0)
    if g0 == 0.0 or d0 == 0.0:
        return 0.0, False
    # bracket the root: g is non-decreasing in eta
    step = max(1.0, abs(g0) / d0)
    if g0 > 0.0:
        hi = 0.0
        lo = -step
        glo, _ = _g(code, f, p, y, shrink, alpha_u, kuu, lam, lo)
        while glo > 0.0:
            hi = lo
            lo *= 2.0
            if -lo > ETA_CAP:
                return -ETA_CAP, True
            glo, _ = _g(code, f, p, y, shrink, alpha_u, kuu, lam, lo)
    else:
        lo = 0.0
        hi = step
        ghi, _ = _g(code, f, p, y, shrink, alpha_u, kuu, lam, hi)
        while ghi < 0.0:
            lo = hi
            hi *= 2.0
            if hi > ETA_CAP:
                return ETA_CAP, True
            ghi, _ = _g(code, f, p, y, shrink, alpha_u, kuu, lam, hi)
    eta = 0.5 * (lo + hi)
    for _ in range(200):
        g, dg = _g(code, f, p, y, shrink, alpha_u, kuu, lam, eta)
        if g == 0.0:
            break
        if g > 0.0:
            hi = eta
        else:
            lo = eta
        new = eta - g / dg if dg > 0.0 else 0.5 * (lo + hi)
        if not (lo < new < hi):
            new = 0.5 * (lo + hi)
        if abs(new - eta) <= 1e-14 * (1.0 + abs(eta)) or hi - lo <= 1e-14 * (1.0 + abs(eta)):
            eta = new
            break
        eta = new
    return eta, False


@njit(cache=True, nogil=True)
def _osd_block(Psi, Yb, Gcol, t0, a, norm2, lam, b, code, limit):
    """Run iterations t0..t1-1 of OSD in place; (mean batch loss, capped count, bad iteration,
    its batch loss): the run stops at the first iteration (1-based) whose batch loss exceeds
    ``limit`` or whose norm is not finite (bad iteration -1 when none)."""
    t1 = Psi.shape[1]
    k = a.shape[1]
    shrink = 1.0 - lam
    f = np.empty(b)
    p = np.empty(b)
    y = np.empty(b)
    loss_sum = 0.0
    capped = 0
    for s in range(t1 - t0):
        t = t0 + s
        r0 = s * b
        it_loss = 0.0
        for j in range(k):
            for i in range(b):
                r = r0 + i
                acc = 0.0
                for u in range(t):
                    acc += Psi[r, u] * a[u, j]
                f[i] = acc
                p[i] = Psi[r, t]
                y[i] = Yb[r, j]
                it_loss += loss_value(code, acc, y[i])
            alpha_u = 0.0
            for u in range(t):
                alpha_u += a[u, j] * Gcol[u, s]
            kuu = Gcol[t, s]
            eta, cap = _optimal_eta(code, f, p, y, lam, alpha_u, kuu)
            if cap:
                capped += 1
            for u in range(t):
                a[u, j] *= shrink
            a[t, j] = eta
            n2 = shrink * shrink * norm2[j] + 2.0 * shrink * eta * alpha_u + eta * eta * kuu
            norm2[j] = n2 if n2 > 0.0 else 0.0
        loss_sum += it_loss
        it_loss /= k * b
        if not (it_loss <= limit) or not math.isfinite(norm2.sum()):
            return loss_sum / (k * b * (s + 1)), capped, t + 1, it_loss
    return loss_sum / (k * b * (t1 - t0)), capped, -1, 0.0


def optimal_stepsize(f, p, y, lam, alpha_u, kuu, loss="squared") -> float:
    """eta_t of 000 eq. 45 for one batch: ``f`` predictions of alpha_{t-1}, ``p`` = psi_u(x),
    ``y`` targets, ``alpha_u`` = alpha_{t-1}(u), ``kuu`` = K(u, u)."""
    loss = get_loss(loss)
    f = np.ascontiguousarray(f, dtype=float)
    p = np.ascontiguousarray(p, dtype=float)
    y = np.ascontiguousarray(y, dtype=float)
    eta, _ = _optimal_eta(loss.code, f, p, y, float(lam), float(alpha_u), float(kuu))
    return float(eta)


def osd_fit(feature_map, X, Y, reg, loss="squared", batch_size=50, random_state=None,
            block=64, progress=None, weights=None):
    """Optimal Stepsize Descent on a fitted RKHS-weighting map; one iteration per centre.

    ``reg`` (lam) is in [0, 1): it is both the regulariser of J and the shrink factor
    (1 - lam) of 000 eq. 44. ``weights`` (one per row, or None): batch rows are drawn in
    proportion to them, the weighted loss in expectation (solvers._draws). Returns ``(coef (T, k), info)``; ``info`` has ``norm``
    (||alpha_T||_H per output), ``n_iter``, ``train_loss``, ``capped``. Raises
    FitCancelled(partial_model=True, partial=(coef, info)) on a cancel after a block, and
    :class:`rwtool.NumericalError` when a batch loss explodes or the returned model is far worse
    than the zero model (rwtool.solvers._divergence; ``info["final_loss_ratio"]``).
    """
    check_rkhs_map(feature_map, "OSD")
    reg = float(reg)
    if not (math.isfinite(reg) and 0.0 <= reg < 1.0):
        raise ValueError(f"OSD needs 0 <= reg < 1 (alpha is shrunk by 1 - reg each step), "
                         f"got {reg!r}")
    if int(batch_size) < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size!r}")
    loss = get_loss(loss)
    share = common_mode_share(feature_map, X)
    if share >= COLLINEAR_SHARE:
        warnings.warn(f"OSD: the features are nearly collinear (the top singular value carries "
                      f"{100 * share:.2f}% of their energy on a sample of rows): each exact "
                      f"line search fits their common mode, so the model is unreliable "
                      f"(RWRelu/RWExpRelu on wide inputs, docs/SOLVERS.md); use solver='sfgd' "
                      f"or 'lstsq', or instantiation='rwsign'", NumericalWarning, stacklevel=3)
    rng = random_state if isinstance(random_state, np.random.Generator) else \
        np.random.default_rng(random_state)
    Y = np.ascontiguousarray(Y, dtype=float)
    T = feature_map.n_output_
    k = Y.shape[1]
    a = np.zeros((T, k))
    norm2 = np.zeros(k)
    progress = make_progress(progress)
    progress.start("osd", T)
    capped = 0
    last_loss = math.nan
    limit = loss_limit(loss, Y)

    def info_at(t):
        return {"n_iter": t, "norm": np.sqrt(norm2).tolist(), "train_loss": float(last_loss),
                "capped": int(capped)}

    done = [0]
    tick = block_tick(progress, lambda: (a.copy(), info_at(done[0]))) if progress.active \
        else None
    for t0, t1, rows, Psi, _phi, Gcol in BlockStream(feature_map, X, batch_size, rng, block,
                                                     weights=weights, tick=tick):
        last_loss, c, bad, bad_loss = _osd_block(Psi, Y[rows], Gcol, t0, a, norm2, reg,
                                                 int(batch_size), loss.code, limit)
        capped += int(c)
        if bad >= 0:
            raise diverged("OSD", bad, float(bad_loss), limit, _FIX)
        done[0] = t1
        report_block(progress, t1, last_loss, reg, norm2, lambda: (a.copy(), info_at(t1)))
    progress.end(loss=float(last_loss))
    ratio = check_final_model("OSD", feature_map, X, Y, a, loss, iteration=T, fix=_FIX)
    return np.ascontiguousarray(a), dict(info_at(T), final_loss_ratio=ratio)
