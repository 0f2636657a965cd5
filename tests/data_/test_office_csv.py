"""CSV files from real offices (issue 27): a case generator with hand-written expectations, run
against the three ways rwtool reads a training file, so that none of them can bring a case back.

Each case is a file built from cells (the generator writes the header, the rows and the bytes
in a given encoding), read options, and the expected outcome written by hand: the feature names
and the matrix the file means (the oracle is the person who wrote the cell "3,50 €" and meant
3.5), a note to say what was guessed, or the located error. The readers:

- ``read_csv`` (the API),
- ``scan_csv`` then ``iter_csv``, stacked (the reader of files larger than memory),
- ``rwtool train`` (the command, with its default 25 % holdout, so its reading of a split
  file is checked against the API's reading of the whole file), in memory and streamed.

Every case failed on main before issue 27's CSV work: Shift-JIS read as Latin-1, Excel error
values and currency suffixes one-hot encoded, "1.234" beside "0,5" read as 1.234, Indian
grouping one-hot encoded, a comment, "sep=" or UTF-32 file refused differently by each reader,
"(123)" one-hot encoded by the command, a trailing delimiter reported as a column "col4", a
",,y" header not found.
"""

import codecs
import json
import re

import numpy as np
import pytest

import rwtool.data as D
from rwtool import cli


def make(header, rows, *, sep=",", encoding="utf-8", before="", bom=b""):
    """The bytes of a CSV file: ``before`` (lines above the header), the header, the rows."""
    text = before + sep.join(header) + "\n" + "".join(sep.join(r) + "\n" for r in rows)
    return bom + text.encode(encoding)


def ok(names, X=None, note=None, y=None):
    return {"names": names, "X": X, "note": note, "y": y}


def err(cls, match, row=None, column=None):
    return {"error": cls, "match": match, "row": row, "column": column}


Y = [str(v) for v in (1, 2, 3, 4, 5, 6, 7, 8)]       # a regression target, 8 rows
CITIES = ["大阪", "東京", "大阪", "名古屋", "東京", "大阪", "東京", "名古屋"]
ONE_HOT = {"名古屋": [1, 0, 0], "大阪": [0, 1, 0], "東京": [0, 0, 1]}

