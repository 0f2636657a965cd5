"""Pruning a learned weight function with the Lasso (000 Section 6, Algorithm 5; spec 4.5).

Given alpha = sum_t a_t K(w_t, .), find a sparse beta = sum_t b_t K(w_t, .) on the same centres.
Since ||alpha - beta||_H^2 = (a - b)^T G (a - b) = ||U a - U b||^2 with G = U^T U (000 eq. 58-59),
000 eq. 60 is the Lasso

    min_b (1/(2T)) ||U a - U b||^2 + lamL ||b||_1

whose Gram form needs no factorisation at all: Q = U^T U / T = G / T, q = G a / T and
||U a||^2 / T = a^T G a / T. It is solved with the coordinate descent of solvers/_lasso.py (so
no Cholesky, no jitter), warm-started at the previous solution (b = a at first, 000 footnote 2).
Algorithm 5 starts lamL at 000 eq. 62 (or a user value) and multiplies it by 10 while
ACCEPT(alpha, beta) holds; the last accepted beta is returned. The ACCEPT criteria (000 eq. 63-66):

    "bound"          rho theta ||alpha - beta||_H < eps                                (eq. 63)
    "probabilistic"  L_S(beta) - L_S(alpha) + rho theta C / sqrt(m) (2 + sqrt(2 log 1/delta)) < eps
                     with C = ||alpha - beta||_H (Theorem 8, eq. 64)
    "loss"           L_S(beta) - L_S(alpha) < eps                                      (eq. 65)
    "error"          L01_S(beta) - L01_S(alpha) < eps                                  (eq. 66)

rho is the Lipschitz constant of the loss on predictions bounded by theta max(||alpha||_H,
||beta||_H) (Theorem 4). For random kitchen sinks the same algorithm runs with G = I (the
regulariser of RKS is ||a||_2) and theta = sup_x ||psi(x)||_2.

This module also restricts a fitted feature map to a subset of its centres (:func:`subset_map`),
which the Lasso fit and the iterative solvers use. It does not fit models.
"""

from __future__ import annotations

import math

import numpy as np

from ..losses import get_loss
from ..progress import make_progress
from ._lasso import lasso_gram

__all__ = ["subset_map", "subset_scale", "prune_weights", "make_accept", "ACCEPT_CRITERIA",
           "lam_start"]

ACCEPT_CRITERIA = ("bound", "probabilistic", "loss", "error")


def subset_map(feature_map, keep):
    """A new fitted map with only the centres ``keep`` (indices or a boolean mask), in order.

    Built from ``get_params()`` and ``fitted_state()`` (every per-centre array is indexed), so
    the result is the same kind of map and ``persist`` can save it. Feature t of the result is
    feature ``keep[t]`` of the original.
    """
    keep = np.asarray(keep)
    if keep.dtype == bool:
        keep = np.flatnonzero(keep)
    keep = keep.astype(np.int64)
    T = int(feature_map.n_features)
    if feature_map.n_output_ != T:
        raise ValueError(f"{type(feature_map).__name__} has {feature_map.n_output_} output "
                         f"columns for {T} centres; only maps with one column per centre can "
                         f"be restricted (use the 'phase' variant of Fourier features)")
    if len(keep) == 0:
        raise ValueError("cannot restrict a feature map to zero centres")
    if keep.min() < 0 or keep.max() >= T:
        raise ValueError(f"centre indices must be in [0, {T}), got {keep.min()}..{keep.max()}")
    params = feature_map.get_params(deep=False)
    params["n_features"] = int(len(keep))
    state = {}
    for key, value in feature_map.fitted_state().items():
        if feature_map.per_centre(key, value):
            value = np.ascontiguousarray(value[keep])
        state[key] = value
    return type(feature_map).from_fitted_state(params, state)


def subset_scale(feature_map, n_keep) -> float:
    """Factor for the coefficients of a map restricted to ``n_keep`` centres.

    Kitchen sinks and Fourier features scale every column by 1/sqrt(T) (003 Section 3.1), so
    the restricted map's columns are sqrt(T / n_keep) times the original ones and the same
    predictor needs its coefficients multiplied by sqrt(n_keep / T). RKHS-weighting features
    do not depend on T (factor 1).
    """
    if getattr(feature_map, "has_gram", False):
        return 1.0
    return math.sqrt(n_keep / feature_map.n_output_)


def lam_start(coef, T, eps, rho, theta) -> float:
    """000 eq. 62: lamL = eps^2 / (12 T rho^2 theta^2 ||a||_1) (the most careful start)."""
    l1 = float(np.max(np.abs(np.atleast_2d(coef.T)).sum(axis=1)))
    denom = 12.0 * T * rho * rho * theta * theta * l1
    return eps * eps / denom if denom > 0 else eps * eps


def _rkhs_norms(G, C):
    return np.sqrt(np.maximum(np.einsum("tk,tk->k", C, G @ C), 0.0))


