"""The branch-free erf / erfc / exp of features/_vecmath against libm, and the closed-form features
computed with them against the libm formula.

The oracle is the C library's erf / erfc / exp (through numba's math.*, which call them, and
Python's math module), computed in this process; scipy.special's independent implementation is a
second check in the normal range. Tolerances: erf within 1e-15 absolute and 2 ulp, erfc and
exp within 1e-14 (a few ulp) relative where the result is a normal number, and a few units of
the smallest subnormal below that (both sides round to the same tiny grid there).
"""

import math

import numpy as np
import pytest
from numba import njit
from scipy import special

from rwtool.features import INSTANTIATIONS, RWStumps, make_instantiation
from rwtool.features._rkhs import _erf_features, _relu_features
from rwtool.features._vecmath import SMALL, VEC_FLAGS, verf, verf_small, verfc, vexp

TINY = 5e-324
NORMAL = 2.2250738585072014e-308


@njit(**VEC_FLAGS)
def _apply_vec(which, x, out):
    for i in range(x.shape[0]):
        if which == 0:
            out[i] = verf(x[i])
        elif which == 1:
            out[i] = verfc(x[i])
        elif which == 2:
            out[i] = vexp(x[i])
        else:
            out[i] = verf_small(x[i])


@njit
def _apply_libm(which, x, out):
    for i in range(x.shape[0]):
        if which in (0, 3):
            out[i] = math.erf(x[i])
        elif which == 1:
            out[i] = math.erfc(x[i])
        else:
            out[i] = math.exp(x[i])


def _both(which, x):
    got, ref = np.empty_like(x), np.empty_like(x)
    _apply_vec(which, x, got)
    _apply_libm(which, x, ref)
    return got, ref


def _edges():
    """The pieces' break points and their neighbours, zeros, subnormals, inf, nan."""
    b = np.array([0.25, 0.84375, 1.25, 1 / 0.35, 6.0, 26.5, 27.2, 28.0, 2.0 ** -28, 1e-300])
    b = np.concatenate([b, np.nextafter(b, 0), np.nextafter(b, np.inf)])
    b = np.concatenate([b, -b, [0.0, -0.0, TINY, -TINY, NORMAL, -NORMAL, 1e300, -1e300,
                                np.inf, -np.inf, np.nan]])
    return b


@pytest.fixture(scope="module")
def points():
    rng = np.random.default_rng(7)
    n = 400_000
    parts = [rng.standard_normal(n) * s for s in (0.01, 0.3, 1.0, 3.0, 10.0)]
    parts += [rng.uniform(-30, 30, n), rng.uniform(-1.3, 1.3, n), rng.uniform(-6.5, 6.5, n),
              rng.choice([-1.0, 1.0], n) * np.exp(rng.uniform(-745, 0, n)), _edges()]
    return np.concatenate(parts)


def _assert_specials_equal(got, ref):
    assert np.array_equal(np.isnan(got), np.isnan(ref))
    inf = np.isinf(ref)
    assert np.array_equal(got[inf], ref[inf]) and np.array_equal(np.isinf(got), inf)


@pytest.mark.slow
def test_erf_within_1e15_of_libm(points):
    got, ref = _both(0, points)
    _assert_specials_equal(got, ref)
    ok = ~np.isnan(ref)
    err = np.abs(got[ok] - ref[ok])
    assert err.max() <= 1e-15
    assert (err / np.spacing(np.abs(ref[ok]))).max() <= 2.0
    assert np.array_equal(np.signbit(got[ok]), np.signbit(ref[ok]))  # erf(-0) = -0
    np.testing.assert_allclose(got[ok], special.erf(points[ok]), rtol=0, atol=1e-15)


def test_erfc_within_1e14_relative_of_libm(points):
    got, ref = _both(1, points)
    _assert_specials_equal(got, ref)
    normal = ref >= NORMAL
    np.testing.assert_allclose(got[normal], ref[normal], rtol=1e-14, atol=0)
    sub = ref < NORMAL                    # the far right tail: subnormal or zero
    assert np.abs(got[sub] - ref[sub]).max() <= 8 * TINY
    # scipy (cephes) underflows earlier in the tail and is itself ~6e-14 from libm near 1e-60
    both = normal & (points < 26.0)
    np.testing.assert_allclose(got[both], special.erfc(points[both]), rtol=1e-13, atol=0)


