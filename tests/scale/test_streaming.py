"""partial_fit and the sufficient statistics: a stream gives the model fit gives, checked against
dense numpy solves and scikit-learn's Lasso."""

import pickle

import numpy as np
import pytest

import rwtool as rw
from rwtool.features import RandomFourierFeatures
from rwtool.solvers._sufficient import SufficientStats, fold_of, row_keys, select_reg
from rwtool.scale._streaming import Moments, scan_moments

ESTIMATORS = [rw.RWRegressor, rw.RKSRegressor, rw.RWClassifier, rw.RKSClassifier]
CUTS = [(0, 170), (170, 171), (171, 400), (400, 600)]   # uneven, one of a single row


@pytest.fixture(scope="module")
def data(scale_data):
    return scale_data


def _target(cls, data, binary=False):
    X, y, labels = data
    if cls._estimator_type == "regressor":
        return y
    return np.where(labels == "a", "a", "b") if binary else labels


def _stream(est, X, y, cuts=CUTS, **first):
    for k, (i, j) in enumerate(cuts):
        kw = dict(first) if k == 0 else {}
        if est._estimator_type == "classifier" and k == 0:
            kw["classes"] = np.unique(y)
        est.partial_fit(X[i:j], y[i:j], **kw)
    return est


def _rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


@pytest.mark.parametrize("cls", ESTIMATORS)
@pytest.mark.parametrize("standardize", [False, True])
def test_partial_fit_equals_fit(data, cls, standardize):
    X, _, _ = data
    y = _target(cls, data)
    params = dict(n_features=60, reg=1e-5, random_state=3, standardize=standardize)
    full = cls(**params).fit(X, y)
    first = {}
    if standardize:   # the statistics of all rows, from a first pass over the same chunks
        xs, ys = scan_moments([(X[i:j], y[i:j]) for i, j in CUTS],
                              regression=cls._estimator_type == "regressor")
        first = {"x_scaler": xs, "y_scaler": ys}
    s = _stream(cls(**params), X, y, **first)
    assert _rel(s.coef_, full.coef_) < 1e-9
    np.testing.assert_allclose(s.feature_matrix(X[:3]), full.feature_matrix(X[:3]), rtol=1e-12)
    if cls._estimator_type == "classifier":
        np.testing.assert_array_equal(s.predict(X), full.predict(X))


@pytest.mark.parametrize("binary", [True, False])
def test_stream_matches_dense_solve(data, binary):
    """Independent oracle: the dense normal equations of the feature matrix, by numpy."""
    X, _, _ = data
    y = _target(rw.RKSClassifier, data, binary)
    reg = 1e-3
    s = _stream(rw.RKSClassifier(n_features=50, reg=reg, standardize=False, random_state=1),
                X, y)
    Phi = s.feature_matrix(X)
    classes = np.unique(y)
    Y = np.where(y[:, None] == classes[None, :], 1.0, -1.0)
    Y = Y[:, 1:] if len(classes) == 2 else Y
    expect = np.linalg.solve(Phi.T @ Phi + len(X) * reg * np.eye(Phi.shape[1]), Phi.T @ Y)
    assert _rel(s.coef_, expect) < 1e-8


def test_lazy_solve_and_growth(data):
    X, y, _ = data
    s = rw.RWRegressor(n_features=40, reg=1e-4, random_state=0, standardize=False)
    s.partial_fit(X[:300], y[:300])
    assert "coef_" not in vars(s)          # nothing solved yet
    c1 = s.coef_.copy()                    # solved on first read
    s.partial_fit(X[300:], y[300:])
    assert "coef_" not in vars(s)
    full = rw.RWRegressor(n_features=40, reg=1e-4, random_state=0, standardize=False).fit(X, y)
    assert _rel(s.coef_, full.coef_) < 1e-9
    assert _rel(c1, full.coef_) > 1e-6
    # the sums survive pickling (to a Dask worker, say): the copy solves to the same model
    s.partial_fit(X[:10], y[:10])
    copy = pickle.loads(pickle.dumps(s))
    np.testing.assert_array_equal(copy.predict(X[:5]), s.predict(X[:5]))
    assert s.fit_time_ > 0


