"""X W^T around the inputs' modes (features._dot.sparse_dot, chosen by input_modes at fit).

Oracles: numpy's dense product of the standardised rows, (X - mu) / sd @ W.T, and exact
rational sums (fractions.Fraction) for the cancellation cases; the dense path of the same map
(the choice switched off) for whole models; bit-for-bit comparisons only between results of
this process (slices, thread counts, a saved and reloaded model).
"""

import math
import zipfile
from fractions import Fraction

import numba
import numpy as np
import pytest

import rwtool
import rwtool.features._base as fbase
from rwtool.estimators import RWClassifier, RWRegressor
from rwtool.features import RandomFourierFeatures, RWRelu, RWSign
from rwtool.features._dot import SPARSE_FRACTION, input_modes, sparse_dot, sparse_offsets
from rwtool.solvers._prune import subset_map

EPS = np.finfo(float).eps


def sparse_data(rng, m=600, d=40, density=0.12):
    """Mostly-zero columns (pixels, one-hot codes), one constant column, and one column of
    mean/sd near 1e6 (mostly 1e6, a few entries off by 0.5-2): the dense sum cancels there."""
    X = rng.standard_normal((m, d)) * (rng.random((m, d)) < density)
    X[:, 3] = 7.0
    X[:, 4] = 1e6 + np.where(rng.random(m) < 0.05, rng.uniform(0.5, 2.0, m), 0.0)
    return X


def test_input_modes_are_the_columns_most_frequent_values():
    rng = np.random.default_rng(0)
    X = sparse_data(rng, m=500)
    X[:250, 7] = 2.5            # a tie between 2.5 and 0 would pick the smaller; here 2.5 wins
    X[250:, 7] = np.where(rng.random(250) < 0.5, 0.0, 1.0)
    X[:, 9] = rng.uniform(1e3, 2e3, 500)       # all distinct: no value most rows share
    X[:, 10] = np.where(np.arange(500) < 50, 3.0, rng.standard_normal(500))
    X[:, 11] = np.where(np.arange(500) < 49, 3.0, rng.standard_normal(500))
    modes = input_modes(X)
    oracle = []
    for col in X.T:
        values, counts = np.unique(col, return_counts=True)
        # np.unique sorts: the smallest of ties; 0 where the value holds under a tenth of rows
        oracle.append(values[np.argmax(counts)] if 10 * counts.max() >= len(col) else 0.0)
    np.testing.assert_array_equal(modes, oracle)
    assert modes[7] == 2.5 and modes[3] == 7.0 and modes[4] == 1e6
    assert modes[9] == 0.0 and modes[10] == 3.0 and modes[11] == 0.0


def test_input_modes_none_when_dense_or_few_columns():
    rng = np.random.default_rng(1)
    assert input_modes(rng.standard_normal((300, 40))) is None
    assert input_modes(sparse_data(rng)[:, :16]) is None          # the fixed-order path's
    assert input_modes(np.empty((0, 40))) is None
    X = sparse_data(rng, d=40, density=0.0)
    X[:, 5:5 + int(0.3 * 40)] = rng.standard_normal((len(X), int(0.3 * 40)))
    assert np.count_nonzero(X != input_modes_or_zero(X)) / X.size > SPARSE_FRACTION
    assert input_modes(X) is None


def input_modes_or_zero(X):
    modes = input_modes(X)
    return np.zeros(X.shape[1]) if modes is None else modes


