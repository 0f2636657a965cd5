"""The fast read path against the reader it sped up (issue 26, target 2).

``read_csv`` reads a plainly clean block of bytes (no quote, no carriage return, no blank line,
every line a record) without the record scan, has pyarrow convert the columns whose first
block was all numbers (or few distinct texts) while it splits the later blocks, counts the most frequent number by hashing
instead of sorting, and writes ``X`` on its first access. The reference here is the reader as
it was: every block through the record scan (the path every file over 64 MB and every file with
a quote took) and every cell split as text, the mode by ``np.unique``, and ``X`` built column by column from the record and
the cells read by Python's csv module. On the bundled samples, on every awkward and office case
of tests/data_ (loads and located errors alike) and on generated files that mix plain and
quoted blocks, both readers must give the same outcome: the same error, row and column, or the
same X, y, rows, names, notes and record, bit for bit (both computed in this process).
"""

import csv
import pickle

import numpy as np
import pytest

import rwtool.data as D
from rwtool.data import _read as R

from .test_awkward_csv import CASES as AWKWARD
from .test_office_csv import CASES as OFFICE


def _outcome(path, options):
    try:
        ds = D.read_csv(path, **options)
    except (D.DataError, ValueError) as exc:
        return ("error", type(exc), getattr(exc, "row", None), getattr(exc, "column", None),
                str(exc))
    return ("ok", ds.X, ds.y, ds.rows, ds.feature_names, [str(n) for n in ds.notes],
            ds.preprocessing.to_dict(), ds.task)


def _scanned(monkeypatch, path, options):
    """The outcome with every block through the record scan and every cell split as text,
    then typed (the reader before)."""
    with monkeypatch.context() as m:
        m.setattr(R, "_plain_block", lambda *a, **k: None)
        m.setattr(R, "typed_plan", lambda *a: None)
        return _outcome(path, options)


def _typed(monkeypatch, path, options):
    """The outcome with the column types learned from a first block of a line or two and
    every later block converted while split (rwtool.data._read.TypePlan), in small blocks:
    a column that turns out not to be numbers is read as text from its block on."""
    with monkeypatch.context() as m:
        m.setattr(R, "_FIRST_BLOCK", 40)
        m.setattr(R, "_BLOCK_BYTES", 300)
        return _outcome(path, options)


def _same(a, b):
    assert a[0] == b[0], (a, b)
    if a[0] == "error":
        assert a[1:] == b[1:]
        return
    for x, y in zip(a[1:4], b[1:4]):
        if x is None or y is None:
            assert x is None and y is None
        else:
            np.testing.assert_array_equal(x, y)
            assert np.asarray(x).dtype == np.asarray(y).dtype
    assert a[4:] == b[4:]


def _both(monkeypatch, path, options):
    fast = _outcome(path, options)
    before = _scanned(monkeypatch, path, options)
    _same(fast, before)
    _same(_typed(monkeypatch, path, options), before)
    return fast


SAMPLES = [(s["name"], s["path"], {"target": s["target"], **s["options"]})
           for s in D.list_samples()]


@pytest.mark.parametrize("name,path,options", SAMPLES, ids=[s[0] for s in SAMPLES])
def test_samples(monkeypatch, name, path, options):
    for more in ({}, {"missing": "impute-most-frequent"}):
        out = _both(monkeypatch, path, {**options, **more})
        assert out[0] == "ok"
        assert np.array_equal(out[1], _one_hot_oracle(path, out[6]))


@pytest.mark.parametrize("name,text,options,expect", AWKWARD, ids=[c[0] for c in AWKWARD])
def test_awkward_cases(tmp_path, monkeypatch, name, text, options, expect):
    p = tmp_path / "case.csv"
    p.write_bytes(text.encode("utf-8"))
    _both(monkeypatch, p, options)


@pytest.mark.parametrize("name,data,expect", OFFICE, ids=[c[0] for c in OFFICE])
def test_office_cases(tmp_path, monkeypatch, name, data, expect):
    p = tmp_path / "case.csv"
    p.write_bytes(data)
    _both(monkeypatch, p, {"target": "y"})
    _both(monkeypatch, p, {"target": "y", "missing": "impute-most-frequent"})


