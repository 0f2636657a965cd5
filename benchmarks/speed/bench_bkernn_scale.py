"""BKerNN at scale: time per iteration of the CG and dense paths (and the CG fit's phases with the
spectrum of its ridge system), a 100,000-row default fit, the regressor against scikit-learn's
MLPRegressor on the same data and time budget, and what the CG tolerance ``cg_tol`` costs and
buys in default fits.

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python -m benchmarks.speed.bench_bkernn_scale periter
    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python -m benchmarks.speed.bench_bkernn_scale profile --sizes 32000,128000
    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python -m benchmarks.speed.bench_bkernn_scale gaps --n 128000
    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python -m benchmarks.speed.bench_bkernn_scale fit100k
    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python -m benchmarks.speed.bench_bkernn_scale mlp
    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python -m benchmarks.speed.bench_bkernn_scale cgtol

Each prints a markdown section (docs/bench/bkernn.md holds the results). Data: the Experiment 5
generator of seed 001 (X ~ U[-1, 1]^d, y = |sum_{a<=3} sin((P^T x)_a)|) with N(0, 0.1^2) noise
on the targets, d = 20; abalone and diabetes for the MLP comparison; for ``cgtol`` also
abalone, a subsample of adults (classification) and Friedman's first function
(scikit-learn's make_friedman1, noise 1). The dense path is run up to
--dense-max rows only (2000 by default: its n x n buffers are 1 GB at 8000, 16 GB at 32000).
"""

from __future__ import annotations

import argparse
import math
import resource
import time

import numpy as np

from benchmarks._common.output import machine
from benchmarks.speed.bench_bkernn import make_data
from rwtool.estimators._bkernn import BKerNNRegressor
from rwtool.solvers._bkernn_cg import block_count
from rwtool.solvers._bkernn import fit_particles


def noisy_data(n, d, seed=0, noise=0.1):
    X, y = make_data(n, d, seed=seed)
    return X, y + noise * np.random.default_rng(seed + 1).standard_normal(n)


def r2(y, p):
    return 1.0 - float(np.sum((y - p) ** 2) / np.sum((y - y.mean()) ** 2))


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ----------------------------------------------------------------------------- per iteration

def periter_problem(n, d):
    """Standardised X, standardised centred targets and the defaults' lambda = max||x_i|| / n."""
    X, y = noisy_data(n, d)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    Yc = ((y - y.mean()) / y.std())[:, None]
    return X, Yc, float(np.max(np.linalg.norm(X, axis=1))) / n


