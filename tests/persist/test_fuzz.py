"""The model-file fuzzer (tests/helpers/fuzz_models.py) in a child process capped with RLIMIT_AS.

A short campaign of hypothesis-drawn mutations of valid files of every saved class
(truncation, byte flips, zip header fields, array members and document values replaced with
every checksum recomputed, zip bombs, text no writer can take, special files): every file must
load (and predict, and apply its preprocessing record to a CSV) or be refused with
ModelFileError, within 2 x the bytes its parameters justify + 50 MB of traced memory, ``rwtool
info`` must refuse exactly what the load refuses, and the child must survive its memory cap.
The long campaign and its figures are in docs/BENCHMARKS.md (python -m
benchmarks.robustness.fuzz_models --examples 5000).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).absolute().parents[2]


@pytest.mark.slow
def test_fuzz_campaign_in_a_memory_capped_process(tmp_path):
    out = tmp_path / "summary.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OPENBLAS_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, "-m", "tests.helpers.fuzz_models", "--examples", "150", "--seed", "16",
         "--limit-mb", "768", "--max-bomb-mb", "96", "--json", str(out)],
        capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert out.exists(), proc.stderr[-3000:]
    s = json.loads(out.read_text())
    assert s["crashes"] == 0, s["crash_examples"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert s["tried"] >= 140 and s["loaded"] > 0 and s["refused"] > 0
    assert set(s["by_kind"]) >= {"truncate", "flip", "zipfield", "array", "doc", "bomb",
                                 "text", "special"}
    assert s["worst_peak_over_target"] <= 1.0
