"""Regularised least squares on a random feature map, accumulated over row blocks.

Solves (003 eq. 80-82; spec section 4.1)

    (Phi^T Phi + m lam R + m eps I) a = Phi^T Y

with R = G (RKHS weightings) or R = I (random kitchen sinks), for several right-hand sides at
once (one-vs-rest classes, multi-output regression). Phi^T Phi and Phi^T Y are sums over rows:
each block of rows is mapped to features and added with a BLAS rank-k update (dsyrk adding
to the sum's lower triangle, solvers._rank_update), so the m x T feature matrix is never held
whole and the peak memory is O(T^2 + block * T). A map of ``dtype="float32"`` gives float32 blocks: each block's
products run in float32 (SSYRK, about twice DSYRK's rate) and are added to float64 sums, so the
rounding of one block never accumulates across blocks; the solve is float64. The system is solved by Cholesky; if it is not numerically
positive definite, jitter is added and a warning says how much. The heavy calls go through numpy,
which releases the GIL around BLAS/LAPACK (scipy's cho_factor and dsyrk wrappers hold it for
seconds at T = 2000, freezing a GUI thread while a worker fits).

This module knows feature maps only through ``_features_into`` and ``n_output_``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from numba import njit
from scipy.linalg import LinAlgError, cho_solve, eigh

from ..exceptions import NumericalError, NumericalWarning
from ..features._base import auto_block_size
from ..progress import make_progress
from ..threads import blas_threads_for, single_blas_thread
from ._numpy_blas import cholesky_lower
from ._rank_update import DIRECT, mirror_lower, rank_update

__all__ = ["auto_block_size", "normal_equations", "solve_normal_equations",
           "RegPath", "ridge_fit", "cholesky_solve"]


def normal_equations(feature_map, X: np.ndarray, Y: np.ndarray, block_size: int | None = None,
                     progress=None, out=None, weights: np.ndarray | None = None,
                     capture=None, bounds=None, joint: np.ndarray | None = None,
                     order: np.ndarray | None = None):
    """A = Phi^T W Phi (full symmetric) and B = Phi^T W Y, accumulated block by block
    (W = diag(weights), the identity when ``weights`` is None).

    Parameters
    ----------
    feature_map : fitted FeatureMap
    X : (m, n) array, already preprocessed
    Y : (m, k) array
    block_size : rows per block (None: ``auto_block_size``, 32 MB of features and at least
        2048 rows)
    progress : Progress or callback, optional; stage "normal equations", done = rows processed.
    out : (A, B) arrays to add the sums to (the running sums of a stream or of a fold,
        rwtool.solvers._sufficient); None starts from zero.
    weights : (m,) row weights >= 0, or None. Each block's rows are scaled by sqrt(w) (the
        targets by w), so Phi^T W Phi stays one symmetric rank-k update.
    capture : ``(rows, into)`` or None: the first ``into.shape[1]`` columns of the
        unweighted features of X's rows ``rows`` (increasing) are copied to ``into``'s rows
        in that order, one gather a block, as the blocks pass -- rows featurised once for the
        sums and for a second use (the validation sample of reg="auto",
        rwtool.solvers._sufficient).
    bounds : increasing row offsets ``0 = b_0 <= ... <= b_F = m``, or None: rows
        ``b_f .. b_{f+1}`` are added to ``out[f]``, a list of F ``(A, B)`` pairs (the per-fold
        sums of rows sorted by fold, rwtool.solvers._sufficient). The blocks run over all m
        rows as one sequence and a block that straddles a bound is split only for its
        products, so the features cost what one pass costs, whatever the number of groups.
    joint : (T, T) array, or None. When given, the groups' A are t x t (t <= T) and each
        block goes whole, split only at the groups' bounds, into ``joint``, one rank-k update
        of all T columns: ``joint`` receives the total A of all the rows, and each group's A
        gets the growth of ``joint``'s leading t x t block over its rows (minus the block's
        value before the group's first row, plus its value when the group's last row is in:
        no copy of it). The flops and the BLAS shapes are those of a one-group pass,
        where per-group products of the t columns beside products of the rest cost 8-24%
        more (smaller dsyrk and dgemm calls, measured at T = 1000-2000 with t = T / 2).
        (reg="auto" keeps its folds apart on the columns it searches with only:
        rwtool.solvers._sufficient.) Each group's A is then a difference of two sums of many
        groups' rows, so its rounding is that of ``joint`` (about 1e-16 of the total's
        entries), as is that of the total minus the group, which the search solves.
    order : (m,) positions, or None: the rows of X in this order (rows sorted by fold without
        a sorted copy of X: FeatureMap.blocks gathers each block's); Y, ``weights``,
        ``capture`` and ``bounds`` count the rows in that order.
    """
    progress = make_progress(progress)
    m = X.shape[0] if order is None else len(order)
    T = feature_map.n_output_
    if out is None:
        out = (np.zeros((T, T)), np.zeros((T, Y.shape[1])))
    groups = [out] if bounds is None else list(out)
    bounds = np.array([0, m] if bounds is None else bounds, dtype=np.int64)
    if len(bounds) != len(groups) + 1 or bounds[0] != 0 or bounds[-1] != m:
        raise ValueError(f"bounds must run from 0 to the {m} rows with one group of sums "
                         f"(out) between each two, got {len(bounds)} bounds for "
                         f"{len(groups)} groups")
    t = T if joint is None else groups[0][0].shape[0]
    if joint is not None:
        if joint.shape != (T, T) or any(A.shape != (t, t) for A, _ in groups) or t > T:
            raise ValueError(f"with joint, joint must be {T} x {T} and every group's A one "
                             f"t x t leading block (t <= {T}), got {joint.shape} and "
                             f"{[A.shape for A, _ in groups]}")
    AtA = Yb = None
    lower_only = [False] * len(groups)      # updated by dsyrk: mirrored after the last block
    lower_joint = False
    progress.start("normal equations", m)
    with np.errstate(over="ignore", invalid="ignore"):   # an overflow is the error below
        for start, stop, Phi in feature_map.blocks(X, block_size, order):
            if Yb is None:
                # each block's products in the precision of its features (float32: SSYRK and
                # SGEMM), added to the float64 sums
                Yb = Y if Y.dtype == Phi.dtype else Y.astype(Phi.dtype)
            Yr = Yb[start:stop]
            if capture is not None:
                rows, into = capture
                lo, hi = np.searchsorted(rows, (start, stop))
                _copy_leading(Phi, rows[lo:hi], start, into[lo:hi])
            if weights is not None:
                root = np.sqrt(weights[start:stop]).astype(Phi.dtype)[:, None]
                Phi = Phi * root
                Yr = Yr * root
            first = int(np.searchsorted(bounds, start, side="right")) - 1
            for g in range(first, len(groups)):
                lo, hi = max(start, bounds[g]) - start, min(stop, bounds[g + 1]) - start
                if lo >= hi:
                    if bounds[g] >= stop:
                        break
                    continue
                part = Phi if hi - lo == len(Phi) else Phi[lo:hi]
                if not (DIRECT and part.dtype == np.float64) and AtA is None:
                    AtA = np.empty((T, T), dtype=Phi.dtype)
                # up to SMALL_SOLVE_MAX features syrk rounds differently on two OpenBLAS
                # threads; Phi^T Y (a matrix-vector product over the rows) at any size
                A_g, B_g = groups[g]
                if joint is not None and bounds[g] >= start:     # the group's first rows
                    # minus joint's leading block before them, plus it after the last (below):
                    # no t x t copy of it (a fresh 24-61 MB at T = 4000-8000); on zero sums
                    # (a fresh pass) the same bits as (after - before)
                    A_g -= joint[:t, :t]
                with blas_threads_for(T):
                    if joint is None:
                        lower_only[g] |= rank_update(A_g, part, AtA)
                    else:
                        lower_joint |= rank_update(joint, part, AtA)
                with single_blas_thread():
                    B_g += part.T @ Yr[lo:hi]
                if joint is not None and bounds[g + 1] <= stop:      # the group's last rows
                    A_g += joint[:t, :t]
            progress.update(stop)
    progress.end()
    if joint is not None:
        lower_only = [lower_joint] * len(groups)
        if lower_joint:
            mirror_lower(joint)
    for (A, _), lower in zip(groups, lower_only):
        if lower:
            mirror_lower(A)
    if not (all(np.isfinite(A).all() and np.isfinite(B).all() for A, B in groups)
            and (joint is None or np.isfinite(joint).all())):
        raise NumericalError(
            "the feature matrix overflowed (non-finite Phi^T Phi); the features are too large "
            "for float64", solver="normal equations",
            fix="lower sigma or standardise the inputs")
    return out


@njit(cache=True, nogil=True)
def _copy_leading(Phi, rows, offset, out):
    """out[i] <- the leading out.shape[1] columns of Phi[rows[i] - offset]: a block's captured
    rows straight into their place, where numpy's ``Phi[rows, :t]`` made a temporary of them
    first (a fresh 12 MB a block at mnist T = 2000) and copied it: 0.37 ms against 1.0-1.5 ms
    for 2000 rows of 500 columns."""
    t = out.shape[1]
    for i in range(rows.shape[0]):
        r = rows[i] - offset
        for j in range(t):
            out[i, j] = Phi[r, j]


def cholesky_solve(M: np.ndarray, B: np.ndarray, factor: bool = False,
                   overwrite: bool = False):
    """Solve M a = B for symmetric positive definite M (LinAlgError otherwise), GIL released;
    with ``factor`` return (a, L), L the lower Cholesky factor of M. ``overwrite``: factor M
    in place (a matrix the caller made for this solve; lost after a LinAlgError). Small
    systems run on one BLAS thread (rwtool.threads): the loops that call this (GreedyMK's
    steps, BKerNN's trials) would otherwise pay for OpenBLAS's spinning threads, and the
    factor of a system would depend on the thread count."""
    with blas_threads_for(M.shape[0]):
        # numpy's dpotrf in place (solvers._numpy_blas): 1.6-2x np.linalg.cholesky's rate
        L = cholesky_lower(M, overwrite=overwrite, clean=factor)
        # L^T is the upper factor in Fortran order, which LAPACK reads in place (L itself would
        # be copied to Fortran order first: 0.07 s at T = 4000, a tenth of the factorisation)
        a = cho_solve((L.T, False), B, check_finite=False)
    return (a, L) if factor else a


class GramRows:
    """A map's Gram matrix R = G given a panel of its lower triangle's rows at a time
    (``rows(start, stop)``: rows start..stop - 1 over columns 0..stop - 1, the map's
    ``gram_rows``), for ``regularised(lower=True)``, which forms the system from them: G is
    never held whole (a fresh T x T matrix: 512 MB at T = 8000, whose pages' first touch cost
    0.4-1.0 s of CPU beside the product's 1.1 s). ``full()`` computes it whole, for the jitter
    path."""

    #: rows of G a panel (64 x 8000 doubles at T = 8000: 4 MB)
    PANEL = 64

    def __init__(self, feature_map):
        self.feature_map = feature_map

    def rows(self, start: int, stop: int) -> np.ndarray:
        return self.feature_map.gram_rows(start, stop)

    def full(self) -> np.ndarray:
        return self.feature_map.gram()


def regularised(A: np.ndarray, m: int, reg: float, R: np.ndarray | None = None,
                eps: float = 0.0, out: np.ndarray | None = None,
                lower: bool = False) -> np.ndarray:
    """A + m reg R + m eps I (R = I when None), the system every solver here solves: a new
    matrix, or ``out`` (A's shape, C order; not A) overwritten with it. ``lower``: only the
    lower triangle with the diagonal is formed (what the Cholesky factorisation reads), the
    strict upper triangle left as it was, and ``out`` may be A itself (formed in place: a
    fresh T x T matrix costs its pages' first touch, 1.2 s of CPU at T = 8000 against 0.08 s
    for the sums into memory already touched); the same bits where formed."""
    if lower:
        T = A.shape[0]
        M = np.empty_like(A, order="C") if out is None else out
        scaled = np.empty(A.shape[1])
        panels = isinstance(R, GramRows)
        step = GramRows.PANEL if panels else T
        for b in range(0, T, step):
            e = min(T, b + step)
            # R's rows b..e - 1: a panel computed now, or views of the matrix's
            rows = R.rows(b, e) if panels else (None if R is None else R[b:e])
            for i in range(b, e):   # a row at a time: A's upper triangle is not touched
                if rows is not None:
                    np.multiply(rows[i - b, :i + 1], m * reg, out=scaled[:i + 1])
                    np.add(scaled[:i + 1], A[i, :i + 1], out=M[i, :i + 1])
                elif M is not A:
                    M[i, :i + 1] = A[i, :i + 1]
        M[np.diag_indices_from(M)] += m * ((0.0 if R is not None else reg) + eps)
        return M
    if isinstance(R, GramRows):
        R = R.full()
    if R is not None:          # one new matrix, two passes (the sum is the same either way)
        M = np.multiply(R, m * reg, out=out)
        M += A
        reg = 0.0
    elif out is not None:
        M = out
        np.copyto(M, A)
    else:
        M = A.copy()
    # (any layout: R's order carries over to M, and a reshape of a Fortran-ordered M would
    # be a copy, its diagonal added to nothing)
    M[np.diag_indices_from(M)] += m * (reg + eps)
    return M


def solve_normal_equations(A: np.ndarray, B: np.ndarray, m: int, reg: float,
                           R: np.ndarray | None = None, eps: float = 0.0, factor: bool = True,
                           work: np.ndarray | None = None, overwrite_a: bool = False):
    """Solve (A + m reg R + m eps I) a = B by Cholesky, with jitter if needed.

    Returns ``(coef, info)`` where ``info`` records the jitter added (0.0 when none) and
    ``chol``, the lower Cholesky factor of the matrix solved (None after the pseudo-inverse,
    or with ``factor`` False: the search's solves, which would pay a quarter of a small
    factorisation's time to clear its upper triangle): the posterior's (solvers._posterior).
    ``work``: a C-ordered matrix of A's shape (not A) that the first attempt regularises and
    factors in, instead of a new one (the search's many solves of one size; with ``factor``,
    ``chol`` is then ``work``). ``R``: a matrix, None (I) or a :class:`GramRows`.
    ``overwrite_a`` (with ``factor`` False; A symmetric and
    C-ordered): the first attempt forms and factors the system in A's lower triangle, whose
    strict upper triangle still holds A, from which A is restored if the factorisation fails;
    after a success A's lower triangle holds the factor (a caller that needs A no more: the
    fixed-reg fit of a classifier).
    """
    T = A.shape[0]
    info = {"jitter": 0.0, "method": "cholesky", "chol": None}

    def solve(M):       # M is this call's own matrix: factored in place
        if not factor:
            return cholesky_solve(M, B, overwrite=True), None
        return cholesky_solve(M, B, factor=True, overwrite=True)

    in_place = overwrite_a and not factor and A.flags.c_contiguous and A.flags.writeable
    diagonal = np.diag(A).copy() if in_place else None
    try:        # one T x T copy (the regularised matrix), or none
        coef, info["chol"] = solve(regularised(A, m, reg, R, eps, out=A if in_place else work,
                                               lower=in_place))
        return coef, info
    except LinAlgError:
        if in_place:            # A again, from its upper triangle and the saved diagonal
            mirror_lower(A.T)
            A[np.diag_indices(T)] = diagonal
    if isinstance(R, GramRows):
        R = R.full()
    M = regularised(A, m, reg, R, eps)
    scale = max(float(np.mean(np.abs(np.diag(M)))), np.finfo(float).tiny)
    for power in range(-12, -3):
        jitter = scale * 10.0 ** power
        try:
            Mj = M.copy()
            Mj[np.diag_indices(T)] += jitter
            coef, info["chol"] = solve(Mj)
        except LinAlgError:
            continue
        info["jitter"] = jitter
        warnings.warn(f"the regularised normal equations were not numerically positive "
                      f"definite; added jitter {jitter:.2e} (1e{power} x mean diagonal) to solve "
                      f"them. Raise reg or eps for a better-conditioned problem",
                      NumericalWarning, stacklevel=3)
        return coef, info
    # Last resort: a pseudo-inverse through the symmetric eigendecomposition.
    w, V = eigh(M, check_finite=False)
    keep = w > w.max() * T * np.finfo(float).eps
    coef = V[:, keep] @ ((V[:, keep].T @ B) / w[keep, None])
    info.update(method="eigh-pinv", jitter=math.nan)
    warnings.warn(f"the regularised normal equations are singular even with jitter; solved by "
                  f"pseudo-inverse keeping {int(keep.sum())} of {T} directions. Raise reg",
                  NumericalWarning, stacklevel=3)
    return coef, info


class RegPath:
    """Solutions of (A + m reg R + m eps I) a = B for many values of reg, one eigensolve each.

    With R = I: A + m eps I = Q diag(w) Q^T, and a(reg) = Q diag(1 / (w + m reg)) Q^T B. With
    R = G (symmetric positive definite): G = L L^T, and with a = L^-T c the system becomes
    (C + m reg I) c = L^-1 B, C = L^-1 (A + m eps I) L^-T = W diag(w) W^T. After the O(T^3)
    decomposition every reg costs O(T^2 q), so a cross-validated choice among many values costs
    about what one Cholesky solve per fold costs. ``RegPath.for_gram(G)`` factors G once for all
    the folds; it returns None when G is plainly too ill-conditioned for the reduction, and
    ``accurate`` checks a solution's residual; in either case, and when rounding makes the
    system indefinite (``solve`` raises LinAlgError), solve each reg by
    :func:`solve_normal_equations` instead. All on numpy (GIL released).
    """

    #: smallest pivot ratio (min/max of diag(L))^2 at which the reduction by L is tried
    MIN_PIVOT_RATIO = 1e-6
    #: relative residual above which a path solution is not trusted (see ``accurate``)
    MAX_RESIDUAL = 1e-8

    def __init__(self, A: np.ndarray, B: np.ndarray, m: int, eps: float = 0.0,
                 Linv: np.ndarray | None = None):
        M = regularised(A, m, 0.0, None, eps)
        self.m, self.eps = m, eps
        self.Linv = Linv
        if Linv is not None:
            M = Linv @ M @ Linv.T
            B = Linv @ B
        w, V = np.linalg.eigh(M)
        self.w, self.V, self.VtB = w, V, V.T @ B

    @classmethod
    def for_gram(cls, G: np.ndarray) -> np.ndarray | None:
        """L^-1 for G = L L^T, or None if G is not safely positive definite."""
        try:
            L = np.linalg.cholesky(G)
        except LinAlgError:
            return None
        d = np.diag(L) ** 2
        if d.min() < cls.MIN_PIVOT_RATIO * d.max():
            return None
        return np.linalg.inv(L)

    def accurate(self, A: np.ndarray, B: np.ndarray, R: np.ndarray | None, reg: float,
                 coef: np.ndarray) -> bool:
        """Whether ``coef`` (the solution at ``reg``) solves the original system to
        ``MAX_RESIDUAL`` relative residual: the reduction by L^-1 loses about cond(G) in
        accuracy, which the pivot ratio only bounds from below. Check the smallest reg, the
        worst-conditioned system."""
        M = regularised(A, self.m, reg, R, self.eps)
        r = np.linalg.norm(M @ coef - B)
        return bool(r <= self.MAX_RESIDUAL * (np.linalg.norm(M) * np.linalg.norm(coef)
                                              + np.linalg.norm(B)))

    def solve(self, reg: float) -> np.ndarray:
        denom = self.w + self.m * float(reg)
        if denom.min() <= 0:
            raise LinAlgError("the regularised normal equations are not positive definite")
        c = self.V @ (self.VtB / denom[:, None])
        return c if self.Linv is None else self.Linv.T @ c


def ridge_fit(feature_map, X, Y, reg: float, eps: float = 0.0, use_gram: bool | None = None,
              block_size: int | None = None, progress=None, weights: np.ndarray | None = None,
              keep_sums: bool = True):
    """Blocked least squares for a fitted feature map (R = G when the map has one, else I).
    With row ``weights`` it minimises (1 / sum w) sum_i w_i (f(x_i) - y_i)^2 / 2 plus the same
    regulariser: m becomes sum w, so integer weights fit the model of the repeated rows.

    Returns ``(coef, info)``; ``info`` has the jitter, the method, the Gram matrix used, the
    Cholesky factor ``chol`` of the system and its sums ``A``, ``B`` and weight sum ``m``
    (what the posterior needs: solvers._posterior). ``keep_sums`` False (a caller that needs
    none of them): the system is formed and factored in A's memory, G a panel of rows at a
    time into it (:class:`GramRows`), and ``chol``, ``A`` and ``gram`` are None.
    """
    progress = make_progress(progress)
    use_gram = feature_map.has_gram if use_gram is None else use_gram
    R = None
    if use_gram and not keep_sums and hasattr(feature_map, "gram_rows"):
        R = GramRows(feature_map)       # G's rows formed into the system a panel at a time
    elif use_gram:
        progress.start("features", 1)
        R = feature_map.gram()
        progress.end()
    A, B = normal_equations(feature_map, X, Y, block_size, progress, weights=weights)
    m = X.shape[0] if weights is None else float(np.sum(weights))
    progress.start("solve", 1)
    with single_blas_thread():      # the model's factor, whatever the BLAS thread count
        coef, info = solve_normal_equations(A, B, m, reg, R, eps, factor=keep_sums,
                                            overwrite_a=not keep_sums)
    progress.end()
    info.update(gram=None if isinstance(R, GramRows) else R, A=A if keep_sums else None,
                B=B, m=m)
    return coef, info
