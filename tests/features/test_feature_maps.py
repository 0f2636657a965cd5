"""Feature maps: Gram matrices, constants and gamma rules, kitchen sinks, Fourier features, errors."""

import math

import numpy as np
import pytest

from rwtool.features import (INSTANTIATIONS, KitchenRelu, KitchenSign, KitchenStumps,
                             RandomFourierFeatures, RWExpRelu, RWExpSign, RWRelu, RWSign,
                             RWStumps, gamma_from_kappa, gamma_from_theta,
                             instantiation_constants, make_instantiation, shift_invariant_kernel)


@pytest.fixture
def X(rng):
    return rng.standard_normal((50, 6))


@pytest.mark.parametrize("name", list(INSTANTIATIONS))
def test_gram_symmetric_psd_and_consistent(name, X):
    fmap = make_instantiation(name, n_features=120, sigma=0.8, random_state=0).fit(X)
    G = fmap.gram()
    assert G.shape == (120, 120)
    np.testing.assert_allclose(G, G.T, atol=1e-14)
    assert np.linalg.eigvalsh(G).min() > -1e-10 * np.abs(G).max()
    np.testing.assert_allclose(np.diag(G), 1.0)  # K(w, w) = 1 (normalised for the exp kernels)
    rows, cols = np.array([3, 7, 11]), np.array([0, 5, 7, 100])
    np.testing.assert_allclose(fmap.kernel_matrix(rows, cols), G[np.ix_(rows, cols)], rtol=1e-12)


def test_gram_matches_kernel_definitions(X):
    sig = RWSign(n_features=8, sigma=0.9, gamma=1.3, random_state=1).fit(X)
    U = sig.W_
    direct = np.array([[math.exp(-np.sum((u - w) ** 2) / (2 * 1.3 ** 2)) for w in U] for u in U])
    np.testing.assert_allclose(sig.gram(), direct, rtol=1e-10)
    st = RWStumps(n_features=40, sigma=0.9, gamma=0.4, random_state=1).fit(X)
    direct = np.array([[(a == b) * math.exp(-(s - t) ** 2 / (2 * 0.4 ** 2))
                        for b, t in zip(st.idx_, st.thr_)] for a, s in zip(st.idx_, st.thr_)])
    np.testing.assert_allclose(st.gram(), direct, rtol=1e-12)
    ex = RWExpSign(n_features=8, sigma=0.5, gamma=1.3, normalize=False, random_state=1).fit(X)
    np.testing.assert_allclose(ex.gram(), np.exp(ex.W_ @ ex.W_.T / (2 * 1.3 ** 2)), rtol=1e-12)


@pytest.mark.parametrize("n", [1, 10, 784])
@pytest.mark.parametrize("theta", [0.05, 0.5, 0.9])
def test_gamma_from_theta_gives_theta(n, theta):
    g = gamma_from_theta(n, 1.7, theta)
    assert instantiation_constants("rwsign", n, 1.7, g)["theta"] == pytest.approx(theta, rel=1e-10)


@pytest.mark.parametrize("n", [1, 10, 784])
@pytest.mark.parametrize("kappa", [1.5, 10.0, 100.0])
def test_gamma_from_kappa_gives_kappa(n, kappa):
    g = gamma_from_kappa(n, 0.6, kappa)
    assert g > 0.6
    got = instantiation_constants("rwexpsign", n, 0.6, g)["kappa"]
    assert got == pytest.approx(kappa, rel=1e-6)  # 1 - s^2/g^2 = kappa^(-4/n) cancels


@pytest.mark.slow
def test_theta_bounds_the_feature_norm_by_monte_carlo(rng):
    """theta^2 >= sup_x ||psi(x)||_H^2 = E_{u,w}[K(u, w) phi(u, x) phi(w, x)] (003 Lemma B.18).

    RWStumps nearly attains it (theta^2 - 0.006); over seeds the estimate from T = 2000
    centres moves by 0.002, ten times less than the 0.02 allowed."""
    X = rng.standard_normal((5, 3))
    for fmap in (RWSign(n_features=2000, sigma=1.0, theta=0.6, random_state=0),
                 RWStumps(n_features=2000, sigma=1.0, gamma=0.5, random_state=0)):
        fmap.fit(X)
        phi = fmap.base_predictor(X)          # phi(w_t, x_i), w_t ~ p
        G = fmap.gram()
        T = G.shape[0]
        # U-statistic over pairs u != w: the mean of p_u G_uw p_w off the diagonal
        norms2 = np.array([(p @ G @ p - np.sum(p * p * np.diag(G))) / (T * (T - 1))
                           for p in phi])
        assert norms2.max() <= fmap.theta_ ** 2 + 0.02


