"""The streaming reader's distinct-number store (hashed) against np.unique: the same distinct
numbers and counts per column, over blocks and column ranges, with -0.0 counted as 0.0, NaN
(a cell holding no number) never counted, and a column past its cap stopped where it passed
it. Counts are integers and the numbers are copied bits, so the comparisons are exact."""

import numpy as np
import pytest

from rwtool.data._distinct import DistinctNumbers


def _oracle(row):
    v = row[~np.isnan(row)]
    return np.unique(v, return_counts=True)       # -0.0 and 0.0 are one value here


def _tally_left_zero():
    from rwtool.data import _distinct
    assert all(not t.any() for t, *_ in _distinct._SCRATCH)    # all zeros for the next count


def _check(d, x):
    for j in range(x.shape[0]):
        u, c = _oracle(x[j])
        got_u, got_c = d.of(j)
        np.testing.assert_array_equal(got_u, u)
        np.testing.assert_array_equal(got_c, c)
        assert not d.overflowed(j)


@pytest.mark.parametrize("k, n, blocks, slabs", [(5, 400, 1, 1), (5, 400, 7, 2), (300, 3, 1, 7),
                                                 (1, 5000, 4, 1), (40, 2000, 3, 5)])
def test_counts_equal_np_unique(k, n, blocks, slabs):
    rng = np.random.default_rng(k + n + blocks)
    x = rng.integers(-3, 30, (k, n)).astype(float)
    x[:, ::7] = rng.standard_normal((k, len(range(0, n, 7))))       # some all-distinct cells
    x[x == 4] = np.nan
    x[x == 0] = np.where(rng.random(int((x == 0).sum())) < 0.5, -0.0, 0.0)
    x[x == 5] = np.inf
    x[x == 6] = -np.inf
    d = DistinctNumbers(k, n)
    for part in np.array_split(np.arange(n), blocks):
        for cols in np.array_split(np.arange(k), slabs):          # column runs, as the slabs
            if len(cols):
                d.add(x[cols[0]:cols[-1] + 1][:, part], int(cols[0]))
    _check(d, x)
    zero = [d.of(j)[0][d.of(j)[0] == 0] for j in range(k)]
    assert all(np.signbit(z).sum() == 0 for z in zero)              # 0.0, as written back


def test_runs_of_equal_cells_and_growth():
    # long runs (one comparison per cell) and enough distinct pairs to grow the table often
    rng = np.random.default_rng(1)
    x = np.repeat(rng.integers(0, 50_000, (3, 4000)).astype(float), 5, axis=1)
    d = DistinctNumbers(3, 10**6)
    d.add(x[:, :7001])
    d.add(x[:, 7001:])
    _check(d, x)


def test_cap_stops_a_column_where_it_passes_it():
    cap = 4
    x = np.array([[1, 2, 2, 3, 4, 1, 5, 1, 6],           # passes the cap at its 5th number
                  [1, 2, 3, 4, 4, 4, 1, 2, 3],           # exactly the cap: kept whole
                  [np.nan] * 9])
    d = DistinctNumbers(3, cap)
    d.add(x[:, :5])
    d.add(x[:, 5:])
    assert d.overflowed(0) and not d.overflowed(1) and not d.overflowed(2)
    # column 0: the numbers seen before the fifth distinct one (5, at position 6), counted
    # until then; nothing after
    u, c = d.of(0)
    np.testing.assert_array_equal(u, [1, 2, 3, 4])
    np.testing.assert_array_equal(c, [2, 2, 1, 1])
    u, c = d.of(1)
    np.testing.assert_array_equal(u, [1, 2, 3, 4])
    np.testing.assert_array_equal(c, [2, 2, 2, 3])
    assert len(d.of(2)[0]) == 0
    d.add(np.array([[7.0], [9.0], [1.0]]))                 # an overflowed column stays stopped
    assert len(d.of(0)[0]) == 4 and d.overflowed(1) and not d.overflowed(2)


def test_copy_is_independent():
    x = np.arange(12.0).reshape(2, 6) % 4
    d = DistinctNumbers(2, 100)
    d.add(x)
    e = d.copy()
    e.add(x)
    np.testing.assert_array_equal(d.of(0)[1] * 2, e.of(0)[1])
    _check(d, x)


def test_cap_out_of_range_is_refused():
    with pytest.raises(ValueError, match="max_distinct"):
        DistinctNumbers(3, -1)


