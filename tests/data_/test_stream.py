"""rwtool.data._stream: the two-pass reader for files larger than memory.

Oracle: read_csv on the whole file (same record, same X and y once the chunks are stacked) and
numpy's mean/std of that X.
"""

import os

import numpy as np
import pytest

import rwtool.data as D


def make_file(path, rng, n=700, holes=True):
    lines = ["num,cat,int3,label"]
    for i in range(n):
        x = "" if holes and i % 37 == 5 else f"{rng.normal():.6f}"
        cat = rng.choice(["red", "green", "blue", "NA"]) if holes else rng.choice(["r", "g"])
        lab = "" if holes and i % 101 == 7 else rng.choice(["yes", "no"])
        lines.append(f"{x},{cat},{rng.integers(0, 3)},{lab}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("missing", ["impute-mean", "impute-most-frequent", "drop-rows"])
def test_two_passes_equal_read_csv(tmp_path, rng, missing):
    p = make_file(tmp_path / "s.csv", rng)
    full = D.read_csv(p, "label", missing=missing, categorical=["int3"])
    scan = D.scan_csv(p, "label", missing=missing, categorical=["int3"], block_bytes=512)
    a, b = scan.preprocessing.to_dict(), full.preprocessing.to_dict()
    fa, fb = a["columns"][0].pop("fill"), b["columns"][0].pop("fill")
    assert a == b and (fa == fb or fa == pytest.approx(fb, rel=1e-14))   # summation order
    chunks = list(D.iter_csv(p, scan.preprocessing, dialect=scan.dialect, block_bytes=512))
    assert len(chunks) > 10
    X = np.vstack([c.X for c in chunks])
    y = np.concatenate([c.y for c in chunks])
    rows = np.concatenate([c.rows for c in chunks])
    np.testing.assert_allclose(X, full.X, rtol=1e-14)
    np.testing.assert_array_equal(y, full.y)
    np.testing.assert_array_equal(rows, full.rows)
    assert scan.n_rows == full.n_samples and scan.classes == full.classes
    np.testing.assert_allclose(scan.mean, full.X.mean(axis=0), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(scan.std, full.X.std(axis=0), rtol=1e-10, atol=1e-15)


def test_stream_errors_are_located(tmp_path, rng):
    p = make_file(tmp_path / "s.csv", rng, holes=False)
    with open(p, "a") as fh:
        fh.write("oops,r,1,yes\n")
    with pytest.raises(D.NonNumericError) as e:
        D.scan_csv(p, "label", block_bytes=256)
        list(D.iter_csv(p, D.scan_csv(p, "label").preprocessing))
    assert e.value.row == 702 and e.value.column == "num"
    q = tmp_path / "t.csv"
    q.write_text("a,b\n1,2\n3,4,5\n")
    with pytest.raises(D.RaggedRowError) as e:
        D.scan_csv(q)
    assert e.value.row == 3


def test_stream_from_standard_input(monkeypatch):
    import io
    import sys
    text = "a,y\n" + "".join(f"{i},{i % 2}\n" for i in range(20))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    scan = D.scan_csv("-", "y", block_bytes=32)
    X = np.vstack([c.X for c in D.iter_csv(scan.source, scan.preprocessing,
                                           dialect=scan.dialect, block_bytes=32)])
    np.testing.assert_array_equal(X[:, 0], np.arange(20))
    assert scan.source.name == "<stdin>"


def test_stream_names_for_a_header_less_file(tmp_path):
    p = tmp_path / "nh.csv"
    p.write_text("".join(f"{i},{'ab'[i % 2]},{i % 2}\n" for i in range(30)))
    full = D.read_csv(p, "y", header=False, names=["x", "c", "y"])
    scan = D.scan_csv(p, "y", header=False, names=["x", "c", "y"], block_bytes=64)
    assert scan.preprocessing == full.preprocessing
    X = np.vstack([c.X for c in D.iter_csv(p, scan.preprocessing, dialect=scan.dialect,
                                           block_bytes=64)])
    np.testing.assert_array_equal(X, full.X)


def test_preview_reports_the_encoding_switch(tmp_path):
    p = tmp_path / "m.csv"
    p.write_bytes(b"a,b\n" + b"".join(b"x,%d\n" % i for i in range(14000)) + b"caf\xe9,1\n")
    pv = D.preview_csv(p)
    assert pv.dialect.encoding == "cp1252" and "not valid UTF-8" in pv.notes[0]
    assert pv.to_dict()["notes"] == pv.notes
    scan = D.scan_csv(p, block_bytes=4096)
    assert scan.dialect.encoding == "cp1252" and "not valid UTF-8" in scan.notes[0]
    assert scan.preprocessing.columns[0]["categories"] == ["café", "x"]


# ----------------------------------------------------------------------------- tokeniser oracle

from hypothesis import given, settings, strategies as st  # noqa: E402

_CELL = st.text(alphabet=list('a1 ,"\n\r\té;-'), max_size=6)


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 4).flatmap(
    lambda k: st.lists(st.lists(_CELL, min_size=k, max_size=k), min_size=1, max_size=8)),
    eol=st.sampled_from(["\n", "\r\n", "\r"]), block=st.sampled_from([7, 64, 1 << 20]))
