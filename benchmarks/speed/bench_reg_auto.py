"""CPU seconds of the default (reg="auto") fit against the fixed-reg fit and scikit-learn, one run.

    python -m benchmarks.speed.bench_reg_auto [--datasets PATH] [--data adults,mnist17]
        [--T 1000,2000,4000] [--repeats 3] [--estimators RWClassifier,RKSClassifier]
        [--no-sklearn] [--sklearn-repeats N] [--cv-repeats N] [--min-available-gb G]
        [--check] [--peaks] [--order abba|ab]

On the training rows of each ``--data`` set (benchmarks/_common/datasets.py, at most 20000 rows as
in benchmarks/calibration/defaults.py), for each T, the fits below run interleaved, ``--repeats``
rounds, and the medians of their CPU seconds (time.process_time: the steadier figure on a shared
machine) are compared:

  * each estimator with its defaults (reg=None: "auto" for "lstsq" and "ridge") against the same
    estimator with ``reg`` fixed at the value the default chose (the same model): the ratio
    ``auto / fixed`` (target <= 1.3);
  * RWClassifier's defaults against StandardScaler + RBFSampler(T) + RidgeClassifierCV (the
    scikit-learn pipeline that also chooses alpha; target <= 1.0), and RWClassifier with reg
    fixed against the same pipeline with RidgeClassifier(alpha=1) (target <= 0.8).
    ``--sklearn-repeats N`` runs these pipelines in the first N rounds only (default: every
    round), ``--cv-repeats N`` RidgeClassifierCV in the first N of those (default: the same):
    at T = 8000 it costs about fifteen RW fits, RidgeClassifier one or two.
    ``--min-available-gb G`` waits before each scikit-learn fit until the machine has G GB
    available (MemAvailable; at T = 8000 the pipelines peak near 8 GB, three times RW's) and
    prints what it waited for.

Each fit's CPU seconds (their system part, its minor page faults) are printed as it ends (a
long run leaves its figures as it goes), then the medians of each T, and beside auto / fixed the same ratio of
user seconds alone: the system seconds are mostly page faults of fresh memory, which the
default fit has more of (its validation sample's features, the per-fold sums) and which cost
ten times more in one fit than in the next on the shared machine.

The rounds run in ABBA order (``--order abba``, the default): auto then fixed, then fixed then
auto, and so on, so that each kind of fit follows each kind equally often. A fit's system
seconds depend on the fit before it -- memory it freed a moment ago is cheap to touch again,
memory freed seconds before cost up to 25 times more on the shared virtual machine
(benchmarks/speed/bench_fresh_memory.py) -- and in the order auto, fixed, auto, fixed
(``--order ab``, the figures before 28 Nov 11:40) every default fit followed a fixed one, whose
footprint is 47-111 MB smaller, and every fixed fit followed a default one: the default paid
for its extra memory in every round, the fixed fit never.

``--peaks`` fits each estimator once more each way under tracemalloc and prints the two peaks
and their difference (the memory the default fit touches beyond the fixed one: on the shared
virtual machine each MB of it costs 0.1-2.7 ms of system time, by how long ago it was freed;
benchmarks/speed/bench_fresh_memory.py).

``--check`` also scores the chosen reg and the decades around it by 3-fold cross-validation of
the full T-feature model (the same folds and validation sample, a Cholesky solve per fold and
value, no search on leading features), walking each way while the score rises, and says whether
the choice is the full-T best or within its fold spread (the best's mean minus the choice's mean
at most the standard deviation of the choice's fold scores). The load average before and after
each T is printed. Run single-threaded (OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1), as the
figures in docs/BENCHMARKS.md were.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def _cpu(fn):
    """``(cpu, system, minflt, out)``: the CPU seconds of ``fn()`` (user + system), their
    system part (the kernel's: page faults of fresh memory, which on a shared virtual machine
    cost from 0.2 to 2 ms per MB from one fit to the next) and the minor page faults it took
    (each a first touch of a fresh 4 KB page)."""
    c, t, f = time.process_time(), os.times(), _minflt()
    out = fn()
    return time.process_time() - c, os.times().system - t.system, _minflt() - f, out


def _minflt() -> int:
    """This process's minor page faults so far (0 where getrusage has none)."""
    try:
        import resource
    except ImportError:      # Windows
        return 0
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def available_gb() -> float:
    """MemAvailable of /proc/meminfo in GB (NaN where there is none)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 1e6
    except OSError:
        pass
    return float("nan")


def peak_mb(fn) -> float:
    """The peak of the memory ``fn()`` allocates through Python and numpy (tracemalloc), in MB:
    what a fit needs beyond the one before it is what its system seconds are made of on this
    machine (benchmarks/speed/bench_fresh_memory.py)."""
    import tracemalloc
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def wait_for_memory(gb: float, poll: float = 10.0) -> None:
    """Return once ``gb`` GB are available (at once when ``gb`` is 0), saying how long it
    waited: another process's peak beside a scikit-learn fit at T = 8000 could exhaust the
    machine."""
    t0, free = time.monotonic(), available_gb()
    while gb > 0 and free < gb:
        time.sleep(poll)
        free = available_gb()
    if gb > 0:
        print(f"    {free:.1f} GB available (waited {time.monotonic() - t0:.0f} s for {gb} GB)",
              flush=True)


def full_T_scorer(est, X, y):
    """reg -> fold scores of the full T-feature model of ``est``'s draw (fitted with reg=None),
    scored as select_reg scores candidates, without the leading-feature model."""
    from rwtool.solvers._from_sums import empty_stats
    from rwtool.solvers._sufficient import FoldAccuracy, scored_folds
    probe = type(est)(**{**est.get_params(deep=False), "reg": None})
    X, Y = probe._fit_targets(X, y)
    Xp, fmap = probe._start_fit(X, Y)
    stats = empty_stats(probe, fmap, Y.shape[1]).add(fmap, Xp, Y, rows=X, start=0)
    R = fmap.gram() if fmap.has_gram else None
    eps = float(probe.eps) if probe._family == "rw" else 0.0
    accuracy, used = scored_folds(stats, True, fmap)
    acc = FoldAccuracy(stats.sample, fmap, used, stats.n_outputs)
    total = stats.total()

    def scores(reg):
        return np.array([acc(j, stats.fold_coefs(f, [reg], R, eps, use_path=False,
                                                 total=total))[0]
                         for j, f in enumerate(used)])
    return scores


def check_choice(est, X, y):
    """``(verdict, rows)``: the full-T fold scores of the chosen reg and its decades, walked
    each way while the mean rises; verdict "best", "within spread" or "outside spread"."""
    score = full_T_scorer(est, X, y)
    r0 = float(est.reg_)
    table = {r0: score(r0)}
    for step in (0.1, 10.0):
        r = r0
        while True:
            r *= step
            table[r] = score(r)
            if table[r].mean() <= table[r / step].mean():
                break
    best = max(table, key=lambda r: table[r].mean())
    gap = table[best].mean() - table[r0].mean()
    verdict = ("best" if best == r0 else "within spread" if gap <= table[r0].std()
               else "outside spread")
    rows = [f"{r:.0e}: {table[r].mean():.4f} +- {table[r].std():.4f}" for r in sorted(table)]
    return verdict, rows


def main(argv=None):
    import rwtool as rw
    from benchmarks.calibration.defaults import load
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--data", default="adults,mnist17")
    ap.add_argument("--T", default="1000,2000,4000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--estimators", default="RWClassifier,RKSClassifier")
    ap.add_argument("--no-sklearn", action="store_true")
    ap.add_argument("--sklearn-repeats", type=int, default=None)
    ap.add_argument("--cv-repeats", type=int, default=None)
    ap.add_argument("--min-available-gb", type=float, default=0.0)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--peaks", action="store_true")
    ap.add_argument("--order", choices=("abba", "ab"), default="abba")
    args = ap.parse_args(argv)
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.linear_model import RidgeClassifier, RidgeClassifierCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    names = args.estimators.split(",")
    print(f"threads: OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')} "
          f"NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS')}", flush=True)
    for data in args.data.split(","):
        Xtr, Xte, ytr, yte = load(data, args.datasets, 20000)
        d = Xtr.shape[1]
        for name in names:     # compile and fault in BLAS before anything is timed
            getattr(rw, name)(n_features=50, random_state=0).fit(Xtr[:500], ytr[:500])
        for T in (int(v) for v in args.T.split(",")):
            load0 = os.getloadavg()
            cpu, user, faults, chosen, fitted = {}, {}, {}, {}, {}

            def timed(key, fn):
                t, system, minflt, out = _cpu(fn)
                cpu.setdefault(key, []).append(t)
                user.setdefault(key, []).append(t - system)
                faults.setdefault(key, []).append(minflt)
                print(f"    round {rnd + 1} {key}: {t:.2f} s, system {system:.2f} s, "
                      f"{minflt} minor faults (load {os.getloadavg()[0]:.1f})", flush=True)
                return out

            for rnd in range(args.repeats):
                for name in names:
                    def auto():
                        est = timed(f"{name} auto", lambda: getattr(rw, name)(
                            n_features=T, random_state=0).fit(Xtr, ytr))
                        chosen[name], fitted[name] = est.reg_, est

                    def fixed():
                        timed(f"{name} fixed", lambda: getattr(rw, name)(
                            n_features=T, random_state=0, reg=chosen[name]).fit(Xtr, ytr))
                    # ABBA: each fit follows a fit of each kind equally often (the first
                    # round's auto chooses the reg the fixed fits use)
                    swap = args.order == "abba" and rnd % 2 == 1
                    for step in ((fixed, auto) if swap else (auto, fixed)):
                        step()
                sk_rounds = args.repeats if args.sklearn_repeats is None else args.sklearn_repeats
                cv_rounds = sk_rounds if args.cv_repeats is None else args.cv_repeats
                if args.no_sklearn or rnd >= sk_rounds:
                    continue
                pipelines = [("sklearn RidgeClassifier", RidgeClassifier(alpha=1.0))]
                if rnd < cv_rounds:
                    pipelines.append(("sklearn RidgeClassifierCV", RidgeClassifierCV()))
                for key, last in pipelines:
                    pipe = make_pipeline(StandardScaler(), RBFSampler(
                        n_components=T, gamma=1.0 / d, random_state=0), last)
                    wait_for_memory(args.min_available_gb)
                    timed(key, lambda: pipe.fit(Xtr, ytr))
            med = {k: float(np.median(v)) for k, v in cpu.items()}
            med_user = {k: float(np.median(v)) for k, v in user.items()}
            print(f"{data} n={len(Xtr)} d={d} T={T} (CPU s, medians of {args.repeats} "
                  f"interleaved, {args.order.upper()}; load {load0[0]:.1f} -> {os.getloadavg()[0]:.1f}):", flush=True)
            for k, v in med.items():
                print(f"  {k}: {v:.2f} s (user {med_user[k]:.2f} s, "
                      f"{int(np.median(faults[k]))} minor faults)", flush=True)
            for name in names:
                est = fitted[name]
                err = float(np.mean(est.predict(Xte) != yte))
                print(f"  {name}: reg_ {est.reg_:.0e} (searched on {est.reg_search_['features']}"
                      f" features), test error {err:.4f}, auto / fixed "
                      f"{med[f'{name} auto'] / med[f'{name} fixed']:.2f} (target <= 1.3; "
                      f"user seconds alone "
                      f"{med_user[f'{name} auto'] / med_user[f'{name} fixed']:.2f})", flush=True)
                if args.peaks:
                    auto_mb, fixed_mb = (peak_mb(lambda: getattr(rw, name)(
                        n_features=T, random_state=0, **kw).fit(Xtr, ytr))
                        for kw in ({}, {"reg": est.reg_}))
                    print(f"    peak (tracemalloc) auto {auto_mb:.1f} MB, fixed {fixed_mb:.1f} "
                          f"MB: {auto_mb - fixed_mb:.1f} MB more", flush=True)
                if args.check:
                    verdict, rows = check_choice(est, Xtr, ytr)
                    print(f"    full-T 3-fold CV around reg_: {verdict}; " + "; ".join(rows),
                          flush=True)
            if "RWClassifier" in names and "sklearn RidgeClassifierCV" in med:
                print(f"  RWClassifier defaults / RBFSampler + RidgeClassifierCV "
                      f"{med['RWClassifier auto'] / med['sklearn RidgeClassifierCV']:.2f} "
                      f"(target <= 1.0)", flush=True)
            if "RWClassifier" in names and "sklearn RidgeClassifier" in med:
                print(f"  RWClassifier reg fixed / RBFSampler + RidgeClassifier "
                      f"{med['RWClassifier fixed'] / med['sklearn RidgeClassifier']:.2f} "
                      f"(target <= 0.8)", flush=True)


if __name__ == "__main__":
    main()
