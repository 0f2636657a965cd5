"""Tests of the benchmark scripts' own logic (benchmarks/: the verdicts and reports they
write, the data generators of the reproductions), not of rwtool. The benchmarks
folder is in a checkout, not in an installed rwtool: each module here imports it
through pytest.importorskip, so without it these tests are skipped, not failed."""
