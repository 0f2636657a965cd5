"""CSV reading speed beside pandas, linearity in the column count, and an awkward-file campaign.

Speed: ``rwtool.data.read_csv`` (pyarrow.csv tokenising and typing, a numba record scan, the
encoding record) against ``pandas.read_csv`` (C parser) on a 10^6-row x 3-column numeric file,
and the alternatives considered for the tokeniser: pyarrow.csv alone, numpy.loadtxt and
Python's csv module (what rwtool used before). Repeats are interleaved (a b c a b c ...) and
the median is kept. Linearity: files of 5 rows and 7,500 / 15,000 / 30,000 columns.

Campaign: awkward files made by mutating the bundled samples and the cases of
tests/data_/test_awkward_csv.py (byte flips, truncation, stray quotes, NUL bytes, Latin-1 bytes,
ragged rows, blank lines, lone CRs, huge cells, decimal commas, currency and percent signs,
duplicate names); each is read with read_csv and counted as loaded, refused (a DataError or a
ValueError naming the problem) or crashed (anything else: the target is 0).

Issue 26 target 2 (``--issue26 DATASETS``): CPU seconds (the process's, all threads) of
``read_csv`` beside ``pandas.read_csv`` (C engine), interleaved, on adults replicated to 10^6
rows (written in a temporary folder from DATASETS/adults/adults_train.csv), the 10^6 x 3 numeric
file and 5 rows x 30,000 columns. ``read_csv`` writes the dense ``X`` on its first access, so
it is also timed with ``X`` asked for, beside pandas followed by the same one-hot encoding
(``get_dummies`` + ``to_numpy``); the streaming reader is timed as ``rwtool train`` runs it
(``scan_csv(moments=False)``, then ``iter_csv(path, scan)`` with every chunk's ``X``), in rows
per CPU-second against ``read_csv`` + ``X`` and against ``read_csv`` with ``X`` written by
blocks of the stream's chunk size (adults' whole ``X`` is 0.85 GB of fresh pages, which flatters
the stream), and beside the same stream reading the file twice. The load average is written
beside. ``--stream`` times the streaming clause alone: the stream against ``read_csv`` with
``X`` by blocks in four orders (alternating in one process after a warm-up; each in a fresh
process; right after pandas' one-hot in one process, the stream first or ``read_csv``
first: the order in which ``--issue26`` runs them), with each repeat's ratio, as the target
is to hold in every order. ``--stream --stream-pairs N`` decides it in fresh processes: N
pairs (the stream, ``read_csv`` + ``X`` by blocks; which goes first alternates), each process
importing rwtool, warming up on the file's first 20,000 rows, then timing one read with
getrusage (user and system apart), and N fresh processes of ``pandas.read_csv`` (C engine);
the per-pair ratio's median with the sign test's distribution-free interval. ``--one`` makes
one read in a fresh process (for a whole-process, paired timing of two readers; the files from
``--write-files``).

    python -m benchmarks.speed.bench_data --repeats 5 --files 400
    python -m benchmarks.speed.bench_data --issue26 /work/shared/datasets --repeats 3
    python -m benchmarks.speed.bench_data --stream /work/shared/datasets --repeats 5
    python -m benchmarks.speed.bench_data --stream /work/shared/datasets --stream-pairs 15 \
        --only adults
    python -m benchmarks.speed.bench_data --write-files /work/shared/datasets /tmp/f
    python -m benchmarks.speed.bench_data --one rwtool /tmp/f/m3.csv '{}'
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import statistics
import tempfile
import time

import numpy as np

from benchmarks._common.output import machine, write_section


def _write_numeric(path, n_rows, n_cols, rng):
    X = rng.standard_normal((n_rows, n_cols))
    with open(path, "w") as fh:
        fh.write(",".join(f"c{j}" for j in range(n_cols)) + "\n")
        np.savetxt(fh, X, delimiter=",", fmt="%.10g")


def _timed(fns: dict, repeats: int, clock=time.perf_counter) -> dict:
    """Median ``clock`` seconds of each function, repeats interleaved."""
    out = {k: [] for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            t0 = clock()
            f()
            out[k].append(clock() - t0)
    return {k: statistics.median(v) for k, v in out.items()}


def speed(tmp, repeats, rng):
    import pandas as pd
    import pyarrow.csv as pacsv

    import rwtool.data as D
    p = os.path.join(tmp, "m3.csv")
    _write_numeric(p, 10**6, 3, rng)
    D.read_csv(p)                                     # compile the scan kernels once

    def csv_module():
        with open(p, newline="") as fh:
            for _ in csv.reader(fh):
                pass

    t = _timed({"rwtool": lambda: D.read_csv(p), "pandas": lambda: pd.read_csv(p),
                "pyarrow": lambda: pacsv.read_csv(p),
                "csv module (tokenise only)": csv_module,
                "numpy.loadtxt": lambda: np.loadtxt(p, delimiter=",", skiprows=1)},
               repeats)
    return os.path.getsize(p), t


def wide(tmp, repeats, rng):
    import pandas as pd

    import rwtool.data as D
    rows = []
    for d in (7500, 15000, 30000):
        p = os.path.join(tmp, f"wide{d}.csv")
        _write_numeric(p, 5, d, rng)
        t = _timed({"rwtool": lambda: D.read_csv(p), "pandas": lambda: pd.read_csv(p)},
                   max(1, repeats // 2))
        rows.append((d, t["rwtool"], t["pandas"]))
    return rows


# ---------------------------------------------------------------------------- issue 26

def _write_adults(path, datasets, n_rows):
    """adults_train.csv's rows repeated to ``n_rows``, the index column renumbered."""
    with open(os.path.join(datasets, "adults", "adults_train.csv")) as fh:
        head, *body = fh.read().splitlines()
    rest = [ln.split(",", 1)[1] for ln in body]
    with open(path, "w") as fh:
        fh.write(head + "\n")
        fh.write("".join(f"{i},{rest[i % len(rest)]}\n" for i in range(n_rows)))