def test_fitted_constants_and_gamma_override(X):
    f = RWRelu(n_features=5, sigma=0.5, theta=0.3, random_state=0).fit(X)
    assert f.gamma_ == pytest.approx(gamma_from_theta(6, 0.5, 0.3))
    assert f.x_norm_max_ == pytest.approx(np.linalg.norm(X, axis=1).max())
    f2 = RWRelu(n_features=5, sigma=0.5, gamma=2.0, random_state=0).fit(X)
    assert f2.gamma_ == 2.0
    assert RWStumps(n_features=3, sigma=0.7).fit(X).gamma_ == 0.7


@pytest.mark.parametrize("cls", [RWExpSign, RWExpRelu])
def test_exponential_instantiations_reject_sigma_ge_gamma(cls, X):
    with pytest.raises(ValueError, match="sigma < gamma"):
        cls(sigma=1.0, gamma=1.0).fit(X)
    with pytest.raises(ValueError, match="kappa"):
        cls(kappa=1.0).fit(X)


@pytest.mark.parametrize("params,match", [
    ({"sigma": 0.0}, "sigma"), ({"sigma": -1.0}, "sigma"), ({"n_features": 0}, "n_features"),
    ({"theta": 1.0}, "theta"), ({"theta": 0.0}, "theta"), ({"gamma": -2.0}, "gamma"),
    ({"sigma": float("nan")}, "sigma"),
])
def test_bad_parameters_named(params, match, X):
    with pytest.raises(ValueError, match=match):
        RWSign(**params).fit(X)
    with pytest.raises(TypeError, match="n_features"):
        RWSign(n_features=2.5).fit(X)


def test_unknown_instantiation():
    with pytest.raises(ValueError, match="rwsign"):
        make_instantiation("rwfoo")


def test_vanishing_features_warn_with_fix(rng):
    X = rng.standard_normal((10, 50))
    with pytest.warns(RuntimeWarning, match="raise gamma"):
        RWSign(n_features=10, gamma=0.05, random_state=0).fit(X)


def test_transform_checks_input(X):
    f = RWSign(n_features=5, random_state=0).fit(X)
    with pytest.raises(ValueError, match="expecting 6 features"):
        f.transform(X[:, :3])
    bad = X.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        f.transform(bad)


def test_relu_features_at_zero_and_far_away(rng):
    X = np.vstack([np.zeros((1, 4)), 1e6 * rng.standard_normal((2, 4))])
    P = RWRelu(n_features=30, sigma=1.0, gamma=1.0, random_state=0).fit(X).transform(X)
    assert np.all(P[0] == 0.0) and np.isfinite(P).all()
    P = RWSign(n_features=30, sigma=1.0, gamma=1.0, random_state=0).fit(X).transform(X)
    assert np.all(P[0] == 0.0) and np.isfinite(P).all()


# ----------------------------------------------------------------------------- kitchen sinks

def test_kitchen_features_are_scaled_base_predictors(X):
    T = 64
    for cls, phi in ((KitchenSign, np.sign), (KitchenRelu, lambda z: np.maximum(z, 0.0))):
        f = cls(n_features=T, sigma=0.7, random_state=3).fit(X)
        np.testing.assert_allclose(f.transform(X), phi(X @ f.W_.T) / math.sqrt(T), rtol=1e-12)
        assert np.allclose(f.W_.std(), 0.7, rtol=0.1)
    f = KitchenStumps(n_features=T, sigma=0.7, random_state=3).fit(X)
    np.testing.assert_allclose(f.transform(X), np.sign(X[:, f.idx_] - f.thr_) / math.sqrt(T))
    assert set(f.idx_) <= set(range(6))


