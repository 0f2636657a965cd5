"""The streaming reader's pass two served from pass one's typed blocks (issue 26, target 2).

``scan_csv`` keeps the typed blocks of a file whose typed size fits in ``keep_bytes``, and
``iter_csv(path, scan)`` encodes them instead of reading the file again. The reference is the
second read itself, ``iter_csv(path, scan.preprocessing, dialect=scan.dialect)``, which reads
and types the file block by block as before: on the bundled samples, every awkward and office
case of tests/data_, hostile files (Excel errors, text in a numeric column, missing targets,
more distinct texts than a column interns, files changed between the passes) and generated
files in many blocks, both give the same outcome: the same chunks (X, y, rows and notes, bit
for bit: both computed in this process) or the same located error. Stacked, the chunks equal
``read_csv``'s X (the independent reading of the whole file).
"""

import io
import os
import sys

import numpy as np
import pytest

import rwtool.data as D
from rwtool.data import _stream as S

from .test_awkward_csv import CASES as AWKWARD
from .test_office_csv import CASES as OFFICE


def _error(exc):
    return ("error", type(exc), getattr(exc, "row", None), getattr(exc, "column", None),
            str(exc))


def _chunks(path, scan, served, **iter_options):
    """Pass two's outcome: the chunks, or the error."""
    how = scan if served else scan.preprocessing
    try:
        return ("ok", [(c.X, c.y, c.rows, [str(n) for n in c.notes], c.feature_names)
                       for c in D.iter_csv(path, how, dialect=scan.dialect, **iter_options)])
    except (D.DataError, ValueError) as exc:
        return _error(exc)


def _same(a, b):
    assert a[0] == b[0], (a, b)
    if a[0] == "error":
        assert a[1:] == b[1:]
        return
    assert len(a[1]) == len(b[1])
    for (xa, ya, ra, na, fa), (xb, yb, rb, nb, fb) in zip(a[1], b[1]):
        assert xa.dtype == xb.dtype and xa.shape == xb.shape and xa.tobytes() == xb.tobytes()
        assert (ya is None) == (yb is None)
        if ya is not None:
            assert ya.dtype == yb.dtype
            np.testing.assert_array_equal(ya, yb)
        np.testing.assert_array_equal(ra, rb)
        assert na == nb and fa == fb


def _both(path, options, block_bytes=None, expect_kept=None, min_kept=0):
    """Scan ``path``; pass two served and read again must agree. Returns (scan, outcome).
    ``expect_kept``, ``min_kept``: whether the scan kept blocks, how many at least (checked
    before pass two: the read given the record lets go of those in memory)."""
    more = {} if block_bytes is None else {"block_bytes": block_bytes}
    try:
        scan = D.scan_csv(path, moments=False, **options, **more)
    except (D.DataError, ValueError) as exc:
        return None, _error(exc)
    if expect_kept is not None:
        assert bool(scan._kept.blocks) is expect_kept
    assert len(scan._kept.blocks) >= min_kept
    served = _chunks(path, scan, True, **more)
    _same(served, _chunks(path, scan, False, **more))
    return scan, served


def _stacked_equals_read_csv(path, options, outcome):
    """The chunks stacked against read_csv on the whole file."""
    full = D.read_csv(path, **options)
    X = np.vstack([c[0] for c in outcome[1]])
    if options.get("missing") == "impute-mean":
        # the fill is a mean summed block by block here, by np.mean there: a few ulps apart
        np.testing.assert_allclose(X, full.X, rtol=1e-14, atol=0)
    else:
        np.testing.assert_array_equal(X, full.X)
    np.testing.assert_array_equal(np.concatenate([c[2] for c in outcome[1]]), full.rows)
    if full.y is not None:
        np.testing.assert_array_equal(np.concatenate([c[1] for c in outcome[1]]), full.y)


SAMPLES = [(s["name"], s["path"], {"target": s["target"], **s["options"]})
           for s in D.list_samples()]


@pytest.mark.parametrize("name,path,options", SAMPLES, ids=[s[0] for s in SAMPLES])
@pytest.mark.parametrize("block_bytes", [None, 4096])
def test_samples(name, path, options, block_bytes):
    for more in ({}, {"missing": "impute-most-frequent"}):
        scan, out = _both(path, {**options, **more}, block_bytes, expect_kept=True)
        assert out[0] == "ok"
        _stacked_equals_read_csv(path, {**options, **more}, out)


@pytest.mark.parametrize("name,text,options,expect", AWKWARD, ids=[c[0] for c in AWKWARD])
def test_awkward_cases(tmp_path, name, text, options, expect):
    p = tmp_path / "case.csv"
    p.write_bytes(text.encode("utf-8"))
    options = {k: v for k, v in options.items() if k != "nrows"}   # read_csv's alone
    _both(p, options)
    _both(p, options, block_bytes=64)


