"""rwtool.data: dialect detection, encoding, roles, missing values, replay, splits, bad input.

Oracles: the values written into each file by the test itself (and numpy.loadtxt for plain
numeric files), one-hot matrices and imputation statistics computed by hand with numpy.
"""

import csv
import json
import os

import numpy as np
import pytest

import rwtool.data as D
from rwtool.data import _dialect as csv_dialect, _read as csv_read


def write(path, text, encoding="utf-8"):
    path.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return path


def write_rows(path, header, rows, delimiter=",", encoding="utf-8"):
    with open(path, "w", encoding=encoding, newline="") as fh:
        w = csv.writer(fh, delimiter=delimiter, lineterminator="\n")
        if header is not None:
            w.writerow(header)
        w.writerows(rows)
    return path


# ----------------------------------------------------------------------------- dialect

@pytest.mark.parametrize("delim", [",", ";", "\t"])
def test_numeric_roundtrip_each_delimiter_matches_loadtxt(tmp_path, rng, delim):
    X = rng.standard_normal((57, 4)) * 10.0 ** rng.integers(-5, 6, size=(57, 4))
    p = write_rows(tmp_path / "x.csv", ["a", "b", "c", "d"],
                   [[repr(float(v)) for v in r] for r in X], delimiter=delim)
    d = D.sniff_csv(p)
    assert (d.delimiter, d.header, d.decimal) == (delim, True, ".")
    ds = D.read_csv(p)
    np.testing.assert_array_equal(ds.X, X)                       # exact: repr round-trips
    np.testing.assert_array_equal(ds.X, np.loadtxt(p, delimiter=delim, skiprows=1))
    assert ds.feature_names == ["a", "b", "c", "d"] and ds.y is None
    np.testing.assert_array_equal(ds.rows, np.arange(2, 59))     # file line of each row


def test_decimal_comma_semicolon_bom(tmp_path):
    text = "\ufeffx;y;label\n1,5;-2,25;a\n3,0;4,5e-1;b\n-0,5;7;a\n"
    p = write(tmp_path / "eu.csv", text)
    d = D.sniff_csv(p)
    assert (d.encoding, d.delimiter, d.decimal, d.header) == ("utf-8-sig", ";", ",", True)
    ds = D.read_csv(p, target="label")
    np.testing.assert_array_equal(ds.X, [[1.5, -2.25], [3.0, 0.45], [-0.5, 7.0]])
    assert list(ds.y) == ["a", "b", "a"] and ds.feature_names == ["x", "y"]


def test_latin1_and_quoted_fields(tmp_path):
    text = ('ville,"note, libre",v\n"Montr\xe9al","a ""quoted""\nline",1\n'
            'Qu\xe9bec,"x, y",2\nMontr\xe9al,z,3\n')
    p = write(tmp_path / "l1.csv", text, encoding="latin-1")
    d = D.sniff_csv(p)
    assert d.encoding in ("cp1252", "latin-1") and d.delimiter == ","
    pv = D.preview_csv(p)
    assert pv.names == ["ville", "note, libre", "v"]
    assert pv.head[0] == ["Montréal", 'a "quoted"\nline', "1"]
    ds = D.read_csv(p, target="v", ignore=["note, libre"], task="regression")
    assert ds.feature_names == ["ville=Montréal", "ville=Québec"]
    np.testing.assert_array_equal(ds.X, [[1, 0], [0, 1], [1, 0]])
    np.testing.assert_array_equal(ds.rows, [2, 4, 5])           # the quoted newline spans 2-3


def test_utf8_file_with_latin1_bytes_after_the_sniffed_part(tmp_path, monkeypatch):
    monkeypatch.setattr(csv_dialect, "_SNIFF_BYTES", 64)
    rows = "".join(f"{i},plain\n" for i in range(20))
    p = write(tmp_path / "mixed.csv", ("n,word\n" + rows).encode() + b"99,caf\xe9\n")
    ds = D.read_csv(p, categorical=["word"])
    assert "word=café" in ds.feature_names


