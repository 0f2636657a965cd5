"""The streaming reader's passes of 25d2084 / e85bba8 / 27fa399 under hostile cells, drawn
by hypothesis: texts that differ only by whitespace, case or unicode normalisation, empty and
missing-value tokens, Excel errors, numbers written as text ("1e3", "1.", ".5", "-0",
int32's bounds, 2**52, subnormals, infinities), and dictionaries that cross the interned
texts' limit between blocks.

Oracles: the typing of each block's whole dictionary by pyarrow (no KnownTexts), computed in
this process; np.unique / np.bincount of the codes; numpy's range, an int32 round trip of the
bits and the numbers' digits for block_stats' one pass; DistinctNumbers fed without ranges;
and for whole files pandas' read of the same file (the categories and the most frequent
number of each column) beside read_csv and the stream with the lookup turned off."""

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rwtool.data import _read as R
from rwtool.data._colstats import block_stats
from rwtool.data._dialect import NA_VALUES
from rwtool.data._distinct import DistinctNumbers

from .test_colstats import _shows_oracle

_NA = frozenset(NA_VALUES)

HOSTILE_TEXTS = ["a", " a", "a ", "A", "\u00e9", "e\u0301", "\u00a0a", "a\t", "", " ",
                 "NA", "nan", "NaN", "null", "#N/A", "#DIV/0!", " #DIV/0!", "1e3", "1E-2",
                 "1.", ".5", "-.5", "+1", "-0", "-0.0", "0", "0.0", "2147483647",
                 "-2147483648", "2147483648", "-2147483649", "inf", "-inf", "Infinity",
                 "1e308", "1e309", "5e-324", "1.234", "0x10", "1,5", "\u65e5\u672c", "x y",
                 "t1", "t2", "t3"]

_SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                     suppress_health_check=[HealthCheck.too_slow])


def _typed(texts, idx, column, known, count):
    vals, codes, seen = R._type_dictionary(pa.array(texts, pa.string()), [idx], ".", _NA,
                                           column._intern, known=known, count=count)
    return (vals.tobytes(), codes.tolist(), seen.error_rows.tolist(), seen.error_texts,
            seen.marks), codes, seen


@st.composite
def _blocks(draw):
    """A column's blocks: each a dictionary (distinct texts, first-occurrence order) and the
    cells' indices into it."""
    # a few texts of the hostile ones: met again in later blocks
    pool = draw(st.lists(st.sampled_from(HOSTILE_TEXTS), min_size=1, max_size=10, unique=True))
    pool += [f"u{i}" for i in range(draw(st.integers(0, 6)))]
    out = []
    for _ in range(draw(st.integers(1, 6))):
        texts = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=12, unique=True))
        idx = draw(st.lists(st.integers(0, len(texts) - 1), min_size=0, max_size=30))
        out.append((texts, np.array(idx, np.int32)))
    return out


@_SETTINGS
@given(blocks=_blocks(), max_vocab=st.sampled_from([1, 3, 8, 100]),
       known_max=st.sampled_from([2, 6, 1024]))
@example(blocks=[(["a", "b"], np.array([0, 1, 1], np.int32)),
                 (["b", "c"], np.array([1, 0], np.int32))], max_vocab=1, known_max=1024)
def test_known_texts_type_as_each_whole_dictionary(blocks, max_vocab, known_max):
    # the lookup against typing each block's whole dictionary: the same values (bits),
    # codes, Excel errors, interned texts and count of distinct texts; the gather's counts
    # against np.bincount of the codes written
    saved = R._KNOWN_MAX
    R._KNOWN_MAX = known_max
    try:
        mine, plain = R.Column("c", 0, max_vocab), R.Column("c", 0, max_vocab)
        known = R.KnownTexts(max_vocab)
        for texts, idx in blocks:
            a, codes, seen = _typed(texts, idx, mine, known.column(0), True)
            b, _, _ = _typed(texts, idx, plain, None, False)
            assert a == b
            want = np.bincount(codes + 2, minlength=len(seen.counts))
            np.testing.assert_array_equal(seen.counts, want[:len(seen.counts)])
            assert not want[len(seen.counts):].any()
        assert mine.vocab == plain.vocab and mine.n_distinct_text == plain.n_distinct_text
        assert len(known.column(0)[0]) <= known_max
    finally:
        R._KNOWN_MAX = saved


def test_each_text_typed_alone_equals_its_typing_among_others():
    # a text's value and code do not depend on the texts beside it in its block: each text
    # of the hostile pool typed alone (a fresh column) gives what it gets among all of them
    every = R.Column("c", 0, 1000)
    vals, codes, _ = R._type_dictionary(pa.array(HOSTILE_TEXTS, pa.string()),
                                        [np.arange(len(HOSTILE_TEXTS), dtype=np.int32)],
                                        ".", _NA, every._intern)
    for i, t in enumerate(HOSTILE_TEXTS):
        alone = R.Column("c", 0, 1000)
        v, c, _ = R._type_dictionary(pa.array([t], pa.string()),
                                     [np.zeros(1, np.int32)], ".", _NA, alone._intern)
        assert v.tobytes() == vals[i:i + 1].tobytes(), t
        assert (c[0] >= 0) == (codes[i] >= 0) and (c[0] < 0) <= (c[0] == codes[i]), t
        if c[0] >= 0:
            assert alone.vocab[c[0]] == every.vocab[codes[i]], t