def issue26_files(tmp, datasets, rng, only=None):
    """(what, path, read_csv options) of the three issue-26 files, written in ``tmp`` (with
    ``only``: those whose description holds it; the others are not written)."""
    files = []
    for what, name, opts, write in (
            ("adults replicated to 10^6 rows (text categories)", "adults1m.csv",
             {"target": -1, "missing": "impute-most-frequent"},
             lambda p: _write_adults(p, datasets, 10**6)),
            ("10^6 rows x 3 numeric columns", "m3.csv", {},
             lambda p: _write_numeric(p, 10**6, 3, rng)),
            ("5 rows x 30,000 numeric columns", "w30k.csv", {},
             lambda p: _write_numeric(p, 5, 30000, rng))):
        if only and only not in what:
            continue
        p = os.path.join(tmp, name)
        write(p)
        files.append((what, p, opts))
    return files


_STREAM_ROWS = 1 << 17       # about the rows of a streamed chunk of adults (16 MiB blocks)


def readers(path, opts):
    """The ways of reading ``path`` compared: rwtool.read_csv (``X`` not touched: it is
    written on first access), the same with ``X`` asked for (one n x d matrix: on adults 10^6
    x 106 float64, whose fresh pages cost more than the read), the same with ``X`` written by
    blocks of 131,072 rows (what a chunk of the stream holds), pandas.read_csv (C engine),
    pandas followed by the one-hot encoding read_csv's ``X`` holds, and the streaming reader
    as ``rwtool train`` uses it on a big file (``scan_csv(moments=False)``, then
    ``iter_csv(path, scan)`` with every chunk's ``X``; its typed blocks kept in memory up to
    64 MiB, spilled to a temporary file past it), the same without ``X`` (every chunk
    encoded, its dense ``X`` never written: beside ``read_csv`` and pandas, which write none
    either), and the same reading the file twice (``keep_bytes=0, spill_dir=False``: the
    streaming reader before the kept blocks)."""
    import pandas as pd

    import rwtool.data as D

    def rwtool_x():
        D.read_csv(path, **opts).X

    def pandas_encoded():
        df = pd.read_csv(path)
        pd.get_dummies(df, dtype=np.float64).to_numpy(np.float64)

    def rwtool_x_by_blocks():
        ds = D.read_csv(path, **opts)
        for i in range(0, ds.n_samples, _STREAM_ROWS):
            ds.subset(np.arange(i, min(i + _STREAM_ROWS, ds.n_samples))).X

    def stream(with_x=True, **more):
        def run():
            scan = D.scan_csv(path, moments=False, **opts, **more)
            for chunk in D.iter_csv(path, scan):
                if with_x:
                    chunk.X
            scan.close()
        return run

    return {"rwtool": lambda: D.read_csv(path, **opts), "rwtool + X": rwtool_x,
            "rwtool + X by blocks": rwtool_x_by_blocks,
            "pandas": lambda: pd.read_csv(path), "pandas + one-hot": pandas_encoded,
            "stream + X": stream(), "stream": stream(with_x=False),
            "stream read twice + X": stream(keep_bytes=0, spill_dir=False)}