def periter(sizes, d, m, iters, dense_max, repeats=1):
    """Time per iteration (CPU and wall) of the CG and dense paths; the sizes are run in turn
    ``repeats`` times (interleaved, so a change of machine load hits every size) and the median
    is kept."""
    problems = {n: periter_problem(n, d) for n in sizes}
    W0 = np.random.default_rng(0).standard_normal((d, m)) / math.sqrt(d)
    for kind in ("cg", "dense"):            # compile (or load) the numba kernels first
        fit_particles(*problems[sizes[0]][:2], W0, problems[sizes[0]][2], "concave_feature",
                      max_iter=1, kernel_solver=kind)
    runs = {}
    for _ in range(repeats):
        for n in sizes:
            X, Yc, lam = problems[n]
            for kind in ("cg", "dense"):
                if kind == "dense" and n > dense_max:
                    continue
                tm = {}
                c0, t0 = time.process_time(), time.perf_counter()
                res = fit_particles(X, Yc, W0, lam, "concave_feature", max_iter=iters,
                                    kernel_solver=kind, timings=tm)
                cpu, wall = time.process_time() - c0, time.perf_counter() - t0
                runs.setdefault((n, kind), []).append((cpu, wall, res, tm))
                print(f"  n = {n} {kind}: {cpu / iters:.3f} s CPU / iteration", flush=True)
    lines = [f"#### Time per iteration, d = {d}, m = {m}, {iters} iterations from the same "
             f"initial particles (feature penalty of the defaults: concave_feature, "
             f"lambda = max||x_i||/n); median of {repeats} interleaved runs", "",
             "| n | path | CPU s / iteration | growth from n/4 (CPU) | wall s / iteration | "
             "trials: solved / skipped / stopped early | CG its / solved trial | blocks | "
             "breakdown (wall s, last run) |",
             "|---|---|---|---|---|---|---|---|---|"]
    prev = {}
    for n in sizes:
        for kind in ("cg", "dense"):
            if (n, kind) not in runs:
                continue
            rs = runs[(n, kind)]
            cpu = float(np.median([r[0] for r in rs])) / iters
            wall = float(np.median([r[1] for r in rs])) / iters
            res, tm = rs[-1][2], rs[-1][3]
            trials = 1 + sum(1 + int(nb) for nb in res["history"]["n_backtracks"][1:])
            solved = trials - res["skipped_trials"]
            growth = f"**{cpu / prev[kind]:.2f}x**" if kind in prev else ""
            prev[kind] = cpu
            cgits = f"{res['cg_iterations'] / solved:.1f}" if kind == "cg" else "-"
            blocks = str(block_count(n)) if kind == "cg" else "-"
            parts = ", ".join(f"{k} {v:.2f}" for k, v in sorted(tm.items(), key=lambda kv: -kv[1])
                              if v >= 0.005)
            lines.append(f"| {n} | {kind} | {cpu:.3f} | {growth} | {wall:.3f} | {solved} / "
                         f"{res['skipped_trials']} / {res['certified_trials']} | {cgits} | "
                         f"{blocks} | {parts} |")
    return "\n".join(lines + [""])


# ----------------------------------------------------------------------------- phase profile

def _lanczos_extremes(apply_M, apply_P, b, steps):
    """Smallest and largest eigenvalue of P^-1 M estimated from ``steps`` preconditioned CG
    steps on b (the Lanczos tridiagonal their coefficients give)."""
    x, r = np.zeros_like(b), b.copy()
    z = apply_P(r)
    p, rz = z.copy(), float(np.sum(r * z))
    alphas, betas = [], []
    for _ in range(steps):
        Mp = apply_M(p)
        a = rz / float(np.sum(p * Mp))
        x += a * p
        r -= a * Mp
        z = apply_P(r)
        rz_new = float(np.sum(r * z))
        alphas.append(a)
        betas.append(rz_new / rz)
        p, rz = z + betas[-1] * p, rz_new
    T = np.diag([1 / a + (betas[i - 1] / alphas[i - 1] if i else 0.0)
                 for i, a in enumerate(alphas)])
    off = [math.sqrt(betas[i]) / alphas[i] for i in range(steps - 1)]
    T += np.diag(off, 1) + np.diag(off, -1)
    ev = np.linalg.eigvalsh(T)
    return ev[0], ev[-1]


