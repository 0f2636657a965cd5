"""The fast read paths give the cells and encodings of the plain ones (issues 26 and 27).

- Records of more than ``_WIDE`` fields are split by rwtool's own splitter, not pyarrow.csv;
  with ``_WIDE`` set to 2 or 3 every file below is split so, and its preview, ``read_csv`` and
  streamed encoding must equal pyarrow's reading in the same process (bit for bit: same
  process, same arithmetic); the splitter alone is compared with Python's csv module.
- A chunk is typed by its sample (whole cast, dictionary, or cell by cell); each cell must get
  what it gets typed alone.
- Against pandas, an independent parser, where both mean the same: numeric columns as float64,
  text columns one-hot over their sorted categories, on the bundled samples and a text file.
- The 500,000-column file of issue 27 (5.9 MB) under an address-space cap of the warm process
  plus 300 MB: it aborted the process in pyarrow's tokeniser (std::bad_alloc, exit 134), then
  needed 0.9 GB (read_csv) and 3.1 GB (streaming) above that for a Python object per column;
  both readers must now load it within the cap, with numpy.loadtxt's values, and a cap it
  cannot fit in must give a located FileTooLargeError.
"""

import os
import resource
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

import rwtool.data as D
from rwtool.data import _read

QUOTED = ('a,b,c,d,e,f,g\n1,"x,y",3,"q""r",5,6,7\n8,9,"multi\nline",11,,13,14\n\n'
          '1,2,3,4,5,6,7,\n"",b,"c""",d, e ,f,"g\r\nh"\r\n')


def _cases(rng):
    yield "quoted", QUOTED, {"categorical": ["b", "c", "d", "e", "f", "g"],
                                    "missing": "drop-rows"}
    X = rng.integers(0, 5, (30, 9)).astype(str).astype(object)
    X[rng.integers(0, 30, 6), rng.integers(0, 8, 6)] = ""
    X[3, 2], X[7, 5] = '"a,b"', '"1 000"'
    text = ",".join(f"c{j}" for j in range(9)) + "\n" + "".join(",".join(r) + "\n" for r in X)
    yield "ints with holes", text, {"missing": "impute-most-frequent", "max_categories": 100}


def _snapshot(p, target, options):
    pv = D.preview_csv(p)
    out = {"head": pv.head, "preview": pv.to_dict()}
    try:
        ds = D.read_csv(p, target, **options)
        out["read"] = (ds.X, ds.y, ds.feature_names, ds.rows.tolist(), ds.notes)
    except D.DataError as e:
        out["read"] = (type(e).__name__, str(e))
    try:
        scan = D.scan_csv(p, target, block_bytes=64, **options)
        chunks = list(D.iter_csv(p, scan.preprocessing, dialect=scan.dialect, block_bytes=64))
        out["stream"] = (scan.preprocessing.to_dict(), np.vstack([c.X for c in chunks]))
    except D.DataError as e:
        out["stream"] = (type(e).__name__, str(e))
    return out


def _equal(a, b):
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return a == b


@pytest.mark.parametrize("wide", [2, 3])
def test_wide_records_read_as_pyarrow_reads_them(tmp_path, monkeypatch, wide):
    rng = np.random.default_rng(7)
    for name, text, options in _cases(rng):
        p = tmp_path / f"{name}.csv"
        p.write_bytes(text.encode())
        target = text.split(",", 1)[0]
        plain = _snapshot(p, target, options)
        with monkeypatch.context() as m:
            m.setattr(_read, "_WIDE", wide)
            split = _snapshot(p, target, options)
        for key in plain:
            assert _equal(plain[key], split[key]), (name, key)