def test_cells_and_lines_match_python_csv(rows, eol, block):
    """The scan + pyarrow reader splits any quoted file into the cells and file lines that
    Python's csv module (the reference tokeniser) finds, in any block size."""
    import csv
    import io
    import tempfile

    from rwtool.data import _read as csv_read
    from rwtool.data._dialect import Dialect
    buf = io.StringIO(newline="")
    csv.writer(buf, lineterminator=eol).writerows(rows)
    text = buf.getvalue()
    expect, lines, prev = [], [], 0
    reader = csv.reader(io.StringIO(text, newline=""), strict=False)
    for rec in reader:
        start, prev = prev + 1, reader.line_num
        if rec and any(c.strip() for c in rec):      # blank records are skipped
            expect.append(rec)
            lines.append(start)
    k = len(expect[0]) if expect else 0
    # the reader's rules: one trailing empty field is a trailing delimiter; another count is
    # a ragged row (a lone CR that csv.writer left unquoted ends a record for both readers)
    expect = [r[:k] if len(r) == k + 1 and not r[-1].strip() else r for r in expect]
    ragged = any(len(r) != k for r in expect)
    with tempfile.NamedTemporaryFile("wb", suffix=".csv", delete=False) as fh:
        fh.write(text.encode("utf-8"))
    try:
        if ragged:
            with pytest.raises(D.RaggedRowError) as e:
                list(csv_read.iter_blocks(fh.name, Dialect(header=False), block_bytes=block))
            assert e.value.row == lines[next(i for i, r in enumerate(expect) if len(r) != k)]
            return
        if not expect:
            with pytest.raises(D.EmptyFileError):
                list(csv_read.iter_blocks(fh.name, Dialect(header=False), block_bytes=block))
            return
        got, got_lines = [], []
        for b in csv_read.iter_blocks(fh.name, Dialect(header=False), block_bytes=block):
            cols = [b.cells[j].to_pylist() for j in sorted(b.cells)]
            got += [list(r) for r in zip(*cols)] if cols else []
            got_lines += b.lines.tolist()
        assert got == expect and got_lines == lines
    finally:
        os.remove(fh.name)


@pytest.mark.parametrize("k, n, blocks", [(5, 400, 1), (5, 400, 7), (300, 3, 1), (1, 999, 4)])
def test_distinct_numbers_per_column_against_numpy(k, n, blocks):
    # the streamed summaries' distinct numbers (classes of a numeric target, most-frequent
    # fills, categories of a numeric column) over blocks, one block alone, many columns
    from rwtool.data._stream import _Summary
    rng = np.random.default_rng(k * n + blocks)
    x = rng.integers(0, 6, (k, n)).astype(float)
    x[x == 5] = np.nan
    s = _Summary([f"c{j}" for j in range(k)], np.arange(k), 10, True, 100)
    for part in np.array_split(np.arange(n), blocks):
        s._add_numbers(x[:, part], {}, part + 2, np.ones(len(part), bool))
    for j in range(k):
        u, c = np.unique(x[j][~np.isnan(x[j])], return_counts=True)
        col = s.column(j)
        assert np.array_equal(col.unique_numbers(), u)
        assert col.numeric_fill("impute-most-frequent") == (u[np.argmax(c)] if len(u) else None)
        assert col.counts() == (int(c.sum()), 0, int(np.isnan(x[j]).sum()))


@pytest.mark.parametrize("missing", ["error", "impute-mean", "impute-most-frequent", "drop-rows"])
def test_numbers_before_a_columns_first_text(tmp_path, rng, missing):
    # Only the target's, a declared categorical column's (and, for the mode, every column's)
    # distinct numbers are counted from the first block; any other column's from the block of
    # its first text. Here "mix" holds numbers in the first blocks and more text than numbers
    # later (categorical: its numbers are categories) and "cost" numbers, then "$" amounts
    # (declared numeric, so formatted: its fill counts every number): the numbers read before
    # their first text must be counted too (pass one is read again), so the record equals
    # read_csv's.
    n = 300
    lines = ["mix,cost,x,y"]
    for i in range(n):
        mix = (str(7 + i % 2) if i < 20 else str(i % 4) if i < 80 or i % 9 == 0 else
               "ab"[i % 2])
        cost = f"{i % 7}.5" if i < 200 else f"${i % 5}"
        y = "" if missing != "error" and i % 23 == 4 else str(i % 2)
        lines.append(f"{mix},{cost},{rng.normal():.4f},{y}")
    p = tmp_path / "late.csv"
    p.write_text("\n".join(lines) + "\n")
    full = D.read_csv(p, "y", missing=missing, numeric=["cost"])
    scan = D.scan_csv(p, "y", missing=missing, numeric=["cost"], block_bytes=256,
                      moments=False)
    a, b = scan.preprocessing.to_dict(), full.preprocessing.to_dict()
    fa, fb = a["columns"][2].pop("fill"), b["columns"][2].pop("fill")   # x: a mean
    assert a == b and (fa == fb or fa == pytest.approx(fb, rel=1e-14))   # summation order
    assert full.preprocessing.columns[0]["categories"] == ["0", "1", "2", "3", "7", "8",
                                                           "a", "b"]
    chunks = list(D.iter_csv(p, scan.preprocessing, dialect=scan.dialect, block_bytes=256))
    np.testing.assert_allclose(np.vstack([c.X for c in chunks]), full.X, rtol=1e-14)
