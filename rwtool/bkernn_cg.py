"""BKerNN's kernel ridge step without n x n matrices: sorted prefix-sum products and CG.

For fixed particles the ridge step of seed 001 (Lemma 7) solves (K~ + n lam I) alpha = Y~ with
K~ = Pi (-D/2) Pi, D_{ii'} = (1/m) sum_j |p_ji - p_ji'| and p_j = X w_j (spec 2.1, 6.1). One
particle's part of a product D u is, with the projections sorted once (O(n log n)),

    sum_{i'} |p_i - p_i'| u_i' = p_i (2 S_<(i) - S) - (2 T_<(i) - T),

S_< and T_< the prefix sums of u and u p below p_i in sorted order, S and T the totals: O(n) per
particle, so K~ u costs O(m n) after the sort and no n x n matrix is ever formed. The system is
then solved by conjugate gradients, warm-started from the previous iterate's alpha and
preconditioned by a coarse version of the same kernel: K~ is exactly a weighted sum of centred
step functions of the sorted projections, and keeping one step per block of B equal-count blocks
per particle gives a rank m (B - 1) matrix inverted by Woodbury (:class:`BlockPreconditioner`).

Used by :mod:`rwtool.bkernn_core` above a measured size; this module must not validate user input,
hold estimator state or build n x n arrays.
"""

from __future__ import annotations

import math
import warnings
from contextlib import contextmanager

import numba
import numpy as np
from numba import njit, prange
from scipy.linalg import cho_solve

from .solvers.ridge import NumericalWarning

__all__ = ["SortedProjections", "kernel_product", "cg_ridge", "BlockPreconditioner"]

#: element operations below which the parallel kernels run on the calling thread only: waking a
#: thread team costs more than the work, and on a loaded machine the spinning team also slows the
#: BLAS calls that follow (measured here: about 50x slower on a 150-point fit)
PARALLEL_MIN_WORK = 4_000_000


@contextmanager
def _threads_for(work: float):
    if work >= PARALLEL_MIN_WORK:
        yield
        return
    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(previous)


#: particles are split into this many interleaved groups, each with its own accumulator; the
#: groups run in parallel and are summed in a fixed order, so a product does not depend on the
#: thread count
N_GROUPS = 4