def test_split_columns_as_the_csv_module():
    # the wide path's splitter against Python's csv module (an independent parser, with the
    # same rules here: a quote opens a field only at its start, "" inside quotes is one
    # quote, text after a closing quote joins the field), on random records of quoted,
    # half-quoted and plain fields holding delimiters, quotes and line breaks
    import csv
    import io
    from rwtool.data._scan import scan_records, split_columns
    rng = np.random.default_rng(11)
    atoms = ["a", "b", " ", ",", '"', '""', "\n", "\r\n", "\u00e9", "x y"]
    compared = 0
    for _ in range(400):
        ncols, n = int(rng.integers(1, 7)), int(rng.integers(1, 5))
        rows = []
        for _ in range(n):
            fields = []
            for _ in range(ncols):
                kind = rng.integers(0, 4)
                body = "".join(rng.choice(atoms, rng.integers(0, 4)))
                if kind == 0:
                    fields.append('"' + body.replace('"', '""') + '"')
                elif kind == 1:
                    fields.append('"' + body.replace('"', '""') + '"'
                                  + str(rng.choice(["", "z", 'z"'])))
                else:
                    fields.append("".join(c for c in body if c not in ',"\r\n')
                                  + ("" if kind == 2 else 'a"b'))
            rows.append(",".join(fields))
        text = "\n".join(rows) + "\n"
        want_rows = [r for r in csv.reader(io.StringIO(text, newline=""))]
        if len(want_rows) != n or any(len(r) != ncols for r in want_rows) \
                or any(not "".join(r).strip() for r in want_rows):
            continue        # a record the reader would skip as blank
        buf = np.frombuffer(text.encode(), np.uint8)
        sc = scan_records(buf, ",", '"', True)
        assert sc["open_quote"] < 0 and len(sc["starts"]) == n, text
        want = np.sort(rng.choice(ncols, int(rng.integers(1, ncols + 1)), replace=False))
        offsets, data = split_columns(buf, sc["starts"], sc["ends"], ",", '"', ncols, want)
        got = [bytes(data[offsets[i]:offsets[i + 1]]).decode() for i in range(len(offsets) - 1)]
        assert got == [want_rows[r][j] for j in want for r in range(n)], text
        compared += 1
    assert compared > 150
    # a record with a field too many or too few is not split
    buf = np.frombuffer(b"1,2,3\n4,5\n", np.uint8)
    sc = scan_records(buf, ",", '"', True)
    assert split_columns(buf, sc["starts"], sc["ends"], ",", '"', 3, np.arange(3)) is None
    assert split_columns(buf, sc["starts"][:1], sc["ends"][:1], ",", '"', 2,
                         np.arange(2)) is None


@pytest.mark.parametrize("header,plain", [
    ("c0,c1,x_2,y.3,name-4", True), ("\ufeffc0,c1,c2,c3,c4", True),
    ('c0,"c,1",c2,c3,c4', False), ("c0, c1 ,c2,c3,c4", False), ("c0,,c2,c3,c4", False),
    ("c0,c1,c2,c3,", False), ("c0,c1,c0,c3,c4", False), ("c0,\u00e91,c2,c3,c4", False),
    ("c0,c1\u00a0,c2,c3,c4", False), ("c0,c1,c2,c3", False)])
def test_wide_header_names_as_the_general_split(tmp_path, monkeypatch, header, plain):
    # a wide header of plain names is made into Names straight from its bytes (no Python
    # string per name); any other goes through the csv module's split: both must name the
    # columns (or refuse the header) as the narrow path's split does, in the same process
    p = tmp_path / "h.csv"
    p.write_bytes((header + "\n1,2,3,4,5\n6,7,8,9,10\n").encode())

    def names():
        try:
            ds = D.read_csv(p, -1, task="regression")
            return list(ds.feature_names) + [ds.target]
        except D.DataError as e:
            return type(e).__name__

    want = names()
    monkeypatch.setattr(_read, "_WIDE", 3)
    assert names() == want
    rec = np.frombuffer(header.encode(), np.uint8)
    made = _read._plain_header(rec, D.Dialect(), 5)
    assert (made is not None) == plain
    assert made is None or list(made) == want


