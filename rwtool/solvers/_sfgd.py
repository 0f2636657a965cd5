"""Stochastic functional gradient descent (SFGD; 003 Algorithm 3, 000 Algorithm 1; spec 4.3).

    alpha_0 = 0; for t = 1..T:
        batch B_t of b rows (with replacement), centre w_t (the t-th centre of the map)
        eta_t = min(1 / (lam t), c / L)        (rwtool's cap; c = None gives the paper's 1 / (lam t))
        c_t = (1/b) sum_{(x, y) in B_t} l'(f_{t-1}(x), y) phi(w_t, x)              (000 eq. 35)
        alpha_{t-1/2} = (1 - eta_t lam) alpha_{t-1} - eta_t c_t K(w_t, .)           (000 eq. 41)
        alpha_t = min(1, B / ||alpha_{t-1/2}||_H) alpha_{t-1/2}      (projection, optional)
    output alpha_bar = (1/(T+1)) sum_{t=0..T} alpha_t          (or alpha_T, average=False)

The squared norm is carried by 000 eq. 42,
||(1 - eta lam) alpha - eta c K(w, .)||^2 = (1 - eta lam)^2 ||alpha||^2
    - 2 (1 - eta lam) eta c alpha(w) + eta^2 c^2 K(w, w),
with alpha(w_t) = sum_{s<t} a_s K(w_s, w_t), so the run never forms a t x t quadratic form.

The step cap is rwtool's departure from the paper (docs/SOLVERS.md): with a small lam the first
steps 1 / (lam t) are huge and the iterates overflow within a few iterations. A step of eta along
K(w_t, .) changes the prediction at x by -eta c psi_{w_t}(x), and the batch term c by about
eta l'' E[phi(w_t, x) psi_{w_t}(x)] times itself, so the iteration is stable when eta L < 1 with

    L = smoothness(l) * mean over a few hundred rows and the first centres of phi(w_t, x) psi_{w_t}(x)

(:func:`step_smoothness`); c = 0.25 was measured to converge on every case of docs/SOLVERS.md.
Divergence is detected every iteration: a batch loss above ``DIVERGED`` times the zero model's
largest row loss, or a non-finite norm, stops the run with :class:`rwtool.NumericalError`; so does a
returned model far worse than the zero model (rwtool.solvers._divergence).

The T centres are drawn up front by the feature map (same i.i.d. draw as the other solvers) and
used in order. Iterations run in blocks of ``block`` iterations: for a block, the batch rows are
drawn first, their features psi_1..psi_t1 (a prefix map, BLAS + numba) and base predictions
phi(w_t, x) are computed at once, the Gram columns K(w_s, w_t) too; a numba kernel then runs
the iterations of the block in order. Cost O(b n T^2 + n T^2) time and O(block (b + 1) T)
memory besides the coefficients: the m x T feature matrix is never built. Progress and
cancellation happen between blocks (stage "sfgd"); a cancel keeps the output (averaged or last
iterate) of the completed iterations.

This module also holds :class:`BlockStream`, the block machinery Optimal Stepsize Descent
reuses. It does not validate estimator parameters (the estimators do).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from numba import njit

from ..exceptions import FitCancelled, NumericalError
from ..losses import get_loss, loss_deriv, loss_value
from ..progress import make_progress
from ._divergence import DIVERGED, check_final_model, diverged, final_rows, loss_limit
from ._draws import draw_rows
from ._prune import subset_map

__all__ = ["sfgd_fit", "BlockStream", "section_scale", "report_block", "block_tick",
           "check_rkhs_map",
           "sample_features", "step_smoothness", "diverged", "loss_limit", "STEP_CAP", "DIVERGED"]

#: c of the capped step eta_t = min(1 / (lam t), c / L) (measured, docs/SOLVERS.md)
STEP_CAP = 0.25
#: features (rows x centres) computed per uninterrupted call between two progress ticks: about
#: 0.025 s on one core for the erf features of RWSign
TICK_FEATURES = 1 << 15


class BlockStream:
    """The per-block data of an iterative solver that adds one centre per iteration.

    For iterations t0..t1-1 (centres with these indices) it yields the batch rows, their
    features on centres 0..t1-1 (``Psi``, shape (K b, t1)), the base predictions of each
    iteration's own centre on its own batch (``phi``, shape (K b,), if asked), and the Gram
    columns ``Gcol`` = K(w_s, w_t) for s < t1, t in [t0, t1) (shape (t1, K)).

    ``Psi`` is a view of one buffer that every block overwrites (the last block's size, 64 b T
    floats: 256 MB at b = 500, T = 1000): a block's features must not be used after the
    next block is asked for. A new matrix per block held two blocks at once while the next
    was computed (the consumer's loop variable keeps the previous one), twice the memory.
    """

    def __init__(self, feature_map, X, batch_size, rng, block=64, need_phi=False,
                 weights=None, tick=None):
        self.weights = weights           # rows drawn in proportion to them (solvers._draws)
        self.fmap = feature_map
        self.tick = tick
        self.X = X
        self.b = int(batch_size)
        self.rng = rng
        self.block = int(block)
        self.need_phi = need_phi
        self.T = feature_map.n_output_

    def __iter__(self):
        m = self.X.shape[0]
        b = self.b
        buf = np.empty(min(self.block, self.T) * b * self.T)
        for t0 in range(0, self.T, self.block):
            t1 = min(self.T, t0 + self.block)
            K = t1 - t0
            rows = draw_rows(self.rng, m, K * b, self.weights)
            Xb = np.ascontiguousarray(self.X[rows])
            with warnings.catch_warnings():
                # the prefix map re-derives the constants the full map already warned about
                warnings.simplefilter("ignore", RuntimeWarning)
                prefix = subset_map(self.fmap, np.arange(t1))
            Psi = buf[:K * b * t1].reshape(K * b, t1)
            # late blocks cost seconds (K b rows x t1 features): computed a slice of rows at a
            # time, with tick(t0) between slices (progress and cancellation); every row's
            # features are computed by themselves, so the slices do not change them
            step = K * b if self.tick is None else max(1, TICK_FEATURES // t1)
            for r0 in range(0, K * b, step):
                prefix._features_into(Xb[r0:r0 + step], Psi[r0:r0 + step])
                if self.tick is not None and r0 + step < K * b:
                    self.tick(t0)
            phi = None
            if self.need_phi:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    own = subset_map(self.fmap, np.arange(t0, t1))
                full = own.base_predictor(Xb)            # (K b, K)
                phi = np.ascontiguousarray(full[np.arange(K * b), np.repeat(np.arange(K), b)])
            Gcol = np.ascontiguousarray(self.fmap.kernel_matrix(rows=np.arange(t1),
                                                                cols=np.arange(t0, t1)))
            yield t0, t1, rows, Psi, phi, Gcol


def section_scale(feature_map, idx) -> np.ndarray:
    """d_t with feature t = psi of d_t K(w_t, .) (1, or 1/sqrt(K(w_t, w_t)) when normalised).

    The exponential-kernel maps of rkhs.py use the normalised sections d_t K(w_t, .),
    d_t = exp(-||w_t||^2 / (4 gamma^2)); a step along K(w_t, .) is a step of 1/d_t along
    feature t.
    """
    if getattr(feature_map, "normalized_", False):
        W = feature_map.W_[idx]
        return np.exp(-np.einsum("ij,ij->i", W, W) / (4.0 * feature_map.gamma_ ** 2))
    return np.ones(len(idx))


@njit(cache=True, nogil=True)
def _sfgd_block(Psi, phi, Yb, Gcol, dsec, t0, a, abar, norm2, lam, radius, b, code, eta_max,
                limit):
    """Run iterations t0..t1-1 of SFGD in place; (mean batch loss, bad iteration, its loss).

    Coefficients are in the map's basis (feature t = psi of d_t K(w_t, .), ``dsec`` = d_t), so
    the step -eta c K(w_t, .) is -eta (c / d_t) on feature t; Gcol is in the same basis. The
    step is min(1 / (lam t), eta_max) (eta_max = inf: the paper's schedule). The run stops at
    the first iteration whose batch loss exceeds ``limit`` or whose norm is not finite; the
    second value is that iteration (1-based), or -1, and the third its batch loss.
    """
    t1 = Psi.shape[1]
    k = a.shape[1]
    loss_sum = 0.0
    for s in range(t1 - t0):
        t = t0 + s
        eta = 1.0 / (lam * (t + 1))
        if eta > eta_max:
            eta = eta_max
        shrink = 1.0 - eta * lam
        r0 = s * b
        it_loss = 0.0
        for j in range(k):
            c = 0.0
            for r in range(r0, r0 + b):
                f = 0.0
                for u in range(t):
                    f += Psi[r, u] * a[u, j]
                y = Yb[r, j]
                it_loss += loss_value(code, f, y)
                c += loss_deriv(code, f, y) * phi[r]
            c /= b * dsec[s]
            alpha_w = 0.0
            for u in range(t):
                alpha_w += a[u, j] * Gcol[u, s]
            n2 = (shrink * shrink * norm2[j] - 2.0 * shrink * eta * c * alpha_w
                  + eta * eta * c * c * Gcol[t, s])
            if n2 < 0.0:
                n2 = 0.0
            for u in range(t):
                a[u, j] *= shrink
            a[t, j] = -eta * c
            if radius > 0.0 and n2 > radius * radius:
                scale = radius / math.sqrt(n2)
                for u in range(t + 1):
                    a[u, j] *= scale
                n2 = radius * radius
            norm2[j] = n2
            for u in range(t + 1):
                abar[u, j] += a[u, j]
        loss_sum += it_loss
        it_loss /= k * b
        if not (it_loss <= limit) or not math.isfinite(norm2.sum()):
            return loss_sum / (k * b * (s + 1)), t + 1, it_loss
    return loss_sum / (k * b * (t1 - t0)), -1, 0.0


def sample_features(feature_map, X, n_rows, n_centres):
    """(prefix map, centre indices, rows, features) of at most ``n_rows`` rows of X drawn with
    a fixed seed (not the batch generator: the batches must not depend on what is measured)
    on the first ``n_centres`` centres: the cheap look at the features the solvers take
    before iterating."""
    rows = final_rows(X.shape[0], n_rows)
    idx = np.arange(min(int(n_centres), feature_map.n_output_))
    Xs = np.ascontiguousarray(X[rows])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sub = subset_map(feature_map, idx)
    Psi = np.empty((len(rows), len(idx)))
    sub._features_into(Xs, Psi)
    return sub, idx, Xs, Psi


def step_smoothness(feature_map, X, loss, n_rows=256, n_centres=64) -> float:
    """L: smoothness(loss) x mean of phi(w_t, x) psi_{w_t}(x) over rows and the first centres.

    Estimated on ``n_rows`` rows drawn with a fixed seed (not the batch generator, so the
    batches do not depend on whether the step is capped) and the first ``n_centres`` centres;
    psi_{w_t} is feature t divided by the section scale d_t (:func:`section_scale`).
    """
    sub, idx, Xs, Psi = sample_features(feature_map, X, n_rows, n_centres)
    P = sub.base_predictor(Xs)           # RKHS-weighting features do not depend on T
    prod = P * Psi / section_scale(feature_map, idx)[None, :]
    val = abs(float(np.mean(prod)))
    if not math.isfinite(val):
        raise NumericalError("the features overflow float64 (phi(w, x) psi_w(x) is not finite)",
                             solver="sfgd", fix="standardize the inputs (standardize=True) or "
                             "lower sigma")
    return float(loss.smoothness) * max(val, 1e-300)


def block_tick(progress, partial):
    """``tick(t0)`` for :class:`BlockStream`: a progress update inside a block (no metrics);
    a cancel becomes FitCancelled with the last completed block's ``partial()`` = (coef, info).
    The first block (64 centres: the cheapest) has no ticks, so that its end reports the
    model's sample metrics (they go out only when an update is due)."""
    def tick(t0):
        if t0 == 0:
            return
        try:
            progress.update(t0)
        except FitCancelled as exc:
            coef, info = partial()
            raise FitCancelled(str(exc), partial_model=True,
                               partial=(coef, dict(info, cancelled=True))) from None
    return tick


def report_block(progress, t1, last_loss, reg, norm2, partial):
    """Progress after a block; a cancel becomes FitCancelled with ``partial()`` = (coef, info).

    Every block's event goes out (a block is 64 iterations: at most T / 64 events), so that a
    tick inside the block (:func:`block_tick`) never takes the rate limit's turn of the block's
    metrics; the model's sample metrics are computed only when an update is due."""
    try:
        progress.update(t1, force=True, loss=float(last_loss),
                        objective=float(last_loss + 0.5 * reg * norm2.mean()),
                        norm=float(np.sqrt(norm2).max()),
                        **progress.model_metrics(lambda: partial()[0]))
    except FitCancelled as exc:
        coef, info = partial()
        raise FitCancelled(str(exc), partial_model=True,
                           partial=(coef, dict(info, cancelled=True))) from None


def check_rkhs_map(feature_map, name):
    """The iterative RW solvers need the kernel K of an RKHS weighting, not a kitchen sink."""
    if not getattr(feature_map, "has_gram", False):
        raise TypeError(f"{name} learns an RKHS weight function and needs an RKHS-weighting map "
                        f"(RWSign, RWRelu, ...), got {type(feature_map).__name__}; for random "
                        f"kitchen sinks use the 'sgd' solver")


def _check_common(reg, batch_size, radius):
    reg = float(reg)
    if not (math.isfinite(reg) and reg > 0.0):
        raise ValueError(f"SFGD needs reg > 0 (its step is 1 / (reg t)), got {reg!r}")
    if int(batch_size) < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size!r}")
    if radius is not None and not (float(radius) > 0.0):
        raise ValueError(f"radius (the projection radius B) must be > 0 or None, got {radius!r}")
    return reg


def sfgd_fit(feature_map, X, Y, reg, loss="squared", batch_size=50, radius=None, average=True,
             random_state=None, block=64, progress=None, step_cap=STEP_CAP, weights=None):
    """SFGD on a fitted RKHS-weighting map (003 Algorithm 3); one iteration per centre.

    Parameters
    ----------
    feature_map : fitted RKHSWeighting (T centres, used in order)
    X : (m, n) preprocessed inputs; Y : (m, k) targets (+/-1 for the logistic loss)
    reg : float > 0, lam; loss : "squared" or "logistic"
    batch_size : b, rows per iteration (drawn with replacement)
    radius : B of the projection step, or None for no projection
    average : output the average of alpha_0..alpha_T (True) or alpha_T
    random_state : seed or Generator of the batch draws
    block : iterations per block (the progress/cancellation granularity)
    step_cap : c of eta_t = min(1 / (reg t), c / L) (:func:`step_smoothness`), or None for
        the paper's 1 / (reg t)
    weights : row weights (m,), or None: batch rows are drawn in proportion to them, which
        makes each step's loss an unbiased estimate of the weighted loss (solvers._draws)

    Returns ``(coef (T, k), info)``; ``info`` has ``norm`` (||alpha_T||_H by eq. 42, per
    output), ``n_iter``, ``train_loss`` (mean batch loss of the last block), ``eta_max`` (the
    cap c / L, inf when uncapped).
    Raises FitCancelled(partial_model=True, partial=(coef, info)) on a cancel after a block,
    and :class:`rwtool.NumericalError` when the run diverges (batch loss above
    :func:`loss_limit`, or non-finite iterates) or returns a model far worse than the zero
    model (:func:`rwtool.solvers._divergence.check_final_model`; ``info["final_loss_ratio"]``).
    """
    check_rkhs_map(feature_map, "SFGD")
    reg = _check_common(reg, batch_size, radius)
    loss = get_loss(loss)
    if step_cap is not None and not (math.isfinite(float(step_cap)) and float(step_cap) > 0):
        raise ValueError(f"step_cap must be a positive number or None, got {step_cap!r}")
    eta_max = (math.inf if step_cap is None
               else float(step_cap) / step_smoothness(feature_map, X, loss))
    rng = np.random.default_rng(random_state) if not isinstance(
        random_state, np.random.Generator) else random_state
    Y = np.ascontiguousarray(Y, dtype=float)
    T = feature_map.n_output_
    k = Y.shape[1]
    a = np.zeros((T, k))
    abar = np.zeros((T, k))
    norm2 = np.zeros(k)
    progress = make_progress(progress)
    progress.start("sfgd", T)
    rad = -1.0 if radius is None else float(radius)
    limit = loss_limit(loss, Y)
    last_loss = math.nan
    info = {}

    def partial():
        t = info.get("n_iter", 0)
        return (abar / (t + 1) if average else a.copy()), info
    stream = BlockStream(feature_map, X, batch_size, rng, block, need_phi=True, weights=weights,
                         tick=block_tick(progress, partial) if progress.active else None)
    for t0, t1, rows, Psi, phi, Gcol in stream:
        dsec = section_scale(feature_map, np.arange(t0, t1))
        last_loss, bad, bad_loss = _sfgd_block(Psi, phi, Y[rows], Gcol, dsec, t0, a, abar,
                                               norm2, reg, rad, int(batch_size), loss.code,
                                               eta_max, limit)
        if bad >= 0:
            raise diverged("SFGD", bad, float(bad_loss), limit, _fix(step_cap))
        info = {"n_iter": t1, "norm": np.sqrt(norm2).tolist(), "train_loss": float(last_loss),
                "average": bool(average), "radius": radius, "eta_max": eta_max}
        report_block(progress, t1, last_loss, reg, norm2, partial)
    progress.end(loss=float(last_loss))
    coef = np.ascontiguousarray(abar / (T + 1) if average else a)
    ratio = check_final_model("SFGD", feature_map, X, Y, coef, loss, iteration=T,
                              fix=_fix(step_cap))
    info = {"n_iter": T, "norm": np.sqrt(norm2).tolist(), "train_loss": float(last_loss),
            "average": bool(average), "radius": radius, "eta_max": eta_max,
            "final_loss_ratio": ratio}
    return coef, info


def _fix(step_cap):
    if step_cap is None:
        return (f"cap the step (step_cap={STEP_CAP}, the default), raise reg, or set a "
                f"projection radius")
    return (f"lower step_cap (now {step_cap}), raise reg, or standardize the inputs "
            f"(standardize=True)")
