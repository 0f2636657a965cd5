"""Greedy and data-dependent selection of features (seed 004 and the baselines of its Table 2).

* MFGA (Shahrampour & Tarokh 2018, Algorithm 1): from an empty active set, repeatedly add the
  candidate column(s) with the largest absolute gradient of the empirical risk and refit the
  regularised model on the whole active set (fully corrective). Squared loss gives OMP.
* LKRF (Sinha & Duchi 2016): weights q on M0 random features maximising the kernel alignment
  q^T v, v_m = (sum_n y_n phi_m(x_n))^2, over the simplex with a chi-square ball around uniform.
* EERF (Shahrampour, Beirami & Tarokh 2018): score S(omega) = |(1/N) sum_n y_n phi(x_n, omega)|,
  keep the top M.

Every method is fitted by the same learner, ``glm_fit``, minimising

    J(theta, b) = (1/N) sum_n w_n L(theta^T psi(x_n) + b, y_n) + (lam/2) ||theta||^2,
    N = sum_n w_n

with L(f, y) = (f - y)^2 / 2 (squared) or log(1 + exp(-y f)) (logistic, y in {-1, +1}), so
``lam`` means the same model for all of them (spec methods/greedy-mkl.md section 6, point 5).
The row weights w_n (``weights``; None: 1 each) enter every sum over rows -- the risk, its
gradient over the candidates, the normal equations and the Newton steps -- so a row of integer
weight c counts as c copies of it and one of weight 0 not at all.
The paper writes (y - f)^2 and does not say lam or lam/2: the squared-loss gradient here is half
the paper's, which leaves every argmax unchanged. The intercept b is optional and unpenalised.

This module sees features only through a dictionary object (``correlate``, ``columns``) or a
fitted feature map's ``_features_into``; it does no preprocessing.
"""

from __future__ import annotations

import math

import numpy as np

from scipy.linalg.blas import dsyrk

from ..exceptions import FitCancelled, NumericalError
from ..losses import LogisticLoss
from ..progress import make_progress
from ._ridge import solve_normal_equations

__all__ = ["glm_fit", "glm_objective", "row_mean", "train_error", "loss_derivative", "mfga",
           "DictionaryView", "DenseDictionary", "project_simplex", "lkrf_weights", "lkrf_select",
           "eerf_scores", "feature_alignment"]


# ----------------------------------------------------------------------------- losses

_LOGISTIC = LogisticLoss()


def loss_derivative(F: np.ndarray, Y: np.ndarray, loss: str) -> np.ndarray:
    """dL/df at the predictions F: f - y (squared), -y sigmoid(-y f) (logistic)."""
    return F - Y if loss == "squared" else _LOGISTIC.derivative(F, Y)


def row_mean(V: np.ndarray, weights=None) -> float:
    """The mean of the entries of ``V``, each row weighted by ``weights`` (its entries share
    the row's weight); ``np.mean(V)`` itself without weights."""
    if weights is None:
        return float(np.mean(V))
    return float(weights @ V.reshape(len(V), -1).mean(axis=1)) / float(weights.sum())


def train_error(F: np.ndarray, Y: np.ndarray, loss: str, weights=None) -> float:
    """The (weighted) mean over rows and outputs of the 0-1 error of the signs (logistic) or
    of the squared error (squared)."""
    return row_mean((F > 0) != (Y > 0) if loss == "logistic" else (F - Y) ** 2, weights)


def glm_objective(F: np.ndarray, Y: np.ndarray, coef: np.ndarray, loss: str, lam: float,
                  weights=None) -> float:
    """J = (1/N) sum w_n L(f_n, y_n) + (lam/2) ||theta||^2, summed over the outputs."""
    L = 0.5 * (F - Y) ** 2 if loss == "squared" else _LOGISTIC.value(F, Y)
    data = float(np.sum(L) if weights is None else weights @ L.reshape(len(L), -1).sum(axis=1))
    return float(data / _total(L, weights) + 0.5 * lam * np.sum(coef * coef))


# ----------------------------------------------------------------------------- the learner

def _weighted(V: np.ndarray, weights) -> np.ndarray:
    """The rows of V times their weights (V itself without weights)."""
    return V if weights is None else V * weights[:, None]


def _total(V: np.ndarray, weights) -> float:
    """N of the risk: the weight sum, or the rows."""
    return V.shape[0] if weights is None else float(weights.sum())