@pytest.mark.parametrize("text,header", [
    ("a,b\n1,2\n3,4\n", True), ("1,2\n3,4\n", False),
    ("color,size\nred,big\nblue,small\n", True), ("red,big\nred,small\nblue,big\n", False)])
def test_header_detection(tmp_path, text, header):
    p = write(tmp_path / "h.csv", text)
    assert D.sniff_csv(p).header is header
    ds = D.read_csv(p, categorical=[0, 1] if "red" in text else None)
    assert ds.n_samples == text.count("\n") - int(header)
    if not header:
        assert ds.preprocessing.input_columns == ["col1", "col2"]


def test_explicit_dialect_overrides(tmp_path):
    p = write(tmp_path / "o.csv", "1;2\n3;4\n")
    ds = D.read_csv(p, delimiter=";", header=False, decimal=".")
    np.testing.assert_array_equal(ds.X, [[1, 2], [3, 4]])


# ----------------------------------------------------------------------------- roles and types

def test_roles_onehot_and_forced_types(tmp_path):
    rows = [["1", "red", "10", "id1", "0"], ["2", "blue", "20", "id2", "1"],
            ["3", "red", "10", "id3", "1"], ["4", "green", "30", "id4", "0"]]
    p = write_rows(tmp_path / "r.csv", ["n", "color", "code", "id", "y"], rows)
    ds = D.read_csv(p, target="y", ignore=["id"], categorical=["code"])
    assert ds.feature_names == ["n", "color=blue", "color=green", "color=red", "code=10",
                                "code=20", "code=30"]
    expect = np.array([[1, 0, 0, 1, 1, 0, 0], [2, 1, 0, 0, 0, 1, 0],
                       [3, 0, 0, 1, 1, 0, 0], [4, 0, 1, 0, 0, 0, 1]], float)
    np.testing.assert_array_equal(ds.X, expect)
    assert ds.task == "binary" and ds.y.dtype.kind == "i" and list(ds.y) == [0, 1, 1, 0]
    # by position: -1 is the last column; features restrict the inputs
    ds2 = D.read_csv(p, target=-1, features=["n", "code"])
    assert ds2.feature_names == ["n", "code"] and ds2.target == "y"
    assert D.read_csv(p, target="-1", ignore=["3", "1"]).feature_names == ["n", "code"]


@pytest.mark.parametrize("values,task", [
    (["yes", "no"] * 5, "binary"), ([0, 1] * 5, "binary"), ([1, 2, 3, 4, 5] * 2, "multiclass"),
    (["a", "b", "c"] * 3, "multiclass"), ([0.1 * i for i in range(12)], "regression"),
    (list(range(30)), "regression")])
def test_task_inference(tmp_path, values, task):
    p = write_rows(tmp_path / "t.csv", ["x", "t"], [[i, v] for i, v in enumerate(values)])
    ds = D.read_csv(p, target="t")
    assert ds.task == task
    if task != "regression":
        assert ds.classes == sorted(set(values))
    else:
        assert ds.classes is None and ds.preprocessing.target["classes"] is None
    pv = D.preview_csv(p)
    assert pv.infer_task("t") == task and pv.suggested_target() == "t"


def test_task_override(tmp_path):
    p = write_rows(tmp_path / "t.csv", ["x", "t"], [[i, i % 4] for i in range(20)])
    assert D.read_csv(p, target="t").task == "multiclass"
    ds = D.read_csv(p, target="t", task="regression")
    assert ds.task == "regression" and ds.y.dtype == np.float64
    with pytest.raises(D.TargetError, match="4 classes"):
        D.read_csv(p, target="t", task="binary")
    p2 = write_rows(tmp_path / "t2.csv", ["x", "t"], [[1, "a"], [2, "b"]])
    with pytest.raises(D.TargetError) as e:
        D.read_csv(p2, target="t", task="regression")
    assert e.value.row == 2 and e.value.column == "t"


# ----------------------------------------------------------------------------- missing values

@pytest.fixture
def holes(tmp_path):
    rows = [["1.0", "a", "0"], ["", "b", "1"], ["3.0", "", "0"], ["NA", "a", "1"],
            ["5.0", "a", "1"], ["6.0", "b", "?"]]
    return write_rows(tmp_path / "m.csv", ["v", "c", "y"], rows)