@pytest.mark.parametrize("seed", range(4))
def test_whole_numbers_tallied_equal_np_unique(seed):
    # columns of whole numbers in short ranges (tallied: ages, codes, the -0.0 and NaN cells
    # among them), in a range of exactly 16 per cell and one past it (cell by cell), large
    # magnitudes, one non-whole cell or an infinity (cell by cell), row masks, and blocks where
    # a column is tallied in one and probed cell by cell in the next: counts as np.unique's
    rng = np.random.default_rng(seed)
    k, n = 9, 3000
    x = rng.integers(0, 90, (k, n)).astype(float)
    x[1] = rng.integers(-40, 40, n)
    x[1][x[1] == 0] = np.where(rng.random(int((x[1] == 0).sum())) < 0.5, -0.0, 0.0)
    x[2][rng.random(n) < 0.3] = np.nan
    x[3] = 2.0**52 - 1 - rng.integers(0, 50, n)       # whole, near the largest exact offset
    x[4, 100] = 0.5                                    # one block of this row is not whole
    x[5, 2000] = np.inf
    x[6] = rng.integers(0, 16 * 500, n)               # width about 16 per cell of a block
    x[6, :500], x[6, 0], x[6, 1] = rng.integers(0, 16 * 500, 500), 0, 16 * 500 - 1
    x[6, 500:1000] = rng.integers(0, 16 * 500 + 1, 500)
    x[6, 500], x[6, 501] = 0, 16 * 500                 # one past: cell by cell
    x[7] = np.where(rng.random(n) < 0.5, rng.integers(-5, 5, n), rng.standard_normal(n))
    x[8] = np.nan
    fit = rng.random(n) < 0.7
    d, e = DistinctNumbers(k, n), DistinctNumbers(k, n)
    for part in np.array_split(np.arange(n), 6):
        d.add(x[:, part])
        e.add(x[:, part], 0, None, fit[part])
    _check(d, x)
    _check(e, np.where(fit, x, np.nan))
    assert np.signbit(d.of(1)[0]).sum() == np.sum(np.unique(x[1][~np.isnan(x[1])]) < 0)
    _tally_left_zero()


def test_a_column_near_its_cap_stops_where_it_passes_it():
    # a tallied block that passes the cap stops the column where its cells pass it (the
    # numbers met first kept), as counted cell by cell
    cap = 6
    x = np.array([[1.0, 2, 3, 1, 2, 3, 4, 5, 9, 6, 7, 8, 1]])
    d = DistinctNumbers(1, cap)
    d.add(x[:, :6])           # 3 distinct, tallied
    d.add(x[:, 6:])           # could pass: 4, 5, 9 counted, then 6 passes the cap
    assert d.overflowed(0)
    u, c = d.of(0)
    np.testing.assert_array_equal(u, [1, 2, 3, 4, 5, 9])
    np.testing.assert_array_equal(c, [2, 2, 2, 1, 1, 1])


@pytest.mark.parametrize("seed", range(3))
def test_ranges_from_the_stats_pass_count_as_np_unique(seed):
    # the streaming summaries hand the store each column's whole-number range found by
    # block_stats (no pass of its own): counts as np.unique's, over blocks and row masks, a
    # column tallied in one block and probed cell by cell in another, and one passing its cap
    from rwtool.data._colstats import block_stats
    rng = np.random.default_rng(seed)
    k, n = 6, 4000
    x = rng.integers(0, 90, (k, n)).astype(float)
    x[1] = rng.choice(rng.integers(12_000, 1_500_000, 1000), n)   # wide: cell by cell
    x[2, 1500] = 0.5                                     # one block not whole
    x[3][rng.random(n) < 0.2] = np.nan
    x[3][x[3] == 0] = -0.0
    x[4, 3000] = -np.inf
    x[5] = np.arange(n)                                  # all distinct: passes the cap
    fit = rng.random(n) < 0.8
    cap = 1500
    d, e, plain = DistinctNumbers(k, cap), DistinctNumbers(k, cap), DistinctNumbers(k, cap)
    for part in np.array_split(np.arange(n), 5):
        b = np.ascontiguousarray(x[:, part])
        for store, rows in ((d, None), (e, fit[part])):
            ranges = np.empty((k, 3))
            block_stats(b, part, np.full(k, -1), np.zeros(k), np.zeros(k, np.int64),
                        rows=rows, ranges=ranges)
            store.add(b, 0, None, rows, ranges)
        plain.add(b)
    for j in range(k - 1):
        for store, m in ((d, np.ones(n, bool)), (e, fit)):
            u, c = _oracle(np.where(m, x[j], np.nan))
            np.testing.assert_array_equal(store.of(j)[0], u)
            np.testing.assert_array_equal(store.of(j)[1], c)
    # the column past its cap stops at the same cell as without the ranges
    assert d.overflowed(k - 1) and plain.overflowed(k - 1)
    np.testing.assert_array_equal(d.of(k - 1)[0], plain.of(k - 1)[0])
    np.testing.assert_array_equal(d.of(k - 1)[1], plain.of(k - 1)[1])
    np.testing.assert_array_equal(d.of(k - 1)[0], np.arange(cap))