def test_rw_feature_is_the_kernel_weighted_average_of_kitchen_features(rng):
    """psi_u(x) = E_w[K(u, w) phi(w, x)]: average K-weighted RKS columns over many draws."""
    X = rng.standard_normal((4, 2))
    rw = RWRelu(n_features=3, sigma=0.8, gamma=1.0, random_state=0).fit(X)
    ks = KitchenRelu(n_features=400_000, sigma=0.8, random_state=1).fit(X)
    W = ks.W_
    d2 = (rw.W_ ** 2).sum(1)[:, None] + (W ** 2).sum(1)[None, :] - 2 * rw.W_ @ W.T
    K = np.exp(-d2 / 2.0)
    est = ks.base_predictor(X) @ K.T / W.shape[0]
    np.testing.assert_allclose(est, rw.transform(X), atol=0.02 * np.abs(rw.transform(X)).max())


# ----------------------------------------------------------------------------- Fourier features

@pytest.mark.parametrize("kernel", ["gaussian", "laplacian", "cauchy"])
@pytest.mark.parametrize("variant", ["pair", "phase"])
def test_fourier_inner_products_approach_the_kernel(kernel, variant, rng):
    X = rng.standard_normal((12, 3)) * 0.7
    K = shift_invariant_kernel(X, X, kernel, sigma=1.5)
    errs = []
    for M in (500, 8000):
        Z = RandomFourierFeatures(n_features=M, kernel=kernel, sigma=1.5, variant=variant,
                                  random_state=0).fit(X).transform(X)
        errs.append(np.abs(Z @ Z.T - K).max())
    assert errs[1] < 0.06
    assert errs[1] < errs[0]  # error decreases with M (about M^-1/2)
    if variant == "pair":
        np.testing.assert_allclose(np.diag(Z @ Z.T), 1.0, atol=1e-12)


def test_fourier_shapes_and_kernel_formulas(rng):
    X = rng.standard_normal((5, 2))
    f = RandomFourierFeatures(n_features=7, variant="pair", random_state=0).fit(X)
    assert f.transform(X).shape == (5, 14)
    assert RandomFourierFeatures(n_features=7, variant="phase").fit(X).transform(X).shape == (5, 7)
    d = X[0] - X[1]
    assert shift_invariant_kernel(X[:1], X[1:2], "laplacian", 2.0)[0, 0] == pytest.approx(
        math.exp(-np.abs(d).sum() / 2.0))
    assert shift_invariant_kernel(X[:1], X[1:2], "cauchy", 2.0)[0, 0] == pytest.approx(
        np.prod(1.0 / (1.0 + (d / 2.0) ** 2)))
    with pytest.raises(ValueError, match="kernel"):
        RandomFourierFeatures(kernel="rbf").fit(X)


def test_same_seed_same_features(X):
    a = RWStumps(n_features=50, random_state=5).fit(X).transform(X)
    b = RWStumps(n_features=50, random_state=5).fit(X).transform(X)
    c = RWStumps(n_features=50, random_state=6).fit(X).transform(X)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_fitted_state_round_trip(X):
    for fmap in (RWExpRelu(n_features=20, random_state=0), RWStumps(n_features=20, random_state=0),
                 RandomFourierFeatures(n_features=20, variant="phase", random_state=0)):
        fmap.fit(X)
        clone = type(fmap).from_fitted_state(fmap.get_params(), fmap.fitted_state())
        np.testing.assert_array_equal(clone.transform(X), fmap.transform(X))


@pytest.mark.parametrize("inst,param,default,other", [
    ("rwexpsign", "kappa", 10.0, 5.0), ("rwexprelu", "kappa", 10.0, 5.0)])