def test_each_cell_typed_as_alone():
    # a chunk large enough for the sampled paths: numbers, categories, missing, odd texts
    rng = np.random.default_rng(3)
    pool = ["1.5", " 2", "-3e2", "inf", "nan", "NA", "", "red", " red", "blue ", "#N/A",
            "#DIV/0!", "1_000", "0x10", "١٢", "+4", ".5", "5."]
    for cells in (list(rng.choice(pool, 5000)),                      # mixed, low cardinality
                  [repr(x) for x in rng.standard_normal(5000)],      # numbers only
                  [repr(x) for x in rng.standard_normal(5000)][:4990] + pool[7:17]):
        vocab = []

        def intern(texts):
            out = []
            for t in texts:
                if t not in vocab:
                    vocab.append(t)
                out.append(vocab.index(t))
            return np.array(out, np.int32)

        vals, codes, seen = _read.type_cells(pa.array(cells), ".", frozenset(D.NA_VALUES),
                                            True, intern)
        for i in list(range(0, len(cells), 97)) + list(range(len(cells) - 12, len(cells))):
            one = []

            def intern_one(texts):
                one.extend(texts)
                return np.arange(len(texts), dtype=np.int32)

            v1, c1, _ = _read.type_cells([cells[i]], ".", frozenset(D.NA_VALUES), True,
                                         intern_one)
            if c1[0] >= 0:
                assert codes[i] >= 0 and vocab[codes[i]] == one[c1[0]], cells[i]
            else:
                assert codes[i] == c1[0], cells[i]
                assert np.array_equal(vals[i], v1[0], equal_nan=True), cells[i]
        if seen.error_rows.size:
            assert all(cells[i].strip().startswith("#") for i in seen.error_rows)


def _pandas_encoding(p, target):
    """X as pandas reads the file: numeric columns as they are, text columns one-hot over
    their sorted categories (stripped of spaces, as rwtool reads text)."""
    pd = pytest.importorskip("pandas")
    df = pd.read_csv(p, skipinitialspace=True, keep_default_na=False)
    blocks, names = [], []
    for c in df.columns:
        if c == target:
            continue
        if df[c].dtype.kind in "if":
            blocks.append(df[c].to_numpy(np.float64)[:, None])
            names.append(c)
        else:
            cats = sorted(df[c].astype(str).str.strip().unique())
            col = df[c].astype(str).str.strip().to_numpy()
            blocks.append((col[:, None] == np.array(cats)[None, :]).astype(np.float64))
            names += [f"{c}={k}" for k in cats]
    return np.hstack(blocks), names, df[target]


def test_agrees_with_pandas_on_samples_and_a_text_file(tmp_path):
    rng = np.random.default_rng(5)
    n = 3000
    text = "age,work,hours,city,y\n" + "".join(
        f"{a}, {w},{h:.2f},{c} ,{t}\n" for a, w, h, c, t in zip(
            rng.integers(17, 90, n), rng.choice(["Private", "State-gov", "Self-emp"], n),
            rng.uniform(1, 99, n), rng.choice(["Zürich", "Genève", "Bern"], n),
            rng.choice(["<=50K", ">50K"], n)))
    p = tmp_path / "text.csv"
    p.write_text(text, encoding="utf-8")
    files = [(str(p), "y", {})] + [(s["path"], s["target"], s["options"])
                                   for s in D.list_samples() if not s["options"]]
    for path, target, options in files:
        ds = D.read_csv(path, target, **options)
        X, names, y = _pandas_encoding(path, target)
        assert ds.feature_names == names, path
        assert ds.X.dtype == np.float64
        # both parse the same decimal text with correctly rounded conversions
        np.testing.assert_array_equal(ds.X, X, err_msg=path)
        if y.dtype.kind in "if":            # labels or values: numbers, as pandas read them
            np.testing.assert_array_equal(ds.y, y.to_numpy(ds.y.dtype), err_msg=path)
        else:
            assert ds.y.tolist() == [str(v).strip() for v in y], path