def _ridge_from_gram(AtA, AtY, col_sum, y_sum, N, lam, fit_intercept):
    """(A_c^T A_c / N + lam I) theta = A_c^T Y_c / N with centring when there is an intercept."""
    if fit_intercept:
        mu, ym = col_sum / N, y_sum / N
        AtA = AtA - N * np.outer(mu, mu)
        AtY = AtY - N * np.outer(mu, ym)
    coef, info = solve_normal_equations(AtA, AtY, N, lam)
    intercept = (ym - mu @ coef) if fit_intercept else np.zeros(AtY.shape[1])
    return coef, intercept, info


def _newton_logistic(A, y, lam, fit_intercept, w0, b0, tol, max_iter, gtol=1e-11, rw=None):
    """Damped Newton on J(w, b) for one +/-1 target; returns (w, b, iterations, converged).

    Stops when max |gradient| <= gtol or the Newton decrement is below tol |J|. The Hessian
    A^T diag(rw D) A / N + lam I is one BLAS rank-k update (dsyrk) per iteration; the
    predictions are carried through the line search so A w is never recomputed. ``rw``: the
    row weights (None: 1 each), N their sum.
    """
    p = A.shape[1]
    N = _total(A, rw)
    w, b = w0.copy(), float(b0)
    q = p + (1 if fit_intercept else 0)
    f = A @ w + b

    def risk(f):
        L = _LOGISTIC.value(f, y)
        return (np.sum(L) if rw is None else rw @ L) / N

    J = risk(f) + 0.5 * lam * (w @ w)
    for it in range(1, max_iter + 1):
        r = _LOGISTIC.derivative(f, y)              # dL/df
        if rw is not None:
            r = r * rw
        grad = np.empty(q)
        grad[:p] = A.T @ r / N + lam * w
        if fit_intercept:
            grad[p] = r.sum() / N
        # first-order optimality reached: stop before paying for another Hessian
        if q == 0 or np.max(np.abs(grad)) <= gtol:
            return w, b, it, True
        D = _LOGISTIC.second_derivative(f, y)
        if rw is not None:
            D = D * rw
        AD = np.asfortranarray(A * np.sqrt(D / N)[:, None])
        H = np.empty((q, q))
        if p:
            Hp = dsyrk(1.0, AD, trans=1, lower=0)
            H[:p, :p] = np.triu(Hp) + np.triu(Hp, 1).T
        if fit_intercept:
            H[:p, p] = H[p, :p] = A.T @ D / N
            H[p, p] = D.sum() / N
        H[np.arange(p), np.arange(p)] += lam
        step, _ = solve_normal_equations(H, -grad[:, None], 1, 0.0)
        step = step[:, 0]
        dec = -(grad @ step)                        # Newton decrement^2, >= 0 for H > 0
        if dec < 0 or not np.isfinite(dec):
            step, dec = -grad, grad @ grad          # H was not usable: gradient step
        if dec / 2 <= tol * max(1.0, abs(J)):
            return w, b, it, True
        df = A @ step[:p] + (step[p] if fit_intercept else 0.0)
        t = 1.0
        while True:                                 # Armijo backtracking
            w_new = w + t * step[:p]
            f_new = f + t * df
            J_new = risk(f_new) + 0.5 * lam * (w_new @ w_new)
            if J_new <= J - 0.25 * t * dec or t < 1e-10:
                break
            t *= 0.5
        w, J, f = w_new, J_new, f_new
        if fit_intercept:
            b = b + t * step[p]
    return w, b, max_iter, False


