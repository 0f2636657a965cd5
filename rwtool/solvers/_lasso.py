"""The Lasso on random features by coordinate descent (003 Algorithms 2 and 5; spec section 4.2).

Minimises, for each column y of Y,

    J1(a) = (1/(2m)) ||Phi a - y||^2 + lam ||a||_1                                  (spec eq. J1)

which is scikit-learn's ``Lasso(alpha=lam, fit_intercept=False)`` objective (seed 003 writes
1/m instead of 1/(2m): its lam1 is twice ours). Two entry points share one numba kernel, cyclic
coordinate descent on a Gram matrix Q = Phi_W^T Phi_W / m that keeps h = Q a up to date, so a
sweep costs O(|W|) plus O(|W|) per coefficient that moves:

- design mode (``lasso_path(X, ...)``): the m x T matrix is given. When T is moderate
  (``precompute="auto"``: T <= 3000 and m >= T) Q = Phi^T Phi / m is formed once by BLAS and
  the kernel runs on all T coordinates, as scikit-learn's ``precompute=True``; the gap reported
  is then recomputed from the exact residual. Otherwise an outer loop keeps a working
  set W (the support, the sequential strong rule of Tibshirani et al. 2012 along the path, then
  the worst KKT violators, doubling in size), solves the Lasso restricted to W on its small Gram
  matrix, and checks the full problem with one BLAS product Phi^T r. The stopping rule is the
  duality gap of the full problem computed from the exact residual (scikit-learn's rule:
  gap <= tol ||y||^2 / m), so the answer is the one scikit-learn's Lasso converges to.
- Gram mode (``lasso_gram``): only Q = Phi^T Phi / m, q = Phi^T y / m and ||y||^2 / m are given
  (accumulated block by block, memory O(T^2) whatever m); the kernel runs on all T coordinates,
  zero coordinates that stay zero cost O(1) per sweep. Pruning (000 eq. 60) is a Lasso in this
  form with Q = G / T.
- Gram-mode paths (``gram_path``, the solutions at every lam, for reg="auto": lasso_cv.py) add
  an active-set step that solves the optimality conditions on the support, kept only when the
  duality gap certifies it or J1 drops: it finishes solves plain coordinate descent crawls on.

Random features are often near-duplicates, which makes plain coordinate descent crawl; every
5 sweeps the kernel extrapolates its last iterates (Anderson acceleration, Bertrand & Massias
2021) and keeps the extrapolation only when it lowers J1. Warm starts along a geometric lam
path, an iteration cap (sweeps), and a convergence report (gap, sweeps, converged). Progress
events: stage "lasso", one unit per (lam, output). This module knows feature maps only in
:func:`lasso_fit`; it must not import estimators.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from numba import njit

from ..exceptions import ConvergenceWarning, NumericalError
from ..progress import FitCancelled, make_progress
from ..threads import blas_threads_for
from ._ridge import auto_block_size, normal_equations

__all__ = ["lasso_path", "lasso_gram", "gram_path", "lam_max", "lasso_fit", "fit_mode",
           "finish_on_support", "lasso_objective", "duality_gap"]


# ----------------------------------------------------------------------------- numba kernels

#: sweeps between two Anderson extrapolations of the coordinate-descent iterates
_ANDERSON = 5


@njit(cache=True, nogil=True)
def _gram_gap(Q, q, yy, lam, a, h):
    """Duality gap of min 0.5 a^T Q a - q^T a + 0.5 yy + lam ||a||_1 (Gram form of J1)."""
    p = a.shape[0]
    aq = 0.0
    ah = 0.0
    l1 = 0.0
    dual = 0.0
    for j in range(p):
        aq += a[j] * q[j]
        ah += a[j] * h[j]
        l1 += abs(a[j])
        c = abs(q[j] - h[j])
        if c > dual:
            dual = c
    r2 = max(yy - 2.0 * aq + ah, 0.0)   # ||y - Phi a||^2 / m
    ry = yy - aq                        # r^T y / m
    if dual > lam:
        const = lam / dual
        return 0.5 * r2 * (1.0 + const * const) + lam * l1 - const * ry
    return r2 + lam * l1 - ry


@njit(cache=True, nogil=True)
def _primal(Q, q, yy, lam, a, h):
    """J1 in Gram form: 0.5 a^T Q a - q^T a + 0.5 yy + lam ||a||_1 (h = Q a)."""
    v = 0.5 * yy
    for j in range(a.shape[0]):
        v += a[j] * (0.5 * h[j] - q[j]) + lam * abs(a[j])
    return v


@njit(cache=True, nogil=True)
def _cd_gram(Q, q, yy, lam, a, h, tol_abs, dtol, max_sweeps):
    """Cyclic coordinate descent on the Gram form; ``a`` and ``h = Q a`` are updated in place.

    Returns (sweeps, gap). The gap is checked when the largest coordinate move of a sweep falls
    below ``dtol`` times the largest coefficient (scikit-learn's rule), and on the last sweep.
    Every ``_ANDERSON`` sweeps the last iterates are extrapolated (Anderson acceleration, as in
    Bertrand & Massias 2021, "Anderson acceleration of coordinate descent"); the extrapolated
    point is kept only when it lowers J1, so the iteration stays a descent method. This is what
    makes ill-conditioned random-feature matrices (near-duplicate features) converge.
    """
    p = a.shape[0]
    K = _ANDERSON
    last = np.empty((K + 1, p))
    last_h = np.empty((K + 1, p))   # h = Q a is linear in a: extrapolate it the same way
    n_last = 0
    extrapolated = False
    gap = math.inf
    for sweep in range(max_sweeps):
        w_max = 0.0
        d_max = 0.0
        for j in range(p):
            qjj = Q[j, j]
            if qjj <= 0.0:
                continue
            aj = a[j]
            rho = q[j] - h[j] + qjj * aj
            if rho > lam:
                new = (rho - lam) / qjj
            elif rho < -lam:
                new = (rho + lam) / qjj
            else:
                new = 0.0
            if new != aj:
                d = new - aj
                for k in range(p):
                    h[k] += d * Q[j, k]
                a[j] = new
                if abs(d) > d_max:
                    d_max = abs(d)
            if abs(new) > w_max:
                w_max = abs(new)
        if w_max == 0.0 or d_max <= dtol * w_max or sweep == max_sweeps - 1:
            if extrapolated:
                # drop the rounding the extrapolated h carries before trusting the gap
                h[:] = Q @ a
                extrapolated = False
            gap = _gram_gap(Q, q, yy, lam, a, h)
            if gap <= tol_abs:
                return sweep + 1, gap
        last[n_last] = a
        last_h[n_last] = h
        n_last += 1
        if n_last == K + 1:
            n_last = 0
            U = np.empty((K, p))
            for i in range(K):
                U[i] = last[i + 1] - last[i]
            C = U @ U.T
            tr = 0.0
            for i in range(K):
                tr += C[i, i]
            if tr <= 0.0:
                continue
            for i in range(K):
                C[i, i] += 1e-10 * tr
            z = np.linalg.solve(C, np.ones(K))
            sz = z.sum()
            if sz == 0.0 or not np.isfinite(sz):
                continue
            c = z / sz
            ext = np.zeros(p)
            h_ext = np.zeros(p)
            for i in range(K):
                ext += c[i] * last[i + 1]
                h_ext += c[i] * last_h[i + 1]
            if _primal(Q, q, yy, lam, ext, h_ext) < _primal(Q, q, yy, lam, a, h):
                a[:] = ext
                h[:] = h_ext
                extrapolated = True
    return max_sweeps, gap


# ----------------------------------------------------------------------------- helpers

def lasso_objective(X, y, a, lam) -> float:
    """J1(a) = (1/(2m)) ||X a - y||^2 + lam ||a||_1."""
    r = y - X @ a
    return float(0.5 * (r @ r) / len(y) + lam * np.abs(a).sum())


def duality_gap(X, y, a, lam) -> float:
    """Duality gap of J1 at ``a`` (scikit-learn's, divided by m)."""
    r = y - X @ a
    return _gap_from_residual(X, y, r, a, lam)[0]


def _gap_from_residual(X, y, r, a, lam):
    m = len(y)
    c = (X.T @ r) / m
    dual = float(np.max(np.abs(c))) if c.size else 0.0
    r2 = float(r @ r) / m
    ry = float(r @ y) / m
    l1 = float(np.abs(a).sum())
    if dual > lam:
        const = lam / dual
        gap = 0.5 * r2 * (1.0 + const * const) + lam * l1 - const * ry
    else:
        gap = r2 + lam * l1 - ry
    return gap, c


def lam_max(X, Y) -> float:
    """Smallest lam whose Lasso solution is 0 for every column: max |X^T y| / m."""
    Y = Y[:, None] if Y.ndim == 1 else Y
    return float(np.max(np.abs(X.T @ Y))) / X.shape[0]


def _lam_grid(top: float, lam: float, path_length: int) -> np.ndarray:
    if path_length <= 1 or lam >= top or top <= 0.0:
        return np.array([lam])
    return np.geomspace(top, lam, int(path_length))


def _check_lam(lam):
    lam = float(lam)
    if not (math.isfinite(lam) and lam > 0.0):
        raise ValueError(f"the Lasso needs lam > 0 (reg), got {lam!r}; for lam = 0 use the "
                         f"least-squares solver")
    return lam


# ----------------------------------------------------------------------------- design mode

#: coordinate-descent sweeps on the working set between two checks of the full problem
_INNER_SWEEPS = 200


def _solve_ws(X, y, yy, lam, a, tol, max_sweeps, c, lam_prev, dtol, finish=False):
    """One lam, one column, working sets; ``a`` (T,) is the warm start, updated in place.

    ``c`` = X^T (y - X a) / m at the warm start. With ``finish`` the iterate is then replaced
    by the solution of the optimality conditions on W (:func:`finish_on_support`) when that
    lowers the full problem's gap. Returns (sweeps, gap, c at the solution).
    """
    m, T = X.shape
    tol_abs = tol * yy
    supp = np.flatnonzero(a)
    if lam_prev is not None and lam_prev > lam:
        cand = np.flatnonzero(np.abs(c) >= 2.0 * lam - lam_prev)   # sequential strong rule
    else:
        cand = np.flatnonzero(np.abs(c) > lam)
    score = np.abs(c)
    size = max(2 * len(supp), 64)
    extra = np.setdiff1d(cand, supp, assume_unique=True)
    if len(extra) > size:
        extra = extra[np.argsort(-score[extra])[:size]]
    W = np.concatenate([supp, extra]).astype(np.int64)
    if len(W) == 0:
        W = np.argsort(-score)[: min(T, 8)].astype(np.int64)
    XW = np.asfortranarray(X[:, W])
    Q = (XW.T @ XW) / m
    q = (XW.T @ y) / m
    sweeps = 0
    inner = 0.3
    gap = math.inf
    while True:
        aW = np.ascontiguousarray(a[W])
        h = Q @ aW
        # cap the inner solve so that a slow restricted problem cannot starve the growth of W
        budget = max(1, min(max_sweeps - sweeps, _INNER_SWEEPS))
        with blas_threads_for(len(W)):
            s, _ = _cd_gram(np.ascontiguousarray(Q), q, yy, lam, aW, h, inner * tol_abs, dtol,
                            budget)
        sweeps += s
        a[:] = 0.0
        a[W] = aW
        r = y - XW @ aW
        gap, c = _gap_from_residual(X, y, r, a, lam)
        if gap <= tol_abs or sweeps >= max_sweeps:
            break
        inW = np.zeros(T, dtype=bool)
        inW[W] = True
        viol = np.flatnonzero((np.abs(c) > lam) & ~inW)
        if len(viol) == 0:
            # the restricted problem was not solved tightly enough: tighten and go again
            inner = max(inner * 0.1, 1e-6)
            continue
        add = max(len(W), 32)
        if len(viol) > add:
            viol = viol[np.argsort(-np.abs(c[viol]))[:add]]
        XN = np.asfortranarray(X[:, viol])
        C = (XW.T @ XN) / m
        D = (XN.T @ XN) / m
        Q = np.block([[Q, C], [C.T, D]])
        q = np.concatenate([q, (XN.T @ y) / m])
        W = np.concatenate([W, viol])
        XW = np.asfortranarray(np.hstack([XW, XN]))
    if finish:
        aW = np.ascontiguousarray(a[W])
        finish_on_support(np.ascontiguousarray(Q), q, yy, lam, aW, Q @ aW, math.inf)
        trial = np.zeros(T)
        trial[W] = aW
        g, cf = _gap_from_residual(X, y, y - XW @ aW, trial, lam)
        if g < gap:
            a[:], gap, c = trial, g, cf
    return sweeps, gap, c


#: largest T for which ``precompute="auto"`` forms the T x T Gram matrix (72 MB at 3000)
GRAM_MAX_T = 3000


def lasso_path(X, Y, lam, path_length: int = 1, lams=None, coef_init=None, tol: float = 1e-4,
               max_iter: int = 1000, precompute="auto", progress=None, warn: bool = True):
    """Lasso solutions of J1 on the design matrix ``X`` (m x T) for every column of ``Y``.

    Parameters
    ----------
    X : (m, T) array
    Y : (m,) or (m, k) array
    lam : float > 0
        The final lam1 (``reg`` of the estimators).
    path_length : int, default 1
        Number of lam values on the geometric path from lam_max = max|X^T y|/m down to ``lam``
        (warm starts from one to the next); 1 solves at ``lam`` directly.
    lams : array, optional
        An explicit decreasing path (overrides ``lam``/``path_length``); the last value is the
        returned solution.
    coef_init : (T,) or (T, k) array, optional
        Warm start at the first lam of the path.
    tol : float, default 1e-4
        Stop when the duality gap is <= tol ||y||^2 / m (scikit-learn's rule).
    max_iter : int, default 1000
        Cap on coordinate-descent sweeps per lam and column.
    precompute : "auto", True or False
        True: form Q = X^T X / m once (BLAS syrk) and run the kernel on all T coordinates
        (scikit-learn's ``precompute=True``), then report the gap from the exact residual.
        False: working sets. "auto": True when T <= ``GRAM_MAX_T`` and m >= T.
    progress : callback or Progress, optional
        Stage "lasso", one unit per (lam, column); metrics lam, nnz, gap.

    Returns
    -------
    coef : (T,) or (T, k) array
        Solution at the last lam (same dimensionality as ``Y``).
    info : dict
        ``gap`` (per column, at the last lam), ``sweeps``, ``converged``, ``lams``, ``nnz``.

    Raises
    ------
    FitCancelled
        With ``partial_model=True`` and ``partial=(coef, info)`` of the last completed lam when
        at least one lam of the path is done for every column.
    """
    X = np.ascontiguousarray(X, dtype=float)
    one_d = np.ndim(Y) == 1
    Y = np.asarray(Y, dtype=float)
    Y = Y[:, None] if one_d else Y
    m, T = X.shape
    k = Y.shape[1]
    if precompute == "auto":
        precompute = T <= GRAM_MAX_T and m >= T
    if precompute:
        return _lasso_precomputed(X, Y, lam, path_length, lams, coef_init, tol, max_iter,
                                  progress, warn, one_d)
    grid, coef, progress, info = _start(lam, lams, lambda: lam_max(X, Y), path_length, T, k,
                                        coef_init, progress, tol)
    YY = np.einsum("ij,ij->j", Y, Y) / m
    C = (X.T @ (Y - X @ coef)) / m
    done = None
    for li, lam_i in enumerate(grid):
        lam_prev = float(grid[li - 1]) if li > 0 else None
        for j in range(k):
            y = np.ascontiguousarray(Y[:, j])
            a = coef[:, j].copy()
            if YY[j] == 0.0:
                a[:] = 0.0
                s, gap = 0, 0.0
            else:
                s, gap, C[:, j] = _solve_ws(X, y, float(YY[j]), float(lam_i), a, tol,
                                            int(max_iter), C[:, j], lam_prev, tol,
                                            finish=li == len(grid) - 1)
            coef[:, j] = a
            _record(info, j, s, gap, tol * YY[j])
            if j == k - 1:
                done = (coef.copy(), float(lam_i))
            _report(progress, li * k + j + 1, lam_i, coef, gap, done, info, one_d)
    return _finish(progress, coef, info, one_d, warn)


def _lasso_precomputed(X, Y, lam, path_length, lams, coef_init, tol, max_iter, progress, warn,
                       one_d):
    """lasso_path through the Gram form; the reported gaps come from the exact residuals."""
    m = X.shape[0]
    Q = X.T @ X          # numpy calls syrk here and, unlike scipy's dsyrk, releases the GIL
    Q *= 1.0 / m
    YY = np.einsum("ij,ij->j", Y, Y) / m
    q = (X.T @ Y) / m
    coef, info = lasso_gram(Q, q[:, 0] if one_d else q, YY[0] if one_d else YY, lam,
                            path_length=path_length, lams=lams,
                            coef_init=coef_init, tol=tol, max_iter=max_iter, progress=progress,
                            warn=False)
    C = np.array(coef.reshape(X.shape[1], -1))
    R = Y - X @ C
    lam_last = info["lams"][-1]
    for j in range(Y.shape[1]):
        gap, c = _gap_from_residual(X, Y[:, j], R[:, j], C[:, j], lam_last)
        left = int(max_iter) - info["sweeps"][j] // len(info["lams"])
        if gap > tol * YY[j] and left > 0 and YY[j] > 0:
            # the Gram-form gap (cancellation ~1e-16 ||y||^2/m) claimed convergence: polish
            # with the exact residual on working sets, warm-started here
            a = C[:, j].copy()
            s, gap, _ = _solve_ws(X, np.ascontiguousarray(Y[:, j]), float(YY[j]), lam_last, a,
                                  tol, left, c, None, tol, finish=True)
            C[:, j] = a
            info["sweeps"][j] += int(s)
        info["gap"][j] = float(gap)
        info["converged"][j] = bool(gap <= tol * YY[j])
    info["precompute"] = True
    _warn_unconverged(info, warn)
    return (C[:, 0] if one_d else C), info


def _start(lam, lams, top, path_length, T, k, coef_init, progress, tol):
    """The lam grid, the warm start, the started progress and the empty report of a solve."""
    if lams is None:
        grid = _lam_grid(top(), _check_lam(lam), path_length)
    else:
        grid = np.asarray(lams, dtype=float)
        for v in grid:
            _check_lam(v)
    coef = np.zeros((T, k))
    if coef_init is not None:
        coef[:] = np.asarray(coef_init, dtype=float).reshape(T, -1)
    progress = make_progress(progress)
    progress.start("lasso", len(grid) * k)
    info = {"gap": [math.nan] * k, "sweeps": [0] * k, "converged": [False] * k,
            "lams": grid.tolist(), "tol": tol}
    return grid, coef, progress, info


def _record(info, j, sweeps, gap, tol_abs):
    info["gap"][j] = float(gap)
    info["sweeps"][j] += int(sweeps)
    info["converged"][j] = bool(gap <= tol_abs)


def _report(progress, done_units, lam_i, coef, gap, done, info, one_d):
    """Progress between two Lasso solves; a cancel keeps the last lam solved for every column."""
    try:
        # the last solve of the path is always reported (with the iterate's metrics)
        progress.update(done_units, force=done_units == progress.total, lam=float(lam_i),
                        nnz=int(np.count_nonzero(np.any(coef != 0, axis=1))), gap=float(gap),
                        **progress.model_metrics(lambda: coef,
                                                 force=done_units == progress.total))
    except FitCancelled as exc:
        if done is None:
            raise
        c, lam_done = done
        raise FitCancelled(str(exc), partial_model=True,
                           partial=(c[:, 0] if one_d else c, dict(info, lam=lam_done))) from None


def _finish(progress, coef, info, one_d, warn):
    info["nnz"] = int(np.count_nonzero(np.any(coef != 0, axis=1)))
    progress.end(nnz=info["nnz"])
    _warn_unconverged(info, warn)
    return (coef[:, 0] if one_d else coef), info


def _warn_unconverged(info, warn, stacklevel=4):
    if warn and not all(info["converged"]):
        worst = max(info["gap"])
        warnings.warn(f"the Lasso did not converge: it stopped at its cap of "
                      f"{max(info['sweeps'])} sweeps with duality gap {worst:.3g} (tolerance "
                      f"{info['tol']:g} ||y||^2/m); the model is finite but not the Lasso "
                      f"solution. Fix: "
                      f"reg='auto' (the default), a larger reg, or a larger max_iter",
                      ConvergenceWarning, stacklevel=stacklevel)


# ----------------------------------------------------------------------------- Gram mode

def lasso_gram(Q, q, yy, lam, path_length: int = 1, lams=None, coef_init=None,
               tol: float = 1e-4, max_iter: int = 1000, progress=None, warn: bool = True):
    """The Lasso from the Gram form: Q = Phi^T Phi / m (T x T), q = Phi^T Y / m, yy = ||y||^2/m.

    Same objective, path, stopping rule and return values as :func:`lasso_path`; ``q`` may be
    (T,) or (T, k) with ``yy`` a float or (k,) array. The residual is never formed, so the gap
    is computed from Q, q and yy (accurate to about 1e-16 ||y||^2 / m).
    """
    Q = np.ascontiguousarray(Q, dtype=float)
    one_d = np.ndim(q) == 1
    q = np.asarray(q, dtype=float)
    q = q[:, None] if one_d else q
    yy = np.broadcast_to(np.asarray(yy, dtype=float), (q.shape[1],))
    T, k = q.shape
    grid, coef, progress, info = _start(lam, lams, lambda: float(np.max(np.abs(q))),
                                        path_length, T, k, coef_init, progress, tol)
    H = Q @ coef
    done = None
    for li, lam_i in enumerate(grid):
        for j in range(k):
            a = coef[:, j].copy()
            h = np.ascontiguousarray(H[:, j])
            qj = np.ascontiguousarray(q[:, j])
            with blas_threads_for(T):       # the sweeps' Q @ a and Anderson's small solves
                s, gap = _cd_gram(Q, qj, float(yy[j]), float(lam_i), a, h, tol * float(yy[j]),
                                  tol, int(max_iter))
            if li == len(grid) - 1:
                gap = finish_on_support(Q, qj, float(yy[j]), float(lam_i), a, h, gap)
            coef[:, j] = a
            H[:, j] = h
            _record(info, j, s, gap, tol * float(yy[j]))
            if j == k - 1:
                done = (coef.copy(), float(lam_i))
            _report(progress, li * k + j + 1, lam_i, coef, gap, done, info, one_d)
    return _finish(progress, coef, info, one_d, warn)


#: coordinate-descent sweeps before the first active-set step of gram_path, and between two
#: later ones
_POLISH_EVERY, _POLISH_MAX_EVERY = 50, 100
#: active-set step: rounds of (solve on the support, add the worst KKT violators), and the
#: sign-fixing re-solves within a round
_POLISH_ROUNDS, _SIGN_FIXES = 5, 10


def _active_set_step(Q, q, yy, lam, a, tol_abs):
    """Solve the Lasso's optimality conditions on a guessed support: ``(a, h, gap)`` or None.

    On the support A with signs s the Lasso solution satisfies Q_AA a_A = q_A - lam s; starting
    from the support of ``a``, a round solves that system, drops the coefficients whose sign
    came out wrong (and solves again), then adds the inactive coordinates that violate
    |q_j - (Q a)_j| <= lam most. It ends when the duality gap meets ``tol_abs`` (the best point
    found is returned either way, and the caller keeps it only if it certifies or lowers J1), so
    a wrong guess costs time, never accuracy. This is what
    coordinate descent cannot do on features with a dominant common direction (RWRelu: the top
    eigenvalue of Q 1e4 times the next; 1e5 sweeps of plain descent did not converge), where
    the support is found in tens of sweeps but the values crawl.
    """
    A = np.flatnonzero(a)
    sgn = np.sign(a[A])
    best = None
    for _ in range(_POLISH_ROUNDS):
        x = np.empty(0)
        for _ in range(_SIGN_FIXES):
            if len(A) == 0:
                x = np.empty(0)
                break
            try:
                x = np.linalg.solve(Q[np.ix_(A, A)], q[A] - lam * sgn)
            except np.linalg.LinAlgError:     # duplicated features on the support
                x = np.linalg.lstsq(Q[np.ix_(A, A)], q[A] - lam * sgn, rcond=None)[0]
            wrong = np.sign(x) != sgn
            if not wrong.any():
                break
            A, sgn = A[~wrong], sgn[~wrong]
        else:
            return best
        new = np.zeros_like(a)
        new[A] = x
        h = Q[:, A] @ x if len(A) else np.zeros_like(a)
        gap = _gram_gap(Q, q, yy, lam, new, h)
        if best is None or gap < best[2]:
            best = (new, h, gap)
        c = q - h
        viol = np.setdiff1d(np.flatnonzero(np.abs(c) > lam), A, assume_unique=True)
        if gap <= tol_abs or len(viol) == 0:
            return best
        viol = viol[np.argsort(-np.abs(c[viol]))[:max(1, len(A) // 4)]]
        A, sgn = np.concatenate([A, viol]), np.concatenate([sgn, np.sign(c[viol])])
    return best


def finish_on_support(Q, q, yy, lam, a, h, gap):
    """The Lasso solution itself from a coordinate-descent iterate: the optimality conditions
    solved on its support (:func:`_active_set_step`, run until no coordinate violates them),
    kept when its duality gap is below ``gap``; ``a``, ``h`` in place, returns the gap.

    Coordinate descent stops anywhere within ``tol`` of the optimum, at a point that depends on
    the rounding of Q (sums added in another order: fit, partial_fit, Dask); the solution of
    the optimality conditions does not, up to the conditioning of Q on the support.
    """
    with blas_threads_for(Q.shape[0]):
        step = _active_set_step(Q, q, yy, lam, a, 0.0)
    if step is not None and step[2] < gap:
        a[:], h[:], gap = step
    return gap


def _cd_active_set(Q, q, yy, lam, a, h, tol, max_iter):
    """Coordinate descent with an active-set step after ``_POLISH_EVERY`` sweeps, then every
    ``_POLISH_MAX_EVERY`` (the step is kept when its gap meets the tolerance or it lowers
    J1); ``a``, ``h`` in place.
    Returns (sweeps, gap)."""
    tol_abs = tol * yy
    done, gap, every = 0, math.inf, _POLISH_EVERY
    with blas_threads_for(Q.shape[0]):      # the sweeps' Q @ a and the support's solves
        while done < max_iter:
            s, gap = _cd_gram(Q, q, yy, lam, a, h, tol_abs, tol, min(every, max_iter - done))
            done += s
            every = min(2 * every, _POLISH_MAX_EVERY)   # a step that failed: wait longer
            if gap <= tol_abs:
                break
            step = _active_set_step(Q, q, yy, lam, a, tol_abs)
            if step is not None and (step[2] <= tol_abs or _primal(Q, q, yy, lam, step[0],
                                                                   step[1])
                                     < _primal(Q, q, yy, lam, a, h)):
                a[:], h[:], gap = step
                if gap <= tol_abs:
                    break
    return done, gap


def gram_path(Q, q, yy, lams, tol: float = 1e-4, max_iter: int = 1000, coef_init=None,
              on_output=None):
    """The Gram-form Lasso at every lam of a decreasing path, each warm-started from the last.

    ``Q`` (T, T), ``q`` (T, k), ``yy`` (k,) as in :func:`lasso_gram`. Returns ``coefs``
    (len(lams), T, k) and ``info`` with per (lam, output) arrays ``sweeps``, ``gap`` and
    ``converged`` (gap <= tol yy). Used by the cross-validated Lasso (lasso_cv.py), which
    needs every solution of the path, not only the last. After ``_POLISH_EVERY`` sweeps, then
    every ``_POLISH_MAX_EVERY``, an active-set step (:func:`_active_set_step`) tries to finish
    the solve exactly; explicit-reg fits (lasso_gram, lasso_path) do not take it. Never warns:
    the caller does. The outputs (classes) are solved one by one: ``on_output(j)`` is called
    after output j's path (a progress report, which may cancel).
    """
    Q = np.ascontiguousarray(Q, dtype=float)
    q = np.asarray(q, dtype=float).reshape(Q.shape[0], -1)
    yy = np.broadcast_to(np.asarray(yy, dtype=float), (q.shape[1],))
    lams = np.asarray(lams, dtype=float)
    T, k = q.shape
    L = len(lams)
    coefs = np.zeros((L, T, k))
    sweeps = np.zeros((L, k), dtype=np.int64)
    gaps = np.zeros((L, k))
    start = np.zeros((T, k)) if coef_init is None else np.asarray(coef_init, float).reshape(T, k)
    for j in range(k):
        a = np.ascontiguousarray(start[:, j]).copy()
        with blas_threads_for(T):
            h = Q @ a
        qj = np.ascontiguousarray(q[:, j])
        for i in range(L):
            if yy[j] > 0.0:
                sweeps[i, j], gaps[i, j] = _cd_active_set(Q, qj, float(yy[j]), float(lams[i]),
                                                          a, h, tol, int(max_iter))
            coefs[i, :, j] = a
        if on_output is not None:
            on_output(j)
    return coefs, {"sweeps": sweeps, "gap": gaps, "converged": gaps <= tol * yy}


# ----------------------------------------------------------------------------- feature maps

#: above this many float64 entries of Phi (about 256 MB) the fit switches to the Gram mode
DESIGN_BUDGET = 32_000_000


def fit_mode(m: int, T: int) -> str:
    """The mode ``lasso_fit(mode="auto")`` takes for m rows and T features: "gram", the mode of
    partial_fit and Dask (the same sums, the same kernel), unless T > ``GRAM_MAX_T`` and the
    m x T feature matrix fits in ``DESIGN_BUDGET`` entries (working sets, O(m T) memory)."""
    return "design" if T > GRAM_MAX_T and m * T <= DESIGN_BUDGET else "gram"


def lasso_fit(feature_map, X, Y, lam, path_length: int = 1, tol: float = 1e-4,
              max_iter: int = 1000, mode: str = "auto", block_size=None, progress=None):
    """The Lasso fit of a fitted feature map (003 Algorithm 5 for RW, Algorithm 2 for RKS).

    ``mode``: "design" builds Phi (m x T) and uses working sets; "gram" accumulates
    Phi^T Phi / m block by block (memory O(T^2)); "auto": :func:`fit_mode`. Either way the
    returned solution is finished on its support (:func:`finish_on_support`). Returns
    ``(coef (T, k), info)`` on all T features; the estimator keeps the non-zero rows.
    """
    progress = make_progress(progress)
    m, T = X.shape[0], feature_map.n_output_
    if mode == "auto":
        mode = fit_mode(m, T)
    if mode == "design":
        progress.start("features", m)
        Phi = np.empty((m, T))
        bs = auto_block_size(m, T) if block_size is None else int(block_size)
        for start in range(0, m, bs):
            stop = min(m, start + bs)
            feature_map._features_into(X[start:stop], Phi[start:stop])
            progress.update(stop)
        progress.end()
        if not np.isfinite(Phi).all():
            raise NumericalError("the feature matrix overflowed", solver="lasso",
                                 fix="lower sigma or standardise the inputs")
        coef, info = lasso_path(Phi, Y, lam, path_length=path_length, tol=tol,
                                max_iter=max_iter, progress=progress)
    else:
        A, B = normal_equations(feature_map, X, Y, block_size, progress)
        yy = np.einsum("ij,ij->j", Y, Y) / m
        coef, info = lasso_gram(A / m, B / m, yy, lam, path_length=path_length, tol=tol,
                                max_iter=max_iter, progress=progress)
    info["mode"] = mode
    return coef, info