def _limited(code, limit=4 << 30):
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    return subprocess.run([sys.executable, "-c", code], preexec_fn=cap, capture_output=True,
                          text=True, env=env, timeout=900)


@pytest.fixture(scope="module")
def wide_file(tmp_path_factory):
    """500,000 columns x 2 rows of digits (5.9 MB): the file of issue 27, and its values as
    numpy.loadtxt reads them (an independent parser)."""
    X = np.random.default_rng(0).integers(0, 10, (2, 500_000))
    p = tmp_path_factory.mktemp("wide") / "w.csv"
    with open(p, "w") as fh:
        fh.write(",".join(f"c{j}" for j in range(X.shape[1])) + "\n")
        np.savetxt(fh, X, delimiter=",", fmt="%d")
    np.save(str(p) + ".npy", np.loadtxt(p, delimiter=",", skiprows=1, ndmin=2))
    return p


# The child warms the readers up on a small file (thread pools, compiled kernels), then caps
# its own address space at what it maps by then plus BUDGET, and reads the wide file. A
# relative cap, since the mapped baseline (thread stacks and arenas) depends on the machine.
# Measured above the warm baseline on this file (2 cores): read_csv 938 MB with a Python
# object per column, 144 MB with arrays, 113 MB with nothing per column on the way (of it 64 MB
# the read buffer, mapped but untouched); scan_csv + iter_csv 3,135, 292 and 139-155 MB.
# Narrow reads came to use the C library's allocator on the calling thread, so a warm-up on a
# narrow file alone left pyarrow's pool and threads of the wide path to the read: 274 and
# 223-235 MB mapped; with the warm-up also past the wide threshold, 84 and 74 MB.
BUDGET = 300 << 20
WARM = """
import os, resource, sys, tempfile, numpy as np, rwtool.data as D
def status(key):
    return int(open("/proc/self/status").read().split(key + ":")[1].split()[0]) * 1024
q = os.path.join(tempfile.mkdtemp(), "t.csv")
open(q, "w").write("a,b,c\\n" + "1,2,3\\n" * 100)
D.read_csv(q, -1, task="regression")
s = D.scan_csv(q, -1, task="regression")
list(D.iter_csv(q, s.preprocessing, dialect=s.dialect))
# and on a small file past the wide-file threshold, whose reads take pyarrow's own pool and
# threads (narrow ones do not): their arenas are the machine's baseline, not the read's cost
q = os.path.join(tempfile.mkdtemp(), "w.csv")
open(q, "w").write(",".join(f"w{{j}}" for j in range(2000)) + "\\n" + (",".join(["1"] * 2000) + "\\n") * 2)
D.read_csv(q, -1, task="regression")
s = D.scan_csv(q, -1, task="regression")
list(D.iter_csv(q, s.preprocessing, dialect=s.dialect))
"""
CHILD = WARM + """size = int(open("/proc/self/status").read().split("VmSize:")[1].split()[0]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (size + {budget}, resource.RLIM_INFINITY))
p = {p!r}
try:
{body}
except D.DataError as e:
    print("refused:", e); sys.exit(3)
except MemoryError:
    print("bare MemoryError"); sys.exit(4)
want = np.load(p + ".npy")
assert np.array_equal(X, want[:, :-1]) and np.array_equal(y, want[:, -1]), "values"
print("loaded", X.shape)
"""
READ = """    ds = D.read_csv(p, -1, task="regression")
    X, y = ds.X, ds.y"""
STREAM = """    scan = D.scan_csv(p, -1, task="regression")
    chunks = list(D.iter_csv(p, scan.preprocessing, dialect=scan.dialect))
    X, y = np.vstack([c.X for c in chunks]), np.concatenate([c.y for c in chunks])"""
SERVED = STREAM.replace("scan.preprocessing, dialect=scan.dialect", "scan")