def test_estimator_uses_the_measured_kappa_default(inst, param, default, other, rng):
    """The defaults measured in docs/bench/instantiation_defaults.md reach the fitted map (the
    kernel factor of 003 Table 2 evaluated at the fitted gamma equals the target), the feature
    class and the estimator agree (the app reads the signatures), and an explicit value wins."""
    import inspect

    import rwtool as rw
    cls = INSTANTIATIONS[inst]
    assert inspect.signature(cls).parameters[param].default == default
    assert inspect.signature(rw.RWClassifier).parameters[param].default == default
    X = rng.standard_normal((80, 4))
    y = X[:, 0] - X[:, 1] ** 2
    ref = "rwexpsign"                 # its Table 2 kappa is the kernel factor, for both kinds
    for kw, want in (({}, default), ({param: other}, other)):
        est = rw.RWRegressor(instantiation=inst, n_features=20, random_state=0, **kw).fit(X, y)
        fmap = est.feature_map_
        got = instantiation_constants(ref, fmap.n_features_in_, 1.0, fmap.gamma_)[param]
        assert got == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("name", ["rwsign", "rwrelu", "rwexpsign", "rwexprelu"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_linear_predict_is_the_features_times_the_coefficients(name, dtype, rng):
    """The closed forms fuse Phi a into their element-wise pass: equal to the product of
    transform's features within the rounding of a sum of T terms (gamma_T times the sum of
    |terms|; in float64 for float32 features too), in blocks or not, and the features left in
    the block's buffer are transform's bits."""
    X = np.vstack([rng.standard_normal((300, 6)) * rng.choice([0.1, 1.0, 5.0], (300, 1)),
                   np.zeros((1, 6))])
    T = 203
    fmap = make_instantiation(name, n_features=T, sigma=0.7, random_state=0,
                              dtype=dtype).fit(X)
    coef = rng.standard_normal((T, 2))
    Phi = fmap.transform(X)
    Phi64 = Phi.astype(float)
    eps = np.finfo(float).eps
    tol = T * eps / (1 - T * eps) * (np.abs(Phi64) @ np.abs(coef))
    for block_size in (7, 64, None):
        D = fmap.linear_predict(X, coef, block_size=block_size)
        assert D.dtype == np.float64 and np.all(np.abs(D - Phi64 @ coef) <= tol)
    buf, D = np.empty_like(Phi), np.empty((len(X), 2))
    fmap._decision_into(X, np.ascontiguousarray(coef.T), buf, D)
    assert np.array_equal(buf, Phi) and np.array_equal(D, fmap.linear_predict(X, coef))


@pytest.mark.parametrize("name", ["rwsign", "rwrelu", "rwexpsign", "rwexprelu"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_one_pool_predict_is_the_blocks_bits_whatever_the_thread_count(name, dtype, rng):
    """With more columns than the fixed-order product takes, the closed forms' predict runs X
    W^T through numpy's OpenBLAS on numba's threads, a chunk of rows each: transform's
    features of the same chunks of rows (BLAS rounds a row by the rows around it, in float32
    visibly) times the coefficients, within the rounding of a sum of T terms (as above); and
    the same bits as the block path (FeatureMap.linear_predict: BLAS's threads, then numba's)
    given the same rows per block, for one and two numba threads (the chunks do not depend on
    the count). One-row chunks take BLAS's product of two rows, as dot_into does."""
    import numba

    from rwtool.features._base import FeatureMap
    from rwtool.threads import single_blas_thread

    m, d, T = 700, 40, 301                       # d above FIXED_ORDER_COLUMNS: BLAS's product
    X = np.vstack([rng.standard_normal((m, d)) * rng.choice([0.1, 1.0, 5.0], (m, 1)),
                   np.zeros((1, d))])
    fmap = make_instantiation(name, n_features=T, sigma=0.7, random_state=0, dtype=dtype).fit(X)
    coef = rng.standard_normal((T, 3))
    eps = np.finfo(float).eps
    threads = numba.get_num_threads()
    try:
        for rows in (1, 7, 256):
            with single_blas_thread():
                Phi64 = np.vstack([fmap.transform(X[a:a + rows])
                                   for a in range(0, len(X), rows)]).astype(float)
            tol = T * eps / (1 - T * eps) * (np.abs(Phi64) @ np.abs(coef))
            got = []
            for n in sorted({1, threads}):
                numba.set_num_threads(n)
                got.append(fmap.linear_predict(X, coef, block_size=rows))
            with single_blas_thread():            # BLAS on one thread, as in the chunks
                blocks = FeatureMap.linear_predict(fmap, X, coef, block_size=rows)
            assert np.all(np.abs(got[0] - Phi64 @ coef) <= tol)
            assert all(np.array_equal(D, blocks) for D in got)
    finally:
        numba.set_num_threads(threads)


def test_predict_blocks_hold_64_mb_or_4096_rows_in_whole_chunks():
    from rwtool.features._base import predict_block_size, predict_chunk_size

    assert predict_chunk_size(200) == 512 and predict_chunk_size(2000) == 512  # <= 8 MiB
    assert predict_chunk_size(4000) == 256 and predict_chunk_size(8000, 4) == 256
    assert predict_chunk_size(10 ** 6) == 16
    assert predict_block_size(200) == 39936              # 64 MB, in chunks of 512 rows
    assert predict_block_size(200, 4) == 79872
    assert predict_block_size(2000) == 4096              # 32 MB: the rows' floor
    assert RWSign(n_features=1000, dtype="float32").predict_block_rows() == 15872


@pytest.mark.parametrize("d", [1, 5, 16])
def test_fixed_order_product_is_x_w_and_a_row_alone_gives_the_same_bits(d, rng):
    """dot_into's own X W^T for few columns: numpy's product within the rounding of a sum of d
    terms (gamma_d times the sum of |terms|), and each row the same bits computed alone, in
    slices, as a column slice of a larger block, or in float32 (float64 sums, rounded)."""
    from rwtool.features._base import dot_into

    X, W = rng.standard_normal((301, d)), rng.standard_normal((203, d))
    out = dot_into(X, W, np.empty((301, 203)))
    eps = np.finfo(float).eps
    assert np.all(np.abs(out - X @ W.T) <= d * eps / (1 - d * eps) * (np.abs(X) @ np.abs(W).T))
    for step in (1, 3, 100):
        parts = [dot_into(X[a:a + step], W, np.empty((len(X[a:a + step]), 203)))
                 for a in range(0, 301, step)]
        assert np.array_equal(np.vstack(parts), out)
    wide = np.zeros((301, 210))
    dot_into(X, W, wide[:, 5:208])
    assert np.array_equal(wide[:, 5:208], out) and not wide[:, :5].any()
    o32 = dot_into(X, W, np.empty((301, 203), dtype=np.float32))
    np.testing.assert_allclose(o32, out, rtol=0, atol=1e-6 * np.abs(out).max() * d)
    wider = np.full((301, 210), 7.0)                   # the first 203 columns, no others
    assert np.array_equal(dot_into(X, W, wider), out) and np.all(wider[:, 203:] == 7.0)
    X32 = X.astype(np.float32)                         # widened exactly: float64's bits
    assert np.array_equal(dot_into(X32, W, np.empty((301, 203))),
                          dot_into(X32.astype(np.float64), W, np.empty((301, 203))))
    # one compiled kernel per output dtype: X float64 and every array C-contiguous
    from rwtool.features._dot import _fixed_order_rows
    assert {str(sig[2].dtype) for sig in _fixed_order_rows.signatures} <= {"float64", "float32"}
    assert all(sig[0].dtype.name == "float64" and sig[2].layout == "C"
               for sig in _fixed_order_rows.signatures)
    assert len(_fixed_order_rows.signatures) <= 2


@pytest.mark.parametrize("make", [lambda: INSTANTIATIONS["rwrelu"](n_features=30, sigma=0.8),
                                  lambda: KitchenSign(n_features=30)])
def test_blocks_in_an_order_are_the_features_of_the_reordered_rows(make):
    """blocks(X, order=) gathers each block's rows of X in that order into a buffer of its own
    (reg="auto"'s pass over rows sorted by fold, without a sorted copy of X). Oracle: the map's
    transform of X[order], every block and the uneven last one; bit for bit against
    blocks(X[order]) in this process (the same rows in the same blocks: X W^T is the same
    products in the same order)."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((203, 20))
    order = rng.permutation(203)
    fmap = make().fit(X)
    ref = fmap.transform(X[order])
    got = [(a, b, P.copy()) for a, b, P in fmap.blocks(X, 64, order)]
    assert [(a, b) for a, b, _ in got] == [(0, 64), (64, 128), (128, 192), (192, 203)]
    for (a, b, P), (_, _, Q) in zip(got, fmap.blocks(X[order], 64)):
        np.testing.assert_array_equal(P, Q)
        # X W^T over 20 inputs in another grouping of rows than transform's: 1e-13
        np.testing.assert_allclose(P, ref[a:b], rtol=1e-13, atol=1e-13)
    # a position outside X is an error, as indexing X with it would be (not wrapped around)
    for bad in (203, -204):
        with pytest.raises(IndexError, match="outside"):
            next(fmap.blocks(X, 64, np.r_[order[:5], bad]))