def test_exp_within_1e14_relative_of_libm():
    rng = np.random.default_rng(8)
    x = np.concatenate([rng.uniform(-750, 715, 1_000_000), 5 * rng.standard_normal(500_000),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 709.78, 709.79, -708.4, -745.13,
                         -745.14, -740.0, 1e300, -1e300]])
    got, ref = _both(2, x)
    _assert_specials_equal(got, ref)
    normal = np.isfinite(ref) & (ref >= NORMAL)
    np.testing.assert_allclose(got[normal], ref[normal], rtol=1e-14, atol=0)
    np.testing.assert_allclose(got[normal], np.exp(x[normal]), rtol=1e-14, atol=0)
    sub = ref < NORMAL
    assert np.abs(got[sub] - ref[sub]).max() <= 2 * TINY


def test_first_pieces_alone_equal_the_full_functions(points):
    """verf_small, the erf kernels' short path, on its range and nan."""
    x = points[~(np.abs(points) >= SMALL)]
    got, ref = _both(3, x)
    # the same operations (explicit fused multiply-adds, no 'contract'): the same bits, so
    # a chunk's path does not change a feature
    assert np.array_equal(got, _both(0, x)[0], equal_nan=True)
    np.testing.assert_allclose(got, ref, rtol=1e-14, atol=TINY)


_erf = np.vectorize(math.erf)
_erfc = np.vectorize(math.erfc)
_exp = np.vectorize(math.exp)


def _libm_features(fmap, X):
    """The closed forms of _rkhs with Python's math (libm) functions, term by term, and the
    magnitude of the terms (the scale of the rounding: RWRelu's two terms cancel for a << 0)."""
    if isinstance(fmap, RWStumps):
        A = fmap._k * (X[:, fmap.idx_] - fmap._shift)
        return fmap._c * _erf(A), np.abs(fmap._c) * np.ones_like(A)
    xn = np.linalg.norm(X, axis=1)[:, None]
    a = (X @ fmap.W_.T) * (fmap._k / np.where(xn > 0, xn, 1.0))
    if fmap._phi == "sign":
        return fmap._c * _erf(a), np.abs(fmap._c) * np.ones_like(a)
    q = a / (fmap._sd * math.sqrt(2.0))
    t1 = 0.5 * a * _erfc(-q)
    t2 = fmap._sd / math.sqrt(2 * math.pi) * _exp(-q * q)
    return fmap._c * xn * (t1 + t2), np.abs(fmap._c) * xn * (np.abs(t1) + t2)


@pytest.mark.parametrize("name", list(INSTANTIATIONS))
@pytest.mark.parametrize("sigma", [0.3, 1.0, 3.0])
def test_features_equal_the_libm_formula(name, sigma):
    rng = np.random.default_rng(9)
    X = np.vstack([rng.standard_normal((60, 5)) * rng.choice([0.05, 1.0, 20.0], (60, 1)),
                   np.zeros((1, 5))])
    fmap = make_instantiation(name, n_features=300, sigma=sigma, random_state=0).fit(X)
    out = np.empty((X.shape[0], 300))
    fmap._features_into(X, out)
    ref, scale = _libm_features(fmap, X)
    assert np.all(np.abs(out - ref) <= 1e-14 * scale)


def _no_coef(Z):
    """The kernels' coefficient arguments when they compute the features alone."""
    return np.empty((0, Z.shape[1])), np.empty((Z.shape[0], 0))


def _kernel(kernel, Z, xn, c, A=None, D=None):
    """The erf or the ReLU closed form's kernel on Z in place (k = 1.3, sd = 0.7), with D <-
    Z A^T when A is given."""
    A, D = _no_coef(Z) if A is None else (A, D)
    if kernel == "erf":
        _erf_features(Z, xn, c, 1.3, A, D)
    else:
        _relu_features(Z, xn, xn, c, 1.3, 0.7, A, D)


