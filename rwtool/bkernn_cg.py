"""BKerNN's kernel ridge step without n x n matrices: sorted prefix-sum products and CG.

For fixed particles the ridge step of seed 001 (Lemma 7) solves (K~ + n lam I) alpha = Y~ with
K~ = Pi (-D/2) Pi, D_{ii'} = (1/m) sum_j |p_ji - p_ji'| and p_j = X w_j (spec 2.1, 6.1). One
particle's part of a product D u is, with the projections sorted once (O(n log n)),

    sum_{i'} |p_i - p_i'| u_i' = p_i (2 S_<(i) - S) - (2 T_<(i) - T),

S_< and T_< the prefix sums of u and u p below p_i in sorted order, S and T the totals: O(n) per
particle, so K~ u costs O(m n) after the sort and no n x n matrix is ever formed. The system is
then solved by conjugate gradients, warm-started from the previous iterate's alpha, optionally
preconditioned by a randomized Nystroem approximation of K~ (Frangella, Tropp & Udell 2023) built
from the same block products.

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

from .solvers.ridge import NumericalWarning

__all__ = ["SortedProjections", "kernel_product", "cg_ridge", "NystroemPreconditioner"]

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

    def __init__(self, PT: np.ndarray):
        # numpy's unstable argsort: 3x faster here than numba's stable one on 128k rows
        self.order = np.argsort(PT, axis=1)
        self.values = np.take_along_axis(PT, self.order, axis=1)
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


class NystroemPreconditioner:
    """P^{-1} for K~ + mu I from a rank-r randomized Nystroem approximation K~ ~ V diag(L) V^T.

    P = V (L + mu) V^T / (L_r + mu) + (I - V V^T), so P^{-1} v = (L_r + mu) V (L + mu)^{-1}
    V^T v + v - V V^T v (Frangella, Tropp & Udell 2023, eq. 5.3); its construction costs one
    block product K~ Omega (O(m n r)) and a thin QR/SVD (O(n r^2)), its application O(n r q).
    """

    def __init__(self, sp: SortedProjections, rank: int, mu: float, rng: np.random.Generator):
        n = sp.shape[1]
        r = int(min(rank, n - 1))
        Omega = rng.standard_normal((n, r))
        Omega -= Omega.mean(axis=0)     # K~ acts on the centred subspace (1^T alpha = 0)
        Omega, _ = np.linalg.qr(Omega)
        Y = kernel_product(sp, Omega)
        nu = math.sqrt(n) * np.finfo(float).eps * float(np.linalg.norm(Y, 2))
        Y += nu * Omega
        C = np.linalg.cholesky(Omega.T @ Y)
        B = np.linalg.solve(C, Y.T).T            # Y C^{-T}
        # the thin SVD of B from the r x r eigenproblem of B^T B: one n r^2 product instead of
        # an n x r SVD; the eigenvalues below eps * max are dropped as the rank they do not carry
        ev, E = np.linalg.eigh(B.T @ B)
        keep = ev > np.finfo(float).eps * max(float(ev[-1]), np.finfo(float).tiny) * r
        ev, E = ev[keep][::-1], E[:, keep][:, ::-1]
        self.V = B @ (E / np.sqrt(ev))
        self.L = np.maximum(ev - nu, 0.0)
        self.mu = float(mu)
        self.rank = r

    def apply(self, R: np.ndarray) -> np.ndarray:
        VtR = self.V.T @ R
        w = (self.L[-1] + self.mu) / (self.L + self.mu)
        return R + self.V @ ((w - 1.0)[:, None] * VtR)


def cg_ridge(sp: SortedProjections, Yc: np.ndarray, shift: float, x0: np.ndarray | None = None,
             tol: float = 1e-8, max_iter: int = 2000, precond: NystroemPreconditioner | None = None,
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
        if it == max_iter and np.any(np.linalg.norm(R, axis=0) > 10 * goal):
            warnings.warn(f"conjugate gradients did not reach the tolerance {tol:g} in "
                          f"{max_iter} iterations (relative residual "
                          f"{float(np.max(np.linalg.norm(R, axis=0) / np.linalg.norm(Yc, axis=0))):.1e}); "
                          f"raise reg or use kernel_solver='dense' on this size",
                          NumericalWarning, stacklevel=3)
    return A, R, it
