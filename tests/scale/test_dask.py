"""The Dask backend on a real LocalCluster of 2 worker processes: the Dask fit is the in-memory fit."""

import os
import signal
import threading
import time

import numpy as np
import pytest

import rwtool as rw
from rwtool.model_selection._search import LogUniform, RandomizedSearchCV

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

CHUNKS = (170, 1, 229, 0, 200)   # uneven, one row, one empty


@pytest.fixture
def own_client():
    """A cluster of its own for a test that kills a worker: the shared one is never left
    waiting for a nanny's restart (distributed's bookkeeping of a removed worker can race with
    a wait or a close on a loaded machine)."""
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    client = distributed.Client(cluster)
    yield client
    client.close()
    try:
        cluster.close()
    except KeyError:          # the race above, in distributed's teardown; nothing of ours
        pass


@pytest.fixture(scope="module")
def data(scale_data):
    X, y, labels = scale_data
    return X, {"regression": y, "binary": np.where(labels == "a", "a", "b"),
               "multiclass": labels}


def _rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


CASES = [(rw.RWRegressor, "regression"), (rw.RWClassifier, "binary"),
         (rw.RWClassifier, "multiclass"), (rw.RKSRegressor, "regression"),
         (rw.RKSClassifier, "binary"), (rw.RKSClassifier, "multiclass")]


@pytest.mark.parametrize("cls, task", CASES)
def test_dask_fit_equals_in_memory_fit(client, data, cls, task):
    X, ys = data
    y = ys[task]
    params = dict(n_features=60, reg=1e-5, random_state=4)
    ref = cls(**params).fit(X, y)
    Xd = da.from_array(X, chunks=(CHUNKS, 4))
    est = cls(**params).fit(Xd, da.from_array(y, chunks=300))   # y re-chunked to X's rows
    assert est.n_partitions_ == len(CHUNKS)
    assert _rel(est.coef_, ref.coef_) < 1e-9
    pred = est.predict(Xd)
    assert isinstance(pred, da.Array)
    if cls._estimator_type == "classifier":
        np.testing.assert_array_equal(pred.compute(), ref.predict(X))
        D = est.decision_function(Xd)
        assert isinstance(D, da.Array)
        np.testing.assert_allclose(D.compute(), ref.decision_function(X), rtol=1e-7, atol=1e-9)
    else:
        np.testing.assert_allclose(pred.compute(), ref.predict(X), rtol=1e-7, atol=1e-9)
    assert abs(est.score(Xd, y) - ref.score(X, y)) < 1e-9


@pytest.fixture(scope="module")
def noisy(data):
    """The scale data with noisier targets (40% of the labels moved to the next class): the
    default reg="auto" then chooses regs at which the coefficients are well-conditioned enough
    to compare across modes at 1e-9."""
    X, ys = data
    rng = np.random.default_rng(7)
    shift = (rng.random(len(X)) < 0.4).astype(int)
    classes = np.array(["a", "b", "c"])
    labels = classes[(np.searchsorted(classes, ys["multiclass"]) + shift) % 3]
    return X, {"regression": ys["regression"] + 0.5 * rng.normal(size=len(X)),
               "binary": np.where(labels == "a", "a", "b"), "multiclass": labels}