def test_missing_error_names_first_cell(holes):
    with pytest.raises(D.MissingValueError) as e:
        D.read_csv(holes, target="y")
    assert (e.value.row, e.value.column) == (7, "y")            # the target first
    with pytest.raises(D.MissingValueError) as e:
        D.read_csv(holes)
    assert (e.value.row, e.value.column) == (3, "v")
    assert "'v': 2" in str(e.value) and "'c': 1" in str(e.value) and "m.csv" in str(e.value)


def test_missing_drop_rows(holes):
    ds = D.read_csv(holes, target="y", missing="drop-rows")
    np.testing.assert_array_equal(ds.rows, [2, 6])
    np.testing.assert_array_equal(ds.X, [[1, 1, 0], [5, 1, 0]])
    assert any("missing target" in n for n in ds.notes)


def test_missing_impute(holes):
    ds = D.read_csv(holes, target="y", missing="impute-mean")
    # row "6.0, b, ?" is dropped for its missing target; statistics over the 5 others
    mean_v = np.mean([1.0, 3.0, 5.0])
    np.testing.assert_allclose(ds.X[:, 0], [1, mean_v, 3, mean_v, 5])
    np.testing.assert_array_equal(ds.X[2, 1:], [1, 0])            # c imputed with "a"
    ds = D.read_csv(holes, target="y", missing="impute-most-frequent")
    assert ds.X[1, 0] in (1.0, 3.0, 5.0)                           # a tie: one of the modes
    rec = ds.preprocessing.to_dict()
    assert [c["fill"] for c in rec["columns"]][1] == "a"


# ----------------------------------------------------------------------------- replay

def test_preprocessing_replay_same_encoding(tmp_path, rng):
    n = 40
    rows = [[f"{rng.normal():.6f}", rng.choice(["x", "y", "z"]), rng.choice(["p", "q"]),
             int(rng.integers(0, 2))] for _ in range(n)]
    p = write_rows(tmp_path / "a.csv", ["u", "k", "g", "label"], rows)
    ds = D.read_csv(p, target="label")
    # same columns in another order, another delimiter, an extra column, no target
    perm = rng.permutation(n)
    q = write_rows(tmp_path / "b.csv", ["extra", "g", "u", "k"],
                   [["?", rows[i][2], rows[i][0], rows[i][1]] for i in perm], delimiter=";")
    ds2 = ds.preprocessing.apply_csv(q)
    np.testing.assert_array_equal(ds2.X, ds.X[perm])
    assert ds2.y is None and ds2.feature_names == ds.feature_names
    # JSON round trip of the record gives the same encoder
    rec = D.Preprocessing.from_dict(json.loads(json.dumps(ds.preprocessing.to_dict())))
    assert rec == ds.preprocessing
    np.testing.assert_array_equal(rec.apply_csv(p, require_target=True).X, ds.X)
    # rows typed in a form
    X1 = rec.transform_rows([{"u": rows[3][0], "k": rows[3][1], "g": rows[3][2]},
                             {"u": float(rows[5][0]), "k": rows[5][1], "g": rows[5][2]}])
    np.testing.assert_array_equal(X1, ds.X[[3, 5]])


def test_replay_unseen_category_and_missing_column(tmp_path):
    p = write_rows(tmp_path / "a.csv", ["k", "v", "y"], [["x", 1, 0], ["y", 2, 1], ["x", 3, 1]])
    pre = D.read_csv(p, target="y").preprocessing
    q = write_rows(tmp_path / "b.csv", ["k", "v"], [["x", 1], ["w", 2]])
    with pytest.raises(D.UnseenCategoryError) as e:
        pre.apply_csv(q)
    assert (e.value.row, e.value.column) == (3, "k") and "'w'" in str(e.value)
    pre_ign = D.read_csv(p, target="y", handle_unknown="ignore").preprocessing
    np.testing.assert_array_equal(pre_ign.apply_csv(q).X, [[1, 0, 1], [0, 0, 2]])
    r = write_rows(tmp_path / "c.csv", ["v"], [[1]])
    with pytest.raises(D.MissingColumnError) as e:
        pre.apply_csv(r)
    assert e.value.column == "k"
    with pytest.raises(D.MissingColumnError):
        pre.apply_csv(q, require_target=True)


