"""BKerNN numerics: Brownian kernel, closed-form ridge step, fast particle gradient, proximal operators.

Follain & Bach, "Enhanced Feature Learning via Regularisation: Integrating Neural Networks and
Kernel Methods" (seed 001; spec methods/bkernn.md). The objective (eq. 10, square loss) is

    min_{W, c, alpha} (1/(2n)) ||Y - K alpha - c 1||^2 + (lam/2) alpha^T K alpha + lam Omega(W),
    K = (1/m) sum_j K^{(w_j)},  K^{(w)}_{ii'} = (|w^T x_i| + |w^T x_i'| - |w^T (x_i - x_i')|) / 2,

solved by Algorithm 1: exact minimisation over (alpha, c) (Lemma 7), then one proximal gradient
step on the particles W (Lemmas 8 and 9) with Beck's backtracking line search (Section 3.1.3).

Row weights w (v = sqrt(w), S = sum w, V = diag(v)) replace the data term by
(1/(2S)) sum_i w_i ||y_i - f(x_i)||^2. Lemma 7 then holds with K~_w = P_v V K V P_v,
P_v = I - v v^T / S, Y~_w = P_v V Y, n -> S: beta = (K~_w + S lam I)^{-1} Y~_w,
alpha = V beta (still summing to 0), G = (lam/2) mean_k Y~_w,k^T beta_k and the residual
V (Y - f) = S lam beta; Lemma 8's gradient, -(lam/2) alpha^T dK alpha, is unchanged in
alpha. A row of weight 0 gets alpha_i = 0: absent.

Everything here is a pure function on arrays (no estimator state); ``rwtool.estimators._bkernn``
wraps it in scikit-learn-style estimators. This module must not validate user input (the
estimators do) and must not import scikit-learn.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
from numba import njit
from scipy.linalg import LinAlgError

from ._bkernn_cg import (BlockPreconditioner, SortedProjections, block_count, cg_ridge, folded,
                         lower_value, particle_slices, sort_projections, weighted_centring)
from ..exceptions import FitCancelled, NumericalError, NumericalWarning
from ..progress import make_progress
from ..threads import on_one_blas_thread, run_row_shares
from ._ridge import cholesky_solve

__all__ = ["PENALTIES", "KERNEL_SOLVERS", "CG_MIN_N", "CG_TOL", "choose_kernel_solver", "centred_kernel", "ridge_step", "particle_gradient", "penalty_value",
           "prox", "concave_shrink", "ridge_tables", "ridge_decision", "fit_particles",
           "feature_learning_score"]

#: the five weight penalties of Section 2.5 (spec section 1.6)
PENALTIES = ("basic", "variable", "feature", "concave_variable", "concave_feature")

#: how the kernel ridge step is solved (fit_particles)
KERNEL_SOLVERS = ("auto", "dense", "cg")


# ----------------------------------------------------------------------------- kernel (Lemma 7)

@njit(cache=True, nogil=True)
def _distance_rows(PT, v, out, r0, r1):
    """out[i, k] = out[k, i] <- -(1/(2m)) v_i v_k sum_j |p_ji - p_jk| for k >= i, for the
    r0-th to (r1-1)-th rows i taken from both ends (:func:`folded`: row i costs n - i).

    The Brownian kernel k(a, b) = (|a| + |b| - |a - b|)/2 differs from -|a - b|/2 by terms of the
    form u_i + u_i', which the double centring removes: both give the same K~ (spec 2.1, 6.1).
    """
    m, n = PT.shape
    scale = -0.5 / m
    acc = np.empty(n)
    for r in range(r0, r1):
        i = folded(r, 0, n)
        for k in range(n - i):
            acc[k] = 0.0
        j = 0
        # four particles per sweep: the accumulator row is loaded and stored a quarter as often
        # (5x faster than one particle per sweep at n = 1000, m = 50)
        while j + 4 <= m:
            a0, a1, a2, a3 = PT[j, i], PT[j + 1, i], PT[j + 2, i], PT[j + 3, i]
            p0, p1, p2, p3 = PT[j, i:], PT[j + 1, i:], PT[j + 2, i:], PT[j + 3, i:]
            for k in range(n - i):
                acc[k] += ((abs(a0 - p0[k]) + abs(a1 - p1[k]))
                           + (abs(a2 - p2[k]) + abs(a3 - p3[k])))
            j += 4
        while j < m:
            a, p = PT[j, i], PT[j, i:]
            for k in range(n - i):
                acc[k] += abs(a - p[k])
            j += 1
        for k in range(i, n):
            e = scale * acc[k - i] * v[i] * v[k]
            out[i, k] = e
            out[k, i] = e


@njit(cache=True, nogil=True)
def _centre(out, v, shift):
    """out <- P_v out P_v + shift I, P_v = I - v v^T / (v^T v), from the row means of out, in
    one fixed order. With v = 1 every product by v is exact: the plain double centring, bit
    for bit."""
    n = out.shape[1]
    S = 0.0
    for i in range(n):
        S += v[i] * v[i]
    rowmean = np.empty(n)
    for i in range(n):
        s = 0.0
        for k in range(n):
            s += out[i, k] * v[k]
        rowmean[i] = s / S
    mu = 0.0
    for i in range(n):
        mu += rowmean[i] * v[i]
    mu /= S
    for i in range(n):
        ri = rowmean[i]
        vi = v[i]
        for k in range(n):
            out[i, k] += mu * vi * v[k] - ri * v[k] - vi * rowmean[k]
        out[i, i] += shift


def _centred_distance_kernel(PT, shift, v, out):
    """out <- P_v V (-D/2) V P_v + shift I with D_{ii'} = (1/m) sum_j |p_ji - p_ji'| (PT is
    m x n), V = diag(v), P_v = I - v v^T / (v^T v); v = 1 gives Pi (-D/2) Pi + shift I.

    The triangle's rows are shared among threads (rwtool.threads.run_row_shares); each element
    is summed by one row's loop in a fixed order, so the bits do not depend on the share
    count. The O(n^2) centring (about a millisecond at n = 1000) then runs on the calling
    thread: another phase of threads would wait longer for a core on a loaded machine than it
    saves.
    """
    m, n = PT.shape
    # an element of the triangle's sweeps costs about a 40th of run_row_shares's unit of
    # work (0.19 ns per pair and particle, measured at n = 300 and 1000, m = 50)
    run_row_shares(lambda a, b: _distance_rows(PT, v, out, a, b), n, max(1, n * m // 80))
    _centre(out, v, shift)


def centred_kernel(PT: np.ndarray, shift: float = 0.0, out: np.ndarray | None = None,
                   v: np.ndarray | None = None):
    """K~ + shift I, K~ = Pi K Pi for projections ``PT = W^T X^T`` (m x n, C-contiguous);
    with ``v`` (the square roots of the row weights) K~_w = P_v V K V P_v."""
    n = PT.shape[1]
    if out is None:
        out = np.empty((n, n))
    _centred_distance_kernel(PT, float(shift), np.ones(n) if v is None else v, out)
    return out


def weight_sum(n: int, v: np.ndarray | None) -> float:
    """S = sum w = v^T v, the n of Lemma 7 with weights (n itself without)."""
    return n if v is None else float(v @ v)


def weighted_targets(Yc: np.ndarray, v: np.ndarray | None) -> np.ndarray:
    """Y~_w = P_v V Yc, the right side of the weighted ridge step (Yc itself without weights:
    it is centred already)."""
    return Yc if v is None else weighted_centring(Yc * v[:, None], v)


def ridge_step(PT: np.ndarray, Yc: np.ndarray, lam: float, buf: np.ndarray | None = None,
               timings: dict | None = None, v: np.ndarray | None = None):
    """Lemma 7: alpha = (K~ + n lam I)^{-1} Y~ and G(W) = (lam/2) mean_k Y~_k^T alpha_k.

    ``Yc`` is the centred target matrix (n x q). Several columns (one-vs-rest classes,
    multi-output regression) share the particles; G is the mean of the per-column values so that
    ``lam`` keeps the balance of the single-output problem. With ``v`` (the square roots of the
    row weights; Yc centred with the weights) the weighted form of the module docstring:
    beta = (K~_w + S lam I)^{-1} Y~_w, alpha = V beta. Returns ``(alpha, G)``.
    """
    S = weight_sum(PT.shape[1], v)
    Yt = weighted_targets(Yc, v)
    t0 = time.perf_counter()
    Kt = centred_kernel(PT, S * lam, buf, v)
    t1 = time.perf_counter()
    # numpy's Cholesky releases the GIL (scipy's cho_factor holds it), so a GUI thread stays
    # responsive while a worker fits.
    try:
        beta = cholesky_solve(Kt, Yt)
    except LinAlgError:
        beta = _jittered_solve(PT, Yt, lam, v)
    if timings is not None:
        timings["kernel"] = timings.get("kernel", 0.0) + t1 - t0
        timings["solve"] = timings.get("solve", 0.0) + time.perf_counter() - t1
    G = 0.5 * lam * float(np.sum(Yt * beta)) / Yc.shape[1]
    return (beta if v is None else beta * v[:, None]), G


def solver_coefficients(alpha: np.ndarray, v: np.ndarray | None) -> np.ndarray:
    """beta = V^-1 alpha, the unknowns of the weighted system (0 on rows of weight 0, whose
    alpha is 0); alpha itself without weights."""
    if v is None:
        return alpha
    return np.divide(alpha, v[:, None], out=np.zeros_like(alpha), where=v[:, None] > 0)


def _jittered_solve(PT, Yc, lam, v=None):
    """Fallback when K~ + n lam I is not numerically SPD (lam tiny against the kernel scale)."""
    n = PT.shape[1]
    Kt = centred_kernel(PT, weight_sum(n, v) * lam, None, v)
    scale = max(float(np.mean(np.abs(np.diag(Kt)))), np.finfo(float).tiny)
    for power in range(-12, -3):
        jitter = scale * 10.0 ** power
        M = Kt.copy()
        M[np.diag_indices(n)] += jitter
        try:
            alpha = cholesky_solve(M, Yc)
        except LinAlgError:
            continue
        warnings.warn(f"K~ + n*reg*I was not numerically positive definite; added jitter "
                      f"{jitter:.2e} to solve it. Raise reg", NumericalWarning, stacklevel=4)
        return alpha
    raise NumericalError("K~ + n*reg*I is singular even with jitter", solver="bkernn",
                         fix="raise reg, or standardise inputs with huge values")


# ----------------------------------------------------------------------------- gradient (Lemma 8)

@njit(cache=True, nogil=True)
def _signed_sums(PT, order_all, Z, RT, r0, r1):
    """RT[j, i] = sum_k Z[i, k] r_{jk}(i),  r_{jk}(i) = sum_{i'} Z[i', k] sign(p_ji - p_ji'),
    for particles r0 <= j < r1.

    Sorting the projections of particle j gives r by prefix sums: the sum of z below p_i minus
    the sum above it; tied projections contribute sign(0) = 0 to each other (their sum is
    taken in ``order_all``'s order: a stable one, :func:`sort_projections`). O(n log n + n q)
    per particle instead of the O(n^2) double sum.
    """
    n = PT.shape[1]
    q = Z.shape[1]
    for j in range(r0, r1):
        p = PT[j]
        order = order_all[j]
        total = np.zeros(q)
        for i in range(n):
            for k in range(q):
                total[k] += Z[i, k]
        below = np.zeros(q)
        gsum = np.zeros(q)
        for i in range(n):
            RT[j, i] = 0.0
        start = 0
        while start < n:
            stop = start + 1
            v = p[order[start]]
            while stop < n and p[order[stop]] == v:
                stop += 1
            for k in range(q):
                gsum[k] = 0.0
            for t in range(start, stop):
                for k in range(q):
                    gsum[k] += Z[order[t], k]
            for t in range(start, stop):
                i = order[t]
                acc = 0.0
                for k in range(q):
                    acc += Z[i, k] * (below[k] - (total[k] - below[k] - gsum[k]))
                RT[j, i] = acc
            for k in range(q):
                below[k] += gsum[k]
            start = stop


def particle_gradient(X: np.ndarray, PT: np.ndarray, alpha: np.ndarray, lam: float,
                      order: np.ndarray | None = None, tick=None) -> np.ndarray:
    """dG/dW (d x m), Lemma 8, averaged over the q target columns:

        dG/dw_j = (lam/(2m)) X^T (z .* r_j),   z = alpha,

    (the pairwise form (lam/(4m)) sum_{i,i'} z_i z_i' sign(w_j^T (x_i - x_i')) (x_i - x_i')).
    ``order`` (m x n) sorts each particle's projections stably when the caller already has it
    (:func:`rwtool.solvers._bkernn_cg.sort_projections`);
    ``tick(0)`` is called between slices of particles (progress).
    Cost O(m (n log n + n d)) (spec section 2.2).
    """
    m, n = PT.shape
    if order is None:
        order = np.empty((m, n), dtype=np.int64)
        sort_projections(PT, order, np.empty((m, n)), 0, m)
    RT = np.empty((m, n))
    # On u = n lam alpha (the residual, O(|Y|)): z_i r_i itself is O(|Y|^2 / (n lam)^2), which
    # overflows when the inputs are on a 1e-200 scale (lam ~ |x| / n).
    scale = n * lam
    Z = np.ascontiguousarray(alpha * scale)
    width = n * (1 + alpha.shape[1])
    for a, b in particle_slices(m, width, tick=tick):
        run_row_shares(lambda r0, r1: _signed_sums(PT, order, Z, RT, a + r0, a + r1),
                       b - a, width)
    return (RT @ X).T * (1.0 / (2.0 * m * alpha.shape[1] * n * scale))


# ----------------------------------------------------------------------------- penalties (2.5)

def penalty_value(W: np.ndarray, penalty: str, s: float = 1.0) -> float:
    """Omega_weights(W) for the five penalties of Section 2.5 (spec 1.6)."""
    m = W.shape[1]
    if penalty == "basic":
        return float(np.linalg.norm(W, axis=0).sum()) / (2.0 * m)
    if penalty in ("variable", "concave_variable"):
        v = np.linalg.norm(W, axis=1)
    else:
        v = np.linalg.svd(W, compute_uv=False)
    if penalty in ("variable", "feature"):
        return float(v.sum()) / (2.0 * math.sqrt(m))
    return float(np.sum(np.log1p((s / math.sqrt(m)) * v))) / (2.0 * s)


def concave_shrink(r: np.ndarray, tau: float, s: float, m: int) -> np.ndarray:
    """argmin_{t >= 0} (t - r)^2/2 + (tau/(2s)) log(1 + (s/sqrt m) t), element-wise (Lemma 9, 4-5).

    Stationary points solve b t^2 + (1 - b r) t + (kappa - r) = 0 with b = s/sqrt(m) and
    kappa = tau/(2 sqrt m). The minimiser is 0 or a real root in (0, r]; roots come from the
    cancellation-free formula, so s -> 0 tends to the convex soft threshold t = r - kappa, and
    r = 0 gives 0 (the authors' code divides by r there and returns NaN).
    """
    r = np.asarray(r, dtype=np.float64)
    b = s / math.sqrt(m)
    kappa = tau / (2.0 * math.sqrt(m))
    B = 1.0 - b * r
    C = kappa - r
    disc = B * B - 4.0 * b * C
    real = disc >= 0.0
    sq = np.sqrt(np.where(real, disc, 0.0))
    qd = -0.5 * (B + np.where(B >= 0.0, sq, -sq))
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = qd / b
        t2 = np.where(qd != 0.0, C / qd, np.nan)

    def h(t):
        return 0.5 * (t - r) ** 2 + (tau / (2.0 * s)) * np.log1p(b * t)

    best_t = np.zeros_like(r)
    best_h = h(best_t)
    for t in (t1, t2):
        ok = real & np.isfinite(t) & (t > 0.0) & (t <= r)
        t = np.where(ok, t, 0.0)
        ht = h(t)
        better = ok & (ht < best_h)
        best_t = np.where(better, t, best_t)
        best_h = np.where(better, ht, best_h)
    return best_t


def _scale_by_norm(v, new_v):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(v > 0.0, new_v / np.where(v > 0.0, v, 1.0), 0.0)


def prox(W: np.ndarray, tau: float, penalty: str, s: float = 1.0) -> np.ndarray:
    """prox_{tau Omega}(W) = argmin_U ||W - U||_F^2 / 2 + tau Omega(U), tau = lam * gamma (Lemma 9).

    basic: columns shrunk by tau/(2m); variable: rows by tau/(2 sqrt m); feature: singular values
    by tau/(2 sqrt m) (the paper's scale; the authors' code uses 2m, spec 8.3); concave variants
    apply :func:`concave_shrink` to the row norms / singular values.
    """
    m = W.shape[1]
    if tau == 0.0:
        return W.copy()
    if penalty == "basic":
        v = np.linalg.norm(W, axis=0)
        return W * _scale_by_norm(v, np.maximum(v - tau / (2.0 * m), 0.0))[None, :]
    if penalty in ("variable", "concave_variable"):
        v = np.linalg.norm(W, axis=1)
        if penalty == "variable":
            new_v = np.maximum(v - tau / (2.0 * math.sqrt(m)), 0.0)
        else:
            new_v = concave_shrink(v, tau, s, m)
        return W * _scale_by_norm(v, new_v)[:, None]
    U, S, Vt = np.linalg.svd(W, full_matrices=False)
    if penalty == "feature":
        new_S = np.maximum(S - tau / (2.0 * math.sqrt(m)), 0.0)
    else:
        new_S = concave_shrink(S, tau, s, m)
    return (U * new_S[None, :]) @ Vt


# ----------------------------------------------------------------------------- prediction (1.7)

@njit(cache=True, nogil=True)
def _table(p, order, alpha, knots, A, B):
    """One particle's table: knots <- p in ``order``, A[t] and B[t] <- the sums of alpha_i and
    alpha_i p_i over the first t of them, added in that order."""
    q = alpha.shape[1]
    for k in range(q):
        A[0, k] = 0.0
        B[0, k] = 0.0
    for t in range(p.shape[0]):
        i = order[t]
        pi = p[i]
        knots[t] = pi
        for k in range(q):
            A[t + 1, k] = A[t, k] + alpha[i, k]
            B[t + 1, k] = B[t, k] + alpha[i, k] * pi


def ridge_tables(PT: np.ndarray, alpha: np.ndarray):
    """Sorted knots and prefix sums of alpha and alpha * p per particle (for O(log n)
    prediction), the particles shared among threads (rwtool.threads.run_row_shares).

    The sort is stable (numpy's, which releases the GIL): tied projections keep their row
    order, so the prefix sums add the same terms in the same order on every machine and the
    tables are the same bits from the same projections (a pickled model rebuilds them). An
    unstable sort may order ties by its SIMD path, which numpy picks by the CPU."""
    PT = np.ascontiguousarray(PT)
    alpha = np.ascontiguousarray(alpha)
    m, n = PT.shape
    q = alpha.shape[1]
    knots = np.empty((m, n))
    A = np.empty((m, n + 1, q))
    B = np.empty((m, n + 1, q))

    def particles(a, b):
        for j in range(a, b):
            _table(PT[j], np.argsort(PT[j], kind="stable"), alpha, knots[j], A[j], B[j])

    run_row_shares(particles, m, int(n * (math.log2(n + 1) + q)))
    return knots, A, B


#: element operations per slice of rows when a prediction reports progress: about 0.15 s of
#: one core at m = 50
PREDICT_WORK = 1 << 22


@njit(cache=True, nogil=True)
def _decision_rows(T, knots, A, B, out, a, b):
    """ridge_decision's sums for rows a <= i < b of T."""
    m = T.shape[1]
    n = knots.shape[1]
    q = A.shape[2]
    scale = -0.5 / m
    for i in range(a, b):
        for k in range(q):
            out[i, k] = 0.0
        for j in range(m):
            t = T[i, j]
            c = np.searchsorted(knots[j], t)
            for k in range(q):
                # sum_i alpha_i |t - p_i| = t (A_lt - A_ge) - (B_lt - B_ge)
                out[i, k] += scale * (t * (2.0 * A[j, c, k] - A[j, n, k])
                                      - (2.0 * B[j, c, k] - B[j, n, k]))


def ridge_decision(T: np.ndarray, knots, A, B, tick=None) -> np.ndarray:
    """-(1/(2m)) sum_j sum_i alpha_i |t_j - p_ij| for projections T (n_test x m), per column.

    This is f(x) - c' in spec 1.7: a sum of m piecewise-linear ridge functions with knots at the
    projected training points, constant outside their range because sum_i alpha_i = 0.
    ``tick(rows_done)`` is called between slices of rows of about :data:`PREDICT_WORK` work
    each (progress and cancellation); a slice's rows are shared among threads
    (rwtool.threads.run_row_shares), and every row's value is the same in any slice or share.
    """
    T = np.ascontiguousarray(T)
    out = np.empty((T.shape[0], A.shape[2]))
    per_row = T.shape[1] * (math.log2(knots.shape[1] + 1) + A.shape[2])
    step = max(1, T.shape[0] if tick is None else int(PREDICT_WORK // max(per_row, 1.0)))
    for a in range(0, T.shape[0], step):
        b = min(T.shape[0], a + step)
        run_row_shares(lambda r0, r1: _decision_rows(T, knots, A, B, out, a + r0, a + r1),
                       b - a, int(per_row))
        if tick is not None:
            tick(b)
    return out


# ----------------------------------------------------------------------------- Algorithm 1

#: n from which kernel_solver="auto" takes the conjugate-gradient path (measured in
#: docs/bench/bkernn.md, d = 20, m = 50, one thread, 6 iterations: dense 0.28 s against CG
#: 0.55 s at n = 500, 1.25 s against 0.83 s at 1000, 8.7 s against 1.4 s at 2000)
CG_MIN_N = 800

#: relative residual ||r|| / ||Y~|| at which CG stops. G is read from the CG iterate by the
#: variational form, whose error is (lam/2) e^T (K~ + n lam I) e <= ||r||^2 / (2 n), far below
#: the Beck test's margins (docs/BKERNN.md)
CG_TOL = 1e-5


class _Iterate:
    """One evaluated point of Algorithm 1: particles, projections, dual coefficients, G, and the
    sorted projections (CG path) that the gradient reuses."""

    __slots__ = ("W", "PT", "alpha", "G", "order", "slack")

    def __init__(self, W, PT, alpha, G, order=None, slack=0.0):
        self.W, self.PT, self.alpha, self.G, self.order = W, PT, alpha, G, order
        self.slack = slack


def _add_time(timings, key, t0):
    if timings is not None:
        timings[key] = timings.get(key, 0.0) + time.perf_counter() - t0


class _DenseSolver:
    """The ridge step by one n x n kernel and Cholesky per trial (O(n^2) memory)."""

    kind = "dense"

    def __init__(self, n, timings, v=None):
        self.buf = np.empty((n, n))
        self.timings = timings
        self.v = v                            # square roots of the row weights (or None)
        self.cg_iterations = 0
        self.skipped = 0                      # trials rejected without a solve (_evaluate)
        self.gave_up = 0

    def __call__(self, PT, Yc, lam, warm, tick, give_up_above=None):
        alpha, G = ridge_step(PT, Yc, lam, self.buf, self.timings, self.v)
        return alpha, G, None, 0.0


class _CGSolver:
    """The ridge step by preconditioned conjugate gradients on sorted-projection products
    (O(n m) memory), warm-started from the last accepted alpha.

    The block preconditioner is rebuilt for every solved trial: keeping one across trials
    (rebuilt when a solve needs 1.5 times the iterations of its first) was measured to need
    1.6-2x the CG iterations at n = 2000 and 8000 for the same total time.
    """

    kind = "cg"

    def __init__(self, n, timings, tol=CG_TOL, max_iter=2000, blocks="auto", v=None):
        self.timings = timings
        self.v = v                            # square roots of the row weights (or None)
        self.tol, self.max_iter = float(tol), int(max_iter)
        self.blocks = block_count(n) if blocks == "auto" else int(blocks)
        self.cg_iterations = 0
        self.skipped = 0                      # trials rejected without a solve (_evaluate)
        self.gave_up = 0                      # trials whose solve stopped at the certificate

    def __call__(self, PT, Yc, lam, warm, tick, give_up_above=None):
        t0 = time.perf_counter()
        sp = SortedProjections(PT, tick)
        _add_time(self.timings, "sort", t0)
        v = self.v
        S = weight_sum(PT.shape[1], v)
        shift = S * lam
        q = Yc.shape[1]
        Yt = weighted_targets(Yc, v)
        # a line-search trial only needs G to within the Beck test: once a CG iterate's lower
        # bound of G passes the test's threshold, the trial is rejected for certain (the exact
        # solve would reject it too) and its solve stops there
        limit = None if give_up_above is None else give_up_above * q / lam
        precond = None
        if self.blocks > 0:
            t0 = time.perf_counter()
            precond = BlockPreconditioner(sp, shift, self.blocks, tick, v=v)
            _add_time(self.timings, "preconditioner", t0)
        t0 = time.perf_counter()
        beta, R, its = cg_ridge(sp, Yt, shift, None if warm is None else
                                solver_coefficients(warm, v), self.tol, self.max_iter, precond,
                                tick, give_up_above=limit, v=v)
        _add_time(self.timings, "solve", t0)
        self.cg_iterations += its
        # G = -lam min_a phi(a), phi(a) = a^T M a / 2 - Y~^T a; at the CG iterate a, with
        # r = Y~ - M a, -lam phi(a) = (lam/2)(Y~^T a + a^T r): an error quadratic in a - alpha
        value = lower_value(Yt, beta, R)
        if limit is not None and value > limit:
            self.gave_up += 1
        G = lam * value / q
        # ... and G lies in [G, G + slack], slack = ||R||^2 / (2 S q) (the bound of the
        # docstring with lambda_min(K~ + S lam I) >= S lam; S = n without weights)
        slack = float(np.sum(R * R)) / (2.0 * S * R.shape[1])
        alpha = beta if v is None else beta * v[:, None]
        return alpha, G, sp.order, slack


def _evaluate(W, XT, Yc, lam, solver, it, warm=None, tick=None, give_up_above=None):
    t0 = time.perf_counter()
    PT = W.T @ XT
    _add_time(solver.timings, "projections", t0)
    if not np.all(np.isfinite(PT)):
        raise NumericalError("the projections X W overflowed", solver="bkernn", iteration=it,
                             fix="standardise the inputs (standardize=True) or rescale X")
    if give_up_above is not None and give_up_above < 0.0:
        # G = (lam/2) mean_k Y~_k^T (K~ + n lam I)^{-1} Y~_k >= 0: a trial whose Beck threshold
        # is negative is rejected without a solve, on either path (long first steps: the
        # linear term of the threshold dominates)
        solver.skipped += 1
        return _Iterate(W, PT, warm, 0.0)
    alpha, G, order, slack = solver(PT, Yc, lam, warm, tick, give_up_above)
    if not (math.isfinite(G) and np.all(np.isfinite(alpha))):
        raise NumericalError("the kernel ridge step gave non-finite coefficients",
                             solver="bkernn", iteration=it,
                             fix="standardise the inputs and targets, or raise reg")
    return _Iterate(W, PT, alpha, G, order, slack)


def choose_kernel_solver(kernel_solver: str, n: int) -> str:
    """"dense" or "cg" for ``kernel_solver`` in {"auto", "dense", "cg"} at n rows."""
    if kernel_solver == "auto":
        return "cg" if n >= CG_MIN_N else "dense"
    return kernel_solver


@on_one_blas_thread
def fit_particles(X, Yc, W0, lam, penalty, s=1.0, step_size=500.0, max_iter=20,
                  backtracking=True, max_backtrack=8, beta_up=1.5, beta_down=0.5,
                  callback=None, timings=None, gradient=None, kernel_solver="auto",
                  cg_tol=CG_TOL, cg_max_iter=2000, precond_blocks="auto", sample_weight=None):
    """Algorithm 1 of seed 001 (square loss), from particles ``W0`` (d x m).

    ``sample_weight`` (n weights >= 0, or None; ``Yc`` then centred with them) fits the
    weighted objective of the module docstring on both kernel solvers; everything below holds
    with n read as S = sum w.

    Each iteration: gradient of G at the current W (Lemma 8); gamma <- beta_up gamma; trial
    W+ = prox_{lam gamma Omega}(W - gamma dG/dW), accepted when Beck's condition

        G(W+) <= G(W) + <dG/dW, W+ - W> + ||W+ - W||^2 / (2 gamma)

    holds (equivalent to the paper's form with the gradient mapping G_gamma), else gamma <-
    beta_down gamma. Every trial's (alpha, G) is the closed form at W+, so the accepted trial
    already carries the coefficients of the new particles (no stale alpha, spec 8.3). If
    ``max_backtrack`` halvings all fail, the step is rejected (W kept): with an exact prox the
    objective G + lam Omega then never increases. Without backtracking the step is constant and
    always taken.

    ``kernel_solver``: "dense" (n x n kernel and Cholesky per trial), "cg" (conjugate gradients
    on O(m n) sorted-projection products, :mod:`rwtool.solvers._bkernn_cg`, to relative residual
    ``cg_tol``, warm-started, preconditioned by ``precond_blocks`` blocks per particle: "auto"
    for :func:`rwtool.solvers._bkernn_cg.block_count`, 0 for none) or "auto" (cg from
    :data:`CG_MIN_N` rows).

    ``gradient(X, PT, alpha, lam) -> (d, m)`` replaces :func:`particle_gradient` (the benchmark
    swaps in the direct double sum); ``timings`` (a dict) accumulates seconds per part.

    A trial needs G only as far as the test: since G >= 0, a trial whose threshold (the right
    side above) is negative is rejected without a solve (``skipped_trials``), and on the CG path
    a solve stops once its iterate's lower bound of G exceeds the threshold
    (``certified_trials``, :func:`rwtool.solvers._bkernn_cg.cg_ridge`). Both give the decision the
    exact solve would; accepted trials are always solved to ``cg_tol``.

    Returns a dict: W, PT, alpha, G, n_iter, step_size, history (per-iteration arrays, entry 0 is
    the initial point), kernel_solver, cg_iterations, skipped_trials, certified_trials. A
    cancelling ``callback`` (polled between slices of every long numba call too) raises
    FitCancelled with ``partial`` set to the same dict for the last completed iterate.

    The whole fit runs on one BLAS thread (rwtool.threads): the gradient's product X^T (its
    inner dimension n), the Cholesky factors and the norms of the CG path round differently on
    two OpenBLAS threads, and the line search's accept/reject decisions turned those last bits
    into different particles. Its heavy parts are numba kernels whose sums do not depend on
    their thread count.
    """
    progress = make_progress(callback)
    n = X.shape[0]
    v = None if sample_weight is None else np.sqrt(np.asarray(sample_weight, dtype=np.float64))
    S = weight_sum(n, v)
    XT = np.ascontiguousarray(X.T)
    kind = choose_kernel_solver(kernel_solver, n)
    solver = (_DenseSolver(n, timings, v) if kind == "dense" else
              _CGSolver(n, timings, cg_tol, cg_max_iter, precond_blocks, v))
    gamma = float(step_size)
    q = Yc.shape[1]
    hist = {k: [] for k in ("objective", "G", "penalty", "train_loss", "step_size",
                            "n_backtracks", "accepted")}
    state = {"cur": None, "it": 0}

    def record(nb, accepted):
        cur = state["cur"]
        pen = lam * penalty_value(cur.W, penalty, s)
        # Residual Y - f = -n lam alpha at the closed-form (alpha, c) (Lemma 7); with weights
        # V (Y - f) = -S lam beta, so (1/2) sum w r^2 / S = (1/2) ||S lam beta||^2 / S
        loss = 0.5 * float(np.sum((S * lam * solver_coefficients(cur.alpha, v)) ** 2)) / (S * q)
        for key, val in (("objective", cur.G + pen), ("G", cur.G), ("penalty", pen),
                         ("train_loss", loss), ("step_size", gamma), ("n_backtracks", nb),
                         ("accepted", accepted)):
            hist[key].append(val)

    def result(it):
        h = {k: np.asarray(v, dtype=bool if k == "accepted" else
                           (np.int64 if k == "n_backtracks" else np.float64))
             for k, v in hist.items()}
        cur = state["cur"]
        return {"W": cur.W, "PT": cur.PT, "alpha": cur.alpha, "G": cur.G, "n_iter": it,
                "step_size": gamma, "history": h, "kernel_solver": solver.kind,
                "cg_iterations": solver.cg_iterations, "skipped_trials": solver.skipped,
                "certified_trials": solver.gave_up}

    def report(method, *args, it):
        if state["cur"] is None:          # nothing completed yet: no partial model to keep
            method(*args)
            return
        try:
            method(*args, objective=hist["objective"][-1], train_loss=hist["train_loss"][-1],
                   step_size=gamma)
        except FitCancelled as exc:
            exc.partial_model = True
            exc.partial = result(it)
            raise

    def tick(_):
        # between CG iterations, sort slices, preconditioner stages and after each gradient;
        # rate-limited by Progress, so a cancel stops a long solve within one CG iteration
        report(progress.update, state["it"], it=state["it"])

    # The start event comes before the first (possibly long) kernel solve, so a cancel or a
    # progress bar has something to act on at once.
    progress.start("iterations", max_iter)
    # no other name holds an iterate: the first one's arrays (2 m n) go once it is replaced
    state["cur"] = _evaluate(np.array(W0, dtype=np.float64, order="C"), XT, Yc, lam, solver, 0,
                             tick=tick)
    record(0, True)
    report(progress.update, 0, True, it=0)
    for it in range(1, max_iter + 1):
        cur = state["cur"]
        t0 = time.perf_counter()
        if gradient is None:
            grad = particle_gradient(X, cur.PT, cur.alpha, lam, cur.order, tick)
        else:
            grad = gradient(X, cur.PT, cur.alpha, lam)
        _add_time(timings, "gradient", t0)
        tick(0)
        if not np.all(np.isfinite(grad)):
            raise NumericalError("the particle gradient is not finite", solver="bkernn",
                                 iteration=it, fix="standardise the inputs (standardize=True)")
        if backtracking:
            gamma *= beta_up
        accepted, nb = False, 0
        while True:
            t0 = time.perf_counter()
            Wn = prox(cur.W - gamma * grad, lam * gamma, penalty, s)
            _add_time(timings, "prox", t0)
            step = Wn - cur.W
            # CG path: G(W) is known to within its slack, so the test takes the upper end for
            # the current point; otherwise, near a stationary point, decreases smaller than the
            # slack would be rejected at every step size and gamma would shrink to 0
            bound = (cur.G + cur.slack + float(np.sum(grad * step))
                     + float(np.sum(step * step)) / (2 * gamma))
            trial = _evaluate(Wn, XT, Yc, lam, solver, it, warm=cur.alpha, tick=tick,
                              give_up_above=bound if backtracking else None)
            tick(0)                 # a run of skipped trials costs a projection X W each
            if not backtracking:
                accepted = True
                break
            if trial.G <= bound:
                accepted = True
                break
            # rejected: its projections and sort order (2 m n) go before the next trial's
            # are built, so at most two iterates are alive (the memory estimate counts two)
            trial = None
            if nb == max_backtrack or gamma * beta_down == 0.0:
                break
            gamma *= beta_down
            nb += 1
        if accepted:
            state["cur"] = trial
        state["it"] = it
        record(nb, accepted)
        report(progress.update, it, it=it)
    report(progress.end, it=max_iter)
    return result(max_iter)


# ----------------------------------------------------------------------------- eq. (16)

def feature_learning_score(P: np.ndarray, P_hat: np.ndarray) -> float:
    """Feature-learning score of eq. (16): 1 - ||pi_P - pi_Phat||_F^2 / (2k) (or 2d - 2k if k > d/2).

    ``P`` and ``P_hat`` are d x k bases (any full-rank bases; pi_A = A (A^T A)^{-1} A^T).
    """
    P = np.asarray(P, dtype=float)
    P_hat = np.asarray(P_hat, dtype=float)
    d, k = P.shape
    if k == d:
        return 1.0

    def proj(A):
        Q, _ = np.linalg.qr(A)
        return Q @ Q.T

    err = float(np.sum((proj(P) - proj(P_hat)) ** 2))
    return 1.0 - err / (2 * k if k <= d / 2 else 2 * d - 2 * k)