def profile(sizes, d, m, iters):
    """Per phase CPU seconds of one ``iters``-iteration CG fit per size (the fit's own timings
    read from the process's CPU clock, all threads), the CG iterations of each solve and the
    spectrum of the ridge system at the initial particles: (K~ + n lam I) / (n lam) and
    P^-1 (K~ + n lam I) with the fit's preconditioner (40 Lanczos steps from a random vector)."""
    import types

    import rwtool.solvers._bkernn as core
    import rwtool.solvers._bkernn_cg as cg
    W0 = np.random.default_rng(0).standard_normal((d, m)) / math.sqrt(d)
    its, solve = [], core.cg_ridge

    def counted(*args, **kw):
        out = solve(*args, **kw)
        its.append(out[2])
        return out

    core.cg_ridge = counted
    clock = core.time
    core.time = types.SimpleNamespace(perf_counter=time.process_time)
    try:
        X, Yc, lam = periter_problem(sizes[0], d)
        fit_particles(X, Yc, W0, lam, "concave_feature", max_iter=1, kernel_solver="cg")
        lines = [f"#### Phases of a {iters}-iteration CG fit (CPU s of the process), d = {d}, "
                 f"m = {m}; spectrum at the initial particles", "",
                 "| n | CPU s / iteration | phases (CPU s) | CG iterations per solve | "
                 "blocks | cond(K~ + n lam I) | P^-1 (K~ + n lam I): [min, max] |",
                 "|---|---|---|---|---|---|---|"]
        for n in sizes:
            X, Yc, lam = periter_problem(n, d)
            tm = {}
            its.clear()
            c0 = time.process_time()
            fit_particles(X, Yc, W0, lam, "concave_feature", max_iter=iters, kernel_solver="cg",
                          timings=tm)
            cpu = time.process_time() - c0
            shift = n * lam
            sp = cg.SortedProjections(np.ascontiguousarray((X @ W0).T))
            pre = cg.BlockPreconditioner(sp, shift, block_count(n))
            b = np.random.default_rng(1).standard_normal((n, 1))
            b -= b.mean()

            def M(U):
                return cg.kernel_product(sp, U, shift)

            lo, hi = _lanczos_extremes(M, lambda R: R / shift, b, 40)
            plo, phi = _lanczos_extremes(M, pre.apply, b, 40)
            parts = ", ".join(f"{k} {v:.2f}" for k, v in sorted(tm.items(), key=lambda kv: -kv[1])
                              if v >= 0.005)
            lines.append(f"| {n} | {cpu / iters:.3f} | {parts} | {' '.join(map(str, its))} | "
                         f"{block_count(n)} | {hi / lo:.0f} | [{plo:.2f}, {phi:.2f}] |")
    finally:
        core.cg_ridge, core.time = solve, clock
    return "\n".join(lines + [""])


# ----------------------------------------------------------------------------- progress gaps

def gaps(n, d, iters):
    """Gaps between progress events of a default BKerNNRegressor fit (``iters`` iterations) on
    n rows: wall clock and this process's CPU time."""
    X, y = noisy_data(n, d)
    # a small fit first: the first call of each numba kernel in a process loads it from the
    # cache (0.05-0.3 s of CPU each, once), which is not what this measures
    BKerNNRegressor(random_state=0, max_iter=2, kernel_solver="cg").fit(X[:2000], y[:2000])
    wall, cpu = [time.perf_counter()], [time.process_time()]

    def record(event):
        wall.append(time.perf_counter())
        cpu.append(time.process_time())

    est = BKerNNRegressor(random_state=0, max_iter=iters).fit(X, y, callback=record)
    gw, gc = np.diff(wall), np.diff(cpu)
    q = (0.5, 0.9, 0.99, 1.0)
    lines = [f"#### Gaps between progress events: default BKerNNRegressor(max_iter={iters}) on "
             f"{n} x {d} ({len(gw)} events, {est.cg_iterations_} CG iterations; after a "
             f"2000-row fit that loads the numba kernels)", "",
             "| clock | median | 90% | 99% | longest | gaps > 0.5 s | gaps > 1 s |",
             "|---|---|---|---|---|---|---|"]
    for name, g in (("wall", gw), ("CPU of the process", gc)):
        v = np.quantile(g, q)
        lines.append(f"| {name} | " + " | ".join(f"{x:.3f} s" for x in v)
                     + f" | {int(np.sum(g > 0.5))} | {int(np.sum(g > 1.0))} |")
    print("\n".join(lines), flush=True)
    return "\n".join(lines + [""])


# ----------------------------------------------------------------------------- 100k fit

