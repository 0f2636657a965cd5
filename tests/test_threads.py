"""rwtool.threads: BLAS held to one thread and given back, and the fits it guards.

Oracles: the thread counts OpenBLAS itself reports (openblas_get_num_threads of every OpenBLAS
in the process); dense solves by scipy and the Lasso's optimality conditions solved densely on
the support; for reproducibility, the same fit in two child processes started with different
OPENBLAS_NUM_THREADS and NUMBA_NUM_THREADS, compared bit for bit (both computed on this
machine, with the same libraries: only the thread counts differ).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg

from rwtool.threads import (SMALL_SOLVE_MAX, blas_thread_counts, blas_threads_for,
                            on_one_blas_thread, single_blas_thread)

ROOT = Path(__file__).resolve().parents[1]

needs_openblas = pytest.mark.skipif(not blas_thread_counts(), reason="no OpenBLAS in process")


@pytest.fixture
def two_threads():
    """Every OpenBLAS of the process at two threads for the test (one core's machine: the
    count is a setting; it does not need the cores), the counts found restored after it."""
    import rwtool.threads as t
    libs = t._get_libraries()
    before = [get() for get, _ in libs]
    for _, put in libs:
        put(2)
    yield
    for (_, put), n in zip(libs, before):
        put(n)


@needs_openblas
def test_counts_are_one_inside_and_restored_after(two_threads):
    assert set(blas_thread_counts()) == {2}
    with single_blas_thread():
        assert set(blas_thread_counts()) == {1}
    assert set(blas_thread_counts()) == {2}


@needs_openblas
def test_nested_holders_restore_only_at_the_outermost_exit(two_threads):
    with single_blas_thread():
        with single_blas_thread():
            assert set(blas_thread_counts()) == {1}
        assert set(blas_thread_counts()) == {1}
    assert set(blas_thread_counts()) == {2}


@needs_openblas
def test_counts_restored_after_an_exception(two_threads):
    with pytest.raises(ZeroDivisionError):
        with single_blas_thread():
            1 / 0
    assert set(blas_thread_counts()) == {2}

    @on_one_blas_thread
    def failing():
        raise KeyError("x")

    with pytest.raises(KeyError):
        failing()
    assert set(blas_thread_counts()) == {2}


@needs_openblas
def test_threads_that_leave_out_of_order_restore_once_the_last_leaves(two_threads):
    """The app's threads: A enters, B enters, A leaves (B still needs one thread), B leaves."""
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def a():
        with single_blas_thread():
            a_in.set()
            b_in.wait(10)
        a_out.set()

    def b():
        a_in.wait(10)
        with single_blas_thread():
            b_in.set()
            a_out.wait(10)
            seen["after A left"] = blas_thread_counts()

    ta, tb = threading.Thread(target=a), threading.Thread(target=b)
    ta.start(); tb.start(); ta.join(20); tb.join(20)
    assert set(seen["after A left"]) == {1}
    assert set(blas_thread_counts()) == {2}


@needs_openblas
def test_only_small_solves_are_held(two_threads):
    with blas_threads_for(SMALL_SOLVE_MAX):
        assert set(blas_thread_counts()) == {1}
    with blas_threads_for(SMALL_SOLVE_MAX + 1):
        assert set(blas_thread_counts()) == {2}


@pytest.mark.parametrize("n", [30, 400])
def test_a_solve_on_one_thread_is_the_dense_solution(n):
    """cholesky_solve (held to one thread below SMALL_SOLVE_MAX) against scipy's LU solve:
    cond(M) <= 1e3 here, so both agree to about cond * n * eps; 1e-11 relative leaves room."""
    from rwtool.solvers._ridge import cholesky_solve
    rng = np.random.default_rng(n)
    A = rng.standard_normal((n + 5, n))
    M = A.T @ A / n + 0.1 * np.eye(n)
    B = rng.standard_normal((n, 2))
    got = cholesky_solve(M, B)
    want = scipy.linalg.solve(M, B, assume_a="gen")
    assert np.allclose(got, want, rtol=1e-11, atol=1e-11 * np.abs(want).max())


