"""A row's Monte Carlo features do not depend on its neighbours (docs/INSTANTIATIONS.md).

For every Monte Carlo kind the registry builds (each built-in distribution with each kernel and
base it fits, user pieces, the closed forms' ``closed_form=False``), the features of a row must
be the same whether the row is transformed alone, in an odd-sized slice, in the whole array or
with one thread instead of two. BLAS products are not (their rounding depends on the shape of
the call: 4e-8 to 3.6e-7 relative in float32 before the fixed-order kernels), so these tests
failed then; the tolerance 1e-13 is the guarantee docs/INSTANTIATIONS.md states (the kernels
in fact give the same bits). The features themselves are checked against a dense numpy
oracle, phi(X; w) K / S, at the float32 product's rounding. A stream of one-row chunks then
solves ``fit``'s normal equations to rounding and predicts as ``fit`` does (docs/SCALE.md).
"""

import warnings

import numba
import numpy as np
import pytest
from numba import njit
from scipy.special import expit

import rwtool as rw
from rwtool.features import MonteCarloRKHS
from rwtool.features._montecarlo import BASES, DISTRIBUTIONS, DOT_BASES, KERNELS
from rwtool.features._rowwise import pad_rows, rows_times
from tests.features.test_montecarlo import soft_sign
from tests.helpers.normal_equations import backward_error

#: rtol of a row computed in another block (docs/INSTANTIATIONS.md); atol 0: relative per entry
ROW_RTOL = 1e-13


@njit
def laplace_kernel(u, w):
    s = 0.0
    for j in range(u.shape[0]):
        s += abs(u[j] - w[j])
    return np.exp(-0.5 * s)


def _kinds():
    """(label, unfitted map) for every Monte Carlo kind: the built-in pieces that fit together
    (<w, x> bases need w of the input's dimension, the stump base and the indicator kernel need
    the (column, threshold) draws of "stumps"), user pieces, and closed_form=False."""
    rw.register_base("soft_sign", soft_sign)
    rw.register_kernel("laplace_kernel", laplace_kernel)
    out = []
    for dist in DISTRIBUTIONS:
        for kernel in KERNELS:
            for base in BASES:
                stumpy = dist == "stumps"
                if (base == "stump" or kernel == "indicator-gaussian") != stumpy:
                    continue
                if stumpy and base in DOT_BASES:
                    continue
                kw = dict(distribution=dist, kernel=kernel, base=base)
                if dist == "cauchy" and kernel == "exponential":
                    kw.update(gamma=30.0, sampling="mc")   # exp(<w, u>) of Cauchy tails overflows
                out.append((f"{dist}:{kernel}:{base}", kw))
    out += [("normal:gaussian:soft_sign", dict(base="soft_sign")),
            ("stumps:indicator-gaussian:soft_sign",
             dict(distribution="stumps", kernel="indicator-gaussian", base="soft_sign")),
            ("normal:laplace_kernel:relu", dict(kernel="laplace_kernel", base="relu"))]
    kinds = [(label, lambda kw=kw: MonteCarloRKHS(n_features=41, random_state=2, **kw))
             for label, kw in out]
    for name, cls in rw.features.INSTANTIATIONS.items():
        kinds.append((f"{name}(closed_form=False)",
                      lambda cls=cls: cls(n_features=41, closed_form=False, random_state=2)))
    return kinds


KINDS = _kinds()


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(11)
    X = rng.standard_normal((101, 4))
    X[0] = 0.0                     # x = 0
    X[1] *= 30.0                   # a large ||x||
    X[2, 1] = X[3, 1] = 0.25       # ties between rows
    return X