def issue26(tmp, datasets, repeats, rng):
    import rwtool.data as D
    files = issue26_files(tmp, datasets, rng)
    D.read_csv(files[2][1])                           # numba's cache, once
    rows = []
    for what, path, opts in files:
        load0 = os.getloadavg()[0]
        t = _timed(readers(path, opts), repeats, time.process_time)
        n = D.read_csv(path, **opts).n_samples
        rows.append((what, os.path.getsize(path), n, t, (load0, os.getloadavg()[0])))
    return rows


_STREAM, _BY_BLOCKS = "stream + X", "rwtool + X by blocks"


def _cpu(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def stream_orders(path, opts, repeats):
    """The stream's rows per CPU-second over ``read_csv`` + ``X`` by blocks (the second's
    CPU seconds over the first's), each repeat's, in four orders: ``alternating`` (both in
    this process after a warm-up, one after the other), ``processes`` (each in a fresh
    process of its own: a warm-up, then the median of 3 runs; the pairs alternating), and
    after pandas' one-hot in this process (it frees and faults about 2 GB on adults),
    ``stream first`` (one-hot, stream, read_csv) and ``read_csv first`` (one-hot, read_csv,
    stream): the process's history the two meet differs, and with it their page faults."""
    import subprocess
    import sys
    fns = readers(path, opts)
    stream, ref, onehot = fns[_STREAM], fns[_BY_BLOCKS], fns["pandas + one-hot"]
    stream(), ref()
    out = {k: [] for k in ("alternating", "processes", "stream first", "read_csv first")}
    for _ in range(repeats):
        s = _cpu(stream)
        out["alternating"].append(_cpu(ref) / s)
        cpu = {}
        for reader in (_STREAM, _BY_BLOCKS):
            run = subprocess.run([sys.executable, "-m", "benchmarks.speed.bench_data",
                                  "--warm", reader, path, json.dumps(opts)],
                                 capture_output=True, text=True, check=True)
            cpu[reader] = float(run.stdout.split()[-1])
        out["processes"].append(cpu[_BY_BLOCKS] / cpu[_STREAM])
        onehot()
        s = _cpu(stream)
        out["stream first"].append(_cpu(ref) / s)
        onehot()
        r = _cpu(ref)
        out["read_csv first"].append(r / _cpu(stream))
    return out


def stream_rows(datasets, repeats, rng, only=None):
    """The streaming clause alone, per file (``only``: those whose description holds it):
    :func:`stream_orders`' ratios, their medians and each repeat's range."""
    with tempfile.TemporaryDirectory() as tmp:
        for what, path, opts in issue26_files(tmp, datasets, rng, only):
            load0 = os.getloadavg()[0]
            out = stream_orders(path, opts, repeats)
            cells = [f"{statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})"
                     for v in out.values()]
            print(f"| {what} | {' | '.join(cells)} | {load0:.1f}-{os.getloadavg()[0]:.1f} |",
                  flush=True)


def warm_read(reader, path, opts_json, runs=3):
    """In this (fresh) process: a warm-up read by ``reader``, then the median CPU seconds of
    ``runs`` more, printed: :func:`stream_orders`' ``processes``."""
    fn = readers(path, json.loads(opts_json))[reader]
    fn()
    print(statistics.median(_cpu(fn) for _ in range(runs)))


def one_read(reader, path, opts_json):
    """One read of ``path`` by ``reader`` (a key of :func:`readers`), its CPU seconds printed:
    the unit a whole-process timing (imports included) runs A against B."""
    fn = readers(path, json.loads(opts_json))[reader]      # the imports, before the clock
    t0 = time.process_time()
    fn()
    print(f"{reader} {path} {time.process_time() - t0:.3f}")


_PANDAS, _STREAM_NO_X, _READ = "pandas", "stream", "rwtool"
_WARM_ROWS = 20_000


def _head(path, out, n_lines):
    """The first ``n_lines`` lines of ``path`` (its header and rows) written to ``out``: the
    small file a fresh process warms up on, read by the same code paths as ``path``."""
    with open(path, "rb") as src, open(out, "wb") as dst:
        for i, line in enumerate(src):
            if i >= n_lines:
                break
            dst.write(line)


def fresh_read(reader, path, opts_json, warm):
    """In this (fresh) process: one untimed read of the small file ``warm`` by ``reader`` (the
    stream twice, kept in memory and spilled, so both paths' compiled code is loaded), then one
    read of ``path``; its CPU seconds printed as JSON (user and system apart, from getrusage,
    all threads) with its page faults: :func:`stream_pairs`' unit."""
    opts = json.loads(opts_json)
    readers(warm, opts)[reader]()
    if reader in (_STREAM, _STREAM_NO_X):
        readers(warm, dict(opts, keep_bytes=0))[reader]()
    fn = readers(path, opts)[reader]
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    fn()
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"user": r1.ru_utime - r0.ru_utime, "sys": r1.ru_stime - r0.ru_stime,
                      "minflt": r1.ru_minflt - r0.ru_minflt}))


