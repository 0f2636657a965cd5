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