@pytest.mark.parametrize("T", [3, 517, 1100])
def test_sparse_dot_is_the_dense_product_with_cancellation(T):
    """Against exact sums of the float64 terms: |error| <= (d + 2) eps sum_j |x_j w_j| per
    entry, the bound of a sum of d + 1 rounded terms (the dense sum's own), where column 4
    (1e6 + a few ulps of noise) cancels; and against numpy's dense product at that scale."""
    rng = np.random.default_rng(2)
    X = sparse_data(rng, m=80)
    d = X.shape[1]
    W = rng.standard_normal((T, d))
    modes = input_modes(X)
    assert modes is not None
    out = np.empty((len(X), T))
    sparse_dot(X, *sparse_offsets(W, modes), out)
    scale = np.abs(X) @ np.abs(W).T
    assert np.all(np.abs(out - X @ W.T) <= 2 * (d + 2) * EPS * scale)
    for i, t in [(0, 0), (5, T - 1), (17, T // 2), (79, 1)]:
        exact = sum(Fraction(float(x)) * Fraction(float(w)) for x, w in zip(X[i], W[t]))
        assert abs(Fraction(float(out[i, t])) - exact) <= (d + 2) * EPS * scale[i, t]


def test_rows_far_from_the_modes_round_on_the_modes_scale():
    """A row far from the modes (raw columns mostly 1e6, the row near 0 there) cancels c_t's
    m_j w_tj against (x_j - m_j) w_tj: against exact sums, within (d + 2) eps
    sum_j (|x_j| + 2 |m_j|) |w_tj| (c_t's rounding and that of each difference), where the
    dense sum's own bound, (d + 2) eps sum_j |x_j w_tj|, does not hold (the row's terms are
    1e8 times smaller than the modes' here)."""
    rng = np.random.default_rng(11)
    X = sparse_data(rng, m=300)
    X[:, 5:10] += 1e6
    modes = input_modes(X)
    assert modes is not None and np.all(modes[5:10] == 1e6)
    d, T = X.shape[1], 60
    W = rng.standard_normal((T, d))
    Z = 0.01 * rng.standard_normal((4, d))
    out = np.empty((len(Z), T))
    sparse_dot(Z, *sparse_offsets(W, modes), out)
    bound = (d + 2) * EPS * ((np.abs(Z) + 2 * np.abs(modes)) @ np.abs(W).T)
    dense_kind = (d + 2) * EPS * (np.abs(Z) @ np.abs(W).T)
    worst = 0.0
    for i in range(len(Z)):
        for t in range(0, T, 7):
            exact = sum(Fraction(float(x)) * Fraction(float(w)) for x, w in zip(Z[i], W[t]))
            err = abs(Fraction(float(out[i, t])) - exact)
            assert err <= bound[i, t]
            worst = max(worst, float(err) / dense_kind[i, t])
    assert worst > 1.0


def test_estimator_projection_against_numpy_standardised_product():
    """The fitted map's X W^T on the estimator's standardised rows against numpy's
    (X - mu) / sd @ W.T with the bias column, mu and sd by numpy. Tolerance: the products'
    rounding (d eps of the terms' magnitudes) plus the standardisation's own, which the two
    compute differently: x - mu cancels to eps (|x| + |mu|) / sd per entry, 1e-8 relative in
    column 4 (mean 1e6, sd 0.1) -- in both, before any product."""
    rng = np.random.default_rng(3)
    X = sparse_data(rng, m=700)
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    est = RWClassifier(n_features=300, reg=1e-3, random_state=0).fit(X, y)
    fmap = est.feature_map_
    assert fmap.input_modes_ is not None and fmap._sparse is not None
    mu, sd = X.mean(axis=0), X.std(axis=0)
    sd = np.where(sd <= 1e-12 * np.abs(X).max(axis=0), 1.0, sd)
    Z = np.hstack([(X - mu) / sd, np.ones((len(X), 1))])
    oracle = Z @ fmap.W_.T
    out = np.empty_like(oracle)
    fmap._project(est._prepare_X(X), out)
    d = Z.shape[1]
    W = np.abs(fmap.W_)
    standardising = np.hstack([(np.abs(X) + np.abs(mu)) / sd, np.zeros((len(X), 1))]) @ W.T
    tol = 2 * (d + 2) * EPS * (np.abs(Z) @ W.T) + 8 * EPS * standardising
    assert np.all(np.abs(out - oracle) <= tol)
    Xp = est._prepare_X(X)
    assert np.all(np.abs(out - Xp @ fmap.W_.T) <= 2 * (d + 2) * EPS * (np.abs(Xp) @ W.T))


@pytest.mark.parametrize("cls", [RWSign, RWRelu, RandomFourierFeatures])
def test_a_rows_features_are_the_same_bits_in_any_cut_and_thread_count(cls):
    rng = np.random.default_rng(4)
    X = sparse_data(rng, m=300)
    fmap = cls(n_features=700, random_state=0).fit(X)
    assert fmap._sparse is not None
    whole = fmap.transform(X)
    for cut in (1, 7, 64, 299):
        parts = np.vstack([fmap.transform(X[a:a + cut]) for a in range(0, len(X), cut)])
        np.testing.assert_array_equal(parts, whole)
    threads = numba.get_num_threads()
    try:
        for n in range(1, numba.config.NUMBA_NUM_THREADS + 1):
            numba.set_num_threads(n)
            np.testing.assert_array_equal(fmap.transform(X), whole)
    finally:
        numba.set_num_threads(threads)
    blocks = np.vstack([Phi.copy() for _, _, Phi in fmap.blocks(X, block_size=37)])
    np.testing.assert_array_equal(blocks, whole)


def test_predict_of_one_row_and_of_many_and_any_thread_count_agree():
    rng = np.random.default_rng(5)
    X = sparse_data(rng, m=400)
    y = X[:, 0] - 2 * X[:, 1] + 0.1 * rng.standard_normal(len(X))
    est = RWRegressor(n_features=400, reg=1e-3, random_state=0).fit(X, y)
    assert est.feature_map_._sparse is not None
    many = est.predict(X)
    one = np.array([est.predict(X[i:i + 1])[0] for i in range(25)])
    np.testing.assert_array_equal(one, many[:25])
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        np.testing.assert_array_equal(est.predict(X), many)
    finally:
        numba.set_num_threads(threads)


def dense_twin(monkeypatch, make, X, y):
    """The same model fitted with the sparse path switched off (input_modes gives None)."""
    with monkeypatch.context() as mp:
        mp.setattr(fbase, "input_modes", lambda X: None)
        return make().fit(X, y)


@pytest.mark.parametrize("inst", ["rwsign", "rwrelu"])
def test_models_of_the_sparse_and_dense_paths_agree(monkeypatch, inst):
    """The features differ by rounding (about 1e-16 relative); the ridge system at
    reg = 1e-3 has a condition number below 1e4 here, so the decision values agree to 1e-9
    of their scale."""
    rng = np.random.default_rng(6)
    X = sparse_data(rng, m=500)
    y = np.where(X[:, 0] + X[:, 2] + 0.3 * rng.standard_normal(len(X)) > 0, "a", "b")

    def make():
        return RWClassifier(instantiation=inst, n_features=300, reg=1e-3, random_state=1)
    sparse = make().fit(X, y)
    dense = dense_twin(monkeypatch, make, X, y)
    assert sparse.feature_map_.input_modes_ is not None
    assert dense.feature_map_.input_modes_ is None and dense.feature_map_._sparse is None
    a, b = sparse.decision_function(X), dense.decision_function(X)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-9 * np.abs(b).max())
    np.testing.assert_array_equal(sparse.predict(X), dense.predict(X))


def test_model_files_keep_the_choice_and_old_files_load_dense(tmp_path):
    rng = np.random.default_rng(7)
    X = sparse_data(rng, m=300)
    y = np.where(X[:, 0] > 0, 1, 0)
    est = RWClassifier(n_features=200, reg=1e-3, random_state=2).fit(X, y)
    path = tmp_path / "m.rwm"
    rwtool.save(est, path)
    loaded = rwtool.load(path)
    np.testing.assert_array_equal(loaded.feature_map_.input_modes_, est.feature_map_.input_modes_)
    np.testing.assert_array_equal(loaded.decision_function(X), est.decision_function(X))
    sparse_values = est.decision_function(X)
    # a file written before input_modes_ existed: the map's state without the field
    fmap = est.feature_map_
    del fmap.input_modes_
    fmap._prepare_projection()
    old = tmp_path / "old.rwm"
    rwtool.save(est, old)
    with zipfile.ZipFile(old) as zf:
        assert "input_modes_" not in zf.read("model.json").decode()
    loaded_old = rwtool.load(old)
    assert getattr(loaded_old.feature_map_, "input_modes_", None) is None
    assert loaded_old.feature_map_._sparse is None
    # the dense product, as the model was fitted before: the in-memory model's bits
    np.testing.assert_array_equal(loaded_old.decision_function(X), est.decision_function(X))
    np.testing.assert_allclose(loaded_old.decision_function(X), sparse_values, rtol=0,
                               atol=1e-9 * np.abs(sparse_values).max())


def test_a_loaded_file_with_bad_modes_is_refused(tmp_path):
    rng = np.random.default_rng(8)
    X = sparse_data(rng, m=200)
    est = RWClassifier(n_features=50, reg=1e-3, random_state=0).fit(X, X[:, 0] > 0)
    est.feature_map_.input_modes_ = est.feature_map_.input_modes_[:-1]
    path = tmp_path / "bad.rwm"
    rwtool.save(est, path)
    with pytest.raises(rwtool.persist.ModelFileError, match="input_modes_"):
        rwtool.load(path)


def test_subsets_of_centres_keep_the_modes_whole_when_T_equals_d():
    rng = np.random.default_rng(9)
    X = sparse_data(rng, m=300, d=40)
    fmap = RWSign(n_features=40, random_state=0).fit(X)
    assert fmap.input_modes_ is not None
    keep = np.arange(0, 40, 3)
    sub = subset_map(fmap, keep)
    np.testing.assert_array_equal(sub.input_modes_, fmap.input_modes_)
    np.testing.assert_array_equal(sub.transform(X), fmap.transform(X)[:, keep])


def test_streaming_fit_without_rows_keeps_the_dense_product():
    fmap = RWSign(n_features=30, random_state=0).fit(np.empty((0, 40)))
    assert fmap.input_modes_ is None and fmap._sparse is None
    assert math.isfinite(float(fmap.transform(np.zeros((2, 40))).sum()))


def test_read_only_inputs_compile_no_other_signature():
    """sparse_dot gives its kernel read-only views (a loaded model's arrays and scikit-learn's
    memory maps are read-only, fitted ones are not: one signature for both)."""
    from rwtool.features import _dot
    rng = np.random.default_rng(10)
    X = sparse_data(rng, m=100)
    fmap = RWSign(n_features=20, random_state=0).fit(X)
    want = fmap.transform(X)
    before = len(_dot._sparse_rows.signatures)
    frozen = X.copy()
    frozen.flags.writeable = False
    for a in fmap._sparse:
        a.flags.writeable = False
    assert np.array_equal(fmap.transform(frozen), want)
    assert len(_dot._sparse_rows.signatures) == before