def test_the_lasso_meets_its_optimality_conditions_on_one_thread():
    """lasso_gram (its sweeps and active-set solves on one BLAS thread) ends at the solution of
    the optimality conditions Q_AA a_A = q_A - lam sign(a_A), |q_j - (Q a)_j| <= lam off the
    support, here solved densely. Q's condition number on the support is below 1e3, so the
    dense solution and the solver's agree to 1e-9 relative."""
    from rwtool.solvers._lasso import lasso_gram
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 40))
    y = X[:, :5] @ np.array([3.0, -2.0, 1.5, 1.0, -0.5]) + 0.1 * rng.standard_normal(200)
    Q, q, yy = X.T @ X / 200, X.T @ y / 200, float(y @ y) / 200
    lam = 0.05
    a, info = lasso_gram(Q, q, yy, lam, tol=1e-12, max_iter=10000)
    support = np.flatnonzero(a)
    s = np.sign(a[support])
    dense = np.linalg.solve(Q[np.ix_(support, support)], q[support] - lam * s)
    assert np.allclose(a[support], dense, rtol=1e-9, atol=1e-12)
    off = np.setdiff1d(np.arange(40), support)
    assert np.all(np.abs(q[off] - Q[off] @ a) <= lam * (1 + 1e-9))


_CHILD = """
import hashlib, json, warnings
import numpy as np
import rwtool
rng = np.random.default_rng(0)
X = rng.standard_normal((300, 6))
y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.standard_normal(300)
out = {}
for name, est in [
        ("bkernn dense", rwtool.BKerNNRegressor(n_particles=12, max_iter=4, random_state=0)),
        ("bkernn cg", rwtool.BKerNNRegressor(n_particles=12, max_iter=4, kernel_solver="cg",
                                             random_state=0)),
        ("lasso auto", rwtool.RWRegressor(solver="lasso", n_features=120, random_state=0)),
        ("lstsq auto", rwtool.RWRegressor(n_features=150, random_state=0))]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    arrays = {k: v for k, v in vars(est).items() if k.endswith("_") and isinstance(v, np.ndarray)}
    arrays["predict"] = est.predict(X)
    out[name] = {k: hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()
                 for k, v in sorted(arrays.items())}
print(json.dumps(out))
"""


@pytest.mark.slow          # two child processes, each importing rwtool
def test_the_same_model_whatever_the_thread_counts():
    """BKerNN (both kernel solvers), the Lasso and least squares with reg="auto" fitted with
    OpenBLAS and numba on one thread and on two: the same bits (before rwtool.threads,
    BKerNN's particles and the least-squares coefficients differed in their last bits). Six
    input columns: up to 16 the features are summed in a fixed order (features/_dot.py)."""
    runs = []
    for threads in ("1", "2"):
        env = dict(os.environ, OPENBLAS_NUM_THREADS=threads, NUMBA_NUM_THREADS=threads)
        res = subprocess.run([sys.executable, "-c", _CHILD], env=env, cwd=ROOT, check=True,
                             capture_output=True, text=True, timeout=600)
        runs.append(json.loads(res.stdout.strip().splitlines()[-1]))
    assert runs[0].keys() == runs[1].keys()
    for name in runs[0]:
        differ = [k for k in runs[0][name] if runs[0][name][k] != runs[1][name][k]]
        assert not differ, f"{name}: {differ} depend on the thread counts"


def test_run_shares_runs_each_share_once_and_raises_the_first_error():
    """Every share runs exactly once, the first on the calling thread; an exception in a
    share on another thread reaches the caller after all shares are joined."""
    import threading

    from rwtool.threads import run_shares
    seen = {}

    def share(p):
        seen[p] = threading.get_ident()

    run_shares(share, 4)
    assert sorted(seen) == [0, 1, 2, 3]
    assert seen[0] == threading.get_ident()
    done = []

    def failing(p):
        if p == 2:
            raise ValueError("share 2")
        done.append(p)

    with pytest.raises(ValueError, match="share 2"):
        run_shares(failing, 3)
    assert sorted(done) == [0, 1]


@pytest.mark.parametrize("m, width, threads", [(0, 10, 1), (1, 10, 1), (7, 1, 1),
                                               (300, 1000, 2), (1000, 1000, 3),
                                               (12345, 77, 3)])