def test_from_dict_rejects_garbage():
    good = {"format": 1, "columns": [{"name": "a", "kind": "numeric", "fill": None}],
            "target": None, "missing": "error", "na_values": [""], "max_abs": 1e100,
            "handle_unknown": "error", "header": True, "file_columns": ["a"]}
    D.Preprocessing.from_dict(good)
    for key, bad in [("columns", []), ("missing", "maybe"), ("max_abs", -1),
                     ("columns", [{"name": "a", "kind": "categorical", "categories": []}]),
                     ("target", {"name": "y", "task": "binary", "classes": [1],
                                 "label_kind": "int"})]:
        with pytest.raises(ValueError):
            D.Preprocessing.from_dict(dict(good, **{key: bad}))


# ----------------------------------------------------------------------------- splits

def test_split_indices_stratified_and_reproducible():
    y = np.array([0] * 60 + [1] * 30 + [2] * 10)
    tr, te = D.split_indices(100, 0.3, random_state=4, stratify=y)
    assert len(np.intersect1d(tr, te)) == 0 and len(tr) + len(te) == 100
    assert [int(np.sum(y[te] == k)) for k in range(3)] == [18, 9, 3]
    tr2, te2 = D.split_indices(100, 0.3, random_state=4, stratify=y)
    np.testing.assert_array_equal(te, te2)
    _, te3 = D.split_indices(100, 0.3, random_state=5, stratify=y)
    assert not np.array_equal(np.sort(te), np.sort(te3))
    tr, te = D.split_indices(10, 0.25, random_state=0)
    assert len(te) == 2 or len(te) == 3
    with pytest.raises(ValueError):
        D.split_indices(10, 1.5)


def test_train_test_csv_fits_statistics_on_train_rows_only(tmp_path, rng):
    n = 80
    v = rng.normal(size=n)
    cells = [("" if i % 7 == 0 else f"{v[i]:.6f}") for i in range(n)]
    y = (v > 0).astype(int)
    p = write_rows(tmp_path / "s.csv", ["v", "y"], [[c, t] for c, t in zip(cells, y)])
    train, test = D.train_test_csv(p, "y", test_size=0.25, random_state=3, missing="impute-mean")
    assert train.n_samples + test.n_samples == n
    assert len(np.intersect1d(train.rows, test.rows)) == 0
    tr_idx = train.rows - 2
    known = [float(cells[i]) for i in tr_idx if cells[i]]
    fill = train.preprocessing.columns[0]["fill"]
    assert fill == pytest.approx(np.mean(known))
    te_missing = [k for k, i in enumerate(test.rows - 2) if not cells[i]]
    assert te_missing and all(test.X[k, 0] == fill for k in te_missing)
    # separate test file: encoded with the training record
    q = write_rows(tmp_path / "t.csv", ["y", "v"], [[1, "0.5"], [0, ""]])
    tr2, te2 = D.train_test_csv(p, "y", test=q, missing="impute-mean")
    np.testing.assert_allclose(te2.X[:, 0], [0.5, tr2.preprocessing.columns[0]["fill"]])
    assert list(te2.y) == [1, 0]


def test_dataset_split(tmp_path):
    p = write_rows(tmp_path / "d.csv", ["x", "y"], [[i, "ab"[i % 2]] for i in range(40)])
    a, b = D.read_csv(p, target="y").split(0.25, random_state=1)
    assert (a.n_samples, b.n_samples) == (30, 10) and sorted(set(b.y)) == ["a", "b"]


# ----------------------------------------------------------------------------- bad input