def _mixed_file(path, n, rng, quoted_every=0, defect=None):
    """n rows of numbers, categories, missing cells and a class target; a quoted cell every
    ``quoted_every`` rows (those blocks take the scan); ``defect``: (row, line) to spoil."""
    cats = ["red", "green", "blue", "grey"]
    lines = ["id,x,k,z,y"]
    for i in range(n):
        x = "" if i % 17 == 5 else f"{rng.standard_normal():.6g}"
        k = cats[int(rng.integers(0, 4))]
        if quoted_every and i % quoted_every == 3:
            k = f'"{k}"'
        z = str(int(rng.integers(0, 7)))
        lines.append(f"{i},{x},{k},{z},{'yes' if rng.random() < 0.4 else 'no'}")
    if defect is not None:
        row, text = defect
        lines[row] = text
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.slow
@pytest.mark.parametrize("quoted_every", [0, 7, 300])
@pytest.mark.parametrize("block", [64, 997, 1 << 26])
def test_blocks_plain_and_scanned(tmp_path, monkeypatch, quoted_every, block):
    """Files in blocks of every kind: all plain, all scanned, a mix (a quote in some blocks),
    read in small blocks and whole: the same outcome, and the same as the whole file."""
    p = tmp_path / "m.csv"
    _mixed_file(p, 1000, np.random.default_rng(quoted_every), quoted_every)
    options = {"target": "y", "missing": "impute-most-frequent"}
    whole = _outcome(p, options)
    monkeypatch.setattr(R, "_BLOCK_BYTES", block)
    out = _both(monkeypatch, p, options)
    _same(out, whole)
    np.testing.assert_array_equal(out[3], np.arange(2, 1002))
    assert np.array_equal(out[1], _one_hot_oracle(p, out[6]))


@pytest.mark.parametrize("defect,error,column", [
    ("5,1.0,red,3", D.RaggedRowError, None),
    ("5,1.0,red,3,no,extra", D.RaggedRowError, None),
    ("5,abc,red,3,no", D.NonNumericError, "x"),
    ("", None, None),                        # an empty line: skipped, the lines still right
    (" , , , , ", None, None),               # a blank record: skipped
    ("5,1.0,red,3,no,", None, None),         # one trailing delimiter
])
@pytest.mark.parametrize("row", [1, 600, 1000])
def test_defects_located_in_any_block(tmp_path, monkeypatch, defect, error, column, row):
    p = tmp_path / "d.csv"
    _mixed_file(p, 1000, np.random.default_rng(1), 0, (row, defect))
    monkeypatch.setattr(R, "_BLOCK_BYTES", 4096)
    out = _both(monkeypatch, p, {"target": "y", "missing": "impute-most-frequent"})
    if error is None:
        assert out[0] == "ok"
        if defect.strip(" ,") == "":
            assert row + 1 not in out[3] and len(out[3]) == 999
        return
    assert out[0] == "error" and out[1] is error and out[2] == row + 1
    if column is not None:
        assert out[3] == column


def _one_hot_oracle(path, record):
    """X from the record and the cells as Python's csv module reads them: a number (or the
    recorded fill) per numeric column, one 1.0 per categorical column (the file's delimiter
    and decimal mark as detected)."""
    dialect = D.sniff_csv(path)
    with open(path, newline="", encoding="utf-8-sig") as fh:
        rows = [r for r in csv.reader(fh, delimiter=dialect.delimiter)
                if any(c.strip() for c in r)]
    header, body = rows[0], rows[1:]
    at = {h.strip(): j for j, h in enumerate(header)}
    out = []
    for r in body:
        x = []
        for spec in record["columns"]:
            cell = r[at[spec["name"]]].strip()
            cell = "" if cell in D.NA_VALUES else cell
            if spec["kind"] == "numeric":
                x.append(float(cell.replace(dialect.decimal, ".")) if cell else spec["fill"])
            else:
                cell = cell or spec["fill"]
                x.extend(1.0 if cell == k else 0.0 for k in spec["categories"])
        out.append(x)
    return np.array(out, dtype=np.float64)


