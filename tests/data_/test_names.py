"""A wide file's column names as one array (rwtool.data._names.Names) read as the list of them.

The oracle is the Python list of the same names: every read a caller makes of a list (index,
negative index, slice, iteration, membership, index(), equality, pickling) must give the same
answer; the positions Names remember through selections must be the positions in the list; a
file wider than the threshold must read, encode and replay as before, with names equal to
the header's."""

import json
import pickle

import numpy as np
import pytest

import rwtool.data as D
from rwtool.data import _read
from rwtool.data._names import Names, concat, origin, select
from rwtool.data._read import positions


def test_reads_as_the_list():
    ref = [f"c{j}" for j in range(3000)] + ["", "é,x", "dup"]
    n = Names.of(ref)
    assert len(n) == len(ref) and list(n) == ref and n == ref and n.tolist() == ref
    for i in (0, 5, -1, -3, len(ref) - 1):
        assert n[i] == ref[i]
    with pytest.raises(IndexError):
        n[len(ref)]
    for sl in (slice(3, 10), slice(None, None, 7), slice(-5, None), slice(10, 3)):
        assert n[sl] == ref[sl]
    # past the first scans, lookups go through the sorted index: same answers
    for k, name in enumerate(ref[::97] + ["nope", "c1"] * 20):
        assert (name in n) == (name in ref), name
        assert n.find(name) == (ref.index(name) if name in ref else -1), (k, name)
    assert n.index("dup") == ref.index("dup")
    with pytest.raises(ValueError):
        n.index("nope")
    assert pickle.loads(pickle.dumps(n)) == ref
    assert n != ref[:-1] and n != ref[:-1] + ["other"] and n != "c0"
    assert json.dumps(list(n)) == json.dumps(ref)


def test_selections_remember_their_positions():
    ref = [f"n{j}" for j in range(500)]
    n = Names.of(ref)
    rng = np.random.default_rng(0)
    for idx in (np.arange(20, 300), rng.choice(500, 40, replace=False), np.arange(0)):
        s = select(n, idx)
        assert s == [ref[i] for i in idx]
        root, pos = origin(s)
        assert root is n and np.array_equal(pos, idx)
        assert np.array_equal(positions(n, s), idx)            # known, no lookup
        t = select(s, np.arange(len(s))[::2])                  # a selection of a selection
        assert np.array_equal(positions(n, t), idx[::2])
        assert np.array_equal(positions(s, t), np.arange(len(s))[::2])
    # a short list joined on looks its names up; a list of other names drops the positions
    j = n[10:13] + ["n2"]
    assert j == ["n10", "n11", "n12", "n2"] and np.array_equal(origin(j)[1], [10, 11, 12, 2])
    c = concat([n[:2], ["x"]])
    assert c == ["n0", "n1", "x"] and origin(c) == (c, None)      # a root of its own
    # against a list of names (no shared root): looked up by value
    assert positions(n, ["n7", "zz", "n499"]).tolist() == [7, -1, 499]
    assert positions(n, Names.of(["n3", "n1"])).tolist() == [3, 1]


def test_written_as_compares_the_joined_header():
    n = Names.of(["ab", "c", "", "déf"])
    for rec, ok in [(b"ab,c,,d\xc3\xa9f", True), (b"ab,c,,d\xc3\xa9g", False),
                    (b"abc,,,d\xc3\xa9f", False), (b"ab,c,d\xc3\xa9f", False)]:
        assert n.written_as(np.frombuffer(rec, np.uint8), ",") == ok, rec
        assert ok == (rec == ",".join(n).encode())
    assert n[1:].written_as(np.frombuffer("c,,déf".encode(), np.uint8), ",")   # a view


def _wide(tmp_path, d=1500, n=40):
    rng = np.random.default_rng(1)
    X = rng.integers(0, 9, (n, d)).astype(float)
    X[rng.integers(0, n, 30), rng.integers(0, d, 30)] = np.nan
    colors = rng.choice(["red", "blue"], n)
    y = rng.standard_normal(n)
    names = [f"f{j}" for j in range(d)]
    lines = [",".join(names + ["color", "y"])] + [
        ",".join(("" if np.isnan(v) else str(int(v))) for v in X[i]) + f",{colors[i]},{float(y[i])!r}"
        for i in range(n)]
    p = tmp_path / "wide.csv"
    p.write_text("\n".join(lines) + "\n")
    return p, X, colors, y, names


def test_a_wide_file_reads_and_replays_with_its_names(tmp_path):
    assert _read._WIDE < 1500
    p, X, colors, y, names = _wide(tmp_path)
    ds = D.read_csv(p, "y", missing="impute-mean")
    assert isinstance(ds.feature_names, Names)
    want = names + ["color=blue", "color=red"]
    assert ds.feature_names == want and list(ds.feature_names) == want
    mean = np.nanmean(X, axis=0)
    np.testing.assert_allclose(ds.X[:, :len(names)], np.where(np.isnan(X), mean, X),
                               rtol=1e-15)
    assert np.array_equal(ds.X[:, -1], (colors == "red").astype(float))
    np.testing.assert_array_equal(ds.y, y)
    pre = ds.preprocessing
    assert pre.input_columns == names + ["color"]
    assert pre.feature_names_out == want and type(pre.feature_names_out) is list
    doc = json.loads(json.dumps(pre.to_dict()))          # a model file embeds it
    again = D.Preprocessing.from_dict(doc).apply_csv(p, require_target=True)
    np.testing.assert_array_equal(again.X, ds.X)
    assert list(again.feature_names) == want
    tr, te = ds.split(0.25)
    assert tr.feature_names == want and te.feature_names == want
    scan = D.scan_csv(p, "y", missing="impute-mean")
    chunks = list(D.iter_csv(p, scan.preprocessing, dialect=scan.dialect))
    np.testing.assert_array_equal(np.vstack([c.X for c in chunks]), ds.X)
    # a feature chosen by name, an error locating a column by name
    one = D.read_csv(p, "y", features=["f7", "color"], missing="impute-mean")
    assert one.feature_names == ["f7", "color=blue", "color=red"]
    with pytest.raises(D.DataError) as e:
        D.read_csv(p, "y")                                 # missing cells, policy "error"
    assert e.value.column in names


def test_a_wide_header_with_a_duplicate_is_refused(tmp_path):
    names = [f"f{j}" for j in range(1500)]
    names[900] = "f3"
    p = tmp_path / "dup.csv"
    p.write_text(",".join(names) + "\n" + ",".join("1" for _ in names) + "\n")
    with pytest.raises(D.DataError, match="duplicate column name 'f3'"):
        D.read_csv(p)
