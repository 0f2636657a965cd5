"""BKerNN's fit gives the same bits whatever the thread count and whatever the order of ties.

The fit kernels share rows or particles among threads (rwtool.threads.run_row_shares), each
share writing its own outputs, combined in a fixed order; the sort of the projections is
numpy's stable order (ties in increasing row index), which no machine's sort can change.
Bit-for-bit comparisons here are between fits computed now, on this machine.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import rwtool.solvers._bkernn as core
import rwtool.solvers._bkernn_cg as cgmod
from rwtool.solvers._bkernn import fit_particles

#: the checkout whose rwtool the child processes import
ROOT = Path(__file__).resolve().parents[2]


def _tied_problem(n, seed=0):
    """Inputs on {-1, 0, 1}^3 (27 distinct rows among n: every projection is tied with many
    others) and a target with noise."""
    rng = np.random.default_rng(seed)
    X = rng.integers(-1, 2, (n, 3)).astype(float)
    y = np.abs(np.sin(X[:, 0] + 0.5 * X[:, 1])) + 0.1 * rng.standard_normal(n)
    W0 = rng.standard_normal((3, 6)) / np.sqrt(3)
    return X, (y - y.mean())[:, None], W0, 1.0 / n


def _ties_reversed(p):
    """A sorting order of ``p`` with tied entries in decreasing index: what an unstable sort
    may return on another machine."""
    return np.lexsort((-np.arange(len(p)), p))


def _awkward_rows(n, rng):
    """Rows that stress a sort by value buckets: many ties, one run, signed zeros, heavy
    tails, outliers that put nearly every row in one bucket, a range beyond float64, a range
    too narrow to divide by, two values one ulp apart, presorted and reversed rows."""
    return np.vstack([
        np.round(rng.standard_normal((5, n)), 1),
        rng.standard_normal((3, n)),
        np.zeros((1, n)),
        np.where(rng.random(n) < 0.5, 0.0, -0.0)[None],
        rng.standard_cauchy((1, n)),
        np.r_[rng.standard_normal(n - 2) * 1e-3, 1e6, -1e6][None],
        np.r_[rng.standard_normal(n - 2), 1e300, -1e300][None],
        np.r_[np.zeros(n - 1), 5e-324][None],
        np.r_[np.ones(n - 1), np.nextafter(1.0, 2.0)][None],
        rng.integers(0, 3, (1, n)).astype(float),
        np.arange(n, dtype=float)[None],
        np.arange(n, 0, -1, dtype=float)[None]])


@pytest.mark.parametrize("n", [3, 200, 3000])
def test_sorted_order_is_numpys_stable_order_in_any_share_count(monkeypatch, n):
    """sort_projections gives numpy's argsort(kind="stable") (the oracle) and the values in
    that order, the same bits in every share count and for any range of particles."""
    import numba

    import rwtool.threads
    PT = _awkward_rows(n, np.random.default_rng(n))
    want = np.argsort(PT, axis=1, kind="stable")
    monkeypatch.setattr(rwtool.threads, "PAIRS_PER_THREAD", 1)
    for shares in (1, 2, 3):
        monkeypatch.setattr(numba, "get_num_threads", lambda: shares)
        order, values = np.empty(PT.shape, dtype=np.int64), np.empty(PT.shape)
        cgmod.sort_projections(PT, order, values, 0, len(PT))
        np.testing.assert_array_equal(order, want)
        # bits, signed zeros included
        assert np.array_equal(values.view(np.int64),
                              np.take_along_axis(PT, want, axis=1).view(np.int64))
        # a range of particles only
        order[:] = -1
        cgmod.sort_projections(PT, order, values, 2, 7)
        np.testing.assert_array_equal(order[2:7], want[2:7])
        assert np.all(order[:2] == -1) and np.all(order[7:] == -1)


def _few_rows(n):
    """Particles of ``n`` rows for n = 0, 1, 2 (finite projections, as the fit checks): each
    order, a tie, signed zeros, a range beyond float64 and one too narrow to divide by."""
    pairs = [[1.0, 2.0], [2.0, 1.0], [3.0, 3.0], [0.0, -0.0], [-0.0, 0.0], [1e300, -1e300],
             [5e-324, 0.0], [np.nextafter(1.0, 2.0), 1.0], [-7.5, 1e-3]]
    return np.array([r[:n] for r in pairs]).reshape(len(pairs), n)


@pytest.mark.parametrize("n", [0, 1, 2])
def test_sorted_order_of_no_one_or_two_rows(monkeypatch, n):
    """numpy's argsort(kind="stable") is the oracle. No rows: the empty order, nothing read
    (the kernel's first value came from p[0], out of bounds and unchecked when jitted: its
    Python body is run too, which indexes with checks)."""
    import numba

    import rwtool.threads
    PT = _few_rows(n)
    want = np.argsort(PT, axis=1, kind="stable")
    monkeypatch.setattr(rwtool.threads, "PAIRS_PER_THREAD", 1)
    for shares in (1, 2):
        monkeypatch.setattr(numba, "get_num_threads", lambda: shares)
        order, values = np.full(PT.shape, -1, dtype=np.int64), np.empty(PT.shape)
        cgmod.sort_projections(PT, order, values, 0, len(PT))
        np.testing.assert_array_equal(order, want)
        assert np.array_equal(values.view(np.int64),
                              np.take_along_axis(PT, want, axis=1).view(np.int64))
    order, values = np.full(PT.shape, -1, dtype=np.int64), np.empty(PT.shape)
    with np.errstate(over="ignore"):        # numpy's scalars warn where the kernel's do not
        cgmod._distribution_sort.py_func(PT, order, values, 0, len(PT))
    np.testing.assert_array_equal(order, want)
    assert np.array_equal(values.view(np.int64),
                          np.take_along_axis(PT, want, axis=1).view(np.int64))


@pytest.mark.parametrize("kind", ["dense", "cg"])
def test_the_order_of_ties_cannot_change_a_fit(kind, monkeypatch):
    """The fit's sort gives the bits of numpy's stable sort, and the order of ties matters
    (else this test would prove nothing): under a sort that returns ties reversed the bits
    change, through the prefix sums over tied rows and the preconditioner's blocks where a
    boundary falls inside a run of ties."""
    X, Yc, W0, lam = _tied_problem(240)

    def fit():
        res = fit_particles(X, Yc, W0, lam, "concave_feature", max_iter=4, kernel_solver=kind)
        return res["W"], res["alpha"]

    base = fit()

    def with_order(sort):
        def sort_rows(PT, order, values, a, b):
            for j in range(a, b):
                order[j] = sort(PT[j])
                values[j] = PT[j, order[j]]
        monkeypatch.setattr(cgmod, "sort_projections", sort_rows)
        monkeypatch.setattr(core, "sort_projections", sort_rows)
        return fit()

    for a, b in zip(base, with_order(lambda p: np.argsort(p, kind="stable"))):
        np.testing.assert_array_equal(a, b)
    assert any(not np.array_equal(a, b) for a, b in zip(base, with_order(_ties_reversed)))


def _child_arrays(tmp_path, script, count, args=()):
    """The arrays ``script`` saves with np.savez to its first argument (its further arguments
    ``args``), run in a child process started with NUMBA_NUM_THREADS = OPENBLAS_NUM_THREADS =
    ``count`` that imports this checkout's rwtool, in the order saved."""
    env = dict(os.environ, NUMBA_NUM_THREADS=count, OPENBLAS_NUM_THREADS=count)
    path = tmp_path / f"t{count}.npz"
    subprocess.run([sys.executable, "-c", script, str(path), *args], env=env, check=True,
                   cwd=ROOT, timeout=600)
    with np.load(path) as saved:
        return [saved[f"arr_{i}"] for i in range(len(saved.files))]