CASES = [
    # -- encodings
    ("Shift-JIS categories", make(["k", "y"], zip(CITIES, Y), encoding="cp932"),
     ok(["k=名古屋", "k=大阪", "k=東京"], [ONE_HOT[c] for c in CITIES], note="Shift-JIS")),
    ("GB18030 categories",
     make(["k", "y"], zip(["北京", "上海", "广州", "深圳"] * 2, Y), encoding="gb18030"),
     ok(["k=上海", "k=北京", "k=广州", "k=深圳"], note="GB18030")),
    ("EUC-KR categories", make(["k", "y"], zip(["서울", "부산"] * 4, Y), encoding="cp949"),
     ok(["k=부산", "k=서울"], note="EUC-KR")),
    ("Windows-1251 categories",
     make(["k", "y"], zip(["Москва", "Киев"] * 4, Y), encoding="cp1251"),
     ok(["k=Киев", "k=Москва"], note="Windows-1251")),
    ("Windows-1252 categories",
     make(["k", "y"], zip(["Zürich", "Genève"] * 4, Y), encoding="cp1252"),
     ok(["k=Genève", "k=Zürich"], note="Windows-1252")),
    ("UTF-32 with its byte-order mark",
     make(["x", "y"], zip(Y, Y), encoding="utf-32-le", bom=codecs.BOM_UTF32_LE),
     ok(["x"], [[float(v)] for v in Y])),
    ("UTF-16 with its byte-order mark",
     make(["x", "y"], zip(Y, Y), encoding="utf-16-le", bom=codecs.BOM_UTF16_LE),
     ok(["x"], [[float(v)] for v in Y])),
    # -- Excel error values: missing cells of a numeric column, noted
    ("Excel error values", make(["x", "y"], zip(
        ["1.5", "#DIV/0!", "2.5", "#VALUE!", "3", "#REF!", "4", "#NAME?"], Y)),
     ok(["x"], [[1.5], [2.75], [2.5], [2.75], [3], [2.75], [4], [2.75]],
        note="4 Excel error value(s) (#DIV/0!, #NAME?, #REF!, #VALUE!; first on line 3)")),
    ("Excel error values, missing='error'", make(["x", "y"], zip(
        ["1.5", "2", "#NUM!", "3", "4", "5", "6", "7"], Y)),
     err(D.MissingValueError, "Excel error value '#NUM!'", row=4, column="x")),
    # -- currency, thousands, decimal marks, Indian grouping
    ("currency suffix, decimal comma", make(["x", "y"], zip(
        ['"3,50 €"', '"1 200 €"', '"4,00 €"', '"12,00 €"'] * 2, Y)),
     ok(["x"], [[3.5], [1200], [4], [12]] * 2, note="currency sign '€'")),
    ("currency prefix, thousands comma", make(["x", "y"], zip(
        ['"$1,200.50"', "$3", '"$10,000"', "$0.25"] * 2, Y)),
     ok(["x"], [[1200.5], [3], [10000], [0.25]] * 2, note="currency sign '$'")),
    ("ISO currency codes", make(["x", "y"], zip(
        ["EUR 1.200,50", "EUR 3", "EUR 0,25", "EUR 7"] * 2, Y), sep=";"),
     ok(["x"], [[1200.5], [3], [0.25], [7]] * 2, note="'EUR'")),
    ("CHF with apostrophes", make(["x", "y"], zip(
        ["CHF 1'234.50", "CHF 12.00", "CHF 3'000.00", "CHF 0.50"] * 2, Y)),
     ok(["x"], [[1234.5], [12], [3000], [0.5]] * 2, note="'CHF'")),
    ("dot thousands beside comma decimals", make(["x", "y"], zip(
        ["0,5", "1,25", "1.234", "7,5", "2,5", "3,75", "2.000", "9,5"], Y), sep=";"),
     ok(["x"], [[0.5], [1.25], [1234], [7.5], [2.5], [3.75], [2000], [9.5]],
        note="thousands separator '.', decimal comma")),
    ("Indian digit grouping", make(["x", "y"], zip(
        ['"1,23,456.7"', '"12,345.5"', '"2,00,000"', "5.5"] * 2, Y)),
     ok(["x"], [[123456.7], [12345.5], [200000], [5.5]] * 2,
        note="thousands separator ','")),
    ("decimal comma beside decimal points", make(["x", "y"], zip(
        ['"1,5"', "2.5", "3.25", "4.5", "5.5", "6.5", "7.5", "8.5"], Y)),
     err(D.NonNumericError, "decimal comma", row=2, column="x")),
    # -- what precedes the header
    ("a comment line first", make(["x", "y"], zip(Y, Y), before="# exported by X\n"),
     ok(["x"], [[float(v)] for v in Y], note="comment line")),
    ("Excel's sep= line first", make(["x", "y"], zip(Y, Y), sep=";", before="sep=;\n"),
     ok(["x"], [[float(v)] for v in Y], note="'sep=;'")),
    ("a '#' header is a header", make(["#id", "y"], zip(Y, Y)),
     ok(["#id"], [[float(v)] for v in Y])),
    # -- messages that said something else than what the reader saw
    ("every line ends with a delimiter", make(["a", "y", ""], zip(Y, Y, [""] * 8)),
     ok(["a"], [[float(v)] for v in Y], note="ends with a delimiter")),
    ("only the header ends with a delimiter", make(["a", "y", ""], zip(Y, Y)),
     err(D.RaggedRowError, "the header line ends with a delimiter", row=2)),
    ("unnamed leading columns over text", make(["", "", "y"], zip(Y, Y, Y)),
     ok(["col1", "col2"], [[float(v), float(v)] for v in Y])),
    ("a target of numbers and one word",
     make(["x", "y"], zip(Y, ["1", "1.0", "0", "1", "0", "yes", "0", "1"])),
     err(D.TargetError, "the target mixes numbers (7 cell(s): 0, 1) and text", row=7,
         column="y")),
    # text labels with a number written two ways: two classes as text, one as numbers
    ("a text target writing 1 and 1.0",
     make(["x", "y"], zip(Y, ["cat", "dog", "1", "cat", "1.0", "dog", "bird", "cat"])),
     err(D.TargetError, "the label '1' (first on line 4) is also written '1.0'", row=6,
         column="y")),
]
#: the cases whose target is read as labels by the command too (the others as values)
LABEL_CASES = ("a target of numbers and one word", "a text target writing 1 and 1.0")


