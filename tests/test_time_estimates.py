"""The time half of rwtool.resources' cost models: their structure, not their seconds.

Every estimator counts the units of work of each kernel it runs (``FitEstimate.work``) and the
estimate is those counts at the measured rates of rwtool.resources.KERNEL_RATES. These tests
check the counts against what the algorithms do (how they grow with rows, centres, particles,
selected features), the app's sum over the fits of a plan, and the load model; no test times
anything (the machine is shared; the rates are checked against real runs by
benchmarks/speed/bench_estimate.py and reported in docs/GUI.md).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import rwtool as rw
from rwtool.resources import (KERNEL_RATES, cpu_share, estimate_fit, estimate_predict,
                              seconds_of, wall_seconds)

#: every method's solvers and selectors, at their defaults otherwise
CONFIGS = [rw.RWClassifier(solver=s) for s in ("lstsq", "lasso", "sfgd", "osd")] + [
    rw.RWClassifier(reg=1e-3), rw.RKSClassifier(), rw.RKSClassifier(solver="sgd"),
    rw.RKSClassifier(solver="lasso"), rw.RFSGDClassifier(), rw.RWRegressor(),
    rw.GreedyMKClassifier(), rw.GreedyMKRegressor()] + [
    rw.GreedyMKClassifier(selector=s) for s in ("rks", "eerf", "lkrf")] + [
    rw.BKerNNClassifier(), rw.BKerNNRegressor(), rw.BKerNNClassifier(kernel_solver="dense")]


@pytest.mark.parametrize("est", CONFIGS, ids=lambda e: f"{type(e).__name__}"
                         f"-{e.get_params().get('solver', e.get_params().get('selector', ''))}")
def test_every_method_has_a_time_model_of_known_kernels(est):
    """A time for every method (BKerNN had none), made of kernels whose rates were measured,
    and the predictions after the fit counted too."""
    for n in (300, 200_000):
        e = estimate_fit(est, n, 3, 1)
        assert e.seconds is not None and e.seconds > 0 and e.work
        assert set(e.work) <= set(KERNEL_RATES), set(e.work) - set(KERNEL_RATES)
        assert e.seconds == pytest.approx(seconds_of(e.work), rel=1e-12)
        assert all(v > 0 for v in e.work.values())
        p = est._estimate_predict(n, 3, 1)
        assert set(p) <= set(KERNEL_RATES)
        assert estimate_predict(est, n, 3, 1) == pytest.approx(seconds_of(p), rel=1e-12)
        assert seconds_of(p) > 0


def test_rates_say_what_they_count_and_where_they_come_from():
    for name, r in KERNEL_RATES.items():
        assert r.value > 0 and math.isfinite(r.value), name
        assert r.unit and r.source, name


def test_least_squares_counts_its_products():
    """RW least squares at a fixed reg: every row's T features once, and Phi^T Phi's n T^2
    multiply-adds (plus the n T (d + 1 + k) of the features' products and the predictions):
    the per-row work grows exactly linearly in n; the Gram part as T^2."""
    est = rw.RWClassifier(reg=1e-3, n_features=400, block_size=1000)
    a, b = (estimate_fit(est, n, 5, 1).work for n in (10_000, 20_000))
    assert b["rw_features"] == 2 * a["rw_features"] == 2 * 10_000 * 400
    T, d = 400, 5 + 1
    # the rows' share of BLAS: T^2 (Phi^T Phi) + T (d + 1) (features, k = 1) per row
    assert b["blas"] - a["blas"] == pytest.approx(10_000 * (T * T + T * (d + 1)))
    big = rw.RWClassifier(reg=1e-3, n_features=800, block_size=1000)
    c = estimate_fit(big, 20_000, 5, 1).work
    gram = lambda w, t: w["blas"] - 20_000 * t * (d + 1)               # noqa: E731
    assert gram(c, 800) / gram(b, 400) == pytest.approx(4.0, rel=0.15)  # T^2 (+ T^3 solve)


def test_default_fit_counts_the_factorisations_its_search_makes(monkeypatch):
    """reg="auto" on the sums: the estimate's search work (solvers._sufficient.search_work) is
    the Cholesky factorisations the search really makes, counted by recording each one's
    order during a default fit (the oracle): within a factor 1.5 (the grid walk scores 7-8 and
    3-5 candidates a step on typical data, the count 8 and 4); and the default's BLAS work is the
    fixed-reg fit's plus that, not ten T^3 per fold as when the search eigendecomposed every
    fold (5x the fixed fit's estimate at T = 4000 for about 1.1x its time). Each factor is
    counted at its order's rate (rwtool.resources.cholesky_work: the small ones run 3-10x
    under the "blas" rate), the recorded ones too."""
    from rwtool.solvers import _ridge
    from rwtool.resources import cholesky_work
    from rwtool.solvers._sufficient import search_work
    orders = []
    factor = _ridge.cholesky_lower
    monkeypatch.setattr(_ridge, "cholesky_lower",
                        lambda M, *a, **kw: orders.append(M.shape[0]) or factor(M, *a, **kw))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 4))
    y = (X[:, 0] + X[:, 1] ** 2 + 0.5 * rng.normal(size=3000) > 1).astype(int)
    T = 1000
    rw.RWClassifier(n_features=T, random_state=0).fit(X, y)
    assert orders.count(T) == 1 and len(orders) > 20       # the final solve, and the search's
    made = sum(cholesky_work(t) for t in orders if t != T)
    counted, _ = search_work(3000, T, 3, cost=cholesky_work)
    raw, _ = search_work(3000, T, 3)            # the multiply-adds alone, as the search makes
    assert sum(t ** 3 / 3.0 for t in orders if t != T) / 1.5 <= raw <= 1.5 * sum(
        t ** 3 / 3.0 for t in orders if t != T)
    assert made / 1.5 <= counted <= 1.5 * made, (sorted(set(orders)), made, counted)
    auto, fixed = (estimate_fit(rw.RWClassifier(n_features=T, reg=reg), 3000, 4, 2).work["blas"]
                   for reg in (None, 1e-6))
    assert fixed + counted <= auto <= 1.2 * (fixed + counted)


def test_regressor_counts_the_solve_of_its_posterior(monkeypatch):
    """A regressor keeps a posterior (predict's return_std): its noise variance's degrees of
    freedom take M^-1 from the T x T factor (solvers._posterior.inverse_from_factor), O(T^3)
    work a classifier's fit does not make. Oracle: the inverses really made, recorded (the
    factor's order cubed), against the regressor's BLAS work less the classifier's of the same
    fit (POSTERIOR_SOLVE units per T^3). Uncounted, the posterior was 0.46 of the 1.12 s of
    RWRegressor's default fit on abalone at T = 2000."""
    from rwtool.estimators._random_features import POSTERIOR_SOLVE
    from rwtool.solvers import _posterior
    made = []
    inverse = _posterior.inverse_from_factor
    monkeypatch.setattr(_posterior, "inverse_from_factor", lambda chol: made.append(
        chol.shape[0] ** 3) or inverse(chol))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 4))
    y = X[:, 0] + np.sin(X[:, 1]) + 0.1 * rng.normal(size=1500)
    for T, reg in ((300, 1e-4), (600, 1e-4), (600, None)):
        made.clear()
        for cls in (rw.RWRegressor, rw.RKSRegressor):
            cls(n_features=T, reg=reg, random_state=0).fit(X, y)
        counted = sum((estimate_fit(reg_cls(n_features=T, reg=reg), 1500, 4, 1).work["blas"]
                       - estimate_fit(cls_cls(n_features=T, reg=reg), 1500, 4, 1).work["blas"])
                      for reg_cls, cls_cls in ((rw.RWRegressor, rw.RWClassifier),
                                               (rw.RKSRegressor, rw.RKSClassifier)))
        if reg is not None:     # a fixed reg: the two fits differ by the posterior alone
            assert counted / POSTERIOR_SOLVE == pytest.approx(sum(made), rel=0.05)
        else:                   # the default: the search scores differently too
            assert counted / POSTERIOR_SOLVE >= 0.9 * sum(made), (counted, sum(made))