def _child(code):
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=900)


@pytest.mark.slow
@pytest.mark.parametrize("body", [READ, SERVED, STREAM],
                         ids=["read_csv", "scan_csv+iter_csv(scan)", "scan_csv+iter_csv(record)"])
def test_500000_columns_in_a_small_multiple_of_the_file(wide_file, body):
    r = _child(CHILD.format(budget=BUDGET, p=str(wide_file), body=body))
    # never an abort (exit 134), never a bare MemoryError: the right values within the budget
    assert r.returncode == 0, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    assert "loaded (2, 499999)" in r.stdout


@pytest.mark.slow
def test_a_limit_reached_is_a_located_error(wide_file):
    # a budget the read cannot fit in: a FileTooLargeError naming the file, not an abort
    r = _child(CHILD.format(budget=40 << 20, p=str(wide_file), body=READ))
    assert r.returncode == 3, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    assert "w.csv" in r.stdout and "memory" in r.stdout, r.stdout


# Peak resident set of a read above the warm process (VmHWM, reset after the warm-up through
# /proc/self/clear_refs, so the warm-up's own peak does not hide the read's). Measured on 2
# shared cores: with the names as Python strings and a distinct-number entry for every cell,
# read_csv 137-140 MB and scan_csv + iter_csv 172-185 MB (24x and 31x the file); with the
# names one array (rwtool.data._names) and distinct numbers counted only where asked, about
# 95 and 125-135 MB; with the wide header made into names from its bytes, the memory freed by
# a pass given back before the next, about 75-80 and 104-119 MB (14x and 20.5-21.3x in four
# children of one quiet run). The bounds, 20x and 25x the file (118 and 148 MB), sit above
# these with room for the 10-20 MB an allocator moves from one child or machine to the next,
# and below what the earlier readers took (24x and 31x).
# With the wide records split by rwtool's own splitter (no pyarrow.csv table, no index per
# cell), the summaries counted in place and no int64 array per column on the way: read_csv
# about 37-38 MB (6.5x), scan_csv about 52 MB (8.8x; pass two then encodes the blocks it kept,
# 50 MB), scan_csv + iter_csv reading the file again while the scan is held 73 MB (12.4x).
# With that read letting go of the scan's kept blocks first (it cannot use them): 65 MB (11.6x;
# 73.4 MB on the tree before, in the same run, load 12-14). The bounds keep the same room of
# 20-25 MB.
PEAK = WARM + """try:
    open("/proc/self/clear_refs", "w").write("5")
except OSError:
    print("no-reset"); sys.exit(0)
base = status("VmRSS")
if status("VmHWM") > base + (8 << 20):   # a /proc that took the write but kept the old peak
    print("no-reset"); sys.exit(0)
p = {p!r}
{body}
assert X.shape == (2, 499_999), X.shape
print(status("VmHWM") - base)
"""


@pytest.mark.slow
@pytest.mark.parametrize("body,times", [(READ, 10), (SERVED, 13), (STREAM, 15)],
                         ids=["read_csv", "scan_csv+iter_csv(scan)", "scan_csv+iter_csv(record)"])
def test_peak_memory_is_a_small_multiple_of_the_file(wide_file, body, times):
    if not os.path.exists("/proc/self/clear_refs"):
        pytest.skip("needs Linux's /proc/self/clear_refs to reset the peak")
    r = _child(PEAK.format(p=str(wide_file), body=body.replace("\n    ", "\n")[4:]))
    assert r.returncode == 0, r.stderr[-2000:]
    if r.stdout.strip().endswith("no-reset"):
        pytest.skip("this /proc does not reset the peak (VmHWM) through clear_refs")
    peak = int(r.stdout.strip().splitlines()[-1])
    size = os.path.getsize(wide_file)
    assert peak < times * size, f"{peak / 2**20:.0f} MB, {peak / size:.1f}x the file"