def test_kernels_over_the_whole_argument_range():
    """The feature kernels with arguments across every piece of erf / erfc (|a| up to 40)."""
    rng = np.random.default_rng(10)
    m, T = 200, 257                       # T odd: the vector loop's remainder runs too
    Z = rng.standard_normal((m, T)) * rng.choice([0.1, 1.0, 5.0, 40.0], (m, 1))
    xn = np.abs(rng.standard_normal(m)) + 0.5
    c = rng.uniform(0.5, 2.0, T)
    k, sd = 1.3, 0.7
    got = Z.copy()
    _erf_features(got, xn, c, k, *_no_coef(got))
    np.testing.assert_allclose(got, c * _erf(Z * (k / xn[:, None])), rtol=1e-14, atol=1e-15)
    got = Z.copy()
    _relu_features(got, xn, xn, c, k, sd, *_no_coef(got))
    # a and q rounded as in the kernel: exp(-q^2) moves by q^2 times q's relative rounding
    a = Z * (k / xn[:, None])
    q = a * (1.0 / (sd * math.sqrt(2.0)))
    t1, t2 = 0.5 * a * _erfc(-q), sd / math.sqrt(2 * math.pi) * _exp(-q * q)
    ref, scale = c * xn[:, None] * (t1 + t2), c * xn[:, None] * (np.abs(t1) + t2)
    # + 1e-300: where both terms underflow (q < -26) each side is a few subnormal roundings
    assert np.all(np.abs(got - ref) <= 1e-14 * scale + 1e-300)


@pytest.mark.parametrize("kernel", ["erf", "relu"])
def test_a_feature_does_not_depend_on_its_neighbours(kernel):
    """Each argument lands in the vector body, the scalar remainder (T = 257: the last chunk
    holds one value), a chunk that takes the short path and one that takes the full path; its
    feature must be the same bits wherever it lands (the kernels' fused multiply-adds are
    explicit, so every copy of a loop computes the same expression)."""
    rng = np.random.default_rng(11)
    T = 257
    v = rng.standard_normal(T) * 0.2                      # every chunk short ...
    mixed = v.copy()
    mixed[::50] = 3.0                                     # ... or not (one value >= SMALL)
    rows = [np.roll(base, r) for base in (v, mixed) for r in range(0, T, 7)]
    Z = np.array(rows)
    shifts = [r for _ in range(2) for r in range(0, T, 7)]
    ones = np.ones(len(Z))
    c = np.ones(T)                                        # c[t] = 1: a position adds nothing
    _kernel(kernel, Z, ones, c)
    back = np.array([np.roll(z, -r) for z, r in zip(Z, shifts)])
    small = mixed != 3.0
    assert np.array_equal(back[:, small], np.broadcast_to(back[0, small], back[:, small].shape))
    half = len(Z) // 2
    assert np.array_equal(back[half:, ~small],
                          np.broadcast_to(back[half, ~small], back[half:, ~small].shape))


@pytest.mark.parametrize("kernel", ["erf", "relu"])
@pytest.mark.parametrize("T", [1, 7, 8, 257])
def test_fused_decision_values_equal_phi_a_and_not_the_rows_around(kernel, T):
    """The kernels' fused D = Phi A^T (predict's Phi a, the row still in cache) against numpy's
    product of the features they wrote, within the rounding of a sum of T products (gamma_T
    times the sum of |terms|); and a row's D is the same bits computed alone, in any block,
    with 1 or 2 numba threads (a fixed order of its own, no BLAS)."""
    import numba

    rng = np.random.default_rng(12)
    m, k = 300, 3
    Z0 = rng.standard_normal((m, T)) * rng.choice([0.1, 1.0, 5.0], (m, 1))
    xn = np.abs(rng.standard_normal(m)) + 0.5
    c = rng.uniform(0.5, 2.0, T)
    A = rng.standard_normal((k, T))
    Z, D = Z0.copy(), np.empty((m, k))
    _kernel(kernel, Z, xn, c, A, D)
    ref = Z @ A.T
    gamma = T * np.finfo(float).eps / (1 - T * np.finfo(float).eps)
    assert np.all(np.abs(D - ref) <= gamma * (np.abs(Z) @ np.abs(A).T) + 1e-300)
    Zf = Z0.copy()
    _kernel(kernel, Zf, xn, c)
    assert np.array_equal(Zf, Z)                # the same features with or without A
    before = numba.get_num_threads()
    try:
        for threads in {1, before}:
            numba.set_num_threads(threads)
            for lo, hi in ((0, 1), (5, 6), (7, 130), (130, m)):
                Zb, Db = Z0[lo:hi].copy(), np.empty((hi - lo, k))
                _kernel(kernel, Zb, xn[lo:hi], c, A, Db)
                assert np.array_equal(Db, D[lo:hi]) and np.array_equal(Zb, Z[lo:hi])
    finally:
        numba.set_num_threads(before)