def _fresh(reader, path, opts, warm) -> dict:
    import subprocess
    import sys
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    run = subprocess.run([sys.executable, "-m", "benchmarks.speed.bench_data", "--fresh",
                          reader, path, json.dumps(opts), warm],
                         capture_output=True, text=True, check=True, env=env)
    out = json.loads(run.stdout.splitlines()[-1])
    out["cpu"] = out["user"] + out["sys"]
    return out


def median_interval(x, level=0.95):
    """The median of ``x`` and a distribution-free interval for it (the sign test's: order
    statistics k and n + 1 - k, k the largest with P(Binomial(n, 1/2) < k) <= (1 - level) / 2),
    and the interval's own coverage."""
    from math import comb
    x = sorted(x)
    n = len(x)
    cdf, k = 0.0, 0
    while True:      # cdf = P(B <= k - 1)
        nxt = cdf + comb(n, k) / 2 ** n
        if nxt > (1 - level) / 2:
            break
        cdf, k = nxt, k + 1
    if k == 0:
        return statistics.median(x), x[0], x[-1], 1.0
    return statistics.median(x), x[k - 1], x[n - k], 1 - 2 * cdf


def stream_pairs(path, opts, n_pairs, warm):
    """``n_pairs`` pairs of fresh processes, the stream and ``read_csv`` + ``X`` by blocks (the
    first of each pair alternating), then the same two without ``X`` (the stream's chunks
    encoded, ``read_csv``'s table read: neither writes the dense matrix, as pandas does not)
    in the same order, then pandas.read_csv (C engine): each a fresh process of
    :func:`fresh_read`. Returns the records per reader."""
    out = {_STREAM: [], _BY_BLOCKS: [], _STREAM_NO_X: [], _READ: [], _PANDAS: []}
    for i in range(n_pairs):
        order = ((_STREAM, _BY_BLOCKS, _STREAM_NO_X, _READ) if i % 2 == 0 else
                 (_BY_BLOCKS, _STREAM, _READ, _STREAM_NO_X))
        for reader in order + (_PANDAS,):
            out[reader].append(_fresh(reader, path, opts, warm))
    return out