def fit_large(n, n_test, d):
    X, y = noisy_data(n + n_test, d)
    Xtr, ytr, Xte, yte = X[:n], y[:n], X[n:], y[n:]
    base = peak_rss_mb()
    events, cpu_events = [], []
    est = BKerNNRegressor(random_state=0)
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    t0, c0 = time.perf_counter(), time.process_time()

    def record(ev):
        events.append(time.perf_counter() - t0)
        cpu_events.append(time.process_time() - c0)

    est.fit(Xtr, ytr, callback=record)
    el = time.perf_counter() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    peak = peak_rss_mb()
    gw, gc = np.diff([0.0] + events), np.diff([0.0] + cpu_events)
    test = r2(yte, est.predict(Xte))
    train = r2(ytr, est.predict(Xtr))
    hist = est.history_
    lines = [f"#### Default BKerNNRegressor on {n} x {d} (test {n_test} rows)", "",
             "| quantity | value |", "|---|---|",
             f"| fit time, wall clock | {el:.1f} s ({el / 60:.2f} min) |",
             f"| fit time, CPU (user + system) | {cpu:.1f} s ({cpu / 60:.2f} min) |",
             f"| iterations / line-search trials (solved + skipped) | {est.n_iter_} / "
             f"{est.n_iter_ + int(hist['n_backtracks'].sum())} |",
             f"| kernel path / CG iterations (total) / preconditioner blocks | "
             f"{est.kernel_solver_} / {est.cg_iterations_} / {block_count(n)} |",
             f"| peak resident memory of the process | {peak:.0f} MB (before the fit: "
             f"{base:.0f} MB, data included) |",
             f"| memory estimate (rwtool.estimate_fit) | "
             f"{__import__('rwtool').estimate_fit(est, n, d, 1).peak_bytes / 2**20:.0f} MB |",
             f"| progress events / longest gap between two, wall (99%) | {len(events)} / "
             f"{gw.max():.2f} s ({np.quantile(gw, 0.99):.2f} s; first after {events[0]:.2f} s) |",
             f"| longest gap between two events, CPU of the process (99%) | {gc.max():.2f} s "
             f"({np.quantile(gc, 0.99):.2f} s) |",
             f"| test R^2 / train R^2 | {test:.4f} / {train:.4f} |",
             f"| objective first -> last | {hist['objective'][0]:.5f} -> "
             f"{hist['objective'][-1]:.5f} |"]
    print("\n".join(lines), flush=True)
    return "\n".join(lines + [""]), (Xtr, ytr, Xte, yte, el)


# ----------------------------------------------------------------------------- MLP

def mlp_budget(X, y, Xt, budget, seed=0):
    """MLPRegressor (scikit-learn defaults) on standardised X and y, trained epoch by epoch with
    partial_fit until ``budget`` seconds are spent or its default max_iter (200) epochs."""
    from sklearn.neural_network import MLPRegressor
    mu, sd = X.mean(axis=0), X.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    ym, ys = y.mean(), y.std()
    Xs, Xts, ysd = (X - mu) / sd, (Xt - mu) / sd, (y - ym) / ys
    net = MLPRegressor(random_state=seed)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    epochs = 0
    while epochs < 200 and (epochs == 0 or time.perf_counter() - t0 < budget):
        perm = rng.permutation(len(Xs))
        net.partial_fit(Xs[perm], ysd[perm])
        epochs += 1
    el = time.perf_counter() - t0
    return net.predict(Xts) * ys + ym, el, epochs


def mlp_default(X, y, Xt, seed=0):
    from sklearn.neural_network import MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    import warnings
    ym, ys = y.mean(), y.std()
    pipe = make_pipeline(StandardScaler(), MLPRegressor(random_state=seed))
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe.fit(X, (y - ym) / ys)
    return pipe.predict(Xt) * ys + ym, time.perf_counter() - t0