def _in_order(x, blocks, cap, rows=None):
    """The oracle of a column's counts under a cap: its cells in file order, counted in a
    dict until the one that would be the (cap + 1)-th distinct number (that cell and every
    later one not counted); -0.0 as 0.0, NaN never."""
    counts, stopped = {}, False
    for part in blocks:
        for i in part:
            v = x[i]
            if stopped or v != v or (rows is not None and not rows[i]):
                continue
            v = 0.0 if v == 0 else float(v)
            if v in counts:
                counts[v] += 1
            elif len(counts) == cap:
                stopped = True
            else:
                counts[v] = 1
    keys = sorted(counts)
    return np.array(keys), np.array([counts[k] for k in keys], np.int64), stopped


def _counted_as_in_order(x, blocks, cap, rows):
    """The store fed ``x``'s columns block by block (``rows``: a row mask or None), each
    column's numbers, counts and overflow checked against the cells counted in file order."""
    d = DistinctNumbers(len(x), cap)
    for part in blocks:
        d.add(x[:, part], 0, None, None if rows is None else rows[part])
    for j in range(len(x)):
        u, c, stopped = _in_order(x[j], blocks, cap, rows)
        assert d.overflowed(j) is stopped, (cap, j)
        np.testing.assert_array_equal(d.of(j)[0], u)
        np.testing.assert_array_equal(d.of(j)[1], c)
    return d


@pytest.mark.parametrize("seed", range(4))
def test_blocks_against_the_cells_in_order(seed):
    # columns whose blocks are tallied in one and probed in another, whose range moves,
    # whose numbers met again were first counted the other way, with a block not whole,
    # and which pass the cap in the middle of a block: the counts of the cells in order
    rng = np.random.default_rng(seed)
    sizes = [40, 300, 300, 300, 300]
    n = sum(sizes)
    blocks = np.split(np.arange(n), np.cumsum(sizes)[:-1])
    x = np.empty((7, n))
    x[0] = np.concatenate([rng.integers(0, 10, 40), rng.integers(-50, 60, 300),
                           rng.integers(100, 200, 300), rng.integers(-60, 200, 600)])
    x[1] = np.concatenate([rng.integers(0, 100_000, 40), rng.integers(0, 2000, 1200)])
    x[1, 40:80] = x[1, :40]                      # the table's numbers met again in a tally
    x[2] = rng.integers(0, 30, n)
    x[2, 700] = 0.25                             # a block not whole: its tally goes first
    x[3] = rng.integers(0, 3000, n)              # passes the cap inside a tallied block
    x[4] = np.concatenate([rng.integers(0, 100_000, 40), rng.integers(0, 3000, 1200)])
    x[5] = rng.integers(-3, 4, n).astype(float)
    x[5][x[5] == 0] = np.where(rng.random(int((x[5] == 0).sum())) < 0.5, -0.0, 0.0)
    x[5][rng.random(n) < 0.2] = np.nan
    x[6] = rng.integers(0, 2**20, n)             # too wide for 16 per cell: cell by cell
    fit = rng.random(n) < 0.7
    cap = 700
    for rows in (None, fit):
        d = _counted_as_in_order(x, blocks, cap, rows)
        assert d.overflowed(3) and d.overflowed(4) and not d.overflowed(0)
    # more blocks after the numbers were asked for: counted on
    d = DistinctNumbers(1, 10**6)
    d.add(x[:1, :640])
    d.of(0)
    d.add(x[:1, 640:])
    u, c = _oracle(x[0])
    np.testing.assert_array_equal(d.of(0)[0], u)
    np.testing.assert_array_equal(d.of(0)[1], c)


@pytest.mark.parametrize("seed", range(6))
def test_cap_met_inside_a_tallied_block(seed):
    # a block of whole numbers in a short range (tallied) whose new numbers pass the cap in
    # its middle: the cells from the stopping one on are not counted, also those of numbers
    # counted before it in that block or met in earlier blocks (the tally's counts taken
    # back), -0.0 as 0.0, row masks: the counts of the cells in file order
    rng = np.random.default_rng(seed)
    n = 3000
    x = np.empty((4, n))
    x[0] = rng.integers(0, 400, n)                   # about 400 distinct: passes cap 250
    x[1] = rng.integers(-20, 20, n)
    x[1][x[1] == 0] = np.where(rng.random(int((x[1] == 0).sum())) < 0.5, -0.0, 0.0)
    x[2] = np.concatenate([rng.integers(0, 50, 500), rng.integers(0, 1000, n - 500)])
    x[3] = rng.integers(0, 300, n)
    x[3][rng.random(n) < 0.3] = np.nan
    blocks = np.split(np.arange(n), [500, 1700])
    rows = rng.random(n) < 0.6
    for cap in (0, 1, 25, 250, 260):
        for mask in (None, rows):
            d = _counted_as_in_order(x, blocks, cap, mask)
            for j in range(4):
                assert not np.signbit(d.of(j)[0][d.of(j)[0] == 0]).any()
            _tally_left_zero()