@pytest.mark.parametrize("cls, task", CASES)
def test_default_reg_is_one_choice_in_memory_streamed_and_on_dask(client, noisy, cls, task,
                                                                  monkeypatch):
    """reg=None (reg="auto") on uneven Dask partitions, on a stream of uneven chunks (with the
    statistics of all rows) and in memory: one criterion from the same content-hashed fold
    sums (and classifiers' validation sample, made smaller than the data here), so the same
    reg, the same candidates' scores and the same model."""
    from rwtool.solvers import _from_sums as from_sums
    from rwtool.scale._streaming import Moments
    monkeypatch.setattr(from_sums, "VALIDATION_ROWS", 250)
    X, ys = noisy
    y = ys[task]
    T = 30
    mem = cls(n_features=T, random_state=4).fit(X, y)
    dsk = cls(n_features=T, random_state=4).fit(da.from_array(X, chunks=(CHUNKS, 4)), y)
    first = {"x_scaler": Moments.of(X)}
    first.update({"classes": np.unique(y)} if cls._estimator_type == "classifier"
                 else {"y_scaler": Moments.of(y)})
    stream = cls(n_features=T, random_state=4)
    for k, (i, j) in enumerate([(0, 170), (170, 171), (171, 398), (398, 600)]):
        stream.partial_fit(X[i:j], y[i:j], **(first if k == 0 else {}))
    for other in (dsk, stream):
        assert other.reg_ == mem.reg_
        assert other.reg_search_["reg"] == mem.reg_search_["reg"]
        np.testing.assert_allclose(other.reg_search_["mean_score"],
                                   mem.reg_search_["mean_score"], rtol=1e-9, atol=1e-12)
        assert _rel(other.coef_, mem.coef_) < 1e-9
    assert mem.reg_search_["score"] == ("accuracy" if cls._estimator_type == "classifier"
                                        else "r2")


@pytest.mark.parametrize("cls, task", [(rw.RWRegressor, "regression"),
                                       (rw.RKSClassifier, "binary")])
def test_default_lasso_is_one_choice_in_memory_and_on_dask(client, noisy, cls, task,
                                                           monkeypatch):
    """The Lasso's default reg="auto" (its cross-validated path) from the same sums on Dask
    partitions as in memory: the same lams walked, the same choice, the same model up to the
    solver's tolerance (the sums are added in another order)."""
    from rwtool.solvers import _from_sums as from_sums
    monkeypatch.setattr(from_sums, "VALIDATION_ROWS", 250)
    X, ys = noisy
    y = ys[task]
    kw = dict(n_features=30, solver="lasso", tol=1e-10, max_iter=100000, random_state=4)
    mem = cls(**kw).fit(X, y)
    dsk = cls(**kw).fit(da.from_array(X, chunks=(CHUNKS, 4)), y)
    # lam_max = max |Phi^T y| / m, from sums added in another order: equal to rounding
    assert dsk.reg_ == pytest.approx(mem.reg_, rel=1e-12)
    np.testing.assert_allclose(dsk.reg_search_["reg"], mem.reg_search_["reg"], rtol=1e-12)
    np.testing.assert_allclose(dsk.reg_search_["mean_score"], mem.reg_search_["mean_score"],
                               rtol=1e-6, atol=1e-9)
    D = dsk.decision_function(X) if cls._estimator_type == "classifier" else dsk.predict(X)
    ref = mem.decision_function(X) if cls._estimator_type == "classifier" else mem.predict(X)
    np.testing.assert_allclose(D, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls, task, kw", [
    (rw.RWRegressor, "regression", dict(instantiation="rwrelu", n_features=800, reg=1e-3)),
    (rw.RKSClassifier, "multiclass", dict(n_features=60, reg=1e-4))])
def test_lasso_fixed_reg_equals_fit_on_dask(client, data, cls, task, kw):
    """docs/SCALE.md: at the default tol the Lasso on Dask partitions is fit's to rounding (both
    finish on the optimality conditions of the support, from sums equal to rounding; 1e-9
    leaves room for a condition number of 1e6 on the support). Before the finish, fit solved on
    working sets (T > m) or stopped anywhere within tol, and the same sums streamed differed
    from it by 1.6e-4 and 3e-3 (tests/scale/test_streaming.py)."""
    X, ys = data
    y = ys[task]
    kw = dict(kw, solver="lasso", random_state=0)
    mem = cls(**kw).fit(X, y)
    dsk = cls(**kw).fit(da.from_array(X, chunks=(CHUNKS, 4)), y)
    decide = "predict" if cls._estimator_type == "regressor" else "decision_function"
    assert _rel(getattr(dsk, decide)(X), getattr(mem, decide)(X)) < 1e-9
    assert all(mem.solver_info_["converged"]) and all(dsk.solver_info_["converged"])