def check(err, cls, file, row=None, column=None):
    assert isinstance(err, cls) and isinstance(err, D.DataError)
    assert os.path.basename(err.file) == os.path.basename(str(file))
    assert err.row == row and err.column == column
    text = str(err)
    assert os.path.basename(str(file)) in text and "\n" not in text
    if row is not None:
        assert f"row {row}" in text
    if column is not None:
        assert repr(column) in text
    assert err.to_dict()["text"] == text


def test_empty_and_blank_and_header_only(tmp_path):
    for name, content, cls in [("e.csv", "", D.EmptyFileError),
                               ("b.csv", "\n\n  \n", D.EmptyFileError),
                               ("h.csv", "a,b,c\n", D.HeaderOnlyError)]:
        p = write(tmp_path / name, content)
        with pytest.raises(cls) as e:
            D.read_csv(p)
        check(e.value, cls, p, row=1 if cls is D.HeaderOnlyError else None)


def test_ragged_rows(tmp_path):
    p = write(tmp_path / "r.csv", "a,b,c\n1,2,3\n4,5\n")
    with pytest.raises(D.RaggedRowError) as e:
        D.read_csv(p)
    check(e.value, D.RaggedRowError, p, row=3)
    p = write(tmp_path / "r2.csv", "a,b,c\n1,2,3\n4,5,6,7\n")
    with pytest.raises(D.RaggedRowError) as e:
        D.preview_csv(p)
    assert e.value.row == 3
    ok = D.read_csv(write(tmp_path / "ok.csv", "a,b\n1,2,\n3,4,\n"))   # trailing delimiters
    np.testing.assert_array_equal(ok.X, [[1, 2], [3, 4]])


def test_non_numeric_text_in_numeric_column(tmp_path, monkeypatch):
    monkeypatch.setattr(csv_read, "_BLOCK_BYTES", 16)   # the bad cell sits in a later block
    rows = [[i, i * 2] for i in range(10)] + [["oops", 1]] + [[i, i] for i in range(5)]
    p = write_rows(tmp_path / "n.csv", ["a", "b"], rows)
    with pytest.raises(D.NonNumericError) as e:
        D.read_csv(p)
    check(e.value, D.NonNumericError, p, row=12, column="a")
    assert "'oops'" in str(e.value)
    p2 = write(tmp_path / "dc.csv", "a,b\n1,2\n3,4\n\"1,5\",3\n")
    with pytest.raises(D.NonNumericError, match="decimal comma"):
        D.read_csv(p2)


def test_target_with_one_class(tmp_path):
    p = write_rows(tmp_path / "o.csv", ["x", "y"], [[i, "same"] for i in range(5)])
    with pytest.raises(D.SingleClassError) as e:
        D.read_csv(p, target="y")
    check(e.value, D.SingleClassError, p, column="y")


def test_all_values_missing(tmp_path):
    p = write(tmp_path / "m.csv", "a,b,y\n1,,0\n2,NA,1\n3,,0\n")
    with pytest.raises(D.AllMissingError) as e:
        D.read_csv(p, target="y", missing="impute-mean")
    check(e.value, D.AllMissingError, p, column="b")
    assert D.read_csv(p, target="y", ignore=["b"]).n_features == 1
    p2 = write(tmp_path / "m2.csv", "a,b\n1,\n,2\n")
    with pytest.raises(D.AllMissingError):
        D.read_csv(p2, missing="drop-rows")


@pytest.mark.parametrize("cell", ["inf", "-Infinity", "1e308", "-2.5e200"])
def test_infinite_and_huge_values(tmp_path, cell):
    p = write(tmp_path / "i.csv", f"a,b\n1,2\n3,{cell}\n")
    with pytest.raises(D.NonFiniteError) as e:
        D.read_csv(p)
    check(e.value, D.NonFiniteError, p, row=3, column="b")
    ds = D.read_csv(p, max_abs=np.inf) if "e" in cell and "inf" not in cell.lower() else None
    if ds is not None:
        assert ds.X[1, 1] == float(cell)


def test_duplicate_column_names(tmp_path):
    p = write(tmp_path / "d.csv", "a,b,a\n1,2,3\n")
    with pytest.raises(D.DuplicateColumnError) as e:
        D.read_csv(p)
    check(e.value, D.DuplicateColumnError, p, row=1, column="a")