@pytest.mark.parametrize("est", [rw.RWClassifier(), rw.RWClassifier(reg=1e-3),
                                 rw.RKSRegressor(), rw.RWClassifier(solver="lasso"),
                                 rw.RKSClassifier(solver="sgd")],
                         ids=["rw-auto", "rw-fixed", "rks-regressor", "rw-lasso", "rks-sgd"])
def test_every_fit_counts_the_input_it_standardises(monkeypatch, est):
    """Each fit checks, standardises and copies X (a few passes over its n d elements and
    their fresh pages: 0.19-0.30 s of mnist's 0.6-1.8 s default fits, uncounted before).
    Oracle: the inputs the fit really standardises, recorded (rwtool._base.Standardizer.fit on
    X, not the targets), against the "input" work."""
    from rwtool._base import Standardizer
    seen = []
    fit = Standardizer.fit.__func__
    monkeypatch.setattr(Standardizer, "fit", classmethod(
        lambda cls, Z, weights=None: seen.append(Z.shape) or fit(cls, Z, weights)))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1200, 7))
    y = X[:, 0] + 0.3 * rng.normal(size=1200)
    if est._estimator_type == "classifier":
        y = (y > 0).astype(int)
    est = type(est)(**{**est.get_params(), "n_features": 60, "random_state": 0})
    est.fit(X, y)
    elements = sum(r * c for r, c in seen if c == X.shape[1])
    assert elements >= X.size
    assert estimate_fit(est, 1200, 7, 1).work["input"] == elements