def test_dataframe_input_and_auto_reg_equal_the_stream(client, data):
    """A dask.dataframe fits like its array; reg='auto' picks from the same content-hashed
    fold sums as a partial_fit stream with the same statistics, so the two models agree."""
    import pandas as pd
    from rwtool.scale._streaming import Moments
    X, ys = data
    y = ys["regression"]
    frame = pd.DataFrame(X, columns=list("abcd")).assign(t=y)
    ddf = dd.from_pandas(frame, npartitions=3)
    est = rw.RWRegressor(n_features=50, reg="auto", random_state=1).fit(ddf[list("abcd")],
                                                                       ddf["t"])
    stream = rw.RWRegressor(n_features=50, reg="auto", random_state=1)
    for i, j in [(0, 250), (250, 600)]:
        kw = {"x_scaler": Moments.of(X), "y_scaler": Moments.of(y)} if i == 0 else {}
        stream.partial_fit(X[i:j], y[i:j], **kw)
    assert est.reg_ == stream.reg_
    assert est.reg_search_["reg"] == stream.reg_search_["reg"]
    np.testing.assert_allclose(est.reg_search_["mean_score"], stream.reg_search_["mean_score"],
                               rtol=1e-9)
    # the chosen reg is tiny (about 1e-10), so rounding in the sums is amplified by the
    # condition number in the coefficients, not in the function they define
    assert _rel(est.coef_, stream.coef_) < 1e-7
    out = est.predict(dd.from_pandas(frame[list("abcd")], npartitions=2))
    assert _rel(out.compute(), stream.predict(X)) < 1e-9
    # the collection's column names are kept and checked (scikit-learn's conventions)
    assert list(est.feature_names_in_) == list("abcd")
    with pytest.raises(ValueError, match="should match"):
        est.predict(dd.from_pandas(frame[list("abdc")], npartitions=2))


@pytest.mark.parametrize("cls, task", [(rw.RKSClassifier, "multiclass"),
                                       (rw.RWRegressor, "regression")])
def test_randomized_search_over_reg_equals_in_memory(client, data, cls, task):
    X, ys = data
    y = ys[task]
    kw = dict(space={"reg": LogUniform(1e-8, 1e-2)}, n_iter=12, cv=3, random_state=0)
    mem = RandomizedSearchCV(cls(n_features=40), **kw).fit(X, y)
    dsk = RandomizedSearchCV(cls(n_features=40), **kw).fit(da.from_array(X, chunks=(CHUNKS, 4)),
                                                          y)
    np.testing.assert_allclose(dsk.cv_results_["mean_test_score"],
                               mem.cv_results_["mean_test_score"], rtol=1e-9, atol=1e-12)
    assert dsk.best_params_ == mem.best_params_
    # the refit at the best reg (small: ill-conditioned) defines the same function
    assert _rel(dsk.best_estimator_.coef_, mem.best_estimator_.coef_) < 1e-7
    D = dsk.best_estimator_.predict(X) if task == "regression" else \
        dsk.best_estimator_.decision_function(X)
    D_ref = mem.best_estimator_.predict(X) if task == "regression" else \
        mem.best_estimator_.decision_function(X)
    assert _rel(D, D_ref) < 1e-9


def _slow_partitions(X, n_parts, seconds):
    """X as a Dask array whose partitions each take ``seconds`` to load (a slow file system)."""
    import dask

    def load(i, rows):
        time.sleep(seconds)
        return rows

    parts = np.array_split(X, n_parts)
    return da.concatenate([da.from_delayed(dask.delayed(load)(i, p), shape=p.shape,
                                           dtype=float) for i, p in enumerate(parts)])


def _kill_a_busy_worker(client):
    """SIGKILL the process of a worker that is running a task (its nanny starts a new one)."""
    deadline = time.time() + 30
    while time.time() < deadline:
        busy = [w for w, tasks in client.processing().items() if tasks]
        if busy:
            pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
            os.kill(pid, signal.SIGKILL)
            return
        time.sleep(0.05)
    raise AssertionError("no task started within 30 s")