def test_run_row_shares_covers_every_row_once(m, width, threads, monkeypatch):
    """The shares tile [0, m) without gap or overlap (oracle: the rows each share marks), one
    share per 2^17 units of work up to numba's thread count (3 here), at least one."""
    import numba

    from rwtool.threads import PAIRS_PER_THREAD, run_row_shares
    assert PAIRS_PER_THREAD == 1 << 17           # the counts below are worked out for it
    monkeypatch.setattr(numba, "get_num_threads", lambda: 3)
    seen = np.zeros(m, dtype=int)
    shares = []

    def rows(a, b):
        seen[a:b] += 1
        shares.append((a, b))

    run_row_shares(rows, m, width)
    assert np.all(seen == 1)
    assert len(shares) == threads


# ----------------------------------------------------------------------------- numpy's routines

def _gemm_args(n):
    import ctypes
    return [ctypes.c_int] * 3 + [n] * 3 + [ctypes.c_double, ctypes.c_void_p, n,
                                           ctypes.c_void_p, n, ctypes.c_double,
                                           ctypes.c_void_p, n]


class _Library:
    """A stand-in for a loaded OpenBLAS: attributes named as its exported symbols."""

    def __init__(self, names, config=None):
        for name in names:
            setattr(self, name, lambda *args: None)
        if config is not None:
            name, text = config
            setattr(self, name, lambda: text)


@pytest.mark.parametrize("names, config, found, wide", [
    (["scipy_cblas_dgemm64_", "scipy_cblas_dgemm"],                  # numpy's wheel
     ("scipy_openblas_get_config64_", b"OpenBLAS USE64BITINT DYNAMIC_ARCH"),
     "scipy_cblas_dgemm64_", True),
    (["scipy_cblas_dgemm"], ("scipy_openblas_get_config", b"OpenBLAS DYNAMIC_ARCH"),
     "scipy_cblas_dgemm", False),                                     # scipy's wheel
    (["cblas_dgemm"], ("openblas_get_config", b"OpenBLAS 0.3.26 NO_AFFINITY"),
     "cblas_dgemm", False),                                           # a system OpenBLAS
    (["cblas_dgemm"], ("openblas_get_config", b"OpenBLAS USE64BITINT"),
     "cblas_dgemm", True),                                            # ILP64, plain names
    (["cblas_dgemm_64"], None, "cblas_dgemm_64", True),               # no config: the suffix
    (["cblas_sgemm"], None, None, None),
])
def test_a_routine_is_found_under_its_builds_spelling_with_its_integer(names, config, found,
                                                                       wide):
    import ctypes

    from rwtool.threads import blas_function
    lib = _Library(names, config)
    fn = blas_function(lib, "cblas_dgemm", _gemm_args)
    if found is None:
        assert fn is None
        return
    assert fn is getattr(lib, found)
    integer = ctypes.c_int64 if wide else ctypes.c_int
    assert fn.blas_int is integer and fn.argtypes == _gemm_args(integer) and fn.restype is None


@needs_openblas
def test_numpy_blas_dgemm_is_numpys_product():
    """The dgemm found in numpy's OpenBLAS against numpy's product, within the rounding of a
    sum of k terms (k eps sum |a b|); numpy's library is the one whose thread count its
    products use."""
    import ctypes

    from rwtool.threads import numpy_blas, numpy_openblas_paths, openblas_paths
    dgemm = numpy_blas("cblas_dgemm", _gemm_args)
    if dgemm is None:
        pytest.skip("numpy's BLAS is not an OpenBLAS of this process")
    assert numpy_openblas_paths() and set(numpy_openblas_paths()) <= set(openblas_paths())
    rng = np.random.default_rng(0)
    m, n, k = 9, 7, 13
    A, B = rng.standard_normal((m, k)), rng.standard_normal((n, k))
    C = np.empty((m, n))
    dgemm(101, 111, 112, m, n, k, 1.0, A.ctypes.data, k, B.ctypes.data, k, 0.0,
          C.ctypes.data, n)
    assert np.all(np.abs(C - A @ B.T) <= k * np.finfo(float).eps * (np.abs(A) @ np.abs(B).T))
    assert dgemm.blas_int in (ctypes.c_int, ctypes.c_int64)