def _check(expect, names, X, notes):
    assert names == expect["names"]
    if expect["X"] is not None:
        np.testing.assert_allclose(X, np.array(expect["X"], float), rtol=0, atol=0)
    if expect["note"] is not None:
        assert any(expect["note"] in n for n in notes), notes


def _options(name):
    # the Excel-error case is read with imputation so its matrix is checked; the others
    # keep the default (missing values refused)
    return {"missing": "impute-mean"} if name == "Excel error values" else {}


@pytest.fixture
def case_file(tmp_path, request):
    name, data, expect = request.param
    p = tmp_path / "case.csv"
    p.write_bytes(data)
    return name, p, expect


@pytest.mark.parametrize("case_file", CASES, ids=[c[0] for c in CASES], indirect=True)
def test_read_csv(case_file):
    name, p, expect = case_file
    if "error" in expect:
        with pytest.raises(expect["error"], match=re.escape(expect["match"])) as e:
            D.read_csv(p, "y", **_options(name))
        assert (e.value.row, e.value.column) == (expect["row"], expect["column"])
        return
    ds = D.read_csv(p, "y", **_options(name))
    _check(expect, ds.feature_names, ds.X, ds.notes)
    np.testing.assert_array_equal(ds.y, np.arange(1, 9))


@pytest.mark.parametrize("case_file", CASES, ids=[c[0] for c in CASES], indirect=True)
def test_streaming_reader(case_file):
    name, p, expect = case_file
    if "error" in expect:
        with pytest.raises(expect["error"], match=re.escape(expect["match"])) as e:
            scan = D.scan_csv(p, "y", **_options(name))
            list(D.iter_csv(p, scan.preprocessing, dialect=scan.dialect))
        # the stream locates the cell when it meets it in pass two, as read_csv does
        assert e.value.column == expect["column"]
        return
    scan = D.scan_csv(p, "y", **_options(name))
    chunks = list(D.iter_csv(p, scan.preprocessing, dialect=scan.dialect))
    X = np.vstack([c.X for c in chunks])
    _check(expect, scan.preprocessing.feature_names_out, X, scan.notes + chunks[0].notes)
    assert [int(v) for c in chunks for v in c.y] == list(range(1, 9))


@pytest.mark.slow
@pytest.mark.parametrize("stream", ["no", "yes"])
@pytest.mark.parametrize("case_file", CASES, ids=[c[0] for c in CASES], indirect=True)
def test_rwtool_train(case_file, stream, capsys):
    name, p, expect = case_file
    extra = ["--missing", "impute-mean"] if _options(name) else []
    # a regressor trains on any numeric target; a mixed target is read as the API reads it
    task = "auto" if name in LABEL_CASES else "regression"
    code = cli.main(["train", str(p), "--target", "y", "--task", task, "-T", "8",
                     "--no-bounds", "--no-progress", "--json", "--stream", stream, *extra])
    out, errtext = capsys.readouterr()
    assert "Traceback" not in out + errtext
    if "error" in expect:
        assert code != 0 and expect["match"] in errtext.replace("\n", " ")
        return
    assert code == 0, errtext
    doc = json.loads(out)
    assert doc["feature_names"] == expect["names"]
    if expect["note"] is not None:
        assert any(expect["note"] in n for n in doc["notes"]), doc["notes"]
    assert all(np.isfinite(v) for v in doc["metrics"].values() if isinstance(v, float))


@pytest.mark.slow
def test_rwtool_train_refuses_what_read_csv_refuses(tmp_path, capsys):
    # the file: its 2 training rows alone hold as much text as numbers, so a kind
    # decided on them one-hot encoded "(123)"; the kind is the whole file's
    p = tmp_path / "acct.csv"
    p.write_text("x,y\n(123),1\n200,2\n300,3\n")
    with pytest.raises(D.NonNumericError, match="accounting") as e:
        D.read_csv(p, "y")
    code = cli.main(["train", str(p), "--target", "y", "--task", "regression", "-T", "8",
                     "--no-progress"])
    out, errtext = capsys.readouterr()
    assert code != 0 and out == ""
    assert str(e.value) in " ".join(errtext.split())


