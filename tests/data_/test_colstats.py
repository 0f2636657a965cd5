"""rwtool.data._colstats.block_stats against numpy: the streaming summaries' per-column counts,
first infinite number, largest finite magnitude and sum, over every cell or a row mask, and
carried across blocks. Counts, lines and magnitudes are exact; the compensated sum is compared
with math.fsum (the exactly rounded sum) to a few units in the last place of the sum of
magnitudes, the bound of Neumaier's summation."""

import math

import numpy as np
import pytest

from rwtool.data._colstats import block_stats


def _block(rng, k, n):
    V = rng.standard_normal((k, n)) * 10.0 ** rng.integers(-3, 8, (k, 1))
    V[rng.random((k, n)) < 0.1] = np.nan             # no number here
    V[rng.random((k, n)) < 0.01] = np.inf
    V[rng.random((k, n)) < 0.01] = -np.inf
    V[0] = np.nan                                      # a column with no number
    return V


@pytest.mark.parametrize("masked", [False, True])
def test_block_stats_against_numpy(rng, masked):
    k, n, blocks = 7, 3000, 3
    V = _block(rng, k, n)
    lines = np.arange(n) + 2
    rows = rng.random(n) < 0.7 if masked else np.ones(n, bool)
    first_inf = np.full(k, -1, np.int64)
    max_abs = np.zeros(k)
    num = np.zeros(k, np.int64)
    fin = np.zeros(k, np.int64)
    total = np.zeros(k)
    for part in np.array_split(np.arange(n), blocks):       # added to across the blocks
        block_stats(V[:, part], lines[part], first_inf, max_abs, num, total,
                    rows[part] if masked else None, fin)
    for j in range(k):
        x = V[j][rows]
        xn = x[~np.isnan(x)]
        xf = xn[np.isfinite(xn)]
        assert num[j] == len(xn) and fin[j] == len(xf)
        inf_lines = lines[rows][np.isinf(x)]
        assert first_inf[j] == (inf_lines[0] if len(inf_lines) else -1)
        assert max_abs[j] == (np.abs(xf).max() if len(xf) else 0.0)
        assert abs(total[j] - math.fsum(xf)) <= 4 * np.finfo(float).eps * np.abs(xf).sum()


def test_sums_skipped_and_magnitude_carried():
    V = np.array([[1.0, -5.0, np.nan], [np.inf, 2.0, -np.inf]])
    first_inf, max_abs = np.array([-1, 9]), np.array([7.0, 0.0])
    num, fin = np.array([1, 0]), np.zeros(2, np.int64)
    block_stats(V, np.array([4, 5, 6]), first_inf, max_abs, num, n_fin=fin)
    assert num.tolist() == [3, 3] and fin.tolist() == [2, 1]
    assert first_inf.tolist() == [-1, 9]              # a line already found is kept
    assert max_abs.tolist() == [7.0, 2.0]             # the larger of before and this block


def test_skipped_columns_are_not_read():
    # a skipped row (an unwritten column of categories) counts as a row of NaN, whatever
    # its memory holds
    rng = np.random.default_rng(3)
    V = rng.standard_normal((4, 50))
    V[1, 7] = np.inf
    skip = np.array([False, True, False, True])
    W = V.copy()
    W[skip] = np.nan
    out = []
    for M, s in ((V, skip), (W, None)):
        first_inf, max_abs = np.full(4, -1, np.int64), np.zeros(4)
        num, fin, total = np.zeros(4, np.int64), np.zeros(4, np.int64), np.zeros(4)
        block_stats(M, np.arange(50) + 2, first_inf, max_abs, num, total, None, fin, s)
        out.append((first_inf.tolist(), max_abs.tolist(), num.tolist(), fin.tolist(),
                    total.tobytes()))
    assert out[0] == out[1] and out[1][2] == [50, 0, 50, 0]
    from rwtool.data._read import shows_decimal_point
    V[:, 0] = 0.25                                     # every row shows a decimal point
    assert shows_decimal_point(V, axis=1, skip=skip).tolist() == [True, False, True, False]
    assert shows_decimal_point(V, axis=1).tolist() == [True] * 4


def _shows_oracle(v):
    """Whether a number shows that its dot is a decimal point, from its decimal digits: not
    whole, and not at most three fraction digits after one to three whole ones ("1.234" may
    be a thousands dot, "2.5" may have been written "2.500")."""
    if not np.isfinite(v) or v == np.floor(v):
        return False
    text = repr(abs(float(v)))
    if "e" in text:
        return True
    whole, frac = text.split(".")
    return not (len(frac) <= 3 and 1 <= len(whole) <= 3 and whole != "0")


@pytest.mark.parametrize("masked", [False, True])
def test_ranges_narrow_and_points_in_the_same_pass(rng, masked):
    # what the distinct store, the spill and the decimal marks each read a block for, found
    # in block_stats' pass: against numpy's range, an int32 round trip of the bits and the
    # numbers' decimal digits
    k, n = 12, 400
    V = rng.integers(-50, 50, (k, n)).astype(float)
    V[1] = rng.integers(-2**31, 2**31, n)                        # int32's whole range
    V[1, :2] = -2.0**31, 2.0**31 - 1
    V[2, 7] = 2.0**31                                             # one past int32
    V[3, 9] = -0.0                                                # whole, but not int32's bits
    V[4, 3] = np.nan                                              # no number here
    V[5, 5] = np.inf
    V[6, 11] = 0.5                                                # one fraction
    V[7] = rng.standard_normal(n)
    V[8] = 2.0**52 + rng.integers(0, 9, n)                        # whole, past exact offsets
    V[9, ::3] = 1.234                                             # a thousands dot, maybe
    V[10] = np.nan
    V[11, 17] = -2.0**52                                          # exactly 2**52 in magnitude
    lines = np.arange(n) + 2
    rows = rng.random(n) < 0.6 if masked else None
    ranges = np.full((k, 3), 7.0)
    narrow = None if masked else np.zeros(k, bool)
    shows = None if masked else np.zeros(k, bool)
    block_stats(V, lines, np.full(k, -1, np.int64), np.zeros(k), np.zeros(k, np.int64),
                rows=rows, ranges=ranges, narrow=narrow, shows=shows)
    for j in range(k):
        x = V[j] if rows is None else V[j][rows]
        x = x[~np.isnan(x)]
        whole = bool(np.all(np.isfinite(x)) and np.all(x == np.floor(x))
                     and np.all(np.abs(x) < 2.0**52))
        assert ranges[j, 0] == (len(x) if whole else -1), j
        if whole and len(x):
            assert (ranges[j, 1], ranges[j, 2]) == (x.min(), x.max())
        if narrow is not None:
            with np.errstate(invalid="ignore"):
                back = V[j].astype(np.int32).astype(np.float64)
            assert narrow[j] == (back.tobytes() == V[j].tobytes()), j
            assert shows[j] == any(_shows_oracle(v) for v in V[j]), j
    assert narrow is None or narrow[0] and narrow[1] and not narrow[2:].any()


def test_shows_once_set_stays_and_rows_must_be_all():
    V = np.array([[1.0, 2.0], [0.25, 3.0]])
    shows = np.array([True, False])                   # a block before showed column 0's
    block_stats(V, np.arange(2), np.full(2, -1), np.zeros(2), np.zeros(2, np.int64),
                shows=shows)
    assert shows.tolist() == [True, True]
    with pytest.raises(ValueError, match="rows must be None"):
        block_stats(V, np.arange(2), np.full(2, -1), np.zeros(2), np.zeros(2, np.int64),
                    rows=np.array([True, False]), narrow=np.zeros(2, bool))
