"""BKerNN's kernel ridge step without n x n matrices: sorted prefix-sum products and CG.

For fixed particles the ridge step of seed 001 (Lemma 7) solves (K~ + n lam I) alpha = Y~ with
K~ = Pi (-D/2) Pi, D_{ii'} = (1/m) sum_j |p_ji - p_ji'| and p_j = X w_j (spec 2.1, 6.1). One
particle's part of a product D u is, with the projections sorted once (O(n log n)),

    sum_{i'} |p_i - p_i'| u_i' = p_i (2 S_<(i) - S) - (2 T_<(i) - T),

S_< and T_< the prefix sums of u and u p below p_i in sorted order, S and T the totals (T is
the same for every row, and the centring Pi removes it): one pass per particle, so K~ u costs
O(m n) after the sort (O(n) per particle) and no n x n matrix is ever formed. The system is
then solved by conjugate gradients, warm-started from the previous iterate's alpha (scaled to
its best multiple) and preconditioned by a coarse version of the same kernel: K~ is exactly a
weighted sum of centred step functions of the sorted projections, and keeping one step per
block of B equal-count blocks per particle gives a rank m (B - 1) matrix inverted by Woodbury
(:class:`BlockPreconditioner`).

With row weights w (v = sqrt(w), S = sum w) the system is (K~_w + S lam I) beta = Y~_w with
K~_w = P_v V (-D/2) V P_v, V = diag(v), P_v = I - v v^T / S the projection that replaces the
centring Pi (Pi itself when w = 1): every product and the preconditioner take ``v``.

Used by :mod:`rwtool.solvers._bkernn` above a measured size; this module must not validate user
input, hold estimator state or build n x n arrays.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from numba import njit
from scipy.linalg import cho_solve

from ..exceptions import NumericalWarning
from ..threads import run_row_shares

__all__ = ["SortedProjections", "kernel_product", "cg_ridge", "lower_value", "BlockPreconditioner",
           "weighted_centring", "sort_projections", "folded"]

#: particles are split into this many interleaved groups, each with its own accumulator; the
#: groups are shared among threads (rwtool.threads.run_row_shares) and summed in a fixed order,
#: so a product does not depend on the thread count
N_GROUPS = 4


#: rows per bucket of :func:`_distribution_sort` on average: 0.034 / 0.145 s for 50 particles of
#: 32,000 / 128,000 rows at 2, 0.031 / 0.135 at 1 (twice the bucket bounds) and 0.040 / 0.164
#: at 4 (one core, Gaussian projections)
ROWS_PER_BUCKET = 2

#: buckets of at most this many rows are sorted by insertion; larger ones (ties, outliers,
#: heavy tails put many rows in one bucket) by numba's merge sort, stable too
INSERTION_MAX = 64


@njit(cache=True, nogil=True)
def _distribution_sort(PT, order, values, r0, r1):
    """order[j] <- the stable ascending order of PT[j] (ties in increasing row index: numpy's
    ``argsort(kind="stable")``) and values[j] <- PT[j] in that order, for r0 <= j < r1.

    A distribution sort, O(n) for spread-out values: row i goes to bucket
    floor((p_i - min) n_b / (max - min)), a non-decreasing function of p_i in floating point
    (every step rounds monotonically), so the buckets come in the order of their values and
    equal values share one; the rows enter their bucket in increasing index and each bucket is
    sorted stably. 2.3-2.7x faster than numpy's argsort at 32,000-128,000 rows, and growing
    like n where the comparison sort grew 5-5.7x per 4x rows. Rows whose range overflows
    (max - min = inf) or underflows (n_b / (max - min) = inf) are merge-sorted whole. The
    projections are finite (the fit checks them first). No rows: the empty order."""
    n = PT.shape[1]
    if n == 0:
        return          # the range below starts from p[0]: out of bounds, unchecked in numba
    nb = max(1, n // ROWS_PER_BUCKET)
    bounds = np.empty(nb + 1, dtype=np.int64)
    fill = np.empty(nb, dtype=np.int64)
    for j in range(r0, r1):
        p, o, v = PT[j], order[j], values[j]
        lo = p[0]
        hi = p[0]
        for i in range(n):
            lo = min(lo, p[i])
            hi = max(hi, p[i])
        width = hi - lo
        scale = nb / width if width > 0.0 else 0.0
        if not (width < math.inf and 0.0 < scale < math.inf):
            # all equal (the identity order), a range beyond float64 or too narrow to divide
            idx = np.argsort(p, kind="mergesort")
            for t in range(n):
                o[t] = idx[t]
                v[t] = p[idx[t]]
            continue
        bounds[:] = 0
        for i in range(n):
            bounds[min(nb - 1, int((p[i] - lo) * scale)) + 1] += 1
        for b in range(nb):
            bounds[b + 1] += bounds[b]
            fill[b] = bounds[b]
        for i in range(n):
            b = min(nb - 1, int((p[i] - lo) * scale))
            t = fill[b]
            o[t] = i
            v[t] = p[i]
            fill[b] = t + 1
        for b in range(nb):
            s, e = bounds[b], bounds[b + 1]
            if e - s <= INSERTION_MAX:
                for t in range(s + 1, e):
                    x = v[t]
                    k = o[t]
                    u = t
                    while u > s and v[u - 1] > x:       # strict: ties keep their order
                        v[u] = v[u - 1]
                        o[u] = o[u - 1]
                        u -= 1
                    v[u] = x
                    o[u] = k
            else:
                idx = np.argsort(v[s:e], kind="mergesort")
                ob = o[s:e].copy()
                vb = v[s:e].copy()
                for t in range(e - s):
                    o[s + t] = ob[idx[t]]
                    v[s + t] = vb[idx[t]]


def sort_projections(PT: np.ndarray, order: np.ndarray, values: np.ndarray, a: int,
                     b: int) -> None:
    """order[j] <- the stable sorting order of PT[j] (ascending projections, tied ones in
    increasing row index: the one order a machine cannot change) and values[j] <- PT[j] in
    that order, for a <= j < b.

    The sums over the sorted rows (the gradient's and the product's prefix sums, the
    preconditioner's blocks at ties) take the rows in this order, so the order of ties moves
    their last bits and, through the line search's decisions, the particles. The sort is
    :func:`_distribution_sort` (numpy's unstable argsort orders ties by its SIMD path, which
    it picks by the CPU; its stable one costs 1.7x as much, and both grow faster than n past
    the caches: docs/bench/bkernn.md). The particles are shared among threads."""
    n = PT.shape[1]
    # about 15-20 ns a row at 128,000 rows, two of run_row_shares's units (measured)
    run_row_shares(lambda r0, r1: _distribution_sort(PT, order, values, a + r0, a + r1),
                   b - a, 2 * n)


@njit(cache=True, nogil=True)
def folded(t, a, b):
    """The t-th of a..b - 1 taken from both ends in turn (a, b - 1, a + 1, b - 2, ...): a
    contiguous share of t then holds as many cheap as costly items of a triangular loop (item
    j's work falling with j), so the threads of run_row_shares finish together."""
    return a + t // 2 if t % 2 == 0 else b - 1 - t // 2


class SortedProjections:
    """The projections of one set of particles, sorted per particle (O(m n log n), O(m n) memory).

    ``order[j]`` sorts particle j's projections stably (:func:`sort_projections`; ties would
    contribute nothing to each other in exact arithmetic, but their order moves the last bits);
    ``values[j]`` holds them in that order, shifted by their mean.
    """

    __slots__ = ("order", "values")

    def __init__(self, PT: np.ndarray, tick=None):
        m, n = PT.shape
        self.order = np.empty((m, n), dtype=np.int64)
        self.values = np.empty((m, n))
        # in slices of particles with a progress tick between them (a sort of 50 x 100k rows
        # takes a second on a loaded machine); a row costs about two product elements
        for a, b in particle_slices(m, 2 * n, tick=tick):
            sort_projections(PT, self.order, self.values, a, b)
            # |p_i - p_i'| is shift invariant: centring keeps the prefix-sum form free of
            # cancellation when the projections sit far from 0
            self.values[a:b] -= PT[a:b].mean(axis=1, keepdims=True)

    @property
    def shape(self):
        return self.values.shape


@njit(cache=True, nogil=True)
def _distance_products(order, qs, UA, S, j0, j1, g0, g1):
    """UA[g, :, q:] += sum over the particles j = j0 + g, j0 + g + G, ... below j1 of
    sum_i' |q_ji - q_ji'| U[i', :] - T_j, for the groups g0 <= g < g1 (j0 a multiple of G),
    with U = UA[g, :, :q], S its column sums and T_j = sum_i' q_ji' U[i', :].

    T_j is the same for every row, so the centring that follows the product removes it (the
    caller's); leaving it out makes the product one pass over the sorted rows instead of a
    pass for the totals and one for the prefix sums. Row i's U and result share a row of UA:
    the pass's random reads and writes land in the same cache line (the product is bound by
    the latency of those accesses: 1.9x faster than two passes over separate arrays at
    128,000 rows)."""
    G = UA.shape[0]
    n = qs.shape[1]
    q = S.shape[0]
    Sb = np.empty(q)
    Tb = np.empty(q)
    for g in range(g0, g1):
        ua = UA[g]
        for j in range(j0 + g, j1, G):
            o = order[j]
            v = qs[j]
            Sb[:] = 0.0
            Tb[:] = 0.0
            for t in range(n):
                i = o[t]
                vt = v[t]
                for k in range(q):
                    u = ua[i, k]
                    ua[i, q + k] += vt * (2.0 * Sb[k] - S[k]) - 2.0 * Tb[k]
                    Sb[k] += u
                    Tb[k] += u * vt


#: element operations (particles x rows x columns) of one uninterrupted numba call between two
#: progress ticks: about 0.05 s on one core, so a cancel is seen well within a second even when
#: the process gets a fraction of a core
TICK_WORK = 1 << 20

#: one element of the kernel product (particle x row x column) in TICK_WORK's unit: 4-7 ns on
#: one core at 32,000-128,000 rows, so a slice of 4 TICK_WORK elements takes 0.02-0.03 s.
#: Smaller slices cost more than their ticks: each slice starts every group's accumulator
#: (n x q) anew, and one beyond the caches is filled at random by the next particle (at
#: 128,000 rows the two-pass product took 0.083 s in slices of 8 particles, 0.057 s in
#: slices of 32)
PRODUCT_WORK = 0.25


def particle_slices(m: int, work_per_particle: float, multiple: int = 1, tick=None):
    """Consecutive particle ranges (a, b) of at most :data:`TICK_WORK` work each (at least one
    particle, a multiple of ``multiple`` when there are more), with ``tick(0)`` after the body
    of each when ``tick`` is given."""
    step = int(TICK_WORK // max(work_per_particle, 1.0))
    step = max(multiple, step - step % multiple) if step >= multiple else max(1, step)
    for a in range(0, m, step):
        yield a, min(m, a + step)
        if tick is not None:
            tick(0)


def weighted_centring(U: np.ndarray, v: np.ndarray | None) -> np.ndarray:
    """P_v U = U - v (v^T U) / (v^T v), the centring of weighted rows (v = sqrt of the
    weights); the plain centring U - mean(U) when ``v`` is None."""
    if v is None:
        return U - U.mean(axis=0)
    return U - np.outer(v, (v @ U) / (v @ v))


def kernel_product(sp: SortedProjections, U: np.ndarray, shift: float = 0.0,
                   acc: np.ndarray | None = None, tick=None, v=None) -> np.ndarray:
    """(K~ + shift I) U for K~ = Pi (-D/2) Pi, U of shape (n, q): O(m n q), no n x n matrix.
    With ``v`` (the square roots of the row weights): K~_w = P_v V (-D/2) V P_v.

    Runs in slices of particles with ``tick(0)`` after each (progress and cancellation); the
    slices and the accumulator groups are fixed by the shapes and the groups are summed in
    order, so the result does not depend on the thread count.
    """
    m, n = sp.shape
    U = np.ascontiguousarray(U, dtype=np.float64)
    q = U.shape[1]
    G = min(N_GROUPS, m)
    if acc is None or acc.shape != (G, n, 2 * q):
        acc = np.empty((G, n, 2 * q))
    Uc = weighted_centring(U, v)
    if v is not None:
        Uc *= v[:, None]
    # each group's rows hold [its copy of Uc, its sums] (_distance_products)
    acc[:, :, :q] = Uc
    acc[:, :, q:] = 0.0
    S = Uc.sum(axis=0)
    for a, b in particle_slices(m, n * q * PRODUCT_WORK, G, tick):
        run_row_shares(lambda g0, g1: _distance_products(sp.order, sp.values, acc, S, a, b,
                                                         g0, g1),
                       G, -(-(b - a) // G) * n * q)
    R = acc[0, :, q:].copy()
    for g in range(1, acc.shape[0]):
        R += acc[g, :, q:]
    R *= -0.5 / m
    if v is None:
        R -= R.mean(axis=0)
    else:
        R = weighted_centring(R * v[:, None], v)
    if shift:
        R += shift * U
    return R


@njit(cache=True, nogil=True)
def _bin_index(order, starts, beta, r0, r1):
    """beta[j, i] = the block of particle j holding row i (blocks start at ranks starts[j]),
    for particles r0 <= j < r1."""
    n = order.shape[1]
    B = starts.shape[1]
    for j in range(r0, r1):
        b = 0
        for t in range(n):
            while b + 1 < B and starts[j, b + 1] <= t:
                b += 1
            beta[j, order[j, t]] = b


@njit(cache=True, nogil=True)
def _step_gram(beta, above, total, w, scale, tail, j0, j1, r0, r1, C):
    """Rows j of the step features' Gram matrix, and their mirror, for the r0-th to (r1-1)-th
    of the particles j0 <= j < j1 taken from both ends (:func:`folded`; row j pairs particle j
    with the m - j particles from j on):

    C[(j, b), (j', b')] = scale_jb scale_j'b' (N_jj'bb' - S tail_jb tail_j'b'),
    N_jj'bb' = sum of w_i over {i : beta_j(i) > b, beta_j'(i) > b'} (j' >= j), from the
    pairwise block sums of the row weights (O(n) per pair of particles); ``above[j, b]`` is
    the weight of the rows in blocks >= b of particle j, S = ``total``. ``w`` is float64, ones
    without weights (the sums are then counts, exact; int64 counts were 5% faster here, 5 ms
    a build at 128,000 rows, and compiled the kernel a second time for 0.7 s).
    """
    m, n = beta.shape
    B = above.shape[1]
    K = B - 1
    for r in range(r0, r1):
        j = folded(r, j0, j1)
        h = np.empty((B, B))
        bj = beta[j]
        for b in range(K):
            for bb in range(K):
                # one particle: both steps hold on the rows of the later one
                cnt = above[j, max(b, bb) + 1]
                C[j * K + b, j * K + bb] = (scale[j, b] * scale[j, bb]
                                            * (cnt - total * tail[j, b] * tail[j, bb]))
        for jj in range(j + 1, m):
            h[:, :] = 0
            bjj = beta[jj]
            for i in range(n):
                h[bj[i], bjj[i]] += w[i]
            for c in range(B - 2, -1, -1):          # suffix sums over both block indices
                for cc in range(B):
                    h[c, cc] += h[c + 1, cc]
            for c in range(B):
                for cc in range(B - 2, -1, -1):
                    h[c, cc] += h[c, cc + 1]
            for b in range(K):
                for bb in range(K):
                    v = scale[j, b] * scale[jj, bb] * (h[b + 1, bb + 1]
                                                       - total * tail[j, b] * tail[jj, bb])
                    C[j * K + b, jj * K + bb] = v
                    C[jj * K + bb, j * K + b] = v


@njit(cache=True, nogil=True)
def _bin_sums(beta, V, out, r0, r1):
    """out[j, c, :] = sum of V over the rows in block c of particle j, for r0 <= j < r1."""
    n = beta.shape[1]
    q = V.shape[1]
    for j in range(r0, r1):
        o = out[j]
        o[:, :] = 0.0
        bj = beta[j]
        for i in range(n):
            for k in range(q):
                o[bj[i], k] += V[i, k]


@njit(cache=True, nogil=True)
def _bin_gather(beta, A, out):
    """out[i, :] = sum_j A[j, beta_j(i), :] (one pass per particle, fixed order)."""
    m, n = beta.shape
    q = A.shape[2]
    out[:, :] = 0.0
    for j in range(m):
        bj = beta[j]
        a = A[j]
        for i in range(n):
            for k in range(q):
                out[i, k] += a[bj[i], k]


def block_count(n: int) -> int:
    """Blocks per particle for the preconditioner at n rows: about sqrt(n) / 7 within [8, 32].

    With energy-balanced blocks the dropped within-block part scales like n / B^2. Measured in
    3-iteration default fits at d = 20, m = 50 (CPU seconds per iteration, one thread, medians
    of 2-3 interleaved runs): n = 8000: B = 8 / 11 / 13 / 16 / 24 / 32 give 0.21 / 0.154 /
    0.151 / 0.167 / 0.25 / 0.32; n = 32000: B = 16 / 22 / 26 / 32 give 0.67 / 0.65 / 0.68 /
    0.76; n = 128000: B = 8 / 16 / 24 / 32 give 5.4 / 3.7 / 3.6 / 3.2, and after the one-pass
    product and the bucket sort B = 24 / 32 / 40 / 48 give 1.77-1.80 / 1.73-1.81 / 1.83-1.85 /
    1.94-2.12. More blocks cost more than they save at 128000 rows: the (m B)^3 factorisation
    grows faster than the iterations fall (and runs without a progress tick).
    """
    return int(min(32, max(8, round(math.sqrt(n) / 7))))


@njit(cache=True, nogil=True)
def _energy_starts(values, starts, r0, r1):
    """starts[j, b] = the first rank t with sum_{s < t} sqrt(gap_s) >= (b / B) * total, per
    particle r0 <= j < r1 (0 for a particle whose projections are all equal: the caller spreads
    those)."""
    n = values.shape[1]
    B = starts.shape[1]
    for j in range(r0, r1):
        v = values[j]
        total = 0.0
        for t in range(n - 1):
            total += math.sqrt(v[t + 1] - v[t])
        starts[j, :] = 0
        if not total > 0.0:
            continue
        b = 1
        mu = 0.0
        for t in range(n):
            while b < B and mu >= b * total / B:
                starts[j, b] = t
                b += 1
            if t + 1 < n:
                mu += math.sqrt(v[t + 1] - v[t])
        while b < B:
            starts[j, b] = n
            b += 1


def block_starts(values: np.ndarray, B: int, spacing: str = "energy") -> np.ndarray:
    """First rank of each of B blocks per particle (m x B, strictly increasing, starting at 0).

    "count": equal-count blocks. "energy": equal sums of sqrt(gap) over the sorted projections
    ``values`` (m x n). A block of c rows spanning a width h drops a part of the kernel of size
    about c h / m; with density rho, c ~ n rho h, so c h is the same in every block when h is
    proportional to 1 / sqrt(rho), i.e. when the blocks hold equal sums of sqrt(gap)
    (sqrt(rho) dx ~ sqrt(gap / n) per gap). Equal-count blocks put most of the dropped part in
    the two tail blocks, whose width grows with n. A particle with all projections equal gets
    equal-count blocks. O(m n).
    """
    m, n = values.shape
    base = np.arange(B)
    even = -((-base * n) // B)
    if spacing == "count":
        return np.tile(even, (m, 1))
    starts = np.empty((m, B), dtype=np.int64)
    run_row_shares(lambda a, b: _energy_starts(values, starts, a, b), m, n)
    flat = starts[:, -1] == 0
    starts[flat] = even
    # at least one row per block (ties make equal boundaries)
    starts = np.maximum.accumulate(starts - base, axis=1) + base
    return np.minimum(starts, n - B + base)


class BlockPreconditioner:
    """(F F^T + s I)^{-1} for a coarse version F F^T of K~ with B blocks per particle.

    The centred distance kernel is exactly a sum of step features: with p sorted and g_t the gap
    between the t-th and (t+1)-th projection, K~ = (1/m) sum_j sum_t g_jt (Pi 1{rank_j > t})
    (Pi 1{rank_j > t})^T. Keeping one step per boundary of B blocks (weight: the gaps between
    the neighbouring block middles) leaves m (B - 1) features F whose Gram matrix comes from
    pairwise block counts (O(m^2 n)); what is dropped lives inside blocks. The blocks balance
    count x width (:func:`block_starts`, ``spacing="energy"``; "count" for equal counts), which
    keeps the dropped part small in the sparse tails too. Woodbury applies P^{-1} in
    O(m n q + (m B)^2 q); building it costs O(m^2 n + (m B)^3), in slices with a ``tick(0)``
    between them, and uses no random numbers.

    With row weights (``v``, their square roots) the features are V P_v-centred steps: the
    same blocks, the step means and the Gram matrix weighted, P^{-1} for K~_w + s I.
    """

    def __init__(self, sp: SortedProjections, shift: float, blocks: int = 16, tick=None,
                 spacing: str = "energy", v=None):
        m, n = sp.shape
        B = int(max(2, min(blocks, n)))
        self.B, self.shift, self.n, self.v = B, float(shift), n, v
        v = sp.values
        starts = block_starts(v, B, spacing)                 # (m, B) first rank of each block
        if tick is not None:
            tick(0)
        # the smallest integer type for the block indices: the Gram kernel reads two rows of
        # them per pair of particles (uint8 builds 30% faster than int16 at 128000 rows)
        kind = np.uint8 if B <= 256 else (np.int16 if B <= 32768 else np.int32)
        self.beta = np.empty((m, n), dtype=kind)
        run_row_shares(lambda a, b: _bin_index(sp.order, starts, self.beta, a, b), m, n)
        ends = np.concatenate([starts[:, 1:], np.full((m, 1), n)], axis=1)
        mids = np.minimum((starts + ends) // 2, n - 1)
        G = np.maximum(np.take_along_axis(v, mids[:, 1:], axis=1)
                       - np.take_along_axis(v, mids[:, :-1], axis=1), 0.0)   # (m, B - 1)
        self.scale = np.sqrt(G / m)                          # feature weights sqrt(G_jb / m)
        if self.v is None:
            w, total, above = np.ones(n), float(n), (n - starts).astype(float)
        else:
            w = self.v * self.v
            total = float(w.sum())
            per_block = np.empty((m, B, 1))
            self._block_sums(w[:, None], per_block)
            # contiguous, as without weights: a reversed view compiled the Gram kernel again
            above = np.ascontiguousarray(per_block[:, ::-1, 0].cumsum(axis=1)[:, ::-1])
        self.tail = above[:, 1:] / total                     # (weighted) mean of 1{block >= b}
        if tick is not None:
            tick(0)
        M = m * (B - 1)
        C = np.empty((M, M))
        # a count increment costs about a sixteenth of a product element (measured)
        for j0, j1 in particle_slices(m, (m - 1) * n / 16, tick=tick):
            run_row_shares(lambda a, b: _step_gram(self.beta, above, total, w, self.scale,
                                                   self.tail, j0, j1, a, b, C),
                           j1 - j0, (m - (j0 + j1) // 2) * n // 16)
        C[np.diag_indices(M)] += self.shift
        L = np.linalg.cholesky(C)
        del C
        # in Fortran order once: LAPACK's potrs would otherwise copy the (m B)^2 factor on
        # every apply (each CG iteration), a third matrix of that size at the memory peak
        self.L = np.asfortranarray(L)

    def _block_sums(self, V, out):
        """out[j, c, :] = sum of V over the rows in block c of particle j."""
        m, n = self.beta.shape
        run_row_shares(lambda a, b: _bin_sums(self.beta, V, out, a, b), m, n * V.shape[1])

    def _Ft(self, V):
        m = self.beta.shape[0]
        if self.v is not None:
            V = V * self.v[:, None]
        S = np.empty((m, self.B, V.shape[1]))
        self._block_sums(np.ascontiguousarray(V), S)
        # sum over blocks >= b, b = 1..B-1; V is centred, so the step means drop out
        up = S[:, ::-1].cumsum(axis=1)[:, ::-1][:, 1:]
        return (up * self.scale[:, :, None]).reshape(-1, V.shape[1])

    def _F(self, Z):
        m, q = self.beta.shape[0], Z.shape[1]
        a = Z.reshape(m, self.B - 1, q) * self.scale[:, :, None]
        A = np.zeros((m, self.B, q))
        A[:, 1:] = a.cumsum(axis=1)
        out = np.empty((self.n, q))
        _bin_gather(self.beta, A, out)
        out -= np.einsum("jbk,jb->k", a, self.tail)
        return out if self.v is None else out * self.v[:, None]

    def apply(self, R: np.ndarray) -> np.ndarray:
        W = cho_solve((self.L, True), self._Ft(R), check_finite=False)
        return (R - self._F(W)) / self.shift


def _unit_columns(A: np.ndarray) -> np.ndarray:
    """A with each column scaled by a power of two to a largest entry in [0.5, 1), in place:
    the warm start's line is the same, its centring is not done in subnormals and its
    x0^T M x0 neither overflows (columns of 1e160 were dropped for 0) nor underflows (those of
    1e-160), and c x0 keeps its bits (power-of-two scalings are exact). A column holding a
    NaN or an infinity becomes 0: start from 0 (the start gave a NaN solution and no
    warning)."""
    with np.errstate(invalid="ignore"):
        top = np.max(np.abs(A), axis=0, initial=0.0)
    bad = ~np.isfinite(top)
    A[:, bad] = 0.0
    _, e = np.frexp(np.where(bad | (top == 0.0), 1.0, top))
    # two steps: 2^-e alone underflows for columns of subnormals (e down to -1073)
    h = e // 2
    A *= np.ldexp(1.0, -h)
    A *= np.ldexp(1.0, h - e)
    return A


def cg_ridge(sp: SortedProjections, Yc: np.ndarray, shift: float, x0: np.ndarray | None = None,
             tol: float = 1e-8, max_iter: int = 2000, precond: BlockPreconditioner | None = None,
             tick=None, give_up_above: float | None = None, v=None):
    """Solve (K~ + shift I) A = Yc column by column with (preconditioned) conjugate gradients
    (K~_w with the square roots ``v`` of the row weights; Yc then in the range of P_v).

    Stops each column when ||r_k|| <= tol ||Yc_k||; ``x0`` is the warm start (CG starts from
    c x0, c per column the minimum of phi on x0's line, whatever x0's scale; from 0 for a
    column that is 0 once centred or holds a NaN or an infinity), ``tick(it)`` is called after
    every iteration (progress and cancellation).
    Returns ``(A, R, n_iter)`` with R the true residual Yc - (K~ + shift I) A of the returned A.
    A warning is issued (and the last iterate returned) if ``max_iter`` iterations do not reach
    the tolerance.

    ``give_up_above``: stop early once :func:`lower_value` (A, R) exceeds it. CG decreases
    phi(a) = a^T M a / 2 - Yc^T a over growing Krylov spaces, so -phi(A) = (Yc^T A + A^T R) / 2
    only grows and the solution's value, Yc^T M^{-1} Yc / 2, is larger still: the caller learns
    for certain that the exact value exceeds the threshold (a line-search trial it will reject)
    without converging. The check uses the true residual before stopping.
    """
    n, q = Yc.shape
    acc = np.empty((min(N_GROUPS, sp.shape[0]), n, 2 * q))
    if x0 is None:
        A = np.zeros((n, q))
        R = np.array(Yc, dtype=np.float64)
    else:
        A = weighted_centring(_unit_columns(np.array(x0, dtype=np.float64)), v)
        MA = kernel_product(sp, A, shift, acc, tick, v)
        # the warm start scaled by c = Yc^T x0 / x0^T M x0 per column, the minimum of phi on
        # the line through x0: never further from the solution in M's norm than x0 or 0. The
        # previous particles' coefficients alone were further than 0 at 128,000 rows
        # (relative residual 2-77 against 0.08-22 at 8000: M's change between two particles
        # grows with n, docs/bench/bkernn.md). M is positive definite for shift > 0, so
        # x0^T M x0 > 0 unless the column is 0 (then c = 0)
        xMx = np.einsum("ij,ij->j", A, MA)
        c = np.where(xMx > 0, np.einsum("ij,ij->j", Yc, A) / np.where(xMx > 0, xMx, 1.0), 0.0)
        c = np.where(np.isfinite(c), c, 0.0)
        A *= c
        R = Yc - MA * c
        if tick is not None:
            tick(0)
    goal = tol * np.linalg.norm(Yc, axis=0)
    it = 0

    def certain():
        return give_up_above is not None and lower_value(Yc, A, R) > give_up_above

    while True:
        active = np.linalg.norm(R, axis=0) > goal
        if not active.any() or certain() or it >= max_iter:
            break
        gave_up = False
        # (re)start from the current residual
        Z = precond.apply(R) if precond is not None else R.copy()
        Pd = Z.copy()
        rz = np.einsum("ij,ij->j", R, Z)
        while it < max_iter:
            it += 1
            AP = kernel_product(sp, Pd, shift, acc, tick, v)
            pAp = np.einsum("ij,ij->j", Pd, AP)
            step = np.where(active, rz / np.where(pAp > 0, pAp, 1.0), 0.0)
            A += step * Pd
            R -= step * AP
            rnorm = np.linalg.norm(R, axis=0)
            active &= rnorm > goal
            if tick is not None:
                tick(it)
            if not active.any():
                break
            if certain():
                gave_up = True
                break
            Z = precond.apply(R) if precond is not None else R
            rz_new = np.einsum("ij,ij->j", R, Z)
            beta = np.where(active, rz_new / np.where(rz > 0, rz, 1.0), 0.0)
            Pd = Z + beta * Pd
            rz = rz_new
        # the recursive residual drifts from the true one over many iterations: recompute it
        # (and go on if giving up is not confirmed by the true one)
        R = Yc - kernel_product(sp, A, shift, acc, tick, v)
        if tick is not None:
            tick(it)
        if not gave_up or certain():
            break
    if it >= max_iter and np.any(np.linalg.norm(R, axis=0) > 10 * goal) and not certain():
        warnings.warn(f"conjugate gradients did not reach the tolerance {tol:g} in "
                      f"{max_iter} iterations (relative residual "
                      f"{float(np.max(np.linalg.norm(R, axis=0) / np.linalg.norm(Yc, axis=0))):.1e}); "
                      f"raise reg or use kernel_solver='dense' on this size",
                      NumericalWarning, stacklevel=3)
    return A, R, it


def lower_value(Yc: np.ndarray, A: np.ndarray, R: np.ndarray) -> float:
    """-phi(A) = (Yc^T A + A^T R) / 2 summed over columns, R = Yc - M A: a lower bound of
    Yc^T M^{-1} Yc / 2 (its error is e^T M e / 2, e = M^{-1} Yc - A) that CG increases."""
    return 0.5 * float(np.sum(Yc * A) + np.sum(A * R))