@pytest.mark.parametrize("name,data,expect", OFFICE, ids=[c[0] for c in OFFICE])
def test_office_cases(tmp_path, name, data, expect):
    p = tmp_path / "case.csv"
    p.write_bytes(data)
    for options in ({"target": "y"}, {"target": "y", "missing": "impute-most-frequent"}):
        _both(p, options)
        _both(p, options, block_bytes=64)


def _mixed(path, n, rng, extra=()):
    """n rows of numbers, categories, missing cells and a class target; ``extra``: (row, line)
    replacements (hostile cells)."""
    lines = ["id,x,k,z,y"]
    for i in range(n):
        x = "" if i % 17 == 5 else f"{rng.standard_normal():.6g}"
        k = ["red", "green", "blue", "grey"][int(rng.integers(0, 4))]
        z, y = int(rng.integers(0, 7)), "yes" if rng.random() < 0.4 else "no"
        lines.append(f"{i},{x},{k},{z},{y}")
    for row, text in extra:
        lines[row] = text
    path.write_text("\n".join(lines) + "\n")
    return path


HOSTILE = [
    ("clean", ()),
    ("missing targets", ((10, "9,0.5,red,1,"), (900, "899,1.5,blue,2,"))),
    ("Excel errors", ((7, "6,#DIV/0!,red,1,no"), (950, "949,#N/A,grey,3,yes"))),
    ("text in a numeric column", ((800, "799,abc,red,1,no"),)),
    ("a quoted cell with a line break", ((400, '399,0.5,"re\nd",1,no'),)),
    ("numbers in the category column", ((3, "2,0.5,7,1,no"), (700, "699,0.5,8.5,1,no"))),
    ("a number among the class labels", ((500, "499,0.5,red,1,1"),)),
]


@pytest.mark.parametrize("name,extra", HOSTILE, ids=[h[0] for h in HOSTILE])
@pytest.mark.parametrize("missing", ["error", "impute-mean", "impute-most-frequent",
                                     "drop-rows"])
def test_hostile_files_in_many_blocks(tmp_path, name, extra, missing):
    p = _mixed(tmp_path / "m.csv", 1000, np.random.default_rng(3), extra)
    options = {"target": "y", "missing": missing}
    scan, out = _both(p, options, block_bytes=997, min_kept=11)
    if out[0] == "ok":
        assert len(out[1]) > 10
        _stacked_equals_read_csv(p, options, out)


@pytest.mark.parametrize("missing", ["error", "impute-mean", "impute-most-frequent"])
def test_pass_one_never_reads_an_unwritten_row(tmp_path, monkeypatch, missing):
    # pass one types as read_csv does: a column of categories with no number in a block
    # leaves its row of values unwritten. Filled with numbers here (what fresh memory may
    # hold), the record and the chunks must not change
    p = _mixed(tmp_path / "m.csv", 1500, np.random.default_rng(6),
               ((30, "29,0.5,7,1,no"),))               # one number among the categories
    options = {"target": "y", "missing": missing}
    clean, ref = _both(p, options, block_bytes=997)
    real = S.type_block

    def dirty(*a, **k):
        tb = real(*a, **k)
        for kk in tb.unwritten:
            tb.values[kk] = 12345.5
        return tb

    monkeypatch.setattr(S, "type_block", dirty)
    for keep in ({}, {"keep_bytes": 1, "spill_dir": tmp_path}):
        scan, out = _both(p, {**options, **keep}, block_bytes=997)
        _same(out, ref)
        if out[0] == "ok":       # the same record as the scan whose rows were NaN
            assert scan.preprocessing.to_dict() == clean.preprocessing.to_dict()
            scan.close()
    assert missing != "error" or ref[0] == "error"


def test_pass_one_parses_numbers_into_the_kept_blocks(tmp_path, monkeypatch):
    # past the first block, the splitter parses a plain block's numbers straight into the
    # matrix pass one keeps (no copy); the chunks are a second read's, bit for bit
    from rwtool.data import _read
    p = _mixed(tmp_path / "m.csv", 3000, np.random.default_rng(7))
    real, outs = _read.split_plain, []

    def spy(*a, **k):
        outs.append(a[-1] if len(a) == 8 else k.get("out"))
        return real(*a, **k)

    monkeypatch.setattr(_read, "split_plain", spy)
    scan, out = _both(p, {"target": "y", "missing": "impute-mean"}, block_bytes=4096,
                      min_kept=10)
    assert out[0] == "ok"
    given = [o for o in outs if o is not None]
    assert len(given) >= 10
    kept = [tb.values for _, tb in scan._kept.blocks]
    assert sum(any(v is g for g in given) for v in kept) >= len(kept) - 1   # all but the first
    _stacked_equals_read_csv(p, {"target": "y", "missing": "impute-mean"}, out)


