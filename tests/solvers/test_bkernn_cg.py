"""BKerNN at scale (issue 13): sorted prefix-sum kernel products, the CG ridge step, the CG fit.

Oracles: the dense Brownian Gram matrix min(|a|, |b|) 1{ab > 0} built by numpy, centred with an
explicit Pi; numpy's dense solve; the dense (Cholesky) path of Algorithm 1; tracemalloc for the
memory of prediction.
"""

import functools
import math
import tracemalloc
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rwtool.solvers._bkernn_cg as cgmod
import rwtool.solvers._bkernn as core
from rwtool.estimators._bkernn import BKerNNClassifier, BKerNNRegressor
from rwtool.solvers._bkernn_cg import (BlockPreconditioner, SortedProjections, cg_ridge,
                                       kernel_product)
from rwtool.solvers._bkernn import PENALTIES, fit_particles
from rwtool.exceptions import NumericalWarning
from rwtool.progress import FitCancelled, Progress


def centred_brownian(X, W, X2=None):
    """Pi K Pi (or K(X2, X) Pi-centred as the predictor uses it) from the min-form kernel."""
    P = X @ W
    K = np.zeros((len(X), len(X)))
    for j in range(W.shape[1]):
        a = P[:, j]
        K += np.minimum(np.abs(a[:, None]), np.abs(a[None, :])) * (a[:, None] * a[None, :] > 0)
    K /= W.shape[1]
    Pi = np.eye(len(X)) - 1.0 / len(X)
    return Pi @ K @ Pi


def awkward_inputs(rng, n=240, d=4, m=9):
    """Ties (repeated rows), zero rows (projections exactly 0), mixed signs, a dead particle, and
    a particle whose projections sit far from 0."""
    X = rng.standard_normal((n, d))
    X[::6] = X[1::6][: len(X[::6])]
    X[::11] = 0.0
    X[5::13, 0] = np.round(X[5::13, 0], 1)
    W = rng.standard_normal((d, m))
    W[:, 3] = 0.0
    W[:, 4] = [0.0, 0.0, 0.0, 1.0]
    X[:, 3] = np.round(X[:, 3])                     # many exact ties along particle 4
    X[:, 2] += 40.0                                 # offsets: projections far from 0
    return X, W


@pytest.mark.parametrize("q", [1, 3])
def test_fast_product_equals_dense_centred_kernel(q):
    rng = np.random.default_rng(7)
    X, W = awkward_inputs(rng)
    PT = np.ascontiguousarray((X @ W).T)
    Kt = centred_brownian(X, W)
    U = rng.standard_normal((len(X), q))
    for shift in (0.0, 2.5):
        want = Kt @ U + shift * U
        got = kernel_product(SortedProjections(PT), U, shift)
        assert np.max(np.abs(got - want)) <= 1e-12 * np.max(np.abs(want))


def _dense_brownian_product(PT, U, shift, v):
    """P_v V K V P_v U + shift U with the full Brownian kernel (|a| + |b| - |a - b|) / 2 of
    the projections PT (m x n) and P_v = I - v v^T / v^T v (v = 1: Pi): numpy, n x n."""
    m, n = PT.shape
    K = np.zeros((n, n))
    for p in PT:
        K += (np.abs(p)[:, None] + np.abs(p)[None, :] - np.abs(p[:, None] - p[None, :])) / 2
    K /= m
    w = np.ones(n) if v is None else v
    Pv = np.eye(n) - np.outer(w, w) / (w @ w)
    return Pv @ (w[:, None] * (K @ (w[:, None] * (Pv @ U)))) + shift * U