def test_first_chunk_standardisation(data):
    """Without statistics the first chunk standardises: the model of data scaled that way."""
    X, y, _ = data
    s = _stream(rw.RWRegressor(n_features=40, reg=1e-5, random_state=0), X, y)
    np.testing.assert_allclose(s.x_scaler_.mean, X[:170].mean(axis=0))
    np.testing.assert_allclose(s.y_scaler_.scale, [y[:170].std()])
    assert s.score(X, y) > 0.8


def test_auto_reg_from_fold_sums(data):
    """reg='auto' on a stream: the scores from the sums equal explicit validation scores, and
    the choice does not depend on how the rows were chunked."""
    X, y, _ = data
    a = _stream(rw.RWRegressor(n_features=40, reg="auto", random_state=2, standardize=False),
                X, y)
    b = _stream(rw.RWRegressor(n_features=40, reg="auto", random_state=2, standardize=False),
                X, y, cuts=[(0, 333), (333, 600)])
    assert a.reg_ == b.reg_
    assert _rel(a.coef_, b.coef_) < 1e-9
    assert a.reg_search_["score"] == "r2" and a.reg_search_["folds"] == 3
    # explicit: fold f = rows whose content hashes to f; fit on the rest, R^2 on f
    folds = fold_of(row_keys(X), 3)
    assert 150 < np.bincount(folds).min()
    Phi = a.feature_matrix(X)
    G = a.feature_map_.gram()
    j = a.reg_search_["reg"].index(1e-6)
    scores = []
    for f in range(3):
        tr, va = folds != f, folds == f
        m = tr.sum()
        M = Phi[tr].T @ Phi[tr] + m * 1e-6 * G + m * a.eps * np.eye(40)
        c = np.linalg.solve(M, Phi[tr].T @ y[tr])
        r = y[va] - Phi[va] @ c
        scores.append(1 - r @ r / ((y[va] - y[va].mean()) ** 2).sum())
    assert abs(np.mean(scores) - a.reg_search_["mean_score"][j]) < 1e-8


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # jitter at the tiny extended regs
def test_select_reg_extends_grid_at_an_edge():
    """A best value at an end of the grid grows the grid that way: targets in the span of the
    features want the smallest reg, pure noise the largest."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 3))
    fmap = RandomFourierFeatures(n_features=30, variant="phase", random_state=0).fit(X)
    grid = list(np.logspace(-8, -4, 5))
    exact = fmap.transform(X) @ rng.normal(size=(30, 1))
    best, table = select_reg(SufficientStats(30, 1, 3).add(fmap, X, exact), grid, False)
    assert best < 1e-8 and table["reg"][0] < 1e-8
    noise = rng.normal(size=(400, 1))
    best, table = select_reg(SufficientStats(30, 1, 3).add(fmap, X, noise), grid, False)
    assert best > 1e-4 and table["reg"][-1] > 1e-4


def test_lasso_stream_against_sklearn(data):
    from sklearn.linear_model import Lasso
    X, y, _ = data
    s = _stream(rw.RKSRegressor(n_features=40, solver="lasso", reg=1e-3, standardize=False,
                                tol=1e-10, max_iter=100000, random_state=0), X, y)
    Phi = rw.RKSRegressor(n_features=40, reg=1e-3, standardize=False,
                          random_state=0).fit(X, y).feature_matrix(X)
    ref = Lasso(alpha=1e-3, fit_intercept=False, tol=1e-12, max_iter=200000).fit(Phi, y).coef_
    np.testing.assert_allclose(s.predict(X), Phi @ ref, atol=1e-5)
    assert s.n_features_out_ == np.count_nonzero(ref)


LASSO_CASES = [  # fit solved on working sets before (T > m), and solves that crawl (T < m)
    (rw.RWRegressor, dict(instantiation="rwrelu", n_features=800, reg=1e-3)),
    (rw.RKSRegressor, dict(n_features=100, reg=1e-4)),
    (rw.RKSClassifier, dict(n_features=60, reg=1e-4)),
]


@pytest.mark.parametrize("cls, kw", LASSO_CASES)
def test_lasso_fit_equals_partial_fit_to_rounding(data, cls, kw):
    """docs/SCALE.md: at the default tol, the Lasso of fit and of a stream (uneven chunks, a
    1-row chunk) is one model to rounding: both finish on the solution of the optimality
    conditions on its support, from Gram matrices equal to rounding (rows summed in another
    order), so they differ by about cond(Q_AA) x 1e-16 (1e-9 leaves room for a condition number
    of 1e6). Oracle: the Lasso's optimality conditions checked by numpy on the whole feature
    matrix: |Phi^T r| / m <= lam, with equality and the coefficient's sign on the support."""
    X, _, _ = data
    y = _target(cls, data)
    kw = dict(kw, solver="lasso", random_state=0)
    full = cls(**kw).fit(X, y)
    xs, ys = scan_moments([(X[i:j], y[i:j]) for i, j in CUTS],
                          regression=cls._estimator_type == "regressor")
    s = _stream(cls(**kw), X, y, x_scaler=xs, y_scaler=ys)
    decide = "predict" if cls._estimator_type == "regressor" else "decision_function"
    assert _rel(getattr(s, decide)(X), getattr(full, decide)(X)) < 1e-9
    assert all(full.solver_info_["converged"]) and all(s.solver_info_["converged"])
    # the coded targets the Lasso fitted, and every one of the T features it chose from
    if cls._estimator_type == "regressor":
        Y = full.y_scaler_.transform(y[:, None])
    else:
        Y = np.where(y[:, None] == full.classes_[None, :], 1.0, -1.0)
    twin = {k: v for k, v in kw.items() if k not in ("solver", "reg")}
    Phi = cls(**twin).fit(X, y).feature_matrix(X)
    kept = full.feature_matrix(X)        # the kept features, rescaled to their number
    R = Y - kept @ full.coef_
    C = Phi.T @ R / len(y)
    lam = kw["reg"]
    assert np.abs(C).max() <= lam * (1 + 1e-6)
    unit = lambda P: P / np.maximum(np.linalg.norm(P, axis=0), 1e-300)
    where = np.argmax(np.abs(unit(Phi).T @ unit(kept)), axis=0)   # each kept feature's column
    on = full.coef_ != 0
    np.testing.assert_allclose(C[where][on], lam * np.sign(full.coef_[on]), rtol=1e-6)


