"""The interval and the warm-up file of ``bench_data --stream-pairs`` (issue 26 target 2): the
sign test's interval for a median against scipy's binomial distribution and a simulation of
its coverage, and the warm-up file against the big file's own first lines."""

import numpy as np
import pytest

pytest.importorskip("benchmarks",
                    reason="the benchmark scripts are in a checkout, not in an installed rwtool")
from benchmarks.speed.bench_data import _head, median_interval  # noqa: E402


@pytest.mark.parametrize("n", [1, 3, 5, 6, 9, 15, 21, 40])
@pytest.mark.parametrize("level", [0.9, 0.95])
def test_median_interval_is_the_sign_tests(n, level):
    binom = pytest.importorskip("scipy.stats").binom
    x = np.random.default_rng(n).permutation(np.arange(n) * 1.5 + 2.0)
    med, lo, hi, cover = median_interval(x.tolist(), level)
    s = np.sort(x)
    assert med == np.median(x)
    # the largest k with P(B <= k - 1) <= (1 - level) / 2, B ~ Binomial(n, 1/2)
    ks = [k for k in range(1, n // 2 + 2) if binom.cdf(k - 1, n, 0.5) <= (1 - level) / 2]
    if not ks:
        assert (lo, hi, cover) == (s[0], s[-1], 1.0)
        return
    k = max(ks)
    assert (lo, hi) == (s[k - 1], s[n - k])
    assert cover == pytest.approx(1 - 2 * binom.cdf(k - 1, n, 0.5), abs=1e-12)
    assert cover >= level


def test_median_interval_covers_as_it_says():
    rng = np.random.default_rng(0)
    hits = 0
    trials = 4000
    for _ in range(trials):
        x = rng.lognormal(0.0, 0.5, 15)          # true median exp(0) = 1
        _, lo, hi, cover = median_interval(x.tolist())
        hits += lo <= 1.0 <= hi
    # 96.5% coverage for n = 15; the binomial spread of 4000 trials is 0.3%
    assert abs(hits / trials - cover) < 0.015


def test_head_is_the_first_lines(tmp_path):
    src = tmp_path / "big.csv"
    lines = ["a,b\n"] + [f"{i},x{i % 7}\n" for i in range(100)]
    src.write_text("".join(lines))
    out = tmp_path / "warm.csv"
    _head(src, out, 11)
    assert out.read_text() == "".join(lines[:11])
    _head(src, out, 1000)
    assert out.read_bytes() == src.read_bytes()