@st.composite
def _projections(draw):
    """Projections of n = 1, 2, 3, 5, 17 or 64 rows: Gaussian, on a few values (ties), with
    repeated rows, a constant particle (a constant input column), a dead one (all 0, signed
    zeros), any scale from 1e-150 to 1e150 and an offset far from 0; row weights None or in
    [0, 3] with some 0."""
    n = draw(st.sampled_from([1, 2, 3, 5, 17, 64]))
    m = draw(st.integers(1, 7))
    q = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    PT = rng.standard_normal((m, n))
    if draw(st.booleans()):
        PT = np.round(PT * draw(st.sampled_from([0.5, 2.0])))          # ties
    if n > 1 and draw(st.booleans()):
        PT[:, rng.integers(0, n, n // 2 + 1)] = PT[:, [0]]              # repeated rows
    if draw(st.booleans()):
        PT[rng.integers(0, m)] = draw(st.sampled_from([3.0, -1.5]))     # constant
    if draw(st.booleans()):
        PT[rng.integers(0, m)] = np.where(rng.random(n) < 0.5, 0.0, -0.0)   # dead
    PT *= 10.0 ** draw(st.integers(-150, 150))
    if draw(st.booleans()):
        PT += 1e3 * np.abs(PT).max()
    v = None
    if draw(st.booleans()):
        v = np.sqrt(rng.uniform(0.0, 3.0, n))
        v[rng.random(n) < 0.3] = 0.0
        v[rng.integers(0, n)] = 1.0                       # not all 0
    U = rng.standard_normal((n, q))
    return np.ascontiguousarray(PT), U, v, draw(st.sampled_from([0.0, 0.7]))


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(case=_projections())
def test_one_pass_product_equals_the_dense_brownian_product(case):
    """The one-pass product (the total T_j left out for the centring to remove) against the
    full Brownian kernel matrix centred densely, P_v V K V P_v U + shift U, on ties, repeated
    rows, n = 1 and 2, constant and dead particles, weights of 0, scales 1e-150 to 1e150:
    within 1e-13 of |p| |v|^2 |U| (the dense form's own rounding at an offset far from 0)."""
    PT, U, v, shift = case
    got = kernel_product(SortedProjections(PT), U, shift, v=v)
    want = _dense_brownian_product(PT, U, shift, v)
    vmax = 1.0 if v is None else float(np.max(v)) ** 2
    ref = max(np.abs(PT).max() * vmax * len(U), shift) * np.abs(U).max()
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13 * ref + 1e-300)
    if len(U) == 1:                               # Pi = 0: the shift alone, exactly
        np.testing.assert_array_equal(got, shift * U)


def test_fast_product_single_particle_and_constant_projections():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 2))
    for W in (np.array([[1.0], [-2.0]]), np.zeros((2, 1))):
        PT = np.ascontiguousarray((X @ W).T)
        U = rng.standard_normal((50, 2))
        want = centred_brownian(X, W) @ U
        got = kernel_product(SortedProjections(PT), U)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * max(1.0, np.abs(want).max()))


def test_share_count_does_not_change_the_product_or_the_preconditioner(monkeypatch):
    """The kernels share particles (the product: groups of them) among threads: the same bits
    with 1, 2 and 3 shares (numba's thread count read as that, a share as small as one unit of
    work), weighted or not; the product also equals the dense oracle."""
    import numba

    import rwtool.threads
    rng = np.random.default_rng(2)
    X, W = awkward_inputs(rng)
    PT = np.ascontiguousarray((X @ W).T)
    U = rng.standard_normal((len(X), 2))
    v = np.sqrt(rng.uniform(0.2, 2.0, len(X)))
    monkeypatch.setattr(rwtool.threads, "PAIRS_PER_THREAD", 1)
    got = []
    for shares in (1, 2, 3):
        monkeypatch.setattr(numba, "get_num_threads", lambda: shares)
        sp = SortedProjections(PT)
        out = [sp.order, sp.values, kernel_product(sp, U, 1.0)]
        for w in (None, v):
            pre = BlockPreconditioner(sp, 0.5, 6, v=w)
            out += [pre.beta, pre.L, pre.apply(U), kernel_product(sp, U, 1.0, v=w)]
        got.append(out)
    for other in got[1:]:
        for a, b in zip(got[0], other):
            np.testing.assert_array_equal(a, b)
    want = centred_brownian(X, W) @ U + U
    np.testing.assert_allclose(got[0][2], want, rtol=0, atol=1e-12 * np.abs(want).max())


@pytest.mark.parametrize("blocks", [0, 6])
def test_cg_ridge_solves_the_dense_system(blocks):
    rng = np.random.default_rng(3)
    X, W = awkward_inputs(rng)
    n = len(X)
    PT = np.ascontiguousarray((X @ W).T)
    Y = rng.standard_normal((n, 3))
    Yc = Y - Y.mean(axis=0)
    shift = 0.05 * n * 0.01
    want = np.linalg.solve(centred_brownian(X, W) + shift * np.eye(n), Yc)
    sp = SortedProjections(PT)
    pre = BlockPreconditioner(sp, shift, blocks) if blocks else None
    A, R, its = cg_ridge(sp, Yc, shift, tol=1e-12, precond=pre)
    assert its > 0
    np.testing.assert_allclose(A, want, rtol=0, atol=1e-9 * np.abs(want).max())
    np.testing.assert_allclose(A.sum(axis=0), 0.0, atol=1e-9 * np.abs(want).max())
    # the returned residual is the true one
    np.testing.assert_allclose(R, Yc - kernel_product(sp, A, shift), atol=1e-12 * n)
    # warm start from the solution: nothing left to do
    _, _, its0 = cg_ridge(sp, Yc, shift, x0=A, tol=1e-8, precond=pre)
    assert its0 == 0