def test_killed_worker_recovers_the_same_model(own_client, data):
    client = own_client
    X, ys = data
    y = ys["multiclass"]
    ref = rw.RKSClassifier(n_features=40, reg=1e-4, random_state=0).fit(X, y)
    est = rw.RKSClassifier(n_features=40, reg=1e-4, random_state=0)
    box = {}
    t = threading.Thread(target=lambda: box.setdefault(
        "est", est.fit(_slow_partitions(X, 8, 0.5), y)))
    t.start()
    _kill_a_busy_worker(client)
    t.join(120)
    assert not t.is_alive() and "est" in box
    assert _rel(est.coef_, ref.coef_) < 1e-9


def test_killed_worker_without_retries_is_a_clear_error(own_client, data):
    client = own_client
    X, ys = data
    y = ys["regression"]
    scheduler = client.cluster.scheduler
    saved = scheduler.allowed_failures
    scheduler.allowed_failures = 0
    est = rw.RWRegressor(n_features=40, reg=1e-4, random_state=0)
    box = {}

    def run():
        try:
            est.fit(_slow_partitions(X, 8, 0.5), y)
        except Exception as exc:   # noqa: BLE001 - the test inspects it
            box["error"] = exc
    t = threading.Thread(target=run)
    try:
        t.start()
        _kill_a_busy_worker(client)
        t.join(120)
    finally:
        scheduler.allowed_failures = saved
    assert isinstance(box.get("error"), distributed.KilledWorker)
    assert "coef_" not in vars(est)        # never a model of part of the data


def test_bad_values_on_a_worker_are_clear_errors(client, data):
    X, ys = data
    Xbad = X.copy()
    Xbad[400, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        rw.RWRegressor(n_features=20).fit(da.from_array(Xbad, chunks=(CHUNKS, 4)),
                                          ys["regression"])
    with pytest.raises(ValueError, match="does not learn from sums"):
        rw.RWRegressor(n_features=20, solver="sfgd", reg=1e-3).fit(da.from_array(X),
                                                                   ys["regression"])


def test_read_files_csv_and_parquet_through_the_record(client, tmp_path):
    """Many files, one partition each (one of a single row), encoded by the record learned on
    the first: the arrays equal read_csv on the concatenated file, and so does the model."""
    import pandas as pd
    from rwtool.data import UnseenCategoryError, read_csv
    from rwtool.data._dask_io import read_files
    rng = np.random.default_rng(0)
    frames = []
    for k, n in enumerate([400, 1, 300]):
        df = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n) * 100,
                           "color": rng.choice(["r", "g", "b"], n) if n > 1 else ["g"]})
        df["y"] = np.where(df.a + 0.5 * (df.color == "r") > 0, "yes", "no")
        df.to_csv(tmp_path / f"p{k}.csv", index=False)
        df.to_parquet(tmp_path / f"p{k}.parquet")
        frames.append(df)
    pd.concat(frames).to_csv(tmp_path / "all.csv", index=False)
    full = read_csv(tmp_path / "all.csv", "y")
    ref = rw.RKSClassifier(n_features=30, reg=1e-4, random_state=0).fit(full.X, full.y)
    for pattern in ("p*.csv", "p*.parquet"):
        X, y, pre = read_files(str(tmp_path / pattern), "y")
        assert pre.feature_names_out == full.feature_names
        np.testing.assert_allclose(X.compute(), full.X, rtol=1e-15)
        np.testing.assert_array_equal(y.compute(), full.y)
        est = rw.RKSClassifier(n_features=30, reg=1e-4, random_state=0).fit(X, y)
        assert _rel(est.coef_, ref.coef_) < 1e-9
    # a category the sample file never saw: a located error from the worker, not a wrong X
    pd.DataFrame({"a": [0.1], "b": [1.0], "color": ["violet"], "y": ["no"]}).to_csv(
        tmp_path / "p9.csv", index=False)
    X, y, _ = read_files([str(tmp_path / "p0.csv"), str(tmp_path / "p9.csv")], "y")
    with pytest.raises(UnseenCategoryError, match="violet"):
        X.compute()