def stream_pairs_rows(datasets, n_pairs, rng, only=None):
    """:func:`stream_pairs` per issue-26 file, printed: each reader's median CPU seconds (user
    + system), and per pair the ratio of rows per CPU-second (the other's CPU over the
    stream's; above 1 the stream is faster) with its median's sign-test interval, on CPU and
    on user time alone: the stream + ``X`` against ``read_csv`` + ``X`` by blocks (the
    clause), the two without ``X``, and each reader's CPU over pandas' (the process of its
    round)."""
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for what, path, opts in issue26_files(tmp, datasets, rng, only):
            warm = os.path.join(tmp, "warm.csv")
            _head(path, warm, _WARM_ROWS + 1)
            load0 = os.getloadavg()[0]
            out = stream_pairs(path, opts, n_pairs, warm)
            load = f"{load0:.1f}-{os.getloadavg()[0]:.1f}"
            for name, recs in out.items():
                cpu, user, sys_ = (statistics.median(r[k] for r in recs)
                                   for k in ("cpu", "user", "sys"))
                flt = statistics.median(r["minflt"] for r in recs)
                row = (f"| {what} | {name} | {cpu:.3f} ({user:.3f} + {sys_:.3f}) | {flt:.0f} "
                       f"| {_interval([r['cpu'] / p['cpu'] for r, p in zip(recs, out[_PANDAS])])} |")
                lines.append(row)
                print(row, flush=True)
            for a, b in ((_STREAM, _BY_BLOCKS), (_STREAM_NO_X, _READ)):
                wins = sum(y["cpu"] > x["cpu"] for x, y in zip(out[a], out[b]))
                row = (f"| {what} | {a} / {b}, rows per CPU-s | "
                       f"**{_interval([y['cpu'] / x['cpu'] for x, y in zip(out[a], out[b])])}**"
                       f"; the stream faster in {wins} of {n_pairs} | user alone: "
                       f"{_interval([y['user'] / x['user'] for x, y in zip(out[a], out[b])])} "
                       f"| {load} |")
                lines.append(row)
                print(row, flush=True)
    return lines


def _interval(ratios) -> str:
    m, lo, hi, cover = median_interval(ratios)
    return f"{m:.3f} ({lo:.3f}-{hi:.3f}, {cover:.0%})"


# ---------------------------------------------------------------------------- campaign

def _mutations(text: bytes, rng):
    lines = text.split(b"\n")
    k = int(rng.integers(0, len(lines)))
    pos = int(rng.integers(0, max(1, len(text))))
    yield "byte flip", text[:pos] + bytes([int(rng.integers(0, 256))]) + text[pos + 1:]
    yield "truncated", text[:pos]
    yield "stray quote", text[:pos] + b'"' + text[pos:]
    yield "NUL byte", text[:pos] + b"\x00" + text[pos:]
    yield "latin-1 byte", text[:pos] + b"\xe9" + text[pos:]
    yield "ragged row", b"\n".join(lines[:k] + [lines[k] + b",extra"] + lines[k + 1:])
    yield "blank lines", b"\n".join(lines[:k] + [b"", b"   ", b",,"] + lines[k:])
    yield "lone CR", text.replace(b"\n", b"\r")
    yield "huge cell", b"\n".join(lines[:k] + [lines[k] + b"," + b"x" * 200_000]
                                  + lines[k + 1:])
    yield "decimal comma", text.replace(b".", b",")
    yield "semicolons", text.replace(b",", b";")
    yield "currency", b"\n".join(lines[:1] + [b"$" + ln for ln in lines[1:] if ln])
    yield "percent", b"\n".join(lines[:1] + [ln.replace(b",", b"%,", 1) for ln in lines[1:]])
    yield "duplicate name", text.replace(lines[0], lines[0] + b"," + lines[0].split(b",")[0], 1)
    yield "header only", lines[0] + b"\n"
    yield "empty", b""