@pytest.mark.slow
def test_streamed_training_prints_no_nan_metric(tmp_path, capsys):
    rng = np.random.default_rng(0)
    x = rng.normal(size=60)
    train = tmp_path / "train.csv"
    train.write_text("x,y\n" + "".join(f"{a!r},{2 * a!r}\n" for a in x.tolist()))
    test = tmp_path / "test.csv"             # a constant target: R^2 is undefined there
    test.write_text("x,y\n1.0,5\n2.0,5\n3.0,5\n")
    code = cli.main(["train", str(train), "--target", "y", "--test", str(test), "--stream",
                     "yes", "-T", "8", "--no-progress", "--json"])
    out, errtext = capsys.readouterr()
    assert code == 0, errtext
    doc = json.loads(out)
    assert "test_r2" not in doc["metrics"] and "test_mse" in doc["metrics"]
    assert any("R^2 is undefined on test.csv" in n for n in doc["notes"])
    code = cli.main(["train", str(train), "--target", "y", "--test", str(test), "--stream",
                     "yes", "-T", "8", "--no-progress"])
    out, _ = capsys.readouterr()
    assert code == 0 and "nan" not in out.lower()


def test_fixes_in_the_callers_words(tmp_path, capsys):
    # one error, three callers: the API's arguments, the command's flags, the app's controls
    from gui.logic.terms import APP_TERMS
    p = tmp_path / "empty_column.csv"
    p.write_text("a,b,y\n1,,0\n2,,1\n3,,0\n4,,1\n")
    with pytest.raises(D.AllMissingError) as e:
        D.read_csv(p, "y")
    assert str(e.value).endswith("ignore the column (ignore=['b'])")
    assert e.value.phrase(cli.CLI_TERMS).endswith("ignore the column (--ignore b)")
    assert e.value.phrase(APP_TERMS).endswith("ignore the column (untick b in the Data tab)")
    code = cli.main(["train", str(p), "--target", "y", "--no-progress"])
    _, errtext = capsys.readouterr()
    assert code != 0 and "(--ignore b)" in errtext and "ignore=" not in errtext
    # a missing value: the policy named as each caller sets it
    p.write_text("a,y\n1,0\n,1\n3,0\n4,1\n")
    with pytest.raises(D.MissingValueError) as e:
        D.read_csv(p, "y")
    assert "missing='drop-rows'" in str(e.value)
    assert "--missing drop-rows" in e.value.phrase(cli.CLI_TERMS)
    assert "Missing values = drop-rows in the Data tab" in e.value.phrase(APP_TERMS)
    # an error without settings in its fix reads the same for every caller
    p.write_text("a,y\n1,0\n(5),1\n3,0\n4,1\n")
    with pytest.raises(D.NonNumericError) as e:
        D.read_csv(p, "y")
    assert e.value.phrase(cli.CLI_TERMS) == e.value.phrase(APP_TERMS) == str(e.value)


@pytest.mark.parametrize("encoding", [v for _, v in
                                      __import__("gui.logic.read_options",
                                                 fromlist=["ENCODINGS"]).ENCODINGS if v])
def test_every_encoding_the_app_offers_reads_its_file(tmp_path, encoding):
    # the app's Reading options pass these names as encoding=; each must read its own bytes
    text = {"cp932": "大阪", "gb18030": "北京", "cp949": "서울", "cp1251": "Москва"}.get(
        encoding, "Zürich")
    p = tmp_path / "enc.csv"
    p.write_bytes(f"k,y\n{text},1\nB,2\n{text},3\n".encode(encoding))
    ds = D.read_csv(p, "y", encoding=encoding)
    assert ds.feature_names == ["k=B", f"k={text}"]
    scan = D.scan_csv(p, "y", encoding=encoding)
    assert scan.preprocessing.feature_names_out == ds.feature_names


