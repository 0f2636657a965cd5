"""Every closed-form RKHS-weighting feature against a Monte Carlo estimate of its integral.

psi_u(x) = E_{w~p}[K(u, w) phi(w, x)] is estimated with 10^6 draws of w ~ p; the closed form must
lie within 4.5 standard errors, for several (n, sigma, gamma), small and large ||x||, and x = 0.
The same draws also show that the formula printed in seed 003 for RWExpSign is wrong.
"""

import math

import numpy as np
import pytest
from scipy.special import erf

from rwtool.features import RWExpRelu, RWExpSign, RWRelu, RWSign, RWStumps

N_DRAWS = 1_000_000
CHUNK = 250_000


def _inputs(rng, n):
    return np.vstack([
        0.3 * rng.standard_normal((1, n)),   # small ||x||
        rng.standard_normal((2, n)),
        np.zeros((1, n)),                    # x = 0
        40.0 * rng.standard_normal((1, n)),  # large ||x||
    ])


def _monte_carlo(fmap, X, sigma, gamma, rng):
    """Mean and standard error of K(u_t, w) phi(w, x_i) over w ~ p, for every (i, t)."""
    T = fmap.n_features
    s1 = np.zeros((len(X), T))
    s2 = np.zeros((len(X), T))
    n = X.shape[1]
    for _ in range(N_DRAWS // CHUNK):
        if isinstance(fmap, RWStumps):
            idx = rng.integers(0, n, CHUNK)
            thr = rng.standard_normal(CHUNK) * sigma
            K = (fmap.idx_[:, None] == idx[None, :]) * np.exp(
                -(fmap.thr_[:, None] - thr[None, :]) ** 2 / (2 * gamma ** 2))
            phi = np.sign(X[:, idx] - thr[None, :])
        else:
            W = rng.standard_normal((CHUNK, n)) * sigma
            U = fmap.W_
            if isinstance(fmap, (RWSign, RWRelu)):
                d2 = (U ** 2).sum(1)[:, None] + (W ** 2).sum(1)[None, :] - 2 * U @ W.T
                K = np.exp(-np.maximum(d2, 0) / (2 * gamma ** 2))
            else:
                K = np.exp(U @ W.T / (2 * gamma ** 2))
            Z = X @ W.T
            phi = np.sign(Z) if isinstance(fmap, (RWSign, RWExpSign)) else np.maximum(Z, 0)
        s1 += phi @ K.T
        s2 += (phi ** 2) @ (K ** 2).T
    mean = s1 / N_DRAWS
    var = np.maximum(s2 / N_DRAWS - mean ** 2, 0.0)
    return mean, np.sqrt(var / N_DRAWS)


CASES = [
    (RWSign, {}, 1, 1.0, 0.7),
    (RWSign, {}, 4, 0.6, 1.5),
    (RWRelu, {}, 1, 1.3, 0.9),
    (RWRelu, {}, 4, 0.8, 1.2),
    (RWExpSign, {"normalize": False}, 2, 0.5, 0.9),
    (RWExpSign, {"normalize": False}, 5, 0.4, 1.1),
    (RWExpRelu, {"normalize": False}, 2, 0.5, 0.9),
    (RWExpRelu, {"normalize": False}, 5, 0.4, 1.1),
    (RWStumps, {}, 1, 1.0, 0.5),
    (RWStumps, {}, 3, 0.7, 1.6),
]


@pytest.mark.parametrize("cls,kw,n,sigma,gamma", CASES,
                         ids=[f"{c.__name__}-n{n}-s{s}-g{g}" for c, _, n, s, g in CASES])
def test_closed_form_matches_monte_carlo(cls, kw, n, sigma, gamma):
    rng = np.random.default_rng(hash((cls.__name__, n)) % 2**32)
    X = _inputs(rng, n)
    fmap = cls(n_features=4, sigma=sigma, gamma=gamma, random_state=7, **kw).fit(X)
    psi = fmap.transform(X)
    mean, se = _monte_carlo(fmap, X, sigma, gamma, rng)
    zero = se == 0  # phi(w, 0) = 0 for every w: the integral is exactly 0
    np.testing.assert_allclose(psi[zero], 0.0, atol=1e-300)
    z = np.abs(psi[~zero] - mean[~zero]) / se[~zero]
    assert z.max() < 4.5, (z.max(), psi, mean)


def test_seed_003_printed_rwexpsign_form_is_wrong():
    """The sqrt(8 pi) printed in 003 Table 3 fails the same Monte Carlo check (the test can fail)."""
    rng = np.random.default_rng(3)
    sigma, gamma, n = 0.5, 0.9, 2
    X = rng.standard_normal((3, n))
    fmap = RWExpSign(n_features=3, sigma=sigma, gamma=gamma, normalize=False, random_state=1).fit(X)
    mean, se = _monte_carlo(fmap, X, sigma, gamma, rng)
    U = fmap.W_
    r = (X @ U.T) / np.linalg.norm(X, axis=1)[:, None]
    printed = np.exp(sigma ** 2 * (U ** 2).sum(1) / (8 * gamma ** 4)) * erf(
        sigma * r / (math.sqrt(8 * math.pi) * gamma ** 2))
    assert (np.abs(printed - mean) / se).max() > 20
    assert (np.abs(fmap.transform(X) - mean) / se).max() < 4.5


@pytest.mark.parametrize("cls", [RWExpSign, RWExpRelu])
def test_normalised_exponential_features_are_the_scaled_raw_ones(cls):
    """normalize=True multiplies feature t by d_t = K(w_t, w_t)^(-1/2) and G by d d^T."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 3))
    raw = cls(n_features=30, sigma=0.7, gamma=1.1, normalize=False, random_state=2).fit(X)
    nrm = cls(n_features=30, sigma=0.7, gamma=1.1, normalize=True, random_state=2).fit(X)
    d = np.exp(-(raw.W_ ** 2).sum(1) / (4 * 1.1 ** 2))
    np.testing.assert_allclose(nrm.transform(X), raw.transform(X) * d, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(nrm.gram(), raw.gram() * np.outer(d, d), rtol=1e-10)
    np.testing.assert_allclose(np.diag(nrm.gram()), 1.0)


def test_exponential_overflow_refused_with_fix_or_computed_stably():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((10, 2000))  # ||w||^2 / (2 g^2) ~ 900: exp overflows
    with pytest.raises(ValueError, match="normalize=True"):
        RWExpSign(n_features=20, sigma=1.0, gamma=1.05, normalize=False, random_state=0).fit(X)
    fmap = RWExpRelu(n_features=20, sigma=1.0, gamma=1.05, random_state=0).fit(X)
    P = fmap.transform(X)
    assert np.isfinite(P).all() and np.isfinite(fmap.gram()).all()
