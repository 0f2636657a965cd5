"""Hostile model files: mutate valid .rwm files and load each one in a memory-capped process.

Base files are small fitted models of every class rwtool saves (RW and RKS classifiers and
regressors of several instantiations, a Lasso-pruned and a prune()d model, RFSGD, GreedyMK
with the Taylor dictionary and with Fourier features, BKerNN, a model with a preprocessing
record). Hypothesis draws mutations of them:

- ``truncate``: the file cut at any byte;
- ``flip``: up to 6 bytes overwritten anywhere;
- ``zipfield``: a field of a central-directory or local header (version needed, flags, method,
  CRC, sizes, offsets, name length) or of the end record set to an edge value;
- ``array``: one array member replaced by an .npy of any dtype and shape (stored or deflated),
  the document's table and both checksums recomputed, so only the model's own consistency
  checks stand between the file and the estimator;
- ``doc``: any value of the document replaced, or one of the scalars later code relies on
  (``n_features_in_``, ``n_features``, ``n_particles``...) set to an edge value, checksums
  recomputed;
- ``bomb``: an array member or the document replaced by a deflated run of zeros declaring up
  to ``--max-bomb-mb`` (zip bomb), checksums recomputed;
- ``text``: a string of the document (or a key) replaced by one no writer can take: a lone
  surrogate (``"\\ud800"``, valid JSON), a string of 70,000 characters;
- ``special``: /dev/zero, /dev/urandom, a FIFO, a directory, a symlink to /dev/zero, an empty
  file.

Each file is loaded with ``rwtool.persist.read_model`` after ``resource.setrlimit(RLIMIT_AS)``
caps the process at its size after the warm-up plus ``--limit-mb``, so a blowup is a
MemoryError here, not a dead machine. The outcome is "loaded" (and the model then predicts),
"refused" (ModelFileError, or InsufficientMemoryError before anything is read) or a crash
(any other exception, a timeout, a model that loads but cannot predict or, with a
preprocessing record, cannot apply it to the base files' CSV except with a DataError, a peak
of traced memory above 2 x the bytes the model's parameters justify + 50 MB, or ``rwtool
info`` disagreeing with the load: exit 0 on a refused file, or refusing a loaded one).

    python -m benchmarks.robustness.fuzz_models --examples 5000 --seed 0 --limit-mb 1024 --max-bomb-mb 2048

prints a summary (files tried, loaded, refused, crashes, peak memory) and, with ``--json``,
writes it to a file. tests/persist/test_fuzz.py runs a short campaign of the same code.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import resource
import signal
import sys
import tempfile
import time
import tracemalloc
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: the target of issue 16: peak extra memory below 2 x justified bytes + this
SLACK_BYTES = 50 << 20

# ============================================================================ base files


def make_bases(directory) -> list[str]:
    """Fit one small model of each kind rwtool saves and save it under ``directory``."""
    import rwtool.data as D
    import rwtool.persist as P
    from rwtool.estimators import _bkernn as bkernn
    from rwtool.estimators import (GreedyMKClassifier, GreedyMKRegressor, RFSGDClassifier,
                                   RKSClassifier, RKSRegressor, RWClassifier, RWRegressor)
    d = Path(directory)
    rng = np.random.default_rng(7)
    X = rng.standard_normal((60, 3))
    y2 = np.where(X[:, 0] + X[:, 1] ** 2 > 0.5, "yes", "no")
    y3 = np.digitize(X[:, 0], [-0.5, 0.5])
    yr = np.sin(X[:, 0]) + X[:, 2]
    models = [
        ("rw_stumps", RWClassifier(instantiation="rwstumps", n_features=7, random_state=0), y3),
        ("rw_exprelu", RWRegressor(instantiation="rwexprelu", n_features=6, random_state=0),
         np.c_[yr, -yr]),
        ("rw_lasso", RWClassifier(instantiation="rwsign", n_features=12, solver="lasso",
                                  reg=1e-2, random_state=0), y2),
        ("rw_mc", RWClassifier(instantiation="mc:cauchy:gaussian:relu:400", n_features=5,
                               gamma=5.0, random_state=0), y2),
        ("rw_mc_stumps", RWRegressor(instantiation="mc:stumps:indicator-gaussian:stump:400",
                                     n_features=5, gamma=10.0, random_state=0), yr),
        ("rks_fourier", RKSClassifier(base="fourier", n_features=5, random_state=0), y2),
        ("rks_relu", RKSRegressor(base="relu", n_features=5, random_state=0), yr),
        ("rfsgd", RFSGDClassifier(n_features=6, random_state=0), y3),
        ("gmk_taylor", GreedyMKClassifier(n_features=4, random_state=0), y2),
        ("gmk_rff", GreedyMKRegressor(n_features=4, selector="lkrf", random_state=0), yr),
        ("bkernn", bkernn.BKerNNClassifier(n_particles=3, max_iter=5, random_state=0), y3),
    ]
    out = []
    for name, est, y in models:
        est.fit(X, y)
        out.append(P.save(est, d / f"{name}.rwm"))
    pruned = RWClassifier(instantiation="rwrelu", n_features=20, random_state=0).fit(X, y2)
    out.append(P.save(pruned.prune(eps=0.05, accept="error", X=X, y=y2), d / "pruned.rwm"))
    csv = d / "data.csv"
    csv.write_text("u,k,label\n" + "\n".join(
        f"{a:.4f},{'abc'[i % 3]},{'pn'[int(a > 0)]}" for i, a in enumerate(X[:, 0])) + "\n")
    ds = D.read_csv(csv, target="label")
    est = RKSClassifier(base="sign", n_features=5, random_state=0).fit(ds.X, ds.y)
    out.append(P.save(est, d / "with_csv.rwm", preprocessing=ds, metrics={"train_error": 0.1}))
    return out


def make_large(directory, mb: int = 48) -> list[str]:
    """Legitimate models whose largest array is about ``mb`` MB (RKS Fourier centres, BKerNN
    training projections), to measure the peak of a real load against its justified bytes."""
    import rwtool.persist as P
    from rwtool.estimators import _bkernn as bkernn
    from rwtool.estimators import RKSRegressor
    d = Path(directory)
    rng = np.random.default_rng(1)
    n_in = 1500
    T = max(1, (mb << 20) // (8 * n_in))
    X = rng.standard_normal((40, n_in))
    rks = RKSRegressor(base="fourier", n_features=T, random_state=0).fit(X, X[:, 0])
    n = max(10, (mb << 20) // (8 * 50))
    Xb = rng.standard_normal((n, 4))
    bk = bkernn.BKerNNRegressor(n_particles=50, max_iter=1, random_state=0).fit(Xb, Xb[:, 0])
    return [P.save(rks, d / "large_rks.rwm"), P.save(bk, d / "large_bkernn.rwm")]


# ============================================================================ zip building

def members(raw: bytes) -> dict:
    with zipfile.ZipFile(io.BytesIO(raw)) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist()}


class Zeros:
    """An .npy member of ``shape`` zeros, produced in chunks (never held whole). With
    ``mark_every`` a byte of 1 every so many bytes: deflate then compresses ~900:1 instead of
    ~1030:1 (the campaign's 1.2 MB file declaring 1 GB)."""

    def __init__(self, dtype, shape, mark_every=None):
        self.dtype, self.shape, self.mark_every = np.dtype(dtype), tuple(shape), mark_every
        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(
            buf, {"descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False,
                  "shape": self.shape})
        self.header = buf.getvalue()
        self.nbytes = int(np.prod(self.shape, dtype=object)) * self.dtype.itemsize

    def chunks(self, size=1 << 22):
        yield self.header
        zero = bytearray(min(size, self.nbytes))
        if self.mark_every:
            zero[::self.mark_every] = b"\x01" * len(range(0, len(zero), self.mark_every))
        zero = bytes(zero)
        left = self.nbytes
        while left:
            n = min(left, len(zero))
            yield zero[:n]
            left -= n

    def sha256(self) -> str:
        h = hashlib.sha256()
        for c in self.chunks():
            h.update(c)
        return h.hexdigest()


def write_zip(path, parts: dict, deflate=()) -> str:
    """Members in order; bytes or :class:`Zeros`; names in ``deflate`` are compressed."""
    with zipfile.ZipFile(path, "w", allowZip64=True) as zf:
        for name, data in parts.items():
            info = zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED if name in deflate else zipfile.ZIP_STORED
            with zf.open(info, "w", force_zip64=True) as fh:
                for chunk in (data.chunks() if isinstance(data, Zeros) else [data]):
                    fh.write(chunk)
    return str(path)


def rebuild(path, parts: dict, doc: dict, deflate=()) -> str:
    """Write ``parts`` with ``doc`` as model.json and every checksum recomputed."""
    parts = dict(parts)
    for key, meta in (doc.get("arrays") or {}).items() if isinstance(doc, dict) else ():
        data = parts.get(f"arrays/{key}.npy")
        if isinstance(meta, dict) and data is not None:
            meta["sha256"] = (data.sha256() if isinstance(data, Zeros)
                              else hashlib.sha256(data).hexdigest())
    parts["model.json"] = json.dumps(doc).encode()
    parts["model.json.sha256"] = hashlib.sha256(parts["model.json"]).hexdigest().encode()
    return write_zip(path, parts, deflate)


# ============================================================================ mutations

_CD_FIELDS = {"version_made": (4, 2), "version_needed": (6, 2), "flags": (8, 2),
              "method": (10, 2), "crc": (16, 4), "compressed": (20, 4), "size": (24, 4),
              "name_len": (28, 2), "extra_len": (30, 2), "offset": (42, 4)}
_LOCAL_FIELDS = {"version_needed": (4, 2), "flags": (6, 2), "method": (8, 2), "crc": (14, 4),
                 "compressed": (18, 4), "size": (22, 4), "name_len": (26, 2),
                 "extra_len": (28, 2)}
_END_FIELDS = {"entries_disk": (8, 2), "entries": (10, 2), "cd_size": (12, 4),
               "cd_offset": (16, 4), "comment_len": (20, 2)}
_SCALARS = ["n_features_in_", "n_features", "n_particles", "gauss_order", "bias_", "variant",
            "fitted_", "gamma_", "standardize", "classes_"]
_EDGE = ["auto", 1e21, 10**21, -1, 0, 1, 2**31, 2**40, True, None, [], {}, "nan", 0.5, 3]
_SPECIAL = ["/dev/zero", "/dev/urandom", "fifo", "directory", "symlink", "empty"]
#: strings no writer can take: a lone surrogate (alone and inside text), and a long one
_BAD_TEXT = ["\ud800", "a\udfffb", "x" * 70_000]


def strategy(n_bases: int, max_bomb_mb: int):
    """The hypothesis strategy of one mutation: a tuple (kind, base index, details)."""
    from hypothesis import strategies as st
    base = st.integers(0, n_bases - 1)
    big = st.integers(0, 2**32 - 1)
    edge = st.sampled_from([0, 1, 0xFF, 0xFFFF, 0xFFFFFFFF, 20, 45, 63, 99, 12, 14, 93])
    json_leaf = (st.none() | st.booleans() | st.integers(-10**22, 10**22)
                 | st.floats(allow_nan=False) | st.sampled_from(
                     ["", "a0", "array", "object", "dict", "auto", "__class__", "os.system",
                      "rwtool.features._rkhs.RWStumps", "W_", "coef_"] + _BAD_TEXT))
    json_value = st.recursive(json_leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(
        st.sampled_from(["$", "id", "items", "class", "params", "fitted", "v", "x_"]),
        c, max_size=3), max_leaves=6)
    dims = st.lists(st.one_of(st.integers(0, 9), st.integers(0, 2**20)), max_size=3)
    return st.one_of(
        st.tuples(st.just("truncate"), base, big),
        st.tuples(st.just("flip"), base,
                  st.lists(st.tuples(big, st.integers(0, 255)), min_size=1, max_size=6)),
        st.tuples(st.just("zipfield"), base,
                  st.tuples(st.sampled_from(["cd", "local", "end"]), st.integers(0, 99),
                            st.sampled_from(sorted(set(_CD_FIELDS) | set(_END_FIELDS))),
                            st.one_of(edge, big))),
        st.tuples(st.just("array"), base,
                  st.tuples(st.integers(0, 99),
                            st.sampled_from(["<f8", "<f4", "<i8", "|u1", "|b1", "<U3", "<c16",
                                             ">f8", "|S2"]),
                            dims, st.sampled_from([0.0, 1.0, -1.0, np.nan, np.inf, 7.0, 1e300]),
                            st.booleans(), st.booleans())),
        st.tuples(st.just("doc"), base,
                  st.one_of(st.tuples(st.just("path"), st.integers(0, 10**6), json_value),
                            st.tuples(st.just("scalar"), st.sampled_from(_SCALARS),
                                      st.sampled_from(_EDGE)))),
        st.tuples(st.just("bomb"), base,
                  st.tuples(st.sampled_from(["array", "doc", "consistent"]), st.integers(0, 99),
                            st.integers(1, max(1, max_bomb_mb)),
                            st.sampled_from([None, 16384]))),
        st.tuples(st.just("text"), base,
                  st.tuples(st.integers(0, 10**6), st.sampled_from(_BAD_TEXT), st.booleans())),
        st.tuples(st.just("special"), st.just(0), st.sampled_from(_SPECIAL)),
    )


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


def _at(node, path):
    for k in path:
        node = node[k]
    return node


def _set_scalar(node, name, value) -> bool:
    """Set every occurrence of the field ``name`` (params or fitted items) in the tree."""
    hit = False
    if isinstance(node, dict):
        items = node.get("items") if node.get("$") == "dict" else None
        if isinstance(items, dict) and name in items:
            items[name] = value
            hit = True
        for v in node.values():
            hit = _set_scalar(v, name, value) or hit
    elif isinstance(node, list):
        for v in node:
            hit = _set_scalar(v, name, value) or hit
    return hit


def _array_keys_by_size(doc):
    return sorted(doc["arrays"], key=lambda k: int(k[1:]))


def realise(mutation, bases: list, workdir) -> str:
    """Write the mutated file (or make the special file) and return its path."""
    kind, which, detail = mutation
    work = Path(workdir)
    out = work / "mutant.rwm"
    if out.is_dir() and not out.is_symlink():
        out.rmdir()
    elif out.exists() or out.is_symlink():
        out.unlink()
    if kind == "special":
        if detail.startswith("/dev/"):
            return detail
        if detail == "fifo":
            os.mkfifo(out)
        elif detail == "directory":
            out.mkdir()
        elif detail == "symlink":
            out.symlink_to("/dev/zero")
        else:
            out.write_bytes(b"")
        return str(out)
    raw = Path(bases[which]).read_bytes()
    if kind == "truncate":
        out.write_bytes(raw[: detail % (len(raw) + 1)])
        return str(out)
    if kind == "flip":
        b = bytearray(raw)
        for pos, val in detail:
            b[pos % len(b)] = val
        out.write_bytes(bytes(b))
        return str(out)
    if kind == "zipfield":
        where, index, name, value = detail
        b = bytearray(raw)
        sig, fields = {"cd": (b"PK\x01\x02", _CD_FIELDS), "local": (b"PK\x03\x04", _LOCAL_FIELDS),
                       "end": (b"PK\x05\x06", _END_FIELDS)}[where]
        spots = [i for i in range(len(b) - 3) if b[i:i + 4] == sig]
        field = fields.get(name) or next(iter(fields.values()))
        if spots:
            at = spots[index % len(spots)] + field[0]
            b[at:at + field[1]] = (value % (1 << (8 * field[1]))).to_bytes(field[1], "little")
        out.write_bytes(bytes(b))
        return str(out)
    parts = members(raw)
    doc = json.loads(parts["model.json"])
    keys = _array_keys_by_size(doc)
    if kind == "array":
        slot, dtype, shape, fill, keep_meta, deflate = detail
        key = keys[slot % len(keys)]
        shape = tuple(shape)
        if int(np.prod(shape, dtype=object)) * np.dtype(dtype).itemsize > 64 << 20:
            shape = tuple(min(s, 9) for s in shape)
        with np.errstate(all="ignore"):
            try:
                arr = np.full(shape, fill).astype(dtype)
            except (ValueError, OverflowError, TypeError):
                arr = np.zeros(shape, dtype=dtype)
        buf = io.BytesIO()
        np.save(buf, arr, allow_pickle=False)
        name = f"arrays/{key}.npy"
        parts[name] = buf.getvalue()
        if not keep_meta:
            doc["arrays"][key].update(dtype=arr.dtype.str, shape=list(arr.shape))
        return rebuild(out, parts, doc, deflate=(name,) if deflate else ())
    if kind == "doc":
        if detail[0] == "path":
            _, index, value = detail
            paths = [p for p in _paths(doc) if p]
            target = paths[index % len(paths)]
            node = doc
            for k in target[:-1]:
                node = node[k]
            node[target[-1]] = value
        else:
            _set_scalar(doc["estimator"], detail[1], detail[2])
        return rebuild(out, parts, doc)
    if kind == "text":
        index, text, as_key = detail
        spots = [p for p in _paths(doc) if p and isinstance(_at(doc, p), str)]
        target = spots[index % len(spots)]
        parent = _at(doc, target[:-1])
        if as_key and isinstance(parent, dict):       # the string's key instead of its value
            parent[text] = parent.pop(target[-1])
        else:
            parent[target[-1]] = text
        return rebuild(out, parts, doc)
    if kind == "bomb":
        what, slot, mb, mark = detail
        if what == "doc":
            # the document declared as megabytes of spaces after the JSON: a deflate bomb
            body = json.dumps(doc).encode()
            pad = Zeros("|u1", (mb << 20,))
            parts["model.json"] = body + b" " * 16
            with zipfile.ZipFile(out, "w", allowZip64=True) as zf:
                info = zipfile.ZipInfo("model.json", (1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                h = hashlib.sha256(body)
                with zf.open(info, "w", force_zip64=True) as fh:
                    fh.write(body)
                    chunks = pad.chunks()
                    next(chunks)                      # the .npy header
                    for c in chunks:
                        c = c.replace(b"\0", b" ")
                        h.update(c)
                        fh.write(c)
                zf.writestr("model.json.sha256", h.hexdigest())
                for n, data in parts.items():
                    if n.startswith("arrays/"):
                        zf.writestr(n, data)
            return str(out)
        key = keys[slot % len(keys)]
        meta = doc["arrays"][key]
        n = (mb << 20) // 8
        if what == "consistent" and len(meta["shape"]) == 2 and meta["shape"][1]:
            shape = (max(1, n // meta["shape"][1]), meta["shape"][1])
        else:
            shape = (n,) if len(meta["shape"]) != 2 else (n, 1)
        z = Zeros("<f8", shape, mark)
        name = f"arrays/{key}.npy"
        parts[name] = z
        meta.update(dtype="<f8", shape=list(shape))
        if what == "consistent":
            # also declare the model's own sizes to match (n_features / n_features_in_)
            _set_scalar(doc["estimator"], "n_features", shape[0])
        return rebuild(out, parts, doc, deflate=(name,))
    raise ValueError(kind)


# ============================================================================ loading in a cap

class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def vsize() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def cap_memory(limit_mb: int) -> int:
    """RLIMIT_AS = this process's size now + ``limit_mb``; returns the limit."""
    limit = vsize() + (limit_mb << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    return limit


@dataclass
class Outcome:
    outcome: str                 # loaded / refused / crash
    detail: str = ""
    peak: int = 0                # traced bytes at the peak of the load
    justified: int = 0           # what the model's parameters justify (0 when refused)
    seconds: float = 0.0


def check_one(path, timeout=20.0, csv=None) -> Outcome:
    """Load ``path`` once, measuring the traced peak; classify the result. A loaded model with
    a preprocessing record is applied to ``csv``; ``rwtool info`` must agree with the load."""
    import rwtool.persist as P
    from rwtool.data import DataError
    from rwtool.exceptions import InsufficientMemoryError
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    try:
        mf = P.read_model(path)
        est = mf.estimator
        n_in = est.n_features_in_
        pred = est.predict(np.random.default_rng(0).standard_normal((4, n_in)))
        if len(pred) != 4:
            res = Outcome("crash", "the loaded model predicts the wrong number of rows")
        else:
            res = Outcome("loaded", justified=int(mf.info.get("load_bytes", 0)))
            if csv is not None and mf.preprocessing is not None:
                try:
                    mf.apply_csv(csv)
                except DataError:
                    pass              # a located refusal of the file (say, a category unseen)
    except P.ModelFileError as exc:
        res = Outcome("refused", str(exc).split(": ", 1)[-1][:160])
    except InsufficientMemoryError as exc:
        res = Outcome("refused", f"memory: {str(exc)[:140]}")
    except _Timeout:
        res = Outcome("crash", f"timeout after {timeout} s")
    except BaseException as exc:  # noqa: BLE001 -- every other outcome is a finding
        if isinstance(exc, KeyboardInterrupt):
            raise
        res = Outcome("crash", f"{type(exc).__name__}: {str(exc)[:160]}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    res.seconds = time.perf_counter() - t0
    res.peak = tracemalloc.get_traced_memory()[1] - base
    if res.outcome != "crash" and res.peak > 2 * res.justified + SLACK_BYTES:
        res.detail = f"peak {res.peak >> 20} MB above 2 x {res.justified >> 20} MB + 50 MB"
        res.outcome = "crash"
    if res.outcome != "crash" and not res.detail.startswith("memory:"):
        code = _info_exit_code(path, timeout)
        if (code == 0) != (res.outcome == "loaded"):
            res.detail = f"rwtool info exits {code} on a file the load {res.outcome}"
            res.outcome = "crash"
    return res


def _info_exit_code(path, timeout) -> int | str:
    """The exit status of ``rwtool info PATH`` run in this process (its output dropped)."""
    import contextlib
    import io
    from rwtool.cli import main
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return main(["info", str(path)])
    except _Timeout:
        return "a timeout"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@dataclass
class Summary:
    tried: int = 0
    outcomes: Counter = field(default_factory=Counter)
    by_kind: dict = field(default_factory=dict)
    crashes: list = field(default_factory=list)
    peak: int = 0
    peak_refused: int = 0
    peak_ratio: float = 0.0      # largest peak / (2 x justified + 50 MB) among loaded files
    reasons: Counter = field(default_factory=Counter)
    limit_mb: int = 0
    seconds: float = 0.0
    slowest: list = field(default_factory=list)
    rss_growth: int = 0          # growth of the process's peak RSS over the whole campaign

    def add(self, mutation, res: Outcome, seconds: float = 0.0) -> None:
        self.slowest = sorted(self.slowest + [(round(seconds, 2), res.outcome,
                                               repr(mutation)[:120])], reverse=True)[:5]
        self.tried += 1
        self.outcomes[res.outcome] += 1
        kind = mutation[0]
        self.by_kind.setdefault(kind, Counter())[res.outcome] += 1
        self.peak = max(self.peak, res.peak)
        if res.outcome == "refused":
            self.peak_refused = max(self.peak_refused, res.peak)
            self.reasons[_reason(res.detail)] += 1
        if res.outcome == "loaded":
            self.peak_ratio = max(self.peak_ratio, res.peak / (2 * res.justified + SLACK_BYTES))
        if res.outcome == "crash":
            self.crashes.append({"mutation": repr(mutation)[:300], "detail": res.detail})

    def as_dict(self) -> dict:
        return {"tried": self.tried, "loaded": self.outcomes["loaded"],
                "refused": self.outcomes["refused"], "crashes": self.outcomes["crash"],
                "peak_traced_mb": round(self.peak / 2**20, 1),
                "peak_refused_mb": round(self.peak_refused / 2**20, 1),
                "worst_peak_over_target": round(self.peak_ratio, 3),
                "rlimit_as_extra_mb": self.limit_mb,
                "peak_rss_growth_mb": round(self.rss_growth / 2**20, 1), "seconds": round(self.seconds, 1),
                "by_kind": {k: dict(v) for k, v in sorted(self.by_kind.items())},
                "top_refusals": self.reasons.most_common(12),
                "slowest": self.slowest, "crash_examples": self.crashes[:20]}


def _reason(detail: str) -> str:
    import re
    return re.sub(r"[0-9]+", "N", re.sub(r"'[^']*'|\([^)]*\)", "...", detail))[:70]


def campaign(examples: int, seed: int, limit_mb: int, max_bomb_mb: int, workdir=None,
             progress=None) -> Summary:
    """Run ``examples`` hypothesis-drawn mutations in this process under an RLIMIT_AS cap;
    ``progress(summary)`` is called every 250 files."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
    import rwtool.persist as P
    own = tempfile.TemporaryDirectory() if workdir is None else None
    work = Path(workdir or own.name)
    bases = make_bases(work)
    for b in bases:                      # warm-up: numba caches, imports, registry scan
        P.read_model(b).estimator.predict(np.zeros((2, P.load(b).n_features_in_)))
    summary = Summary(limit_mb=limit_mb)
    tracemalloc.start()
    cap_memory(limit_mb)
    t0 = time.perf_counter()

    @hseed(seed)
    @settings(max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy(len(bases), max_bomb_mb))
    def run(mutation):
        t = time.perf_counter()
        try:
            path = realise(mutation, bases, work)
        except MemoryError:
            raise
        except Exception:                # a mutation that cannot be written is not a case
            return
        summary.add(mutation, check_one(path, csv=work / "data.csv"),
                    time.perf_counter() - t)
        if summary.tried % 250 == 0:
            print(f"{summary.tried} files: {dict(summary.outcomes)}", file=sys.stderr,
                  flush=True)
            if progress is not None:
                summary.seconds = time.perf_counter() - t0
                progress(summary)

    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    run()
    summary.seconds = time.perf_counter() - t0
    summary.rss_growth = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) * 1024
    tracemalloc.stop()
    if own is not None:
        own.cleanup()
    return summary


def probe(paths, warm, limit_mb: int, timeout: float = 20.0) -> list[dict]:
    """Load each of ``paths`` after warming up on ``warm`` and capping this process (run it in
    a child: ``python -m tests.helpers.fuzz_models --probe FILE... --warm FILE``)."""
    import rwtool.persist as P
    P.read_model(warm).estimator.predict(np.zeros((2, P.load(warm).n_features_in_)))
    tracemalloc.start()
    cap_memory(limit_mb)
    out = []
    for path in paths:
        r = check_one(path, timeout)
        out.append({"path": path, "outcome": r.outcome, "detail": r.detail, "peak": r.peak,
                    "justified": r.justified})
    return out


def run_probe(paths, warm, limit_mb=512, timeout=20.0) -> list[dict]:
    """:func:`probe` in a child process (for tests: a blowup or a hang kills only the child)."""
    import subprocess
    root = str(Path(__file__).absolute().parents[2])
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OPENBLAS_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "tests.helpers.fuzz_models", "--probe", *map(str, paths),
           "--warm", str(warm), "--limit-mb", str(limit_mb), "--timeout", str(timeout)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                          timeout=120 + timeout * len(paths))
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"probe died ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit-mb", type=int, default=1024,
                    help="RLIMIT_AS above the warmed-up process size")
    ap.add_argument("--max-bomb-mb", type=int, default=2048,
                    help="largest size a zip bomb declares and really decompresses to")
    ap.add_argument("--json", help="write the summary here")
    ap.add_argument("--probe", nargs="+", help="only load these files (JSON lines out)")
    ap.add_argument("--warm", help="with --probe: a valid model file to warm up on")
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--large-mb", type=int,
                    help="instead: peak of loading legitimate models of about this size")
    args = ap.parse_args(argv)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if args.large_mb:
        with tempfile.TemporaryDirectory() as work:
            paths = make_large(work, args.large_mb)
            res = run_probe(paths, paths[0], args.limit_mb, args.timeout)
            for r in res:
                r["file_mb"] = round(os.path.getsize(r["path"]) / 2**20, 1)
                r["justified_mb"] = round(r.pop("justified") / 2**20, 1)
                r["peak_mb"] = round(r.pop("peak") / 2**20, 1)
                r["path"] = os.path.basename(r["path"])
        print(json.dumps(res, indent=1))
        if args.json:
            Path(args.json).write_text(json.dumps(res, indent=1) + "\n")
        return 0 if all(r["outcome"] == "loaded" for r in res) else 1
    if args.probe:
        res = probe(args.probe, args.warm, args.limit_mb, args.timeout)
        print(json.dumps(res))
        return 0 if all(r["outcome"] != "crash" for r in res) else 1
    def dump(summary):
        if args.json:
            Path(args.json).write_text(json.dumps(summary.as_dict(), indent=1) + "\n")
    s = campaign(args.examples, args.seed, args.limit_mb, args.max_bomb_mb,
                 progress=dump).as_dict()
    text = json.dumps(s, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    return 0 if s["crashes"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
