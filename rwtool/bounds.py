"""The instantiation constants and the generalisation / pruning bounds (spec section 4.6).

theta bounds the operator norm H -> L_inf (|Lambda alpha (x)| <= theta ||alpha||_H, 003 Table 2)
and kappa^2 = sup_w K(w, w) (003 eq. 50); both come from the fitted map. tau (003 eq. 56),
tau = sup_x sqrt(E_w phi(w, x)^2), is estimated as in 003 Section 7.3: the largest over a sample
of sqrt((1/T') sum_t phi(u_t, x)^2) for fresh centres u_t ~ p.

Bounds, with B = ||alpha||_H taken a posteriori (000 Appendix), F = theta B the bound on |f|,
Y = max |y| in the units the model is fit in (1 for +/-1 class targets; standardised regression
targets often exceed 1, e.g. 5.9 on abalone), rho = the loss's Lipschitz constant on |f| <= F,
|y| <= Y and M its largest value there (losses.py; for the squared loss (f - y)^2 / 2 these are
rho = B theta + Y and M = (B theta + Y)^2 / 2, half the 000 values 2 (B theta + 1) and
(B theta + 1)^2 when Y = 1):

- 000 Theorem 10 (eq. 71):  L_D <= L_S + 2 B rho theta / sqrt(m) + M sqrt(log(1/delta) / (2m))
- 003 Theorem 6.2 (eq. 89): L_D - L_S <= 2 rho theta B / sqrt(m) (1 + sqrt(log(1/delta) / 2))
- 003 Theorem 6.5 (eq. 95): L_D - L_S <= 2 rho tau B2 / sqrt(m) (1 + sqrt(log(1/delta) / 2)),
  B2 = ||alpha||_{L2(p)}, estimated by ||alpha||^2 ~ (1/T') sum_t alpha(u_t)^2 over fresh u_t
- 000 Theorem 8 (eq. 64/81): L_D(beta) - L_D(alpha) <= L_S(beta) - L_S(alpha)
  + rho theta C / sqrt(m) (2 + sqrt(2 log(1/delta))),  C = ||alpha - beta||_H.

This module computes numbers; it does not fit or prune.
"""

from __future__ import annotations

import math

import numpy as np

from .losses import get_loss

__all__ = ["rademacher_bound", "gap_theorem62", "gap_theorem65", "pruning_bound", "fresh_map",
           "estimate_tau", "l2p_norm"]


def _check_delta(delta):
    delta = float(delta)
    if not (0.0 < delta < 1.0):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    return delta


def rademacher_bound(train_loss, norm, theta, m, delta=0.05, loss="squared",
                     y_bound=1.0) -> float:
    """000 Theorem 10 (eq. 71): the bound on L_D for B = ``norm`` = ||alpha||_H, |y| <= y_bound."""
    delta = _check_delta(delta)
    loss = get_loss(loss)
    F = theta * norm
    rho, M = loss.lipschitz(F, y_bound), loss.max_value(F, y_bound)
    return float(train_loss + 2.0 * norm * rho * theta / math.sqrt(m)
                 + M * math.sqrt(math.log(1.0 / delta) / (2.0 * m)))


def gap_theorem62(norm, theta, m, delta=0.05, loss="squared", y_bound=1.0) -> float:
    """003 Theorem 6.2 (eq. 89): the bound on L_D - L_S for ||alpha||_H <= ``norm``."""
    delta = _check_delta(delta)
    rho = get_loss(loss).lipschitz(theta * norm, y_bound)
    return float(2.0 * rho * theta * norm / math.sqrt(m)
                 * (1.0 + math.sqrt(math.log(1.0 / delta) / 2.0)))


def gap_theorem65(l2_norm, tau, m, delta=0.05, loss="squared", y_bound=1.0) -> float:
    """003 Theorem 6.5 (eq. 95): the bound on L_D - L_S for ||alpha||_{L2(p)} <= ``l2_norm``."""
    delta = _check_delta(delta)
    rho = get_loss(loss).lipschitz(tau * l2_norm, y_bound)
    return float(2.0 * rho * tau * l2_norm / math.sqrt(m)
                 * (1.0 + math.sqrt(math.log(1.0 / delta) / 2.0)))