def test_same_model_bits_whatever_the_thread_count(tmp_path):
    """A fit on the dense path (n below CG_MIN_N) and one on the CG path (above it), with and
    without row weights and with tied inputs, in a process started with NUMBA_NUM_THREADS=1
    and one started with 3 that fits on 3 and then 2 threads, every kernel call split as far
    as it goes (PAIRS_PER_THREAD = 1): particles, dual coefficients, intercepts and
    predictions the same bits in all three."""
    script = textwrap.dedent("""
        import sys
        import numba, numpy as np
        import rwtool.threads
        from rwtool.estimators._bkernn import BKerNNRegressor
        from rwtool.solvers._bkernn import CG_MIN_N
        rwtool.threads.PAIRS_PER_THREAD = 1
        rng = np.random.default_rng(0)
        out = []
        for n, kind in ((300, "dense"), (CG_MIN_N + 100, "cg")):
            X = rng.standard_normal((n, 4))
            X[: n // 2, 3] = np.round(X[: n // 2, 3])              # ties
            y = np.abs(np.sin(X[:, 0] + X[:, 1])) + 0.1 * rng.standard_normal(n)
            w = rng.uniform(0.2, 2.0, n)
            for weights in (None, w):
                for threads in [int(t) for t in sys.argv[2:]]:
                    numba.set_num_threads(threads)
                    est = BKerNNRegressor(n_particles=12, max_iter=4, random_state=3)
                    est.fit(X, y, sample_weight=weights)
                    assert est.kernel_solver_ == kind
                    out.append(np.concatenate([est.particles_.ravel(), est.dual_coef_.ravel(),
                                               est.intercept_.ravel(), est.predict(X)]))
        np.savez(sys.argv[1], *out)
    """)
    one = _child_arrays(tmp_path, script, "1", ["1"])
    more = _child_arrays(tmp_path, script, "3", ["3", "2"])
    assert len(one) == 4 and len(more) == 8
    for k in range(4):
        np.testing.assert_array_equal(more[2 * k], one[k])
        np.testing.assert_array_equal(more[2 * k + 1], one[k])