@pytest.mark.parametrize("weighted", [False, True])
def test_warm_start_is_scaled_to_its_best_multiple(weighted):
    """cg_ridge starts from c x0 with c the minimiser of phi on x0's line (per column): in
    M's norm no further from the dense solution than x0 itself or 0, however poor x0 (here
    further than 0), and as near as the best multiple on a grid; the solve from it still
    reaches the dense solution."""
    rng = np.random.default_rng(8)
    X, W = awkward_inputs(rng)
    n = len(X)
    sp = SortedProjections(np.ascontiguousarray((X @ W).T))
    v = np.sqrt(rng.uniform(0.2, 2.0, n)) if weighted else None
    V = np.diag(v) if weighted else np.eye(n)
    Pv = np.eye(n) - (np.outer(v, v) / (v @ v) if weighted else 1.0 / n)
    Yc = Pv @ V @ rng.standard_normal((n, 2))
    shift = 0.5
    M = Pv @ V @ centred_brownian(X, W) @ V @ Pv + shift * np.eye(n)
    want = np.linalg.solve(M, Yc)

    def energy(E):
        return np.einsum("ij,ij->j", E, M @ E)

    # the solution plus an error with twice its energy (in the range of P_v)
    delta = Pv @ rng.standard_normal((n, 2))
    x0 = want + delta * np.sqrt(2 * energy(want) / energy(delta))

    with pytest.warns(NumericalWarning):             # no iteration allowed: the start itself
        start, R, its = cg_ridge(sp, Yc, shift, x0=x0, max_iter=0, v=v)
    assert its == 0
    assert np.all(energy(x0 - want) > energy(-want))  # x0 itself is worse than 0
    err = energy(start - want)
    assert np.all(err <= energy(x0 - want) * (1 + 1e-9))
    assert np.all(err <= energy(-want) * (1 + 1e-9))
    grid = np.linspace(0.0, 2.0, 401)
    best = [min(energy(c * x0[:, [k]] - want[:, [k]])[0] for c in grid) for k in range(2)]
    assert np.all(err <= np.array(best) * (1 + 1e-9))
    np.testing.assert_allclose(R, Yc - M @ start, atol=1e-10 * np.abs(Yc).max())
    A, _, _ = cg_ridge(sp, Yc, shift, x0=x0, tol=1e-12, v=v)
    np.testing.assert_allclose(A, want, rtol=0, atol=1e-9 * np.abs(want).max())


def _weighted_system(seed, weighted, n=90, q=2):
    """A system of awkward_inputs by the dense oracle: M = P_v V K~ V P_v + shift I (with
    some weights 0), Y~ = P_v V Y, the CG objective phi(a) = a^T M a / 2 - Y~^T a per column."""
    rng = np.random.default_rng(seed)
    X, W = awkward_inputs(rng, n=n)
    sp = SortedProjections(np.ascontiguousarray((X @ W).T))
    v = None
    w = np.ones(n)
    if weighted:
        w = np.sqrt(rng.uniform(0.2, 2.0, n))
        w[::7] = 0.0
        v = w
    Pv = np.eye(n) - np.outer(w, w) / (w @ w)
    Yc = Pv @ (w[:, None] * rng.standard_normal((n, q)))
    shift = 0.5
    M = Pv @ np.diag(w) @ centred_brownian(X, W) @ np.diag(w) @ Pv + shift * np.eye(n)

    def phi(A):
        return 0.5 * np.einsum("ij,ij->j", A, M @ A) - np.einsum("ij,ij->j", Yc, A)

    return sp, Yc, shift, v, M, Pv, phi


def _best_on_line(x0, M, Pv, Yc):
    """The minimiser c u of phi on the line of u = P_v x0 (scaled to a largest entry of 1
    first, so that u^T M u neither overflows nor underflows), densely; 0 for u = 0 (a
    constant x0 without weights: the dense P_v leaves rounding noise there)."""
    out = np.zeros_like(Yc)
    for k in range(Yc.shape[1]):
        top = np.max(np.abs(x0[:, k]))
        if not (np.isfinite(top) and top > 0):
            continue
        u = Pv @ (x0[:, k] / top)
        if np.max(np.abs(u)) <= 1e-12:
            continue
        uMu = u @ M @ u
        if uMu > 0:
            out[:, k] = (Yc[:, k] @ u / uMu) * u
    return out


