"""The numba splitter of plain blocks (rwtool.data._split) against pyarrow.csv (issue 26).

The oracle is pyarrow.csv reading the same bytes under the same plan (float64 for the number
columns, the missing-value tokens as nulls, text for the others), which is what the reader
used for these blocks before: every number bit for bit (the sign of zero too), every text
cell the same string. The splitter must refuse (None) what it does not split as pyarrow does:
a cell of a number column that is not a plain number nor a missing-value token, a line of
another field count, an empty or blank line. That read_csv's outcome is unchanged on the
samples and on every awkward and office case is tests/data_/test_reader_equivalence.py's
check (its files' later blocks take this path); here, that they do take it.
"""

from pathlib import Path

import numpy as np
import pytest

import rwtool.data as D
from rwtool.data import _read as R
from rwtool.data._split import split_plain

pa = pytest.importorskip("pyarrow")
pacsv = pytest.importorskip("pyarrow.csv")

NA = sorted(D.NA_VALUES)


def _number(rng):
    x = float(rng.standard_normal() * 10.0 ** int(rng.integers(-30, 30)))
    k = int(rng.integers(0, 9))
    if k == 0:
        return repr(x)                                   # up to 17 digits: the unsure path
    if k == 1:
        return f"{x:.{int(rng.integers(1, 20))}g}"
    if k == 2:
        return str(int(rng.integers(-10**6, 10**6)))
    if k == 3:
        return f"{x:.{int(rng.integers(0, 8))}f}"
    if k == 4:
        return str(rng.choice(["1.", ".5", "+1", "-.5e-3", "1E+05", "00012", "-0", "+.5", "0.0",
                               "1e-400", "1.5e308", "2e308", "123456789012345678901234567890",
                               " 3", "4\t", " -2.5 ", "0e999", "1.e5", "-0.0e-5",
                               "0.00000000000000000000001", "9007199254740993",
                               "9007199254740992", "4.9406564584124654e-324"]))
    if k == 5:
        return str(rng.choice(NA))
    if k == 6:
        return f"{int(rng.integers(0, 10**18))}{int(rng.integers(0, 10))}.{int(rng.integers(0, 10**18))}"
    if k == 7:
        return f"{x:.17e}"
    return str(int(rng.integers(0, 100)))


def _text(rng, wide):
    if wide:                                            # many distinct: the tables grow
        return f"id{int(rng.integers(0, 50_000))}"
    return str(rng.choice(["red", " blue", "green ", "#N/A", "", "NA", "é", "naïve", "7", "2.5",
                           "#DIV/0!", "a b"]))


def _arrow(text: bytes, kinds):
    names = [f"f{j}" for j in range(len(kinds))]
    types = {n: pa.float64() if k == "n" else pa.string() for n, k in zip(names, kinds)}
    return pacsv.read_csv(
        pa.py_buffer(text), read_options=pacsv.ReadOptions(column_names=names),
        convert_options=pacsv.ConvertOptions(column_types=types, null_values=NA,
                                             strings_can_be_null=False,
                                             quoted_strings_can_be_null=False))


def _check_same(cells, table, kinds):
    for j, k in enumerate(kinds):
        if k == "n":
            ref = table.column(j).to_numpy(zero_copy_only=False)
            got = cells[j].to_numpy(zero_copy_only=False)
            assert got.dtype == np.float64
            same = ((ref == got) | (np.isnan(ref) & np.isnan(got))) & \
                (np.signbit(ref) == np.signbit(got))
            assert same.all(), [(ref[i], got[i]) for i in np.flatnonzero(~same)][:5]
        else:
            assert cells[j].dictionary_decode().to_pylist() == table.column(j).to_pylist()


@pytest.mark.parametrize("seed", range(40))
def test_split_is_pyarrow(seed):
    rng = np.random.default_rng(seed)
    kinds = list(rng.choice(["n", "t"], size=int(rng.integers(1, 7))))
    kinds[0] = "t"                      # a first cell that is never blank: no blank row
    wide = seed % 4 == 0
    n = int(rng.integers(1, 3000 if wide else 400))
    rows = []
    for _ in range(n):
        cells = [_number(rng) if k == "n" else _text(rng, wide) for k in kinds]
        if not (cells[0].strip() and cells[0].isascii()):
            cells[0] = "x"          # (a non-ASCII cell may be a Unicode space: refused)
        rows.append(",".join(cells))
    text = ("\n".join(rows) + ("\n" if seed % 2 else "")).encode("utf-8")
    cells = split_plain(np.frombuffer(text, np.uint8), n, len(kinds), list(range(len(kinds))),
                        {j for j, k in enumerate(kinds) if k == "n"}, ",", NA)
    assert cells is not None
    _check_same(cells, _arrow(text, kinds), kinds)
    for j, k in enumerate(kinds):       # each distinct text once, in order of first occurrence
        if k == "t":
            d = cells[j].dictionary.to_pylist()
            assert len(set(d)) == len(d)
            assert d == list(dict.fromkeys(cells[j].dictionary_decode().to_pylist()))


