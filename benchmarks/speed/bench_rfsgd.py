"""RFSGDClassifier vs scikit-learn SGDClassifier(loss="log_loss", average=True) on RBFSampler features.

    python -m benchmarks.speed.bench_rfsgd [--datasets PATH] [--dataset adults] [--M 500] [--passes 1 5]

Two comparisons, interleaved repeats, minimum time of each:

* "end to end": RFSGDClassifier(variant="phase").fit(X) (draws and computes its features
  itself) against RBFSampler.fit_transform(X) followed by SGDClassifier.fit; the same feature
  distribution (sqrt(2/M) cos(Wx + b), W ~ N(0, 2 gamma I), gamma = 1/(2 sigma^2)), the same
  lambda (sklearn's alpha), the same number of passes, no intercept for either, and test error
  averaged over the repeats (different draws per repeat, the same draw for both).
* "same features": the averaged-SGD solver alone (rwtool.solvers._sgd.averaged_sgd with
  feature_map=None, reading the rows in place) on the very matrix RBFSampler produced, against
  SGDClassifier.fit on it.

Inputs are standardised with training statistics first. Writes docs/bench/sgd_greedy.md's SGD
section when --results is given.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from benchmarks._common.datasets import LOADERS
from benchmarks._common.output import machine, write_results
from rwtool._base import Standardizer
from rwtool.estimators._rfsgd import RFSGDClassifier
from rwtool.solvers._sgd import averaged_sgd, default_gamma


def run(dataset, root, M, passes, lam, repeats, sigma):
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.linear_model import SGDClassifier

    Xtr, Xte, ytr, yte = LOADERS[dataset](root)
    sc = Standardizer.fit(Xtr)
    Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
    if sigma is None:
        # ||x - y||^2 / (2 sigma^2) is about 1 for a typical pair of standardised rows
        sigma = math.sqrt(Xtr.shape[1])
    gamma_k = 1.0 / (2.0 * sigma**2)
    rows = []
    for P in passes:
        t_rw, t_sk, e_rw, e_sk, s_rw, s_sk, es_rw, es_sk = [], [], [], [], [], [], [], []
        for rep in range(repeats):
            # interleave the two libraries, alternating which goes first
            order = (0, 1) if rep % 2 == 0 else (1, 0)
            for who in order:
                if who == 0:
                    t0 = time.perf_counter()
                    clf = RFSGDClassifier(n_features=M, sigma=sigma, variant="phase", reg=lam,
                                          n_epochs=P, standardize=False, random_state=rep)
                    clf.fit(Xtr, ytr)
                    t_rw.append(time.perf_counter() - t0)
                    e_rw.append(np.mean(clf.predict(Xte) != yte))
                else:
                    t0 = time.perf_counter()
                    rbf = RBFSampler(gamma=gamma_k, n_components=M, random_state=rep)
                    Z = rbf.fit_transform(Xtr)
                    sk = SGDClassifier(loss="log_loss", alpha=lam, average=True, max_iter=P,
                                       tol=None, fit_intercept=False, random_state=rep)
                    sk.fit(Z, ytr)
                    t_sk.append(time.perf_counter() - t0)
                    e_sk.append(np.mean(sk.predict(rbf.transform(Xte)) != yte))
            # solver only, on the identical RBFSampler matrix
            rbf = RBFSampler(gamma=gamma_k, n_components=M, random_state=rep)
            Z = np.ascontiguousarray(rbf.fit_transform(Xtr))
            Zte = rbf.transform(Xte)
            Y = np.where(ytr == 1, 1.0, -1.0)[:, None]
            order_rng = np.random.default_rng(rep)
            visit = np.concatenate([order_rng.permutation(len(Z)) for _ in range(P)])
            for who in order:
                if who == 0:
                    t0 = time.perf_counter()
                    st, _, _ = averaged_sgd(None, Z, Y, visit, lam, default_gamma(lam, 2.0))
                    s_rw.append(time.perf_counter() - t0)
                    es_rw.append(np.mean((Zte @ st.betabar[0] > 0).astype(int) != yte))
                else:
                    t0 = time.perf_counter()
                    sk = SGDClassifier(loss="log_loss", alpha=lam, average=True, max_iter=P,
                                       tol=None, fit_intercept=False, random_state=rep).fit(Z, ytr)
                    s_sk.append(time.perf_counter() - t0)
                    es_sk.append(np.mean(sk.predict(Zte) != yte))
        rows.append((P, min(t_rw), min(t_sk), np.mean(e_rw), np.mean(e_sk), min(s_rw),
                     min(s_sk), np.mean(es_rw), np.mean(es_sk)))
        r = rows[-1]
        print(f"passes {P}: end-to-end rwtool {r[1]:.3f} s / sklearn {r[2]:.3f} s "
              f"(ratio {r[1] / r[2]:.2f}), error {r[3]:.4f} / {r[4]:.4f}; solver only "
              f"{r[5]:.3f} / {r[6]:.3f} s (ratio {r[5] / r[6]:.2f}), error {r[7]:.4f} / {r[8]:.4f}",
              flush=True)
    return Xtr.shape, sigma, rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--dataset", default="adults", choices=sorted(LOADERS))
    ap.add_argument("--M", type=int, default=500)
    ap.add_argument("--passes", type=int, nargs="+", default=[1, 5])
    ap.add_argument("--lam", type=float, default=1e-5)
    ap.add_argument("--sigma", type=float, default=None)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--results", default=None)
    args = ap.parse_args(argv)
    shape, sigma, rows = run(args.dataset, args.datasets, args.M, args.passes, args.lam,
                             args.repeats, args.sigma)
    lines = [f"{args.dataset} ({shape[0]} x {shape[1]}, standardised), M = {args.M} random-phase "
             f"features, sigma = {sigma:.4g} (sklearn gamma = {1 / (2 * sigma**2):.4g}), "
             f"lambda = alpha = {args.lam:g}, no intercept, {args.repeats} interleaved repeats "
             f"(minimum time, mean test error); machine: {machine()}.", "",
             "| passes | end-to-end rwtool (s) | end-to-end sklearn (s) | ratio | test error "
             "rwtool | test error sklearn | solver-only rwtool (s) | solver-only sklearn (s) | "
             "ratio | test error rwtool | test error sklearn |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r[0]} | {r[1]:.3f} | {r[2]:.3f} | {r[1] / r[2]:.2f} | {r[3]:.4f} | "
                     f"{r[4]:.4f} | {r[5]:.3f} | {r[6]:.3f} | {r[5] / r[6]:.2f} | {r[7]:.4f} | "
                     f"{r[8]:.4f} |")
    write_results("\n".join(lines), args.results)


if __name__ == "__main__":
    main()
