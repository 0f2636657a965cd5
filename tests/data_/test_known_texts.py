"""Texts typed once per column (rwtool.data._read.KnownTexts): a block's dictionary of
categories looked up among the texts its column met in earlier blocks, only the new ones
typed. The oracle is the typing of the whole dictionary by pyarrow (the path without them):
the same values (bit for bit), codes, Excel error values, interned texts in the same order
and the same count of distinct texts past the column's limit; and the streaming reader's
record and chunks with and without them, computed in this process."""

import numpy as np
import pyarrow as pa
import pytest

import rwtool.data as D
from rwtool.data import _read as R
from rwtool.data._dialect import NA_VALUES

_NA = frozenset(NA_VALUES)

_DICTS = [["a", " b", "NA", "3.5", "#DIV/0!", "a "],
          ["b", "a", "x", "#N/A", "7", "-0"],
          ["a", "y", "z", "w", "3.5", " x"],             # past max_vocab=4: the overflow slot
          ["z", "v", "a", "#DIV/0!", "", "nan"],
          ["b", "a", "a ", "x"]]                          # all known


def _typed(dictionary, idx, column, known):
    vals, codes, seen = R._type_dictionary(pa.array(dictionary, pa.string()), [idx], ".",
                                           _NA, column._intern, known=known)
    return vals.tobytes(), codes.tolist(), seen.error_rows.tolist(), seen.error_texts, \
        seen.marks


@pytest.mark.parametrize("max_vocab", [4, 100])
def test_known_texts_type_as_the_whole_dictionary(max_vocab):
    rng = np.random.default_rng(max_vocab)
    mine, plain = R.Column("c", 0, max_vocab), R.Column("c", 0, max_vocab)
    known = R.KnownTexts(max_vocab)
    for texts in _DICTS * 2:
        idx = rng.integers(0, len(texts), 40)
        assert _typed(texts, idx, mine, known.column(0)) == _typed(texts, idx, plain, None)
    assert mine.vocab == plain.vocab and mine._lookup == plain._lookup
    assert mine.n_distinct_text == plain.n_distinct_text
    remembered = known.column(0)[0]
    assert "a" in remembered and "NA" in remembered and "#DIV/0!" in remembered
    if max_vocab == 4:          # texts past the limit are typed again each time, never kept
        assert not {"w", "v"} & set(remembered)


def test_not_used_with_a_decimal_comma_a_null_or_too_many_texts(monkeypatch):
    known = ({}, 10)
    d = pa.array(["a", "b"])
    assert R._type_known(d, ",", _NA, lambda t: np.zeros(len(t), np.int32), known) is None
    assert R._type_known(pa.array(["a", None]), ".", _NA, None, known) is None
    monkeypatch.setattr(R, "_KNOWN_MAX", 1)
    assert R._type_known(d, ".", _NA, lambda t: np.zeros(len(t), np.int32), known) is None
    assert known[0] == {}


def _stream(path, options):
    scan = D.scan_csv(path, moments=False, block_bytes=600, **options)
    chunks = [(c.X.tobytes(), None if c.y is None else c.y.tolist(), c.rows.tolist(),
               [str(n) for n in c.notes]) for c in D.iter_csv(path, scan, block_bytes=600)]
    out = scan.preprocessing, scan.n_rows, [str(n) for n in scan.notes], chunks
    scan.close()
    return out


@pytest.mark.parametrize("missing", ["impute-most-frequent", "impute-mean"])
def test_streamed_record_and_chunks_unchanged(tmp_path, monkeypatch, missing):
    # many blocks of categories with stray spaces, missing-value tokens, Excel errors,
    # numbers among the texts and a text column past its interned texts' limit
    rng = np.random.default_rng(7)
    cats = ["red", " red", "blue", "NA", "#VALUE!", "3", "green ", "", "teal"]
    rows = [f"{rng.choice(cats)},{rng.integers(0, 9)},t{rng.integers(0, 60)},"
            f"{rng.choice(['a', 'b', 'c'])}" for _ in range(1500)]
    p = tmp_path / "k.csv"
    p.write_text("c,x,id,y\n" + "\n".join(rows) + "\n")
    options = {"target": "y", "missing": missing, "max_categories": 500,
               "handle_unknown": "ignore"}
    monkeypatch.setattr(D._stream, "_MAX_VOCAB", 40)
    with_known = _stream(p, options)
    monkeypatch.setattr(R, "_KNOWN_MAX", 0)          # every dictionary typed whole
    assert _stream(p, options) == with_known


@pytest.mark.parametrize("known", [False, True])
def test_dictionary_counts_its_codes_on_the_way(known):
    # the cells per code that the streaming summaries count, from the gather that writes
    # the codes (parts one after the other): np.bincount of the codes written
    rng = np.random.default_rng(3)
    column = R.Column("c", 0, 100)
    memo = R.KnownTexts(100).column(0) if known else None
    for texts in _DICTS:
        parts = [rng.integers(0, len(texts), n) for n in (0, 17, 300)]
        _, codes, seen = R._type_dictionary(pa.array(texts, pa.string()), parts, ".", _NA,
                                            column._intern, known=memo, count=True)
        assert R._type_dictionary(pa.array(texts, pa.string()), parts, ".", _NA,
                                  column._intern)[2].counts is None      # not asked: none
        want = np.bincount(codes + 2)
        assert seen.counts.dtype == np.int64
        np.testing.assert_array_equal(seen.counts[:len(want)], want)
        assert not seen.counts[len(want):].any()