@pytest.mark.slow           # two child processes, each importing rwtool
def test_sort_product_and_warm_solve_bits_on_one_and_two_numba_threads(tmp_path):
    """The CG path's parts called directly in a process started with NUMBA_NUM_THREADS=1 and
    one with 2, every kernel call split as far as it goes (PAIRS_PER_THREAD = 1): the bucket
    sort of rows that overflow its buckets (ties, outliers, signed zeros), the one-pass
    product with and without row weights (some 0), the preconditioner and a warm-started
    solve (the scaled start), the same bits; the sort also numpy's stable order and the
    product the dense Brownian product (the oracles, in this process)."""
    rng = np.random.default_rng(11)
    n = 3000
    PT = _awkward_rows(n, rng)
    P = np.ascontiguousarray(PT[np.max(np.abs(PT), axis=1) < 1e100])   # the fit's range
    U = rng.standard_normal((n, 2))
    v = np.sqrt(rng.uniform(0.0, 2.0, n))
    v[::5] = 0.0
    np.savez(tmp_path / "in.npz", PT=PT, P=P, U=U, v=v)
    script = textwrap.dedent("""
        import sys
        import numpy as np
        import rwtool.threads
        from rwtool.solvers._bkernn_cg import (BlockPreconditioner, SortedProjections,
                                               cg_ridge, kernel_product, sort_projections)
        rwtool.threads.PAIRS_PER_THREAD = 1
        with np.load(sys.argv[2]) as f:
            PT, P, U, v = f["PT"], f["P"], f["U"], f["v"]
        order, values = np.empty(PT.shape, dtype=np.int64), np.empty(PT.shape)
        sort_projections(PT, order, values, 0, len(PT))
        out = [order, values]
        sp = SortedProjections(P)
        for w in (None, v):
            Yc = kernel_product(sp, U, 0.0, v=w)           # in the range of P_v
            pre = BlockPreconditioner(sp, 3.0, 8, v=w)
            A, R, its = cg_ridge(sp, Yc, 3.0, x0=U + 1e200 * U[::-1], tol=1e-6, precond=pre,
                                 v=w)
            out += [kernel_product(sp, U, 3.0, v=w), pre.apply(U), A, R, np.array([its])]
        np.savez(sys.argv[1], *out)
    """)
    one = _child_arrays(tmp_path, script, "1", [str(tmp_path / "in.npz")])
    two = _child_arrays(tmp_path, script, "2", [str(tmp_path / "in.npz")])
    assert len(one) == len(two) == 12
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)
        assert np.array_equal(a.view(np.int64), b.view(np.int64))     # signed zeros too
    np.testing.assert_array_equal(one[0], np.argsort(PT, axis=1, kind="stable"))
    # the products against the dense Brownian kernel, K's rows built 300 at a time
    for w, got in ((None, one[2]), (v, one[7])):
        c = np.ones(n) if w is None else w
        Z = c[:, None] * (U - np.outer(c, c @ U) / (c @ c))               # V P_v U
        KZ = np.empty_like(Z)
        for r in range(0, n, 300):
            K = sum((np.abs(p[r:r + 300, None]) + np.abs(p)[None] -
                     np.abs(p[r:r + 300, None] - p[None])) / 2 for p in P) / len(P)
            KZ[r:r + 300] = K @ Z
        VKZ = c[:, None] * KZ
        want = VKZ - np.outer(c, c @ VKZ) / (c @ c) + 3.0 * U
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * np.abs(want).max())