def test_columns_not_kept_are_skipped():
    text = b"1,a,x,2\n3,b,y,4\n"
    cells = split_plain(np.frombuffer(text, np.uint8), 2, 4, [1, 3], {3}, ",", NA)
    assert sorted(cells) == [1, 3]
    assert cells[1].dictionary_decode().to_pylist() == ["a", "b"]
    assert cells[3].to_pylist() == [2.0, 4.0]


@pytest.mark.parametrize("text,n", [
    (b"1,a\n\n2,b\n", 3),             # an empty line (pyarrow skips it: the scan locates it)
    (b"1,a\n2,b,c\n", 2),             # a ragged row
    (b"1,a\n2\n", 2),
    (b"inf,a\n", 1),                  # not a plain number: pyarrow decides
    (b"1_000,a\n", 1),
    (b"$5,a\n", 1),
    (b"#DIV/0!,a\n", 1),              # an Excel error in a number column: demoted by pyarrow
    (b" NA,a\n", 1),                  # a missing-value token is matched as written
    (b"NA,\n", 1),                    # a blank record: skipped by the scanning reader
    (b"NA, \t\n", 1),
    (b"1,a\n2,b\n", 1),               # more records than the block was said to hold
    (b"1,a\n", 2),                    # fewer
])
def test_refused(text, n):
    assert split_plain(np.frombuffer(text, np.uint8), n, 2, [0, 1], {0}, ",", NA) is None


def test_plain_blocks_take_the_splitter(tmp_path, monkeypatch):
    """A plain file read in blocks: every block after the first is split here, and the
    outcome is the text path's (the reader before the plan and the splitter)."""
    p = tmp_path / "m.csv"
    rng = np.random.default_rng(0)
    lines = ["id,x,k,y"] + [f"{i},{rng.standard_normal():.9g},{rng.choice(['a', 'b'])},"
                            f"{rng.choice(['yes', 'no'])}" for i in range(3000)]
    p.write_text("\n".join(lines) + "\n")
    split, taken = R.split_plain, []
    monkeypatch.setattr(R, "split_plain", lambda *a: taken.append(split(*a)) or taken[-1])
    monkeypatch.setattr(R, "_FIRST_BLOCK", 2000)
    monkeypatch.setattr(R, "_BLOCK_BYTES", 20000)
    ds = D.read_csv(p, "y", missing="impute-most-frequent")
    assert len(taken) > 3 and all(c is not None for c in taken)
    monkeypatch.setattr(R, "split_plain", lambda *a: None)
    ref = D.read_csv(p, "y", missing="impute-most-frequent")
    np.testing.assert_array_equal(ds.X, ref.X)
    np.testing.assert_array_equal(ds.y, ref.y)
    assert ds.preprocessing.to_dict() == ref.preprocessing.to_dict()
    monkeypatch.setattr(R, "typed_plan", lambda *a: None)
    text = D.read_csv(p, "y", missing="impute-most-frequent")
    np.testing.assert_array_equal(ds.X, text.X)
    assert ds.preprocessing.to_dict() == text.preprocessing.to_dict()


# ------------------------------------------------------------------ words of 8 bytes
# The splitter reads 8 bytes at a time while they are inside the block (the delimiters and
# line breaks found in a word, a text cell hashed and compared a word at a time), then byte by
# byte: every cell length at every offset of a word, near the block's end and away from it.

def _split_and_check(text: bytes, kinds):
    n = text.count(b"\n") + (0 if text.endswith(b"\n") else 1)
    cells = split_plain(np.frombuffer(text, np.uint8), n, len(kinds), list(range(len(kinds))),
                        {j for j, k in enumerate(kinds) if k == "n"}, ",", NA)
    assert cells is not None
    _check_same(cells, _arrow(text, kinds), kinds)
    for j, k in enumerate(kinds):
        if k == "t":
            d = cells[j].dictionary.to_pylist()
            assert d == list(dict.fromkeys(cells[j].dictionary_decode().to_pylist()))
    return cells