def test_moments_merge_equals_numpy():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(1001, 3)) * 1e3 + 1e6
    m = Moments.of(X[:1]) + Moments.of(X[1:400]) + Moments(3) + Moments.of(X[400:])
    np.testing.assert_allclose(m.mean, X.mean(axis=0), rtol=1e-14)
    np.testing.assert_allclose(m.std, X.std(axis=0), rtol=1e-10)
    huge = Moments.of(X[:10] * 1e300) + Moments.of(X[10:] * 1e300)   # squares would overflow
    np.testing.assert_allclose(huge.std, X.std(axis=0) * 1e300, rtol=1e-10)


def test_stats_merge_and_fold_positions():
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(200, 3)), rng.normal(size=(200, 2))
    fmap = RandomFourierFeatures(n_features=20, variant="phase", random_state=0).fit(X)
    whole = SufficientStats(20, 2, 3).add(fmap, X, Y)
    parts = (SufficientStats(20, 2, 3).add(fmap, X[:77], Y[:77], start=0)
             + SufficientStats(20, 2, 3).add(fmap, X[77:], Y[77:], start=77))
    for name in ("A", "B", "ysum", "yy"):
        np.testing.assert_allclose(getattr(parts, name), getattr(whole, name), rtol=1e-12,
                                   atol=1e-12)
    np.testing.assert_array_equal(parts.n, whole.n)
    with pytest.raises(ValueError, match="at least two"):
        select_reg(SufficientStats(20, 2, 3).add(fmap, X[:1], Y[:1]), [1e-3], False)


@pytest.mark.parametrize("case, match", [
    ("no classes", "classes must be given"),
    ("unseen label", "not in the classes"),
    ("late scaler", "fixed by the first"),
    ("auto after fixed", "started with a fixed reg"),
])
def test_clear_errors(data, case, match):
    X, y, labels = data
    with pytest.raises(ValueError, match=match):
        if case == "no classes":
            rw.RWClassifier(n_features=10).partial_fit(X, labels)
        elif case == "unseen label":
            rw.RWClassifier(n_features=10).partial_fit(X[:5], labels[:5], classes=["a", "b"])
            rw.RWClassifier(n_features=10).partial_fit(X, labels, classes=["a", "b"])
        elif case == "late scaler":
            est = rw.RWRegressor(n_features=10).partial_fit(X, y)
            est.partial_fit(X, y, x_scaler=Moments.of(X))
        else:
            est = rw.RWRegressor(n_features=10, reg=1e-3).partial_fit(X, y)
            est.set_params(reg="auto").coef_