def campaign(tmp, n_files, rng):
    import rwtool.data as D
    from tests.data_.test_awkward_csv import CASES
    seeds = [open(s["path"], "rb").read() for s in D.list_samples()]
    seeds += [c[1].encode("utf-8") for c in CASES]
    counts = {"tried": 0, "loaded": 0, "refused": 0, "crashed": 0}
    crashes = []
    i = 0
    while counts["tried"] < n_files:
        seed = seeds[i % len(seeds)]
        i += 1
        for what, data in _mutations(seed, rng):
            if counts["tried"] >= n_files:
                break
            p = os.path.join(tmp, f"f{counts['tried']}.csv")
            with open(p, "wb") as fh:
                fh.write(data)
            counts["tried"] += 1
            try:
                D.read_csv(p, target=-1)
                counts["loaded"] += 1
            except (D.DataError, ValueError):
                counts["refused"] += 1
            except Exception as exc:          # a crash: what the campaign looks for
                counts["crashed"] += 1
                crashes.append(f"{what}: {type(exc).__name__}: {exc}")
            os.remove(p)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return counts, crashes, peak


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--files", type=int, default=400)
    ap.add_argument("--out", default="docs/bench/data.md")
    ap.add_argument("--issue26", metavar="DATASETS", help="only the issue-26 rows, on the "
                    "adults file of this datasets folder")
    ap.add_argument("--stream", metavar="DATASETS", help="only the streaming reader against "
                    "read_csv with X by blocks on the issue-26 files, in rows per CPU-second "
                    "(printed, not written)")
    ap.add_argument("--only", metavar="WORD", help="with --stream: only the files whose "
                    "description holds WORD (e.g. adults)")
    ap.add_argument("--stream-pairs", type=int, metavar="N", help="with --stream: N pairs of "
                    "fresh processes (the stream, read_csv + X by blocks, alternating which "
                    "goes first; each after a warm-up read of the file's first 20,000 rows) "
                    "and N fresh pandas.read_csv processes, in CPU seconds")
    ap.add_argument("--fresh", nargs=4, metavar=("READER", "PATH", "OPTIONS_JSON", "WARM"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--warm", nargs=3, metavar=("READER", "PATH", "OPTIONS_JSON"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--write-files", metavar="DATASETS FOLDER", nargs=2,
                    help="write the issue-26 files into FOLDER and print their paths")
    ap.add_argument("--one", nargs=3, metavar=("READER", "PATH", "OPTIONS_JSON"),
                    help="one read (READER: rwtool, 'rwtool + X', 'rwtool + X by blocks', "
                         "pandas, 'pandas + one-hot', 'stream + X', 'stream read twice + X') "
                         "and its in-process CPU seconds")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    if args.one:
        one_read(*args.one)
        return
    if args.warm:
        warm_read(*args.warm)
        return
    if args.fresh:
        fresh_read(*args.fresh)
        return
    if args.stream and args.stream_pairs:
        print(f"Command: `python -m benchmarks.speed.bench_data --stream DATASETS --stream-pairs "
              f"{args.stream_pairs}{' --only ' + args.only if args.only else ''}`; machine: "
              f"{machine()}; each read in a fresh process after a warm-up read "
              f"(OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1), CPU seconds from getrusage, "
              f"medians of {args.stream_pairs}; ratios per pair or round (median, the sign "
              f"test's interval and its coverage)\n")
        print("| file | reader | CPU s (user + system) | minor faults | CPU / pandas' |")
        print("|---|---|---|---|---|")
        stream_pairs_rows(args.stream, args.stream_pairs, rng, args.only)
        return
    if args.stream:
        print(f"Command: `python -m benchmarks.speed.bench_data --stream DATASETS --repeats "
              f"{args.repeats}`; rows per CPU-second of the stream over read_csv + X by "
              f"blocks, median of {args.repeats} (each repeat's range)\n")
        print("| file | alternating | each in its own process | after one-hot, stream "
              "first | after one-hot, read_csv first | load |")
        print("|---|---|---|---|---|---|")
        stream_rows(args.stream, args.repeats, rng, args.only)
        return
    if args.write_files:
        for what, path, opts in issue26_files(args.write_files[1], args.write_files[0], rng):
            print(f"{path} {json.dumps(opts)}  # {what}")
        return
    if args.issue26:
        with tempfile.TemporaryDirectory() as tmp:
            rows = issue26(tmp, args.issue26, args.repeats, rng)
        lines = [f"Command: `python -m benchmarks.speed.bench_data --issue26 DATASETS --repeats "
                 f"{args.repeats}`", "",
                 f"Machine: {machine()}, shared with other work. CPU seconds of the process "
                 f"(all threads), median of {args.repeats} interleaved runs.", "",
                 "| file | read_csv s | pandas s | ratio | read_csv + X s | pandas + one-hot s "
                 "| ratio | stream + X s (read twice) | stream / (read_csv + X) rows per s "
                 "(read twice) | read_csv + X by blocks s | stream / that (read twice) | "
                 "load |",
                 "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for what, size, n, t, load in rows:
            lines.append(
                f"| {what}, {size / 1e6:.1f} MB | {t['rwtool']:.2f} | {t['pandas']:.2f} | "
                f"{t['rwtool'] / t['pandas']:.2f} | {t['rwtool + X']:.2f} | "
                f"{t['pandas + one-hot']:.2f} | "
                f"{t['rwtool + X'] / t['pandas + one-hot']:.2f} | {t['stream + X']:.2f} "
                f"({t['stream read twice + X']:.2f}) | "
                f"{t['rwtool + X'] / t['stream + X']:.2f} "
                f"({t['rwtool + X'] / t['stream read twice + X']:.2f}) | "
                f"{t['rwtool + X by blocks']:.2f} | "
                f"{t['rwtool + X by blocks'] / t['stream + X']:.2f} "
                f"({t['rwtool + X by blocks'] / t['stream read twice + X']:.2f}) | "
                f"{load[0]:.1f}-{load[1]:.1f} |")
        text = "\n".join(lines)
        print(text)
        write_section(args.out, "csv-issue26", text)
        return
    with tempfile.TemporaryDirectory() as tmp:
        size, t = speed(tmp, args.repeats, rng)      # first: a fresh process
        w = wide(tmp, args.repeats, rng)
        counts, crashes, peak = campaign(tmp, args.files, rng)
    lines = [f"Machine: {machine()}. In-process timings, median of {args.repeats} interleaved "
             f"runs; the machine was shared with other work, so absolute times are noisy and "
             f"the ratios are what to read.", "",
             f"10^6 rows x 3 numeric columns ({size / 1e6:.1f} MB):", "",
             "| reader | median s | / pandas |", "|---|---|---|"]
    for k, v in t.items():
        lines.append(f"| {k} | {v:.3f} | {v / t['pandas']:.2f} |")
    lines += ["", "5 rows, many columns (linear: time per column constant):", "",
              "| columns | rwtool s | pandas s | rwtool / pandas | rwtool ms per 1000 columns |",
              "|---|---|---|---|---|"]
    for d, a, b in w:
        lines.append(f"| {d} | {a:.2f} | {b:.2f} | {a / b:.2f} | {1000 * a / d * 1000:.0f} |")
    lines += ["", f"Awkward-file campaign: {counts['tried']} files tried, {counts['loaded']} "
                  f"loaded, {counts['refused']} refused with a DataError/ValueError, "
                  f"{counts['crashed']} crashes; peak memory of the whole benchmark process "
                  f"{peak:.0f} MB (the 40 MB file and pandas included)."]
    lines += [f"- crash: {c}" for c in crashes[:20]]
    lines.insert(0, f"Command: `python -m benchmarks.speed.bench_data --repeats {args.repeats} "
                    f"--files {args.files}`\n")
    text = "\n".join(lines)
    print(text)
    if not os.path.exists(args.out):
        with open(args.out, "w") as fh:
            fh.write("# CSV reading benchmarks (issue 16)\n")
    write_section(args.out, "csv", text)


if __name__ == "__main__":
    main()