@pytest.mark.slow
def test_encoding_option_of_the_command(tmp_path, capsys):
    p = tmp_path / "sjis.csv"
    p.write_bytes(make(["k", "y"], zip(CITIES, Y), encoding="cp932"))
    code = cli.main(["train", str(p), "--target", "y", "--task", "regression", "-T", "8",
                     "--no-bounds", "--no-progress", "--json", "--encoding", "shift_jis"])
    out, errtext = capsys.readouterr()
    assert code == 0, errtext
    doc = json.loads(out)
    assert doc["feature_names"] == ["k=名古屋", "k=大阪", "k=東京"]
    assert not any("encoding" in n for n in doc["notes"])     # stated, not guessed
    code = cli.main(["train", str(p), "--target", "y", "--encoding", "utf-8", "--no-progress"])
    _, errtext = capsys.readouterr()
    assert code != 0 and "not valid utf-8" in errtext and "--encoding cp932" in errtext


def test_notes_in_the_callers_words(tmp_path, capsys):
    from gui.logic.terms import app_words
    from rwtool.report import phrase
    p = tmp_path / "indexed.csv"
    p.write_bytes(make(["idx", "k", "y"], zip(Y, CITIES, Y), encoding="cp932"))
    ds = D.read_csv(p, "y")
    index = next(n for n in ds.notes if "numbers the rows" in n)
    assert index.endswith("ignore it (ignore=['idx'])")
    assert phrase(index, cli.CLI_TERMS).endswith("ignore it (--ignore idx)")
    assert app_words(index).endswith("ignore it (untick idx in the Data tab)")
    enc = next(n for n in ds.notes if "Shift-JIS" in n)
    assert "pass encoding=... if" in enc and "--encoding ... if" in phrase(enc, cli.CLI_TERMS)
    code = cli.main(["inspect", str(p)])
    out, _ = capsys.readouterr()
    assert code == 0 and "(--ignore idx)" not in out      # inspect knows no target yet
    code = cli.main(["inspect", str(p), "--json"])
    doc = json.loads(capsys.readouterr()[0])
    assert any("--encoding ..." in n for n in doc["notes"])


@pytest.mark.parametrize("decimal", [".", ","])
def test_text_labels_with_a_number_written_one_way_or_two(tmp_path, decimal):
    # "7" and "2.5" (or "2,5" in a decimal-comma file) written one way each are classes
    # named as the csv module reads them; a number written two ways is refused, located at
    # its second spelling
    import csv
    sep = "," if decimal == "." else ";"
    half = "2.5" if decimal == "." else "2,5"
    labels = ["cat", "dog", "7", "cat", half, "dog", "bird", "cat", "7", "dog"]
    p = tmp_path / "t.csv"
    p.write_text("x" + sep + "y\n" + "".join(f"{i}{sep}{v}\n" for i, v in enumerate(labels)))
    with open(p, newline="") as fh:
        want = [r[1] for r in list(csv.reader(fh, delimiter=sep))[1:]]
    ds = D.read_csv(p, "y", decimal=decimal)
    assert ds.y.tolist() == want
    assert ds.preprocessing.target["classes"] == sorted(set(want))
    scan = D.scan_csv(p, "y", decimal=decimal)
    assert scan.preprocessing == ds.preprocessing
    chunks = list(D.iter_csv(p, scan.preprocessing, dialect=scan.dialect))
    assert np.concatenate([c.y for c in chunks]).tolist() == want
    assert ds.preprocessing.apply_csv(p, decimal=decimal).y.tolist() == want
    # written two ways ("7" and "7.0", "2,5" and "2,50"), the file is refused in both readers
    for b in ("7.0", half + "0"):
        two = labels[:7] + [b] + labels[8:]          # a "cat" of line 9 becomes b
        p.write_text("x" + sep + "y\n" + "".join(f"{i}{sep}{v}\n" for i, v in enumerate(two)))
        for read in (lambda: D.read_csv(p, "y", decimal=decimal),
                     lambda: D.scan_csv(p, "y", decimal=decimal)):
            with pytest.raises(D.TargetError, match=re.escape(f"also written {b!r}")) as e:
                read()
            assert e.value.row == 9 and e.value.column == "y"