def mlp(datasets_root):
    from benchmarks._common.datasets import load_abalone, load_diabetes
    sets = []
    for name, loader in (("diabetes (331 / 111, d = 10)", load_diabetes),
                         ("abalone (3132 / 1045, d = 10)", load_abalone)):
        Xtr, Xte, ytr, yte = loader(datasets_root)
        sets.append((name, (Xtr, ytr, Xte, yte)))
    X, y = noisy_data(25000, 20, seed=3)
    sets.append(("Exp. 5 generator + noise (20000 / 5000, d = 20)",
                 (X[:20000], y[:20000], X[20000:], y[20000:])))
    lines = ["#### BKerNNRegressor() against MLPRegressor() on the same data and time budget", "",
             "| data | BKerNN test R^2 | BKerNN time (s) | MLP, same budget: test R^2 | "
             "epochs | time (s) | MLP, own stopping rule: test R^2 | time (s) |",
             "|---|---|---|---|---|---|---|---|"]
    for name, (Xtr, ytr, Xte, yte) in sets:
        t0 = time.perf_counter()
        est = BKerNNRegressor(random_state=0).fit(Xtr, ytr)
        tb = time.perf_counter() - t0
        rb = r2(yte, est.predict(Xte))
        pm, tm, ep = mlp_budget(Xtr, ytr, Xte, tb)
        pd, td = mlp_default(Xtr, ytr, Xte)
        lines.append(f"| {name} | {rb:.4f} | {tb:.1f} | {r2(yte, pm):.4f} | {ep} | {tm:.1f} | "
                     f"{r2(yte, pd):.4f} | {td:.1f} |")
        print(lines[-1], flush=True)
    return "\n".join(lines + [""])


# ----------------------------------------------------------------------------- cg_tol

def _cgtol_sets(datasets_root, seed, large):
    """(name, task, Xtr, ytr, Xte, yte) of the cg_tol comparison; the generated sets are drawn
    with ``seed``, the real ones have their fixed split (and, for adults, a fixed subsample)."""
    from sklearn.datasets import make_friedman1
    from benchmarks._common.datasets import load_abalone, load_adults
    out = []
    Xtr, Xte, ytr, yte = load_abalone(datasets_root)
    out.append(("abalone (3132 / 1045, d = 10)", "regression", Xtr, ytr, Xte, yte))
    Xtr, Xte, ytr, yte = load_adults(datasets_root)
    pick = np.random.default_rng(0).permutation(len(ytr))[:3000]
    out.append(("adults, 3000-row subsample (test 16281, d = 108)", "classification",
                Xtr[pick], ytr[pick], Xte, yte))
    X, y = make_friedman1(n_samples=2000, noise=1.0, random_state=seed)
    out.append(("Friedman #1 (1000 / 1000, d = 10)", "regression", X[:1000], y[:1000],
                X[1000:], y[1000:]))
    X, y = noisy_data(large + 4000, 20, seed=seed)
    out.append((f"Exp. 5 generator + noise ({large} / 4000, d = 20)", "regression",
                X[:large], y[:large], X[large:], y[large:]))
    return out


def _decisions(est):
    h = est.history_
    return np.concatenate([np.asarray(h["n_backtracks"], float), np.asarray(h["accepted"], float)])