def test_sfgd_work_is_its_batches_not_its_rows():
    """SFGD visits b rows per centre on the centres so far: b T^2 / 2 pairs, whatever n (only
    the standardisation of X reads every row)."""
    est = rw.RWClassifier(solver="sfgd", reg=1e-3, n_features=300, batch_size=50)
    a, b = (estimate_fit(est, n, 3, 1).work for n in (10_000, 1_000_000))
    assert a.pop("input") * 100 == b.pop("input")
    assert a == b
    assert a["sfgd_step"] == 50 * 300 ** 2 / 2


def test_rfsgd_work_per_epoch_and_feature_cache():
    """n_epochs passes of one step per row over its D coefficients; the features once when the
    n x D matrix fits the cache, else every pass."""
    est = rw.RFSGDClassifier(n_features=100, n_epochs=4, variant="pair")
    w = estimate_fit(est, 10_000, 3, 1).work
    D = 200                               # cos and sin of 100 frequencies
    assert w["asgd_step"] == 4 * 10_000 * D and w["rff_pair_features"] == 10_000 * D
    est.set_params(feature_cache_mb=0)
    assert estimate_fit(est, 10_000, 3, 1).work["rff_pair_features"] == 4 * 10_000 * D


def test_mfga_work_grows_with_the_path():
    """A gradient per selected feature over the dictionary's columns and their Taylor terms
    (N M0 (order + k)); the refits of the logistic path are counted with them."""
    kw = {"sigma": 1.0, "gauss_order": 4}         # one dictionary (38 columns) for both
    small = estimate_fit(rw.GreedyMKClassifier(n_features=10, **kw), 50_000, 3, 1).work
    big = estimate_fit(rw.GreedyMKClassifier(n_features=20, **kw), 50_000, 3, 1).work
    assert small["mfga_gradient"] == 10 * 50_000 * 38 * (4 + 1)
    assert big["mfga_gradient"] == pytest.approx(2 * small["mfga_gradient"])
    assert "knn" not in small            # a given sigma: no k-NN bandwidth
    knn = estimate_fit(rw.GreedyMKClassifier(n_features=20), 50_000, 3, 1).work["knn"]
    assert knn == 2000 * 50_000          # knn_queries x rows distances
    # the squared loss refits by its normal equations: N M^2 multiply-adds on BLAS
    sq = estimate_fit(rw.GreedyMKRegressor(n_features=20, reg=1e-3, **kw), 50_000, 3, 1).work
    assert sq["blas"] == 50_000 * 20 * 20


def test_bkernn_estimate_grows_as_its_algorithm():
    """The CG path sorts m projections of n rows each iteration: m n log2 n per iteration
    (docs/BKERNN.md measured 4.85-4.96x per 4x rows from 32,000 to 128,000; this is 4.53x), and
    linear in the particles and the iterations."""
    est = rw.BKerNNClassifier(n_particles=20, max_iter=10)
    a, b = (estimate_fit(est, n, 5, 1) for n in (32_000, 128_000))
    ratio = b.work["bkernn_iteration"] / a.work["bkernn_iteration"]
    assert ratio == pytest.approx(4 * math.log2(128_000) / math.log2(32_000))
    assert 4.0 < b.seconds / a.seconds < 5.0
    twice = rw.BKerNNClassifier(n_particles=40, max_iter=20)
    assert estimate_fit(twice, 32_000, 5, 1).work["bkernn_iteration"] == pytest.approx(
        4 * a.work["bkernn_iteration"])
    # the dense path (small n): the n x n kernel and its factorisation, cubic in n
    dense = rw.BKerNNClassifier(kernel_solver="dense", n_particles=20, max_iter=10)
    s1, s2 = (estimate_fit(dense, n, 5, 1).seconds for n in (2000, 4000))
    assert 6 < s2 / s1 <= 8


