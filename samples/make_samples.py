"""Regenerate the bundled sample CSVs (fixed seed: the output is byte-for-byte reproducible).

    python samples/make_samples.py [OUTPUT_DIR]

Writes moons.csv, spirals.csv, sine.csv, friedman.csv, customers.csv and samples.json (the
manifest ``rwtool samples`` reads) into OUTPUT_DIR (default: this directory). Every file is
synthetic, made for rwtool; none is copied from a data set.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np

SEED = 20261121


def _write(path: Path, header, rows, delimiter=",", encoding="utf-8", decimal=".") -> None:
    def cell(v):
        if isinstance(v, float):
            s = f"{v:.4f}".rstrip("0").rstrip(".") if v == v else ""
            return s.replace(".", decimal) if decimal != "." else s
        return "" if v is None else str(v)
    with open(path, "w", encoding=encoding, newline="") as fh:
        w = csv.writer(fh, delimiter=delimiter, lineterminator="\n")
        w.writerow(header)
        for r in rows:
            w.writerow([cell(v) for v in r])


def moons(rng, n=400):
    """Two interleaved half circles with noise: a binary problem for decision plots."""
    m = n // 2
    t1, t2 = rng.uniform(0, np.pi, m), rng.uniform(0, np.pi, n - m)
    a = np.c_[np.cos(t1), np.sin(t1)]
    b = np.c_[1 - np.cos(t2), 0.5 - np.sin(t2)]
    X = np.r_[a, b] + 0.15 * rng.standard_normal((n, 2))
    y = np.r_[np.zeros(m, int), np.ones(n - m, int)]
    p = rng.permutation(n)
    return ["x1", "x2", "label"], [[float(X[i, 0]), float(X[i, 1]), int(y[i])] for i in p]


def spirals(rng, n=600):
    """Three interleaved spiral arms with text labels: a multiclass problem in 2-D."""
    names = ["red", "green", "blue"]
    rows = []
    for k, name in enumerate(names):
        t = np.sqrt(rng.uniform(0, 1, n // 3)) * 3.0 * np.pi
        ang = t + 2.0 * np.pi * k / 3.0
        r = t / (3.0 * np.pi)
        x = r * np.cos(ang) + 0.03 * rng.standard_normal(len(t))
        y = r * np.sin(ang) + 0.03 * rng.standard_normal(len(t))
        rows += [[float(a), float(b), name] for a, b in zip(x, y)]
    return ["x1", "x2", "color"], [rows[i] for i in rng.permutation(len(rows))]


def sine(rng, n=200):
    """y = sin(2 x) + x/4 + noise on [-3, 3]: a 1-D regression for curve plots."""
    x = np.sort(rng.uniform(-3, 3, n))
    y = np.sin(2 * x) + 0.25 * x + 0.1 * rng.standard_normal(n)
    return ["x", "y"], [[float(a), float(b)] for a, b in zip(x, y)]


def friedman(rng, n=500):
    """Friedman #1: y = 10 sin(pi x1 x2) + 20 (x3 - 1/2)^2 + 10 x4 + 5 x5 + noise, with five
    irrelevant inputs x6..x10 (Friedman 1991), all inputs uniform on [0, 1]."""
    X = rng.uniform(0, 1, (n, 10))
    y = (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2 + 10 * X[:, 3]
         + 5 * X[:, 4] + rng.standard_normal(n))
    return [f"x{j + 1}" for j in range(10)] + ["y"], \
        [[float(v) for v in X[i]] + [float(y[i])] for i in range(n)]


def customers(rng, n=300):
    """A messy export: ';' delimiter, decimal comma, UTF-8 with BOM, accents, quoted text
    holding the delimiter, missing cells written three ways, an identifier and a free-text
    column to ignore. The target churned (yes/no) follows a logistic model of the inputs."""
    plans = ["basic", "plus", "premium"]
    regions = ["Québec", "Montréal", "Île-de-France", "Zürich", "São Paulo"]
    words = ["slow support", "great app; fast", "billing issue", "moved away", "price too high",
             "no comment", "asked for discount", "happy", "outage in May", "switched bank"]
    rows = []
    for i in range(n):
        age = int(rng.integers(18, 80))
        income = float(rng.lognormal(10.5, 0.5))
        plan = plans[int(rng.choice(3, p=[0.5, 0.3, 0.2]))]
        region = regions[int(rng.integers(0, len(regions)))]
        tenure = int(rng.integers(1, 120))
        calls = int(rng.poisson(2.0))
        z = (-1.0 + 0.45 * calls - 0.025 * tenure + 0.9 * (plan == "basic")
             - 0.6 * (plan == "premium") + 0.015 * (age - 45) + 0.5 * (region == "Zürich"))
        churned = "yes" if rng.uniform() < 1.0 / (1.0 + np.exp(-z)) else "no"
        comment = f"{words[int(rng.integers(0, len(words)))]} (ticket {1000 + i})"
        row = [f"C{10000 + i}", age, round(income, 2), plan, region, tenure, calls, comment,
               churned]
        u = rng.uniform()
        if u < 0.05:
            row[1] = "NA"
        elif u < 0.09:
            row[2] = None
        elif u < 0.11:
            row[4] = "?"
        rows.append(row)
    header = ["customer_id", "age", "income", "plan", "region", "tenure_months",
              "support_calls", "comment", "churned"]
    return header, rows


#: name, generator, file format, target, task, description, read_csv options it needs
SAMPLES = [
    ("moons", moons, {}, "label", "binary",
     "two noisy interleaved half circles in 2-D (decision-boundary plots)", {}),
    ("spirals", spirals, {}, "color", "multiclass",
     "three spiral arms in 2-D with text labels red/green/blue", {}),
    ("sine", sine, {}, "y", "regression", "1-D curve y = sin(2x) + x/4 + noise (curve plots)",
     {}),
    ("friedman", friedman, {}, "y", "regression",
     "Friedman #1: 10 inputs, 5 of them irrelevant", {}),
    ("customers", customers, {"delimiter": ";", "encoding": "utf-8-sig", "decimal": ","},
     "churned", "binary",
     "messy export: ';' and decimal comma, BOM, accents, quoted text, missing values, an id "
     "and a free-text column", {"ignore": ["customer_id", "comment"], "missing": "impute-mean"}),
]


def main(out_dir: Path) -> None:
    rng = np.random.default_rng(SEED)
    manifest = []
    for name, make, fmt, target, task, desc, options in SAMPLES:
        header, rows = make(rng)
        path = out_dir / f"{name}.csv"
        _write(path, header, rows, **fmt)
        manifest.append({"name": name, "file": path.name, "target": target, "task": task,
                         "rows": len(rows), "columns": len(header), "description": desc,
                         "options": options})
    (out_dir / "samples.json").write_text(
        json.dumps({"seed": SEED, "generator": "make_samples.py", "samples": manifest},
                   indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent)