def _fitted(make, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # mostly-zero features: irrelevant here
        return make().fit(X)


@pytest.mark.slow
@pytest.mark.parametrize("label,make", KINDS, ids=[k[0] for k in KINDS])
def test_a_row_has_the_same_features_in_any_block(label, make, rows):
    fmap = _fitted(make, rows)
    full = fmap.transform(rows)
    assert np.abs(full).max() > 0
    # single rows (first, last, either side of the kernels' 32-row tasks), odd slices, a view
    # in reverse order, a Fortran-ordered copy
    for i in (0, 1, 2, 31, 32, 33, 100):
        np.testing.assert_allclose(fmap.transform(rows[i:i + 1]), full[i:i + 1], rtol=ROW_RTOL,
                                   atol=0, err_msg=f"{label}: row {i} alone")
    for a, b in ((3, 10), (5, 42), (29, 96), (64, 101)):
        np.testing.assert_allclose(fmap.transform(rows[a:b]), full[a:b], rtol=ROW_RTOL, atol=0,
                                   err_msg=f"{label}: rows {a}:{b}")
    np.testing.assert_allclose(fmap.transform(rows[::-3]), full[::-3], rtol=ROW_RTOL, atol=0)
    np.testing.assert_allclose(fmap.transform(np.asfortranarray(rows)), full, rtol=ROW_RTOL,
                               atol=0)
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one_thread = fmap.transform(rows)
    finally:
        numba.set_num_threads(threads)
    np.testing.assert_allclose(one_thread, full, rtol=ROW_RTOL, atol=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fixed_order_product_is_the_product_row_by_row(dtype):
    """rows_times against numpy's product (an oracle with another order: float rounding
    apart), on sizes that are multiples of no tile (37 rows, 53 terms, 6 columns)."""
    rng = np.random.default_rng(3)
    B = rng.standard_normal((37, 53)).astype(dtype)
    M = rng.standard_normal((53, 6))
    out = np.empty((37, 6))
    rows_times(B, pad_rows(M.T, dtype), out)
    Bd, Md = B.astype(float), M.astype(dtype).astype(float)
    # the classical bound of a sum of 53 rounded terms: 53 eps sum_s |b_s m_s|
    bound = 53 * np.finfo(dtype).eps * (np.abs(Bd) @ np.abs(Md))
    assert np.all(np.abs(out - Bd @ Md) <= bound)
    for a, b in ((0, 1), (5, 6), (3, 36), (33, 37)):
        part = np.empty((b - a, 6))
        rows_times(B[a:b], pad_rows(M.T, dtype), part)
        np.testing.assert_array_equal(part, out[a:b])


def _oracle(fmap, X):
    """(1/S) sum_s K(w_s, u_t) phi(w_s, x) in float64 numpy, over all S draws (no folding)."""
    D = fmap.mc_.draws_
    KS = fmap._mc.sections()            # K(w_s, u_t) / S, the map's own (exact) sections
    base = fmap._mc.base
    if base == "stump":
        B = np.sign(X[:, D[:, 0].astype(int)] - D[:, 1][None, :])
    elif isinstance(base, str):
        Z = X @ D.T
        B = {"sign": np.sign, "relu": lambda z: np.maximum(z, 0.0), "tanh": np.tanh,
             "sigmoid": expit}[base](Z)
    else:
        B = np.array([[base.py_func(w, x) for w in D] for x in X])
    return B @ KS


@pytest.mark.parametrize("label,make", KINDS, ids=[k[0] for k in KINDS])
def test_features_equal_the_dense_product(label, make, rows):
    """Independent of the kernels' tiling and of the antithetic fold and prefix tables: the
    dense product of numpy. The <w, x> bases multiply in float32 (eps 6e-8 per operation over
    a few hundred terms), hence 1e-4 of the largest feature; the stump tables and user bases
    are float64 (1e-10). <w, x> is summed in float32 in a fixed order on any machine, so no
    sign flips against the oracle's float64 sums on these rows (none of the |<w, x>| is within
    float32 rounding of 0)."""
    fmap = _fitted(make, rows)
    got, want = fmap.transform(rows), _oracle(fmap, rows)
    scale = np.abs(want).max()
    tol = 1e-4 if fmap._mc.base in DOT_BASES else 1e-10
    assert np.abs(got - want).max() <= tol * scale, label


@pytest.mark.slow
@pytest.mark.parametrize("inst", ["mc:normal:gaussian:sign", "mc:cauchy:gaussian:relu",
                                  "mc:stumps:indicator-gaussian:stump"])
def test_one_row_chunks_give_the_model_fit_gives(inst, regression_data):
    """partial_fit one row at a time against fit, whose reg='auto' splits the rows by fold
    (docs/SCALE.md): with the same features per row the sums differ from fit's only in the
    order they are added, so the streamed coefficients solve fit's normal equations to a
    backward error of rounding (1e-16 measured; 1e-8 and predictions 1e-5 apart before), the
    tolerance the closed forms are held to, and the predictions agree to 1e-9 of their scale
    (these systems' condition numbers are at most 1e7 but for the stumps', 7e17, whose
    predictions still agree to 1e-12)."""
    X, y = regression_data
    X, y = X[:120], y[:120]
    kw = dict(instantiation=inst, n_features=40, standardize=False, random_state=5)
    full = rw.RWRegressor(**kw).fit(X, y)
    stream = rw.RWRegressor(**kw)
    for i in range(len(X)):
        stream.partial_fit(X[i:i + 1], y[i:i + 1])
    assert stream.reg_ == full.reg_
    assert backward_error(stream.coef_, full, X, y) < 1e-12
    a, b = stream.predict(X), full.predict(X)
    assert np.abs(a - b).max() <= 1e-9 * np.abs(b).max()