@pytest.mark.parametrize("weighted", [False, True])
def test_warm_start_edge_cases_against_the_dense_objective(weighted):
    """The scaled start for starts of no direction (0, constants, which the centring makes 0),
    NaN or inf entries, scales whose x0^T M x0 overflows or underflows (1e200, 1e-200,
    subnormals), the opposite direction: finite, phi(start) <= phi(0) = 0, <= phi(x0) where
    x0 is finite, and phi at the dense best multiple (the columns of 1e200 / 1e-200 fell back
    to 0 before, NaN ones gave a NaN solution with no warning)."""
    sp, Yc, shift, v, M, Pv, phi = _weighted_system(4, weighted)
    n = len(Yc)
    want = np.linalg.solve(M, Yc)
    rng = np.random.default_rng(5)
    good = want + 0.3 * Pv @ rng.standard_normal(want.shape) * np.abs(want).max()
    one_nan = good.copy()
    one_nan[3] = np.nan
    starts = {"zero": np.zeros((n, 2)), "constant": np.full((n, 2), 7.0),
              "nan": np.full((n, 2), np.nan), "inf": np.c_[good[:, 0], np.full(n, -np.inf)],
              "one nan": one_nan, "1e200": 1e200 * good, "1e-200": 1e-200 * good,
              "subnormal": 1e-320 * np.sign(good), "opposite": -good,
              "mixed": np.c_[1e250 * good[:, 0], 1e-250 * good[:, 1]]}
    scale = np.abs(phi(want)).max()
    for name, x0 in starts.items():
        with pytest.warns(NumericalWarning):             # no iteration allowed: the start
            start, R, its = cg_ridge(sp, Yc, shift, x0=x0, max_iter=0, v=v)
        assert its == 0
        assert np.all(np.isfinite(start)) and np.all(np.isfinite(R)), name
        got = phi(start)
        assert np.all(got <= 1e-12 * scale), name
        with np.errstate(all="ignore"):
            old = phi(x0)
        finite = np.isfinite(old)
        assert np.all(got[finite] <= old[finite] + 1e-12 * scale), name
        np.testing.assert_allclose(got, phi(_best_on_line(x0, M, Pv, Yc)), rtol=0,
                                   atol=1e-12 * scale, err_msg=name)
        # the residual returned is the start's own
        np.testing.assert_allclose(R, Yc - M @ start, rtol=0, atol=1e-10 * np.abs(Yc).max())
        # and the solve from it reaches the dense solution
        A, _, _ = cg_ridge(sp, Yc, shift, x0=x0, tol=1e-12, v=v)
        np.testing.assert_allclose(A, want, rtol=0, atol=1e-9 * np.abs(want).max(),
                                   err_msg=name)


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(a=st.floats(-3, 3), b=st.floats(0, 3), e=st.integers(-300, 300),
       weighted=st.booleans(), seed=st.integers(0, 3))
def test_scaled_start_is_no_worse_than_the_start_or_zero(a, b, e, weighted, seed):
    """x0 = 10^e (a x* + b noise), x* the dense solution: the start's phi is at most phi(0),
    phi(x0) and phi on a dense grid of multiples of x0 (the objective evaluated densely)."""
    sp, Yc, shift, v, M, Pv, phi = _system(weighted, seed)
    want = np.linalg.solve(M, Yc)
    noise = np.random.default_rng(seed).standard_normal(want.shape) * np.abs(want).max()
    x0 = (a * want + b * noise) * 10.0 ** e
    with warnings.catch_warnings():              # no iteration allowed: the start itself
        warnings.simplefilter("ignore", NumericalWarning)
        start, _, _ = cg_ridge(sp, Yc, shift, x0=x0, max_iter=0, v=v)
    got = phi(start)
    tol = 1e-11 * np.abs(phi(want)).max()
    assert np.all(got <= tol)
    with np.errstate(all="ignore"):
        old = phi(x0)
    assert np.all(got[np.isfinite(old)] <= old[np.isfinite(old)] + tol)
    top = np.max(np.abs(x0), axis=0)
    if np.all(top > 0):
        unit = x0 / top
        lo = phi(_best_on_line(x0, M, Pv, Yc))
        assert np.all(np.abs(got - lo) <= tol)
        for c in np.linspace(-40.0, 40.0, 801):
            assert np.all(got <= phi(c * unit) + tol)


@functools.cache
def _system(weighted, seed):
    """The property test's systems, built once each (a dense n x n oracle)."""
    return _weighted_system(10 + seed, weighted, n=60)