def pruning_bound(loss_beta, loss_alpha, norm_diff, theta, m, rho, delta=0.05) -> float:
    """000 Theorem 8: the bound on L_D(beta) - L_D(alpha) for C = ``norm_diff``."""
    delta = _check_delta(delta)
    return float(loss_beta - loss_alpha + rho * theta * norm_diff / math.sqrt(m)
                 * (2.0 + math.sqrt(2.0 * math.log(1.0 / delta))))


def fresh_map(feature_map, n_draws, random_state):
    """An independent draw of ``n_draws`` centres u_t ~ p from the same instantiation."""
    params = feature_map.get_params(deep=False)
    params.update(n_features=int(n_draws), random_state=random_state)
    if "gamma" in params:
        params["gamma"] = feature_map.gamma_  # the same kernel, whatever rule set it
    new = type(feature_map)(**params)
    n = feature_map.n_features_in_
    new.fit(np.empty((0, n)))      # the centres; its data constants are the map's
    for attr in ("x_norm_max_", "theta_", "kappa_"):
        if hasattr(feature_map, attr):
            setattr(new, attr, getattr(feature_map, attr))
    return new


def _cross_kernel(feature_map, other):
    """K(w_s, u_t) between the map's centres and another draw's, in the map's basis."""
    T = feature_map.n_features
    state = feature_map.fitted_state()
    ostate = other.fitted_state()
    both = {}
    for key, value in state.items():
        if feature_map.per_centre(key, value):
            value = np.concatenate([value, ostate[key]])
        both[key] = value
    params = feature_map.get_params(deep=False)
    params["n_features"] = T + other.n_features
    joint = type(feature_map).from_fitted_state(params, both)
    return joint.kernel_matrix(rows=np.arange(T), cols=np.arange(T, T + other.n_features))


def l2p_norm(feature_map, coef, n_draws=1000, random_state=0) -> np.ndarray:
    """||alpha||_{L2(p)} ~ sqrt((1/T') sum_t alpha(u_t)^2) over fresh u_t ~ p (003 Sec. 7.3).

    ``coef`` (T,) or (T, k) are the coefficients on the map's features; with the normalised
    sections of the exponential kernels (rkhs.py) feature t is K(w_t, .) / sqrt(K(w_t, w_t)),
    which the cross kernel already includes, and alpha(u) needs the factor 1 / sqrt(K(u, u)).
    """
    fresh = fresh_map(feature_map, n_draws, random_state)
    Kx = _cross_kernel(feature_map, fresh)                  # (T, T')
    coef = np.asarray(coef, dtype=float)
    C = coef[:, None] if coef.ndim == 1 else coef
    vals = Kx.T @ C                                         # alpha(u_t), map's basis
    if getattr(feature_map, "normalized_", False):
        sq = np.einsum("ij,ij->i", fresh.W_, fresh.W_)
        vals = vals * np.exp(sq / (4.0 * feature_map.gamma_ ** 2))[:, None]
    out = np.sqrt(np.mean(vals * vals, axis=0))
    return out[0] if coef.ndim == 1 else out


def estimate_tau(feature_map, X, n_draws=1000, random_state=0, tick=None) -> float:
    """tau ~ max_x sqrt((1/T') sum_t phi(u_t, x)^2) over the rows of X (003 Section 7.3).

    ``tick(rows_done)`` is called after each block of rows when given (progress and
    cancellation; the value does not depend on the blocks: a maximum of per-row values)."""
    fresh = fresh_map(feature_map, n_draws, random_state)
    best = 0.0
    # blocks of rows x n_draws floats, about 8 MB each whatever the number of rows
    step = max(1, 2**20 // max(1, int(n_draws)))
    for start in range(0, X.shape[0], step):
        P = fresh.base_predictor(np.ascontiguousarray(X[start:start + step]))
        best = max(best, float(np.sqrt(np.max(np.einsum("ij,ij->i", P, P)) / P.shape[1])))
        if tick is not None:
            tick(min(X.shape[0], start + step))
    return best
