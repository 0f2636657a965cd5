"""Averaged mini-batch SGD for random kitchen sinks (RKS solver "sgd"; spec sections 3-4).

Minimises the RKS objective on the fixed features psi_t(x) = phi(w_t, x) / sqrt(T),

    J(a) = (1/m) sum_i l(a . psi(x_i), y_i) + (lam/2) ||a||^2,

by passes (epochs) over a random permutation in mini-batches of b rows:

    a <- (1 - eta_t lam) a - eta_t (1/b) sum_{i in B_t} l'(a . psi(x_i), y_i) psi(x_i),
    eta_t = 1 / (L + lam t),   L = smoothness(l) * (mean + (max - mean) / b),

mean and max being those of ||psi(x_i)||^2 over the first chunk of rows: L is the expected
smoothness of a b-row mini-batch gradient (a batch's curvature is at most the mean of its
rows' ||psi||^2, and one row at the maximum lifts that mean by (max - mean) / b). The step
decays like the strongly convex rate 1/(lam t) once lam t dominates. The worst-row constant
smoothness * max ||psi||^2 (``step_rule="max"``, the rule before this one) is safe for any
batch but, with unbounded features (ReLU) and heavy-tailed row norms, is set by a few outliers
and makes every step tiny (RKS relu on adults stayed at the majority rate). A batch far above
L (rows larger than the first chunk's) is caught by the divergence guard.
The output is the Polyak-Ruppert average of the iterates from the second epoch on (of all
iterates when max_iter = 1). This is the kitchen-sink counterpart of SFGD: the
features are fixed, so every step moves all T coefficients. Features are computed chunk by chunk
(``chunk`` rows), never the whole m x T matrix; progress (stage "sgd") and cancellation happen
between chunks, and a cancel keeps the current average. RKHS weightings learn their weight
function with SFGD (sfgd.py) instead; this module never touches a Gram matrix.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..losses import get_loss, loss_deriv, loss_value
from ..exceptions import FitCancelled
from ..progress import make_progress
from ._divergence import check_final_model, diverged, loss_limit
from ._draws import visit_order

__all__ = ["sgd_fit", "step_constant"]

#: what to change when SGD diverges: a smaller batch raises L toward the largest row's
#: smoothness (a smaller step 1 / (L + lam t)); standardised inputs and a smaller sigma keep the
#: rows' feature norms near the first chunk's, on which L was measured
_FIX = ("standardize the inputs (standardize=True), lower sigma, lower batch_size (a smaller "
        "step), or raise reg")


@njit(cache=True, nogil=True)
def _sgd_chunk(Phi, Yc, a, abar, n_avg, averaging, t, lam, L, b, code, limit):
    """Mini-batch steps over the rows of one chunk (in order); returns (t, n_avg, loss sum,
    bad step, its batch loss): the chunk stops at the first step whose batch loss exceeds
    ``limit`` or whose coefficients are not finite (bad step -1 when none)."""
    rows, T = Phi.shape
    k = a.shape[1]
    g = np.empty(T)
    loss_sum = 0.0
    for start in range(0, rows, b):
        stop = min(rows, start + b)
        t += 1
        eta = 1.0 / (L + lam * t)
        it_loss = 0.0
        for j in range(k):
            for u in range(T):
                g[u] = 0.0
            for r in range(start, stop):
                f = 0.0
                for u in range(T):
                    f += Phi[r, u] * a[u, j]
                it_loss += loss_value(code, f, Yc[r, j])
                d = loss_deriv(code, f, Yc[r, j])
                for u in range(T):
                    g[u] += d * Phi[r, u]
            inv = 1.0 / (stop - start)
            shrink = 1.0 - eta * lam
            for u in range(T):
                a[u, j] = shrink * a[u, j] - eta * inv * g[u]
        loss_sum += it_loss
        it_loss /= k * (stop - start)
        if not (it_loss <= limit) or not math.isfinite(a.sum()):
            return t, n_avg, loss_sum, t, it_loss
        if averaging:
            n_avg += 1
            w = 1.0 / n_avg
            for j in range(k):
                for u in range(T):
                    abar[u, j] += w * (a[u, j] - abar[u, j])
    return t, n_avg, loss_sum, -1, 0.0


STEP_RULES = ("batch", "max")


def _check_rule(rule):
    if rule not in STEP_RULES:
        raise ValueError(f"step_rule must be one of {STEP_RULES}, got {rule!r}")


def step_constant(sq_norms, smoothness, batch_size, rule="batch") -> float:
    """L of the step 1 / (L + lam t) from the squared feature norms ||psi(x_i)||^2 of some rows.

    "batch": smoothness * (mean + (max - mean) / b), the expected smoothness of a b-row
    mini-batch gradient (a batch's curvature is at most the mean of its rows' norms; one row at
    the maximum lifts that by (max - mean) / b); "max": smoothness * max, the worst single row.
    """
    _check_rule(rule)
    sq_norms = np.asarray(sq_norms, dtype=float)
    top = float(np.max(sq_norms))
    if rule == "max":
        value = top
    else:
        mean = float(np.mean(sq_norms))
        value = mean + (top - mean) / int(batch_size)
    return max(float(smoothness) * value, 1e-12)


def sgd_fit(feature_map, X, Y, reg, loss="squared", batch_size=50, max_iter=5, tol=1e-4,
            average=True, random_state=None, chunk=2048, progress=None, step_rule="batch",
            weights=None):
    """Averaged SGD on a fitted kitchen-sink map. Returns ``(coef (T, k), info)``.

    ``weights`` (one per row, or None): each epoch visits m rows drawn in proportion to
    them instead of a permutation, the weighted loss in expectation (solvers._draws).
    ``max_iter`` is the number of epochs; the run stops earlier when the mean training loss
    of an epoch improves by less than ``tol`` (relative; 0 runs every epoch).
    ``step_rule``: "batch" (default) sets L from the mini-batch expected smoothness of the
    first chunk's feature norms, "max" from its largest row (the rule before; see the module
    docstring and :func:`step_constant`). ``info``: ``n_iter`` (epochs),
    ``train_loss`` (per epoch), ``step_L``. Cancelling raises
    FitCancelled(partial_model=True, partial=(coef, info)) with the current (averaged) iterate;
    a diverging run (batch loss above :func:`rwtool.solvers._divergence.loss_limit`, or non-finite
    coefficients: a later chunk with larger features than the one L was measured on), or one
    returning a model far worse than the zero model (rwtool.solvers._divergence;
    ``info["final_loss_ratio"]``), raises :class:`rwtool.NumericalError`.
    """
    reg = float(reg)
    if not (math.isfinite(reg) and reg >= 0.0):
        raise ValueError(f"reg must be >= 0, got {reg!r}")
    if int(batch_size) < 1 or int(max_iter) < 1:
        raise ValueError(f"batch_size and max_iter must be >= 1, got {batch_size!r}, "
                         f"{max_iter!r}")
    _check_rule(step_rule)
    loss = get_loss(loss)
    rng = random_state if isinstance(random_state, np.random.Generator) else \
        np.random.default_rng(random_state)
    Y = np.ascontiguousarray(Y, dtype=float)
    m = X.shape[0]
    T = feature_map.n_output_
    k = Y.shape[1]
    a = np.zeros((T, k))
    abar = np.zeros((T, k))
    chunk = max(int(batch_size), (int(chunk) // int(batch_size)) * int(batch_size))
    buf = np.empty((min(chunk, m), T))
    progress = make_progress(progress)
    n_chunks = -(-m // chunk)
    progress.start("sgd", int(max_iter) * n_chunks)
    L = None
    limit = loss_limit(loss, Y)
    t, n_avg = 0, 0
    history = []
    info = {}
    for epoch in range(int(max_iter)):
        perm = visit_order(rng, m, weights)
        averaging = bool(average) and (epoch >= 1 or int(max_iter) == 1)
        total = 0.0
        for ci, start in enumerate(range(0, m, chunk)):
            idx = perm[start:start + chunk]
            Phi = buf[: len(idx)]
            feature_map._features_into(np.ascontiguousarray(X[idx]), Phi)
            if L is None:
                L = step_constant(np.einsum("ij,ij->i", Phi, Phi), loss.smoothness,
                                  batch_size, step_rule)
            t, n_avg, s, bad, bad_loss = _sgd_chunk(Phi, Y[idx], a, abar, n_avg, averaging, t,
                                                    reg, L, int(batch_size), loss.code, limit)
            if bad >= 0:
                raise diverged("SGD", bad, float(bad_loss), limit, _FIX)
            total += s
            info = {"n_iter": epoch + 1, "train_loss": history + [total / (k * (start + len(idx)))],
                    "step_L": L, "average": bool(average)}
            try:
                progress.update(epoch * n_chunks + ci + 1, loss=total / (k * (start + len(idx))),
                                epoch=epoch + 1)
            except FitCancelled as exc:
                coef = abar if n_avg > 0 else a
                raise FitCancelled(str(exc), partial_model=True,
                                   partial=(coef.copy(), dict(info, cancelled=True))) from None
        history.append(total / (k * m))
        if tol > 0 and len(history) >= 2 and history[-2] - history[-1] < tol * abs(history[-2]):
            break
    progress.end(loss=history[-1])
    coef = np.ascontiguousarray(abar if n_avg > 0 else a)
    ratio = check_final_model("SGD", feature_map, X, Y, coef, loss, iteration=t, fix=_FIX)
    info = {"n_iter": len(history), "train_loss": history, "step_L": L, "average": bool(average),
            "final_loss_ratio": ratio}
    return coef, info