def test_binary_file_and_unknown_column(tmp_path):
    p = write(tmp_path / "bin.csv", b"a,b\n\x00\x01\x02\n")
    with pytest.raises(D.DataError, match="binary"):
        D.read_csv(p)
    q = write(tmp_path / "c.csv", "Label,x\n1,2\n0,3\n")
    with pytest.raises(D.ColumnNotFoundError, match="did you mean 'Label'"):
        D.read_csv(q, target="label")
    with pytest.raises(D.DataError, match="not found"):
        D.read_csv(tmp_path / "nope.csv")


def test_high_cardinality_column(tmp_path):
    p = write_rows(tmp_path / "hc.csv", ["id", "y"], [[f"u{i}", i % 2] for i in range(60)])
    with pytest.raises(D.HighCardinalityError) as e:
        D.read_csv(p, target="y")
    check(e.value, D.HighCardinalityError, p, column="id")
    assert "ignore" in str(e.value)
    assert D.read_csv(p, target="y", max_categories=100).n_features == 60


def test_large_file_refused_without_reading(tmp_path):
    p = tmp_path / "big.csv"
    with open(p, "wb") as fh:          # a sparse 2 GB file: nothing is written to disk
        fh.write(b"a,b\n1,2\n")
        fh.truncate(2 * 10**9)
    with pytest.raises(D.FileTooLargeError) as e:
        D.read_csv(p)
    check(e.value, D.FileTooLargeError, p)
    assert "2.0 GB" in str(e.value) and "nrows" in str(e.value)
    with pytest.raises(D.FileTooLargeError):
        D.preview_csv(p)


def test_size_limit_and_streaming_first_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(csv_read, "_BLOCK_BYTES", 64)
    rows = [[i, 2 * i] for i in range(3000)]
    p = write_rows(tmp_path / "s.csv", ["a", "b"], rows)
    with pytest.raises(D.FileTooLargeError):
        D.read_csv(p, max_bytes=1000)
    ds = D.read_csv(p, max_bytes=1000, nrows=50)
    np.testing.assert_array_equal(ds.X, np.array(rows[:50], float))
    assert D.read_csv(p, max_bytes=None).n_samples == 3000


def test_preview_counts(tmp_path):
    rows = [["1", "a", ""], ["2", "", "x"], ["NA", "b", "y"], ["4", "a", "?"]]
    p = write_rows(tmp_path / "p.csv", ["n", "c", "t"], rows)
    pv = D.preview_csv(p, n_head=2)
    assert pv.n_rows == 4 and len(pv.head) == 2 and pv.complete
    n, c, t = pv.columns
    assert (n.kind, n.n_missing, n.n_numeric, n.min, n.max) == ("numeric", 1, 3, 1.0, 4.0)
    assert (c.kind, c.n_missing, c.n_distinct) == ("categorical", 1, 2)
    assert (t.kind, t.n_missing) == ("categorical", 2)
    assert json.loads(json.dumps(pv.to_dict()))["columns"][0]["name"] == "n"
    with pytest.raises(D.ColumnNotFoundError):
        pv.column("zz")


# ----------------------------------------------------------------------------- bundled samples

def test_samples_read_as_declared_and_regenerate_identically(tmp_path):
    import importlib.util
    samples = D.list_samples()
    assert {s["name"] for s in samples} == {"moons", "spirals", "sine", "friedman", "customers"}
    for s in samples:
        assert os.path.getsize(s["path"]) < 100_000
        ds = D.read_csv(s["path"], s["target"], **s["options"])
        assert ds.task == s["task"] and ds.n_samples == s["rows"]
        assert len(ds.preprocessing.file_columns) == s["columns"]
    spec = importlib.util.spec_from_file_location(
        "make_samples", os.path.join(D.samples_dir(), "make_samples.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.main(tmp_path)
    for s in samples:
        assert (tmp_path / s["file"]).read_bytes() == open(s["path"], "rb").read()
    assert (tmp_path / "samples.json").read_bytes() == \
        (D.samples_dir() / "samples.json").read_bytes()
