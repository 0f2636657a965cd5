"""The streaming summaries count distinct numbers only where they can be asked (issue 27,
"Wide files": a wide file of numbers must not hold an entry per cell). A column whose first
text comes after numbers already summarised (text in a later block) must get the categories
and fills read_csv gives it: pass one is then read again, counting every column's numbers (the
oracle is read_csv on the whole file; the peak-memory bounds are in test_wide_csv.py).
"""

import numpy as np
import pytest

import rwtool.data as D


def _late_text_file(tmp_path):
    # "c": numbers in the first rows, then mostly words (categorical); "m": a numeric column
    # written with a currency after its first block (a number format, its fill asked)
    rng = np.random.default_rng(2)
    rows = []
    for i in range(400):
        c = str(i % 3) if i < 40 else str(rng.choice(["red", "blue", "1"]))
        m = f"{i % 7}" if i < 200 else f"{i % 7} €"
        rows.append(f"{i % 5},{c},{m},{'' if i % 50 == 3 else i % 4},{i % 2}")
    p = tmp_path / "late.csv"
    p.write_text("a,c,m,h,y\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return p


@pytest.mark.parametrize("missing", ["impute-mean", "drop-rows", "impute-most-frequent"])
def test_text_met_late_gets_the_whole_file_categories(tmp_path, missing):
    p = _late_text_file(tmp_path)
    ds = D.read_csv(p, "y", missing=missing)
    scan = D.scan_csv(p, "y", missing=missing, block_bytes=256)
    assert scan.preprocessing == ds.preprocessing
    X = np.vstack([c.X for c in D.iter_csv(p, scan.preprocessing, dialect=scan.dialect,
                                           block_bytes=256)])
    np.testing.assert_array_equal(X, ds.X)
    cats = [c for c in ds.preprocessing.columns if c["name"] == "c"][0]["categories"]
    assert {"0", "1", "2", "red", "blue"} <= set(cats)