@pytest.mark.parametrize("newline", [True, False])
def test_every_cell_length_at_every_offset(newline):
    """Cells of 0-20 bytes after a lead cell of 1-9 bytes: each delimiter and line break
    falls at every position of a word; texts of one length differ in their first, middle or
    last byte (the same 8 or 16 bytes first), numbers have 1-19 digits and a point."""
    rows = []
    for lead in range(1, 10):
        for w in range(21):
            base = "abcdefghijklmnopqrstu"[:w]
            for var in range(3 if w else 1):
                t = base
                if w:
                    at = (0, w // 2, w - 1)[var]
                    t = base[:at] + "Z" + base[at + 1:]
                digits = "123456789012345678901"[:max(1, min(w, 19))]
                num = digits if w % 3 else digits[:1] + "." + digits[1:]
                rows.append(f"{'x' * lead},{t},{num},{t}")
    text = "\n".join(rows) + ("\n" if newline else "")
    cells = _split_and_check(text.encode(), ["t", "t", "n", "t"])
    assert len(cells[1].dictionary) == len({r.split(",")[1] for r in rows})


@pytest.mark.parametrize("w", range(21))
def test_a_cell_at_the_end_hashes_as_in_the_middle(w):
    """The same text read as words (mid-block) and byte by byte (the block's last bytes):
    one dictionary entry."""
    t = ("abcdefghijklmnopqrstu"[:w]).encode()     # never "zz"
    for tail in (b"", b"\n"):
        text = b"a," + t + b"\nb,zz\nc," + t + tail
        cells = _split_and_check(text, ["t", "t"])
        assert cells[1].indices.to_pylist() == [0, 1, 0]


@pytest.mark.parametrize("hash_mask", [0, 1, 3])
def test_hash_collisions(monkeypatch, hash_mask):
    """Every text cell's hash made equal (or one of 2, 4): the entries are told apart by
    their bytes, the table grows with every cell in one chain, the result is pyarrow's."""
    from rwtool.data import _split
    monkeypatch.setattr(_split, "_HASH_MASK", np.uint64(hash_mask))
    rng = np.random.default_rng(hash_mask)
    words = ["shared-prefix-" + "x" * int(k) + str(int(i)) for i, k in
             zip(rng.integers(0, 700, 3000), rng.integers(0, 12, 3000))]
    rows = [f"{w},{i},{w[-9:]}" for i, w in enumerate(words)]
    _split_and_check(("\n".join(rows)).encode(), ["t", "n", "t"])


@pytest.mark.parametrize("cell", ["1.", ".5", "-0", "+.5", "00012", "-0.0", "1234567890123456789",
                                  "12345678901234567890", "9007199254740993", "0.1234567890123",
                                  "1" + "0" * 22 + ".5", "0." + "0" * 22 + "1", "+", "-", ".",
                                  "1.2.3", "1e5", "1-2", "12 ", " 12", "NA", "",
                                  # runs of 8 digits read as a word, a byte next to "0"-"9"
                                  "12345678", "-12345678.87654321", "1234567/", "12345678:9",
                                  "0.1234567:", "/1234567", "99999999.9"])
def test_number_cells_read_on_the_way(cell):
    """A number cell parsed while it is split (sign, digits, a point) or, when it is more than
    that, whole as before: pyarrow's value, its missing cells, its refusals."""
    for last in (False, True):
        text = f"{cell},a\n7,b".encode() if not last else f"a,7\nb,{cell}".encode()
        kinds = ["n", "t"] if not last else ["t", "n"]
        n = 2
        cells = split_plain(np.frombuffer(text, np.uint8), n, 2, [0, 1],
                            {kinds.index("n")}, ",", NA)
        try:
            ref = _arrow(text, kinds)
        except pa.ArrowInvalid:
            assert cells is None
            continue
        assert cells is not None
        _check_same(cells, ref, kinds)


def test_a_block_of_many_windows():
    """A block of many 64 KiB windows of stops (their masks found a window at a time), with
    the tables grown mid-window (many distinct texts, many numbers for pyarrow's cast)."""
    rng = np.random.default_rng(7)
    rows = [f"id{int(rng.integers(0, 10**9))},{_number(rng)},{_text(rng, False) or 'x'},"
            f"{int(rng.integers(0, 10**int(rng.integers(1, 19))))}" for _ in range(20000)]
    text = "\n".join(rows).encode()
    assert len(text) > 10 * 65536
    _split_and_check(text, ["t", "n", "t", "n"])


_LOADED = r"""
import sys
import rwtool.data as D
from rwtool.data import _read as R, _split as S
D.load_kernels()
before = list(S._split.signatures)
R._FIRST_BLOCK, R._BLOCK_BYTES = 40, 300      # every file below has several blocks
for path in sys.argv[1:]:
    D.read_csv(path, "label", missing="impute-most-frequent")
    D.preview_csv(path)
print(len(before), len(S._split.signatures))
"""


def test_load_kernels_loads_what_a_big_file_uses(tmp_path):
    """load_kernels (which the app calls while it waits for its user) must load every kernel
    signature that the later blocks of a file of realistic size use: in a fresh process
    (numba's dispatcher holds no signature yet), reading such files after it adds none. A
    kernel it missed would be compiled on the user's first big file (3-5 s on a cold cache)."""
    import subprocess
    import sys
    rng = np.random.default_rng(0)
    files = []
    for name, cols in (("wide", "a,b,t,label"), ("one", "a,label")):
        lines = [cols]
        for i in range(400):
            row = [f"{rng.standard_normal():.4f}", str(i)] if name == "wide" else \
                  [f"{rng.standard_normal():.3f}"]
            if name == "wide":
                row.append("xyz"[i % 3] if i % 17 else "NA")
            lines.append(",".join(row + [str(i % 2)]))
        files.append(tmp_path / f"{name}.csv")
        files[-1].write_text("\n".join(lines) + "\n")
    root = Path(__file__).resolve().parents[2]       # this checkout's rwtool, not another
    out = subprocess.run([sys.executable, "-c", _LOADED, *map(str, files)], check=True,
                         capture_output=True, text=True, cwd=root).stdout.split()
    assert int(out[0]) >= 2 and out[0] == out[1], out