def test_predictions_are_linear_in_rows():
    for est in CONFIGS[:-3]:
        a, b = (estimate_predict(est, n, 3, 1) for n in (10_000, 30_000))
        assert b == pytest.approx(3 * a), type(est).__name__


def test_cpu_share_of_a_loaded_machine():
    assert cpu_share(load=0.0, cores=2) == 1.0
    assert cpu_share(load=1.5, cores=2) == 1.0
    assert cpu_share(load=8.0, cores=2) == 0.25
    assert wall_seconds(10.0, load=8.0, cores=2) == 40.0
    assert 0.0 < cpu_share() <= 1.0           # measured now: whatever the machine does


def test_runnable_groups_counts_this_process():
    """The scan sees at least the caller's own group (it runs while it scans), and while a
    second process spins in a session of its own, one more (oracle: the two processes' own
    autogroup files, or their running threads without autogroups)."""
    import os
    import subprocess
    import sys
    from rwtool.resources import runnable_groups
    if not os.path.exists("/proc/self/stat"):
        pytest.skip("no /proc")
    mine = runnable_groups(samples=1)
    if mine is None:
        # the scan refuses a /proc that does not report the calling thread running (a
        # sandbox's); the oracle is that thread's own stat file, read here directly
        import threading
        try:
            with open(f"/proc/self/task/{threading.get_native_id()}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            state = "unreadable"
        assert state != "R", "the calling thread runs and its /proc says so, yet the scan refused"
        pytest.skip(f"this /proc does not show the caller running (state {state!r}); the "
                    "scan gives None and the estimate falls back to the load average")
    assert mine >= 1
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
    try:
        if os.path.exists("/proc/self/autogroup"):
            # a process in a cgroup's task group has an empty autogroup file (seen on a CI
            # machine); two named autogroups must differ (two sessions)
            with open(f"/proc/{spin.pid}/autogroup") as fh, open("/proc/self/autogroup") as me:
                theirs, ours = fh.read().split(), me.read().split()
            if theirs and ours:
                assert theirs[0] != ours[0]
        # the spinner's state is "R" whether it is on a core or waiting for one
        seen = max(runnable_groups(samples=5) for _ in range(3))
        assert seen >= 2
    finally:
        spin.kill()
        spin.wait()


def test_preflight_sums_the_plans_fits_and_predictions():
    """The app's estimate: every fit of the plan on its rows and the predictions after each
    (k-fold: k fits on 4/5 of the rows scoring 1/5, then the final fit scoring every row), at
    the given load."""
    gui = pytest.importorskip("gui.logic.preflight")
    from gui.logic.plans import Holdout, KFold, Search
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((5000, 3)), rng.integers(0, 2, 5000)
    est = rw.RWClassifier(reg=1e-3, n_features=200)
    fit = lambda n: estimate_fit(est, n, 3, 1).seconds          # noqa: E731
    pred = lambda n: estimate_predict(est, n, 3, 1)             # noqa: E731
    one = gui.preflight(est, X, y, "binary", fits=Holdout().fit_sizes(5000, 1000), load=0.0)
    assert one.fit_seconds == pytest.approx(fit(5000))
    assert one.after_seconds == pytest.approx(pred(6000))
    five = gui.preflight(est, X, y, "binary", fits=KFold(5).fit_sizes(5000, 1000), load=0.0)
    assert five.fit_seconds == pytest.approx(5 * fit(4000) + fit(5000))
    assert five.after_seconds == pytest.approx(5 * pred(1000) + pred(6000))
    assert five.seconds == pytest.approx(five.fit_seconds + five.after_seconds)
    # a search's candidates draw a number for reg; least squares scores a candidate's folds
    # from one pass's sums, the other solvers fit every fold
    search = Search(n_iter=4, cv=3, then=Holdout()).fit_sizes(5000, 0, est)
    assert search == [(5000, 0, {"reg": 1e-6})] * 4 + [(5000, 5000)]
    # weighted rows: the search refits every candidate on every fold, least squares too
    weighted = Search(n_iter=4, cv=3, then=Holdout()).fit_sizes(5000, 0, est, weighted=True)
    assert weighted == [(5000 - 1666, 1666, {"reg": 1e-6})] * 12 + [(5000, 5000)]
    sgd = rw.RWClassifier(solver="sfgd")
    search = Search(n_iter=4, cv=3, then=Holdout()).fit_sizes(5000, 0, sgd)
    assert search == [(5000 - 1666, 1666, {"reg": 1e-6})] * 12 + [(5000, 5000)]
    auto = rw.RWClassifier(n_features=200)          # reg="auto" in the final fit only
    tuned = gui.preflight(auto, X, y, "binary", load=0.0,
                          fits=Search(n_iter=4, cv=3, then=Holdout()).fit_sizes(5000, 0, auto))
    fixed = estimate_fit(rw.RWClassifier(n_features=200, reg=1e-6), 5000, 3, 1).seconds
    assert tuned.fit_seconds == pytest.approx(4 * fixed + estimate_fit(auto, 5000, 3, 1).seconds)
    loaded = gui.preflight(est, X, y, "binary", fits=KFold(5).fit_sizes(5000, 1000), load=8.0)
    assert loaded.share == pytest.approx(cpu_share(8.0))
    assert loaded.seconds == pytest.approx(five.seconds / cpu_share(8.0))
    curve = gui.preflight(est, X, y, "binary", fits=Holdout().fit_sizes(5000, 1000), load=0.0,
                          live_curve=True)
    assert curve.fit_seconds == pytest.approx(1.1 * fit(5000))
    # Tune first with an iterative solver, then k-fold: the grid's n_iter x cv fold fits, each
    # scoring its held-out third, then the k-fold plan (k fits and the final one), by hand
    sfgd = rw.RWClassifier(solver="sfgd", n_features=200)
    drawn = rw.RWClassifier(solver="sfgd", n_features=200, reg=1e-6)
    plan = Search(n_iter=4, cv=3, then=KFold(5))
    tuned = gui.preflight(sfgd, X, y, "binary", load=0.0, fits=plan.fit_sizes(5000, 1000, sfgd))
    sec = lambda e, n: estimate_fit(e, n, 3, 1).seconds          # noqa: E731
    hand_fit = 12 * sec(drawn, 5000 - 1666) + 5 * sec(sfgd, 4000) + sec(sfgd, 5000)
    hand_after = (12 * estimate_predict(drawn, 1666, 3, 1) + 5 * estimate_predict(sfgd, 1000, 3, 1)
                  + estimate_predict(sfgd, 6000, 3, 1))
    assert tuned.fit_seconds == pytest.approx(hand_fit)
    assert tuned.after_seconds == pytest.approx(hand_after)
    assert plan.n_fits() == 4 * 3 + 5 + 1


def test_runnable_groups_keeps_the_caller_while_its_threads_come_and_go():
    """Threads of the caller that start and end during the scan (a pool winding down) do not
    drop the caller from the count: every scan counts at least the caller itself (oracle: the
    caller is running while it scans). Before, a thread that ended mid-scan dropped the caller
    and the scan refused: 8 of 40 scans here, and the likely cause of a CI failure."""
    import os
    import threading
    from rwtool.resources import runnable_groups
    if not os.path.exists("/proc/self/stat"):
        pytest.skip("no /proc")
    stop = threading.Event()

    def churn():
        while not stop.is_set():
            t = threading.Thread(target=lambda: None)
            t.start()
            t.join()

    churners = [threading.Thread(target=churn) for _ in range(2)]
    for t in churners:
        t.start()
    try:
        counts = [runnable_groups(samples=1) for _ in range(40)]
    finally:
        stop.set()
        for t in churners:
            t.join()
    if all(c is None for c in counts):
        pytest.skip("this /proc does not show the caller running")
    # a /proc that reports the caller running reports it on every scan: no scan refuses
    assert all(c is not None and c >= 1 for c in counts), counts


@pytest.mark.parametrize("own_empty", [True, False])
def test_runnable_groups_counts_processes_outside_autogroups(monkeypatch, own_empty):
    """A process in a cgroup's task group has an empty ``/proc/PID/autogroup`` (a CI
    machine's container: the test above read one and failed). The scan still counts a second
    process spinning beside the caller (oracle: the spinner runs): by tasks when the caller's
    own file is empty, as a group of its own when only the others' are."""
    import builtins
    import io
    import os
    import subprocess
    import sys
    from rwtool import resources
    if not os.path.exists("/proc/self/autogroup"):
        pytest.skip("no autogroups here")
    real_open = builtins.open

    def emptied(path, *args, **kwargs):
        p = str(path)
        if p.endswith("/autogroup") and (own_empty or not p.startswith("/proc/self")):
            return io.StringIO("")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(resources, "open", emptied, raising=False)
    if resources.runnable_groups(samples=1) is None:
        pytest.skip("this /proc does not show the caller running")
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
    try:
        assert max(resources.runnable_groups(samples=5) for _ in range(3)) >= 2
    finally:
        spin.kill()
        spin.wait()