@pytest.mark.parametrize("seed", range(6))
def test_most_frequent_is_np_unique(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 5000))
    draws = [rng.integers(-5, 5, n).astype(float),            # a tally, with ties
             rng.integers(0, 10**7, n).astype(float),          # a wide range: hashed
             rng.standard_normal(n).round(int(rng.integers(0, 4))),
             np.repeat(rng.standard_normal(7), 3),
             rng.integers(0, 3, n) * 2.0**53]                 # whole, beyond exact offsets
    for v in draws:
        codes = np.where(rng.random(len(v)) < 0.1, -2, -1).astype(np.int32)
        if not (codes == -1).any():
            codes[0] = -1
        u, c = np.unique(v[codes == -1], return_counts=True)
        assert R.most_frequent(v, codes) == u[np.argmax(c)]
    assert R.most_frequent(np.array([1.0, np.inf, 1.0]), np.full(3, -1, np.int32)) is None
    assert R.most_frequent(np.array([0.0, -0.0, 2.0]), np.full(3, -1, np.int32)) == 0.0


def test_x_on_first_access(tmp_path):
    p = tmp_path / "m.csv"
    _mixed_file(p, 300, np.random.default_rng(3))
    ds = D.read_csv(p, "y", missing="impute-mean")
    assert ds._X is None                                # nothing dense yet
    assert (ds.n_samples, ds.n_features) == (300, len(ds.feature_names))
    part = ds.subset(np.arange(10, 50))                  # still lazy
    tr, te = ds.split(test_size=0.3, random_state=0)
    back = pickle.loads(pickle.dumps(ds))
    X = ds.X
    assert ds.X is X and ds._parts is None               # written once, then kept
    np.testing.assert_array_equal(part.X, X[10:50])
    np.testing.assert_array_equal(np.vstack([tr.X, te.X]),
                                  np.vstack([X[ds.split(0.3, 0)[0].rows - 2],
                                             X[ds.split(0.3, 0)[1].rows - 2]]))
    np.testing.assert_array_equal(back.X, X)
    assert X.dtype == np.float64 and X.flags.c_contiguous
    ds.X = X[:, :2]                                     # still assignable
    assert ds.n_features == 2