def glm_fit(A: np.ndarray, Y: np.ndarray, loss: str, lam: float, fit_intercept: bool = False,
            coef0=None, intercept0=None, tol: float = 1e-12, max_iter: int = 100, weights=None):
    """argmin_{theta, b} (1/N) sum w_n L(A theta + b, Y) + (lam/2) ||theta||^2, per output
    column (``weights`` w, None: 1 each; N = sum w).

    Squared loss: the normal equations by Cholesky (rwtool.solvers._ridge). Logistic: damped
    Newton from (coef0, intercept0), stopped when the gradient vanishes (1e-11) or the Newton
    decrement is below tol |J|.
    Returns ``(coef (p, K), intercept (K,), info)``.
    """
    p = A.shape[1]
    K = Y.shape[1]
    if loss == "squared":
        Aw, Yw, N = _weighted(A, weights), _weighted(Y, weights), _total(A, weights)
        coef, intercept, info = _ridge_from_gram(A.T @ Aw, Aw.T @ Y, Aw.sum(0), Yw.sum(0), N,
                                                 lam, fit_intercept)
        return coef, intercept, {"newton_iter": 0, "converged": True, "jitter": info["jitter"]}
    coef = np.zeros((p, K)) if coef0 is None else np.array(coef0, dtype=float)
    intercept = np.zeros(K) if intercept0 is None else np.array(intercept0, dtype=float)
    iters, ok = 0, True
    for k in range(K):
        w, b, it, conv = _newton_logistic(A, Y[:, k], lam, fit_intercept, coef[:, k],
                                          intercept[k], tol, max_iter, rw=weights)
        coef[:, k], intercept[k] = w, b
        iters, ok = max(iters, it), ok and conv
    return coef, intercept, {"newton_iter": iters, "converged": ok, "jitter": 0.0}


# ----------------------------------------------------------------------------- dictionaries

class DictionaryView:
    """The lazy Taylor/linear dictionary (TaylorMultiKernelFeatures) bound to training inputs X."""

    def __init__(self, feature_map, X: np.ndarray):
        self.feature_map = feature_map
        self.X = X
        self.n_columns = int(feature_map.n_output_)
        self._env = feature_map.envelope(X)         # e(x), shared by every column evaluation

    def correlate(self, R: np.ndarray) -> np.ndarray:
        return self.feature_map.correlate(self.X, R)

    def columns(self, cols, out: np.ndarray) -> np.ndarray:
        return self.feature_map._columns_into(self.X, np.asarray(cols, dtype=np.int64), out,
                                              self._env)

    def sq_norms(self) -> np.ndarray:
        return self.feature_map.column_sq_norms(self.X)


class DenseDictionary:
    """A materialised N x M0 dictionary Psi (small problems, tests, arbitrary feature maps)."""

    def __init__(self, Psi: np.ndarray):
        self.Psi = np.ascontiguousarray(Psi, dtype=np.float64)
        self.n_columns = self.Psi.shape[1]

    def correlate(self, R):
        return self.Psi.T @ R

    def columns(self, cols, out):
        out[...] = self.Psi[:, np.asarray(cols, dtype=np.int64)]
        return out

    def sq_norms(self):
        return np.einsum("ij,ij->j", self.Psi, self.Psi)


# ----------------------------------------------------------------------------- MFGA

