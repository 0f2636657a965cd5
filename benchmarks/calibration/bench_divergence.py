"""Measure the divergence guards of the iterative solvers (rwtool.solvers._divergence).

    python -m benchmarks.calibration.bench_divergence [--datasets PATH] [--only wine,abalone]
        [--bad-only wine,abalone,...] [--T 500] [--diverged 10] [--json FILE]
        [--report-only] [--out docs/bench/divergence.md]

Two sets of fits, on the data of benchmarks/calibration/defaults.py (same loading, same splits,
regression targets standardised, errors are test error or MSE on standardised y):

* every default row of the iterative solvers (RW sfgd and osd on every instantiation, RKS sgd
  on every base, RFSGDClassifier): none may trip either guard;
* deliberately bad steps on the ``--bad-only`` sets: SFGD's step_cap 10 and 100 times its
  default and the paper's uncapped 1 / (reg t); RKS SGD's step 1 / (L + reg t) with L divided
  by 10 and 100 (no parameter sets it: the script scales rwtool.solvers._sgd_rks.step_constant);
  RFSGD's first step eta_1 = 2 / (reg (gamma + 1)) 10 and 100 times the theorem's (gamma
  lowered); OSD, whose step is an exact line search, with batches 100 times smaller (5 rows).
  Every one whose model is worse than the zero model must raise or warn (a larger step can
  also give a good model: then no guard may fire).

Each fit runs with the final-model check switched off, to record r, the returned model's
training loss over the zero model's (what the check compares with FINAL_WARN and FINAL_RAISE),
and that model's test error; a run the early stop ends (a batch loss above DIVERGED times the
zero model's largest row loss) is recorded with its iteration, and run again with the previous
multiple 1e6 to show the work the lower multiple saves. Run single-threaded
(OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from benchmarks._common.argcheck import check_choices, csv_list
from benchmarks._common.output import machine
from benchmarks.calibration.defaults import DATASETS, INSTANTIATIONS, REGRESSION, error, load, rows

#: the early-stop multiple before this measurement
OLD_DIVERGED = 1e6
BAD_SETS = ("wine", "abalone", "diabetes", "cancer", "digits", "make_classification", "adults")
FACTORS = (10, 100)


@contextlib.contextmanager
def patched(**values):
    """Module attributes of rwtool.solvers._divergence / sgd_rks set for the block."""
    from rwtool.solvers import _divergence as divergence, _sgd_rks as sgd_rks
    old = {}
    for name, value in values.items():
        mod = sgd_rks if name == "step_constant" else divergence
        old[name] = (mod, getattr(mod, name))
        setattr(mod, name, value)
    try:
        yield
    finally:
        for name, (mod, value) in old.items():
            setattr(mod, name, value)


def measure(factory, data, regression, step_factor=1.0, diverged=None):
    """Fit with the final check off; r, test error, early-stop iteration, warnings, seconds."""
    from rwtool import NumericalError
    from rwtool.solvers import _sgd_rks as sgd_rks
    Xtr, Xte, ytr, yte = data
    base_L = sgd_rks.step_constant
    patch = dict(FINAL_RAISE=math.inf, FINAL_WARN=math.inf)
    if step_factor != 1.0:
        patch["step_constant"] = lambda *a, **k: base_L(*a, **k) / step_factor
    if diverged is not None:
        patch["DIVERGED"] = diverged
    est = factory()
    t = time.perf_counter()
    out = {}
    with patched(**patch), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            est.fit(Xtr, ytr)
        except NumericalError as exc:
            out.update(status="stopped", iteration=exc.iteration, message=str(exc)[:200])
        else:
            out.update(status="ran", r=float(est.solver_info_["final_loss_ratio"]),
                       test=error(est.predict(Xte), yte, regression))
    out["seconds"] = round(time.perf_counter() - t, 3)
    out["warnings"] = sorted({f"{w.category.__name__}: {str(w.message)[:100]}" for w in caught})
    return out


def verdict(res):
    """What a user gets with the guards as shipped: ok, warn or raise (and which check)."""
    from rwtool.solvers._divergence import FINAL_RAISE, FINAL_WARN
    if res["status"] == "stopped":
        return "raise (early stop)"
    if not res["r"] <= FINAL_RAISE:
        return "raise (final check)"
    if res["r"] > FINAL_WARN:
        return "warn (final check)"
    return "ok" + (" + other warning" if res["warnings"] else "")


def default_rows(name, T):
    args = SimpleNamespace(methods=["RW", "RKS", "RFSGD"], solvers=None,
                           instantiations=INSTANTIATIONS, T=T)
    return [(key, f) for key, _, _, f in rows(name, args)
            if key == "RFSGD" or key.split("/")[-1] in ("sfgd", "osd", "sgd")]


def bad_rows(name, T):
    """(key, setting, factory, step_factor) of the deliberately bad steps on data set ``name``."""
    import rwtool as rw
    reg = name in REGRESSION
    RW = rw.RWRegressor if reg else rw.RWClassifier
    RKS = rw.RKSRegressor if reg else rw.RKSClassifier
    out = []
    for inst in ("rwsign", "rwstumps"):
        for f in FACTORS:
            out.append((f"RW/{inst}/sfgd", f"step_cap x{f}",
                        lambda i=inst, f=f: RW(instantiation=i, solver="sfgd", n_features=T,
                                               step_cap=0.25 * f, random_state=0), 1.0))
        out.append((f"RW/{inst}/sfgd", "step_cap=None (1/(reg t))",
                    lambda i=inst: RW(instantiation=i, solver="sfgd", n_features=T,
                                      step_cap=None, random_state=0), 1.0))
        out.append((f"RW/{inst}/osd", "batch_size=5",
                    lambda i=inst: RW(instantiation=i, solver="osd", n_features=T,
                                      batch_size=5, random_state=0), 1.0))
    for base in ("relu", "sign", "fourier"):
        for f in FACTORS:
            out.append((f"RKS/{base}/sgd", f"step x{f}",
                        lambda b=base: RKS(base=b, solver="sgd", n_features=T, random_state=0),
                        float(f)))
    if not reg:
        from rwtool.solvers._sgd import default_gamma
        for f in FACTORS:
            # eta_1 = 2 / (reg (gamma + 1)): f times the theorem's first step
            gamma = (default_gamma(1e-5, 1.0) + 1.0) / f - 1.0
            out.append(("RFSGD", f"eta_1 x{f} (gamma={gamma:.4g})",
                        lambda g=gamma: rw.RFSGDClassifier(gamma=g, random_state=0), 1.0))
    return out


def run(args):
    from rwtool.solvers._divergence import DIVERGED
    results = {"machine": machine(), "T": args.T, "diverged": DIVERGED,
               "defaults_diverged": args.diverged or DIVERGED, "defaults": {}, "bad": {}}
    for name in args.only:
        data = load(name, args.datasets, int(args.max_train))
        regression = name in REGRESSION
        print(f"[{name}] defaults", file=sys.stderr, flush=True)
        for key, factory in default_rows(name, args.T):
            res = measure(factory, data, regression, diverged=args.diverged)
            res["verdict"] = verdict(res)
            results["defaults"].setdefault(name, {})[key] = res
            print(f"  {key}: {res['verdict']} r={res.get('r')}", file=sys.stderr, flush=True)
        _save(results, args)
    for name in args.bad_only:
        data = load(name, args.datasets, int(args.max_train))
        regression = name in REGRESSION
        print(f"[{name}] bad steps", file=sys.stderr, flush=True)
        for key, setting, factory, f in bad_rows(name, args.T):
            res = measure(factory, data, regression, f)
            res["verdict"] = verdict(res)
            if res["status"] == "stopped":
                old = measure(factory, data, regression, f, OLD_DIVERGED)
                res["old"] = {k: old.get(k) for k in ("status", "iteration", "r", "seconds")}
            results["bad"].setdefault(name, {})[f"{key}|{setting}"] = res
            print(f"  {key} {setting}: {res['verdict']} r={res.get('r')} "
                  f"it={res.get('iteration')} old={res.get('old')}", file=sys.stderr, flush=True)
        _save(results, args)
    return results


def _save(results, args):
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


def _fmt(x, digits=3):
    if x is None:
        return "-"
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return f"{x:.{digits}g}"


def report(results):
    from rwtool.solvers._divergence import FINAL_RAISE, FINAL_WARN
    lines = [f"Machine: {results['machine']} (shared with other jobs; single-threaded). "
             f"T = {results['T']}; DIVERGED = {results['diverged']:g} (default fits run with "
             f"{results.get('defaults_diverged', results['diverged']):g}), FINAL_WARN = "
             f"{FINAL_WARN:g}, FINAL_RAISE = {FINAL_RAISE:g} (verdicts from the measured r).",
             "",
             "### Default fits: r = training loss of the returned model / the zero model's", "",
             "| data set | rows | largest r (row) | median r | verdicts |", "|---|---|---|---|---|"]
    for name, rows_ in results["defaults"].items():
        rs = {k: v["r"] for k, v in rows_.items() if v["status"] == "ran"}
        top = max(rs, key=rs.get) if rs else None
        verdicts = {}
        for v in rows_.values():
            verdicts[verdict(v)] = verdicts.get(verdict(v), 0) + 1
        lines.append(f"| {name} | {len(rows_)} | {_fmt(rs.get(top))} ({top}) | "
                     f"{_fmt(float(np.median(list(rs.values()))) if rs else None)} | "
                     f"{', '.join(f'{k}: {n}' for k, n in sorted(verdicts.items()))} |")
    lines += ["", "### Deliberately bad steps", "",
              "| data set | row | setting | r | test error of that model | verdict | "
              "early stop at (DIVERGED now / 1e6) |", "|---|---|---|---|---|---|---|"]
    for name, rows_ in results["bad"].items():
        for k, v in rows_.items():
            key, setting = k.split("|")
            stop = "-"
            if v["status"] == "stopped":
                old = v.get("old") or {}
                was = (f"{old.get('iteration')}" if old.get("status") == "stopped"
                       else f"ran to the end, r = {_fmt(old.get('r'))}")
                stop = f"{v['iteration']} / {was}"
            lines.append(f"| {name} | {key} | {setting} | {_fmt(v.get('r'))} | "
                         f"{_fmt(v.get('test'))} | {verdict(v)} | {stop} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--only", default=",".join(DATASETS))
    ap.add_argument("--bad-only", default=",".join(BAD_SETS))
    ap.add_argument("--T", type=int, default=500)
    ap.add_argument("--max-train", type=int, default=20000)
    ap.add_argument("--diverged", type=float, default=None,
                    help="the early-stop multiple of the default fits (default: DIVERGED), to "
                         "measure its margin")
    ap.add_argument("--json", default=None)
    ap.add_argument("--report-only", action="store_true", help="report the --json file")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    args.only = csv_list(args.only)
    args.bad_only = csv_list(args.bad_only)
    check_choices(ap, args.only + args.bad_only, DATASETS, "data set")
    if args.report_only:
        if not args.json:
            ap.error("--report-only needs --json FILE")
        results = json.loads(Path(args.json).read_text())
    else:
        results = run(args)
    text = report(results)
    if args.out:     # atomically: a run stopped while writing leaves the old page
        tmp = Path(f"{args.out}.tmp")
        tmp.write_text(text)
        tmp.replace(args.out)
    print(text)


if __name__ == "__main__":
    main()