def test_moments_from_the_kept_blocks(tmp_path):
    """scan_csv(moments=True) reads its moments from the kept blocks: the same bits."""
    p = _mixed(tmp_path / "m.csv", 3000, np.random.default_rng(4))
    a = D.scan_csv(p, "y", missing="impute-mean", block_bytes=2048)
    b = D.scan_csv(p, "y", missing="impute-mean", block_bytes=2048, keep_bytes=0,
                   spill_dir=False)
    c = D.scan_csv(p, "y", missing="impute-mean", block_bytes=2048, keep_bytes=0,
                   spill_dir=tmp_path)
    assert a._kept.blocks and not b._kept.blocks and c.spill_bytes
    for s in (b, c):
        assert a.mean.tobytes() == s.mean.tobytes() and a.std.tobytes() == s.std.tobytes()
    X = D.read_csv(p, "y", missing="impute-mean").X
    np.testing.assert_allclose(a.mean, X.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(a.std, X.std(axis=0), rtol=1e-10)


def test_budget_bounds_what_pass_one_holds(tmp_path, monkeypatch):
    """A file whose typed blocks exceed keep_bytes keeps none in memory (spilled, or with
    spill_dir=False read again: the same chunks), and pass one never holds more than
    keep_bytes of them in memory, whatever the block size."""
    p = _mixed(tmp_path / "m.csv", 5000, np.random.default_rng(5))
    held = []
    add = S._Kept.add

    def spy(self, block, tb, *narrow):
        add(self, block, tb, *narrow)
        held.append(sum(b[0].nbytes + b[1].values.nbytes
                        + sum(c.nbytes for c in b[1].codes.values())
                        for b in self.blocks if isinstance(b, tuple)))     # not spilled

    monkeypatch.setattr(S._Kept, "add", spy)
    options = {"target": "y", "missing": "impute-most-frequent"}
    whole = D.scan_csv(p, moments=False, block_bytes=4096, **options)
    need = max(held)                  # the whole file's typed blocks
    assert whole._kept.blocks and need > 5000 * 8 * 5
    for budget in (need // 7, need // 2, need - 1):
        for spill_dir in (tmp_path, False):
            held.clear()
            scan, out = _both(p, {**options, "keep_bytes": budget, "spill_dir": spill_dir},
                              block_bytes=4096, expect_kept=bool(spill_dir))
            assert max(held) <= budget
            assert bool(scan.spill_bytes) is bool(spill_dir) and not scan._kept.in_memory()
            _stacked_equals_read_csv(p, options, out)
    # kept while the blocks read so far, scaled to the file, fit: an early block's estimate
    # may overshoot the whole by its rows' share of the header and the bytes per row
    _both(p, {**options, "keep_bytes": 2 * need}, block_bytes=4096, expect_kept=True)


def test_more_texts_than_a_column_interns(tmp_path, monkeypatch):
    """A column past the interned texts' limit shares one code for the rest: not kept."""
    monkeypatch.setattr(S, "_MAX_VOCAB", 50)
    p = tmp_path / "t.csv"
    p.write_text("k,x,y\n" + "".join(f"t{i % 80},{i},{i % 2}\n" for i in range(400)))
    scan, out = _both(p, {"target": "y", "max_categories": 300, "handle_unknown": "ignore"},
                      block_bytes=512, expect_kept=False)
    assert out[0] == "ok"


def test_a_changed_file_is_read_again(tmp_path):
    """Pass two never serves blocks of a file that changed since the scan, nor to a pass
    with another block size, dialect or file."""
    p = _mixed(tmp_path / "m.csv", 500, np.random.default_rng(6))
    q = _mixed(tmp_path / "q.csv", 500, np.random.default_rng(7))
    scan = D.scan_csv(p, "y", moments=False, block_bytes=1024)
    kept = scan._kept
    src = S.open_source(p)
    assert kept.serves(src, scan.dialect, 1024)
    assert not kept.serves(src, scan.dialect, 2048)
    assert not kept.serves(S.open_source(q), scan.dialect, 1024)
    _same(_chunks(q, scan, True, block_bytes=1024), _chunks(q, scan, False, block_bytes=1024))
    text = p.read_text().replace("red", "rod")          # same size, new contents
    p.write_text(text)
    os.utime(p, ns=(1, 1))
    assert not kept.serves(S.open_source(p), scan.dialect, 1024)
    out = _chunks(p, scan, True, block_bytes=1024)
    assert out[0] == "error" and out[1] is D.UnseenCategoryError
    _same(out, _chunks(p, scan, False, block_bytes=1024))


def test_standard_input_is_served(monkeypatch):
    text = "a,k,y\n" + "".join(f"{i},{'abc'[i % 3]},{i % 2}\n" for i in range(200))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    scan = D.scan_csv("-", "y", moments=False, block_bytes=256)
    assert len(scan._kept.blocks) > 3
    _same(_chunks(scan.source, scan, True, block_bytes=256),
          _chunks(scan.source, scan, False, block_bytes=256))
    X = np.vstack([c.X for c in D.iter_csv(scan.source, scan, block_bytes=256)])
    np.testing.assert_array_equal(X[:, 0], np.arange(200))