def make_accept(kind, eps, coef, G, theta, Phi=None, Y=None, loss="squared", delta=0.05,
                classify=True, y_bound=None):
    """ACCEPT(alpha, .) of 000 eq. 63-66 as a function beta -> (accepted, metrics).

    ``Phi`` (m x T) and ``Y`` (m x k, +/-1 for classifiers) are the sample S; they are needed by
    every criterion except "bound". With several outputs (one-vs-rest) the losses are averaged
    over outputs, the 0-1 error is that of the combined classifier (sign or argmax), and
    C = max over outputs of ||alpha_j - beta_j||_H. ``y_bound`` bounds |y| in rho (None: max|Y|
    of the sample, or 1 without one).
    """
    if kind not in ACCEPT_CRITERIA:
        raise ValueError(f"accept must be one of {', '.join(map(repr, ACCEPT_CRITERIA))}, "
                         f"got {kind!r}")
    if kind != "bound" and (Phi is None or Y is None):
        raise ValueError(f"accept={kind!r} compares errors on a sample: pass X and y")
    if kind == "error" and not classify:
        raise ValueError("accept='error' needs a classifier (0-1 error); use 'loss' for "
                         "regression")
    if kind == "probabilistic" and not (0.0 < delta < 1.0):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    loss = get_loss(loss)
    norm_a = _rkhs_norms(G, coef)
    if y_bound is None:
        y_bound = float(np.max(np.abs(Y))) if Y is not None and np.size(Y) else 1.0

    def risks(C):
        if Phi is None:
            return math.nan, math.nan
        F = Phi @ C
        L = float(np.mean(loss.value(F, Y)))
        if not classify:
            return L, math.nan
        if F.shape[1] == 1:
            err = float(np.mean((F[:, 0] > 0) != (Y[:, 0] > 0)))
        else:
            err = float(np.mean(np.argmax(F, axis=1) != np.argmax(Y, axis=1)))
        return L, err

    L_a, err_a = risks(coef)
    m = 0 if Phi is None else Phi.shape[0]

    def accept(beta):
        norm_b = _rkhs_norms(G, beta)
        C = float(np.max(_rkhs_norms(G, coef - beta)))
        rho = loss.lipschitz(theta * float(max(norm_a.max(), norm_b.max())), y_bound)
        L_b, err_b = risks(beta)
        if kind == "bound":
            value = rho * theta * C
        elif kind == "probabilistic":
            value = L_b - L_a + rho * theta * C / math.sqrt(m) * (
                2.0 + math.sqrt(2.0 * math.log(1.0 / delta)))
        elif kind == "loss":
            value = L_b - L_a
        else:
            value = err_b - err_a
        metrics = {"criterion": float(value), "norm_diff": C, "norm_beta": norm_b.tolist(),
                   "loss": L_b, "error": err_b}
        return bool(value < eps), metrics

    accept.before = {"norm_alpha": norm_a.tolist(), "loss": L_a, "error": err_a}
    return accept


def prune_weights(coef, G, accept, lam=None, eps=None, rho=1.0, theta=1.0, max_steps=40,
                  tol=1e-4, max_iter=1000, progress=None):
    """000 Algorithm 5: the sparsest accepted beta along lamL, 10 lamL, 100 lamL, ...

    Parameters
    ----------
    coef : (T, k) coefficients a of alpha
    G : (T, T) Gram matrix (identity for random kitchen sinks)
    accept : beta -> (bool, metrics), e.g. from :func:`make_accept`
    lam : starting lamL, or None for 000 eq. 62 with ``eps``, ``rho``, ``theta``
    max_steps : cap on the number of Lasso solves

    Returns ``(beta, report)``: beta (T, k) has the zero rows of the pruned centres; the
    report lists the steps (lamL, non-zeros, criterion) and the accepted lamL (None when no
    Lasso solution was accepted, in which case beta = a).
    """
    coef = np.asarray(coef, dtype=float)
    coef = coef[:, None] if coef.ndim == 1 else coef
    T, k = coef.shape
    if lam is None:
        lam = lam_start(coef, T, 0.01 if eps is None else eps, rho, theta)
    lam = float(lam)
    if not lam > 0.0:
        raise ValueError(f"the starting lamL must be > 0, got {lam!r}")
    Q = np.ascontiguousarray(G, dtype=float) / T
    q = (G @ coef) / T
    yy = np.einsum("tk,tk->k", coef, G @ coef) / T
    progress = make_progress(progress)
    progress.start("prune", max_steps)
    beta = coef.copy()
    trial = coef.copy()
    steps, accepted_lam = [], None
    for step in range(max_steps):
        if not np.all(yy > 0):
            break
        trial, info = lasso_gram(Q, q, yy, lam, coef_init=trial, tol=tol, max_iter=max_iter,
                                 warn=False)
        trial = trial.reshape(T, k)
        ok, metrics = accept(trial)
        nnz = int(np.count_nonzero(np.any(trial != 0, axis=1)))
        steps.append({"lam": lam, "nnz": nnz, "accepted": ok,
                      "criterion": metrics["criterion"], "converged": all(info["converged"])})
        progress.update(step + 1, force=True, lam=lam, nnz=nnz, criterion=metrics["criterion"])
        if not ok:
            break
        beta, accepted_lam = trial.copy(), lam
        if nnz == 0:
            break
        lam *= 10.0
    progress.end()
    return beta, {"steps": steps, "lam": accepted_lam}