HOSTILE_NUMBERS = [0.0, -0.0, 1.0, -1.0, 0.5, 2.5, 1.234, 0.25, 1e3, 1e-2, 2.0**31 - 1,
                   -2.0**31, 2.0**31, -2.0**31 - 1, 2.0**52 - 1, -(2.0**52 - 1), 2.0**52,
                   2.0**53 + 2, 1e308, -1e308, 5e-324, np.inf, -np.inf, np.nan, 7.0, 123.0]


@st.composite
def _number_blocks(draw):
    k = draw(st.integers(1, 5))
    widths = draw(st.lists(st.integers(1, 9), min_size=1, max_size=5))   # blocks of one row too
    cells = st.one_of(st.sampled_from(HOSTILE_NUMBERS),
                      st.integers(-2**31 - 3, 2**31 + 3).map(float),
                      st.floats(allow_nan=True, allow_infinity=True))
    blocks = [np.array(draw(st.lists(cells, min_size=k * w, max_size=k * w)),
                       np.float64).reshape(k, w) for w in widths]
    masks = [np.array(draw(st.lists(st.booleans(), min_size=w, max_size=w))) for w in widths]
    return blocks, masks


@_SETTINGS
@given(data=_number_blocks())
def test_block_stats_one_pass_against_numpy(data):
    # per block: the whole-number range (count -1 when a number is not whole or 2**52 and
    # past in magnitude), int32's exact round trip of the bits, and the decimal point
    # (carried over the blocks); over the blocks the counts, first infinity and magnitude
    blocks, masks = data
    k = blocks[0].shape[0]
    shows = np.zeros(k, bool)
    first_inf, max_abs = np.full(k, -1, np.int64), np.zeros(k)
    n_num, n_fin, total = np.zeros(k, np.int64), np.zeros(k, np.int64), np.zeros(k)
    line = 2
    for V, m in zip(blocks, masks):
        lines = np.arange(V.shape[1]) + line
        line += V.shape[1]
        ranges, narrow = np.full((k, 3), 9.0), np.zeros(k, bool)
        with np.errstate(over="ignore", invalid="ignore"):
            block_stats(V, lines, first_inf, max_abs, n_num, total, None, n_fin,
                        ranges=ranges, narrow=narrow, shows=shows)
        masked = np.full((k, 3), 9.0)
        block_stats(V, lines, np.full(k, -1, np.int64), np.zeros(k), np.zeros(k, np.int64),
                    rows=m, ranges=masked)
        for j in range(k):
            for got, x in ((ranges[j], V[j]), (masked[j], V[j][m])):
                x = x[~np.isnan(x)]
                whole = bool(np.all(np.isfinite(x)) and np.all(x == np.floor(x))
                             and np.all(np.abs(x) < 2.0**52))
                assert got[0] == (len(x) if whole else -1)
                if whole and len(x):
                    assert (got[1], got[2]) == (x.min(), x.max())
            with np.errstate(invalid="ignore"):
                back = V[j].astype(np.int32).astype(np.float64)
            fits = bool(np.all((V[j] >= -2.0**31) & (V[j] <= 2.0**31 - 1)))
            assert narrow[j] == (fits and back.tobytes() == V[j].tobytes()), V[j]
    every = np.hstack(blocks)
    for j in range(k):
        x = every[j][~np.isnan(every[j])]
        f = x[np.isfinite(x)]
        assert n_num[j] == len(x) and n_fin[j] == len(f)
        assert max_abs[j] == (np.abs(f).max() if len(f) else 0.0)
        inf_at = np.flatnonzero(np.isinf(every[j]))
        assert first_inf[j] == (inf_at[0] + 2 if len(inf_at) else -1)
        assert shows[j] == any(_shows_oracle(v) for v in every[j])


@_SETTINGS
@given(data=_number_blocks(), cap=st.sampled_from([0, 2, 5, 1000]))
def test_distinct_store_from_the_ranges_against_np_unique(data, cap):
    # the distinct store fed block_stats' ranges counts what it counts finding them itself,
    # and below the cap what np.unique counts (-0.0 as 0.0)
    blocks, masks = data
    k = blocks[0].shape[0]
    for use_mask in (False, True):
        a, b = DistinctNumbers(k, cap), DistinctNumbers(k, cap)
        for V, m in zip(blocks, masks):
            rows = m if use_mask else None
            ranges = np.full((k, 3), 9.0)
            block_stats(V, np.zeros(V.shape[1], np.int64), np.full(k, -1, np.int64),
                        np.zeros(k), np.zeros(k, np.int64), rows=rows, ranges=ranges)
            a.add(V, 0, None, rows, ranges)
            b.add(V, 0, None, rows)
        every = np.hstack([V[:, m] if use_mask else V for V, m in zip(blocks, masks)])
        for j in range(k):
            assert a.n_distinct[j] == b.n_distinct[j]
            x = every[j][~np.isnan(every[j])] + 0.0
            u, c = np.unique(x, return_counts=True)
            if len(u) <= cap:
                assert a.n_distinct[j] == len(u)
                got = a.of(j)
                np.testing.assert_array_equal(got[0], u)
                np.testing.assert_array_equal(got[1], c)
            else:
                assert a.overflowed(j)