def cgtol(datasets_root, tols, seeds, dense_max, large):
    """Default BKerNN fits through the CG path at each ``cg_tol`` and, up to ``dense_max`` rows,
    the dense path: test error, CPU time, CG iterations, and whether the line search made the
    same decisions (backtracks and acceptances of every iteration) as the reference -- the
    dense path where it runs, else the smallest tolerance -- with the largest difference of the
    test predictions from the reference's, relative to their largest magnitude."""
    from rwtool.estimators._bkernn import BKerNNClassifier
    # load the numba kernels of both paths once (not what is measured)
    Xw, yw = noisy_data(900, 5)
    for kind in ("cg", "dense"):
        BKerNNRegressor(max_iter=2, kernel_solver=kind, random_state=0).fit(Xw, yw)
    kinds = ["dense"] + [f"cg {t:g}" for t in tols]
    rows = {}
    for seed in seeds:
        for name, task, Xtr, ytr, Xte, yte in _cgtol_sets(datasets_root, seed, large):
            cls = BKerNNRegressor if task == "regression" else BKerNNClassifier
            runs = {}
            for kind in kinds:
                if kind == "dense" and len(ytr) > dense_max:
                    continue
                kw = (dict(kernel_solver="dense") if kind == "dense"
                      else dict(kernel_solver="cg", cg_tol=float(kind.split()[1])))
                c0 = time.process_time()
                est = cls(random_state=seed, **kw).fit(Xtr, ytr)
                cpu = time.process_time() - c0
                if task == "regression":
                    out = est.predict(Xte)
                    err = 1.0 - r2(yte, out)
                else:
                    out = est.decision_function(Xte)
                    err = float(np.mean(est.predict(Xte) != yte))
                runs[kind] = dict(err=err, cpu=cpu, cg=est.cg_iterations_,
                                  dec=_decisions(est), out=out)
            ref = runs.get("dense", runs[kinds[-1]])
            for kind, run in runs.items():
                run["same"] = bool(np.array_equal(run["dec"], ref["dec"]))
                run["diff"] = float(np.abs(run["out"] - ref["out"]).max()
                                    / np.abs(ref["out"]).max())
                rows.setdefault((name, task), {}).setdefault(kind, []).append(run)
                print(f"  seed {seed} {name} {kind}: error {run['err']:.4f}, {run['cpu']:.1f} s "
                      f"CPU, {run['cg']} CG its, same decisions {run['same']}, "
                      f"prediction diff {run['diff']:.1e}", flush=True)
    lines = [f"#### Default fits at each cg_tol, {len(seeds)} seeds (particles; and data for the "
             f"generated sets)", "",
             "test error: 1 - R^2 (regression) or the misclassification rate; reference: the "
             "dense path where it runs, else the smallest cg_tol; prediction difference: the "
             "largest |difference| of the test predictions (decision values) from the "
             "reference's over their largest magnitude, worst seed", "",
             "| data | path | test error, mean (min - max) | CPU s / fit, mean | CG iterations, "
             "mean | same line-search decisions as the reference | prediction difference |",
             "|---|---|---|---|---|---|---|"]
    for (name, _), by_kind in rows.items():
        for kind in kinds:
            if kind not in by_kind:
                continue
            rs = by_kind[kind]
            e = np.array([r["err"] for r in rs])
            lines.append(f"| {name} | {kind} | {e.mean():.4f} ({e.min():.4f} - {e.max():.4f}) | "
                         f"{np.mean([r['cpu'] for r in rs]):.1f} | "
                         f"{np.mean([r['cg'] for r in rs]):.0f} | "
                         f"{sum(r['same'] for r in rs)} of {len(rs)} | "
                         f"{max(r['diff'] for r in rs):.1e} |")
    return "\n".join(lines + [""])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["periter", "profile", "gaps", "fit100k", "mlp", "cgtol"])
    ap.add_argument("--sizes", default="2000,8000,32000,128000")
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument("--m", type=int, default=50)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--dense-max", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--tols", default="1e-5,1e-8,1e-10", help="cgtol: the tolerances compared")
    ap.add_argument("--seeds", default="0,1,2", help="cgtol: the seeds")
    ap.add_argument("--large", type=int, default=16000,
                    help="cgtol: training rows of the generated Exp. 5 set")
    ap.add_argument("--with-mlp", action="store_true",
                    help="fit100k: also train MLPRegressor for the same time on the same data")
    args = ap.parse_args(argv)
    print(f"Machine: {machine()} (shared with other jobs); "
          f"numba threads {__import__('numba').get_num_threads()}\n", flush=True)
    if args.what == "periter":
        print(periter([int(s) for s in args.sizes.split(",")], args.d, args.m, args.iters,
                      args.dense_max, args.repeats))
    elif args.what == "profile":
        print(profile([int(s) for s in args.sizes.split(",")], args.d, args.m, args.iters))
    elif args.what == "gaps":
        gaps(args.n, args.d, args.iters)
    elif args.what == "fit100k":
        text, large = fit_large(args.n, 20_000, args.d)
        if args.with_mlp:
            pm, tm, ep = mlp_budget(*large[:3], large[4])
            print(f"\nMLPRegressor, same data, same budget: test R^2 {r2(large[3], pm):.4f}, "
                  f"{ep} epochs, {tm:.1f} s", flush=True)
    elif args.what == "cgtol":
        print(cgtol(args.datasets, [float(t) for t in args.tols.split(",")],
                    [int(s) for s in args.seeds.split(",")], args.dense_max, args.large))
    else:
        print(mlp(args.datasets))


if __name__ == "__main__":
    main()
