"""The fast read path against the reader it sped up (issue 26, target 2).

``read_csv`` reads a plainly clean block of bytes (no quote, no carriage return, no blank line,
every line a record) without the record scan, counts the most frequent number by hashing
instead of sorting, and writes ``X`` on its first access. The reference here is the reader as
it was: every block through the record scan (the path every file over 64 MB and every file with
a quote took), the mode by ``np.unique``, and ``X`` built column by column from the record and
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
    """The outcome with every block through the record scan (the reader before)."""
    with monkeypatch.context() as m:
        m.setattr(R, "_plain_block", lambda *a, **k: None)
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
    _same(fast, _scanned(monkeypatch, path, options))
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