def mfga(dictionary, Y: np.ndarray, loss: str, lam: float, n_select: int,
         per_step: int = 1, tol: float = 0.0, normalize: bool = False,
         fit_intercept: bool = False, newton_tol: float = 1e-12, progress=None, evaluate=None,
         weights=None):
    """Multi Feature Greedy Approximation (seed 004 Algorithm 1; OMP for the squared loss).

    At each step the gradient of the empirical risk over all M0 candidates is
    g = (1/N) Psi^T (w .* L'(f, y)) (row weights w, None: 1 each, N = sum w; one
    ``correlate`` call: O(N d^2) for Taylor order <= 2 by the Gram trick, never the N x M0
    matrix); the ``per_step`` inactive candidates with the largest |g_j|
    (lowest index on ties; with several outputs, the l2 norm of the row g_j, i.e. simultaneous
    selection) join the active set, and the regularised model is refitted on the whole active
    set, warm-started. ``normalize`` ranks by |g_j| / ||psi_j|| instead (not the paper's rule).
    With an intercept, it is fitted alone before the first selection.

    Stops after ``n_select`` features, or when max_j |g_j| <= tol over the inactive candidates
    (then no candidate can lower the regularised risk to first order).

    Returns ``(support, coef, intercept, path)``; path has per step: n_features, objective,
    train_error (0-1 for logistic, mean squared error for squared) and the keys ``evaluate``
    returns. Progress: stage "greedy path", done = features selected. On cancellation raises
    FitCancelled with ``partial=(support, coef, intercept, path)`` of the last completed refit.
    """
    progress = make_progress(progress)
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    n, K = Y.shape
    N = _total(Y, weights)
    y_sum = _weighted(Y, weights).sum(0)        # the same every step: summed once
    M0 = dictionary.n_columns
    M = int(min(n_select, M0))
    A = np.empty((n, M), order="F")
    norms = np.sqrt(np.maximum(dictionary.sq_norms(), 1e-300)) if normalize else None
    active = np.zeros(M0, dtype=bool)
    support: list[int] = []
    coef = np.zeros((0, K))
    intercept = np.zeros(K)
    if fit_intercept:
        _, intercept, _ = glm_fit(np.zeros((n, 0)), Y, loss, lam, True, tol=newton_tol,
                                  weights=weights)
    F = np.broadcast_to(intercept, (n, K)).copy()
    # Gram of the active columns, kept incrementally for the squared loss (O(N t s) per step).
    AtA = np.zeros((M, M))
    AtY = np.zeros((M, K))
    col_sum = np.zeros(M)
    path = {"n_features": [], "objective": [], "train_error": [], "max_gradient": []}

    def record(max_grad):
        path["n_features"].append(len(support))
        path["objective"].append(glm_objective(F, Y, coef, loss, lam, weights))
        err = train_error(F, Y, loss, weights)
        path["train_error"].append(err)
        path["max_gradient"].append(float(max_grad))
        extra = evaluate(np.array(support), coef, intercept) if evaluate is not None else {}
        for key, v in extra.items():
            path.setdefault(key, []).append(float(v))
        return {"n_features": len(support), "train_error": float(err),
                "objective": path["objective"][-1], **extra}

    progress.start("greedy path", M)
    stopped = "n_features"
    try:
        while len(support) < M:
            G = dictionary.correlate(_weighted(loss_derivative(F, Y, loss), weights)) / N
            G = G[:, None] if G.ndim == 1 else G
            if not np.isfinite(G).all():
                raise NumericalError(
                    f"the gradient over the {M0} candidates is not finite after {len(support)} "
                    f"selections", solver="mfga", iteration=len(support),
                    fix="standardise the inputs (standardize=True) or lower gauss_order "
                        "(high-order Taylor features of large inputs overflow)")
            score = np.abs(G[:, 0]) if K == 1 else np.sqrt(np.einsum("ij,ij->i", G, G))
            if normalize:
                score = score / norms
            score[active] = -np.inf
            best = float(score.max())
            if not best > tol:
                stopped = "tolerance"
                break
            s = min(int(per_step), M - len(support))
            # one pick: argmax takes the first of tied maxima, as the stable sort does
            new = np.argsort(-score, kind="stable")[:s] if s > 1 else np.array([np.argmax(score)])
            new = new[np.isfinite(score[new])]
            t = len(support)
            B = dictionary.columns(new, np.empty((n, len(new))))
            A[:, t:t + len(new)] = B
            support.extend(int(j) for j in new)
            active[new] = True
            t_new = len(support)
            if loss == "squared":
                Bw = _weighted(B, weights)
                AtA[:t, t:t_new] = A[:, :t].T @ Bw
                AtA[t:t_new, :t] = AtA[:t, t:t_new].T
                AtA[t:t_new, t:t_new] = B.T @ Bw
                AtY[t:t_new] = Bw.T @ Y
                col_sum[t:t_new] = Bw.sum(0)
                coef, intercept, _ = _ridge_from_gram(AtA[:t_new, :t_new], AtY[:t_new],
                                                      col_sum[:t_new], y_sum, N, lam,
                                                      fit_intercept)
            else:
                coef0 = np.vstack([coef, np.zeros((len(new), K))])
                coef, intercept, _ = glm_fit(A[:, :t_new], Y, loss, lam, fit_intercept, coef0,
                                             intercept, tol=newton_tol, weights=weights)
            F = A[:, :t_new] @ coef + intercept
            if not (np.isfinite(F).all() and np.isfinite(coef).all()):
                raise NumericalError(
                    f"the refit on {t_new} selected features gave non-finite coefficients or "
                    f"predictions", solver="mfga", iteration=t_new,
                    fix="standardise the inputs (standardize=True), raise reg, or lower "
                        "gauss_order (high-order Taylor features of large inputs overflow)")
            metrics = record(best)
            progress.update(t_new, **metrics)
        progress.end()
    except FitCancelled as exc:
        raise FitCancelled(str(exc), partial_model=bool(support),
                           partial=(np.array(support, dtype=np.int64), coef, intercept, path)
                           if support else None) from None
    path["stopped"] = stopped
    return np.array(support, dtype=np.int64), coef, intercept, path