class SortedProjections:
    """The projections of one set of particles, sorted per particle (O(m n log n), O(m n) memory).

    ``order[j]`` sorts particle j's projections (ties in any order: they contribute nothing to
    each other); ``values[j]`` holds them in that order, shifted by their mean.
    """

    __slots__ = ("order", "values")

    def __init__(self, PT: np.ndarray, tick=None):
        m, n = PT.shape
        self.order = np.empty((m, n), dtype=np.int64)
        self.values = np.empty((m, n))
        # in slices of particles with a progress tick between them (a sort of 50 x 100k rows
        # takes seconds on a loaded machine); numpy's unstable argsort is 3x faster here than
        # numba's stable one
        step = max(1, (1 << 19) // max(n, 1))
        for a in range(0, m, step):
            b = min(m, a + step)
            self.order[a:b] = np.argsort(PT[a:b], axis=1)
            self.values[a:b] = np.take_along_axis(PT[a:b], self.order[a:b], axis=1)
            if tick is not None:
                tick(0)
        # |p_i - p_i'| is shift invariant: centring keeps the prefix-sum form free of
        # cancellation when the projections sit far from 0
        self.values -= PT.mean(axis=1, keepdims=True)

    @property
    def shape(self):
        return self.values.shape


@njit(cache=True, parallel=True, nogil=True)
def _distance_products(order, qs, U, acc):
    """acc[g] <- sum over the particles j = g, g + G, ... of sum_i' |q_ji - q_ji'| U[i', :]."""
    G = acc.shape[0]
    m, n = qs.shape
    q = U.shape[1]
    for g in prange(G):
        out = acc[g]
        out[:, :] = 0.0
        S = np.empty(q)
        T = np.empty(q)
        Sb = np.empty(q)
        Tb = np.empty(q)
        us = np.empty((n, q))
        for j in range(g, m, G):
            o = order[j]
            v = qs[j]
            S[:] = 0.0
            T[:] = 0.0
            # one random gather into sorted order; the second pass reads it sequentially and
            # only the scatter of the result stays random (the product is memory-latency bound)
            for t in range(n):
                i = o[t]
                vt = v[t]
                for k in range(q):
                    u = U[i, k]
                    us[t, k] = u
                    S[k] += u
                    T[k] += u * vt
            Sb[:] = 0.0
            Tb[:] = 0.0
            for t in range(n):
                i = o[t]
                vt = v[t]
                for k in range(q):
                    u = us[t, k]
                    out[i, k] += vt * (2.0 * Sb[k] - S[k]) - (2.0 * Tb[k] - T[k])
                    Sb[k] += u
                    Tb[k] += u * vt


def kernel_product(sp: SortedProjections, U: np.ndarray, shift: float = 0.0,
                   acc: np.ndarray | None = None) -> np.ndarray:
    """(K~ + shift I) U for K~ = Pi (-D/2) Pi, U of shape (n, q): O(m n q), no n x n matrix."""
    m, n = sp.shape
    U = np.ascontiguousarray(U, dtype=np.float64)
    q = U.shape[1]
    if acc is None or acc.shape != (min(N_GROUPS, m), n, q):
        acc = np.empty((min(N_GROUPS, m), n, q))
    with _threads_for(m * n * q):
        _distance_products(sp.order, sp.values, U - U.mean(axis=0), acc)
    R = acc[0].copy()
    for g in range(1, acc.shape[0]):
        R += acc[g]
    R *= -0.5 / m
    R -= R.mean(axis=0)
    if shift:
        R += shift * U
    return R


@njit(cache=True, parallel=True, nogil=True)
def _bin_index(order, B, beta):
    m, n = order.shape
    for j in prange(m):
        for t in range(n):
            beta[j, order[j, t]] = (t * B) // n


@njit(cache=True, parallel=True, nogil=True)
def _pair_counts(beta, B, H, j0, j1):
    """H[j, j', b, b'] = #{i : beta_j(i) = b, beta_j'(i) = b'} for j0 <= j < j1, j < j'."""
    m, n = beta.shape
    for j in prange(j0, j1):
        for jj in range(j + 1, m):
            h = H[j, jj]
            h[:, :] = 0
            bj, bjj = beta[j], beta[jj]
            for i in range(n):
                h[bj[i], bjj[i]] += 1


@njit(cache=True, parallel=True, nogil=True)
def _bin_sums(beta, B, V, out):
    """out[j, b, :] = sum of V over the rows in block b of particle j."""
    m, n = beta.shape
    q = V.shape[1]
    for j in prange(m):
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
    """Blocks per particle for the preconditioner at n rows: about sqrt(n) / 5.6 within [8, 48].

    The dropped within-block part scales like 1/B^2 of the spectrum's top, which grows with n;
    measured at d = 20, m = 50 (random particles, 1e-5): 32 blocks give 4 / 6 / 8 / 15 CG
    iterations at 2k / 8k / 32k / 128k rows, and at 128k with larger particles 30 iterations
    against 19 with 64 blocks, whose (m B)^3 factorisation then costs as much as the saved
    iterations; below a few thousand rows many blocks cost more than they save.
    """
    return int(min(48, max(8, round(math.sqrt(n) / 5.6))))


class BlockPreconditioner:
    """(F F^T + s I)^{-1} for a coarse version F F^T of K~ with B blocks per particle.

    The centred distance kernel is exactly a sum of step features: with p sorted and g_t the gap
    between the t-th and (t+1)-th projection, K~ = (1/m) sum_j sum_t g_jt (Pi 1{rank_j > t})
    (Pi 1{rank_j > t})^T. Keeping one step per boundary of B equal-count blocks (weight: the
    gaps between the neighbouring block middles) leaves m (B - 1) features F whose Gram matrix
    comes from pairwise block counts (O(m^2 n)); what is dropped lives inside blocks, about
    1/B^2 of the top of the spectrum, so CG on the preconditioned system needs several times
    fewer iterations. Woodbury applies P^{-1} in O(m n q + (m B)^2 q); building it costs
    O(m^2 n + (m B)^3) and uses no random numbers.
    """

    def __init__(self, sp: SortedProjections, shift: float, blocks: int = 16, tick=None):
        m, n = sp.shape
        B = int(max(2, min(blocks, n)))
        self.B, self.shift, self.n = B, float(shift), n
        self.beta = np.empty((m, n), dtype=np.int16)
        with _threads_for(m * n):
            _bin_index(sp.order, B, self.beta)
        starts = -((-np.arange(B) * n) // B)                 # first rank of each block
        mids = np.minimum((starts + np.append(starts[1:], n)) // 2, n - 1)
        v = sp.values
        G = np.maximum(v[:, mids[1:]] - v[:, mids[:-1]], 0.0)   # (m, B - 1)
        self.scale = np.sqrt(G / m)                          # feature weights sqrt(G_jb / m)
        self.tail = (n - starts[1:]) / n                     # mean of the step 1{block >= b}
        # N[j, j', b, b'] = #{beta_j >= b, beta_j' >= b'} from pairwise block counts
        H = np.zeros((m, m, B, B), dtype=np.int64)
        if tick is not None:
            tick(0)
        step = max(2, (1 << 21) // max(n * m, 1))     # slices of particles between ticks
        with _threads_for(m * m * n / 2):
            for j0 in range(0, m, step):
                _pair_counts(self.beta, B, H, j0, min(m, j0 + step))
                if tick is not None:
                    tick(0)
        N = H[:, :, ::-1, ::-1].cumsum(axis=2).cumsum(axis=3)[:, :, ::-1, ::-1][:, :, 1:, 1:]
        N = N + np.transpose(N, (1, 0, 3, 2))
        idx = np.arange(B - 1)
        own = n - starts[1:][np.maximum.outer(idx, idx)]     # same particle: the later step
        for j in range(m):
            N[j, j] = own
        C = N - n * np.multiply.outer(self.tail, self.tail)[None, None]
        C *= self.scale[:, None, :, None] * self.scale[None, :, None, :]
        M = m * (B - 1)
        C = C.transpose(0, 2, 1, 3).reshape(M, M)
        C[np.diag_indices(M)] += self.shift
        if tick is not None:
            tick(0)
        self.L = np.linalg.cholesky(C)

    def _Ft(self, V):
        m = self.beta.shape[0]
        S = np.empty((m, self.B, V.shape[1]))
        with _threads_for(V.size * m):
            _bin_sums(self.beta, self.B, np.ascontiguousarray(V), S)
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
        return out - np.einsum("jbk,b->k", a, self.tail)

    def apply(self, R: np.ndarray) -> np.ndarray:
        W = cho_solve((self.L, True), self._Ft(R), check_finite=False)
        return (R - self._F(W)) / self.shift


def cg_ridge(sp: SortedProjections, Yc: np.ndarray, shift: float, x0: np.ndarray | None = None,
             tol: float = 1e-8, max_iter: int = 2000, precond: BlockPreconditioner | None = None,
             tick=None):
    """Solve (K~ + shift I) A = Yc column by column with (preconditioned) conjugate gradients.

    Stops each column when ||r_k|| <= tol ||Yc_k||; ``x0`` is the warm start, ``tick(it)`` is
    called after every iteration (progress and cancellation). Returns ``(A, R, n_iter)`` with R
    the true residual Yc - (K~ + shift I) A of the returned A. A warning is issued (and the last
    iterate returned) if ``max_iter`` iterations do not reach the tolerance.
    """
    n, q = Yc.shape
    acc = np.empty((min(N_GROUPS, sp.shape[0]), n, q))
    if x0 is None:
        A = np.zeros((n, q))
        R = np.array(Yc, dtype=np.float64)
    else:
        A = np.array(x0, dtype=np.float64)
        A -= A.mean(axis=0)
        R = Yc - kernel_product(sp, A, shift, acc)
        if tick is not None:
            tick(0)
    goal = tol * np.linalg.norm(Yc, axis=0)
    active = np.linalg.norm(R, axis=0) > goal
    it = 0
    if active.any():
        Z = precond.apply(R) if precond is not None else R.copy()
        Pd = Z.copy()
        rz = np.einsum("ij,ij->j", R, Z)
        while it < max_iter:
            it += 1
            AP = kernel_product(sp, Pd, shift, acc)
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
            Z = precond.apply(R) if precond is not None else R
            rz_new = np.einsum("ij,ij->j", R, Z)
            beta = np.where(active, rz_new / np.where(rz > 0, rz, 1.0), 0.0)
            Pd = Z + beta * Pd
            rz = rz_new
        # the recursive residual drifts from the true one over many iterations
        R = Yc - kernel_product(sp, A, shift, acc)
        if tick is not None:
            tick(it)
        if it == max_iter and np.any(np.linalg.norm(R, axis=0) > 10 * goal):
            warnings.warn(f"conjugate gradients did not reach the tolerance {tol:g} in "
                          f"{max_iter} iterations (relative residual "
                          f"{float(np.max(np.linalg.norm(R, axis=0) / np.linalg.norm(Yc, axis=0))):.1e}); "
                          f"raise reg or use kernel_solver='dense' on this size",
                          NumericalWarning, stacklevel=3)
    return A, R, it