def _late_cells_file(path, rng, n=1200, defect=None):
    """Columns whose first rows are plain (so the first block's plan converts them while
    split) and whose later rows hold every kind of cell the text path types itself: numbers
    written with spaces, signs, exponents and "nan"; missing-value tokens; an Excel error
    value; a currency; text in a numeric column turning it categorical; categories with
    leading spaces, "#N/A" and "NA"; a blank record. ``defect``: (row, column, text)."""
    lines = ["a,b,c,k,m,p,y"]
    for i in range(n):
        late = i > 40
        a = f"{rng.standard_normal():.5g}"
        if late and i % 5 == 0:
            a = rng.choice([f" {a}", f"{a}\t", f"+{abs(float(a))}", "1e3", "-.5", "nan"])
        b = str(int(rng.integers(0, 100)))
        if late and i % 7 == 0:
            b = rng.choice(["NA", "", "?", "n/a", "null"])
        c = f"{rng.random():.3f}"
        if late and i % 97 == 0:
            c = rng.choice(["#DIV/0!", "#VALUE!"])
        k = rng.choice([" red", "blue", "green"])
        if late and i % 31 == 0:
            k = rng.choice(["#N/A", "NA", "red "])
        m = str(int(rng.integers(0, 4))) if i < 300 else rng.choice(["lo", "hi"])
        p = f"{rng.integers(1, 9)}.50" if i < 600 else f"${rng.integers(1, 9)}.50"
        lines.append(f"{a},{b},{c},{k},{m},{p},{rng.choice(['yes', 'no'])}")
    lines.insert(n // 2, " , , , , , , ")
    if defect is not None:
        row, col, text = defect
        cells = lines[row].split(",")
        cells["abckmpy".index(col)] = text
        lines[row] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("defect", [None, (900, "c", "abc"), (1100, "a", "1_000"),
                                    (800, "b", " -999x")])
def test_columns_converted_while_split(tmp_path, monkeypatch, seed, defect):
    """A plan learned on the first lines meets every kind of cell later in the file: the
    same outcome as the text path (loads and located errors alike), in read_csv and in the
    streaming reader (scan_csv + iter_csv, stacked)."""
    p = tmp_path / "late.csv"
    _late_cells_file(p, np.random.default_rng(seed), defect=defect)
    options = {"target": "y", "missing": "impute-most-frequent"}
    out = _both(monkeypatch, p, options)
    if defect is None:
        assert out[0] == "ok" and len(out[3]) == 1200
        assert any("Excel error" in n for n in out[5])
        rec = {c["name"]: c for c in out[6]["columns"]}
        assert rec["m"]["kind"] == "categorical" and "$" in str(rec["p"].get("format"))
        with monkeypatch.context() as mp:
            mp.setattr(R, "_FIRST_BLOCK", 40)
            scan = D.scan_csv(p, block_bytes=2000, **options)
            chunks = list(D.iter_csv(p, scan.preprocessing, dialect=scan.dialect,
                                     block_bytes=2000))
        assert scan.preprocessing.to_dict() == out[6]
        np.testing.assert_array_equal(np.vstack([c.X for c in chunks]), out[1])
        np.testing.assert_array_equal(np.concatenate([c.rows for c in chunks]), out[3])
    else:
        row, col, _ = defect
        assert out[:4] == ("error", D.NonNumericError, row + 1, col)


def test_plan_from_first_block():
    """What the first block's text decides: numbers (missing-value tokens aside) are
    converted to float64, anything else stays text; a conversion pyarrow refuses demotes
    that column only."""
    import pyarrow as pa
    cells = {0: pa.array(["1", "NA", "2.5", "nan"]), 1: pa.array(["a", "b", "a", "a"] * 5),
             2: pa.array(["1", "2", " 3"]), 3: pa.array(["NA", "", "NA", "?"])}
    plan = R.TypePlan(D.NA_VALUES)
    plan.learn({j: pa.chunked_array([c]) for j, c in cells.items()}, [0, 1, 2, 3])
    assert plan.types == {0: pa.float64()}
    assert plan.failed("In CSV column #0: CSV conversion error to double: invalid value 'x'") == 0
    assert plan.types == {}
    plan.types = {0: pa.float64(), 2: pa.float64()}
    # on one thread the tokeniser names the row too
    assert plan.failed("In CSV column #2: Row #7: CSV conversion error to double: invalid "
                       "value ''") == 2
    assert plan.types == {0: pa.float64()}
    assert plan.failed("CSV parse error: Expected 2 columns, got 3") is None
    empty = R.TypePlan(D.NA_VALUES)
    empty.learn({0: pa.chunked_array([pa.array([], pa.string())])}, [0])
    assert empty.types is None                  # nothing learned from a block of no record


def test_chunked_text_typed_as_joined(rng):
    """A column of text split in chunks types as the same cells joined: its dictionary
    shared by the chunks in the order of first occurrence (the interned texts' order)."""
    import pyarrow as pa
    words = np.array([" red", "blue", "7", "#N/A", "NA", "green", "2.5"])
    cells = words[rng.integers(0, len(words), 3000)].tolist()
    cells[2000] = "violet"                          # first met in a later chunk
    parts = [cells[:1000], [], cells[1000:2500], cells[2500:]]
    chunked = pa.chunked_array([pa.array(p, pa.string()) for p in parts])
    a, b = R.Column("k", 0, 100), R.Column("k", 0, 100)
    va, ca, sa = R.type_cells(chunked, ".", frozenset(D.NA_VALUES), True, a._intern)
    vb, cb, sb = R.type_cells(pa.array(cells), ".", frozenset(D.NA_VALUES), True, b._intern)
    np.testing.assert_array_equal(va, vb)
    np.testing.assert_array_equal(ca, cb)
    assert a.vocab == b.vocab and a.vocab.index("violet") == len(a.vocab) - 1
    np.testing.assert_array_equal(sa.error_rows, sb.error_rows)


def test_shows_decimal_point_is_the_expression(rng):
    """The one-pass kernel against the expression it replaced, per row and for a whole array:
    fractions, whole numbers, three-digit fractions after a group of one to three digits,
    NaN and infinities."""
    def expression(x):
        with np.errstate(invalid="ignore", over="ignore"):
            a = np.abs(x)
            k = a * 1000
            grouped = (a >= 1) & (a < 1000) & (np.abs(k - np.round(k)) <= 1e-9 * k)
            return np.isfinite(x) & (x != np.floor(x)) & ~grouped
    pool = np.array([1.234, 12.5, 999.999, 0.25, 2.3456, 3.0, -7.0, 1000.5, np.nan, np.inf,
                     -np.inf, -1.234, 0.001, 1e300, 5e-324, -0.0, 123.456, 1.2345])
    for _ in range(50):
        x = rng.choice(pool, size=(int(rng.integers(1, 6)), int(rng.integers(0, 7))))
        np.testing.assert_array_equal(R.shows_decimal_point(x, axis=1),
                                      expression(x).any(axis=1))
        assert R.shows_decimal_point(x.ravel()) == bool(expression(x).any())