def test_fit_and_partial_fit_start_over(data):
    """fit replaces a stream; partial_fit after fit starts a new stream (fit keeps no sums)."""
    X, y, _ = data
    est = rw.RWRegressor(n_features=20, reg=1e-3, random_state=0).partial_fit(X[:50], y[:50])
    est.fit(X, y)
    ref = rw.RWRegressor(n_features=20, reg=1e-3, random_state=0).fit(X, y)
    np.testing.assert_array_equal(est.coef_, ref.coef_)
    with pytest.warns(UserWarning, match="starts a new model"):
        est.partial_fit(X[:50], y[:50])
    new = rw.RWRegressor(n_features=20, reg=1e-3, random_state=0).partial_fit(X[:50], y[:50])
    np.testing.assert_array_equal(est.coef_, new.coef_)


@pytest.mark.slow
def test_rwtool_imports_and_streams_without_dask():
    import subprocess
    import sys
    code = ("import sys; sys.modules['dask'] = None; sys.modules['distributed'] = None\n"
            "import numpy as np, rwtool as rw\n"
            "X = np.random.default_rng(0).normal(size=(50, 2))\n"
            "est = rw.RKSRegressor(n_features=10).partial_fit(X, X[:, 0])\n"
            "print(est.predict(X[:2]).shape)\n"
            "try:\n"
            "    from rwtool.scale import _dask as dask_backend; dask_backend.as_dask_arrays(X)\n"
            "except ImportError as exc:\n"
            "    print('ImportError', exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "(2,)" in out.stdout and "rwtool[dask]" in out.stdout


def test_partial_fit_exists_only_for_solvers_that_learn_from_sums():
    # scikit-learn's checks (and incremental wrappers) call partial_fit when hasattr says so
    assert hasattr(rw.RWClassifier(solver="lstsq"), "partial_fit")
    assert hasattr(rw.RKSRegressor(solver="ridge"), "partial_fit")
    assert hasattr(rw.RWRegressor(solver="lasso"), "partial_fit")
    for est in (rw.RWClassifier(solver="sfgd"), rw.RWRegressor(solver="osd"),
                rw.RKSClassifier(solver="sgd")):
        assert not hasattr(est, "partial_fit")
        with pytest.raises(AttributeError, match="streaming needs solver"):
            est.partial_fit


# ----------------------------------------------------------------------------- CSV files

def _write_csv(path, n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    color = rng.choice(["red", "green", "blue"], n)
    y = np.sin(X[:, 0]) + 0.5 * (color == "red") + 0.1 * rng.normal(size=n)
    label = np.where(y > 0.3, "high", "low")
    with open(path, "w") as fh:
        fh.write("a,b,c,color,y,label\n")
        for i in range(n):
            fh.write(f"{X[i, 0]:.6f},{X[i, 1]:.6f},{X[i, 2]:.6f},{color[i]},{y[i]:.6f},"
                     f"{label[i]}\n")
    return path


@pytest.mark.parametrize("target, cls", [("y", rw.RWRegressor), ("label", rw.RKSClassifier)])
def test_train_csv_equals_in_memory_fit(tmp_path, target, cls):
    """Streaming a file in small blocks gives the model fit gives on read_csv's X, y."""
    from rwtool.data import read_csv
    from rwtool.scale._train_csv import train_csv
    path = _write_csv(tmp_path / "d.csv")
    other = "label" if target == "y" else "y"
    run = train_csv(path, target, cls(n_features=40, reg=1e-5, random_state=0), test_size=0,
                    block_bytes=4096, ignore=[other])
    data = read_csv(path, target, ignore=[other])
    ref = cls(n_features=40, reg=1e-5, random_state=0).fit(data.X, data.y)
    assert run.n_train == 3000 and run.n_test == 0
    assert _rel(run.estimator.coef_, ref.coef_) < 1e-9
    key = "train_r2" if target == "y" else "train_accuracy"
    assert run.metrics[key] == pytest.approx(ref.score(data.X, data.y), rel=1e-9)


def test_train_csv_holdout_and_test_file(tmp_path):
    from rwtool.data import read_csv
    from rwtool.solvers._sufficient import position_uniform
    from rwtool.scale._train_csv import _HOLDOUT_SEED, train_csv
    path = _write_csv(tmp_path / "d.csv")
    run = train_csv(path, "y", rw.RWRegressor(n_features=40, reg=1e-6, random_state=0), test_size=0.3,
                    split_seed=7, block_bytes=4096, ignore=["label"])
    held = position_uniform(np.arange(3000), _HOLDOUT_SEED + 7) < 0.3
    assert run.n_test == held.sum() and 800 < run.n_test < 1000
    data = read_csv(path, "y", ignore=["label"])
    ref = rw.RWRegressor(n_features=40, reg=1e-6, random_state=0).fit(data.X[~held], data.y[~held])
    assert _rel(run.estimator.coef_, ref.coef_) < 1e-9
    assert run.metrics["test_r2"] == pytest.approx(ref.score(data.X[held], data.y[held]),
                                                   rel=1e-9)
    test = _write_csv(tmp_path / "t.csv", n=500, seed=1)
    run2 = train_csv(path, "y", rw.RWRegressor(n_features=40, reg=1e-6, random_state=0), test=test,
                     block_bytes=4096, ignore=["label"])
    tdata = run2.preprocessing.apply_csv(test)
    assert run2.metrics["n_test"] == 500
    assert run2.metrics["test_mse"] == pytest.approx(
        np.mean((run2.estimator.predict(tdata.X) - tdata.y) ** 2), rel=1e-9)
    with pytest.raises(ValueError, match="cannot learn from a stream"):
        train_csv(path, "y", rw.RWRegressor(solver="sfgd", reg=1e-3), ignore=["label"])


@pytest.mark.slow
def test_streaming_cli_under_a_memory_limit(tmp_path):
    """`rwtool train` on a file larger than the data limit of its process streams and
    succeeds; holding the file's size in memory fails under the same limit.

    The limit is RLIMIT_DATA (heap and anonymous mappings: numpy's and Arrow's buffers), which
    rwtool.resources honours like RLIMIT_AS; a streaming run holds about 340 MB of it (the
    interpreter, numba, Arrow), where its address space is 680 MB, so the file above a 450 MB
    data limit is half the one an 800 MB address-space limit needed."""
    import json
    import os
    import resource
    import subprocess
    import sys
    limit = 450 * 2**20
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 3))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=2000)
    pad = "x" * 2000                  # wide rows: many bytes, few rows, a quick test
    block = "".join(f"{X[i, 0]:.5f},{X[i, 1]:.5f},{X[i, 2]:.5f},{pad},{y[i]:.5f}\n"
                    for i in range(2000)).encode()
    path = tmp_path / "big.csv"
    with open(path, "wb") as fh:
        fh.write(b"a,b,c,note,y\n")
        while fh.tell() <= limit + 20 * 2**20:
            fh.write(block)
    assert os.path.getsize(path) > limit

    def cap():
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))

    # one malloc arena and the system allocator for Arrow: memory reserved but not in use
    # would otherwise eat into the limit
    env = dict(os.environ, MALLOC_ARENA_MAX="1", ARROW_DEFAULT_MEMORY_POOL="system",
               OPENBLAS_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "rwtool", "train", str(path), "--target", "y", "--ignore",
           "note", "-T", "50", "--no-progress", "--json", "--out", str(tmp_path / "m.rwm")]
    out = subprocess.run(cmd, preexec_fn=cap, env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout)
    assert report["data"]["streamed"] is True
    assert report["metrics"]["test_r2"] > 0.9
    assert report["metrics"]["n_train"] + report["metrics"]["n_test"] == 2000 * (
        (os.path.getsize(path) - 13) // len(block))
    model = rw.load(tmp_path / "m.rwm")
    assert model.n_features_in_ == 3
    # the limit bites: the file's size in memory is refused under it. (The in-memory path is
    # no stable control: whether it fits depends on how much of the file the reader holds at
    # once, which its speed work changed; it has both trained and refused with a located
    # FileTooLargeError under this limit.)
    hold = subprocess.run([sys.executable, "-c", "import numpy as np, os; "
                           f"a = np.ones({os.path.getsize(path)} // 8)"],
                          preexec_fn=cap, env=env, capture_output=True, text=True, timeout=600)
    assert hold.returncode != 0 and "MemoryError" in hold.stderr