# ----------------------------------------------------------------------------- LKRF / EERF

def project_simplex(v: np.ndarray, z: float = 1.0) -> np.ndarray:
    """Euclidean projection onto {q >= 0, sum q = z} (sort-based, O(n log n))."""
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - z
    ind = np.arange(1, len(v) + 1)
    rho = np.nonzero(u - css / ind > 0)[0][-1]
    tau = css[rho] / (rho + 1.0)
    return np.maximum(v - tau, 0.0)


def lkrf_weights(v: np.ndarray, rho: float, tol: float = 1e-12, max_iter: int = 200):
    """Sinha & Duchi (2016) weights: max_q q^T v s.t. q in the simplex, D_chi2(q || u) <= rho.

    D_chi2(q || u) = sum_m (M0 q_m - 1)^2 / M0 = M0 ||q - u||^2, u = 1/M0. The Lagrangian
    solution is q(lam) = Proj_simplex(u + v / lam); ||q(lam) - u|| decreases in lam, so lam is
    found by doubling then bisection (the authors' linear_chi_square.m). Returns ``(q, lam)``;
    lam = 0 when the constraint does not bind (all mass on argmax v).
    """
    v = np.asarray(v, dtype=float)
    M0 = len(v)
    u = np.full(M0, 1.0 / M0)
    r2 = rho / M0
    vmax = float(np.max(np.abs(v)))
    if vmax == 0.0 or rho <= 0.0:
        return u, math.inf
    vs = v / vmax                                   # scale-free multiplier
    vertex = np.zeros(M0)
    vertex[int(np.argmax(v))] = 1.0
    if np.sum((vertex - u) ** 2) <= r2:
        return vertex, 0.0

    def dist2(lam_):
        return float(np.sum((project_simplex(u + vs / lam_) - u) ** 2))

    lo, hi = 0.0, 1.0
    while dist2(hi) > r2:
        lo, hi = hi, 2.0 * hi
    for _ in range(max_iter):
        mid = 0.5 * (lo + hi)
        if dist2(mid) > r2:
            lo = mid
        else:
            hi = mid
        if hi - lo <= tol * hi:
            break
    return project_simplex(u + vs / hi), hi * vmax


def lkrf_select(q: np.ndarray, M: int, mode: str = "top", rng=None):
    """Indices of the M features kept from LKRF weights q, and their column scales.

    "top": the M largest q (seed 004's reading; ties broken by the lower index), unit scales.
    "sample": M i.i.d. draws from q (the authors' createOptimizedGaussianKernelParams.m).
    "weighted": the M largest q, column m scaled by sqrt(M q_m / sum_top q), so the learned
    kernel is the q-weighted sum of the selected features (pyrfm's transform).
    """
    q = np.asarray(q, dtype=float)
    if mode == "sample":
        idx = np.sort(rng.choice(len(q), size=M, replace=True, p=q / q.sum()))
        return idx, np.ones(M)
    idx = np.argsort(-q, kind="stable")[:M]
    if mode == "weighted":
        qs = q[idx]
        return idx, np.sqrt(M * qs / max(qs.sum(), 1e-300))
    return idx, np.ones(len(idx))


def feature_alignment(feature_map, X: np.ndarray, Y: np.ndarray, block_size: int | None = None,
                      progress=None) -> np.ndarray:
    """Phi^T Y (M0, K) for a fitted random feature map, accumulated over row blocks."""
    progress = make_progress(progress)
    out = np.zeros((feature_map.n_output_, Y.shape[1]))
    progress.start("features", X.shape[0])
    for start, stop, Phi in feature_map.blocks(X, block_size):
        out += Phi.T @ Y[start:stop]
        progress.update(stop)
    progress.end()
    return out


def eerf_scores(alignment: np.ndarray, N: float) -> np.ndarray:
    """EERF score |(1/N) sum_n y_n phi(x_n, omega_m)| (l2 over outputs) from Phi^T Y (with row
    weights: Phi^T (w .* Y) and N = sum w)."""
    a = alignment / N
    return np.abs(a[:, 0]) if a.shape[1] == 1 else np.sqrt(np.einsum("ij,ij->i", a, a))