def test_preconditioner_with_one_block_per_point_is_the_exact_inverse():
    """With B = n every gap keeps its own step: F F^T is K~ itself (the step-function identity),
    so Woodbury gives (K~ + s I)^{-1} exactly and preconditioned CG stops after one step."""
    rng = np.random.default_rng(8)
    X, W = awkward_inputs(rng, n=90)
    n = len(X)
    sp = SortedProjections(np.ascontiguousarray((X @ W).T))
    shift = 0.7
    pre = BlockPreconditioner(sp, shift, blocks=n)
    R = rng.standard_normal((n, 2))
    R -= R.mean(axis=0)
    want = np.linalg.solve(centred_brownian(X, W) + shift * np.eye(n), R)
    np.testing.assert_allclose(pre.apply(R), want, rtol=0, atol=1e-9 * np.abs(want).max())
    _, _, its = cg_ridge(sp, R, shift, tol=1e-9, precond=pre)
    assert its <= 2


def _gaussian_system(seed, n, d, m, scale, q):
    """Gaussian rows, particles N(0, scale^2 / d), their sorted projections and centred
    Gaussian targets (n x q)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    W = scale * rng.standard_normal((d, m)) / math.sqrt(d)
    sp = SortedProjections(np.ascontiguousarray((X @ W).T))
    Yc = rng.standard_normal((n, q))
    Yc -= Yc.mean(axis=0)
    return X, sp, Yc


def test_preconditioner_cuts_iterations():
    X, sp, Yc = _gaussian_system(4, n=3000, d=10, m=20, scale=3, q=1)
    shift = np.max(np.linalg.norm(X, axis=1))
    A0, _, plain = cg_ridge(sp, Yc, shift, tol=1e-8)
    A1, _, fast = cg_ridge(sp, Yc, shift, tol=1e-8, precond=BlockPreconditioner(sp, shift, 16))
    assert fast < 0.4 * plain
    np.testing.assert_allclose(A1, A0, atol=1e-6 * np.abs(A0).max())


def _problem(n=160, d=5, m=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d))
    y = np.abs(np.sin(2 * X[:, 0] + X[:, 1])) + 0.1 * rng.standard_normal(n)
    Yc = (y - y.mean())[:, None]
    W0 = rng.standard_normal((d, m)) / math.sqrt(d)
    return X, Yc, W0, 2 * np.max(np.linalg.norm(X, axis=1)) / n


@pytest.mark.parametrize("penalty", PENALTIES)
@pytest.mark.parametrize("blocks", [0, "auto"])
def test_cg_fit_follows_the_dense_fit(penalty, blocks):
    X, Yc, W0, lam = _problem()
    kw = dict(step_size=500.0, max_iter=12)
    dense = fit_particles(X, Yc, W0, lam, penalty, kernel_solver="dense", **kw)
    cg = fit_particles(X, Yc, W0, lam, penalty, kernel_solver="cg", cg_tol=1e-11,
                       precond_blocks=blocks, **kw)
    assert cg["kernel_solver"] == "cg" and cg["cg_iterations"] > 0
    hd, hc = dense["history"], cg["history"]
    np.testing.assert_array_equal(hd["accepted"], hc["accepted"])
    np.testing.assert_array_equal(hd["n_backtracks"], hc["n_backtracks"])
    np.testing.assert_allclose(hc["objective"], hd["objective"], rtol=1e-6)
    np.testing.assert_allclose(cg["W"], dense["W"], atol=1e-6 * np.abs(dense["W"]).max())
    np.testing.assert_allclose(cg["alpha"], dense["alpha"], atol=1e-6 * np.abs(dense["alpha"]).max())


@pytest.mark.parametrize("penalty", ["basic", "concave_feature"])
def test_estimators_through_cg_predict_like_dense(penalty):
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, (180, 4))
    y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2
    Xt = rng.uniform(-1.2, 1.2, (300, 4))
    kw = dict(penalty=penalty, n_particles=8, max_iter=8, random_state=0)
    d = BKerNNRegressor(kernel_solver="dense", **kw).fit(X, y)
    c = BKerNNRegressor(kernel_solver="cg", cg_tol=1e-11, **kw).fit(X, y)
    assert (d.kernel_solver_, c.kernel_solver_) == ("dense", "cg") and c.cg_iterations_ > 0
    np.testing.assert_allclose(c.predict(Xt), d.predict(Xt), atol=1e-6 * np.abs(y).max())
    labels = np.digitize(X[:, 0] + X[:, 1] ** 2, [-0.3, 0.4])          # three classes
    d = BKerNNClassifier(kernel_solver="dense", **kw).fit(X, labels)
    c = BKerNNClassifier(kernel_solver="cg", cg_tol=1e-11, **kw).fit(X, labels)
    np.testing.assert_allclose(c.decision_function(Xt), d.decision_function(Xt), atol=1e-6)
    np.testing.assert_array_equal(c.predict(Xt), d.predict(Xt))


def test_auto_switches_to_cg_from_the_threshold(monkeypatch):
    X, Yc, W0, lam = _problem(n=60)
    y = Yc[:, 0]
    assert BKerNNRegressor(max_iter=1).fit(X, y).kernel_solver_ == "dense"
    monkeypatch.setattr(core, "CG_MIN_N", 60)
    assert BKerNNRegressor(max_iter=1).fit(X, y).kernel_solver_ == "cg"
    assert BKerNNRegressor(max_iter=1, kernel_solver="dense").fit(X, y).kernel_solver_ == "dense"
    for kw, msg in ((dict(kernel_solver="lu"), "kernel_solver"), (dict(cg_tol=0.0), "cg_tol"),
                    (dict(cg_tol=0.5), "cg_tol")):
        with pytest.raises(ValueError, match=msg):
            BKerNNRegressor(**kw).fit(X, y)


def test_prediction_matches_dense_oracle_without_n_new_by_n_matrices():
    rng = np.random.default_rng(6)
    X = rng.uniform(-1, 1, (400, 3))
    y = np.sin(3 * X[:, 0]) * X[:, 1]
    est = BKerNNRegressor(n_particles=6, max_iter=4, kernel_solver="cg", cg_tol=1e-10,
                          random_state=0).fit(X, y)
    Xt = rng.uniform(-1.5, 1.5, (50, 3))
    Xs, Xts = est.x_scaler_.transform(X), est.x_scaler_.transform(Xt)
    P, Pt = Xs @ est.particles_, Xts @ est.particles_
    D = np.mean(np.abs(Pt[:, None, :] - P[None, :, :]), axis=2)          # (1/m) sum_j |.|
    f = -0.5 * D @ est.dual_coef_[:, 0] + est.intercept_[0]
    np.testing.assert_allclose(est.predict(Xt), est.y_scaler_.inverse_transform(f[:, None])[:, 0],
                               rtol=1e-10, atol=1e-10)
    big = rng.uniform(-1, 1, (20000, 3))
    est.predict(big[:10])
    tracemalloc.start()
    est.predict(big)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 0.1 * 8 * len(big) * len(X)       # an n_new x n matrix would be 64 MB


def test_cancel_stops_inside_a_cg_solve(monkeypatch):
    X, Yc, W0, lam = _problem(n=200)
    y = Yc[:, 0]
    products = []
    real = cgmod.kernel_product

    def counting(*a, **k):
        products.append(1)
        return real(*a, **k)

    monkeypatch.setattr(cgmod, "kernel_product", counting)
    at_cancel = []

    def cb(ev):
        # iteration 3 is running once iterations 1 and 2 are reported: cancel at its first
        # CG tick
        if ev.kind == "update" and ev.done == 2 and at_cancel == [] and seen[0]:
            at_cancel.append(len(products))
            return True
        if ev.kind == "update" and ev.done == 2:
            seen[0] = True
        return False

    seen = [False]
    est = BKerNNRegressor(n_particles=6, max_iter=10, kernel_solver="cg", cg_tol=1e-12,
                          random_state=0)
    with pytest.raises(FitCancelled) as info:
        est.fit(X, y, callback=Progress(cb, min_interval=0.0))
    assert info.value.partial_model and est.cancelled_ and est.n_iter_ == 2
    assert len(products) == at_cancel[0]          # no product after the cancelling tick
    assert len(est.history_["objective"]) == 3
    assert np.all(np.isfinite(est.predict(X)))


# ----------------------------------------------------------------------------- issue 13, scale

def test_energy_blocks_are_valid_and_shrink_in_the_tails():
    rng = np.random.default_rng(9)
    n, B = 4000, 16
    v = np.sort(rng.standard_normal((3, n)), axis=1)
    v[1] = 0.0                                              # a dead particle: equal counts
    v[2, : n // 2] = -1.0                                   # half the rows tied
    starts = cgmod.block_starts(v, B, "energy")
    even = cgmod.block_starts(v, B, "count")
    assert starts.shape == (3, B) and np.all(starts[:, 0] == 0)
    assert np.all(np.diff(starts, axis=1) >= 1) and np.all(starts[:, -1] < n)
    np.testing.assert_array_equal(starts[1], even[1])
    # count x width of the blocks: balanced by "energy", dominated by the tails with "count"
    def energy(st):
        ends = np.append(st[1:], n)
        return (ends - st) * (v[0, ends - 1] - v[0, st])
    e, c = energy(starts[0]), energy(even[0])
    assert e.max() < 0.5 * c.max()
    assert e.max() / np.median(e) < 4.0 < c.max() / np.median(c)


@pytest.mark.parametrize("spacing", ["count", "energy"])
def test_preconditioner_applies_its_dense_definition(spacing):
    """P^{-1} R = (F F^T + s I)^{-1} R with the step features F written out densely:
    F[i, (j, b)] = sqrt(G_jb / m) (1{block_j(i) > b} - mean of that step), for centred R."""
    rng = np.random.default_rng(10)
    X, W = awkward_inputs(rng, n=150)
    n, m = len(X), W.shape[1]
    sp = SortedProjections(np.ascontiguousarray((X @ W).T))
    shift, B = 0.3, 7
    pre = BlockPreconditioner(sp, shift, B, spacing=spacing)
    F = np.zeros((n, m, B - 1))
    for j in range(m):
        for b in range(B - 1):
            F[:, j, b] = pre.scale[j, b] * ((pre.beta[j] > b) - pre.tail[j, b])
    F = F.reshape(n, -1)
    # the blocks, step means and weights from their definitions
    starts = cgmod.block_starts(sp.values, B, spacing)
    ranks = np.argsort(sp.order, axis=1)
    for j in range(m):
        np.testing.assert_array_equal(
            pre.beta[j], np.searchsorted(starts[j], ranks[j], side="right") - 1)
        ends = np.append(starts[j, 1:], n)
        mids = np.minimum((starts[j] + ends) // 2, n - 1)
        gaps = np.maximum(np.diff(sp.values[j, mids]), 0.0)
        np.testing.assert_allclose(pre.scale[j], np.sqrt(gaps / m), rtol=1e-14)
        np.testing.assert_allclose(pre.tail[j], (pre.beta[j][:, None] > np.arange(B - 1)).mean(0))
    R = rng.standard_normal((n, 2))
    R -= R.mean(axis=0)
    want = np.linalg.solve(F @ F.T + shift * np.eye(n), R)
    np.testing.assert_allclose(pre.apply(R), want, rtol=0, atol=1e-10 * np.abs(want).max())


def test_cg_gives_up_only_when_the_exact_value_exceeds_the_threshold():
    n = 2000
    _, sp, Yc = _gaussian_system(11, n=n, d=8, m=12, scale=2, q=2)
    shift = 3.0
    pre = BlockPreconditioner(sp, shift, 8)
    A, R, full = cg_ridge(sp, Yc, shift, tol=1e-10, precond=pre)
    exact = cgmod.lower_value(Yc, A, R)           # Yc^T M^{-1} Yc / 2 to ~1e-20 relative
    x0 = 0.2 * A + 0.2 * np.roll(A, 7, axis=0)     # not on the solution's line
    for frac in (0.9, 0.99):
        A1, R1, its = cg_ridge(sp, Yc, shift, x0=x0, tol=1e-10, precond=pre,
                               give_up_above=frac * exact)
        assert 0 < its < full
        got = cgmod.lower_value(Yc, A1, R1)
        assert frac * exact < got <= exact * (1 + 1e-12)
        np.testing.assert_allclose(R1, Yc - kernel_product(sp, A1, shift), atol=1e-12 * n)
    # a threshold above the exact value never stops the solve early
    A2, R2, its2 = cg_ridge(sp, Yc, shift, x0=x0, tol=1e-10, precond=pre,
                            give_up_above=exact * (1 + 1e-9))
    A3, R3, its3 = cg_ridge(sp, Yc, shift, x0=x0, tol=1e-10, precond=pre)
    assert its2 == its3
    np.testing.assert_array_equal(A2, A3)


@pytest.mark.parametrize("penalty", PENALTIES)
def test_line_search_certificates_keep_the_dense_decisions(penalty):
    """Skipped trials (negative threshold) and solves stopped by the lower bound of G make the
    same accept / reject decisions as exact dense solves, and happen in these fits."""
    X, Yc, W0, lam = _problem(seed=1)
    kw = dict(step_size=500.0, max_iter=10)
    dense = fit_particles(X, Yc, W0, lam, penalty, kernel_solver="dense", **kw)
    cg = fit_particles(X, Yc, W0, lam, penalty, kernel_solver="cg", cg_tol=1e-11, **kw)
    assert cg["certified_trials"] > 0
    assert cg["skipped_trials"] == dense["skipped_trials"]
    np.testing.assert_array_equal(cg["history"]["n_backtracks"], dense["history"]["n_backtracks"])
    np.testing.assert_allclose(cg["history"]["objective"], dense["history"]["objective"],
                               rtol=1e-6)
    # the same fit with both certificates switched off (an exact solve for every trial)
    monkey = pytest.MonkeyPatch()
    monkey.setattr(core, "_evaluate", _evaluate_without_certificates)
    try:
        plain = fit_particles(X, Yc, W0, lam, penalty, kernel_solver="dense", **kw)
    finally:
        monkey.undo()
    assert plain["skipped_trials"] == 0
    np.testing.assert_array_equal(plain["history"]["n_backtracks"],
                                  dense["history"]["n_backtracks"])
    np.testing.assert_array_equal(plain["W"], dense["W"])


_real_evaluate = core._evaluate


def _evaluate_without_certificates(*args, give_up_above=None, **kw):
    return _real_evaluate(*args, **kw)


def test_kernel_product_ticks_between_slices_of_particles(monkeypatch):
    rng = np.random.default_rng(12)
    X, W = awkward_inputs(rng, n=300, m=13)
    sp = SortedProjections(np.ascontiguousarray((X @ W).T))
    U = rng.standard_normal((300, 2))
    whole = kernel_product(sp, U, 0.5)
    monkeypatch.setattr(cgmod, "TICK_WORK", 4 * 300 * 2 * cgmod.PRODUCT_WORK)
    ticks = []
    sliced = kernel_product(sp, U, 0.5, tick=ticks.append)
    assert len(ticks) == 4                       # 13 particles in slices of 4, 4, 4, 1
    np.testing.assert_allclose(sliced, whole, rtol=0, atol=1e-12 * np.abs(whole).max())
    assert [b - a for a, b in cgmod.particle_slices(13, 150, 4)] == [4, 4, 4, 1]
    assert [b - a for a, b in cgmod.particle_slices(5, 10**9, 4)] == [1] * 5


def test_progress_gaps_with_a_fake_clock(monkeypatch):
    """With every numba kernel charged to a fake clock by the work it does, no two progress
    events of a CG fit are further apart than the rate limit plus two slices of work: the
    kernels are called in slices of at most TICK_WORK with a tick after each."""
    import rwtool.progress as progmod
    clock = [0.0]
    per_slice = 0.25                              # fake seconds for TICK_WORK operations
    # a whole product (32 particles x 400 rows, 3200 units of work) would take 1 s; one
    # particle of the gradient (800) fits in a slice
    monkeypatch.setattr(cgmod, "TICK_WORK", 800)

    class FakeTime:
        @staticmethod
        def perf_counter():
            return clock[0]

    monkeypatch.setattr(progmod, "time", FakeTime)

    def charged(kernel, work):
        def run(*args):
            clock[0] += per_slice * work(*args) / cgmod.TICK_WORK
            return kernel(*args)
        return run

    monkeypatch.setattr(cgmod, "_distance_products", charged(
        cgmod._distance_products, lambda o, v, UA, S, j0, j1, g0, g1:
        sum(g0 <= (j - j0) % len(UA) < g1 for j in range(j0, j1)) * v.shape[1] * len(S)
        * cgmod.PRODUCT_WORK))
    monkeypatch.setattr(cgmod, "_step_gram", charged(
        cgmod._step_gram, lambda beta, above, total, w, scale, tail, j0, j1, r0, r1, C:
        sum(beta.shape[0] - 1 - cgmod.folded(r, j0, j1) for r in range(r0, r1))
        * beta.shape[1] / 16))
    monkeypatch.setattr(core, "_signed_sums", charged(
        core._signed_sums, lambda PT, order, Z, RT, r0, r1:
        (r1 - r0) * PT.shape[1] * (1 + Z.shape[1])))
    monkeypatch.setattr(cgmod, "_distribution_sort", charged(
        cgmod._distribution_sort, lambda PT, order, values, r0, r1:
        (r1 - r0) * PT.shape[1] * 2))
    X, Yc, W0, lam = _problem(n=400, m=32)
    times = []
    fit_particles(X, Yc, W0, lam, "concave_feature", step_size=500.0, max_iter=4,
                  kernel_solver="cg", callback=Progress(lambda ev: times.append(clock[0]),
                                                        min_interval=0.1))
    gaps = np.diff(times)
    assert clock[0] > 20 * per_slice and len(times) > 20
    assert gaps.max() <= 0.1 + per_slice + 1e-9


def test_folded_takes_every_item_once_and_balances_triangular_work():
    """folded(t, a, b) for t < b - a is a permutation of a..b - 1 whose contiguous halves hold
    (nearly) equal sums of a triangular loop's work b - j."""
    for a, b in ((0, 1), (0, 2), (3, 10), (5, 56)):
        items = [cgmod.folded(t, a, b) for t in range(b - a)]
        assert sorted(items) == list(range(a, b))
        half = (b - a) // 2
        work = [b - j for j in items]
        assert abs(sum(work[:half]) - sum(work[half:2 * half])) <= b - a
